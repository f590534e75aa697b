"""Runaway scenarios are refused up front with an estimate (samples, events, memory), unless the
user raises max_samples; the estimate and the bytes per sample are checked against real runs."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rollsim import FullyAsync, OffPolicy, RunLimitError, Scenario, ScenarioError, Synchronous, _rollsim, datasets, presets, simulate
from rollsim.simulation import (BYTES_PER_SAMPLE, BYTES_PER_STEP, _ENGINE_SAMPLE_COLUMNS, _ENGINE_STEP_COLUMNS,
                              _FRAME_SAMPLE_COLUMNS, _FRAME_STEP_COLUMNS, _SEGMENT_COLUMNS, estimate_size)
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


def test_refused_before_running_and_allowed_with_an_explicit_limit():
    sc = Scenario(horizon_s=1e9)
    t0 = time.perf_counter()
    with pytest.raises(ScenarioError, match=r"^max_samples: this scenario would start about 2\.45e\+09 samples"):
        simulate(sc, record="summary")
    assert time.perf_counter() - t0 < 0.1   # nothing ran
    # the chapter's run: 17,865 estimated, 17,851 started
    with pytest.raises(ScenarioError, match=r"about 1\.79e\+04 samples .* more than max_samples = 17800;"):
        simulate(Scenario(), max_samples=17800)
    assert simulate(Scenario(), max_samples=17900, record="summary").summary["samples_started"] == 17851
    # between the estimate (2017) and the real count (2086), the engine stops the run itself
    assert round(estimate_size(Scenario(horizon_s=720.0))["samples"]) == 2017
    with pytest.raises(RunLimitError, match=r"^max_samples: the run would start more than 2050 samples; shorten"):
        simulate(Scenario(horizon_s=720.0), max_samples=2050)


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
