"""Config import (rollsim.configs): every framework's batch units, pipelines, layouts and notes, the
shipped examples end to end (Python and command line)."""

from __future__ import annotations

import math
import textwrap
import warnings

import pytest

import rollsim
from rollsim import FullyAsync, OneStepAsync, OffPolicy, ScenarioError, Synchronous, configs, presets
from rollsim.cli import main
from rollsim.configs._common import flatten, resolve

EX = configs.EXAMPLES


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def kinds(imp, option):
    return [n for n in imp.notes if n.option == option]


# ------------------------------------------------------------------------------------------------ verl

def test_verl_counts_prompts():
    imp = configs.load(EX / "verl_grpo.yaml")
    assert imp.framework == "verl"
    sc = imp.scenario
    assert (sc.batch_size, sc.group_size) == (256 * 8, 8)
    assert imp.prompts_per_step == 256
    assert sc.pipeline == Synchronous()
    assert imp.layout == configs.Layout(rollout_gpus=16, train_gpus=16, colocated=True, rollout_tp=1,
                                        slots_per_engine=256)
    assert sc.rollout_slots == 16 * 256
    assert sc.lengths.max_tokens == 8192.0
    (n,) = kinds(imp, "data.train_batch_size")
    assert n.kind == "read" and n.became.startswith("batch_size = 2048 samples (256 prompts x rollout.n 8")
    (n,) = kinds(imp, "actor_rollout_ref.rollout.tensor_model_parallel_size")
    assert n.became == "tensor parallel 1"
    (n,) = kinds(imp, "(GPUs per inference server)")
    assert n.became.startswith("1 GPU per inference server")     # one GPU, not "1 GPUs"


def test_verl_defaults_and_overrides(tmp_path):
    p = write(tmp_path, "c.yaml", """\
        actor_rollout_ref:
          rollout: {n: 4}
        """)
    imp = configs.load(p)
    assert imp.scenario.batch_size == 1024 * 4          # verl's default train_batch_size 1024 prompts
    (n,) = kinds(imp, "data.train_batch_size")
    assert n.kind == "default" and n.became.endswith("(framework default)")
    assert imp.scenario.lengths.max_tokens == 512.0     # default max_response_length
    imp2 = configs.load(p, overrides=["data.train_batch_size=64", "+data.max_response_length=2048"])
    assert imp2.scenario.batch_size == 256 and imp2.scenario.lengths.max_tokens == 2048.0


def test_verl_launch_script_overrides_and_interpolation(tmp_path):
    p = write(tmp_path, "run.sh", """\
        #!/bin/bash
        set -x
        python3 -m verl.trainer.main_ppo \\
            data.train_batch_size=32 \\
            data.max_response_length=4096 \\
            actor_rollout_ref.rollout.n=16 \\
            actor_rollout_ref.rollout.tensor_model_parallel_size=2 \\
            trainer.n_gpus_per_node=8 trainer.nnodes=1 $@
        """)
    imp = configs.load(p)
    assert imp.framework == "verl"
    assert (imp.scenario.batch_size, imp.scenario.group_size) == (512, 16)
    assert imp.layout.engines == 4 and imp.scenario.rollout_slots == 4 * 256
    flat = resolve(flatten({"data": {"max_response_length": 100}, "r": {"x": "${data.max_response_length}",
                                                                       "y": "${oc.select:data.nope,7}"}}))
    assert flat["r.x"] == 100 and flat["r.y"] == 7


def test_verl_fully_async_local_update_and_sync_cadence():
    """verl fully_async: a training step is one local update of require_batches x ppo_mini_batch_size
    prompts (fully_async_trainer.py required_samples), the weights sync every
    trigger_parameter_sync_step updates (_trigger_parameter_sync_after_step): sync_every."""
    imp = configs.load(EX / "verl_fully_async.sh")
    sc = imp.scenario
    # require_batches 1 x ppo_mini_batch_size 32 prompts x rollout.n 8; trigger_parameter_sync_step 8
    assert (sc.batch_size, sc.sync_every, imp.steps_per_logged_step, imp.prompts_per_step) == (1 * 32 * 8, 8, 8, 32)
    # the rollouter pauses at int(32 x (1 + 0.5) x 8) = 384 prompts started since the last sync (x n 8 samples)
    assert sc.pipeline == FullyAsync(max_lag_samples=384 * 8, lag_release="sync", on_update="keep_recompute")
    # at most 16 prompts per server (max_concurrent_samples) x 8 servers = 128 prompts x 8 answers
    assert sc.rollout_slots == 128 * 8
    assert imp.layout == configs.Layout(rollout_gpus=8, train_gpus=8, colocated=False, rollout_tp=1, slots_per_engine=256)
    (n,) = kinds(imp, "data.train_batch_size") or [None]
    assert n is None  # not in the script
    assert kinds(imp, "rollout.total_rollout_steps")[0].kind == "ignored"
    # the same scenario as the preset built on the same local-update batch
    base = sc.replace(pipeline=Synchronous(), sync_every=1)
    assert presets.verl_fully_async(0.5, True, trigger_parameter_sync_step=8, scenario=base) == sc


def test_verl_fully_async_defaults(tmp_path):
    """Absent options take fully_async_ppo_trainer.yaml's defaults (staleness_threshold 0.1,
    trigger_parameter_sync_step 4, require_batches 1, partial_rollout True) and ppo_mini_batch_size 256;
    verl floors the prompt bound: int(256 x 1.1 x 4) = int(1126.4) = 1126."""
    p = write(tmp_path, "fa.sh", "python -m verl.experimental.fully_async_policy.fully_async_main "
                                 "actor_rollout_ref.rollout.n=2 rollout.nnodes=2\n")
    imp = configs.load(p)
    sc = imp.scenario
    assert (sc.batch_size, sc.sync_every) == (256 * 2, 4)
    assert sc.pipeline == FullyAsync(max_lag_samples=1126 * 2, lag_release="sync", on_update="keep_recompute")
    # 8 servers (2 nodes x 8 GPUs / verl's default TP 2) x 16 prompts x 2 answers, within 8 x max_num_seqs 256
    assert sc.rollout_slots == 8 * 16 * 2
    for opt in ("async_training.staleness_threshold", "async_training.trigger_parameter_sync_step",
                "async_training.require_batches", "async_training.partial_rollout"):
        (n,) = kinds(imp, opt)
        assert n.kind == "default", opt
    # verl-project/verl's option for the per-server prompts (16 by default), and both spellings of use_rollout_log_probs
    c = write(tmp_path, "fac.sh", "python -m verl.experimental.fully_async_policy.fully_async_main "
                                  "async_training.concurrent_samples_per_replica=4 rollout.nnodes=2 "
                                  "actor_rollout_ref.actor.use_rollout_log_probs=False\n")
    ic = configs.load(c)
    assert ic.scenario.rollout_slots == 8 * 4 * 1 and ic.unknown_options == ()
    (n,) = kinds(ic, "actor_rollout_ref.actor.use_rollout_log_probs")
    assert n.became == "an old_log_prob phase (calibrate logprob_s_per_token)"
    old = configs.load(c, overrides=["async_training.use_rollout_log_probs=True"])
    assert kinds(old, "actor_rollout_ref.actor.use_rollout_log_probs")[0].value == "False"   # the current name first
    q = write(tmp_path, "fa0.sh", "python -m verl.experimental.fully_async_policy.fully_async_main "
                                  "async_training.staleness_threshold=0 async_training.partial_rollout=False "
                                  "actor_rollout_ref.actor.ppo_mini_batch_size=8\n")
    assert configs.load(q).scenario.pipeline == FullyAsync(max_lag_samples=8 * 4, lag_release="sync", on_update="wait")


def test_verl_fully_async_docs_step_is_one_sync_window(tmp_path):
    """The experiments of verl's docs/advance/fully_async.md (ppo_mini_batch_size 32, require_batches 4,
    trigger_parameter_sync_step 4, rollout.n 16) compare with colocated train_batch_size 512: one logged
    step (one weight sync) is 4 local updates of 128 prompts = 512 prompts x 16 answers."""
    p = write(tmp_path, "docs.sh", "python -m verl.experimental.fully_async_policy.fully_async_main "
                                   "actor_rollout_ref.rollout.n=16 actor_rollout_ref.actor.ppo_mini_batch_size=32 "
                                   "async_training.require_batches=4 async_training.trigger_parameter_sync_step=4 "
                                   "async_training.staleness_threshold=0.5 trainer.nnodes=8 rollout.nnodes=8 "
                                   "data.max_response_length=28672\n")
    imp = configs.load(p)
    sc = imp.scenario
    assert sc.batch_size == 4 * 32 * 16 and imp.steps_per_logged_step == 4
    assert sc.batch_size * imp.steps_per_logged_step == 512 * 16
    assert sc.pipeline.max_lag_samples == int(128 * 1.5 * 4) * 16 == 12288


def test_verl_one_step_recipe(tmp_path):
    p = write(tmp_path, "one_step_off_ppo.yaml", """\
        defaults: [ppo_trainer, _self_]
        data: {train_batch_size: 128}
        actor_rollout_ref: {rollout: {n: 2}}
        rollout: {nnodes: 1, n_gpus_per_node: 4}
        trainer: {nnodes: 1, n_gpus_per_node: 4}
        """)
    imp = configs.load(p)
    assert imp.scenario.pipeline == OneStepAsync() and imp.scenario.batch_size == 256
    assert imp.layout.rollout_gpus == 4 and not imp.layout.colocated


def test_verl_over_sampling_and_bad_type(tmp_path):
    p = write(tmp_path, "c.yaml", "actor_rollout_ref: {rollout: {over_sample_rate: 0.25}}\n")
    assert configs.load(p).scenario.pipeline == Synchronous(over_sampling=0.25)
    q = write(tmp_path, "d.yaml", "data: {train_batch_size: '64'}\n")
    with pytest.raises(ScenarioError, match=r"^data.train_batch_size: must be an integer in the verl config, got str '64'$"):
        configs.load(q)


# ----------------------------------------------------------------------------------------------- AReaL

def test_areal_counts_prompts():
    imp = configs.load(EX / "areal_grpo.yaml")
    assert imp.framework == "areal"
    sc = imp.scenario
    assert (sc.batch_size, sc.group_size) == (128 * 8, 8)
    assert sc.pipeline == FullyAsync(admission_eta=2, batch_order="oldest_first", on_update="abort_resubmit")
    # min(max_concurrent_rollouts 256 prompts x 8 answers, 12 engines x 128 running requests)
    assert sc.rollout_slots == min(256 * 8, 12 * 128)
    assert imp.layout == configs.Layout(rollout_gpus=12, train_gpus=4, colocated=False, rollout_tp=1,
                                        slots_per_engine=128)


def test_areal_allocation_mode_and_defaults(tmp_path):
    p = write(tmp_path, "a.yaml", """\
        allocation_mode: sglang.d2p1t2+d4p1t1
        gconfig: {n_samples: 4}
        train_dataset: {batch_size: 16}
        """)
    imp = configs.load(p, "areal")
    assert imp.scenario.batch_size == 64 and imp.scenario.pipeline.admission_eta == 0
    assert imp.layout.rollout_gpus == 4 and imp.layout.rollout_tp == 2 and imp.layout.train_gpus == 4
    assert imp.scenario.lengths.max_tokens == 16384.0   # AReaL's default max_new_tokens
    # max_concurrent_rollouts defaults to consumer_batch_size, whose default is 1 rollout (areal/api/cli_args.py)
    assert imp.scenario.rollout_slots == 1 * 4
    (n,) = kinds(imp, "rollout.consumer_batch_size")
    assert n.kind == "assumed" and n.value == "1"
    (n,) = kinds(imp, "cluster.n_nodes")
    assert n.kind == "default" and n.value == "32"     # ClusterSpecConfig.n_nodes default 32


def test_areal_bad_backend(tmp_path):
    p = write(tmp_path, "a.yaml", "rollout: {backend: 'sglang-d4'}\nactor: {backend: 'fsdp:d4'}\ngconfig: {n_samples: 2}\n")
    with pytest.raises(ScenarioError, match=r"^rollout.backend: must be a backend string such as 'sglang:d4p1t1'"):
        configs.load(p)


# ----------------------------------------------------------------------------------------------- slime

def test_slime_global_batch_counts_samples():
    imp = configs.load(EX / "slime_async.sh")
    assert imp.framework == "slime"
    sc = imp.scenario
    assert (sc.batch_size, sc.group_size) == (32 * 8, 8)
    assert sc.pipeline == OneStepAsync(over_sampling=0.5)
    (n,) = kinds(imp, "--global-batch-size")
    assert n.became.startswith("1 optimizer steps of 256 samples per rollout")
    assert sc.rollout_slots == 4 * 128
    assert imp.layout.engines == 4


def test_slime_entry_points(tmp_path):
    base = "--rollout-batch-size 16 --n-samples-per-prompt 4 --global-batch-size 16 --rollout-max-response-len 2048"
    sync = configs.load(write(tmp_path, "s.sh", f"python train.py --colocate --actor-num-gpus-per-node 4 {base}\n"))
    assert sync.scenario.pipeline == Synchronous() and sync.layout.colocated and sync.layout.rollout_gpus == 4
    (n,) = kinds(sync, "--global-batch-size")
    assert n.became.startswith("4 optimizer steps of 16 samples")
    fa = configs.load(write(tmp_path, "f.sh", "python train_async.py --rollout-function-path "
                            f"slime.rollout.fully_async_rollout.generate_rollout_fully_async {base}\n"))
    assert fa.scenario.pipeline == FullyAsync()
    with pytest.raises(ScenarioError, match=r"^--colocate: train_async.py refuses colocation"):
        configs.load(write(tmp_path, "c.sh", f"python train_async.py --colocate {base}\n"))
    with pytest.raises(ScenarioError, match=r"^--global-batch-size: must divide rollout_batch_size x "
                                            r"n_samples_per_prompt = 64 samples \(slime's global batch counts samples\), got 48$"):
        configs.load(write(tmp_path, "g.sh", "python train.py --rollout-batch-size 16 --n-samples-per-prompt 4 "
                           "--global-batch-size 48\n"))
    with pytest.raises(ScenarioError, match=r"^--rollout-batch-size: is required in the slime arguments"):
        configs.load(write(tmp_path, "m.sh", "python train.py --n-samples-per-prompt 4\n"))


# -------------------------------------------------------------------------------------------- OpenRLHF

def test_openrlhf_counts_prompts():
    imp = configs.load(EX / "openrlhf_ppo.sh")
    assert imp.framework == "openrlhf"
    sc = imp.scenario
    assert (sc.batch_size, sc.group_size) == (128 * 8, 8)
    assert sc.pipeline == OneStepAsync()
    assert imp.layout == configs.Layout(rollout_gpus=8, train_gpus=8, colocated=False, rollout_tp=2, slots_per_engine=256)
    assert sc.lengths.max_tokens == 4096.0


def test_openrlhf_queue_and_colocation(tmp_path):
    p = write(tmp_path, "o.sh", "python -m openrlhf.cli.train_ppo_ray --rollout.batch_size 8 "
                                "--rollout.n_samples_per_prompt 2 --train.async_enable --train.async_queue_size 3\n")
    assert configs.load(p).scenario.pipeline == OffPolicy(k=3)
    # train_ppo_ray.py: "Using --colocate_all_models in async RLHF only colocates DeepSpeed models"
    q = write(tmp_path, "q.sh", "python -m openrlhf.cli.train_ppo_ray --train.async_enable --train.colocate_all "
                                "--vllm.num_engines 2 --vllm.tensor_parallel_size 2\n")
    imp = configs.load(q)
    assert imp.scenario.pipeline == OneStepAsync() and not imp.layout.colocated and imp.layout.rollout_gpus == 4
    c = write(tmp_path, "c.sh", "python -m openrlhf.cli.train_ppo_ray --train.colocate_all --vllm.num_engines 4 "
                                "--vllm.tensor_parallel_size 1\n")
    with pytest.raises(ScenarioError, match=r"^--vllm.num_engines: with --train.colocate_all, vllm.num_engines x "
                                            r"vllm.tensor_parallel_size must equal the actor's GPUs \(1 x 8 = 8\), "
                                            r"got 4 x 1 = 4$"):
        configs.load(c)
    sync = configs.load(write(tmp_path, "s.sh", "python -m openrlhf.cli.train_ppo_ray --train.colocate_all\n"))
    assert sync.layout.colocated and sync.layout.engines == 8 and sync.scenario.pipeline == Synchronous()
    with pytest.raises(ScenarioError, match=r"^--train.partial_rollout_enable: requires --train.async_enable"):
        configs.load(write(tmp_path, "pr.sh", "python -m openrlhf.cli.train_ppo_ray --train.partial_rollout_enable\n"))


# ---------------------------------------------------------------------------------------- shared rules

@pytest.mark.parametrize("name", ["verl_grpo.yaml", "verl_fully_async.sh", "areal_grpo.yaml", "slime_async.sh",
                                  "openrlhf_ppo.sh"])
def test_every_option_given_is_noted(name):
    """Nothing a user gave is lost: every option of the file appears in ``.notes``."""
    imp = configs.load(EX / name)
    noted = {n.option for n in imp.notes}
    path = EX / name
    if path.suffix == ".yaml":
        given = {k for k, v in flatten(configs._common.read_yaml(path)).items() if v is not None}
        given -= {"defaults"}
    else:
        words = configs._common.split_command(path.read_text())
        given = {w.partition("=")[0] for w in words if w.startswith("--")} or set()
        if imp.framework == "verl":
            given = {w.partition("=")[0] for w in words if "=" in w and not w.startswith("-")}
    assert given - noted == set()
    assert {n.kind for n in imp.notes} <= {"read", "default", "assumed", "ignored"}


@pytest.mark.parametrize("name", ["verl_grpo.yaml", "verl_fully_async.sh", "areal_grpo.yaml", "slime_async.sh",
                                  "openrlhf_ppo.sh"])
def test_examples_run_end_to_end(name, capsys):
    imp = configs.load(EX / name)
    assert imp.sync is not None and imp.sync.model.name.lower().startswith("qwen3-4b")
    assert math.isfinite(imp.scenario.weight_sync_s) and imp.scenario.weight_sync_s > 0
    res = rollsim.simulate(imp.scenario.replace(horizon_s=3000.0), record="summary")
    assert res.summary["steps"] >= 1
    assert main(["import", str(EX / name)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"rollsim import: {imp.framework} config ")
    assert main(["import", str(EX / name), "--toml"]) == 0
    toml = capsys.readouterr().out
    assert rollsim.Scenario.from_toml_str(toml) == imp.scenario
    assert main(["run", "--config", str(EX / name), "--horizon-s", "2000"]) == 0
    assert '"steps"' in capsys.readouterr().out


def test_compare_config(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.GenerationOutrunsTrainingWarning)  # the uncapped fully async row
        assert main(["compare", "--config", str(EX / "verl_grpo.yaml"), "--horizon-s", "3000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("rollsim compare: 4096 slots x 30 tokens/s, batch 2048, 60 s/step")
    assert "group_size=8" in out.splitlines()[0]


def test_deployment_with_gpu():
    imp = configs.load(EX / "areal_grpo.yaml", gpu="H100")
    d = imp.deployment
    assert d is not None and d.rollout_gpus == 12 and d.train_gpus == 4 and d.engine == "sglang"
    assert configs.load(EX / "areal_grpo.yaml").deployment is None


def test_bad_framework_and_file(tmp_path, capsys):
    with pytest.raises(ScenarioError, match=r"^framework: must be one of verl, areal, slime, openrlhf, got 'ray'$"):
        configs.load(EX / "verl_grpo.yaml", "ray")
    with pytest.raises(ScenarioError, match=r"^framework: cannot tell which framework x.yaml is for"):
        configs.load(write(tmp_path, "x.yaml", "foo: 1\n"))
    assert main(["import", str(tmp_path / "missing.yaml")]) == 2
    assert capsys.readouterr().err.startswith("rollsim: error: config: no such file: ")


def test_launch_script_shell_variables(tmp_path):
    """Launch scripts set their values in shell variables (as verl's recipe scripts do)."""
    p = write(tmp_path, "dapo.sh", """\
        #!/usr/bin/env bash
        set -xeuo pipefail
        RAY_DATA_HOME=${RAY_DATA_HOME:-"${HOME}/verl"}
        MODEL_PATH=${MODEL_PATH:-"${RAY_DATA_HOME}/models/Qwen3-4B"}
        max_prompt_length=$((1024 * 2))
        max_response_length=$((1024 * 28))
        actor_ppo_max_token_len=$(((max_prompt_length + max_response_length) * 2))
        NNODES_ROLLOUT=${NNODES_ROLLOUT:-2}
        export NGPUS_PER_NODE=8
        n_resp_per_prompt=16
        python -m verl.experimental.fully_async_policy.fully_async_main \\
            data.max_prompt_length=${max_prompt_length} \\
            data.max_response_length=${max_response_length} \\
            actor_rollout_ref.model.path="${MODEL_PATH}" \\
            actor_rollout_ref.rollout.n=${n_resp_per_prompt} \\
            actor_rollout_ref.actor.ppo_max_token_len_per_gpu=${actor_ppo_max_token_len} \\
            actor_rollout_ref.actor.ppo_mini_batch_size=32 \\
            async_training.require_batches=4 \\
            rollout.nnodes="${NNODES_ROLLOUT}" rollout.n_gpus_per_node="${NGPUS_PER_NODE}" \\
            trainer.nnodes=$NNODES_TRAIN
        """)
    imp = configs.load(p, overrides=["trainer.nnodes=2"])
    assert imp.scenario.lengths.max_tokens == 28672.0
    assert imp.scenario.batch_size == 4 * 32 * 16 and imp.scenario.sync_every == 4  # trigger_parameter_sync_step's default
    assert imp.layout.rollout_gpus == 16
    assert imp.model.endswith("/verl/models/Qwen3-4B") and imp.sync is not None
    (n,) = kinds(imp, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu")
    assert n.value == "61440" and n.kind == "ignored"
    with pytest.raises(ScenarioError, match=r"^trainer.nnodes: must be an integer in the verl config, got str "
                                            r"'\$NNODES_TRAIN'$"):
        configs.load(p)


# ------------------------------------------------------------------------------ defaults against the frameworks

def test_verl_engine_size_and_required_name(tmp_path):
    """An inference server spans tensor x data x pipeline parallel GPUs (verl agent_loop.py rollout_world_size);
    rollout.name is required by verl ('name: ???'): vllm is assumed and noted."""
    p = write(tmp_path, "c.yaml", "actor_rollout_ref: {rollout: {tensor_model_parallel_size: 2, data_parallel_size: 2}}\n"
                                  "trainer: {nnodes: 2, n_gpus_per_node: 8}\n")
    imp = configs.load(p)
    assert imp.layout.engines == 16 // 4 and imp.scenario.rollout_slots == 4 * 256
    (n,) = kinds(imp, "actor_rollout_ref.rollout.name")
    assert (n.kind, n.value) == ("assumed", "???")


def test_areal_consumer_batch_is_the_admission_unit(tmp_path):
    """A step trains train_dataset.batch_size rollouts (prepare_batch waits for dataloader.batch_size);
    consumer_batch_size only sizes the staleness rule and max_concurrent_rollouts' default."""
    p = write(tmp_path, "a.yaml", """\
        rollout: {backend: 'vllm:d2t2', consumer_batch_size: 8, max_head_offpolicyness: 1000000000}
        actor: {backend: 'megatron:(attn:d2p2t1c2|ffn:d1p2e4)'}
        gconfig: {n_samples: 4}
        train_dataset: {batch_size: 32}
        """)
    imp = configs.load(p)
    assert imp.scenario.batch_size == 32 * 4
    assert imp.scenario.pipeline.admission_eta == 10**9
    # slots: min(max_concurrent_rollouts = consumer_batch_size 8 prompts x 4, 2 vLLM engines x max_num_seqs 256)
    assert imp.scenario.rollout_slots == 8 * 4
    assert imp.layout.train_gpus == 2 * 2 * 1 * 2      # the attention part's d x p x t x c
    (n,) = kinds(imp, "rollout.consumer_batch_size")
    assert n.kind == "assumed" and "(eta + version + 1) x 8 rollouts" in n.became
    (n,) = kinds(imp, "vllm.max_num_seqs")
    assert (n.kind, n.value) == ("default", "256")     # vLLMConfig.max_num_seqs = 256


def test_slime_absent_global_batch_is_assumed(tmp_path):
    imp = configs.load(write(tmp_path, "s.sh", "python train.py --rollout-batch-size 8 --n-samples-per-prompt 4\n"))
    (n,) = kinds(imp, "--global-batch-size")
    assert n.kind == "assumed" and n.became.startswith("1 optimizer steps of 32 samples per rollout")


# ------------------------------------------------------------------------------------ unknown options (typos)

def test_unknown_verl_override_is_noted_with_the_closest_names(tmp_path):
    imp = configs.load(EX / "verl_grpo.yaml", overrides=["actor_rollout_ref.rollout.nn=8", "+data.new_key=3",
                                                         "actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4",
                                                         "async_training.stalenes_threshold=0.2"])
    assert imp.warnings() == [
        "rollsim: warning: actor_rollout_ref.rollout.nn=8: unknown option (did you mean 'actor_rollout_ref.rollout.n' "
        "or 'actor_rollout_ref.rollout.nnodes' or 'actor_rollout_ref.rollout.name'?)",
        "rollsim: warning: async_training.stalenes_threshold=0.2: unknown option (did you mean "
        "'async_training.staleness_threshold'?)"]
    assert imp.scenario.group_size == 8            # the typo changed nothing
    assert kinds(imp, "data.new_key")[0].became == "ignored: not modelled by rollsim"   # '+' adds a key: not checked
    # a script: environment assignments before the command are not options
    p = write(tmp_path, "run.sh", "HYDRA_FULL_ERROR=1 python3 -m verl.trainer.main_ppo data.train_batch_sz=8 zzz.qqq=1\n")
    assert [n.became for n in configs.load(p).unknown_options] == [
        "ignored: unknown option (did you mean 'data.train_batch_size' or 'data.val_batch_size' or "
        "'data.gen_batch_size'?)", "ignored: unknown option (verl has none such)"]
    assert configs.load(EX / "verl_fully_async.sh").unknown_options == ()


def test_unknown_areal_and_openrlhf_names(tmp_path):
    p = write(tmp_path, "a.yaml", """\
        rollout: {backend: 'sglang:d2'}
        actor: {backend: 'fsdp:d2', behave_imp_weight_cap: 5.0}
        gconfig: {n_sample: 4}
        my_env: {turns: 3}
        """)
    imp = configs.load(p)
    assert [n.option for n in imp.unknown_options] == ["actor.behave_imp_weight_cap", "gconfig.n_sample"]
    assert kinds(imp, "gconfig.n_sample")[0].became == ("ignored: unknown option (did you mean 'gconfig.n_samples' or "
                                                        "'eval_gconfig.n_samples'?)")
    assert kinds(imp, "my_env.turns")[0].became == "ignored: not modelled by rollsim"   # a script's own section
    assert configs.load(EX / "areal_grpo.yaml").unknown_options == ()
    o = configs.load(EX / "openrlhf_ppo.sh", overrides=["--rollout.batch_sizee", "8", "--actor.adam.lr", "1e-6"])
    assert o.warnings() == ["rollsim: warning: --rollout.batch_sizee=8: unknown option (did you mean "
                            "'--rollout.batch_size' or '--rollout.micro_batch_size'?)"]
    assert o.scenario.batch_size == 128 * 8


def test_cli_prints_unknown_options_on_stderr(tmp_path, capsys):
    assert main(["import", str(EX / "verl_grpo.yaml"), "data.max_respons_length=64", "--toml"]) == 0
    cap = capsys.readouterr()
    assert cap.err == ("rollsim: warning: data.max_respons_length=64: unknown option (did you mean "
                       "'data.max_response_length' or 'data.max_prompt_length'?)\n")
    assert rollsim.Scenario.from_toml_str(cap.out) == configs.load(EX / "verl_grpo.yaml").scenario
    p = write(tmp_path, "run.sh", "python3 -m verl.trainer.main_ppo data.train_batch_size=8 "
                                  "actor_rollout_ref.rollout.nn=2\n")
    assert main(["run", "--config", str(p), "--horizon-s", "600"]) == 0
    assert capsys.readouterr().err.startswith("rollsim: warning: actor_rollout_ref.rollout.nn=2: unknown option "
                                              "(did you mean 'actor_rollout_ref.rollout.n'")


@pytest.mark.parametrize("framework, name, text", [
    ("verl", "c.yaml", "data: {train_batch_size: 8}\n"),
    ("verl", "one_step_off_ppo.yaml", "defaults: [ppo_trainer, _self_]\nrollout: {nnodes: 1}\n"),
    ("verl", "fa.sh", "python -m verl.experimental.fully_async_policy.fully_async_main async_training.require_batches=2\n"),
    ("areal", "a.yaml", "rollout: {backend: 'vllm:d2'}\nactor: {backend: 'fsdp:d2'}\n"),
    ("areal", "b.yaml", "allocation_mode: sglang.d2p1t1+d2p1t1\ngconfig: {n_samples: 2}\n"),
    ("openrlhf", "o.sh", "python -m openrlhf.cli.train_ppo_ray --train.async_enable\n"),
])
def test_every_option_an_importer_reads_is_the_frameworks(tmp_path, framework, name, text):
    """The names an importer reads or defaults exist in the framework's option list (so that a default
    is never taken for an option the framework does not have), and a config of those names has no
    unknown option."""
    from rollsim.configs._common import known_options

    imp = configs.load(write(tmp_path, name, text), framework)
    known, _ = known_options(framework)
    read = [n.option for n in imp.notes if not n.option.startswith("(") and n.kind != "ignored"]
    assert len(read) >= 8 and [o for o in read if o not in known] == []
    assert imp.unknown_options == ()
