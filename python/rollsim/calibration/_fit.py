"""The closed-form fits of a normalised metrics table: the answer lengths (a truncated lognormal per
step with a drift of ``mu``), the generation (speed and overhead from the generation time against the
step's longest answer or its tokens per slot; the streaming wall-time fit), the training and log-prob
costs (a line against the tokens) and the sync; :func:`_apply` puts fitted values on a scenario."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from rollsim.lengths import LogNormal
from rollsim.scenario import Scenario


_SQRT2 = math.sqrt(2.0)


def _phi(z: Any) -> Any:
    """Standard normal CDF, vectorised (Abramowitz & Stegun 7.1.26 erf, absolute error < 1.5e-7)."""
    x = np.asarray(z, dtype=float) / _SQRT2
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-x * x))
    out = 0.5 * (1.0 + erf)
    return float(out) if np.ndim(out) == 0 else out


def _trunc_mean(mu: np.ndarray, sigma: Any, cap: float) -> np.ndarray:
    """Mean of ``min(LogNormal(mu, sigma), cap)`` (``sigma`` > 0, broadcast against ``mu``)."""
    lc = math.log(cap)
    a = (lc - mu) / sigma
    return np.exp(mu + sigma**2 / 2) * _phi(a - sigma) + cap * (1.0 - _phi(a))


def _mu_for_mean(mean: np.ndarray, sigma: Any, cap: float) -> np.ndarray:
    """The ``mu`` whose truncated mean is ``mean`` (vectorised bisection; ``sigma`` broadcast)."""
    shape = np.broadcast(mean, sigma).shape
    lo = np.full(shape, -20.0)
    hi = np.full(shape, math.log(cap) + 10 * float(np.max(sigma)) + 5)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = _trunc_mean(mid, sigma, cap) < mean
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


_Z_CACHE: dict[float, float] = {}
_ZGRID = np.linspace(-8.0, 10.0, 4001)


def _z_max(n: np.ndarray) -> np.ndarray:
    """Expected largest of ``n`` standard normal draws (numerical integral of ``z d Phi(z)**n``): the
    log of the longest of ``n`` lognormal answers is ``mu + sigma`` times it, exactly."""
    out = []
    cdf = np.clip(_phi(_ZGRID), 0.0, 1.0)
    for k in n.tolist():
        if k not in _Z_CACHE:
            f = cdf ** max(1.0, k)
            _Z_CACHE[k] = float(np.sum(0.5 * (_ZGRID[1:] + _ZGRID[:-1]) * np.diff(f)))
        out.append(_Z_CACHE[k])
    return np.array(out)


def _length_losses(sigmas: np.ndarray, mean: np.ndarray, mx: np.ndarray, clip: np.ndarray | None, n: np.ndarray,
                   cap: float) -> tuple[np.ndarray, np.ndarray]:
    """Loss per candidate sigma and the per-step ``mu`` (rows: sigmas, columns: steps)."""
    sig = sigmas[:, None]
    mu = _mu_for_mean(np.minimum(mean, cap * 0.999)[None, :], sig, cap)
    pred_log_max = np.minimum(mu + sig * _z_max(n)[None, :], math.log(cap))
    ok = mx < cap * 0.999
    loss = np.sum(((pred_log_max - np.log(np.maximum(mx, 1.0))[None, :]) ** 2) * ok[None, :], axis=1)
    if clip is not None:
        pc = 1.0 - _phi((math.log(cap) - mu) / sig)
        loss = loss + np.sum(((pc - clip[None, :]) / 0.01) ** 2, axis=1) * 0.01
    return loss, mu


def fit_lengths(mean: np.ndarray, mx: np.ndarray, clip: np.ndarray | None, n: np.ndarray, cap: float,
                steps: np.ndarray) -> dict[str, float]:
    """``sigma`` (shared by the steps), per-step ``mu_t`` from each step's mean, and ``mu``, ``drift``
    of the line ``mu_t = mu + drift * step`` fitted to them. ``sigma`` minimises the squared log error
    of the predicted longest answers (steps below the cap) plus that of the clip ratios."""
    grid = np.linspace(0.02, 3.0, 150)
    loss, _ = _length_losses(grid, mean, mx, clip, n, cap)
    best = float(grid[int(np.argmin(loss))])
    fine = np.linspace(max(0.005, best - 0.03), best + 0.03, 121)
    loss, mus = _length_losses(fine, mean, mx, clip, n, cap)
    i = int(np.argmin(loss))
    sigma, mu_t = float(fine[i]), mus[i]
    slope, icpt = np.polyfit(steps, mu_t, 1) if len(set(steps.tolist())) > 1 else (0.0, float(mu_t.mean()))
    return {"mu": float(icpt), "drift": float(slope), "sigma": sigma}


#: A row whose trainer waited more than this share of its wall time was paced by the rollout.
WAIT_SHARE = 0.05


def _stream_rows(m: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's wall time (``step_s``, else the sum of its phases) and whether the rollout paced it
    (the trainer's wait, ``gen_s``, over :data:`WAIT_SHARE` of the wall time)."""
    wait = m["gen_s"].to_numpy()
    if "step_s" in m.columns:
        wall = m["step_s"].to_numpy()
    else:
        wall = wait + m["train_s"].to_numpy() + sum(m[c].to_numpy() for c in ("logprob_s", "sync_s") if c in m.columns)
    return wall, wait > WAIT_SHARE * wall


def _fit_stream(m: pl.DataFrame, x: np.ndarray, k: int) -> tuple[float, float]:
    """``(overhead, 1 / decode speed)`` per step of a streaming run whose ``gen_s`` is the trainer's
    wait: on the rows the rollout paced, the wall time is the rollout's, ``overhead + x / decode``
    per step with ``x`` the step's tokens per slot (the slots decode back to back); a line through
    them, the overhead 0 with fewer than 3 such rows or one ``x``. With none (the trainer set the pace
    everywhere) the speed is the slowest that kept up with every row: a lower bound."""
    wall, paced = _stream_rows(m)
    y = wall / k
    if paced.sum() >= 3 and np.ptp(x[paced]) > 0.01 * np.mean(x[paced]):
        return _line(x[paced], y[paced])
    rows = paced if paced.any() else np.ones(len(y), dtype=bool)
    ratio = y[rows] / np.maximum(x[rows], 1e-12)
    return 0.0, float(np.mean(ratio) if paced.any() else np.min(ratio))


def _expected_longest(mu: np.ndarray, sigma: float, cap: float, n: int) -> np.ndarray:
    """Expected longest of ``n`` independent ``min(LogNormal(mu, sigma), cap)`` answers, tokens, per
    ``mu``: ``E[max] = integral over [0, cap] of 1 - F(x)**n dx``, on a log grid (2,000 points from
    ``cap * 1e-6``; below it the integrand is 1)."""
    lo = cap * 1e-6
    grid = np.exp(np.linspace(math.log(lo), math.log(cap), 2000))
    z = (np.log(grid)[None, :] - np.asarray(mu, dtype=float)[:, None]) / max(sigma, 1e-9)
    tail = 1.0 - np.clip(_phi(z), 0.0, 1.0) ** n
    return lo + np.sum(0.5 * (tail[:, 1:] + tail[:, :-1]) * np.diff(grid)[None, :], axis=1)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares ``y = a + b x`` with ``a, b >= 0`` (a negative one is set to 0 and the other refitted)."""
    if len(set(np.round(x, 9).tolist())) < 2:
        return max(0.0, float(np.mean(y))), 0.0
    b, a = np.polyfit(x, y, 1)
    if a < 0:
        a, b = 0.0, float(np.sum(x * y) / np.sum(x * x))
    if b < 0:
        a, b = float(np.mean(y)), 0.0
    return float(max(a, 0.0)), float(max(b, 0.0))


PARAMS = ("lengths.mu", "lengths.drift", "lengths.sigma", "decode_tokens_per_s", "gen_overhead_s", "train_step_s",
          "train_s_per_token", "logprob_step_s", "logprob_s_per_token", "weight_sync_s")
UNITS = {"lengths.mu": "log tokens at step 0", "lengths.drift": "log tokens / step", "lengths.sigma": "-",
         "decode_tokens_per_s": "tokens/s per sequence", "gen_overhead_s": "s / step", "train_step_s": "s / step",
         "train_s_per_token": "s / token", "logprob_step_s": "s / step", "logprob_s_per_token": "s / token", "weight_sync_s": "s / step"}


def fit(m: pl.DataFrame, *, batch: int, slots: int, cap: float, steps_per_row: int = 1,
        gen_is_wait: bool = False, gen_overhead: float | None = None) -> dict[str, float]:
    """Every parameter from a normalised frame (:func:`normalize`), per rollsim step of ``batch``
    samples; each row covers ``steps_per_row`` steps (its phases summed over them, its lengths over
    all of their answers, ``batch_samples`` the row's samples, one sync). ``gen_is_wait``: ``gen_s``
    is a streaming trainer's wait for samples (:func:`_fit_stream`). ``gen_overhead``: the generation
    overhead per step, seconds, when it is known from elsewhere (:func:`_pause_inference`: the rows'
    wall time); the speed is then the least-squares slope of the generation time through it.

    Raises
    ------
    ScenarioError
        ``gen_overhead: must be in [0, 1e12] seconds, got ...`` for an overhead that is negative, not
        finite or not a number.
    """
    if gen_overhead is not None:
        from rollsim import _check

        gen_overhead = _check.bounded("gen_overhead", gen_overhead, 0.0, 1e12, "seconds")
    k = steps_per_row
    steps = m["step"].to_numpy()
    mean = m["response_mean"].to_numpy()
    mx = m["response_max"].to_numpy()
    n = m["batch_samples"].to_numpy() if "batch_samples" in m.columns else np.full(m.height, float(batch * k))
    clip = m["response_clip_ratio"].to_numpy() if "response_clip_ratio" in m.columns else None
    out = {f"lengths.{name}": v for name, v in fit_lengths(mean, mx, clip, n, cap, steps).items()}
    if k > 1:
        n = n / k  # samples per step, for the phases' closed forms
    x = m["makespan_tokens"].to_numpy() if "makespan_tokens" in m.columns else np.maximum(mx, mean * n / max(1, slots))
    gen = m["gen_s"].to_numpy() / k
    if gen_is_wait:
        a, b = _fit_stream(m, mean * n / max(1, slots), k)
    elif gen_overhead is not None:
        a = float(gen_overhead)
        b = max(0.0, float(np.sum(x * (gen - a)) / max(float(np.sum(x * x)), 1e-300)))
    elif np.ptp(x) <= 0.01 * np.mean(x):
        # every step waits for about the same longest answer (capped): overhead and speed cannot be
        # told apart; the generation time is all decoding
        a, b = 0.0, float(np.mean(gen) / np.mean(x))
    else:
        a, b = _line(x, gen)
    out["decode_tokens_per_s"] = 1.0 / b if b > 0 else 1e9
    out["gen_overhead_s"] = a
    tokens = mean * n
    f, p = _line(tokens, m["train_s"].to_numpy() / k)
    f2 = q = 0.0
    if "logprob_s" in m.columns:
        f2, q = _line(tokens, m["logprob_s"].to_numpy() / k)
    out["train_step_s"], out["train_s_per_token"] = f, p
    out["logprob_step_s"], out["logprob_s_per_token"] = f2, q
    # one sync per row, spread over its k steps (the engine adds weight_sync_s after every step)
    if "sync_s" in m.columns:
        out["weight_sync_s"] = float(max(0.0, np.mean(m["sync_s"].to_numpy()))) / k
    elif "step_s" in m.columns:
        rest = m["step_s"].to_numpy() - m["gen_s"].to_numpy() - m["train_s"].to_numpy()
        if "logprob_s" in m.columns:
            rest = rest - m["logprob_s"].to_numpy()
        out["weight_sync_s"] = float(max(0.0, np.mean(rest))) / k
    else:
        out["weight_sync_s"] = 0.0
    return out


def _apply(sc: Scenario, v: dict[str, float], step: float, steps_per_row: int = 1) -> Scenario:
    """``sc`` with the fitted values at ``step``; the generation overhead of a row of ``steps_per_row``
    steps becomes the pause at a weight load (``rollout_pause_s = gen_overhead_s x steps_per_row``:
    once per row, the row's one sync, when ``sync_every = steps_per_row``)."""
    mu = v["lengths.mu"] + v["lengths.drift"] * step
    lengths = sc.lengths
    cap = lengths.max_tokens if isinstance(lengths, LogNormal) else (lengths.max_tokens or 16384.0)
    group_corr = lengths.group_correlation if isinstance(lengths, LogNormal) else 0.0
    return sc.replace(
        lengths=LogNormal(mu=float(np.clip(mu, -100, 100)), sigma=float(min(10.0, v["lengths.sigma"])),
                          max_tokens=float(cap), group_correlation=group_corr),
        decode_tokens_per_s=float(np.clip(v["decode_tokens_per_s"], 1e-6, 1e9)),
        rollout_pause_s=float(v["gen_overhead_s"] * steps_per_row) if steps_per_row > 1 else float(v["gen_overhead_s"]),
        train_step_s=float(v["train_step_s"] + v.get("logprob_step_s", 0.0)),
        train_s_per_token=float(min(1e3, v["train_s_per_token"])),
        logprob_s_per_token=float(min(1e3 - min(1e3, v["train_s_per_token"]), v["logprob_s_per_token"])),
        weight_sync_s=float(v["weight_sync_s"]),
    )


def _shifted(values: dict[str, float], shift: tuple[float, float]) -> dict[str, float]:
    """``values`` with ``lengths.mu`` and ``lengths.sigma`` moved by ``shift`` (the over-sampling
    length bias of :func:`_length_bias`)."""
    if shift == (0.0, 0.0):
        return values
    return {**values, "lengths.mu": values["lengths.mu"] + shift[0],
            "lengths.sigma": max(0.005, values["lengths.sigma"] + shift[1])}
