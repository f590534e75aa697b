"""Small helpers for the words of messages and tables."""

from __future__ import annotations


def count(n: int | float, noun: str, plural: str | None = None) -> str:
    """``"1 GPU"``, ``"8 GPUs"``: ``n`` and ``noun``, plural (``plural`` or ``noun + "s"``) unless ``n`` is 1."""
    return f"{n:g} {noun if n == 1 else (plural or noun + 's')}" if isinstance(n, float) else \
        f"{n} {noun if n == 1 else (plural or noun + 's')}"
