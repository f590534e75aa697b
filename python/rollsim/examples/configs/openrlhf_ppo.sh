#!/usr/bin/env bash
# An OpenRLHF async GRPO run (8 actor GPUs, 4 vLLM engines), written for rollsim in the style of
# OpenRLHF/OpenRLHF's examples/scripts/train_*_ray*.sh.
# rollsim import python/rollsim/examples/configs/openrlhf_ppo.sh
python3 -m openrlhf.cli.train_ppo_ray \
   --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
   --vllm.num_engines 4 --vllm.tensor_parallel_size 2 \
   --actor.model_name_or_path Qwen/Qwen3-4B \
   --rollout.batch_size 128 --rollout.n_samples_per_prompt 8 \
   --train.batch_size 256 --rollout.max_new_tokens 4096 --data.max_len 5120 \
   --train.async_enable --train.async_queue_size 1
