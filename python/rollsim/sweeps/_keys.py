"""Stable run keys: a SHA-256 of a versioned canonical form of the scenario and the seed.

Key version 2 (this rollsim's; ``docs/sweeps.md``, "Run keys", is the reference): the canonical form
is JSON (keys sorted, no spaces, ASCII) of the :class:`~rollsim.Scenario`'s own fields, not of the
engine dict ``Scenario.to_dict()`` (the wire format, which may change):

- an object (the scenario and its parts: lengths, pipeline, ``LengthBalanced``) is a JSON object
  holding ``"@type"`` (its class name) and each of its dataclass fields (those not starting with
  ``_``; the scenario's ``seed`` never), except fields whose canonical value equals that of their
  default (:data:`DEFAULTS_V2`; a field added later: its dataclass default), so that a field added
  with a default that keeps the old behaviour leaves every existing key unchanged;
- ``None`` is ``null``, booleans ``true``/``false``, strings JSON strings, tuples and lists arrays;
- a number whose value is an integer is that integer (``30`` and ``30.0`` are the same value, as
  they compare equal in Python); any other float is the string ``float.hex(x)`` (exact; ``"inf"``
  for infinity); NaN is refused;
- a numpy array (empirical values, weights, group keys) is ``{"@array": <dtype>, "shape": [...],
  "sha256": <hex SHA-256 of its C-order bytes>}`` (object arrays: of the canonical JSON of their
  items, dtype ``"object"``).

``scenario_key`` is the first 32 hex digits of ``SHA-256(b"rollsim-sweep-key-v2\\0scenario\\0" +
form)``; ``run_key`` those of ``SHA-256(b"rollsim-sweep-key-v2\\0run\\0" + form + b"\\0seed=" +
decimal seed)``. Nothing depends on Python's ``hash()``, dict order, the process or the machine.

Key version 1 (rollsim before key version 2) hashed the engine dict; it is kept, frozen
(:func:`engine_dict_v1`), so that sweep directories written with it still resume with their keys.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from typing import Any

import numpy as np

from rollsim.errors import invalid

__all__ = ["KEY_VERSION", "KEY_VERSIONS", "canonical_form", "scenario_key", "run_key", "KeyMaker",
           "engine_dict_v1", "canonical_v1", "DEFAULTS_V2"]

#: The key version of new sweep directories (written in their ``_rollsim_sweep.json``).
KEY_VERSION = 2
#: Key versions this rollsim computes (a directory keeps the version it was created with).
KEY_VERSIONS = (1, 2)
_PREFIX = {1: b"rollsim-sweep-v1", 2: b"rollsim-sweep-key-v2"}

_ArrayCache = dict[int, tuple[np.ndarray, Any]]

#: Defaults of key version 2, per class and field, as canonical values: a field at this value is
#: left out of the canonical form. Frozen with the version: if a default changes in the code, a
#: scenario at the old default still gets its old key and one at the new default a new key.
DEFAULTS_V2: dict[str, dict[str, Any]] = {
    "Scenario": {
        "rollout_slots": 256, "decode_tokens_per_s": 30, "batch_size": 512, "train_step_s": 60,
        "horizon_s": 7200, "lengths": {"@type": "LogNormal"}, "pipeline": {"@type": "FullyAsync"},
        "rng": "fast", "weight_sync_s": 0, "train_s_per_token": 0, "group_size": 1, "prompt_tokens": 0,
        "prefill_tokens_per_s": "inf", "prefix_sharing": True, "clear_cache_on_update": True,
        "slots_per_instance": 0, "decode_slowdown_per_seq": 0, "rollout_pause_s": 0, "logprob_s_per_token": 0,
        "decode_throughput_table": None, "kv_cache_tokens": None,
    },
    "LogNormal": {"mu": "0x1.e666666666666p+2", "sigma": 1, "max_tokens": 16384, "group_correlation": 0},
    "Empirical": {"weights": None, "max_tokens": None, "name": None, "groups": None},
    "OffPolicy": {"k": 1, "over_sampling": None, "keep_partial": False},
    "Synchronous": {"k": 0, "over_sampling": None, "keep_partial": False},
    "OneStepAsync": {"k": 1, "over_sampling": None, "keep_partial": False},
    "FullyAsync": {
        "max_staleness": None, "on_stale": "drop", "admission_eta": None, "max_lag_samples": None,
        "max_ready_groups": None, "batch_order": "fifo", "on_update": "continue", "lag_release": "take",
    },
    "LengthBalanced": {"edges": [1000, 8000], "quotas": None, "share": "0x1.ccccccccccccdp-1"},
}

_NO_DEFAULT = object()


def _number(x: float) -> int | str:
    if math.isnan(x):
        raise ValueError("NaN cannot be encoded in a run key")
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return int(x) if x.is_integer() else x.hex()


def _array_v2(a: np.ndarray, cache: _ArrayCache | None) -> dict[str, Any]:
    if cache is not None:
        hit = cache.get(id(a))
        if hit is not None and hit[0] is a and isinstance(hit[1], dict):
            return hit[1]
    if a.dtype == object:
        text = json.dumps([_tree(x, cache) for x in a.ravel().tolist()], sort_keys=True, separators=(",", ":"))
        out = {"@array": "object", "shape": list(a.shape), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    else:
        b = np.ascontiguousarray(a)
        out = {"@array": b.dtype.str, "shape": list(b.shape), "sha256": hashlib.sha256(b.tobytes()).hexdigest()}
    if cache is not None and not a.flags.writeable:  # read-only arrays (Empirical's) cannot change
        cache[id(a)] = (a, out)
    return out


def _default_tree(cls: type, f: dataclasses.Field[Any]) -> Any:
    table = DEFAULTS_V2.get(cls.__name__)
    if table is not None and f.name in table:
        return table[f.name]
    if f.default is not dataclasses.MISSING:
        return _tree(f.default)
    if f.default_factory is not dataclasses.MISSING:
        return _tree(f.default_factory())
    return _NO_DEFAULT


@functools.lru_cache(maxsize=64)
def _fields(cls: type) -> tuple[tuple[str, Any], ...]:
    """(name, canonical default) of each field of ``cls`` that the canonical form holds."""
    return tuple((f.name, _default_tree(cls, f)) for f in dataclasses.fields(cls)
                 if not f.name.startswith("_") and not (cls.__name__ == "Scenario" and f.name == "seed"))


def _tree(value: Any, cache: _ArrayCache | None = None) -> Any:
    """The canonical value (JSON-ready) of a scenario or any value in it."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return _number(float(value))
    if isinstance(value, np.ndarray):
        return _array_v2(value, cache)
    if isinstance(value, (list, tuple)):
        return [_tree(v, cache) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        out: dict[str, Any] = {"@type": cls.__name__}
        for name, default in _fields(cls):
            v = _tree(getattr(value, name), cache)
            if type(v) is not type(default) or v != default:
                out[name] = v
        return out
    raise TypeError(f"cannot encode {type(value).__name__} in a run key")


def canonical_form(scenario: Any, _cache: _ArrayCache | None = None) -> str:
    """The canonical text (key version 2) of a :class:`~rollsim.Scenario`, without its seed."""
    return json.dumps(_tree(scenario, _cache), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


# ------------------------------------------------------------------------------ key version 1 (frozen)

_V1_ENGINE_DEFAULTS: dict[str, Any] = {
    "train_s_per_token": 0.0, "group_size": 1, "prompt_tokens": 0.0, "prefill_tokens_per_s": math.inf,
    "prefix_sharing": True, "clear_cache_on_update": True, "slots_per_instance": 0, "decode_slowdown_per_seq": 0.0,
    "rollout_pause_s": 0.0, "decode_throughput_table": None, "kv_cache_tokens": None,
}
_V1_PART_DEFAULTS: dict[str, dict[str, Any]] = {
    "lengths": {"group_correlation": 0.0, "group_offsets": None},
    "pipeline": {"over_sampling": None, "keep_partial": False, "on_stale": "drop", "admission_eta": None,
                 "max_lag_samples": None, "max_ready_groups": None, "batch_order": "fifo", "on_update": "continue"},
}


def _same_v1(a: Any, b: Any) -> bool:
    return a is b or (type(a) is type(b) and not isinstance(a, np.ndarray) and a == b)


def engine_dict_v1(sc: Any) -> dict[str, Any]:
    """The engine dict that key version 1 hashed: ``Scenario.to_dict()`` as of rollsim's last key
    version 1 release, frozen here so that old keys stay computable when the wire format changes."""
    from rollsim.lengths import Empirical
    from rollsim.pipelines import FullyAsync, LengthBalanced

    p = sc.pipeline
    pipe: dict[str, Any]
    if isinstance(p, FullyAsync):
        order: Any = p.batch_order
        if isinstance(order, LengthBalanced):
            quotas = order.quotas
            order = {"edges": list(order.edges),
                     "quotas": sc.length_quotas(list(order.edges), order.share) if quotas is None else list(quotas)}
        pipe = {"kind": "fully_async", "max_staleness": p.max_staleness, "on_stale": p.on_stale,
                "admission_eta": p.admission_eta, "max_lag_samples": p.max_lag_samples,
                "max_ready_groups": p.max_ready_groups, "batch_order": order, "on_update": p.on_update}
        if p.lag_release != "take":
            pipe["lag_release"] = p.lag_release
    else:
        pipe = {"kind": "off_policy", "k": p.k, "over_sampling": p.over_sampling, "keep_partial": p.keep_partial}
    ln = sc.lengths
    lengths: dict[str, Any]
    if isinstance(ln, Empirical):
        lengths = {"kind": "empirical", "values": ln.values, "weights": ln.weights, "group_offsets": ln.group_offsets()}
    else:
        lengths = {"kind": "lognormal", "mu": ln.mu, "sigma": ln.sigma, "max_tokens": ln.max_tokens,
                   "group_correlation": ln.group_correlation}
    d = {
        "rollout_slots": sc.rollout_slots, "decode_tokens_per_s": sc.decode_tokens_per_s, "batch_size": sc.batch_size,
        "train_step_s": sc.train_step_s + sc.weight_sync_s,
        "train_s_per_token": sc.train_s_per_token + sc.logprob_s_per_token,
        "horizon_s": sc.horizon_s, "lengths": lengths, "pipeline": pipe, "seed": sc.seed, "rng": sc.rng,
        "group_size": sc.group_size, "prompt_tokens": sc.prompt_tokens, "prefill_tokens_per_s": sc.prefill_tokens_per_s,
        "prefix_sharing": bool(sc.prefix_sharing), "clear_cache_on_update": bool(sc.clear_cache_on_update),
        "slots_per_instance": sc.slots_per_instance, "decode_slowdown_per_seq": sc.decode_slowdown_per_seq,
        "rollout_pause_s": sc.rollout_pause_s,
        "decode_throughput_table": None if sc.decode_throughput_table is None
        else [list(x) for x in sc.decode_throughput_table],
        "kv_cache_tokens": sc.kv_cache_tokens,
    }
    out = {k: v for k, v in d.items() if not (k in _V1_ENGINE_DEFAULTS and _same_v1(v, _V1_ENGINE_DEFAULTS[k]))}
    for part, defaults in _V1_PART_DEFAULTS.items():
        out[part] = {k: v for k, v in d[part].items() if not (k in defaults and _same_v1(v, defaults[k]))}
    return out


def _array_v1(a: np.ndarray, cache: _ArrayCache | None) -> str:
    if cache is not None:
        hit = cache.get(id(a))
        if hit is not None and hit[0] is a and isinstance(hit[1], str):
            return hit[1]
    b = np.ascontiguousarray(a, dtype="<f8")
    d = f"a{list(b.shape)}:{hashlib.sha256(b.tobytes()).hexdigest()}"
    if cache is not None and not a.flags.writeable:
        cache[id(a)] = (a, d)
    return d


def canonical_v1(value: Any, _cache: _ArrayCache | None = None) -> str:
    """Key version 1's text of an engine dict: ``None`` -> ``n``, ``bool`` -> ``b0``/``b1``, ``int`` ->
    ``i<decimal>``, ``float`` -> ``f<float.hex()>``, ``str`` -> ``s<json>``, numpy arrays ->
    ``a<shape>:<sha256 of the little-endian float64 bytes>``, dicts -> keys sorted, lists in order."""
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
        return _array_v1(value, _cache)
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(json.dumps(str(k)) + ":" + canonical_v1(v, _cache) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_v1(v, _cache) for v in value) + "]"
    raise TypeError(f"cannot encode {type(value).__name__} in a run key")


# ------------------------------------------------------------------------------ keys


def _text(scenario: Any, version: int, cache: _ArrayCache | None) -> bytes:
    if version == 2:
        return canonical_form(scenario, cache).encode()
    d = engine_dict_v1(scenario)
    del d["seed"]
    return canonical_v1(d, cache).encode()


def _check(scenario: Any, version: Any) -> int:
    from rollsim.scenario import Scenario

    if not isinstance(scenario, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario (run keys are computed from its fields since key "
                                  f"version 2, not from the engine dict), got {type(scenario).__name__}")
    if isinstance(version, bool) or version not in KEY_VERSIONS:
        raise invalid("version", f"must be one of the key versions {list(KEY_VERSIONS)}, got {version!r}")
    return int(version)


class KeyMaker:
    """Keys for many seeds of one scenario: hashes the scenario once, then one update per seed.

    Parameters
    ----------
    scenario : Scenario
        The scenario (its seed is ignored).
    version : int
        Key version, one of :data:`KEY_VERSIONS`.
    cache : dict, optional
        Digests of read-only arrays by ``id``, shared between makers (the arrays are kept alive in it).
    """

    def __init__(self, scenario: Any, version: int = KEY_VERSION, cache: _ArrayCache | None = None):
        text = _text(scenario, version, cache)
        prefix = _PREFIX[version]
        self.scenario_key = hashlib.sha256(prefix + b"\0scenario\0" + text).hexdigest()[:32]
        self._run = hashlib.sha256(prefix + b"\0run\0" + text)

    def run_key(self, seed: int) -> str:
        """The run key of the scenario with ``seed``."""
        h = self._run.copy()
        h.update(b"\0seed=" + str(int(seed)).encode())
        return h.hexdigest()[:32]


def scenario_key(scenario: Any, version: int = KEY_VERSION) -> str:
    """32 hex digits identifying a scenario regardless of its seed (groups the seeds of one scenario).

    Parameters
    ----------
    scenario : Scenario
        The scenario (its seed is ignored).
    version : int
        Key version (:data:`KEY_VERSIONS`): 2 (default, from the scenario's fields) or 1 (from its
        engine dict; the keys of sweep directories written before key version 2).

    Returns
    -------
    str
        The first 32 hex digits of a SHA-256 (``docs/sweeps.md``, "Run keys").

    Raises
    ------
    ScenarioError (ValueError)
        ``scenario`` is not a Scenario (e.g. an engine dict), or an unknown ``version``.
    """
    v = _check(scenario, version)
    return KeyMaker(scenario, v).scenario_key


def run_key(scenario: Any, seed: int | None = None, version: int = KEY_VERSION) -> str:
    """32 hex digits identifying one run: the scenario and the seed (``scenario.seed`` unless given).

    Parameters
    ----------
    scenario : Scenario
        The scenario.
    seed : int, optional
        The run's seed, in [0, 2**64 - 1]; ``scenario.seed`` by default.
    version : int
        Key version (:data:`KEY_VERSIONS`), as for :func:`scenario_key`.

    Returns
    -------
    str
        The first 32 hex digits of a SHA-256 (``docs/sweeps.md``, "Run keys").

    Raises
    ------
    ScenarioError (ValueError)
        ``scenario`` is not a Scenario, a seed outside [0, 2**64 - 1], or an unknown ``version``.
    """
    v = _check(scenario, version)
    s = scenario.seed if seed is None else seed
    if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or not 0 <= int(s) < 2**64:
        raise invalid("seed", f"must be an integer in [0, 2**64 - 1], got {s!r}")
    return KeyMaker(scenario, v).run_key(int(s))
