"""The weight sync's host stage on GPUs that share a PCIe switch uplink: ``Hardware.from_accelerator``
takes ``Accelerator.gpus_per_host_link`` (2 on an 8-GPU HGX A100 board: Azure/azhpc-images
``topology/ndv4-topo.xml``, the DGX A100 System Architecture white paper), and the senders of a node
that copy at once split it, as ``rollsim.hardware.switching.host_link_share``."""

from __future__ import annotations

import dataclasses

import pytest

from rollsim import ScenarioError
from rollsim.hardware import specs, switching
from rollsim.sync import STACKS, Cluster, InferLayout, SoftwareStack, TrainLayout, estimate, estimate_stack
from rollsim.sync.cluster import Hardware, ModelSpec
from rollsim.sync.presets import HARDWARE


@pytest.mark.parametrize("name, share", [("A100-80G", 2), ("A100-40G", 2), ("A800", 2), ("H100", 1), ("H20", 1),
                                         ("L40S", 1), ("GB200", 1)])
def test_from_accelerator_takes_the_uplink_share(name, share):
    hw = Hardware.from_accelerator(name)
    assert hw.gpus_per_host_link == share == specs.accelerator(name).gpus_per_host_link
    assert hw.pcie_bytes_per_s == specs.accelerator(name).host_link_bytes_per_s
    assert Hardware.from_accelerator(name, gpus_per_host_link=1).gpus_per_host_link == 1
    # the presets (H-series, GB200) keep their own link: nothing they print moves
    assert all(h.gpus_per_host_link == 1 for h in HARDWARE.values())


def test_the_share_is_the_hardware_models():
    a100 = Hardware.from_accelerator("A100-80G")  # 32 GB/s PCIe Gen4 x16, two GPUs per uplink
    for copying in (1, 2, 3, 8, 16):
        assert a100.host_link_share(copying) == switching.host_link_share("A100-80G", min(copying, 8))
    assert (a100.host_link_share(1), a100.host_link_share(2), a100.host_link_share(16)) == (32e9, 16e9, 16e9)


def _cluster(hw: Hardware, **train) -> Cluster:
    # 1e11 parameters in BF16 (2e11 bytes), sent in BF16: no quantization stage
    return Cluster(model=ModelSpec.dense("m", 1e11, 1000), train=TrainLayout(**train),
                   infer=InferLayout(instances=1, tp=8), hardware=hw, topology="parallel",
                   software=SoftwareStack(name="host", source_on_host=True))


def test_h2d_stage_of_a100_senders_sharing_their_uplinks():
    a100 = Hardware.from_accelerator("A100-80G")
    own = dataclasses.replace(a100, gpus_per_host_link=1)
    # 8 senders on one node, 2.5e10 bytes each: 0.78125 s at 32 GB/s alone, 1.5625 s two per uplink
    assert estimate(_cluster(own, tp=8)).breakdown["h2d_s"] == 2e11 / 8 / 32e9 == 0.78125
    assert estimate(_cluster(a100, tp=8)).breakdown["h2d_s"] == 2e11 / 8 / 16e9 == 1.5625
    # the other terms do not move
    e_own, e_shared = estimate(_cluster(own, tp=8)).breakdown, estimate(_cluster(a100, tp=8)).breakdown
    assert {k: v for k, v in e_own.items() if k not in ("h2d_s", "overlap_s")} == \
        {k: v for k, v in e_shared.items() if k not in ("h2d_s", "overlap_s")}
    # one sender (tp=1): its uplink to itself
    assert estimate(_cluster(a100, tp=1)).breakdown["h2d_s"] == 2e11 / 32e9


def test_staging_copies_of_stage_heads_and_of_every_rank():
    a100 = Hardware.from_accelerator("A100-80G")
    c = _cluster(a100, tp=1, pp=8).replace(software=SoftwareStack(name="x"))
    every = STACKS["rdma-write"].replace(staging_copies=2)
    heads = every.replace(transport="nccl-broadcast", senders="stage_heads")
    s_train = 2e11
    # every rank sends: 8 senders on one node, two per uplink
    assert estimate_stack(c, every).breakdown["staging_s"] == pytest.approx(2 * s_train / 8 / 16e9, rel=1e-15)
    # stage heads one rank apart (tp = cp = dp = 1): two behind each uplink, too
    assert estimate_stack(c, heads).breakdown["staging_s"] == pytest.approx(2 * s_train / 8 / 16e9, rel=1e-15)
    # stage heads two ranks apart (tp = 2): one per uplink, the whole 32 GB/s each
    c2 = _cluster(a100, tp=2, pp=4).replace(software=SoftwareStack(name="x"))
    assert estimate_stack(c2, heads).breakdown["staging_s"] == pytest.approx(2 * s_train / 4 / 32e9, rel=1e-15)


def test_gpus_per_host_link_is_checked():
    with pytest.raises(ScenarioError, match=r"^gpus_per_host_link: must be in \[1, 1024\], got 0$"):
        Hardware(gpus_per_host_link=0)
