"""Weight-sync estimates, sweeps and re-sharding plans (the hot parts run in Rust)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from rollsim import _check, _rollsim
from rollsim.errors import invalid

from .cluster import TOPOLOGIES, Cluster

__all__ = ["Estimate", "Plan", "TERMS", "estimate", "estimate_many", "plan", "rank_topologies"]

#: Breakdown terms, in order. ``overlap_s`` (<= 0) is the time saved by pipelining the stages.
TERMS = ("transfer_s", "latency_s", "software_s", "quantization_s", "h2d_s", "pause_resume_s", "overlap_s")


def _call(f, *args, **kw):
    try:
        return f(*args, **kw)
    except ValueError:
        raise
    except (TypeError, OverflowError) as e:  # a wrong type slipped past the dataclasses
        raise ValueError(str(e)) from None


@dataclass(frozen=True)
class Estimate:
    """One weight update's duration and its breakdown.

    Attributes
    ----------
    total_s : float
        Seconds from "start sync" to "new weights loaded" (sum of the breakdown).
    pause_s : float
        Seconds the inference pool is paused: the whole sync in every modelled topology (weights
        are written in place), so equal to ``total_s``. Use it as the scenario's pause time.
    breakdown : dict[str, float]
        Seconds per term (:data:`TERMS`): transfer (bytes over the busiest link / achieved
        bandwidth), latency (per-message alpha), software (per-tensor + per-bucket + per-update),
        quantization, h2d, pause_resume, overlap (<= 0, saved by pipelining).
    dominant_term : str
        The largest positive term, e.g. ``"software_s"``.
    busiest_link_bytes, model_bytes, n_buckets, chunks, hops : float
        Bytes on the busiest link, bytes of one model copy, buckets, relay chunks and hops (finite
        for every accepted cluster, except ``chunks``: inf for a relay with ``latency_s = 0``, whose
        chunks are then infinitely fine; ``total_s`` and the breakdown are always finite).
    tensors_charged : float
        Tensors charged ``per_tensor_s`` (see :class:`~rollsim.sync.cluster.SoftwareStack`).
    cluster : Cluster
        The input.
    """

    total_s: float
    breakdown: dict
    busiest_link_bytes: float
    model_bytes: float
    n_buckets: float
    chunks: float
    hops: float
    cluster: Cluster
    tensors_charged: float = 0.0

    @property
    def pause_s(self) -> float:
        return self.total_s

    @property
    def dominant_term(self) -> str:
        pos = {k: v for k, v in self.breakdown.items() if k != "overlap_s"}
        return max(pos, key=lambda k: pos[k])

    def frame(self) -> pl.DataFrame:
        """The breakdown as a frame: columns ``term`` (str), ``seconds`` (f64), ``share`` (f64,
        fraction of ``total_s``)."""
        t = list(self.breakdown)
        s = [self.breakdown[k] for k in t]
        return pl.DataFrame({"term": t, "seconds": s, "share": [x / self.total_s if self.total_s else 0.0 for x in s]})

    def __float__(self) -> float:
        return self.total_s

    def __repr__(self) -> str:
        return f"Estimate(total_s={self.total_s:.4g}, dominant_term={self.dominant_term!r})"


def estimate(cluster: Cluster) -> Estimate:
    """Estimates one weight update for ``cluster``.

    Formulas (``docs/weight_sync.md``; :mod:`rollsim_core::sync::cost`): alpha-beta
    messages ``alpha + m / (efficiency * bandwidth)``; naive ``n * S / beta`` plus pipelined
    gather/scatter; parallel = busiest link of the re-sharding plan; relay = chunked pipeline
    ``(C + h - 1)(alpha + tau / C)`` at the best ``C``; broadcast ``S / beta_bottleneck``;
    software ``n_tensors * per_tensor_s + n_buckets * per_bucket_s + per_update_s``.

    Parameters
    ----------
    cluster : Cluster

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        A field is out of range (the message starts with the field's name), e.g.
        ``efficiency: must be in [1e-6, 1], got 0.0``.
    """
    d = _call(_rollsim.sync_estimate, cluster.to_dict())
    return Estimate(
        total_s=float(d["total_s"]),
        breakdown={k: float(d[k]) for k in TERMS},
        busiest_link_bytes=float(d["busiest_link_bytes"]),
        model_bytes=float(d["model_bytes"]),
        n_buckets=float(d["n_buckets"]),
        chunks=float(d["chunks"]),
        hops=float(d["hops"]),
        cluster=cluster,
        tensors_charged=float(d["tensors_charged"]),
    )



def rank_topologies(cluster: Cluster, topologies: tuple[str, ...] | list[str] = TOPOLOGIES) -> pl.DataFrame:
    """Every topology for ``cluster`` (its model, layouts, hardware and software stack), fastest
    first, and for each slower one the term of the breakdown that makes it slower.

    With a real software stack the cheapest wire is not always the fastest update: e.g. a relay
    moves the model with little NIC time but pays the per-tensor software cost for every tensor on
    every hop, where NeMo-RL's re-sharding plan (``parallel``) charges only the tensors of its
    busiest rank. The term that explains a slower topology is the breakdown term (:data:`TERMS`)
    whose seconds exceed the fastest topology's by the most.

    Parameters
    ----------
    cluster : Cluster
        The configuration; its own ``topology`` is one of the rows.
    topologies : sequence of str
        The topologies to compare (default: all of :data:`~rollsim.sync.cluster.TOPOLOGIES`;
        ``"colocated"`` assumes training and inference share the GPUs).

    Returns
    -------
    polars.DataFrame
        One row per topology, fastest first (topologies that do not apply last): ``rank`` (i64, 1 =
        fastest; null if it does not apply), ``topology`` (str), ``total_s`` (f64), ``dominant_term``
        (str, the largest term), ``slower_by_s`` (f64, ``total_s`` minus the fastest's),
        ``slower_because`` (str, the term with the largest excess over the fastest topology; null
        for the fastest and for ties), ``slower_because_s`` (f64, that excess), ``tensors_charged``
        (f64, tensors charged ``per_tensor_s``), every term of :data:`TERMS` (f64 seconds) and
        ``error`` (str: why the topology does not apply, else null).

    Raises
    ------
    ValueError
        An unknown topology, or a cluster that no topology can estimate (the first error).
    """
    names = list(topologies)
    for t in names:
        if t not in TOPOLOGIES:
            raise ValueError(f"topology: must be one of {', '.join(TOPOLOGIES)}, got {t!r}")
    ests: dict[str, Estimate] = {}
    errors: dict[str, str] = {}
    for t in names:
        try:
            ests[t] = estimate(cluster.replace(topology=t))
        except ValueError as err:
            errors[t] = str(err)
    if not ests:
        raise ValueError(next(iter(errors.values())) if errors else "topologies: give at least one topology")
    order = sorted(ests, key=lambda t: ests[t].total_s)   # stable: ties keep the given order
    fastest = ests[order[0]]
    rows = []
    for k, t in enumerate(order):
        e = ests[t]
        diff = {term: e.breakdown[term] - fastest.breakdown[term] for term in TERMS}
        worst = max(diff, key=lambda term: diff[term])
        slower = e.total_s - fastest.total_s
        because = worst if slower > 0 and diff[worst] > 0 else None
        rows.append({"rank": k + 1, "topology": t, "total_s": e.total_s, "dominant_term": e.dominant_term,
                     "slower_by_s": slower, "slower_because": because,
                     "slower_because_s": diff[worst] if because else None, "tensors_charged": e.tensors_charged,
                     **e.breakdown, "error": None})
    for t in names:
        if t in errors:
            rows.append({"rank": None, "topology": t, "total_s": None, "dominant_term": None, "slower_by_s": None,
                         "slower_because": None, "slower_because_s": None, "tensors_charged": None,
                         **dict.fromkeys(TERMS), "error": errors[t]})
    schema = {"rank": pl.Int64, "topology": pl.String, "total_s": pl.Float64, "dominant_term": pl.String,
              "slower_by_s": pl.Float64, "slower_because": pl.String, "slower_because_s": pl.Float64,
              "tensors_charged": pl.Float64, **dict.fromkeys(TERMS, pl.Float64), "error": pl.String}
    return pl.DataFrame(rows, schema=schema)

#: The fields :func:`estimate_many` can sweep (the engine's list).
SWEEPABLE: tuple[str, ...] = tuple(_rollsim.SYNC_SWEEPABLE)


def estimate_many(cluster: Cluster, **arrays) -> pl.DataFrame:
    """Vectorized :func:`estimate`: sweep fields over arrays (numpy broadcasting).

    Parameters
    ----------
    cluster : Cluster
        The base configuration.
    **arrays : array_like
        Any of :data:`SWEEPABLE` (``instances``, ``nic_bytes_per_s``, ``nvlink_bytes_per_s``,
        ``pcie_bytes_per_s``, ``latency_s``, ``efficiency``, ``per_tensor_s``, ``per_bucket_s``,
        ``per_update_s``, ``bucket_bytes``, ``quant_bytes_per_s``, ``pause_resume_s``), broadcast
        together to one shape and flattened.

    Returns
    -------
    polars.DataFrame
        One row per point: the swept columns, then ``total_s`` and every term of :data:`TERMS`
        (f64 seconds) and ``busiest_link_bytes``.

    Raises
    ------
    ValueError
        Unknown field, arrays that do not broadcast, or a value out of range (named).
    """
    for k in arrays:
        if k not in SWEEPABLE:
            raise ValueError(f"{k}: cannot be swept; allowed: {', '.join(SWEEPABLE)}")
    values = []
    for k, v in arrays.items():
        try:
            values.append(np.asarray(v, dtype=np.float64))
        except (TypeError, ValueError, OverflowError) as e:  # strings, None, an int too large for a float
            raise invalid(k, f"must be an array of numbers: {e}") from None
    try:
        cols = np.broadcast_arrays(*values) if values else []
    except ValueError as e:
        raise ValueError(f"{', '.join(arrays)}: arrays do not broadcast together ({e})") from None
    flat = {k: np.ascontiguousarray(c.ravel()) for k, c in zip(arrays, cols)}
    out = _call(_rollsim.sync_estimate_many, cluster.to_dict(), flat)
    data = {k: v for k, v in flat.items()}
    data.update({k: out[k] for k in ("total_s", *TERMS, "busiest_link_bytes")})
    return pl.DataFrame(data)


@dataclass(frozen=True)
class Plan:
    """A re-sharding plan.

    Attributes
    ----------
    transfers : polars.DataFrame or None
        One row per transfer: ``src_rank`` (u32, training rank), ``dst_rank`` (u32, inference rank
        ``instance * tp + local``), ``group`` (str, tensor group name), ``tensor`` (u64, index in
        the group), ``offset_elems``, ``len_elems`` (u64, the slice), ``bytes`` (f64), ``link``
        (str: ``"local"``, ``"nvlink"`` or ``"nic"``).
    links : polars.DataFrame
        One row per link direction that carries data: ``side`` (``"train"``/``"infer"``), ``rank``,
        ``kind`` (``"nic"``/``"nvlink"``), ``bytes``, ``messages``.
    needed_bytes : numpy.ndarray
        Bytes each inference rank needs along the plan (f64, length ``instances * tp``; groups
        sent by broadcast, see ``SoftwareStack.plan_groups``, are not in the plan).
    src_tensors, dst_tensors : numpy.ndarray
        Tensors each training rank sends / each inference rank receives a slice of (u64).
    total_bytes, local_bytes : float
    n_transfers : int
    """

    transfers: pl.DataFrame | None
    links: pl.DataFrame
    needed_bytes: np.ndarray
    total_bytes: float
    local_bytes: float
    n_transfers: int
    src_tensors: np.ndarray | None = None
    dst_tensors: np.ndarray | None = None

    def busiest_link(self, cluster: Cluster) -> dict:
        """The link with the longest transfer time for ``cluster``'s bandwidths and efficiency:
        ``{"side", "rank", "kind", "bytes", "messages", "seconds"}``."""
        h, s = cluster.hardware, cluster.software
        bw = pl.when(pl.col("kind") == "nic").then(h.nic_bytes_per_s).otherwise(h.nvlink_bytes_per_s) * s.efficiency
        f = self.links.with_columns(seconds=pl.col("bytes") / bw).sort("seconds", descending=True)
        return f.row(0, named=True) if f.height else {}


def plan(cluster: Cluster, *, record_transfers: bool = True, max_transfers: int = 5_000_000) -> Plan:
    """The re-sharding plan from ``cluster.train`` to ``cluster.infer`` (all instances).

    Method: intersect each inference rank's slice of each tensor with the slices of one training
    copy, the copy whose ranks are least loaded so far (``rust/rollsim-core/src/sync/plan.rs``);
    slices are cut on whole FP8 blocks.

    Raises
    ------
    ValueError
        Bad layout (named field), or ``max_transfers`` (an integer in [0, 2**64 - 1]) exceeded.
    """
    record = _check.flag("record_transfers", record_transfers)
    limit = _check.integer("max_transfers", max_transfers, 0, 2**64 - 1)
    d = _call(_rollsim.sync_plan, cluster.to_dict(), record, limit)
    names = [g.name for g in cluster.model.groups]
    if cluster.model.infer_precision.name == "fp8":
        names += [g.name + ".scale" for g in cluster.model.groups if g.quantized]
    tr = None
    if d["transfers"] is not None:
        t = d["transfers"]
        tr = pl.DataFrame(
            {
                "src_rank": t["src_rank"],
                "dst_rank": t["dst_rank"],
                "group": pl.Series(t["group"]).replace_strict(dict(enumerate(names)), return_dtype=pl.Utf8),
                "tensor": t["tensor"],
                "offset_elems": t["offset_elems"],
                "len_elems": t["len_elems"],
                "bytes": t["bytes"],
                "link": pl.Series(t["link"]).replace_strict({0: "local", 1: "nvlink", 2: "nic"}, return_dtype=pl.Utf8),
            }
        )
    L = d["links"]
    parts = []
    for side, suffix in (("train", "out"), ("infer", "in")):
        for kind in ("nic", "nvlink"):
            b = L[f"{kind}_{suffix}_bytes"]
            parts.append(
                pl.DataFrame(
                    {
                        "side": side,
                        "rank": np.arange(len(b), dtype=np.uint32),
                        "kind": kind,
                        "bytes": b,
                        "messages": L[f"{kind}_{suffix}_msgs"],
                    }
                )
            )
    links = pl.concat(parts).filter(pl.col("bytes") > 0)
    return Plan(tr, links, L["needed_bytes"], float(d["total_bytes"]), float(d["local_bytes"]), int(d["n_transfers"]),
                L["src_tensors"], L["dst_tensors"])
