"""Published weight-sync settings: the clusters of the published rows and their sources.

The rows themselves, the stacks fitted on them and the leave-one-out table live in
:mod:`rollsim.sync.validation` (``rollsim sync --validate``, ``docs/sync_stacks.md``): one model of
real stacks. This module keeps what that table is built from: the cluster of each published
setting (:func:`_ckpt_engine`, :func:`_nemo`), the sources, and :func:`issue_169`, the two-row solve
of the co-located CUDA IPC rows with the topology estimator's own terms.

An earlier model fitted ``SoftwareStack`` presets directly on the topology estimator here
(``STACKS``, ``fit_stack``, ``validation_table``; ``rollsim sync --validation``). It is retired:
``--validation`` prints the stacks' table, and a cluster file's ``[software] preset = NAME`` takes
the fitted stack ``NAME`` of :data:`rollsim.sync.STACKS` (:meth:`rollsim.sync.Stack.software`).
The chapter's table uses the ideal software and does not depend on either.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .estimator import estimate
from .cluster import Cluster, InferLayout, ModelSpec, SoftwareStack, TrainLayout
from .presets import HARDWARE, MODELS

__all__ = ["NEMO_PLAN_GROUPS", "issue_169"]

GiB = 2**30


def _ckpt_engine(model: str, prec: str, gpus: int, instances: int, bucket_gib: float, hw: str) -> Cluster:
    # checkpoint-engine Broadcast: the ParameterServer ranks (co-located with vLLM) hold the shards
    # and NCCL-broadcast each bucket to every GPU; vLLM keeps its slice. H2D is overlapped with the
    # broadcast by its pipeline; buckets run one after another.
    return Cluster(
        model=MODELS[model].with_precision(prec, prec),
        train=TrainLayout(dp=gpus * instances, fsdp=True),
        infer=InferLayout(instances=instances, tp=gpus),
        hardware=dataclasses.replace(HARDWARE[hw], colocated=True),
        software=SoftwareStack(bucket_bytes=bucket_gib * GiB, overlap_stages=False),
        topology="broadcast",
    )


#: NeMo-RL nccl_reshard_refit (design doc, "Design Overview"): the FFN projections (dense MLP and
#: routed experts, not shared experts or MTP) go shard to shard along the plan ("bulk path", one
#: xferdtensor per HF-named grouped expert entry, the sender stacking its local experts' views);
#: everything else, FP8 ``_scale_inv`` siblings included, rides one packed broadcast afterwards and
#: is loaded through vLLM's ``load_weights`` ("misc path").
NEMO_PLAN_GROUPS = ("mlp.dense_proj", "mlp.experts")


def _nemo(model: str, train: TrainLayout, instances: int, tp: int, prec: str = "bf16", hw: str = "h100") -> Cluster:
    # precision matches end to end (BF16 <-> BF16, blockwise FP8 <-> FP8); inference EP = 1 (TP only)
    return Cluster(
        model=MODELS[model].with_precision(prec, prec),
        train=train,
        infer=InferLayout(instances=instances, tp=tp),
        hardware=HARDWARE[hw],
        software=SoftwareStack(overlap_stages=False, plan_groups=NEMO_PLAN_GROUPS, grouped_experts=True),
        topology="parallel",
    )


CKPT = "MoonshotAI/checkpoint-engine README, Benchmark table (vLLM v0.10.2rc1), Update (Broadcast)"
NEMO = "NVIDIA-NeMo/RL docs/design-docs/nccl-reshard-refit.md, Expected Performance"
VERL = "volcengine/verl verl/checkpoint_engine/README.md, benchmark result"
SGL = "sgl-project/sglang issue 30848 (verl + SGLang, H100)"

#: Awesome-ML-SYS-Tutorial issue 169 (verl/slime + SGLang, colocated CUDA IPC): a 16B MoE updated
#: tensor by tensor took about 200 s; Qwen3-30B-A3B with 512 MB buckets about 16 s.
ISSUE_169 = "zhaochenyang20/Awesome-ML-SYS-Tutorial issue 169 (RL SGLang update weight in tensor slow for MoE)"

#: The 16B MoE is not named; DeepSeek-V2-Lite and Moonlight-16B-A3B (the public 16B MoEs of that
#: time) have the same tensor list: 27 layers x 7 attention/norm tensors, 1 dense MLP (3), 26 MoE
#: layers x (router + 3 shared-expert + 64 x 3 expert tensors), embed, final norm, lm_head = 5,291.
MOE_16B_TENSORS = 27 * 7 + 3 + 26 * (1 + 3 + 64 * 3) + 3


def issue_169() -> dict:
    """Solves the two issue-169 rows for one per-bucket and one per-tensor cost (two rows, two
    unknowns: an exact solve, not a held-out prediction) with the model's own terms.

    Rows: (a) 16B MoE tensor by tensor: every tensor is its own bucket (one IPC round trip), so
    ``T = N16 * (per_bucket_s + per_tensor_s)`` plus the wire; (b) Qwen3-30B-A3B BF16, 512 MB
    buckets: ``T = C * per_bucket_s + N30 * per_tensor_s`` plus the wire (``C`` = 115 buckets).
    Both co-located on 8 GPUs (TP8, NVLink hand-off, transfer is tens of milliseconds).

    Returns
    -------
    dict
        ``per_bucket_s``, ``per_tensor_s`` (seconds), ``buckets_30b``, ``tensors_30b``,
        ``tensors_16b``, ``measured`` (200, 16) and ``predicted`` (the two rows, reproduced).
    """
    def cl(model, bucket):
        return Cluster(model=model, train=TrainLayout(tp=8), infer=InferLayout(instances=1, tp=8),
                       hardware=dataclasses.replace(HARDWARE["h100"], colocated=True),
                       software=SoftwareStack(bucket_bytes=bucket, overlap_stages=False), topology="colocated")

    m16 = ModelSpec.dense("16B MoE (tensor list of DeepSeek-V2-Lite / Moonlight-16B-A3B)", 16e9, n_tensors=MOE_16B_TENSORS)
    a = cl(m16, m16.infer_bytes / MOE_16B_TENSORS)   # one tensor per bucket
    b = cl(MODELS["qwen3-30b-a3b"], 512 * 2**20)
    rows = []
    for c, meas in ((a, 200.0), (b, 16.0)):
        e = estimate(c)
        rows.append((e.n_buckets, e.tensors_charged, meas - e.total_s, c))
    A = np.array([[r[0], r[1]] for r in rows])
    y = np.array([r[2] for r in rows])
    pb, pt = np.linalg.solve(A, y)
    pred = [estimate(r[3].replace(software=dataclasses.replace(r[3].software, per_bucket_s=pb, per_tensor_s=pt))).total_s for r in rows]
    return dict(per_bucket_s=float(pb), per_tensor_s=float(pt), buckets_30b=rows[1][0], tensors_30b=rows[1][1],
                tensors_16b=rows[0][1], measured=(200.0, 16.0), predicted=tuple(pred))
