"""Derive python/rollsim/hardware/data/aiconfigurator_gemm_a100_h100.csv and aiconfigurator_moe_a100_h100.csv
from a checkout of ai-dynamo/aiconfigurator (Apache-2.0; the shipped tables are from commit
095f58a51c4ca8e61b66ec108d86f223f8d559ce, 2026-08-21).

Usage: PYTHONPATH=python python scripts/derive_aiconfigurator_ampere_tables.py PATH_TO_AICONFIGURATOR_GIT_DIR OUT_DIR
(reads the Parquet files with polars, a rollsim dependency; the registry's models come from rollsim).

aiconfigurator's collector times single kernels inside vLLM 0.14.0 on the A100 SXM 80 GB and the H100 SXM
(``aic-core/src/aiconfigurator_core/systems/data/<system>/<op>/vllm/0.14.0/<op>_perf.parquet``):

* ``gemm``: BF16 GEMMs ``[m, k] x [k, n]`` (``m`` = tokens) over a grid of ``n`` and ``k``
  (``vllm_default``: torch / cuBLAS). Kept: every grid point (n, k) that one of the registry's dense
  projections snaps to (nearest in log-scale) at tensor-parallel degree 1, 2, 4 or 8: attention QKV
  ``(heads / tp + 2 ceil(kv_heads / tp)) x head_dim`` by ``hidden``, output ``hidden`` by
  ``heads x head_dim / tp``, MLP gate-up ``2 f / tp`` by ``hidden`` and down ``hidden`` by ``f / tp``
  (``f`` the dense MLP width, or a MoE model's shared-expert and dense-layer widths; MLA attention is
  not four plain projections and is left out), at the token counts 64-512 both GPUs have.
* ``moe``: vLLM's Triton fused-MoE kernel (``vllm_fused_moe``, BF16), no expert parallelism
  (``moe_ep_size == 1``). Kept: every registry MoE model's expert shape (hidden, expert width, top-k,
  experts) that both GPUs have, every split (``moe_tp_size``) and routing distribution both have
  (the A100 collection has only ``power_law_1.01`` and ``power_law_1.2``: no ``balanced`` rows), at the
  token counts 64-512 both have. A point collected twice keeps the median of its rows.

Latencies are in milliseconds as aiconfigurator records them.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
import subprocess
import sys
from pathlib import Path

import polars as pl

from rollsim.hardware import MODELS

DATA = "aic-core/src/aiconfigurator_core/systems/data"
VERSION = "0.14.0"
TOKENS = (64, 512)
TPS = (1, 2, 4, 8)


def _read(git_dir: str, system: str, op: str) -> pl.DataFrame:
    blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{DATA}/{system}/{op}/vllm/{VERSION}/{op}_perf.parquet"],
                          check=True, capture_output=True).stdout
    return pl.read_parquet(io.BytesIO(blob))


def dense_projections() -> list[tuple[int, int]]:
    """(n, k) of every registry model's dense projections at TP 1, 2, 4, 8 (see the module docstring)."""
    out = []
    for m in MODELS.values():
        for tp in TPS:
            if not m.is_mla:
                kv = -(-m.kv_heads // tp)
                out += [((m.attention_heads // tp + 2 * kv) * m.head_dim, m.hidden_size),
                        (m.hidden_size, m.attention_heads * m.head_dim // tp)]
            widths = [m.intermediate_size] if not m.is_moe else (
                [m.shared_experts * m.moe_intermediate_size] * bool(m.shared_experts)
                + [m.intermediate_size] * bool(m.dense_layers))
            for f in widths:
                out += [(2 * f // tp, m.hidden_size), (m.hidden_size, f // tp)]
    return out


def _snap(grid: list[int], x: int) -> int:
    return min(grid, key=lambda g: abs(math.log(g / x)))


def _median(df: pl.DataFrame, keys: list[str]) -> dict[tuple[object, ...], float]:
    pts: dict[tuple[object, ...], list[float]] = {}
    for r in df.iter_rows(named=True):
        pts.setdefault(tuple(r[k] for k in keys), []).append(r["latency"])
    return {k: statistics.median(v) for k, v in pts.items()}


def main(git_dir: str, out_dir: str) -> None:
    lo, hi = TOKENS
    # dense GEMMs
    keys = ["n", "k", "m"]
    g = {s: _median(_read(git_dir, s, "gemm").filter((pl.col("gemm_dtype") == "bfloat16")
                                                     & pl.col("m").is_between(lo, hi)), keys)
         for s in ("a100_sxm", "h100_sxm")}
    grid = sorted({k[0] for k in g["a100_sxm"]} & {k[1] for k in g["a100_sxm"]})
    shapes = sorted({(_snap(grid, n), _snap(grid, k)) for n, k in dense_projections()})
    with (Path(out_dir) / "aiconfigurator_gemm_a100_h100.csv").open("w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("n", "k", "num_tokens", "a100_ms", "h100_ms"))
        for key in sorted(k for k in g["a100_sxm"] if (k[0], k[1]) in shapes and k in g["h100_sxm"]):
            w.writerow((*key, f"{g['a100_sxm'][key]:.5g}", f"{g['h100_sxm'][key]:.5g}"))
    # fused MoE
    keys = ["hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "distribution", "num_tokens"]
    moe = {s: _median(_read(git_dir, s, "moe").filter((pl.col("kernel_source") == "vllm_fused_moe")
                                                      & (pl.col("moe_dtype") == "bfloat16")
                                                      & (pl.col("moe_ep_size") == 1)
                                                      & pl.col("num_tokens").is_between(lo, hi)), keys)
           for s in ("a100_sxm", "h100_sxm")}
    reg = {(m.hidden_size, m.moe_intermediate_size, m.experts_per_token, m.experts) for m in MODELS.values() if m.is_moe}
    with (Path(out_dir) / "aiconfigurator_moe_a100_h100.csv").open("w") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow((*keys, "a100_ms", "h100_ms"))
        for key in sorted(k for k in moe["a100_sxm"] if k[:4] in reg and k in moe["h100_sxm"]):
            w.writerow((*key, f"{moe['a100_sxm'][key]:.5g}", f"{moe['h100_sxm'][key]:.5g}"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
