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


def test_verl_fully_async_gated_on_sync_or_not():
    """staleness_threshold = 0 with one batch's worth of slots: gated on the parameter sync (verl's
    rollouter, which resets its count of started prompts only at the sync: verl-project/verl
    fully_async_rollouter.py reset_staleness, the preset's default) every trained sample has
    staleness 0; not gated (the places freed when the trainer takes its batch, verl-project/verl
    issue 4449's reading) every batch after the first is generated while the previous one trains,
    with the old weights: staleness 1."""
    base = Scenario(rollout_slots=512, horizon_s=3600.0)
    gated = simulate(presets.verl_fully_async(0, scenario=base))
    assert gated.scenario.pipeline == FullyAsync(max_lag_samples=512, on_update="keep_recompute", lag_release="sync")
    assert presets.verl_fully_async(0, gated_on_sync=True, scenario=base) == gated.scenario
    t = gated.samples.filter(pl.col("status") == "trained")
    assert t["trained_step"].n_unique() >= 5 and t["staleness"].to_list() == [0] * t.height
    take = simulate(presets.verl_fully_async(0, gated_on_sync=False, scenario=base))
    assert take.scenario.pipeline == FullyAsync(max_lag_samples=512, on_update="keep_recompute")  # lag_release="take"
    t = take.samples.filter(pl.col("status") == "trained")
    first, later = t.filter(pl.col("trained_step") == 0), t.filter(pl.col("trained_step") > 0)
    assert first.height == 512 and first["staleness"].max() == 0
    assert later["trained_step"].n_unique() >= 5 and later["staleness"].to_list() == [1] * later.height
    # gating costs the overlap: each batch waits for its longest answer (16384 tokens at 30 tokens/s)
    # and, gated, for the training step (60 s) too
    assert gated.steps["start_s"].diff().drop_nulls().to_list() == pytest.approx([16384 / 30 + 60.0] * 5)
    assert take.steps["start_s"].diff().drop_nulls().to_list() == pytest.approx([16384 / 30] * 5)
    # the engine's default release leaves its input (and sweep keys) as they were
    assert "lag_release" not in take.scenario.pipeline.to_dict()
    assert gated.scenario.pipeline.to_dict()["lag_release"] == "sync"


def test_areal_without_interruption_waits_for_the_longest_answer():
    """AReaL's ablation of interruptible generation compares against weight updates that wait
    for the requests in flight (the longest response included): ``on_update="wait"``, which idles
    the pool and trains fewer tokens per second than interruptible generation."""
    sc = presets.areal(eta=2, interruptible=False, scenario=BASE)
    assert sc.pipeline == FullyAsync(admission_eta=2, batch_order="oldest_first", on_update="wait")
    wait = simulate(sc, record="summary").summary
    inter = simulate(presets.areal(eta=2, scenario=BASE), record="summary").summary
    assert wait["steps"] < 0.7 * inter["steps"]
    assert wait["tokens_trained"] / wait["end_s"] < 0.7 * inter["tokens_trained"] / inter["end_s"]
    assert wait["rollout_utilization"] < inter["rollout_utilization"]


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
