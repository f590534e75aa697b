"""Calibration against published weight-sync timings (each row names its public source; table in
``docs/weight_sync.md``).

One software stack = one set of (``efficiency``, ``per_update_s``, ``per_tensor_s``) fitted on
some published rows of that stack, then used unchanged to predict its other rows. The model is
linear in ``per_update_s``, ``per_tensor_s`` and ``1 / efficiency`` (with ``overlap_stages``
off), so a fit is an exact or least-squares linear solve. :func:`validation_table` recomputes
everything; :data:`STACKS` holds the fitted values (rounded; a test checks they match a refit).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import polars as pl

from .estimator import estimate
from .cluster import Cluster, InferLayout, ModelSpec, SoftwareStack, TrainLayout
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


#: NeMo-RL nccl_reshard_refit (design doc, "Design Overview"): the FFN projections (dense MLP and
#: routed experts, not shared experts or MTP) go shard to shard along the plan ("bulk path", one
#: xferdtensor per HF-named grouped expert entry, the sender stacking its local experts' views);
#: everything else, FP8 ``_scale_inv`` siblings included, rides one packed broadcast afterwards and
#: is loaded through vLLM's ``load_weights`` ("misc path").
NEMO_PLAN_GROUPS = ("mlp.dense_proj", "mlp.experts")


def _nemo(model: str, train: TrainLayout, instances: int, tp: int, prec: str = "bf16", hw: str = "h100") -> Cluster:
    # precision matches end to end (BF16 <-> BF16, blockwise FP8 <-> FP8); inference EP = 1 (TP only)
    return Cluster(
        model=MODELS[model].with_precision(prec, prec),
        train=train,
        infer=InferLayout(instances=instances, tp=tp),
        hardware=HARDWARE[hw],
        software=SoftwareStack(overlap_stages=False, plan_groups=NEMO_PLAN_GROUPS, grouped_experts=True),
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
    Measurement("nemo-rl-reshard", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, H100", _nemo("deepseek-v3-no-mtp", TrainLayout(pp=16, dp=16, ep=16), 8, 32), 2.61, 2.39, 2.83, NEMO, True),
    Measurement("nemo-rl-reshard", "Qwen3-30B-A3B FP8, EP8xDP2 -> TP2xDP8, H100", _nemo("qwen3-30b-a3b", TrainLayout(dp=16, ep=8), 8, 2, prec="fp8:128"), 3.45, 2.90, 4.00, NEMO, True),
    Measurement("nemo-rl-reshard", "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100", _nemo("qwen3-30b-a3b", TrainLayout(pp=2, dp=8, ep=8), 2, 8), 0.87, 0.74, 1.00, NEMO, False),
    Measurement("nemo-rl-reshard", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, GB200", _nemo("deepseek-v3-no-mtp", TrainLayout(pp=16, dp=16, ep=16), 8, 32, hw="gb200"), 2.26, 1.93, 2.59, NEMO, False),
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
    "nemo-rl-reshard": ("efficiency", "per_update_s", "per_tensor_s"),
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
        coef = {"efficiency": b["transfer_s"], "per_update_s": 1.0, "per_tensor_s": e.tensors_charged}
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
    "nemo-rl-reshard": SoftwareStack("nemo-rl-reshard", efficiency=0.435, per_update_s=0.180, per_tensor_s=1.21e-4, overlap_stages=False,
                                     plan_groups=NEMO_PLAN_GROUPS, grouped_experts=True, source=NEMO),
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
        fitted: dict[str, Any] = fit_stack(m.stack)  # float fields only; Any for replace()'s other fields
        sw = dataclasses.replace(m.cluster.software, **fitted)
        e = estimate(m.cluster.replace(software=sw))
        rows.append(dict(stack=m.stack, setting=m.setting, role="fit" if m.fit else "held out", measured_s=m.measured_s,
                         lo_s=m.lo_s, hi_s=m.hi_s, predicted_s=e.total_s, residual=e.total_s / m.measured_s - 1,
                         dominant_term=e.dominant_term, source=m.source))
    return pl.DataFrame(rows)


#: Awesome-ML-SYS-Tutorial issue 169 (verl/slime + SGLang, colocated CUDA IPC): a 16B MoE updated
#: tensor by tensor took about 200 s; Qwen3-30B-A3B with 512 MB buckets about 16 s.
ISSUE_169 = "zhaochenyang20/Awesome-ML-SYS-Tutorial issue 169 (RL SGLang update weight in tensor slow for MoE)"

#: The 16B MoE is not named; DeepSeek-V2-Lite and Moonlight-16B-A3B (the public 16B MoEs of that
#: time) have the same tensor list: 27 layers x 7 attention/norm tensors, 1 dense MLP (3), 26 MoE
#: layers x (router + 3 shared-expert + 64 x 3 expert tensors), embed, final norm, lm_head = 5,291.
MOE_16B_TENSORS = 27 * 7 + 3 + 26 * (1 + 3 + 64 * 3) + 3


def issue_169() -> dict:
    """Solves the two issue-169 rows for one per-bucket and one per-tensor cost (two rows, two
    unknowns: an exact solve, not a held-out prediction) with the model's own terms.

    Rows: (a) 16B MoE tensor by tensor: every tensor is its own bucket (one IPC round trip), so
    ``T = N16 * (per_bucket_s + per_tensor_s)`` plus the wire; (b) Qwen3-30B-A3B BF16, 512 MB
    buckets: ``T = C * per_bucket_s + N30 * per_tensor_s`` plus the wire (``C`` = 115 buckets).
    Both co-located on 8 GPUs (TP8, NVLink hand-off, transfer is tens of milliseconds).

    Returns
    -------
    dict
        ``per_bucket_s``, ``per_tensor_s`` (seconds), ``buckets_30b``, ``tensors_30b``,
        ``tensors_16b``, ``measured`` (200, 16) and ``predicted`` (the two rows, reproduced).
    """
    def cl(model, bucket):
        return Cluster(model=model, train=TrainLayout(tp=8), infer=InferLayout(instances=1, tp=8),
                       hardware=dataclasses.replace(HARDWARE["h100"], colocated=True),
                       software=SoftwareStack(bucket_bytes=bucket, overlap_stages=False), topology="colocated")

    m16 = ModelSpec.dense("16B MoE (tensor list of DeepSeek-V2-Lite / Moonlight-16B-A3B)", 16e9, n_tensors=MOE_16B_TENSORS)
    a = cl(m16, m16.infer_bytes / MOE_16B_TENSORS)   # one tensor per bucket
    b = cl(MODELS["qwen3-30b-a3b"], 512 * 2**20)
    rows = []
    for c, meas in ((a, 200.0), (b, 16.0)):
        e = estimate(c)
        rows.append((e.n_buckets, e.tensors_charged, meas - e.total_s, c))
    A = np.array([[r[0], r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    pb, pt = np.linalg.solve(A, y)
    pred = [estimate(r[3].replace(software=dataclasses.replace(r[3].software, per_bucket_s=pb, per_tensor_s=pt))).total_s for r in rows]
    return dict(per_bucket_s=float(pb), per_tensor_s=float(pt), buckets_30b=rows[1][0], tensors_30b=rows[1][1],
                tensors_16b=rows[0][1], measured=(200.0, 16.0), predicted=tuple(pred))
