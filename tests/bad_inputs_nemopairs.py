"""Bad inputs of NeMo RL's async GRPO preset (``rollsim.presets.nemo_rl_async``) and the exact error each
gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("presets", "presets.nemo_rl_async(0)", "ScenarioError",
     "max_trajectory_age_steps: must be in [1, 4294967295], got 0"),
    ("presets", "presets.nemo_rl_async(2**32)", "ScenarioError",
     "max_trajectory_age_steps: must be in [1, 4294967295], got 4294967296"),
    ("presets", "presets.nemo_rl_async(1.5)", "ScenarioError",
     "max_trajectory_age_steps: must be an integer in [1, 4294967295], got float 1.5"),
    ("presets", "presets.nemo_rl_async(True)", "ScenarioError",
     "max_trajectory_age_steps: must be an integer in [1, 4294967295], got bool True"),
    ("presets", "presets.nemo_rl_async(1, in_flight_weight_updates='yes')", "ScenarioError",
     "in_flight_weight_updates: must be True or False, got 'yes'"),
    ("presets", "presets.nemo_rl_async(1, scenario=3)", "ScenarioError", "scenario: must be a rollsim.Scenario, got int"),
]
