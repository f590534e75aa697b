"""Run keys are versioned per sweep directory: a directory written by rollsim before key version 2
(keys of version 1, hashed from the engine dict) still resumes with its own keys; new directories
get version 2 (from the Scenario's fields); a version this rollsim does not know is refused."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal, assert_series_equal

import rollsim
from rollsim import Scenario, ScenarioError, _rollsim
from rollsim.sweeps import read_sweep, run_key, scenario_key, sweep, sweep_with_info
from rollsim.sweeps._store import MANIFEST

# tests/data/sweep_v1: written by rollsim before key version 2 with
#   sweep(Scenario(horizon_s=720.0), {"train_step_s": [30.0, 60.0]}, seeds=3, out=DIR, chunk_size=2)
# then its last chunk (runs 4..5) deleted, as if the sweep had been interrupted there.
FIXTURE = Path(__file__).parent / "data" / "sweep_v1"
BASE = Scenario(horizon_s=720.0)
GRID = {"train_step_s": [30.0, 60.0]}
# the keys that sweep returned (train_step_s, seed, run_key, scenario_key)
OLD_KEYS = [
    (30.0, 0, "724fb2a698b0572e48be9c8ae8fe79b2", "7fcab471d80d37ab90224d9c18b5085b"),
    (30.0, 1, "241dd9e2e0969fa4e11f89c109f80a25", "7fcab471d80d37ab90224d9c18b5085b"),
    (30.0, 2, "a80519d987f24b3eda5401d024f8b70f", "7fcab471d80d37ab90224d9c18b5085b"),
    (60.0, 0, "7d219aefcee2fa730ddf90720a034344", "22041f5351653fbdc7e18f5426c365ea"),
    (60.0, 1, "a26431e40d23bb8279609ba4e018b29f", "22041f5351653fbdc7e18f5426c365ea"),
    (60.0, 2, "0178ef21f5f0d0de62eb99f0b91ac89e", "22041f5351653fbdc7e18f5426c365ea"),
]
KEYS = ["scenario_key", "run_key"]


def old_dir(tmp_path: Path) -> Path:
    d = tmp_path / "old"
    shutil.copytree(FIXTURE, d)
    return d


def test_the_fixture_is_a_version_1_directory():
    assert "key_version" not in json.loads((FIXTURE / MANIFEST).read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = read_sweep(FIXTURE)
    assert sorted(df.select("train_step_s", "seed", "run_key", "scenario_key").rows()) == OLD_KEYS[:4]
    for ts, seed, rk, sk in OLD_KEYS:
        sc = BASE.replace(train_step_s=ts)
        assert (run_key(sc, seed, version=1), scenario_key(sc, version=1)) == (rk, sk)
        assert run_key(sc, seed) != rk


def test_an_old_directory_resumes_with_its_own_keys(tmp_path):
    d = old_dir(tmp_path)
    df, info = sweep_with_info(BASE, GRID, seeds=3, out=d, chunk_size=2, progress=False)
    assert (info.runs, info.resumed, info.ran) == (6, 4, 2)
    assert df.select("train_step_s", "seed", "run_key", "scenario_key").rows() == OLD_KEYS
    # the rows are those of a sweep run now, keys apart
    now = sweep(BASE, GRID, seeds=3, progress=False)
    # throughput_ratio is the one value that moved since the fixture was written: the engine's lognormal
    # mean went from an approximate erfc (relative error up to 1.2e-7) to libm's erf; the rest is exact
    # the agentic values came later too: null in the fixture's rows
    # (and the learning sums later still)
    agentic = [c["name"] for c in _rollsim.SCHEMA["agentic_summary"] + _rollsim.SCHEMA["learning_summary"]]
    assert df.head(4).select(agentic).null_count().row(0) == (4,) * len(agentic)
    assert_frame_equal(df.drop(*KEYS, "throughput_ratio", *agentic), now.drop(*KEYS, "throughput_ratio", *agentic),
                       check_exact=True)
    assert_series_equal(df["throughput_ratio"], now["throughput_ratio"], check_exact=False, rel_tol=2e-7)
    assert now["run_key"].to_list() == [run_key(BASE.replace(train_step_s=ts), s) for ts, s, _, _ in OLD_KEYS]
    # the directory stays at key version 1: one key per run, and a rerun finds everything
    assert "key_version" not in json.loads((d / MANIFEST).read_text())
    stored = read_sweep(d)
    assert stored.height == stored["run_key"].n_unique() == 6
    assert set(stored["run_key"]) == {k for _, _, k, _ in OLD_KEYS}
    _, again = sweep_with_info(BASE, GRID, seeds=3, out=d, progress=False)
    assert (again.resumed, again.ran) == (6, 0)


def test_an_old_directory_resumes_with_another_chunking_and_collect_false(tmp_path):
    d = old_dir(tmp_path)
    lf, info = sweep_with_info(BASE, GRID, seeds=3, out=d, chunk_size=5, threads=1, progress=False, collect=False)
    assert (info.resumed, info.ran) == (4, 2)
    assert isinstance(lf, pl.LazyFrame)
    assert sorted(lf.collect()["run_key"].to_list()) == sorted(k for _, _, k, _ in OLD_KEYS)


def test_a_new_directory_records_key_version_2(tmp_path):
    df = sweep(BASE, GRID, seeds=2, out=tmp_path, progress=False)
    meta = json.loads((tmp_path / MANIFEST).read_text())
    assert meta["key_version"] == 2 and meta["format"] == 2
    assert df["run_key"].to_list() == [run_key(BASE.replace(train_step_s=ts), s) for ts in (30.0, 60.0) for s in (0, 1)]


def test_a_newer_key_version_is_refused(tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"format": 2, "rollsim_version": rollsim.__version__,
                                                 "key_version": 3}))
    with pytest.raises(ScenarioError) as e:
        sweep(BASE, out=tmp_path, progress=False)
    assert str(e.value) == (
        f"out: {str(tmp_path)!r} holds a sweep whose run keys are of key version 3; this rollsim computes key "
        "versions 1 and 2 (a newer rollsim wrote it?): resume it with that rollsim, or give another out")
