"""Bad inputs of multi-turn agentic rollouts (``rollsim.Agentic``, ``Scenario.agentic``) and the exact
error each gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

FIELDS = ("['env_overhead_s', 'env_slots', 'failure_rate', 'kv_policy', 'max_context_tokens', 'max_trajectories', 'max_turns', "
          "'observation_tokens', 'on_failure', 'sticky', 'stop_prob', 'switch_version_at_turn', 'tool_latency_s', "
          "'turn_scale']")
DIST = "or LogNormal(...) / Empirical(...)"

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- Agentic fields
    ("agentic", "rollsim.Agentic(foo=1)", "ScenarioError", f"agentic.foo: unknown field of Agentic (fields: {FIELDS})"),
    ("agentic", "rollsim.Agentic(*range(15))", "ScenarioError", "agentic: Agentic(...): too many positional arguments"),
    ("agentic", "rollsim.Agentic(max_turns=0)", "ScenarioError", "agentic.max_turns: must be in [1, 1048576], got 0"),
    ("agentic", "rollsim.Agentic(max_turns=2**20 + 1)", "ScenarioError", "agentic.max_turns: must be in [1, 1048576], got 1048577"),
    ("agentic", "rollsim.Agentic(tool_latency_s=-1.0)", "ScenarioError",
     f"agentic.tool_latency_s: must be in [0, 1e9] seconds, {DIST}, got -1.0"),
    ("agentic", "rollsim.Agentic(tool_latency_s='slow')", "ScenarioError",
     f"agentic.tool_latency_s: must be a number of seconds, {DIST}, got str 'slow'"),
    ("agentic", "rollsim.Agentic(observation_tokens=math.inf)", "ScenarioError",
     f"agentic.observation_tokens: must be in [0, 1e9] tokens, {DIST}, got inf"),
    ("agentic", "rollsim.Agentic(stop_prob=1.5)", "ScenarioError", "agentic.stop_prob: must be in [0, 1], got 1.5"),
    ("agentic", "rollsim.Agentic(failure_rate=1.0)", "ScenarioError", "agentic.failure_rate: must be in [0, 1), got 1.0"),
    ("agentic", "rollsim.Agentic(kv_policy='evict')", "ScenarioError",
     "agentic.kv_policy: must be 'keep', 'drop' or 'hold', got 'evict'"),
    ("agentic", "rollsim.Agentic(on_failure='ignore')", "ScenarioError", "agentic.on_failure: must be 'drop' or 'retry', got 'ignore'"),
    ("agentic", "rollsim.Agentic(env_slots=0)", "ScenarioError",
     "agentic.env_slots: must be in [1, 16777216], or None (unbounded), got 0"),
    ("agentic", "rollsim.Agentic(max_trajectories=0)", "ScenarioError",
     "agentic.max_trajectories: must be in [1, 16777216], or None (unbounded), got 0"),
    ("agentic", "Scenario(group_size=8, agentic=rollsim.Agentic(max_trajectories=4))", "ScenarioError",
     "agentic.max_trajectories: must be >= group_size (8), or None (unbounded), got 4"),
    ("agentic", "rollsim.Agentic(env_overhead_s=-1)", "ScenarioError", "agentic.env_overhead_s: must be in [0, 1e9] seconds, got -1"),
    ("agentic", "rollsim.Agentic(turn_scale=(1.0, 0.0))", "ScenarioError", "agentic.turn_scale[1]: must be in [1e-6, 1e6], got 0.0"),
    ("agentic", "rollsim.Agentic(turn_scale='fast')", "ScenarioError",
     "agentic.turn_scale: must be a sequence of numbers in [1e-6, 1e6], got 'fast'"),
    ("agentic", "rollsim.Agentic(max_context_tokens=0)", "ScenarioError",
     "agentic.max_context_tokens: must be in (0, 1e12] tokens, or None (no bound), got 0"),
    ("agentic", "rollsim.Agentic(sticky=1)", "ScenarioError", "agentic.sticky: must be True or False, got 1"),
    ("agentic", "rollsim.Agentic(switch_version_at_turn=None)", "ScenarioError",
     "agentic.switch_version_at_turn: must be True or False, got None"),
    # ---------------------------------------------------------------- against the scenario
    ("agentic", "Scenario(agentic=5)", "ScenarioError", "agentic: must be None or Agentic(...), got 5"),
    ("agentic", "Scenario(prompt_tokens=500.0, agentic=rollsim.Agentic(max_context_tokens=400.0))", "ScenarioError",
     "agentic.max_context_tokens: must be > prompt_tokens (500.0), or None (no bound), got 400.0"),
    ("agentic", "Scenario(slots_per_instance=8, kv_cache_tokens=100000.0, agentic=rollsim.Agentic())", "ScenarioError",
     "agentic.max_context_tokens: with kv_cache_tokens, must be at most kv_cache_tokens - 1 = 99999.0 (a trajectory "
     "must fit alone), got None"),
]
