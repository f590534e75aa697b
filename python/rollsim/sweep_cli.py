"""``rollsim sweep FILE.toml --out DIR``: runs a sweep described in TOML (see ``rollsim.sweeps.config``).

Wire into the main CLI with ``rollsim.sweep_cli.add_parser(subparsers)``.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

import polars as pl

from rollsim import _rollsim
from rollsim._text import count, format_table
from rollsim.errors import ScenarioError
from rollsim.simulation import GUARD_NAMES as _PYTHON_GUARD_NAMES

__all__ = ["GUARD_NAMES", "add_parser", "run"]

#: The run guards' words in the refusals of runaway scenarios, as the sweep file spells them
#: (:func:`rollsim.simulation.runaway_error`): ``max_samples`` is a top-level key of the file,
#: ``horizon_s`` a key of ``[base]`` or ``[grid]``, and a sweep records summaries only.
GUARD_NAMES: dict[str, str] = {**_PYTHON_GUARD_NAMES,
                               "summary_keeps": "a sweep records summaries only, in constant memory"}

#: Metrics shown in the printed table (means and 95% intervals over seeds).
SHOWN = ("steps", "rollout_utilization", "staleness_mean", "drop_fraction")
#: ... and with ``learning`` in the sweep file.
SHOWN_LEARNING = ("tokens_per_s", "pg_clipfrac", "length_gap")
#: ... and for agentic scenarios, a table of their own: every summary value of a multi-turn run (turns,
#: tool calls, truncated and failed trajectories, environment time and queueing, ...), from the engine's
#: schema (``rollsim._rollsim.SCHEMA["agentic_summary"]``); 0 (counts) or NaN in a run that is not agentic.
SHOWN_AGENTIC = tuple(c["name"] for c in _rollsim.SCHEMA["agentic_summary"])
_AGENTIC_FLOATS = tuple(c["name"] for c in _rollsim.SCHEMA["agentic_summary"] if c["dtype"].startswith("float"))


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Registers the ``sweep`` subcommand on an argparse ``add_subparsers()`` object."""
    p = subparsers.add_parser(
        "sweep",
        help="run a parameter sweep described in a TOML file (parallel, streamed to parquet, resumable)",
        description="Runs every scenario of the sweep file with every seed in summary mode and writes the "
                    "results as a parquet dataset in --out; re-running with the same --out skips finished runs.",
    )
    p.add_argument("config", help="sweep file (TOML): [base] scenario, [grid] or [sample], seeds")
    p.add_argument("--out", required=True, help="directory of the parquet dataset (created; resumed if it exists)")
    p.add_argument("--backend", choices=("local", "ray"), default="local", help="where runs execute (%(default)s)")
    p.add_argument("--threads", type=int, default=0, help="local worker threads, 0 = all cores (%(default)s)")
    p.add_argument("--chunk-size", type=int, default=None, help="runs per chunk / parquet file / Ray task")
    p.add_argument("--ray-address", default=None, help="Ray cluster address (default: running one, else local)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--format", choices=("table", "csv", "none"), default="table",
                   help="print means and 95%% intervals over seeds per scenario of steps, "
                        "rollout_utilization, staleness_mean and drop_fraction (with learning: tokens_per_s, "
                        "pg_clipfrac, length_gap) and, for agentic scenarios, the agentic summary values (turns, "
                        "tool calls, truncated / failed trajectories, environment time and queueing, ...), those "
                        "the file's metrics keep; every metric is in --out (%(default)s)")
    p.set_defaults(func=run)
    return p


def _failed_words(frame: Any, columns: list[str], failed: int, refused: int) -> str:
    """How many runs failed, and where to see why: the stored ones have an ``error``; the
    ``refused`` ones, refused before running (estimated to exceed the run guards), are not stored,
    so that a rerun with other limits runs them."""
    stored = 0
    if "error" in columns:
        stored = int(frame.select(pl.col("error").is_not_null().sum()).collect().item())
    parts = []
    if stored:
        parts.append(f"{stored} with its error in the 'error' column")
    if refused:
        parts.append(f"{refused} refused before running by the run guards (a runaway scenario: not stored, so that "
                     f"a rerun with a shorter horizon_s or a higher max_samples runs them)")
    return f"{failed} runs failed: " + "; ".join(parts)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    print(f"rollsim sweep: warning: {message}", file=sys.stderr)


def _in_file(e: ScenarioError, path: str, flags: Any = ()) -> ScenarioError:
    """``e`` with the sweep file named (``rollout_slots: must be in [1, 16777216], got 0 (in the sweep
    file 's.toml')``), unless its message names it already or is about a flag (``--out: ...``; ``flags``: the
    command's argument names, as the messages name them before the command line spells them as flags)."""
    text = str(e)
    flag = text.startswith("--") or text.partition(":")[0] in flags   # about a flag's value (out: ..., --out: ...)
    named = flag or repr(path) in text or repr(os.path.abspath(path)) in text
    return e if named else ScenarioError(
        f"{text} (in the sweep file {path!r})")


def run(args: argparse.Namespace) -> int:
    """Runs the sweep; returns 0, 1 if some runs failed (their ``error`` column says why), or 130 if
    interrupted (Ctrl-C; stderr says how many runs are saved in ``--out``)."""
    from rollsim.sweeps import aggregate, config, sweep_with_info

    from rollsim.sweeps._run import CHUNK_SIZE_RANGE, THREADS_RANGE, _check_int

    _check_int("--threads", args.threads, *THREADS_RANGE)  # the flags named, before the file is read
    if args.chunk_size is not None:
        _check_int("--chunk-size", args.chunk_size, *CHUNK_SIZE_RANGE)
    try:
        spec = config.load(args.config)
    except ScenarioError as e:
        raise _in_file(e, args.config) from None
    kwargs: dict[str, Any] = {}
    if spec.max_samples is not None:
        kwargs["max_samples"] = spec.max_samples
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")   # shown as lines on stderr, each file named
            warnings.showwarning = _show_warning
            frame, info = sweep_with_info(
                spec.base, spec.grid, seeds=spec.seeds, metrics=spec.metrics, out=args.out, backend=args.backend,
                threads=args.threads, chunk_size=args.chunk_size if args.chunk_size is not None else spec.chunk_size,
                progress=not args.no_progress, on_error="record", ray_address=args.ray_address, collect=False,
                learning=spec.learning, guard_names=GUARD_NAMES, **kwargs,
            )
    except ScenarioError as e:   # a point of the file's grid or sample that no scenario can be
        raise _in_file(e, args.config, vars(args)) from None
    except KeyboardInterrupt as e:  # the message says how many runs are saved, and where
        print(f"rollsim sweep: {e or 'interrupted'}", file=sys.stderr)
        return 130
    refused = f", {info.refused} refused" if info.refused else ""
    print(f"rollsim sweep: {info.runs} runs ({info.ran} ran now in {count(info.chunks, 'chunk')}, {info.resumed} already "
          f"in {args.out}{refused}), {info.seconds:.1f} s; dataset: {args.out}", file=sys.stderr)
    columns = frame.collect_schema().names()  # a LazyFrame over --out: never the frame of all runs
    if info.failed:
        print(f"rollsim sweep: {_failed_words(frame, columns, info.failed, info.refused)}", file=sys.stderr)
    if info.first_refused is not None:
        print(f"rollsim sweep: first refused: {info.first_refused}", file=sys.stderr)
    if args.format != "none" and "seed" not in columns:  # nothing stored: every run was refused
        return 1
    if args.format != "none":
        agentic = _agentic_shown(frame, columns)
        shown = [m for m in (*SHOWN, *SHOWN_LEARNING) if m in columns] or [
            c for c in columns if c not in ("seed", "error", "scenario_key", "run_key", *agentic)][-1:]
        by = [c for c in columns[: columns.index("seed")]] + ["scenario_key"]
        agg = aggregate(frame.select(*by, "seed", *shown, *agentic), [*shown, *agentic], by=by).drop("scenario_key")
        if args.format == "csv":
            print(agg.write_csv(), end="")
        else:
            keep = [c for c in agg.columns if c in columns] + ["seeds"]
            _print_table(agg.select(*keep, *[e for m in shown for e in (
                pl.col(f"{m}_mean").alias(m),
                ((pl.col(f"{m}_ci_high") - pl.col(f"{m}_ci_low")) / 2).alias(f"{m} ±95%"))]), keep)
            if agentic:
                means = agg.select(*keep, *[pl.col(f"{m}_mean").alias(m) for m in agentic])
                quiet = [m for m in agentic if means[m].fill_nan(0.0).fill_null(0.0).eq(0.0).all()]
                print("agentic trajectories (means over seeds; 95% intervals in --format csv):")
                _print_table(means.drop(quiet), keep)
                if quiet:
                    print(f"0 or NaN in every scenario: {', '.join(quiet)}")
    return 1 if info.failed else 0


def _agentic_shown(frame: Any, columns: list[str]) -> list[str]:
    """The agentic summary columns the frame keeps (:data:`SHOWN_AGENTIC`), if a run of it is agentic
    (one of their float values is not NaN: a run that is not agentic gives NaN there), else none."""
    kept = [m for m in SHOWN_AGENTIC if m in columns]
    floats = [m for m in _AGENTIC_FLOATS if m in kept]
    if not floats:
        return []
    some = frame.select(pl.any_horizontal([pl.col(m).is_not_null() & pl.col(m).is_not_nan() for m in floats]).any())
    some = some.collect() if isinstance(some, pl.LazyFrame) else some
    return kept if bool(some.item()) else []


def _print_table(table: pl.DataFrame, keep: list[str]) -> None:
    """The grid's values as given (30, not 30.0000), the metrics to 4 significant digits (33.12, 0.4469),
    an undefined value as -."""
    print(format_table(table, given=[c for c in keep if c != "seeds"]))
