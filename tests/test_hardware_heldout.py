"""The resource model on published measurements it is not fitted on (rollsim.hardware.held_out,
``data/held_out.toml`` and set 2, ``data/held_out_2.toml``): every row's published number and its
prediction (goldens), the count within 25 % whatever it is, that no fit reads the rows, and (set 2)
that every row's numbers are the published ones of the shipped source excerpts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rollsim.hardware import held_out, serving, switching, training, validation
from rollsim.hardware.serving import ENGINES

# (label, measured as published or derived from it, predicted: golden of this model, rel 1e-9)
GOLDEN = [
    ("Qwen3-14B H100", 3173.92, 3671.842151955836),
    ("Qwen3-14B A100", 1887.31, 1444.1789174107685),
    ("Qwen3-32B A100", 832.43, 595.930110413259),
    ("gpt-oss-20b H100", 7817.03, 6150.513061917184),
    ("gpt-oss-20b A100", 4620.12, 2475.47241520689),
    ("gpt-oss-120b A100 TP2", 2276.4, 2745.811763805311),
    ("Qwen3-235B-A22B H100 TP8", 4015.36, 5194.367314491428),
    ("Qwen3-235B-A22B A100 TP8", 1798.14, 1970.3141133921183),
    ("GLM-4.5-Air H100 TP4", 3815.71, 5897.239728275895),
    ("GLM-4.5-Air A100 TP4", 1883.14, 2180.72789503703),
    ("DeepSeek-R1 H200 TP8", 2621.05, 3634.866341106112),
    ("GLM-4.6 FP8 A100 TP8", 1345.12, 1730.9221072750033),
    ("GLM-4.6 FP8 H100 TP8", 1528.16, 4106.074683529158),
    ("GLM-4.6 H200 TP8", 2907.97, 4273.764892120155),
    ("Qwen3-8B Ascend 910B", 1512.21, 1974.8299934408171),
    ("Qwen3-30B-A3B Ascend 910B TP2", 590.58, 2967.9479024586853),
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


@pytest.mark.parametrize("held_set", [1, 2])
def test_every_row_measured_and_predicted(held_set):
    golden = GOLDEN if held_set == 1 else GOLDEN_2
    df = held_out.held_out_table(set=held_set)
    assert df["label"].to_list() == [g[0] for g in golden]
    for r, (label, measured, predicted) in zip(df.iter_rows(named=True), golden):
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

    m = replace(specs.model("GLM-4.5"), dense_bytes_per_param=1.0, expert_bytes_per_param=1.0,
                fp8_scaling="block")
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
                               "unpin_bytes_per_s": switching.UNPIN_BYTES_PER_S,
                               "map_bytes_per_s": switching.MAP_BYTES_PER_S}
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
    held, held2 = held.split("held out, set 2 (collected 2026-12-02)")
    assert "DeepSeek-R1 H200 TP8" in held and "DeepSeek-R1 H200 TP8" not in calib
    assert "+38.7%* DeepSeek-R1 H200 TP8" in held
    assert held.strip().splitlines()[-1].startswith("14 of 31 rows within 25 %")
    assert "rollsim/hardware/data/held_out_2.toml" in held2.splitlines()[0]
    assert "-44.0%* Llama-3.1-70B MI300X bs1 128 in" in held2 and "MI300X bs1" not in calib + held
    assert held2.strip().splitlines()[-1].startswith("13 of 26 rows within 25 %")
    assert main(["validate", "--resources", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].endswith(",section")
    assert sum(line.endswith(",held_out") for line in lines) == 31
    assert sum(line.endswith(",held_out_2") for line in lines) == 26


def test_readme_held_out_table_is_current():
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("### Held out: published measurements no fit reads")[1].split("\n## ")[0]
    section = section.split("#### Held out, set 2")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    df = held_out.held_out_table()
    assert [r[4] for r in rows] == [f"{e:+.0%}" for e in df["error"]]
    assert "14 of the 31 are within 25 % (decode 6 of 16, training 8 of 15" in " ".join(section.split())


# ---------------------------------------------------------------------------------------------- set 2
# (label, measured as published or derived from it, predicted: golden of this model, rel 1e-9)
GOLDEN_2 = [
    # vLLM benchmark_latency on 8 MI300X: output tok/s = batch x 2,048 / published latency (s)
    ("Llama-3.1-70B MI300X bs1 128 in", 1 * 2048 / 17.236, 66.58202288336737),
    ("Llama-3.1-70B MI300X bs2 128 in", 2 * 2048 / 18.057, 132.4949438019028),
    ("Llama-3.1-70B MI300X bs4 128 in", 4 * 2048 / 18.450, 262.3534221295729),
    ("Llama-3.1-70B MI300X bs8 128 in", 8 * 2048 / 19.677, 514.4696114239026),
    ("Llama-3.1-70B MI300X bs16 128 in", 16 * 2048 / 22.072, 990.2970555125386),
    ("Llama-3.1-70B MI300X bs32 128 in", 32 * 2048 / 24.932, 1842.2233541121147),
    ("Llama-3.1-70B MI300X bs64 128 in", 64 * 2048 / 33.287, 3232.7458112727663),
    ("Llama-3.1-70B MI300X bs128 128 in", 128 * 2048 / 46.484, 5192.356957486905),
    ("Llama-3.1-70B MI300X bs1 2k in", 1 * 2048 / 17.500, 66.41458926505977),
    ("Llama-3.1-70B MI300X bs2 2k in", 2 * 2048 / 18.055, 131.83356008438358),
    ("Llama-3.1-70B MI300X bs4 2k in", 4 * 2048 / 18.858, 259.77282200159664),
    ("Llama-3.1-70B MI300X bs8 2k in", 8 * 2048 / 20.161, 504.6384585328545),
    ("Llama-3.1-70B MI300X bs16 2k in", 16 * 2048 / 22.347, 954.4994670672854),
    ("Llama-3.1-70B MI300X bs32 2k in", 32 * 2048 / 25.966, 1722.0528803660093),
    ("Llama-3.1-70B MI300X bs64 2k in", 64 * 2048 / 35.324, 2879.9247756612676),
    ("Llama-3.1-70B MI300X bs128 2k in", 128 * 2048 / 52.394, 4337.99709806182),
    # training: seconds per step = global batch x sequence tokens / (published tokens/s/GPU x GPUs)
    ("megatron Llama-3.1-8B 8xH100 fp8 (NeMo 24.07)", 128 * 8192 / (12273 * 8), 9.07088644981859),
    ("megatron Llama-3.1-70B 64xH100 fp8 (NeMo 24.07)", 128 * 8192 / (1524 * 64), 10.042662926425841),
    # long sequences: NeMo's model FLOPs of the batch / (published model TFLOP/s/GPU x GPUs)
    ("megatron Llama-3.1-8B 8xB200 8k fp8", 18.17056469242025, 15.936437123071979),
    ("megatron Llama-3.1-8B 16xB200 16k fp8", 10.809089412373321, 9.491660692437312),
    ("megatron Llama-3.1-8B 32xB200 32k fp8", 7.793905776508847, 6.269272477119982),
    ("megatron Llama-3.1-8B 64xB200 64k fp8", 6.06646950690816, 4.658078369461316),
    ("megatron Llama-3.1-8B 128xB200 128k fp8", 5.1831708602357685, 3.9542879478334645),
    ("megatron Llama-3.1-8B 256xB200 256k fp8", 4.712665021103819, 3.6023927370195383),
    ("megatron Llama-3.1-8B 512xB200 512k fp8", 4.400412855037312, 3.3246384994110945),
    ("megatron Llama-3.1-8B 1024xB200 1024k fp8", 4.315817118582448, 3.1857613806068716),
]


def test_set2_summary_count():
    df = held_out.held_out_table(set=2)
    # whatever it is: nothing is tuned on these rows, and they were collected before any was predicted
    assert int(df["within_25pct"].sum()) == 13 and df.height == 26
    assert validation.summary(df).startswith("13 of 26 rows within 25 % of measured (50.0%)")
    assert int(df.filter(df["area"] == "decode")["within_25pct"].sum()) == 4
    assert int(df.filter(df["area"] == "training")["within_25pct"].sum()) == 9


def test_set1_api_unchanged():
    assert held_out.load() == held_out.load(set=1)
    assert held_out.held_out_table().equals(held_out.held_out_table(set=1))
    assert held_out.load(set=1)["latency"] == [] and held_out.load(set=2)["serving"] == []


def test_latency_row_by_hand():
    # batch 32 of 128-token prompts, 2,048 tokens each, in 24.932 s on 8 MI300X (FP8 weights): 2,048
    # steps of 32 sequences at the mean context 128 + 1,024, each prefilling 32 x 128 / 2,048 tokens
    from dataclasses import replace

    from rollsim.hardware import specs

    m = replace(specs.model("Llama-3.1-70B"), dense_bytes_per_param=1.0, expert_bytes_per_param=1.0,
                fp8_scaling="tensor")
    t = serving.step_time(m, "MI300X", tp=8, batch=32, context_tokens=128 + 2048 / 2, prefill_tokens=32 * 128 / 2048,
                          params=serving.engine_params("vllm"))["total_s"]
    row = next(r for r in held_out.held_out_rows(set=2) if r.label == "Llama-3.1-70B MI300X bs32 128 in")
    assert row.predicted() == pytest.approx(32 / t, rel=1e-12)
    assert row.measured == pytest.approx(32 * 2048 / 24.932, rel=1e-12)
    assert row.measured_time_s == pytest.approx(24.932 / 2048)


def test_nemo_flops_formula_reproduces_the_published_tflops():
    # the NeMo 24.07 table publishes both tokens/s/GPU and model TFLOP/s/GPU: NeMo's Llama-3 formula
    # turns the first into the second (711 and 734 as published, to their rounding)
    for model, tokens_per_s, tflops in (("Llama-3.1-8B", 12273, 711), ("Llama-3.1-70B", 1524, 734)):
        per_token = held_out.nemo_llama3_flops(model, 1, 8192) / 8192
        assert tokens_per_s * per_token / 1e12 == pytest.approx(tflops, abs=0.5), model
    # by hand for Llama-3-8B at 8,192 tokens: 32 layers, hidden 4,096, 32 heads, 8 KV heads, MLP 14,336
    h, s = 4096, 8192
    assert held_out.nemo_llama3_flops("Llama-3.1-8B", 2, s) == pytest.approx(
        2 * s * 32 * h * h * (12 + 12 * 8 / 32 + 18 * 14336 / h + 12 * s / h + 6 * 128256 / (32 * h)), rel=1e-15)


def test_long_sequence_row_by_hand():
    # 1,024K tokens: 4 sequences of 1,048,576 tokens on 1,024 B200 at 1,608 model TFLOP/s/GPU; TP 4 x CP 16
    row = next(r for r in held_out.held_out_rows(set=2) if r.label == "megatron Llama-3.1-8B 1024xB200 1024k fp8")
    assert row.measured == pytest.approx(held_out.nemo_llama3_flops("Llama-3.1-8B", 4, 1048576) / (1608e12 * 1024))
    step = training.train_step_s("Llama-3.1-8B", "B200", backend="megatron", train_gpus=1024, tokens=4 * 1048576,
                                 sequences=4, recompute_logprob=False, reference=False, model_parallel=64,
                                 tensor_parallel=4, context_parallel=16, precision="fp8")
    assert row.predicted() == step["total"]
    # the ring's K/V exchange hides behind the attention it overlaps: per layer (32) and forward pass
    # each GPU sends 15/16 of the tokens' K and V of its 8 / 4 = 2 KV heads (2 x 2 x 128 x 2 = 1,024
    # bytes a token) over the NIC (TP 4 x CP 16 spans 8 nodes): 32 x 15/16 x 1024 / (0.75 x 50e9) s a
    # token, 0.21 s for a rank's 262,144 tokens (the published 16 ranks of 4 sequences), against 0.95 s
    # of the attention the ring overlaps (15/16 of the pass's 1.02 s at the BF16 rate)
    from rollsim.hardware import specs

    b200 = specs.accelerator("B200")
    assert training.cp_exchange_s("Llama-3.1-8B", "B200", tp=4, cp=16) == pytest.approx(
        32 * 15 / 16 * 1024 / (0.75 * b200.nic_bytes_per_s), rel=1e-12)
    assert step["cp_comm"] == 0.0 and step["tp_comm"] > 0


_EXCERPTS = Path(held_out.DATA_2).with_name("held_out_2_excerpts.md")


def _excerpt_sections() -> dict[str, str]:
    text = _EXCERPTS.read_text()
    parts = re.split(r"^## ", text, flags=re.M)[1:]
    return {p.splitlines()[0]: p for p in parts}


def test_set2_rows_are_the_published_numbers():
    """Every row of held_out_2.toml against the verbatim table lines of its source (the excerpts file,
    one section per source with its repository, path and commit): the values as published."""
    sections = _excerpt_sections()
    raw = held_out.load(set=2)
    for r in raw["latency"] + raw["training"]:
        assert r["source"] in sections, r["label"]
    # ROCm/vllm latency table: (batch, input, output, latency) of every Llama 3.1 70B line, in order
    lat = next(v for k, v in sections.items() if k.startswith("ROCm/vllm"))
    lines = [line for line in lat.splitlines() if line.startswith("|") and "---" not in line][1:]
    model_of, published = "", []
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        model_of = cells[0] or model_of
        if model_of.startswith("Llama 3.1 70B"):
            assert (cells[1] or "FP8", cells[2] or "8") == ("FP8", "8")
            published.append((int(cells[3]), int(cells[4]), int(cells[5]), cells[6]))
    assert [(r["batch_size"], r["input_tokens"], r["output_tokens"], f"{r['latency_s']:.3f}") for r in raw["latency"]] \
        == published
    assert {(r["model"], r["gpu"], r["tp"], r["weight_bytes_per_param"]) for r in raw["latency"]} == \
        {("Llama-3.1-70B", "MI300X", 8, 1.0)}
    # NeMo 24.07 pretraining table: GPUs, GBS, sequence length, TP x PP x CP, tokens/s/GPU
    summ = next(v for k, v in sections.items() if "performance_summary.md" in k)
    table = {}
    for line in summ.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0].startswith("LLAMA3-"):
            table[cells[0]] = cells
    mine = [r for r in raw["training"] if "performance_summary.md" in r["source"]]
    assert [r["model"] for r in mine] == ["Llama-3.1-8B", "Llama-3.1-70B"] and list(table) == ["LLAMA3-8B", "LLAMA3-70B"]
    for r, cells in zip(mine, table.values()):
        gpus, gbs, mbs, seq, tp, pp, cp, vp = (int(c) for c in cells[1:9])
        assert (r["gpus"], r["sequences"], r["sequence_tokens"], r["model_parallel"]) == (gpus, gbs, seq, tp * pp * cp)
        assert (r["tensor_parallel"], r["pipeline_parallel"], r.get("virtual_pipeline", 1), r["context_parallel"],
                r["micro_batch_size"]) == (tp, pp, vp, cp, mbs)
        assert r["tokens_per_s_per_gpu"] == int(cells[9]) and r["precision"] == "fp8"
    # NeMo long-sequence B200 table: SeqLen (K), GPUs, batch, (without CP), TP, PP, DP, CP, TFLOPS / GPU, speedup
    longs = next(v for k, v in sections.items() if "performance_long_sequence.md" in k)
    trs = [re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S) for tr in re.findall(r"<tr>(.*?)</tr>", longs, flags=re.S)]
    mine = [r for r in raw["training"] if "performance_long_sequence.md" in r["source"]]
    assert len(trs) == len(mine) == 8
    for r, td in zip(mine, trs):
        k, gpus, batch = int(td[0]), int(td[1]), int(td[2])
        tp, pp, dp, cp = (int(td[i]) for i in (4, 5, 6, 7))
        tflops = float(td[8].replace(",", ""))
        assert (r["sequence_tokens"], r["gpus"], r["sequences"]) == (k * 1024, gpus, batch)
        assert r["model_parallel"] == tp * pp * cp and r["model_tflops_per_gpu"] == tflops
        assert (r["tensor_parallel"], r["pipeline_parallel"], r["context_parallel"]) == (tp, pp, cp)
        assert "virtual_pipeline" not in r and "micro_batch_size" not in r  # not published
        assert f"TP {tp}, PP {pp}, DP {dp}, CP {cp}" in r["note"] and r["precision"] == "fp8"
        assert r["model"] == "Llama-3.1-8B" and r["gpu"] == "B200"


def test_no_fit_reads_set_2(monkeypatch):
    rows2 = held_out.held_out_rows(set=2)
    labels = {r.label for r in rows2}

    def refuse(*_a, **_k) -> None:
        raise AssertionError("a fit read a held-out set")

    monkeypatch.setattr(held_out, "load", refuse)
    f = validation.fit()
    for k, v in f["terms"].items():
        assert getattr(ENGINES["vllm"], k) == pytest.approx(v, rel=0.01, abs=1e-6), k
    assert not labels & set(f["residuals"])
    assert training.fit() == training.MFU
    assert training.fit_families() == training.MFU_FAMILY
    assert switching.fit()["sleep_fixed_s"] == switching.SLEEP_FIXED_S
    calib = validation.table()
    assert not labels & set(calib["label"])
    monkeypatch.undo()
    # set 2's sources are neither set 1's nor any calibration or training check row's
    def where(source: str) -> str:
        return source.split(" @")[0].split(" (")[0]

    sources2 = {where(r.source) for r in rows2}
    assert sources2 == {"ROCm/vllm docs/dev-docker/README.md",
                        "NVIDIA/NeMo docs/source/performance/performance_summary.md",
                        "NVIDIA/NeMo docs/source/performance/performance_long_sequence.md"}
    others = ({where(r.source) for r in held_out.held_out_rows(set=1)} | set(calib["source"])
              | {c.source for c in training.CALIBRATION + training.HELD_OUT})
    for s2 in sources2:
        assert not any(s2 in o for o in others), s2
    # and no set 2 row repeats a measurement of set 1 or of the calibration (1e-5: set 1's Qwen3-32B A100
    # 832.43 output tok/s is within 3e-4 of the batch-8 MI300X row's 832.65 by coincidence)
    both = [held_out.held_out_table(set=1), calib]
    for r in held_out.held_out_table(set=2).iter_rows(named=True):
        for t in both:
            same = t.filter((t["quantity"] == r["quantity"]) & ((t["measured"] / r["measured"] - 1).abs() < 1e-5))
            assert same.height == 0, r["label"]


def test_readme_set2_table_is_current():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("#### Held out, set 2 (collected 2026-12-02)")[1].split("\n## ")[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| ") and "---" not in line][1:]
    df = held_out.held_out_table(set=2)
    assert [r[4] for r in rows] == [f"{e:+.0%}" for e in df["error"]]
    assert "13 of the 26 are within 25 % (decode 4 of 16, training 9 of 10)" in " ".join(section.split())
