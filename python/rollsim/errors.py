"""Exceptions and warnings raised by rollsim."""

from __future__ import annotations

from rollsim._rollsim import ScenarioError

__all__ = ["ScenarioError", "GenerationOutrunsTrainingWarning", "RunStalledWarning", "invalid"]


class GenerationOutrunsTrainingWarning(RuntimeWarning):
    """The ready queue grows step after step: rollout generates faster than the trainer consumes,
    so staleness grows without bound (see ``summary["ready_queue_growth_per_step"]``)."""


class RunStalledWarning(RuntimeWarning):
    """Nothing could happen any more before the horizon: no slot could start work and the trainer
    could not form a batch (``summary["stalled"]``)."""


def invalid(field: str, message: str) -> ScenarioError:
    """A :class:`ScenarioError` (a ``ValueError``) whose message starts with ``field``."""
    return ScenarioError(f"{field}: {message}")
