"""The parquet dataset of a sweep: a directory of chunk files, each written atomically.

Layout of ``out/``::

    _rollsim_sweep.json        format version and the rollsim version that wrote it
    part-<uuid>.parquet        one finished chunk of runs (any number of files)
    .part-<uuid>.<host>.<pid>.tmp   a chunk being written (renamed into place when complete)

A chunk is written to a temporary name, flushed to disk, then renamed with ``os.replace`` (atomic
on POSIX and Windows), so readers never see a half-written file and a killed sweep leaves only
complete parts (plus, at worst, a ``.tmp`` file that readers ignore and the next sweep removes).
"""

from __future__ import annotations

import json
import os
import socket
import uuid
import warnings
from pathlib import Path

import polars as pl

from rollsim.errors import invalid

__all__ = ["Store", "read_sweep", "MANIFEST", "FORMAT"]

MANIFEST = "_rollsim_sweep.json"
FORMAT = 1
_PART_GLOB = "part-*.parquet"


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

    def finished_keys(self) -> set[str]:
        keys: set[str] = set()
        for p in self.parts():
            keys.update(pl.read_parquet(p, columns=["run_key"])["run_key"].to_list())
        return keys

    def write(self, frame: pl.DataFrame) -> Path:
        """Writes one chunk atomically; returns its final path."""
        name = f"part-{uuid.uuid4().hex}.parquet"
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

    def read(self, columns: list[str] | None = None, keys: list[str] | None = None) -> pl.DataFrame:
        """All finished runs (one row per ``run_key``; the first written wins), columns as asked (a
        column missing from a part is null there), only ``keys`` if given."""
        frames: list[pl.LazyFrame] = []
        for p in self.parts():
            lf = pl.scan_parquet(p)
            if columns is not None:
                have = pl.read_parquet_schema(p)
                lf = lf.select([pl.col(c) if c in have else pl.lit(None).alias(c) for c in columns])
            frames.append(lf)
        if not frames:
            return pl.DataFrame()
        lf = pl.concat(frames, how="diagonal_relaxed")
        if keys is not None:
            lf = lf.filter(pl.col("run_key").is_in(pl.Series(keys, dtype=pl.String).implode()))
        return lf.unique(subset="run_key", keep="first", maintain_order=True).collect()


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
    p = Path(out)
    if not (p / MANIFEST).exists():
        raise invalid("out", f"{str(p)!r} is not a rollsim sweep directory (no {MANIFEST})")
    store = Store.__new__(Store)
    store.path = p
    return store.read()
