"""How generation and training interleave (see README "The model" for the exact rules)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollsim import _check
from rollsim._text import closest
from rollsim.errors import ScenarioError, invalid, strict_init

__all__ = ["Synchronous", "OneStepAsync", "OffPolicy", "FullyAsync", "LengthBalanced", "Pipeline", "PIPELINE_NAMES",
           "pipeline_name", "pipeline_from_name"]

#: The pipelines' names on every command line (``--pipeline`` of ``run``, ``split``, ``whatif``)
#: and for :func:`pipeline_from_name`, each with the kind a scenario file spells it
#: (``[pipeline] kind``, :data:`rollsim.scenario_toml.PIPELINE_KINDS`), which is taken too.
PIPELINE_NAMES: dict[str, str] = {"sync": "synchronous", "one-step": "one_step", "k-step": "off_policy",
                                  "fully-async": "fully_async"}


def pipeline_name(word: str) -> str | None:
    """The command line's name of the pipeline ``word`` spells (``"fully_async"`` and
    ``"Fully-Async"`` are ``"fully-async"``): a key of :data:`PIPELINE_NAMES` or its kind, any
    case, hyphens and underscores alike; None for any other word (``"async"`` too: its nearest
    name in letters is ``sync``, its opposite, so it is no name, and :func:`pipeline_hint` names
    the one meant)."""
    w = str(word).strip().lower().replace("_", "-")
    return next((n for n, kind in PIPELINE_NAMES.items() if w in (n, kind.replace("_", "-"))), None)


def pipeline_hint(word: Any, names: tuple[str, ...] = ("sync", "one-step", "fully-async")) -> str:
    """``"; did you mean 'fully-async'?"`` for a word that is no pipeline name: ``async`` /
    ``asynchronous`` (fully-async, not sync), a near miss of one of ``names`` (``fully-asyn``), or
    ``k-step`` without its K; ``""`` otherwise."""
    if not isinstance(word, str):
        return ""
    w = word.strip().lower().replace("_", "-")
    if w.startswith(("k-step", "kstep", "off-policy")) and "k-step:K" in names:
        return "; did you mean 'k-step:K', with K the batches generation may run ahead (k-step:2)?"
    near = "fully-async" if w in ("async", "asynchronous") and "fully-async" in names else closest(w, names, 0.75)
    return f"; did you mean {near!r}?" if near else ""




def _compact_repr(obj: Any) -> str:
    """``Name(field=value, ...)`` with only the fields that differ from their defaults."""
    import dataclasses

    parts = []
    for f in dataclasses.fields(obj):
        if not f.repr:
            continue
        v = getattr(obj, f.name)
        if f.default is not dataclasses.MISSING and v == f.default:
            continue
        parts.append(f"{f.name}={v!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def _spec(cls: str, name: str) -> dict[str, Any]:
    """The engine's schema of a field of a pipeline part (rust/rollsim-core/src/schema.rs)."""
    return _check.part_field(cls, name)


def _choices_text(choices: list[str]) -> str:
    """``'drop' or 'requeue'``."""
    return ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"


_OVER_SAMPLING = _spec("OffPolicy", "over_sampling")
_K = _spec("OffPolicy", "k")
_FA = {n: _spec("FullyAsync", n) for n in ("max_staleness", "on_stale", "admission_eta", "max_lag_samples",
                                             "max_ready_groups", "batch_order", "on_update", "lag_release")}
_LB = {n: _spec("LengthBalanced", n) for n in ("edges", "quotas", "share")}

#: Largest finite ``over_sampling`` (a million batches of extra prompts per batch: far more than
#: any pool can start; ``math.inf`` keeps every slot busy).
MAX_OVER_SAMPLING: float = _OVER_SAMPLING["hi"]


def _over_sampling(value: Any) -> float | None:
    if value is None:
        return None
    return _check.part_bounded(_OVER_SAMPLING, value, allow=(math.inf,))


def is_synchronous(pipeline: Any) -> bool:
    """Whether ``pipeline`` generates each batch only after the previous one trained:
    :class:`Synchronous`, or ``OffPolicy(0)``."""
    return isinstance(pipeline, OffPolicy) and pipeline.k == 0


@dataclass(frozen=True)
class OffPolicy:
    """k-step off-policy batch pipeline: generation may run up to ``k`` batches ahead of training
    (ROLL ``async_generation_ratio=k``); each batch uses the newest weights available when its
    generation starts, so staleness is at most ``k`` (without partial rollout). ``OffPolicy(0)`` is
    :class:`Synchronous`, ``OffPolicy(1)`` is :class:`OneStepAsync`.

    Parameters
    ----------
    k : int
        In [0, 1_000_000].
    over_sampling : float in [0, 1e6], math.inf or None
        Submit ``ceil(groups * (1 + over_sampling))`` groups per batch and stop the rest once
        ``batch_size`` answers (whole groups) have finished (verl ``over_sample_rate``, slime
        ``--over-sampling-batch-size``). ``math.inf`` keeps every slot busy until the batch is full.
        ``None``: exactly one batch of prompts; the batch waits for its longest answer.
    keep_partial : bool
        Stopped answers are kept and resumed first in the next batch with the new weights, after a
        prefill of prompt + partial answer (slime ``--partial-rollout``, Kimi k1.5, APRIL); their
        staleness counts from the version that started them. Otherwise they are aborted (tokens
        wasted).

    Raises ScenarioError for a bad ``k``, ``over_sampling`` or ``keep_partial``.
    """

    k: int = _K["default"]
    over_sampling: float | None = _OVER_SAMPLING["default"]
    keep_partial: bool = _spec("OffPolicy", "keep_partial")["default"]

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _check.part_integer(_K, self.k))
        object.__setattr__(self, "over_sampling", _over_sampling(self.over_sampling))
        object.__setattr__(self, "keep_partial", _check.flag("pipeline.keep_partial", self.keep_partial))

    __repr__ = _compact_repr

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "off_policy", "k": self.k, "over_sampling": self.over_sampling,
                "keep_partial": self.keep_partial}


@dataclass(frozen=True, repr=False)
class Synchronous(OffPolicy):
    """Generate a whole batch with the current weights, train it, update, repeat. Every sample has
    staleness 0 (AReaL eta=0, every system's baseline). Accepts ``over_sampling`` and
    ``keep_partial`` like :class:`OffPolicy` (slime's partial rollout is ``Synchronous(math.inf,
    keep_partial=True)``)."""

    over_sampling: float | None = _spec("Synchronous", "over_sampling")["default"]
    keep_partial: bool = _spec("Synchronous", "keep_partial")["default"]
    k: int = field(default=0, init=False, repr=False)


@dataclass(frozen=True, repr=False)
class OneStepAsync(OffPolicy):
    """Batch i+1 is generated, with the weights from before training batch i, while batch i trains
    (verl ``one_step_off_policy``, slime ``train_async.py``). Staleness is 1 for every batch after
    the first, which has 0. Accepts ``over_sampling`` and ``keep_partial`` like :class:`OffPolicy`."""

    over_sampling: float | None = _spec("OneStepAsync", "over_sampling")["default"]
    keep_partial: bool = _spec("OneStepAsync", "keep_partial")["default"]
    k: int = field(default=1, init=False, repr=False)


@dataclass(frozen=True)
class LengthBalanced:
    """Length-balanced batches: every batch takes at least a quota of groups from each length
    bucket, instead of first finished, first trained; the trainer waits until every bucket has its
    quota, then fills the rest of the batch with the oldest finished groups of any bucket.

    Parameters
    ----------
    edges : sequence of float
        Bucket boundaries in tokens, strictly increasing (a group is bucketed by its longest answer).
    quotas : sequence of int, optional
        Minimum groups per batch from each bucket (``len(edges) + 1`` of them, summing to at most
        ``batch_size / group_size``). ``None``: ``share`` of each bucket's expected share of the
        scenario's length distribution, rounded down.
    share : float
        In (0, 1], for default quotas. Below 1 the free part of every batch drains the buckets that
        ran ahead; at exactly the expected shares each bucket is a critical queue whose backlog, and
        staleness, grow without bound (a random walk).
    """

    edges: tuple[float, ...] = tuple(_LB["edges"]["default"])
    quotas: tuple[int, ...] | None = _LB["quotas"]["default"]
    share: float = _LB["share"]["default"]

    def __post_init__(self) -> None:
        try:
            if isinstance(self.edges, (str, bytes)) or any(isinstance(x, (str, bytes, bool)) for x in self.edges):
                raise TypeError
            edges = tuple(self.edges)
            huge = [i for i, x in enumerate(edges) if isinstance(x, int) and abs(x) >= 2**1024]  # never inf
            if huge:
                raise invalid("pipeline.batch_order.edges", f"must be finite, > 0 and strictly increasing numbers of "
                                                            f"tokens; item {huge[0]} is {_check.show(edges[huge[0]])}")
            e = tuple(float(x) for x in edges)
        except (TypeError, ValueError, OverflowError) as err:
            if isinstance(err, ScenarioError):
                raise
            raise invalid("pipeline.batch_order.edges", f"must be numbers, got {self.edges!r}") from None
        if not e or any(not np.isfinite(x) or x <= 0 for x in e) or any(b <= a for a, b in zip(e, e[1:])):
            raise invalid("pipeline.batch_order.edges", f"must be finite, > 0 and strictly increasing, got {e}")
        object.__setattr__(self, "edges", e)
        if self.quotas is not None:
            if isinstance(self.quotas, (str, bytes)) or not hasattr(self.quotas, "__iter__"):
                raise invalid("pipeline.batch_order.quotas",
                              f"must be a sequence of integers (one per bucket) or None, got {self.quotas!r}")
            q = tuple(_check.integer("pipeline.batch_order.quotas", x, 0, 2**24) for x in self.quotas)
            if len(q) != len(e) + 1:
                raise invalid("pipeline.batch_order.quotas", f"needs {len(e) + 1} quotas (one per bucket), got {len(q)}")
            object.__setattr__(self, "quotas", q)
        object.__setattr__(self, "share", _check.part_bounded(_LB["share"], self.share))


_ON_UPDATE: tuple[str, ...] = tuple(_FA["on_update"]["choices"])


@dataclass(frozen=True)
class FullyAsync:
    """Streaming: a freed slot immediately starts new work with the newest weights; the trainer
    trains whenever ``batch_size`` finished samples (whole groups) are ready.

    Parameters
    ----------
    max_staleness : int or None
        Staleness cap checked when a finished group would be consumed: a group whose oldest answer's
        staleness (current policy version minus the version that started it) exceeds the cap is
        dropped, as in the chapter (PRIME-RL ``max_off_policy_steps``; NeMo-RL's eviction of stale
        rollouts in its versions after v0.6, where ``max_trajectory_age_steps`` bounds admission
        instead: :func:`rollsim.presets.nemo_rl_async`). ``None``: no cap.
    on_stale : "drop" | "requeue"
        What the cap does: drop (wasted tokens), or drop and regenerate the same prompt first
        (tinker-style re-queue; with correlated lengths the prompt keeps its difficulty).
    admission_eta : int or None
        AReaL's admission control (``max_head_offpolicyness``): a new group starts only while
        ``accepted + running + group_size <= (eta + version + 1) * batch_size`` samples. Nothing is
        dropped; slots may idle (source: inclusionAI/AReaL
        ``areal/core/staleness_manager.py``; arXiv 2505.24298).
    max_lag_samples : int or None
        PipelineRL-style bound on samples started and neither trained nor dropped; new groups wait.
    lag_release : "take" | "sync"
        When trained samples stop counting against ``max_lag_samples`` (so that new groups may
        start). ``"take"`` (default): as soon as the trainer takes their batch, so generation resumes
        with the weights the rollout has while the step trains; with a bound of one batch, every
        batch after the first then has staleness 1 (verl-project/verl issue 4449's reading of verl's
        rollouter). ``"sync"``: only once the step that trains them has ended and the rollout has the
        new weights; with a bound of one batch, generation and training alternate and every sample
        has staleness 0. verl's ``fully_async_policy`` rollouter does ``"sync"``: it restarts its
        count of started prompts only at a parameter sync (``reset_staleness`` in
        ``verl/experimental/fully_async_policy/fully_async_rollouter.py``, verl-project/verl), which
        :func:`rollsim.configs.load` and :func:`rollsim.presets.verl_fully_async` use.
        ``"sync"`` needs ``max_lag_samples``.
    max_ready_groups : int or None
        Bounded ready queue: on overflow the oldest finished groups are dropped (not length-biased).
    batch_order : "fifo" | "oldest_first" | LengthBalanced
        First finished first trained (the chapter); oldest policy version first (AReaL); or
        length-balanced buckets.
    on_update : str
        What in-flight requests do when the weights change: ``"continue"`` (keep their start
        version, the chapter), ``"abort_drop"`` (aborted, groups dropped), ``"abort_resubmit"``
        (resubmitted as prompt + partial answer: one prefill, AReaL), ``"wait"`` (drain: no new
        request starts until the in-flight ones finish, then the update), ``"keep_recompute"``
        (frozen, KV recomputed: one prefill of the context), ``"keep_stale"`` (resumed at once on
        the old KV: no cost, tokens mix versions, PipelineRL). In this model ``abort_resubmit`` and
        ``keep_recompute`` cost the same: one prefill of prompt + partial answer on the same slot.

    Raises ScenarioError for any out-of-range option.
    """

    max_staleness: int | None = _FA["max_staleness"]["default"]
    on_stale: str = _FA["on_stale"]["default"]
    admission_eta: int | None = _FA["admission_eta"]["default"]
    max_lag_samples: int | None = _FA["max_lag_samples"]["default"]
    max_ready_groups: int | None = _FA["max_ready_groups"]["default"]
    batch_order: str | LengthBalanced = _FA["batch_order"]["default"]
    on_update: str = _FA["on_update"]["default"]
    lag_release: str = _FA["lag_release"]["default"]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("max_staleness", "admission_eta", "max_lag_samples", "max_ready_groups"):
            if getattr(self, name) is not None:
                set_(self, name, _check.part_integer(_FA[name], getattr(self, name)))
        on_stale = _FA["on_stale"]["choices"]
        if not isinstance(self.on_stale, str) or self.on_stale not in on_stale:
            raise invalid("pipeline.on_stale", f"must be {_choices_text(on_stale)}, got {self.on_stale!r}")
        if self.on_update not in _ON_UPDATE:
            raise invalid("pipeline.on_update", f"must be one of {', '.join(_ON_UPDATE)}; got {self.on_update!r}")
        lag = _FA["lag_release"]["choices"]
        if not isinstance(self.lag_release, str) or self.lag_release not in lag:
            raise invalid("pipeline.lag_release", f"must be {_choices_text(lag)}, got {self.lag_release!r}")
        if self.lag_release == "sync" and self.max_lag_samples is None:
            raise invalid("pipeline.lag_release", "'sync' releases places under max_lag_samples: it needs "
                                                  "max_lag_samples (an integer >= batch_size)")
        orders = _FA["batch_order"]["choices"]
        if not (isinstance(self.batch_order, LengthBalanced) or self.batch_order in orders):
            raise invalid("pipeline.batch_order",
                          f"must be {', '.join(map(repr, orders))} or LengthBalanced(...), got {self.batch_order!r}")

    __repr__ = _compact_repr

    def to_dict(self) -> dict[str, Any]:
        order: Any = self.batch_order
        if isinstance(order, LengthBalanced):
            order = {"edges": list(order.edges), "quotas": None if order.quotas is None else list(order.quotas),
                     "share": order.share}
        d = {"kind": "fully_async", "max_staleness": self.max_staleness, "on_stale": self.on_stale,
             "admission_eta": self.admission_eta, "max_lag_samples": self.max_lag_samples,
             "max_ready_groups": self.max_ready_groups, "batch_order": order, "on_update": self.on_update}
        if self.lag_release != "take":  # absent means "take": dicts and sweep keys of other runs stay as they were
            d["lag_release"] = self.lag_release
        return d


for _cls, _where in ((OffPolicy, "pipeline."), (Synchronous, "pipeline."), (OneStepAsync, "pipeline."),
                     (FullyAsync, "pipeline."), (LengthBalanced, "pipeline.batch_order.")):
    strict_init(_cls, _where, _cls.__name__)

Pipeline = Synchronous | OneStepAsync | OffPolicy | FullyAsync


def pipeline_from_name(name: Any) -> Any:
    """``"sync"`` / ``"one-step"`` / ``"k-step:K"`` / ``"fully-async"`` (or a pipeline object) as a
    pipeline, by :func:`pipeline_name` (the command line's names and the scenario files' kinds);
    ScenarioError naming ``pipeline`` otherwise, with the name meant (:func:`pipeline_hint`)."""
    if isinstance(name, (Synchronous, OneStepAsync, OffPolicy, FullyAsync)):
        return name
    if isinstance(name, str):
        head, colon, k = name.partition(":")
        kind = pipeline_name(head)
        if kind == "k-step" and colon and k.strip().isdigit():
            return OffPolicy(k=int(k))
        if kind is not None and kind != "k-step" and not colon:
            return {"sync": Synchronous, "one-step": OneStepAsync, "fully-async": FullyAsync}[kind]()
    raise invalid("pipeline", f"must be 'sync', 'one-step', 'k-step:K' or 'fully-async', got {name!r}"
                              f"{pipeline_hint(name, ('sync', 'one-step', 'k-step:K', 'fully-async'))}")
