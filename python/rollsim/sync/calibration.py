"""Calibration against published weight-sync timings (``shared/notes/weight_sync.md``).

One software stack = one set of (``efficiency``, ``per_update_s``, or ``per_tensor_s``) fitted on
some published rows of that stack, then used unchanged to predict its other rows. The model is
linear in ``per_update_s``, ``per_tensor_s`` and ``1 / efficiency`` (with ``overlap_stages``
off), so a fit is an exact or least-squares linear solve. :func:`validation_table` recomputes
everything; :data:`STACKS` holds the fitted values (rounded; a test checks they match a refit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache

import numpy as np
import polars as pl

from .estimate import estimate
from .model import Cluster, InferLayout, SoftwareStack, TrainLayout
from .presets import HARDWARE, MODELS

__all__ = ["Measurement", "MEASUREMENTS", "STACKS", "FIT_PARAMS", "fit_stack", "validation_table"]

GiB = 2**30


@dataclass(frozen=True)
class Measurement:
    """A published timing: ``measured_s`` (midpoint of a published range ``lo_s..hi_s``)."""

    stack: str
    setting: str
    cluster: Cluster
    measured_s: float
    lo_s: float
    hi_s: float
    source: str
    fit: bool  # used to fit the stack's parameters (else: a held-out prediction)


def _ckpt_engine(model: str, prec: str, gpus: int, instances: int, bucket_gib: float, hw: str) -> Cluster:
    # checkpoint-engine Broadcast: the ParameterServer ranks (co-located with vLLM) hold the shards
    # and NCCL-broadcast each bucket to every GPU; vLLM keeps its slice. H2D is overlapped with the
    # broadcast by its pipeline; buckets run one after another.
    return Cluster(
        model=MODELS[model].with_precision(prec, prec),
        train=TrainLayout(dp=gpus * instances, fsdp=True),
        infer=InferLayout(instances=instances, tp=gpus),
        hardware=dataclasses.replace(HARDWARE[hw], colocated=True),
        software=SoftwareStack(bucket_bytes=bucket_gib * GiB, overlap_stages=False),
        topology="broadcast",
    )


def _nemo(model: str, train: TrainLayout, instances: int, tp: int) -> Cluster:
    # NeMo-RL nccl_reshard_refit: shard-to-shard sends along the re-sharding plan, H100, BF16.
    return Cluster(
        model=MODELS[model].with_precision("bf16", "bf16"),
        train=train,
        infer=InferLayout(instances=instances, tp=tp),
        hardware=HARDWARE["h100"],
        software=SoftwareStack(overlap_stages=False),
        topology="parallel",
    )


CKPT = "MoonshotAI/checkpoint-engine README, Benchmark table (vLLM v0.10.2rc1), Update (Broadcast)"
NEMO = "NVIDIA-NeMo/RL docs/design-docs/nccl-reshard-refit.md, Expected Performance"
VERL = "volcengine/verl verl/checkpoint_engine/README.md, benchmark result"
SGL = "sgl-project/sglang issue 30848 (verl + SGLang, H100)"

MEASUREMENTS: tuple[Measurement, ...] = (
    Measurement("checkpoint-engine", "GLM-4.5-Air BF16, 8xH800, TP8, 3.02 GiB buckets", _ckpt_engine("glm-4.5-air", "bf16", 8, 1, 3.02, "h800"), 3.47, 3.47, 3.47, CKPT, True),
    Measurement("checkpoint-engine", "Qwen3-235B-A22B BF16, 8xH800, TP8, 2.67 GiB", _ckpt_engine("qwen3-235b-a22b", "bf16", 8, 1, 2.67, "h800"), 6.22, 6.22, 6.22, CKPT, False),
    Measurement("checkpoint-engine", "DeepSeek-V3.1 FP8, 16xH20, TP16, 5.39 GiB", _ckpt_engine("deepseek-v3", "fp8:128", 16, 1, 5.39, "h20"), 10.19, 10.19, 10.19, CKPT, True),
    Measurement("checkpoint-engine", "Kimi-K2 FP8, 16xH20, TP16, 5.89 GiB", _ckpt_engine("kimi-k2", "fp8:128", 16, 1, 5.89, "h20"), 14.36, 14.36, 14.36, CKPT, False),
    Measurement("checkpoint-engine", "DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB", _ckpt_engine("deepseek-v3", "fp8:128", 16, 16, 8.0, "h20"), 11.33, 11.33, 11.33, CKPT, False),
    Measurement("checkpoint-engine", "Kimi-K2 FP8, 256xH20, 16 x TP16, 8 GiB", _ckpt_engine("kimi-k2", "fp8:128", 16, 16, 8.0, "h20"), 16.04, 16.04, 16.04, CKPT, False),
    Measurement("nemo-rl-reshard", "Qwen3-4B BF16, DP8 -> TP8, H100", _nemo("qwen3-4b", TrainLayout(dp=8), 1, 8), 0.275, 0.21, 0.34, NEMO, True),
    Measurement("nemo-rl-reshard", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, H100", _nemo("deepseek-v3", TrainLayout(pp=16, dp=16, ep=16), 8, 32), 2.61, 2.39, 2.83, NEMO, True),
    Measurement("nemo-rl-reshard", "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100", _nemo("qwen3-30b-a3b", TrainLayout(pp=2, dp=8, ep=8), 2, 8), 0.87, 0.74, 1.00, NEMO, False),
    Measurement(
        "verl-ring", "Qwen3-30B-A3B BF16, FSDP2 -> 30 single-GPU receivers, ring, 4x8 H100, 400 Gb/s IB",
        Cluster(model=MODELS["qwen3-30b-a3b"], train=TrainLayout(dp=2, fsdp=True), infer=InferLayout(instances=30, tp=1),
                hardware=HARDWARE["h100"], software=SoftwareStack(overlap_stages=False), topology="relay"),
        7.0, 7.0, 7.0, VERL, True),
    Measurement(
        "sglang-per-tensor", "Qwen3-30B-A3B BF16 into SGLang, ~18k expert tensors, per-tensor mapping scan, H100",
        Cluster(model=MODELS["qwen3-30b-a3b"], train=TrainLayout(tp=8), infer=InferLayout(instances=1, tp=8),
                hardware=HARDWARE["h100"], software=SoftwareStack(overlap_stages=False), topology="parallel"),
        59.0, 55.0, 63.0, SGL, True),
)

#: Parameters fitted per stack (the others stay at their defaults).
FIT_PARAMS: dict[str, tuple[str, ...]] = {
    "checkpoint-engine": ("efficiency", "per_update_s"),
    "nemo-rl-reshard": ("efficiency", "per_update_s"),
    "verl-ring": ("efficiency",),
    "sglang-per-tensor": ("per_tensor_s",),
}


def fit_stack(stack: str) -> dict[str, float]:
    """Fits ``FIT_PARAMS[stack]`` on the stack's ``fit=True`` rows (least squares on seconds).

    Returns
    -------
    dict
        Parameter name -> fitted value (efficiency in (0, 1], overheads in seconds).

    Raises
    ------
    ValueError
        Unknown stack, or a fit outside the allowed range (e.g. efficiency > 1).
    """
    if stack not in FIT_PARAMS:
        raise ValueError(f"stack: unknown stack {stack!r}; known: {', '.join(FIT_PARAMS)}")
    params = FIT_PARAMS[stack]
    rows = [m for m in MEASUREMENTS if m.stack == stack and m.fit]
    A, y = [], []
    for m in rows:
        e = estimate(m.cluster)  # efficiency 1, no overheads
        b = e.breakdown
        rest = e.total_s - b["transfer_s"]
        coef = {"efficiency": b["transfer_s"], "per_update_s": 1.0, "per_tensor_s": float(m.cluster.model.n_tensors)}
        A.append([coef[p] for p in params])
        y.append(m.measured_s - rest)
    x = np.linalg.lstsq(np.array(A, dtype=float), np.array(y), rcond=None)[0]
    out = {p: float(1.0 / v if p == "efficiency" else v) for p, v in zip(params, x)}
    if "efficiency" in out and not 0 < out["efficiency"] <= 1:
        raise ValueError(f"efficiency: fit gave {out['efficiency']}, outside (0, 1]")
    return out


#: The fitted stacks, rounded (see ``tests/test_sync_calibration.py``, which refits them).
STACKS: dict[str, SoftwareStack] = {
    "checkpoint-engine": SoftwareStack("checkpoint-engine", efficiency=0.346, per_update_s=0.305, overlap_stages=False, source=CKPT),
    "nemo-rl-reshard": SoftwareStack("nemo-rl-reshard", efficiency=0.409, per_update_s=0.226, overlap_stages=False, source=NEMO),
    "verl-ring": SoftwareStack("verl-ring", efficiency=0.182, overlap_stages=False, source=VERL),
    "sglang-per-tensor": SoftwareStack("sglang-per-tensor", per_tensor_s=0.00313, overlap_stages=False, source=SGL),
}


@cache
def validation_table() -> pl.DataFrame:
    """Predicted vs measured for every published row.

    Returns
    -------
    polars.DataFrame
        Columns ``stack``, ``setting``, ``role`` (``"fit"`` or ``"held out"``), ``measured_s``,
        ``lo_s``, ``hi_s``, ``predicted_s``, ``residual`` (``predicted / measured - 1``),
        ``dominant_term``, ``source``.
    """
    rows = []
    for m in MEASUREMENTS:
        sw = dataclasses.replace(m.cluster.software, **fit_stack(m.stack))
        e = estimate(m.cluster.replace(software=sw))
        rows.append(dict(stack=m.stack, setting=m.setting, role="fit" if m.fit else "held out", measured_s=m.measured_s,
                         lo_s=m.lo_s, hi_s=m.hi_s, predicted_s=e.total_s, residual=e.total_s / m.measured_s - 1,
                         dominant_term=e.dominant_term, source=m.source))
    return pl.DataFrame(rows)
