"""Bad inputs of ``rollsim.calibration.fit``'s ``gen_overhead`` (the generation overhead per step fixed from
elsewhere, as the calibration does with a pause fitted on the rows' wall time) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_FIT = "rollsim.calibration.fit(None, batch=256, slots=512, cap=4096.0, steps_per_row=4, gen_overhead=%s)"

ROWS: list[tuple[str, str, str, str]] = [
    ("calibrate", _FIT % "-1.0", "ScenarioError", "gen_overhead: must be in [0, 1e12] seconds, got -1.0"),
    ("calibrate", _FIT % "math.nan", "ScenarioError", "gen_overhead: must be in [0, 1e12] seconds, got nan"),
    ("calibrate", _FIT % "math.inf", "ScenarioError", "gen_overhead: must be in [0, 1e12] seconds, got inf"),
    ("calibrate", _FIT % "'10'", "ScenarioError", "gen_overhead: must be a number of seconds, got str '10'"),
]
