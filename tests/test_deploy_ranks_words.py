"""``Deployment.scenario`` refuses a batch its training ranks cannot share in the user's terms, and
every value it suggests builds a scenario."""

from __future__ import annotations

import re

import pytest

from rollsim import LogNormal, ScenarioError
from rollsim.hardware import Deployment


@pytest.mark.parametrize(("train_gpus", "options", "prompts", "group"),
                         [(3, {}, 5, 5), (3, {}, 7, 4), (3, {}, 1, 1), (16, {"tensor_parallel": 4}, 3, 2)])
def test_suggested_values_work(train_gpus, options, prompts, group):
    backend = "megatron" if options else "fsdp2"
    dep = dict(model="Qwen3-8B", gpu="H100", rollout_gpus=8, train_gpus=train_gpus, train_backend=backend,
               train_options=options)
    with pytest.raises(ScenarioError, match=r"^prompts_per_step: prompts_per_step x group_size = ") as e:
        Deployment(**dep).scenario(lengths=LogNormal(), prompts_per_step=prompts, group_size=group)
    msg = str(e.value)
    assert "train.dp_ranks" not in msg and "batch_size" not in msg
    m = re.search(r"give prompts_per_step=(\d+) or (\d+)(?: or train_gpus=([\d / ]+))?, or per_rank=False", msg)
    assert m is not None, msg
    for p in (int(m.group(1)), int(m.group(2))):
        sc = Deployment(**dep).scenario(lengths=LogNormal(), prompts_per_step=p, group_size=group)
        assert sc.batch_size == p * group and sc.batch_size % sc.train.dp_ranks == 0
    for gpus in ([int(x) for x in m.group(3).split(" / ")] if m.group(3) else []):
        sc = Deployment(**{**dep, "train_gpus": gpus}).scenario(lengths=LogNormal(), prompts_per_step=prompts,
                                                                 group_size=group)
        assert sc.batch_size % sc.train.dp_ranks == 0
    sc = Deployment(**dep).scenario(lengths=LogNormal(), prompts_per_step=prompts, group_size=group, per_rank=False)
    assert sc.train is None and sc.batch_size == prompts * group


def test_a_batch_out_of_range_is_named_as_such_first():
    # 16,777,214 x 64 samples: above batch_size's [1, 16777216] and not a multiple of 3 ranks
    with pytest.raises(ScenarioError, match=r"^batch_size: must be in \[1, 16777216\], got 1073741696$"):
        Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=8, train_gpus=3).scenario(
            lengths=LogNormal(), prompts_per_step=2**24 - 2, group_size=64)
