"""Streaming sweeps in bounded memory: the lazy plan, chunk files named by range and key digest,
resume without a set of finished keys (also after another chunking, thread count or plan), and
``collect=False``."""

from __future__ import annotations

import json
import signal
import uuid
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import rollsim
from rollsim import FullyAsync, Scenario, ScenarioError, Synchronous
from rollsim.sweeps import (IntUniform, LatinHypercube, RandomPoints, aggregate, latin_hypercube, random_points,
                           read_sweep, run_key, scan_sweep, scenario_key, sweep, sweep_with_info)
from rollsim.sweeps import _plan, _run
from rollsim.sweeps._plan import chunk_digest, make_plan
from rollsim.sweeps._store import MANIFEST, StoreWarning
from sweep_kill import kill_after_parts

SMALL = Scenario(horizon_s=720.0)
GRID = {"pipeline.max_staleness": [None, 1], "train_step_s": [30.0, 60.0]}


class Crash(Exception):
    pass


def crash_after(n):
    def hook(done, total):
        if done >= n:
            raise Crash(f"at {done}")
    return hook


def old_keys(out: Path) -> Path:
    """A directory created by rollsim before key version 2 (no key version in its manifest)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(json.dumps({"format": 2, "rollsim_version": rollsim.__version__}))
    return out


def as_format_1(out: Path) -> None:
    """Turns a sweep directory into what rollsim wrote before chunk manifests (store format 1)."""
    for m in out.glob("part-*.parquet.json"):
        m.unlink()
    meta = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({"format": 1, "rollsim_version": meta["rollsim_version"]}))


def raw_rows(out: Path) -> int:
    """Rows in every part file, duplicates included (read_sweep drops duplicates)."""
    return sum(pl.read_parquet(p).height for p in out.glob("part-*.parquet"))


@pytest.fixture
def stats():
    _plan.STATS.update(blocks=0, max_block_runs=0)
    return _plan.STATS


# ---------------------------------------------------------------- the plan is lazy

def test_plan_of_billions_of_runs_is_not_materialised():
    plan = make_plan(SMALL, {"train_step_s": [30.0, 60.0], "batch_size": [256, 512]}, seeds=2**32)
    assert len(plan) == 4 * 2**32      # 17 billion runs: a materialised plan would not fit in memory
    r = 3 * 2**32 + 123_456_789           # scenario 3 (60 s, 512), seed 123456789
    block = plan.block(r, r + 3)
    sc = SMALL.replace(train_step_s=60.0, batch_size=512)
    assert block.keys == [run_key(sc, 123_456_789 + i) for i in range(3)]
    assert block.frame["seed"].to_list() == [123_456_789, 123_456_790, 123_456_791]
    assert block.frame["scenario_key"].unique().to_list() == [scenario_key(sc)]
    assert block.frame.select("train_step_s", "batch_size").row(0) == (60.0, 512)
    assert plan.digest(r, r + 3) == chunk_digest(block.keys)


def test_streamed_sweep_builds_one_chunk_at_a_time(tmp_path, stats):
    lf, info = sweep_with_info(SMALL, GRID, seeds=range(50), out=tmp_path, chunk_size=16, collect=False,
                               progress=False)
    assert isinstance(lf, pl.LazyFrame)
    assert info.ran == 200 and info.chunks == 13
    assert stats["max_block_runs"] == 16 and stats["blocks"] == 13
    # resuming a finished sweep materialises no run at all: every chunk is recognised by its name
    stats.update(blocks=0, max_block_runs=0)
    _, info2 = sweep_with_info(SMALL, GRID, seeds=range(50), out=tmp_path, chunk_size=7, threads=1,
                               collect=False, progress=False)
    assert (info2.ran, info2.resumed, info2.chunks) == (0, 200, 0)
    assert stats["blocks"] == 0


def test_default_chunks_are_bounded(tmp_path, stats, monkeypatch):
    monkeypatch.setattr(_run, "MAX_CHUNK", 40)
    monkeypatch.setattr(_run, "STREAM_MAX_CHUNK", 30)
    sweep(SMALL, seeds=range(300), out=tmp_path / "lazy", collect=False, progress=False)
    assert 0 < stats["max_block_runs"] <= 30  # streaming without collecting: the smaller cap
    assert raw_rows(tmp_path / "lazy") == 300
    sweep(SMALL, seeds=range(300), out=tmp_path / "eager", progress=False)
    assert 30 < stats["max_block_runs"] <= 40
    assert raw_rows(tmp_path / "eager") == 300


def test_lazy_samplers_equal_the_lists_and_sweep_the_same():
    space = {"train_step_s": (30, 600), "batch_size": IntUniform(128, 1024), "pipeline.max_staleness": [0, 1, 2]}
    for n in (1, 7, 1024, 2500):
        for seed in (0, 3):
            rp, lh = RandomPoints(space, n, seed), LatinHypercube(space, n, seed)
            assert len(rp) == n and list(rp) == random_points(space, n, seed)
            assert list(lh) == latin_hypercube(space, n, seed)
            assert rp[-1] == random_points(space, n, seed)[-1] and lh[n // 2] == latin_hypercube(space, n, seed)[n // 2]
    assert RandomPoints(space, 5, 1) == random_points(space, 5, 1)
    with pytest.raises(ScenarioError, match="^n"):
        RandomPoints(space, 0)
    a = sweep(SMALL, RandomPoints(space, 6, 2), seeds=2, progress=False, chunk_size=5)
    b = sweep(SMALL, random_points(space, 6, 2), seeds=2, progress=False)
    assert_frame_equal(a, b, check_exact=True)


def test_column_dtypes_are_fixed_for_the_whole_plan(tmp_path):
    # chunks of one run see a single value (None, an int, a float...) but every file has one schema
    grid = {"pipeline.max_staleness": [None, 0, 2], "train_step_s": [30, 45.5]}
    df = sweep(SMALL, grid, seeds=1, out=tmp_path, chunk_size=1, progress=False)
    assert df.schema["pipeline.max_staleness"] == pl.Int64 and df.schema["train_step_s"] == pl.Float64
    schemas = {tuple(pl.read_parquet_schema(p).items()) for p in tmp_path.glob("part-*.parquet")}
    assert len(schemas) == 1
    assert_frame_equal(df, sweep(SMALL, grid, seeds=1, progress=False), check_exact=True)
    pts = [{"pipeline": Synchronous()}, {"pipeline": FullyAsync(2), "batch_size": 256}]
    df2 = sweep(SMALL, pts, seeds=1, chunk_size=1, progress=False)
    assert df2.schema["pipeline"] == pl.String and df2["batch_size"].to_list() == [512, 256]
    scs = [SMALL, SMALL.replace(pipeline=Synchronous()), SMALL.replace(batch_size=256)]
    assert_frame_equal(sweep(grid=scs, chunk_size=1, progress=False), sweep(grid=scs, progress=False),
                       check_exact=True)


# ---------------------------------------------------------------- collect=False

def test_collect_false_returns_a_lazy_frame_of_the_same_rows(tmp_path):
    ref = sweep(SMALL, GRID, seeds=range(10), progress=False, metrics=["steps", "staleness_mean"])
    lf = sweep(SMALL, GRID, seeds=range(10), out=tmp_path, progress=False, collect=False, chunk_size=9,
               metrics=["steps", "staleness_mean"])
    assert isinstance(lf, pl.LazyFrame)
    assert_frame_equal(lf.collect(), ref, check_exact=True)
    assert_frame_equal(scan_sweep(tmp_path).collect(), read_sweep(tmp_path))
    assert_frame_equal(aggregate(lf, ["steps"]), aggregate(ref, ["steps"]), rel_tol=1e-12)  # lazy sums may differ in the last bit
    with pytest.raises(ScenarioError, match="^collect"):
        sweep(SMALL, progress=False, collect=False)
    with pytest.raises(ScenarioError, match="^collect"):
        sweep(SMALL, progress=False, out=tmp_path, collect="no")


def test_collect_false_reports_failures_like_collect_true(tmp_path):
    kw = dict(seeds=2, max_samples=10, progress=False)
    with pytest.raises(ScenarioError) as full:
        sweep(SMALL, {"train_step_s": [30.0, 60.0]}, **kw)
    with pytest.raises(ScenarioError) as lazy:
        sweep(SMALL, {"train_step_s": [30.0, 60.0]}, out=tmp_path, collect=False, chunk_size=3, **kw)
    assert str(lazy.value).split(" (results so far")[0] == str(full.value).split("; pass")[0]
    # runs refused up front (max_samples=10) count as failed and refused, never as resumed: they
    # were not stored
    _, info = sweep_with_info(SMALL, {"train_step_s": [30.0, 60.0]}, out=tmp_path, collect=False,
                              on_error="record", **kw)
    assert (info.failed, info.resumed, info.ran, info.refused) == (4, 0, 0, 4)
    # resumed failures count too: 2020 passes the estimate, both seeds start more while running
    kw = dict(seeds=2, max_samples=2020, progress=False, on_error="record", collect=False)
    _, info = sweep_with_info(SMALL, out=tmp_path / "run", **kw)
    assert (info.failed, info.resumed, info.ran, info.refused) == (2, 0, 2, 0)
    _, info = sweep_with_info(SMALL, out=tmp_path / "run", **kw)
    assert (info.failed, info.resumed, info.ran, info.refused, info.first_refused) == (2, 2, 0, 0, None)


# ---------------------------------------------------------------- resume in the new layout

def test_parts_are_named_by_range_and_digest(tmp_path):
    sweep(SMALL, seeds=range(10), out=tmp_path, chunk_size=4, progress=False)
    names = sorted(p.name for p in tmp_path.glob("part-*.parquet"))
    plan = make_plan(SMALL, None, range(10))
    assert names == [f"part-{a:012d}-{b:012d}-{plan.digest(a, b)}.parquet" for a, b in [(0, 4), (4, 8), (8, 10)]]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.integers(1, 12), crash=st.integers(1, 40), second=st.one_of(st.none(), st.integers(1, 12)),
       threads=st.sampled_from([1, 2]), collect=st.booleans())
def test_crash_then_resume_with_other_chunking_loses_and_repeats_nothing(tmp_path_factory, first, crash, second,
                                                                        threads, collect):
    out = tmp_path_factory.mktemp("out")
    full = sweep(SMALL, GRID, seeds=range(10), progress=False)
    with pytest.raises(Crash):
        sweep(SMALL, GRID, seeds=range(10), out=out, chunk_size=first, threads=1, progress=crash_after(crash))
    before = raw_rows(out)
    assert before % first == 0 or before == 40   # whole chunks only
    got, info = sweep_with_info(SMALL, GRID, seeds=range(10), out=out, chunk_size=second, threads=threads,
                                progress=False, collect=collect)
    assert (info.resumed, info.ran) == (before, 40 - before)
    assert raw_rows(out) == 40                   # no run written twice
    frame = got if collect else got.collect()
    assert_frame_equal(frame, full, check_exact=True)


def test_changed_plan_and_old_files_are_searched_a_window_at_a_time(tmp_path, monkeypatch, stats):
    monkeypatch.setattr(_run, "FOREIGN_WINDOW", 5)
    old_keys(tmp_path)  # format-1 directories hold run keys of version 1
    sweep(SMALL, GRID, seeds=range(6), out=tmp_path, chunk_size=4, progress=False)
    # files from before chunk names (random names, store format 1) are found by their run keys
    for p in tmp_path.glob("part-*.parquet"):
        p.rename(tmp_path / f"part-{uuid.uuid4().hex}.parquet")
    as_format_1(tmp_path)
    stats.update(blocks=0, max_block_runs=0)
    with pytest.warns(StoreWarning, match="store of format 1"):
        df, info = sweep_with_info(SMALL, GRID, seeds=range(8), out=tmp_path, chunk_size=3, progress=False)
    assert (info.resumed, info.ran) == (24, 8)
    assert stats["max_block_runs"] == 3
    ref = sweep(SMALL, GRID, seeds=range(8), progress=False, out=old_keys(tmp_path.with_name(tmp_path.name + "-ref")))
    assert_frame_equal(df, ref, check_exact=True)
    # the chunks that needed new runs now hold all their runs: a rerun with this chunking reads no old file
    _, again = sweep_with_info(SMALL, GRID, seeds=range(8), out=tmp_path, chunk_size=3, progress=False)
    assert (again.resumed, again.ran, again.chunks) == (32, 0, 0)
    assert read_sweep(tmp_path)["run_key"].n_unique() == read_sweep(tmp_path).height == 32


def test_a_file_that_does_not_match_its_name_is_not_trusted(tmp_path):
    sweep(SMALL, seeds=range(6), out=old_keys(tmp_path), chunk_size=3, progress=False)
    a, b = sorted(tmp_path.glob("part-*.parquet"))
    # store format 1 (no manifests): a name claiming runs of another plan (digest mismatch): its rows
    # are still found by key
    a.rename(tmp_path / f"part-{0:012d}-{3:012d}-{'0' * 32}.parquet")
    as_format_1(tmp_path)
    with pytest.warns(StoreWarning, match="store of format 1"):
        _, info = sweep_with_info(SMALL, seeds=range(6), out=tmp_path, chunk_size=3, progress=False)
    assert (info.resumed, info.ran, info.chunks) == (6, 0, 0)


SCRIPT = """
import sys
from rollsim import Scenario
from rollsim.sweeps import sweep
sweep(Scenario(horizon_s=3600.0), {"pipeline.max_staleness": [None, 2]}, seeds=range(400),
      out=sys.argv[1], chunk_size=25, threads=1, progress=False, collect=False)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_killed_streamed_sweep_resumes_with_other_chunks_and_threads(tmp_path):
    out = tmp_path / "out"
    kill_after_parts(SCRIPT, out, 3)
    before = raw_rows(out)
    assert before % 25 == 0 and 75 <= before < 800
    base, grid = Scenario(horizon_s=3600.0), {"pipeline.max_staleness": [None, 2]}
    lf, info = sweep_with_info(base, grid, seeds=range(400), out=out, threads=2, collect=False, progress=False)
    assert (info.resumed, info.ran) == (before, 800 - before)
    assert raw_rows(out) == 800 and not list(out.glob(".*.tmp"))
    assert_frame_equal(lf.collect(), sweep(base, grid, seeds=range(400), progress=False), check_exact=True)
