"""Published measurements the resource model is not fitted on: the held-out check of
``rollsim validate --resources`` ("held out (not fitted)").

The rows live in ``data/held_out.toml``, each with its source (repository, path and commit). They
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
* **training**: pre-training throughput in tokens/s/GPU, compared as the step time
  ``global batch x sequence length / (tokens/s/GPU x GPUs)`` against
  :func:`rollsim.hardware.training.train_step_s` (no log-prob recompute, no reference model), with
  the row's published parallel layout, micro-batch size and activation checkpointing.
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

__all__ = ["DATA", "load", "held_out_rows", "held_out_table"]

#: The held-out measurements (TOML: ``[[serving]]`` and ``[[training]]`` tables).
DATA = Path(__file__).parent / "data" / "held_out.toml"


def load() -> dict[str, list[dict[str, Any]]]:
    """The raw rows of :data:`DATA`: ``{"serving": [...], "training": [...]}``, as published."""
    with DATA.open("rb") as f:
        raw = tomllib.load(f)
    return {"serving": list(raw.get("serving", [])), "training": list(raw.get("training", []))}


def _serving_row(r: dict[str, Any]) -> Row:
    n, inp, out = r["requests"], r["input_tokens"], r["output_tokens"]
    thr, tpot_ms = r["output_tokens_per_s"], r["mean_tpot_ms"]
    batch = thr * tpot_ms / 1e3  # running sequences (Little's law)
    ctx = inp / n + out / n / 2
    prefill = batch * inp / out

    m = specs.model(r["model"])
    if "weight_bytes_per_param" in r:  # a quantized checkpoint of the registry's architecture
        w = float(r["weight_bytes_per_param"])
        m = replace(m, dense_bytes_per_param=w, expert_bytes_per_param=w)

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


def _training_row(r: dict[str, Any]) -> Row:
    from .training import train_step_s

    tokens = r["sequences"] * r["sequence_tokens"]
    measured_s = tokens / (r["tokens_per_s_per_gpu"] * r["gpus"])
    mbs = r.get("micro_batch_size")
    predicted = train_step_s(r["model"], r["gpu"], backend=r["backend"], train_gpus=r["gpus"], tokens=tokens,
                             sequences=r["sequences"], recompute_logprob=False, reference=False,
                             model_parallel=r.get("model_parallel"), tensor_parallel=r.get("tensor_parallel", 1),
                             pipeline_parallel=r.get("pipeline_parallel", 1),
                             virtual_pipeline=r.get("virtual_pipeline", 1), expert_parallel=r.get("expert_parallel", 1),
                             max_tokens_per_gpu=None if mbs is None else mbs * r["sequence_tokens"],
                             activation_checkpointing=r.get("activation_checkpointing"),
                             precision=r.get("precision", "bf16"))["total"]
    setting = (f"{r['backend']}, {r['model']}, {r['gpus']} {r['gpu']}, {r['sequences']} x {r['sequence_tokens']} "
               f"tokens, {r.get('precision', 'bf16')}: {r['tokens_per_s_per_gpu']:,} tokens/s/GPU")
    return Row(r["label"], setting, "train s", measured_s, r["source"], lambda _p: predicted, measured_s,
               lambda s: s, False, "training", r.get("note", ""))


def held_out_rows() -> list[Row]:
    """Every held-out measurement of :data:`DATA` as a :class:`~rollsim.hardware.rows.Row`
    (``fit=False``): the serving rows (area "decode", output tok/s), then the training rows
    (area "training", seconds per step)."""
    raw = load()
    return [_serving_row(r) for r in raw["serving"]] + [_training_row(r) for r in raw["training"]]


def held_out_table(params: EngineParams | None = None) -> pl.DataFrame:
    """The held-out rows evaluated like the calibration table
    (:func:`rollsim.hardware.validation.table`): ``area, label, quantity, measured, predicted,
    error`` (predicted / measured - 1), ``within_25pct, fit`` (always False), ``setting, source,
    note``."""
    from .validation import table

    return table(params, rows=held_out_rows())
