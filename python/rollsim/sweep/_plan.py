"""Expansion of a sweep into runs: scenarios (grid product, points or explicit list) x seeds."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from rollsim.errors import invalid
from rollsim.lengths import Empirical, LogNormal
from rollsim.scenario import Scenario
from rollsim.sweep._keys import KeyMaker

__all__ = ["Plan", "make_plan", "label"]

_SCALARS = (type(None), bool, int, float, str, np.integer, np.floating, np.bool_)
_TOP = [f.name for f in dataclasses.fields(Scenario)]


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


def _column(name: str, values: list[Any]) -> pl.Series:
    try:
        s = pl.Series(name, values, strict=False)
    except Exception:  # mixed kinds that polars cannot unify: show them as text
        s = pl.Series(name, [None if v is None else str(v) for v in values], dtype=pl.String)
    if s.dtype == pl.Null:
        s = s.cast(pl.String)
    return s


def _seeds(seeds: Any) -> list[int] | None:
    if seeds is None:
        return None
    if isinstance(seeds, (bool, np.bool_)):
        raise invalid("seeds", f"must be a count (int >= 1) or an iterable of seeds, got {seeds!r}")
    if isinstance(seeds, (int, np.integer)):
        if not 1 <= int(seeds) <= 2**32:
            raise invalid("seeds", f"a count of seeds must be in [1, 2**32], got {seeds}")
        return list(range(int(seeds)))
    try:
        out = list(seeds)
    except TypeError:
        raise invalid("seeds", f"must be a count or an iterable of integers, got {type(seeds).__name__}") from None
    if not out:
        raise invalid("seeds", "must hold at least one seed")
    for s in out:
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer)) or not 0 <= int(s) < 2**64:
            raise invalid("seeds", f"each seed must be an integer in [0, 2**64 - 1], got {s!r}")
    return [int(s) for s in out]


@dataclass
class Plan:
    """Runs in order: scenario 0 with each seed, then scenario 1, ...

    ``scenarios[c]`` is the c-th scenario, ``dicts[c]`` its engine dict (seed irrelevant);
    run ``r`` is scenario ``combo[r]`` with seed ``seed[r]``; ``runs`` is the frame of the varied
    columns, ``seed``, ``scenario_key`` and ``run_key``, one row per run."""

    scenarios: list[Scenario]
    dicts: list[dict[str, Any]]
    varied: list[str]
    combo: np.ndarray
    seed: np.ndarray
    run_keys: list[str]
    runs: pl.DataFrame

    def __len__(self) -> int:
        return len(self.run_keys)

    def engine_dict(self, r: int) -> dict[str, Any]:
        d = dict(self.dicts[int(self.combo[r])])
        d["seed"] = int(self.seed[r])
        return d


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


def make_plan(base: Scenario | None, grid: Any, seeds: Any) -> Plan:
    """Expands ``grid`` over ``base`` and ``seeds`` (see :func:`rollsim.sweep.sweep`)."""
    if base is None:
        base = Scenario()
    if not isinstance(base, Scenario):
        raise invalid("base", f"must be a rollsim.Scenario, got {type(base).__name__}")
    seed_list = _seeds(seeds)
    scenarios: list[Scenario]
    columns: dict[str, list[Any]]
    if grid is None:
        scenarios, varied = [base], []
        columns = {}
    elif isinstance(grid, Mapping):
        axes = _check_grid_dict(grid)
        varied = [k for k, _ in axes]
        scenarios = []
        for combo in itertools.product(*(vs for _, vs in axes)):
            changes = dict(zip(varied, combo))
            scenarios.append(_apply(base, changes, ""))
        columns = {k: [] for k in varied}
        for sc, combo in zip(scenarios, itertools.product(*(vs for _, vs in axes))):
            for k, v in zip(varied, combo):
                got = _get(sc, k)
                columns[k].append(got if got is not None or v is None else label(v))
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        items = list(grid)
        if not items:
            raise invalid("grid", "must hold at least one scenario or point")
        if all(isinstance(x, Scenario) for x in items):
            scenarios = items
            flat = [_flatten(sc) for sc in scenarios]
            names = list(dict.fromkeys(k for f in flat for k in f))
            varied = [k for k in names if len({repr(f.get(k)) for f in flat}) > 1]
            columns = {k: [f.get(k) for f in flat] for k in varied}
            if seed_list is None:  # each scenario with its own seed
                seed_list_per = [sc.seed for sc in scenarios]
                return _finish(scenarios, varied, columns, None, seed_list_per)
        elif all(isinstance(x, Mapping) for x in items):
            varied = []
            for x in items:
                for k in x:
                    if k not in varied:
                        varied.append(k)
            if "seed" in varied:
                raise invalid("grid.seed", "vary seeds with the seeds= argument, not the grid points")
            scenarios = [_apply(base, dict(x), f"grid[{i}]") for i, x in enumerate(items)]
            columns = {k: [_get(sc, k) for sc in scenarios] for k in varied}
        else:
            raise invalid("grid", "a list must hold only Scenario objects or only dicts of field -> value")
    else:
        raise invalid("grid", f"must be a dict of field -> values, a list of points or of Scenarios, got {type(grid).__name__}")
    if seed_list is None:
        seed_list = [base.seed]
    return _finish(scenarios, varied, columns, seed_list, None)


def _finish(
    scenarios: list[Scenario],
    varied: list[str],
    columns: dict[str, list[Any]],
    seeds: list[int] | None,
    own_seeds: list[int] | None,
) -> Plan:
    dicts = [sc.to_dict() for sc in scenarios]
    cache: dict[int, tuple[np.ndarray, str]] = {}
    makers = [KeyMaker(d, cache) for d in dicts]
    if own_seeds is not None:
        combo = np.arange(len(scenarios), dtype=np.int64)
        seed = np.array(own_seeds, dtype=np.uint64)
    else:
        assert seeds is not None
        combo = np.repeat(np.arange(len(scenarios), dtype=np.int64), len(seeds))
        seed = np.tile(np.array(seeds, dtype=np.uint64), len(scenarios))
    keys = [makers[int(c)].run_key(int(s)) for c, s in zip(combo, seed)]
    combos = pl.DataFrame(
        [_column(k, columns[k]) for k in varied] + [pl.Series("scenario_key", [m.scenario_key for m in makers])]
    )
    runs = combos[combo].with_columns(
        pl.Series("seed", seed, dtype=pl.UInt64), pl.Series("run_key", keys, dtype=pl.String)
    ).select(*varied, "seed", "scenario_key", "run_key")
    return Plan(scenarios, dicts, varied, combo, seed, keys, runs)
