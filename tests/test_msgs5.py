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
