"""Calibration on verl fully async metrics whose ``timing_s/gen`` is the trainer's wait for samples
(volcengine/verl ``verl/experimental/fully_async_policy/fully_async_trainer.py``: ``marked_timer("gen")``
around ``_get_samples_from_queue``, inside ``timing_s/step``) on a base whose lag bound frees its places
only at a sync (``lag_release="sync"``, ``fully_async_rollouter.py`` ``reset_staleness``), so the
rollout's pause at each weight load is on the rows' critical path. Neither the wait nor the wall time is
the rollout's generation: a slower rollout with a shorter pause gives about the same rows, so the decode
speed and the pause are profiled; the tests assert the baseline matches its own rows, the intervals
cover the known values and the note says the rows do not separate them."""

from __future__ import annotations

import polars as pl
import pytest
from test_calibrate_rows import EX, verl_fully_async_rows

from rollsim import LogNormal, Synchronous, configs
from rollsim.calibration import calibrate
from rollsim.what_if import _measure, whatif

#: (decode tokens/s, pause per weight load s, train_step_s, train_s_per_token, weight_sync_s, mu, sigma,
#: drift, rows): the shipped verl fully async example's parameters on 30 and on 20 rows, and a slower
#: rollout with a shorter pause, a costlier update and shorter answers
CASES = {
    "example-30": (45.0, 80.0, 12.0, 3e-5, 0.75, 6.3, 0.6, 0.003, 30),
    "example-20": (45.0, 80.0, 12.0, 3e-5, 0.75, 6.3, 0.6, 0.003, 20),
    "slow-short-pause": (25.0, 40.0, 10.0, 4e-5, 1.0, 6.0, 0.5, 0.004, 30),
}


@pytest.fixture(scope="module", params=list(CASES), ids=list(CASES))
def case(request):
    d, pause, ts, tpt, ws, mu, sigma, drift, rows = CASES[request.param]
    imp = configs.load(EX / "verl_fully_async.sh")
    true = imp.scenario.replace(decode_tokens_per_s=d, rollout_pause_s=pause, train_step_s=ts, train_s_per_token=tpt,
                                weight_sync_s=ws, lengths=LogNormal(mu, sigma, max_tokens=8192.0))
    m = verl_fully_async_rows(true, rows, drift)
    return request.param, true, drift, m, calibrate(m, imp, bootstrap=40)


def test_the_baseline_matches_its_rows(case):
    name, true, drift, m, cal = case
    df = whatif(cal, [], draws=10)
    res = cal.residuals
    print(name, "per-row step_error:", [round(e, 4) for e in res["step_error"].to_list()])
    assert abs(df["error"][0]) < 0.05                               # the rows' own mean wall time
    assert float(res["step_error"].abs().max()) < 0.10              # every row
    assert float(res["step_error"].abs().mean()) < 0.04
    assert df["measured_step_s"][0] == pytest.approx(float((m["timing_s/step"] + m["timing_s/param_sync"]).mean()))


def test_the_intervals_cover_the_confounded_pair(case):
    name, true, drift, m, cal = case
    p = {r["name"]: r for r in cal.params.iter_rows(named=True)}
    k = true.sync_every
    dec, ovh = p["decode_tokens_per_s"], p["gen_overhead_s"]
    assert dec["low"] <= true.decode_tokens_per_s <= dec["high"]
    assert ovh["low"] * k <= true.rollout_pause_s <= ovh["high"] * k
    assert dec["high"] > 1.1 * dec["low"]                           # not a point: the rows do not separate them
    assert "not separated" in dec["source"] and "not separated" in ovh["source"]
    for other in ("train_step_s", "train_s_per_token", "weight_sync_s"):
        assert p[other]["value"] == pytest.approx(getattr(true, other), rel=0.02)
    # the bootstrap draws take (speed, pause) pairs over the range, so the what-if intervals carry it
    speeds = sorted({d["decode_tokens_per_s"] for d in cal.draws})
    assert len(speeds) >= 2 and speeds[0] >= dec["low"] and speeds[-1] <= dec["high"]


def test_the_note_says_which_parameters_are_not_separated(case):
    name, true, drift, m, cal = case
    assert len(cal.notes) == 1
    note = cal.notes[0]
    assert note.startswith("gen_s: timing_s/gen of a fully asynchronous run is the trainer's wait for samples")
    assert "the rows do not separate decode_tokens_per_s from gen_overhead_s" in note
    assert "lag_release='sync'" in note and "within the 95 % bound" in note


def test_a_synchronous_what_if_interval_holds_the_truth(case):
    # the synchronous pipeline decodes each batch's longest answer: there the speed and the pause no longer
    # trade off one for one, and the interval from the profiled draws must hold the known scenario's
    name, true, drift, m, cal = case
    k = true.sync_every
    df = whatif(cal, [{"pipeline": "sync"}], draws=20)
    truth = true.replace(**{"lengths.mu": true.lengths.mu + drift * cal.reference_step}, pipeline=Synchronous())
    want = _measure(truth, 12, 0, k)["step_s"]
    row = df.filter(pl.col("variant") != "baseline").row(0, named=True)
    print(name, "sync what-if", row["step_s_low"], row["step_s"], row["step_s_high"], "truth", want)
    assert row["step_s_low"] * 0.97 <= want <= row["step_s_high"] * 1.03
