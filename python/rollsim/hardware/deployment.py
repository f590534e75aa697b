"""One entry point from a deployment (model, GPUs, engine, trainer) to its speeds and to a scenario.

>>> from rollsim.hardware import Deployment
>>> d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=16, rollout_tp=4, train_gpus=16)
>>> d.instances
4
>>> round(d.decode_tokens_per_s(1, 2000)) > round(d.decode_tokens_per_s(256, 2000))
True
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollsim import _check, _rollsim
from rollsim._text import count
from rollsim.errors import DeploymentWarning, invalid
from rollsim.lengths import Empirical, LogNormal

from . import serving
from .specs import Accelerator, ModelSpec, accelerator, model

__all__ = ["Deployment", "DERIVED_FIELDS", "decode_context_tokens", "sequence_tokens"]


#: The training options (and their derived counts) whose layout needs more than one training GPU.
MODEL_PARALLEL_OPTIONS = frozenset({"tensor_parallel", "pipeline_parallel", "expert_parallel", "expert_tensor_parallel",
                                    "context_parallel", "model_parallel", "virtual_pipeline", "train_gpus"})


#: The :class:`rollsim.Scenario` fields :meth:`Deployment.scenario` derives from the deployment (the
#: pool and its instances, the decode speed and its table, the KV capacity, the prefill speed, the
#: trainer), and those a decode table or a per-rank trainer leaves no room for
#: (``decode_slowdown_per_seq``, ``decode_s_per_context_token``, set by ``context="per_token"``):
#: ``rollsim run --model`` refuses them given as flags or in a scenario file, naming both, rather
#: than dropping one of the two.
DERIVED_FIELDS: tuple[str, ...] = ("rollout_slots", "slots_per_instance", "decode_tokens_per_s",
                                   "decode_throughput_table", "kv_cache_tokens", "decode_slowdown_per_seq",
                                   "decode_s_per_context_token", "prefill_tokens_per_s", "train_step_s",
                                   "train_s_per_token", "train")


def _max_length(lengths: LogNormal | Empirical) -> float:
    if isinstance(lengths, LogNormal):
        return float(lengths.max_tokens)
    top = float(np.max(lengths.values))
    return min(top, float(lengths.max_tokens)) if lengths.max_tokens is not None else top


def _turn_sums(prompt_tokens: float, lengths: LogNormal | Empirical, agentic: Any) -> tuple[float, float]:
    """From the means, over a trajectory's turns: (decoded tokens x the context they decode at, decoded
    tokens). Turn ``k`` (``k < max_turns``) decodes ``mean answer x turn_scale[k]`` tokens on top of the
    prompt and the earlier turns and observations, and is reached with probability ``(1 - stop_prob)^k``;
    a turn whose context would start at ``max_context_tokens`` is not reached, and a context is capped
    there."""
    pt = float(prompt_tokens)
    a = lengths.mean_tokens()
    obs = agentic.observation_tokens
    o = float(obs) if isinstance(obs, (int, float)) else obs.mean_tokens()
    cap = math.inf if agentic.max_context_tokens is None else float(agentic.max_context_tokens)
    scale = tuple(agentic.turn_scale) or (1.0,)
    num = den = 0.0
    start, reach = pt, 1.0
    for k in range(agentic.max_turns):
        if (k > 0 and start >= cap) or reach < 1e-12:
            break
        ak = a * scale[min(k, len(scale) - 1)]
        num += reach * ak * min(start + ak / 2.0, cap)
        den += reach * ak
        start += ak + o
        reach *= 1.0 - agentic.stop_prob
    return num, den


def decode_context_tokens(prompt_tokens: float, lengths: LogNormal | Empirical, agentic: Any = None) -> float:
    """The mean context, tokens, at which :meth:`Deployment.scenario` prices its decode table.

    Single-turn: prompt + half the mean answer. A multi-turn trajectory (``agentic``, a
    :class:`rollsim.Agentic`) decodes its later turns on top of its earlier turns and observations, so
    the mean is over its decoded tokens of prompt + the earlier turns and observations + half the turn,
    from the means: turn ``k`` (``k < max_turns``) decodes ``mean answer x turn_scale[k]`` tokens and is
    reached with probability ``(1 - stop_prob)^k``; a turn whose context would start at
    ``max_context_tokens`` is not reached, and a context is capped there. A 30-turn SWE trajectory's
    turns decode at tens of thousands of tokens of context, not at the prompt + half a turn the table
    was priced at before (whose KV reads it left out).
    """
    if agentic is None:
        return float(prompt_tokens) + lengths.mean_tokens() / 2.0
    num, den = _turn_sums(prompt_tokens, lengths, agentic)
    return num / den if den > 0 else float(prompt_tokens) + lengths.mean_tokens() / 2.0


#: The largest ``batch_size`` a scenario takes (its schema).
_BATCH_SIZE_HI = next(int(f["hi"]) for f in _rollsim.SCHEMA["scenario"] if f["name"] == "batch_size")


def _check_ranks_divide(prompts_per_step: int, group_size: int, dp: int, train_gpus: int) -> None:
    """Refuses, in the deployment's own terms, a batch that its data-parallel training ranks cannot
    share evenly (the engine's ``train.dp_ranks must divide batch_size``), with values that work."""
    n = prompts_per_step * group_size
    if n % dp == 0 or n > _BATCH_SIZE_HI:  # too large a batch: the scenario's batch_size range says so
        return
    mp = train_gpus // dp
    step = dp // math.gcd(dp, group_size)
    lo = max(step, prompts_per_step // step * step)
    prompts = (lo, lo + step)
    # the two smallest rank counts above dp that divide n (more ranks: the training state still fits),
    # from n's divisors in O(sqrt(n)): n reaches 2^24 prompts x the group size
    divisors = sorted({d for i in range(1, math.isqrt(n) + 1) if n % i == 0 for d in (i, n // i)})
    gpus = [d * mp for d in divisors if d > dp][:2]
    where = f"train_gpus={train_gpus}" + (f" / model parallel {mp}" if mp > 1 else "")
    alt = f" or train_gpus={' / '.join(map(str, gpus))}" if gpus else ""
    raise invalid("prompts_per_step", f"prompts_per_step x group_size = {prompts_per_step} x {group_size} = {n} "
                  f"sample{'s' if n != 1 else ''} per step must split evenly over the {dp} data-parallel training ranks ({where}): "
                  f"every rank trains as many samples; give prompts_per_step="
                  f"{' or '.join(map(str, prompts))}{alt}, or per_rank=False (one trainer time for the batch)")


def sequence_tokens(prompt_tokens: float, lengths: LogNormal | Empirical, agentic: Any = None) -> float:
    """The mean tokens of a trained sequence, prompt + answer: with ``agentic``, prompt + the tokens its
    turns decode (the engine's ``length_tokens``; the observations are not in it), from the means as in
    :func:`decode_context_tokens`. The length the trainer of :meth:`Deployment.scenario` is priced at
    (its collectives) and the headers' step "at the mean length" is."""
    if agentic is None:
        return float(prompt_tokens) + lengths.mean_tokens()
    return float(prompt_tokens) + _turn_sums(prompt_tokens, lengths, agentic)[1]


@dataclass(frozen=True)
class Deployment:
    """A deployment: a model served by ``rollout_gpus / rollout_tp`` engine instances and trained on
    ``train_gpus`` GPUs of one accelerator type.

    Parameters
    ----------
    model : str | ModelSpec
        A registry name (:data:`rollsim.hardware.MODELS`), a Hugging Face id, or a spec
        (e.g. from :func:`rollsim.hardware.model_from_hf_config`).
    gpu : str | Accelerator
        A registry name or alias (:data:`rollsim.hardware.ACCELERATORS`).
    rollout_gpus : int
        GPUs serving rollouts, a multiple of ``rollout_tp``.
    rollout_tp : int
        Tensor-parallel (x expert-parallel) GPUs per engine instance.
    train_gpus : int
        Training GPUs (the same GPUs as the rollout when ``colocated``).
    train_backend : str
        "fsdp2" or "megatron" (:func:`rollsim.hardware.training.train_step_s`).
    engine : str
        "vllm" or "sglang" (:data:`rollsim.hardware.serving.ENGINES`).
    gpu_memory_utilization : float, optional
        Fraction of device memory the engine may use, in (0, 1]; default the engine's (0.9 vLLM).
    max_num_seqs : int, optional
        Running sequences per instance at most; default the engine's for the GPU
        (:func:`rollsim.hardware.serving.default_max_num_seqs`: vLLM's API-server default, 1024 on GPUs
        of 70 GiB or more that are not A100s, 256 on A100s and smaller GPUs; SGLang 1024).
    colocated : bool
        Rollout and training take turns on the same GPUs (needs ``rollout_gpus == train_gpus``):
        every step pays :meth:`switch_s`.
    train_options : dict
        Further keyword arguments of :func:`rollsim.hardware.training.train_step_s` (``ppo_epochs``,
        ``reference``, ``critic``, ``mini_batches``, ``tensor_parallel``, ``pipeline_parallel``,
        ``expert_parallel``, ``precision``, ``activation_checkpointing`` (default: the backend's
        framework default, :data:`rollsim.hardware.training.ACTIVATION_CHECKPOINTING`), ...; the CLI's
        ``--train-option NAME=VALUE``). An unknown name is refused.
    train_offload : bool
        Colocated only: the trainer's state is also parked on the host every step and brought back
        (slime's and vime's ``offload_train``, their default when colocated;
        :func:`rollsim.hardware.switching.train_offload_s` over ``train_gpus``), added to
        :meth:`switch_s`.

    Raises
    ------
    ScenarioError
        For an unknown model, GPU, engine or backend, a value out of range, ``rollout_gpus`` not a
        multiple of ``rollout_tp``, or weights that do not fit an instance.
    """

    model: str | ModelSpec
    gpu: str | Accelerator
    rollout_gpus: int
    rollout_tp: int = 1
    train_gpus: int = 1
    train_backend: str = "fsdp2"
    engine: str = "vllm"
    gpu_memory_utilization: float | None = None
    max_num_seqs: int | None = None
    colocated: bool = False
    train_options: dict[str, Any] = field(default_factory=dict)
    train_offload: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "model", model(self.model))
        set_(self, "gpu", accelerator(self.gpu))
        tp = _check.integer("rollout_tp", self.rollout_tp, 1, 4096)
        r = _check.integer("rollout_gpus", self.rollout_gpus, 1, 2**20)
        if r % tp:
            raise invalid("rollout_gpus", f"must be a multiple of rollout_tp ({tp}), got {r}")
        t = _check.integer("train_gpus", self.train_gpus, 1, 2**20)
        set_(self, "rollout_tp", tp)
        set_(self, "rollout_gpus", r)
        set_(self, "train_gpus", t)
        e = serving.engine_params(self.engine)
        set_(self, "engine", e.engine)
        if self.train_backend not in ("fsdp2", "megatron"):
            raise invalid("train_backend", f"must be 'fsdp2' or 'megatron', got {self.train_backend!r}")
        if self.gpu_memory_utilization is not None:
            set_(self, "gpu_memory_utilization", _check.bounded("gpu_memory_utilization", self.gpu_memory_utilization,
                                                                0.0, 1.0, lo_open=True))
        if self.max_num_seqs is not None:
            set_(self, "max_num_seqs", _check.integer("max_num_seqs", self.max_num_seqs, 1, 2**24))
        set_(self, "colocated", _check.flag("colocated", self.colocated))
        if self.colocated and r != t:
            raise invalid("colocated", f"needs rollout_gpus == train_gpus (the same GPUs), got {r} and {t}")
        set_(self, "train_offload", _check.flag("train_offload", self.train_offload))
        if self.train_offload and not self.colocated:
            raise invalid("train_offload", "applies to a colocated deployment only (the trainer parks its state "
                          "to free the GPUs for rollout), got colocated=False")
        if not isinstance(self.train_options, dict):
            raise invalid("train_options", f"must be a dict of train_step_s arguments, got "
                                           f"{type(self.train_options).__name__}")
        from .training import option_hint, train_option_names

        known = train_option_names()
        unknown = sorted(k for k in self.train_options if k not in known and k != "critic_model")
        if unknown:
            raise invalid("train_options", f"unknown argument {unknown[0]!r} of "
                                           f"rollsim.hardware.training.train_step_s (allowed: {', '.join(known)})"
                                           f"{option_hint(unknown[0], known)}")
        heads = self.spec.attention_heads
        if heads % self.rollout_tp:  # vLLM and SGLang shard the attention heads over the TP ranks
            raise invalid("rollout_tp", f"must divide the model's {heads} attention heads (vLLM and SGLang shard "
                                        f"them over the tensor-parallel ranks), got {self.rollout_tp}")
        self.kv_capacity_tokens()  # refuses weights that do not fit

    # ----------------------------------------------------------------------------------------- serving
    @property
    def spec(self) -> ModelSpec:
        """The model's spec."""
        assert isinstance(self.model, ModelSpec)
        return self.model

    @property
    def accelerator(self) -> Accelerator:
        """The GPU's spec."""
        assert isinstance(self.gpu, Accelerator)
        return self.gpu

    @property
    def instances(self) -> int:
        """Engine instances serving rollouts."""
        return self.rollout_gpus // self.rollout_tp

    @property
    def slots_per_instance(self) -> int:
        """Running sequences one instance admits at most (``max_num_seqs``; default the engine's for the
        GPU, :func:`rollsim.hardware.serving.default_max_num_seqs`: vLLM's 1024 on GPUs of 70 GiB or more
        that are not A100s, 256 on the rest; SGLang's 1024)."""
        return (self.max_num_seqs or serving.default_max_num_seqs(self.engine, self.accelerator)
                or serving.engine_params(self.engine).max_num_seqs)

    def default_batched_tokens(self) -> int:
        """The step budget :meth:`scenario` takes without ``max_num_batched_tokens``: the engine's
        API-server default for the GPU (:func:`rollsim.hardware.serving.default_max_num_batched_tokens`),
        or twice :attr:`slots_per_instance` when that is more."""
        return max(serving.default_max_num_batched_tokens(self.engine, self.accelerator), 2 * self.slots_per_instance)

    def defaults_words(self, max_num_batched_tokens: int | None = None) -> str:
        """Which engine defaults the deployment took and why, for what it says it assumed
        (``rollsim run --model``'s line): ``max_num_seqs`` when not given, and the step budget when
        ``max_num_batched_tokens`` is the default (:meth:`default_batched_tokens`); ``""`` for neither."""
        parts = []
        if self.max_num_seqs is None:
            parts.append(f"max_num_seqs {self.slots_per_instance}")
        if max_num_batched_tokens is not None and max_num_batched_tokens == self.default_batched_tokens():
            parts.append(f"max_num_batched_tokens {max_num_batched_tokens:,}")
        if not parts:
            return ""
        g = self.accelerator
        if self.engine == "vllm":
            a100 = "a100" in g.name.lower()
            kind = "an A100" if a100 else "70 GiB or more, not an A100" if g.hbm_bytes >= 70 * 2**30 else "under 70 GiB"
            why = (f"vLLM's API-server defaults on {g.name} ({kind}; vLLM takes 1024 sequences and 8192 tokens a step "
                   f"on GPUs of 70 GiB or more that are not A100s, 256 and 2048 on the rest: vllm/engine/arg_utils.py, "
                   f"EngineArgs._set_default_args)")
        else:
            why = (f"SGLang's defaults on {g.name} (max_num_seqs: rollsim's 1024, SGLang sizes it from the KV pool; "
                   f"chunked_prefill_size by GPU memory, python/sglang/srt/server_args.py)")
        return " and ".join(parts) + ", " + why

    def step_breakdown(self, batch: float, context_tokens: float, prefill_tokens: float = 0.0) -> dict[str, float]:
        """The terms of one engine step (:func:`rollsim.hardware.serving.step_time`), seconds."""
        return serving.step_time(self.spec, self.accelerator, tp=self.rollout_tp, batch=batch,
                                 context_tokens=context_tokens, prefill_tokens=prefill_tokens, engine=self.engine)

    def decode_tokens_per_s(self, batch: float, context_tokens: float) -> float:
        """Decode speed of one sequence, tokens/s, on an instance running ``batch`` sequences of
        ``context_tokens`` context each (one token per sequence per step)."""
        b = _check.number("batch", batch)
        return 1.0 / self.step_breakdown(b, context_tokens)["total_s"]

    def kv_capacity_tokens(self, context_tokens: float | None = None) -> float:
        """KV-cache capacity of one instance, tokens (:func:`rollsim.hardware.serving.kv_capacity_tokens`)."""
        return serving.kv_capacity_tokens(self.spec, self.accelerator, tp=self.rollout_tp,
                                          gpu_memory_utilization=self.gpu_memory_utilization, engine=self.engine,
                                          context_tokens=context_tokens)

    def prefill_tokens_per_s(self, prompt_tokens: float, chunk_tokens: float = 8192.0) -> float:
        """Prefill throughput of one instance, tokens/s, as a shared step resource: ``chunk_tokens``
        over the seconds a chunk of that many prompt tokens (attending to half the prompt: causal
        attention within it) adds to a decode step of one sequence (the weights are read once for
        both). The ``prefill_tokens_per_s`` of a ``prefill_mode="shared"`` scenario."""
        pt = _check.number("prompt_tokens", prompt_tokens, allow_zero=True)
        c = _check.number("chunk_tokens", chunk_tokens)
        with_chunk = serving.step_time(self.spec, self.accelerator, tp=self.rollout_tp, batch=1.0, context_tokens=pt,
                                       prefill_tokens=c, prefill_context_tokens=pt / 2.0, engine=self.engine)
        return c / (with_chunk["total_s"] - self.step_breakdown(1.0, pt)["total_s"])

    def context_s_per_token(self, context_tokens: float) -> float:
        """Seconds a decode step adds per token of context of its sequences (their KV read and the
        attention over it): the secant of a one-sequence step from no context to
        ``context_tokens`` (exact for full attention, where both terms are linear in the context;
        sliding-window layers stop growing at their window). The ``decode_s_per_context_token``
        of a scenario; 0 for no context."""
        c = _check.number("context_tokens", context_tokens, allow_zero=True)
        if c == 0:
            return 0.0
        return (self.step_breakdown(1.0, c)["total_s"] - self.step_breakdown(1.0, 0.0)["total_s"]) / c

    def prefill_s(self, tokens: float) -> float:
        """Seconds to the first token of one lone request of ``tokens`` prompt tokens."""
        return serving.prefill_s(self.spec, self.accelerator, tp=self.rollout_tp, tokens=tokens, engine=self.engine)

    # ----------------------------------------------------------------------------------------- training
    def train_state_words(self) -> str | None:
        """None when ``train_gpus`` hold the model's training state
        (:func:`rollsim.hardware.switching.train_state_gpus`: weights, gradients and Adam moments,
        18 bytes per parameter sharded over them, activations not counted); else what it needs, the
        words of the :class:`rollsim.DeploymentWarning` that :meth:`train_step_s` and
        :meth:`scenario` give (they price the step anyway: a trainer may offload the state)."""
        from .switching import train_state_words

        need, words = train_state_words(self.spec, self.accelerator, self.train_gpus)
        if self.train_gpus >= need:
            return None
        return (f"train_gpus: {self.train_gpus} x {self.accelerator.name} cannot hold {words}, or a trainer that "
                "offloads it (priced as if it fit)")

    def _warn_train_state(self) -> None:
        words = self.train_state_words()
        if words is not None:
            warnings.warn(DeploymentWarning(words), stacklevel=3)

    def train_step_s(self, tokens: float, sequences: int, **kwargs: Any) -> dict[str, float]:
        """Seconds of each phase of one training step on ``train_gpus`` and their ``total``
        (:func:`rollsim.hardware.training.train_step_s`; ``kwargs`` override ``train_options``).
        Training GPUs that cannot hold the model's training state (:meth:`train_state_words`) get a
        :class:`rollsim.DeploymentWarning`, and the step is priced all the same (a trainer may offload)."""
        from .training import train_step_s

        self._warn_train_state()

        opts = {**self.train_options, **kwargs}
        return train_step_s(self.spec, self.accelerator, train_gpus=self.train_gpus, backend=self.train_backend,
                            tokens=tokens, sequences=sequences, **opts)

    def switch_s(self, **kwargs: Any) -> dict[str, float]:
        """Seconds of one colocated switch of an instance (sleep and wake of the engine,
        :func:`rollsim.hardware.switching.switch_s`, in its steady state), with its KV cache at this
        deployment's capacity; with ``train_offload`` also the trainer's state parked and brought
        back (:func:`rollsim.hardware.switching.train_offload_s`), as ``train_sleep`` and
        ``train_wake``, included in ``sleep``, ``wake`` and ``total``. Every instance switches at
        once, so the GPUs of a node copying together are ``min(rollout_gpus, gpus_per_node)``
        (``gpus_copying``, overridden by ``kwargs``): they share the node's host uplinks
        (``Accelerator.gpus_per_host_link``)."""
        from .switching import switch_s, train_offload_s

        kv = self.kv_capacity_tokens() * self.spec.kv_bytes_per_token()
        kwargs.setdefault("gpus_copying", min(self.rollout_gpus, int(self.accelerator.gpus_per_node)))
        out = switch_s(self.spec, self.accelerator, gpus=self.rollout_tp, kv_cache_bytes=kv,
                       engine=self.engine, **kwargs)
        if self.train_offload:
            t = train_offload_s(self.spec, self.accelerator, gpus=self.train_gpus)
            out = {**out, "train_sleep": t["sleep"], "train_wake": t["wake"], "sleep": out["sleep"] + t["sleep"],
                   "wake": out["wake"] + t["wake"], "total": out["total"] + t["total"]}
        return out

    # ----------------------------------------------------------------------------------------- scenario
    def scenario(self, *, lengths: LogNormal | Empirical, prompts_per_step: int, group_size: int = 1,
                 prompt_tokens: float = 0.0, pipeline: Any = None, per_rank: bool = True,
                 prefill_mode: str | None = None, max_num_batched_tokens: int | None = None, context: str = "mean",
                 **scenario_fields: Any) -> Any:
        """A :class:`rollsim.Scenario` of this deployment.

        * rollout: ``instances x slots_per_instance`` slots in instances of ``slots_per_instance``
          (``max_num_seqs``); ``decode_throughput_table`` from the serving model at the mean
          context (prompt + half the mean answer; agentic, a turn's over the trajectory, earlier turns
          and observations included: :func:`decode_context_tokens`); ``kv_cache_tokens`` from memory (the engine's KV
          preemption applies). By default (``prefill_mode=None``: ``"shared"``, or ``"per_slot"``
          with ``agentic``) the engine prefills in the steps each instance shares with decoding
          (:attr:`rollsim.Scenario.prefill_mode` ``"shared"``, chunked prefill) at
          :meth:`prefill_tokens_per_s`: each group's prompt once (prefix sharing) and every
          recompute (prompt + tokens done) of a request preempted for KV or resumed after a weight
          update, which slows the instance's decoding like the prefill it is.
        * training (``per_rank``, default): ``train`` is a :class:`rollsim.TrainRanks` from
          :func:`rollsim.hardware.training.engine_train_ranks`: each simulated step assigns the
          batch it trains to the ``train_gpus / model_parallel`` data-parallel ranks by
          ``train_options["dispatch"]`` (default ``"balanced"``, verl's ``balance_batch``) and waits
          for the slowest rank in every mini-batch, each sequence with its own attention term;
          ``train_step_s`` and ``train_s_per_token`` are 0. ``per_rank=False``: ``train_step_s``
          and ``train_s_per_token`` from :func:`rollsim.hardware.training.engine_train_params` at
          the mean sequence length, ranks taken as even.
        * agentic (``agentic=`` among the fields, ``prefill_mode="per_slot"``): the later turns'
          prefill (observations, contexts dropped or evicted between turns) and every prompt are
          prefilled on their slot at the speed of one lone prefill of ``prompt + mean answer``
          tokens (``c / prefill_s(c)``, as the agentic presets price theirs), not folded into the
          table, so no turn's prefill is free; a ``prefill_tokens_per_s`` given among the fields
          replaces that speed (and the prompt is then folded into the table as without agentic).
        * colocated: ``weight_sync_s`` grows by :meth:`switch_s` (synchronous pipeline only).
        * ``prefill_mode="shared"`` (the default without ``agentic``): the engine prefills the
          prompts and recomputes in the steps it shares with decoding at
          :meth:`prefill_tokens_per_s`, so the table has no prefill term.
        * ``prefill_mode="per_slot"`` without ``agentic``: each group's prompt is folded into the
          table's steps (its prefill tokens spread over the group's decoded tokens) and
          ``prefill_tokens_per_s`` is infinite, so a recompute (KV preemption, ``keep_recompute``,
          a prefix cleared by an update) costs nothing: the model before recompute was priced,
          kept for comparison (``docs/hardware.md``).
        * ``agentic=`` is kept as given: a preset's Agentic (:mod:`rollsim.trajectories`) bounds
          ``max_trajectories`` by the pool it was made for (2 x 256 = 512 on ``Scenario()``'s),
          so make it for this deployment's ``instances * slots_per_instance`` slots (``rollsim run
          --model ... --agentic-preset NAME`` does) or replace the bound. A bound below the
          deployment's slots (at most that many are ever busy) gets a :class:`rollsim.DeploymentWarning`.
        * ``weight_sync=`` (a cluster, :class:`rollsim.sync.WeightSync`) must be this deployment's: the
          same model, inference GPUs (instances x TP), training GPUs and placement, else it is refused.
        * training GPUs that cannot hold the model's training state get a
          :class:`rollsim.DeploymentWarning` (:meth:`train_state_words`); the step is priced all the same.
        * ``context="per_token"``: the table is the step without context (no KV read, no attention
          over it) and ``decode_s_per_context_token`` the seconds a step adds per token of its
          sequences' contexts (:meth:`context_s_per_token`), so that answers slow as they grow
          instead of being priced at the mean context.

        Parameters
        ----------
        lengths : LogNormal | Empirical
            Answer lengths, tokens.
        prompts_per_step : int
            Prompts per training step; ``batch_size = prompts_per_step x group_size`` samples.
        group_size : int
            Answers per prompt.
        prompt_tokens : float
            Prompt length, tokens.
        pipeline : Synchronous | OneStepAsync | OffPolicy | FullyAsync, optional
            Default :class:`rollsim.Synchronous` when colocated, else :class:`rollsim.FullyAsync`.
        per_rank : bool
            Simulate each step's data-parallel ranks (:class:`rollsim.TrainRanks`), or a step
            linear in the batch's tokens (``False``).
        prefill_mode : "shared" | "per_slot", optional
            Default ``"shared"`` (``"per_slot"`` with ``agentic``); see above.
        max_num_batched_tokens : int, optional
            Tokens per engine step with ``prefill_mode="shared"`` (vLLM's name). Default the
            engine's API-server default for the GPU
            (:func:`rollsim.hardware.serving.default_max_num_batched_tokens`: vLLM 8192 on GPUs of
            70 GiB or more that are not A100s, 2048 on the rest; SGLang's ``chunked_prefill_size`` by
            GPU memory), or twice ``slots_per_instance`` when that is more (vLLM refuses a budget
            below ``max_num_seqs``; a step holds every decoding sequence's token and prompt chunks in
            the rest).
        context : "mean" | "per_token"
            ``"mean"`` (default): the table at the mean context. ``"per_token"``: see above.
        **scenario_fields
            Any other :class:`rollsim.Scenario` field (``horizon_s``, ``seed``, ``weight_sync_s``, ...).

        Returns
        -------
        rollsim.Scenario

        Raises
        ------
        ScenarioError
            If the instance's KV cache cannot hold one prompt and the longest answer, or a field is
            out of range.
        """
        from rollsim.pipelines import FullyAsync, Synchronous, is_synchronous
        from rollsim.scenario import Scenario
        from rollsim.train_ranks import TrainRanks

        from .training import engine_train_params, engine_train_ranks

        if not isinstance(lengths, LogNormal | Empirical):
            raise invalid("lengths", f"must be LogNormal(...) or Empirical(...), got {type(lengths).__name__}")
        p = _check.integer("prompts_per_step", prompts_per_step, 1, 2**24)
        g = _check.integer("group_size", group_size, 1, 2**24)
        pt = _check.number("prompt_tokens", prompt_tokens, allow_zero=True)
        if pipeline is None:
            pipeline = Synchronous() if self.colocated else FullyAsync()
        if self.colocated and not is_synchronous(pipeline):
            raise invalid("pipeline", f"a colocated deployment runs rollout and training in turns: it needs "
                                      f"Synchronous(), got {pipeline!r}")
        mean = lengths.mean_tokens()
        ctx = decode_context_tokens(pt, lengths, scenario_fields.get("agentic"))
        seq = sequence_tokens(pt, lengths, scenario_fields.get("agentic"))  # a trained sequence: a whole trajectory
        spi = self.slots_per_instance
        kv = self.kv_capacity_tokens(context_tokens=ctx)
        need = pt + _max_length(lengths) + 1
        if math.floor(kv) < need:  # the scenario's capacity is whole tokens (kv_cache_tokens below)
            raise invalid("kv_cache_tokens", f"an instance of {self.rollout_tp} {self.accelerator.name} holds "
                                             f"{math.floor(kv)} tokens of KV cache, less than one request's {need:.0f} "
                                             "(prompt + longest answer + 1); raise rollout_tp or "
                                             "gpu_memory_utilization, or cap the lengths")
        if prefill_mode not in (None, "per_slot", "shared"):
            raise invalid("prefill_mode", f"must be 'per_slot' or 'shared', got {prefill_mode!r}")
        # trajectories prefill their later turns on the slot: price that (and the prompt, at the same speed)
        agentic = scenario_fields.get("agentic") is not None
        if prefill_mode is None:
            # the engine's shared prefill prices every recompute (KV preemption, weight updates) as well as the prompts
            prefill_mode = "per_slot" if agentic else "shared"
        shared = prefill_mode == "shared"
        if not shared and max_num_batched_tokens is not None:
            raise invalid("max_num_batched_tokens", f"applies only with prefill_mode='shared' (the budget of a shared "
                                                    f"step), got {max_num_batched_tokens!r} with prefill_mode="
                                                    f"'per_slot'{' (the default with agentic)' if agentic else ''}")
        if context not in ("mean", "per_token"):
            raise invalid("context", f"must be 'mean' or 'per_token', got {context!r}")
        per_token = context == "per_token"
        turn_prefill = agentic and not shared and "prefill_tokens_per_s" not in scenario_fields
        table = serving.decode_throughput_table(self.spec, self.accelerator, tp=self.rollout_tp,
                                                context_tokens=0.0 if per_token else ctx, max_seqs=spi, engine=self.engine,
                                                prefill_tokens_per_token=0.0 if shared or turn_prefill
                                                else pt / (g * mean))
        if _check.flag("per_rank", per_rank):
            opts = {"dispatch": "balanced", **self.train_options}
            ranks = engine_train_ranks(self.spec, self.accelerator, train_gpus=self.train_gpus, batch_size=p * g,
                                       mean_tokens=seq, backend=self.train_backend, **opts)
            _check_ranks_divide(p, g, int(ranks["dp_ranks"]), self.train_gpus)
            tr: dict[str, Any] = {"train_step_s": 0.0, "train_s_per_token": 0.0, "train": TrainRanks(**ranks)}
        else:
            tr = engine_train_params(self.spec, self.accelerator, train_gpus=self.train_gpus, mean_tokens=seq,
                                     backend=self.train_backend, **self.train_options)
        fields: dict[str, Any] = dict(
            rollout_slots=self.instances * spi, slots_per_instance=spi, decode_tokens_per_s=table[0][1],
            decode_throughput_table=table, kv_cache_tokens=math.floor(kv), batch_size=p * g, group_size=g,
            prompt_tokens=pt, lengths=lengths, pipeline=pipeline, **tr,
        )
        if per_token:
            fields["decode_s_per_context_token"] = self.context_s_per_token(ctx)
        if turn_prefill:
            c = pt + mean
            fields["prefill_tokens_per_s"] = c / self.prefill_s(c)
        if shared:
            if max_num_batched_tokens is None:
                max_num_batched_tokens = self.default_batched_tokens()
            fields.update(prefill_mode="shared", max_num_batched_tokens=max_num_batched_tokens,
                          prefill_tokens_per_s=self.prefill_tokens_per_s(pt, max_num_batched_tokens))
        fields.update(scenario_fields)
        if self.colocated:
            fields["weight_sync_s"] = fields.get("weight_sync_s", 0.0) + self.switch_s()["total"]
        sc = Scenario(**fields)
        self._check_weight_sync(sc.weight_sync)
        self._warn_train_state()
        mt = None if sc.agentic is None else sc.agentic.max_trajectories
        if mt is not None and mt < sc.rollout_slots:
            warnings.warn(DeploymentWarning(
                f"agentic.max_trajectories: {mt} is below the deployment's {sc.rollout_slots} rollout slots "
                f"({self.instances} instances x {spi}): at most {mt} of them are ever busy (a trajectory holds one slot "
                f"at a time); a preset's bound is made for the pool it was given (rollsim.trajectories."
                f"code_interpreter_math(Scenario(rollout_slots={sc.rollout_slots})) makes it for this one), or set "
                f"max_trajectories (None: unbounded)"), stacklevel=2)
        return sc

    def _check_weight_sync(self, ws: Any) -> None:
        """A cluster given as the scenario's ``weight_sync`` prices this deployment's sync: the same model,
        rollout and training GPUs and placement, else the sync it prices is another deployment's (it was
        taken as given: a DeepSeek-V3 cluster's seconds on a Qwen3-8B deployment)."""
        if ws is None:
            return
        cl = ws.cluster
        diffs = []
        if cl.model.name.lower() != self.spec.name.lower():
            diffs.append(f"model {cl.model.name} (the deployment's is {self.spec.name})")
        if cl.infer.gpus != self.rollout_gpus:
            diffs.append(f"{count(cl.infer.instances, 'inference instance')} x TP {cl.infer.tp} = {count(cl.infer.gpus, 'GPU')} "
                         f"(the deployment's rollout: {count(self.rollout_gpus, 'GPU')})")
        if cl.train.gpus != self.train_gpus:
            diffs.append(f"{count(cl.train.gpus, 'training GPU')} (the deployment's: {self.train_gpus})")
        if cl.hardware.colocated != self.colocated:
            diffs.append(f"hardware.colocated = {str(cl.hardware.colocated).lower()} (the deployment's colocated = "
                         f"{self.colocated})")
        if diffs:
            raise invalid("weight_sync", f"the cluster prices another deployment's sync: {'; '.join(diffs)}; give the "
                                         f"cluster of this deployment (rollsim.sync.Cluster, a cluster file's [train], "
                                         f"[infer], [model]), or the sync as weight_sync_s and rollout_pause_s")

    def split_inputs(self, base: Any, total_gpus: int) -> tuple[Any, dict[str, Any], Deployment]:
        """What ``rollsim split --model`` searches with, for :func:`rollsim.resources.gpu_split`: one
        rollout instance of this deployment (``rollout_tp`` GPUs: its decode table, KV capacity,
        ``max_num_seqs`` slots and the engine's shared prefill of prompts and recomputes, as
        :meth:`scenario`) with ``base``'s lengths, batch, groups, prompt and pipeline, and the
        trainer's cost from specs: GPU-seconds per token of a batch of ``base``'s mean sequence and
        per step (the sharded optimizer), priced on one GPU or, when ``train_options`` need a
        model-parallel group (``expert_parallel=8``), on the fewest GPUs under ``total_gpus`` they
        allow, scaled linearly. ``rollout_gpus`` and ``train_gpus`` are the split's, not these.

        Returns
        -------
        (Scenario, dict, Deployment)
            The instance's scenario (``base`` with its pool, decode table and KV capacity), the
            ``gpu_split`` arguments (``gpus_per_instance``, ``slots_per_instance``,
            ``gpu_s_per_token``, ``train_gpu_s_per_step``) and the deployment priced (its
            ``train_gpus`` the GPUs the trainer was priced on).

        Raises
        ------
        ScenarioError
            As :meth:`scenario`; a training layout that no group of fewer than ``total_gpus`` GPUs
            allows is refused with the error on one GPU.
        """
        import dataclasses

        tp = self.rollout_tp

        def priced(n: int) -> tuple[Deployment, Any]:
            d = dataclasses.replace(self, rollout_gpus=tp, train_gpus=n, colocated=False, train_offload=False)
            with warnings.catch_warnings():  # priced on one GPU per split: the split's own bound applies
                warnings.simplefilter("ignore", DeploymentWarning)
                return d, d.scenario(lengths=base.lengths, prompts_per_step=max(1, base.batch_size // base.group_size),
                                     group_size=base.group_size, prompt_tokens=base.prompt_tokens,
                                     pipeline=base.pipeline, per_rank=False,
                                     # trajectories: the table at their context, the trainer at their length
                                     **({} if base.agentic is None else {"agentic": base.agentic}))

        try:
            d, s = priced(1)
        except ValueError as first:
            found = None
            if str(first).split(":")[0] in MODEL_PARALLEL_OPTIONS:
                for n in range(2, max(2, int(total_gpus))):
                    try:
                        found = priced(n)
                        break
                    except ValueError:
                        continue
            if found is None:
                raise
            d, s = found
        one = base.replace(rollout_slots=s.slots_per_instance, slots_per_instance=s.slots_per_instance,
                           decode_tokens_per_s=s.decode_tokens_per_s, decode_slowdown_per_seq=0.0,
                           decode_throughput_table=s.decode_throughput_table, kv_cache_tokens=s.kv_cache_tokens,
                           prefill_mode=s.prefill_mode, max_num_batched_tokens=s.max_num_batched_tokens,
                           prefill_tokens_per_s=s.prefill_tokens_per_s)
        # train_step_s on one GPU is its optimizer step (no collectives on one GPU): GPU-seconds that shard over
        # the split's training GPUs, as train_step_s prices them on any count (FSDP, distributed optimizer); on a
        # model-parallel group of n GPUs, its seconds are n times as many GPU-seconds
        n = d.train_gpus
        kwargs = dict(gpus_per_instance=tp, slots_per_instance=s.slots_per_instance,
                      gpu_s_per_token=s.train_s_per_token * n, train_gpu_s_per_step=s.train_step_s * n)
        return one, kwargs, d

    def gpu_split(self, base: Any, total_gpus: int, **kwargs: Any) -> Any:
        """``rollsim split --gpus total_gpus --model ... --gpu ...`` in Python:
        :func:`rollsim.resources.gpu_split` over :meth:`split_inputs` (``kwargs``: its other
        arguments, e.g. ``colocated_switch_s``, ``max_drop_fraction``, ``train_fixed_s``). As on the
        command line, no split is recommended whose training GPUs cannot hold the model's training
        state (:func:`rollsim.hardware.switching.train_state_gpus`: 18 bytes per parameter, sharded,
        activations not counted) unless ``min_train_gpus`` is given (``1`` for a trainer that
        offloads it)."""
        from rollsim.resources import gpu_split

        from .switching import train_state_gpus

        one, split_kwargs, _ = self.split_inputs(base, total_gpus)
        if "min_train_gpus" not in kwargs:
            kwargs = {**kwargs, "min_train_gpus": train_state_gpus(self.spec, self.accelerator)[1]}
        return gpu_split(one, total_gpus, **split_kwargs, **kwargs)

    def breakdown(self, context_tokens: float = 2048.0) -> str:
        """A text summary: instances, KV capacity, step terms at 1 and at the full batch, prefill,
        and (colocated) the switch."""
        context_tokens = _check.bounded("context_tokens", context_tokens, 1.0, 2.0**40, "tokens")
        spi = self.slots_per_instance
        kv = self.kv_capacity_tokens(context_tokens=context_tokens)
        fit = min(spi, int(kv // context_tokens))
        full = max(1, fit)
        m, a = self.spec, self.accelerator
        lines = [f"{m.name} on {self.rollout_gpus} x {a.name} ({count(self.instances, self.engine + ' instance')} of TP "
                 f"{self.rollout_tp}), training on {count(self.train_gpus, 'GPU')} ({self.train_backend})"
                 f"{', colocated' if self.colocated else ''}",
                 f"  weights {m.weight_bytes(None) / 2**30:.1f} GiB; KV {m.kv_bytes(context_tokens) / context_tokens:,.0f}"
                 f" bytes/token; KV capacity {math.floor(kv):,} tokens per instance",
                 f"  context {context_tokens:g} tokens: {count(fit, 'sequence')} fit (max_num_seqs {spi})"
                 + ("; one such sequence exceeds the KV capacity" if fit == 0 else "")]
        for b in sorted({1, full}):
            t = self.step_breakdown(b, context_tokens)
            terms = ", ".join(f"{k.removesuffix('_s')} {v * 1e3:.2f}" for k, v in t.items()
                              if k.endswith("_s") and k != "total_s" and v)
            lines.append(f"  batch {b}: step {t['total_s'] * 1e3:.2f} ms ({terms} ms): {b / t['total_s']:,.0f} tokens/s "
                         f"per instance, {1 / t['total_s']:,.1f} per sequence")
        lines.append(f"  prefill of {context_tokens:g} tokens alone: {self.prefill_s(context_tokens) * 1e3:.1f} ms")
        if self.colocated:
            lines.append(f"  colocated switch: {self.switch_s()['total']:.2f} s per step")
        return "\n".join(lines)
