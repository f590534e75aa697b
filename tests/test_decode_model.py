"""Batched decoding: decode speed per sequence falls with the instance's batch."""

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, Scenario, ScenarioError, Synchronous, simulate
from invariants import assert_conserved, run_quiet
from strategies import real_scenarios

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_golden_two_sequences_share_an_instance():
    """One instance of 2 slots, 1 token/s alone, slowdown 1 (half speed with two), answers of 10
    tokens, synchronous batch of 3:
    t=0   s0, s1 start; two on board: 0.5 token/s each -> both finish at 20
    t=20  s0 done; s2 starts on slot 0 (still two on board); s1 done at the same time; s2 alone
          from then on: 1 token/s -> done at 30; the batch is generated at 30."""
    sc = Scenario(rollout_slots=2, decode_tokens_per_s=1.0, batch_size=3, train_step_s=5.0, horizon_s=10.0,
                  lengths=Empirical([10.0]), pipeline=Synchronous(), slots_per_instance=2,
                  decode_slowdown_per_seq=1.0)
    res = simulate(sc)
    assert res.samples["finish_s"].to_list() == [20.0, 20.0, 30.0]
    assert res.steps["start_s"].to_list() == [30.0]
    # the same without batching: 10, 10, 20
    plain = simulate(sc.replace(decode_slowdown_per_seq=0.0))
    assert plain.samples["finish_s"].to_list() == [10.0, 10.0, 20.0]


def test_golden_instances_are_independent():
    """Two instances of one slot each: nobody shares, so slowdown changes nothing."""
    sc = Scenario(rollout_slots=2, decode_tokens_per_s=1.0, batch_size=2, train_step_s=5.0, horizon_s=10.0,
                  lengths=Empirical([10.0]), pipeline=Synchronous(), slots_per_instance=1,
                  decode_slowdown_per_seq=3.0)
    assert simulate(sc).samples["finish_s"].to_list() == [10.0, 10.0]


@settings(max_examples=60)
@given(real_scenarios(), st.sampled_from([1, 2, 4]), st.floats(0.0, 0.5))
def test_batched_decoding_keeps_every_invariant(sc, per, slowdown):
    """Conservation, spans and time bounds with batched decoding: a sample decoding alone takes
    length / speed; with `per` on board at most length * (1 + slowdown * (per - 1)) / speed (plus
    any prefill, which is charged at the speed when it starts)."""
    if sc.rollout_slots % per:
        per = 1
    sc = sc.replace(slots_per_instance=per, decode_slowdown_per_seq=slowdown)
    res = run_quiet(sc)
    assert_conserved(res)
    df = res.samples
    whole = df.filter(pl.col("finish_s").is_not_null() & ~pl.col("aborted") & (pl.col("n_versions") == 1))
    # answers decoded in one go (no batch stop, no recompute prefill, no prompt prefill)
    in_one_go = isinstance(sc.pipeline, FullyAsync) and sc.pipeline.on_update in ("continue", "wait", "keep_stale")
    if sc.prompt_tokens == 0 and in_one_go and whole.height:
        dur = whole["finish_s"] - whole["start_s"]
        fast = whole["length_tokens"] / sc.decode_tokens_per_s
        slow = fast * (1 + slowdown * (per - 1))
        assert (dur >= fast * (1 - 1e-9) - 1e-9).all()
        assert (dur <= slow * (1 + 1e-9) + 1e-9).all()


def test_stragglers_decode_alone_faster():
    """Memory-bound decoding (slowdown 0.004 per sequence: 2x slower at 256 on board): synchronous
    rollout's tail runs nearly alone, so utilization rises while steps get longer."""
    base = Scenario(pipeline=Synchronous(), rng="python", slots_per_instance=256)
    plain = simulate(base).summary
    batched = simulate(base.replace(decode_slowdown_per_seq=0.004)).summary
    assert batched["steps"] <= plain["steps"]
    assert batched["rollout_utilization"] > plain["rollout_utilization"]


def test_bad_decode_settings():
    with pytest.raises(ScenarioError, match="^slots_per_instance:"):
        Scenario(slots_per_instance=3)
    with pytest.raises(ScenarioError, match="^decode_slowdown_per_seq:"):
        Scenario(slots_per_instance=256, decode_slowdown_per_seq=-1.0)


def test_golden_least_loaded_routing():
    """Two instances of 2 slots, slowdown 1: two requests go to different instances (least loaded
    first), so each decodes alone at 1 token/s and finishes at 10 s; packed on one instance they
    would share it and finish at 20 s."""
    sc = Scenario(rollout_slots=4, decode_tokens_per_s=1.0, batch_size=2, train_step_s=5.0, horizon_s=10.0,
                  lengths=Empirical([10.0]), pipeline=Synchronous(), slots_per_instance=2,
                  decode_slowdown_per_seq=1.0)
    res = simulate(sc)
    assert res.samples["finish_s"].to_list() == [10.0, 10.0]
    assert res.samples["slot"].to_list() == [0, 2]
    one = simulate(sc.replace(rollout_slots=2))  # a single instance: they share it
    assert one.samples["finish_s"].to_list() == [20.0, 20.0]


def test_routing_balances_instances_in_steady_state():
    """Fully asynchronous, 4 instances of 64 slots: every instance stays full (a freed slot's
    request may go to another instance, but the pool is always full), and throughput with batched
    decoding is below the unbatched pool's."""
    base = Scenario(horizon_s=3600.0, slots_per_instance=64)
    batched = simulate(base.replace(decode_slowdown_per_seq=0.004))
    plain = simulate(base)
    assert batched.summary["rollout_utilization"] > 0.999
    assert batched.summary["samples_finished"] < plain.summary["samples_finished"]
    per_instance = batched.samples.with_columns((pl.col("slot") // 64).alias("inst")).group_by("inst").len()
    assert per_instance.height == 4 and per_instance["len"].min() > 0.8 * per_instance["len"].max()
