"""Bad inputs a new user met in the first hour (rollsim hardware); appended to
:data:`tests.bad_inputs.ROWS`."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--context-tokens', '0')", "CliExit",
     "exit 2: rollsim: error: --context-tokens: must be in [1, 1099511627776] tokens, got 0.0"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--context-tokens', 'nan')", "CliExit",
     "exit 2: rollsim: error: --context-tokens: must be in [1, 1099511627776] tokens, got nan"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--rollout-gpus', '0')", "CliExit",
     "exit 2: rollsim: error: --rollout-gpus: must be in [1, 1048576], got 0"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--train-gpus', '0')", "CliExit",
     "exit 2: rollsim: error: --train-gpus: must be in [1, 1048576], got 0"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--train-tokens', '-5')", "CliExit",
     "exit 2: rollsim: error: --train-tokens: must be in [1, 1125899906842624] tokens, got -5.0"),
    ("split", "cli('split', '--gpus', '8', '--model', 'Qwen3-8B', '--gpu', 'H100', '--decode-tokens-per-s', '99')",
     "CliExit", "exit 2: rollsim: error: --decode-tokens-per-s cannot be set with --model: the "
     "deployment gives the decode speed, its table, the KV capacity and the prefill from specs (drop --model to give "
     "them yourself)"),
    ("split", "cli('split', '--gpus', '8', '--model', 'Qwen3-8B', '--gpu', 'H100', '--kv-cache-tokens', '100000')",
     "CliExit", "exit 2: rollsim: error: --kv-cache-tokens cannot be set with --model: the "
     "deployment gives the decode speed, its table, the KV capacity and the prefill from specs (drop --model to give "
     "them yourself)"),
    ("split", "cli('split', '--gpus', '8', '--model', 'Qwen3-8B', '--gpu', 'H100', '--slots-per-instance', '8')",
     "CliExit", "exit 2: rollsim: error: --slots-per-instance cannot be set with --model: the "
     "deployment's --max-num-seqs gives it"),
    ("hardware", "cli('hardware', '--model', 'Qwen3-30B-A3B', '--gpu', 'H100', '--rollout-tp', '3')", "CliExit",
     "exit 2: rollsim: error: --rollout-tp: must divide the model's 32 attention heads (vLLM and SGLang shard them over "
     "the tensor-parallel ranks), got 3"),
]
