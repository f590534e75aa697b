"""Frames derived from a run's samples and steps (polars only, no plotting): the numbers behind
:mod:`rollsim.plot`'s figures and :mod:`rollsim.resources`' metrics, kept in this lower layer so that
both use them without importing each other."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import polars as pl

from rollsim import _check
from rollsim.errors import invalid

__all__ = ["generation_span_s", "utilization_frame", "series_mean", "MAX_BINS"]

#: Most bins :func:`utilization_frame` builds.
MAX_BINS = 10**6


def generation_span_s(samples: pl.DataFrame, steps: pl.DataFrame) -> float | None:
    """Mean generation span of the batches of ``steps`` (a steps frame): for each step, from the
    first start to the last finish of the samples it trained (``samples``: a samples frame);
    seconds, or None when none of them trained a sample."""
    spans = (samples.filter(pl.col("trained_step").is_in(steps["step"].cast(pl.Int64).to_list()))
             .group_by("trained_step").agg((pl.col("finish_s").max() - pl.col("start_s").min()).alias("span")))
    return series_mean(spans["span"]) if spans.height else None


def series_mean(series: pl.Series) -> float:
    """The mean of a non-empty numeric series, as a float."""
    return float(cast(float, series.mean()))


def utilization_frame(
    samples: pl.DataFrame,
    *,
    rollout_slots: int,
    end_s: float,
    bin_s: float,
) -> pl.DataFrame:
    """Fraction of rollout slots busy per time bin, from the samples' busy intervals.

    A sample keeps its slot busy from ``start_s`` to ``finish_s`` (to ``end_s`` while in flight).

    Parameters
    ----------
    samples : polars.DataFrame
        The samples frame of a run (``start_s``, ``finish_s``).
    rollout_slots : int
        Pool size (>= 1).
    end_s : float
        End of the run, simulated seconds (> 0); the last bin is cut there.
    bin_s : float
        Bin width, simulated seconds (> 0), giving at most :data:`MAX_BINS` bins over the run
        (``bin_s >= end_s / MAX_BINS``: a frame of more rows is more than any plot shows).

    Returns
    -------
    polars.DataFrame
        ``start_s`` f64, ``end_s`` f64, ``utilization`` f64 in [0, 1] (slot-busy seconds / (slots x
        bin width)).

    Raises
    ------
    ValueError
        Non-positive or non-finite ``rollout_slots``, ``end_s`` or ``bin_s``; missing columns.
    """
    if not isinstance(samples, pl.DataFrame) or not {"start_s", "finish_s"} <= set(samples.columns):
        raise invalid("samples", "must be a samples frame with start_s and finish_s")
    if isinstance(rollout_slots, bool) or not isinstance(rollout_slots, (int, np.integer)) or rollout_slots < 1:
        raise invalid("rollout_slots", f"must be a positive integer, got {rollout_slots!r}")
    end_s = _check.number("end_s", end_s, what="a number of seconds")
    bin_s = _check.number("bin_s", bin_s, what="a number of seconds")
    nb = max(1, math.ceil(end_s / bin_s - 1e-9))
    if nb > MAX_BINS:
        enough = float(f"{end_s / MAX_BINS * 1.01:.3g}")  # rounded up: gives at most MAX_BINS bins
        raise invalid("bin_s", f"gives {nb} bins over the run's {end_s:g} s, more than {MAX_BINS}; pick bin_s >= "
                               f"end_s / {MAX_BINS} (e.g. {enough:g} s), got {bin_s!r}")
    edges = np.minimum(np.arange(nb + 1, dtype=np.float64) * bin_s, end_s)
    s = np.sort(np.minimum(samples["start_s"].to_numpy(), end_s))
    f = np.sort(np.minimum(samples["finish_s"].fill_null(end_s).to_numpy(), end_s))

    def busy_until(t: np.ndarray) -> np.ndarray:  # slot-busy seconds in [0, t]
        cs, cf = np.concatenate([[0.0], np.cumsum(s)]), np.concatenate([[0.0], np.cumsum(f)])
        i, j = np.searchsorted(s, t, side="right"), np.searchsorted(f, t, side="right")
        return (i * t - cs[i]) - (j * t - cf[j])

    b = busy_until(edges)
    u = np.diff(b) / (rollout_slots * np.diff(edges))
    return pl.DataFrame({"start_s": edges[:-1], "end_s": edges[1:], "utilization": np.clip(u, 0.0, 1.0)})
