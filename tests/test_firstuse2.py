"""A new user's second tryout: a run that completes no training step says so (why, with the samples
started and finished against the batch size); ``rollsim calibrate`` / ``whatif`` print readable
tables (rounded by unit, text in full, a NaN column footnoted with why) while csv / json stay
exact; ``--help`` says a default once; ``rollsim plot --pipeline`` takes and lists the file tags;
``rollsim presets --help`` says that presets choose their own pipelines. The error messages are
rows of ``tests/bad_inputs_firstuse2.py``."""

from __future__ import annotations

import io
import math
import warnings

import polars as pl
import pytest

from rollsim import NoTrainingStepWarning, Scenario, ScenarioError, configs, simulate
from rollsim.cli import build_parser, main
from rollsim._text import sig as _sig
from rollsim.configs.cli import format_table

EX = configs.EXAMPLES
ADVICE = "staleness and tokens trained are empty. Lengthen horizon_s"


def words(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------------ no step
def test_a_run_whose_batch_never_fills_warns_with_its_counts():
    with pytest.warns(NoTrainingStepWarning) as rec:
        res = simulate(Scenario(horizon_s=100.0), record="summary")
    s = res.summary
    assert (s["steps"], s["steps_started"], s["samples_started"], s["samples_finished"]) == (0, 0, 515, 259)
    assert [str(w.message) for w in rec] == [
        "no training step: no batch filled within horizon_s = 100 s (515 samples started, 259 finished, against "
        f"batch_size = 512); {ADVICE}, lower batch_size, or add rollout_slots."]


def test_a_first_step_longer_than_the_horizon_warns_differently():
    with pytest.warns(NoTrainingStepWarning) as rec:
        s = simulate(Scenario(horizon_s=600.0, train_step_s=1000.0), record="summary").summary
    assert (s["steps"], s["steps_started"]) == (0, 1)
    assert [str(w.message) for w in rec] == [
        "no training step completed within horizon_s = 600 s: the first step started but did not end (1768 samples "
        f"started, 1512 finished, against batch_size = 512); {ADVICE}."]


def test_a_run_with_a_step_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoTrainingStepWarning)
        s = simulate(Scenario(horizon_s=1000.0), record="summary").summary
    assert s["steps"] >= 1


@pytest.mark.filterwarnings("default::rollsim.NoTrainingStepWarning")
def test_the_command_line_says_it_on_stderr(capsys):
    assert main(["run", "--batch-size", "100000"]) == 0  # the tryout's command
    out, err = capsys.readouterr()
    assert '"steps": 0' in out
    assert err == ("rollsim: warning: no training step: no batch filled within --horizon-s 7200 s (17851 samples "
                   "started, 17595 finished, against --batch-size 100000); staleness and tokens trained are empty. "
                   "Lengthen --horizon-s, lower --batch-size, or add --rollout-slots.\n")  # the flags, not the fields


# ------------------------------------------------------------------------------------ help texts
def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


def test_every_flag_says_its_default_once():
    seen = 0
    for name, p in _subparsers().items():
        for action in p._actions:
            h = (action.help or "").replace("%(default)s", "")
            if "(default)" in h:
                seen += 1
                assert "default:" not in h, (name, action.option_strings, h)
    assert seen >= 7  # run's --prefill-tokens-per-s, --slots-per-instance, --logprob-s-per-token, ... at least
    text = words(_subparsers()["run"].format_help())
    assert "requests); math.inf (default) makes prefill free --prefix-sharing" in text
    assert "keeps every slot independent (the chapter) --decode-slowdown-per-seq" in text
    assert "fully_async use_rollout_log_probs) --decode-throughput-table" in text
    assert "Fixed seconds per training step" in text and "(default: 60.0)" in text  # other notes stay


def test_presets_help_says_presets_choose_their_pipelines():
    text = words(_subparsers()["presets"].format_help())
    assert ("Each preset chooses its own pipeline and staleness cap, so the pipeline's flags (--pipeline, "
            "--max-staleness, ...) do not apply here: give them to rollsim run.") in text


def test_calibrate_and_whatif_describe_themselves_and_format():
    subs = _subparsers()
    for name in ("calibrate", "whatif"):
        p = subs[name]
        assert p.description and p.description.startswith(("Imports the run's config", "Calibrates on the run's"))
        fmt = next(a for a in p._actions if "--format" in a.option_strings)
        assert fmt.help and "csv / json" in fmt.help and "exact values" in fmt.help


# ------------------------------------------------------------------------------------ tables
@pytest.mark.parametrize("x, text", [
    (6.209502, "6.210"), (0.011666, "0.01167"), (14.671105, "14.67"), (8760.074176, "8760"),
    (123456.7, "123457"), (1.5e6, "1.500e+06"), (0.00012302, "0.0001230"), (1.2302e-05, "1.230e-05"),
    (-23.081527, "-23.08"), (0.0, "0"), (math.inf, "inf")])
def test_significant_digits(x, text):
    assert _sig(x) == text


def test_format_table_rounds_by_unit_keeps_text_and_footnotes_nan():
    df = pl.DataFrame({"variant": ["baseline", "fully-async, max_staleness=1, rollout_gpus=8"],
                       "step_s": [173.602567, 82.496744], "tokens_per_s": [8760.074176, 16477.590369],
                       "staleness_long": [0.0, math.nan], "drop_fraction": [0.0, 0.712292], "steps": [12, 12],
                       "source": ["response_length/mean, response_length/max, response_length/clip_ratio", None]})
    assert format_table(df, {"staleness_long": "no long answer", "step_s": "never shown"}).split("\n") == [
        "variant                                       step_s  tokens_per_s  staleness_long*  drop_fraction  steps  "
        "source",
        "--------------------------------------------  ------  ------------  ---------------  -------------  -----  "
        "---------------------------------------------------------------------",
        "baseline                                       173.6          8760             0.00          0.000     12  "
        "response_length/mean, response_length/max, response_length/clip_ratio",
        "fully-async, max_staleness=1, rollout_gpus=8    82.5         16478                -          0.712     12  -",
        "* staleness_long - (undefined): no long answer"]


def _calibrate_args(fmt: str) -> list[str]:
    return ["calibrate", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
            "--bootstrap", "10", "--format", fmt]


def test_calibrate_table_is_readable_and_csv_exact(capsys):
    assert main(_calibrate_args("table")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "…" not in "\n".join(lines)
    row = next(line for line in lines if line.startswith("lengths.mu "))
    assert row.split()[1:4] == ["6.210", "6.202", "6.215"]  # 4 significant digits of 6.209502 and its interval
    assert row.endswith("response_length/mean, response_length/max, response_length/clip_ratio")
    assert next(line for line in lines if line.startswith("train_s_per_token ")).split()[1] == "1.230e-05"
    assert main(_calibrate_args("csv")) == 0
    exact = pl.read_csv(io.StringIO(capsys.readouterr().out))
    mu = exact.filter(pl.col("name") == "lengths.mu").row(0, named=True)
    assert round(mu["value"], 6) == 6.209502 and mu["source"].endswith("response_length/clip_ratio")


def test_whatif_table_footnotes_the_nan_column(capsys):
    args = ["whatif", "--config", str(EX / "verl_grpo.yaml"), "--metrics", str(EX / "verl_grpo_metrics.csv"),
            "--pipeline", "fully-async", "--max-staleness", "1", "--rollout-gpus", "8", "--bootstrap", "5",
            "--draws", "0"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split()[-2:] == ["staleness_long*", "drop_fraction"]
    row = next(line for line in lines if line.startswith("fully-async, max_staleness=1, rollout_gpus=8 "))
    assert row.split()[-2] == "-"
    assert lines[-1].startswith("* staleness_long - (undefined): no trained answer was longer than 8000 tokens, the bound of staleness_long "
                                "(rollsim.LONG_TOKENS); a fully async run's longest answers are the stalest")
    assert "max_tokens 8192) put 8.8e-06 of answers beyond 8000 tokens" in lines[-1]
    assert main([*args, "--format", "csv"]) == 0
    exact = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert math.isnan(exact["staleness_long"][1]) and exact["staleness_long"][0] == 0.0
    assert "train_scale_low" in exact.columns and "measured_step_s" in exact.columns


# ------------------------------------------------------------------------------------ plot and TOML
def test_plot_takes_and_lists_the_file_tags(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from rollsim.report import plot_dir

    assert main(["compare", "--horizon-s", "600", "--out", str(tmp_path / "cmp")]) == 0
    capsys.readouterr()
    for name in ("fully async, cap 2", "fully_async_cap_2", "fully-async-cap-2"):
        plot_dir(tmp_path / "cmp", "slot-timeline", tmp_path / "t.png", pipeline=name)
        assert (tmp_path / "t.png").stat().st_size > 1000
        (tmp_path / "t.png").unlink()
    with pytest.raises(ScenarioError) as e:
        plot_dir(tmp_path / "cmp", "slot-timeline", tmp_path / "t.png", pipeline="fully-async-cap-3")
    assert str(e.value) == ("pipeline: unknown pipeline 'fully-async-cap-3'; the directory has ['synchronous', "
                            "'one-step async', 'fully async', 'fully async, cap 2'] (file tags: ['synchronous', "
                            "'one_step_async', 'fully_async', 'fully_async_cap_2'])")


def test_an_unknown_key_names_its_file(tmp_path, capsys):
    t = tmp_path / "t.toml"
    t.write_text("rollout_slot = 512\n")
    with pytest.raises(ScenarioError) as e:
        Scenario.from_toml(t)
    assert str(e.value).startswith(f"rollout_slot: unknown key in {str(t)!r}; did you mean rollout_slots? (allowed: ['agentic', 'batch_size', ")
    assert main(["run", str(t)]) == 2
    assert capsys.readouterr().err == f"rollsim: error: {e.value}\n"
    t.write_text("rollout_slots = 0\n")  # a value error is the field's, as before
    with pytest.raises(ScenarioError, match=r"^rollout_slots: must be in \[1, 16777216\], got 0$"):
        Scenario.from_toml(t)


def test_whatif_keeps_only_the_warnings_of_its_last_horizon():
    # rollsim.what_if sizes a run's horizon from a serial estimate and retries 4x longer when too few
    # steps completed: this batched scenario's steps take about 10,772 s against the estimate's 606 s, so
    # the first horizon (6 x 606 s) completes no step; a retry's run does, and nothing warns
    from rollsim.what_if import _measure, _step_estimate

    sc = Scenario(rng="fast", slots_per_instance=256, decode_slowdown_per_seq=0.2)
    assert _step_estimate(sc) == pytest.approx(606.1333333333333, rel=1e-12)
    with pytest.warns(NoTrainingStepWarning):
        assert simulate(sc.replace(horizon_s=_step_estimate(sc) * 6), record="summary").summary["steps"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = _measure(sc, 4, 0)
    assert m["step_s"] == pytest.approx(10771.545290092485, rel=1e-12)


def test_split_says_why_a_measured_growth_is_not_called_runaway(capsys):
    """A split row of 3 steps showed ``ready_queue_growth_per_step=800`` beside
    ``generation_outruns_training=false`` and said the growth could not be measured: the text now
    says what was measured and why it is not called growth without bound."""
    import io

    import polars as pl

    from rollsim.cli import main

    assert main(["split", "--gpus", "4", "--gpu-s-per-token", "0.004", "--format", "csv"]) == 0
    df = pl.read_csv(io.StringIO(capsys.readouterr().out))
    row = df.row(0, named=True)
    assert (row["rollout_gpus"], row["steps"], row["ready_queue_growth_per_step"]) == (1, 3, 800.0)
    assert row["generation_outruns_training"] is False
    assert ("generation outruns training (throughput_ratio 2.56 > 1; the ready queue grew by 800 samples per step "
            "over 3 steps, too few to call it growth without bound; run a longer --horizon-s to see it)"
            in row["excluded_because"])


def test_out_refuses_a_sweep_directory_by_the_stores_own_file_names():
    # the command line's list of a sweep directory's files is the store's (not a retyped copy)
    from rollsim import cli
    from rollsim.sweeps._store import LOCK, MANIFEST

    assert cli._RESULT_FILES["sweep"] == (MANIFEST, LOCK)
