"""Bad inputs a new user met on first use with a verl Megatron config and the command line's seconds
flags: a Megatron actor layout the config's training GPUs cannot hold (named by its options, not by
the training model's argument names), a rollout tensor-parallel size or memory fraction the deployment
refuses (named by the config's options, not ``rollout_tp`` / ``gpu_memory_utilization``), a sweep over a pipeline or lengths field given without its part
(``max_staleness``: ``pipeline.max_staleness`` meant), a what-if variant whose rollout GPUs leave a training GPU count
the layout cannot use (named by the variant key), a metrics CSV without its longest answer (no other statistic of the
answer length offered as its misspelling), and a time given with a unit (``2h``: refused with
the number of seconds to give); appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_ERR = "exit 2: rollsim: error: "
_MEG = "actor_rollout_ref.actor.megatron."
# a verl Megatron config on 32 GPUs: tensor x pipeline parallel %d x 2
_YAML = ("write('meg.yaml', 'data: {train_batch_size: 16, max_response_length: 4096}\\n"
         "actor_rollout_ref:\\n  model: {path: Qwen/Qwen3-30B-A3B}\\n  rollout: {n: 4}\\n"
         "  actor:\\n    strategy: megatron\\n    megatron: {tensor_model_parallel_size: %d, "
         "pipeline_model_parallel_size: 2, expert_model_parallel_size: 8}\\n"
         "trainer: {nnodes: 4, n_gpus_per_node: 8}\\n')")
_CAL = ("rollsim.calibrate(write('m.csv', 'gen_s,train_s,response_mean,response_max\\n100,50,1000,4000\\n"
        "120,60,1200,4000\\n110,55,1100,4000\\n'), rollsim.configs.load(%s, gpu='H100'), bootstrap=0)" % (_YAML % 2))

ROWS: list[tuple[str, str, str, str]] = [
    ("configs", f"rollsim.configs.load({_YAML % 3}, gpu='H100')", "ScenarioError",
     f"{_MEG}tensor_model_parallel_size, {_MEG}pipeline_model_parallel_size, {_MEG}expert_model_parallel_size: the "
     "training layout (tensor_parallel 3, pipeline_parallel 2, expert_parallel 8 on 32 training GPUs) is refused: "
     "tensor_parallel: tensor_parallel x pipeline_parallel (3 x 2) must divide train_gpus (32), got 6"),
    ("configs", f"rollsim.whatif({_CAL}, [{{'pipeline': 'fully-async', 'rollout_gpus': 13}}], draws=0)", "ScenarioError",
     "rollout_gpus: 13 leaves 19 training GPUs, which the run's training layout cannot use: tensor_parallel: "
     "tensor_parallel x pipeline_parallel (2 x 2) must divide the 19 training GPUs, got 4"),
    # the deployment's own refusals name the config's options, not the deployment's arguments
    ("configs", "rollsim.configs.load(write('r.yaml', 'actor_rollout_ref:\\n  model: {path: Qwen/Qwen3-30B-A3B}\\n"
     "  rollout: {tensor_model_parallel_size: 3}\\ntrainer: {nnodes: 1, n_gpus_per_node: 6}\\n'), gpu='H100')",
     "ScenarioError", "actor_rollout_ref.rollout.tensor_model_parallel_size: must divide the model's 32 attention "
     "heads (vLLM and SGLang shard them over the tensor-parallel ranks), got 3"),
    ("configs", "rollsim.configs.load(write('b.yaml', 'actor_rollout_ref:\\n  model: {path: Qwen/Qwen3-235B-A22B}\\n"
     "  rollout: {tensor_model_parallel_size: 2, gpu_memory_utilization: 0.7}\\n'), gpu='H100')", "ScenarioError",
     "actor_rollout_ref.rollout.gpu_memory_utilization: leaves no room for KV cache: Qwen3-235B-A22B needs 218.9 GiB "
     "of weights per GPU at actor_rollout_ref.rollout.tensor_model_parallel_size=2, H100 x 0.7 gives 56.0 GiB (with "
     "2.45 GiB for activations); raise actor_rollout_ref.rollout.tensor_model_parallel_size or "
     "actor_rollout_ref.rollout.gpu_memory_utilization"),
    # a sweep over a part's field given without its part: the dotted name meant
    ("sweep", "rollsim.sweep(rollsim.Scenario(), {'max_staleness': [1, 2]})", "ScenarioError",
     "re:max_staleness: unknown scenario field; did you mean pipeline\\.max_staleness\\? \\(fields: \\['agentic', .*\\]\\)"),
    ("sweep", "rollsim.sweep(rollsim.Scenario(), {'sigma': [0.8, 1.2]})", "ScenarioError",
     "re:sigma: unknown scenario field; did you mean lengths\\.sigma\\? \\(fields: .*\\)"),
    ("sweep", "cli('sweep', toml('[base]\\n[grid]\\nmax_staleness = [1, 2]\\n'), '--out', write('o', None))", "CliExit",
     "re:exit 2: rollsim: error: grid\\.max_staleness: unknown scenario field; did you mean pipeline\\.max_staleness\\? \\(fields: .*\\)"),
    # a verl CSV without response_length/max: its mean (read) and min (another statistic) are no misspellings
    ("calibrate", "rollsim.calibrate(write('v.csv', 'timing_s/gen,timing_s/update_actor,response_length/mean,"
     "response_length/min\\n10,5,100,20\\n12,6,120,30\\n11,5.5,110,25\\n'), rollsim.Scenario(), framework='verl')",
     "ScenarioError", "metrics: missing response_length/max (verl metric names; generic column 'response_max': longest "
     "answer of the step, tokens); columns given: timing_s/gen, timing_s/update_actor, response_length/mean, "
     "response_length/min"),
    ("CLI", "cli('run', '--horizon-s', '2h')", "CliExit",
     "exit 2: rollsim run: error: argument --horizon-s: must be a number of seconds, got '2h': give 7200"),
    ("CLI", "cli('compare', '--weight-sync-s', '250ms')", "CliExit",
     "exit 2: rollsim compare: error: argument --weight-sync-s: must be a number of seconds, got '250ms': give 0.25"),
    ("CLI", "cli('split', '--gpus', '8', '--gpu-s-per-token', '0.01', '--train-fixed-s', '5 s')", "CliExit",
     "exit 2: rollsim split: error: argument --train-fixed-s: must be a number of seconds, got '5 s': give 5"),
    ("CLI", "cli('split', '--gpus', '8', '--gpu-s-per-token', '0.01', '--colocated-switch-s', 'auto')", "CliExit",
     f"{_ERR}--colocated-switch-s: auto needs --model and --gpu (the deployment prices the switch); without them "
     "give the seconds per step"),
    ("CLI", "cli('split', '--gpus', '8', '--gpu-s-per-token', '0.01', '--min-train-gpus', '0')", "CliExit",
     f"{_ERR}--min-train-gpus: must be in [1, 1048576], got 0"),
]
