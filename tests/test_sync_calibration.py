"""Published timings: fitted stacks predict their held-out rows (docs/weight_sync.md)."""

import dataclasses

import pytest

import rollsim.sync as rs
from rollsim.sync import calibration as cal


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


HELD_OUT_MET = [
    "Qwen3-235B-A22B BF16, 8xH800, TP8, 2.67 GiB",
    "Kimi-K2 FP8, 16xH20, TP16, 5.89 GiB",
    "DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB",
    "Kimi-K2 FP8, 256xH20, 16 x TP16, 8 GiB",
]


@pytest.mark.parametrize("setting", HELD_OUT_MET)
def test_held_out_within_25_percent(setting):
    r = cal.validation_table().filter(setting=setting).row(0, named=True)
    assert r["role"] == "held out"
    assert abs(r["residual"]) < 0.25, r


def test_nemo_held_out_row_is_a_known_miss():
    # documented in docs/weight_sync.md: -30 % against the midpoint of 0.74-1.00 s; within 25 % of the range
    r = cal.validation_table().filter(setting="Qwen3-30B-A3B BF16, EP8xPP2 -> TP8xDP2, H100").row(0, named=True)
    assert r["predicted_s"] < r["lo_s"]
    assert r["predicted_s"] / r["lo_s"] - 1 > -0.25


def test_slow_moe_path_is_per_tensor_overhead():
    # ~18.9k tensors x fitted per-tensor cost = tens of seconds, dominated by software
    r = cal.validation_table().filter(stack="sglang-per-tensor").row(0, named=True)
    assert r["dominant_term"] == "software_s" and 30 < r["predicted_s"] < 90
    assert 1e-3 < cal.STACKS["sglang-per-tensor"].per_tensor_s < 1e-2


def test_broadcast_nearly_flat_from_16_to_256_gpus():
    # checkpoint-engine: 10.19 s (16 GPUs) vs 11.33 s (256 GPUs); the model keeps them within 10 %
    t = cal.validation_table().filter(stack="checkpoint-engine")
    a = t.filter(setting="DeepSeek-V3.1 FP8, 16xH20, TP16, 5.39 GiB")["predicted_s"][0]
    b = t.filter(setting="DeepSeek-V3.1 FP8, 256xH20, 16 x TP16, 8 GiB")["predicted_s"][0]
    assert abs(b / a - 1) < 0.1


def test_unknown_stack():
    with pytest.raises(ValueError, match="^stack"):
        cal.fit_stack("megatron")
