"""Engine speed against Python: rollsim (Rust), our plain-Python reference model (tests/reference.py),
a minimal heapq loop and SimPy; with ``--chapter PATH``, also the chapter's own Python code.

All run the fully-asynchronous scenario of the chapter "RL inference systems: asynchronous rollout,
policy staleness and weight sync" (256 slots, 30 tokens/s, batch 512, 60 s steps, lognormal(7.6, 1.0)
lengths truncated at 16384) in one process, one after the other, and the script prints events per
second (an event = a sample completion or the end of a training step; best of ``--repeat`` runs) and
the ratio of each to our Python reference (``tests/reference.py``, uncapped). Nothing outside the repository is needed;
``--chapter PATH`` reads the chapter's text (its code is not copied into the repository) and adds
rows for its ``fully_async``; ``--memory`` prints the peak memory of a 400-hour chapter run with
per-sample frames (growth of peak RSS per sample started, in a fresh interpreter; Linux).
Usage: ``.venv/bin/python benches/compare.py [--hours 200] [--python-hours 20] [--chapter PATH]
[--memory]``.
"""

from __future__ import annotations

import argparse
import heapq
import os
import random
import subprocess
import sys
import time

import rollsim
from rollsim import _rollsim

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import reference  # noqa: E402  (our plain-Python reference model)

SLOTS, SPEED, BATCH, TRAIN = 256, 30.0, 512, 60.0


def best_of(fn, repeat):
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def heapq_loop(horizon, cap=None):
    """A minimal heapq loop of the same model (what a careful Python user would write)."""
    rng = random.Random(0)
    draw = lambda: min(rng.lognormvariate(7.6, 1.0), 16384.0)  # noqa: E731
    running = [(draw() / SPEED, 0) for _ in range(SLOTS)]
    heapq.heapify(running)
    t, version, next_train, ready, events = 0.0, 0, None, [], 0
    while t < horizon:
        finish, ver = running[0]
        if next_train is not None and next_train <= finish:
            t, version, next_train = next_train, version + 1, None
            if cap is not None:
                ready = [v for v in ready if version - v <= cap]
        else:
            t = finish
            heapq.heapreplace(running, (t + draw() / SPEED, version))
            if cap is None or version - ver <= cap:
                ready.append(ver)
        events += 1
        if next_train is None and len(ready) >= BATCH:
            ready = ready[BATCH:]
            next_train = t + TRAIN
    return events


def simpy_model(horizon):
    import simpy

    env = simpy.Environment()
    rng = random.Random(0)
    state = {"version": 0, "ready": 0, "events": 0}
    batch_ready = env.event()
    holder = {"ev": batch_ready}

    def slot():
        while True:
            yield env.timeout(min(rng.lognormvariate(7.6, 1.0), 16384.0) / SPEED)
            state["events"] += 1
            state["ready"] += 1
            if state["ready"] >= BATCH and not holder["ev"].triggered:
                holder["ev"].succeed()

    def trainer():
        while True:
            if state["ready"] < BATCH:
                holder["ev"] = env.event()
                yield holder["ev"]
            state["ready"] -= BATCH
            yield env.timeout(TRAIN)
            state["version"] += 1
            state["events"] += 1

    for _ in range(SLOTS):
        env.process(slot())
    env.process(trainer())
    env.run(until=horizon)
    return state["events"]


def chapter_fully_async(path, horizon):
    """The chapter's own fully_async(), extracted from the chapter text at run time."""
    src = open(path, encoding="utf-8").read()
    start = src.index("import heapq")
    code = src[start:src.index("\nfor name, res in", start)]
    ns: dict = {}
    exec(code.replace("HOURS * 3600", str(horizon)), ns)
    draw = ns["length"]
    calls = [0]

    def counting_length(rng):
        calls[0] += 1
        return draw(rng)

    ns["length"] = counting_length  # fully_async looks `length` up in its globals at call time

    def run(cap):
        calls[0] = 0
        steps = ns["fully_async"](cap)[0]
        return calls[0] - SLOTS + steps  # sample completions (each starts a new draw) + training steps

    return run


MEMORY_SCRIPT = """
import rollsim

def hwm_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))

before = hwm_kb()
res = rollsim.simulate(rollsim.Scenario(horizon_s=400 * 3600.0), record="samples")
n = res.summary["samples_started"]
print(f"peak memory with per-sample frames, 400 h chapter run: {n} samples, "
      f"{(hwm_kb() - before) * 1024 / n:.1f} bytes per sample started")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hours", type=float, default=200.0, help="simulated hours for rollsim")
    ap.add_argument("--python-hours", type=float, default=20.0, help="simulated hours for the Python engines")
    ap.add_argument("--chapter", metavar="PATH", default=None,
                    help="the chapter's text: adds rows for its own Python fully_async (default: not run)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per row; the best time counts")
    ap.add_argument("--memory", action="store_true",
                    help="also print the peak memory per sample of a 400-hour run with frames (Linux)")
    a = ap.parse_args()
    if a.chapter is not None and not os.path.isfile(a.chapter):
        ap.error(f"--chapter: no such file: {a.chapter!r}")
    H, h = a.hours * 3600, a.python_hours * 3600
    rows = []

    for rng in ("fast", "python"):
        for record in ("summary", "samples"):
            sc = rollsim.Scenario(horizon_s=H, rng=rng)
            dt, res = best_of(lambda sc=sc, record=record: rollsim.simulate(sc, record=record), a.repeat)
            rows.append((f"rollsim rng={rng} record={record}", res.summary["events"], dt))
    sc = rollsim.Scenario(horizon_s=H, pipeline=rollsim.FullyAsync(2))
    dt, res = best_of(lambda: rollsim.simulate(sc, record="summary"), a.repeat)
    rows.append(("rollsim cap=2 record=summary", res.summary["events"], dt))
    # the general streaming engine on the same scenario (groups, policies, update modes available),
    # forced through the extension's own switch (rollsim.simulate picks the fast path here)
    d = rollsim.Scenario(horizon_s=H).to_dict()
    dt, out = best_of(lambda: _rollsim.simulate(d, record_samples=False, general_engine=True), a.repeat)
    rows.append(("rollsim general engine, record=summary", out["summary"]["events"], dt))
    sc = rollsim.presets.areal(2, scenario=rollsim.Scenario(horizon_s=H, group_size=8, prompt_tokens=500.0,
                                                             prefill_tokens_per_s=10000.0))
    dt, res = best_of(lambda: rollsim.simulate(sc, record="summary"), a.repeat)
    rows.append(("rollsim AReaL preset (groups of 8, prefill)", res.summary["events"], dt))
    # batched decoding: instances of 32 slots, 1 % slower per extra sequence on board
    sc = rollsim.Scenario(horizon_s=H, slots_per_instance=32, decode_slowdown_per_seq=0.01)
    dt, res = best_of(lambda: rollsim.simulate(sc, record="summary"), a.repeat)
    rows.append(("rollsim batched decoding (32 per instance)", res.summary["events"], dt))
    sc = sc.replace(slots_per_instance=256, decode_slowdown_per_seq=0.004)
    dt, res = best_of(lambda: rollsim.simulate(sc, record="summary"), a.repeat)
    rows.append(("rollsim batched decoding (256 per instance)", res.summary["events"], dt))
    sc = rollsim.Scenario(horizon_s=H, slots_per_instance=32, decode_slowdown_per_seq=0.01, kv_cache_tokens=160000.0)
    dt, res = best_of(lambda: rollsim.simulate(sc, record="summary"), a.repeat)
    rows.append(("rollsim batched (32), KV 160K tokens/instance", res.summary["events"], dt))

    dt, n = best_of(lambda: heapq_loop(h), a.repeat)
    rows.append(("python heapq loop", n, dt))
    dt, n = best_of(lambda: heapq_loop(h, cap=2), a.repeat)
    rows.append(("python heapq loop cap=2", n, dt))
    for cap in (None, 2):
        dt, r = best_of(lambda cap=cap: reference.chapter("async", cap, horizon=h), a.repeat)
        rows.append((f"python reference (tests/reference.py) cap={cap}", sum(1 for f in r.finish if f == f) + r.steps,
                     dt))
    try:
        dt, n = best_of(lambda: simpy_model(h), a.repeat)
        rows.append(("simpy", n, dt))
    except ImportError:
        print("simpy not installed: pip install simpy", file=sys.stderr)
    if a.chapter is not None:
        fa = chapter_fully_async(a.chapter, h)
        for cap in (None, 2):
            dt, n = best_of(lambda cap=cap: fa(cap), a.repeat)
            rows.append((f"chapter's python fully_async(cap={cap})", n, dt))

    base = {name: n / dt for name, n, dt in rows}
    ref = "python reference (tests/reference.py) cap=None"
    ref_rate = base[ref]
    print(f"ratios against: {ref}")
    print(f"{'engine':52s} {'events':>10s} {'seconds':>9s} {'M events/s':>11s} {'ratio':>13s}")
    for name, n, dt in rows:
        print(f"{name:52s} {n:10d} {dt:9.4f} {n / dt / 1e6:11.3f} {n / dt / ref_rate:13.1f}")
    if a.memory:
        print(subprocess.run([sys.executable, "-c", MEMORY_SCRIPT], capture_output=True, text=True,
                             check=True).stdout.strip())


if __name__ == "__main__":
    main()
