"""Bad inputs of ``rollsim.hardware`` (specs lookups, ``model_from_hf_config``) and the exact error each
gets; appended to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

ROWS: list[tuple[str, str, str, str]] = [
    ("hardware", "rollsim.hardware.accelerator('TPU-v9')", "ScenarioError",
     "re:gpu: unknown accelerator 'TPU-v9' \\(known, case-insensitive: H100, H800, H200, H20, .*\\)"),
    ("hardware", "rollsim.hardware.model('GPT-9')", "ScenarioError",
     "re:model: unknown model 'GPT-9' \\(known, .*: Qwen2.5-0.5B, .*\\)"),
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
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=6, rollout_tp=4)",
     "ScenarioError", "rollout_gpus: must be a multiple of rollout_tp (4), got 6"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, engine='trt')",
     "ScenarioError", "engine: must be one of vllm, sglang or an EngineParams, got 'trt'"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, train_backend='deepspeed')",
     "ScenarioError", "train_backend: must be 'fsdp2' or 'megatron', got 'deepspeed'"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=8, train_gpus=4, "
     "colocated=True)", "ScenarioError", "colocated: needs rollout_gpus == train_gpus (the same GPUs), got 8 and 4"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-8B', gpu='H100', rollout_gpus=1, gpu_memory_utilization=1.5)",
     "ScenarioError", "gpu_memory_utilization: must be in (0, 1], got 1.5"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen3-235B-A22B', gpu='H100', rollout_gpus=1)", "ScenarioError",
     "gpu_memory_utilization: leaves no room for KV cache: Qwen3-235B-A22B needs 437.9 GiB of weights per GPU at "
     "tp=1, H100 x 0.9 gives 72.0 GiB (with 2.45 GiB for activations); raise tp or gpu_memory_utilization"),
    ("hardware", "rollsim.hardware.Deployment(model='Qwen2.5-14B', gpu='L20', rollout_gpus=1, "
     "gpu_memory_utilization=0.7).scenario(lengths=LogNormal(max_tokens=60000), prompts_per_step=8)", "ScenarioError",
     "re:kv_cache_tokens: an instance of 1 L20 holds [0-9]+ tokens of KV cache, less than one request's 60001 "
     "\\(prompt \\+ longest answer \\+ 1\\); raise rollout_tp or gpu_memory_utilization, or cap the lengths"),
    ("CLI", "cli('hardware', '--gpu', 'H100')", "CliExit",
     "exit 2: rollsim: error: model: give --model or --hf-config (one of them)"),
    ("CLI", "cli('split', '--gpus', '4')", "CliExit",
     "exit 2: rollsim: error: --gpu-s-per-token: required without --model and --gpu (which derive it from specs)"),
]
