"""Each published system's preset runs and shows the rule that defines it."""

import math

import polars as pl
import pytest

from rollsim import FullyAsync, Scenario, ScenarioError, Synchronous, datasets, presets, simulate
from rollsim.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

BASE = Scenario(lengths=datasets.deepseek_r1_serving(max_tokens=16384), group_size=8, prompt_tokens=500.0,
                prefill_tokens_per_s=10000.0, horizon_s=2 * 3600.0, train_step_s=150.0)


def test_areal():
    sc = presets.areal(eta=2, scenario=BASE)
    assert sc.pipeline == FullyAsync(admission_eta=2, batch_order="oldest_first", on_update="abort_resubmit")
    res = simulate(sc)
    s = res.summary
    assert s["samples_dropped"] == 0 and s["rollout_utilization"] < 0.9  # admission control idles slots
    assert s["tokens_recomputed"] > 0  # interruptible generation re-prefills prompt + partial answers
    i = res.samples["sample_id"].cast(pl.Int64)
    assert (res.samples["version_start"].cast(pl.Int64) >= i // sc.batch_size - 2).all()


def test_verl_fully_async():
    sc = presets.verl_fully_async(staleness_threshold=0.5, partial_rollout=True, scenario=BASE)
    assert sc.pipeline.max_lag_samples == math.ceil(1.5 * 512) and sc.pipeline.on_update == "keep_recompute"
    s = simulate(sc).summary
    assert s["staleness_max"] <= 4 and s["samples_dropped"] == 0
    wait = simulate(presets.verl_fully_async(0.5, partial_rollout=False, scenario=BASE)).samples
    assert (wait["n_versions"] <= 1).all()


def test_pipeline_rl():
    res = simulate(presets.pipeline_rl(scenario=BASE))
    assert res.samples["n_versions"].max() > 1  # in-flight weight updates: answers mix versions
    assert res.summary["tokens_recomputed"] == 0  # the KV is kept


def test_slime_partial_rollout():
    res = simulate(presets.slime_partial_rollout(scenario=BASE))
    sync = simulate(BASE.replace(pipeline=Synchronous()))
    assert res.summary["steps"] > 2 * sync.summary["steps"]
    assert res.samples["n_versions"].max() > 1 and res.summary["tokens_wasted"] == 0


def test_prime_rl():
    sc = presets.prime_rl(async_level=1, max_off_policy_steps=1, scenario=BASE)
    s = simulate(sc).summary
    assert s["staleness_max"] <= 1 and s["samples_dropped"] > 0


def test_compare_table_and_cli(capsys):
    df = presets.compare(BASE.replace(horizon_s=1800.0))
    assert df["system"].to_list()[:2] == ["synchronous", "fully async (chapter)"] and df.height == 7
    assert (df["wasted_fraction"] >= 0).all()
    assert main(["presets", "--horizon-s", "1800", "--format", "csv"]) == 0
    assert pl.read_csv(capsys.readouterr().out.encode()).height == 7


def test_bad_knobs():
    with pytest.raises(ScenarioError, match="^eta:"):
        presets.areal(eta=-1)
    with pytest.raises(ScenarioError, match="^staleness_threshold:"):
        presets.verl_fully_async(staleness_threshold=-0.1)
    with pytest.raises(ScenarioError, match="^max_lag:"):
        presets.pipeline_rl(max_lag=0)
    with pytest.raises(ScenarioError, match="^scenario:"):
        presets.prime_rl(scenario="x")
