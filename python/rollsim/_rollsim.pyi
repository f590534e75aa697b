"""Type stubs of the compiled extension ``rollsim._rollsim`` (rust/rollsim-py)."""

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "simulate",
    "simulate_many",
    "py_random_stream",
    "py_lognormal_stream",
    "sync_estimate",
    "sync_estimate_many",
    "sync_plan",
    "SYNC_SWEEPABLE",
    "table_throughput",
    "lognormal_mean",
    "throughput_ratio",
    "decode_speed",
    "assign_ranks",
    "length_drift_scale",
    "SCHEMA",
    "__version__",
]

__version__: str
#: The engine's schema (rust/rollsim-core/src/schema.rs): ``{"version": int, "scenario": [field
#: dicts: name, kind, unit, default, lo, hi, range, extra, choices, omit_at_default, doc],
#: "summary": [column dicts: name, dtype, unit, doc], "frames": {"steps" | "samples" | "segments":
#: [column dicts]}}``.
SCHEMA: dict[str, Any]

def simulate(
    scenario: dict[str, Any],
    record_samples: bool = True,
    max_samples: int = 50_000_000,
    general_engine: bool = False,
    max_events: int | None = None,
) -> dict[str, Any]:
    """Runs one scenario dict (``Scenario.to_dict()``); returns ``{"summary", "samples", "segments",
    "steps"}`` (``samples`` and ``segments`` are None without ``record_samples``). ``general_engine``
    forces the general streaming engine where the fully-asynchronous fast path applies.
    ``max_events``: the engine's event budget (None: none), RunLimitError naming ``max_events`` past
    it; it counts the summary's ``events`` and the pool's own events (KV preemptions, evictions,
    shared-prefill ends, speed refreshes), which a run can process many of between two finishes. The keys are
    the fields of ``SCHEMA["scenario"]`` (absent or None: the schema's default), e.g.
    ``decode_throughput_table`` (a list of ``[running sequences, tokens/s]`` pairs) and
    ``kv_cache_tokens`` (None: unlimited; 0 is refused); the engine validates them again."""

def simulate_many(
    scenarios: list[dict[str, Any]],
    index: npt.ArrayLike,
    seeds: npt.ArrayLike,
    threads: int = 0,
    max_samples: int = 50_000_000,
    progress: Callable[[int, int], object] | None = None,
) -> dict[str, Any]:
    """Runs ``scenarios[index[i]]`` with seed ``seeds[i]`` for every ``i`` (each distinct scenario dict
    given once, its ``seed`` ignored) in summary mode across threads. Returns columns in run order:
    one numpy array per summary field (uint64 counts, float64, bool; 0 / NaN / false where a run
    failed), ``status`` (uint8: 0 ok, 1 ScenarioError, 2 RunLimitError) and ``error`` (a list of
    None or ``"ScenarioError: <message>"`` / ``"RunLimitError: <message>"``). Results do not depend
    on ``threads``."""

def table_throughput(table: list[tuple[int, float]], n: int) -> float:
    """Instance throughput (tokens/s) with ``n`` sequences from ``(running sequences, tokens/s)``
    points, linear in between, the last value beyond (the engine's formula)."""

def lognormal_mean(mu: float, sigma: float, max_tokens: float) -> float:
    """Mean of ``min(LogNormal(mu, sigma), max_tokens)``, tokens (the engine's closed form)."""

def throughput_ratio(scenario: dict[str, Any]) -> float:
    """Rollout over training throughput of a scenario dict (the summary's ``throughput_ratio``)."""

def decode_speed(scenario: dict[str, Any], n: int) -> float:
    """Decode speed of one sequence on an instance running ``n`` sequences, tokens/s."""

def assign_ranks(tokens: npt.NDArray[np.float64], work: npt.NDArray[np.float64], ranks: int, dispatch: str,
                 mini_batches: int = 1, max_tokens_per_gpu: float | None = None) -> list[npt.NDArray[np.int64]]:
    """Which sequences each data-parallel rank trains (the engine's ``TrainRanks`` dispatches)."""
def length_drift_scale(drift: dict[str, Any], versions: list[float]) -> list[float]:
    """The length scale of each policy version under a length drift dict (``LengthDrift.to_dict()``),
    without feedback (the engine's formula)."""

def py_random_stream(seed: int, n: int) -> npt.NDArray[np.float64]: ...
def py_lognormal_stream(seed: int, mu: float, sigma: float, n: int) -> npt.NDArray[np.float64]: ...

#: The fields ``sync_estimate_many`` can sweep.
SYNC_SWEEPABLE: list[str]

def sync_estimate(config: dict[str, Any]) -> dict[str, Any]:
    """One weight-update estimate from a ``rollsim.sync`` config dict: seconds and bytes per term."""

def sync_estimate_many(config: dict[str, Any], overrides: dict[str, npt.NDArray[np.float64]]) -> dict[str, npt.NDArray[np.float64]]:
    """Vectorized estimate: float64 arrays of one common length per overridden field; one array per term."""

def sync_plan(config: dict[str, Any], record_transfers: bool = True, max_transfers: int = 5_000_000) -> dict[str, Any]:
    """The re-sharding plan: ``{"transfers", "links", "n_transfers", "total_bytes", "local_bytes"}``."""
