"""Runs at simulated times where f64 time barely advances (1e9-1e12 s: one ulp is 1e-7-1e-4 s), with
tiny and huge decode speeds, terminate and reach their horizon within a strict event budget: every loop
whose progress depends on time advancing either advances it or ends (a speed refresh whose interval is
below the time's resolution comes at the next representable time instead of at the same time forever).

No wall clock: the engine's own event budget (``_rollsim.simulate(max_events=)``, which counts the
pool's own events, KV preemptions, shared-prefill ends and speed refreshes, beside the summary's) turns a
run that would not end into a RunLimitError, which fails the test."""

import math

from hypothesis import given
from hypothesis import strategies as st

from rollsim import FullyAsync, LogNormal, OffPolicy, Scenario
from rollsim import _rollsim

#: Far more than these runs need (a few batches of at most 16 requests, each with its finish, ~100
#: speed refreshes and its preemptions), far fewer than a run that does not end would reach.
BUDGET = 300_000


def _log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda x: 10.0 ** x)


@st.composite
def huge_time_scenarios(draw):
    slots = draw(st.integers(1, 8))
    batched = draw(st.booleans())
    step = draw(_log_uniform(1.0, 9e11))
    prompt = draw(st.sampled_from([0.0, 50.0, 2000.0]))
    lengths = LogNormal(mu=draw(st.floats(0.0, 7.0)), sigma=draw(st.floats(0.0, 1.2)), max_tokens=4096.0)
    fields = {}
    slope = draw(st.sampled_from([0.0, 1e-15, 1e-9, 1e-4])) if batched else 0.0
    if batched:
        fields = dict(
            slots_per_instance=slots,
            decode_s_per_context_token=slope,
            prefill_mode=draw(st.sampled_from(["per_slot", "shared"])) if prompt > 0 else "per_slot",
            # room for one request alone, or for all of them
            kv_cache_tokens=draw(st.sampled_from([None, prompt + 4097.0, slots * (prompt + 4097.0)])),
        )
    return Scenario(
        rollout_slots=slots,
        batch_size=slots * draw(st.integers(1, 2)),
        decode_tokens_per_s=draw(_log_uniform(1e-6, 1e9)),
        train_step_s=step,
        horizon_s=min(step * draw(st.floats(0.5, 3.0)), 1e12),
        prompt_tokens=prompt,
        # a prefill of 2000 tokens at 1e-3 tokens/s lasts 2e6 s; not with context-dependent speed, which
        # refreshes every clock token while nothing decodes (a refresh a token: millions)
        prefill_tokens_per_s=draw(st.sampled_from([math.inf, 1e4, 1e12] if slope else [math.inf, 1e-3, 1e4, 1e12]))
        if prompt > 0 else math.inf,
        rollout_pause_s=draw(st.sampled_from([0.0, 1.0, 1e9])),
        lengths=lengths,
        # generation stops after one batch until the step ends: the next batch runs at a huge time
        pipeline=draw(st.sampled_from([OffPolicy(k=0), OffPolicy(k=1), FullyAsync(admission_eta=0)])),
        seed=draw(st.integers(0, 2**32)),
        **fields,
    )


@given(huge_time_scenarios())
def test_runs_at_huge_times_end_within_an_event_budget(sc):
    res = _rollsim.simulate(sc.to_dict(), False, 2**32 - 1, False, BUDGET)
    s = res["summary"]
    # a batch pipeline trains its first batch whatever the horizon
    assert s["steps_started"] >= 1 or isinstance(sc.pipeline, FullyAsync)
    # the run got to its horizon (the batch pipelines run their last batch's step past it), or
    # nothing could happen any more
    assert s["end_s"] >= sc.horizon_s or s["stalled"], s
    assert s["events"] <= BUDGET


def test_the_refresh_below_the_time_resolution():
    """The case that looped: context-dependent speed at 1e6 tokens/s (a refresh interval of a few
    microseconds) in the second batch, at 9e11 s (one ulp: 1.2e-4 s)."""
    sc = Scenario(rollout_slots=4, batch_size=4, decode_tokens_per_s=1e6, train_step_s=9e11, horizon_s=1e12,
                  slots_per_instance=4, decode_s_per_context_token=1e-12, pipeline=OffPolicy(k=0),
                  lengths=LogNormal(mu=6.0, sigma=0.5, max_tokens=4096.0))
    s = _rollsim.simulate(sc.to_dict(), True, 2**32 - 1, False, BUDGET)["summary"]
    assert (s["samples_started"], s["samples_finished"], s["steps"]) == (8, 8, 2)
    assert 2 * 9e11 < s["end_s"] < 2 * 9e11 + 1.0
