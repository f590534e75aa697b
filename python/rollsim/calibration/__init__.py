"""Calibrate a scenario on a run's per-step metrics (:func:`calibrate`).

A user has a config (imported with :func:`rollsim.configs.load`) and a baseline run's per-step
metrics with the framework's own names. :func:`calibrate` reads the table, maps the names to a generic
schema (:data:`GENERIC`), and fits, with a bootstrap interval over steps for each parameter:

- the answer lengths: ``min(LogNormal(mu_t, sigma), max_tokens)`` with ``mu_t = mu + drift * step``,
  from each step's mean, max and clip ratio (lengths grow during RL training);
- the decode speed of one sequence and the per-step generation overhead, from the generation time
  against the step's longest answer (``gen_s = overhead + max(max_len, mean_len * batch / slots) /
  decode_tokens_per_s``: rollsim's independent-slot model, in which a batch waits for its longest
  answer, or for the slots' share of the tokens when there are fewer slots than samples);
- the training cost: fixed seconds + seconds per token, from the update phases against the tokens
  of the batch (and the log-prob recompute phase apart, when logged: ``logprob_step_s`` +
  ``logprob_s_per_token``; the scenario's ``train_step_s`` includes ``logprob_step_s``);
- the weight-sync time, from its phase.

With a batch pipeline's over-sampling the logged lengths are the trained answers, the batch's
shortest; the generated distribution is found by matching simulated trained answers to them
(:func:`_length_bias`).

The fitted scenario is the base's at the run's middle step (its lengths ``mu + drift * middle``).

One metrics row may cover several training steps (``steps_per_row = k``: the verl fully async recipe
logs one row per weight sync, ``trigger_parameter_sync_step`` local updates with every ``timing_s/*``
summed, the lengths' mean averaged and their max taken over all of them; volcengine/verl
``verl/experimental/fully_async_policy/detach_utils.py``, ``MetricsAggregator``). A row then holds
``k x batch_size`` answers (the lengths are fitted on that many), its phases are sums over ``k``
updates and its sync happens once. The fit is made per row and expressed per rollsim step: fixed
costs per update are the row's over ``k``, per-token costs are unchanged, and the row's one sync is
spread over its ``k`` steps (``weight_sync_s`` = sync / k: the engine adds ``weight_sync_s`` after
every step; ``params`` also gives the time per sync), and the generation overhead becomes the pause at
the row's weight load. For a fully asynchronous base whose ``gen_s`` is the trainer's wait for samples
(verl's fully async ``timing_s/gen``, AReaL's ``timeperf/rollout`` with ``max_head_offpolicyness`` > 0;
slime's fully async ``perf/rollout_time``, the time since the trainer took the previous batch, less
the previous row's training: :data:`ASYNC_GEN_METRICS`) the decode speed and overhead come from the
wall time of the rows the rollout paced (:func:`_fit_stream`). A fully asynchronous base whose lag bound
frees its places only at a sync (``lag_release="sync"``) has the rollout's pause on its rows' critical
path: with ``gen_s`` the generation and ``step_s`` logged, the pause is the one whose simulated rows take
the rows' wall time, the speed the slope of ``gen_s`` through it (:func:`pause_on_critical_path`,
:func:`_pause_inference`); with ``gen_s`` the trainer's wait (verl's own fully async rows) the speed and the
pause trade off, and they are profiled over the pause by simulating the rows, their intervals spanning
the profile's 95 % range (:func:`_wait_pause_profile`). The length drift and the reference step count
rollsim steps (a row at the middle of its steps, logged step x k + (k - 1) / 2). Residuals stay per
metrics row.

The package's modules: ``_metrics`` (reading a table, the framework names, the column resolution and
checks), ``_fit`` (the closed-form fits), ``_simulate`` (the fits that simulate candidates' rows),
``_notes`` (what :attr:`Calibrated.notes` says, and the plausibility check), ``_result``
(:class:`Calibrated`), ``_calibrate`` (:func:`calibrate`) and ``_synthetic`` (:func:`synthetic_metrics`).
"""

# every name the single module rollsim/calibration.py gave (its public names, and the private ones other
# modules, tests and docs use), importable from the package as before
from rollsim.errors import MetricNearMissWarning, MetricsRowsSkippedWarning  # noqa: F401

from ._calibrate import calibrate
from ._fit import PARAMS, UNITS, WAIT_SHARE, _stream_rows, _trunc_mean, fit, fit_lengths  # noqa: F401
from ._metrics import (ASYNC_GEN_METRICS, FRAMEWORK_METRICS, GENERIC, _NOT_LOGGED,  # noqa: F401
                       _families, normalize, read_metrics)
from ._notes import IMPLAUSIBLE, PLAUSIBLE, plausibility_notes  # noqa: F401
from ._result import Calibrated
from ._simulate import (STREAM_MISFIT, _Incomplete, _rows_simulated, _trained_lengths,  # noqa: F401
                        _wait_pause_profile, pause_on_critical_path, stream_needs_simulation)
from ._synthetic import synthetic_metrics  # noqa: F401

__all__ = ["calibrate", "Calibrated", "GENERIC", "FRAMEWORK_METRICS", "read_metrics", "normalize", "fit"]
