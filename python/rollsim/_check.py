"""Argument checks shared by the public API: each returns the normalized value or raises
:class:`~rollsim.errors.ScenarioError` (a ``ValueError``) whose message starts with the field."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["integer", "number", "real", "flag"]

_INTS = (int, np.integer)
_NUMBERS = (int, float, np.integer, np.floating)


def integer(field: str, value: Any, lo: int, hi: int | None = None) -> int:
    """An integer (not a bool) in ``[lo, hi]`` (or ``>= lo`` without ``hi``)."""
    if hi is None:
        if isinstance(value, bool) or not isinstance(value, _INTS) or int(value) < lo:
            raise invalid(field, f"must be an integer >= {lo}, got {value!r}")
        return int(value)
    if isinstance(value, bool) or not isinstance(value, _INTS):
        raise invalid(field, f"must be an integer in [{lo}, {hi}], got {type(value).__name__} {value!r}")
    if not lo <= int(value) <= hi:
        raise invalid(field, f"must be in [{lo}, {hi}], got {value}")
    return int(value)


def real(field: str, value: Any) -> float:
    """Any real number (not a bool), as a float; huge ints become inf."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise invalid(field, f"must be a number, got {type(value).__name__} {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf


def number(field: str, value: Any, *, allow_zero: bool = False, what: str = "a number") -> float:
    """A finite number, > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise invalid(field, f"must be {what}, got {type(value).__name__} {value!r}")
    v = real(field, value)
    if not (math.isfinite(v) and (v >= 0 if allow_zero else v > 0)):
        raise invalid(field, f"must be finite and {'>= 0' if allow_zero else '> 0'}, got {v}")
    return v


def flag(field: str, value: Any) -> bool:
    """``True`` or ``False`` (numpy bools accepted), nothing merely truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise invalid(field, f"must be True or False, got {value!r}")
    return bool(value)
