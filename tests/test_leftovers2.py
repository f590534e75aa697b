"""Review leftovers in the Python layer: split and compare over the same horizon, the example metrics'
names from the calibration's table, the training-state words built once, a Megatron layout derived once,
the colocated switch priced on the deployment already built, vLLM's per-GPU engine defaults and
Megatron's expert-parallel folding."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from rollsim.calibration import FRAMEWORK_METRICS

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------- example metrics' names


def test_slime_example_names_are_the_calibrations(monkeypatch):
    """The script's slime columns are FRAMEWORK_METRICS' names (it retyped them): renamed there, renamed here."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")
    cols = gen["slime"]().columns
    assert cols == ["rollout/step", "perf/step_time", "perf/rollout_time", "perf/actor_train_time",
                    "perf/update_weights_time", "rollout/response_len/mean", "rollout/response_len/max",
                    "rollout/truncated_ratio"]
    monkeypatch.setitem(FRAMEWORK_METRICS["slime"], "gen_s", [["perf/renamed_rollout_time"]])
    assert gen["slime"]().columns == [c if c != "perf/rollout_time" else "perf/renamed_rollout_time" for c in cols]


# ---------------------------------------------------------------------------------------- the training-state words


def test_the_training_state_words_are_built_once(capsys):
    """The deployment's warning, split's exclusion and hardware's line say the training state in the words of
    one function (each wrote its own: three spellings of the same bound)."""
    from rollsim.cli import _train_state_gpus, main
    from rollsim.hardware import Deployment
    from rollsim.hardware.switching import train_state_words

    d = Deployment("Qwen3-30B-A3B", "H100", rollout_gpus=8, train_gpus=4)
    need, words = train_state_words(d.spec, d.accelerator, 4)
    assert need == 7 and words == (
        "the training state of Qwen3-30B-A3B (30.5B parameters x 18 bytes = 512 GiB: weights, gradients, Adam; "
        "128.0 GiB per GPU on 4 GPUs; it needs at least 7 x H100 of 80 GiB, before activations)")
    assert d.train_state_words() == f"train_gpus: 4 x H100 cannot hold {words}, or a trainer that offloads it " \
                                    "(priced as if it fit)"
    bare = train_state_words(d.spec, d.accelerator)[1]
    assert bare == words.replace("128.0 GiB per GPU on 4 GPUs; ", "")
    assert _train_state_gpus(d) == (7, f" ({bare}; a trainer that offloads it: --min-train-gpus 1)")
    assert main(["hardware", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--rollout-gpus", "8", "--train-gpus", "4",
                 "--train-tokens", "1e5"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"  {words}: does not fit (or a trainer that offloads it)"


# ---------------------------------------------------------------------------------------- split and compare agree


def test_split_rates_are_compares_over_the_same_horizon():
    """split's tokens_trained_per_s divided each run's tokens by its own end: the colocated synchronous
    row, whose last step ends after the horizon, and a fully async step still training at the horizon
    were counted beyond what the other rows could finish. Now every row is compare's rate."""
    import polars as pl

    from rollsim import FullyAsync, Scenario, Synchronous, compare, resources, simulate

    sc = Scenario(horizon_s=3 * 3600.0, pipeline=FullyAsync(max_staleness=2))
    kw = dict(gpus_per_instance=1, slots_per_instance=16, gpu_s_per_token=0.004, train_fixed_s=5.0)
    res = resources.gpu_split(sc, 16, rollout_gpus=[6], colocated_switch_s=15.0, **kw)
    split_row, co = res.table.row(0, named=True), res.table.row(1, named=True)
    one = resources.disaggregated(sc, rollout_gpus=6, train_gpus=10, **kw)
    both = resources.colocated(sc.replace(pipeline=Synchronous()), 15.0, 0.0, gpus=16, **kw)
    assert split_row["tokens_trained_per_s"] == compare(one, [("fa", one.pipeline)])["tokens_trained_per_s"][0]
    assert co["tokens_trained_per_s"] == compare(both, [("sync", Synchronous())])["tokens_trained_per_s"][0]
    assert (round(split_row["tokens_trained_per_s"]), round(co["tokens_trained_per_s"])) == (2302, 1461)
    assert split_row["tokens_per_s_per_gpu"] == split_row["tokens_trained_per_s"] / 16
    # before: over each run's own end, 2,443 and 1,519
    own = []
    for row, sc1 in ((split_row, one), (co, both)):
        run = simulate(sc1, record="summary")
        assert run.summary["end_s"] >= sc1.horizon_s
        done = run.steps.filter(pl.col("completed") & (pl.col("end_s") <= sc1.horizon_s))
        assert row["steps_by_horizon"] == done.height
        own.append(round(run.summary["tokens_trained"] / run.summary["end_s"]))
    assert own == [2443, 1519]


# ---------------------------------------------------------------------------------------- Megatron's expert grid


def test_expert_parallel_folds_over_tensor_context_and_data_parallel():
    """Megatron-Core's MoE parallel folding: the expert grid is expert TP x EP x expert DP x PP over the same GPUs
    (NVIDIA/Megatron-LM megatron/core/parallel_state.py, initialize_model_parallel; expert TP defaults to TP). EP 8
    needed 8 data-parallel ranks: TP 1 x CP 2 and TP 2 with expert TP 1 on 8 GPUs were refused; Megatron runs them."""
    from rollsim.hardware import training as tr

    kw = dict(tokens=512 * 4096.0, sequences=512, backend="megatron")
    plain = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=8, expert_parallel=8, **kw)
    cp = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=8, context_parallel=2, expert_parallel=8, **kw)
    etp1 = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=8, tensor_parallel=2, expert_parallel=8,
                           expert_tensor_parallel=1, **kw)
    # each GPU sends its share of its rank's tokens to the 8 GPUs of its node: the same all-to-all in all three
    assert round(plain["ep_comm"], 3) == round(cp["ep_comm"], 3) == round(etp1["ep_comm"], 3) == 5.708
    assert (round(plain["total"], 3), round(etp1["total"], 3)) == (28.127, 30.571)  # TP 2's all-reduces: 2.443 s
    assert round(etp1["tp_comm"], 3) == 2.443
    lay = tr.parallel_layout(8, tensor_parallel=2, expert_parallel=8, expert_tensor_parallel=1)
    assert (lay.data_parallel, lay.expert_data_parallel, lay.model_parallel) == (4, 1, 2)
    # on 16 GPUs, expert TP 2 spreads the EP 8 group over two nodes (ranks 2 GPUs apart): the NIC carries it
    wide = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=16, tensor_parallel=2, expert_parallel=8, **kw)
    near = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=16, tensor_parallel=2, expert_parallel=8,
                           expert_tensor_parallel=1, **kw)
    assert (round(wide["ep_comm"], 3), round(near["ep_comm"], 3)) == (5.481, 2.854)
    with pytest.raises(ValueError, match=r"^expert_parallel: expert_tensor_parallel x expert_parallel x "
                                         r"pipeline_parallel \(2 x 8 x 1 = 16; expert_tensor_parallel defaults"):
        tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=8, tensor_parallel=2, expert_parallel=8, **kw)


def test_a_config_layout_is_derived_once(tmp_path, monkeypatch):
    """build checked the layout by pricing a dummy training step on the deployment and sync_cluster derived the
    data-parallel size again: now one parallel_layout, which both take; slime's --expert-tensor-parallel-size
    reaches it."""
    from rollsim import configs
    from rollsim.hardware import Deployment
    from rollsim.hardware import training as tr

    calls: list[dict] = []
    real = tr.parallel_layout

    def counted(*a, **k):
        calls.append(k)
        return real(*a, **k)

    monkeypatch.setattr(tr, "parallel_layout", counted)
    monkeypatch.setattr(Deployment, "train_step_s", lambda *a, **k: pytest.fail("a dummy training step was priced"))
    p = tmp_path / "s.sh"
    p.write_text("python3 train.py --hf-checkpoint /root/Qwen3-30B-A3B --actor-num-gpus-per-node 8 "
                 "--rollout-batch-size 8 --tensor-model-parallel-size 2 --expert-model-parallel-size 8 "
                 "--expert-tensor-parallel-size 1\n")
    imp = configs.load(p, gpu="H100")
    assert len(calls) == 1 and calls[0]["expert_tensor_parallel"] == 1
    assert imp.deployment.train_options == {"tensor_parallel": 2, "expert_parallel": 8, "expert_tensor_parallel": 1}
    assert (imp.sync.train.tp, imp.sync.train.ep, imp.sync.train.dp) == (2, 8, 4)


# ---------------------------------------------------------------------------------------- the colocated switch


def test_split_colocated_switch_auto_reuses_the_deployment(tmp_path, monkeypatch):
    """``split --hf-config F --colocated-switch-s auto`` built the deployment from the flags a second time for
    the switch, reading F again; now the switch is priced on the deployment the split built (one read), and
    is the same seconds as that deployment's colocated switch."""
    import json

    from rollsim import resources
    from rollsim.cli import main
    from rollsim.hardware import Deployment, specs

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(specs.HF_CONFIGS["Qwen3-8B"][1]))
    reads: list[str] = []
    real = specs.model_from_hf_config

    def counted(path, *a, **k):
        reads.append(str(path))
        return real(path, *a, **k)

    seen: dict = {}

    class Seen(Exception):
        pass

    def capture(base, gpus, **kw):
        seen.update(kw)
        raise Seen

    monkeypatch.setattr(specs, "model_from_hf_config", counted)
    monkeypatch.setattr(resources, "gpu_split", capture)
    with pytest.raises(Seen):
        main(["split", "--gpus", "16", "--hf-config", str(cfg), "--gpu", "H100", "--colocated-switch-s", "auto"])
    assert reads == [str(cfg)]
    want = Deployment(model=real(cfg), gpu="H100", rollout_gpus=16, rollout_tp=1, train_gpus=16,
                      colocated=True).switch_s()["total"]
    assert seen["colocated_switch_s"] == want and 0.1 < want < 10


# ---------------------------------------------------------------------------------------- vLLM's defaults per GPU


@pytest.mark.parametrize("gpu, seqs, budget", [("H100", 1024, 8192), ("H20", 1024, 8192), ("A800", 1024, 8192),
                                               ("A100-80G", 256, 2048), ("A100-40G", 256, 2048), ("L40S", 256, 2048)])
def test_deployment_takes_vllms_defaults_for_its_gpu(gpu, seqs, budget):
    """vLLM's API server takes max_num_seqs 1024 and max_num_batched_tokens 8192 on GPUs of 70 GiB or more that
    are not A100s, 256 and 2048 on the rest (vllm/engine/arg_utils.py, EngineArgs._set_default_args); the
    deployment took 1024 and 8192 on every GPU."""
    from rollsim import LogNormal
    from rollsim.hardware import Deployment

    d = Deployment("Qwen3-8B", gpu, rollout_gpus=2, train_gpus=4)
    sc = d.scenario(lengths=LogNormal(6.0, 0.5, 4096.0), prompts_per_step=8, group_size=8, prompt_tokens=256.0)
    assert (d.slots_per_instance, sc.slots_per_instance, sc.max_num_batched_tokens) == (seqs, seqs, budget)
    assert sc.rollout_slots == 2 * seqs
    words = d.defaults_words(sc.max_num_batched_tokens)
    assert words.startswith(f"max_num_seqs {seqs} and max_num_batched_tokens {budget:,}, vLLM's API-server defaults "
                            f"on {d.accelerator.name} (")
    assert words.endswith("256 and 2048 on the rest: vllm/engine/arg_utils.py, EngineArgs._set_default_args)")
    given = Deployment("Qwen3-8B", gpu, rollout_gpus=2, train_gpus=4, max_num_seqs=512)
    gs = given.scenario(lengths=LogNormal(6.0, 0.5, 4096.0), prompts_per_step=8, group_size=8, prompt_tokens=256.0,
                        max_num_batched_tokens=4096)
    assert (gs.slots_per_instance, gs.max_num_batched_tokens) == (512, 4096)   # given: kept
    assert given.defaults_words(4096) == ""


def test_run_model_says_which_defaults_it_took(capsys):
    from rollsim.cli import main

    assert main(["run", "--model", "Qwen3-8B", "--gpu", "A100-80G", "--rollout-gpus", "1", "--train-gpus", "2",
                 "--horizon-s", "600", "--batch-size", "64", "--group-size", "8"]) == 0
    err = capsys.readouterr().err
    assert "(1 vllm instance of TP 1 x 256 slots = 256 slots)" in err
    assert ("; engine defaults: max_num_seqs 256 and max_num_batched_tokens 2,048, vLLM's API-server defaults on "
            "A100-80G (an A100; vLLM takes 1024 sequences") in err
