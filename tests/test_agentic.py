"""Multi-turn agentic rollouts (``Scenario.agentic``): hand-worked goldens per KV policy, and the
properties every run keeps (conservation of samples, turns and tokens; spans tile tokens; a held
slot is busy; one turn equals the single-turn run bit for bit)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import polars as pl
import pytest

import rollsim
from rollsim import Empirical, FullyAsync, LogNormal, Scenario
from rollsim.agentic import Agentic
from rollsim.simulation import _simulate

# the turn-level checks run a few trajectories for less than a training step on purpose
pytestmark = pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")

#: One trajectory at a time (max_lag_samples=1, batches of one): 300 tokens per turn at 30 tokens/s
#: (10 s), a 120-token prompt and 600 tokens/s of prefill, three turns, 5 s tool calls returning 60
#: tokens.
ONE = Scenario(rollout_slots=1, batch_size=1, decode_tokens_per_s=30.0, train_step_s=1000.0, horizon_s=40.0,
               lengths=Empirical([300.0]), prompt_tokens=120.0, prefill_tokens_per_s=600.0,
               pipeline=FullyAsync(max_lag_samples=1))


def one(policy: str, **kw: object) -> rollsim.Result:
    a = Agentic(max_turns=3, tool_latency_s=5.0, observation_tokens=60.0, kv_policy=policy)  # type: ignore[arg-type]
    return rollsim.simulate(ONE.replace(agentic=a, **kw))


@pytest.mark.parametrize(("policy", "prefill", "busy"), [
    # prompt 0.2 s + 10 s; call 5 s; observation 0.1 s + 10 s; call 5 s; observation 0.1 s + 10 s
    ("keep", [0.1, 0.1], 30.4),
    ("hold", [0.1, 0.1], 40.4),
    # the KV is dropped: the context again (the prompt is in the group's prefix cache): 300 + 60
    # tokens (0.6 s), then 600 + 120 (1.2 s)
    ("drop", [0.6, 1.2], 32.0),
])
def test_three_turns_through_tool_calls(policy: str, prefill: list[float], busy: float) -> None:
    res = one(policy)
    row = res.samples.row(0, named=True)
    finish = 0.2 + 10.0 + 5.0 + prefill[0] + 10.0 + 5.0 + prefill[1] + 10.0
    assert row["finish_s"] == pytest.approx(finish, rel=1e-12)
    assert (row["turns"], row["length_tokens"], row["tokens_observed"]) == (3, 900.0, 120.0)
    assert row["tool_s"] == 10.0 and row["env_wait_s"] == 0.0
    assert row["prefill_tokens"] == pytest.approx(600.0 * sum(prefill), rel=1e-12)
    assert row["status"] == "trained" and row["staleness"] == 0 and row["n_versions"] == 1
    # the next trajectory starts when this one is trained (max_lag_samples=1)
    assert res.samples.row(1, named=True)["start_s"] == pytest.approx(finish, rel=1e-12)
    seg = res.segments.filter(pl.col("sample_id") == 0)
    assert seg.rows() == [(0, 0, 0.0, 900.0)]
    # the run ends with the finish (the first event at or after horizon_s = 40 s); the slot was
    # busy while it prefilled and decoded, and while it was held
    s = res.summary
    assert s["end_s"] == row["finish_s"]
    assert s["slot_busy_s"] == pytest.approx(busy, rel=1e-12)
    assert s["turns"] == 3 and s["tool_calls"] == 2 and s["tokens_observed"] == 120.0
    assert s["gpu_hold_s"] == (pytest.approx(10.0) if policy == "hold" else 0.0)
    # GPU time until end_s: 30 s decoding and the prefill of the three turns (the prompt's 0.2 s, then
    # the two later turns'); the next trajectory's prompt prefill starts at end_s and is not counted
    assert s["gpu_prefill_s"] == pytest.approx(0.2 + sum(prefill), rel=1e-12)
    assert s["gpu_decode_s"] == pytest.approx(30.0, rel=1e-12)
    assert s["tokens_prefilled"] == pytest.approx(600.0 * (0.2 + sum(prefill) + 0.2), rel=1e-12)


@pytest.mark.parametrize("placement", [{}, {"slots_per_instance": 1}, {"slots_per_instance": 1, "prefill_mode": "shared"}],
                         ids=["slots", "instances", "shared-prefill"])
def test_gpu_time_is_the_same_on_every_placement(placement: dict[str, object]) -> None:
    for policy, prefill in (("keep", 0.4), ("hold", 0.4), ("drop", 2.0)):
        s = one(policy, **placement).summary
        assert s["gpu_prefill_s"] == pytest.approx(prefill, rel=1e-12)
        assert s["gpu_decode_s"] == pytest.approx(30.0, rel=1e-12)


@pytest.mark.parametrize("base", [
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, prompt_tokens=500.0, prefill_tokens_per_s=2000.0,
             seed=3),
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, slots_per_instance=16, prompt_tokens=500.0,
             prefill_tokens_per_s=2000.0, seed=4)], ids=["slots", "instances"])
@pytest.mark.parametrize("policy", ["keep", "drop", "hold"])
def test_gpu_decode_time_is_the_tokens_decoded_at_the_decode_speed(base: Scenario, policy: str) -> None:
    # at a speed that does not depend on the batch, the slot-seconds decoding are the tokens decoded
    # by end_s over that speed: the prefill counted is exactly the prefill done by then
    a = Agentic(max_turns=8, tool_latency_s=LogNormal(1.0, 1.0, 600.0), observation_tokens=LogNormal(5.0, 1.0, 4000.0),
                stop_prob=0.2, kv_policy=policy, failure_rate=0.05)  # type: ignore[arg-type]
    s = rollsim.simulate(base.replace(agentic=a), record="summary").summary
    assert s["gpu_prefill_s"] > 0.0
    assert s["gpu_decode_s"] == pytest.approx(s["tokens_generated"] / base.decode_tokens_per_s, rel=1e-9)
    assert s["gpu_decode_s"] + s["gpu_prefill_s"] + s["gpu_hold_s"] == pytest.approx(s["slot_busy_s"], rel=1e-9)


def test_drop_without_prefix_cache_prefills_the_prompt_again() -> None:
    row = one("drop", prefix_sharing=False).samples.row(0, named=True)
    # 120 + 300 + 60 = 480 tokens (0.8 s), then 120 + 600 + 120 = 840 (1.4 s)
    assert row["finish_s"] == pytest.approx(0.2 + 10 + 5 + 0.8 + 10 + 5 + 1.4 + 10, rel=1e-12)
    assert row["prefill_tokens"] == pytest.approx(480.0 + 840.0, rel=1e-12)


def test_a_held_slot_is_busy_and_a_released_one_is_not() -> None:
    # horizon inside the first call: the held slot is busy, the released one has nothing to do
    for policy, busy in (("hold", 13.0), ("keep", 10.2)):
        res = rollsim.simulate(ONE.replace(horizon_s=13.0, agentic=Agentic(
            max_turns=3, tool_latency_s=5.0, observation_tokens=60.0, kv_policy=policy)))  # type: ignore[arg-type]
        end = res.summary["end_s"]
        assert end == pytest.approx(15.2, rel=1e-12)  # the call's return is the first event after 13 s
        expect = busy if policy == "keep" else end
        assert res.summary["slot_busy_s"] == pytest.approx(expect, rel=1e-12)


BASES = [
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, seed=3),
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, group_size=4, prompt_tokens=500.0,
             prefill_tokens_per_s=20000.0, pipeline=FullyAsync(max_staleness=2), seed=4),
    Scenario(rollout_slots=64, batch_size=128, horizon_s=3600.0, slots_per_instance=16, decode_slowdown_per_seq=0.01,
             kv_cache_tokens=200_000.0, prompt_tokens=200.0, prefill_tokens_per_s=10000.0,
             pipeline=FullyAsync(on_update="keep_recompute", admission_eta=1), seed=5, rng="python"),
    Scenario(rollout_slots=32, batch_size=64, horizon_s=3600.0, rollout_pause_s=3.0,
             pipeline=FullyAsync(on_update="abort_resubmit", batch_order="oldest_first"), seed=6),
]


def _frames_equal(a: rollsim.Result, b: rollsim.Result) -> None:
    assert a.steps.equals(b.steps)
    assert a.samples.select(b.samples.columns).equals(b.samples)
    assert a.segments.equals(b.segments)
    for k, v in b.summary.items():
        assert a.summary[k] == v or (isinstance(v, float) and math.isnan(v) and math.isnan(a.summary[k])), k


@pytest.mark.parametrize("base", BASES, ids=range(len(BASES)))
@pytest.mark.parametrize("policy", ["keep", "drop", "hold"])
def test_one_turn_is_the_single_turn_run_bit_for_bit(base: Scenario, policy: str) -> None:
    a = Agentic(max_turns=1, tool_latency_s=0.0, observation_tokens=0.0, kv_policy=policy)  # type: ignore[arg-type]
    _frames_equal(rollsim.simulate(base.replace(agentic=a)), _simulate(base, general_engine=True))


AGENTS = [
    Agentic(max_turns=8, tool_latency_s=LogNormal(1.0, 1.0, 600.0), observation_tokens=LogNormal(5.0, 1.0, 4000.0),
            stop_prob=0.2, turn_scale=(1.0, 0.3)),
    Agentic(max_turns=30, tool_latency_s=20.0, observation_tokens=300.0, kv_policy="drop", env_slots=16,
            env_overhead_s=1.0, failure_rate=0.05, max_context_tokens=40_000.0),
    Agentic(max_turns=5, tool_latency_s=Empirical([0.5, 2.0, 30.0]), observation_tokens=50.0, kv_policy="hold",
            failure_rate=0.2, on_failure="retry", sticky=False, switch_version_at_turn=False),
]


def _check_invariants(res: rollsim.Result) -> None:
    s, df = res.summary, res.samples
    assert s["samples_started"] == s["samples_trained"] + s["samples_dropped"] + s["samples_ready"] + \
        s["samples_in_flight"] == df.height
    assert s["tokens_generated"] == pytest.approx(s["tokens_trained"] + s["tokens_wasted"] + s["tokens_pending"],
                                                  rel=1e-9)
    # turns: every turn decoded to its end is counted once; each made a call unless it was the last
    assert df["turns"].sum() == s["turns"]
    ended = df.filter(pl.col("finish_s").is_not_null() & ~pl.col("aborted")).height
    assert s["tool_calls"] - s["tool_retries"] == s["turns"] - ended
    assert df["tool_retries"].sum() == s["tool_retries"]
    assert df["truncated"].sum() == s["trajectories_truncated"] and df["failed"].sum() == s["trajectories_failed"]
    assert df["tokens_observed"].sum() == pytest.approx(s["tokens_observed"], rel=1e-9)
    assert df["prefill_tokens"].sum() == pytest.approx(s["tokens_prefilled_turns"], rel=1e-9)
    assert (df["turns"] <= res.scenario.agentic.max_turns).all()  # type: ignore[union-attr]
    # a finished trajectory's spans tile its tokens [0, length)
    seg = res.segments.sort("sample_id", "first_token")
    prev = seg["last_token"].shift(1)
    same = seg["sample_id"] == seg["sample_id"].shift(1)
    assert (seg["first_token"].filter(same) == prev.filter(same)).all()  # no gap, no overlap
    per = seg.group_by("sample_id", maintain_order=True).agg(
        pl.col("first_token").first().alias("lo"), pl.col("last_token").last().alias("hi"), pl.len().alias("spans"))
    done = df.filter(pl.col("finish_s").is_not_null() & ~pl.col("aborted")).join(per, on="sample_id")
    assert (done["lo"] == 0.0).all() and (done["hi"] == done["length_tokens"]).all()
    assert (done["spans"] == done["n_versions"]).all()
    m = res.scenario.agentic.max_context_tokens  # type: ignore[union-attr]
    if m is not None:
        ctx = df["length_tokens"] + df["tokens_observed"] + res.scenario.prompt_tokens
        assert (ctx <= m * (1 + 1e-12)).all()
    assert 0.0 <= s["gpu_hold_s"] <= s["slot_busy_s"] + 1e-6
    assert s["gpu_decode_s"] + s["gpu_hold_s"] + s["gpu_prefill_s"] <= s["slot_busy_s"] + 1e-6 + s["kv_wait_s"]


@pytest.mark.parametrize("base", BASES, ids=range(len(BASES)))
@pytest.mark.parametrize("agent", AGENTS, ids=range(len(AGENTS)))
def test_invariants(base: Scenario, agent: Agentic) -> None:
    if base.kv_cache_tokens is not None:
        agent = dataclasses.replace(agent, max_context_tokens=100_000.0)
    res = rollsim.simulate(base.replace(agentic=agent))
    _check_invariants(res)
    assert res.summary["samples_finished"] > 0 or agent.failure_rate > 0
    assert res.summary["turns"] > res.summary["samples_finished"]
    summary = rollsim.simulate(base.replace(agentic=agent), record="summary").summary
    assert summary == res.summary or all(summary[k] == res.summary[k] or (math.isnan(summary[k]) and math.isnan(
        res.summary[k])) for k in summary)


def test_failures_drop_or_retry() -> None:
    base = BASES[0]
    drop = rollsim.simulate(base.replace(agentic=Agentic(max_turns=6, tool_latency_s=2.0, failure_rate=0.3)))
    assert drop.summary["trajectories_failed"] > 0 and drop.summary["tool_retries"] == 0
    failed = drop.samples.filter(pl.col("failed"))
    assert failed["aborted"].all() and (failed["status"] == "dropped").all()
    retry = rollsim.simulate(base.replace(agentic=Agentic(max_turns=6, tool_latency_s=2.0, failure_rate=0.3,
                                                          on_failure="retry")))
    assert retry.summary["trajectories_failed"] == 0 and retry.summary["tool_retries"] > 0


def test_environment_pool_queues_calls() -> None:
    base = BASES[0]
    free = rollsim.simulate(base.replace(agentic=Agentic(max_turns=10, tool_latency_s=60.0)))
    tight = rollsim.simulate(base.replace(agentic=Agentic(max_turns=10, tool_latency_s=60.0, env_slots=4)))
    assert free.summary["env_wait_s"] == 0.0 and math.isnan(free.summary["env_utilization"])
    assert tight.summary["env_utilization"] > 0.99 and tight.summary["env_wait_s"] > 0
    assert tight.summary["env_mean_busy"] <= 4.0 + 1e-9
    assert tight.summary["samples_finished"] < free.summary["samples_finished"]


def test_versions_switch_at_turn_boundaries() -> None:
    base = Scenario(rollout_slots=64, batch_size=64, train_step_s=20.0, horizon_s=3600.0)
    ag = Agentic(max_turns=10, tool_latency_s=30.0)
    switch = rollsim.simulate(base.replace(agentic=ag))
    stay = rollsim.simulate(base.replace(agentic=Agentic(max_turns=10, tool_latency_s=30.0,
                                                         switch_version_at_turn=False)))
    assert switch.samples["n_versions"].max() > 1  # type: ignore[operator]
    assert stay.samples["n_versions"].max() == 1
    # the spans record the versions: the last span's version is version_end
    last = switch.segments.group_by("sample_id").agg(pl.col("version").last())
    j = switch.samples.join(last, on="sample_id").filter(pl.col("finish_s").is_not_null())
    assert (j["version"] == j["version_end"]).all()


def test_truncation_at_max_context() -> None:
    res = rollsim.simulate(BASES[0].replace(agentic=Agentic(max_turns=50, observation_tokens=2000.0,
                                                            max_context_tokens=20_000.0)))
    assert res.summary["trajectories_truncated"] > 0
    _check_invariants(res)


def test_scenario_round_trips_through_toml() -> None:
    sc = BASES[1].replace(agentic=AGENTS[0])
    assert Scenario.from_toml_str(sc.to_toml()) == sc
    assert np.isfinite(rollsim.simulate(sc, record="summary").summary["env_mean_busy"])


def test_max_trajectories_bounds_the_trajectories_in_flight() -> None:
    base = BASES[0].replace(horizon_s=1800.0)
    free = rollsim.simulate(base.replace(agentic=Agentic(max_turns=10, tool_latency_s=60.0, env_slots=8)))
    bound = rollsim.simulate(base.replace(agentic=Agentic(max_turns=10, tool_latency_s=60.0, env_slots=8,
                                                          max_trajectories=64)))
    assert free.summary["samples_in_flight"] > 500  # released slots keep starting trajectories
    assert bound.summary["samples_in_flight"] <= 64
    # at every start, at most 64 trajectories had started and not finished
    df = bound.samples.select("start_s", pl.col("finish_s").fill_null(math.inf))
    starts = np.sort(df["start_s"].to_numpy())
    live = np.searchsorted(starts, starts, side="right") - np.searchsorted(np.sort(df["finish_s"].to_numpy()),
                                                                            starts, side="right")
    assert live.max() <= 64
    _check_invariants(bound)


def test_presets_and_trajectory_frames(tmp_path: object) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from rollsim import trajectories as T

    for preset in (T.code_interpreter_math, T.swe_agent):
        res = rollsim.simulate(preset().replace(horizon_s=2 * 3600.0))
        _check_invariants(res)
        assert res.summary["steps"] > 0 and res.summary["turns"] > 2 * res.summary["samples_finished"]
        by = T.staleness_by_turns(res)
        assert by["trained"].sum() == res.summary["samples_trained"]
        st = T.token_weighted_staleness(res)
        assert 0.0 <= st <= res.summary["staleness_max"]
        assert T.staleness_by_trajectory_length(res)["samples"].sum() == by["trained"].sum() + by["dropped"].sum()
        fig = T.turn_timeline(res, max_slots=8, time_range_s=(0.0, 600.0))
        assert fig.axes[0].get_title() == "Turns and tool calls per slot"
    res = rollsim.simulate(Scenario(horizon_s=600.0))
    with pytest.raises(rollsim.ScenarioError, match="^result: is not a multi-turn agentic run"):
        T.staleness_by_turns(res)
    with pytest.raises(rollsim.ScenarioError, match="^record: turns are recorded"):
        _ = res.turns


def test_turn_rows_match_the_trajectories() -> None:
    res = rollsim.simulate(BASES[1].replace(agentic=AGENTS[0]))
    t, df = res.turns, res.samples
    assert t.height == res.summary["turns"]
    per = t.group_by("sample_id").agg(pl.len().alias("n"), pl.col("turn").max().alias("last"))
    j = df.join(per, on="sample_id")
    assert (j["n"] == j["turns"]).all() and (j["last"] == j["turns"] - 1).all()
    assert (t["end_s"] >= t["start_s"]).all() and (t.drop_nulls("call_end_s").select(
        pl.col("call_end_s") >= pl.col("end_s")).to_series()).all()
