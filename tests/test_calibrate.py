"""Calibration on a run's per-step metrics (rollsim.calibrate) and what-if predictions
(rollsim.whatif): recovery of known parameters from metrics rollsim generated, framework metric
names, file formats, refusals naming the missing metric, and the command line."""

from __future__ import annotations

import io
import json
import math
import warnings

import polars as pl
import pytest

from rollsim import FullyAsync, LogNormal, Scenario, ScenarioError, Synchronous, configs
from rollsim.calibration import FRAMEWORK_METRICS, calibrate, normalize, synthetic_metrics
from rollsim.cli import main
from rollsim.what_if import _measure, grid, plot_whatif, whatif

EX = configs.EXAMPLES
TRUE = dict(decode_tokens_per_s=40.0, rollout_pause_s=40.0, train_step_s=20.0, train_s_per_token=2e-5, weight_sync_s=4.0)
MU, SIGMA, DRIFT = 6.0, 0.7, 0.02


@pytest.fixture(scope="module")
def synthetic():
    sc = Scenario(rollout_slots=1024, batch_size=1024, group_size=8, pipeline=Synchronous(),
                  lengths=LogNormal(mu=MU, sigma=SIGMA, max_tokens=16384), **TRUE)
    m = synthetic_metrics(sc, 30, drift=DRIFT, noise=0.01, seed=1)
    return sc, m, calibrate(m, sc, bootstrap=100)


def test_synthetic_recovers_every_parameter(synthetic):
    sc, m, cal = synthetic
    got = dict(zip(cal.params["name"], cal.params["value"]))
    want = {"lengths.mu": MU, "lengths.sigma": SIGMA, "lengths.drift": DRIFT, **TRUE}
    want["gen_overhead_s"] = want.pop("rollout_pause_s")
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=0.05), name
    # the intervals hold the fit; residuals per step are small
    for row in cal.params.iter_rows(named=True):
        assert row["low"] <= row["value"] <= row["high"]
    assert cal.residuals.height == 30 and float(cal.residuals["step_error"].abs().max()) < 0.06
    assert cal.scenario.pipeline == Synchronous() and cal.scenario.batch_size == 1024


def test_synthetic_alternative_within_5_percent(synthetic):
    sc, m, cal = synthetic
    df = whatif(cal, grid(pipeline="fully-async", max_staleness=[2, None]), draws=5)
    assert df["variant"].to_list() == ["baseline", "fully-async, max_staleness=2", "fully-async, max_staleness=None"]
    assert abs(df["error"][0]) < 0.03                                  # the baseline against its own metrics
    truth = sc.replace(**{"lengths.mu": MU + DRIFT * cal.reference_step})
    for i, cap in ((1, 2), (2, None)):
        want = _measure(truth.replace(pipeline=FullyAsync(max_staleness=cap)), 12, 0)
        assert df["step_s"][i] == pytest.approx(want["step_s"], rel=0.05)
        assert df["tokens_per_s"][i] == pytest.approx(want["tokens_per_s"], rel=0.05)
        assert df["step_s_low"][i] <= df["step_s"][i] <= df["step_s_high"][i]
    assert math.isnan(df["error"][1])


def test_verl_names_and_file_formats(tmp_path):
    imp = configs.load(EX / "verl_grpo.yaml")
    csv = EX / "verl_grpo_metrics.csv"
    df = pl.read_csv(csv)
    norm, fw, src = normalize(df)
    assert fw == "verl" and src["gen_s"] == "timing_s/gen" and src["sync_s"] == "timing_s/update_weights"
    a = calibrate(csv, imp, bootstrap=10)
    df.write_ndjson(tmp_path / "m.jsonl")
    df.write_parquet(tmp_path / "m.parquet")
    b = calibrate(tmp_path / "m.jsonl", imp, bootstrap=10)
    c = calibrate(tmp_path / "m.parquet", imp, bootstrap=10)
    assert a.values == b.values == c.values
    assert a.framework == "verl"
    # the example was generated with decode 45 tokens/s, overhead 25 s, 15 s + 1.2e-5 s/token, sync 6 s
    assert a.values["decode_tokens_per_s"] == pytest.approx(45.0, rel=0.05)
    assert a.values["weight_sync_s"] == pytest.approx(6.0, rel=0.05)
    assert a.values["train_s_per_token"] == pytest.approx(1.2e-5, rel=0.1)


def test_fully_async_recipe_and_other_framework_names():
    base = pl.DataFrame({"timing_s/gen": [10.0, 12.0, 11.0], "timing_s/update_actor": [5.0, 6.0, 5.5],
                         "timing_s/param_sync": [1.0, 1.0, 1.0], "response_length/mean": [100.0, 120.0, 110.0],
                         "response_length/max": [400.0, 500.0, 450.0]})
    norm, fw, src = normalize(base)
    assert fw == "verl" and src["sync_s"] == "timing_s/param_sync"
    slime = pl.DataFrame({"perf/rollout_time": [10.0, 12.0, 11.0], "perf/actor_train_time": [5.0, 6.0, 5.5],
                          "perf/log_probs_time": [1.0, 1.1, 1.0], "rollout/response_len/mean": [100.0, 120.0, 110.0],
                          "rollout/response_len/max": [400.0, 500.0, 450.0], "rollout/truncated_ratio": [0.0, 0.0, 0.0]})
    norm, fw, src = normalize(slime)
    assert fw == "slime" and src["logprob_s"] == "perf/log_probs_time" and "response_clip_ratio" in norm.columns
    areal = pl.DataFrame({"timeperf/rollout": [10.0, 12.0, 11.0], "timeperf/train_step": [5.0, 6.0, 5.5],
                          "timeperf/update_weights": [1.0, 1.0, 1.0], "ppo_actor/seq_len/avg": [300.0, 320.0, 310.0],
                          "ppo_actor/seq_len/max": [600.0, 700.0, 650.0], "ppo_actor/prompt_len/avg": [200.0] * 3})
    norm, fw, src = normalize(areal)
    assert fw == "areal" and norm["response_mean"].to_list() == [100.0, 120.0, 110.0]
    assert norm["response_max"].to_list() == [400.0, 500.0, 450.0]
    assert set(FRAMEWORK_METRICS) == {"verl", "areal", "slime", "openrlhf"}


def test_refuses_missing_metric():
    df = pl.DataFrame({"timing_s/gen": [1.0, 2.0, 3.0], "response_length/mean": [1.0, 2.0, 3.0],
                       "response_length/max": [1.0, 2.0, 3.0]})
    with pytest.raises(ScenarioError, match=r"^metrics: missing timing_s/update_actor \+ timing_s/ref \+ timing_s/adv"):
        normalize(df)
    with pytest.raises(ScenarioError, match=r"^metrics: needs at least 3 steps to fit, got 2$"):
        normalize(pl.DataFrame({"gen_s": [1.0, 2.0], "train_s": [1.0, 1.0], "response_mean": [1.0, 2.0],
                                "response_max": [1.0, 2.0]}))
    with pytest.raises(ScenarioError, match=r"^metrics: column 'gen_s' must be numbers, got 'a' in row 0 \(counting from 0; 3 such rows\): "
                       r"leave a value not logged empty$"):
        normalize(pl.DataFrame({"gen_s": ["a"] * 3, "train_s": [1.0] * 3, "response_mean": [1.0] * 3,
                                "response_max": [1.0] * 3}))


def test_whatif_gpu_split_and_plot(tmp_path):
    imp = configs.load(EX / "verl_grpo.yaml")
    cal = calibrate(EX / "verl_grpo_metrics.csv", imp, bootstrap=20)
    df = whatif(cal, [{"pipeline": "fully-async", "rollout_gpus": 8, "max_staleness": 2},
                      {"pipeline": "sync", "prompts": 128}], draws=3)
    assert df.height == 3 and df["rollout_slots"].to_list() == [4096, 2048, 4096]
    assert df["pipeline"].to_list() == ["Synchronous", "FullyAsync", "Synchronous"]
    assert abs(df["error"][0]) < 0.05
    fig = plot_whatif(df, path=tmp_path / "w.png")
    assert (tmp_path / "w.png").stat().st_size > 1000 and fig is not None
    with pytest.raises(ScenarioError, match=r"^max_staleness: applies to the fully async pipeline only, not Synchronous$"):
        whatif(cal, [{"max_staleness": 2}], draws=0)
    with pytest.raises(ScenarioError, match=r"^rollout_gpus: needs a base imported from a config"):
        whatif(calibrate(EX / "verl_grpo_metrics.csv", imp.scenario, bootstrap=0), [{"rollout_gpus": 8}], draws=0)


def test_cli_calibrate_and_whatif(tmp_path, capsys):
    cfg, met = str(EX / "verl_grpo.yaml"), str(EX / "verl_grpo_metrics.csv")
    assert main(["calibrate", "--config", cfg, "--metrics", met, "--bootstrap", "10", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows][:3] == ["lengths.mu", "lengths.drift", "lengths.sigma"]
    assert main(["whatif", "--config", cfg, "--metrics", met, "--pipeline", "fully-async", "--max-staleness", "1,2",
                 "--rollout-gpus", "8", "--bootstrap", "10", "--draws", "2", "--plot", str(tmp_path / "w.png")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rollsim whatif: calibrated on 40 steps; baseline predicted ")
    assert "fully-async, max_staleness=2, rollout_gpus=8" in out
    assert main(["whatif", "--config", cfg, "--metrics", met, "--max-staleness", "1"]) == 2
    assert capsys.readouterr().err == ("rollsim: error: --max-staleness: needs --pipeline fully-async (the cap "
                                       "applies to that pipeline; the config's is Synchronous)\n")


def test_whatif_caps_a_fully_async_config_without_pipeline(capsys):
    # a config that is fully async already takes --max-staleness on its own pipeline (it was refused,
    # asking for --pipeline fully-async)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the variants' own warnings are not what is checked
        assert main(["whatif", "--config", str(EX / "verl_fully_async.sh"), "--metrics",
                     str(EX / "verl_fully_async_metrics.csv"), "--max-staleness", "16", "--bootstrap", "4",
                     "--draws", "0", "--format", "csv"]) == 0
    df = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert df["variant"].to_list() == ["baseline", "max_staleness=16"]
    assert df["pipeline"].to_list() == ["FullyAsync", "FullyAsync"]


SLIME_NAMES = {"step_s": "perf/step_time", "gen_s": "perf/rollout_time", "train_s": "perf/actor_train_time",
               "sync_s": "perf/update_weights_time", "response_mean": "rollout/response_len/mean",
               "response_max": "rollout/response_len/max", "response_clip_ratio": "rollout/truncated_ratio"}


@pytest.mark.parametrize("name, names", [("slime_async.sh", SLIME_NAMES), ("openrlhf_ppo.sh", None)])
def test_one_step_configs_end_to_end(name, names):
    """A one-step run's metrics (generation overlaps training: the step lasts the longer of the two),
    with slime's names or the generic ones, calibrate the imported config; its baseline matches."""
    # (slime's example over-samples; the answers a run logs are then the first finished, a length-biased
    # subset the length fit does not model: this test leaves over-sampling out)
    imp = configs.load(EX / name, overrides=["--over-sampling-batch-size", "32"] if names else ())
    true = imp.scenario.replace(decode_tokens_per_s=50.0, rollout_pause_s=10.0, train_step_s=30.0,
                                train_s_per_token=4e-5, weight_sync_s=3.0,
                                **{"lengths.mu": 6.0, "lengths.sigma": 0.6})
    m = synthetic_metrics(true, 16, drift=0.04, noise=0.01, seed=3)
    m = m.with_columns(step_s=pl.max_horizontal("gen_s", pl.col("train_s") + pl.col("sync_s")))
    if names:
        m = m.drop("step").rename(names)
    cal = calibrate(m, imp, bootstrap=50)
    assert cal.framework == ("slime" if names else "generic")
    assert cal.values["decode_tokens_per_s"] == pytest.approx(50.0, rel=0.1)
    row = cal.params.filter(pl.col("name") == "train_s_per_token").row(0, named=True)
    assert row["low"] <= 4e-5 <= row["high"] and row["value"] == pytest.approx(4e-5, rel=0.2)
    df = whatif(cal, [{"pipeline": "sync"}], draws=0)
    assert abs(df["error"][0]) < 0.06
    assert df["step_s"][1] > df["step_s"][0]           # synchronous is slower than the overlapped baseline


def test_whatif_warns_once_naming_the_rows():
    # the uncapped fully async variant outruns training in each of its runs (point + 2 draws): one
    # warning for the whole frame, naming the rows it applies to; the baseline gives none
    from rollsim import GenerationOutrunsTrainingWarning

    cal = calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=5)
    with pytest.warns(GenerationOutrunsTrainingWarning) as rec:
        whatif(cal, [{"pipeline": "fully-async"}], draws=2)
    (msg,) = [str(w.message) for w in rec]
    assert msg.startswith("generation outruns training in 1 of 2 rows (fully-async): the ready queue grows by up to ")
