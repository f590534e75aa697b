"""A new user's tryout: an empty scenario file is said (not silently the defaults); messages name
what the user typed; the Agentic repr says seconds; compare's header with per-rank training;
``--out --force`` removes a previous run's report."""

from __future__ import annotations

import json
from pathlib import Path

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
