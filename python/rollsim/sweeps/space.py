"""Sampling points of a design space: uniform random and Latin-hypercube.

A *space* maps scenario fields (dotted names allowed) to a dimension:

- ``(lo, hi)`` (a tuple) or ``Uniform(lo, hi)``: a float uniform on ``[lo, hi)``;
- ``LogUniform(lo, hi)``: ``exp`` of a uniform on ``[log lo, log hi)`` (``0 < lo < hi``);
- ``IntUniform(lo, hi)``: an integer uniform on ``lo..hi`` (both included);
- ``[a, b, c]`` (a list) or ``Choice([a, b, c])``: one of the values, equally likely.

Each function returns a list of ``n`` dicts ``{field: value}`` (Python floats/ints or the listed
values), which :func:`rollsim.sweep` takes as ``grid``. Sampling uses numpy's ``default_rng(seed)``
(PCG64), so the same space, ``n`` and ``seed`` give the same points on any machine.

>>> from rollsim.sweeps.space import latin_hypercube
>>> pts = latin_hypercube({"train_step_s": (30, 600), "pipeline.max_staleness": [0, 1, 2, 4]}, n=4, seed=0)
>>> sorted(p["pipeline.max_staleness"] for p in pts)
[0, 1, 2, 4]
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["Uniform", "LogUniform", "IntUniform", "Choice", "latin_hypercube", "random_points", "LatinHypercube",
           "RandomPoints"]


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


#: Points made at once by the lazy samplers (the rest are made when asked for).
_BLOCK = 1024


class _Lazy(Sequence[dict[str, Any]]):
    """A read-only sequence of ``n`` points made a block at a time (the last block is cached)."""

    names: list[str]

    def __init__(self, space: Mapping[str, Any], n: int, seed: int = 0):
        self._dims = _dims(space)
        self._n = _n(n)
        self._seed = seed
        self.names = [name for name, _ in self._dims]
        self._cache: tuple[int, list[dict[str, Any]]] | None = None

    def __len__(self) -> int:
        return self._n

    def _unit(self, start: int, stop: int) -> np.ndarray:
        raise NotImplementedError

    def points(self, start: int, stop: int) -> list[dict[str, Any]]:
        """The points ``start..stop-1`` (same values as the eager function's list)."""
        start, stop = max(0, start), min(self._n, stop)
        if start >= stop:
            return []
        return _points(self._dims, self._unit(start, stop))

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"indices must be integers or slices, not {type(i).__name__}")
        i = int(i) + (self._n if i < 0 else 0)
        if not 0 <= i < self._n:
            raise IndexError("point index out of range")
        b = i - i % _BLOCK
        if self._cache is None or self._cache[0] != b:
            self._cache = (b, self.points(b, b + _BLOCK))
        return self._cache[1][i - b]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for b in range(0, self._n, _BLOCK):
            yield from self.points(b, b + _BLOCK)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Lazy) or isinstance(other, list):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._dims)!r}, n={self._n}, seed={self._seed!r})"


class RandomPoints(_Lazy):
    """:func:`random_points` as a lazy sequence: point ``i`` is made on demand (the PCG64 stream is
    advanced to it), so memory does not grow with ``n``. ``list(RandomPoints(space, n, seed)) ==
    random_points(space, n, seed)``; pass it as ``grid`` to :func:`rollsim.sweep` as it is.

    Parameters, errors as :func:`random_points`.
    """

    def _unit(self, start: int, stop: int) -> np.ndarray:
        d = len(self._dims)
        bits = np.random.PCG64(self._seed)  # what default_rng(seed) uses
        bits.advance(start * d)  # one 64-bit draw per float64, row-major, as rng.random((n, d))
        return np.random.Generator(bits).random((stop - start, d))


class LatinHypercube(_Lazy):
    """:func:`latin_hypercube` as a lazy sequence: the unit-cube coordinates of the ``n`` points are
    drawn up front (8 bytes per point and dimension: the strata permutations need all of them),
    the dicts are made on demand. ``list(LatinHypercube(space, n, seed)) == latin_hypercube(space,
    n, seed)``.

    Parameters, errors as :func:`random_points`.
    """

    def __init__(self, space: Mapping[str, Any], n: int, seed: int = 0):
        super().__init__(space, n, seed)
        k = self._n
        rng = np.random.default_rng(seed)
        self._u = np.empty((k, len(self._dims)))
        for j in range(len(self._dims)):
            self._u[:, j] = (rng.permutation(k) + rng.random(k)) / k

    def _unit(self, start: int, stop: int) -> np.ndarray:
        return self._u[start:stop]


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
        ``n`` dicts ``{field: value}``, for ``rollsim.sweep(base, grid=points)``. For many points,
        :class:`RandomPoints` gives the same points lazily.

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

    Parameters, returns and errors as :func:`random_points` (:class:`LatinHypercube`: the same
    points, made lazily).
    """
    return list(LatinHypercube(space, n, seed))
