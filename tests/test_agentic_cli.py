"""The agentic flags of ``rollsim run`` / ``compare``: one per field of :class:`rollsim.Agentic`
(the field list of :mod:`rollsim.scenario_toml`) and ``--agentic-preset``; they reach the scenario,
apply on top of a preset or a scenario file's ``[agentic]`` table, and are refused when the scenario
is not agentic."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import math
import re
from pathlib import Path

import polars as pl
import pytest

import rollsim
from rollsim import LogNormal, Scenario, Synchronous, cli
from rollsim import scenario_toml as schema
from rollsim import trajectories
from rollsim.agentic import Agentic


def from_flags(*argv: str, command: str = "run") -> Scenario:
    return cli._scenario(cli.build_parser().parse_args([command, *argv]))


def _actions(command: str) -> list[argparse.Action]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]._actions


@pytest.mark.parametrize("command", ["run", "compare"])
def test_the_flags_are_the_fields(command: str) -> None:
    flags = {s for a in _actions(command) for s in a.option_strings}
    fields = schema.agentic_fields()
    assert [f.key for f in fields] == [f.name for f in dataclasses.fields(Agentic)]
    want = {f.flag for f in fields} | {f.flag.replace("--", "--no-", 1) for f in fields if f.type is bool}
    assert want | {"--agentic-preset"} <= flags
    agentic = {s for a in _actions(command) if a.dest.startswith("agentic_") for s in a.option_strings}
    assert agentic == want | {"--agentic-preset"}
    preset = next(a for a in _actions(command) if a.dest == "agentic_preset")
    names = ["default", *trajectories.PRESETS]
    assert preset.choices is not None and set(preset.choices) == set(names) | {n.replace("_", "-") for n in names}
    # the help lists every one
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main([command, "--help"])
    text = re.sub(r"-\n\s+", "-", out.getvalue())  # argparse wraps lines after a dash
    assert all(flag in text for flag in want | {"--agentic-preset"}), sorted(f for f in want if f not in text)
    assert "swe-agent" in text and "code-interpreter-math" in text


def test_every_flag_reaches_the_scenario() -> None:
    sc = from_flags("--agentic-preset", "default", "--max-turns", "4", "--tool-latency-s", "2.5",
                    "--observation-tokens", "80", "--stop-prob", "0.2", "--turn-scale", "1,0.5",
                    "--max-context-tokens", "9000", "--kv-policy", "hold", "--no-sticky", "--env-slots", "8",
                    "--max-trajectories", "64", "--env-overhead-s", "1.5", "--failure-rate", "0.1",
                    "--on-failure", "retry", "--no-switch-version-at-turn")
    assert sc.agentic == Agentic(max_turns=4, tool_latency_s=2.5, observation_tokens=80.0, stop_prob=0.2,
                                 turn_scale=(1.0, 0.5), max_context_tokens=9000.0, kv_policy="hold", sticky=False,
                                 env_slots=8, max_trajectories=64, env_overhead_s=1.5, failure_rate=0.1,
                                 on_failure="retry", switch_version_at_turn=False)
    assert sc.lengths == Scenario().lengths  # default: the scenario's own lengths
    assert from_flags("--agentic-preset", "default").agentic == Agentic()
    assert from_flags("--agentic-preset", "default", "--env-slots", "none").agentic == Agentic()


def test_presets_and_flags_on_top() -> None:
    for name, preset in trajectories.PRESETS.items():
        for spelling in (name, name.replace("_", "-")):
            sc = from_flags("--agentic-preset", spelling, "--group-size", "4")
            want = preset(Scenario(group_size=4, rng="fast"))
            assert (sc.agentic, sc.lengths) == (want.agentic, want.lengths)
            assert sc.prefill_tokens_per_s == want.prefill_tokens_per_s < math.inf  # the preset's prefill speed
    # a prefill speed given is the scenario's own: the preset keeps it
    assert from_flags("--agentic-preset", "swe-agent", "--prefill-tokens-per-s", "500").prefill_tokens_per_s == 500.0
    sc = from_flags("--agentic-preset", "swe-agent", "--env-slots", "32", "--mu", "6", "--pipeline", "sync")
    want = trajectories.swe_agent(Scenario(rng="fast", group_size=8, batch_size=256))
    assert want.agentic is not None and sc.agentic == dataclasses.replace(want.agentic, env_slots=32,
                                                                          max_trajectories=256)
    assert sc.lengths == LogNormal(6.0, 1.0, 4096.0) and sc.pipeline == Synchronous()


def test_a_scenario_file_s_table_and_flags_on_top(tmp_path: Path) -> None:
    f = tmp_path / "a.toml"
    f.write_text('[agentic]\nmax_turns = 6\n[agentic.tool_latency_s]\nkind = "lognormal"\nmu = 1.0\nmax_s = 60.0\n')
    sc = from_flags(str(f), "--kv-policy", "drop", "--tool-latency-s", "4")
    assert sc.agentic == Agentic(max_turns=6, tool_latency_s=4.0, kv_policy="drop")
    assert from_flags(str(f)).agentic == Agentic(max_turns=6, tool_latency_s=LogNormal(1.0, 1.0, 60.0))
    # the preset is the base, the file's keys take precedence over it, the flags over both
    assert from_flags(str(f), "--agentic-preset", "default").agentic == from_flags(str(f)).agentic
    assert from_flags(str(f), "--agentic-preset", "default", "--max-turns", "2").agentic == Agentic(
        max_turns=2, tool_latency_s=LogNormal(1.0, 1.0, 60.0))


def test_a_preset_keeps_the_file_s_agentic_and_lengths_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                               ) -> None:
    f = tmp_path / "ag.toml"
    f.write_text("horizon_s = 600.0\nbatch_size = 64\n[agentic]\nmax_turns = 3\nenv_slots = 7\n[lengths]\nmu = 6.0\n")
    preset = trajectories.swe_agent(Scenario(rng="fast", batch_size=64, horizon_s=600.0))
    assert preset.agentic is not None
    sc = from_flags(str(f), "--agentic-preset", "swe-agent")
    # every other value of the preset's, the file's max_turns, env_slots and lengths.mu
    assert sc.agentic == dataclasses.replace(preset.agentic, max_turns=3, env_slots=7)
    assert sc.lengths == LogNormal(6.0, 1.0, 4096.0) and preset.lengths == LogNormal(5.5, 1.0, 4096.0)
    assert capsys.readouterr().err == (
        "rollsim: note: the scenario file's agentic.max_turns = 3, agentic.env_slots = 7, lengths.mu = 6.0 take "
        "precedence over --agentic-preset swe-agent's (give the flags to choose otherwise)\n")
    # a flag takes precedence over both, and is not named as the file's
    sc = from_flags(str(f), "--agentic-preset", "swe-agent", "--env-slots", "9", "--mu", "5")
    assert sc.agentic == dataclasses.replace(preset.agentic, max_turns=3, env_slots=9)
    assert sc.lengths == LogNormal(5.0, 1.0, 4096.0)
    assert capsys.readouterr().err == (
        "rollsim: note: the scenario file's agentic.max_turns = 3 take precedence over --agentic-preset "
        "swe-agent's (give the flags to choose otherwise)\n")
    # lengths of another kind in the file are the file's as they are
    g = tmp_path / "emp.toml"
    g.write_text('[lengths]\nkind = "empirical"\nvalues = [100.0, 300.0]\n')
    assert from_flags(str(g), "--agentic-preset", "swe-agent").lengths == rollsim.Empirical([100.0, 300.0])
    assert "the scenario file's [lengths] take precedence" in capsys.readouterr().err
    # the run itself: the file's values reach the engine
    code, out, err = _cli("run", str(f), "--agentic-preset", "swe-agent")
    assert code == 0 and "agentic.max_turns = 3" in err


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(list(args))
        except SystemExit as e:
            code = int(e.code or 0)
    return code, out.getvalue(), err.getvalue()


def test_refused_when_not_agentic() -> None:
    for command in ("run", "compare"):
        code, _, err = _cli(command, "--kv-policy", "drop")
        assert code == 2
        assert err.strip().splitlines()[-1] == (
            "rollsim: error: --kv-policy applies to agentic scenarios only: give --agentic-preset "
            "NAME (default, code-interpreter-math, swe-agent) or an [agentic] table in the scenario file")


def test_run_and_compare_agentic() -> None:
    code, out, _ = _cli("run", "--agentic-preset", "default", "--max-turns", "3", "--pipeline", "one-step",
                        "--horizon-s", "1200")
    s = json.loads(out)
    assert code == 0 and s["turns"] > s["samples_finished"] > 0 and s["tool_calls"] > 0
    sc = from_flags("--agentic-preset", "default", "--max-turns", "3", "--pipeline", "one-step", "--horizon-s", "1200")
    assert s["turns"] == rollsim.simulate(sc, record="summary").summary["turns"]
    code, out, err = _cli("compare", "--agentic-preset", "default", "--max-turns", "3", "--horizon-s", "1200",
                          "--format", "csv")
    assert code == 0, err
    df = pl.read_csv(io.StringIO(out))
    assert df["pipeline"].to_list() == ["synchronous", "one-step async", "fully async", "fully async, cap 2"]
    assert (df["steps"] > 0).all()


def test_compare_s_first_line_says_the_scenario_is_agentic() -> None:
    # the lengths of an agentic scenario are per turn: the line naming the scenario says so, and
    # names the groups (a user reading the table must know what it ran)
    code, out, err = _cli("compare", "--agentic-preset", "default", "--max-turns", "3", "--group-size", "4",
                          "--horizon-s", "1200")
    assert code == 0, err
    assert out.splitlines()[0] == (
        "rollsim compare: 256 slots x 30 tokens/s, batch 512, 60 s/step, 1200 s, lengths lognormal(mu=7.6, "
        "sigma=1), max 16384 tokens, rng=python, seed=0, group_size=4, agentic default (max_turns=3; lengths per "
        "turn)")
