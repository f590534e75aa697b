"""A step-level replica of vLLM V1's scheduler for a one-instance benchmark (every request waiting at
t = 0), priced with rollsim's serving step (:func:`rollsim.hardware.serving.step_time`): a reference
for how much the engine's simplified admission in :func:`rollsim.hardware.serving_benchmark` moves a
prediction.

It follows ``vllm/v1/core/sched/scheduler.py`` (``Scheduler.schedule``, vLLM v0.11):

* a token budget of ``max_num_batched_tokens`` per step; running requests first, in admission
  order, each asking for the tokens it has not computed yet (1 when decoding), capped by the budget;
* a running request whose new tokens need KV blocks that are not free preempts the last running
  request (``self.running.pop()``), which frees its blocks, loses its computed tokens
  (``num_computed_tokens = 0``) and goes to the front of the waiting queue; if it is itself, it
  waits;
* waiting requests are admitted, in order, only in a step without preemption, while the budget
  lasts and fewer than ``max_num_seqs`` run, when the blocks of the chunk scheduled now fit (not the
  whole prompt: the difference from the engine);
* a request samples a token in the step that computes its last known token.

Not replicated: prefix caching (a re-admitted request finding its freed blocks still cached), the
null block, speculative decoding. 16-token blocks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rollsim.hardware import serving


@dataclass
class _Request:
    prompt: int
    out: int
    computed: int = 0
    generated: int = 0
    blocks: int = 0

    @property
    def known(self) -> int:
        return self.prompt + self.generated


def makespan_s(model: str, gpu: str, *, requests: int, input_tokens: int, output_tokens: int, kv_tokens: float,
               max_num_batched_tokens: int = 8192, max_num_seqs: int = 1024, block: int = 16) -> dict[str, float]:
    """Seconds until the last of ``requests`` identical requests finishes, and the steps,
    preemptions and recomputed tokens on the way."""
    free = int(kv_tokens // block)
    waiting = [_Request(input_tokens, output_tokens) for _ in range(requests)]
    running: list[_Request] = []
    t, steps, preemptions, recomputed, done = 0.0, 0, 0, 0, 0
    while done < requests:
        budget = max_num_batched_tokens
        scheduled: list[tuple[_Request, int]] = []
        preempted = False
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            k = min(r.known - r.computed, budget)
            while True:
                need = math.ceil((r.computed + k) / block) - r.blocks
                if need <= free:
                    free -= max(0, need)
                    r.blocks += max(0, need)
                    break
                victim = running.pop()
                free += victim.blocks
                recomputed += victim.computed
                victim.blocks, victim.computed = 0, 0
                waiting.insert(0, victim)
                preemptions += 1
                preempted = True
                if victim is r:
                    break
            if r not in running:
                continue
            scheduled.append((r, k))
            budget -= k
            i += 1
        if not preempted:
            while waiting and budget > 0 and len(running) < max_num_seqs:
                r = waiting[0]
                k = min(r.known - r.computed, budget)
                need = math.ceil((r.computed + k) / block) - r.blocks
                if need > free:
                    break
                free -= need
                r.blocks += need
                running.append(waiting.pop(0))
                scheduled.append((r, k))
                budget -= k
        decoding = [(r, k) for r, k in scheduled if r.generated > 0 and r.computed == r.known - 1]
        prefill = [(r, k) for r, k in scheduled if not (r.generated > 0 and r.computed == r.known - 1)]
        b = len(decoding)
        ctx = sum(r.known for r, _ in decoding) / b if b else 0.0
        p = sum(k for _, k in prefill)
        pctx = sum(k * (r.computed + k / 2) for r, k in prefill) / p if p else 0.0
        t += serving.step_time(model, gpu, batch=b, context_tokens=ctx, prefill_tokens=p,
                               prefill_context_tokens=pctx)["total_s"]
        steps += 1
        for r, k in scheduled:
            r.computed += k
            if r.computed == r.known:
                r.generated += 1
                if r.generated >= r.out:
                    running.remove(r)
                    free += r.blocks
                    r.blocks = 0
                    done += 1
    return {"makespan_s": t, "steps": float(steps), "preemptions": float(preemptions),
            "tokens_recomputed": float(recomputed)}
