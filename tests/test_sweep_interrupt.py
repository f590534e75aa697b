"""Ctrl-C (SIGINT) stops a sweep streaming to parquet within a second of CPU time; every finished chunk is on
disk, complete and readable, and a rerun resumes without duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Scenario
from rollsim.sweeps import read_sweep, sweep, sweep_with_info

SCRIPT = """
import sys
from rollsim import Scenario
from rollsim.sweeps import sweep
print("started", flush=True)
try:
    sweep(Scenario(horizon_s=3600.0), {"pipeline.max_staleness": [None, 2]}, seeds=range(600),
          out=sys.argv[1], chunk_size=30, threads=1, progress=False)
except KeyboardInterrupt:
    print("interrupted", flush=True)
    raise
print("finished", flush=True)
"""


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="POSIX signals, CPU time from /proc (Linux)")
def test_ctrl_c_stops_a_sweep_quickly_and_keeps_finished_chunks(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 120
    while len(list(out.glob("part-*.parquet"))) < 3:
        assert proc.poll() is None, "the sweep finished before it could be interrupted; make it longer"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    # stopped within a second of the child's CPU time after the signal (the wall time of a loaded
    # machine is no measure of it): the sweep would run for minutes
    before = _cpu_s(proc.pid)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.stdout.read(), proc.stderr.read()    # until the child closes them: it exits
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stdout.close()
    proc.stderr.close()
    after = usage.ru_utime + usage.ru_stime
    assert after - before < 1.0, (before, after)
    assert proc.returncode != 0 and "interrupted" in stdout and "finished" not in stdout
    assert "KeyboardInterrupt" in stderr

    parts = sorted(out.glob("part-*.parquet"))
    assert 3 <= len(parts) < 40
    for p in parts:  # every chunk on disk is complete and readable
        assert pl.read_parquet(p).height == 30
    assert not list(out.glob(".*.tmp"))
    partial = read_sweep(out)
    assert partial.height == 30 * len(parts) and partial["run_key"].n_unique() == partial.height
    assert partial["error"].null_count() == partial.height

    base, grid = Scenario(horizon_s=3600.0), {"pipeline.max_staleness": [None, 2]}
    df, info = sweep_with_info(base, grid, seeds=range(600), out=out, chunk_size=97, progress=False)
    assert info.resumed == partial.height and info.ran == 1200 - partial.height
    back = read_sweep(out)
    assert back.height == 1200 and back["run_key"].n_unique() == 1200
    # the rows written before the interrupt are the rows a fresh sweep computes
    fresh = sweep(base, grid, seeds=range(600), progress=False)
    assert_frame_equal(df, fresh, check_exact=True)
    keys = partial["run_key"].to_list()
    assert_frame_equal(partial.sort("run_key").select(fresh.columns),
                       fresh.filter(pl.col("run_key").is_in(keys)).sort("run_key"), check_exact=True)
