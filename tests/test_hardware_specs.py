"""rollsim.hardware.specs against its sources: parameter counts recomputed from each config.json
within 2 % of the totals the model's publisher states; datasheet numbers; config.json reading and
refusals; the legacy ``rollsim.resources`` names read the same registry."""

from __future__ import annotations

import json

import pytest

import rollsim

from rollsim import ScenarioError, resources
from rollsim.hardware import ACCELERATORS, MODELS, accelerator, model, model_from_hf_config
from rollsim.hardware.specs import HF_CONFIGS

B = 1e9
# name: (published total, published active, convention of the active count, source). Conventions:
# "all" counts every parameter a token uses, "no-input-emb" leaves out the input embedding table,
# "no-emb" leaves out the input embedding and the output head (publishers differ).
PUBLISHED = {
    "Qwen2.5-0.5B": (0.49 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-0.5B model card"),
    "Qwen2.5-1.5B": (1.54 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-1.5B model card"),
    "Qwen2.5-3B": (3.09 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-3B model card"),
    "Qwen2.5-7B": (7.61 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-7B model card"),
    "Qwen2.5-14B": (14.7 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-14B model card"),
    "Qwen2.5-32B": (32.5 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-32B model card"),
    "Qwen2.5-72B": (72.7 * B, None, "all", "huggingface.co/Qwen/Qwen2.5-72B model card"),
    "Qwen3-0.6B": (0.6 * B, None, "all", "huggingface.co/Qwen/Qwen3-0.6B model card"),
    "Qwen3-1.7B": (1.7 * B, None, "all", "huggingface.co/Qwen/Qwen3-1.7B model card"),
    "Qwen3-4B": (4.0 * B, None, "all", "huggingface.co/Qwen/Qwen3-4B model card"),
    "Qwen3-8B": (8.2 * B, None, "all", "huggingface.co/Qwen/Qwen3-8B model card"),
    "Qwen3-14B": (14.8 * B, None, "all", "huggingface.co/Qwen/Qwen3-14B model card"),
    "Qwen3-32B": (32.8 * B, None, "all", "huggingface.co/Qwen/Qwen3-32B model card"),
    "Qwen3-30B-A3B": (30.5 * B, 3.3 * B, "all", "huggingface.co/Qwen/Qwen3-30B-A3B model card"),
    "Qwen3-235B-A22B": (235 * B, 22 * B, "all", "huggingface.co/Qwen/Qwen3-235B-A22B model card"),
    "Llama-3.1-8B": (8.03 * B, None, "all", "huggingface.co/meta-llama/Llama-3.1-8B (8.03B params)"),
    "Llama-3.1-70B": (70.6 * B, None, "all", "huggingface.co/meta-llama/Llama-3.1-70B (70.6B params)"),
    "DeepSeek-V3": (671 * B, 37 * B, "no-input-emb", "arXiv 2412.19437 (DeepSeek-V3 technical report)"),
    "DeepSeek-R1": (671 * B, 37 * B, "no-input-emb", "huggingface.co/deepseek-ai/DeepSeek-R1 model card"),
    "Kimi-K2": (1.04e12, 32 * B, "no-input-emb", "huggingface.co/moonshotai/Kimi-K2-Instruct model card (1T / 32B)"),
    "GLM-4.5": (355 * B, 32 * B, "no-emb", "arXiv 2508.06471 (GLM-4.5 technical report)"),
    "GLM-4.5-Air": (106 * B, 12 * B, "no-emb", "arXiv 2508.06471 (GLM-4.5 technical report)"),
    "gpt-oss-20b": (20.9 * B, 3.6 * B, "no-input-emb", "openai gpt-oss model card, arXiv 2508.10925"),
    "gpt-oss-120b": (116.8 * B, 5.1 * B, "no-input-emb", "openai gpt-oss model card, arXiv 2508.10925"),
}


def test_every_listed_model_is_in_the_registry_with_its_source():
    assert set(PUBLISHED) == set(MODELS)
    for name, m in MODELS.items():
        assert m.source == f"https://huggingface.co/{HF_CONFIGS[name][0]}/blob/main/config.json"


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_parameter_counts_within_2_percent_of_published(name):
    total, active, conv, _src = PUBLISHED[name]
    m = MODELS[name]
    assert m.total_params == pytest.approx(total, rel=0.02)
    a = m.active_params
    if conv != "all":
        a -= m.embedding_params
    if conv == "no-emb":
        a -= m.embedding_params
    assert a == pytest.approx(active if active is not None else total, rel=0.02)
    assert m.is_moe == (active is not None)


def test_hand_worked_counts():
    """Qwen2.5-7B: per layer attention 2 x 3584^2 + 2 x 3584 x 512 + QKV bias 4,608 and MLP 3 x 3584 x
    18944 and 2 norms; 28 layers, an untied 152,064-token embedding and head, a final norm."""
    layer = 2 * 3584**2 + 2 * 3584 * 512 + 4608 + 3 * 3584 * 18944 + 2 * 3584
    assert MODELS["Qwen2.5-7B"].total_params == 28 * layer + 2 * 152064 * 3584 + 3584 == 7_615_616_512
    # Qwen3-30B-A3B: 48 MoE layers of 128 experts of 3 x 2048 x 768, top 8
    m = MODELS["Qwen3-30B-A3B"]
    assert m.expert_params == 3 * 2048 * 768
    assert m.total_params - m.active_params == 48 * 120 * 3 * 2048 * 768
    assert (m.experts, m.experts_per_token, m.moe_layers, m.shared_experts) == (128, 8, 48, 0)
    d = MODELS["DeepSeek-V3"]
    assert (d.dense_layers, d.moe_layers, d.shared_experts, d.kv_lora_rank, d.qk_rope_head_dim) == (3, 58, 1, 512, 64)


def test_kv_bytes_per_token():
    assert MODELS["Qwen2.5-7B"].kv_bytes_per_token() == 28 * 4 * 128 * 2 * 2 == 57344
    assert MODELS["Qwen3-8B"].kv_bytes_per_token() == 36 * 8 * 128 * 2 * 2
    # MLA caches one latent of 512 + 64 per layer for all heads
    assert MODELS["DeepSeek-V3"].kv_bytes_per_token() == 61 * (512 + 64) * 2
    assert MODELS["Kimi-K2"].kv_bytes_per_token(bytes_per_value=1) == 61 * 576
    # gpt-oss: half the layers slide over 128 tokens
    g = MODELS["gpt-oss-120b"]
    assert g.sliding_window_layers == 18 and g.sliding_window == 128
    assert g.kv_bytes_per_token() == 18 * 8 * 64 * 2 * 2
    assert g.kv_bytes(1000.0) == 1000 * 18 * 2048 + 128 * 18 * 2048
    assert g.kv_bytes(10.0) == 10 * 36 * 2048


def test_checkpoint_widths():
    g = MODELS["gpt-oss-120b"]
    assert g.expert_bytes_per_param == 4.25 / 8 and g.dense_bytes_per_param == 2.0
    # the MXFP4 checkpoint is about 61 GiB (openai gpt-oss model card: 60.8 GiB)
    assert g.weight_bytes(None) / 2**30 == pytest.approx(60.8, rel=0.03)
    assert g.weight_bytes() == 2 * g.total_params
    assert MODELS["DeepSeek-V3"].weight_bytes(None) == MODELS["DeepSeek-V3"].total_params


@pytest.mark.parametrize("name, hbm, bw, bf16, fp8, nvlink", [
    ("H100", 80, 3.35e12, 989e12, 1979e12, 450e9),    # NVIDIA H100 SXM datasheet; NVLink 900 GB/s both ways
    ("H800", 80, 3.35e12, 989e12, 1979e12, 200e9),
    ("H200", 141, 4.8e12, 989e12, 1979e12, 450e9),
    ("H20", 96, 4.0e12, 148e12, 296e12, 450e9),
    ("A100-40G", 40, 1.555e12, 312e12, None, 300e9),
    ("A100-80G", 80, 2.039e12, 312e12, None, 300e9),
    ("A800", 80, 2.039e12, 312e12, None, 200e9),
    ("L20", 48, 864e9, 119.5e12, 239e12, 32e9),
    ("L40S", 48, 864e9, 362.05e12, 733e12, 32e9),
    ("B200", 180, 8e12, 2.25e15, 4.5e15, 900e9),
    ("GB200", 186, 8e12, 2.5e15, 5e15, 900e9),
    ("MI300X", 192, 5.3e12, 1307.4e12, 2614.9e12, 448e9),
    ("Ascend-910B", 64, 1.6e12, 313e12, None, 196e9),
])
def test_accelerator_datasheets(name, hbm, bw, bf16, fp8, nvlink):
    a = ACCELERATORS[name]
    assert (a.hbm_gib, a.hbm_bytes_per_s, a.bf16_flops, a.fp8_flops, a.scale_up_bytes_per_s) == (hbm, bw, bf16, fp8, nvlink)
    assert a.source and a.family in ("ampere", "hopper", "blackwell", "ada", "cdna3", "ascend")


def test_lookup_names_and_aliases():
    assert accelerator("h100-sxm") is ACCELERATORS["H100"]
    with pytest.warns(rollsim.NameAssumedWarning, match=r"^gpu: 'a100': the A100 comes in 40 and 80 GB: taken as A100-80G"):
        assert accelerator("a100") is ACCELERATORS["A100-80G"]
    assert accelerator("ascend 910b") is ACCELERATORS["Ascend-910B"]
    assert accelerator("GB200-NVL72").tp_domain == 72
    assert model("Qwen/Qwen3-8B") is MODELS["Qwen3-8B"]
    assert model("qwen3-30b-a3b-instruct-2507") is MODELS["Qwen3-30B-A3B"]
    assert model("moonshotai/Kimi-K2-Instruct") is MODELS["Kimi-K2"]
    with pytest.raises(ScenarioError, match=r"^gpu: unknown accelerator 'TPU' \(known, case-insensitive: H100, H800, "):
        accelerator("TPU")
    with pytest.raises(ScenarioError, match=r"^model: unknown model 'GPT-9' \(known, "):
        model("GPT-9")


def test_config_json_from_path_and_directory(tmp_path):
    repo, cfg = HF_CONFIGS["Qwen3-30B-A3B"]
    (tmp_path / "config.json").write_text(json.dumps({**cfg, "_name_or_path": repo}))
    a = model_from_hf_config(tmp_path)
    b = model_from_hf_config(tmp_path / "config.json")
    assert a.total_params == b.total_params == MODELS["Qwen3-30B-A3B"].total_params
    assert a.name == repo


def test_multimodal_text_config_and_qwen2_moe_shared_expert():
    m = model_from_hf_config({"model_type": "llava", "text_config": HF_CONFIGS["Llama-3.1-8B"][1]})
    assert m.total_params == MODELS["Llama-3.1-8B"].total_params
    # Qwen1.5-MoE-A2.7B: 60 experts of 1408, shared expert of 5632 (4 expert widths), 24 layers
    q = model_from_hf_config({"model_type": "qwen2_moe", "hidden_size": 2048, "num_hidden_layers": 24,
                              "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 5632,
                              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
                              "num_experts": 60, "num_experts_per_tok": 4, "vocab_size": 151936})
    assert q.shared_experts == 4
    assert q.total_params == pytest.approx(14.3e9, rel=0.02)  # Qwen/Qwen1.5-MoE-A2.7B: 14.3B total
    assert q.active_params == pytest.approx(2.7e9, rel=0.05)  # 2.7B activated (embeddings counted once)


def test_config_refusals(tmp_path):
    base = dict(HF_CONFIGS["Qwen3-8B"][1])
    with pytest.raises(ScenarioError, match=r"^config.hidden_size: must be an integer >= 1, got a config.json without it$"):
        model_from_hf_config({k: v for k, v in base.items() if k != "hidden_size"})
    with pytest.raises(ScenarioError, match=r"^config.num_hidden_layers: must be an integer >= 1, got '36'$"):
        model_from_hf_config({**base, "num_hidden_layers": "36"})
    with pytest.raises(ScenarioError, match=r"^config.layer_types: must hold only .*'linear_attention'"):
        model_from_hf_config({**base, "layer_types": ["linear_attention", "full_attention"]})
    with pytest.raises(ScenarioError, match=r"^config.model_type: must be a decoder-only transformer"):
        model_from_hf_config({**base, "model_type": "mamba"})
    with pytest.raises(ScenarioError, match=r"^config.num_experts_per_tok: must be an integer >= 1, got a config"):
        model_from_hf_config({**base, "num_experts": 8, "moe_intermediate_size": 64})
    with pytest.raises(ScenarioError, match=r"^config: must be a config.json file or a directory holding one"):
        model_from_hf_config(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ScenarioError, match=r"^config: must be a readable JSON config.json"):
        model_from_hf_config(tmp_path / "bad.json")


def test_legacy_resources_names_read_the_registry():
    assert resources.GPUS["H20"] == resources.Gpu("H20", 4.0e12, 148e12)
    assert resources.GPUS["A100"].hbm_bytes_per_s == ACCELERATORS["A100-80G"].hbm_bytes_per_s
    assert resources.MODELS["Qwen2.5-7B"] == resources.Model("Qwen2.5-7B", 7.62e9, 57344)
    assert resources.MODELS["Qwen2.5-1.5B"] == resources.Model("Qwen2.5-1.5B", 1.54e9, 28672)
    assert "Qwen3-30B-A3B" not in resources.MODELS  # the dense roofline does not take MoE models
    assert "Qwen3-8B" in resources.MODELS
