"""Sweeps with every learning-side metric (:mod:`rollsim.learning`) beside throughput. Each run is
simulated with ``record="samples"``, so this suits grids of tens to hundreds of runs. The token metrics
(clip, TIS, IcePop, token ESS, the length gap) need no samples: ``rollsim.sweep(..., learning=True)``
gives them, with the same values, for the millions of runs summary mode handles; this function is for
the sequence-level ones (``seq_truncated``, ``seq_masked``, ``gspo_clipfrac``, ``ess_seq``,
``ess_gspo``), which need each sample's spans."""

from __future__ import annotations

import itertools
import math
from typing import Any

import polars as pl

from rollsim.errors import invalid
from rollsim.learning import DriftModel, learning
from rollsim.scenario import Scenario
from rollsim.simulation import simulate

__all__ = ["learning_sweep", "SWEEP_METRICS"]

SWEEP_METRICS = ("pg_clipfrac", "clip_fraction", "tis_truncated", "icepop_masked", "seq_truncated", "seq_masked",
                 "gspo_clipfrac", "ess_token", "ess_seq", "ess_gspo", "trained_length_mean", "generated_length_mean",
                 "length_gap")
"""The learning metrics :func:`learning_sweep` adds to each run's row."""


def learning_sweep(scenario: Any = None, grid: Any = None, *, seeds: Any = (0,), model: DriftModel | None = None,
                   max_samples: int | None = None, **rules: Any) -> pl.DataFrame:
    """A grid sweep with the learning metrics beside throughput: one row per (grid point, seed).

    Every run here is simulated with ``record="samples"``, one after the other: use it for grids of
    tens to hundreds of runs, and for the sequence-level metrics; ``rollsim.sweep(..., learning=True)``
    gives the token-level ones (same values) in summary mode. The frame
    has the layout of a sweep frame (varied fields as columns, ``seed``, metrics), so
    :func:`rollsim.plot.sweep_heatmap` / :func:`rollsim.plot.sweep_lines` plot it, e.g. the clip
    fraction and the length gap over ``pipeline.max_staleness`` x ``pipeline.admission_eta``.

    Parameters
    ----------
    scenario : Scenario, optional
        The base scenario (default ``Scenario()``).
    grid : dict of str to list, optional
        Field (dotted names reach into parts: ``"pipeline.max_staleness"``) -> values; the Cartesian
        product is run. None: the base scenario alone.
    seeds : sequence of int
        Seeds of each point (default ``(0,)``).
    model : DriftModel, optional
        Drift model (default: the fitted defaults).
    max_samples : int, optional
        Passed to :func:`rollsim.simulate`.
    **rules
        Rule parameters of :func:`learning` (``clip_low``, ``tis_cap``, ...).

    Returns
    -------
    polars.DataFrame
        The varied fields, ``seed``, ``steps``, ``tokens_per_s`` (trained tokens per simulated second),
        ``staleness_mean``, ``drop_fraction``, ``rollout_utilization``, and :data:`SWEEP_METRICS`.

    Raises
    ------
    ScenarioError (ValueError)
        A bad grid (not a dict of non-empty lists), field, value, seed or rule.
    """
    base = Scenario() if scenario is None else scenario
    if not isinstance(base, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(base).__name__}")
    if grid is None:
        grid = {}
    if not isinstance(grid, dict) or not all(isinstance(k, str) for k in grid):
        raise invalid("grid", f"must be a dict of field name -> list of values, got {type(grid).__name__}")
    for k, vals in grid.items():
        if isinstance(vals, (str, bytes)) or not isinstance(vals, (list, tuple)) or not vals:
            raise invalid(f"grid.{k}", f"must be a non-empty list of values, got {vals!r}")
    if isinstance(seeds, (str, bytes)) or not isinstance(seeds, (list, tuple, range)) or not seeds:
        raise invalid("seeds", f"must be a non-empty sequence of integers, got {seeds!r}")
    keys = list(grid)
    rows = []
    for point in itertools.product(*(grid[k] for k in keys)):
        sc = base.replace(**dict(zip(keys, point)))
        for seed in seeds:
            res = simulate(sc.replace(seed=seed), max_samples=max_samples)
            out = learning(res, model, **rules)
            sm = res.summary
            row: dict[str, Any] = dict(zip(keys, point))
            row.update(seed=seed, steps=sm["steps"], tokens_per_s=sm["tokens_trained"] / sm["end_s"],
                       staleness_mean=sm["staleness_mean"], drop_fraction=sm["drop_fraction"],
                       rollout_utilization=sm["rollout_utilization"])
            row.update({k: out.summary.get(k, math.nan) for k in SWEEP_METRICS})
            rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)
