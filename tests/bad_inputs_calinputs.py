"""Bad run metrics and calibration bases (``rollsim.calibrate``): values out of their range refused naming
the metric and the step, a Deployment base's scenario arguments, OpenRLHF's missing longest answer; appended
to the table of ``tests/bad_inputs.py`` (see its format)."""

from __future__ import annotations

LOAD = "rollsim.configs.load"
VERL = f"{LOAD}(write('v.yaml', 'data: {{train_batch_size: 4, max_response_length: 1024}}\\n'))"
H = "gen_s,train_s,response_mean,response_max"
GOOD = "10,5,100,400\\n12,6,120,500\\n11,5.5,110,450\\n"
DEP = "rollsim.hardware.Deployment('qwen3-4b', 'h100', rollout_gpus=8, train_gpus=8, max_num_seqs=32)"


def cal(csv: str, base: str = VERL, extra: str = "") -> str:
    """The code of a ``rollsim.calibrate`` call on a CSV written from ``csv``."""
    return f"rollsim.calibrate(write('m.csv', '{csv}'), {base}, bootstrap=0{extra})"


ROWS: list[tuple[str, str, str, str]] = [
    # ---------------------------------------------------------------- metric values out of range
    ("metrics", cal(f"{H}\\n10,5,100,400\\n-12,6,120,500\\n11,5.5,110,450\\n"), "ScenarioError",
     "metrics: gen_s must be >= 0 seconds, got -12 at row 1 (counting from 0)"),
    ("metrics", cal("step,timing_s/gen,timing_s/update_actor,response_length/mean,response_length/max\\n0,10,5,100,400\\n"
                    "1,12,-6,120,500\\n2,11,5.5,110,450\\n3,11,-5.5,110,450\\n"), "ScenarioError",
     "metrics: timing_s/update_actor must be >= 0 seconds, got -6 at step 1 (and 1 more row)"),
    ("metrics", cal(f"{H}\\n10,5,0,400\\n12,6,120,500\\n11,5.5,110,450\\n"), "ScenarioError",
     "metrics: response_mean must be > 0 tokens, got 0 at row 0 (counting from 0)"),
    ("metrics", cal(f"{H}\\n10,5,100,90\\n12,6,120,500\\n11,5.5,110,450\\n"), "ScenarioError",
     "metrics: response_max (the longest answer) must be at least response_mean (the mean), got 90 < 100 at row 0 "
     "(counting from 0)"),
    ("metrics", cal(f"{H},response_clip_ratio\\n10,5,100,400,0\\n12,6,120,500,1.5\\n11,5.5,110,450,0\\n"),
     "ScenarioError", "metrics: response_clip_ratio must be in [0, 1] (a fraction of the answers), got 1.5 at row 1 "
                      "(counting from 0)"),
    ("metrics", cal(f"{H}\\n10,5,100,400\\n12,inf,120,500\\n11,5.5,110,450\\n"), "ScenarioError",
     "metrics: train_s must be finite, got inf at row 1 (counting from 0)"),
    ("metrics", cal("timeperf/rollout,timeperf/train_step,ppo_actor/seq_len/avg,ppo_actor/seq_len/max,"
                    "ppo_actor/prompt_len/avg\\n10,5,300,600,200\\n12,6,150,700,200\\n11,5,310,650,200\\n",
                    extra=", framework='areal'"),
     "ScenarioError", "metrics: ppo_actor/seq_len/avg - ppo_actor/prompt_len/avg (the answer length) must be > 0 "
                      "tokens, got -50 at row 1 (counting from 0)"),
    ("metrics", cal(f"{H},batch_samples\\n10,5,100,400,4\\n12,6,120,500,0\\n11,5.5,110,450,4\\n"), "ScenarioError",
     "metrics: batch_samples must be > 0 samples, got 0 at row 1 (counting from 0)"),
    # a missing value leaves its row out (a warning); too few rows left is refused
    ("metrics", cal(f"{H}\\n10,5,100,400\\n12,,120,500\\n11,5.5,110,450\\n"), "ScenarioError",
     "metrics: needs at least 3 steps to fit, got 2 with every metric present (1 left out: train_s at row 1 "
     "(counting from 0))"),
    # OpenRLHF logs no longest answer
    ("metrics", cal("train/timing/generation,train/timing/ppo_train,train/rollout/response_length_mean\\n10,5,100\\n"
                    "12,6,120\\n11,5.5,110\\n", extra=", framework='openrlhf'"), "ScenarioError",
     "metrics: missing response_max (openrlhf metric names; generic column 'response_max': longest answer of the "
     "step, tokens): OpenRLHF logs no longest answer per step (its rollout statistics are "
     "rollout/response_length_mean, rollout/truncated_rate, rollout/num_samples: openrlhf/trainer/ppo_trainer.py, "
     "_compute_rollout_stats); add a column response_max, the step's longest answer in tokens (the answer lengths' "
     "spread is fitted on it); columns given: train/timing/generation, train/timing/ppo_train, "
     "train/rollout/response_length_mean"),
    # ---------------------------------------------------------------- a Deployment base
    ("metrics", cal(f"{H}\\n{GOOD}", DEP), "ScenarioError",
     "prompts_per_step: needed with a Deployment base when the metrics have no batch_samples column (samples "
     "trained per step): pass prompts_per_step="),
    ("metrics", cal(f"{H}\\n{GOOD}", DEP, ", prompts_per_step=4"), "ScenarioError",
     "max_response_tokens: needed with a Deployment base: no step of the metrics cut answers at the limit "
     "(response_clip_ratio > 0), so the limit cannot be read from them; pass max_response_tokens="),
    ("metrics", cal(f"{H},batch_samples\\n10,5,100,400,6\\n12,6,120,500,6\\n11,5.5,110,450,6\\n", DEP,
                    ", group_size=4, max_response_tokens=1024"), "ScenarioError",
     "prompts_per_step: cannot be inferred: the median batch_samples, 6 samples, is not a multiple of group_size 4; "
     "pass prompts_per_step="),
    ("metrics", cal(f"{H}\\n{GOOD}", DEP, ", prompts_per_step=4, max_response_tokens=0"), "ScenarioError",
     "max_response_tokens: must be in [1, 1e9] tokens, got 0"),
    ("metrics", cal(f"{H}\\n{GOOD}", DEP, ", prompts_per_step=4, max_response_tokens=1024, pipeline='async-ish'"),
     "ScenarioError", "pipeline: must be 'sync', 'one-step', 'k-step:K' or 'fully-async', got 'async-ish'"),
    ("metrics", cal(f"{H}\\n{GOOD}", VERL, ", prompts_per_step=4"), "ScenarioError",
     "prompts_per_step: applies to a Deployment base only (the ImportedConfig gives it)"),
    # ---------------------------------------------------------------- command line
    ("config CLI", f"cli('calibrate', '--config', write('v.yaml', 'data: {{train_batch_size: 4}}\\n'), '--metrics', "
                   f"write('m.csv', '{H}\\n10,5,100,400\\n-12,6,120,500\\n11,5.5,110,450\\n'), '--bootstrap', '0')",
     "CliExit", "exit 2: rollsim: error: --metrics: gen_s must be >= 0 seconds, got -12 at row 1 (counting from 0)"),
]
