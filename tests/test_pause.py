"""Rollout pause per weight update: ``rollout_pause_s`` stops the pool at every
update it loads; in-flight requests continue later, new ones start at the end of the pause."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, Scenario, Synchronous, simulate
from invariants import assert_conserved, run_quiet
from strategies import real_scenarios

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TINY = Scenario(rollout_slots=2, decode_tokens_per_s=1.0, batch_size=2, train_step_s=5.0, horizon_s=40.0,
                lengths=Empirical([10.0]))


def test_golden_fully_async_in_flight_requests_wait_out_the_pause():
    """2 slots, 10-token answers at 1 token/s, batch 2, 5 s steps, 3 s pause:
    t=0   a, b start -> done at 10; batch 1 trains 10-15; c, d start at 10
    t=15  version 1 loads: c, d (5 tokens done) stop 3 s -> done at 23 instead of 20
    t=23  batch 2 trains 23-28; e, f start at 23; at 28 they pause 3 s -> done at 36."""
    res = simulate(TINY.replace(rollout_pause_s=3.0, pipeline=FullyAsync()))
    assert res.samples["finish_s"].to_list()[:6] == [10.0, 10.0, 23.0, 23.0, 36.0, 36.0]
    assert res.steps["start_s"].to_list()[:3] == [10.0, 23.0, 36.0]
    # decoded tokens are not lost: every finished answer is 10 tokens, none recomputed
    assert res.summary["tokens_recomputed"] == 0.0
    plain = simulate(TINY.replace(pipeline=FullyAsync()))
    assert plain.samples["finish_s"].to_list()[:4] == [10.0, 10.0, 20.0, 20.0]


def test_golden_synchronous_pause_delays_the_next_batch():
    """Synchronous: generate 0-10, train 10-15, the update at 15 pauses the pool until 18: the
    next batch decodes 18-28 (colocated-style switch cost on the rollout side)."""
    res = simulate(TINY.replace(rollout_pause_s=3.0, pipeline=Synchronous()))
    assert res.samples["start_s"].to_list()[:4] == [0.0, 0.0, 15.0, 15.0]
    assert res.samples["finish_s"].to_list()[:4] == [10.0, 10.0, 28.0, 28.0]
    assert res.steps["start_s"].to_list()[:2] == [10.0, 28.0]


def test_golden_pause_keeps_the_rest_of_a_prefill():
    """A request caught in its prefill finishes the prefill after the pause: prompt 8 tokens at
    1 token/s prefill, answers of 2 tokens at 1 token/s, one slot, batch 1, 1 s steps, pause 2 s.
    t=0   a prefills 0-8, decodes 8-10; trains 10-11; b (a new prompt) starts at 10 and
          prefills 10-18; at 11 version 1 loads: b stops 2 s with 7 s of prefill left, prefills
          13-20 and decodes 20-22."""
    sc = Scenario(rollout_slots=1, decode_tokens_per_s=1.0, batch_size=1, train_step_s=1.0, horizon_s=30.0,
                  lengths=Empirical([2.0]), prompt_tokens=8.0, prefill_tokens_per_s=1.0, rollout_pause_s=2.0,
                  pipeline=FullyAsync())
    res = simulate(sc)
    assert res.samples["finish_s"].to_list()[:2] == [10.0, 22.0]


@pytest.mark.parametrize("on_update", ["keep_recompute", "abort_resubmit", "keep_stale"])
def test_pause_adds_to_the_resume_of_interrupting_modes(on_update):
    """Modes that take requests off their slots at an update resume them after the pause plus any
    recompute prefill: with free prefill, the finish times are those of ``continue``."""
    a = simulate(TINY.replace(rollout_pause_s=3.0, pipeline=FullyAsync(on_update=on_update)))
    assert a.samples["finish_s"].to_list()[:6] == [10.0, 10.0, 23.0, 23.0, 36.0, 36.0]


@settings(max_examples=40, deadline=None)
@given(sc=real_scenarios(), pause=st.sampled_from([0.5, 7.0, 60.0]))
def test_pause_invariants(sc, pause):
    """With a pause, no unbatched sample finishes sooner than its decode time, conservation of
    samples holds, utilization stays in [0, 1], and the run is deterministic."""
    sc = sc.replace(rollout_pause_s=pause)
    res = run_quiet(sc)
    base = run_quiet(sc.replace(rollout_pause_s=0.0))
    assert_conserved(res)
    s = res.summary
    fin = res.samples.filter(res.samples["finish_s"].is_not_null() & ~res.samples["aborted"])
    if fin.height:
        dur = (fin["finish_s"] - fin["start_s"]).to_numpy()
        assert (dur >= 0).all()
        if sc.slots_per_instance == 0:
            need = (fin["length_tokens"] / sc.decode_tokens_per_s).to_numpy()
            assert (dur >= need * (1 - 1e-9) - 1e-9).all()
    assert s["samples_finished"] + s["samples_aborted"] <= s["samples_started"]
    assert s["samples_trained"] <= s["samples_finished"]
    assert repr(simulate(sc).summary) == repr(s)  # deterministic (repr: nan == nan)
    if sc.pipeline == Synchronous():
        # synchronous: every step waits for the pause, so no more steps than without it
        assert s["steps"] <= base.summary["steps"]


def test_default_is_unchanged_and_left_out_of_the_dict():
    assert "rollout_pause_s" not in Scenario().to_dict()
    assert Scenario(rollout_pause_s=2.0).to_dict()["rollout_pause_s"] == 2.0


def test_golden_batched_instances_stand_still_during_the_pause():
    """One instance of 2 slots, 1 token/s alone, slowdown 1 (0.5 token/s each with two on board),
    10-token answers, batch 2, 5 s steps, 3 s pause:
    t=0   a, b start -> done at 20; batch 1 trains 20-25; c, d start at 20
    t=25  version 1: the instance's clock stops until 28 (c, d have 2.5 tokens) -> 7.5 tokens at
          0.5 token/s from 28 -> done at 43 (40 without the pause)
    t=43  batch 2 trains 43-48; e, f start at 43, pause 48-51 -> done at 66."""
    sc = TINY.replace(horizon_s=80.0, slots_per_instance=2, decode_slowdown_per_seq=1.0, pipeline=FullyAsync())
    res = simulate(sc.replace(rollout_pause_s=3.0))
    assert res.samples["finish_s"].to_list()[:6] == [20.0, 20.0, 43.0, 43.0, 66.0, 66.0]
    assert simulate(sc).samples["finish_s"].to_list()[:4] == [20.0, 20.0, 40.0, 40.0]


def test_batched_request_started_during_the_pause_waits_for_its_end():
    """Instances of one slot (nobody shares), prefill of an 8-token prompt at 1 token/s: a request
    that starts during the pause prefills only after it. One slot, batch 1, 1 s steps, 2 s pause,
    2-token answers: a prefills 0-8, decodes 8-10 (slowdown is irrelevant alone); trains 10-11;
    b starts at 10 and prefills; at 11 the clock stops until 13: b has 1 s of prefill done, 7 left
    -> prefills 13-20, decodes 20-22 (the same as independent slots)."""
    sc = Scenario(rollout_slots=1, decode_tokens_per_s=1.0, batch_size=1, train_step_s=1.0, horizon_s=30.0,
                  lengths=Empirical([2.0]), prompt_tokens=8.0, prefill_tokens_per_s=1.0, rollout_pause_s=2.0,
                  pipeline=FullyAsync(), slots_per_instance=1, decode_slowdown_per_seq=0.5)
    assert simulate(sc).samples["finish_s"].to_list()[:2] == [10.0, 22.0]
