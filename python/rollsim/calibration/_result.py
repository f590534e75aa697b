"""The result of :func:`calibrate`: :class:`Calibrated`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from rollsim.lengths import LengthDrift, LogNormal
from rollsim.scenario import Scenario

from ._fit import _apply


@dataclass(frozen=True)
class Calibrated:
    """The result of :func:`calibrate`. Its ``notes`` also say what :func:`calibrate` left out (the
    metrics rows with a missing value, by metric and step; a metric with no value) and what it inferred
    or assumed for a Deployment base.

    Attributes
    ----------
    scenario : Scenario
        The base scenario with the fitted parameters, lengths at the run's middle step.
    params : polars.DataFrame
        One row per parameter: ``name``, ``value``, ``low``, ``high`` (bootstrap 2.5 / 97.5 %
        quantiles over rows), ``unit``, ``source`` (the metrics it came from); per rollsim step, and
        with ``steps_per_row`` > 1 a ``weight_sync_s_per_sync`` row (the row's one sync).
    residuals : polars.DataFrame
        Per metrics row (the user's unit: ``steps_per_row`` training steps): the logged ``step``,
        measured and predicted ``gen_s``, ``train_s``, ``step_s`` (seconds per row), the answer
        lengths' mean (tokens), and ``step_error`` (predicted / measured - 1).
    draws : tuple of dict
        The bootstrap fits (parameter name -> value), for intervals of predictions.
    metrics : polars.DataFrame
        The normalised metrics (generic columns; ``step`` in rollsim steps: the middle of the row's,
        logged step x ``steps_per_row`` + (``steps_per_row`` - 1) / 2).
    framework : str
        Whose metric names were read (``verl``, ``areal``, ``slime``, ``openrlhf`` or ``generic``).
    base : object
        The ImportedConfig, Deployment or Scenario calibrated.
    layout : object or None
        The base's GPU layout (:class:`rollsim.configs.Layout`), when it came from a config or a
        deployment.
    reference_step : float
        The step whose lengths the scenario uses.
    values : dict of str to float
        The fitted parameters (name -> value).
    hardware : dict or None
        What :func:`rollsim.whatif` rescales the training cost with when the training GPUs change
        (:func:`rollsim.what_if.train_scale`): ``model`` (a ``ModelSpec``), ``gpu`` (an
        ``Accelerator``), ``backend`` and ``options`` (keyword arguments of
        :func:`rollsim.hardware.training.train_step_s`); ``model`` or ``gpu`` is None when neither
        the call nor the base named it.
    steps_per_row : int
        Training steps one metrics row covers (1, or the verl fully async recipe's
        ``trigger_parameter_sync_step``): :func:`rollsim.whatif` reports step times per row.
    notes : tuple of str
        How the fit read what is not a generation phase (``rollsim calibrate`` and ``rollsim whatif``
        print them on stderr): a verl fully async ``timing_s/gen`` or an asynchronous AReaL
        ``timeperf/rollout`` is the trainer's wait for samples, and slime's fully async
        ``perf/rollout_time`` gives it (:data:`ASYNC_GEN_METRICS`); the generation is then fitted on
        the wall time of the rows the rollout paced (:func:`_fit_stream`), or is a lower bound when
        there are none.
    """

    scenario: Scenario
    params: pl.DataFrame
    residuals: pl.DataFrame
    draws: tuple[dict[str, float], ...]
    metrics: pl.DataFrame
    framework: str
    base: Any
    layout: Any = None
    reference_step: float = 0.0
    values: dict[str, float] = field(default_factory=dict)
    hardware: dict[str, Any] | None = None
    steps_per_row: int = 1
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """A few lines a reader can take in (the fields hold frames, bootstrap draws and the imported
        config: their full repr runs to tens of thousands of characters): the framework, the rows fitted,
        each fitted value with its unit and interval, and how many notes there are."""
        rows = [f"Calibrated(framework={self.framework!r}, {self.residuals.height} metrics rows"
                + (f" of {self.steps_per_row} steps" if self.steps_per_row > 1 else "")
                + f", {len(self.draws)} bootstrap draws, {len(self.notes)} notes; .params, .residuals, .scenario:"]
        for r in self.params.iter_rows(named=True):
            unit = f" {r['unit']}" if r.get("unit") not in (None, "", "-") else ""
            rows.append(f"  {r['name']} = {r['value']:.4g}{unit} [{r['low']:.4g}, {r['high']:.4g}]")
        return "\n".join(rows) + ")"

    def scenario_for(self, values: dict[str, float], step: float | None = None) -> Scenario:
        """The base scenario with ``values`` (a fit or a bootstrap draw) at ``step`` (default: the
        reference step)."""
        return _apply(self.scenario, values, self.reference_step if step is None else step, self.steps_per_row)

    def length_drift(self, values: dict[str, float] | None = None) -> tuple[LogNormal, LengthDrift]:
        """The fitted lengths as a drift the engine applies inside a run: ``(base, drift)`` with
        ``base`` the lengths of the run's first logged step ``s0`` (``LogNormal(mu + drift * s0,
        sigma, max_tokens)``: policy version 0) and ``drift = LengthDrift("exp", rate=drift)``, so
        that version ``t`` draws the fitted ``mu_t = mu + drift * (s0 + t)`` (a lognormal whose
        tokens are scaled by ``exp(drift * t)`` is the one with ``mu + drift * t``, cut at the same
        cap). Use as ``sc.replace(lengths=base, length_drift=drift)``; ``values``: a fit or a
        bootstrap draw (default: the fit)."""
        v = self.values if values is None else values
        base = self.scenario_for(v, float(self.metrics["step"].min())).lengths  # type: ignore[arg-type]
        assert isinstance(base, LogNormal)
        return base, LengthDrift("exp", rate=float(np.clip(v["lengths.drift"], -1.0, 100.0)))

    def measured_step_s(self) -> float:
        """The run's mean time per metrics row (``steps_per_row`` training steps), seconds
        (``step_s``, else the sum of the phases)."""
        return float(self.residuals["step_s_measured"].mean())  # type: ignore[arg-type]
