"""Calibration of a batch pipeline with over-sampling: the logged (trained) answers are the batch's
shortest, a short-biased subset of those generated; rollsim.calibrate recovers the generated
distribution (and from it the decode speed) by matching simulated trained lengths to the logged ones."""

from __future__ import annotations

import pytest

from rollsim import LogNormal, Scenario, Synchronous
from rollsim.calibration import _trained_lengths, calibrate, fit_lengths, synthetic_metrics

TRUE = dict(decode_tokens_per_s=40.0, rollout_pause_s=40.0, train_step_s=20.0, train_s_per_token=2e-5, weight_sync_s=4.0)
MU, SIGMA, DRIFT = 6.0, 0.7, 0.02


@pytest.mark.parametrize("over", [0.5, 1.0])
def test_over_sampling_recovers_the_generated_lengths(over):
    sc = Scenario(rollout_slots=2048, batch_size=1024, group_size=8, pipeline=Synchronous(over_sampling=over),
                  lengths=LogNormal(mu=MU, sigma=SIGMA, max_tokens=16384), **TRUE)
    m = synthetic_metrics(sc, 20, drift=DRIFT, noise=0.01, seed=1)
    # the trained answers alone look far narrower than the generated ones
    naive = fit_lengths(m["response_mean"].to_numpy(), m["response_max"].to_numpy(),
                        m["response_clip_ratio"].to_numpy(), m["step"].to_numpy() * 0 + 1024, 16384.0,
                        m["step"].to_numpy())
    assert naive["sigma"] < 0.5 * SIGMA
    cal = calibrate(m, sc, bootstrap=5)
    got = cal.values
    assert got["lengths.mu"] == pytest.approx(MU, abs=0.05)
    assert got["lengths.sigma"] == pytest.approx(SIGMA, rel=0.05)
    assert got["lengths.drift"] == pytest.approx(DRIFT, rel=0.05)
    assert got["decode_tokens_per_s"] == pytest.approx(TRUE["decode_tokens_per_s"], rel=0.05)
    assert got["gen_overhead_s"] == pytest.approx(TRUE["rollout_pause_s"], rel=0.05)
    sig = cal.params.filter(cal.params["name"] == "lengths.sigma").row(0, named=True)
    assert sig["low"] <= sig["value"] <= sig["high"] and sig["high"] > 0.6   # the draws are corrected too


def test_trained_lengths_are_the_short_ones():
    sc = Scenario(rollout_slots=2048, batch_size=1024, group_size=8, pipeline=Synchronous(over_sampling=1.0),
                  lengths=LogNormal(mu=MU, sigma=SIGMA, max_tokens=16384), **TRUE)
    t = _trained_lengths(sc, MU, SIGMA, 16384.0)
    assert len(t["mean"]) == 6 and set(t["n"].tolist()) == {1024.0}
    # generated mean exp(mu + sigma^2 / 2) = 518 tokens; the trained half (the groups that finish
    # first out of twice as many) is shorter
    assert all(300 < x < 480 for x in t["mean"])
