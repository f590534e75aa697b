"""Sweep files: a TOML description of a sweep (base scenario, grid or sampled points, seeds).

Example (``python/rollsim/examples/sweep.toml`` has a complete one)::

    seeds = 8                      # or [0, 5, 7], or { start = 100, count = 8 }
    metrics = ["steps", "staleness_mean"]   # optional; all summary metrics by default
    chunk_size = 2000              # optional
    max_samples = 50000000         # optional

    [base]                         # a scenario, as in a scenario file (rollsim.scenario_toml): any Scenario
    train_step_s = 60.0            # field; omitted fields keep the chapter's values
    rng = "fast"
    lengths = { kind = "lognormal", mu = 7.6, sigma = 1.0, max_tokens = 16384 }
    # lengths = { dataset = "deepseek-r1", max_tokens = 16384 }
    # lengths = { file = "lengths.csv", column = "tokens", count_column = "n" }   # path relative to this file
    pipeline = { kind = "fully_async", max_staleness = 2, on_update = "abort_resubmit" }
    # pipeline kinds: "synchronous", "one_step", "off_policy" (k = ...), "fully_async"; each takes every
    # field of its class (FullyAsync: max_staleness, admission_eta, batch_order, on_update, ...)

    [grid]                         # Cartesian product; dotted names in quotes
    "pipeline.max_staleness" = [0, 1, 2, 4]
    train_step_s = [30.0, 60.0, 120.0]
    # pipeline = [{ kind = "synchronous" }, { kind = "fully_async", max_staleness = 2 }]

    # or, instead of [grid], points sampled from ranges:
    # [sample]
    # method = "latin_hypercube"   # or "random"
    # n = 100
    # seed = 0
    # [sample.space]
    # train_step_s = { uniform = [30.0, 600.0] }     # also log_uniform, int_uniform = [lo, hi]
    # "pipeline.max_staleness" = { choice = [0, 1, 2, 4] }

    [learning]                     # optional (or learning = true): clip / TIS / IcePop / ESS fractions and
    clip_high = 0.28               # the length gap under a drift model (rollsim.learning.summary_learning);
    drift_sd = 0.599               # DriftModel fields and token rules, every key optional
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollsim import scenario_toml
from rollsim.errors import invalid
from rollsim.lengths import Empirical, LogNormal
from rollsim.scenario import Scenario, part_field_hint
from rollsim.sweeps.space import Choice, IntUniform, LogUniform, Uniform, latin_hypercube, random_points

__all__ = ["SweepSpec", "load", "parse"]

_TOP = {"base", "grid", "sample", "seeds", "metrics", "chunk_size", "max_samples", "learning"}
_SCENARIO_FIELDS = [f.name for f in dataclasses.fields(Scenario) if f.name not in ("seed",)] + ["seed"]


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep file: arguments for :func:`rollsim.sweep` (``None``: the function's default)."""

    base: Scenario
    grid: dict[str, list[Any]] | list[dict[str, Any]] | None
    seeds: range | list[int] | None
    metrics: list[str] | None
    chunk_size: int | None
    max_samples: int | None
    #: ``learning = true`` or a ``[learning]`` table (drift-model fields and token rules): the
    #: ``learning`` option of :func:`rollsim.sweep`.
    learning: bool | dict[str, Any] | None = None


_table = scenario_toml.table  # one implementation of the TOML table checks
_only = scenario_toml.only


def _lengths(where: str, value: Any, root: Path) -> LogNormal | Empirical:
    return scenario_toml.lengths_from_doc(where, value, root)


def _pipeline(where: str, value: Any) -> Any:
    return scenario_toml.pipeline_from_doc(where, value)


def _part(field: str, where: str, value: Any, root: Path) -> Any:
    if field == "lengths":
        return _lengths(where, value, root)
    if field == "pipeline":
        return _pipeline(where, value)
    if field == "pipeline.batch_order":
        return scenario_toml.batch_order_from_doc(where, value)
    return value


#: Largest count of seeds (as ``rollsim.sweep(seeds=n)``).
MAX_SEED_COUNT = 2**32


def _seeds(value: Any) -> range | list[int] | None:
    """A count or ``{start, count}`` as a ``range`` (8 bytes a seed are never allocated), validated
    before anything is built; a list of seeds as it is."""
    if value is None:
        return None
    if isinstance(value, dict):
        _only("seeds", value, {"start", "count"})
        start, count = value.get("start", 0), value.get("count")
        if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < 2**64:
            raise invalid("seeds.start", f"must be an integer in [0, 2**64 - 1], got {start!r}")
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SEED_COUNT:
            raise invalid("seeds.count", f"must be an integer in [1, 2**32], got {count!r}")
        if start + count > 2**64:
            raise invalid("seeds.count", f"the last seed, start + count - 1 = {start + count - 1}, must be at most "
                                         f"2**64 - 1 (start = {start})")
        return range(start, start + count)
    if isinstance(value, bool) or not isinstance(value, (int, list)):
        raise invalid("seeds", f"must be a count, a list of seeds or {{start, count}}, got {value!r}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_SEED_COUNT:
            raise invalid("seeds", f"a count of seeds must be in [1, 2**32], got {value}")
        return range(value)
    if not all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**64 for s in value):
        raise invalid("seeds", f"a list of seeds must hold integers in [0, 2**64 - 1], got {value!r}")
    return value


def _metrics(value: Any) -> list[str] | None:
    if value is not None and (not isinstance(value, list) or not all(isinstance(m, str) for m in value)):
        raise invalid("metrics", f"must be a list of metric names, got {value!r}")
    if value is not None:
        from rollsim.sweeps._run import check_metrics

        check_metrics(value)  # unknown or repeated names: refused before anything is built or run
    return value


def _dimension(where: str, value: Any) -> Any:
    if isinstance(value, list):
        return Choice(value)
    t = _table(where, value)
    if len(t) != 1:
        raise invalid(where, f"give exactly one of uniform, log_uniform, int_uniform, choice; got {sorted(t)}")
    (kind, arg), = t.items()
    kinds = {"uniform": Uniform, "log_uniform": LogUniform, "int_uniform": IntUniform}
    if kind == "choice":
        if not isinstance(arg, list):
            raise invalid(f"{where}.choice", f"must be a list of values, got {arg!r}")
        return Choice(arg)
    if kind not in kinds:
        raise invalid(f"{where}.{kind}", "unknown key (allowed: ['choice', 'int_uniform', 'log_uniform', 'uniform'])")
    if not isinstance(arg, list) or len(arg) != 2:
        raise invalid(f"{where}.{kind}", f"must be [lo, hi], got {arg!r}")
    return kinds[kind](*arg)


def parse(doc: dict[str, Any], root: str | os.PathLike[str] = ".") -> SweepSpec:
    """Builds a :class:`SweepSpec` from a parsed TOML document; relative file paths are taken from
    ``root``. Raises ScenarioError (ValueError) naming the first unknown key or invalid value."""
    rootp = Path(root)
    _only("", doc, _TOP)
    seeds = _seeds(doc.get("seeds"))  # first: cheap, and never expanded into a list
    metrics = _metrics(doc.get("metrics"))
    base = scenario_toml.scenario_from_doc(_table("base", doc.get("base", {})), rootp, where="base")

    grid: dict[str, list[Any]] | list[dict[str, Any]] | None = None
    if "grid" in doc and "sample" in doc:
        raise invalid("sample", "give either [grid] or [sample], not both")
    if "grid" in doc:
        g = _table("grid", doc["grid"])
        grid = {}
        for key, values in g.items():
            head = key.partition(".")[0]
            if head not in _SCENARIO_FIELDS:
                raise invalid(f"grid.{key}", f"unknown scenario field{part_field_hint(key)} (fields: "
                                             f"{sorted(_SCENARIO_FIELDS)})")
            if not isinstance(values, list):
                raise invalid(f"grid.{key}", f"must be a list of values, got {values!r}")
            grid[key] = [_part(key, f"grid.{key}[{i}]", v, rootp) for i, v in enumerate(values)]
    elif "sample" in doc:
        s = _table("sample", doc["sample"])
        _only("sample", s, {"method", "n", "seed", "space"})
        method = s.get("method", "latin_hypercube")
        if method not in ("latin_hypercube", "random"):
            raise invalid("sample.method", f"must be 'latin_hypercube' or 'random', got {method!r}")
        if "n" not in s:
            raise invalid("sample.n", "missing: how many points to sample")
        space_t = _table("sample.space", s.get("space"))
        for key in space_t:
            if key.partition(".")[0] not in _SCENARIO_FIELDS:
                raise invalid(f"sample.space.{key}", f"unknown scenario field{part_field_hint(key)} (fields: "
                                                     f"{sorted(_SCENARIO_FIELDS)})")
        space = {k: _dimension(f"sample.space.{k}", v) for k, v in space_t.items()}
        seed = s.get("seed", 0)
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**64:
            raise invalid("sample.seed", f"must be an integer in [0, 2**64 - 1], got {seed!r}")
        fn = latin_hypercube if method == "latin_hypercube" else random_points
        grid = fn(space, s["n"], s.get("seed", 0))

    for k in ("chunk_size", "max_samples"):
        v = doc.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise invalid(k, f"must be an integer >= 1, got {v!r}")
    learning = doc.get("learning")
    if learning is not None:
        if learning is False:
            learning = None
        else:
            from rollsim.learning import learning_options

            learning_options("learning", learning)  # refused before anything is built or run
    return SweepSpec(base, grid, seeds, metrics, doc.get("chunk_size"), doc.get("max_samples"), learning)


def load(path: str | os.PathLike[str]) -> SweepSpec:
    """Reads a sweep TOML file (see the module doc for the format).

    Raises
    ------
    FileNotFoundError
        No such file.
    ScenarioError (ValueError)
        Invalid TOML, an empty file (no keys), an unknown key (the message names it, e.g.
        ``base.foo``) or an invalid value.
    """
    p = Path(path)
    doc = scenario_toml.read_toml(p, "sweep file")  # a directory, FIFO or non-UTF-8 file: a clear error
    if not doc:  # nothing but blanks or comments: nothing to sweep, surely not what was meant
        raise invalid("sweep file", f"{os.fspath(p)!r} is empty: give the axes to sweep ([grid] or [sample], "
                                    "seeds = [...]) and the [base] scenario they vary")
    scenario_toml.check_integers("", doc)  # a 400-digit integer: named, not an OverflowError
    with scenario_toml.naming_file(p):
        return parse(doc, p.parent)
