"""Lengths that drift inside a run (``Scenario.length_drift``): the engine scales each answer's
tokens by a factor of the policy version its request starts under, cut at the cap; optional
length feedback; ``LengthDrift.from_metrics`` and the calibration's drift."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rollsim
from rollsim import (Empirical, FullyAsync, LengthDrift, LogNormal, OffPolicy, OneStepAsync, Scenario,
                     ScenarioError, Synchronous, simulate)
from rollsim import _rollsim, calibration, datasets, learning

# ---- hand-worked goldens -------------------------------------------------------------------------
# Two slots at 10 tokens/s, batches of 2, 10 s per step, every base answer 100 tokens, synchronous:
# batch i is generated with version i (the steps before it), so its answers are 100 * scale(i)
# tokens and take 10 * scale(i) s; the step trains 2 of them.
TINY = dict(rollout_slots=2, batch_size=2, decode_tokens_per_s=10.0, train_step_s=10.0, horizon_s=100.0,
            lengths=Empirical([100.0]), pipeline=Synchronous())


def test_linear_drift_golden_with_the_cap():
    # scale 1 + 0.5 v: 100, 150, 200, 250 -> cut at 220 tokens
    res = simulate(Scenario(**TINY, length_drift=LengthDrift("linear", 0.5, max_tokens=220.0)))
    assert res.samples["length_tokens"].to_list() == [100.0, 100.0, 150.0, 150.0, 200.0, 200.0, 220.0, 220.0]
    assert res.samples["version_start"].to_list() == [0, 0, 1, 1, 2, 2, 3, 3]
    # gen 0-10, train 10-20; gen 20-35, train 35-45; gen 45-65, train 65-75; gen 75-97, train 97-107
    assert res.steps["start_s"].to_list() == [10.0, 35.0, 65.0, 97.0]
    assert res.steps["end_s"].to_list() == [20.0, 45.0, 75.0, 107.0]
    assert res.steps["tokens"].to_list() == [200.0, 300.0, 400.0, 440.0]
    # the cut answers are the clipped ones (verl response_length/clip_ratio)
    assert int((res.samples["length_tokens"] == 220.0).sum()) == 2


def test_the_drift_sees_the_rollout_s_version_under_sync_every():
    # the rollout loads weights after every 2nd step: versions 0, 0, 2, 2 -> 100, 100, 200, 200
    res = simulate(Scenario(**TINY, sync_every=2, length_drift=LengthDrift("linear", 0.5, max_tokens=1e4)))
    assert res.samples["version_start"].to_list() == [0, 0, 0, 0, 2, 2, 2, 2]
    assert res.steps["tokens"].to_list() == [200.0, 200.0, 400.0, 400.0]


def test_table_drift_golden():
    # (0, 1), (2, 2): version 1 -> 1.5, version 2 -> 2, held at 2 beyond the table
    res = simulate(Scenario(**TINY, length_drift=LengthDrift("table", table=((0, 1.0), (2, 2.0)), max_tokens=1e4)))
    assert res.samples["length_tokens"].to_list() == [100.0, 100.0, 150.0, 150.0, 200.0, 200.0, 200.0, 200.0]


def test_the_default_cap_is_the_lengths_limit():
    # Empirical with max_tokens: its limit; without: its longest value; LogNormal: its max_tokens
    grow = LengthDrift("linear", 1.0)
    assert grow.to_dict(Empirical([100.0], max_tokens=150.0))["max_tokens"] == 150.0
    assert grow.to_dict(Empirical([100.0, 120.0]))["max_tokens"] == 120.0
    assert grow.to_dict(LogNormal(max_tokens=8192.0))["max_tokens"] == 8192.0
    res = simulate(Scenario(**{**TINY, "lengths": Empirical([100.0], max_tokens=150.0)}, length_drift=grow))
    got = res.samples["length_tokens"].to_list()
    assert got[:2] == [100.0, 100.0] and set(got[2:]) == {150.0} and len(got) == 10
    sc = Scenario(length_drift=grow)
    assert sc.to_dict()["length_drift"] == {"kind": "linear", "rate": 1.0, "table": [], "max_tokens": 16384.0,
                                            "feedback": 0.0}


def test_scales_are_the_engine_s():
    assert LengthDrift("linear", 0.01).scale([0, 10, 100]).tolist() == [1.0, 1.1, 2.0]
    assert LengthDrift("log", 0.5).scale([0.0, math.e - 1]).tolist() == pytest.approx([1.0, 1.5])
    assert LengthDrift("exp", 0.1).scale([0, 10]).tolist() == [1.0, math.exp(1.0)]
    t = LengthDrift("table", table=((0, 1.0), (10, 2.0)))
    assert t.scale([[0, 5], [10, 50]]).tolist() == [[1.0, 1.5], [2.0, 2.0]]
    assert LengthDrift("linear", -1.0).scale([5])[0] == 1e-6
    assert learning.LengthDrift is LengthDrift is rollsim.LengthDrift  # one implementation


# ---- zero drift is no drift, bit for bit --------------------------------------------------------
ZERO = [LengthDrift(), LengthDrift("exp", 0.0), LengthDrift("log", 0.0), LengthDrift("table", table=((0, 1.0), (9, 1.0))),
        LengthDrift(feedback=0.0, max_tokens=None)]
BASES = [
    Scenario(horizon_s=1800.0, rng="python"),  # the chapter's (fast path without a drift)
    Scenario(horizon_s=1200.0, group_size=4, batch_size=64, rollout_slots=64,
             lengths=LogNormal(group_correlation=0.5), pipeline=FullyAsync(max_staleness=1, on_update="abort_resubmit")),
    Scenario(horizon_s=1200.0, rollout_slots=64, batch_size=64, lengths=datasets.by_name("deepseek-r1"),
             pipeline=OffPolicy(2, over_sampling=0.5, keep_partial=True), sync_every=2),
    Scenario(horizon_s=900.0, rollout_slots=64, batch_size=64, pipeline=Synchronous(), slots_per_instance=16,
             decode_slowdown_per_seq=0.01, prompt_tokens=200.0, prefill_tokens_per_s=5e4),
]


def _same_run(a: rollsim.Result, b: rollsim.Result) -> None:
    assert a.samples.equals(b.samples) and a.steps.equals(b.steps) and a.segments.equals(b.segments)
    assert repr(a.summary) == repr(b.summary)  # (NaN-aware)


@pytest.mark.parametrize("i", range(len(BASES)))
def test_zero_drift_equals_no_drift_bit_for_bit(i):
    base = BASES[i]
    plain = simulate(base, record="samples")
    for drift in ZERO:
        _same_run(plain, simulate(base.replace(length_drift=drift), record="samples"))


@pytest.mark.filterwarnings("ignore::rollsim.StalenessCapLivelockWarning")  # the cap 1 under sync_every 3: on purpose
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32), k=st.sampled_from([0, 1, 3]), sync_every=st.integers(1, 3),
       group=st.sampled_from([1, 2]), cap=st.sampled_from([None, 1]))
def test_zero_drift_property(seed, k, sync_every, group, cap):
    pipe = FullyAsync(max_staleness=cap) if k == 3 else OffPolicy(k)
    sc = Scenario(rollout_slots=32, batch_size=32, group_size=group, horizon_s=600.0, seed=seed, pipeline=pipe,
                  sync_every=sync_every)
    _same_run(simulate(sc, record="samples"), simulate(sc.replace(length_drift=LengthDrift("exp", 0.0)),
                                                       record="samples"))


# ---- a growing drift never lowers the mean generated length per step -----------------------------
def _per_version_mean(res: rollsim.Result) -> list[float]:
    g = res.samples.group_by("version_start").agg(pl.col("length_tokens").mean()).sort("version_start")
    return g["length_tokens"].to_list()


@pytest.mark.filterwarnings("ignore::rollsim.StalenessCapLivelockWarning")  # the cap 1 under sync_every 3: on purpose
@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")  # uncapped async, 50-token answers
@settings(max_examples=15, deadline=None)
@given(kind=st.sampled_from(["linear", "log", "exp", "table"]), rate=st.floats(0.0, 0.5),
       pipe=st.sampled_from(["sync", "one_step", "async", "async_cap"]), sync_every=st.integers(1, 3),
       values=st.lists(st.floats(50.0, 2000.0), min_size=1, max_size=1))
def test_a_growing_drift_never_lowers_the_generated_mean_per_step(kind, rate, pipe, sync_every, values):
    # deterministic base lengths: each version's mean is the base times its scale, nondecreasing
    table = ((0, 1.0), (2, 1.0 + rate), (5, 1.0 + 3 * rate))
    drift = LengthDrift(kind, rate if kind != "table" else 0.0, table=table if kind == "table" else (),
                        max_tokens=5000.0)
    pipeline = {"sync": Synchronous(), "one_step": OneStepAsync(), "async": FullyAsync(),
                "async_cap": FullyAsync(max_staleness=1)}[pipe]
    sc = Scenario(rollout_slots=16, batch_size=16, decode_tokens_per_s=100.0, train_step_s=5.0, horizon_s=400.0,
                  lengths=Empirical(values), pipeline=pipeline, sync_every=sync_every, length_drift=drift)
    means = _per_version_mean(simulate(sc, record="samples"))
    assert all(b >= a * (1 - 1e-12) for a, b in zip(means, means[1:])), means
    assert means[0] == pytest.approx(values[0], rel=1e-12)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32), rate=st.floats(0.0, 1.0), pipe=st.sampled_from(["sync", "async"]))
def test_each_answer_is_at_least_as_long_under_a_growing_drift(seed, rate, pipe):
    # the same draws (one per answer, in start order): answer i is min(x_i * scale, cap) >= min(x_i, cap)
    sc = Scenario(rollout_slots=32, batch_size=32, horizon_s=900.0, seed=seed,
                  pipeline=Synchronous() if pipe == "sync" else FullyAsync())
    plain = simulate(sc, record="samples").samples["length_tokens"].to_numpy()
    grown = simulate(sc.replace(length_drift=LengthDrift("linear", rate)), record="samples").samples
    n = min(plain.size, grown.height)
    assert (grown["length_tokens"].to_numpy()[:n] >= plain[:n]).all()


# ---- from a real run's metrics -------------------------------------------------------------------
def test_from_metrics_reproduces_the_means_lognormal_and_empirical():
    means = np.array([1200.0, 1500.0, 2100.0, 2600.0])
    base = LogNormal(mu=7.0, sigma=1.0, max_tokens=8192.0)
    d = LengthDrift.from_metrics(means, base)
    assert d.kind == "table" and [v for v, _ in d.table] == [0.0, 1.0, 2.0, 3.0]
    for (_, s), m in zip(d.table, means):
        got = LogNormal(mu=base.mu + math.log(s), sigma=1.0, max_tokens=8192.0).mean_tokens()
        assert got == pytest.approx(m, rel=1e-9)
    emp = Empirical([100.0, 400.0, 1000.0, 3000.0], weights=[1, 2, 3, 1], max_tokens=4000.0)
    d = LengthDrift.from_metrics([600.0, 1500.0], emp, steps=[0, 10])
    for (_, s), m in zip(d.table, (600.0, 1500.0)):
        w = emp.weights / emp.weights.sum()
        assert float((np.minimum(emp.values * s, 4000.0) * w).sum()) == pytest.approx(m, rel=1e-9)
    assert [v for v, _ in d.table] == [0.0, 10.0]


def test_from_metrics_drives_a_run():
    # a synchronous run with a per-step mean from metrics generates about those means per version
    means = [1500.0, 2000.0, 2500.0, 3000.0, 3500.0, 4000.0]
    base = LogNormal(mu=7.0, sigma=0.5, max_tokens=16384.0)
    sc = Scenario(rollout_slots=512, batch_size=512, decode_tokens_per_s=200.0, train_step_s=10.0, horizon_s=600.0,
                  lengths=base, pipeline=Synchronous(), length_drift=LengthDrift.from_metrics(means, base))
    got = _per_version_mean(simulate(sc, record="samples"))
    assert len(got) >= 4
    for g, m in zip(got, means):
        assert g == pytest.approx(m, rel=0.05)


def test_calibrate_s_drift_maps_onto_an_exp_drift():
    sc = Scenario(rollout_slots=64, batch_size=64, pipeline=Synchronous(), lengths=LogNormal(7.0, 0.8, 16384.0))
    m = calibration.synthetic_metrics(sc, 40, drift=0.02)
    cal = rollsim.calibrate(m, sc, bootstrap=20)
    base, drift = cal.length_drift()
    v = cal.values
    assert drift == LengthDrift("exp", rate=v["lengths.drift"]) and drift.rate == pytest.approx(0.02, abs=0.005)
    first = float(cal.metrics["step"].min())
    assert base.mu == pytest.approx(v["lengths.mu"] + v["lengths.drift"] * first)
    assert (base.sigma, base.max_tokens) == (pytest.approx(v["lengths.sigma"]), 16384.0)
    # version t of the drift is the calibration's lengths at step first + t
    t = 7.0
    at = cal.scenario_for(v, first + t).lengths
    assert base.mu + math.log(float(drift.scale([t])[0])) == pytest.approx(at.mu, abs=1e-12)


# ---- length feedback -----------------------------------------------------------------------------
def test_feedback_at_max_staleness_1_pushes_toward_short_answers():
    capped = Scenario(pipeline=FullyAsync(max_staleness=1))
    plain = _per_version_mean(simulate(capped, record="samples"))
    fed = _per_version_mean(simulate(capped.replace(length_drift=LengthDrift(feedback=0.1)), record="samples"))
    # without feedback the generated mean stays where it was (the draws do not know the version)
    assert abs(np.mean(plain[-10:]) / plain[0] - 1) < 0.1
    # with feedback it falls, step after step: the cap trains shorter answers than are generated
    assert fed[0] == pytest.approx(plain[0], rel=1e-12) and np.mean(fed[-10:]) < 0.5 * fed[0]
    halves = np.array_split(np.array(fed), 4)
    assert all(np.mean(b) < np.mean(a) for a, b in zip(halves, halves[1:]))
    # uncapped, the trained answers catch up with the generated ones: no lasting fall
    free = _per_version_mean(simulate(Scenario(length_drift=LengthDrift(feedback=0.1)), record="samples"))
    assert np.mean(free[-10:]) > 0.85 * free[0]


def test_feedback_zero_and_synchronous_feedback_change_nothing():
    sc = Scenario(horizon_s=1800.0, rollout_slots=64, batch_size=64, pipeline=Synchronous())
    plain = simulate(sc, record="samples")
    _same_run(plain, simulate(sc.replace(length_drift=LengthDrift(feedback=0.0)), record="samples"))
    # synchronous batches train exactly what was generated: the gap is 0 (to rounding)
    fed = simulate(sc.replace(length_drift=LengthDrift(feedback=1.0)), record="samples")
    np.testing.assert_allclose(fed.samples["length_tokens"].to_numpy(), plain.samples["length_tokens"].to_numpy(),
                               rtol=1e-12)


# ---- TOML, the wire, the engine's own checks ------------------------------------------------------
def test_toml_round_trip():
    for d in (LengthDrift("exp", 0.01), LengthDrift("table", table=((0, 1.0), (20, 1.5)), max_tokens=9000.0,
                                                    feedback=0.25)):
        sc = Scenario(length_drift=d)
        assert Scenario.from_toml_str(sc.to_toml()) == sc
    text = '[length_drift]\nkind = "log"\nrate = 0.3\n'
    assert Scenario.from_toml_str(text).length_drift == LengthDrift("log", 0.3)


def test_kv_capacity_counts_the_drift_s_cap():
    kw = dict(slots_per_instance=8, rollout_slots=64, kv_cache_tokens=20000.0)
    Scenario(**kw)  # 16384 + 1 fits
    with pytest.raises(ScenarioError, match=r"^kv_cache_tokens: must be >= prompt_tokens \+ the longest possible "
                                            r"answer \+ 1 = 0 \+ 30000 \+ 1 = 30001"):
        Scenario(**kw, length_drift=LengthDrift("linear", 0.1, max_tokens=30000.0))


@pytest.mark.parametrize("change,message", [
    ({"rate": 200.0}, "length_drift.rate: must be in [-1, 100], got 200.0"),
    ({"feedback": 1.5}, "length_drift.feedback: must be in [0, 1], got 1.5"),
    ({"max_tokens": 0.5}, "length_drift.max_tokens: must be in [1, 2**40] tokens, got 0.5"),
    ({"kind": "table", "table": []}, "length_drift.table: must hold at least one (version, scale) pair"),
    ({"kind": "table", "table": [[0.0, 1.0], [0.0, 2.0]]},
     "length_drift.table: versions must be finite, >= 0 and strictly increasing; item 1 has version 0.0"),
    ({"kind": "table", "table": [[0.0, 0.0]]}, "length_drift.table: scales must be in (0, 1e6]; item 0 has scale 0.0"),
    ({"kind": "cubic"}, "length_drift.kind: must be one of linear, log, exp, table, got \"cubic\""),
])
def test_the_engine_refuses_bad_drifts_alike(change, message):
    d = Scenario(horizon_s=60.0, length_drift=LengthDrift()).to_dict()
    d["length_drift"] = {**d["length_drift"], **change}
    with pytest.raises(ScenarioError) as e:
        _rollsim.simulate(d, False)
    assert str(e.value) == message
