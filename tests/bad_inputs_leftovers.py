"""Bad inputs of the leftovers: a slime Megatron-LM layout the training GPUs cannot hold (the arguments
reach the deployment's training model and the weight-sync layout now) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
_S = "python3 train.py --hf-checkpoint /root/Qwen3-30B-A3B --actor-num-gpus-per-node 8 --rollout-batch-size 8 "

ROWS: list[tuple[str, str, str, str]] = [
    # TP2 x PP3 does not divide 8 training GPUs: refused by the one layout check, with or without an accelerator
    ("config", f"{LOAD}(write('s.sh', {_S + '--tensor-model-parallel-size 2 --pipeline-model-parallel-size 3'!r}"
     " + '\\n'))", "ScenarioError",
     "--tensor-model-parallel-size, --pipeline-model-parallel-size: the training layout (tensor_parallel 2, "
     "pipeline_parallel 3 on 8 training GPUs) is refused: tensor_parallel: tensor_parallel x pipeline_parallel (2 x 3) "
     "must divide train_gpus (8), got 6"),
    # EP8 with TP2 on 8 GPUs: Megatron-Core's expert grid is expert TP (default: TP) x EP x PP = 16 GPUs
    ("config", f"{LOAD}(write('s.sh', {_S + '--tensor-model-parallel-size 2 --expert-model-parallel-size 8'!r}"
     " + '\\n'), gpu='H100')", "ScenarioError",
     "--tensor-model-parallel-size, --expert-model-parallel-size: the training layout (tensor_parallel 2, "
     "expert_parallel 8 on 8 training GPUs) is refused: expert_parallel: expert_tensor_parallel x expert_parallel x "
     "pipeline_parallel (2 x 8 x 1 = 16; expert_tensor_parallel defaults to tensor_parallel) must divide train_gpus "
     "(8), got 8: Megatron-Core folds the expert group over the tensor, context and data-parallel GPUs of each "
     "pipeline stage (megatron/core/parallel_state.py, initialize_model_parallel); expert_tensor_parallel=1 allows it"),
    # a pipeline's name where a pipeline goes: the error points at the one parser of names
    ("scenario", "rollsim.Scenario(pipeline='fully-async')", "ScenarioError",
     "pipeline: must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got 'fully-async' (a name, "
     "not a pipeline: rollsim.pipelines.pipeline_from_name('fully-async') gives FullyAsync())"),
    ("scenario", "rollsim.Scenario().replace(pipeline='async')", "ScenarioError",
     "pipeline: must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got 'async' "
     "(rollsim.pipelines.pipeline_from_name makes a pipeline of its name: 'sync', 'one-step', 'k-step:K' or "
     "'fully-async')"),
]
