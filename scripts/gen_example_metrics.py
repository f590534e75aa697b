"""Write the synthetic AReaL and slime per-step metrics shipped next to the example configs.

Usage: python scripts/gen_example_metrics.py [OUT_DIR]   (default: python/rollsim/examples/configs)

The files are SYNTHETIC: rollsim (``rollsim.calibration.synthetic_metrics``) simulates each step of the
example config's scenario with the known parameters below (length drift, 2 % timing noise), and the
generic columns are written with the framework's own metric names (those ``rollsim.calibrate`` reads,
``rollsim.calibration.FRAMEWORK_METRICS``):

- ``areal_grpo_metrics.csv``: ``areal_grpo.yaml`` run synchronously (``rollout.max_head_offpolicyness=0``:
  no rollout of the next step before the weight update, so ``timeperf/rollout`` is the batch's whole
  generation); AReaL logs sequence lengths with the prompt (``ppo_actor/seq_len/*`` and
  ``ppo_actor/prompt_len/avg``) and no step total.
- ``slime_async_metrics.csv``: ``slime_async.sh`` (``train_async.py``: generation of the next batch overlaps
  training, with over-sampling), each step lasting the longer of its generation and its training + sync
  (``perf/step_time``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from rollsim import configs
from rollsim.calibration import synthetic_metrics

EX = Path(__file__).resolve().parent.parent / "python" / "rollsim" / "examples" / "configs"

#: The known parameters of each file (the tests check that calibrate finds them).
TRUE = {
    "areal": dict(decode_tokens_per_s=40.0, rollout_pause_s=12.0, train_step_s=25.0, train_s_per_token=2e-5,
                  weight_sync_s=5.0, **{"lengths.mu": 6.5, "lengths.sigma": 0.7}),
    "slime": dict(decode_tokens_per_s=45.0, rollout_pause_s=10.0, train_step_s=30.0, train_s_per_token=3e-5,
                  weight_sync_s=4.0, **{"lengths.mu": 6.8, "lengths.sigma": 0.6}),
}
PROMPT_TOKENS = 256.0  # AReaL's ppo_actor/prompt_len/avg (the example's prompts)

AREAL = {"step": "step", "gen_s": "timeperf/rollout", "train_s": "timeperf/train_step",
         "sync_s": "timeperf/update_weights", "response_clip_ratio": "ppo_actor/no_eos_ratios/avg"}
SLIME = {"step": "rollout/step", "step_s": "perf/step_time", "gen_s": "perf/rollout_time",
         "train_s": "perf/actor_train_time", "sync_s": "perf/update_weights_time",
         "response_mean": "rollout/response_len/mean", "response_max": "rollout/response_len/max",
         "response_clip_ratio": "rollout/truncated_ratio"}


def areal() -> pl.DataFrame:
    imp = configs.load(EX / "areal_grpo.yaml", overrides=["rollout.max_head_offpolicyness=0"])
    m = synthetic_metrics(imp.scenario.replace(**TRUE["areal"]), 24, drift=0.02, noise=0.02, seed=7)
    out = m.select([pl.col(c).alias(n) for c, n in AREAL.items()])
    return out.with_columns((m["response_mean"] + PROMPT_TOKENS).alias("ppo_actor/seq_len/avg"),
                            (m["response_max"] + PROMPT_TOKENS).alias("ppo_actor/seq_len/max"),
                            pl.lit(PROMPT_TOKENS).alias("ppo_actor/prompt_len/avg"))


def slime() -> pl.DataFrame:
    imp = configs.load(EX / "slime_async.sh")
    m = synthetic_metrics(imp.scenario.replace(**TRUE["slime"]), 24, drift=0.015, noise=0.02, seed=11)
    m = m.with_columns(step_s=pl.max_horizontal("gen_s", pl.col("train_s") + pl.col("sync_s")))
    return m.select([pl.col(c).alias(n) for c, n in SLIME.items()])


def main(out: Path) -> None:
    for name, df in (("areal_grpo_metrics.csv", areal()), ("slime_async_metrics.csv", slime())):
        df.with_columns(pl.col(pl.Float64).round(4)).write_csv(out / name)
        print(f"wrote {out / name} ({df.height} rows)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else EX)
