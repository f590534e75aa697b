"""A colocated deployment pays its switch once per step, on top of the training it would do
anyway (its ``train_step_s`` used to be raised to the switch as well, paying it twice)."""

from __future__ import annotations

import pytest

from rollsim import LogNormal, Synchronous
from rollsim.hardware import Deployment
from rollsim.hardware.specs import MODELS


@pytest.mark.parametrize("per_rank", [False, True])
def test_the_switch_is_paid_once(per_rank: bool) -> None:
    kw = dict(model="Qwen3-8B", gpu="H100", rollout_gpus=8, rollout_tp=1, train_gpus=8)
    args = dict(lengths=LogNormal(7.0, 0.8, 8192.0), prompts_per_step=64, group_size=8, prompt_tokens=500.0,
                pipeline=Synchronous(), per_rank=per_rank)
    apart = Deployment(**kw).scenario(**args)  # type: ignore[arg-type]
    co_dep = Deployment(**kw, colocated=True)  # type: ignore[arg-type]
    co = co_dep.scenario(**args)
    switch = co_dep.switch_s()["total"]
    # a steady-state vLLM level-1 switch: both fixed costs (the wake's is 0), the 16.4 GB of BF16
    # weights copied out and back over PCIe Gen5 (64e9 B/s) at the fitted pinned-copy efficiency, and
    # the weights and the deployment's KV cache mapped back on the wake at the fitted 2.97e11 B/s
    weights = MODELS["Qwen3-8B"].total_params * 2.0
    kv = co_dep.kv_capacity_tokens() * MODELS["Qwen3-8B"].kv_bytes_per_token()
    assert switch == pytest.approx(0.0546 + 0.0 + 2 * weights / (0.804 * 64e9) + (weights + kv) / 2.97e11, rel=1e-12)
    assert co.weight_sync_s == pytest.approx(apart.weight_sync_s + switch, rel=1e-12)
    assert (co.train_step_s, co.train_s_per_token, co.train) == (apart.train_step_s, apart.train_s_per_token, apart.train)


def test_breakdown_says_when_no_sequence_fits() -> None:
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=1, rollout_tp=1, train_gpus=1)
    assert d.breakdown(1e9).splitlines()[2] == ("  context 1e+09 tokens: 0 sequences fit (max_num_seqs 1024); one such "
                                                "sequence exceeds the KV capacity")
    # 67 (78 with the 0.5 GiB reserve before vLLM's measured 2.45 GiB of non-KV memory per GPU)
    assert d.breakdown().splitlines()[2] == "  context 2048 tokens: 67 sequences fit (max_num_seqs 1024)"


def test_train_offload_adds_the_trainers_state() -> None:
    # vime's setting (vllm-project/vime issue 442): Qwen3-0.6B colocated on one L20, Megatron's state
    # parked through torch_memory_saver every step; 18 B/param x 596,049,920 params on one GPU
    kw = dict(model="Qwen3-0.6B", gpu="L20", rollout_gpus=1, train_gpus=1, colocated=True)
    engine_only = Deployment(**kw).switch_s()  # type: ignore[arg-type]
    d = Deployment(**kw, train_offload=True)  # type: ignore[arg-type]
    both = d.switch_s()
    b = 18.0 * 596_049_920
    sleep = b / (0.804 * 32e9) + b / 2.88e9
    wake = b / 2.97e11 + b / (0.804 * 32e9) + b / 7.53e9
    assert (both["train_sleep"], both["train_wake"]) == (pytest.approx(sleep, rel=1e-12), pytest.approx(wake, rel=1e-12))
    assert both["total"] == pytest.approx(engine_only["total"] + sleep + wake, rel=1e-12)
    assert both["sleep"] == pytest.approx(engine_only["sleep"] + sleep, rel=1e-12)
    s = d.scenario(lengths=LogNormal(5.0, 0.5, 192.0), prompts_per_step=8, group_size=2, prompt_tokens=200.0)
    plain = Deployment(**kw).scenario(lengths=LogNormal(5.0, 0.5, 192.0), prompts_per_step=8,  # type: ignore[arg-type]
                                      group_size=2, prompt_tokens=200.0)
    assert s.weight_sync_s == pytest.approx(plain.weight_sync_s + sleep + wake, rel=1e-12)
