"""Published systems' configurations mapped onto scenarios.

Each function takes the knob the system exposes, and an optional base ``scenario`` (pool, trainer,
lengths, groups, prompts; default ``Scenario()``), and returns a ``Scenario`` whose pipeline follows
that system's rules as described in its public docs and code (cited in each function's
docstring). Where a system's behaviour had to be approximated, the docstring
says how. Use :func:`compare` for a side-by-side table.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import polars as pl

from rollsim import _check
from rollsim.errors import GenerationOutrunsTrainingWarning, invalid
from rollsim.pipelines import FullyAsync, OneStepAsync, Synchronous
from rollsim.scenario import MAX_COUNT, Scenario
from rollsim.simulation import DEFAULT_MAX_EVENTS, check_max_events, check_runaway, simulate_labelled

__all__ = ["areal", "verl_fully_async", "pipeline_rl", "slime_partial_rollout", "prime_rl", "nemo_rl_async", "compare",
           "PRESETS"]


def _base(scenario: Scenario | None) -> Scenario:
    if scenario is None:
        return Scenario()
    if not isinstance(scenario, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(scenario).__name__}")
    return scenario





def areal(eta: int = 2, *, interruptible: bool = True, scenario: Scenario | None = None) -> Scenario:
    """AReaL (Fu et al., arXiv 2505.24298): fully asynchronous with admission control.

    * ``eta`` = ``max_head_offpolicyness``: a group starts only while
      ``accepted + running + group_size <= (eta + version + 1) * batch_size`` (the staleness
      manager's capacity rule); nothing is dropped.
    * Batches take the oldest samples first.
    * ``interruptible=True`` (the paper's interruptible generation): at each weight update the
      in-flight requests are interrupted and resubmitted as prompt + partial answer under the new
      weights (``on_update="abort_resubmit"``: one prefill of the context so far).
      ``interruptible=False`` is the baseline of the paper's ablation of interruptible generation:
      a weight update waits until the requests in flight have finished, the longest response
      included, and no request starts meanwhile (``on_update="wait"``: the pool drains).

    Parameters
    ----------
    eta : int
        ``max_head_offpolicyness``, >= 0.
    interruptible : bool
        Interruptible generation (True) or drain before every update (False).
    scenario : Scenario, optional
        The base scenario (default ``Scenario()``).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        A knob out of range.
    """
    eta = _check.integer("eta", eta, 0)
    interruptible = _check.flag("interruptible", interruptible)
    return _base(scenario).replace(pipeline=FullyAsync(
        admission_eta=eta, batch_order="oldest_first", on_update="abort_resubmit" if interruptible else "wait"))


def verl_fully_async(staleness_threshold: float = 0.5, partial_rollout: bool = True, *,
                     gated_on_sync: bool = True, trigger_parameter_sync_step: int | None = None,
                     scenario: Scenario | None = None) -> Scenario:
    """verl ``fully_async_policy`` (verl docs, advance/fully_async.md; volcengine/verl
    ``verl/experimental/fully_async_policy/README.md``).

    * ``trigger_parameter_sync_step`` = ``N``: the trainer syncs the parameters to the rollouter after
      every ``N`` local updates (one rollsim training step = one local update of
      ``require_batches * ppo_mini_batch_size`` samples, the base scenario's ``batch_size``):
      ``sync_every = N``. verl's default is 4 (``async_training.trigger_parameter_sync_step: 4`` in
      ``verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml``); ``None`` (default)
      keeps the base scenario's ``sync_every`` (1 for ``Scenario()``, so that the preset's results stay
      those of a sync after every update).
    * The rollouter may produce at most ``(1 + staleness_threshold) * N * batch`` samples per parameter
      sync window (the README's ``rollout_num``); modelled as a bound on samples started and not yet
      trained: ``max_lag_samples = ceil((1 + staleness_threshold) * N * batch_size)`` (our
      approximation of the window accounting, which also subtracts the stale samples of the last
      window).
    * ``gated_on_sync``: whether the places of a trained batch are given back only once the new
      weights are synced (``lag_release="sync"``, the default), or already when the trainer takes the
      batch (``"take"``). verl's rollouter counts the prompts it starts (``staleness_samples``,
      incremented in ``_processor_worker``), pauses at ``max_required_samples``
      (``_should_pause_generation``), and resets the count only at a parameter sync, to the prompts
      still in flight or queued: ``reset_staleness`` after ``checkpoint_manager.update_weights`` in
      ``_fit_update_weights`` (verl-project/verl ``verl/experimental/fully_async_policy/
      fully_async_rollouter.py`` and ``fully_async_trainer.py`` at 1dda039, 2026-08-22), the same rule
      as ``update_param_version`` called from ``ParameterSynchronizer.sync_weights`` after the weights
      are loaded (volcengine/verl ``fully_async_rollouter.py`` and ``param_sync.py`` at b178a3c,
      2026-01-29; ``recipe/fully_async_policy/fully_async_rollouter.py`` at b25bb7d, 2025-10-17). The
      trainer taking a batch frees no place, and the monitor loop resumes generation only when
      ``_should_pause_generation`` is false, which checks that count: ``"sync"``. With
      ``staleness_threshold = 0`` and ``trigger_parameter_sync_step = 1`` this is the documented
      on-policy mode (every sample staleness 0; generation and training alternate); verl-project/verl
      issue 4449 reads the code as resuming when the queue drains (one step off-policy), which is
      ``gated_on_sync=False`` (``"take"``), kept to compare.
      With ``N > 1`` and ``staleness_threshold = 0`` (verl's "stream off policy" mode), the ``k``-th
      update of a window trains samples ``k - 1`` versions old.
    * ``partial_rollout=True``: at a sync, in-flight requests are paused and resumed with the new
      weights (``keep_recompute``: one prefill of the context); ``False``: the sync waits for them to
      finish (``wait``).

    Parameters
    ----------
    staleness_threshold : float
        verl's ``async_training.staleness_threshold``, in [0, 1e6). The default, 0.5, is the value of
        the published experiments this preset is checked against (``docs/advance/fully_async.md``,
        7B and 30B sections), not verl's own default, 0.1
        (``verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml``), which
        :func:`rollsim.configs.load` takes for a config that does not set it.
    partial_rollout : bool
        verl's ``async_training.partial_rollout``.
    gated_on_sync : bool
        Generation of the next window waits for the parameter sync (verl's rollouter, the default)
        instead of resuming when the trainer takes its batch (``False``).
    trigger_parameter_sync_step : int, optional
        verl's ``async_training.trigger_parameter_sync_step``, local updates per parameter sync, in
        [1, 2**24]; ``None``: the base scenario's ``sync_every``.
    scenario : Scenario, optional
        The base scenario (default ``Scenario()``).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        A knob out of range.
    """
    if isinstance(staleness_threshold, bool) or not isinstance(staleness_threshold, (int, float)) \
            or not 0 <= staleness_threshold < 1e6:
        raise invalid("staleness_threshold", f"must be a number >= 0, got {staleness_threshold!r}")
    partial_rollout = _check.flag("partial_rollout", partial_rollout)
    gated_on_sync = _check.flag("gated_on_sync", gated_on_sync)
    base = _base(scenario)
    every = base.sync_every if trigger_parameter_sync_step is None else _check.integer(
        "trigger_parameter_sync_step", trigger_parameter_sync_step, 1, MAX_COUNT)
    lag = max(base.group_size, math.ceil((1.0 + staleness_threshold) * every * base.batch_size))
    return base.replace(sync_every=every, pipeline=FullyAsync(
        max_lag_samples=lag, on_update="keep_recompute" if partial_rollout else "wait",
        lag_release="sync" if gated_on_sync else "take"))


def pipeline_rl(max_lag: int | None = None, *, scenario: Scenario | None = None) -> Scenario:
    """PipelineRL (ServiceNow; Piché et al., arXiv 2509.19128): in-flight weight updates.

    * After each optimizer step the new weights are loaded into the inference engines without
      stopping generation: in-flight sequences continue on their old KV cache with the new weights
      (``on_update="keep_stale"``; tokens of one answer mix versions).
    * ``max_lag``: a bound, in samples, on generation running ahead of training (samples started and
      not yet trained); default two batches.
    """
    base = _base(scenario)
    lag = 2 * base.batch_size if max_lag is None else max_lag
    if isinstance(lag, bool) or not isinstance(lag, int) or lag < base.batch_size:
        raise invalid("max_lag", f"must be an integer >= batch_size ({base.batch_size}), got {max_lag!r}")
    return base.replace(pipeline=FullyAsync(max_lag_samples=lag, on_update="keep_stale"))


def slime_partial_rollout(over_sampling: float = math.inf, *, one_step: bool = False,
                          scenario: Scenario | None = None) -> Scenario:
    """slime ``--partial-rollout`` (THUDM/slime; also Kimi k1.5): synchronous training whose rollout
    keeps every slot busy with more prompts than the batch needs (``--over-sampling-batch-size``;
    ``math.inf``: unlimited), stops when the batch is full, and puts the unfinished answers back in
    the buffer; they continue first in the next step with the new weights (prefill of prompt +
    partial answer). ``one_step=True`` uses ``train_async.py`` (generation one step ahead)."""
    pipeline_cls = OneStepAsync if _check.flag("one_step", one_step) else Synchronous
    return _base(scenario).replace(pipeline=pipeline_cls(over_sampling=over_sampling, keep_partial=True))


def prime_rl(async_level: int = 2, max_off_policy_steps: int | None = 8, *,
             scenario: Scenario | None = None) -> Scenario:
    """PRIME-RL (PrimeIntellect): inference may run up to ``async_level`` steps ahead of the trainer
    (PRIME-RL docs, "Asynchronous Training"; default 2), modelled as at most
    ``(async_level + 1) * batch_size`` samples started and not yet trained (the same accounting as
    tinker's ``sampling_steps_ahead``); samples older than ``max_off_policy_steps`` are dropped at
    consumption. In-flight requests keep the weights they started with (``continue``): an
    assumption, PRIME-RL reloads weights between requests."""
    async_level = _check.integer("async_level", async_level, 0)
    if max_off_policy_steps is not None:
        max_off_policy_steps = _check.integer("max_off_policy_steps", max_off_policy_steps, 0)
    base = _base(scenario)
    return base.replace(pipeline=FullyAsync(
        max_lag_samples=(async_level + 1) * base.batch_size, max_staleness=max_off_policy_steps))


def nemo_rl_async(max_trajectory_age_steps: int = 1, in_flight_weight_updates: bool = False, *,
                  scenario: Scenario | None = None) -> Scenario:
    """NeMo RL async GRPO (NVIDIA-NeMo/RL ``nemo_rl/algorithms/async_utils.py`` at v0.6.0, the same at
    the merge of NVIDIA-NeMo/RL PR 1381; ``docs/guides/async-grpo.md``): rollout on its own GPUs,
    admission control, nothing dropped.

    * ``max_trajectory_age_steps = k``: the trajectory collector, holding weights ``v``, starts the
      prompts of a batch only for a training step in ``v + 1 .. v + k`` not yet generated
      (``_calculate_target_weights``), so at most ``v + k + 1`` batches are ever started and a
      trajectory is at most ``k`` versions old when trained; the replay buffer never drops one
      (``ReplayBuffer.sample`` raises on an older one). That is AReaL's capacity rule with
      ``eta = k`` (``admission_eta``); batches take the oldest trajectories first.
    * ``in_flight_weight_updates``: True (with vLLM's async engine) updates the weights while the
      requests in flight continue on their old KV cache (``on_update="keep_stale"``;
      ``recompute_kv_cache_after_weight_updates`` false, its default); False waits for every pending
      generation before the update, no request starting meanwhile (``prepare_for_refit`` ->
      ``wait_for_pending_generations``: ``on_update="wait"``).

    Approximated: NeMo RL fixes a batch's prompts when it starts them (each trains exactly at its
    target step, the trainer waiting for the last of them), where rollsim's trainer takes the oldest
    finished groups; and the collector's cap of ``num_prompts_per_step x k`` prompt groups in flight
    is not modelled (the admission rule is).

    Parameters
    ----------
    max_trajectory_age_steps : int
        ``grpo.async_grpo.max_trajectory_age_steps``, >= 1.
    in_flight_weight_updates : bool
        ``grpo.async_grpo.in_flight_weight_updates``.
    scenario : Scenario, optional
        The base scenario (default ``Scenario()``).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        A knob out of range.
    """
    k = _check.integer("max_trajectory_age_steps", max_trajectory_age_steps, 1, 4294967295)
    in_flight = _check.flag("in_flight_weight_updates", in_flight_weight_updates)
    return _base(scenario).replace(pipeline=FullyAsync(
        admission_eta=k, batch_order="oldest_first", on_update="keep_stale" if in_flight else "wait"))


#: name -> preset function with its default knobs, for :func:`compare` and ``rollsim presets``.
PRESETS: dict[str, Callable[..., Scenario]] = {
    "AReaL (eta=2)": areal,
    "verl fully_async (0.5, partial)": verl_fully_async,
    "PipelineRL (lag 2 batches)": pipeline_rl,
    "slime partial rollout": slime_partial_rollout,
    "PRIME-RL (async 2, max 8)": prime_rl,
}

_COLUMNS = ("steps", "rollout_utilization", "staleness_mean", "staleness_max", "staleness_mean_long",
            "drop_fraction", "tokens_wasted", "tokens_recomputed", "tokens_generated", "end_s")


def compare(scenario: Scenario | None = None, *, baselines: bool = True,
            max_events: int | None = DEFAULT_MAX_EVENTS, names: dict[str, str] | None = None) -> pl.DataFrame:
    """Runs every preset (and, with ``baselines``, synchronous and the chapter's fully async) on
    ``scenario``.

    Parameters
    ----------
    scenario : Scenario, optional
        The base scenario (default ``Scenario()``).
    baselines : bool
        Also run synchronous and the chapter's fully async (default True).
    max_events : int or None
        The run-time guard of each run, as in :func:`rollsim.simulate` (default
        ``rollsim.simulation.DEFAULT_MAX_EVENTS``; None: no limit). Every run is checked before any
        runs.
    names : dict of str to str, optional
        How the guard's message names the limits (default
        :data:`rollsim.simulation.GUARD_NAMES`, the Python arguments; ``rollsim presets`` passes its
        flags).

    Returns
    -------
    polars.DataFrame
        One row per system: ``system`` and the summary columns ``steps``, ``rollout_utilization``,
        ``staleness_mean``, ``staleness_max``, ``staleness_mean_long``, ``drop_fraction``,
        ``tokens_wasted``, ``tokens_recomputed``, ``tokens_generated``, ``end_s``, plus
        ``wasted_fraction`` (tokens wasted / generated).

    Raises
    ------
    ScenarioError
        A bad ``scenario`` or ``baselines``.
    RunLimitError
        A run estimated to exceed ``max_events`` (the message names the system's limit as ``names``
        spells it).

    Warns
    -----
    GenerationOutrunsTrainingWarning
        Once, after every run, naming the systems whose ready queue grows without bound.
    NoTrainingStepWarning, RunStalledWarning
        For each run that gives one, with the system's name in front (``"verl (sync): no training
        step: ..."``).
    """
    base = _base(scenario)
    baselines = _check.flag("baselines", baselines)
    limit = check_max_events(max_events)
    runs: list[tuple[str, Scenario]] = []
    if baselines:
        runs += [("synchronous", base.replace(pipeline=Synchronous())),
                 ("fully async (chapter)", base.replace(pipeline=FullyAsync()))]
    runs += [(name, fn(scenario=base)) for name, fn in PRESETS.items()]
    for _, sc in runs:  # before running any: a refused comparison runs nothing
        check_runaway(sc, None, "summary", limit, names)
    rows = []
    outrun: list[tuple[str, float, float]] = []
    for name, sc in runs:
        with warnings.catch_warnings():  # said once below, naming the systems
            warnings.simplefilter("ignore", GenerationOutrunsTrainingWarning)
            # the other warnings (no training step, stalled) are given with the system's name in front
            s = simulate_labelled(name, sc, record="summary", max_events=limit).summary
        if s["generation_outruns_training"]:
            outrun.append((name, s["ready_queue_growth_per_step"], s["throughput_ratio"]))
        rows.append({"system": name} | {k: s[k] for k in _COLUMNS})
    if outrun:
        warnings.warn(GenerationOutrunsTrainingWarning(
            f"generation outruns training in {len(outrun)} of {len(runs)} systems ({'; '.join(n for n, _, _ in outrun)}):"
            f" the ready queue grows by up to {max(g for _, g, _ in outrun):.0f} samples per step (rollout/training "
            f"throughput ratio up to {max(r for _, _, r in outrun):.2f}); staleness grows without bound. Add a "
            f"staleness cap, fewer rollout_slots, or a larger batch_size."), stacklevel=2)
    return pl.DataFrame(rows).with_columns(
        (pl.col("tokens_wasted") / pl.col("tokens_generated")).alias("wasted_fraction"))
