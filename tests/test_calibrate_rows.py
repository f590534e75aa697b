"""Calibration on metrics logged once per several training steps (rollsim.calibrate's
``steps_per_row``; the verl fully async recipe logs one row per weight sync, its ``timing_s/*``
summed over ``trigger_parameter_sync_step`` local updates: volcengine/verl
``verl/experimental/fully_async_policy/detach_utils.py``, ``MetricsAggregator``): recovery of a known
fully asynchronous scenario from such rows, the what-if frame in the logged unit, verl's
``timing_s/param_sync`` (timed outside ``timing_s/step``), and the shipped fully async example end to
end through ``rollsim whatif``."""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from rollsim import FullyAsync, LengthDrift, LogNormal, Scenario, Synchronous, configs, simulate
from rollsim.calibration import calibrate, fit, normalize, pause_on_critical_path, read_metrics, synthetic_metrics
from rollsim.cli import main
from rollsim.what_if import _measure, whatif

EX = configs.EXAMPLES
K = 4
PAUSE = 120.0  # the rollout's pause at each weight load: once per row, 30 s per step
TRUE = dict(decode_tokens_per_s=40.0, rollout_pause_s=PAUSE, train_step_s=30.0, train_s_per_token=4e-5,
            weight_sync_s=2.0)
MU, SIGMA, DRIFT, ROWS = 6.0, 0.5, 0.008, 40


def logged_rows(sc: Scenario, rows: int, k: int, drift: float, seed: int = 2) -> pl.DataFrame:
    """Metrics of a fully asynchronous run as verl logs them, one row per ``k`` steps (generic names):
    each step's generation, training and sync phases (rollsim.calibration.synthetic_metrics, 1 % noise,
    no pause) summed over the row's steps as verl's MetricsAggregator sums ``timing_s/*``, plus the
    rollout's one pause at the row's weight load; the answers' mean averaged and their max the max over
    the row; ``step_s`` the row's wall time in rollsim's fully asynchronous run of ``sc`` (its lengths
    drifting by ``exp(drift)`` per policy version)."""
    per = synthetic_metrics(sc.replace(sync_every=1, rollout_pause_s=0.0), k * rows, drift=drift, noise=0.01, seed=seed)
    pause = sc.rollout_pause_s
    out = (per.with_columns(row=pl.col("step") // k).group_by("row", maintain_order=True)
           .agg(pl.col("gen_s").sum() + pause, pl.col("train_s").sum(), pl.col("sync_s").sum(),
                pl.col("response_mean").mean(), pl.col("response_max").max(), pl.col("response_clip_ratio").mean())
           .rename({"row": "step"}))
    run = simulate(sc.replace(length_drift=LengthDrift("exp", rate=drift), horizon_s=1e7), record="summary").steps
    ends = run["end_s"].to_numpy()[k - 1::k][:rows]
    assert len(ends) == rows
    return out.with_columns(step_s=pl.Series(np.diff(np.concatenate([[0.0], ends]))))


def example_rows() -> pl.DataFrame:
    """The rows of ``verl_fully_async_metrics.csv``: the config's imported scenario with the parameters of
    :func:`test_shipped_fully_async_example_end_to_end`, rounded to 4 decimals."""
    sc = configs.load(EX / "verl_fully_async.sh").scenario.replace(
        decode_tokens_per_s=45.0, rollout_pause_s=80.0, train_step_s=12.0, train_s_per_token=3e-5, weight_sync_s=0.75,
        lengths=LogNormal(6.3, 0.6, max_tokens=8192.0))
    cols = ["step", "step_s", "gen_s", "train_s", "sync_s", "response_mean", "response_max", "response_clip_ratio"]
    return logged_rows(sc, 30, 8, 0.003, seed=5).select(cols).with_columns(pl.col(pl.Float64).round(4))


@pytest.fixture(scope="module")
def case():
    sc = Scenario(rollout_slots=512, batch_size=512, group_size=8, sync_every=K,
                  pipeline=FullyAsync(max_lag_samples=2 * K * 512), lengths=LogNormal(mu=MU, sigma=SIGMA, max_tokens=8192),
                  **TRUE)
    m = logged_rows(sc, ROWS, K, DRIFT)
    return sc, m, calibrate(m, sc, bootstrap=50, steps_per_row=K)


def test_rows_of_four_steps_recover_every_parameter(case):
    sc, m, cal = case
    got = dict(zip(cal.params["name"], cal.params["value"]))
    # per rollsim step: the row's fixed costs over its 4 steps, its one sync spread over them
    want = {"lengths.mu": MU, "lengths.sigma": SIGMA, "lengths.drift": DRIFT, "decode_tokens_per_s": 40.0,
            "gen_overhead_s": PAUSE / K, "train_step_s": 30.0, "train_s_per_token": 4e-5, "weight_sync_s": 2.0,
            "weight_sync_s_per_sync": 8.0}
    for name, value in want.items():
        assert got[name] == pytest.approx(value, rel=0.05), name
    # and every truth inside its bootstrap interval; the overhead's is the widest (about -25 / +25 % here:
    # a row logs the longest answer of its 4 x 512, not each step's, so the steps' waits are inferred)
    for row in cal.params.iter_rows(named=True):
        if row["name"] in want:
            assert row["low"] <= want[row["name"]] <= row["high"], row["name"]
    ov = cal.params.filter(pl.col("name") == "gen_overhead_s").row(0, named=True)
    assert 0.15 < (ov["high"] - ov["low"]) / ov["value"] < 0.8
    assert cal.steps_per_row == K and cal.residuals.height == ROWS
    assert cal.residuals["step"].to_list() == m["step"].cast(pl.Float64).to_list()  # the logged steps, per row
    # the scenario per rollsim step: batch 512, a weight load (and its pause) every 4 steps
    fitted = cal.scenario
    assert (fitted.batch_size, fitted.sync_every, fitted.pipeline) == (512, K, sc.pipeline)
    assert fitted.rollout_pause_s == pytest.approx(PAUSE, rel=0.05)
    assert fitted.weight_sync_s == pytest.approx(2.0, rel=0.05)


def test_the_baseline_row_time_matches(case):
    sc, m, cal = case
    df = whatif(cal, [{"pipeline": "sync"}], draws=3)
    base = df.row(0, named=True)
    assert (base["steps_per_row"], base["samples_per_row"]) == (K, K * 512)
    truth = sc.replace(**{"lengths.mu": MU + DRIFT * cal.reference_step})
    want = _measure(truth, 12, 0, K)                        # the known scenario's row: 4 steps, one sync
    assert base["step_s"] == pytest.approx(want["step_s"], rel=0.05)
    assert abs(base["error"]) < 0.05                         # against the rows' own mean wall time
    assert base["measured_step_s"] == pytest.approx(float(m["step_s"].mean()))
    assert base["tokens_per_s"] == pytest.approx(want["tokens_per_s"], rel=0.05)
    # a synchronous variant, still per 4 steps of 512 samples
    sync = _measure(truth.replace(pipeline=Synchronous()), 12, 0, K)
    assert df["samples_per_row"][1] == K * 512
    assert df["step_s"][1] == pytest.approx(sync["step_s"], rel=0.05)
    assert df["step_s"][1] > 2 * base["step_s"]


def test_the_same_rows_read_as_one_step_each_misfit(case):
    # what calibrate did before steps_per_row: a row read as one step of 512 samples puts the 4 updates'
    # fixed cost in one step and the decode speed on the row's longest answer
    sc, m, cal = case
    one = calibrate(m, sc, bootstrap=0, steps_per_row=1)
    assert one.values["train_step_s"] > 3 * cal.values["train_step_s"]
    assert one.values["weight_sync_s"] == pytest.approx(K * cal.values["weight_sync_s"])


def test_measured_rows_hold_whole_sync_windows():
    # one slot, answers of about 1 token at 1 token/s, 0.5 s steps + a 2 s sync spread as 0.5 s per step,
    # synchronous: a step lasts about 1 s of generation + 1 s, a row of 4 steps 4 times the per-step mean
    sc = Scenario(rollout_slots=1, batch_size=1, decode_tokens_per_s=1.0, train_step_s=0.5, weight_sync_s=0.5,
                  lengths=LogNormal(mu=0.0, sigma=0.01, max_tokens=1.0), pipeline=Synchronous(), sync_every=4)
    one, four = _measure(sc, 12, 0), _measure(sc, 12, 0, 4)
    assert one["step_s"] == pytest.approx(2.0, rel=0.01)
    assert four["step_s"] == pytest.approx(4 * one["step_s"], rel=1e-3)
    assert four["tokens_per_s"] == pytest.approx(one["tokens_per_s"], rel=1e-3)


def test_verl_param_sync_is_outside_the_step():
    # verl's fully async trainer times timing_s/param_sync after the row's updates, outside timing_s/step
    # (fully_async_trainer.py, _trigger_parameter_sync_after_step); the row's wall time is their sum and
    # the sync is neither subtracted from the step nor counted twice
    rows = pl.DataFrame({"timing_s/step": [100.0, 110.0, 120.0, 105.0], "timing_s/gen": [60.0, 66.0, 72.0, 63.0],
                         "timing_s/update_actor": [40.0, 44.0, 48.0, 42.0], "timing_s/param_sync": [8.0] * 4,
                         "response_length/mean": [400.0, 440.0, 480.0, 420.0],
                         "response_length/max": [2000.0, 2300.0, 2600.0, 2150.0]})
    norm, fw, src = normalize(rows)
    assert src["step_s"] == "timing_s/step + timing_s/param_sync" and src["sync_s"] == "timing_s/param_sync"
    assert norm["step_s"].to_list() == [108.0, 118.0, 128.0, 113.0]
    sc = Scenario(rollout_slots=64, batch_size=64, sync_every=4, pipeline=Synchronous(),
                  lengths=LogNormal(mu=6.0, sigma=0.5, max_tokens=4096))
    cal = calibrate(rows, sc, bootstrap=0, steps_per_row=4)
    assert cal.values["weight_sync_s"] == 2.0                 # 8 s once per row, over its 4 steps
    assert cal.residuals["step_s_measured"].to_list() == [108.0, 118.0, 128.0, 113.0]
    # the colocated trainer times timing_s/update_weights inside timing_s/step: not added
    colo = rows.rename({"timing_s/param_sync": "timing_s/update_weights"})
    assert normalize(colo)[0]["step_s"].to_list() == [100.0, 110.0, 120.0, 105.0]


def test_imported_fully_async_config_sets_the_rows():
    imp = configs.load(EX / "verl_fully_async.sh")
    assert imp.steps_per_logged_step == 8
    m = read_metrics(EX / "verl_fully_async_metrics.csv")  # its header comment skipped
    cal = calibrate(m, imp, bootstrap=0)
    assert cal.steps_per_row == 8
    assert calibrate(m, imp, bootstrap=0, steps_per_row=8).values == cal.values
    # a colocated config: one step per row, as before
    assert calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=0).steps_per_row == 1


def test_shipped_fully_async_example_end_to_end(capsys):
    """The verl fully async example (8 local updates of 32 prompts x 8 answers per sync) and its rows,
    generated by ``logged_rows(sc, 30, 8, 0.003, seed=5)`` (rounded to 4 decimals) with decode 45
    tokens/s, an 80 s pause per sync, 12 s + 3e-5 s/token per update, 6 s per sync (0.75 s per step) and
    lengths ``LogNormal(6.3, 0.6)`` on the scenario the config imports as (its rollouter's staleness count
    restarted at each parameter sync: ``lag_release="sync"``): calibrated through the importer, then
    ``rollsim whatif``."""
    imp = configs.load(EX / "verl_fully_async.sh")
    assert imp.scenario.pipeline.lag_release == "sync"
    assert read_metrics(EX / "verl_fully_async_metrics.csv").equals(example_rows())  # the file is what it says
    cal = calibrate(EX / "verl_fully_async_metrics.csv", imp, bootstrap=20)
    got = {r["name"]: r for r in cal.params.iter_rows(named=True)}
    # every generating parameter within 5 %; the pause per sync (80 s, 10 s per step) from the rows' wall time
    # (the rollout waits for each sync, then pauses: on the rows' critical path), the speed from gen_s through it
    for name, value in {"train_step_s": 12.0, "train_s_per_token": 3e-5, "weight_sync_s": 0.75,
                        "weight_sync_s_per_sync": 6.0, "lengths.mu": 6.3, "lengths.drift": 0.003,
                        "lengths.sigma": 0.6, "gen_overhead_s": 10.0, "decode_tokens_per_s": 45.0}.items():
        assert got[name]["value"] == pytest.approx(value, rel=0.05), name
    assert cal.scenario.rollout_pause_s == pytest.approx(80.0, rel=0.05)
    assert got["gen_overhead_s"]["low"] <= 10.0 <= got["gen_overhead_s"]["high"]
    assert len(cal.notes) == 1 and "the pause is on the rows' critical path: gen_overhead_s is the one whose " \
        "simulated rows" in cal.notes[0]
    assert float(cal.residuals["step_error"].abs().max()) < 0.06  # every row's, from the simulated rows
    assert main(["whatif", "--config", str(EX / "verl_fully_async.sh"), "--metrics",
                 str(EX / "verl_fully_async_metrics.csv"), "--pipeline", "sync", "--bootstrap", "20", "--draws", "2"]) == 0
    out = capsys.readouterr().out
    head = re.search(r"baseline predicted ([\d.]+) s per metrics row vs measured ([\d.]+) s \(([-+][\d.]+) %\)", out)
    assert head is not None, out
    assert abs(float(head.group(3))) < 5.0
    assert "seconds per metrics row = 8 training steps (samples_per_row: 2048" in out


K2, PAUSE2 = 4, 30.0  # a second fully async scenario: a sync every 4 steps, a 30 s pause at each


def _gated(pause: float = PAUSE2, max_lag: int = 5 * 256) -> Scenario:
    """Fully async, a lag bound freed only at the sync (lag_release="sync", verl's rollouter), 4 steps of 32
    prompts x 8 answers per sync on 512 slots: after each sync the trainer has one batch left (1,280 - 1,024
    samples) while the rollout pauses, so a pause longer than one step is on the row's critical path."""
    return Scenario(rollout_slots=512, batch_size=256, group_size=8, sync_every=K2,
                    pipeline=FullyAsync(max_lag_samples=max_lag, lag_release="sync"),
                    lengths=LogNormal(mu=6.0, sigma=0.5, max_tokens=4096), decode_tokens_per_s=60.0,
                    rollout_pause_s=pause, train_step_s=8.0, train_s_per_token=2e-5, weight_sync_s=1.0)


@pytest.fixture(scope="module")
def gated():
    sc = _gated()
    m = logged_rows(sc, 40, K2, 0.004, seed=3)
    return sc, m, calibrate(m, sc, bootstrap=20, steps_per_row=K2)


def test_a_pause_on_the_critical_path_is_recovered_from_the_wall_time(gated):
    sc, m, cal = gated
    got = {r["name"]: r for r in cal.params.iter_rows(named=True)}
    want = {"lengths.mu": 6.0, "lengths.sigma": 0.5, "lengths.drift": 0.004, "decode_tokens_per_s": 60.0,
            "gen_overhead_s": PAUSE2 / K2, "train_step_s": 8.0, "train_s_per_token": 2e-5, "weight_sync_s": 1.0,
            "weight_sync_s_per_sync": 4.0}
    for name, value in want.items():
        assert got[name]["value"] == pytest.approx(value, rel=0.05), name
    assert cal.scenario.rollout_pause_s == pytest.approx(PAUSE2, rel=0.05)
    assert got["gen_overhead_s"]["low"] <= PAUSE2 / K2 <= got["gen_overhead_s"]["high"]
    assert len(cal.notes) == 1 and "(every 4 steps): the pause is on the rows' critical path" in cal.notes[0]
    # gen_s alone puts the pause where its intercept and the speed trade off: the rows' wall time moves it
    alone = fit(cal.metrics, batch=256, slots=512, cap=4096.0, steps_per_row=K2)
    assert cal.values["gen_overhead_s"] != alone["gen_overhead_s"]
    # the baseline against its rows and against the known scenario, and a synchronous alternative
    df = whatif(cal, [{"pipeline": "sync"}], draws=3)
    truth = sc.replace(**{"lengths.mu": 6.0 + 0.004 * cal.reference_step})
    assert abs(df["error"][0]) < 0.05
    assert df["step_s"][0] == pytest.approx(_measure(truth, 12, 0, K2)["step_s"], rel=0.05)
    assert df["step_s"][1] == pytest.approx(_measure(truth.replace(pipeline=Synchronous()), 12, 0, K2)["step_s"],
                                            rel=0.05)


def test_a_pause_off_the_critical_path_is_left_to_gen_s():
    # a bound of twelve batches beyond the row's and an 8 s pause: the trainer never runs out while the rollout
    # pauses, the rows' wall time does not depend on the pause, and gen_s's intercept is kept (here 5.3 s per
    # step for 2: gen_s alone does not place the pause, as the note says)
    sc = _gated(pause=8.0, max_lag=16 * 256)
    m = logged_rows(sc, 40, K2, 0.004, seed=3)
    cal = calibrate(m, sc, bootstrap=0, steps_per_row=K2)
    alone = fit(cal.metrics, batch=256, slots=512, cap=4096.0, steps_per_row=K2)
    assert cal.values["gen_overhead_s"] == alone["gen_overhead_s"]
    assert cal.values["decode_tokens_per_s"] == alone["decode_tokens_per_s"]
    assert len(cal.notes) == 1 and "the trainer set the pace): gen_overhead_s kept" in cal.notes[0]
    assert abs(float(cal.residuals["step_error"].mean())) < 0.02
    assert pause_on_critical_path(sc) and not pause_on_critical_path(sc.replace(pipeline=FullyAsync(max_lag_samples=1280)))
    assert not pause_on_critical_path(sc.replace(pipeline=Synchronous()))


def test_verl_training_options_are_noted_as_calibrated(tmp_path):
    # FSDP offload and sharding size and activation checkpointing change the training cost, which the
    # calibration measures as a whole
    script = tmp_path / "run.sh"
    opts = ["actor_rollout_ref.actor.fsdp_config.param_offload=True",
            "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True", "actor_rollout_ref.actor.fsdp_config.fsdp_size=8",
            "actor_rollout_ref.ref.fsdp_config.param_offload=True", "actor_rollout_ref.model.enable_gradient_checkpointing=True"]
    script.write_text("python -m verl.trainer.main_ppo " + " ".join(opts) + "\n")
    notes = {n.option: n for n in configs.load(script).notes}
    for o in opts:
        name, _, value = o.partition("=")
        assert (notes[name].value, notes[name].became, notes[name].kind) == (
            value, "ignored: part of the calibrated training cost (not modelled separately)", "ignored")


def test_verl_fully_async_gen_is_the_trainer_wait(capsys, tmp_path):
    # verl's fully async trainer times "gen" around its wait for samples (fully_async_trainer.py, fit:
    # marked_timer("gen") around _get_samples_from_queue): the calibration says how it read it, and the
    # commands print that on stderr
    fa = configs.load(EX / "verl_fully_async.sh")
    generic = calibrate(EX / "verl_fully_async_metrics.csv", fa, bootstrap=0).notes  # the generic gen_s: no wait
    assert len(generic) == 1 and generic[0].startswith("rollout_pause_s: ")  # only where the pause was placed
    colocated = calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=0)
    assert colocated.notes == ()
    true = fa.scenario.replace(decode_tokens_per_s=20.0, rollout_pause_s=30.0, train_step_s=8.0, train_s_per_token=2e-5,
                               weight_sync_s=0.5, **{"lengths.mu": 6.3, "lengths.sigma": 0.5})
    path = tmp_path / "m.csv"
    verl_fully_async_rows(true, 12, 0.003).write_csv(path)
    assert main(["calibrate", "--config", str(EX / "verl_fully_async.sh"), "--metrics", str(path),
                 "--bootstrap", "0"]) == 0
    err = capsys.readouterr().err
    assert "rollsim: note: gen_s: timing_s/gen of a fully asynchronous run is the trainer's wait for samples" in err


def verl_fully_async_rows(sc: Scenario, rows: int, drift: float) -> pl.DataFrame:
    """A fully asynchronous run simulated by rollsim, logged as verl's fully async trainer logs it:
    one row per ``sc.sync_every`` local updates, ``timing_s/gen`` the trainer's wait for samples,
    ``timing_s/update_actor`` the update, ``timing_s/step`` their sum (every ``timing_s/*`` summed
    over the row), ``timing_s/param_sync`` the row's sync (timed outside the step), the trained
    answers' mean and max over the row (the first row, the warm-up, left out)."""
    k = sc.sync_every
    res = simulate(sc.replace(length_drift=LengthDrift("exp", rate=drift), horizon_s=2e4), record="samples")
    st = res.steps.filter(pl.col("completed")).head(k * (rows + 1))
    assert st.height == k * (rows + 1)
    upd = st["end_s"].to_numpy() - st["start_s"].to_numpy() - sc.weight_sync_s
    per = pl.DataFrame({"row": st["step"].to_numpy() // k, "wait": st["wait_s"].to_numpy(), "upd": upd})
    lens = (res.samples.filter(pl.col("trained_step").is_not_null())
            .with_columns(row=pl.col("trained_step") // k).group_by("row")
            .agg(pl.col("length_tokens").mean().alias("response_length/mean"),
                 pl.col("length_tokens").max().alias("response_length/max"),
                 (pl.col("length_tokens") >= sc.lengths.max_tokens).mean().alias("response_length/clip_ratio")))
    out = (per.group_by("row", maintain_order=True)
           .agg(pl.col("wait").sum().alias("timing_s/gen"), pl.col("upd").sum().alias("timing_s/update_actor"))
           .with_columns((pl.col("timing_s/gen") + pl.col("timing_s/update_actor")).alias("timing_s/step"),
                         pl.lit(k * sc.weight_sync_s).alias("timing_s/param_sync"))
           .join(lens, on="row").sort("row").filter(pl.col("row") >= 1))
    return out.rename({"row": "training/global_step"})


@pytest.mark.parametrize("decode, paced", [(30.0, True), (300.0, False)], ids=["rollout-paced", "trainer-paced"])
def test_verl_fully_async_rows_fit_the_rollout_from_the_wall_time(decode, paced):
    # decode 30 tokens/s: the rollout sets the pace (the trainer waits about 30 s per update) and the wall
    # time gives the speed and the pause; decode 300: the trainer sets it, the speed is a lower bound
    sc = Scenario(rollout_slots=256, batch_size=512, group_size=8, sync_every=K,
                  pipeline=FullyAsync(max_lag_samples=3 * K * 512), lengths=LogNormal(mu=6.5, sigma=0.5, max_tokens=8192),
                  decode_tokens_per_s=decode, rollout_pause_s=20.0, train_step_s=15.0, train_s_per_token=1e-5,
                  weight_sync_s=1.0)
    m = verl_fully_async_rows(sc, 30, 0.005)
    cal = calibrate(m, sc, bootstrap=20, steps_per_row=K)
    assert len(cal.notes) == 1 and cal.notes[0].startswith("gen_s: timing_s/gen of a fully asynchronous run")
    v = cal.values
    assert v["train_step_s"] == pytest.approx(15.0, rel=0.05) and v["train_s_per_token"] == pytest.approx(1e-5, rel=0.05)
    assert v["weight_sync_s"] == pytest.approx(1.0, rel=1e-9)
    if paced:
        assert cal.notes[0].endswith(": 30 of 30 rows")
        assert v["decode_tokens_per_s"] == pytest.approx(30.0, rel=0.05)
        assert v["gen_overhead_s"] * K == pytest.approx(20.0, rel=0.25)     # the pause per load, from an intercept
    else:
        assert "none, the trainer set the pace in every row" in cal.notes[0]
        assert 30.0 < v["decode_tokens_per_s"] < 300.0 and v["gen_overhead_s"] == 0.0
    df = whatif(cal, [], draws=0)
    assert abs(df["error"][0]) < 0.05                                   # the rows' own wall time
    assert float(cal.residuals["step_error"].abs().mean()) < 0.05


def test_a_simulated_run_that_does_not_complete_keeps_the_closed_form(monkeypatch):
    # a candidate whose run stalls or outlasts its horizon gives no rows to compare: gen_s's closed form is
    # kept and the note says why it is unreliable
    import rollsim.calibration as cal_mod

    m = read_metrics(EX / "verl_fully_async_metrics.csv")
    imp = configs.load(EX / "verl_fully_async.sh")

    def stalled(*args, **kwargs):
        raise cal_mod._Incomplete("3 of 240 steps")

    monkeypatch.setattr(cal_mod._simulate, "_rows_simulated", stalled)  # where _pause_inference looks it up
    cal = calibrate(m, imp, bootstrap=0)
    alone = fit(cal.metrics, batch=256, slots=1024, cap=8192.0, steps_per_row=8)
    assert cal.values["gen_overhead_s"] == alone["gen_overhead_s"] == pytest.approx(5.18, abs=0.01)
    assert len(cal.notes) == 1 and cal.notes[0].endswith(
        "but the simulated run at the fitted values completed 3 of 240 steps: decode_tokens_per_s and gen_overhead_s "
        "are the closed form's, fitted on gen_s alone (where the pause and the speed trade off), and unreliable")
