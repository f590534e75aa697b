"""Bad-input rows of a metrics row that covers several training steps (``rollsim.calibrate(...,
steps_per_row=)``; appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
GOOD_METRICS = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n"
                "11,5.5,110,450\\n')")
VERL = "write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\n')"
FA = ("write('fa.sh', 'python -m verl.experimental.fully_async_policy.fully_async_main "
      "actor_rollout_ref.actor.ppo_mini_batch_size=4 async_training.trigger_parameter_sync_step=4\\n')")

ROWS: list[tuple[str, str, str, str]] = [
    ("logged steps", f"rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), steps_per_row=0)", "ScenarioError",
     "steps_per_row: must be in [1, 16777216], got 0"),
    ("logged steps", f"rollsim.calibrate({GOOD_METRICS}, {LOAD}({FA}), steps_per_row=2**24 + 1)", "ScenarioError",
     "steps_per_row: must be in [1, 16777216], got 16777217"),
    ("logged steps", f"rollsim.calibrate({GOOD_METRICS}, rollsim.Scenario(), steps_per_row=1.5)", "ScenarioError",
     "steps_per_row: must be an integer in [1, 16777216], got float 1.5"),
    ("logged steps", f"rollsim.calibrate({GOOD_METRICS}, rollsim.Scenario(), steps_per_row=True)", "ScenarioError",
     "steps_per_row: must be an integer in [1, 16777216], got bool True"),
    ("logged steps", f"rollsim.calibrate({GOOD_METRICS}, rollsim.Scenario(), steps_per_row='4')", "ScenarioError",
     "steps_per_row: must be an integer in [1, 16777216], got str '4'"),
]
