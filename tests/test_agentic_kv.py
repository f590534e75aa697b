"""Agentic rollouts with the ``keep`` KV policy and ``kv_cache_tokens``: the KV of a request in a
tool call stays cached on its instance, counts against its capacity and is evicted (least recently
cached first) when a running or arriving request needs room; an evicted trajectory's next turn
prefills its whole context (minus the prompt, if the group's prefix cache holds it)."""

from __future__ import annotations

import dataclasses
import math

import pytest

import rollsim
from rollsim import Empirical, FullyAsync, LogNormal, Scenario
from rollsim.agentic import Agentic
from test_agentic import _check_invariants

# the KV checks run a few trajectories for less than a training step on purpose
pytestmark = pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")

#: One slot on one instance of 1000 tokens of KV; two trajectories at most, of two turns of 200
#: tokens at 30 tokens/s (6.667 s) after a 350-token prompt (0.5833 s at 600 tokens/s); 5 s tool
#: calls returning 60 tokens.
EVICT = Scenario(rollout_slots=1, slots_per_instance=1, kv_cache_tokens=1000.0, batch_size=1,
                 decode_tokens_per_s=30.0, train_step_s=1000.0, horizon_s=21.0, lengths=Empirical([200.0]),
                 prompt_tokens=350.0, prefill_tokens_per_s=600.0, pipeline=FullyAsync(),
                 agentic=Agentic(max_turns=2, tool_latency_s=5.0, observation_tokens=60.0, kv_policy="keep",
                                 max_trajectories=2, max_context_tokens=999.0))


def test_cached_kv_is_evicted_for_a_running_request() -> None:
    res = rollsim.simulate(EVICT)
    a, b = res.samples.row(0, named=True), res.samples.row(1, named=True)
    # A: prefill 0.5833 s, decodes to 7.25 s, calls until 12.25 s, its 350 + 200 = 550 tokens of KV
    # cached. B starts at 7.25 s (350 + 1 tokens fit beside them), decodes from 7.8333 s: the KV
    # reaches 1000 at 550 + 350 + 30 x = 1000, x = 3.333 s (11.1667 s): A's cached KV is evicted
    # (no running request is preempted).
    assert b["start_s"] == pytest.approx(7.25, rel=1e-12)
    # B's turn ends at 14.5 s, its KV cached; A (back at 12.25 s, waiting for the slot) lands: it
    # needs 550 + 1 tokens beside B's 550, so B's cached KV is evicted. A was evicted: it prefills
    # 200 + 60 tokens (the prompt is in its group's prefix cache), 0.4333 s, then decodes 6.667 s.
    assert a["finish_s"] == pytest.approx(14.5 + 260.0 / 600.0 + 200.0 / 30.0, rel=1e-12)
    assert a["prefill_tokens"] == 260.0 and a["turns"] == 2 and a["status"] == "trained"
    # B (back at 19.5 s) lands when A finishes (21.6 s): evicted too, the whole context again
    assert b["prefill_tokens"] == 260.0 and b["status"] == "in_flight"
    s = res.summary
    assert s["end_s"] == a["finish_s"]
    assert s["kv_evictions"] == 2 and s["preemptions"] == 0
    assert s["tokens_prefilled"] == 2 * 350.0 + 2 * 260.0
    assert s["slot_busy_s"] == pytest.approx(s["end_s"], rel=1e-12)


def test_without_pressure_the_cached_kv_is_used() -> None:
    # 10000 tokens of KV: nothing is evicted, the next turn prefills the observation only
    sc = EVICT.replace(kv_cache_tokens=10_000.0)
    res = rollsim.simulate(sc)
    a = res.samples.row(0, named=True)
    assert res.summary["kv_evictions"] == 0
    assert a["prefill_tokens"] == 60.0
    # as without KV capacity
    free = rollsim.simulate(sc.replace(kv_cache_tokens=None, agentic=dataclasses.replace(
        sc.agentic, max_context_tokens=None)))  # type: ignore[type-var]
    assert free.samples["prefill_tokens"].to_list() == res.samples["prefill_tokens"].to_list()
    assert free.summary["kv_evictions"] == 0


def test_drop_and_hold_do_not_cache() -> None:
    for policy in ("drop", "hold"):
        res = rollsim.simulate(EVICT.replace(agentic=dataclasses.replace(EVICT.agentic, kv_policy=policy)))  # type: ignore[type-var]
        assert res.summary["kv_evictions"] == 0


#: Many trajectories on instances with little KV: evictions and preemptions both happen.
TIGHT = Scenario(rollout_slots=64, batch_size=64, horizon_s=3600.0, slots_per_instance=16,
                 decode_slowdown_per_seq=0.01, kv_cache_tokens=60_000.0, prompt_tokens=500.0,
                 prefill_tokens_per_s=10000.0, group_size=4, pipeline=FullyAsync(max_staleness=2), seed=7)


@pytest.mark.parametrize("agent", [
    Agentic(max_turns=12, tool_latency_s=LogNormal(2.0, 1.0, 600.0), observation_tokens=LogNormal(5.0, 1.0, 2000.0),
            stop_prob=0.1, max_context_tokens=30_000.0),
    Agentic(max_turns=8, tool_latency_s=Empirical([0.5, 5.0, 40.0]), observation_tokens=200.0, sticky=False,
            failure_rate=0.1, on_failure="retry", env_slots=8, max_context_tokens=20_000.0),
    Agentic(max_turns=8, tool_latency_s=10.0, observation_tokens=100.0, failure_rate=0.2,
            max_context_tokens=20_000.0),
], ids=range(3))
def test_invariants_with_evictions(agent: Agentic) -> None:
    res = rollsim.simulate(TIGHT.replace(agentic=agent))
    _check_invariants(res)
    s = res.summary
    assert s["kv_evictions"] > 0 and s["samples_finished"] > 0
    # evicted trajectories prefill their context again: more than the observations alone
    assert s["tokens_prefilled_turns"] > s["tokens_observed"]
    summary = rollsim.simulate(TIGHT.replace(agentic=agent), record="summary").summary
    for k, v in summary.items():
        assert v == s[k] or (isinstance(v, float) and math.isnan(v) and math.isnan(s[k])), k


#: Three slots on one instance of 1000 tokens of KV; three trajectories of two turns of 100 tokens
#: at 30 tokens/s (3.333 s) after a 350-token prompt (0.5833 s at 600 tokens/s); 5 s tool calls
#: returning 60 tokens (0.1 s of prefill); the slot is held during the call.
HOLD = Scenario(rollout_slots=3, slots_per_instance=3, kv_cache_tokens=1000.0, batch_size=1,
                decode_tokens_per_s=30.0, train_step_s=1000.0, horizon_s=12.5, lengths=Empirical([100.0]),
                prompt_tokens=350.0, prefill_tokens_per_s=600.0, pipeline=FullyAsync(),
                agentic=Agentic(max_turns=2, tool_latency_s=5.0, observation_tokens=60.0, kv_policy="hold",
                                max_trajectories=3, max_context_tokens=999.0))


def test_a_held_slot_keeps_its_kv_against_the_capacity() -> None:
    res = rollsim.simulate(HOLD)
    turns = {(r["sample_id"], r["turn"]): r for r in res.turns.iter_rows(named=True)}
    a, b, c, d = (res.samples.row(i, named=True) for i in range(4))
    # A and B start at 0 (351 and 350 + 351 tokens fit); C needs 700 + 351 > 1000 and waits. A and
    # B decode from 0.5833 s to 3.9167 s (KV 2 x 450 = 900) and hold their slots with their KV:
    # C still does not fit (900 + 351), and waits until the calls return at 8.9167 s.
    assert turns[0, 0]["end_s"] == turns[1, 0]["end_s"] == pytest.approx(350 / 600 + 100 / 30, rel=1e-12)
    assert turns[0, 0]["call_end_s"] == turns[1, 0]["call_end_s"] == pytest.approx(8.9167, abs=1e-4)
    # A returns first: its KV is freed and it queues behind C, which is admitted (B's 450 + 351);
    # A then fits beside C (350 + 451) and decodes its second turn after 0.1 s of prefill; B
    # returns and waits behind them (350 + 450 + 451 > 1000)
    t_ret = 350 / 600 + 100 / 30 + 5.0
    assert turns[0, 1]["start_s"] == pytest.approx(t_ret, rel=1e-12)
    assert a["finish_s"] == pytest.approx(t_ret + 0.1 + 100 / 30, rel=1e-12)
    # C decodes from 9.5 s: its first turn ends at 12.8333 s, the last event (horizon 12.5 s)
    assert turns[2, 0]["end_s"] == pytest.approx(t_ret + 350 / 600 + 100 / 30, rel=1e-12)
    assert res.summary["end_s"] == turns[2, 0]["end_s"]
    # A's finish frees its KV: B is admitted (C's 350 + 85.5 decoded + 451 fit); D, started on A's
    # slot, waits behind it (435.5 + 450 + 351 > 1000). KV waits: C 8.9167 s, B 3.4333 s, D 0.4833 s
    assert d["start_s"] == a["finish_s"]
    # (C, then B from C's admission to A's finish, then D to the end: 12.8333 s in all)
    assert res.summary["kv_wait_s"] == pytest.approx(res.summary["end_s"], rel=1e-12)
    s = res.summary
    assert s["preemptions"] == 0 and s["kv_evictions"] == 0
    # held idle: A and B 5 s each (C's call runs past the end)
    assert s["gpu_hold_s"] == pytest.approx(10.0, rel=1e-12)
    assert s["tokens_prefilled"] == 4 * 350.0 + 2 * 60.0
    assert b["prefill_tokens"] == 60.0 and c["prefill_tokens"] == 0.0
    _check_invariants(res)
    # before, a held slot freed its KV: C started when A's turn ended
    free = rollsim.simulate(HOLD.replace(kv_cache_tokens=None, agentic=dataclasses.replace(
        HOLD.agentic, max_context_tokens=None)))  # type: ignore[type-var]
    assert free.summary["kv_wait_s"] == 0.0


def test_held_kv_with_pressure_keeps_the_invariants() -> None:
    agent = Agentic(max_turns=12, tool_latency_s=LogNormal(2.0, 1.0, 600.0), observation_tokens=LogNormal(5.0, 1.0, 2000.0),
                    stop_prob=0.1, max_context_tokens=30_000.0, kv_policy="hold")
    res = rollsim.simulate(TIGHT.replace(agentic=agent))
    _check_invariants(res)
    s = res.summary
    assert s["kv_evictions"] == 0 and s["preemptions"] > 0 and s["kv_wait_s"] > 0.0 and s["samples_finished"] > 0
    summary = rollsim.simulate(TIGHT.replace(agentic=agent), record="summary").summary
    for k, v in summary.items():
        assert v == s[k] or (isinstance(v, float) and math.isnan(v) and math.isnan(s[k])), k
