"""What rollsim.calibrate takes in: metrics with missing values (rows left out with a warning and a note,
never filled in), a rollsim.hardware.Deployment as the base, OpenRLHF's metric names, the AReaL and slime
example metrics end to end, and `rollsim import --toml` keeping the notes."""

from __future__ import annotations

import io
import json
import math
import runpy
import warnings
from pathlib import Path

import polars as pl
import pytest

import rollsim
from rollsim import LogNormal, MetricsRowsSkippedWarning, Scenario, ScenarioError, Synchronous, configs
from rollsim.calibration import calibrate, normalize, synthetic_metrics
from rollsim.cli import main
from rollsim.hardware import Deployment
from rollsim.what_if import whatif

EX = configs.EXAMPLES
ROOT = Path(__file__).resolve().parent.parent
VERL_CSV = EX / "verl_grpo_metrics.csv"


# ---------------------------------------------------------------------------------------- missing values


def test_a_null_in_a_framework_metric_leaves_its_row_out():
    # it was read as 0 s (np.nan_to_num), moving the fit: decode 45 -> 39.7 tokens/s, overhead 25 -> 6.7 s
    imp = configs.load(EX / "verl_grpo.yaml")
    df = pl.read_csv(VERL_CSV)
    holed = df.with_columns(pl.when(pl.col("training/global_step") == 5).then(None).otherwise(pl.col("timing_s/gen"))
                            .alias("timing_s/gen"))
    with pytest.warns(MetricsRowsSkippedWarning) as rec:
        cal = calibrate(holed, imp, bootstrap=0)
    note = "metrics: left out 1 of 40 rows with a missing value (null or NaN): timing_s/gen at step 5"
    assert [str(w.message) for w in rec] == [note]
    assert cal.notes[0] == note and cal.metrics.height == 39 and 5.0 not in cal.metrics["step"].to_list()
    without = calibrate(df.filter(pl.col("training/global_step") != 5), imp, bootstrap=0)
    assert cal.values == without.values
    assert cal.values["decode_tokens_per_s"] == pytest.approx(45.0, rel=0.05)   # the example's true speed
    assert cal.values["gen_overhead_s"] == pytest.approx(25.0, rel=0.2)


def test_nan_in_a_generic_column_and_an_empty_column():
    sc = Scenario(rollout_slots=256, batch_size=256, group_size=8, pipeline=Synchronous(), decode_tokens_per_s=40.0,
                  rollout_pause_s=10.0, train_step_s=20.0, train_s_per_token=2e-5, weight_sync_s=3.0,
                  lengths=LogNormal(mu=6.0, sigma=0.6, max_tokens=4096))
    m = synthetic_metrics(sc, 10, drift=0.02, noise=0.01, seed=2)
    holed = m.with_columns(pl.when(pl.col("step").is_in([3, 7])).then(float("nan")).otherwise(pl.col("gen_s"))
                           .alias("gen_s"),
                           pl.when(pl.col("step") == 7).then(None).otherwise(pl.col("response_max")).alias("response_max"),
                           pl.lit(None, dtype=pl.Float64).alias("logprob_s"))
    with pytest.warns(MetricsRowsSkippedWarning) as rec:
        norm, fw, src = normalize(holed)
    assert [str(w.message) for w in rec] == [
        "metrics: logprob_s has no value in any row: taken as not logged",
        "metrics: left out 2 of 10 rows with a missing value (null or NaN): gen_s at step 3, step 7; response_max at "
        "step 7"]
    assert norm["step"].to_list() == [0.0, 1.0, 2.0, 4.0, 5.0, 6.0, 8.0, 9.0] and "logprob_s" not in norm.columns
    with pytest.warns(MetricsRowsSkippedWarning):
        cal = calibrate(holed, sc, bootstrap=0)
    assert len(cal.notes) == 2 and cal.values == calibrate(m.filter(~pl.col("step").is_in([3, 7])), sc,
                                                           bootstrap=0).values


def test_cli_says_which_rows_it_left_out(tmp_path, capsys):
    df = pl.read_csv(VERL_CSV)
    path = tmp_path / "m.csv"
    df.with_columns(pl.when(pl.col("training/global_step") == 2).then(None).otherwise(pl.col("response_length/max"))
                    .alias("response_length/max")).write_csv(path)
    assert main(["calibrate", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(path), "--bootstrap", "0"]) == 0
    cap = capsys.readouterr()
    said = "metrics: left out 1 of 40 rows with a missing value (null or NaN): response_length/max at step 2"
    assert cap.err == f"rollsim: note: {said}\n"              # once (the warning is the note)
    assert cap.out.startswith("rollsim calibrate: 39 steps (verl metric names)")


# ---------------------------------------------------------------------------------------- a Deployment base

TRUE_DEP = dict(decode_tokens_per_s=40.0, rollout_pause_s=8.0, train_step_s=20.0, train_s_per_token=3e-5,
                weight_sync_s=4.0)


@pytest.fixture(scope="module")
def deployed():
    dep = Deployment("qwen3-4b", "h100", rollout_gpus=8, train_gpus=8, max_num_seqs=32)
    true = Scenario(batch_size=256, group_size=8, rollout_slots=256, pipeline=Synchronous(),
                    lengths=LogNormal(mu=6.0, sigma=0.6, max_tokens=4096), **TRUE_DEP)
    m = synthetic_metrics(true, 16, drift=0.03, noise=0.01, seed=1)
    cal = calibrate(m, dep, prompts_per_step=32, group_size=8, max_response_tokens=4096, pipeline="sync", bootstrap=20)
    return dep, true, m, cal


def test_deployment_base_calibrates_and_predicts_a_gpu_split(deployed):
    dep, true, m, cal = deployed
    assert cal.base is dep and cal.scenario.rollout_slots == 256 and cal.scenario.batch_size == 256
    assert cal.scenario.decode_throughput_table is None      # the fit's speed, not the hardware model's
    assert (cal.layout.rollout_gpus, cal.layout.train_gpus, cal.layout.slots_per_engine) == (8, 8, 32)
    assert cal.hardware["model"].name == "Qwen3-4B" and cal.hardware["gpu"].name == "H100"
    assert cal.notes == ("prompt_tokens = 0 (assumed; pass prompt_tokens=)",
                         "base: Deployment('Qwen3-4B', 'H100', 8 rollout GPUs x TP1, 8 training GPUs): rollout_slots = "
                         "256 (8 instances x 32); its hardware-model decode and training speeds are not used (the fit "
                         "on the run's metrics replaces them); its model and accelerator rescale the training cost of "
                         "a GPU-split variant")
    assert cal.values["decode_tokens_per_s"] == pytest.approx(40.0, rel=0.1)
    assert cal.values["weight_sync_s"] == pytest.approx(4.0, rel=0.05)
    df = whatif(cal, [{"rollout_gpus": 4, "pipeline": "one-step"}, {"train_gpus": 4}], draws=2)
    assert abs(df["error"][0]) < 0.05
    assert df["rollout_slots"].to_list() == [256, 128, 256]  # the slots follow the deployment's rollout GPUs
    assert df["train_gpus"].to_list() == [8, 8, 4]
    assert df["train_scaling"][2] == "hardware"              # the deployment's model and GPU rescale the training
    assert df["train_scale"][2] > 1.0 and df["step_s"][2] > df["step_s"][0]


def test_deployment_base_infers_the_batch_and_limit_from_the_metrics():
    dep = Deployment("qwen3-4b", "h100", rollout_gpus=4, train_gpus=4, max_num_seqs=64)
    true = Scenario(batch_size=256, group_size=4, rollout_slots=256, pipeline=Synchronous(),
                    lengths=LogNormal(mu=6.5, sigma=0.6, max_tokens=2048), **TRUE_DEP)
    m = synthetic_metrics(true, 8, noise=0.01, seed=4).with_columns(batch_samples=pl.lit(256.0))
    assert m["response_clip_ratio"].max() > 0  # answers cut at the limit: the limit is read from them
    cal = calibrate(m, dep, group_size=4, bootstrap=0)
    assert cal.scenario.batch_size == 256 and cal.scenario.lengths.max_tokens == 2048
    assert isinstance(cal.scenario.pipeline, rollsim.FullyAsync)  # the deployment's default, noted
    assert cal.notes[:3] == ("prompts_per_step = 64 (inferred: the median batch_samples, 256 samples, over group_size 4)",
                             "max_response_tokens = 2048 (inferred: the longest answer of the steps that cut answers "
                             "at the limit)", "prompt_tokens = 0 (assumed; pass prompt_tokens=)")
    assert cal.notes[3] == "pipeline = FullyAsync() (the deployment's default: rollout and training on separate GPUs; " \
                           "pass pipeline=)"


# ---------------------------------------------------------------------------------------- OpenRLHF names

OPENRLHF = {"step": "train/global_step", "step_s": "train/timing/step_total", "gen_s": "train/timing/generation",
            "train_s": "train/timing/ppo_train", "sync_s": "train/timing/broadcast",
            "response_mean": "train/rollout/response_length_mean", "response_clip_ratio": "train/rollout/truncated_rate"}


def test_openrlhf_names_end_to_end():
    imp = configs.load(EX / "openrlhf_ppo.sh")
    true = imp.scenario.replace(decode_tokens_per_s=50.0, rollout_pause_s=10.0, train_step_s=30.0,
                                train_s_per_token=4e-5, weight_sync_s=3.0, **{"lengths.mu": 6.0, "lengths.sigma": 0.6})
    m = synthetic_metrics(true, 16, drift=0.03, noise=0.01, seed=5)
    m = m.with_columns(step_s=pl.max_horizontal("gen_s", pl.col("train_s") + pl.col("sync_s")))  # async: overlapped
    logged = m.rename(OPENRLHF).with_columns(**{"train/timing/make_experience": pl.lit(0.0),
                                                "train/rollout/num_samples": pl.lit(float(true.batch_size))})
    with pytest.raises(ScenarioError, match=r"^metrics: missing response_max \(openrlhf metric names; .*OpenRLHF logs "
                                            r"no longest answer per step"):
        calibrate(logged.drop("response_max"), imp)
    norm, fw, src = normalize(logged)
    assert fw == "openrlhf" and src["gen_s"] == "train/timing/generation"
    assert src["train_s"] == "train/timing/ppo_train + train/timing/make_experience"
    assert src["batch_samples"] == "train/rollout/num_samples" and src["response_max"] == "response_max"
    # the log line's own names (no train/ prefix) too
    bare = logged.rename({c: c.removeprefix("train/") for c in logged.columns})
    assert normalize(bare)[2] == {k: v.replace("train/", "") for k, v in src.items()}
    cal = calibrate(logged, imp, bootstrap=10)
    assert cal.framework == "openrlhf"
    assert cal.values["decode_tokens_per_s"] == pytest.approx(50.0, rel=0.1)
    assert abs(whatif(cal, [], draws=0)["error"][0]) < 0.06


# ---------------------------------------------------------------------------------------- AReaL and slime examples

AREAL_CFG, AREAL_CSV = EX / "areal_grpo.yaml", EX / "areal_grpo_metrics.csv"
SLIME_CFG, SLIME_CSV = EX / "slime_async.sh", EX / "slime_async_metrics.csv"


def test_example_metrics_are_what_the_script_writes(tmp_path):
    runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")["main"](tmp_path)
    for name in ("areal_grpo_metrics.csv", "slime_async_metrics.csv"):
        assert (tmp_path / name).read_text() == (EX / name).read_text()


def test_areal_example_end_to_end():
    """The metrics are of the config as it ships (asynchronous, max_head_offpolicyness 2): timeperf/rollout
    is the trainer's wait, and the decode speed is fitted on the rows the rollout paced."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")
    imp = configs.load(AREAL_CFG)
    assert imp.scenario.pipeline.admission_eta == 2
    cal = calibrate(AREAL_CSV, imp, bootstrap=20)
    assert cal.framework == "areal"
    assert len(cal.notes) == 1 and cal.notes[0].startswith("gen_s: timeperf/rollout of an asynchronous AReaL run")
    assert cal.notes[0].endswith("the rollout paced 23 of 24 rows")
    src = dict(zip(cal.params["name"], cal.params["source"]))
    assert src["decode_tokens_per_s"] == "timeperf/rollout" and src["train_s_per_token"] == "timeperf/train_step"
    assert src["lengths.mu"].startswith("ppo_actor/seq_len/avg - ppo_actor/prompt_len/avg, ")
    assert src["weight_sync_s"] == "timeperf/update_weights"
    true, v = gen["TRUE"]["areal"], cal.values
    assert v["decode_tokens_per_s"] == pytest.approx(true["decode_tokens_per_s"], rel=0.06)  # 19.05 for 20
    assert v["train_s_per_token"] == pytest.approx(true["train_s_per_token"], rel=0.06)
    assert v["weight_sync_s"] == pytest.approx(true["weight_sync_s"], rel=0.01)
    assert v["lengths.mu"] + v["lengths.drift"] * 11.5 == pytest.approx(true["lengths.mu"] + 0.02 * 11.5, abs=0.05)
    # the trained batches' answers are the ones that finished between updates (interrupted answers are
    # resubmitted): their longest answers understate the spread, sigma 0.61 for 0.7
    assert 0.8 * true["lengths.sigma"] < v["lengths.sigma"] < 0.9 * true["lengths.sigma"]
    df = whatif(cal, [{"pipeline": "sync"}, {"pipeline": "fully-async", "max_staleness": 4}], draws=2)
    assert abs(df["error"][0]) < 0.05
    assert df["step_s"][1] > 3 * df["step_s"][0]  # synchronous waits for each batch's longest answer
    assert df["step_s"][2] < df["step_s"][0]      # a looser staleness cap waits less


def test_slime_example_end_to_end():
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")
    cal = calibrate(SLIME_CSV, configs.load(SLIME_CFG), bootstrap=20)
    assert cal.framework == "slime"
    src = dict(zip(cal.params["name"], cal.params["source"]))
    assert src["decode_tokens_per_s"] == "perf/rollout_time" and src["weight_sync_s"] == "perf/update_weights_time"
    assert src["lengths.sigma"] == "rollout/response_len/mean, rollout/response_len/max, rollout/truncated_ratio"
    true = gen["TRUE"]["slime"]
    assert cal.values["decode_tokens_per_s"] == pytest.approx(true["decode_tokens_per_s"], rel=0.1)
    assert cal.values["lengths.sigma"] == pytest.approx(true["lengths.sigma"], rel=0.05)
    df = whatif(cal, [{"pipeline": "sync"}], draws=0)
    assert abs(df["error"][0]) < 0.05
    assert df["step_s"][1] > df["step_s"][0]           # synchronous is slower than the overlapped baseline


@pytest.mark.parametrize("cfg, csv, extra, names", [
    (AREAL_CFG, AREAL_CSV, [], "areal"), (SLIME_CFG, SLIME_CSV, [], "slime")])
def test_examples_from_the_command_line(cfg, csv, extra, names, capsys):
    base = ["--config", str(cfg), *extra, "--metrics", str(csv), "--bootstrap", "5"]
    assert main(["calibrate", *base]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"rollsim calibrate: 24 steps ({names} metric names); step time predicted vs measured: ")
    assert main(["calibrate", *base, "--format", "json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["decode_tokens_per_s"]["source"] == ("timeperf/rollout" if names == "areal" else "perf/rollout_time")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.GenerationOutrunsTrainingWarning)  # the uncapped fully async row
        assert main(["whatif", *base, "--pipeline", "sync,fully-async", "--draws", "0", "--format", "csv"]) == 0
    df = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert df["variant"].to_list() == ["baseline", "sync", "fully-async"]
    assert abs(df["error"][0]) < 0.05 and math.isfinite(df["step_s"][2])


# ---------------------------------------------------------------------------------------- import --toml


@pytest.mark.parametrize("name", ["verl_grpo.yaml", "areal_grpo.yaml", "slime_async.sh", "openrlhf_ppo.sh"])
def test_import_toml_keeps_the_notes_as_comments(name, tmp_path, capsys):
    imp = configs.load(EX / name)
    assert main(["import", str(EX / name), "--toml"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == f"# rollsim import: {imp.framework} config {imp.source}; its import notes (kind  option = value -> became):"
    n = len(imp.notes)
    assert lines[1:n + 1] == ["# " + line for line in imp.notes_table().splitlines()]
    assert "".join(f"{line}\n" for line in lines[n + 1:]) == imp.scenario.to_toml()  # then the scenario, unchanged
    (tmp_path / "run.toml").write_text(text)
    assert Scenario.from_toml_str((tmp_path / "run.toml").read_text()) == imp.scenario
