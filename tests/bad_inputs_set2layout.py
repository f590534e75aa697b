"""Bad inputs of context parallelism in the training model (``context_parallel`` of
``rollsim.hardware.training.train_step_s`` and ``cp_exchange_s``) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

import rollsim.hardware.training  # noqa: F401  (the rows reach rollsim.hardware.training)

_T = "rollsim.hardware.training.train_step_s('Llama-3.1-8B', 'H100', train_gpus=16, tokens=1e6, sequences=128, "
_X = "rollsim.hardware.training.cp_exchange_s('Llama-3.1-8B', 'H100', "

ROWS: list[tuple[str, str, str, str]] = [
    ("training structure", _T + "context_parallel=0)", "ScenarioError",
     "context_parallel: must be in [1, 1048576], got 0"),
    ("training structure", _T + "context_parallel=2.5)", "ScenarioError",
     "context_parallel: must be an integer in [1, 1048576], got float 2.5"),
    ("training structure", _T + "context_parallel=True)", "ScenarioError",
     "context_parallel: must be an integer in [1, 1048576], got bool True"),
    ("training structure", _T + "context_parallel=3)", "ScenarioError",
     "context_parallel: tensor_parallel x pipeline_parallel x context_parallel (1 x 1 x 3) must divide train_gpus "
     "(16), got 3"),
    ("training structure", _T + "tensor_parallel=2, context_parallel=2, model_parallel=8)", "ScenarioError",
     "context_parallel: must be model_parallel / (tensor_parallel x pipeline_parallel) = 8 / (2 x 1) = 4, got 2"),
    ("training structure", _T + "context_parallel=32)", "ScenarioError",
     "context_parallel: tensor_parallel x pipeline_parallel x context_parallel (1 x 1 x 32) must divide train_gpus "
     "(16), got 32"),
    ("training structure", _X + "cp=0)", "ScenarioError", "context_parallel: must be in [1, 1048576], got 0"),
    ("training structure", _X + "tp=0, cp=2)", "ScenarioError", "tensor_parallel: must be in [1, 1048576], got 0"),
]
