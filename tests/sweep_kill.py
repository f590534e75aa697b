"""Killing a sweep process midway, for the resume tests."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def kill_after_parts(script: str, out: Path, parts: int, **popen) -> subprocess.Popen:
    """Runs ``script`` (Python source, given ``out`` as ``sys.argv[1]``) in a new process and kills
    it with SIGKILL once ``out`` holds ``parts`` chunk files; returns the reaped process. Fails if
    the sweep finishes first or takes over 120 s."""
    proc = subprocess.Popen([sys.executable, "-c", script, str(out)], **popen)
    try:
        deadline = time.monotonic() + 120
        while len(list(out.glob("part-*.parquet"))) < parts:
            assert proc.poll() is None, "the sweep finished before it could be killed; make it longer"
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        for f in (proc.stdin, proc.stdout, proc.stderr):
            if f is not None:
                f.close()
    return proc
