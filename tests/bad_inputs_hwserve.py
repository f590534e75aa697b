"""Bad inputs of ``rollsim.hardware.serving.ampere_compute_factor`` (the Ampere decode-compute factor
read off microsoft/vidur's profiled linear layers) and the exact error each gets; appended to the table
of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", "rollsim.hardware.serving.ampere_compute_factor(tokens=(64, 1024))", "ScenarioError",
     "tokens[1]: must be in [64, 512], got 1024"),
    ("hardware", "rollsim.hardware.serving.ampere_compute_factor(tokens=(256, 64))", "ScenarioError",
     "tokens[1]: must be in [256, 512], got 64"),
    ("hardware", "rollsim.hardware.serving.ampere_compute_factor(tokens=(0, 64))", "ScenarioError",
     "tokens[0]: must be in [1, 512], got 0"),
    ("hardware", "rollsim.hardware.serving.ampere_compute_factor(tokens=64)", "ScenarioError",
     "tokens: must be a (low, high) pair of token counts, got 64"),
    ("hardware", "rollsim.hardware.serving.ampere_compute_factor(tokens=(65, 71))", "ScenarioError",
     "tokens: no token count of the table in [65, 71] was profiled on both GPUs"),
]
