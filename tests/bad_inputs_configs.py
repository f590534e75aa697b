"""Bad framework configs and run metrics (``rollsim.configs.load``, ``rollsim.calibrate``,
``rollsim.whatif`` and their commands) and the exact error each gets; appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
GOOD_METRICS = ("write('m.csv', 'gen_s,train_s,response_mean,response_max\\n10,5,100,400\\n12,6,120,500\\n"
                "11,5.5,110,450\\n')")
VERL = "write('v.yaml', 'data: {train_batch_size: 4, max_response_length: 1024}\\n')"

ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- config files
    ("config", f"{LOAD}('nowhere.yaml')", "ScenarioError", "config: no such file: nowhere.yaml"),
    ("config", f"{LOAD}(write('a.yaml', 'foo: 1\\n'))", "ScenarioError",
     "framework: cannot tell which framework a.yaml is for; pass framework= one of verl, areal, slime, openrlhf"),
    ("config", f"{LOAD}(write('a.yaml', 'data: {{}}\\n'), 'mlx')", "ScenarioError",
     "framework: must be one of verl, areal, slime, openrlhf, got 'mlx'"),
    ("config", f"{LOAD}(write('a.yaml', '- 1\\n- 2\\n'), 'verl')", "ScenarioError", "re:config: .*a.yaml must hold a YAML mapping of "
     "options, got list"),
    ("config", f"{LOAD}(write('a.yaml', 'data: [\\n'), 'verl')", "ScenarioError", "re:config: .*a.yaml is not valid YAML: .*"),
    # ---------------------------------------------------------------- verl
    ("config", f"{LOAD}(write('v.yaml', 'data: {{train_batch_size: 0}}\\n'))", "ScenarioError",
     "data.train_batch_size: must be in [1, 16777216], got 0"),
    ("config", f"{LOAD}(write('v.yaml', 'data: {{train_batch_size: 1.5}}\\n'))", "ScenarioError",
     "data.train_batch_size: must be an integer in the verl config, got float 1.5"),
    ("config", f"{LOAD}(write('v.yaml', 'actor_rollout_ref: {{rollout: {{n: true}}}}\\n'))", "ScenarioError",
     "actor_rollout_ref.rollout.n: must be an integer in the verl config, got bool True"),
    ("config", f"{LOAD}(write('v.yaml', 'async_training: {{staleness_threshold: -0.5}}\\n'))", "ScenarioError",
     "async_training.staleness_threshold: must be in [0, 1e+06], got -0.5"),
    ("config", f"{LOAD}(write('v.yaml', 'actor_rollout_ref: {{hybrid_engine: maybe}}\\n'))", "ScenarioError",
     "actor_rollout_ref.hybrid_engine: must be true or false in the verl config, got 'maybe'"),
    ("config", f"{LOAD}(write('run.sh', 'echo hello\\n'), 'verl')", "ScenarioError", "re:config: .*run.sh names no verl entry module "
     "\\(python -m verl.trainer.main_ppo ...\\) and no key=value overrides"),
    ("config", f"{LOAD}(write('v.yaml', 'data: {{train_batch_size: 8192}}\\nactor_rollout_ref: {{rollout: {{n: 4096}}}}\\n'))",
     "ScenarioError", "batch_size: prompts per step x group size must be at most 16777216 samples, got 8192 x 4096 = "
     "33554432"),
    # ---------------------------------------------------------------- AReaL
    ("config", f"{LOAD}(write('a.yaml', 'gconfig: {{n_samples: 4}}\\n'))", "ScenarioError",
     "rollout.backend: is required in the AReaL config (e.g. 'sglang:d4p1t1'), as is actor.backend; or the older "
     "allocation_mode"),
    ("config", f"{LOAD}(write('a.yaml', 'gconfig: {{n_samples: 4}}\\nrollout: {{backend: \"sglang:x4\"}}\\n'))",
     "ScenarioError", "rollout.backend: must be a backend string such as 'sglang:d4p1t1' "
     "(name:d<data>p<pipeline>t<tensor>), got 'sglang:x4'"),
    ("config", f"{LOAD}(write('a.yaml', 'gconfig: {{n_samples: 4}}\\nallocation_mode: \"a+b+c\"\\n'))", "ScenarioError",
     "allocation_mode: must be 'rollout+training' such as 'sglang.d4p1t1+d4p1t1', got 'a+b+c'"),
    ("config", f"{LOAD}(write('a.yaml', 'gconfig: {{n_samples: 4}}\\nallocation_mode: d4\\nrollout: "
     "{max_head_offpolicyness: -1}\\n'))", "ScenarioError", "rollout.max_head_offpolicyness: must be in [0, 4294967295], got -1"),
    # ---------------------------------------------------------------- slime
    ("config", f"{LOAD}(write('s.sh', 'python train.py --n-samples-per-prompt 4\\n'))", "ScenarioError",
     "--rollout-batch-size: is required in the slime arguments and was not given"),
    ("config", f"{LOAD}(write('s.sh', 'python train_async.py --colocate --rollout-batch-size 8\\n'))", "ScenarioError",
     "--colocate: train_async.py refuses colocation (rollout and training overlap on separate GPUs); use train.py or "
     "drop --colocate"),
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8 --n-samples-per-prompt 4 "
     "--global-batch-size 12\\n'))", "ScenarioError", "--global-batch-size: must divide rollout_batch_size x "
     "n_samples_per_prompt = 32 samples (slime's global batch counts samples), got 12"),
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size 8 --n-samples-per-prompt 4 "
     "--global-batch-size 16 --num-steps-per-rollout 4\\n'))", "ScenarioError", "--global-batch-size: must equal "
     "rollout_batch_size x n_samples_per_prompt // num_steps_per_rollout = 8 samples, got 16"),
    ("config", f"{LOAD}(write('s.sh', 'python train.py --rollout-batch-size eight\\n'))", "ScenarioError",
     "--rollout-batch-size: must be an integer in the slime arguments, got str 'eight'"),
    # ---------------------------------------------------------------- OpenRLHF
    ("config", f"{LOAD}(write('o.sh', 'python -m openrlhf.cli.train_ppo_ray --rollout.batch_size 0\\n'))",
     "ScenarioError", "--rollout.batch_size: must be in [1, 16777216], got 0"),
    # ---------------------------------------------------------------- metrics (calibrate)
    ("metrics", f"rollsim.calibrate('nowhere.csv', {LOAD}({VERL}))", "ScenarioError", "metrics: no such file: nowhere.csv"),
    ("metrics", f"rollsim.calibrate(write('m.txt', 'a'), {LOAD}({VERL}))", "ScenarioError",
     "metrics: must be a .csv, .jsonl, .json or .parquet file, got m.txt"),
    ("metrics", f"rollsim.calibrate(write('m.csv', 'timing_s/gen,response_length/mean,response_length/max\\n1,2,3\\n"
     f"2,3,4\\n3,4,5\\n'), {LOAD}({VERL}))", "ScenarioError",
     "metrics: missing timing_s/update_actor + timing_s/ref + timing_s/adv + timing_s/reward + timing_s/values + "
     "timing_s/update_critic (verl metric names; generic column 'train_s': update phases (policy update, reference "
     "and advantage passes), seconds); columns given: timing_s/gen, response_length/mean, response_length/max"),
    ("metrics", f"rollsim.calibrate(write('m.csv', 'timeperf/rollout,timeperf/train_step\\n1,2\\n2,3\\n3,4\\n'), "
     f"{LOAD}({VERL}), framework='areal')", "ScenarioError", "metrics: missing ppo_actor/seq_len/avg and ppo_actor/seq_len/max (areal "
     "metric names; generic column 'response_mean': mean answer length of the step, tokens); columns given: "
     "timeperf/rollout, timeperf/train_step"),
    ("metrics", f"rollsim.calibrate(write('m.csv', 'gen_s,train_s,response_mean,response_max\\n1,2,3,4\\n'), "
     f"{LOAD}({VERL}))", "ScenarioError", "metrics: needs at least 3 steps to fit, got 1"),
    ("metrics", f"rollsim.calibrate(write('m.csv', 'gen_s,train_s,response_mean,response_max\\n'), {LOAD}({VERL}))",
     "ScenarioError", "metrics: the table has no rows"),
    ("metrics", f"rollsim.calibrate(write('m.csv', 'gen_s,train_s,response_mean,response_max\\n1,2,3,4000\\n"
     f"1,2,3,4\\n1,2,3,4\\n'), {LOAD}({VERL}))", "ScenarioError", "metrics: response_max 4000 tokens at row 0 "
     "(counting from 0) exceeds the config's length limit 1024 tokens (data.max_response_length): the metrics are of "
     "another run, or the config's limit is not the run's"),
    ("metrics", f"rollsim.calibrate({GOOD_METRICS}, 'verl.yaml')", "ScenarioError",
     "base: must be an ImportedConfig (rollsim.configs.load), a Deployment (rollsim.hardware) or a Scenario, got str"),
    ("metrics", f"rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), bootstrap=-1)", "ScenarioError",
     "bootstrap: must be an integer in [0, 100000], got -1"),
    ("metrics", f"rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), framework='nemo')", "ScenarioError",
     "framework: metric names must be one of generic, verl, areal, slime, openrlhf, got 'nemo'"),
    # ---------------------------------------------------------------- what if
    ("what if", "rollsim.whatif('calibrated', [])", "ScenarioError",
     "calibrated: must be the result of rollsim.calibrate, got str"),
    ("what if", f"rollsim.whatif(rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), bootstrap=0), "
     "[{'pipeline': 'async-ish'}], draws=0)", "ScenarioError",
     "pipeline: must be 'sync', 'one-step', 'k-step:K', 'fully-async' or 'verl-fully-async' (verl's trainer cadence), "
     "or an imported verl fully_async config, got 'async-ish'"),
    ("what if", f"rollsim.whatif(rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), bootstrap=0), "
     "[{'gpus': 8}], draws=0)", "ScenarioError",
     "gpus: unknown variant key (allowed: admission_eta, concurrent_samples_per_replica, group_size, "
     "max_response_tokens, max_staleness, name, partial_rollout, pipeline, ppo_mini_batch_size, prompts, "
     "recompute_logprob, require_batches, rollout_gpus, staleness_threshold, train_gpus, trigger_parameter_sync_step "
     "or a scenario field)"),
    ("what if", f"rollsim.whatif(rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), bootstrap=0), "
     "[{'pipeline': 'fully-async', 'rollout_gpus': 8}], draws=0)", "ScenarioError",
     "rollout_gpus: must be in [1, 7] (the config's 8 GPUs, at least 1 left for training), got 8"),
    ("what if", f"rollsim.whatif(rollsim.calibrate({GOOD_METRICS}, {LOAD}({VERL}), bootstrap=0), [], draws=-1)",
     "ScenarioError", "draws: must be an integer in [0, 1000], got -1"),
    # ---------------------------------------------------------------- command line
    ("config CLI", "cli('import', write('a.yaml', 'foo: 1\\n'))", "CliExit",
     "exit 2: rollsim: error: --framework: cannot tell which framework a.yaml is for; pass --framework, one of verl, "
     "areal, slime, openrlhf"),
    ("config CLI", f"cli('whatif', '--config', {VERL}, '--metrics', {GOOD_METRICS}, '--rollout-gpus', '8,x')",
     "CliExit", "exit 2: rollsim whatif: error: argument --rollout-gpus: must be positive integers "
     "separated by commas, got '8,x'"),
    ("config CLI", f"cli('whatif', '--config', {VERL}, '--metrics', {GOOD_METRICS}, '--pipeline', 'fully-async', "
     "'--max-staleness', 'two')", "CliExit", "exit 2: rollsim whatif: error: argument --max-staleness: "
     "must be integers >= 0 or 'none' separated by commas, got 'two'"),
    ("config CLI", f"cli('run', toml('rollout_slots = 8\\n'), '--config', {VERL})", "CliExit",
     "exit 2: rollsim: error: --config: takes the place of a scenario file: give one or the other"),
]
