"""Bad inputs of ``rollsim split --model`` with a model-parallel training layout: a layout no
training group under ``--gpus`` allows is refused saying so, in split's flags; appended to
:data:`tests.bad_inputs.ROWS`."""

from __future__ import annotations

_DEPLOY = "cli('split', '--gpus', '4', '--model', 'Qwen3-0.6B', '--gpu', 'H100', '--horizon-s', '300', "

ROWS: list[tuple[str, str, str, str]] = [
    ("split", _DEPLOY + "'--train-option', 'tensor_parallel=8')", "CliExit",
     "exit 2: rollsim: error: tensor_parallel: tensor_parallel x pipeline_parallel (8 x 1) must divide train_gpus (1), "
     "got 8 (on 1 training GPU; no training group of 2 to 3 GPUs, which --gpus 4 leaves beside one rollout instance, "
     "allows these --train-option values either)"),
    ("split", _DEPLOY + "'--train-backend', 'megatron', '--train-option', 'expert_parallel=8')", "CliExit",
     "exit 2: rollsim: error: expert_parallel: expert_tensor_parallel x expert_parallel x pipeline_parallel (1 x 8 x "
     "1 = 8) must divide train_gpus (1), got 8: Megatron-Core folds the expert group over the tensor, context and "
     "data-parallel GPUs of each pipeline stage (megatron/core/parallel_state.py, initialize_model_parallel) (on 1 "
     "training GPU; no training group of 2 to 3 GPUs, which --gpus 4 leaves beside one rollout instance, "
     "allows these --train-option values either)"),
]
ROWS += [
    ("split", "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-4', '--admission-eta', '-1')", "CliExit",
     "exit 2: rollsim: error: --admission-eta: must be in [0, 4294967295], got -1"),
    ("split", "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-4', '--admission-eta', '1', '--pipeline', 'sync')",
     "CliExit", "exit 2: rollsim: error: --admission-eta applies to --pipeline fully-async only, not sync"),
]
