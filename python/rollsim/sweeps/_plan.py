"""Expansion of a sweep into runs, lazily: scenarios (grid product, points or explicit list) x seeds.

A :class:`Plan` never holds one object per run. It is a function from a run index ``r`` (in plan
order: scenario 0 with each seed, then scenario 1, ...) to the run's scenario and seed, and builds
the runs of a range ``[start, end)`` on demand as a :class:`Block` (keys, engine dicts, the varied
columns). Building the plan scans every scenario once (to validate it, to find the varied columns of
a list of points or Scenarios, and to fix each column's dtype for the whole plan, so every chunk's
parquet file has the same schema) keeping O(number of varied columns) state.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rollsim.errors import invalid
from rollsim.lengths import Empirical
from rollsim.scenario import Scenario
from rollsim.sweeps._keys import KEY_VERSION, KeyMaker

__all__ = ["Plan", "Block", "make_plan", "label", "CHUNK_DIGEST_VERSION", "STATS"]

_SCALARS = (type(None), bool, int, float, str, np.integer, np.floating, np.bool_)
_TOP = [f.name for f in dataclasses.fields(Scenario)]

#: Prefix of the digest that names a chunk file (changes if the digest's definition changes).
CHUNK_DIGEST_VERSION = b"rollsim-sweep-chunk-v1"
#: Entries kept in the cache of array digests (read-only empirical arrays) and of built scenarios.
_CACHE_ENTRIES = 256

#: Instrumentation for tests: ``blocks`` built and the largest block (runs) ever materialised.
STATS = {"blocks": 0, "max_block_runs": 0}


def label(value: Any) -> Any:
    """A column value for a scenario field: scalars as they are, parts (pipelines, lengths) as text."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, Empirical):
        return value.name or repr(value)
    return repr(value)


def _get(sc: Scenario, dotted: str) -> Any:
    v: Any = sc
    for part in dotted.split("."):
        if not hasattr(v, part):
            return None
        v = getattr(v, part)
    return label(v)


def _flatten(sc: Scenario) -> dict[str, Any]:
    """Every scalar setting of a scenario by dotted name, plus the kinds of its parts (no seed)."""
    out: dict[str, Any] = {}
    for name in _TOP:
        if name == "seed":
            continue
        v = getattr(sc, name)
        if dataclasses.is_dataclass(v):
            if isinstance(v, Empirical):
                out[name] = v.name or f"Empirical#{v._hash & 0xFFFFFFFF:08x}"
            else:
                out[name] = type(v).__name__
            for f in dataclasses.fields(v):
                if f.name.startswith("_") or f.name in ("values", "weights", "name"):
                    continue
                out[f"{name}.{f.name}"] = label(getattr(v, f.name))
        else:
            out[name] = label(v)
    return out


class _Kinds:
    """Representative values of one column (one per Python type; the smallest and largest int), from
    which the column's dtype over the whole plan is inferred exactly as if all values were at hand
    (polars infers a list's dtype from the types present and the range of its integers)."""

    def __init__(self) -> None:
        self.reps: dict[str, Any] = {}

    def add(self, v: Any) -> None:
        if isinstance(v, bool):
            self.reps.setdefault("bool", v)
        elif isinstance(v, int):
            lo, hi = self.reps.get("int_lo"), self.reps.get("int_hi")
            if lo is None or v < lo:
                self.reps["int_lo"] = v
            if hi is None or v > hi:
                self.reps["int_hi"] = v
        elif v is None:
            self.reps.setdefault("none", None)
        else:
            self.reps.setdefault(type(v).__name__, v)

    def dtype(self, name: str) -> tuple[pl.DataType, bool]:
        """The column's dtype and whether its values are shown as text (kinds polars cannot unify)."""
        return _infer(name, list(self.reps.values()))


def _infer(name: str, values: list[Any]) -> tuple[pl.DataType, bool]:
    try:
        s = pl.Series(name, values, strict=False)
    except Exception:  # mixed kinds that polars cannot unify: show them as text
        return pl.String(), True
    if s.dtype == pl.Null:
        return pl.String(), False
    return s.dtype, False


def _column(name: str, values: list[Any], dtype: pl.DataType, as_text: bool) -> pl.Series:
    if as_text:
        return pl.Series(name, [None if v is None else str(v) for v in values], dtype=pl.String)
    return pl.Series(name, values, dtype=dtype, strict=False)


def _check_seeds(seeds: Any) -> range | np.ndarray | None:
    """``range`` (kept lazy) or a uint64 array (8 bytes a seed) of validated seeds."""
    if seeds is None:
        return None
    if isinstance(seeds, (bool, np.bool_)):
        raise invalid("seeds", f"must be a count (int >= 1) or an iterable of seeds, got {seeds!r}")
    if isinstance(seeds, (int, np.integer)):
        if not 1 <= int(seeds) <= 2**32:
            raise invalid("seeds", f"a count of seeds must be in [1, 2**32], got {seeds}")
        return range(int(seeds))
    if isinstance(seeds, range):
        if len(seeds) == 0:
            raise invalid("seeds", "must hold at least one seed")
        lo, hi = min(seeds[0], seeds[-1]), max(seeds[0], seeds[-1])
        if lo < 0 or hi >= 2**64:
            bad = lo if lo < 0 else hi
            raise invalid("seeds", f"each seed must be an integer in [0, 2**64 - 1], got {bad!r}")
        return seeds
    try:
        it = iter(seeds)
    except TypeError:
        raise invalid("seeds", f"must be a count or an iterable of integers, got {type(seeds).__name__}") from None
    out: list[int] = []
    for s in it:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or not 0 <= int(s) < 2**64:
            raise invalid("seeds", f"each seed must be an integer in [0, 2**64 - 1], got {s!r}")
        out.append(int(s))
    if not out:
        raise invalid("seeds", "must hold at least one seed")
    return np.array(out, dtype=np.uint64)


def _check_grid_dict(grid: Mapping[str, Any]) -> list[tuple[str, list[Any]]]:
    axes = []
    for key, values in grid.items():
        if not isinstance(key, str):
            raise invalid("grid", f"keys must be field names (str), got {key!r}")
        if key == "seed" or key.startswith("seed."):
            raise invalid("grid.seed", "vary seeds with the seeds= argument, not the grid")
        if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
            raise invalid(f"grid.{key}", f"must be a list of values, got {type(values).__name__} {values!r}")
        vs = list(values)
        if not vs:
            raise invalid(f"grid.{key}", "must hold at least one value")
        axes.append((key, vs))
    return axes


def _apply(base: Scenario, changes: Mapping[str, Any], where: str) -> Scenario:
    if not where:
        return base.replace(**changes)
    try:
        return base.replace(**changes)
    except ValueError as e:
        raise invalid(where, str(e)) from None


# ------------------------------------------------------------------------------------------------ sources
# A source gives the scenario of index i and its values of the varied columns.


class _Base:
    count: int
    varied: list[str]

    def scenario(self, i: int) -> Scenario:
        raise NotImplementedError

    def values(self, i: int, sc: Scenario) -> list[Any]:
        raise NotImplementedError

    def scan(self) -> Iterator[tuple[int, Scenario]]:
        for i in range(self.count):
            yield i, self.scenario(i)


class _Single(_Base):
    def __init__(self, base: Scenario):
        self.base, self.count, self.varied = base, 1, []

    def scenario(self, i: int) -> Scenario:
        return self.base

    def values(self, i: int, sc: Scenario) -> list[Any]:
        return []


class _Grid(_Base):
    """The Cartesian product of the axes, the last varying fastest; combination ``i`` by mixed radix."""

    def __init__(self, base: Scenario, axes: list[tuple[str, list[Any]]]):
        self.base, self.axes = base, axes
        self.varied = [k for k, _ in axes]
        self.count = math.prod(len(vs) for _, vs in axes)

    def combo(self, i: int) -> list[Any]:
        out = []
        for _, vs in reversed(self.axes):
            i, j = divmod(i, len(vs))
            out.append(vs[j])
        return out[::-1]

    def scenario(self, i: int) -> Scenario:
        return _apply(self.base, dict(zip(self.varied, self.combo(i))), "")

    def values(self, i: int, sc: Scenario) -> list[Any]:
        out = []
        for k, v in zip(self.varied, self.combo(i)):
            got = _get(sc, k)
            out.append(got if got is not None or v is None else label(v))
        return out


class _Points(_Base):
    """A sequence of dicts of changes (any ``Sequence``: a list, or a lazy sampler from ``space``)."""

    def __init__(self, base: Scenario, points: Sequence[Any]):
        self.base, self.points, self.count = base, points, len(points)
        names = getattr(points, "names", None)  # lazy samplers know their fields
        varied: dict[str, None] = dict.fromkeys(names) if names is not None else {}
        if names is None:
            for x in points:
                for k in x:
                    varied.setdefault(k, None)
        if "seed" in varied:
            raise invalid("grid.seed", "vary seeds with the seeds= argument, not the grid points")
        self.varied = list(varied)

    def scenario(self, i: int) -> Scenario:
        return _apply(self.base, dict(self.points[i]), f"grid[{i}]")

    def values(self, i: int, sc: Scenario) -> list[Any]:
        return [_get(sc, k) for k in self.varied]


class _Scenarios(_Base):
    """Exactly the given Scenario objects; the varied columns are the settings that differ among them."""

    def __init__(self, items: Sequence[Scenario]):
        self.items, self.count = items, len(items)
        first: dict[str, str] = {}   # name -> repr of scenario 0's value (None if it lacks the name)
        differs: dict[str, bool] = {}
        for i, sc in enumerate(items):
            f = _flatten(sc)
            if i == 0:
                first = {k: repr(v) for k, v in f.items()}
                differs = dict.fromkeys(f, False)
                continue
            for k, v in f.items():
                if k not in differs:
                    first[k], differs[k] = repr(None), False
                if not differs[k] and repr(v) != first[k]:
                    differs[k] = True
            for k in differs:
                if not differs[k] and k not in f and first[k] != repr(None):
                    differs[k] = True
        self.varied = [k for k, d in differs.items() if d]

    def scenario(self, i: int) -> Scenario:
        return self.items[i]

    def values(self, i: int, sc: Scenario) -> list[Any]:
        f = _flatten(sc)
        return [f.get(k) for k in self.varied]


# ------------------------------------------------------------------------------------------------ plan


@dataclass
class Block:
    """The runs ``[start, end)`` of a plan, materialised: ``keys[p]`` is the run key of run
    ``start + p``; ``first`` the positions of the first occurrence of each distinct key (the runs to
    compute); ``frame`` the varied columns, ``seed``, ``scenario_key`` and ``run_key`` of every run."""

    start: int
    end: int
    keys: list[str]
    first: list[int]
    frame: pl.DataFrame
    dicts: list[dict[str, Any]]   # the engine dicts of the distinct scenarios of the block
    combo: np.ndarray             # per run: index into ``dicts``
    seed: np.ndarray              # per run: the seed (uint64)

    def __len__(self) -> int:
        return self.end - self.start

    def runs(self, positions: list[int]) -> tuple[np.ndarray, np.ndarray]:
        """The runs at ``positions`` as ``simulate_many`` takes them: the index into ``dicts``
        (int64) and the seed (uint64) of each."""
        pos = np.asarray(positions, dtype=np.int64)
        return self.combo[pos], self.seed[pos]

    def digest(self) -> str:
        return chunk_digest(self.keys)


def chunk_digest(keys: Iterable[str]) -> str:
    """32 hex digits naming a chunk: SHA-256 over its run keys in plan order."""
    h = hashlib.sha256(CHUNK_DIGEST_VERSION)
    for k in keys:
        h.update(k.encode())
        h.update(b"\n")
    return h.hexdigest()[:32]


class Plan:
    """Runs in order: scenario 0 with each seed, then scenario 1, ... (or, for a list of Scenarios
    without ``seeds``, each scenario once with its own seed). Nothing per run is stored."""

    def __init__(self, source: _Base, seeds: range | np.ndarray | None):
        self.source = source
        self.seeds = seeds
        self.varied = list(source.varied)
        per = 1 if seeds is None else len(seeds)
        self.n_runs = source.count * per
        self._per = per
        #: Consecutive runs of one scenario (its seeds).
        self.runs_per_scenario = per
        self.key_version = KEY_VERSION
        self._array_cache: dict[int, tuple[np.ndarray, Any]] = {}
        self._sc_cache: dict[int, tuple[dict[str, Any], KeyMaker, list[Any], int]] = {}
        # one pass over every scenario: validation, dtypes of the varied columns, array sizes
        kinds = [_Kinds() for _ in self.varied]
        self.array_bytes = 0
        for i, sc in source.scan():
            for kd, v in zip(kinds, source.values(i, sc)):
                kd.add(v)
            ld = sc.lengths
            if isinstance(ld, Empirical):
                nb = sum(a.nbytes for a in (ld.values, ld.weights) if a is not None)
                self.array_bytes = max(self.array_bytes, nb)
        self.dtypes = [kd.dtype(k) for kd, k in zip(kinds, self.varied)]

    def __len__(self) -> int:
        return self.n_runs

    def use_key_version(self, version: int) -> None:
        """Computes run keys of ``version`` (that of the directory the sweep writes to)."""
        if version != self.key_version:
            self.key_version = version
            self._sc_cache.clear()

    # -- per scenario, cached (the last few scenarios: a block touches consecutive ones)
    def _scenario(self, i: int) -> tuple[dict[str, Any], KeyMaker, list[Any], int]:
        hit = self._sc_cache.get(i)
        if hit is not None:
            return hit
        sc = self.source.scenario(i)
        d = sc.to_dict()
        if len(self._array_cache) > _CACHE_ENTRIES:
            self._array_cache.clear()
        entry = (d, KeyMaker(sc, self.key_version, self._array_cache), self.source.values(i, sc), int(sc.seed))
        if len(self._sc_cache) >= _CACHE_ENTRIES:
            self._sc_cache.clear()
        self._sc_cache[i] = entry
        return entry

    def _run(self, r: int) -> tuple[int, int]:
        """(scenario index, seed) of run ``r``."""
        if self.seeds is None:
            return r, self._scenario(r)[3]
        c, j = divmod(r, self._per)
        return c, int(self.seeds[j])

    def scenario_index(self, r: int) -> int:
        """The scenario of run ``r`` (its index in the plan's source)."""
        return self._run(r)[0] if self.seeds is not None else r

    def iter_keys(self, start: int, end: int) -> Iterator[str]:
        """The run keys of runs ``[start, end)``, one at a time (O(1) memory)."""
        for r in range(start, end):
            c, s = self._run(r)
            yield self._scenario(c)[1].run_key(s)

    def digest(self, start: int, end: int) -> str:
        return chunk_digest(self.iter_keys(start, end))

    def block(self, start: int, end: int) -> Block:
        """Materialises the runs ``[start, end)``."""
        assert 0 <= start < end <= self.n_runs
        STATS["blocks"] += 1
        STATS["max_block_runs"] = max(STATS["max_block_runs"], end - start)
        local: dict[int, int] = {}
        dicts: list[dict[str, Any]] = []
        makers: list[KeyMaker] = []
        values: list[list[Any]] = []
        combo = np.empty(end - start, dtype=np.int64)
        seed = np.empty(end - start, dtype=np.uint64)
        keys: list[str] = []
        first: list[int] = []
        seen: set[str] = set()
        for p, r in enumerate(range(start, end)):
            c, s = self._run(r)
            j = local.get(c)
            if j is None:
                d, maker, vals, _ = self._scenario(c)
                j = local[c] = len(dicts)
                dicts.append(d)
                makers.append(maker)
                values.append(vals)
            combo[p], seed[p] = j, s
            k = makers[j].run_key(s)
            keys.append(k)
            if k not in seen:
                seen.add(k)
                first.append(p)
        cols = [
            _column(name, [v[i] for v in values], dt, as_text).gather(combo)
            for i, (name, (dt, as_text)) in enumerate(zip(self.varied, self.dtypes))
        ]
        frame = pl.DataFrame(cols + [
            pl.Series("seed", seed, dtype=pl.UInt64),
            pl.Series("scenario_key", [m.scenario_key for m in makers], dtype=pl.String).gather(combo),
            pl.Series("run_key", keys, dtype=pl.String),
        ])
        return Block(start, end, keys, first, frame, dicts, combo, seed)


def make_plan(scenario: Scenario | None, grid: Any, seeds: Any) -> Plan:
    """Expands ``grid`` over ``scenario`` and ``seeds`` (see :func:`rollsim.sweeps.sweep`), lazily."""
    given = scenario is not None
    base = Scenario() if scenario is None else scenario
    if not isinstance(base, Scenario):
        raise invalid("scenario", f"must be a rollsim.Scenario, got {type(base).__name__}")
    seed_set = _check_seeds(seeds)
    source: _Base
    if grid is None:
        source = _Single(base)
    elif isinstance(grid, Mapping):
        source = _Grid(base, _check_grid_dict(grid))
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        if len(grid) == 0:
            raise invalid("grid", "must hold at least one scenario or point")
        kind = Scenario if isinstance(grid[0], Scenario) else Mapping
        if not all(isinstance(x, kind) for x in grid):
            raise invalid("grid", "a list must hold only Scenario objects or only dicts of field -> value")
        if kind is Scenario:
            if given:  # it would be ignored: each listed scenario is complete
                raise invalid("scenario", "must be None when grid is a list of Scenarios (each is run as it is); "
                                          "put it in the list, or give grid as a dict of changes to it")
            source = _Scenarios(grid)
            if seed_set is None:  # each scenario with its own seed
                return Plan(source, None)
        else:
            source = _Points(base, grid)
    else:
        raise invalid("grid", f"must be a dict of field -> values, a list of points or of Scenarios, got {type(grid).__name__}")
    if seed_set is None:
        seed_set = range(base.seed, base.seed + 1)
    return Plan(source, seed_set)


@dataclass
class Claim:
    """Runs ``[start, end)`` of a plan already in the file ``path`` (a chunk file of this plan):
    shared by the local runner (``_run``) and the Ray runner (``_ray``)."""

    start: int
    end: int
    path: Path
