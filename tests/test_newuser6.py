"""A new user's first hours: every flag of every command says what it does and its default, ``--max-tokens``
its default per kind of lengths, and ``rollsim.aggregate`` takes one metric name as one column."""

from __future__ import annotations

import argparse

import polars as pl
import pytest

import rollsim
from rollsim.cli import build_parser


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _options():
    for name, p in _subparsers().items():
        for a in p._actions:
            if a.option_strings and not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS:
                yield name, a


def test_every_flag_has_help():
    missing = [(name, a.option_strings[0]) for name, a in _options() if not (a.help or "").strip()]
    assert missing == []   # was: --format of compare / presets / split / validate, split --pipeline, ...


def test_every_flag_with_a_default_says_it():
    silent = []
    for name, a in _options():
        if a.nargs == 0 or a.required or a.default is None:
            continue
        h = a.help or ""
        if "%(default)s" not in h and "default" not in h and f"({a.default})" not in h:
            silent.append((name, a.option_strings[0], a.default))
    assert silent == []   # was: --format ('table'), split --pipeline ('fully-async'), --engine, --train-backend


@pytest.mark.parametrize("command", ["split", "hardware"])
def test_deployment_choices_say_their_defaults(command):
    text = " ".join(_subparsers()[command].format_help().split())
    assert "--engine {vllm,sglang} the serving engine whose decode and KV model are used (vllm)" in text
    assert "--train-backend {fsdp2,megatron} the training backend whose step model is used (fsdp2)" in text


def test_split_help_says_its_pipeline_and_format():
    text = " ".join(_subparsers()["split"].format_help().split())
    assert "--pipeline {sync,one-step,fully-async} the pipeline every split runs (fully-async)" in text
    assert "--format {table,csv} table: rounded for reading; csv: every column, exact values (table)" in text
    assert ("to offload and reload the rollout engine; auto (with --model): the deployment's switch, as rollsim "
            "hardware --colocated prices it (default: not run)") in text


def test_max_tokens_help_gives_the_default_of_each_kind():
    text = " ".join(_subparsers()["run"].format_help().split())
    assert ("(with lognormal, empirical, FILE, data sets; default: 16384 with lognormal; none, untruncated, "
            "otherwise)") in text
    # what the help says is what a run does
    assert rollsim.LogNormal().max_tokens == 16384
    assert rollsim.datasets.deepseek_r1_serving().max_tokens is None


def test_aggregate_takes_one_metric_name():
    df = pl.DataFrame({"train_step_s": [30.0, 30.0, 60.0, 60.0], "seed": [0, 1, 0, 1],
                       "steps": [10, 12, 20, 22], "drop_fraction": [0.1, 0.3, 0.0, 0.0]})
    one = rollsim.aggregate(df, "steps")          # was: metrics: no column 's'
    assert one.columns == ["train_step_s", "seeds", "steps_mean", "steps_std", "steps_ci_low", "steps_ci_high"]
    assert one["steps_mean"].to_list() == [11.0, 21.0]
    assert one.equals(rollsim.aggregate(df, ["steps"]))
    by = rollsim.aggregate(df, "drop_fraction", by="train_step_s")
    assert by["drop_fraction_mean"].to_list() == pytest.approx([0.2, 0.0])
    with pytest.raises(rollsim.ScenarioError, match=r"^metrics: no column 'step' "):
        rollsim.aggregate(df, "step")


def test_calibrated_prints_in_a_few_lines():
    from rollsim.configs import EXAMPLES

    imp = rollsim.configs.load(EXAMPLES / "verl_grpo.yaml")
    cal = rollsim.calibrate(EXAMPLES / "verl_grpo_metrics.csv", imp, bootstrap=5)
    text = repr(cal)
    lines = text.splitlines()
    # was one line of about 20,000 characters (every frame, every draw, the imported config's notes)
    assert len(text) < 1500 and len(lines) == 1 + cal.params.height
    assert lines[0] == ("Calibrated(framework='verl', 40 metrics rows, 5 bootstrap draws, 0 notes; .params, "
                        ".residuals, .scenario:")
    v = cal.values["decode_tokens_per_s"]
    row = cal.params.row(by_predicate=pl.col("name") == "decode_tokens_per_s", named=True)
    assert f"  decode_tokens_per_s = {v:.4g} tokens/s per sequence [{row['low']:.4g}, {row['high']:.4g}]" in lines
    assert any(ln.startswith("  lengths.sigma = ") and "- [" not in ln for ln in lines)   # no unit, no dash
    assert str(cal) == text and text.endswith("])")


def test_whatif_plot_says_which_variants_drop(tmp_path):
    from rollsim.what_if import plot_whatif

    df = pl.DataFrame({"variant": ["baseline", "fully-async, max_staleness=2", "one-step"],
                       "step_s": [170.0, 69.0, 135.0], "step_s_low": [166.0, 68.5, 126.0],
                       "step_s_high": [174.0, 69.5, 136.0], "measured_step_s": [173.6, None, None],
                       "drop_fraction": [0.0, 0.629, 0.001]})
    fig = plot_whatif(df, path=tmp_path / "w.png")
    ax = fig.axes[0]
    notes = [(t.get_text(), t.xy) for t in ax.texts]
    # was: no mark at all, so the 69 s bar read as 2.5x faster with nothing said of the 63 % it throws away
    assert notes == [("drops 63%", (1, 69.5))]
    assert ax.get_ylim()[1] >= 174.0 * 1.12
    assert (tmp_path / "w.png").stat().st_size > 0


def test_staleness_plot_note_stays_clear_of_the_bars():
    from rollsim import plot

    res = rollsim.simulate(rollsim.Scenario(horizon_s=1800.0))   # uncapped: nothing dropped
    assert res.summary["samples_dropped"] == 0
    fig = plot.staleness_by_length(res)
    ax, tw = fig.axes
    fig.canvas.draw()
    (note,) = [t for t in tw.texts if t.get_text() == "no samples dropped"]
    box = note.get_window_extent()
    bars = [p.get_window_extent() for p in ax.patches if p.get_height() > 0]
    assert bars and not any(box.overlaps(b) for b in bars)   # was: drawn over the tallest (>=16K) bar
    assert tw.get_ylabel() == "drop rate (dashed line)"


def test_a_flag_given_twice_is_warned(capsys):
    from rollsim.cli import main

    small = ["--rollout-slots", "8", "--batch-size", "8", "--mu", "4", "--train-step-s", "1"]
    assert main(["run", "--horizon-s", "60", *small, "--horizon-s=120"]) == 0
    out, err = capsys.readouterr()
    # was: the 60 s dropped without a word
    assert err.splitlines()[0] == ("rollsim: warning: given more than once: --horizon-s 60, then --horizon-s 120; "
                                   "the last, --horizon-s 120, is used")
    assert '"end_s": 12' in out   # the run is the last value's (the horizon's crossing event, just past 120 s)
    assert main(["run", "--prefix-sharing", *small, "--no-prefix-sharing", "--horizon-s", "60"]) == 0
    assert ("rollsim: warning: given more than once: --prefix-sharing, then --no-prefix-sharing; the last, "
            "--no-prefix-sharing, is used") in capsys.readouterr().err
    # the same value twice, and a repeatable flag, say nothing
    assert main(["run", "--horizon-s", "60", *small, "--horizon-s", "60"]) == 0
    assert "more than once" not in capsys.readouterr().err
    assert main(["hardware", "--model", "Qwen3-8B", "--gpu", "H100", "--train-tokens", "1000",
                 "--train-option", "mfu=0.3", "--train-option", "ppo_epochs=2"]) == 0
    assert "more than once" not in capsys.readouterr().err
