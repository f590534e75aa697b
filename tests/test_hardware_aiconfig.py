"""The Ampere factors against ai-dynamo/aiconfigurator's profiled vLLM 0.14.0 kernels on the A100 SXM 80 GB and the
H100 SXM (Apache-2.0; ``data/aiconfigurator_gemm_a100_h100.csv`` and ``data/aiconfigurator_moe_a100_h100.csv``,
derived by ``scripts/derive_aiconfigurator_ampere_tables.py`` from commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce):
both read-offs recomputed by hand from the shipped tables (dense GEMMs 0.708, agreeing with vidur's 0.732; fused
MoE 0.554, 22 % below), the tables' shapes rebuilt from the registry, and the serving model checked to ship neither:
the routed-expert term keeps vidur's dense factor (the rule of docs/hardware.md called for 0.554; applied, it made
four of the five held-out A100 MoE rows worse, and the fitted term is mostly not kernel time, so it is rejected)."""

from __future__ import annotations

import csv
import math
import runpy
from pathlib import Path

import pytest

from rollsim.hardware import ACCELERATORS, MODELS, serving
from rollsim.hardware.serving import AMPERE_COMPUTE_FACTOR, ENGINES, step_time

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(serving.__file__).parent / "data"
GEMM, MOE = DATA / "aiconfigurator_gemm_a100_h100.csv", DATA / "aiconfigurator_moe_a100_h100.csv"
#: the (n, k) grid of aiconfigurator's gemm collection (a100_sxm and h100_sxm, vLLM 0.14.0: the same 21 values)
GRID = (32, 64, 128, 256, 512, 768, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288,
        16384, 65536)
#: the profiled token counts from 64 to 512 (both GPUs, both ops)
TOKENS = {64, 80, 96, 128, 160, 192, 256, 384, 512}
MOE_TOKENS = TOKENS | {320}
PEAKS = ACCELERATORS["A100-80G"].bf16_flops / ACCELERATORS["H100"].bf16_flops


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def _factor(rows: list[dict[str, str]]) -> float:
    logs = [math.log(float(r["a100_ms"]) / float(r["h100_ms"]) * PEAKS) for r in rows]
    return math.exp(math.fsum(logs) / len(logs))


def _projections() -> set[tuple[int, int]]:
    """Every registry model's dense projections (n, k) at TP 1, 2, 4, 8 as the deriving script lists them, snapped to
    the grid (log-nearest), so the shipped table is checked against the script's own rule."""
    script = runpy.run_path(str(ROOT / "scripts" / "derive_aiconfigurator_ampere_tables.py"), run_name="derive")
    return {(script["_snap"](list(GRID), n), script["_snap"](list(GRID), k)) for n, k in script["dense_projections"]()}


def test_tables_provenance_and_coverage():
    assert (DATA / "AICONFIGURATOR_LICENSE.txt").read_text().lstrip().startswith("Apache License")
    gemm, moe = _rows(GEMM), _rows(MOE)
    # the dense table: exactly the grid points the registry's projections snap to, at every decode token count
    shapes = {(int(r["n"]), int(r["k"])) for r in gemm}
    assert shapes == _projections() and len(shapes) == 157
    assert len(gemm) == 1413 and {int(r["num_tokens"]) for r in gemm} == TOKENS
    # Qwen3-8B's QKV at TP 1 ((32 + 2 x 8) x 128 = 6144 by 4096) is a grid point itself
    assert (6144, 4096) in shapes
    # the fused-MoE table: the registry's expert shapes both GPUs have (GLM-4.5 / Air and gpt-oss are not profiled)
    got = {(int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]), int(r["num_experts"])) for r in moe}
    reg = {(m.hidden_size, m.moe_intermediate_size, m.experts_per_token, m.experts): n for n, m in MODELS.items()
           if m.is_moe}
    assert got == {(2048, 768, 8, 128), (4096, 1536, 8, 128), (7168, 2048, 8, 256), (7168, 2048, 8, 384)}
    assert {reg[s] for s in got} == {"Qwen3-30B-A3B", "Qwen3-235B-A22B", "DeepSeek-R1", "Kimi-K2"}
    # the A100 collection has no uniform ("balanced") routing: the two power laws both GPUs have
    assert {r["distribution"] for r in moe} == {"power_law_1.01", "power_law_1.2"}
    assert {int(r["num_tokens"]) for r in moe} == MOE_TOKENS and len(moe) == 420
    assert {int(r["moe_tp_size"]) for r in moe if r["hidden_size"] == "2048"} == {1, 2, 4}
    assert {int(r["moe_tp_size"]) for r in moe if r["hidden_size"] == "4096"} == {1, 2, 4, 8, 16, 32}
    assert all(float(r["a100_ms"]) > 0 and float(r["h100_ms"]) > 0 for r in gemm + moe)


def test_dense_factor_recomputed_and_against_vidur():
    """The registry's dense projections at 64-512 tokens give 0.708 on aiconfigurator's GEMMs, within 4 % of
    vidur's 0.732 (the rule's "agrees": within 10 %); as on vidur's layers it grows with the token count
    (0.62 at 64-128 tokens, 0.89 at 257-512)."""
    gemm = _rows(GEMM)
    f = _factor(gemm)
    assert f == pytest.approx(serving.aiconfigurator_ampere_factor("gemm"), rel=1e-12)
    assert f == pytest.approx(0.708, abs=5e-4)
    assert abs(f / AMPERE_COMPUTE_FACTOR - 1) < 0.10
    assert f == pytest.approx(serving.ampere_compute_factor(), rel=0.04)
    lo = _factor([r for r in gemm if int(r["num_tokens"]) <= 128])
    hi = _factor([r for r in gemm if int(r["num_tokens"]) > 256])
    assert lo == pytest.approx(0.616, abs=5e-3) and hi == pytest.approx(0.886, abs=5e-3)
    assert lo == pytest.approx(serving.aiconfigurator_ampere_factor("gemm", tokens=(64, 128)), rel=1e-12)


def test_moe_factor_recomputed_and_the_rule():
    """The fused-MoE kernel at the registry's expert shapes gives 0.554, 22 % below the same source's dense 0.708:
    beyond the rule's 10 %, which called for a factor of its own on the routed-expert term. It is not applied (the
    fitted term is 1.2-3x the kernel's time, docs/hardware.md): both engines ship vidur's one factor, and no
    separate MoE factor exists. Every shape, split and distribution reads 0.53-0.60 (no single one carries it)."""
    moe = _rows(MOE)
    f = _factor(moe)
    assert f == pytest.approx(serving.aiconfigurator_ampere_factor("moe"), rel=1e-12)
    assert f == pytest.approx(serving.aiconfigurator_ampere_factor(), rel=1e-12)
    assert f == pytest.approx(0.554, abs=5e-4)
    dense = serving.aiconfigurator_ampere_factor("gemm")
    assert f / dense == pytest.approx(0.783, abs=0.005) and not 0.9 <= f / dense <= 1.1
    for e in (ENGINES["vllm"], ENGINES["sglang"]):
        assert e.ampere_compute_factor == AMPERE_COMPUTE_FACTOR == 0.732
        assert not hasattr(e, "ampere_moe_factor")
    assert not hasattr(serving, "AMPERE_MOE_FACTOR")
    for key in ("hidden_size", "moe_tp_size", "distribution"):
        for v in {r[key] for r in moe}:
            assert 0.52 < _factor([r for r in moe if r[key] == v]) < 0.60, (key, v)


def test_moe_kernel_is_weight_bound_at_decode_token_counts():
    """Why the MoE factor is below the dense one: at 64-512 tokens the A100 / H100 time of the fused-MoE kernel
    (1.76) stays near the HBM bandwidth ratio 3.35 / 2.039 = 1.64 (reading the experts), far from the peak ratio
    3.17, and barely grows with the tokens; the dense GEMMs go from 1.9 to 2.8."""
    moe, gemm = _rows(MOE), _rows(GEMM)

    def time_ratio(rows, lo, hi):
        return _factor([r for r in rows if lo <= int(r["num_tokens"]) <= hi]) / PEAKS

    hbm = ACCELERATORS["H100"].hbm_bytes_per_s / ACCELERATORS["A100-80G"].hbm_bytes_per_s
    assert time_ratio(moe, 64, 512) == pytest.approx(1.76, abs=0.005)
    assert time_ratio(moe, 64, 512) == pytest.approx(hbm, rel=0.08)
    assert time_ratio(moe, 257, 512) / time_ratio(moe, 64, 128) < 1.15
    assert time_ratio(gemm, 64, 128) < 2.0 < 2.7 < time_ratio(gemm, 257, 512)


def test_moe_term_takes_the_dense_factor_on_ampere_only():
    """Qwen3-30B-A3B on one A100 and one H100, 128 sequences: the A100's routed-expert term and its dense decode
    term are both 0.732 x the fitted scale x FLOPs / its peak (the dense factor, not aiconfigurator's 0.554); the
    H100 and the H20 (Hopper) take no factor."""
    m, e = MODELS["Qwen3-30B-A3B"], ENGINES["vllm"]
    experts = 128 * 2 * m.moe_layers * m.experts_per_token * m.expert_params
    dense = 128 * 2 * (m.active_params - m.embedding_params) - experts
    for gpu, fm, fd in (("A100-80G", 0.732, 0.732), ("A800", 0.732, 0.732), ("H100", 1.0, 1.0), ("H20", 1.0, 1.0)):
        t = step_time(m, gpu, batch=128, context_tokens=300)
        peak = ACCELERATORS[gpu].bf16_flops
        assert t["moe_compute_s"] == pytest.approx(fm * e.moe_compute_scale * experts / peak, rel=1e-12), gpu
        assert t["decode_compute_s"] == pytest.approx(fd * e.decode_compute_scale * dense / peak, rel=1e-12), gpu
