#!/usr/bin/env bash
# A verl fully_async_policy launch (8 rollout GPUs + 8 trainer GPUs), written for rollsim in the style of
# verl/experimental/fully_async_policy/shell/*.sh: Hydra overrides on the command line.
# rollsim import python/rollsim/examples/configs/verl_fully_async.sh
python -m verl.experimental.fully_async_policy.fully_async_main \
    data.max_prompt_length=1024 \
    data.max_response_length=8192 \
    data.gen_batch_size=1 \
    actor_rollout_ref.model.path=Qwen/Qwen3-4B \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    async_training.require_batches=1 \
    async_training.trigger_parameter_sync_step=8 \
    async_training.staleness_threshold=0.5 \
    async_training.partial_rollout=True \
    trainer.nnodes=1 trainer.n_gpus_per_node=8 \
    rollout.nnodes=1 rollout.n_gpus_per_node=8 \
    rollout.total_rollout_steps=51200
