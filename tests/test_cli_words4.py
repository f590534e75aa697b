"""Wording and guidance on the command line: warnings name the flags (Python keeps the field names),
``rollsim presets`` says which system warned, ``--help`` without docstring markup and with what a
None default means, and ``rollsim whatif --plot`` with whole variant labels. The refusals (a TOML
key's "did you mean", ``--model`` / ``--gpu``) are rows of tests/bad_inputs_words4.py."""

from __future__ import annotations

import argparse
import re
import warnings
from pathlib import Path

import pytest

import rollsim
from rollsim import NoTrainingStepWarning, Scenario, cli, configs, presets, simulate
from rollsim.calibration import calibrate
from rollsim.cli import main
from rollsim.what_if import plot_whatif, whatif

EX = Path(rollsim.__file__).parent / "examples" / "configs"


def _warnings(err: str) -> list[str]:
    return [line.removeprefix("rollsim: warning: ") for line in err.splitlines() if line.startswith("rollsim: warning:")]


@pytest.mark.filterwarnings("default::rollsim.NoTrainingStepWarning")  # said on stderr, checked
def test_cli_warning_names_flags_python_keeps_fields(capsys):
    assert main(["run", "--horizon-s", "5"]) == 0
    (line,) = _warnings(capsys.readouterr().err)
    assert line == ("no training step: no batch filled within --horizon-s 5 s (258 samples started, 2 finished, "
                    "against --batch-size 512); staleness and tokens trained are empty. Lengthen --horizon-s, lower "
                    "--batch-size, or add --rollout-slots.")
    with pytest.warns(NoTrainingStepWarning) as got:
        simulate(Scenario(horizon_s=5.0), record="summary")
    assert str(got[0].message) == ("no training step: no batch filled within horizon_s = 5 s (258 samples started, 2 "
                                   "finished, against batch_size = 512); staleness and tokens trained are empty. "
                                   "Lengthen horizon_s, lower batch_size, or add rollout_slots.")


def test_warning_flags_come_from_the_command():
    parser = cli.build_parser()
    run = cli._command_flags(parser, "run")
    assert (run["pipeline.max_staleness"], run["lengths.mu"], run["agentic.max_turns"]) == (
        "--max-staleness", "--mu", "--max-turns")
    text = "set pipeline.max_staleness or max_lag_samples (fully_async); seed and mu stay, lengths.mu_x too"
    assert cli._flags_in_text(text, run) == (
        "set --max-staleness or --max-lag-samples (fully_async); seed and mu stay, lengths.mu_x too")
    # a row's label (name=value, as the table spells it) and a call keep their names
    label = "fully-async, max_staleness=2: grows; see batch_size(...) or pipeline.batch_order.share=0.5"
    assert cli._flags_in_text(label, run) == label
    # split sizes the pool itself: its hidden --rollout-slots is never suggested
    split = cli._command_flags(parser, "split")
    assert "rollout_slots" not in split and split["batch_size"] == "--batch-size"
    assert cli._flags_in_text("add rollout_slots", split) == "add rollout_slots"


@pytest.mark.filterwarnings("default::rollsim.NoTrainingStepWarning")  # said on stderr, checked
def test_presets_warnings_name_the_system(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = presets.compare(Scenario(horizon_s=5.0, group_size=8, prompt_tokens=500.0, prefill_tokens_per_s=10000.0))
    silent = set(df.filter(df["steps"] > 0)["system"])
    stepless = [s for s in df["system"] if s not in silent]
    assert len(stepless) >= 3 and silent  # both kinds, so the test tells them apart
    assert main(["presets", "--horizon-s", "5", "--format", "csv"]) == 0
    lines = _warnings(capsys.readouterr().err)
    assert [line.split(": no training step", 1)[0] for line in lines] == stepless
    assert all(": no training step: no batch filled within --horizon-s 5 s (" in line for line in lines)


def _help(command: str, flag: str) -> str:
    sub = cli.build_parser()._subparsers._group_actions[0].choices[command]  # type: ignore[union-attr]
    action = sub._option_string_actions[flag]
    return sub._get_formatter()._expand_help(action)


def test_help_has_no_markup_and_says_what_none_means():
    assert _help("run", "--sigma") == ("Standard deviation of the log-length, in [0, 10] (see rollsim.lengths.MAX_SIGMA "
                                       "for why these bounds keep every quantile and the mean finite) (with lognormal; "
                                       "default: 1.0)")
    assert _help("run", "--max-tokens").startswith(
        "Truncation (the generation limit), tokens, in [1, 2**40] (rollsim.lengths.MAX_TOKENS) (with ")
    assert _help("run", "--max-staleness").endswith("(with fully-async; default: none, no cap)")
    assert _help("compare", "--kv-cache-tokens").endswith("(default: none, unlimited)")
    assert _help("run", "--admission-eta").endswith("(with fully-async; default: none, off)")
    assert _help("run", "--over-sampling").endswith("(with sync, one-step, k-step; default: none, one batch)")
    parser = cli.build_parser()
    markup = re.compile(r"``|:[a-z]+:`|default: None\b")
    for name, sub in parser._subparsers._group_actions[0].choices.items():  # type: ignore[union-attr]
        for action in sub._actions:
            if action.help and action.help != argparse.SUPPRESS:
                text = sub._get_formatter()._expand_help(action)
                assert not markup.search(text), (name, action.option_strings, text)
        sub.format_help()  # every help string expands


def test_plain_text_of_roles():
    assert cli._plain("see :class:`~rollsim.Agentic` and :func:`the runner <rollsim.simulate>`, ``x = 1``, "
                      ":data:`MAX_SIGMA`, :data:`NOT_A_NAME`") == (
        "see Agentic and the runner, x = 1, rollsim.lengths.MAX_SIGMA, NOT_A_NAME")


def test_cli_model_message_names_what_is_accepted(capsys):
    assert main(["hardware", "--model", "Qwen3-8", "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rollsim: error: --model: unknown model 'Qwen3-8'; did you mean Qwen3-8B? (known, ")
    assert "ModelSpec" not in err and "--hf-config FILE" in err and "Llama-3.1-8B" in err
    with pytest.raises(rollsim.ScenarioError, match=r"^model: unknown model 'qwen3_8'; did you mean Qwen3-8B\? "):
        rollsim.hardware.model("qwen3_8")
    with pytest.raises(rollsim.ScenarioError, match=r"^model: unknown model 'llama-7b' \(known"):  # no false hint
        rollsim.hardware.model("llama-7b")


def test_whatif_plot_labels_are_whole_and_inside(tmp_path):
    cal = calibrate(EX / "verl_grpo_metrics.csv", configs.load(EX / "verl_grpo.yaml"), bootstrap=5)
    df = whatif(cal, [{"pipeline": "fully-async", "max_staleness": s, "rollout_gpus": g} for s in (2, 4) for g in (4, 8)]
                + [{"pipeline": "sync", "rollout_gpus": 8}], draws=1)
    assert "fully-async, max_staleness=2, rollout_gpus=8" in df["variant"].to_list()
    fig = plot_whatif(df, path=tmp_path / "w.png")
    assert (tmp_path / "w.png").stat().st_size > 1000
    fig.draw_without_rendering()
    renderer = fig._get_renderer()
    ax = fig.axes[0]
    ticks = ax.get_xticklabels()
    assert [t.get_text().replace(",\n", ", ") for t in ticks] == df["variant"].to_list()
    boxes = [t.get_window_extent(renderer) for t in (*ticks, ax.yaxis.label, ax.title)]
    for b in boxes:  # every label inside the figure
        assert b.x0 >= 0 and b.y0 >= 0 and b.x1 <= fig.bbox.width and b.y1 <= fig.bbox.height, b
    xs = sorted((b.x0, b.x1) for b in boxes[:len(ticks)])
    assert all(left[1] < right[0] for left, right in zip(xs, xs[1:]))  # no two bar labels overlap
