"""The Ray backend gives the same frame, bit for bit, as the local one (a local 2-CPU Ray)."""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

from rollsim import Empirical, Scenario
from rollsim.sweeps import read_sweep, sweep, sweep_with_info

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'rollsim[ray]'); Ray backend tests skipped")

SMALL = Scenario(horizon_s=720.0)
GRID = {"pipeline.max_staleness": [None, 1], "lengths.sigma": [0.8, 1.2]}


@pytest.fixture(scope="module")
def local_ray():
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    if started:
        ray.shutdown()


def test_ray_equals_local_bit_for_bit(local_ray, tmp_path):
    ref = sweep(SMALL, GRID, seeds=range(30), threads=2, progress=False)
    got = sweep(SMALL, GRID, seeds=range(30), backend="ray", chunk_size=17, progress=False)
    assert_frame_equal(got, ref, check_exact=True)
    streamed = sweep(SMALL, GRID, seeds=range(30), backend="ray", out=tmp_path, progress=False)
    assert_frame_equal(streamed, ref, check_exact=True)
    assert read_sweep(tmp_path).height == 120


def test_ray_resumes_a_local_sweep_and_ships_empirical_lengths(local_ray, tmp_path):
    base = SMALL.replace(lengths=Empirical([120.0, 800.0, 3000.0, 9000.0], [4.0, 3.0, 2.0, 1.0], name="toy"))
    grid = {"train_step_s": [30.0, 60.0]}
    _, a = sweep_with_info(base, grid, seeds=range(10), out=tmp_path, progress=False)
    df, b = sweep_with_info(base, grid, seeds=range(25), out=tmp_path, backend="ray", progress=False)
    assert (a.ran, b.resumed, b.ran) == (20, 20, 30)
    assert_frame_equal(df, sweep(base, grid, seeds=range(25), progress=False), check_exact=True)
    assert read_sweep(tmp_path)["run_key"].n_unique() == 50


def test_ray_records_engine_errors_like_local(local_ray):
    kw = dict(seeds=3, max_samples=10, on_error="record", progress=False)
    assert_frame_equal(sweep(SMALL, backend="ray", **kw), sweep(SMALL, **kw), check_exact=True)


def test_ray_resumes_a_crashed_local_sweep_without_collecting(local_ray, tmp_path):
    import polars as pl

    class Crash(Exception):
        pass

    def hook(done, total):
        if done >= 30:
            raise Crash

    with pytest.raises(Crash):
        sweep(SMALL, GRID, seeds=range(20), out=tmp_path, chunk_size=7, threads=1, progress=hook)
    before = sum(pl.read_parquet(p).height for p in tmp_path.glob("part-*.parquet"))
    lf, info = sweep_with_info(SMALL, GRID, seeds=range(20), out=tmp_path, backend="ray", collect=False,
                               progress=False)
    assert (info.resumed, info.ran) == (before, 80 - before)
    assert sum(pl.read_parquet(p).height for p in tmp_path.glob("part-*.parquet")) == 80  # nothing twice
    assert_frame_equal(lf.collect(), sweep(SMALL, GRID, seeds=range(20), progress=False), check_exact=True)
