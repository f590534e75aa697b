"""Means and confidence intervals over seeds: ``aggregate`` and the Student-t quantile behind it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from statistics import NormalDist

import numpy as np
import polars as pl

from rollsim.errors import invalid

__all__ = ["aggregate", "t_quantile"]

_NOT_METRICS = {"seed", "run_key", "scenario_key", "error"}


def _t_two_sided_mass(theta: float, df: int) -> float:
    """P(|T| <= sqrt(df) tan(theta)) for integer ``df`` (Abramowitz & Stegun 26.7.3 / 26.7.4)."""
    c2 = math.cos(theta) ** 2
    s = math.sin(theta)
    if df % 2 == 1:
        if df == 1:
            return 2.0 * theta / math.pi
        term, total = 1.0, 1.0
        for k in range(1, (df - 3) // 2 + 1):  # 1 + 2/3 c^2 + (2*4)/(3*5) c^4 + ...
            term *= (2 * k) / (2 * k + 1) * c2
            total += term
        return 2.0 / math.pi * (theta + s * math.cos(theta) * total)
    term, total = 1.0, 1.0
    for k in range(1, (df - 2) // 2 + 1):  # 1 + 1/2 c^2 + (1*3)/(2*4) c^4 + ...
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return s * total


def _cornish_fisher(p: float, df: int) -> float:
    """Student-t quantile from the normal one (Abramowitz & Stegun 26.7.5); error < 1e-9 for df > 1000."""
    z = NormalDist().inv_cdf(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` (integer) degrees of freedom.

    Exact up to float rounding for ``df <= 1000``: the closed-form CDF for integer degrees of freedom
    (Abramowitz & Stegun 26.7.3 and 26.7.4, finite sums in ``theta = atan(t / sqrt(df))``) is
    inverted by bisection on ``theta``; above 1000 the Cornish-Fisher expansion (A&S 26.7.5), whose
    error there is below 1e-9. No scipy needed. E.g. ``t_quantile(0.975, 4) = 2.7764451...``.

    Raises
    ------
    ScenarioError (ValueError)
        ``p`` outside (0, 1) or ``df`` not an integer >= 1.
    """
    if not 0.0 < p < 1.0:
        raise invalid("p", f"must be in (0, 1), got {p}")
    if isinstance(df, bool) or not isinstance(df, (int, np.integer)) or df < 1:
        raise invalid("df", f"must be an integer >= 1, got {df!r}")
    df = int(df)
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    if df > 1000:
        return _cornish_fisher(p, df)
    target = 2.0 * p - 1.0
    lo, hi = 0.0, math.pi / 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _t_two_sided_mass(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df) * math.tan(0.5 * (lo + hi))


def aggregate(
    frame: pl.DataFrame | pl.LazyFrame,
    metrics: str | Sequence[str] | None = None,
    ci: float = 0.95,
    by: str | Sequence[str] | None = None,
) -> pl.DataFrame:
    """Mean and confidence interval of each metric over the seeds of each scenario.

    The interval is ``mean +- t_{(1+ci)/2, n-1} * std / sqrt(n)`` (Student's t, ``std`` with
    ``n - 1`` in the denominator), ``n`` the seeds with a value: NaN and null values (e.g.
    ``staleness_mean_long`` of a run without long answers, or failed runs) are left out. Booleans
    count as 0/1 (the mean is a fraction).

    Parameters
    ----------
    frame : polars.DataFrame | polars.LazyFrame
        A frame from :func:`rollsim.sweep` (or :func:`rollsim.sweeps.read_sweep`); or a lazy one
        (``sweep(..., collect=False)``, :func:`rollsim.sweeps.scan_sweep`), aggregated without
        building the frame of all runs.
    metrics : str or list of str, optional
        Numeric or boolean columns to aggregate (one name is one column); by default every column that is not a grouping
        column, ``seed``, ``run_key``, ``scenario_key`` or ``error``.
    ci : float
        Confidence level, in (0, 1); 0.95 by default.
    by : str or list of str, optional
        Grouping columns (one name is one column); by default ``scenario_key`` and the varied-field columns (every column
        before ``seed``), i.e. one group per scenario.

    Returns
    -------
    polars.DataFrame
        One row per group in order of first appearance: the ``by`` columns; ``seeds`` (UInt32, rows
        in the group); and per metric ``m``: ``m_mean``, ``m_std``, ``m_ci_low``, ``m_ci_high``
        (Float64; std and the interval are null with fewer than two values).

    Raises
    ------
    ScenarioError (ValueError)
        ``ci`` outside (0, 1), or unknown / non-numeric columns in ``metrics`` or ``by``.
    """
    if not isinstance(frame, (pl.DataFrame, pl.LazyFrame)):
        raise invalid("frame", f"must be a polars.DataFrame or LazyFrame, got {type(frame).__name__}")
    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not 0.0 < float(ci) < 1.0:
        raise invalid("ci", f"must be a confidence level in (0, 1), got {ci!r}")
    schema = frame.collect_schema()
    cols = schema.names()
    if by is None:
        pre = cols[: cols.index("seed")] if "seed" in cols else []
        by = [c for c in pre if c != "scenario_key"] + (["scenario_key"] if "scenario_key" in cols else [])
    by = [by] if isinstance(by, str) else list(by)   # "steps" is one column, not five letters
    for c in by:
        if c not in cols:
            raise invalid("by", f"no column {c!r} (columns: {cols})")
    if metrics is None:
        metrics = [c for c in cols if c not in by and c not in _NOT_METRICS
                   and (schema[c].is_numeric() or schema[c] == pl.Boolean)]
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    for m in metrics:
        if m not in cols:
            raise invalid("metrics", f"no column {m!r} (columns: {cols})")
        if not (schema[m].is_numeric() or schema[m] == pl.Boolean):
            raise invalid("metrics", f"column {m!r} is {schema[m]}, not numeric")

    def val(m: str) -> pl.Expr:
        e = pl.col(m).cast(pl.Float64)
        return e.fill_nan(None)

    aggs: list[pl.Expr] = [pl.len().cast(pl.UInt32).alias("seeds")]
    for m in metrics:
        aggs += [val(m).mean().alias(f"{m}_mean"), val(m).std(ddof=1).alias(f"{m}_std"),
                 val(m).count().alias(f"__n_{m}")]
    if by:
        g = frame.group_by(by, maintain_order=True).agg(aggs)
    else:
        g = frame.select(aggs)
    if isinstance(g, pl.LazyFrame):
        g = g.collect()
    p = 0.5 * (1.0 + float(ci))
    out = []
    for m in metrics:
        n = g[f"__n_{m}"].to_numpy()
        t = np.array([t_quantile(p, int(k) - 1) if k >= 2 else np.nan for k in n])
        half = pl.Series(t) * g[f"{m}_std"] / pl.Series(np.sqrt(np.maximum(n, 1).astype(np.float64)))
        half = half.fill_nan(None)
        out += [(g[f"{m}_mean"] - half).alias(f"{m}_ci_low"), (g[f"{m}_mean"] + half).alias(f"{m}_ci_high")]
    g = g.with_columns(out)
    order = [*by, "seeds"]
    for m in metrics:
        order += [f"{m}_mean", f"{m}_std", f"{m}_ci_low", f"{m}_ci_high"]
    return g.select(order)
