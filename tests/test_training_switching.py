"""rollsim.hardware.switching: colocated sleep / wake (and the trainer's offload) from the bytes moved
over the host link and the host memory pinned and unpinned, by hand, monotonic, and against the
published measurements it is fitted on and checked by."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rollsim import ScenarioError
from rollsim.hardware import switching as sw
from rollsim.hardware.specs import model as _model

def model_params(name: str) -> float:
    return float(_model(name).total_params)


M = SimpleNamespace(name="toy", total_params=5e9, active_params=5e9, layers=2, attention_heads=4, head_dim=8)
G = SimpleNamespace(name="toy-gpu", host_link_bytes_per_s=50e9)
C = {"sleep_fixed_s": 0.1, "wake_fixed_s": 0.2, "pageable_bytes_per_s": 2.5e9, "pinned_efficiency": 0.8,
     "unpin_bytes_per_s": 5e9, "map_bytes_per_s": 9e10}


def test_vllm_level1_by_hand():
    # 5e9 params x 2 B over 2 GPUs = 5e9 B per GPU, copied at 0.8 x 50e9 B/s = 0.125 s each way; the
    # steady state reuses its pinned buffers, the KV cache is discarded; the wake maps the weights and
    # the KV cache back, 5e9 + 8e9 / 2 = 9e9 B per GPU at 9e10 B/s = 0.1 s
    d = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, _c=C)
    assert d == {"offload": pytest.approx(0.125), "onload": pytest.approx(0.225), "fixed": pytest.approx(0.3),
                 "sleep": 0.225, "wake": pytest.approx(0.425), "total": pytest.approx(0.65)}
    first = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, first_sleep=True, _c=C)  # + pinning 5e9 B at 2.5e9 B/s
    assert (first["sleep"], first["wake"]) == (pytest.approx(2.225), pytest.approx(0.425))
    pre = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, first_sleep=True, preallocated=True, _c=C)
    assert pre == d
    kv = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, offload_kv=True, _c=C)  # + 4e9 B per GPU each way
    assert (kv["offload"], kv["onload"]) == (pytest.approx(9e9 / 40e9), pytest.approx(9e9 / 40e9 + 0.1))


def test_level2_and_sglang_by_hand():
    # every wake maps the 1e10 B of weights back first (at 9e10 B/s: 1/9 s)
    l2 = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="vllm-level2", _c=C)
    assert (l2["offload"], l2["onload"]) == (0.0, pytest.approx(4.0 + 1 / 9))  # discarded, reloaded at 2.5e9 B/s
    # torch_memory_saver: pin + copy out (4 + 0.25 s), map + copy back + unpin (1/9 + 0.25 + 2 s), every switch
    sg = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="sglang", _c=C)
    assert (sg["offload"], sg["onload"]) == (pytest.approx(4.25), pytest.approx(2.25 + 1 / 9))
    kept = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="sglang", preallocated=True, _c=C)
    assert (kept["offload"], kept["onload"]) == (pytest.approx(0.25), pytest.approx(0.25 + 1 / 9))
    sg8 = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="sglang", bytes_per_param=1.0, _c=C)
    assert sg8["offload"] == pytest.approx(2.125)


def test_train_offload_by_hand():
    # 18 B/param x 5e9 / 2 GPUs = 45e9 B: pause pins (18 s) and copies (1.125 s), resume copies and
    # unpins (9 s) after mapping the state back (45e9 / 9e10 = 0.5 s); no fixed engine cost
    t = sw.train_offload_s(M, G, gpus=2, _c=C)
    assert t == {"bytes": 45e9, "sleep": pytest.approx(19.125), "wake": pytest.approx(10.625),
                 "total": pytest.approx(29.75)}
    kept = sw.train_offload_s(M, G, gpus=2, retain_backup=True, _c=C)
    assert (kept["sleep"], kept["wake"]) == (pytest.approx(1.125), pytest.approx(1.625))
    given = sw.train_offload_s(M, G, state_bytes=4e9, _c=C)
    assert (given["bytes"], given["sleep"], given["wake"]) == (4e9, pytest.approx(1.7), pytest.approx(0.9 + 4 / 90))


def test_pageable_rate_never_above_the_link():
    slow = SimpleNamespace(name="slow", host_link_bytes_per_s=1e9)
    # 1e10 B: copy at 0.8e9 B/s (12.5 s) and pinning at the link's 1e9 B/s, not 2.5e9 (10 s)
    assert sw.switch_s(M, slow, gpus=1, kv_cache_bytes=0.0, first_sleep=True, _c=C)["offload"] == pytest.approx(22.5)


@pytest.mark.parametrize(("engine", "pre", "first"), [
    ("vllm", False, False), ("vllm", False, True), ("vllm", True, False), ("vllm", True, True),
    ("vllm-level2", False, False), ("sglang", False, False), ("sglang", True, False)])  # the others: refused
def test_monotonic(engine, pre, first):
    kw = dict(engine=engine, preallocated=pre, first_sleep=first, offload_kv=True)
    one = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=4e10, **kw)
    two = sw.switch_s("Qwen3-8B", "H100", gpus=2, kv_cache_bytes=4e10, **kw)
    big = sw.switch_s("Qwen3-32B", "H100", gpus=1, kv_cache_bytes=4e10, **kw)
    more_kv = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=8e10, **kw)
    slow = sw.switch_s("Qwen3-8B", "A100-80G", gpus=1, kv_cache_bytes=4e10, **kw)  # PCIe Gen4, not Gen5
    assert two["total"] < one["total"] < big["total"]
    assert more_kv["total"] > one["total"]
    assert slow["total"] > one["total"]
    if engine == "vllm":
        assert sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=4e10, **{**kw, "first_sleep": True})["sleep"] >= \
            sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=4e10, **{**kw, "first_sleep": False})["sleep"]


def test_fit_reproduces_the_documented_constants():
    assert sw.fit() == {"sleep_fixed_s": sw.SLEEP_FIXED_S, "wake_fixed_s": sw.WAKE_FIXED_S,
                        "pageable_bytes_per_s": sw.PAGEABLE_BYTES_PER_S, "pinned_efficiency": sw.PINNED_EFFICIENCY,
                        "unpin_bytes_per_s": sw.UNPIN_BYTES_PER_S, "map_bytes_per_s": sw.MAP_BYTES_PER_S}
    # the fixed wake comes out 0 (1e-8 s before rounding): re-mapping the weights and the KV cache
    # (every A100 row maps about 70 GB) is what the wake's fixed cost used to stand for
    assert (sw.SLEEP_FIXED_S, sw.WAKE_FIXED_S, sw.PAGEABLE_BYTES_PER_S, sw.PINNED_EFFICIENCY,
            sw.UNPIN_BYTES_PER_S, sw.MAP_BYTES_PER_S) == (0.0546, 0.0, 2.88e9, 0.804, 7.53e9, 2.97e11)


def test_pinned_efficiency_matches_the_direct_copy_measurement():
    # torch_memory_saver issue 111 measured plain pinned copies on an L20 (PCIe Gen4 x16, 32e9 B/s):
    # 24.43 GiB/s device to host and 23.54 GiB/s back, i.e. 0.82 and 0.79 of the link
    assert 23.54 * 2**30 / 32e9 < sw.PINNED_EFFICIENCY < 24.43 * 2**30 / 32e9


def test_published_switch_rows():
    got = {r["case"]: (round(r["predicted"], 3), round(r["measured"], 4), round(r["error"], 3))
           for r in sw.switch_validation_rows()}
    assert got == {
        'vLLM first level-1 sleep, 1 H20, FP16, Qwen3-0.6B': (0.492, 0.618, -0.204),
        'vLLM first level-1 sleep, 1 H20, FP16, Qwen3-8B': (6.061, 6.193, -0.021),
        'vLLM first level-1 sleep, 1 H20, FP16, Qwen3-30B-A3B': (22.444, 21.899, 0.025),
        'vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-0.6B': (0.078, 0.059, 0.318),
        'vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-8B': (0.373, 0.343, 0.087),
        'vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-30B-A3B': (1.241, 1.16, 0.07),
        'vLLM 0.11 level-1 sleep, A100, Qwen3-0.6B': (0.101, 0.09, 0.121),
        'vLLM 0.11 level-1 wake, A100, Qwen3-0.6B': (0.298, 0.26, 0.145),
        'vLLM 0.11 level-1 sleep, A100, Phi-3-vision': (0.377, 0.415, -0.091),
        'vLLM 0.11 level-1 wake, A100, Phi-3-vision': (0.574, 0.82, -0.3),
        'vLLM 0.11 level-1 sleep, A100, Qwen3-Coder-30B-A3B': (2.428, 2.78, -0.127),
        'vLLM 0.11 level-1 wake, A100, Qwen3-Coder-30B-A3B': (2.625, 2.86, -0.082),
        'vLLM 0.11 level-2 sleep, A100, Qwen3-0.6B': (0.055, 0.12, -0.545),
        'vLLM 0.11 level-2 wake, A100, Qwen3-0.6B': (0.665, 0.85, -0.217),
        'vLLM 0.11 level-2 sleep, A100, Phi-3-vision': (0.055, 0.455, -0.88),
        'vLLM 0.11 level-2 wake, A100, Phi-3-vision': (3.133, 2.58, 0.214),
        'torch_memory_saver pause of 4 GiB with CPU backup, 1 L20': (1.658, 1.6598, -0.001),
        'torch_memory_saver resume of 4 GiB with CPU backup, 1 L20': (0.752, 0.7519, -0.0),
        'pinned Tensor.copy_ of 4 GiB, device to host, 1 L20': (0.167, 0.1637, 0.02),
        'pinned Tensor.copy_ of 4 GiB, host to device, 1 L20': (0.167, 0.1699, -0.018),
        'vLLM 0.11 level-1 sleep, A100, Qwen3-0.6B, BF16 (quantization ablation)': (0.101, 0.1, 0.009),
        'vLLM 0.11 level-1 wake, A100, Qwen3-0.6B, BF16 (quantization ablation)': (0.298, 0.27, 0.103),
        'vLLM 0.11 level-1 sleep, A100, Phi-3-vision, BF16 (quantization ablation)': (0.377, 0.49, -0.23),
        'vLLM 0.11 level-1 wake, A100, Phi-3-vision, BF16 (quantization ablation)': (0.574, 0.89, -0.355),
        'vLLM 0.11 level-1 sleep, A100, Qwen3-0.6B, FP8 (quantization ablation)': (0.078, 0.06, 0.296),
        'vLLM 0.11 level-1 wake, A100, Qwen3-0.6B, FP8 (quantization ablation)': (0.275, 0.18, 0.526),
        'vLLM 0.11 level-1 sleep, A100, Phi-3-vision, FP8 (quantization ablation)': (0.216, 0.31, -0.304),
        'vLLM 0.11 level-1 wake, A100, Phi-3-vision, FP8 (quantization ablation)': (0.413, 0.78, -0.471),
        'vLLM 0.11 level-1 sleep, 4 A100 (TP 4), Qwen3-235B-A22B FP8': (4.623, 5.89, -0.215),
        'vLLM 0.11 level-1 wake, 4 A100 (TP 4), Qwen3-235B-A22B FP8': (4.82, 5.29, -0.089),
        'vLLM 0.11 level-1 sleep, 1 RTX A4000, Qwen3-0.6B': (0.101, 0.13, -0.224),
        'vLLM 0.11 level-1 wake, 1 RTX A4000, Qwen3-0.6B': (0.09, 0.1, -0.105),
        'vLLM 0.11 level-1 sleep, 1 RTX A4000, Phi-3-vision': (0.377, 0.68, -0.445),
        'vLLM 0.11 level-1 wake, 1 RTX A4000, Phi-3-vision': (0.366, 0.8, -0.543),
        'vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer sleep, state from specs (18 B/param)': (4.142, 11.23, -0.631),
        'vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer wake, state from specs (18 B/param)': (1.878, 3.77, -0.502),
        'vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer sleep, the 18.7 GiB it parked': (7.752, 11.23, -0.31),
        'vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer wake, the 18.7 GiB it parked': (3.515, 3.77, -0.068),
    }
    fitted = [r for r in sw.switch_validation_rows() if r["in_fit"]]
    held = [r for r in sw.switch_validation_rows() if not r["in_fit"]]
    assert (len(fitted), sum(abs(r["error"]) <= 0.25 for r in fitted)) == (20, 16)
    assert (len(held), sum(abs(r["error"]) <= 0.25 for r in held)) == (18, 8)
    assert sw.calibration_report().startswith(
        "switch fit: sleep_fixed_s 0.0546, wake_fixed_s 0, pageable_bytes_per_s 2.88e+09, pinned_efficiency "
        "0.804, unpin_bytes_per_s 7.53e+09, map_bytes_per_s 2.97e+11")


@pytest.mark.parametrize(("kw", "message"), [
    ({"gpus": 0}, "gpus: must be in [1, 1048576], got 0"),
    ({"kv_cache_bytes": -1.0}, "kv_cache_bytes: must be in [0, 1e15] bytes, got -1.0"),
    ({"engine": "trt"}, "engine: must be one of ['vllm', 'vllm-level2', 'sglang'], got 'trt'"),
    ({"bytes_per_param": 0}, "bytes_per_param: must be in (0, 8] bytes, got 0"),
    ({"offload_kv": 1}, "offload_kv: must be True or False, got 1"),
    ({"first_sleep": "no"}, "first_sleep: must be True or False, got 'no'"),
    ({"first_sleep": True, "engine": "sglang"}, "first_sleep: applies to engine='vllm' only (torch_memory_saver pins "
     "on every pause, and a level-2 sleep copies nothing out), got engine='sglang'"),
    ({"preallocated": True, "engine": "vllm-level2"}, "preallocated: applies to engine='vllm' or 'sglang' (a level-2 "
     "sleep keeps no host copy), got engine='vllm-level2'"),
])
def test_refusals(kw, message):
    args = {"gpus": 1, "kv_cache_bytes": 0.0, **kw}
    with pytest.raises(ScenarioError) as e:
        sw.switch_s(M, G, **args)
    assert str(e.value) == message


def test_rows_in_the_resource_validation_table():
    from rollsim.hardware import validation

    df = validation.table()
    mine = df.filter(df["area"].is_in(["training", "switching"]))
    assert mine.group_by("area").len().sort("area").rows() == [("switching", 38), ("training", 12)]
    # training 12 of 12 (one of them the H20 row its family factor is fitted on alone), switching 24 of 38
    assert int(mine.filter(mine["area"] == "training")["within_25pct"].sum()) == 12
    assert int(mine["within_25pct"].sum()) == 36
    row = mine.filter(mine["label"] == "vllm prealloc Qwen3-8B H20").row(0, named=True)
    assert (row["quantity"], row["measured"], round(row["predicted"], 4), row["fit"]) == ("sleep s", 0.343, 0.373,
                                                                                          True)


def test_validate_notes_prints_the_switch_fit(capsys):
    from rollsim.cli import main

    assert main(["validate", "--resources", "--notes"]) == 0
    out = capsys.readouterr().out
    assert sw.calibration_report() in out
    assert "  -6.8%  predicted   3.515 s  measured   3.770 s  check  vime colocated GRPO, 1 L20, Qwen3-0.6B: trainer " \
           "wake, the 18.7 GiB it parked" in out


def test_a_wake_maps_back_what_the_sleep_released():
    # vllm/device_allocator/cumem.py: sleep() unmaps and releases every allocation of the pool (the
    # weights copied out first at level 1), wake_up() runs create_and_map on every one of them (the
    # weights and the KV cache) before copying the weights back; so the KV cache costs the wake, not
    # the sleep, even when it is discarded
    small = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=1e10)
    big = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=5e10)
    assert big["sleep"] == small["sleep"]
    assert big["wake"] - small["wake"] == pytest.approx(4e10 / sw.MAP_BYTES_PER_S, rel=1e-12)
    # TP 2: each GPU maps its half
    two = sw.switch_s("Qwen3-8B", "H100", gpus=2, kv_cache_bytes=5e10)
    w = 2 * model_params("Qwen3-8B") / 2
    assert two["wake"] == pytest.approx(w / (sw.PINNED_EFFICIENCY * 64e9) + (w + 2.5e10) / sw.MAP_BYTES_PER_S
                                        + sw.WAKE_FIXED_S, rel=1e-12)


def test_default_kv_of_the_published_vllm_rows():
    # vLLM's defaults (gpu_memory_utilization 0.9, 2.45 GiB of non-KV memory): what the posts' runs map
    a100 = sw._default_kv(SimpleNamespace(hbm_bytes=80 * 2**30), 2 * model_params("Qwen3-0.6B"))
    assert round(a100 / 1e9, 1) == 73.5
    a4000 = sw._default_kv(sw._A4000, 2 * model_params("Qwen3-0.6B"))
    assert round(a4000 / 1e9, 1) == 11.6
    # the pool (weights + KV cache) is the same on every A100 row, 74.7 GB: on those rows the map term
    # and a fixed wake cannot be told apart; the RTX A4000 (16 GiB, held out) can
    for m in ("Qwen3-0.6B", "Qwen3-30B-A3B"):
        w = 2 * model_params(m)
        assert round((w + sw._default_kv(SimpleNamespace(hbm_bytes=80 * 2**30), w)) / 1e9, 1) == 74.7


def test_quantization_ablation_rows_are_the_charts_medians():
    import statistics

    # plotly-ablation-quant.js: the repeats after the warm-up, per series and model (sleep, wake)
    raw = {("BF16", "Qwen3-0.6B"): ([0.09, 0.1, 0.1], [0.28, 0.27, 0.27]),
           ("BF16", "Phi-3-vision"): ([0.48, 0.5], [0.89, 0.93, 0.88]),
           ("FP8", "Qwen3-0.6B"): ([0.06, 0.06, 0.07], [0.18, 0.19, 0.16]),
           ("FP8", "Phi-3-vision"): ([0.31, 0.31], [0.79, 0.77, 0.78])}
    for q, _, lab, sleep_s, wake_s in sw._QUANT:
        sl, wk = raw[(q, lab)]
        assert (sleep_s, wake_s) == (round(statistics.median(sl), 2), round(statistics.median(wk), 2))
    rows = [c for c in sw.CALIBRATION if "quantization ablation" in c.name]
    assert len(rows) == 8 and not any(c.fit for c in rows)
