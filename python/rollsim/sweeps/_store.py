"""The parquet dataset of a sweep: a directory of chunk files, each written atomically.

Layout of ``out/``::

    _rollsim_sweep.json        format version and the rollsim version that wrote it
    part-<start>-<end>-<digest>.parquet   one finished chunk: runs start..end-1 of the plan that wrote
                               it (12-digit, zero-padded), digest = 32 hex digits of a SHA-256 over
                               those runs' keys in plan order; the file holds every distinct run of
                               the range
    part-<uuid>.parquet        a chunk written by rollsim before chunk names (read and searched the same)
    .part-....<host>.<pid>.tmp a chunk being written (renamed into place when complete)

A chunk is written to a temporary name, flushed to disk, then renamed with ``os.replace`` (atomic
on POSIX and Windows), so readers never see a half-written file and a killed sweep leaves only
complete parts (plus, at worst, a ``.tmp`` file that readers ignore and the next sweep removes).
The name says which runs a file holds, so a resumed sweep knows what is done from the directory
listing alone (see ``rollsim.sweeps._run._Sweep``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import uuid
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from rollsim.errors import invalid

__all__ = ["Store", "read_sweep", "scan_sweep", "chunk_name", "scan_parts", "MANIFEST", "FORMAT"]

MANIFEST = "_rollsim_sweep.json"
FORMAT = 1
_PART_GLOB = "part-*.parquet"
_CHUNK_NAME = re.compile(r"^part-(\d+)-(\d+)-([0-9a-f]{32})\.parquet$")


def _version() -> str:
    from rollsim._rollsim import __version__

    return __version__


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = path.parent / f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Store:
    """Writes and reads the chunk files of one output directory."""

    def __init__(self, out: str | os.PathLike[str]):
        self.path = Path(out)
        if self.path.exists() and not self.path.is_dir():
            raise invalid("out", f"must be a directory (for the parquet dataset), got the file {str(self.path)!r}")
        self.path.mkdir(parents=True, exist_ok=True)
        man = self.path / MANIFEST
        if man.exists():
            try:
                meta = json.loads(man.read_text())
            except (OSError, ValueError) as e:
                raise invalid("out", f"{str(man)!r} is not a rollsim sweep manifest: {e}") from None
            if meta.get("format") != FORMAT:
                raise invalid("out", f"{str(self.path)!r} holds a sweep of format {meta.get('format')!r}; "
                                     f"this rollsim reads format {FORMAT}")
            if meta.get("rollsim_version") != _version():
                warnings.warn(
                    f"resuming a sweep in {str(self.path)!r} written by rollsim {meta.get('rollsim_version')}"
                    f" with rollsim {_version()}: finished runs are reused as they are", stacklevel=4)
        else:
            body = json.dumps({"format": FORMAT, "rollsim_version": _version()}, indent=2).encode()
            _atomic_write_bytes(man, body)
        self._clean_stale_tmp()

    def _clean_stale_tmp(self) -> None:
        host = socket.gethostname()
        for p in self.path.glob(".*.tmp"):
            rest, _, pid = p.name[: -len(".tmp")].rpartition(".")  # .<name>.<host>.<pid>.tmp
            if rest.endswith("." + host) and pid.isdigit() and not _pid_alive(int(pid)):
                try:
                    p.unlink()
                except OSError:
                    pass

    def parts(self) -> list[Path]:
        return sorted(self.path.glob(_PART_GLOB))

    def chunk_files(self) -> tuple[list[tuple[int, int, str, Path]], list[Path]]:
        """The parts named after a chunk of a plan, as ``(start, end, digest, path)``, and the others
        (written by rollsim before chunk names, or renamed by hand)."""
        chunks: list[tuple[int, int, str, Path]] = []
        others: list[Path] = []
        for p in self.parts():
            m = _CHUNK_NAME.match(p.name)
            if m is None:
                others.append(p)
            else:
                chunks.append((int(m.group(1)), int(m.group(2)), m.group(3), p))
        return chunks, others

    def write(self, frame: pl.DataFrame, name: str | None = None) -> Path:
        """Writes one chunk atomically (as ``name``, else ``part-<uuid>.parquet``); returns its path."""
        name = name or f"part-{uuid.uuid4().hex}.parquet"
        final = self.path / name
        tmp = self.path / f".{name}.{socket.gethostname()}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as f:
                frame.write_parquet(f, compression="zstd", statistics=True)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, final)
        except BaseException:
            try:
                tmp.unlink()
            except OSError:
                pass
            raise
        return final

    def scan(self) -> pl.LazyFrame:
        """Every finished run, lazily: one row per ``run_key`` (the first file in name order wins); a
        column missing from a part is null there."""
        return scan_parts(self.parts())

    def read(self) -> pl.DataFrame:
        return self.scan().collect()


def chunk_name(start: int, end: int, digest: str) -> str:
    """File name of the chunk of runs ``[start, end)`` of a plan whose run keys have ``digest``."""
    return f"part-{start:012d}-{end:012d}-{digest}.parquet"


def scan_parts(parts: list[Path]) -> pl.LazyFrame:
    """The parquet files ``parts`` as one lazy frame (files of one schema scanned together, others
    combined column by name), deduplicated by ``run_key``."""
    if not parts:
        return pl.LazyFrame()
    groups: list[tuple[Any, list[Path]]] = []
    for p in parts:
        schema = pl.read_parquet_schema(p)
        if groups and groups[-1][0] == schema:
            groups[-1][1].append(p)
        else:
            groups.append((schema, [p]))
    frames = [pl.scan_parquet(ps) for _, ps in groups]
    lf = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return lf.unique(subset="run_key", keep="first", maintain_order=True)


def read_sweep(out: str | os.PathLike[str]) -> pl.DataFrame:
    """Reads a sweep's parquet dataset back: every finished run, one row each.

    Parameters
    ----------
    out : path
        The ``out`` directory given to :func:`rollsim.sweep`.

    Returns
    -------
    polars.DataFrame
        The columns described in :func:`rollsim.sweep` (varied fields, ``seed``, every summary
        metric, ``error``, ``scenario_key``, ``run_key``), all metrics included; rows in the order
        the chunks finished (sort as you need). Parts written by sweeps with other varied fields are
        combined (missing columns are null).

    Raises
    ------
    ScenarioError (ValueError)
        ``out`` is not a directory written by ``rollsim.sweep``.
    """
    return scan_sweep(out).collect()


def scan_sweep(out: str | os.PathLike[str]) -> pl.LazyFrame:
    """:func:`read_sweep`, lazily: a ``polars.LazyFrame`` over the dataset (nothing is read until
    it is collected; filter or aggregate first to keep memory small).

    Parameters
    ----------
    out : path
        The ``out`` directory given to :func:`rollsim.sweep`.

    Returns
    -------
    polars.LazyFrame
        What :func:`read_sweep` returns, unevaluated (the files present now).

    Raises
    ------
    ScenarioError (ValueError)
        ``out`` is not a directory written by ``rollsim.sweep``.
    """
    p = Path(out)
    if not (p / MANIFEST).exists():
        raise invalid("out", f"{str(p)!r} is not a rollsim sweep directory (no {MANIFEST})")
    return scan_parts(sorted(p.glob(_PART_GLOB)))
