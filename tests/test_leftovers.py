"""Defects left by earlier work: the colocated split row's utilisation, the deployment's
training-state and trajectory-bound warnings, slime's Megatron layout, whatif's training GPUs,
the pipeline string error, the step plot's label and verl's validation time."""
from __future__ import annotations

import pytest

from rollsim.cli import main


def test_split_colocated_row_says_what_its_utilisation_counts(capsys):
    """The colocated row's rollout util is slot occupancy: a synchronous batch of 64 requests fills
    at most 64 of the 4 x 256 slots (1.1 %, printed as 0 % before), while the GPUs generate 95 % of
    the time (the trainer's idle share): the row says both."""
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.0004", "--horizon-s", "1800",
                 "--slots-per-instance", "256", "--batch-size", "64", "--colocated-switch-s", "10"]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if "(colocated" in line]
    assert len(row) == 1
    cells = row[0].split()
    assert cells[:6] == ["4", "4", "1024", "562.3", "95%", "1.1%"]
    assert ("(colocated, synchronous: every GPU takes turns; rollout util 1.1% is slot occupancy: the batch's 64 "
            "requests fill at most 64 of 1024 slots; the GPUs generate while the trainer idles, 95% of the time)"
            in row[0])


def test_deployment_warns_when_the_training_gpus_cannot_hold_the_training_state():
    """Qwen3-30B-A3B's training state (30.5B parameters x 18 bytes = 512 GiB) needs 7 H100s: on 4 the
    step is priced all the same (a trainer may offload) with a DeploymentWarning saying so; on 8, none."""
    import warnings

    import rollsim
    from rollsim import LogNormal
    from rollsim.hardware import Deployment

    small = Deployment("Qwen3-30B-A3B", "H100", rollout_gpus=8, train_gpus=4)
    words = ("train_gpus: 4 x H100 cannot hold the training state of Qwen3-30B-A3B (30.5B parameters x 18 bytes = "
             "512 GiB: weights, gradients, Adam; 128.0 GiB per GPU on 4 GPUs; it needs at least 7 x H100 of 80 GiB, "
             "before activations), or a trainer that offloads it (priced as if it fit)")
    assert small.train_state_words() == words
    with pytest.warns(rollsim.DeploymentWarning) as got:
        step = small.train_step_s(tokens=64 * 2000.0, sequences=64)
    assert [str(w.message) for w in got] == [words]
    assert step["total"] > 0
    with pytest.warns(rollsim.DeploymentWarning, match="^train_gpus: 4 x H100"):
        sc = small.scenario(lengths=LogNormal(7.0, 1.0, 8192.0), prompts_per_step=16, group_size=4)
    assert sc.batch_size == 64
    fits = Deployment("Qwen3-30B-A3B", "H100", rollout_gpus=8, train_gpus=8)
    assert fits.train_state_words() is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fits.train_step_s(tokens=64 * 2000.0, sequences=64)
        fits.scenario(lengths=LogNormal(7.0, 1.0, 8192.0), prompts_per_step=16, group_size=4)


_SLIME = ("python3 train.py --hf-checkpoint /root/Qwen3-30B-A3B --actor-num-nodes 2 --actor-num-gpus-per-node 8 "
          "--rollout-num-gpus 16 --rollout-batch-size 32 --n-samples-per-prompt 8 --rollout-max-response-len 8192 "
          "--global-batch-size 256 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
          "--expert-model-parallel-size 4 --context-parallel-size 1\n")


def _notes(imp):
    return {n.option: (n.kind, n.became) for n in imp.notes}


def test_slime_megatron_layout_reaches_the_deployment(tmp_path):
    """slime's Megatron-LM parallel sizes were noted as ignored: like verl's actor.megatron.* they are
    the deployment's training options now, and the weight-sync layout is TP2 PP2 over 4 replicas."""
    import rollsim

    path = tmp_path / "run.sh"
    path.write_text(_SLIME)
    imp = rollsim.configs.load(path, gpu="H100")
    assert imp.deployment.train_options == {"tensor_parallel": 2, "pipeline_parallel": 2, "context_parallel": 1,
                                            "expert_parallel": 4}
    notes = _notes(imp)
    assert notes["--expert-model-parallel-size"] == (
        "read", "deployment.train_options['expert_parallel'] = 4 (the deployment's training model: a what-if's "
        "training GPU change keeps the layout)")
    assert notes["(sync cluster)"][1] == (
        "sync = Cluster(model='qwen3-30b-a3b', train TP2 PP2 EP4 dp=4 Megatron, 16 engines x TP1, "
        "topology='broadcast', H100-class links)")
    t = imp.sync.train
    assert (t.tp, t.pp, t.cp, t.ep, t.dp, t.fsdp) == (2, 2, 1, 4, 4, False)
    tok = dict(tokens=256 * 2000.0, sequences=256)
    laid = imp.deployment.train_step_s(**tok)["total"]
    plain = imp.deployment.train_step_s(**tok, tensor_parallel=1, pipeline_parallel=1, expert_parallel=1)["total"]
    assert laid != pytest.approx(plain, rel=1e-3)
    # without an accelerator: noted as such, not lost
    assert "there is none without an accelerator" in _notes(rollsim.configs.load(path))[
        "--tensor-model-parallel-size"][1]
    # the FSDP backend keeps none of them
    path.write_text(_SLIME.replace("train.py", "train.py --train-backend fsdp"))
    imp = rollsim.configs.load(path, gpu="H100")
    assert imp.deployment.train_options == {}
    assert _notes(imp)["--tensor-model-parallel-size"][0] == "ignored"
    assert _notes(imp)["(sync cluster)"][1].startswith("sync = Cluster(model='qwen3-30b-a3b', train dp=16 FSDP,")


def test_verl_megatron_sync_note_says_its_layout(tmp_path):
    """A verl Megatron config at TP2 PP2 EP8 on 32 GPUs: the weight-sync layout is 8 replicas of a
    TP2 x PP2 shard (it said "train dp=32 FSDP")."""
    import rollsim

    from test_newuser9 import _YAML   # the same verl Megatron config

    path = tmp_path / "meg.yaml"
    path.write_text(_YAML)
    imp = rollsim.configs.load(path)
    assert _notes(imp)["(sync cluster)"][1] == (
        "sync = Cluster(model='qwen3-30b-a3b', train TP2 PP2 EP8 dp=8 Megatron, 16 engines x TP2, "
        "topology='colocated', H100-class links)")
    assert (imp.sync.train.dp, imp.sync.train.fsdp) == (8, False)


def test_whatif_table_shows_the_training_gpus_a_variant_moves(capsys):
    """--train-gpus 8 on verl_grpo.yaml's 16 GPUs: the table has the train_gpus column (16, then 8);
    a run without such a variant keeps it out."""
    from rollsim.configs import EXAMPLES as EX

    args = ["whatif", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
            "--gpu", "H100", "--draws", "2", "--bootstrap", "0"]
    assert main([*args, "--train-gpus", "8"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    # and the rollout GPUs beside them (the colocated 16 split 8 + 8: the table showed the trainer's 8 only)
    assert lines[1].split()[:4] == ["variant", "rollout_gpus", "train_gpus", "step_s"]
    assert lines[3].split()[:3] == ["baseline", "16", "16"] and lines[4].split()[:3] == ["train_gpus=8", "8", "8"]
    assert err.splitlines()[-1] == ("rollsim: note: the baseline is colocated: rollout and training take turns on the "
                                    "same 16 GPUs; an asynchronous variant splits them, half each unless --rollout-gpus "
                                    "R (the trainer gets the rest)")
    assert main([*args, "--prompts", "64"]) == 0
    assert "train_gpus " not in capsys.readouterr().out


def test_whatif_layout_error_names_no_flag_of_another_command(capsys):
    """A rollout GPU variant leaving 13 training GPUs to a TP2 trainer: the error names whatif's
    --rollout-gpus and the 13 training GPUs, not the training model's train_gpus (read as a flag)."""
    from rollsim.configs import EXAMPLES as EX

    assert main(["whatif", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
                 "--gpu", "H100", "--rollout-gpus", "13", "--draws", "2", "--bootstrap", "0",
                 "actor_rollout_ref.actor.strategy=megatron",
                 "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rollsim: error: --rollout-gpus: 13 leaves 13 training GPUs, which the run's training layout cannot use: "
        "tensor_parallel: tensor_parallel x pipeline_parallel (2 x 1) must divide the 13 training GPUs, got 2")


def test_step_breakdown_of_one_unnamed_run_labels_its_bar():
    """One unnamed Result: its bar is labelled by its pipeline (it was blank); a bare steps frame: "run"."""
    import matplotlib

    matplotlib.use("Agg")
    import rollsim
    from rollsim import plot

    res = rollsim.simulate(rollsim.Scenario(pipeline=rollsim.OneStepAsync(), horizon_s=1800.0))
    fig = plot.step_breakdown(res)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["OneStepAsync()"]
    fig = plot.step_breakdown(res.steps)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["run"]
    fig = plot.step_breakdown({"mine": res})
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["mine"]


def test_verl_validation_time_is_taken_out_of_the_step(tmp_path):
    """verl's trainer times validation (timing_s/testing) and checkpoint saving inside timing_s/step
    (verl/trainer/ppo/ray_trainer.py, fit): a table whose validation rows carry 60 s more step time and
    the timer gives the same fit as the table without either, and says so; the timers are not
    listed as not read any more."""
    import polars as pl

    from rollsim import calibrate, configs
    from rollsim.configs import EXAMPLES as EX

    imp = configs.load(EX / "verl_grpo.yaml")
    table = pl.read_csv(EX / "verl_grpo_metrics.csv")
    every = pl.Series([60.0 if i % 10 == 9 else None for i in range(table.height)])
    tested = table.with_columns(pl.col("timing_s/step") + every.fill_null(0.0), every.alias("timing_s/testing"),
                                pl.lit(None, dtype=pl.Float64).alias("timing_s/save_checkpoint"))
    tested.write_csv(tmp_path / "m.csv")
    plain = calibrate(EX / "verl_grpo_metrics.csv", imp, bootstrap=0)
    cal = calibrate(tmp_path / "m.csv", imp, bootstrap=0)
    assert cal.scenario == plain.scenario
    assert cal.metrics["step_s"].to_list() == plain.metrics["step_s"].to_list()
    assert cal.reference_step == plain.reference_step
    assert cal.residuals.equals(plain.residuals)
    assert ("metrics: timing_s/testing, timing_s/save_checkpoint subtracted from timing_s/step where logged (verl's "
            "trainer times validation and checkpoint saving inside its step, verl/trainer/ppo/ray_trainer.py fit: "
            "no part of the pipeline's step)") in cal.notes
    assert not any("not read" in n and "timing_s/testing" in n for n in cal.notes)
    # before: the 60 s were fitted into the step
    assert not any("timing_s/testing" in n for n in plain.notes)


def test_deployment_scenario_warns_of_a_preset_bound_made_for_a_smaller_pool():
    """code_interpreter_math()'s agentic bounds max_trajectories by Scenario()'s 256 slots (512): on
    Qwen3-8B's 2 x 1024 slots at most 512 are ever busy. The scenario keeps the bound (as given) and
    says so, as the command line's note does; a preset made for the pool, or no bound, says nothing."""
    import dataclasses
    import warnings

    import rollsim
    from rollsim import Scenario, trajectories
    from rollsim.hardware import Deployment

    d = Deployment("Qwen3-8B", "H100", rollout_gpus=2, train_gpus=2)
    ci = trajectories.code_interpreter_math()
    ci = ci.replace(agentic=dataclasses.replace(ci.agentic, max_context_tokens=32768.0))  # fits the KV capacity
    kw = dict(lengths=ci.lengths, prompts_per_step=8, group_size=8, per_rank=False)
    with pytest.warns(rollsim.DeploymentWarning) as got:
        sc = d.scenario(agentic=ci.agentic, **kw)
    assert [str(w.message) for w in got] == [
        "agentic.max_trajectories: 512 is below the deployment's 2048 rollout slots (2 instances x 1024): at most 512 "
        "of them are ever busy (a trajectory holds one slot at a time); a preset's bound is made for the pool it was "
        "given (rollsim.trajectories.code_interpreter_math(Scenario(rollout_slots=2048)) makes it for this one), or "
        "set max_trajectories (None: unbounded)"]
    assert sc.agentic.max_trajectories == 512 and sc.rollout_slots == 2048
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = trajectories.code_interpreter_math(Scenario(group_size=8, rollout_slots=2048)).agentic
        fit = dataclasses.replace(fit, max_context_tokens=32768.0)
        assert d.scenario(agentic=fit, **kw).agentic.max_trajectories == 4096
        d.scenario(agentic=dataclasses.replace(ci.agentic, max_trajectories=None), **kw)
