"""Bad-input rows of shared prefill (format: see the top of ``tests/bad_inputs.py``):
``Scenario.prefill_mode`` and ``Scenario.max_num_batched_tokens``."""

from __future__ import annotations

_SHARED = "prefill_mode='shared', prompt_tokens=100.0, prefill_tokens_per_s=1e4"

ROWS: list[tuple[str, str, str, str]] = [
    ("shared prefill", "Scenario(prefill_mode='chunked')", "ScenarioError",
     "prefill_mode: must be 'per_slot' or 'shared', got 'chunked'"),
    ("shared prefill", f"Scenario({_SHARED})", "ScenarioError",
     "prefill_mode: 'shared' shares an instance's steps between prefill and decoding: it needs slots_per_instance > 0, "
     "got slots_per_instance=0"),
    ("shared prefill", f"Scenario({_SHARED}, slots_per_instance=256, max_num_batched_tokens=256)", "ScenarioError",
     "max_num_batched_tokens: must be > slots_per_instance (256) with prefill_mode = 'shared' (a step holds every "
     "decoding sequence's token and at least one prompt token), got 256"),
    ("shared prefill", "Scenario(max_num_batched_tokens=2048)", "ScenarioError",
     "max_num_batched_tokens: applies only with prefill_mode = 'shared' (the budget of a shared step), got 2048 with "
     "prefill_mode = 'per_slot'"),
    ("shared prefill", f"Scenario({_SHARED}, slots_per_instance=8, max_num_batched_tokens=1)", "ScenarioError",
     "max_num_batched_tokens: must be in [2, 16777216], got 1"),
    ("shared prefill", "cli('run', '--prefill-mode', 'shared')", "CliExit",
     "exit 2: rollsim: error: --prefill-mode: 'shared' shares an instance's steps between prefill and decoding: it "
     "needs slots_per_instance > 0, got slots_per_instance=0"),
    ("shared prefill", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1).scenario("
     "lengths=LogNormal(), prompts_per_step=8, prefill_mode='chunked')", "ScenarioError",
     "prefill_mode: must be 'per_slot' or 'shared', got 'chunked'"),
]
ROWS += [
    ("context-dependent decode speed", "Scenario(decode_s_per_context_token=1e-7)", "ScenarioError",
     "decode_s_per_context_token: needs slots_per_instance > 0 (the instances whose steps it lengthens), got "
     "slots_per_instance=0"),
    ("context-dependent decode speed", "Scenario(slots_per_instance=8, decode_s_per_context_token=2.0)",
     "ScenarioError", "decode_s_per_context_token: must be in [0, 1] seconds/token, got 2.0"),
    ("context-dependent decode speed", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1)"
     ".scenario(lengths=LogNormal(), prompts_per_step=8, context='max')", "ScenarioError",
     "context: must be 'mean' or 'per_token', got 'max'"),
]
