"""Bad-input rows of the training-cost and colocated-switching estimates (``rollsim.hardware.training``
and ``rollsim.hardware.switching``; appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

import rollsim.hardware.switching  # (the rows' code reaches these modules as rollsim.hardware.*)
import rollsim.hardware.training  # noqa: F401

_T = "rollsim.hardware.training."
_S = "rollsim.hardware.switching."

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- training step
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=0, tokens=1e6, sequences=512)", "ScenarioError",
     "train_gpus: must be in [1, 1048576], got 0"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16)", "ScenarioError",
     "tokens: give tokens and sequences (or lengths), got tokens=None, sequences=None"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=100, sequences=512)", "ScenarioError",
     "sequences: must be at most tokens (100), got 512"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512, backend='deepspeed')",
     "ScenarioError", "backend: must be one of ['fsdp2', 'megatron'], got 'deepspeed'"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512, mfu=0)",
     "ScenarioError", "mfu: must be in (0, 1], got 0"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'A100-80G', train_gpus=8, tokens=1e6, sequences=512, precision='fp8')",
     "ScenarioError", "precision: 'fp8' needs an accelerator with FP8 tensor cores, A100-80G has none"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512, precision='fp16')",
     "ScenarioError", "precision: must be 'bf16' or 'fp8', got 'fp16'"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, model_parallel=3, tokens=1e6, sequences=512)",
     "ScenarioError", "model_parallel: must divide train_gpus (16), got 3"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512, ppo_epochs=0)",
     "ScenarioError", "ppo_epochs: must be in [1, 1000], got 0"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512, critic='yes')",
     "ScenarioError", "critic: must be True or False, got 'yes'"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=2, lengths=[100, 200, 300])", "ScenarioError",
     "ranks: must divide the number of sequences (3) for dispatch='balanced', got 2"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=1, lengths=[100, 0.5])", "ScenarioError",
     "lengths: every length must be in [1, 1e9] tokens, got 0.5 at index 1"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=1, lengths=[])", "ScenarioError",
     "lengths: must be a non-empty 1-d sequence of token counts, got shape (0,)"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=2, lengths=[100, 200], mini_batches=2)",
     "ScenarioError", "mini_batches: must be at most the sequences of each rank (1), got 2"),
    ("training", f"{_T}train_step_s('Qwen3-4B', 'H20', train_gpus=1, lengths=[100, 200], dispatch='packed')",
     "ScenarioError", "max_tokens_per_gpu: dispatch='packed' needs the micro-batch token budget, got None"),
    ("training", f"{_T}assign_ranks([100, 200], 1, dispatch='lpt', max_tokens_per_gpu=4096)", "ScenarioError",
     "max_tokens_per_gpu: applies to dispatch='packed' only, got dispatch='lpt'"),
    ("training", f"{_T}assign_ranks([1, 2, 3, 4], 2, dispatch='balanced_minibatch', mini_batches=4)", "ScenarioError",
     "mini_batches: ranks x mini_batches (2 x 4) must divide the number of sequences (4) for "
     "dispatch='balanced_minibatch'"),
    ("training", f"{_T}engine_train_params('Qwen3-4B', 'H20', train_gpus=16, mean_tokens=1200, slowest_fraction=0.5)",
     "ScenarioError", "slowest_fraction: must be in [1, 1e6], got 0.5"),
    ("training", f"{_T}train_step_s('Qwen9-4B', 'H20', train_gpus=16, tokens=1e6, sequences=512)", "ScenarioError",
     "re:model: .*Qwen9-4B.*"),
    # ---------------------------------------------------------------- colocated switching
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=0, kv_cache_bytes=0)", "ScenarioError",
     "gpus: must be in [1, 1048576], got 0"),
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=-1)", "ScenarioError",
     "kv_cache_bytes: must be in [0, 1e15] bytes, got -1"),
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=0, engine='trtllm')", "ScenarioError",
     "engine: must be one of ['vllm', 'vllm-level2', 'sglang'], got 'trtllm'"),
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=0, preallocated=None)", "ScenarioError",
     "preallocated: must be True or False, got None"),
]
