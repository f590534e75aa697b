"""Model, layout, hardware and software descriptions for the weight-sync estimator.

All classes are frozen dataclasses; units are in the field names (``_bytes_per_s``, ``_s``,
``_bytes``). Every numeric field is checked on construction against a documented range
(:data:`BOUNDS`, :data:`INT_BOUNDS`) chosen so that any accepted cluster gives a finite estimate
and breakdown; the Rust core checks the same ranges again (with the same messages). Every error is
a :class:`~rollsim.ScenarioError` (a ``ValueError``) whose message starts with the field's name,
e.g. ``nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from rollsim import _check
from rollsim.errors import invalid
from rollsim._text import closest

__all__ = [
    "Precision",
    "TensorGroup",
    "ModelSpec",
    "TrainLayout",
    "InferLayout",
    "Hardware",
    "SoftwareStack",
    "Cluster",
    "BF16",
    "FP8_BLOCK128",
    "TOPOLOGIES",
]

TOPOLOGIES = ("colocated", "naive", "parallel", "relay", "broadcast")

#: Range and unit of every real-valued field (the Rust core, ``rollsim_core::sync``, checks the same):
#: bandwidths from 1 kB/s to 1 PB/s, efficiencies from 1e-6, seconds up to 1e6 (11.6 days), buckets
#: from 1 kB to 1 PB. With tensor counts and sizes bounded too (:data:`INT_BOUNDS`), every term
#: of an estimate stays far below the float range (bytes / bandwidth < 1e40 s).
BOUNDS: dict[str, tuple[float, float, str]] = {
    "nvlink_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "nic_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "pcie_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "latency_s": (0.0, 1e6, "seconds"),
    "efficiency": (1e-6, 1.0, ""),
    "per_tensor_s": (0.0, 1e6, "seconds"),
    "per_bucket_s": (0.0, 1e6, "seconds"),
    "per_update_s": (0.0, 1e6, "seconds"),
    "bucket_bytes": (1e3, 1e15, "bytes"),
    "quant_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "pause_resume_s": (0.0, 1e6, "seconds"),
}
#: Range of every integer field, by its name in messages.
INT_BOUNDS: dict[str, tuple[int, int]] = {
    "model.groups.count": (1, 2**24),
    "model.groups.elems": (1, 2**50),
    "model.groups.n_experts": (0, 65536),
    "model.groups.layers": (1, 65536),
    "model.layers": (0, 65536),
    "model.moe_layers": (0, 65536),
    "model.top_k": (0, 65536),
    "model.n_experts": (0, 65536),
    "train.tp": (1, 65536), "train.pp": (1, 65536), "train.dp": (1, 65536), "train.ep": (1, 65536),
    "train.cp": (1, 65536),
    "infer.instances": (1, 65536), "infer.tp": (1, 65536), "infer.ep": (1, 65536),
    "gpus_per_node": (1, 1024),
    "gpus_per_host_link": (1, 1024),
    "fanout": (1, 1024),
}
#: Largest ``n_params`` of :meth:`ModelSpec.dense` (and ``params`` of a cluster file).
MAX_PARAMS = 1e15


def _real(obj: Any, name: str) -> None:
    lo, hi, unit = BOUNDS[name]
    object.__setattr__(obj, name, _check.bounded(name, getattr(obj, name), lo, hi, unit))


def _int(obj: Any, prefix: str, name: str) -> None:
    lo, hi = INT_BOUNDS[prefix + name]
    object.__setattr__(obj, name, _check.integer(prefix + name, getattr(obj, name), lo, hi))


def _flag(obj: Any, prefix: str, name: str) -> None:
    object.__setattr__(obj, name, _check.flag(prefix + name, getattr(obj, name)))


@dataclass(frozen=True)
class Precision:
    """A weight format.

    Parameters
    ----------
    name : str
        ``"bf16"``, ``"fp16"``, ``"fp32"`` or ``"fp8"``.
    block : int
        For ``"fp8"``: the side ``b`` of the ``b x b`` quantization blocks (one FP32 scale per
        block, DeepSeek-V3's format uses 128), or 0 for one scale per tensor (1 byte per element);
        0 for unquantized formats.
    """

    name: str = "bf16"
    block: int = 0

    def __post_init__(self) -> None:
        if self.name not in ("bf16", "fp16", "fp32", "fp8"):
            raise ValueError(f"precision: must be one of 'bf16', 'fp16', 'fp32', 'fp8', got {self.name!r}")
        if self.name == "fp8":
            if not (isinstance(self.block, int) and 0 <= self.block <= 4096):
                raise invalid("precision.block", f"must be an int in [0, 4096] for fp8, got {_check.show(self.block)}")
        elif self.block != 0:
            raise ValueError(f"precision.block: only fp8 takes a block size, got {self.block!r} for {self.name}")

    @property
    def bytes_per_elem(self) -> float:
        """Bytes per element, including the per-block FP32 scale for FP8 (``1 + 4 / b**2``)."""
        return {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0}.get(self.name, 1.0 + 4.0 / self.block**2 if self.block else 1.0)

    @property
    def align_elems(self) -> int:
        """Slices must hold whole blocks: ``b * b`` elements for FP8, else 1."""
        return self.block * self.block if self.name == "fp8" and self.block else 1

    @classmethod
    def parse(cls, s: str) -> Precision:
        """``"bf16"``, ``"fp8"`` (128 x 128 blocks) or ``"fp8:64"``; ValueError otherwise."""
        if not isinstance(s, str):
            raise ValueError(f"precision: expected a string like 'bf16' or 'fp8:128', got {s!r}")
        name, colon, blk = s.lower().partition(":")
        if name == "fp8":
            if not colon:
                return cls("fp8", 128)
            if not blk.isdigit() or int(blk) < 1:
                raise ValueError(f"precision: the block size after 'fp8:' must be a positive integer, got {s!r}")
            return cls("fp8", int(blk))
        if colon:
            raise ValueError(f"precision: only fp8 takes a block size, got {s!r}")
        return cls(name)


BF16 = Precision("bf16")
FP8_BLOCK128 = Precision("fp8", 128)


@dataclass(frozen=True)
class TensorGroup:
    """``count`` identical tensors of ``elems`` elements.

    Parameters
    ----------
    name : str
        Label (e.g. ``"experts.down_proj"``).
    count : int
        Number of tensors, in [1, 2**24].
    elems : int
        Elements per tensor, in [1, 2**50].
    n_experts : int
        In [0, 65536]: 0 for dense tensors; else the number of experts the tensors are spread over (layer-major
        order: within a layer, consecutive tensors belong to consecutive experts).
    layers : int
        Number of layers the group spans (decides each tensor's pipeline stage), in [1, 65536].
    replicated : bool
        Tensors that no layout shards (norms, router): every rank needs them whole.
    quantized : bool
        Linear weights that FP8 formats quantize; in an FP8 model each adds a scale tensor to the
        tensor count.
    """

    name: str
    count: int
    elems: int
    n_experts: int = 0
    layers: int = 1
    replicated: bool = False
    quantized: bool = True

    def __post_init__(self) -> None:
        for name in ("count", "elems", "n_experts", "layers"):
            _int(self, "model.groups.", name)
        for name in ("replicated", "quantized"):
            _flag(self, "model.groups.", name)


@dataclass(frozen=True)
class ModelSpec:
    """A model as tensor groups, with its training and inference precisions.

    ``n_params`` and ``n_tensors`` are derived. FP8 scale tensors (one per quantized tensor) are
    counted as tensors (they cost per-tensor overhead); their bytes are in
    ``Precision.bytes_per_elem``.
    """

    name: str
    groups: tuple[TensorGroup, ...]
    train_precision: Precision = BF16
    infer_precision: Precision = BF16
    #: num_hidden_layers (the layer axis of the engines' routed-experts array) and MoE routing
    #: (for routing replay); 0 for dense models.
    layers: int = 0
    moe_layers: int = 0
    top_k: int = 0
    n_experts: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        groups = self.groups
        if isinstance(groups, (str, bytes)) or not hasattr(groups, "__iter__"):
            raise invalid("model.groups", f"must be a sequence of TensorGroup, got {type(groups).__name__}")
        groups = tuple(groups)
        if not groups or not all(isinstance(g, TensorGroup) for g in groups):
            raise invalid("model.groups", f"must be a non-empty sequence of TensorGroup, got {groups!r}")
        object.__setattr__(self, "groups", groups)
        for name in ("train_precision", "infer_precision"):
            if not isinstance(getattr(self, name), Precision):
                raise invalid(f"model.{name}", f"must be a Precision, got {getattr(self, name)!r}")
        for name in ("layers", "moe_layers", "top_k", "n_experts"):
            _int(self, "model.", name)

    @property
    def n_params(self) -> int:
        """Number of parameters (elements)."""
        return sum(g.count * g.elems for g in self.groups)

    @property
    def n_tensors(self) -> int:
        """Number of tensors in the inference checkpoint (including FP8 scale tensors)."""
        n = sum(g.count for g in self.groups)
        if self.infer_precision.name == "fp8":
            n += sum(g.count for g in self.groups if g.quantized)
        return n

    @property
    def infer_bytes(self) -> float:
        """Bytes of one full copy in the inference format."""
        return self.n_params * self.infer_precision.bytes_per_elem

    def with_precision(self, train: Precision | str | None = None, infer: Precision | str | None = None) -> ModelSpec:
        """A copy with other precisions (strings as in :meth:`Precision.parse`)."""
        t = Precision.parse(train) if isinstance(train, str) else train
        i = Precision.parse(infer) if isinstance(infer, str) else infer
        return replace(self, train_precision=t or self.train_precision, infer_precision=i or self.infer_precision)

    def to_dict(self, plan_groups: tuple[str, ...] = ()) -> dict:
        """The config dict for the Rust core. With ``plan_groups``, only the groups named there
        travel along the re-sharding plan; the others (and every FP8 scale tensor) are marked
        ``broadcast`` (sent whole to every inference rank)."""
        split = bool(plan_groups)
        groups = [
            dict(count=g.count, elems=g.elems, n_experts=g.n_experts, layers=g.layers, replicated=g.replicated,
                 broadcast=split and g.name not in plan_groups)
            for g in self.groups
        ]
        if self.infer_precision.name == "fp8":
            # scale tensors: counted for the per-tensor cost, negligible bytes (already in bytes_per_elem)
            groups += [
                dict(count=g.count, elems=1, n_experts=g.n_experts, layers=g.layers, replicated=False, broadcast=split)
                for g in self.groups
                if g.quantized
            ]
        return dict(
            groups=groups,
            infer_bytes_per_elem=self.infer_precision.bytes_per_elem,
            train_bytes_per_elem=self.train_precision.bytes_per_elem,
            align_elems=self.infer_precision.align_elems,
        )

    @classmethod
    def dense(cls, name: str, n_params: float, n_tensors: int = 1000, layers: int = 1, **kw) -> ModelSpec:
        """A model known only by its size: ``n_tensors`` equal dense tensors (in [1, 2**24]) holding
        ``n_params`` (in [1, 1e15]) parameters, over ``layers`` layers (in [1, 65536])."""
        p = _check.bounded("n_params", n_params, 1.0, MAX_PARAMS, "parameters")
        t = _check.integer("n_tensors", n_tensors, *INT_BOUNDS["model.groups.count"])
        lyr = _check.integer("layers", layers, *INT_BOUNDS["model.groups.layers"])
        elems = max(1, round(p / t))
        return cls(name, (TensorGroup("weights", t, int(elems), layers=lyr),), **kw)


@dataclass(frozen=True)
class TrainLayout:
    """Training-side parallelism (Megatron convention: ``tp * cp * pp * dp`` GPUs; experts over
    ``ep`` ranks carved out of each stage's ``tp * cp * dp`` ranks; ``fsdp``: DP replicas shard
    instead of copying). Each size in [1, 65536]; the Rust core also checks ``ep`` divides
    ``tp * cp * dp`` and ``tp * cp * pp * dp <= 2**20``.

    Context parallelism (``cp``) splits sequences, not weights: the ``cp`` ranks of a model shard
    hold the same weights, so for the sync they are further copies to send from (like DP
    replicas); the plan counts them as such. Each pipeline stage's first rank (its head rank:
    ``tp``, ``cp`` and ``dp`` rank 0) is the sender of designs where only stage heads send
    (:class:`~rollsim.sync.stacks.Stack` ``senders="stage_heads"``)."""

    tp: int = 1
    pp: int = 1
    dp: int = 1
    ep: int = 1
    fsdp: bool = False
    cp: int = 1

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dp", "ep", "cp"):
            _int(self, "train.", name)
        _flag(self, "train.", "fsdp")

    @property
    def gpus(self) -> int:
        return self.tp * self.cp * self.pp * self.dp

    @property
    def head_ranks(self) -> tuple[int, ...]:
        """The head rank of each pipeline stage (global ranks, stage-major order)."""
        per_stage = self.tp * self.cp * self.dp
        return tuple(s * per_stage for s in range(self.pp))


@dataclass(frozen=True)
class InferLayout:
    """Inference side: ``instances`` engines of ``tp`` GPUs; experts over ``ep`` groups of
    ``tp / ep`` GPUs (``ep == tp``: vLLM/SGLang expert parallelism). Each in [1, 65536]; the Rust core
    also checks ``ep`` divides ``tp`` and ``instances * tp <= 2**20``."""

    instances: int = 1
    tp: int = 8
    ep: int = 1

    def __post_init__(self) -> None:
        for name in ("instances", "tp", "ep"):
            _int(self, "infer.", name)

    @property
    def gpus(self) -> int:
        return self.instances * self.tp


@dataclass(frozen=True)
class Hardware:
    """Links, per GPU and per direction.

    Defaults: H100/H200 class (NVLink 4: 450 GB/s per direction; one 400 Gb/s NIC per GPU:
    50 GB/s; PCIe Gen5 x16 about 50 GB/s; NCCL inter-node alpha about 50 us per call): NVIDIA's
    H100 / H200 specifications (NVLink 900 GB/s bidirectional) and typical NCCL latencies.

    ``pcie_bytes_per_s`` is a GPU's host link and the uplink of the PCIe switch it sits behind;
    ``gpus_per_host_link`` GPUs sit behind one such uplink (1: each GPU has its own; 2 on an 8-GPU
    HGX A100 board, ``rollsim.hardware.specs.Accelerator.gpus_per_host_link`` and its sources). The
    GPUs of a node that copy to or from the host at once (the senders' H2D stage of
    ``source_on_host``, a stack's ``staging_copies``) split it: each copies over
    ``pcie_bytes_per_s / min(gpus_per_host_link, GPUs of its node copying)``, as
    :func:`rollsim.hardware.switching.host_link_share`.

    Ranges: ``gpus_per_node`` and ``gpus_per_host_link`` in [1, 1024]; bandwidths in [1e3, 1e15]
    bytes/s; ``latency_s`` in [0, 1e6] seconds.
    """

    gpus_per_node: int = 8
    nvlink_bytes_per_s: float = 450e9
    nic_bytes_per_s: float = 50e9
    pcie_bytes_per_s: float = 50e9
    latency_s: float = 50e-6
    colocated: bool = False
    gpus_per_host_link: int = 1

    def __post_init__(self) -> None:
        _int(self, "", "gpus_per_node")
        _int(self, "", "gpus_per_host_link")
        for name in ("nvlink_bytes_per_s", "nic_bytes_per_s", "pcie_bytes_per_s", "latency_s"):
            _real(self, name)
        _flag(self, "", "colocated")

    def host_link_share(self, copying: float) -> float:
        """Bytes/s one GPU copies to or from the host over while ``copying`` GPUs copy at once,
        placed in order on nodes of ``gpus_per_node``: ``pcie_bytes_per_s / min(gpus_per_host_link,
        GPUs of its node copying)``, exactly ``pcie_bytes_per_s`` when no GPU shares its uplink (the
        Rust core's H2D stage, ``Hardware::host_link_share``, is the same)."""
        share = max(1.0, math.floor(min(float(self.gpus_per_host_link), max(1.0, min(copying, self.gpus_per_node)))))
        return float(self.pcie_bytes_per_s) if share == 1.0 else self.pcie_bytes_per_s / share

    @classmethod
    def from_accelerator(cls, name: Any, **overrides: Any) -> Hardware:
        """The links of an accelerator of the shared registry (:mod:`rollsim.hardware.specs`).

        Parameters
        ----------
        name : str or rollsim.hardware.specs.Accelerator
            An accelerator name or alias (``"H100"``, ``"h20"``, ``"MI300X"``, ...).
        **overrides
            Fields of :class:`Hardware` that differ in the deployment (e.g. ``nic_bytes_per_s``
            for nodes with fewer NICs than the typical node, ``gpus_per_node`` for an NVLink domain
            larger than a node).

        Returns
        -------
        Hardware
            ``nvlink_bytes_per_s`` = the scale-up link, ``nic_bytes_per_s`` = the scale-out NIC,
            ``pcie_bytes_per_s`` = the host link, all per device and per direction;
            ``gpus_per_node`` = the accelerator's node size, ``gpus_per_host_link`` = the GPUs
            sharing one host uplink in that node (2 for A100 / A800: an HGX A100 board's PCIe
            switches); then ``overrides``.

        Raises
        ------
        rollsim.ScenarioError
            An unknown accelerator (the message lists the known ones), or an override out of range.
        """
        from rollsim.hardware import specs

        a = specs.accelerator(name)
        kw: dict[str, Any] = dict(gpus_per_node=a.gpus_per_node, nvlink_bytes_per_s=a.scale_up_bytes_per_s,
                                  nic_bytes_per_s=a.nic_bytes_per_s, pcie_bytes_per_s=a.host_link_bytes_per_s,
                                  gpus_per_host_link=a.gpus_per_host_link)
        kw.update(overrides)
        return cls(**kw)


@dataclass(frozen=True)
class SoftwareStack:
    """Achieved efficiency and overheads of a weight-sync implementation.

    Parameters
    ----------
    name : str
    efficiency : float
        Achieved fraction of link bandwidth, in [1e-6, 1].
    per_tensor_s, per_bucket_s, per_update_s : float
        Seconds per tensor loaded by the engine, per bucket (update call / IPC round trip), and per
        update (RPCs, barriers), each in [0, 1e6].
    bucket_bytes : float
        Bucket (and relay chunk buffer) size in bytes, in [1e3, 1e15].
    quant_bytes_per_s : float
        Quantization throughput per GPU (input bytes per second), in [1e3, 1e15].
    pause_resume_s : float
        Pausing and resuming generation, clearing caches, seconds in [0, 1e6].
    overlap_stages : bool
        Pipeline the per-bucket stages (H2D, quantize, transfer, load).
    source_on_host : bool
        Weights start in host memory (adds an H2D stage over PCIe).
    plan_groups : tuple of str
        ``parallel`` topology only: names of the tensor groups that travel along the
        re-sharding plan; every other group (and every FP8 scale tensor) is sent whole to every
        inference GPU by one packed broadcast after the plan (NeMo-RL ``nccl_reshard_refit``:
        ``("mlp.dense_proj", "mlp.experts")``, its "bulk" and "misc" paths). Empty: everything
        along the plan. Other topologies ignore it.
    grouped_experts : bool
        The receiving engine takes each layer's experts as one tensor per projection (NeMo-RL's
        grouped expert entries, vLLM's fused ``w13``/``w2``): in the per-rank tensor count an
        inference rank handles one expert tensor per (layer, projection); senders still handle
        their local experts one by one.

    ``per_tensor_s`` is charged per tensor on the busiest rank: for ``parallel``, the largest
    number of tensors one rank sends or receives along the plan, plus the broadcast tensors
    (``Estimate.tensors_charged``); for the other topologies every tensor of the model.
    """

    name: str = "ideal"
    efficiency: float = 1.0
    per_tensor_s: float = 0.0
    per_bucket_s: float = 0.0
    per_update_s: float = 0.0
    bucket_bytes: float = 1e9
    quant_bytes_per_s: float = 1e12
    pause_resume_s: float = 0.0
    overlap_stages: bool = True
    source_on_host: bool = False
    plan_groups: tuple[str, ...] = ()
    grouped_experts: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("efficiency", "per_tensor_s", "per_bucket_s", "per_update_s", "bucket_bytes",
                     "quant_bytes_per_s", "pause_resume_s"):
            _real(self, name)
        for name in ("overlap_stages", "source_on_host", "grouped_experts"):
            _flag(self, "", name)
        pg = self.plan_groups
        if isinstance(pg, str) or not all(isinstance(x, str) for x in pg):
            raise ValueError(f"plan_groups: must be a list of tensor-group names, got {pg!r}")
        object.__setattr__(self, "plan_groups", tuple(pg))


@dataclass(frozen=True)
class Cluster:
    """Everything an estimate needs: model, both layouts, hardware, software, topology.

    ``topology`` is one of ``"colocated"``, ``"naive"``, ``"parallel"``, ``"relay"``,
    ``"broadcast"``; ``fanout`` is the relay's fanout (1 = chain, 2 = binary tree), in [1, 1024].
    """

    model: ModelSpec
    train: TrainLayout = field(default_factory=TrainLayout)
    infer: InferLayout = field(default_factory=InferLayout)
    hardware: Hardware = field(default_factory=Hardware)
    software: SoftwareStack = field(default_factory=SoftwareStack)
    topology: str = "relay"
    fanout: int = 1

    def __post_init__(self) -> None:
        for name, cls in (("model", ModelSpec), ("train", TrainLayout), ("infer", InferLayout), ("hardware", Hardware),
                          ("software", SoftwareStack)):
            if not isinstance(getattr(self, name), cls):
                how = {"model": " (rollsim.sync.model(name) builds one: rollsim.sync.MODELS or a model of "
                                "rollsim.hardware.specs)",
                       "hardware": " (rollsim.sync.Hardware.from_accelerator(name) builds one from an accelerator)"}
                given = getattr(self, name)
                hint = how.get(name, "") if isinstance(given, str) else ""
                raise invalid(name, f"must be a {cls.__name__}, got {type(given).__name__}{hint}")
        if self.topology not in TOPOLOGIES:
            near = closest(str(self.topology), list(TOPOLOGIES), 0.75)
            raise invalid("topology", f"must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}"
                          + (f"; did you mean {near!r}?" if near else ""))
        _int(self, "", "fanout")

    def replace(self, **kw) -> Cluster:
        """A copy with some fields changed (``dataclasses.replace``)."""
        return replace(self, **kw)

    def to_dict(self) -> dict:
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"topology: must be one of {', '.join(TOPOLOGIES)}, got {self.topology!r}")
        h, s = self.hardware, self.software
        # only `parallel` splits the tensors between the plan and a broadcast; the other topologies
        # move every tensor the same way
        return dict(
            model=self.model.to_dict(s.plan_groups if self.topology == "parallel" else ()),
            # CP ranks hold the same weights as DP replicas: the plan sees dp * cp copies
            train=dict(tp=self.train.tp, pp=self.train.pp, dp=self.train.dp * self.train.cp, ep=self.train.ep,
                       fsdp=bool(self.train.fsdp)),
            infer=dict(instances=self.infer.instances, tp=self.infer.tp, ep=self.infer.ep),
            hardware=dict(
                gpus_per_node=h.gpus_per_node,
                nvlink_bytes_per_s=float(h.nvlink_bytes_per_s),
                nic_bytes_per_s=float(h.nic_bytes_per_s),
                pcie_bytes_per_s=float(h.pcie_bytes_per_s),
                gpus_per_host_link=h.gpus_per_host_link,
                latency_s=float(h.latency_s),
                colocated=bool(h.colocated),
            ),
            software=dict(
                efficiency=float(s.efficiency),
                per_tensor_s=float(s.per_tensor_s),
                per_bucket_s=float(s.per_bucket_s),
                per_update_s=float(s.per_update_s),
                bucket_bytes=float(s.bucket_bytes),
                quant_bytes_per_s=float(s.quant_bytes_per_s),
                pause_resume_s=float(s.pause_resume_s),
                overlap_stages=bool(s.overlap_stages),
                source_on_host=bool(s.source_on_host),
                grouped_experts=bool(s.grouped_experts),
            ),
            topology=self.topology,
            fanout=self.fanout,
        )


def _ceil_log2(n: int) -> int:
    return max(0, math.ceil(math.log2(n))) if n > 1 else 0
