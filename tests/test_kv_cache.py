"""KV-cache capacity per instance with preemption by recompute (``Scenario.kv_cache_tokens``,
vLLM semantics): the most recently admitted running sequence is preempted when the instance's KV
would exceed the capacity, waits at the front of its instance's queue with its progress, and pays a
prefill of prompt + tokens done when it is admitted again."""

import warnings

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, LogNormal, Scenario, ScenarioError, Synchronous, _rollsim, simulate
from invariants import assert_conserved, run_quiet
from strategies import real_scenarios

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

TINY = dict(rollout_slots=2, decode_tokens_per_s=1.0, batch_size=2, train_step_s=5.0, horizon_s=10.0,
            lengths=Empirical([10.0]), pipeline=Synchronous(), slots_per_instance=2)


def test_golden_preemption_and_recompute():
    """One instance of 2 slots at 1 token/s (no slowdown), answers of 10 tokens, no prompt, 12
    tokens of KV:
    t=0   r0, r1 admitted (0 + 1 <= 12 each); KV = 2 tokens per second
    t=6   KV = 12: r1 (the last admitted) is preempted with 6 tokens done; it waits (6 + 6 + 1 > 12)
    t=10  r0 finishes; r1 is admitted (0 + 6 + 1 <= 12), recomputes 6 tokens (free prefill)
    t=14  r1 finishes (4 tokens to go). Its span stays open: one span [0, 10] with version 0."""
    res = simulate(Scenario(kv_cache_tokens=12, **TINY))
    s = res.summary
    assert res.samples["finish_s"].to_list() == [10.0, 14.0]
    assert res.samples["n_versions"].to_list() == [1, 1]
    assert res.segments.filter(pl.col("sample_id") == 1).rows() == [(1, 0, 0.0, 10.0)]
    assert (s["preemptions"], s["tokens_recomputed"], s["tokens_prefilled"]) == (1, 6.0, 6.0)
    # r1 waited 6 s on its slot: a busy slot (a submitted request) that does not decode
    assert (s["kv_wait_s"], s["slot_busy_s"], s["tokens_generated"]) == (4.0, 24.0, 20.0)
    assert res.steps["start_s"].to_list() == [14.0]


def test_golden_recompute_takes_prefill_time():
    """The same with prefill at 2 tokens/s: r1's recompute of 6 tokens takes 3 s (10 -> 13), so it
    finishes at 17."""
    res = simulate(Scenario(kv_cache_tokens=12, prefill_tokens_per_s=2.0, **TINY))
    assert res.samples["finish_s"].to_list() == [10.0, 17.0]
    assert res.summary["tokens_recomputed"] == 6.0


def test_golden_preempted_request_resumes_with_new_weights():
    """Fully asynchronous, batch of 1, 3 s steps, same instance: r2 (admitted at 10 behind r1)
    is preempted at 13 with 3 tokens done, just as version 1 arrives (the trainer's event goes
    first); it resumes at 14 under version 1 (a new span). The trainer's next step (r1's batch,
    14 -> 17) crosses the horizon and ends the run: r2 has decoded 3 more tokens by then."""
    sc = Scenario(**{**TINY, "batch_size": 1, "train_step_s": 3.0, "horizon_s": 14.5,
                     "pipeline": FullyAsync()}, kv_cache_tokens=12)
    res = simulate(sc)
    assert res.samples["finish_s"].to_list()[:2] == [10.0, 14.0]
    r2 = res.segments.filter(pl.col("sample_id") == 2).rows()
    assert r2 == [(2, 0, 0.0, 3.0), (2, 1, 3.0, 6.0)]
    assert res.summary["end_s"] == 17.0
    assert res.samples.filter(pl.col("sample_id") == 2)["version_start"].to_list() == [0]
    assert res.summary["preemptions"] == 2 and res.summary["tokens_recomputed"] == 6.0 + 3.0


def test_the_capacity_is_checked():
    with pytest.raises(ScenarioError, match=r"^kv_cache_tokens: must be >= prompt_tokens \+ the longest possible "
                                            r"answer \+ 1 = 0 \+ 10 \+ 1 = 11 "):
        Scenario(kv_cache_tokens=10.5, **TINY)
    with pytest.raises(ScenarioError, match="^kv_cache_tokens: needs slots_per_instance > 0"):
        Scenario(kv_cache_tokens=1e6)
    with pytest.raises(ScenarioError, match=r"^kv_cache_tokens: must be in \[1, 1e15\] tokens, or None \(unlimited\)"):
        Scenario(kv_cache_tokens=0, **TINY)  # no silent "0 means unlimited": None says it
    assert "kv_cache_tokens" not in Scenario(kv_cache_tokens=None).to_dict()
    assert Scenario(slots_per_instance=256, kv_cache_tokens=20000).to_dict()["kv_cache_tokens"] == 20000.0
    # the engine refuses the same through a raw dict (no panic)
    d = Scenario(horizon_s=100.0, slots_per_instance=256).to_dict()
    d["kv_cache_tokens"] = 100.0
    with pytest.raises(ScenarioError, match="^kv_cache_tokens: must be >= prompt_tokens"):
        _rollsim.simulate(d, False)
    d["kv_cache_tokens"] = -1.0
    with pytest.raises(ScenarioError, match=r"^kv_cache_tokens: must be in \[1, 1e15\] tokens"):
        _rollsim.simulate(d, False)


def test_tight_capacity_on_a_real_scenario():
    """256 slots in 8 instances of 32, DeepSeek-style lengths up to 16K: a capacity of 64K tokens
    per instance preempts; the run keeps every invariant and generates less than with ample KV."""
    base = Scenario(slots_per_instance=32, decode_slowdown_per_seq=0.01, horizon_s=2 * 3600.0,
                    lengths=LogNormal(7.6, 1.0, 16384.0), prompt_tokens=500.0, prefill_tokens_per_s=20000.0)
    tight = simulate(base.replace(kv_cache_tokens=65536.0), record="summary").summary
    ample = simulate(base, record="summary").summary
    assert tight["preemptions"] > 100
    assert tight["tokens_recomputed"] > 0 and tight["kv_wait_s"] > 0
    assert tight["tokens_generated"] < ample["tokens_generated"]


@settings(max_examples=60)
@given(real_scenarios(), st.sampled_from([1, 2, 4]), st.floats(0.0, 0.5), st.floats(0.0, 3.0),
       st.sampled_from([0.0, 2.5]))
def test_kv_capacity_keeps_every_invariant(sc, per, slowdown, extra, pause):
    """Conservation of samples and tokens, spans tiling every answer, finish after start,
    utilization in [0, 1], non-negative recompute and waits: for capacities from barely one request
    to a few, with and without a rollout pause at each update."""
    if sc.rollout_slots % per:
        per = 1
    longest = sc.lengths.max_tokens if isinstance(sc.lengths, LogNormal) else float(sc.lengths.values.max())
    kv = (sc.prompt_tokens + longest + 1) * (1 + extra)
    sc = sc.replace(slots_per_instance=per, decode_slowdown_per_seq=slowdown, kv_cache_tokens=kv, rollout_pause_s=pause)
    res = run_quiet(sc)
    assert_conserved(res)
    s = res.summary
    assert s["tokens_recomputed"] >= 0 and s["preemptions"] >= 0
    assert 0.0 <= s["kv_wait_s"] <= s["slot_busy_s"] * (1 + 1e-12) + 1e-9


@settings(max_examples=40)
@given(real_scenarios(), st.sampled_from([1, 2, 4]), st.floats(0.001, 0.5))
def test_ample_capacity_changes_nothing(sc, per, slowdown):
    """With room for every slot's longest request, nobody is preempted or waits, and the run is
    bit for bit the run without a capacity."""
    if sc.rollout_slots % per:
        per = 1
    longest = sc.lengths.max_tokens if isinstance(sc.lengths, LogNormal) else float(sc.lengths.values.max())
    sc = sc.replace(slots_per_instance=per, decode_slowdown_per_seq=slowdown)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = simulate(sc)
        b = simulate(sc.replace(kv_cache_tokens=per * (sc.prompt_tokens + longest) + 1))
    assert b.summary["preemptions"] == 0 and b.summary["kv_wait_s"] == 0.0
    assert str(a.summary) == str(b.summary)
    assert a.samples.equals(b.samples) and a.steps.equals(b.steps) and a.segments.equals(b.segments)
