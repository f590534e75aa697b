"""Weight-sync transports as stacks: layouts, the stacks' own terms, calibration, the leave-one-out
table and its targets (rollsim.sync.stacks, rollsim.sync.validation)."""

from __future__ import annotations

import dataclasses
import io
from contextlib import redirect_stdout

import numpy as np
import pytest

from rollsim import ScenarioError
from rollsim.sync import (STACK_TERMS, STACKS, Cluster, InferLayout, SoftwareStack, TrainLayout, calibrate, estimate,
                          estimate_stack, estimate_stack_many, rank_designs, received_bytes_per_rank)
from rollsim.sync.cli import main
from rollsim.sync.presets import HARDWARE, MODELS
from rollsim.sync.validation import CALIBRATION, FITTED, ROWS, fitted_stacks, summary, validation_table

GiB = 2**30


def test_the_bytes_on_nemo_rl_s_shard_to_shard_path_are_the_published_xferdtensor_fractions():
    # NVIDIA-NeMo/RL docs/design-docs/nccl-reshard-refit.md, Expected Performance: "XferDTensor
    # fraction", the share of the refit payload on the bulk (shard-to-shard) path: FFN projections
    # (dense MLP and routed experts); FP8 scale tensors ride the misc broadcast
    from rollsim.sync.calibration import NEMO_PLAN_GROUPS

    def fraction(name, prec):
        m = MODELS[name].with_precision(prec, prec)
        p = m.infer_precision
        elems = lambda g: g.count * g.elems  # noqa: E731
        total = sum(elems(g) * (p.bytes_per_elem if g.quantized else 2.0) for g in m.groups)
        bulk = sum(elems(g) * (1.0 if p.name == "fp8" else 2.0) for g in m.groups if g.name in NEMO_PLAN_GROUPS)
        return round(100 * bulk / total, 1)

    assert fraction("qwen3-4b", "bf16") == 66.9
    assert fraction("qwen3-30b-a3b", "bf16") == 95.0
    assert fraction("qwen3-30b-a3b", "fp8:128") == 93.0
    assert fraction("deepseek-v3-no-mtp", "bf16") == 97.6


def test_refit_bytes_per_rollout_rank_of_deepseek_v3_256_to_32():
    # DeepSeek-V3 BF16, 256 training GPUs (PP16 x EP16) -> 32 vLLM GPUs (TP32, EP32): routed experts
    # shard to shard, every other tensor broadcast whole. 69.95 GiB = 1218.00 / 32 + 31.88 GiB: this
    # model's arithmetic; not found in NeMo-RL's public docs, blogs or PRs (docs/sync_stacks.md, "Layouts")
    c = Cluster(model=MODELS["deepseek-v3-no-mtp"].with_precision("bf16", "bf16"),
                train=TrainLayout(pp=16, dp=16, ep=16), infer=InferLayout(instances=1, tp=32, ep=32),
                hardware=HARDWARE["h100"], software=SoftwareStack(plan_groups=("mlp.experts",), grouped_experts=True),
                topology="parallel")
    assert round(received_bytes_per_rank(c) / GiB, 2) == 69.95
    # everything along the plan: only the rank's own slice (what the plain plan reported)
    flat = c.replace(software=SoftwareStack(grouped_experts=True))
    assert round(received_bytes_per_rank(flat) / GiB, 2) == 39.25
    # with the dense MLP on the shard-to-shard path too (NeMo-RL's bulk path)
    both = c.replace(software=SoftwareStack(plan_groups=("mlp.dense_proj", "mlp.experts"), grouped_experts=True))
    assert round(received_bytes_per_rank(both) / GiB, 2) == 67.80


def test_context_parallel_ranks_are_weight_copies():
    t = TrainLayout(tp=2, cp=2, pp=2, dp=2)
    assert t.gpus == 16
    assert t.head_ranks == (0, 8)
    m = MODELS["qwen3-4b"]
    a = Cluster(model=m, train=TrainLayout(tp=2, cp=4), infer=InferLayout(tp=4), topology="parallel")
    b = Cluster(model=m, train=TrainLayout(tp=2, dp=4), infer=InferLayout(tp=4), topology="parallel")
    assert estimate(a).total_s == estimate(b).total_s
    assert a.to_dict()["train"]["dp"] == 4


def test_targets_on_the_published_rows():
    s = summary()
    assert s["predictions"] == 8
    assert s["within_25pct"] / s["predictions"] >= 0.8
    for model, v in s["scaling"].items():
        assert 11.0 < v["measured_pct"] < 12.0, model
        assert abs(v["predicted_pct"] - v["measured_pct"]) <= 5.0, model


def test_every_stack_is_calibrated_on_at_most_two_rows_and_the_rest_are_predictions():
    t = validation_table()
    for name, (params, settings) in CALIBRATION.items():
        assert 1 <= len(settings) <= 2 and len(params) <= len(settings)
        assert t.filter((t["stack"] == name) & (t["role"] == "calibration")).height == len(settings)
        assert STACKS[name].calibrated_on == settings
    assert set(t["setting"]) == {r.setting for r in ROWS}
    assert t.filter(t["role"] == "calibration")["error"].abs().max() < 0.01   # rounded fits reproduce their rows


def test_registered_stacks_match_a_refit():
    fresh = fitted_stacks()
    for name, vals in FITTED.items():
        for p, v in vals.items():
            assert getattr(fresh[name], p) == pytest.approx(v, rel=5e-3), (name, p)


def _off_node_broadcast() -> Cluster:
    return Cluster(model=MODELS["qwen3-30b-a3b"], train=TrainLayout(tp=8, dp=2), infer=InferLayout(instances=4, tp=8),
                   hardware=HARDWARE["h100"], topology="broadcast")


def test_one_sender_is_slower_than_all_ranks_sending_and_the_egress_term_says_why():
    c = _off_node_broadcast()
    base = STACKS["checkpoint-engine"]
    one = estimate_stack(c, base.replace(senders="one"))
    heads = estimate_stack(c, base.replace(senders="stage_heads"))
    every = estimate_stack(c, base.replace(senders="all"))
    assert one.total_s > every.total_s
    assert one.dominant_term == "egress_s"
    # one root NIC: the whole model at the achieved NIC rate
    s = c.model.infer_bytes
    assert one.breakdown["transfer_s"] + one.breakdown["egress_s"] == pytest.approx(s / (base.efficiency * 50e9))
    assert every.breakdown["egress_s"] == 0.0
    assert heads.breakdown["egress_s"] == one.breakdown["egress_s"]   # pp = 1: one stage head
    ranked = rank_designs(c, {"one sender": base.replace(senders="one"), "all send": base})
    assert ranked["stack"].to_list() == ["all send", "one sender"]
    assert ranked["slower_because"][1] == "egress_s"


def test_instances_cost_what_checkpoint_engine_measured():
    rows = {r.setting: r for r in ROWS}
    st = STACKS["checkpoint-engine"]
    one = rows["Kimi-K2 FP8, 16xH20, TP16, 5.89 GiB"]
    many = rows["Kimi-K2 FP8, 256xH20, 16 x TP16, 8 GiB"]
    t1 = estimate_stack(one.cluster, st.replace(bucket_bytes=5.89 * GiB))
    t16 = estimate_stack(many.cluster, st.replace(bucket_bytes=8 * GiB))
    assert t1.breakdown["instances_s"] == 0.0
    nb = t16.base.n_buckets
    assert t16.breakdown["instances_s"] == pytest.approx(st.per_instance_bucket_s * nb * 15)
    assert 0.10 < t16.total_s / t1.total_s - 1 < 0.13


def test_calibrate_fits_efficiency_and_predicts_other_sizes():
    c = _off_node_broadcast()
    cal = calibrate(c, 12.0, "checkpoint-engine")
    assert cal.estimate().total_s == pytest.approx(12.0, rel=1e-9)
    assert 0 < cal.fitted["efficiency"] <= 1
    f = cal.predict(instances=[1, 4, 16])
    assert f["instances"].to_list() == [1, 4, 16]
    assert f["total_s"].is_sorted() and f["total_s"][1] == pytest.approx(12.0, rel=1e-9)
    b = cal.predict(bucket_bytes=[0.5 * GiB, 4 * GiB])
    assert b["instances_s"][0] > b["instances_s"][1]   # more buckets: more per-instance receive cost
    m = cal.predict(model=[MODELS["qwen3-4b"], "Qwen3-235B-A22B"])
    assert m["total_s"][0] < m["total_s"][1]
    per_update = calibrate(c, 12.0, "checkpoint-engine", fit_params=("per_update_s",))
    assert per_update.estimate().total_s == pytest.approx(12.0, rel=1e-9)


def test_calibrate_refuses_impossible_measurements():
    c = _off_node_broadcast()
    with pytest.raises(ScenarioError, match=r"^measured_s: is shorter than the stack's fixed terms allow"):
        calibrate(c, 1e-4, STACKS["checkpoint-engine"].replace(per_update_s=1.0))


def test_many_matches_single_estimates():
    c = _off_node_broadcast()
    st = STACKS["checkpoint-engine"]
    inst = np.array([1, 2, 8, 16])
    buckets = np.array([0.25, 1.0, 2.0, 8.0]) * GiB
    f = estimate_stack_many(c, st, instances=inst, bucket_bytes=buckets)
    for i in range(4):
        e = estimate_stack(c.replace(infer=dataclasses.replace(c.infer, instances=int(inst[i]))),
                           st.replace(bucket_bytes=float(buckets[i])))
        assert f["total_s"][i] == pytest.approx(e.total_s, rel=1e-12)
        for k in STACK_TERMS:
            assert f[k][i] == pytest.approx(e.breakdown[k], rel=1e-12, abs=1e-15), k


def test_transports_each_have_a_stack_and_the_breakdown_sums():
    c = _off_node_broadcast()
    for name, st in STACKS.items():
        e = estimate_stack(c, st)
        assert e.total_s == pytest.approx(sum(e.breakdown.values()))
        assert set(e.breakdown) == set(STACK_TERMS)
        assert e.total_s > 0, name
    fs = estimate_stack(c, "filesystem")
    assert fs.dominant_term == "filesystem_s"
    assert fs.breakdown["filesystem_s"] == pytest.approx(c.model.infer_bytes * 5 / 10e9)


def test_receiver_post_processing_and_staging_terms():
    c = Cluster(model=MODELS["qwen3-30b-a3b"].with_precision("bf16", "fp8:128"), train=TrainLayout(tp=8),
                infer=InferLayout(instances=1, tp=8), hardware=HARDWARE["h100"], topology="parallel")
    st = STACKS["rdma-write"].replace(quantize_on="receiver", quant_bytes_per_s=1e11, staging_copies=2,
                                      registration_bytes_per_s=1e11)
    e = estimate_stack(c, st)
    recv = e.received_bytes_per_rank
    assert e.breakdown["postprocess_s"] == pytest.approx(recv * 2 / c.model.infer_precision.bytes_per_elem / 1e11)
    assert e.breakdown["registration_s"] == pytest.approx(recv / 1e11)
    s_train = c.model.n_params * 2
    assert e.breakdown["staging_s"] == pytest.approx(2 * s_train / 8 / 50e9)
    assert e.breakdown["quantization_s"] == 0.0   # the receiver quantizes


def test_cli_validate_prints_the_leave_one_out_table():
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["--validate"]) == 0
    text = out.getvalue()
    assert "predictions within 25 %: 7 of 8" in text
    assert "1 -> 16 instances, Kimi-K2: measured +11.7 %, predicted +11.2 %" in text
    assert text.count("calibration") == sum(len(v[1]) for v in CALIBRATION.values())


def test_sync_hardware_and_models_come_from_the_shared_registry():
    from rollsim.hardware import specs
    from rollsim.sync import Hardware, cluster_from_dict
    from rollsim.sync.presets import from_spec, hardware, model

    # the presets are the registry's accelerators with the sync's deployment differences
    assert HARDWARE["h100"] == Hardware()
    assert HARDWARE["h800"].nvlink_bytes_per_s == specs.accelerator("H800").scale_up_bytes_per_s == 200e9
    assert HARDWARE["h20"].nic_bytes_per_s == 25e9 and specs.accelerator("H20").nic_bytes_per_s == 50e9
    assert HARDWARE["gb200"].gpus_per_node == 72
    mi = hardware("MI300X")
    assert (mi.nvlink_bytes_per_s, mi.nic_bytes_per_s, mi.pcie_bytes_per_s) == (448e9, 50e9, 64e9)
    c = cluster_from_dict({"model": {"preset": "Llama-3.1-70B"}, "hardware": {"preset": "b200"}, "topology": "parallel"})
    assert c.hardware.nvlink_bytes_per_s == 900e9
    assert c.model.n_params == specs.model("Llama-3.1-70B").total_params
    for name in ("Qwen3-8B", "Qwen3-235B-A22B", "Kimi-K2"):
        assert from_spec(name).n_params == pytest.approx(specs.model(name).total_params, rel=1e-3)
    assert model("qwen3-4b") is MODELS["qwen3-4b"]   # the sync's own presets first
    with pytest.raises(ScenarioError, match="^hardware: must be one of h100, "):
        hardware("TPU-v5")


def test_ten_thousand_estimates_in_one_vectorized_call():
    """Each of 10,000 (instances, bucket) pairs gets its row, equal to the scalar estimate's (the call's
    time is benches/sync_bench.py's, not a timed test)."""
    row = next(r for r in ROWS if r.setting.startswith("DeepSeek-V3.1 FP8, 256xH20"))
    n = 10_000
    rng = np.random.default_rng(0)
    args = dict(instances=rng.integers(1, 65, n).astype(float), bucket_bytes=rng.uniform(0.25, 8, n) * GiB)
    f = estimate_stack_many(row.cluster, "checkpoint-engine", **args)
    assert f.height == n and f["total_s"].min() > 0
    one = estimate_stack_many(row.cluster, "checkpoint-engine", instances=[args["instances"][7]],
                              bucket_bytes=[args["bucket_bytes"][7]])
    assert one["total_s"][0] == f["total_s"][7]


def test_readme_and_docs_tables_are_the_validation_table():
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    t = validation_table()
    for doc in (root / "README.md", root / "docs" / "sync_stacks.md"):
        text = doc.read_text()
        for r in t.iter_rows(named=True):
            line = next(x for x in text.splitlines() if x.startswith(f"| {r['stack']} | {r['setting']} |"))
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert cells[2] == r["role"] and cells[4] == f"{r['predicted_s']:.2f} s", (doc.name, line)
            assert cells[5] == f"{r['error'] * 100:+.1f} %", (doc.name, line)


def test_cluster_file_with_a_stack_prints_its_estimate_and_the_ranking(tmp_path):
    from pathlib import Path

    example = Path(__file__).resolve().parent.parent / "python" / "rollsim" / "sync" / "examples" / "cluster.toml"
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([str(example)]) == 0
    text = out.getvalue()
    assert "stack nemo-rl-reshard (nccl-p2p): " in text
    assert "calibrated stacks on this cluster, fastest first" in text
    rank0 = next(line for line in text.splitlines() if line.strip().startswith("nccl-broadcast-rank0"))
    assert "slower: egress_s +" in rank0
    custom = tmp_path / "c.toml"
    custom.write_text('[model]\npreset = "qwen3-8b"\n[hardware]\npreset = "H200"\n'
                      '[stack]\ntransport = "nccl-broadcast"\nsenders = "one"\nefficiency = 0.5\n')
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([str(custom)]) == 0
    assert "stack custom (nccl-broadcast): " in out.getvalue() and "egress_s" in out.getvalue()


def test_a_bad_stack_in_a_cluster_file_is_refused_before_any_output(tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text('[model]\npreset = "qwen3-8b"\n[stack]\npreset = "rdma-write"\nefficiency = 2.0\n')
    assert main([str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "rollsim: error: stack.efficiency: must be in [1e-6, 1], got 2.0\n"
