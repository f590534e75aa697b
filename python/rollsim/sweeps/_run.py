"""``rollsim.sweep``: many runs (scenarios x seeds) in summary mode, streamed to parquet, resumable."""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
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
from rollsim.sweeps._plan import Claim as _Claim
from rollsim.sweeps._progress import Progress
from rollsim.sweeps._store import Store, StoreWarning, chunk_name

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
#: The agentic summary values (``Scenario.agentic``; 0 for counts, NaN otherwise, when a scenario
#: is not agentic), after the others: ``_rollsim.SCHEMA["agentic_summary"]``.
SUMMARY_SCHEMA.update({c["name"]: pl.Int64() if c["dtype"] == "uint64" else pl.Float64()
                       for c in _rollsim.SCHEMA["agentic_summary"]})
#: The learning sums (trained tokens by staleness, drawn lengths; ``rollsim.learning.summary_learning``
#: derives clip fractions and the length gap from them), after those: ``_rollsim.SCHEMA["learning_summary"]``.
SUMMARY_SCHEMA.update({c["name"]: pl.Float64() for c in _rollsim.SCHEMA["learning_summary"]})
_METRICS = list(SUMMARY_SCHEMA)

#: Local backend, automatic chunks: each engine call (a *batch* of runs) aims at about this many
#: seconds of work, so that Ctrl-C loses at most about this much (the finished batches are written).
BATCH_SECONDS = 1.0
#: ... and the finished batches are written as one chunk file at least this often (seconds since the
#: chunk's first batch started), or when the chunk reaches its cap of runs, whichever comes first:
#: a killed process (``kill -9``, a crashed node) loses at most about this much work.
FLUSH_SECONDS = 5.0
#: Runs per thread in the first batch (the speed is not known yet); later batches grow at most
#: ``BATCH_GROWTH``-fold from one to the next.
FIRST_BATCH_PER_THREAD = 2
BATCH_GROWTH = 8
#: Cap on runs per chunk (bounds memory of the rows in flight).
MAX_CHUNK = 4096
#: Cap when streaming without collecting: keeps peak memory flat in the number of runs (the engine
#: returned a dict per run, and 4,096-run chunks let RSS creep up to about 50k runs, 1,024 did not).
STREAM_MAX_CHUNK = 1024
#: Cap on the bytes of empirical length arrays that one batch hands to the engine (each distinct
#: scenario of a batch is converted, and its arrays copied unless another one holds the same).
CHUNK_ARRAY_BYTES = 64 << 20
#: Runs of the plan looked up at once in files that are not chunks of this plan (bounds memory).
FOREIGN_WINDOW = 8192


@dataclass(frozen=True)
class SweepInfo:
    """What a sweep call did: ``runs`` in the plan, ``resumed`` (already in ``out``), ``ran`` (run
    now), ``chunks`` written or returned, ``failed`` runs (with an ``error``, the refused ones
    included), ``seconds`` wall time, ``refused`` runs (of ``failed``: runaway scenarios refused before
    running, neither run nor stored) and ``first_refused``, the refusal message of the first of
    them in plan order (None when none was refused)."""

    runs: int
    resumed: int
    ran: int
    chunks: int
    failed: int
    seconds: float
    refused: int = 0
    first_refused: str | None = None


def results_frame(keys: list[str], results: Mapping[str, Any] | Sequence[str]) -> pl.DataFrame:
    """``run_key``, every metric and ``error`` of runs: from the columns ``simulate_many`` returns
    (one array per metric, ``status``, ``error``: null metrics where a run failed), or from a list of
    error texts (runs refused before running)."""
    n = len(keys)
    cols: list[pl.Series] = [pl.Series("run_key", keys, dtype=pl.String)]
    if not isinstance(results, Mapping):
        cols += [pl.Series(m, [None] * n, dtype=dt) for m, dt in SUMMARY_SCHEMA.items()]
        cols.append(pl.Series("error", list(results), dtype=pl.String))
        return pl.DataFrame(cols)
    failed = np.asarray(results["status"]) != 0
    for m, dt in SUMMARY_SCHEMA.items():
        s = pl.Series(m, results[m]).cast(dt)
        cols.append(s.scatter(np.flatnonzero(failed), None) if failed.any() else s)
    # metrics added to the engine after this module was written
    for m in sorted(set(results) - set(SUMMARY_SCHEMA) - {"status", "error"}):
        s = pl.Series(m, results[m])
        cols.append(s.scatter(np.flatnonzero(failed), None) if failed.any() else s)
    cols.append(pl.Series("error", results["error"], dtype=pl.String))
    return pl.DataFrame(cols)


class _ChunkSizer:
    """Sizes of batches (runs per engine call) and when to write the finished ones as a chunk.

    ``fixed`` (the user's ``chunk_size``): every batch is one chunk of exactly that many runs (the
    last one of a range may be shorter). Otherwise batches of about :data:`BATCH_SECONDS` of work
    (measured speed, growing at most :data:`BATCH_GROWTH`-fold per batch from a small first one) are
    written together once :data:`FLUSH_SECONDS` have passed since the chunk's first batch started or
    the chunk holds ``cap`` runs."""

    def __init__(self, fixed: int | None, threads: int, array_bytes: int, cap: int = MAX_CHUNK,
                 runs_per_scenario: int = 1):
        self.fixed = fixed
        self.cores = threads if threads > 0 else (os.cpu_count() or 1)
        self.cap = fixed if fixed is not None else cap   # runs per chunk file
        self.batch_cap = self.cap
        if array_bytes > 0:  # about CHUNK_ARRAY_BYTES of distinct scenarios' arrays per batch
            scenarios = max(1, CHUNK_ARRAY_BYTES // array_bytes)
            self.batch_cap = max(1, min(self.batch_cap, scenarios * max(1, runs_per_scenario)))
        self.size = max(1, min(self.batch_cap, FIRST_BATCH_PER_THREAD * self.cores))

    def next(self, room: int) -> int:
        """Runs in the next batch, when the chunk being filled has room for ``room`` more."""
        if self.fixed is not None:
            return self.fixed
        return max(1, min(self.size, room))

    def observe(self, n: int, seconds: float) -> None:
        if self.fixed is None and seconds > 0 and n > 0:
            want = int(n / seconds * BATCH_SECONDS)
            floor = min(self.cores, self.batch_cap)   # at least one run per thread
            self.size = max(floor, min(want, self.size * BATCH_GROWTH, self.batch_cap))

    def flush_due(self, runs: int, started: float) -> bool:
        """Whether a chunk of ``runs`` finished runs whose first batch started at ``started``
        (``time.perf_counter()``) is to be written now."""
        if runs >= self.cap:
            return True
        return self.fixed is None and time.perf_counter() - started >= FLUSH_SECONDS


#: The allowed ranges of ``threads`` and ``chunk_size`` (``rollsim sweep --threads / --chunk-size`` too).
THREADS_RANGE = (0, 4096)
CHUNK_SIZE_RANGE = (1, 10_000_000)


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
class _Job:
    """A chunk to finish: ``todo`` positions to compute; ``found`` results already in other files;
    ``refused`` positions of runaway scenarios (``on_error="record"``) with their messages."""

    block: Block
    found: pl.DataFrame | None
    todo: list[int]
    refused: list[tuple[int, str]]


@dataclass
class _Piece:
    """A finished batch waiting to be written: runs ``[start, end)`` (``keys`` in plan order), the
    rows to store (``part``), whether any run was computed now (``ran``), how many were refused
    (not stored) and how many positions of the plan it keeps."""

    start: int
    end: int
    keys: list[str]
    part: pl.DataFrame
    ran: bool
    refused: int
    kept: int


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
        self.ran = self.resumed = self.chunks = self.failed = self.saved_now = self.refused_runs = 0
        self.first_refusal: tuple[int, str] | None = None  # (plan position, message), the earliest
        self._pending: list[_Piece] = []
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

    def absorb(self, job: _Job, results: Mapping[str, Any] | None) -> None:
        """Takes a finished batch (on the writer thread locally, on the driver for Ray): its rows are
        counted, kept for the returned frame, and added to the chunk written by :meth:`flush`."""
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
        if self.store is not None:
            if self._pending and self._pending[-1].end != block.start:
                self.flush()
            metric_cols = [c for c in res.columns if c != "run_key"]
            part = uniq.select(*self.plan.varied, "seed", *metric_cols, "scenario_key", "run_key")
            if job.refused:
                # refused runs are not stored, so that a rerun with a higher max_samples runs them:
                # the file does not cover its range and is named so that resume searches it
                skip = {block.keys[p] for p, _ in job.refused}
                part = part.filter(~pl.col("run_key").is_in(list(skip)))
            self._pending.append(_Piece(block.start, block.end, block.keys, part, bool(job.todo),
                                        len(job.refused), len(block) - len(job.refused)))
        with self.lock:
            self.ran += len(job.todo)
            # refused runs were neither run nor found: not "already in out"
            self.resumed += len(block.first) - len(job.todo) - len(job.refused)
            self.refused_runs += len(job.refused)
            if job.refused:
                pos = block.start + min(p for p, _ in job.refused)
                if self.first_refusal is None or pos < self.first_refusal[0]:
                    self.first_refusal = (pos, self.refused[self.plan.scenario_index(pos)])
            if self.store is None:
                self.chunks += 1 if job.todo else 0
            self.failed += self._failures(block.start, uniq)
            if self.collect:
                self.rows[block.start] = rows

    def flush(self) -> None:
        """Writes the batches absorbed since the last flush (consecutive runs of the plan) as one
        chunk file; nothing if none of them ran anything (their runs are all in other files)."""
        pieces, self._pending = self._pending, []
        if not pieces:
            return
        if any(p.ran for p in pieces):
            assert self.store is not None
            part = pl.concat([p.part for p in pieces], how="diagonal_relaxed") if len(pieces) > 1 else pieces[0].part
            if len(pieces) > 1:  # a run in two batches (a duplicate of the plan) is stored once
                part = part.unique(subset="run_key", keep="first", maintain_order=True)
            covers = not any(p.refused for p in pieces)
            digest = (chunk_digest(k for p in pieces for k in p.keys) if covers
                      else chunk_digest(part["run_key"].to_list()))
            self.store.write(part, chunk_name(pieces[0].start, pieces[-1].end, digest), covers=covers)
        with self.lock:
            self.chunks += 1 if any(p.ran for p in pieces) else 0
            self.saved_now += sum(p.kept for p in pieces)

    def finish(self, job: _Job, results: Mapping[str, Any] | None) -> None:
        """A finished batch written at once as its own chunk (the Ray backend: one task, one chunk)."""
        self.absorb(job, results)
        self.flush()

    def saved(self) -> int:
        """Runs of the plan (positions) in ``out`` now: ranges done before this call and chunks
        written by it (refused runs excluded)."""
        with self.lock:
            return self.claimed_runs + self.saved_now

    def frame(self) -> pl.DataFrame:
        return pl.concat([self.rows[k] for k in sorted(self.rows)], how="diagonal_relaxed")


@dataclass
class _Fill:
    """The chunk being filled: ``runs`` (absorbed or submitted), when its first batch ``started``
    (``time.perf_counter()``), the plan position after its last batch (``end``)."""

    runs: int = 0
    started: float = 0.0
    end: int = 0


def _run_local(
    sw: _Sweep,
    threads: int,
    max_samples: int,
    chunk_size: int | None,
    progress: Progress,
) -> None:
    """Runs the batches with ``simulate_many``; a writer thread turns each finished batch into rows
    and writes the chunk files (:class:`_ChunkSizer` says when) while the next batch runs. At most one
    batch runs and one is being absorbed or written at any time. When the loop stops early (Ctrl-C,
    a failing progress callback), the batches already finished are written before the error
    propagates."""
    sizer = _ChunkSizer(chunk_size, threads, sw.plan.array_bytes, MAX_CHUNK if sw.collect else STREAM_MAX_CHUNK,
                        sw.plan.runs_per_scenario)
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rollsim-sweep-writer")
    pending: Future[None] | None = None
    hook_error: list[BaseException] = []
    done = progress.done
    fill = _Fill()
    writer_failed = False

    def submit(fn: Callable[..., None], *args: Any) -> None:
        nonlocal pending, writer_failed
        if pending is not None:
            try:
                pending.result()
            except BaseException:
                writer_failed = True
                raise
        pending = writer.submit(fn, *args)

    try:
        for item in sw.items(lambda: sizer.next(sizer.cap - fill.runs)):
            if isinstance(item, _Claim):
                if fill.runs:  # the chunk being filled ends where this range done before begins
                    submit(sw.flush)
                    fill.runs = 0
                sw.claim(item)
                continue
            block, todo = item.block, item.todo
            n_todo = len(todo)
            offset = done + len(block) - len(todo)
            if offset > progress.done:
                progress.update(offset)
            res = None
            if fill.runs and block.start != fill.end:  # runs done before lie between: a new chunk
                submit(sw.flush)
                fill.runs = 0
            t0 = time.perf_counter()
            if fill.runs == 0:
                fill.started = t0
            if todo:
                index, seeds = block.runs(todo)

                def cb(n: int, total: int, offset: int = offset) -> None:
                    if hook_error:
                        return
                    try:
                        progress.update(offset + n)
                    except BaseException as e:  # re-raised after this batch is safely written
                        hook_error.append(e)

                res = _rollsim.simulate_many(block.dicts, index, seeds, threads, max_samples, cb)
                sizer.observe(len(todo), time.perf_counter() - t0)
                del index, seeds
            fill.runs += len(block)
            fill.end = block.end
            flush = sizer.flush_due(fill.runs, fill.started)
            submit(sw.absorb, item, res)
            if flush:
                submit(sw.flush)
                fill.runs = 0
            del res, item, block, todo  # the writer holds the only references: freed once absorbed
            if hook_error:
                raise hook_error[0]
            done = offset + n_todo
            if done > progress.done:
                progress.update(done)
        submit(sw.flush)
        if pending is not None:
            pending.result()
    except BaseException:
        if not writer_failed:  # keep what finished: the batches absorbed so far become a chunk
            try:
                submit(sw.flush)
            except BaseException:
                pass
        raise
    finally:
        writer.shutdown(wait=True)  # an interrupted sweep still writes every finished batch


def sweep_with_info(
    scenario: Scenario | None = None,
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
    learning: Any = None,
    guard_names: dict[str, str] | None = None,
) -> tuple[pl.DataFrame | pl.LazyFrame, SweepInfo]:
    """:func:`sweep`, also returning a :class:`SweepInfo` (used by the CLI).

    ``guard_names`` spells the limits and remedies in the messages of runaway scenarios (see
    :func:`rollsim.simulation.runaway_error`; default the Python arguments, ``rollsim sweep``
    passes the sweep file's words, :data:`rollsim.sweep_cli.GUARD_NAMES`)."""
    t_start = time.perf_counter()
    metrics = check_metrics(metrics)
    learn = _learning_exprs(learning)
    if backend not in ("local", "ray"):
        raise invalid("backend", f"must be 'local' or 'ray', got {backend!r}")
    threads = _check_int("threads", threads, *THREADS_RANGE)
    if chunk_size is not None:
        chunk_size = _check_int("chunk_size", chunk_size, *CHUNK_SIZE_RANGE)
    max_samples = _check_int("max_samples", max_samples, 1, 2**32 - 1)
    if on_error not in ("raise", "record"):
        raise invalid("on_error", f"must be 'raise' or 'record', got {on_error!r}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise invalid("progress", f"must be True, False or a callable f(done, total), got {progress!r}")
    if not isinstance(collect, (bool, np.bool_)):
        raise invalid("collect", f"must be True or False, got {collect!r}")
    if not collect and out is None:
        raise invalid("collect", "collect=False needs out=DIR (the results are only kept there)")
    if ray_address is not None:
        if not isinstance(ray_address, str):
            raise invalid("ray_address", f"must be a string such as '10.0.0.1:6379', got {ray_address!r}")
        if backend != "ray":
            raise invalid("ray_address", f"applies to backend='ray' only, got backend={backend!r}")
    if backend == "ray":  # before anything runs: Ray missing, or an address nothing listens on
        from rollsim.sweeps._ray import check_address

        check_address(ray_address)

    plan = make_plan(scenario, grid, seeds)
    store = Store(out) if out is not None else None
    if store is not None:  # the directory's runs are found by the keys it was written with
        plan.use_key_version(store.key_version)
    try:
        done = _sweep_in(plan, store, out, t_start, metrics=metrics, backend=backend, threads=threads,
                         chunk_size=chunk_size, progress=progress, max_samples=max_samples, on_error=on_error,
                         ray_address=ray_address, collect=bool(collect), learn=learn, guard_names=guard_names)
    finally:
        if store is not None:
            store.close()
    return done


def _warn_foreign_runs(store: Store, out: str | os.PathLike[str], planned: int) -> None:
    """A store that holds more distinct runs than this sweep planned also holds another sweep's runs
    (e.g. one with another base scenario): reading it returns those too, which a user must know. Reads
    the ``run_key`` column of the parts the store verified or wrote in this call (no second check)."""
    lazy = store.scan()
    if "run_key" not in lazy.collect_schema().names():  # nothing stored (e.g. only failed runs)
        return
    stored = lazy.select(pl.col("run_key").n_unique()).collect().item()
    if stored > planned:
        warnings.warn(StoreWarning(
            f"{os.fspath(out)!r} holds {stored} distinct runs, {stored - planned} more than this sweep's {planned}: "
            f"runs of another sweep (another base scenario, grid or seeds) are in it, and read_sweep / scan_sweep "
            f"return them too (their scenario_key tells them apart); use one directory per experiment"),
            stacklevel=5)


def _learning_exprs(learning: Any) -> list[pl.Expr] | None:
    """The ``learning`` option of :func:`sweep` as expressions adding the learning metrics (None: none)."""
    if learning is None or learning is False:
        return None
    from rollsim.learning import learning_options, summary_exprs

    model, rules = learning_options("learning", learning)
    return summary_exprs(model, **rules)


def check_metrics(metrics: Any) -> list[str] | None:
    """``metrics`` as a list of distinct known names (``None``: all); ScenarioError otherwise."""
    if metrics is None:
        return None
    if isinstance(metrics, str):
        metrics = [metrics]
    try:
        metrics = list(metrics)
    except TypeError:
        raise invalid("metrics", f"must be a list of metric names, got {type(metrics).__name__} {metrics!r}") from None
    bad = [m for m in metrics if not isinstance(m, str)]
    if bad:
        raise invalid("metrics", f"must be metric names (str), got {bad[0]!r}; choose from {_METRICS}")
    unknown = [m for m in metrics if m not in SUMMARY_SCHEMA]
    if unknown:
        raise invalid("metrics", f"unknown metric(s) {unknown}; choose from {_METRICS}")
    twice = sorted({m for m in metrics if metrics.count(m) > 1}, key=metrics.index)
    if twice:
        raise invalid("metrics", f"{twice} given more than once; give each metric once (choose from {_METRICS})")
    return metrics


def _interrupted(sw: _Sweep, out: str | os.PathLike[str] | None) -> str:
    if out is None:
        return (f"sweep interrupted: {sw.ran} of {len(sw.plan)} runs had finished and none is kept "
                "(out=None; pass out=DIR to keep finished runs and resume)")
    return (f"sweep interrupted: {sw.saved()} of {len(sw.plan)} runs are saved in {os.fspath(out)!r} "
            f"({sw.saved_now} written by this call); run the same sweep with this out again to finish it")


def _sweep_in(
    plan: Plan, store: Store | None, out: str | os.PathLike[str] | None, t_start: float, *,
    metrics: list[str] | None, backend: str, threads: int, chunk_size: int | None,
    progress: bool | Callable[[int, int], Any], max_samples: int, on_error: str, ray_address: str | None,
    collect: bool, learn: list[pl.Expr] | None = None, guard_names: dict[str, str] | None = None,
) -> tuple[pl.DataFrame | pl.LazyFrame, SweepInfo]:
    # runaway scenarios are refused before anything runs (an estimate; the engine also enforces it)
    refused: dict[int, str] = {}
    livelocks = Livelocks(plan)
    for c, sc in plan.source.scan():
        livelocks.see(c, sc)
        msg = runaway_error(sc, max_samples, "summary", names=guard_names)
        if msg is not None:
            vals = dict(zip(plan.varied, plan.source.values(c, sc)))
            where = ", ".join(f"{k}={v!r}" for k, v in vals.items()) or "the base scenario"
            refused[c] = f"{msg} (sweep scenario {where})"
    livelocks.warn()
    if refused and on_error == "raise":
        from rollsim.errors import ScenarioError

        raise ScenarioError(next(iter(refused.values())) + "; nothing was run (on_error='record' runs the others)")
    sw = _Sweep(plan, store, collect, refused)
    bar = Progress(len(plan), sw.claimed_runs, progress)
    try:
        if backend == "local":
            _run_local(sw, threads, max_samples, chunk_size, bar)
        else:
            from rollsim.sweeps._ray import run_ray

            run_ray(sw, max_samples, chunk_size, bar, ray_address)
    except KeyboardInterrupt as e:
        raise KeyboardInterrupt(_interrupted(sw, out)) from e
    finally:
        bar.close()

    keep = _METRICS if metrics is None else metrics
    learned = [] if learn is None else [e.meta.output_name() for e in learn]
    wanted = [*plan.varied, "seed", *keep, *learned, "error", "scenario_key", "run_key"]
    result: pl.DataFrame | pl.LazyFrame
    if collect:
        frame = sw.frame()
        frame = (frame if learn is None else frame.with_columns(learn)).select(wanted)
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
        if learn is not None and {"tokens_stale_0", "tokens_drawn"} <= have:
            lf = lf.with_columns(learn)
            have |= set(learned)
        result = lf.select([c for c in wanted if c in have])
        failed = sw.failed
        first = None if sw.first_failure is None else sw.first_failure[1]
    if failed and on_error == "raise":
        raise invalid("sweep", f"{failed} of {len(plan)} runs failed; first: {first}"
                               + (f" (results so far are in {os.fspath(out)!r})" if out is not None else "")
                               + "; pass on_error='record' to get them as rows with an error")
    if store is not None and out is not None and sw.foreign is not None:  # else: only this plan's chunks
        _warn_foreign_runs(store, out, len(plan))
    info = SweepInfo(len(plan), sw.resumed, sw.ran, sw.chunks, failed, time.perf_counter() - t_start,
                     sw.refused_runs, None if sw.first_refusal is None else sw.first_refusal[1])
    return result, info


def sweep(
    scenario: Scenario | None = None,
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
    learning: Any = None,
) -> pl.DataFrame | pl.LazyFrame:
    """Runs every scenario of a grid with every seed, in summary mode, across cores or a Ray cluster.

    Parameters
    ----------
    scenario : Scenario, optional
        The base scenario the grid varies; ``Scenario()`` (the chapter's) by default.
    grid : dict | list, optional
        What to vary. A dict ``{field: [values, ...]}`` (dotted names reach into parts, e.g.
        ``"pipeline.max_staleness"``, ``"lengths.sigma"``; values may also be whole parts, e.g.
        ``"pipeline": [Synchronous(), FullyAsync(2)]``) gives the Cartesian product, the last field
        varying fastest. A list of dicts of changes (e.g. from :mod:`rollsim.sweeps.space`) gives one
        scenario per dict. A list of :class:`Scenario` runs those scenarios (``scenario`` must then be
        None). ``None``: ``scenario`` alone.
    seeds : int | iterable of int, optional
        A count ``n`` (seeds ``0..n-1``) or the seeds themselves, each in [0, 2**64 - 1]; every
        scenario runs once per seed. Default: ``scenario.seed`` (for a list of Scenarios: each one's own).
    metrics : list of str, optional
        Summary metrics to return as columns (see :data:`SUMMARY_SCHEMA`); all by default. The
        dataset in ``out`` always stores all of them.
    out : path, optional
        Directory of the parquet dataset (created if needed; not ``""``). Each chunk of finished runs
        is written atomically with a manifest holding its SHA-256; runs already in ``out`` (same
        scenario and seed, by ``run_key``) in chunks that match their manifest are not run
        again, so re-running an interrupted sweep completes it; a damaged chunk, or a ``part-*``
        file the store did not write, is moved to ``out/_rejected/`` (a ``StoreWarning`` names it)
        and its runs are computed again. The directory is locked while the sweep writes it: a
        second sweep into it is refused. ``None``: results stay in memory.
    backend : "local" | "ray"
        ``"local"``: this machine's cores (rayon, the GIL released). ``"ray"``: chunks as Ray tasks on
        the running Ray (``ray.init`` already called), on ``ray_address``, on the cluster found by
        ``ray.init(address="auto")``, or else on a local Ray started (and stopped) for this call.
        Needs ``pip install rollsim[ray]``. Same rows, bit for bit, as ``"local"``.
    threads : int
        Local backend: worker threads, 0 = all cores; in [0, 4096]. Results do not depend on it.
    chunk_size : int, optional
        Runs per chunk (per parquet file, per Ray task), in [1, 10**7]. Default: locally, the engine
        runs batches of about 1 s of work (starting from two runs per thread) and a chunk is written
        every 5 s of work or at 4,096 runs (1,024 with ``collect=False``), whichever comes first;
        on Ray, about three tasks per CPU of the cluster. Resuming works whatever the chunk size or
        thread count of the interrupted call.
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
        Address of the Ray cluster (``"host:port"`` or ``"ray://host:port"``) for ``backend="ray"``
        when Ray is not initialised yet; refused with another backend. Something must accept a TCP
        connection there within 5 s, else ScenarioError (before anything runs).
    collect : bool
        True (default): build and return the frame of the whole sweep (memory grows with the number
        of runs, about 0.25 KB each). False (needs ``out``): build nothing per run; return a
        ``polars.LazyFrame`` over the dataset in ``out`` (:func:`rollsim.sweeps.scan_sweep`), so peak
        memory does not depend on the number of runs. The plan itself is always generated chunk by
        chunk.
    learning : bool | dict, optional
        True, or a dict of :class:`rollsim.learning.DriftModel` fields and token rules (``clip_low``,
        ``clip_high``, ``tis_cap``, ``icepop``, ``seed``): adds the learning metrics of each run
        (:data:`rollsim.learning.SUMMARY_METRICS`: ``tokens_per_s``, ``pg_clipfrac``,
        ``tis_truncated``, ``ess_token``, ``length_gap``, ...) after the summary metrics, computed
        from the stored ``tokens_stale_*`` / ``tokens_drawn`` sums under that drift model
        (:func:`rollsim.learning.summary_learning`; the dataset stores the sums, not the model's
        values). Sequence-level rules are refused (summary mode keeps no spans). None: not added.

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
        ``run_key`` (String, 32 hex digits: SHA-256 of a canonical form of the scenario's fields
        and the seed, stable across processes, machines and versions of Python; of key version 2,
        or of the version ``out`` was created with, see :func:`rollsim.sweeps.run_key`).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown field or invalid value in ``scenario``/``grid``/``seeds``/options (the message names
        it; ``metrics`` are checked before anything runs), an unusable ``out`` (not a directory,
        read-only, full: the message names it; finished chunks stay there), ``out`` being written by
        another sweep (named with its process id), an unreachable ``ray_address``, or
        (``on_error="raise"``) a run the engine rejected.
    ImportError
        ``backend="ray"`` without Ray installed.
    KeyboardInterrupt
        Ctrl-C: the runs in progress stop; the batches already finished are written to ``out``
        first, and the message says how many runs of the sweep are saved there.

    Examples
    --------
    >>> from rollsim import Scenario
    >>> from rollsim.sweeps import sweep
    >>> df = sweep(Scenario(horizon_s=600.0), {"pipeline.max_staleness": [0, 2]}, seeds=2, progress=False)
    >>> df.select("pipeline.max_staleness", "seed", "steps").rows()
    [(0, 0, 1), (0, 1, 1), (2, 0, 2), (2, 1, 2)]
    """
    frame, _ = sweep_with_info(
        scenario, grid, seeds=seeds, metrics=metrics, out=out, backend=backend, threads=threads,
        chunk_size=chunk_size, progress=progress, max_samples=max_samples, on_error=on_error,
        ray_address=ray_address, collect=collect, learning=learning,
    )
    return frame





class Livelocks:
    """The sweep's scenarios whose staleness cap is below their sync cadence
    (``pipeline.max_staleness < sync_every - 1``: they train ``max_staleness + 1`` steps, then drop
    every sample; :func:`rollsim.simulation.staleness_cap_livelock`), said in one
    :class:`~rollsim.StalenessCapLivelockWarning` naming up to ``shown`` of them by their varied values,
    with the first one's reason. The runs still run (a sweep may map where training stops)."""

    def __init__(self, plan: Plan, shown: int = 5) -> None:
        self.plan, self.shown, self.count = plan, shown, 0
        self.hits: list[tuple[str, str]] = []

    def see(self, c: int, sc: Scenario) -> None:
        from rollsim.simulation import staleness_cap_livelock

        why = staleness_cap_livelock(sc)
        if why is None:
            return
        self.count += 1
        if len(self.hits) < self.shown:
            vals = dict(zip(self.plan.varied, self.plan.source.values(c, sc)))
            self.hits.append((", ".join(f"{k}={v!r}" for k, v in vals.items()) or "the base scenario", why))

    def warn(self) -> None:
        from rollsim.errors import StalenessCapLivelockWarning

        if not self.hits:
            return
        total = self.plan.source.count
        more = f" and {self.count - len(self.hits)} more" if self.count > len(self.hits) else ""
        warnings.warn(StalenessCapLivelockWarning(
            f"{self.count} of {total} sweep scenario{'s' if total != 1 else ''} cannot train past their first "
            f"steps (a staleness cap below sync_every - 1): {'; '.join(w for w, _ in self.hits)}{more}. The first: "
            f"{self.hits[0][1]}"), stacklevel=5)
