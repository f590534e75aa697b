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


# ------------------------------------------------------------------------------------------------
# Every field of the engine's schema (rollsim._rollsim.SCHEMA), for the fast-path / general-engine
# cross-check: a field the schema gains later is set too (drawn from its declared range), so a fast
# path that ignored it would disagree with the general engine.

from rollsim import _rollsim  # noqa: E402

SCHEMA_FIELDS = {f["name"]: f for f in _rollsim.SCHEMA["scenario"] if f["kind"] != "part"}

#: Realistic (and quick) values of the known fields; any other field is drawn from its schema range.
_VALUES = {
    "rollout_slots": st.integers(1, 48),
    "sync_every": st.integers(1, 4),
    "decode_tokens_per_s": st.floats(5.0, 100.0),
    "batch_size": st.integers(1, 96),
    "train_step_s": st.floats(0.0, 300.0),
    "horizon_s": st.floats(10.0, 1500.0),
    "seed": st.integers(0, 2**64 - 1),
    "weight_sync_s": st.floats(0.0, 30.0),
    "train_s_per_token": st.floats(0.0, 1e-3),
    "logprob_s_per_token": st.floats(0.0, 1e-3),
    "prompt_tokens": st.sampled_from([50.0, 500.0]),
    "prefill_tokens_per_s": st.sampled_from([500.0, 5000.0]),
    "decode_slowdown_per_seq": st.floats(0.001, 0.2),
    "decode_s_per_context_token": st.floats(1e-8, 1e-5),
    "rollout_pause_s": st.floats(0.0, 20.0),
    "kv_cache_tokens": st.floats(1.0, 3.0),  # times the least capacity that fits a request
}


_ALWAYS = frozenset({"rollout_slots", "batch_size", "horizon_s", "decode_tokens_per_s", "train_step_s", "seed"})


def _generic(f):
    """Values of a field from its schema: any bool / choice, or numbers in (a small part of) its range."""
    if f["kind"] == "bool":
        return st.booleans()
    if f["kind"] == "str":
        return st.sampled_from(f["choices"])
    if f["kind"] == "int":
        return st.integers(f["lo"], min(f["hi"], f["lo"] + 8))
    if f["kind"] == "float":
        return st.floats(f["lo"], min(f["hi"], f["lo"] + 10.0))
    raise AssertionError(f"no strategy for a field of kind {f['kind']!r} ({f['name']}): add one")


def _divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def every_field_scenarios(draw, pipeline=pipelines):
    """Valid scenarios in which any subset of the schema's fields (none, some or all) departs from
    its default; the others keep it (so chapter-shaped scenarios come up too)."""
    names = sorted(SCHEMA_FIELDS)
    changed = draw(st.one_of(st.just(frozenset()), st.sets(st.sampled_from(names)), st.just(frozenset(names))))
    changed |= _ALWAYS  # the run's size is always drawn (the chapter's would be slow)
    if {"decode_throughput_table", "decode_slowdown_per_seq"} <= changed:  # one speed model or the other
        changed -= {draw(st.sampled_from(["decode_throughput_table", "decode_slowdown_per_seq"]))}
    v = {n: (draw(_VALUES.get(n, _generic(SCHEMA_FIELDS[n]))) if n in changed and n not in (
        "group_size", "slots_per_instance", "decode_throughput_table") else SCHEMA_FIELDS[n]["default"])
        for n in names}
    if "group_size" in changed:
        v["group_size"] = draw(st.sampled_from(_divisors(v["batch_size"])))
    else:
        v["group_size"] = 1
    if "slots_per_instance" in changed:
        v["slots_per_instance"] = draw(st.sampled_from(_divisors(v["rollout_slots"])))
    lens = draw(st.one_of(lognormals, st.builds(Empirical, values=st.lists(st.integers(50, 20000), min_size=1,
                                                                          max_size=40))))
    if v["slots_per_instance"] == 0:  # these describe instances
        v.update(decode_slowdown_per_seq=0.0, decode_throughput_table=None, kv_cache_tokens=None,
                 decode_s_per_context_token=0.0)
    elif "decode_throughput_table" in changed:
        spi = v["slots_per_instance"]
        one = v["decode_tokens_per_s"]
        top = draw(st.floats(1.0, 4.0)) * one * spi
        v.update(decode_throughput_table=((1, one),) if spi == 1 else ((1, one), (spi, max(top, 1e-6))),
                 decode_slowdown_per_seq=0.0)
    if v["kv_cache_tokens"] is not None:
        longest = lens.max_tokens if isinstance(lens, LogNormal) else float(lens.values.max())
        v["kv_cache_tokens"] = v["kv_cache_tokens"] * (v["prompt_tokens"] + longest + 1.0)
    if "max_num_batched_tokens" in changed:  # the budget of shared steps
        v["prefill_mode"] = "shared"
    if v["prefill_mode"] == "shared" and v["slots_per_instance"] == 0:  # shared prefill: instances
        v["slots_per_instance"] = draw(st.sampled_from(_divisors(v["rollout_slots"])))
    if v["prefill_mode"] == "per_slot":
        v["max_num_batched_tokens"] = SCHEMA_FIELDS["max_num_batched_tokens"]["default"]
    else:
        v["max_num_batched_tokens"] = max(v["max_num_batched_tokens"], v["slots_per_instance"] + 1)
    pipe = draw(pipeline)
    if not (isinstance(pipe, FullyAsync) and pipe.max_staleness is not None):
        v["staleness_check"] = "start"  # "finish" changes how a cap is checked: it needs one
    return Scenario(lengths=lens, pipeline=pipe, **v)
