"""The agentic tables of a scenario file: the tool latency in seconds (``[agentic.tool_latency_s]``
with ``max_s``, from the engine's ``SCHEMA["seconds_parts"]``), the lengths' spelling refused there,
the observation lengths as a lengths table, and exact round trips."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path

import pytest

import rollsim
from rollsim import Empirical, LogNormal, Scenario, Synchronous
from rollsim import _rollsim
from rollsim import scenario_toml as schema
from rollsim.agentic import Agentic


def _load(text: str, root: str | Path = ".") -> Scenario:
    return schema.loads(text, root)


def _tool_table(sc: Scenario) -> object:
    return tomllib.loads(sc.to_toml())["agentic"]["tool_latency_s"]


def test_the_keys_are_the_schema_s() -> None:
    parts = {p["kind"]: p for p in _rollsim.SCHEMA["seconds_parts"]}
    assert set(parts) == {"lognormal", "empirical"}
    for kind, p in parts.items():
        assert p["of"] == "agentic.tool_latency_s"
        assert schema.tool_latency_keys(kind) == {"kind"} | {f["name"] for f in p["fields"]}
        assert all(f["path"] == f"agentic.tool_latency_s.{f['name']}" for f in p["fields"])
    assert schema.tool_latency_keys("lognormal") == {"kind", "mu", "sigma", "max_s"}
    assert schema.tool_latency_keys("empirical") == {"kind", "values", "weights", "max_s", "name"}
    assert schema.tool_latency_keys("file") == {"file", "column", "count_column", "max_s", "name", "has_header"}
    seconds = {f["name"]: f for f in parts["lognormal"]["fields"]}
    assert (seconds["max_s"]["unit"], seconds["max_s"]["lo"], seconds["max_s"]["hi"]) == ("seconds", 1.0, 2.0**40)
    assert seconds["mu"]["required"] and seconds["max_s"]["required"] and seconds["sigma"]["default"] == 1.0


def test_lognormal_in_seconds() -> None:
    sc = _load('[agentic]\nmax_turns = 4\n[agentic.tool_latency_s]\nkind = "lognormal"\nmu = 0.5\nsigma = 0.8\n'
               'max_s = 30.0\n')
    assert sc.agentic == Agentic(max_turns=4, tool_latency_s=LogNormal(0.5, 0.8, 30.0))
    assert _tool_table(sc) == {"kind": "lognormal", "mu": 0.5, "sigma": 0.8, "max_s": 30.0}
    assert "max_tokens" not in sc.to_toml().partition("tool_latency_s")[2].partition("\n")[0]
    assert Scenario.from_toml_str(sc.to_toml()) == sc


def test_empirical_and_file_in_seconds(tmp_path: Path) -> None:
    sc = _load('[agentic.tool_latency_s]\nkind = "empirical"\nvalues = [0.5, 2.0, 30.0]\nweights = [5.0, 3.0, 1.0]\n')
    assert sc.agentic is not None and sc.agentic.tool_latency_s == Empirical([0.5, 2.0, 30.0], [5.0, 3.0, 1.0])
    t = _tool_table(sc)
    assert isinstance(t, dict) and t["kind"] == "empirical" and t["values"] == [0.5, 2.0, 30.0] and "max_tokens" not in t
    assert Scenario.from_toml_str(sc.to_toml()) == sc
    (tmp_path / "lat.csv").write_text("seconds\n1.5\n4.0\n90.0\n")
    sc = _load('[agentic.tool_latency_s]\nfile = "lat.csv"\nmax_s = 60.0\n', tmp_path)
    assert sc.agentic is not None and sc.agentic.tool_latency_s == Empirical.from_file(tmp_path / "lat.csv",
                                                                                      max_tokens=60.0)
    assert _tool_table(sc) == {"file": str(tmp_path / "lat.csv"), "max_s": 60.0}
    assert Scenario.from_toml_str(sc.to_toml()) == sc


def test_a_number_and_the_observation_lengths() -> None:
    sc = _load('[agentic]\ntool_latency_s = 2.5\nobservation_tokens = { kind = "lognormal", mu = 5.0, '
               'max_tokens = 4000.0 }\n')
    assert sc.agentic == Agentic(tool_latency_s=2.5, observation_tokens=LogNormal(5.0, max_tokens=4000.0))
    assert Scenario.from_toml_str(sc.to_toml()) == sc
    # the batch pipelines read and write it too
    sc = sc.replace(pipeline=Synchronous())
    assert Scenario.from_toml_str(sc.to_toml()) == sc


@pytest.mark.parametrize(("table", "message"), [
    ('kind = "lognormal"\nmu = 1.0\nmax_tokens = 30.0',
     "agentic.tool_latency_s.max_tokens: a tool latency is seconds: its cap is max_s (max_tokens is the key of token "
     "lengths), got max_tokens = 30.0"),
    ('dataset = "deepseek-r1"',
     "agentic.tool_latency_s.dataset: the built-in data sets are answer lengths (tokens), not tool latencies: give "
     "values = [...] or file = ... in seconds"),
    ('kind = "lognormal"\nmu = 1.0',
     "agentic.tool_latency_s.max_s: a lognormal tool latency needs max_s = ... (cap of one call's latency, seconds)"),
    ('kind = "lognormal"\nmax_s = 30.0',
     "agentic.tool_latency_s.mu: a lognormal tool latency needs mu = ... (mean of the log-latency (the log of the "
     "median seconds))"),
    ('kind = "lognormal"\nmu = 1.0\nmax_s = 0.5', "agentic.tool_latency_s.max_s: must be in [1, 2**40] seconds, got 0.5"),
    ('kind = "lognormal"\nmu = 101.0\nmax_s = 30.0',
     "agentic.tool_latency_s.mu: must be in [-100, 100] (the log of the median seconds), got 101.0"),
    ('kind = "lognormal"\nmu = 1.0\nmax_s = 30.0\ngroup_correlation = 0.5',
     "agentic.tool_latency_s.group_correlation: unknown key (allowed: ['kind', 'max_s', 'mu', 'sigma'])"),
    ('kind = "gamma"', "agentic.tool_latency_s.kind: must be 'lognormal' or 'empirical' (or give file = ...), got "
                       "'gamma'"),
])
def test_refusals(table: str, message: str) -> None:
    with pytest.raises(rollsim.ScenarioError) as e:
        _load(f"[agentic.tool_latency_s]\n{table}\n")
    assert str(e.value) == message


def test_group_keys_of_a_call_distribution_are_refused() -> None:
    with pytest.raises(rollsim.ScenarioError) as e:
        Agentic(observation_tokens=LogNormal(5.0, 1.0, 4000.0, 0.5))
    assert str(e.value) == ("agentic.observation_tokens.group_correlation: must be 0 (a tool call's draw does not "
                            "depend on its prompt), got 0.5")
    with pytest.raises(rollsim.ScenarioError) as e:
        Agentic(tool_latency_s=Empirical([1.0, 2.0], groups=[0, 1]))
    assert str(e.value) == ("agentic.tool_latency_s.groups: must be None (a tool call's draw does not depend on its "
                            "prompt), got 2 group keys")
    assert not math.isnan(Agentic(tool_latency_s=LogNormal(1.0, 1.0, 30.0)).mean_tool_s())
