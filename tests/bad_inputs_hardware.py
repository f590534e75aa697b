"""Bad inputs of ``rollsim.hardware`` (specs lookups, ``model_from_hf_config``) and the exact error each
gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", "rollsim.hardware.accelerator('TPU-v9')", "ScenarioError",
     "re:gpu: must be an Accelerator or one of H100, H800, H200, H20, .*, got 'TPU-v9'"),
    ("hardware", "rollsim.hardware.model('GPT-9')", "ScenarioError",
     "re:model: must be a ModelSpec, a config.json \\(model_from_hf_config\\) or one of Qwen2.5-0.5B, .*, got 'GPT-9'"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'num_hidden_layers': 2})", "ScenarioError",
     "config.hidden_size: must be an integer >= 1, got a config.json without it"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'hidden_size': 64, 'num_hidden_layers': 2.0})", "ScenarioError",
     "config.num_hidden_layers: must be an integer >= 1, got 2.0"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'model_type': 'mamba', 'hidden_size': 64})", "ScenarioError",
     "config.model_type: must be a decoder-only transformer (attention layers only), got 'mamba'"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'hidden_size': 64, 'num_hidden_layers': 2, "
     "'num_attention_heads': 4, 'num_key_value_heads': 3, 'vocab_size': 10, 'intermediate_size': 8})", "ScenarioError",
     "config.num_key_value_heads: must divide num_attention_heads (4), got 3"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'hidden_size': 64, 'num_hidden_layers': 2, "
     "'num_attention_heads': 4, 'vocab_size': 10, 'num_experts': 8, 'num_experts_per_tok': 9, "
     "'moe_intermediate_size': 8})", "ScenarioError",
     "config.num_experts_per_tok: must be in [1, 8] (the routed experts), got 9"),
    ("hardware", "rollsim.hardware.model_from_hf_config({'hidden_size': 64, 'layer_types': ['linear_attention']})",
     "ScenarioError",
     "config.layer_types: must hold only ['full_attention', 'sliding_attention'], got ['linear_attention'] "
     "(layers this model cannot count)"),
    ("hardware", "rollsim.hardware.model_from_hf_config(write('config.json', b'[1, 2]'))", "ScenarioError",
     "re:config: must be a JSON object, got list in '.*config.json'"),
    ("hardware", "rollsim.hardware.model_from_hf_config(42)", "ScenarioError",
     "config: must be a path to a config.json or a dict, got int"),
]
