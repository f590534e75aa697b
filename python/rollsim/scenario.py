"""The scenario: rollout pool, trainer, answer lengths, pipeline, seed."""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass, field
from typing import Any, Literal
from collections.abc import Sequence

import numpy as np

from rollsim import _check, _rollsim, _text, scenario_toml
from rollsim.agentic import Agentic
from rollsim.errors import invalid, strict_init
from rollsim.lengths import Empirical, LengthDrift, LogNormal
from rollsim.pipelines import FullyAsync, LengthBalanced, OffPolicy, OneStepAsync, Synchronous
from rollsim.train_ranks import TrainRanks
from rollsim.sync.pipeline import WeightSync

__all__ = ["Scenario", "MAX_COUNT", "TrainRanks"]

#: The engine's schema of a scenario (rust/rollsim-core/src/schema.rs): one dict per field with its
#: ``name``, ``kind``, ``unit``, ``default``, range (``lo``, ``hi``, ``range`` as messages print it,
#: ``extra`` special values), ``choices``, ``omit_at_default`` and one-line ``doc``. The field list,
#: the defaults, the ranges below, the command-line flags, the TOML keys and docs/scenario.md derive
#: from it.
SCHEMA_FIELDS: dict[str, dict[str, Any]] = {f["name"]: f for f in _rollsim.SCHEMA["scenario"]}

#: Largest accepted ``rollout_slots`` and ``batch_size``.
MAX_COUNT: int = SCHEMA_FIELDS["rollout_slots"]["hi"]

_PIPELINES = (Synchronous, OneStepAsync, OffPolicy, FullyAsync)


#: Accepted range and unit of every real-valued field, from the engine's schema (which checks the
#: same ranges with the same messages): wide enough for any real system, narrow enough that every
#: summary value of any accepted combination stays finite (see the Scenario docstring).
_BOUNDS: dict[str, tuple[float, float, str]] = {
    f["name"]: (f["lo"], f["hi"], f["unit"]) for f in SCHEMA_FIELDS.values() if f["kind"] in ("float", "table")
}


#: Fields of :class:`Scenario` that exist only in Python (tests/test_schema.py checks the list):
#: ``weight_sync``, the cluster the engine's ``weight_sync_s`` and ``rollout_pause_s`` are derived from.
PYTHON_ONLY: tuple[str, ...] = ("weight_sync",)

#: The fields a ``weight_sync`` cluster derives.
_SYNC_FIELDS = ("weight_sync_s", "rollout_pause_s")


def _default(name: str) -> Any:
    """The schema's default of a field (the dataclass's defaults are these)."""
    return SCHEMA_FIELDS[name]["default"]


def _int_range(name: str) -> tuple[int, int]:
    """The schema's range of an integer field."""
    f = SCHEMA_FIELDS[name]
    return f["lo"], f["hi"]


def _field(name: str, value: Any, **kw: Any) -> float:
    """A real field checked against its schema range (and the schema's special values' words)."""
    lo, hi, unit = _BOUNDS[name]
    return _check.bounded(name, value, lo, hi, unit, extra=SCHEMA_FIELDS[name]["extra"], **kw)


def _sum_at_most(name: str, first: str, what: str, a: float, b: float) -> None:
    """The engine takes ``first + name`` as one field, with ``first``'s range: refuse a sum above it."""
    hi, unit = _BOUNDS[first][1], _BOUNDS[first][2]
    if a + b > hi:
        raise invalid(name, f"{first} + {name} ({what}) must be at most {_check.fmt_bound(hi)} {unit}, got "
                            f"{a!r} + {b!r} = {a + b!r}")


_TABLE = "decode_throughput_table"


def _throughput_table(value: Any) -> tuple[tuple[int, float], ...] | None:
    """``None`` or a tuple of ``(batch size, tokens/s)`` pairs: batch sizes integers in
    [1, 2**24], strictly increasing from 1; throughputs in [1e-6, 1e15] tokens/s."""
    if value is None:
        return None
    what = "must be a sequence of (running sequences, instance tokens/s) pairs"
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (Sequence, np.ndarray)):
        raise invalid(_TABLE, f"{what}, got {type(value).__name__} {value!r}")
    if isinstance(value, np.ndarray) and value.ndim != 2:
        raise invalid(_TABLE, f"{what}, got an array of shape {value.shape}")
    if len(value) == 0:
        raise invalid(_TABLE, f"{what}, got an empty sequence (None: no table)")
    out: list[tuple[int, float]] = []
    for i, pair in enumerate(value):
        if isinstance(pair, (str, bytes, dict)) or not isinstance(pair, (Sequence, np.ndarray)) or len(pair) != 2:
            raise invalid(_TABLE, f"{what}; item {i} is {pair!r}")
        n, tp = pair[0], pair[1]
        if isinstance(n, (float, np.floating)) and not isinstance(n, bool) and float(n).is_integer():
            n = int(n)  # numpy tables are float arrays
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= MAX_COUNT:
            raise invalid(_TABLE, f"batch sizes must be integers in [1, {MAX_COUNT}]; item {i} has {_check.show(n)}")
        if isinstance(tp, bool) or not isinstance(tp, (int, float, np.integer, np.floating)):
            raise invalid(_TABLE, f"throughputs must be numbers of tokens/s; item {i} has {tp!r}")
        lo, hi, _ = _BOUNDS[_TABLE]
        if not lo <= (int(tp) if isinstance(tp, (int, np.integer)) else float(tp)) <= hi:
            raise invalid(_TABLE, f"throughputs must be in [{_check.fmt_bound(lo)}, {_check.fmt_bound(hi)}] tokens/s; "
                                  f"item {i} has {_check.show(tp)}")
        out.append((int(n), float(tp)))
    if out[0][0] != 1:
        raise invalid(_TABLE, f"must start at batch size 1, got {out[0][0]}")
    for i in range(1, len(out)):
        if out[i][0] <= out[i - 1][0]:
            raise invalid(_TABLE, f"batch sizes must be strictly increasing; item {i} has {out[i][0]} after "
                                  f"{out[i - 1][0]}")
    return tuple(out)


#: Options the engine takes with these defaults when absent (the schema's ``omit_at_default``
#: fields). ``to_dict`` leaves them out at their defaults, so that the dict (and the sweep keys hashed
#: from it) of a scenario that does not use an option stays the same as options are added.
_ENGINE_DEFAULTS: dict[str, Any] = {
    f["name"]: f["default"] for f in SCHEMA_FIELDS.values() if f["omit_at_default"]
}
_PART_DEFAULTS: dict[str, dict[str, Any]] = {
    "lengths": {"group_correlation": 0.0, "group_offsets": None},
    "pipeline": {"over_sampling": None, "keep_partial": False, "on_stale": "drop", "admission_eta": None,
                 "max_lag_samples": None, "max_ready_groups": None, "batch_order": "fifo", "on_update": "continue"},
}


def _drop_defaults(d: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in d.items() if not (k in _ENGINE_DEFAULTS and _same(v, _ENGINE_DEFAULTS[k]))}
    for part, defaults in _PART_DEFAULTS.items():
        out[part] = {k: v for k, v in d[part].items() if not (k in defaults and _same(v, defaults[k]))}
    return out


def _same(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b)


@dataclass(frozen=True)
class Scenario:
    """One simulated RL post-training run.

    ``Scenario()`` is the chapter's scenario (fully asynchronous, no cap): 256 slots decoding
    30 tokens/s each, 512 samples per step, 60 s per training step, 2 simulated hours, lengths
    ``min(lognormal(7.6, 1.0), 16384)`` tokens. Immutable, comparable, hashable, picklable; use
    :meth:`replace` to derive variants (sweeps).

    Parameters
    ----------
    rollout_slots : int
        Concurrent sequences in the rollout pool, in [1, 2**24].
    decode_tokens_per_s : float, in [1e-6, 1e9]
        Decode speed of one sequence, tokens per second.
    batch_size : int
        Samples per training step, in [1, 2**24].
    train_step_s : float, in [0, 1e12]
        Fixed seconds per training step (the trainer's compute); ``train_step_s + weight_sync_s``
        must be at most 1e12 s too.
    train_s_per_token : float, in [0, 1e3]
        Seconds per token of the batch, added to every step: the part of training that scales
        with the tokens trained (forward, backward, optimizer). A step over a batch of ``n`` tokens
        lasts ``train_step_s + (train_s_per_token + logprob_s_per_token) * n`` (``+ weight_sync_s``).
    logprob_s_per_token : float, in [0, 1e3]
        Seconds per token of the batch of an optional log-prob recompute phase before the
        update: the trainer recomputes the behaviour policy's log-probs (verl's ``old_log_prob``
        phase; ``async_training.recompute_old_log_prob``); 0 (default) when the rollout's own
        log-probs are used (verl fully_async ``use_rollout_log_probs``). Added to the step like
        ``train_s_per_token``, and reported apart by ``rollsim.plot.step_breakdown_frame``;
        ``train_s_per_token + logprob_s_per_token`` must be at most 1e3 s/token too.
    weight_sync_s : float, in [0, 1e12]
        Seconds per weight update after each step; the new policy version is available
        ``train_step_s + weight_sync_s`` after the step starts. Take it from
        ``rollsim.sync.estimate(...).total_s``.
    rollout_pause_s : float, in [0, 1e12]
        Seconds the rollout pool stops at every weight update it loads (vLLM / SGLang
        ``pause_generation``, load the weights, resume; verl's ``sleep()`` / ``resume()`` around a
        parameter sync): requests in flight continue that much later, with the rest of any prefill,
        and requests started during the pause begin at its end (with ``slots_per_instance``, every
        instance's token clock stands still, whatever its requests were doing). Paused requests keep their slots
        (they count as busy in ``rollout_utilization``). Applies in every ``on_update`` mode and
        pipeline; in the synchronous pipeline it delays the next batch's generation.
    group_size : int, in [1, 2**24]
        Answers per prompt (GRPO group, ``rollout.n``). Batches are made of whole groups:
        ``batch_size`` counts samples and must be a multiple of ``group_size``.
    prompt_tokens : float, in [0, 1e9]
        Prompt length, tokens (prefilled before the first answer token).
    prefill_tokens_per_s : float, in [1e-6, 1e12] or math.inf
        Prefill throughput of one slot, tokens/s (with ``prefill_mode="shared"``: of one instance,
        shared by its requests); ``math.inf`` (default) makes prefill free.
    prefix_sharing : bool
        The answers of a group share the prompt's KV (prefix cache): only the first pays the
        prompt prefill (until the cache is cleared).
    clear_cache_on_update : bool
        The prefix cache is cleared on every weight update: answers started after an update pay the
        prompt prefill again (counted in ``tokens_recomputed``).
    slots_per_instance : int, in [0, 2**24]
        Batched decoding: the pool is ``rollout_slots / slots_per_instance`` inference instances
        (must divide ``rollout_slots``); 0 (default) keeps every slot independent (the chapter).
    decode_slowdown_per_seq : float, in [0, 1e6]
        With ``slots_per_instance``: a sequence on an instance running ``n`` sequences decodes at
        ``decode_tokens_per_s / (1 + decode_slowdown_per_seq * (n - 1))`` tokens/s (a decode step
        costs a base latency plus a per-sequence cost, so ``decode_slowdown_per_seq`` = per-sequence
        cost / (base + per-sequence cost)); the last stragglers decode fast, alone.
    decode_throughput_table : sequence of (int, float) pairs, optional
        With ``slots_per_instance``: measured decode throughput of one instance, as
        ``(running sequences, tokens/s of the whole instance)`` points such as
        ``((1, 60.0), (8, 400.0), (64, 1600.0))``, linear in between. A sequence on an instance
        running ``n`` sequences decodes at ``throughput(n) / n`` tokens/s
        (:meth:`decode_speed`). Batch sizes: integers, strictly increasing, the first 1, the last
        ``>= slots_per_instance`` (points beyond are unused); throughputs in [1e-6, 1e15] tokens/s. Excludes
        ``decode_slowdown_per_seq > 0``. ``decode_tokens_per_s`` must then equal the table's speed
        at one sequence (``throughput(1)``): it is still the single-sequence speed that the
        analytic helpers (:mod:`rollsim.theory`, the runaway estimate) use, and rollsim does not
        silently override it. ``None`` (default): no table.
    kv_cache_tokens : float, in [1, 1e15], optional
        With ``slots_per_instance``: KV-cache capacity of one instance, tokens (vLLM's
        ``num_gpu_blocks * block_size``). ``None`` (default): unlimited. A running sequence
        holds KV for its prompt plus the tokens it has decoded (from its admission, counting the
        whole prompt + tokens done at once; the prompt KV a group could share is *not* modelled:
        every sequence holds its own prompt). When an instance's KV would exceed the capacity, its
        most recently admitted running sequence is preempted (vLLM preempts from the back of its
        running queue): its KV is freed and it waits, keeping its slot and its progress, at the
        front of that instance's waiting queue; when admitted again it pays a prefill of prompt +
        tokens done (``summary["tokens_recomputed"]``; ``summary["preemptions"]`` counts them), and
        its token span stays open unless the weights changed meanwhile. A request (new or
        preempted) is admitted, in queue order, only if its prompt + tokens done + 1 token fit;
        until then it occupies its slot without decoding: it counts as a busy slot (a submitted
        request) in ``rollout_utilization``, and ``summary["kv_wait_s"]`` gives the slot-seconds
        spent waiting. Requests are routed to the instance with the fewest occupied slots.
        Must be >= ``prompt_tokens`` + the longest possible answer (``LogNormal.max_tokens``, the
        largest ``Empirical`` value) + 1, so that any request fits alone (else the run could
        deadlock).
    horizon_s : float, in [1e-6, 1e12]
        Simulated time, seconds (see README "Horizon" for what counts at the end).
    lengths : LogNormal | Empirical
        Answer lengths in tokens.
    pipeline : Synchronous | OneStepAsync | OffPolicy | FullyAsync
    seed : int
        In [0, 2**64 - 1]. Same scenario and seed: identical results on any machine and thread count
        (bit-identical for the same OS and libm; see README "Determinism").
    rng : "fast" | "python"
        ``"fast"`` (Xoshiro256++ and a ziggurat normal) or ``"python"`` (CPython's
        ``random.Random(seed)`` bit for bit, drawing in the chapter's order: reproduces its table).
    agentic : Agentic, optional
        Multi-turn agentic trajectories (:class:`rollsim.agentic.Agentic`: turns, tool calls, an
        environment pool, what a request does with its slot and KV during a call); with it,
        ``lengths`` gives the tokens of one turn. ``None`` (default): one answer per sample.
    sync_every : int, in [1, 2**24]
        Sync cadence: the rollout loads new weights only after every ``sync_every``-th training
        step (verl ``trigger_parameter_sync_step``; Marin syncs every 2 updates); in between it keeps
        generating with the weights it has, and staleness counts that version (the one the rollout
        actually had). 1 (default): after every step. Every pipeline.
    train : TrainRanks, optional
        Per-rank training (:class:`TrainRanks`): every mini-batch of a step waits for the slowest
        data-parallel rank, whose load depends on which of the batch's sequences it got. ``None``
        (default): a step is ``train_step_s + train_s_per_token x tokens`` (with the weight sync and
        log-prob phase).
    staleness_check : "start" | "finish"
        Which version ``FullyAsync(max_staleness=...)`` is checked against: ``"start"`` (default) the
        version that started the group's oldest answer (AReaL's head offpolicyness), ``"finish"``
        the rollout's version when each answer was emitted (the check miles replaced in
        radixark/miles#2296: it lets groups started one version earlier through). Needs a
        ``FullyAsync`` pipeline with ``max_staleness``.
    prefill_mode : "per_slot" | "shared"
        Where prefill runs. ``"per_slot"`` (default): each request prefills on its slot at
        ``prefill_tokens_per_s``, whatever the other slots do. ``"shared"`` (needs
        ``slots_per_instance``): prefill is a shared, compute-bound resource of the instance, as in
        vLLM / SGLang chunked prefill: its requests' prompt tokens wait in one queue (first come,
        first served), prefilled at ``prefill_tokens_per_s`` *of the instance* in the steps it runs
        for its decoding sequences. With ``b`` sequences decoding and prompts waiting, a step
        carries their ``b`` tokens and a chunk of ``max_num_batched_tokens - b`` prompt tokens and
        lasts ``1 / decode_speed(b) + chunk / prefill_tokens_per_s`` seconds: the decoding
        sequences slow by the share of the step the chunk takes, and long prompts stall them. A
        request decodes once its whole prompt is prefilled (steps are fluid: a prompt's last chunk
        is not rounded up to a whole step). With ``kv_cache_tokens``, a request in the prefill queue
        holds the KV of its prompt + tokens done from its admission; preemption takes the most
        recently admitted *decoding* sequence.
    max_num_batched_tokens : int, in [2, 2**24]
        ``prefill_mode="shared"``: tokens per engine step (vLLM ``max_num_batched_tokens``; its
        default 8192 is vLLM's for an API server on an H100-class GPU, ``vllm/engine/arg_utils.py``),
        decode tokens first and prompt chunks in the rest; must be greater than
        ``slots_per_instance``. Refused with ``prefill_mode="per_slot"`` unless at its default.
    decode_s_per_context_token : float, in [0, 1]
        With ``slots_per_instance``: seconds an instance's decode step adds per token of context of
        its decoding sequences (prompt + tokens so far, summed over them: the KV cache a step
        reads), on top of the batch's ``1 / decode_speed(n)``; so long answers slow as they grow.
        0 (default): the speed depends on the batch only. The engine keeps the speed piecewise
        constant: it is re-evaluated at every change of the instance and whenever its clock has
        advanced by 1/32 of its mean context, at the midpoint of that interval (one answer of
        1,000 tokens after a 1,000-token prompt lands within 2e-4 of the integral). With
        ``prefill_mode="shared"``, prompt chunks add to the same step; with per-slot prefill, a
        request still in its prefill counts with its context less the prefill's clock tokens ahead.
    weight_sync : rollsim.sync.WeightSync, optional
        The weight sync as a cluster instead of numbers: a :class:`rollsim.sync.Cluster`, an
        estimate of one (:func:`rollsim.sync.estimate`, :func:`rollsim.sync.estimate_stack`), a
        :class:`rollsim.sync.WeightSync` (cluster, stack, and how much of the sync pauses the
        rollout) or its TOML table (``[weight_sync]``: the keys of a cluster file, ``stack`` and
        ``pause_s``). The sync per update is estimated from it and split into ``weight_sync_s``
        and ``rollout_pause_s``, which then hold the derived numbers (visible in the repr, used by
        the engine and every helper); the cluster stays on the scenario (repr, TOML, run keys).
        Giving a number too (``weight_sync_s`` or ``rollout_pause_s`` other than 0 or the derived
        value) is refused, naming both fields. :meth:`replace` with a new ``weight_sync`` (or
        ``weight_sync=None``) derives the two fields again (``None``: back to 0 unless given).
        ``None`` (default): the two numbers as given.
    length_drift : LengthDrift, optional
        Answer lengths that change during training (:class:`rollsim.lengths.LengthDrift`): each
        answer's tokens are scaled by a factor of the policy version its request starts under (the
        rollout's version, so ``sync_every`` counts), then cut at the drift's ``max_tokens``;
        optionally with length feedback. ``None`` (default): every answer from ``lengths`` as it is.
        Every pipeline. ``throughput_ratio`` still uses the undrifted mean.

    The ranges keep every summary value finite for any combination of accepted values (answer
    lengths within the bounds of :class:`LogNormal` / :class:`Empirical`): durations stay far below
    the float range (tokens / the slowest speed, about 1e-6 / (1 + 1e6 * 2**24) tokens/s per
    sequence; a step's ``tokens * seconds/token``), and so do token counts and products like
    ``horizon_s * decode_tokens_per_s * rollout_slots`` (below 2e28). Only the staleness means of
    the summary can be NaN, when they average nothing (see ``rollsim.Result.summary``). Numbers are
    checked as given: an int too large for a float (``10**400``) is out of range, not infinite.

    Raises
    ------
    ScenarioError (ValueError)
        Any field of the wrong type or out of range; the message starts with the field's name,
        states the range and the unit, e.g. ``decode_tokens_per_s: must be in [1e-6, 1e9]
        tokens/s, got 1e-320``.
    """

    rollout_slots: int = _default("rollout_slots")
    decode_tokens_per_s: float = _default("decode_tokens_per_s")
    batch_size: int = _default("batch_size")
    train_step_s: float = _default("train_step_s")
    horizon_s: float = _default("horizon_s")
    lengths: LogNormal | Empirical = field(default_factory=LogNormal)
    pipeline: Synchronous | OneStepAsync | OffPolicy | FullyAsync = field(default_factory=FullyAsync)
    seed: int = _default("seed")
    rng: Literal["fast", "python"] = _default("rng")
    weight_sync_s: float = _default("weight_sync_s")
    train_s_per_token: float = _default("train_s_per_token")
    group_size: int = _default("group_size")
    prompt_tokens: float = _default("prompt_tokens")
    prefill_tokens_per_s: float = _default("prefill_tokens_per_s")
    prefix_sharing: bool = _default("prefix_sharing")
    clear_cache_on_update: bool = _default("clear_cache_on_update")
    slots_per_instance: int = _default("slots_per_instance")
    decode_slowdown_per_seq: float = _default("decode_slowdown_per_seq")
    rollout_pause_s: float = _default("rollout_pause_s")
    logprob_s_per_token: float = _default("logprob_s_per_token")
    decode_throughput_table: tuple[tuple[int, float], ...] | None = _default("decode_throughput_table")
    kv_cache_tokens: float | None = _default("kv_cache_tokens")
    agentic: Agentic | None = None
    sync_every: int = _default("sync_every")
    staleness_check: Literal["start", "finish"] = _default("staleness_check")
    prefill_mode: Literal["per_slot", "shared"] = _default("prefill_mode")
    max_num_batched_tokens: int = _default("max_num_batched_tokens")
    decode_s_per_context_token: float = _default("decode_s_per_context_token")
    train: TrainRanks | None = None
    length_drift: LengthDrift | None = None
    weight_sync: WeightSync | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "rollout_slots", _check.integer("rollout_slots", self.rollout_slots, *_int_range("rollout_slots")))
        set_(self, "batch_size", _check.integer("batch_size", self.batch_size, *_int_range("batch_size")))
        set_(self, "decode_tokens_per_s", _field("decode_tokens_per_s", self.decode_tokens_per_s))
        for name in ("train_step_s", "weight_sync_s", "rollout_pause_s", "train_s_per_token", "logprob_s_per_token",
                     "horizon_s"):
            set_(self, name, _field(name, getattr(self, name)))
        if self.weight_sync is not None:
            self._derive_sync()
        _sum_at_most("weight_sync_s", "train_step_s", "the fixed time of a step", self.train_step_s, self.weight_sync_s)
        _sum_at_most("logprob_s_per_token", "train_s_per_token", "a step's time per token", self.train_s_per_token,
                     self.logprob_s_per_token)
        if not isinstance(self.lengths, (LogNormal, Empirical)):
            raise invalid("lengths", f"must be LogNormal(...) or Empirical(...), got {type(self.lengths).__name__}")
        if not isinstance(self.pipeline, _PIPELINES):
            hint = ""
            if isinstance(self.pipeline, str):  # a command line's name: the one parser of them says what it is
                from rollsim.errors import ScenarioError
                from rollsim.pipelines import PIPELINE_NAMES, pipeline_from_name

                try:
                    hint = (f" (a name, not a pipeline: rollsim.pipelines.pipeline_from_name({self.pipeline!r}) "
                            f"gives {pipeline_from_name(self.pipeline)!r})")
                except ScenarioError:
                    known = [repr(k + ":K" if k == "k-step" else k) for k in PIPELINE_NAMES]
                    hint = (" (rollsim.pipelines.pipeline_from_name makes a pipeline of its name: "
                            f"{', '.join(known[:-1])} or {known[-1]})")
            raise invalid(
                "pipeline",
                f"must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got {self.pipeline!r}{hint}",
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= int(self.seed) < 2**64:
            raise invalid("seed", f"must be an integer in [0, 2**64 - 1], got {_check.show(self.seed)}")
        set_(self, "seed", int(self.seed))
        if self.rng not in ("fast", "python"):
            raise invalid("rng", f"must be 'fast' or 'python', got {self.rng!r}")
        g = _check.integer("group_size", self.group_size, *_int_range("group_size"))
        if self.batch_size % g:
            raise invalid("group_size", f"must divide batch_size ({self.batch_size}), got {g}")
        set_(self, "group_size", g)
        set_(self, "prompt_tokens", _field("prompt_tokens", self.prompt_tokens))
        set_(self, "prefill_tokens_per_s", _field("prefill_tokens_per_s", self.prefill_tokens_per_s,
                                                  allow=(math.inf,)))
        spi = _check.integer("slots_per_instance", self.slots_per_instance, *_int_range("slots_per_instance"))
        if spi and self.rollout_slots % spi:
            raise invalid("slots_per_instance", f"must divide rollout_slots ({self.rollout_slots}), got {spi}")
        set_(self, "slots_per_instance", spi)
        set_(self, "decode_slowdown_per_seq", _field("decode_slowdown_per_seq", self.decode_slowdown_per_seq))
        if self.decode_slowdown_per_seq > 0 and spi == 0:  # it would do nothing: independent slots never batch
            raise invalid("decode_slowdown_per_seq", "needs slots_per_instance > 0 (the batched instances it slows), got "
                                                     "slots_per_instance=0")
        if self.length_drift is not None and not isinstance(self.length_drift, LengthDrift):
            raise invalid("length_drift", f"must be None or LengthDrift(...), got {self.length_drift!r}")
        self._check_decode_table()
        self._check_kv_cache()
        for name in ("prefix_sharing", "clear_cache_on_update"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise invalid(name, f"must be True or False, got {getattr(self, name)!r}")
        if isinstance(self.pipeline, FullyAsync):
            self._check_deliverable(self.pipeline)
        set_(self, "sync_every", _check.integer("sync_every", self.sync_every, *_int_range("sync_every")))
        if self.staleness_check not in ("start", "finish"):
            raise invalid("staleness_check", f"must be 'start' or 'finish', got {self.staleness_check!r}")
        if self.staleness_check == "finish" and not (isinstance(self.pipeline, FullyAsync)
                                                     and self.pipeline.max_staleness is not None):
            raise invalid("staleness_check", "'finish' changes how max_staleness is checked: it needs "
                                             f"FullyAsync(max_staleness=...), got pipeline {self.pipeline!r}")
        self._check_prefill_mode()
        set_(self, "decode_s_per_context_token", _field("decode_s_per_context_token", self.decode_s_per_context_token))
        if self.decode_s_per_context_token > 0 and spi == 0:
            raise invalid("decode_s_per_context_token", "needs slots_per_instance > 0 (the instances whose steps it "
                                                        "lengthens), got slots_per_instance=0")
        if self.agentic is not None:
            if not isinstance(self.agentic, Agentic):
                raise invalid("agentic", f"must be None or Agentic(...), got {self.agentic!r}")
            self.agentic.check(self.prompt_tokens, self.kv_cache_tokens, self.pipeline, self.group_size)
        if self.train is not None:
            if not isinstance(self.train, TrainRanks):
                raise invalid("train", f"must be None or TrainRanks(...), got {self.train!r}")
            self.train.check(self.batch_size, self.prompt_tokens, _longest_answer(self.lengths))

    def _derive_sync(self) -> None:
        """``weight_sync_s`` and ``rollout_pause_s`` from ``weight_sync``; refuses other numbers."""
        ws = WeightSync.from_doc(self.weight_sync)
        object.__setattr__(self, "weight_sync", ws)
        derived = ws.fields()
        for name in _SYNC_FIELDS:
            given = getattr(self, name)
            if given != 0.0 and given != derived[name]:
                raise invalid(name, f"is derived from weight_sync ({ws.total_s!r} s per update: weight_sync_s = "
                                    f"{derived['weight_sync_s']!r}, rollout_pause_s = {derived['rollout_pause_s']!r}); "
                                    "give the sync as numbers (weight_sync_s, rollout_pause_s) or as weight_sync, not "
                                    f"both; got {name}={given!r}")
        for name in _SYNC_FIELDS:
            object.__setattr__(self, name, _field(name, derived[name]))

    def _check_decode_table(self) -> None:
        table = _throughput_table(self.decode_throughput_table)
        object.__setattr__(self, _TABLE, table)
        if table is None:
            return
        spi = self.slots_per_instance
        if spi == 0:
            raise invalid(_TABLE, "needs slots_per_instance > 0 (the instances it describes), got slots_per_instance=0")
        if table[-1][0] < spi:
            raise invalid(_TABLE, f"must reach slots_per_instance ({spi}): its last batch size is {table[-1][0]}")
        if self.decode_slowdown_per_seq > 0:
            raise invalid(_TABLE, f"excludes decode_slowdown_per_seq > 0 (one speed model), got "
                                  f"decode_slowdown_per_seq={self.decode_slowdown_per_seq}")
        if self.decode_tokens_per_s != table[0][1]:
            e = invalid("decode_tokens_per_s",
                        f"must equal decode_throughput_table's speed at one sequence ({table[0][1]} tokens/s) "
                        f"when the table is set, got {self.decode_tokens_per_s}")
            # (table's speed, decode_tokens_per_s): a TOML file or the command line without the speed
            # says to give it (scenario_toml.scenario_from_doc, cli._scenario)
            e.decode_mismatch = (table[0][1], self.decode_tokens_per_s)  # type: ignore[attr-defined]
            raise e

    def _check_prefill_mode(self) -> None:
        if self.prefill_mode not in ("per_slot", "shared"):
            raise invalid("prefill_mode", f"must be 'per_slot' or 'shared', got {self.prefill_mode!r}")
        budget = _check.integer("max_num_batched_tokens", self.max_num_batched_tokens,
                                *_int_range("max_num_batched_tokens"))
        object.__setattr__(self, "max_num_batched_tokens", budget)
        spi = self.slots_per_instance
        if self.prefill_mode == "per_slot":
            if budget != _default("max_num_batched_tokens"):
                raise invalid("max_num_batched_tokens", f"applies only with prefill_mode = 'shared' (the budget of a "
                                                        f"shared step), got {budget} with prefill_mode = 'per_slot'")
            return
        if spi == 0:
            raise invalid("prefill_mode", "'shared' shares an instance's steps between prefill and decoding: it needs "
                                          "slots_per_instance > 0, got slots_per_instance=0")
        if budget <= spi:
            raise invalid("max_num_batched_tokens", f"must be > slots_per_instance ({spi}) with prefill_mode = 'shared' "
                                                    "(a step holds every decoding sequence's token and at least one "
                                                    f"prompt token), got {budget}")

    def _check_kv_cache(self) -> None:
        kv = self.kv_cache_tokens
        if kv is None:
            return
        kv = _field("kv_cache_tokens", kv)
        object.__setattr__(self, "kv_cache_tokens", kv)
        if self.slots_per_instance == 0:
            raise invalid("kv_cache_tokens",
                          "needs slots_per_instance > 0 (the capacity is per instance), got slots_per_instance=0")
        longest = _longest_answer(self.lengths)
        if self.length_drift is not None:  # the cap of the drifted lengths
            longest = self.length_drift.to_dict(self.lengths)["max_tokens"]
        need = self.prompt_tokens + longest + 1
        if kv < need:
            raise invalid("kv_cache_tokens",
                          f"must be >= prompt_tokens + the longest possible answer + 1 = {self.prompt_tokens:g} + "
                          f"{longest:g} + 1 = {need:g} (a request must fit alone, or the run could deadlock), got {kv:g}")

    def decode_speed(self, n: int) -> float:
        """Decode speed of one sequence, tokens/s, on an instance running ``n`` sequences
        (``1 <= n <= slots_per_instance``): from ``decode_throughput_table`` (``throughput(n) / n``)
        or ``decode_slowdown_per_seq``; without instances, ``decode_tokens_per_s`` for any ``n``."""
        n = _check.integer("n", n, 1, max(self.slots_per_instance, 1))
        return _rollsim.decode_speed(self.to_dict(), n)  # the engine's model, the one implementation

    def _check_deliverable(self, p: FullyAsync) -> None:
        """Refuses streaming options under which the trainer could never form a batch (the run
        would only stall or drop everything)."""
        b, g = self.batch_size, self.group_size
        if p.max_lag_samples is not None and p.max_lag_samples < b:
            raise invalid("pipeline.max_lag_samples",
                          f"must be >= batch_size ({b}): with at most {p.max_lag_samples} samples started and not yet "
                          f"trained, no batch can ever form; got {p.max_lag_samples}")
        if p.max_ready_groups is not None and p.max_ready_groups * g < b:
            raise invalid("pipeline.max_ready_groups",
                          f"must be >= batch_size / group_size ({b // g}): a ready queue of {p.max_ready_groups} "
                          f"groups never holds a batch; got {p.max_ready_groups}")
        if isinstance(p.batch_order, LengthBalanced):
            q = p.batch_order.quotas
            if q is not None and sum(q) > b // g:
                raise invalid("pipeline.batch_order.quotas",
                              f"must sum to at most the groups per batch ({b // g}), got {sum(q)}")
            if q is not None:
                edges = (0.0, *p.batch_order.edges, math.inf)
                for i, quota in enumerate(q):
                    lo, hi = edges[i], edges[i + 1]
                    if quota > 0 and not _reachable(self.lengths, lo, hi):
                        raise invalid("pipeline.batch_order.quotas",
                                      f"bucket {i} ([{lo:g}, {hi:g}) tokens) can never fill: no answer length falls in "
                                      f"it, but its quota is {quota}; give it quota 0")

    def replace(self, /, **changes: Any) -> Scenario:
        """A copy with some fields changed. Dotted names reach into parts:
        ``sc.replace(seed=3, **{"pipeline.max_staleness": 2, "lengths.sigma": 1.2})``.

        Raises ScenarioError for unknown fields or invalid values."""
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        names = {f.name for f in dataclasses.fields(self)}
        for key, value in changes.items():
            head, _, rest = key.partition(".")
            if head not in names:   # as Scenario(rollout_slot=...) says it: the field a typo likely meant
                found = _text.closest(head, names, cutoff=0.8)
                hint = f"; did you mean {found + ('.' + rest if rest else '')}?" if found else \
                    part_field_hint(key, self)
                raise invalid(key, f"unknown scenario field{hint} (fields: {sorted(names)})")
            if rest:
                nested.setdefault(head, {})[rest] = value
            else:
                top[head] = value
        for head, sub in nested.items():
            part = top.get(head, getattr(self, head))
            if not dataclasses.is_dataclass(part) or isinstance(part, type):
                raise invalid(head, f"has no sub-fields to set ({sorted(sub)})")
            part_names = {f.name for f in dataclasses.fields(part) if f.init and not f.name.startswith("_")}
            for k in sub:
                if k not in part_names:
                    found = _text.closest(k, part_names, cutoff=0.8)  # a typo: the field it likely meant
                    hint = f"; did you mean {found}?" if found else ""
                    raise invalid(f"{head}.{k}", f"unknown field of {type(part).__name__}{hint} "
                                                 f"(fields: {sorted(part_names)})")
            top[head] = dataclasses.replace(part, **sub)
        if "weight_sync" in top or (self.weight_sync is not None and "weight_sync" in nested):
            for name in _SYNC_FIELDS:  # derived again from the new weight_sync (or back to 0 without one)
                top.setdefault(name, 0.0)
        return dataclasses.replace(self, **top)

    def length_quotas(self, edges: Sequence[float], share: float = 1.0) -> list[int]:
        """Minimum groups per batch from each length bucket (split at ``edges``, by a group's
        longest answer): ``share`` x the bucket's expected share of ``batch_size / group_size``
        groups, rounded down. Groups' longest answers are taken as independent draws (exact for
        ``group_correlation = 0`` and ungrouped data)."""
        given: Any = edges  # LengthBalanced validates edges (any sequence) and share
        lb = LengthBalanced(given, share=share)
        edges, share = lb.edges, lb.share
        n = self.group_size
        cdf = [self.lengths.cdf(e) ** n for e in edges]
        shares = np.diff(np.r_[0.0, cdf, 1.0])
        need = self.batch_size // n
        return [int(x) for x in np.floor(shares * need * share + 1e-9)]

    def to_dict(self) -> dict[str, Any]:
        """The flat form the engine takes (numpy arrays for empirical lengths): one key per field of
        the engine's schema (``weight_sync_s`` and ``logprob_s_per_token`` included: the engine adds
        them to the step), those whose schema says ``omit_at_default`` left out at their defaults."""
        pipeline = self.pipeline.to_dict()
        order = pipeline.get("batch_order")
        if isinstance(order, dict):
            if order["quotas"] is None:
                order["quotas"] = self.length_quotas(order["edges"], order["share"])
            del order["share"]
        d = {
            "rollout_slots": self.rollout_slots,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "batch_size": self.batch_size,
            "train_step_s": self.train_step_s,
            "weight_sync_s": self.weight_sync_s,
            "train_s_per_token": self.train_s_per_token,
            "logprob_s_per_token": self.logprob_s_per_token,
            "horizon_s": self.horizon_s,
            "lengths": self.lengths.to_dict(),
            "pipeline": pipeline,
            "seed": self.seed,
            "rng": self.rng,
            "group_size": self.group_size,
            "prompt_tokens": self.prompt_tokens,
            "prefill_tokens_per_s": self.prefill_tokens_per_s,
            "prefix_sharing": bool(self.prefix_sharing),
            "clear_cache_on_update": bool(self.clear_cache_on_update),
            "slots_per_instance": self.slots_per_instance,
            "decode_slowdown_per_seq": self.decode_slowdown_per_seq,
            "rollout_pause_s": self.rollout_pause_s,
            "decode_throughput_table": None if self.decode_throughput_table is None
            else [list(p) for p in self.decode_throughput_table],
            "kv_cache_tokens": self.kv_cache_tokens,
            "sync_every": self.sync_every,
            "staleness_check": self.staleness_check,
            "prefill_mode": self.prefill_mode,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "decode_s_per_context_token": self.decode_s_per_context_token,
        }
        if self.agentic is not None:
            d["agentic"] = self.agentic.to_dict()
        if self.train is not None:
            d["train"] = self.train.to_dict()
        if self.length_drift is not None:
            d["length_drift"] = self.length_drift.to_dict(self.lengths)
        return _drop_defaults(d)

    def describe(self) -> dict[str, Any]:
        """A JSON-friendly description (empirical lengths summarized by name, size and mean; an agentic
        tool latency in seconds, its cap ``max_s``)."""
        d = self.to_dict()
        d.setdefault("weight_sync_s", self.weight_sync_s)
        if self.weight_sync is not None:
            d.setdefault("rollout_pause_s", self.rollout_pause_s)
            d["weight_sync"] = {"total_s": self.weight_sync.total_s, **self.weight_sync.to_doc()}
        if isinstance(self.lengths, Empirical):
            d["lengths"] = {"kind": "empirical", "name": self.lengths.name, "values": int(self.lengths.values.size),
                            "mean_tokens": self.lengths.mean_tokens()}
        if self.agentic is not None:  # the tool latency in seconds (max_s, as a scenario file spells it)
            from rollsim.agentic import seconds_description

            d["agentic"]["tool_latency_s"] = seconds_description(self.agentic.tool_latency_s)
        return d

    def throughput_ratio(self) -> float:
        """Rollout throughput over training throughput, samples per second:
        ``(rollout_slots * v / mean_tokens) * step_s / batch_size`` with
        ``step_s = train_step_s + weight_sync_s + (train_s_per_token + logprob_s_per_token) * batch_size *
        mean_tokens`` and
        ``v`` the decode speed of one sequence with every slot busy: ``decode_tokens_per_s``, or
        with instances ``decode_speed(slots_per_instance)`` (full instances, the steady state of a
        fully asynchronous pool). Above 1, generation outruns training in a fully asynchronous
        pipeline without a cap. Computed by the engine (the summary's ``throughput_ratio``, digit for
        digit)."""
        return _rollsim.throughput_ratio(self.to_dict())

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> Scenario:
        """The scenario of a TOML file (format: :mod:`rollsim.scenario_toml`; any field, omitted
        ones at their defaults; a lengths ``file`` is taken relative to the TOML file).

        Raises
        ------
        FileNotFoundError
            No such file.
        ScenarioError (ValueError)
            Not a readable UTF-8 TOML file, an unknown key (the allowed ones are listed) or an
            invalid value."""
        return scenario_toml.load(path)

    @classmethod
    def from_toml_str(cls, text: str, root: str | os.PathLike[str] = ".") -> Scenario:
        """The scenario of TOML text (see :meth:`from_toml`); relative file paths from ``root``."""
        return scenario_toml.loads(text, root)

    def to_toml(self, path: str | os.PathLike[str] | None = None) -> str:
        """The scenario as TOML text, every field written (``None`` ones left out), written to
        ``path`` too if given; ``Scenario.from_toml_str(sc.to_toml()) == sc``. Empirical lengths
        read from a file or data set by :meth:`from_toml` or the command line are written as that
        reference, others inline (see :mod:`rollsim.scenario_toml`)."""
        text = scenario_toml.to_toml(self)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text


def _longest_answer(lengths: LogNormal | Empirical) -> float:
    """The longest answer that can be drawn, tokens (``max_tokens`` for lognormal lengths)."""
    if isinstance(lengths, Empirical):
        v = lengths.values if lengths.weights is None else lengths.values[lengths.weights > 0]
        return float(v.max())
    return lengths.max_tokens


def _reachable(lengths: LogNormal | Empirical, lo: float, hi: float) -> bool:
    """Whether an answer length in ``[lo, hi)`` tokens can be drawn (a group is bucketed by its
    longest answer, and any drawable length can be a group's longest)."""
    if isinstance(lengths, Empirical):
        v = lengths.values if lengths.weights is None else lengths.values[lengths.weights > 0]
        return bool(((v >= lo) & (v < hi)).any())
    top = lengths.max_tokens
    if lengths.sigma == 0:
        x = min(math.exp(lengths.mu), top)
        return lo <= x < hi
    return lo <= top and hi > 0  # lengths fill (0, max_tokens], max_tokens itself with positive probability


strict_init(Scenario, "", "Scenario")

scenario_toml.use_scenario_class(Scenario)  # the TOML layer builds Scenarios without importing this module


#: The classes each dotted part of a scenario may hold (a bare name of one of their fields is that part's).
_PART_CLASSES: dict[str, tuple[type, ...]] = {
    "pipeline": (Synchronous, OneStepAsync, OffPolicy, FullyAsync), "lengths": (LogNormal, Empirical),
    "train": (TrainRanks,), "agentic": (Agentic,), "length_drift": (LengthDrift,), "weight_sync": (WeightSync,),
}


def part_field_hint(key: str, base: Scenario | None = None) -> str:
    """``"; did you mean pipeline.max_staleness?"`` for a bare ``key`` that is no scenario field but a
    field of one of its parts (the base's part first, then every class the part may hold); ``""``
    otherwise."""
    if "." in key:
        return ""
    for part, classes in _PART_CLASSES.items():
        held = getattr(base, part, None) if base is not None else None
        for cls in ((type(held),) if dataclasses.is_dataclass(held) else ()) + classes:
            if dataclasses.is_dataclass(cls) and key in {f.name for f in dataclasses.fields(cls)}:
                return f"; did you mean {part}.{key}?"
    return ""
