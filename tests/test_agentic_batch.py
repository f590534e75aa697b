"""Agentic trajectories in the batch pipelines (synchronous, one-step, k-step; colocated is the
synchronous pipeline with a longer step): a hand-worked synchronous step, conservation of samples,
turns and tokens, and one turn with zero tool latency equal to the single-turn batch run bit for bit."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rollsim
from rollsim import Empirical, LogNormal, OffPolicy, OneStepAsync, Scenario, Synchronous
from rollsim.agentic import Agentic
from strategies import real_scenarios
from test_agentic import _check_invariants, _frames_equal

#: Two slots, a batch of two trajectories of two 100-token turns at 10 tokens/s (10 s each), one
#: environment, 5 s tool calls returning 50 tokens prefilled at 100 tokens/s (0.5 s), 10 s steps.
TWO = Scenario(rollout_slots=2, batch_size=2, decode_tokens_per_s=10.0, train_step_s=10.0, horizon_s=30.0,
               lengths=Empirical([100.0]), prefill_tokens_per_s=100.0, pipeline=Synchronous())


def two(policy: str, **kw: object) -> rollsim.Result:
    a = Agentic(max_turns=2, tool_latency_s=5.0, observation_tokens=50.0, env_slots=1,
                kv_policy=policy)  # type: ignore[arg-type]
    return rollsim.simulate(TWO.replace(agentic=a, **kw))


@pytest.mark.parametrize(("policy", "prefill", "busy", "hold"), [
    # first turns 0-10 s on both slots; A's call 10-15 s, B's waits for the environment until 15 s
    # and runs 15-20 s; second turns: prefill (the observation, 0.5 s) and 10 s of decoding
    ("keep", 0.5, 41.0, 0.0),
    # the KV is dropped: the next turn prefills 100 + 50 tokens (1.5 s)
    ("drop", 1.5, 43.0, 0.0),
    # both slots are held during the calls (5 s and 10 s), counted busy
    ("hold", 0.5, 56.0, 15.0),
])
def test_a_synchronous_step_waits_for_every_trajectory(policy: str, prefill: float, busy: float, hold: float) -> None:
    res = two(policy)
    df = res.samples.sort("sample_id")
    assert df["finish_s"].to_list() == [15.0 + prefill + 10.0, 20.0 + prefill + 10.0]
    assert df["length_tokens"].to_list() == [200.0, 200.0] and df["turns"].to_list() == [2, 2]
    assert df["tool_s"].to_list() == [5.0, 10.0] and df["env_wait_s"].to_list() == [0.0, 5.0]
    assert df["status"].to_list() == ["trained", "trained"] and df["staleness"].to_list() == [0, 0]
    # the batch is generated with B's finish, trains 10 s; the next one would start at or after
    # horizon_s = 30 s, so the run ends with the step
    step = res.steps.row(0, named=True)
    assert res.steps.height == 1
    assert (step["start_s"], step["end_s"], step["samples"], step["tokens"]) == (30.0 + prefill, 40.0 + prefill, 2,
                                                                                 400.0)
    s = res.summary
    assert (s["end_s"], s["samples_trained"], s["tokens_trained"], s["tokens_wasted"]) == (40.0 + prefill, 2, 400.0,
                                                                                         0.0)
    assert (s["slot_busy_s"], s["gpu_hold_s"], s["gpu_prefill_s"], s["gpu_decode_s"]) == (busy, hold, 2 * prefill,
                                                                                        40.0)
    assert (s["turns"], s["tool_calls"], s["tokens_observed"], s["env_busy_s"], s["env_wait_s"]) == (4, 2, 100.0,
                                                                                                   10.0, 5.0)
    assert s["env_utilization"] == 10.0 / (40.0 + prefill)


def test_one_step_overlaps_the_next_batch_with_training() -> None:
    res = two("keep", pipeline=OneStepAsync(), horizon_s=31.0)
    df = res.samples.sort("sample_id")
    assert df["start_s"].to_list() == [0.0, 0.0, 30.5, 30.5]
    assert df["finish_s"].to_list()[2:] == [56.0, 61.0]
    assert res.steps["start_s"].to_list() == [30.5, 61.0]


def test_colocated_runs_agentic() -> None:
    base = TWO.replace(agentic=Agentic(max_turns=2, tool_latency_s=5.0, observation_tokens=50.0, env_slots=1))
    res = rollsim.simulate(rollsim.resources.colocated(base, offload_s=2.0, onload_s=3.0))
    assert res.steps.row(0, named=True)["end_s"] == 30.5 + 10.0 + 5.0


def test_failed_calls_drop_groups_that_are_replaced() -> None:
    sc = Scenario(rollout_slots=16, batch_size=32, group_size=4, horizon_s=3600.0, seed=11, pipeline=Synchronous(),
                  agentic=Agentic(max_turns=6, tool_latency_s=3.0, observation_tokens=80.0, failure_rate=0.1))
    res = rollsim.simulate(sc)
    _check_invariants(res)
    assert res.summary["trajectories_failed"] > 0
    assert (res.steps["samples"] == 32).all()


BASES = [
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, seed=3, pipeline=Synchronous()),
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, group_size=4, prompt_tokens=500.0,
             prefill_tokens_per_s=20000.0, pipeline=OneStepAsync(), seed=4),
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, slots_per_instance=16, decode_slowdown_per_seq=0.01,
             kv_cache_tokens=200_000.0, prompt_tokens=200.0, prefill_tokens_per_s=10000.0,
             pipeline=OffPolicy(k=2), seed=5, rng="python"),
    Scenario(rollout_slots=32, batch_size=64, horizon_s=3600.0, rollout_pause_s=3.0, sync_every=2,
             pipeline=Synchronous(), seed=6),
]
AGENTS = [
    Agentic(max_turns=8, tool_latency_s=LogNormal(1.0, 1.0, 600.0), observation_tokens=LogNormal(5.0, 1.0, 4000.0),
            stop_prob=0.2, turn_scale=(1.0, 0.3), max_context_tokens=100_000.0),
    Agentic(max_turns=30, tool_latency_s=20.0, observation_tokens=300.0, kv_policy="drop", env_slots=16,
            env_overhead_s=1.0, failure_rate=0.05, max_context_tokens=40_000.0),
    Agentic(max_turns=5, tool_latency_s=Empirical([0.5, 2.0, 30.0]), observation_tokens=50.0, kv_policy="hold",
            failure_rate=0.2, on_failure="retry", sticky=False, max_context_tokens=100_000.0),
]


@pytest.mark.parametrize("base", BASES, ids=range(len(BASES)))
@pytest.mark.parametrize("agent", AGENTS, ids=range(len(AGENTS)))
def test_invariants(base: Scenario, agent: Agentic) -> None:
    res = rollsim.simulate(base.replace(agentic=agent))
    _check_invariants(res)
    s = res.summary
    assert s["samples_trained"] > 0 and s["turns"] > s["samples_finished"]
    # every batch trains batch_size samples; a batch waits for all its trajectories: nothing of a
    # trained step is in a tool call when it starts
    assert (res.steps["samples"] == base.batch_size).all()
    summary = rollsim.simulate(base.replace(agentic=agent), record="summary").summary
    assert all(summary[k] == s[k] or (math.isnan(summary[k]) and math.isnan(s[k])) for k in summary)


@pytest.mark.parametrize("base", BASES, ids=range(len(BASES)))
@pytest.mark.parametrize("policy", ["keep", "drop", "hold"])
def test_one_turn_is_the_single_turn_batch_run_bit_for_bit(base: Scenario, policy: str) -> None:
    a = Agentic(max_turns=1, tool_latency_s=0.0, observation_tokens=0.0, kv_policy=policy)  # type: ignore[arg-type]
    _frames_equal(rollsim.simulate(base.replace(agentic=a)), rollsim.simulate(base))


batch = st.builds(OffPolicy, k=st.integers(0, 2), keep_partial=st.booleans())


@settings(max_examples=40, deadline=None)
@given(real_scenarios(pipeline=batch), st.sampled_from(["keep", "drop", "hold"]))
def test_one_turn_generated(base: Scenario, policy: str) -> None:
    a = Agentic(max_turns=1, tool_latency_s=0.0, observation_tokens=0.0, kv_policy=policy)  # type: ignore[arg-type]
    _frames_equal(rollsim.simulate(base.replace(agentic=a)), rollsim.simulate(base))


@settings(max_examples=40, deadline=None)
@given(real_scenarios(pipeline=batch), st.sampled_from(["keep", "drop", "hold"]), st.integers(2, 6),
       st.floats(0.0, 30.0), st.sampled_from([None, 2, 8]))
def test_conservation_generated(base: Scenario, policy: str, turns: int, tool_s: float, env: int | None) -> None:
    a = Agentic(max_turns=turns, tool_latency_s=tool_s, observation_tokens=60.0, stop_prob=0.3, env_slots=env,
                kv_policy=policy)  # type: ignore[arg-type]
    _check_invariants(rollsim.simulate(base.replace(agentic=a)))


def test_asynchrony_on_the_presets() -> None:
    # the README's ROLL Flash row: samples trained per hour in 4 hours, synchronous vs fully async
    from rollsim import FullyAsync, trajectories

    def rate(sc: Scenario) -> int:
        s = rollsim.simulate(sc.replace(horizon_s=4 * 3600.0), record="summary").summary
        return round(s["samples_trained"] / s["end_s"] * 3600)

    code, swe = trajectories.code_interpreter_math(), trajectories.swe_agent()
    assert [rate(code.replace(pipeline=p)) for p in (Synchronous(), OneStepAsync(), FullyAsync(max_staleness=2))] == \
        [2423, 2602, 5376]
    assert [rate(swe.replace(pipeline=p)) for p in (Synchronous(), FullyAsync(max_staleness=2))] == [661, 832]


@pytest.mark.parametrize("policy", ["keep", "hold"])
def test_a_dropped_group_s_calls_end_in_time_order(policy: str) -> None:
    # a failed call drops its group, which is replaced; the batch may end while a sibling is still
    # in a long call: it is aborted when the call returns (during the step), and no trajectory
    # starts while a synchronous step trains
    import polars as pl

    for seed in range(12):
        sc = Scenario(rollout_slots=8, batch_size=16, group_size=4, horizon_s=30000.0, train_step_s=5000.0, seed=seed,
                      pipeline=Synchronous(), agentic=Agentic(
                          max_turns=6, stop_prob=0.5, tool_latency_s=Empirical([1.0, 3000.0]), observation_tokens=50.0,
                          failure_rate=0.3, kv_policy=policy))  # type: ignore[arg-type]
        res = rollsim.simulate(sc)
        _check_invariants(res)
        assert (res.steps["samples"] == 16).all()
        for start, end in res.steps.select("start_s", "end_s").rows():
            assert res.samples.filter((pl.col("start_s") > start) & (pl.col("start_s") < end)).height == 0
        last = res.turns.group_by("sample_id").agg(pl.col("end_s").max().alias("last"))
        df = res.samples.filter(pl.col("aborted")).join(last, on="sample_id")
        assert (df["finish_s"] >= df["last"]).all()
