"""The run-time guard counts the work of KV preemptions (``rollsim.simulation.kv_preemption_events``):
instances with many slots and little KV admit every slot at once and then preempt requests one at a
time, each preemption summing the KV of every request still running on the instance."""

from __future__ import annotations

import math

import pytest

from rollsim import FullyAsync, LogNormal, OffPolicy, Scenario, Synchronous, simulate
from rollsim.simulation import KV_SUMS_PER_EVENT, estimate_size, kv_preemption_events

# these runs stop long before a batch fills, on purpose (the preemption cascade at the start is measured)
pytestmark = pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")


def test_hand_worked_value_of_the_first_preemptions():
    """100,000 slots on one instance, 409,553 tokens of KV, no prompt, 20 s at 30 tokens/s: all
    100,000 start (1 token each fits), and 409,553 / 600 are left after 600 tokens each (the mean
    answer, 3,140 tokens, is longer): (100,000**2 - 682.59**2) / 2 terms, 42 per event."""
    sc = Scenario(rollout_slots=100_000, slots_per_instance=100_000, kv_cache_tokens=409_553.0, horizon_s=20.0)
    n1 = 409_553.0 / 600.0
    want = (100_000.0**2 - n1**2) / 2.0 / 42.0
    assert KV_SUMS_PER_EVENT == 42.0
    assert kv_preemption_events(sc) == pytest.approx(want, rel=1e-12)
    assert round(kv_preemption_events(sc)) == 119_042_072
    est = estimate_size(sc, "summary")
    assert est["kv_preemption_events"] == kv_preemption_events(sc)
    assert est["events"] == pytest.approx(est["samples"] + est["steps"] + want, rel=1e-12)
    # two instances do twice the work; a prompt of 100 tokens admits 409,553 / 101 = 4,055 at once
    assert kv_preemption_events(sc.replace(rollout_slots=200_000)) == pytest.approx(2 * want, rel=1e-12)
    n0, n1p = 409_553.0 / 101.0, 409_553.0 / 700.0
    assert kv_preemption_events(sc.replace(prompt_tokens=100.0)) == pytest.approx((n0**2 - n1p**2) / 84.0, rel=1e-12)


def test_the_model_counts_the_preemptions_of_a_run():
    """The premise: a preemption per request the KV cannot keep, n0 - n1 of them (25,000 slots:
    24,317 modelled, 24,324 in the engine)."""
    sc = Scenario(rollout_slots=25_000, slots_per_instance=25_000, kv_cache_tokens=409_553.0, horizon_s=20.0)
    n1 = 409_553.0 / 600.0
    got = simulate(sc, record="summary").summary["preemptions"]
    assert got == 24_324
    assert abs(got - (25_000 - n1)) / got < 1e-3


@pytest.mark.parametrize("sc", [
    Scenario(),
    Scenario(slots_per_instance=32, decode_slowdown_per_seq=0.01),
    Scenario(slots_per_instance=32, decode_slowdown_per_seq=0.01, kv_cache_tokens=160_000.0),  # rows' KV row
    Scenario(slots_per_instance=256, kv_cache_tokens=1e6, prompt_tokens=500.0),
])
def test_no_work_where_the_kv_keeps_every_slot(sc):
    """KV that keeps every slot decoding to the mean answer (or no KV limit): nothing is added."""
    assert kv_preemption_events(sc) == 0.0
    est = estimate_size(sc, "summary")
    assert est["kv_preemption_events"] == 0.0 and est["events"] == est["samples"] + est["steps"]


def test_the_guard_refuses_what_the_first_preemptions_alone_make_too_long():
    """1,000,000 slots with 4e6 tokens of KV: 1.19e10 events of preemptions (about 13 minutes), where
    the samples alone are 1.19e6; with max_events raised, the estimate does not refuse."""
    sc = Scenario(rollout_slots=1_000_000, slots_per_instance=1_000_000, kv_cache_tokens=4e6, horizon_s=20.0)
    est = estimate_size(sc, "summary")
    assert est["samples"] < 1.2e6 and math.isclose(est["kv_preemption_events"], 1.19e10, rel_tol=1e-2)
    from rollsim.errors import RunLimitError
    from rollsim.simulation import runaway_error

    with pytest.raises(RunLimitError, match="first KV preemptions"):
        simulate(sc, record="summary")
    assert runaway_error(sc, None, "summary", 10**11) is None


def test_a_batch_pipeline_preempts_only_its_batch():
    """A batch pipeline starts only its batch's requests at once, not every slot (the model counted
    every slot: 35 preemptions where the engine makes 5). Hand-worked: one batch of 10 answers of
    exactly 10 tokens at 1 token/s on one 40-slot instance with 50 tokens of KV. All 10 start (n0 =
    min(40, 50 / 1, 10) = 10); their KV, 10 x clock, fills at clock 5 and the last admitted is
    preempted, then at 50 / 9 = 5.56, 50 / 8 = 6.25, 50 / 7 = 7.14 and 50 / 6 = 8.33, until n1 = 50 / 10
    = 5 are left, which finish at clock 10 as their KV fills: 5 preemptions. The readmitted five
    (8.33 + 7.14 + 6.25 + 5.56 + 5 = 32.3 tokens, 1.67-5 to go) never fill the 50 again."""
    sc = Scenario(rollout_slots=40, slots_per_instance=40, batch_size=10, kv_cache_tokens=50.0,
                  decode_tokens_per_s=1.0, lengths=LogNormal(mu=math.log(10.0), sigma=0.0, max_tokens=10.0),
                  pipeline=Synchronous(), train_step_s=1.0, horizon_s=1.0)
    s = simulate(sc, record="summary").summary
    assert (s["samples_started"], s["steps"], s["preemptions"]) == (10, 1, 5)
    # the model: n0 - n1 = 10 - 5 preemptions per batch, (10**2 - 5**2) / 2 terms each, and batches
    # 1 + horizon / (generation 10 s + step 1 s) = 1 + 1 / 11 (the guard's estimate of the batches)
    want = (1.0 + 1.0 / 11.0) * (10.0**2 - 5.0**2) / 2.0 / KV_SUMS_PER_EVENT
    assert kv_preemption_events(sc) == pytest.approx(want, rel=1e-12)
    # a batch the KV keeps whole preempts nothing, in the engine and in the model (the model counted
    # the 40 slots: (40**2 - 5**2) / 2 terms)
    small = sc.replace(batch_size=5)
    assert simulate(small, record="summary").summary["preemptions"] == 0
    assert kv_preemption_events(small) == 0.0
    # the fully asynchronous pipeline fills every slot: n0 = 40, and 35 preemptions in the engine
    fa = sc.replace(pipeline=FullyAsync(), horizon_s=10.0)
    assert simulate(fa, record="summary").summary["preemptions"] == 35
    assert kv_preemption_events(fa) == pytest.approx((40.0**2 - 5.0**2) / 2.0 / KV_SUMS_PER_EVENT, rel=1e-12)


def test_unbounded_over_sampling_fills_every_slot():
    """``over_sampling=inf`` submits groups without end: every slot of the instance starts, as with the
    fully asynchronous pipeline (n0 = 40), once per batch."""
    sc = Scenario(rollout_slots=40, slots_per_instance=40, batch_size=10, kv_cache_tokens=50.0,
                  decode_tokens_per_s=1.0, lengths=LogNormal(mu=math.log(10.0), sigma=0.0, max_tokens=10.0),
                  pipeline=OffPolicy(k=0, over_sampling=math.inf), train_step_s=1.0, horizon_s=1.0)
    per_batch = (40.0**2 - 5.0**2) / 2.0 / KV_SUMS_PER_EVENT
    assert kv_preemption_events(sc) / per_batch == pytest.approx(estimate_batches(sc), rel=1e-12)
    assert kv_preemption_events(sc) > per_batch


def estimate_batches(sc: Scenario) -> float:
    from rollsim.simulation import _batch_cycles, _per_answer_s, _step_s

    return _batch_cycles(sc, _per_answer_s(sc), _step_s(sc))[0]
