"""Run scenarios: ``simulate`` (one run, with frames) and ``compare`` (the chapter's table)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

import numpy as np
import polars as pl

from rollsim import _rollsim
from rollsim.errors import GenerationOutrunsTrainingWarning, RunStalledWarning, invalid
from rollsim.pipelines import FullyAsync, OneStepAsync, Synchronous
from rollsim.scenario import Scenario

__all__ = ["Result", "simulate", "compare", "SHORT_TOKENS", "LONG_TOKENS", "DEFAULT_MAX_SAMPLES"]

#: Answers shorter than this are "short" in ``summary["staleness_mean_short"]`` (the chapter's < 1K).
SHORT_TOKENS = 1000
#: Answers longer than this are "long" in ``summary["staleness_mean_long"]`` (the chapter's > 8K).
LONG_TOKENS = 8000
#: Default limit on samples started in one run (a memory guard: about 45 bytes per recorded sample).
DEFAULT_MAX_SAMPLES = 50_000_000

_STATUS = pl.Enum(["trained", "dropped", "ready", "in_flight"])
_NONE = 2**32 - 1  # "no value" in the engine's u32 columns


@dataclass(frozen=True)
class Result:
    """The outcome of one run.

    Attributes
    ----------
    scenario : Scenario
    summary : dict[str, float | int | bool]
        ``steps`` (completed training steps), ``steps_started``, ``end_s`` (simulated seconds
        covered), ``rollout_utilization`` (slot-busy seconds / (slots x end_s), busy time clipped to
        the end), ``slot_busy_s``, ``slot_idle_s``, ``trainer_busy_s``, ``trainer_idle_s``,
        ``samples_started`` = ``samples_trained + samples_dropped + samples_ready +
        samples_in_flight``, ``samples_finished``, ``drop_fraction`` (dropped / (trained + dropped)),
        ``staleness_mean`` / ``staleness_max`` (over trained samples), ``staleness_mean_short``
        (< 1000 tokens) / ``staleness_mean_long`` (> 8000 tokens) (NaN when no such sample),
        ``tokens_generated`` = ``tokens_trained + tokens_wasted + tokens_pending`` (wasted: dropped;
        pending: waiting in the ready queue or decoded so far by samples in flight), ``events``,
        ``ready_queue_growth_per_step``, ``generation_outruns_training``, ``throughput_ratio``.
    samples : polars.DataFrame
        One row per sample started (``record="samples"`` only): ``sample_id`` u32,
        ``length_tokens`` f64, ``start_s`` f64, ``finish_s`` f64 (null while in flight at the end),
        ``version_start`` u32, ``trained_step`` i64 (null if not trained), ``staleness`` i64
        (``trained_step - version_start``, null if not trained), ``dropped`` bool, ``slot`` u32,
        ``status`` enum (trained / dropped / ready / in_flight).
    steps : polars.DataFrame
        One row per training step started: ``step`` u32 (= the policy version it trains), ``start_s``,
        ``end_s``, ``staleness_mean`` f64, ``staleness_max`` u32, ``wait_s`` (trainer idle before the
        step), ``samples`` u32, ``tokens`` f64, ``ready_after`` u32 (samples left in the ready queue),
        ``completed`` bool (ended by ``summary["end_s"]``).
    """

    scenario: Scenario
    summary: dict[str, Any]
    steps: pl.DataFrame
    _samples: pl.DataFrame | None
    _segments: pl.DataFrame | None = None

    @property
    def samples(self) -> pl.DataFrame:
        if self._samples is None:
            raise invalid("record", "per-sample rows were not recorded; run simulate(..., record='samples')")
        return self._samples

    @property
    def segments(self) -> pl.DataFrame:
        """One row per token span of one policy version within one answer: ``sample_id`` u32,
        ``version`` u32, ``first_token`` f64, ``last_token`` f64 (exclusive; token positions are
        continuous since lognormal lengths are). Spans of an answer tile ``[0, tokens decoded)``;
        an answer whose weights changed mid-generation (``keep_*``, ``abort_resubmit``, partial
        rollout) has several."""
        if self._segments is None:
            raise invalid("record", "segments were not recorded; run simulate(..., record='samples')")
        return self._segments

    def staleness_by_length(self, edges: Sequence[float] = (1000, 2000, 4000, 8000, 16000)) -> pl.DataFrame:
        """Staleness and drop rate per answer-length bin.

        Returns a frame with ``bin`` (str, e.g. ``"[1000, 2000)"``), ``samples`` (finished and
        consumed: trained or dropped), ``trained``, ``dropped``, ``drop_rate``, ``staleness_mean``,
        ``staleness_max``, sorted by length."""
        e = [float(x) for x in edges]
        if sorted(e) != e or len(set(e)) != len(e):
            raise invalid("edges", f"must be strictly increasing, got {list(edges)}")
        labels = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
        df = self.samples.filter(pl.col("status").is_in(["trained", "dropped"]))
        # bin index by left-closed intervals [e_i, e_{i+1}); version-independent (no pl.cut)
        idx = np.searchsorted(np.asarray(e), df["length_tokens"].to_numpy(), side="right")
        return (
            df.with_columns(pl.Series("bin_index", idx, dtype=pl.UInt32))
            .group_by("bin_index")
            .agg(
                pl.len().alias("samples"),
                (pl.col("status") == "trained").sum().alias("trained"),
                pl.col("dropped").sum().alias("dropped"),
                pl.col("staleness").mean().alias("staleness_mean"),
                pl.col("staleness").max().alias("staleness_max"),
            )
            .with_columns((pl.col("dropped") / pl.col("samples")).alias("drop_rate"))
            .sort("bin_index")
            .with_columns(pl.col("bin_index").map_elements(lambda i: labels[i], return_dtype=pl.String).alias("bin"))
            .select("bin", "samples", "trained", "dropped", "drop_rate", "staleness_mean", "staleness_max")
        )


def _samples_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    n = cols["length_tokens"].shape[0]
    df = pl.DataFrame(
        {
            "sample_id": np.arange(n, dtype=np.uint32),
            "length_tokens": cols["length_tokens"],
            "start_s": cols["start_s"],
            "finish_s": cols["finish_s"],
            "version_start": cols["version_start"],
            "version_end": cols["version_end"],
            "version_finish": cols["version_finish"],
            "n_versions": cols["n_versions"],
            "group_id": cols["group_id"],
            "trained_step": cols["trained_step"],
            "dropped": cols["dropped"],
            "aborted": cols["aborted"],
            "slot": cols["slot"],
        }
    )
    trained = pl.col("trained_step") >= 0
    return df.with_columns(
        pl.col("finish_s").fill_nan(None),
        pl.when(trained).then(pl.col("trained_step")).alias("trained_step"),
        pl.when(trained).then(pl.col("trained_step") - pl.col("version_start").cast(pl.Int64)).alias("staleness"),
        pl.when(trained).then(pl.col("trained_step") - pl.col("version_finish").cast(pl.Int64)).alias("staleness_at_finish"),
        pl.when(pl.col("version_finish") != _NONE).then(pl.col("version_finish")).alias("version_finish"),
        pl.when(trained).then(pl.lit("trained"))
        .when(pl.col("dropped")).then(pl.lit("dropped"))
        .when(pl.col("finish_s").is_nan()).then(pl.lit("in_flight"))
        .otherwise(pl.lit("ready"))
        .cast(_STATUS)
        .alias("status"),
    ).select("sample_id", "group_id", "length_tokens", "start_s", "finish_s", "version_start", "version_end",
             "version_finish", "n_versions", "trained_step", "staleness", "staleness_at_finish", "dropped", "aborted",
             "slot", "status")


def _steps_frame(cols: dict[str, np.ndarray], end_s: float) -> pl.DataFrame:
    n = cols["start_s"].shape[0]
    return pl.DataFrame(
        {
            "step": np.arange(n, dtype=np.uint32),
            "start_s": cols["start_s"],
            "end_s": cols["end_s"],
            "staleness_mean": cols["staleness_mean"],
            "staleness_max": cols["staleness_max"],
            "wait_s": cols["wait_s"],
            "samples": cols["samples"],
            "tokens": cols["tokens"],
            "ready_after": cols["ready_after"],
            "tokens_wasted": cols["tokens_wasted"],
            "tokens_recomputed": cols["tokens_recomputed"],
            "slot_idle_s": cols["slot_idle_s"],
            "completed": cols["end_s"] <= end_s,
        }
    )


def _segments_frame(cols: dict[str, np.ndarray]) -> pl.DataFrame:
    return pl.DataFrame({k: cols[k] for k in ("sample_id", "version", "first_token", "last_token")})


def _warn_outrun(sc: Scenario, summary: dict[str, Any]) -> None:
    if summary["generation_outruns_training"]:
        warnings.warn(
            GenerationOutrunsTrainingWarning(
                f"generation outruns training: the ready queue grows by "
                f"{summary['ready_queue_growth_per_step']:.0f} samples per step (rollout/training throughput "
                f"ratio {summary['throughput_ratio']:.2f}); staleness grows without bound. Add a staleness cap, "
                f"fewer rollout_slots, or a larger batch_size."
            ),
            stacklevel=3,
        )


def simulate(
    scenario: Scenario | None = None,
    *,
    record: Literal["samples", "summary"] = "samples",
    max_samples: int = DEFAULT_MAX_SAMPLES,
    _general_engine: bool = False,
) -> Result:
    """Runs one scenario.

    Parameters
    ----------
    scenario : Scenario, optional
        Defaults to ``Scenario()`` (the chapter's fully asynchronous scenario).
    record : "samples" | "summary"
        ``"summary"`` skips the per-sample rows (faster, constant memory; for sweeps).
    max_samples : int
        Refuse runs that would start more samples than this (memory guard), in [1, 2**32 - 1].

    Returns
    -------
    Result
        ``summary`` dict, ``steps`` frame and (``record="samples"``) ``samples`` frame.

    Raises
    ------
    ScenarioError (ValueError)
        Invalid scenario or options, or more than ``max_samples`` samples.
    KeyboardInterrupt
        Ctrl-C during the run (the run releases the GIL and checks for signals).

    Warns
    -----
    GenerationOutrunsTrainingWarning
        Fully asynchronous without a cap, and the ready queue grows step after step.
    """
    sc = Scenario() if scenario is None else scenario
    if not isinstance(sc, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(sc).__name__}")
    if record not in ("samples", "summary"):
        raise invalid("record", f"must be 'samples' or 'summary', got {record!r}")
    if isinstance(max_samples, bool) or not isinstance(max_samples, int) or not 1 <= max_samples <= 2**32 - 1:
        raise invalid("max_samples", f"must be an integer in [1, 2**32 - 1], got {max_samples!r}")
    # _general_engine: run the general streaming engine even where the fully-async fast path
    # applies (tests cross-check the two)
    out = _rollsim.simulate(sc.to_dict(), record == "samples", max_samples, bool(_general_engine))
    summary = out["summary"]
    _warn_outrun(sc, summary)
    if summary["stalled"]:
        warnings.warn(
            RunStalledWarning(
                f"the run stalled at t = {summary['end_s']:.1f} s before horizon_s = {sc.horizon_s:g} s: no slot can "
                f"start work and the trainer cannot form a batch (e.g. admission control or a length-balanced quota "
                f"that cannot fill)"
            ),
            stacklevel=2,
        )
    samples = None if out["samples"] is None else _samples_frame(out["samples"])
    segments = None if out["segments"] is None else _segments_frame(out["segments"])
    return Result(sc, summary, _steps_frame(out["steps"], summary["end_s"]), samples, segments)


#: The four rows of the chapter's comparison.
CHAPTER_PIPELINES = (
    ("synchronous", Synchronous()),
    ("one-step async", OneStepAsync()),
    ("fully async", FullyAsync()),
    ("fully async, cap 2", FullyAsync(max_staleness=2)),
)


def compare(
    scenario: Scenario | None = None,
    pipelines: Iterable[tuple[str, Any]] = CHAPTER_PIPELINES,
    *,
    max_samples: int = DEFAULT_MAX_SAMPLES,
) -> pl.DataFrame:
    """Runs ``scenario`` under each pipeline: the chapter's comparison table.

    Returns a frame, one row per pipeline: ``pipeline`` (str), ``steps``, ``rollout_utilization``,
    ``staleness_mean``, ``staleness_max``, ``drop_fraction``, ``staleness_mean_short`` (< 1K tokens),
    ``staleness_mean_long`` (> 8K tokens), ``samples_trained``, ``samples_dropped``,
    ``tokens_wasted``, ``end_s``."""
    sc = Scenario() if scenario is None else scenario
    rows = []
    for name, pipeline in pipelines:
        s = simulate(sc.replace(pipeline=pipeline), record="summary", max_samples=max_samples).summary
        rows.append({"pipeline": name} | {k: s[k] for k in (
            "steps", "rollout_utilization", "staleness_mean", "staleness_max", "drop_fraction",
            "staleness_mean_short", "staleness_mean_long", "samples_trained", "samples_dropped",
            "tokens_wasted", "end_s")})
    return pl.DataFrame(rows)
