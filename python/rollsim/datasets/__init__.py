"""Real answer-length data shipped with rollsim.

``deepseek_r1_serving()``: DeepSeek-R1 output lengths from production serving on Alibaba Cloud
Bailian, all 73 API clients and four 6-hour windows aggregated: 1,385,405 requests as a histogram
of 19,762 distinct token counts (mean 1,527, median 792, p99 12,604, max 32,768 = the service's cap).
Source: alibaba/ServeGen (commit f891d1189eb32b3868dfc443800c4150548c282a), Xiang et al., "ServeGen",
NSDI 2026; Apache-2.0 (see ``LICENSE-ServeGen`` beside this file).
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from rollsim.errors import invalid
from rollsim.lengths import Empirical

__all__ = ["deepseek_r1_serving", "by_name", "NAMES"]

NAMES = ("deepseek-r1",)


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


def by_name(name: str, max_tokens: float | None = None) -> Empirical:
    """A built-in data set by its CLI name (see ``NAMES``).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown name, or a bad ``max_tokens``.
    """
    if name == "deepseek-r1":
        return deepseek_r1_serving(max_tokens)
    raise invalid("lengths", f"unknown data set {name!r} (built in: {', '.join(NAMES)})")
