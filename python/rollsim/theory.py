"""Closed forms beside the simulation: mean staleness and step times.

Two families of formulas, each with its source and its assumptions; ``tests/test_theory.py`` and
``docs/theory.md`` show where they agree with :func:`rollsim.simulation` and explain where they don't.

* **Mean staleness of a fully asynchronous pipeline**, Applied Compute, "Predicting and Controlling
  Staleness in Fully Asynchronous RL Training" (https://www.appliedcompute.com/research/staleness-in-fully-async-rl):
  :func:`applied_compute_mean_staleness`,
  :func:`mean_staleness`; plus this module's own formula for the simulator's *unbounded* ready queue
  when generation outruns training: :func:`unbounded_mean_staleness`.
* **The sync cadence** (``Scenario.sync_every``: the rollout loads weights every N-th step): the
  staleness it adds, :func:`sync_cadence_staleness`, ``(N - 1) / 2`` versions, in every pipeline; the
  staleness formulas above take it (``sync_every``).
* **Step times** of the chapter's three pipelines (README, "the chapter"; exercise 1: "a
  synchronous step is about rollout time + training time, a one-step asynchronous step about the
  larger of the two"): :func:`expected_rollout_s`, :func:`sync_step_s`, :func:`one_step_step_s`,
  :func:`fully_async_step_s`, :func:`step_s`, :func:`speedup`.

Helpers on length distributions: :func:`expected_max_tokens` (E[longest of n iid answers]) and
:func:`m_tail` (that over the mean), exact for :class:`~rollsim.Empirical` and by numeric integration
(numpy) for :class:`~rollsim.LogNormal`.

Units: tokens for lengths, seconds for times, policy versions (training steps) for staleness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import invalid
from rollsim.lengths import Empirical, LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, OneStepAsync, Synchronous, is_synchronous
from rollsim.scenario import MAX_COUNT, Scenario

__all__ = [
    "applied_compute_mean_staleness",
    "mean_staleness",
    "unbounded_mean_staleness",
    "sync_cadence_staleness",
    "expected_max_tokens",
    "m_tail",
    "expected_rollout_s",
    "sync_step_s",
    "one_step_step_s",
    "fully_async_step_s",
    "step_s",
    "speedup",
]

_erfc = np.vectorize(math.erfc, otypes=[np.float64])


# --------------------------------------------------------------------------------------------------
# argument checks






def _scenario(value: Any) -> Scenario:
    if not isinstance(value, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(value).__name__}")
    return value


def _lengths(value: Any) -> LogNormal | Empirical:
    if not isinstance(value, (LogNormal, Empirical)):
        raise invalid("lengths", f"must be LogNormal(...) or Empirical(...), got {type(value).__name__}")
    return value


# --------------------------------------------------------------------------------------------------
# length distributions: CDF, E[max of n]


def _lognormal_tail(d: LogNormal, x: np.ndarray) -> np.ndarray:
    """P(L > x) for the truncated lognormal, accurate far in the tail (erfc, not 1 - cdf)."""
    x = np.asarray(x, dtype=np.float64)
    out = np.ones_like(x)
    pos = x > 0
    if d.sigma == 0:
        out[pos] = (x[pos] < min(math.exp(d.mu), d.max_tokens)).astype(np.float64)
        return out
    with np.errstate(over="ignore"):  # a tiny sigma: z is +-inf, where erfc gives the exact 0 or 2
        z = (np.log(x[pos]) - d.mu) / d.sigma
    out[pos] = 0.5 * _erfc(z / math.sqrt(2.0))
    out[x >= d.max_tokens] = 0.0
    return out


def _empirical_table(d: Empirical) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values and their probabilities (values already clipped at max_tokens)."""
    w = np.ones_like(d.values) if d.weights is None else d.weights
    v, inv = np.unique(d.values, return_inverse=True)
    p = np.bincount(inv, weights=w, minlength=v.size)
    return v, p / p.sum()


def _log_cdf(d: LogNormal | Empirical, x: np.ndarray) -> np.ndarray:
    """log P(L <= x), floored at -700 (so that sums of many terms stay finite)."""
    x = np.asarray(x, dtype=np.float64)
    if isinstance(d, LogNormal):
        tail = _lognormal_tail(d, x)
        with np.errstate(divide="ignore"):
            out = np.log1p(-np.minimum(tail, 1.0))
    else:
        v, p = _empirical_table(d)
        cdf = np.concatenate(([0.0], np.cumsum(p)))
        cdf[-1] = 1.0
        with np.errstate(divide="ignore"):
            out = np.log(np.minimum(cdf[np.searchsorted(v, x, side="right")], 1.0))
    return np.maximum(out, -700.0)


def _upper_tokens(d: LogNormal | Empirical, n: int) -> float:
    """A length above which the largest of ``n`` draws lies with probability < 1e-12."""
    if isinstance(d, Empirical):
        return float(d.values.max())
    if d.sigma == 0:
        return min(math.exp(d.mu), d.max_tokens)
    z = math.sqrt(2.0 * math.log(max(n, 1) * 1e12))  # Q(z) < exp(-z^2/2) = 1e-12 / n
    return min(d.max_tokens, math.exp(d.mu + d.sigma * z))


def expected_max_tokens(lengths: LogNormal | Empirical, n: int) -> float:
    """Expected length of the longest of ``n`` independent answers, E[max(L_1..L_n)], tokens.

    Parameters
    ----------
    lengths : LogNormal | Empirical
        The answer-length distribution (with its truncation at ``max_tokens``).
    n : int
        Number of independent draws, in [1, 2**24].

    Returns
    -------
    float
        Tokens. ``n = 1`` gives the mean (``lengths.mean_tokens()``).

    Notes
    -----
    ``E[max] = integral_0^inf (1 - F(x)**n) dx``. For :class:`~rollsim.Empirical` it is exact:
    ``sum_i v_i (F_i**n - F_{i-1}**n)`` over the sorted distinct values. For
    :class:`~rollsim.LogNormal` the integral is taken numerically (trapezoid rule, 20,001 points in
    ``z = (ln x - mu) / sigma`` from -12 to the truncation or to where ``n * P(L > x) < 1e-12``, with
    ``1 - F**n`` computed as ``-expm1(n log1p(-Q))`` so the far tail keeps its precision); relative
    error below 1e-6 against ``mean_tokens()`` at ``n = 1``. The truncation point carries the mass
    ``P(L >= max_tokens)``, which the integral over ``[0, max_tokens]`` counts.

    Raises
    ------
    ScenarioError (ValueError)
        ``lengths`` of the wrong type, ``n`` not an integer in [1, 2**24].
    """
    d = _lengths(lengths)
    n = _check.integer("n", n, 1, MAX_COUNT)
    if isinstance(d, Empirical):
        v, p = _empirical_table(d)
        cdf = np.minimum(np.cumsum(p), 1.0)
        cdf[-1] = 1.0
        fn = cdf**n
        return float(np.sum(v * np.diff(np.concatenate(([0.0], fn)))))
    if d.sigma == 0:
        return min(math.exp(d.mu), d.max_tokens)
    z_hi = (math.log(_upper_tokens(d, n)) - d.mu) / d.sigma
    if z_hi <= -38.5:  # P(L < max_tokens) = Phi(z_hi) < 1e-324: every answer is truncated
        return d.max_tokens
    z_top = math.sqrt(2.0 * math.log(max(n, 1) * 1e12))  # _upper_tokens' bound
    if z_hi > z_top + 1.0:  # a tiny sigma: log(exp(mu + sigma z)) - mu rounded, then divided by sigma
        z_hi = z_top
    z = np.linspace(min(-12.0, z_hi - 1.0), z_hi, 20001)
    q = 0.5 * _erfc(z / math.sqrt(2.0))  # P(L > x(z)), for z below the truncation
    with np.errstate(divide="ignore"):
        survival_max = -np.expm1(n * np.log1p(-q))  # 1 - F^n, exact where q is tiny
    x = np.exp(d.mu + d.sigma * z)
    integrand = survival_max * d.sigma * x  # dx = sigma x dz
    below = x[0] * survival_max[0]  # integral over [0, x(z_lo)], where 1 - F^n is 1 to 1e-33
    return float(below + np.sum((integrand[1:] + integrand[:-1]) * np.diff(z)) / 2.0)


def m_tail(lengths: LogNormal | Empirical, group_size: int = 1) -> float:
    """Applied Compute's tail factor ``M_tail = E[longest answer in a group] / E[answer length]``.

    Parameters
    ----------
    lengths : LogNormal | Empirical
    group_size : int
        Answers per prompt (GRPO ``n``), drawn independently, in [1, 2**24]. 1 gives exactly 1.

    Returns
    -------
    float
        Dimensionless, >= 1.

    Raises
    ------
    ScenarioError (ValueError)
        Bad ``lengths`` or ``group_size``.
    """
    d = _lengths(lengths)
    g = _check.integer("group_size", group_size, 1, MAX_COUNT)
    if g == 1:
        return 1.0
    return expected_max_tokens(d, g) / d.mean_tokens()


# --------------------------------------------------------------------------------------------------
# mean staleness, fully asynchronous


def applied_compute_mean_staleness(
    concurrency: float,
    batch_size: float,
    rho: float,
    m_tail: float = 1.0,
    queue_batches: float | None = None,
    sync_every: int = 1,
) -> float:
    """Mean staleness of a fully asynchronous pipeline, policy versions (Applied Compute's closed form).

    ``rho <= 1``: ``C * M_tail / B + rho``;
    ``rho > 1``: ``C * M_tail / (rho * B) + (2 q + rho - 1) / (2 rho)``;
    plus ``(sync_every - 1) / 2`` (:func:`sync_cadence_staleness`; not Applied Compute's) when the
    rollout loads weights only every ``sync_every`` steps.

    Source: Applied Compute (C. Dong, A. Goel, D. Yu), "Predicting and Controlling Staleness in Fully
    Asynchronous RL Training", https://www.appliedcompute.com/research/staleness-in-fully-async-rl
    (the "staleness in fully async RL" blog), reported within about 0.3 versions of six Qwen3-8B runs.

    Parameters
    ----------
    concurrency : float
        Rollout concurrency C: answers in flight (rollsim's ``rollout_slots``), > 0.
    batch_size : float
        Batch B, in the same unit as C (samples, or groups if C counts groups), > 0.
    rho : float
        Rollout throughput / training throughput (samples per second each; rollsim's
        ``Scenario.throughput_ratio()``), > 0. Below 1 the trainer waits for data; above 1 the
        ready queue fills.
    m_tail : float
        ``E[longest answer in a group] / E[answer length]``, >= 1 (1 for groups of one answer); see
        :func:`m_tail`.
    queue_batches : float or None
        Capacity q of the ready queue, in batches, >= 0; used only when ``rho > 1``. ``None`` means an
        unbounded queue: for ``rho > 1`` the queue then grows without bound and so does staleness, so
        the result is ``inf`` (see :func:`unbounded_mean_staleness` for the mean over a finite run).
    sync_every : int
        Sync cadence N (``Scenario.sync_every``), in [1, 2**24]; 1 (default): the formula as published.

    Returns
    -------
    float
        Mean staleness, versions (training steps between a sample's start and its consumption).

    Notes
    -----
    Assumptions (the blog's, and how they read in rollsim's model):

    * steady state: the pool is always full (C answers in flight, a freed slot starts a new answer at
      once with the newest weights), the trainer trains as soon as it holds a full batch;
    * rollout throughput follows from Little's law, ``C / E[generation time]``;
    * a group (and every answer in it) is consumable when its longest answer finishes, hence
      ``M_tail``; answers are drawn independently;
    * ``rho < 1``: the queue is nearly empty, the wait is for the batch to fill; ``rho > 1``: the queue
      sits at its capacity of q batches and overflow evicts the oldest, so a sample's wait in the
      queue is ``q / rho`` training steps;
    * no staleness cap (nothing is dropped at consumption), no in-flight interruption;
    * staleness counted from the version the answer started with ("head" staleness, rollsim's).

    At ``rho = 1`` the two branches differ unless ``q = 1``; this function uses the ``rho <= 1``
    branch there. Near ``rho = 1`` neither branch is accurate (the queue length is a random walk).

    Raises
    ------
    ScenarioError (ValueError)
        Any argument non-finite or out of range (the message names it).
    """
    c = _check.number("concurrency", concurrency)
    b = _check.number("batch_size", batch_size)
    r = _check.number("rho", rho)
    mt = _check.number("m_tail", m_tail)
    if mt < 1.0:
        raise invalid("m_tail", f"must be >= 1 (the longest of a group is at least the mean), got {mt}")
    q = None if queue_batches is None else _check.number("queue_batches", queue_batches, allow_zero=True)
    cadence = sync_cadence_staleness(sync_every)
    if r <= 1.0:
        return c * mt / b + r + cadence
    if q is None:
        return math.inf
    return c * mt / (r * b) + (2.0 * q + r - 1.0) / (2.0 * r) + cadence


def mean_staleness(scenario: Scenario, group_size: int = 1, queue_batches: float | None = None) -> float:
    """Applied Compute's mean staleness for a scenario, versions.

    Derives the inputs of :func:`applied_compute_mean_staleness` from ``scenario``:
    ``C = rollout_slots``, ``B = batch_size`` (both in samples), ``rho = scenario.throughput_ratio()``
    (``rollout_slots * decode_tokens_per_s / mean_tokens * (train_step_s + weight_sync_s) /
    batch_size``), ``M_tail = m_tail(scenario.lengths, group_size)``, and the cadence term
    ``(sync_every - 1) / 2`` of :func:`sync_cadence_staleness` (staleness counts the version the
    rollout had).

    Parameters
    ----------
    scenario : Scenario
        Its pipeline must be ``FullyAsync()`` without a cap (the formula has no drops).
    group_size : int
        Answers per prompt, in [1, 2**24]; rollsim's engine draws answers one by one (group size 1),
        larger values predict a grouped pipeline.
    queue_batches : float or None
        Ready-queue capacity in batches, for ``rho > 1``; ``None`` (rollsim's unbounded queue) gives
        ``inf`` there.

    Returns
    -------
    float
        Versions. For the chapter's scenario: ``256 / 512 + 0.2866 = 0.787`` (simulated: 0.757 with
        ``rng="python"``, seed 0).

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario, a pipeline other than uncapped ``FullyAsync``, bad ``group_size`` or
        ``queue_batches``.
    """
    sc = _scenario(scenario)
    if not isinstance(sc.pipeline, FullyAsync) or sc.pipeline.max_staleness is not None:
        raise invalid("pipeline", f"must be FullyAsync() without max_staleness for this formula, got {sc.pipeline!r}")
    return applied_compute_mean_staleness(
        sc.rollout_slots, sc.batch_size, sc.throughput_ratio(), m_tail(sc.lengths, group_size), queue_batches,
        sc.sync_every,
    )


def unbounded_mean_staleness(concurrency: float, batch_size: float, rho: float, steps: int,
                             sync_every: int = 1) -> float:
    """Mean staleness over the first ``steps`` training steps when generation outruns training
    (``rho > 1``) and the ready queue is unbounded and first-in first-out (rollsim's engine, no cap).

    ``C / (rho B) + (rho + 1) / (2 rho) + (steps - 1) / 2 * (1 - 1 / rho)``, versions, plus
    ``(sync_every - 1) / 2`` (:func:`sync_cadence_staleness`).

    Source: this module's derivation (not Applied Compute's), under the same fluid assumptions as
    :func:`applied_compute_mean_staleness`: the trainer never waits after the first batch, so step
    ``k`` starts at ``t0 + k tau`` (``tau`` = train time, ``t0 ~ tau / rho`` = time to fill the
    first batch); the samples it trains finished around ``(k + 1/2) tau / rho``, having started
    ``E[T] = C tau / (rho B)`` earlier; the steps completed in between are
    ``k (1 - 1/rho) + C / (rho B) + 1/(2 rho) + 1/2`` (the last half for the step in progress at the
    start). Staleness grows by ``1 - 1/rho`` per step: there is no steady state, so the mean depends
    on the run's length. ``C`` and ``B`` in samples (group size 1).

    Parameters
    ----------
    concurrency, batch_size : float
        C and B, > 0.
    rho : float
        Rollout / training throughput, > 1.
    steps : int
        Training steps in the run, in [1, 2**24].
    sync_every : int
        Sync cadence N (``Scenario.sync_every``), in [1, 2**24].

    Returns
    -------
    float
        Versions.

    Raises
    ------
    ScenarioError (ValueError)
        Arguments out of range (``rho <= 1`` has a steady state: use the Applied Compute formula).
    """
    c = _check.number("concurrency", concurrency)
    b = _check.number("batch_size", batch_size)
    r = _check.number("rho", rho)
    if r <= 1.0:
        raise invalid("rho", f"must be > 1 (generation outruns training); got {r}")
    k = _check.integer("steps", steps, 1, MAX_COUNT)
    cadence = sync_cadence_staleness(sync_every)
    return c / (r * b) + (r + 1.0) / (2.0 * r) + (k - 1) / 2.0 * (1.0 - 1.0 / r) + cadence


def sync_cadence_staleness(sync_every: int) -> float:
    """Mean staleness that a sync cadence adds, versions: ``(N - 1) / 2`` for ``sync_every = N``.

    Derivation (this module's): with a sync after every step the rollout starts a sample on the
    latest version ``v`` the trainer has published; with ``sync_every = N`` it holds only the
    versions ``0, N, 2N, ...`` (``Scenario.sync_every``), so it starts the sample on
    ``v - (v mod N)``, ``v mod N`` versions older, and the sample's staleness (the version that
    trains it minus the version it started with: what the rollout actually had) is larger by the
    same amount. The trainer publishes versions at a steady pace, so in steady state starts fall
    equally often on each residue ``v mod N = 0, ..., N - 1``: the mean grows by
    ``(0 + 1 + ... + (N - 1)) / N = (N - 1) / 2``. The same holds for every pipeline (a synchronous
    pipeline trains ``0, 1, ..., N - 1`` versions old in turn, a one-step pipeline ``1, 2, ..., N``).

    Assumes the cadence changes no timing: ``rollout_pause_s = 0`` (else the pause is paid less often
    and generation runs a little faster), no staleness cap (``FullyAsync(max_staleness=...)`` drops
    the older samples instead), generation not gated on syncs (``lag_release="take"``). Over a finite
    run of ``K`` steps the residues are equal only if ``K`` is a multiple of ``N`` (otherwise within
    ``(N - 1) / (2 K)``). ``tests/test_sync_pipeline.py`` checks it against simulations.

    Parameters
    ----------
    sync_every : int
        N, in [1, 2**24].

    Returns
    -------
    float
        Versions; 0 for ``sync_every = 1``.

    Raises
    ------
    ScenarioError (ValueError)
        ``sync_every`` not an integer in [1, 2**24].
    """
    n = _check.integer("sync_every", sync_every, 1, MAX_COUNT)
    return (n - 1) / 2.0


# --------------------------------------------------------------------------------------------------
# step times (the chapter's exercise 1)


def _train_s(sc: Scenario) -> float:
    return sc.train_step_s + sc.weight_sync_s


def _rollout_cdf_grid(sc: Scenario, points: int = 8000) -> tuple[np.ndarray, np.ndarray]:
    """Time grid (s) and P(makespan <= t) under the fluid-start approximation of expected_rollout_s."""
    d, S, B, v = sc.lengths, sc.rollout_slots, sc.batch_size, sc.decode_tokens_per_s
    mean = d.mean_tokens()
    extra = max(B - S, 0)
    t_last = extra * mean / (S * v)
    span = t_last + _upper_tokens(d, B) / v
    h = span / points
    # start-time histogram on the grid: S answers at 0, answer S + j (j = 0..extra-1) at
    # (j + 1/2) * mean / (S v), i.e. slots free at the pool's steady rate S v / mean.
    counts = np.zeros(points + 1)
    counts[0] = min(B, S)
    if extra:
        starts = (np.arange(extra) + 0.5) * mean / (S * v)
        np.add.at(counts, np.minimum(np.rint(starts / h).astype(np.int64), points), 1.0)
    log_f = _log_cdf(d, np.arange(points + 1) * h * v)  # log P(L / v <= k h), k = 0..points
    log_f[0] = -700.0
    log_p = np.convolve(counts, log_f)[: points + 1]  # sum_k counts_k log F(v (t - t_k))
    return np.arange(points + 1) * h, np.exp(np.maximum(log_p, -745.0))


def expected_rollout_s(scenario: Scenario) -> float:
    """Expected time to generate one batch with continuous batching (the batch's makespan), seconds.

    ``batch_size`` answers on ``rollout_slots`` slots decoding ``decode_tokens_per_s`` each; each
    answer starts on the slot that frees first; the batch ends with its longest-finishing answer.

    Approximation (fluid start times): the first ``min(B, S)`` answers start at 0; answer ``S + j``
    starts at ``(j + 1/2) E[L] / (S v)``, i.e. slots free at the pool's steady rate; lengths are
    independent of start times. Then ``P(makespan <= t) = prod_i F(v (t - t_i))`` and
    ``E[makespan] = integral (1 - P(makespan <= t)) dt`` (numerically, numpy, 8,001-point grid).

    * ``B <= S`` (one wave): exact, ``E[max of B lengths] / v`` (:func:`expected_max_tokens`).
    * ``B > S``: the first slots actually free faster than the steady rate (short answers finish
      first: a renewal process started at 0), so late answers start a little earlier than assumed;
      the estimate is within a few percent of the simulated mean when the tail is long; it
      approaches ``B E[L] / (S v)`` (pure throughput) as ``B / S`` grows. A cruder bound often quoted
      is ``(B - S) E[L] / (S v) + E[max of S] / v``; it overestimates (every slot's last answer would
      start at the same late time).

    Parameters
    ----------
    scenario : Scenario
        Uses ``rollout_slots``, ``decode_tokens_per_s``, ``batch_size``, ``lengths``.

    Returns
    -------
    float
        Seconds. The chapter's scenario: 630.0 s (simulated synchronous batches: 629.8 s, mean of 20
        seeds x 20 h).

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario.
    """
    sc = _scenario(scenario)
    if sc.batch_size <= sc.rollout_slots:
        return expected_max_tokens(sc.lengths, sc.batch_size) / sc.decode_tokens_per_s
    t, p = _rollout_cdf_grid(sc)
    s = 1.0 - p
    return float(np.sum((s[1:] + s[:-1]) * np.diff(t)) / 2.0)


def sync_step_s(scenario: Scenario) -> float:
    """Synchronous step time, seconds: ``expected_rollout_s + train_step_s + weight_sync_s``.

    Source: the chapter (README, "the chapter"; exercise 1): "a synchronous step is about
    rollout time + training time". Exact in expectation given :func:`expected_rollout_s` (rollsim's
    synchronous batches are independent and back to back).

    Parameters
    ----------
    scenario : Scenario

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario.
    """
    sc = _scenario(scenario)
    return expected_rollout_s(sc) + _train_s(sc)


def one_step_step_s(scenario: Scenario) -> float:
    """One-step asynchronous steady-state step time, seconds: ``max(expected_rollout_s, train)``
    with ``train = train_step_s + weight_sync_s``.

    Source: the chapter, exercise 1: "a one-step asynchronous step [is] about the larger of the two".

    A lower bound in expectation: each step really takes about ``max(R_i, train)`` for the random
    rollout time ``R_i``, and ``E[max(R, train)] >= max(E[R], train)`` (Jensen); the gap is largest
    when ``E[R] ~ train`` (the chapter's 600 s exercise: a few percent). Also valid for
    ``OffPolicy(k)`` with ``k >= 1`` in steady state.

    Parameters
    ----------
    scenario : Scenario

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario.
    """
    sc = _scenario(scenario)
    return max(expected_rollout_s(sc), _train_s(sc))


def fully_async_step_s(scenario: Scenario) -> float:
    """Fully asynchronous steady-state step time, seconds:
    ``max(batch_size * E[L] / (rollout_slots * decode_tokens_per_s), train)``.

    The pool is always full, so it delivers ``S v / E[L]`` samples per second (Little's law); a step
    needs ``B`` of them, or the trainer's ``train_step_s + weight_sync_s``, whichever is longer.
    Source: the chapter's fully asynchronous model ("the inference pool stays fully loaded"),
    throughput argument; ``rho = train / (B E[L] / (S v))`` is ``Scenario.throughput_ratio()``.
    The first steps are shorter (all slots start at 0 and short answers arrive first).

    Parameters
    ----------
    scenario : Scenario

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario.
    """
    sc = _scenario(scenario)
    gen = sc.batch_size * sc.lengths.mean_tokens() / (sc.rollout_slots * sc.decode_tokens_per_s)
    return max(gen, _train_s(sc))


def step_s(scenario: Scenario, pipeline: Any = None) -> float:
    """Steady-state step time of ``pipeline`` (default: the scenario's own), seconds.

    ``Synchronous()`` / ``OffPolicy(0)``: :func:`sync_step_s`; ``OneStepAsync()`` / ``OffPolicy(k>=1)``:
    :func:`one_step_step_s`; ``FullyAsync(...)``: :func:`fully_async_step_s` (a cap drops samples and
    lengthens steps slightly; not modelled).

    Raises
    ------
    ScenarioError (ValueError)
        Not a Scenario, or ``pipeline`` not one of rollsim's pipelines.
    """
    sc = _scenario(scenario)
    p = sc.pipeline if pipeline is None else pipeline
    if is_synchronous(p):
        return sync_step_s(sc)
    if isinstance(p, (OneStepAsync, OffPolicy)):
        return one_step_step_s(sc)
    if isinstance(p, FullyAsync):
        return fully_async_step_s(sc)
    raise invalid("pipeline", f"must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got {p!r}")


def speedup(scenario: Scenario, pipeline: Any, baseline: Any = None) -> float:
    """Predicted speedup of ``pipeline`` over ``baseline`` (default ``Synchronous()``):
    ``step_s(scenario, baseline) / step_s(scenario, pipeline)``, dimensionless.

    Examples (chapter's scenario): one-step over synchronous is ``(R + 60) / R`` with ``R = 630 s``,
    1.10; with ``train_step_s=600`` it is ``(R + 600) / max(R, 600)`` = 1.95 ("nearly halves the
    step time"); fully asynchronous over synchronous 690 / 209.3 = 3.30.

    Raises
    ------
    ScenarioError (ValueError)
        As :func:`step_s`.
    """
    sc = _scenario(scenario)
    base = Synchronous() if baseline is None else baseline
    return step_s(sc, base) / step_s(sc, pipeline)
