"""rollsim.sweep: expansion, keys, determinism across threads and chunking, resume, errors, stats."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

import rollsim
from rollsim import Empirical, FullyAsync, Scenario, ScenarioError, Synchronous
from rollsim.lengths import LogNormal
from rollsim.pipelines import LengthBalanced, OffPolicy, OneStepAsync
from rollsim.sweeps import (SUMMARY_SCHEMA, Choice, IntUniform, LogUniform, Uniform, aggregate, latin_hypercube,
                           random_points, read_sweep, run_key, scenario_key, sweep, sweep_with_info, t_quantile)
from rollsim.sweeps._keys import canonical_form
from rollsim.sweeps._store import MANIFEST, Store, StoreWarning
from strategies import scenarios

# Small, fast scenarios (a tenth of the chapter's horizon): ~0.1 ms per run.
SMALL = Scenario(horizon_s=720.0)
GRID = {"pipeline.max_staleness": [None, 0, 2], "train_step_s": [30.0, 60.0]}


def summary_row(sc: Scenario) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rollsim.GenerationOutrunsTrainingWarning)
        warnings.simplefilter("ignore", rollsim.NoTrainingStepWarning)  # random scenarios: some end before a step
        warnings.simplefilter("ignore", rollsim.StalenessCapLivelockWarning)  # or cap below their sync cadence
        return rollsim.simulate(sc, record="summary").summary


# ---------------------------------------------------------------- expansion and columns

def test_grid_expands_to_product_with_seeds_and_columns():
    df = sweep(SMALL, GRID, seeds=[5, 9], progress=False)
    assert df.height == 3 * 2 * 2
    assert df.columns[:3] == ["pipeline.max_staleness", "train_step_s", "seed"]
    assert df.columns[-3:] == ["error", "scenario_key", "run_key"]
    assert df.schema["pipeline.max_staleness"] == pl.Int64
    assert df.schema["train_step_s"] == pl.Float64
    assert df.schema["seed"] == pl.UInt64
    for m, dt in SUMMARY_SCHEMA.items():
        assert df.schema[m] == dt, m
    # last grid field varies fastest, then seeds innermost
    assert df.select("pipeline.max_staleness", "train_step_s", "seed").rows()[:5] == [
        (None, 30.0, 5), (None, 30.0, 9), (None, 60.0, 5), (None, 60.0, 9), (0, 30.0, 5)]
    assert df["error"].null_count() == df.height
    assert df["scenario_key"].n_unique() == 6 and df["run_key"].n_unique() == 12


def test_rows_equal_single_simulate_calls():
    df = sweep(SMALL, GRID, seeds=[5, 9], progress=False)
    for row in df.iter_rows(named=True):
        sc = SMALL.replace(**{"pipeline.max_staleness": row["pipeline.max_staleness"],
                              "train_step_s": row["train_step_s"], "seed": row["seed"]})
        expected = summary_row(sc)
        for m, v in expected.items():
            got = row[m]
            assert got == v or (isinstance(v, float) and math.isnan(v) and math.isnan(got)), (m, got, v)
        assert row["run_key"] == run_key(sc)
        assert row["scenario_key"] == scenario_key(sc)


def test_chapter_values_in_a_sweep():
    # the chapter's fully asynchronous run (python RNG) has 34 steps; with a cap of 2 it drops samples
    df = sweep(Scenario(rng="python"), {"pipeline.max_staleness": [None, 2]}, progress=False,
               metrics=["steps", "drop_fraction", "staleness_max"])
    assert df.columns == ["pipeline.max_staleness", "seed", "steps", "drop_fraction", "staleness_max",
                          "error", "scenario_key", "run_key"]
    assert df["steps"].to_list()[0] == 34
    assert df["drop_fraction"][0] == 0.0 and df["drop_fraction"][1] > 0.0
    assert df["staleness_max"][1] <= 2


def test_whole_parts_as_values_and_list_of_scenarios():
    df = sweep(SMALL, {"pipeline": [Synchronous(), FullyAsync(2)]}, seeds=2, progress=False)
    assert df.schema["pipeline"] == pl.String
    assert df["pipeline"].unique(maintain_order=True).to_list() == ["Synchronous()", "FullyAsync(max_staleness=2)"]
    scs = [SMALL.replace(seed=3), SMALL.replace(batch_size=256, seed=4),
           SMALL.replace(lengths=Empirical([100.0, 5000.0], name="two"), seed=5)]
    df2 = sweep(grid=scs, progress=False)
    assert df2.columns[:7] == ["batch_size", "lengths", "lengths.mu", "lengths.sigma", "lengths.max_tokens",
                               "lengths.group_correlation", "seed"]
    assert df2["lengths.mu"].to_list() == [7.6, 7.6, None]
    assert df2["seed"].to_list() == [3, 4, 5]  # each scenario's own seed
    assert df2["lengths"].to_list() == ["LogNormal", "LogNormal", "two"]
    assert df2["steps"].to_list() == [summary_row(sc)["steps"] for sc in scs]
    df3 = sweep(grid=scs, seeds=[0, 1], progress=False)
    assert df3["seed"].to_list() == [0, 1] * 3


def test_points_and_duplicates():
    pts = [{"train_step_s": 30.0}, {"train_step_s": 30}, {"batch_size": 256}]
    df = sweep(SMALL, pts, seeds=1, progress=False)
    assert df.columns[:2] == ["train_step_s", "batch_size"]
    assert df["train_step_s"].to_list() == [30.0, 30.0, 60.0]   # normalised values of each scenario
    assert df["batch_size"].to_list() == [512, 512, 256]
    # 30 and 30.0 make the same scenario: one run, two identical rows
    assert df["run_key"][0] == df["run_key"][1]
    assert df[0].equals(df[1])   # NaN equal to NaN (agentic values of a scenario that is not agentic)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"grid": {"nope": [1]}}, "nope"),
        ({"grid": {"pipeline.nope": [1]}}, "pipeline.nope"),
        ({"grid": {"batch_size": [0]}}, "batch_size"),
        ({"grid": {"batch_size": 5}}, "grid.batch_size"),
        ({"grid": {"batch_size": []}}, "grid.batch_size"),
        ({"grid": {"seed": [1, 2]}}, "grid.seed"),
        ({"grid": [{"rng": "slow"}]}, "grid[0]"),
        ({"grid": "x"}, "grid"),
        ({"seeds": 0}, "seeds"),
        ({"seeds": [-1]}, "seeds"),
        ({"seeds": []}, "seeds"),
        ({"metrics": ["steps", "speed"]}, "metrics"),
        ({"backend": "dask"}, "backend"),
        ({"threads": -1}, "threads"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"on_error": "ignore"}, "on_error"),
        ({"max_samples": 0}, "max_samples"),
    ],
)
def test_bad_input_names_the_field(kwargs, field):
    with pytest.raises(ScenarioError) as e:
        sweep(SMALL, **{"progress": False, **kwargs})
    assert str(e.value).startswith(field), str(e.value)
    assert isinstance(e.value, ValueError)


def test_engine_errors_raise_or_are_recorded(tmp_path):
    # max_samples = 2020 passes the up-front estimate (2017 samples) but these seeds start 2086 and
    # 2025 samples: the engine rejects them while running
    with pytest.raises(ScenarioError, match=r"4 of 4 runs failed.*max_samples"):
        sweep(SMALL, {"train_step_s": [30.0, 60.0]}, seeds=2, max_samples=2020, progress=False, out=tmp_path)
    df = sweep(SMALL, {"train_step_s": [30.0, 60.0]}, seeds=2, max_samples=2020, progress=False,
               on_error="record", out=tmp_path)
    assert df["error"].null_count() == 0
    assert df["error"][0].startswith("RunLimitError: ") and "max_samples" in df["error"][0]
    assert df["steps"].null_count() == 4


# ---------------------------------------------------------------- keys

# Key version 2: run_key / scenario_key of Scenario() with seed 0, and of a small empirical scenario;
# they change only with a new key version.
GOLDEN_RUN_KEY = "c8303012418b11073d57711850c70d68"
GOLDEN_SCENARIO_KEY = "21e850b64246549096b2b6447a2bd8ca"
GOLDEN_EMPIRICAL_KEY = "764cb47eecf14f4e4cfc15d3ec3955c4"

# Key version 1, as rollsim before key version 2 computed them from Scenario.to_dict() (run_key with
# the scenario's seed, scenario_key); recorded with that code.
V1_CASES = {
    "default": Scenario(),
    "seed_max": Scenario(seed=2**64 - 1),
    "weight_sync": Scenario(train_step_s=50.0, weight_sync_s=10.0, logprob_s_per_token=1e-4, train_s_per_token=2e-5),
    "sync_pipeline": Scenario(pipeline=Synchronous(over_sampling=1.5, keep_partial=True), rng="python", seed=3),
    "one_step": Scenario(pipeline=OneStepAsync()),
    "offpolicy": Scenario(pipeline=OffPolicy(k=3), group_size=4,
                          lengths=LogNormal(mu=7.0, sigma=1.3, max_tokens=8000.0, group_correlation=0.5)),
    "balanced": Scenario(pipeline=FullyAsync(max_staleness=2, on_stale="requeue", lag_release="sync",
                                             batch_order=LengthBalanced(edges=(1000.0, 8000.0), share=0.8),
                                             max_lag_samples=1000, on_update="abort_resubmit")),
    "instances": Scenario(slots_per_instance=32, decode_throughput_table=((1, 30.0), (32, 600.0)), kv_cache_tokens=1e6,
                          prompt_tokens=500.0, prefill_tokens_per_s=1e4, prefix_sharing=False, rollout_pause_s=2.0),
    "empirical_w": Scenario(lengths=Empirical([100.0, 2000.0, 9000.0], [1.0, 2.0, 3.0]), pipeline=FullyAsync(2), seed=7),
    "grouped": Scenario(lengths=Empirical([100.0, 200.0, 300.0, 400.0], groups=["a", "b", "a", "c"], max_tokens=350.0,
                                          name="g"), group_size=2),
}
V1_KEYS = {
    "default": ("85c8c1d00ecf6ac9ec22b2bfe40759b1", "1feb46ba379240b8b321b162e23dc2d8"),
    "seed_max": ("6e632f767aeb9418c820454e493f5db9", "1feb46ba379240b8b321b162e23dc2d8"),
    "weight_sync": ("bad1eab7c3c42859ff8fd0e4f24b7ea7", "046a96fa58241fbc585ac83e8e182772"),
    "sync_pipeline": ("499c9ad4b33478067966a1c220211b49", "db1a1c267f82eceba669768fe43deacf"),
    "one_step": ("1ac1ed3add6099b8d8af10f222d529ae", "04edb2bfa94fc2392b9a44c23ea9a747"),
    "offpolicy": ("2cdfd330f99b00ad2d124cd4bc90b9a4", "fe7c31295df625b45f161bb0777cbdf2"),
    "balanced": ("16b2dbddebeaca520985329234170069", "dd2af283b9cef418e799b261d669fc91"),
    "instances": ("2e16f920073a920eaade5f1ddce738bf", "c81be85d05adbcaade1ab84cb0875c69"),
    "empirical_w": ("9e27b86253adbd79b16b37e3367f6bc2", "e8d74f4a9bd0199d1ea3ce7e26f96b1c"),
    "grouped": ("fe95b109870f006e44938783c53ea569", "1429da06fce6404fa2ca5e1ee9c040d1"),
}


def test_golden_keys():
    sc = Scenario()
    assert run_key(sc) == GOLDEN_RUN_KEY
    assert scenario_key(sc) == GOLDEN_SCENARIO_KEY
    # spelled out: SHA-256 over the canonical form (every field at its default: only the type)
    assert canonical_form(sc) == '{"@type":"Scenario"}'
    text = b'{"@type":"Scenario"}'
    assert hashlib.sha256(b"rollsim-sweep-key-v2\0run\0" + text + b"\0seed=0").hexdigest()[:32] == GOLDEN_RUN_KEY
    assert hashlib.sha256(b"rollsim-sweep-key-v2\0scenario\0" + text).hexdigest()[:32] == GOLDEN_SCENARIO_KEY
    emp = Scenario(lengths=Empirical([100.0, 2000.0, 9000.0], [1.0, 2.0, 3.0]), pipeline=FullyAsync(2), seed=7)
    values = hashlib.sha256(np.array([100.0, 2000.0, 9000.0]).astype("<f8").tobytes()).hexdigest()
    weights = hashlib.sha256(np.array([1.0, 2.0, 3.0]).astype("<f8").tobytes()).hexdigest()
    assert canonical_form(emp) == (
        '{"@type":"Scenario","lengths":{"@type":"Empirical","values":{"@array":"<f8","sha256":"' + values
        + '","shape":[3]},"weights":{"@array":"<f8","sha256":"' + weights + '","shape":[3]}},'
        '"pipeline":{"@type":"FullyAsync","max_staleness":2}}')
    assert run_key(emp) == GOLDEN_EMPIRICAL_KEY
    assert sweep(emp, progress=False)["run_key"][0] == GOLDEN_EMPIRICAL_KEY


def test_canonical_form_spells_numbers_exactly():
    sc = Scenario(decode_tokens_per_s=30.5, train_step_s=0.1, horizon_s=3600, prefill_tokens_per_s=1e4,
                  decode_throughput_table=None, slots_per_instance=0, kv_cache_tokens=None)
    assert json.loads(canonical_form(sc)) == {
        "@type": "Scenario", "decode_tokens_per_s": "0x1.e800000000000p+4", "train_step_s": "0x1.999999999999ap-4",
        "horizon_s": 3600, "prefill_tokens_per_s": 10000}
    # values that compare equal give one key (an int and the equal float), the next float another
    assert run_key(Scenario(horizon_s=3600)) == run_key(Scenario(horizon_s=3600.0))
    assert run_key(Scenario(horizon_s=math.nextafter(3600.0, 4000.0))) != run_key(Scenario(horizon_s=3600.0))


def test_v1_keys_are_those_of_rollsim_before_key_version_2():
    for name, sc in V1_CASES.items():
        assert (run_key(sc, version=1), scenario_key(sc, version=1)) == V1_KEYS[name], name
    assert len({run_key(sc) for sc in V1_CASES.values()}) == len(V1_CASES)
    assert not {run_key(sc) for sc in V1_CASES.values()} & {k for k, _ in V1_KEYS.values()}


def test_keys_do_not_come_from_the_engine_dict(monkeypatch):
    sc = V1_CASES["instances"]
    before = run_key(sc), scenario_key(sc), run_key(sc, version=1)
    monkeypatch.setattr(Scenario, "to_dict", lambda self: {"wire": "format changed"})
    assert (run_key(sc), scenario_key(sc), run_key(sc, version=1)) == before


def test_default_table_of_key_version_2_is_the_classes_defaults():
    # the frozen defaults equal today's: a default-constructed part is its type alone
    for part in (LogNormal(), Synchronous(), OneStepAsync(), OffPolicy(), FullyAsync(), LengthBalanced()):
        assert canonical_form(part) == f'{{"@type":"{type(part).__name__}"}}', part


def test_key_functions_refuse_what_is_not_a_scenario():
    with pytest.raises(ScenarioError) as e:
        run_key(Scenario().to_dict())  # type: ignore[arg-type]
    assert str(e.value) == ("scenario: must be a rollsim.Scenario (run keys are computed from its fields since key "
                            "version 2, not from the engine dict), got dict")
    with pytest.raises(ScenarioError, match=r"^version: must be one of the key versions \[1, 2\], got 3$"):
        scenario_key(Scenario(), version=3)
    with pytest.raises(ScenarioError, match=r"^seed: must be an integer in \[0, 2\*\*64 - 1\], got -1$"):
        run_key(Scenario(), -1)


def test_keys_stable_across_processes():
    code = ("import rollsim; from rollsim.sweeps import run_key; "
            "print(run_key(rollsim.Scenario()), run_key(rollsim.Scenario(seed=2**64-1)))")
    outs = set()
    for hashseed in ("0", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout.strip())
    assert len(outs) == 1
    assert outs.pop().split()[0] == GOLDEN_RUN_KEY


def test_keys_distinguish_what_the_user_wrote():
    base = Scenario()
    variants = [
        base, base.replace(seed=1), base.replace(train_step_s=math.nextafter(60.0, 61.0)),
        base.replace(rng="python"), base.replace(**{"pipeline.max_staleness": 0}),
        base.replace(lengths=Empirical([1.0, 2.0])), base.replace(lengths=Empirical([1.0, 2.0], [1.0, 2.0])),
        base.replace(lengths=Empirical([1.0, 2.0], name="two")),
        # the same engine input, written differently: key version 2 tells them apart (version 1 did not)
        base.replace(train_step_s=50.0, weight_sync_s=10.0),
    ]
    assert len({run_key(s) for s in variants}) == len(variants)
    assert run_key(variants[-1], version=1) == run_key(base, version=1)


@given(sc=scenarios(), seed=st.integers(0, 2**64 - 1))
def test_key_is_a_function_of_the_scenario(sc, seed):
    a = sc.replace(seed=seed)
    b = Scenario(**{f.name: getattr(a, f.name) for f in dataclasses.fields(Scenario)})
    assert run_key(a) == run_key(b) and scenario_key(a) == scenario_key(b)
    assert run_key(a) == run_key(a.replace(seed=0), seed)
    assert scenario_key(a) == scenario_key(a.replace(seed=0))
    assert len(run_key(a)) == 32
    assert json.loads(canonical_form(a))["@type"] == "Scenario"


# ---------------------------------------------------------------- determinism

def test_same_rows_whatever_threads_chunking_or_streaming(tmp_path):
    grid = {"pipeline.max_staleness": [None, 1], "lengths.sigma": [0.8, 1.2]}
    ref = sweep(SMALL, grid, seeds=range(25), threads=1, chunk_size=1000, progress=False)
    for threads, chunk, out in [(2, None, None), (2, 7, None), (1, 3, tmp_path / "a"), (0, 33, tmp_path / "b")]:
        df = sweep(SMALL, grid, seeds=range(25), threads=threads, chunk_size=chunk, progress=False, out=out)
        assert_frame_equal(df, ref, check_exact=True)
        if out is not None:
            back = read_sweep(out).sort("run_key")
            assert_frame_equal(back.select(ref.columns), ref.sort("run_key"), check_exact=True)
    assert len(list((tmp_path / "a").glob("part-*.parquet"))) == math.ceil(100 / 3)


@pytest.mark.filterwarnings("ignore::rollsim.NoTrainingStepWarning")
@pytest.mark.filterwarnings("ignore::rollsim.StalenessCapLivelockWarning")
@settings(max_examples=12)
@given(sc=scenarios(), seeds=st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6, unique=True),
       chunk=st.integers(1, 8), threads=st.sampled_from([1, 2]))
def test_property_rows_match_simulate(sc, seeds, chunk, threads):
    df = sweep(sc, seeds=seeds, chunk_size=chunk, threads=threads, progress=False, on_error="record")
    assert df["seed"].to_list() == seeds
    for row, s in zip(df.iter_rows(named=True), seeds):
        try:
            expected = summary_row(sc.replace(seed=s))
        except ScenarioError as e:
            assert row["error"] == f"ScenarioError: {e}"
            continue
        assert row["error"] is None
        for m, v in expected.items():
            assert row[m] == v or (isinstance(v, float) and math.isnan(v) and math.isnan(row[m])), m


# ---------------------------------------------------------------- streaming and resume

class Crash(Exception):
    pass


def test_resume_after_a_crash_loses_nothing_and_duplicates_nothing(tmp_path):
    grid = {"train_step_s": [30.0, 60.0, 90.0]}
    full = sweep(SMALL, grid, seeds=range(100), progress=False, chunk_size=1000)

    def crash_after(n):
        def hook(done, total):
            assert total == 300
            if done >= n:
                raise Crash(f"simulated crash at {done}")
        return hook

    with pytest.raises(Crash):
        sweep(SMALL, grid, seeds=range(100), out=tmp_path, chunk_size=40, threads=1, progress=crash_after(100))
    parts = sorted(tmp_path.glob("part-*.parquet"))
    assert 3 <= len(parts) < 8   # the chunk in progress when the hook raised is written, nothing later
    partial = read_sweep(tmp_path)
    assert partial.height == 40 * len(parts)
    assert partial["run_key"].n_unique() == partial.height
    # every finished row is already right
    assert_frame_equal(partial.sort("run_key"), full.filter(pl.col("run_key").is_in(partial["run_key"].to_list()))
                       .sort("run_key"), check_exact=True)

    seen = []
    df, info = sweep_with_info(SMALL, grid, seeds=range(100), out=tmp_path, chunk_size=40,
                               progress=lambda d, t: seen.append(d))
    assert info.resumed == partial.height and info.ran == 300 - partial.height
    assert seen[0] >= partial.height and seen[-1] == 300
    assert_frame_equal(df, full, check_exact=True)
    back = read_sweep(tmp_path)
    assert back.height == 300 and back["run_key"].n_unique() == 300

    # a third run does nothing, writes nothing and gives the same frame
    n_parts = len(list(tmp_path.glob("part-*.parquet")))
    df3, info3 = sweep_with_info(SMALL, grid, seeds=range(100), out=tmp_path, progress=False)
    assert (info3.ran, info3.resumed, info3.chunks) == (0, 300, 0)
    assert_frame_equal(df3, full, check_exact=True)
    assert len(list(tmp_path.glob("part-*.parquet"))) == n_parts


def test_extending_a_sweep_runs_only_new_runs(tmp_path):
    _, a = sweep_with_info(SMALL, {"train_step_s": [30.0]}, seeds=range(10), out=tmp_path, progress=False)
    df, b = sweep_with_info(SMALL, {"train_step_s": [30.0, 60.0]}, seeds=range(12), out=tmp_path, progress=False)
    assert (a.ran, b.resumed, b.ran) == (10, 10, 14)
    assert df.height == 24
    assert_frame_equal(df, sweep(SMALL, {"train_step_s": [30.0, 60.0]}, seeds=range(12), progress=False),
                       check_exact=True)
    # a sweep over other fields in the same directory: parts with other columns are combined, and
    # the sweep says that the directory now holds another sweep's runs (reading it returns them too)
    with pytest.warns(StoreWarning, match=r"holds 26 distinct runs, 24 more than this sweep's 2: runs of another sweep"):
        sweep(SMALL, {"batch_size": [256]}, seeds=2, out=tmp_path, progress=False)
    back = read_sweep(tmp_path)
    assert back.height == 26 and {"train_step_s", "batch_size"} <= set(back.columns)


def test_half_written_files_are_ignored_and_cleaned(tmp_path):
    sweep(SMALL, seeds=3, out=tmp_path, progress=False)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    import socket
    junk = tmp_path / f".part-deadbeef.parquet.{socket.gethostname()}.{dead}.tmp"
    junk.write_bytes(b"PAR1 half a file")
    assert read_sweep(tmp_path).height == 3
    Store(tmp_path).close()  # the next sweep on this directory removes temp files of dead processes
    assert not junk.exists()


def test_out_must_be_a_sweep_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ScenarioError, match="^out"):
        sweep(SMALL, out=f, progress=False)
    with pytest.raises(ScenarioError, match="^out"):
        read_sweep(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / MANIFEST).write_text('{"format": 99}')
    with pytest.raises(ScenarioError, match="format 99"):
        sweep(SMALL, out=tmp_path / "d", progress=False)


def test_plain_progress_line(monkeypatch, capsys):
    import builtins
    real_import = builtins.__import__

    def no_rich(name, *a, **k):
        if name.startswith("rich"):
            raise ImportError(name)
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_rich)
    sweep(SMALL, seeds=5, progress=True)
    err = capsys.readouterr().err
    assert "sweep: 5/5 runs (100%)" in err and "ETA" in err


# ---------------------------------------------------------------- sampling

@given(n=st.integers(1, 60), seed=st.integers(0, 2**32))
def test_latin_hypercube_fills_every_stratum(n, seed):
    pts = latin_hypercube({"train_step_s": (30, 600), "lengths.sigma": LogUniform(0.5, 2.0),
                           "batch_size": IntUniform(1, n), "pipeline.max_staleness": Choice([0, 1, 2, 4])}, n, seed)
    assert len(pts) == n
    x = np.array([p["train_step_s"] for p in pts])
    assert sorted(np.floor((x - 30) / 570 * n).astype(int)) == list(range(n))
    y = np.log([p["lengths.sigma"] for p in pts])
    assert sorted(np.floor((y - math.log(0.5)) / math.log(4.0) * n).astype(int)) == list(range(n))
    assert sorted(p["batch_size"] for p in pts) == list(range(1, n + 1))
    counts = np.bincount([[0, 1, 2, 4].index(p["pipeline.max_staleness"]) for p in pts], minlength=4)
    # each category spans n/4 strata: all strata inside it, plus at most the two it shares
    assert all(n // 4 - 1 <= c <= -(-n // 4) + 1 for c in counts), counts
    assert pts == latin_hypercube({"train_step_s": (30, 600), "lengths.sigma": LogUniform(0.5, 2.0),
                                   "batch_size": IntUniform(1, n), "pipeline.max_staleness": [0, 1, 2, 4]}, n, seed)


def test_random_points_and_their_sweep():
    pts = random_points({"train_step_s": Uniform(30, 600), "pipeline.max_staleness": [0, 2]}, n=6, seed=1)
    assert pts == random_points({"train_step_s": (30, 600), "pipeline.max_staleness": [0, 2]}, n=6, seed=1)
    assert all(30 <= p["train_step_s"] < 600 and p["pipeline.max_staleness"] in (0, 2) for p in pts)
    assert type(pts[0]["train_step_s"]) is float
    df = sweep(SMALL, pts, seeds=2, progress=False, metrics=["steps"])
    assert df.columns == ["train_step_s", "pipeline.max_staleness", "seed", "steps", "error", "scenario_key", "run_key"]
    assert df["train_step_s"].to_list()[::2] == [p["train_step_s"] for p in pts]
    with pytest.raises(ScenarioError, match="^train_step_s"):
        random_points({"train_step_s": (600, 30)}, n=3)
    with pytest.raises(ScenarioError, match="^lengths.sigma"):
        latin_hypercube({"lengths.sigma": LogUniform(0, 1)}, n=3)
    with pytest.raises(ScenarioError, match="^n"):
        latin_hypercube({"train_step_s": (1, 2)}, n=0)


# ---------------------------------------------------------------- statistics

@pytest.mark.parametrize("p, df, expected", [
    # two-sided 95% and 99% critical values from standard t tables
    (0.975, 1, 12.7062047362), (0.975, 2, 4.3026527297), (0.975, 3, 3.1824463053), (0.975, 4, 2.7764451052),
    (0.975, 9, 2.2621571628), (0.975, 29, 2.0452296421), (0.995, 5, 4.0321429836), (0.95, 10, 1.8124611228),
    (0.975, 120, 1.9799304050), (0.975, 5000, 1.9604386),
])
def test_t_quantile_table(p, df, expected):
    assert t_quantile(p, df) == pytest.approx(expected, abs=2e-7)
    assert t_quantile(1 - p, df) == -t_quantile(p, df)


def test_t_quantile_series_meets_expansion_at_1000():
    from rollsim.sweeps.stats import _cornish_fisher
    assert t_quantile(0.975, 1000) == pytest.approx(_cornish_fisher(0.975, 1000), abs=1e-10)


def test_aggregate_mean_and_interval():
    df = sweep(SMALL, {"pipeline.max_staleness": [None, 1]}, seeds=range(6), progress=False)
    agg = aggregate(df, ["staleness_mean", "steps", "generation_outruns_training"], ci=0.9)
    assert agg.columns[:3] == ["pipeline.max_staleness", "scenario_key", "seeds"]
    assert agg.height == 2 and agg["seeds"].to_list() == [6, 6]
    for i, cap in enumerate([None, 1]):
        x = df.filter(pl.col("pipeline.max_staleness").eq_missing(cap))["staleness_mean"].to_numpy()
        mean, sd = x.mean(), x.std(ddof=1)
        half = 2.0150483733 * sd / math.sqrt(6)   # t_{0.95, 5}
        assert agg["staleness_mean_mean"][i] == pytest.approx(mean, rel=1e-12)
        assert agg["staleness_mean_std"][i] == pytest.approx(sd, rel=1e-12)
        assert agg["staleness_mean_ci_low"][i] == pytest.approx(mean - half, rel=1e-9)
        assert agg["staleness_mean_ci_high"][i] == pytest.approx(mean + half, rel=1e-9)
    assert agg["generation_outruns_training_mean"].to_list() == [0.0, 0.0]


def test_aggregate_skips_nan_and_single_seeds():
    frame = pl.DataFrame({"x": [1, 1, 2], "seed": [0, 1, 0], "m": [1.0, float("nan"), 5.0]})
    agg = aggregate(frame)
    assert agg.columns == ["x", "seeds", "m_mean", "m_std", "m_ci_low", "m_ci_high"]
    assert agg.rows() == [(1, 2, 1.0, None, None, None), (2, 1, 5.0, None, None, None)]
    with pytest.raises(ScenarioError, match="^ci"):
        aggregate(frame, ci=95)
    with pytest.raises(ScenarioError, match="^metrics"):
        aggregate(frame, ["nope"])


def test_docstring_examples_run():
    import doctest
    import importlib

    # by module name: once rollsim/__init__ exports the sweep function, rollsim.sweep is that function
    for mod in (importlib.import_module("rollsim.sweeps._run"), importlib.import_module("rollsim.sweeps.space")):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
        assert res.attempted > 0 and res.failed == 0, mod.__name__
