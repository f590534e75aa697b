"""Hypothesis strategies for valid scenarios, in one place (reused by every property test)."""

import dataclasses

from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, LengthBalanced, LogNormal, OffPolicy, OneStepAsync, Scenario, Synchronous

lognormals = st.builds(
    LogNormal,
    mu=st.floats(4.0, 8.5),
    sigma=st.floats(0.0, 1.6),
    max_tokens=st.sampled_from([512.0, 4096.0, 16384.0, 32768.0]),
)
empiricals = st.builds(
    Empirical,
    values=st.lists(st.integers(1, 20000), min_size=1, max_size=40),
)
lengths = st.one_of(lognormals, empiricals)
pipelines = st.one_of(
    st.just(Synchronous()),
    st.just(OneStepAsync()),
    st.builds(OffPolicy, k=st.integers(0, 4)),
    st.builds(FullyAsync, max_staleness=st.one_of(st.none(), st.integers(0, 4))),
)


@st.composite
def scenarios(draw, pipeline=pipelines, rng=st.sampled_from(["fast", "python"])):
    return Scenario(
        rollout_slots=draw(st.integers(1, 64)),
        decode_tokens_per_s=draw(st.floats(5.0, 100.0)),
        batch_size=draw(st.integers(1, 96)),
        train_step_s=draw(st.floats(0.0, 300.0)),
        horizon_s=draw(st.floats(10.0, 3000.0)),
        lengths=draw(lengths),
        pipeline=draw(pipeline),
        seed=draw(st.integers(0, 2**64 - 1)),
        rng=draw(rng),
    )


on_updates = st.sampled_from(["continue", "abort_drop", "abort_resubmit", "wait", "keep_recompute", "keep_stale"])


@st.composite
def streaming_pipelines(draw):
    """FullyAsync with any combination of the real systems' options."""
    order = draw(st.sampled_from(["fifo", "oldest_first", "balanced"]))
    return FullyAsync(
        max_staleness=draw(st.one_of(st.none(), st.integers(0, 3))),
        on_stale=draw(st.sampled_from(["drop", "requeue"])),
        admission_eta=draw(st.one_of(st.none(), st.integers(0, 3))),
        max_lag_samples=draw(st.one_of(st.none(), st.integers(100, 400))),
        max_ready_groups=draw(st.one_of(st.none(), st.integers(1, 20))),
        batch_order=LengthBalanced((800.0, 4000.0)) if order == "balanced" else order,
        on_update=draw(on_updates),
    )


@st.composite
def real_scenarios(draw, pipeline=None):
    """Scenarios with groups, prompts, prefill and any streaming or batch pipeline."""
    group = draw(st.sampled_from([1, 2, 4]))
    groups_per_batch = draw(st.integers(1, 12))
    batch_pipelines = st.builds(
        OffPolicy, k=st.integers(0, 2),
        over_sampling=st.one_of(st.none(), st.floats(0.0, 2.0), st.just(float("inf"))),
        keep_partial=st.booleans())
    pipe = draw(pipeline if pipeline is not None else st.one_of(streaming_pipelines(), batch_pipelines))
    batch = group * groups_per_batch
    if isinstance(pipe, FullyAsync):  # bounds under which no batch could ever form are refused
        if pipe.max_lag_samples is not None and pipe.max_lag_samples < batch:
            pipe = dataclasses.replace(pipe, max_lag_samples=batch)
        if pipe.max_ready_groups is not None and pipe.max_ready_groups < groups_per_batch:
            pipe = dataclasses.replace(pipe, max_ready_groups=groups_per_batch)
    return Scenario(
        rollout_slots=draw(st.integers(1, 48)),
        decode_tokens_per_s=draw(st.floats(10.0, 60.0)),
        batch_size=group * groups_per_batch,
        train_step_s=draw(st.floats(0.0, 200.0)),
        horizon_s=draw(st.floats(50.0, 2500.0)),
        lengths=draw(st.one_of(
            st.builds(LogNormal, mu=st.floats(5.0, 8.0), sigma=st.floats(0.0, 1.4),
                      max_tokens=st.sampled_from([2048.0, 16384.0]), group_correlation=st.floats(0.0, 0.9)),
            empiricals)),
        pipeline=pipe,
        group_size=group,
        prompt_tokens=draw(st.sampled_from([0.0, 200.0])),
        prefill_tokens_per_s=draw(st.sampled_from([float("inf"), 2000.0])),
        prefix_sharing=draw(st.booleans()),
        clear_cache_on_update=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32)),
        rng=draw(st.sampled_from(["fast", "python"])),
    )
