"""Bad-input rows of the run keys (``rollsim.sweeps.run_key`` / ``scenario_key``, the key version of
a sweep directory) and of ``_rollsim.simulate_many``'s runs, appended to the table of
``tests/bad_inputs.py`` (the row format is documented there)."""

from __future__ import annotations

MANY = "rollsim._rollsim.simulate_many([Scenario(horizon_s=60.0).to_dict()], "
KEY3 = "'{\"format\": 2, \"rollsim_version\": \"0.1.0\", \"key_version\": 3}'"

ROWS: list[tuple[str, str, str, str]] = [
    ("sweep keys", "rollsim.sweeps.run_key(Scenario().to_dict())", "ScenarioError",
     "scenario: must be a rollsim.Scenario (run keys are computed from its fields since key version 2, not from "
     "the engine dict), got dict"),
    ("sweep keys", "rollsim.sweeps.scenario_key(Scenario(), version=3)", "ScenarioError",
     "version: must be one of the key versions [1, 2], got 3"),
    ("sweep keys", "rollsim.sweeps.run_key(Scenario(), 2**64)", "ScenarioError",
     "seed: must be an integer in [0, 2**64 - 1], got 18446744073709551616"),
    ("sweep keys", f"[write('o', None), __import__('os').mkdir(write('o', None)), write('o/_rollsim_sweep.json', {KEY3}), "
     "rollsim.sweep(Scenario(horizon_s=600.0), progress=False, out=write('o', None))]", "ScenarioError",
     "re:out: '.*/o' holds a sweep whose run keys are of key version 3; this rollsim computes key versions 1 and 2 "
     "\\(a newer rollsim wrote it\\?\\): resume it with that rollsim, or give another out"),
    ("simulate_many", MANY + "[0, 1], [5, 6])", "ScenarioError",
     "index: must be in [0, 0] (one per scenario given), got 1 at run 1"),
    ("simulate_many", MANY + "[0, 0], [5])", "ScenarioError", "seeds: must hold one seed per run (2 indices, 1 seeds)"),
    ("simulate_many", MANY + "[0], [-5])", "ScenarioError",
     "seeds: must be a 1-D array or sequence of integers in [0, 2**64 - 1] (OverflowError: can't convert negative int "
     "to unsigned)"),
    ("simulate_many", MANY + "'0', [5])", "ScenarioError",
     "re:index: must be a 1-D array or sequence of integers \\(.*\\)"),
]
