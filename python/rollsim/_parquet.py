"""A check of a user's parquet file before polars reads it.

polars (2.1.0) trusts a parquet file's footer: a truncated or corrupted file can make it panic (a
column chunk said to lie past the end of the file: ``pyo3_runtime.PanicException``, a
``BaseException``) or abort the whole process (a corrupted row or value count: an allocation of
about 2^61 bytes). :func:`check` reads the footer itself, by the format's specification
(https://github.com/apache/parquet-format, ``README.md`` "File Format" and ``src/main/thrift/parquet.thrift``:
the magic ``PAR1`` at both ends, a 4-byte little-endian footer length, a ``FileMetaData`` struct in
Thrift's compact protocol) and refuses a file whose footer does not fit the file, so that polars
only ever sees a file whose structure is consistent.
"""

from __future__ import annotations

import mmap
import os
import struct
from typing import Any

from rollsim.errors import ScenarioError, invalid

__all__ = ["check", "read"]

_MAGIC = b"PAR1"
# a row group's rows and a column chunk's values: at most 2^31 - 1 per page (the page headers' counts
# are i32), and a page takes at least its header's bytes, so a count above this many values per byte
# of the file cannot be real
_MAX_PER_BYTE = 2**31
_PAGES = {0: "data page", 1: "index page", 2: "dictionary page", 3: "data page (v2)"}


class _Corrupt(Exception):
    """The footer's Thrift bytes end early or hold a value out of the format."""


class _Compact:
    """A reader of Thrift's compact protocol (https://github.com/apache/thrift,
    ``doc/specs/thrift-compact-protocol.md``) over ``buf``: structs as ``{field id: value}``."""

    def __init__(self, buf: Any, pos: int = 0, end: int | None = None, what: str = "the footer") -> None:
        self.buf = buf
        self.pos = pos
        self.end = len(buf) if end is None else end
        self.depth = 0
        self.what = what

    def byte(self) -> int:
        if self.pos >= self.end:
            raise _Corrupt(f"{self.what} ends inside a value")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        out = shift = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7
            if shift > 63:
                raise _Corrupt("a varint longer than 10 bytes")

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise _Corrupt(f"a value of {n} bytes runs past the end of {self.what}")
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def value(self, kind: int) -> Any:
        if kind in (1, 2):  # a bool in a list or map: one byte, 1 true
            return self.byte() == 1
        if kind == 3:
            return self.byte()
        if kind in (4, 5, 6):
            v = self.zigzag()
            bits = {4: 16, 5: 32, 6: 64}[kind]
            if not -(2 ** (bits - 1)) <= v < 2 ** (bits - 1):
                raise _Corrupt(f"an i{bits} value {v} out of its range")
            return v
        if kind == 7:
            return struct.unpack("<d", self.take(8))[0]
        if kind == 8:
            return self.take(self.varint())
        if kind in (9, 10):
            head = self.byte()
            n, elem = head >> 4, head & 0x0F
            if n == 15:
                n = self.varint()
            if n > self.end - self.pos:  # every element takes at least one byte
                raise _Corrupt(f"a list of {n} elements in {self.end - self.pos} bytes")
            return [self.value(elem) for _ in range(n)]
        if kind == 11:
            n = self.varint()
            if n == 0:
                return {}
            if 2 * n > self.end - self.pos:
                raise _Corrupt(f"a map of {n} entries in {self.end - self.pos} bytes")
            kv = self.byte()
            return {self._key(self.value(kv >> 4)): self.value(kv & 0x0F) for _ in range(n)}
        if kind == 12:
            return self.struct()
        raise _Corrupt(f"an unknown Thrift type {kind}")

    @staticmethod
    def _key(k: Any) -> Any:
        return bytes(k) if isinstance(k, (bytes, bytearray)) else k if not isinstance(k, (list, dict)) else repr(k)

    def struct(self) -> dict[int, Any]:
        self.depth += 1
        if self.depth > 64:
            raise _Corrupt("structs nested more than 64 deep")
        out: dict[int, Any] = {}
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                self.depth -= 1
                return out
            delta, kind = head >> 4, head & 0x0F
            fid = last + delta if delta else self.zigzag()
            last = fid
            out[fid] = (kind == 1) if kind in (1, 2) else self.value(kind)


def _int(d: dict[int, Any], fid: int) -> int | None:
    v = d.get(fid)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _column(md: dict[int, Any], c: int) -> str:
    """A column chunk's column as messages name it: its path in the schema (``'tokens'``), else its index."""
    path = md.get(3)
    if isinstance(path, list) and path and all(isinstance(x, bytes) for x in path):
        return repr(b".".join(path).decode("utf-8", "replace"))
    return str(c)


def _footer_problem(meta: dict[int, Any], data_end: int) -> str | None:
    """What in the footer does not fit a file whose column data ends at byte ``data_end``, or None."""
    cap = data_end * _MAX_PER_BYTE
    rows = _int(meta, 3)
    if rows is None or not 0 <= rows <= cap:
        return f"its footer's count of rows ({rows}) is missing or impossible in {data_end} bytes of data"
    groups = meta.get(4, [])
    if not isinstance(groups, list):
        return "its footer's row groups are not a list"
    total = 0
    for g, rg in enumerate(groups):
        if not isinstance(rg, dict):
            return f"row group {g} of its footer is not a struct"
        n = _int(rg, 3)
        if n is None or not 0 <= n <= cap:
            return f"row group {g} says {n} rows, impossible in {data_end} bytes of data"
        total += n
        cols = rg.get(1)
        if not isinstance(cols, list):
            return f"row group {g} has no column list"
        for c, chunk in enumerate(cols):
            md = chunk.get(3) if isinstance(chunk, dict) else None
            if not isinstance(md, dict):
                return f"row group {g}, column {c} has no column metadata"
            col = _column(md, c)
            if chunk.get(1):
                return f"row group {g}, column {col} lies in another file ({chunk[1]!r}), which is not read"
            data, dic, size, values, unc = (_int(md, k) for k in (9, 11, 7, 5, 6))
            if data is None or size is None or values is None or unc is None:
                return f"row group {g}, column {col} lacks its data offset, its sizes or its count of values"
            first = min(data, dic) if dic is not None and dic > 0 else data
            if first < 4 or size < 0 or first + size > data_end:
                return (f"row group {g}, column {col} says its data is bytes {first} to {first + size}, outside the "
                        f"column data (bytes 4 to {data_end}): the file is truncated or overwritten")
            if not n <= values <= size * _MAX_PER_BYTE or unc < 0:
                return (f"row group {g}, column {col} says {values} values ({unc} bytes uncompressed) in {size} "
                        f"bytes for {n} rows (a column holds at least one value, null or level, per row)")
    if total != rows:
        return f"its footer says {rows} rows, its row groups {total}"
    return None


def _pages_problem(buf: Any, first: int, size: int, values: int, where: str) -> str | None:
    """What in the page headers of the column chunk ``buf[first:first + size]`` (``values`` values,
    counting nulls and list levels) does not fit it, or None."""
    end = first + size
    pos = first
    seen = 0
    while pos < end:
        r = _Compact(buf, pos, end, f"a page header of {where}")
        try:
            h = r.struct()
        except _Corrupt as e:
            return f"{where} has a corrupt page header at byte {pos} ({e})"
        kind, unc, comp = _int(h, 1), _int(h, 2), _int(h, 3)
        if kind not in _PAGES or unc is None or comp is None or unc < 0 or comp < 0:
            return (f"{where} has a page header at byte {pos} of type {kind}, {unc} bytes uncompressed and {comp} "
                    "compressed (a page has a type 0 to 3 and sizes of at least 0)")
        page = f"{where} has a {_PAGES[kind]} at byte {pos}"
        if r.pos + comp > end:
            return f"{page} of {comp} bytes, past the column chunk's end at byte {end}"
        sub = h.get({0: 5, 2: 7, 3: 8}.get(kind, 6))
        n = _int(sub, 1) if isinstance(sub, dict) else None
        if kind != 1 and (n is None or n < 0):
            return f"{page} that says {n} values (at least 0)"
        if kind == 3 and isinstance(sub, dict):
            levels = [_int(sub, k) for k in (5, 6)]
            nulls, rows = _int(sub, 2), _int(sub, 3)
            if any(x is None or x < 0 for x in levels) or sum(x or 0 for x in levels) > comp or \
                    nulls is None or rows is None or not 0 <= nulls <= (n or 0) or not 0 <= rows <= (n or 0):
                return f"{page} whose level sizes ({levels} bytes), nulls ({nulls}) or rows ({rows}) do not fit it"
        if kind in (0, 3):
            seen += n or 0
        pos = r.pos + comp
    if seen != values:
        return f"{where} says {values} values, its data pages hold {seen}"
    return None


def check(path: str | os.PathLike[str], field: str, shown: str | None = None) -> None:
    """Raises :class:`~rollsim.errors.ScenarioError` ``field: ...`` (naming the file, ``shown`` or
    ``path``) unless the file at ``path`` has the structure of a parquet file whose footer fits it.

    Checked: at least 12 bytes; ``PAR1`` at the start and at the end (``PARE``, an encrypted footer,
    is refused: polars cannot read it); the footer length within the file; the footer a
    ``FileMetaData`` struct whose row counts agree and whose every column chunk lies between the
    start magic and the footer. A file that passes can still hold corrupt pages, on which polars
    raises a (catchable) error."""
    name = repr(str(shown if shown is not None else path))
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 12:
                raise invalid(field, f"{name} is not a parquet file: {size} bytes, fewer than the format's 12 "
                                     "(the magic PAR1 at both ends and the footer length)")
            head = f.read(4)
            f.seek(size - 8)
            tail = f.read(8)
            flen = struct.unpack("<I", tail[:4])[0]
            if head != _MAGIC:
                raise invalid(field, f"{name} is not a parquet file: it does not start with the magic bytes PAR1 "
                                     f"(starts with {head!r})")
            if tail[4:] == b"PARE":
                raise invalid(field, f"{name} is an encrypted parquet file (magic PARE), which cannot be read")
            if tail[4:] != _MAGIC:
                raise invalid(field, f"{name} is not a whole parquet file: it does not end with the magic bytes PAR1 "
                                     f"(ends with {tail[4:]!r}; a truncated or partly written file)")
            if flen == 0 or flen > size - 12:
                raise invalid(field, f"{name} is not a whole parquet file: its footer length {flen} does not fit "
                                     f"its {size} bytes (a truncated or corrupted file)")
            f.seek(size - 8 - flen)
            footer = f.read(flen)
            try:
                meta = _Compact(footer).struct()
            except _Corrupt as e:
                raise invalid(field, f"{name} is not a whole parquet file: its footer is corrupt ({e})") from None
            problem = _footer_problem(meta, size - 8 - flen)
            if problem is None:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
                    problem = _chunks_problem(meta, buf)
    except ScenarioError:
        raise
    except (OSError, ValueError) as e:
        raise invalid(field, f"cannot read {name}: {getattr(e, 'strerror', None) or e}") from None
    if problem is not None:
        raise invalid(field, f"{name} is not a whole parquet file: {problem}")


def _chunks_problem(meta: dict[int, Any], buf: Any) -> str | None:
    """The first column chunk (of a footer :func:`_footer_problem` accepted) whose pages do not fit it."""
    for g, rg in enumerate(meta.get(4, [])):
        for c, chunk in enumerate(rg[1]):
            md = chunk[3]
            first, dic = md[9], _int(md, 11)
            if dic is not None and dic > 0:
                first = min(first, dic)  # the dictionary page comes first
            problem = _pages_problem(buf, first, md[7], md[5], f"row group {g}, column {_column(md, c)}")
            if problem is not None:
                return problem
    return None


def read(path: str | os.PathLike[str], field: str, shown: str | None = None, **kwargs: Any) -> Any:
    """``polars.read_parquet(path, **kwargs)`` after :func:`check`; any polars error or panic on the
    file's pages becomes :class:`~rollsim.errors.ScenarioError` ``field: cannot read 'file' as
    parquet: ...``."""
    import polars as pl

    check(path, field, shown)
    try:
        return pl.read_parquet(os.fspath(path), **kwargs)
    except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic)
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise invalid(field, f"cannot read {str(shown if shown is not None else path)!r} as parquet: {first}") from None
