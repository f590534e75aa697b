"""An FP8 checkpoint's weight scaling (``ModelSpec.fp8_scaling``): read from the published Hugging Face
``quantization_config`` of real checkpoints, set on the registry and on the held-out rows from their
checkpoints, and priced per scheme by ``rollsim.hardware.serving.step_time`` (worked by hand)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rollsim.hardware import ACCELERATORS, MODELS, held_out, model_from_hf_config, specs
from rollsim.hardware.serving import ENGINES, FIT_TERMS, FP8_RATIOS, step_time

# every fitted term 1 (scales) or 0 (overheads), no all-reduce: the pure roofline with the unfitted ratios
PURE = replace(ENGINES["vllm"], **{t: (1.0 if "scale" in t else 0.0) for t in FIT_TERMS}, allreduce_latency_s=0.0)

_LLAMA_8B = specs.HF_CONFIGS["Llama-3.1-8B"][1]
_QWEN3_8B = specs.HF_CONFIGS["Qwen3-8B"][1]

# ``quantization_config`` of published checkpoints (their config.json on Hugging Face):
#: deepseek-ai/DeepSeek-V3 (and DeepSeek-R1, moonshotai/Kimi-K2-Instruct): 128 x 128 weight blocks
DEEPSEEK_V3 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
#: Qwen/Qwen3-8B-FP8: the same block-scaled format
QWEN3_8B_FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}
#: neuralmagic/Meta-Llama-3-8B-Instruct-FP8 (AutoFP8): per-tensor weight and static activation scales
LLAMA3_8B_AUTOFP8 = {"activation_scheme": "static", "quant_method": "fp8"}
#: neuralmagic/Meta-Llama-3.1-8B-Instruct-FP8 (llm-compressor, compressed-tensors): per-tensor FP8 weights
LLAMA31_8B_CT = {
    "config_groups": {"group_0": {
        "input_activations": {"dynamic": False, "num_bits": 8, "strategy": "tensor", "symmetric": True, "type": "float"},
        "output_activations": None, "targets": ["Linear"],
        "weights": {"dynamic": False, "num_bits": 8, "strategy": "tensor", "symmetric": True, "type": "float"}}},
    "format": "naive-quantized", "ignore": ["lm_head"], "kv_cache_scheme": None, "quant_method": "compressed-tensors",
    "quantization_status": "frozen"}


@pytest.mark.parametrize("base, q, scheme", [
    (_QWEN3_8B, DEEPSEEK_V3, "block"),
    (_QWEN3_8B, QWEN3_8B_FP8, "block"),
    (_LLAMA_8B, LLAMA3_8B_AUTOFP8, "tensor"),
    (_LLAMA_8B, LLAMA31_8B_CT, "tensor"),
])
def test_scheme_read_from_published_configs(base, q, scheme):
    m = model_from_hf_config({**base, "quantization_config": q})
    assert m.fp8_scaling == scheme
    assert (m.dense_bytes_per_param, m.expert_bytes_per_param) == (1.0, 1.0)
    bf16 = model_from_hf_config(base)
    assert bf16.fp8_scaling is None and bf16.dense_bytes_per_param == 2.0
    assert m.total_params == bf16.total_params  # the shape is the same checkpoint's


def test_compressed_tensors_strategies():
    def ct(strategy: str) -> specs.ModelSpec:
        q = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {"weights": {
            "type": "float", "num_bits": 8, "strategy": strategy}}}}
        return model_from_hf_config({**_LLAMA_8B, "quantization_config": q})

    assert ct("channel").fp8_scaling == "tensor"  # per output channel: the per-tensor kernel family
    assert ct("tensor").fp8_scaling == "tensor"
    assert ct("block").fp8_scaling == "block"


def test_mxfp4_and_unquantized_are_not_fp8():
    g = MODELS["gpt-oss-120b"]
    assert g.fp8_scaling is None and g.dense_bytes_per_param == 2.0 and g.expert_bytes_per_param == 4.25 / 8


def test_registry_fp8_checkpoints():
    fp8 = {n for n, m in MODELS.items() if m.fp8_scaling}
    assert fp8 == {"DeepSeek-V3", "DeepSeek-R1", "Kimi-K2"}
    for n in fp8:
        assert MODELS[n].fp8_scaling == "block" and MODELS[n].dense_bytes_per_param == 1.0, n
    for n, m in MODELS.items():
        assert (m.fp8_scaling is None) == (m.dense_bytes_per_param > 1.0), n


def test_held_out_rows_marked_by_their_checkpoint():
    """Every FP8 held-out row carries its checkpoint's scaling: zai-org/GLM-4.6-FP8 (set 1) block,
    amd/Llama-3.1-70B-Instruct-FP8-KV (set 2) per-tensor; the DeepSeek-R1 row takes the registry's."""
    seen = {}
    for rs in (held_out.load(1)["serving"], held_out.load(2)["latency"]):
        for r in rs:
            if r.get("weight_bytes_per_param", 2.0) <= 1.0:
                assert r["fp8_scaling"] in specs.FP8_SCALINGS, r["label"]
                seen[r["label"]] = r["fp8_scaling"]
            else:
                assert "fp8_scaling" not in r, r["label"]
    assert {k: v for k, v in seen.items() if "GLM-4.6" in k} == {"GLM-4.6 FP8 A100 TP8": "block",
                                                                 "GLM-4.6 FP8 H100 TP8": "block"}
    mi = {k: v for k, v in seen.items() if "MI300X" in k}
    assert len(mi) == 16 and set(mi.values()) == {"tensor"}


def _fp8_llama(scheme: str) -> specs.ModelSpec:
    return replace(MODELS["Llama-3.1-70B"], dense_bytes_per_param=1.0, expert_bytes_per_param=1.0, fp8_scaling=scheme)


@pytest.mark.parametrize("gpu", ["H100", "H200", "MI300X", "B200", "L20"])
def test_dense_ratio_per_scheme_by_hand(gpu):
    """Llama-3.1-70B as an FP8 checkpoint on 8 GPUs, 256 sequences of 1,000 tokens: block-scaled dense
    GEMMs at 0.435 (decode) / 0.676 (prefill) x the BF16 peak, per-tensor ones at the datasheet FP8 peak,
    attention at the BF16 peak for both, on every GPU with FP8 tensor cores."""
    g = ACCELERATORS[gpu]
    peak, fp8 = 8 * g.bf16_flops, 8 * g.fp8_flops
    m = _fp8_llama("block")
    flops = 256 * 2 * (m.active_params - m.embedding_params)
    blk = step_time(m, gpu, tp=8, batch=256, context_tokens=1000, params=PURE)
    ten = step_time(_fp8_llama("tensor"), gpu, tp=8, batch=256, context_tokens=1000, params=PURE)
    assert blk["decode_compute_s"] == pytest.approx(flops / (0.435 * peak), rel=1e-12)
    assert ten["decode_compute_s"] == pytest.approx(flops / fp8, rel=1e-12)
    assert blk["attention_compute_s"] == ten["attention_compute_s"] == pytest.approx(
        256 * m.attention_flops_per_token(1000) / peak, rel=1e-12)
    assert blk["weights_s"] == ten["weights_s"]  # 1 byte per parameter either way
    pre_b = step_time(m, gpu, tp=8, batch=0, context_tokens=0, prefill_tokens=4096, params=PURE)
    pre_t = step_time(_fp8_llama("tensor"), gpu, tp=8, batch=0, context_tokens=0, prefill_tokens=4096, params=PURE)
    assert pre_b["prefill_compute_s"] == pytest.approx(4096 * 2 * (m.active_params - m.embedding_params)
                                                       / (0.676 * peak), rel=1e-12)
    assert pre_t["prefill_compute_s"] == pytest.approx(4096 * 2 * (m.active_params - m.embedding_params) / fp8,
                                                       rel=1e-12)


@pytest.mark.parametrize("gpu", ["H100", "MI300X", "B200"])
@pytest.mark.parametrize("scheme", ["block", "tensor"])
def test_moe_ratio_for_both_schemes_by_hand(gpu, scheme):
    """Routed experts run at the fused-MoE FP8 / BF16 ratio (1.135, measured per-tensor) whatever the
    scheme; DeepSeek-V3's dense layers follow the scheme."""
    g = ACCELERATORS[gpu]
    m = replace(MODELS["DeepSeek-V3"], fp8_scaling=scheme)
    t = step_time(m, gpu, tp=8, batch=256, context_tokens=1000, params=PURE)
    experts = 256 * 2 * m.moe_layers * m.experts_per_token * m.expert_params
    dense = 256 * 2 * (m.active_params - m.embedding_params) - experts
    assert t["moe_compute_s"] == pytest.approx(experts / (FP8_RATIOS["moe"] * 8 * g.bf16_flops), rel=1e-12)
    want = dense / (0.435 * 8 * g.bf16_flops) if scheme == "block" else dense / (8 * g.fp8_flops)
    assert t["decode_compute_s"] == pytest.approx(want, rel=1e-12)


def test_no_fp8_tensor_cores_is_weight_only():
    """On the A100 (no FP8) both schemes are the same: BF16 compute (times the Ampere factor), 1-byte reads."""
    a = step_time(_fp8_llama("block"), "A100-80G", tp=8, batch=256, context_tokens=1000, params=PURE)
    b = step_time(_fp8_llama("tensor"), "A100-80G", tp=8, batch=256, context_tokens=1000, params=PURE)
    assert a == b
    m = _fp8_llama("tensor")
    assert a["decode_compute_s"] == pytest.approx(0.732 * 256 * 2 * (m.active_params - m.embedding_params)
                                                  / (8 * 312e12), rel=1e-12)
    bf16 = step_time("Llama-3.1-70B", "A100-80G", tp=8, batch=256, context_tokens=1000, params=PURE)
    assert a["weights_s"] == pytest.approx(bf16["weights_s"] / 2, rel=1e-12)
