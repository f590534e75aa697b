"""A new user's first hours as a slime user (THUDM/slime's own launch script layout and a wandb export of
its metrics) and as an AReaL user asking what ``max_head_offpolicyness`` does: a quoted string spanning
lines in a launch script is read as the shell reads it, a step whose metrics wandb holds in separate
rows (slime logs its rollout's and its trainer's metrics from two processes) is merged, a wandb chart
exported over slime's ``rollout/step`` axis is read as a chart export, and ``rollsim whatif
--admission-eta`` varies AReaL's admission bound."""

from __future__ import annotations

import warnings

import polars as pl
import pytest

import rollsim
from rollsim.cli import main
from rollsim.configs import EXAMPLES
from rollsim.configs._common import split_command

# THUDM/slime scripts/run-qwen3-4B.sh (commit 05a0752) ends with these lines: a JSON string over several
# lines, then `ray job submit ... -- python3 train.py ...`
_RAY = '''export MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
ray start --head --node-ip-address ${MASTER_ADDR} --num-gpus 8 --disable-usage-stats
RUNTIME_ENV_JSON="{
  \\"env_vars\\": {
    \\"PYTHONPATH\\": \\"/root/Megatron-LM/\\",
    \\"NCCL_NVLS_ENABLE\\": \\"${HAS_NVLINK}\\"
  }
}"
ray job submit --address="http://127.0.0.1:8265" \\
   --runtime-env-json="${RUNTIME_ENV_JSON}" \\
   -- python3 train_async.py \\
   --actor-num-nodes 1 --actor-num-gpus-per-node 4 --rollout-num-gpus 4 \\
   ${MODEL_ARGS[@]} \\
   ${ROLLOUT_ARGS[@]}
'''
_ROLLOUT = """ROLLOUT_ARGS=(
   --rollout-batch-size 32
   --n-samples-per-prompt 8
   --global-batch-size 256
   --rollout-max-response-len 8192
)
"""


def test_a_quoted_string_over_several_lines_is_one_word():
    words = split_command('A="{\n  \\"k\\": 1\n}"\necho --x "$A" --y 2\n')
    assert words == ["echo", "--x", '{\n  "k": 1\n}', "--y", "2"]


def test_slime_launch_script_with_a_multiline_runtime_env_imports(tmp_path):
    path = tmp_path / "run-qwen3-4B.sh"
    path.write_text('#!/bin/bash\nHAS_NVLINK=0\nsource "${SCRIPT_DIR}/models/qwen3-4B.sh"\n' + _ROLLOUT + _RAY)
    imp = rollsim.configs.load(path)  # was: config: cannot split the command line 'RUNTIME_ENV_JSON="{': ...
    assert imp.framework == "slime"
    assert (imp.scenario.batch_size, imp.scenario.group_size) == (256, 8)
    assert imp.scenario.lengths.max_tokens == 8192.0
    assert (imp.layout.train_gpus, imp.layout.rollout_gpus) == (4, 4)
    notes = {n.option: n for n in imp.notes}
    # the multi-line quote splits as one word of ray job submit: the launcher's, not read (said once)
    assert "--runtime-env-json" not in notes and notes["(other commands)"].kind == "ignored"
    assert "the launcher before the trainer (ray job submit ...)" in notes["(other commands)"].became
    # MODEL_ARGS comes from the sourced scripts/models/qwen3-4B.sh: its arguments are said not read
    assert (notes["${MODEL_ARGS[@]}"].kind, notes["${MODEL_ARGS[@]}"].became) == (
        "ignored", "not read: the script does not set it (a file it sources, such as slime's scripts/models/*.sh "
        "for MODEL_ARGS, or the environment), so its arguments are not part of the import")
    assert "${ROLLOUT_ARGS[@]}" not in notes


def _slime_metrics() -> pl.DataFrame:
    return pl.read_csv(EXAMPLES / "slime_async_metrics.csv")


def _history_in_parts(df: pl.DataFrame) -> pl.DataFrame:
    """The table as a wandb run history holds slime's metrics: the rollout's and the trainer's of each
    step in two rows (two ``wandb.log`` calls), both with ``rollout/step``, and wandb's ``_step``."""
    rollout = ["rollout/step", "perf/rollout_time", "rollout/response_len/mean", "rollout/response_len/max",
               "rollout/truncated_ratio"]
    train = ["rollout/step", "perf/step_time", "perf/actor_train_time", "perf/update_weights_time"]
    parts = pl.concat([df.select(rollout).with_row_index("_order").with_columns(pl.col("_order") * 2),
                       df.select(train).with_row_index("_order").with_columns(pl.col("_order") * 2 + 1)],
                      how="diagonal").sort("_order")
    parts = parts.rename({"_order": "_step"}).with_columns(pl.col("_step").cast(pl.Int64)).select(
        ["_step", *df.columns])
    # and the trainer's per-optimizer-step rows, logged over train/step without rollout/step (slime
    # logging_utils.log(args, log_dict, step_key="train/step"))
    train_rows = pl.DataFrame({"_step": [1000 + i for i in range(30)], "train/step": list(range(30)),
                               "train/loss": [0.1] * 30})
    return pl.concat([parts, train_rows], how="diagonal")


def _fit(cal: rollsim.calibration.Calibrated) -> list:
    return cal.params.select("name", "value", "low", "high", "source").rows()


def test_wandb_history_with_a_step_in_two_rows_is_merged():
    imp = rollsim.configs.load(EXAMPLES / "slime_async.sh")
    whole = rollsim.calibrate(_slime_metrics(), imp, bootstrap=20)
    parts = _history_in_parts(_slime_metrics())
    assert parts.height == 78
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no near-miss warning for wandb's _step either
        cal = rollsim.calibrate(parts, imp, bootstrap=20)  # was: rollout/step 0 appears in 2 rows ...
    assert _fit(cal) == _fit(whole)
    assert cal.metrics.height == 24
    assert ("metrics: left out 30 rows without a rollout/step and without any metric calibrate reads (rows of other "
            "log calls, such as slime's train/* rows logged over train/step)") in cal.notes
    assert ("metrics: 48 rows merged into 24 steps by rollout/step (each step's metrics were logged in separate "
            "rows, as a wandb history export of slime's rollout and training processes gives them; no metric had "
            "two values in a step)") in cal.notes
    assert "metrics: not read (no metric calibrate uses): _step, train/step, train/loss" in cal.notes


def test_a_step_logged_twice_with_other_values_is_still_refused():
    df = _slime_metrics()
    again = pl.concat([df, df.head(3).with_columns(pl.col("perf/step_time") + 1.0)])
    imp = rollsim.configs.load(EXAMPLES / "slime_async.sh")
    with pytest.raises(rollsim.ScenarioError, match=r"^metrics: rollout/step 0 appears in 2 rows \(1, 2 more than "):
        rollsim.calibrate(again, imp, bootstrap=0)


def test_wandb_chart_export_over_the_rollout_step_axis(tmp_path):
    df = _slime_metrics()
    run = "qwen3-4b-async"
    chart = df.rename({c: f"{run} - {c}" for c in df.columns if c != "rollout/step"})
    chart = chart.with_columns(*(pl.col(f"{run} - {c}").alias(f"{run} - {c}__MIN") for c in df.columns[1:3]))
    path = tmp_path / "chart.csv"
    chart.write_csv(path)
    imp = rollsim.configs.load(EXAMPLES / "slime_async.sh")
    cal = rollsim.calibrate(path, imp, bootstrap=20)  # was: missing gen_s (generic metric names) ...
    assert _fit(cal) == _fit(rollsim.calibrate(df, imp, bootstrap=20))
    assert cal.notes[0] == (
        f"metrics: a wandb chart export of run {run!r}: its '{run} - ' prefix left off, the chart's bucket "
        f"extremes not read ({run} - perf/step_time__MIN, {run} - perf/rollout_time__MIN), the step read from "
        "rollout/step")


def test_whatif_admission_eta_on_the_command_line(capsys):
    args = ["whatif", "--config", str(EXAMPLES / "areal_grpo.yaml"), "--metrics",
            str(EXAMPLES / "areal_grpo_metrics.csv"), "--bootstrap", "10", "--draws", "2", "--steps", "6"]
    assert main([*args, "--admission-eta", "1,4", "--format", "csv"]) == 0
    got = pl.read_csv(capsys.readouterr().out.encode())
    imp = rollsim.configs.load(EXAMPLES / "areal_grpo.yaml")
    cal = rollsim.calibrate(EXAMPLES / "areal_grpo_metrics.csv", imp, bootstrap=10)
    want = rollsim.whatif(cal, [{"admission_eta": 1}, {"admission_eta": 4}], draws=2, steps=6)
    assert got["variant"].to_list() == ["baseline", "admission_eta=1", "admission_eta=4"]
    assert got["step_s"].to_list() == pytest.approx(want["step_s"].to_list(), rel=1e-9)
    # AReaL's bound drops nothing; a looser one trains staler samples in less time
    assert got["drop_fraction"].to_list() == [0.0, 0.0, 0.0]
    assert got["step_s"][2] < got["step_s"][0] < got["step_s"][1]
    assert got["staleness_mean"][1] < got["staleness_mean"][0] < got["staleness_mean"][2]


@pytest.mark.parametrize("fn", ["fully_async_rollout.generate_rollout_fully_async",
                                "examples.fully_async.fully_async_rollout.generate_rollout_fully_async",
                                "slime.rollout.fully_async_rollout.generate_rollout_fully_async"])
def test_slime_fully_async_rollout_function_as_its_readme_gives_it(fn, tmp_path):
    # THUDM/slime examples/fully_async/README.md: train_async.py --rollout-function-path
    # fully_async_rollout.generate_rollout_fully_async (the directory on PYTHONPATH); was read as one-step
    path = tmp_path / "fa.sh"
    path.write_text(f"python3 train_async.py --rollout-batch-size 32 --n-samples-per-prompt 8 \\\n"
                    f"   --rollout-function-path {fn}\n")
    imp = rollsim.configs.load(path)
    assert isinstance(imp.scenario.pipeline, rollsim.FullyAsync)
    notes = {n.option: (n.kind, n.became) for n in imp.notes}
    assert notes["--rollout-function-path"] == (
        "read", "the fully asynchronous rollout function (a worker that never stops): FullyAsync")


def test_slime_custom_rollout_function_is_noted(tmp_path):
    path = tmp_path / "c.sh"
    path.write_text("python3 train_async.py --rollout-batch-size 32 --rollout-function-path my_pkg.rollout.generate\n")
    imp = rollsim.configs.load(path)
    assert isinstance(imp.scenario.pipeline, rollsim.OneStepAsync)
    notes = {n.option: (n.kind, n.became) for n in imp.notes}
    assert notes["--rollout-function-path"][0] == "assumed"


def test_a_batch_pipeline_variant_keeps_the_configs_over_sampling():
    # slime_async.sh: --over-sampling-batch-size 48 for a rollout batch of 32 prompts (over_sampling 0.5);
    # the variant "one-step" is the baseline's own pipeline: it took 2x the baseline's step without it
    imp = rollsim.configs.load(EXAMPLES / "slime_async.sh")
    assert imp.scenario.pipeline == rollsim.OneStepAsync(over_sampling=0.5)
    cal = rollsim.calibrate(EXAMPLES / "slime_async_metrics.csv", imp, bootstrap=10)
    df = rollsim.whatif(cal, [{"pipeline": "one-step"}, {"pipeline": "sync"}], draws=2, steps=6)
    base, same, sync = df.rows(named=True)
    assert same["step_s"] == base["step_s"] and same["drop_fraction"] == base["drop_fraction"]
    assert sync["drop_fraction"] == pytest.approx(1 / 3, abs=0.01)  # the over-sampled third dropped there too
    assert sync["step_s"] > base["step_s"]


def test_whatif_footnote_names_the_over_sampling_that_drops_the_longest_answers(capsys):
    args = ["whatif", "--config", str(EXAMPLES / "slime_async.sh"), "--metrics", str(EXAMPLES / "slime_async_metrics.csv"),
            "--bootstrap", "5", "--draws", "1", "--steps", "6"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[3].split()[0] == "baseline" and out[3].split()[-2] == "-"  # staleness_long undefined
    assert ("; a batch pipeline over-sampling by 0.5 (the config's) trains each batch's first-finished answers and "
            "drops the longest unfinished; ") in out[-1]


def test_agentic_deployment_line_says_the_decode_table_is_priced_at_a_turns_context_over_the_trajectory(capsys):
    base = ["run", "--model", "Qwen3-32B", "--gpu", "H100", "--rollout-gpus", "8", "--rollout-tp", "2",
            "--horizon-s", "300"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.NoTrainingStepWarning)  # 300 s: no step, the line is what counts
        assert main([*base, "--agentic-preset", "swe-agent", "--pipeline", "fully-async"]) == 0
    err = capsys.readouterr().err
    assert ("at the mean context 16,014 tokens (a turn's, over the trajectory: prompt + earlier turns and "
            "observations + half a turn): ") in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.NoTrainingStepWarning)
        assert main(base) == 0
    assert "(prompt + half the mean answer): " in capsys.readouterr().err
