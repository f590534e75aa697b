"""Answer-length distributions, in tokens.

Lengths are float64 tokens: ``LogNormal`` draws are continuous, as in the chapter's model
(``min(random.lognormvariate(mu, sigma), max_tokens)``); ``Empirical`` draws values from data.
"""

from __future__ import annotations

import decimal
import difflib
import math
import numbers
import os
import stat
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rollsim import _check, _rollsim
from rollsim.errors import invalid, strict_init

__all__ = ["LogNormal", "Empirical", "Lengths", "LengthDrift", "MIN_TOKENS", "MAX_TOKENS", "MAX_WEIGHT_SUM",
           "MU_BOUND", "MAX_SIGMA"]

#: The engine's schema of the parts' fields (rust/rollsim-core/src/schema.rs): their defaults, ranges
#: and messages.
_LOGNORMAL = {n: _check.part_field("LogNormal", n) for n in ("mu", "sigma", "max_tokens", "group_correlation")}
_EMPIRICAL_VALUES = _check.part_field("Empirical", "values")
_EMPIRICAL_MAX_TOKENS = _check.part_field("Empirical", "max_tokens")

MIN_TOKENS: float = _EMPIRICAL_VALUES["lo"]
"""The shortest ``Empirical`` length rollsim accepts, tokens (2**-40, about 9.1e-13): a smaller
positive length is a unit error, and near the float64 underflow it would make times of 0 s (an
answer ends the instant it starts) and NaN in the closed forms of :mod:`rollsim.theory`."""

MAX_TOKENS: float = _EMPIRICAL_VALUES["hi"]
"""The longest answer rollsim accepts, tokens (2**40, about 1.1e12: a million times the longest
generation limits in use). Every sum formed from lengths then stays far below the float64 limit
(about 2**1024), so every summary stays finite: a batch's tokens (at most 2**24 answers) below
2**64, a run's (at most 2**32 samples) below 2**72, ``value x weight`` over a histogram below
2**104 (see :data:`MAX_WEIGHT_SUM`); and a length that is an integer stays exact (below 2**53)."""

MAX_WEIGHT_SUM = 2.0**64
"""Largest total of ``Empirical`` weights (counts): 2**64, about 1.8e19 answers. With lengths of at
most :data:`MAX_TOKENS` every ``sum(value x weight)`` stays below 2**104 (finite)."""

MU_BOUND: float = _LOGNORMAL["mu"]["hi"]
"""``LogNormal.mu`` must lie in [-100, 100] (a median length ``exp(mu)`` between 3.7e-44 and
2.7e43 tokens, before truncation)."""

MAX_SIGMA: float = _LOGNORMAL["sigma"]["hi"]
"""``LogNormal.sigma`` must lie in [0, 10]. With ``|mu| <= 100`` every quantile
``exp(mu + sigma z)`` of the untruncated distribution for ``|z| <= 38.5`` (the whole range of a
float64 normal quantile) lies in [1e-211, 1e211] and the untruncated mean ``exp(mu + sigma**2 / 2)``
below 1.4e65: finite and > 0, so ``mean_tokens()``, ``cdf`` and every quantile are finite. (Answer
lengths measured in practice have sigma about 0.5 to 2.)"""

_VALUES_RANGE = f"must be in {_EMPIRICAL_VALUES['range']}{_EMPIRICAL_VALUES['suffix']}"


def _shown(x: Any) -> str:
    """A short text for a bad item (a huge integer by its size, not its 600 digits)."""
    if isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 10**30:
        return f"an integer of about {int(abs(x).bit_length() * math.log10(2)) + 1} digits"
    if isinstance(x, (float, np.floating)):
        return str(float(x))
    return repr(x)


def _floats(key: str, data: Any, range_text: str) -> np.ndarray:
    """``data`` (array-like of real numbers) as a new float64 array, or a ScenarioError naming ``key``.

    Refuses what float64 conversion would silently change: booleans, dates, datetimes, times and
    durations, strings, complex numbers, masked arrays with masked items, polars Series with nulls,
    and integers too large for a float (``range_text`` is the allowed range for that message)."""
    if isinstance(data, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(data)
        if mask.any():
            raise invalid(key, f"is a masked array with {int(mask.sum())} masked item(s) (the first is item "
                               f"{int(np.argmax(mask.ravel()))}); pass arr.compressed() to drop them, or "
                               "arr.filled(value) to replace them")
        data = np.ma.getdata(data)
    if type(data).__module__.split(".")[0] == "polars" and hasattr(data, "dtype") and hasattr(data, "null_count"):
        dtype = data.dtype
        if not dtype.is_numeric():
            raise invalid(key, f"must be numbers, got a polars Series of {dtype}")
        if data.null_count():
            i = int(np.argmax(data.is_null().to_numpy()))
            raise invalid(key, f"must be numbers; item {i} is null")
        import polars as pl

        data = data.cast(pl.Float64).to_numpy()
    try:
        a = np.asarray(data)
    except (TypeError, ValueError) as e:  # ragged nested sequences
        raise invalid(key, f"must be numbers: {e}") from None
    kind = a.dtype.kind
    if kind == "b":
        raise invalid(key, "must be numbers of tokens, got booleans" if key == "lengths.values"
                      else "must be numbers, got booleans")
    if kind in "Mm":
        what = "datetimes" if kind == "M" else "durations"
        raise invalid(key, f"must be numbers, got {what} ({a.dtype}): dates and times are not lengths or counts")
    if kind in "USV":
        raise invalid(key, f"must be numbers, got {'strings' if kind in 'US' else 'structured items'} ({a.dtype})")
    if kind == "c":
        raise invalid(key, f"must be real numbers, got complex numbers ({a.dtype})")
    if kind == "O":
        flat = a.ravel()
        out = np.empty(flat.shape, dtype=np.float64)
        for i, x in enumerate(flat):
            if isinstance(x, (bool, np.bool_)):
                raise invalid(key, f"must be numbers; item {i} is {x!r} (a bool)")
            if not isinstance(x, (numbers.Real, decimal.Decimal)):
                raise invalid(key, f"must be numbers; item {i} is {type(x).__name__} {x!r}")
            try:
                out[i] = float(x)
            except OverflowError:  # an int too large for a float
                raise invalid(key, f"{range_text}; item {i} is {_shown(x)}") from None
        return out.reshape(a.shape)
    if kind not in "iuf":
        raise invalid(key, f"must be numbers, got {a.dtype}")
    if isinstance(data, (list, tuple)) and a.ndim == 1:  # np.asarray([1, True]) is [1, 1]
        for i, x in enumerate(data):
            if isinstance(x, (bool, np.bool_)):
                raise invalid(key, f"must be numbers; item {i} is {x!r} (a bool)")
    return np.array(a, dtype=np.float64, copy=True)


@dataclass(frozen=True)
class LogNormal:
    """Lengths ``min(exp(N(mu, sigma**2)), max_tokens)`` tokens.

    Parameters
    ----------
    mu : float
        Mean of the log-length (natural log of tokens), in [-100, 100]; the median length is
        ``exp(mu)`` (before truncation).
    sigma : float
        Standard deviation of the log-length, in [0, 10] (see :data:`MAX_SIGMA` for why these bounds
        keep every quantile and the mean finite).
    max_tokens : float
        Truncation (the generation limit), tokens, in [1, 2**40] (:data:`MAX_TOKENS`).
    group_correlation : float
        In [0, 1). With groups (``Scenario.group_size > 1``), the answers of one prompt share a
        difficulty: ``log length = mu + sigma * (sqrt(rho) * z_prompt + sqrt(1 - rho) * z_answer)``.
        Every answer keeps the same marginal distribution; two answers of one prompt have
        log-length correlation ``rho``. 0: independent answers (draws nothing extra).

    Raises
    ------
    ScenarioError (ValueError)
        ``mu``, ``sigma``, ``max_tokens`` or ``group_correlation`` not a number or outside its range
        (NaN and infinities included).

    The default is the chapter's distribution (median about 2000 tokens, truncated at 16K).
    """

    mu: float = _LOGNORMAL["mu"]["default"]
    sigma: float = _LOGNORMAL["sigma"]["default"]
    max_tokens: float = _LOGNORMAL["max_tokens"]["default"]
    group_correlation: float = _LOGNORMAL["group_correlation"]["default"]

    def __post_init__(self) -> None:
        # the ranges and messages of the engine's schema (the engine checks the same, in this order)
        spec = _LOGNORMAL["group_correlation"]
        rho = _check.within(spec, self.group_correlation, _check.real(spec["path"], self.group_correlation))
        object.__setattr__(self, "group_correlation", rho)
        mu = _check.real("lengths.mu", self.mu)
        sigma = _check.real("lengths.sigma", self.sigma)
        max_tokens = _check.real("lengths.max_tokens", self.max_tokens)
        mu = _check.within(_LOGNORMAL["mu"], self.mu, mu)
        sigma = _check.within(_LOGNORMAL["sigma"], self.sigma, sigma)
        max_tokens = _check.within(_LOGNORMAL["max_tokens"], self.max_tokens, max_tokens)
        object.__setattr__(self, "mu", mu)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "max_tokens", max_tokens)

    def mean_tokens(self) -> float:
        """Mean of the truncated distribution, tokens (closed form: the engine's function,
        ``rollsim._rollsim.lognormal_mean``, so that the summary's ``throughput_ratio`` and
        :meth:`Scenario.throughput_ratio` agree in every digit)."""
        return _rollsim.lognormal_mean(self.mu, self.sigma, self.max_tokens)

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
        Lengths in tokens, each in [2**-40, 2**40] (:data:`MIN_TOKENS`, :data:`MAX_TOKENS`): a list,
        tuple, numpy array or polars Series of real numbers. Booleans, dates, datetimes, times, durations, strings, nulls
        and masked items are refused, not converted.
    weights : array-like of float, shape (n,), optional
        Counts per value (a histogram): each finite and >= 0, not all zero, summing to at most
        2**64 (:data:`MAX_WEIGHT_SUM`); the same types as ``values``.
    max_tokens : float, optional
        If given, in [1, 2**40] tokens: values above it are clipped to it (your generation limit);
        nothing is clipped otherwise.
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
        Empty values, values that are not real numbers or outside [2**-40, 2**40], bad weights, a masked
        array with masked items, or a length mismatch.
    """

    values: np.ndarray
    weights: np.ndarray | None = None
    max_tokens: float | None = None
    name: str | None = None
    groups: np.ndarray | None = None
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        v = _floats("lengths.values", self.values, _VALUES_RANGE)
        if v.ndim != 1:
            raise invalid("lengths.values", f"must be one-dimensional, got shape {v.shape}")
        if v.size == 0:
            raise invalid("lengths.values", "must hold at least one length")
        bad = ~((v >= MIN_TOKENS) & (v <= MAX_TOKENS))  # NaN fails both
        if bad.any():
            i = int(np.argmax(bad))
            raise invalid("lengths.values", f"{_VALUES_RANGE}; item {i} is {v[i]}")
        if self.max_tokens is not None:
            m = _check.within(_EMPIRICAL_MAX_TOKENS, self.max_tokens, _check.real("lengths.max_tokens", self.max_tokens))
            object.__setattr__(self, "max_tokens", m)
            v = np.minimum(v, m)
        w = None
        if self.weights is not None:
            w = _floats("lengths.weights", self.weights, "must sum to at most 2**64")
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
            if not total <= MAX_WEIGHT_SUM:
                raise invalid("lengths.weights", f"must sum to at most 2**64, got {total}")
            w.setflags(write=False)
        if self.groups is not None:
            if w is not None:
                raise invalid("lengths.groups", "grouped data cannot also have weights")
            if isinstance(self.groups, np.ma.MaskedArray) and np.ma.getmaskarray(self.groups).any():
                raise invalid("lengths.groups", "is a masked array with masked items; pass arr.compressed() (and the "
                                                "matching values) to drop them")
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
        has_header: bool | None = None,
    ) -> Empirical:
        """Reads lengths from a CSV or parquet file; every row is one value (or one histogram bin).

        Parameters
        ----------
        path : str or os.PathLike
            A regular file whose name ends in ``.csv``, ``.csv.gz`` (gzip-compressed CSV) or
            ``.parquet``, in any case (``A.PARQUET`` is parquet). Other suffixes are refused rather
            than guessed.
        column : str, optional
            The column of lengths, tokens; may be omitted when the file has one column.
        count_column : str, optional
            A column of counts (the file is a histogram): the ``weights``.
        max_tokens : float, optional
            Clip lengths at this generation limit, tokens (see the class).
        name : str, optional
            A label for reports; default: the file's name.
        group_column : str, optional
            A column of prompt keys (grouped data, see ``groups``).
        has_header : bool or None
            CSV only. ``None`` (default): the first line is data if every cell of it is a number,
            else it is the header (column names). ``True`` / ``False`` force it. A CSV file without
            a header has columns ``column_1``, ``column_2``, ... . Empty lines before the first row
            are skipped; any other empty cell in a column that is read is refused.

        Returns
        -------
        Empirical
            One value per data row, in file order (nothing is dropped).

        Notes
        -----
        Length and count cells are read as numbers (float64), whatever the first rows look like, so
        a column of integers followed by ``100.5`` reads whole; surrounding spaces are ignored.
        Parquet columns must have a numeric type (integers, floats, decimals) or hold numbers as
        text; booleans, dates, datetimes, times and durations are refused. Errors about a value
        give its place in the file: ``line N`` of a CSV file (1-based, the header included; a quoted
        cell that spans lines counts as one) or ``row N`` of a parquet file (1-based).

        Raises
        ------
        FileNotFoundError
            The file does not exist.
        ScenarioError (ValueError)
            Not a regular file (a directory, a FIFO, a device), an unsupported suffix, an unreadable
            file, no rows of data (a header alone), a duplicated column name, an unknown column,
            or a cell that is empty, not a number or outside its range (the message gives the line
            or row).
        """
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
        if has_header is not None and not isinstance(has_header, (bool, np.bool_)):
            raise invalid("lengths.has_header", f"must be True, False or None (detect), got {has_header!r}")
        lower = p.lower()
        parquet = lower.endswith(".parquet")
        if not (parquet or lower.endswith(".csv") or lower.endswith(".csv.gz")):
            raise invalid("lengths.path", f"must name a .csv, .csv.gz or .parquet file (any case), got {p!r}")
        try:
            mode = os.stat(p).st_mode
        except FileNotFoundError:
            raise FileNotFoundError(f"lengths file not found: {p}") from None
        except (OSError, ValueError) as e:  # permission denied, a NUL byte in the path, ...
            raise invalid("lengths.path", f"cannot read {p!r}: {e}") from None
        if not stat.S_ISREG(mode):
            raise invalid("lengths.path", f"must be a regular file, got {_file_kind(mode)} {p!r}")
        if parquet and has_header is not None:
            raise invalid("lengths.has_header", f"applies to CSV files only (a parquet file names its columns), got "
                                                f"{has_header!r} for {p!r}")
        if parquet:
            from rollsim import _parquet

            df = _parquet.read(p, "lengths.path")  # the file's structure checked first: polars can abort on it
            names = list(df.columns)
            place = "row"
            first_line = 1
            hint = ""
        else:
            df, names, first_line, hint = _read_csv(p, has_header)
            place = "line"
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup:
            raise invalid("lengths.path", f"{p!r} has the column name {dup[0]!r} more than once (columns: {names}); "
                                          "rename the copies so that each column has one name")
        if column is None:
            if len(names) != 1:
                raise invalid("lengths.column", f"the file has columns {names}; say which one holds the lengths")
            column = names[0]
        for key, col in (("lengths.column", column), ("lengths.count_column", count_column),
                         ("lengths.group_column", group_column)):
            if col is not None and col not in names:
                near = difflib.get_close_matches(col, [str(n) for n in names], n=1)
                # a near miss (response_lenght): the header was read right, the name was mistyped
                raise invalid(key, f"no column {col!r} in {p!r} (columns: {names})"
                                   + (f"; did you mean {near[0]!r}?" if near else hint))
        if df.height == 0:
            header = f" (only a header: {', '.join(names)})" if names and not parquet else ""
            raise invalid("lengths.path", f"{p!r} has no rows of data{header}: it must hold at least one length")
        values = _column_floats(df[column], "lengths.column", p, place, first_line,
                                "a number of tokens in [2**-40, 2**40]",
                                lambda x: (x >= MIN_TOKENS) & (x <= MAX_TOKENS))
        counts = None
        if count_column is not None:
            counts = _column_floats(df[count_column], "lengths.count_column", p, place, first_line,
                                    "a count >= 0 (finite)", lambda x: (x >= 0) & (x < math.inf))
        groups = None
        if group_column is not None:
            g = df[group_column]
            if g.null_count():
                i = int(np.argmax(g.is_null().to_numpy()))
                raise invalid("lengths.group_column", f"{place} {first_line + i} of {p!r}: must be a prompt key, got an "
                                                      "empty cell")
            groups = (g if parquet else _infer(g)).to_numpy()
        return cls(values, counts, max_tokens=max_tokens, name=name or os.path.basename(p), groups=groups)

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
        off = self.group_offsets()
        if off is not None:
            return float(np.mean([np.mean(self.values[a:b] <= tokens) for a, b in zip(off[:-1], off[1:])]))
        w = np.ones_like(self.values) if self.weights is None else self.weights
        return float(w[self.values <= tokens].sum() / w.sum())

    def mean_tokens(self) -> float:
        """Mean length, tokens."""
        off = self.group_offsets()
        if off is not None:
            return float(np.mean([self.values[a:b].mean() for a, b in zip(off[:-1], off[1:])]))
        if self.weights is None:
            return float(self.values.mean())
        return float((self.values * self.weights).sum() / self.weights.sum())

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "empirical", "values": self.values, "weights": self.weights,
                "group_offsets": self.group_offsets()}


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file:"


def _leading_empty_lines(path: str) -> int:
    """How many empty lines a (possibly gzip-compressed) text file starts with (polars skips them
    before a header); 0 if the start cannot be read (polars then reports the problem)."""
    import gzip

    try:
        with open(path, "rb") as f:
            head = f.read(65536)
        if head[:2] == b"\x1f\x8b":
            with gzip.open(path, "rb") as g:
                head = g.read(65536)
    except (OSError, EOFError, ValueError):
        return 0
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    n = 0
    for line in head.split(b"\n")[:-1]:
        if line not in (b"", b"\r"):
            break
        n += 1
    return n


def _parse(cells: Any) -> Any:
    """A polars String Series parsed as float64 (null where a cell is empty or not a number)."""
    import polars as pl

    return cells.str.strip_chars().cast(pl.Float64, strict=False)


def _read_csv(p: str, has_header: bool | None) -> tuple[Any, list[str], int, str]:
    """Reads a CSV file as text cells; returns the data rows, the column names, the line number of
    the first data row and a hint for an unknown column (how the header was decided)."""
    import polars as pl

    skip = _leading_empty_lines(p)
    try:
        raw = pl.read_csv(p, has_header=False, infer_schema=False, skip_rows=skip)
    except pl.exceptions.NoDataError:
        raw = pl.DataFrame()
    except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic)
        raise invalid("lengths.path", f"cannot read {p!r} as CSV: {e}") from None
    if raw.height == 0:
        raise invalid("lengths.path", f"cannot read {p!r} as CSV: the file has no lines")
    first = [raw[c][0] for c in raw.columns]
    if has_header is None:
        header = not all(x is not None and _parse(pl.Series([x])).null_count() == 0 for x in first)
        hint = ("; its first line was read as the header (has_header=False, --has-header false on the command "
                "line, reads it as data)" if header else
                "; its first line is numbers, so it was read as data (has_header=True, --has-header true on the "
                "command line, reads it as the header)")
    else:
        header = bool(has_header)
        hint = ""
    if header:
        names = ["" if x is None else x for x in first]
        data = raw.slice(1)
    else:
        names = [f"column_{i + 1}" for i in range(raw.width)]
        data = raw
    if len(set(names)) == len(names):  # (the caller refuses duplicated names: they cannot label a frame)
        data = data.rename(dict(zip(data.columns, names)))
    return data, names, skip + 1 + int(header), hint


def _infer(cells: Any) -> Any:
    """Prompt keys read as text, typed as polars' CSV inference would (integers, floats or text), so
    grouped files keep the key order they always had."""
    import polars as pl

    for dtype in (pl.Int64, pl.Float64):
        try:
            return cells.cast(dtype, strict=True)
        except (Exception, pl.exceptions.PanicException):
            continue
    return cells


def _column_floats(col: Any, key: str, p: str, place: str, first_line: int, what: str, ok: Any) -> np.ndarray:
    """A column of a length file as float64, or a ScenarioError naming the first bad cell's place."""
    import polars as pl

    where = f"{col.name!r} of {p!r}"
    dtype = col.dtype
    if dtype == pl.String:
        nums = _parse(col)
    elif dtype.is_numeric():
        nums = col.cast(pl.Float64)
    else:
        raise invalid(key, f"column {where} must hold numbers, got type {dtype}")
    x = nums.to_numpy()
    bad = ~ok(x)  # NaN (a null too) fails every test
    if bad.any():
        i = int(np.argmax(bad))
        cell = col[i]
        shown = "an empty cell" if cell is None else (repr(cell) if dtype == pl.String and nums[i] is None
                                                      else (cell.strip() if isinstance(cell, str) else str(cell)))
        raise invalid(key, f"{place} {first_line + i} of {p!r}: must be {what}, got {shown}")
    return x


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


strict_init(LogNormal, "lengths.", "LogNormal")
strict_init(Empirical, "lengths.", "Empirical")

Lengths = LogNormal | Empirical


# ------------------------------------------------------------------------------------ lengths that drift
_DRIFT = {n: _check.part_field("LengthDrift", n) for n in ("kind", "rate", "table", "max_tokens", "feedback")}
_DRIFT_SCALE_HI = 1e6


@dataclass(frozen=True)
class LengthDrift:
    """Answer lengths that change during training (``Scenario.length_drift``), as reasoning RL runs
    show: every answer whose request starts under policy version ``v`` (the rollout's version, so
    ``sync_every`` counts) is drawn from ``Scenario.lengths`` with its tokens multiplied by
    ``scale(v)``, then cut at ``max_tokens``. The random draws are the same as without a drift, so
    a drift of scale 1 gives the undrifted run bit for bit.

    ``scale(v)``: ``"linear"``: ``1 + rate * v``; ``"log"``: ``1 + rate * log(1 + v)``; ``"exp"``:
    ``exp(rate * v)`` (``rate`` log-tokens per version: the drift :func:`rollsim.calibrate` fits,
    ``mu_t = mu + drift * t``); ``"table"``: linear interpolation of ``table`` =
    ``((version, scale), ...)``, held constant outside it. Never below 1e-6.

    Parameters
    ----------
    kind : {"linear", "log", "exp", "table"}
    rate : float
        Per version (``linear``, ``exp``) or per unit of ``log(1 + v)`` (``log``), in [-1, 100];
        unused for tables.
    table : tuple of (float, float)
        ``(version, scale)`` pairs, versions finite, >= 0 and strictly increasing, scales in
        (0, 1e6] (``kind="table"`` only; :meth:`from_metrics` builds one from a run's mean lengths).
    max_tokens : float, optional
        Cap of the scaled lengths, tokens, in [1, 2**40]. ``None`` (default): the generation limit
        of ``Scenario.lengths`` (``LogNormal.max_tokens``; ``Empirical.max_tokens``, else its
        longest value). Answers cut there are the run's clipped answers (verl
        ``response_length/clip_ratio``): ``res.samples["length_tokens"] == max_tokens``.
    feedback : float
        In [0, 1]. Length feedback: at every weight load the next policy's log length scale moves
        this share of the way from the mean length generated since the previous load to the mean
        length trained since then (``scale *= (trained / generated) ** feedback``). A model of how
        training on a biased sample moves the policy (drop-at-consumption caps train short answers
        and "can push the model toward short answers"), not a measurement; 0 (default): none.

    Raises
    ------
    ScenarioError (ValueError)
        A bad kind, rate, table, max_tokens or feedback (names ``length_drift.<field>``).
    """

    kind: str = _DRIFT["kind"]["default"]
    rate: float = _DRIFT["rate"]["default"]
    table: tuple[tuple[float, float], ...] = tuple(_DRIFT["table"]["default"])
    max_tokens: float | None = _DRIFT["max_tokens"]["default"]
    feedback: float = _DRIFT["feedback"]["default"]

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        choices = _DRIFT["kind"]["choices"]
        if not isinstance(self.kind, str) or self.kind not in choices:
            raise invalid("length_drift.kind", f"must be one of {', '.join(choices)}, got {self.kind!r}")
        for name in ("rate", "max_tokens", "feedback"):  # the engine's ranges and messages
            value = getattr(self, name)
            if value is not None or name != "max_tokens":
                spec = _DRIFT[name]
                set_(self, name, _check.within(spec, value, _check.real(spec["path"], value)))
        set_(self, "table", _drift_table(self.table, self.kind == "table"))

    def scale(self, versions: Any) -> np.ndarray:
        """The length scale of each policy version (array-like of versions >= 0), without feedback:
        the engine's formula (``rollsim._rollsim.length_drift_scale``)."""
        v = np.asarray(versions, dtype=np.float64)
        out = _rollsim.length_drift_scale(self.to_dict(), v.ravel().tolist())
        return np.asarray(out, dtype=np.float64).reshape(v.shape)

    def to_dict(self, lengths: LogNormal | Empirical | None = None) -> dict[str, Any]:
        """The engine's form; ``max_tokens=None`` resolved from ``lengths`` when given."""
        cap = self.max_tokens
        if cap is None and lengths is not None:
            cap = lengths.max_tokens if isinstance(lengths, LogNormal) else (
                lengths.max_tokens if lengths.max_tokens is not None else _longest(lengths))
        return {"kind": self.kind, "rate": self.rate, "table": [list(p) for p in self.table], "max_tokens": cap,
                "feedback": self.feedback}

    @classmethod
    def from_metrics(cls, mean: Any, lengths: LogNormal | Empirical, *, steps: Any = None,
                     max_tokens: float | None = None, feedback: float = 0.0) -> LengthDrift:
        """A ``"table"`` drift whose lengths have a real run's mean length at each step.

        Parameters
        ----------
        mean : array-like of float, shape (n,)
            Mean answer length of each step, tokens (verl ``response_length/mean``, AReaL
            ``ppo_actor/seq_len`` minus the prompt, slime ``response_len/mean``); each > 0.
        lengths : LogNormal | Empirical
            The scenario's base distribution (what version 0 generates before any scale).
        steps : array-like of float, shape (n,), optional
            The policy version that generated each row, strictly increasing and >= 0; default
            ``0, 1, ..., n - 1`` (a synchronous run: step ``t``'s batch comes from version ``t``;
            verl counts steps from 1, so pass ``step - 1``).
        max_tokens : float, optional
            The cap of the drifted lengths (default: the distribution's limit, as the drift's).
        feedback : float
            As the class's.

        Returns
        -------
        LengthDrift
            ``kind="table"``, one ``(step, scale)`` point per row: the scale whose capped mean
            ``E[min(scale * X, max_tokens)]`` (``X`` from ``lengths``) equals the row's mean, solved
            exactly (for lognormal lengths a scale is a shift of ``mu``, the fit
            :mod:`rollsim.calibration` uses). A mean at or above the cap is refused.

        Raises
        ------
        ScenarioError (ValueError)
            Means not > 0, or at or above the cap; steps not increasing; a bad ``lengths``.

        Notes
        -----
        To fit the shape (``sigma``) from the per-step longest answers too, use
        :func:`rollsim.calibrate`: its ``lengths.drift`` is ``LengthDrift("exp", rate=drift)`` on
        ``LogNormal(lengths.mu, lengths.sigma)`` (:meth:`rollsim.calibration.Calibrated.length_drift`).
        """
        if not isinstance(lengths, (LogNormal, Empirical)):
            raise invalid("lengths", f"must be LogNormal(...) or Empirical(...), got {type(lengths).__name__}")
        m = _floats("mean", mean, "must be > 0 tokens")
        if m.ndim != 1 or m.size == 0:
            raise invalid("mean", f"must be a non-empty sequence of mean lengths, got shape {m.shape}")
        st = np.arange(m.size, dtype=np.float64) if steps is None else _floats("steps", steps, "must be >= 0")
        if st.shape != m.shape:
            raise invalid("steps", f"must have one step per mean ({m.size} means, {st.size} steps)")
        bad_step = ~np.isfinite(st) | (st < 0) | np.r_[False, np.diff(st) <= 0]
        if bad_step.any():
            i = int(np.argmax(bad_step))
            raise invalid("steps", f"must be finite, >= 0 and strictly increasing; item {i} is {st[i]}")
        cap = cls(max_tokens=max_tokens).to_dict(lengths)["max_tokens"]
        bad = ~((m > 0) & (m < cap))
        if bad.any():
            i = int(np.argmax(bad))
            raise invalid("mean", f"must be > 0 and below the cap ({cap:g} tokens); item {i} is {m[i]}")
        scales = _scale_for_mean(lengths, m, cap)
        hi = _DRIFT_SCALE_HI
        if not ((scales > 0) & (scales <= hi)).all():
            i = int(np.argmax(~((scales > 0) & (scales <= hi))))
            raise invalid("mean", f"item {i} ({m[i]} tokens) needs a scale of {scales[i]:g}, outside (0, 1e6]")
        return cls("table", table=tuple(zip(st.tolist(), scales.tolist())), max_tokens=max_tokens, feedback=feedback)


def _longest(lengths: Empirical) -> float:
    v = lengths.values if lengths.weights is None else lengths.values[lengths.weights > 0]
    return float(v.max())


def _drift_table(table: Any, needed: bool) -> tuple[tuple[float, float], ...]:
    """``table`` as float pairs, checked as the engine checks it (its messages)."""
    key = "length_drift.table"
    try:
        pairs = tuple((_check.real(key, a), _check.real(key, b)) for a, b in table)
    except (TypeError, ValueError) as e:
        if isinstance(e, ValueError) and str(e).startswith(key):
            raise
        raise invalid(key, f"must be (version, scale) pairs, got {table!r}") from None
    if not needed:
        return pairs
    if not pairs:
        raise invalid(key, "must hold at least one (version, scale) pair")
    for i, (v, _) in enumerate(pairs):
        if not (math.isfinite(v) and v >= 0) or (i > 0 and v <= pairs[i - 1][0]):
            raise invalid(key, f"versions must be finite, >= 0 and strictly increasing; item {i} has version {v!r}")
    for i, (_, sc) in enumerate(pairs):
        if not 0 < sc <= _DRIFT_SCALE_HI:
            raise invalid(key, f"scales must be in (0, 1e6]; item {i} has scale {sc!r}")
    return pairs


def _scale_for_mean(lengths: LogNormal | Empirical, mean: np.ndarray, cap: float) -> np.ndarray:
    """The scale ``s`` with ``E[min(s X, cap)] = mean`` for each mean (below ``cap``)."""
    if isinstance(lengths, LogNormal):
        # a scale s is a shift of mu by log s; bisection on the engine's closed-form capped mean
        mu, sigma = lengths.mu, lengths.sigma
        out = np.empty(mean.shape)
        for i, m in enumerate(mean.tolist()):
            lo, hi = -200.0, 200.0  # log s (|mu + log s| may leave [-100, 100]: the formula stays finite)
            for _ in range(100):
                mid = 0.5 * (lo + hi)
                if _rollsim.lognormal_mean(mu + mid, sigma, cap) < m:
                    lo = mid
                else:
                    hi = mid
            out[i] = math.exp(0.5 * (lo + hi))
        return out
    off = lengths.group_offsets()
    if off is not None:  # a uniform prompt, then a uniform answer: each value weighs 1 / (groups * size)
        sizes = np.diff(off)
        w = np.repeat(1.0 / sizes, sizes)
    else:
        w = np.ones_like(lengths.values) if lengths.weights is None else lengths.weights
    order = np.argsort(lengths.values, kind="stable")
    x, w = lengths.values[order], w[order] / w.sum()
    wx = np.concatenate([[0.0], np.cumsum(w * x)])
    cw = np.concatenate([[0.0], np.cumsum(w)])

    def capped_mean(s: np.ndarray) -> np.ndarray:
        k = np.searchsorted(x, cap / s, side="left")  # values below cap / s stay uncut
        return s * wx[k] + cap * (1.0 - cw[k])

    s_lo = np.full(mean.shape, 1e-9)
    s_hi = np.full(mean.shape, 2.0 * _DRIFT_SCALE_HI)
    for _ in range(200):  # bisection in log space (the capped mean grows with s)
        mid = np.sqrt(s_lo * s_hi)
        below = capped_mean(mid) < mean
        s_lo = np.where(below, mid, s_lo)
        s_hi = np.where(below, s_hi, mid)
    return np.sqrt(s_lo * s_hi)


strict_init(LengthDrift, "length_drift.", "LengthDrift")
