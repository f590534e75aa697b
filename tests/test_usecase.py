"""A user's questions end to end (32 H100s, Qwen3-30B-A3B, a 3,000-token mean answer): the Python and
command-line paths give the same numbers and the output names what it assumed.

* ``rollsim hardware`` prints the KV capacity the deployment's scenario (and ``split --model``) runs
  with: whole tokens, rounded down (it printed 138,494 where the scenario holds 138,493).
* ``rollsim split --model`` names the model, accelerator, engine and training backend it priced,
  and says the weight sync is not priced when it is left at 0 s.
* ``split --model`` with a model-parallel training layout (``--train-option expert_parallel=8``)
  prices the trainer on the fewest GPUs the layout allows (it was refused: "must divide train_gpus (1)").
* A header's step with per-token training costs is the step at the mean length, not the fixed part.
"""

from __future__ import annotations

import pytest

from rollsim import DeploymentWarning, LogNormal, resources
from rollsim.cli import main, scenario_header
from rollsim.hardware import Deployment
from rollsim.hardware.training import train_step_s

MEAN_3000 = LogNormal(mu=7.55, sigma=1.0, max_tokens=16384)  # truncated mean 3,000 tokens (2,999.9)


def _scenario(d, **kw):
    """``d.scenario(...)`` of a deployment whose training GPUs cannot hold Qwen3-30B-A3B's training state
    (7 H100s): priced all the same, with a DeploymentWarning saying so; an agentic preset's bound of 512
    trajectories below the deployment's slots gets one too."""
    with pytest.warns(DeploymentWarning) as got:
        s = d.scenario(**kw)
    words = [str(w.message) for w in got]
    assert any("cannot hold the training state of Qwen3-30B-A3B " in w for w in words)
    assert all("cannot hold the training state" in w or w.startswith("agentic.max_trajectories: 512 is below")
               for w in words)
    return s


def test_hardware_prints_the_kv_capacity_the_scenario_runs_with(capsys):
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=1, rollout_tp=1, train_gpus=1)
    assert d.kv_capacity_tokens() == pytest.approx(138493.84, abs=0.01)
    s = _scenario(d, lengths=MEAN_3000, prompts_per_step=64, group_size=8, per_rank=False)
    assert s.kv_cache_tokens == 138493.0
    assert main(["hardware", "--model", "Qwen3-30B-A3B", "--gpu", "H100"]) == 0
    assert "KV capacity 138,493 tokens per instance" in capsys.readouterr().out.splitlines()[1]
    assert "KV capacity 138,493 tokens per instance" in d.breakdown()


class _Seen(Exception):
    pass


def _split_inputs(monkeypatch, *args):
    seen = {}

    def capture(base, gpus, **kw):
        seen.update(kw, base=base, gpus=gpus)
        raise _Seen

    monkeypatch.setattr(resources, "gpu_split", capture)
    with pytest.raises(_Seen):
        main(["split", *args])
    return seen


def test_split_prices_an_expert_parallel_trainer_on_its_group(monkeypatch):
    seen = _split_inputs(monkeypatch, "--gpus", "32", "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--mu", "7.55",
                         "--group-size", "8", "--train-backend", "megatron", "--train-option", "expert_parallel=8")
    base = seen["base"]
    tokens = base.batch_size * base.lengths.mean_tokens()
    want = train_step_s("Qwen3-30B-A3B", "H100", train_gpus=8, tokens=tokens, sequences=base.batch_size,
                        backend="megatron", expert_parallel=8)
    assert want["ep_comm"] > 4.0  # the layout's all-to-all is priced
    step_on_8 = (seen["gpu_s_per_token"] * tokens + seen["train_gpu_s_per_step"]) / 8
    assert step_on_8 == pytest.approx(want["total"], rel=1e-9)
    assert step_on_8 == pytest.approx(19.76, abs=0.01)


def test_split_header_names_the_deployment_and_the_unpriced_sync(capsys):
    assert main(["split", "--gpus", "4", "--model", "Qwen3-0.6B", "--gpu", "H100", "--horizon-s", "300"]) in (0, 1)
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("rollsim split: 4 GPUs (Qwen3-0.6B on H100: vllm at gpu_memory_utilization 0.9 (its "
                           "default), training fsdp2), rollout 1-3 (instances of 1 GPU x 1024 slots x the deployment's "
                           "decode table, KV capacity 640,752 tokens per instance), training the rest at ")
    assert head.endswith(", weight sync not priced (0 s per update: give --weight-sync-s and --rollout-pause-s, e.g. "
                         "from rollsim sync)")
    assert main(["split", "--gpus", "4", "--model", "Qwen3-0.6B", "--gpu", "H100", "--horizon-s", "300", "--engine",
                 "sglang", "--gpu-memory-utilization", "0.8", "--weight-sync-s", "2"]) in (0, 1)
    head = capsys.readouterr().out.splitlines()[0]
    assert "4 GPUs (Qwen3-0.6B on H100: sglang at gpu_memory_utilization 0.8, training fsdp2), rollout" in head
    assert "weight sync not priced" not in head and "weight_sync_s=2" in head
    # without a deployment the header is as before
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "1e-3", "--horizon-s", "300"]) in (0, 1)
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("rollsim split: 4 GPUs, rollout 1-3 (") and "weight sync" not in head


def test_header_step_with_per_token_costs_is_the_step_at_the_mean_length():
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=26, rollout_tp=1, train_gpus=6)
    s = _scenario(d, lengths=MEAN_3000, prompts_per_step=64, group_size=8, per_rank=False)
    step = s.train_step_s + s.train_s_per_token * s.batch_size * s.lengths.mean_tokens()
    assert step == pytest.approx(30.82, abs=0.01)  # as rollsim hardware --train-tokens prices 512 x 3,000 on 6 GPUs
    want = train_step_s("Qwen3-30B-A3B", "H100", train_gpus=6, tokens=512 * s.lengths.mean_tokens(), sequences=512)
    assert step == pytest.approx(want["total"], rel=1e-9)
    head = scenario_header("compare", s)
    assert head.startswith("rollsim compare: 26624 slots x 153.76 tokens/s, batch 512, ~30.8 s/step at the mean length "
                           "(0.0651 s + 2e-05 s per token), 2 h, ")
    # a fixed step alone is said as before
    assert "batch 512, 60 s/step, 2 h" in scenario_header("compare", s.replace(train_s_per_token=0.0,
                                                                                train_step_s=60.0))


def test_agentic_deployment_prices_the_later_turns_prefill():
    """An agentic scenario of a deployment prefilled its later turns for free (``prefill_tokens_per_s``
    inf: ``gpu_prefill_s`` 0 while 65 M context tokens were re-prefilled with ``kv_policy="drop"``)."""
    import dataclasses
    import math

    from rollsim import simulate, trajectories

    ci = trajectories.code_interpreter_math()
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=2, rollout_tp=1, train_gpus=1)
    ag = dataclasses.replace(ci.agentic, max_context_tokens=32768.0, kv_policy="drop")
    kw = dict(lengths=ci.lengths, prompts_per_step=8, group_size=8, per_rank=False, horizon_s=1200.0, agentic=ag)
    s = _scenario(d, **kw)
    c = ci.lengths.mean_tokens()
    assert s.prefill_tokens_per_s == pytest.approx(c / d.prefill_s(c), rel=1e-12)
    assert s.prefill_tokens_per_s == pytest.approx(29336, abs=1)
    r = simulate(s, record="summary").summary
    assert r["tokens_prefilled_turns"] > 0 and r["gpu_prefill_s"] > 0
    # the first-turn prompt is no longer folded into the table as well (no double count): the table without a
    # prefill term, at the trajectory's mean turn context (hardware.deployment.decode_context_tokens)
    from rollsim.hardware import serving
    from rollsim.hardware.deployment import decode_context_tokens

    def unfolded(prompt):
        ctx = decode_context_tokens(prompt, ci.lengths, ag)
        t = serving.decode_throughput_table(d.spec, d.accelerator, tp=1, context_tokens=ctx, max_seqs=d.slots_per_instance,
                                            engine=d.engine, prefill_tokens_per_token=0.0)
        return tuple((int(n), float(v)) for n, v in t)

    assert s.decode_throughput_table == unfolded(0.0)
    with_prompt = _scenario(d, **{**kw, "prompt_tokens": 400.0})
    folded = _scenario(d, **{**kw, "prompt_tokens": 400.0, "agentic": None, "prefill_mode": "per_slot"})
    assert with_prompt.decode_throughput_table != folded.decode_throughput_table
    assert with_prompt.decode_throughput_table == unfolded(400.0)
    # a speed given is kept (and free prefill is still there on request)
    assert math.isinf(_scenario(d, **kw, prefill_tokens_per_s=math.inf).prefill_tokens_per_s)
    # shared prefill: the engine's shared prefill speed, even with no prompt
    sh = _scenario(d, **kw, prefill_mode="shared")
    assert sh.prefill_tokens_per_s == pytest.approx(d.prefill_tokens_per_s(0.0, 8192.0), rel=1e-12)


def test_split_takes_areals_admission_rule(monkeypatch, capsys):
    """``split --admission-eta`` bounds staleness without dropping (AReaL); before, split had only the
    drop-at-consumption cap."""
    from rollsim import FullyAsync

    seen = _split_inputs(monkeypatch, "--gpus", "8", "--gpu-s-per-token", "1e-4", "--admission-eta", "1",
                         "--max-staleness", "3")
    assert seen["base"].pipeline == FullyAsync(max_staleness=3, admission_eta=1)
    monkeypatch.undo()
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "1e-4", "--slots-per-instance", "256", "--horizon-s",
                 "1200", "--admission-eta", "1"]) in (0, 1)
    out = capsys.readouterr().out.splitlines()
    assert ", pipeline fully-async admission_eta=1; objective" in out[0]
    rows = [r.split() for r in out[2:5]]
    assert [r[9] for r in rows] == ["0.0%", "0.0%", "0.0%"]      # nothing dropped
    assert [r[10] for r in rows] == ["0.54", "0.84", "0.83"]      # mean staleness under 1 (uncapped: 0.54, 1.41, 2.55)
    # the verdict says the staleness the recommendation trains at (no limit bounds it by default)
    assert out[-1].startswith("best: 2 rollout + 2 training GPUs, 10656 tokens trained/s at mean staleness 0.84 "
                              "(limits: ")


def test_no_step_from_groups_spread_over_the_pool_says_so():
    """Enough answers finished but no batch of whole groups: the warning said "add rollout_slots",
    the opposite of what helps (a 26,624-slot agentic pool kept 3,328 groups in flight)."""
    from rollsim import Empirical, FullyAsync, NoTrainingStepWarning, Scenario, simulate
    from rollsim.simulation import no_training_step_message

    # 640 slots in 10 groups of 64; a batch is one group; one answer in 10 is too long to finish, so
    # a group finishes whole with probability 0.9**64 = 0.1 %
    lengths = Empirical([100.0, 1e6], weights=[0.9, 0.1])
    sc = Scenario(rollout_slots=640, decode_tokens_per_s=10.0, batch_size=64, group_size=64, train_step_s=1.0,
                  horizon_s=60.0, lengths=lengths, pipeline=FullyAsync())
    with pytest.warns(NoTrainingStepWarning) as w:
        r = simulate(sc, record="summary")
    assert r.summary["steps_started"] == 0 and r.summary["samples_finished"] >= sc.batch_size
    msg = str(w[0].message)
    assert msg == no_training_step_message(sc, r.summary)
    assert "a batch takes 1 whole group of group_size = 64" in msg
    assert "(the 640 slots keep about 10 groups in flight)" in msg
    assert msg.endswith("Lengthen horizon_s, or bound the groups in flight: fewer rollout_slots, "
                        "pipeline.max_lag_samples or pipeline.admission_eta.")
    assert "add rollout_slots" not in msg


def test_deployment_gpu_split_is_rollsim_split_model(capsys):
    """``Deployment.gpu_split`` is ``rollsim split --model`` in Python: the same rows, digit for digit
    (before, a Python user rebuilt the instance and the trainer's GPU-seconds by hand)."""
    import io

    import polars as pl

    from rollsim import FullyAsync, Scenario

    args = ["split", "--gpus", "6", "--model", "Qwen3-0.6B", "--gpu", "H100", "--horizon-s", "600", "--group-size",
            "8", "--max-num-seqs", "64", "--admission-eta", "1", "--format", "csv"]
    assert main(args) == 0
    cli = pl.read_csv(io.StringIO(capsys.readouterr().out))
    d = Deployment(model="Qwen3-0.6B", gpu="H100", rollout_gpus=1, max_num_seqs=64)
    base = Scenario(horizon_s=600.0, group_size=8, pipeline=FullyAsync(admission_eta=1))
    py = d.gpu_split(base, 6).table
    assert py["rollout_gpus"].to_list() == cli["rollout_gpus"].to_list() == [1, 2, 3, 4, 5]
    for col in ("tokens_trained_per_s", "step_time_s", "staleness_mean", "drop_fraction"):
        assert py[col].to_list() == pytest.approx(cli[col].to_list(), rel=1e-12, nan_ok=True), col
    one, kw, priced = d.split_inputs(base, 6)
    assert (kw["gpus_per_instance"], kw["slots_per_instance"], priced.train_gpus) == (1, 64, 1)
    assert one.rollout_slots == 64 and one.pipeline == FullyAsync(admission_eta=1)
    # an expert-parallel trainer is priced on its group of 8 (needs a budget above 8)
    d8 = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=1, train_backend="megatron",
                    train_options={"expert_parallel": 8})
    assert d8.split_inputs(base, 16)[2].train_gpus == 8
    with pytest.raises(ValueError, match="^expert_parallel: expert_tensor_parallel x expert_parallel x pipeline_parallel"):
        d8.split_inputs(base, 8)


_CLUSTER = """topology = "broadcast"
[model]
preset = "qwen3-30b-a3b"
train_precision = "bf16"
infer_precision = "bf16"
[train]
tp = 1
pp = 1
dp = 6
ep = 1
[infer]
instances = 26
tp = 1
ep = 1
[hardware]
preset = "h100"
[stack]
preset = "verl-ring"
"""


def test_sync_file_says_what_a_scenario_takes_without_pause_s(tmp_path, capsys):
    """``rollsim sync FILE`` printed the pipeline's numbers only when the file set ``pause_s``: with a
    [stack] and no pause_s its last line was the ideal topology's 0.168 s, while a Scenario takes the
    stack's 6.93 s as a rollout pause."""
    from rollsim import Scenario
    from rollsim.sync import load_weight_sync

    path = tmp_path / "c.toml"
    path.write_text(_CLUSTER)
    assert main(["sync", str(path)]) == 0
    out = capsys.readouterr().out
    assert "topology broadcast: 0.168 s per update" in out
    assert "stack verl-ring (nccl-ring-relay): 6.932 s per update" in out
    assert ("in a Scenario (pause_s = 'all' (the default; pause_s in the file sets it)): weight_sync_s = 0.000 s, "
            "rollout_pause_s = 6.932 s\n") in out
    sc = Scenario(weight_sync=load_weight_sync(str(path)))
    assert (sc.weight_sync_s, round(sc.rollout_pause_s, 3)) == (0.0, 6.932)
