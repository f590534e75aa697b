"""How generation and training interleave (see README "The model" for the exact rules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["Synchronous", "OneStepAsync", "OffPolicy", "FullyAsync", "Pipeline"]


def _count(field: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise invalid(field, f"must be an integer in [{lo}, {hi}], got {type(value).__name__} {value!r}")
    if not lo <= int(value) <= hi:
        raise invalid(field, f"must be in [{lo}, {hi}], got {value}")
    return int(value)


@dataclass(frozen=True)
class Synchronous:
    """Generate a whole batch with the current weights, train it, update, repeat.
    Every sample has staleness 0 (AReaL eta=0, every system's baseline)."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "off_policy", "k": 0}


@dataclass(frozen=True)
class OneStepAsync:
    """Batch i+1 is generated, with the weights from before training batch i, while batch i trains
    (verl ``one_step_off_policy``, slime ``train_async.py``). Staleness is 1 for every batch after
    the first, which has 0."""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "off_policy", "k": 1}


@dataclass(frozen=True)
class OffPolicy:
    """k-step off-policy: generation may run up to ``k`` batches ahead of training (ROLL
    ``async_generation_ratio=k``); each batch uses the newest weights available when its generation
    starts, so staleness is at most ``k``. ``OffPolicy(0)`` is :class:`Synchronous`, ``OffPolicy(1)``
    is :class:`OneStepAsync`.

    Raises ScenarioError if ``k`` is not an integer in [0, 1_000_000].
    """

    k: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", _count("pipeline.k", self.k, 0, 1_000_000))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "off_policy", "k": self.k}


@dataclass(frozen=True)
class FullyAsync:
    """Streaming: a freed slot immediately starts a new sample with the newest weights; the trainer
    trains whenever ``batch_size`` finished samples are ready (first finished, first trained).

    Parameters
    ----------
    max_staleness : int or None
        Drop-at-consumption cap: a finished sample whose staleness (current policy version minus the
        version that generated it) exceeds it is dropped, as in the chapter (PRIME-RL
        ``max_off_policy_steps``, NeMo-RL ``max_trajectory_age_steps``). ``None``: no cap.

    Raises ScenarioError if ``max_staleness`` is not None or an integer in [0, 2**32 - 1].
    """

    max_staleness: int | None = None

    def __post_init__(self) -> None:
        if self.max_staleness is not None:
            object.__setattr__(self, "max_staleness", _count("pipeline.max_staleness", self.max_staleness, 0, 2**32 - 1))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "fully_async", "max_staleness": self.max_staleness}


Pipeline = Synchronous | OneStepAsync | OffPolicy | FullyAsync
