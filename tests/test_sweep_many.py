"""``_rollsim.simulate_many``: each distinct scenario once plus (index, seed) runs in, summary columns
out; the same columns on any thread count, equal to one ``simulate`` call per run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import rollsim
from rollsim import Empirical, FullyAsync, Scenario, ScenarioError, Synchronous, _rollsim
from rollsim.sweeps import SUMMARY_SCHEMA

A = Scenario(horizon_s=720.0)
B = Scenario(horizon_s=900.0, pipeline=Synchronous(), lengths=Empirical([300.0, 2000.0, 9000.0], [3.0, 2.0, 1.0]))
C = Scenario(horizon_s=600.0, rollout_slots=64, slots_per_instance=16, decode_slowdown_per_seq=0.05,
             pipeline=FullyAsync(1))


def alone(sc: Scenario) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rollsim.simulate(sc, record="summary").summary


def same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.tobytes() == b.tobytes()  # bit for bit, NaN included


def runs() -> tuple[list[Scenario], np.ndarray, np.ndarray]:
    scs = [A, B, C]
    index = np.array([0, 1, 2, 0, 0, 2, 1, 1, 0, 2, 2, 0], dtype=np.int64)
    seeds = np.array([5, 5, 5, 6, 2**64 - 1, 0, 7, 7, 9, 1, 2, 3], dtype=np.uint64)
    return scs, index, seeds


def test_columns_equal_one_simulate_call_per_run():
    scs, index, seeds = runs()
    out = _rollsim.simulate_many([s.to_dict() for s in scs], index, seeds, 1)
    assert set(out) == set(SUMMARY_SCHEMA) | {"status", "error"}
    assert out["status"].dtype == np.uint8 and out["status"].tolist() == [0] * len(index)
    assert out["error"] == [None] * len(index)
    assert out["steps"].dtype == np.uint64 and out["end_s"].dtype == np.float64 and out["stalled"].dtype == np.bool_
    for i, (c, s) in enumerate(zip(index, seeds)):
        want = alone(scs[c].replace(seed=int(s)))
        for m in SUMMARY_SCHEMA:
            if m not in want:  # an agentic value of a scenario that is not agentic: 0 or NaN
                continue
            got = out[m][i].item()
            assert got == want[m] or (got != got and want[m] != want[m]), (i, m, got, want[m])


def test_same_columns_on_any_thread_count():
    scs, index, seeds = runs()
    dicts = [s.to_dict() for s in scs]
    ref = _rollsim.simulate_many(dicts, index, seeds, 1)
    for threads in (2, 3, 0):
        out = _rollsim.simulate_many(dicts, index, seeds, threads)
        assert out["error"] == ref["error"]
        for m in (*SUMMARY_SCHEMA, "status"):
            assert same(out[m], ref[m]), (threads, m)
    # a scenario's own seed is ignored: only the runs' seeds count
    moved = _rollsim.simulate_many([s.replace(seed=12345).to_dict() for s in scs], index, seeds, 2)
    assert all(same(moved[m], ref[m]) for m in SUMMARY_SCHEMA)


def test_failed_runs_have_a_status_and_a_message():
    bad = dict(A.to_dict(), decode_tokens_per_s=1e-320)  # accepted by the conversion, refused by the engine
    out = _rollsim.simulate_many([A.to_dict(), bad], [0, 1, 0], [1, 1, 1], 2, 2000)
    assert out["status"].tolist() == [2, 1, 2]
    assert out["error"][1] == "ScenarioError: decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320"
    assert out["error"][0] == ("RunLimitError: max_samples: the run would start more than 2000 samples; shorten "
                               "horizon_s or raise max_samples")
    assert out["steps"].tolist() == [0, 0, 0] and np.isnan(out["end_s"]).all() and not out["stalled"].any()
    ok = _rollsim.simulate_many([A.to_dict(), bad], [0], [1])
    assert ok["status"].tolist() == [0] and ok["steps"][0] == alone(A.replace(seed=1))["steps"]


def test_only_the_scenarios_runs_use_are_converted():
    out = _rollsim.simulate_many([{"not": "a scenario"}, A.to_dict(), 3], [1, 1], [4, 5])
    assert out["status"].tolist() == [0, 0]
    with pytest.raises(ScenarioError):  # the conversion's own message (scenario_from_dict's) names the field
        _rollsim.simulate_many([{"not": "a scenario"}, A.to_dict()], [1, 0], [4, 5])
    with pytest.raises(ScenarioError, match=r"^scenarios\[2\]: must be a dict$"):
        _rollsim.simulate_many([A.to_dict(), A.to_dict(), 3], [2], [4])


def test_no_runs_and_plain_sequences():
    out = _rollsim.simulate_many([A.to_dict()], np.array([], dtype=np.int64), np.array([], dtype=np.uint64))
    assert out["steps"].shape == (0,) and out["error"] == []
    a = _rollsim.simulate_many([A.to_dict()], [0, 0], [3, 2**64 - 1])
    b = _rollsim.simulate_many([A.to_dict()], np.array([0, 0], dtype=np.int32), np.array([3, 2**64 - 1], dtype=np.uint64))
    assert all(same(a[m], b[m]) for m in SUMMARY_SCHEMA)


def test_shared_length_arrays_give_the_same_results():
    d = B.to_dict()
    twin = dict(d, train_step_s=30.0)  # the same array objects: converted once, shared
    copy = B.replace(train_step_s=30.0).to_dict()
    copy["lengths"] = dict(copy["lengths"], values=np.array(copy["lengths"]["values"]),
                           weights=np.array(copy["lengths"]["weights"]))
    shared = _rollsim.simulate_many([d, twin], [0, 1, 1], [1, 2, 3])
    apart = _rollsim.simulate_many([d, copy], [0, 1, 1], [1, 2, 3])
    assert all(same(shared[m], apart[m]) for m in SUMMARY_SCHEMA)


def test_progress_ends_at_the_total():
    calls: list[tuple[int, int]] = []
    _rollsim.simulate_many([A.to_dict()], [0] * 5, list(range(5)), 1, 50_000_000, lambda d, t: calls.append((d, t)))
    assert calls[-1] == (5, 5) and all(t == 5 and 0 <= d <= 5 for d, t in calls)
