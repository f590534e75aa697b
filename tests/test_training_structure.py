"""rollsim.hardware.training's structural terms, worked out by hand on a toy model: FP8 on the
blocks' GEMMs only, activation recompute, tensor-parallel collectives, the expert all-to-all and the
pipeline bubble; their monotonicity; and the engine's per-rank part carrying them."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollsim.hardware import training as tr

# 1e9 parameters, 2 layers of 4 heads of width 8 (attention 2 x 2 x 4 x 8 = 128 FLOPs per token**2),
# hidden 64; a GPU of 1e15 BF16 FLOP/s, 2e15 FP8, NVLink 1e11 B/s, NIC 1e10 B/s, 8 per node
M = SimpleNamespace(name="toy", total_params=1e9, active_params=1e9, layers=2, attention_heads=4, head_dim=8,
                    hidden_size=64)
G = SimpleNamespace(name="toy-gpu", bf16_flops=1e15, fp8_flops=2e15, hbm_bytes_per_s=1e12, scale_up_bytes_per_s=1e11,
                    nic_bytes_per_s=1e10, host_link_bytes_per_s=1e10, gpus_per_node=8)
KW = {"train_gpus": 8, "tokens": 1e6, "sequences": 1000, "mfu": 0.5, "recompute_logprob": False, "reference": False,
      "activation_checkpointing": "none"}
LIN, ATT = 2e9 * 1e6, 128 * 1000 * 1e6  # a forward pass's matrix and attention FLOPs over the batch (T = 1000)


def test_fp8_speeds_up_only_the_blocks_gemms():
    bf16 = tr.train_step_s(M, G, **KW)
    assert bf16["actor"] == pytest.approx(3 * (LIN + ATT) / 4e15, rel=1e-12)  # 8 GPUs x 1e15 x 0.5
    fp8 = tr.train_step_s(M, G, precision="fp8", **KW)
    # no vocabulary: every matrix FLOP is a block's, at 8e15; attention stays at 4e15
    assert fp8["actor"] == pytest.approx(3 * (LIN / 8e15 + ATT / 4e15), rel=1e-12)
    # with a vocabulary the output head (and an untied embedding's share of N) stays at BF16:
    # 2 x 1000 x 64 x 2 = 256,000 FLOPs per token
    vocab = SimpleNamespace(**{**vars(M), "vocab_size": 1000, "extra": {"tie_word_embeddings": False}})
    assert tr.linear_flops_split(vocab) == (2e9 - 256000.0, 256000.0)
    tied = SimpleNamespace(**{**vars(vocab), "extra": {"tie_word_embeddings": True}})
    assert tr.linear_flops_split(tied) == (2e9 - 128000.0, 128000.0)
    v = tr.train_step_s(vocab, G, precision="fp8", **KW)
    assert v["actor"] == pytest.approx(3 * ((2e9 - 256000) * 1e6 / 8e15 + 256000 * 1e6 / 4e15 + ATT / 4e15), rel=1e-12)
    # less than twice as fast, and the head keeps Llama-3.1-8B's FP8 step above half its BF16 step
    assert bf16["actor"] / 2 < fp8["actor"] < bf16["actor"]
    a, b = (tr.train_step_s("Llama-3.1-8B", "H100", train_gpus=8, tokens=8 * 32768, sequences=8, precision=p,
                            mfu=0.4)["actor"] for p in ("bf16", "fp8"))
    assert 0.5 * a < b < 0.8 * a  # at 32k tokens attention is a third of the FLOPs


def test_activation_recompute_by_hand():
    fwd = (LIN + ATT) / 4e15
    full = tr.train_step_s(M, G, **{**KW, "activation_checkpointing": "full", "ppo_epochs": 2})
    assert full["recompute"] == pytest.approx(2 * fwd, rel=1e-12)  # every block's forward again, per epoch
    # fsdp2's selective (torchtitan per-op): every second matmul again; megatron's: the core attention
    sel = tr.train_step_s(M, G, **{**KW, "activation_checkpointing": "selective"})
    assert sel["recompute"] == pytest.approx(0.5 * LIN / 4e15, rel=1e-12)
    msel = tr.train_step_s(M, G, backend="megatron", **{**KW, "activation_checkpointing": "selective"})
    assert msel["recompute"] == pytest.approx(ATT / 4e15, rel=1e-12)
    none = tr.train_step_s(M, G, **KW)
    assert none["recompute"] == 0.0
    # defaults: the framework's (verl's gradient checkpointing for fsdp2, none for Megatron)
    assert tr.ACTIVATION_CHECKPOINTING == {"fsdp2": "full", "megatron": "none"}
    kw = {k: v for k, v in KW.items() if k != "activation_checkpointing"}
    assert tr.train_step_s(M, G, **kw)["recompute"] == pytest.approx(fwd, rel=1e-12)
    assert tr.train_step_s(M, G, backend="megatron", **kw)["recompute"] == 0.0
    # the recompute runs at the FP8 peak for the blocks' GEMMs too
    f8 = tr.train_step_s(M, G, precision="fp8", **{**KW, "activation_checkpointing": "full"})
    assert f8["recompute"] == pytest.approx(LIN / 8e15 + ATT / 4e15, rel=1e-12)


def test_tensor_parallel_collectives_by_hand():
    # TP 2 on 8 GPUs: 4 ranks of 2.5e5 tokens; per layer and forward pass 2 all-reduces of
    # 64 x 2 bytes per token, a ring moving 2 x (2 - 1) / 2 of it, over 75 % of 1e11 B/s
    per_token = 2 * 2 * (2 * 0.5 * 64 * 2) / 0.75e11  # 2 layers x 2 all-reduces
    ph = tr.train_step_s(M, G, tensor_parallel=2, **KW)
    assert ph["tp_comm"] == pytest.approx(2.5e5 * per_token * 2, rel=1e-12)  # forward + backward
    assert ph["actor"] == pytest.approx(3 * (LIN + ATT) / 4e15, rel=1e-12)  # the compute does not change
    full = tr.train_step_s(M, G, tensor_parallel=2, **{**KW, "activation_checkpointing": "full"})
    assert full["tp_comm"] == pytest.approx(2.5e5 * per_token * 3, rel=1e-12)  # + the recompute's forward
    lp = tr.train_step_s(M, G, tensor_parallel=2, **{**KW, "recompute_logprob": True})
    assert lp["tp_comm"] == pytest.approx(2.5e5 * per_token * 3, rel=1e-12)  # + the log-prob forward
    half = tr.train_step_s(M, G, tensor_parallel=2, tp_overlap=0.5, **KW)
    assert half["tp_comm"] == pytest.approx(ph["tp_comm"] / 2, rel=1e-12)
    # across nodes (TP 16 on 16 GPUs) the NIC carries it: 10x slower per byte
    wide = tr.train_step_s(M, G, **{**KW, "train_gpus": 16}, tensor_parallel=16)
    assert wide["tp_comm"] == pytest.approx(1e6 * 2 * 2 * (2 * 15 / 16 * 128) / 0.75e10 * 2, rel=1e-12)
    # model_parallel beyond tp x pp is context parallel: each TP group carries its share of the tokens
    cp = tr.train_step_s(M, G, tensor_parallel=2, model_parallel=4, **KW)
    assert cp["tp_comm"] == pytest.approx(ph["tp_comm"], rel=1e-12)  # half the ranks, each half the tokens


MOE = SimpleNamespace(**{**vars(M), "experts": 8, "experts_per_token": 2, "moe_layers": 2})


def test_expert_all_to_all_by_hand():
    # EP 4 of the 8 ranks, one node: a token's 2 experts (of 8, two per rank) reach
    # 4 x (1 - C(6, 2) / C(8, 2)) = 4 x 13 / 28 ranks; the 3 others of 4 get a copy of 64 x 2 bytes
    ranks = 4 * 13 / 28
    assert tr._touched(8, 2, 4, "random") == pytest.approx(ranks, rel=1e-12)
    per_token = 2 * 2 * 128 * ranks * 3 / 4 / 0.75e11  # 2 MoE layers x (dispatch + combine)
    ph = tr.train_step_s(MOE, G, expert_parallel=4, **KW)
    assert ph["ep_comm"] == pytest.approx(1e6 / 8 * per_token * 2, rel=1e-12)  # 1.25e5 tokens a rank
    # Automodel's fake balanced gate: token i to experts 2i, 2i + 1, both on one rank
    assert tr._touched(8, 2, 4, "consecutive") == 1.0
    fake = tr.train_step_s(MOE, G, expert_parallel=4, expert_routing="consecutive", **KW)
    assert fake["ep_comm"] == pytest.approx(ph["ep_comm"] / ranks, rel=1e-12)
    assert tr._touched(256, 8, 64, "consecutive") == 2.0 and tr._touched(384, 8, 32, "consecutive") == pytest.approx(4 / 3)
    # EP 16 of 16 GPUs spans two nodes: the NIC carries one copy per other node the token's experts are on (16
    # experts: Megatron needs at least one per expert-parallel rank)
    moe16 = SimpleNamespace(**{**vars(MOE), "experts": 16})
    two = tr.train_step_s(moe16, G, expert_parallel=16, **{**KW, "train_gpus": 16})
    nodes = tr._touched(16, 2, 2, "random") * 1 / 2
    inside = 128 * tr._touched(16, 2, 16, "random") * 7 / 16 / 0.75e11
    outside = 128 * nodes / 0.75e10
    assert two["ep_comm"] == pytest.approx(1e6 / 16 * 2 * 2 * max(inside, outside) * 2, rel=1e-12)
    assert tr.train_step_s(M, G, expert_parallel=4, **KW)["ep_comm"] == 0.0  # a dense model has none


def test_pipeline_bubble_by_hand():
    # PP 2 on 8 GPUs: 4 ranks of 250 sequences, one per micro-batch: (2 - 1) / 250 of the rest
    ph = tr.train_step_s(M, G, pipeline_parallel=2, **KW)
    assert ph["pipeline_bubble"] == pytest.approx(ph["actor"] / 250, rel=1e-12)
    v = tr.train_step_s(M, G, pipeline_parallel=2, virtual_pipeline=5, **KW)
    assert v["pipeline_bubble"] == pytest.approx(ph["actor"] / 1250, rel=1e-12)
    mb = tr.train_step_s(M, G, pipeline_parallel=2, max_tokens_per_gpu=50000, **KW)  # 250k tokens: 5 micro-batches
    assert mb["pipeline_bubble"] == pytest.approx(ph["actor"] / 5, rel=1e-12)
    assert tr.train_step_s(M, G, **KW)["pipeline_bubble"] == 0.0


def test_every_term_is_in_the_total():
    ph = tr.train_step_s(MOE, G, tensor_parallel=2, pipeline_parallel=2, expert_parallel=2, precision="fp8",
                         **{**KW, "activation_checkpointing": "full", "recompute_logprob": True})
    assert set(ph) == {"actor", "logprob", "reference", "critic", "optimizer", "collectives", "recompute", "tp_comm",
                       "ep_comm", "cp_comm", "pipeline_bubble", "total"}
    assert min(ph["recompute"], ph["tp_comm"], ph["ep_comm"], ph["pipeline_bubble"]) > 0
    assert ph["total"] == pytest.approx(sum(v for k, v in ph.items() if k != "total"), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2]), st.integers(16, 8192), st.floats(0.0, 1.0),
       st.sampled_from(["Llama-3.1-8B", "Qwen3-30B-A3B", "Qwen3-4B"]))
def test_more_collective_bytes_never_faster(tp, pp, hidden, overlap, name):
    # a wider hidden size moves more bytes in every TP collective; less overlap exposes more
    base = {"train_gpus": 16, "tokens": 2e6, "sequences": 512, "tensor_parallel": tp, "pipeline_parallel": pp}
    a = tr.train_step_s(SimpleNamespace(**{**vars(M), "hidden_size": hidden}), G, mfu=0.4, **base)
    b = tr.train_step_s(SimpleNamespace(**{**vars(M), "hidden_size": hidden * 2}), G, mfu=0.4, **base)
    assert b["tp_comm"] >= a["tp_comm"] and b["total"] >= a["total"]
    c = tr.train_step_s(name, "H100", tp_overlap=overlap, **base)
    d = tr.train_step_s(name, "H100", tp_overlap=overlap / 2, **base)
    assert d["total"] >= c["total"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["Llama-3.1-8B", "Qwen3-30B-A3B", "Qwen3-0.6B", "DeepSeek-V3"]),
       st.sampled_from(["fsdp2", "megatron"]), st.sampled_from(["bf16", "fp8"]), st.floats(1e5, 1e8),
       st.sampled_from([8, 64]))
def test_full_recompute_never_faster_than_selective_or_none(name, backend, precision, tokens, gpus):
    kw = {"backend": backend, "precision": precision, "train_gpus": gpus, "tokens": tokens, "sequences": 64,
          "tensor_parallel": 2, "expert_parallel": 2}
    t = {ac: tr.train_step_s(name, "H100", activation_checkpointing=ac, **kw)["total"]
         for ac in ("none", "selective", "full")}
    # (equal when the exposed data-parallel collectives absorb the recompute: communication-bound)
    assert t["full"] >= t["selective"] * (1 - 1e-12) and t["selective"] >= t["none"] * (1 - 1e-12)


def test_engine_ranks_carry_the_new_terms():
    # an even batch: the engine's per-rank step (s_per_token x T + s_per_token_sq x T**2 per sequence, the
    # slowest rank per mini-batch) equals train_step_s's terms over the same batch
    opts = {"tensor_parallel": 2, "pipeline_parallel": 2, "expert_parallel": 2, "precision": "fp8",
            "activation_checkpointing": "full", "mini_batches": 2, "dispatch": "lpt"}
    e = tr.engine_train_ranks("Qwen3-30B-A3B", "H100", train_gpus=16, batch_size=64, mean_tokens=3000.0, **opts)
    lengths = np.full(64, 3000.0)
    ph = tr.train_step_s("Qwen3-30B-A3B", "H100", train_gpus=16, lengths=lengths, **opts)
    per_rank = 64 // e["dp_ranks"]  # sequences per rank, over both mini-batches
    engine = per_rank * (e["s_per_token"] * 3000.0 + e["s_per_token_sq"] * 3000.0**2)
    terms = sum(ph[k] for k in ("actor", "logprob", "reference", "critic", "recompute", "tp_comm", "ep_comm",
                                "pipeline_bubble"))
    assert engine == pytest.approx(terms, rel=1e-9)
    assert e["fixed_s"] * 2 == pytest.approx(ph["optimizer"] + ph["collectives"], rel=1e-9)
