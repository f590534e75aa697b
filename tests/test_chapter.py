"""The chapter's results table ("RL inference systems: asynchronous rollout, policy staleness and
weight sync", section "Three pipelines"), reproduced exactly with rng="python"."""

import pytest

import rollsim
from rollsim import FullyAsync, OneStepAsync, Scenario, Synchronous, simulate

CHAPTER = Scenario(rng="python")


def summary(pipeline):
    return simulate(CHAPTER.replace(pipeline=pipeline)).summary


def test_default_scenario_is_the_chapters():
    sc = Scenario()
    assert (sc.rollout_slots, sc.decode_tokens_per_s, sc.batch_size, sc.train_step_s, sc.horizon_s) == (
        256, 30.0, 512, 60.0, 7200.0)
    assert (sc.lengths.mu, sc.lengths.sigma, sc.lengths.max_tokens) == (7.6, 1.0, 16384.0)
    assert sc.pipeline == FullyAsync(max_staleness=None)


def test_synchronous_row():
    s = summary(Synchronous())
    assert s["steps"] == 11
    assert round(s["rollout_utilization"], 2) == 0.30
    assert s["staleness_mean"] == 0.0 and s["staleness_max"] == 0
    assert s["samples_trained"] == 11 * 512 and s["samples_dropped"] == 0


def test_one_step_row():
    res = simulate(CHAPTER.replace(pipeline=OneStepAsync()))
    s = res.summary
    assert s["steps"] == 12
    assert round(s["rollout_utilization"], 2) == 0.33
    assert s["staleness_max"] == 1
    # Honest values: the first batch is generated and trained with version 0, every later one lags 1.
    st = res.steps["staleness_mean"].to_list()
    assert st[0] == 0.0 and all(x == 1.0 for x in st[1:])
    assert s["staleness_mean"] == pytest.approx(11 / 12)


def test_fully_async_row():
    s = summary(FullyAsync())
    assert s["steps"] == 34
    assert round(s["rollout_utilization"], 2) == 1.00
    assert round(s["staleness_mean"], 1) == 0.8 and s["staleness_max"] == 4
    assert s["drop_fraction"] == 0.0
    assert round(s["staleness_mean_short"], 1) == 0.4
    assert round(s["staleness_mean_long"], 1) == 2.2


def test_fully_async_cap_2_row():
    s = summary(FullyAsync(max_staleness=2))
    assert s["steps"] == 33
    assert round(s["rollout_utilization"], 2) == 1.00
    assert round(s["staleness_mean"], 1) == 0.7 and s["staleness_max"] == 2
    assert round(s["drop_fraction"], 2) == 0.02
    assert s["samples_dropped"] == 358  # the chapter's `wasted` counter, printed by its code
    assert round(s["staleness_mean_short"], 1) == 0.4
    assert round(s["staleness_mean_long"], 1) == 1.8


def test_compare_frame_has_the_four_rows():
    df = rollsim.compare(CHAPTER)
    assert df["pipeline"].to_list() == ["synchronous", "one-step async", "fully async", "fully async, cap 2"]
    assert df["steps"].to_list() == [11, 12, 34, 33]
    assert [round(x, 2) for x in df["rollout_utilization"]] == [0.30, 0.33, 1.00, 1.00]
    assert df["staleness_max"].to_list() == [0, 1, 4, 2]


def test_exercise_600s_training_one_step_nearly_halves_step_time():
    """Chapter exercise 1: with 600 s of training, rollout and training weigh about the same and
    one-step asynchrony nearly halves the step time (sync ~ rollout + train, one-step ~ max)."""
    sc = CHAPTER.replace(train_step_s=600.0, horizon_s=20 * 3600.0)
    sync = simulate(sc.replace(pipeline=Synchronous())).steps
    one = simulate(sc.replace(pipeline=OneStepAsync())).steps
    sync_step = (sync["end_s"].max() / sync.height)
    one_step = (one["end_s"].max() / one.height)
    assert 0.5 < one_step / sync_step < 0.6
