"""Real systems' rules: groups, staleness control, batch order, weight-update modes, prefill, over-sampling.

Property tests of each policy's guarantee over random scenarios (tests/strategies.py), the
behaviours public reports describe, and golden values worked out by hand."""

import math
import warnings

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim import (Empirical, FullyAsync, LengthBalanced, LogNormal, Scenario,
                     Synchronous, simulate)
from strategies import real_scenarios, streaming_pipelines

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def run(sc, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return simulate(sc, **kw)


# ----- invariants over every option -------------------------------------------------------------

@settings(max_examples=150)
@given(real_scenarios())
def test_conservation_and_bounds_with_every_option(sc):
    res = run(sc)
    s, df = res.summary, res.samples
    assert s["samples_started"] == s["samples_trained"] + s["samples_dropped"] + s["samples_ready"] + s["samples_in_flight"]
    assert df.height == s["samples_started"]
    counts = dict(df.group_by("status").len().iter_rows())
    assert counts.get("trained", 0) == s["samples_trained"]
    assert counts.get("dropped", 0) == s["samples_dropped"]
    assert df["aborted"].sum() == s["samples_aborted"]
    total = s["tokens_trained"] + s["tokens_wasted"] + s["tokens_pending"]
    assert math.isclose(s["tokens_generated"], total, rel_tol=1e-9, abs_tol=1e-6)
    assert 0.0 <= s["rollout_utilization"] <= 1.0
    assert (df["staleness"].drop_nulls() >= 0).all()
    assert s["tokens_recomputed"] <= s["tokens_prefilled"] + 1e-9
    # whole groups: every trained group has all its answers, in one step
    trained = df.filter(pl.col("status") == "trained")
    per_group = trained.group_by("group_id").agg(pl.len(), pl.col("trained_step").n_unique().alias("steps"))
    assert (per_group["len"] == sc.group_size).all() and (per_group["steps"] == 1).all()
    assert res.steps["samples"].sum() == s["samples_trained"]
    assert (res.steps["samples"] == sc.batch_size).all()


@settings(max_examples=120)
@given(real_scenarios())
def test_segments_tile_every_answer(sc):
    """Every answer's token spans are contiguous from 0, one version each, versions increasing,
    and the last ends at the answer's length when it finished."""
    res = run(sc)
    seg = res.segments.sort("sample_id", "first_token")
    df = res.samples
    assert (seg["last_token"] > seg["first_token"]).all()
    g = seg.group_by("sample_id", maintain_order=True).agg(
        pl.col("first_token").first().alias("first"), pl.col("last_token").last().alias("last"),
        pl.len().alias("n"),
        ((pl.col("first_token").shift(-1) - pl.col("last_token")).abs().max()).alias("gap"),
        (pl.col("version").diff().min()).alias("min_step"),
        pl.col("version").first().alias("v0"), pl.col("version").last().alias("v1"))
    assert (g["first"] == 0.0).all()
    assert (g["gap"].fill_null(0.0) <= 1e-6).all()
    assert (g["min_step"].fill_null(1) >= 1).all()
    j = df.join(g, on="sample_id", how="left")
    fin = j.filter(pl.col("finish_s").is_not_null() & ~pl.col("aborted"))
    assert (fin["last"] - fin["length_tokens"]).abs().max() <= 1e-6 * max(1.0, fin["length_tokens"].max() or 1.0) or fin.height == 0
    assert (fin["n"] == fin["n_versions"]).all()
    # the first span's version is the start version, or later if the answer was stopped before its
    # first token (partial rollout at a batch's end) and resumed under newer weights
    assert (fin["v0"] >= fin["version_start"]).all() and (fin["v1"] == fin["version_end"]).all()


@settings(max_examples=80)
@given(real_scenarios(pipeline=streaming_pipelines()))
def test_drop_at_consumption_never_trains_over_the_cap(sc):
    res = run(sc)
    cap = sc.pipeline.max_staleness
    if cap is not None and res.summary["samples_trained"]:
        assert res.summary["staleness_max"] <= cap


@settings(max_examples=80)
@given(real_scenarios(pipeline=st.builds(FullyAsync, admission_eta=st.integers(0, 4),
                                         batch_order=st.sampled_from(["fifo", "oldest_first"]),
                                         on_update=st.sampled_from(["continue", "keep_stale", "keep_recompute"]))))
def test_admission_control_never_drops_and_bounds_how_far_rollout_runs_ahead(sc):
    """AReaL's rule promises: nothing dropped, and no sample starts more than eta batches ahead of
    the trainer: the i-th sample started (0-based) has version_start >= floor(i / batch) - eta, so a
    sample trained in start order has staleness <= eta. Answers that take longer than about eta
    steps to finish are overtaken by newer ones and can be trained staler (checked below)."""
    res = run(sc)
    eta = sc.pipeline.admission_eta
    df = res.samples
    assert res.summary["samples_dropped"] == 0
    i = df["sample_id"].cast(pl.Int64)
    assert (df["version_start"].cast(pl.Int64) >= i // sc.batch_size - eta).all()


def test_admission_control_staleness_bound_in_start_order_and_overtaking():
    """Trained in start order, every sample would be within eta; the ones over eta are long."""
    sc = Scenario(rollout_slots=128, batch_size=128, train_step_s=30.0, horizon_s=6 * 3600.0,
                  pipeline=FullyAsync(admission_eta=1))
    df = run(sc).samples.filter(pl.col("status") == "trained")
    over = df.filter(pl.col("staleness") > 1)
    assert over.height > 0  # overtaking happens with long tails
    assert over["length_tokens"].median() > 3 * df["length_tokens"].median()


@settings(max_examples=60)
@given(real_scenarios(pipeline=st.builds(FullyAsync, on_update=st.just("wait"),
                                         max_staleness=st.one_of(st.none(), st.integers(0, 3)))))
def test_wait_mode_never_mixes_versions_in_one_answer(sc):
    res = run(sc)
    df = res.samples
    assert (df["n_versions"] <= 1).all()
    assert (df["version_end"] == df["version_start"]).all()
    assert res.segments["sample_id"].is_unique().all()


@settings(max_examples=60)
@given(real_scenarios(pipeline=st.builds(FullyAsync, on_update=st.sampled_from(["continue", "wait"]))))
def test_without_interruption_no_answer_is_split_or_recomputed(sc):
    s = run(sc).summary
    assert s["samples_aborted"] == 0
    # only prompt prefill: no recompute except prompts re-prefilled after a cache clear
    if not sc.clear_cache_on_update or sc.group_size == 1:
        assert s["tokens_recomputed"] == 0


@settings(max_examples=60)
@given(real_scenarios(pipeline=st.builds(FullyAsync, max_ready_groups=st.integers(1, 10))))
def test_bounded_ready_queue_never_exceeds_its_bound(sc):
    res = run(sc)
    assert (res.steps["ready_after"] <= sc.pipeline.max_ready_groups * sc.group_size).all()


@settings(max_examples=60)
@given(real_scenarios(pipeline=st.builds(FullyAsync, max_lag_samples=st.integers(50, 300))))
def test_lag_bound_caps_samples_alive(sc):
    """PipelineRL-style: samples started and neither trained nor dropped never exceed the bound."""
    res = run(sc)
    df = res.samples
    events = []
    for row in df.iter_rows(named=True):
        events.append((row["start_s"], 1))
    steps = res.steps
    for row in steps.iter_rows(named=True):
        events.append((row["start_s"], -row["samples"]))
    # drops free budget too; counting them as never freed makes this an upper bound check
    alive, worst = 0, 0
    for _t, d in sorted(events, key=lambda e: (e[0], e[1])):
        alive += d
        worst = max(worst, alive)
    assert worst <= sc.pipeline.max_lag_samples + df["dropped"].sum()


# ----- behaviours public reports describe ---------------------------------------------------------

@pytest.mark.parametrize("cap", [1, 2])
def test_drop_at_consumption_starves_answers_longer_than_cap_steps(cap):
    """Answers whose generation takes more than about cap + 1 training steps are all dropped, short
    ones never (Applied Compute: trained mean length 1354 -> 897 tokens at max staleness 1).
    Measured here: with cap 1, 100 % of answers over 2 steps and 92 % of those of 1.5-2 steps are
    dropped, none under half a step. A 32K generation limit makes the tail span several steps."""
    sc = Scenario(pipeline=FullyAsync(max_staleness=cap), lengths=LogNormal(max_tokens=32768.0),
                  horizon_s=8 * 3600.0, seed=1)
    res = run(sc)
    step_s = res.steps["start_s"].diff().drop_nulls().mean()
    df = res.samples.filter(pl.col("status").is_in(["trained", "dropped"])).with_columns(
        ((pl.col("finish_s") - pl.col("start_s")) / step_s).alias("gen_steps"))
    long_ = df.filter(pl.col("gen_steps") > cap + 1.5)
    short = df.filter(pl.col("gen_steps") < 0.5)
    assert long_.height > 50
    assert long_["dropped"].mean() > 0.98
    assert short["dropped"].mean() == 0.0
    trained_mean = df.filter(~pl.col("dropped"))["length_tokens"].mean()
    assert trained_mean < 0.9 * df["length_tokens"].mean()  # training sees shorter answers


def test_admission_control_trades_drops_for_idle_slots():
    # generation outruns training (throughput ratio about 1.9), so something has to give
    base = Scenario(horizon_s=6 * 3600.0, seed=2, train_step_s=400.0)
    drop = run(base.replace(pipeline=FullyAsync(max_staleness=1))).summary
    admit = run(base.replace(pipeline=FullyAsync(admission_eta=1))).summary
    assert drop["samples_dropped"] > 100 and drop["rollout_utilization"] > 0.999
    assert admit["samples_dropped"] == 0 and admit["rollout_utilization"] < 0.9


def test_abort_on_update_wastes_the_in_flight_work():
    base = Scenario(horizon_s=3 * 3600.0, seed=3)
    cont = run(base).summary
    abort = run(base.replace(pipeline=FullyAsync(on_update="abort_drop"))).summary
    resub = run(base.replace(pipeline=FullyAsync(on_update="abort_resubmit"), prompt_tokens=500.0,
                             prefill_tokens_per_s=5000.0)).summary
    assert cont["tokens_wasted"] == 0 and cont["samples_aborted"] == 0
    assert abort["samples_aborted"] > 1000 and abort["tokens_wasted"] > 0.3 * abort["tokens_generated"]
    # only answers written entirely by the weights current when they finished survive
    trained = run(base.replace(pipeline=FullyAsync(on_update="abort_drop"))).samples.filter(pl.col("status") == "trained")
    assert (trained["version_finish"] == trained["version_start"]).all()
    # resubmitting keeps the work but pays the prefill of prompt + partial answer
    assert resub["tokens_wasted"] == 0 and resub["tokens_recomputed"] > 0


def test_length_balanced_batching_lowers_the_long_answers_staleness_gap():
    """With a staleness cap, waiting for each length bucket's quota paces the trainer to the long
    answers: their staleness gap over short ones vanishes and drops stop falling on long answers
    (measured: cap 2, gap 1.45 -> 0.04 versions, long answers' drop rate 28 % -> 19 %), at the cost of
    fewer steps and more drops overall. Without a cap the gap comes from generation time and
    balancing barely moves it (1.81 -> 1.76)."""
    base = Scenario(horizon_s=12 * 3600.0, seed=4, pipeline=FullyAsync(max_staleness=2))
    fifo = run(base)
    bal = run(base.replace(**{"pipeline.batch_order": LengthBalanced((1000.0, 8000.0))}))
    gap = lambda s: s["staleness_mean_long"] - s["staleness_mean_short"]  # noqa: E731
    assert gap(bal.summary) < 0.25 * gap(fifo.summary), (gap(fifo.summary), gap(bal.summary))
    long_drop = lambda r: r.staleness_by_length((1000, 8000))["drop_rate"][-1]  # noqa: E731
    assert long_drop(bal) < long_drop(fifo)
    assert bal.summary["steps"] < fifo.summary["steps"]
    # every batch holds at least its quota of long answers
    quotas = base.length_quotas((1000.0, 8000.0), 0.9)
    per_step = bal.samples.filter(pl.col("status") == "trained").group_by("trained_step").agg(
        (pl.col("length_tokens") > 8000).sum().alias("long"))
    assert (per_step["long"] >= quotas[-1]).all()


def test_keep_modes_split_answers_and_recompute_costs_prefill():
    base = Scenario(horizon_s=2 * 3600.0, seed=5, prompt_tokens=300.0, prefill_tokens_per_s=3000.0)
    stale = run(base.replace(pipeline=FullyAsync(on_update="keep_stale")))
    recompute = run(base.replace(pipeline=FullyAsync(on_update="keep_recompute")))
    assert stale.samples["n_versions"].max() > 1
    assert stale.summary["tokens_recomputed"] == 0
    assert recompute.summary["tokens_recomputed"] > 0
    # keeping the KV at an update makes the trained version gap at finish smaller than at start
    s = stale.summary
    assert s["staleness_at_finish_mean"] < s["staleness_mean"]


def test_groups_correlation_and_group_staleness():
    sc = Scenario(group_size=8, batch_size=512, horizon_s=4 * 3600.0,
                  lengths=LogNormal(group_correlation=0.7), pipeline=FullyAsync())
    res = run(sc)
    df = res.samples
    logs = df.with_columns(pl.col("length_tokens").log().alias("l"))
    within = logs.group_by("group_id").agg(pl.col("l").std().alias("sd"))["sd"].drop_nulls().mean()
    assert within < 0.8 * logs["l"].std()  # answers of one prompt are alike
    assert res.summary["staleness_group_mean"] >= res.summary["staleness_mean"]


def test_grouped_empirical_data_keeps_real_groups():
    # three prompts: short, medium, long answers
    values = [100, 120, 110, 2000, 2100, 1900, 9000, 9500, 8800]
    keys = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]
    sc = Scenario(lengths=Empirical(values, groups=keys), group_size=4, batch_size=64, horizon_s=3600.0)
    df = run(sc).samples
    spread = df.group_by("group_id").agg((pl.col("length_tokens").max() / pl.col("length_tokens").min()).alias("r"))
    assert spread["r"].max() <= 9500 / 8800 + 1e-9 or spread["r"].max() <= 2100 / 1900 + 1e-9 or spread["r"].max() <= 1.2


def test_requeue_regenerates_instead_of_dropping():
    base = Scenario(horizon_s=4 * 3600.0, seed=6, group_size=4, lengths=LogNormal(group_correlation=0.8))
    drop = run(base.replace(pipeline=FullyAsync(max_staleness=1))).summary
    req = run(base.replace(pipeline=FullyAsync(max_staleness=1, on_stale="requeue"))).summary
    assert req["groups_requeued"] > 0 and req["groups_requeued"] * 4 == req["samples_dropped"]
    assert drop["groups_requeued"] == 0


def test_partial_rollout_in_synchronous_pipeline():
    """slime --partial-rollout: keep every slot busy, stop at a full batch, resume the rest next step."""
    base = Scenario(rng="python", pipeline=Synchronous())
    plain = run(base)
    partial = run(base.replace(pipeline=Synchronous(over_sampling=math.inf, keep_partial=True),
                               prompt_tokens=300.0, prefill_tokens_per_s=10000.0))
    aborted = run(base.replace(pipeline=Synchronous(over_sampling=0.5)))
    assert partial.summary["steps"] > 2 * plain.summary["steps"]  # the long tail no longer blocks each step
    assert partial.summary["rollout_utilization"] > 2 * plain.summary["rollout_utilization"]
    assert partial.samples["n_versions"].max() > 1  # resumed answers span versions
    assert partial.summary["staleness_max"] >= 1 and partial.summary["tokens_wasted"] == 0
    assert aborted.summary["samples_aborted"] > 0 and aborted.summary["tokens_wasted"] > 0
    assert aborted.summary["staleness_max"] == 0


# ----- golden values worked out by hand -----------------------------------------------------------

ONE = dict(rollout_slots=1, decode_tokens_per_s=1.0, batch_size=1, train_step_s=10.0, horizon_s=100.0,
           lengths=Empirical([30.0]))


def test_golden_keep_stale():
    """1 slot, every answer 30 tokens at 1 token/s, batch 1, 10 s steps, keep_stale.
    t=0   s0 starts (v0)               t=30  s0 done; step 0 trains s0 [30, 40]; s1 starts (v0)
    t=40  v1: s1 has 10 tokens -> span (v0, 0..10), then v1 from 10
    t=60  s1 done: span (v1, 10..30); step 1 trains s1 at v1: staleness 1 (start), 0 (finish); s2 starts v1
    t=70  v2: s2 has 10 tokens -> span (v1, 0..10)      t=90 s2 done: span (v2, 10..30), step 2
    t=100 v3: s3 (started 90 at v2) has 10 tokens: the run ends (first event at the horizon)."""
    res = run(Scenario(**ONE, pipeline=FullyAsync(on_update="keep_stale")))
    seg = res.segments
    assert seg.rows() == [(0, 0, 0.0, 30.0), (1, 0, 0.0, 10.0), (1, 1, 10.0, 30.0), (2, 1, 0.0, 10.0),
                          (2, 2, 10.0, 30.0), (3, 2, 0.0, 10.0)]
    df = res.samples
    assert df["trained_step"].to_list() == [0, 1, 2, None]
    assert df["staleness"].to_list() == [0, 1, 1, None]
    assert df["staleness_at_finish"].to_list() == [0, 0, 0, None]
    assert res.steps["start_s"].to_list() == [30.0, 60.0, 90.0]
    assert res.summary["end_s"] == 100.0 and res.summary["steps"] == 3


def test_golden_keep_recompute_with_prefill():
    """As above with a 5-token prompt prefilled at 1 token/s and keep_recompute:
    t=0  s0: prefill 0..5, decode 5..35     t=35 s0 done; step 0 [35, 45]; s1 prefill 35..40, decode from 40
    t=45 v1: s1 has 5 tokens; recompute prompt+5 = 10 tokens: 45..55, decode 25 more: done at 80
    t=80 s1 done; step 1 [80, 90]; s2 starts at 80: prompt prefill 80..85 (a new group: not a recompute)
    t=90 v2: s2 has 5 tokens, recompute 10 -> 90..100, done at 125. The clock is still before the
    horizon (100) after t=90, so the next event, s2's finish at 125, is the last one processed:
    step 2 starts at 125 and s3 starts (its prompt prefill counts)."""
    res = run(Scenario(**ONE, pipeline=FullyAsync(on_update="keep_recompute"), prompt_tokens=5.0,
                       prefill_tokens_per_s=1.0))
    assert res.steps["start_s"].to_list() == [35.0, 80.0, 125.0]
    assert res.samples["finish_s"].to_list() == [35.0, 80.0, 125.0, None]
    s = res.summary
    assert s["tokens_recomputed"] == 20.0  # two recomputes of prompt + 5 tokens
    assert s["tokens_prefilled"] == 5.0 * 4 + 20.0  # four prompts, two recomputes
    assert s["end_s"] == 125.0
    assert res.segments.filter(pl.col("sample_id") == 1).rows() == [(1, 0, 0.0, 5.0), (1, 1, 5.0, 30.0)]


def test_golden_abort_drop_and_wait():
    """abort_drop: t=30 s0 done, step 0 [30, 40], s1 starts; t=40 s1 aborted with 10 tokens wasted, s2
    starts (v1) -> done 70, step 1 [70, 80]; s3 starts 70, aborted at 80 (10 wasted); s4 80 -> 110, the
    last event processed (the clock was at 80 < 100): step 2 starts at 110 and s5 starts.
    wait: t=40 v1 waits for s1 (done 60): no answer mixes versions; s2 starts at 60 with v1; step
    ends at 70 and 100 (the last event) wait for s2 (done 90) and s3."""
    res = run(Scenario(**ONE, pipeline=FullyAsync(on_update="abort_drop")))
    df = res.samples
    assert df["aborted"].to_list() == [False, True, False, True, False, False]
    assert df["start_s"].to_list() == [0.0, 30.0, 40.0, 70.0, 80.0, 110.0]
    assert res.steps["start_s"].to_list() == [30.0, 70.0, 110.0]
    assert res.summary["tokens_wasted"] == 20.0 and res.summary["samples_aborted"] == 2
    res = run(Scenario(**ONE, pipeline=FullyAsync(on_update="wait")))
    df = res.samples
    assert df["start_s"].to_list() == [0.0, 30.0, 60.0, 90.0]
    assert df["version_start"].to_list() == [0, 0, 1, 2]
    assert res.steps["start_s"].to_list() == [30.0, 60.0, 90.0]


def test_golden_admission_eta_0_is_synchronous():
    """eta = 0 with one slot and batch 2: a new sample may start only while accepted + running + 1
    <= (0 + version + 1) * 2, i.e. two per version: s0, s1 at v0 (0..30, 30..60), step 0 [60, 70],
    then s2, s3 at v1 (70..100, ...): staleness 0 everywhere, the slot idles 60..70."""
    res = run(Scenario(**{**ONE, "batch_size": 2, "horizon_s": 200.0}, pipeline=FullyAsync(admission_eta=0)))
    df = res.samples
    assert df["start_s"].to_list()[:4] == [0.0, 30.0, 70.0, 100.0]
    assert res.summary["staleness_max"] == 0
    assert res.steps["slot_idle_s"].to_list()[:2] == [0.0, 10.0]
