"""Defects a new user hit: the sync recommendation, docs examples, launch-script commands, AReaL nulls."""

from __future__ import annotations

from pathlib import Path

import pytest

import rollsim.sync as rs
from rollsim.sync.stacks import rank_designs

EXAMPLE = Path(rs.__file__).parent / "examples" / "cluster.toml"


def test_rank_designs_says_how_far_to_trust_each_stack():
    """Row 1 of ``rank_designs`` is the stack to run; each row carries the errors of its stack's
    prediction rows (``rollsim sync --validate``) and the interval they give its estimate."""
    r = {row["stack"]: row for row in rank_designs(rs.load_weight_sync(EXAMPLE).cluster).iter_rows(named=True)}
    top = rank_designs(rs.load_weight_sync(EXAMPLE).cluster).row(0, named=True)
    assert top["stack"] == "rdma-write" and top["total_s"] == pytest.approx(1.7129, abs=1e-4)
    assert top["checked_on"] == "1 prediction of published timings off by +17.1 %"
    assert top["low_s"] == pytest.approx(1.7129 / 1.1706, abs=1e-3) and top["high_s"] == top["total_s"]
    nemo = r["nemo-rl-reshard"]   # three predictions: -7.4 %, +24.9 %, +38.4 %
    assert nemo["checked_on"] == "3 predictions of published timings off by -7.4 % to +38.4 %"
    assert nemo["low_s"] == pytest.approx(nemo["total_s"] / 1.384, rel=1e-3)
    assert nemo["high_s"] == pytest.approx(nemo["total_s"] / 0.926, rel=1e-3)
    assert r["verl-ring"]["checked_on"] == "fitted on 1 published timing, no prediction checked"
    assert r["verl-ring"]["low_s"] is None and r["verl-ring"]["high_s"] is None
    assert r["nccl-broadcast-rank0"]["checked_on"] == "checkpoint-engine's fitted values, no published timing of its own"
    assert r["filesystem"]["checked_on"] == "not calibrated: no published timing (assumed values)"
    own = rank_designs(rs.load_weight_sync(EXAMPLE).cluster, {"mine": rs.STACKS["rdma-write"]}).row(0, named=True)
    assert own["checked_on"] == "not a stack of rollsim.sync.STACKS: no published timing checked"
