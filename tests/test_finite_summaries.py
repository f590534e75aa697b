"""Every summary of every accepted scenario is finite: scenarios drawn with each real-valued field
anywhere in its accepted range (``rollsim.scenario._BOUNDS``), log-uniformly and at the extremes,
and the integer fields up to their limits. Runs are kept small by ``max_samples`` (a RunLimitError,
or the pre-run ``max_samples`` refusal, is an acceptable outcome).

The only summary values that may be NaN are the means over trained samples, and exactly when there
is nothing to average: ``staleness_mean``, ``staleness_at_finish_mean`` and ``staleness_group_mean``
when ``samples_trained == 0``, ``staleness_mean_short`` / ``staleness_mean_long`` when
``samples_trained_short`` / ``samples_trained_long`` is 0. They are NaN then, never None."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rollsim import (Empirical, FullyAsync, LengthBalanced, LogNormal, NoTrainingStepWarning, OffPolicy,
                     RunLimitError, Scenario, ScenarioError, simulate)
from rollsim.lengths import MAX_SIGMA, MAX_TOKENS, MIN_TOKENS, MU_BOUND
from rollsim.scenario import _BOUNDS, MAX_COUNT

MAX_SAMPLES = 3000
#: Means over trained samples: NaN exactly when their count is zero.
NAN_WHEN_EMPTY = {"staleness_mean": "samples_trained", "staleness_at_finish_mean": "samples_trained",
                  "staleness_group_mean": "samples_trained", "staleness_mean_short": "samples_trained_short",
                  "staleness_mean_long": "samples_trained_long"}


def log_uniform(lo: float, hi: float, *, zero: bool = False) -> st.SearchStrategy[float]:
    """Floats in [lo, hi] spread evenly in log scale, the extremes drawn often; with ``zero`` also 0
    (``lo`` is then the smallest positive value drawn)."""
    lo_pos = lo if lo > 0 else 1e-12
    spread = st.floats(math.log10(lo_pos), math.log10(hi)).map(lambda e: min(max(10.0**e, lo_pos), hi))
    ends = [lo_pos, hi] + ([0.0] if zero or lo == 0 else [])
    return st.one_of(st.sampled_from(ends), spread)


def field(name: str) -> st.SearchStrategy[float]:
    lo, hi, _ = _BOUNDS[name]
    return log_uniform(lo, hi)


def log_int(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([lo, hi]),
                     st.floats(math.log2(max(lo, 1)), math.log2(hi)).map(lambda e: min(max(round(2.0**e), lo), hi)))


# answer lengths anywhere in their own ranges too (rollsim.lengths: MU_BOUND, MAX_SIGMA, lengths
# in [MIN_TOKENS, MAX_TOKENS])
lengths = st.one_of(
    st.builds(LogNormal, mu=st.one_of(st.sampled_from([-MU_BOUND, MU_BOUND]), st.floats(-MU_BOUND, MU_BOUND)),
              sigma=st.one_of(st.sampled_from([0.0, MAX_SIGMA]), st.floats(0.0, MAX_SIGMA)),
              max_tokens=log_uniform(1.0, MAX_TOKENS), group_correlation=st.sampled_from([0.0, 0.5, 0.99])),
    st.builds(Empirical, values=st.lists(log_uniform(MIN_TOKENS, MAX_TOKENS), min_size=1, max_size=8)),
)


@st.composite
def pipelines(draw, batch: int, group: int):
    if draw(st.booleans()):
        return OffPolicy(draw(st.sampled_from([0, 1, 2, 1_000_000])),
                         over_sampling=draw(st.one_of(st.none(), st.just(math.inf), log_uniform(0.0, 1e6))),
                         keep_partial=draw(st.booleans()))
    groups = batch // group
    order = draw(st.sampled_from(["fifo", "oldest_first", "balanced"]))
    opt = lambda s: draw(st.one_of(st.none(), s))  # noqa: E731
    return FullyAsync(
        max_staleness=opt(st.sampled_from([0, 1, 3, 2**32 - 1])),
        on_stale=draw(st.sampled_from(["drop", "requeue"])),
        admission_eta=opt(st.sampled_from([0, 2, 2**32 - 1])),
        max_lag_samples=opt(st.sampled_from([batch, 2 * batch, 2**63 - 1])),
        max_ready_groups=opt(st.sampled_from([groups, 4 * groups, 2**32 - 1])),
        batch_order=LengthBalanced(tuple(sorted(set(draw(st.lists(log_uniform(1.0, 1e7), min_size=1, max_size=3))))),
                                   share=draw(st.sampled_from([0.5, 1.0])))
        if order == "balanced" else order,
        on_update=draw(st.sampled_from(["continue", "abort_drop", "abort_resubmit", "wait", "keep_recompute",
                                        "keep_stale"])),
    )


@st.composite
def scenarios(draw):
    group = draw(log_int(1, 2**12))
    batch = group * draw(log_int(1, MAX_COUNT // group))
    spi = draw(st.sampled_from([0, 0, 1, 4, 2**12]))
    slots = max(spi, 1) * draw(log_int(1, MAX_COUNT // max(spi, 1)))
    speed = draw(field("decode_tokens_per_s"))
    train_step, sync = draw(field("train_step_s")), draw(field("weight_sync_s"))
    per_token, logprob = draw(field("train_s_per_token")), draw(field("logprob_s_per_token"))
    kw = dict(
        rollout_slots=slots, batch_size=batch, group_size=group, decode_tokens_per_s=speed,
        train_step_s=train_step, weight_sync_s=min(sync, 1e12 - train_step),
        train_s_per_token=per_token, logprob_s_per_token=min(logprob, 1e3 - per_token),
        horizon_s=draw(field("horizon_s")), rollout_pause_s=draw(field("rollout_pause_s")),
        prompt_tokens=draw(field("prompt_tokens")),
        prefill_tokens_per_s=draw(st.one_of(st.just(math.inf), field("prefill_tokens_per_s"))),
        prefix_sharing=draw(st.booleans()), clear_cache_on_update=draw(st.booleans()),
        lengths=draw(lengths), pipeline=draw(pipelines(batch, group)),
        seed=draw(st.integers(0, 2**64 - 1)), rng=draw(st.sampled_from(["fast", "python"])),
        slots_per_instance=spi,
    )
    if spi:
        model = draw(st.sampled_from(["slowdown", "table", "flat"]))
        if model == "slowdown":
            kw["decode_slowdown_per_seq"] = draw(field("decode_slowdown_per_seq"))
        elif model == "table":
            tps = draw(st.lists(field("decode_throughput_table"), min_size=1, max_size=3))
            sizes = sorted({1, spi, *draw(st.lists(st.integers(1, spi), max_size=2))})
            table = [(n, tps[min(i, len(tps) - 1)]) for i, n in enumerate(sizes)]
            table[0] = (1, min(table[0][1], _BOUNDS["decode_tokens_per_s"][1]))  # a decode speed
            kw["decode_throughput_table"], kw["decode_tokens_per_s"] = table, table[0][1]
        if draw(st.booleans()):
            need = kw["prompt_tokens"] + _longest(kw["lengths"]) + 1
            kw["kv_cache_tokens"] = draw(log_uniform(need, _BOUNDS["kv_cache_tokens"][1]))
    try:
        return Scenario(**kw)
    except ScenarioError as e:  # only the dependent checks may refuse a draw (e.g. quotas that cannot fill)
        assert str(e).startswith(("pipeline.batch_order.quotas",)), e
        return Scenario(**{**kw, "pipeline": FullyAsync()})


def _longest(lengths: LogNormal | Empirical) -> float:
    return float(lengths.values.max()) if isinstance(lengths, Empirical) else lengths.max_tokens


def check_finite(summary: dict) -> None:
    for key, value in summary.items():
        if isinstance(value, bool) or not isinstance(value, float):
            continue
        if key in NAN_WHEN_EMPTY:
            empty = summary[NAN_WHEN_EMPTY[key]] == 0
            assert math.isnan(value) == empty, (key, value, NAN_WHEN_EMPTY[key], summary[NAN_WHEN_EMPTY[key]])
            if empty:
                continue
        assert math.isfinite(value), (key, value)
    assert 0.0 <= summary["rollout_utilization"] <= 1.0
    assert 0.0 <= summary["drop_fraction"] <= 1.0


def run_summary(sc: Scenario) -> dict | None:
    """The summary of a small run, or None when the run would be too large (the limit refuses it)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return simulate(sc, record="summary", max_samples=MAX_SAMPLES).summary
    except RunLimitError:
        return None
    except ScenarioError as e:  # the pre-run estimate's refusal names max_samples
        assert str(e).startswith("max_samples:"), e
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(scenarios())
def test_every_summary_of_an_accepted_scenario_is_finite(sc):
    summary = run_summary(sc)
    if summary is not None:
        check_finite(summary)


def test_the_extremes_of_the_ranges_give_finite_summaries():
    """The inputs of the bug reports, at the nearest accepted values: the slowest decode speed gives a
    finite end and utilization (1e-320 gave end_s = inf and a NaN utilization)."""
    with pytest.warns(NoTrainingStepWarning, match=r"^no training step: no batch filled within horizon_s = 60 s "
                                                    r"\(257 samples started, 1 finished, against batch_size = 512\)"):
        slow = simulate(Scenario(decode_tokens_per_s=1e-6, horizon_s=60.0), record="summary").summary
    assert slow["end_s"] == 93952698.61259106 and slow["rollout_utilization"] == 1.0
    check_finite(slow)
    one = dict(rollout_slots=1, batch_size=1)
    for kw in (dict(prompt_tokens=1e9, prefill_tokens_per_s=1e-6),
               dict(train_step_s=1e12, horizon_s=1e12, decode_tokens_per_s=1e-6, **one),
               dict(train_s_per_token=1e3, horizon_s=1e5, **one),
               dict(rollout_pause_s=1e12, train_step_s=0.0, horizon_s=1e5, **one),
               dict(decode_tokens_per_s=1e9, horizon_s=1e-6),
               dict(rollout_slots=16, slots_per_instance=16, decode_slowdown_per_seq=1e6, decode_tokens_per_s=1e-6,
                    horizon_s=1e11)):
        summary = run_summary(Scenario(**kw))
        assert summary is not None, kw
        check_finite(summary)


def test_the_bug_report_values_are_refused():
    for kw, message in (
        (dict(decode_tokens_per_s=1e-320), "decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320"),
        (dict(prompt_tokens=1e308), "prompt_tokens: must be in [0, 1e9] tokens, got 1e+308"),
    ):
        try:
            Scenario(**kw)
        except ScenarioError as e:
            assert str(e) == message
        else:
            raise AssertionError(f"{kw} was accepted")
