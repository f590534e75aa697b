"""rollsim.plot: figures are produced, non-empty, and show the right numbers."""

import itertools
import math

import numpy as np
import polars as pl
import pytest

matplotlib = pytest.importorskip("matplotlib")
pytest.importorskip("matplotlib.image")  # matplotlib.image.imread below
from matplotlib.collections import PolyCollection  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.image import AxesImage  # noqa: E402

import rollsim  # noqa: E402
from rollsim import Scenario, plot, simulate  # noqa: E402
from rollsim.simulation import CHAPTER_PIPELINES  # noqa: E402

CHAPTER = Scenario(rng="python")


@pytest.fixture(scope="module")
def four():
    return {name: simulate(CHAPTER.replace(pipeline=p)) for name, p in CHAPTER_PIPELINES}


@pytest.fixture(scope="module")
def sweep():
    """A small sweep frame of the shape rollsim.sweep returns: varied fields, seed, summary metrics."""
    base = Scenario(horizon_s=1800, rollout_slots=32, batch_size=64)
    rows = []
    for cap, slots, seed in itertools.product([0, 1, None], [16, 32], [0, 1, 2]):
        sc = base.replace(seed=seed, rollout_slots=slots, **{"pipeline.max_staleness": cap})
        s = simulate(sc, record="summary").summary
        rows.append({"pipeline.max_staleness": cap, "rollout_slots": slots, "seed": seed} | s)
    return pl.DataFrame(rows)


def assert_png(path, min_kb=5):
    assert path.exists() and path.stat().st_size > min_kb * 1024
    img = matplotlib.image.imread(str(path))
    rgb = img[..., :3]
    drawn = (np.abs(rgb - 1.0).sum(axis=-1) > 0.1).mean()   # not white
    assert drawn > 0.03, f"only {drawn:.1%} of the pixels are drawn"
    return img


def bars(ax):
    return [c for c in ax.containers if isinstance(c, BarContainer)]


# ------------------------------------------------------------------------------------------------
# staleness by length


def test_staleness_by_length_four_pipelines(four, tmp_path):
    fig = plot.staleness_by_length(four, path=tmp_path / "s.png")
    assert isinstance(fig, Figure)
    ax, tw = fig.axes
    assert len(bars(ax)) == 4 and all(len(b) == 6 for b in bars(ax))
    # only the capped pipeline drops samples: one drop-rate line on the twin axis
    assert [line.get_label() for line in tw.get_lines()] == ["fully async, cap 2 drop rate"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["<1K", "1K–2K", "2K–4K", "4K–8K", "8K–16K", "≥16K"]
    assert ax.get_ylabel().startswith("mean staleness") and "drop rate" in tw.get_ylabel()
    # the bars show Result.staleness_by_length; the chapter's finding: long answers are staler
    fa = [r.get_height() for r in bars(ax)[2]]
    expected = four["fully async"].staleness_by_length()["staleness_mean"].to_list()
    assert fa == pytest.approx(expected)
    assert fa[-1] > 2 > fa[0] * 4
    drop = tw.get_lines()[0].get_ydata()
    assert drop[0] == 0 and drop[-1] > 0.5
    assert_png(tmp_path / "s.png")


def test_staleness_by_length_one_result_or_frame(four, tmp_path):
    res = four["fully async"]
    fig = plot.staleness_by_length(res, edges=(2000, 8000))
    assert len(bars(fig.axes[0])) == 1 and len(bars(fig.axes[0])[0]) == 3
    assert any("no samples dropped" in t.get_text() for t in fig.axes[1].texts)
    fig2 = plot.staleness_by_length({"a": res.samples, "b": four["synchronous"].samples}, path=tmp_path / "s.svg")
    assert len(bars(fig2.axes[0])) == 2
    assert (tmp_path / "s.svg").stat().st_size > 10_000
    # an empty length bin is a gap, not an error
    fig3 = plot.staleness_by_length(res, edges=(1000, 16000, 1e9))
    assert math.isnan(bars(fig3.axes[0])[0][-1].get_height())


def test_staleness_by_length_into_given_axes(four):
    fig = Figure()
    ax = fig.add_subplot(121)
    assert plot.staleness_by_length(four["synchronous"], ax=ax) is fig
    assert len(bars(ax)) == 1


@pytest.mark.parametrize("bad, field", [
    (dict(results=42), "results"),
    (dict(results=[]), "results"),
    (dict(results={}), "results"),
    (dict(results=pl.DataFrame({"a": [1]})), "results"),
    (dict(edges=(2000, 1000)), "edges"),
    (dict(edges=()), "edges"),
    (dict(edges=(1000, float("nan"))), "edges"),
    (dict(path="fig.jpg"), "path"),
    (dict(ax="not an axes"), "ax"),
])
def test_staleness_by_length_bad_input(four, bad, field, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    kw = {"results": four["fully async"]} | bad
    with pytest.raises(ValueError, match=f"^{field}:"):
        plot.staleness_by_length(**kw)


def test_summary_only_result_is_refused():
    res = simulate(Scenario(horizon_s=600), record="summary")
    with pytest.raises(ValueError, match="^results: .*record='samples'"):
        plot.staleness_by_length(res)
    with pytest.raises(ValueError, match="^result:"):
        plot.slot_timeline(res)


# ------------------------------------------------------------------------------------------------
# slot timeline and utilization


def test_slot_timeline_samples_big_pools(four, tmp_path):
    res = four["fully async, cap 2"]
    fig = plot.slot_timeline(res, max_slots=16, path=tmp_path / "t.png")
    ax = fig.axes[0]
    colls = [c for c in ax.collections if isinstance(c, PolyCollection)]
    shown = 16
    dropped_slots = res.samples.filter(pl.col("dropped") & pl.col("slot").is_in(
        np.linspace(0, 255, shown).round().astype(int).tolist()))["slot"].n_unique()
    assert len(colls) == shown + dropped_slots
    assert "16 of 256 shown" in ax.get_ylabel()
    assert fig.axes[1].get_ylabel() == "policy version at start"    # the colorbar
    assert ax.get_legend().get_texts()[0].get_text().startswith("dropped")
    img = assert_png(tmp_path / "t.png", min_kb=20)
    assert img.shape[1] > 800
    # bars cover the busy time of the shown slots (fully async: every slot always busy)
    total = sum(path.get_extents().width for c in colls[:shown] for path in c.get_paths())
    assert total == pytest.approx(shown * res.summary["end_s"] / 60, rel=0.01)


def test_slot_timeline_window_small_pool_and_svg(tmp_path):
    res = simulate(Scenario(rollout_slots=8, batch_size=16, horizon_s=1200, pipeline=rollsim.Synchronous()))
    fig = plot.slot_timeline(res, time_range_s=(100, 500), path=tmp_path / "t.svg")
    ax = fig.axes[0]
    assert ax.get_xlim() == pytest.approx((100, 500))             # seconds for short windows
    assert ax.get_xlabel() == "simulated time (s)"
    assert "shown" not in ax.get_ylabel()
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 8
    assert tmp_path.joinpath("t.svg").read_text().count("<image") >= 1   # rasterized bars


@pytest.mark.parametrize("bad, field", [
    (dict(max_slots=0), "max_slots"),
    (dict(max_slots=2.5), "max_slots"),
    (dict(time_range_s=(5, 1)), "time_range_s"),
    (dict(time_range_s="abc"), "time_range_s"),
    (dict(rollout_slots=0), "rollout_slots"),
])
def test_slot_timeline_bad_input(four, bad, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        plot.slot_timeline(four["synchronous"], **bad)


def test_slot_timeline_refuses_several_runs(four):
    with pytest.raises(ValueError, match="^result: must be one run"):
        plot.slot_timeline(four)


@pytest.mark.parametrize("name", [n for n, _ in CHAPTER_PIPELINES])
def test_utilization_frame_matches_summary(four, name):
    res = four[name]
    u = plot.utilization_frame(res.samples, rollout_slots=256, end_s=res.summary["end_s"], bin_s=60.0)
    w = (u["end_s"] - u["start_s"]).to_numpy()
    assert u["end_s"][-1] == res.summary["end_s"]
    assert (u["utilization"].to_numpy() * w).sum() / w.sum() == pytest.approx(
        res.summary["rollout_utilization"], rel=1e-9)
    assert u["utilization"].min() >= 0 and u["utilization"].max() <= 1


def test_utilization_frame_brute_force():
    samples = pl.DataFrame({"start_s": [0.0, 1.0, 2.5, 7.0], "finish_s": [3.0, 1.5, None, 8.0]})
    u = plot.utilization_frame(samples, rollout_slots=2, end_s=9.0, bin_s=2.0)
    # busy seconds per bin [0,2) [2,4) [4,6) [6,8) [8,9): 2.5, 1+1.5, 2, 2+1, 1
    assert u["utilization"].to_list() == pytest.approx([2.5 / 4, 2.5 / 4, 2 / 4, 3 / 4, 1 / 2])
    with pytest.raises(ValueError, match="^bin_s:"):
        plot.utilization_frame(samples, rollout_slots=2, end_s=9.0, bin_s=0)
    with pytest.raises(ValueError, match="^end_s:"):
        plot.utilization_frame(samples, rollout_slots=2, end_s=float("inf"), bin_s=1)
    with pytest.raises(ValueError, match="^samples:"):
        plot.utilization_frame(pl.DataFrame({"x": [1]}), rollout_slots=2, end_s=9.0, bin_s=1)


def test_utilization_plot(four, tmp_path):
    fig = plot.utilization(four, path=tmp_path / "u.png")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["synchronous: 30% overall", "one-step async: 33% overall", "fully async: 100% overall",
                      "fully async, cap 2: 100% overall (on fully async's line)"]
    assert len(ax.patches) == 4          # one StepPatch per run
    assert_png(tmp_path / "u.png")
    fig2 = plot.utilization(four["synchronous"], bin_s=600)
    assert "600 s bin" in fig2.axes[0].get_ylabel()
    with pytest.raises(ValueError, match="^bin_s:"):
        plot.utilization(four["synchronous"], bin_s=-1)


# ------------------------------------------------------------------------------------------------
# step breakdown


def test_step_breakdown_frame(four):
    df = plot.step_breakdown_frame(four)
    assert df["run"].to_list() == [n for n, _ in CHAPTER_PIPELINES]
    assert df["steps"].to_list() == [11, 12, 34, 33]
    assert df["train_s"].to_list() == pytest.approx([60.0] * 4)
    assert df["sync_s"].to_list() == [0.0] * 4
    sync = df.row(0, named=True)
    assert sync["generation_s"] == pytest.approx(sync["wait_s"])      # synchronous: the trainer waits for generation
    st = four["synchronous"].steps.filter(pl.col("completed"))
    assert sync["cycle_s"] == pytest.approx(float((st["end_s"] - st["start_s"] + st["wait_s"]).mean()))
    fully = df.row(2, named=True)
    assert fully["generation_s"] > fully["cycle_s"]                   # generation overlaps several steps
    # steps frames alone: no generation span, sync unknown
    bare = plot.step_breakdown_frame({k: v.steps for k, v in four.items()})
    assert bare["generation_s"].null_count() == 4 and bare["sync_s"].null_count() == 4
    assert bare["train_s"].to_list() == pytest.approx([60.0] * 4)


def test_step_breakdown_with_weight_sync(tmp_path):
    res = simulate(Scenario(horizon_s=3600, weight_sync_s=15.0, pipeline=rollsim.OneStepAsync()))
    df = plot.step_breakdown_frame(res)
    assert df["sync_s"].to_list() == [15.0] and df["train_s"].to_list() == pytest.approx([60.0])
    fig = plot.step_breakdown({"one-step": res}, path=tmp_path / "b.png")
    ax = fig.axes[0]
    assert len(bars(ax)) == 4      # wait, training, sync, generation
    assert [t.get_text() for t in ax.get_legend().get_texts()][:3] == [
        "trainer waits for a batch", "training", "weight sync"]
    assert_png(tmp_path / "b.png")
    assert plot.step_breakdown_frame(res.steps, weight_sync_s=15.0)["sync_s"].to_list() == [15.0]
    with pytest.raises(ValueError, match="^weight_sync_s:"):
        plot.step_breakdown(res, weight_sync_s=-1.0)


def test_step_breakdown_plot(four, tmp_path):
    fig = plot.step_breakdown(four, path=tmp_path / "b.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [n for n, _ in CHAPTER_PIPELINES]
    assert len(bars(ax)) == 3          # wait, training, generation (no sync: 0 s)
    assert sum("s/step" in t.get_text() for t in ax.texts) == 4
    assert_png(tmp_path / "b.png")
    bare = plot.step_breakdown(four["synchronous"].steps)
    assert [t.get_text() for t in bare.axes[0].get_legend().get_texts()] == [
        "trainer waits for a batch", "training (incl. weight sync)"]


# ------------------------------------------------------------------------------------------------
# sweeps


def test_sweep_fields_and_metrics(sweep):
    assert plot.sweep_fields(sweep) == ["pipeline.max_staleness", "rollout_slots"]
    m = plot.sweep_metrics(sweep)
    assert {"steps", "staleness_mean", "rollout_utilization", "drop_fraction"} <= set(m)
    assert "seed" not in m and "rollout_slots" not in m


def test_sweep_stats(sweep):
    s = plot.sweep_stats(sweep, "steps", ["rollout_slots", "pipeline.max_staleness"])
    assert s.height == 6 and s["n"].to_list() == [3] * 6
    assert s["pipeline.max_staleness"].to_list() == [0, 1, None] * 2       # nulls (no cap) last
    for r in s.iter_rows(named=True):
        vals = sweep.filter((pl.col("rollout_slots") == r["rollout_slots"]) & (
            pl.col("pipeline.max_staleness").is_null() if r["pipeline.max_staleness"] is None
            else pl.col("pipeline.max_staleness") == r["pipeline.max_staleness"]))["steps"].to_numpy()
        assert r["mean"] == pytest.approx(vals.mean())
        half = 4.302653 * vals.std(ddof=1) / math.sqrt(3)                 # t(0.975, 2)
        assert r["ci_high"] - r["mean"] == pytest.approx(half, abs=1e-6)


@pytest.mark.parametrize("p, dof, q", [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 10, 2.2281),
                                       (0.95, 5, 2.0150), (0.995, 30, 2.7500), (0.975, 200, 1.9719),
                                       (0.975, 500, 1.9647)])
def test_t_quantile(p, dof, q):
    # one Student-t implementation (rollsim.sweeps.stats) serves the plots and aggregate; t-table values
    from rollsim.sweeps.stats import t_quantile

    assert t_quantile(p, dof) == pytest.approx(q, abs=1e-4)


def test_sweep_stats_is_aggregate():
    # 201 seeds: the interval uses t(0.975, 200) = 1.9719, not the normal 1.9600 (they once disagreed)
    vals = np.arange(201, dtype=float) ** 1.5
    frame = pl.DataFrame({"rollout_slots": [64] * 201, "seed": list(range(201)), "steps": vals})
    r = plot.sweep_stats(frame, "steps", ["rollout_slots"]).row(0, named=True)
    a = rollsim.aggregate(frame, ["steps"]).row(0, named=True)
    assert (r["n"], r["mean"], r["ci_low"], r["ci_high"]) == (201, a["steps_mean"], a["steps_ci_low"], a["steps_ci_high"])
    assert (r["ci_high"] - r["mean"]) / (vals.std(ddof=1) / math.sqrt(201)) == pytest.approx(1.97190, abs=1e-4)


def test_sweep_heatmap(sweep, tmp_path):
    fig = plot.sweep_heatmap(sweep, "steps", "pipeline.max_staleness", "rollout_slots", path=tmp_path / "h.png")
    ax = fig.axes[0]
    (im,) = [a for a in ax.get_images() if isinstance(a, AxesImage)]
    grid = im.get_array()
    assert grid.shape == (2, 3)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "none"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["16", "32"]
    expected = sweep.filter((pl.col("rollout_slots") == 32) & pl.col("pipeline.max_staleness").is_null())["steps"].mean()
    assert grid[1, 2] == pytest.approx(expected)
    assert len(ax.texts) == 6
    assert "mean of 3 seeds" in fig.axes[1].get_ylabel()
    assert_png(tmp_path / "h.png")


def test_sweep_heatmap_missing_cells_are_blank(sweep):
    part = sweep.filter(~((pl.col("rollout_slots") == 16) & (pl.col("pipeline.max_staleness") == 0)))
    fig = plot.sweep_heatmap(part, "drop_fraction", "pipeline.max_staleness", "rollout_slots", annotate=False)
    grid = fig.axes[0].get_images()[0].get_array()
    assert np.ma.is_masked(grid[0, 0]) or math.isnan(grid[0, 0])
    assert not fig.axes[0].texts


def test_sweep_lines(sweep, tmp_path):
    fig = plot.sweep_lines(sweep, "staleness_mean", "pipeline.max_staleness", hue="rollout_slots",
                           path=tmp_path / "l.png")
    ax = fig.axes[0]
    assert len(ax.get_lines()) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["rollout_slots = 16", "rollout_slots = 32"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0", "1", "none"]     # categorical: has "none"
    assert "95% CI over 3 seeds" in ax.get_ylabel()
    assert_png(tmp_path / "l.png")
    one = sweep.filter(pl.col("pipeline.max_staleness") == 1)
    fig2 = plot.sweep_lines(one, "steps", "rollout_slots", ci=0.9, logx=True)
    ax2 = fig2.axes[0]
    assert ax2.get_xscale() == "log"
    assert list(ax2.get_lines()[0].get_xdata()) == [16, 32]                    # numeric: placed by value
    single = one.filter(pl.col("seed") == 0)
    fig3 = plot.sweep_lines(single, "steps", "rollout_slots")
    assert not fig3.axes[0].collections                                          # one seed: no band


@pytest.mark.parametrize("call, field", [
    (lambda f: plot.sweep_heatmap(f, "nope", "rollout_slots", "pipeline.max_staleness"), "metric"),
    (lambda f: plot.sweep_heatmap(f, "steps", "nope", "pipeline.max_staleness"), "x"),
    (lambda f: plot.sweep_heatmap(f, "steps", "rollout_slots", "nope"), "y"),
    (lambda f: plot.sweep_heatmap(f, "steps", "rollout_slots", "rollout_slots"), "y"),
    (lambda f: plot.sweep_heatmap(f, "steps", "rollout_slots", "pipeline.max_staleness", cmap="nope"), "cmap"),
    (lambda f: plot.sweep_heatmap(f.head(0), "steps", "rollout_slots", "pipeline.max_staleness"), "frame"),
    (lambda f: plot.sweep_heatmap(f.to_dicts(), "steps", "a", "b"), "frame"),
    (lambda f: plot.sweep_lines(f, "steps", "rollout_slots"), "frame"),      # max_staleness varies too
    (lambda f: plot.sweep_lines(f, "steps", "rollout_slots", hue="pipeline.max_staleness", ci=1.0), "ci"),
    (lambda f: plot.sweep_lines(f, "steps", "rollout_slots", hue="rollout_slots"), "hue"),
    (lambda f: plot.sweep_lines(f, "steps", "rollout_slots", hue="nope"), "hue"),
    (lambda f: plot.sweep_lines(f.with_columns(pl.lit("a").alias("s")), "s", "rollout_slots",
                                hue="pipeline.max_staleness"), "metric"),
    (lambda f: plot.sweep_lines(f, 3, "rollout_slots", hue="pipeline.max_staleness"), "metric"),
])
def test_sweep_bad_input(sweep, call, field):
    with pytest.raises(ValueError, match=f"^{field}:"):
        call(sweep)


def test_save_formats(four, tmp_path):
    fig = plot.utilization(four["fully async"])
    for ext in ("png", "svg", "pdf"):
        plot.save(fig, tmp_path / "sub" / f"u.{ext}")
        assert (tmp_path / "sub" / f"u.{ext}").stat().st_size > 2000
    with pytest.raises(ValueError, match="^path:"):
        plot.save(fig, tmp_path / "u.gif")


def test_plot_module_does_not_import_pyplot():
    import subprocess
    import sys

    code = ("import sys, rollsim, rollsim.plot, rollsim.report; assert 'matplotlib' not in sys.modules; "
            "from rollsim import plot, Scenario, simulate; plot.utilization(simulate(Scenario(horizon_s=600))); "
            "assert 'matplotlib.pyplot' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_step_breakdown_with_logprob_recompute(tmp_path):
    """``logprob_s_per_token`` adds a log-prob recompute phase to every step: the step lasts as long
    as with the same total per-token cost, and the breakdown reports the phase apart
    (rate x mean tokens per step)."""
    base = Scenario(horizon_s=3600, train_step_s=10.0, train_s_per_token=2e-5, pipeline=rollsim.OneStepAsync())
    res = simulate(base.replace(logprob_s_per_token=1e-5))
    same = simulate(base.replace(train_s_per_token=3e-5))
    assert res.steps.equals(same.steps)
    df = plot.step_breakdown_frame(res)
    st = res.steps.filter(pl.col("completed"))
    tokens = float(st["tokens"].mean())
    assert df["logprob_s"].to_list() == pytest.approx([1e-5 * tokens])
    assert df["train_s"].to_list() == pytest.approx([10.0 + 2e-5 * tokens])
    assert plot.step_breakdown_frame(res.steps)["logprob_s"].to_list() == [None]  # no scenario: unknown
    fig = plot.step_breakdown(res, path=tmp_path / "l.png")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels[:3] == ["trainer waits for a batch", "log-prob recompute", "training"]
    d = base.replace(logprob_s_per_token=1e-5).describe()
    assert d["train_s_per_token"] == 2e-5 and d["logprob_s_per_token"] == 1e-5


def test_sweep_stats_refuses_runs_of_different_scenarios_under_one_label():
    # two sweeps with other base scenarios in one directory: same varied field and seed, other scenario_key
    frame = pl.DataFrame({"rollout_slots": [64, 64], "scenario_key": ["a", "b"], "seed": [0, 0], "steps": [3, 9]})
    with pytest.raises(rollsim.ScenarioError, match=r"^frame: holds runs of several scenarios for the same "
                                                   r"\['rollout_slots'\] and seed"):
        plot.sweep_stats(frame, "steps", ["rollout_slots"])
    one = frame.filter(pl.col("scenario_key") == "a")
    assert plot.sweep_stats(one, "steps", ["rollout_slots"])["mean"].to_list() == [3.0]
