"""Bad inputs a new user met in the first hour (rollsim split, presets, import): on the command
line a message names the flag the user gave, never the Python argument behind it; appended to
:data:`tests.bad_inputs.ROWS`."""

from __future__ import annotations

_SPLIT = "cli('split', '--gpus', '8', '--gpu-s-per-token', '1e-4', "
_DEPLOY = "cli('split', '--gpus', '8', '--model', 'Qwen3-8B', '--gpu', 'H100', "

ROWS: list[tuple[str, str, str, str]] = [
    ("split", "cli('split', '--gpus', '1', '--gpu-s-per-token', '1e-4')", "CliExit",
     "exit 2: rollsim: error: --gpus: 1 GPU cannot hold one rollout instance (1 GPU) and one training GPU"),
    ("split", _SPLIT + "'--gpus-per-instance', '0')", "CliExit",
     "exit 2: rollsim: error: --gpus-per-instance: must be an integer >= 1, got 0"),
    ("split", _SPLIT + "'--slots-per-instance', '0')", "CliExit",
     "exit 2: rollsim: error: --slots-per-instance: must be in [1, 16777216], got 0"),
    ("split", "cli('split', '--gpus', '8', '--gpu-s-per-token', '-1')", "CliExit",
     "exit 2: rollsim: error: --gpu-s-per-token: must be finite and >= 0, got -1.0"),
    ("split", _SPLIT + "'--train-fixed-s', '-1')", "CliExit",
     "exit 2: rollsim: error: --train-fixed-s: must be finite and >= 0, got -1.0"),
    # with --model the deployment's fixed step time is added to it: the value given is checked
    ("split", _DEPLOY + "'--train-fixed-s', '-1')", "CliExit",
     "exit 2: rollsim: error: --train-fixed-s: must be finite and >= 0, got -1.0"),
    ("split", _DEPLOY + "'--gpus-per-instance', '3')", "CliExit",
     "exit 2: rollsim: error: --gpus-per-instance: must divide the model's 32 attention heads (vLLM and SGLang shard "
     "them over the tensor-parallel ranks), got 3"),
    # the deployment's own messages, in split's flags
    ("split", _DEPLOY + "'--max-tokens', '1000000')", "CliExit",
     "exit 2: rollsim: error: kv_cache_tokens: an instance of 1 H100 holds 395353 tokens of KV cache, less than one "
     "request's 1000001 (prompt + longest answer + 1); raise --gpus-per-instance or --gpu-memory-utilization, or cap "
     "the lengths"),
    ("split", _DEPLOY + "'--max-num-seqs', '0')", "CliExit",
     "exit 2: rollsim: error: --max-num-seqs: must be in [1, 16777216], got 0"),
    ("split", _DEPLOY + "'--gpu-memory-utilization', '2')", "CliExit",
     "exit 2: rollsim: error: --gpu-memory-utilization: must be in (0, 1], got 2.0"),
    ("split", _DEPLOY + "'--gpu-memory-utilization', '0.05')", "CliExit",
     "exit 2: rollsim: error: --gpu-memory-utilization: leaves no room for KV cache: Qwen3-8B needs 15.3 GiB of "
     "weights per GPU at --gpus-per-instance 1, H100 x 0.05 gives 4.0 GiB (with 2.45 GiB for activations); raise "
     "--gpus-per-instance or --gpu-memory-utilization"),
    ("split", _SPLIT + "'--max-staleness-mean', '-1')", "CliExit",
     "exit 2: rollsim: error: --max-staleness-mean: must be a finite number >= 0, got -1.0"),
    ("split", _SPLIT + "'--colocated-switch-s', '-1')", "CliExit",
     "exit 2: rollsim: error: --colocated-switch-s: must be finite and >= 0, got -1.0"),
    ("split", _SPLIT + "'--horizon-s', '1e9')", "CliExit",
     "re:exit 2: rollsim: error: --max-events: the 7 splits would process about 1.72e\\+10 events \\(about 19 min\\), "
     "more than --max-events = 1000000000; give fewer --gpus or a larger --gpus-per-instance, a shorter --horizon-s, "
     "or raise --max-events \\(0: no limit\\)"),
    ("presets", "cli('presets', '--horizon-s', '1e9')", "CliExit",
     "exit 2: rollsim: error: --max-events: this scenario would process about 2.45e+09 events (about 2.45e+09 "
     "samples) over --horizon-s = 1e+09 s, about 2.7 min at ~15 M events/s, more than --max-events = 1000000000 (a "
     "run-time guard; presets keep memory constant); shorten --horizon-s, or raise --max-events (0: no limit) if you "
     "mean it"),
    ("presets", "cli('presets', '--horizon-s', '1e12', '--max-events', '0')", "CliExit",
     "exit 2: rollsim: error: --horizon-s: this scenario would start about 8.45e+11 samples (about 8.46e+11 events, "
     "about 16 h at ~15 M events/s; presets keep memory constant) over --horizon-s = 1e+12 s, more than one run can "
     "start (2**32 - 1 samples: sample ids are 32-bit); shorten --horizon-s to at most about 5.1e+09 s"),
    ("presets", "cli('presets', '--max-events', '-1')", "CliExit",
     "exit 2: rollsim: error: --max-events: must be an integer >= 0 (0: no limit), got -1"),
    # a pipeline's flags on the commands that run their own pipelines ("--pipeline sync" was
    # "unrecognized arguments: --pipeline", its value taken for a scenario file)
    ("compare", "cli('compare', '--pipeline', 'sync')", "CliExit",
     "exit 2: rollsim compare: error: argument --pipeline: compare runs its own four pipelines (synchronous, "
     "one-step, fully async, fully async with cap --max-staleness); give a pipeline's flags to rollsim run"),
    ("compare", "cli('compare', '--on-update', 'wait')", "CliExit",
     "exit 2: rollsim compare: error: argument --on-update: compare runs its own four pipelines (synchronous, "
     "one-step, fully async, fully async with cap --max-staleness); give a pipeline's flags to rollsim run"),
    # the Python API keeps the Python names
    ("presets", "rollsim.presets.compare(Scenario(horizon_s=1e9))", "RunLimitError",
     "max_events: this scenario would process about 2.45e+09 events (about 2.45e+09 samples) over horizon_s = 1e+09 "
     "s, about 2.7 min at ~15 M events/s, more than max_events = 1000000000 (a run-time guard; record='summary' keeps "
     "memory constant); shorten horizon_s, or raise max_events (None: no limit) if you mean it"),
    ("presets", "rollsim.presets.compare(max_events=0)", "ScenarioError",
     "max_events: must be an integer >= 1 or None (no limit), got 0"),
    ("gpu_split", "rollsim.resources.gpu_split(Scenario(), 8, gpus_per_instance=1, slots_per_instance=0, "
                  "gpu_s_per_token=1e-4)", "ScenarioError", "slots_per_instance: must be an integer >= 1, got 0"),
]
