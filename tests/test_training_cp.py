"""Context parallelism in rollsim.hardware.training, worked out by hand on a toy model: the
ring-attention K/V exchange (``cp_comm``), hidden behind the attention it overlaps; the tokens each
context-parallel GPU carries in the tensor-parallel collectives; the weights replicated across the
context-parallel GPUs in the data-parallel collectives; and the FP8 rule (attention at BF16)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rollsim.hardware import training as tr

# 1e9 parameters, 2 layers of 4 heads of width 8 with 2 KV heads (attention 2 x 2 x 4 x 8 = 128 FLOPs
# per token**2), hidden 64; a GPU of 1e15 BF16 FLOP/s, 2e15 FP8, NVLink 1e11 B/s, NIC 1e10 B/s, 8 a node
M = SimpleNamespace(name="toy", total_params=1e9, active_params=1e9, layers=2, attention_heads=4, head_dim=8,
                    kv_heads=2, hidden_size=64)
G = SimpleNamespace(name="toy-gpu", bf16_flops=1e15, fp8_flops=2e15, hbm_bytes_per_s=1e12, scale_up_bytes_per_s=1e11,
                    nic_bytes_per_s=1e10, host_link_bytes_per_s=1e10, gpus_per_node=8)
KW = {"train_gpus": 8, "mfu": 0.5, "recompute_logprob": False, "reference": False, "activation_checkpointing": "none",
      "backend": "megatron"}


def test_exchange_per_token_by_hand():
    # CP 2: each GPU passes its K/V shard (2 KV heads x 8 x 2 bytes, K and V: 64 bytes a token) once
    # per layer (cp - 1 = 1) for half of the tokens, over 75 % of NVLink: 2 x 1/2 x 64 / 0.75e11 s a token
    assert tr.cp_exchange_s(M, G, cp=2) == pytest.approx(2 * 0.5 * 64 / 0.75e11, rel=1e-15)
    # CP 4 inside the node: 3 of 4 shards travel
    assert tr.cp_exchange_s(M, G, cp=4) == pytest.approx(2 * 0.75 * 64 / 0.75e11, rel=1e-15)
    # TP 2 x CP 8 spans 16 GPUs, two nodes: the ring crosses the NIC; each TP GPU holds 1 KV head (32 bytes)
    assert tr.cp_exchange_s(M, G, tp=2, cp=8) == pytest.approx(2 * 7 / 8 * 32 / 0.75e10, rel=1e-15)
    # TP 4 with 2 KV heads: each GPU still holds (a copy of) one head
    assert tr.cp_exchange_s(M, G, tp=4, cp=2) == tr.cp_exchange_s(M, G, tp=2, cp=2)
    # PP 2: a stage exchanges for its own layer only
    assert tr.cp_exchange_s(M, G, pp=2, cp=2) == pytest.approx(tr.cp_exchange_s(M, G, cp=2) / 2, rel=1e-15)


def test_short_sequences_expose_the_exchange_by_hand():
    # CP 2 on 8 GPUs: 4 data-parallel ranks of 250 sequences of 1,000 tokens. One forward pass of a
    # sequence exchanges for 8.533e-7 s (1,000 x 64 / 0.75e11); its attention, at 2 GPUs x 1e15 x 0.5,
    # is 128 x 1000**2 / 1e15 = 1.28e-7 s, of which the (cp - 1) / cp = 1/2 the ring overlaps hides
    # 6.4e-8 s. The rest is exposed in the forward (1) and the backward (2: K/V, then dK/dV).
    per_seq = 1000 * 64 / 0.75e11 - 0.5 * 128 * 1000**2 / 1e15
    ph = tr.train_step_s(M, G, tokens=1e6, sequences=1000, context_parallel=2, **KW)
    assert ph["cp_comm"] == pytest.approx(250 * per_seq * 3, rel=1e-12)
    assert ph["total"] == pytest.approx(sum(v for k, v in ph.items() if k != "total"), rel=1e-15)
    # the same as model_parallel = 2 (the part beyond TP x PP is context parallel)
    assert tr.train_step_s(M, G, tokens=1e6, sequences=1000, model_parallel=2, **KW) == ph
    # a full recompute runs the forward's exchange once more, the log-prob and reference passes once each
    full = tr.train_step_s(M, G, tokens=1e6, sequences=1000, context_parallel=2,
                           **{**KW, "activation_checkpointing": "full", "recompute_logprob": True, "reference": True})
    assert full["cp_comm"] == pytest.approx(250 * per_seq * 6, rel=1e-12)
    # Megatron's selective recompute is the core attention: its exchange too
    sel = tr.train_step_s(M, G, tokens=1e6, sequences=1000, context_parallel=2,
                          **{**KW, "activation_checkpointing": "selective"})
    assert sel["cp_comm"] == pytest.approx(250 * per_seq * 4, rel=1e-12)
    # fsdp2's selective (every second matmul) recomputes no attention
    fs = tr.train_step_s(M, G, tokens=1e6, sequences=1000, context_parallel=2,
                         **{**KW, "backend": "fsdp2", "activation_checkpointing": "selective"})
    assert fs["cp_comm"] == pytest.approx(250 * per_seq * 3, rel=1e-12)
    # without context parallelism there is none
    assert tr.train_step_s(M, G, tokens=1e6, sequences=1000, **KW)["cp_comm"] == 0.0


def test_long_sequences_hide_the_exchange_by_hand():
    # 10 sequences of 1e5 tokens: a forward's exchange of a sequence is 8.533e-5 s, the attention
    # the ring overlaps 0.5 x 128 x 1e10 / 1e15 = 6.4e-4 s: hidden entirely
    ph = tr.train_step_s(M, G, tokens=1e6, sequences=10, train_gpus=2, context_parallel=2,
                         **{k: v for k, v in KW.items() if k != "train_gpus"})
    assert ph["cp_comm"] == 0.0
    # the break-even length: exchange = hidden attention, T = 8.533e-10 / 6.4e-14 = 13,333 tokens
    t = (2 * 0.5 * 64 / 0.75e11) / (0.5 * 128 / 1e15)
    assert t == pytest.approx(13333.33, rel=1e-6)
    below = tr.train_step_s(M, G, tokens=2 * 0.9 * t, sequences=2, train_gpus=2, context_parallel=2,
                            **{k: v for k, v in KW.items() if k != "train_gpus"})
    # one rank (CP 2 on 2 GPUs) of two such sequences, three passes each
    assert below["cp_comm"] == pytest.approx(2 * 3 * (0.9 * t * 8.533333e-10 - 6.4e-14 * (0.9 * t) ** 2), rel=1e-6)


def test_context_parallel_carries_its_share_of_the_tensor_parallel_tokens():
    # TP 2 x CP 2 on 8 GPUs: 2 ranks of 5e5 tokens, each TP group carrying half of them: the same
    # TP seconds as TP 2 alone (4 ranks of 2.5e5 tokens)
    tp2 = tr.train_step_s(M, G, tokens=1e6, sequences=1000, tensor_parallel=2, **KW)
    both = tr.train_step_s(M, G, tokens=1e6, sequences=1000, tensor_parallel=2, context_parallel=2, **KW)
    assert both["tp_comm"] == pytest.approx(tp2["tp_comm"], rel=1e-12)
    assert both["actor"] == pytest.approx(tp2["actor"], rel=1e-12)


def test_weights_are_replicated_across_context_parallel_gpus():
    # Megatron's distributed optimizer: reduce-scatter gradients + all-gather parameters, 2 x 2 bytes a
    # parameter of the shard, (n - 1) / n of it over 75 % of NVLink, n the shard's replicas. 8 GPUs,
    # CP 2: the shard is the whole model (1e9 parameters), replicated 8 times (4 ranks x 2)
    cp = tr._exposed_comm(M, G, tr.parallel_layout(8, context_parallel=2), "megatron", 0.0, None, 0.0)
    assert cp == pytest.approx(2 * 2e9 * 7 / 8 / 0.75e11, rel=1e-12)
    # TP 2 instead: the shard is half the model, 4 replicas
    tp = tr._exposed_comm(M, G, tr.parallel_layout(8, tensor_parallel=2), "megatron", 0.0, None, 0.0)
    assert tp == pytest.approx(2 * 1e9 * 3 / 4 / 0.75e11, rel=1e-12)
    # one replica of one shard: nothing to reduce
    assert tr._exposed_comm(M, G, tr.parallel_layout(2, tensor_parallel=2), "megatron", 0.0, None, 0.0) == 0.0


def test_fp8_prices_attention_at_bf16():
    # FP8 covers the linear layers only (Float8Linear, Transformer Engine's FP8 GEMMs): the attention
    # term is the same seconds under bf16 and fp8, the blocks' GEMMs twice as fast (no vocabulary here)
    kw = {**KW, "tokens": 1e6, "sequences": 10, "train_gpus": 2}
    b, f = (tr.train_step_s(M, G, precision=p, **kw)["actor"] for p in ("bf16", "fp8"))
    lin, att = 2e9 * 1e6, 128 * 10 * 1e10
    assert b == pytest.approx(3 * (lin + att) / 1e15, rel=1e-12)
    assert f == pytest.approx(3 * (lin / 2e15 + att / 1e15), rel=1e-12)


def test_engine_ranks_carry_the_exposed_exchange():
    # the engine's per-token part adds the exchange a mean_tokens sequence's attention does not hide
    kw = {k: v for k, v in KW.items() if k != "train_gpus"}
    with_cp = tr.engine_train_ranks(M, G, train_gpus=8, batch_size=1000, mean_tokens=1000, context_parallel=2, **kw)
    no_cp = tr.engine_train_ranks(M, G, train_gpus=8, batch_size=1000, mean_tokens=1000, model_parallel=2, **kw)
    assert with_cp == no_cp
    ph = tr.train_step_s(M, G, tokens=1e6, sequences=1000, context_parallel=2, **KW)
    per_token = (ph["actor"] + ph["cp_comm"]) / 2.5e5  # a rank's 250 sequences of 1,000 tokens
    lin_sq = with_cp["s_per_token"] * 1000 + with_cp["s_per_token_sq"] * 1000**2
    assert lin_sq == pytest.approx(per_token * 1000, rel=1e-12)
