"""Sweep throughput on small scenarios, where the per-run overhead around the engine shows.

    python benches/sweep_columns.py [--runs 20000] [--repeat 5] [--threads 1,2]

Prints a markdown table of runs per second (best of ``--repeat``) for
- ``rollsim.sweep`` in memory (one scenario x ``--runs`` seeds, and a 20-point grid x seeds),
- the bare engine call ``_rollsim.simulate_many`` on the same runs,
for each scenario size: ``tiny`` (16 slots, 32 samples/step, 10 simulated minutes), the same with
10,000 empirical lengths and ``small`` (the chapter's scenario over 12 simulated
minutes). Runs with the rollsim on ``sys.path`` (run it
once with each build to compare: the script accepts both forms of ``simulate_many``, the list of
dicts with one summary dict per run, and each distinct scenario once with (index, seed) arrays and
columns back). The load average is printed, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import inspect
import os
import statistics
import time
import warnings

import numpy as np

import rollsim
from rollsim import _rollsim
from rollsim.sweeps import sweep

SCENARIOS = {
    "tiny": rollsim.Scenario(rollout_slots=16, batch_size=32, horizon_s=600.0),
    "tiny-empirical-10k": rollsim.Scenario(
        rollout_slots=16, batch_size=32, horizon_s=600.0,
        lengths=rollsim.Empirical(np.random.default_rng(0).lognormal(7.6, 1.0, 10_000).clip(1.0, 16384.0))),
    "small": rollsim.Scenario(horizon_s=720.0),
}


def columns_api() -> bool:
    """Whether ``simulate_many`` takes (scenarios, index, seeds) and returns columns."""
    try:
        return "index" in inspect.signature(_rollsim.simulate_many).parameters
    except (TypeError, ValueError):  # no signature: call it
        try:
            _rollsim.simulate_many([rollsim.Scenario(horizon_s=1.0).to_dict()], [0], [0])
            return True
        except TypeError:
            return False


def engine(sc: rollsim.Scenario, n: int, threads: int, new_api: bool) -> None:
    d = sc.to_dict()
    if new_api:
        _rollsim.simulate_many([d], np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.uint64), threads)
    else:
        _rollsim.simulate_many([dict(d, seed=s) for s in range(n)], threads)


def best(fn, repeat: int) -> tuple[float, float]:
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts), statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help="comma-separated names of SCENARIOS")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    new_api = columns_api()
    n = a.runs
    print(f"# sweep throughput, small scenarios: {n} runs per call, best of {a.repeat}")
    print(f"rollsim {rollsim.__version__} from {os.path.dirname(rollsim.__file__)}; simulate_many "
          f"{'columns (scenario once + index, seed)' if new_api else 'list of dicts'}; cpus {os.cpu_count()}; "
          f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| scenario | what | threads | best s | median s | runs/s (best) |")
    print("|---|---|---|---|---|---|")
    for name in a.scenarios.split(","):
        sc = SCENARIOS[name]
        sweep(sc, seeds=range(10**6, 10**6 + 500), progress=False)  # warm-up
        grid = {"train_step_s": [float(x) for x in range(20, 60, 2)]}  # 20 scenarios
        for th in [int(x) for x in a.threads.split(",")]:
            rows = [
                ("engine only: simulate_many", lambda sc=sc, th=th: engine(sc, n, th, new_api)),
                ("rollsim.sweep, 1 scenario x seeds",
                 lambda sc=sc, th=th: sweep(sc, seeds=n, threads=th, progress=False)),
                ("rollsim.sweep, 20-point grid x seeds",
                 lambda sc=sc, th=th, g=grid: sweep(sc, g, seeds=n // 20, threads=th, progress=False)),
            ]
            for what, fn in rows:
                b, m = best(fn, a.repeat)
                print(f"| {name} | {what} | {th} | {b:.3f} | {m:.3f} | {n / b:,.0f} |", flush=True)
    print(f"\nload average now {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
