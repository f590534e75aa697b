"""A new user's defects in whatif / run / validate / split: a staleness cap below the sync cadence
livelocks (said, not footnoted as "raise --steps"); ``--out`` over a previous run's results needs
``--force``; ``validate --resources --notes`` says the sign of its residuals; ``split`` names what it
searched before its table."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest

from rollsim import FullyAsync, Scenario, StalenessCapLivelockWarning, simulate
from rollsim.cli import main
from rollsim.simulation import staleness_cap_livelock

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "python/rollsim/examples/configs/verl_fully_async.sh"
METRICS = ROOT / "python/rollsim/examples/configs/verl_fully_async_metrics.csv"


@pytest.mark.parametrize("n", [2, 4, 8])
def test_a_cap_below_the_cadence_trains_cap_plus_one_steps_then_nothing(n):
    """The engine against staleness_cap_livelock's bound: with sync_every = n, every cap below n - 1
    trains exactly cap + 1 steps in 2 h (then drops every sample), with the warning; the cap n - 1
    keeps training, without it. Either staleness_check gives the same bound."""
    for check in ("start", "finish"):
        for cap in range(n):
            sc = Scenario(pipeline=FullyAsync(max_staleness=cap), sync_every=n, staleness_check=check)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                s = simulate(sc, record="summary").summary
            said = [w for w in caught if w.category is StalenessCapLivelockWarning]
            if cap < n - 1:
                assert s["steps"] == cap + 1 and s["drop_fraction"] > 0.75, (n, cap, check, s["steps"])
                assert len(said) == 1 and staleness_cap_livelock(sc) is not None
                assert str(said[0].message).startswith(f"pipeline.max_staleness = {cap} is below sync_every - 1 = "
                                                       f"{n - 1}: ")
                assert str(said[0].message).endswith(
                    f"The smallest pipeline.max_staleness that trains is {n - 1} (or sync_every <= {cap + 1}); this run "
                    f"trained {cap + 1} step{'s' if cap else ''} in {s['end_s']:.0f} s and dropped "
                    f"{s['drop_fraction']:.1%} of its finished samples")
            else:
                assert s["steps"] > 20 and not said and staleness_cap_livelock(sc) is None, (n, cap, check)


@pytest.mark.filterwarnings("default::rollsim.StalenessCapLivelockWarning")  # said on stderr, checked below
def test_run_says_why_a_capped_run_with_a_cadence_stops_training(capsys):
    assert main(["run", "--pipeline", "fully-async", "--max-staleness", "0", "--sync-every", "8"]) == 0
    out, err = capsys.readouterr()
    assert '"steps": 1,' in out
    assert err == (
        "rollsim: warning: --max-staleness = 0 is below --sync-every - 1 = 7: staleness counts policy versions (training "
        "steps) and the rollout loads new weights only every 8 steps (--sync-every = 8), so the k-th step after a load "
        "can train only samples at least k - 1 versions old; after 1 step every finished sample is over the cap and "
        "dropped, the next weights never reach the rollout and training stops for good (a livelock, whatever the "
        "horizon). The smallest --max-staleness that trains is 7 (or --sync-every <= 1); this run trained 1 step in "
        "7200 s and dropped 97.1% of its finished samples\n")
    # the smallest cap that trains: no warning, training goes on
    assert main(["run", "--pipeline", "fully-async", "--max-staleness", "7", "--sync-every", "8"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and int(out.split('"steps": ')[1].split(",")[0]) > 20


@pytest.fixture(scope="module")
def calibrated():
    from rollsim import configs
    from rollsim.calibration import calibrate

    return calibrate(METRICS, configs.load(CONFIG), bootstrap=20)


def test_whatif_reports_a_livelocked_cap_without_simulating_it(calibrated):
    from rollsim.what_if import whatif

    assert calibrated.scenario.sync_every == 8
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = whatif(calibrated, [{"max_staleness": 0}, {"max_staleness": 7}], draws=0, steps=8)
    assert df["variant"].to_list() == ["baseline", "max_staleness=0", "max_staleness=7"]
    stuck = df.row(1, named=True)
    assert stuck["cannot_train"] == (
        "max_staleness = 0 is below sync_every - 1 = 7: staleness counts policy versions (training steps) and the "
        "rollout loads new weights only every 8 steps (sync_every = 8), so the k-th step after a load can train only "
        "samples at least k - 1 versions old; after 1 step every finished sample is over the cap and dropped, the next "
        "weights never reach the rollout and training stops for good (a livelock, whatever the horizon). The smallest "
        "max_staleness that trains is 7 (or sync_every <= 1)")
    assert all(math.isnan(stuck[c]) for c in ("step_s", "step_s_low", "tokens_per_s", "drop_fraction",
                                               "staleness_mean"))
    assert stuck["samples_per_row"] == 8 * calibrated.scenario.batch_size and stuck["pipeline"] == "FullyAsync"
    # the smallest cap that trains is simulated as any row
    assert df["cannot_train"][0] is None and df["cannot_train"][2] is None
    assert math.isfinite(df["step_s"][2]) and df["step_s"][2] > df["step_s"][0]
    said = [str(w.message) for w in caught if w.category is StalenessCapLivelockWarning]
    assert len(said) == 1 and said[0].startswith(
        "1 of 3 rows cannot train and were not simulated (max_staleness=0: their metrics are NaN, the column "
        "cannot_train says why): max_staleness below sync_every - 1 = 7 cannot train: ")
    assert said[0].endswith("The smallest max_staleness that trains is 7")


@pytest.mark.filterwarnings("default::rollsim.StalenessCapLivelockWarning")  # csv: said on stderr, checked below
def test_whatif_table_gives_the_true_reason_not_raise_steps(capsys):
    assert main(["whatif", "--config", str(CONFIG), "--metrics", str(METRICS), "--max-staleness", "0,1,7",
                 "--bootstrap", "20", "--draws", "0", "--steps", "8"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    rows = {ln.split()[0]: ln.split() for ln in lines[4:8]}
    assert set(rows) == {"baseline", "max_staleness=0!", "max_staleness=1!", "max_staleness=7"}
    assert rows["max_staleness=0!"][2:] == ["-"] * 8 and rows["max_staleness=7"][2] != "-"
    assert "raise --steps" not in out and "step_s*" not in lines[2]  # the capped rows mark no column
    assert lines[-1] == (
        "! not simulated: --max-staleness below sync_every - 1 = 7 cannot train: staleness counts policy versions "
        "(training steps) and the rollout loads new weights only every 8 steps (sync_every = 8), so the k-th step after "
        "a load can train only samples at least k - 1 versions old; such a cap trains cap + 1 steps, then every "
        "finished sample is over it and dropped, the next weights never reach the rollout and training stops for good "
        "(a livelock, whatever the horizon or the steps simulated). The smallest --max-staleness that trains is 7 (the "
        "config's sync cadence: sync_every = 8 from its async_training.trigger_parameter_sync_step)")
    assert "StalenessCapLivelock" not in err and "cannot train" not in err  # the table says it
    # csv: every column, cannot_train among them, and the warning on stderr
    assert main(["whatif", "--config", str(CONFIG), "--metrics", str(METRICS), "--max-staleness", "1",
                 "--bootstrap", "20", "--draws", "0", "--steps", "8", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].endswith(",cannot_train") and "max_staleness = 1 is below sync_every - 1 = 7" in out
    assert "rollsim: warning: 1 of 2 rows cannot train and were not simulated (max_staleness=1: " in err


def test_run_out_needs_force_over_a_previous_run(tmp_path, capsys):
    out = tmp_path / "r"
    assert main(["run", "--horizon-s", "600", "--out", str(out)]) == 0
    first = (out / "summary.json").read_text()
    assert main(["run", "--horizon-s", "900", "--out", str(out)]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"rollsim: error: --out: '{out}' already holds the results of a previous `rollsim run` (samples.parquet); give "
        f"--force to replace them, or another directory")
    assert (out / "summary.json").read_text() == first  # untouched
    assert main(["run", "--horizon-s", "900", "--out", str(out), "--force"]) == 0
    assert (out / "summary.json").read_text() != first and "horizon_s = 900.0" in (out / "scenario.toml").read_text()


def test_compare_out_force_leaves_no_file_of_the_previous_compare(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["compare", "--horizon-s", "600", "--out", str(out)]) == 0
    assert (out / "samples_fully_async_cap_2.parquet").exists()
    assert main(["compare", "--horizon-s", "600", "--max-staleness", "3", "--out", str(out)]) == 2
    assert "already holds the results of a previous `rollsim compare` (compare.parquet)" in capsys.readouterr().err
    assert main(["compare", "--horizon-s", "600", "--max-staleness", "3", "--out", str(out), "--force"]) == 0
    tags = sorted(p.name for p in out.glob("samples_*.parquet"))
    assert tags == ["samples_fully_async.parquet", "samples_fully_async_cap_3.parquet",
                    "samples_one_step_async.parquet", "samples_synchronous.parquet"]


def test_validate_resources_notes_says_the_sign_of_every_residual(capsys):
    from rollsim.hardware import validation

    assert main(["validate", "--resources", "--notes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("fitted terms: ")
    assert lines[1] == ("residual of each fitted row = predicted / measured time - 1 (the fit works on times: a "
                        "throughput row's error in the table below, in tok/s, has the opposite sign)")
    switch = lines.index("error = predicted / measured - 1 (seconds; + means predicted above measured); fit: a row of "
                         "the fit, check: held out")
    assert lines[switch - 1].startswith("switch fit: ")
    table = lines.index("error = predicted / measured - 1 in the row's quantity (as the README tables: + means "
                        "predicted above measured), then the row, its quantity, measured, predicted and source; * held "
                        "out of the fit")
    assert table > switch
    # the labels are true: a throughput row's residual is measured / predicted - 1 of its tok/s (opposite sign),
    # a time row's the same as its error, and the table's error is predicted / measured - 1
    res = validation.fit()["residuals"]
    rows = {r["label"]: r for r in validation.table().iter_rows(named=True)}
    tput, tpot = rows["gpt-oss-120b H100 TP1"], rows["Qwen3-0.6B A100 conc 1"]
    assert tput["quantity"] == "output tok/s" and tput["error"] == pytest.approx(tput["predicted"] / tput["measured"] - 1)
    assert tput["error"] < 0 < res["gpt-oss-120b H100 TP1"]
    assert res["gpt-oss-120b H100 TP1"] == pytest.approx(tput["measured"] / tput["predicted"] - 1, abs=0.005)
    assert tpot["quantity"] == "TPOT ms" and res["Qwen3-0.6B A100 conc 1"] == pytest.approx(tpot["error"], abs=0.005)
    assert any(ln.startswith("  -6.6%  gpt-oss-120b H100 TP1 ") for ln in lines[table + 1:])


def test_split_names_what_it_searched_before_the_table_not_in_csv(capsys):
    argv = ["split", "--gpus", "4", "--gpus-per-instance", "2", "--gpu-s-per-token", "0.004", "--horizon-s", "600",
            "--pipeline", "one-step"]
    assert main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == ("rollsim split: 4 GPUs, rollout 2 (instances of 2 GPUs x 64 slots x 30 tokens/s, no KV capacity limit), training the "
                        "rest at 0.004 GPU-s per token + 0 s per step, pipeline one-step; objective: most tokens trained "
                        "per second (limits: at least 6 training steps, generation does not outrun training, "
                        "drop_fraction <= 5.0%); batch 512, 600 s, lengths lognormal(mu=7.6, sigma=1), max 16384 "
                        "tokens, rng=fast, seed=0")
    assert lines[1].startswith("rollout train  slots")
    assert main([*argv, "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("placement,rollout_gpus,")
