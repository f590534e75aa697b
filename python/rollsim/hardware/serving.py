"""A serving engine's step time from specs (vLLM / SGLang-like), per instance of ``tp`` GPUs.

One engine step runs the ``batch`` decoding sequences (one token each) and, with chunked prefill,
``prefill_tokens`` of waiting prompts in the same forward pass. Its time is additive:

``step = step_overhead + layers x layer_overhead``
``     + bandwidth_scale x bytes_read / (tp x hbm_bytes_per_s)``
``     + decode_compute_scale x decode_flops / (tp x peak) + prefill_compute_scale x prefill_flops / (tp x peak)``
``     + layers x 2 x all_reduce(tokens x hidden x 2 bytes)``

* bytes read: every weight a token uses except the input embedding (a lookup) once per step; for a
  MoE model, of each MoE layer's routed experts only the expected number of *distinct* experts the
  step's tokens touch, ``experts x (1 - (1 - top_k / experts) ** tokens)`` (uniform routing: between
  top-k for one token and all of them for many); plus the KV cache of every sequence's context (its
  KV heads split over ``tp``; MLA's single latent is replicated on every rank).
* FLOPs: ``2 x (active parameters - input embedding)`` per token plus attention over the context
  (:meth:`ModelSpec.attention_flops_per_token`), over the dense BF16 peak. An FP8 checkpoint on a
  GPU with FP8 tensor cores runs its matrix multiplications by its weight scaling
  (:attr:`ModelSpec.fp8_scaling`, from its ``quantization_config``): a *block-scaled* one (128 x 128
  weight blocks: DeepSeek-V3 / R1, Kimi-K2, Qwen3-FP8) runs its dense GEMMs at the BF16 peak times the
  achieved block-FP8 / BF16 ratio of vLLM's kernels (:data:`FP8_RATIOS`: *slower* than BF16 at decode
  batch sizes), a *per-tensor* (or per-channel) one at the datasheet FP8 peak; the routed experts of
  either at the fused-MoE ratio (a little faster than BF16). Attention stays BF16. The ratios were
  measured on Hopper and are used on every FP8 family (MI300X, Blackwell, Ada too: no published
  per-family benchmark is used). Without FP8 tensor cores (Ampere) the weights are dequantized to BF16
  (weight-only). The weights are read at 1 byte per parameter either way.
* Ampere GPUs (A100, A800) reach a larger share of their lower peak in the small-batch GEMMs of decode
  than the H100 the compute terms are fitted on: their decode and MoE compute terms are multiplied by
  ``ampere_compute_factor`` (:data:`AMPERE_COMPUTE_FACTOR`, derived from microsoft/vidur's profiled
  linear layers on both GPUs by :func:`ampere_compute_factor`, not fitted). ai-dynamo/aiconfigurator's
  profiled vLLM kernels give 0.708 for the dense GEMMs (agreeing) and 0.554 for the fused-MoE kernel
  (:func:`aiconfigurator_ampere_factor`); the latter is not applied (docs/hardware.md says why).
* all-reduce: two per layer (after attention, after the MLP) when ``tp > 1``, each
  ``latency x log2(tp) + 2 (tp - 1) / tp x bytes / (allreduce_bw_fraction x scale_up_bytes_per_s)``;
  latency (12 us) and bandwidth fraction (0.65) are read off microsoft/vidur's profiled H100 / A100
  NCCL all-reduce times (``data/vidur_profiling.csv``), not fitted.

A request also pays ``request_overhead_s`` outside the GPU step (HTTP, tokenize, dispatch,
detokenize): it adds to its latency, not to the instance's step. KV capacity per instance is
``(hbm x gpu_memory_utilization - weights / tp - activation_reserve) x tp / kv bytes per token``
(vLLM's reserve measured from its own memory log: :data:`VLLM_NON_KV_GIB`), and ``max_num_seqs``
bounds the running batch.

The scales (inverse achieved efficiencies) and overheads are global per engine (:data:`ENGINES`),
fitted once by :func:`rollsim.hardware.validation.fit` on the published decode and prefill measurements of
:func:`rollsim.hardware.validation.serving_rows`; ``rollsim validate --resources`` prints the fit
and every row's error.
"""

from __future__ import annotations

import math
import csv
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rollsim import _check
from rollsim.errors import invalid

from .specs import Accelerator, ModelSpec, accelerator, model

__all__ = ["EngineParams", "ENGINES", "engine_params", "default_max_num_batched_tokens", "default_max_num_seqs", "expected_experts", "step_time", "decode_step_s",
           "prefill_s", "kv_capacity_tokens", "max_batch", "decode_throughput_table", "allreduce_s", "FIT_TERMS", "FIT_LOWER",
           "VLLM_NON_KV_GIB", "AMPERE_COMPUTE_FACTOR", "AMPERE_FACTOR_TOKENS", "VIDUR_LINEAR_LAYERS",
           "ampere_compute_factor", "AIC_AMPERE_TABLES", "aiconfigurator_ampere_factor",
           "FP8_RATIOS"]

#: The fitted terms, in the order :func:`rollsim.hardware.validation.fit` solves for them.
FIT_TERMS = ("bandwidth_scale", "decode_compute_scale", "moe_compute_scale", "prefill_compute_scale",
             "attention_compute_scale", "step_overhead_s", "ampere_step_overhead_s", "layer_overhead_s", "request_overhead_s")
#: Lower bounds of the fitted terms: achieved efficiencies cannot exceed the datasheet (scales >= 1),
#: overheads are >= 0.
FIT_LOWER = (1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0)


@dataclass(frozen=True)
class EngineParams:
    """Achieved efficiencies and overheads of one serving engine (global: every model and GPU).

    Attributes
    ----------
    engine : str
        "vllm" or "sglang".
    bandwidth_scale : float
        Datasheet HBM bandwidth / achieved (>= 1).
    decode_compute_scale, moe_compute_scale, prefill_compute_scale : float
        Datasheet FLOP/s / achieved in decode (dense layers and attention: small-batch GEMMs), in
        decode through routed experts (grouped GEMMs of a few tokens per expert), and in prefill.
    attention_compute_scale : float
        Datasheet FLOP/s / achieved in attention over the context (FlashAttention-style kernels,
        prefill and decode).
    step_overhead_s : float
        Fixed seconds per engine step (scheduling, sampling, graph launch) on every family but Ampere.
    ampere_step_overhead_s : float
        The same on Ampere GPUs (A100 / A800: older hosts and kernels in the published runs).
    token_overhead_s : float
        Seconds per decoding sequence per step outside the matrix multiplications (sampling, logits
        processing, scheduler bookkeeping, short-context attention kernels).
    layer_overhead_s : float
        Seconds per layer per step (kernel launches and small kernels: norms, rotary, activation).
    request_overhead_s : float
        Seconds per request outside the GPU step (API server, tokenizer, detokenizer), in its latency.
    allreduce_latency_s : float
        Fixed seconds of one tensor-parallel all-reduce per doubling of the group (``x log2(tp)``).
    allreduce_bw_fraction : float
        Achieved fraction of ``scale_up_bytes_per_s`` of an all-reduce's bus bandwidth.
    ampere_compute_factor : float
        Multiplies ``decode_compute_scale`` and ``moe_compute_scale`` on Ampere GPUs (A100 / A800):
        their achieved share of peak in decode-sized GEMMs relative to the H100's
        (:data:`AMPERE_COMPUTE_FACTOR`, from microsoft/vidur's profiles; not fitted). Every other
        family takes the fitted (Hopper) value.
    fp8_dense_decode_ratio, fp8_dense_prefill_ratio, fp8_moe_ratio : float
        Achieved FP8 / BF16 matrix throughput on a GPU with FP8 tensor cores of a block-scaled FP8
        checkpoint's decode dense layers and prefill, and of any FP8 checkpoint's routed experts
        (:data:`FP8_RATIOS`; published Hopper kernel benchmarks, not fitted). A per-tensor checkpoint's
        dense layers run at the datasheet FP8 peak.
    activation_reserve_gib : float
        GiB per GPU of the engine's memory budget that is neither weights nor KV cache (profiled
        activations, non-torch memory; vLLM's measured from its log: :data:`VLLM_NON_KV_GIB`).
    gpu_memory_utilization : float
        The engine's default fraction of device memory it may use (vLLM ``gpu_memory_utilization``
        0.9; SGLang ``mem_fraction_static``, about 0.88 on 80 GB parts).
    max_num_seqs : int
        The engine's default cap on running sequences (vLLM ``max_num_seqs``, SGLang
        ``max_running_requests``).
    source : str
        How the numbers were obtained.
    """

    engine: str
    bandwidth_scale: float
    decode_compute_scale: float
    moe_compute_scale: float
    prefill_compute_scale: float
    attention_compute_scale: float
    step_overhead_s: float
    ampere_step_overhead_s: float
    token_overhead_s: float
    layer_overhead_s: float
    request_overhead_s: float
    allreduce_latency_s: float
    allreduce_bw_fraction: float
    ampere_compute_factor: float
    fp8_dense_decode_ratio: float
    fp8_dense_prefill_ratio: float
    fp8_moe_ratio: float
    activation_reserve_gib: float
    gpu_memory_utilization: float
    max_num_seqs: int
    source: str = ""


_FIT_NOTE = ("fitted once by rollsim.hardware.validation.fit() on the published measurements of "
             "rollsim.hardware.validation.serving_rows(); all-reduce terms from microsoft/vidur's profiling data")

#: vLLM's memory per GPU, inside ``gpu_memory_utilization x HBM``, that is neither weights nor KV
#: cache, GiB, as :func:`kv_capacity_tokens` counts it (at the datasheet HBM). Measured, not fitted:
#: the public benchmark "Qwen/Qwen3-32B Snapshot & Restore Benchmark on vLLM (1xH100)" (GKE
#: ``a3-highgpu-1g``, vLLM v0.26.0, ``--gpu-memory-utilization 0.90``) logs "Model loading took
#: 61.03 GiB" and 8.52 GiB of KV cache discarded by ``engine.sleep`` (34,900 tokens at 256 KiB a token),
#: so 79.19 GiB (what CUDA exposes of the 80 GiB) x 0.9 - 61.03 - 8.52 = 1.72 GiB of profiled
#: activations and non-torch memory (``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``),
#: plus the 0.81 GiB x 0.9 = 0.73 GiB of the 80 GiB that CUDA does not expose. The vLLM v0.27.1 logs of
#: the same model at TP 2 in "Running a single LLM across two GPUs with vLLM" (S. Pathak, 2026-08-18:
#: 30.59 GiB of weights and 8.22 GiB of KV per GPU in a 40.47 GiB budget) leave 1.66 GiB per GPU, the
#: same order. Before: 0.5 GiB (a guess), which held 42,909 tokens on that H100.
VLLM_NON_KV_GIB = 2.45

#: microsoft/vidur's profiled linear layers (the four projections of one layer: attention QKV and
#: output, MLP up and down) on the A100 and the H100 for every model profiled on both, every
#: tensor-parallel degree, 1-512 tokens (median ms; commit 7d47513363ec447a741ac5e47241580b47724fbf,
#: ``data/profiling/compute/<gpu>/<model>/mlp.csv``, MIT: ``data/VIDUR_LICENSE.txt``; rebuilt by
#: ``scripts/derive_vidur_table.py``).
VIDUR_LINEAR_LAYERS = Path(__file__).parent / "data" / "vidur_linear_layers.csv"
#: The decode regime the Ampere factor is read at: tokens per GPU step from 64 (below, the layers are
#: bound by reading their weights and the ratio is the bandwidth ratio, which ``weights_s`` already
#: has) to 512 (a few hundred running sequences: the batches of the serving runs where the compute
#: terms matter).
AMPERE_FACTOR_TOKENS = (64, 512)


def ampere_compute_factor(path: Path | str | None = None, tokens: tuple[int, int] = AMPERE_FACTOR_TOKENS) -> float:
    """The Ampere factor on the decode compute terms, from vidur's profiled linear layers.

    For every (model, tensor-parallel degree, token count in ``tokens``) profiled on both GPUs, the
    A100's share of its BF16 peak over the H100's, inverted into a factor on the compute scale:
    ``(A100 ms x A100 peak) / (H100 ms x H100 peak)`` (the same FLOPs on both); the factor is their
    geometric mean. Below 1: the A100 reaches a larger share of its (3.2x lower) peak.

    Parameters
    ----------
    path : Path | str, optional
        The derived table (default :data:`VIDUR_LINEAR_LAYERS`).
    tokens : tuple of int
        Inclusive range of tokens per GPU step, within [1, 512] (the table's range; default
        :data:`AMPERE_FACTOR_TOKENS`).

    Returns
    -------
    float
        The factor (about 0.73).

    Raises
    ------
    ScenarioError
        For a range outside [1, 512], reversed, or holding no profiled token count.
    """
    lo, hi = _token_range(tokens, 1)
    with Path(path or VIDUR_LINEAR_LAYERS).open() as f:
        ms = {(r["model"], r["gpu"], int(r["tp"]), int(r["num_tokens"])): float(r["median_ms"])
              for r in csv.DictReader(f)}
    return _peak_share_factor([(n, t, ms[(m, "h100", tp, n)]) for (m, g, tp, n), t in ms.items()
                               if g == "a100" and (m, "h100", tp, n) in ms], lo, hi)


def _token_range(tokens: Any, lowest: int) -> tuple[int, int]:
    """An Ampere factor's ``tokens``: an inclusive (low, high) pair within [``lowest``, 512]."""
    if not isinstance(tokens, tuple) or len(tokens) != 2:
        raise invalid("tokens", f"must be a (low, high) pair of token counts, got {tokens!r}")
    lo = _check.integer("tokens[0]", tokens[0], lowest, 512)
    return lo, _check.integer("tokens[1]", tokens[1], lo, 512)


def _peak_share_factor(points: list[tuple[int, float, float]], lo: int, hi: int) -> float:
    """The geometric mean, over the ``(tokens, A100 ms, H100 ms)`` points with tokens in [lo, hi], of
    ``(A100 ms x A100 BF16 peak) / (H100 ms x H100 BF16 peak)``: an Ampere factor on a compute scale."""
    pa, ph = accelerator("A100-80G").bf16_flops, accelerator("H100").bf16_flops
    logs = [math.log(a * pa / (h * ph)) for n, a, h in points if lo <= n <= hi]
    if not logs:
        raise invalid("tokens", f"no token count of the table in [{lo}, {hi}] was profiled on both GPUs")
    return math.exp(math.fsum(logs) / len(logs))


#: :func:`ampere_compute_factor` of the shipped table, rounded (a test recomputes it).
AMPERE_COMPUTE_FACTOR = 0.732

#: ai-dynamo/aiconfigurator's profiled vLLM 0.14.0 kernels on the A100 SXM 80 GB and the H100 SXM, per op
#: (``aic-core/src/aiconfigurator_core/systems/data/{a100_sxm,h100_sxm}/{gemm,moe}/vllm/0.14.0/``, commit
#: 095f58a51c4ca8e61b66ec108d86f223f8d559ce, Apache-2.0: ``data/AICONFIGURATOR_LICENSE.txt``; rebuilt by
#: ``scripts/derive_aiconfigurator_ampere_tables.py``), latencies in ms at 64-512 tokens:
#:
#: * ``"gemm"``: BF16 GEMMs at the profiled (n, k) nearest to each of the registry's dense projections
#:   at TP 1-8 (attention QKV and output, MLP gate-up and down, shared-expert and dense-layer MLPs;
#:   MLA attention left out): 157 shapes.
#: * ``"moe"``: the Triton fused-MoE kernel (BF16, no expert parallelism) at the registry's MoE expert
#:   shapes profiled on both GPUs (Qwen3-30B-A3B, Qwen3-235B-A22B, DeepSeek-V3 / R1, Kimi-K2), every
#:   split (1-32) and routing distribution (power law 1.01 and 1.2) both have.
AIC_AMPERE_TABLES = {op: Path(__file__).parent / "data" / f"aiconfigurator_{op}_a100_h100.csv" for op in ("gemm", "moe")}


def aiconfigurator_ampere_factor(op: str = "moe", path: Path | str | None = None,
                                 tokens: tuple[int, int] = AMPERE_FACTOR_TOKENS) -> float:
    """An Ampere factor on a compute scale read off aiconfigurator's profiled vLLM kernels.

    As :func:`ampere_compute_factor`: over every profiled point of ``op`` with a token count in
    ``tokens``, the geometric mean of ``(A100 ms x A100 BF16 peak) / (H100 ms x H100 BF16 peak)``.

    Parameters
    ----------
    op : str
        ``"moe"`` (the Triton fused-MoE kernel) or ``"gemm"`` (dense GEMMs): cross-checks of vidur's
        :data:`AMPERE_COMPUTE_FACTOR`.
    path : Path | str, optional
        The derived table (default ``AIC_AMPERE_TABLES[op]``).
    tokens : tuple of int
        Inclusive range of tokens per GPU step, within [64, 512] (the tables' range; default
        :data:`AMPERE_FACTOR_TOKENS`).

    Returns
    -------
    float
        The factor: 0.708 for ``"gemm"`` of the shipped table, within 4 % of vidur's
        :data:`AMPERE_COMPUTE_FACTOR` (0.732, kept); 0.554 for ``"moe"``, 22 % below it. The latter is
        not applied: our fitted ``moe_compute_scale`` term is 1.2-3x the kernel's own time (it carries
        per-layer costs outside the kernel, to which the kernel's A100 / H100 ratio need not apply), and
        applied it made four of the five held-out A100 MoE rows worse (docs/hardware.md).

    Raises
    ------
    ScenarioError
        For an unknown op, a range outside [64, 512], reversed, or holding no profiled token count.
    """
    if op not in AIC_AMPERE_TABLES:
        raise invalid("op", f"must be one of {', '.join(AIC_AMPERE_TABLES)}, got {op!r}")
    lo, hi = _token_range(tokens, 64)
    with Path(path or AIC_AMPERE_TABLES[op]).open() as f:
        points = [(int(r["num_tokens"]), float(r["a100_ms"]), float(r["h100_ms"])) for r in csv.DictReader(f)]
    return _peak_share_factor(points, lo, hi)


#: Achieved FP8 / BF16 matrix throughput of vLLM's FP8 paths on Hopper, per path (not fitted), used on
#: every GPU with FP8 tensor cores (MI300X and Blackwell too, for want of a published benchmark there):
#:
#: * ``dense_decode`` / ``dense_prefill``: block-scaled W8A8 FP8 GEMMs (128 x 128 weight blocks, as the
#:   DeepSeek, Kimi and Qwen3 FP8 checkpoints ship; ``ModelSpec.fp8_scaling == "block"``), vLLM's SM90
#:   CUTLASS kernel against torch BF16 on an H100, DeepSeek-V3's N=2112 K=7168 projection:
#:   vllm-project/vllm PR 23280 (TFLOP/s, BF16 vs
#:   block FP8 CUTLASS: 163.5 / 55.8 at 64 tokens, 275.7 / 106.5 at 128, 401.9 / 192.5 at 256,
#:   566.3 / 322.3 at 512; 648.2 / 426.6 at 2,048, 715.8 / 456.9 at 4,096, 666.4 / 489.7 at 8,192):
#:   the geometric mean of the ratios at 64-512 tokens (decode) is 0.435, at 2,048-8,192 (prefill
#:   chunks) 0.676. Block-scaled FP8 is slower than BF16 there: its activations are quantized per
#:   128-column group and its scales applied in the main loop.
#: * ``moe``: vLLM's Triton fused-MoE kernel, both tuned, FP8 W8A8 against BF16 on an H200 for
#:   Qwen3-MoE's experts at TP 8 (E=128, N=96): "10-17 % faster at batch sizes 4+" (vllm-project/vllm
#:   PR 35457): 1.135, the middle of that range. (That benchmark's FP8 is per-tensor; no published
#:   block-scaled fused-MoE against BF16 was found, so block-scaled MoE checkpoints take it too.)
#: * per-tensor (or per-channel) dense GEMMs (``fp8_scaling == "tensor"``: the Llama FP8 checkpoints of
#:   NVIDIA, AMD and Neural Magic) have no ratio here: they run at the datasheet FP8 peak (2x BF16 on
#:   Hopper, MI300X and Blackwell). No published H100 table of them against BF16 over the same token
#:   counts (64-512 and 2,048-8,192) was found; the partial ones agree with "at or above BF16, below 2x":
#:   vllm-project/vllm PR 17126 (``bench_fp8_gemm.py``; the GPU is not named, its BF16 rates are half the
#:   B200's of PR 18778 at the same shape: Hopper-class; Llama-3.1-8B N=6144 K=4096, TFLOP/s BF16 /
#:   per-tensor CUTLASS with activation quantization: 160.6 / 307.8 at 64 tokens, 307.9 / 533.5 at 128,
#:   544.3 / 760.6 at 256: 1.92, 1.73, 1.40) and PR 49363 (H100, gemma-4-31B N=12288 K=5376, per-tensor
#:   weights and per-token activations: 182.6 / 275.1 at 64, 352.6 / 505.7 at 128: 1.51, 1.43).
#:
#: The kernels' times include their reading of the weights, which the bandwidth term also counts (at
#: 1 byte per parameter); their ratio is used as the compute term's, as is.
FP8_RATIOS = {"dense_decode": 0.435, "dense_prefill": 0.676, "moe": 1.135}

#: Per-engine parameters. Both engines share the physics; the fitted terms are global (SGLang takes
#: vLLM's: there are too few SGLang measurements to fit it separately), its defaults differ.
ENGINES: dict[str, EngineParams] = {
    "vllm": EngineParams("vllm", bandwidth_scale=1.0, decode_compute_scale=7.31, moe_compute_scale=25.65,
                         prefill_compute_scale=1.0, attention_compute_scale=4.21, step_overhead_s=0.0,
                         ampere_step_overhead_s=0.000929, token_overhead_s=0.0, layer_overhead_s=9.43e-05,
                         request_overhead_s=0.00551, allreduce_latency_s=1.2e-5, allreduce_bw_fraction=0.65,
                         ampere_compute_factor=AMPERE_COMPUTE_FACTOR,
                         fp8_dense_decode_ratio=FP8_RATIOS["dense_decode"],
                         fp8_dense_prefill_ratio=FP8_RATIOS["dense_prefill"], fp8_moe_ratio=FP8_RATIOS["moe"],
                         activation_reserve_gib=VLLM_NON_KV_GIB, gpu_memory_utilization=0.9, max_num_seqs=1024,
                         source=_FIT_NOTE),
}
#: SGLang's ``mem_fraction_static`` bounds the weights and the KV pool only (activations and CUDA
#: graphs live outside it), so it keeps the small reserve: no published log to measure it on. It also
#: takes vLLM's Ampere factor and FP8 ratios (its block-FP8 GEMMs and Triton fused MoE are the same
#: kinds of kernel; no separate SGLang benchmark is used).
ENGINES["sglang"] = replace(ENGINES["vllm"], engine="sglang", gpu_memory_utilization=0.88, max_num_seqs=1024,
                            activation_reserve_gib=0.5)


def default_max_num_batched_tokens(engine: str, gpu: Accelerator | str) -> int:
    """The token budget of one engine step an API server uses by default on ``gpu``.

    * vLLM (V1 engine, ``vllm serve``): 8192 on GPUs of at least 70 GiB that are not A100s, else
      2048 (vllm-project/vllm ``vllm/engine/arg_utils.py`` at commit 99d7eb5d,
      ``EngineArgs._set_default_args``: the batch defaults by usage context ``OPENAI_API_SERVER``; A100s
      keep the small budget after vllm-project/vllm PR 17885). A :class:`rollsim.hardware.Deployment`'s
      default and :func:`rollsim.hardware.serving_benchmark`'s.
    * SGLang (``chunked_prefill_size``): 2048 under 35 GiB, 4096 under 60 GiB, 8192 under
      160 GiB, else 16384 (``python/sglang/srt/server_args.py``, by GPU memory).

    Raises
    ------
    ScenarioError
        For an engine other than "vllm" and "sglang", or an unknown GPU.
    """
    g = accelerator(gpu)
    mem = g.hbm_bytes
    e = engine.lower() if isinstance(engine, str) else engine
    if e == "vllm":
        return 8192 if mem >= 70 * 2.0**30 and "a100" not in g.name.lower() else 2048
    if e == "sglang":
        if mem < 35 * 2.0**30:
            return 2048
        if mem < 60 * 2.0**30:
            return 4096
        return 8192 if mem < 160 * 2.0**30 else 16384
    raise invalid("engine", f"must be 'vllm' or 'sglang', got {engine!r}")


def default_max_num_seqs(engine: str, gpu: Accelerator | str) -> int | None:
    """vLLM's default ``max_num_seqs`` on ``gpu`` for an API server: 1024 on GPUs of at least 70 GiB
    that are not A100s, else 256 (``vllm/engine/arg_utils.py``, the same table as
    :func:`default_max_num_batched_tokens`; vLLM takes the smaller of it and the step budget, never
    smaller here); None for SGLang (its ``max_running_requests`` follows from the KV pool: the engine's
    :data:`ENGINES` default, 1024, stands). A :class:`rollsim.hardware.Deployment`'s default.

    Raises
    ------
    ScenarioError
        For an engine other than "vllm" and "sglang", or an unknown GPU.
    """
    g = accelerator(gpu)
    e = engine.lower() if isinstance(engine, str) else engine
    if e == "vllm":
        return 1024 if g.hbm_bytes >= 70 * 2.0**30 and "a100" not in g.name.lower() else 256
    if e == "sglang":
        return None
    raise invalid("engine", f"must be 'vllm' or 'sglang', got {engine!r}")


def engine_params(engine: str | EngineParams) -> EngineParams:
    """The :class:`EngineParams` of ``engine`` ("vllm", "sglang"), or ``engine`` itself.

    Raises
    ------
    ScenarioError
        For an unknown engine name.
    """
    if isinstance(engine, EngineParams):
        return engine
    if isinstance(engine, str) and engine.lower() in ENGINES:
        return ENGINES[engine.lower()]
    raise invalid("engine", f"must be one of {', '.join(ENGINES)} or an EngineParams, got {engine!r}")


def expected_experts(experts: int, top_k: int, tokens: float) -> float:
    """Expected number of distinct experts (of ``experts``) that ``tokens`` tokens, each routed to
    ``top_k`` of them uniformly, touch: ``experts x (1 - (1 - top_k / experts) ** tokens)``; 0 for
    no tokens, ``top_k`` for one, ``experts`` in the limit."""
    if experts <= 0 or tokens <= 0:
        return 0.0
    return experts * -math.expm1(tokens * math.log1p(-top_k / experts)) if top_k < experts else float(experts)


def _kv_split(m: ModelSpec, tp: int) -> int:
    """Ranks the KV cache is split over: KV heads shard up to ``tp``; MLA's latent is replicated."""
    return 1 if m.is_mla else max(1, min(tp, m.kv_heads))


def _fp8(m: ModelSpec, g: Accelerator) -> str | None:
    """The FP8 scaling scheme ``m``'s GEMMs run with ("block" or "tensor"): an FP8 checkpoint (1 byte
    per dense parameter) on a GPU with FP8 tensor cores; None elsewhere (a BF16 checkpoint, or FP8
    weights that vLLM dequantizes to BF16 on a GPU without FP8: weight-only, BF16 compute).

    Raises
    ------
    ScenarioError
        For a 1-byte checkpoint on an FP8 GPU whose ``fp8_scaling`` is not set (the two schemes run at
        very different speeds: nothing is assumed).
    """
    if m.dense_bytes_per_param > 1.0 or not g.fp8_flops:
        return None
    if m.fp8_scaling is None:
        raise invalid("model.fp8_scaling", f"must be 'block' or 'tensor' for {m.name}, a checkpoint of "
                                           f"{m.dense_bytes_per_param} byte(s) per parameter on {g.name} (FP8 "
                                           "tensor cores): set it from the checkpoint's quantization_config "
                                           "(weight_block_size present: 'block'; absent: 'tensor'), or read the "
                                           "config with rollsim.hardware.model_from_hf_config")
    return m.fp8_scaling


def allreduce_s(nbytes: float, gpu: Accelerator | str, tp: int, engine: str | EngineParams = "vllm") -> float:
    """Seconds of one all-reduce of ``nbytes`` over ``tp`` GPUs of ``gpu`` (ring: each rank sends and
    receives ``2 (tp - 1) / tp x nbytes``), on the scale-up fabric when the group fits in it, else
    over the NIC; 0 for ``tp = 1``."""
    if tp <= 1:
        return 0.0
    g = accelerator(gpu)
    e = engine_params(engine)
    bw = g.scale_up_bytes_per_s if tp <= g.tp_domain else g.nic_bytes_per_s
    return e.allreduce_latency_s * math.log2(tp) + 2.0 * (tp - 1) / tp * nbytes / (e.allreduce_bw_fraction * bw)


def step_time(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1, batch: float,
              context_tokens: float, prefill_tokens: float = 0.0, prefill_context_tokens: float | None = None,
              engine: str | EngineParams = "vllm", params: EngineParams | None = None) -> dict[str, float]:
    """The time of one engine step and its terms.

    Parameters
    ----------
    model_, gpu : ModelSpec | str, Accelerator | str
        The model and the accelerator (registry names or specs).
    tp : int
        Tensor-parallel GPUs of the instance, >= 1.
    batch : float
        Decoding sequences in the step, >= 0.
    context_tokens : float
        Mean context of a decoding sequence (prompt + tokens so far), tokens, >= 0.
    prefill_tokens : float
        Prompt tokens prefilled in the same step (chunked prefill), >= 0.
    prefill_context_tokens : float, optional
        Mean context those prompt tokens attend to (default: half the chunk: causal attention
        within one fresh prompt).
    engine : str | EngineParams
        "vllm" (default) or "sglang".
    params : EngineParams, optional
        Overrides ``engine`` (used by :func:`rollsim.hardware.validation.fit`).

    Returns
    -------
    dict[str, float]
        Seconds: ``overhead_s``, ``weights_s``, ``kv_s``, ``decode_compute_s``, ``moe_compute_s``,
        ``prefill_compute_s``, ``attention_compute_s``,
        ``allreduce_s``, and ``total_s``; also ``experts_touched`` (per MoE layer) and
        ``bytes_read`` (per GPU).
    """
    m, g = model(model_), accelerator(gpu)
    e = params or engine_params(engine)
    tp = _check.integer("tp", tp, 1, 4096)
    b = _check.number("batch", batch, allow_zero=True)
    ctx = _check.number("context_tokens", context_tokens, allow_zero=True)
    p = _check.number("prefill_tokens", prefill_tokens, allow_zero=True)
    pctx = p / 2.0 if prefill_context_tokens is None else _check.number("prefill_context_tokens",
                                                                        prefill_context_tokens, allow_zero=True)
    tokens = b + p
    touched = expected_experts(m.experts, m.experts_per_token, tokens) if m.is_moe else 0.0
    wbytes = ((m.always_params - m.embedding_params) * m.dense_bytes_per_param
              + m.moe_layers * touched * m.expert_params * m.expert_bytes_per_param)
    kvbytes = b * m.kv_bytes(ctx) / _kv_split(m, tp)
    per_token = 2.0 * (m.active_params - m.embedding_params)
    peak = tp * g.bf16_flops
    scheme = _fp8(m, g)
    # by the checkpoint's scaling (the ratios were measured on Hopper; used on every FP8 GPU): block-scaled
    # dense GEMMs at the measured block-FP8 / BF16 ratios, per-tensor ones at the datasheet FP8 peak (no
    # complete published per-tensor benchmark), routed experts at the fused-MoE ratio for both
    fp8_peak = tp * float(g.fp8_flops or g.bf16_flops)
    dense_peak = {"block": peak * e.fp8_dense_decode_ratio, "tensor": fp8_peak}.get(scheme or "", peak)
    prefill_peak = {"block": peak * e.fp8_dense_prefill_ratio, "tensor": fp8_peak}.get(scheme or "", peak)
    moe_peak = peak * e.fp8_moe_ratio if scheme else peak
    family = e.ampere_compute_factor if g.family == "ampere" else 1.0
    expert_flops = 2.0 * m.moe_layers * m.experts_per_token * m.expert_params
    dflops = b * (per_token - expert_flops)
    mflops = b * expert_flops
    pflops = p * per_token
    aflops = b * m.attention_flops_per_token(ctx) + p * m.attention_flops_per_token(pctx)
    ar = 2 * m.layers * allreduce_s(tokens * m.hidden_size * 2.0, g, tp, e) if tokens > 0 else 0.0
    fixed = e.ampere_step_overhead_s if g.family == "ampere" else e.step_overhead_s
    out = {
        "overhead_s": fixed + m.layers * e.layer_overhead_s + b * e.token_overhead_s,
        "weights_s": e.bandwidth_scale * wbytes / (tp * g.hbm_bytes_per_s) if tokens > 0 else 0.0,
        "kv_s": e.bandwidth_scale * kvbytes / g.hbm_bytes_per_s,
        "decode_compute_s": family * e.decode_compute_scale * dflops / dense_peak,
        "moe_compute_s": family * e.moe_compute_scale * mflops / moe_peak,
        "prefill_compute_s": e.prefill_compute_scale * pflops / prefill_peak,
        "attention_compute_s": e.attention_compute_scale * aflops / peak,
        "allreduce_s": ar,
    }
    out["total_s"] = math.fsum(out.values())
    out["experts_touched"] = touched
    out["bytes_read"] = wbytes / tp + kvbytes
    return out


def decode_step_s(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1, batch: float,
                  context_tokens: float, engine: str | EngineParams = "vllm") -> float:
    """Seconds of one decode step of ``batch`` sequences with ``context_tokens`` of context each
    (no prefill in the step); see :func:`step_time`."""
    return step_time(model_, gpu, tp=tp, batch=batch, context_tokens=context_tokens, engine=engine)["total_s"]


def prefill_s(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1, tokens: float,
              engine: str | EngineParams = "vllm", chunk_tokens: float = 8192.0) -> float:
    """Seconds to prefill one prompt of ``tokens`` tokens alone on the instance, in chunks of
    ``chunk_tokens`` (vLLM's ``max_num_batched_tokens``; each chunk attends to the prompt so far),
    plus the request's ``request_overhead_s``: the time to first token of a lone request."""
    e = engine_params(engine)
    n = _check.number("tokens", tokens)
    c = _check.number("chunk_tokens", chunk_tokens)
    total, done = 0.0, 0.0
    while done < n:
        k = min(c, n - done)
        total += step_time(model_, gpu, tp=tp, batch=0.0, context_tokens=0.0, prefill_tokens=k,
                           prefill_context_tokens=done + k / 2.0, params=e)["total_s"]
        done += k
    return total + e.request_overhead_s


def kv_capacity_tokens(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1,
                       gpu_memory_utilization: float | None = None, engine: str | EngineParams = "vllm",
                       context_tokens: float | None = None) -> float:
    """KV-cache capacity of one instance, tokens:
    ``(hbm x gpu_memory_utilization - weights / tp - activation_reserve) x (KV split ranks) / kv bytes per token``.

    With ``context_tokens``, the bytes per token are those of a sequence of that context (gpt-oss's
    sliding-window layers hold only their window), else those of the full-attention layers.

    Raises
    ------
    ScenarioError
        If the weights do not fit (the message gives the bytes).
    """
    m, g = model(model_), accelerator(gpu)
    e = engine_params(engine)
    tp = _check.integer("tp", tp, 1, 4096)
    gmu = e.gpu_memory_utilization if gpu_memory_utilization is None else _check.bounded(
        "gpu_memory_utilization", gpu_memory_utilization, 0.0, 1.0, lo_open=True)
    free = g.hbm_bytes * gmu - m.weight_bytes(None) / tp - e.activation_reserve_gib * 2.0**30
    if free <= 0:
        raise invalid("gpu_memory_utilization",
                      f"leaves no room for KV cache: {m.name} needs {m.weight_bytes(None) / tp / 2**30:.1f} GiB of "
                      f"weights per GPU at tp={tp}, {g.name} x {gmu} gives {g.hbm_bytes * gmu / 2**30:.1f} GiB "
                      f"(with {e.activation_reserve_gib} GiB for activations); raise tp or gpu_memory_utilization")
    per = m.kv_bytes(context_tokens) / context_tokens if context_tokens else m.kv_bytes_per_token()
    return free * _kv_split(m, tp) / per


def max_batch(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1, context_tokens: float,
              max_num_seqs: int | None = None, gpu_memory_utilization: float | None = None,
              engine: str | EngineParams = "vllm") -> int:
    """Running sequences one instance holds at ``context_tokens`` each: the KV capacity over the
    context, capped by ``max_num_seqs`` (the engine's default when None); at least 1."""
    e = engine_params(engine)
    cap = e.max_num_seqs if max_num_seqs is None else _check.integer("max_num_seqs", max_num_seqs, 1, 2**24)
    ctx = _check.number("context_tokens", context_tokens)
    kv = kv_capacity_tokens(model_, gpu, tp=tp, gpu_memory_utilization=gpu_memory_utilization, engine=e,
                            context_tokens=ctx)
    return max(1, min(cap, int(kv // ctx)))


def decode_throughput_table(model_: ModelSpec | str, gpu: Accelerator | str, *, tp: int = 1,
                            context_tokens: float, max_seqs: int, engine: str | EngineParams = "vllm",
                            prefill_tokens_per_token: float = 0.0, points: int = 24) -> tuple[tuple[int, float], ...]:
    """The ``decode_throughput_table`` of a :class:`rollsim.Scenario`: ``(running sequences, tokens/s
    of the instance)`` from 1 to ``max_seqs`` (about ``points`` points, geometric, always 1 and
    ``max_seqs``), at ``context_tokens`` mean context. ``prefill_tokens_per_token`` prompt tokens per
    decoded token are prefilled in the same steps (chunked prefill: a group's prompt shared by its
    answers counts once)."""
    ms = _check.integer("max_seqs", max_seqs, 1, 2**24)
    pts = _check.integer("points", points, 2, 4096)
    ns = sorted({1, ms} | {max(1, round(ms ** (i / (pts - 1)))) for i in range(pts)})
    out = []
    for n in ns:
        t = step_time(model_, gpu, tp=tp, batch=n, context_tokens=context_tokens,
                      prefill_tokens=n * prefill_tokens_per_token, engine=engine)["total_s"]
        out.append((n, n / t))
    return tuple(out)
