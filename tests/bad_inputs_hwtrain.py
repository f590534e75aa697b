"""Bad-input rows of the training model's structural terms (activation checkpointing, tensor /
pipeline / expert parallelism, FP8; ``rollsim.hardware.training``), of a deployment's
``train_options`` and of ``--train-option`` (appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

import rollsim.hardware.training  # noqa: F401  (the rows reach rollsim.hardware.training)

_T = "rollsim.hardware.training.train_step_s('Llama-3.1-8B', 'H100', train_gpus=16, tokens=1e6, sequences=128, "
_ERR = "exit 2: rollsim: error: "
_OPTS = ("ppo_epochs, recompute_logprob, reference, critic, mini_batches, model_parallel, tensor_parallel, "
         "pipeline_parallel, virtual_pipeline, context_parallel, expert_parallel, expert_tensor_parallel, dispatch, "
         "max_tokens_per_gpu, precision, "
         "activation_checkpointing, tp_overlap, ep_overlap, expert_routing, overlap_rollout, mfu")

ROWS: list[tuple[str, str, str, str]] = [
    ("training structure", _T + "activation_checkpointing='partial')", "ScenarioError",
     "activation_checkpointing: must be one of ['none', 'selective', 'full'], or None for the backend's default "
     "({'fsdp2': 'full', 'megatron': 'none'}), got 'partial'"),
    ("training structure", _T + "tensor_parallel=0)", "ScenarioError", "tensor_parallel: must be in [1, 1048576], got 0"),
    ("training structure", _T + "tensor_parallel=3)", "ScenarioError",
     "tensor_parallel: tensor_parallel x pipeline_parallel (3 x 1) must divide train_gpus (16), got 3"),
    ("training structure", _T + "tensor_parallel=4, model_parallel=6)", "ScenarioError",
     "model_parallel: must be a multiple of tensor_parallel x pipeline_parallel (4 x 1), got 6"),
    ("training structure", _T + "pipeline_parallel=0)", "ScenarioError",
     "pipeline_parallel: must be in [1, 1048576], got 0"),
    ("training structure", "rollsim.hardware.training.train_step_s('Qwen3-0.6B', 'H100', train_gpus=64, tokens=1e6, "
     "sequences=128, pipeline_parallel=32)", "ScenarioError",
     "pipeline_parallel: must be at most the model's 28 layers, got 32"),
    ("training structure", _T + "pipeline_parallel=2, virtual_pipeline=0)", "ScenarioError",
     "virtual_pipeline: must be in [1, 1024], got 0"),
    ("training structure", _T + "tp_overlap=1.5)", "ScenarioError", "tp_overlap: must be in [0, 1], got 1.5"),
    ("training structure", _T + "ep_overlap=-0.1)", "ScenarioError", "ep_overlap: must be in [0, 1], got -0.1"),
    ("training structure", _T + "expert_routing='greedy')", "ScenarioError",
     "expert_routing: must be one of ['random', 'consecutive'], got 'greedy'"),
    ("training structure", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, "
     "train_options={'tp': 2})", "ScenarioError",
     f"train_options: unknown argument 'tp' of rollsim.hardware.training.train_step_s (allowed: {_OPTS}); did you "
     "mean tensor_parallel?"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', 'tensor_parallel')",
     "CliExit", _ERR + "--train-option: must be NAME=VALUE, got 'tensor_parallel'"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', 'tp=2')",
     "CliExit", _ERR + f"--train-option: unknown option 'tp' (allowed: {_OPTS}); did you mean tensor_parallel?"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', "
     "'tensor_parallel=two')", "CliExit", _ERR + "--train-option tensor_parallel: must be int, got 'two'"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', "
     "'mfu=high')", "CliExit", _ERR + "--train-option mfu: must be float or none, got 'high'"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-option', "
     "'critic=maybe')", "CliExit", _ERR + "--train-option critic: must be bool, got 'maybe'"),
    ("training structure", "cli('hardware', '--model', 'Qwen3-8B', '--gpu', 'H100', '--train-tokens', '1e6', "
     "'--train-option', 'activation_checkpointing=some')", "CliExit",
     _ERR + "activation_checkpointing: must be one of ['none', 'selective', 'full'], or None for the backend's "
     "default ({'fsdp2': 'full', 'megatron': 'none'}), got 'some'"),
]
