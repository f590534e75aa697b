"""A serving benchmark predicted by simulating the engine instance: ``requests`` requests of
``input_tokens`` prompt tokens and ``output_tokens`` answer tokens, all submitted at t = 0 (``vllm
bench serve`` with no request rate), run by rollsim's engine as one batch on the deployment's
instances; the makespan gives the throughput.

The instance is the one :meth:`rollsim.hardware.Deployment.scenario` builds, with

* the KV capacity from memory (:func:`rollsim.hardware.serving.kv_capacity_tokens`) and the
  engine's KV preemption: when a running sequence needs KV that is not there, the most recently
  admitted one is preempted, loses its KV and is prefilled again from scratch when it is re-admitted
  (vLLM V1 recomputes a preempted request: ``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``
  pops the last running request, frees its blocks and sets ``num_computed_tokens = 0``);
* ``max_num_seqs`` running sequences at most;
* chunked prefill sharing the steps with decoding (``prefill_mode="shared"``): decode tokens
  first, prompt chunks in the rest of ``max_num_batched_tokens``, whose default is the engine's
  for the GPU (:func:`default_max_num_batched_tokens`);
* the decode step growing with its sequences' contexts (``context="per_token"``).

What the simulated engine does not do as vLLM does: it admits a waiting request when its whole
prompt (+ 1 token) fits in the free KV, where vLLM V1 admits it when its first chunk's blocks fit;
prefix caching (a re-admitted request finding some of its blocks still cached) is not modelled.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import DeploymentWarning, invalid
from rollsim.lengths import Empirical, LogNormal

from .serving import default_max_num_batched_tokens, default_max_num_seqs

__all__ = ["serving_benchmark", "default_max_num_batched_tokens", "default_max_num_seqs"]

def serving_benchmark(deployment: Any, *, requests: int, input_tokens: float,
                      output_tokens: float | LogNormal | Empirical, max_num_batched_tokens: int | None = None,
                      context: str = "per_token", seed: int = 0) -> dict[str, float]:
    """Simulate a serving benchmark on a deployment's rollout instances: every request submitted at
    t = 0, makespan and throughputs as ``vllm bench serve`` reports them.

    Parameters
    ----------
    deployment : rollsim.hardware.Deployment
        The model, GPU, engine, ``rollout_tp``, ``gpu_memory_utilization`` and ``max_num_seqs``;
        its ``rollout_gpus / rollout_tp`` instances share the requests (the least loaded first).
        Without its own ``max_num_seqs``, vLLM's default for the GPU (:func:`default_max_num_seqs`).
    requests : int
        Requests, >= 1 (``--num-prompts``).
    input_tokens : float
        Prompt tokens of each request, >= 0 (``--random-input-len``; for a ShareGPT-like mix, the
        mean prompt).
    output_tokens : float | LogNormal | Empirical
        Answer tokens of each request (``--random-output-len``), or their distribution (a
        ShareGPT-like mix).
    max_num_batched_tokens : int, optional
        Tokens per engine step; default :func:`default_max_num_batched_tokens` for the engine and GPU.
    context : "per_token" | "mean"
        How the decode step depends on the context: as each sequence grows (default), or at the
        mean context (:meth:`rollsim.hardware.Deployment.scenario`).
    seed : int
        Seed of the answer lengths when ``output_tokens`` is a distribution.

    Returns
    -------
    dict[str, float]
        ``makespan_s`` (the last answer's end), ``requests_per_s``, ``output_tokens_per_s``,
        ``total_tokens_per_s`` ((prompt + answer tokens) / makespan), ``tokens_recomputed``
        (prompt and answer tokens prefilled again after preemptions), ``preemptions``,
        ``kv_cache_tokens`` (per instance), ``max_num_batched_tokens``.

    Raises
    ------
    ScenarioError
        If a field is out of range, or one request (prompt + longest answer + 1) does not fit an
        instance's KV cache.
    """
    from rollsim.pipelines import Synchronous
    from rollsim.simulation import simulate

    from .deployment import Deployment

    if not isinstance(deployment, Deployment):
        raise invalid("deployment", f"must be a rollsim.hardware.Deployment, got {type(deployment).__name__}")
    seqs = default_max_num_seqs(deployment.engine, deployment.accelerator)
    if deployment.max_num_seqs is None and seqs is not None:
        deployment = replace(deployment, max_num_seqs=seqs)
    n = _check.integer("requests", requests, 1, 2**24)
    pt = _check.number("input_tokens", input_tokens, allow_zero=True)
    if isinstance(output_tokens, LogNormal | Empirical):
        lengths = output_tokens
    else:
        lengths = Empirical(np.array([_check.number("output_tokens", output_tokens)]))
    budget = (default_max_num_batched_tokens(deployment.engine, deployment.accelerator) if max_num_batched_tokens is None
              else _check.integer("max_num_batched_tokens", max_num_batched_tokens, 2, 2**24))
    # one synchronous batch of every request; the trainer's step outlasts the horizon, so no second batch
    with warnings.catch_warnings():  # serving only: the trainer is not run
        warnings.simplefilter("ignore", DeploymentWarning)
        sc = deployment.scenario(lengths=lengths, prompts_per_step=n, prompt_tokens=pt, pipeline=Synchronous(),
                                 prefill_mode="shared", max_num_batched_tokens=budget, context=context,
                                 horizon_s=1e12, train_step_s=1e12, seed=seed)
    r = simulate(sc)
    makespan = float(r.steps["start_s"][0])
    out = float(r.steps["tokens"][0])
    return {
        "makespan_s": makespan,
        "requests_per_s": n / makespan,
        "output_tokens_per_s": out / makespan,
        "total_tokens_per_s": (n * pt + out) / makespan,
        "tokens_recomputed": float(r.summary["tokens_recomputed"]),
        "preemptions": float(r.summary["preemptions"]),
        "kv_cache_tokens": float(sc.kv_cache_tokens) if sc.kv_cache_tokens is not None else math.inf,
        "max_num_batched_tokens": float(budget),
    }
