"""Run scenarios: ``simulate`` (one run, with frames) and ``compare`` (the chapter's table)."""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal
from collections.abc import Iterable, Sequence

import numpy as np
import polars as pl

from rollsim import _check, _rollsim
from rollsim.errors import (GenerationOutrunsTrainingWarning, NoTrainingStepWarning, RunStalledWarning,
                            StalenessCapLivelockWarning, invalid)
from rollsim.lengths import LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, OneStepAsync, Synchronous
from rollsim.scenario import Scenario

__all__ = ["Result", "simulate", "compare", "estimate_size", "SHORT_TOKENS", "LONG_TOKENS", "DEFAULT_MAX_SAMPLES",
           "DEFAULT_MAX_EVENTS", "EVENTS_PER_S", "SUMMARY_KEYS", "staleness_cap_livelock", "horizon_rates"]

#: Answers shorter than this are "short" in ``summary["staleness_mean_short"]`` (the chapter's < 1K).
SHORT_TOKENS = 1000
#: Answers longer than this are "long" in ``summary["staleness_mean_long"]`` (the chapter's > 8K).
LONG_TOKENS = 8000
#: Default limit on samples started in one run (a memory guard: with ``record="samples"`` each
#: sample costs about :data:`BYTES_PER_SAMPLE` bytes, so about 9 GB at this limit).
DEFAULT_MAX_SAMPLES = 50_000_000

_DTYPE_BYTES = {"float64": 8, "int64": 8, "uint64": 8, "uint32": 4, "bool": 1}


def _engine_columns(frame: str) -> dict[str, int]:
    """Bytes per row of each of the engine's columns of ``frame``, from its schema."""
    return {c["name"]: _DTYPE_BYTES[c["dtype"]] for c in _rollsim.SCHEMA["frames"][frame]}


#: The summary's keys, in the engine's order (its schema).
SUMMARY_KEYS: tuple[str, ...] = tuple(c["name"] for c in _rollsim.SCHEMA["summary"])

# Bytes per row of every recorded column: the engine's columns (handed to numpy; from the schema),
# the polars frames built from them (both alive when simulate returns), and the segments (at least
# one span per sample).
_ENGINE_SAMPLE_COLUMNS = _engine_columns("samples")
_FRAME_SAMPLE_COLUMNS = {"sample_id": 4, "group_id": 4, "length_tokens": 8, "start_s": 8, "finish_s": 8,
                         "version_start": 4, "version_end": 4, "version_finish": 4, "n_versions": 4,
                         "trained_step": 8, "staleness": 8, "staleness_at_finish": 8, "dropped": 1, "aborted": 1,
                         "slot": 4, "status": 1}
_SEGMENT_COLUMNS = _engine_columns("segments")
_ENGINE_STEP_COLUMNS = _engine_columns("steps")
_FRAME_STEP_COLUMNS = dict(_ENGINE_STEP_COLUMNS, step=4, completed=1)
#: Bytes per recorded sample with ``record="samples"``: engine columns + frame + one segment (both).
BYTES_PER_SAMPLE = (sum(_ENGINE_SAMPLE_COLUMNS.values()) + sum(_FRAME_SAMPLE_COLUMNS.values())
                    + 2 * sum(_SEGMENT_COLUMNS.values()))
#: Bytes per training step (engine columns + frame), recorded in both modes.
BYTES_PER_STEP = sum(_ENGINE_STEP_COLUMNS.values()) + sum(_FRAME_STEP_COLUMNS.values())


#: Default limit on the events of one run (checked against :func:`estimate_size` before running):
#: about a minute at :data:`EVENTS_PER_S`. ``record="summary"`` keeps memory constant, so there the
#: guard is on run time.
DEFAULT_MAX_EVENTS = 1_000_000_000
#: Typical engine speed, events per second on one core (10-20 M for the chapter's scenario and
#: common variants; batched decoding and KV capacity are slower): used to say how long a refused run
#: would take.
EVENTS_PER_S = 15e6
#: The most samples one run can start (sample ids are 32-bit).
ENGINE_MAX_SAMPLES = 2**32 - 1
#: KV capacity: the running requests whose KV one preemption sums (``rust/rollsim-core/src/pipeline/
#: instances.rs``, ``Instances::kv_full``: a sum in heap order, kept so for bit-identical results)
#: that cost as much time as one event at :data:`EVENTS_PER_S`. Fitted once (least squares through
#: 0) on five runs of one instance (25,000-100,000 slots, 409,553 tokens of KV, 5-60 s) on a loaded
#: 2-core machine: 1.57 ns per request summed, residuals -1 % to +13 % (docs/performance.md).
KV_SUMS_PER_EVENT = 42.0


def check_max_samples(max_samples: Any) -> int:
    """``max_samples`` as an int in [1, 2**32 - 1], else ScenarioError."""
    if isinstance(max_samples, bool) or not isinstance(max_samples, (int, np.integer)) \
            or not 1 <= int(max_samples) <= ENGINE_MAX_SAMPLES:
        raise invalid("max_samples", f"must be an integer in [1, 2**32 - 1], got {max_samples!r}")
    return int(max_samples)


def check_max_events(max_events: Any) -> int | None:
    """``max_events`` as an int >= 1, or None (no limit), else ScenarioError."""
    if max_events is None:
        return None
    if isinstance(max_events, bool) or not isinstance(max_events, (int, np.integer)) or int(max_events) < 1:
        raise invalid("max_events", f"must be an integer >= 1 or None (no limit), got {max_events!r}")
    return int(max_events)


def estimate_size(scenario: Scenario, record: Literal["samples", "summary"] = "samples") -> dict[str, float]:
    """An estimate, before running, of what a run of ``scenario`` creates: ``samples`` started,
    ``steps``, ``events`` and ``bytes`` of recorded rows (``record="summary"``: steps only).

    ``events`` counts the samples, the steps and :func:`kv_preemption_events` (the work of the first
    KV preemptions of instances that admit more requests than their KV keeps, as events; also
    returned as ``kv_preemption_events``).

    Samples: the rollout pool busy for the whole horizon, ``rollout_slots * (horizon_s /
    seconds_per_answer + 1)`` with ``seconds_per_answer = mean_tokens / decode_tokens_per_s`` (+ the
    prompt's prefill), capped for batch pipelines by the batches that can start (at least one batch's
    generation, and the training step for synchronous, per batch) and for admission control / lag
    bounds by the training steps; aborted answers (``abort_drop``, over-sampling) add a pool per
    update. A training step lasts ``train_step_s + weight_sync_s + (train_s_per_token +
    logprob_s_per_token) * batch_size * mean_tokens``, and steps are at most ``horizon_s`` over it.
    Within about 1 % for the chapter's scenario; an estimate, not a bound (the engine still enforces
    ``max_samples`` exactly while running). Infinite when answers take no time (e.g. ``mu = -1e300``).
    Agentic batch pipelines with ``on_failure="drop"``: a group a failed tool call drops is replaced,
    so a trained sample costs ``1 / P(group survives)`` started (:func:`group_survival`), and the
    first batch runs past ``horizon_s`` until its groups have survived."""
    sc = scenario
    per_answer, step_s = _per_answer_s(sc), _step_s(sc)
    slots, batch, horizon = sc.rollout_slots, sc.batch_size, sc.horizon_s
    train_steps = horizon / step_s if step_s > 0 else math.inf
    pool = slots * (horizon / per_answer + 1) if per_answer > 0 else math.inf
    p = sc.pipeline
    if isinstance(p, FullyAsync):
        samples = pool
        steps_max = min(pool / batch, train_steps) + 1
        if p.admission_eta is not None:
            samples = min(samples, (p.admission_eta + 1 + steps_max) * batch)
        if p.max_lag_samples is not None and p.max_staleness is None and p.max_ready_groups is None:
            samples = min(samples, p.max_lag_samples + steps_max * batch)
        if p.on_update == "abort_drop":
            samples += steps_max * slots
    else:  # OffPolicy(k)
        surv = group_survival(sc)
        batches, started, agentic_pool = _batch_cycles(sc, per_answer, step_s)
        if agentic_pool is not None:
            pool = agentic_pool
        if surv is not None:
            samples = max(min(pool, batches * batch * started), batch * started)
        elif p.over_sampling is None:
            samples = min(pool, batches * batch)
        else:  # stopped answers are aborted (or resumed): up to a pool per batch on top
            samples = min(pool + batches * slots, batches * batch * (1 + p.over_sampling))
    steps = min(samples / batch, train_steps) + 1
    per_sample = BYTES_PER_SAMPLE if record == "samples" else 0
    kv = kv_preemption_events(sc)
    return {"samples": samples, "steps": steps, "events": samples + steps + kv, "kv_preemption_events": kv,
            "bytes": samples * per_sample + steps * BYTES_PER_STEP}


def _per_answer_s(sc: Scenario) -> float:
    """Slot seconds of one answer: its mean tokens at ``decode_tokens_per_s``, plus its prompt's
    prefill (a group's share of it with ``prefix_sharing``)."""
    per_answer = sc.lengths.mean_tokens() / sc.decode_tokens_per_s
    if math.isfinite(sc.prefill_tokens_per_s) and sc.prompt_tokens > 0:
        prefill = sc.prompt_tokens / sc.prefill_tokens_per_s
        per_answer += prefill / sc.group_size if sc.prefix_sharing else prefill
    return per_answer


def _step_s(sc: Scenario) -> float:
    """Seconds of one training step: ``train_step_s + weight_sync_s`` and the per-token costs of a
    batch of mean answers."""
    per_token = sc.train_s_per_token + sc.logprob_s_per_token
    mean_tokens = sc.lengths.mean_tokens()
    return sc.train_step_s + sc.weight_sync_s + (per_token * sc.batch_size * mean_tokens if per_token > 0 else 0.0)


def _batch_cycles(sc: Scenario, per_answer: float, step_s: float) -> tuple[float, float, float | None]:
    """A batch pipeline's batches that start within ``horizon_s``, the samples started per sample
    trained, and (agentic with failures dropped) the pool's samples over the horizon, else None.

    A batch's generation takes its longest answer, or the pool's work if longer (with
    over-sampling, the batch ends when ``batch_size`` answers have finished); agentic with failures
    dropped: a trained sample costs ``1 / P(group survives)`` started, and a batch's generation runs
    past the horizon until its groups survive."""
    p = sc.pipeline
    assert isinstance(p, OffPolicy)
    slots, batch, horizon = sc.rollout_slots, sc.batch_size, sc.horizon_s
    surv = group_survival(sc)
    started = 1.0 if surv is None else (1.0 / surv[1] if surv[1] > 0 else math.inf)
    pool = None
    if surv is not None:
        assert sc.agentic is not None
        # slot time of a started trajectory: it also ends at its first failing call
        a = sc.agentic
        cut = dataclasses.replace(a, stop_prob=1.0 - (1.0 - a.stop_prob) * (1.0 - a.failure_rate), failure_rate=0.0)
        traj_s = per_answer * _trajectory_turns(cut)[1]
        pool = slots * (horizon / traj_s + 1) if traj_s > 0 else math.inf
        gen = batch * started * traj_s / slots
    else:
        gen = batch * per_answer / slots
    if p.over_sampling is None:
        gen = max(gen, _longest(sc.lengths, batch) / sc.decode_tokens_per_s)
    cycle = gen + step_s if p.k == 0 else max(gen, step_s)
    return (horizon / cycle if cycle > 0 else math.inf) + p.k + 1, started, pool


def kv_preemption_events(scenario: Scenario) -> float:
    """The work of the KV preemptions at the start of a run, in events (of :data:`EVENTS_PER_S`), for
    instances that admit more requests than their KV can keep decoding; 0 otherwise.

    Every slot of an instance starts at once, and as long as its KV (prompt + 1 token each) fits, up
    to ``n0 = min(slots_per_instance, kv_cache_tokens / (prompt_tokens + 1))`` requests start. Their
    KV grows one token per request per token decoded, so requests are preempted, the most recently
    admitted first, one preemption at a time, until ``n1 = kv_cache_tokens / (prompt_tokens +
    context)`` are left, ``context`` the smaller of ``mean_tokens`` and what one sequence decodes in
    ``horizon_s`` at ``decode_tokens_per_s``: ``n0 - n1`` preemptions. The batch pipelines
    (``OffPolicy``) start only a batch's requests at once (``batch_size``, more with over-sampling),
    spread evenly over the instances (the least loaded first), so ``n0`` is also at most an
    instance's share of them; they run a batch to its end whatever the horizon (``context`` is
    ``mean_tokens``), and every batch starts on an idle pool, so each batch that starts within the
    horizon preempts so again. Each preemption sums the KV of the requests still
    running (``Instances::kv_full`` in ``rust/rollsim-core/src/pipeline/instances.rs``: a sum in the
    order of the instance's heap, kept for bit-identical results), so the instances do about
    ``(n0**2 - n1**2) / 2`` such terms each, :data:`KV_SUMS_PER_EVENT` per event. Counted in
    :func:`estimate_size`'s ``events``, so the run-time guard (``max_events``) refuses a run whose
    preemptions alone would take too long (e.g. 100,000 slots on one instance with 409,553 tokens of KV:
    about 1.2e8 events, 8 s). Later preemptions (a few requests each) are not counted.

    Returns
    -------
    float
        Events; 0 without ``kv_cache_tokens`` or when ``n0 <= n1``.
    """
    sc = scenario
    per, cap = sc.slots_per_instance, sc.kv_cache_tokens
    if not per or cap is None:
        return 0.0
    prompt, instances = sc.prompt_tokens, sc.rollout_slots / per
    n0 = min(float(per), cap / (prompt + 1.0))
    p = sc.pipeline
    if isinstance(p, FullyAsync):
        context = min(sc.lengths.mean_tokens(), sc.decode_tokens_per_s * sc.horizon_s)
        cascades = 1.0
    else:
        # the groups a batch submits (the engine's `submit`), their requests evenly over the instances
        need = sc.batch_size // sc.group_size
        o = p.over_sampling
        groups = need if o is None else (math.inf if math.isinf(o) else need + math.ceil(need * o))
        share = groups * sc.group_size / instances
        n0 = min(n0, math.ceil(share) if math.isfinite(share) else share)
        context = sc.lengths.mean_tokens()
        cascades = _batch_cycles(sc, _per_answer_s(sc), _step_s(sc))[0]
    n1 = cap / (prompt + context) if prompt + context > 0 else math.inf
    if not n0 > n1:
        return 0.0
    return cascades * instances * (n0 * n0 - n1 * n1) / 2.0 / KV_SUMS_PER_EVENT


def _trajectory_turns(a: Any) -> tuple[float, float, float]:
    """Agentic turns per trajectory (the stop coin after each turn, ``max_turns``; cuts at
    ``max_context_tokens`` ignored): expected turns, expected tokens per trajectory in units of one
    ``lengths`` draw (``turn_scale`` applied), and ``P(no call fails)`` under ``on_failure="drop"``
    (a call, failing with ``failure_rate``, follows every turn but the last)."""
    s, m, q = a.stop_prob, a.max_turns, 1.0 - a.failure_rate
    x = (1.0 - s) * q  # P(a turn is followed by a call that succeeds)
    last = x ** (m - 1)
    p_ok = last + (s * (1.0 - last) / (1.0 - x) if x < 1.0 else 0.0)
    if s == 0.0:
        turns = float(m)
    else:
        turns = (1.0 - (1.0 - s) ** m) / s
    scale = a.turn_scale
    if not scale:
        return turns, turns, p_ok
    tokens, alive = 0.0, 1.0  # alive: P(turn k is decoded)
    for k in range(min(m, len(scale))):
        tokens += alive * scale[k]
        alive *= 1.0 - s
    rest = m - len(scale)
    if rest > 0:
        tokens += alive * scale[-1] * (float(rest) if s == 0.0 else (1.0 - (1.0 - s) ** rest) / s)
    return turns, tokens, p_ok


def group_survival(sc: Scenario) -> tuple[float, float] | None:
    """For an agentic scenario of a batch pipeline with ``on_failure="drop"`` and
    ``failure_rate > 0``: ``(calls, p)``, the expected tool calls per trajectory and the
    probability that a group survives (none of its ``group_size`` trajectories has a failing call).
    The batch pipelines replace a dropped group by a new one, so a trained sample costs about
    ``1 / p`` samples started. None otherwise (nothing is replaced)."""
    a = sc.agentic
    if a is None or isinstance(sc.pipeline, FullyAsync) or a.on_failure != "drop" or a.failure_rate == 0.0 \
            or a.max_turns == 1:
        return None
    turns, _, p_ok = _trajectory_turns(a)
    return turns - 1.0, p_ok ** sc.group_size


def failure_drop_error(sc: Scenario) -> str | None:
    """The refusal message (for a :class:`~rollsim.errors.ScenarioError`) for a batch-pipeline
    agentic scenario whose groups almost never survive their tool calls: one training step would
    need more than 2**32 - 1 samples started (the most one run can start); else None."""
    surv = group_survival(sc)
    if surv is None:
        return None
    calls, p = surv
    if p > 0.0 and sc.batch_size / p <= ENGINE_MAX_SAMPLES:
        return None
    a = sc.agentic
    assert a is not None
    need = sc.batch_size / ENGINE_MAX_SAMPLES  # the least P(group survives) that can deliver a step
    lo, hi = 0.0, a.failure_rate  # bisection on the failure rate: P(group survives) falls with it
    for _ in range(60):
        mid = (lo + hi) / 2
        ok = _trajectory_turns(dataclasses.replace(a, failure_rate=mid))[2] ** sc.group_size
        lo, hi = (mid, hi) if ok >= need else (lo, mid)
    return (f"agentic.failure_rate: must be at most about {lo:.3g} here, got {a.failure_rate!r}: with group_size "
            f"{sc.group_size} and about {calls:.3g} tool calls per trajectory, a group survives with probability "
            f"{p:.3g}; the batch pipelines replace a group a failed call drops, so a training step of batch_size "
            f"{sc.batch_size} needs about {sc.batch_size / p if p > 0 else math.inf:.3g} samples started, "
            f"more than one run can start (2**32 - 1); lower failure_rate, use on_failure='retry', fewer turns "
            f"(max_turns, stop_prob) or a smaller group_size, or the fully-async pipeline")


def _longest(lengths: Any, n: int) -> float:
    """About the longest of ``n`` draws, tokens: the ``1 - 1/(n + 1)`` quantile."""
    q = 1.0 - 1.0 / (n + 1)
    if isinstance(lengths, LogNormal):
        if lengths.sigma == 0:
            return lengths.mean_tokens()
        from statistics import NormalDist

        x = lengths.mu + lengths.sigma * NormalDist().inv_cdf(q)
        return lengths.max_tokens if x >= math.log(lengths.max_tokens) else math.exp(x)
    order = np.argsort(lengths.values)
    v = lengths.values[order]
    w = np.ones_like(v) if lengths.weights is None else lengths.weights[order]
    c = np.cumsum(w)
    return float(v[min(int(np.searchsorted(c, q * c[-1])), v.size - 1)])


def _fmt_count(x: float) -> str:
    return "an unbounded number of" if not math.isfinite(x) else f"about {x:.3g}"


def _fmt_bytes(x: float) -> str:
    if not math.isfinite(x):
        return "unbounded memory"
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if x >= size:
            return f"{x / size:.3g} {unit}"
    return f"{x:.0f} B"


def duration_words(events: float) -> str:
    """How long ``events`` take at :data:`EVENTS_PER_S`, in words."""
    s = events / EVENTS_PER_S
    if not math.isfinite(s):
        return "forever"
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if s >= size:
            return f"about {s / size:.2g} {unit}"
    return f"about {s:.2g} s"


#: How :func:`runaway_error` names the limits and the ways around them: the Python API's arguments.
#: The command line passes its own flags (``rollsim.cli.GUARD_NAMES``).
GUARD_NAMES: dict[str, str] = {
    "max_samples": "max_samples", "max_events": "max_events", "horizon_s": "horizon_s",
    "samples": "record='samples'", "use_summary": "use record='summary' (constant memory)",
    "summary_keeps": "record='summary' keeps memory constant", "no_limit": "None: no limit",
    "slots_per_instance": "slots_per_instance", "kv_cache_tokens": "kv_cache_tokens",
}


def runaway_error(sc: Scenario, max_samples: int | None, record: Literal["samples", "summary"],
                  max_events: int | None = None, names: dict[str, str] | None = None) -> str | None:
    """The refusal message for a run of ``sc`` that is estimated (:func:`estimate_size`) to exceed
    a limit, else None.

    The limits, in this order: the samples started, at most ``max_samples`` (None: the engine's
    2**32 - 1; with ``record="samples"`` it is the memory guard and the message gives the memory),
    then the events, at most ``max_events`` (None: no limit; the run-time guard, with the time the
    run would take at about :data:`EVENTS_PER_S`). ``names`` spells the limits and remedies
    (default :data:`GUARD_NAMES`, the Python arguments). First, the message of
    :func:`failure_drop_error` (agentic batch runs that cannot deliver a training step)."""
    n = GUARD_NAMES if names is None else names
    drop = failure_drop_error(sc)
    if drop is not None:
        return drop
    est = estimate_size(sc, record)
    limit = ENGINE_MAX_SAMPLES if max_samples is None else max_samples
    where = f"over {n['horizon_s']} = {sc.horizon_s:g} s"
    if est["samples"] > limit:
        if record == "samples":
            cost = f"{_fmt_bytes(est['bytes'])} of recorded rows with {n['samples']}"
        else:
            cost = (f"{_fmt_count(est['events'])} events, {duration_words(est['events'])} at ~15 M events/s; "
                    f"{n['summary_keeps']}")
        if limit >= ENGINE_MAX_SAMPLES:  # a limit no flag raises: the horizon is what to change, named first
            most = sc.horizon_s * ENGINE_MAX_SAMPLES / est["samples"]   # samples grow about linearly in it
            return (f"{n['horizon_s']}: this scenario would start {_fmt_count(est['samples'])} samples ({cost}) "
                    f"{where}, more than one run can start (2**32 - 1 samples: sample ids are 32-bit); shorten "
                    f"{n['horizon_s']}" + (f" to at most about {most:.2g} s" if most >= 1 else ""))
        proceed = f"{n['use_summary']}, shorten {n['horizon_s']}, " if record == "samples" \
            else f"shorten {n['horizon_s']}, "
        return (f"{n['max_samples']}: this scenario would start {_fmt_count(est['samples'])} samples ({cost}) {where}, "
                f"more than {n['max_samples']} = {limit}; {proceed}or raise {n['max_samples']} (up to 2**32 - 1) if you "
                f"mean it")
    if max_events is not None and est["events"] > max_events:
        memory = (n["summary_keeps"] if record == "summary"
                  else f"{n['samples']} keeps {_fmt_bytes(est['bytes'])} of rows")
        kv = (f"; {_fmt_count(est['kv_preemption_events'])} of them the work of its first KV preemptions, each "
              f"summing the KV of every request still running on its instance: fewer "
              f"{n.get('slots_per_instance', 'slots_per_instance')} or more "
              f"{n.get('kv_cache_tokens', 'kv_cache_tokens')} make them fewer"
              if est["kv_preemption_events"] > 0 else "")
        return (f"{n['max_events']}: this scenario would process {_fmt_count(est['events'])} events "
                f"({_fmt_count(est['samples'])} samples{kv}) {where}, {duration_words(est['events'])} at ~15 M events/s, "
                f"more than {n['max_events']} = {max_events} (a run-time guard; {memory}); shorten {n['horizon_s']}, "
                f"or raise {n['max_events']} ({n['no_limit']}) if you mean it")
    return None


def check_runaway(sc: Scenario, max_samples: int | None, record: Literal["samples", "summary"],
                  max_events: int | None = None, names: dict[str, str] | None = None) -> None:
    """Raises :class:`~rollsim.errors.RunLimitError` (naming ``max_samples`` or ``max_events``, with
    the estimate and how to proceed) for a runaway scenario; see :func:`runaway_error`. Raises
    :class:`~rollsim.errors.ScenarioError` naming ``agentic.failure_rate`` for a batch-pipeline
    agentic scenario that cannot deliver one training step (:func:`failure_drop_error`)."""
    drop = failure_drop_error(sc)
    if drop is not None:
        from rollsim.errors import ScenarioError

        raise ScenarioError(drop)
    msg = runaway_error(sc, max_samples, record, max_events, names)
    if msg is not None:
        from rollsim.errors import RunLimitError

        raise RunLimitError(msg)

_STATUS = pl.Enum(["trained", "dropped", "ready", "in_flight"])
_NONE = 2**32 - 1  # "no value" in the engine's u32 columns


@dataclass(frozen=True)
class Result:
    """The outcome of one run.

    Attributes
    ----------
    scenario : Scenario
    summary : dict[str, float | int | bool]
        ``steps`` (completed training steps), ``steps_started``, ``end_s`` (simulated seconds
        covered), ``rollout_utilization`` (slot-busy seconds / (slots x end_s), busy time clipped to
        the end), ``slot_busy_s``, ``slot_idle_s``, ``trainer_busy_s``, ``trainer_idle_s``,
        ``samples_started`` = ``samples_trained + samples_dropped + samples_ready +
        samples_in_flight``, ``samples_finished``, ``drop_fraction`` (dropped / (trained + dropped)),
        ``staleness_mean`` / ``staleness_max`` (over trained samples), ``staleness_mean_short``
        (< 1000 tokens) / ``staleness_mean_long`` (> 8000 tokens) (NaN when no such sample;
        likewise ``staleness_mean``, ``staleness_at_finish_mean`` and ``staleness_group_mean`` are
        NaN, never None, when no sample was trained: every other float is finite),
        ``tokens_generated`` = ``tokens_trained + tokens_wasted + tokens_pending`` (wasted: dropped;
        pending: waiting in the ready queue or decoded so far by samples in flight), ``events``,
        ``ready_queue_growth_per_step``, ``generation_outruns_training``, ``throughput_ratio``. With
        ``Scenario.agentic`` also: ``turns`` (turns decoded to their end), ``tool_calls``,
        ``tool_retries``, ``trajectories_truncated``, ``trajectories_failed``, ``tokens_observed``,
        ``tokens_prefilled_turns`` (prefill of later turns), ``env_busy_s`` (environment-seconds
        busy within the run), ``env_wait_s`` (seconds calls queued for an environment),
        ``env_utilization`` (``env_busy_s / (env_slots * end_s)``, NaN when unbounded),
        ``env_mean_busy`` (mean calls running), and slot-seconds until ``end_s``: ``gpu_hold_s``
        (held idle during calls), ``gpu_prefill_s`` (prefill tokens / ``prefill_tokens_per_s``,
        less the prefill still ahead at ``end_s``), ``gpu_decode_s`` (the rest of ``slot_busy_s``,
        KV waiting excluded), ``kv_evictions`` (cached KV of requests in tool calls evicted,
        ``kv_policy="keep"`` with ``kv_cache_tokens``); every column: ``docs/results.md``.
    samples : polars.DataFrame
        One row per sample started (``record="samples"`` only): ``sample_id`` u32,
        ``length_tokens`` f64, ``start_s`` f64, ``finish_s`` f64 (null while in flight at the end),
        ``version_start`` u32, ``trained_step`` i64 (null if not trained), ``staleness`` i64
        (``trained_step - version_start``, null if not trained), ``dropped`` bool, ``slot`` u32,
        ``status`` enum (trained / dropped / ready / in_flight). With ``Scenario.agentic``,
        ``length_tokens`` counts the tokens generated over every turn (the target of the current
        turn while in flight) and the rows also have ``turns`` u32, ``tokens_observed`` f64,
        ``tool_s`` f64 (tool calls, queueing included), ``env_wait_s`` f64, ``prefill_tokens`` f64
        (of later turns), ``tool_retries`` u32, ``truncated`` bool, ``failed`` bool
        (``rollsim._rollsim.SCHEMA["agentic_samples"]``).
    steps : polars.DataFrame
        One row per training step started: ``step`` u32 (= the policy version it trains), ``start_s``,
        ``end_s``, ``staleness_mean`` f64, ``staleness_max`` u32, ``wait_s`` (trainer idle before the
        step), ``samples`` u32, ``tokens`` f64, ``ready_after`` u32 (samples left in the ready queue),
        ``completed`` bool (ended by ``summary["end_s"]``).
    """

    scenario: Scenario
    summary: dict[str, Any]
    steps: pl.DataFrame
    _samples: pl.DataFrame | None
    _segments: pl.DataFrame | None = None
    _turns: pl.DataFrame | None = None

    @property
    def turns(self) -> pl.DataFrame:
        """Multi-turn agentic runs: one row per turn decoded to its end, in the order turns end:
        ``sample_id`` u32, ``turn`` u32 (0 first), ``slot`` u32, ``start_s`` f64 (placed on the
        slot: prefill, then decoding), ``end_s`` f64, ``version`` u32 (of its last token span),
        ``call_end_s`` f64 (when the tool call after it returns; null when the trajectory ended
        with it); the columns of ``rollsim._rollsim.SCHEMA["turns"]``. A slot holds the trajectory
        during the call only with ``kv_policy="hold"``."""
        if self._turns is None:
            raise invalid("record", "turns are recorded for agentic scenarios with record='samples'")
        return self._turns

    @property
    def samples(self) -> pl.DataFrame:
        if self._samples is None:
            raise invalid("record", "per-sample rows were not recorded; run simulate(..., record='samples')")
        return self._samples

    @property
    def segments(self) -> pl.DataFrame:
        """One row per token span of one policy version within one answer: ``sample_id`` u32,
        ``version`` u32, ``first_token`` f64, ``last_token`` f64 (exclusive; token positions are
        continuous since lognormal lengths are). Spans of an answer tile ``[0, tokens decoded)``;
        an answer whose weights changed mid-generation (``keep_*``, ``abort_resubmit``, partial
        rollout) has several."""
        if self._segments is None:
            raise invalid("record", "segments were not recorded; run simulate(..., record='samples')")
        return self._segments

    def staleness_by_length(self, edges: Sequence[float] = (1000, 2000, 4000, 8000, 16000)) -> pl.DataFrame:
        """Staleness and drop rate per answer-length bin.

        Returns a frame with ``bin`` (str, e.g. ``"[1000, 2000)"``), ``samples`` (finished and
        consumed: trained or dropped), ``trained``, ``dropped``, ``drop_rate``, ``staleness_mean``,
        ``staleness_max``, sorted by length."""
        e = _check.length_edges(edges)
        labels = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
        df = self.samples.filter(pl.col("status").is_in(["trained", "dropped"]))
        # bin index by left-closed intervals [e_i, e_{i+1}); version-independent (no pl.cut)
        idx = np.searchsorted(np.asarray(e), df["length_tokens"].to_numpy(), side="right")
        return (
            df.with_columns(pl.Series("bin_index", idx, dtype=pl.UInt32))
            .group_by("bin_index")
            .agg(
                pl.len().alias("samples"),
                (pl.col("status") == "trained").sum().alias("trained"),
                pl.col("dropped").sum().alias("dropped"),
                pl.col("staleness").mean().alias("staleness_mean"),
                pl.col("staleness").max().alias("staleness_max"),
            )
            .with_columns((pl.col("dropped") / pl.col("samples")).alias("drop_rate"))
            .sort("bin_index")
            .with_columns(pl.col("bin_index").map_elements(lambda i: labels[i], return_dtype=pl.String).alias("bin"))
            .select("bin", "samples", "trained", "dropped", "drop_rate", "staleness_mean", "staleness_max")
        )


    def learning(self, model: Any = None, **rules: Any) -> Any:
        """Clip, truncation and mask fractions and effective sample sizes of this run's batches under a
        per-token drift model of the importance log-ratio: :func:`rollsim.learning.learning` (see it
        for the parameters and the returned frames; the statistics are a model, the staleness is
        simulated)."""
        from rollsim.learning import learning

        return learning(self, model, **rules)


def _samples_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    n = cols["length_tokens"].shape[0]
    df = pl.DataFrame(
        {
            "sample_id": np.arange(n, dtype=np.uint32),
            "length_tokens": cols["length_tokens"],
            "start_s": cols["start_s"],
            "finish_s": cols["finish_s"],
            "version_start": cols["version_start"],
            "version_end": cols["version_end"],
            "version_finish": cols["version_finish"],
            "n_versions": cols["n_versions"],
            "group_id": cols["group_id"],
            "trained_step": cols["trained_step"],
            "dropped": cols["dropped"],
            "aborted": cols["aborted"],
            "slot": cols["slot"],
        }
    )
    trained = pl.col("trained_step") >= 0
    status = lambda name: pl.lit(name, dtype=_STATUS)  # noqa: E731  (the enum directly, no strings)
    # one new column at a time (the temporaries of one expression alive at once, not of all): peak
    # memory about 110 bytes per sample with the engine's columns, against 158 all at once
    df = df.with_columns(
        pl.when(trained).then(status("trained"))
        .when(pl.col("dropped")).then(status("dropped"))
        .when(pl.col("finish_s").is_nan()).then(status("in_flight"))
        .otherwise(status("ready"))
        .alias("status"))
    df = df.with_columns(
        pl.when(trained).then(pl.col("trained_step") - pl.col("version_start").cast(pl.Int64)).alias("staleness"))
    df = df.with_columns(
        pl.when(trained).then(pl.col("trained_step") - pl.col("version_finish").cast(pl.Int64))
        .alias("staleness_at_finish"))
    df = df.with_columns(pl.col("finish_s").fill_nan(None))
    df = df.with_columns(pl.when(trained).then(pl.col("trained_step")).alias("trained_step"))
    df = df.with_columns(
        pl.when(pl.col("version_finish") != _NONE).then(pl.col("version_finish")).alias("version_finish"))
    return df.select("sample_id", "group_id", "length_tokens", "start_s", "finish_s", "version_start", "version_end",
                     "version_finish", "n_versions", "trained_step", "staleness", "staleness_at_finish", "dropped",
                     "aborted", "slot", "status")


def _steps_frame(cols: dict[str, np.ndarray], end_s: float) -> pl.DataFrame:
    n = cols["start_s"].shape[0]
    return pl.DataFrame(
        {
            "step": np.arange(n, dtype=np.uint32),
            "start_s": cols["start_s"],
            "end_s": cols["end_s"],
            "staleness_mean": cols["staleness_mean"],
            "staleness_max": cols["staleness_max"],
            "wait_s": cols["wait_s"],
            "samples": cols["samples"],
            "tokens": cols["tokens"],
            "ready_after": cols["ready_after"],
            "tokens_wasted": cols["tokens_wasted"],
            "tokens_recomputed": cols["tokens_recomputed"],
            "slot_idle_s": cols["slot_idle_s"],
            "completed": cols["end_s"] <= end_s,
            # with Scenario.train: the per-rank columns (_rollsim.SCHEMA["rank_steps"])
            **{c["name"]: cols[c["name"]] for c in _rollsim.SCHEMA["rank_steps"] if c["name"] in cols},
        }
    )


def _segments_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    return pl.DataFrame({k: cols[k] for k in ("sample_id", "version", "first_token", "last_token")})


def _warn_outrun(sc: Scenario, summary: dict[str, Any]) -> None:
    if summary["generation_outruns_training"]:
        warnings.warn(
            GenerationOutrunsTrainingWarning(
                f"generation outruns training: the ready queue grows by "
                f"{summary['ready_queue_growth_per_step']:.0f} samples per step (rollout/training throughput "
                f"ratio {summary['throughput_ratio']:.2f}); staleness grows without bound. Add a staleness cap, "
                f"fewer rollout_slots, or a larger batch_size."
            ),
            stacklevel=4,
        )


def no_training_step_message(sc: Scenario, summary: dict[str, Any]) -> str:
    """The message of :class:`~rollsim.NoTrainingStepWarning` for a run with ``summary["steps"] == 0``:
    why no step completed (no batch filled, or the first step outlasted the horizon), with the samples
    started and finished against ``batch_size``."""
    counts = (f"{summary['samples_started']} samples started, {summary['samples_finished']} finished, against "
              f"batch_size = {sc.batch_size}")
    if summary["steps_started"] == 0:
        if sc.group_size > 1 and summary["samples_finished"] >= sc.batch_size:
            # enough answers, but spread over too many groups: a batch takes whole groups only
            from rollsim._text import count

            bound = ("agentic.max_trajectories, " if sc.agentic is not None else "")
            return (f"no training step: no batch filled within horizon_s = {sc.horizon_s:g} s ({counts}): a batch "
                    f"takes {count(sc.batch_size // sc.group_size, 'whole group')} of group_size = {sc.group_size}, and the "
                    f"answers finished belong to more groups than finished whole (the {sc.rollout_slots} slots keep "
                    f"about {sc.rollout_slots // sc.group_size} groups in flight); staleness and tokens trained are "
                    f"empty. Lengthen horizon_s, or bound the groups in flight: fewer rollout_slots, "
                    f"{bound}pipeline.max_lag_samples or pipeline.admission_eta.")
        return (f"no training step: no batch filled within horizon_s = {sc.horizon_s:g} s ({counts}); staleness and "
                f"tokens trained are empty. Lengthen horizon_s, lower batch_size, or add rollout_slots.")
    return (f"no training step completed within horizon_s = {sc.horizon_s:g} s: the first step started but did not "
            f"end ({counts}); staleness and tokens trained are empty. Lengthen horizon_s.")


def staleness_cap_livelock(sc: Scenario, *, cap: str = "pipeline.max_staleness", cadence: str = "sync_every",
                           general: bool = False) -> str | None:
    """Why ``sc`` cannot train past its first steps, or None: a ``FullyAsync`` staleness cap below
    what the sync cadence itself gives.

    Staleness counts policy versions (training steps), against the version the rollout had. With
    ``sync_every = N`` the rollout loads new weights only after steps N, 2N, ...: the k-th step
    after a load (k = 1 .. N; the start counts as the load of version 0) trains at version
    ``load + k - 1``, and every sample it can take was started (and finished) on the loaded version
    or an older one, so it is at least ``k - 1`` versions old. A cap ``c < N - 1`` admits nothing
    at step ``c + 2`` of a window: the run trains ``c + 1`` steps, then drops (or requeues) every
    finished sample, the next weights (after step N) never come, and no horizon fixes it; the
    smallest cap that trains is ``N - 1``. Either ``staleness_check`` gives the same bound.
    Checked by ``tests/test_cli_fixes4.py`` against the engine for N = 2, 4, 8.

    Parameters
    ----------
    sc : Scenario
    cap, cadence : str
        How the message names the cap and the cadence (the scenario's fields by default; the
        command line passes its flags).
    general : bool
        The message for any cap below the floor (without this scenario's cap and step count).

    Returns
    -------
    str or None
        The reason, naming the cap, the cadence and the smallest cap that trains; None when the
        scenario can train.
    """
    p, n = sc.pipeline, sc.sync_every
    if not isinstance(p, FullyAsync) or p.max_staleness is None or p.max_staleness >= n - 1:
        return None
    return livelock_reason(n, None if general else p.max_staleness, cap=cap, cadence=cadence)


def livelock_reason(n: int, c: int | None, *, cap: str = "pipeline.max_staleness", cadence: str = "sync_every") -> str:
    """The reason of :func:`staleness_cap_livelock` for a cap ``c`` (None: any cap below the floor)
    under ``sync_every = n``."""
    why = (f"staleness counts policy versions (training steps) and the rollout loads new weights only every {n} "
           f"steps ({cadence} = {n}), so the k-th step after a load can train only samples at least k - 1 versions old")
    if c is None:
        return (f"{cap} below {cadence} - 1 = {n - 1} cannot train: {why}; such a cap trains cap + 1 steps, then every "
                f"finished sample is over it and dropped, the next weights never reach the rollout and training stops "
                f"for good (a livelock, whatever the horizon or the steps simulated). The smallest {cap} that trains "
                f"is {n - 1}")
    return (f"{cap} = {c} is below {cadence} - 1 = {n - 1}: {why}; after {c + 1} step{'s' if c else ''} every finished "
            f"sample is over the cap and dropped, the next weights never reach the rollout and training stops for good "
            f"(a livelock, whatever the horizon). The smallest {cap} that trains is {n - 1} (or {cadence} <= {c + 1})")


def livelock_message(sc: Scenario, summary: dict[str, Any], *, cap: str = "pipeline.max_staleness",
                     cadence: str = "sync_every") -> str | None:
    """The message of :class:`~rollsim.StalenessCapLivelockWarning` for a run of ``sc`` (None when its
    cap can train): :func:`staleness_cap_livelock`, then the steps the run trained and the fraction it
    dropped."""
    why = staleness_cap_livelock(sc, cap=cap, cadence=cadence)
    if why is None:
        return None
    steps = summary["steps"]
    return (f"{why}; this run trained {steps} step{'s' if steps != 1 else ''} in {summary['end_s']:.0f} s and dropped "
            f"{summary['drop_fraction']:.1%} of its finished samples")


def simulate(
    scenario: Scenario | None = None,
    *,
    record: Literal["samples", "summary"] = "samples",
    max_samples: int | None = None,
    max_events: int | None = DEFAULT_MAX_EVENTS,
) -> Result:
    """Runs one scenario.

    Parameters
    ----------
    scenario : Scenario, optional
        Defaults to ``Scenario()`` (the chapter's fully asynchronous scenario).
    record : "samples" | "summary"
        ``"summary"`` skips the per-sample rows (faster, constant memory; for sweeps).
    max_samples : int, optional
        Refuse runs that would start more samples than this, in [1, 2**32 - 1]. Default: with
        ``record="samples"`` :data:`DEFAULT_MAX_SAMPLES` (the memory guard: about 185 bytes per
        sample); with ``record="summary"``, whose memory is constant, the engine's own limit of
        2**32 - 1. Checked twice: before running, against :func:`estimate_size` (a runaway scenario
        is refused at once with its estimated samples and memory), and exactly by the engine while
        running. Raise it to run a large scenario on purpose.
    max_events : int or None
        The run-time guard: refuse runs estimated (:func:`estimate_size`) to process more events
        than this (default :data:`DEFAULT_MAX_EVENTS`, about a minute at ~15 M events/s); the message
        says how long the run would take. ``None``: no limit. An estimate only (not enforced while
        running).

    Returns
    -------
    Result
        ``summary`` dict, ``steps`` frame and (``record="samples"``) ``samples`` frame.

    Raises
    ------
    ScenarioError (ValueError)
        Invalid scenario or options.
    RunLimitError (RuntimeError)
        More than ``max_samples`` samples (estimated before the run, or counted during it; the
        message starts with ``max_samples:``) or more than ``max_events`` events (estimated; the
        message starts with ``max_events:``). The message gives the estimate and how to proceed.
    KeyboardInterrupt
        Ctrl-C during the run (the run releases the GIL and checks for signals).

    Warns
    -----
    GenerationOutrunsTrainingWarning
        Fully asynchronous without a cap, and the ready queue grows step after step.
    RunStalledWarning
        Nothing could happen any more before ``horizon_s`` (``summary["stalled"]``).
    NoTrainingStepWarning
        The run completed no training step within ``horizon_s`` (``summary["steps"] == 0``, not
        stalled): no batch filled, or the first step did not end.
    StalenessCapLivelockWarning
        ``pipeline.max_staleness < sync_every - 1``: the run trains ``max_staleness + 1`` steps,
        then drops every sample (:func:`staleness_cap_livelock`).
    """
    return _simulate(scenario, record=record, max_samples=max_samples, max_events=max_events)


def _simulate(
    scenario: Scenario | None = None,
    *,
    record: Literal["samples", "summary"] = "samples",
    max_samples: int | None = None,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    general_engine: bool = False,
) -> Result:
    """:func:`simulate`, with ``general_engine=True`` running the general streaming engine even where
    the fully-asynchronous fast path applies (the tests cross-check the two)."""
    sc = Scenario() if scenario is None else scenario
    if not isinstance(sc, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(sc).__name__}")
    if record not in ("samples", "summary"):
        raise invalid("record", f"must be 'samples' or 'summary', got {record!r}")
    limit = None if max_samples is None else check_max_samples(max_samples)
    max_events = check_max_events(max_events)
    if not isinstance(general_engine, bool):
        raise invalid("general_engine", f"must be True or False, got {general_engine!r}")
    if limit is None:
        limit = DEFAULT_MAX_SAMPLES if record == "samples" else ENGINE_MAX_SAMPLES
    check_runaway(sc, limit, record, max_events)
    max_samples = limit
    out = _rollsim.simulate(sc.to_dict(), record == "samples", max_samples, general_engine)
    summary = out["summary"]
    _warn_outrun(sc, summary)
    if summary["stalled"]:
        warnings.warn(
            RunStalledWarning(
                f"the run stalled at t = {summary['end_s']:.1f} s before horizon_s = {sc.horizon_s:g} s: no slot can "
                f"start work and the trainer cannot form a batch (e.g. admission control or a length-balanced quota "
                f"that cannot fill)"
            ),
            stacklevel=3,
        )
    elif summary["steps"] == 0:
        warnings.warn(NoTrainingStepWarning(no_training_step_message(sc, summary)), stacklevel=3)
    livelock = livelock_message(sc, summary)
    if livelock is not None:
        warnings.warn(StalenessCapLivelockWarning(livelock), stacklevel=3)
    samples = None if out["samples"] is None else _samples_frame(out["samples"])
    segments = None if out["segments"] is None else _segments_frame(out["segments"])
    turns = None
    if "agentic" in out:  # multi-turn trajectories: their totals, their columns joined to the samples, turns
        summary.update(out["agentic"]["summary"])
        if samples is not None:
            samples = samples.with_columns(**{k: pl.Series(k, v) for k, v in out["agentic"]["columns"].items()})
            turns = pl.DataFrame(out["agentic"]["turns"]).with_columns(pl.col("call_end_s").fill_nan(None))
    return Result(sc, summary, _steps_frame(out["steps"], summary["end_s"]), samples, segments, turns)


#: The four rows of the chapter's comparison.
CHAPTER_PIPELINES = (
    ("synchronous", Synchronous()),
    ("one-step async", OneStepAsync()),
    ("fully async", FullyAsync()),
    ("fully async, cap 2", FullyAsync(max_staleness=2)),
)


def simulate_labelled(label: str, scenario: Scenario, **kwargs: Any) -> Result:
    """:func:`simulate` for one row of a table of runs: the warnings it gives (e.g.
    :class:`~rollsim.GenerationOutrunsTrainingWarning`) are given again, same class, with the row's
    ``label`` in front (``"fully async: generation outruns training: ..."``), so that a table of
    several runs says which run warned. ``kwargs`` are :func:`simulate`'s."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = simulate(scenario, **kwargs)
    for w in caught:
        warnings.warn(w.category(f"{label}: {w.message}"), stacklevel=3)
    return res


def horizon_rates(res: Result) -> dict[str, float]:
    """A run's rates over its scenario's ``horizon_s``, the same time for every run compared
    (:func:`compare`'s rows, :func:`rollsim.resources.gpu_split`'s splits): ``steps_by_horizon`` (the
    steps ended by ``horizon_s``), ``steps_per_hour`` (those per hour of ``horizon_s``) and
    ``tokens_trained_per_s`` (the answer tokens of those steps over ``horizon_s``). A batch pipeline's
    run ends with its last step, after the horizon: over its own end time, a run that ends later
    would count a step the others could not finish."""
    horizon = res.scenario.horizon_s
    by = res.steps.filter(pl.col("completed") & (pl.col("end_s") <= horizon))
    return {"steps_by_horizon": by.height, "steps_per_hour": by.height * 3600.0 / horizon,
            "tokens_trained_per_s": float(by["tokens"].sum()) / horizon}


def compare(
    scenario: Scenario | None = None,
    pipelines: Iterable[tuple[str, Any]] = CHAPTER_PIPELINES,
    *,
    max_samples: int | None = None,
    max_events: int | None = DEFAULT_MAX_EVENTS,
) -> pl.DataFrame:
    """Runs ``scenario`` under each pipeline: the chapter's comparison table.

    Returns a frame, one row per pipeline: ``pipeline`` (str), ``steps``, ``rollout_utilization``,
    ``staleness_mean``, ``staleness_max``, ``drop_fraction``, ``staleness_mean_short`` (< 1K tokens),
    ``staleness_mean_long`` (> 8K tokens), ``samples_trained``, ``samples_dropped``,
    ``tokens_wasted``, ``end_s``, and the rates over the same time for every pipeline, the horizon
    (:func:`horizon_rates`): ``steps_by_horizon`` (steps ended by ``horizon_s``), ``steps_per_hour`` (those per hour of
    ``horizon_s``) and ``tokens_trained_per_s`` (the answer tokens of those steps over
    ``horizon_s``). ``steps`` counts every completed step, and a batch pipeline's run ends with its
    last step, after the horizon (``end_s``): compared as counts, a pipeline that ends later looks
    better. ``max_samples`` and ``max_events`` limit each run as in :func:`simulate` with
    ``record="summary"``."""
    sc = Scenario() if scenario is None else scenario
    if not isinstance(sc, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(sc).__name__}")
    try:
        pipelines = list(pipelines)
    except TypeError:
        raise invalid("pipelines", f"must be an iterable of (name, pipeline) pairs, got {pipelines!r}") from None
    for i, item in enumerate(pipelines):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise invalid("pipelines", f"item {i} must be a (name, pipeline) pair with a str name, got {item!r}")
    rows = []
    for name, pipeline in pipelines:
        res = simulate_labelled(name, sc.replace(pipeline=pipeline), record="summary", max_samples=max_samples,
                                max_events=max_events)
        s = res.summary
        rows.append({"pipeline": name} | {k: s[k] for k in (
            "steps", "rollout_utilization", "staleness_mean", "staleness_max", "drop_fraction",
            "staleness_mean_short", "staleness_mean_long", "samples_trained", "samples_dropped",
            "tokens_wasted", "end_s")} | horizon_rates(res))
    return pl.DataFrame(rows)
