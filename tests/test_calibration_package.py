"""The calibration package's structure: the names the single module gave stay importable, the framework
detection and the synthetic metrics' names derive from FRAMEWORK_METRICS, calibrate resolves the metric
columns once, and the simulated fits share one loop over the seeds."""

from __future__ import annotations

import polars as pl
import pytest

import rollsim.calibration as cal
from rollsim import FullyAsync, LogNormal, Scenario, configs
from rollsim.calibration import FRAMEWORK_METRICS, _metrics, _simulate, _synthetic

EX = configs.EXAMPLES


def test_the_modules_names_are_the_packages():
    for name in ("calibrate", "Calibrated", "GENERIC", "FRAMEWORK_METRICS", "read_metrics", "normalize", "fit",
                 "fit_lengths", "synthetic_metrics", "ASYNC_GEN_METRICS", "stream_needs_simulation", "STREAM_MISFIT",
                 "pause_on_critical_path", "PLAUSIBLE", "IMPLAUSIBLE", "plausibility_notes", "PARAMS", "UNITS",
                 "WAIT_SHARE", "MetricNearMissWarning", "_stream_rows", "_trunc_mean", "_trained_lengths",
                 "_wait_pause_profile", "_Incomplete", "_rows_simulated", "_families", "_NOT_LOGGED"):
        assert hasattr(cal, name), name
    assert cal.__all__ == ["calibrate", "Calibrated", "GENERIC", "FRAMEWORK_METRICS", "read_metrics", "normalize", "fit"]


@pytest.mark.parametrize(("columns", "fw"), [
    (["timing_s/gen", "response_length/mean"], "verl"),
    (["timeperf/rollout"], "areal"),
    (["ppo_actor/seq_len/avg"], "areal"),          # AReaL's lengths alone name it too
    (["perf/rollout_time", "rollout/raw_reward"], "slime"),
    (["rollout/response_len/mean"], "slime"),       # a slime name in the family slime and OpenRLHF share
    (["timing/generation"], "openrlhf"),
    (["train/timing/generation"], "openrlhf"),      # a logger's prefix left off
    (["rollout/response_length_mean"], "openrlhf"),
    (["rollout/raw_reward"], "generic"),            # the shared family alone names neither
    (["training/global_step", "gen_s"], "generic"),  # a step counter says nothing of whose table it is
])
def test_detection_reads_the_table_of_names(columns, fw):
    assert _metrics._detect(pl.DataFrame({c: [1.0] for c in columns})) == fw


def test_a_new_metric_family_is_detected_without_retyping(monkeypatch):
    table = pl.DataFrame({"timing_v2/gen": [1.0]})
    assert _metrics._detect(table) == "generic"
    monkeypatch.setitem(FRAMEWORK_METRICS["verl"], "gen_s", [["timing_v2/gen"]])
    assert _metrics._detect(table) == "verl"


def test_synthetic_names_are_the_first_names_read():
    assert list(_synthetic._SYNTHETIC_NAMES) == ["verl", "areal", "slime"]   # OpenRLHF logs no longest answer
    for fw, names in _synthetic._SYNTHETIC_NAMES.items():
        for gen, name in names.items():
            assert name == FRAMEWORK_METRICS[fw][gen][0][0]
    assert _synthetic._SYNTHETIC_NAMES["verl"]["step"] == "training/global_step"
    assert _synthetic._SYNTHETIC_NAMES["slime"]["response_max"] == "rollout/response_len/max"
    assert "step_s" not in _synthetic._SYNTHETIC_NAMES["areal"]


def test_calibrate_resolves_the_columns_once(monkeypatch):
    calls = []
    real = _metrics._resolve

    def counted(columns, fw):
        calls.append(fw)
        return real(columns, fw)

    monkeypatch.setattr(_metrics, "_resolve", counted)
    got = cal.calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=0)
    assert calls == ["verl"]
    monkeypatch.undo()
    assert got.values == cal.calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"),
                                       bootstrap=0).values


def _fa() -> Scenario:
    return Scenario(rollout_slots=64, batch_size=32, group_size=4, pipeline=FullyAsync(), decode_tokens_per_s=50.0,
                    rollout_pause_s=2.0, train_step_s=3.0, lengths=LogNormal(5.0, 0.5, max_tokens=1024))


def test_the_simulated_fits_share_one_loop(monkeypatch):
    seen = []
    real = _simulate._candidate_runs

    def spy(cand, want, horizon, read, **kw):
        seen.append((want, kw.get("record", "summary"), kw.get("seeds", _simulate._STREAM_SEEDS)))
        return real(cand, want, horizon, read, **kw)

    monkeypatch.setattr(_simulate, "_candidate_runs", spy)
    v = {"lengths.mu": 5.0, "lengths.drift": 0.01, "lengths.sigma": 0.5, "decode_tokens_per_s": 50.0,
         "gen_overhead_s": 2.0, "train_step_s": 3.0, "train_s_per_token": 0.0, "logprob_step_s": 0.0,
         "logprob_s_per_token": 0.0, "weight_sync_s": 0.5}
    frames = _simulate._stream_simulated(_fa(), v, 5, 1.0, 1024.0)
    wall, wait = _simulate._rows_simulated(_fa(), v, 1, pl.Series([0.0, 1.0, 2.0, 3.0]).to_numpy())
    assert seen == [(6, "samples", (101, 202)), (4, "summary", (101, 202))]
    assert [f.height for f in frames] == [5, 5] and len(wall) == len(wait) == 4
    assert float(wall.sum()) > 0 and (wait >= 0).all()


def test_a_run_short_of_its_steps_is_incomplete():
    with pytest.raises(cal._Incomplete, match=r"^\d+ of 50 steps$"):
        _simulate._candidate_runs(_fa(), 50, 10.0, lambda st, res: st.height)
    assert _simulate._candidate_runs(_fa(), 3, 10.0, lambda st, res: st.height, attempts=6)[0] >= 3
