"""Bad inputs of the leftovers: a slime Megatron-LM layout the training GPUs cannot hold (the arguments
reach the deployment's training model and the weight-sync layout now) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
_S = "python3 train.py --hf-checkpoint /root/Qwen3-30B-A3B --actor-num-gpus-per-node 8 --rollout-batch-size 8 "

ROWS: list[tuple[str, str, str, str]] = [
    # TP2 x PP3 does not divide 8 training GPUs: refused by the weight-sync layout, with or without an accelerator
    ("config", f"{LOAD}(write('s.sh', {_S + '--tensor-model-parallel-size 2 --pipeline-model-parallel-size 3'!r}"
     " + '\\n'))", "ScenarioError",
     "--tensor-model-parallel-size, --pipeline-model-parallel-size: the training layout (tensor x context x pipeline "
     "parallel = 6) must divide the 8 training GPUs, got 8 / 6 = 1.33333 data-parallel replicas"),
    # EP8 over the 4 data-parallel ranks of TP2 on 8 GPUs: refused by the deployment's training model
    ("config", f"{LOAD}(write('s.sh', {_S + '--tensor-model-parallel-size 2 --expert-model-parallel-size 8'!r}"
     " + '\\n'), gpu='H100')", "ScenarioError",
     "--tensor-model-parallel-size, --expert-model-parallel-size: the training layout (tensor_parallel 2, "
     "expert_parallel 8 on 8 training GPUs) is refused: expert_parallel: must divide the data-parallel ranks "
     "(train_gpus / model_parallel = 4), got 8"),
    # a pipeline's name where a pipeline goes: the error points at the one parser of names
    ("scenario", "rollsim.Scenario(pipeline='fully-async')", "ScenarioError",
     "pipeline: must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got 'fully-async' (a name, "
     "not a pipeline: rollsim.pipelines.pipeline_from_name('fully-async') gives FullyAsync())"),
    ("scenario", "rollsim.Scenario().replace(pipeline='async')", "ScenarioError",
     "pipeline: must be Synchronous(), OneStepAsync(), OffPolicy(k) or FullyAsync(...), got 'async' "
     "(rollsim.pipelines.pipeline_from_name makes a pipeline of its name: 'sync', 'one-step', 'k-step:K' or "
     "'fully-async')"),
]
