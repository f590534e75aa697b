"""Published weight-sync timings, the stacks fitted on them, and the leave-one-out table.

Each stack of :data:`rollsim.sync.stacks.STACKS` is calibrated on at most two published rows
(:data:`CALIBRATION`); every other row of the same stack is a prediction. :func:`validation_table`
recomputes all of it: the fit, every prediction, and for each calibration row the leave-one-out
prediction (the stack refitted without that row, its efficiency only, on the stack's other
calibration row).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import polars as pl

from .calibration import CKPT, ISSUE_169, MOE_16B_TENSORS, NEMO, NEMO_PLAN_GROUPS, SGL, VERL, _ckpt_engine, _nemo
from .cluster import Cluster, InferLayout, ModelSpec, TrainLayout
from .presets import HARDWARE, MODELS
from . import stacks as stacks_module
from .stacks import STACKS, Stack, _coefficients, estimate_stack

__all__ = ["Row", "ROWS", "BASE_STACKS", "CALIBRATION", "fitted_stacks", "validation_table", "summary", "stack_check"]

GiB = 2**30
PPLX = "Perplexity research, \"Weight Transfer for RL Post-Training in under 2 seconds\" (2025-09-24); arXiv 2510.27656"
LEQUN = "Lequn Chen, le.qun.ch, RL weight transfer with RDMA WRITE (same design as PPLX)"


@dataclass(frozen=True)
class Row:
    """A published sync time: ``measured_s`` (midpoint of ``lo_s..hi_s``) of ``cluster`` with
    ``stack`` (a key of :data:`BASE_STACKS`) and per-row stack settings ``overrides`` (e.g. the
    run's bucket size)."""

    stack: str
    setting: str
    cluster: Cluster
    measured_s: float
    lo_s: float
    hi_s: float
    source: str
    overrides: tuple = ()


def _ck(model: str, prec: str, gpus: int, instances: int, bucket_gib: float, hw: str) -> tuple[Cluster, tuple]:
    return _ckpt_engine(model, prec, gpus, instances, bucket_gib, hw), (("bucket_bytes", bucket_gib * GiB),)


def _row(stack: str, setting: str, cl: tuple[Cluster, tuple] | Cluster, meas: float, lo: float, hi: float,
         source: str, **ov: Any) -> Row:
    c, o = cl if isinstance(cl, tuple) else (cl, ())
    return Row(stack, setting, c, meas, lo, hi, source, tuple(o) + tuple(ov.items()))


def _ipc(model: ModelSpec, bucket: float) -> tuple[Cluster, tuple]:
    c = Cluster(model=model, train=TrainLayout(tp=8), infer=InferLayout(instances=1, tp=8),
                hardware=dataclasses.replace(HARDWARE["h100"], colocated=True), topology="colocated")
    return c, (("bucket_bytes", bucket),)


_M16 = ModelSpec.dense("16B MoE (tensor list of DeepSeek-V2-Lite / Moonlight-16B-A3B)", 16e9, n_tensors=MOE_16B_TENSORS)

#: Every published row (settings and sources in each row).
ROWS: tuple[Row, ...] = (
    _row("checkpoint-engine", "GLM-4.5-Air BF16, 8xH800, TP8, 3.02 GiB buckets", _ck("glm-4.5-air", "bf16", 8, 1, 3.02, "h800"), 3.47, 3.47, 3.47, CKPT),
    _row("checkpoint-engine", "Qwen3-235B-A22B BF16, 8xH800, TP8, 2.67 GiB", _ck("qwen3-235b-a22b", "bf16", 8, 1, 2.67, "h800"), 6.22, 6.22, 6.22, CKPT),
    _row("checkpoint-engine", "DeepSeek-V3.1 FP8, 16xH20, TP16, 5.39 GiB", _ck("deepseek-v3", "fp8:128", 16, 1, 5.39, "h20"), 10.19, 10.19, 10.19, CKPT),
    _row("checkpoint-engine", "Kimi-K2 FP8, 16xH20, TP16, 5.89 GiB", _ck("kimi-k2", "fp8:128", 16, 1, 5.89, "h20"), 14.36, 14.36, 14.36, CKPT),
    _row("checkpoint-engine", "DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB", _ck("deepseek-v3", "fp8:128", 16, 16, 8.0, "h20"), 11.33, 11.33, 11.33, CKPT),
    _row("checkpoint-engine", "Kimi-K2 FP8, 256xH20, 16 x TP16, 8 GiB", _ck("kimi-k2", "fp8:128", 16, 16, 8.0, "h20"), 16.04, 16.04, 16.04, CKPT),
    _row("nemo-rl-reshard", "Qwen3-4B BF16, DP8 -> TP8, H100", _nemo("qwen3-4b", TrainLayout(dp=8), 1, 8), 0.275, 0.21, 0.34, NEMO),
    _row("nemo-rl-reshard", "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100", _nemo("qwen3-30b-a3b", TrainLayout(pp=2, dp=8, ep=8), 2, 8), 0.87, 0.74, 1.00, NEMO),
    _row("nemo-rl-reshard", "Qwen3-30B-A3B FP8, EP8xDP2 -> TP2xDP8, H100", _nemo("qwen3-30b-a3b", TrainLayout(dp=16, ep=8), 8, 2, prec="fp8:128"), 3.45, 2.90, 4.00, NEMO),
    _row("nemo-rl-reshard", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, H100", _nemo("deepseek-v3-no-mtp", TrainLayout(pp=16, dp=16, ep=16), 8, 32), 2.61, 2.39, 2.83, NEMO),
    _row("nemo-rl-reshard", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, GB200", _nemo("deepseek-v3-no-mtp", TrainLayout(pp=16, dp=16, ep=16), 8, 32, hw="gb200"), 2.26, 1.93, 2.59, NEMO),
    _row("rdma-write", "Kimi-K2 BF16 -> FP8, 256 training GPUs (FSDP) -> 128 inference GPUs (4 x 32), H100",
         Cluster(model=MODELS["kimi-k2"], train=TrainLayout(dp=256, fsdp=True), infer=InferLayout(instances=4, tp=32, ep=32),
                 hardware=HARDWARE["h100"]), 1.3, 1.3, 1.3, PPLX),
    _row("rdma-write", "Qwen3-235B-A22B BF16, 128 training GPUs (FSDP) -> 32 inference GPUs (4 x 8), H100",
         Cluster(model=MODELS["qwen3-235b-a22b"], train=TrainLayout(dp=128, fsdp=True),
                 infer=InferLayout(instances=4, tp=8, ep=8), hardware=HARDWARE["h100"]), 2.0, 2.0, 2.0, LEQUN),
    _row("verl-ring", "Qwen3-30B-A3B BF16, FSDP2 -> 30 single-GPU receivers, ring, 4x8 H100, 400 Gb/s IB",
         Cluster(model=MODELS["qwen3-30b-a3b"], train=TrainLayout(dp=2, fsdp=True), infer=InferLayout(instances=30, tp=1),
                 hardware=HARDWARE["h100"]), 7.0, 7.0, 7.0, VERL),
    _row("sglang-per-tensor", "Qwen3-30B-A3B BF16 into SGLang, ~18k expert tensors, per-tensor mapping scan, H100",
         Cluster(model=MODELS["qwen3-30b-a3b"], train=TrainLayout(tp=8), infer=InferLayout(instances=1, tp=8),
                 hardware=HARDWARE["h100"]), 59.0, 55.0, 63.0, SGL),
    _row("cuda-ipc", "16B MoE BF16, colocated TP8, tensor by tensor (one IPC round trip per tensor), H100",
         _ipc(_M16, _M16.infer_bytes / MOE_16B_TENSORS), 200.0, 200.0, 200.0, ISSUE_169),
    _row("cuda-ipc", "Qwen3-30B-A3B BF16, colocated TP8, 512 MiB buckets, H100", _ipc(MODELS["qwen3-30b-a3b"], 512 * 2**20),
         16.0, 16.0, 16.0, ISSUE_169),
)

#: Achieved fraction of the link of NCCL (fitted on checkpoint-engine's rows, shared by NeMo-RL's).
NCCL_EFFICIENCY = 0.336

#: The stacks before fitting: the mechanisms each one has; fitted parameters start at their defaults.
BASE_STACKS: dict[str, Stack] = {
    # ParameterServer ranks co-located with vLLM own the buckets and NCCL-broadcast them to every GPU
    "checkpoint-engine": Stack("checkpoint-engine", "nccl-broadcast", senders="all", source=CKPT),
    # NeMo-RL nccl_reshard_refit: experts and dense FFN shard to shard, the rest one packed broadcast
    # NeMo-RL nccl_reshard_refit; its NCCL moves bytes as well as checkpoint-engine's (the same
    # library on the same links: the efficiency fitted there), its own rows fit its fixed and
    # per-tensor costs
    "nemo-rl-reshard": Stack("nemo-rl-reshard", "nccl-p2p", efficiency=NCCL_EFFICIENCY, plan_groups=NEMO_PLAN_GROUPS,
                             grouped_experts=True, source=NEMO),
    # every training GPU RDMA-writes its scheduled slices into the inference GPUs' memory; FP8
    # block quantization on the trainers
    "rdma-write": Stack("rdma-write", "rdma-write", quantize_on="sender", source=PPLX),
    "verl-ring": Stack("verl-ring", "nccl-ring-relay", source=VERL),
    "sglang-per-tensor": Stack("sglang-per-tensor", "nccl-p2p", source=SGL),
    # per-tensor CUDA IPC handle rebuild (0.18 ms) stays fixed; the bucket round trip is fitted
    "cuda-ipc": Stack("cuda-ipc", "cuda-ipc", bucket_bytes=512 * 2**20, source=ISSUE_169),
    # safetensors written by the trainer and read by every engine; no published row: the file
    # system's aggregate bandwidth is the user's (10 GB/s default), the engine load is per tensor
    "filesystem": Stack("filesystem", "filesystem", per_tensor_s=1e-4, filesystem_bytes_per_s=10e9,
                        source="safetensors checkpoint through a shared file system (verl / slime disk mode)"),
}

#: Per stack: (parameters fitted, settings of the rows they are fitted on); at most two rows.
CALIBRATION: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "checkpoint-engine": (("efficiency", "per_instance_bucket_s"),
                          ("DeepSeek-V3.1 FP8, 16xH20, TP16, 5.39 GiB", "DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB")),
    "nemo-rl-reshard": (("per_update_s", "per_tensor_s"),
                        ("Qwen3-4B BF16, DP8 -> TP8, H100", "Qwen3-30B-A3B FP8, EP8xDP2 -> TP2xDP8, H100")),
    "rdma-write": (("efficiency",), ("Kimi-K2 BF16 -> FP8, 256 training GPUs (FSDP) -> 128 inference GPUs (4 x 32), H100",)),
    "verl-ring": (("efficiency",), ("Qwen3-30B-A3B BF16, FSDP2 -> 30 single-GPU receivers, ring, 4x8 H100, 400 Gb/s IB",)),
    "sglang-per-tensor": (("per_tensor_s",), ("Qwen3-30B-A3B BF16 into SGLang, ~18k expert tensors, per-tensor mapping scan, H100",)),
    "cuda-ipc": (("per_bucket_s", "per_tensor_s"),
                 ("16B MoE BF16, colocated TP8, tensor by tensor (one IPC round trip per tensor), H100",
                  "Qwen3-30B-A3B BF16, colocated TP8, 512 MiB buckets, H100")),
}


def _apply(st: Stack, row: Row) -> Stack:
    return st.replace(**dict(row.overrides)) if row.overrides else st


def _fit(name: str, exclude: str | None = None) -> Stack:
    """The stack ``name`` fitted on its calibration rows (without ``exclude``: then only as many
    parameters as rows are left, the first ones)."""
    params, settings = CALIBRATION[name]
    rows = [r for r in ROWS if r.stack == name and r.setting in settings and r.setting != exclude]
    base = BASE_STACKS[name]
    params = params[: len(rows)]
    if not rows:
        return base
    A, y = [], []
    for r in rows:  # each row keeps its own settings (bucket size)
        a, coefs = _coefficients(r.cluster, _apply(base, r), params)
        A.append(coefs)
        y.append(r.measured_s - a)
    x = np.linalg.lstsq(np.array(A, dtype=float), np.array(y, dtype=float), rcond=None)[0]
    vals = {p: float(1.0 / v if p == "efficiency" else v) for p, v in zip(params, x)}
    return base.replace(**vals, calibrated_on=tuple(r.setting for r in rows))


@cache
def fitted_stacks() -> dict[str, Stack]:
    """Every stack, fitted on its :data:`CALIBRATION` rows (recomputed; :data:`STACKS` holds the
    same values)."""
    return {k: (_fit(k) if k in CALIBRATION else v) for k, v in BASE_STACKS.items()}


@cache
def validation_table() -> pl.DataFrame:
    """Predicted vs published for every row of :data:`ROWS`.

    Returns
    -------
    polars.DataFrame
        ``stack``, ``setting``, ``role`` (``"calibration"`` or ``"prediction"``), ``measured_s``,
        ``lo_s``, ``hi_s``, ``predicted_s``, ``error`` (``predicted / measured - 1``), ``loo_s``
        (leave-one-out: for a prediction row its prediction, for a calibration row the stack
        refitted without it; null when nothing is left to fit on), ``loo_error``,
        ``dominant_term``, ``source``.
    """
    stacks = STACKS
    rows = []
    for r in ROWS:
        st = _apply(stacks[r.stack], r)
        e = estimate_stack(r.cluster, st)
        calib = r.setting in CALIBRATION[r.stack][1]
        loo: float | None = e.total_s
        if calib:
            others = [s for s in CALIBRATION[r.stack][1] if s != r.setting]
            loo = estimate_stack(r.cluster, _apply(_fit(r.stack, exclude=r.setting), r)).total_s if others else None
        rows.append(dict(stack=r.stack, setting=r.setting, role="calibration" if calib else "prediction",
                         measured_s=r.measured_s, lo_s=r.lo_s, hi_s=r.hi_s, predicted_s=e.total_s,
                         error=e.total_s / r.measured_s - 1, loo_s=loo,
                         loo_error=None if loo is None else loo / r.measured_s - 1,
                         dominant_term=e.dominant_term, source=r.source))
    return pl.DataFrame(rows)


def summary() -> dict:
    """Counts for the targets: prediction rows, how many within 25 %, and the instance-scaling rows
    (1 -> 16 instances: measured and predicted increase, percent)."""
    t = validation_table()
    pred = t.filter(pl.col("role") == "prediction")
    within = int((pred["error"].abs() <= 0.25).sum())
    scaling = {}
    for model in ("DeepSeek-V3.1", "Kimi-K2"):
        one = t.filter(pl.col("setting").str.starts_with(model) & pl.col("setting").str.contains("TP16,"))
        one = one.filter(~pl.col("setting").str.contains("16 x"))
        many = t.filter(pl.col("setting").str.starts_with(model) & pl.col("setting").str.contains("16 x TP16"))
        scaling[model] = dict(measured_pct=(many["measured_s"][0] / one["measured_s"][0] - 1) * 100,
                              predicted_pct=(many["predicted_s"][0] / one["predicted_s"][0] - 1) * 100)
    return dict(predictions=pred.height, within_25pct=within, scaling=scaling)


#: The fitted values, rounded to 3 significant digits (``tests/test_sync_stacks.py`` refits them).
FITTED: dict[str, dict[str, float]] = {
    "checkpoint-engine": {"efficiency": 0.336, "per_instance_bucket_s": 9.43e-4},
    "nemo-rl-reshard": {"per_update_s": 0.170, "per_tensor_s": 1.13e-4},
    "rdma-write": {"efficiency": 0.504},
    "verl-ring": {"efficiency": 0.181},
    "sglang-per-tensor": {"per_tensor_s": 3.12e-3},
    "cuda-ipc": {"per_bucket_s": 0.0372, "per_tensor_s": 6.23e-4},
}


#: Design variants built from fitted stacks (not calibrated on rows of their own): an off-node NCCL
#: broadcast from one root GPU (verl's classic update), and the same with every training rank
#: broadcasting its own shard (volcengine/verl PR 7263); both with checkpoint-engine's NCCL
#: efficiency and per-instance receive overhead.
VARIANTS: dict[str, tuple[str, dict]] = {
    "nccl-broadcast-rank0": ("checkpoint-engine", dict(senders="one", source="volcengine/verl NCCL weight update from rank 0")),
    "nccl-broadcast-all-ranks": ("checkpoint-engine", dict(senders="all", source="volcengine/verl PR 7263 (all ranks send)")),
}


def _register() -> None:
    for k, base in BASE_STACKS.items():
        STACKS[k] = base.replace(**FITTED.get(k, {}), calibrated_on=CALIBRATION.get(k, ((), ()))[1])
    for k, (parent, kw) in VARIANTS.items():
        STACKS[k] = STACKS[parent].replace(name=k, calibrated_on=(), **kw)




def stack_check(name: str, total_s: float) -> dict:
    """How well ``rollsim sync --validate`` checked stack ``name`` on published timings, and the
    interval its prediction rows' errors give an estimate of ``total_s`` seconds.

    Returns
    -------
    dict
        ``checked_on`` (str: the prediction rows' errors, or why there are none), ``low_s`` and
        ``high_s`` (float or None: ``total_s / (1 + error)`` over the stack's prediction rows, and
        ``total_s`` itself; None without a prediction row).
    """
    t = validation_table().filter(pl.col("stack") == name)
    pred = t.filter(pl.col("role") == "prediction")
    if pred.height:
        errs = sorted(pred["error"].to_list())
        rng = f"{errs[0] * 100:+.1f} %" if len(errs) == 1 else f"{errs[0] * 100:+.1f} % to {errs[-1] * 100:+.1f} %"
        rows = "prediction" if len(errs) == 1 else "predictions"
        return dict(checked_on=f"{len(errs)} {rows} of published timings off by {rng}",
                    low_s=min(total_s, total_s / (1 + errs[-1])), high_s=max(total_s, total_s / (1 + errs[0])))
    if t.height:
        rows = "timing" if t.height == 1 else "timings"
        text = f"fitted on {t.height} published {rows}, no prediction checked"
    elif name in VARIANTS:
        text = f"{VARIANTS[name][0]}'s fitted values, no published timing of its own"
    elif name in STACKS:
        text = "not calibrated: no published timing (assumed values)"
    else:
        text = "not a stack of rollsim.sync.STACKS: no published timing checked"
    return dict(checked_on=text, low_s=None, high_s=None)


_register()
stacks_module._CHECK[:] = [stack_check]
