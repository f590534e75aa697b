"""Per-step metrics of a run simulated by rollsim (:func:`synthetic_metrics`), with a framework's
metric names, for checking :func:`calibrate`."""

from __future__ import annotations


import numpy as np
import polars as pl

from rollsim.errors import invalid
from rollsim.lengths import LengthDrift, LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, Synchronous
from rollsim.scenario import Scenario

from ._metrics import _AREAL_PROMPT, _AREAL_SEQ, _framework_names, FRAMEWORK_METRICS, _REQUIRED
from ._simulate import _streamed_rows


#: Column names :func:`synthetic_metrics` writes for each framework whose metrics give every required
#: column (OpenRLHF logs no longest answer: not one of them): generic column -> the framework's metric,
#: the first name :data:`FRAMEWORK_METRICS` reads; AReaL logs sequence lengths with the prompt
#: (``ppo_actor/seq_len/*``, ``ppo_actor/prompt_len/avg``) and no step total.
_SYNTHETIC_NAMES: dict[str, dict[str, str]] = {
    fw: {gen: alts[0][0] for gen, alts in names.items()} for fw, names in FRAMEWORK_METRICS.items()
    if all(_framework_names(fw, gen) for gen in _REQUIRED)}


def _named(df: pl.DataFrame, framework: str, prompt_tokens: float) -> pl.DataFrame:
    """Generic synthetic columns renamed as ``framework`` logs them (:data:`_SYNTHETIC_NAMES`)."""
    if framework == "generic":
        return df
    names = _SYNTHETIC_NAMES[framework]
    out = df.select([pl.col(c).alias(names[c]) for c in df.columns if c in names])
    if framework == "areal":
        out = out.with_columns(*((df[g] + prompt_tokens).alias(n) for g, n in _AREAL_SEQ.items()),
                               pl.lit(float(prompt_tokens)).alias(_AREAL_PROMPT))
    return out


def synthetic_metrics(scenario: Scenario, steps: int, *, drift: float = 0.0, noise: float = 0.0,
                      seed: int = 0, framework: str = "generic") -> pl.DataFrame:
    """Per-step metrics of a run simulated by rollsim, for checking :func:`calibrate`: step ``t``
    draws its answers from ``scenario.lengths`` with ``mu + drift * t``; ``noise`` multiplies every
    timing by ``1 + noise * N(0, 1)``.

    A batch pipeline is run as :class:`Synchronous` (one run per step: ``gen_s`` is the batch's
    generation). With ``framework`` ``"verl"``, ``"areal"`` or ``"slime"``, the columns carry that
    framework's metric names, and a :class:`FullyAsync` scenario (AReaL's with ``admission_eta``
    other than 0) is run as it is, in one run whose length drift is ``LengthDrift("exp", drift)``
    (policy version ``t`` draws ``mu + drift * t``), its first step (the fill) left out, and
    ``gen_s`` is what that framework's timer records there (:data:`ASYNC_GEN_METRICS`): the
    trainer's wait for verl and AReaL, slime's time from the trainer taking the previous batch to
    this one (see :func:`_slime_wait`).

    Parameters
    ----------
    scenario : Scenario
        Must have LogNormal lengths; a batch pipeline is replaced by :class:`Synchronous` (keeping its
        ``over_sampling`` and ``keep_partial``).
    steps : int
        Steps to generate, in [3, 100000].
    drift : float
        Growth of ``lengths.mu`` per step, log tokens.
    noise : float
        Relative timing noise (standard deviation), in [0, 1].
    seed : int
        Seed of the runs and of the noise.
    framework : {"generic", "verl", "areal", "slime"}
        Whose metric names (and, for a fully asynchronous scenario, whose timer semantics).

    Returns
    -------
    polars.DataFrame
        Generic columns ``step``, ``step_s``, ``gen_s``, ``train_s``, ``sync_s``, ``response_mean``,
        ``response_max``, ``response_clip_ratio``, or the framework's names for them
        (:data:`_SYNTHETIC_NAMES`; AReaL: ``ppo_actor/seq_len/avg`` and ``/max`` with the scenario's
        ``prompt_tokens``, ``ppo_actor/prompt_len/avg``, no step total).

    Raises
    ------
    ScenarioError
        ``lengths: ...`` for lengths that are not LogNormal, ``steps: ...``, ``noise: ...`` or
        ``framework: ...`` out of range; ``framework: ...`` for verl with a fully asynchronous
        scenario whose ``sync_every`` is not 1 (verl logs one row per sync, summed over its steps).
    """
    from rollsim.simulation import simulate

    lengths = scenario.lengths
    if not isinstance(lengths, LogNormal):
        raise invalid("lengths", "synthetic_metrics needs LogNormal lengths")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 3 <= steps <= 100_000:
        raise invalid("steps", f"must be an integer in [3, 100000], got {steps!r}")
    if not (isinstance(noise, (int, float)) and 0 <= noise <= 1):
        raise invalid("noise", f"must be in [0, 1], got {noise!r}")
    if not isinstance(framework, str) or framework not in ("generic", *_SYNTHETIC_NAMES):
        raise invalid("framework", f"must be one of generic, {', '.join(_SYNTHETIC_NAMES)}, got {framework!r}")
    rng = np.random.default_rng(seed)

    def noisy(x: float) -> float:
        return float(x * max(0.0, 1.0 + noise * rng.standard_normal()))

    cap = lengths.max_tokens
    sc0 = scenario
    p = sc0.pipeline
    if framework != "generic" and isinstance(p, FullyAsync) and not (framework == "areal" and p.admission_eta == 0):
        if framework == "verl" and sc0.sync_every != 1:
            raise invalid("framework", f"verl's fully async trainer logs one row per sync, summed over its "
                          f"{sc0.sync_every} steps (sync_every): generate with sync_every = 1")
        run = sc0.replace(length_drift=LengthDrift("exp", rate=float(drift))) if drift else sc0
        (rows,) = _streamed_rows(run, steps, framework, noisy, cap)
        out = _named(pl.DataFrame(rows), framework, sc0.prompt_tokens)
        if framework == "verl":
            # the fully async trainer times its sync (timing_s/param_sync) outside timing_s/step
            out = out.rename({"timing_s/update_weights": "timing_s/param_sync"}).with_columns(
                pl.col("timing_s/step") - pl.col("timing_s/param_sync"))
        return out
    one = (cap / sc0.decode_tokens_per_s + sc0.rollout_pause_s + sc0.train_step_s + sc0.weight_sync_s
           + (sc0.train_s_per_token + sc0.logprob_s_per_token) * cap * sc0.batch_size)
    rows = []
    for t in range(steps):
        batch = (Synchronous(over_sampling=p.over_sampling, keep_partial=p.keep_partial) if isinstance(p, OffPolicy)
                 else Synchronous())
        sc = sc0.replace(pipeline=batch, seed=seed * 100_003 + t, horizon_s=min(1e12, 2.5 * one),
                         **{"lengths.mu": float(lengths.mu + drift * t)})
        res = simulate(sc)
        st = res.steps
        s = res.samples.filter(pl.col("trained_step") == 1)["length_tokens"].to_numpy()
        gen = float(st["start_s"][1] - st["end_s"][0])
        train = float(st["end_s"][1] - st["start_s"][1]) - sc.weight_sync_s
        g, tr, sy = noisy(gen), noisy(train), noisy(sc.weight_sync_s)
        rows.append(dict(step=t, step_s=g + tr + sy, gen_s=g, train_s=tr, sync_s=sy, response_mean=float(s.mean()),
                         response_max=float(s.max()), response_clip_ratio=float(np.mean(s >= cap))))
    return _named(pl.DataFrame(rows), framework, sc0.prompt_tokens)
