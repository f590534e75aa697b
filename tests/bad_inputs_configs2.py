"""Bad framework configs checked against the frameworks' own rules (``rollsim.configs.load``): OpenRLHF's
asserts in ``openrlhf/cli/train_ppo_ray.py``, AReaL's MoE backend spelling and verl's fully async recipe;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
ORL = "python -m openrlhf.cli.train_ppo_ray"
FA = "python -m verl.experimental.fully_async_policy.fully_async_main"

ROWS: list[tuple[str, str, str, str]] = [
    # OpenRLHF: colocate_all without async needs the vLLM engines to fill the actor's GPUs (train_ppo_ray.py asserts it)
    ("config", f"{LOAD}(write('o.sh', '{ORL} --train.colocate_all --vllm.num_engines 3 --vllm.tensor_parallel_size 2\\n'))",
     "ScenarioError", "--vllm.num_engines: with --train.colocate_all, vllm.num_engines x vllm.tensor_parallel_size must "
     "equal the actor's GPUs (1 x 8 = 8), got 3 x 2 = 6"),
    ("config", f"{LOAD}(write('o.sh', '{ORL} --train.partial_rollout_enable\\n'))", "ScenarioError",
     "--train.partial_rollout_enable: requires --train.async_enable (train_ppo_ray.py asserts it)"),
    # AReaL: a MoE hybrid backend without its attention part
    ("config", f"{LOAD}(write('a.yaml', 'rollout: {{backend: sglang:d2}}\\nactor: {{backend: \"megatron:(ffn:d2e4)\"}}\\n'))",
     "ScenarioError", "actor.backend: must be a backend string such as 'sglang:d4p1t1' (name:d<data>p<pipeline>t<tensor>), "
     "got 'megatron:(ffn:d2e4)'"),
    ("config", f"{LOAD}(write('a.yaml', 'rollout: {{backend: \"sglang:d2\", max_head_offpolicyness: 4294967296}}\\n"
     f"actor: {{backend: \"fsdp:d2\"}}\\n'))", "ScenarioError",
     "rollout.max_head_offpolicyness: must be in [0, 4294967295], got 4294967296"),
    # verl fully_async: the recipe's own checks (fully_async_rollouter.py asserts trigger_parameter_sync_step >= 1)
    ("config", f"{LOAD}(write('f.sh', '{FA} async_training.trigger_parameter_sync_step=0\\n'))", "ScenarioError",
     "async_training.trigger_parameter_sync_step: must be in [1, 16777216], got 0"),
    ("config", f"{LOAD}(write('f.sh', '{FA} async_training.require_batches=2.5\\n'))", "ScenarioError",
     "async_training.require_batches: must be an integer in the verl config, got float 2.5"),
    ("config", f"{LOAD}(write('f.sh', '{FA} actor_rollout_ref.rollout.data_parallel_size=0\\n'))", "ScenarioError",
     "actor_rollout_ref.rollout.data_parallel_size: must be in [1, 4096], got 0"),
]
