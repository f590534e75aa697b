"""Bad inputs of the held-out sets (``rollsim.hardware.held_out``) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", "__import__('rollsim.hardware.held_out', fromlist=['_']).held_out_table(set=3)", "ScenarioError",
     "set: must be 1 or 2 (the held-out sets), got 3"),
    ("hardware", "__import__('rollsim.hardware.held_out', fromlist=['_']).held_out_rows(set=0)", "ScenarioError",
     "set: must be 1 or 2 (the held-out sets), got 0"),
    ("hardware", "__import__('rollsim.hardware.held_out', fromlist=['_']).load(set='2')", "ScenarioError",
     "set: must be 1 or 2 (the held-out sets), got '2'"),
    ("hardware", "__import__('rollsim.hardware.held_out', fromlist=['_']).load(set=True)", "ScenarioError",
     "set: must be 1 or 2 (the held-out sets), got True"),
]
