"""A weight-sync estimate as the pipeline simulation's fields.

A sync costs the pipeline twice: the trainer (or the transfer engine) moves the new weights while
the rollout keeps decoding with the old ones, and then the rollout stops generating while it
loads them (pause, swap or copy in place, flush the cache, resume). Only the second part stops
generation. :func:`pipeline_fields` splits one sync into the scenario's two fields:
``weight_sync_s`` (the part that overlaps decoding; the new version lands that much after the
training step) and ``rollout_pause_s`` (generation stopped at every update the rollout loads).

Marin measured the split on 8 engines over 20 syncs (marin-community/marin issue 8955): before its
fix a median generation pause of 5.10 s inside a 6.22 s sync, after it 0.107 s inside 1.21 s.

>>> from rollsim.sync import pipeline_fields
>>> pipeline_fields(1.21, pause_s=0.107)
{'weight_sync_s': 1.103, 'rollout_pause_s': 0.107}
"""

from __future__ import annotations

import math
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollsim.errors import ScenarioError, invalid

from .cluster import Cluster
from .estimator import Estimate, estimate
from .stacks import Stack, StackEstimate, estimate_stack, stack

__all__ = ["pipeline_fields", "WeightSync", "PAUSE_WORDS", "load_weight_sync", "weight_sync_from_doc"]

#: Largest sync, seconds (the scenario's range of ``weight_sync_s`` and ``rollout_pause_s``).
MAX_S = 1e12


def _seconds(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise invalid(name, f"must be a number of seconds in [0, 1e12], got {type(v).__name__} {v!r}")
    x = float(v)
    if not (math.isfinite(x) and 0.0 <= x <= MAX_S):
        raise invalid(name, f"must be in [0, 1e12] seconds, got {v!r}")
    return x


def pipeline_fields(sync: float | Estimate | StackEstimate | Cluster, *, pause_s: Any = "all") -> dict[str, float]:
    """The scenario fields of one weight sync per update: ``sc.replace(**pipeline_fields(...))``.

    Parameters
    ----------
    sync : float | Estimate | StackEstimate | Cluster
        The whole sync, seconds per update: a number, an estimate (:func:`rollsim.sync.estimate`,
        :func:`rollsim.sync.estimate_stack`; its ``total_s``), or a :class:`Cluster` (estimated
        with :func:`rollsim.sync.estimate`).
    pause_s : float | "all" | "pause_resume"
        Seconds of the sync during which the rollout generates nothing, in [0, the sync].
        ``"all"`` (default): the whole sync (weights written in place while the engines are paused,
        every topology of :func:`rollsim.sync.estimate`); ``"pause_resume"``: only the estimate's
        ``pause_resume_s`` term (the engines' pause / resume and cache flush; the transfer
        overlaps decoding, as with a staging buffer swapped in at the end).

    Returns
    -------
    dict[str, float]
        ``weight_sync_s`` (seconds of the sync that overlap decoding, added to each training step:
        the new version lands that much after the step's compute) and ``rollout_pause_s`` (seconds
        the rollout stops at every update it loads). They add up to the sync.

    Raises
    ------
    ScenarioError (ValueError)
        ``sync`` not a number of seconds in [0, 1e12] or an estimate; ``pause_s`` not in [0, the
        sync], or ``"pause_resume"`` without an estimate.
    """
    if isinstance(sync, Cluster):
        sync = estimate(sync)
    if isinstance(sync, (Estimate, StackEstimate)):
        total, pause_term = _seconds("sync", sync.total_s), float(sync.breakdown.get("pause_resume_s", 0.0))
    else:
        total, pause_term = _seconds("sync", sync), None
    return _split(total, pause_term, pause_s, sync)


#: ``pause_s`` words of :class:`WeightSync` and :func:`pipeline_fields`.
PAUSE_WORDS = ("all", "pause_resume")


def _split(total: float, pause_term: float | None, pause_s: Any, sync: Any) -> dict[str, float]:
    """``{"weight_sync_s": total - pause, "rollout_pause_s": pause}`` for one sync of ``total`` s."""
    if isinstance(pause_s, str):
        if pause_s == "all":
            pause = total
        elif pause_s == "pause_resume":
            if pause_term is None:
                raise invalid("pause_s", "'pause_resume' takes the estimate's pause_resume_s term: it needs an "
                                         f"Estimate, a StackEstimate or a Cluster, got sync={sync!r}")
            pause = min(pause_term, total)
        else:
            raise invalid("pause_s", f"must be a number of seconds, 'all' or 'pause_resume', got {pause_s!r}")
    else:
        if isinstance(pause_s, bool) or not isinstance(pause_s, (int, float, np.integer, np.floating)):
            raise invalid("pause_s", f"must be a number of seconds, 'all' or 'pause_resume', got {pause_s!r}")
        pause = float(pause_s)
        if not 0.0 <= pause <= total:  # NaN fails too
            raise invalid("pause_s", f"must be in [0, the sync ({total!r} s)] seconds, got {pause_s!r}")
    return {"weight_sync_s": total - pause, "rollout_pause_s": pause}


@dataclass(frozen=True)
class WeightSync:
    """A scenario's weight sync given as a cluster (``Scenario(weight_sync=...)``): the sync per
    update is estimated from it and split into the scenario's two fields, which then hold the
    derived numbers (``weight_sync_s``: the transfer that overlaps decoding, ``rollout_pause_s``: the
    pause the rollout sees). The cluster stays on the scenario: in its repr, its TOML
    (``[weight_sync]``), its dict (:meth:`Scenario.describe`) and its run keys.

    Parameters
    ----------
    cluster : Cluster
        Model, layouts, hardware, software and topology (:func:`rollsim.sync.load_cluster`,
        :func:`rollsim.sync.chapter_cluster`, ...; :func:`rollsim.sync.load_weight_sync` reads a
        cluster file with its ``stack`` and ``pause_s`` as a WeightSync).
    stack : Stack or str, optional
        A transport stack (:data:`rollsim.sync.STACKS` name or a :class:`~rollsim.sync.Stack`): the
        sync is :func:`rollsim.sync.estimate_stack` of the cluster with it. ``None`` (default): the
        topology estimate :func:`rollsim.sync.estimate` of the cluster as it is.
    pause_s : float | "all" | "pause_resume"
        Seconds of the sync during which the rollout generates nothing, in [0, the sync]:
        ``"all"`` (default, every topology writes the weights in place while the engines are
        paused), ``"pause_resume"`` (only the estimate's ``pause_resume_s`` term: the transfer
        overlaps decoding, as with a staging buffer swapped in at the end) or a number of seconds.

    Attributes
    ----------
    estimate : Estimate | StackEstimate
        The estimate of one sync (its ``breakdown`` says which term dominates).
    total_s, transfer_s, pause : float
        Seconds per update: the whole sync, the part that overlaps decoding (the scenario's
        ``weight_sync_s``) and the pause (``rollout_pause_s``); ``transfer_s + pause == total_s``.

    Raises
    ------
    ScenarioError (ValueError)
        ``cluster`` not a Cluster, an unknown stack, ``pause_s`` out of range (named
        ``weight_sync.<field>``).
    """

    cluster: Cluster
    stack: Stack | None = None
    pause_s: float | str = "all"
    _estimate: Estimate | StackEstimate | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.cluster, Cluster):
            raise invalid("weight_sync.cluster", f"must be a rollsim.sync.Cluster, got {type(self.cluster).__name__}")
        st = self.stack
        if isinstance(st, str):
            try:
                st = stack(st)
            except ScenarioError as e:
                raise ScenarioError(f"weight_sync.{e}") from None
        elif st is not None and not isinstance(st, Stack):
            raise invalid("weight_sync.stack", f"must be None, a stack name or a rollsim.sync.Stack, got "
                                               f"{type(st).__name__}")
        object.__setattr__(self, "stack", st)
        est: Estimate | StackEstimate = estimate(self.cluster) if st is None else estimate_stack(self.cluster, st)
        try:
            _split(_seconds("sync", est.total_s), float(est.breakdown.get("pause_resume_s", 0.0)), self.pause_s, est)
        except ScenarioError as e:
            raise ScenarioError(f"weight_sync.{e}") from None
        if isinstance(self.pause_s, (int, float, np.integer, np.floating)) and not isinstance(self.pause_s, bool):
            object.__setattr__(self, "pause_s", float(self.pause_s))
        object.__setattr__(self, "_estimate", est)

    @property
    def estimate(self) -> Estimate | StackEstimate:
        """The estimate of one sync."""
        assert self._estimate is not None
        return self._estimate

    def fields(self) -> dict[str, float]:
        """The scenario fields: ``{"weight_sync_s": transfer_s, "rollout_pause_s": pause}``."""
        e = self.estimate
        return _split(e.total_s, float(e.breakdown.get("pause_resume_s", 0.0)), self.pause_s, e)

    @property
    def total_s(self) -> float:
        return float(self.estimate.total_s)

    @property
    def transfer_s(self) -> float:
        return self.fields()["weight_sync_s"]

    @property
    def pause(self) -> float:
        return self.fields()["rollout_pause_s"]

    def to_doc(self) -> dict[str, Any]:
        """The ``[weight_sync]`` table of a scenario TOML file: the cluster file's keys
        (:mod:`rollsim.sync.config`), ``stack`` if any and ``pause_s``; :meth:`from_doc` rebuilds an
        equal object."""
        from .config import cluster_to_dict, stack_to_doc

        d: dict[str, Any] = {"pause_s": self.pause_s}
        if self.stack is not None:
            d["stack"] = stack_to_doc(self.stack)
        d.update(cluster_to_dict(self.cluster))
        return d

    @classmethod
    def from_doc(cls, value: Any, where: str = "weight_sync") -> WeightSync:
        """A :class:`WeightSync` from a ``[weight_sync]`` table (see :meth:`to_doc`), or from a
        Cluster, an Estimate or a StackEstimate (their cluster and stack; the whole sync pauses),
        or a WeightSync (returned as is).

        Raises
        ------
        ScenarioError (ValueError)
            Anything else, or a bad table (the message names ``weight_sync.<key>``).
        """
        from .config import cluster_from_dict, stack_from_dict

        if isinstance(value, WeightSync):
            return value
        if isinstance(value, Cluster):
            return cls(value)
        if isinstance(value, StackEstimate):
            return cls(value.cluster, value.stack)
        if isinstance(value, Estimate):
            return cls(value.cluster)
        if not isinstance(value, dict):
            raise invalid(where, "must be None, a rollsim.sync.Cluster, an estimate of one (rollsim.sync.estimate, "
                                 "estimate_stack), a rollsim.sync.WeightSync or a table of a cluster file, got "
                                 f"{type(value).__name__} {value!r}")
        d = dict(value)
        pause = d.pop("pause_s", "all")
        try:
            c, st = cluster_from_dict(d), stack_from_dict(d)
        except ScenarioError as e:
            raise ScenarioError(f"{where}.{e}") from None
        return cls(c, st, pause)


def weight_sync_from_doc(doc: dict):
    """The :class:`~rollsim.sync.WeightSync` of a parsed cluster file: its cluster, its ``stack``
    (if any) and its ``pause_s`` (if any, else ``"all"``); errors name the file's keys
    (``stack.preset``, ``pause_s``, ...), without a ``weight_sync.`` prefix."""
    from .config import cluster_from_dict, stack_from_dict

    if not isinstance(doc, dict):
        raise invalid("cluster", f"must be a table (dict) with a [model] table, got {type(doc).__name__}")
    d = dict(doc)
    pause = d.pop("pause_s", "all")
    c, st = cluster_from_dict(d), stack_from_dict(d)
    try:
        return WeightSync(c, st, pause)
    except ScenarioError as e:
        raise ScenarioError(str(e).removeprefix("weight_sync.")) from None


def load_weight_sync(path: str | Path):
    """Reads a cluster TOML file whole, as :func:`load_cluster` does, with its ``stack`` and ``pause_s``:
    the weight sync ``Scenario(weight_sync=...)`` takes, and the stack ``rollsim sync FILE`` reports.

    Parameters
    ----------
    path : str or pathlib.Path
        A cluster file (the keys of the module docstring, plus optional ``stack`` (a name of
        :data:`rollsim.sync.STACKS` or a ``[stack]`` table) and ``pause_s`` (seconds in [0, the
        sync], ``"all"`` or ``"pause_resume"``; default ``"all"``)).

    Returns
    -------
    rollsim.sync.WeightSync
        ``.cluster``, ``.stack`` (None if the file has none: the topology estimate), ``.pause_s``;
        equal to ``WeightSync.from_doc(tomllib.load(file))``.

    Raises
    ------
    FileNotFoundError
        No such file.
    ScenarioError (ValueError)
        Not a readable UTF-8 TOML file, or bad content (naming ``section.key``).
    OSError
        The file cannot be read.
    """
    from rollsim import scenario_toml

    doc = scenario_toml.read_toml(path, "cluster file")
    scenario_toml.check_integers("", doc)
    return weight_sync_from_doc(doc)
