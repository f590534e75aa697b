"""Review leftovers in the Python layer: split and compare over the same horizon, the example metrics'
names from the calibration's table, the training-state words built once, a Megatron layout derived once,
the colocated switch priced on the deployment already built, vLLM's per-GPU engine defaults and
Megatron's expert-parallel folding."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from rollsim.calibration import FRAMEWORK_METRICS

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------------------------------- example metrics' names


def test_slime_example_names_are_the_calibrations(monkeypatch):
    """The script's slime columns are FRAMEWORK_METRICS' names (it retyped them): renamed there, renamed here."""
    gen = runpy.run_path(str(ROOT / "scripts" / "gen_example_metrics.py"), run_name="gen")
    cols = gen["slime"]().columns
    assert cols == ["rollout/step", "perf/step_time", "perf/rollout_time", "perf/actor_train_time",
                    "perf/update_weights_time", "rollout/response_len/mean", "rollout/response_len/max",
                    "rollout/truncated_ratio"]
    monkeypatch.setitem(FRAMEWORK_METRICS["slime"], "gen_s", [["perf/renamed_rollout_time"]])
    assert gen["slime"]().columns == [c if c != "perf/rollout_time" else "perf/renamed_rollout_time" for c in cols]
