"""rollsim.whatif moving a calibrated training cost to another training GPU count
(rollsim.what_if.train_scale): with the model and accelerator known, by the hardware training model
anchored on the calibrated time; otherwise by 1 / GPUs."""

from __future__ import annotations

import csv
import io
import math

import pytest

from rollsim import ScenarioError, calibrate, configs, whatif
from rollsim.cli import main
from rollsim.configs import EXAMPLES as EX
from rollsim.hardware import training
from rollsim.what_if import _mean_answer, _mfu_spread, train_scale

METRICS = EX / "verl_grpo_metrics.csv"


@pytest.fixture(scope="module")
def imp():
    return configs.load(EX / "verl_grpo.yaml")      # Qwen/Qwen3-4B, 16 GPUs colocated


def _parts(cal, gpus):
    sc = cal.scenario
    ans = _mean_answer(sc)
    ph = training.train_step_s("Qwen3-4B", "H100", train_gpus=gpus, tokens=sc.batch_size * (ans + sc.prompt_tokens),
                               sequences=sc.batch_size, recompute_logprob=False, reference=False)
    return ph["actor"] + ph["logprob"], ph["optimizer"] + ph["collectives"]


def test_hardware_split_anchored_on_the_calibrated_time(imp):
    cal = calibrate(METRICS, imp, bootstrap=0, gpu="H100")
    sc = cal.scenario
    measured = sc.train_step_s + (sc.train_s_per_token + sc.logprob_s_per_token) * _mean_answer(sc) * sc.batch_size
    c0, n0 = _parts(cal, 16)
    c1, n1 = _parts(cal, 8)
    assert c0 + n0 < measured                       # Qwen3-4B on H100: the run is slower than its FLOPs
    rest = measured - c0 - n0
    ts = train_scale(cal, 8)
    assert ts.rule == "hardware"
    assert ts.factor == pytest.approx((c1 + n1 + rest) / measured, rel=1e-12)
    assert ts.fixed_s == pytest.approx(rest, rel=1e-12)
    assert ts.compute_share == pytest.approx(c0 / measured, rel=1e-12)
    assert 1.1 < ts.factor < 1.3                     # far from the 2.0 of 1 / GPUs: most of the time is fixed
    # the interval's high end: the unexplained time scaling like compute, with the compute at the
    # MFU lowered by the spread of the training model's published checks
    k = math.exp(_mfu_spread())
    c0l, c1l = c0 * k, c1 * k
    a = min(1.0, measured / (c0l + n0))
    rest_l = max(0.0, measured - c0l - n0)
    assert ts.high == pytest.approx(max((a * (c1l + n1) + rest_l * c1l / c0l) / measured,
                                        (c1 + n1 + rest * c1 / c0) / measured), rel=1e-12)
    assert ts.low <= ts.factor <= ts.high
    assert train_scale(cal, 16).factor == 1.0 and train_scale(cal, 16).rule == "same"


def test_slower_accelerator_is_all_compute_and_scales_as_one_over_gpus(imp):
    # on H20 (148 TFLOP/s, its family MFU 0.599 with full recompute, verl's default) the FLOPs take 80 %
    # of the measured update (more than 100 % before the recompute and the refit): the compute part
    # scales as one over the GPUs, the rest stays, so halving the GPUs costs 1.80x
    cal = calibrate(METRICS, imp, bootstrap=0, gpu="H20")
    ts = train_scale(cal, 8)
    assert ts.compute_share == pytest.approx(0.7976, abs=1e-3) and ts.fixed_s == pytest.approx(6.766, abs=1e-2)
    assert ts.factor == pytest.approx(1.0 + ts.compute_share, rel=1e-3)


def test_without_an_accelerator_the_rule_is_one_over_gpus(imp):
    cal = calibrate(METRICS, imp, bootstrap=0)
    assert cal.hardware["model"].name == "Qwen3-4B" and cal.hardware["gpu"] is None
    ts = train_scale(cal, 8)
    assert (ts.factor, ts.low, ts.high, ts.rule) == (2.0, 2.0, 2.0, "1/gpus")


def test_whatif_rows_carry_the_training_scale_and_its_interval(imp):
    cal = calibrate(METRICS, imp, bootstrap=0, gpu="H100")
    df = whatif(cal, [{"pipeline": "fully-async", "rollout_gpus": 8, "max_staleness": 2}], draws=0, steps=6)
    base, alt = df.row(0, named=True), df.row(1, named=True)
    assert (base["train_gpus"], base["train_scale"], base["train_scaling"]) == (16, 1.0, "same")
    ts = train_scale(cal, 8)
    assert (alt["train_gpus"], alt["train_scaling"]) == (8, "hardware")
    assert alt["train_scale"] == pytest.approx(ts.factor) and alt["train_scale_high"] == pytest.approx(ts.high)
    assert alt["step_s_low"] <= alt["step_s"] <= alt["step_s_high"]
    assert alt["step_s_high"] > alt["step_s"]          # the training cost's interval reaches the step time
    old = calibrate(METRICS, imp, bootstrap=0)
    one = whatif(old, [{"pipeline": "fully-async", "rollout_gpus": 8, "max_staleness": 2}], draws=0, steps=6).row(1, named=True)
    assert one["train_scaling"] == "1/gpus" and one["train_scale"] == 2.0


def test_model_and_gpu_named_on_calibrate(imp):
    cal = calibrate(METRICS, imp.scenario, bootstrap=0, model="Qwen/Qwen3-8B", gpu="h100-sxm", backend="megatron",
                    train_options={"mini_batches": 4})
    assert (cal.hardware["model"].name, cal.hardware["gpu"].name, cal.hardware["backend"]) == ("Qwen3-8B", "H100",
                                                                                               "megatron")
    assert train_scale(cal, 8, base_gpus=16).rule == "hardware"
    with pytest.raises(ScenarioError, match=r"^base_gpus: needs a base imported from a config"):
        train_scale(cal, 8)
    with pytest.raises(ScenarioError, match=r"^gpu: unknown accelerator 'TPU9' "):
        calibrate(METRICS, imp, bootstrap=0, gpu="TPU9")
    with pytest.raises(ScenarioError, match=r"^model: unknown model 'NoSuchModel-1B' "):
        calibrate(METRICS, imp, bootstrap=0, model="NoSuchModel-1B")
    with pytest.raises(ScenarioError, match=r"^backend: must be one of fsdp2, megatron, got 'deepspeed'$"):
        calibrate(METRICS, imp, bootstrap=0, backend="deepspeed")
    with pytest.raises(ScenarioError, match=r"^train_options: 'tokens' is set by rollsim.whatif"):
        calibrate(METRICS, imp, bootstrap=0, train_options={"tokens": 5})


def test_cli_gpu_and_model(capsys):
    cfg, met = str(EX / "verl_grpo.yaml"), str(METRICS)
    assert main(["whatif", "--config", cfg, "--metrics", met, "--gpu", "H100", "--model", "Qwen3-4B",
                 "--rollout-gpus", "8", "--pipeline", "fully-async", "--max-staleness", "2", "--bootstrap", "0",
                 "--draws", "0", "--steps", "6", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["train_scaling"] for r in rows] == ["same", "hardware"]
    assert float(rows[1]["train_scale"]) == pytest.approx(1.19, abs=0.05)
    assert main(["calibrate", "--config", cfg, "--metrics", met, "--gpu", "B9000"]) == 2
    assert capsys.readouterr().err.startswith("rollsim: error: --gpu: unknown accelerator 'B9000' (known")


def test_backend_read_from_the_config(tmp_path):
    v = tmp_path / "v.yaml"
    v.write_text("data: {train_batch_size: 4, max_response_length: 1024}\n"
                 "actor_rollout_ref: {model: {path: Qwen/Qwen3-4B}, actor: {strategy: megatron}}\n")
    imp = configs.load(v)
    assert imp.train_backend == "megatron"
    note = next(n for n in imp.notes if n.option == "actor_rollout_ref.actor.strategy")
    assert (note.kind, note.value) == ("read", "megatron")
    assert configs.load(v, gpu="H100").deployment.train_backend == "megatron"
    assert configs.load(EX / "verl_grpo.yaml").train_backend == "fsdp2"          # verl's default strategy: fsdp
    s = tmp_path / "s.sh"
    s.write_text("python train.py --rollout-batch-size 8 --n-samples-per-prompt 4\n")
    assert configs.load(s).train_backend == "megatron"                           # slime's default
    s.write_text("python train.py --rollout-batch-size 8 --train-backend fsdp\n")
    assert configs.load(s).train_backend == "fsdp2"
    a = tmp_path / "a.yaml"
    a.write_text("rollout: {backend: 'sglang:d4p1t1'}\nactor: {backend: 'megatron:d2p1t2'}\n"
                 "gconfig: {n_samples: 4, max_new_tokens: 1024}\ntrain_dataset: {batch_size: 8}\n")
    assert configs.load(a, "areal").train_backend == "megatron"
    m = tmp_path / "m.csv"
    m.write_text("gen_s,train_s,response_mean,response_max\n10,5,100,400\n12,6,120,500\n11,5.5,110,450\n")
    assert calibrate(m, imp, bootstrap=0).hardware["backend"] == "megatron"
    assert calibrate(m, imp, bootstrap=0, backend="fsdp2").hardware["backend"] == "fsdp2"
