"""Weight-sync estimator benchmark: 10,000 cluster estimates with a calibrated stack.

    python benches/sync_bench.py [--n 10000] [--repeat 3] [--loop 200]

Reports (markdown on stdout) the wall time of ``rollsim.sync.estimate_stack_many`` for ``--n``
estimates (checkpoint-engine on DeepSeek-V3 FP8, 16 x TP16 on H20, sweeping instances, bucket size
and NIC bandwidth together), the time of ``--loop`` single ``estimate_stack`` calls scaled to ``--n``,
and their ratio. Times are the best of ``--repeat`` runs; the load average is printed, since the
machine may be shared. The target: ``--n`` = 10,000 in under one second.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np

from rollsim.sync import STACKS, estimate_stack, estimate_stack_many
from rollsim.sync.validation import ROWS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--loop", type=int, default=200)
    a = ap.parse_args()
    row = next(r for r in ROWS if r.setting.startswith("DeepSeek-V3.1 FP8, 256xH20"))
    st = STACKS["checkpoint-engine"]
    rng = np.random.default_rng(0)
    inst = rng.integers(1, 65, a.n).astype(float)
    bucket = rng.uniform(0.25, 8.0, a.n) * 2**30
    nic = rng.uniform(12.5e9, 50e9, a.n)
    estimate_stack_many(row.cluster, st, instances=inst[:10], bucket_bytes=bucket[:10], nic_bytes_per_s=nic[:10])
    best_many = min(_time(lambda: estimate_stack_many(row.cluster, st, instances=inst, bucket_bytes=bucket,
                                                      nic_bytes_per_s=nic)) for _ in range(a.repeat))

    def loop() -> None:
        for i in range(a.loop):
            hw = dataclasses.replace(row.cluster.hardware, nic_bytes_per_s=float(nic[i]))
            c = row.cluster.replace(infer=dataclasses.replace(row.cluster.infer, instances=int(inst[i])), hardware=hw)
            estimate_stack(c, st.replace(bucket_bytes=float(bucket[i])))

    best_loop = min(_time(loop) for _ in range(a.repeat)) * a.n / a.loop
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| what | estimates | seconds |")
    print("|---|---:|---:|")
    print(f"| estimate_stack_many (vectorized) | {a.n:,} | {best_many:.3f} |")
    print(f"| estimate_stack, one call each ({a.loop} timed, scaled) | {a.n:,} | {best_loop:.3f} |")
    print()
    print(f"ratio (loop / vectorized): {best_loop / best_many:.0f}x; target {a.n:,} in < 1 s: "
          f"{'met' if best_many < 1.0 else 'missed'}")


def _time(f) -> float:
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
