"""Small helpers for the words of messages and tables."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from typing import Any


def count(n: int | float, noun: str, plural: str | None = None) -> str:
    """``"1 GPU"``, ``"8 GPUs"``: ``n`` and ``noun``, plural (``plural`` or ``noun + "s"``) unless ``n`` is 1."""
    return f"{n:g} {noun if n == 1 else (plural or noun + 's')}" if isinstance(n, float) else \
        f"{n} {noun if n == 1 else (plural or noun + 's')}"


def closest(name: str, known: Iterable[str], cutoff: float = 0.9) -> str | None:
    """The entry of ``known`` closest to ``name`` by :func:`difflib.get_close_matches` (similarity
    ratio >= ``cutoff``), None when none is that close: for "did you mean ...?" on a probable typo.

    The default 0.9 takes one wrong, missing or extra character in a dotted option name of 20
    characters or more (``actor_rollout_ref.rollout.nn`` -> ``actor_rollout_ref.rollout.n``), not
    two real options that share a prefix (``actor.ppo_mini_batch_size`` is 0.81 from
    ``actor.ppo_epochs``)."""
    import difflib

    found = difflib.get_close_matches(name, list(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(key: str, allowed: Iterable[str]) -> str:
    """``"; did you mean rollout_slots?"`` for a key that is a near miss of an allowed one
    (:func:`closest`, similarity >= 0.8, the command line's cutoff for flags: one wrong, missing or
    extra character in a key of 10 characters, ``muu`` for ``mu``), else ``""``."""
    found = closest(str(key), sorted(allowed), cutoff=0.8)
    return f"; did you mean {found}?" if found else ""


# ------------------------------------------------------------------------------------ tables
#: How every table the command line prints shows an undefined value (NaN: a mean or a max over no
#: samples; a value not given): ``-``, as the README says (``null`` in JSON, NaN in csv / frames).
UNDEFINED = "-"


def undefined(x: Any) -> bool:
    """Whether ``x`` is shown as :data:`UNDEFINED`: None or a float NaN."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def sig(x: float, digits: int = 4) -> str:
    """``x`` to ``digits`` significant digits, positional (``0.0001167``, ``14.67``, ``8760``,
    ``30.00``) unless it is below 1e-4 or from 1e6 on (``1.167e-05``)."""
    if x == 0 or not math.isfinite(x):
        return "0" if x == 0 else str(x)
    mag = math.floor(math.log10(abs(x)))
    if mag < -4 or mag >= 6:
        return f"{x:.{digits - 1}e}"
    return f"{x:.{max(digits - 1 - mag, 0)}f}"


def cell(v: Any, col: str, decimals: Mapping[str, int] | None = None, given: Collection[str] = ()) -> str:
    """One value of column ``col`` as :func:`format_table` prints it: :data:`UNDEFINED` for None /
    NaN, a float of a ``given`` column (a value the user gave, e.g. a sweep's grid) in its shortest
    form (``30``, ``0.25``), other floats to ``decimals[col]`` decimals (``col`` without a ``_low``
    / ``_high`` suffix) or to 4 significant digits (:func:`sig`), anything else as ``str``."""
    if undefined(v):
        return UNDEFINED
    if isinstance(v, float) and col in given:
        return f"{v:.15g}"
    if isinstance(v, float):
        base = col.removesuffix("_low").removesuffix("_high")
        return f"{v:.{decimals[base]}f}" if decimals and base in decimals and math.isfinite(v) else sig(v)
    return str(v)


def format_table(df: Any, notes: dict[str, str] | None = None, row_notes: dict[int, str] | None = None, *,
                 decimals: Mapping[str, int] | None = None, given: Collection[str] = ()) -> str:
    """A polars frame as an aligned text table for the terminal, the command line's one table
    formatter (``whatif``, ``calibrate``, ``sweep``): every row and column, text in full (never
    cut), numbers right-aligned, floats to the decimals of their unit (``decimals``: column ->
    decimals) or to 4 significant digits (:func:`sig`; a calibration's parameters differ in unit
    row by row), the values of the ``given`` columns as given (:func:`cell`), an undefined value
    (None, NaN) as :data:`UNDEFINED`.

    A column with a NaN that ``notes`` explains (column -> why it is undefined) gets a footnote
    mark (``*``, ``**``, ...) and, under the table, that reason; csv / json keep the exact values.
    ``row_notes`` (row index -> why the whole row is undefined) marks those rows' first cell
    instead (``!``, ``!!``, ... one mark per distinct reason), and their NaNs mark no column."""
    numeric = [c for c, t in df.schema.items() if t.is_numeric()]
    row_notes = row_notes or {}
    reasons = list(dict.fromkeys(row_notes.values()))
    row_marks = {i: "!" * (reasons.index(why) + 1) for i, why in row_notes.items()}
    marks: dict[str, str] = {}
    for c in df.columns:
        if c in (notes or {}) and df.schema[c].is_float() and any(
                x is not None and math.isnan(x) for i, x in enumerate(df[c]) if i not in row_notes):
            marks[c] = "*" * (len(marks) + 1)
    header = [c + marks.get(c, "") for c in df.columns]
    rows = [header] + [[cell(v, c, decimals, given) + (row_marks.get(i, "") if j == 0 else "") for j, (v, c) in
                        enumerate(zip(r, df.columns))] for i, r in enumerate(df.iter_rows())]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(v.rjust(w) if c in numeric else v.ljust(w) for v, w, c in zip(r, widths, df.columns)).rstrip()
             for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += [f"{m} {c} {UNDEFINED} (undefined): {(notes or {})[c]}" for c, m in marks.items()]
    lines += [f"{'!' * (i + 1)} {why}" for i, why in enumerate(reasons)]
    return "\n".join(lines)
