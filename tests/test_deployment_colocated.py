"""A colocated deployment pays its switch once per step, on top of the training it would do
anyway (its ``train_step_s`` used to be raised to the switch as well, paying it twice)."""

from __future__ import annotations

import pytest

from rollsim import LogNormal, Synchronous
from rollsim.hardware import Deployment


@pytest.mark.parametrize("per_rank", [False, True])
def test_the_switch_is_paid_once(per_rank: bool) -> None:
    kw = dict(model="Qwen3-8B", gpu="H100", rollout_gpus=8, rollout_tp=1, train_gpus=8)
    args = dict(lengths=LogNormal(7.0, 0.8, 8192.0), prompts_per_step=64, group_size=8, prompt_tokens=500.0,
                pipeline=Synchronous(), per_rank=per_rank)
    apart = Deployment(**kw).scenario(**args)  # type: ignore[arg-type]
    co_dep = Deployment(**kw, colocated=True)  # type: ignore[arg-type]
    co = co_dep.scenario(**args)
    switch = co_dep.switch_s()["total"]
    assert switch > 1.0
    assert co.weight_sync_s == pytest.approx(apart.weight_sync_s + switch, rel=1e-12)
    assert (co.train_step_s, co.train_s_per_token, co.train) == (apart.train_step_s, apart.train_s_per_token, apart.train)


def test_breakdown_says_when_no_sequence_fits() -> None:
    d = Deployment(model="Qwen3-30B-A3B", gpu="H100", rollout_gpus=1, rollout_tp=1, train_gpus=1)
    assert d.breakdown(1e9).splitlines()[2] == ("  context 1e+09 tokens: 0 sequences fit (max_num_seqs 1024); one such "
                                                "sequence exceeds the KV capacity")
    # 67 (78 with the 0.5 GiB reserve before vLLM's measured 2.45 GiB of non-KV memory per GPU)
    assert d.breakdown().splitlines()[2] == "  context 2048 tokens: 67 sequences fit (max_num_seqs 1024)"
