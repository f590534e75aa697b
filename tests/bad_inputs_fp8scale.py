"""Bad inputs of an FP8 checkpoint's weight scaling (``ModelSpec.fp8_scaling``, read from a Hugging Face
``quantization_config`` by ``rollsim.hardware.model_from_hf_config``) and the exact error each gets;
appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

_L8 = "{**rollsim.hardware.specs.HF_CONFIGS['Llama-3.1-8B'][1], 'quantization_config': %s}"
_BF16 = "remove quantization_config to price the checkpoint as BF16"
_CT = "{'quant_method': 'compressed-tensors', 'config_groups': %s}"
_W = "{'group_0': {'weights': {'type': %r, 'num_bits': %d, 'strategy': %r}}}"


def _cfg(q: str) -> str:
    return f"rollsim.hardware.model_from_hf_config({_L8 % q})"


ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", _cfg("{'quant_method': 'awq', 'bits': 4}"), "ScenarioError",
     "config.quantization_config.quant_method: must be one of 'fp8', 'compressed-tensors', 'mxfp4' (the quantized "
     f"checkpoints the serving model prices), got 'awq'; {_BF16}"),
    ("hardware", _cfg("{'bits': 4}"), "ScenarioError",
     "config.quantization_config.quant_method: must be one of 'fp8', 'compressed-tensors', 'mxfp4' (the quantized "
     f"checkpoints the serving model prices), got None; {_BF16}"),
    ("hardware", _cfg("'fp8'"), "ScenarioError", "config.quantization_config: must be a JSON object, got str 'fp8'"),
    ("hardware", _cfg("{'quant_method': 'fp8', 'weight_block_size': [128]}"), "ScenarioError",
     "config.quantization_config.weight_block_size: must be two positive integers (e.g. [128, 128]) or absent "
     "(per-tensor scales), got [128]"),
    ("hardware", _cfg("{'quant_method': 'fp8', 'weight_block_size': [128, 0]}"), "ScenarioError",
     "config.quantization_config.weight_block_size: must be two positive integers (e.g. [128, 128]) or absent "
     "(per-tensor scales), got [128, 0]"),
    ("hardware", _cfg("{'quant_method': 'compressed-tensors'}"), "ScenarioError",
     "config.quantization_config.config_groups: must be a non-empty object of quantization groups, got None"),
    ("hardware", _cfg(_CT % (_W % ("int", 4, "group"))), "ScenarioError",
     "config.quantization_config.config_groups.group_0.weights: must be FP8 (type 'float', num_bits 8): only FP8 "
     f"compressed-tensors checkpoints are priced, got type 'int', num_bits 4 ({_BF16})"),
    ("hardware", _cfg(_CT % (_W % ("float", 8, "group"))), "ScenarioError",
     "config.quantization_config.config_groups.group_0.weights.strategy: must be one of 'tensor', 'channel', "
     "'block', got 'group'"),
    ("hardware", _cfg(_CT % "{'group_0': {'targets': ['Linear']}}"), "ScenarioError",
     "config.quantization_config.config_groups.group_0.weights: must be an object (type, num_bits, strategy), got None"),
    ("hardware", _cfg(_CT % "{'a': {'weights': {'type': 'float', 'num_bits': 8, 'strategy': 'channel'}}, "
                            "'b': {'weights': {'type': 'float', 'num_bits': 8, 'strategy': 'block'}}}"), "ScenarioError",
     "config.quantization_config.config_groups: must scale every group's weights one way (block, or per-tensor / "
     "per-channel), got both: ['block', 'tensor']"),
    ("hardware", "__import__('dataclasses').replace(rollsim.hardware.model('DeepSeek-V3'), fp8_scaling='channel')",
     "ScenarioError", "model.fp8_scaling: must be one of 'block', 'tensor' or None (not an FP8 checkpoint), got 'channel'"),
    ("hardware", "__import__('dataclasses').replace(rollsim.hardware.model('Llama-3.1-8B'), fp8_scaling='tensor')",
     "ScenarioError",
     "model.fp8_scaling: must be None for a checkpoint that is not FP8 (dense_bytes_per_param 2.0 > 1), got 'tensor'"),
    ("hardware", "rollsim.hardware.serving.step_time(__import__('dataclasses').replace(rollsim.hardware.model("
                 "'Llama-3.1-8B'), dense_bytes_per_param=1.0, expert_bytes_per_param=1.0), 'H100', batch=8, "
                 "context_tokens=512)", "ScenarioError",
     "model.fp8_scaling: must be 'block' or 'tensor' for Llama-3.1-8B, a checkpoint of 1.0 byte(s) per parameter on "
     "H100 (FP8 tensor cores): set it from the checkpoint's quantization_config (weight_block_size present: 'block'; "
     "absent: 'tensor'), or read the config with rollsim.hardware.model_from_hf_config"),
]
