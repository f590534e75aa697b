"""rollsim.hardware.switching: colocated sleep / wake from the bytes moved over the host link,
by hand, monotonic, and against the published measurements it is fitted on."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rollsim import ScenarioError
from rollsim.hardware import switching as sw

M = SimpleNamespace(name="toy", total_params=5e9, active_params=5e9, layers=2, attention_heads=4, head_dim=8)
G = SimpleNamespace(name="toy-gpu", host_link_bytes_per_s=50e9)
C = {"sleep_fixed_s": 0.1, "wake_fixed_s": 0.2, "pageable_bytes_per_s": 2.5e9, "pinned_efficiency": 0.8}


def test_vllm_level1_by_hand():
    # 5e9 params x 2 B over 2 GPUs = 5e9 B per GPU; sleep through freshly allocated host buffers at
    # 2.5e9 B/s, wake from pinned memory at 0.8 x 50e9 B/s; the KV cache is discarded
    d = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, _c=C)
    assert d == {"offload": 2.0, "onload": 0.125, "fixed": pytest.approx(0.3), "sleep": 2.1, "wake": 0.325,
                 "total": pytest.approx(2.425)}
    pre = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, preallocated=True, _c=C)
    assert (pre["offload"], pre["onload"]) == (0.125, 0.125)
    kv = sw.switch_s(M, G, gpus=2, kv_cache_bytes=8e9, offload_kv=True, _c=C)  # + 4e9 B per GPU each way
    assert (kv["offload"], kv["onload"]) == (pytest.approx(9e9 / 2.5e9), pytest.approx(9e9 / 40e9))


def test_level2_and_sglang_by_hand():
    l2 = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="vllm-level2", _c=C)
    assert (l2["offload"], l2["onload"]) == (0.0, 4.0)  # weights discarded, reloaded through pageable memory
    sg = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="sglang", _c=C)
    assert (sg["offload"], sg["onload"]) == (4.0, 4.0)
    sg8 = sw.switch_s(M, G, gpus=1, kv_cache_bytes=0.0, engine="sglang", bytes_per_param=1.0, _c=C)
    assert sg8["offload"] == 2.0


def test_pageable_rate_never_above_the_link():
    slow = SimpleNamespace(name="slow", host_link_bytes_per_s=1e9)
    assert sw.switch_s(M, slow, gpus=1, kv_cache_bytes=0.0, _c=C)["offload"] == 10.0


@pytest.mark.parametrize("engine", sw.ENGINES)
@pytest.mark.parametrize("pre", [False, True])
def test_monotonic(engine, pre):
    one = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=4e10, engine=engine, preallocated=pre,
                      offload_kv=True)
    two = sw.switch_s("Qwen3-8B", "H100", gpus=2, kv_cache_bytes=4e10, engine=engine, preallocated=pre,
                      offload_kv=True)
    big = sw.switch_s("Qwen3-32B", "H100", gpus=1, kv_cache_bytes=4e10, engine=engine, preallocated=pre,
                      offload_kv=True)
    more_kv = sw.switch_s("Qwen3-8B", "H100", gpus=1, kv_cache_bytes=8e10, engine=engine, preallocated=pre,
                          offload_kv=True)
    assert two["total"] < one["total"] < big["total"]
    assert more_kv["total"] > one["total"]


def test_fit_reproduces_the_documented_constants():
    assert sw.fit() == {"sleep_fixed_s": sw.SLEEP_FIXED_S, "wake_fixed_s": sw.WAKE_FIXED_S,
                        "pageable_bytes_per_s": sw.PAGEABLE_BYTES_PER_S, "pinned_efficiency": sw.PINNED_EFFICIENCY}
    assert (sw.SLEEP_FIXED_S, sw.WAKE_FIXED_S, sw.PAGEABLE_BYTES_PER_S, sw.PINNED_EFFICIENCY) == (
        0.0367, 0.2479, 2.77e9, 0.803)


def test_published_switch_rows():
    got = {r["case"]: (round(r["predicted"], 3), r["measured"], round(r["error"], 3))
           for r in sw.switch_validation_rows()}
    assert got == {
        "vLLM first level-1 sleep, 1 H20, FP16, Qwen3-0.6B": (0.467, 0.618, -0.244),
        "vLLM first level-1 sleep, 1 H20, FP16, Qwen3-8B": (5.951, 6.193, -0.039),
        "vLLM first level-1 sleep, 1 H20, FP16, Qwen3-30B-A3B": (22.082, 21.899, 0.008),
        "vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-0.6B": (0.06, 0.059, 0.015),
        "vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-8B": (0.355, 0.343, 0.036),
        "vLLM level-1 sleep with pre-allocated buffers, 1 H20, Qwen3-30B-A3B": (1.225, 1.16, 0.056),
        "vLLM 0.11 level-1 wake, A100, Qwen3-0.6B": (0.294, 0.26, 0.132),
        "vLLM 0.11 level-1 wake, A100, Phi-3-vision": (0.571, 0.82, -0.304),
        "vLLM 0.11 level-2 wake, A100, Qwen3-0.6B": (0.678, 0.85, -0.202),
        "vLLM 0.11 level-2 wake, A100, Phi-3-vision": (3.244, 2.58, 0.257),
        "vime colocated GRPO, 1 L20, Qwen3-0.6B: sleep": (0.467, 11.23, -0.958),
        "vime colocated GRPO, 1 L20, Qwen3-0.6B: wake": (0.294, 3.77, -0.922),
    }
    assert sw.calibration_report().startswith(
        "switch fit: sleep_fixed_s 0.0367, wake_fixed_s 0.2479, pageable_bytes_per_s 2.77e+09, pinned_efficiency 0.803")


@pytest.mark.parametrize(("kw", "message"), [
    ({"gpus": 0}, "gpus: must be in [1, 1048576], got 0"),
    ({"kv_cache_bytes": -1.0}, "kv_cache_bytes: must be in [0, 1e15] bytes, got -1.0"),
    ({"engine": "trt"}, "engine: must be one of ['vllm', 'vllm-level2', 'sglang'], got 'trt'"),
    ({"bytes_per_param": 0}, "bytes_per_param: must be in (0, 8] bytes, got 0"),
    ({"offload_kv": 1}, "offload_kv: must be True or False, got 1"),
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
    assert mine.group_by("area").len().sort("area").rows() == [("switching", 12), ("training", 12)]
    # training 11 of 12 (one of them the H20 row its family factor is fitted on alone), switching 8 of 12
    assert int(mine["within_25pct"].sum()) == 19
    row = mine.filter(mine["label"] == "vllm prealloc Qwen3-8B H20").row(0, named=True)
    assert (row["quantity"], row["measured"], round(row["predicted"], 4), row["fit"]) == ("sleep s", 0.343, 0.3555,
                                                                                          True)
