"""Bad inputs of agentic trajectories in the batch pipelines, the agentic TOML tables and the agentic
command-line flags, and the exact error each gets; appended to the table of ``tests/bad_inputs.py``
(see its format)."""

from __future__ import annotations

OVER = ("must be None with agentic (a batch waits for all its trajectories: stopping those in a tool call at the "
        "batch's end is not modelled), got")

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- batch pipelines
    ("agentic", "Scenario(pipeline=Synchronous(0.5), agentic=rollsim.Agentic())", "ScenarioError",
     f"pipeline.over_sampling: {OVER} 0.5"),
    ("agentic", "Scenario(pipeline=Synchronous(math.inf, keep_partial=True), agentic=rollsim.Agentic())",
     "ScenarioError", f"pipeline.over_sampling: {OVER} inf"),
]
