"""Write the synthetic AReaL and slime per-step metrics shipped next to the example configs.

Usage: python scripts/gen_example_metrics.py [OUT_DIR]   (default: python/rollsim/examples/configs)

The files are SYNTHETIC: rollsim (``rollsim.calibration.synthetic_metrics``) simulates each step of the
example config's scenario with the known parameters below (length drift, 2 % timing noise), and the
generic columns are written with the framework's own metric names (those ``rollsim.calibrate`` reads,
``rollsim.calibration.FRAMEWORK_METRICS``):

- ``areal_grpo_metrics.csv``: ``areal_grpo.yaml`` as it ships, asynchronous (``max_head_offpolicyness``
  2, interruptible generation): ``timeperf/rollout`` is the trainer's wait for its batch from the running
  rollout (``synthetic_metrics(..., framework="areal")``; inclusionAI/AReaL ``areal/trainer/rl_trainer.py``
  times ``rollout`` around ``actor.prepare_batch``), so a step lasts that wait plus training plus the
  weight update; the first step (the fill) is left out. The decode speed (20 tokens/s a sequence) makes
  the rollout pace 23 of the 24 rows: at 40 tokens/s the trainer paced 16 of them, whose wait shows
  nothing of the decode speed. AReaL logs sequence lengths with the prompt (``ppo_actor/seq_len/*`` and
  ``ppo_actor/prompt_len/avg``, 256 tokens here) and no step total.
- ``slime_async_metrics.csv``: ``slime_async.sh`` (``train_async.py``: generation of the next batch overlaps
  training, with over-sampling), each step lasting the longer of its generation and its training + sync
  (``perf/step_time``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

from rollsim import configs
from rollsim.calibration import FRAMEWORK_METRICS, synthetic_metrics

EX = Path(__file__).resolve().parent.parent / "python" / "rollsim" / "examples" / "configs"

#: The known parameters of each file (the tests check that calibrate finds them).
TRUE = {
    "areal": dict(decode_tokens_per_s=20.0, rollout_pause_s=12.0, train_step_s=25.0, train_s_per_token=2e-5,
                  weight_sync_s=5.0, **{"lengths.mu": 6.5, "lengths.sigma": 0.7}),
    "slime": dict(decode_tokens_per_s=45.0, rollout_pause_s=10.0, train_step_s=30.0, train_s_per_token=3e-5,
                  weight_sync_s=4.0, **{"lengths.mu": 6.8, "lengths.sigma": 0.6}),
}
PROMPT_TOKENS = 256.0  # AReaL's ppo_actor/prompt_len/avg (the example's prompts; free to prefill in its scenario)


def areal() -> pl.DataFrame:
    imp = configs.load(EX / "areal_grpo.yaml")
    assert imp.scenario.pipeline.admission_eta == 2  # type: ignore[union-attr]  # the config's max_head_offpolicyness
    sc = imp.scenario.replace(prompt_tokens=PROMPT_TOKENS, **TRUE["areal"])
    return synthetic_metrics(sc, 24, drift=0.02, noise=0.02, seed=7, framework="areal")


def slime() -> pl.DataFrame:
    imp = configs.load(EX / "slime_async.sh")
    m = synthetic_metrics(imp.scenario.replace(**TRUE["slime"]), 24, drift=0.015, noise=0.02, seed=11)
    m = m.with_columns(step_s=pl.max_horizontal("gen_s", pl.col("train_s") + pl.col("sync_s")))
    # slime's names as rollsim.calibrate reads them (the first name of each column's first alternative)
    names = FRAMEWORK_METRICS["slime"]
    return m.select([pl.col(c).alias(names[c][0][0]) for c in m.columns])


def main(out: Path) -> None:
    for name, df in (("areal_grpo_metrics.csv", areal()), ("slime_async_metrics.csv", slime())):
        df.with_columns(pl.col(pl.Float64).round(4)).write_csv(out / name)
        print(f"wrote {out / name} ({df.height} rows)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else EX)
