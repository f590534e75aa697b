"""Bad inputs of the ``Agentic`` part checked by the ranges of the engine's schema
(``rollsim._rollsim.SCHEMA["parts"]``, class ``Agentic``): in Python and, for the wire dict that
bypasses the class, in the engine (``AgenticConfig::validate``), with the same messages. Appended
to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

# the engine's form of an agentic scenario, with one agentic field replaced
W = ("rollsim._rollsim.simulate(dict(rollsim.Scenario(horizon_s=60.0).to_dict(), "
     "agentic=dict(rollsim.Agentic(max_turns=2).to_dict(), ")

ROWS: list[tuple[str, str, str, str]] = [
    ("agentic", "rollsim.Agentic(env_slots=1.5)", "ScenarioError",
     "agentic.env_slots: must be an integer in [1, 16777216], or None (unbounded), got float 1.5"),
    ("agentic", "rollsim.Agentic(max_trajectories=2**24 + 1)", "ScenarioError",
     "agentic.max_trajectories: must be in [1, 16777216], or None (unbounded), got 16777217"),
    ("agentic", "rollsim.Agentic(failure_rate=2.0)", "ScenarioError", "agentic.failure_rate: must be in [0, 1), got 2.0"),
    ("agentic", "rollsim.Agentic(failure_rate=float('nan'))", "ScenarioError",
     "agentic.failure_rate: must be in [0, 1), got nan"),
    ("agentic", f"{W}stop_prob=1.5)))", "ScenarioError", "agentic.stop_prob: must be in [0, 1], got 1.5"),
    ("agentic", f"{W}failure_rate=1.0)))", "ScenarioError", "agentic.failure_rate: must be in [0, 1), got 1.0"),
    ("agentic", f"{W}env_overhead_s=-1.0)))", "ScenarioError",
     "agentic.env_overhead_s: must be in [0, 1e9] seconds, got -1.0"),
    ("agentic", f"{W}turn_scale=[1.0, 0.0])))", "ScenarioError",
     "agentic.turn_scale: must be in [1e-6, 1e6]; item 1 is 0.0"),
]
