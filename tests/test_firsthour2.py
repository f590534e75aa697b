"""Defects a new user met in the first hour: the split's minimum steps, the what-if warning said
once, the import's override typos, the headers that name the scenario, the summary of a run
without steps."""

from __future__ import annotations

from rollsim import Scenario, resources
from rollsim.cli import main


def _split(horizon_s: float) -> resources.SplitResult:
    return resources.gpu_split(Scenario(horizon_s=horizon_s), 8, gpus_per_instance=1, slots_per_instance=64,
                               gpu_s_per_token=1e-4)


def test_split_best_needs_six_completed_steps():
    # 800 s: every split completes at most 5 steps; the 7-GPU one trains the most tokens per second
    # (9976) but over 5 steps of the pipeline's fill: no split is recommended, and each says why
    res = _split(800.0)
    t = res.table
    assert t["steps"].to_list() == [0, 1, 2, 3, 4, 5, 5]
    assert res.best is None and t["rank"].null_count() == 7
    assert res.nearest is not None and res.nearest["rollout_gpus"] == 7
    assert t["excluded_because"][6] == ("only 5 training steps completed (fewer than 6: too few to trust its rates; "
                                        "a longer horizon_s)")
    assert res.verdict.startswith("no split meets the limits (at least 6 training steps, generation does not outrun "
                                  "training, drop_fraction <= 5.0%); nearest: 7 rollout + 1 training GPU, 9976 tokens "
                                  "trained/s, excluded because only 5 training steps completed")


def test_split_best_is_the_fastest_with_six_steps():
    # 900 s: the 6-GPU split completes 6 steps and is recommended; the 7-GPU one (5 steps) is not
    res = _split(900.0)
    t = res.table
    assert t["steps"].to_list() == [1, 2, 3, 4, 5, 6, 5]
    assert res.best is not None and res.best["rollout_gpus"] == 6 and res.best["steps"] == 6
    assert t["rank"].to_list() == [None] * 5 + [1, None]
    assert all(int(s) >= 6 for s in t.filter(t["rank"].is_not_null())["steps"])


def test_split_cli_names_horizon_flag(capsys):
    assert main(["split", "--gpus", "8", "--gpu-s-per-token", "1e-4", "--horizon-s", "800"]) == 0
    out = capsys.readouterr().out
    assert "<- best" not in out
    assert ("excluded: only 5 training steps completed (fewer than 6: too few to trust its rates; a longer "
            "--horizon-s)") in out
    assert out.splitlines()[-1].startswith("no split meets the limits (at least 6 training steps,")
