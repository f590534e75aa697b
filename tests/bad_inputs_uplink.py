"""Bad-input rows of GPUs sharing a host uplink (``switch_s(gpus_copying=)``,
``train_offload_s(gpus_copying=)``, ``host_link_share`` and ``Accelerator.gpus_per_host_link``;
appended to ``tests/bad_inputs.py``'s table; same format)."""

from __future__ import annotations

import rollsim.hardware.switching  # noqa: F401  (the rows reach rollsim.hardware.switching)

_S = "rollsim.hardware.switching."
_NO_UPLINK = "__import__('dataclasses').replace(rollsim.hardware.specs.accelerator('A100-80G'), gpus_per_host_link=0)"

ROWS: list[tuple[str, str, str, str]] = [
    ("uplink", f"{_S}switch_s('Qwen3-8B', 'A100-80G', gpus=1, kv_cache_bytes=0, gpus_copying=0)", "ScenarioError",
     "gpus_copying: must be in [1, 1048576], got 0"),
    ("uplink", f"{_S}switch_s('Qwen3-8B', 'A100-80G', gpus=1, kv_cache_bytes=0, gpus_copying=2.0)", "ScenarioError",
     "gpus_copying: must be an integer in [1, 1048576], got float 2.0"),
    ("uplink", f"{_S}switch_s('Qwen3-8B', 'A100-80G', gpus=4, kv_cache_bytes=0, gpus_copying=2)", "ScenarioError",
     "gpus_copying: must be at least the GPUs of this switch on one node (min(gpus, gpus_per_node) = 4: they "
     "copy together), got 2"),
    ("uplink", f"{_S}train_offload_s('Qwen3-8B', 'A100-80G', gpus=16, gpus_copying=4)", "ScenarioError",
     "gpus_copying: must be at least the GPUs of this switch on one node (min(gpus, gpus_per_node) = 8: they "
     "copy together), got 4"),
    ("uplink", f"{_S}host_link_share('A100-80G', 0)", "ScenarioError", "gpus_copying: must be in [1, 1048576], got 0"),
    ("uplink", f"{_S}host_link_share({_NO_UPLINK}, 2)", "ScenarioError",
     "gpus_per_host_link: must be in [1, 1048576], got 0"),
    ("uplink", f"{_S}switch_s('Qwen3-8B', {_NO_UPLINK}, gpus=1, kv_cache_bytes=0)", "ScenarioError",
     "gpus_per_host_link: must be in [1, 1048576], got 0"),
    ("uplink", f"{_S}host_link_share('Z100', 2)", "ScenarioError", "re:.*Z100.*"),
]
