"""A user's agentic, staleness and sync questions end to end (Qwen3-30B-A3B on 64 H100s, terminal tasks,
fully async; Qwen3-8B code-interpreter maths on 16 H100s; an OpenRLHF run's what-if):

* an agentic deployment's decode table is priced at a turn's mean context over the trajectory (earlier
  turns and observations included), not at the prompt + half a turn: a 30-turn SWE trajectory on
  Qwen3-30B-A3B decodes at ~14,200 tokens of context, which the table priced at 1,200 (its KV reads left
  out: 7,437 tokens/s per instance at 256 sequences where 2,884 is the speed at that context);
* the header's training step is a batch of whole trajectories (prompt + every turn), not of prompt + one
  turn: ~22.5 s per step for 512 30-turn trajectories on 32 H100s, which it printed as ~5.59 s (the simulated
  steps take 24.7 s on average, waiting for the slowest rank);
* the deployment header's weight sync names its transfer and its pause: a cluster whose 4.05 s sync is
  all pause was printed "weight sync 0 s per update";
* ``rollsim run --model ... --max-staleness 1`` (no ``--pipeline``) dropped the cap: the deployment's default
  pipeline ran uncapped (as without the flag), where without ``--model`` the flag caps the default pipeline;
* a cluster of another deployment given as ``weight_sync`` is refused (it was priced as given);
* ``rollsim whatif`` shows the rollout GPUs beside the training GPUs, and says a colocated baseline's
  GPUs are split (the table showed ``train_gpus 4`` for an 8-GPU colocated run's asynchronous variant).
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from rollsim import Agentic, Empirical, LogNormal, ScenarioError, Scenario, simulate, sync, trajectories
from rollsim.cli import deployment_words, main
from rollsim.hardware import Deployment
from rollsim.hardware.deployment import decode_context_tokens, sequence_tokens


def test_decode_context_hand_worked():
    """Turns of 200 tokens after a 50-token prompt, 100-token observations, each turn ending the trajectory
    with probability 0.5, at most 3 turns: the turns decode around 150, 450 and 750 tokens of context,
    reached with probability 1, 0.5, 0.25: (150 + 225 + 187.5) / 1.75."""
    ag = Agentic(max_turns=3, stop_prob=0.5, observation_tokens=100.0, tool_latency_s=1.0)
    lengths = Empirical([200.0])
    assert decode_context_tokens(50.0, lengths, ag) == pytest.approx(562.5 / 1.75, rel=1e-12)
    # single-turn (and no agentic): prompt + half the answer, as before
    assert decode_context_tokens(50.0, lengths, None) == 150.0
    assert decode_context_tokens(50.0, lengths, dataclasses.replace(ag, max_turns=1)) == 150.0
    # a bound of 400 tokens: the second turn is capped there, the third (starting at 650) never happens
    capped = dataclasses.replace(ag, max_context_tokens=400.0)
    assert decode_context_tokens(50.0, lengths, capped) == pytest.approx((150.0 + 0.5 * 400.0) / 1.5, rel=1e-12)
    # turn_scale: the second and later turns decode twice as long (400 tokens, around 650 and 1,150)
    scaled = dataclasses.replace(ag, turn_scale=(1.0, 2.0))
    want = (200 * 150.0 + 0.5 * 400 * 550.0 + 0.25 * 400 * 1050.0) / (200 + 0.5 * 400 + 0.25 * 400)
    assert decode_context_tokens(50.0, lengths, scaled) == pytest.approx(want, rel=1e-12)


def _swe():
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=32, rollout_tp=2, train_gpus=32, max_num_seqs=256)
    pre = trajectories.swe_agent(Scenario(group_size=8, batch_size=512, rollout_slots=4096))
    ag = dataclasses.replace(pre.agentic, max_turns=30, tool_latency_s=LogNormal(math.log(20.0), 0.7, 300.0),
                             env_slots=None, max_trajectories=4096)
    return d, pre.lengths, ag


def test_agentic_deployment_table_at_the_trajectory_context():
    d, lengths, ag = _swe()
    ctx = decode_context_tokens(1000.0, lengths, ag)
    assert ctx == pytest.approx(14186.4, abs=0.1)          # was 1,199.7: prompt + half a turn (399.4 tokens)
    sc = d.scenario(lengths=lengths, prompts_per_step=64, group_size=8, prompt_tokens=1000.0, agentic=ag,
                    horizon_s=60.0)
    n, top = sc.decode_throughput_table[-1]
    assert n == 256 and top == pytest.approx(256 * d.decode_tokens_per_s(256, ctx), rel=1e-12)
    assert top == pytest.approx(2884, abs=1)                # 7,437 tokens/s per instance at the 1,200 it used
    assert sc.decode_tokens_per_s == pytest.approx(d.decode_tokens_per_s(1, ctx), rel=1e-12)
    words = deployment_words(d, sc)
    assert ("at the mean context 14,186 tokens (a turn's, over the trajectory: prompt + earlier turns and "
            "observations + half a turn)") in words
    # without agentic: prompt + half the answer, as before
    plain = d.scenario(lengths=lengths, prompts_per_step=64, group_size=8, prompt_tokens=1000.0, horizon_s=60.0)
    assert "at the mean context 1,200 tokens (prompt + half the mean answer)" in deployment_words(d, plain)


_CLUSTER = ("stack = \"nemo-rl-reshard\"\ntopology = \"parallel\"\n"
            "model = {{ preset = \"Qwen3-8B\", train_precision = \"bf16\", infer_precision = \"bf16\" }}\n"
            "train = {{ dp = 2 }}\ninfer = {{ instances = {n}, tp = 1 }}\nhardware = {{ preset = \"h100\" }}\n")


def _cluster_file(tmp_path, instances):
    """A cluster file (rollsim sync's) of Qwen3-8B from 2 training GPUs to ``instances`` TP-1 engines."""
    p = tmp_path / f"c{instances}.toml"
    p.write_text(_CLUSTER.format(n=instances))
    return p


def _scenario_file(tmp_path, instances):
    """A scenario file whose [weight_sync] is that cluster."""
    p = tmp_path / f"s{instances}.toml"
    p.write_text("[weight_sync]\n" + _CLUSTER.format(n=instances))
    return p


_FLAGS = ["--model", "Qwen3-8B", "--gpu", "H100", "--rollout-gpus", "2", "--train-gpus", "2", "--group-size", "8",
          "--batch-size", "64", "--mu", "6", "--max-tokens", "4096", "--horizon-s", "120"]


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
def test_deployment_header_names_the_sync_transfer_and_pause(tmp_path, capsys):
    p = _scenario_file(tmp_path, 2)
    assert main(["run", str(p), *_FLAGS]) == 0
    err = capsys.readouterr().err
    sc = Scenario.from_toml(p)
    pause = sc.rollout_pause_s
    assert sc.weight_sync_s == 0.0 and pause == pytest.approx(0.8962, abs=1e-4)
    # was "weight sync 0 s per update": the transfer's 0 s, the 0.896 s pause left out
    assert (f"; weight sync {pause:.3g} s per update (0 s of transfer in the trainer's step, {pause:.3g} s of rollout "
            "pause, from [weight_sync]: stack nemo-rl-reshard)") in err
    assert main(["run", *_FLAGS, "--weight-sync-s", "2", "--rollout-pause-s", "0.5"]) == 0
    assert ("; weight sync 2.5 s per update (2 s of transfer in the trainer's step, 0.5 s of rollout pause)"
            in capsys.readouterr().err)


def test_weight_sync_cluster_of_another_deployment_is_refused(tmp_path, capsys):
    d = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=2, train_gpus=2)
    ws = sync.load_weight_sync(_cluster_file(tmp_path, 8))
    with pytest.raises(ScenarioError, match=r"^weight_sync: the cluster prices another deployment's sync: 8 inference "
                                            r"instances x TP 1 = 8 GPUs \(the deployment's rollout: 2 GPUs\); give"):
        d.scenario(lengths=LogNormal(6.0, 1.0, 4096), prompts_per_step=8, group_size=8, weight_sync=ws)
    # the deployment's own cluster is taken, and prices the pause the scenario runs with
    own = sync.load_weight_sync(_cluster_file(tmp_path, 2))
    sc = d.scenario(lengths=LogNormal(6.0, 1.0, 4096), prompts_per_step=8, group_size=8, weight_sync=own,
                    horizon_s=120.0)
    assert sc.rollout_pause_s == pytest.approx(0.8962, abs=1e-4)
    # on the command line, the same refusal
    assert main(["run", str(_scenario_file(tmp_path, 8)), *_FLAGS]) == 2
    assert "rollsim: error: weight_sync: the cluster prices another deployment's sync: 8 inference" in capsys.readouterr().err


_OPENRLHF = """python3 -m openrlhf.cli.train_ppo_ray \\
   --actor.num_nodes 1 --actor.num_gpus_per_node 8 \\
   --vllm.num_engines 4 --vllm.tensor_parallel_size 2 \\
   --actor.model_name_or_path Qwen/Qwen3-8B \\
   --rollout.batch_size 64 --rollout.n_samples_per_prompt 8 \\
   --train.batch_size 256 --rollout.max_new_tokens 4096 --data.max_len 5120 \\
   --train.colocate_all --vllm.enable_sleep
"""


def _openrlhf_run(tmp_path):
    cfg = tmp_path / "run.sh"
    cfg.write_text(_OPENRLHF)
    rows = ["train/global_step,train/timing/generation,train/timing/make_experience,train/timing/ppo_train,"
            "train/timing/broadcast,train/timing/step_total,train/rollout/response_length_mean,response_max,"
            "train/rollout/truncated_rate,train/rollout/num_samples"]
    for s in range(1, 13):
        mean = 1500 + 12 * s + (-1) ** s * 30
        gen, me, tr = 0.11 * mean + 40, 30.0 + (s % 3), 0.045 * mean + 25
        rows.append(f"{s},{gen:.2f},{me:.2f},{tr:.2f},4.0,{gen + me + tr + 7:.2f},{mean:.1f},4096,0.03,512")
    met = tmp_path / "metrics.csv"
    met.write_text("\n".join(rows) + "\n")
    return cfg, met


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
def test_whatif_shows_a_colocated_runs_split(tmp_path, capsys):
    import rollsim
    from rollsim import configs

    cfg, met = _openrlhf_run(tmp_path)
    assert main(["whatif", "--config", str(cfg), "--metrics", str(met), "--pipeline", "fully-async",
                 "--bootstrap", "0", "--draws", "1"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[1].split()[:4] == ["variant", "rollout_gpus", "train_gpus", "step_s"]
    assert lines[3].split()[:3] == ["baseline", "8", "8"] and lines[4].split()[:3] == ["fully-async", "4", "4"]
    assert err.splitlines()[-1] == ("rollsim: note: the baseline is colocated: rollout and training take turns on the "
                                    "same 8 GPUs; an asynchronous variant splits them, half each unless --rollout-gpus "
                                    "R (the trainer gets the rest)")
    cal = rollsim.calibrate(met, configs.load(cfg), bootstrap=0)
    df = rollsim.whatif(cal, [{"pipeline": "fully-async", "rollout_gpus": 6}], draws=1)
    assert df.select("rollout_gpus", "train_gpus", "rollout_slots").rows() == [(8, 8, 1024), (6, 2, 768)]


@pytest.mark.filterwarnings("ignore::rollsim.DeploymentWarning")
def test_swe_run_python_and_cli_agree(tmp_path, capsys):
    """The Marin-like question's run, from Python and from a scenario file with the deployment flags."""
    import json

    d, lengths, ag = _swe()
    ag = dataclasses.replace(ag, max_trajectories=1024)
    sc = d.scenario(lengths=lengths, prompts_per_step=64, group_size=8, prompt_tokens=1000.0, agentic=ag,
                    horizon_s=1800.0)
    want = simulate(sc, record="summary").summary
    p = tmp_path / "a.toml"
    body = sc.to_toml()
    p.write_text("prompt_tokens = 1000.0\nhorizon_s = 1800.0\n\n[lengths]\nkind = \"lognormal\"\nmu = 5.5\n"
                 "sigma = 1.0\nmax_tokens = 4096.0\n\n" + body[body.index("[agentic]"):body.index("[train]")])
    assert main(["run", str(p), "--model", "Qwen3-30B-A3B", "--gpu", "H100", "--rollout-gpus", "32", "--rollout-tp",
                 "2", "--train-gpus", "32", "--max-num-seqs", "256", "--group-size", "8", "--batch-size", "512"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["steps"] == want["steps"] and got["gpu_decode_s"] == pytest.approx(want["gpu_decode_s"], rel=1e-12)


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")
def test_observations_do_not_count_in_the_engines_kv():
    """A known limit, as the README says: a trajectory's KV in the engine is prompt + decoded tokens. Four
    trajectories of three 3,000-token turns on one 10,000-token instance preempt; the same with 100-token turns
    and 3,000-token tool outputs (contexts of 6,400 tokens, 25,600 held) preempts nothing."""
    def run(turn, obs):
        sc = Scenario(rollout_slots=4, slots_per_instance=4, kv_cache_tokens=10000, prompt_tokens=100.0,
                      lengths=Empirical([turn]), batch_size=4, group_size=1, horizon_s=600.0, train_step_s=1.0,
                      agentic=Agentic(max_turns=3, stop_prob=0.0, tool_latency_s=1.0, observation_tokens=obs,
                                      kv_policy="hold", max_context_tokens=9999.0, max_trajectories=4))
        return simulate(sc, record="summary").summary

    assert run(3000.0, 100.0)["preemptions"] == 5
    s = run(100.0, 3000.0)
    assert (s["preemptions"], s["kv_wait_s"], s["steps"]) == (0, 0.0, 50)


@pytest.mark.filterwarnings("ignore::rollsim.DeploymentWarning")
def test_agentic_training_step_is_a_batch_of_trajectories():
    from rollsim.cli import _step_words

    ag = Agentic(max_turns=3, stop_prob=0.5, observation_tokens=100.0, tool_latency_s=1.0)
    assert sequence_tokens(50.0, Empirical([200.0]), ag) == 50.0 + 200.0 * 1.75   # the observations are not trained
    assert sequence_tokens(50.0, Empirical([200.0]), None) == 250.0
    d, lengths, ag = _swe()
    ag = dataclasses.replace(ag, max_trajectories=4096)
    seq = sequence_tokens(1000.0, lengths, ag)
    assert seq == pytest.approx(8974.0, abs=1.0)
    sc = d.scenario(lengths=lengths, prompts_per_step=64, group_size=8, prompt_tokens=1000.0, agentic=ag,
                    horizon_s=4 * 3600.0)
    assert _step_words(sc) == ("~22.5 s/step at the mean trajectory (8,974 tokens: prompt + turns) (train per rank: "
                               "32 ranks)")          # was "~5.59 s/step at the mean length": prompt + one turn
    r = simulate(sc)
    steps = r.steps.filter(r.steps["completed"])
    assert (steps["end_s"] - steps["start_s"]).mean() == pytest.approx(24.7, abs=0.1)
    trained = r.samples.filter(r.samples["status"] == "trained")["length_tokens"].mean()
    assert trained == pytest.approx(7940, abs=1)              # decoded tokens of a trained trajectory


def test_pipeline_field_flag_without_pipeline_applies_with_model(capsys):
    import json

    flags = ["run", "--model", "Qwen3-8B", "--gpu", "H100", "--rollout-gpus", "1", "--train-gpus", "1",
             "--horizon-s", "1800"]
    runs = {}
    for extra in ((), ("--max-staleness", "1"), ("--pipeline", "fully-async", "--max-staleness", "1")):
        assert main([*flags, *extra]) == 0
        out, err = capsys.readouterr()
        runs[extra] = json.loads(out)
        assert "(train per rank: 1 rank)" in err          # was "1 ranks"
    uncapped, capped, explicit = runs.values()
    assert (uncapped["steps"], uncapped["drop_fraction"]) == (3, 0.0)
    assert capped == explicit                             # was the uncapped run: the cap dropped
    assert capped["steps"] == 2 and capped["drop_fraction"] == pytest.approx(0.3216, abs=1e-4)
    # a colocated deployment (synchronous) refuses the fully async cap rather than dropping it
    assert main([*flags, "--colocated", "--max-staleness", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("it needs Synchronous(), got FullyAsync(max_staleness=1)")


@pytest.mark.filterwarnings("ignore::rollsim.DeploymentWarning")
def test_split_inputs_of_an_agentic_base_price_the_trajectories():
    """``Deployment.gpu_split`` / ``split_inputs`` of an agentic base priced its instances and trainer without the
    trajectories (7,437 tokens/s per instance at 256 sequences, prompt + one turn per trained sequence): the
    same as the deployment's scenario of that base now."""
    d, lengths, ag = _swe()
    base = Scenario(group_size=8, batch_size=512, lengths=lengths, prompt_tokens=1000.0, agentic=ag)
    one, kw, _ = d.split_inputs(base, 64)
    sc = dataclasses.replace(d, rollout_gpus=2, train_gpus=1).scenario(
        lengths=lengths, prompts_per_step=64, group_size=8, prompt_tokens=1000.0, agentic=ag, per_rank=False)
    assert one.decode_throughput_table == sc.decode_throughput_table
    assert one.decode_throughput_table[-1][1] == pytest.approx(2884, abs=1)
    assert (one.prefill_mode, one.prefill_tokens_per_s) == ("per_slot", sc.prefill_tokens_per_s)
    assert kw["gpu_s_per_token"] == pytest.approx(sc.train_s_per_token, rel=1e-12)
