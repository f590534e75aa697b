"""Bad inputs of the leftovers (2): a Megatron layout whose expert grid (expert tensor parallel x expert
parallel x pipeline parallel, Megatron-Core's MoE parallel folding) the training GPUs do not divide, an
expert-parallel size that does not divide the model's experts, and the exact error each gets; appended to
the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_T = "rollsim.hardware.training.train_step_s('Qwen3-30B-A3B', 'H100', backend='megatron', tokens=1e6, sequences=128, "
_FOLD = ("Megatron-Core folds the expert group over the tensor, context and data-parallel GPUs of each pipeline stage "
         "(megatron/core/parallel_state.py, initialize_model_parallel)")
_S = ("python3 train.py --hf-checkpoint /root/Qwen3-30B-A3B --actor-num-gpus-per-node 8 --rollout-batch-size 8 "
      "--tensor-model-parallel-size 2 --expert-model-parallel-size 8 --expert-tensor-parallel-size 2")

ROWS: list[tuple[str, str, str, str]] = [
    # TP 2, EP 8 on 8 GPUs: the expert grid's default expert TP is TP, 2 x 8 = 16 GPUs; expert TP 1 fits
    ("hardware", _T + "train_gpus=8, tensor_parallel=2, expert_parallel=8)", "ScenarioError",
     "expert_parallel: expert_tensor_parallel x expert_parallel x pipeline_parallel (2 x 8 x 1 = 16; "
     f"expert_tensor_parallel defaults to tensor_parallel) must divide train_gpus (8), got 8: {_FOLD}; "
     "expert_tensor_parallel=1 allows it"),
    ("hardware", _T + "train_gpus=16, pipeline_parallel=2, expert_parallel=16)", "ScenarioError",
     f"expert_parallel: expert_tensor_parallel x expert_parallel x pipeline_parallel (1 x 16 x 2 = 32) must divide "
     f"train_gpus (16), got 16: {_FOLD}"),
    ("hardware", _T + "train_gpus=6, expert_parallel=3)", "ScenarioError",
     "expert_parallel: must divide the model's 128 routed experts (Megatron-LM: megatron/training/arguments.py), got 3"),
    ("hardware", _T + "train_gpus=8, expert_parallel=8, expert_tensor_parallel=0)", "ScenarioError",
     "expert_tensor_parallel: must be in [1, 1048576], got 0"),
    # slime's --expert-tensor-parallel-size reaches the layout check, named as the command's arguments
    ("config", f"rollsim.configs.load(write('s.sh', {_S!r} + '\\n'), gpu='H100')", "ScenarioError",
     "--tensor-model-parallel-size, --expert-model-parallel-size, --expert-tensor-parallel-size: the training layout "
     "(tensor_parallel 2, expert_parallel 8, expert_tensor_parallel 2 on 8 training GPUs) is refused: expert_parallel: "
     f"expert_tensor_parallel x expert_parallel x pipeline_parallel (2 x 8 x 1 = 16) must divide train_gpus (8), got "
     f"8: {_FOLD}; expert_tensor_parallel=1 allows it"),
]
