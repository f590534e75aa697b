"""The learning-side model (rollsim.learning): the drift model's properties, the fitted defaults against
the public numbers, span-level staleness of partial rollouts, the length gap, and the data sets."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

import rollsim
from rollsim import datasets
from rollsim import learning as L
from rollsim.scenario import Scenario
from rollsim.simulation import Result

LOG_LO, LOG_HI = math.log(0.8), math.log(1.28)


def _fake(spans: list[tuple[int, int, float, float]], samples: list[tuple[int, float, int, int | None]]) -> Result:
    """A Result from hand-made frames: spans (sample_id, version, first, last); samples (sample_id,
    length, version_start, trained_step or None for an untrained one)."""
    seg = pl.DataFrame({"sample_id": [s[0] for s in spans], "version": [s[1] for s in spans],
                        "first_token": [s[2] for s in spans], "last_token": [s[3] for s in spans]},
                       schema={"sample_id": pl.UInt32, "version": pl.UInt32, "first_token": pl.Float64,
                               "last_token": pl.Float64})
    smp = pl.DataFrame({"sample_id": [s[0] for s in samples], "length_tokens": [s[1] for s in samples],
                        "version_start": [s[2] for s in samples], "trained_step": [s[3] for s in samples],
                        "status": ["trained" if s[3] is not None else "dropped" for s in samples]},
                       schema={"sample_id": pl.UInt32, "length_tokens": pl.Float64, "version_start": pl.UInt32,
                               "trained_step": pl.Int64, "status": pl.String})
    return Result(scenario=Scenario(), summary={}, steps=pl.DataFrame(), _samples=smp, _segments=seg)


def test_fit_reproduces_public_numbers_within_their_ranges() -> None:
    table = L.fit_table()
    assert table.height == len(L.FIT_TARGETS) == 8
    assert table["within"].all(), table.filter(~pl.col("within"))
    row = {r["target"]: r for r in table.iter_rows(named=True)}
    assert row["pg_clipfrac at staleness 1"]["model"] == pytest.approx(0.348, abs=0.002)
    assert row["pg_clipfrac at staleness 3"]["model"] == pytest.approx(0.401, abs=0.002)
    assert row["sequence ratio, 100 tokens of bias 0.012"]["model"] == pytest.approx(math.exp(1.2))
    assert row["pg_clipfrac, synchronous"]["model"] == 0.0


def test_defaults_are_the_fit_rounded() -> None:
    fitted, default = L.fit(), L.DriftModel()
    for name in ("noise_sd", "drift_sd", "drift_exponent"):
        assert getattr(default, name) == pytest.approx(getattr(fitted, name), rel=2e-3), name
    assert default.noise_mean == fitted.noise_mean == -0.0015


@given(st.floats(0.0, 0.5), st.floats(LOG_LO + 1e-3, LOG_HI - 1e-3), st.floats(0.0, 2.0), st.floats(0.0, 1.0),
       st.sampled_from([None, 3.5, 10.0]))
def test_staleness_zero_is_the_noise_floor_alone(noise: float, mean: float, drift: float, h: float,
                                                 df: float | None) -> None:
    with_drift = L.DriftModel(noise_sd=noise, noise_mean=mean, drift_sd=drift, drift_exponent=h, tail_df=df)
    floor = L.DriftModel(noise_sd=noise, noise_mean=mean, drift_sd=0.0, tail_df=df)
    a, b = L.token_stats([0.0], with_drift), L.token_stats([0.0, 5.0], floor)
    assert a.row(0) == b.row(0)  # drift adds nothing at staleness 0
    assert b.row(0)[1:] == b.row(1)[1:]  # and without drift staleness changes nothing
    assert a["logratio_sd"][0] == pytest.approx(noise)


@given(st.floats(0.0, 0.5), st.floats(LOG_LO + 1e-3, LOG_HI - 1e-3), st.floats(0.0, 2.0), st.floats(0.0, 2.0),
       st.lists(st.floats(0.0, 50.0), min_size=2, max_size=6))
def test_more_staleness_never_lowers_clip_fraction(noise: float, mean: float, drift: float, h: float,
                                                   stale: list[float]) -> None:
    # holds whenever the mean log-ratio lies inside the clip range and does not move (drift_mean = 0)
    s = sorted(stale)
    t = L.token_stats(s, L.DriftModel(noise_sd=noise, noise_mean=mean, drift_sd=drift, drift_exponent=h))
    for col in ("clip_fraction", "pg_clipfrac", "icepop_masked"):
        v = t[col].to_numpy()
        assert np.all(np.diff(v) >= -1e-15), (col, v)
    assert np.all(np.diff(t["ess_token"].to_numpy()) <= 1e-15)


@given(st.floats(0.001, 0.5), st.floats(0.0, 0.02), st.floats(1.0, 100.0), st.floats(1.5, 1000.0),
       st.lists(st.floats(1.0, 40000.0), min_size=2, max_size=6), st.integers(0, 4))
def test_longer_sequences_masked_at_least_as_often(sd: float, mean: float, lo_inv: float, hi: float,
                                                   lengths: list[float], stale: int) -> None:
    # upper caps with a non-negative mean per token; two-sided masks with a zero mean
    ls = np.array(sorted(lengths))
    n = ls
    for m, mask in ((mean, (0.0, hi)), (0.0, (1.0 / (1.0 + lo_inv), hi))):
        model = L.DriftModel(noise_sd=sd, noise_mean=m, drift_sd=0.3)
        rules = L._Rules(seq_cap=hi, seq_mask=mask)
        out = L._seq_stats(n * float(model.mean(stale)), n * float(model.var(stale)), n, rules)
        assert np.all(np.diff(out["seq_masked"]) >= -1e-12), out["seq_masked"]
        if m >= 0:
            assert np.all(np.diff(out["seq_truncated"]) >= -1e-12)


def test_tokens_take_the_staleness_of_their_own_span() -> None:
    # sample 0: 100 tokens of version 0 then 200 of version 2, trained at step 2; sample 1: 50 tokens
    # of version 2 trained at step 2; sample 2 dropped (generated, not trained)
    res = _fake([(0, 0, 0.0, 100.0), (0, 2, 100.0, 300.0), (1, 2, 0.0, 50.0), (2, 1, 0.0, 900.0)],
                [(0, 300.0, 0, 2), (1, 50.0, 2, 2), (2, 900.0, 1, None)])
    out = L.learning(res)
    st_ = L.token_stats([0.0, 2.0])
    p0, p2 = st_["clip_fraction"].to_list()
    row = out.steps.row(0, named=True)
    assert row["step"] == 2 and row["samples"] == 2 and row["tokens"] == 350.0
    assert row["staleness_mean"] == pytest.approx(200 / 350)
    assert row["clip_fraction"] == pytest.approx((100 * p2 + 250 * p0) / 350, rel=1e-12)
    assert row["trained_length_mean"] == 175.0
    assert row["generated_length_mean"] == 50.0  # started with version 2: sample 1 only
    assert row["length_gap"] == 125.0
    assert out.summary["generated_length_mean"] == pytest.approx(1250 / 3)
    # the sequence log-ratio of sample 0 sums its spans: mean 100 m(2) + 200 m(0), variance likewise
    md = L.DriftModel()
    m = 100 * float(md.mean(2)) + 200 * float(md.mean(0))
    v = 100 * float(md.var(2)) + 200 * float(md.var(0))
    p_trunc0 = 0.5 * math.erfc((math.log(3.0) - m) / math.sqrt(2 * v))
    m1, v1 = 50 * float(md.mean(0)), 50 * float(md.var(0))
    p_trunc1 = 0.5 * math.erfc((math.log(3.0) - m1) / math.sqrt(2 * v1))
    assert row["seq_truncated"] == pytest.approx((p_trunc0 + p_trunc1) / 2, rel=1e-12)


def test_gaussian_closed_forms_match_monte_carlo() -> None:
    md = L.DriftModel()
    t = L.token_stats([1.0], md, tis_cap=1.5)
    g = np.random.default_rng(1)
    x = float(md.mean(1.0)) + math.sqrt(float(md.var(1.0))) * g.standard_normal(2_000_000)
    assert t["clip_fraction"][0] == pytest.approx(((x < LOG_LO) | (x > LOG_HI)).mean(), abs=2e-3)
    assert t["tis_truncated"][0] == pytest.approx((x > math.log(1.5)).mean(), abs=2e-3)
    w = np.minimum(np.exp(x), 1.5)
    assert t["ess_token"][0] == pytest.approx(w.mean() ** 2 / (w * w).mean(), abs=2e-3)


def test_run_metrics_and_delegation() -> None:
    res = rollsim.simulate(Scenario(horizon_s=1500.0))
    a, b = L.learning(res), res.learning()
    assert a.steps.equals(b.steps) and a.summary == b.summary
    s = a.summary
    for k in ("clip_fraction", "tis_truncated", "icepop_masked", "seq_truncated", "seq_masked", "gspo_clipfrac"):
        assert 0.0 <= s[k] <= 1.0
    for k in ("ess_token", "ess_seq", "ess_gspo"):
        assert 0.0 < s[k] <= 1.0
    assert int(s["samples"]) == res.samples.filter(pl.col("status") == "trained").height
    assert a.steps["staleness_mean"][0] == 0.0  # the first batch is fresh
    assert set(a.by_length["bin"]) <= {"[0, 1000)", "[1000, 2000)", "[2000, 4000)", "[4000, 8000)",
                                       "[8000, 16000)", "[16000, inf)"}
    # a synchronous run: staleness 0 everywhere, so every token gets the noise floor alone
    sync = rollsim.simulate(Scenario(horizon_s=1500.0, pipeline=rollsim.Synchronous()))
    floor = L.token_stats([0.0])
    out = sync.learning()
    assert out.steps["staleness_mean"].max() == 0.0
    assert out.steps["clip_fraction"].to_numpy() == pytest.approx(floor["clip_fraction"][0], rel=1e-12)


def test_student_t_tails_seeded() -> None:
    res = rollsim.simulate(Scenario(horizon_s=1000.0))
    md = L.DriftModel(tail_df=3.0)
    a, b = res.learning(md, seed=3), res.learning(md, seed=3)
    assert a.summary == b.summary
    # same sd, heavier tails: fewer tokens outside a range close to 1 sd, more far out
    g, t = L.token_stats([0.0], L.DriftModel()), L.token_stats([0.0], L.DriftModel(tail_df=3.0))
    assert t["icepop_masked"][0] >= g["icepop_masked"][0]


def test_sky_t1_dataset() -> None:
    e = datasets.sky_t1_longcot()
    assert e.weights is not None and e.weights.sum() == 860
    assert e.mean_tokens() == pytest.approx(14096.351163, rel=1e-9)
    f = datasets.sky_t1_longcot(finished_only=True)
    assert f.weights is not None and f.weights.sum() == 553
    assert datasets.by_name("sky-t1", max_tokens=16384).values.max() == 16384
    assert "sky-t1" in datasets.NAMES


def test_tail_fits_and_mean_shift() -> None:
    mu, sigma, table = datasets.tail_fit("sky-t1")
    assert (mu, sigma) == pytest.approx((8.6592, 0.9171), abs=1e-3)
    assert table["rel_error"].abs().max() < 0.14
    mu, sigma, table = datasets.tail_fit("deepseek-r1")
    assert (mu, sigma) == pytest.approx((6.7523, 0.9598), abs=1e-3)
    assert table["rel_error"].abs().max() < 0.28
    shifted = datasets.tail("sky-t1", mean_tokens=8000.0, max_tokens=16384)
    assert shifted.mean_tokens() == pytest.approx(8000.0, rel=1e-9)
    assert shifted.sigma == pytest.approx(0.9171, abs=1e-3)


def test_plot_and_report_show_learning_beside_staleness(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    from rollsim import plot, report
    from rollsim.cli import main

    res = rollsim.simulate(Scenario(horizon_s=1200.0))
    fig = plot.learning_by_length({"a": res, "b": res})
    ax, tw = fig.axes[0], fig.axes[1]
    assert len(ax.containers) == 2 and len(tw.lines) == 6
    expect = L.learning(res).by_length["pg_clipfrac"].to_numpy()
    got = tw.lines[0].get_ydata()
    assert np.allclose(got[~np.isnan(got)], expect)
    out = tmp_path / "run"
    assert main(["run", "--horizon-s", "1200", "--out", str(out)]) == 0
    assert (out / "segments.parquet").exists()
    with open(report.write_report(out, tmp_path / "r.md")) as fh:
        text = fh.read()
    assert "What staleness costs the learner (a model)" in text and "pg_clipfrac" in text


def test_learning_sweep_beside_throughput() -> None:
    base = Scenario(horizon_s=3600.0)
    grid = {"pipeline.max_staleness": [1, 4], "pipeline.admission_eta": [None, 1]}
    df = rollsim.sweeps.learning_sweep(base, grid, seeds=[0, 1])
    assert df.height == 8
    assert rollsim.plot.sweep_fields(df) == ["pipeline.max_staleness", "pipeline.admission_eta"]
    assert set(rollsim.sweeps.SWEEP_METRICS) <= set(rollsim.plot.sweep_metrics(df))
    one = df.filter((pl.col("pipeline.max_staleness") == 1) & pl.col("pipeline.admission_eta").is_null()
                    & (pl.col("seed") == 1)).row(0, named=True)
    res = rollsim.simulate(base.replace(seed=1, **{"pipeline.max_staleness": 1}))
    assert one["pg_clipfrac"] == L.learning(res).summary["pg_clipfrac"]
    assert one["tokens_per_s"] == res.summary["tokens_trained"] / res.summary["end_s"]
    # the drop-at-consumption cap of 1 trains shorter answers than were generated (Applied Compute saw
    # 1354 -> 897 tokens); a looser cap drops less and narrows the gap
    by = df.group_by("pipeline.max_staleness").agg(pl.col("length_gap").mean()).sort("pipeline.max_staleness")
    assert by["length_gap"][0] < by["length_gap"][1] < 0


def test_length_drift_schedules() -> None:
    assert L.LengthDrift("linear", 0.01).scale([0, 10, 100]).tolist() == [1.0, 1.1, 2.0]
    assert L.LengthDrift("log", 0.5).scale([0.0, math.e - 1]).tolist() == pytest.approx([1.0, 1.5])
    t = L.LengthDrift("table", table=((0, 1.0), (10, 2.0)))
    assert t.scale([-1, 0, 5, 10, 50]).tolist() == [1.0, 1.0, 1.5, 2.0, 2.0]
    assert L.LengthDrift("linear", -1.0).scale([5])[0] == 1e-6


def test_length_feedback_follows_the_gap() -> None:
    res = rollsim.simulate(Scenario(horizon_s=3600.0, pipeline=rollsim.FullyAsync(max_staleness=1)))
    out = res.learning()
    assert L.length_feedback(out, 0.0)["scale"].to_list() == [1.0] * out.steps.height
    fb = L.length_feedback(out, 0.5)
    ratio = (out.steps["trained_length_mean"] / out.steps["generated_length_mean"]).to_numpy()
    assert fb["scale"].to_numpy() == pytest.approx(np.cumprod(np.sqrt(ratio)))
    assert fb["scale"][-1] < 1.0  # the cap trains short answers: lengths shrink under feedback
