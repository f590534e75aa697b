"""Real answer-length data shipped with rollsim.

``deepseek_r1_serving()``: DeepSeek-R1 output lengths from production serving on Alibaba Cloud
Bailian, all 73 API clients and four 6-hour windows aggregated: 1,385,405 requests as a histogram
of 19,762 distinct token counts (mean 1,527, median 792, p99 12,604, max 32,768 = the service's cap).
Source: alibaba/ServeGen (commit f891d1189eb32b3868dfc443800c4150548c282a), Xiang et al., "ServeGen",
NSDI 2026; Apache-2.0 (see ``LICENSE-ServeGen`` beside this file).

``sky_t1_longcot()``: long chain-of-thought answer lengths of the Sky-T1 models (QwQ-distilled) on
AIME24 and AMC23 with a 32K context: 860 answers (AIME24 30 problems x 18 model variants, AMC23 40 x 8;
mean 14,096, median 5,970 tokens; 35.7 % never finished and were cut at about 32.4K). Greedy decoding:
the answers of one problem come from different checkpoints, not n samples of one policy, and more hit
the cap (repetition loops) than sampled rollouts would. Source: NovaSky-AI/SkyThought (commit
6840eb7df638ab178d20122099286db08e376851), Apache-2.0 (see ``LICENSE-SkyThought``).

``tail(name)``: a lognormal fitted to each set (:func:`tail_fit` shows the fit), whose mean you can
shift (``mean_tokens=``) to model lengths that drift during training.
"""

from __future__ import annotations

import math
from importlib import resources
from statistics import NormalDist
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import invalid
from rollsim.lengths import Empirical, LogNormal

__all__ = ["deepseek_r1_serving", "sky_t1_longcot", "by_name", "tail", "tail_fit", "NAMES"]

NAMES = ("deepseek-r1", "sky-t1")


def deepseek_r1_serving(max_tokens: float | None = None) -> Empirical:
    """DeepSeek-R1 production output lengths (ServeGen), as an ``Empirical`` histogram.

    Parameters
    ----------
    max_tokens : float, optional
        Clip lengths at your generation limit (e.g. 16384); unclipped by default (max 32,768).

    Returns
    -------
    Empirical
        19,762 distinct lengths (tokens) with their counts as weights.

    Raises
    ------
    ScenarioError (ValueError)
        ``max_tokens`` not in [1, 2**40] tokens.
    """
    path = resources.files(__package__) / "deepseek_r1_serving_output_tokens.csv.gz"
    with resources.as_file(path) as p:
        # the file has a header line ("tokens,count"), then one "length,count" line per length
        data = np.loadtxt(p, delimiter=",", skiprows=1, dtype=np.float64)
    return Empirical(data[:, 0], data[:, 1], max_tokens=max_tokens, name="deepseek-r1-serving")


def sky_t1_longcot(max_tokens: float | None = None, *, finished_only: bool = False) -> Empirical:
    """Sky-T1 long chain-of-thought answer lengths on AIME24 / AMC23 (NovaSky-AI/SkyThought), 32K context.

    Parameters
    ----------
    max_tokens : float, optional
        Clip lengths at your generation limit; unclipped by default (max 32,484).
    finished_only : bool
        Keep only the 553 answers that finished (median 3,499 tokens); by default all 860, including
        the 307 cut at the context (their length is the cut, a lower bound of the answer they started).

    Returns
    -------
    Empirical
        Distinct lengths (tokens) with their counts as weights.

    Raises
    ------
    ScenarioError (ValueError)
        ``max_tokens`` not in [1, 2**40] tokens, or ``finished_only`` not a bool.
    """
    finished_only = _check.flag("finished_only", finished_only)
    data = _load("sky_t1_longcot_response_tokens.csv.gz")  # tokens, finished, count
    if finished_only:
        data = data[data[:, 1] == 1]
    values, inverse = np.unique(data[:, 0], return_inverse=True)
    counts = np.bincount(inverse, weights=data[:, 2])
    return Empirical(values, counts, max_tokens=max_tokens, name="sky-t1-longcot")


def _load(file: str) -> np.ndarray:
    path = resources.files(__package__) / file
    with resources.as_file(path) as p:
        return np.loadtxt(p, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)


# Quantile levels used for each set's lognormal fit: below the mass at the cap (0.2 % of the
# ServeGen requests reach 32,768; 35.7 % of the Sky-T1 answers are cut at about 32.4K).
_FIT_LEVELS = {"deepseek-r1": np.linspace(0.05, 0.95, 19), "sky-t1": np.linspace(0.05, 0.60, 12)}
_CAPS = {"deepseek-r1": 32768.0, "sky-t1": 32484.0}


def tail_fit(name: str) -> tuple[float, float, Any]:
    """The lognormal fit of a built-in set: least squares of ``log q_p = mu + sigma z_p`` over the
    quantile levels ``p`` below the set's mass at its cap (0.05 to 0.95 for ``deepseek-r1``, 0.05 to
    0.60 for ``sky-t1``, whose upper 36 % are cut at the context), ``z_p`` the normal quantile.

    Returns
    -------
    (mu, sigma, table)
        ``mu`` (log tokens), ``sigma``, and a polars frame ``level``, ``measured`` (tokens),
        ``fitted`` (tokens), ``rel_error`` (fitted / measured - 1).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown name.
    """
    import polars as pl

    emp = by_name(name)
    levels = _FIT_LEVELS[name]
    order = np.argsort(emp.values)
    weights = np.ones_like(emp.values) if emp.weights is None else emp.weights
    v, w = emp.values[order], np.cumsum(weights[order]) / weights.sum()
    q = v[np.searchsorted(w, levels, side="left")]
    z = np.array([NormalDist().inv_cdf(float(p)) for p in levels])
    sigma, mu = np.polyfit(z, np.log(q), 1)
    fitted = np.exp(mu + sigma * z)
    table = pl.DataFrame({"level": levels, "measured": q, "fitted": fitted, "rel_error": fitted / q - 1})
    return float(mu), float(sigma), table


def tail(name: str, *, mean_tokens: float | None = None, max_tokens: float | None = None) -> LogNormal:
    """The fitted lognormal of a built-in set (:func:`tail_fit`), optionally with its mean shifted.

    Parameters
    ----------
    name : str
        ``"deepseek-r1"`` or ``"sky-t1"``.
    mean_tokens : float, optional
        The mean length you want (tokens, after truncation at ``max_tokens``); ``mu`` is moved, the
        shape (``sigma``) kept: e.g. lengths growing during training.
    max_tokens : float, optional
        Truncation, tokens (default: the set's cap, 32,768 / 32,484).

    Returns
    -------
    LogNormal

    Raises
    ------
    ScenarioError (ValueError)
        An unknown name; ``max_tokens`` not in [1, 2**40]; ``mean_tokens`` not in (0, max_tokens).
    """
    mu, sigma, _ = tail_fit(name)
    cap = _CAPS[name] if max_tokens is None else max_tokens
    base = LogNormal(mu=mu, sigma=sigma, max_tokens=cap)
    if mean_tokens is None:
        return base
    cap = base.max_tokens
    m = _check.number("mean_tokens", mean_tokens, what="a number of tokens")
    if not m < cap:
        raise invalid("mean_tokens", f"must be in (0, {cap:g}) tokens (below max_tokens: a truncated mean "
                                     f"never reaches it), got {m!r}")
    lo, hi = -100.0, math.log(cap) + 10 * sigma + 1
    for _ in range(200):  # the truncated mean grows with mu: bisection
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if LogNormal(mu=mid, sigma=sigma, max_tokens=cap).mean_tokens() < m else (lo, mid)
    return LogNormal(mu=(lo + hi) / 2, sigma=sigma, max_tokens=cap)


def by_name(name: str, max_tokens: float | None = None) -> Empirical:
    """A built-in data set by its CLI name (see ``NAMES``).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown name, or a bad ``max_tokens``.
    """
    if name == "deepseek-r1":
        return deepseek_r1_serving(max_tokens)
    if name == "sky-t1":
        return sky_t1_longcot(max_tokens)
    raise invalid("lengths", f"unknown data set {name!r} (built in: {', '.join(NAMES)})")
