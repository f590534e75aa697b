"""Sweep benchmark: 10,000 runs of the chapter scenario (x seeds) in summary mode.

    python benches/sweep_bench.py [--runs 10000] [--repeat 3] [--no-ray] [--no-time] [--no-memory]
                                  [--memory-runs 2000,10000,30000,100000] [--memory-chunks auto,1000]

Reports (markdown on stdout):
- wall time of ``rollsim.sweep`` on 1 and 2 threads, in memory and streamed to parquet (returning
  the frame, and with ``collect=False``), and the speed-up from the second core; the bare engine
  call (``_rollsim.simulate_many`` on all runs at once) for comparison;
- peak memory (resident set, ``resource.getrusage``, above the level after imports and a warm-up
  sweep; and the Python heap peak, ``tracemalloc``) for each ``--memory-runs`` count: in memory,
  streamed returning the frame, and streamed with ``collect=False`` (default chunks, and fixed
  ``--memory-chunks`` sizes), each in a fresh process;
- the Ray backend (local Ray, 2 CPUs) against the local backend, Ray start-up excluded.
Times are the best and median of ``--repeat`` runs; the load average is printed, since the machine
may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import rollsim
from rollsim import _rollsim
from rollsim.sweeps import sweep

CHAPTER = rollsim.Scenario()  # 256 slots, 512 samples/step, 60 s steps, 2 h, lognormal lengths, fast RNG


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn, repeat: int) -> tuple[float, float, float]:
    """Best and median wall time, and the CPU time / wall time of the best run (cores kept busy)."""
    ts = []
    for _ in range(repeat):
        t, c = time.perf_counter(), cpu()
        fn()
        ts.append((time.perf_counter() - t, cpu() - c))
    best = min(ts)
    return best[0], statistics.median(t for t, _ in ts), best[1] / best[0]


MEM_CHILD = """
import json, os, resource, sys, tempfile, tracemalloc
import rollsim
from rollsim.sweeps import sweep_with_info
n, mode = int(sys.argv[1]), sys.argv[2]
chunk = int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] != "auto" else None
with tempfile.TemporaryDirectory() as d:
    sweep_with_info(rollsim.Scenario(), seeds=range(10**6, 10**6 + 200), progress=False, out=os.path.join(d, "warm"),
                    collect=False)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    res, info = sweep_with_info(rollsim.Scenario(), seeds=range(n), progress=False, threads=2, chunk_size=chunk,
                                out=None if mode == "memory" else os.path.join(d, "o"), collect=mode != "lazy")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = res.estimated_size() / 2**20 if mode != "lazy" else 0.0
    print(json.dumps({"rss_mib": (rss - base) / 1024, "heap_mib": peak / 2**20, "runs": info.runs, "ran": info.ran,
                      "frame_mib": size, "seconds": info.seconds}))
"""

MODES = {"memory": "in memory (collect)", "stream": "streamed, collect=True", "lazy": "streamed, collect=False"}


def memory_table(sizes: list[int], chunks: list[str], modes: list[str]) -> None:
    print("| runs | mode | chunk_size | peak RSS above baseline, MiB | Python heap peak, MiB | returned frame, MiB | s |")
    print("|---|---|---|---|---|---|---|")
    for chunk in chunks:
        for mode in modes if chunk == "auto" else ["lazy"]:
            for m in sizes:
                out = subprocess.run([sys.executable, "-c", MEM_CHILD, str(m), mode, chunk],
                                     capture_output=True, text=True, check=True).stdout
                r = json.loads(out.strip().splitlines()[-1])
                assert r["runs"] == r["ran"] == m
                print(f"| {m} | {MODES[mode]} | {chunk} | {r['rss_mib']:.1f} | {r['heap_mib']:.1f} | "
                      f"{r['frame_mib']:.1f} | {r['seconds']:.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--no-time", action="store_true", help="skip the timings (memory and Ray only)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory table")
    ap.add_argument("--memory-runs", default="2000,10000,30000,100000",
                    help="run counts of the memory table (comma-separated)")
    ap.add_argument("--memory-chunks", default="auto,1000",
                    help="chunk sizes of the memory table: 'auto' (default sizing: all three modes) and fixed "
                         "sizes (collect=False only)")
    ap.add_argument("--memory-modes", default="memory,stream,lazy",
                    help="modes of the memory table with default chunks: memory (no out), stream (out, collect=True), "
                         "lazy (out, collect=False)")
    a = ap.parse_args()
    n = a.runs
    print(f"# rollsim sweep benchmark: {n} runs of the chapter scenario, summary mode")
    print(f"cpus: {os.cpu_count()}, load average at start: {load()}, rollsim {rollsim.__version__}\n")
    sweep(CHAPTER, seeds=range(10**6, 10**6 + 300), progress=False)  # warm-up

    res: dict[str, float] = {}
    if not a.no_time:
        res = timings(n, a.repeat)
    if not a.no_memory:
        memory_table([int(x) for x in a.memory_runs.split(",")], a.memory_chunks.split(","), a.memory_modes.split(","))
    if not a.no_ray:
        ray_bench(n, a.repeat, res.get("mem2"))


def timings(n: int, repeat: int) -> dict[str, float]:
    print("| what | threads | best s | median s | runs/s (best) | cores busy (CPU s / wall s) |")
    print("|---|---|---|---|---|---|")
    res: dict[str, float] = {}
    dicts = [CHAPTER.to_dict()]
    index, seeds = np.zeros(n, dtype=np.int64), np.arange(n, dtype=np.uint64)
    for th in (1, 2):
        best, med, busy = timed(lambda d=dicts, t=th: _rollsim.simulate_many(d, index, seeds, t), repeat)
        res[f"raw{th}"] = best
        print(f"| engine only: one simulate_many call | {th} | {best:.2f} | {med:.2f} | {n / best:.0f} | {busy:.2f} |",
              flush=True)
    del dicts
    for th in (1, 2):
        best, med, busy = timed(lambda t=th: sweep(CHAPTER, seeds=range(n), threads=t, progress=False), repeat)
        res[f"mem{th}"] = best
        print(f"| rollsim.sweep, in memory | {th} | {best:.2f} | {med:.2f} | {n / best:.0f} | {busy:.2f} |", flush=True)
    with tempfile.TemporaryDirectory() as d:
        counter = iter(range(1000))

        def streamed() -> None:
            sweep(CHAPTER, seeds=range(n), threads=2, progress=False, out=os.path.join(d, str(next(counter))))

        best, med, busy = timed(streamed, repeat)
        res["stream2"] = best
        print(f"| rollsim.sweep, streamed to parquet | 2 | {best:.2f} | {med:.2f} | {n / best:.0f} | {busy:.2f} |",
              flush=True)

        def lazy(th: int) -> None:
            sweep(CHAPTER, seeds=range(n), threads=th, progress=False, out=os.path.join(d, str(next(counter))),
                  collect=False)

        # 1 and 2 threads alternated, so that both see the same share of a shared machine
        runs: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for _ in range(repeat):
            for th in (1, 2):
                t, c = time.perf_counter(), cpu()
                lazy(th)
                runs[th].append((time.perf_counter() - t, cpu() - c))
        for th in (1, 2):
            best = min(runs[th])
            med = statistics.median(t for t, _ in runs[th])
            res[f"lazy{th}"] = best[0]
            print(f"| rollsim.sweep, streamed, collect=False (alternated) | {th} | {best[0]:.2f} | {med:.2f} | "
                  f"{n / best[0]:.0f} | {best[1] / best[0]:.2f} |", flush=True)
        t = time.perf_counter()
        sweep(CHAPTER, seeds=range(n), threads=2, progress=False, out=os.path.join(d, "0"))
        print(f"| rollsim.sweep, resumed (all {n} done) | 2 | {time.perf_counter() - t:.2f} | | | |")
        # opening a store of 100 chunks: every chunk's manifest, checksum and parquet structure verified
        store = os.path.join(d, "scan")
        sweep(CHAPTER, seeds=range(500), chunk_size=5, progress=False, out=store)
        best, med, _ = timed(lambda: rollsim.scan_sweep(store), repeat)
        print(f"| rollsim.scan_sweep of 100 chunks (verified) | 1 | {best:.3f} | {med:.3f} | | |", flush=True)
    print(f"\nspeed-up from the second core: sweep {res['mem1'] / res['mem2']:.2f}x, streamed with collect=False "
          f"{res['lazy1'] / res['lazy2']:.2f}x, engine only {res['raw1'] / res['raw2']:.2f}x; "
          f"load average now {load()}\n")

    return res


def ray_bench(n: int, repeat: int, local2: float | None) -> None:
    try:
        import ray
    except ImportError:
        print("\nRay not installed: Ray backend not measured")
        return
    t = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - t
    sweep(CHAPTER, seeds=range(10**6, 10**6 + 200), progress=False, backend="ray")  # start workers
    best, med, _ = timed(lambda: sweep(CHAPTER, seeds=range(n), progress=False, backend="ray"), repeat)
    ray.shutdown()
    print("\n| backend | best s | median s | overhead vs local (2 threads) |\n|---|---|---|---|")
    if local2 is not None:
        print(f"| local, 2 threads | {local2:.2f} | | |")
        print(f"| ray, local cluster of 2 CPUs | {best:.2f} | {med:.2f} | {100 * (best / local2 - 1):+.0f}% |")
    else:
        print(f"| ray, local cluster of 2 CPUs | {best:.2f} | {med:.2f} | |")
    print(f"\nRay start-up (ray.init, not included above): {startup:.1f} s; load average now {load()}")


if __name__ == "__main__":
    main()
