"""``rollsim run`` / ``compare`` of a deployment (``--model``, ``rollsim hardware``'s flags), compare's
rates over the same horizon, the agentic preset's trajectories on a deployment's pool, and split's
KV-wait share."""

from __future__ import annotations

import json
import math

import polars as pl
import pytest

import rollsim
from rollsim import FullyAsync, LogNormal, Scenario, simulate
from rollsim.cli import _json, _undefined_max, deployment_words, main
from rollsim.hardware import Deployment

_LENGTHS = LogNormal(mu=7.0, sigma=1.0, max_tokens=8192)
_FLAGS = ["--model", "Qwen3-8B", "--gpu", "H100", "--rollout-gpus", "2", "--train-gpus", "2", "--group-size", "8",
          "--batch-size", "64", "--prompt-tokens", "300", "--mu", "7", "--max-tokens", "8192", "--horizon-s", "600"]


def _deployment() -> Deployment:
    return Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=2, rollout_tp=1, train_gpus=2)


def _python_scenario(**kw) -> Scenario:
    return _deployment().scenario(lengths=_LENGTHS, prompts_per_step=8, group_size=8, prompt_tokens=300.0,
                                  horizon_s=600.0, **kw)


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")  # 2,048 slots for batches of 64
def test_run_model_is_the_python_deployment_digit_for_digit(capsys):
    """``rollsim run`` had no deployment flags: a user of ``rollsim hardware --model ...`` had to write a
    TOML file from Python to simulate it."""
    assert main(["run", *_FLAGS]) == 0
    out, err = capsys.readouterr()
    sc = _python_scenario()
    want = simulate(sc, record="summary").summary
    assert out == _json(_undefined_max(want)) + "\n"
    assert json.loads(out)["steps"] == want["steps"] > 0
    # what it assumed, on stderr (stdout stays the JSON)
    assert err == f"rollsim run: {deployment_words(_deployment(), sc)}\n"
    assert sc.rollout_slots == 2048 and sc.kv_cache_tokens == 395353
    assert err.startswith("rollsim run: deployment Qwen3-8B on 2 x H100 (2 vllm instances of TP 1 x 1024 slots = "
                          "2048 slots), training on 2 GPUs (fsdp2): decode table from specs (rollsim.hardware.serving, "
                          "vllm) at the mean context ")
    assert (f"{sc.decode_tokens_per_s:.1f} tokens/s for 1 sequence" in err
            and "KV capacity 395,353 tokens per instance" in err
            and f"prefill shared with the decode steps at {sc.prefill_tokens_per_s:,.0f} tokens/s per instance" in err
            and sc.prefill_mode == "shared" and "no switch" in err
            and "weight sync not priced" in err)


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")  # 2,048 slots for batches of 64
def test_run_model_colocated_runs_synchronous_and_pays_the_switch(capsys):
    assert main(["run", *_FLAGS, "--colocated", "--weight-sync-s", "2"]) == 0
    out, err = capsys.readouterr()
    d = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=2, rollout_tp=1, train_gpus=2, colocated=True)
    sc = d.scenario(lengths=_LENGTHS, prompts_per_step=8, group_size=8, prompt_tokens=300.0, horizon_s=600.0,
                    weight_sync_s=2.0)
    assert sc.pipeline == rollsim.Synchronous()   # the deployment's default when colocated
    assert out == _json(_undefined_max(simulate(sc, record="summary").summary)) + "\n"
    switch = d.switch_s()["total"]
    assert sc.weight_sync_s == pytest.approx(2.0 + switch, rel=1e-15)
    assert f"colocated switch {switch:.2f} s per step, in weight_sync_s ({sc.weight_sync_s:.2f} s)" in err


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")  # 2,048 slots for batches of 64
def test_compare_model_is_rollsim_compare_of_the_deployment(capsys):
    assert main(["compare", *_FLAGS, "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    base = _python_scenario(pipeline=FullyAsync(), rng="python")  # compare's --rng default
    want = rollsim.compare(base, [("synchronous", rollsim.Synchronous()), ("one-step async", rollsim.OneStepAsync()),
                                  ("fully async", FullyAsync()), ("fully async, cap 2", FullyAsync(max_staleness=2))])
    assert out == want.write_csv()
    assert err.startswith("rollsim compare: deployment Qwen3-8B on 2 x H100")
    # the table: the scenario line (no decode table of 20-odd points in it), the deployment, the rates
    assert main(["compare", *_FLAGS]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("rollsim compare: 2048 slots x ") and "decode_throughput_table" not in lines[0]
    assert lines[1] == deployment_words(_deployment(), base)
    assert lines[2].startswith("compared over the same 600 s: ")


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # short runs: the trajectories, not the steps
def test_agentic_preset_on_a_deployment_is_sized_by_its_pool(capsys):
    """The preset's ``max_trajectories`` (2 x rollout_slots: 512 on the default 256 slots) was kept when
    its Agentic was put on a deployment of 2,048 slots; the CLI applies the preset to the deployment's
    pool and leaves the prefill speed to the deployment."""
    from rollsim import trajectories

    flags = ["--model", "Qwen3-8B", "--gpu", "H100", "--rollout-gpus", "2", "--group-size", "8", "--batch-size", "64",
             "--horizon-s", "120", "--agentic-preset", "code-interpreter-math", "--max-context-tokens", "32768"]
    assert main(["run", *flags]) == 0
    out, err = capsys.readouterr()
    d = Deployment(model="Qwen3-8B", gpu="H100", rollout_gpus=2, train_gpus=2)  # --train-gpus: the rollout's
    pool = d.instances * d.slots_per_instance
    preset = trajectories.code_interpreter_math(Scenario(rollout_slots=pool, group_size=8, batch_size=64))
    assert preset.agentic.max_trajectories == 2 * pool == 4096
    import dataclasses

    ag = dataclasses.replace(preset.agentic, max_context_tokens=32768.0)
    sc = d.scenario(lengths=preset.lengths, prompts_per_step=8, group_size=8, horizon_s=120.0, agentic=ag)
    assert out == _json(_undefined_max(simulate(sc, record="summary").summary)) + "\n"
    assert sc.prefill_tokens_per_s != trajectories.CODE_INTERPRETER_PREFILL_TOKENS_PER_S  # the deployment's
    assert "agentic.max_trajectories 4096 (2 x the 2048 slots; --max-trajectories N to change it)" in err
    assert "rollsim: note:" not in err


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")  # short runs: the trajectories, not the steps
def test_max_trajectories_below_the_pool_is_said(tmp_path, capsys):
    """A scenario file's ``max_trajectories`` (written for another pool) below the slots: a note on
    stderr naming the field and the flag; none when the flag gives it."""
    f = tmp_path / "a.toml"
    f.write_text("group_size = 8\nbatch_size = 64\nhorizon_s = 30\n[agentic]\nmax_trajectories = 512\n")
    assert main(["run", str(f), "--rollout-slots", "2048"]) == 0
    err = capsys.readouterr().err
    assert ("rollsim: note: agentic.max_trajectories = 512 is below the 2048 rollout slots: at most 512 of them are "
            "ever busy (a trajectory holds one slot at a time); give --max-trajectories N (or none: unbounded) to "
            "change it\n") in err
    assert main(["run", str(f), "--rollout-slots", "2048", "--max-trajectories", "512"]) == 0
    assert "rollsim: note:" not in capsys.readouterr().err


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
def test_compare_rates_are_over_the_same_horizon():
    """``steps`` counts a batch pipeline's last step, which ends after the horizon (synchronous:
    11 steps over 7,621 s against fully async's 34 over 7,200 s); the rates count the steps ended by
    ``horizon_s`` and their tokens over ``horizon_s`` for every pipeline."""
    sc = Scenario(rng="python")
    df = rollsim.compare(sc)
    rows = {r["pipeline"]: r for r in df.iter_rows(named=True)}
    sync = rows["synchronous"]
    assert sync["steps"] == 11 and sync["end_s"] > sc.horizon_s
    steps = simulate(sc.replace(pipeline=rollsim.Synchronous()), record="summary").steps
    by = steps.filter(pl.col("completed") & (pl.col("end_s") <= sc.horizon_s))
    assert sync["steps_by_horizon"] == by.height == 10
    assert sync["steps_per_hour"] == 5.0
    assert sync["tokens_trained_per_s"] == float(by["tokens"].sum()) / 7200.0
    assert round(sync["tokens_trained_per_s"]) == 2249
    fa = rows["fully async"]
    assert (fa["steps"], fa["steps_by_horizon"], fa["steps_per_hour"], round(fa["tokens_trained_per_s"])) == (
        34, 34, 17.0, 7470)
    assert round(rows["one-step async"]["tokens_trained_per_s"]) == 2464
    assert round(rows["fully async, cap 2"]["tokens_trained_per_s"]) == 6629


def test_split_reports_the_kv_wait_within_rollout_utilization(capsys):
    """split's ``rollout util`` counts slots with a request, those waiting for KV too (100 % with a
    fifth of the slot time waiting): ``kv_wait_fraction`` says how much of it waits."""
    from rollsim.resources import disaggregated, gpu_split

    base = Scenario(rollout_slots=64, slots_per_instance=64, decode_tokens_per_s=50.0, kv_cache_tokens=60_000.0,
                    batch_size=64, horizon_s=600.0, lengths=LogNormal(7.0, 1.0, 8192.0))
    res = gpu_split(base, 3, gpus_per_instance=1, slots_per_instance=64, gpu_s_per_token=1e-4)
    row = res.table.row(0, named=True)
    one = disaggregated(base, rollout_gpus=1, train_gpus=2, gpus_per_instance=1, slots_per_instance=64,
                        gpu_s_per_token=1e-4)
    s = simulate(one, record="summary").summary
    assert row["kv_wait_fraction"] == s["kv_wait_s"] / (64 * s["end_s"])
    assert row["rollout_utilization"] == 1.0 and 0.3 < row["kv_wait_fraction"] < 0.9
    assert main(["split", "--gpus", "3", "--slots-per-instance", "64", "--kv-cache-tokens", "60000",
                 "--decode-tokens-per-s", "50", "--batch-size", "64", "--horizon-s", "600", "--mu", "7",
                 "--max-tokens", "8192", "--gpu-s-per-token", "1e-4"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[7:11] == ["rollout", "util", "kv", "wait"]
    assert lines[2].split()[5:7] == ["100%", f"{row['kv_wait_fraction']:.0%}"]
    assert not math.isnan(row["kv_wait_fraction"])


@pytest.mark.filterwarnings("default::rollsim.GenerationOutrunsTrainingWarning")  # said on stderr, checked below
def test_warnings_of_a_deployment_run_name_the_deployment_flags(capsys):
    """With ``--model`` the pool is the deployment's: a warning advising fewer rollout slots names
    ``--rollout-gpus`` (``--rollout-slots`` is refused with ``--model``)."""
    assert main(["run", "--model", "Qwen3-8B", "--gpu", "H100", "--rollout-gpus", "2", "--batch-size", "64",
                 "--horizon-s", "600"]) == 0
    err = capsys.readouterr().err
    assert ("staleness grows without bound. Add a staleness cap, fewer --rollout-gpus, or a larger --batch-size.\n"
            in err)
    assert "--rollout-slots" not in err


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
@pytest.mark.parametrize("extra, kw", [
    ([], {}),                                                                  # the deployment's default: shared
    (["--prefill-mode", "per_slot"], {"prefill_mode": "per_slot"}),            # given: kept
    (["--max-num-batched-tokens", "4096"], {"max_num_batched_tokens": 4096}),  # a step budget: shared steps
])
def test_run_model_takes_the_deployments_prefill_unless_given(capsys, extra, kw):
    """The command line passes the prefill mode and the step budget only when given, so its default is the
    deployment's (shared steps, so that a KV preemption's recompute costs), as in Python; before, it passed the
    scenario's own default (per-slot, the recompute free), and a step budget alone was refused."""
    assert main(["run", *_FLAGS, *extra]) == 0
    out, _ = capsys.readouterr()
    sc = _python_scenario(**kw)
    assert sc.prefill_mode == ("per_slot" if extra[:1] == ["--prefill-mode"] else "shared")
    assert out == _json(_undefined_max(simulate(sc, record="summary").summary)) + "\n"
