"""Defects a new user met in the first hour: the split's minimum steps, the what-if warning said
once, the import's override typos, the headers that name the scenario, the summary of a run
without steps."""

from __future__ import annotations

import pytest

from rollsim import Scenario, resources
from rollsim.cli import main


def _split(horizon_s: float) -> resources.SplitResult:
    return resources.gpu_split(Scenario(horizon_s=horizon_s), 8, gpus_per_instance=1, slots_per_instance=64,
                               gpu_s_per_token=1e-4)


def test_split_best_needs_six_completed_steps():
    # 800 s: every split completes at most 5 steps; the 6-GPU one trains the most tokens per second by the
    # horizon (8258; the 7-GPU one's 9976 over its own end counted a 6th step still training at 800 s) but
    # over 5 steps of the pipeline's fill: no split is recommended, and each says why
    res = _split(800.0)
    t = res.table
    assert t["steps"].to_list() == [0, 1, 2, 3, 4, 5, 5]
    assert res.best is None and t["rank"].null_count() == 7
    assert res.nearest is not None and res.nearest["rollout_gpus"] == 6
    assert t["excluded_because"][6] == ("only 5 training steps completed (fewer than 6: too few to trust its rates; "
                                        "a longer horizon_s)")
    assert res.verdict.startswith("no split meets the limits (at least 6 training steps, generation does not outrun "
                                  "training, drop_fraction <= 5.0%); nearest: 6 rollout + 2 training GPUs, 8258 tokens "
                                  "trained/s, excluded because only 5 training steps completed")


def test_split_best_is_the_fastest_with_six_steps():
    # 900 s: the 6-GPU split completes 6 steps and is recommended; the 7-GPU one (5 steps) is not
    res = _split(900.0)
    t = res.table
    assert t["steps"].to_list() == [1, 2, 3, 4, 5, 6, 5]
    assert res.best is not None and res.best["rollout_gpus"] == 6 and res.best["steps"] == 6
    assert t["rank"].to_list() == [None] * 5 + [1, None]
    assert all(int(s) >= 6 for s in t.filter(t["rank"].is_not_null())["steps"])


def test_split_cli_names_horizon_flag(capsys):
    assert main(["split", "--gpus", "8", "--gpu-s-per-token", "1e-4", "--horizon-s", "800"]) == 0
    out = capsys.readouterr().out
    assert "<- best" not in out
    assert ("excluded: only 5 training steps completed (fewer than 6: too few to trust its rates; a longer "
            "--horizon-s)") in out
    assert out.splitlines()[-1].startswith("no split meets the limits (at least 6 training steps,")


def test_whatif_says_generation_outruns_training_once():
    """Each variant and each bootstrap draw warned on its own (8 lines for 2 variants x 4 runs, the
    numbers differing); now one warning names the rows."""
    import warnings

    import rollsim
    from rollsim.configs import EXAMPLES
    from rollsim.errors import GenerationOutrunsTrainingWarning

    cal = rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", rollsim.configs.load(EXAMPLES / "verl_grpo.yaml"),
                            bootstrap=20)
    variants = [{"pipeline": "fully-async", "rollout_gpus": 8}, {"pipeline": "fully-async", "rollout_gpus": 12},
                {"pipeline": "fully-async", "max_staleness": 2, "rollout_gpus": 8}]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = rollsim.whatif(cal, variants, draws=3)
    outrun = [w for w in caught if issubclass(w.category, GenerationOutrunsTrainingWarning)]
    assert len(outrun) == 1 and len(caught) == 1
    assert str(outrun[0].message) == (
        "generation outruns training in 2 of 4 rows (fully-async, rollout_gpus=8; fully-async, rollout_gpus=12): the "
        "ready queue grows by up to 19597 samples per step (rollout/training throughput ratio up to 12.69); staleness "
        "grows without bound, so these rows' staleness and drops depend on the steps simulated. Add a staleness cap, "
        "fewer rollout GPUs, or more prompts per step.")
    assert df.height == 4 and "outruns" not in df.columns


@pytest.mark.filterwarnings("always::rollsim.errors.GenerationOutrunsTrainingWarning")
def test_whatif_cli_warns_once(capsys):
    from rollsim.configs import EXAMPLES

    assert main(["whatif", "--config", str(EXAMPLES / "verl_grpo.yaml"), "--metrics",
                 str(EXAMPLES / "verl_grpo_metrics.csv"), "--pipeline", "fully-async", "--rollout-gpus", "8,12",
                 "--draws", "3", "--bootstrap", "20"]) == 0
    err = capsys.readouterr().err.splitlines()
    warned = [line for line in err if line.startswith("rollsim: warning:")]
    assert len(warned) == 1 and warned[0].startswith("rollsim: warning: generation outruns training in 2 of 3 rows")
    assert len(err) == 2 and "the same 16 GPUs" in err[1]  # and the colocated baseline's split note, once


def test_config_typo_is_said_on_stderr(tmp_path, capsys):
    """``actor_rollout_ref.rollout.nn=8`` (for ``rollout.n``) was noted as "ignored: not modelled by
    rollsim", and ``rollsim run --config`` ran with one answer per prompt, saying nothing."""
    from rollsim import configs
    from rollsim.configs import EXAMPLES

    text = (EXAMPLES / "verl_fully_async.sh").read_text().replace("rollout.n=8", "rollout.nn=8")
    assert "rollout.nn=8" in text
    path = tmp_path / "typo.sh"
    path.write_text(text)
    said = ("rollsim: warning: actor_rollout_ref.rollout.nn=8: unknown option (did you mean "
            "'actor_rollout_ref.rollout.n' or 'actor_rollout_ref.rollout.nnodes' or 'actor_rollout_ref.rollout.name'?)")
    assert configs.load(path).warnings() == [said]
    assert main(["run", "--config", str(path), "--horizon-s", "600"]) == 0
    assert capsys.readouterr().err.splitlines() == [said]


def test_config_typos_none_in_the_examples():
    # the examples' real options that rollsim leaves out (ppo_mini_batch_size, data.gen_batch_size,
    # experiment_name, ...) are not taken for typos
    from rollsim import configs
    from rollsim.configs import EXAMPLES

    for name in ("verl_grpo.yaml", "verl_fully_async.sh", "areal_grpo.yaml", "slime_async.sh", "openrlhf_ppo.sh"):
        imp = configs.load(EXAMPLES / name)
        assert imp.warnings() == [], name
    assert any(n.option == "actor_rollout_ref.actor.ppo_mini_batch_size"
               for n in configs.load(EXAMPLES / "verl_grpo.yaml").notes)


_CORE = ("256 slots x 30 tokens/s, batch 512, 60 s/step, 600 s, lengths lognormal(mu=7.6, sigma=1), max 16384 "
         "tokens")


def _header(capsys, *args):
    assert main(list(args)) == 0
    return capsys.readouterr().out.splitlines()[0]


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # short runs: the header is what is checked
def test_headers_name_every_part_that_is_not_the_default(capsys, tmp_path):
    # the default scenario: the line it always printed
    assert _header(capsys, "compare", "--horizon-s", "600") == f"rollsim compare: {_CORE}, rng=python, seed=0"
    # presets' own defaults are parts of its scenario too
    assert _header(capsys, "presets", "--horizon-s", "600") == (
        f"rollsim presets: {_CORE}, rng=fast, seed=0, group_size=8, prompt_tokens=500, prefill_tokens_per_s=10000")
    # an agentic preset, by name, with the flags given on top of it (its lengths and prefill speed are the
    # preset's)
    assert _header(capsys, "compare", "--horizon-s", "600", "--agentic-preset", "swe-agent", "--env-slots", "7",
                   "--kv-policy", "hold") == (
        "rollsim compare: 256 slots x 30 tokens/s, batch 512, 60 s/step, 600 s, lengths lognormal(mu=5.5, sigma=1), "
        "max 4096 tokens, rng=python, seed=0, prefill_tokens_per_s=13191, agentic swe-agent (kv_policy=hold, "
        "env_slots=7; lengths per turn)")
    assert _header(capsys, "compare", "--horizon-s", "600", "--agentic-preset", "default") == (
        f"rollsim compare: {_CORE}, rng=python, seed=0, agentic default (lengths per turn)")
    assert _header(capsys, "compare", "--horizon-s", "600", "--group-correlation", "0.5", "--group-size", "8") == (
        f"rollsim compare: {_CORE} (group_correlation=0.5), rng=python, seed=0, group_size=8")


def test_header_names_the_weight_sync(capsys, tmp_path):
    from importlib.resources import files

    from rollsim.sync import load_weight_sync

    cluster = files("rollsim.sync") / "examples" / "cluster.toml"
    sc = Scenario(weight_sync=load_weight_sync(str(cluster)), horizon_s=600.0)
    path = tmp_path / "ws.toml"
    sc.to_toml(str(path))
    assert _header(capsys, "compare", str(path)) == (
        f"rollsim compare: {_CORE}, rng=fast, seed=0, weight sync {sc.weight_sync.total_s:.3g} s per update (stack "
        f"nemo-rl-reshard, model DeepSeek-V3, pause_s=all)")
    assert f"{sc.weight_sync.total_s:.3g}" == "8.08"


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # runs that train nothing, on purpose
def test_run_without_steps_prints_no_staleness_max(capsys, tmp_path):
    """A run that trains nothing: staleness_max printed null like staleness_mean (it printed 0),
    trainer_busy_s 0.0 (the engine's empty sum printed -0.0)."""
    import json
    import math

    from rollsim import simulate

    assert main(["run", "--horizon-s", "10", "--out", str(tmp_path / "r")]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["samples_trained"] == 0 and s["steps"] == 0
    assert s["staleness_mean"] is None and s["staleness_max"] is None
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["staleness_max"] is None
    assert s["trainer_busy_s"] == 0.0 and math.copysign(1.0, s["trainer_busy_s"]) == 1.0
    py = simulate(Scenario(horizon_s=10.0), record="summary").summary  # the Python summary keeps the integer
    assert py["staleness_max"] == 0 and math.copysign(1.0, py["trainer_busy_s"]) == 1.0
    # a run with steps is unchanged: 4 steps, staleness up to 3, 240 s of training
    done = simulate(Scenario(horizon_s=1000.0), record="summary").summary
    assert (done["steps"], done["staleness_max"], done["trainer_busy_s"]) == (4, 3, 240.0)


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # runs that train nothing, on purpose
def test_tables_print_no_staleness_max_without_trained_samples(capsys):
    assert main(["compare", "--horizon-s", "100"]) == 0
    rows = {ln[:18].strip(): ln.split() for ln in capsys.readouterr().out.splitlines()[4:]}
    assert rows["synchronous"][1:2] + rows["synchronous"][4:7] == ["1", "32%", "0.0", "0"]  # trained: its max is 0
    assert rows["fully async"][2:3] + rows["fully async"][5:8] == ["0", "100%", "-", "-"]   # nothing trained: no max
    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--horizon-s", "60"]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]  # after the line that names what was searched
    assert all(ln.split()[10:12] == ["-", "-"] for ln in lines[1:4])


def test_plot_names_its_flags(capsys, tmp_path):
    """``rollsim plot`` said "metric: is required for --kind heatmap" (plot_dir's argument)."""
    run = tmp_path / "run"
    assert main(["run", "--horizon-s", "600", "--out", str(run)]) == 0
    sweep = tmp_path / "sweep.toml"
    sweep.write_text("[base]\nhorizon_s = 600.0\n[grid]\nrollout_slots = [64, 128]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "sw")]) == 0
    capsys.readouterr()
    png = str(tmp_path / "f.png")
    for argv, said in (
            ([str(tmp_path / "sw"), "--kind", "heatmap"], "--metric: is required for --kind heatmap"),
            ([str(tmp_path / "sw"), "--kind", "heatmap", "--metric", "steps"], "--x: is required for --kind heatmap"),
            ([str(run), "--kind", "heatmap"], f"--kind: 'heatmap' needs a sweep directory, '{run}' is a run"),
            ([str(run), "--kind", "utilization", "--bin-s", "-1"], "--bin-s: must be finite and > 0, got -1.0")):
        assert main(["plot", *argv, "--out", png]) == 2
        assert capsys.readouterr().err.strip() == f"rollsim: error: {said}"
    # the Python function keeps its argument names
    from rollsim.errors import ScenarioError
    from rollsim.report import plot_dir

    with pytest.raises(ScenarioError, match="^metric: is required for --kind heatmap$"):
        plot_dir(str(tmp_path / "sw"), "heatmap")


def test_presets_warning_names_the_system():
    """The warning said "generation outruns training" without the system; now once, naming it."""
    import warnings

    from rollsim import presets
    from rollsim.errors import GenerationOutrunsTrainingWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = presets.compare(Scenario(rollout_slots=2048, horizon_s=3600.0, group_size=8, prompt_tokens=500.0,
                                      prefill_tokens_per_s=10000.0))
    assert [w.category for w in caught] == [GenerationOutrunsTrainingWarning]
    assert str(caught[0].message) == (
        "generation outruns training in 1 of 7 systems (fully async (chapter)): the ready queue grows by up to 656 "
        "samples per step (rollout/training throughput ratio up to 2.29); staleness grows without bound. Add a "
        "staleness cap, fewer rollout_slots, or a larger batch_size.")
    assert df.height == 7


@pytest.mark.filterwarnings("always::rollsim.errors.GenerationOutrunsTrainingWarning")
def test_readme_presets_tables_are_what_the_cli_prints(capsys):
    """The README's two ``rollsim presets`` outputs, header line included, exactly."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```text\n(.*?)```", text, flags=re.S) if b.startswith("rollsim presets:")]
    assert len(blocks) == 2
    argv = ["presets", "--lengths", "deepseek-r1", "--max-tokens", "16384", "--horizon-s", "14400"]
    for block, extra in zip(blocks, ([], ["--train-step-s", "150"])):
        assert main(argv + extra) == 0
        assert capsys.readouterr().out == block


def test_sweep_of_refused_runs_says_so(capsys, tmp_path):
    """A sweep whose runs were all refused as runaway printed "see the 'error' column" (refused runs
    are not stored: there is none) and then "rollsim: error: 'seed' is not in list"."""
    sweep = tmp_path / "s.toml"
    sweep.write_text("[grid]\nhorizon_s = [600.0, 1e9, 2e9]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "mix")]) == 1
    out, err = capsys.readouterr()
    assert ("rollsim sweep: 2 runs failed: 2 refused before running by the run guards (a runaway scenario: not "
            "stored, so that a rerun with a shorter horizon_s or a higher max_samples runs them)") in err.splitlines()
    assert [ln.split()[0] for ln in out.splitlines()[2:]] == ["600"]  # the run that ran is shown (as given)
    sweep.write_text("[grid]\nhorizon_s = [1e9, 2e9]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "none")]) == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and "is not in list" not in err and lines[-2].startswith(
        "rollsim sweep: 2 runs failed: 2 refused before running")
    assert lines[-1].startswith("rollsim sweep: first refused: max_samples: this scenario would start about 2.45e+09 "
                                "samples") and lines[-1].endswith("(sweep scenario horizon_s=1000000000.0)")
