"""The Ray backend: chunks of runs as Ray tasks (one CPU each), results streamed back as they finish."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from rollsim.sweep._plan import Plan
from rollsim.sweep._progress import Progress

__all__ = ["run_ray", "chunk_task"]

#: At most this many tasks per cluster CPU are queued at once (bounds the driver's memory).
INFLIGHT_PER_CPU = 2
#: Default chunk size: about this many tasks per CPU over the whole sweep, within [64, 4096] runs.
TASKS_PER_CPU = 3


def chunk_task(base_dicts: list[dict[str, Any]], items: list[tuple[int, int]], max_samples: int) -> list[Any]:
    """Runs one chunk on a Ray worker: ``items`` are (scenario index into ``base_dicts``, seed).
    Returns per run the summary dict or the error as text (``"ScenarioError: ..."``)."""
    from rollsim import _rollsim

    dicts = []
    for c, s in items:
        d = dict(base_dicts[c])
        d["seed"] = s
        dicts.append(d)
    out = _rollsim.simulate_many(dicts, 1, max_samples, None)
    return [r if isinstance(r, dict) else f"{type(r).__name__}: {r}" for r in out]


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend='ray' needs Ray: pip install 'rollsim[ray]'") from e
    return ray


def _connect(ray: Any, address: str | None) -> bool:
    """Makes sure Ray is initialised; returns True if this call started a local Ray (to stop it)."""
    if ray.is_initialized():
        return False
    if address is not None:
        ray.init(address=address)
        return False
    try:
        ray.init(address="auto")
        return False
    except ConnectionError:
        ray.init(include_dashboard=False)
        return True


def run_ray(
    plan: Plan,
    todo: list[int],
    max_samples: int,
    chunk_size: int | None,
    progress: Progress,
    sink: Callable[[list[int], list[Any]], None],
    address: str | None,
) -> int:
    ray = _import_ray()
    started = _connect(ray, address)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        if chunk_size is None:
            chunk_size = max(64, min(4096, math.ceil(len(todo) / (TASKS_PER_CPU * cpus))))
        remote = ray.remote(num_cpus=1, max_retries=3)(chunk_task)
        base_ref = ray.put(plan.dicts)
        chunks = [todo[i : i + chunk_size] for i in range(0, len(todo), chunk_size)]
        pending: dict[Any, list[int]] = {}
        nxt = 0
        done = progress.done
        try:
            while nxt < len(chunks) or pending:
                while nxt < len(chunks) and len(pending) < INFLIGHT_PER_CPU * cpus:
                    idx = chunks[nxt]
                    items = [(int(plan.combo[r]), int(plan.seed[r])) for r in idx]
                    pending[remote.remote(base_ref, items, max_samples)] = idx
                    nxt += 1
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    idx = pending.pop(ref)
                    sink(idx, ray.get(ref))
                    done += len(idx)
                    progress.update(done)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
        return len(chunks)
    finally:
        if started:
            ray.shutdown()
