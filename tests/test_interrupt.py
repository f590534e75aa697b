"""Long runs release the GIL and stop on Ctrl-C (SIGINT) within about a second of CPU time.

Neither test reads a wall clock against a bound (a loaded machine stretches wall time at will): the
stop is measured in the child's CPU seconds after the signal, the GIL by ordering (the other thread
runs while the simulation has not returned)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rollsim import Scenario, simulate

LONG = "import rollsim; print('started', flush=True); rollsim.simulate(rollsim.Scenario(horizon_s=3.6e8), record='summary', max_samples=2**32 - 1)"


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system, every thread) process ``pid`` has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads CPU time from /proc (Linux)")
def test_ctrl_c_stops_a_long_run_quickly():
    # the run would take hours; stopped, the child spends well under 1.5 CPU seconds after the signal
    # (the KeyboardInterrupt, its traceback and the interpreter's exit), however loaded the machine
    p = subprocess.Popen([sys.executable, "-c", LONG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "started"
        time.sleep(0.5)
        before = _cpu_s(p.pid)
        p.send_signal(signal.SIGINT)
        err = p.stderr.read()           # until the child closes it: it exits
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    after = usage.ru_utime + usage.ru_stime
    assert p.returncode != 0
    assert "KeyboardInterrupt" in err
    assert after - before < 1.5, (before, after)


def test_runs_release_the_gil():
    """While a run is in the engine, another Python thread runs: with the GIL held throughout, this
    thread could not take a single step until the run had returned (and then sees it done)."""
    sc = Scenario(horizon_s=3600.0 * 2000)      # about 0.7 s of engine time on an idle machine
    entered, done, out = threading.Event(), threading.Event(), []

    def run():
        entered.set()
        out.append(simulate(sc, record="summary"))
        done.set()

    th = threading.Thread(target=run)
    th.start()
    entered.wait()
    steps_while_running = 0
    while steps_while_running < 20 and not done.is_set():
        steps_while_running += 1
        time.sleep(0)                          # lets the other thread take the GIL, if it wants it
    th.join()
    assert out and out[0].summary["steps"] > 0
    assert steps_while_running >= 20, steps_while_running
