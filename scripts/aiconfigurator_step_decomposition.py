"""A serving step built from ai-dynamo/aiconfigurator's profiled vLLM 0.14.0 kernels (Apache-2.0; commit
095f58a51c4ca8e61b66ec108d86f223f8d559ce), term by term against rollsim.hardware.serving.step_time, for the rows
docs/hardware.md discusses ("What the kernels leave out").

Usage: PYTHONPATH=python python scripts/aiconfigurator_step_decomposition.py PATH_TO_AICONFIGURATOR_GIT_DIR
(reads the Parquet files with polars; prints a table per row, ships nothing).

The step of a row, as aiconfigurator composes a vLLM TP-only MoE or dense model (``sdk/models/moe.py``,
``sdk/models/llama.py``): per layer QKV and output GEMMs (BF16, ``gemm_perf``), the MLP's or the router's GEMMs,
decode attention of the running sequences at their mean context (``generation_attention_perf``), the prompts
prefilled in the step one at a time (``context_attention_perf``), the fused-MoE kernel
(``moe_perf``, ``vllm_fused_moe``; uniform routing where collected and aiconfigurator's own default for vLLM,
``power_law_1.2``), two custom all-reduces (``custom_allreduce_perf``, the CUDA-graph rows aiconfigurator uses)
and two add+norm (aiconfigurator's analytic memory op: bytes / (0.8 x HBM) + 3 us; 8 hidden-size bytes per token
assumed); once per step the logits GEMM and the embedding all-reduce. Kernel times are interpolated
multilinearly between profiled points (a GEMM wider than the grid is two of half the width). The row's batch,
context and prefill are the held-out / calibration rows' own (running sequences = output tok/s x mean TPOT).
"""

from __future__ import annotations

import bisect
import io
import itertools
import math
import subprocess
import sys
from collections.abc import Callable

import polars as pl

from rollsim.hardware import ACCELERATORS, serving, specs

DATA = "aic-core/src/aiconfigurator_core/systems/data"
Table = dict[tuple[float, ...], float]


def interp(table: Table, point: tuple[float, ...]) -> float:
    axes = [sorted({k[i] for k in table}) for i in range(len(point))]
    sides = []
    for ax, x in zip(axes, point):
        if x in ax:
            sides.append(((x, 1.0),))
            continue
        j = bisect.bisect(ax, x)
        a, b = ax[j - 1], ax[j]
        w = (x - a) / (b - a)
        sides.append(((a, 1 - w), (b, w)))
    return sum(math.prod(c[1] for c in combo) * table[tuple(c[0] for c in combo)]
               for combo in itertools.product(*sides))


class Profiles:
    def __init__(self, git_dir: str, system: str) -> None:
        def read(op: str, name: str) -> pl.DataFrame:
            blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{DATA}/{system}/{op}/vllm/0.14.0/{name}"],
                                  check=True, capture_output=True).stdout
            return pl.read_parquet(io.BytesIO(blob))

        g = read("gemm", "gemm_perf.parquet").filter(pl.col("gemm_dtype") == "bfloat16")
        self.gemm: Table = {(r["m"], r["n"], r["k"]): r["latency"] for r in g.iter_rows(named=True)}
        self.gen = read("attention", "generation_attention_perf.parquet").filter(pl.col("kv_cache_dtype") == "bfloat16")
        self.ctx = read("attention", "context_attention_perf.parquet").filter(pl.col("kv_cache_dtype") == "bfloat16")
        self.moe = read("moe", "moe_perf.parquet").filter((pl.col("moe_dtype") == "bfloat16") & (pl.col("moe_ep_size") == 1)
                                                          & (pl.col("kernel_source") == "vllm_fused_moe"))
        self.ar = read("comm", "custom_allreduce_perf.parquet").filter(pl.col("backend") == "vllm_graph")

    def gemm_ms(self, m: float, n: float, k: float) -> float:
        return 2 * self.gemm_ms(m, n / 2, k) if n > 65536 else interp(self.gemm, (m, n, k))

    @staticmethod
    def _median(df: pl.DataFrame, keys: list[str]) -> Table:
        pts: dict[tuple[float, ...], list[float]] = {}
        for r in df.iter_rows(named=True):
            pts.setdefault(tuple(r[k] for k in keys), []).append(r["latency"])
        return {k: sorted(v)[len(v) // 2] for k, v in pts.items()}

    def attention_ms(self, decode: bool, heads: int, kv: int, batch: float, length: float) -> float:
        df = self.gen if decode else self.ctx
        df = df.filter((pl.col("num_heads") == heads) & (pl.col("num_key_value_heads") == kv))
        return interp(self._median(df, ["batch_size", "step" if decode else "isl"]), (batch, length))

    def moe_ms(self, shape: tuple[int, int, int, int], tp: int, dist: str, tokens: float) -> float | None:
        h, i, k, e = shape
        df = self.moe.filter((pl.col("hidden_size") == h) & (pl.col("inter_size") == i) & (pl.col("topk") == k)
                             & (pl.col("num_experts") == e) & (pl.col("moe_tp_size") == tp)
                             & (pl.col("distribution") == dist))
        return interp(self._median(df, ["num_tokens"]), (tokens,)) if df.height else None

    def allreduce_ms(self, gpus: int, elements: float) -> float:
        df = self.ar.filter(pl.col("num_gpus") == gpus)
        return interp({(r["message_size"],): r["latency"] for r in df.iter_rows(named=True)}, (elements,))


def decompose(p: Profiles, model: str, gpu: str, tp: int, batch: float, ctx: float, prefill: float,
              prompt: float) -> tuple[dict[str, float], dict[str, float], float]:
    """aiconfigurator's op times (ms) and ours grouped the same way (ms), and our step (ms)."""
    m, g = specs.model(model), ACCELERATORS[gpu]
    layers, h, tok = m.layers, m.hidden_size, batch + prefill
    kv, hq = -(-m.kv_heads // tp), m.attention_heads // tp
    aic = {"QKV + output GEMMs": layers * (p.gemm_ms(tok, (hq + 2 * kv) * m.head_dim, h) + p.gemm_ms(tok, h, hq * m.head_dim))}
    if m.is_moe:
        aic["router GEMM"] = layers * p.gemm_ms(tok, m.experts, h)
    else:
        f = m.intermediate_size // tp
        aic["MLP GEMMs"] = layers * (p.gemm_ms(tok, 2 * f, h) + p.gemm_ms(tok, h, f))
    aic["decode attention"] = layers * p.attention_ms(True, hq, kv, batch, ctx)
    aic["prefill attention (one prompt at a time)"] = layers * p.attention_ms(False, hq, kv, 1, prompt) * prefill / prompt
    if m.is_moe:
        shape = (h, m.moe_intermediate_size, m.experts_per_token, m.experts)
        for dist in ("balanced", "power_law_1.2"):
            t = p.moe_ms(shape, tp, dist, tok)
            if t is not None:
                aic[f"fused MoE ({dist})"] = layers * t
    aic["all-reduce (2 per layer)"] = 2 * layers * p.allreduce_ms(tp, tok * h) if tp > 1 else 0.0
    aic["add + norm (2 per layer, analytic)"] = 2 * layers * (tok * 8 * h / (0.8 * g.hbm_bytes_per_s) * 1e3 + 0.003)
    aic["logits GEMM, embedding all-reduce"] = (p.gemm_ms(batch + prefill / prompt, m.vocab_size // tp, h)
                                                + (p.allreduce_ms(tp, tok * h) if tp > 1 else 0.0))
    e = serving.engine_params("vllm")
    t = serving.step_time(m, g, tp=tp, batch=batch, context_tokens=ctx, prefill_tokens=prefill)
    touched = serving.expected_experts(m.experts, m.experts_per_token, tok)
    w_exp = m.moe_layers * touched * m.expert_params * m.expert_bytes_per_param / (tp * g.hbm_bytes_per_s)
    p_exp = e.prefill_compute_scale * prefill * 2 * m.moe_layers * m.experts_per_token * m.expert_params / (tp * g.bf16_flops)
    ours = {"dense layers (weights, decode and prefill compute)": t["weights_s"] - w_exp + t["decode_compute_s"]
            + t["prefill_compute_s"] - p_exp,
            "attention (kv + attention_compute)": t["kv_s"] + t["attention_compute_s"],
            "routed experts (their weights, moe_compute, their prefill)": w_exp + t["moe_compute_s"] + p_exp,
            "all-reduce": t["allreduce_s"], "overhead (per step and layer)": t["overhead_s"]}
    return aic, {k: v * 1e3 for k, v in ours.items()}, t["total_s"] * 1e3


ROWS: list[tuple[str, str, str, int, float, float, float, float, float]] = [
    # label, model, system, tp, batch, context, prefill tokens per step, mean prompt, measured step ms
    ("Llama-3-8B H100 throughput (calibration)", "Llama-3.1-8B", "h100_sxm", 1, 256, 384, 256, 256, 1e3 / 24.3),
    ("Qwen3-32B H100 ShareGPT (calibration)", "Qwen3-32B", "h100_sxm", 1, 1131.6 * 0.0881, 217.4 + 201.4 / 2,
     1131.6 * 0.0881 * 217.4 / 201.4, 217.4, 88.1),
    ("Qwen3-235B-A22B H100 TP8 (held out)", "Qwen3-235B-A22B", "h100_sxm", 8, 4015.36 * 0.14756,
     212894 / 984 + 193865 / 984 / 2, 4015.36 * 0.14756 * 212894 / 193865, 212894 / 984, 147.56),
    ("Qwen3-235B-A22B A100 TP8 (held out)", "Qwen3-235B-A22B", "a100_sxm", 8, 1798.14 * 0.12336,
     217393 / 1000 + 196004 / 1000 / 2, 1798.14 * 0.12336 * 217393 / 196004, 217393 / 1000, 123.36),
]


def main(git_dir: str) -> None:
    profiles: dict[str, Profiles] = {}
    gpus = {"h100_sxm": "H100", "a100_sxm": "A100-80G"}
    for label, model, system, tp, batch, ctx, prefill, prompt, measured in ROWS:
        p = profiles.setdefault(system, Profiles(git_dir, system))
        aic, ours, total = decompose(p, model, gpus[system], tp, batch, ctx, prefill, prompt)
        kernels = sum(v for k, v in aic.items() if "balanced" not in k)
        layers = specs.model(model).layers
        print(f"== {label}: {batch:.1f} sequences at context {ctx:.0f}, {prefill:.0f} prompt tokens per step; "
              f"measured step {measured:.2f} ms")
        show: Callable[[str, str, float], None] = lambda who, k, v: print(f"  {who:5s} {k:60s} {v:8.2f} ms")  # noqa: E731
        for k, v in aic.items():
            show("aic", k, v)
        print(f"  aic   kernels (power-law MoE where both)                   {kernels:8.2f} ms = {kernels / measured:.0%} "
              f"of measured; the rest {measured - kernels:.1f} ms, {(measured - kernels) / layers:.2f} ms per layer")
        for k, v in ours.items():
            show("ours", k, v)
        print(f"  ours  step                                                         {total:8.2f} ms "
              f"({total / measured - 1:+.0%} in time)")


if __name__ == "__main__":
    main(sys.argv[1])
