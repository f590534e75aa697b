"""Per-rank training (``Scenario.train``): a step waits for the slowest data-parallel rank.

The part's fields, units, defaults and ranges are the engine's schema
(``rust/rollsim-core/src/schema.rs``, ``TRAIN_RANKS``); the dispatches and the step are the
engine's (``rust/rollsim-core/src/pipeline/trainer.rs``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rollsim import _check
from rollsim.errors import invalid, strict_init

__all__ = ["TrainRanks"]


def _train_spec(name: str) -> dict[str, Any]:
    """The engine's schema of a field of :class:`TrainRanks` (rust/rollsim-core/src/schema.rs)."""
    return _check.part_field("TrainRanks", name)


_TR = {n: _train_spec(n) for n in ("dp_ranks", "dispatch", "s_per_token", "s_per_token_sq", "fixed_s",
                                   "mini_batches", "max_tokens_per_gpu")}


@dataclass(frozen=True)
class TrainRanks:
    """Per-rank training (``Scenario.train``): a step waits for the slowest data-parallel rank.

    The batch's sequences (prompt + answer: ``T = prompt_tokens + length`` tokens each, in the order
    the trainer took them, a GRPO group's answers consecutive) are assigned to ``dp_ranks`` ranks
    by ``dispatch``; each rank cuts its sequences into ``mini_batches`` consecutive parts (as
    ``numpy.array_split`` does), and every mini-batch ends at a synchronization, so it lasts
    ``fixed_s`` plus its slowest rank's ``sum(s_per_token x T + s_per_token_sq x T**2)``. A step
    lasts ``train_step_s + weight_sync_s + (train_s_per_token + logprob_s_per_token) x tokens``
    plus that, summed over the mini-batches. The steps frame gains ``rank_slowest_s`` and
    ``rank_mean_s`` (the slowest and the mean rank's seconds, summed over mini-batches, without
    ``fixed_s``). The assignment is the engine's, the same as
    :func:`rollsim.hardware.training.assign_ranks`; ``rollsim.hardware.Deployment.scenario`` fills
    this part from FLOPs.

    Parameters
    ----------
    dp_ranks : int
        Data-parallel ranks, in [1, 2**20]; must divide ``batch_size`` (except ``"packed"``).
    dispatch : {"contiguous", "round_robin", "balanced", "balanced_minibatch", "lpt", "packed"}
        How samples reach ranks: equal consecutive chunks (dispatch without balancing: a group
        stays on one rank); sample ``i`` to rank ``i mod dp_ranks``; verl's ``trainer.balance_batch``
        (equal-count Karmarkar-Karp partitions of the whole batch on each sequence's work,
        volcengine/verl ``verl/utils/seqlen_balancing.py``); the same per mini-batch (verl
        ``keep_minibatch``; ``dp_ranks x mini_batches`` must divide ``batch_size``); greedy
        longest-first with every rank training heaviest first (Tencent-Hunyuan/UniRL PR 45); or
        first-fit-decreasing micro-batches of at most ``max_tokens_per_gpu`` tokens dealt heaviest
        first to the least loaded rank (slime ``--use-dynamic-batch-size --max-tokens-per-gpu``).
        The balancing ones keep the batch order when it is the better split.
    s_per_token : float, in [0, 1e3]
        Seconds one rank spends per token of a sequence, seconds/token.
    s_per_token_sq : float, in [0, 1]
        Seconds one rank spends per squared token of a sequence (causal attention), seconds/token**2.
    fixed_s : float, in [0, 1e9]
        Fixed seconds per mini-batch (optimizer step, exposed collectives), seconds.
    mini_batches : int, in [1, 2**24]
        Optimizer steps per training step (verl ``train_batch_size / ppo_mini_batch_size``); at most
        the samples of one rank (except ``"packed"``).
    max_tokens_per_gpu : float, in [1, 1e12], optional
        ``dispatch="packed"`` only (and needed there): the micro-batch token budget, tokens; at least
        ``prompt_tokens`` + the longest possible answer.

    Raises
    ------
    ScenarioError (ValueError)
        Any field out of range (the message names it ``train.<field>``), a budget without
        ``"packed"`` or ``"packed"`` without one.
    """

    dp_ranks: int = _TR["dp_ranks"]["default"]
    dispatch: str = _TR["dispatch"]["default"]
    s_per_token: float = _TR["s_per_token"]["default"]
    s_per_token_sq: float = _TR["s_per_token_sq"]["default"]
    fixed_s: float = _TR["fixed_s"]["default"]
    mini_batches: int = _TR["mini_batches"]["default"]
    max_tokens_per_gpu: float | None = _TR["max_tokens_per_gpu"]["default"]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("dp_ranks", "mini_batches"):
            set_(self, name, _check.part_integer(_TR[name], getattr(self, name)))
        choices = _TR["dispatch"]["choices"]
        if not isinstance(self.dispatch, str) or self.dispatch not in choices:
            raise invalid("train.dispatch", f"must be one of {choices}, got {self.dispatch!r}")
        for name in ("s_per_token", "s_per_token_sq", "fixed_s"):
            set_(self, name, _check.part_bounded(_TR[name], getattr(self, name)))
        budget = self.max_tokens_per_gpu
        if budget is not None:
            set_(self, "max_tokens_per_gpu", _check.part_bounded(_TR["max_tokens_per_gpu"], budget))
        if self.dispatch == "packed":
            if budget is None:
                raise invalid("train.max_tokens_per_gpu", "dispatch='packed' needs the micro-batch token budget, "
                                                          "got None")
        elif budget is not None:
            raise invalid("train.max_tokens_per_gpu", "applies to dispatch='packed' only, got a budget")

    def check(self, batch_size: int, prompt_tokens: float, longest_answer: float) -> None:
        """Refuses a part that does not fit the scenario (the engine's checks, same messages)."""
        k, m = self.dp_ranks, self.mini_batches
        if self.dispatch == "packed":
            assert self.max_tokens_per_gpu is not None
            need = prompt_tokens + longest_answer
            if self.max_tokens_per_gpu < need:
                raise invalid("train.max_tokens_per_gpu",
                              f"must be >= prompt_tokens + the longest possible answer = {prompt_tokens!r} + "
                              f"{float(longest_answer)!r} = {need!r} tokens, got {self.max_tokens_per_gpu!r}")
            return
        per, what = (k * m, "dp_ranks x mini_batches") if self.dispatch == "balanced_minibatch" else (k, "dp_ranks")
        if batch_size % per:
            raise invalid("train.dp_ranks", f"{what} ({per}) must divide batch_size ({batch_size}): every rank trains "
                                            "as many samples")
        if m > batch_size // k:
            raise invalid("train.mini_batches", f"must be at most the samples of one rank (batch_size / dp_ranks = "
                                                f"{batch_size // k}), got {m}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "train_ranks", "dp_ranks": self.dp_ranks, "dispatch": self.dispatch,
                "s_per_token": self.s_per_token, "s_per_token_sq": self.s_per_token_sq, "fixed_s": self.fixed_s,
                "mini_batches": self.mini_batches, "max_tokens_per_gpu": self.max_tokens_per_gpu}


strict_init(TrainRanks, "train.", "TrainRanks")
