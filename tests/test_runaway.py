"""Runaway scenarios are refused up front with an estimate, unless the user raises the limit: with
per-sample rows on memory (max_samples), with record="summary" (constant memory) on run time
(max_events); the estimate and the bytes per sample are checked against real runs."""

from __future__ import annotations


import numpy as np
import pytest

from rollsim import (FullyAsync, OffPolicy, OneStepAsync, RunLimitError, Scenario, Synchronous, _rollsim,
                     datasets, presets, simulate)
from rollsim.simulation import (BYTES_PER_SAMPLE, BYTES_PER_STEP, _ENGINE_SAMPLE_COLUMNS, _ENGINE_STEP_COLUMNS,
                              _FRAME_SAMPLE_COLUMNS, _FRAME_STEP_COLUMNS, _SEGMENT_COLUMNS, DEFAULT_MAX_EVENTS,
                              estimate_size)
from rollsim.sweeps import sweep


def test_bytes_per_sample_counts_every_column():
    sc = Scenario(horizon_s=600.0)
    raw = _rollsim.simulate(sc.to_dict(), True)
    n = raw["samples"]["length_tokens"].shape[0]
    assert {k: v.itemsize for k, v in raw["samples"].items()} == _ENGINE_SAMPLE_COLUMNS
    assert {k: v.itemsize for k, v in raw["segments"].items()} == _SEGMENT_COLUMNS
    assert {k: v.itemsize for k, v in raw["steps"].items()} == _ENGINE_STEP_COLUMNS
    res = simulate(sc)
    assert set(res.samples.columns) == set(_FRAME_SAMPLE_COLUMNS)
    assert set(res.steps.columns) == set(_FRAME_STEP_COLUMNS)
    # polars stores booleans and validity as bits: the table's byte per bool is an upper bound
    per_row = res.samples.estimated_size() / n
    assert sum(_FRAME_SAMPLE_COLUMNS.values()) - 2 <= per_row <= sum(_FRAME_SAMPLE_COLUMNS.values())
    assert BYTES_PER_SAMPLE == 58 + 79 + 48 and BYTES_PER_STEP == 76 + 81


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("sc, low, high", [
    (Scenario(), 1.0, 1.01),
    (Scenario(pipeline=FullyAsync(max_staleness=2)), 1.0, 1.01),
    (Scenario(lengths=datasets.deepseek_r1_serving(max_tokens=16384)), 0.98, 1.0),
    (Scenario(pipeline=FullyAsync(on_update="abort_drop")), 0.97, 1.0),
    (presets.areal(scenario=Scenario(group_size=8)), 1.0, 1.01),
    (Scenario(pipeline=Synchronous()), 1.1, 1.25),
    (Scenario(pipeline=OffPolicy(3)), 1.3, 1.5),
    (presets.slime_partial_rollout(), 1.7, 1.85),
])
def test_estimate_against_real_runs(sc, low, high):
    est = estimate_size(sc)["samples"]
    real = simulate(sc, record="summary").summary["samples_started"]
    assert low <= est / real <= high, (est, real)


def test_refused_before_running_and_allowed_with_an_explicit_limit(monkeypatch):
    sc = Scenario(horizon_s=1e9)

    def engine_ran(*args, **kwargs):
        raise AssertionError("the engine ran: the guard must refuse before it")

    monkeypatch.setattr(_rollsim, "simulate", engine_ran)   # refused up front: the engine is never called
    # per-sample rows: the memory guard
    with pytest.raises(RunLimitError, match=r"^max_samples: this scenario would start about 2\.45e\+09 samples \(453 GB "
                                            r"of recorded rows with record='samples'\) .* use record='summary'"):
        simulate(sc)
    # summary: constant memory, the guard is on run time (2.45e9 events, about 2.7 minutes)
    with pytest.raises(RunLimitError, match=r"^max_events: this scenario would process about 2\.45e\+09 events .*, "
                                            r"about 2\.7 min at ~15 M events/s, more than max_events = 1000000000"):
        simulate(sc, record="summary")
    monkeypatch.undo()
    # the chapter's run: 17,865 estimated, 17,851 started
    with pytest.raises(RunLimitError, match=r"about 1\.79e\+04 samples .* more than max_samples = 17800;"):
        simulate(Scenario(), max_samples=17800)
    assert simulate(Scenario(), max_samples=17900, record="summary").summary["samples_started"] == 17851
    # between the estimate (2017) and the real count (2086), the engine stops the run itself
    assert round(estimate_size(Scenario(horizon_s=720.0))["samples"]) == 2017
    with pytest.raises(RunLimitError, match=r"^max_samples: the run would start more than 2050 samples; shorten"):
        simulate(Scenario(horizon_s=720.0), max_samples=2050)
    # an explicit event budget
    with pytest.raises(RunLimitError, match=r"^max_events: .* more than max_events = 17000 "):
        simulate(Scenario(), record="summary", max_events=17000)
    assert simulate(Scenario(horizon_s=600.0), record="summary", max_events=None).summary["steps"] == 2


def test_summary_runs_are_not_held_to_the_memory_guard():
    """50 M samples (the memory guard of per-sample rows, about 9 GB) is no reason to refuse a
    summary run, whose memory is constant: 51 M samples, 51 M events, a few seconds."""
    sc = Scenario(horizon_s=2.1e7)
    assert 5.0e7 < estimate_size(sc, "summary")["samples"] < 5.2e7
    assert estimate_size(sc, "summary")["events"] < DEFAULT_MAX_EVENTS
    with pytest.raises(RunLimitError, match=r"^max_samples: .* more than max_samples = 50000000; use record='summary'"):
        simulate(sc)
    s = simulate(sc, record="summary").summary
    assert s["samples_started"] > 50_000_000 and s["steps"] > 0


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
@pytest.mark.parametrize("sc", [
    Scenario(pipeline=Synchronous(), train_s_per_token=1e-3, horizon_s=36000.0),
    Scenario(pipeline=Synchronous(), train_s_per_token=5e-4, logprob_s_per_token=5e-4, horizon_s=36000.0),
    Scenario(pipeline=OneStepAsync(), train_s_per_token=1e-3, horizon_s=36000.0),
    Scenario(pipeline=FullyAsync(admission_eta=1), train_step_s=1.0, train_s_per_token=2e-4, horizon_s=36000.0),
])
def test_estimate_counts_the_per_token_training_time(sc):
    """A step lasts train_step_s + (train_s_per_token + logprob_s_per_token) x the batch's tokens:
    the estimate counts it (it was 3.8x too high for the first of these, 1.6x for the last)."""
    est = estimate_size(sc)
    s = simulate(sc, record="summary").summary
    assert 1.0 <= est["samples"] / s["samples_started"] <= 1.1, (est, s["samples_started"])
    assert 0.95 <= est["steps"] / s["steps_started"] <= 1.15, (est, s["steps_started"])


def test_valid_run_with_a_per_token_cost_is_not_refused():
    """Training at 10 ms per token of the batch (about 5 h per step): 31,200 samples estimated,
    30,720 started; without the per-token cost the estimate was 845,211 and the run was refused."""
    sc = Scenario(pipeline=Synchronous(), train_s_per_token=1e-2, horizon_s=1e6)
    assert round(estimate_size(sc)["samples"]) == 31200
    assert simulate(sc, max_samples=100_000).summary["samples_started"] == 30720


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # a tiny run: no step needed
def test_numpy_integer_limit_is_accepted():
    assert simulate(Scenario(horizon_s=60.0), max_samples=np.int64(10**6), record="summary").summary["steps"] == 0


def test_sweep_records_refused_runs_without_running_or_storing_them(tmp_path):
    grid = {"horizon_s": [600.0, 1e9]}
    df = sweep(Scenario(horizon_s=600.0), grid, seeds=2, progress=False, on_error="record", out=tmp_path)
    assert df["error"].is_null().to_list() == [True, True, False, False]
    assert df["error"][2].startswith("ScenarioError: max_samples: this scenario would start about 2.45e+09 samples")
    from rollsim.sweeps import read_sweep

    assert read_sweep(tmp_path).height == 2    # refused runs are not stored: a rerun with a higher limit runs them
    again = sweep(Scenario(horizon_s=600.0), {"horizon_s": [600.0, 1e5]}, seeds=2, progress=False, out=tmp_path,
                  max_samples=2**32 - 1)
    assert again["error"].null_count() == 4


def test_refused_runs_are_counted_as_refused_not_as_already_there(tmp_path):
    """A fresh directory holds nothing: its refused runs are counted as refused, never as resumed,
    and the first refusal's message (the scenario's estimate) is in SweepInfo."""
    from rollsim.sweeps import sweep_with_info
    from rollsim.simulation import runaway_error

    grid = {"horizon_s": [600.0, 1e9, 2e9]}
    first = runaway_error(Scenario(horizon_s=1e9), 50_000_000, "summary") + " (sweep scenario horizon_s=1000000000.0)"
    for out in (tmp_path / "a", None):
        _, info = sweep_with_info(Scenario(horizon_s=600.0), grid, seeds=2, progress=False, on_error="record", out=out)
        assert (info.runs, info.ran, info.resumed, info.refused, info.failed) == (6, 2, 0, 4, 4)
        assert info.first_refused == first
    # a rerun: the two runs done are in out; the refused ones are refused again (they were not stored)
    _, info = sweep_with_info(Scenario(horizon_s=600.0), grid, seeds=2, progress=False, on_error="record",
                              out=tmp_path / "a")
    assert (info.runs, info.ran, info.resumed, info.refused, info.failed) == (6, 0, 2, 4, 4)
    # nothing refused: no message
    _, info = sweep_with_info(Scenario(horizon_s=600.0), {"horizon_s": [600.0]}, seeds=2, progress=False)
    assert (info.refused, info.first_refused) == (0, None)
