"""The routed-expert (fused-MoE) term against ai-dynamo/aiconfigurator's profiled vLLM fused-MoE kernel on the
H100 (Apache-2.0; ``data/aiconfigurator_moe_h100.csv``, derived by ``scripts/derive_aiconfigurator_moe_table.py``
from commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce): how the kernel's time per FLOP depends on the expert
columns each GPU holds under tensor parallelism, and whether our MoE term prices the kernel at the widths
of the held-out rows it misses (Qwen3-235B-A22B and GLM-4.6 at 192 columns, GLM-4.5-Air at 352)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from rollsim.hardware import ACCELERATORS, MODELS, serving

TABLE = Path(serving.__file__).parent / "data" / "aiconfigurator_moe_h100.csv"
LICENSE = Path(serving.__file__).parent / "data" / "AICONFIGURATOR_LICENSE.txt"
#: the decode regime the other read-off factors use (serving.AMPERE_FACTOR_TOKENS)
DECODE = (64, 128, 256, 512)
Shape = tuple[int, int, int, int]  # hidden, expert intermediate, top-k, experts


def _table() -> dict[tuple[str, Shape, int, int], float]:
    with TABLE.open() as f:
        return {(r["vllm_version"], (int(r["hidden_size"]), int(r["inter_size"]), int(r["topk"]),
                                     int(r["num_experts"])), int(r["moe_tp_size"]), int(r["num_tokens"])):
                float(r["latency_ms"]) for r in csv.DictReader(f)}


def split_ratio(ms: dict[tuple[str, Shape, int, int], float], version: str, shape: Shape, tp: int) -> float:
    """The kernel's time per FLOP with each expert split over ``tp`` GPUs relative to unsplit, the
    geometric mean over the decode token counts: ``latency(tp) x tp / latency(1)`` (1 when the kernel
    scales as the FLOPs and bytes per GPU do, as our MoE terms assume)."""
    logs = [math.log(ms[(version, shape, tp, n)] * tp / ms[(version, shape, 1, n)]) for n in DECODE]
    return math.exp(math.fsum(logs) / len(logs))


def test_table_provenance_and_coverage():
    ms = _table()
    assert LICENSE.read_text().lstrip().startswith("Apache License")
    assert len(ms) == 1422
    assert {k[0] for k in ms} == {"0.14.0", "0.24.0"}
    # Qwen3-235B-A22B's experts (hidden 4096, 1,536 columns, top-8 of 128) at every split 1-32, both versions
    q235 = (4096, 1536, 8, 128)
    for v in ("0.14.0", "0.24.0"):
        assert {tp for (vv, s, tp, n) in ms if vv == v and s == q235} == {1, 2, 4, 8, 16, 32}
    m = MODELS["Qwen3-235B-A22B"]
    assert (m.hidden_size, m.expert_params // (3 * m.hidden_size), m.experts_per_token, m.experts) == q235
    assert all(v > 0 for v in ms.values())


@pytest.mark.parametrize("version, tp, lo, hi", [
    # vLLM 0.14.0 (the collection nearest the held-out runs' v0.11.0): flat down to 192 columns
    ("0.14.0", 2, 0.99, 1.02), ("0.14.0", 4, 0.99, 1.02), ("0.14.0", 8, 0.97, 1.01),
    ("0.14.0", 16, 1.18, 1.22), ("0.14.0", 32, 1.77, 1.82),
    # vLLM 0.24.0's Triton experts: 1.22 at 192 columns
    ("0.24.0", 2, 1.02, 1.04), ("0.24.0", 4, 1.06, 1.09), ("0.24.0", 8, 1.20, 1.24),
])
def test_qwen3_235b_split_ratio(version, tp, lo, hi):
    """Per FLOP, the fused-MoE kernel at Qwen3-235B-A22B's TP 8 (192 columns per GPU) costs 0.99x
    (vLLM 0.14.0) to 1.22x (0.24.0) what it does unsplit (1,536 columns) at 64-512 tokens; below 192
    columns the cost grows (1.2x at 96, 1.8x at 48 in 0.14.0)."""
    r = split_ratio(_table(), version, (4096, 1536, 8, 128), tp)
    assert lo <= r <= hi, r


def test_width_is_not_what_the_held_out_misses_lack():
    """At every split the table has to 192-384 columns per GPU (multiples of 32) for 128 or more
    experts, the kernel's time per FLOP is 0.99-1.11x (0.14.0) / 1.02-1.29x (0.24.0) unsplit's; GLM-4.5-Air's 352 columns
    (0.24.0 has a 704-wide shape at TP 2) 1.08x. Widths that are not multiples of 32 cost far more
    (the 1,856-wide shape at 232 columns: 1.9x / 3.3x): the kernel's tiling, not the width, is the effect."""
    ms = _table()
    for v, lo, hi in (("0.14.0", 0.98, 1.11), ("0.24.0", 1.01, 1.29)):
        pts = {(s, tp) for (vv, s, tp, n) in ms if vv == v and tp > 1 and s[3] >= 128
               and 192 <= s[1] // tp <= 384 and (s[1] // tp) % 32 == 0 and (v, s, 1, 64) in ms}
        assert len(pts) >= 5
        for s, tp in pts:
            assert lo <= split_ratio(ms, v, s, tp) <= hi, (v, s, tp)
    assert split_ratio(ms, "0.24.0", (2816, 704, 8, 128), 2) == pytest.approx(1.08, abs=0.01)
    assert split_ratio(ms, "0.14.0", (2688, 1856, 6, 128), 8) == pytest.approx(1.89, abs=0.01)
    assert split_ratio(ms, "0.24.0", (2688, 1856, 6, 128), 8) == pytest.approx(3.27, abs=0.01)


@pytest.mark.parametrize("version", ["0.14.0", "0.24.0"])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_moe_term_prices_the_kernel_at_qwen3_235b(version, tp):
    """Our routed-expert time of one Qwen3-235B-A22B MoE layer on the H100 (the touched experts' BF16
    weights over the bandwidth plus the fitted moe_compute term) is at or above the profiled kernel's
    at 128-512 tokens, split or not (1.24-3.1x; ours also carries routing, dispatch and what else of a
    step scales with routed tokens), and within 0.95-1.25x of it at 64: the model is not faster than
    the kernel at 192 columns, so the expert width is not what the held-out Qwen3-235B-A22B TP 8 row lacks."""
    ms = _table()
    e, g, m = serving.engine_params("vllm"), ACCELERATORS["H100"], MODELS["Qwen3-235B-A22B"]
    shape = (4096, 1536, 8, 128)
    for n in DECODE:
        read = (serving.expected_experts(m.experts, m.experts_per_token, n) * m.expert_params
                * m.expert_bytes_per_param / (tp * g.hbm_bytes_per_s))
        compute = e.moe_compute_scale * n * m.experts_per_token * 2 * m.expert_params / (tp * g.bf16_flops)
        ratio = (read + compute) / (ms[(version, shape, tp, n)] * 1e-3)
        if n == 64:
            assert 0.95 <= ratio <= 1.25, (n, ratio)
        else:
            assert 1.2 <= ratio <= 3.2, (n, ratio)
