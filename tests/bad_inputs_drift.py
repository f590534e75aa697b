"""Bad-input rows of lengths that drift (``Scenario.length_drift``, ``rollsim.LengthDrift``; format:
the top of tests/bad_inputs.py)."""

from __future__ import annotations

_FIELDS = "['feedback', 'kind', 'max_tokens', 'rate', 'table']"
_SCALES = "length_drift.table: scales must be in (0, 1e6]; item "
_VERSIONS = "length_drift.table: versions must be finite, >= 0 and strictly increasing; item "

ROWS: list[tuple[str, str, str, str]] = [
    ("length drift", "Scenario(length_drift=1.5)", "ScenarioError",
     "length_drift: must be None or LengthDrift(...), got 1.5"),
    ("length drift", "Scenario(length_drift={'kind': 'linear'})", "ScenarioError",
     "length_drift: must be None or LengthDrift(...), got {'kind': 'linear'}"),
    ("length drift", "rollsim.LengthDrift(kind=None)", "ScenarioError",
     "length_drift.kind: must be one of linear, log, exp, table, got None"),
    ("length drift", "rollsim.LengthDrift(rate=math.nan)", "ScenarioError", "length_drift.rate: must be in [-1, 100], got nan"),
    ("length drift", "rollsim.LengthDrift(rate='fast')", "ScenarioError", "length_drift.rate: must be a number, got str 'fast'"),
    ("length drift", "rollsim.LengthDrift(feedback=2)", "ScenarioError", "length_drift.feedback: must be in [0, 1], got 2.0"),
    ("length drift", "rollsim.LengthDrift(feedback=-0.1)", "ScenarioError",
     "length_drift.feedback: must be in [0, 1], got -0.1"),
    ("length drift", "rollsim.LengthDrift(max_tokens=0.5)", "ScenarioError",
     "length_drift.max_tokens: must be in [1, 2**40] tokens, got 0.5"),
    ("length drift", "rollsim.LengthDrift('table', table=((0, 0.0),))", "ScenarioError", _SCALES + "0 has scale 0.0"),
    ("length drift", "rollsim.LengthDrift('table', table=((0, 1.0), (1, 2e6)))", "ScenarioError",
     _SCALES + "1 has scale 2000000.0"),
    ("length drift", "rollsim.LengthDrift('table', table=((-1, 1.0),))", "ScenarioError", _VERSIONS + "0 has version -1.0"),
    ("length drift", "rollsim.LengthDrift('table', table=((0, 1.0), (math.inf, 2.0)))", "ScenarioError",
     _VERSIONS + "1 has version inf"),
    ("length drift", "rollsim.LengthDrift('table', table=(1, 2))", "ScenarioError",
     "length_drift.table: must be (version, scale) pairs, got (1, 2)"),
    ("length drift", "rollsim.LengthDrift('table', table=((0, 'x'),))", "ScenarioError",
     "length_drift.table: must be a number, got str 'x'"),
    ("length drift", "rollsim.LengthDrift(speed=1)", "ScenarioError",
     f"length_drift.speed: unknown field of LengthDrift (fields: {_FIELDS})"),
    ("length drift", "Scenario(slots_per_instance=8, kv_cache_tokens=20000.0, "
     "length_drift=rollsim.LengthDrift(max_tokens=30000.0))", "ScenarioError",
     "kv_cache_tokens: must be >= prompt_tokens + the longest possible answer + 1 = 0 + 30000 + 1 = 30001 (a request "
     "must fit alone, or the run could deadlock), got 20000"),
    # from a run's metrics
    ("length drift", "rollsim.LengthDrift.from_metrics([0.0], LogNormal())", "ScenarioError",
     "mean: must be > 0 and below the cap (16384 tokens); item 0 is 0.0"),
    ("length drift", "rollsim.LengthDrift.from_metrics([20000.0], LogNormal())", "ScenarioError",
     "mean: must be > 0 and below the cap (16384 tokens); item 0 is 20000.0"),
    ("length drift", "rollsim.LengthDrift.from_metrics([], LogNormal())", "ScenarioError",
     "mean: must be a non-empty sequence of mean lengths, got shape (0,)"),
    ("length drift", "rollsim.LengthDrift.from_metrics([100.0, 200.0], LogNormal(), steps=[0])", "ScenarioError",
     "steps: must have one step per mean (2 means, 1 steps)"),
    ("length drift", "rollsim.LengthDrift.from_metrics([100.0, 200.0], LogNormal(), steps=[1, 1])", "ScenarioError",
     "steps: must be finite, >= 0 and strictly increasing; item 1 is 1.0"),
    ("length drift", "rollsim.LengthDrift.from_metrics([100.0], 3)", "ScenarioError",
     "lengths: must be LogNormal(...) or Empirical(...), got int"),
    # scenario files
    ("length drift", "Scenario.from_toml_str('[length_drift]\\nspeed = 1')", "ScenarioError",
     f"length_drift.speed: unknown field of LengthDrift (fields: {_FIELDS})"),
    ("length drift", "Scenario.from_toml_str('length_drift = 3')", "ScenarioError",
     "length_drift: must be None or LengthDrift(...), got 3"),
    ("length drift", "Scenario.from_toml_str('[length_drift]\\nkind = \"quadratic\"')", "ScenarioError",
     "length_drift.kind: must be one of linear, log, exp, table, got 'quadratic'"),
]
