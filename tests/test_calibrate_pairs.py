"""Published pairs: calibrate on a baseline's published per-step phase times, predict the other
configuration of the pair, compare with what was measured. The errors are the README's table
("Bring your own run"); a test fails when a change moves one."""

from __future__ import annotations

import polars as pl
import pytest

from rollsim import calibrate, configs, whatif

# verl's published tables give each configuration's mean step, gen, old_log_prob and update_actor
# seconds; the answer lengths are not published: assumed mean 3,000 tokens, longest at the limit.
MEAN_TOKENS = 3000.0
FA = "volcengine/verl docs/advance/fully_async.md (Qwen2.5-Math-7B, DAPO, 16 x 512 answers, 28K, H20)"
OS = "volcengine/verl docs/advance/one_step_off.md (Qwen2.5-Math-7B, DAPO, 12 x 512 answers, H20)"
PAIRS = [
    # name, source, gpus (colocated baseline), max response, n, tp, (step, gen, old_log_prob, update_actor),
    # variant, measured step of the variant, error (predicted / measured - 1) as the README shows it
    ("sync 32 -> fully_async 16:16", FA, 32, 28672, 16, 4, (790.10, 357.41, 107.71, 269.80), "fully_async", 16,
     294.77, 1.02),
    ("sync 64 -> fully_async 32:32", FA, 64, 28672, 16, 4, (365.28, 150.72, 70.26, 133.41), "fully_async", 32,
     189.26, 0.47),
    ("sync 128 -> fully_async 64:64", FA, 128, 28672, 16, 4, (356.30, 177.85, 53.92, 113.81), "fully_async", 64,
     150.63, 0.58),
    ("sync 16 -> one_step 4:12 (FSDP2)", OS, 16, 20480, 12, 2, (749.0, 321.0, 88.0, 286.0), "one_step", 4, 520.0,
     0.06),
    ("sync 16 -> one_step 4:12 (Megatron)", OS, 16, 8192, 12, 2, (699.0, 207.0, 119.0, 344.0), "one_step", 4, 566.0,
     0.14),
]


def _predict(tmp_path, gpus, max_resp, n, tp, phases, kind, rollout_gpus):
    cfg = tmp_path / "sync.yaml"
    cfg.write_text(f"data: {{train_batch_size: 512, max_response_length: {max_resp}}}\n"
                   f"actor_rollout_ref: {{rollout: {{n: {n}, tensor_model_parallel_size: {tp}}}}}\n"
                   f"trainer: {{nnodes: {gpus // 8}, n_gpus_per_node: 8}}\n")
    base = configs.load(cfg)
    step, gen, olp, upd = phases
    rows = 6
    metrics = pl.DataFrame({"timing_s/step": [step] * rows, "timing_s/gen": [gen] * rows,
                            "timing_s/old_log_prob": [olp] * rows, "timing_s/update_actor": [upd] * rows,
                            "response_length/mean": [MEAN_TOKENS] * rows, "response_length/max": [float(max_resp)] * rows,
                            "response_length/clip_ratio": [0.005] * rows})
    cal = calibrate(metrics, base, bootstrap=0)
    if kind == "fully_async":
        fa = tmp_path / "fa.sh"
        fa.write_text("python -m verl.experimental.fully_async_policy.fully_async_main "
                      f"data.max_response_length={max_resp} actor_rollout_ref.rollout.n={n} "
                      "actor_rollout_ref.actor.ppo_mini_batch_size=32 async_training.require_batches=4 "
                      "async_training.trigger_parameter_sync_step=4 async_training.staleness_threshold=0.5\n")
        variant = {"pipeline": configs.load(fa).scenario.pipeline, "recompute_logprob": False}
    else:
        variant = {"pipeline": "one-step"}
    variant.update(rollout_gpus=rollout_gpus, train_gpus=gpus - rollout_gpus)
    df = whatif(cal, [variant], draws=0, steps=8)
    return df["error"][0], df["step_s"][1]


@pytest.mark.parametrize("name, source, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, error", PAIRS,
                         ids=[p[0] for p in PAIRS])
def test_published_pair(tmp_path, name, source, gpus, max_resp, n, tp, phases, kind, rollout_gpus, measured, error):
    base_error, predicted = _predict(tmp_path, gpus, max_resp, n, tp, phases, kind, rollout_gpus)
    assert abs(base_error) < 0.01                      # the calibrated baseline reproduces its own step time
    print(f"{name}: predicted {predicted:.1f} s, measured {measured:.1f} s, error {predicted / measured - 1:+.2f}")
    assert predicted / measured - 1 == pytest.approx(error, abs=0.03)
