"""Colocated switching: the seconds to put a rollout engine to sleep and wake it again, and to park
a trainer's state on the host and bring it back, from the bytes moved over the host link plus the
host-memory work that goes with them.

A switch is made of these terms, per GPU (weights sharded over the instance's ``gpus``):

* a **copy** between device and pinned host memory, ``bytes / (PINNED_EFFICIENCY x host link)``
  (measured directly on an L20: 24.4 GiB/s device to host and 23.5 GiB/s back over PCIe Gen4 x16,
  fzyzcjy/torch_memory_saver issue 111);
  the host link of a GPU is its share of the uplink it reaches the host through: GPUs behind one
  PCIe switch (``Accelerator.gpus_per_host_link``, 2 on an 8-GPU HGX A100 board) that copy at
  the same time split it, so a GPU copies over ``host_link_bytes_per_s / min(gpus_per_host_link,
  GPUs of its node copying at once)`` (:func:`host_link_share`);
* **pinning new host memory** (``cudaHostAlloc``, page-locking the buffer the copy lands in),
  ``bytes / PAGEABLE_BYTES_PER_S``; the same rate stands for a reload through ordinary (pageable)
  host memory;
* **unpinning** it (``cudaFreeHost`` after the copy back), ``bytes / UNPIN_BYTES_PER_S``;
* **mapping** device memory back on a wake, ``(weights + KV cache) / MAP_BYTES_PER_S`` per GPU:
  ``CuMemAllocator.sleep`` (``vllm/device_allocator/cumem.py``) unmaps and releases every allocation
  of its pool, and ``wake_up`` runs ``create_and_map`` (``cuMemCreate``, ``cuMemMap``,
  ``cuMemSetAccess``) on every one, the discarded KV cache included; torch_memory_saver's resume
  maps what its pause released the same way. The release on a sleep is cheap (vLLM's pre-allocated
  0.6B sleep on an H20, 0.059 s, releases about 90 GB), so it has no term;
* a fixed cost of each sleep (``SLEEP_FIXED_S``) and wake (``WAKE_FIXED_S``, fitted to 0: on the
  calibration rows the map term is what it stood for) of an engine.

Which terms a switch pays depends on how it keeps its host buffers:

* ``"vllm"`` (level-1 sleep, ``vllm/device_allocator/cumem.py``): sleep copies the weights to
  pinned buffers from PyTorch's caching host allocator and unmaps the KV cache (discarded); wake
  re-maps and copies the weights back. Only the *first* sleep pins new memory
  (``first_sleep=True``); the buffers return to the allocator's cache on wake and later sleeps reuse
  them (vllm-project/vllm PR 58066), so a colocated step pays copies only. ``preallocated=True``
  pins the buffers at startup (the same PR), so even the first sleep only copies.
* ``"vllm-level2"``: weights and KV cache are discarded; wake reloads the weights from the
  checkpoint (``reload_weights``) through pageable memory.
* ``"sglang"`` (``release_memory_occupation`` with torch_memory_saver's CPU backup): every pause
  pins a new host buffer and every resume frees it after the copy back
  (fzyzcjy/torch_memory_saver issue 90), so every switch pays both; ``preallocated=True`` is its ``retain_cpu_backup``
  (fzyzcjy/torch_memory_saver PR 86), which keeps the buffers.

:func:`train_offload_s` is the trainer's side (Megatron or FSDP state parked through
torch_memory_saver's CPU backup, as slime and vime do with ``offload_train``): the same pause /
resume terms over the optimizer state. The six constants are global, fitted once by :func:`fit`
on the rows of :data:`CALIBRATION` marked for the fit (fit and residuals:
:func:`calibration_report`); the other rows are held out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import invalid

__all__ = ["ENGINES", "SLEEP_FIXED_S", "WAKE_FIXED_S", "PAGEABLE_BYTES_PER_S", "PINNED_EFFICIENCY",
           "UNPIN_BYTES_PER_S", "MAP_BYTES_PER_S", "TRAIN_STATE_BYTES_PER_PARAM", "train_state_gpus", "train_state_words",
           "host_link_share", "switch_s", "train_offload_s", "CALIBRATION",
           "fit", "calibration_report", "switch_validation_rows", "table_rows"]

ENGINES = ("vllm", "vllm-level2", "sglang")

#: Fixed seconds of an engine's sleep (unmapping its memory, bookkeeping), fitted by :func:`fit`.
SLEEP_FIXED_S = 0.0546
#: Fixed seconds of an engine's wake (restoring state), fitted; 0 since the wake's mapping of its
#: memory is priced per byte (:data:`MAP_BYTES_PER_S`).
WAKE_FIXED_S = 0.0
#: Bytes/s of pinning newly allocated host memory (``cudaHostAlloc``) or of a reload through
#: pageable host memory, fitted; bounded by the host link.
PAGEABLE_BYTES_PER_S = 2.88e9
#: Fraction of the host link a copy between device and pinned host memory achieves, fitted.
PINNED_EFFICIENCY = 0.804
#: Bytes/s of freeing (unpinning) a pinned host buffer after the copy back, fitted; the one row
#: that sets it is the resume benchmark of fzyzcjy/torch_memory_saver issue 111, so vime's wake
#: is its only check.
UNPIN_BYTES_PER_S = 7.53e9
#: Bytes/s of mapping device memory back on a wake (``cuMemCreate`` + ``cuMemMap`` +
#: ``cuMemSetAccess`` of every allocation the sleep released: weights and KV cache), fitted. Every
#: A100 row maps the same 74.7 GB (vLLM's default pool), so the fit alone cannot tell it from a
#: fixed wake; the held-out RTX A4000 rows (a 13 GB pool) can.
MAP_BYTES_PER_S = 2.97e11
#: Bytes per parameter of a mixed-precision Adam trainer's state: BF16 weights (2) and FP32
#: gradients (4), FP32 master weights (4) and the two Adam moments (8), as Megatron's distributed
#: optimizer and FSDP2 keep them.
TRAIN_STATE_BYTES_PER_PARAM = 18.0

_MAX_GPUS = 1 << 20
_KEYS = ("sleep_fixed_s", "wake_fixed_s", "copy", "pin", "unpin", "map")  # the linear terms of :func:`_terms`


def train_state_gpus(model: Any, gpu: Any) -> tuple[float, int]:
    """``(bytes, GPUs)``: a model's training state (weights, gradients, Adam moments:
    :data:`TRAIN_STATE_BYTES_PER_PARAM` per parameter) and the GPUs of ``gpu`` it needs sharded over
    them, activations not counted (a lower bound). ``rollsim split --model`` and
    :meth:`rollsim.hardware.Deployment.gpu_split` recommend no split with fewer training GPUs."""
    state = model.total_params * TRAIN_STATE_BYTES_PER_PARAM
    return state, max(1, math.ceil(state / gpu.hbm_bytes))


def train_state_words(model: Any, gpu: Any, train_gpus: int | None = None) -> tuple[int, str]:
    """``(GPUs, words)``: the GPUs of ``gpu`` that hold ``model``'s training state (:func:`train_state_gpus`)
    and the words every message about it uses (the deployment's warning, ``rollsim split --model``'s
    exclusion, ``rollsim hardware --train-tokens``' line): ``"the training state of Qwen3-30B-A3B (30.5B
    parameters x 18 bytes = 512 GiB: weights, gradients, Adam; 128.0 GiB per GPU on 4 GPUs; it needs at least
    7 x H100 of 80 GiB, before activations)"``, the share per GPU only with ``train_gpus``."""
    from rollsim._text import count

    state, need = train_state_gpus(model, gpu)
    per = "" if train_gpus is None else f"{state / train_gpus / 2**30:,.1f} GiB per GPU on {count(train_gpus, 'GPU')}; "
    return need, (f"the training state of {model.name} ({model.total_params / 1e9:.1f}B parameters x "
                  f"{TRAIN_STATE_BYTES_PER_PARAM:g} bytes = {state / 2**30:,.0f} GiB: weights, gradients, Adam; {per}"
                  f"it needs at least {need} x {gpu.name} of {gpu.hbm_gib:g} GiB, before activations)")


def _constants() -> dict[str, float]:
    return {"sleep_fixed_s": SLEEP_FIXED_S, "wake_fixed_s": WAKE_FIXED_S, "pageable_bytes_per_s": PAGEABLE_BYTES_PER_S,
            "pinned_efficiency": PINNED_EFFICIENCY, "unpin_bytes_per_s": UNPIN_BYTES_PER_S,
            "map_bytes_per_s": MAP_BYTES_PER_S}


def _gpus_copying(accelerator: Any, gpus: int, gpus_copying: int | None) -> int:
    """GPUs of one node copying at once: ``gpus_copying``, or the GPUs of ``gpus`` on one node (the
    least it can be: they all copy together)."""
    own = min(gpus, int(getattr(accelerator, "gpus_per_node", gpus)))
    if gpus_copying is None:
        return own
    n = _check.integer("gpus_copying", gpus_copying, 1, _MAX_GPUS)
    if n < own:
        raise invalid("gpus_copying", f"must be at least the GPUs of this switch on one node (min(gpus, "
                      f"gpus_per_node) = {own}: they copy together), got {n}")
    return n


def host_link_share(accelerator: Any, gpus_copying: int = 1) -> float:
    """Bytes/s one GPU copies to or from the host over while ``gpus_copying`` GPUs of its node copy
    at once.

    Parameters
    ----------
    accelerator : Accelerator or str
        The GPU: ``host_link_bytes_per_s`` is its own link and the uplink of the PCIe switch it sits
        behind (the same PCIe generation and width), ``gpus_per_host_link`` the GPUs behind that
        uplink (1 when the object has no such attribute).
    gpus_copying : int
        GPUs of the node copying at the same time, in [1, 2**20], placed in order (a TP-4 instance
        on GPUs 0-3 of an 8-GPU HGX A100 node puts two on each of two switches).

    Returns
    -------
    float
        ``host_link_bytes_per_s / min(gpus_per_host_link, gpus_copying)``, bytes/s: the uplink
        split evenly among the GPUs behind it that copy, never more than the GPU's own link.

    Raises
    ------
    ScenarioError (ValueError)
        ``gpus_copying`` or the accelerator's ``gpus_per_host_link`` outside [1, 2**20], or an
        unknown accelerator name.
    """
    from rollsim.hardware.training import _resolve

    _, accelerator = _resolve("Qwen3-0.6B", accelerator)
    n = _check.integer("gpus_copying", gpus_copying, 1, _MAX_GPUS)
    share = _check.integer("gpus_per_host_link", getattr(accelerator, "gpus_per_host_link", 1), 1, _MAX_GPUS)
    return float(accelerator.host_link_bytes_per_s) / min(share, n)


def _engine_terms(engine: str, part: str, moved: float, link: float, *, preallocated: bool,
                  first_sleep: bool, pool: float = 0.0) -> dict[str, float]:
    """The coefficients of one engine sleep or wake: ``copy`` in seconds at the full host link
    (divided by ``PINNED_EFFICIENCY``), ``pin`` and ``unpin`` in bytes (divided by their rates),
    the fixed costs as 0/1."""
    if part == "sleep":
        t = {"sleep_fixed_s": 1.0}
        if engine == "vllm-level2":
            return t
        t["copy"] = moved / link
        if (engine == "vllm" and first_sleep and not preallocated) or (engine == "sglang" and not preallocated):
            t["pin"] = moved
        return t
    t = {"wake_fixed_s": 1.0, "map": pool}
    if engine == "vllm-level2":
        t["pin"] = moved  # reloaded through pageable memory
        return t
    t["copy"] = moved / link
    if engine == "sglang" and not preallocated:
        t["unpin"] = moved
    return t


def _tms_terms(part: str, moved: float, link: float, retain: bool) -> dict[str, float]:
    """torch_memory_saver's pause (``part`` "sleep") or resume of ``moved`` bytes with CPU backup."""
    t = {"copy": moved / link}
    if not retain:
        t["pin" if part == "sleep" else "unpin"] = moved
    if part == "wake":
        t["map"] = moved
    return t


def _seconds(t: dict[str, float], c: dict[str, float], link: float) -> float:
    """The seconds of the terms ``t`` under the constants ``c``; the pageable rate is capped by the
    host link."""
    rates = {"copy": 1.0 / c["pinned_efficiency"], "pin": 1.0 / min(c["pageable_bytes_per_s"], link),
             "unpin": 1.0 / c["unpin_bytes_per_s"], "map": 1.0 / c["map_bytes_per_s"], "sleep_fixed_s": c["sleep_fixed_s"],
             "wake_fixed_s": c["wake_fixed_s"]}
    return sum(v * rates[k] for k, v in t.items())


def switch_s(model: Any, accelerator: Any, *, gpus: int, kv_cache_bytes: float, engine: str = "vllm",
             preallocated: bool = False, first_sleep: bool = False, offload_kv: bool = False,
             bytes_per_param: float = 2.0, gpus_copying: int | None = None,
             _c: dict[str, float] | None = None) -> dict[str, float]:
    """Seconds of one colocated switch of a rollout engine (to sleep, and awake again).

    Parameters
    ----------
    model : ModelSpec or str
        The served model (names are looked up in :mod:`rollsim.hardware.specs`).
    accelerator : Accelerator or str
        The GPU; each copies over its share of the host link (:func:`host_link_share`).
    gpus : int
        GPUs of one engine instance (its tensor x expert parallel size), in [1, 2**20]; the weights
        and the KV cache are split evenly over them, and all copy at once.
    kv_cache_bytes : float
        KV cache of the instance (all its GPUs), bytes, in [0, 1e15]; mapped back on every wake
        (with the weights), copied out and back only with ``offload_kv``.
    engine : {"vllm", "vllm-level2", "sglang"}
        Sleep mode (module docstring).
    preallocated : bool
        Host buffers are pinned once and kept (vllm-project/vllm PR 58066; torch_memory_saver's
        ``retain_cpu_backup`` for ``"sglang"``); not for ``"vllm-level2"``.
    first_sleep : bool
        ``engine="vllm"`` only: the engine's first sleep, which pins its host buffers (unless
        ``preallocated``); later sleeps reuse them. False (default) is the steady state of a
        colocated run.
    offload_kv : bool
        The KV cache is copied out and back like the weights instead of discarded.
    bytes_per_param : float
        Bytes per weight parameter in the engine, in (0, 8] (2: BF16 / FP16, 1: FP8).
    gpus_copying : int or None
        GPUs of one node copying to or from the host at the same time (this instance's and those
        of other engines switching with it), in [min(gpus, gpus_per_node), 2**20]; they share the
        uplinks of ``accelerator.gpus_per_host_link`` GPUs. None: the instance's GPUs on one node,
        ``min(gpus, gpus_per_node)``.

    Returns
    -------
    dict of str to float
        ``offload`` and ``onload`` (the seconds of the sleep and of the wake that depend on the
        bytes: copies, pinning, unpinning, mapping, reload), ``fixed`` (both fixed costs), ``sleep``,
        ``wake`` and ``total`` (``sleep + wake``), seconds.

    Raises
    ------
    ScenarioError (ValueError)
        An argument outside its range (``gpus_copying`` below the instance's GPUs on one node
        included), an accelerator's ``gpus_per_host_link`` outside [1, 2**20], an unknown engine,
        or ``first_sleep`` / ``preallocated`` with an engine they do not apply to.
    """
    from rollsim.hardware.training import _resolve

    model, accelerator = _resolve(model, accelerator)
    g = _check.integer("gpus", gpus, 1, _MAX_GPUS)
    kv = _check.bounded("kv_cache_bytes", kv_cache_bytes, 0, 1e15, "bytes")
    bpp = _check.bounded("bytes_per_param", bytes_per_param, 0, 8, "bytes", lo_open=True)
    if engine not in ENGINES:
        raise invalid("engine", f"must be one of {list(ENGINES)}, got {engine!r}")
    pre = _check.flag("preallocated", preallocated)
    first = _check.flag("first_sleep", first_sleep)
    if first and engine != "vllm":
        raise invalid("first_sleep", f"applies to engine='vllm' only (torch_memory_saver pins on every pause, and a "
                      f"level-2 sleep copies nothing out), got engine={engine!r}")
    if pre and engine == "vllm-level2":
        raise invalid("preallocated", "applies to engine='vllm' or 'sglang' (a level-2 sleep keeps no host copy), "
                      "got engine='vllm-level2'")
    okv = _check.flag("offload_kv", offload_kv)
    c = _constants() if _c is None else _c
    link = host_link_share(accelerator, _gpus_copying(accelerator, g, gpus_copying))
    w = float(model.total_params) * bpp / g
    k = kv / g if okv else 0.0
    out = {}
    for part in ("sleep", "wake"):
        t = _engine_terms(engine, part, w, link, preallocated=pre, first_sleep=first, pool=w + kv / g)
        if k and part == "sleep" and engine == "vllm-level2":
            t.update(_engine_terms("vllm", "sleep", k, link, preallocated=pre, first_sleep=first))
        elif k:
            extra = _engine_terms("vllm" if engine == "vllm-level2" else engine, part, k, link, preallocated=pre,
                                  first_sleep=first)
            for key in ("copy", "pin", "unpin"):
                if key in extra:
                    t[key] = t.get(key, 0.0) + extra[key]
        out[part] = _seconds(t, c, link)
    sleep, wake = out["sleep"], out["wake"]
    return {"offload": sleep - c["sleep_fixed_s"], "onload": wake - c["wake_fixed_s"],
            "fixed": c["sleep_fixed_s"] + c["wake_fixed_s"], "sleep": sleep, "wake": wake, "total": sleep + wake}


def train_offload_s(model: Any, accelerator: Any, *, gpus: int = 1, state_bytes: float | None = None,
                    retain_backup: bool = False, gpus_copying: int | None = None,
                    _c: dict[str, float] | None = None) -> dict[str, float]:
    """Seconds to park a trainer's GPU state on the host and bring it back, through
    torch_memory_saver's CPU backup (slime's and vime's ``offload_train``, on by default when
    colocated).

    Parameters
    ----------
    model : ModelSpec or str
        The trained model.
    accelerator : Accelerator or str
        The GPU; each copies over its share of the host link (:func:`host_link_share`).
    gpus : int
        Training GPUs the state is sharded over, in [1, 2**20]; all park theirs at once.
    state_bytes : float or None
        Bytes parked per GPU, in (0, 1e15]. None: ``TRAIN_STATE_BYTES_PER_PARAM x total_params /
        gpus`` (the optimizer state alone; a real run also parks what its caching allocator keeps
        for activations, which can be as much again).
    retain_backup : bool
        torch_memory_saver's ``retain_cpu_backup`` (fzyzcjy/torch_memory_saver PR 86): the pinned
        buffers are kept, so neither pinning nor unpinning is paid.
    gpus_copying : int or None
        GPUs of one node copying at the same time, in [min(gpus, gpus_per_node), 2**20]; None:
        ``min(gpus, gpus_per_node)``.

    Returns
    -------
    dict of str to float
        ``bytes`` (per GPU), ``sleep`` (pause: pin + copy out), ``wake`` (resume: map + copy back +
        unpin) and ``total``, seconds. The framework's own steps around them (vime tears down and
        rebuilds its process groups and clears caches: about 1.4 s of its 11.2 s sleep,
        vllm-project/vime PR 443) are not included.

    Raises
    ------
    ScenarioError (ValueError)
        An argument outside its range.
    """
    from rollsim.hardware.training import _resolve

    model, accelerator = _resolve(model, accelerator)
    g = _check.integer("gpus", gpus, 1, _MAX_GPUS)
    if state_bytes is None:
        b = TRAIN_STATE_BYTES_PER_PARAM * float(model.total_params) / g
    else:
        b = _check.bounded("state_bytes", state_bytes, 0, 1e15, "bytes", lo_open=True)
    retain = _check.flag("retain_backup", retain_backup)
    c = _constants() if _c is None else _c
    link = host_link_share(accelerator, _gpus_copying(accelerator, g, gpus_copying))
    sleep = _seconds(_tms_terms("sleep", b, link, retain), c, link)
    wake = _seconds(_tms_terms("wake", b, link, retain), c, link)
    return {"bytes": b, "sleep": sleep, "wake": wake, "total": sleep + wake}


# ---------------------------------------------------------------- calibration
@dataclass(frozen=True)
class _Case:
    name: str
    label: str
    part: str          # "sleep" or "wake"
    measured_s: float
    source: str
    kind: str          # "engine" (switch_s), "train" (train_offload_s) or "copy" (a bare pinned copy)
    kwargs: dict[str, Any] = field(default_factory=dict)
    fit: bool = True
    note: str = ""


def _phi3_vision() -> Any:
    from rollsim.hardware.specs import ModelSpec

    # microsoft/Phi-3-vision-128k-instruct: 4.15 B parameters (its model card); only the weight bytes
    # matter for a switch
    return ModelSpec("Phi-3-vision-128k-instruct", 4.15e9, 4.15e9, 32, 3072, 32, 32, 96, 32064, 8192,
                     source="https://huggingface.co/microsoft/Phi-3-vision-128k-instruct")


#: NVIDIA RTX A4000 (16 GB, PCIe Gen4 x16, its datasheet); only its host link matters for a switch.
_A4000 = SimpleNamespace(name="RTX A4000", host_link_bytes_per_s=32e9, hbm_bytes=16.0 * 2**30)

_PR58066 = "vllm-project/vllm PR 58066"
_BLOG = "vllm-project.github.io, 2025-10-26 sleep-mode post"
_BLOG_TP4 = "vllm-project.github.io assets/figures/2025-vllm-sleep-mode/plotly-sleep-mode.js"
_BLOG_A4000 = "vllm-project.github.io assets/figures/2025-vllm-sleep-mode/plotly-sleep-mode-a4000.js"
_BLOG_QUANT = ("vllm-project.github.io assets/figures/2025-vllm-sleep-mode/plotly-ablation-quant.js "
               "(commit c3a01c4a5807)")
#: The sleep-mode post's quantization ablation (A100, TP 1, level 1, vLLM 0.11.0), held out by a rule
#: written before any of its predictions was computed: every sleep and wake of both series (BF16 and
#: FP8) and both models, each the median of the chart's repeats (three wakes, three or two sleeps:
#: all after the warm-up's first sleep, so in the steady state); FP8 weights at 1 byte per parameter
#: (vLLM's online FP8 quantizes the linear layers; what it leaves in BF16, such as the embeddings,
#: is not counted, so the bytes are a lower bound), the KV cache at vLLM's defaults as in every row.
_QUANT = (("BF16", "Qwen3-0.6B", "Qwen3-0.6B", 0.10, 0.27), ("BF16", "phi3v", "Phi-3-vision", 0.49, 0.89),
          ("FP8", "Qwen3-0.6B", "Qwen3-0.6B", 0.06, 0.18), ("FP8", "phi3v", "Phi-3-vision", 0.31, 0.78))
_TMS = "fzyzcjy/torch_memory_saver issue 111"
_VIME = "vllm-project/vime issue 442, PR 443, PR 444"
_GIB4 = 4.0 * 2**30
_PHI = "Phi-3-vision"


def _engine_case(name: str, label: str, part: str, measured: float, source: str, model: str, gpu: Any,
                 engine: str = "vllm", fit: bool = True, note: str = "", **kw: Any) -> _Case:
    return _Case(name, label, part, measured, source, "engine",
                 {"model": model, "accelerator": gpu, "gpus": 1, "engine": engine, **kw}, fit, note)


_STEADY = ("steady state: the post's sleeps and wakes after the first (medians of its three, or two, "
           "repeats), so the pinned buffers are reused")

#: The switching measurements (published) the constants are fitted on and checked against.
CALIBRATION: tuple[_Case, ...] = (
    *(_engine_case(f"vLLM first level-1 sleep, 1 H20, FP16, {m}", f"vllm first {m} H20", "sleep", s, _PR58066, m,
                   "H20", first_sleep=True)
      for m, s in (("Qwen3-0.6B", 0.618), ("Qwen3-8B", 6.193), ("Qwen3-30B-A3B", 21.899))),
    *(_engine_case(f"vLLM level-1 sleep with pre-allocated buffers, 1 H20, {m}", f"vllm prealloc {m} H20", "sleep",
                   s, _PR58066, m, "H20", first_sleep=True, preallocated=True)
      for m, s in (("Qwen3-0.6B", 0.059), ("Qwen3-8B", 0.343), ("Qwen3-30B-A3B", 1.160))),
    *(_engine_case(f"vLLM 0.11 level-1 {part}, A100, {lab}", f"vllm {lab} A100", part, s, _BLOG, m, "A100-80G",
                   note=_STEADY)
      for m, lab, part, s in (("Qwen3-0.6B", "Qwen3-0.6B", "sleep", 0.09), ("Qwen3-0.6B", "Qwen3-0.6B", "wake", 0.26),
                              ("phi3v", _PHI, "sleep", 0.415), ("phi3v", _PHI, "wake", 0.82),
                              ("Qwen3-30B-A3B", "Qwen3-Coder-30B-A3B", "sleep", 2.78),
                              ("Qwen3-30B-A3B", "Qwen3-Coder-30B-A3B", "wake", 2.86))),
    *(_engine_case(f"vLLM 0.11 level-2 {part}, A100, {lab}", f"vllm-level2 {lab} A100", part, s, _BLOG, m,
                   "A100-80G", engine="vllm-level2", note=_STEADY + "; the wake includes reload_weights")
      for m, lab, part, s in (("Qwen3-0.6B", "Qwen3-0.6B", "sleep", 0.12), ("Qwen3-0.6B", "Qwen3-0.6B", "wake", 0.85),
                              ("phi3v", _PHI, "sleep", 0.455), ("phi3v", _PHI, "wake", 2.58))),
    _Case("torch_memory_saver pause of 4 GiB with CPU backup, 1 L20", "tms pause 4 GiB L20", "sleep",
          _GIB4 / (2.41 * 2**30), _TMS, "train", {"accelerator": "L20", "state_bytes": _GIB4},
          note="2.41 GiB/s published"),
    _Case("torch_memory_saver resume of 4 GiB with CPU backup, 1 L20", "tms resume 4 GiB L20", "wake",
          _GIB4 / (5.32 * 2**30), _TMS, "train", {"accelerator": "L20", "state_bytes": _GIB4},
          note="5.32 GiB/s published; the only row that sets the unpin rate"),
    _Case("pinned Tensor.copy_ of 4 GiB, device to host, 1 L20", "pinned copy D2H 4 GiB L20", "sleep",
          _GIB4 / (24.43 * 2**30), _TMS, "copy", {"accelerator": "L20", "bytes": _GIB4}, note="24.43 GiB/s published"),
    _Case("pinned Tensor.copy_ of 4 GiB, host to device, 1 L20", "pinned copy H2D 4 GiB L20", "wake",
          _GIB4 / (23.54 * 2**30), _TMS, "copy", {"accelerator": "L20", "bytes": _GIB4}, note="23.54 GiB/s published"),
    # ---- held out
    *(_engine_case(f"vLLM 0.11 level-1 {part}, A100, {lab}, {q} (quantization ablation)", f"vllm {lab} {q} A100",
                   part, s, _BLOG_QUANT, m, "A100-80G", fit=False, bytes_per_param=1.0 if q == "FP8" else 2.0,
                   note="steady state (median of the chart's repeats); held out by the rule at _QUANT")
      for q, m, lab, sleep_s, wake_s in _QUANT for part, s in (("sleep", sleep_s), ("wake", wake_s))),
    *(_Case(f"vLLM 0.11 level-1 {part}, 4 A100 (TP 4), Qwen3-235B-A22B FP8", "vllm Qwen3-235B-A22B FP8 TP4 A100",
            part, s, _BLOG_TP4, "engine",
            {"model": "Qwen3-235B-A22B", "accelerator": "A100-80G", "gpus": 4, "engine": "vllm",
             "bytes_per_param": 1.0}, fit=False,
            note="steady state (median of three); the four GPUs copy at once, two behind each PCIe Gen4 x16 "
                 "switch uplink as on an 8-GPU HGX A100 board (A100-80G's gpus_per_host_link; the post names "
                 "only 'A100', not its host)")
      for part, s in (("sleep", 5.89), ("wake", 5.29))),
    *(_engine_case(f"vLLM 0.11 level-1 {part}, 1 RTX A4000, {lab}", f"vllm {lab} A4000", part, s, _BLOG_A4000, m,
                   _A4000, fit=False, note="steady state (median of the post's repeats)")
      for m, lab, part, s in (("Qwen3-0.6B", "Qwen3-0.6B", "sleep", 0.13), ("Qwen3-0.6B", "Qwen3-0.6B", "wake", 0.10),
                              ("phi3v", _PHI, "sleep", 0.68), ("phi3v", _PHI, "wake", 0.80))),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer sleep, state from specs (18 B/param)",
          "vime trainer 0.6B L20 spec bytes", "sleep", 11.23, _VIME, "train",
          {"model": "Qwen3-0.6B", "accelerator": "L20"}, fit=False,
          note="Megatron's state through torch_memory_saver; the run parked 18.7 GiB, not the 10.0 GiB of its "
               "optimizer state, and tears down its process groups (0.91 s) and clears caches (0.44 s)"),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer wake, state from specs (18 B/param)",
          "vime trainer 0.6B L20 spec bytes", "wake", 3.77, _VIME, "train",
          {"model": "Qwen3-0.6B", "accelerator": "L20"}, fit=False, note="as the sleep"),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer sleep, the 18.7 GiB it parked",
          "vime trainer 0.6B L20 parked", "sleep", 11.23, _VIME, "train",
          {"model": "Qwen3-0.6B", "accelerator": "L20", "state_bytes": 18.7 * 2**30}, fit=False,
          note="pause took 9.68 s of it (2.07 GB/s on a loaded node); the process groups and caches 1.36 s"),
    _Case("vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer wake, the 18.7 GiB it parked",
          "vime trainer 0.6B L20 parked", "wake", 3.77, _VIME, "train",
          {"model": "Qwen3-0.6B", "accelerator": "L20", "state_bytes": 18.7 * 2**30}, fit=False,
          note="checks the unpin rate, set by the same author's resume benchmark on an L20"),
)


def _terms(case: _Case) -> tuple[dict[str, float], float]:
    """The linear terms of one case's prediction and its host link (bytes/s)."""
    from rollsim.hardware.training import _resolve

    kw = case.kwargs
    if case.kind == "engine":
        m, gpu = _resolve(_phi3_vision() if kw["model"] == "phi3v" else kw["model"], kw["accelerator"])
        link = host_link_share(gpu, _gpus_copying(gpu, kw["gpus"], None))
        w = float(m.total_params) * kw.get("bytes_per_param", 2.0) / kw["gpus"]
        return _engine_terms(kw["engine"], case.part, w, link, preallocated=kw.get("preallocated", False),
                             first_sleep=kw.get("first_sleep", False), pool=w + _default_kv(gpu, w)), link
    _, gpu = _resolve("Qwen3-0.6B", kw["accelerator"])
    link = float(gpu.host_link_bytes_per_s)
    if case.kind == "copy":
        return {"copy": kw["bytes"] / link}, link
    b = kw.get("state_bytes")
    if b is None:
        b = TRAIN_STATE_BYTES_PER_PARAM * float(_resolve(kw["model"], gpu)[0].total_params)
    return _tms_terms(case.part, b, link, False), link


def _default_kv(gpu: Any, weights: float) -> float:
    """KV-cache bytes per GPU of a vLLM engine at its defaults (the rule of
    :func:`rollsim.hardware.serving.kv_capacity_tokens`: ``hbm x 0.9 - weights - reserve``), for the
    published runs that do not give theirs."""
    from rollsim.hardware.serving import ENGINES as _SERVING

    e = _SERVING["vllm"]
    return max(0.0, float(gpu.hbm_bytes) * e.gpu_memory_utilization - weights - e.activation_reserve_gib * 2.0**30)


def _predict(case: _Case, c: dict[str, float] | None = None) -> float:
    t, link = _terms(case)
    return _seconds(t, _constants() if c is None else c, link)


def fit() -> dict[str, float]:
    """The six constants by least squares on the relative errors of the :data:`CALIBRATION` rows
    marked for the fit. Each prediction is linear in ``(SLEEP_FIXED_S, WAKE_FIXED_S,
    1 / PINNED_EFFICIENCY, 1 / PAGEABLE_BYTES_PER_S, 1 / UNPIN_BYTES_PER_S, 1 / MAP_BYTES_PER_S)``
    (the published engine rows map vLLM's default pool, :func:`_default_kv`; the pageable rate is
    below every host link here), so the fit is one linear least squares (each row divided by its
    measurement)."""
    rows = [c for c in CALIBRATION if c.fit]
    a = np.zeros((len(rows), len(_KEYS)))
    for i, c in enumerate(rows):
        t, _ = _terms(c)
        for k, v in t.items():
            a[i, _KEYS.index(k)] = v
        a[i] /= c.measured_s
    x, *_ = np.linalg.lstsq(a, np.ones(len(rows)), rcond=None)
    return {"sleep_fixed_s": round(float(x[0]), 4), "wake_fixed_s": round(float(x[1]), 4),
            "pageable_bytes_per_s": float(f"{1.0 / x[3]:.3g}"), "pinned_efficiency": round(float(1.0 / x[2]), 3),
            "unpin_bytes_per_s": float(f"{1.0 / x[4]:.3g}"), "map_bytes_per_s": float(f"{1.0 / x[5]:.3g}")}


def switch_validation_rows() -> list[dict[str, Any]]:
    """Every switching measurement with its prediction: ``case``, ``predicted``, ``measured``,
    ``unit`` ("s"), ``error`` (predicted / measured - 1), ``in_fit``, ``source``, ``note``, a short
    ``label`` and ``part`` ("sleep" or "wake")."""
    out = []
    for c in CALIBRATION:
        p = _predict(c)
        out.append({"case": c.name, "label": c.label, "part": c.part, "predicted": p, "measured": c.measured_s,
                    "unit": "s", "error": p / c.measured_s - 1.0, "in_fit": c.fit, "source": c.source, "note": c.note})
    return out


def calibration_report() -> str:
    """The fitted constants and every row's residual, as text."""
    lines = ["switch fit: " + ", ".join(f"{k} {v:g}" for k, v in fit().items()),
             "error = predicted / measured - 1 (seconds; + means predicted above measured); fit: a row of the fit, "
             "check: held out"]
    for r in switch_validation_rows():
        lines.append(f"{r['error']:+7.1%}  predicted {r['predicted']:7.3f} s  measured {r['measured']:7.3f} s  "
                     f"{'fit ' if r['in_fit'] else 'check'}  {r['case']}  [{r['source']}]")
    return "\n".join(lines)


def table_rows() -> list[Any]:
    """The rows of :func:`switch_validation_rows` as :class:`rollsim.hardware.validation.Row` (area
    "switching") for ``rollsim validate --resources``."""
    from rollsim.hardware.rows import Row

    return [Row.from_prediction(r, quantity=f"{r['part']} s", area="switching") for r in switch_validation_rows()]
