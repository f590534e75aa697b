"""What-if variants trained as verl's fully async trainer trains (rollsim.what_if, the cadence keys;
rollsim.configs.verl.FullyAsyncCadence): ``trigger_parameter_sync_step`` local updates of
``require_batches x ppo_mini_batch_size`` prompts per parameter sync (volcengine/verl
verl/experimental/fully_async_policy/fully_async_trainer.py: required_samples,
_trigger_parameter_sync_after_step), the rollouter's bound and concurrency cap
(fully_async_rollouter.py: set_max_required_samples), from a colocated baseline or a fully async one."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

from rollsim import FullyAsync, calibrate, configs
from rollsim.cli import main
from rollsim.configs.verl import FullyAsyncCadence
from rollsim.what_if import _cadence, _variant, whatif

EX = configs.EXAMPLES


@pytest.fixture(scope="module")
def colocated():
    """The shipped colocated verl GRPO example (16 GPUs, 256 prompts x 8, TP 1, max_num_seqs 256), calibrated."""
    return calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=0)


@pytest.fixture(scope="module")
def fully_async():
    """The shipped verl fully async example (8 + 8 GPUs, ppo_mini_batch_size 32 x require_batches 1,
    trigger_parameter_sync_step 8, staleness 0.5), calibrated on its rows of 8 local updates."""
    return calibrate(EX / "verl_fully_async_metrics.csv", configs.load(EX / "verl_fully_async.sh"), bootstrap=0)


def _scenario(cal, v):
    return _variant(cal, cal.scenario_for(cal.values), v)


def test_the_import_reads_the_cadence():
    imp = configs.load(EX / "verl_fully_async.sh")
    c = imp.fully_async
    assert c == FullyAsyncCadence(ppo_mini_batch_size=32, require_batches=1, trigger_parameter_sync_step=8,
                                  staleness_threshold=0.5, partial_rollout=True, concurrent_samples_per_replica=16, n=8)
    # int(32 x 1.5 x 8) = 384 prompts per window; 8 servers x 16 = 128 prompts at once, 1,024 sequences
    assert (c.prompts_per_update, c.max_required_prompts, c.max_lag_samples) == (32, 384, 3072)
    assert (c.concurrent_prompts(8), c.rollout_slots(8, 256), c.rollout_slots(8, 100)) == (128, 1024, 800)
    assert c.pipeline() == imp.scenario.pipeline
    assert imp.scenario.rollout_slots == 1024 and imp.scenario.batch_size == 256 and imp.scenario.sync_every == 8
    assert configs.load(EX / "verl_grpo.yaml").fully_async is None


def test_verl_name_from_a_colocated_baseline_follows_the_docs_rule(colocated):
    # 256 prompts per step as 4 local updates of 64 (verl's default trigger_parameter_sync_step 4; docs: trigger =
    # train_batch_size / (require_batches x ppo_mini_batch_size)), verl's default staleness_threshold 0.1
    generic = _scenario(colocated, {"pipeline": "fully-async", "rollout_gpus": 8})
    sc = _scenario(colocated, {"pipeline": "verl-fully-async", "rollout_gpus": 8})
    assert (sc.batch_size, sc.group_size, sc.sync_every) == (64 * 8, 8, 4)
    assert sc.pipeline == FullyAsync(max_lag_samples=int(64 * 1.1 * 4) * 8, lag_release="sync",
                                     on_update="keep_recompute")
    # the rollouter's cap on 8 servers: 16 prompts each, 1,024 sequences (the engines' 8 x 256 = 2,048 above it)
    assert (generic.rollout_slots, sc.rollout_slots) == (2048, 1024)
    # the fixed seconds of a step shared out per prompt, the per-token costs kept
    assert sc.train_step_s == pytest.approx(generic.train_step_s / 4, rel=1e-12)
    assert sc.weight_sync_s == pytest.approx(generic.weight_sync_s / 4, rel=1e-12)
    assert (sc.train_s_per_token, sc.logprob_s_per_token) == (generic.train_s_per_token, generic.logprob_s_per_token)
    assert colocated.scenario.weight_sync_s > 0 and generic.train_step_s > 0


def test_an_imported_config_as_pipeline_gives_its_cadence(colocated):
    imp = configs.load(EX / "verl_fully_async.sh")
    by_config = _scenario(colocated, {"pipeline": imp, "rollout_gpus": 8})
    assert (by_config.batch_size, by_config.sync_every, by_config.rollout_slots) == (256, 8, 1024)
    assert by_config.pipeline == imp.scenario.pipeline
    # the same cadence in verl's names: 256 / (1 x 32) = 8 local updates per sync
    by_keys = _scenario(colocated, {"pipeline": "verl-fully-async", "ppo_mini_batch_size": 32,
                                    "staleness_threshold": 0.5, "rollout_gpus": 8})
    assert by_keys == by_config
    assert _cadence(colocated, colocated.scenario, {"pipeline": imp}) == imp.fully_async


def test_the_frame_reports_a_verl_variant_per_parameter_sync(colocated):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = whatif(colocated, [], draws=0, steps=8)
        df = whatif(colocated, [{"pipeline": "verl-fully-async", "rollout_gpus": 8}, {"pipeline": "one-step"}],
                    draws=0, steps=8)
    assert "steps_per_row" not in alone.columns  # one step per row everywhere: the columns say nothing
    assert df["steps_per_row"].to_list() == [1, 4, 1]
    assert df["samples_per_row"].to_list() == [2048, 2048, 2048]  # the docs' rule: one sync = the colocated step
    # the calibrated baseline's own prediction is unchanged by the variants beside it
    assert df["step_s"][0] == alone["step_s"][0] and abs(df["error"][0]) < 0.05
    assert df["pipeline"][1] == "FullyAsync" and df["rollout_slots"][1] == 1024


def test_a_fully_async_baseline_keeps_its_cadence_unless_a_key_changes_it(fully_async):
    b0 = fully_async.scenario_for(fully_async.values)
    assert _variant(fully_async, b0, {}) == b0
    assert _variant(fully_async, b0, {"trigger_parameter_sync_step": 8}) == b0  # the import's own cadence
    two = _variant(fully_async, b0, {"require_batches": 2})
    assert (two.batch_size, two.sync_every) == (2 * b0.batch_size, 8)
    assert two.train_step_s == pytest.approx(2 * b0.train_step_s, rel=1e-12)
    assert two.pipeline.max_lag_samples == int(64 * 1.5 * 8) * 8
    assert two.rollout_slots == 1024  # 8 servers x 16 prompts x 8 answers, below the window's 768 prompts
    low = _variant(fully_async, b0, {"staleness_threshold": 0.0, "trigger_parameter_sync_step": 2})
    assert (low.sync_every, low.pipeline.max_lag_samples, low.rollout_slots) == (2, 64 * 8, 64 * 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = whatif(fully_async, [], draws=0, steps=16)
        df = whatif(fully_async, [{"trigger_parameter_sync_step": 4}], draws=0, steps=16)
    assert df["step_s"][0] == alone["step_s"][0]  # the calibrated baseline's prediction, unchanged
    assert abs(df["error"][0]) < 0.05
    assert df["steps_per_row"].to_list() == [8, 4] and df["samples_per_row"].to_list() == [8 * 256, 4 * 256]


def test_cli_whatif_takes_the_cadence_flags(capsys):
    args = ["whatif", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
            "--bootstrap", "0", "--draws", "0", "--steps", "8", "--rollout-gpus", "8"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*args, "--pipeline", "verl-fully-async", "--trigger-parameter-sync-step", "2,4",
                     "--format", "csv"]) == 0
    df = pl.read_csv(capsys.readouterr().out.encode())
    assert df["steps_per_row"].to_list() == [1, 2, 4]
    assert df["samples_per_row"].to_list() == [2048] * 3
    assert df["variant"][1].startswith("verl-fully-async") and "trigger_parameter_sync_step=2" in df["variant"][1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*args, "--pipeline", "verl-fully-async", "--staleness-threshold", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "a verl fully async variant's per parameter sync" in out and "samples_per_row" in out
