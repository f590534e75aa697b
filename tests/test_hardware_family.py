"""The serving model's per-family and FP8 compute terms (rollsim.hardware.serving): the Ampere factor
recomputed from the shipped table of microsoft/vidur's profiled linear layers, the FP8 / BF16 ratios
recomputed from the published vLLM kernel benchmarks they cite, and hand-worked steps on the A100 and
for an FP8 checkpoint on the H100."""

from __future__ import annotations

import csv
import math
from dataclasses import replace

import pytest

from rollsim.hardware import ACCELERATORS, MODELS, serving
from rollsim.hardware.serving import (AMPERE_COMPUTE_FACTOR, ENGINES, FIT_TERMS, FP8_RATIOS, VIDUR_LINEAR_LAYERS,
                                      step_time)

# every fitted term 1 (scales) or 0 (overheads), no all-reduce: the pure roofline with the unfitted factors
PURE = replace(ENGINES["vllm"], **{t: (1.0 if "scale" in t else 0.0) for t in FIT_TERMS}, allreduce_latency_s=0.0)


def _table() -> dict[tuple[str, str, int, int], float]:
    with VIDUR_LINEAR_LAYERS.open() as f:
        return {(r["model"], r["gpu"], int(r["tp"]), int(r["num_tokens"])): float(r["median_ms"])
                for r in csv.DictReader(f)}


def test_ampere_factor_recomputed_from_the_shipped_vidur_table():
    """The factor is the geometric mean, over every (model, TP, 64-512 tokens) vidur profiled on both
    GPUs, of (A100 ms x A100 peak) / (H100 ms x H100 peak); recomputed here by hand from the CSV."""
    ms = _table()
    models = {k[0] for k in ms}
    assert models == {"Qwen/Qwen-72B", "codellama/CodeLlama-34b-Instruct-hf", "internlm/internlm-20b",
                      "meta-llama/Llama-2-70b-hf", "meta-llama/Llama-2-7b-hf", "microsoft/phi-2"}
    peak = ACCELERATORS["A100-80G"].bf16_flops / ACCELERATORS["H100"].bf16_flops
    assert peak == pytest.approx(312 / 989)
    logs = [math.log(t / ms[(m, "h100", tp, n)] * peak) for (m, g, tp, n), t in ms.items()
            if g == "a100" and 64 <= n <= 512]
    assert len(logs) == 1197  # 57 token counts x 21 (model, TP) pairs
    f = math.exp(sum(logs) / len(logs))
    assert f == pytest.approx(serving.ampere_compute_factor(), rel=1e-12)
    assert AMPERE_COMPUTE_FACTOR == pytest.approx(f, abs=5e-4)
    assert ENGINES["vllm"].ampere_compute_factor == ENGINES["sglang"].ampere_compute_factor == AMPERE_COMPUTE_FACTOR


def test_vidur_table_regimes():
    """What the derivation rests on, checked on the data: at 1-32 tokens the layers read their weights
    (A100 / H100 time near the HBM bandwidth ratio 3.35 / 2.039 = 1.64, within 15 % on the geometric
    mean: the regime ``weights_s`` already prices per GPU); in the 64-512 decode range the A100 / H100
    time is between that and the peak ratio 989 / 312 = 3.17, nearer the peak ratio at more tokens; the
    Llama-2-7B rows agree with the older vidur_profiling.csv rows of the same kernels."""
    ms = _table()

    def gmean(lo, hi):
        r = [t / ms[(m, "h100", tp, n)] for (m, g, tp, n), t in ms.items() if g == "a100" and lo <= n <= hi]
        return math.exp(sum(map(math.log, r)) / len(r))

    assert gmean(1, 32) == pytest.approx(3.35 / 2.039, rel=0.15)
    assert 3.35 / 2.039 < gmean(64, 512) < 989 / 312
    assert gmean(64, 512) < gmean(256, 512)  # more tokens, nearer the compute-bound ratio
    with (VIDUR_LINEAR_LAYERS.parent / "vidur_profiling.csv").open() as f:
        old = [r for r in csv.DictReader(f) if r["kind"] == "llama2_7b_linear_layer"]
    assert len(old) == 14
    for r in old:
        assert ms[("meta-llama/Llama-2-7b-hf", r["gpu"], 1, int(r["size_bytes_or_tokens"]))] == pytest.approx(
            float(r["median_ms"]), abs=2e-3)


def test_fp8_ratios_from_the_published_kernel_benchmarks():
    """vllm-project/vllm PR 23280 (H100, DeepSeek-V3 N=2112 K=7168, TFLOP/s of torch BF16 and vLLM's block
    FP8 CUTLASS kernel by batch) and PR 35457 (H200, fused-MoE Triton, FP8 10-17 % faster than BF16)."""
    bf16 = {64: 163.467729, 128: 275.740510, 256: 401.863069, 512: 566.262626, 2048: 648.192575,
            4096: 715.781529, 8192: 666.385367}
    fp8 = {64: 55.792628, 128: 106.531540, 256: 192.465136, 512: 322.256922, 2048: 426.640953,
           4096: 456.931446, 8192: 489.655688}

    def gmean(ns):
        return math.exp(sum(math.log(fp8[n] / bf16[n]) for n in ns) / len(ns))

    assert FP8_RATIOS["dense_decode"] == pytest.approx(gmean((64, 128, 256, 512)), abs=5e-4)
    assert FP8_RATIOS["dense_prefill"] == pytest.approx(gmean((2048, 4096, 8192)), abs=5e-4)
    assert FP8_RATIOS["moe"] == pytest.approx((1.10 + 1.17) / 2)
    e = ENGINES["vllm"]
    assert (e.fp8_dense_decode_ratio, e.fp8_dense_prefill_ratio, e.fp8_moe_ratio) == (
        FP8_RATIOS["dense_decode"], FP8_RATIOS["dense_prefill"], FP8_RATIOS["moe"])


def test_a100_step_by_hand():
    """Qwen3-14B on one A100 80 GB, 200 sequences of 300 tokens, the shipped vLLM terms: the decode
    compute term is 0.732 x 7.31 x 2 x (non-embedding params) x 200 / 312 TFLOP/s; the same step's
    term on an H100 has no factor (and the H100's peak)."""
    m = MODELS["Qwen3-14B"]
    e = ENGINES["vllm"]
    a = step_time("Qwen3-14B", "A100-80G", batch=200, context_tokens=300)
    flops = 200 * 2 * (m.active_params - m.embedding_params)
    assert a["decode_compute_s"] == pytest.approx(0.732 * e.decode_compute_scale * flops / 312e12, rel=1e-12)
    # 0.732 x 7.31 x 200 x 2 x 13.99e9 / 312e12 = 0.0960 s (0.131 s without the factor, 3.17x the H100's)
    assert a["decode_compute_s"] == pytest.approx(0.0960, abs=5e-4)
    assert a["overhead_s"] == pytest.approx(e.ampere_step_overhead_s + m.layers * e.layer_overhead_s, rel=1e-12)
    h = step_time("Qwen3-14B", "H100", batch=200, context_tokens=300)
    assert h["decode_compute_s"] == pytest.approx(e.decode_compute_scale * flops / 989e12, rel=1e-12)
    assert a["decode_compute_s"] / h["decode_compute_s"] == pytest.approx(0.732 * 989 / 312, rel=1e-12)
    # attention and prefill keep one efficiency on every family
    p = step_time("Qwen3-14B", "A100-80G", batch=0, context_tokens=0, prefill_tokens=2048, params=PURE)
    assert p["prefill_compute_s"] == pytest.approx(2048 * 2 * (m.active_params - m.embedding_params) / 312e12,
                                                   rel=1e-12)
    # the MoE term takes the factor too; the other families (Hopper, Blackwell, ...) none
    q = MODELS["Qwen3-30B-A3B"]
    moe = 64 * 2 * q.moe_layers * q.experts_per_token * q.expert_params
    assert step_time(q, "A100-80G", batch=64, context_tokens=0, params=PURE)["moe_compute_s"] == pytest.approx(
        0.732 * moe / 312e12, rel=1e-12)
    for gpu in ("H20", "B200", "A800", "A100-40G"):
        g = ACCELERATORS[gpu]
        f = 0.732 if g.family == "ampere" else 1.0
        assert step_time(q, gpu, batch=64, context_tokens=0, params=PURE)["moe_compute_s"] == pytest.approx(
            f * moe / g.bf16_flops, rel=1e-12), gpu


def test_fp8_checkpoint_step_by_hand():
    """DeepSeek-V3 (an FP8 checkpoint) on 8 H100s, 256 sequences of 1,000 tokens, pure roofline: the dense
    GEMMs at 0.435 x the BF16 peak, the routed experts at 1.135 x, attention at the BF16 peak, never the
    datasheet's FP8 peak; on the A100 (no FP8 tensor cores) everything at its BF16 peak (times the Ampere
    factor for the decode terms); the weights are read at 1 byte per parameter on both."""
    m = MODELS["DeepSeek-V3"]
    t = step_time(m, "H100", tp=8, batch=256, context_tokens=1000, params=PURE)
    per_token = 2 * (m.active_params - m.embedding_params)
    experts = 2 * m.moe_layers * m.experts_per_token * m.expert_params
    peak = 8 * 989e12
    assert t["decode_compute_s"] == pytest.approx(256 * (per_token - experts) / (0.435 * peak), rel=1e-12)
    assert t["moe_compute_s"] == pytest.approx(256 * experts / (1.135 * peak), rel=1e-12)
    assert t["attention_compute_s"] == pytest.approx(256 * m.attention_flops_per_token(1000) / peak, rel=1e-12)
    a = step_time(m, "A100-80G", tp=8, batch=256, context_tokens=1000, params=PURE)
    assert a["decode_compute_s"] == pytest.approx(0.732 * 256 * (per_token - experts) / (8 * 312e12), rel=1e-12)
    assert a["moe_compute_s"] == pytest.approx(0.732 * 256 * experts / (8 * 312e12), rel=1e-12)
    assert a["weights_s"] / t["weights_s"] == pytest.approx(3.35 / 2.039, rel=1e-12)  # same bytes, other HBM
    # prefill chunks of an FP8 checkpoint at 0.676 x the BF16 peak
    p = step_time(m, "H100", tp=8, batch=0, context_tokens=0, prefill_tokens=4096, params=PURE)
    assert p["prefill_compute_s"] == pytest.approx(4096 * per_token / (0.676 * peak), rel=1e-12)
    # a BF16 model is untouched by the FP8 ratios
    b = step_time("Qwen3-8B", "H100", batch=64, context_tokens=0, params=PURE)
    q = MODELS["Qwen3-8B"]
    assert b["decode_compute_s"] == pytest.approx(64 * 2 * (q.active_params - q.embedding_params) / 989e12, rel=1e-12)
