"""Derive python/rollsim/hardware/data/aiconfigurator_moe_h100.csv from a checkout of ai-dynamo/aiconfigurator
(Apache-2.0; the shipped table is from commit 095f58a51c4ca8e61b66ec108d86f223f8d559ce, 2026-08-21).

Usage: python scripts/derive_aiconfigurator_moe_table.py PATH_TO_AICONFIGURATOR_GIT_DIR
(needs pyarrow to read the Parquet files; rollsim itself does not).

aiconfigurator's collector times a MoE layer's routed experts (the fused-MoE kernel: token alignment,
both grouped GEMMs, activation, top-k reduction) inside one inference engine, per shape (hidden size,
expert intermediate size, top-k, experts), tensor-parallel split of the experts (``moe_tp_size``: each
GPU holds ``intermediate / moe_tp_size`` columns of every expert) and token count, and ships the
latencies in ``aic-core/src/aiconfigurator_core/systems/data/<system>/moe/<engine>/<version>/moe_perf.parquet``.

Kept here: the H100 SXM, vLLM's unquantized (BF16) Triton fused-MoE kernel, tokens routed uniformly
(``distribution == "balanced"``), no expert parallelism (``moe_ep_size == 1``), token counts in
:data:`TOKENS`, for vLLM 0.14.0 (``kernel_source`` ``vllm_fused_moe``: the collection nearest the v0.11.0
of the held-out serving runs) and 0.24.0 (``vllm_unquantizedfusedmoe_triton_tritonexperts``).
Latencies are in milliseconds as aiconfigurator records them; a point collected twice (0.14.0's
Kimi-K2 shape, hidden 7168 x 2048 x top-8 of 384) keeps the median of its rows.
"""

from __future__ import annotations

import csv
import io
import statistics
import subprocess
import sys

import pyarrow.parquet as pq  # type: ignore[import-not-found]

ROOT = "aic-core/src/aiconfigurator_core/systems/data/h100_sxm/moe/vllm"
KERNELS = {"0.14.0": "vllm_fused_moe", "0.24.0": "vllm_unquantizedfusedmoe_triton_tritonexperts"}
TOKENS = {1, 8, 32, 64, 128, 256, 512, 1024, 2048}
COLUMNS = ("vllm_version", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "num_tokens",
           "latency_ms")


def main(git_dir: str) -> None:
    points: dict[tuple[object, ...], list[float]] = {}
    for version, kernel in KERNELS.items():
        blob = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{ROOT}/{version}/moe_perf.parquet"],
                              check=True, capture_output=True).stdout
        for r in pq.read_table(io.BytesIO(blob)).to_pylist():
            if (r["kernel_source"] == kernel and r["moe_dtype"] == "bfloat16" and r["distribution"] == "balanced"
                    and r["moe_ep_size"] == 1 and r["num_tokens"] in TOKENS):
                key = (version, r["hidden_size"], r["inter_size"], r["topk"], r["num_experts"], r["moe_tp_size"],
                       r["num_tokens"])
                points.setdefault(key, []).append(r["latency"])
    out = [(*key, f"{statistics.median(v):.5g}") for key, v in sorted(points.items())]
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(out)


if __name__ == "__main__":
    main(sys.argv[1])
