"""No Rust panic reaches Python: every #[pyfunction] runs under catch_unwind, and the most plausible
panic paths (extreme sizes, odd arrays handed to the raw extension functions) give clean errors."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from rollsim import FullyAsync, Scenario, ScenarioError, _rollsim

ROOT = Path(__file__).resolve().parent.parent
BINDINGS = [ROOT / "rust" / "rollsim-py" / "src" / name for name in ("lib.rs", "sync.rs", "many.rs")]


def test_every_pyfunction_catches_panics():
    """Static check of the bindings: each #[pyfunction] either wraps its body in guard(...) or runs
    its engine call under catch_unwind after converting arguments (conversion cannot panic)."""
    seen = []
    for path in BINDINGS:
        src = path.read_text()
        for m in re.finditer(r"#\[pyfunction\]\s*(?:#\[pyo3[^\]]*\]\s*)?(?:pub(?:\(crate\))? )?fn (\w+)", src):
            name = m.group(1)
            body = src[m.end():]
            end = re.search(r"\n}\n", body)
            body = body[: end.start()] if end else body
            assert "guard(" in body or "catch_unwind" in body, f"{path.name}: {name} does not catch panics"
            seen.append(name)
    assert {"simulate", "simulate_many", "py_random_stream", "py_lognormal_stream", "sync_estimate",
            "sync_estimate_many", "sync_plan"} <= set(seen)


def engine_dict(**changes):
    d = Scenario(horizon_s=60.0).to_dict()
    d.update(changes)
    return d


def empirical(values, weights=None, offsets=None):
    return engine_dict(lengths={"kind": "empirical", "values": values, "weights": weights, "group_offsets": offsets})


CLEAN = [  # (call, exact message of the ScenarioError)
    (lambda: _rollsim.simulate(empirical(np.array([100, 200]))),
     "lengths.values: TypeError: type mismatch: from=int64, to=float64"),
    (lambda: _rollsim.simulate(empirical(np.array([100.0, 200.0], dtype=np.float32))),
     "lengths.values: TypeError: type mismatch: from=float32, to=float64"),
    (lambda: _rollsim.simulate(empirical(np.ones((2, 2)))),
     "lengths.values: TypeError: dimensionality mismatch: from=2, to=1"),
    (lambda: _rollsim.simulate(empirical([100.0, 200.0])),
     "lengths.values: TypeError: 'list' object is not an instance of 'ndarray'"),
    (lambda: _rollsim.simulate(empirical(np.array([], dtype=np.float64))), "lengths.values: must hold at least one length"),
    (lambda: _rollsim.simulate(empirical(np.array([100.0, 200.0]), np.array([1.0]))),
     "lengths.weights: must have one weight per value (2 values, 1 weights)"),
    (lambda: _rollsim.simulate(empirical(np.array([100.0, 200.0]), offsets=np.array([-1, 2]))),
     "lengths.groups: offsets must be >= 0, got -1"),
    (lambda: _rollsim.simulate(empirical(np.array([100.0, 200.0]), offsets=np.array([0, 5]))),
     "lengths.groups: offsets must run from 0 to the number of values"),
    (lambda: _rollsim.simulate(empirical(np.array([100.0, 200.0]), offsets=np.array([0, 2], dtype=np.int32))),
     "lengths.group_offsets: TypeError: type mismatch: from=int32, to=int64"),
    (lambda: _rollsim.simulate(engine_dict(rollout_slots=-1)), "rollout_slots: must be in [1, 16777216], got -1"),
    (lambda: _rollsim.simulate(engine_dict(rollout_slots=2**40)),
     "rollout_slots: must be in [1, 16777216], got 1099511627776"),
    (lambda: _rollsim.simulate(engine_dict(rollout_slots=2**200)), "rollout_slots: must be in [1, 16777216], got 2**200"),
    (lambda: _rollsim.simulate(engine_dict(batch_size=True)),
     "batch_size: must be an integer in [1, 16777216], got bool True"),
    (lambda: _rollsim.simulate(engine_dict(train_step_s="60")),
     "train_step_s: must be a number of seconds, got str '60'"),
    (lambda: _rollsim.simulate(engine_dict(kv_cache_tokens=0.0, slots_per_instance=256)),
     "kv_cache_tokens: must be in [1, 1e15] tokens, or None (unlimited), got 0.0"),
    (lambda: _rollsim.simulate(engine_dict(weight_sync_s=-1.0)), "weight_sync_s: must be in [0, 1e12] seconds, got -1.0"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "off_policy", "k": -1})),
     "pipeline.k: must be in [0, 1000000], got -1"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "fully_async", "max_staleness": 2**40})),
     "pipeline.max_staleness: must be in [0, 4294967295], got 1099511627776"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "fully_async", "on_update": "nope"})),
     'pipeline.on_update: unknown mode "nope"'),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "off_policy"})), "pipeline.k: missing"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"k": 1})), "pipeline.kind: missing"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "fully_async", "batch_order": 5})),
     "pipeline.batch_order: must be 'fifo', 'oldest_first' or a dict {edges, quotas}, got 5"),
    (lambda: _rollsim.simulate(engine_dict(pipeline={"kind": "fully_async", "batch_order": {"edges": [-5.0], "quotas": [0, 0]}})),
     "pipeline.batch_order: edges must be finite, > 0 and increasing"),
    (lambda: _rollsim.simulate(engine_dict(horizon_s=math.nan)), "horizon_s: must be in [1e-6, 1e12] seconds, got nan"),
    (lambda: _rollsim.simulate(engine_dict(lengths={"kind": "lognormal", "mu": 1e300, "sigma": 1.0, "max_tokens": 16384.0})),
     "lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got 1e+300"),
    (lambda: _rollsim.simulate(engine_dict(lengths={"kind": "lognormal", "mu": 7.6, "sigma": 1e300, "max_tokens": 16384.0})),
     "lengths.sigma: must be in [0, 10], got 1e+300"),
    (lambda: _rollsim.simulate(engine_dict(), True, 2**40), "max_samples: must be in [1, 4294967295], got 1099511627776"),
    (lambda: _rollsim.simulate_many([5], [0], [0]), "scenarios[0]: must be a dict"),
    (lambda: _rollsim.simulate_many([engine_dict()], [0], [0], 100_000), "threads: must be in [0, 4096], got 100000"),
    (lambda: _rollsim.simulate_many([engine_dict()], [0], [0], 1, 10**6, 5), "progress: must be None or a callable f(done, total)"),
    (lambda: _rollsim.py_random_stream(0, 2**62), "n: must be in [0, 134217728], got 4611686018427387904"),
    (lambda: _rollsim.py_lognormal_stream(0, 0.0, 1.0, 2**62), "n: must be in [0, 134217728], got 4611686018427387904"),
    (lambda: _rollsim.sync_estimate({}), "model: missing"),
    (lambda: _rollsim.sync_plan({}), "model: missing"),
]


@pytest.mark.parametrize("call, message", CLEAN, ids=[str(i) for i in range(len(CLEAN))])
def test_raw_extension_functions_refuse_cleanly(call, message):
    with pytest.raises(ScenarioError) as e:
        call()
    assert str(e.value) == message


def test_non_contiguous_arrays_are_read_correctly():
    strided = (np.arange(1.0, 201.0) * 100)[::2]            # a view with stride 16 bytes
    assert not strided.flags["C_CONTIGUOUS"]
    a = _rollsim.simulate(empirical(strided), False)["summary"]
    b = _rollsim.simulate(empirical(np.ascontiguousarray(strided)), False)["summary"]
    assert repr(a) == repr(b)   # (NaN-aware)
    w = np.arange(1.0, 201.0)[::2]
    a = _rollsim.simulate(empirical(np.ascontiguousarray(strided), w), False)["summary"]
    b = _rollsim.simulate(empirical(np.ascontiguousarray(strided), np.ascontiguousarray(w)), False)["summary"]
    assert repr(a) == repr(b) and a["samples_started"] > 0


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("changes, key, value", [
    (dict(rollout_slots=2**22, horizon_s=1.0), "samples_started", 4194349),   # 4M slots
    (dict(rollout_slots=2**22, batch_size=2**24, horizon_s=5.0), "steps", 0),
    (dict(rollout_slots=1, batch_size=2**24, group_size=2**24, horizon_s=5.0,
          pipeline=FullyAsync(admission_eta=2**32 - 1).to_dict()), "steps", 0),
    (dict(prompt_tokens=1e9, prefill_tokens_per_s=1e-6), "steps", 0),  # the extremes of the ranges
    (dict(pipeline={"kind": "off_policy", "k": 1_000_000, "over_sampling": 1e6}), "steps", 1),
    (dict(decode_tokens_per_s=1e-6), "samples_started", 257),
    (dict(train_step_s=1e12), "steps", 0),
])
def test_extreme_sizes_run_or_refuse_cleanly(changes, key, value):
    s = _rollsim.simulate(engine_dict(**changes), False, 2**32 - 1)["summary"]
    assert s[key] == value


def test_a_progress_callback_error_propagates_unchanged():
    with pytest.raises(ZeroDivisionError):
        _rollsim.simulate_many([Scenario(horizon_s=3600.0 * 200).to_dict()], [0] * 4, [0, 1, 2, 3], 1, 10**8,
                               lambda a, b: 1 / 0)
