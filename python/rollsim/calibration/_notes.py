"""The calibration's notes (:attr:`Calibrated.notes`): how the generation was read and fitted, and
the plausibility check of the fitted values (:data:`PLAUSIBLE`)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl

from rollsim.pipelines import FullyAsync
from rollsim.scenario import Scenario

from ._fit import _stream_rows, WAIT_SHARE
from ._simulate import _PauseFit, STREAM_MISFIT, _STREAM_SEEDS, _StreamFit, _WaitPauseFit


_WAIT_HEAD = {
    "verl": ("gen_s: timing_s/gen of a fully asynchronous run is the trainer's wait for samples (verl "
             "fully_async_trainer.py times 'gen' around _get_samples_from_queue), not the rollout's generation"),
    "areal": ("gen_s: timeperf/rollout of an asynchronous AReaL run (max_head_offpolicyness > 0) is the trainer's "
              "wait for samples (AReaL areal/trainer/rl_trainer.py times 'rollout' around actor.prepare_batch, "
              "which takes a batch from the running rollout), not the rollout's generation"),
    "slime": ("gen_s: perf/rollout_time of slime's fully asynchronous rollout is the time from the trainer taking "
              "the previous batch to this batch's collection from the running worker (slime/ray/rollout.py times "
              "RolloutManager.generate; train_async.py calls it as the trainer takes the previous batch), not the "
              "rollout's generation: the trainer's wait is read as perf/rollout_time less the previous row's "
              "training phases"),
}


def _notes(m: pl.DataFrame, reading: str | None, stream: _StreamFit | None = None,
           misfit: _StreamFit | None = None) -> tuple[str, ...]:
    """The calibration's caveats for this base and table (:attr:`Calibrated.notes`); ``reading``:
    :func:`_gen_reading`; ``stream``: the simulated fit of :func:`_stream_inference`, when it was used;
    ``misfit``: the simulated fit, when it was tried and left out (its rows' mean wall time off by over
    :data:`STREAM_MISFIT`)."""
    if reading is None:
        return ()
    _, paced = _stream_rows(m)
    if misfit is not None:
        return (f"{_WAIT_HEAD[reading]}: {misfit.why}, so the slots do not decode the rows' tokens back to back, but no "
                f"simulated run matched the rows (the best one's mean wall time per row off by {misfit.error[0]:+.1%}, "
                f"over {STREAM_MISFIT:.0%}): decode_tokens_per_s and gen_overhead_s are the closed form's, fitted on the "
                f"{int(paced.sum())} of {len(paced)} rows the rollout paced as if they did, and unreliable",)
    if stream is not None:
        return (f"{_WAIT_HEAD[reading]}: {stream.why}, so the slots do not decode the rows' tokens back to back: "
                f"decode_tokens_per_s and gen_overhead_s are those whose simulated run (rollsim, {len(_STREAM_SEEDS)} "
                f"seeds) gives the metrics' mean wall time per row and its slope on the tokens per slot "
                f"({stream.rounds} rounds, mean wall time off by {stream.error[0]:+.1%}"
                + (f", slope by {stream.error[1]:+.1%}" if math.isfinite(stream.error[1]) else "; no length drift: the "
                   "slope not fitted, gen_overhead_s kept") + "); "
                f"the rollout paced {int(paced.sum())} of {len(paced)} rows",)
    head = (f"{_WAIT_HEAD[reading]}: decode_tokens_per_s and gen_overhead_s are fitted on the wall time of the rows "
            f"the rollout paced (the trainer waited over {WAIT_SHARE:.0%} of the row)")
    if paced.sum() >= 3:
        return (f"{head}: {int(paced.sum())} of {len(paced)} rows",)
    if paced.any():
        return (f"{head}: {int(paced.sum())} of {len(paced)} rows, too few for the overhead (set to 0)",)
    return (f"{head}: none, the trainer set the pace in every row; decode_tokens_per_s is a lower bound (the "
            "slowest speed that kept up) and gen_overhead_s 0",)


def _profile_notes(sc: Scenario, reading: str | None, profile: _WaitPauseFit | None,
                   why: str | None) -> tuple[str, ...]:
    """How :func:`_wait_pause_profile` placed the speed and the pause (:attr:`Calibrated.notes`)."""
    assert reading is not None
    p = sc.pipeline
    assert isinstance(p, FullyAsync)
    head = (f"{_WAIT_HEAD[reading]}, and the rollout stops at max_lag_samples {p.max_lag_samples} until each parameter "
            "sync frees the trained answers' places (lag_release='sync'), then pauses at the weight load: the pause is "
            "on the rows' critical path")
    if profile is None:
        return (f"{head}, but {why}: decode_tokens_per_s and gen_overhead_s are the closed form's (the rows the rollout "
                "paced, without the pause), and unreliable",)
    kept = profile.kept()
    pauses, speeds = [q[0] for q in kept], [q[1] for q in kept]
    return (f"{head}: the rows do not separate decode_tokens_per_s from gen_overhead_s (the pause; a slower rollout "
            "with a shorter pause gives rows of about the same wall time and waits): profiled over the pause "
            f"({len(profile.points)} pauses simulated, rollsim, {len(_STREAM_SEEDS)} seeds, the speed at each the one "
            "whose rows take the metrics' mean wall time), within the 95 % bound the pause per weight load spans "
            f"{min(pauses):.3g}-{max(pauses):.3g} s and decode_tokens_per_s {min(speeds):.3g}-{max(speeds):.3g} "
            f"tokens/s; the values are the best fit's (mean wall time off by {profile.error:+.1%}), their intervals "
            "the range, and the bootstrap draws take pairs from it, so the what-if intervals carry it; "
            "step_s_predicted and gen_s_predicted are the simulated rows'",)


def _pause_notes(sc: Scenario, k: int, pause: _PauseFit | None, misfit: _PauseFit | None) -> tuple[str, ...]:
    """How :func:`_pause_inference` placed the rollout's pause (:attr:`Calibrated.notes`), when it ran."""
    fit_ = pause or misfit
    if fit_ is None:
        return ()
    p = sc.pipeline
    assert isinstance(p, FullyAsync)
    every = f"every {sc.sync_every} steps" if sc.sync_every > 1 else "every step"
    head = (f"rollout_pause_s: the rollout stops at max_lag_samples {p.max_lag_samples} until each parameter sync "
            f"frees the trained answers' places (lag_release='sync'), then pauses at the weight load ({every}): "
            "the pause is on the rows' critical path")
    if misfit is not None:
        what = (f"the simulated run at the fitted values completed {misfit.why}" if misfit.why else
                f"no simulated run matched the rows (the best one's mean wall time per row off by {misfit.error:+.1%}, "
                f"over {STREAM_MISFIT:.0%})")
        return (f"{head}, but {what}: decode_tokens_per_s and gen_overhead_s are the closed form's, fitted on gen_s "
                "alone (where the pause and the speed trade off), and unreliable",)
    assert pause is not None
    if pause.held:
        return (f"{head} when it outlasts the trainer's work on what is left in the queue; here the rows' wall time "
                f"does not tell it (the simulated rows, {len(_STREAM_SEEDS)} seeds, at gen_s's intercept within "
                f"{pause.error:+.1%} of the rows' mean wall time, and not moved by the pause: the trainer set the "
                "pace): gen_overhead_s kept, gen_s's intercept, where the pause and the speed trade off; "
                "step_s_predicted is the simulated rows'",)
    return (f"{head}: gen_overhead_s is the one whose simulated rows (rollsim, {len(_STREAM_SEEDS)} seeds, "
            f"{pause.rounds} candidates) take the rows' mean wall time (off by {pause.error:+.1%}), "
            "decode_tokens_per_s the slope of gen_s through it; step_s_predicted is the simulated rows'",)


#: Physically plausible ranges of a calibration's values, ``name: (low, high, unit)``; a fit outside
#: them gets a :class:`~rollsim.CalibrationPlausibilityWarning` (:func:`plausibility_notes`). Wide on
#: purpose (they catch wrong units, not slow clusters): one sequence decodes at tens to a few hundred
#: tokens/s on a current GPU (under 1 would be a 1T-parameter model on one GPU's memory bandwidth at
#: large batch; over 5000 beyond speculative decoding of a small model at batch 1); a weight sync
#: takes seconds to minutes even for 1T-parameter models (Kimi K2's weights reach thousands of inference
#: GPUs in about 20 s: the MoonshotAI/checkpoint-engine README), an hour is two orders of magnitude slower; a step, a fixed
#: training cost, or a generation overhead over a day (an hour for the overhead) is not a training
#: step; a training cost over 1 s per token is 10**4 to 10**6 times any dense or MoE model's.
PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "decode_tokens_per_s": (1.0, 5000.0, "tokens/s per sequence"),
    "weight_sync_s_per_sync": (0.0, 3600.0, "s per sync"),
    "step_s": (0.0, 86400.0, "s per step (measured mean)"),
    "gen_overhead_s": (0.0, 3600.0, "s per step"),
    "train_step_s": (0.0, 86400.0, "s per step"),
    "train_s_per_token": (0.0, 1.0, "s / token"),
}

#: How a plausibility note starts (``Calibrated.notes``; ``rollsim calibrate`` prints it as a warning).
IMPLAUSIBLE = "implausible fit:"


def plausibility_notes(values: dict[str, float], step_s: np.ndarray, steps_per_row: int = 1) -> tuple[str, ...]:
    """The calibration's values outside :data:`PLAUSIBLE` as one note (empty when none), also warned as a
    :class:`~rollsim.CalibrationPlausibilityWarning`. ``step_s``: the measured time of each metrics row
    (``steps_per_row`` steps, one sync). When every time-like value would be plausible at a thousandth
    (and the speed at 1000x), the note asks whether the timings are in milliseconds. The decode speed
    of a fit whose generation time does not grow with the tokens (1e9: no speed fitted) is not checked."""
    from rollsim.errors import CalibrationPlausibilityWarning

    k = steps_per_row
    step = float(np.mean(step_s)) / k if len(step_s) else 0.0
    got = {"decode_tokens_per_s": values["decode_tokens_per_s"], "weight_sync_s_per_sync": values["weight_sync_s"] * k,
           "step_s": step, "gen_overhead_s": values["gen_overhead_s"], "train_step_s": values["train_step_s"],
           "train_s_per_token": values["train_s_per_token"]}

    if got["decode_tokens_per_s"] >= 1e9:  # fit()'s mark of a generation time that does not grow with the tokens
        del got["decode_tokens_per_s"]     # (all overhead): no speed was fitted

    def outside(name: str, v: float) -> bool:
        lo, hi, _ = PLAUSIBLE[name]
        return not (math.isfinite(v) and lo <= v <= hi)

    bad = [name for name, v in got.items() if outside(name, v)]
    if not bad:
        return ()
    parts = []
    for name in bad:
        lo, hi, unit = PLAUSIBLE[name]
        rng = f"[{lo:g}, {hi:g}]" if lo > 0 else f"at most {hi:g}"
        parts.append(f"{name} = {got[name]:.3g} {unit} (plausible: {rng})")
    scaled = {name: v * 1000.0 if name == "decode_tokens_per_s" else v / 1000.0 for name, v in got.items()}
    ms = not any(outside(name, v) for name, v in scaled.items())
    hint = (" Timings in milliseconds? Every fitted time is about 1000x a plausible one: rollsim reads seconds "
            "(divide the timing columns by 1000)." if ms else
            " Check the metrics' units and that they are the run the config describes.")
    note = (f"{IMPLAUSIBLE} {'; '.join(parts)}, though the fit may match the rows closely.{hint}")
    warnings.warn(CalibrationPlausibilityWarning(note), stacklevel=4)  # _fit_base, calibrate, its caller
    return (note,)
