"""Cluster files (TOML).

::

    topology = "relay"          # colocated | naive | parallel | relay | broadcast
    fanout = 1                  # relay: 1 = chain, 2 = binary tree
    pause_s = "all"             # optional: "all" | "pause_resume" | seconds (how much of the sync pauses)

    [model]
    preset = "deepseek-v3"      # or: params = 7e9, tensors = 300
    train_precision = "bf16"    # bf16 | fp16 | fp32 | fp8 | fp8:BLOCK
    infer_precision = "fp8:128"

    [train]                     # tp, pp, dp, ep, cp, fsdp
    [infer]                     # instances, tp, ep
    [hardware]                  # preset = "h100" and/or gpus_per_node, nvlink_bytes_per_s, ...
    [software]                  # preset = "ideal" | a stack of rollsim.sync.STACKS, and/or efficiency, ...
    [stack]                     # optional: preset = NAME and/or Stack fields (or stack = "NAME")

A file with ``[stack]`` or ``pause_s`` is a weight sync, not only a cluster: :func:`load_weight_sync`
reads it whole (what ``Scenario(weight_sync=...)`` takes); :func:`load_cluster` refuses it rather
than drop them.

A model that is not a preset is written as its tensor groups (``[model]`` with ``name`` and
``groups = [{ name = "...", count = N, elems = M, ... }, ...]``, the fields of
:class:`~rollsim.sync.TensorGroup`), so that :func:`cluster_to_dict` and :func:`cluster_from_dict`
round-trip every cluster. A file is read as scenario files are (:func:`rollsim.scenario_toml.read_toml`:
a UTF-8 byte-order mark skipped, directories and non-UTF-8 content refused, integers of more than
20 digits refused); unknown keys, wrong types and values out of range raise
:class:`~rollsim.ScenarioError` (a ``ValueError``) naming ``section.key`` and the allowed keys or
range.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from rollsim import _check, scenario_toml
from rollsim.errors import ScenarioError, invalid

from .cluster import (INT_BOUNDS, MAX_PARAMS, Cluster, Hardware, InferLayout, ModelSpec, Precision, SoftwareStack,
                      TensorGroup, TrainLayout)
from .presets import HARDWARE, MODELS, SOFTWARE
from .presets import model as preset_model

__all__ = ["load_cluster", "cluster_from_dict", "stack_from_dict", "cluster_to_dict", "stack_to_doc"]


def _fields(cls) -> dict:
    return {f.name: f for f in dataclasses.fields(cls)}


def _build(cls, section: str, d: dict, base=None, skip=("name", "source")):
    if not isinstance(d, dict):
        raise invalid(section, f"must be a table, got {type(d).__name__}")
    fs = _fields(cls)
    kw = {}
    for k, v in d.items():
        if k == "preset":
            continue
        if k not in fs or k in skip:
            names = [n for n in fs if n not in skip]
            hint = scenario_toml.did_you_mean(k, ["preset", *names])
            raise invalid(f"{section}.{k}", f"unknown key{hint} (allowed: preset, {', '.join(names)})")
        want = fs[k].type
        if want in ("bool",) and not isinstance(v, bool):
            raise invalid(f"{section}.{k}", f"must be true or false, got {v!r}")
        if want in ("int",) and (not isinstance(v, int) or isinstance(v, bool)):
            raise invalid(f"{section}.{k}", f"must be an integer, got {v!r}")
        if want in ("float",) and (not isinstance(v, (int, float)) or isinstance(v, bool)):
            raise invalid(f"{section}.{k}", f"must be a number, got {v!r}")
        if "tuple" in str(want) and isinstance(v, list):
            v = tuple(v)
        kw[k] = v  # the dataclass checks the range (an int too large for a float is out of range, not inf)
    missing = [f.name for f in fs.values() if f.init and f.name not in kw and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if base is None and missing:
        raise invalid(f"{section}.{missing[0]}", "is required")
    try:
        return dataclasses.replace(base, **kw) if base is not None else cls(**kw)
    except ScenarioError as e:  # a key of the table is named as the file has it: hardware.latency_s
        field, sep, rest = str(e).partition(": ")
        if sep and field in kw:
            raise invalid(f"{section}.{field}", rest) from None
        raise


def _preset(table: dict, presets: dict, section: str):
    name = table.get("preset")
    if name is None:
        return None
    from .stacks import STACKS

    allp = dict(presets)
    if section == "software":  # a fitted stack's efficiency and overheads (one model of real stacks)
        allp.update({k: st.software() for k, st in STACKS.items()})
    if section == "hardware" and isinstance(name, str) and name.lower() not in allp:
        from rollsim.hardware import specs

        from .cluster import Hardware

        # any accelerator of the shared registry, as its typical node
        known = {a.lower(): a for a in specs.ACCELERATORS}
        if name.lower() in known:
            return Hardware.from_accelerator(known[name.lower()])
        allp.update(known)
    if not isinstance(name, str) or name.lower() not in allp:
        raise invalid(f"{section}.preset", f"unknown preset {name!r}; known: {', '.join(sorted(allp))}")
    return allp[name.lower()]


def _precision(key: str, v: Any) -> Precision:
    if not isinstance(v, str):
        raise invalid(f"model.{key}", f"must be a string such as \"bf16\" or \"fp8:128\", got {v!r}")
    if v.lower() == "fp8:0":  # one scale per tensor (what precision_name writes for block 0)
        return Precision("fp8", 0)
    try:
        return Precision.parse(v)
    except ValueError as e:  # "precision: ..." named by its key
        raise invalid(f"model.{key}", str(e).removeprefix("precision: ")) from None


def precision_name(p: Precision) -> str:
    """The string :func:`cluster_from_dict` reads back as ``p``: ``"bf16"``, ``"fp8:128"``, ``"fp8:0"``."""
    return f"fp8:{p.block}" if p.name == "fp8" else p.name


_MODEL_KEYS = {"preset", "params", "tensors", "layers", "train_precision", "infer_precision"}
_SPEC_KEYS = {"name", "groups", "layers", "moe_layers", "top_k", "n_experts", "source", "train_precision",
              "infer_precision"}


def _model(m: dict) -> ModelSpec:
    if "groups" in m:  # a model written as its tensor groups (cluster_to_dict)
        for k in m:
            if k not in _SPEC_KEYS:
                hint = scenario_toml.did_you_mean(k, _SPEC_KEYS)
                raise invalid(f"model.{k}", f"unknown key with groups = [...]{hint} (allowed: "
                                            f"{', '.join(sorted(_SPEC_KEYS))})")
        gs = m["groups"]
        if not isinstance(gs, list) or not gs:
            raise invalid("model.groups", f"must be a non-empty list of tables, got {gs!r}")
        groups = tuple(_build(TensorGroup, f"model.groups[{i}]", g, skip=()) for i, g in enumerate(gs))
        kw: dict[str, Any] = {k: m[k] for k in ("layers", "moe_layers", "top_k", "n_experts") if k in m}
        for k in ("name", "source"):
            if k in m and not isinstance(m[k], str):
                raise invalid(f"model.{k}", f"must be a string, got {m[k]!r}")
        ints: dict[str, Any] = {k: _check.integer(f"model.{k}", v, *INT_BOUNDS[f"model.{k}"]) for k, v in kw.items()}
        model = ModelSpec(m.get("name", "custom"), groups, source=m.get("source", ""), **ints)
    else:
        for k in m:
            if k not in _MODEL_KEYS:
                hint = scenario_toml.did_you_mean(k, _MODEL_KEYS)
                raise invalid(f"model.{k}", f"unknown key{hint} (allowed: {', '.join(sorted(_MODEL_KEYS))})")
        if "preset" in m:
            if "params" in m or "tensors" in m:
                raise invalid("model.params", "give either a preset or params/tensors, not both")
            name = m["preset"]
            if not isinstance(name, str):
                raise invalid("model.preset", f"unknown preset {name!r}; known: {', '.join(sorted(MODELS))}")
            try:  # a sync preset, else a model of the shared registry (rollsim.hardware.specs)
                model = preset_model(name)
            except ValueError as e:
                raise invalid("model.preset", str(e).removeprefix("model: ")) from None
        elif "params" in m:
            p, t, layers = m["params"], m.get("tensors", 1000), m.get("layers", 1)
            p = _check.bounded("model.params", p, 1.0, MAX_PARAMS, "parameters")
            t = _check.integer("model.tensors", t, *INT_BOUNDS["model.groups.count"])
            layers = _check.integer("model.layers", layers, *INT_BOUNDS["model.groups.layers"])
            model = ModelSpec.dense("custom", p, n_tensors=t, layers=layers)
        else:
            raise invalid("model", "give preset = \"name\", params = N or groups = [...]")
    prec = {k: _precision(k, m[k]) for k in ("train_precision", "infer_precision") if k in m}
    return model.with_precision(prec.get("train_precision"), prec.get("infer_precision"))


def cluster_from_dict(d: dict) -> Cluster:
    """A :class:`Cluster` from a parsed TOML document (see the module docstring).

    Raises
    ------
    ScenarioError (ValueError)
        Unknown keys or presets, wrong types, values out of range (the message names ``section.key``).
    """
    allowed = {"topology", "fanout", "model", "train", "infer", "hardware", "software", "stack"}
    if not isinstance(d, dict):
        raise invalid("cluster", f"must be a table (dict) with a [model] table, got {type(d).__name__}")
    for k in d:
        if k not in allowed:
            hint = scenario_toml.did_you_mean(k, allowed)
            raise invalid(k, f"unknown key{hint} (allowed: {', '.join(sorted(allowed))})")
    m = d.get("model")
    if not isinstance(m, dict):
        raise invalid("model", "a [model] table is required (preset = ..., or params = ...)")
    model = _model(m)
    train = _build(TrainLayout, "train", d.get("train", {}))
    infer = _build(InferLayout, "infer", d.get("infer", {}))
    hw_t = d.get("hardware", {})
    hw = _build(Hardware, "hardware", hw_t, base=_preset(hw_t, HARDWARE, "hardware") if isinstance(hw_t, dict) else None)
    sw_t = d.get("software", {})
    sw = _build(SoftwareStack, "software", sw_t, skip=(),
                base=_preset(sw_t, SOFTWARE, "software") if isinstance(sw_t, dict) else None)
    topo = d.get("topology", "relay")
    fanout = d.get("fanout", 1)
    if not isinstance(fanout, int) or isinstance(fanout, bool):
        raise invalid("fanout", f"must be an integer, got {fanout!r}")
    from .cluster import TOPOLOGIES

    if topo not in TOPOLOGIES:  # the Cluster's own refusal, with the closest topology named
        return Cluster(model=model, topology=topo)
    return Cluster(model=model, train=train, infer=infer, hardware=hw, software=sw, topology=topo, fanout=fanout)


def _fields_of(x: Any) -> dict[str, Any]:
    return {f.name: (list(getattr(x, f.name)) if isinstance(getattr(x, f.name), tuple) else getattr(x, f.name))
            for f in dataclasses.fields(x) if f.init}


def _model_to_dict(m: ModelSpec) -> dict[str, Any]:
    prec = {"train_precision": precision_name(m.train_precision), "infer_precision": precision_name(m.infer_precision)}
    try:
        preset = preset_model(m.name)
    except ValueError:
        preset = None
    if preset is not None and preset.with_precision(m.train_precision, m.infer_precision) == m:
        return {"preset": m.name, **prec}
    out: dict[str, Any] = {"name": m.name, "groups": [_fields_of(g) for g in m.groups]}
    out.update({k: getattr(m, k) for k in ("layers", "moe_layers", "top_k", "n_experts", "source")})
    return {**out, **prec}


def cluster_to_dict(cluster: Cluster) -> dict[str, Any]:
    """The cluster-file document of ``cluster`` (every field written; a preset model by its name):
    ``cluster_from_dict(cluster_to_dict(c)) == c``.

    Raises
    ------
    ScenarioError (ValueError)
        ``cluster`` is not a Cluster.
    """
    if not isinstance(cluster, Cluster):
        raise invalid("cluster", f"must be a rollsim.sync.Cluster, got {type(cluster).__name__}")
    return {"topology": cluster.topology, "fanout": cluster.fanout, "model": _model_to_dict(cluster.model),
            "train": _fields_of(cluster.train), "infer": _fields_of(cluster.infer),
            "hardware": _fields_of(cluster.hardware), "software": _fields_of(cluster.software)}


def stack_to_doc(st: Any) -> str | dict[str, Any]:
    """The ``stack`` of a cluster document: the name of a :data:`rollsim.sync.stacks.STACKS` entry
    equal to ``st``, else a table of every field (``stack_from_dict`` reads both back)."""
    from .stacks import STACKS

    if STACKS.get(st.name) == st:
        return str(st.name)
    return _fields_of(st)


def stack_from_dict(d: dict):
    """The ``stack`` of a cluster document, or None: a name of :data:`rollsim.sync.stacks.STACKS`
    (``stack = "nemo-rl-reshard"``) or a ``[stack]`` table with ``preset = NAME`` and/or fields of
    :class:`rollsim.sync.stacks.Stack` (``transport`` is required without a preset).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown stack or key, a wrong type or a value out of range (named ``stack.<key>``).
    """
    from .stacks import STACKS, Stack

    t = d.get("stack") if isinstance(d, dict) else None
    if t is None:
        return None
    names = ", ".join(STACKS)
    if isinstance(t, str):
        if t.lower() not in STACKS:
            raise invalid("stack", f"unknown stack {t!r}; known: {names}")
        return STACKS[t.lower()]
    if not isinstance(t, dict):
        raise invalid("stack", f"must be a stack name or a [stack] table, got {type(t).__name__}")
    base = None
    if "preset" in t:
        p = t["preset"]
        if not isinstance(p, str) or p.lower() not in STACKS:
            raise invalid("stack.preset", f"unknown stack {p!r}; known: {names}")
        base = STACKS[p.lower()]
    elif "transport" not in t:
        raise invalid("stack.transport", "give preset = NAME or transport = ...")
    t = dict(t)
    if "name" not in t and base is None:
        t["name"] = "custom"
    return _build(Stack, "stack", t, base=base, skip=())


def load_cluster(path: str | Path) -> Cluster:
    """Reads a cluster TOML file with the checks of scenario files
    (:func:`rollsim.scenario_toml.read_toml`, integers of at most 20 digits). A file with a
    ``stack`` or ``pause_s`` is refused (a Cluster holds neither): read it with
    :func:`load_weight_sync`.

    Raises
    ------
    FileNotFoundError
        No such file.
    ScenarioError (ValueError)
        Not a readable UTF-8 TOML file, bad content (naming ``section.key``), or a ``stack`` or
        ``pause_s`` (use :func:`load_weight_sync`).
    OSError
        The file cannot be read.
    """
    doc = scenario_toml.read_toml(path, "cluster file")
    scenario_toml.check_integers("", doc)
    for key in ("stack", "pause_s"):
        if key in doc:  # a Cluster has neither: refused, never dropped
            raise invalid(key, "must be absent for load_cluster, which returns a Cluster (no stack, no pause_s): "
                               f"the file's {key} would be lost; read the file with "
                               "rollsim.sync.load_weight_sync(path) (the WeightSync that Scenario(weight_sync=...) "
                               "takes: .cluster, .stack, .pause_s), or remove the key")
    return cluster_from_dict(doc)
