"""GPUs sharing a host uplink (``Accelerator.gpus_per_host_link``): a GPU copies to or from the host
over its share of the PCIe switch uplink it sits behind, by hand, against the published host
topologies the defaults come from, and through ``Deployment.switch_s``."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rollsim import ScenarioError
from rollsim.hardware import Deployment
from rollsim.hardware import switching as sw
from rollsim.hardware.specs import ACCELERATORS, accelerator, model

M = SimpleNamespace(name="toy", total_params=5e9, active_params=5e9, layers=2, attention_heads=4, head_dim=8)
# an 8-GPU node whose GPUs hang two to a PCIe Gen4 x16 switch uplink (as an HGX A100 board)
G2 = SimpleNamespace(name="toy-hgx", host_link_bytes_per_s=32e9, gpus_per_host_link=2, gpus_per_node=8)
C = {"sleep_fixed_s": 0.1, "wake_fixed_s": 0.2, "pageable_bytes_per_s": 2.5e9, "pinned_efficiency": 0.8,
     "unpin_bytes_per_s": 5e9, "map_bytes_per_s": float("inf")}  # no mapping cost: the uplink alone


def test_gpus_per_host_link_from_the_published_topologies():
    # two GPUs (and two NICs) behind each PCIe Gen4 x16 switch uplink on an 8-GPU HGX A100 board
    # (Azure/azhpc-images topology/ndv4-topo.xml; the A800 is that board with NVLink cut); one H100
    # per PCIe Gen5 x16 switch port (topology/ndv5-topo.xml); PCIe cards have their own slot
    # (topology/ncv4-topo.xml: A100 PCIe); the rest have no shared uplink documented
    assert {n: a.gpus_per_host_link for n, a in ACCELERATORS.items()} == {
        "H100": 1, "H800": 1, "H200": 1, "H20": 1, "A100-40G": 2, "A100-80G": 2, "A800": 2, "L20": 1, "L40S": 1,
        "B200": 1, "GB200": 1, "MI300X": 1, "Ascend-910B": 1}


def test_host_link_share_by_hand():
    a100 = accelerator("A100-80G")
    assert [sw.host_link_share(a100, n) for n in (1, 2, 4, 8)] == [32e9, 16e9, 16e9, 16e9]
    assert [sw.host_link_share("H100", n) for n in (1, 8)] == [64e9, 64e9]
    four = SimpleNamespace(host_link_bytes_per_s=32e9, gpus_per_host_link=4)  # four cards behind one switch
    assert [sw.host_link_share(four, n) for n in (1, 3, 4, 8)] == [32e9, pytest.approx(32e9 / 3), 8e9, 8e9]
    assert sw.host_link_share(SimpleNamespace(host_link_bytes_per_s=1e9), 8) == 1e9  # no attribute: own link


def test_tp4_switch_on_shared_uplinks_by_hand():
    # 5e9 params x 2 B over 4 GPUs = 2.5e9 B per GPU; GPUs 0-3 put two on each uplink, so each copies
    # at 0.8 x 32e9 / 2 = 12.8e9 B/s: 0.1953125 s each way (alone it would be 25.6e9 B/s)
    d = sw.switch_s(M, G2, gpus=4, kv_cache_bytes=0.0, _c=C)
    assert (d["offload"], d["onload"]) == (pytest.approx(0.1953125), pytest.approx(0.1953125))
    assert (d["sleep"], d["wake"]) == (pytest.approx(0.2953125), pytest.approx(0.3953125))
    # one GPU alone has its uplink to itself: 1e10 B at 25.6e9 B/s; with its node's seven others
    # switching at once (gpus_copying=8) it shares it: 12.8e9 B/s
    assert sw.switch_s(M, G2, gpus=1, kv_cache_bytes=0.0, _c=C)["offload"] == pytest.approx(0.390625)
    assert sw.switch_s(M, G2, gpus=1, kv_cache_bytes=0.0, gpus_copying=8, _c=C)["offload"] == pytest.approx(0.78125)
    # pinning (2.5e9 B/s) is slower than the share, so the first sleep adds 2.5e9 / 2.5e9 = 1 s either way
    first = sw.switch_s(M, G2, gpus=4, kv_cache_bytes=0.0, first_sleep=True, _c=C)
    assert first["offload"] == pytest.approx(1.1953125)
    # a share below the pageable rate caps the level-2 reload: 1e10 B at 4e9 / 2 = 2e9 B/s
    slow = SimpleNamespace(host_link_bytes_per_s=4e9, gpus_per_host_link=2, gpus_per_node=8)
    l2 = sw.switch_s(M, slow, gpus=1, kv_cache_bytes=0.0, engine="vllm-level2", gpus_copying=2, _c=C)
    assert l2["onload"] == pytest.approx(5.0)


def test_published_tp4_row_by_hand():
    # Qwen3-235B-A22B in FP8 over 4 A100s: 235,093,634,560 B / 4 per GPU, at 0.804 x 16e9 B/s
    per_gpu = model("Qwen3-235B-A22B").total_params / 4
    assert per_gpu == 58_773_408_640
    d = sw.switch_s("Qwen3-235B-A22B", "A100-80G", gpus=4, kv_cache_bytes=0.0, bytes_per_param=1.0)
    copy = per_gpu / (sw.PINNED_EFFICIENCY * 16e9)
    # the wake maps the weights back (no KV cache given here)
    assert (d["sleep"], d["wake"]) == (pytest.approx(copy + sw.SLEEP_FIXED_S),
                                       pytest.approx(copy + per_gpu / sw.MAP_BYTES_PER_S + sw.WAKE_FIXED_S))
    assert (round(d["sleep"], 3), round(d["wake"], 3)) == (4.623, 4.767)
    # the published row (measured 5.89 / 5.29 s, held out) also maps vLLM's default KV cache:
    # 0.9 x 80 GiB - 58.8 GB of weights - 2.45 GiB = 15.9 GB per GPU
    kv = sw._default_kv(accelerator("A100-80G"), per_gpu)
    assert round(kv / 1e9, 1) == 15.9
    full = sw.switch_s("Qwen3-235B-A22B", "A100-80G", gpus=4, kv_cache_bytes=4 * kv, bytes_per_param=1.0)
    assert (round(full["sleep"], 3), round(full["wake"], 3)) == (4.623, 4.82)


def test_train_offload_shares_the_uplink():
    n = model("Qwen3-8B").total_params
    b = sw.TRAIN_STATE_BYTES_PER_PARAM * n / 8
    t = sw.train_offload_s("Qwen3-8B", "A100-80G", gpus=8)
    copy = b / (sw.PINNED_EFFICIENCY * 16e9)
    mapped = b / sw.MAP_BYTES_PER_S  # the resume maps the state back before copying it
    assert (t["sleep"], t["wake"]) == (pytest.approx(b / sw.PAGEABLE_BYTES_PER_S + copy),
                                       pytest.approx(mapped + copy + b / sw.UNPIN_BYTES_PER_S))
    h = sw.train_offload_s("Qwen3-8B", "H100", gpus=8)  # one GPU per uplink: the full Gen5 link
    assert h["wake"] == pytest.approx(mapped + b / (sw.PINNED_EFFICIENCY * 64e9) + b / sw.UNPIN_BYTES_PER_S)


def test_deployment_switch_copies_on_every_gpu_of_the_node_at_once():
    n = model("Qwen3-8B").total_params
    kw = dict(model="Qwen3-8B", gpu="A100-80G", colocated=True)
    one = Deployment(**kw, rollout_gpus=1, train_gpus=1).switch_s()  # type: ignore[arg-type]
    node = Deployment(**kw, rollout_gpus=8, train_gpus=8).switch_s()  # type: ignore[arg-type]
    # eight TP-1 engines sleep together: two per uplink, half the link each
    assert one["offload"] == pytest.approx(2 * n / (sw.PINNED_EFFICIENCY * 32e9))
    assert node["offload"] == pytest.approx(2 * n / (sw.PINNED_EFFICIENCY * 16e9))
    alone = Deployment(**kw, rollout_gpus=8, train_gpus=8).switch_s(gpus_copying=8)  # type: ignore[arg-type]
    assert alone == node
    h1 = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=1, train_gpus=1, colocated=True).switch_s()
    h8 = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=8, train_gpus=8, colocated=True).switch_s()
    assert h1["offload"] == h8["offload"]  # an H100 has its uplink to itself


def test_user_host_topology():
    # an A100 host that wires every GPU to a CPU root port of its own: the instance copies at the full link
    direct = dataclasses.replace(accelerator("A100-80G"), gpus_per_host_link=1)
    d = sw.switch_s("Qwen3-235B-A22B", direct, gpus=4, kv_cache_bytes=0.0, bytes_per_param=1.0)
    assert d["offload"] == pytest.approx(58_773_408_640 / (sw.PINNED_EFFICIENCY * 32e9))
    with pytest.raises(ScenarioError, match=r"gpus_copying: must be at least"):
        sw.switch_s("Qwen3-8B", "A100-80G", gpus=4, kv_cache_bytes=0.0, gpus_copying=2)


@given(share=st.integers(1, 16), n=st.integers(1, 64), link=st.floats(1e9, 1e12))
def test_more_gpus_copying_never_faster(share, n, link):
    g = SimpleNamespace(host_link_bytes_per_s=link, gpus_per_host_link=share)
    assert sw.host_link_share(g, n + 1) <= sw.host_link_share(g, n) <= link
    assert sw.host_link_share(g, n) >= link / share
