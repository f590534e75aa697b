"""Sweep TOML files and the ``rollsim sweep`` subcommand."""

from __future__ import annotations

import argparse
import textwrap
from importlib import resources
from pathlib import Path

import pytest

from rollsim import Empirical, FullyAsync, LogNormal, OffPolicy, Scenario, ScenarioError, Synchronous, datasets
from rollsim import sweep_cli
from rollsim.sweeps import config, read_sweep, sweep


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="rollsim")
    sub = p.add_subparsers(dest="command", required=True)
    sweep_cli.add_parser(sub)
    return p


def write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "sweep.toml"
    f.write_text(textwrap.dedent(text))
    return f


def test_example_file_runs_and_resumes(tmp_path, capsys):
    example = resources.files("rollsim") / "examples" / "sweep.toml"
    with resources.as_file(example) as path:
        spec = config.load(path)
        out = tmp_path / "out"
        args = parser().parse_args(["sweep", str(path), "--out", str(out), "--no-progress", "--threads", "2"])
        assert args.func(args) == 0
        cap = capsys.readouterr()
        assert "96 runs (96 ran now" in cap.err
        assert "pipeline.max_staleness" in cap.out and "staleness_mean ±95%" in cap.out
        first = cap.out.splitlines()[2].split()   # the grid as given, the means to 4 significant digits
        assert first[:4] == ["0", "30", "8", "21.00"] and first[-2] == "0.3743"
        assert args.func(args) == 0
        assert "(0 ran now in 0 chunks, 96 already in" in capsys.readouterr().err
    assert spec.base == Scenario(lengths=LogNormal(7.6, 1.0, 16384.0), pipeline=FullyAsync(), rng="fast")
    assert spec.grid == {"pipeline.max_staleness": [0, 1, 2, 4], "train_step_s": [30.0, 60.0, 120.0]}
    assert spec.seeds == range(8)  # lazy: a count is never expanded into a list
    df = read_sweep(out)
    assert df.height == 96 and df["run_key"].n_unique() == 96
    expected = sweep(spec.base, spec.grid, seeds=spec.seeds, progress=False)
    got = df.sort("run_key").select(expected.columns)
    assert got.equals(expected.sort("run_key"))


def test_every_part_kind(tmp_path):
    (tmp_path / "lens.csv").write_text("tokens,n\n100,5\n2000,3\n9000,1\n")
    f = write(tmp_path, """
        seeds = { start = 10, count = 3 }
        chunk_size = 5
        max_samples = 1000000
        metrics = ["steps"]
        [base]
        batch_size = 128
        weight_sync_s = 2.5
        lengths = { file = "lens.csv", column = "tokens", count_column = "n" }
        pipeline = "synchronous"
        [grid]
        pipeline = [{ kind = "off_policy", k = 2 }, { kind = "one_step" }, { kind = "fully_async", max_staleness = 1 }]
        lengths = [{ dataset = "deepseek-r1", max_tokens = 16384 }, { kind = "lognormal", sigma = 1.2 },
                   { kind = "empirical", values = [10.0, 20.0] }]
        """)
    spec = config.load(f)
    assert spec.seeds == range(10, 13) and spec.chunk_size == 5 and spec.max_samples == 1_000_000
    assert spec.metrics == ["steps"]
    assert spec.base.batch_size == 128 and spec.base.weight_sync_s == 2.5
    assert spec.base.pipeline == Synchronous()
    assert spec.base.lengths == Empirical([100.0, 2000.0, 9000.0], [5.0, 3.0, 1.0], name="lens.csv")
    assert spec.grid["pipeline"][0] == OffPolicy(2)
    assert spec.grid["pipeline"][2] == FullyAsync(1)
    assert spec.grid["lengths"][0] == datasets.deepseek_r1_serving(16384)
    assert spec.grid["lengths"][1] == LogNormal(sigma=1.2)


def test_sampled_points(tmp_path):
    f = write(tmp_path, """
        seeds = 2
        [base]
        horizon_s = 720.0
        [sample]
        method = "latin_hypercube"
        n = 5
        seed = 3
        [sample.space]
        train_step_s = { log_uniform = [30.0, 600.0] }
        batch_size = { int_uniform = [128, 1024] }
        "pipeline.max_staleness" = { choice = [0, 1, 2, 4] }
        "lengths.sigma" = [0.8, 1.2]
        """)
    spec = config.load(f)
    assert isinstance(spec.grid, list) and len(spec.grid) == 5
    assert all(128 <= p["batch_size"] <= 1024 and 30 <= p["train_step_s"] < 600 for p in spec.grid)
    args = parser().parse_args(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--format", "csv"])
    assert args.func(args) == 0
    assert read_sweep(tmp_path / "o").height == 10


@pytest.mark.parametrize("text, key", [
    ("speed = 1", "speed"),
    ("[base]\nslots = 3", "base.slots"),
    ("[base]\nlengths = { kind = 'lognormal', median = 3 }", "base.lengths.median"),
    ("[base]\nlengths = { kind = 'gamma' }", "base.lengths.kind"),
    ("[base]\nlengths = { dataset = 'gpt' }", "base.lengths.dataset"),
    ("[base]\npipeline = { kind = 'fully_async', cap = 2 }", "base.pipeline.cap"),
    ("[base]\npipeline = 'k_step'", "base.pipeline.kind"),
    ("[base]\nbatch_size = 0", "batch_size"),
    ("[grid]\nslots = [1]", "grid.slots"),
    ("[grid]\nbatch_size = 4", "grid.batch_size"),
    ("[grid]\npipeline = [{ kind = 'fully_async', cap = 1 }]", "grid.pipeline[0].cap"),
    ("[sample]\nn = 3\nmethod = 'sobol'\n[sample.space]\nbatch_size = [1]", "sample.method"),
    ("[sample]\nn = 3\nsteps = 2\n[sample.space]\nbatch_size = [1]", "sample.steps"),
    ("[sample]\nn = 3\n[sample.space]\nbatch_size = { normal = [1, 2] }", "sample.space.batch_size.normal"),
    ("[sample]\nn = 3\n[sample.space]\nslots = [1]", "sample.space.slots"),
    ("seeds = { start = 0, count = 0 }", "seeds.count"),
    ("seeds = { first = 0 }", "seeds.first"),
    ("chunk_size = 0", "chunk_size"),
    ("metrics = 'steps'", "metrics"),
    ("[grid]\nbatch_size = [1]\n[sample]\nn = 1", "sample"),
])
def test_unknown_keys_and_bad_values_name_the_key(tmp_path, text, key):
    f = write(tmp_path, text)
    with pytest.raises(ValueError) as e:
        config.load(f)
    assert str(e.value).startswith(key), str(e.value)


def test_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="not valid TOML"):
        config.load(write(tmp_path, "[base\n"))
    with pytest.raises(FileNotFoundError):
        config.load(tmp_path / "none.toml")


def test_failed_runs_exit_1(tmp_path, capsys):
    # 2020 passes the up-front estimate (2017 samples); seeds 0 and 1 start more: rejected while running
    f = write(tmp_path, "max_samples = 2020\nseeds = 2\n[base]\nhorizon_s = 720.0\n")
    args = parser().parse_args(["sweep", str(f), "--out", str(tmp_path / "o"), "--no-progress", "--format", "none"])
    assert args.func(args) == 1
    assert "2 runs failed" in capsys.readouterr().err
    assert read_sweep(tmp_path / "o")["error"].null_count() == 0


def test_refused_runs_are_counted_and_the_first_refusal_is_shown(tmp_path, capsys):
    """Runaway scenarios refused before running: counted as refused (not "already in" a fresh
    directory), and the first refusal printed in the sweep file's words (no record='summary')."""
    f = write(tmp_path, "seeds = 2\n[base]\nhorizon_s = 600.0\n[grid]\nhorizon_s = [600.0, 1e9]\n")
    out = tmp_path / "o"
    args = parser().parse_args(["sweep", str(f), "--out", str(out), "--no-progress", "--format", "none"])
    assert args.func(args) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"rollsim sweep: 4 runs (2 ran now in 1 chunk, 0 already in {out}, 2 refused), ")
    assert err[1] == ("rollsim sweep: 2 runs failed: 2 refused before running by the run guards (a runaway scenario: "
                      "not stored, so that a rerun with a shorter horizon_s or a higher max_samples runs them)")
    assert err[2] == (
        "rollsim sweep: first refused: max_samples: this scenario would start about 2.45e+09 samples (about 2.45e+09 "
        "events, about 2.7 min at ~15 M events/s; a sweep records summaries only, in constant memory) over horizon_s = "
        "1e+09 s, more than max_samples = 50000000; shorten horizon_s, or raise max_samples (up to 2**32 - 1) if you "
        "mean it (sweep scenario horizon_s=1000000000.0)")
    assert len(err) == 3
    assert args.func(args) == 1  # resumed: the two stored runs are already there, the others refused again
    assert f"(0 ran now in 0 chunks, 2 already in {out}, 2 refused)" in capsys.readouterr().err
