"""Small helpers for the words of messages and tables."""

from __future__ import annotations

from collections.abc import Iterable


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
