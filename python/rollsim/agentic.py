"""Multi-turn agentic rollouts: the :class:`Agentic` option of a :class:`rollsim.Scenario`.

A sample is a trajectory of turns. A turn decodes tokens (the scenario's ``lengths``, scaled by
``turn_scale``); then, unless the trajectory ends (``stop_prob``, ``max_turns``,
``max_context_tokens``), it makes one tool / environment call: the request leaves the decode batch
(``kv_policy``), waits for one of ``env_slots`` environments, runs ``env_overhead_s`` plus a
``tool_latency_s`` draw, and comes back with an observation of ``observation_tokens`` appended to
its context; its next turn prefills what its KV does not hold and decodes on. See README
"Agentic rollouts".

The part's fields, units, defaults and ranges are the engine's schema
(``rust/rollsim-core/src/schema.rs``, ``AGENTIC``; ``rollsim._rollsim.SCHEMA["parts"]``), the same
ranges the engine's ``AgenticConfig::validate`` checks (``rust/rollsim-core/src/pipeline/agentic.rs``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

from rollsim import _check
from rollsim.errors import invalid, strict_init
from rollsim.lengths import Empirical, LogNormal

__all__ = ["Agentic", "MAX_TURNS", "seconds_repr", "seconds_description"]


def _schema_fields() -> dict[str, dict[str, Any]]:
    """The engine's schema of every field of :class:`Agentic`, by name, in its order."""
    from rollsim import _rollsim

    part = next(p for p in _rollsim.SCHEMA["parts"] if p["class"] == "Agentic")
    return {f["name"]: dict(f) for f in part["fields"]}


_AG = _schema_fields()

#: Largest ``max_turns`` (the engine's schema).
MAX_TURNS: int = _AG["max_turns"]["hi"]


def _choice(spec: dict[str, Any], value: Any) -> str:
    """``value`` if it is one of the schema field's choices, else its message
    (``agentic.kv_policy: must be 'keep', 'drop' or 'hold', got 'evict'``)."""
    choices = spec["choices"]
    if not isinstance(value, str) or value not in choices:
        text = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}"
        raise invalid(spec["path"], f"must be {text}, got {value!r}")
    return value


def _dist(spec: dict[str, Any], value: Any) -> float | LogNormal | Empirical:
    # a call's draws do not depend on its prompt: group keys would be ignored, so they are refused
    name = spec["path"]
    if isinstance(value, LogNormal) and value.group_correlation != 0.0:
        raise invalid(f"{name}.group_correlation", f"must be 0 (a tool call's draw does not depend on its prompt), "
                                                   f"got {_check.show(value.group_correlation)}")
    if isinstance(value, Empirical) and value.groups is not None:
        raise invalid(f"{name}.groups", "must be None (a tool call's draw does not depend on its prompt), got "
                                        f"{len(value.groups)} group keys")
    if isinstance(value, (LogNormal, Empirical)):
        return value
    return _check.part_bounded(spec, value)


def seconds_repr(value: float | LogNormal | Empirical) -> str:
    """``repr`` of a distribution of seconds (``tool_latency_s``), in seconds and with the cap named
    ``max_s`` as a scenario file spells it: ``LogNormal(mu=0.12, sigma=1.0, max_s=30.0)``,
    ``Empirical(3 values, 3 samples, mean 2 s)``; a number as it is."""
    if isinstance(value, LogNormal):
        return f"LogNormal(mu={value.mu!r}, sigma={value.sigma!r}, max_s={value.max_tokens!r})"
    if isinstance(value, Empirical):
        return repr(value).replace(" tokens)", " s)")
    return repr(value)


def seconds_description(value: float | LogNormal | Empirical) -> Any:
    """A distribution of seconds as :meth:`rollsim.Scenario.describe` gives it: a number, or a table
    in seconds (``kind``, ``mu``, ``sigma``, ``max_s``; an ``Empirical`` as ``name``, ``values``
    (how many) and ``mean_s``)."""
    if isinstance(value, LogNormal):
        return {"kind": "lognormal", "mu": value.mu, "sigma": value.sigma, "max_s": value.max_tokens}
    if isinstance(value, Empirical):
        return {"kind": "empirical", "name": value.name, "values": int(value.values.size),
                "mean_s": value.mean_tokens(), "max_s": value.max_tokens}
    return value


@dataclass(frozen=True)
class Agentic:
    """Multi-turn agentic trajectories (``Scenario(agentic=Agentic(...))``), in every pipeline:
    the fully asynchronous one, and the batch pipelines (``Synchronous``, ``OneStepAsync``,
    ``OffPolicy``; without ``over_sampling``), where a batch waits for all its trajectories, tool
    calls included, and a group dropped by a failed call is replaced by a new group.

    Parameters
    ----------
    max_turns : int, in [1, 2**20]
        Turns per trajectory at most (verl ``multi_turn.max_assistant_turns``). ``max_turns=1``
        is a single-turn run, identical to ``agentic=None``.
    tool_latency_s : float in [0, 1e9], LogNormal or Empirical
        Seconds one tool call runs, a constant or a distribution (``LogNormal(mu, sigma,
        max_tokens)`` with ``max_tokens`` the cap in seconds; ``Empirical`` values or
        ``Empirical.from_file``), without group keys. A scenario file spells it in seconds:
        ``[agentic.tool_latency_s]`` with ``kind = "lognormal"``, ``mu``, ``sigma``, ``max_s`` (the
        cap), or ``kind = "empirical"``, ``values``, ``weights``, ``max_s``, or ``file = ...``;
        the lengths' ``max_tokens`` is refused there.
    observation_tokens : float in [0, 1e9], LogNormal or Empirical
        Tokens a tool call appends to the context (verl ``multi_turn.max_tool_response_length``
        caps it), a constant or a distribution (a lengths table in a scenario file), without
        group keys.
    stop_prob : float, in [0, 1]
        Probability that a trajectory ends after a turn (before ``max_turns``); the number of
        turns is then geometric, mean ``1 / stop_prob`` without the cap.
    turn_scale : tuple of float, each in [1e-6, 1e6]
        Turn ``k`` decodes ``lengths`` draw times ``turn_scale[min(k, len - 1)]`` tokens
        (empty, default: every turn draws from ``lengths`` as is).
    max_context_tokens : float, optional
        Prompt + generated + observed tokens at most, in (``prompt_tokens``, 1e12]: a turn is cut
        where the context reaches it, and the trajectory ends there, truncated. With
        ``kv_cache_tokens`` it must be at most ``kv_cache_tokens - 1``. ``None``: no bound.
    kv_policy : "keep" | "drop" | "hold"
        What a request does during a tool call. ``"keep"`` (default): it releases its slot and its
        KV stays cached on its instance; the next turn prefills only the observation if it lands on
        the same instance, else its whole context. ``"drop"``: it releases the slot and the KV;
        the next turn prefills its whole context (prompt, unless the group's prefix cache holds
        it, plus every generated and observed token). ``"hold"``: it keeps its slot, which idles
        (counted busy) until the call returns; the next turn prefills the observation. With
        ``kv_cache_tokens`` and ``"keep"``, the KV a request held when its turn ended (prompt +
        generated tokens, as for running requests) counts against its instance's capacity during
        the call and is evicted, least recently cached first, before a running request is
        preempted or when an arriving request needs room (summary ``kv_evictions``); an evicted
        request's next turn prefills its whole context. The cached KV is released when the call
        returns. With ``"hold"``, the KV a held slot's request keeps (prompt + generated tokens)
        counts against its instance's ``kv_cache_tokens`` until the call returns, like a running
        request's, but is neither evicted nor preempted.
    sticky : bool
        A returning request goes back to its previous instance when that has an idle slot (else
        anywhere: with ``"keep"``, a KV miss).
    env_slots : int, optional
        Concurrent environments (sandboxes) in [1, 2**24]: calls wait in a FIFO queue for a free
        one. ``None`` (default): unbounded.
    max_trajectories : int, optional
        Trajectories in flight at most, in [1, 2**24] and >= ``group_size``: samples of groups
        started and not yet complete (a bound on concurrent rollouts). No new group starts beyond
        it, so slots may idle. ``None`` (default): unbounded; a slot released during a tool call
        then starts a new trajectory at once, and with a slow environment pool the trajectories in
        flight (and the queue for environments) grow without end.
    env_overhead_s : float, in [0, 1e9]
        Seconds added to every call (sandbox start, request round trip).
    failure_rate : float, in [0, 1)
        Probability that a call fails (known when it returns).
    on_failure : "drop" | "retry"
        ``"drop"``: the trajectory is aborted (its tokens wasted) and its group dropped (members
        still running are dropped when they finish). ``"retry"``: the call is submitted again.
    switch_version_at_turn : bool
        A returning request generates its next turn with the rollout's current weights (a new
        token span), the natural switch point of multi-turn systems; ``False``: it goes on with the
        version it had, like a request in flight under ``on_update="continue"``.

    Raises
    ------
    ScenarioError
        A field of the wrong type or out of range, named ``agentic.<field>``.
    """

    max_turns: int = _AG["max_turns"]["default"]
    tool_latency_s: float | LogNormal | Empirical = _AG["tool_latency_s"]["default"]
    observation_tokens: float | LogNormal | Empirical = _AG["observation_tokens"]["default"]
    stop_prob: float = _AG["stop_prob"]["default"]
    turn_scale: tuple[float, ...] = tuple(_AG["turn_scale"]["default"])
    max_context_tokens: float | None = _AG["max_context_tokens"]["default"]
    kv_policy: Literal["keep", "drop", "hold"] = _AG["kv_policy"]["default"]
    sticky: bool = _AG["sticky"]["default"]
    env_slots: int | None = _AG["env_slots"]["default"]
    max_trajectories: int | None = _AG["max_trajectories"]["default"]
    env_overhead_s: float = _AG["env_overhead_s"]["default"]
    failure_rate: float = _AG["failure_rate"]["default"]
    on_failure: Literal["drop", "retry"] = _AG["on_failure"]["default"]
    switch_version_at_turn: bool = _AG["switch_version_at_turn"]["default"]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "max_turns", _check.part_integer(_AG["max_turns"], self.max_turns))
        for name in ("tool_latency_s", "observation_tokens"):
            set_(self, name, _dist(_AG[name], getattr(self, name)))
        set_(self, "stop_prob", _check.part_bounded(_AG["stop_prob"], self.stop_prob))
        scale = _AG["turn_scale"]
        if isinstance(self.turn_scale, (str, bytes)) or not hasattr(self.turn_scale, "__iter__"):
            raise invalid(scale["path"], f"must be a sequence of numbers in {scale['range']}, got {self.turn_scale!r}")
        set_(self, "turn_scale", tuple(_check.bounded(f"{scale['path']}[{i}]", s, scale["lo"], scale["hi"], scale["unit"])
                                       for i, s in enumerate(self.turn_scale)))
        if self.max_context_tokens is not None:
            set_(self, "max_context_tokens", _check.part_bounded(_AG["max_context_tokens"], self.max_context_tokens))
        _choice(_AG["kv_policy"], self.kv_policy)
        set_(self, "sticky", _check.flag(_AG["sticky"]["path"], self.sticky))
        for name in ("env_slots", "max_trajectories"):
            if getattr(self, name) is not None:
                set_(self, name, _check.part_integer(_AG[name], getattr(self, name)))
        set_(self, "env_overhead_s", _check.part_bounded(_AG["env_overhead_s"], self.env_overhead_s))
        rate = _AG["failure_rate"]  # [0, 1): an end the range excludes
        set_(self, "failure_rate", _check.within(rate, self.failure_rate, _check.real(rate["path"], self.failure_rate)))
        _choice(_AG["on_failure"], self.on_failure)
        set_(self, "switch_version_at_turn", _check.flag(_AG["switch_version_at_turn"]["path"],
                                                         self.switch_version_at_turn))

    def check(self, prompt_tokens: float, kv_cache_tokens: float | None, pipeline: Any,
              group_size: int = 1) -> None:
        """Checks against the scenario (called by :class:`rollsim.Scenario`).

        Raises
        ------
        ScenarioError
            ``max_trajectories`` below ``group_size``, ``max_context_tokens`` out of its range, or
            a batch pipeline with ``over_sampling`` (a batch waits for all its trajectories).
        """
        if self.max_trajectories is not None and self.max_trajectories < group_size:
            raise invalid("agentic.max_trajectories", f"must be >= group_size ({group_size}), or None (unbounded), "
                                                      f"got {self.max_trajectories}")
        m = self.max_context_tokens
        if m is not None and m <= prompt_tokens:
            raise invalid("agentic.max_context_tokens",
                          f"must be > prompt_tokens ({prompt_tokens!r}), or None (no bound), got {m!r}")
        if kv_cache_tokens is not None and self.max_turns > 1:
            if m is None or m > kv_cache_tokens - 1:
                raise invalid("agentic.max_context_tokens",
                              f"with kv_cache_tokens, must be at most kv_cache_tokens - 1 = {kv_cache_tokens - 1!r} "
                              f"(a trajectory must fit alone), got {m!r}")
        over = getattr(pipeline, "over_sampling", None)
        if over is not None:
            raise invalid("pipeline.over_sampling", f"must be None with agentic (a batch waits for all its trajectories: "
                                                    f"stopping those in a tool call at the batch's end is not modelled), "
                                                    f"got {_check.show(over)}")

    def __repr__(self) -> str:
        # the dataclass's repr, with the tool latency in seconds (a LogNormal's cap is max_s there)
        parts = [f"{f.name}={seconds_repr(v) if f.name == 'tool_latency_s' else repr(v)}"
                 for f in dataclasses.fields(self) if f.repr for v in (getattr(self, f.name),)]
        return f"Agentic({', '.join(parts)})"

    def mean_tool_s(self) -> float:
        """Expected seconds of one tool call, ``env_overhead_s`` included (queueing excluded)."""
        lat = self.tool_latency_s
        return self.env_overhead_s + (lat if isinstance(lat, float) else lat.mean_tokens())

    def to_dict(self) -> dict[str, Any]:
        """The engine's form."""
        def dist(v: float | LogNormal | Empirical) -> Any:
            return v if isinstance(v, float) else v.to_dict()

        return {
            "max_turns": self.max_turns,
            "tool_latency_s": dist(self.tool_latency_s),
            "observation_tokens": dist(self.observation_tokens),
            "stop_prob": self.stop_prob,
            "turn_scale": list(self.turn_scale),
            "max_context_tokens": math.inf if self.max_context_tokens is None else self.max_context_tokens,
            "kv_policy": self.kv_policy,
            "sticky": self.sticky,
            "env_slots": self.env_slots or 0,
            "max_trajectories": self.max_trajectories or 0,
            "env_overhead_s": self.env_overhead_s,
            "failure_rate": self.failure_rate,
            "on_failure": self.on_failure,
            "switch_version_at_turn": self.switch_version_at_turn,
        }


strict_init(Agentic, "agentic.", "Agentic")
