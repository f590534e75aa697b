"""Routing-replay data volume: the expert ids an inference engine returns per token.

vLLM and SGLang (``--enable-return-routed-experts``) return an int32 array
``[tokens, layers, top_k]`` per request (vllm-project/vllm
``model_executor/layers/fused_moe/routed_experts_capturer.py``). Bytes per token =
``layers * top_k * id_bytes``; ids fit in 1 byte up to 256 experts, 2 bytes up to 65,536.
The chapter (section "Routing replay for MoE"): 61 layers x 8 ids, about 500 bytes per
token, about 8 MB for a 16K answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from .cluster import ModelSpec

__all__ = ["id_bytes", "Replay", "routing_replay"]


def id_bytes(n_experts: int, width: str = "min") -> int:
    """Bytes per expert id.

    Parameters
    ----------
    n_experts : int
        Routed experts per MoE layer (>= 1).
    width : {"min", "int32"}
        ``"min"``: the smallest of 1, 2, 4 bytes that holds ``n_experts - 1``; ``"int32"``: the
        engines' default (4).

    Raises
    ------
    ValueError
        ``n_experts`` < 1 or > 2**32, or an unknown ``width``.
    """
    if not isinstance(n_experts, int) or isinstance(n_experts, bool) or not 1 <= n_experts <= 2**32:
        raise ValueError(f"n_experts: must be an int in 1..=4294967296, got {n_experts!r}")
    if width == "int32":
        return 4
    if width != "min":
        raise ValueError(f"width: must be 'min' or 'int32', got {width!r}")
    for b in (1, 2, 4):
        if n_experts <= 2 ** (8 * b):
            return b
    return 4  # pragma: no cover


@dataclass(frozen=True)
class Replay:
    """Routing-replay volume. Bytes are exact integers except ``bytes_per_s`` (float).

    Attributes
    ----------
    layers, top_k, id_bytes : int
    bytes_per_token : int
        ``layers * top_k * id_bytes``.
    bytes_per_answer : int
        For ``answer_tokens`` tokens.
    bytes_per_batch : int
        For ``batch_answers`` answers.
    bytes_per_s : float
        Bandwidth to ship the ids at ``tokens_per_s`` generated tokens per second (whole pool).
    """

    layers: int
    top_k: int
    id_bytes: int
    answer_tokens: int
    batch_answers: int
    tokens_per_s: float
    bytes_per_token: int
    bytes_per_answer: int
    bytes_per_batch: int
    bytes_per_s: float

    def frame(self) -> pl.DataFrame:
        """One row with every field (int64 / f64 columns)."""
        return pl.DataFrame([self.__dict__])


def routing_replay(
    model: ModelSpec | None = None,
    *,
    layers: int | None = None,
    top_k: int | None = None,
    n_experts: int | None = None,
    width: str = "int32",
    answer_tokens: int = 16384,
    batch_answers: int = 1024,
    tokens_per_s: float = 0.0,
) -> Replay:
    """Routing-replay bytes per token, per answer, per batch, and the bandwidth they need.

    Parameters
    ----------
    model : ModelSpec, optional
        A MoE preset (``layers`` = num_hidden_layers, the engines' layer axis; ``top_k``;
        ``n_experts``). Explicit keywords override it.
    layers, top_k, n_experts : int
    width : {"int32", "min"}
        Engine default int32, or the smallest width that holds the expert count.
    answer_tokens, batch_answers : int
        Tokens per answer (default 16K as in the chapter) and answers per batch (>= 0).
    tokens_per_s : float
        Generated tokens per second across the pool (>= 0), for ``bytes_per_s``.

    Raises
    ------
    ValueError
        Missing or out-of-range values (named).

    Examples
    --------
    >>> routing_replay(layers=61, top_k=8, n_experts=256, width="min").bytes_per_token
    488
    >>> routing_replay(layers=61, top_k=8, n_experts=256).bytes_per_token
    1952
    """
    L = layers if layers is not None else (model.layers if model else None)
    k = top_k if top_k is not None else (model.top_k if model else None)
    e = n_experts if n_experts is not None else (model.n_experts if model else None)
    for name, v in (("layers", L), ("top_k", k), ("n_experts", e)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name}: must be an int >= 1 (a MoE model or an explicit value), got {v!r}")
    assert isinstance(L, int) and isinstance(k, int) and isinstance(e, int)  # checked just above (for mypy)
    if k > e:
        raise ValueError(f"top_k: must be <= n_experts ({e}), got {k}")
    for name, v in (("answer_tokens", answer_tokens), ("batch_answers", batch_answers)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise ValueError(f"{name}: must be an int >= 0, got {v!r}")
    if not (isinstance(tokens_per_s, (int, float)) and tokens_per_s >= 0 and tokens_per_s < float("inf")):
        raise ValueError(f"tokens_per_s: must be a finite number >= 0, got {tokens_per_s!r}")
    w = id_bytes(e, width)
    bpt = L * k * w
    return Replay(L, k, w, answer_tokens, batch_answers, float(tokens_per_s), bpt, bpt * answer_tokens,
                  bpt * answer_tokens * batch_answers, float(bpt * tokens_per_s))
