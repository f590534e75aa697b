"""What the frameworks' generation timers measure in asynchronous runs, and calibration on them.

- AReaL ``timeperf/rollout`` (inclusionAI/AReaL ``areal/trainer/rl_trainer.py``, ``train``: timed around
  ``actor.prepare_batch``, which takes a batch from the rollout that keeps running) is the trainer's
  wait when ``max_head_offpolicyness`` > 0, the generation with 0 (nothing of the next step is
  admitted before ``update_weights``: ``areal/infra/staleness_manager.py``, ``get_capacity``);
- slime ``perf/rollout_time`` (THUDM/slime ``slime/ray/rollout.py``, ``RolloutManager.generate``) is the
  rollout's generation in ``train.py`` and ``train_async.py``; with the fully asynchronous rollout
  function it is the time from the trainer taking the previous batch to this one's collection;
- verl's fully async rollouter restarts its count of started prompts only at a parameter sync
  (verl-project/verl ``verl/experimental/fully_async_policy/fully_async_rollouter.py``,
  ``reset_staleness``): the importer's ``lag_release="sync"``.

The metrics are rollsim runs logged with each framework's names and timer semantics
(``rollsim.calibration.synthetic_metrics(..., framework=...)``); calibration recovers the parameters
they were generated from.
"""

from __future__ import annotations

import re

import numpy as np
import polars as pl
import pytest

from rollsim import FullyAsync, LogNormal, OneStepAsync, Scenario, Synchronous, configs, simulate
from rollsim.calibration import ASYNC_GEN_METRICS, calibrate, normalize, synthetic_metrics

EX = configs.EXAMPLES
DECODE, PAUSE, FIXED, PER_TOKEN, SYNC = 25.0, 20.0, 15.0, 1e-5, 1.0
MU, SIGMA, DRIFT, STEPS = 6.5, 0.5, 0.02, 30


def _truth(sc: Scenario, decode: float = DECODE, pause: float = PAUSE) -> Scenario:
    return sc.replace(decode_tokens_per_s=decode, rollout_pause_s=pause, train_step_s=FIXED,
                      train_s_per_token=PER_TOKEN, logprob_s_per_token=0.0, weight_sync_s=SYNC,
                      lengths=LogNormal(mu=MU, sigma=SIGMA, max_tokens=8192))


def _recovered(cal, decode: float = DECODE, overhead: float = 0.1) -> None:
    v = cal.values
    for name, want in {"decode_tokens_per_s": decode, "train_step_s": FIXED, "train_s_per_token": PER_TOKEN,
                       "weight_sync_s": SYNC, "lengths.mu": MU, "lengths.sigma": SIGMA,
                       "lengths.drift": DRIFT}.items():
        assert v[name] == pytest.approx(want, rel=0.05), name
    # the generation overhead is the intercept of the paced rows' wall time: the rollout's pause at each
    # weight load and the sync it waits for
    assert PAUSE + SYNC <= v["gen_overhead_s"] * 1.01 and v["gen_overhead_s"] <= (PAUSE + SYNC) * (1 + overhead)


def _slime_fully_async() -> Scenario:
    return Scenario(rollout_slots=256, batch_size=512, group_size=8, pipeline=FullyAsync())


@pytest.fixture(scope="module")
def areal():
    imp = configs.load(EX / "areal_grpo.yaml")       # max_head_offpolicyness: 2
    assert imp.scenario.pipeline.admission_eta == 2
    # as many slots as a batch's answers (1024: the closed-form streaming fit; the example's 1536 are fitted by
    # simulation, tests/test_calibrate_slots.py)
    sc = _truth(imp.scenario.replace(rollout_slots=1024))
    m = synthetic_metrics(sc, STEPS, drift=DRIFT, noise=0.01, seed=2, framework="areal")
    return imp, sc, m, calibrate(m, sc, bootstrap=20)


def test_synthetic_metrics_carry_each_frameworks_names():
    sc = _truth(_slime_fully_async())
    for fw in ("verl", "areal", "slime"):
        m = synthetic_metrics(sc, 3, framework=fw)
        _, got, sources = normalize(m)
        assert got == fw and sources["gen_s"] in ASYNC_GEN_METRICS[fw]
    m = synthetic_metrics(sc, 3, framework="areal")
    assert "timeperf/rollout" in m.columns and "ppo_actor/seq_len/avg" in m.columns
    # AReaL logs sequences with their prompt; the normaliser takes it off
    assert normalize(m)[0]["response_mean"].to_list() == pytest.approx(
        (m["ppo_actor/seq_len/avg"] - m["ppo_actor/prompt_len/avg"]).to_list())
    # the generic names stay as they were
    assert synthetic_metrics(sc, 3, seed=4).equals(synthetic_metrics(sc, 3, seed=4, framework="generic"))


def test_areal_asynchronous_rollout_timer_is_the_trainer_wait(areal):
    imp, sc, m, cal = areal
    assert cal.framework == "areal" and len(cal.notes) == 1
    assert cal.notes[0].startswith("gen_s: timeperf/rollout of an asynchronous AReaL run (max_head_offpolicyness > 0) "
                                   "is the trainer's wait for samples")
    paced = int(re.search(r": (\d+) of 30 rows$", cal.notes[0]).group(1))
    assert paced >= 27  # the rollout paced (almost) every row
    # AReaL's interruption (on_update="abort_resubmit") discards the answers in flight at each update: more
    # intercept than the pause and the sync
    _recovered(cal, overhead=0.25)
    assert float(cal.residuals["step_error"].abs().mean()) < 0.05
    # read as generation (a synchronous AReaL base), the same wait makes a decoder far too fast
    sync_base = imp.scenario.replace(pipeline=FullyAsync(admission_eta=0))
    wrong = calibrate(m, sync_base, bootstrap=0)
    assert wrong.notes == () and wrong.values["decode_tokens_per_s"] > 1.2 * DECODE


def test_areal_synchronous_rollout_timer_is_the_generation():
    # max_head_offpolicyness 0: the next step's rollouts wait for update_weights; timeperf/rollout encloses
    # the whole generation, read as such
    sc = _truth(Scenario(rollout_slots=512, batch_size=512, group_size=8, pipeline=FullyAsync(admission_eta=0)))
    m = synthetic_metrics(sc, STEPS, drift=DRIFT, noise=0.01, seed=3, framework="areal")
    cal = calibrate(m, sc, bootstrap=0)
    assert cal.notes == ()
    v = cal.values
    assert v["decode_tokens_per_s"] == pytest.approx(DECODE, rel=0.05)
    assert v["gen_overhead_s"] == pytest.approx(PAUSE, rel=0.05)
    assert v["train_s_per_token"] == pytest.approx(PER_TOKEN, rel=0.05)
    # the step is generation then training (AReaL admits nothing during training at eta 0)
    r = cal.residuals
    serial = r["gen_s_predicted"] + r["train_s_predicted"] + v["weight_sync_s"]
    assert float((r["step_s_predicted"] / serial - 1).abs().max()) < 1e-12
    assert float(r["step_error"].abs().mean()) < 0.05


@pytest.mark.parametrize("decode, paced", [(DECODE, True), (300.0, False)], ids=["rollout-paced", "trainer-paced"])
def test_slime_fully_async_rollout_time_counts_from_the_previous_batch(tmp_path, decode, paced):
    script = tmp_path / "run.sh"
    script.write_text("python3 train_async.py --rollout-batch-size 64 --n-samples-per-prompt 8 --global-batch-size 512 "
                      "--rollout-function-path slime.rollout.fully_async_rollout.generate_rollout_fully_async "
                      "--rollout-max-response-len 8192 --actor-num-nodes 1 --actor-num-gpus-per-node 8 "
                      "--rollout-num-gpus 8 --rollout-num-gpus-per-engine 1 --sglang-server-concurrency 32\n")
    imp = configs.load(script)
    assert imp.scenario.pipeline == FullyAsync() and imp.scenario.batch_size == 512
    sc = _truth(imp.scenario, decode, PAUSE if paced else 2.0)
    m = synthetic_metrics(sc, STEPS, drift=DRIFT, noise=0.01, seed=5, framework="slime")
    cal = calibrate(m, imp, bootstrap=20)
    assert len(cal.notes) == 1 and cal.notes[0].startswith(
        "gen_s: perf/rollout_time of slime's fully asynchronous rollout is the time from the trainer taking the "
        "previous batch to this batch's collection")
    # the trainer's wait: perf/rollout_time less the previous row's training, at least 0
    t = m["perf/actor_train_time"].to_numpy()
    wait = np.maximum(0.0, m["perf/rollout_time"].to_numpy() - np.concatenate([t[:1], t[:-1]]))
    assert cal.metrics["gen_s"].to_list() == pytest.approx(wait.tolist())
    if paced:
        assert cal.notes[0].endswith(f": {STEPS} of {STEPS} rows")
        _recovered(cal)
    else:
        # the rollout outruns training: perf/rollout_time is shorter than the previous training in every row
        assert (m["perf/rollout_time"].to_numpy()[1:] < t[:-1]).all()
        assert "none, the trainer set the pace in every row" in cal.notes[0]
        assert DECODE < cal.values["decode_tokens_per_s"] < decode and cal.values["gen_overhead_s"] == 0.0
        assert cal.values["train_s_per_token"] == pytest.approx(PER_TOKEN, rel=0.05)
    assert float(cal.residuals["step_error"].abs().mean()) < 0.05


@pytest.mark.parametrize("pipeline", [OneStepAsync(), Synchronous()], ids=["train_async", "train"])
def test_slime_rollout_time_is_the_generation_with_the_default_rollout(pipeline):
    # RolloutManager.generate times the rollout function on the rollout side: in train_async.py it runs
    # beside training but uninterrupted, so perf/rollout_time is still the batch's generation
    sc = _truth(Scenario(rollout_slots=512, batch_size=512, group_size=8, pipeline=pipeline))
    m = synthetic_metrics(sc, STEPS, drift=DRIFT, noise=0.01, seed=6, framework="slime")
    cal = calibrate(m, sc, bootstrap=0)
    assert cal.framework == "slime" and cal.notes == ()
    v = cal.values
    assert v["decode_tokens_per_s"] == pytest.approx(DECODE, rel=0.05)
    assert v["gen_overhead_s"] == pytest.approx(PAUSE, rel=0.05)


def test_verl_fully_async_metrics_from_synthetic_metrics():
    sc = _truth(Scenario(rollout_slots=256, batch_size=512, group_size=8,
                         pipeline=FullyAsync(max_lag_samples=1024, lag_release="sync")))
    m = synthetic_metrics(sc, STEPS, drift=DRIFT, noise=0.01, seed=7, framework="verl")
    # the fully async trainer times its sync outside timing_s/step
    assert {"timing_s/gen", "timing_s/step", "timing_s/param_sync"} <= set(m.columns)
    cal = calibrate(m, sc, bootstrap=0)
    assert cal.notes[0].startswith("gen_s: timing_s/gen of a fully asynchronous run is the trainer's wait")
    # gated on the sync, the rollout also idles from its bound to each sync: more intercept than the pause
    _recovered(cal, overhead=0.4)


def test_verl_fully_async_staleness_count_restarts_at_the_sync(tmp_path):
    """verl's rollouter counts the prompts it starts and pauses at max_required_samples; only a parameter
    sync restarts the count (from the prompts in flight or queued): with staleness_threshold 0 and a sync
    after every update, generation waits for each sync and every trained answer has staleness 0."""
    script = tmp_path / "fa.sh"
    script.write_text("python -m verl.experimental.fully_async_policy.fully_async_main actor_rollout_ref.rollout.n=4 "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=16 async_training.staleness_threshold=0 "
                      "async_training.trigger_parameter_sync_step=1 async_training.partial_rollout=False\n")
    sc = configs.load(script).scenario
    assert sc.pipeline == FullyAsync(max_lag_samples=16 * 4, lag_release="sync", on_update="wait")
    res = simulate(sc.replace(decode_tokens_per_s=50.0, train_step_s=5.0, horizon_s=600.0,
                              lengths=LogNormal(mu=6.0, sigma=0.5, max_tokens=2048)))
    t = res.samples.filter(pl.col("status") == "trained")
    assert t["trained_step"].n_unique() >= 5 and t["staleness"].max() == 0
    # the places freed when the trainer takes a batch (lag_release="take") would let the next batch start
    # on the old weights: staleness 1
    take = simulate(res.scenario.replace(pipeline=FullyAsync(max_lag_samples=64, on_update="wait")))
    assert take.samples.filter((pl.col("status") == "trained") & (pl.col("trained_step") > 0))["staleness"].min() == 1


def test_verl_sync_timed_inside_the_step():
    # verl-project/verl 1dda039 times the parameter sync inside "step" and logs it as
    # timing_s/timing_s/param_sync (marked_timer("timing_s/param_sync") in _fit_update_weights, prefixed
    # again by compute_timing_metrics): the sync is read from it and not added to the step again
    sc = _truth(Scenario(rollout_slots=256, batch_size=512, group_size=8,
                         pipeline=FullyAsync(max_lag_samples=1024, lag_release="sync")))
    old = synthetic_metrics(sc, 6, seed=7, framework="verl")
    new = old.rename({"timing_s/param_sync": "timing_s/timing_s/param_sync"}).with_columns(
        pl.col("timing_s/step") + pl.col("timing_s/timing_s/param_sync"))
    a, _, sa = normalize(old)
    b, _, sb = normalize(new)
    assert sb["sync_s"] == "timing_s/timing_s/param_sync" and sb["step_s"] == "timing_s/step"
    assert b["step_s"].to_list() == pytest.approx(a["step_s"].to_list())
    assert b["sync_s"].to_list() == a["sync_s"].to_list()
