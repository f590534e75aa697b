"""The command line: `rollsim compare` (the README's main job) and `rollsim run`."""

import io
import json
import os
import subprocess
import sys
import warnings

import polars as pl
import pytest

from rollsim import __version__, cli
from rollsim.cli import main


def test_compare_prints_the_chapters_table(capsys):
    assert main(["compare"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("compared over the same 2 h: steps/h and trained tok/s count the steps ended by then")
    assert out[2].split()[:4] == ["pipeline", "steps", "steps/h", "trained"]
    assert out[4].split() == ["synchronous", "11", "5.0", "2,249", "30%", "0.0", "0", "0%", "0.0", "0.0"]
    assert out[5].split() == ["one-step", "async", "12", "5.5", "2,464", "33%", "0.9", "1", "0%", "0.9", "0.9"]
    assert out[6].split()[2:] == ["34", "17.0", "7,470", "100%", "0.8", "4", "0%", "0.4", "2.2"]
    assert out[7].split()[4:] == ["33", "16.5", "6,629", "100%", "0.7", "2", "2%", "0.4", "1.8"]


def test_compare_flags_and_out(tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["compare", "--lengths", "deepseek-r1", "--max-tokens", "16384", "--rng", "fast", "--seed", "3",
                 "--horizon-s", "1800", "--format", "csv", "--out", str(out)]) == 0
    df = pl.read_csv(capsys.readouterr().out.encode())
    assert df.height == 4 and "staleness_mean_long" in df.columns
    files = sorted(os.listdir(out))
    assert "compare.parquet" in files and "samples_fully_async_cap_2.parquet" in files
    s = pl.read_parquet(out / "samples_synchronous.parquet")
    assert s["length_tokens"].max() <= 16384 and s.height > 0


def test_run_and_bad_input(tmp_path, capsys):
    assert main(["run", "--pipeline", "one-step", "--rng", "python", "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 12
    assert pl.read_parquet(tmp_path / "steps.parquet").height == 12
    assert main(["run", "--rollout-slots", "0"]) == 2
    assert capsys.readouterr().err == "rollsim: error: --rollout-slots: must be in [1, 16777216], got 0\n"
    assert main(["compare", "--lengths", str(tmp_path / "nope.csv")]) == 2


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "rollsim")
    r = subprocess.run([exe, "compare", "--format", "json"], capture_output=True, text=True, check=True)
    assert [row["steps"] for row in json.loads(r.stdout)] == [11, 12, 34, 33]


# ------------------------------------------------------------------ scenario files and flags

EXE = os.path.join(os.path.dirname(sys.executable), "rollsim")


def rollsim(*args, env=None, timeout=120):
    """The installed console script (the worktree's sources first on the path)."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def one_error_line(r, message):
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0] == f"rollsim: error: {message}", r.stderr


def test_flags_override_the_scenario_file(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('rollout_slots = 64\nhorizon_s = 900.0\ngroup_size = 4\nrng = "python"\n'
                 '[lengths]\nkind = "lognormal"\nmu = 6.5\n[pipeline]\nkind = "fully_async"\nmax_staleness = 1\n')
    out = tmp_path / "o"
    assert main(["run", str(f), "--rollout-slots", "32", "--sigma", "0.5", "--on-update", "wait", "--out", str(out)]) == 0
    capsys.readouterr()
    from rollsim import FullyAsync, LogNormal, Scenario

    sc = Scenario.from_toml(out / "scenario.toml")  # what ran, exactly
    assert sc == Scenario(rollout_slots=32, horizon_s=900.0, group_size=4, rng="python",
                          lengths=LogNormal(mu=6.5, sigma=0.5), pipeline=FullyAsync(1, on_update="wait"))
    # the written scenario runs again to the same summary
    assert main(["run", str(out / "scenario.toml")]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads((out / "summary.json").read_text())
    # --pipeline keeps the file's settings that the new kind has, and refuses to lose the others
    assert main(["run", str(f), "--pipeline", "sync"]) == 2
    assert capsys.readouterr().err.strip() == (
        "rollsim: error: --pipeline sync replaces the scenario file's 'fully_async' pipeline, whose "
        "max_staleness would be lost (sync pipelines have no such field): remove it from the file")


def test_new_flags_reach_the_run(capsys):
    """Flags that did not exist before: groups, prompts, admission control, update modes, lag bounds."""
    args = ["run", "--horizon-s", "1200", "--group-size", "8", "--prompt-tokens", "300", "--prefill-tokens-per-s",
            "5000", "--admission-eta", "1", "--on-update", "abort_resubmit", "--max-lag-samples", "1024"]
    assert main(args) == 0
    got = json.loads(capsys.readouterr().out)
    from rollsim import FullyAsync, Scenario, simulate

    sc = Scenario(horizon_s=1200.0, group_size=8, prompt_tokens=300.0, prefill_tokens_per_s=5000.0,
                  pipeline=FullyAsync(admission_eta=1, on_update="abort_resubmit", max_lag_samples=1024))
    want = json.loads(json.dumps(simulate(sc, record="summary").summary).replace("NaN", "null"))
    assert got == want and got["tokens_recomputed"] > 0


def test_flags_that_do_not_apply_are_refused(tmp_path, capsys):
    cases = [
        (["run", "--lengths-column", "tokens"],
         "--lengths-column applies to --lengths FILE only, not lognormal lengths"),
        (["compare", "--lengths", "deepseek-r1", "--count-column", "n"],
         "--count-column applies to --lengths FILE only, not the data set 'deepseek-r1'"),
        (["presets", "--lengths", "deepseek-r1", "--lengths-column", "n"],
         "--lengths-column applies to --lengths FILE only, not the data set 'deepseek-r1'"),
        (["run", "--lengths", "deepseek-r1", "--sigma", "1"],
         "--sigma applies to --lengths lognormal only, not the data set 'deepseek-r1'"),
        (["run", "--k", "2"], "--k applies to --pipeline k-step only, not fully-async"),
        (["run", "--pipeline", "sync", "--admission-eta", "1"],
         "--admission-eta applies to --pipeline fully-async only, not sync"),
        (["run", "--over-sampling", "0.5"], "--over-sampling applies to --pipeline sync or "
                                            "--pipeline one-step or --pipeline k-step only, not fully-async"),
        (["run", "--batch-order-share", "0.5"],
         "--batch-order-share applies to --batch-order length_balanced only, not 'fifo'"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert capsys.readouterr().err.strip() == f"rollsim: error: {message}"
    # and flags of another command are argparse errors; a pipeline's flags on the commands that run
    # their own pipelines say so
    for argv, said in ((["compare", "--on-update", "wait"], "argument --on-update: compare runs its own four pipelines"),
                       (["presets", "--pipeline", "sync"], "argument --pipeline: presets runs each system's own"),
                       (["validate", "--seed", "1"], "unrecognized arguments")):
        try:
            main(argv)
        except SystemExit as e:
            assert e.code == 2
        assert said in capsys.readouterr().err


def test_compare_takes_a_scenario_file_but_not_its_pipeline(tmp_path, capsys):
    f = tmp_path / "s.toml"
    f.write_text('rng = "python"\n[pipeline]\nkind = "synchronous"\n')
    assert main(["compare", str(f)]) == 2
    assert capsys.readouterr().err.strip().startswith(
        "rollsim: error: pipeline: compare runs its own four pipelines (synchronous, one-step, fully async, fully "
        "async with cap --max-staleness); the scenario file's pipeline Synchronous() would be ignored")
    f.write_text('rng = "fast"\nhorizon_s = 1800.0\n')
    assert main(["compare", str(f), "--format", "json"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert main(["compare", "--rng", "fast", "--horizon-s", "1800", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == fast


def test_out_is_checked_before_running(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for command in ("run", "compare"):
        assert main([command, "--out", str(blocker)]) == 2
        cap = capsys.readouterr()
        assert cap.out == "" and cap.err.strip() == f"rollsim: error: --out: {str(blocker)!r} exists and is not a directory"
        assert main([command, "--out", str(blocker / "sub")]) == 2
        cap = capsys.readouterr()
        assert cap.out == "" and cap.err.strip() == (
            f"rollsim: error: --out: cannot write to the directory {str(blocker / 'sub')!r}: Not a directory")
        assert main([command, "--out", ""]) == 2
        assert capsys.readouterr().err.strip() == "rollsim: error: --out must name a directory, got ''"
    ro = tmp_path / "ro"
    ro.mkdir()
    os.chmod(ro, 0o500)
    try:
        if not os.access(ro, os.W_OK):  # root writes anywhere
            assert main(["run", "--out", str(ro / "x")]) == 2
            assert "cannot write to the directory" in capsys.readouterr().err
    finally:
        os.chmod(ro, 0o700)


def strict_json(text):
    def refuse(name):
        raise ValueError(f"not JSON: {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.filterwarnings("default::rollsim.NoTrainingStepWarning")  # said on stderr, checked below
def test_summaries_are_strict_json(tmp_path, capsys):
    assert main(["run", "--horizon-s", "10", "--out", str(tmp_path)]) == 0  # no step: NaN staleness
    out, err = capsys.readouterr()
    assert err == ("rollsim: warning: no training step: no batch filled within --horizon-s 10 s (265 samples started, 9 "
                   "finished, against --batch-size 512); staleness and tokens trained are empty. Lengthen --horizon-s, "
                   "lower --batch-size, or add --rollout-slots.\n")  # the flags, not the fields
    summary = strict_json(out)
    assert summary["steps"] == 0 and summary["staleness_mean"] is None
    assert strict_json((tmp_path / "summary.json").read_text()) == summary
    assert main(["run", "--pipeline", "sync", "--over-sampling", "inf", "--horizon-s", "10", "--out", str(tmp_path),
                 "--force"]) == 0
    capsys.readouterr()
    described = strict_json((tmp_path / "scenario.json").read_text())
    assert described["pipeline"]["over_sampling"] == "inf"  # an infinite setting stays visible (not null)
    from rollsim import Scenario, Synchronous

    assert Scenario.from_toml(tmp_path / "scenario.toml").pipeline == Synchronous(over_sampling=float("inf"))


def test_no_tracebacks_from_the_console_script(tmp_path):
    d = tmp_path / "dir.toml"
    d.mkdir()
    one_error_line(rollsim("run", str(d)), f"scenario file: {str(d)!r} is a directory, not a TOML file")
    one_error_line(rollsim("sweep", str(d), "--out", str(tmp_path / "o")),
                   f"sweep file: {str(d)!r} is a directory, not a TOML file")
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b"rollout_slots = 8\n\xff\n")
    one_error_line(rollsim("compare", str(bad)),
                   f"scenario file: {str(bad)!r} is not UTF-8 text (line 2, byte offset 18: b'\\xff')")
    bom = tmp_path / "bom.toml"
    bom.write_bytes(b"\xef\xbb\xbfrollout_slots = 8\nhorizon_s = 100.0\n")
    r = rollsim("run", str(bom))
    assert r.returncode == 0 and strict_json(r.stdout)["steps"] == 0
    big = tmp_path / "big.toml"
    big.write_text("batch_size = 1" + "0" * 399 + "\n")
    one_error_line(rollsim("run", str(big)), "batch_size: must be an integer of at most 20 digits, got one of 400 digits "
                   f"(the value in {str(big)!r})")
    one_error_line(rollsim("run", "--out", str(bad / "out")),
                   f"--out: cannot write to the directory {str(bad / 'out')!r}: Not a directory")
    one_error_line(rollsim("run", "--lengths", str(d)), f"--lengths: must name a .csv, .csv.gz or .parquet file "
                                                        f"(any case), got {str(d)!r}")
    fifo = tmp_path / "lengths.csv"
    os.mkfifo(fifo)
    one_error_line(rollsim("run", "--lengths", str(fifo), timeout=60),
                   f"--lengths: must be a regular file, got a FIFO (named pipe) {str(fifo)!r}")
    cluster = tmp_path / "cluster.toml"
    cluster.write_text("fanout = 1" + "0" * 400 + '\n[model]\npreset = "qwen3-4b"\n')
    one_error_line(rollsim("sync", str(cluster)), "fanout: must be an integer of at most 20 digits, got one of 401 digits")
    one_error_line(rollsim("sync", str(d)), f"cluster file: {str(d)!r} is a directory, not a TOML file")


def test_length_file_errors_are_one_line(monkeypatch, tmp_path, capsys):
    """Whatever the length loader raises for a bad file (RollsimError or OSError) is one error line."""
    from rollsim import Empirical, RunLimitError

    f = tmp_path / "l.csv"
    f.write_text("tokens\n100\n")
    for error in (OSError(5, "Input/output error", str(f)), RunLimitError("lengths: too many rows"),
                  ValueError("lengths.path: cannot read\nsecond line")):
        def fail(*a, error=error, **k):
            raise error

        monkeypatch.setattr(Empirical, "from_file", classmethod(fail))
        assert main(["run", "--lengths", str(f)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("rollsim: error: "), err
    assert "second line" in err and "\nsecond" not in err


def test_report_and_plot_without_matplotlib(tmp_path):
    assert main(["run", "--horizon-s", "600", "--out", str(tmp_path)]) == 0
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from rollsim.cli import main\n"
            "sys.exit(main(sys.argv[1:]))")
    for argv, command in ((["report", str(tmp_path)], "report"),
                          (["plot", str(tmp_path), "--kind", "utilization", "--out", str(tmp_path / "u.png")], "plot")):
        r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True)
        one_error_line(r, f"{command}: needs matplotlib, which is not installed: pip install 'rollsim[plot]' "
                          f"(or pip install matplotlib)")


def test_validate_reports_progress(monkeypatch, capsys):
    from rollsim import validation

    calls = []
    df = validation.validate(["chapter"], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(0, 1), (1, 1)] and df.height == 1
    # the command line draws a rich bar on a terminal, nothing otherwise
    assert cli._progress_bar(3, "validate")[0] is None  # capsys: not a terminal

    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["validate", "--case", "chapter", "--format", "csv"]) == 0
    assert "validate" in tty.getvalue() and "1/1" in tty.getvalue()
    monkeypatch.setitem(sys.modules, "rich.progress", None)  # rich not installed: no bar
    assert cli._progress_bar(3, "validate")[0] is None


def test_version_prints_the_package_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"rollsim {__version__}\n"


def test_a_near_miss_of_a_flag_names_the_flag_it_likely_meant(capsys):
    assert cli._unrecognized(cli.build_parser(), "run", ["--horizon", "--rollout-slot=3", "--zzz"]) == (
        "unrecognized arguments: --horizon --rollout-slot=3 --zzz "
        "(--horizon: did you mean --horizon-s?; --rollout-slot: did you mean --rollout-slots?)")
    # no hint where no flag is close: '--k' on compare is not taken for --kv-cache-tokens
    assert cli._unrecognized(cli.build_parser(), "compare", ["--k"]) == "unrecognized arguments: --k"


def test_a_table_of_runs_names_the_run_that_warned(capsys):
    # batches of 128 on the chapter's pool: the uncapped fully async row outruns training (the ready
    # queue grows 22 samples per step), the cap-2 row and the batch pipelines do not
    import rollsim

    with pytest.warns(rollsim.GenerationOutrunsTrainingWarning) as rec:
        rollsim.compare(rollsim.Scenario(batch_size=128, rng="python"))
    assert [str(w.message).split(": generation outruns training")[0] for w in rec] == ["fully async"]
    with warnings.catch_warnings():   # the CLI prints the warning as a line on stderr
        warnings.simplefilter("always", rollsim.GenerationOutrunsTrainingWarning)
        assert main(["compare", "--batch-size", "128"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("rollsim: warning: fully async: generation outruns training: the ready queue grows by "
                          "22 samples per step") and err.count("warning") == 1, err


def test_decode_table_help_gives_the_command_line_form(capsys):
    # the field's text shows the Python tuples; the flag takes pairs, and its help says how
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "on the command line N:TOKENS_PER_S pairs, e.g. 1:60,8:400,64:1600" in text
    sc = cli._scenario(cli.build_parser().parse_args(
        ["run", "--slots-per-instance", "64", "--decode-throughput-table", "1:60,8:400,64:1600",
         "--decode-tokens-per-s", "60"]))
    assert sc.decode_throughput_table == ((1, 60.0), (8, 400.0), (64, 1600.0))


def test_choice_words_take_underscores_as_hyphens():
    # as --pipeline one_step / one-step for run: the README's rule holds for split and plot too
    p = cli.build_parser()
    assert p.parse_args(["split", "--gpus", "4", "--pipeline", "one_step"]).pipeline == "one-step"
    assert p.parse_args(["split", "--gpus", "4", "--pipeline", "fully_async"]).pipeline == "fully-async"
    assert p.parse_args(["plot", "d", "--kind", "slot_timeline", "--out", "f.png"]).kind == "slot-timeline"
    assert p.parse_args(["plot", "d", "--kind", "staleness-by-length", "--out", "f.png"]).kind == "staleness-by-length"
