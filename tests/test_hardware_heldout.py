"""The resource model on published measurements it is not fitted on (rollsim.hardware.held_out,
``data/held_out.toml``): every row's published number and its prediction (goldens), the count within
25 % whatever it is, and that no fit reads the rows."""

from __future__ import annotations

import pytest

from rollsim.hardware import held_out, serving, switching, training, validation
from rollsim.hardware.serving import ENGINES

# (label, measured as published or derived from it, predicted: golden of this model, rel 1e-9)
GOLDEN = [
    ("Qwen3-14B H100", 3173.92, 3672.067686913242),
    ("Qwen3-14B A100", 1887.31, 1152.049826066327),
    ("Qwen3-32B A100", 832.43, 480.8933880692683),
    ("gpt-oss-20b H100", 7817.03, 6141.7713873144885),
    ("gpt-oss-20b A100", 4620.12, 1903.9629127942817),
    ("gpt-oss-120b A100 TP2", 2276.4, 2205.8518729724547),
    ("Qwen3-235B-A22B H100 TP8", 4015.36, 5190.813646985263),
    ("Qwen3-235B-A22B A100 TP8", 1798.14, 1673.1415777626382),
    ("GLM-4.5-Air H100 TP4", 3815.71, 5892.703026120635),
    ("GLM-4.5-Air A100 TP4", 1883.14, 1824.1904982490073),
    ("DeepSeek-R1 H200 TP8", 2621.05, 6247.428939163595),
    ("GLM-4.6 FP8 A100 TP8", 1345.12, 1436.897588547159),
    ("GLM-4.6 FP8 H100 TP8", 1528.16, 7191.560605227101),
    ("GLM-4.6 H200 TP8", 2907.97, 4270.765294048843),
    ("Qwen3-8B Ascend 910B", 1512.21, 1975.0526817697078),
    ("Qwen3-30B-A3B Ascend 910B TP2", 590.58, 2966.074776677836),
    # training: seconds per step = global batch x sequence tokens / (published tokens/s/GPU x GPUs)
    ("fsdp2 Llama-3.1-8B 128xH100", 256 * 8192 / (5605 * 128), 2.632415344353666),
    ("fsdp2 Llama-3.1-8B 8xH100 32k fp8", 8 * 32768 / (3890 * 8), 5.871085649425605),
    ("fsdp2 Llama-3.1-70B 256xH100 fp8", 512 * 8192 / (829 * 256), 19.412531031628756),
    ("fsdp2 Llama-3.1-8B 32xH200 fp8", 64 * 8192 / (10938 * 32), 1.589775015506766),
    ("fsdp2 Llama-3.1-8B 64xH200 fp8", 128 * 8192 / (10753 * 64), 1.588654722363909),
    ("fsdp2 Llama-3.1-70B 256xH100 TP8 bf16", 512 * 8192 / (597.3 * 256), 31.11516596325839),
    ("fsdp2 Llama-3.1-8B 64xH100 TP8 bf16", 96 * 8192 / (4378 * 64), 2.5097995749136457),
    ("megatron Llama-3.1-70B 64xH100 fp8", 128 * 8192 / (1602 * 64), 10.166855616293875),
    ("megatron Qwen3-30B-A3B 16xH100 fp8", 512 * 4096 / (5275 * 16), 5.961726666753156),
    ("megatron gpt-oss-120b 64xH100", 512 * 4096 / (5630 * 64), 3.06818852866083),
    ("megatron Qwen3-235B-A22B 256xH100 fp8", 2048 * 4096 / (1575 * 256), 14.124205332815949),
    ("megatron Llama-3.1-8B 8xB200 fp8", 128 * 8192 / (30624 * 8), 3.9881423360822805),
    ("megatron gpt-oss-120b 64xB200", 512 * 4096 / (8213 * 64), 1.692825443262806),
    ("megatron Qwen3-30B-A3B 8xB200 fp8", 512 * 4096 / (9299 * 8), 5.410083915696715),
    ("megatron Qwen3-235B-A22B 64xB200 fp8", 1024 * 4096 / (3269 * 64), 6.87439615050937),
]


def test_every_row_measured_and_predicted():
    df = held_out.held_out_table()
    assert df["label"].to_list() == [g[0] for g in GOLDEN]
    for r, (label, measured, predicted) in zip(df.iter_rows(named=True), GOLDEN):
        assert r["measured"] == pytest.approx(measured, rel=1e-12), label
        assert r["predicted"] == pytest.approx(predicted, rel=1e-9), label
        assert r["error"] == pytest.approx(predicted / measured - 1.0, rel=1e-9), label
        assert r["fit"] is False
        assert r["source"].count("@") == 1 and len(r["source"].split("@")[1].split()[0]) == 40, label


def test_serving_row_by_hand():
    # Qwen3-14B on one H100: 3,173.92 output tok/s at a mean TPOT of 226.03 ms is 717.4 running
    # sequences; each step decodes one token per sequence at context 217.4 + 201.6 / 2 and prefills
    # 217,393 / 201,648 prompt tokens per decoded token
    batch = 3173.92 * 0.22603
    t = serving.step_time("Qwen3-14B", "H100", tp=1, batch=batch, context_tokens=217.393 + 201.648 / 2,
                          prefill_tokens=batch * 217393 / 201648, params=serving.engine_params("vllm"))["total_s"]
    row = held_out.held_out_rows()[0]
    assert row.predicted() == pytest.approx(batch / t, rel=1e-12)
    assert row.measured_time_s == pytest.approx(0.22603)


def test_quantized_checkpoint_row_by_hand():
    # GLM-4.6-FP8 is GLM-4.5's architecture with 1-byte weights (weight_bytes_per_param = 1.0)
    from dataclasses import replace

    from rollsim.hardware import specs

    m = replace(specs.model("GLM-4.5"), dense_bytes_per_param=1.0, expert_bytes_per_param=1.0)
    batch = 1528.16 * 0.50888
    t = serving.step_time(m, "H100", tp=8, batch=batch, context_tokens=214.465 + 199.904 / 2,
                          prefill_tokens=batch * 214465 / 199904, params=serving.engine_params("vllm"))["total_s"]
    row = next(r for r in held_out.held_out_rows() if r.label == "GLM-4.6 FP8 H100 TP8")
    assert row.predicted() == pytest.approx(batch / t, rel=1e-12)
    bf16 = serving.step_time("GLM-4.5", "H100", tp=8, batch=batch, context_tokens=214.465 + 199.904 / 2,
                             prefill_tokens=batch * 214465 / 199904, params=serving.engine_params("vllm"))["total_s"]
    assert batch / bf16 / 1528.16 - 1 == pytest.approx(1.84, abs=0.005)  # the README's "+184 % with BF16"


def test_training_row_by_hand():
    # the row's published layout: PP 2 (VP 24), EP 8; Megatron's default recompute (none)
    step = training.train_step_s("Qwen3-30B-A3B", "H100", backend="megatron", train_gpus=16, tokens=512 * 4096,
                                 sequences=512, recompute_logprob=False, reference=False, model_parallel=2,
                                 pipeline_parallel=2, virtual_pipeline=24, expert_parallel=8, precision="fp8")
    assert step["pipeline_bubble"] > 0 and step["ep_comm"] > 0 and step["recompute"] == 0
    row = next(r for r in held_out.held_out_rows() if r.label == "megatron Qwen3-30B-A3B 16xH100 fp8")
    assert row.predicted() == step["total"]


def test_summary_count():
    df = held_out.held_out_table()
    # whatever it is: nothing is tuned on these rows
    assert int(df["within_25pct"].sum()) == 14 and df.height == 31
    assert validation.summary(df).startswith("14 of 31 rows within 25 % of measured (45.2%)")
    assert int(df.filter(df["area"] == "decode")["within_25pct"].sum()) == 6
    assert int(df.filter(df["area"] == "training")["within_25pct"].sum()) == 8


def test_no_fit_reads_the_held_out_rows(monkeypatch):
    labels = {r.label for r in held_out.held_out_rows()}
    sources = {r.source.split(" @")[0] for r in held_out.held_out_rows()}
    held = held_out.held_out_table()

    def refuse() -> None:
        raise AssertionError("a fit read the held-out rows")

    monkeypatch.setattr(held_out, "load", refuse)
    f = validation.fit()
    for k, v in f["terms"].items():
        assert getattr(ENGINES["vllm"], k) == pytest.approx(v, rel=0.01, abs=1e-6), k
    assert not labels & set(f["residuals"])
    assert training.fit() == training.MFU
    assert training.fit_families() == training.MFU_FAMILY
    assert switching.fit() == {"sleep_fixed_s": switching.SLEEP_FIXED_S, "wake_fixed_s": switching.WAKE_FIXED_S,
                               "pageable_bytes_per_s": switching.PAGEABLE_BYTES_PER_S,
                               "pinned_efficiency": switching.PINNED_EFFICIENCY,
                               "unpin_bytes_per_s": switching.UNPIN_BYTES_PER_S}
    calib = validation.table()  # the calibration table (and its own held-out checks) is built without them
    assert not labels & set(calib["label"])
    # no held-out row repeats a calibration measurement (two files are shared, with other tables / rows:
    # torchtitan's December 2024 H100 benchmark and Megatron-Bridge 25.11 H100 table)
    for r in held.iter_rows(named=True):
        same = calib.filter((calib["quantity"] == r["quantity"]) & ((calib["measured"] / r["measured"] - 1).abs() < 1e-3))
        assert same.height == 0, r["label"]
    assert len(sources) == 20
    assert not labels & {c.name for c in training.CALIBRATION + training.HELD_OUT}


def test_validate_resources_shows_the_section(capsys):
    from rollsim.cli import main

    assert main(["validate", "--resources"]) == 0
    out = capsys.readouterr().out
    calib, held = out.split("held out (not fitted)")
    assert "DeepSeek-R1 H200 TP8" in held and "DeepSeek-R1 H200 TP8" not in calib
    assert "+138.4%* DeepSeek-R1 H200 TP8" in held
    assert held.strip().splitlines()[-1].startswith("14 of 31 rows within 25 %")
    assert main(["validate", "--resources", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith(",section")
    assert sum(line.endswith(",held_out") for line in lines) == 31


def test_readme_held_out_table_is_current():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### Held out: published measurements no fit reads")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    df = held_out.held_out_table()
    assert [r[4] for r in rows] == [f"{e:+.0%}" for e in df["error"]]
    assert "14 of the 31 are within 25 % (decode 6 of 16, training 8 of 15)" in " ".join(section.split())
