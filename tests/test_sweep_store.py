"""The sweep store never loses, double-counts or silently reads damaged results: checksummed chunks
with manifests, verified on resume and on read; a lock per directory; clear errors for unusable
output directories; old (format 1) directories still readable and resumable."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rollsim import Scenario, ScenarioError
from rollsim import sweep_cli
from rollsim.sweeps import read_sweep, scan_sweep, sweep, sweep_with_info
from rollsim.sweeps import _store
from rollsim.sweeps._store import LOCK, MANIFEST, REJECTED, Store, StoreWarning

SMALL = Scenario(horizon_s=720.0)
GRID = {"train_step_s": [30.0, 60.0]}


def parts(out: Path) -> list[Path]:
    return sorted(out.glob("part-*.parquet"))


def fresh(seeds: int = 20) -> pl.DataFrame:
    return sweep(SMALL, GRID, seeds=range(seeds), progress=False)


def old_keys(out: Path) -> Path:
    """A directory created by rollsim before key version 2 (its manifest names no key version):
    sweeps into it write (and resume) run keys of version 1, as format-1 directories hold."""
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(json.dumps({"format": 2, "rollsim_version": _store._version()}))
    return out


def fresh_v1(seeds: int = 20) -> pl.DataFrame:
    """``fresh()`` as swept into a directory of key version 1 (its keys are of that version)."""
    with tempfile.TemporaryDirectory() as d:
        return sweep(SMALL, GRID, seeds=range(seeds), out=old_keys(Path(d)), progress=False)


def written(out: Path, seeds: int = 20, chunk_size: int = 10, key_version: int = 2) -> list[Path]:
    if key_version == 1:
        old_keys(out)
    sweep(SMALL, GRID, seeds=range(seeds), out=out, chunk_size=chunk_size, progress=False)
    return parts(out)


def resume(out: Path, seeds: int = 20, **kw):
    return sweep_with_info(SMALL, GRID, seeds=range(seeds), out=out, progress=False, **kw)


def as_format_1(out: Path) -> None:
    """What rollsim wrote before chunk manifests (store format 1)."""
    for m in out.glob("part-*.parquet.json"):
        m.unlink()
    meta = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({"format": 1, "rollsim_version": meta["rollsim_version"]}))


# ---------------------------------------------------------------- every chunk has a manifest

def test_each_chunk_has_a_manifest_with_its_checksum_and_keys(tmp_path):
    ps = written(tmp_path)
    assert len(ps) == 4
    for p in ps:
        meta = json.loads((tmp_path / (p.name + ".json")).read_text())
        data = p.read_bytes()
        keys = pl.read_parquet(p)["run_key"].to_list()
        import hashlib
        assert meta["format"] == _store.CHUNK_FORMAT == 2 and meta["file"] == p.name
        assert meta["bytes"] == len(data) and meta["sha256"] == hashlib.sha256(data).hexdigest()
        assert meta["runs"] == len(keys) == 10 and meta["covers_range"] is True
        assert meta["run_keys_sha256"] == hashlib.sha256("".join(k + "\n" for k in keys).encode()).hexdigest()
    assert json.loads((tmp_path / MANIFEST).read_text())["format"] == 2


# ---------------------------------------------------------------- damaged chunks

def test_truncated_chunk_is_named_on_read_and_recomputed_on_resume(tmp_path):
    p = written(tmp_path)[1]
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(ScenarioError) as e:
        read_sweep(tmp_path)
    msg = str(e.value)
    assert msg.startswith(f"out: {str(p)!r} is damaged: it holds ") and "(truncated or overwritten)" in msg
    assert f"run the sweep again with out={str(tmp_path)!r}" in msg
    with pytest.raises(ScenarioError, match="is damaged"):
        scan_sweep(tmp_path)
    with pytest.warns(StoreWarning, match=f"{str(p)!r} is not counted: it holds .* bytes") as w:
        df, info = resume(tmp_path)
    assert str(tmp_path / REJECTED / p.name) in str(w[0].message)
    assert (info.resumed, info.ran, info.chunks) == (30, 10, 1)
    assert_frame_equal(df, fresh(), check_exact=True)
    assert_frame_equal(read_sweep(tmp_path).sort("run_key"), fresh().sort("run_key"), check_exact=True)
    assert (tmp_path / REJECTED / p.name).exists() and (tmp_path / REJECTED / (p.name + ".json")).exists()


def test_flipped_bytes_inside_a_chunk_are_never_read(tmp_path):
    p = written(tmp_path)[2]
    data = bytearray(p.read_bytes())
    mid = len(data) // 2
    data[mid:mid + 64] = bytes(b ^ 0xFF for b in data[mid:mid + 64])   # same size, other bytes
    p.write_bytes(bytes(data))
    with pytest.raises(ScenarioError, match=r"is damaged: its SHA-256 differs from its manifest's"):
        read_sweep(tmp_path)
    with pytest.warns(StoreWarning, match="SHA-256 differs"):
        df, info = resume(tmp_path)
    assert info.ran == 10
    assert_frame_equal(df, fresh(), check_exact=True)
    assert read_sweep(tmp_path)["drop_fraction"].is_between(0.0, 1.0).all()


def write_toml(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "sweep.toml"
    f.write_text(textwrap.dedent(text))
    return f


def cli(*argv: str) -> int:
    p = argparse.ArgumentParser(prog="rollsim")
    sweep_cli.add_parser(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["sweep", *argv])
    return args.func(args)


def test_chunk_overwritten_by_another_chunks_file_is_recomputed_by_the_cli(tmp_path, capsys):
    f = write_toml(tmp_path, "seeds = 20\nchunk_size = 10\n[base]\nhorizon_s = 720.0\n[grid]\ntrain_step_s = [30.0, 60.0]\n")
    out = tmp_path / "out"
    assert cli(str(f), "--out", str(out), "--no-progress", "--format", "none") == 0
    a, b = parts(out)[:2]
    a.write_bytes(b.read_bytes())
    capsys.readouterr()
    assert cli(str(f), "--out", str(out), "--no-progress", "--format", "none") == 0
    err = capsys.readouterr().err
    assert f"rollsim sweep: warning: out: {str(a)!r} is not counted:" in err
    assert "40 runs (10 ran now in 1 chunk, 30 already in" in err
    back = read_sweep(out)
    assert back.height == 40 and back["run_key"].n_unique() == 40


def test_a_renamed_or_copied_chunk_is_not_trusted(tmp_path):
    a, b = written(tmp_path)[:2]
    a.unlink()
    b.rename(a)                                   # b's bytes under a's name, a's manifest gone
    (tmp_path / (b.name + ".json")).rename(tmp_path / (a.name + ".json"))   # b's manifest under a's name
    with pytest.raises(ScenarioError, match="its manifest describes the file"):
        read_sweep(tmp_path)
    with pytest.warns(StoreWarning, match="renamed or copied over"):
        df, info = resume(tmp_path)
    assert info.ran == 20     # both ranges are computed again
    assert_frame_equal(df, fresh(), check_exact=True)


def test_manifest_whose_chunk_never_arrived_is_ignored_and_removed(tmp_path):
    p = written(tmp_path)[3]
    p.unlink()                                    # killed after the manifest, before the rename
    assert read_sweep(tmp_path).height == 30
    _, info = resume(tmp_path)
    assert info.ran == 10 and read_sweep(tmp_path).height == 40
    assert len(list(tmp_path.glob("*.json"))) == 5   # 4 manifests + the store's


def test_stray_part_file_is_named_ignored_on_read_and_moved_aside_on_resume(tmp_path, capsys):
    written(tmp_path)
    stray = tmp_path / "part-x.parquet"
    stray.write_bytes(b"not a parquet file")
    with pytest.warns(StoreWarning, match=f"ignoring {str(stray)!r}: it has no manifest"):
        assert read_sweep(tmp_path).height == 40
    f = write_toml(tmp_path, "seeds = 20\n[base]\nhorizon_s = 720.0\n[grid]\ntrain_step_s = [30.0, 60.0]\n")
    assert cli(str(f), "--out", str(tmp_path), "--no-progress", "--format", "none") == 0
    err = capsys.readouterr().err
    assert f"warning: out: {str(stray)!r} is not counted: it has no manifest" in err
    assert "(0 ran now in 0 chunks, 40 already in" in err
    assert not stray.exists() and (tmp_path / REJECTED / "part-x.parquet").read_bytes() == b"not a parquet file"
    assert_frame_equal(read_sweep(tmp_path).sort("run_key"), fresh().sort("run_key"), check_exact=True)


# ---------------------------------------------------------------- store format 1 (before manifests)

def test_format_1_directory_is_read_unverified_and_upgraded_by_a_resume(tmp_path):
    written(tmp_path, seeds=15, key_version=1)
    as_format_1(tmp_path)
    with pytest.warns(StoreWarning, match=r"store of format 1 .* read unverified"):
        assert read_sweep(tmp_path).height == 30
    with pytest.warns(StoreWarning, match=r"store of format 1 .* its 3 chunk files were read in full"):
        df, info = resume(tmp_path)
    assert (info.resumed, info.ran) == (30, 10)
    assert_frame_equal(df, fresh_v1(), check_exact=True)
    meta = json.loads((tmp_path / MANIFEST).read_text())
    assert meta["format"] == 2 and meta["upgraded_from_format"] == 1
    adopted = [json.loads((tmp_path / (p.name + ".json")).read_text()) for p in parts(tmp_path)]
    assert sum(m.get("adopted_from_format") == 1 for m in adopted) == 3
    assert_frame_equal(read_sweep(tmp_path).sort("run_key"), fresh_v1().sort("run_key"), check_exact=True)


def test_format_1_truncated_chunk_is_named_not_a_polars_traceback(tmp_path):
    p = written(tmp_path, key_version=1)[0]
    as_format_1(tmp_path)
    p.write_bytes(p.read_bytes()[:100])
    with pytest.warns(StoreWarning, match="read unverified"), pytest.raises(ScenarioError) as e:
        read_sweep(tmp_path)
    assert str(e.value).startswith(f"out: {str(p)!r} cannot be read as a sweep chunk (")
    assert str(e.value).endswith("run the sweep again with this out to move it aside and recompute its runs")
    with pytest.warns(StoreWarning) as w:
        df, info = resume(tmp_path)
    assert any("cannot be read as a sweep chunk" in str(x.message) for x in w)
    assert info.ran == 10
    assert_frame_equal(df, fresh_v1(), check_exact=True)


def test_format_1_chunk_overwritten_by_another_is_searched_not_claimed(tmp_path):
    a, b = written(tmp_path, key_version=1)[:2]
    a.write_bytes(b.read_bytes())
    as_format_1(tmp_path)
    with pytest.warns(StoreWarning, match="store of format 1"):
        df, info = resume(tmp_path)
    assert info.ran == 10     # a's runs are missing: computed; b's runs are found in both files
    assert_frame_equal(df, fresh_v1(), check_exact=True)


# ---------------------------------------------------------------- one writer per directory

def test_a_second_sweep_into_a_locked_directory_is_refused(tmp_path):
    with Store(tmp_path):
        with pytest.raises(ScenarioError) as e:
            sweep(SMALL, seeds=2, out=tmp_path, progress=False)
        assert str(e.value) == (
            f"out: {str(tmp_path)!r} is being written by another sweep (process {os.getpid()} on "
            f"{socket.gethostname()} holds {str(tmp_path / LOCK)!r}); wait for it to finish, or give another out")
        assert read_sweep(tmp_path).height == 0    # reading needs no lock
    assert sweep(SMALL, seeds=2, out=tmp_path, progress=False).height == 2   # released


SLOW = """
import sys
from rollsim import Scenario
from rollsim.sweeps import sweep
sweep(Scenario(horizon_s=3600.0), seeds=range(100000), out=sys.argv[1], chunk_size=20, threads=1, progress=False)
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")
def test_two_sweeps_at_once_the_second_is_refused_and_a_crash_releases_the_lock(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", SLOW, str(out)])
    try:
        deadline = time.monotonic() + 120
        while not parts(out):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        with pytest.raises(ScenarioError, match=rf"is being written by another sweep \(process {proc.pid} on "):
            sweep(Scenario(horizon_s=3600.0), seeds=range(100000), out=out, chunk_size=20, progress=False)
        proc.send_signal(signal.SIGKILL)     # a crash: the OS releases the lock
    finally:
        proc.wait()
    done = read_sweep(out)
    assert done.height > 0 and done.height % 20 == 0 and done["run_key"].n_unique() == done.height
    _, info = sweep_with_info(Scenario(horizon_s=3600.0), seeds=range(done.height + 20), out=out, chunk_size=20,
                              progress=False)
    assert (info.resumed, info.ran) == (done.height, 20)


# ---------------------------------------------------------------- unusable output directories

def test_empty_out_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError, match="^out: must be a directory path, got an empty string"):
        sweep(SMALL, out="", progress=False)
    with pytest.raises(ScenarioError, match="^out: must be a directory path, got an empty string"):
        read_sweep("")
    assert list(tmp_path.iterdir()) == []


def test_unwritable_directory_is_refused_before_anything_runs(tmp_path, monkeypatch):
    real_open = os.open

    def read_only(path, flags, *a):
        if str(path).endswith(LOCK):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *a)

    monkeypatch.setattr(_store.os, "open", read_only)
    calls = []
    with pytest.raises(ScenarioError) as e:
        sweep(SMALL, seeds=3, out=tmp_path, progress=lambda d, t: calls.append(d))
    assert str(e.value) == (
        f"out: cannot create the lock file in {str(tmp_path)!r}: Permission denied (EACCES); make it writable or "
        "choose another out (finished chunks already there are kept; the same sweep resumes from them)")
    assert calls == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="needs POSIX permissions, not root")
def test_read_only_directory_for_real(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(ScenarioError, match=r"^out: cannot create the lock file in .*\(EACCES\)"):
            sweep(SMALL, seeds=3, out=ro, progress=False)
    finally:
        ro.chmod(0o755)


def test_full_disk_at_the_first_chunk_names_the_directory(tmp_path, monkeypatch):
    real = _store._write_synced

    def full(path, data):  # the directory fills up when the first chunk is written
        if ".parquet." in path.name and ".parquet.json." not in path.name:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(path, data)

    monkeypatch.setattr(_store, "_write_synced", full)
    with pytest.raises(ScenarioError) as e:
        sweep(SMALL, seeds=3, out=tmp_path, progress=False)
    msg = str(e.value)
    assert msg.startswith("out: cannot write the chunk 'part-000000000000-000000000003-")
    assert msg.endswith(f".parquet' in {str(tmp_path)!r}: No space left on device (ENOSPC); free some space or "
                        "choose another out (finished chunks already there are kept; the same sweep resumes "
                        "from them)")
    assert parts(tmp_path) == [] and list(tmp_path.glob(".*.tmp")) == []
    monkeypatch.undo()
    assert sweep(SMALL, seeds=3, out=tmp_path, progress=False).height == 3   # and the lock was released


# ---------------------------------------------------------------- cost

def test_a_store_of_100_chunks_opens_whole(tmp_path):
    """Every chunk of a 100-chunk store is verified and read (its time is in benches/sweep_bench.py, the
    row "rollsim.scan_sweep of 100 chunks": not a timed test)."""
    sweep(SMALL, seeds=range(500), out=tmp_path, chunk_size=5, progress=False)
    assert len(parts(tmp_path)) == 100
    assert scan_sweep(tmp_path).collect().height == 500
