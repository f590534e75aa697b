"""Hypothesis strategies for valid scenarios, in one place (reused by every property test)."""

from hypothesis import strategies as st

from rollsim import Empirical, FullyAsync, LogNormal, OffPolicy, OneStepAsync, Scenario, Synchronous

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
