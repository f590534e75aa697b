"""Training cost of an RL step from FLOPs, and how samples reach data-parallel ranks.

A step's phases (seconds), each from the FLOPs of the sequences it processes:

* ``actor``: forward + backward of the policy, ``3 x F`` per pass, times ``ppo_epochs``;
* ``logprob``: the recompute of the old log-probabilities (one forward, ``F``);
* ``reference``: the reference model's log-probabilities (one forward, ``F``);
* ``critic``: PPO's value model when it has one (a forward for the values, then ``3 x F`` per epoch);
* ``optimizer``: the Adam step, memory-bound: the bytes of parameters, gradients and optimizer
  states each GPU reads and writes, over HBM;
* ``collectives``: the data-parallel gradient / parameter traffic of each optimizer step that the
  compute does not hide;
* ``recompute``: activation checkpointing's forward again in the actor's backward (``"full"``: every
  block; ``"selective"``: the backend's policy, :data:`SELECTIVE_RECOMPUTE`; the default is the
  backend's framework default, :data:`ACTIVATION_CHECKPOINTING`);
* ``tp_comm``: tensor parallelism's per-layer all-reduces of the tokens' activations (two per layer
  and forward pass, as many in the backward), over NVLink inside a node, exposed unless
  ``tp_overlap`` says otherwise;
* ``ep_comm``: expert parallelism's dispatch and combine all-to-alls per MoE layer and pass, over
  NVLink to the group's ranks on the node and the NIC to other nodes;
* ``cp_comm``: context parallelism's ring-attention K/V exchange (each GPU holds ``T / cp`` tokens
  of every sequence and passes its K/V shard of each layer ``cp - 1`` times around the ring per
  forward pass, K/V and their gradients in the backward), over NVLink while the ring stays inside a
  node; hidden behind the attention compute it overlaps by design, as the data-parallel collectives
  are behind theirs: only the excess is exposed (:func:`cp_exchange_s`);
* ``pipeline_bubble``: the pipeline's fill and drain, ``(pp - 1) / (virtual_pipeline x
  micro-batches)`` of the rest (Narayanan et al. 2021, arXiv 2104.04473).

Under ``precision="fp8"`` only the transformer blocks' GEMMs run at the FP8 peak; attention, the
output head and the embedding at BF16 (:func:`linear_flops_split`): torchao's
``convert_to_float8_training``, which torchtitan's ``float8`` converter applies, "swaps
torch.nn.Linear in module with Float8Linear" (pytorch/ao docs, torchao.float8), and Transformer
Engine's recipes run ``DotProductAttention`` in BF16 unless ``fp8_dpa`` is set (its default False,
``transformer_engine.common.recipe.DelayedScaling``).

``F`` of a sequence of ``T`` tokens is ``2 x N x T + 2 x layers x heads x head_dim x T**2`` (the
matrix FLOPs of the ``N`` active parameters, and causal attention's scores and weighted sum: half of
the ``T x T`` square, two matmuls). The first term gives the usual ``6 N T`` of training (Kaplan et
al. 2020, arXiv 2001.08361); the second is what makes long sequences cost more than their tokens.
Every parameter counts (an embedding lookup too: at most a few per cent high for untied models).

The achieved model-FLOPs utilization (:data:`MFU`) is one global number per backend, fitted once by
:func:`fit` on the measurements of :data:`CALIBRATION` (printed with their residuals by
:func:`calibration_report`), never per case.

Data-parallel ranks (:func:`rank_loads`): each optimizer step synchronizes every rank (FSDP's
collectives run every micro-batch), so a mini-batch takes as long as its slowest rank. How samples
reach ranks decides that rank: ``"contiguous"`` (the batch cut in equal consecutive chunks, as
dispatch does without balancing: a GRPO group's answers stay together, so a prompt with long answers
loads one rank), ``"round_robin"``, ``"balanced"`` (verl's ``trainer.balance_batch``: equal-count
partitions of the whole batch by the largest differencing method of Karmarkar and Karp on a
per-sequence workload of linear + quadratic form, volcengine/verl ``verl/utils/seqlen_balancing.py``;
each rank keeps its samples in batch order and cuts them into mini-batches, so a mini-batch can
still be uneven), ``"balanced_minibatch"`` (the same per mini-batch: verl's ``keep_minibatch``),
``"lpt"`` (greedy longest-first into equal-count ranks, each rank training its samples heaviest
first, so its k-th mini-batch matches every other rank's: Tencent-Hunyuan/UniRL PR 45) and
``"packed"`` (token packing into micro-batches of at most ``max_tokens_per_gpu`` tokens, dealt to
ranks heaviest first, like slime's ``--use-dynamic-batch-size --max-tokens-per-gpu``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rollsim import _check, _rollsim
from rollsim.errors import invalid

__all__ = ["MFU", "MFU_FAMILY", "TRAIN_FAMILIES", "train_family", "achieved_mfu", "fit_families",
           "family_residuals", "BACKENDS", "DISPATCHES", "OVERLAP_SLOWDOWN", "COLLECTIVE_TIMEOUT_S", "OPTIMIZER_BYTES_PER_PARAM",
           "OPTIMIZER_HBM_EFFICIENCY", "sequence_flops", "train_step_s", "rank_loads", "RankLoads", "assign_ranks",
           "engine_train_params", "engine_train_ranks", "expected_slowest_fraction", "group_lengths", "CALIBRATION", "HELD_OUT", "fit",
           "calibration_report", "training_validation_rows", "COLLECTIVE_EFFICIENCY", "table_rows", "AC_MODES",
           "ACTIVATION_CHECKPOINTING", "SELECTIVE_RECOMPUTE", "ACTIVATION_BYTES", "linear_flops_split",
           "EXPERT_ROUTINGS", "train_option_names", "cp_exchange_s", "ParallelLayout", "parallel_layout"]


class _Model(Protocol):
    name: str
    total_params: float
    active_params: float
    layers: int
    attention_heads: int
    head_dim: int
    kv_heads: int


class _Gpu(Protocol):
    name: str
    hbm_bytes_per_s: float
    bf16_flops: float
    fp8_flops: float | None
    scale_up_bytes_per_s: float
    nic_bytes_per_s: float
    host_link_bytes_per_s: float
    gpus_per_node: int


BACKENDS = ("fsdp2", "megatron")
DISPATCHES = ("contiguous", "round_robin", "balanced", "balanced_minibatch", "lpt", "packed")

#: Achieved FLOPs utilization per backend (the FLOPs of :func:`sequence_flops`, and of the activation
#: recompute, over the dense peak: FP8 for the blocks' GEMMs under ``precision="fp8"``, BF16 for the
#: rest), on the reference families (every family without a factor in :data:`MFU_FAMILY`). Fitted by
#: :func:`fit` on the :data:`CALIBRATION` rows of those families, each at its published recompute,
#: layout and precision; a test checks that the fit reproduces these values.
MFU: dict[str, float] = {"fsdp2": 0.3878, "megatron": 0.4927}

#: Training families (:func:`train_family`): the accelerator's architecture family, except the H20,
#: a Hopper with a seventh of the H100's dense compute for more memory bandwidth (148 TFLOP/s BF16
#: against 4.0 TB/s: 37 FLOP per byte, the H100 295), which reaches a higher share of its small peak.
TRAIN_FAMILIES: dict[str, str] = {"H20": "hopper-h20"}

#: The MFU factor of a training family, fitted by :func:`fit_families` on that family's calibration
#: rows once the backend MFUs are fitted on the others. Only where the residuals of one shared MFU
#: say so: under it (0.4498 for FSDP), the H20 row is +33 % (predicted slower than measured) while the
#: H100 and L20 rows are -20 % and -6 % (before the recompute and collectives were modelled: +25 %,
#: -13 %, -8 %). The H20 factor rests on one measurement (UniRL's balanced train phase):
#: its 0 % error there is no evidence; UniRL's contiguous row, a different dispatch of the same run,
#: checks it. Families without a factor (hopper SXM parts, ampere, ada, ...) take 1.
MFU_FAMILY: dict[str, float] = {"hopper-h20": 1.5449}

#: Training compute slows down while rollout runs on other GPUs beside it (shared host, PCIe, NICs
#: and power): vllm-project/vime measured its train compute at 81.4 s alone and 99.6 s with rollout
#: overlapping; 99.6 / 81.4 = 1.224.
OVERLAP_SLOWDOWN = 99.6 / 81.4

#: verl's collective timeout (``actor_rollout_ref.nccl_timeout``, 600 s in
#: ``verl/trainer/config/ppo_trainer.yaml``): a rank that waits longer for the slowest one aborts.
COLLECTIVE_TIMEOUT_S = 600.0

#: Bytes one Adam step reads and writes per parameter in mixed precision: read fp32 master weights,
#: fp32 gradients, both moments (4 x 4), write master weights and moments (3 x 4) and the bf16
#: copy (2).
OPTIMIZER_BYTES_PER_PARAM = 30.0

#: Fraction of the HBM peak an elementwise (fused, multi-tensor) optimizer kernel achieves. An
#: assumption, not fitted: the optimizer is milliseconds in every calibration case.
OPTIMIZER_HBM_EFFICIENCY = 0.7

#: Fraction of the link bandwidth the data-parallel collectives achieve (NCCL bus bandwidth is
#: typically 70-85 % of the line rate on NVLink and InfiniBand). An assumption, not fitted; the
#: tensor- and expert-parallel collectives use it too.
COLLECTIVE_EFFICIENCY = 0.75

#: Activation checkpointing modes of :func:`train_step_s` (torchtitan ``activation_checkpoint.mode``,
#: Megatron ``--recompute-granularity``).
AC_MODES = ("none", "selective", "full")

#: The default activation checkpointing per backend: the framework's own default. ``fsdp2``: verl's
#: ``actor_rollout_ref.model.enable_gradient_checkpointing: True`` (``verl/trainer/config/ppo_trainer.yaml``;
#: Hugging Face gradient checkpointing recomputes every decoder layer: ``"full"``); ``megatron``:
#: Megatron-LM's ``--recompute-granularity`` is unset by default (``"none"``).
ACTIVATION_CHECKPOINTING: dict[str, str] = {"fsdp2": "full", "megatron": "none"}

#: What ``activation_checkpointing="selective"`` recomputes per backend, as fractions of one
#: forward pass's (block linear FLOPs, attention FLOPs). ``fsdp2``: torchtitan's per-op policy
#: (``selective_ac_option = "op"``, the default of its Llama-3 configs) saves every compute op's
#: output "except every second mm" (``torchtitan/distributed/activation_checkpoint.py``) and saves
#: the flash-attention output: half the linear FLOPs again, no attention. ``megatron``: selective
#: recompute of the core attention (``--recompute-modules core_attn``, its default; Korthikanti et
#: al. 2022, arXiv 2205.05198): the attention FLOPs again, no linear layer.
SELECTIVE_RECOMPUTE: dict[str, tuple[float, float]] = {"fsdp2": (0.5, 0.0), "megatron": (0.0, 1.0)}

#: How a token's experts are chosen, for the expert-parallel all-to-all (:func:`train_step_s`).
EXPERT_ROUTINGS = ("random", "consecutive")

#: Bytes per activation value the tensor- and expert-parallel collectives move (BF16).
ACTIVATION_BYTES = 2.0

_MAX_GPUS = 1 << 20
_MAX_TOKENS = 1e15


def _peak(gpu: _Gpu, precision: str) -> float:
    if precision == "bf16":
        return float(gpu.bf16_flops)
    if precision == "fp8":
        if gpu.fp8_flops is None:
            raise invalid("precision", f"'fp8' needs an accelerator with FP8 tensor cores, {gpu.name} has none")
        return float(gpu.fp8_flops)
    raise invalid("precision", f"must be 'bf16' or 'fp8', got {precision!r}")


def _resolve(model: Any, accelerator: Any) -> tuple[_Model, _Gpu]:
    if isinstance(model, str) or isinstance(accelerator, str):
        from rollsim.hardware import specs  # the registry; imported late (it imports nothing of ours)

        if isinstance(model, str):
            model = specs.model(model)
        if isinstance(accelerator, str):
            accelerator = specs.accelerator(accelerator)
    return model, accelerator


def sequence_flops(model: _Model, lengths: Any) -> np.ndarray:
    """FLOPs of one forward pass over each sequence.

    Parameters
    ----------
    model : ModelSpec
        Its ``active_params``, ``layers``, ``attention_heads`` and ``head_dim`` are used.
    lengths : array-like of float
        Tokens of each sequence (prompt + response), tokens.

    Returns
    -------
    numpy.ndarray
        ``2 N T + 2 layers heads head_dim T**2`` per sequence, FLOPs (float64).
    """
    t = np.asarray(lengths, dtype=np.float64)
    attn = 2.0 * model.layers * model.attention_heads * model.head_dim
    return 2.0 * float(model.active_params) * t + attn * t * t


# ---------------------------------------------------------------- ranks
def _lengths(field: str, lengths: Any) -> np.ndarray:
    try:
        a = np.asarray(lengths, dtype=np.float64)
    except (TypeError, ValueError):
        raise invalid(field, f"must be a sequence of token counts (numbers in [1, 1e9]), got {lengths!r}") from None
    if a.ndim != 1 or a.size == 0:
        raise invalid(field, f"must be a non-empty 1-d sequence of token counts, got shape {a.shape}")
    bad = ~((a >= 1) & (a <= 1e9))
    if bad.any():
        i = int(np.argmax(bad))
        raise invalid(field, f"every length must be in [1, 1e9] tokens, got {float(a[i])!r} at index {i}")
    return a


def assign_ranks(lengths: Any, ranks: int, *, dispatch: str = "balanced", workload: Any = None,
                 max_tokens_per_gpu: float | None = None, mini_batches: int = 1) -> list[np.ndarray]:
    """Which sequences each data-parallel rank trains.

    Parameters
    ----------
    lengths : array-like of float
        Tokens per sequence in batch order (a GRPO group's answers consecutive), tokens.
    ranks : int
        Data-parallel ranks, in [1, 2**20]; ``contiguous``, ``round_robin`` and ``balanced``
        need ``len(lengths)`` divisible by it (equal counts per rank, as verl's dispatch does).
    dispatch : {"contiguous", "round_robin", "balanced", "balanced_minibatch", "lpt", "packed"}
        See the module docstring.
    workload : array-like of float, optional
        What ``balanced`` and ``packed`` balance (default: the tokens themselves), e.g.
        :func:`sequence_flops`.
    max_tokens_per_gpu : float, optional
        ``packed`` only: the token budget of one micro-batch, tokens (at least the longest
        sequence).
    mini_batches : int
        Mini-batches each rank cuts its samples into (``balanced_minibatch`` balances them one by
        one). The balancing dispatches keep the batch order (``contiguous``) when it is the better
        split: the heuristics alone (verl's included) can be a few per cent worse than an order
        that happens to be balanced already; a balancer here is never slower than no balancing.

    Returns
    -------
    list of numpy.ndarray
        ``ranks`` index arrays (int64), each in the order the rank trains them (cut into
        consecutive mini-batches): batch order, except ``lpt`` (heaviest first) and
        ``balanced_minibatch`` (mini-batch by mini-batch).

    Raises
    ------
    ScenarioError (ValueError)
        A bad length, rank count, dispatch name or budget.
    """
    t = _lengths("lengths", lengths)
    k = _check.integer("ranks", ranks, 1, _MAX_GPUS)
    if dispatch not in DISPATCHES:
        raise invalid("dispatch", f"must be one of {list(DISPATCHES)}, got {dispatch!r}")
    w = t if workload is None else np.ascontiguousarray(workload, dtype=np.float64)
    n = t.size
    if w.shape != t.shape:
        raise invalid("workload", f"must have one value per sequence ({n}), got shape {w.shape}")
    budget: float | None = None
    if dispatch == "packed":
        if max_tokens_per_gpu is None:
            raise invalid("max_tokens_per_gpu", "dispatch='packed' needs the micro-batch token budget, got None")
        budget = _check.bounded("max_tokens_per_gpu", max_tokens_per_gpu, 1, 1e9, "tokens")
        if budget < t.max():
            raise invalid("max_tokens_per_gpu", f"must be at least the longest sequence ({t.max():g} tokens), "
                          f"got {budget:g}")
    elif max_tokens_per_gpu is not None:
        raise invalid("max_tokens_per_gpu", f"applies to dispatch='packed' only, got dispatch={dispatch!r}")
    elif n % k:
        raise invalid("ranks", f"must divide the number of sequences ({n}) for dispatch={dispatch!r}, got {k}")
    m = _check.integer("mini_batches", mini_batches, 1, 1 << 24)
    if dispatch == "balanced_minibatch" and n % (k * m):
        raise invalid("mini_batches", f"ranks x mini_batches ({k} x {m}) must divide the number of sequences "
                      f"({n}) for dispatch='balanced_minibatch'")
    # the engine's dispatches (rust/rollsim-core/src/pipeline/trainer.rs), the one implementation
    return _rollsim.assign_ranks(t, w, k, dispatch, m, budget)


@dataclass(frozen=True)
class RankLoads:
    """The work of each data-parallel rank in each mini-batch (optimizer step) of a training step.

    Attributes
    ----------
    dispatch : str
        How samples reached ranks.
    flops : numpy.ndarray
        Shape ``(mini_batches, ranks)``: forward FLOPs of each rank's sequences in each mini-batch.
    tokens : numpy.ndarray
        Shape ``(mini_batches, ranks)``: tokens of each rank in each mini-batch.
    rank_flops_per_s : float
        FLOP/s one rank achieves (its GPUs x peak x MFU), FLOP/s.
    sq_tokens : numpy.ndarray, optional
        Shape ``(mini_batches, ranks)``: the sum of each rank's sequences' squared lengths in each
        mini-batch (the attention term's), tokens**2.
    """

    dispatch: str
    flops: np.ndarray
    tokens: np.ndarray
    rank_flops_per_s: float
    sq_tokens: np.ndarray | None = None

    @property
    def ranks(self) -> int:
        return int(self.flops.shape[1])

    @property
    def slowest_fraction(self) -> float:
        """Sum over mini-batches of the slowest rank's FLOPs over the sum of the mean rank's: 1 is
        perfectly balanced; the step's compute is this much longer than an even split."""
        mean = float(self.flops.mean(axis=1).sum())
        return float(self.flops.max(axis=1).sum()) / mean if mean > 0 else 1.0

    def forward_s(self) -> float:
        """Seconds of one forward pass over the batch at the slowest rank's pace (per mini-batch)."""
        return float(self.flops.max(axis=1).sum()) / self.rank_flops_per_s

    def spread_s(self, passes: float = 3.0) -> float:
        """Largest wait of the fastest rank for the slowest in one mini-batch of ``passes`` forward
        equivalents (3: forward + backward), seconds."""
        d = (self.flops.max(axis=1) - self.flops.min(axis=1)).max()
        return float(d) * passes / self.rank_flops_per_s

    def exceeds_timeout(self, timeout_s: float = COLLECTIVE_TIMEOUT_S, passes: float = 3.0) -> bool:
        """True if a rank would wait longer than ``timeout_s`` seconds at a collective (the job
        aborts with an NCCL timeout; verl's default is 600 s)."""
        return self.spread_s(passes) > timeout_s


def group_lengths(prompt_tokens: float, response_tokens: Any) -> np.ndarray:
    """Sequence lengths (prompt + response), tokens, of a batch whose responses are given."""
    return _lengths("response_tokens", response_tokens) + float(prompt_tokens)


def rank_loads(model: Any, accelerator: Any, *, lengths: Any, train_gpus: int, model_parallel: int = 1,
               backend: str = "fsdp2", dispatch: str = "balanced", mini_batches: int = 1,
               max_tokens_per_gpu: float | None = None, precision: str = "bf16",
               mfu: float | None = None, workload: Any = None) -> RankLoads:
    """Each data-parallel rank's work per mini-batch for a batch of sequences.

    Parameters
    ----------
    model, accelerator : ModelSpec or str, Accelerator or str
        The policy and the GPU (names are looked up in :mod:`rollsim.hardware.specs`).
    lengths : array-like of float
        Tokens per sequence (prompt + response) in batch order, tokens.
    train_gpus : int
        Training GPUs, in [1, 2**20]; ``train_gpus / model_parallel`` data-parallel ranks.
    model_parallel : int
        GPUs per data-parallel rank (tensor x pipeline x context parallel), must divide
        ``train_gpus``.
    backend : {"fsdp2", "megatron"}
        Picks the achieved MFU (:data:`MFU`).
    dispatch : {"contiguous", "round_robin", "balanced", "packed"}
        How samples reach ranks (:func:`assign_ranks`).
    mini_batches : int
        Optimizer steps per training step (verl's ``train_batch_size / ppo_mini_batch_size``); each
        rank cuts its samples into this many consecutive parts, and every part ends at a
        synchronization.
    max_tokens_per_gpu : float, optional
        Micro-batch token budget for ``dispatch="packed"``, tokens.
    precision : {"bf16", "fp8"}
        Which dense peak the MFU applies to.
    mfu : float, optional
        Your own measured MFU in (0, 1] instead of the backend default.
    workload : array-like of float, optional
        What the balancing dispatches balance, one value per sequence (default: its forward FLOPs,
        :func:`sequence_flops`; :func:`train_step_s` gives each sequence's seconds).

    Returns
    -------
    RankLoads

    Raises
    ------
    ScenarioError (ValueError)
        Any argument outside its range, or ranks that do not divide the batch.
    """
    model, accelerator = _resolve(model, accelerator)
    t = _lengths("lengths", lengths)
    gpus = _check.integer("train_gpus", train_gpus, 1, _MAX_GPUS)
    mp = _check.integer("model_parallel", model_parallel, 1, _MAX_GPUS)
    if gpus % mp:
        raise invalid("model_parallel", f"must divide train_gpus ({gpus}), got {mp}")
    m = _check.integer("mini_batches", mini_batches, 1, 1 << 24)
    rate = mp * _peak(accelerator, precision) * _mfu(backend, mfu, accelerator)
    ranks = gpus // mp
    f = sequence_flops(model, t)
    parts = assign_ranks(t, ranks, dispatch=dispatch, workload=f if workload is None else workload,
                         max_tokens_per_gpu=max_tokens_per_gpu, mini_batches=m)
    if any(len(p) < m for p in parts):
        raise invalid("mini_batches", f"must be at most the sequences of each rank ({min(len(p) for p in parts)}), "
                      f"got {m}")
    flops = np.zeros((m, ranks))
    tokens = np.zeros((m, ranks))
    sq = np.zeros((m, ranks))
    for r, p in enumerate(parts):
        for j, chunk in enumerate(np.array_split(p, m)):
            flops[j, r] = f[chunk].sum()
            tokens[j, r] = t[chunk].sum()
            sq[j, r] = (t[chunk] * t[chunk]).sum()
    return RankLoads(dispatch, flops, tokens, rate, sq)


def train_family(accelerator: Any) -> str:
    """The training family of an accelerator (:data:`TRAIN_FAMILIES`, else its ``family``)."""
    return TRAIN_FAMILIES.get(getattr(accelerator, "name", ""), str(getattr(accelerator, "family", "")))


def achieved_mfu(backend: str, accelerator: Any) -> float:
    """The MFU :func:`train_step_s` uses by default: the backend's (:data:`MFU`) times the
    accelerator's family factor (:data:`MFU_FAMILY`), at most 1.

    Raises ScenarioError for an unknown backend."""
    if backend not in BACKENDS:
        raise invalid("backend", f"must be one of {list(BACKENDS)}, got {backend!r}")
    _, gpu = _resolve(None, accelerator)
    return min(1.0, MFU[backend] * MFU_FAMILY.get(train_family(gpu), 1.0))


def _mfu(backend: str, mfu: float | None, accelerator: Any) -> float:
    if backend not in BACKENDS:
        raise invalid("backend", f"must be one of {list(BACKENDS)}, got {backend!r}")
    if mfu is None:
        return achieved_mfu(backend, accelerator)
    return _check.bounded("mfu", mfu, 0, 1, lo_open=True)


# ---------------------------------------------------------------- structure of a step
@dataclass(frozen=True)
class _Plan:
    """One rank's seconds per term of a training step as coefficients of its tokens (``sum T``)
    and squared tokens (``sum T**2``), built by :func:`_plan` from the options of
    :func:`train_step_s`. ``compute`` maps each compute phase to ``(forward passes, recompute
    epochs, scale)``."""

    fwd_a: float        # one forward pass, seconds per token
    fwd_b: float        # one forward pass, seconds per token**2 (attention)
    rc_a: float         # the activation recompute of one epoch, seconds per token
    rc_b: float         # the same, seconds per token**2
    tp_s: float         # exposed tensor-parallel collectives of one forward pass, seconds per token
    ep_s: float         # exposed expert-parallel all-to-all of one forward pass, seconds per token
    cp_s: float         # context-parallel K/V exchange of one forward pass, seconds per token (before hiding)
    cp_hide: float      # attention compute one forward pass's exchange hides behind, seconds per token**2
    cp_passes: float    # forward-pass equivalents of K/V exchange in the step (a backward is 2: K/V and dK/dV)
    comm_passes: float  # forward-pass equivalents of collectives in the step (a backward is 1, a full recompute 1)
    compute: dict[str, tuple[float, float, float]]
    slow: float         # OVERLAP_SLOWDOWN, or 1
    bubble: float       # pipeline bubble over the rest: (pp - 1) / (virtual_pipeline x micro-batches)

    def phases(self, tokens: Any, sq_tokens: Any, fwd_s: float | None = None) -> dict[str, Any]:
        """Seconds of each term of one rank's work of ``tokens`` tokens and ``sq_tokens`` squared
        tokens (``fwd_s``: its forward pass, when the caller has it); floats, or numpy arrays of one
        value per sequence."""
        f = self.fwd_a * tokens + self.fwd_b * sq_tokens if fwd_s is None else fwd_s
        rc = self.rc_a * tokens + self.rc_b * sq_tokens
        out = {k: (n * f + r * rc) * s * self.slow for k, (n, r, s) in self.compute.items()}
        out["tp_comm"] = self.tp_s * tokens * self.comm_passes
        out["ep_comm"] = self.ep_s * tokens * self.comm_passes
        cp = self.cp_passes * np.maximum(0.0, self.cp_s * tokens - self.cp_hide * sq_tokens) if self.cp_s else 0.0 * tokens
        out["cp_comm"] = float(cp) if np.ndim(cp) == 0 else cp
        out["pipeline_bubble"] = self.bubble * sum(out.values())
        return out


def _ac_mode(backend: str, activation_checkpointing: str | None) -> str:
    if activation_checkpointing is None:
        return ACTIVATION_CHECKPOINTING[backend]
    if activation_checkpointing not in AC_MODES:
        raise invalid("activation_checkpointing", f"must be one of {list(AC_MODES)}, or None for the backend's "
                      f"default ({ACTIVATION_CHECKPOINTING}), got {activation_checkpointing!r}")
    return str(activation_checkpointing)


def linear_flops_split(model: Any) -> tuple[float, float]:
    """Matrix FLOPs per token of one forward pass, ``(blocks, head)``, summing to ``2 N``: the
    transformer blocks' linear layers, and the output head with (untied) the embedding's share of
    ``N``. FP8 training runs only the first at the FP8 peak: torchtitan's Float8 converter skips the
    output layer (``float8.filter_fqns = "output"`` in
    ``torchtitan/models/llama3/train_configs/llama3_8b.toml``) and Megatron keeps its output layer
    out of Transformer Engine's FP8 modules; attention (:func:`sequence_flops`' second term) runs at
    BF16 in both."""
    n2 = 2.0 * float(model.active_params)
    vocab = float(getattr(model, "vocab_size", 0) or 0) * float(getattr(model, "hidden_size", 0) or 0)
    tied = bool((getattr(model, "extra", None) or {}).get("tie_word_embeddings", False))
    head = min(n2, 2.0 * vocab * (1.0 if tied else 2.0))
    return n2 - head, head


def _touched(experts: int, k: int, parts: int, routing: str) -> float:
    """Expected number of ``parts`` (equal consecutive shares of the ``experts``: EP ranks, or nodes)
    holding at least one of a token's ``k`` experts. ``"random"``: the ``k`` experts drawn uniformly
    without replacement (balanced in expectation), ``parts x (1 - C(E - E/parts, k) / C(E, k))``.
    ``"consecutive"``: token ``i`` routed to experts ``i k, ..., i k + k - 1`` (mod E), NeMo
    Automodel's ``FakeBalancedGate`` (``nemo_automodel/components/moe/layers.py``), which its
    published benchmarks use: the span's shares, averaged over the tokens' offsets."""
    if parts <= 1:
        return 1.0
    if routing == "consecutive":
        q = experts / parts
        starts = experts // math.gcd(experts, k)
        return sum(math.ceil(((i * k) % experts % q + k) / q - 1e-9) for i in range(starts)) / starts
    other = experts - experts / parts
    miss = 1.0
    for i in range(min(k, experts)):
        miss *= max(0.0, other - i) / (experts - i)
    return parts * (1.0 - miss)


def _link(gpu: _Gpu, span: int) -> float:
    """Bandwidth of a collective among ``span`` consecutive GPUs: NVLink inside a node, the NIC beyond."""
    return float(gpu.scale_up_bytes_per_s) if span <= int(gpu.gpus_per_node) else float(gpu.nic_bytes_per_s)


def _plan(model: _Model, gpu: _Gpu, *, backend: str, mp: int, tp: int, pp: int, vp: int, ep: int, precision: str,
          mfu: float | None, ac: str, epochs: int, flags: dict[str, bool], critic_scale: float, micro: int,
          tp_overlap: float, ep_overlap: float, expert_routing: str = "random", etp: int | None = None) -> _Plan:
    eff = _mfu(backend, mfu, gpu)
    r_lin = mp * _peak(gpu, precision) * eff
    r_bf16 = mp * float(gpu.bf16_flops) * eff
    attn = 2.0 * model.layers * model.attention_heads * model.head_dim
    block, head = linear_flops_split(model)
    fwd_a = 2.0 * float(model.active_params) / r_lin if r_lin == r_bf16 else block / r_lin + head / r_bf16
    fwd_b = attn / r_bf16
    if ac == "full":  # every block's forward once more in the backward
        rc_a, rc_b = block / r_lin, attn / r_bf16
    elif ac == "selective":
        lin, att = SELECTIVE_RECOMPUTE[backend]
        rc_a, rc_b = lin * block / r_lin, att * attn / r_bf16
    else:
        rc_a = rc_b = 0.0
    e = float(epochs)
    cs = critic_scale if flags["critic"] else 0.0
    compute = {"actor": (3.0 * e, 0.0, 1.0), "logprob": (float(flags["recompute_logprob"]), 0.0, 1.0),
               "reference": (float(flags["reference"]), 0.0, 1.0), "critic": (1.0 + 3.0 * e, e, cs),
               "recompute": (0.0, e, 1.0)}
    full = 1.0 if ac == "full" else 0.0
    passes = e * (2.0 + full) + float(flags["recompute_logprob"]) + float(flags["reference"])
    if flags["critic"]:
        passes += 1.0 + e * (2.0 + full)
    cp = mp // (tp * pp)
    hidden = float(getattr(model, "hidden_size", 0) or 0)
    tp_s = 0.0
    if tp > 1:  # per layer and forward pass, two all-reduces (or reduce-scatter + all-gather) of tokens x hidden
        ring = 2.0 * (tp - 1) / tp * hidden * ACTIVATION_BYTES
        tp_s = (model.layers / pp) * 2.0 * ring / (cp * _link(gpu, tp) * COLLECTIVE_EFFICIENCY) * (1.0 - tp_overlap)
    ep_s = 0.0
    moe_layers = int(getattr(model, "moe_layers", 0) or 0)
    if ep > 1 and moe_layers:  # per MoE layer and forward pass, dispatch + combine of each token's activation
        one = hidden * ACTIVATION_BYTES / (tp * cp)  # each GPU sends its share of the rank's tokens
        # the group's ranks on one node: Megatron-Core's expert grid (tp-ep-dp-pp, MoE parallel folding) puts an
        # expert-parallel group's ranks expert_tensor_parallel GPUs apart (tensor_parallel x context_parallel
        # before the folding: the same where expert_tensor_parallel = tensor_parallel and there is no cp)
        local = max(1, min(ep, int(gpu.gpus_per_node) // (tp if etp is None else etp)))
        nodes = -(-ep // local)
        k = int(getattr(model, "experts_per_token", 1) or 1)
        experts = int(getattr(model, "experts", 0) or 0) or k * ep
        # a token's activation goes once to each other rank holding one of its experts, and over the
        # network once to each other node (DeepEP's dispatch: one copy per rank, one RDMA copy per
        # node forwarded over NVLink inside it; deepseek-ai/DeepEP README, "normal kernels")
        ranks = _touched(experts, k, ep, expert_routing)
        inside = one * ranks * (local - 1) / ep / (float(gpu.scale_up_bytes_per_s) * COLLECTIVE_EFFICIENCY)
        remote = _touched(experts, k, nodes, expert_routing) * (nodes - 1) / nodes
        outside = one * remote / (float(gpu.nic_bytes_per_s) * COLLECTIVE_EFFICIENCY)
        ep_s = (moe_layers / pp) * 2.0 * max(inside, outside) * (1.0 - ep_overlap)
    cp_s = cp_hide = cp_passes = 0.0
    if cp > 1:
        cp_s = cp_exchange_s(model, gpu, tp=tp, pp=pp, cp=cp)
        cp_hide = fwd_b * (cp - 1) / cp  # the attention of the cp - 1 ring steps a transfer overlaps
        # a forward 1, a backward 2 (K/V again, and dK/dV back around the ring), a recompute of the
        # attention 1 (full, or Megatron's selective core attention)
        att_rc = 1.0 if ac == "full" else (SELECTIVE_RECOMPUTE[backend][1] if ac == "selective" else 0.0)
        cp_passes = e * (3.0 + att_rc) + float(flags["recompute_logprob"]) + float(flags["reference"])
        if flags["critic"]:
            cp_passes += 1.0 + e * (3.0 + att_rc)
    bubble = (pp - 1) / (vp * micro) if pp > 1 else 0.0
    return _Plan(fwd_a, fwd_b, rc_a, rc_b, tp_s, ep_s, cp_s, cp_hide, cp_passes, passes, compute,
                 OVERLAP_SLOWDOWN if flags["overlap_rollout"] else 1.0, bubble)


def cp_exchange_s(model: Any, accelerator: Any, *, tp: int = 1, pp: int = 1, cp: int = 2) -> float:
    """Seconds per token (of a data-parallel rank's tokens) of one forward pass's ring-attention K/V
    exchange under context parallelism ``cp``, before any of it hides behind compute.

    Each of the ``cp`` ranks of a context-parallel group holds ``T / cp`` tokens of every sequence
    and, per layer of its pipeline stage (``layers / pp``), passes its shard of K and V (``2 x
    kv_heads / tp x head_dim x 2`` bytes per token on each tensor-parallel GPU; at least one head
    per GPU) ``cp - 1`` times to its ring neighbour (Transformer Engine's ``AttnFuncWithCPAndKVP2P``,
    ``transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py``: the
    point-to-point "communications of KV and dKV"). All GPUs send at once, so one pass costs
    ``layers / pp x (cp - 1) / cp x T x bytes per token / (0.75 x link)``, the link that of the
    ``tp x cp`` consecutive GPUs the group spans (Megatron orders TP innermost, then CP): NVLink
    inside a node, the NIC beyond. :func:`train_step_s` hides it behind the attention compute of the
    same layer and pass (the ring sends the next shard while it computes on the current one): the
    ``cp_comm`` phase is only the excess.
    """
    model, accelerator = _resolve(model, accelerator)
    tp = _check.integer("tensor_parallel", tp, 1, _MAX_GPUS)
    pp = _check.integer("pipeline_parallel", pp, 1, _MAX_GPUS)
    cp = _check.integer("context_parallel", cp, 1, _MAX_GPUS)
    kv_heads = int(getattr(model, "kv_heads", 0) or model.attention_heads)
    per_gpu = max(1.0, kv_heads / tp)
    per_token = 2.0 * per_gpu * float(model.head_dim) * ACTIVATION_BYTES  # K and V
    link = _link(accelerator, tp * cp) * COLLECTIVE_EFFICIENCY
    return (model.layers / pp) * (cp - 1) / cp * per_token / link


#: train_step_s arguments a deployment sets itself (not ``Deployment.train_options`` / ``--train-option``).
_SET_BY_DEPLOYMENT = ("model", "accelerator", "train_gpus", "backend", "tokens", "sequences", "lengths",
                      "critic_model")


def train_option_names() -> list[str]:
    """The training options of a deployment (``Deployment.train_options``, the CLI's
    ``--train-option``): the keyword arguments of :func:`train_step_s` it does not set itself, read
    from the signature."""
    import inspect

    return [k for k in inspect.signature(train_step_s).parameters if k not in _SET_BY_DEPLOYMENT]


#: The parallelism sizes' short names in Megatron-LM and the RL frameworks' configs (``tp``, ``pp``,
#: ``vpp``, ``cp``, ``ep``, ``etp``: Megatron's ``--tensor-model-parallel-size``, ``--pipeline-model-parallel-size``,
#: ``--num-layers-per-virtual-pipeline-stage``, ``--context-parallel-size``, ``--expert-model-parallel-size``,
#: ``--expert-tensor-parallel-size``) as the training options they are.
OPTION_SHORT_NAMES: dict[str, str] = {"tp": "tensor_parallel", "pp": "pipeline_parallel", "vpp": "virtual_pipeline",
                                      "cp": "context_parallel", "ep": "expert_parallel", "etp": "expert_tensor_parallel"}


def option_hint(name: str, known: list[str]) -> str:
    """``"; did you mean tensor_parallel?"`` for an unknown training option ``name``: the option a
    short name stands for (:data:`OPTION_SHORT_NAMES`, ``tp``, ``TP-size``) or a near miss of one of
    ``known`` (:func:`rollsim._text.did_you_mean`, ``tensor_paralel``); ``""`` for neither."""
    from rollsim._text import did_you_mean

    word = str(name).strip().lower().replace("-", "_")
    short = OPTION_SHORT_NAMES.get(word.removesuffix("_size"))
    if short in known:
        return f"; did you mean {short}?"
    return did_you_mean(word, known)


# ---------------------------------------------------------------- the parallel layout
@dataclass(frozen=True)
class ParallelLayout:
    """A training job's parallel layout on ``train_gpus`` GPUs, as :func:`parallel_layout` checked it.

    The dense layers' grid is ``tensor_parallel x context_parallel x data_parallel x
    pipeline_parallel``; the MoE layers' grid is Megatron-Core's folded one (MoE parallel folding):
    ``expert_tensor_parallel x expert_parallel x expert_data_parallel x pipeline_parallel`` over the
    same GPUs, so the expert group spans the GPUs the dense layers give to tensor, context and data
    parallelism (NVIDIA/Megatron-LM ``megatron/core/parallel_state.py``, ``initialize_model_parallel``)."""

    train_gpus: int
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    context_parallel: int = 1
    expert_parallel: int = 1
    expert_tensor_parallel: int = 1

    @property
    def model_parallel(self) -> int:
        """GPUs per data-parallel rank of the dense layers: ``tp x pp x cp``."""
        return self.tensor_parallel * self.pipeline_parallel * self.context_parallel

    @property
    def data_parallel(self) -> int:
        """Data-parallel ranks of the dense layers: ``train_gpus / model_parallel``."""
        return self.train_gpus // self.model_parallel

    @property
    def expert_data_parallel(self) -> int:
        """Replicas of each routed expert: ``train_gpus / (expert_tensor_parallel x expert_parallel x pp)``."""
        return self.train_gpus // (self.expert_tensor_parallel * self.expert_parallel * self.pipeline_parallel)


def parallel_layout(train_gpus: int, *, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                    context_parallel: int | None = None, model_parallel: int | None = None, expert_parallel: int = 1,
                    expert_tensor_parallel: int | None = None, model: Any = None) -> ParallelLayout:
    """The parallel layout of a training job, checked as Megatron-Core checks it
    (``initialize_model_parallel``): ``tp x pp x cp`` must divide the GPUs (the dense layers' ranks),
    and ``expert_tensor_parallel x expert_parallel x pp`` must divide them too (the MoE layers' folded
    grid; ``expert_tensor_parallel`` defaults to ``tensor_parallel``, as in
    ``megatron/training/arguments.py``): expert parallel 8 with tensor parallel 2 on 8 GPUs needs
    ``expert_tensor_parallel=1``. With ``model``, ``pp`` must be at most its layers and
    ``expert_parallel`` must divide its routed experts (``arguments.py``: "Number of experts should be
    a multiple of expert model parallel_size"). The one derivation of :func:`train_step_s` and of the
    config importers' layout (``rollsim.configs``: the weight-sync cluster and the deployment's check).

    Raises
    ------
    ScenarioError (ValueError)
        Naming the argument, the sizes and the rule."""
    gpus = _check.integer("train_gpus", train_gpus, 1, _MAX_GPUS)
    tp = _check.integer("tensor_parallel", tensor_parallel, 1, _MAX_GPUS)
    pp = _check.integer("pipeline_parallel", pipeline_parallel, 1, _MAX_GPUS)
    cpg = None if context_parallel is None else _check.integer("context_parallel", context_parallel, 1, _MAX_GPUS)
    mp = (tp * pp * (cpg or 1) if model_parallel is None
          else _check.integer("model_parallel", model_parallel, 1, _MAX_GPUS))
    if mp % (tp * pp):
        raise invalid("model_parallel", f"must be a multiple of tensor_parallel x pipeline_parallel ({tp} x {pp}), "
                      f"got {mp}")
    if cpg is not None and mp != tp * pp * cpg:
        raise invalid("context_parallel", f"must be model_parallel / (tensor_parallel x pipeline_parallel) = "
                      f"{mp} / ({tp} x {pp}) = {mp // (tp * pp)}, got {cpg}")
    if gpus % mp:
        if model_parallel is not None:
            raise invalid("model_parallel", f"must divide train_gpus ({gpus}), got {mp}")
        if cpg is not None and cpg > 1:
            raise invalid("context_parallel", f"tensor_parallel x pipeline_parallel x context_parallel ({tp} x {pp} x "
                          f"{cpg}) must divide train_gpus ({gpus}), got {mp}")
        raise invalid("tensor_parallel", f"tensor_parallel x pipeline_parallel ({tp} x {pp}) must divide train_gpus "
                      f"({gpus}), got {mp}")
    if model is not None and pp > int(model.layers):
        raise invalid("pipeline_parallel", f"must be at most the model's {model.layers} layers, got {pp}")
    ep = _check.integer("expert_parallel", expert_parallel, 1, _MAX_GPUS)
    etp = tp if expert_tensor_parallel is None else _check.integer("expert_tensor_parallel", expert_tensor_parallel,
                                                                   1, _MAX_GPUS)
    if gpus % (etp * ep * pp):
        given = "; expert_tensor_parallel defaults to tensor_parallel" if expert_tensor_parallel is None and etp > 1 \
            else ""
        way = "; expert_tensor_parallel=1 allows it" if etp > 1 and gpus % (ep * pp) == 0 else ""
        raise invalid("expert_parallel", f"expert_tensor_parallel x expert_parallel x pipeline_parallel ({etp} x {ep} "
                      f"x {pp} = {etp * ep * pp}{given}) must divide train_gpus ({gpus}), got {ep}: Megatron-Core "
                      f"folds the expert group over the tensor, context and data-parallel GPUs of each pipeline "
                      f"stage (megatron/core/parallel_state.py, initialize_model_parallel){way}")
    experts = int(getattr(model, "experts", 0) or 0) if model is not None else 0
    if ep > 1 and experts and experts % ep:
        raise invalid("expert_parallel", f"must divide the model's {experts} routed experts (Megatron-LM: "
                      f"megatron/training/arguments.py), got {ep}")
    return ParallelLayout(gpus, tp, pp, mp // (tp * pp), ep, etp)


# ---------------------------------------------------------------- the step
def train_step_s(model: Any, accelerator: Any, *, train_gpus: int, backend: str = "fsdp2",
                 tokens: float | None = None, sequences: int | None = None, lengths: Any = None,
                 ppo_epochs: int = 1, recompute_logprob: bool = True, reference: bool = True,
                 critic: bool = False, critic_model: Any = None, mini_batches: int = 1,
                 model_parallel: int | None = None, tensor_parallel: int = 1, pipeline_parallel: int = 1,
                 virtual_pipeline: int = 1, context_parallel: int | None = None, expert_parallel: int = 1,
                 expert_tensor_parallel: int | None = None,
                 dispatch: str = "balanced", max_tokens_per_gpu: float | None = None, precision: str = "bf16",
                 activation_checkpointing: str | None = None, tp_overlap: float = 0.0, ep_overlap: float = 0.0,
                 expert_routing: str = "random", overlap_rollout: bool = False,
                 mfu: float | None = None) -> dict[str, float]:
    """Seconds of each phase of one RL training step, and their total.

    Parameters
    ----------
    model, accelerator : ModelSpec or str, Accelerator or str
        The policy and the training GPU.
    train_gpus : int
        Training GPUs, in [1, 2**20].
    backend : {"fsdp2", "megatron"}
        Picks the achieved MFU (:data:`MFU`), the default activation checkpointing
        (:data:`ACTIVATION_CHECKPOINTING`), what ``"selective"`` recomputes
        (:data:`SELECTIVE_RECOMPUTE`) and the data-parallel collectives (FSDP gathers parameters
        every micro-batch; Megatron's distributed optimizer reduce-scatters gradients and gathers
        parameters once per optimizer step).
    tokens : float, optional
        Tokens of the batch (prompt + response of every sequence), tokens. With ``sequences`` and
        without ``lengths``: every sequence has ``tokens / sequences`` tokens (the attention term is
        then a lower bound, and ranks are balanced).
    sequences : int, optional
        Sequences (samples) in the batch.
    lengths : array-like of float, optional
        Tokens of each sequence in batch order, instead of ``tokens`` and ``sequences``: exact
        attention FLOPs and the slowest rank under ``dispatch``.
    ppo_epochs : int
        Passes of the actor (and critic) over the batch, in [1, 1000].
    recompute_logprob : bool
        The old log-probabilities are recomputed by the trainer (verl, most PPO setups) rather than
        taken from the rollout engine.
    reference : bool
        A reference model computes log-probabilities for a KL term.
    critic : bool
        PPO with a value model (GAE); ``critic_model`` defaults to the policy's size.
    mini_batches : int
        Optimizer steps per epoch (each synchronizes the ranks).
    model_parallel : int, optional
        GPUs per data-parallel rank: ``tensor_parallel x pipeline_parallel x context_parallel``
        (the default, None, is that product); a multiple of ``tensor_parallel x
        pipeline_parallel``, the rest being context-parallel GPUs when ``context_parallel`` is not
        given.
    tensor_parallel : int
        Tensor-parallel GPUs (Megatron ``--tensor-model-parallel-size``, torchtitan
        ``parallelism.tensor_parallel_degree``): per layer and forward pass two all-reduces (or with
        sequence parallelism a reduce-scatter and an all-gather, the same bytes) of the tokens'
        activations (``tokens x hidden x 2`` bytes) among them, a backward as many again and a full
        recompute as many again, over NVLink inside a node (the NIC beyond): the ``tp_comm`` phase.
    pipeline_parallel : int
        Pipeline stages (``--pipeline-model-parallel-size``): each stage has ``layers /
        pipeline_parallel`` layers, and the step waits ``(pp - 1) / (virtual_pipeline x m)`` of its
        work in the pipeline's fill and drain (``pipeline_bubble``; ``m`` micro-batches per
        mini-batch and pipeline: ``ceil(tokens per rank and mini-batch / max_tokens_per_gpu)``,
        or one sequence each without ``max_tokens_per_gpu``; Narayanan et al. 2021, arXiv 2104.04473:
        ``(p - 1) / m`` for 1F1B, ``(p - 1) / (v m)`` interleaved).
    virtual_pipeline : int
        Model chunks per stage of the interleaved schedule (``--virtual-pipeline-model-parallel-size``),
        in [1, 1024].
    context_parallel : int, optional
        Context-parallel GPUs (Megatron ``--context-parallel-size``, torchtitan
        ``parallelism.context_parallel_degree``), in [1, 2**20]: each holds ``T / cp`` tokens of
        every sequence, so the tensor- and expert-parallel collectives carry ``1 / cp`` of the
        tokens each; the weights are replicated across them (the data-parallel collectives run
        over the ``data-parallel ranks x cp`` replicas of each shard), and ring attention passes each
        layer's K/V shard ``cp - 1`` times per forward pass (K/V and dK/dV in the backward) over
        the link the ``tp x cp`` GPUs span: the ``cp_comm`` phase, only what the attention compute
        it overlaps does not hide (:func:`cp_exchange_s`). Default None: ``model_parallel / (tp x
        pp)`` (1 without ``model_parallel``); given with ``model_parallel``, the two must agree.
    expert_parallel : int
        GPU groups a MoE layer's routed experts are split over (Megatron ``--expert-model-parallel-size``;
        they are then gathered only among the ``expert_data_parallel`` replicas of each shard).
        Megatron-Core folds the expert group over the tensor, context and data-parallel GPUs (MoE parallel
        folding, :func:`parallel_layout`): ``expert_tensor_parallel x expert_parallel x pipeline_parallel``
        must divide ``train_gpus``, and ``expert_parallel`` the model's routed experts. Each GPU sends its tokens' ``top_k`` copies (``hidden x 2`` bytes
        each) to the experts' ranks and gets them back (dispatch and combine) per MoE layer and
        forward pass, a backward as many again (and a full recompute): the ``ep_comm`` phase, over
        NVLink to the group's ranks on its node and over the NIC to the rest (the slower of the two).
    expert_tensor_parallel : int, optional
        GPUs each routed expert's weights are split over (Megatron ``--expert-tensor-parallel-size``),
        in [1, 2**20]; default None: ``tensor_parallel``, as Megatron. An expert-parallel group's ranks
        are this many GPUs apart (its ranks on one node: ``gpus_per_node / expert_tensor_parallel``).
    dispatch : {"contiguous", "round_robin", "balanced", "balanced_minibatch", "lpt", "packed"}
        How samples reach ranks (only matters with ``lengths``).
    max_tokens_per_gpu : float, optional
        Micro-batch token budget (``dispatch="packed"``; otherwise the FSDP micro-batch count
        defaults to one per mini-batch), tokens.
    precision : {"bf16", "fp8"}
        Training precision. FP8 (torchtitan's Float8 linears, Transformer Engine's FP8 recipes)
        runs the transformer blocks' GEMMs at the FP8 peak; the output head, the embedding and
        attention at the BF16 peak (:func:`linear_flops_split`).
    activation_checkpointing : {"none", "selective", "full"}, optional
        Activations recomputed in the backward (the ``recompute`` phase): ``"full"`` every block's
        forward once more; ``"selective"`` the backend's selective policy
        (:data:`SELECTIVE_RECOMPUTE`). Default None: the backend's framework default
        (:data:`ACTIVATION_CHECKPOINTING`).
    tp_overlap, ep_overlap : float
        Fractions of the tensor-parallel collectives and of the expert all-to-all that compute
        hides, in [0, 1] (default 0: vanilla TP, torchtitan's ``enable_async_tensor_parallel =
        False``; async TP, torchtitan ``parallelism.enable_async_tensor_parallel``, or Megatron's
        ``--tp-comm-overlap`` hide part of it, by how much depends on the shapes: give your measure).
    expert_routing : {"random", "consecutive"}
        Which experts a token's ``top_k`` are, for the all-to-all's destinations
        (:data:`EXPERT_ROUTINGS`): ``"random"`` (default) uniformly over all experts, as a trained,
        load-balanced router spreads them; ``"consecutive"`` token ``i`` to experts ``i k ... i k + k
        - 1``, NeMo Automodel's ``FakeBalancedGate`` (its benchmarks' "fake balanced gate"), whose
        tokens reach one or two ranks.
    overlap_rollout : bool
        Rollout runs on other GPUs beside training: compute phases take :data:`OVERLAP_SLOWDOWN`
        times longer.
    mfu : float, optional
        Your own measured MFU in (0, 1] instead of the backend default.

    Returns
    -------
    dict of str to float
        ``actor`` (forward + backward), ``logprob``, ``reference``, ``critic``, ``optimizer``,
        ``collectives`` (data-parallel), ``recompute`` (activation checkpointing of the actor),
        ``tp_comm``, ``ep_comm``, ``cp_comm``, ``pipeline_bubble`` and ``total``, seconds.

    Raises
    ------
    ScenarioError (ValueError)
        Any argument outside its range, neither ``lengths`` nor ``tokens`` and ``sequences``, or
        both.

    Examples
    --------
    Hand-checkable: 1e9 active parameters, 1e6 tokens of 1 000-token sequences on 8 GPUs of
    1e15 FLOP/s at MFU 0.5 spend ``6e15 (1 + attention) / 4e15`` seconds in the actor pass.
    """
    model, accelerator = _resolve(model, accelerator)
    lay = parallel_layout(train_gpus, tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                          context_parallel=context_parallel, model_parallel=model_parallel,
                          expert_parallel=expert_parallel, expert_tensor_parallel=expert_tensor_parallel, model=model)
    gpus, tp, pp, mp, ep, etp = (lay.train_gpus, lay.tensor_parallel, lay.pipeline_parallel, lay.model_parallel,
                                 lay.expert_parallel, lay.expert_tensor_parallel)
    vp = _check.integer("virtual_pipeline", virtual_pipeline, 1, 1024)
    epochs = _check.integer("ppo_epochs", ppo_epochs, 1, 1000)
    m = _check.integer("mini_batches", mini_batches, 1, 1 << 24)
    flags = {k: _check.flag(k, v) for k, v in (("recompute_logprob", recompute_logprob), ("reference", reference),
                                               ("critic", critic), ("overlap_rollout", overlap_rollout))}
    ac = _ac_mode(backend if backend in BACKENDS else "fsdp2", activation_checkpointing)
    tpo = _check.bounded("tp_overlap", tp_overlap, 0, 1)
    epo = _check.bounded("ep_overlap", ep_overlap, 0, 1)
    if expert_routing not in EXPERT_ROUTINGS:
        raise invalid("expert_routing", f"must be one of {list(EXPERT_ROUTINGS)}, got {expert_routing!r}")
    rate = _peak(accelerator, precision) * _mfu(backend, mfu, accelerator)
    critic_scale = 1.0
    if flags["critic"] and critic_model is not None:
        cm, _ = _resolve(critic_model, accelerator)
        critic_scale = float(cm.active_params) / float(model.active_params)
    dp = gpus // mp
    single = _peak(accelerator, precision) == float(accelerator.bf16_flops)
    if lengths is not None:
        if tokens is not None or sequences is not None:
            raise invalid("lengths", "give either lengths or tokens and sequences, not both")
        t = _lengths("lengths", lengths)
        # the balancing dispatches balance each sequence's seconds, as the engine's ranks do
        probe = _plan(model, accelerator, backend=backend, mp=mp, tp=tp, pp=pp, vp=vp, ep=ep, precision=precision,
                      mfu=mfu, ac=ac, epochs=epochs, flags=flags, critic_scale=critic_scale, micro=1,
                      tp_overlap=tpo, ep_overlap=epo, expert_routing=expert_routing, etp=etp)
        work: np.ndarray | None = None
        if ac != "none" or tp > 1 or ep > 1 or not single:
            work = np.sum(list(probe.phases(t, t * t).values()), axis=0)
        loads = rank_loads(model, accelerator, lengths=t, train_gpus=gpus, model_parallel=mp, backend=backend,
                           dispatch=dispatch, mini_batches=m, max_tokens_per_gpu=max_tokens_per_gpu,
                           precision=precision, mfu=mfu, workload=work)
        mb_tokens = float(loads.tokens.max())
        n_seq = t.size
    else:
        if tokens is None or sequences is None:
            raise invalid("tokens", "give tokens and sequences (or lengths), got "
                          f"tokens={tokens!r}, sequences={sequences!r}")
        batch_tokens = _check.bounded("tokens", tokens, 1, _MAX_TOKENS, "tokens")
        n_seq = _check.integer("sequences", sequences, 1, 1 << 40)
        if n_seq > batch_tokens:
            raise invalid("sequences", f"must be at most tokens ({batch_tokens:g}), got {n_seq}")
        if max_tokens_per_gpu is not None:
            _check.bounded("max_tokens_per_gpu", max_tokens_per_gpu, 1, 1e9, "tokens")
        mb_tokens = batch_tokens / dp / m
    if max_tokens_per_gpu is not None:
        micro = max(1, math.ceil(mb_tokens / float(max_tokens_per_gpu)))
    else:
        micro = max(1, math.ceil(n_seq / (dp * m)))  # one sequence per micro-batch
    plan = _plan(model, accelerator, backend=backend, mp=mp, tp=tp, pp=pp, vp=vp, ep=ep, precision=precision,
                 mfu=mfu, ac=ac, epochs=epochs, flags=flags, critic_scale=critic_scale, micro=micro, tp_overlap=tpo,
                 ep_overlap=epo, expert_routing=expert_routing, etp=etp)
    if lengths is not None:
        sq = loads.sq_tokens
        assert sq is not None
        run: dict[str, float] = {}
        for j in range(m):  # each mini-batch waits for its slowest rank
            per_rank = [plan.phases(float(loads.tokens[j, r]), float(sq[j, r]),
                                    float(loads.flops[j, r]) / loads.rank_flops_per_s if single else None)
                        for r in range(loads.ranks)]
            slowest = max(per_rank, key=lambda p: sum(p.values()))
            for k, v in slowest.items():
                run[k] = run.get(k, 0.0) + v
    else:
        per = batch_tokens / n_seq
        fwd = float(sequence_flops(model, [per])[0]) * n_seq / (gpus * rate) if single else None
        run = plan.phases(batch_tokens / dp, per * per * n_seq / dp, fwd)
    phases = {k: run[k] for k in ("actor", "logprob", "reference", "critic")}
    params_per_gpu = float(model.total_params) / gpus
    opt_one = OPTIMIZER_BYTES_PER_PARAM * params_per_gpu / (accelerator.hbm_bytes_per_s * OPTIMIZER_HBM_EFFICIENCY)
    steps = epochs * m
    phases["optimizer"] = steps * opt_one * (1.0 + (critic_scale if flags["critic"] else 0.0))
    hide = (run["actor"] + run["recompute"]) / (epochs * m)
    phases["collectives"] = steps * _exposed_comm(model, accelerator, lay, backend, mb_tokens, max_tokens_per_gpu,
                                                  hide)
    for k in ("recompute", "tp_comm", "ep_comm", "cp_comm", "pipeline_bubble"):
        phases[k] = run[k]
    phases["total"] = sum(phases.values())
    return phases


def _exposed_comm(model: _Model, gpu: _Gpu, lay: ParallelLayout, backend: str, mb_tokens: float,
                  max_tokens_per_gpu: float | None, compute_s: float) -> float:
    """Seconds of one optimizer step's data-parallel traffic not hidden behind its compute. The
    ``cp`` context-parallel GPUs of a rank hold the same weights: each dense shard (of ``tp x pp``
    GPUs) has ``dp x cp`` replicas, among which its gradients are reduced and its parameters
    gathered; each routed expert's shard (of ``expert_tensor_parallel x expert_parallel x pp`` GPUs,
    Megatron-Core's folded grid) has ``expert_data_parallel`` replicas."""
    gpus = lay.train_gpus
    dp = lay.data_parallel * lay.context_parallel
    if dp == 1 and lay.expert_data_parallel == 1:
        return 0.0
    shard = lay.tensor_parallel * lay.pipeline_parallel
    routed = float(getattr(model, "routed_params", 0.0))
    dense_bytes = 2.0 * (float(model.total_params) - routed) / shard
    expert_bytes = 2.0 * routed / (lay.expert_tensor_parallel * lay.expert_parallel * lay.pipeline_parallel)
    replicas = lay.expert_data_parallel
    link = gpu.scale_up_bytes_per_s if gpus <= gpu.gpus_per_node else gpu.nic_bytes_per_s
    one = dense_bytes * (dp - 1) / dp + expert_bytes * (replicas - 1) / replicas  # one gather or reduce-scatter
    if backend == "fsdp2":
        micro = 1 if max_tokens_per_gpu is None else max(1, math.ceil(mb_tokens / float(max_tokens_per_gpu)))
        moved = micro * 3.0 * one  # all-gather forward and backward, reduce-scatter gradients
    else:
        moved = 2.0 * one  # distributed optimizer: reduce-scatter gradients, all-gather parameters
    return max(0.0, moved / (link * COLLECTIVE_EFFICIENCY) - compute_s)


def engine_train_params(model: Any, accelerator: Any, *, train_gpus: int, mean_tokens: float,
                        slowest_fraction: float = 1.0, **kwargs: Any) -> dict[str, float]:
    """The engine's train-step parameters (``Scenario.train_step_s`` and
    ``Scenario.train_s_per_token``) from :func:`train_step_s`.

    The engine's step is ``fixed + per_token x batch tokens``. The per-token part is the compute of a
    batch of ``mean_tokens``-token sequences (its attention term at that length), scaled by the
    expected slowest rank's share ``slowest_fraction`` (:attr:`RankLoads.slowest_fraction` of a
    representative batch); the fixed part is the optimizer and the exposed collectives.

    Parameters
    ----------
    model, accelerator, train_gpus
        As for :func:`train_step_s`.
    mean_tokens : float
        Mean tokens per sequence (prompt + response), tokens, in [1, 1e9].
    slowest_fraction : float
        Expected slowest-rank factor, in [1, 1e6]. The activation recompute and the tensor- and
        expert-parallel collectives are per token too; the pipeline bubble is a large batch's
        (nearly none): :func:`engine_train_ranks` prices it at the real batch.
    **kwargs
        Any other argument of :func:`train_step_s` except ``tokens``, ``sequences`` and
        ``lengths``.

    Returns
    -------
    dict of str to float
        ``train_step_s`` (seconds) and ``train_s_per_token`` (seconds/token).

    Raises
    ------
    ScenarioError (ValueError)
        As :func:`train_step_s`.
    """
    mean = _check.bounded("mean_tokens", mean_tokens, 1, 1e9, "tokens")
    slowest = _check.bounded("slowest_fraction", slowest_fraction, 1, 1e6)
    for k in ("tokens", "sequences", "lengths"):
        if k in kwargs:
            raise invalid(k, "is set by engine_train_params (the per-token rate is for any batch)")
    n = 1 << 20
    ph = train_step_s(model, accelerator, train_gpus=train_gpus, tokens=mean * n, sequences=n, **kwargs)
    compute = ph["actor"] + ph["logprob"] + ph["reference"] + ph["critic"]
    for k in ("recompute", "tp_comm", "ep_comm", "cp_comm", "pipeline_bubble"):  # 0 unless their options are set
        compute += ph[k]
    fixed = ph["optimizer"] + ph["collectives"]
    return {"train_step_s": fixed, "train_s_per_token": compute * slowest / (mean * n)}


def engine_train_ranks(model: Any, accelerator: Any, *, train_gpus: int, batch_size: int, mean_tokens: float,
                       backend: str = "fsdp2", dispatch: str = "balanced", ppo_epochs: int = 1,
                       recompute_logprob: bool = True, reference: bool = True, critic: bool = False,
                       critic_model: Any = None, mini_batches: int = 1, model_parallel: int | None = None,
                       tensor_parallel: int = 1, pipeline_parallel: int = 1, virtual_pipeline: int = 1,
                       context_parallel: int | None = None, expert_parallel: int = 1,
                       expert_tensor_parallel: int | None = None, max_tokens_per_gpu: float | None = None,
                       precision: str = "bf16",
                       activation_checkpointing: str | None = None, tp_overlap: float = 0.0,
                       ep_overlap: float = 0.0, expert_routing: str = "random", overlap_rollout: bool = False,
                       mfu: float | None = None) -> dict[str, Any]:
    """The fields of the engine's per-rank training part (:class:`rollsim.TrainRanks`) from the
    phases of :func:`train_step_s`, so that a simulated step sees the real batch: which sequences
    land on which rank, and each sequence's attention term.

    Every sequence costs each compute phase's passes (``3 x ppo_epochs`` for the actor, one each for
    the log-prob recompute and the reference, ``1 + 3 x ppo_epochs`` of the critic's size, and the
    activation recompute) of :func:`sequence_flops` at one rank's FLOP/s (``model_parallel`` GPUs x
    peak x MFU, FP8 for the blocks' GEMMs only, slowed by :data:`OVERLAP_SLOWDOWN` with
    ``overlap_rollout``), plus its share of the tensor- and expert-parallel collectives (and of the
    exposed context-parallel K/V exchange, taken at ``mean_tokens``: it is what the attention of a
    ``mean_tokens`` sequence does not hide), times one
    plus the pipeline bubble of a batch of ``batch_size`` sequences: ``s_per_token`` is its linear
    part, ``s_per_token_sq`` its attention part. ``fixed_s`` is one mini-batch's share of the
    optimizer and the exposed data-parallel collectives of a batch of ``batch_size`` sequences of
    ``mean_tokens`` tokens. Given the same batch, the engine's step then equals
    :func:`train_step_s` with ``lengths`` (up to the collectives, taken at the mean batch).

    Parameters
    ----------
    model, accelerator, train_gpus, backend, dispatch, ppo_epochs, recompute_logprob, reference,
    critic, critic_model, mini_batches, model_parallel, tensor_parallel, pipeline_parallel,
    virtual_pipeline, context_parallel, expert_parallel, expert_tensor_parallel, max_tokens_per_gpu, precision,
    activation_checkpointing, tp_overlap, ep_overlap, expert_routing, overlap_rollout, mfu
        As for :func:`train_step_s`.
    batch_size : int
        Sequences per training step, in [1, 2**24].
    mean_tokens : float
        Mean tokens per sequence (prompt + response), tokens, in [1, 1e9].

    Returns
    -------
    dict of str to Any
        ``dp_ranks``, ``dispatch``, ``s_per_token`` (seconds/token), ``s_per_token_sq``
        (seconds/token**2), ``fixed_s`` (seconds per mini-batch), ``mini_batches`` and
        ``max_tokens_per_gpu``: the arguments of :class:`rollsim.TrainRanks`.

    Raises
    ------
    ScenarioError (ValueError)
        As :func:`train_step_s`.
    """
    model, accelerator = _resolve(model, accelerator)
    n = _check.integer("batch_size", batch_size, 1, 1 << 24)
    mean = _check.bounded("mean_tokens", mean_tokens, 1, 1e9, "tokens")
    if dispatch not in DISPATCHES:
        raise invalid("dispatch", f"must be one of {list(DISPATCHES)}, got {dispatch!r}")
    opts = dict(backend=backend, ppo_epochs=ppo_epochs, recompute_logprob=recompute_logprob, reference=reference,
                critic=critic, critic_model=critic_model, mini_batches=mini_batches, model_parallel=model_parallel,
                tensor_parallel=tensor_parallel, pipeline_parallel=pipeline_parallel,
                virtual_pipeline=virtual_pipeline, context_parallel=context_parallel, expert_parallel=expert_parallel,
                expert_tensor_parallel=expert_tensor_parallel, max_tokens_per_gpu=max_tokens_per_gpu, precision=precision,
                activation_checkpointing=activation_checkpointing, tp_overlap=tp_overlap, ep_overlap=ep_overlap,
                expert_routing=expert_routing, overlap_rollout=overlap_rollout, mfu=mfu)
    ph = train_step_s(model, accelerator, train_gpus=train_gpus, tokens=mean * n, sequences=n, **opts)  # checks all
    tp, pp = int(tensor_parallel), int(pipeline_parallel)
    mp = tp * pp * int(context_parallel or 1) if model_parallel is None else int(model_parallel)
    m = int(mini_batches)
    dp = int(train_gpus) // mp
    critic_scale = 1.0
    if critic and critic_model is not None:
        cm, _ = _resolve(critic_model, accelerator)
        critic_scale = float(cm.active_params) / float(model.active_params)
    passes = 3.0 * ppo_epochs + float(recompute_logprob) + float(reference)
    if critic:
        passes += (1.0 + 3.0 * ppo_epochs) * critic_scale
    if overlap_rollout:
        passes *= OVERLAP_SLOWDOWN
    micro = (max(1, math.ceil(mean * n / dp / m / float(max_tokens_per_gpu))) if max_tokens_per_gpu is not None
             else max(1, math.ceil(n / (dp * m))))
    flags = {"recompute_logprob": bool(recompute_logprob), "reference": bool(reference), "critic": bool(critic),
             "overlap_rollout": bool(overlap_rollout)}
    plan = _plan(model, accelerator, backend=backend, mp=mp, tp=tp, pp=pp, vp=int(virtual_pipeline),
                 ep=int(expert_parallel), precision=precision, mfu=mfu, ac=_ac_mode(backend, activation_checkpointing),
                 epochs=int(ppo_epochs), flags=flags, critic_scale=critic_scale, micro=micro,
                 tp_overlap=float(tp_overlap), ep_overlap=float(ep_overlap), expert_routing=expert_routing,
                 etp=None if expert_tensor_parallel is None else int(expert_tensor_parallel))
    rate = mp * _peak(accelerator, precision) * _mfu(backend, mfu, accelerator)
    attn = 2.0 * model.layers * model.attention_heads * model.head_dim
    if plan.fwd_b * rate == attn:  # one rate (BF16): the forward as it always was
        lin, sq = passes * 2.0 * float(model.active_params) / rate, passes * attn / rate
    else:
        lin, sq = passes * plan.fwd_a, passes * plan.fwd_b
    rc_epochs = sum(r * s for k, (_n, r, s) in plan.compute.items()) * plan.slow
    lin += rc_epochs * plan.rc_a + (plan.tp_s + plan.ep_s) * plan.comm_passes
    if plan.cp_s:  # the exposed K/V exchange per token of a mean_tokens-token sequence
        lin += plan.cp_passes * max(0.0, plan.cp_s - plan.cp_hide * mean)
    sq += rc_epochs * plan.rc_b
    return {"dp_ranks": dp, "dispatch": dispatch, "s_per_token": lin * (1.0 + plan.bubble),
            "s_per_token_sq": sq * (1.0 + plan.bubble), "fixed_s": (ph["optimizer"] + ph["collectives"]) / m,
            "mini_batches": m, "max_tokens_per_gpu": max_tokens_per_gpu if dispatch == "packed" else None}


def expected_slowest_fraction(model: Any, accelerator: Any, *, lengths: Any, batch_size: int, group_size: int = 1,
                              prompt_tokens: float = 0.0, train_gpus: int, draws: int = 32, seed: int = 0,
                              **kwargs: Any) -> float:
    """Mean :attr:`RankLoads.slowest_fraction` over random batches of a length distribution: the
    ``slowest_fraction`` to give :func:`engine_train_params`.

    Parameters
    ----------
    model, accelerator, train_gpus
        As for :func:`rank_loads`.
    lengths : rollsim.LogNormal
        Response lengths; ``group_correlation`` makes a group's answers alike (answers of one
        prompt are consecutive in the batch, as rollout returns them).
    batch_size : int
        Sequences per training step, in [1, 2**24].
    group_size : int
        Answers per prompt; must divide ``batch_size``.
    prompt_tokens : float
        Prompt tokens added to every response, tokens, in [0, 1e9].
    draws : int
        Batches averaged, in [1, 10000].
    seed : int
        Seed of numpy's default generator (PCG64), in [0, 2**63 - 1].
    **kwargs
        ``dispatch``, ``mini_batches``, ``model_parallel``, ``max_tokens_per_gpu``, as for
        :func:`rank_loads`.

    Returns
    -------
    float
        At least 1.

    Raises
    ------
    ScenarioError (ValueError)
        ``lengths`` not a LogNormal, or an argument outside its range.
    """
    from rollsim.lengths import LogNormal

    if not isinstance(lengths, LogNormal):
        raise invalid("lengths", f"must be a rollsim.LogNormal, got {type(lengths).__name__}")
    n = _check.integer("batch_size", batch_size, 1, 1 << 24)
    g = _check.integer("group_size", group_size, 1, 1 << 24)
    if n % g:
        raise invalid("group_size", f"must divide batch_size ({n}), got {g}")
    prompt = _check.bounded("prompt_tokens", prompt_tokens, 0, 1e9, "tokens")
    k = _check.integer("draws", draws, 1, 10000)
    rng = np.random.default_rng(_check.integer("seed", seed, 0, (1 << 63) - 1))
    rho = lengths.group_correlation
    total = 0.0
    for _ in range(k):
        zp = np.repeat(rng.standard_normal(n // g), g)
        za = rng.standard_normal(n)
        z = math.sqrt(rho) * zp + math.sqrt(1 - rho) * za
        resp = np.maximum(np.minimum(np.exp(lengths.mu + lengths.sigma * z), lengths.max_tokens).round(), 1.0)
        total += rank_loads(model, accelerator, lengths=resp + prompt, train_gpus=train_gpus,
                            **kwargs).slowest_fraction
    return total / k


# ---------------------------------------------------------------- calibration
def _lognormal_groups(n: int, group: int, mean_tokens: float, sigma: float, rho: float, max_tokens: float,
                      seed: int) -> np.ndarray:
    """Response lengths of ``n // group`` groups: ``log L = mu + sigma (sqrt(rho) z_prompt +
    sqrt(1 - rho) z_answer)`` (rollsim's ``LogNormal`` with ``group_correlation``), truncated at
    ``max_tokens``, ``mu`` set so the untruncated mean is ``mean_tokens``."""
    rng = np.random.default_rng(seed)
    mu = math.log(mean_tokens) - sigma**2 / 2
    zp = np.repeat(rng.standard_normal(n // group), group)
    za = rng.standard_normal(n)
    return np.minimum(np.exp(mu + sigma * (math.sqrt(rho) * zp + math.sqrt(1 - rho) * za)), max_tokens).round()


@dataclass(frozen=True)
class _Case:
    name: str
    backend: str
    measured_s: float
    source: str
    kwargs: dict[str, Any]
    fit: bool = True        # used by the fit (False: a validation-only row)
    note: str = ""


def _unirl_lengths() -> np.ndarray:
    # 512 samples = 64 prompts x 8 answers, response length about 1k (the "light" regime), cap 8192;
    # the prompt length is not published: 200 tokens assumed (a DAPO-Math prompt with its template).
    return group_lengths(200, _lognormal_groups(512, 8, 1000.0, 0.7, 0.5, 8192.0, seed=0))


#: The training measurements (published) the MFU is fitted on and checked against. ``kwargs`` go to
#: :func:`train_step_s`; a case measured as tokens/s/GPU is converted to the seconds of its step.
CALIBRATION: tuple[_Case, ...] = (
    _Case("torchtitan Llama-3.1-8B, 8 H100, FSDP, seq 8192, local batch 2: 5,762 tokens/s/GPU",
          "fsdp2", 8 * 2 * 8192 / (5762 * 8), "pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md",
          {"model": "Llama-3.1-8B", "accelerator": "H100", "train_gpus": 8, "tokens": 8 * 2 * 8192, "sequences": 16,
           "recompute_logprob": False, "reference": False, "activation_checkpointing": "selective"},
          note="one step of 8 GPUs x 2 sequences x 8192 tokens at the published tokens/s/GPU; selective activation "
               "checkpointing (the table's; per-op, torchtitan/models/llama3/train_configs/llama3_8b.toml)"),
    _Case("Megatron-Bridge 25.11 Llama-3-8B FP8 pretraining, 8 H100, seq 8192: 14,451 tokens/s/GPU",
          "megatron", 128 * 8192 / (14451 * 8), "NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md",
          {"model": "Llama-3.1-8B", "accelerator": "H100", "train_gpus": 8, "tokens": 128 * 8192,
           "sequences": 128, "recompute_logprob": False, "reference": False, "precision": "fp8",
           "activation_checkpointing": "none"},
          note="global batch 128 assumed (the per-token rate hardly depends on it); the only Megatron row; no "
               "recompute (none published: Megatron's default)"),
    _Case("UniRL Qwen3-4B, 16 H20, 512 samples, 4 mini-updates, balanced ranks: train phase 15.3 s",
          "fsdp2", 15.3, "Tencent-Hunyuan/UniRL PR 45, Tencent-Hunyuan/UniRL issue 40",
          {"model": "Qwen3-4B", "accelerator": "H20", "train_gpus": 16, "mini_batches": 4,
           "recompute_logprob": False, "reference": False, "dispatch": "lpt", "lengths": "unirl",
           "activation_checkpointing": "full"},
          note="lengths assumed: lognormal mean 1,000 (published: about 1k), sigma 0.7, group correlation "
               "0.5, cap 8,192, + 200 prompt tokens; full activation checkpointing (UniRL's Qwen3-4B GRPO recipe, "
               "examples/ar/qwen3_grpo_4b_base_dapo_sglang.yaml: activation_checkpointing: true); the H20 family "
               "factor is fitted on this row alone: its 0 % error is no evidence"),
    _Case("UniRL same, groups dispatched contiguously (no balancing): train phase 28.4 s",
          "fsdp2", 28.4, "Tencent-Hunyuan/UniRL PR 45, Tencent-Hunyuan/UniRL issue 40",
          {"model": "Qwen3-4B", "accelerator": "H20", "train_gpus": 16, "mini_batches": 4,
           "recompute_logprob": False, "reference": False, "dispatch": "contiguous", "lengths": "unirl",
           "activation_checkpointing": "full"},
          fit=False, note="the balancing mechanism, and the check of the H20 family factor: same MFU, only the "
                          "rank assignment differs"),
    _Case("vime Qwen3-0.6B GRPO, 1 L20, 16 samples, max response 192: actor train 0.47 s",
          "fsdp2", 0.47, "vllm-project/vime issue 442",
          {"model": "Qwen3-0.6B", "accelerator": "L20", "train_gpus": 1, "tokens": 16 * (150 + 150),
           "sequences": 16, "recompute_logprob": False, "reference": False, "activation_checkpointing": "full"},
          note="150 prompt + 150 response tokens per sample assumed (GSM8K, max response 192); full recompute "
               "assumed (not published for this run; vime's run scripts set --recompute-granularity full, e.g. "
               "scripts/run-qwen3-4B.sh)"),
)


_AUTOMODEL = "NVIDIA-NeMo/Automodel docs/performance-summary.md"


def _automodel(name: str, model: str, gpus: int, gbs: int, mbs: int, pp: int, ep: int, step_s: float, config: str,
               ac: str, vp: int = 1) -> _Case:
    note = (f"held out (not in the fit); BF16, seq 4096; EP {ep}, activation checkpointing {ac!r} and the fake "
            f"balanced gate (expert_routing='consecutive') from the run's config "
            f"(examples/benchmark/configs/{config}.yaml)")
    return _Case(f"NeMo Automodel (FSDP2) {name} pretraining, {gpus} H100, global batch {gbs} x 4096: step {step_s} s",
                 "fsdp2", step_s, _AUTOMODEL,
                 {"model": model, "accelerator": "H100", "train_gpus": gpus, "tokens": gbs * 4096, "sequences": gbs,
                  "recompute_logprob": False, "reference": False, "pipeline_parallel": pp, "virtual_pipeline": vp,
                  "expert_parallel": ep, "max_tokens_per_gpu": mbs * 4096, "activation_checkpointing": ac,
                  "expert_routing": "consecutive"},
                 fit=False, note=note)


#: Published training runs that are not calibration measurements: checks of the fitted model only.
HELD_OUT: tuple[_Case, ...] = (
    _automodel("Qwen3 MoE 30B", "Qwen3-30B-A3B", 8, 512, 4, 1, 8, 21.773, "qwen3_moe_30b_te_deepep", "full"),
    _automodel("GPT-OSS 20B", "gpt-oss-20b", 8, 256, 2, 1, 8, 10.04, "gptoss_20b_te_deepep", "none"),
    _automodel("GPT-OSS 120B", "gpt-oss-120b", 64, 512, 2, 1, 64, 4.30, "gptoss_120b_te_deepep", "none"),
    _automodel("DeepSeek V3", "DeepSeek-V3", 256, 512, 1, 4, 64, 8.18, "deepseek_v3_te_deepep", "full", vp=8),
    _automodel("DeepSeek V3", "DeepSeek-V3", 1024, 8192, 1, 4, 64, 37.87, "deepseek_v3_te_deepep", "full", vp=8),
    _automodel("Kimi K2", "Kimi-K2", 256, 512, 1, 8, 32, 8.86, "kimi_k2_te_deepep", "full", vp=4),
)


def _predict(case: _Case, mfu: float | None = None) -> float:
    kw = dict(case.kwargs)
    if kw.get("lengths") == "unirl":
        kw["lengths"] = _unirl_lengths()
    return train_step_s(kw.pop("model"), kw.pop("accelerator"), backend=case.backend, mfu=mfu, **kw)["total"]


def _case_family(case: _Case) -> str:
    from rollsim.hardware import specs

    return train_family(specs.accelerator(case.kwargs["accelerator"]))


def _solve(rows: list[_Case], mfu_of: Any) -> float:
    """The scale ``x`` whose predictions (at MFU ``mfu_of(case, x)``) minimize the squared log
    errors of ``rows``: the geometric mean of predicted / measured at ``x = 1`` (a prediction is
    nearly proportional to ``1 / MFU``), refined by three fixed-point steps for the terms that do not
    scale (optimizer, collectives)."""
    est = math.exp(sum(math.log(_predict(c, mfu_of(c, 1.0)) / c.measured_s) for c in rows) / len(rows))
    for _ in range(3):
        ratio = math.exp(sum(math.log(_predict(c, mfu_of(c, est)) / c.measured_s) for c in rows) / len(rows))
        est = est * ratio
    return est


def fit() -> dict[str, float]:
    """The MFU per backend that minimizes the squared log errors of the :data:`CALIBRATION` rows
    marked for the fit on the reference families (those without a :data:`MFU_FAMILY` factor), at
    most 1, rounded to 4 digits."""
    out = {}
    for b in BACKENDS:
        rows = [c for c in CALIBRATION if c.fit and c.backend == b and _case_family(c) not in MFU_FAMILY]
        out[b] = round(min(1.0, _solve(rows, lambda c, x: min(1.0, x))), 4)
    return out


def fit_families() -> dict[str, float]:
    """The factor of each family of :data:`MFU_FAMILY` that minimizes the squared log errors of its
    :data:`CALIBRATION` rows marked for the fit, at the backend MFUs of :data:`MFU`, rounded to 4
    digits (with one row: that row's exact factor, which is no evidence)."""
    out = {}
    for fam in MFU_FAMILY:
        rows = [c for c in CALIBRATION if c.fit and _case_family(c) == fam]
        out[fam] = round(_solve(rows, lambda c, x: min(1.0, MFU[c.backend] * x)), 4)
    return out


def family_residuals() -> dict[str, tuple[int, float]]:
    """Under one shared MFU per backend (fitted on every calibration row, no family factor): each
    training family's calibration rows and the geometric mean of their predicted / measured - 1, the
    residual a family factor would remove."""
    shared = {}
    for b in BACKENDS:
        rows = [c for c in CALIBRATION if c.fit and c.backend == b]
        shared[b] = min(1.0, _solve(rows, lambda c, x: min(1.0, x)))
    out: dict[str, tuple[int, float]] = {}
    for fam in sorted({_case_family(c) for c in CALIBRATION if c.fit}):
        rows = [c for c in CALIBRATION if c.fit and _case_family(c) == fam]
        g = math.exp(sum(math.log(_predict(c, shared[c.backend]) / c.measured_s) for c in rows) / len(rows))
        out[fam] = (len(rows), g - 1.0)
    return out


def training_validation_rows() -> list[dict[str, Any]]:
    """Every calibration measurement (:data:`CALIBRATION`) and held-out check (:data:`HELD_OUT`)
    with its prediction: ``case``, ``predicted``, ``measured``, ``unit`` ("s", or "x" for a ratio),
    ``error`` (predicted / measured - 1), ``in_fit``, ``source``, ``note`` and a short ``label``. The
    last row is the
    balancing mechanism as a ratio (contiguous over balanced train time), derived from two
    published rows."""
    rows = []
    pred: dict[str, float] = {}
    for c in CALIBRATION + HELD_OUT:
        p = _predict(c)
        pred[c.name] = p
        kw = c.kwargs
        label = f"{c.backend} {kw['model']} {kw['train_gpus']}x{kw['accelerator']}"
        if kw.get("dispatch"):
            label += f" {kw['dispatch']}"
        rows.append({"case": c.name, "label": label, "predicted": p, "measured": c.measured_s, "unit": "s",
                     "error": p / c.measured_s - 1.0, "in_fit": c.fit, "source": c.source, "note": c.note})
    bal, con = (c for c in CALIBRATION if c.source.startswith("Tencent-Hunyuan/UniRL"))
    ratio_p = pred[con.name] / pred[bal.name]
    ratio_m = con.measured_s / bal.measured_s
    rows.append({"case": "UniRL train time without / with rank balancing (28.4 s / 15.3 s) [derived]",
                 "label": "fsdp2 Qwen3-4B 16xH20 contiguous/lpt",
                 "predicted": ratio_p, "measured": ratio_m, "unit": "x", "error": ratio_p / ratio_m - 1.0,
                 "in_fit": False, "source": bal.source,
                 "note": "lengths assumed: lognormal sigma 0.7, group correlation 0.5, mean 1,000 + 200 prompt"})
    return rows


def calibration_report() -> str:
    """The fit (MFU per backend, factor per family), the family residuals that call for a factor,
    and every row's residual, as text."""
    lines = ["training MFU fit: " + ", ".join(f"{k} {v:.4f}" for k, v in fit().items())]
    for fam, f in fit_families().items():
        n = sum(1 for c in CALIBRATION if c.fit and _case_family(c) == fam)
        lines.append(f"family factor: {fam} x{f:.4f} (fitted on {n} measurement{'s' if n > 1 else ''}"
                     f"{': its 0 % error there is no evidence' if n == 1 else ''})")
    lines.append("residual by family under one shared MFU per backend: " + ", ".join(
        f"{fam} {g:+.1%} ({n} row{'s' if n > 1 else ''})" for fam, (n, g) in family_residuals().items()))
    lines.append("error = predicted / measured - 1 (+ means predicted above measured); fit: a row of the fit, "
                 "check: held out")
    for r in training_validation_rows():
        lines.append(f"{r['error']:+7.1%}  predicted {r['predicted']:8.3f} {r['unit']}  measured {r['measured']:8.3f} "
                     f"{r['unit']}  "
                     f"{'fit ' if r['in_fit'] else 'check'}  {r['case']}  [{r['source']}]")
    return "\n".join(lines)



def table_rows() -> list[Any]:
    """The rows of :func:`training_validation_rows` as :class:`rollsim.hardware.validation.Row` (area
    "training") for ``rollsim validate --resources``."""
    from rollsim.hardware.rows import Row

    return [Row.from_prediction(r, quantity="train s" if r["unit"] == "s" else "ratio", area="training") for r in training_validation_rows()]
