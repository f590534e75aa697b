"""The chapter's weight-sync table (its section "The time budget of weight sync").

1e12 bytes per instance (1T parameters in FP8), 50 GB/s NIC per GPU, 450 GB/s NVLink, 8 GPUs per
instance; the chapter prints co-located 0.28 s; naive 20 / 160 / 1280 s; 8 senders instance by
instance 2.5 / 20 / 160 s; 8 senders + pipelined relay 2.5 / 2.6 / 2.6 s (a flat 5 %). Here the
relay row comes from the chunked-pipeline formula with alpha = 50 us per chunk (NCCL inter-node
alpha), and every row pays alpha per message.
"""

from __future__ import annotations

import polars as pl

from .estimator import estimate
from .cluster import Cluster, InferLayout, TrainLayout
from .presets import HARDWARE, MODELS, SOFTWARE

__all__ = ["chapter_cluster", "chapter_table", "CHAPTER_PRINTED"]

#: The chapter's printed values, seconds, for 1 / 8 / 64 instances.
CHAPTER_PRINTED = {
    "colocated": (0.28, 0.28, 0.28),
    "naive": (20.0, 160.0, 1280.0),
    "parallel": (2.5, 20.0, 160.0),
    "relay": (2.5, 2.6, 2.6),
}


def chapter_cluster(topology: str = "relay", instances: int = 1) -> Cluster:
    """The chapter's cluster: 8 training GPUs (TP8) sending to ``instances`` TP8 instances."""
    return Cluster(
        model=MODELS["chapter-1t"],
        train=TrainLayout(tp=8),
        infer=InferLayout(instances=instances, tp=8),
        hardware=HARDWARE["chapter"],
        software=SOFTWARE["ideal"],
        topology=topology,
    )


def chapter_table(instances: tuple[int, ...] = (1, 8, 64)) -> pl.DataFrame:
    """The chapter's table, recomputed.

    Returns
    -------
    polars.DataFrame
        Columns ``design`` (str), ``instances`` (i64), ``total_s`` (f64), ``chapter_s`` (f64 or
        null: the chapter's printed value), ``dominant_term`` (str).
    """
    rows = []
    for topo in ("colocated", "naive", "parallel", "relay"):
        for n in instances:
            e = estimate(chapter_cluster(topo, n))
            printed = CHAPTER_PRINTED[topo][(1, 8, 64).index(n)] if n in (1, 8, 64) else None
            rows.append(dict(design=topo, instances=n, total_s=e.total_s, chapter_s=printed, dominant_term=e.dominant_term))
    return pl.DataFrame(rows)
