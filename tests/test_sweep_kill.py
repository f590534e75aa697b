"""A sweep process killed with SIGKILL midway: no half file, nothing finished lost, no duplicate on resume."""

from __future__ import annotations

import signal
import subprocess

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Scenario
from rollsim.sweeps import read_sweep, sweep, sweep_with_info
from sweep_kill import kill_after_parts

SCRIPT = """
import sys
from rollsim import Scenario
from rollsim.sweeps import sweep
sweep(Scenario(horizon_s=3600.0), {"pipeline.max_staleness": [None, 2]}, seeds=range(600),
      out=sys.argv[1], chunk_size=30, threads=1, progress=False)
print("finished")
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_killed_sweep_resumes_exactly(tmp_path):
    out = tmp_path / "out"
    proc = kill_after_parts(SCRIPT, out, 4, stdout=subprocess.DEVNULL)
    assert proc.returncode == -signal.SIGKILL
    parts = sorted(out.glob("part-*.parquet"))
    assert 4 <= len(parts) < 40
    for p in parts:  # every part is complete and readable
        assert pl.read_parquet(p).height == 30
    partial = read_sweep(out)
    assert partial["run_key"].n_unique() == partial.height == 30 * len(parts)

    base = Scenario(horizon_s=3600.0)
    grid = {"pipeline.max_staleness": [None, 2]}
    df, info = sweep_with_info(base, grid, seeds=range(600), out=out, chunk_size=97, progress=False)
    assert info.resumed == partial.height and info.ran == 1200 - partial.height
    back = read_sweep(out)
    assert back.height == 1200 and back["run_key"].n_unique() == 1200
    assert not list(out.glob(".*.tmp"))
    fresh = sweep(base, grid, seeds=range(600), progress=False)
    assert_frame_equal(df, fresh, check_exact=True)
