"""Resources: where rollout and training run, and how a GPU budget is best split between them.

* :func:`colocated`: rollout and training take turns on the same GPUs; every step pays the switch
  (the rollout engine to sleep and awake, the trainer's state offloaded and back), e.g. 11.2 s sleep
  + 3.8 s wake for a 0.6B model on one L20, most of it the trainer's Megatron state parked on the
  host (vllm-project/vime issue 442 and PR 443).
* :func:`disaggregated`: a rollout pool and a trainer on separate GPUs, sized from per-GPU
  throughputs.
* :func:`gpu_split`: sweeps the rollout / training split of a GPU budget and reports step time,
  trainer idle, rollout idle, throughput, drops, staleness and whether generation outruns
  training per split; it recommends the fastest split that meets limits on drops, staleness and
  runaway queues, and says why each other split was excluded.
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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from rollsim import _check
from rollsim._text import count
from rollsim.hardware import specs as _specs
from rollsim.errors import invalid
from rollsim.frames import series_mean, generation_span_s, utilization_frame
from rollsim.pipelines import FullyAsync, Synchronous, is_synchronous
from rollsim.scenario import Scenario
from rollsim.errors import RunLimitError
from rollsim.simulation import (DEFAULT_MAX_EVENTS, Result, check_max_events, duration_words, estimate_size,
                                horizon_rates, simulate)

__all__ = ["colocated", "disaggregated", "gpu_split", "run_metrics", "SplitResult", "Gpu", "Model", "GPUS", "MODELS",
           "roofline_decode", "utilization_over_time", "generation_span_s", "MAX_DROP_FRACTION"]


@dataclass(frozen=True)
class Gpu:
    """An accelerator: HBM bandwidth (bytes/s) and dense BF16 tensor throughput (FLOP/s)."""

    name: str
    hbm_bytes_per_s: float
    bf16_flops: float


#: Datasheet numbers from :data:`rollsim.hardware.ACCELERATORS` (dense BF16, no sparsity), by the same
#: names; "A100" is the 80 GB SXM part. H800 is an H100 with reduced NVLink; H20 trades compute for bandwidth.
GPUS: dict[str, Gpu] = {n: Gpu(n, a.hbm_bytes_per_s, a.bf16_flops) for n, a in _specs.ACCELERATORS.items()}
GPUS["A100"] = Gpu("A100", GPUS["A100-80G"].hbm_bytes_per_s, GPUS["A100-80G"].bf16_flops)


@dataclass(frozen=True)
class Model:
    """A dense decoder: parameters, and KV-cache bytes per token
    (``layers * kv_heads * head_dim * 2 (K and V) * 2 bytes``, BF16)."""

    name: str
    params: float
    kv_bytes_per_token: float


#: The dense models of :data:`rollsim.hardware.MODELS` (built from their Hugging Face ``config.json``),
#: parameters rounded to 3 significant figures as this roofline always used them (Qwen2.5-7B: 7.62e9).
#: DeepSeek-R1-Distill-Qwen models share the Qwen2.5 shapes.
MODELS: dict[str, Model] = {n: Model(n, _specs._sig3(m.total_params), m.kv_bytes_per_token())
                            for n, m in _specs.MODELS.items() if not m.is_moe and not m.sliding_window_layers}


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
        if _specs._key(gpu) in _specs._AMBIGUOUS:  # said, never silent: the A100-40G's bandwidth is 24 % lower
            _specs._assumed("gpu", gpu, _specs._AMBIGUOUS[_specs._key(gpu)])
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
              gpu_s_per_token: float | None = None, train_fixed_s: float = 0.0,
              train_gpu_s_per_step: float = 0.0) -> Scenario:
    """The synchronous pipeline on shared GPUs: after generating a batch the rollout engine is
    offloaded (``offload_s``), the trainer trains, and the engine is loaded back (``onload_s``)
    before the next batch. Each switch adds to the step: the returned scenario's ``weight_sync_s``
    grows by ``offload_s + onload_s``.

    With ``gpus`` (and ``slots_per_instance``, ``gpu_s_per_token``), the pool and the trainer are
    also sized from the GPUs they take turns on, as :func:`disaggregated` does for a split: every
    GPU serves the rollout (``gpus / gpus_per_instance`` instances) and then the trainer
    (``train_s_per_token = gpu_s_per_token / gpus``, ``train_step_s = train_fixed_s +
    train_gpu_s_per_step / gpus``).

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
                                 train_fixed_s=train_fixed_s, train_gpu_s_per_step=train_gpu_s_per_step)
    return scenario.replace(weight_sync_s=scenario.weight_sync_s + switch)


def disaggregated(scenario: Scenario, *, rollout_gpus: int, train_gpus: int, gpus_per_instance: int,
                  slots_per_instance: int, gpu_s_per_token: float, train_fixed_s: float = 0.0,
                  train_gpu_s_per_step: float = 0.0) -> Scenario:
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
    train_gpu_s_per_step : float
        GPU-seconds per step whatever its tokens, divided over ``train_gpus`` (>= 0; default 0):
        the optimizer step of states sharded over the data-parallel ranks (FSDP, Megatron's
        distributed optimizer), which ``rollsim split --model`` prices from specs on one GPU
        (:func:`rollsim.hardware.training.train_step_s`'s ``optimizer`` phase).

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
                            train_step_s=_check.number("train_fixed_s", train_fixed_s, allow_zero=True)
                            + _check.number("train_gpu_s_per_step", train_gpu_s_per_step, allow_zero=True) / t,
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
        "step_time_s": series_mean(steps["start_s"].diff().drop_nulls()) if steps.height > 1 else math.nan,
        "trainer_wait_s": series_mean(steps["wait_s"]) if steps.height else math.nan,
        "train_s": series_mean(steps["end_s"] - steps["start_s"]) if steps.height else math.nan,
        "steps": float(steps.height),
        "tokens_trained_per_s": res.summary["tokens_trained"] / res.summary["end_s"],
    }
    if res._samples is not None:
        gen = generation_span_s(res.samples, steps)
        out["generation_s"] = math.nan if gen is None else gen
    if gpus is not None:
        out["tokens_per_s_per_gpu"] = out["tokens_trained_per_s"] / _check.integer("gpus", gpus, 1)
    return out


def utilization_over_time(res: Result, bin_s: float) -> pl.DataFrame:
    """Rollout utilization per interval of ``bin_s`` simulated seconds, as a dashboard plots
    it: ``start_s``, ``end_s``, ``utilization`` in [0, 1] (slot-busy seconds / (rollout_slots x
    interval)). A sample holds its slot from its start to its finish (see
    :func:`rollsim.frames.utilization_frame`, which this calls). Needs ``record="samples"``.

    ``bin_s`` must be finite and > 0 and give at most 10**6 bins over the run (a frame of that many
    rows is already more than any plot shows): ``bin_s >= summary["end_s"] / 10**6``.

    Raises
    ------
    ScenarioError
        A run without per-sample rows, or a bad ``bin_s`` (the message gives the smallest valid one)."""
    if res._samples is None:
        raise invalid("res", "needs per-sample rows: simulate(..., record='samples')")
    return utilization_frame(res.samples, rollout_slots=res.scenario.rollout_slots, end_s=res.summary["end_s"],
                             bin_s=bin_s)


#: Default ``max_drop_fraction`` of :func:`gpu_split`: a split that drops more of its finished
#: samples than this is not recommended.
MAX_DROP_FRACTION = 0.05


@dataclass(frozen=True)
class SplitResult:
    """The GPU-split search.

    Attributes
    ----------
    table : polars.DataFrame
        One row per split, in the order run (``rollout_gpus`` ascending, then the colocated row):
        ``placement``, ``rollout_gpus``, ``train_gpus``, ``rollout_slots``, ``steps`` (training
        steps completed: a batch pipeline's last one ends after ``horizon_s``, as the colocated
        row's does), ``steps_by_horizon`` (those ended by ``horizon_s``), ``step_time_s``,
        ``trainer_wait_s``, ``trainer_idle_fraction``, ``rollout_utilization`` (the share of slot
        time with a request: decoding, prefilling, paused or waiting for KV), ``kv_wait_fraction``
        (the share of slot time a request waited for KV, within ``rollout_utilization``: so
        ``rollout_utilization - kv_wait_fraction`` is the share doing work), ``tokens_trained_per_s`` (the
        answer tokens of the steps ended by ``horizon_s`` over ``horizon_s``: the same time for every
        split, as :func:`rollsim.compare`'s rows; :func:`rollsim.simulation.horizon_rates`),
        ``tokens_per_s_per_gpu`` (those over ``total_gpus``), ``drop_fraction`` (dropped /
        (trained + dropped)), ``staleness_mean``, ``staleness_max``, ``generation_outruns_training``
        (the summary's flag: the ready queue grows without bound, staleness rises with the
        horizon), ``ready_queue_growth_per_step``, ``throughput_ratio``, ``runaway`` (the flag, or,
        when the run has fewer than 6 steps to measure the growth in, a fully asynchronous pipeline
        without any bound and ``throughput_ratio > 1``), ``excluded_because`` (str, null for a split that meets
        the limits: why it is not recommended) and ``rank`` (1 = the best split that meets the
        limits, by ``tokens_trained_per_s``; null for excluded splits).
        ``table.sort("rank", nulls_last=True)`` lists the qualifying splits best first.
    best : dict or None
        The row of rank 1, or None when no split meets the limits.
    nearest : dict or None
        When no split meets the limits: the split that comes closest (fewest limits broken, then
        the smallest relative excess: drop fraction and staleness over their limits, ready-queue
        growth per step as a fraction of ``batch_size``; ties: more tokens per second). None when
        ``best`` exists.
    limits : dict
        The limits applied: ``max_drop_fraction``, ``max_staleness_mean``, ``min_train_gpus`` (None: no limit) and
        ``exclude_runaway``.
    """

    table: pl.DataFrame
    best: dict[str, Any] | None
    nearest: dict[str, Any] | None = None
    limits: dict[str, Any] | None = None

    @property
    def limits_text(self) -> str:
        """The limits a recommended split meets, as words (``at least 6 training steps, generation
        does not outrun training, drop_fraction <= 5.0%``)."""
        lim = self.limits or {}
        parts = [f"at least {_MEASURED_STEPS} training steps"]
        if lim.get("exclude_runaway", True):
            parts.append("generation does not outrun training")
        if lim.get("max_drop_fraction") is not None:
            parts.append(f"drop_fraction <= {lim['max_drop_fraction']:.1%}")
        if lim.get("max_staleness_mean") is not None:
            parts.append(f"staleness_mean <= {lim['max_staleness_mean']:g}")
        if lim.get("min_train_gpus") is not None:
            parts.append(f"at least {count(lim['min_train_gpus'], 'training GPU')}")
        return ", ".join(parts) or "no limits"

    @property
    def verdict(self) -> str:
        """One sentence: the best split and the limits it meets, or that none meets them and the
        nearest, with why it was excluded."""
        limits = self.limits_text
        if self.best is not None:
            # the staleness the recommendation trains at: no limit bounds it unless max_staleness_mean is set
            stale = self.best.get("staleness_mean")
            at = "" if stale is None or math.isnan(stale) else f" at mean staleness {stale:.2f}"
            return f"best: {_describe_split(self.best)}{at} (limits: {limits})"
        if self.nearest is None:
            return f"no split meets the limits ({limits})"
        return (f"no split meets the limits ({limits}); nearest: {_describe_split(self.nearest)}, excluded because "
                f"{self.nearest['excluded_because']}")


def _describe_split(r: dict[str, Any]) -> str:
    where = ("colocated on all " + count(r["rollout_gpus"], "GPU") if r["placement"] == "colocated"
             else f"{r['rollout_gpus']} rollout + {count(r['train_gpus'], 'training GPU')}")
    return f"{where}, {r['tokens_trained_per_s']:.0f} tokens trained/s"


def _candidates(rollout_gpus: Any, total: int, gi: int) -> list[int]:
    """The explicit rollout-GPU counts, each checked: an integer multiple of ``gi`` in ``[gi, total - 1]``,
    no repeats; every bad entry is named."""
    if isinstance(rollout_gpus, (str, bytes)) or not hasattr(rollout_gpus, "__iter__"):
        raise invalid("rollout_gpus", f"must be a sequence of integers, got {rollout_gpus!r}")
    values = list(rollout_gpus)
    if not values:
        raise invalid("rollout_gpus", "must name at least one split, got an empty sequence (None: every split)")
    bad: list[str] = []
    seen: dict[int, int] = {}
    out: list[int] = []
    for i, v in enumerate(values):
        ok = not isinstance(v, bool) and isinstance(v, (int, np.integer)) and gi <= int(v) <= total - 1 \
            and int(v) % gi == 0
        if not ok:
            bad.append(f"entry {i} ({v!r})")
        elif int(v) in seen:
            bad.append(f"entry {i} ({v!r}, repeats entry {seen[int(v)]})")
        else:
            seen[int(v)] = i
            out.append(int(v))
    if bad:
        raise invalid("rollout_gpus", f"entries must be integer multiples of gpus_per_instance ({gi}) in [{gi}, "
                                      f"{total - 1}] (one rollout instance at least, one training GPU at least), "
                                      f"each once; invalid: {', '.join(bad)}")
    return out


def _limit(field: str, value: Any, hi: float | None, or_none: str = " (or None: no limit)") -> float | None:
    """A limit of :func:`gpu_split`: None, or a number in ``[0, hi]`` (``[0, inf)`` without ``hi``);
    ``or_none`` ends the message with the way to give no limit."""
    if value is None:
        return None
    allowed = f"a number in [0, {hi:g}]" if hi is not None else "a finite number >= 0"
    v = _check.real(field, value) if isinstance(value, (int, float, np.integer, np.floating)) else None
    if v is None or not (math.isfinite(v) and 0 <= v <= (math.inf if hi is None else hi)):
        raise invalid(field, f"must be {allowed}{or_none}, got {value!r}")
    return v


#: How :func:`gpu_split`'s messages name its arguments and the ways around a limit: the Python API's
#: names (``rollsim split`` passes its flags instead).
SPLIT_NAMES: dict[str, str] = {
    "total_gpus": "total_gpus", "gpus_per_instance": "gpus_per_instance", "slots_per_instance": "slots_per_instance",
    "gpu_s_per_token": "gpu_s_per_token", "train_fixed_s": "train_fixed_s", "colocated_switch_s": "colocated_switch_s",
    "max_drop_fraction": "max_drop_fraction", "max_staleness_mean": "max_staleness_mean", "max_events": "max_events",
    "horizon_s": "horizon_s", "fewer_splits": "give fewer splits (rollout_gpus=[...])", "no_limit": "None: no limit",
    "or_none": " (or None: no limit)", "max_staleness": "pipeline.max_staleness", "sync_every": "sync_every",
}


#: Steps the engine needs to measure the ready queue's growth (``generation_outruns_training``).
_MEASURED_STEPS = 6


def _unbounded(p: Any) -> bool:
    """A fully asynchronous pipeline with nothing that bounds its ready queue."""
    return isinstance(p, FullyAsync) and p.max_staleness is None and p.admission_eta is None \
        and p.max_lag_samples is None and p.max_ready_groups is None


def _exclusions(r: dict[str, Any], batch_size: int, max_drop: float | None, max_stale: float | None,
                exclude_runaway: bool, horizon: str = "horizon_s") -> tuple[list[str], float]:
    """Why a split is not recommended, and by how much it misses (relative excess, summed);
    ``horizon`` names the horizon (``horizon_s``, or the command line's ``--horizon-s``)."""
    why: list[str] = []
    excess = 0.0
    if r["samples_trained"] == 0:
        why.append(f"no sample was trained within {horizon}")
        excess = math.inf
    elif r["steps"] < _MEASURED_STEPS:  # its rates and staleness are those of the pipeline's fill
        why.append(f"only {count(r['steps'], 'training step')} completed (fewer than {_MEASURED_STEPS}: too few to "
                   f"trust its rates; a longer {horizon})")
        excess += (_MEASURED_STEPS - r["steps"]) / _MEASURED_STEPS
    if exclude_runaway and r["runaway"]:
        if r["generation_outruns_training"]:
            why.append(f"generation outruns training (ready queue +{r['ready_queue_growth_per_step']:.0f} samples "
                       f"per step: staleness grows without bound)")
        else:
            # the engine measures the queue's growth over any steps, but calls it runaway growth only
            # over enough of them: the table shows the growth, the text says why it is not called
            why.append(f"generation outruns training (throughput_ratio {r['throughput_ratio']:.2f} > 1; the ready "
                       f"queue grew by {r['ready_queue_growth_per_step']:.0f} samples per step over "
                       f"{count(r['steps'], 'step')}, too few to call it growth without bound; run a longer "
                       f"{horizon} to see it)")
        excess += max(r["ready_queue_growth_per_step"] / batch_size, r["throughput_ratio"] - 1.0, 0.01)
    if max_drop is not None and r["drop_fraction"] > max_drop:
        why.append(f"drop_fraction {r['drop_fraction']:.1%} > max_drop_fraction {max_drop:.1%}")
        excess += (r["drop_fraction"] - max_drop) / max(max_drop, 0.01)
    if max_stale is not None and r["staleness_mean"] > max_stale:
        why.append(f"staleness_mean {r['staleness_mean']:.2f} > max_staleness_mean {max_stale:g}")
        excess += (r["staleness_mean"] - max_stale) / max(max_stale, 1.0)
    return why, excess


def gpu_split(scenario: Scenario, total_gpus: int, *, gpus_per_instance: int, slots_per_instance: int,
              gpu_s_per_token: float, train_fixed_s: float = 0.0, train_gpu_s_per_step: float = 0.0,
              rollout_gpus: Sequence[int] | None = None, colocated_switch_s: float | None = None,
              max_drop_fraction: float | None = MAX_DROP_FRACTION, max_staleness_mean: float | None = None,
              exclude_runaway: bool = True, progress: Callable[[int, int], Any] | None = None,
              max_events: int | None = DEFAULT_MAX_EVENTS, names: dict[str, str] | None = None,
              min_train_gpus: int | None = None) -> SplitResult:
    """Sweeps the rollout / training split of ``total_gpus`` for ``scenario``'s pipeline and lengths,
    and recommends the split that trains the most tokens per second among those that meet the
    limits.

    Each candidate gives ``rollout_gpus`` GPUs to the rollout pool and the rest to the trainer (see
    :func:`disaggregated` for the model), and is simulated with the scenario's seed
    (``record="summary"``).

    With ``colocated_switch_s``, one more row, ``placement = "colocated"``, runs the synchronous
    pipeline on all ``total_gpus`` taking turns (:func:`colocated`): the answer to "does splitting
    the GPUs for an asynchronous pipeline pay off against the colocated baseline?". It competes for
    ``best`` too.

    A split that trains fast by letting generation outrun training (the ready queue grows without
    bound, so staleness rises with the horizon) or by dropping what it generated is not a good
    recommendation: ``best`` is chosen only among the splits that meet the limits, and every other
    split says why in ``excluded_because``. Nor is a split that completed fewer than 6 training
    steps within ``horizon_s`` (the steps the engine needs to measure the ready queue's growth):
    its rates and staleness are those of the pipeline's fill, not of its steady state.

    Parameters
    ----------
    scenario : Scenario
        Pipeline, lengths, batch, horizon, seed (its pool and trainer are set by each split).
    total_gpus : int
        The GPU budget, >= 2 (one rollout instance and one training GPU at least).
    gpus_per_instance, slots_per_instance, gpu_s_per_token, train_fixed_s, train_gpu_s_per_step
        As in :func:`disaggregated`.
    rollout_gpus : sequence of int, optional
        The rollout-GPU counts to try, each an integer multiple of ``gpus_per_instance`` in
        ``[gpus_per_instance, total_gpus - 1]``, each once. Default: all of them.
    colocated_switch_s : float, optional
        Seconds per step to offload the rollout engine and load it back (>= 0): adds the colocated
        baseline.
    max_drop_fraction : float or None
        Recommend only splits that drop at most this fraction of their finished samples (in [0, 1];
        default 0.05; None: no limit).
    max_staleness_mean : float or None
        Recommend only splits whose mean staleness (policy versions) is at most this (>= 0;
        default None: no limit).
    exclude_runaway : bool
        Recommend only splits where generation does not outrun training (the table's ``runaway``;
        default True).
    progress : callable, optional
        Called as ``progress(done, total)`` (splits run so far, splits in all): once before the
        first run and after each.
    max_events : int or None
        The run-time guard of the whole search: refuse (before running anything) a search whose
        splits are estimated to process more events than this in all (default
        ``rollsim.simulation.DEFAULT_MAX_EVENTS``, about a minute); ``None``: no limit.
    min_train_gpus : int or None
        Recommend only splits with at least this many training GPUs (>= 1; default None: no limit),
        e.g. the GPUs that hold the model's training state (``rollsim split --model`` sets it from
        the weights, gradients and Adam moments: :data:`rollsim.hardware.switching.TRAIN_STATE_BYTES_PER_PARAM`).
    names : dict of str to str, optional
        How the error messages name the arguments and the ways around a limit (default
        :data:`SPLIT_NAMES`, the Python arguments; ``rollsim split`` passes its flags, keys as in
        :data:`SPLIT_NAMES`).

    Returns
    -------
    SplitResult
        The table (with ``excluded_because`` and ``rank``), ``best`` (None when no split meets the
        limits), ``nearest`` (then the closest split), and ``verdict`` (a sentence).

    Raises
    ------
    ScenarioError
        A budget that cannot hold one instance and one training GPU, an invalid ``rollout_gpus``
        entry (each named, with the allowed range), a limit out of range, or a bad ``progress``.
    """
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(scenario).__name__}")
    n = SPLIT_NAMES if names is None else {**SPLIT_NAMES, **names}
    total = _check.integer(n["total_gpus"], total_gpus, 1)
    gi = _check.integer(n["gpus_per_instance"], gpus_per_instance, 1)
    if total < gi + 1:
        raise invalid(n["total_gpus"], f"{count(total, 'GPU')} cannot hold one rollout instance ({count(gi, 'GPU')}) "
                                       f"and one training GPU")
    _check.integer(n["slots_per_instance"], slots_per_instance, 1)
    _check.number(n["gpu_s_per_token"], gpu_s_per_token, allow_zero=True)
    _check.number(n["train_fixed_s"], train_fixed_s, allow_zero=True)
    _check.number(n.get("train_gpu_s_per_step", "train_gpu_s_per_step"), train_gpu_s_per_step, allow_zero=True)
    candidates = list(range(gi, total, gi)) if rollout_gpus is None else _candidates(rollout_gpus, total, gi)
    max_drop = _limit(n["max_drop_fraction"], max_drop_fraction, 1.0, n["or_none"])
    max_stale = _limit(n["max_staleness_mean"], max_staleness_mean, None, n["or_none"])
    exclude_runaway = _check.flag("exclude_runaway", exclude_runaway)
    min_train = None if min_train_gpus is None else _check.integer(n.get("min_train_gpus", "min_train_gpus"),
                                                                   min_train_gpus, 1, 2**20)
    if progress is not None and not callable(progress):
        raise invalid("progress", f"must be None or a callable progress(done, total), got {progress!r}")
    runs: list[tuple[str, int, int, Scenario]] = []
    for r in candidates:
        runs.append(("disaggregated", r, total - r, disaggregated(
            scenario, rollout_gpus=r, train_gpus=total - r, gpus_per_instance=gi, slots_per_instance=slots_per_instance,
            gpu_s_per_token=gpu_s_per_token, train_fixed_s=train_fixed_s, train_gpu_s_per_step=train_gpu_s_per_step)))
    if colocated_switch_s is not None:
        switch = _check.number(n["colocated_switch_s"], colocated_switch_s, allow_zero=True)
        runs.append(("colocated", total, total, colocated(
            scenario.replace(pipeline=Synchronous()), switch, 0.0, gpus=total, gpus_per_instance=gi,
            slots_per_instance=slots_per_instance, gpu_s_per_token=gpu_s_per_token, train_fixed_s=train_fixed_s,
            train_gpu_s_per_step=train_gpu_s_per_step)))
    _warn_livelocked_splits(runs, n)
    limit = check_max_events(max_events)
    sizes = [estimate_size(sc, "summary") for *_, sc in runs]
    events = sum(e["events"] for e in sizes)
    if limit is not None and events > limit:  # the search as a whole, not only each split
        kv = sum(e["kv_preemption_events"] for e in sizes)
        kv_words = (f", {kv:.3g} of them the work of the first KV preemptions, each summing the KV of every request "
                    f"still running on its instance: fewer {n['slots_per_instance']} make them fewer" if kv > 0 else "")
        raise RunLimitError(f"{n['max_events']}: the {len(runs)} splits would process about {events:.3g} events "
                            f"({duration_words(events)}{kv_words}), more than {n['max_events']} = {limit}; {n['fewer_splits']}, "
                            f"a shorter {n['horizon_s']}, or raise {n['max_events']} ({n['no_limit']})")
    if progress is not None:
        progress(0, len(runs))
    rows = []
    for i, (placement, r, t, sc) in enumerate(runs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # splits with too many rollout GPUs outrun training: reported
            res = simulate(sc, record="summary")
        m = run_metrics(res, gpus=total)
        rates = horizon_rates(res)  # over the same horizon for every split, as rollsim.compare's rows
        s = res.summary
        row = {
            "placement": placement, "rollout_gpus": r, "train_gpus": t, "rollout_slots": sc.rollout_slots,
            "steps": s["steps"], "steps_by_horizon": rates["steps_by_horizon"], "step_time_s": m["step_time_s"], "trainer_wait_s": m["trainer_wait_s"],
            "trainer_idle_fraction": s["trainer_idle_s"] / s["end_s"],
            "rollout_utilization": s["rollout_utilization"],
            "kv_wait_fraction": s["kv_wait_s"] / (sc.rollout_slots * s["end_s"]) if s["end_s"] > 0 else 0.0,
            "tokens_trained_per_s": rates["tokens_trained_per_s"],
            "tokens_per_s_per_gpu": rates["tokens_trained_per_s"] / total,
            "drop_fraction": s["drop_fraction"], "staleness_mean": s["staleness_mean"],
            "staleness_max": s["staleness_max"], "generation_outruns_training": s["generation_outruns_training"],
            "ready_queue_growth_per_step": s["ready_queue_growth_per_step"], "throughput_ratio": s["throughput_ratio"],
            # with fewer than 6 steps the engine cannot measure the queue's growth: predict it
            "runaway": bool(s["generation_outruns_training"] or (res.steps.height < _MEASURED_STEPS
                                                                 and _unbounded(sc.pipeline)
                                                                 and s["throughput_ratio"] > 1.0)),
        }
        why, excess = _exclusions(row | {"samples_trained": s["samples_trained"]}, scenario.batch_size, max_drop,
                                  max_stale, exclude_runaway, n["horizon_s"])
        if min_train is not None and t < min_train:
            why.append(f"{count(t, 'training GPU')} < {n.get('min_train_gpus', 'min_train_gpus')} {min_train}"
                       f"{n.get('min_train_gpus_why', '')}")
            excess += (min_train - t) / min_train
        rows.append((row, why, excess))
        if progress is not None:
            progress(i + 1, len(runs))
    order = sorted((i for i, (_, why, _) in enumerate(rows) if not why),
                   key=lambda i: -rows[i][0]["tokens_trained_per_s"])
    rank = {i: k + 1 for k, i in enumerate(order)}
    table = pl.DataFrame([dict(row, excluded_because="; ".join(why) or None, rank=rank.get(i))
                          for i, (row, why, _) in enumerate(rows)],
                         schema_overrides={"excluded_because": pl.String, "rank": pl.Int64})
    limits = {"max_drop_fraction": max_drop, "max_staleness_mean": max_stale, "exclude_runaway": exclude_runaway,
              "min_train_gpus": min_train}
    if order:
        return SplitResult(table, table.row(order[0], named=True), None, limits)
    near = min(range(len(rows)), key=lambda i: (rows[i][2] == math.inf, len(rows[i][1]), rows[i][2],
                                                -rows[i][0]["tokens_trained_per_s"]))
    return SplitResult(table, None, table.row(near, named=True), limits)


def _warn_livelocked_splits(runs: list[tuple[str, int, int, Scenario]], n: dict[str, str]) -> None:
    """One :class:`~rollsim.StalenessCapLivelockWarning` for the splits of :func:`gpu_split` whose staleness
    cap is below their sync cadence (they train ``max_staleness + 1`` steps, then drop every sample:
    :func:`rollsim.simulation.staleness_cap_livelock`), naming them; ``n`` spells the cap and the
    cadence (:data:`SPLIT_NAMES`)."""
    from rollsim.errors import StalenessCapLivelockWarning
    from rollsim.simulation import staleness_cap_livelock

    hit = [(r, t, why) for _, r, t, sc in runs
           if (why := staleness_cap_livelock(sc, cap=n["max_staleness"], cadence=n["sync_every"])) is not None]
    if hit:
        splits = ", ".join(f"{r}+{t}" for r, t, _ in hit)
        warnings.warn(StalenessCapLivelockWarning(
            f"{len(hit)} of {len(runs)} splits (rollout+training GPUs: {splits}) cannot train past their first steps: "
            f"{hit[0][2]}"), stacklevel=3)
