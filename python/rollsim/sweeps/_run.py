"""``rollsim.sweep``: many runs (scenarios x seeds) in summary mode, streamed to parquet, resumable."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from rollsim import _rollsim
from rollsim.errors import invalid
from rollsim.scenario import Scenario
from rollsim.simulation import DEFAULT_MAX_SAMPLES, runaway_error
from rollsim.sweeps._plan import Block, Plan, chunk_digest, make_plan
from rollsim.sweeps._progress import Progress
from rollsim.sweeps._store import Store, chunk_name

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
    "preemptions": pl.Int64(), "kv_wait_s": pl.Float64(),
    "events": pl.Int64(), "ready_queue_growth_per_step": pl.Float64(),
    "generation_outruns_training": pl.Boolean(), "stalled": pl.Boolean(), "throughput_ratio": pl.Float64(),
}
_METRICS = list(SUMMARY_SCHEMA)

#: Local backend, automatic chunk size: aim for chunks of about this many seconds of work.
LOCAL_CHUNK_SECONDS = 4.0
#: Cap on runs per chunk (bounds memory: about 3 KB of Python objects per run in flight).
MAX_CHUNK = 4096
#: Cap when streaming without collecting: keeps peak memory flat in the number of runs (the engine
#: returns a dict per run; 4,096-run chunks let RSS creep up to about 50k runs, 1,024 do not).
STREAM_MAX_CHUNK = 1024
#: Cap on the bytes of empirical length arrays that one chunk hands to the engine (each run's
#: scenario is converted, and its arrays copied, separately).
CHUNK_ARRAY_BYTES = 64 << 20
#: Runs of the plan looked up at once in files that are not chunks of this plan (bounds memory).
FOREIGN_WINDOW = 8192


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
    def __init__(self, fixed: int | None, threads: int, array_bytes: int, cap: int = MAX_CHUNK):
        self.fixed = fixed
        self.cores = threads if threads > 0 else (os.cpu_count() or 1)
        self.rate: float | None = None  # runs per second
        self.cap = cap
        if array_bytes > 0:
            self.cap = max(1, min(self.cap, CHUNK_ARRAY_BYTES // array_bytes))

    def next(self) -> int:
        if self.fixed is not None:
            return self.fixed
        if self.rate is None:
            return max(1, min(self.cap, 256 * self.cores))
        return max(1, min(self.cap, int(self.rate * LOCAL_CHUNK_SECONDS)))

    def observe(self, n: int, seconds: float) -> None:
        if seconds > 0 and n > 0:
            self.rate = n / seconds


def _check_int(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not lo <= int(value) <= hi:
        raise invalid(name, f"must be an integer in [{lo}, {hi}], got {value!r}")
    return int(value)


def _align(df: pl.DataFrame) -> pl.DataFrame:
    """``run_key``, every metric of :data:`SUMMARY_SCHEMA` and ``error`` of a frame read from a file
    (a column missing there, e.g. written by an older rollsim, is null)."""
    cols = [pl.col("run_key").cast(pl.String)]
    for m, dt in SUMMARY_SCHEMA.items():
        cols.append(pl.col(m).cast(dt) if m in df.columns else pl.lit(None, dtype=dt).alias(m))
    cols.append(pl.col("error").cast(pl.String) if "error" in df.columns else pl.lit(None, dtype=pl.String).alias("error"))
    return df.select(cols)


@dataclass
class _Claim:
    """Runs ``[start, end)`` already in the file ``path`` (a chunk file of this plan)."""

    start: int
    end: int
    path: Path


@dataclass
class _Job:
    """A chunk to finish: ``todo`` positions to compute; ``found`` results already in other files;
    ``refused`` positions of runaway scenarios (``on_error="record"``) with their messages."""

    block: Block
    found: pl.DataFrame | None
    todo: list[int]
    refused: list[tuple[int, str]]


class _Foreign:
    """Looks up finished runs in files that are not chunk files of this plan (another chunking, a
    changed grid, or an older rollsim), a window of plan runs at a time: memory O(window), not O(runs)."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.lo = self.hi = 0
        self.found: pl.DataFrame | None = None

    def find(self, plan: Plan, block: Block, limit: int) -> pl.DataFrame | None:
        if not (self.lo <= block.start and block.end <= self.hi):
            self.lo, self.hi = block.start, min(limit, max(block.end, block.start + FOREIGN_WINDOW))
            wanted = pl.Series("run_key", list(plan.iter_keys(self.lo, self.hi)), dtype=pl.String)
            frames = []
            for p in self.paths:
                keys = pl.read_parquet(p, columns=["run_key"])["run_key"]
                mask = keys.is_in(wanted.implode())
                if mask.any():
                    frames.append(_align(pl.read_parquet(p).filter(mask)))
            self.found = (pl.concat(frames).unique(subset="run_key", keep="first", maintain_order=True)
                          if frames else None)
        if self.found is None:
            return None
        hit = self.found.filter(pl.col("run_key").is_in(pl.Series(block.keys, dtype=pl.String).implode()))
        return hit if hit.height else None


class _Sweep:
    """The state of one sweep call: which runs are done, the chunks still to run, the results.

    Resume without a set of finished keys: a chunk file is named after the plan range it covers and
    a digest of that range's run keys (``part-<start>-<end>-<digest>.parquet``, see the store). A file
    whose digest matches this plan's keys over its range holds every run of the range: the range is
    skipped without reading it (a *claim*). Runs outside claims are cut into new chunks; files that
    are not claims of this plan are searched for them, a window at a time (:class:`_Foreign`)."""

    def __init__(self, plan: Plan, store: Store | None, collect: bool, refused: dict[int, str] | None = None):
        self.plan, self.store, self.collect = plan, store, collect
        self.refused = refused or {}
        self.lock = threading.Lock()
        self.rows: dict[int, pl.DataFrame] = {}
        self.ran = self.resumed = self.chunks = self.failed = 0
        self.first_failure: tuple[int, str] | None = None
        claims: list[_Claim] = []
        foreign: list[Path] = []
        if store is not None:
            chunk_files, foreign = store.chunk_files()
            for a, b, digest, path in chunk_files:
                if a < b <= len(plan) and plan.digest(a, b) == digest:
                    claims.append(_Claim(a, b, path))
                else:
                    foreign.append(path)
        claims.sort(key=lambda c: (c.start, -c.end))
        self.segments: list[_Claim | tuple[int, int]] = []
        pos = 0
        for c in claims:
            if c.start < pos:  # overlaps a claim already taken (e.g. two sweeps at once): search it
                foreign.append(c.path)
                continue
            if c.start > pos:
                self.segments.append((pos, c.start))
            self.segments.append(c)
            pos = c.end
        if pos < len(plan):
            self.segments.append((pos, len(plan)))
        self.claimed_runs = sum(c.end - c.start for c in self.segments if isinstance(c, _Claim))
        self.foreign = _Foreign(sorted(foreign)) if foreign else None

    def items(self, next_size: Callable[[], int]) -> Iterator[_Claim | _Job]:
        """Claims and jobs in plan order; a job's chunk size is asked for just before it is built."""
        for seg in self.segments:
            if isinstance(seg, _Claim):
                yield seg
                continue
            pos, end = seg
            while pos < end:
                stop = min(end, pos + next_size())
                block = self.plan.block(pos, stop)
                found = self.foreign.find(self.plan, block, end) if self.foreign is not None else None
                if found is None:
                    todo = list(block.first)
                else:
                    have = set(found["run_key"].to_list())
                    todo = [p for p in block.first if block.keys[p] not in have]
                refused: list[tuple[int, str]] = []
                if self.refused:
                    msgs = [self.refused.get(self.plan.scenario_index(block.start + p)) for p in todo]
                    refused = [(p, f"ScenarioError: {m}") for p, m in zip(todo, msgs) if m is not None]
                    todo = [p for p, m in zip(todo, msgs) if m is None]
                yield _Job(block, found, todo, refused)
                del block, found, todo
                pos = stop

    def _failures(self, start: int, uniq: pl.DataFrame) -> int:
        bad = uniq.filter(pl.col("error").is_not_null())
        if bad.height and (self.first_failure is None or start < self.first_failure[0]):
            row = bad.row(0, named=True)
            where = ", ".join(f"{k}={row.get(k)!r}" for k in (*self.plan.varied, "seed"))
            self.first_failure = (start, f"{where}: {row['error']}")
        return bad.height

    def claim(self, c: _Claim) -> None:
        """A range already done: counted, and read only for the returned frame (or its errors)."""
        if self.collect:
            block = self.plan.block(c.start, c.end)
            res = _align(pl.read_parquet(c.path))
            rows = block.frame.join(res, on="run_key", how="left", maintain_order="left")
            self._check(rows)
            with self.lock:
                self.resumed += res.height
                self.rows[c.start] = rows
            return
        n, errors = pl.scan_parquet(c.path).select(pl.len(), pl.col("error").is_not_null().sum()).collect().row(0)
        with self.lock:
            self.resumed += n
            if errors:
                self.failed += self._failures(c.start, pl.read_parquet(c.path).filter(pl.col("error").is_not_null()))

    @staticmethod
    def _check(rows: pl.DataFrame) -> None:
        missing = rows.filter(pl.col("error").is_null() & pl.col("steps").is_null()).height
        if missing > 0:  # should not happen: every run was either resumed or run now
            raise RuntimeError(f"sweep: {missing} runs have no result (please report)")

    def finish(self, job: _Job, results: list[Any] | None) -> None:
        """Writes a finished chunk (on the writer thread locally, on the driver for Ray)."""
        block = job.block
        parts = [] if job.found is None else [job.found]
        if job.todo:
            assert results is not None
            parts.append(results_frame([block.keys[p] for p in job.todo], results))
        if job.refused:
            parts.append(results_frame([block.keys[p] for p, _ in job.refused], [m for _, m in job.refused]))
        res = pl.concat(parts, how="diagonal_relaxed") if len(parts) > 1 else parts[0]
        rows = block.frame.join(res, on="run_key", how="left", maintain_order="left")
        self._check(rows)
        uniq = rows[block.first] if len(block.first) < len(block) else rows
        if job.todo and self.store is not None:
            metric_cols = [c for c in res.columns if c != "run_key"]
            part = uniq.select(*self.plan.varied, "seed", *metric_cols, "scenario_key", "run_key")
            digest = block.digest()
            if job.refused:
                # refused runs are not stored, so that a rerun with a higher max_samples runs them:
                # the file does not cover its range and is named so that resume searches it
                skip = {block.keys[p] for p, _ in job.refused}
                part = part.filter(~pl.col("run_key").is_in(list(skip)))
                digest = chunk_digest(part["run_key"].to_list())
            self.store.write(part, chunk_name(block.start, block.end, digest))
        with self.lock:
            self.ran += len(job.todo)
            self.resumed += len(block.first) - len(job.todo)
            self.chunks += 1 if job.todo else 0
            self.failed += self._failures(block.start, uniq)
            if self.collect:
                self.rows[block.start] = rows

    def frame(self) -> pl.DataFrame:
        return pl.concat([self.rows[k] for k in sorted(self.rows)], how="diagonal_relaxed")


def _run_local(
    sw: _Sweep,
    threads: int,
    max_samples: int,
    chunk_size: int | None,
    progress: Progress,
) -> None:
    """Runs the chunks with ``simulate_many``; a writer thread writes each finished chunk while the
    next one runs. At most one chunk runs and one is being written at any time."""
    sizer = _ChunkSizer(chunk_size, threads, sw.plan.array_bytes, MAX_CHUNK if sw.collect else STREAM_MAX_CHUNK)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollsim-sweep-writer")
    pending: Future[None] | None = None
    hook_error: list[BaseException] = []
    done = progress.done
    try:
        for item in sw.items(sizer.next):
            if isinstance(item, _Claim):
                sw.claim(item)
                continue
            block, todo = item.block, item.todo
            n_todo = len(todo)
            offset = done + len(block) - len(todo)
            if offset > progress.done:
                progress.update(offset)
            res = None
            if todo:
                dicts = block.engine_dicts(todo)

                def cb(n: int, total: int, offset: int = offset) -> None:
                    if hook_error:
                        return
                    try:
                        progress.update(offset + n)
                    except BaseException as e:  # re-raised after this chunk is safely written
                        hook_error.append(e)

                t0 = time.perf_counter()
                res = _rollsim.simulate_many(dicts, threads, max_samples, cb)
                sizer.observe(len(todo), time.perf_counter() - t0)
                del dicts
            if pending is not None:
                pending.result()
            pending = writer.submit(sw.finish, item, res)
            del res, item, block, todo  # the writer holds the only references: freed once written
            if hook_error:
                pending.result()
                raise hook_error[0]
            done = offset + n_todo
            if done > progress.done:
                progress.update(done)
        if pending is not None:
            pending.result()
    finally:
        writer.shutdown(wait=True)  # an interrupted sweep still writes every finished chunk


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
    collect: bool = True,
) -> tuple[pl.DataFrame | pl.LazyFrame, SweepInfo]:
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
    if not isinstance(collect, (bool, np.bool_)):
        raise invalid("collect", f"must be True or False, got {collect!r}")
    if not collect and out is None:
        raise invalid("collect", "collect=False needs out=DIR (the results are only kept there)")

    plan = make_plan(base, grid, seeds)
    store = Store(out) if out is not None else None
    # runaway scenarios are refused before anything runs (an estimate; the engine also enforces it)
    refused: dict[int, str] = {}
    for c, sc in plan.source.scan():
        msg = runaway_error(sc, max_samples, "summary")
        if msg is not None:
            vals = dict(zip(plan.varied, plan.source.values(c, sc)))
            where = ", ".join(f"{k}={v!r}" for k, v in vals.items()) or "the base scenario"
            refused[c] = f"{msg} (sweep scenario {where})"
    if refused and on_error == "raise":
        from rollsim.errors import ScenarioError

        raise ScenarioError(next(iter(refused.values())) + "; nothing was run (on_error='record' runs the others)")
    sw = _Sweep(plan, store, bool(collect), refused)
    bar = Progress(len(plan), sw.claimed_runs, progress)
    try:
        if backend == "local":
            _run_local(sw, threads, max_samples, chunk_size, bar)
        else:
            from rollsim.sweeps._ray import run_ray

            run_ray(sw, max_samples, chunk_size, bar, ray_address)
    finally:
        bar.close()

    keep = _METRICS if metrics is None else metrics
    wanted = [*plan.varied, "seed", *keep, "error", "scenario_key", "run_key"]
    result: pl.DataFrame | pl.LazyFrame
    if collect:
        frame = sw.frame().select(wanted)
        failed = int(frame["error"].is_not_null().sum())
        first = None
        if failed:
            row = frame.filter(pl.col("error").is_not_null()).row(0, named=True)
            first = ", ".join(f"{k}={row[k]!r}" for k in (*plan.varied, "seed")) + f": {row['error']}"
        result = frame
    else:
        assert store is not None
        lf = store.scan()
        have = set(lf.collect_schema().names())
        result = lf.select([c for c in wanted if c in have])
        failed = sw.failed
        first = None if sw.first_failure is None else sw.first_failure[1]
    if failed and on_error == "raise":
        raise invalid("sweep", f"{failed} of {len(plan)} runs failed; first: {first}"
                               + (f" (results so far are in {os.fspath(out)!r})" if out is not None else "")
                               + "; pass on_error='record' to get them as rows with an error")
    info = SweepInfo(len(plan), sw.resumed, sw.ran, sw.chunks, failed, time.perf_counter() - t_start)
    return result, info


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
    collect: bool = True,
) -> pl.DataFrame | pl.LazyFrame:
    """Runs every scenario of a grid with every seed, in summary mode, across cores or a Ray cluster.

    Parameters
    ----------
    base : Scenario, optional
        The scenario the grid varies; ``Scenario()`` (the chapter's) by default.
    grid : dict | list, optional
        What to vary. A dict ``{field: [values, ...]}`` (dotted names reach into parts, e.g.
        ``"pipeline.max_staleness"``, ``"lengths.sigma"``; values may also be whole parts, e.g.
        ``"pipeline": [Synchronous(), FullyAsync(2)]``) gives the Cartesian product, the last field
        varying fastest. A list of dicts of changes (e.g. from :mod:`rollsim.sweeps.space`) gives one
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
        about 4 s of work (at most 4096 runs); Ray, about three tasks per CPU of the cluster. At most
        two chunks are in memory at once locally (one running, one being written); resuming works
        whatever the chunk size or thread count of the interrupted call.
    progress : bool | callable
        True: a progress bar with ETA on stderr (rich if installed, else a plain line). A callable
        ``f(done, total)`` is called instead (``done`` counts resumed runs); if it raises, the sweep
        stops after writing the chunk in progress and the exception propagates.
    max_samples : int
        Per-run memory guard (samples started), in [1, 2**32 - 1]. A scenario whose estimate
        (:func:`rollsim.simulation.estimate_size`) exceeds it is refused before anything runs
        (``on_error="raise"``), or returned as rows with the error, neither run nor written to ``out``
        (``on_error="record"``); the engine also enforces it exactly during each run.
    on_error : "raise" | "record"
        A run the engine rejects (e.g. more than ``max_samples`` samples): ``"raise"`` raises after
        the sweep (finished runs are kept in ``out``); ``"record"`` returns it as a row with null
        metrics and the message in ``error``.
    ray_address : str, optional
        Address of the Ray cluster for ``backend="ray"`` when Ray is not initialised yet.
    collect : bool
        True (default): build and return the frame of the whole sweep (memory grows with the number
        of runs, about 0.25 KB each). False (needs ``out``): build nothing per run; return a
        ``polars.LazyFrame`` over the dataset in ``out`` (:func:`rollsim.sweeps.scan_sweep`), so peak
        memory does not depend on the number of runs. The plan itself is always generated chunk by
        chunk.

    Returns
    -------
    polars.DataFrame | polars.LazyFrame
        With ``collect=False``: ``scan_sweep(out)`` restricted to the columns below (every run in
        ``out``, one row per ``run_key``: for a directory used by one sweep, exactly its runs; the
        varied columns as stored by the sweep that ran each run). Otherwise a frame with
        one row per (scenario, seed), in plan order (scenario by scenario, seeds in the order
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
    >>> from rollsim.sweeps import sweep
    >>> df = sweep(Scenario(horizon_s=600.0), {"pipeline.max_staleness": [0, 2]}, seeds=2, progress=False)
    >>> df.select("pipeline.max_staleness", "seed", "steps").rows()
    [(0, 0, 1), (0, 1, 1), (2, 0, 2), (2, 1, 2)]
    """
    frame, _ = sweep_with_info(
        base, grid, seeds=seeds, metrics=metrics, out=out, backend=backend, threads=threads,
        chunk_size=chunk_size, progress=progress, max_samples=max_samples, on_error=on_error,
        ray_address=ray_address, collect=collect,
    )
    return frame


