"""Sampling points of a design space: uniform random and Latin-hypercube.

A *space* maps scenario fields (dotted names allowed) to a dimension:

- ``(lo, hi)`` (a tuple) or ``Uniform(lo, hi)``: a float uniform on ``[lo, hi)``;
- ``LogUniform(lo, hi)``: ``exp`` of a uniform on ``[log lo, log hi)`` (``0 < lo < hi``);
- ``IntUniform(lo, hi)``: an integer uniform on ``lo..hi`` (both included);
- ``[a, b, c]`` (a list) or ``Choice([a, b, c])``: one of the values, equally likely.

Each function returns a list of ``n`` dicts ``{field: value}`` (Python floats/ints or the listed
values), which :func:`rollsim.sweep` takes as ``grid``. Sampling uses numpy's ``default_rng(seed)``
(PCG64), so the same space, ``n`` and ``seed`` give the same points on any machine.

>>> from rollsim.sweep.space import latin_hypercube
>>> pts = latin_hypercube({"train_step_s": (30, 600), "pipeline.max_staleness": [0, 1, 2, 4]}, n=4, seed=0)
>>> sorted(p["pipeline.max_staleness"] for p in pts)
[0, 1, 2, 4]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["Uniform", "LogUniform", "IntUniform", "Choice", "latin_hypercube", "random_points"]


def _finite(name: str, v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
        raise invalid(name, f"bounds must be finite numbers, got {v!r}")
    return float(v)


@dataclass(frozen=True)
class Uniform:
    """Floats uniform on ``[lo, hi)``; ``lo < hi``, both finite."""

    lo: float
    hi: float

    def check(self, name: str) -> None:
        lo, hi = _finite(name, self.lo), _finite(name, self.hi)
        if not lo < hi:
            raise invalid(name, f"needs lo < hi, got ({lo}, {hi})")

    def at(self, u: np.ndarray) -> list[Any]:
        return [float(x) for x in self.lo + u * (self.hi - self.lo)]


@dataclass(frozen=True)
class LogUniform:
    """Floats whose log is uniform on ``[log lo, log hi)``; ``0 < lo < hi``."""

    lo: float
    hi: float

    def check(self, name: str) -> None:
        lo, hi = _finite(name, self.lo), _finite(name, self.hi)
        if not 0 < lo < hi:
            raise invalid(name, f"needs 0 < lo < hi, got ({lo}, {hi})")

    def at(self, u: np.ndarray) -> list[Any]:
        a, b = math.log(self.lo), math.log(self.hi)
        return [float(x) for x in np.exp(a + u * (b - a))]


@dataclass(frozen=True)
class IntUniform:
    """Integers uniform on ``lo..hi``, both included; ``lo <= hi``."""

    lo: int
    hi: int

    def check(self, name: str) -> None:
        for v in (self.lo, self.hi):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise invalid(name, f"IntUniform bounds must be integers, got {v!r}")
        if not self.lo <= self.hi:
            raise invalid(name, f"needs lo <= hi, got ({self.lo}, {self.hi})")

    def at(self, u: np.ndarray) -> list[Any]:
        k = int(self.hi) - int(self.lo) + 1
        return [int(self.lo) + int(i) for i in np.minimum(np.floor(u * k), k - 1)]


@dataclass(frozen=True)
class Choice:
    """One of ``values``, equally likely (in a Latin hypercube, each about ``n / len(values)`` times)."""

    values: Sequence[Any]

    def check(self, name: str) -> None:
        if len(self.values) == 0:
            raise invalid(name, "a choice needs at least one value")

    def at(self, u: np.ndarray) -> list[Any]:
        k = len(self.values)
        vals = list(self.values)
        return [vals[int(i)] for i in np.minimum(np.floor(u * k), k - 1)]


Dimension = Uniform | LogUniform | IntUniform | Choice


def _dims(space: Mapping[str, Any]) -> list[tuple[str, Dimension]]:
    if not isinstance(space, Mapping) or not space:
        raise invalid("space", "must be a non-empty dict of field -> (lo, hi) | [values] | Uniform/LogUniform/IntUniform/Choice")
    out: list[tuple[str, Dimension]] = []
    for name, spec in space.items():
        if name == "seed":
            raise invalid("space.seed", "vary seeds with sweep(seeds=...), not the design space")
        if isinstance(spec, (Uniform, LogUniform, IntUniform, Choice)):
            d: Dimension = spec
        elif isinstance(spec, tuple) and len(spec) == 2:
            d = Uniform(*spec)
        elif isinstance(spec, list):
            d = Choice(spec)
        else:
            raise invalid(name, f"a dimension must be (lo, hi), [values] or Uniform/LogUniform/IntUniform/Choice, got {spec!r}")
        d.check(name)
        out.append((name, d))
    return out


def _n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= int(n) <= 10_000_000:
        raise invalid("n", f"must be an integer in [1, 10**7], got {n!r}")
    return int(n)


def _points(dims: list[tuple[str, Dimension]], u: np.ndarray) -> list[dict[str, Any]]:
    cols = {name: d.at(u[:, j]) for j, (name, d) in enumerate(dims)}
    return [{name: cols[name][i] for name, _ in dims} for i in range(u.shape[0])]


def random_points(space: Mapping[str, Any], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` points drawn independently and uniformly from ``space`` (see the module doc).

    Parameters
    ----------
    space : dict
        Field (dotted name) -> dimension.
    n : int
        Number of points, in [1, 10**7].
    seed : int
        Seed of numpy's PCG64 generator (not the simulation seed).

    Returns
    -------
    list of dict
        ``n`` dicts ``{field: value}``, for ``rollsim.sweep(base, grid=points)``.

    Raises
    ------
    ScenarioError (ValueError)
        An empty space, a bad dimension (the message names the field) or ``n`` out of range.
    """
    dims = _dims(space)
    rng = np.random.default_rng(seed)
    return _points(dims, rng.random((_n(n), len(dims))))


def latin_hypercube(space: Mapping[str, Any], n: int, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` points of a Latin hypercube over ``space`` (McKay, Beckman & Conover, 1979): each
    dimension's ``[0, 1)`` is cut into ``n`` equal strata and every stratum holds exactly one point
    (a random position inside it), strata paired across dimensions by independent random
    permutations. Covers each range evenly with far fewer points than a grid.

    Parameters, returns and errors as :func:`random_points`.
    """
    dims = _dims(space)
    k = _n(n)
    rng = np.random.default_rng(seed)
    u = np.empty((k, len(dims)))
    for j in range(len(dims)):
        u[:, j] = (rng.permutation(k) + rng.random(k)) / k
    return _points(dims, u)
