"""Published measurements the resource model is not fitted on: the held-out checks of
``rollsim validate --resources`` ("held out (not fitted)", and "held out, set 2").

The rows live in ``data/held_out.toml`` (set 1) and ``data/held_out_2.toml`` (set 2, collected
2026-12-02 by a rule written in its header before any prediction was computed, from sources that are
neither set 1's nor the calibration's), each with its source (repository, path and commit). They
are read only here: the serving fit (:func:`rollsim.hardware.validation.fit`), the training fit
(:func:`rollsim.hardware.training.fit`) and the switching fit never see them, and they are not in
:data:`rollsim.hardware.validation.ROW_BUILDERS`, so the calibration table and its summary are
unchanged by their presence.

* **serving**: vLLM (v0.11.0; vLLM-Ascend v0.9.1 on the 910B) with its defaults serving the
  1,000-prompt ShareGPT benchmark (``vllm bench serve``), priced with the fitted vLLM terms and
  compared on output tokens/s as the calibration's ShareGPT rows are: the
  running sequences are ``output tok/s x mean TPOT`` (Little's law), each step decodes one token per
  sequence at the mean context ``input / requests + output / requests / 2`` and prefills
  ``input / output`` prompt tokens per decoded token (:func:`rollsim.hardware.serving.step_time`).
* **latency** (set 2): vLLM's ``benchmark_latency.py``, one batch of ``batch_size`` requests of
  ``input_tokens`` prompt tokens each generating ``output_tokens``, end to end in ``latency_s``;
  compared on output tokens/s (``batch_size x output_tokens / latency_s``) with the fitted vLLM
  terms: ``output_tokens`` steps of ``batch_size`` sequences at the mean context
  ``input_tokens + output_tokens / 2``, each step also prefilling ``batch_size x input_tokens /
  output_tokens`` prompt tokens (the batch's prefill spread over its steps, as the ShareGPT rows).
* **training**: pre-training throughput in tokens/s/GPU, compared as the step time
  ``global batch x sequence length / (tokens/s/GPU x GPUs)`` against
  :func:`rollsim.hardware.training.train_step_s` (no log-prob recompute, no reference model), with
  the row's published parallel layout (``context_parallel`` too, where given; absent, the part of
  ``model_parallel`` beyond TP x PP), micro-batch size and activation checkpointing. A
  row that publishes only ``model_tflops_per_gpu`` (NeMo's long-sequence table) is the step time
  ``NeMo model FLOPs of the batch / (TFLOP/s/GPU x GPUs)``, with NeMo's Llama-3 formula
  (:func:`nemo_llama3_flops`).
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from . import serving, specs
from .rows import Row
from .serving import EngineParams

__all__ = ["DATA", "DATA_2", "SETS", "SET_LABELS", "load", "held_out_rows", "held_out_table", "nemo_llama3_flops"]

#: The held-out measurements, set 1 (TOML: ``[[serving]]`` and ``[[training]]`` tables).
DATA = Path(__file__).parent / "data" / "held_out.toml"
#: Set 2, collected 2026-12-02 (TOML: ``[[latency]]`` and ``[[training]]`` tables); verbatim excerpts
#: of its sources' tables are in ``data/held_out_2_excerpts.md``.
DATA_2 = Path(__file__).parent / "data" / "held_out_2.toml"
#: The held-out sets by number.
SETS: dict[int, Path] = {1: DATA, 2: DATA_2}
#: How ``rollsim validate --resources`` titles each set.
SET_LABELS: dict[int, str] = {1: "held out (not fitted)", 2: "held out, set 2 (collected 2026-12-02)"}

_KINDS = ("serving", "latency", "training")


def _path(set: int) -> Path:
    from rollsim.errors import invalid

    if isinstance(set, bool) or not isinstance(set, int) or set not in SETS:
        raise invalid("set", f"must be 1 or 2 (the held-out sets), got {set!r}")
    return SETS[set]


def load(set: int = 1) -> dict[str, list[dict[str, Any]]]:
    """The raw rows of held-out set ``set`` (1: :data:`DATA`, 2: :data:`DATA_2`), as published:
    ``{"serving": [...], "latency": [...], "training": [...]}`` (a kind the set lacks is empty)."""
    with _path(set).open("rb") as f:
        raw = tomllib.load(f)
    return {k: list(raw.get(k, [])) for k in _KINDS}


def nemo_llama3_flops(model: Any, sequences: int, sequence_tokens: int) -> float:
    """Model FLOPs of one step of ``sequences`` x ``sequence_tokens`` tokens as NeMo counts them for
    the Llama-3 family (NVIDIA/NeMo nemo/utils/flops_formulas.py ``llama3``, vocabulary 128,256):
    ``B s L h^2 (12 + 12 g / a + 18 f / h + 12 s / h + 6 V / (L h))`` with ``L`` layers, hidden size
    ``h``, ``a`` heads, ``g`` KV heads, MLP width ``f``; forward and backward, full (non-causal)
    attention, no activation recomputation."""
    m = specs.model(model)
    h, layers, s = m.hidden_size, m.layers, sequence_tokens
    return (sequences * s * layers * h * h
            * (12 + 12 * m.kv_heads / m.attention_heads + 18 * m.intermediate_size / h + 12 * s / h
               + 6 * 128256 / (layers * h)))


def _serving_row(r: dict[str, Any]) -> Row:
    n, inp, out = r["requests"], r["input_tokens"], r["output_tokens"]
    thr, tpot_ms = r["output_tokens_per_s"], r["mean_tpot_ms"]
    batch = thr * tpot_ms / 1e3  # running sequences (Little's law)
    ctx = inp / n + out / n / 2
    prefill = batch * inp / out

    m = _quantized(r)

    def t(p: EngineParams) -> float:
        return serving.step_time(m, r["gpu"], tp=r["tp"], batch=batch, context_tokens=ctx,
                                 prefill_tokens=prefill, params=p)["total_s"]

    setting = (f"{r['engine']}, {r['model']}, {r['tp']} {r['gpu']}, ShareGPT {n} prompts, mean {inp / n:.0f} in / "
               f"{out / n:.0f} out")
    note = f"concurrency = throughput x TPOT (Little's law) [derived] ({batch:.0f} sequences)"
    if r.get("note"):
        note += f"; {r['note']}"
    return Row(r["label"], setting, "output tok/s", thr, r["source"], t, tpot_ms / 1e3,
               lambda s: batch / s, False, "decode", note)


def _quantized(r: dict[str, Any]) -> Any:
    """The registry model of row ``r``, or a quantized checkpoint of its architecture: the row's
    ``weight_bytes_per_param`` and (FP8) ``fp8_scaling``, as the served checkpoint's published
    ``quantization_config`` has them."""
    m = specs.model(r["model"])
    if "weight_bytes_per_param" in r:
        w = float(r["weight_bytes_per_param"])
        m = replace(m, dense_bytes_per_param=w, expert_bytes_per_param=w, fp8_scaling=r.get("fp8_scaling"))
    return m


def _latency_row(r: dict[str, Any]) -> Row:
    b, inp, out, lat = r["batch_size"], r["input_tokens"], r["output_tokens"], r["latency_s"]
    thr = b * out / lat
    ctx = inp + out / 2
    prefill = b * inp / out
    m = _quantized(r)

    def t(p: EngineParams) -> float:
        return serving.step_time(m, r["gpu"], tp=r["tp"], batch=b, context_tokens=ctx, prefill_tokens=prefill,
                                 params=p)["total_s"]

    setting = (f"{r['engine']}, {r['model']}, {r['tp']} {r['gpu']}, benchmark_latency batch {b}, {inp} in / "
               f"{out} out: {lat} s")
    note = "output tok/s = batch x output tokens / latency [derived]"
    if r.get("note"):
        note += f"; {r['note']}"
    return Row(r["label"], setting, "output tok/s", thr, r["source"], t, lat / out, lambda s: b / s, False,
               "decode", note)


def _training_row(r: dict[str, Any]) -> Row:
    from .training import train_step_s

    tokens = r["sequences"] * r["sequence_tokens"]
    if "model_tflops_per_gpu" in r:  # only the model TFLOP/s is published: NeMo's FLOPs of the batch
        flops = nemo_llama3_flops(r["model"], r["sequences"], r["sequence_tokens"])
        measured_s = flops / (r["model_tflops_per_gpu"] * 1e12 * r["gpus"])
        rate = f"{r['model_tflops_per_gpu']:,} model TFLOP/s/GPU"
    else:
        measured_s = tokens / (r["tokens_per_s_per_gpu"] * r["gpus"])
        rate = f"{r['tokens_per_s_per_gpu']:,} tokens/s/GPU"
    mbs = r.get("micro_batch_size")
    predicted = train_step_s(r["model"], r["gpu"], backend=r["backend"], train_gpus=r["gpus"], tokens=tokens,
                             sequences=r["sequences"], recompute_logprob=False, reference=False,
                             model_parallel=r.get("model_parallel"), tensor_parallel=r.get("tensor_parallel", 1),
                             pipeline_parallel=r.get("pipeline_parallel", 1),
                             virtual_pipeline=r.get("virtual_pipeline", 1),
                             context_parallel=r.get("context_parallel"), expert_parallel=r.get("expert_parallel", 1),
                             max_tokens_per_gpu=None if mbs is None else mbs * r["sequence_tokens"],
                             activation_checkpointing=r.get("activation_checkpointing"),
                             precision=r.get("precision", "bf16"))["total"]
    setting = (f"{r['backend']}, {r['model']}, {r['gpus']} {r['gpu']}, {r['sequences']} x {r['sequence_tokens']} "
               f"tokens, {r.get('precision', 'bf16')}: {rate}")
    return Row(r["label"], setting, "train s", measured_s, r["source"], lambda _p: predicted, measured_s,
               lambda s: s, False, "training", r.get("note", ""))


def held_out_rows(set: int = 1) -> list[Row]:
    """Every measurement of held-out set ``set`` (1: :data:`DATA`, 2: :data:`DATA_2`) as a
    :class:`~rollsim.hardware.rows.Row` (``fit=False``): the serving rows, then the latency rows
    (both area "decode", output tok/s), then the training rows (area "training", seconds per step)."""
    raw = load(set)
    return ([_serving_row(r) for r in raw["serving"]] + [_latency_row(r) for r in raw["latency"]]
            + [_training_row(r) for r in raw["training"]])


def held_out_table(params: EngineParams | None = None, set: int = 1) -> pl.DataFrame:
    """The rows of held-out set ``set`` evaluated like the calibration table
    (:func:`rollsim.hardware.validation.table`): ``area, label, quantity, measured, predicted,
    error`` (predicted / measured - 1), ``within_25pct, fit`` (always False), ``setting, source,
    note``."""
    from .validation import table

    return table(params, rows=held_out_rows(set))
