"""Defects a new user hit: the sync recommendation, docs examples, launch-script commands, AReaL nulls."""

from __future__ import annotations

from pathlib import Path

import pytest

import rollsim.sync as rs
from rollsim.sync.stacks import rank_designs

EXAMPLE = Path(rs.__file__).parent / "examples" / "cluster.toml"


def test_rank_designs_says_how_far_to_trust_each_stack():
    """Row 1 of ``rank_designs`` is the stack to run; each row carries the errors of its stack's
    prediction rows (``rollsim sync --validate``) and the interval they give its estimate."""
    r = {row["stack"]: row for row in rank_designs(rs.load_weight_sync(EXAMPLE).cluster).iter_rows(named=True)}
    top = rank_designs(rs.load_weight_sync(EXAMPLE).cluster).row(0, named=True)
    assert top["stack"] == "rdma-write" and top["total_s"] == pytest.approx(1.7129, abs=1e-4)
    assert top["checked_on"] == "1 prediction of published timings off by +17.1 %"
    assert top["low_s"] == pytest.approx(1.7129 / 1.1706, abs=1e-3) and top["high_s"] == top["total_s"]
    nemo = r["nemo-rl-reshard"]   # three predictions: -7.4 %, +24.9 %, +38.4 %
    assert nemo["checked_on"] == "3 predictions of published timings off by -7.4 % to +38.4 %"
    assert nemo["low_s"] == pytest.approx(nemo["total_s"] / 1.384, rel=1e-3)
    assert nemo["high_s"] == pytest.approx(nemo["total_s"] / 0.926, rel=1e-3)
    assert r["verl-ring"]["checked_on"] == "fitted on 1 published timing, no prediction checked"
    assert r["verl-ring"]["low_s"] is None and r["verl-ring"]["high_s"] is None
    assert r["nccl-broadcast-rank0"]["checked_on"] == "checkpoint-engine's fitted values, no published timing of its own"
    assert r["filesystem"]["checked_on"] == "not calibrated: no published timing (assumed values)"
    own = rank_designs(rs.load_weight_sync(EXAMPLE).cluster, {"mine": rs.STACKS["rdma-write"]}).row(0, named=True)
    assert own["checked_on"] == "not a stack of rollsim.sync.STACKS: no published timing checked"


# ------------------------------------------------------------------ launch scripts: only the trainer's command

#: The shape of THUDM/slime's scripts/run-qwen3-4B.sh: cleanup commands, exports, a probe, a sourced model
#: file, argument arrays, ray start, then ray job submit ... -- python3 train.py.
SLIME = r'''#!/bin/bash
# for rerun the task
pkill -9 sglang
sleep 3
ray stop --force
pkill -9 ray
pkill -9 python
set -ex
export PYTHONBUFFERED=16
NVLINK_COUNT=$(nvidia-smi topo -m 2>/dev/null | grep -o 'NV[0-9][0-9]*' | wc -l)
if [ "$NVLINK_COUNT" -gt 0 ]; then
    HAS_NVLINK=1
else
    HAS_NVLINK=0
fi
SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"
source "${SCRIPT_DIR}/models/qwen3-4B.sh"
CKPT_ARGS=(
   --hf-checkpoint /root/Qwen3-4B
)
ROLLOUT_ARGS=(
   --rollout-batch-size 32
   --n-samples-per-prompt 8
   --rollout-max-response-len 8192
   --global-batch-size 256
)
UNUSED_ARGS=(
   --rollout-batch-size 1024
)
export MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
ray start --head --node-ip-address ${MASTER_ADDR} --num-gpus 8 --disable-usage-stats
ray job submit --address="http://127.0.0.1:8265" \
   --runtime-env-json='{"env_vars": {"PYTHONPATH": "/root/Megatron-LM/"}}' \
   -- python3 train.py \
   --actor-num-nodes 1 --actor-num-gpus-per-node 8 --colocate \
   ${MODEL_ARGS[@]} ${CKPT_ARGS[@]} ${ROLLOUT_ARGS[@]}; echo done --force x
'''


def _notes(imp, option):
    return [n for n in imp.notes if n.option == option]


def test_slime_reads_only_the_training_command(tmp_path):
    """Before: ``ray stop --force`` then ``pkill`` became a noted ``--force = pkill``, and every ray option
    (``--head``, ``--num-gpus``, ``--address``, ...) a note of its own."""
    from rollsim import configs

    p = tmp_path / "run-qwen3-4B.sh"
    p.write_text(SLIME)
    imp = configs.load(p)
    assert imp.framework == "slime" and imp.scenario.batch_size == 256 and imp.max_response_tokens == 8192
    options = {n.option for n in imp.notes}
    for name in ("--force", "--head", "--num-gpus", "--node-ip-address", "--disable-usage-stats", "--address",
                 "--runtime-env-json"):
        assert name not in options, name
    # UNUSED_ARGS is an array the command does not expand: not read (its 1024 prompts would win otherwise)
    assert _notes(imp, "--rollout-batch-size")[0].value == "32"
    [other] = _notes(imp, "(other commands)")
    assert (other.value, other.kind) == (
        "pkill, sleep, ray stop, set, NVLINK_COUNT=..., grep, wc, if, fi, SCRIPT_DIR=..., source, UNUSED_ARGS=..., "
        "ray start, echo", "ignored")
    assert other.became == ("not read: 16 other commands of the script and the launcher before the trainer (ray job "
                            "submit ...); only the trainer's command (train.py / train_async.py) is read")
    assert [n.option for n in imp.notes if n.option.startswith("$")] == ["${MODEL_ARGS[@]}"]   # the sourced file's


def test_script_commands_split_on_operators_lines_and_subshells():
    from rollsim.configs._common import script_commands

    text = ("A=1; ray stop --force && pkill -9 ray || true\n"
            "(cd /x && python3 train.py --rollout-batch-size $A) | tee log\n"
            "ARGS=(\n  --n-samples-per-prompt 4   # comment\n)\n"
            "python3 \\\n  train.py ${ARGS[@]} &\nwait\n")
    assert script_commands(text) == [
        ["A=1"], ["ray", "stop", "--force"], ["pkill", "-9", "ray"], ["true"],
        ["cd", "/x"], ["python3", "train.py", "--rollout-batch-size", "$A"], ["tee", "log"],
        ["ARGS=(", "--n-samples-per-prompt", "4", ")"],
        ["python3", "train.py", "${ARGS[@]}"], ["wait"]]


def test_openrlhf_and_verl_read_only_the_trainer(tmp_path):
    from rollsim import configs

    p = tmp_path / "openrlhf.sh"
    p.write_text("ray stop --force\npkill -9 python\nray start --head --num-gpus 8\n"
                 "ray job submit --address=http://127.0.0.1:8265 -- python3 -m openrlhf.cli.train_ppo_ray \\\n"
                 "   --rollout.batch_size 16 --rollout.n_samples_per_prompt 4 --train.batch_size 64\n")
    imp = configs.load(p)
    assert imp.framework == "openrlhf" and imp.scenario.batch_size == 64 and imp.unknown_options == ()
    assert "--force" not in {n.option for n in imp.notes} and "--head" not in {n.option for n in imp.notes}
    assert [n.value for n in _notes(imp, "(other commands)")] == ["ray stop, pkill, ray start"]
    p = tmp_path / "verl.sh"
    p.write_text("set -x\nray stop --force\nexport VLLM_USE_V1=1\n"
                 "python3 -m verl.trainer.main_ppo data.train_batch_size=32 actor_rollout_ref.rollout.n=4 "
                 "data.max_response_length=2048 2>&1 | tee verl.log\n"
                 "python3 scripts/merge.py backend=fsdp local_dir=x\n")
    imp = configs.load(p)
    assert imp.framework == "verl" and imp.scenario.batch_size == 128 and imp.max_response_tokens == 2048
    assert imp.unknown_options == () and "backend" not in {n.option for n in imp.notes}
    assert [n.value for n in _notes(imp, "(other commands)")] == ["set, ray stop, tee, python3 scripts/merge.py"]


def test_areal_null_is_refused_where_areal_refuses_it(tmp_path):
    """``rollout.max_head_offpolicyness: null`` was read as the default 0 silently; AReaL's field is
    ``int`` (not Optional) and its OmegaConf merge refuses None. An Optional field's null is its default."""
    from rollsim import ScenarioError, configs

    base = "gconfig: {n_samples: 4}\ntrain_dataset: {batch_size: 8}\nallocation_mode: sglang.d4+fsdp.d4\n"
    p = tmp_path / "a.yaml"
    p.write_text(base + "rollout: {max_head_offpolicyness: null, consumer_batch_size: 8}\n")
    with pytest.raises(ScenarioError, match=r"^rollout\.max_head_offpolicyness: is null, which AReaL refuses: its "
                                            r"field is InferenceEngineConfig\.max_head_offpolicyness: int = 0 "):
        configs.load(p, "areal")
    p.write_text(base + "rollout: {max_head_offpolicyness: 2, consumer_batch_size: 8, max_concurrent_rollouts: null}\n")
    imp = configs.load(p, "areal")
    assert imp.scenario.pipeline.admission_eta == 2
