"""Resources: where rollout and training run, and how a GPU budget is best split between them.

* :func:`colocated`: rollout and training take turns on the same GPUs; every step pays the switch
  (offload of the rollout engine's weights and KV cache, onload back), e.g. 11.2 s sleep + 3.8 s
  wake for a 0.6B model on one L20 (vllm-project/vime issue 442 and PR 443).
* :func:`disaggregated`: a rollout pool and a trainer on separate GPUs, sized from per-GPU
  throughputs.
* :func:`gpu_split`: sweeps the rollout / training split of a GPU budget and reports step time,
  trainer idle, rollout idle and throughput per split, best split first in ``summary``.
* :func:`run_metrics`: the numbers users read on their dashboards (step time, generation time,
  trainer wait for data, effective throughput, tokens per second per GPU);
  :func:`utilization_over_time`: rollout utilization per time interval;
  :func:`generation_span_s`: the mean generation span of a run's batches (also used by
  :func:`rollsim.plot.step_breakdown_frame`).

* :func:`roofline_decode`: the batched-decoding curve of a model on a GPU (single-sequence
  speed and per-sequence slowdown) from a roofline: weights and KV cache read from HBM, matrix
  FLOPs per token. ``GPUS`` and ``MODELS`` hold the published specs it needs.

A rollout instance of ``gpus_per_instance`` GPUs holds ``slots_per_instance`` concurrent sequences;
training time is ``fixed + gpu_s_per_token * tokens / train_gpus`` (data-parallel scaling).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Sequence

import polars as pl

from rollsim import _check
from rollsim.errors import invalid
from rollsim.pipelines import Synchronous, is_synchronous
from rollsim.scenario import Scenario
from rollsim.simulation import Result, simulate

__all__ = ["colocated", "disaggregated", "gpu_split", "run_metrics", "SplitResult", "Gpu", "Model", "GPUS", "MODELS",
           "roofline_decode", "utilization_over_time", "generation_span_s"]


@dataclass(frozen=True)
class Gpu:
    """An accelerator: HBM bandwidth (bytes/s) and dense BF16 tensor throughput (FLOP/s)."""

    name: str
    hbm_bytes_per_s: float
    bf16_flops: float


#: Datasheet numbers (NVIDIA H100 / H800 SXM, H20, A100 SXM 80 GB product briefs): dense BF16, no
#: sparsity. H800 is an H100 with reduced NVLink; H20 trades compute for bandwidth.
GPUS: dict[str, Gpu] = {
    "H100": Gpu("H100", 3.35e12, 989e12),
    "H800": Gpu("H800", 3.35e12, 989e12),
    "H20": Gpu("H20", 4.0e12, 148e12),
    "A100": Gpu("A100", 2.039e12, 312e12),
}


@dataclass(frozen=True)
class Model:
    """A dense decoder: parameters, and KV-cache bytes per token
    (``layers * kv_heads * head_dim * 2 (K and V) * 2 bytes``, BF16)."""

    name: str
    params: float
    kv_bytes_per_token: float


#: Qwen2.5 configs (Hugging Face ``config.json``): 7B has 28 layers, 4 KV heads of 128; 1.5B has 28
#: layers, 2 KV heads of 128. DeepSeek-R1-Distill-Qwen models share them.
MODELS: dict[str, Model] = {
    "Qwen2.5-7B": Model("Qwen2.5-7B", 7.62e9, 28 * 4 * 128 * 2 * 2),
    "Qwen2.5-1.5B": Model("Qwen2.5-1.5B", 1.54e9, 28 * 2 * 128 * 2 * 2),
}


def roofline_decode(model: Model | str, gpu: Gpu | str, *, context_tokens: float, tp: int = 1,
                    bandwidth_efficiency: float = 0.7, compute_efficiency: float = 0.6) -> tuple[float, float]:
    """Batched-decoding parameters of ``model`` on an instance of ``tp`` ``gpu``s.

    One decode step of ``n`` sequences costs, roofline-style and additively (memory and compute do
    not overlap: a conservative bound),
    ``base + n * per_seq`` seconds with
    ``base = 2 * params / (tp * hbm * bandwidth_efficiency)`` (the BF16 weights read once) and
    ``per_seq = context_tokens * kv_bytes_per_token / (tp * hbm * bandwidth_efficiency)
    + 2 * params / (tp * bf16_flops * compute_efficiency)`` (its KV cache read, its matrix FLOPs).
    A sequence then decodes at ``1 / (base + n per_seq)`` tokens/s, which is the scenario's curve
    ``decode_tokens_per_s / (1 + decode_slowdown_per_seq * (n - 1))`` with
    ``decode_tokens_per_s = 1 / (base + per_seq)`` and ``decode_slowdown_per_seq = per_seq / (base + per_seq)``.

    Parameters
    ----------
    model, gpu : Model | str, Gpu | str
        Specs, or a key of ``MODELS`` / ``GPUS``.
    context_tokens : float
        Mean context (prompt + answer so far) of a decoding sequence, tokens, > 0.
    tp : int
        Tensor-parallel GPUs per instance, >= 1 (communication is not modelled).
    bandwidth_efficiency, compute_efficiency : float
        Achieved fractions of the datasheet bandwidth and FLOP/s, in (0, 1]; defaults are typical
        of vLLM decoding (assumptions, not measurements).

    Returns ``(decode_tokens_per_s, decode_slowdown_per_seq)``. Raises ScenarioError for an unknown
    name or a value out of range.

    A roofline ignores per-step overheads (kernel launches, scheduling, sampling), which dominate
    small models: for a 1.5B model it gives about 700 tokens/s alone on an H800, above what serving
    engines reach. Prefer a measured ``decode_throughput_table`` when you have one."""
    if isinstance(model, str):
        if model not in MODELS:
            raise invalid("model", f"must be a Model or one of {sorted(MODELS)}, got {model!r}")
        model = MODELS[model]
    if isinstance(gpu, str):
        if gpu not in GPUS:
            raise invalid("gpu", f"must be a Gpu or one of {sorted(GPUS)}, got {gpu!r}")
        gpu = GPUS[gpu]
    ctx = _check.number("context_tokens", context_tokens)
    tp = _check.integer("tp", tp, 1)
    effs = {}
    for name, v in (("bandwidth_efficiency", bandwidth_efficiency), ("compute_efficiency", compute_efficiency)):
        effs[name] = _check.number(name, v)
        if effs[name] > 1:
            raise invalid(name, f"must be in (0, 1], got {effs[name]}")
    bw = tp * gpu.hbm_bytes_per_s * effs["bandwidth_efficiency"]
    base = 2.0 * model.params / bw
    per_seq = ctx * model.kv_bytes_per_token / bw + 2.0 * model.params / (tp * gpu.bf16_flops * effs["compute_efficiency"])
    return 1.0 / (base + per_seq), per_seq / (base + per_seq)


def colocated(scenario: Scenario, offload_s: float, onload_s: float, *, gpus: int | None = None,
              gpus_per_instance: int = 1, slots_per_instance: int | None = None,
              gpu_s_per_token: float | None = None, train_fixed_s: float = 0.0) -> Scenario:
    """The synchronous pipeline on shared GPUs: after generating a batch the rollout engine is
    offloaded (``offload_s``), the trainer trains, and the engine is loaded back (``onload_s``)
    before the next batch. Each switch adds to the step: the returned scenario's ``weight_sync_s``
    grows by ``offload_s + onload_s``.

    With ``gpus`` (and ``slots_per_instance``, ``gpu_s_per_token``), the pool and the trainer are
    also sized from the GPUs they take turns on, as :func:`disaggregated` does for a split: every
    GPU serves the rollout (``gpus / gpus_per_instance`` instances) and then the trainer
    (``train_s_per_token = gpu_s_per_token / gpus``, ``train_step_s = train_fixed_s``).

    Raises ScenarioError if the pipeline is not synchronous (one-step and fully asynchronous
    pipelines need rollout and training on separate GPUs), a time is negative, or ``gpus`` is
    given without ``slots_per_instance`` and ``gpu_s_per_token`` (or is not a multiple of
    ``gpus_per_instance``)."""
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(scenario).__name__}")
    p = scenario.pipeline
    if not is_synchronous(p):
        raise invalid("pipeline", f"colocated placement runs rollout and training in turns: it needs Synchronous(), "
                                  f"got {p!r}")
    switch = _check.number("offload_s", offload_s, allow_zero=True) + _check.number("onload_s", onload_s, allow_zero=True)
    if gpus is not None:
        if slots_per_instance is None or gpu_s_per_token is None:
            raise invalid("gpus", "sizing a colocated pool needs slots_per_instance and gpu_s_per_token too")
        scenario = disaggregated(scenario, rollout_gpus=gpus, train_gpus=gpus, gpus_per_instance=gpus_per_instance,
                                 slots_per_instance=slots_per_instance, gpu_s_per_token=gpu_s_per_token,
                                 train_fixed_s=train_fixed_s)
    return scenario.replace(weight_sync_s=scenario.weight_sync_s + switch)


def disaggregated(scenario: Scenario, *, rollout_gpus: int, train_gpus: int, gpus_per_instance: int,
                  slots_per_instance: int, gpu_s_per_token: float, train_fixed_s: float = 0.0) -> Scenario:
    """A scenario whose pool and trainer come from a GPU split.

    Parameters
    ----------
    rollout_gpus, train_gpus : int
        GPUs of the rollout pool (a multiple of ``gpus_per_instance``) and of the trainer (>= 1).
    gpus_per_instance : int
        GPUs per inference instance (its tensor-parallel size).
    slots_per_instance : int
        Concurrent sequences per instance (the engine's max batch).
    gpu_s_per_token : float
        GPU-seconds of training per token of the batch (forward, backward, optimizer, log-prob
        recompute); divided over ``train_gpus`` (data-parallel scaling).
    train_fixed_s : float
        Fixed seconds per step that do not scale (weight sync, optimizer latency), >= 0.

    Returns the scenario with ``rollout_slots``, ``train_step_s`` and ``train_s_per_token`` set, and,
    when ``scenario`` models instances (``slots_per_instance > 0``: batched decoding, KV capacity),
    ``slots_per_instance`` too: the split's instances are the scenario's.
    """
    gi = _check.integer("gpus_per_instance", gpus_per_instance, 1)
    r = _check.integer("rollout_gpus", rollout_gpus, 1)
    t = _check.integer("train_gpus", train_gpus, 1)
    if r % gi:
        raise invalid("rollout_gpus", f"must be a multiple of gpus_per_instance ({gi}), got {r}")
    spi = _check.integer("slots_per_instance", slots_per_instance, 1)
    # with instances modelled (batched decoding, KV capacity), the split's instances are the scenario's
    return scenario.replace(rollout_slots=(r // gi) * spi, slots_per_instance=spi if scenario.slots_per_instance else 0,
                            train_step_s=_check.number("train_fixed_s", train_fixed_s, allow_zero=True),
                            train_s_per_token=_check.number("gpu_s_per_token", gpu_s_per_token, allow_zero=True) / t)


def run_metrics(res: Result, gpus: int | None = None, *, warmup_steps: int = 0) -> dict[str, float]:
    """Dashboard numbers of a run, over its completed steps after the first ``warmup_steps``
    (>= 0; the steady state leaves out the pipeline's fill: ``rollsim.validation`` uses 2).

    Returns ``step_time_s`` (mean time between the starts of consecutive steps),
    ``generation_s`` (mean time from a step's first sample start to its last finish; needs
    per-sample rows), ``trainer_wait_s`` (mean trainer idle before a step: verl's ``wait_prev_gen``),
    ``train_s`` (mean step duration), ``steps`` (the steps these means are over),
    ``tokens_trained_per_s`` (AReaL's effective throughput: tokens trained / simulated seconds, over
    the whole run), and with ``gpus`` ``tokens_per_s_per_gpu``. Means over too few steps are NaN."""
    skip = _check.integer("warmup_steps", warmup_steps, 0)
    steps = res.steps.filter(pl.col("completed")).slice(skip)
    out: dict[str, float] = {
        "step_time_s": float(steps["start_s"].diff().drop_nulls().mean()) if steps.height > 1 else math.nan,
        "trainer_wait_s": float(steps["wait_s"].mean()) if steps.height else math.nan,
        "train_s": float((steps["end_s"] - steps["start_s"]).mean()) if steps.height else math.nan,
        "steps": float(steps.height),
        "tokens_trained_per_s": res.summary["tokens_trained"] / res.summary["end_s"],
    }
    if res._samples is not None:
        gen = generation_span_s(res.samples, steps)
        out["generation_s"] = math.nan if gen is None else gen
    if gpus is not None:
        out["tokens_per_s_per_gpu"] = out["tokens_trained_per_s"] / _check.integer("gpus", gpus, 1)
    return out


def generation_span_s(samples: pl.DataFrame, steps: pl.DataFrame) -> float | None:
    """Mean generation span of the batches of ``steps`` (a steps frame): for each step, from the
    first start to the last finish of the samples it trained (``samples``: a samples frame);
    seconds, or None when none of them trained a sample."""
    spans = (samples.filter(pl.col("trained_step").is_in(steps["step"].cast(pl.Int64).to_list()))
             .group_by("trained_step").agg((pl.col("finish_s").max() - pl.col("start_s").min()).alias("span")))
    return float(spans["span"].mean()) if spans.height else None


def utilization_over_time(res: Result, bin_s: float) -> pl.DataFrame:
    """Rollout utilization per interval of ``bin_s`` simulated seconds (> 0), as a dashboard plots
    it: ``start_s``, ``end_s``, ``utilization`` in [0, 1] (slot-busy seconds / (rollout_slots x
    interval)). A sample holds its slot from its start to its finish (see
    :func:`rollsim.plot.utilization_frame`, which this calls). Needs ``record="samples"``;
    raises ScenarioError otherwise or for a bad ``bin_s``."""
    from rollsim import plot

    if res._samples is None:
        raise invalid("res", "needs per-sample rows: simulate(..., record='samples')")
    return plot.utilization_frame(res.samples, rollout_slots=res.scenario.rollout_slots, end_s=res.summary["end_s"],
                                  bin_s=bin_s)


@dataclass(frozen=True)
class SplitResult:
    """The GPU-split search: ``table`` has one row per split (``placement``, ``rollout_gpus``, ``train_gpus``,
    ``rollout_slots``, ``step_time_s``, ``trainer_wait_s``, ``trainer_idle_fraction``,
    ``rollout_utilization``, ``tokens_trained_per_s``, ``tokens_per_s_per_gpu``,
    ``staleness_mean``, ``drop_fraction``); ``best`` is the row with the highest
    ``tokens_trained_per_s``."""

    table: pl.DataFrame
    best: dict[str, Any]


def gpu_split(scenario: Scenario, total_gpus: int, *, gpus_per_instance: int, slots_per_instance: int,
              gpu_s_per_token: float, train_fixed_s: float = 0.0,
              rollout_gpus: Sequence[int] | None = None, colocated_switch_s: float | None = None) -> SplitResult:
    """Sweeps the rollout / training split of ``total_gpus`` for ``scenario``'s pipeline and lengths.

    Each candidate gives ``rollout_gpus`` (multiples of ``gpus_per_instance``, default all from one
    instance to ``total_gpus - 1``) to the rollout pool and the rest to the trainer (see
    :func:`disaggregated` for the model), and is simulated with the scenario's seed; the best split
    maximizes tokens trained per second (effective throughput).

    With ``colocated_switch_s`` (seconds per step to offload the rollout engine and load it back,
    >= 0), one more row, ``placement = "colocated"``, runs the synchronous pipeline on all
    ``total_gpus`` taking turns (:func:`colocated`): the answer to "does splitting the GPUs for an
    asynchronous pipeline pay off against the colocated baseline?". It competes for ``best`` too.

    Raises ScenarioError for a budget that cannot hold one instance and one training GPU."""
    total = _check.integer("total_gpus", total_gpus, 1)
    gi = _check.integer("gpus_per_instance", gpus_per_instance, 1)
    if rollout_gpus is None:
        rollout_gpus = list(range(gi, total, gi))
    candidates = [int(r) for r in rollout_gpus if 0 < int(r) < total and int(r) % gi == 0]
    if not candidates:
        raise invalid("total_gpus", f"{total} GPUs cannot hold one rollout instance ({gi} GPUs) and one training GPU")
    runs: list[tuple[str, int, int, Scenario]] = []
    for r in candidates:
        runs.append(("disaggregated", r, total - r, disaggregated(
            scenario, rollout_gpus=r, train_gpus=total - r, gpus_per_instance=gi, slots_per_instance=slots_per_instance,
            gpu_s_per_token=gpu_s_per_token, train_fixed_s=train_fixed_s)))
    if colocated_switch_s is not None:
        switch = _check.number("colocated_switch_s", colocated_switch_s, allow_zero=True)
        runs.append(("colocated", total, total, colocated(
            scenario.replace(pipeline=Synchronous()), switch, 0.0, gpus=total, gpus_per_instance=gi,
            slots_per_instance=slots_per_instance, gpu_s_per_token=gpu_s_per_token, train_fixed_s=train_fixed_s)))
    rows = []
    for placement, r, t, sc in runs:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # splits with too many rollout GPUs outrun training: reported
            res = simulate(sc)
        m = run_metrics(res, gpus=total)
        s = res.summary
        rows.append({
            "placement": placement, "rollout_gpus": r, "train_gpus": t, "rollout_slots": sc.rollout_slots,
            "step_time_s": m["step_time_s"], "trainer_wait_s": m["trainer_wait_s"],
            "trainer_idle_fraction": s["trainer_idle_s"] / s["end_s"],
            "rollout_utilization": s["rollout_utilization"],
            "tokens_trained_per_s": m["tokens_trained_per_s"], "tokens_per_s_per_gpu": m["tokens_per_s_per_gpu"],
            "staleness_mean": s["staleness_mean"], "drop_fraction": s["drop_fraction"],
            "generation_outruns_training": s["generation_outruns_training"],
        })
    table = pl.DataFrame(rows)
    best = table.sort("tokens_trained_per_s", descending=True).row(0, named=True)
    return SplitResult(table, best)
