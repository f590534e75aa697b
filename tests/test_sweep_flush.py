"""Sweeps lose little on interruption and fail early: chunks written by time as well as by count, an
interrupted sweep says how many runs are saved and where, options checked before anything runs
(metrics, TOML seeds, the Ray address)."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Scenario, ScenarioError
from rollsim.sweeps import _plan, _ray, _run, config, read_sweep, sweep, sweep_with_info

SMALL = Scenario(horizon_s=720.0)


def parts(out: Path) -> list[Path]:
    return sorted(out.glob("part-*.parquet"))


@pytest.fixture
def stats():
    _plan.STATS.update(blocks=0, max_block_runs=0)
    return _plan.STATS


# ---------------------------------------------------------------- batch sizes and flushing

def test_batches_start_small_and_grow_to_about_a_second_of_work():
    s = _run._ChunkSizer(None, 2, 0, 4096)
    assert s.next(4096) == 4                       # speed unknown: two runs per thread
    s.observe(4, 0.001)                            # 4,000 runs/s: 4,000 wanted, but at most 8x
    assert s.next(4096) == 32 and s.next(10) == 10  # never more than the chunk has room for
    s.observe(32, 0.008)
    assert s.next(4096) == 256
    s.observe(256, 0.064)
    assert s.next(4096) == 2048
    s.observe(2048, 0.5)
    assert s.next(4096) == 4096                    # 1 s of work, capped at the chunk size
    s.observe(4096, 40.0)                          # much slower runs: back to about a second
    assert s.next(4096) == 102
    s.observe(102, 60.0)                           # runs slower than a second: one per thread
    assert s.next(4096) == 2
    assert not s.flush_due(100, time.perf_counter())
    assert s.flush_due(4096, time.perf_counter())
    assert s.flush_due(1, time.perf_counter() - _run.FLUSH_SECONDS)
    fixed = _run._ChunkSizer(30, 2, 0)
    assert fixed.next(7) == 30 and fixed.flush_due(30, time.perf_counter())
    assert not fixed.flush_due(29, time.perf_counter() - 1e6)   # a chunk_size is exact: no time flush


def test_big_length_arrays_cap_the_distinct_scenarios_of_a_batch_not_its_seeds():
    # 32 MiB of arrays per scenario: 2 distinct scenarios per batch (CHUNK_ARRAY_BYTES = 64 MiB); the
    # engine converts each distinct scenario of a batch once, so its seeds do not count
    assert _run._ChunkSizer(None, 2, 32 << 20, 4096).batch_cap == 2
    assert _run._ChunkSizer(None, 2, 32 << 20, 4096, runs_per_scenario=100).batch_cap == 200
    assert _run._ChunkSizer(None, 2, 1 << 30, 4096, runs_per_scenario=100).batch_cap == 100
    assert _run._ChunkSizer(None, 2, 1, 4096, runs_per_scenario=100).batch_cap == 4096


def test_chunks_are_written_by_time_as_well_as_by_count(tmp_path, stats, monkeypatch):
    ref = sweep(SMALL, seeds=range(300), progress=False)
    stats.update(blocks=0, max_block_runs=0)
    monkeypatch.setattr(_run, "FLUSH_SECONDS", 0.0)       # every batch is due at once
    df = sweep(SMALL, seeds=range(300), out=tmp_path / "t", progress=False)
    assert len(parts(tmp_path / "t")) == stats["blocks"] > 1
    assert_frame_equal(df, ref, check_exact=True)
    stats.update(blocks=0, max_block_runs=0)
    monkeypatch.setattr(_run, "FLUSH_SECONDS", 1e9)       # by count only: chunks of the cap
    monkeypatch.setattr(_run, "MAX_CHUNK", 100)
    df = sweep(SMALL, seeds=range(300), out=tmp_path / "n", progress=False)
    sizes = [pl.read_parquet(p).height for p in parts(tmp_path / "n")]
    assert sizes == [100, 100, 100] and stats["blocks"] > 3   # several batches per chunk
    assert_frame_equal(df, ref, check_exact=True)
    assert_frame_equal(read_sweep(tmp_path / "n").sort("run_key"), ref.sort("run_key"), check_exact=True)
    _, info = sweep_with_info(SMALL, seeds=range(300), out=tmp_path / "n", progress=False, chunk_size=7)
    assert (info.resumed, info.ran, info.chunks) == (300, 0, 0)


def stop_at(n):
    def hook(done, total):
        if done >= n:
            raise KeyboardInterrupt
    return hook


def test_interrupted_sweep_says_how_many_runs_are_saved_and_where(tmp_path):
    with pytest.raises(KeyboardInterrupt) as e:
        sweep(SMALL, seeds=range(100), out=tmp_path, chunk_size=10, threads=1, progress=stop_at(25))
    m = re.fullmatch(rf"sweep interrupted: (\d+) of 100 runs are saved in {re.escape(repr(str(tmp_path)))} "
                     r"\((\d+) written by this call\); run the same sweep with this out again to finish it",
                     str(e.value))
    assert m is not None, str(e.value)
    saved = int(m.group(1))
    assert saved == int(m.group(2)) == read_sweep(tmp_path).height and saved >= 20
    with pytest.raises(KeyboardInterrupt) as e:
        sweep(SMALL, seeds=range(100), out=tmp_path, chunk_size=10, threads=1, progress=stop_at(saved + 15))
    assert str(e.value).startswith(f"sweep interrupted: {saved + 20} of 100 runs are saved in ")
    assert str(e.value).endswith("(20 written by this call); run the same sweep with this out again to finish it")
    with pytest.raises(KeyboardInterrupt, match=r"^sweep interrupted: \d+ of 100 runs had finished and none is kept "
                                                r"\(out=None; pass out=DIR to keep finished runs and resume\)$"):
        sweep(SMALL, seeds=range(100), chunk_size=10, threads=1, progress=stop_at(25))


SLOW = """
import sys, time
from rollsim import Scenario
from rollsim.sweeps import sweep
t0, shown, told = time.monotonic(), [0], [False]
def cb(done, total):
    shown[0] = done
    if not told[0] and done >= 60 and time.monotonic() - t0 > 3:
        told[0] = True
        print("ready", flush=True)
try:
    sweep(Scenario(horizon_s=36000.0), seeds=range(100000), out=sys.argv[1], progress=cb)
except KeyboardInterrupt as e:
    print("shown", shown[0], flush=True)
    print(e, flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_with_default_chunks_keeps_most_of_what_was_shown(tmp_path):
    # before: the first chunk of 512 slow runs was lost whole (0 of several hundred shown runs kept)
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", SLOW, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGINT)
        text, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    shown = int(re.search(r"^shown (\d+)$", text, re.M).group(1))
    m = re.search(r"^sweep interrupted: (\d+) of 100000 runs are saved in (.*) \(", text, re.M)
    assert m is not None, text
    saved = int(m.group(1))
    assert m.group(2) == repr(str(out))
    assert saved == read_sweep(out).height
    assert saved >= shown / 2 and saved >= 30, (saved, shown)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_cli_ctrl_c_prints_the_saved_runs_and_exits_130(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("seeds = 100000\n[base]\nhorizon_s = 36000.0\n")
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "rollsim.cli", "sweep", str(f), "--out", str(out), "--no-progress"],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not parts(out):                      # the first chunk is written within FLUSH_SECONDS
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 130
    last = err.strip().splitlines()[-1]
    m = re.fullmatch(rf"rollsim sweep: sweep interrupted: (\d+) of 100000 runs are saved in "
                     rf"{re.escape(repr(str(out)))} \(\d+ written by this call\); run the same sweep with this "
                     r"out again to finish it", last)
    assert m is not None, err
    assert int(m.group(1)) == read_sweep(out).height > 0


# ---------------------------------------------------------------- checked before anything runs

def test_metrics_are_checked_before_the_sweep_runs():
    calls = []
    for metrics, msg in [
        (["steps", "steps"], "metrics: ['steps'] given more than once; give each metric once (choose from "),
        (["steps", "nope"], "metrics: unknown metric(s) ['nope']; choose from "),
        ([3], "metrics: must be metric names (str), got 3; choose from "),
    ]:
        with pytest.raises(ScenarioError) as e:
            sweep(SMALL, seeds=50, metrics=metrics, progress=lambda d, t: calls.append(d))
        assert str(e.value).startswith(msg) and "'drop_fraction'" in str(e.value)
    assert calls == []


def test_toml_seeds_are_checked_first_and_stay_lazy(tmp_path):
    f = tmp_path / "s.toml"

    def load(text):
        f.write_text(textwrap.dedent(text))
        return config.load(f)

    with pytest.raises(ScenarioError, match=r"^seeds: a count of seeds must be in \[1, 2\*\*32\], got 10000000000$"):
        load("seeds = 10000000000\n[base]\nbatch_size = 512\n")
    tracemalloc.start()
    spec = load("seeds = 50000000\n")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert spec.seeds == range(50_000_000) and peak < 1 << 20
    assert load("seeds = { start = 18446744073709551610, count = 6 }").seeds == range(2**64 - 6, 2**64)
    with pytest.raises(ScenarioError, match=r"^seeds\.count: the last seed, start \+ count - 1 = "):
        load("seeds = { start = 18446744073709551610, count = 7 }")
    with pytest.raises(ScenarioError, match=r"^seeds\.count: must be an integer in \[1, 2\*\*32\], got 4294967297$"):
        load("seeds = { count = 4294967297 }")
    with pytest.raises(ScenarioError, match=r"^metrics: \['steps'\] given more than once"):
        load("metrics = ['steps', 'steps']\n")
    # a sweep of the lazy seeds builds one chunk at a time
    df = sweep(SMALL, seeds=load("seeds = { start = 7, count = 3 }").seeds, progress=False)
    assert df["seed"].to_list() == [7, 8, 9]


# ---------------------------------------------------------------- the Ray address

class _NoRay:
    @staticmethod
    def is_initialized():
        return False


def test_ray_address_is_probed_with_a_timeout(monkeypatch):
    monkeypatch.setattr(_ray, "_import_ray", lambda: _NoRay)
    timeouts = []
    connect = _ray.socket.create_connection

    def recorded(addr, timeout):    # the probe's timeout, read from the call (not from a clock)
        timeouts.append(timeout)
        return connect(addr, timeout=timeout)

    monkeypatch.setattr(_ray.socket, "create_connection", recorded)
    with socket.socket() as s:      # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(ScenarioError) as e:
            _ray.check_address(f"127.0.0.1:{port}")
        assert timeouts == [_ray.CONNECT_TIMEOUT_S]
    assert str(e.value).startswith(f"ray_address: cannot reach a Ray cluster at '127.0.0.1:{port}': TCP connection "
                                   f"to 127.0.0.1:{port} failed within 5 s (")
    assert str(e.value).endswith("start one there (ray start --head) or give the address that `ray status` prints")

    def hangs(addr, timeout):
        raise TimeoutError("timed out")

    monkeypatch.setattr(_ray.socket, "create_connection", hangs)
    with pytest.raises(ScenarioError, match=r"failed within 0\.5 s \(timed out\)"):
        _ray.check_address("ray://10.1.2.3:10001", timeout=0.5)
    for address in ("auto", "local", "nonsense"):   # left to Ray
        _ray.check_address(address)
    assert _ray._host_port("[::1]:6379") == ("::1", 6379) and _ray._host_port("h:0") is None


def test_ray_sweep_on_an_unreachable_address_fails_fast(monkeypatch):
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'rollsim[ray]')")
    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process (the address is not used)")
    def no_init(*args, **kwargs):   # fails fast: refused before ray.init (which retries for minutes)
        raise AssertionError("ray.init was called")

    monkeypatch.setattr(ray, "init", no_init)
    with pytest.raises(ScenarioError, match=r"^ray_address: cannot reach a Ray cluster at '127\.0\.0\.1:1'"):
        sweep(SMALL, backend="ray", ray_address="127.0.0.1:1", progress=False)
    assert not ray.is_initialized()
