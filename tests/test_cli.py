"""The command line: `rollsim compare` (the README's main job) and `rollsim run`."""

import json
import os
import subprocess
import sys

import polars as pl

from rollsim.cli import main


def test_compare_prints_the_chapters_table(capsys):
    assert main(["compare"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split()[0] == "pipeline"
    assert out[3].split() == ["synchronous", "11", "30%", "0.0", "0", "0%", "0.0", "0.0"]
    assert out[4].split() == ["one-step", "async", "12", "33%", "0.9", "1", "0%", "0.9", "0.9"]
    assert out[5].split()[2:] == ["34", "100%", "0.8", "4", "0%", "0.4", "2.2"]
    assert out[6].split()[4:] == ["33", "100%", "0.7", "2", "2%", "0.4", "1.8"]


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
    assert "rollout_slots:" in capsys.readouterr().err
    assert main(["compare", "--lengths", str(tmp_path / "nope.csv")]) == 2


def test_console_script_is_installed():
    exe = os.path.join(os.path.dirname(sys.executable), "rollsim")
    r = subprocess.run([exe, "compare", "--format", "json"], capture_output=True, text=True, check=True)
    assert [row["steps"] for row in json.loads(r.stdout)] == [11, 12, 34, 33]
