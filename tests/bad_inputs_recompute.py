"""Bad inputs of a deployment's shared prefill, the default of ``rollsim.hardware.Deployment.scenario``
since its recompute is priced (``prefill_mode``, ``max_num_batched_tokens``); appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_D = "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, max_num_seqs=256)"
_S = f"{_D}.scenario(lengths=LogNormal(), prompts_per_step=8, prompt_tokens=100.0"

ROWS: list[tuple[str, str, str, str]] = [
    ("deployment recompute", f"{_S}, max_num_batched_tokens=256)", "ScenarioError",
     "max_num_batched_tokens: must be > slots_per_instance (256) with prefill_mode = 'shared' (a step holds every "
     "decoding sequence's token and at least one prompt token), got 256"),
    ("deployment recompute", f"{_S}, prefill_mode='per_slot', max_num_batched_tokens=4096)", "ScenarioError",
     "max_num_batched_tokens: applies only with prefill_mode='shared' (the budget of a shared step), got 4096 with "
     "prefill_mode='per_slot'"),
    ("deployment recompute", f"{_S}, max_num_batched_tokens=1)", "ScenarioError",
     "max_num_batched_tokens: must be in [2, 16777216], got 1"),
]
