"""Long runs release the GIL and stop on Ctrl-C (SIGINT) at the engine's next interrupt check.

Neither test reads a wall clock against a bound (a loaded machine stretches wall time at will). The
Ctrl-C comes from inside the run: a CPU-time timer (``ITIMER_PROF``, which counts only the process's
own CPU seconds, so the run is well inside the engine when it fires) whose handler the engine runs
at an interrupt check, and which sends the process a real SIGINT; the stop is measured in the same
process's CPU seconds from the signal to the ``KeyboardInterrupt`` (no scheduling gap between two
processes in it). The run cannot finish first (hours of events), and an event budget ends it if the
signal were never honoured. The GIL is checked by ordering (the other thread runs while the
simulation has not returned)."""

import signal
import subprocess
import sys
import threading
import time

import pytest

from rollsim import Scenario, simulate

#: The child: a run of hours (3.6e8 simulated seconds of the chapter's scenario) under a budget of
#: 2e9 events (a few minutes), interrupted by the SIGINT its own timer's handler sends.
CHILD = """
import os, signal, time
import rollsim
from rollsim import _rollsim
d = rollsim.Scenario(horizon_s=3.6e8).to_dict()
sent = []
def on_timer(signum, frame):
    # run by the engine's interrupt check (the run holds no GIL between checks)
    sent.append(time.process_time())
    os.kill(os.getpid(), signal.SIGINT)
signal.signal(signal.SIGPROF, on_timer)
signal.setitimer(signal.ITIMER_PROF, 0.3)
try:
    _rollsim.simulate(d, False, 2**32 - 1, False, 2_000_000_000)
except KeyboardInterrupt as e:
    print(repr(str(e)), len(sent), time.process_time() - sent[0], flush=True)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer") or sys.platform == "win32", reason="POSIX CPU-time timer")
def test_ctrl_c_stops_a_long_run_at_the_next_check():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    message, n_sent, cpu_after = out.stdout.rsplit(maxsplit=2)
    # the engine's own KeyboardInterrupt (not Python's between two bytecodes), after one signal
    assert message == "'rollsim run interrupted'" and n_sent == "1"
    # stopped at the next check, every 65,536 events (a few ms of CPU): well under 0.5 CPU seconds
    assert 0.0 <= float(cpu_after) < 0.5, cpu_after


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
