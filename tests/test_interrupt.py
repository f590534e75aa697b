"""Long runs release the GIL and stop on Ctrl-C (SIGINT) within about a second."""

import signal
import subprocess
import sys
import threading
import time

from rollsim import Scenario, simulate

LONG = "import rollsim; print('started', flush=True); rollsim.simulate(rollsim.Scenario(horizon_s=3.6e8), record='summary', max_samples=2**32 - 1)"


def test_ctrl_c_stops_a_long_run_quickly():
    p = subprocess.Popen([sys.executable, "-c", LONG], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "started"
    time.sleep(0.5)
    t0 = time.monotonic()
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    elapsed = time.monotonic() - t0
    assert p.returncode != 0
    assert "KeyboardInterrupt" in err
    assert elapsed < 1.5, elapsed


def test_runs_release_the_gil():
    """Two runs on two threads overlap: the second thread makes progress while the first runs."""
    sc = Scenario(horizon_s=3600.0 * 400)
    t0 = time.perf_counter()
    simulate(sc, record="summary")
    one = time.perf_counter() - t0
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.001)

    th = threading.Thread(target=count)
    th.start()
    simulate(sc, record="summary")
    stop.set()
    th.join()
    # The run takes `one` seconds (about 0.15 s); with the GIL held throughout, the counter thread
    # could not run at all during it. Released, it ticks about once per millisecond.
    assert one > 0.05
    assert len(ticks) >= 10, (len(ticks), one)
