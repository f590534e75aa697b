"""Derive python/rollsim/hardware/data/vidur_profiling.csv from a checkout of microsoft/vidur (MIT).

Usage: python scripts/derive_vidur_table.py PATH_TO_VIDUR_GIT_DIR

Keeps, per GPU (h100, a100): the median NCCL all-reduce time of rank 0 inside one DGX node for 2, 4 and 8
workers at a few message sizes (data/profiling/network/<gpu>_dgx/all_reduce.csv), and the median
time of one Llama-2-7B layer's four linear projections (attention pre / post, MLP up / down) at
tensor parallelism 1 for a few token counts (data/profiling/compute/<gpu>/meta-llama/Llama-2-7b-hf/mlp.csv).
Times are in milliseconds as vidur records them; sizes in bytes.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

SIZES = {2**k for k in range(11, 27, 2)}
TOKENS = {1, 8, 32, 64, 128, 256, 512}


def show(git_dir: str, path: str) -> list[dict[str, str]]:
    text = subprocess.run(["git", "--git-dir", git_dir, "show", f"HEAD:{path}"], check=True, capture_output=True,
                          text=True).stdout
    return list(csv.DictReader(io.StringIO(text)))


def main(git_dir: str) -> None:
    out = [("kind", "gpu", "workers_or_tp", "size_bytes_or_tokens", "median_ms")]
    for gpu in ("h100", "a100"):
        for r in show(git_dir, f"data/profiling/network/{gpu}_dgx/all_reduce.csv"):
            if (r["rank"] == "0" and int(r["size"]) in SIZES and r["devices_per_node"] == r["num_workers"]
                    and int(r["num_workers"]) <= 8):
                out.append(("all_reduce", gpu, r["num_workers"], r["size"], r["time_stats.all_reduce.median"]))
        for r in show(git_dir, f"data/profiling/compute/{gpu}/meta-llama/Llama-2-7b-hf/mlp.csv"):
            if r["num_tensor_parallel_workers"] == "1" and int(r["num_tokens"]) in TOKENS:
                t = sum(float(r[f"time_stats.{k}.median"]) for k in ("attn_pre_proj", "attn_post_proj",
                                                                      "mlp_up_proj", "mlp_down_proj"))
                out.append(("llama2_7b_linear_layer", gpu, "1", r["num_tokens"], f"{t:.4f}"))
    rows = sorted(set(out[1:]), key=lambda x: (x[0], x[1], int(x[2]), int(x[3])))
    dest = Path(__file__).resolve().parent.parent / "python/rollsim/hardware/data/vidur_profiling.csv"
    with dest.open("w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows([out[0], *rows])
    print(f"wrote {dest} ({len(rows)} rows)")


if __name__ == "__main__":
    main(sys.argv[1])
