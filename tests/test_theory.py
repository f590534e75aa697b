"""rollsim.theory: closed forms beside the simulation.

Where the formulas' assumptions hold (steady state, a full pool of many slots, lengths with a spread,
rho away from 1) the simulation agrees with them to about 1 %; where they don't, the tests below pin
the disagreement and say why (docs/theory.md has the table).

Tolerances. Simulated means are averaged over many seeds with ``rng="fast"`` and long horizons; the
standard errors are printed in docs/theory.md and, in the agreement tests, are below 0.005 versions
and 1 s, so a 2 % relative
tolerance is about 10 standard errors wide: it leaves room for the formulas' own approximations
(fluid limits) but fails on any real modelling difference (those are 5-100 %).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import rollsim
from rollsim import Empirical, FullyAsync, LogNormal, OffPolicy, OneStepAsync, Scenario, Synchronous, simulate
from rollsim import theory as th

CHAPTER = Scenario()  # 256 slots, 30 tok/s, 512 per step, 60 s training, lognormal(7.6, 1) <= 16384
CHAPTER_MEAN_TOKENS = 3140.2053191615178  # closed form of the truncated lognormal's mean


def _runs(sc: Scenario, seeds: int) -> list[rollsim.Result]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.GenerationOutrunsTrainingWarning)
        return [simulate(sc.replace(seed=s), record="summary") for s in range(seeds)]


def _staleness(sc: Scenario, seeds: int) -> tuple[float, float]:
    """(mean over seeds of the whole run's staleness mean, of its second half's: the steady state)."""
    whole, late = [], []
    for r in _runs(sc, seeds):
        whole.append(r.summary["staleness_mean"])
        st = r.steps.filter(r.steps["step"] >= r.steps.height // 2)
        late.append(float((st["staleness_mean"] * st["samples"]).sum() / st["samples"].sum()))
    return float(np.mean(whole)), float(np.mean(late))


def _step_s(sc: Scenario, seeds: int) -> float:
    """Measured steady-state step time, s: synchronous end_s / steps (its steps are independent and back
    to back); one-step: mean gap between step ends after the first (the first batch is not overlapped);
    fully async: mean gap over the second half (the first batches arrive early)."""
    out = []
    for r in _runs(sc, seeds):
        e = r.steps["end_s"].to_numpy()
        if isinstance(sc.pipeline, Synchronous):
            out.append(r.summary["end_s"] / r.summary["steps"])
        else:
            k = e.size // 2 if isinstance(sc.pipeline, FullyAsync) else 1
            out.append((e[-1] - e[k - 1]) / (e.size - k))
    return float(np.mean(out))


# ------------------------------------------------------------------------------------------------
# length helpers: E[max of n], M_tail


@pytest.mark.parametrize(
    "d",
    [LogNormal(), LogNormal(7.6, 1.0, 1e12), LogNormal(5.0, 2.0, 1e6), LogNormal(7.0, 0.3, 5000), LogNormal(7.6, 0.0, 16384)],
)
def test_expected_max_of_one_is_the_mean(d):
    assert th.expected_max_tokens(d, 1) == pytest.approx(d.mean_tokens(), rel=1e-6)


def test_expected_max_untruncated_lognormal_closed_form():
    # E[max(X1, X2)] for X lognormal(mu, s): 2 exp(mu + s^2/2) Phi(s / sqrt 2)
    # = 2 * 3294.468 * Phi(0.70711) = 2 * 3294.468 * 0.760250 = 5009.24 tokens
    d = LogNormal(7.6, 1.0, 2**40)  # the largest max_tokens: P(X > 2**40) is 1e-88
    assert th.expected_max_tokens(d, 2) == pytest.approx(5009.24, rel=1e-4)


def test_expected_max_matches_monte_carlo():
    x = np.minimum(np.random.default_rng(0).lognormal(7.6, 1.0, (200_000, 8)), 16384)
    mc = x.max(axis=1).mean()  # standard error about 9 tokens (0.1 %)
    assert th.expected_max_tokens(LogNormal(), 8) == pytest.approx(mc, rel=0.005)
    assert th.expected_max_tokens(LogNormal(), 8) == pytest.approx(8958.0, abs=1.0)
    # 256 draws: almost surely one is truncated (1 - 0.9823**256 = 0.99), so close to 16384
    assert 16300 < th.expected_max_tokens(LogNormal(), 256) < 16384


def test_empirical_is_exact():
    # values 1, 2, 3 equally likely; max of 2: P(max=1) = 1/9, P(max=2) = 4/9 - 1/9, P(max=3) = 5/9
    # E = 1/9 + 2 * 3/9 + 3 * 5/9 = 22/9
    e = Empirical([3.0, 1.0, 2.0])
    assert th.expected_max_tokens(e, 2) == pytest.approx(22 / 9, rel=1e-12)
    # weights are counts: value 1 twice, value 3 once -> max of 2 is 1 with prob 4/9, else 3: 1 * 4/9 + 3 * 5/9
    w = Empirical([1.0, 3.0], weights=[2.0, 1.0])
    assert th.expected_max_tokens(w, 2) == pytest.approx(19 / 9, rel=1e-12)
    assert th.m_tail(w, 2) == pytest.approx((19 / 9) / (5 / 3), rel=1e-12)


def test_m_tail():
    assert th.m_tail(LogNormal(), 1) == 1.0
    assert th.m_tail(LogNormal(), 8) == pytest.approx(8958.0 / CHAPTER_MEAN_TOKENS, rel=1e-4)  # 2.853
    assert th.m_tail(LogNormal(7.6, 0.0), 16) == pytest.approx(1.0)  # equal lengths: no tail
    r1 = rollsim.datasets.deepseek_r1_serving(max_tokens=16384)
    assert th.m_tail(r1, 16) > th.m_tail(LogNormal(), 16)  # production lengths have the heavier tail


# ------------------------------------------------------------------------------------------------
# the Applied Compute formula: values by hand


def test_applied_compute_by_hand():
    # chapter: C/B + rho = 256/512 + 0.28661 = 0.78661
    rho = CHAPTER.throughput_ratio()
    assert rho == pytest.approx(256 * 30 / CHAPTER_MEAN_TOKENS * 60 / 512, rel=1e-12)  # 0.28661
    assert th.applied_compute_mean_staleness(256, 512, rho) == pytest.approx(0.78661, abs=1e-5)
    assert th.mean_staleness(CHAPTER) == pytest.approx(0.78661, abs=1e-5)
    # groups of 8: 256 * 2.853 / 512 + 0.2866 = 1.7130
    assert th.mean_staleness(CHAPTER, group_size=8) == pytest.approx(0.5 * 8958.0 / CHAPTER_MEAN_TOKENS + rho, abs=1e-3)
    # rho > 1: C/(rho B) + (2q + rho - 1)/(2 rho) = 256/1024 + (2 + 1)/4 = 1.0
    assert th.applied_compute_mean_staleness(256, 512, 2.0, queue_batches=1) == pytest.approx(1.0)
    # m_tail 3, q 4, rho 4: 3 * 1024/(4 * 256) + (8 + 3)/8 = 3 + 1.375
    assert th.applied_compute_mean_staleness(1024, 256, 4.0, m_tail=3.0, queue_batches=4) == pytest.approx(4.375)
    # an unbounded queue (rollsim's) has no steady state when rho > 1
    assert th.applied_compute_mean_staleness(256, 512, 2.0) == math.inf
    # rho = 1 takes the rho <= 1 branch: 0.5 + 1
    assert th.applied_compute_mean_staleness(256, 512, 1.0, queue_batches=3) == pytest.approx(1.5)


def test_unbounded_by_hand():
    # C/(rho B) + (rho + 1)/(2 rho) + (K - 1)/2 (1 - 1/rho) with C=256, B=512, rho=2, K=11:
    # 0.25 + 0.75 + 5 * 0.5 = 3.5
    assert th.unbounded_mean_staleness(256, 512, 2.0, 11) == pytest.approx(3.5)


# ------------------------------------------------------------------------------------------------
# staleness: where simulation and formula agree


def test_chapter_anchor_and_transient():
    # The chapter's own run (rng="python", seed 0): 0.757 over its 34 steps; the formula says 0.787.
    res = simulate(CHAPTER.replace(rng="python"), record="summary")
    assert res.summary["staleness_mean"] == pytest.approx(0.757, abs=5e-4)
    # 50 seeds of the same 2-hour run: 0.759 (standard error 0.001). The 0.03 gap is the start-up
    # transient: the first batch has staleness 0 (every slot starts with version 0 and no step has
    # ended), the second about 0.67; the formula is a steady-state value.
    whole, late = _staleness(CHAPTER, 50)
    formula = th.mean_staleness(CHAPTER)
    assert formula - 0.05 < whole < formula - 0.01
    assert late == pytest.approx(formula, rel=0.02)  # the second half is in steady state: 0.788
    # over 20 hours (343 steps) the transient is diluted: the whole run's mean is within 1 %
    whole, _ = _staleness(CHAPTER.replace(horizon_s=72_000), 20)
    assert whole == pytest.approx(formula, rel=0.01)  # 0.784 vs 0.787


@pytest.mark.parametrize(
    "changes, formula",
    [
        # rho = 0.2866 * train / 60; formula 0.5 + rho
        ({"train_step_s": 10}, 0.5478),  # rho 0.048: the trainer mostly waits
        ({"train_step_s": 150}, 1.2165),  # rho 0.717
        ({"train_step_s": 200}, 1.4554),  # rho 0.955: still fine 5 % below rho = 1
        # many slots per batch: C/B = 4, rho = 0.191 -> 4.191 (each answer spans several steps)
        ({"rollout_slots": 2048, "train_step_s": 5}, 4.1911),
        # a tiny pool for a big batch: C/B = 16/512, rho = 0.018 -> 0.049
        ({"rollout_slots": 16, "horizon_s": 360_000}, 0.0491),
        # heavy truncation: median 36,300 > 16,384, 83 % of answers are cut: lengths still spread
        ({"lengths": LogNormal(10.5, 1.0, 16384)}, 0.5597),
        # real production lengths (DeepSeek-R1 serving, Empirical): rho 0.595
        ({"lengths": rollsim.datasets.deepseek_r1_serving(max_tokens=16384)}, 1.0946),
    ],
)
def test_staleness_agrees_below_rho_one(changes, formula):
    sc = CHAPTER.replace(**({"horizon_s": 36_000} | changes))
    assert sc.throughput_ratio() < 0.96
    assert th.mean_staleness(sc) == pytest.approx(formula, abs=2e-4)
    _, late = _staleness(sc, 20)
    assert late == pytest.approx(formula, rel=0.02)


@pytest.mark.parametrize("train_step_s", [400.0, 1000.0])
def test_staleness_above_rho_one_unbounded_queue(train_step_s):
    # rollsim's ready queue is unbounded (no cap): when rho > 1 it grows by (rho - 1) batches per
    # step and staleness grows by 1 - 1/rho per step. Applied Compute's rho > 1 branch assumes a queue
    # of q batches that evicts its oldest entries, which rollsim does not have, so it cannot be
    # checked here (it gives inf with q=None); the growth law of unbounded_mean_staleness can.
    sc = CHAPTER.replace(horizon_s=36_000, train_step_s=train_step_s)
    rho = sc.throughput_ratio()  # 1.911, 4.777
    assert rho > 1.5
    assert th.mean_staleness(sc) == math.inf
    runs = _runs(sc, 20)
    assert all(r.summary["generation_outruns_training"] for r in runs)
    steps = int(round(np.mean([r.summary["steps_started"] for r in runs])))  # 90, 36
    sim = np.mean([r.summary["staleness_mean"] for r in runs])  # 22.19, 14.50
    assert sim == pytest.approx(th.unbounded_mean_staleness(256, 512, rho, steps), rel=0.02)  # 22.23, 14.55


# ------------------------------------------------------------------------------------------------
# staleness: where and why they differ


def test_near_rho_one_staleness_grows_with_the_run():
    # rho = 1 exactly (train 209.35 s): the ready queue is a driftless random walk, so it wanders away
    # from empty by about sqrt(steps) samples: staleness grows with the run's length. The formula's
    # 1.5 assumes a queue that stays near empty (rho < 1) or full (rho > 1); neither holds.
    sc = CHAPTER.replace(train_step_s=60 / CHAPTER.throughput_ratio())
    assert sc.throughput_ratio() == pytest.approx(1.0)
    formula = th.mean_staleness(sc)  # 1.50
    ten_hours, _ = _staleness(sc.replace(horizon_s=36_000), 20)  # 1.72
    hundred_hours, _ = _staleness(sc.replace(horizon_s=360_000), 10)  # 2.6
    assert ten_hours > formula + 0.1
    assert hundred_hours > ten_hours + 0.4


def test_equal_lengths_run_in_lockstep():
    # sigma = 0: every answer takes exactly 1998/30 = 66.6 s, all 256 slots start at 0 and finish
    # together, so answers arrive in waves of 256 and two waves make a batch; staleness is set by
    # that fixed phase (0.5), not by the formula's uniform phase (0.95 = 0.5 + rho 0.45).
    sc = CHAPTER.replace(lengths=LogNormal(7.6, 0.0), horizon_s=36_000)
    assert th.mean_staleness(sc) == pytest.approx(0.9503, abs=1e-3)
    _, late = _staleness(sc, 3)
    assert late == pytest.approx(0.5, abs=0.01)
    # a 10 % spread in lengths is enough to break the lockstep: the formula holds again
    sc = sc.replace(lengths=LogNormal(7.6, 0.1))
    _, late = _staleness(sc, 5)
    assert late == pytest.approx(th.mean_staleness(sc), rel=0.01)


def test_one_slot_one_sample_batches():
    # C = B = 1, 50 s training (rho 0.478): answers shorter than 50 s (38 % of them) finish while the
    # trainer is still busy and the next answer starts on old weights; the single slot couples
    # generation and training phases, which the formula's independence (many slots) ignores.
    sc = CHAPTER.replace(rollout_slots=1, batch_size=1, train_step_s=50, horizon_s=360_000)
    formula = th.mean_staleness(sc)  # 1 + 0.478
    _, late = _staleness(sc, 20)  # 1.64
    assert late > formula + 0.1


# ------------------------------------------------------------------------------------------------
# step times (chapter exercise 1)


def test_rollout_time_chapter():
    # throughput part: 512 * 3140.2 / (256 * 30) = 209.3 s; the tail adds the rest: about 630 s
    r = th.expected_rollout_s(CHAPTER)
    assert 620 < r < 640
    measured = _step_s(CHAPTER.replace(pipeline=Synchronous(), train_step_s=0.0, horizon_s=36_000), 30)
    assert r == pytest.approx(measured, rel=0.01)  # 630.0 vs 629.0 (standard error 1.1)


def test_rollout_one_wave_is_exact():
    sc = CHAPTER.replace(batch_size=256)
    assert th.expected_rollout_s(sc) == th.expected_max_tokens(sc.lengths, 256) / 30.0


@pytest.mark.parametrize("train_step_s", [60.0, 300.0, 600.0, 1200.0])
@pytest.mark.parametrize("pipeline", [Synchronous(), OneStepAsync(), FullyAsync()], ids=["sync", "one-step", "fully-async"])
def test_step_times_agree(pipeline, train_step_s):
    sc = CHAPTER.replace(pipeline=pipeline, train_step_s=train_step_s, horizon_s=36_000)
    assert th.step_s(sc) == pytest.approx(_step_s(sc, 20), rel=0.01)


def test_chapter_exercise_one():
    # 60 s training: sync 690 s, one-step 630 s per step: one-step saves only the 60 s (1.10x)
    assert th.speedup(CHAPTER, OneStepAsync()) == pytest.approx(690 / 630, rel=0.01)
    # 600 s training: sync 1230 s, one-step max(630, 600) = 630 s: nearly halves the step (1.95x)
    sc600 = CHAPTER.replace(train_step_s=600.0)
    assert th.speedup(sc600, OneStepAsync()) == pytest.approx(1230 / 630, rel=0.01)
    assert th.speedup(sc600, OffPolicy(2)) == th.speedup(sc600, OneStepAsync())
    # the chapter's own runs (rng="python", seed 0), 2 hours: 11 vs 12 steps at 60 s; 6 vs 12 at 600 s
    py = CHAPTER.replace(rng="python")
    steps = {(type(p).__name__, t): simulate(py.replace(pipeline=p, train_step_s=t), record="summary").summary["steps"]
             for p in (Synchronous(), OneStepAsync()) for t in (60.0, 600.0)}
    assert steps == {("Synchronous", 60.0): 11, ("OneStepAsync", 60.0): 12,
                     ("Synchronous", 600.0): 6, ("OneStepAsync", 600.0): 12}
    # fully async: the pool's throughput, 209.3 s per step at 60 s training: 3.3x synchronous
    assert th.fully_async_step_s(CHAPTER) == pytest.approx(512 * CHAPTER_MEAN_TOKENS / (256 * 30), rel=1e-12)
    assert th.speedup(CHAPTER, FullyAsync()) == pytest.approx(690 / 209.3, rel=0.01)


def test_one_step_jensen_gap_when_rollout_equals_training():
    # train = E[rollout] = 630 s: each step takes max(R_i, 630) for random R_i, and
    # E[max(R, T)] > max(E[R], T): measured 636.8 s, 1.1 % above the chapter's formula.
    sc = CHAPTER.replace(pipeline=OneStepAsync(), train_step_s=630.0, horizon_s=72_000)
    measured = _step_s(sc, 20)
    assert th.one_step_step_s(sc) == pytest.approx(630.0, abs=0.5)
    assert 1.005 < measured / th.one_step_step_s(sc) < 1.02


def test_rollout_light_tail_fluid_start_underestimates():
    # sigma 0.3: lengths nearly equal, so slots free in a wave around E[L]/v instead of at the steady
    # rate the fluid approximation assumes; the second wave starts later than assumed: 112 s predicted,
    # 128 s simulated (-13 %). The cruder "throughput + longest of a full pool" bound gives 123 s.
    sc = CHAPTER.replace(lengths=LogNormal(7.0, 0.3), pipeline=Synchronous(), train_step_s=0.0, horizon_s=36_000)
    measured = _step_s(sc, 10)
    assert 0.82 < th.expected_rollout_s(sc) / measured < 0.92


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "call, field",
    [
        (lambda: th.applied_compute_mean_staleness(0, 512, 0.5), "concurrency"),
        (lambda: th.applied_compute_mean_staleness(256, -1, 0.5), "batch_size"),
        (lambda: th.applied_compute_mean_staleness(256, 512, math.nan), "rho"),
        (lambda: th.applied_compute_mean_staleness(256, 512, 0.5, m_tail=0.5), "m_tail"),
        (lambda: th.applied_compute_mean_staleness(256, 512, 2.0, queue_batches=-1), "queue_batches"),
        (lambda: th.applied_compute_mean_staleness(256, 512, "1"), "rho"),
        (lambda: th.unbounded_mean_staleness(256, 512, 0.5, 10), "rho"),
        (lambda: th.unbounded_mean_staleness(256, 512, 2.0, 0), "steps"),
        (lambda: th.expected_max_tokens(LogNormal(), 0), "n"),
        (lambda: th.expected_max_tokens([1, 2], 2), "lengths"),
        (lambda: th.m_tail(LogNormal(), 1.5), "group_size"),
        (lambda: th.mean_staleness(CHAPTER.replace(pipeline=Synchronous())), "pipeline"),
        (lambda: th.mean_staleness(CHAPTER.replace(pipeline=FullyAsync(max_staleness=2))), "pipeline"),
        (lambda: th.mean_staleness("chapter"), "scenario"),
        (lambda: th.expected_rollout_s(None), "scenario"),
        (lambda: th.step_s(CHAPTER, "sync"), "pipeline"),
    ],
)
def test_bad_input_names_the_parameter(call, field):
    with pytest.raises(ValueError, match=rf"^{field}: "):
        call()


# ----- the rho > 1 branch against the engine's bounded ready queue ------------------------------

@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("q", [1, 2, 4])
def test_applied_compute_rho_above_one_with_a_bounded_queue(q):
    """With a ready queue of q batches that drops its oldest groups (FullyAsync(max_ready_groups=q*B),
    the queue the formula assumes), rho = 1.91 (400 s steps): formula C/(rho B) + (2q + rho - 1)/(2 rho)
    = 1.023 / 1.547 / 2.593 for q = 1 / 2 / 4; simulated (10 seeds, second half of 20 h) 1.076 /
    1.517 / 2.595. Tolerance 6 %. At rho = 4.8 (1000 s steps) they part: the simulation stays near
    1.0 (the queue holds only batches finished during the current step) while the formula gives
    0.71 / 0.92 / 1.34 (docs/theory.md)."""
    from rollsim import FullyAsync, Scenario, simulate
    import numpy as np
    import polars as pl

    from rollsim import theory

    sc = Scenario(train_step_s=400.0, horizon_s=20 * 3600.0, pipeline=FullyAsync(max_ready_groups=q * 512))
    vals = []
    for seed in range(10):
        df = simulate(sc.replace(seed=seed)).samples.filter(pl.col("status") == "trained")
        vals.append(df.filter(pl.col("trained_step") >= df["trained_step"].max() // 2)["staleness"].mean())
    formula = theory.applied_compute_mean_staleness(256, 512, sc.throughput_ratio(), 1.0, queue_batches=q)
    assert formula == pytest.approx({1: 1.023, 2: 1.547, 4: 2.593}[q], abs=2e-3)
    assert np.mean(vals) == pytest.approx(formula, rel=0.06)
