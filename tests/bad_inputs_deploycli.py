"""Bad inputs of ``rollsim run --model`` / ``rollsim compare --model`` (a deployment's scenario from
``rollsim hardware``'s flags): a field the deployment derives, given as a flag or in a scenario file, is
refused naming both; a deployment flag without ``--model``; ``--config`` with ``--model``; a colocated
``compare``; appended to :data:`tests.bad_inputs.ROWS`."""

from __future__ import annotations

_M = "'--model', 'Qwen3-8B', '--gpu', 'H100'"
_ERR = "exit 2: rollsim: error: "
_GIVES = ("the deployment gives the pool, the decode speed and its table, the KV capacity, the prefill speed and the "
          "trainer from specs")
_ONLY = "applies with --model or --hf-config only (the deployment from specs it is part of; see rollsim hardware --help)"

ROWS: list[tuple[str, str, str, str]] = [
    ("run --model", f"cli('run', {_M}, '--decode-tokens-per-s', '50')", "CliExit",
     f"{_ERR}--decode-tokens-per-s cannot be set with --model: {_GIVES} (drop --model to give --decode-tokens-per-s "
     "yourself)"),
    ("run --model", f"cli('run', {_M}, '--decode-throughput-table', '1:30,8:200')", "CliExit",
     f"{_ERR}--decode-throughput-table cannot be set with --model: {_GIVES} (drop --model to give "
     "--decode-throughput-table yourself)"),
    ("run --model", f"cli('run', {_M}, '--kv-cache-tokens', '1000')", "CliExit",
     f"{_ERR}--kv-cache-tokens cannot be set with --model: {_GIVES} (drop --model to give --kv-cache-tokens yourself)"),
    ("run --model", f"cli('run', {_M}, '--train-step-s', '5')", "CliExit",
     f"{_ERR}--train-step-s cannot be set with --model: {_GIVES} (drop --model to give --train-step-s yourself)"),
    ("compare --model", f"cli('compare', {_M}, '--rollout-slots', '64')", "CliExit",
     f"{_ERR}--rollout-slots cannot be set with --model: {_GIVES} (drop --model to give --rollout-slots yourself)"),
    ("run --model", "cli('run', '--hf-config', 'x.json', '--gpu', 'H100', '--prefill-tokens-per-s', '1e4')", "CliExit",
     f"{_ERR}--prefill-tokens-per-s cannot be set with --hf-config: {_GIVES} (drop --hf-config to give "
     "--prefill-tokens-per-s yourself)"),
    ("run --model", f"cli('run', toml('rollout_slots = 64\\nhorizon_s = 60'), {_M})", "CliExit",
     f"re:{_ERR}rollout_slots: the scenario file '.*s\\.toml' sets rollout_slots and --model is given: {_GIVES} "
     "\\(remove rollout_slots from the file, or drop --model\\)"),
    ("run --model", f"cli('run', {_M}, '--config', 'x.yaml')", "CliExit",
     f"{_ERR}--config: cannot be given with --model: give one or the other (the imported config's pool, decode speed "
     "and trainer would replace the deployment's, or the reverse)"),
    ("run --model", "cli('run', '--rollout-gpus', '4')", "CliExit", f"{_ERR}--rollout-gpus {_ONLY}"),
    ("run --model", "cli('run', '--train-option', 'precision=fp8')", "CliExit", f"{_ERR}--train-option {_ONLY}"),
    ("compare --model", "cli('compare', '--gpu', 'H100')", "CliExit", f"{_ERR}--gpu {_ONLY}"),
    ("compare --model", f"cli('compare', {_M}, '--colocated')", "CliExit",
     f"{_ERR}--colocated runs rollout and training in turns, synchronous only: compare's asynchronous pipelines need "
     "rollout and training on their own GPUs (use rollsim run --colocated, or drop --colocated)"),
    ("compare --model", f"cli('compare', toml('[pipeline]\\nkind = \"synchronous\"'), {_M})", "CliExit",
     f"{_ERR}pipeline: compare runs its own four pipelines (synchronous, one-step, fully async, fully async with cap "
     "--max-staleness); the scenario file's pipeline Synchronous() would be ignored: remove it from the file, or use "
     "rollsim run"),
    ("run --model", f"cli('run', {_M}, '--rollout-gpus', '3', '--rollout-tp', '2')", "CliExit",
     f"{_ERR}--rollout-gpus: must be a multiple of --rollout-tp (2), got 3"),
    ("run --model", f"cli('run', {_M}, '--colocated', '--rollout-gpus', '2', '--train-gpus', '4')", "CliExit",
     f"{_ERR}--colocated: needs --rollout-gpus == --train-gpus (the same GPUs), got 2 and 4"),
    ("run --model", f"cli('run', {_M}, '--batch-size', '100', '--group-size', '8')", "CliExit",
     f"{_ERR}--group-size: must divide --batch-size (100), got 8"),
    ("run --model", f"cli('run', {_M}, '--agentic-preset', 'code-interpreter-math', '--horizon-s', '10')", "CliExit",
     f"{_ERR}agentic.max_context_tokens: with kv_cache_tokens, must be at most kv_cache_tokens - 1 = 395352.0 (a "
     "trajectory must fit alone), got None (the deployment's KV capacity per instance bounds a trajectory's context: "
     "give --max-context-tokens N)"),
]
