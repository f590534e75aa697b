"""A deployment whose batch its data-parallel training ranks cannot share evenly: refused in the
deployment's own terms (``prompts_per_step`` x ``group_size``, ``train_gpus``), with values that work,
instead of the engine's ``train.dp_ranks must divide batch_size``; appended to the table of
``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_DEP = "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=8, train_gpus=3)"

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", f"{_DEP}.scenario(lengths=LogNormal(), prompts_per_step=5, group_size=5)", "ScenarioError",
     "prompts_per_step: prompts_per_step x group_size = 5 x 5 = 25 samples per step must split evenly over the 3 "
     "data-parallel training ranks (train_gpus=3): every rank trains as many samples; give prompts_per_step=3 or 6 "
     "or train_gpus=5 / 25, or per_rank=False (one trainer time for the batch)"),
]
