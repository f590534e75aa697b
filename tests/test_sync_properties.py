"""Hypothesis properties of the weight-sync model."""

import numpy as np
import polars as pl
from hypothesis import given, settings, strategies as st

import rollsim.sync as rs

SET = settings(max_examples=40, deadline=None)


@st.composite
def small_moe(draw):
    layers = draw(st.integers(1, 4))
    experts = draw(st.sampled_from([0, 4, 8, 16]))
    groups = [rs.TensorGroup("dense", 3 * layers, draw(st.integers(1, 5000)), layers=layers),
              rs.TensorGroup("norm", 2 * layers, draw(st.integers(1, 64)), layers=layers, replicated=True, quantized=False)]
    if experts:
        groups.append(rs.TensorGroup("experts", 3 * experts * layers, draw(st.integers(1, 3000)), n_experts=experts, layers=layers))
    prec = draw(st.sampled_from([rs.BF16, rs.Precision("fp8", 4)]))
    return rs.ModelSpec("m", tuple(groups), train_precision=rs.BF16, infer_precision=prec)


@st.composite
def layouts(draw):
    tp, pp, dp = draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([1, 2])), draw(st.sampled_from([1, 2, 3, 4]))
    ep = draw(st.sampled_from([d for d in (1, 2, 4, 8) if (tp * dp) % d == 0]))
    itp = draw(st.sampled_from([1, 2, 4, 8]))
    iep = draw(st.sampled_from([d for d in (1, 2, 4, 8) if itp % d == 0]))
    return (rs.TrainLayout(tp, pp, dp, ep, draw(st.booleans())),
            rs.InferLayout(draw(st.integers(1, 3)), itp, iep))


@SET
@given(small_moe(), layouts(), st.integers(1, 16), st.booleans())
def test_plan_moves_every_needed_byte_exactly_once(model, lay, gpn, coloc):
    train, infer = lay
    c = rs.Cluster(model=model, train=train, infer=infer, hardware=rs.Hardware(gpus_per_node=gpn, colocated=coloc))
    p = rs.plan(c)
    t = p.transfers
    # every (destination, tensor) is covered by contiguous, non-overlapping slices
    s = t.sort(["dst_rank", "group", "tensor", "offset_elems"]).with_columns(
        end=pl.col("offset_elems") + pl.col("len_elems"))
    g = s.group_by(["dst_rank", "group", "tensor"], maintain_order=True).agg(
        pl.col("offset_elems"), pl.col("end"))
    for offs, ends in zip(g["offset_elems"], g["end"]):
        assert list(offs[1:]) == list(ends[:-1])
    # the bytes sent are the bytes needed, and each inference rank gets a full share
    assert abs(t["bytes"].sum() - p.needed_bytes.sum()) <= 1e-9 * max(1.0, p.needed_bytes.sum())
    per_dst = t.group_by("dst_rank").agg(pl.col("bytes").sum()).sort("dst_rank")
    need = p.needed_bytes
    for d, b in zip(per_dst["dst_rank"], per_dst["bytes"]):
        assert abs(b - need[d]) <= 1e-9 * max(1.0, need[d])
    # per instance: one full copy (replicated tensors once per rank)
    bpe = model.infer_precision.bytes_per_elem
    # (FP8 scale tensors are planned as one-element tensors: counted, bytes negligible)
    copy = sum(gr["count"] * gr["elems"] * bpe * (infer.tp if gr["replicated"] else 1) for gr in c.to_dict()["model"]["groups"])
    assert abs(need.sum() - infer.instances * copy) <= 1e-6 * copy * infer.instances
    # slices hold whole quantization blocks
    a = model.infer_precision.align_elems
    assert (t["offset_elems"] % a == 0).all()


@SET
@given(st.integers(1, 200), st.floats(1e9, 1e13), st.floats(1e9, 1e11), st.floats(0, 1e-4))
def test_naive_is_linear_in_instances(n, params, nic, alpha):
    base = rs.Cluster(model=rs.ModelSpec.dense("d", params, 100, infer_precision=rs.Precision("fp8", 0), train_precision=rs.Precision("fp8", 0)),
                      train=rs.TrainLayout(tp=8), infer=rs.InferLayout(1, 8),
                      hardware=rs.Hardware(nic_bytes_per_s=nic, latency_s=alpha), topology="naive")
    t1, t2, tn = (rs.estimate(base.replace(infer=rs.InferLayout(k, 8))).total_s for k in (1, 2, n))
    # affine in n: T(n) = n * (S / beta + buckets * alpha) + the first bucket's gather and scatter
    assert abs(tn - (t1 + (n - 1) * (t2 - t1))) <= 1e-9 * tn
    assert (t2 - t1) >= 0.99 * params / nic  # each extra instance costs the full model over one NIC


@SET
@given(st.floats(1e10, 1e13), st.floats(1e10, 1e11), st.floats(0.0, 1e-4), st.sampled_from([1, 2]))
def test_relay_is_nearly_flat_in_instances(params, nic, alpha, fanout):
    base = rs.Cluster(model=rs.ModelSpec.dense("d", params, 800), train=rs.TrainLayout(tp=8), infer=rs.InferLayout(1, 8),
                      hardware=rs.Hardware(nic_bytes_per_s=nic, latency_s=alpha), topology="relay", fanout=fanout)
    f = rs.estimate_many(base, instances=np.array([1, 2, 8, 64, 256]))
    t = f["total_s"].to_numpy()
    tau = params * 2 / 8 / nic
    assert np.all(np.diff(t) >= -1e-9 * t[-1])    # never faster with more instances
    if fanout == 1:
        # chain of h = n hops: within the closed form (sqrt(tau) + sqrt((h - 1) alpha))^2 (+ buffer-bound chunks)
        assert t[-1] <= (np.sqrt(tau) + np.sqrt(255 * alpha)) ** 2 * 1.01 + 1e-9
        if tau >= 1000 * 63 * alpha:              # S / beta >> h alpha: nearly flat
            assert t[3] / t[0] < 1.1
    else:
        # a binary tree sends each chunk twice per inner node: flat from 3 instances on
        if tau >= 1000 * 63 * alpha:
            assert t[4] / t[2] < 1.1


@SET
@given(small_moe(), st.sampled_from([1, 2, 4]), st.integers(1, 4), st.integers(1, 4), st.integers(1, 4))
def test_more_senders_never_slower(model, tp, dp, extra, instances):
    infer = rs.InferLayout(instances, 4, 1)

    def mk(d):
        return rs.Cluster(model=model, train=rs.TrainLayout(tp=tp, dp=d), infer=infer,
                          hardware=rs.Hardware(latency_s=0.0), topology="parallel")

    a = rs.estimate(mk(dp)).breakdown["transfer_s"]
    b = rs.estimate(mk(dp + extra)).breakdown["transfer_s"]
    # one more copy of the weights to send from can only spread the busiest link's load
    assert b <= a * (1 + 1e-9) + 1e-15


@SET
@given(st.floats(0.05, 1.0), st.floats(0.0, 1e-2), st.sampled_from(rs.TOPOLOGIES))
def test_breakdown_sums_and_lower_efficiency_is_slower(eff, per_tensor, topo):
    c = rs.chapter_cluster(topo, 4).replace(software=rs.SoftwareStack(efficiency=eff, per_tensor_s=per_tensor))
    e = rs.estimate(c)
    assert abs(sum(e.breakdown.values()) - e.total_s) <= 1e-9 * e.total_s
    slower = rs.estimate(c.replace(software=rs.SoftwareStack(efficiency=eff / 2, per_tensor_s=per_tensor)))
    assert slower.total_s > e.total_s
