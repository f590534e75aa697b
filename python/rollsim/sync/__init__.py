"""Weight-sync and routing-replay estimator (``rollsim sync``).

How long does each weight update stall the pipeline on a given cluster, which term dominates
(wire, per-message latency, per-tensor software overhead, quantization, H2D), and which design
fixes it. Formulas and published timings: ``docs/weight_sync.md``; transports as stacks, their
calibration and the leave-one-out table: ``docs/sync_stacks.md``.

>>> from rollsim.sync import chapter_cluster, estimate
>>> round(estimate(chapter_cluster("parallel", instances=1)).total_s, 1)
2.5
"""

from pathlib import Path

from .cluster import (
    BF16,
    FP8_BLOCK128,
    TOPOLOGIES,
    Cluster,
    Hardware,
    InferLayout,
    ModelSpec,
    Precision,
    SoftwareStack,
    TensorGroup,
    TrainLayout,
)
from .estimator import SWEEPABLE, TERMS, Estimate, Plan, estimate, estimate_many, plan, rank_topologies
from .replay import Replay, id_bytes, routing_replay
from .presets import HARDWARE, MODELS, SOFTWARE, model, transformer
from .chapter import chapter_cluster, chapter_table
from .config import load_cluster, cluster_from_dict
from .pipeline import load_weight_sync
from .stacks import (STACK_TERMS, STACKS, TRANSPORTS, Calibration, Stack, StackEstimate, calibrate, estimate_stack,
                     estimate_stack_many, rank_designs, received_bytes_per_rank, stack)
from .validation import validation_table
from .pipeline import WeightSync, pipeline_fields

#: The cluster files shipped with the package: ``cluster.toml`` (with a ``[stack]``, for
#: :func:`load_weight_sync` and ``rollsim sync FILE``) and ``cluster_only.toml`` (no ``[stack]`` or
#: ``pause_s``, for :func:`load_cluster`).
EXAMPLES = Path(__file__).resolve().parent / "examples"

__all__ = [
    "EXAMPLES",
    "pipeline_fields",
    "WeightSync",
    "BF16",
    "FP8_BLOCK128",
    "TOPOLOGIES",
    "Cluster",
    "Hardware",
    "InferLayout",
    "ModelSpec",
    "Precision",
    "SoftwareStack",
    "TensorGroup",
    "TrainLayout",
    "SWEEPABLE",
    "TERMS",
    "Estimate",
    "Plan",
    "estimate",
    "estimate_many",
    "plan",
    "rank_topologies",
    "Replay",
    "id_bytes",
    "routing_replay",
    "HARDWARE",
    "MODELS",
    "SOFTWARE",
    "model",
    "transformer",
    "chapter_cluster",
    "chapter_table",
    "load_cluster",
    "load_weight_sync",
    "cluster_from_dict",
    "STACK_TERMS",
    "STACKS",
    "TRANSPORTS",
    "Calibration",
    "Stack",
    "StackEstimate",
    "calibrate",
    "estimate_stack",
    "estimate_stack_many",
    "rank_designs",
    "received_bytes_per_rank",
    "stack",
    "validation_table",
]
