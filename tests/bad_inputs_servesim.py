"""Bad inputs of ``rollsim.hardware.serving_benchmark`` (a serving benchmark simulated on a
deployment's instances) and the exact error each gets; appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_D = "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1)"
_SB = "rollsim.hardware.serving_benchmark"

ROWS: list[tuple[str, str, str, str]] = [
    ("serving benchmark", f"{_SB}('Qwen3-8B', requests=8, input_tokens=100.0, output_tokens=100.0)", "ScenarioError",
     "deployment: must be a rollsim.hardware.Deployment, got str"),
    ("serving benchmark", f"{_SB}({_D}, requests=0, input_tokens=100.0, output_tokens=100.0)", "ScenarioError",
     "requests: must be in [1, 16777216], got 0"),
    ("serving benchmark", f"{_SB}({_D}, requests=8, input_tokens=-1.0, output_tokens=100.0)", "ScenarioError",
     "input_tokens: must be finite and >= 0, got -1.0"),
    ("serving benchmark", f"{_SB}({_D}, requests=8, input_tokens=100.0, output_tokens=0)", "ScenarioError",
     "output_tokens: must be finite and > 0, got 0"),
    ("serving benchmark", f"{_SB}({_D}, requests=8, input_tokens=100.0, output_tokens=100.0, max_num_batched_tokens=1)",
     "ScenarioError", "max_num_batched_tokens: must be in [2, 16777216], got 1"),
    ("serving benchmark", f"{_SB}({_D}, requests=8, input_tokens=100.0, output_tokens=100.0, max_num_batched_tokens=512)",
     "ScenarioError", "max_num_batched_tokens: must be > slots_per_instance (1024) with prefill_mode = 'shared' (a step "
     "holds every decoding sequence's token and at least one prompt token), got 512"),
    ("serving benchmark", f"{_SB}({_D}, requests=8, input_tokens=100.0, output_tokens=100.0, context='max')",
     "ScenarioError", "context: must be 'mean' or 'per_token', got 'max'"),
    ("serving benchmark", f"{_SB}(rollsim.hardware.Deployment(model='Qwen3-32B', gpu='H100', rollout_gpus=1), "
     "requests=8, input_tokens=40000.0, output_tokens=100.0)", "ScenarioError",
     "kv_cache_tokens: an instance of 1 H100 holds 34921 tokens of KV cache, less than one request's 40101 (prompt + "
     "longest answer + 1); raise rollout_tp or gpu_memory_utilization, or cap the lengths"),
    ("serving benchmark", "rollsim.hardware.default_max_num_batched_tokens('trtllm', 'H100')", "ScenarioError",
     "engine: must be 'vllm' or 'sglang', got 'trtllm'"),
]
