"""Weight-sync transports as stacks: a few efficiencies and overheads each, on top of the topology
estimate of :func:`rollsim.sync.estimate`.

A :class:`Stack` says how a framework moves weights (its transport: NCCL broadcast, NCCL
point-to-point along a re-sharding plan, RDMA WRITE, CUDA IPC between co-located processes, or a
file system) and what its software costs. :func:`estimate_stack` adds the terms that decide real
sync times and that the plain topology estimate does not have:

* ``egress_s``: a broadcast whose root is off-node sends every byte through the senders' NICs; with
  one sender (the classic "rank 0 broadcasts") that one NIC is the limit, with every training rank
  sending its own shard (verl's all-ranks-send, volcengine/verl PR 7263) the limit is the
  receivers' side again;
* ``instances_s``: a per-instance receive overhead, ``per_instance_bucket_s`` for each bucket and
  each instance beyond the first (each receiving group acknowledges every bucket, and the NCCL ring
  grows by the new instance's nodes), so that 1 -> 16 instances costs what it costs
  (MoonshotAI/checkpoint-engine README: +11 % for DeepSeek-V3.1, +12 % for Kimi-K2 on 256 H20);
* ``staging_s``: CPU staging copies (device to host to device) over PCIe, ``staging_copies`` times
  each sender's share, over the sender's part of its host uplink when senders share one
  (:meth:`~rollsim.sync.cluster.Hardware.host_link_share`: 2 A100s per PCIe switch uplink);
* ``registration_s``: RDMA memory registration of the receive buffers, when it is redone at every
  update;
* ``postprocess_s``: receiver post-processing (format conversion, re-layout, FP8 block
  quantization on the receiver) at ``postprocess_bytes_per_s`` per receiving GPU;
* ``filesystem_s``: the checkpoint written once and read by every instance (safetensors through a
  shared file system);

besides the topology's own ``transfer_s``, ``latency_s``, ``software_s`` (per tensor, per bucket,
per update), ``quantization_s``, ``h2d_s`` and ``pause_resume_s`` (engine pause / resume and cache
flush).

Every term is linear in the stack's overheads and in ``1 / efficiency``, so :func:`calibrate` fits a
stack on one measured time by a linear solve and predicts the same stack at other sizes, instance
counts and bucket sizes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

from rollsim import _check
from rollsim.errors import invalid

from .cluster import Cluster, SoftwareStack
from .estimator import TERMS, Estimate, estimate, estimate_many

__all__ = [
    "TRANSPORTS",
    "STACK_TERMS",
    "FITTABLE",
    "Stack",
    "StackEstimate",
    "Calibration",
    "STACKS",
    "stack",
    "estimate_stack",
    "estimate_stack_many",
    "calibrate",
    "rank_designs",
    "received_bytes_per_rank",
]

#: Transports and the topology of :func:`rollsim.sync.estimate` each one moves bytes with.
TRANSPORTS: dict[str, str] = {
    "nccl-broadcast": "broadcast",
    "nccl-p2p": "parallel",
    "nccl-ring-relay": "relay",
    "rdma-write": "parallel",
    "cuda-ipc": "colocated",
    "filesystem": "broadcast",
}

#: Terms a stack adds to the topology's :data:`~rollsim.sync.estimator.TERMS`.
EXTRA_TERMS = ("egress_s", "instances_s", "staging_s", "registration_s", "postprocess_s", "filesystem_s")
#: Every term of a :class:`StackEstimate` breakdown, in order.
STACK_TERMS = (*TERMS, *EXTRA_TERMS)

#: Parameters :func:`calibrate` can fit (the total is linear in each, ``efficiency`` through its
#: inverse).
FITTABLE = ("efficiency", "per_update_s", "per_tensor_s", "per_bucket_s", "per_instance_bucket_s")

SENDERS = ("one", "stage_heads", "all")

_REAL: dict[str, tuple[float, float, str]] = {
    "efficiency": (1e-6, 1.0, ""),
    "per_tensor_s": (0.0, 1e6, "seconds"),
    "per_bucket_s": (0.0, 1e6, "seconds"),
    "per_update_s": (0.0, 1e6, "seconds"),
    "per_instance_bucket_s": (0.0, 1e6, "seconds"),
    "bucket_bytes": (1e3, 1e15, "bytes"),
    "quant_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "postprocess_bytes_per_s": (0.0, 1e15, "bytes/s"),
    "registration_bytes_per_s": (0.0, 1e15, "bytes/s"),
    "filesystem_bytes_per_s": (1e3, 1e15, "bytes/s"),
    "pause_resume_s": (0.0, 1e6, "seconds"),
}


@dataclass(frozen=True)
class Stack:
    """A weight-sync implementation as data.

    Parameters
    ----------
    name : str
        Label.
    transport : str
        One of :data:`TRANSPORTS`: ``"nccl-broadcast"``, ``"nccl-p2p"`` (shard to shard along the
        re-sharding plan), ``"nccl-ring-relay"``, ``"rdma-write"``, ``"cuda-ipc"`` (co-located)
        or ``"filesystem"``.
    efficiency : float
        Achieved fraction of the link bandwidth, in [1e-6, 1].
    per_tensor_s, per_bucket_s, per_update_s : float
        Seconds per tensor loaded on the busiest rank, per bucket, per update; each in [0, 1e6].
    per_instance_bucket_s : float
        Receive overhead, seconds per bucket and per instance beyond the first, in [0, 1e6].
    bucket_bytes : float
        Bucket size in bytes, in [1e3, 1e15].
    senders : str
        Broadcast transports: who sends. ``"one"`` (one root GPU, one NIC), ``"stage_heads"``
        (one head rank per training pipeline stage) or ``"all"`` (every training rank its own
        shard).
    staging_copies : int
        Copies through host memory per byte a sender holds (0 = GPU direct; 2 = device to host
        to device), in [0, 8].
    quant_bytes_per_s : float
        FP8 block-quantization throughput per GPU, bytes of training-format input per second, in
        [1e3, 1e15] (used when the two precisions differ).
    quantize_on : str
        ``"sender"`` or ``"receiver"``: which side quantizes.
    postprocess_bytes_per_s : float
        Receiver post-processing throughput per GPU (format conversion, re-layout), bytes
        received per second, in [0, 1e15]; 0 = none.
    registration_bytes_per_s : float
        RDMA memory registration redone at every update, bytes per second per GPU, in [0, 1e15];
        0 = registered once at start-up.
    filesystem_bytes_per_s : float
        ``"filesystem"``: aggregate read and write bandwidth of the shared file system, bytes/s,
        in [1e3, 1e15].
    pause_resume_s : float
        Engine pause / resume and cache flush, seconds in [0, 1e6].
    plan_groups : tuple of str
        ``"nccl-p2p"`` / ``"rdma-write"``: tensor groups sent along the plan; every other group is
        broadcast whole to every inference GPU (see
        :class:`~rollsim.sync.cluster.SoftwareStack`). Empty: all along the plan.
    grouped_experts : bool
        The engine takes each layer's experts as one tensor per projection.
    fanout : int
        ``"nccl-ring-relay"``: 1 = chain, 2 = binary tree, in [1, 1024].
    calibrated_on : tuple of str
        Settings of the published rows the fitted values come from (at most two).
    source : str
        Where the stack's design is described.
    """

    name: str
    transport: str
    efficiency: float = 1.0
    per_tensor_s: float = 0.0
    per_bucket_s: float = 0.0
    per_update_s: float = 0.0
    per_instance_bucket_s: float = 0.0
    bucket_bytes: float = 1e9
    senders: str = "all"
    staging_copies: int = 0
    quant_bytes_per_s: float = 1e12
    quantize_on: str = "sender"
    postprocess_bytes_per_s: float = 0.0
    registration_bytes_per_s: float = 0.0
    filesystem_bytes_per_s: float = 10e9
    pause_resume_s: float = 0.0
    plan_groups: tuple[str, ...] = ()
    grouped_experts: bool = False
    fanout: int = 1
    calibrated_on: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise invalid("transport", f"must be one of {', '.join(TRANSPORTS)}, got {self.transport!r}")
        if self.senders not in SENDERS:
            raise invalid("senders", f"must be one of {', '.join(SENDERS)}, got {self.senders!r}")
        if self.quantize_on not in ("sender", "receiver"):
            raise invalid("quantize_on", f"must be 'sender' or 'receiver', got {self.quantize_on!r}")
        for name, (lo, hi, unit) in _REAL.items():
            object.__setattr__(self, name, _check.bounded(name, getattr(self, name), lo, hi, unit))
        object.__setattr__(self, "staging_copies", _check.integer("staging_copies", self.staging_copies, 0, 8))
        object.__setattr__(self, "fanout", _check.integer("fanout", self.fanout, 1, 1024))
        object.__setattr__(self, "grouped_experts", _check.flag("grouped_experts", self.grouped_experts))
        pg = self.plan_groups
        if isinstance(pg, str) or not all(isinstance(x, str) for x in pg):
            raise invalid("plan_groups", f"must be a list of tensor-group names, got {pg!r}")
        object.__setattr__(self, "plan_groups", tuple(pg))
        if len(self.calibrated_on) > 2:
            raise invalid("calibrated_on", f"must name at most 2 published rows, got {len(self.calibrated_on)}")

    @property
    def topology(self) -> str:
        """The topology of :func:`rollsim.sync.estimate` the transport moves bytes with."""
        return TRANSPORTS[self.transport]

    def replace(self, **kw: Any) -> Stack:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **kw)

    def software(self) -> SoftwareStack:
        """The :class:`~rollsim.sync.cluster.SoftwareStack` of the topology estimate (stages run one
        after another; receiver-side quantization is a term of its own)."""
        return SoftwareStack(
            name=self.name, efficiency=self.efficiency, per_tensor_s=self.per_tensor_s,
            per_bucket_s=self.per_bucket_s, per_update_s=self.per_update_s, bucket_bytes=self.bucket_bytes,
            quant_bytes_per_s=self.quant_bytes_per_s if self.quantize_on == "sender" else 1e15,
            pause_resume_s=self.pause_resume_s, overlap_stages=False,
            plan_groups=self.plan_groups, grouped_experts=self.grouped_experts, source=self.source,
        )


@dataclass(frozen=True)
class StackEstimate:
    """One weight update with a stack.

    Attributes
    ----------
    total_s : float
        Seconds, the sum of ``breakdown``.
    breakdown : dict[str, float]
        Seconds per term of :data:`STACK_TERMS`.
    base : Estimate
        The topology estimate the stack's terms are added to.
    stack : Stack
    cluster : Cluster
    """

    total_s: float
    breakdown: dict
    base: Estimate
    stack: Stack
    cluster: Cluster

    @property
    def received_bytes_per_rank(self) -> float:
        """Bytes the busiest inference GPU receives (:func:`received_bytes_per_rank`)."""
        return received_bytes_per_rank(self.cluster)

    @property
    def dominant_term(self) -> str:
        """The largest term."""
        pos = {k: v for k, v in self.breakdown.items() if k != "overlap_s"}
        return max(pos, key=lambda k: pos[k])

    def frame(self) -> pl.DataFrame:
        """The breakdown: ``term`` (str), ``seconds`` (f64), ``share`` (f64 of ``total_s``)."""
        t = list(self.breakdown)
        s = [self.breakdown[k] for k in t]
        tot = self.total_s or 1.0
        return pl.DataFrame({"term": t, "seconds": s, "share": [x / tot for x in s]})

    def __float__(self) -> float:
        return self.total_s


@lru_cache(maxsize=256)
def _estimate_cached(cluster: Cluster) -> Estimate:
    return estimate(cluster)


@lru_cache(maxsize=256)
def _received_cached(cluster: Cluster) -> float:
    return _received(cluster)


def _stack_cluster(cluster: Cluster, st: Stack) -> Cluster:
    hw = cluster.hardware
    if st.transport == "cuda-ipc" and not hw.colocated:
        hw = dataclasses.replace(hw, colocated=True)
    return cluster.replace(software=st.software(), topology=st.topology, fanout=st.fanout, hardware=hw)


def received_bytes_per_rank(cluster: Cluster, st: Stack | None = None) -> float:
    """Bytes the busiest inference GPU receives in one update.

    Along a re-sharding plan (``nccl-p2p``, ``rdma-write``) it is the GPU's slice of the plan's
    tensors plus every tensor broadcast whole (``plan_groups``); a refit of DeepSeek-V3 BF16 (256
    training GPUs, PP16 x EP16, to 32 vLLM GPUs, routed experts shard to shard, the rest broadcast, as
    NVIDIA-NeMo/RL ``docs/design-docs/nccl-reshard-refit.md`` describes) gives 69.95 GiB (this
    model's arithmetic; ``docs/sync_stacks.md``, "Layouts", says what it rests on). Broadcast
    transports deliver the whole model, CUDA IPC the GPU's ``1 / tp``.

    Parameters
    ----------
    cluster : Cluster
    st : Stack, optional
        The stack (default: the cluster's own software stack and topology).

    Returns
    -------
    float
        Bytes.
    """
    c = _stack_cluster(cluster, st) if st is not None else cluster
    # the plan depends on the layouts, placement, buckets and plan groups, not on speeds or overheads
    key = c.replace(software=SoftwareStack(bucket_bytes=c.software.bucket_bytes, plan_groups=c.software.plan_groups,
                                           grouped_experts=c.software.grouped_experts))
    return _received_cached(key)


def _received(c: Cluster) -> float:
    from .estimator import plan

    m = c.model
    if c.topology in ("broadcast", "naive"):
        return float(m.infer_bytes)
    if c.topology == "colocated":
        return float(m.infer_bytes / c.infer.tp)
    one = c.replace(infer=dataclasses.replace(c.infer, instances=1)) if c.topology == "relay" else c
    p = plan(one, record_transfers=False)
    pg = c.software.plan_groups if c.topology == "parallel" else ()
    bcast = sum(g.count * g.elems for g in m.groups if pg and g.name not in pg) * m.infer_precision.bytes_per_elem
    return float(p.needed_bytes.max() + bcast)


def _senders(cluster: Cluster, st: Stack) -> float:
    if st.senders == "one":
        return 1.0
    if st.senders == "stage_heads":
        return float(cluster.train.pp)
    return float(cluster.train.gpus)


def _host_copying(cluster: Cluster, st: Stack, senders: float) -> float:
    """The senders that copy through one host uplink at once, for
    :meth:`~rollsim.sync.cluster.Hardware.host_link_share`: every sender in rank order, except
    stage heads, which are ``tp * cp * dp`` ranks apart (one per uplink once that is at least
    ``gpus_per_host_link``)."""
    if st.senders != "stage_heads":
        return senders
    per_stage = cluster.train.tp * cluster.train.cp * cluster.train.dp
    return float(min(cluster.train.pp, -(-cluster.hardware.gpus_per_host_link // per_stage)))


def _extras(cluster: Cluster, st: Stack, base: dict, nb: Any, instances: Any, eff: Any, nic: Any,
            per_instance: Any, recv: Any) -> dict:
    """The stack's own terms, vectorized over numpy arrays (or floats)."""
    m, hw, tr = cluster.model, cluster.hardware, cluster.train
    s = m.infer_bytes
    s_train = m.n_params * m.train_precision.bytes_per_elem
    zero = np.zeros_like(np.asarray(base["transfer_s"], dtype=float))
    out = {k: zero.copy() for k in EXTRA_TERMS}
    senders = _senders(cluster, st)
    if st.topology == "broadcast" and not hw.colocated:
        # the root's side: every byte leaves through the senders' NICs (one NIC each)
        n_nics = min(senders, float(tr.gpus))
        egress = s / (eff * nic * n_nics)
        out["egress_s"] = np.maximum(0.0, egress - base["transfer_s"])
    out["instances_s"] = per_instance * nb * (instances - 1.0)
    if st.staging_copies:
        link = hw.host_link_share(_host_copying(cluster, st, senders))
        out["staging_s"] = zero + st.staging_copies * s_train / senders / link
    if st.registration_bytes_per_s > 0:
        out["registration_s"] = zero + recv() / st.registration_bytes_per_s
    post = 0.0
    if st.postprocess_bytes_per_s > 0:
        post += recv() / st.postprocess_bytes_per_s
    if st.quantize_on == "receiver" and m.train_precision != m.infer_precision:
        post += recv() * m.train_precision.bytes_per_elem / m.infer_precision.bytes_per_elem / st.quant_bytes_per_s
    out["postprocess_s"] = zero + post
    if st.transport == "filesystem":
        # written once, read by every instance; the broadcast's wire time is replaced by the reads
        out["filesystem_s"] = (s + instances * s) / st.filesystem_bytes_per_s
    return out


def estimate_stack(cluster: Cluster, st: Stack | str) -> StackEstimate:
    """Estimates one weight update of ``cluster`` moved by the stack ``st``.

    Parameters
    ----------
    cluster : Cluster
        Model, layouts and hardware (its own software stack and topology are replaced by the
        stack's).
    st : Stack or str
        A stack, or the name of one of :data:`STACKS`.

    Returns
    -------
    StackEstimate

    Raises
    ------
    rollsim.ScenarioError
        An unknown stack name, or a field out of range (named).
    """
    st = stack(st) if isinstance(st, str) else st
    c = _stack_cluster(cluster, st)
    e = _estimate_cached(c)
    base = dict(e.breakdown)
    if st.transport == "filesystem":
        base["transfer_s"] = 0.0
        base["latency_s"] = 0.0
    if st.quantize_on == "receiver":  # a term of its own (postprocess_s)
        base["quantization_s"] = 0.0
    ex = _extras(c, st, base, e.n_buckets, float(c.infer.instances), st.efficiency, c.hardware.nic_bytes_per_s,
                 st.per_instance_bucket_s, lambda: received_bytes_per_rank(c))
    bd = {**base, **{k: float(v) for k, v in ex.items()}}
    return StackEstimate(sum(bd.values()), bd, e, st, c)


def estimate_stack_many(cluster: Cluster, st: Stack | str, **arrays: Any) -> pl.DataFrame:
    """Vectorized :func:`estimate_stack`: sweeps over arrays (numpy broadcasting).

    Parameters
    ----------
    cluster : Cluster
    st : Stack or str
    **arrays : array_like
        Any of :data:`~rollsim.sync.estimator.SWEEPABLE` (``instances``, ``bucket_bytes``,
        ``efficiency``, ``nic_bytes_per_s``, ...) and ``per_instance_bucket_s``.

    Returns
    -------
    polars.DataFrame
        The swept columns, ``total_s`` and every term of :data:`STACK_TERMS` (f64 seconds).

    Raises
    ------
    rollsim.ScenarioError
        Unknown field, arrays that do not broadcast, or values out of range (named).
    """
    st = stack(st) if isinstance(st, str) else st
    c = _stack_cluster(cluster, st)
    per_inst = arrays.pop("per_instance_bucket_s", None)
    if per_inst is not None:
        try:
            per_inst = np.asarray(per_inst, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise invalid("per_instance_bucket_s", f"must be an array of numbers: {e}") from None
        if not np.all((per_inst >= 0) & (per_inst <= 1e6)):
            bad = per_inst[~((per_inst >= 0) & (per_inst <= 1e6))].ravel()[0]
            raise invalid("per_instance_bucket_s", f"must be in [0, 1e6] seconds, got {bad!r}")
    names = list(arrays)
    vals = [np.asarray(v, dtype=np.float64) for v in arrays.values()]
    if per_inst is not None:
        vals.append(per_inst)
    try:
        cols = np.broadcast_arrays(*vals) if vals else []
    except ValueError as e:
        raise ValueError(f"{', '.join([*names, 'per_instance_bucket_s'][:len(vals)])}: arrays do not broadcast together ({e})") from None
    flat = {k: np.ascontiguousarray(col.ravel()) for k, col in zip(names, cols)}
    pin = cols[-1].ravel() if per_inst is not None else st.per_instance_bucket_s
    f = estimate_many(c, **flat)
    one = _estimate_cached(c)
    base = {k: f[k].to_numpy() for k in TERMS}
    if st.transport == "filesystem":
        base["transfer_s"] = np.zeros_like(base["transfer_s"])
        base["latency_s"] = np.zeros_like(base["latency_s"])
    if st.quantize_on == "receiver":
        base["quantization_s"] = np.zeros_like(base["quantization_s"])
    bucket = flat.get("bucket_bytes", st.bucket_bytes)
    nb = np.maximum(1.0, np.ceil(one.model_bytes / np.asarray(bucket)))
    inst = flat.get("instances", float(c.infer.instances))
    eff = flat.get("efficiency", st.efficiency)
    nic = flat.get("nic_bytes_per_s", c.hardware.nic_bytes_per_s)
    ex = _extras(c, st, base, nb, np.asarray(inst, dtype=float), np.asarray(eff), np.asarray(nic), pin,
                 lambda: received_bytes_per_rank(c))
    n = len(f)
    data: dict[str, Any] = dict(flat)
    if per_inst is not None:
        data["per_instance_bucket_s"] = np.broadcast_to(pin, (n,)).astype(float)
    terms = {**base, **ex}
    total = np.zeros(n)
    for k in STACK_TERMS:
        terms[k] = np.broadcast_to(np.asarray(terms[k], dtype=float), (n,))
        total = total + terms[k]
    data["total_s"] = total
    data.update({k: terms[k] for k in STACK_TERMS})
    return pl.DataFrame(data)


def _coefficients(cluster: Cluster, st: Stack, params: tuple[str, ...]) -> tuple[float, list[float]]:
    """``total = a + sum(coef_p * x_p)`` with ``x`` = ``1 / efficiency`` or the overhead (one
    vectorized call: the plan is built once)."""
    zero = {p: (1.0 if p == "efficiency" else 0.0) for p in params}
    s0 = st.replace(**zero)
    names = [p for p in params if p != "efficiency"]
    k = len(params) + 1
    cols: dict[str, Any] = {"efficiency": np.ones(k)} if "efficiency" in params else {}
    for p in names:
        cols[p] = np.zeros(k)
    for i, p in enumerate(params, start=1):
        if p == "efficiency":
            cols["efficiency"][i] = 0.5
        else:
            cols[p][i] = 1.0
    f = estimate_stack_many(cluster, s0, **cols)["total_s"].to_numpy()
    coefs = [float(f[i] - f[0]) for i in range(1, k)]
    a = float(f[0]) - (coefs[params.index("efficiency")] if "efficiency" in params else 0.0)
    return a, coefs


def fit(rows: list[tuple[Cluster, float]], st: Stack, params: tuple[str, ...]) -> Stack:
    """Fits ``params`` of ``st`` on ``(cluster, measured_s)`` rows (exact for as many rows as
    parameters, least squares for more).

    Raises
    ------
    rollsim.ScenarioError
        An unknown parameter, or a fit outside its range (e.g. an efficiency above 1: the stack's
        other terms already take longer than the measurement).
    """
    for p in params:
        if p not in FITTABLE:
            raise invalid("fit", f"must name parameters among {', '.join(FITTABLE)}, got {p!r}")
    A, y = [], []
    for c, meas in rows:
        a, coefs = _coefficients(c, st, params)
        A.append(coefs)
        y.append(meas - a)
    x = np.linalg.lstsq(np.array(A, dtype=float), np.array(y, dtype=float), rcond=None)[0]
    vals = {}
    for p, v in zip(params, x):
        if p == "efficiency":
            if not v >= 1.0:
                raise invalid("measured_s", f"is shorter than the stack's fixed terms allow (an efficiency of "
                                            f"{1 / v if v > 0 else math.inf:.3g} > 1 would be needed)")
            vals[p] = float(1.0 / v)
        else:
            if v < 0:
                raise invalid("measured_s", f"is shorter than the stack's other terms: {p} would be {v:.3g} < 0")
            vals[p] = float(v)
    return st.replace(**vals)


@dataclass(frozen=True)
class Calibration:
    """A stack fitted on one measured sync of a cluster.

    Attributes
    ----------
    stack : Stack
        The fitted stack.
    cluster : Cluster
        The measured cluster.
    measured_s : float
    fitted : dict[str, float]
        Fitted parameter -> value.
    """

    stack: Stack
    cluster: Cluster
    measured_s: float
    fitted: dict = field(default_factory=dict)

    def estimate(self, cluster: Cluster | None = None) -> StackEstimate:
        """The fitted stack on ``cluster`` (default: the measured one)."""
        return estimate_stack(cluster if cluster is not None else self.cluster, self.stack)

    def predict(self, *, instances: Any = None, bucket_bytes: Any = None, model: Any = None) -> pl.DataFrame:
        """The fitted stack at other instance counts, bucket sizes or models.

        Parameters
        ----------
        instances : int or sequence of int, optional
            Inference instances, each in [1, 65536].
        bucket_bytes : float or sequence of float, optional
            Bucket sizes, bytes in [1e3, 1e15].
        model : ModelSpec or str, or a sequence of them, optional
            Other models (a name: a sync preset or a model of :mod:`rollsim.hardware.specs`; same
            layouts and hardware).

        Returns
        -------
        polars.DataFrame
            One row per combination: ``model`` (str), ``instances`` (i64), ``bucket_bytes`` (f64),
            ``total_s`` (f64), ``dominant_term`` (str) and every term of :data:`STACK_TERMS`.
        """
        def seq(v, default):
            if v is None:
                return [default]
            return list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]

        from .presets import model as preset

        rows = []
        for m in seq(model, self.cluster.model):
            m = preset(m) if isinstance(m, str) else m
            for n in seq(instances, self.cluster.infer.instances):
                for b in seq(bucket_bytes, self.stack.bucket_bytes):
                    c = self.cluster.replace(model=m, infer=dataclasses.replace(self.cluster.infer, instances=n))
                    e = estimate_stack(c, self.stack.replace(bucket_bytes=b))
                    rows.append({"model": m.name, "instances": c.infer.instances, "bucket_bytes": float(b),
                                 "total_s": e.total_s, "dominant_term": e.dominant_term, **e.breakdown})
        return pl.DataFrame(rows)


def calibrate(cluster: Cluster, measured_s: float, st: Stack | str | None = None,
              fit_params: tuple[str, ...] = ("efficiency",)) -> Calibration:
    """Fits a stack's efficiency (or other :data:`FITTABLE` parameters) on one measured sync.

    Parameters
    ----------
    cluster : Cluster
        The cluster the measurement was taken on.
    measured_s : float
        The measured sync, seconds in (0, 1e6].
    st : Stack or str, optional
        The stack to fit (default: the :data:`STACKS` entry of the cluster's topology:
        ``broadcast`` -> ``checkpoint-engine``, ``parallel`` -> ``nemo-rl-reshard``, ``relay`` ->
        ``verl-ring``, ``colocated`` -> ``cuda-ipc``).
    fit_params : tuple of str
        Parameters to fit; one measurement fits one parameter.

    Returns
    -------
    Calibration

    Raises
    ------
    rollsim.ScenarioError
        ``measured_s`` out of range or shorter than the stack's fixed terms, or more parameters than
        measurements.
    """
    if isinstance(measured_s, (int, float, np.floating, np.integer)) and not isinstance(measured_s, bool) \
            and not 0 < measured_s <= 1e6:
        raise invalid("measured_s", f"must be in (0, 1e6] seconds, got {_check.show(measured_s)}")
    meas = _check.bounded("measured_s", measured_s, 0.0, 1e6, "seconds")   # a wrong type: named
    if isinstance(fit_params, str):
        fit_params = (fit_params,)
    fit_params = tuple(fit_params)
    if len(fit_params) != 1:
        raise invalid("fit_params", f"one measurement fits exactly 1 parameter, got {len(fit_params)}")
    if st is None:
        default = {"broadcast": "checkpoint-engine", "parallel": "nemo-rl-reshard", "relay": "verl-ring",
                   "colocated": "cuda-ipc", "naive": "checkpoint-engine"}
        st = default[cluster.topology]
    st = stack(st) if isinstance(st, str) else st
    fitted = fit([(cluster, meas)], st, fit_params)
    return Calibration(fitted, cluster, meas, {p: getattr(fitted, p) for p in fit_params})


def rank_designs(cluster: Cluster, stacks: dict | None = None) -> pl.DataFrame:
    """Every stack that can serve ``cluster``, fastest first, with the term that makes each slower.

    Parameters
    ----------
    cluster : Cluster
        Model, layouts and hardware.
    stacks : dict[str, Stack], optional
        Candidates (default :data:`STACKS`; ``cuda-ipc`` only when the hardware is co-located).

    Returns
    -------
    polars.DataFrame
        ``rank`` (i64), ``stack`` (str), ``transport`` (str), ``total_s`` (f64),
        ``dominant_term`` (str), ``slower_by_s`` (f64), ``slower_because`` (str or null: the term
        with the largest excess over the fastest), ``slower_because_s`` (f64 or null), every term
        of :data:`STACK_TERMS`, and how far to trust the row: ``checked_on`` (str: the errors of
        the stack's prediction rows in ``rollsim sync --validate``, or why it has none) and
        ``low_s`` / ``high_s`` (f64 or null: the interval those errors give ``total_s``,
        ``total_s / (1 + error)`` together with ``total_s`` itself; null without a prediction
        row). Row 1 is the design to run: unlike :func:`rollsim.sync.rank_topologies` with
        ideal software, every stack here is one a user can deploy.
    """
    stack_check = _CHECK[0]   # rollsim.sync.validation.stack_check, registered on its import
    cands = dict(stacks if stacks is not None else STACKS)
    if stacks is None and not cluster.hardware.colocated:
        cands.pop("cuda-ipc", None)
    ests = {k: estimate_stack(cluster, s) for k, s in cands.items()}
    order = sorted(ests, key=lambda k: ests[k].total_s)
    best = ests[order[0]]
    rows = []
    for i, k in enumerate(order):
        e = ests[k]
        diff = {t: e.breakdown[t] - best.breakdown[t] for t in STACK_TERMS}
        worst = max(diff, key=lambda t: diff[t])
        slower = e.total_s - best.total_s
        because = worst if slower > 0 and diff[worst] > 0 else None
        rows.append({"rank": i + 1, "stack": k, "transport": e.stack.transport, "total_s": e.total_s,
                     "dominant_term": e.dominant_term, "slower_by_s": slower, "slower_because": because,
                     "slower_because_s": diff[worst] if because else None, **e.breakdown,
                     **stack_check(k, e.total_s)})
    schema = {"rank": pl.Int64, "stack": pl.String, "transport": pl.String, "total_s": pl.Float64,
              "dominant_term": pl.String, "slower_by_s": pl.Float64, "slower_because": pl.String,
              "slower_because_s": pl.Float64, **dict.fromkeys(STACK_TERMS, pl.Float64),
              "checked_on": pl.String, "low_s": pl.Float64, "high_s": pl.Float64}
    return pl.DataFrame(rows, schema=schema)


def stack(name: str) -> Stack:
    """A stack of :data:`STACKS` by name (case-insensitive).

    Raises
    ------
    rollsim.ScenarioError
        An unknown name (the message lists the known ones).
    """
    if not isinstance(name, str) or name.lower() not in STACKS:
        raise invalid("stack", f"must be one of {', '.join(STACKS)}, got {name!r}")
    return STACKS[name.lower()]


# The stacks themselves (fitted values and their rows) live in rollsim.sync.validation, which
# fills this registry on import.
STACKS: dict[str, Stack] = {}
#: How far to trust a stack's estimate (``rank_designs``' ``checked_on``, ``low_s``, ``high_s``):
#: rollsim.sync.validation registers its ``stack_check`` here on import (it needs the published rows).
_CHECK: list[Any] = []
