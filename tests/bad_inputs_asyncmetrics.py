"""Bad-input rows of ``rollsim.calibration.synthetic_metrics``'s framework names (appended to
``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

_SC = "Scenario(rollout_slots=64, batch_size=64, lengths=LogNormal(mu=6.0, sigma=0.5, max_tokens=2048)"

ROWS: list[tuple[str, str, str, str]] = [
    ("metrics", f"rollsim.calibration.synthetic_metrics({_SC}), 3, framework='openrlhf')", "ScenarioError",
     "framework: must be one of generic, verl, areal, slime, got 'openrlhf'"),
    ("metrics", f"rollsim.calibration.synthetic_metrics({_SC}), 3, framework=None)", "ScenarioError",
     "framework: must be one of generic, verl, areal, slime, got None"),
    ("metrics", f"rollsim.calibration.synthetic_metrics({_SC}, sync_every=4, pipeline=FullyAsync()), 3, "
     "framework='verl')", "ScenarioError",
     "framework: verl's fully async trainer logs one row per sync, summed over its 4 steps (sync_every): generate "
     "with sync_every = 1"),
]
