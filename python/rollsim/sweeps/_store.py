"""The parquet dataset of a sweep: a directory of chunk files, each written atomically and checksummed.

Layout of ``out/`` (store format 2; ``docs/sweeps.md``, "The store", has the details)::

    _rollsim_sweep.json        store format (2), the rollsim version that created the directory and
                               the version of its run keys (``key_version``; absent: 1)
    _rollsim_sweep.lock        locked (``flock``) by the sweep writing the directory; holds its pid
    part-<start>-<end>-<digest>.parquet   one finished chunk: runs start..end-1 of the plan that wrote
                               it (12-digit, zero-padded), digest = 32 hex digits of a SHA-256 over
                               those runs' keys in plan order; the file holds every distinct run of
                               the range
    part-<...>.parquet.json    the chunk's manifest: its size, the SHA-256 of its bytes, its number
                               of runs and a digest of their keys (``CHUNK_FORMAT``)
    part-<uuid>.parquet        a chunk written by rollsim before chunk names (searched by run key)
    _rejected/                 files moved aside by a sweep: damaged chunks, files without a manifest
    .part-....<host>.<pid>.tmp a chunk or manifest being written (renamed into place when complete)

A chunk is written to a temporary name and flushed to disk; then its manifest is written the same way
and renamed into place (``os.replace``, atomic on POSIX and Windows); then the chunk is renamed into
place. So a chunk file that is visible always has its manifest, a killed sweep leaves complete chunks
only (plus, at worst, ``.tmp`` files that readers ignore and the next sweep removes, or a manifest
whose chunk never arrived, which is ignored), and a reader can verify every chunk: a file whose size
or SHA-256 differs from its manifest (truncated, overwritten, damaged on disk) or that has no
manifest (not written by the store) is never counted.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import re
import socket
import uuid
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from rollsim import _parquet
from rollsim.errors import invalid
from rollsim.sweeps._keys import KEY_VERSION, KEY_VERSIONS

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock (documented)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Store", "StoreWarning", "read_sweep", "scan_sweep", "chunk_name", "scan_parts", "MANIFEST", "FORMAT",
           "CHUNK_FORMAT", "LOCK", "REJECTED"]

MANIFEST = "_rollsim_sweep.json"
#: Store format written by this rollsim: 2 (checksummed chunks with manifests). Format 1 (chunks
#: without manifests, rollsim before the checksums) is read unverified and upgraded by the next sweep.
FORMAT = 2
#: Formats this rollsim reads.
READABLE = (1, 2)
#: Format of a chunk's manifest (``part-<...>.parquet.json``).
CHUNK_FORMAT = 2
LOCK = "_rollsim_sweep.lock"
REJECTED = "_rejected"
_PART_GLOB = "part-*.parquet"
_CHUNK_NAME = re.compile(r"^part-(\d+)-(\d+)-([0-9a-f]{32})\.parquet$")
_HASH_BLOCK = 1 << 20


class StoreWarning(UserWarning):
    """A sweep directory holds a file that is not counted: a damaged chunk, a file the store did not
    write, or chunks of an older store format that cannot be verified. The message names the file."""

    __module__ = "rollsim.sweeps"


def _version() -> str:
    from rollsim._rollsim import __version__

    return __version__


def _q(p: Path | str) -> str:
    return repr(os.fspath(p))


def _tmp_name(path: Path) -> Path:
    return path.parent / f".{path.name}.{socket.gethostname()}.{os.getpid()}.tmp"


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _atomic_write_bytes(path: Path, data: bytes) -> None:
    tmp = _tmp_name(path)
    try:
        _write_synced(tmp, data)
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(p: Path) -> None:
    try:
        p.unlink()
    except OSError:
        pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def manifest_path(part: Path) -> Path:
    """The manifest of the chunk file ``part``: ``<name>.json`` beside it."""
    return part.with_name(part.name + ".json")


def keys_digest(keys: Iterable[str]) -> str:
    """SHA-256 (64 hex digits) over run keys in file order, each followed by a newline."""
    h = hashlib.sha256()
    for k in keys:
        h.update(k.encode())
        h.update(b"\n")
    return h.hexdigest()


def _file_sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


@dataclass(frozen=True)
class Chunk:
    """A verified chunk file: ``covers`` is True if it holds every run of the range in its name."""

    path: Path
    runs: int
    covers: bool


_UNLISTED = "unlisted"


def verify(part: Path) -> tuple[Chunk | None, str]:
    """Checks ``part`` against its manifest: ``(Chunk, "")`` if its size and SHA-256 match, else
    ``(None, reason)`` (``reason`` starts with ``"unlisted"`` if there is no manifest)."""
    man = manifest_path(part)
    try:
        text = man.read_bytes()
    except FileNotFoundError:
        return None, f"{_UNLISTED}: it has no manifest {man.name!r}, so the sweep store did not write it"
    except OSError as e:
        return None, f"its manifest {man.name!r} cannot be read ({e.strerror})"
    try:
        meta = json.loads(text)
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
        fmt, name, size, digest, runs = (meta["format"], meta["file"], meta["bytes"], meta["sha256"], meta["runs"])
    except (ValueError, KeyError, TypeError) as e:
        return None, f"its manifest {man.name!r} is not valid ({type(e).__name__}: {e})"
    if fmt != CHUNK_FORMAT:
        return None, f"its manifest {man.name!r} has chunk format {fmt!r} (this rollsim reads {CHUNK_FORMAT})"
    if name != part.name:
        return None, f"its manifest describes the file {name!r} (renamed or copied over)"
    try:
        actual = part.stat().st_size
    except OSError as e:
        return None, f"it cannot be read ({e.strerror})"
    if actual != size:
        return None, f"it holds {actual} bytes where its manifest says {size} (truncated or overwritten)"
    try:
        got = _file_sha256(part)
    except OSError as e:
        return None, f"it cannot be read ({e.strerror})"
    if got != digest:
        return None, "its SHA-256 differs from its manifest's (damaged or overwritten after it was written)"
    return Chunk(part, int(runs), bool(meta.get("covers_range", False))), ""


def _read_meta(path: Path) -> dict[str, Any] | None:
    man = path / MANIFEST
    if not man.exists():
        return None
    try:
        meta = json.loads(man.read_text())
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as e:
        raise invalid("out", f"{_q(man)} is not a rollsim sweep manifest: {e}") from None
    fmt = meta.get("format")
    if fmt not in READABLE:
        raise invalid("out", f"{_q(path)} holds a sweep of store format {fmt!r}; this rollsim reads store formats "
                             f"{' and '.join(map(str, READABLE))} (a newer rollsim wrote it?)")
    return meta


def _key_version(path: Path, meta: dict[str, Any]) -> int:
    """The run-key version of a store's manifest (absent: 1, the keys of rollsim before version 2)."""
    v = meta.get("key_version", 1)
    if isinstance(v, bool) or v not in KEY_VERSIONS:
        raise invalid("out", f"{_q(path)} holds a sweep whose run keys are of key version {v!r}; this rollsim "
                             f"computes key versions {' and '.join(map(str, KEY_VERSIONS))} (a newer rollsim wrote "
                             "it?): resume it with that rollsim, or give another out")
    return int(v)


def _check_out(out: Any) -> Path:
    if isinstance(out, (str, os.PathLike)) and os.fspath(out) in ("", b""):
        raise invalid("out", "must be a directory path, got an empty string (write '.' for the current directory)")
    if not isinstance(out, (str, os.PathLike)):
        raise invalid("out", f"must be a directory path (str or os.PathLike), got {type(out).__name__} {out!r}")
    return Path(out)


def _os_error(where: Path, e: OSError, what: str) -> Exception:
    code = errno.errorcode.get(e.errno or 0, "")
    hint = {errno.ENOSPC: "free some space", errno.EDQUOT: "free some space",
            errno.EACCES: "make it writable", errno.EPERM: "make it writable",
            errno.EROFS: "use a writable file system"}.get(e.errno or 0, "fix it")
    return invalid("out", f"cannot {what} in {_q(where)}: {e.strerror or e}" + (f" ({code})" if code else "")
                   + f"; {hint} or choose another out (finished chunks already there are kept; the same sweep "
                     "resumes from them)")


class Store:
    """Writes the chunk files of one output directory, which it locks; verifies what is there.

    Opening a store (for a sweep) creates ``out`` if needed, takes its lock (refusing a directory
    another sweep is writing), checks that it is writable, verifies every chunk and moves damaged or
    unknown files aside (a :class:`StoreWarning` names each), and upgrades a format-1 directory.
    Call :meth:`close` (or use ``with``) to release the lock."""

    _lock_fd: int | None = None

    def __init__(self, out: str | os.PathLike[str]):
        self.path = _check_out(out)
        self._lock_fd: int | None = None
        if self.path.exists() and not self.path.is_dir():
            raise invalid("out", f"must be a directory (for the parquet dataset), got the file {_q(self.path)}")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise _os_error(self.path, e, "create the directory") from e
        self._lock()
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    # -- the lock
    def _lock(self) -> None:
        lock = self.path / LOCK
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise _os_error(self.path, e, "create the lock file") from e
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                holder = ""
                try:
                    os.lseek(fd, 0, os.SEEK_SET)
                    holder = os.read(fd, 200).decode(errors="replace").strip()
                except OSError:
                    pass
                os.close(fd)
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise _os_error(self.path, e, "lock the directory") from e
                pid, _, host = holder.partition(" ")
                who = f"process {pid} on {host}" if pid.isdigit() and host else "another process"
                raise invalid("out", f"{_q(self.path)} is being written by another sweep ({who} holds "
                                     f"{_q(lock)}); wait for it to finish, or give another out") from None
        try:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, f"{os.getpid()} {socket.gethostname()}\n".encode())
        except OSError as e:
            os.close(fd)
            raise _os_error(self.path, e, "write the lock file") from e
        self._lock_fd = fd

    def close(self) -> None:
        """Releases the directory's lock (the OS also releases it when the process ends)."""
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    # -- opening: format, stale files, verification
    def _open(self) -> None:
        meta = _read_meta(self.path)
        self.format = FORMAT if meta is None else int(meta["format"])
        # run keys of the version the directory was created with (none recorded: version 1)
        self.key_version = KEY_VERSION if meta is None else _key_version(self.path, meta)
        if meta is None:
            body = json.dumps({"format": FORMAT, "rollsim_version": _version(), "key_version": KEY_VERSION},
                              indent=2).encode()
            try:
                _atomic_write_bytes(self.path / MANIFEST, body)
            except OSError as e:
                raise _os_error(self.path, e, f"write {MANIFEST!r}") from e
        elif meta.get("rollsim_version") != _version():
            warnings.warn(
                f"resuming a sweep in {_q(self.path)} written by rollsim {meta.get('rollsim_version')}"
                f" with rollsim {_version()}: finished runs are reused as they are", stacklevel=5)
        self._clean_stale_tmp()
        self.chunks: dict[Path, Chunk] = {}
        adopted = 0
        for p in sorted(self.path.glob(_PART_GLOB)):
            chunk, why = verify(p)
            if chunk is None and self.format == 1 and why.startswith(_UNLISTED):
                chunk, why = self._adopt(p)
                adopted += chunk is not None
            if chunk is None:
                self._reject(p, why)
            else:
                self.chunks[p] = chunk
        for m in self.path.glob(_PART_GLOB + ".json"):  # a manifest whose chunk never arrived (killed)
            if not m.with_name(m.name[: -len(".json")]).exists():
                _unlink(m)
        if self.format == 1:
            body = json.dumps({"format": FORMAT, "rollsim_version": _version(), "upgraded_from_format": 1,
                               "adopted_chunks": adopted, "key_version": self.key_version}, indent=2).encode()
            try:
                _atomic_write_bytes(self.path / MANIFEST, body)
            except OSError as e:
                raise _os_error(self.path, e, f"write {MANIFEST!r}") from e
            warnings.warn(StoreWarning(
                f"out: {_q(self.path)} is a sweep store of format 1 (chunks without checksums): its {adopted} chunk "
                f"files were read in full and given manifests (store format {FORMAT}); damage that parquet itself "
                "does not detect in them before now cannot be found"), stacklevel=5)
            self.format = FORMAT

    def _adopt(self, p: Path) -> tuple[Chunk | None, str]:
        """A format-1 chunk: read in full (a truncated or unreadable file is refused), then given a
        manifest; it claims its range only if its keys give the digest in its name."""
        try:
            _parquet.check(p, "out")  # unverified: its structure first (polars can abort the process on it)
            keys = pl.read_parquet(p)["run_key"].to_list()
        except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic)
            return None, f"it cannot be read as a sweep chunk ({type(e).__name__}: {str(e).splitlines()[0]})"
        m = _CHUNK_NAME.match(p.name)
        covers = False
        if m is not None:
            from rollsim.sweeps._plan import chunk_digest

            covers = chunk_digest(keys) == m.group(3)
        data = p.read_bytes()
        self._write_manifest(p, data, keys, covers, adopted=True)
        return Chunk(p, len(keys), covers), ""

    def _reject(self, p: Path, why: str) -> None:
        dest_dir = self.path / REJECTED
        dest = dest_dir / p.name
        try:
            dest_dir.mkdir(exist_ok=True)
            i = 1
            while dest.exists():
                dest, i = dest_dir / f"{p.name}.{i}", i + 1
            os.replace(p, dest)
            man = manifest_path(p)
            if man.exists():
                os.replace(man, dest.with_name(dest.name + ".json"))
        except OSError as e:
            raise _os_error(self.path, e, f"move the unusable file {p.name!r} aside") from e
        warnings.warn(StoreWarning(f"out: {_q(p)} is not counted: {why.removeprefix(_UNLISTED + ': ')}; moved "
                                   f"to {_q(dest)} and not used (runs it held are computed again)"), stacklevel=6)

    def _clean_stale_tmp(self) -> None:
        host = socket.gethostname()
        for p in self.path.glob(".*.tmp"):
            rest, _, pid = p.name[: -len(".tmp")].rpartition(".")  # .<name>.<host>.<pid>.tmp
            if rest.endswith("." + host) and pid.isdigit() and not _pid_alive(int(pid)):
                _unlink(p)

    # -- what is there
    def parts(self) -> list[Path]:
        """The verified chunk files, in name order."""
        return sorted(self.chunks)

    def chunk_files(self) -> tuple[list[tuple[int, int, str, Path]], list[Path]]:
        """The verified parts that hold every run of the plan range in their name, as ``(start, end,
        digest, path)``, and the other verified parts (searched by run key)."""
        chunks: list[tuple[int, int, str, Path]] = []
        others: list[Path] = []
        for p in self.parts():
            m = _CHUNK_NAME.match(p.name)
            if m is None or not self.chunks[p].covers:
                others.append(p)
            else:
                chunks.append((int(m.group(1)), int(m.group(2)), m.group(3), p))
        return chunks, others

    # -- writing
    def _write_manifest(self, part: Path, data: bytes, keys: list[str], covers: bool, adopted: bool = False) -> None:
        meta: dict[str, Any] = {
            "format": CHUNK_FORMAT, "file": part.name, "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(), "runs": len(keys), "run_keys_sha256": keys_digest(keys),
            "covers_range": covers, "rollsim_version": _version(),
        }
        if adopted:
            meta["adopted_from_format"] = 1
        _atomic_write_bytes(manifest_path(part), json.dumps(meta, indent=1).encode())

    def write(self, frame: pl.DataFrame, name: str | None = None, covers: bool = True) -> Path:
        """Writes one chunk and its manifest atomically (as ``name``, else ``part-<uuid>.parquet``);
        ``covers``: the chunk holds every run of the range in its name. Returns its path.

        Raises ScenarioError naming the directory if it cannot be written (full, read-only)."""
        name = name or f"part-{uuid.uuid4().hex}.parquet"
        final = self.path / name
        tmp = _tmp_name(final)
        buf = io.BytesIO()
        frame.write_parquet(buf, compression="zstd", statistics=True)
        data = buf.getvalue()
        try:
            _write_synced(tmp, data)
            self._write_manifest(final, data, frame["run_key"].to_list(), covers)
            os.replace(tmp, final)
        except OSError as e:
            _unlink(tmp)
            raise _os_error(self.path, e, f"write the chunk {name!r}") from e
        except BaseException:
            _unlink(tmp)
            raise
        self.chunks[final] = Chunk(final, frame.height, covers)
        return final

    def scan(self) -> pl.LazyFrame:
        """Every finished run, lazily: one row per ``run_key`` (the first file in name order wins); a
        column missing from a part is null there. The parts are those verified or written by this
        store (it holds the lock: nothing else changed them)."""
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
        try:
            _parquet.check(p, "out")  # a format-1 part is unverified: its structure first (polars can abort on it)
            schema = pl.read_parquet_schema(p)
        except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic)
            raise invalid("out", f"{_q(p)} cannot be read as a sweep chunk ({type(e).__name__}: "
                                 f"{str(e).splitlines()[0] if str(e) else ''}); run the sweep again with this out "
                                 f"to move it aside and recompute its runs") from None
        if groups and groups[-1][0] == schema:
            groups[-1][1].append(p)
        else:
            groups.append((schema, [p]))
    frames = [pl.scan_parquet(ps) for _, ps in groups]
    lf = frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")
    return lf.unique(subset="run_key", keep="first", maintain_order=True)


def verified_parts(out: str | os.PathLike[str]) -> list[Path]:
    """The chunk files of a sweep directory that a reader may count (see :func:`scan_sweep`)."""
    p = _check_out(out)
    meta = _read_meta(p) if p.is_dir() else None
    if meta is None:
        raise invalid("out", f"{_q(p)} is not a rollsim sweep directory (no {MANIFEST})")
    parts = sorted(p.glob(_PART_GLOB))
    if meta["format"] == 1:
        if parts:
            warnings.warn(StoreWarning(
                f"out: {_q(p)} is a sweep store of format 1 (chunks without checksums): its {len(parts)} chunk "
                f"files are read unverified; run the sweep again with this out to checksum them (store format "
                f"{FORMAT})"), stacklevel=4)
        return parts
    good: list[Path] = []
    bad: list[tuple[Path, str]] = []
    for part in parts:
        chunk, why = verify(part)
        if chunk is not None:
            good.append(part)
        elif why.startswith(_UNLISTED):
            warnings.warn(StoreWarning(f"out: ignoring {_q(part)}: {why.removeprefix(_UNLISTED + ': ')} (a sweep "
                                       f"run with this out moves it to {REJECTED}/)"), stacklevel=4)
        else:
            bad.append((part, why))
    if bad:
        (first, why), more = bad[0], len(bad) - 1
        raise invalid("out", f"{_q(first)} is damaged: {why}"
                             + (f" (and {more} more damaged chunk file{'s' if more > 1 else ''})" if more else "")
                             + f"; run the sweep again with out={_q(p)} to move it to {REJECTED}/ and recompute "
                               "its runs")
    return good


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
        combined (missing columns are null). Only chunks that match their manifest are read (see
        :func:`scan_sweep`).

    Raises
    ------
    ScenarioError (ValueError)
        ``out`` is not a directory written by ``rollsim.sweep``, or one of its chunk files is damaged
        (the message names it; running the sweep again recomputes its runs).

    Warns
    -----
    StoreWarning
        A ``part-*.parquet`` file without a manifest (not written by the sweep store) is ignored;
        a directory of store format 1 is read unverified.
    """
    return scan_sweep(out).collect()


def scan_sweep(out: str | os.PathLike[str]) -> pl.LazyFrame:
    """:func:`read_sweep`, lazily: a ``polars.LazyFrame`` over the dataset (filter or aggregate
    before collecting to keep memory small).

    Every chunk file is verified when this is called (its size and SHA-256 against its manifest:
    one read of each file, about 1 ms per MB); the rows are read when the frame is collected.

    Parameters
    ----------
    out : path
        The ``out`` directory given to :func:`rollsim.sweep`.

    Returns
    -------
    polars.LazyFrame
        What :func:`read_sweep` returns, unevaluated (the files verified now).

    Raises
    ------
    ScenarioError (ValueError)
        ``out`` is not a directory written by ``rollsim.sweep``, or one of its chunk files is damaged
        (truncated, overwritten, changed: its size or SHA-256 differs from its manifest); the message
        names the file and says to run the sweep again, which moves it aside and recomputes its runs.

    Warns
    -----
    StoreWarning
        A ``part-*.parquet`` file without a manifest is ignored (named in the warning); a directory
        of store format 1 (no checksums) is read unverified.
    """
    return scan_parts(verified_parts(out))
