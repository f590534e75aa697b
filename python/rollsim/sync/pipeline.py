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
from typing import Any

import numpy as np

from rollsim.errors import invalid

from .cluster import Cluster
from .estimator import Estimate, estimate
from .stacks import StackEstimate

__all__ = ["pipeline_fields"]

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
