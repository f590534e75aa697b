"""Learning metrics of summary-mode runs: the engine's token-by-staleness sums, the closed forms over
them (equal to ``learning(res)`` in samples mode), and the trade-off sweep."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

import rollsim
from rollsim import _rollsim
from rollsim.learning import STALENESS_BINS, DriftModel, learning, summary_learning

LEARN = [c["name"] for c in _rollsim.SCHEMA["learning_summary"]]
TOKEN_METRICS = ("clip_fraction", "pg_clipfrac", "tis_truncated", "icepop_masked", "ess_token")

SCENARIOS = {
    "synchronous": rollsim.Scenario(horizon_s=1800.0, pipeline=rollsim.Synchronous()),
    "fully_async": rollsim.Scenario(horizon_s=1800.0),
    "keep_recompute": rollsim.Scenario(horizon_s=1800.0,
                                       pipeline=rollsim.FullyAsync(max_staleness=2, on_update="keep_recompute")),
    "keep_stale": rollsim.Scenario(horizon_s=1800.0, pipeline=rollsim.FullyAsync(on_update="keep_stale")),
    "abort_drop": rollsim.Scenario(horizon_s=1800.0, pipeline=rollsim.FullyAsync(on_update="abort_drop")),
    "partial_sync": rollsim.Scenario(horizon_s=1800.0, pipeline=rollsim.Synchronous(math.inf, keep_partial=True)),
    "off_policy": rollsim.Scenario(horizon_s=1800.0, prompt_tokens=2000.0,
                                   pipeline=rollsim.OffPolicy(2, keep_partial=True)),
}


def _many(sc: rollsim.Scenario) -> dict:
    return _rollsim.simulate_many([sc.to_dict()], [0], [sc.seed])


def _hist_from_segments(res: rollsim.Result) -> np.ndarray:
    trained = res.samples.filter(pl.col("status") == "trained").select("sample_id", "trained_step")
    spans = res.segments.join(trained, on="sample_id").select(
        (pl.col("trained_step") - pl.col("version").cast(pl.Int64)).clip(0, STALENESS_BINS).alias("b"),
        (pl.col("last_token") - pl.col("first_token")).alias("n"))
    h = np.zeros(STALENESS_BINS + 1)
    for b, n in spans.group_by("b").agg(pl.col("n").sum()).iter_rows():
        h[b] = n
    return h


def test_schema_declares_the_learning_sums() -> None:
    assert STALENESS_BINS == 16
    assert LEARN == [*(f"tokens_stale_{i}" for i in range(16)), "tokens_stale_16_plus", "tokens_drawn"]
    assert set(LEARN) <= set(rollsim.sweeps.SUMMARY_SCHEMA)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_engine_sums_equal_the_segments(name: str) -> None:
    sc = SCENARIOS[name]
    res = rollsim.simulate(sc)
    out = _many(sc)
    h = np.array([out[c][0] for c in LEARN[:-1]])
    want = _hist_from_segments(res)
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-6)
    assert h.sum() == pytest.approx(res.summary["tokens_trained"], rel=1e-12)
    assert out["tokens_drawn"][0] == pytest.approx(float(res.samples["length_tokens"].sum()), rel=1e-12)
    if name in ("keep_recompute", "keep_stale", "partial_sync"):  # partial rollouts: spans of several versions
        assert (res.samples["n_versions"] > 1).sum() > 100
        assert h[0] > 0 and h[1] > 0


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("model", [DriftModel(), DriftModel(noise_sd=0.1, drift_sd=0.3, drift_exponent=0.5,
                                                            drift_mean=0.01)])
def test_summary_learning_equals_learning_of_samples_mode(name: str, model: DriftModel) -> None:
    sc = SCENARIOS[name]
    rules = dict(clip_low=0.2, clip_high=0.28, tis_cap=2.0, icepop=(0.5, 5.0))
    want = learning(rollsim.simulate(sc), model, **rules).summary
    got = summary_learning(_many(sc), model, **rules).row(0, named=True)
    for k in TOKEN_METRICS + ("trained_length_mean", "generated_length_mean"):
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12), k
    # a difference of two means of about 3,000 tokens: to 1e-12 of them
    assert got["length_gap"] == pytest.approx(want["length_gap"], abs=1e-12 * want["generated_length_mean"])
    assert got["staleness_token_mean"] == pytest.approx(want["staleness_mean"], rel=1e-12, abs=1e-12)


def test_student_t_tails_agree_too() -> None:
    sc = SCENARIOS["keep_recompute"]
    model = DriftModel(tail_df=4.0)
    want = learning(rollsim.simulate(sc), model, seed=3).summary
    got = summary_learning(_many(sc), model, seed=3).row(0, named=True)
    for k in TOKEN_METRICS:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12), k


def test_overflow_and_empty_runs_give_nan() -> None:
    base = {c: 0.0 for c in LEARN} | {"tokens_trained": 100.0, "samples_trained": 2, "samples_started": 4,
                                       "end_s": 10.0, "tokens_drawn": 300.0}
    rows = [base | {"tokens_stale_0": 60.0, "tokens_stale_16_plus": 40.0}, base | {"tokens_trained": 0.0,
                                                                                   "samples_trained": 0}]
    df = summary_learning(pl.DataFrame(rows))
    for k in TOKEN_METRICS + ("staleness_token_mean",):
        assert all(math.isnan(v) for v in df[k]), k
    assert df["trained_length_mean"][0] == 50.0 and df["generated_length_mean"][0] == 75.0
    assert df["length_gap"][0] == -25.0 and df["tokens_per_s"][0] == 10.0
    assert math.isnan(df["trained_length_mean"][1])


def test_synchronous_run_has_the_noise_floor_alone() -> None:
    row = summary_learning(_many(SCENARIOS["synchronous"])).row(0, named=True)
    assert row["staleness_token_mean"] == 0.0
    floor = rollsim.learning.token_stats([0.0]).row(0, named=True)
    for k in TOKEN_METRICS:
        assert row[k] == pytest.approx(floor[k], rel=1e-12, abs=1e-15)


def test_refusals() -> None:
    df = summary_learning(_many(SCENARIOS["synchronous"]))
    with pytest.raises(rollsim.ScenarioError, match=r"^seq_cap: sequence-level rules need each sample's spans"):
        summary_learning(df, seq_cap=3.0)
    with pytest.raises(rollsim.ScenarioError, match=r"^frame: lacks the columns \['tokens_stale_0'"):
        summary_learning(pl.DataFrame({"steps": [1]}))


# ------------------------------------------------------------------------------------- the trade-off
TINY = rollsim.Scenario(horizon_s=1200.0, rollout_slots=64, batch_size=128)
GRID = {"pipeline.max_staleness": [0, 2], "pipeline.admission_eta": [1, 4]}


def _tiny_sweep(**kw: object) -> pl.DataFrame:
    return rollsim.sweep(TINY, GRID, seeds=2, progress=False, **kw)


def test_sweep_adds_the_learning_metrics() -> None:
    df = _tiny_sweep(learning=True)
    assert df.height == 8
    for k in rollsim.learning.SUMMARY_METRICS:
        assert df[k].dtype == pl.Float64, k
    # the columns are the closed forms over the stored sums, and equal samples mode's learning()
    again = summary_learning(df.drop(rollsim.learning.SUMMARY_METRICS))
    for k in rollsim.learning.SUMMARY_METRICS:
        np.testing.assert_array_equal(df[k].to_numpy(), again[k].to_numpy())
    row = df.filter((pl.col("pipeline.max_staleness") == 2) & (pl.col("pipeline.admission_eta") == 4)
                    & (pl.col("seed") == 1)).row(0, named=True)
    sc = TINY.replace(**{"pipeline.max_staleness": 2, "pipeline.admission_eta": 4}, seed=1)
    res = rollsim.simulate(sc)
    want = learning(res).summary
    for k in TOKEN_METRICS + ("trained_length_mean",):
        assert row[k] == pytest.approx(want[k], rel=1e-12), k
    assert row["tokens_per_s"] == pytest.approx(res.summary["tokens_trained"] / res.summary["end_s"], rel=1e-15)
    # staleness 0 admits only fresh tokens: the noise floor alone
    floor = rollsim.learning.token_stats([0.0]).row(0, named=True)
    zero = df.filter(pl.col("pipeline.max_staleness") == 0)
    assert zero["staleness_token_mean"].to_list() == [0.0] * 4
    assert zero["pg_clipfrac"].to_list() == pytest.approx([floor["pg_clipfrac"]] * 4, rel=1e-12)
    stale = df.filter(pl.col("pipeline.max_staleness") == 2)
    assert (stale["pg_clipfrac"] > 0.1).all() and (stale["tokens_per_s"] > zero["tokens_per_s"]).all()


def test_sweep_learning_options_and_refusals(tmp_path: object) -> None:
    a = _tiny_sweep(learning={"clip_high": 0.5, "drift_sd": 0.3}, metrics=["steps"])
    b = summary_learning(_tiny_sweep(), DriftModel(drift_sd=0.3), clip_high=0.5)
    assert a.columns[:4] == ["pipeline.max_staleness", "pipeline.admission_eta", "seed", "steps"]
    np.testing.assert_array_equal(a["pg_clipfrac"].to_numpy(), b["pg_clipfrac"].to_numpy())
    assert "pg_clipfrac" not in _tiny_sweep().columns
    with pytest.raises(rollsim.ScenarioError, match=r"^learning\.seq_cap: sequence-level rules need"):
        _tiny_sweep(learning={"seq_cap": 3.0})
    with pytest.raises(rollsim.ScenarioError, match=r"^learning\.nope: unknown key"):
        _tiny_sweep(learning={"nope": 1})
    with pytest.raises(rollsim.ScenarioError, match=r"^learning: must be True or a dict"):
        _tiny_sweep(learning="yes")


def test_sweep_file_with_learning(tmp_path: object) -> None:
    from pathlib import Path

    from rollsim.sweeps import config

    spec = config.load(Path(rollsim.__file__).parent / "examples" / "learning_sweep.toml")
    assert spec.learning == {"clip_low": 0.2, "clip_high": 0.28, "tis_cap": 2.0}
    assert spec.grid == {"pipeline.max_staleness": [0, 1, 2, 4], "pipeline.admission_eta": [1, 2, 4]}
    doc = {"base": {"horizon_s": 600.0}, "grid": {"pipeline.max_staleness": [0, 2]}, "seeds": 1,
           "learning": {"icepop": [0.5, 5.0], "tail_df": 5.0}}
    spec = config.parse(doc)
    assert spec.learning == {"icepop": [0.5, 5.0], "tail_df": 5.0}
    with pytest.raises(rollsim.ScenarioError, match=r"^learning\.gspo_clip: sequence-level rules"):
        config.parse(doc | {"learning": {"gspo_clip": [1e-4, 1e-4]}})
    with pytest.raises(rollsim.ScenarioError, match=r"^model\.noise_sd: "):
        config.parse(doc | {"learning": {"noise_sd": -1.0}})


def test_cli_sweep_prints_the_learning_metrics(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    from pathlib import Path

    from rollsim import cli

    f = Path(str(tmp_path)) / "s.toml"
    f.write_text('seeds = 1\n[base]\nhorizon_s = 600.0\n[grid]\n"pipeline.max_staleness" = [0, 2]\n[learning]\n')
    rc = cli.main(["sweep", str(f), "--out", str(Path(str(tmp_path)) / "out"), "--no-progress", "--format", "csv"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "pg_clipfrac_mean" in out and "length_gap_mean" in out and "tokens_per_s_mean" in out
    # the dataset keeps the sums: re-read lazily under another model
    lazy = summary_learning(rollsim.sweeps.scan_sweep(Path(str(tmp_path)) / "out"), DriftModel(drift_sd=0.3))
    assert isinstance(lazy, pl.LazyFrame)
    got = lazy.sort("pipeline.max_staleness").collect()
    assert got["pg_clipfrac"][0] == pytest.approx(rollsim.learning.token_stats([0.0])["pg_clipfrac"][0], rel=1e-12)
    assert got["pg_clipfrac"][1] > 0.05


def test_tradeoff_plot(tmp_path: object) -> None:
    pytest.importorskip("matplotlib")
    from pathlib import Path

    df = _tiny_sweep(learning=True)
    fig = rollsim.plot.learning_tradeoff(df, path=Path(str(tmp_path)) / "t.png")
    axes = fig.get_axes()
    assert [a.get_ylabel() for a in axes] == ["pg_clipfrac", "length_gap"]
    assert all(a.get_xlabel() == "tokens_per_s" for a in axes)
    assert [t.get_text() for t in axes[0].get_legend().get_texts()] == ["max_staleness = 0", "max_staleness = 2"]
    assert [t.get_text() for t in axes[1].get_legend().get_texts()] == ["admission_eta = 1", "admission_eta = 4"]
    # one point (an errorbar container) per configuration, at the means over seeds
    assert len(axes[0].containers) == 4
    means = df.group_by("pipeline.max_staleness", "pipeline.admission_eta", maintain_order=True).agg(
        pl.col("tokens_per_s").mean(), pl.col("pg_clipfrac").mean())
    got = sorted((float(c.lines[0].get_xdata()[0]), float(c.lines[0].get_ydata()[0])) for c in axes[0].containers)
    want = sorted(zip(means["tokens_per_s"], means["pg_clipfrac"]))
    np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12)
    labelled = rollsim.plot.learning_tradeoff(df.with_columns(pl.col("seed").alias("rollout_slots")))
    assert len(labelled.get_axes()[0].texts) == 8  # three varied fields: a label per point
    assert (Path(str(tmp_path)) / "t.png").stat().st_size > 0
    with pytest.raises(ValueError, match=r"^metrics: unknown column 'nope'"):
        rollsim.plot.learning_tradeoff(df, metrics=["nope"])
