"""Published timings: fitted stacks predict their held-out rows (docs/weight_sync.md)."""

import dataclasses

import numpy as np
import pytest

import rollsim.sync as rs
from rollsim.sync import calibration as cal


def _row(setting):
    return cal.validation_table().filter(setting=setting).row(0, named=True)


def test_stored_stacks_match_a_refit():
    for name, params in cal.FIT_PARAMS.items():
        fit = cal.fit_stack(name)
        stored = cal.STACKS[name]
        for p in params:
            assert getattr(stored, p) == pytest.approx(fit[p], rel=0.01), (name, p)


def test_fitted_parameters_are_physical():
    for name in cal.FIT_PARAMS:
        fit = cal.fit_stack(name)
        assert 0 < fit.get("efficiency", 1.0) <= 1
        assert fit.get("per_update_s", 0.0) >= 0 and fit.get("per_tensor_s", 0.0) >= 0


def test_fit_rows_are_reproduced():
    t = cal.validation_table().filter(role="fit")
    assert (t["residual"].abs() < 0.02).all()


def test_every_stack_has_fit_and_held_out_rows_marked():
    t = cal.validation_table()
    assert set(t["role"]) == {"fit", "held out"}
    # nemo: three parameters on three rows, two rows held out
    n = t.filter(stack="nemo-rl-reshard")
    assert n.filter(role="fit").height == 3 and n.filter(role="held out").height == 2


# Held-out rows, one by one: (setting, residual bound, expected sign). Every held-out row is here.
HELD_OUT = [
    ("Qwen3-235B-A22B BF16, 8xH800, TP8, 2.67 GiB", 0.25),
    ("Kimi-K2 FP8, 16xH20, TP16, 5.89 GiB", 0.25),
    ("DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB", 0.25),
    ("Kimi-K2 FP8, 256xH20, 16 x TP16, 8 GiB", 0.25),
    ("Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100", 0.25),
    ("DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, GB200", 0.25),
]


@pytest.mark.parametrize("setting,bound", HELD_OUT)
def test_held_out_within_25_percent(setting, bound):
    r = _row(setting)
    assert r["role"] == "held out"
    assert abs(r["residual"]) < bound, r


def test_all_held_out_rows_are_checked():
    held = set(cal.validation_table().filter(role="held out")["setting"])
    assert held == {s for s, _ in HELD_OUT}


def test_nemo_qwen3_30b_row_values():
    # was -30 % (0.61 s) before the per-tensor and misc-broadcast terms; now -17 %, just under the
    # published range 0.74-1.00 s (recorded, not hidden: prediction / low end - 1 = -2 %)
    r = _row("Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100")
    assert r["predicted_s"] == pytest.approx(0.725, abs=0.01)
    assert -0.20 < r["residual"] < -0.10
    assert r["predicted_s"] < r["lo_s"] and r["predicted_s"] / r["lo_s"] - 1 > -0.05


def test_nemo_reverse_check_is_a_documented_miss():
    # fitting on the BF16 30B row instead of the FP8 one predicts the FP8 row +78 %: the two rows
    # are not fully consistent with one per-tensor constant (docs/weight_sync.md)
    rows = {m.setting: m for m in cal.MEASUREMENTS if m.stack == "nemo-rl-reshard"}
    fit = ["Qwen3-4B BF16, DP8 -> TP8, H100", "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, H100",
           "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100"]
    A, y = [], []
    for s in fit:
        e = rs.estimate(rows[s].cluster)
        A.append([e.breakdown["transfer_s"], 1.0, e.tensors_charged])
        y.append(rows[s].measured_s - (e.total_s - e.breakdown["transfer_s"]))
    x = np.linalg.solve(np.array(A), np.array(y))
    m = rows["Qwen3-30B-A3B FP8, EP8xDP2 -> TP2xDP8, H100"]
    sw = dataclasses.replace(m.cluster.software, efficiency=1 / x[0], per_update_s=x[1], per_tensor_s=x[2])
    pred = rs.estimate(m.cluster.replace(software=sw)).total_s
    assert 0.6 < pred / m.measured_s - 1 < 1.0


def test_nemo_bulk_share_matches_published_xferdtensor_fraction():
    # design doc "XferDTensor fraction" (BF16 rows): share of the payload on the bulk path
    want = {"Qwen3-4B BF16, DP8 -> TP8, H100": 0.669, "DeepSeek-V3 BF16, PP16xEP16 -> TP32xDP8, H100": 0.976,
            "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100": 0.950}
    for m in cal.MEASUREMENTS:
        if m.setting in want:
            e = rs.estimate(m.cluster)
            share = 1 - sum(g.count * g.elems for g in m.cluster.model.groups if g.name not in cal.NEMO_PLAN_GROUPS) / m.cluster.model.n_params
            assert share == pytest.approx(want[m.setting], abs=0.001), m.setting
            assert e.model_bytes > 0


def test_nemo_per_tensor_term_counts_busiest_rank():
    # 30B BF16: a training rank stacks 16 local experts x 24 layers x 3 = 1,152 expert views; the
    # 435 misc tensors are loaded by every inference rank
    m = next(m for m in cal.MEASUREMENTS if m.setting == "Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100")
    assert rs.estimate(m.cluster).tensors_charged == 1152 + 435
    p = rs.plan(m.cluster, record_transfers=False)
    assert p.src_tensors.max() == 1152 and p.dst_tensors.max() == 144  # grouped: 48 layers x 3


def test_slow_moe_path_is_per_tensor_overhead():
    # ~18.9k tensors x fitted per-tensor cost = tens of seconds, dominated by software
    r = cal.validation_table().filter(stack="sglang-per-tensor").row(0, named=True)
    assert r["dominant_term"] == "software_s" and 30 < r["predicted_s"] < 90
    assert 1e-3 < cal.STACKS["sglang-per-tensor"].per_tensor_s < 1e-2


def test_issue_169_constants_fall_in_published_ranges():
    # two rows, two constants (exact solve): the per-bucket cost lands in the published SGLang IPC
    # round trip (20-41 ms; cf. sgl-project/sglang PR 7937); the per-tensor cost is 0.6 ms
    r = cal.issue_169()
    assert r["predicted"] == pytest.approx(r["measured"], rel=1e-6)
    assert 0.020 <= r["per_bucket_s"] <= 0.041
    assert 0.4e-3 < r["per_tensor_s"] < 0.8e-3
    assert r["buckets_30b"] == 114 and r["tensors_30b"] == 18867 and r["tensors_16b"] == 5291


def test_broadcast_nearly_flat_from_16_to_256_gpus():
    # checkpoint-engine: 10.19 s (16 GPUs) vs 11.33 s (256 GPUs); the model keeps them within 10 %
    t = cal.validation_table().filter(stack="checkpoint-engine")
    a = t.filter(setting="DeepSeek-V3.1 FP8, 16xH20, TP16, 5.39 GiB")["predicted_s"][0]
    b = t.filter(setting="DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB")["predicted_s"][0]
    assert abs(b / a - 1) < 0.1


def test_plan_groups_only_split_parallel():
    # other topologies ignore the split: the relay moves the same bytes with or without it
    c = next(m for m in cal.MEASUREMENTS if m.setting.startswith("Qwen3-30B-A3B BF16, EP8")).cluster.replace(topology="relay")
    plain = c.replace(software=dataclasses.replace(c.software, plan_groups=(), grouped_experts=False))
    assert rs.estimate(c).total_s == pytest.approx(rs.estimate(plain).total_s)
    with pytest.raises(ValueError, match="^plan_groups"):
        rs.SoftwareStack(plan_groups="mlp.experts")


def test_unknown_stack():
    with pytest.raises(ValueError, match="^stack"):
        cal.fit_stack("megatron")
