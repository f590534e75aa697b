"""Argument checks shared by the public API: each returns the normalized value or raises
:class:`~rollsim.errors.ScenarioError` (a ``ValueError``) whose message starts with the field."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["integer", "length_edges", "number", "real", "given", "bounded", "flag", "show", "fmt_bound", "part_field", "within",
           "part_integer", "part_bounded"]

_INTS = (int, np.integer)
_NUMBERS = (int, float, np.integer, np.floating)
# ints with more digits than this are shown as 2**N, 10**N or about 1.23e+45 (never in full: a
# 5000-digit int cannot even be printed, Python limits int-to-str conversions)
_SHOW_DIGITS = 18


def show(value: Any) -> str:
    """A number as error messages print it: floats by ``repr`` (``1e-320``, ``nan``), small ints in
    full, huge ints as ``2**2000``, ``10**400`` or ``about 1.15e+602``."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return repr(value)
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    v = int(value)
    a = abs(v)
    if a < 10**_SHOW_DIGITS:
        return str(v)
    sign = "-" if v < 0 else ""
    if a & (a - 1) == 0:
        return f"{sign}2**{a.bit_length() - 1}"
    e = int(math.log10(a))
    if 10**e > a:  # log10 rounded up
        e -= 1
    if a == 10**e:
        return f"{sign}10**{e}"
    lead = a // 10 ** (e - 3)  # four leading digits (exact integer arithmetic)
    mantissa = f"{lead / 1000:.3f}".rstrip("0").rstrip(".")
    return f"about {sign}{mantissa}e+{e}"


def _given(value: Any) -> str:
    """``repr`` of what the user gave, except huge ints (shown by :func:`show`)."""
    return show(value) if isinstance(value, _INTS) and not isinstance(value, bool) else repr(value)


def fmt_bound(x: float) -> str:
    """A range bound as messages print it: ``0``, ``0.5``, ``1000``, ``16777216``, ``1e-6``, ``1e12``."""
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    mantissa, _, exp = f"{x:e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    if mantissa.lstrip("-") == "1" and abs(int(exp)) >= 3:
        return f"{mantissa}e{int(exp)}"  # a power of ten: 1e-6, 1e12
    if float(x).is_integer() and abs(x) < 2**53:
        return str(int(x))
    if 1e-3 <= abs(x) < 1e6:
        return repr(float(x))
    return f"{mantissa}e{int(exp)}"


def integer(field: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer (not a bool) in ``[lo, hi]`` (or ``>= lo`` without ``hi``)."""
    if hi is None:
        if isinstance(value, bool) or not isinstance(value, _INTS) or int(value) < lo:
            raise invalid(field, f"must be an integer >= {lo}, got {_given(value)}")
        return int(value)
    if isinstance(value, bool) or not isinstance(value, _INTS):
        raise invalid(field, f"must be an integer in [{lo}, {hi}], got {type(value).__name__} {value!r}")
    if not lo <= int(value) <= hi:
        raise invalid(field, f"must be in [{lo}, {hi}], got {show(value)}")
    return int(value)


def real(field: str, value: Any) -> float:
    """Any real number (not a bool), as a float; an int too large for a float becomes inf, which
    the caller's range check must refuse, printing the value with :func:`given` (``got 10**400``,
    not ``got inf``). Prefer :func:`bounded`, which does both."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise invalid(field, f"must be a number, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf if value > 0 else -math.inf


def given(value: Any, converted: float) -> str:
    """How a range message prints ``value`` once converted by :func:`real`: ``converted`` as
    usual, but the original int when it was too large for a float (``10**400``, not ``inf``)."""
    if math.isinf(converted) and isinstance(value, _INTS) and not isinstance(value, bool):
        return show(value)
    return str(converted)


def number(field: str, value: Any, *, allow_zero: bool = False, what: str = "a number") -> float:
    """A finite number, > 0 (or >= 0 with ``allow_zero``); a message shows the value as given."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise invalid(field, f"must be {what}, got {type(value).__name__} {value!r}")
    try:
        v = float(value)
        got = _given(value) if isinstance(value, _INTS) else repr(v)  # as given: 0 for an int, not 0.0
    except OverflowError:  # an int too large for a float: out of range, not inf
        v, got = math.inf, show(value)
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        raise invalid(field, f"must be finite and {'>= 0' if allow_zero else '> 0'}, got {got}")
    return v


def bounded(field: str, value: Any, lo: float, hi: float, unit: str = "", *, lo_open: bool = False,
            extra: str = "", allow: tuple[float, ...] = ()) -> float:
    """A number (not a bool) in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``), or one of the special
    values in ``allow`` (e.g. ``math.inf``), as a float. Messages name the unit and the range:
    ``decode_tokens_per_s: must be in [1e-6, 1e9] tokens/s, got 1e-320``; ``extra`` describes the
    special values (``or inf (free prefill)``). The range is checked on the value as given, so an
    int too large for a float is out of range (``got 10**400``), never inf."""
    unit_s = f" {unit}" if unit else ""
    tail = f", {extra}" if extra else ""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        what = f"a number of {unit}" if unit else "a number"
        raise invalid(field, f"must be {what}{tail}, got {type(value).__name__} {value!r}")
    v: Any = int(value) if isinstance(value, _INTS) else float(value)
    if v in allow:
        return float(v)
    inside = (lo < v if lo_open else lo <= v) and v <= hi  # exact for ints of any size; False for nan
    try:
        if inside:
            return float(v)
    except OverflowError:  # only with hi = inf: an int too large for a float is still out of range
        pass
    rng = f"{'(' if lo_open else '['}{fmt_bound(lo)}, {fmt_bound(hi)}]"
    raise invalid(field, f"must be in {rng}{unit_s}{tail}, got {show(value)}")


def flag(field: str, value: Any) -> bool:
    """``True`` or ``False`` (numpy bools accepted), nothing merely truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(field, f"must be True or False, got {value!r}")
    return bool(value)


def part_field(cls: str, name: str) -> dict[str, Any]:
    """The engine's schema of field ``name`` of the part class ``cls`` (``"LogNormal"``, ``"mu"``):
    a dict of ``rollsim._rollsim.SCHEMA["parts"]`` (``path``, ``default``, ``lo``, ``hi``, ``range``,
    ``suffix``, ``choices``, ...)."""
    from rollsim import _rollsim

    for part in _rollsim.SCHEMA["parts"]:
        if part["class"] == cls:
            for f in part["fields"]:
                if f["name"] == name:
                    return dict(f)
    raise KeyError(f"{cls}.{name}")


def within(spec: dict[str, Any], value: Any, converted: float) -> float:
    """``converted`` (``value`` once through :func:`real`) if it lies in the schema field ``spec``'s
    range (its ends open or closed as the range is written), else the engine's message for it:
    ``lengths.mu: must be in [-100, 100] (the log of the median length in tokens), got 101.0``."""
    lo, hi, v = spec["lo"], spec["hi"], converted
    if (lo < v if spec["lo_open"] else lo <= v) and (v < hi if spec["hi_open"] else v <= hi):  # False for nan
        return v
    raise invalid(spec["path"], f"must be in {spec['range']}{spec['suffix']}, got {given(value, v)}")


def part_integer(spec: dict[str, Any], value: Any) -> int:
    """:func:`integer` in the schema field ``spec``'s range, named by its path; a field with special
    values besides (``extra``) names them: ``agentic.env_slots: must be in [1, 16777216], or None
    (unbounded), got 0``."""
    if not spec["extra"]:
        return integer(spec["path"], value, spec["lo"], spec["hi"])
    tail = f"{spec['range']}, {spec['extra']}"
    if isinstance(value, bool) or not isinstance(value, _INTS):
        raise invalid(spec["path"], f"must be an integer in {tail}, got {type(value).__name__} {value!r}")
    if not spec["lo"] <= int(value) <= spec["hi"]:
        raise invalid(spec["path"], f"must be in {tail}, got {show(value)}")
    return int(value)


def part_bounded(spec: dict[str, Any], value: Any, **kw: Any) -> float:
    """:func:`bounded` with the schema field ``spec``'s path, range, unit and special values."""
    return bounded(spec["path"], value, spec["lo"], spec["hi"], spec["unit"], lo_open=spec["lo_open"],
                   extra=spec["extra"], **kw)


def length_edges(edges: Any) -> list[float]:
    """Bin edges of answer lengths, in tokens: a non-empty, finite, strictly increasing sequence of
    numbers, as floats; else ``ScenarioError`` naming ``edges``."""
    try:
        if isinstance(edges, (str, bytes)) or any(isinstance(x, (str, bytes, bool)) for x in edges):
            raise TypeError
        e = [float(x) for x in edges]
    except (TypeError, ValueError, OverflowError):
        raise invalid("edges", f"must be a sequence of numbers of tokens, got {edges!r}") from None
    if not e or not all(math.isfinite(x) for x in e) or any(b <= a for a, b in zip(e, e[1:])):
        raise invalid("edges", f"must be finite, non-empty and strictly increasing, got {e}")
    return e
