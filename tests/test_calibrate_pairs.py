"""Published pairs: calibrate on a baseline's published per-step phase times, predict the other
configuration of the pair, compare with what was measured. The errors are the README's table
("Bring your own run"), once with the training cost moved to the new GPU count as 1 / GPUs and once
with the hardware training model (rollsim.what_if.train_scale); a test fails when a change moves one.
Beside them, the checks behind the README's account of the fully async misses: which revision of verl's
table nests, the unit of a fully async step, the trainers' GPU-seconds ratios, and how the errors move
with the assumed answer length (or with the length each baseline's generation implies)."""

from __future__ import annotations

import polars as pl
import pytest

from rollsim import calibrate, configs, whatif

# verl's published tables give each configuration's mean step, gen, old_log_prob, ref and
# update_actor seconds; the answer lengths are not published: assumed mean 3,000 tokens, longest at
# the limit. Qwen2.5-Math-7B has Qwen2.5-7B's shape (its config.json: hidden 3584, 28 layers, 28
# heads, 4 KV heads, FFN 18944), the model the hardware model is given.
MEAN_TOKENS = 3000.0
FA = "volcengine/verl docs/advance/fully_async.md (Qwen2.5-Math-7B, DAPO, 16 x 512 answers, 28K, H20)"
OS = "volcengine/verl docs/advance/one_step_off.md (Qwen2.5-Math-7B, DAPO, 12 x 512 answers, H20)"
FA30 = "volcengine/verl docs/advance/fully_async.md, 30B section (Qwen3-30B-A3B-Base, GRPO, 16 x 512, 8K, H20)"
FAV = "volcengine/verl docs/advance/fully_async.md, use_trainer_do_validate section (Qwen2.5-Math-7B, 10K, H20)"
# name, source, model, backend, gpus (colocated baseline), max response, n, tp,
# (step, gen, old_log_prob, ref, update_actor), variant, rollout GPUs of the variant, measured step of the
# variant, error (predicted / measured - 1) with 1 / GPUs, the same with the hardware model
# The 32-GPU pair's update_actor times are read as the page gave them from its first full table (volcengine/verl
# PR 3804, whose colocated 313.81 s was already in PR 2981) to PR 4199: colocated 313.81 s, fully async 269.80 s.
# PR 4307 (a one-step-off refactor) swapped the two; that reading breaks the timer nesting that
# test_published_phases_nest checks.
PAIRS = [
    ("sync 32 -> fully_async 16:16", FA, "Qwen2.5-7B", "fsdp2", 32, 28672, 16, 4,
     (790.10, 357.41, 107.71, 0.0, 313.81), "fully_async", 16, 294.77, 1.28, 1.28),
    ("sync 64 -> fully_async 32:32", FA, "Qwen2.5-7B", "fsdp2", 64, 28672, 16, 4,
     (365.28, 150.72, 70.26, 0.0, 133.41), "fully_async", 32, 189.26, 0.47, 0.47),
    ("sync 128 -> fully_async 64:64", FA, "Qwen2.5-7B", "fsdp2", 128, 28672, 16, 4,
     (356.30, 177.85, 53.92, 0.0, 113.81), "fully_async", 64, 150.63, 0.58, 0.51),
    ("sync 16 -> one_step 4:12 (FSDP2)", OS, "Qwen2.5-7B", "fsdp2", 16, 20480, 12, 2,
     (749.0, 321.0, 88.0, 0.0, 286.0), "one_step", 4, 520.0, 0.06, 0.06),
    ("sync 16 -> one_step 4:12 (Megatron)", OS, "Qwen2.5-7B", "megatron", 16, 8192, 12, 2,
     (699.0, 207.0, 119.0, 0.0, 344.0), "one_step", 4, 566.0, 0.14, 0.14),
    # pairs that are not among the ones the model was developed on
    ("sync 128 -> fully_async 96:32 (Qwen3-30B-A3B, Megatron)", FA30, "Qwen3-30B-A3B", "megatron", 128, 8192, 16, 4,
     (497.89, 348.05, 28.73, 20.86, 86.27), "fully_async", 96, 282.75, 0.57, 0.19),
    ("sync 16 -> fully_async 8:8 (10K)", FAV, "Qwen2.5-7B", "fsdp2", 16, 10240, 16, 4,
     (484.623, 52.939, 0.0, 0.0, 430.263), "fully_async", 8, 489.953, 0.76, 0.76),
]


def _predict(tmp_path, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, hardware,
             mean_tokens=MEAN_TOKENS, prompts=512, mini_require_trigger=(32, 4, 4), lag_release=None):
    cfg = tmp_path / "sync.yaml"
    cfg.write_text(f"data: {{train_batch_size: {prompts}, max_response_length: {max_resp}}}\n"
                   f"actor_rollout_ref: {{rollout: {{n: {n}, tensor_model_parallel_size: {tp}}}}}\n"
                   f"trainer: {{nnodes: {gpus // 8}, n_gpus_per_node: 8}}\n")
    base = configs.load(cfg)
    step, gen, olp, ref, upd = phases
    rows = 6
    cols = {"timing_s/step": step, "timing_s/gen": gen, "timing_s/update_actor": upd,
            "response_length/mean": mean_tokens, "response_length/max": float(max_resp),
            "response_length/clip_ratio": 0.005}
    if olp:
        cols["timing_s/old_log_prob"] = olp
    if ref:
        cols["timing_s/ref"] = ref
    metrics = pl.DataFrame({k: [float(v)] * rows for k, v in cols.items()})
    kw = dict(model=model, gpu="H20", backend=backend) if hardware else {}
    cal = calibrate(metrics, base, bootstrap=0, **kw)
    if kind == "fully_async":
        mini, req, trig = mini_require_trigger
        fa = tmp_path / "fa.sh"
        fa.write_text("python -m verl.experimental.fully_async_policy.fully_async_main "
                      f"data.max_response_length={max_resp} actor_rollout_ref.rollout.n={n} "
                      f"actor_rollout_ref.actor.ppo_mini_batch_size={mini} async_training.require_batches={req} "
                      f"async_training.trigger_parameter_sync_step={trig} async_training.staleness_threshold=0.5\n")
        imported = configs.load(fa)
        assert imported.scenario.pipeline.lag_release == "sync"  # verl's rollouter: reset_staleness at each sync
        # the variant trains as verl's trainer does: trigger_parameter_sync_step local updates of require_batches x
        # ppo_mini_batch_size prompts per parameter sync, its rollouter's bounds (the imported config's cadence)
        variant = {"pipeline": imported, "recompute_logprob": False}
        if lag_release is not None:  # "take": verl-project/verl issue 4449's reading, to compare
            variant["pipeline.lag_release"] = lag_release
    else:
        variant = {"pipeline": "one-step"}
    variant.update(rollout_gpus=rollout_gpus, train_gpus=gpus - rollout_gpus)
    df = whatif(cal, [variant], draws=0, steps=8)
    return df["error"][0], df.row(1, named=True)


@pytest.mark.parametrize("hardware", [False, True], ids=["1/gpus", "hardware"])
@pytest.mark.parametrize("name, source, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, "
                         "err_1g, err_hw", PAIRS, ids=[p[0] for p in PAIRS])
def test_published_pair(tmp_path, name, source, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus,
                        measured, err_1g, err_hw, hardware):
    base_error, row = _predict(tmp_path, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, hardware)
    assert abs(base_error) < 0.01                      # the calibrated baseline reproduces its own step time
    predicted = row["step_s"]
    print(f"{name} [{row['train_scaling']}]: predicted {predicted:.1f} s [{row['step_s_low']:.1f}, "
          f"{row['step_s_high']:.1f}], measured {measured:.1f} s, error {predicted / measured - 1:+.2f}, training x "
          f"{row['train_scale']:.3f} [{row['train_scale_low']:.3f}, {row['train_scale_high']:.3f}]")
    assert row["train_scaling"] == ("hardware" if hardware else "1/gpus")
    assert predicted / measured - 1 == pytest.approx(err_hw if hardware else err_1g, abs=0.03)


# For comparison only: verl-project/verl issue 4449's reading of the rollouter (a trained batch frees its places
# when the trainer takes it, lag_release="take"; verl's code resets its count at the parameter sync), with the
# hardware model: the README's "take" column
TAKE_HW = {"sync 32 -> fully_async 16:16": 1.17, "sync 64 -> fully_async 32:32": 0.47,
           "sync 128 -> fully_async 64:64": 0.51, "sync 128 -> fully_async 96:32 (Qwen3-30B-A3B, Megatron)": -0.14,
           "sync 16 -> fully_async 8:8 (10K)": 0.76}
#: the pairs whose sync-rule trainer still waits for samples (more than under the "take" reading); in the others
#: verl's cadence (the trainer starts on a window's first local update) leaves it no wait under either rule
TAKE_DIFFERS = {"sync 32 -> fully_async 16:16", "sync 128 -> fully_async 96:32 (Qwen3-30B-A3B, Megatron)"}


@pytest.mark.parametrize("name", sorted(TAKE_HW))
def test_published_pair_under_issue_4449_reading(tmp_path, name):
    _, _, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, _, err_hw = \
        next(p for p in PAIRS if p[0] == name)
    _, take = _predict(tmp_path, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, True,
                       lag_release="take")
    assert take["step_s"] / measured - 1 == pytest.approx(TAKE_HW[name], abs=0.03)
    assert take["trainer_wait_s"] == 0.0  # the rollout keeps up once places free at the take
    if name in TAKE_DIFFERS:
        assert TAKE_HW[name] < err_hw - 0.05  # verl's rule (at the sync) still waits for generation
    else:
        assert TAKE_HW[name] == pytest.approx(err_hw, abs=0.01)


# A pair found after the cause was analysed, not used for anything before: the same page's multi-turn
# tool-calling section (ReTool SFT of Qwen2.5-7B-Instruct, DAPO, 64 prompts x 16 answers per step,
# ppo_mini_batch_size 16; fully async require_batches 1 x trigger_parameter_sync_step 4 = the same 64
# prompts; max response 16K: verl/experimental/fully_async_policy/shell/dapo_7b_async_retool.sh).
# Colocated 32 GPUs: step 375.47, gen 228.03, old_log_prob 35.19, update_actor 111.84 s -> fully async
# 16 : 16 measured 221.36 s, of which gen (the trainer's wait for samples) 40.59 s and update_actor 179.58 s:
# its trainer spent 0.80 of the colocated trainer's GPU-seconds per step.
RETOOL = ("volcengine/verl docs/advance/fully_async.md, multi-turn tool-calling section (Qwen2.5-7B-Instruct "
          "ReTool SFT, DAPO, 64 x 16, 16K, H20)")


@pytest.mark.parametrize("hardware, err, update_err", [(False, 0.01, 0.25), (True, -0.21, -0.09)],
                         ids=["1/gpus", "hardware"])
def test_published_pair_multi_turn_tools(tmp_path, hardware, err, update_err):
    base_error, row = _predict(tmp_path, "Qwen2.5-7B", "fsdp2", 32, 16384, 16, 4, (375.47, 228.03, 35.19, 0.0, 111.84),
                               "fully_async", 16, hardware, prompts=64, mini_require_trigger=(16, 1, 4))
    assert abs(base_error) < 0.01
    assert row["step_s"] / 221.36 - 1 == pytest.approx(err, abs=0.03)
    # the trainer's update: 1 / GPUs doubles it (+25 %), the hardware model keeps a fixed rest (-9 %: with
    # the recompute term and the MFU refit; -0.4 % before); trained as verl does (4 local updates of 16
    # prompts per sync) the trainer waits none (1 / GPUs) or 11.8 s (hardware, its faster update) per row for
    # samples against 40.6 s measured (the tool calls and turns are not modelled)
    assert row["train_scale"] * 111.84 / 179.58 - 1 == pytest.approx(update_err, abs=0.03)
    assert row["steps_per_row"] == 4 and row["samples_per_row"] == 64 * 16
    assert row["trainer_wait_s"] == pytest.approx({False: 0.0, True: 11.8}[hardware], abs=1.0)
    _, take = _predict(tmp_path, "Qwen2.5-7B", "fsdp2", 32, 16384, 16, 4, (375.47, 228.03, 35.19, 0.0, 111.84),
                       "fully_async", 16, hardware, prompts=64, mini_require_trigger=(16, 1, 4), lag_release="take")
    # issue 4449's reading, for comparison: +1 % (1 / GPUs) and -19 % (hardware), no wait
    assert take["step_s"] / 221.36 - 1 == pytest.approx({False: 0.01, True: -0.26}[hardware], abs=0.03)
    assert take["trainer_wait_s"] == 0.0
    assert round(16 * 179.58 / (32 * 111.84), 2) == 0.80


# Every published row of the fully async page's pairs: (step, gen, old_log_prob, ref, update_actor) and the
# seconds of the step outside those phases. verl's main trainer times each phase inside its step timer
# (verl/trainer/ppo/ray_trainer.py); the fully async trainer's "step" timer encloses "gen" (the wait for
# samples) and the update of each local update (verl/experimental/fully_async_policy/fully_async_trainer.py,
# fit: marked_timer("step") around marked_timer("gen") and _process_batch_common), and the logged value of
# every timing_s/ key is the sum over the version's local updates (detach_utils.py, MetricsAggregator:
# "timing_s/" -> "time_sum"), so in every row step >= gen + old_log_prob + ref + update_actor.
PUBLISHED_ROWS = [
    ("colocated 32", (790.10, 357.41, 107.71, 0.0, 313.81), 11.17),
    ("fully_async 16:16", (294.77, 21.26, 0.0, 0.0, 269.80), 3.71),
    ("colocated 64", (365.28, 150.72, 70.26, 0.0, 133.41), 10.89),
    ("fully_async 32:32", (189.26, 28.46, 0.0, 0.0, 156.98), 3.82),
    ("colocated 128", (356.30, 177.85, 53.92, 0.0, 113.81), 10.72),
    ("fully_async 64:64", (150.63, 33.14, 0.0, 0.0, 113.16), 4.33),
    ("colocated 128 (30B)", (497.89, 348.05, 28.73, 20.86, 86.27), 13.98),
    ("fully_async 96:32 (30B)", (282.75, 22.06, 0.0, 50.05, 206.63), 4.01),
    ("colocated 16 (10K)", (484.623, 52.939, 0.0, 0.0, 430.263), 1.421),
    ("fully_async 8:8 (10K)", (489.953, 52.622, 0.0, 0.0, 435.874), 1.457),
]


def test_published_phases_nest():
    for name, (step, *phases), rest in PUBLISHED_ROWS:
        assert step - sum(phases) == pytest.approx(rest, abs=0.005), name
        assert rest > 0, name
    # the newest revision's reading of the 32-GPU pair (update_actor 269.80 colocated, 313.81 fully async)
    # leaves the fully async step 40.30 s shorter than its own phases, and the colocated run 55.18 s
    # outside its phases where its 64- and 128-GPU siblings have 10.9 and 10.7 s
    assert 294.77 - 21.26 - 313.81 == pytest.approx(-40.30, abs=0.005)
    assert 790.10 - 357.41 - 107.71 - 269.80 == pytest.approx(55.18, abs=0.005)


def test_fully_async_version_is_the_colocated_batch(tmp_path):
    # the unit of the pairs: one logged fully async step (one policy version) trains 4 updates x 4 x 32
    # prompts x 16 answers = 8192 samples, the colocated step's 512 prompts x 16; the fully async rollouter
    # puts one sample per prompt with rollout.n answers (fully_async_rollouter.py: RolloutSample with
    # agent_loop_output_list=[None] * rollout.n), the trainer takes ppo_mini_batch_size * require_batches
    # of them per update (fully_async_trainer.py: self.required_samples). The importer's training step is
    # one local update (2048 samples) and a logged row covers trigger_parameter_sync_step = 4 of them
    sync = tmp_path / "sync.yaml"
    sync.write_text("data: {train_batch_size: 512}\nactor_rollout_ref: {rollout: {n: 16}}\n")
    fa = tmp_path / "fa.sh"
    fa.write_text("python -m verl.experimental.fully_async_policy.fully_async_main actor_rollout_ref.rollout.n=16 "
                  "actor_rollout_ref.actor.ppo_mini_batch_size=32 async_training.require_batches=4 "
                  "async_training.trigger_parameter_sync_step=4\n")
    assert configs.load(sync).scenario.batch_size == 8192
    imp = configs.load(fa)
    assert (imp.scenario.batch_size, imp.steps_per_logged_step) == (2048, 4)
    assert imp.scenario.batch_size * imp.steps_per_logged_step == 8192


def test_trainer_gpu_seconds_and_scaling():
    # the README's measured symptom: GPU-seconds of the separated trainer's update per step over the
    # colocated trainer's (the same 8192 samples), and each mode's own scaling with GPUs
    def ratio(g_sep, t_sep, g_col, t_col):
        return round(g_sep * t_sep / (g_col * t_col), 2)
    assert ratio(16, 269.80, 32, 313.81) == 0.43
    assert ratio(32, 156.98, 64, 133.41) == 0.59
    assert ratio(64, 113.16, 128, 113.81) == 0.50
    assert ratio(32, 206.63, 128, 86.27) == 0.60
    assert ratio(8, 435.874, 16, 430.263) == 0.51
    assert ratio(12, 337.0, 16, 286.0) == 0.88          # one-step FSDP2 update_actor
    assert ratio(12, 108.0, 16, 88.0) == 0.92           # its old_log_prob (a forward only: no optimizer offload)
    assert ratio(12, 347.0, 16, 344.0) == 0.76          # one-step Megatron update_actor
    assert ratio(12, 120.0, 16, 119.0) == 0.76          # its old_log_prob
    # within one mode, twice the GPUs: colocated 2.35x then 1.17x, fully async 1.72x then 1.39x
    assert [round(a / b, 2) for a, b in ((313.81, 133.41), (133.41, 113.81), (269.80, 156.98), (156.98, 113.16))] \
        == [2.35, 1.17, 1.72, 1.39]


# the mean answer length is not published; no single assumption in 500-3000 tokens brings the three
# 7B fully async pairs within the 15 % target with the hardware model (the README's table, last paragraph)
SENSITIVITY = {500.0: (0.33, -0.06, -0.06), 1000.0: (0.56, 0.12, 0.05), 1500.0: (0.79, 0.30, 0.16),
               2000.0: (1.20, 0.47, 0.28), 3000.0: (1.28, 0.47, 0.51)}


@pytest.mark.parametrize("mean_tokens", sorted(SENSITIVITY))
def test_fully_async_pairs_against_the_assumed_answer_length(tmp_path, mean_tokens):
    errors = []
    for i, p in enumerate(PAIRS[:3]):
        _, _, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, _, _ = p
        d = tmp_path / str(i)
        d.mkdir()
        _, row = _predict(d, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus,
                          True, mean_tokens=mean_tokens)
        errors.append(row["step_s"] / measured - 1)
    assert errors == pytest.approx(SENSITIVITY[mean_tokens], abs=0.02)
    assert max(abs(e) for e in errors) > 0.15


# A second reading of the 7B pairs: the mean answer length each colocated baseline's own generation time
# implies under rollsim's roofline decoding (rollsim.validation.fit_mean_tokens on the validation cases'
# pools: 3,282 / 655 / 1,222 tokens for the 32- / 64- / 128-GPU runs, fitted there and re-checked by its own
# tests; 163 tokens for the 10K run, fitted here the same way). Nothing is fitted to the predicted runs;
# the lengths are only as good as the decoder's level (163 tokens is short for DAPO answers).
GEN_FITTED = [(0, "verl_fully_async_32", 1.28), (1, "verl_fully_async_64", -0.01), (2, "verl_fully_async_128", 0.10),
              (6, None, -0.03)]


@pytest.mark.parametrize("index, case, err", GEN_FITTED, ids=[PAIRS[i][0] for i, _, _ in GEN_FITTED])
def test_fully_async_pairs_with_lengths_from_the_baseline_generation(tmp_path, index, case, err):
    import warnings

    from rollsim import validation
    from rollsim.pipelines import Synchronous

    _, _, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, _, _ = PAIRS[index]
    if case is not None:
        mean = validation._FACTORIES[case].keywords["mean"]
    else:
        pool = validation._verl_pool(gpus, 1000.0, float(max_resp), train_s=phases[0] - phases[1],
                                     pipeline=Synchronous())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mean = validation.fit_mean_tokens(pool, phases[1])
        assert mean == pytest.approx(163.1, rel=0.01)
    _, row = _predict(tmp_path, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, True,
                      mean_tokens=mean)
    assert row["step_s"] / measured - 1 == pytest.approx(err, abs=0.02)


# the 30B pair's +19 % with the hardware model rests on the same assumption
SENSITIVITY_30B = {500.0: -0.43, 2000.0: -0.04, 3000.0: 0.19}


@pytest.mark.parametrize("mean_tokens", sorted(SENSITIVITY_30B))
def test_moe_pair_against_the_assumed_answer_length(tmp_path, mean_tokens):
    _, _, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, _, _ = PAIRS[5]
    _, row = _predict(tmp_path, model, backend, gpus, max_resp, n, tp, phases, kind, rollout_gpus, True,
                      mean_tokens=mean_tokens)
    assert row["step_s"] / measured - 1 == pytest.approx(SENSITIVITY_30B[mean_tokens], abs=0.02)


VIME = ("vllm-project/vime issue 358 (Qwen3-4B GRPO, Ascend A3, 2 training + 2 rollout NPUs, 32 prompts x 8, "
        "max response 2K)")


@pytest.mark.filterwarnings("ignore::rollsim.GenerationOutrunsTrainingWarning")
@pytest.mark.parametrize("mean_tokens", [1000.0, 1500.0, 1800.0])
def test_vime_disaggregated_sync_to_fully_async(tmp_path, mean_tokens):
    # a slime-family pair on the same GPUs (no split change): sync 178.3 s per step (train_wait 97.2 s,
    # train 81.4 s) -> fully async (train_async.py + the fully async rollout, no staleness cap) 104.0 s
    cfg = tmp_path / "run.sh"
    cfg.write_text("python train.py --actor-num-nodes 1 --actor-num-gpus-per-node 2 --rollout-num-gpus 2 "
                   "--rollout-num-gpus-per-engine 2 --rollout-batch-size 32 --n-samples-per-prompt 8 "
                   "--global-batch-size 256 --rollout-max-response-len 2048\n")
    base = configs.load(cfg)
    # the answer lengths are not published: the prediction is the same for any mean in 1,000-1,800
    # tokens (generation outruns training at each)
    m = pl.DataFrame({"perf/rollout_time": [97.2] * 6, "perf/actor_train_time": [81.4] * 6,
                      "rollout/response_len/mean": [mean_tokens] * 6, "rollout/response_len/max": [2048.0] * 6,
                      "rollout/truncated_ratio": [0.05] * 6})
    cal = calibrate(m, base, bootstrap=0)
    df = whatif(cal, [{"pipeline": "fully-async"}], draws=0, steps=10)
    assert abs(df["error"][0]) < 0.01
    print(f"vime sync -> fully async, mean {mean_tokens:g}: predicted {df['step_s'][1]:.1f} s, measured 104.0 s")
    assert df["step_s"][1] / 104.0 - 1 == pytest.approx(-0.22, abs=0.02)
