"""Scenario files (TOML), and the scenario's field list: one source for the ``rollsim`` flags and the
TOML keys.

The field list (:func:`scenario_fields`, :func:`pipeline_fields`, :func:`lengths_fields`) is read
from the dataclasses themselves (:class:`~rollsim.Scenario`, the pipeline classes, the length
classes): names, types, defaults, and help from their numpy docstrings. The command line
(:mod:`rollsim.cli`) makes one flag per field and the TOML reader accepts one key per field, so a
new field is reachable everywhere without further code.

A scenario file::

    # any Scenario field; omitted fields keep Scenario()'s defaults
    rollout_slots = 256
    decode_tokens_per_s = 30.0
    train_step_s = 60.0
    rng = "python"

    [lengths]                   # or lengths = { ... } (inline)
    kind = "lognormal"          # mu, sigma, max_tokens, group_correlation
    # kind = "empirical"        values = [...], weights = [...], groups = [...], max_tokens, name
    # file = "lengths.csv"      column, count_column, group_column, max_tokens, name (path relative to this file)
    # dataset = "deepseek-r1"   max_tokens

    [agentic]                   # multi-turn trajectories: every field of rollsim.Agentic
    max_turns = 8
    observation_tokens = 200.0  # tokens, or a lengths table (max_tokens)
    [agentic.tool_latency_s]    # seconds, or a number; the cap is max_s (not max_tokens)
    kind = "lognormal"          # mu, sigma, max_s
    # kind = "empirical"        values = [...], weights = [...], max_s, name
    # file = "latency.csv"      column, count_column, max_s, name

    [pipeline]                  # or pipeline = "fully_async" (the kind alone)
    kind = "fully_async"        # synchronous | one_step | off_policy | fully_async
    max_staleness = 2           # every field of the kind's class (FullyAsync, OffPolicy, ...)
    batch_order = { kind = "length_balanced", edges = [1000.0, 8000.0], share = 0.9 }   # or "fifo", "oldest_first"

    [length_drift]              # optional: lengths that change with the policy version
    kind = "linear"             # linear | log | exp | table; rate, table = [[0, 1.0], [50, 1.4]], max_tokens, feedback

Fields whose value is ``None`` (no cap, no table, ...) are left out. Integers of more than 20
digits are refused (no field takes one). A file may start with a UTF-8 byte-order mark (it is
skipped); any other non-UTF-8 content is refused.

:meth:`Scenario.to_toml` writes every field (``None`` ones left out), so that
``Scenario.from_toml_str(sc.to_toml()) == sc`` for every valid scenario. Empirical lengths read
from a file or a built-in data set through this module or the command line are written as that
reference (``file = "/abs/path.csv"``, ``dataset = "deepseek-r1"``; the file is read again on
loading), a built-in data set made in Python (``rollsim.datasets``) is recognized, and any other
``Empirical`` is written inline (``values = [...]``, exact).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import math
import os
import re
import stat
import tomllib
import typing
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rollsim import _check, _text, datasets
from rollsim.errors import ScenarioError, invalid
from rollsim.lengths import Empirical, LengthDrift, LogNormal
from rollsim.pipelines import FullyAsync, LengthBalanced, OffPolicy, OneStepAsync, Synchronous

if TYPE_CHECKING:
    from rollsim.scenario import Scenario

#: The Scenario class, handed over by :mod:`rollsim.scenario` when it is imported (the scenario
#: module uses this one for its TOML methods, so this module cannot import it back).
_SCENARIO: Any = None


def use_scenario_class(cls: type) -> None:
    """Called once by :mod:`rollsim.scenario`: the class whose fields this module reads and builds."""
    global _SCENARIO
    _SCENARIO = cls

__all__ = ["Field", "scenario_fields", "pipeline_fields", "lengths_fields", "length_drift_fields", "all_fields", "PIPELINE_KINDS",
           "tool_latency_keys", "agentic_fields", "AGENTIC_DISTS",
           "FROM_FILE", "scenario_from_doc", "lengths_from_doc", "pipeline_from_doc",
           "batch_order_from_doc", "check_integers", "scenario_to_doc", "dumps", "loads", "load", "read_toml", "naming_file"]

# ================================================================================================
# The field list. Everything the command line and the TOML keys know about a scenario's fields
# comes from here; the scenario's own fields come from the engine's schema.

#: Pipeline kinds (the ``kind`` key of a pipeline table) and their classes.
PIPELINE_KINDS: dict[str, type] = {"synchronous": Synchronous, "one_step": OneStepAsync, "off_policy": OffPolicy,
                                   "fully_async": FullyAsync}
#: ``batch_order`` values that are strings; a table (or ``"length_balanced"``) is a :class:`LengthBalanced`.
BATCH_ORDERS = ("fifo", "oldest_first")
LENGTH_BALANCED = "length_balanced"
#: Empirical fields filled from a file's columns: field -> the file table's key naming the column.
FROM_FILE = {"values": "column", "weights": "count_column", "groups": "group_column"}


@dataclass(frozen=True)
class Field:
    """One settable field of a scenario or of one of its parts.

    Attributes
    ----------
    path : str
        Dotted name as :meth:`Scenario.replace` takes it: ``"rollout_slots"``,
        ``"pipeline.max_staleness"``, ``"pipeline.batch_order.share"``, ``"lengths.mu"``,
        ``"lengths.column"`` (a key of a lengths-file table).
    type : Any
        The annotation (``int``, ``float | None``, ``typing.Literal[...]``, ...).
    default : Any
        The class's default (``dataclasses.MISSING`` if there is none).
    help : str
        First sentence of the field's entry in the class's numpy docstring.
    owners : tuple of str
        The table kinds that have the field: ``()`` for a Scenario field, pipeline kinds
        (``"fully_async"``, ...), lengths variants (``"lognormal"``, ``"empirical"``, ``"file"``,
        ``"dataset"``), or ``("length_balanced",)``.
    """

    path: str
    type: Any
    default: Any
    help: str
    owners: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The key in its TOML table (the last part of ``path``)."""
        return self.path.rpartition(".")[2]

    @property
    def part(self) -> str:
        """``""`` for a Scenario field, else ``"lengths"``, ``"pipeline"`` or ``"pipeline.batch_order"``."""
        return self.path.rpartition(".")[0]

    @property
    def flag(self) -> str | None:
        """The command-line flag: ``--`` and the field's name with dashes (``--rollout-slots``,
        ``--max-staleness``, ``--batch-order-share``); ``--lengths`` / ``--pipeline`` for the
        selectors; ``--lengths-column``, ``--lengths-name`` (too generic alone); ``None`` for
        Empirical's arrays (they come from a file's columns, see :data:`FROM_FILE`)."""
        return _flag(self.path)


_FLAG_OVERRIDES = {"lengths.column": "--lengths-column", "lengths.name": "--lengths-name",
                   "lengths.kind": "--lengths", "lengths.file": "--lengths", "lengths.dataset": "--lengths",
                   "pipeline.kind": "--pipeline", "pipeline.batch_order.kind": "--batch-order"}


def _flag(path: str) -> str | None:
    if path in _FLAG_OVERRIDES:
        return _FLAG_OVERRIDES[path]
    part, _, key = path.rpartition(".")
    if (part == "lengths" and key in FROM_FILE) or part == "length_drift":
        return None
    if part == "pipeline.batch_order":
        key = f"batch_order_{key}"
    return "--" + key.replace("_", "-")


_SECTION = re.compile(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.M)


def _param_docs(cls: Any) -> dict[str, str]:
    """``name -> first sentence`` from the numpy "Parameters" sections of ``cls`` and its bases."""
    out: dict[str, str] = {}
    for c in getattr(cls, "__mro__", (cls,)):
        doc = inspect.cleandoc(c.__doc__ or "") if c is not object else ""
        m = re.search(r"^Parameters\n-{3,}\n", doc, re.M)
        if not m:
            continue
        body = doc[m.end():]
        nxt = _SECTION.search(body)
        body = body[: nxt.start()] if nxt else body
        entries = re.split(r"^(?=\S)", body, flags=re.M)
        for entry in entries:
            head, _, rest = entry.partition("\n")
            names, sep, kind = head.partition(" : ")
            if not sep:
                continue
            text = " ".join(rest.split()) or kind.strip()
            first = re.split(r"(?<=\.)\s+(?=[A-Z(`])", text, maxsplit=1)[0]
            for name in names.split(","):
                out.setdefault(name.strip(), first.replace("``", "").rstrip("."))
    return out


def _class_fields(cls: type, part: str, owners: tuple[str, ...]) -> list[Field]:
    hints = typing.get_type_hints(cls)
    docs = _param_docs(cls)
    fields = []
    for f in dataclasses.fields(cls):
        if not f.init or f.name.startswith("_"):
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else dataclasses.MISSING)
        fields.append(Field(f"{part}.{f.name}" if part else f.name, hints[f.name], default, docs.get(f.name, ""),
                            owners))
    return fields


def _merge(fields: list[Field]) -> tuple[Field, ...]:
    """One entry per path; ``owners`` united (a field several kinds have, e.g. ``max_tokens``)."""
    by: dict[str, Field] = {}
    for f in fields:
        if f.path in by:
            g = by[f.path]
            by[f.path] = dataclasses.replace(g, owners=g.owners + tuple(o for o in f.owners if o not in g.owners),
                                             help=g.help or f.help)
        else:
            by[f.path] = f
    return tuple(by.values())


@functools.cache
def scenario_fields() -> tuple[Field, ...]:
    """Every field of :class:`Scenario`: the engine's schema (``rollsim._rollsim.SCHEMA``), in its
    order, then the Python-only fields (``rollsim.scenario.PYTHON_ONLY``); ``lengths`` and
    ``pipeline`` included (their own fields are :func:`lengths_fields` and
    :func:`pipeline_fields`). Types and defaults are the dataclass's (which takes its defaults from
    the schema), help is the first sentence of the docstring's entry, else the schema's doc line."""
    from rollsim import _rollsim

    by = {f.path: f for f in _class_fields(_SCENARIO, "", ())}
    names = [f["name"] for f in _rollsim.SCHEMA["scenario"]]
    names += [n for n in by if n not in names]  # Python-only (tests/test_schema.py checks the split)
    docs = {f["name"]: f["doc"] for f in _rollsim.SCHEMA["scenario"]}
    return tuple(dataclasses.replace(by[n], help=by[n].help or docs[n]) for n in names)


@functools.cache
def pipeline_fields() -> tuple[Field, ...]:
    """Every field of a pipeline table: ``kind``, the fields of each pipeline class (``owners``:
    the kinds that have it), and the fields of a :class:`LengthBalanced` ``batch_order``."""
    fields = [Field("pipeline.kind", str, "fully_async", f"pipeline kind: {', '.join(PIPELINE_KINDS)}",
                    tuple(PIPELINE_KINDS))]
    for kind, cls in PIPELINE_KINDS.items():
        fields += _class_fields(cls, "pipeline", (kind,))
    fields += _class_fields(LengthBalanced, "pipeline.batch_order", (LENGTH_BALANCED,))
    return _merge(fields)


def _file_keys() -> list[tuple[str, Any, Any]]:
    """(key, type, default) of a lengths-file table: the parameters of :meth:`Empirical.from_file`
    (``path`` is the key ``file``)."""
    sig = inspect.signature(Empirical.from_file)
    hints = typing.get_type_hints(Empirical.from_file)
    return [("file" if n == "path" else n, hints.get(n, Any), p.default if p.default is not p.empty
             else dataclasses.MISSING) for n, p in sig.parameters.items() if n != "cls"]


@functools.cache
def lengths_fields() -> tuple[Field, ...]:
    """Every key of a lengths table, over its variants (``owners``): ``lognormal`` and
    ``empirical`` (the fields of :class:`LogNormal` and :class:`Empirical`, with ``kind``),
    ``file`` (the parameters of :meth:`Empirical.from_file`, the path as ``file``) and
    ``dataset`` (a built-in data set, :func:`rollsim.datasets.by_name`)."""
    fields = [Field("lengths.kind", str, "lognormal", "lengths kind: lognormal or empirical",
                    ("lognormal", "empirical"))]
    fields += _class_fields(LogNormal, "lengths", ("lognormal",))
    fields += _class_fields(Empirical, "lengths", ("empirical",))
    docs = _param_docs(Empirical.from_file) | _param_docs(Empirical)
    docs["file"] = docs.pop("path", "path to a .csv, .csv.gz or .parquet file")
    for key, tp, default in _file_keys():
        fields.append(Field(f"lengths.{key}", tp, default, docs.get(key, ""), ("file",)))
    fields.append(Field("lengths.dataset", str, dataclasses.MISSING,
                        f"a built-in data set ({', '.join(datasets.NAMES)})", ("dataset",)))
    sig = inspect.signature(datasets.by_name)
    for n in sig.parameters:
        if n != "name":
            fields.append(Field(f"lengths.{n}", float | None, None, docs.get(n, ""), ("dataset",)))
    return _merge(fields)


#: The agentic fields that are distributions: a number of seconds or tokens on the command line (a
#: distribution is a table of a scenario file).
AGENTIC_DISTS = ("tool_latency_s", "observation_tokens")


@functools.cache
def agentic_fields() -> tuple[Field, ...]:
    """Every field of an ``[agentic]`` table: the fields of :class:`rollsim.agentic.Agentic`
    (``agentic.max_turns``, ...), in its order, with the engine's schema doc line as help
    (``SCHEMA["parts"]``, class ``Agentic``); the distributions' type is ``float`` (a
    distribution is a table, see :func:`tool_latency_keys`)."""
    from rollsim.agentic import Agentic

    docs = {f.key: _check.part_field("Agentic", f.key)["doc"] for f in _class_fields(Agentic, "agentic", ())}
    return tuple(dataclasses.replace(f, help=docs[f.key], type=float if f.key in AGENTIC_DISTS else f.type)
                 for f in _class_fields(Agentic, "agentic", ("agentic",)))


@functools.cache
def length_drift_fields() -> tuple[Field, ...]:
    """Every key of a ``[length_drift]`` table: the fields of :class:`rollsim.lengths.LengthDrift`
    (no command-line flags: a drift comes from a scenario file or Python)."""
    return tuple(_class_fields(LengthDrift, "length_drift", ("length_drift",)))


@functools.cache
def all_fields() -> tuple[Field, ...]:
    """:func:`scenario_fields`, :func:`lengths_fields` and :func:`pipeline_fields`."""
    return scenario_fields() + lengths_fields() + pipeline_fields()


def _keys(fields: tuple[Field, ...], owner: str, part: str) -> set[str]:
    return {f.key for f in fields if owner in f.owners and f.part == part}


def lengths_keys(variant: str) -> set[str]:
    """The keys a lengths table of ``variant`` (lognormal, empirical, file, dataset) accepts."""
    return _keys(lengths_fields(), variant, "lengths")


def pipeline_keys(kind: str) -> set[str]:
    """The keys a pipeline table of ``kind`` accepts (``kind`` included)."""
    return _keys(pipeline_fields(), kind, "pipeline")


def batch_order_keys() -> set[str]:
    """The keys of a ``batch_order`` table (``kind = "length_balanced"`` included)."""
    return _keys(pipeline_fields(), LENGTH_BALANCED, "pipeline.batch_order") | {"kind"}


def lengths_variant(table: dict[str, Any]) -> str:
    """Which variant a lengths table is: ``dataset`` or ``file`` (by those keys), else its
    ``kind`` (default ``lognormal``; may be an unknown string, refused when building)."""
    if "dataset" in table:
        return "dataset"
    if "file" in table:
        return "file"
    kind = table.get("kind", "lognormal")
    return kind if isinstance(kind, str) else repr(kind)


# ================================================================================================
# TOML documents -> scenarios

_DIGITS = 20


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def table(where: str, value: Any) -> dict[str, Any]:
    """``value`` if it is a TOML table, else a ScenarioError naming ``where``."""
    if not isinstance(value, dict):
        raise invalid(where, f"must be a table, got {type(value).__name__} {value!r}")
    return value


def only(where: str, table: dict[str, Any], allowed: set[str]) -> None:
    """Refuses a key of ``table`` outside ``allowed``, naming it, suggesting the closest allowed key
    for a probable typo (``rollout_slot: unknown key; did you mean rollout_slots? (allowed: [...])``,
    as the command line does for flags) and listing the allowed ones."""
    for k in table:
        if k not in allowed:
            hint = did_you_mean(k, allowed)
            e = invalid(_join(where, k), f"unknown key{hint} (allowed: {sorted(allowed)})")
            e.unknown_key = (_join(where, k), sorted(allowed), hint)  # type: ignore[attr-defined]  # see naming_file
            raise e


did_you_mean = _text.did_you_mean


@contextlib.contextmanager
def naming_file(path: str | os.PathLike[str]) -> typing.Iterator[None]:
    """An unknown key of the document read from ``path`` (refused by :func:`only` inside the block)
    names the file: ``rollout_slot: unknown key in 't.toml' (allowed: [...])``; so does a key of
    another pipeline kind (:func:`pipeline_from_doc`): ``pipeline.max_staleness: applies to kind
    'fully_async' only, not 'synchronous' (in 't.toml')``."""
    try:
        yield
    except ScenarioError as e:
        found = getattr(e, "unknown_key", None)
        if found is not None:
            raise invalid(found[0], f"unknown key in {os.fspath(path)!r}{found[2]} (allowed: {found[1]})") from None
        other = getattr(e, "other_kind", None)
        if other is not None:
            raise invalid(other[0], f"{other[1]} (in {os.fspath(path)!r})") from None
        raise


def _digits(v: int) -> int:
    try:
        return len(str(abs(v)))
    except ValueError:  # beyond Python's int-to-str limit
        return int(v.bit_length() * math.log10(2)) + 1


def check_integers(where: str, value: Any) -> None:
    """Refuses integers of more than 20 digits anywhere in ``value`` (no field takes one; some
    would overflow a float), naming their place."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > 64 and _digits(value) > _DIGITS:
            raise invalid(where, f"must be an integer of at most {_DIGITS} digits, got one of {_digits(value)} digits")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_integers(_join(where, str(k)), v)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            check_integers(f"{where}[{i}]", v)


# Empirical lengths read from a file or a data set, and the table they came from (for to_toml).
_SOURCES: weakref.WeakKeyDictionary[Empirical, dict[str, Any]] = weakref.WeakKeyDictionary()


def lengths_from_doc(where: str, value: Any, root: str | os.PathLike[str] = ".") -> LogNormal | Empirical:
    """Lengths from a TOML table (see the module doc); a relative ``file`` is taken from ``root``.
    An already built ``LogNormal`` / ``Empirical`` is returned as is.

    Raises
    ------
    ScenarioError (ValueError)
        An unknown key (naming ``where.key``, listing the allowed ones) or an invalid value.
    FileNotFoundError
        ``file`` does not exist.
    """
    if isinstance(value, (LogNormal, Empirical)):
        return value
    t = table(where, value)
    check_integers(where, t)
    variant = lengths_variant(t)
    if variant == "dataset":
        only(where, t, lengths_keys("dataset"))
        name = t["dataset"]
        if not isinstance(name, str) or name not in datasets.NAMES:
            raise invalid(f"{where}.dataset", f"unknown data set {name!r} (built in: {list(datasets.NAMES)})")
        emp = datasets.by_name(name, t.get("max_tokens"))
        _SOURCES[emp] = dict(t)
        return emp
    if variant == "file":
        only(where, t, lengths_keys("file"))
        if not isinstance(t["file"], str):
            raise invalid(f"{where}.file", f"must be a path (string), got {t['file']!r}")
        path = Path(t["file"])
        if not path.is_absolute():
            path = Path(root) / path
        kw = {k: v for k, v in t.items() if k != "file"}
        emp = Empirical.from_file(path, **kw)
        _SOURCES[emp] = {"file": os.path.abspath(path), **kw}
        return emp
    if variant == "lognormal":
        only(where, t, lengths_keys("lognormal"))
        return LogNormal(**{k: v for k, v in t.items() if k != "kind"})
    if variant == "empirical":
        only(where, t, lengths_keys("empirical"))
        if "values" not in t:
            raise invalid(f"{where}.values", "an empirical distribution needs values = [...]")
        return Empirical(**{k: v for k, v in t.items() if k != "kind"})
    raise invalid(f"{where}.kind", f"must be 'lognormal' or 'empirical' (or give dataset = ... / file = ...), "
                                   f"got {t.get('kind')!r}")


def batch_order_from_doc(where: str, value: Any) -> str | LengthBalanced:
    """A ``batch_order``: a string (``fifo``, ``oldest_first``; ``length_balanced`` for the
    default :class:`LengthBalanced`) or a table of :class:`LengthBalanced` fields (``kind =
    "length_balanced"`` optional)."""
    if value == LENGTH_BALANCED:
        return LengthBalanced()
    if not isinstance(value, dict):
        return value  # a string (checked by FullyAsync) or already a LengthBalanced
    only(where, value, batch_order_keys())
    if value.get("kind", LENGTH_BALANCED) != LENGTH_BALANCED:
        raise invalid(f"{where}.kind", f"must be '{LENGTH_BALANCED}' in a batch_order table, got {value['kind']!r}")
    return LengthBalanced(**{k: v for k, v in value.items() if k != "kind"})


def pipeline_from_doc(where: str, value: Any) -> Any:
    """A pipeline from a TOML table (``kind`` and the fields of the kind's class) or a kind
    string; an already built pipeline is returned as is.

    Raises
    ------
    ScenarioError (ValueError)
        An unknown kind or key (naming ``where.key``, listing the allowed ones), a key of another
        kind (naming the kinds that have it) or an invalid value.
    """
    if isinstance(value, tuple(PIPELINE_KINDS.values())):
        return value
    if isinstance(value, str):
        value = {"kind": value}
    t = table(where, value)
    check_integers(where, t)
    kind = t.get("kind")
    if not isinstance(kind, str) or kind not in PIPELINE_KINDS:
        raise invalid(f"{where}.kind", f"must be 'synchronous', 'one_step', 'off_policy' or 'fully_async', got {kind!r}")
    allowed = pipeline_keys(kind)
    for k in t:
        owners = tuple(o for o in PIPELINE_KINDS if k not in allowed and k in pipeline_keys(o))
        if owners:  # a key of another kind: say which kinds have it, as the command line does
            kinds = " or ".join(repr(o) for o in owners)
            e = invalid(_join(where, k), f"applies to kind {kinds} only, not {kind!r}")
            e.other_kind = (_join(where, k), str(e).partition(": ")[2])  # type: ignore[attr-defined]  # naming_file
            raise e
    only(where, t, allowed)
    kw = {k: v for k, v in t.items() if k != "kind"}
    if "batch_order" in kw:
        kw["batch_order"] = batch_order_from_doc(f"{where}.batch_order", kw["batch_order"])
    return PIPELINE_KINDS[kind](**kw)


def scenario_from_doc(doc: Any, root: str | os.PathLike[str] = ".", where: str = "") -> Scenario:
    """A :class:`Scenario` from a parsed TOML document: any Scenario field at the top, ``lengths``
    and ``pipeline`` as tables (see the module doc); omitted fields keep their defaults. Relative
    file paths are taken from ``root``; ``where`` prefixes key names in messages (``"base"``).

    Raises
    ------
    ScenarioError (ValueError)
        An unknown key (the message names it and lists the allowed ones) or an invalid value.
    FileNotFoundError
        A lengths ``file`` does not exist.
    """
    t = table(where or "scenario", doc)
    only(where, t, {f.key for f in scenario_fields()})
    check_integers(where, {k: v for k, v in t.items() if k not in ("lengths", "pipeline")})
    kw = dict(t)
    if "lengths" in kw:
        kw["lengths"] = lengths_from_doc(_join(where, "lengths"), kw["lengths"], root)
    if "pipeline" in kw:
        kw["pipeline"] = pipeline_from_doc(_join(where, "pipeline"), kw["pipeline"])
    if "agentic" in kw:
        kw["agentic"] = _agentic_from_doc(_join(where, "agentic"), kw["agentic"], root)
    if isinstance(kw.get("length_drift"), dict):
        kw["length_drift"] = LengthDrift(**table(_join(where, "length_drift"), kw["length_drift"]))
    if isinstance(kw.get("train"), dict):  # a [train] table: the fields of rollsim.TrainRanks
        from rollsim.train_ranks import TrainRanks

        kw["train"] = TrainRanks(**table(_join(where, "train"), kw["train"]))
    try:
        sc: Scenario = _SCENARIO(**kw)
    except ScenarioError as e:  # a [weight_sync] table is read by the Scenario: name it under `where`
        if where and str(e).startswith("weight_sync."):
            raise ScenarioError(f"{where}.{e}") from None
        mismatch = getattr(e, "decode_mismatch", None)
        if mismatch is not None and "decode_tokens_per_s" not in t:  # the table given, the speed left at its default
            err = invalid(_join(where, "decode_throughput_table"),
                          f"its speed at one sequence ({mismatch[0]} tokens/s) must equal decode_tokens_per_s, which "
                          f"is not given (default {mismatch[1]}): give decode_tokens_per_s = {mismatch[0]} too")
            err.decode_mismatch = mismatch  # type: ignore[attr-defined]
            raise err from None
        raise
    return sc


def read_toml(path: str | os.PathLike[str], what: str = "scenario file") -> dict[str, Any]:
    """Parses a TOML file. A UTF-8 byte-order mark at the start is skipped.

    Raises
    ------
    FileNotFoundError
        No such file.
    ScenarioError (ValueError)
        ``what: ...``: a directory or other non-regular file (a FIFO is not read), content that is
        not UTF-8, or invalid TOML (with the line and column).
    OSError
        The file cannot be read.
    """
    p = os.fspath(path)
    st = os.stat(p)  # FileNotFoundError for a missing file
    if stat.S_ISDIR(st.st_mode):
        raise invalid(what, f"{p!r} is a directory, not a TOML file")
    if not stat.S_ISREG(st.st_mode):
        raise invalid(what, f"{p!r} is not a regular file")
    with open(p, "rb") as f:
        data = f.read()
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise invalid(what, f"{p!r} is not UTF-8 text (line {line}, byte offset {e.start}: "
                            f"{data[e.start:e.start + 1]!r})") from None
    return _parse(text, what, repr(p))


def _parse(text: str, what: str, name: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except ValueError as e:  # TOMLDecodeError, or an integer beyond Python's int-to-str limit
        raise invalid(what, f"{name} is not valid TOML: {e}") from None


def loads(text: str, root: str | os.PathLike[str] = ".") -> Scenario:
    """A scenario from TOML text (:meth:`Scenario.from_toml_str`); relative paths from ``root``."""
    if not isinstance(text, str):
        raise invalid("text", f"must be a str of TOML, got {type(text).__name__}")
    return scenario_from_doc(_parse(text.removeprefix("\ufeff"), "text", "the text"), root)


def load(path: str | os.PathLike[str]) -> Scenario:
    """A scenario from a TOML file (:meth:`Scenario.from_toml`); relative paths from its directory."""
    doc = read_toml(path)
    with naming_file(path):
        return scenario_from_doc(doc, Path(os.fspath(path)).parent)


# ================================================================================================
# scenarios -> TOML


def _plain(where: str, v: Any) -> Any:
    """``v`` as TOML-writable Python values (numpy scalars and arrays to Python ones)."""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, (list, tuple)):
        return [_plain(f"{where}[{i}]", x) for i, x in enumerate(v)]
    if isinstance(v, dict):
        return {k: _plain(_join(where, k), x) for k, x in v.items() if x is not None}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise invalid(where, f"cannot be written to TOML: {type(v).__name__} {v!r}")


@functools.lru_cache(maxsize=8)
def _dataset(name: str, max_tokens: float | None) -> Empirical:
    return datasets.by_name(name, max_tokens)


# The agentic distributions: the observation lengths are tokens (a lengths table); the tool
# latency is seconds, its own tables (tool_latency_keys).
_TOOL = "tool_latency_s"
# Tool latencies read from a file through this module, and their table (for to_toml).
_TOOL_SOURCES: weakref.WeakKeyDictionary[Empirical, dict[str, Any]] = weakref.WeakKeyDictionary()


@functools.cache
def _seconds_parts() -> dict[str, dict[str, Any]]:
    from rollsim import _rollsim

    return {p["kind"]: p for p in _rollsim.SCHEMA["seconds_parts"]}


@functools.cache
def tool_latency_keys(variant: str) -> frozenset[str]:
    """The keys an ``[agentic.tool_latency_s]`` table of ``variant`` accepts: ``lognormal`` and
    ``empirical`` (``kind`` and the fields of the engine's ``SCHEMA["seconds_parts"]``: ``mu``,
    ``sigma``, ``max_s``; ``values``, ``weights``, ``max_s``, ``name``), ``file`` (the keys of a
    lengths file, seconds: ``max_s`` for ``max_tokens``, no ``group_column``)."""
    parts = _seconds_parts()
    if variant in parts:
        return frozenset({"kind"} | {f["name"] for f in parts[variant]["fields"]})
    if variant == "file":
        keys = {k for k, _, _ in _file_keys()} - {"group_column", "max_tokens"}
        return frozenset(keys | {"max_s"})
    raise KeyError(variant)


def _seconds_cap(where: str, t: dict[str, Any], variant: str) -> Any:
    """``max_s`` of a tool latency table, checked against the schema's range (``None`` if absent)."""
    if t.get("max_s") is None:
        return None
    spec = next(f for f in _seconds_parts()[variant if variant != "file" else "empirical"]["fields"]
                if f["name"] == "max_s")
    return _checked(dict(spec, path=f"{where}.max_s"), t["max_s"])


def _checked(spec: dict[str, Any], value: Any) -> float:
    """``value`` in the range of the schema field ``spec`` (named by its ``path``)."""
    from rollsim import _check

    return _check.within(spec, value, _check.real(spec["path"], value))


def _tool_latency_from_doc(where: str, value: Any, root: str | os.PathLike[str]) -> Any:
    """A tool latency: a number of seconds, or a table in seconds (:func:`tool_latency_keys`).

    Raises
    ------
    ScenarioError
        The lengths' spelling (``max_tokens``, a ``dataset``: answer lengths, not seconds), an
        unknown key or an invalid value.
    """
    from rollsim import _check

    if not isinstance(value, dict):
        return value
    t = table(where, value)
    check_integers(where, t)
    if "max_tokens" in t:
        raise invalid(f"{where}.max_tokens", f"a tool latency is seconds: its cap is max_s (max_tokens is the key of "
                                             f"token lengths), got max_tokens = {_check.show(t['max_tokens'])}")
    if "dataset" in t:
        raise invalid(f"{where}.dataset", "the built-in data sets are answer lengths (tokens), not tool latencies: "
                                          "give values = [...] or file = ... in seconds")
    variant = "file" if "file" in t else t.get("kind", "lognormal")
    if variant not in ("file", *_seconds_parts()):
        raise invalid(f"{where}.kind", f"must be 'lognormal' or 'empirical' (or give file = ...), got {variant!r}")
    only(where, t, set(tool_latency_keys(variant)))
    cap = _seconds_cap(where, t, variant)
    if variant == "file":
        if not isinstance(t["file"], str):
            raise invalid(f"{where}.file", f"must be a path (string), got {t['file']!r}")
        path = Path(t["file"])
        if not path.is_absolute():
            path = Path(root) / path
        kw = {k: v for k, v in t.items() if k not in ("file", "max_s")}
        emp = Empirical.from_file(path, max_tokens=cap, **kw)
        _TOOL_SOURCES[emp] = {"file": os.path.abspath(path), **kw, **({} if cap is None else {"max_s": cap})}
        return emp
    fields = {f["name"]: f for f in _seconds_parts()[variant]["fields"]}
    for k, f in fields.items():
        if f["required"] and k not in t:
            doc = f["doc"][:1].lower() + f["doc"][1:] + (", seconds" if f["unit"] == "seconds" else "")
            raise invalid(f"{where}.{k}", f"a {variant} tool latency needs {k} = ... ({doc})")
    kw = {k: v for k, v in t.items() if k not in ("kind", "max_s")}
    if variant == "lognormal":
        for k in ("mu", "sigma"):
            if k in kw:
                kw[k] = _checked(dict(fields[k], path=f"{where}.{k}"), kw[k])
        return LogNormal(**kw, max_tokens=cap)
    return Empirical(**kw, max_tokens=cap)


def _tool_latency_to_doc(x: Any) -> Any:
    """A tool latency's TOML value: a number, or its table in seconds (``max_s``)."""
    if isinstance(x, LogNormal):
        return {"kind": "lognormal", "mu": x.mu, "sigma": x.sigma, "max_s": x.max_tokens}
    if isinstance(x, Empirical):
        src = _TOOL_SOURCES.get(x)
        if src is not None:
            return dict(src)
        return {"kind": "empirical", "values": x.values, "weights": x.weights, "max_s": x.max_tokens, "name": x.name}
    return x


def _agentic_from_doc(where: str, value: Any, root: str | os.PathLike[str]) -> Any:
    """An ``[agentic]`` table: the fields of :class:`rollsim.agentic.Agentic`; ``tool_latency_s``
    is seconds or a table in seconds (``[agentic.tool_latency_s]``: ``kind = "lognormal"``, ``mu``,
    ``sigma``, ``max_s``; ``kind = "empirical"``, ``values``, ``weights``, ``max_s``; ``file = ...``),
    ``observation_tokens`` tokens or a lengths table."""
    from rollsim.agentic import Agentic

    if isinstance(value, Agentic):
        return value
    t = dict(table(where, value))
    if _TOOL in t:
        t[_TOOL] = _tool_latency_from_doc(_join(where, _TOOL), t[_TOOL], root)
    if isinstance(t.get("observation_tokens"), dict):
        t["observation_tokens"] = lengths_from_doc(_join(where, "observation_tokens"), t["observation_tokens"], root)
    return Agentic(**t)


def _agentic_to_doc(x: Any) -> dict[str, Any]:
    out = {f.name: getattr(x, f.name) for f in dataclasses.fields(x)}
    out[_TOOL] = _tool_latency_to_doc(out[_TOOL])
    if isinstance(out["observation_tokens"], (LogNormal, Empirical)):
        out["observation_tokens"] = _lengths_to_doc(out["observation_tokens"])
    return out


def _lengths_to_doc(x: LogNormal | Empirical) -> dict[str, Any]:
    if isinstance(x, LogNormal):
        return {"kind": "lognormal", **{f.name: getattr(x, f.name) for f in dataclasses.fields(x)}}
    src = _SOURCES.get(x)
    if src is not None:
        return dict(src)
    if x.name is not None:
        for name in datasets.NAMES:
            if _dataset(name, x.max_tokens) == x:
                return {"dataset": name, "max_tokens": x.max_tokens}
    return {"kind": "empirical", **{f.name: getattr(x, f.name) for f in dataclasses.fields(x)
                                    if f.init and not f.name.startswith("_")}}


def _pipeline_to_doc(p: Any) -> dict[str, Any]:
    kind = next(k for k, c in PIPELINE_KINDS.items() if type(p) is c)
    d: dict[str, Any] = {"kind": kind}
    for f in dataclasses.fields(p):
        if f.init and not f.name.startswith("_"):
            d[f.name] = getattr(p, f.name)
    order = d.get("batch_order")
    if isinstance(order, LengthBalanced):
        d["batch_order"] = {"kind": LENGTH_BALANCED, **{f.name: getattr(order, f.name)
                                                        for f in dataclasses.fields(order)}}
    return d


def scenario_to_doc(scenario: Scenario) -> dict[str, Any]:
    """The TOML document of ``scenario``: every field (``None`` ones left out), ``lengths`` and
    ``pipeline`` as tables; :func:`scenario_from_doc` rebuilds an equal scenario."""
    doc: dict[str, Any] = {}
    for f in scenario_fields():
        v = getattr(scenario, f.path)
        if f.path == "lengths":
            v = _lengths_to_doc(v)
        elif f.path == "pipeline":
            v = _pipeline_to_doc(v)
        elif f.path == "agentic" and v is not None:
            v = _agentic_to_doc(v)
        elif f.path == "train" and v is not None:
            v = {g.name: getattr(v, g.name) for g in dataclasses.fields(v)}
        elif f.path == "weight_sync" and v is not None:
            v = v.to_doc()  # a rollsim.sync.WeightSync: its [weight_sync] table
        elif f.path == "length_drift" and v is not None:
            v = {g.name: getattr(v, g.name) for g in dataclasses.fields(v)}
        doc[f.path] = v
    if doc.get("weight_sync") is not None:  # the two numbers are derived from it (see to_toml's header)
        del doc["weight_sync_s"], doc["rollout_pause_s"]
    out = _plain("", doc)
    if any(isinstance(x, float) and math.isnan(x) for x in np.ravel(out["lengths"].get("groups", []))):
        raise invalid("lengths.groups", "NaN group keys cannot be written to TOML and read back equal")
    return out


_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(k: str) -> str:
    return k if _BARE.match(k) else _string(k)


def _string(s: str) -> str:
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:
            raise invalid("string", f"{s!r} holds a lone surrogate, which TOML (UTF-8) cannot hold")
        else:
            out.append(ch)
    return "".join(out) + '"'


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return _string(v)
    if isinstance(v, list):
        items = [_scalar(x) for x in v]
        one = "[" + ", ".join(items) + "]"
        if len(one) <= 100:
            return one
        lines, line = [], ""
        for it in items:
            if line and len(line) + len(it) > 96:
                lines.append(line.rstrip())
                line = ""
            line += it + ", "
        lines.append(line.rstrip())
        return "[\n    " + "\n    ".join(lines) + "\n]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_scalar(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"not a TOML value: {v!r}")


def dumps(doc: dict[str, Any], header: str = "") -> str:
    """TOML text of a document of scalars, lists and tables (one level of ``[table]`` sections;
    deeper tables inline). ``header`` lines are written as comments at the top."""
    lines = [f"# {h}".rstrip() for h in header.splitlines()]
    lines += [f"{_key(k)} = {_scalar(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines += ["", f"[{_key(k)}]"] + [f"{_key(kk)} = {_scalar(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


def to_toml(sc: Scenario) -> str:
    """TOML text of ``sc`` (:meth:`Scenario.to_toml`)."""
    header = "A rollsim scenario: rollsim run FILE, or rollsim.Scenario.from_toml(FILE)"
    ws = getattr(sc, "weight_sync", None)
    if ws is not None:
        header += (f"\nweight_sync_s = {sc.weight_sync_s!r} and rollout_pause_s = {sc.rollout_pause_s!r} are derived "
                   f"from [weight_sync] ({ws.total_s!r} s per update)")
    return dumps(scenario_to_doc(sc), header=header)
