"""Cluster files (TOML).

::

    topology = "relay"          # colocated | naive | parallel | relay | broadcast
    fanout = 1                  # relay: 1 = chain, 2 = binary tree

    [model]
    preset = "deepseek-v3"      # or: params = 7e9, tensors = 300
    train_precision = "bf16"    # bf16 | fp16 | fp32 | fp8 | fp8:BLOCK
    infer_precision = "fp8:128"

    [train]                     # tp, pp, dp, ep, cp, fsdp
    [infer]                     # instances, tp, ep
    [hardware]                  # preset = "h100" and/or gpus_per_node, nvlink_bytes_per_s, ...
    [software]                  # preset = "ideal" | a calibrated stack, and/or efficiency, ...

Unknown keys raise ``ValueError`` naming the key.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

from rollsim import _check

from .cluster import (INT_BOUNDS, MAX_PARAMS, Cluster, Hardware, InferLayout, ModelSpec, Precision, SoftwareStack,
                      TrainLayout)
from .presets import HARDWARE, MODELS, SOFTWARE
from .presets import model as preset_model

__all__ = ["load_cluster", "cluster_from_dict", "stack_from_dict"]


def _fields(cls) -> dict:
    return {f.name: f for f in dataclasses.fields(cls)}


def _build(cls, section: str, d: dict, base=None, skip=("name", "source")):
    if not isinstance(d, dict):
        raise ValueError(f"{section}: must be a table, got {type(d).__name__}")
    fs = _fields(cls)
    kw = {}
    for k, v in d.items():
        if k == "preset":
            continue
        if k not in fs or k in skip:
            allowed = ", ".join(n for n in fs if n not in skip)
            raise ValueError(f"{section}.{k}: unknown key; allowed: preset, {allowed}")
        want = fs[k].type
        if want in ("bool",) and not isinstance(v, bool):
            raise ValueError(f"{section}.{k}: must be true or false, got {v!r}")
        if want in ("int",) and (not isinstance(v, int) or isinstance(v, bool)):
            raise ValueError(f"{section}.{k}: must be an integer, got {v!r}")
        if want in ("float",) and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise ValueError(f"{section}.{k}: must be a number, got {v!r}")
        kw[k] = v  # the dataclass checks the range (an int too large for a float is out of range, not inf)
    return dataclasses.replace(base, **kw) if base is not None else cls(**kw)


def _preset(table: dict, presets: dict, section: str):
    name = table.get("preset")
    if name is None:
        return None
    from . import calibration  # calibrated stacks register themselves

    allp = dict(presets)
    if section == "software":
        allp.update(calibration.STACKS)
    if section == "hardware" and isinstance(name, str) and name.lower() not in allp:
        from rollsim.hardware import specs

        from .cluster import Hardware

        # any accelerator of the shared registry, as its typical node
        known = {a.lower(): a for a in specs.ACCELERATORS}
        if name.lower() in known:
            return Hardware.from_accelerator(known[name.lower()])
        allp.update(known)
    if not isinstance(name, str) or name.lower() not in allp:
        raise ValueError(f"{section}.preset: unknown preset {name!r}; known: {', '.join(sorted(allp))}")
    return allp[name.lower()]


def cluster_from_dict(d: dict) -> Cluster:
    """A :class:`Cluster` from a parsed TOML document (see the module docstring).

    Raises
    ------
    ValueError
        Unknown keys or presets, wrong types (the message names ``section.key``).
    """
    allowed = {"topology", "fanout", "model", "train", "infer", "hardware", "software", "stack"}
    if not isinstance(d, dict):
        raise ValueError(f"cluster: must be a table (dict) with a [model] table, got {type(d).__name__}")
    for k in d:
        if k not in allowed:
            raise ValueError(f"{k}: unknown key; allowed: {', '.join(sorted(allowed))}")
    m = d.get("model")
    if not isinstance(m, dict):
        raise ValueError("model: a [model] table is required (preset = ..., or params = ...)")
    mkeys = {"preset", "params", "tensors", "layers", "train_precision", "infer_precision"}
    for k in m:
        if k not in mkeys:
            raise ValueError(f"model.{k}: unknown key; allowed: {', '.join(sorted(mkeys))}")
    if "preset" in m:
        if "params" in m or "tensors" in m:
            raise ValueError("model.params: give either a preset or params/tensors, not both")
        name = m["preset"]
        if not isinstance(name, str):
            raise ValueError(f"model.preset: unknown preset {name!r}; known: {', '.join(sorted(MODELS))}")
        try:  # a sync preset, else a model of the shared registry (rollsim.hardware.specs)
            model: ModelSpec = preset_model(name)
        except ValueError as e:
            raise ValueError(f"model.preset: {str(e).removeprefix('model: ')}") from None
    elif "params" in m:
        p, t, layers = m["params"], m.get("tensors", 1000), m.get("layers", 1)
        p = _check.bounded("model.params", p, 1.0, MAX_PARAMS, "parameters")
        t = _check.integer("model.tensors", t, *INT_BOUNDS["model.groups.count"])
        layers = _check.integer("model.layers", layers, *INT_BOUNDS["model.groups.layers"])
        model = ModelSpec.dense("custom", p, n_tensors=t, layers=layers)
    else:
        raise ValueError("model: give preset = \"name\" or params = N")
    for key in ("train_precision", "infer_precision"):
        if key in m and not isinstance(m[key], str):
            raise ValueError(f"model.{key}: must be a string such as \"bf16\" or \"fp8:128\", got {m[key]!r}")
    for key in ("train_precision", "infer_precision"):
        if key in m:
            try:
                Precision.parse(m[key])
            except ValueError as e:  # "precision: ..." named by its key
                raise ValueError(f"model.{key}: {str(e).removeprefix('precision: ')}") from None
    model = model.with_precision(m.get("train_precision"), m.get("infer_precision"))
    train = _build(TrainLayout, "train", d.get("train", {}))
    infer = _build(InferLayout, "infer", d.get("infer", {}))
    hw_t = d.get("hardware", {})
    hw = _build(Hardware, "hardware", hw_t, base=_preset(hw_t, HARDWARE, "hardware") if isinstance(hw_t, dict) else None)
    sw_t = d.get("software", {})
    sw = _build(SoftwareStack, "software", sw_t, base=_preset(sw_t, SOFTWARE, "software") if isinstance(sw_t, dict) else None)
    topo = d.get("topology", "relay")
    fanout = d.get("fanout", 1)
    if not isinstance(fanout, int) or isinstance(fanout, bool):
        raise ValueError(f"fanout: must be an integer, got {fanout!r}")
    from .cluster import TOPOLOGIES

    if topo not in TOPOLOGIES:
        raise ValueError(f"topology: must be one of {', '.join(TOPOLOGIES)}, got {topo!r}")
    return Cluster(model=model, train=train, infer=infer, hardware=hw, software=sw, topology=topo, fanout=fanout)


def stack_from_dict(d: dict):
    """The ``stack`` of a cluster document, or None: a name of :data:`rollsim.sync.stacks.STACKS`
    (``stack = "nemo-rl-reshard"``) or a ``[stack]`` table with ``preset = NAME`` and/or fields of
    :class:`rollsim.sync.stacks.Stack` (``transport`` is required without a preset).

    Raises
    ------
    ValueError
        An unknown stack or key, a wrong type or a value out of range (named ``stack.<key>``).
    """
    from .stacks import STACKS, Stack

    t = d.get("stack") if isinstance(d, dict) else None
    if t is None:
        return None
    names = ", ".join(STACKS)
    if isinstance(t, str):
        if t.lower() not in STACKS:
            raise ValueError(f"stack: unknown stack {t!r}; known: {names}")
        return STACKS[t.lower()]
    if not isinstance(t, dict):
        raise ValueError(f"stack: must be a stack name or a [stack] table, got {type(t).__name__}")
    base = None
    if "preset" in t:
        p = t["preset"]
        if not isinstance(p, str) or p.lower() not in STACKS:
            raise ValueError(f"stack.preset: unknown stack {p!r}; known: {names}")
        base = STACKS[p.lower()]
    elif "transport" not in t:
        raise ValueError("stack.transport: give preset = NAME or transport = ...")
    t = {k: (tuple(v) if k == "plan_groups" and isinstance(v, list) else v) for k, v in t.items()}
    if "name" not in t and base is None:
        t["name"] = "custom"
    return _build(Stack, "stack", t, base=base, skip=("source", "calibrated_on"))


def load_cluster(path: str | Path) -> Cluster:
    """Reads a cluster TOML file. Raises ``ValueError`` (bad content, naming the key) or
    ``OSError`` (unreadable file)."""
    with open(path, "rb") as f:
        try:
            d = tomllib.load(f)
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: not valid TOML ({e})") from None
    return cluster_from_dict(d)
