#!/usr/bin/env bash
# A slime one-step overlap run (train_async.py: 8 training GPUs, 8 rollout GPUs), written for rollsim in
# the style of THUDM/slime's scripts/run-*.sh launch scripts (argument arrays expanded in the command).
# rollsim import python/rollsim/examples/configs/slime_async.sh
ROLLOUT_ARGS=(
   --rollout-batch-size 32        # prompts per rollout
   --n-samples-per-prompt 8
   --global-batch-size 256        # samples per optimizer step
   --rollout-max-response-len 8192
   --over-sampling-batch-size 48
)
python3 train_async.py \
   --hf-checkpoint /root/Qwen3-4B \
   --actor-num-nodes 1 --actor-num-gpus-per-node 8 \
   --rollout-num-gpus 8 --rollout-num-gpus-per-engine 2 \
   --sglang-server-concurrency 128 \
   ${ROLLOUT_ARGS[@]} \
   --use-dynamic-batch-size --max-tokens-per-gpu 9216
