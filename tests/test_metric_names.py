"""The metric names calibration's messages list come from FRAMEWORK_METRICS (they cannot drift from what
is read), and a wandb export's columns are read: a logger's train/ section prefix is left off when the
rest is a metric name calibration reads (Calibrated.notes says which columns), wandb's _step gives the step when
no other column does, and a prefixed column beside its unprefixed twin is refused."""

from __future__ import annotations

import polars as pl
import pytest

from rollsim import ScenarioError, calibrate, configs
from rollsim import calibration as cal_mod
from rollsim.calibration import FRAMEWORK_METRICS, normalize

EX = configs.EXAMPLES
VERL = pl.read_csv(EX / "verl_grpo_metrics.csv")


def wandb_export(m: pl.DataFrame) -> pl.DataFrame:
    """``m`` as a wandb history export with every metric in a train/ section: wandb's own columns
    added, the step counter given as _step."""
    out = m.rename({c: f"train/{c}" for c in m.columns if c != "training/global_step"})
    return out.rename({"training/global_step": "_step"}).with_columns(
        _runtime=pl.col("_step") * 100.0, _timestamp=1.7e9 + pl.col("_step") * 100.0)


def test_generic_fallback_hint_names_each_frameworks_generation_metric(monkeypatch):
    table = pl.DataFrame({"a": [1.0], "b": [2.0]})
    with pytest.raises(ScenarioError) as e:
        normalize(table)
    assert ("no column has a framework's metric names (verl timing_s/gen, AReaL timeperf/rollout, slime "
            "perf/rollout_time, OpenRLHF timing/generation)") in str(e.value)
    # the hint is read from the table of names, not retyped
    monkeypatch.setitem(FRAMEWORK_METRICS["verl"], "gen_s", [["timing_s/generate"]])
    with pytest.raises(ScenarioError) as e:
        normalize(table)
    assert "(verl timing_s/generate, AReaL timeperf/rollout," in str(e.value)


def test_another_frameworks_table_is_named_by_the_families_it_has():
    with pytest.raises(ScenarioError) as e:
        calibrate(EX / "areal_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=0)
    assert str(e.value).startswith("metrics: the table has areal metric names (timeperf/..., ppo_actor/...) but the "
                                   "config is for verl")
    assert cal_mod._families(["timing/generation", "rollout/response_length_mean", "global_step"], "openrlhf") == \
        "timing/..., rollout/..."


def test_openrlhf_not_logged_hint_is_its_rollout_metrics():
    want = [min((a[0] for a in FRAMEWORK_METRICS["openrlhf"][g]), key=len)
            for g in ("response_mean", "response_clip_ratio", "batch_samples")]
    assert want == ["rollout/response_length_mean", "rollout/truncated_rate", "rollout/num_samples"]
    assert f"its rollout statistics are {', '.join(want)}: " in cal_mod._NOT_LOGGED[("openrlhf", "response_max")]


def test_wandb_export_with_a_train_section_calibrates_as_the_plain_table():
    imp = configs.load(EX / "verl_grpo.yaml")
    w = wandb_export(VERL)
    plain = calibrate(VERL, imp, bootstrap=0)
    got = calibrate(w, imp, bootstrap=0)
    assert got.values == plain.values
    moved = ", ".join(f"train/{c} as {c}" for c in VERL.columns if c != "training/global_step")
    assert got.notes[0] == (f"metrics: read {moved} (a logger's train/ prefix left off); the step read from wandb's "
                            "_step (the step each row was logged at)")
    assert got.notes[1:] == plain.notes
    _, fw, src = normalize(w)
    assert fw == "verl"
    assert src == {"step": "_step", "step_s": "train/timing_s/step", "gen_s": "train/timing_s/gen",
                   "train_s": "train/timing_s/update_actor", "sync_s": "train/timing_s/update_weights",
                   "response_mean": "train/response_length/mean", "response_max": "train/response_length/max",
                   "response_clip_ratio": "train/response_length/clip_ratio"}


def test_wandb_step_is_not_read_when_the_table_has_a_step():
    m = VERL.with_columns(_step=pl.col("training/global_step") * 10 + 7)
    out, _, src = normalize(m)
    assert src["step"] == "training/global_step"
    assert out["step"].to_list() == [float(x) for x in VERL["training/global_step"]]


def test_prefixed_and_plain_twin_is_refused():
    m = VERL.with_columns(pl.col("timing_s/gen").alias("train/timing_s/gen"))
    with pytest.raises(ScenarioError) as e:
        normalize(m)
    assert str(e.value) == ("metrics: the columns 'train/timing_s/gen' and 'timing_s/gen' are both metric timing_s/gen "
                            "(one with a logger's train/ prefix): cannot tell which to read; drop one of them")


def test_openrlhf_train_names_are_read_as_they_are():
    m = pl.DataFrame({"train/global_step": [1, 2, 3], "train/timing/generation": [10.0, 11.0, 12.0],
                      "train/timing/ppo_train": [5.0, 5.0, 5.0], "train/rollout/response_length_mean": [100.0] * 3,
                      "response_max": [400.0] * 3})
    _, fw, src = normalize(m)
    assert fw == "openrlhf" and src["gen_s"] == "train/timing/generation" and src["step"] == "train/global_step"


def test_csv_header_comment_lines_are_skipped(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("# a run's notes, with, commas\n# more\nstep,gen_s\n0,1.5\n1,2.5\n")
    df = cal_mod.read_metrics(p)
    assert df.columns == ["step", "gen_s"] and df["gen_s"].to_list() == [1.5, 2.5]
    shipped = cal_mod.read_metrics(EX / "verl_fully_async_metrics.csv")
    assert shipped.height == 30 and (shipped["gen_s"] > shipped["step_s"]).all()  # its header says why


def test_a_misspelt_optional_metric_is_named_not_dropped_silently():
    """``timing_s/step`` is optional (the step can be the phases' sum), so a misspelt one would change the
    fit without a word: it is named, with the metric meant, in a warning and in the notes, and every other
    column not read is listed in the notes."""
    imp = configs.load(EX / "verl_grpo.yaml")
    m = VERL.rename({"timing_s/step": "timings_s/step"}).with_columns(pl.lit(1.0).alias("actor/entropy"))
    with pytest.warns(cal_mod.MetricNearMissWarning, match=r"^metrics: not read, near misses of metrics calibrate "
                      r"reads: timings_s/step \(a misspelling of timing_s/step\?\)$"):
        cal = calibrate(m, imp, bootstrap=0)
    assert cal.notes[-2:] == (
        "metrics: not read, near misses of metrics calibrate reads: timings_s/step (a misspelling of timing_s/step?)",
        "metrics: not read (no metric calibrate uses): actor/entropy")
    assert calibrate(VERL, imp, bootstrap=0).notes == ()  # every column of the example is read


def test_a_misspelt_required_metric_says_which_column_it_probably_is():
    imp = configs.load(EX / "verl_grpo.yaml")
    with pytest.raises(ScenarioError, match=r"^metrics: missing timing_s/gen \(verl metric names; generic column "
                       r"'gen_s': generation of the batch, seconds\); is 'timing_s/genn' a misspelling of 'timing_s/gen'\?; "
                       r"columns given: training/global_step, timing_s/step, timing_s/genn,"):
        calibrate(VERL.rename({"timing_s/gen": "timing_s/genn"}), imp, bootstrap=0)


def wandb_ui_export(m: pl.DataFrame, run: str = "grpo-qwen3-8b") -> pl.DataFrame:
    """``m`` as the wandb UI's chart CSV exports joined on Step: ``<run> - <metric>`` with its chart
    buckets' ``__MIN`` / ``__MAX`` beside it."""
    cols = [c for c in m.columns if c != "training/global_step"]
    out = m.select(pl.col("training/global_step").alias("Step"), *[pl.col(c).alias(f"{run} - {c}") for c in cols])
    return out.with_columns(*[(pl.col(f"{run} - {c}") * f).alias(f"{run} - {c}{e}")
                              for c in cols for e, f in (("__MIN", 0.9), ("__MAX", 1.1))])


def test_a_wandb_chart_export_is_read_as_its_metrics():
    imp = configs.load(EX / "verl_grpo.yaml")
    cal = calibrate(wandb_ui_export(VERL), imp, bootstrap=0)
    assert cal.values == calibrate(VERL, imp, bootstrap=0).values
    note = next(n for n in cal.notes if "wandb chart export" in n)
    assert note.startswith("metrics: a wandb chart export of run 'grpo-qwen3-8b': its 'grpo-qwen3-8b - ' prefix left "
                           "off, the chart's bucket extremes not read (grpo-qwen3-8b - timing_s/step__MIN, ")
    assert note.endswith(", the step read from Step")


def test_a_wandb_chart_export_of_two_runs_is_refused():
    both = pl.concat([wandb_ui_export(VERL, "a"), wandb_ui_export(VERL, "b").drop("Step")], how="horizontal")
    with pytest.raises(ScenarioError, match=r"^metrics: the table is a wandb chart export of 2 runs \('a', 'b'\): keep "
                       r"the columns of the one run to calibrate$"):
        calibrate(both, configs.load(EX / "verl_grpo.yaml"), bootstrap=0)


def test_a_metrics_csv_without_its_header_row_is_named_so(tmp_path):
    """Without a header, the first row's numbers would be taken as the column names."""
    f = tmp_path / "h.csv"
    f.write_text("10,5,100,400\n12,6,120,500\n11,5.5,110,450\n")
    with pytest.raises(ScenarioError, match=r"^metrics: h\.csv's first line is numbers \(10, 5, 100, 400\), not metric "
                       r"names: the file needs a header row naming its columns \(timing_s/gen, \.\.\. or the generic "
                       r"gen_s, \.\.\.\)$"):
        cal_mod.read_metrics(f)
