"""Exceptions and warnings raised by rollsim."""

from __future__ import annotations

from typing import Any

__all__ = [
    "RollsimError",
    "ScenarioError",
    "RunLimitError",
    "GenerationOutrunsTrainingWarning",
    "RunStalledWarning",
    "NoTrainingStepWarning",
    "StalenessCapLivelockWarning",
    "MetricsRowsSkippedWarning",
    "CalibrationPlausibilityWarning",
    "NameAssumedWarning",
    "DeploymentWarning",
    "invalid",
    "strict_init",
]


class RollsimError(Exception):
    """Base of every error rollsim raises on purpose (``except rollsim.RollsimError``).

    Its subclasses are plain Python classes of the module ``rollsim``: they pickle, so they cross
    Ray and multiprocessing boundaries unchanged."""

    __module__ = "rollsim"


class ScenarioError(RollsimError, ValueError):
    """Bad input: a field of the wrong type or outside its allowed range, an unreadable file, an
    option that does not apply. The message starts with the field's name and states the allowed
    range, e.g. ``rollout_slots: must be in [1, 16777216], got 0``."""

    __module__ = "rollsim"


class RunLimitError(RollsimError, RuntimeError):
    """A valid run that hits a run-time limit: it would start more than ``max_samples`` samples
    (estimated before running, or reached while running), or process more than ``max_events``
    events (estimated before running). The message says how to proceed."""

    __module__ = "rollsim"


class GenerationOutrunsTrainingWarning(RuntimeWarning):
    """The ready queue grows step after step: rollout generates faster than the trainer consumes,
    so staleness grows without bound (see ``summary["ready_queue_growth_per_step"]``)."""

    __module__ = "rollsim"


class RunStalledWarning(RuntimeWarning):
    """Nothing could happen any more before the horizon: no slot could start work and the trainer
    could not form a batch (``summary["stalled"]``)."""

    __module__ = "rollsim"


class NoTrainingStepWarning(RuntimeWarning):
    """The run completed no training step within ``horizon_s`` (``summary["steps"] == 0``): no batch
    of ``batch_size`` samples filled, or the first step did not end; every step-based value
    (staleness, tokens trained) is then empty. The message gives the samples started and finished
    against ``batch_size``."""

    __module__ = "rollsim"


class StalenessCapLivelockWarning(RuntimeWarning):
    """A fully asynchronous staleness cap below what the sync cadence itself gives
    (``pipeline.max_staleness < sync_every - 1``): the rollout loads new weights only every
    ``sync_every`` steps, so after ``max_staleness + 1`` steps every finished sample is over the cap
    and dropped, and training stops for good, whatever ``horizon_s`` (a livelock: slots stay busy,
    nothing trains). The message names the smallest cap that trains
    (:func:`rollsim.simulation.staleness_cap_livelock`)."""

    __module__ = "rollsim"


class MetricsRowsSkippedWarning(UserWarning):
    """:func:`rollsim.calibrate` (or :func:`rollsim.calibration.normalize`) left out rows of a run's
    metrics with a missing value (null or NaN) in a metric it uses; the message names the metric and
    the steps, and :attr:`rollsim.calibration.Calibrated.notes` records it."""

    __module__ = "rollsim"


class MetricNearMissWarning(UserWarning):
    """A column of a run's metrics that :func:`rollsim.calibrate` does not read is a near miss of a
    metric it would read (``timings_s/step`` for verl's ``timing_s/step``): most likely a misspelt
    name, whose values the fit then goes without. The message names the column and the metric meant;
    :attr:`rollsim.calibration.Calibrated.notes` records it, and every other column not read."""

    __module__ = "rollsim"


class CalibrationPlausibilityWarning(RuntimeWarning):
    """A calibration (:func:`rollsim.calibrate`) fitted values outside physically plausible ranges
    (:data:`rollsim.calibration.PLAUSIBLE`: a decode speed per sequence outside [1, 5000] tokens/s, a
    weight sync over an hour, a step over a day, ...): the metrics are most likely in other units
    (milliseconds: the message says so when every fitted time is about 1000x a plausible one) or
    not the run the config describes. The fit can still match the rows closely."""

    __module__ = "rollsim"


class NameAssumedWarning(UserWarning):
    """An accelerator or model name that names more than one product was taken as one of them
    (``"A100"``: the A100 comes in 40 and 80 GB, taken as A100-80G; ``"Llama-3-8B"``: taken as the
    Llama-3.1-8B shape). The message names what it was taken as and the name to give to choose."""

    __module__ = "rollsim"


class DeploymentWarning(UserWarning):
    """A :class:`rollsim.hardware.Deployment`'s training step or scenario rests on something the
    deployment as given may not do: training GPUs that cannot hold the model's training state
    (:func:`rollsim.hardware.switching.train_state_gpus`; priced anyway, since a trainer may offload
    it), or an agentic preset whose ``max_trajectories`` bound was made for a smaller pool than the
    deployment's slots. The message names the numbers and what to give instead."""

    __module__ = "rollsim"


def invalid(field: str, message: str) -> ScenarioError:
    """A :class:`ScenarioError` (a ``ValueError``) whose message starts with ``field``."""
    return ScenarioError(f"{field}: {message}")


def strict_init(cls: type, where: str, what: str) -> type:
    """Makes ``cls(...)`` (a dataclass) raise :class:`ScenarioError` instead of ``TypeError`` for an
    unknown keyword, too many positional arguments, a missing argument or a repeated one.
    ``where`` prefixes the field names (``"lengths."``); ``what`` names the thing (``"LogNormal"``)."""
    import dataclasses
    import functools
    import inspect

    init = cls.__init__  # type: ignore[misc]
    sig = inspect.signature(init)
    names = [f.name for f in dataclasses.fields(cls) if f.init and not f.name.startswith("_")]

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for k in kwargs:
            if k not in sig.parameters or k == "self" or k.startswith("_"):
                from rollsim import _text

                found = _text.closest(k, names, cutoff=0.8)  # a typo: the field it likely meant
                hint = f"; did you mean {found}?" if found else ""
                raise invalid(f"{where}{k}", f"unknown field of {what}{hint} (fields: {sorted(names)})")
        try:
            sig.bind(self, *args, **kwargs)
        except TypeError as e:
            field = where.rstrip(".") or what
            raise invalid(field, str(e) if field == what else f"{what}(...): {e}") from None
        init(self, *args, **kwargs)

    cls.__init__ = __init__  # type: ignore[misc]
    return cls
