"""Answer-length distributions, in tokens.

Lengths are float64 tokens: ``LogNormal`` draws are continuous, as in the chapter's model
(``min(random.lognormvariate(mu, sigma), max_tokens)``); ``Empirical`` draws values from data.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollsim import _check
from rollsim.errors import invalid, strict_init

__all__ = ["LogNormal", "Empirical", "Lengths"]




@dataclass(frozen=True)
class LogNormal:
    """Lengths ``min(exp(N(mu, sigma**2)), max_tokens)`` tokens.

    Parameters
    ----------
    mu, sigma : float
        Mean and standard deviation of the log-length (natural log of tokens); the median length is
        ``exp(mu)``. ``sigma >= 0``.
    max_tokens : float
        Truncation (the generation limit), tokens, ``>= 1``.
    group_correlation : float
        In [0, 1). With groups (``Scenario.group_size > 1``), the answers of one prompt share a
        difficulty: ``log length = mu + sigma * (sqrt(rho) * z_prompt + sqrt(1 - rho) * z_answer)``.
        Every answer keeps the same marginal distribution; two answers of one prompt have
        log-length correlation ``rho``. 0: independent answers (draws nothing extra).

    Raises
    ------
    ScenarioError (ValueError)
        Non-finite ``mu``, ``sigma < 0`` or NaN, ``max_tokens < 1``, ``group_correlation``
        outside [0, 1).

    The default is the chapter's distribution (median about 2000 tokens, truncated at 16K).
    """

    mu: float = 7.6
    sigma: float = 1.0
    max_tokens: float = 16384.0
    group_correlation: float = 0.0

    def __post_init__(self) -> None:
        rho = _check.real("lengths.group_correlation", self.group_correlation)
        if not 0 <= rho < 1:
            raise invalid("lengths.group_correlation", f"must be in [0, 1), got {rho}")
        object.__setattr__(self, "group_correlation", rho)
        mu = _check.real("lengths.mu", self.mu)
        sigma = _check.real("lengths.sigma", self.sigma)
        max_tokens = _check.real("lengths.max_tokens", self.max_tokens)
        if not math.isfinite(mu):
            raise invalid("lengths.mu", f"must be finite, got {mu}")
        if not (math.isfinite(sigma) and sigma >= 0):
            raise invalid("lengths.sigma", f"must be finite and >= 0, got {sigma}")
        if not (math.isfinite(max_tokens) and max_tokens >= 1):
            raise invalid("lengths.max_tokens", f"must be finite and >= 1, got {max_tokens}")
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "max_tokens", max_tokens)

    def mean_tokens(self) -> float:
        """Mean of the truncated distribution, tokens (closed form)."""
        from statistics import NormalDist

        top = self.max_tokens
        if self.sigma == 0:
            return top if self.mu >= math.log(top) else math.exp(self.mu)
        z = (math.log(top) - self.mu) / self.sigma
        nd = NormalDist()
        c = nd.cdf(z - self.sigma)
        try:
            below = math.exp(self.mu + self.sigma**2 / 2) * c
        except OverflowError:  # extreme mu or sigma: the same product in log space
            below = 0.0 if c <= 0 else math.exp(min(self.mu + self.sigma**2 / 2 + math.log(c), 709.0))
        if math.isnan(below):  # inf * 0
            below = 0.0
        return min(below + top * (1 - nd.cdf(z)), top)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "lognormal", "mu": self.mu, "sigma": self.sigma, "max_tokens": self.max_tokens,
                "group_correlation": self.group_correlation}

    def cdf(self, tokens: float) -> float:
        """P(length <= tokens) of the truncated distribution."""
        from statistics import NormalDist

        if tokens >= self.max_tokens:
            return 1.0
        if tokens <= 0:
            return 0.0
        if self.sigma == 0:
            return float(math.exp(self.mu) <= tokens)
        return NormalDist(self.mu, self.sigma).cdf(math.log(tokens))


@dataclass(frozen=True, eq=False)
class Empirical:
    """Lengths drawn with replacement from data (e.g. measured answer lengths), in tokens.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        Lengths in tokens, each finite and > 0.
    weights : array-like of float, shape (n,), optional
        Counts per value (a histogram); finite, >= 0, not all zero.
    max_tokens : float, optional
        If given, values above it are clipped to it (your generation limit); nothing is clipped
        otherwise.
    name : str, optional
        A label for reports.
    groups : array-like, shape (n,), optional
        A prompt key per value (grouped data: several answers per prompt). Then a GRPO group draws
        one prompt uniformly and its answers uniformly among that prompt's values, keeping real
        within-prompt correlation; ``weights`` must be None.

    In ``rng="python"`` mode a draw equals CPython's ``random.Random(seed).choices(values, weights)[0]``.
    The arrays are stored read-only. Use :meth:`from_file` for CSV / parquet.

    Raises
    ------
    ScenarioError (ValueError)
        Empty values, non-positive or non-finite values, bad weights, or a length mismatch.
    """

    values: np.ndarray
    weights: np.ndarray | None = None
    max_tokens: float | None = None
    name: str | None = None
    groups: np.ndarray | None = None
    _hash: int = field(default=0, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            v = np.array(self.values, dtype=np.float64, copy=True)
        except (TypeError, ValueError) as e:
            raise invalid("lengths.values", f"must be numbers: {e}") from None
        if np.asarray(self.values).dtype == np.bool_:
            raise invalid("lengths.values", "must be numbers of tokens, got booleans")
        if v.ndim != 1:
            raise invalid("lengths.values", f"must be one-dimensional, got shape {v.shape}")
        if v.size == 0:
            raise invalid("lengths.values", "must hold at least one length")
        bad = ~(np.isfinite(v) & (v > 0))
        if bad.any():
            i = int(np.argmax(bad))
            raise invalid("lengths.values", f"must be finite and > 0 tokens; item {i} is {v[i]}")
        if self.max_tokens is not None:
            m = _check.real("lengths.max_tokens", self.max_tokens)
            if not (math.isfinite(m) and m >= 1):
                raise invalid("lengths.max_tokens", f"must be finite and >= 1, got {m}")
            object.__setattr__(self, "max_tokens", m)
            v = np.minimum(v, m)
        w = None
        if self.weights is not None:
            try:
                w = np.array(self.weights, dtype=np.float64, copy=True)
            except (TypeError, ValueError) as e:
                raise invalid("lengths.weights", f"must be numbers: {e}") from None
            if w.shape != v.shape:
                raise invalid("lengths.weights", f"must have one weight per value ({v.size} values, {w.size} weights)")
            bad = ~(np.isfinite(w) & (w >= 0))
            if bad.any():
                i = int(np.argmax(bad))
                raise invalid("lengths.weights", f"must be finite and >= 0; item {i} is {w[i]}")
            if not (w > 0).any():
                raise invalid("lengths.weights", "must not all be zero")
            with np.errstate(over="ignore"):
                total = float(w.sum())
            if not math.isfinite(total):
                raise invalid("lengths.weights", f"must have a finite sum, got {total}")
            w.setflags(write=False)
        if self.groups is not None:
            if w is not None:
                raise invalid("lengths.groups", "grouped data cannot also have weights")
            try:
                keys = np.asarray(self.groups)
            except ValueError as e:  # ragged nested sequences
                raise invalid("lengths.groups", f"must be one key per value: {e}") from None
            if keys.ndim != 1:
                raise invalid("lengths.groups", f"must be one-dimensional, got shape {keys.shape}")
            if keys.shape != v.shape:
                raise invalid("lengths.groups", f"must have one key per value ({v.size} values, {keys.size} keys)")
            try:
                order = np.argsort(keys, kind="stable")
            except TypeError as e:
                raise invalid("lengths.groups", f"keys must be comparable (all numbers or all strings): {e}") from None
            v = v[order]
            keys = keys[order]
            keys.setflags(write=False)
            object.__setattr__(self, "groups", keys)
        if self.name is not None and not isinstance(self.name, str):
            raise invalid("lengths.name", f"must be a string or None, got {type(self.name).__name__} {self.name!r}")
        v.setflags(write=False)
        object.__setattr__(self, "values", v)
        object.__setattr__(self, "weights", w)
        g = None if self.groups is None else np.asarray(self.groups).tobytes()
        h = hash((v.tobytes(), None if w is None else w.tobytes(), self.max_tokens, self.name, g))
        object.__setattr__(self, "_hash", h)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        column: str | None = None,
        count_column: str | None = None,
        max_tokens: float | None = None,
        name: str | None = None,
        group_column: str | None = None,
    ) -> "Empirical":
        """Reads lengths from a CSV or parquet file (by extension; ``.csv.gz`` works too).

        Parameters
        ----------
        path : path to a ``.csv``, ``.csv.gz`` or ``.parquet`` file.
        column : the column of lengths in tokens; may be omitted when the file has one column.
        count_column : optional column of counts (the file is a histogram).
        group_column : optional column of prompt keys (grouped data, see ``groups``).

        Raises
        ------
        FileNotFoundError
            The file does not exist.
        ScenarioError (ValueError)
            Unreadable file, unknown column, non-numeric or invalid values.
        """
        import polars as pl

        try:
            p = os.fspath(path)
        except TypeError:
            raise invalid("lengths.path", f"must be a path (str or os.PathLike), got {type(path).__name__} {path!r}") from None
        if not isinstance(p, str):
            p = os.fsdecode(p)
        for key, col in (("lengths.column", column), ("lengths.count_column", count_column),
                         ("lengths.group_column", group_column)):
            if col is not None and not isinstance(col, str):
                raise invalid(key, f"must be a column name (str) or None, got {type(col).__name__} {col!r}")
        if not os.path.exists(p):
            raise FileNotFoundError(f"lengths file not found: {p}")
        try:
            if p.endswith(".parquet"):
                df = pl.read_parquet(p)
            else:
                df = pl.read_csv(p, infer_schema_length=10000)
        except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic) for corrupt files
            raise invalid("lengths.path", f"cannot read {p!r} as {'parquet' if p.endswith('.parquet') else 'CSV'}: {e}") from None
        if column is None:
            if len(df.columns) != 1:
                raise invalid("lengths.column", f"the file has columns {df.columns}; say which one holds the lengths")
            column = df.columns[0]
        for key, col in (("lengths.column", column), ("lengths.count_column", count_column),
                         ("lengths.group_column", group_column)):
            if col is not None and col not in df.columns:
                raise invalid(key, f"no column {col!r} in {p!r} (columns: {df.columns})")
        try:
            values = df[column].cast(pl.Float64, strict=True)
            counts = None if count_column is None else df[count_column].cast(pl.Float64, strict=True)
        except (Exception, pl.exceptions.PanicException) as e:
            raise invalid("lengths.column", f"must be numeric: {e}") from None
        if values.null_count() or (counts is not None and counts.null_count()):
            raise invalid("lengths.column", f"{p!r} has empty cells in the lengths or counts")
        groups = None if group_column is None else df[group_column].to_numpy()
        return cls(values.to_numpy(), None if counts is None else counts.to_numpy(), max_tokens=max_tokens,
                   name=name or os.path.basename(p), groups=groups)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Empirical):
            return NotImplemented
        return (
            self.max_tokens == other.max_tokens
            and self.name == other.name
            and np.array_equal(self.values, other.values)
            and _same(self.weights, other.weights)
            and _same(self.groups, other.groups)
        )

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        n = self.values.size if self.weights is None else int(self.weights.sum())
        label = f"name={self.name!r}, " if self.name else ""
        return f"Empirical({label}{self.values.size} values, {n} samples, mean {self.mean_tokens():.0f} tokens)"

    def __reduce__(self):
        return (Empirical, (self.values, self.weights, self.max_tokens, self.name, self.groups))

    def group_offsets(self) -> np.ndarray | None:
        """Start index of each prompt's values (and the end), for grouped data; else None."""
        if self.groups is None:
            return None
        starts = np.flatnonzero(np.r_[True, self.groups[1:] != self.groups[:-1]])
        return np.r_[starts, self.values.size].astype(np.int64)

    def cdf(self, tokens: float) -> float:
        """P(length <= tokens) of one draw (grouped data: a uniform prompt, then a uniform answer)."""
        if self.groups is not None:
            off = self.group_offsets()
            return float(np.mean([np.mean(self.values[a:b] <= tokens) for a, b in zip(off[:-1], off[1:])]))
        w = np.ones_like(self.values) if self.weights is None else self.weights
        return float(w[self.values <= tokens].sum() / w.sum())

    def mean_tokens(self) -> float:
        """Mean length, tokens."""
        if self.groups is not None:
            off = self.group_offsets()
            return float(np.mean([self.values[a:b].mean() for a, b in zip(off[:-1], off[1:])]))
        if self.weights is None:
            return float(self.values.mean())
        return float((self.values * self.weights).sum() / self.weights.sum())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "empirical", "values": self.values, "weights": self.weights,
                "group_offsets": self.group_offsets()}


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


strict_init(LogNormal, "lengths.", "LogNormal")
strict_init(Empirical, "lengths.", "Empirical")

Lengths = LogNormal | Empirical
