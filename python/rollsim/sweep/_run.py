"""``rollsim.sweep``: many runs (scenarios x seeds) in summary mode, streamed to parquet, resumable."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from rollsim import _rollsim
from rollsim.errors import invalid
from rollsim.scenario import Scenario
from rollsim.simulate import DEFAULT_MAX_SAMPLES, runaway_error
from rollsim.sweep._plan import Plan, make_plan
from rollsim.sweep._progress import Progress
from rollsim.sweep._store import Store

__all__ = ["sweep", "SUMMARY_SCHEMA", "SweepInfo"]

#: The summary metrics of a run (``Result.summary``) and their column dtypes in sweep frames.
SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "steps": pl.Int64(), "steps_started": pl.Int64(), "end_s": pl.Float64(),
    "rollout_utilization": pl.Float64(), "slot_busy_s": pl.Float64(), "slot_idle_s": pl.Float64(),
    "trainer_busy_s": pl.Float64(), "trainer_idle_s": pl.Float64(),
    "samples_started": pl.Int64(), "samples_finished": pl.Int64(), "samples_trained": pl.Int64(),
    "samples_dropped": pl.Int64(), "samples_aborted": pl.Int64(), "groups_requeued": pl.Int64(),
    "samples_ready": pl.Int64(), "samples_in_flight": pl.Int64(),
    "drop_fraction": pl.Float64(), "staleness_mean": pl.Float64(), "staleness_max": pl.Int64(),
    "staleness_at_finish_mean": pl.Float64(), "staleness_group_mean": pl.Float64(),
    "staleness_mean_short": pl.Float64(), "staleness_mean_long": pl.Float64(),
    "samples_trained_short": pl.Int64(), "samples_trained_long": pl.Int64(),
    "tokens_generated": pl.Float64(), "tokens_trained": pl.Float64(), "tokens_wasted": pl.Float64(),
    "tokens_pending": pl.Float64(), "tokens_prefilled": pl.Float64(), "tokens_recomputed": pl.Float64(),
    "events": pl.Int64(), "ready_queue_growth_per_step": pl.Float64(),
    "generation_outruns_training": pl.Boolean(), "stalled": pl.Boolean(), "throughput_ratio": pl.Float64(),
}
_METRICS = list(SUMMARY_SCHEMA)

#: Local backend, automatic chunk size: aim for chunks of about this many seconds of work.
LOCAL_CHUNK_SECONDS = 4.0
#: Cap on runs per chunk (bounds memory: about 3 KB of Python objects per run in flight).
MAX_CHUNK = 4096
#: Cap on the bytes of empirical length arrays that one chunk hands to the engine (each run's
#: scenario is converted, and its arrays copied, separately).
CHUNK_ARRAY_BYTES = 64 << 20


@dataclass(frozen=True)
class SweepInfo:
    """What a sweep call did: ``runs`` in the plan, ``resumed`` (already in ``out``), ``ran`` (run
    now), ``chunks`` written or returned, ``failed`` runs (with an ``error``), ``seconds`` wall time."""

    runs: int
    resumed: int
    ran: int
    chunks: int
    failed: int
    seconds: float


def _error_text(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def results_frame(keys: list[str], results: Sequence[Any]) -> pl.DataFrame:
    """``run_key``, every metric and ``error`` from a list of summary dicts / exceptions / error texts."""
    ok = [r if isinstance(r, dict) else None for r in results]
    cols: dict[str, pl.Series] = {"run_key": pl.Series("run_key", keys, dtype=pl.String)}
    for m, dt in SUMMARY_SCHEMA.items():
        cols[m] = pl.Series(m, [None if r is None else r.get(m) for r in ok], dtype=dt, strict=False)
    extra = sorted({k for r in ok if r is not None for k in r} - set(SUMMARY_SCHEMA))
    for m in extra:  # metrics added to the engine after this module was written
        cols[m] = pl.Series(m, [None if r is None else r.get(m) for r in ok], strict=False)
    errors = [None if isinstance(r, dict) else (r if isinstance(r, str) else _error_text(r)) for r in results]
    cols["error"] = pl.Series("error", errors, dtype=pl.String)
    return pl.DataFrame(list(cols.values()))


class _ChunkSizer:
    def __init__(self, fixed: int | None, threads: int, array_bytes: int):
        self.fixed = fixed
        self.cores = threads if threads > 0 else (os.cpu_count() or 1)
        self.rate: float | None = None  # runs per second
        self.cap = MAX_CHUNK
        if array_bytes > 0:
            self.cap = max(1, min(self.cap, CHUNK_ARRAY_BYTES // array_bytes))

    def next(self) -> int:
        if self.fixed is not None:
            return self.fixed
        if self.rate is None:
            return max(1, min(self.cap, 256 * self.cores))
        return max(1, min(self.cap, int(self.rate * LOCAL_CHUNK_SECONDS)))

    def observe(self, n: int, seconds: float) -> None:
        if seconds > 0:
            self.rate = n / seconds


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise invalid(name, f"must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _run_local(
    plan: Plan,
    todo: list[int],
    threads: int,
    max_samples: int,
    chunk_size: int | None,
    progress: Progress,
    sink: Callable[[list[int], list[Any]], None],
) -> int:
    """Runs ``todo`` in chunks with ``simulate_many``; hands each finished chunk to ``sink`` on a
    writer thread (so writing overlaps the next chunk). Returns the number of chunks."""
    array_bytes = max(
        (sum(v.nbytes for v in (d["lengths"].get("values"), d["lengths"].get("weights")) if v is not None)
         for d in plan.dicts), default=0)
    sizer = _ChunkSizer(chunk_size, threads, array_bytes)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollsim-sweep-writer")
    pending: Future[None] | None = None
    hook_error: list[BaseException] = []
    pos = chunks = 0
    try:
        while pos < len(todo):
            idx = todo[pos : pos + sizer.next()]
            dicts = [plan.engine_dict(r) for r in idx]
            offset = progress.done

            def cb(done: int, total: int, offset: int = offset) -> None:
                if hook_error:
                    return
                try:
                    progress.update(offset + done)
                except BaseException as e:  # re-raised after this chunk is safely written
                    hook_error.append(e)

            t0 = time.perf_counter()
            res = _rollsim.simulate_many(dicts, threads, max_samples, cb)
            sizer.observe(len(idx), time.perf_counter() - t0)
            del dicts
            if pending is not None:
                pending.result()
            pending = writer.submit(sink, idx, res)
            del res  # the writer holds the only reference: freed once written
            pos += len(idx)
            chunks += 1
            if hook_error:
                pending.result()
                raise hook_error[0]
        if pending is not None:
            pending.result()
    finally:
        writer.shutdown(wait=True)  # an interrupted sweep still writes every finished chunk
    return chunks


def sweep_with_info(
    base: Scenario | None = None,
    grid: Any = None,
    *,
    seeds: Any = None,
    metrics: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    backend: Literal["local", "ray"] = "local",
    threads: int = 0,
    chunk_size: int | None = None,
    progress: bool | Callable[[int, int], Any] = True,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    on_error: Literal["raise", "record"] = "raise",
    ray_address: str | None = None,
) -> tuple[pl.DataFrame, SweepInfo]:
    """:func:`sweep`, also returning a :class:`SweepInfo` (used by the CLI)."""
    t_start = time.perf_counter()
    if metrics is not None:
        if isinstance(metrics, str):
            metrics = [metrics]
        metrics = list(metrics)
        unknown = [m for m in metrics if m not in SUMMARY_SCHEMA]
        if unknown:
            raise invalid("metrics", f"unknown metric(s) {unknown}; choose from {_METRICS}")
    if backend not in ("local", "ray"):
        raise invalid("backend", f"must be 'local' or 'ray', got {backend!r}")
    threads = _check_int("threads", threads, 0, 4096)
    if chunk_size is not None:
        chunk_size = _check_int("chunk_size", chunk_size, 1, 10_000_000)
    max_samples = _check_int("max_samples", max_samples, 1, 2**32 - 1)
    if on_error not in ("raise", "record"):
        raise invalid("on_error", f"must be 'raise' or 'record', got {on_error!r}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise invalid("progress", f"must be True, False or a callable f(done, total), got {progress!r}")

    plan = make_plan(base, grid, seeds)
    store = Store(out) if out is not None else None
    done_keys = store.finished_keys() if store is not None else set()
    todo: list[int] = []
    seen: set[str] = set()
    for r, k in enumerate(plan.run_keys):
        if k in done_keys or k in seen:
            continue
        seen.add(k)
        todo.append(r)
    unique_runs = len(set(plan.run_keys))
    resumed = unique_runs - len(todo)

    in_memory: list[pl.DataFrame] = []
    failed_now: list[str] = []

    def sink(idx: list[int], results: list[Any]) -> None:
        res = results_frame([plan.run_keys[r] for r in idx], results)
        if store is not None:
            part = plan.runs[idx].hstack(res.drop("run_key"))
            store.write(part.select(*plan.varied, "seed", *res.columns[1:], "scenario_key", "run_key"))
        else:
            in_memory.append(res)
        bad = res.filter(pl.col("error").is_not_null())
        if bad.height:
            failed_now.append(f"run {bad['run_key'][0]}: {bad['error'][0]} ({bad.height} failed in this chunk)")

    # runaway scenarios are refused before anything runs (an estimate; the engine also enforces it)
    refused: dict[int, str] = {}
    skipped: list[int] = []
    refused_frame: pl.DataFrame | None = None
    for c in sorted({int(plan.combo[r]) for r in todo}):
        msg = runaway_error(plan.scenarios[c], max_samples, "summary")
        if msg is not None:
            first = plan.runs.row(int(np.flatnonzero(plan.combo == c)[0]), named=True)
            where = ", ".join(f"{k}={first[k]!r}" for k in plan.varied) or "the base scenario"
            refused[c] = f"{msg} (sweep scenario {where})"
    if refused and on_error == "raise":
        from rollsim.errors import ScenarioError

        raise ScenarioError(next(iter(refused.values())) + "; nothing was run (on_error='record' runs the others)")
    if refused:
        skipped = [r for r in todo if int(plan.combo[r]) in refused]
        todo = [r for r in todo if int(plan.combo[r]) not in refused]
        # in the returned frame only, not in `out`: a rerun with a higher max_samples runs them
        refused_frame = results_frame([plan.run_keys[r] for r in skipped],
                                      [f"ScenarioError: {refused[int(plan.combo[r])]}" for r in skipped])

    bar = Progress(unique_runs, resumed + len(skipped), progress)
    chunks = 0
    try:
        if todo:
            if backend == "local":
                chunks = _run_local(plan, todo, threads, max_samples, chunk_size, bar, sink)
            else:
                from rollsim.sweep._ray import run_ray

                chunks = run_ray(plan, todo, max_samples, chunk_size, bar, sink, ray_address)
    finally:
        bar.close()

    if store is not None:
        cols = ["run_key", *_METRICS, "error"]
        results = store.read(cols, plan.run_keys)
        if results.height == 0:
            results = results_frame([], [])
    else:
        results = pl.concat(in_memory, how="diagonal_relaxed") if in_memory else results_frame([], [])
    if refused_frame is not None:
        results = pl.concat([results, refused_frame], how="diagonal_relaxed")
    frame = plan.runs.join(results, on="run_key", how="left", maintain_order="left")
    keep = _METRICS if metrics is None else metrics
    missing = frame.filter(pl.col("error").is_null() & pl.col("steps").is_null()).height
    if missing > 0:  # should not happen: every run was either resumed or run now
        raise RuntimeError(f"sweep: {missing} runs have no result (please report)")
    frame = frame.select(*plan.varied, "seed", *keep, "error", "scenario_key", "run_key")
    failed = int(frame["error"].is_not_null().sum())
    if failed and on_error == "raise":
        first = frame.filter(pl.col("error").is_not_null()).row(0, named=True)
        where = ", ".join(f"{k}={first[k]!r}" for k in (*plan.varied, "seed"))
        raise invalid("sweep", f"{failed} of {len(plan)} runs failed; first: {where}: {first['error']}"
                               + (f" (results so far are in {os.fspath(out)!r})" if out is not None else "")
                               + "; pass on_error='record' to get them as rows with an error")
    info = SweepInfo(len(plan), resumed, len(todo), chunks, failed, time.perf_counter() - t_start)
    return frame, info


def sweep(
    base: Scenario | None = None,
    grid: Any = None,
    *,
    seeds: Any = None,
    metrics: Sequence[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    backend: Literal["local", "ray"] = "local",
    threads: int = 0,
    chunk_size: int | None = None,
    progress: bool | Callable[[int, int], Any] = True,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    on_error: Literal["raise", "record"] = "raise",
    ray_address: str | None = None,
) -> pl.DataFrame:
    """Runs every scenario of a grid with every seed, in summary mode, across cores or a Ray cluster.

    Parameters
    ----------
    base : Scenario, optional
        The scenario the grid varies; ``Scenario()`` (the chapter's) by default.
    grid : dict | list, optional
        What to vary. A dict ``{field: [values, ...]}`` (dotted names reach into parts, e.g.
        ``"pipeline.max_staleness"``, ``"lengths.sigma"``; values may also be whole parts, e.g.
        ``"pipeline": [Synchronous(), FullyAsync(2)]``) gives the Cartesian product, the last field
        varying fastest. A list of dicts of changes (e.g. from :mod:`rollsim.sweep.space`) gives one
        scenario per dict. A list of :class:`Scenario` runs those scenarios (``base`` is ignored).
        ``None``: ``base`` alone.
    seeds : int | iterable of int, optional
        A count ``n`` (seeds ``0..n-1``) or the seeds themselves, each in [0, 2**64 - 1]; every
        scenario runs once per seed. Default: ``base.seed`` (for a list of Scenarios: each one's own).
    metrics : list of str, optional
        Summary metrics to return as columns (see :data:`SUMMARY_SCHEMA`); all by default. The
        dataset in ``out`` always stores all of them.
    out : path, optional
        Directory of the parquet dataset (created if needed). Each chunk of finished runs is written
        atomically as it completes; runs already in ``out`` (same scenario dict and seed, by
        ``run_key``) are not run again, so re-running an interrupted sweep completes it. ``None``:
        results stay in memory.
    backend : "local" | "ray"
        ``"local"``: this machine's cores (rayon, the GIL released). ``"ray"``: chunks as Ray tasks on
        the running Ray (``ray.init`` already called), on ``ray_address``, on the cluster found by
        ``ray.init(address="auto")``, or else on a local Ray started (and stopped) for this call.
        Needs ``pip install rollsim[ray]``. Same rows, bit for bit, as ``"local"``.
    threads : int
        Local backend: worker threads, 0 = all cores; in [0, 4096]. Results do not depend on it.
    chunk_size : int, optional
        Runs per chunk (per parquet file, per Ray task), in [1, 10**7]. Default: local, chunks of
        about 4 s of work (at most 4096 runs); Ray, about three tasks per CPU of the cluster.
    progress : bool | callable
        True: a progress bar with ETA on stderr (rich if installed, else a plain line). A callable
        ``f(done, total)`` is called instead (``done`` counts resumed runs); if it raises, the sweep
        stops after writing the chunk in progress and the exception propagates.
    max_samples : int
        Per-run memory guard (samples started), in [1, 2**32 - 1]. A scenario whose estimate
        (:func:`rollsim.simulate.estimate_size`) exceeds it is refused before anything runs
        (``on_error="raise"``), or returned as rows with the error, neither run nor written to ``out``
        (``on_error="record"``); the engine also enforces it exactly during each run.
    on_error : "raise" | "record"
        A run the engine rejects (e.g. more than ``max_samples`` samples): ``"raise"`` raises after
        the sweep (finished runs are kept in ``out``); ``"record"`` returns it as a row with null
        metrics and the message in ``error``.
    ray_address : str, optional
        Address of the Ray cluster for ``backend="ray"`` when Ray is not initialised yet.

    Returns
    -------
    polars.DataFrame
        One row per (scenario, seed), in plan order (scenario by scenario, seeds in the order
        given), resumed runs included. Columns: the varied fields under their (dotted) names (the
        scenario's normalised value: Float64 for seconds and rates, Int64 for counts, String for
        whole parts such as ``"pipeline"``); ``seed`` (UInt64); the metrics (Int64 counts, Float64
        seconds/fractions/tokens, Boolean ``generation_outruns_training``; NaN where the summary
        has NaN, e.g. no long sample); ``error`` (String, null when the run succeeded);
        ``scenario_key`` (String, 32 hex digits, equal for all seeds of a scenario) and
        ``run_key`` (String, 32 hex digits: SHA-256 of the scenario's engine dict and seed,
        stable across processes, machines and versions of Python).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown field or invalid value in ``base``/``grid``/``seeds``/options (the message names
        it), an unusable ``out``, or (``on_error="raise"``) a run the engine rejected.
    ImportError
        ``backend="ray"`` without Ray installed.
    KeyboardInterrupt
        Ctrl-C: the runs in progress stop; every chunk already finished is in ``out``.

    Examples
    --------
    >>> from rollsim import Scenario
    >>> from rollsim.sweep import sweep
    >>> df = sweep(Scenario(horizon_s=600.0), {"pipeline.max_staleness": [0, 2]}, seeds=2, progress=False)
    >>> df.select("pipeline.max_staleness", "seed", "steps").rows()
    [(0, 0, 1), (0, 1, 1), (2, 0, 2), (2, 1, 2)]
    """
    frame, _ = sweep_with_info(
        base, grid, seeds=seeds, metrics=metrics, out=out, backend=backend, threads=threads,
        chunk_size=chunk_size, progress=progress, max_samples=max_samples, on_error=on_error,
        ray_address=ray_address,
    )
    return frame


