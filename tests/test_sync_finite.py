"""Every accepted weight-sync cluster gives a finite estimate: clusters drawn with each real-valued
input anywhere in its accepted range (``rollsim.sync.cluster.BOUNDS``), log-uniformly and at the
extremes, tensor sizes up to 2**50 elements, any topology and fanout. ``total_s`` and every term of
the breakdown are finite (``chunks`` alone may be inf: with ``latency_s = 0`` the relay's chunks
are infinitely fine). Also: out-of-range inputs are refused naming the field, by the dataclasses
and, for a raw config dict, by the Rust bindings' checked conversions."""

from __future__ import annotations

import copy
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rollsim.sync as rs
from rollsim import ScenarioError, _rollsim
from rollsim.sync.cluster import BOUNDS, INT_BOUNDS


def log_uniform(lo: float, hi: float) -> st.SearchStrategy[float]:
    lo_pos = lo if lo > 0 else 1e-12
    spread = st.floats(math.log10(lo_pos), math.log10(hi)).map(lambda e: min(max(10.0**e, lo_pos), hi))
    return st.one_of(st.sampled_from([lo_pos, hi] + ([0.0] if lo == 0 else [])), spread)


def real(name: str) -> st.SearchStrategy[float]:
    return log_uniform(*BOUNDS[name][:2])


def log_int(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from([lo, hi]),
                     st.floats(math.log2(max(lo, 1)), math.log2(hi)).map(lambda e: min(max(round(2.0**e), lo), hi)))


def pow2(hi: int) -> st.SearchStrategy[int]:
    return st.integers(0, hi).map(lambda e: 2**e)


groups = st.builds(rs.TensorGroup, name=st.sampled_from(["mlp.experts", "attn", "norm"]), count=log_int(1, 48),
                   elems=log_int(1, 2**50), n_experts=st.sampled_from([0, 0, 1, 8, 65536]), layers=log_int(1, 65536),
                   replicated=st.booleans(), quantized=st.booleans())
precisions = st.sampled_from([rs.BF16, rs.FP8_BLOCK128, rs.Precision("fp32"), rs.Precision("fp8", 0),
                              rs.Precision("fp8", 1), rs.Precision("fp8", 4096)])
models = st.one_of(
    st.builds(rs.ModelSpec, name=st.just("drawn"), groups=st.lists(groups, min_size=1, max_size=3).map(tuple),
              train_precision=precisions, infer_precision=precisions),
    st.sampled_from(["qwen3-4b", "qwen3-30b-a3b", "chapter-1t"]).map(rs.model),
)


@st.composite
def clusters(draw):
    topology = draw(st.sampled_from(rs.TOPOLOGIES))
    tp, dp, pp = draw(pow2(4)), draw(pow2(3)), draw(pow2(2))
    ep = draw(st.sampled_from([d for d in (1, 2, 4, 8, 16) if (tp * dp) % d == 0]))
    itp = draw(pow2(4))
    iep = draw(st.sampled_from([d for d in (1, 2, 4) if itp % d == 0]))
    # the plan of `parallel` visits every inference rank: keep it small; the others go to 2**20 GPUs
    instances = draw(log_int(1, 16 if topology == "parallel" else min(65536, 2**20 // itp)))
    hardware = rs.Hardware(gpus_per_node=draw(log_int(1, 1024)), nvlink_bytes_per_s=draw(real("nvlink_bytes_per_s")),
                           nic_bytes_per_s=draw(real("nic_bytes_per_s")), pcie_bytes_per_s=draw(real("pcie_bytes_per_s")),
                           latency_s=draw(real("latency_s")), colocated=draw(st.booleans()))
    model = draw(models)
    software = rs.SoftwareStack(
        efficiency=draw(real("efficiency")), per_tensor_s=draw(real("per_tensor_s")),
        per_bucket_s=draw(real("per_bucket_s")), per_update_s=draw(real("per_update_s")),
        bucket_bytes=draw(real("bucket_bytes")), quant_bytes_per_s=draw(real("quant_bytes_per_s")),
        pause_resume_s=draw(real("pause_resume_s")), overlap_stages=draw(st.booleans()),
        source_on_host=draw(st.booleans()), grouped_experts=draw(st.booleans()),
        plan_groups=tuple(draw(st.lists(st.sampled_from([g.name for g in model.groups]), max_size=2, unique=True))))
    return rs.Cluster(model=model, train=rs.TrainLayout(tp=tp, pp=pp, dp=dp, ep=ep, fsdp=draw(st.booleans())),
                      infer=rs.InferLayout(instances=instances, tp=itp, ep=iep), hardware=hardware, software=software,
                      topology=topology, fanout=draw(log_int(1, 1024)))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(clusters())
def test_every_accepted_cluster_gives_a_finite_estimate(cluster):
    e = rs.estimate(cluster)
    assert math.isfinite(e.total_s) and e.total_s >= 0, e
    for term, seconds in e.breakdown.items():
        assert math.isfinite(seconds), (term, seconds)
    assert e.breakdown["overlap_s"] <= 0
    for x in (e.busiest_link_bytes, e.model_bytes, e.n_buckets, e.hops, e.tensors_charged):
        assert math.isfinite(x)
    assert math.isfinite(e.chunks) or cluster.hardware.latency_s == 0


def test_the_extremes_give_finite_estimates():
    """The reported NaN (``nic_bytes_per_s = 1e-300``) at the nearest accepted values."""
    base = rs.chapter_cluster("relay", 64)
    slow = base.replace(hardware=rs.Hardware(nic_bytes_per_s=1e3, nvlink_bytes_per_s=1e3, latency_s=1e6),
                        software=rs.SoftwareStack(efficiency=1e-6, bucket_bytes=1e3))
    for topology in rs.TOPOLOGIES:
        e = rs.estimate(slow.replace(topology=topology))
        assert math.isfinite(e.total_s) and all(math.isfinite(v) for v in e.breakdown.values()), (topology, e)


@pytest.mark.parametrize("make, message", [
    (lambda: rs.Hardware(nic_bytes_per_s=1e-300), "nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300"),
    (lambda: rs.Hardware(latency_s=10**400), "latency_s: must be in [0, 1e6] seconds, got 10**400"),
    (lambda: rs.chapter_cluster("relay", 2).replace(fanout=-3), "fanout: must be in [1, 1024], got -3"),
    (lambda: rs.chapter_cluster("relay", 2).replace(fanout=2**2000), "fanout: must be in [1, 1024], got 2**2000"),
    (lambda: rs.SoftwareStack(efficiency=1e-9), "efficiency: must be in [1e-6, 1], got 1e-09"),
    (lambda: rs.SoftwareStack(bucket_bytes=1.0), "bucket_bytes: must be in [1e3, 1e15] bytes, got 1.0"),
    (lambda: rs.SoftwareStack(overlap_stages=1), "overlap_stages: must be True or False, got 1"),
    (lambda: rs.TrainLayout(tp=1.5), "train.tp: must be an integer in [1, 65536], got float 1.5"),
    (lambda: rs.InferLayout(instances=10**400), "infer.instances: must be in [1, 65536], got 10**400"),
    (lambda: rs.TensorGroup("w", 2**25, 10), "model.groups.count: must be in [1, 16777216], got 33554432"),
    (lambda: rs.TensorGroup("w", 1, 2**60), "model.groups.elems: must be in [1, 1125899906842624], got 2**60"),
    (lambda: rs.ModelSpec.dense("m", 10**400), "n_params: must be in [1, 1e15] parameters, got 10**400"),
    (lambda: rs.ModelSpec("m", ()), "model.groups: must be a non-empty sequence of TensorGroup, got ()"),
    (lambda: rs.cluster_from_dict({"model": {"params": 2**2000}}), "model.params: must be in [1, 1e15] parameters, got 2**2000"),
    (lambda: rs.cluster_from_dict({"model": {"preset": "qwen3-4b"}, "hardware": {"nic_bytes_per_s": 10**400}}),
     "hardware.nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 10**400"),
    (lambda: rs.estimate_many(rs.chapter_cluster("relay", 2), nic_bytes_per_s=[1e-300]),
     "nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300"),
    (lambda: rs.estimate_many(rs.chapter_cluster("relay", 2), latency_s=[10**400]),
     "latency_s: must be an array of numbers: int too large to convert to float"),
    (lambda: rs.plan(rs.chapter_cluster("relay", 2), max_transfers=-1),
     "max_transfers: must be in [0, 18446744073709551615], got -1"),
])
def test_sync_inputs_are_refused_naming_the_field(make, message):
    with pytest.raises(ScenarioError) as e:
        make()
    assert str(e.value) == message


def raw(path: tuple[str, ...], value):
    d = copy.deepcopy(rs.chapter_cluster("relay", 2).to_dict())
    x = d
    for k in path[:-1]:
        x = x[k][0] if isinstance(x[k], list) else x[k]
    x[path[-1]] = value
    return d


@pytest.mark.parametrize("path, value, message", [
    (("fanout",), -3, "fanout: must be in [1, 1024], got -3"),
    (("fanout",), 2**2000, "fanout: must be in [1, 1024], got 2**2000"),
    (("fanout",), 2.0, "fanout: must be an integer in [1, 1024], got float 2.0"),
    (("train", "tp"), 0, "train.tp: must be in [1, 65536], got 0"),
    (("infer", "instances"), 2**64, "infer.instances: must be in [1, 65536], got 2**64"),
    (("hardware", "gpus_per_node"), True, "gpus_per_node: must be an integer in [1, 1024], got bool True"),
    (("model", "groups", "count"), -1, "model.groups.count: must be in [1, 16777216], got -1"),
    (("model", "groups", "elems"), 2**51, "model.groups.elems: must be in [1, 1125899906842624], got 2251799813685248"),
    (("model", "align_elems"), 0, "model.align_elems: must be in [1, 16777216], got 0"),
    (("model", "infer_bytes_per_elem"), 1e300, "model.infer_bytes_per_elem: must be in [1e-3, 16] bytes, got 1e+300"),
    (("hardware", "nic_bytes_per_s"), 1e-300, "nic_bytes_per_s: must be in [1e3, 1e15] bytes/s, got 1e-300"),
    (("hardware", "nic_bytes_per_s"), 10**400, "nic_bytes_per_s: must be a finite number, got 10**400"),
    (("software", "efficiency"), math.nan, "efficiency: must be in [1e-6, 1], got nan"),
    (("software", "pause_resume_s"), -1.0, "pause_resume_s: must be in [0, 1e6] seconds, got -1.0"),
])
def test_the_bindings_refuse_a_raw_config_naming_the_field(path, value, message):
    """The Rust bindings convert integers with a checked conversion (not PyO3's "out of range integral
    type conversion attempted") and the core checks the same ranges as the dataclasses."""
    converted = isinstance(value, int) or path[0] in ("model", "train", "infer")  # the plan needs these too
    for fn in (_rollsim.sync_estimate, _rollsim.sync_plan) if converted else (_rollsim.sync_estimate,):
        with pytest.raises(ScenarioError) as e:
            fn(raw(path, value))
        assert str(e.value) == message


def test_python_and_the_core_agree_on_every_real_range():
    """Just outside each range: the dataclass and the core (through a raw dict) give the same message."""
    sections = {"efficiency": "software", "per_tensor_s": "software", "per_bucket_s": "software",
                "per_update_s": "software", "bucket_bytes": "software", "quant_bytes_per_s": "software",
                "pause_resume_s": "software"}
    for name, (lo, hi, _) in BOUNDS.items():
        section = sections.get(name, "hardware")
        cls = rs.SoftwareStack if section == "software" else rs.Hardware
        for bad in (lo / 2 if lo > 0 else -1.0, hi * 2, math.nan, math.inf):
            with pytest.raises(ScenarioError) as py:
                cls(**{name: bad})
            with pytest.raises(ScenarioError) as core:
                _rollsim.sync_estimate(raw((section, name), bad))
            assert str(py.value) == str(core.value), name
        for good in (lo, hi):
            cls(**{name: good})
            _rollsim.sync_estimate(raw((section, name), good))
    assert all(lo <= hi for lo, hi in INT_BOUNDS.values())
