"""The Ray backend: chunks of runs as Ray tasks (one CPU each), results streamed back as they finish."""

from __future__ import annotations

import math
import socket
from typing import Any

from rollsim.errors import invalid
from rollsim.sweeps._plan import Claim
from rollsim.sweeps._progress import Progress

__all__ = ["run_ray", "chunk_task", "check_address"]

#: Seconds to wait for a TCP connection to ``ray_address`` before refusing it.
CONNECT_TIMEOUT_S = 5.0

#: At most this many tasks per cluster CPU are queued at once (bounds the driver's memory).
INFLIGHT_PER_CPU = 2
#: Default chunk size: about this many tasks per CPU over the whole sweep, within [64, 4096] runs.
TASKS_PER_CPU = 3
#: Placeholder for an array shipped once through the object store (a task argument).
_ARRAY = "__rollsim_array__"
#: Arrays kept in the object store for the whole sweep (the distinct empirical length arrays).
_MAX_SHIPPED = 256


def _resolve(d: dict[str, Any], arrays: tuple[Any, ...]) -> dict[str, Any]:
    lengths = d.get("lengths")
    if not isinstance(lengths, dict) or not any(isinstance(v, tuple) and v[:1] == (_ARRAY,) for v in lengths.values()):
        return d
    d = dict(d)
    d["lengths"] = {k: arrays[v[1]] if isinstance(v, tuple) and v[:1] == (_ARRAY,) else v for k, v in lengths.items()}
    return d


def chunk_task(base_dicts: list[dict[str, Any]], index: Any, seeds: Any, max_samples: int,
               *arrays: Any) -> dict[str, Any]:
    """Runs one chunk on a Ray worker: run ``i`` is scenario ``index[i]`` of ``base_dicts`` with seed
    ``seeds[i]``; ``arrays`` the empirical length arrays the dicts refer to by
    ``("__rollsim_array__", i)``. Returns ``simulate_many``'s columns (numpy arrays, ``status`` and
    ``error``)."""
    from rollsim import _rollsim

    bases = [_resolve(d, arrays) for d in base_dicts]
    return _rollsim.simulate_many(bases, index, seeds, 1, max_samples, None)


class _Shipper:
    """Puts each distinct read-only array (Empirical lengths) in the object store once; a task gets
    the refs as arguments (resolved by Ray, zero-copy) and the dicts point at them by index."""

    def __init__(self, ray: Any):
        self.ray = ray
        self.refs: dict[int, tuple[Any, Any]] = {}

    def ship(self, dicts: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[Any]]:
        args: list[Any] = []
        index: dict[int, int] = {}
        out = []
        for d in dicts:
            lengths = d.get("lengths")
            arrays = {k: v for k, v in lengths.items() if hasattr(v, "nbytes")} if isinstance(lengths, dict) else {}
            if not arrays:
                out.append(d)
                continue
            assert isinstance(lengths, dict)
            new = dict(lengths)
            for k, a in arrays.items():
                j = index.get(id(a))
                if j is None:
                    hit = self.refs.get(id(a))
                    if hit is not None and hit[0] is a:
                        ref = hit[1]
                    else:
                        ref = self.ray.put(a)
                        if not a.flags.writeable and len(self.refs) < _MAX_SHIPPED:  # cannot change: reuse
                            self.refs[id(a)] = (a, ref)
                    j = index[id(a)] = len(args)
                    args.append(ref)
                new[k] = (_ARRAY, j)
            d = dict(d)
            d["lengths"] = new
            out.append(d)
        return out, args


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend='ray' needs Ray: pip install 'rollsim[ray]'") from e
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of a Ray address ``host:port`` or ``ray://host:port`` (IPv6 in brackets);
    None for the names Ray resolves itself (``auto``, ``local``) and forms it parses otherwise."""
    rest = address.strip()
    if rest.startswith("ray://"):
        rest = rest[len("ray://"):]
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536 or "/" in host:
        return None
    return host.strip("[]"), int(port)


def check_address(address: str | None, timeout: float | None = None) -> None:
    """Before a Ray sweep starts: Ray is importable and, unless Ray is already initialised in this
    process, something accepts TCP connections at ``address`` within ``timeout`` seconds
    (:data:`CONNECT_TIMEOUT_S`; ``ray.init`` itself retries for minutes on an address where nothing
    listens). Raises ImportError, or ScenarioError naming the address."""
    ray = _import_ray()
    if address is None or ray.is_initialized():
        return
    hp = _host_port(address)
    if hp is None:
        return
    t = CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        socket.create_connection(hp, timeout=t).close()
    except OSError as e:
        why = "timed out" if isinstance(e, TimeoutError) else (e.strerror or str(e))
        raise invalid("ray_address", f"cannot reach a Ray cluster at {address!r}: TCP connection to {hp[0]}:{hp[1]} "
                                     f"failed within {t:g} s ({why}); start one there (ray start --head) or give "
                                     "the address that `ray status` prints") from None


def _connect(ray: Any, address: str | None) -> bool:
    """Makes sure Ray is initialised; returns True if this call started a local Ray (to stop it)."""
    if ray.is_initialized():
        return False
    if address is not None:
        check_address(address)
        ray.init(address=address)
        return False
    try:
        ray.init(address="auto")
        return False
    except ConnectionError:
        ray.init(include_dashboard=False)
        return True


def run_ray(sw: Any, max_samples: int, chunk_size: int | None, progress: Progress, address: str | None) -> None:
    """Runs the chunks of ``sw`` (a ``_Sweep``) as Ray tasks; the driver writes each finished chunk.
    At most ``INFLIGHT_PER_CPU`` tasks per CPU are in flight, so the driver's memory is bounded by
    the cluster's size, not the sweep's."""

    ray = _import_ray()
    started = _connect(ray, address)
    try:
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        todo_runs = len(sw.plan) - sw.claimed_runs
        size = chunk_size if chunk_size is not None else max(
            64, min(4096, math.ceil(todo_runs / (TASKS_PER_CPU * cpus))))
        remote = ray.remote(num_cpus=1, max_retries=3)(chunk_task)
        shipper = _Shipper(ray)
        items = sw.items(lambda: size)
        pending: dict[Any, Any] = {}
        done = progress.done
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < INFLIGHT_PER_CPU * cpus:
                    item = next(items, None)
                    if item is None:
                        exhausted = True
                    elif isinstance(item, Claim):
                        sw.claim(item)
                    elif not item.todo:  # every run already in another file
                        sw.finish(item, None)
                        done += len(item.block)
                        progress.update(done)
                    else:
                        dicts, arrays = shipper.ship(item.block.dicts)
                        index, seeds = item.block.runs(item.todo)
                        ref = remote.remote(dicts, index, seeds, max_samples, *arrays)
                        pending[ref] = item
                    item = None
                if not pending:
                    break
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    job = pending.pop(ref)
                    sw.finish(job, ray.get(ref))
                    done += len(job.block)
                    progress.update(done)
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started:
            ray.shutdown()
