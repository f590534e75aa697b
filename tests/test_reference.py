"""The engine against our plain-Python reference (tests/reference.py), value for value, for several
parameter sets and seeds, in rng="python" mode."""

import math

import pytest

from rollsim import FullyAsync, LogNormal, OffPolicy, Scenario, simulate

import reference

CASES = [
    # (pipeline key, cap, seed, slots, speed, batch, train_s, horizon, mu, sigma, max_tokens)
    ("sync", None, 0, 256, 30.0, 512, 60.0, 7200.0, 7.6, 1.0, 16384.0),
    ("one_step", None, 0, 256, 30.0, 512, 60.0, 7200.0, 7.6, 1.0, 16384.0),
    ("async", None, 0, 256, 30.0, 512, 60.0, 7200.0, 7.6, 1.0, 16384.0),
    ("async", 2, 0, 256, 30.0, 512, 60.0, 7200.0, 7.6, 1.0, 16384.0),
    ("async", 0, 3, 64, 40.0, 128, 30.0, 3600.0, 7.0, 1.2, 8192.0),
    ("async", 1, 11, 32, 25.0, 100, 200.0, 5000.0, 6.5, 0.8, 4096.0),
    ("async", None, 5, 16, 20.0, 8, 500.0, 4000.0, 6.0, 0.5, 2048.0),  # generation outruns training
    ("sync", None, 7, 100, 35.0, 300, 90.0, 9000.0, 7.2, 1.3, 32768.0),
    ("one_step", None, 9, 10, 50.0, 50, 300.0, 6000.0, 6.8, 0.9, 16384.0),
    ("k3", None, 2, 20, 30.0, 30, 400.0, 8000.0, 6.5, 1.0, 16384.0),
    ("sync", None, 1, 600, 30.0, 64, 10.0, 2000.0, 7.6, 1.0, 16384.0),  # more slots than the batch
    ("async", None, 4, 600, 30.0, 64, 10.0, 2000.0, 7.6, 1.0, 16384.0),
]


def scenario_for(case):
    p, cap, seed, slots, speed, batch, train, horizon, mu, sigma, mx = case
    pipeline = {"sync": OffPolicy(0), "one_step": OffPolicy(1), "async": FullyAsync(cap)}.get(p) or OffPolicy(int(p[1:]))
    return Scenario(rollout_slots=slots, decode_tokens_per_s=speed, batch_size=batch, train_step_s=train,
                    horizon_s=horizon, lengths=LogNormal(mu, sigma, mx), pipeline=pipeline, seed=seed, rng="python")


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-cap{c[1]}-seed{c[2]}" for c in CASES])
def test_engine_equals_reference(case):
    p, cap, seed, slots, speed, batch, train, horizon, mu, sigma, mx = case
    ref = reference.chapter(p, cap, seed, slots, speed, batch, train, horizon, mu, sigma, mx)
    res = simulate(scenario_for(case))
    s, df = res.summary, res.samples
    assert s["steps"] == ref.steps
    assert s["end_s"] == ref.end_s
    assert df["length_tokens"].to_list() == ref.length
    assert df["start_s"].to_list() == ref.start
    finish = [None if math.isnan(x) else x for x in ref.finish]
    assert df["finish_s"].to_list() == finish
    assert df["version_start"].to_list() == ref.version
    assert df["trained_step"].to_list() == [None if x < 0 else x for x in ref.trained_step]
    assert df["dropped"].to_list() == ref.dropped
    assert res.steps["start_s"].to_list() == ref.step_start
    assert res.steps["end_s"].to_list() == ref.step_end
    st = ref.staleness()
    assert s["staleness_max"] == max(st)
    assert s["staleness_mean"] == pytest.approx(sum(st) / len(st), rel=1e-12)
    assert s["rollout_utilization"] == pytest.approx(min(1.0, ref.utilization()), rel=1e-9)
    assert s["samples_dropped"] == sum(ref.dropped)
