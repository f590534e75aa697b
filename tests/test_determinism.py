"""Determinism (docs/determinism.md): thread count and chunking never change a sweep's rows; the same
scenario and seed give identical frames run after run; runs with Empirical lengths use no libm function
(their golden hashes are platform-independent)."""

from __future__ import annotations

import hashlib

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Empirical, FullyAsync, LogNormal, OffPolicy, Scenario, Synchronous, presets, simulate
from rollsim.sweeps import sweep

BASE = Scenario(horizon_s=900.0, rollout_slots=64, batch_size=128)
GRID = {
    "rng": ["fast", "python"],
    "lengths": [LogNormal(7.0, 1.2, 8192.0), Empirical([120.0, 800.0, 2500.0, 7000.0], [5, 3, 2, 1])],
    "pipeline": [Synchronous(), OffPolicy(2), FullyAsync(2), presets.areal(scenario=BASE.replace(group_size=8)).pipeline],
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_sweep_threads_1_and_2_bit_for_bit():
    """(tests/test_sweep.py checks chunking and streaming on the chapter's scenario; this one crosses
    both generators, both length kinds and batch / streaming / admission pipelines.)"""
    kw = dict(seeds=range(6), progress=False)
    one = sweep(BASE.replace(group_size=8), GRID, threads=1, chunk_size=5, **kw)
    two = sweep(BASE.replace(group_size=8), GRID, threads=2, chunk_size=7, **kw)
    assert one.height == 2 * 2 * 4 * 6 and one["error"].null_count() == one.height
    assert_frame_equal(one, two, check_exact=True)
    # and equal to single runs: a run's result does not depend on what runs beside it
    for row in one.sample(8, seed=1).iter_rows(named=True):
        sc = BASE.replace(group_size=8, rng=row["rng"], seed=row["seed"],
                          lengths=GRID["lengths"][0 if row["lengths"].startswith("LogNormal") else 1],
                          pipeline=next(p for p in GRID["pipeline"] if repr(p) == row["pipeline"]))
        s = simulate(sc, record="summary").summary
        assert s["steps"] == row["steps"] and s["tokens_generated"] == row["tokens_generated"]
        assert repr(s["staleness_mean"]) == repr(row["staleness_mean"])   # bit for bit, NaN included


def frame_hash(res) -> str:
    h = hashlib.sha256()
    for df in (res.samples, res.steps, res.segments):
        for name in df.columns:
            col = df[name]
            h.update(name.encode())
            h.update(col.cast(pl.String).fill_null("null").str.join("|").item().encode()
                     if col.dtype == pl.Enum else col.to_numpy().tobytes())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("rng", ["fast", "python"])
def test_repeated_runs_are_identical(rng):
    sc = Scenario(horizon_s=1800.0, rng=rng, seed=11, pipeline=FullyAsync(max_staleness=1, on_update="keep_stale"))
    assert frame_hash(simulate(sc)) == frame_hash(simulate(sc))


# Empirical lengths: draws are uniform indices (integer and +-*/ arithmetic only), event times are
# +-*/ of lengths and speeds, so these hashes are the same on every platform (any OS, libm, CPU).
# (hashes of the columns' little-endian bytes)
GOLDEN = {"fast": "a7a3e7af9ef69d8e", "python": "927586fca52379d8"}


@pytest.mark.parametrize("rng", ["fast", "python"])
def test_empirical_runs_match_platform_independent_golden(rng):
    sc = Scenario(horizon_s=1800.0, rng=rng, seed=5, group_size=4, batch_size=256,
                  lengths=Empirical([90.0, 600.0, 1500.0, 4000.0, 12000.0], [10, 6, 4, 2, 1]),
                  pipeline=FullyAsync(max_staleness=2, batch_order="oldest_first"))
    assert frame_hash(simulate(sc)) == GOLDEN[rng]
