"""A new user's tryout: an empty scenario file is said (not silently the defaults); messages name
what the user typed; the Agentic repr says seconds; compare's header with per-rank training;
``--out --force`` removes a previous run's report."""

from __future__ import annotations

import json

from rollsim import Scenario, simulate
from rollsim.cli import main


def test_an_empty_scenario_file_warns_naming_it_and_runs_the_defaults(tmp_path, capsys):
    empty = tmp_path / "empty.toml"
    empty.write_text("# a comment only\n")
    out = tmp_path / "out"
    assert main(["run", str(empty), "--horizon-s", "900", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count(f"rollsim: warning: the scenario file {str(empty)!r} is empty (no keys): running the default "
                     "scenario with the flags given") == 1
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == simulate(Scenario(horizon_s=900.0)).summary["steps"] > 0
    full = tmp_path / "full.toml"
    full.write_text("rollout_slots = 256\n")
    assert main(["run", str(full), "--horizon-s", "900"]) == 0
    assert "is empty" not in capsys.readouterr().err


def test_agentic_repr_and_describe_give_the_tool_latency_in_seconds():
    from rollsim import Agentic, Empirical, LogNormal

    a = Agentic(tool_latency_s=LogNormal(mu=0.12, sigma=1.0, max_tokens=30.0),
                observation_tokens=LogNormal(mu=5.0, sigma=1.0, max_tokens=4000.0))
    text = repr(a)
    assert "tool_latency_s=LogNormal(mu=0.12, sigma=1.0, max_s=30.0)" in text
    # observation_tokens is a length: its repr is LogNormal's own (tokens)
    assert "observation_tokens=LogNormal(mu=5.0, sigma=1.0, max_tokens=4000.0, group_correlation=0.0)" in text
    assert text.startswith("Agentic(max_turns=10, tool_latency_s=") and text.endswith("switch_version_at_turn=True)")
    assert "max_s=30.0" in repr(Scenario(agentic=a))
    d = Scenario(agentic=a).describe()["agentic"]
    assert d["tool_latency_s"] == {"kind": "lognormal", "mu": 0.12, "sigma": 1.0, "max_s": 30.0}
    assert d["observation_tokens"]["max_tokens"] == 4000.0
    # the engine's form keeps its key (the LogNormal class's API is unchanged)
    assert Scenario(agentic=a).to_dict()["agentic"]["tool_latency_s"]["max_tokens"] == 30.0
    assert repr(LogNormal(mu=0.12, sigma=1.0, max_tokens=30.0)).startswith("LogNormal(mu=0.12, sigma=1.0, max_tokens=30.0")
    e = Agentic(tool_latency_s=Empirical([1.0, 2.0, 6.0]))
    assert "tool_latency_s=Empirical(3 values, 3 samples, mean 3 s)" in repr(e)
    assert Scenario(agentic=e).describe()["agentic"]["tool_latency_s"] == {
        "kind": "empirical", "name": None, "values": 3, "mean_s": 3.0, "max_s": Empirical([1.0, 2.0, 6.0]).max_tokens}
    assert "tool_latency_s=2.5," in repr(Agentic(tool_latency_s=2.5))


def test_compare_header_gives_the_per_rank_step_cost_not_zero(tmp_path, capsys):
    import math

    from rollsim import LogNormal, TrainRanks

    # every answer 900 tokens + a 100-token prompt: 1000 tokens a sequence; 64 / 4 = 16 a rank
    sc = Scenario(batch_size=64, rollout_slots=64, prompt_tokens=100.0, train_step_s=2.0, horizon_s=300.0,
                  lengths=LogNormal(mu=math.log(900.0), sigma=0.0, max_tokens=4096.0),
                  train=TrainRanks(dp_ranks=4, s_per_token=1e-3, s_per_token_sq=0.0, fixed_s=0.5, mini_batches=2))
    path = tmp_path / "dep.toml"
    sc.to_toml(path)
    assert main(["compare", str(path)]) == 0
    header = capsys.readouterr().out.splitlines()[0]
    # 2 s + 2 mini-batches x 0.5 s + 16 sequences x 1000 tokens x 1e-3 s = 19 s
    assert "batch 64, ~19 s/step at the mean length (train per rank: 4 ranks), 300 s," in header, header
    assert " 2 s/step" not in header and " 0 s/step" not in header
    assert main(["compare", "--horizon-s", "300"]) == 0  # without per-rank training: train_step_s as before
    assert f"batch 512, {Scenario().train_step_s:g} s/step, 300 s," in capsys.readouterr().out.splitlines()[0]


def test_out_force_removes_the_report_of_the_previous_run(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--horizon-s", "600", "--out", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    assert main(["report", str(out), "--format", "md"]) == 0
    figures = sorted(p.name for p in (out / "report_files").iterdir())
    assert (out / "report.html").exists() and (out / "report.md").exists() and figures
    (out / "notes.txt").write_text("mine")  # not the report's: kept
    assert main(["run", "--horizon-s", "900", "--out", str(out)]) == 2  # refused: the report stays too
    assert (out / "report.html").exists()
    assert main(["run", "--horizon-s", "900", "--out", str(out), "--force"]) == 0
    assert not (out / "report.html").exists() and not (out / "report.md").exists()
    assert not (out / "report_files").exists()
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt", "samples.parquet", "scenario.json", "scenario.toml",
                                                     "segments.parquet", "steps.parquet", "summary.json"]
    # a figure directory holding something else is left (only the report's figures go)
    assert main(["report", str(out), "--format", "md"]) == 0
    (out / "report_files" / "keep.txt").write_text("mine")
    assert main(["run", "--horizon-s", "600", "--out", str(out), "--force"]) == 0
    assert [p.name for p in (out / "report_files").iterdir()] == ["keep.txt"] and not (out / "report.md").exists()
