"""A straight pure-Python reference of rollsim's model, written from the chapter's description.

This is the test oracle for the Rust engine in ``rng="python"`` mode: it draws from CPython's
``random.Random(seed)`` in the same order as the engine and applies the same rules, one event at a
time, with ``heapq``. It is deliberately plain (no cleverness) so that it can be read against the
chapter ("RL inference systems: asynchronous rollout, policy staleness and weight sync", section
"Three pipelines") and against ``rust/rollsim-core``.

Rules (shared with the engine, documented in README "The model"):

* Batch pipelines (``k`` = 0 synchronous, ``k`` = 1 one-step, ``k`` > 1 k-step off-policy): batch ``i``
  starts generating at ``max(end of batch i-1's generation, end of training step i-k-1)`` with the
  newest policy version available then; inside a batch every sample goes to the earliest free slot
  (continuous batching). Training step ``i`` starts when batch ``i`` is generated and step ``i-1`` has
  ended. Only batches whose generation starts before the horizon run; each runs to the end of its
  training step; the run ends when the last one does.
* Fully asynchronous: all slots start at t=0; a slot that frees starts a new sample with the newest
  version; finished samples queue in finish order; the trainer takes the first ``batch_size`` of them
  when it is idle. With a cap, queued samples whose staleness (current version - start version)
  exceeds the cap are dropped. Events are processed until the clock reaches the horizon (the event
  that crosses it is the last one processed). At equal times the trainer's event comes first.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field


@dataclass
class RefResult:
    steps: int
    end_s: float
    busy_s: float
    # per sample, in start order
    length: list[float] = field(default_factory=list)
    start: list[float] = field(default_factory=list)
    finish: list[float] = field(default_factory=list)  # math.nan when still in flight at the end
    version: list[int] = field(default_factory=list)
    trained_step: list[int] = field(default_factory=list)  # -1 when not trained
    dropped: list[bool] = field(default_factory=list)
    # per training step
    step_start: list[float] = field(default_factory=list)
    step_end: list[float] = field(default_factory=list)
    slots: int = 0

    def staleness(self) -> list[int]:
        return [s - v for s, v in zip(self.trained_step, self.version) if s >= 0]

    def utilization(self) -> float:
        return self.busy_s / (self.slots * self.end_s)


def lognormal_length(rng: random.Random, mu: float, sigma: float, max_tokens: float) -> float:
    return min(rng.lognormvariate(mu, sigma), max_tokens)


def _new_sample(res: RefResult, length: float, start: float, finish: float, version: int) -> int:
    res.length.append(length)
    res.start.append(start)
    res.finish.append(finish)
    res.version.append(version)
    res.trained_step.append(-1)
    res.dropped.append(False)
    return len(res.length) - 1


def batch_pipeline(slots, speed, batch, train_s, horizon, draw, k) -> RefResult:
    """Synchronous (k=0) and k-step off-policy pipelines; ``draw()`` returns one length in tokens."""
    res = RefResult(steps=0, end_s=0.0, busy_s=0.0, slots=slots)
    gen_end_prev = 0.0
    train_end: list[float] = []
    i = 0
    while True:
        gate = train_end[i - k - 1] if i - k - 1 >= 0 else 0.0
        g = max(gen_end_prev, gate)
        if g >= horizon:
            break
        version = sum(1 for te in train_end if te <= g)
        free = [g] * slots
        ids = []
        for _ in range(batch):
            s = heapq.heappop(free)
            n = draw()
            d = n / speed
            heapq.heappush(free, s + d)
            ids.append(_new_sample(res, n, s, s + d, version))
            res.busy_s += d
        gen_end = max(free)
        ts = max(gen_end, train_end[i - 1] if i > 0 else 0.0)
        for sid in ids:
            res.trained_step[sid] = i
        res.step_start.append(ts)
        res.step_end.append(ts + train_s)
        train_end.append(ts + train_s)
        gen_end_prev = gen_end
        i += 1
    res.steps = i
    res.end_s = train_end[-1] if train_end else 0.0
    return res


def fully_async(slots, speed, batch, train_s, horizon, draw, cap) -> RefResult:
    res = RefResult(steps=0, end_s=0.0, busy_s=0.0, slots=slots)
    running = []  # (finish, sample id)
    for _ in range(slots):
        n = draw()
        sid = _new_sample(res, n, 0.0, n / speed, 0)
        running.append((n / speed, sid))
    heapq.heapify(running)
    version, t, next_train, ready = 0, 0.0, None, []
    while t < horizon:
        finish, sid = running[0]
        if next_train is not None and next_train <= finish:
            t, version, next_train = next_train, version + 1, None
            res.steps += 1
        else:
            heapq.heappop(running)
            t = finish
            ready.append(sid)
            n = draw()
            nid = _new_sample(res, n, t, t + n / speed, version)
            heapq.heappush(running, (t + n / speed, nid))
        if cap is not None:
            keep = []
            for sid in ready:
                if version - res.version[sid] > cap:
                    res.dropped[sid] = True
                else:
                    keep.append(sid)
            ready = keep
        if next_train is None and len(ready) >= batch:
            taken, ready = ready[:batch], ready[batch:]
            for sid in taken:
                res.trained_step[sid] = version
            res.step_start.append(t)
            res.step_end.append(t + train_s)
            next_train = t + train_s
    res.end_s = t
    for sid in range(len(res.length)):
        end = min(res.finish[sid], t)
        res.busy_s += max(0.0, end - res.start[sid])
        if res.finish[sid] > t:
            res.finish[sid] = math.nan
    return res


def chapter(pipeline: str, cap=None, seed=0, slots=256, speed=30.0, batch=512, train_s=60.0,
            horizon=7200.0, mu=7.6, sigma=1.0, max_tokens=16384.0) -> RefResult:
    rng = random.Random(seed)

    def draw():
        return lognormal_length(rng, mu, sigma, max_tokens)

    if pipeline == "sync":
        return batch_pipeline(slots, speed, batch, train_s, horizon, draw, 0)
    if pipeline == "one_step":
        return batch_pipeline(slots, speed, batch, train_s, horizon, draw, 1)
    if pipeline.startswith("k"):
        return batch_pipeline(slots, speed, batch, train_s, horizon, draw, int(pipeline[1:]))
    return fully_async(slots, speed, batch, train_s, horizon, draw, cap)
