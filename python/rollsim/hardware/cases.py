"""The verl validation cases of :mod:`rollsim.validation` rebuilt from a deployment (``rollsim validate
--resources --case NAME``)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import polars as pl

from rollsim.lengths import LogNormal

from . import serving

__all__ = ["deployment_cases"]


def deployment_cases(names: list[str] | None = None, *, context: str = "mean") -> pl.DataFrame:
    """The verl cases of :mod:`rollsim.validation` rebuilt from a :class:`~rollsim.hardware.Deployment`
    (Qwen2.5-7B on H20, one vLLM instance of TP 1 per rollout GPU, ``max_num_seqs`` 1024) instead of
    the dense roofline: each scenario's decoding becomes the deployment's ``decode_throughput_table``
    (at the case's mean context) and ``kv_cache_tokens``, with 200-token prompts and every recompute
    (``keep_recompute`` at a weight update, KV preemption) prefilled by the engine in the steps an
    instance shares with decoding (``prefill_mode="shared"`` at the deployment's
    :meth:`~rollsim.hardware.Deployment.prefill_tokens_per_s`, 8,192 tokens a step).

    The answer lengths stay fitted (the publications give no length statistics): the mean is refitted
    so that the synchronous run generates in the published time with the new decoding
    (:func:`rollsim.validation.fit_mean_tokens`), and the prediction is made with it. The trainer keeps
    the published seconds. Slow (a fit per case: about 15 s each).

    Parameters
    ----------
    names : list of str, optional
        Case names (default: every ``verl_*`` case of ``rollsim.validation.CASE_NAMES``).
    context : "mean" | "per_token"
        ``"mean"`` (default): the table at the mean context. ``"per_token"``: the table without
        context and ``decode_s_per_context_token`` from the deployment
        (:meth:`~rollsim.hardware.Deployment.context_s_per_token`), so that answers slow as they grow.

    Returns
    -------
    polars.DataFrame
        ``case, metric, measured, predicted_roofline, error_roofline, predicted_deployment,
        error_deployment, mean_tokens_roofline, mean_tokens_deployment``.

    Raises
    ------
    ScenarioError
        For an unknown case name or one that is not a verl case.
    """
    from rollsim import validation as V
    from rollsim.errors import invalid

    from .deployment import Deployment

    names = names or [n for n in V.CASE_NAMES if n.startswith("verl")]
    if context not in ("mean", "per_token"):
        raise invalid("context", f"must be 'mean' or 'per_token', got {context!r}")
    per_token = context == "per_token"
    d = Deployment(model="Qwen2.5-7B", gpu="H20", rollout_gpus=1, rollout_tp=1, max_num_seqs=1024)
    prompt = 200.0

    def swap(sc: Any, mean: float) -> Any:
        lengths = V._lengths(mean, sc.lengths.max_tokens)
        ctx = prompt + lengths.mean_tokens() / 2
        table = serving.decode_throughput_table(d.spec, d.accelerator, context_tokens=0.0 if per_token else ctx,
                                                max_seqs=sc.slots_per_instance)
        # as Deployment.scenario: the prompts and every recompute (keep_recompute at a weight update, KV
        # preemption) prefilled by the engine in the steps it shares with decoding, at the instance's rate
        return sc.replace(decode_tokens_per_s=table[0][1], decode_slowdown_per_seq=0.0, decode_throughput_table=table,
                          kv_cache_tokens=float(int(d.kv_capacity_tokens(context_tokens=ctx))), lengths=lengths,
                          decode_s_per_context_token=d.context_s_per_token(ctx) if per_token else 0.0,
                          prompt_tokens=prompt, prefill_mode="shared", max_num_batched_tokens=8192,
                          prefill_tokens_per_s=d.prefill_tokens_per_s(prompt))

    recs = []
    for n in names:
        if not n.startswith("verl"):
            raise invalid("names", f"deployment rebuilds cover the verl cases (Qwen2.5-7B on H20), got {n!r}")
        c = V.case(n, field="names")
        old = V.validate([n])["predicted"][0]
        m0 = float(c.sync.lengths.mean_tokens())
        ln = c.sync.lengths
        assert isinstance(ln, LogNormal)
        mean0 = math.exp(ln.mu + ln.sigma ** 2 / 2)
        assert c.measured_sync_gen_s is not None
        mean = V.fit_mean_tokens(swap(c.sync, mean0), c.measured_sync_gen_s)
        case = replace(c, sync=swap(c.sync, mean), run=swap(c.run, mean))
        new = case.predict()["predicted"]
        recs.append({"case": n, "metric": c.metric, "measured": c.measured, "predicted_roofline": old,
                     "error_roofline": old / c.measured - 1, "predicted_deployment": new,
                     "error_deployment": new / c.measured - 1, "mean_tokens_roofline": m0,
                     "mean_tokens_deployment": float(case.sync.lengths.mean_tokens())})
    return pl.DataFrame(recs)
