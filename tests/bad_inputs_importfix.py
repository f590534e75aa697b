"""Bad-input rows of a new user's tryout (config imports, what-ifs; appended to ``tests/bad_inputs.py``'s table,
same format): an engine memory fraction given as a percentage, a rollout GPU count the colocated config cannot
spare."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
METRICS = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n"
           "11,5.5,110,450\\n')")
VERL16 = "write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\ntrainer: {nnodes: 2}\\n')"
EXAMPLES = "os.path.join(os.path.dirname(rollsim.__file__), 'examples', 'configs', '{}')"

ROWS: list[tuple[str, str, str, str]] = [
    ("config", f"{LOAD}(write('v.yaml', 'actor_rollout_ref: {{rollout: {{gpu_memory_utilization: 85}}}}\\n'), gpu='H100')",
     "ScenarioError", "actor_rollout_ref.rollout.gpu_memory_utilization: must be in (0, 1] (a fraction of each GPU's "
     "memory, not a percentage), got 85"),
    ("config", f"{LOAD}(write('v.yaml', 'actor_rollout_ref: {{rollout: {{gpu_memory_utilization: 0}}}}\\n'))",
     "ScenarioError", "actor_rollout_ref.rollout.gpu_memory_utilization: must be in (0, 1] (a fraction of each GPU's "
     "memory, not a percentage), got 0"),
    ("config CLI", "cli('import', write('v.yaml', 'data: {train_batch_size: 4}\\n'), "
     "'actor_rollout_ref.rollout.gpu_memory_utilization=90')", "CliExit",
     "exit 2: rollsim: error: actor_rollout_ref.rollout.gpu_memory_utilization: must be in (0, 1] (a fraction of each "
     "GPU's memory, not a percentage), got 90"),
    ("what if", f"rollsim.whatif(rollsim.calibrate({METRICS}, {LOAD}({VERL16}), bootstrap=0), "
     "[{'pipeline': 'fully-async', 'rollout_gpus': 20}], draws=0)", "ScenarioError",
     "rollout_gpus: must be in [1, 15] (the config's 16 GPUs, at least 1 left for training), got 20"),
    ("what if CLI", f"cli('whatif', '--config', {EXAMPLES.format('verl_grpo.yaml')}, '--metrics', "
     f"{EXAMPLES.format('verl_grpo_metrics.csv')}, '--pipeline', 'fully-async', '--rollout-gpus', '20', "
     "'--bootstrap', '0', '--draws', '0')", "CliExit",
     "exit 2: rollsim: error: --rollout-gpus: must be in [1, 15] (the config's 16 GPUs, at least 1 left for training), "
     "got 20"),
]
ROWS += [
    ("config", f"{LOAD}(write('a.yaml', \"rollout: {{backend: 'sglang:d2'}}\\nactor: {{backend: 'fsdp:d2'}}\\n"
     "sglang: {mem_fraction_static: 88}\\n\"))", "ScenarioError",
     "sglang.mem_fraction_static: must be in (0, 1] (a fraction of each GPU's memory, not a percentage), got 88"),
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8 --sglang-mem-fraction-static 1.5\\n'))",
     "ScenarioError", "--sglang-mem-fraction-static: must be in (0, 1] (a fraction of each GPU's memory, not a "
     "percentage), got 1.5"),
    ("config", f"{LOAD}(write('o.sh', 'python -m openrlhf.cli.train_ppo_ray --vllm.gpu_memory_utilization 90\\n'))",
     "ScenarioError", "--vllm.gpu_memory_utilization: must be in (0, 1] (a fraction of each GPU's memory, not a "
     "percentage), got 90"),
]
