"""Batched-decoding scenarios whose results are pinned bit for bit (tests/data/batched_goldens.json):
summary values and a digest of every frame, recorded with the engine before the per-instance event
queues (rollsim 0.1.0, commit 2be0ce7). ``python tests/batched_cases.py --write`` re-records them.

Lengths are ``Empirical`` (the DeepSeek-R1 histogram) so the values are the same on every platform
(see docs/determinism.md)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys

import polars as pl

import rollsim
from rollsim import FullyAsync, OffPolicy, OneStepAsync, Scenario, Synchronous

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDENS = os.path.join(HERE, "data", "batched_goldens.json")


def cases() -> dict[str, Scenario]:
    ds = rollsim.datasets.deepseek_r1_serving(max_tokens=16384)
    base = Scenario(rollout_slots=64, decode_tokens_per_s=40.0, batch_size=128, train_step_s=90.0,
                    horizon_s=4 * 3600.0, lengths=ds, slots_per_instance=16, decode_slowdown_per_seq=0.01, seed=3)
    grouped = base.replace(group_size=4, prompt_tokens=500.0, prefill_tokens_per_s=20000.0)
    return {
        "sync": base.replace(pipeline=Synchronous()),
        "one_step": base.replace(pipeline=OneStepAsync()),
        "fully_async_cap2": base.replace(pipeline=FullyAsync(max_staleness=2)),
        "fully_async_p1": base.replace(slots_per_instance=1, decode_slowdown_per_seq=0.5,
                                       pipeline=FullyAsync(max_staleness=1)),
        "fully_async_p64_python": base.replace(slots_per_instance=64, decode_slowdown_per_seq=0.004, rng="python"),
        "groups4_abort_drop": grouped.replace(pipeline=FullyAsync(on_update="abort_drop")),
        "groups4_keep_recompute": grouped.replace(pipeline=FullyAsync(on_update="keep_recompute", max_staleness=3)),
        "groups4_abort_resubmit": grouped.replace(pipeline=FullyAsync(on_update="abort_resubmit", admission_eta=1)),
        "groups4_wait": grouped.replace(pipeline=FullyAsync(on_update="wait", batch_order="oldest_first")),
        "groups4_keep_stale_lag": grouped.replace(pipeline=FullyAsync(on_update="keep_stale", max_lag_samples=200)),
        "prefill_no_sharing": grouped.replace(prefix_sharing=False, pipeline=FullyAsync(max_staleness=2)),
        "over_sampling_keep_partial": grouped.replace(pipeline=OffPolicy(1, over_sampling=0.5, keep_partial=True)),
        "over_sampling_abort": grouped.replace(pipeline=OffPolicy(0, over_sampling=math.inf)),
    }


def digest(df: pl.DataFrame | None) -> str | None:
    if df is None:
        return None
    h = hashlib.sha256()
    for name in df.columns:
        s = df[name]
        h.update(name.encode())
        if s.dtype.is_numeric():
            h.update(s.cast(pl.Float64).fill_null(float("nan")).to_numpy().tobytes())
        else:
            h.update("\x00".join(s.cast(pl.String).fill_null("<null>").to_list()).encode())
    return h.hexdigest()


def record(sc: Scenario) -> dict:
    res = rollsim.simulate(sc)
    summary = {k: (v if not isinstance(v, float) or math.isfinite(v) else repr(v)) for k, v in res.summary.items()}
    return {"summary": summary, "samples": digest(res.samples), "steps": digest(res.steps),
            "segments": digest(res.segments)}


def main() -> None:
    import warnings
    warnings.simplefilter("ignore")
    out = {name: record(sc) for name, sc in cases().items()}
    path = sys.argv[2] if len(sys.argv) > 2 else GOLDENS
    if "--write" in sys.argv:
        with open(path, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
    print(json.dumps({k: (v["summary"]["events"], v["samples"][:12]) for k, v in out.items()}, indent=1))


if __name__ == "__main__":
    main()
