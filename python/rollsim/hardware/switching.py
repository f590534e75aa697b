"""Colocated switching: the seconds to put a rollout engine to sleep and wake it again, from the
bytes moved over the host link plus fixed engine costs.

Per GPU of the engine (weights sharded over its ``gpus``):

* ``sleep = SLEEP_FIXED_S + offloaded bytes / offload rate``;
* ``wake = WAKE_FIXED_S + onloaded bytes / onload rate``.

What moves depends on the engine's sleep mode:

* ``"vllm"`` (vLLM level-1 sleep): the weights are copied to host memory and the KV cache is
  discarded; waking copies the weights back. Each sleep allocates new pinned host buffers, which
  runs at the host allocation rate (:data:`PAGEABLE_BYTES_PER_S`) unless the buffers are
  pre-allocated (``preallocated=True``, vllm-project/vllm PR 58066); the copy back runs from pinned
  memory at ``PINNED_EFFICIENCY x`` the host link.
* ``"vllm-level2"`` (vLLM level-2 sleep): weights and KV cache are discarded; waking reloads the
  weights from ordinary (pageable) host memory.
* ``"sglang"`` (``release_memory_occupation`` with a CPU copy of the weights): both directions run
  through pageable memory (about 2.8 GB/s measured against 64 GB/s of PCIe on H200,
  sgl-project/sglang PR 32032), or pinned with ``preallocated=True``.

``offload_kv=True`` also moves the KV cache (an engine that keeps it across the switch). The four
constants are global, fitted once by :func:`fit` on :data:`CALIBRATION` (the fit and its residuals:
:func:`calibration_report`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import invalid

__all__ = ["ENGINES", "SLEEP_FIXED_S", "WAKE_FIXED_S", "PAGEABLE_BYTES_PER_S", "PINNED_EFFICIENCY", "switch_s",
           "CALIBRATION", "fit", "calibration_report", "switch_validation_rows", "table_rows"]

ENGINES = ("vllm", "vllm-level2", "sglang")

#: Fixed seconds of a sleep (engine bookkeeping, freeing memory), fitted by :func:`fit`.
SLEEP_FIXED_S = 0.0367
#: Fixed seconds of a wake (re-allocating memory and the KV cache, restoring state), fitted.
WAKE_FIXED_S = 0.2479
#: Bytes/s of a copy through pageable (or newly allocated pinned) host memory, fitted; bounded by
#: the host link.
PAGEABLE_BYTES_PER_S = 2.77e9
#: Fraction of the host link a copy from pre-allocated pinned memory achieves, fitted.
PINNED_EFFICIENCY = 0.803

_MAX_GPUS = 1 << 20


def _paths(engine: str, preallocated: bool) -> tuple[str, str]:
    """Which path ("pageable" or "pinned") the offload and the onload take."""
    if engine == "vllm":
        return ("pinned" if preallocated else "pageable"), "pinned"
    if engine == "sglang":
        return ("pinned", "pinned") if preallocated else ("pageable", "pageable")
    return "pageable", ("pinned" if preallocated else "pageable")


def _rate(gpu: Any, path: str, c: dict[str, float]) -> float:
    link = float(gpu.host_link_bytes_per_s)
    return link * c["pinned_efficiency"] if path == "pinned" else min(link, c["pageable_bytes_per_s"])


def _constants() -> dict[str, float]:
    return {"sleep_fixed_s": SLEEP_FIXED_S, "wake_fixed_s": WAKE_FIXED_S, "pageable_bytes_per_s": PAGEABLE_BYTES_PER_S,
            "pinned_efficiency": PINNED_EFFICIENCY}


def switch_s(model: Any, accelerator: Any, *, gpus: int, kv_cache_bytes: float, engine: str = "vllm",
             preallocated: bool = False, offload_kv: bool = False, bytes_per_param: float = 2.0,
             _c: dict[str, float] | None = None) -> dict[str, float]:
    """Seconds of one colocated switch (rollout engine to sleep, and awake again).

    Parameters
    ----------
    model : ModelSpec or str
        The served model (names are looked up in :mod:`rollsim.hardware.specs`).
    accelerator : Accelerator or str
        The GPU; its ``host_link_bytes_per_s`` carries the copies.
    gpus : int
        GPUs of one engine instance (its tensor x expert parallel size), in [1, 2**20]; the weights
        and the KV cache are split evenly over them, and all copy at once.
    kv_cache_bytes : float
        KV cache of the instance (all its GPUs), bytes, in [0, 1e15]; moved only with
        ``offload_kv``.
    engine : {"vllm", "vllm-level2", "sglang"}
        Sleep mode (module docstring).
    preallocated : bool
        Host buffers are pinned and allocated once (vllm-project/vllm PR 58066).
    offload_kv : bool
        The KV cache is copied out and back instead of discarded.
    bytes_per_param : float
        Bytes per weight parameter in the engine, in (0, 8] (2: BF16 / FP16, 1: FP8).

    Returns
    -------
    dict of str to float
        ``offload`` and ``onload`` (copy seconds), ``fixed`` (both fixed costs), ``sleep``,
        ``wake`` and ``total`` (``sleep + wake``), seconds.

    Raises
    ------
    ScenarioError (ValueError)
        An argument outside its range or an unknown engine.
    """
    from rollsim.hardware.training import _resolve

    model, accelerator = _resolve(model, accelerator)
    g = _check.integer("gpus", gpus, 1, _MAX_GPUS)
    kv = _check.bounded("kv_cache_bytes", kv_cache_bytes, 0, 1e15, "bytes")
    bpp = _check.bounded("bytes_per_param", bytes_per_param, 0, 8, "bytes", lo_open=True)
    if engine not in ENGINES:
        raise invalid("engine", f"must be one of {list(ENGINES)}, got {engine!r}")
    pre = _check.flag("preallocated", preallocated)
    okv = _check.flag("offload_kv", offload_kv)
    c = _constants() if _c is None else _c
    w = float(model.total_params) * bpp / g
    k = kv / g if okv else 0.0
    out_path, in_path = _paths(engine, pre)
    offload = (0.0 if engine == "vllm-level2" else w + k) / _rate(accelerator, out_path, c)
    onload = (w + k) / _rate(accelerator, in_path, c)
    sleep = c["sleep_fixed_s"] + offload
    wake = c["wake_fixed_s"] + onload
    return {"offload": offload, "onload": onload, "fixed": c["sleep_fixed_s"] + c["wake_fixed_s"], "sleep": sleep,
            "wake": wake, "total": sleep + wake}


# ---------------------------------------------------------------- calibration
@dataclass(frozen=True)
class _Case:
    name: str
    part: str          # "sleep" or "wake"
    measured_s: float
    source: str
    kwargs: dict[str, Any]
    fit: bool = True
    note: str = ""


def _phi3_vision() -> Any:
    from rollsim.hardware.specs import ModelSpec

    # microsoft/Phi-3-vision-128k-instruct: 4.15 B parameters (its model card); only the weight bytes
    # matter for a switch
    return ModelSpec("Phi-3-vision-128k-instruct", 4.15e9, 4.15e9, 32, 3072, 32, 32, 96, 32064, 8192,
                     source="https://huggingface.co/microsoft/Phi-3-vision-128k-instruct")


_PR58066 = "vllm-project/vllm PR 58066"
_BLOG = "vllm-project.github.io, 2025-10-26 sleep-mode post"
_VIME = "vllm-project/vime issue 442, PR 443"

#: The switching measurements (published) the constants are fitted on and checked against.
CALIBRATION: tuple[_Case, ...] = (
    *(_Case(f"vLLM first level-1 sleep, 1 H20, FP16, {m}", "sleep", s, _PR58066,
            {"model": m, "accelerator": "H20", "gpus": 1, "engine": "vllm"})
      for m, s in (("Qwen3-0.6B", 0.618), ("Qwen3-8B", 6.193), ("Qwen3-30B-A3B", 21.899))),
    *(_Case(f"vLLM level-1 sleep with pre-allocated buffers, 1 H20, {m}", "sleep", s, _PR58066,
            {"model": m, "accelerator": "H20", "gpus": 1, "engine": "vllm", "preallocated": True})
      for m, s in (("Qwen3-0.6B", 0.059), ("Qwen3-8B", 0.343), ("Qwen3-30B-A3B", 1.160))),
    *(_Case(f"vLLM 0.11 level-1 wake, A100, {'Phi-3-vision' if m == 'phi3v' else m}", "wake", s, _BLOG,
            {"model": m, "accelerator": "A100-80G", "gpus": 1, "engine": "vllm"})
      for m, s in (("Qwen3-0.6B", 0.26), ("phi3v", 0.82))),
    *(_Case(f"vLLM 0.11 level-2 wake, A100, {'Phi-3-vision' if m == 'phi3v' else m}", "wake", s, _BLOG,
            {"model": m, "accelerator": "A100-80G", "gpus": 1, "engine": "vllm-level2"})
      for m, s in (("Qwen3-0.6B", 0.85), ("phi3v", 2.58))),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: sleep", "sleep", 11.23, _VIME,
          {"model": "Qwen3-0.6B", "accelerator": "L20", "gpus": 1, "engine": "vllm"}, fit=False,
          note="framework time around the engine call; the bytes moved (1.2 GB) take under 0.5 s"),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: wake", "wake", 3.77, _VIME,
          {"model": "Qwen3-0.6B", "accelerator": "L20", "gpus": 1, "engine": "vllm"}, fit=False,
          note="as the sleep: not the bytes moved"),
)


def _predict(case: _Case, c: dict[str, float] | None = None) -> float:
    kw = dict(case.kwargs)
    m = kw.pop("model")
    if m == "phi3v":
        m = _phi3_vision()
    return switch_s(m, kw.pop("accelerator"), kv_cache_bytes=0.0, _c=c, **kw)[case.part]


def fit() -> dict[str, float]:
    """The four constants by least squares on the relative errors of the :data:`CALIBRATION` rows
    marked for the fit. Each prediction is linear in ``(SLEEP_FIXED_S, WAKE_FIXED_S,
    1 / PAGEABLE_BYTES_PER_S, 1 / PINNED_EFFICIENCY)`` (the pageable rate is below every host link
    here), so the fit is one linear least squares (each row divided by its measurement)."""
    from rollsim.hardware.training import _resolve

    rows = [c for c in CALIBRATION if c.fit]
    a = np.zeros((len(rows), 4))
    for i, c in enumerate(rows):
        kw = dict(c.kwargs)
        m, gpu = _resolve(_phi3_vision() if kw["model"] == "phi3v" else kw["model"], kw["accelerator"])
        w = float(m.total_params) * 2.0 / kw["gpus"]
        out_path, in_path = _paths(kw["engine"], kw.get("preallocated", False))
        moved = 0.0 if c.part == "sleep" and kw["engine"] == "vllm-level2" else w
        path = out_path if c.part == "sleep" else in_path
        a[i, 0 if c.part == "sleep" else 1] = 1.0
        if path == "pageable":
            a[i, 2] = moved
        else:
            a[i, 3] = moved / float(gpu.host_link_bytes_per_s)
        a[i] /= c.measured_s
    x, *_ = np.linalg.lstsq(a, np.ones(len(rows)), rcond=None)
    return {"sleep_fixed_s": round(float(x[0]), 4), "wake_fixed_s": round(float(x[1]), 4),
            "pageable_bytes_per_s": float(f"{1.0 / x[2]:.3g}"), "pinned_efficiency": round(float(1.0 / x[3]), 3)}


def switch_validation_rows() -> list[dict[str, Any]]:
    """Every switching measurement with its prediction: ``case``, ``predicted``, ``measured``,
    ``unit`` ("s"), ``error`` (predicted / measured - 1), ``in_fit``, ``source``, ``note``, a short
    ``label`` and ``part`` ("sleep" or "wake")."""
    out = []
    for c in CALIBRATION:
        p = _predict(c)
        kw = c.kwargs
        model = "Phi-3-vision" if kw["model"] == "phi3v" else kw["model"]
        pre = " prealloc" if kw.get("preallocated") else ""
        out.append({"case": c.name, "label": f"{kw['engine']}{pre} {model} {kw['accelerator']}", "part": c.part,
                    "predicted": p, "measured": c.measured_s, "unit": "s",
                    "error": p / c.measured_s - 1.0, "in_fit": c.fit, "source": c.source, "note": c.note})
    return out


def calibration_report() -> str:
    """The fitted constants and every row's residual, as text."""
    lines = ["switch fit: " + ", ".join(f"{k} {v:g}" for k, v in fit().items())]
    for r in switch_validation_rows():
        lines.append(f"{r['error']:+7.1%}  predicted {r['predicted']:7.3f} s  measured {r['measured']:7.3f} s  "
                     f"{'fit ' if r['in_fit'] else 'check'}  {r['case']}  [{r['source']}]")
    return "\n".join(lines)


def table_rows() -> list[Any]:
    """The rows of :func:`switch_validation_rows` as :class:`rollsim.hardware.validation.Row` (area
    "switching") for ``rollsim validate --resources``."""
    from rollsim.hardware.rows import Row

    return [Row.from_prediction(r, quantity=f"{r['part']} s", area="switching") for r in switch_validation_rows()]
