"""Bad slime launch arguments (``rollsim.configs.load`` of a slime script) and the exact error each
gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"

ROWS: list[tuple[str, str, str, str]] = [
    # the required option misspelt: the error names the near miss that was given
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-szie 8 --n-samples-per-prompt 4\\n'))",
     "ScenarioError", "--rollout-batch-size: is required in the slime arguments and was not given; "
     "--rollout-batch-szie (given) is not a slime option: a typo of it?"),
    # slime/utils/arguments.py, slime_validate_args: over_sampling_batch_size >= rollout_batch_size
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8 --over-sampling-batch-size 4\\n'))",
     "ScenarioError", "--over-sampling-batch-size: must be at least --rollout-batch-size (8 prompts; slime asserts "
     "over_sampling_batch_size >= rollout_batch_size), got 4"),
    # an option read as one number given two words (argparse would refuse the second)
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8 16\\n'))", "ScenarioError",
     "--rollout-batch-size: must be an integer in the slime arguments, got list [8, 16]"),
    # an option that takes a value given none
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size --n-samples-per-prompt 4\\n'))",
     "ScenarioError", "--rollout-batch-size: must be an integer in the slime arguments, got bool True"),
    ("config", f"{LOAD}(write('s.sh', 'python train_async.py --rollout-batch-size 8 --rollout-function-path\\n'))",
     "ScenarioError", "--rollout-function-path: must be a string in the slime arguments, got bool True"),
    # the same through overrides
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8\\n'), overrides=['--sglang-server-"
     "concurrency', '0'])", "ScenarioError", "--sglang-server-concurrency: must be in [1, 16777216], got 0"),
]
