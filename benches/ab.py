"""Side-by-side speed of two builds of the engine on the rows of ``benches/examples/rows.rs``.

On a shared machine timings are noisy: this runs the two ``rows`` binaries alternately, row by row,
``--rounds`` times, keeps the best (least disturbed) CPU time of each and prints both rates and
their ratio. Build each checkout with
``cargo build --release -p rollsim-benches --example rows`` and pass the binaries:
``python benches/ab.py OLD/target/release/examples/rows NEW/target/release/examples/rows``.
"""

from __future__ import annotations

import argparse
import subprocess


def run(binary: str, hours: float, row: str) -> dict[str, tuple[int, float]]:
    out = subprocess.run([binary, str(hours), "1", row], capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        parts = line.rsplit(None, 3)
        rows[parts[0].strip()] = (int(parts[1]), float(parts[2]))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--hours", type=float, default=200.0)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rows", default="", help="only rows containing this text")
    a = ap.parse_args()
    old_rows = set(run(a.old, 1.0, a.rows))
    names = [n for n in run(a.new, 1.0, a.rows) if n in old_rows]  # rows both builds have
    best: dict[tuple[str, str], float] = {}
    events: dict[str, int] = {}
    for _ in range(a.rounds):
        for name in names:
            for label, binary in (("old", a.old), ("new", a.new)):
                n, dt = run(binary, a.hours, name)[name]
                events[name] = n
                best[label, name] = min(best.get((label, name), float("inf")), dt)
    print(f"{'row':42s} {'events':>9s} {'old M/s':>8s} {'new M/s':>8s} {'new/old':>8s}")
    for name in names:
        o, n = events[name] / best["old", name] / 1e6, events[name] / best["new", name] / 1e6
        print(f"{name:42s} {events[name]:9d} {o:8.2f} {n:8.2f} {n / o:8.2f}")


if __name__ == "__main__":
    main()
