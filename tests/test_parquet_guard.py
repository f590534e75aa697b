"""A user's parquet file is checked before polars reads it (rollsim._parquet): polars 2.1.0 aborts the
process on a page header with a negative value count (an allocation of about 2^61 bytes) and panics
(pyo3_runtime.PanicException, a BaseException) on a file whose column chunks lie past its end. Every
reader of a user's parquet file (lengths, metrics, report, a sweep store's unverified chunks) refuses
such files with a ScenarioError naming the file; every file polars writes passes the check."""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Empirical, ScenarioError, _parquet
from rollsim.calibration import read_metrics
from rollsim.report import load

NEG = (b"\x2c\x15\xd0\x0f", b"\x2c\x15\xff\x0f")  # the first data page's value count: 1000 -> -1024


def tokens_parquet() -> bytes:
    buf = io.BytesIO()
    pl.DataFrame({"tokens": [float(i) for i in range(1000)]}).write_parquet(buf)
    return buf.getvalue()


def negative_count() -> bytes:
    b = tokens_parquet()
    assert b.count(NEG[0]) == 1  # else polars' layout changed and the file would not be the corrupt one
    return b.replace(*NEG, 1)


def test_negative_page_count_is_refused_not_an_abort(tmp_path):
    """In a fresh process (an abort would end it with SIGABRT): each reader gets a clean error."""
    p = tmp_path / "a.parquet"
    p.write_bytes(negative_count())
    run = tmp_path / "runs"
    run.mkdir()
    (run / "samples.parquet").write_bytes(negative_count())
    (run / "steps.parquet").write_bytes(tokens_parquet())
    code = f"""
import rollsim, rollsim.calibration, rollsim.report
for f in (lambda: rollsim.Empirical.from_file({str(p)!r}), lambda: rollsim.calibration.read_metrics({str(p)!r}),
          lambda: rollsim.report.load({str(p)!r}), lambda: rollsim.report.load({str(run)!r})):
    try:
        f()
    except rollsim.ScenarioError as e:
        print(e)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(Path(_parquet.__file__).parent.parent)})
    assert r.returncode == 0, r.stderr[-500:]
    why = "is not a whole parquet file: row group 0, column 'tokens' has a data page at byte 4 that says -1024 values (at least 0)"
    assert r.stdout.splitlines() == [f"lengths.path: {str(p)!r} {why}", f"metrics: 'a.parquet' {why}",
                                     f"result_dir: {str(p)!r} {why}", f"result_dir: {str(run / 'samples.parquet')!r} {why}"]


def test_chunk_past_the_end_is_refused_not_a_panic(tmp_path):
    """Bytes cut from the middle, the footer intact: polars panicked (assertion range.end <= size)."""
    buf = io.BytesIO()
    pl.DataFrame({"step": list(range(1, 201)), "gen_s": [1.5] * 200}).write_parquet(buf)
    b = buf.getvalue()
    flen = struct.unpack("<I", b[-8:-4])[0]
    cut = b[:4] + b[len(b) // 2:]
    p = tmp_path / "m.parquet"
    p.write_bytes(cut)
    with pytest.raises(ScenarioError) as e:
        read_metrics(p)
    meta = _parquet._Compact(b[-8 - flen:-8]).struct()
    col = meta[4][0][1][0][3]  # row group 0, column 0's ColumnMetaData
    first = min(col[9], col.get(11) or col[9])
    assert str(e.value) == (f"metrics: 'm.parquet' is not a whole parquet file: row group 0, column 'step' says its data "
                            f"is bytes {first} to {first + col[7]}, outside the column data (bytes 4 to "
                            f"{len(cut) - 8 - flen}): the file is truncated or overwritten")
    assert first + col[7] > len(cut) - 8 - flen


def _patched_count(b: bytes, old: int, new: int, nth: int) -> bytes:
    """``b`` with the ``nth`` i64 field of value ``old`` following the field before it (compact header 0x16)
    in its footer set to ``new`` (the footer length updated)."""
    def varint(n: int) -> bytes:
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            if not n:
                return out + bytes([byte])
            out += bytes([byte | 0x80])

    flen = struct.unpack("<I", b[-8:-4])[0]
    footer = b[-8 - flen:-8]
    pat = b"\x16" + varint(old << 1)
    at = -1
    for _ in range(nth + 1):
        at = footer.index(pat, at + 1)
    footer = footer[:at] + b"\x16" + varint(new << 1) + footer[at + len(pat):]
    return b[:-8 - flen] + footer + struct.pack("<I", len(footer)) + b"PAR1"


@pytest.mark.parametrize("nth, message", [
    (0, "its footer says 1000000 rows, its row groups 777"),  # FileMetaData.num_rows
    (1, "row group 0, column 'a' says 1000000 values, its data pages hold 777"),  # ColumnMetaData.num_values
    (3, "row group 0, column 'a' says 777 values (7266 bytes uncompressed) in 2268 bytes for 1000000 rows (a column "
        "holds at least one value, null or level, per row)"),  # RowGroup.num_rows: polars panicked
])
def test_footer_counts_that_disagree_are_refused(tmp_path, nth, message):
    buf = io.BytesIO()
    pl.DataFrame({"a": list(range(777)), "s": ["x"] * 777}).write_parquet(buf)
    p = tmp_path / "c.parquet"
    p.write_bytes(_patched_count(buf.getvalue(), 777, 1_000_000, nth))
    with pytest.raises(ScenarioError) as e:
        _parquet.check(p, "metrics", "c.parquet")
    assert str(e.value) == f"metrics: 'c.parquet' is not a whole parquet file: {message}"


@pytest.mark.parametrize("compression", ["uncompressed", "snappy", "gzip", "lz4", "zstd", "brotli"])
def test_every_file_polars_writes_passes_and_reads_back(tmp_path, compression):
    rng = np.random.default_rng(0)
    n = 5000
    df = pl.DataFrame({"i": np.arange(n), "f": rng.normal(size=n), "s": [f"s{i % 50}" for i in range(n)],
                       "l": [[1, 2, 3][:i % 4] if i % 5 else None for i in range(n)],
                       "st": [{"x": i, "y": str(i)} for i in range(n)],
                       "nul": [None if i % 2 else 1.5 for i in range(n)], "big": ["x" * (i % 300) for i in range(n)]})
    for kw in ({}, {"row_group_size": 700, "data_page_size": 1024, "statistics": False}):
        p = tmp_path / "ok.parquet"
        df.write_parquet(p, compression=compression, **kw)  # type: ignore[arg-type]
        assert_frame_equal(_parquet.read(p, "metrics"), df)
    empty = tmp_path / "empty.parquet"
    pl.DataFrame({"t": []}, schema={"t": pl.Float64}).write_parquet(empty)
    assert _parquet.read(empty, "metrics").shape == (0, 1)


def test_lengths_from_a_valid_parquet_unchanged(tmp_path):
    p = tmp_path / "t.parquet"
    pl.DataFrame({"tokens": [float(i) for i in range(1, 1001)]}).write_parquet(p)
    e = Empirical.from_file(p)
    assert len(e.values) == 1000 and min(e.values) == 1.0 and max(e.values) == 1000.0


def test_report_of_a_run_dir_with_a_truncated_frame(tmp_path):
    (tmp_path / "samples.parquet").write_bytes(tokens_parquet()[:-1])
    (tmp_path / "steps.parquet").write_bytes(tokens_parquet())
    with pytest.raises(ScenarioError) as e:
        load(tmp_path)
    assert str(e.value) == (f"result_dir: {str(tmp_path / 'samples.parquet')!r} is not a whole parquet file: it does "
                            "not end with the magic bytes PAR1 (ends with b'\\x00PAR'; a truncated or partly written file)")
