"""Derive python/rollsim/hardware/data/vidur_profiling.csv and vidur_linear_layers.csv from a checkout of
microsoft/vidur (MIT; the shipped tables are from commit 7d47513363ec447a741ac5e47241580b47724fbf).

Usage: python scripts/derive_vidur_table.py PATH_TO_VIDUR_GIT_DIR

Keeps, per GPU (h100, a100): the median NCCL all-reduce time of rank 0 inside one DGX node for 2, 4 and 8
workers at a few message sizes (data/profiling/network/<gpu>_dgx/all_reduce.csv), and the median
time of one Llama-2-7B layer's four linear projections (attention pre / post, MLP up / down) at
tensor parallelism 1 for a few token counts (data/profiling/compute/<gpu>/meta-llama/Llama-2-7b-hf/mlp.csv).
Times are in milliseconds as vidur records them; sizes in bytes.

vidur_linear_layers.csv: for every model vidur profiled on both the A100 and the H100
(data/profiling/compute/<gpu>/<org>/<model>/mlp.csv) and every tensor-parallel degree, at each profiled
token count up to 512, the median over vidur's repeated rows of the summed medians of the four linear
projections, with the layer's linear parameters per GPU (from the file's shape columns). It is what
rollsim.hardware.serving.ampere_compute_factor() derives the Ampere decode-compute factor from.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

SIZES = {2**k for k in range(11, 27, 2)}
TOKENS = {1, 8, 32, 64, 128, 256, 512}
LINEAR = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
# the models vidur profiled on both GPUs (its Llama-3 profiles are A100-only)
BOTH = ("Qwen/Qwen-72B", "codellama/CodeLlama-34b-Instruct-hf", "internlm/internlm-20b", "meta-llama/Llama-2-70b-hf",
        "meta-llama/Llama-2-7b-hf", "microsoft/phi-2")
MAX_TOKENS = 512


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
    linear_layers(git_dir, dest.parent / "vidur_linear_layers.csv")


def _linear_params(r: dict[str, str]) -> int:
    """The four projections' parameters per GPU: QKV, output, MLP up (x2 gated) and down."""
    e, h, kv, x = (int(r[k]) for k in ("n_embd", "n_head", "n_kv_head", "n_expanded_embd"))
    tp = int(r["num_tensor_parallel_workers"])
    up = 2 if r["use_gated_mlp"] == "True" else 1
    return (e * (h + 2 * kv) * (e // h) + e * e + (up + 1) * e * x) // tp


def linear_layers(git_dir: str, dest: Path) -> None:
    import statistics

    groups: dict[tuple[str, str, int, int], list[float]] = {}
    params: dict[tuple[str, str, int, int], int] = {}
    for model in BOTH:
        for gpu in ("a100", "h100"):
            for r in show(git_dir, f"data/profiling/compute/{gpu}/{model}/mlp.csv"):
                n, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
                if n > MAX_TOKENS:
                    continue
                key = (model, gpu, tp, n)
                groups.setdefault(key, []).append(sum(float(r[f"time_stats.{k}.median"]) for k in LINEAR))
                params[key] = _linear_params(r)
    with dest.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(("model", "gpu", "tp", "num_tokens", "linear_params_per_gpu", "median_ms"))
        for key in sorted(groups):
            w.writerow((*key, params[key], f"{statistics.median(groups[key]):.4f}"))
    print(f"wrote {dest} ({len(groups)} rows)")


if __name__ == "__main__":
    main(sys.argv[1])
