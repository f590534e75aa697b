"""The bindings read ``Scenario.agentic``'s wire dict by the schema's ``Agentic`` part: a key left out (or
None) takes the schema's default, the same value the Python class defaults to, so a dict written by hand
and ``Agentic()``'s own dict run the same trajectories."""

from __future__ import annotations

import pytest

import rollsim
from rollsim import _rollsim

BASE = rollsim.Scenario(horizon_s=1800.0, rollout_slots=64, batch_size=64, slots_per_instance=16,
                        lengths=rollsim.LogNormal(5.0, 0.8, 2048.0))


def _summary(wire: dict) -> tuple[dict, dict]:
    """The run's summary and agentic summary (compared by repr: a NaN, e.g. the utilization of an
    unbounded environment pool, equals itself)."""
    out = _rollsim.simulate(wire, False)
    return out["summary"], out["agentic"]["summary"]


def test_defaults_of_the_schema_fill_missing_keys():
    full = BASE.replace(agentic=rollsim.Agentic(max_turns=4)).to_dict()
    want = _summary(full)
    assert want[1]["tool_calls"] > 0 and want[1]["tokens_observed"] > 0
    for key in [k for k in full["agentic"] if k != "max_turns"]:
        for missing in ("absent", None):
            wire = BASE.replace(agentic=rollsim.Agentic(max_turns=4)).to_dict()
            if missing == "absent":
                del wire["agentic"][key]
            else:
                wire["agentic"][key] = None
            assert repr(_summary(wire)) == repr(want), (key, missing)


def test_defaults_match_the_schema_table():
    part = next(p for p in _rollsim.SCHEMA["parts"] if p["class"] == "Agentic")
    defaults = {f["name"]: f["default"] for f in part["fields"]}
    ag = rollsim.Agentic()
    assert defaults["tool_latency_s"] == ag.tool_latency_s == 1.0
    assert defaults["observation_tokens"] == ag.observation_tokens == 100.0
    assert defaults["kv_policy"] == ag.kv_policy == "keep"
    assert defaults["on_failure"] == ag.on_failure == "drop"


def test_a_wire_without_max_turns_is_refused():
    wire = BASE.replace(agentic=rollsim.Agentic(max_turns=4)).to_dict()
    del wire["agentic"]["max_turns"]
    with pytest.raises(rollsim.ScenarioError, match="max_turns: missing"):
        _rollsim.simulate(wire, False)


@pytest.mark.parametrize(("key", "value", "message"), [
    ("kv_policy", "evict", "kv_policy: must be 'keep', 'drop' or 'hold', got \"evict\""),
    ("on_failure", "ignore", "on_failure: must be 'drop' or 'retry', got \"ignore\""),
    ("sticky", 3, "sticky: must be True or False, got int 3"),
])
def test_bad_wire_values_name_the_field(key, value, message):
    wire = BASE.replace(agentic=rollsim.Agentic(max_turns=4)).to_dict()
    wire["agentic"][key] = value
    with pytest.raises(rollsim.ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _rollsim.simulate(wire, False)
