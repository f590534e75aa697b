"""Stable run keys: a SHA-256 of a canonical encoding of the engine's scenario dict and the seed.

The encoding depends only on values (never on Python's ``hash()``, dict order, the process or the
machine): ``None`` -> ``n``, ``bool`` -> ``b0``/``b1``, ``int`` -> ``i<decimal>``, ``float`` ->
``f<float.hex()>`` (exact, so 0.1 and 0.1000000000000001 differ), ``str`` -> ``s<json>``, numpy arrays ->
``a<shape>:<sha256 of the little-endian float64 bytes>``, dicts -> keys sorted, lists in order.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import numpy as np

__all__ = ["KEY_VERSION", "canonical", "scenario_key", "run_key", "KeyMaker"]

#: Bumped if the encoding ever changes (old keys would then no longer match: a re-run recomputes).
KEY_VERSION = b"rollsim-sweep-v1"


def _array_digest(a: np.ndarray, cache: dict[int, tuple[np.ndarray, str]] | None) -> str:
    if cache is not None:
        hit = cache.get(id(a))
        if hit is not None and hit[0] is a:
            return hit[1]
    b = np.ascontiguousarray(a, dtype="<f8")
    d = f"a{list(b.shape)}:{hashlib.sha256(b.tobytes()).hexdigest()}"
    if cache is not None and not a.flags.writeable:  # read-only arrays (Empirical's) cannot change
        cache[id(a)] = (a, d)
    return d


def canonical(value: Any, _cache: dict[int, tuple[np.ndarray, str]] | None = None) -> str:
    """The canonical text of a scenario dict (or any nested value of one); see the module doc."""
    if value is None:
        return "n"
    if isinstance(value, (bool, np.bool_)):
        return "b1" if value else "b0"
    if isinstance(value, (int, np.integer)):
        return f"i{int(value)}"
    if isinstance(value, (float, np.floating)):
        return "f" + float(value).hex()
    if isinstance(value, str):
        return "s" + json.dumps(value)
    if isinstance(value, np.ndarray):
        return _array_digest(value, _cache)
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(json.dumps(str(k)) + ":" + canonical(v, _cache) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical(v, _cache) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} in a run key")


def _without_seed(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k != "seed"}


def scenario_key(engine_dict: dict[str, Any]) -> str:
    """32 hex digits identifying a scenario regardless of its seed (groups the seeds of one scenario)."""
    h = hashlib.sha256(KEY_VERSION + b"\0scenario\0" + canonical(_without_seed(engine_dict)).encode())
    return h.hexdigest()[:32]


def run_key(engine_dict: dict[str, Any], seed: int | None = None) -> str:
    """32 hex digits identifying one run: the scenario's engine dict (``Scenario.to_dict()``) and
    the seed (``engine_dict["seed"]`` unless given)."""
    s = engine_dict["seed"] if seed is None else seed
    h = hashlib.sha256(KEY_VERSION + b"\0run\0" + canonical(_without_seed(engine_dict)).encode())
    h.update(b"\0seed=" + str(int(s)).encode())
    return h.hexdigest()[:32]


class KeyMaker:
    """Keys for many seeds of one scenario: hashes the scenario once, then one update per seed."""

    def __init__(self, engine_dict: dict[str, Any], cache: dict[int, tuple[np.ndarray, str]] | None = None):
        text = canonical(_without_seed(engine_dict), cache).encode()
        self.scenario_key = hashlib.sha256(KEY_VERSION + b"\0scenario\0" + text).hexdigest()[:32]
        self._run = hashlib.sha256(KEY_VERSION + b"\0run\0" + text)

    def run_key(self, seed: int) -> str:
        h = self._run.copy()
        h.update(b"\0seed=" + str(int(seed)).encode())
        return h.hexdigest()[:32]
