"""Bad-input rows of the colocated-switching terms added with the trainer's offload
(``rollsim.hardware.switching.switch_s(first_sleep=)`` and ``train_offload_s``; appended to
``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

import rollsim.hardware.switching  # noqa: F401  (the rows reach rollsim.hardware.Deployment and .switching)

_S = "rollsim.hardware.switching."

ROWS: list[tuple[str, str, str, str]] = [
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=0, first_sleep=1)", "ScenarioError",
     "first_sleep: must be True or False, got 1"),
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=0, engine='sglang', first_sleep=True)",
     "ScenarioError", "first_sleep: applies to engine='vllm' only (torch_memory_saver pins on every pause, and a "
     "level-2 sleep copies nothing out), got engine='sglang'"),
    ("switching", f"{_S}switch_s('Qwen3-8B', 'H100', gpus=1, kv_cache_bytes=0, engine='vllm-level2', "
     "preallocated=True)", "ScenarioError", "preallocated: applies to engine='vllm' or 'sglang' (a level-2 sleep "
     "keeps no host copy), got engine='vllm-level2'"),
    ("switching", f"{_S}train_offload_s('Qwen3-8B', 'H100', gpus=0)", "ScenarioError",
     "gpus: must be in [1, 1048576], got 0"),
    ("switching", f"{_S}train_offload_s('Qwen3-8B', 'H100', state_bytes=0)", "ScenarioError",
     "state_bytes: must be in (0, 1e15] bytes, got 0"),
    ("switching", f"{_S}train_offload_s('Qwen3-8B', 'H100', state_bytes=math.nan)", "ScenarioError",
     "state_bytes: must be in (0, 1e15] bytes, got nan"),
    ("switching", f"{_S}train_offload_s('Qwen3-8B', 'H100', retain_backup='yes')", "ScenarioError",
     "retain_backup: must be True or False, got 'yes'"),
    ("switching", f"{_S}train_offload_s('Qwen9-8B', 'H100')", "ScenarioError", "re:model: .*Qwen9-8B.*"),
]
ROWS += [
    ("switching", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=8, train_gpus=8, "
     "train_offload=True)", "ScenarioError", "train_offload: applies to a colocated deployment only (the trainer "
     "parks its state to free the GPUs for rollout), got colocated=False"),
    ("switching", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=8, train_gpus=8, "
     "colocated=True, train_offload=1)", "ScenarioError", "train_offload: must be True or False, got 1"),
]
