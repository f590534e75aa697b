"""The ``rollsim`` command line.

``rollsim compare``  the chapter's comparison (synchronous, one-step, fully async, fully async with a
                     cap) on the default scenario, a scenario file or any variant of it; ``--out DIR``
                     writes parquet.
``rollsim run``      one pipeline; prints the summary; ``--out DIR`` writes the frames.
``rollsim sweep``    a parameter sweep from a TOML file, streamed to parquet, resumable, local or Ray.
``rollsim sync``     the weight-sync estimator: the chapter's table, or a cluster TOML file.
``rollsim report``   a Markdown / HTML report of a result directory; ``rollsim plot`` one figure.

``run`` and ``compare`` take a scenario TOML file (``rollsim run scenario.toml``, format:
:mod:`rollsim.scenario_toml`). Every field of the scenario, of its lengths and of its pipeline is a
flag named after it (``rollout_slots`` -> ``--rollout-slots``, ``pipeline.admission_eta`` ->
``--admission-eta``, ``pipeline.batch_order.share`` -> ``--batch-order-share``), made from the field
list of :mod:`rollsim.scenario_toml`; flags given override the file's values. Agentic trajectories
come from ``--agentic-preset NAME`` or a scenario file's ``[agentic]`` table (with both, the preset is
the base and the file's values take precedence, named on stderr), with a flag per field of
:class:`rollsim.Agentic` on top (``--max-turns``, ``--kv-policy``, ``--env-slots``, ...). Errors
print ``rollsim: error: <message>`` and exit with code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import glob
import json
import math
import os
import re
import sys
import tempfile
import typing
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Literal, NoReturn

import polars as pl

from rollsim import _check, _rollsim, datasets
from rollsim._text import UNDEFINED, undefined
from rollsim import scenario_toml as schema
from rollsim.sweeps import _store
from rollsim.errors import DeploymentWarning, RollsimError, ScenarioError, StalenessCapLivelockWarning, invalid
from rollsim.lengths import LogNormal
from rollsim.pipelines import PIPELINE_NAMES, FullyAsync, OneStepAsync, Synchronous, pipeline_name
from rollsim.scenario import MAX_COUNT, Scenario
from rollsim.simulation import (DEFAULT_MAX_EVENTS, DEFAULT_MAX_SAMPLES, ENGINE_MAX_SAMPLES, check_runaway, compare,
                                livelock_message, simulate)

_DEFAULT = Scenario()

#: ``--pipeline`` spellings: the command line's and the TOML kinds (:data:`rollsim.pipelines.PIPELINE_NAMES`).
_PIPELINE_CLI = PIPELINE_NAMES
_CLI_NAME = {v: k for k, v in _PIPELINE_CLI.items()}


def _pipeline_choice(names: tuple[str, ...]) -> Callable[[str], str]:
    """``--pipeline``'s type for ``run`` and ``split`` (``names``: the ones the command runs): the
    command line's name of the word (:func:`rollsim.pipelines.pipeline_name`: ``fully_async``,
    ``Sync``), or the word as given for argparse to refuse with its near miss; ``whatif`` reads its
    names with :func:`rollsim.pipelines.pipeline_from_name`, by the same rule."""

    def conv(text: str) -> str:
        name = pipeline_name(text)
        return name if name in names else text

    return _named(conv, "choice")


#: Scenario fields with no flag of their own: set them in a scenario TOML file (``[train]``,
#: ``[weight_sync]``, ``[length_drift]``; ``agentic`` has a flag per field instead, see
#: :func:`_add_agentic_args`).
TOML_ONLY: tuple[str, ...] = ("agentic", "train", "weight_sync", "length_drift")
#: ``--agentic-preset`` names: ``default`` (``Agentic()``, the scenario's lengths kept), and the
#: presets of :mod:`rollsim.trajectories` (their names with dashes or underscores).
AGENTIC_DEFAULT = "default"


def _mark(ns: argparse.Namespace, dest: str, flag: str | None) -> None:
    given = getattr(ns, "_given", None)
    if given is None:
        given = {}
        ns._given = given
    given[dest] = flag or dest


class _Given(argparse.Action):
    """Stores the value and remembers that the flag was given: given flags override a scenario
    file's values (and only they do)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        _mark(namespace, self.dest, option_string)


class _GivenBool(argparse.BooleanOptionalAction):
    """``--flag`` / ``--no-flag``, remembered like :class:`_Given`."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        _mark(namespace, self.dest, option_string)


def _named(fn: Any, name: str) -> Any:
    fn.__name__ = name  # argparse says "invalid <name> value: ..."
    return fn


_UNIT_S = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "hr": 3600.0, "hour": 3600.0,
           "hours": 3600.0, "d": 86400.0, "day": 86400.0, "days": 86400.0}


def _seconds(text: str) -> float:
    """A flag in seconds (``--horizon-s``): a number; a value with a unit (``2h``) is refused with the
    number of seconds it means, never converted silently."""
    try:
        return float(text)
    except ValueError:
        pass
    m = re.fullmatch(r"\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]+)\s*", text)
    if m and m.group(2).lower() in _UNIT_S:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}: give "
                                         f"{float(m.group(1)) * _UNIT_S[m.group(2).lower()]:g}")
    raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}")


def _optional(conv: Any) -> Any:
    return _named(lambda s: None if s.strip().lower() == "none" else conv(s), f"{conv.__name__} (or none)")


def _listed(conv: Any) -> Any:
    return _named(lambda s: tuple(conv(x) for x in s.split(",")), f"comma-separated {conv.__name__}")


def _pairs(s: str) -> tuple[tuple[int, float], ...]:
    out = []
    for item in s.split(","):
        n, sep, tp = item.partition(":")
        if not sep:
            raise ValueError(s)
        out.append((int(n), float(tp)))
    return tuple(out)


_pairs.__name__ = "N:TOKENS_PER_S pairs"


def _bool_word(s: str) -> bool:
    word = s.strip().lower()
    if word not in ("true", "false"):
        raise ValueError(s)
    return word == "true"


_bool_word.__name__ = "true/false"


def _converter(tp: Any) -> tuple[Any, str | None]:
    """(argparse ``type``, metavar) for a field's annotation."""
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    optional = type(None) in typing.get_args(tp)
    base = args[0] if optional and len(args) == 1 else tp
    conv: Any
    if typing.get_origin(base) is typing.Literal:
        conv, meta = str, None  # argparse shows the choices
    elif base is str:
        conv, meta = str, "TEXT"
    elif base is int or base is float:
        conv, meta = base, "N" if base is int else "X"
    elif base is bool:  # an optional flag (bool | None): a word, so that none is reachable too
        conv, meta = _bool_word, "true|false"
    elif base == tuple[float, ...]:
        conv, meta = _listed(float), "X,Y,..."
    elif base == tuple[int, ...]:
        conv, meta = _listed(int), "N,M,..."
    elif base == tuple[tuple[int, float], ...]:
        conv, meta = _pairs, "N:TOKENS_PER_S,..."
    else:  # str | LengthBalanced and other unions with str: the string form
        conv, meta = str, "TEXT"
    if optional and conv is not str:
        return _optional(conv), f"{meta}|none"
    return conv, meta


_OWNER_NAMES = {"lognormal": "lognormal", "empirical": "empirical", "file": "FILE", "dataset": "data sets",
                **_CLI_NAME}


#: Sphinx roles in docstrings (``:data:`MAX_SIGMA```, ``:class:`~rollsim.Agentic```,
#: ``:func:`text <target>```) and ``double backticks``: markup for the docs, not for ``--help``.
_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`([^`<]*?)\s*(?:<([^>`]*)>)?`")
_LITERAL = re.compile(r"``(.+?)``")


def _plain(text: str) -> str:
    """A docstring's text as ``--help`` shows it: ``double backticks`` dropped, a role's target
    written out (``:class:`~rollsim.Agentic``` -> ``Agentic``, ``:func:`text <target>``` -> ``text``)
    and a bare constant qualified with its module (``:data:`MAX_SIGMA``` ->
    ``rollsim.lengths.MAX_SIGMA``), so that the user can find it."""
    import importlib

    def role(m: re.Match[str]) -> str:
        target = m.group(1).strip()
        if m.group(2):  # :func:`text <target>`
            return target
        if target.startswith("~"):
            return target.rpartition(".")[2]
        if "." not in target:
            for mod in ("rollsim", "rollsim.lengths", "rollsim.scenario", "rollsim.pipelines", "rollsim.agentic"):
                if hasattr(importlib.import_module(mod), target):
                    return f"{mod}.{target}"
        return target

    return _LITERAL.sub(r"\1", _ROLE.sub(role, text))


#: What ``None`` means for a field of the engine's schema, from its description's ``(None: ...)``
#: (``pipeline.max_staleness`` -> ``no cap``), for ``--help``'s default of a field whose default is None.
_NONE_MEANS: dict[str, str] = {
    path: m.group(1) for path, doc in (
        *((f["name"], f["doc"]) for f in _rollsim.SCHEMA["scenario"]),
        *((f["path"], f["doc"]) for part in _rollsim.SCHEMA["parts"] for f in part["fields"]))
    if (m := re.search(r"\bNone: ([^;()]+)\)", doc))}


#: The default of a field shared by several kinds, where it differs by kind (``Empirical`` and the data
#: sets default to no truncation, ``LogNormal`` to the chapter's limit).
_KIND_DEFAULTS: dict[str, str] = {
    "lengths.max_tokens": f"default: {LogNormal().max_tokens:g} with lognormal; none, untruncated, otherwise",
}


def _help(f: schema.Field, default: Any) -> str:
    text = _plain(f.help).replace("%", "%%")
    if tuple[tuple[int, float], ...] in (f.type, *typing.get_args(f.type)):   # the Python form is in the text
        text += "; on the command line N:TOKENS_PER_S pairs, e.g. 1:60,8:400,64:1600"
    if f.path == "pipeline.batch_order":
        text += f": {', '.join((*schema.BATCH_ORDERS, schema.LENGTH_BALANCED))}"
    notes = []
    if f.owners and f.part != "pipeline.batch_order":
        notes.append("with " + ", ".join(_OWNER_NAMES.get(o, o) for o in f.owners))
    elif f.part == "pipeline.batch_order":
        notes.append(f"with --batch-order {schema.LENGTH_BALANCED}")
    # the field's text may already say which value is the default ("0 (default) keeps ..."): not twice
    said = "(default)" in text and (default is None or default == f.default)
    if default is not None and not said:
        notes.append("default: %(default)s")
    elif not said and len(f.owners) <= 1 and f.default is not dataclasses.MISSING and f.default is not None:
        notes.append(f"default: {f.default}")
    elif not said and f.default is None and f.path in _NONE_MEANS:  # what none means, not "None"
        notes.append(f"default: none, {_NONE_MEANS[f.path]}".replace("%", "%%"))
    elif not said and f.path in _KIND_DEFAULTS:
        notes.append(_KIND_DEFAULTS[f.path])
    return text + (f" ({'; '.join(notes)})" if notes else "")


def _add_flag(g: Any, f: schema.Field, default: Any = None, *, dest: str | None = None) -> str:
    """Adds the flag of field ``f`` to group ``g``; returns its dest."""
    flag = f.flag
    assert flag is not None
    dest = dest or flag[2:].replace("-", "_")
    if f.type is bool:
        g.add_argument(flag, dest=dest, action=_GivenBool, default=default, help=_help(f, default))
        return dest
    conv, meta = _converter(f.type)
    if flag.endswith("-s") and conv is float:  # seconds: '2h' is refused with its number of seconds
        conv = _seconds
    elif flag.endswith("-s") and meta == "X|none":
        conv = _optional(_named(_seconds, "float"))
    choices = typing.get_args(f.type) if typing.get_origin(f.type) is typing.Literal else _CHOICES.get(f.path)
    if choices is not None and conv is str:
        conv = _named(_choice_word(tuple(choices)), "choice")  # abort-drop is abort_drop, as --pipeline one-step
    elif f.path == "pipeline.batch_order":  # its names (oldest-first, length-balanced) take hyphens too
        conv = _named(_choice_word((*schema.BATCH_ORDERS, schema.LENGTH_BALANCED)), "batch order")
    g.add_argument(flag, dest=dest, action=_Given, type=conv, default=default, metavar=meta if choices is None else None,
                   choices=choices, help=_help(f, default))
    return dest


#: The choices of the parts' text fields, from the engine's schema (``batch_order`` also takes a
#: ``length_balanced:...`` form, so its help lists them instead).
_CHOICES: dict[str, tuple[str, ...]] = {
    f["path"]: tuple(f["choices"]) for part in _rollsim.SCHEMA["parts"] for f in part["fields"]
    if f.get("choices") and f["kind"] == "str" and f["path"] != "pipeline.batch_order"}


def _choice_word(choices: tuple[str, ...]) -> Callable[[str], str]:
    """A choice as given, or with its hyphens read as underscores when that is one of ``choices``
    (the flags spell ``--pipeline one-step`` and ``--on-update abort-drop`` alike)."""

    def conv(text: str) -> str:
        alt = text.replace("-", "_")
        return alt if text not in choices and alt in choices else text

    return conv


def _add_scenario_args(p: argparse.ArgumentParser, default_rng: str, *, instances: bool = True,
                       pipeline: bool = False, scenario_file: bool = False,
                       guards: tuple[str, ...] = ("max_samples", "max_events")) -> None:
    """The scenario's flags, one per field of :class:`Scenario` and of its lengths (and, with
    ``pipeline``, of its pipeline), from :mod:`rollsim.scenario_toml`'s field list;
    ``instances=False`` leaves out ``--slots-per-instance`` (for ``split``, whose own flag sizes
    the instances); ``scenario_file`` adds an optional scenario TOML file whose values the given
    flags override; ``guards`` the run guards the command applies (``--max-samples``,
    ``--max-events``)."""
    if scenario_file:
        p.add_argument("scenario", nargs="?", default=None,
                       help="a scenario TOML file (any Scenario field; see python/rollsim/examples/scenario.toml); "
                            "flags given override its values")
    g = p.add_argument_group("scenario (defaults: the chapter's; with a scenario file, the file's)" if scenario_file
                             else "scenario (defaults: the chapter's)")
    fields: dict[str, schema.Field] = {}
    for f in schema.scenario_fields():
        if f.path in ("lengths", "pipeline") + TOML_ONLY or (f.path == "slots_per_instance" and not instances):
            continue
        default = default_rng if f.path == "rng" else f.default
        fields[_add_flag(g, f, default, dest=f.path)] = f
    if "max_samples" in guards:
        g.add_argument("--max-samples", type=int, default=None,
                       help=f"refuse runs that would start more samples than this (the memory guard; default: "
                            f"{DEFAULT_MAX_SAMPLES:_} when --out records every sample, else 2**32 - 1)")
    if "max_events" in guards:
        g.add_argument("--max-events", type=int, default=DEFAULT_MAX_EVENTS,
                       help="refuse runs estimated to process more events than this (the run-time guard, about a "
                            "minute of running; 0: no limit; %(default)s)")
    g = p.add_argument_group("answer lengths (flags of lengths.* fields; each applies to some kinds only)")
    g.add_argument("--lengths", action=_Given, default="lognormal",
                   help="'lognormal' (with --mu/--sigma/--max-tokens/--group-correlation), a built-in data set "
                        f"({', '.join(datasets.NAMES)}), or a CSV/parquet file (%(default)s)")
    lengths: dict[str, schema.Field] = {}
    for f in schema.lengths_fields():
        if f.flag not in (None, "--lengths"):
            lengths[_add_flag(g, f)] = f
    flags: dict[str, schema.Field] = {}
    if pipeline:
        g = p.add_argument_group("pipeline (flags of pipeline.* fields; each applies to some kinds only)")
        g.add_argument("--pipeline", action=_Given, choices=tuple(_PIPELINE_CLI), default="fully-async",
                       type=_pipeline_choice(tuple(_PIPELINE_CLI)),
                       help="the pipeline kind, or a scenario file's spelling of it (synchronous, one_step, "
                            "off_policy, fully_async) (%(default)s)")
        for f in schema.pipeline_fields():
            if f.flag != "--pipeline":
                flags[_add_flag(g, f)] = f
    p.set_defaults(_fields=fields, _lengths_flags=lengths, _pipeline_flags=flags)


def _refuse_pipeline_flags(p: argparse.ArgumentParser, why: str, keep: tuple[str, ...] = ()) -> None:
    """The pipeline's flags (``--pipeline``, ``--on-update``, ...; those of ``keep`` excepted) on a
    command that runs its own pipelines: refused, saying ``why``, instead of argparse's
    "unrecognized arguments" (which also took ``--pipeline sync``'s value for a scenario file).
    Hidden from ``--help``."""

    class Refuse(argparse.Action):
        def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                     option_string: str | None = None) -> None:
            parser.error(f"argument {option_string}: {why}")

    for f in schema.pipeline_fields():
        if f.flag is not None and f.flag not in keep:
            p.add_argument(f.flag, action=Refuse, nargs="?", dest=f"_refused_{f.key}", help=argparse.SUPPRESS)


def _preset_names() -> tuple[str, ...]:
    from rollsim.trajectories import PRESETS

    return (AGENTIC_DEFAULT, *(n.replace("_", "-") for n in PRESETS))


def _add_agentic_args(p: argparse.ArgumentParser) -> None:
    """``--agentic-preset`` and a flag per field of :class:`rollsim.agentic.Agentic`
    (:func:`rollsim.scenario_toml.agentic_fields`: ``--max-turns``, ``--kv-policy``,
    ``--env-slots``, ...; the distributions as numbers, ``--tool-latency-s`` seconds)."""
    g = p.add_argument_group("agentic (multi-turn trajectories: --agentic-preset, or an [agentic] table of the "
                             "scenario file, and these flags on top)")
    names = _preset_names()
    g.add_argument("--agentic-preset", action=_Given, default=None, metavar="NAME",
                   choices=(*names, *(n.replace("-", "_") for n in names[1:])),
                   help=f"agentic trajectories: {AGENTIC_DEFAULT} (rollsim.Agentic(), the scenario's lengths kept) or a "
                        f"preset of rollsim.trajectories ({', '.join(names[1:])}: its agentic part, per-turn lengths "
                        f"and prefill speed); a scenario file's [agentic] and [lengths] values take precedence over "
                        f"the preset's, the other flags over both")
    flags = {_add_flag(g, f, dest=f"agentic_{f.key}"): f for f in schema.agentic_fields()}
    p.set_defaults(_agentic_flags=flags)


def _agentic_preset(a: argparse.Namespace, doc: dict[str, Any], given: dict[str, str],
                    root: str) -> dict[str, Any]:
    """``--agentic-preset``: the document with its ``agentic`` table (and, for a preset of
    :mod:`rollsim.trajectories`, its per-turn ``lengths`` and its other values, e.g. its prefill
    speed where the scenario has none of its own) set; unchanged without the flag.

    The preset is the base: a scenario file's ``[agentic]`` keys take precedence over the preset's
    (a distribution key as a whole), and so does its ``[lengths]`` table (key by key when it is of
    the preset's kind, else the whole table); the flags take precedence over both. The file's
    values that replace the preset's are named on stderr, so that neither is lost unsaid."""
    if "agentic_preset" not in given:
        return doc
    name = a.agentic_preset.replace("-", "_")
    preset: dict[str, Any]
    if name == AGENTIC_DEFAULT:
        preset = {"agentic": {}}
    else:
        from rollsim.trajectories import PRESETS

        base = schema.scenario_from_doc({k: v for k, v in doc.items() if k != "agentic"}, root)
        out, before = schema.scenario_to_doc(PRESETS[name](base)), schema.scenario_to_doc(base)
        preset = {"agentic": out["agentic"], "lengths": out["lengths"]}
        # the preset's other values (its prefill speed: only where the scenario gives none of its own)
        doc = {**doc, **{k: v for k, v in out.items() if k not in preset and before.get(k) != v}}
    doc = dict(doc)
    # the keys a flag sets anyway (flags take precedence over the file and the preset)
    flagged = {"agentic": {f.key for d, f in getattr(a, "_agentic_flags", {}).items() if d in given},
               "lengths": {f.key for d, f in getattr(a, "_lengths_flags", {}).items() if d in given}}
    over: list[str] = []
    for key, table in preset.items():
        mine = doc.get(key)
        if mine is None:
            doc[key] = table
        elif key == "lengths" and "lengths" in given:
            pass  # --lengths replaces both
        elif not isinstance(mine, dict) or (key == "lengths" and
                                            schema.lengths_variant(dict(mine)) != schema.lengths_variant(table)):
            over.append(f"[{key}]")  # lengths of another kind (or a part object): the file's as they are
        else:
            over.extend(f"{key}.{k} = {_toml_value(v)}" for k, v in mine.items()
                        if k in table and table[k] != v and k not in flagged[key])
            doc[key] = {**table, **mine}
    if over:
        print(f"rollsim: note: the scenario file's {', '.join(over)} take precedence over --agentic-preset "
              f"{a.agentic_preset}'s (give the flags to choose otherwise)", file=sys.stderr)
    return doc


def _toml_value(v: Any) -> str:
    return json.dumps(v) if isinstance(v, str) else "{...}" if isinstance(v, (dict, list)) else str(v)


def _agentic_table(a: argparse.Namespace, t: Any, given: dict[str, str]) -> Any:
    """The ``agentic`` table with the given agentic flags set; a flag given for a scenario that is
    not agentic is refused."""
    flags: dict[str, schema.Field] = getattr(a, "_agentic_flags", {})
    set_ = [(dest, f) for dest, f in flags.items() if dest in given]
    if not set_:
        return t
    if t is None:
        dest, f = set_[0]
        raise invalid(f.path, f"{given[dest]} applies to agentic scenarios only: give --agentic-preset NAME "
                              f"({', '.join(_preset_names())}) or an [agentic] table in the scenario file")
    if not isinstance(t, dict):
        return t  # an Agentic already (refused by the loader otherwise)
    t = dict(t)
    for dest, f in set_:
        t[f.key] = getattr(a, dest)
    return t


def _applies(owners: tuple[str, ...], what: str) -> str:
    if what == "lengths":
        names = {"lognormal": "--lengths lognormal", "file": "--lengths FILE", "dataset": "--lengths DATASET",
                 "empirical": "kind = \"empirical\" lengths in a scenario file"}
    else:
        names = {k: f"--pipeline {v}" for k, v in _CLI_NAME.items()}
    return " or ".join(names.get(o, o) for o in owners)


def _describe_lengths(t: dict[str, Any], variant: str) -> str:
    if variant == "dataset":
        return f"the data set {t['dataset']!r}"
    if variant == "file":
        return f"the file {t['file']!r}"
    if variant == "empirical":
        return "the scenario file's empirical values"
    return f"{variant} lengths"


def _lengths_table(a: argparse.Namespace, t: Any, given: dict[str, str], from_file: bool) -> Any:
    """The lengths table: the file's (or lognormal), replaced by ``--lengths`` if given, with the
    given lengths flags set; a flag that does not apply to the lengths' kind is refused."""
    if "lengths" in given:
        spec = a.lengths
        if spec == "lognormal":
            t = {"kind": "lognormal"}
        elif spec in datasets.NAMES:
            t = {"dataset": spec}
        else:
            if not os.path.exists(spec):
                # a near miss of a name (deepseek, deepseek-r1-serving, LogNormal), not of a path
                near = [] if re.search(r"[/\\]|\.(csv|gz|parquet)$", spec, re.I) else difflib.get_close_matches(
                    spec.lower(), ["lognormal", *datasets.NAMES], n=1)
                folder = os.path.dirname(spec)
                with contextlib.suppress(OSError):  # or of a length file beside it (lens.cvs: lens.csv)
                    files = sorted(f for f in os.listdir(folder or ".")
                                   if re.search(r"\.(csv|csv\.gz|parquet)$", f, re.I))
                    near = near or [os.path.join(folder, f) for f in difflib.get_close_matches(
                        os.path.basename(spec), files, n=1, cutoff=0.8)]
                raise ScenarioError(f"lengths: no file {spec!r}" + (f"; did you mean {near[0]!r}?" if near else "")
                                    + f" (give 'lognormal', a built-in data set: {', '.join(datasets.NAMES)}, or a "
                                      "CSV/parquet file)")
            t = {"file": os.path.abspath(spec) if from_file else spec}
    elif t is None:
        t = {"kind": "lognormal"}
    if not isinstance(t, dict):
        return t  # refused by the loader, naming the field
    t = dict(t)
    variant = schema.lengths_variant(t)
    for dest, f in getattr(a, "_lengths_flags", {}).items():
        if dest in given:
            if variant not in f.owners:
                raise invalid(f.path, f"{given[dest]} applies to {_applies(f.owners, 'lengths')} only, not "
                                      f"{_describe_lengths(t, variant)}")
            t[f.key] = getattr(a, dest)
    return t


def _pipeline_table(a: argparse.Namespace, t: Any, given: dict[str, str], from_file: bool) -> Any:
    """The pipeline table: the file's (or fully async), replaced by ``--pipeline`` if given (the
    file's settings that the new kind also has are kept), with the given pipeline flags set; a
    flag that does not apply to the pipeline's kind is refused."""
    if isinstance(t, str):
        t = {"kind": t}
    elif t is None:
        t = {"kind": "fully_async"}
    if not isinstance(t, dict):
        return t
    t = dict(t)
    if "pipeline" in given:
        kind = _PIPELINE_CLI.get(a.pipeline, a.pipeline)
        if t.get("kind") != kind:
            keep = schema.pipeline_keys(kind)
            defaults = {f.key: f.default for f in schema.pipeline_fields() if f.part == "pipeline"}
            lost = sorted(k for k, v in t.items() if k not in keep and v != defaults.get(k, object()))
            if lost and from_file:
                raise invalid("pipeline", f"--pipeline {a.pipeline} replaces the scenario file's {t.get('kind')!r} "
                                          f"pipeline, whose {', '.join(lost)} would be lost ({_CLI_NAME.get(kind, kind)} "
                                          f"pipelines have no such field): remove {'it' if len(lost) == 1 else 'them'} "
                                          f"from the file")
            t = {"kind": kind, **{k: v for k, v in t.items() if k in keep and k != "kind"}}
    kind = t.get("kind")
    name = _CLI_NAME.get(kind, repr(kind)) if isinstance(kind, str) else repr(kind)
    flags = getattr(a, "_pipeline_flags", {})
    for dest, f in flags.items():  # the pipeline's own fields first, then batch_order's
        if dest in given and f.part == "pipeline":
            if kind not in f.owners:
                raise invalid(f.path, f"{given[dest]} applies to {_applies(f.owners, 'pipeline')} only, not {name}")
            value = getattr(a, dest)
            if f.key == "batch_order" and value == schema.LENGTH_BALANCED:
                value = t.get("batch_order") if isinstance(t.get("batch_order"), dict) else {}
            t[f.key] = value
    for dest, f in flags.items():
        if dest in given and f.part == "pipeline.batch_order":
            if kind != "fully_async":
                raise invalid(f.path, f"{given[dest]} applies to --pipeline fully-async only, not {name}")
            order = t.get("batch_order", "fifo")
            if not isinstance(order, dict):
                raise invalid(f.path, f"{given[dest]} applies to --batch-order {schema.LENGTH_BALANCED} only, "
                                      f"not {order!r}")
            t["batch_order"] = {**order, f.key: getattr(a, dest)}
    return t


def _scenario_doc(a: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The scenario as a TOML document (and the root for its relative paths): the scenario file's,
    or the command's defaults, with the given flags set."""
    given: dict[str, str] = getattr(a, "_given", None) or {}
    fields: dict[str, schema.Field] = getattr(a, "_fields", {})
    path = getattr(a, "scenario", None)
    config = getattr(a, "config", None)
    if config is not None:
        if path is not None:
            raise invalid("--config", "takes the place of a scenario file: give one or the other")
        import tomllib

        from rollsim import configs

        imported = configs.load(config, getattr(a, "framework", None))
        for line in imported.warnings():  # unknown options of the config (typos), on stderr
            print(line, file=sys.stderr)
        doc = tomllib.loads(imported.scenario.to_toml())
        root = "."
        doc.update({f.path: getattr(a, dest) for dest, f in fields.items() if dest in given})
    elif path is not None:
        doc = schema.read_toml(path)
        if not doc and not getattr(a, "_empty_warned", False):  # once per command (compare reads it per pipeline)
            a._empty_warned = True
            print(f"rollsim: warning: the scenario file {os.fspath(path)!r} is empty (no keys): running the default "
                  "scenario with the flags given", file=sys.stderr)
        root = os.path.dirname(os.path.abspath(path))
        doc.update({f.path: getattr(a, dest) for dest, f in fields.items() if dest in given})
    else:
        doc = {f.path: getattr(a, dest) for dest, f in fields.items()}
        root = "."
        if "slots_per_instance" not in doc and hasattr(a, "slots_per_instance"):
            doc["slots_per_instance"] = a.slots_per_instance  # split's own flag sizes the instances
    doc = {k: v for k, v in doc.items() if v is not None or k not in fields}  # None: the field's default
    pool = getattr(a, "_deployment_pool", None)
    if pool is not None:  # --model: the deployment's pool (an agentic preset sizes its trajectories by it)
        doc.update(rollout_slots=pool[0] * pool[1], slots_per_instance=pool[1])
    from_file = path is not None or config is not None
    doc = _agentic_preset(a, doc, given, root)
    doc["lengths"] = _lengths_table(a, doc.get("lengths"), given, from_file)
    if getattr(a, "_pipeline_flags", None):
        doc["pipeline"] = _pipeline_table(a, doc.get("pipeline"), given, from_file)
    agentic = _agentic_table(a, doc.get("agentic"), given)
    if agentic is not None:
        doc["agentic"] = agentic
    return doc, root


def _scenario(a: argparse.Namespace, pipeline: Any = None, *, rollout_slots: int | None = None) -> Scenario:
    """The scenario of the command line (see :func:`_scenario_doc`); ``pipeline`` and
    ``rollout_slots`` replace the ones it gives. An unknown key of a scenario file names the file."""
    import contextlib

    path = getattr(a, "scenario", None)
    with schema.naming_file(path) if path is not None else contextlib.nullcontext():
        try:
            return _scenario_of(a, pipeline, rollout_slots=rollout_slots)
        except ScenarioError as e:
            raise _decode_speed_named(a, e) from None


def _decode_speed_named(a: argparse.Namespace, e: ScenarioError) -> ScenarioError:
    """``e``, or for ``--decode-throughput-table`` given without ``--decode-tokens-per-s`` and a
    table whose speed at one sequence differs from the scenario's, a message naming both flags and
    the value to give (the speed is never taken from the table silently)."""
    mismatch = getattr(e, "decode_mismatch", None)
    given: dict[str, str] = getattr(a, "_given", None) or {}
    if mismatch is None or "decode_throughput_table" not in given or "decode_tokens_per_s" in given:
        return e
    table, speed = mismatch
    if getattr(a, "config", None) is not None:
        source = f"the imported config's {speed}"
    elif getattr(a, "scenario", None) is not None and "default" not in str(e):
        source = f"the scenario file's {speed}"
    else:
        source = f"default {speed}"
    return invalid(given["decode_throughput_table"],
                   f"its speed at one sequence ({table} tokens/s) must equal --decode-tokens-per-s, which is not "
                   f"given ({source}): give --decode-tokens-per-s {table} too")


def _scenario_of(a: argparse.Namespace, pipeline: Any = None, *, rollout_slots: int | None = None) -> Scenario:
    doc, root = _scenario_doc(a)
    if pipeline is not None:
        doc["pipeline"] = pipeline
    if rollout_slots is not None:
        doc["rollout_slots"] = rollout_slots
    return schema.scenario_from_doc(doc, root)


#: The arguments of :meth:`rollsim.hardware.Deployment.scenario` besides its scenario fields, as the
#: scenario's fields they give (``prompts_per_step`` is ``batch_size / group_size``).
_DEPLOYMENT_ARGS = ("lengths", "batch_size", "group_size", "prompt_tokens", "pipeline", "prefill_mode",
                    "max_num_batched_tokens")


def _deployment_scenario(a: argparse.Namespace, pipeline: Any = None) -> tuple[Scenario, Any]:
    """The command's scenario and, with ``--model`` / ``--hf-config``, the deployment it is of
    (else None): ``Deployment(...).scenario(...)`` of the deployment flags (``rollsim hardware``'s
    parser, :func:`rollsim.hardware.cli.add_deployment_args`) with the lengths, batch
    (``prompts_per_step = batch_size / group_size``), groups, prompt, pipeline (``pipeline``, or the
    one given; none given: the deployment's default, synchronous when colocated), prefill mode and
    every other field given (flags or the scenario file) as its scenario fields, exactly as in Python.
    The fields the deployment derives (:data:`rollsim.hardware.deployment.DERIVED_FIELDS`) are
    refused when given, naming both; an agentic preset is applied to the deployment's pool (its
    ``max_trajectories`` is relative to the pool) and its prefill speed left to the deployment."""
    from rollsim.hardware.cli import deployment_flags_given, deployment_of_layout, layout_words
    from rollsim.hardware.deployment import DERIVED_FIELDS

    if getattr(a, "model", None) is None and getattr(a, "hf_config", None) is None:
        flags = deployment_flags_given(a)
        if flags:
            dest = flags[0].lstrip("-").replace("-", "_")
            raise ScenarioError(f"{dest}: {flags[0]} applies with --model or --hf-config only (the deployment "
                                f"from specs it is part of; see rollsim hardware --help)")
        return _scenario(a, pipeline), None
    flag = "--model" if a.model is not None else "--hf-config"
    if a.config is not None:
        raise invalid("--config", f"cannot be given with {flag}: give one or the other (the imported config's pool, "
                                  f"decode speed and trainer would replace the deployment's, or the reverse)")
    given: dict[str, str] = getattr(a, "_given", None) or {}
    path = getattr(a, "scenario", None)
    in_file = schema.read_toml(path) if path is not None else {}
    what = ("the deployment gives the pool, the decode speed and its table, the KV capacity, the prefill speed "
            "and the trainer from specs")
    for key in DERIVED_FIELDS:
        if key in given:
            raise ScenarioError(f"{key}: {given[key]} cannot be set with {flag}: {what} (drop {flag} to give "
                                f"{given[key]} yourself)")
        if key in in_file and path is not None:
            raise ScenarioError(f"{key}: the scenario file {os.fspath(path)!r} sets {key} and {flag} is given: "
                                f"{what} (remove {key} from the file, or drop {flag})")
    d = deployment_of_layout(a)
    a._deployment_pool = (d.instances, d.slots_per_instance)
    with schema.naming_file(path) if path is not None else contextlib.nullcontext():
        doc, root = _scenario_doc(a)
        for key in DERIVED_FIELDS[2:]:  # the preset's prefill speed among them: the deployment prices it
            doc.pop(key, None)
        if (("max_num_batched_tokens" in given or "max_num_batched_tokens" in in_file)
                and not any(k in given or k in in_file for k in ("prefill_mode", "agentic", "agentic_preset"))):
            doc["prefill_mode"] = "shared"   # the deployment's default without agentic: its step budget applies
        base = schema.scenario_from_doc(doc, root)
    # a pipeline field's flag (--max-staleness, --admission-eta, ...) without --pipeline sets the default
    # pipeline's field, as without --model: it was dropped for the deployment's own default pipeline
    pipe_flags = getattr(a, "_pipeline_flags", None) or {}
    chosen = pipeline if pipeline is not None else (
        base.pipeline if "pipeline" in given or "pipeline" in in_file or any(k in pipe_flags for k in given) else None)
    fields = {f.name: getattr(base, f.name) for f in dataclasses.fields(Scenario)
              if f.name not in DERIVED_FIELDS + _DEPLOYMENT_ARGS and getattr(base, f.name) != getattr(_DEFAULT, f.name)}
    # the prefill mode and step budget only as given: else the deployment's defaults (shared steps, so that a
    # recompute costs; per-slot with agentic), as in Python
    prefill = {k: getattr(base, k) for k in ("prefill_mode", "max_num_batched_tokens") if k in given or k in in_file}
    try:
        with warnings.catch_warnings():  # the trajectory bound: the command's own note says it, with its flag
            # (_trajectories_note); the training state: rollsim hardware --train-tokens says it (not checked here)
            warnings.simplefilter("ignore", DeploymentWarning)
            sc = d.scenario(lengths=base.lengths, prompts_per_step=base.batch_size // base.group_size,
                            group_size=base.group_size, prompt_tokens=base.prompt_tokens, pipeline=chosen,
                            **prefill, **fields)
    except ScenarioError as e:
        why = layout_words(str(e))
        if why.startswith("agentic.max_context_tokens: with kv_cache_tokens") and why.endswith("got None"):
            why += (" (the deployment's KV capacity per instance bounds a trajectory's context: give "
                    "--max-context-tokens N)")
        raise ScenarioError(why) from None
    return sc, d


#: The fields a deployment's scenario header leaves to :func:`deployment_words` (a decode table of
#: tens of points, the KV capacity, the per-rank trainer, the prefill it priced).
_DEPLOYMENT_SKIP = ("slots_per_instance", "decode_throughput_table", "kv_cache_tokens", "train", "prefill_tokens_per_s")


#: With ``--model``, the flags that change what the deployment derives, for the fields a warning advises on
#: (``fewer rollout_slots``: ``fewer --rollout-gpus``; ``--rollout-slots`` itself is refused then).
_DEPLOYMENT_FIELD_FLAGS = {"rollout_slots": "--rollout-gpus", "slots_per_instance": "--max-num-seqs",
                           "kv_cache_tokens": "--gpu-memory-utilization"}


def deployment_words(d: Any, sc: Scenario) -> str:
    """What a deployment's scenario assumed (``rollsim run --model``'s line on stderr, ``compare``'s
    second line): the pool, where its decode table comes from and at which context, the KV capacity,
    the prefill, the training step, the colocated switch, the weight sync and, agentic, the
    trajectories in flight."""
    from rollsim._text import count

    table = sc.decode_throughput_table or ()
    from rollsim.hardware.deployment import decode_context_tokens

    ctx = decode_context_tokens(sc.prompt_tokens, sc.lengths, sc.agentic)
    per_token = sc.decode_s_per_context_token > 0
    n, top = table[-1] if table else (sc.slots_per_instance, math.nan)
    decode = (f"decode table from specs (rollsim.hardware.serving, {d.engine}) at "
              + ("no context, plus decode_s_per_context_token" if per_token else
                 f"the mean context {ctx:,.0f} tokens " + ("(prompt + half the mean answer)" if sc.agentic is None else
                                                           "(a turn's, over the trajectory: prompt + earlier turns and "
                                                           "observations + half a turn)"))
              + f": {sc.decode_tokens_per_s:.1f} tokens/s for 1 sequence, {top:,.0f} tokens/s per instance at {n}")
    if sc.prefill_mode == "shared":
        prefill = f"prefill shared with the decode steps at {sc.prefill_tokens_per_s:,.0f} tokens/s per instance"
    elif math.isfinite(sc.prefill_tokens_per_s):
        prefill = (f"prefill on the slot at {sc.prefill_tokens_per_s:,.0f} tokens/s (a lone prefill of prompt + mean "
                   f"answer: the later turns' and the prompt's)")
    elif sc.prompt_tokens > 0:
        prefill = "prompt prefill folded into the decode table (chunked, once per group: prefix sharing)"
    else:
        prefill = "no prompt to prefill"
    if d.colocated:
        switch = f"colocated switch {d.switch_s()['total']:.2f} s per step, in weight_sync_s ({sc.weight_sync_s:.2f} s)"
    else:
        switch = "no switch (rollout and training on their own GPUs)"
    if sc.weight_sync is None and sc.weight_sync_s == 0 and sc.rollout_pause_s == 0:
        sync = ("weight sync not priced (0 s per update: give --weight-sync-s and --rollout-pause-s, e.g. from "
                "rollsim sync)")
    else:
        # both parts: the transfer (weight_sync_s, in the trainer's step, decoding goes on) and the pause the
        # rollout sees (rollout_pause_s); a cluster's estimate may put all of it in the pause
        ws = sc.weight_sync
        source = "" if ws is None else (", from [weight_sync]: " + (f"stack {ws.stack.name}" if ws.stack is not None
                                                                      else f"topology {ws.cluster.topology}"))
        sync = (f"weight sync {sc.weight_sync_s + sc.rollout_pause_s:.3g} s per update ({sc.weight_sync_s:.3g} s "
                f"of transfer in the trainer's step{' with the colocated switch' if d.colocated else ''}, "
                f"{sc.rollout_pause_s:.3g} s of rollout pause{source})")
    words = (f"deployment {d.spec.name} on {d.rollout_gpus} x {d.accelerator.name} "
             f"({count(d.instances, d.engine + ' instance')} of TP {d.rollout_tp} x {d.slots_per_instance} slots = "
             f"{sc.rollout_slots} slots), training on {count(d.train_gpus, 'GPU')} ({d.train_backend}"
             + "".join(f", {k}={v}" for k, v in sorted(d.train_options.items())) + f"): {decode}; KV capacity "
             f"{sc.kv_cache_tokens:,.0f} tokens per instance; {prefill}; train step {_step_words(sc)}; {switch}; {sync}")
    defaults = d.defaults_words(sc.max_num_batched_tokens if sc.prefill_mode == "shared" else None)
    if defaults:
        words += f"; engine defaults: {defaults}"
    if sc.agentic is not None:
        mt = sc.agentic.max_trajectories
        words += (f"; agentic.max_trajectories {mt if mt is not None else 'none (unbounded)'}"
                  + (f" ({mt / sc.rollout_slots:g} x the {sc.rollout_slots} slots; --max-trajectories N to change it)"
                     if mt is not None else ""))
    return words


def _trajectories_note(a: argparse.Namespace, sc: Scenario) -> None:
    """On stderr: an agentic scenario whose ``max_trajectories`` (not given as a flag: a scenario
    file's, or a preset's made for another pool) is below its rollout slots: at most that many slots
    can ever be busy, whatever the pool (each trajectory holds one slot at a time)."""
    ag = sc.agentic
    given: dict[str, str] = getattr(a, "_given", None) or {}
    if ag is None or ag.max_trajectories is None or ag.max_trajectories >= sc.rollout_slots \
            or "agentic_max_trajectories" in given:
        return
    print(f"rollsim: note: agentic.max_trajectories = {ag.max_trajectories} is below the {sc.rollout_slots} rollout "
          f"slots: at most {ag.max_trajectories} of them are ever busy (a trajectory holds one slot at a time); give "
          f"--max-trajectories N (or none: unbounded) to change it", file=sys.stderr)


def _fmt(x: Any, kind: str) -> str:
    if undefined(x):
        return UNDEFINED
    if kind == "pct":
        return f"{x:.0%}"
    if kind == "f0":
        return f"{x:,.0f}"
    if kind == "f1":
        return f"{x:.1f}"
    if kind == "f2":
        return f"{x:.2f}"
    return str(x)


def _text_table(cols: list[tuple[str, str, str]], records: Any) -> str:
    """Aligned columns (first left, others right) under a dashed rule; ``cols`` are
    (key, header, format) with the formats of :func:`_fmt`."""
    rows = [[h for _, h, _ in cols]] + [[_fmt(r[c], k) for c, _, k in cols] for r in records]
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    lines = ["  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_compare(df: pl.DataFrame, horizon_s: float | None = None) -> str:
    """The comparison frame as the chapter prints it (percentages, one decimal), with the rates over
    the same time for every pipeline (steps per hour, trained tokens per second: the steps ended by
    the horizon); with ``horizon_s``, a first line that says what is compared."""
    cols = [("pipeline", "pipeline", "s"), ("steps", "steps", "s"), ("steps_per_hour", "steps/h", "f1"),
            ("tokens_trained_per_s", "trained tok/s", "f0"), ("rollout_utilization", "utilization", "pct"),
            ("staleness_mean", "stale mean", "f1"), ("staleness_max", "stale max", "s"),
            ("drop_fraction", "dropped", "pct"), ("staleness_mean_short", "short <1K", "f1"),
            ("staleness_mean_long", "long >8K", "f1")]
    table = _text_table(cols, map(_undefined_max, df.iter_rows(named=True)))
    if horizon_s is None:
        return table
    last = max(df["end_s"].to_list(), default=horizon_s)
    after = (f", the last ending at {last / 3600:.2f} h" if last >= 3600 else f", the last ending at {last:.0f} s") \
        if last > horizon_s else ""
    return (f"compared over the same {_span(horizon_s)}: steps/h and trained tok/s count the steps ended by then; "
            f"steps counts every step{after}; utilization is over each run's own end\n" + table)


def _undefined_max(r: dict[str, Any]) -> dict[str, Any]:
    """A summary row with ``staleness_max`` as NaN when no sample was trained (its mean is NaN
    then): a max over no samples is as undefined as the mean, though the frames keep the
    engine's integer 0 in it (printed ``-`` in a table, ``null`` in JSON)."""
    mean = r.get("staleness_mean")
    if isinstance(mean, float) and math.isnan(mean) and "staleness_max" in r:
        return {**r, "staleness_max": math.nan}
    return r


def _pipelines(cap: int) -> list[tuple[str, Any]]:
    return [("synchronous", Synchronous()), ("one-step async", OneStepAsync()), ("fully async", FullyAsync()),
            (f"fully async, cap {cap}", FullyAsync(max_staleness=cap))]


def _finite(x: Any, inf: bool) -> Any:
    """``x`` with NaN as None, and infinities as None (``inf=False``) or "inf" / "-inf"."""
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) or not inf else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _finite(v, inf) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_finite(v, inf) for v in x]
    return x


def _json(x: Any, *, inf: bool = False) -> str:
    """Strict JSON (no bare NaN / Infinity): NaN is null; an infinity null or, with ``inf``, the
    string "inf"."""
    return json.dumps(_finite(x, inf), indent=2, allow_nan=False)


#: Files that mark a directory as holding the results of ``rollsim run`` or ``rollsim compare``.
_RESULT_FILES = {"run": ("summary.json", "samples.parquet"), "compare": ("compare.parquet",),
                 "sweep": (_store.MANIFEST, _store.LOCK)}

#: Every file a command's ``--out`` writes besides ``scenario.json`` / ``scenario.toml`` (glob patterns):
#: a directory holding one of them holds that command's previous results, replaced only with ``--force``.
_OWN_FILES = {"run": ("summary.json", "samples.parquet", "steps.parquet", "segments.parquet", "turns.parquet"),
              "compare": ("compare.parquet", "samples_*.parquet", "steps_*.parquet", "segments_*.parquet",
                          "turns_*.parquet")}
#: What ``rollsim report DIR`` writes by default (:func:`rollsim.report.write_report`): a report of the
#: previous results, removed with them by ``--force`` (it would describe a run that is gone).
_REPORT_FILES = ("report.html", "report.md", os.path.join("report_files", "figure*.png"))


def _out_dir(out: str | None, command: str | None = None, force: bool = False) -> str | None:
    """Checks, before running, that ``--out`` is (or can be made) a writable directory; makes it.
    With ``command``, refuses a directory that holds another command's results, a sweep's store
    among them (writing there would leave a mix of two runs' files, and ``scenario.toml`` would no
    longer describe them; a sweep directory would no longer read as one), and one that holds the
    same command's previous results unless ``force`` (``--force``): then those files are removed
    first, and the report ``rollsim report`` wrote of them by default (``report.html``, ``report.md``
    and its ``report_files/`` figures), so that none of the previous run's is left among the new ones."""
    if out is None:
        return None
    if not out:
        raise invalid("out", "--out must name a directory, got ''")
    if os.path.exists(out) and not os.path.isdir(out):
        raise invalid("out", f"{out!r} exists and is not a directory")
    for other, files in _RESULT_FILES.items():
        found = [f for f in files if os.path.exists(os.path.join(out, f))]
        if command is not None and other != command and found:
            raise invalid("out", f"{out!r} holds the results of `rollsim {other}` ({found[0]}); writing "
                                 f"`rollsim {command}` results there would mix two runs: give another directory "
                                 f"or remove those files")
    def matches(patterns: tuple[str, ...]) -> list[str]:
        return sorted({f for pattern in patterns for f in glob.glob(os.path.join(glob.escape(out), pattern))})

    previous = matches(_OWN_FILES.get(command or "", ()))
    if previous and not force:
        raise invalid("out", f"{out!r} already holds the results of a previous `rollsim {command}` "
                             f"({os.path.basename(previous[0])}); give --force to replace them, or another directory")
    # --force: the previous results go, not only those the new run rewrites, and so does a report of them
    for f in previous + (matches(_REPORT_FILES) if previous else []):
        try:
            os.remove(f)
        except OSError as e:
            raise invalid("out", f"--force cannot remove {f!r}: {e.strerror or e}") from None
    with contextlib.suppress(OSError):  # the report's figure directory, if nothing else is in it
        if previous:
            os.rmdir(os.path.join(out, "report_files"))
    try:
        os.makedirs(out, exist_ok=True)
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise invalid("out", f"cannot write to the directory {out!r}: {e.strerror or e}") from None
    return out


#: The run guards' messages on the command line name its flags (:data:`rollsim.simulation.GUARD_NAMES`).
GUARD_NAMES: dict[str, str] = {
    "max_samples": "--max-samples", "max_events": "--max-events", "horizon_s": "--horizon-s",
    "samples": "--out", "use_summary": "leave out --out (the summary alone keeps memory constant)",
    "summary_keeps": "a run without --out keeps memory constant", "no_limit": "0: no limit",
    "slots_per_instance": "--slots-per-instance", "kv_cache_tokens": "--kv-cache-tokens",
}


#: ``rollsim presets`` records summaries only and has no ``--max-samples``: a run past the engine's
#: sample limit is shortened with ``--horizon-s``.
PRESETS_GUARD_NAMES: dict[str, str] = {**GUARD_NAMES, "max_samples": "--horizon-s",
                                       "summary_keeps": "presets keep memory constant"}


def _guarded(a: argparse.Namespace, sc: Scenario, record: Literal["samples", "summary"]) -> dict[str, Any]:
    """The limits of ``a`` as :func:`simulate` takes them, after checking ``sc`` against them with
    messages that name the flags (``--max-samples``, ``--max-events``, ``--out``)."""
    if a.max_samples is not None and not 1 <= a.max_samples <= ENGINE_MAX_SAMPLES:
        raise invalid("--max-samples", f"must be an integer in [1, 2**32 - 1], got {a.max_samples}")
    if a.max_events < 0:
        raise invalid("--max-events", f"must be an integer >= 0 (0: no limit), got {a.max_events}")
    default = DEFAULT_MAX_SAMPLES if record == "samples" else ENGINE_MAX_SAMPLES
    limits = {"max_samples": default if a.max_samples is None else a.max_samples, "max_events": a.max_events or None}
    check_runaway(sc, limits["max_samples"], record, limits["max_events"], GUARD_NAMES)
    return limits


def _write_run(out: str, tag: str, sc: Scenario, a: argparse.Namespace) -> None:
    res = simulate(sc, **_guarded(a, sc, "samples"))
    res.samples.write_parquet(os.path.join(out, f"samples_{tag}.parquet"))
    res.steps.write_parquet(os.path.join(out, f"steps_{tag}.parquet"))
    res.segments.write_parquet(os.path.join(out, f"segments_{tag}.parquet"))  # for the report's learning section
    if sc.agentic is not None:  # the turns and tool calls: rollsim plot's slot timeline of an agentic run
        res.turns.write_parquet(os.path.join(out, f"turns_{tag}.parquet"))


def _write_scenario(out: str, sc: Scenario) -> None:
    """``scenario.json`` (a description) and ``scenario.toml`` (the exact scenario:
    ``rollsim run DIR/scenario.toml`` runs it again)."""
    with open(os.path.join(out, "scenario.json"), "w") as f:
        f.write(_json(sc.describe(), inf=True) + "\n")
    sc.to_toml(os.path.join(out, "scenario.toml"))


def _span(seconds: float) -> str:
    """A horizon for a header: hours from one hour up, else seconds."""
    return f"{seconds / 3600:g} h" if seconds >= 3600 else f"{seconds:g} s"


#: The scenario's fields that :func:`scenario_header` always names (in its first part).
_HEADER_CORE = ("rollout_slots", "decode_tokens_per_s", "batch_size", "train_step_s", "horizon_s", "lengths", "rng",
                "seed")


def _value_words(x: Any) -> str:
    """A TOML value of a scenario document, short: numbers with ``:g``, tables as ``k=v`` lists."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, float):
        return f"{x:g}"
    if isinstance(x, dict):
        return "(" + ", ".join(f"{k}={_value_words(v)}" for k, v in x.items()) + ")"
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_value_words(v) for v in x) + "]"
    return str(x)


def _changed(doc: dict[str, Any], default: dict[str, Any]) -> str:
    """The keys of ``doc`` whose value differs from ``default``'s, as ``k=v`` words."""
    return ", ".join(f"{k}={_value_words(v)}" for k, v in doc.items() if default.get(k, object()) != v)


def _agentic_words(table: dict[str, Any]) -> str:
    """An ``agentic`` table named after the nearest of ``Agentic()`` and the presets of
    :mod:`rollsim.trajectories` (fewest fields that differ), with the fields that differ from it."""
    from rollsim.agentic import Agentic
    from rollsim.trajectories import PRESETS

    bases = {AGENTIC_DEFAULT: schema.scenario_to_doc(Scenario(agentic=Agentic()))["agentic"],
             **{n.replace("_", "-"): schema.scenario_to_doc(fn(Scenario()))["agentic"] for n, fn in PRESETS.items()}}
    name = min(bases, key=lambda n: sum(bases[n].get(k, object()) != v for k, v in table.items()))
    rest = _changed(table, bases[name])
    return f"agentic {name} (" + (f"{rest}; " if rest else "") + "lengths per turn)"


def scenario_header(command: str, sc: Scenario, *, pipeline: bool = False, core: str | None = None,
                    skip: Sequence[str] = ()) -> str:
    """The line that names the scenario a command runs: pool, decode speed, batch, step time,
    horizon, lengths, rng and seed, then every other part that differs from ``Scenario()``'s
    (derived from the scenario's TOML document, :func:`rollsim.scenario_toml.scenario_to_doc`):
    a field as ``name=value``, agentic trajectories named after the nearest preset
    (``--agentic-preset``) with what differs, the weight sync by its model, topology and seconds per
    update, the pipeline only with ``pipeline`` (``compare`` and ``presets`` run their own).
    ``core`` replaces the pool, decode speed, batch and step time (``split`` sets the pool and the
    trainer per split); the fields in ``skip`` are not named."""
    cap = getattr(sc.lengths, "max_tokens", None)
    named = getattr(sc.lengths, "name", None)
    label = (f"{named}, max {cap:g} tokens" if named and cap is not None else named) or (
        f"lognormal(mu={sc.lengths.mu:g}, sigma={sc.lengths.sigma:g}), max {sc.lengths.max_tokens:g} tokens"
        if isinstance(sc.lengths, LogNormal) else "empirical")
    doc, default = schema.scenario_to_doc(sc), schema.scenario_to_doc(_DEFAULT)
    extra = []
    if isinstance(sc.lengths, LogNormal):
        rest = _changed({k: v for k, v in doc["lengths"].items() if k not in ("kind", "mu", "sigma", "max_tokens")},
                        default["lengths"])
        if rest:
            label += f" ({rest})"
    for key, value in doc.items():
        if (key in _HEADER_CORE or key in skip or (key == "pipeline" and not pipeline)
                or default.get(key, object()) == value):
            continue
        if key == "agentic":
            extra.append(_agentic_words(value))
        elif key == "weight_sync" and sc.weight_sync is not None:
            ws = sc.weight_sync
            design = f"stack {ws.stack.name}" if ws.stack is not None else value.get("topology", "?")
            extra.append(f"weight sync {ws.total_s:.3g} s per update ({design}, model {ws.cluster.model.name}, "
                         f"pause_s={_value_words(value.get('pause_s'))})")
        elif key == "pipeline":
            extra.append(f"pipeline {_CLI_NAME.get(value.get('kind'), value.get('kind'))} "
                         f"{_value_words({k: v for k, v in value.items() if k != 'kind'})}")
        elif isinstance(value, dict):
            extra.append(f"{key} {_value_words(value)}")
        else:
            extra.append(f"{key}={_value_words(value)}")
    if core is None:
        core = (f"{sc.rollout_slots} slots x {sc.decode_tokens_per_s:g} tokens/s, batch {sc.batch_size}, "
                f"{_step_words(sc)}")
    return (f"rollsim {command}: {core}, {_span(sc.horizon_s)}, lengths {label}, rng={sc.rng}, seed={sc.seed}"
            + "".join(f", {e}" for e in extra))


def _step_words(sc: Scenario) -> str:
    """A header's training cost: ``train_step_s`` (``2 s/step``), or with per-rank training
    (``Scenario.train``) the step a batch of mean-length sequences takes, fixed cost included, on
    its mean rank (the engine's steps wait for the slowest, so real steps are at least this long):
    ``~7.7 s/step at the mean length (train per rank: 16 ranks)``; with per-token costs
    (``train_s_per_token``, ``logprob_s_per_token``) the step of a batch of mean-length sequences
    and its parts: ``~30.8 s/step at the mean length (0.0651 s + 2e-05 s per token)``, not the fixed
    part alone."""
    from rollsim._text import count
    from rollsim.hardware.deployment import sequence_tokens

    t = sc.train
    per_token = sc.train_s_per_token + sc.logprob_s_per_token
    # tokens of one sequence, prompt included (agentic: a whole trajectory's turns)
    seq = sequence_tokens(sc.prompt_tokens, sc.lengths, sc.agentic)
    at = "at the mean length" if sc.agentic is None else f"at the mean trajectory ({seq:,.0f} tokens: prompt + turns)"
    if t is None:
        if per_token == 0:
            return f"{sc.train_step_s:g} s/step"
        step = sc.train_step_s + per_token * sc.batch_size * seq
        return f"~{step:.3g} s/step {at} ({sc.train_step_s:.3g} s + {per_token:.3g} s per token)"
    per_rank = t.mini_batches * t.fixed_s + sc.batch_size / t.dp_ranks * (t.s_per_token * seq
                                                                          + t.s_per_token_sq * seq**2)
    step = sc.train_step_s + (sc.train_s_per_token + sc.logprob_s_per_token) * sc.batch_size * seq + per_rank
    return f"~{step:.3g} s/step {at} (train per rank: {count(t.dp_ranks, 'rank')})"


def split_header(base: Scenario, res: Any, gpus: int, gpus_per_instance: int, gpu_s_per_token: float,
                 train_fixed_s: float, colocated_switch_s: float | None, *, gpu_s_per_step: float | None = None,
                 deployment: Any = None) -> str:
    """``rollsim split``'s line before its table: what was searched (the GPU budget, the rollout GPU
    counts tried, one instance's slots, decode speed and KV capacity, the trainer's cost and, with
    ``gpu_s_per_step`` (``--model``), what it was priced on, the pipeline), the objective and its
    limits (:attr:`rollsim.resources.SplitResult.limits_text`), then the rest of the scenario as
    :func:`scenario_header` names it. With ``deployment`` (the ``--model`` deployment of one
    instance) the GPUs name the model, accelerator, engine and training backend priced, and a
    weight sync left at 0 s is said to be unpriced (the deployment prices no sync)."""
    t = res.table.filter(pl.col("placement") != "colocated")["rollout_gpus"].to_list()
    tried = (f"{t[0]}" if len(t) == 1 else f"{t[0]}-{t[-1]}" + (f" in steps of {gpus_per_instance}"
             if gpus_per_instance > 1 else "")) if t else "none"
    decode = ("the deployment's decode table" if base.decode_throughput_table is not None
              else f"{base.decode_tokens_per_s:g} tokens/s")
    colocated = ("" if colocated_switch_s is None else
                 f", or all {gpus} colocated (synchronous, {colocated_switch_s:g} s switch per step)")
    spi = base.slots_per_instance or base.rollout_slots
    p = base.pipeline
    pipeline = "sync" if isinstance(p, Synchronous) else "one-step" if isinstance(p, OneStepAsync) else "fully-async"
    if isinstance(p, FullyAsync) and p.max_staleness is not None:
        pipeline += f" max_staleness={p.max_staleness}"
    if isinstance(p, FullyAsync) and p.admission_eta is not None:
        pipeline += f" admission_eta={p.admission_eta}"
    from rollsim._text import count

    kv = ("no KV capacity limit" if base.kv_cache_tokens is None or not base.slots_per_instance else
          f"KV capacity {base.kv_cache_tokens:,.0f} tokens per instance")
    train = f"{gpu_s_per_token:g} GPU-s per token"
    if gpu_s_per_step is not None:  # --model: say what the hardware model priced, unlike rollsim hardware --train-tokens
        seq = base.prompt_tokens + base.lengths.mean_tokens()
        group = ("" if deployment is None or deployment.train_gpus == 1 else
                 f", priced on a group of {deployment.train_gpus} GPUs, the fewest the training options allow, "
                 f"and scaled linearly")
        train += (f" (sequences of the mean {seq:,.0f} tokens, prompt included{group}) + {gpu_s_per_step:.3g} GPU-s "
                  f"per step over the training GPUs (the sharded optimizer)")
    dep = ""
    if deployment is not None:
        from rollsim.hardware.serving import ENGINES

        d = deployment
        gmu = d.gpu_memory_utilization
        gmu_words = f"{gmu:g}" if gmu is not None else f"{ENGINES[d.engine].gpu_memory_utilization:g} (its default)"
        opts = "".join(f", {k}={v}" for k, v in sorted(d.train_options.items()))
        dep = (f" ({d.spec.name} on {d.accelerator.name}: {d.engine} at gpu_memory_utilization {gmu_words}, "
               f"training {d.train_backend}{opts})")
    core = (f"{gpus} GPUs{dep}, rollout {tried} (instances of {count(gpus_per_instance, 'GPU')} x {spi} slots x {decode}, "
            f"{kv}), training the rest at {train} + {train_fixed_s:g} s per step{colocated}, pipeline "
            f"{pipeline}; objective: most tokens trained per second (limits: {res.limits_text}); batch "
            f"{base.batch_size}")
    note = ""
    if deployment is not None and base.weight_sync is None and base.weight_sync_s == 0 and base.rollout_pause_s == 0:
        note = (", weight sync not priced (0 s per update: give --weight-sync-s and --rollout-pause-s, e.g. "
                "from rollsim sync)")
    return scenario_header("split", base, core=core,
                           skip=("slots_per_instance", "decode_throughput_table", "kv_cache_tokens")) + note


def _cmd_compare(a: argparse.Namespace) -> int:
    if getattr(a, "colocated", False):
        raise ScenarioError("colocated: --colocated runs rollout and training in turns, synchronous only: compare's "
                            "asynchronous pipelines need rollout and training on their own GPUs (use rollsim run "
                            "--colocated, or drop --colocated)")
    base, d = _deployment_scenario(a)  # a file's pipeline kept, to be refused below (compare runs its own)
    _trajectories_note(a, base)
    if a.config is not None:
        base = base.replace(pipeline=FullyAsync())  # compare runs its own four pipelines on the config's setting
    if a.scenario is not None and base.pipeline != FullyAsync():
        raise invalid("pipeline", f"compare runs its own four pipelines (synchronous, one-step, fully async, fully "
                                  f"async with cap --max-staleness); the scenario file's pipeline {base.pipeline!r} "
                                  f"would be ignored: remove it from the file, or use rollsim run")
    pipelines = _pipelines(a.max_staleness)
    for _, p in pipelines:  # before --out is made: a refused run leaves nothing behind
        _guarded(a, base.replace(pipeline=p), "samples" if a.out else "summary")
    out = _out_dir(a.out, "compare", a.force)
    if out:
        _write_scenario(out, base)
    df = compare(base, pipelines, **_guarded(a, base, "summary"))
    if a.format in ("csv", "json") and d is not None:  # stdout is the frame: what was assumed goes beside it
        print(f"rollsim compare: {deployment_words(d, base)}", file=sys.stderr)
    if a.format == "csv":
        print(df.write_csv(), end="")
    elif a.format == "json":
        print(df.write_json())
    else:
        print(scenario_header("compare", base, skip=_DEPLOYMENT_SKIP if d is not None else ()))
        if d is not None:
            print(deployment_words(d, base))
        print(format_compare(df, base.horizon_s))
    if out:
        df.write_parquet(os.path.join(out, "compare.parquet"))
        for name, p in pipelines:
            _write_run(out, name.replace(" ", "_").replace(",", "").replace("-", "_"), base.replace(pipeline=p), a)
        print(f"wrote {out}/compare.parquet and samples_*/steps_* parquet files", file=sys.stderr)
    return 0


def _cmd_run(a: argparse.Namespace) -> int:
    sc, d = _deployment_scenario(a)
    if d is not None:  # what the deployment assumed, beside the JSON (stdout stays JSON)
        print(f"rollsim run: {deployment_words(d, sc)}", file=sys.stderr)
    _trajectories_note(a, sc)
    record: Literal["samples", "summary"] = "samples" if a.out else "summary"
    limits = _guarded(a, sc, record)  # before --out is made: a refused run leaves nothing behind
    out = _out_dir(a.out, "run", a.force)
    if out:
        _write_scenario(out, sc)
    with warnings.catch_warnings():  # said below with the flags' names
        warnings.simplefilter("ignore", StalenessCapLivelockWarning)
        res = simulate(sc, record=record, **limits)
    livelock = livelock_message(sc, res.summary, cap="--max-staleness", cadence="--sync-every")
    if livelock is not None:
        warnings.warn(StalenessCapLivelockWarning(livelock), stacklevel=1)
    summary = _undefined_max(res.summary)
    print(_json(summary))
    if out:
        res.samples.write_parquet(os.path.join(out, "samples.parquet"))
        res.steps.write_parquet(os.path.join(out, "steps.parquet"))
        res.segments.write_parquet(os.path.join(out, "segments.parquet"))  # for the report's learning section
        if sc.agentic is not None:  # the turns and tool calls: rollsim plot's slot timeline of an agentic run
            res.turns.write_parquet(os.path.join(out, "turns.parquet"))
        with open(os.path.join(out, "summary.json"), "w") as f:
            f.write(_json(summary) + "\n")
    return 0


def _cmd_presets(a: argparse.Namespace) -> int:
    from rollsim import presets

    base = _scenario(a)
    if a.max_events < 0:
        raise invalid("--max-events", f"must be an integer >= 0 (0: no limit), got {a.max_events}")
    df = presets.compare(base, max_events=a.max_events or None, names=PRESETS_GUARD_NAMES)
    if a.format == "csv":
        print(df.write_csv(), end="")
        return 0
    cols = [("system", "system", "s"), ("steps", "steps", "s"), ("rollout_utilization", "utilization", "pct"),
            ("staleness_mean", "stale mean", "f1"), ("staleness_max", "stale max", "s"),
            ("staleness_mean_long", "long >8K", "f1"), ("drop_fraction", "dropped", "pct"),
            ("wasted_fraction", "tokens wasted", "pct"), ("tokens_recomputed", "recomputed tok", "s")]
    records = (dict(r, tokens_recomputed=f"{r['tokens_recomputed']:.3g}") for r in df.iter_rows(named=True))
    print(scenario_header("presets", base))
    print(_text_table(cols, map(_undefined_max, records)))
    return 0


def _cmd_split(a: argparse.Namespace) -> int:
    from rollsim import resources

    for flag, dest in (("--max-staleness", "max_staleness"), ("--admission-eta", "admission_eta")):
        if getattr(a, dest) is not None and a.pipeline != "fully-async":
            raise ScenarioError(f"pipeline.{dest}: {flag} applies to --pipeline fully-async only, not {a.pipeline}")
    pipeline = (FullyAsync(a.max_staleness, admission_eta=a.admission_eta) if a.pipeline == "fully-async" else
                {"sync": Synchronous(), "one-step": OneStepAsync()}[a.pipeline])
    # the split sizes the pool and the trainer: flags that it would override are refused whenever given
    sized = {"--rollout-slots": "rollout_slots", "--train-step-s": "train_step_s",
             "--train-s-per-token": "train_s_per_token", "--logprob-s-per-token": "logprob_s_per_token"}
    given = [flag for flag, dest in sized.items() if getattr(a, dest) is not None]
    if given:
        raise ScenarioError(f"split: {', '.join(given)} cannot be set: the split sizes the pool and the trainer from "
                            f"the GPUs (use --slots-per-instance, --train-fixed-s and --gpu-s-per-token, with any "
                            f"log-prob recompute in it)")
    deployment = a.model is not None or a.hf_config is not None
    if deployment and a.slots_per_instance is not None:
        raise ScenarioError("slots_per_instance: --slots-per-instance cannot be set with --model: the deployment's "
                            "--max-num-seqs gives it")
    # the split's own flags, checked as given (with --model the deployment adds to some of them)
    _check.integer("--gpus-per-instance", a.gpus_per_instance, 1)
    if a.slots_per_instance is not None:
        _check.integer("--slots-per-instance", a.slots_per_instance, 1, MAX_COUNT)
    _check.number("--train-fixed-s", a.train_fixed_s, allow_zero=True)
    a = argparse.Namespace(**dict(vars(a), train_step_s=_DEFAULT.train_step_s, train_s_per_token=0.0,
                                  logprob_s_per_token=0.0,
                                  slots_per_instance=64 if a.slots_per_instance is None else a.slots_per_instance))
    # one instance to start from; the split's instances are the scenario's instances
    base = _scenario(a, pipeline, rollout_slots=a.slots_per_instance)
    gpu_s_per_token, train_fixed_s, gpu_s_per_step, dep = a.gpu_s_per_token, a.train_fixed_s, 0.0, None
    if a.model is not None or a.hf_config is not None:  # a deployment sizes the instances and the trainer
        base, gpu_s_per_token, gpu_s_per_step, dep = _split_deployment(a, base, pipeline)
    elif gpu_s_per_token is None:
        raise ScenarioError("--gpu-s-per-token: required without --model and --gpu (which derive it from specs)")
    spi = base.slots_per_instance or a.slots_per_instance
    if a.colocated_switch_s == "auto":
        a.colocated_switch_s = _colocated_switch(a, dep)
    kwargs = dict(gpus_per_instance=a.gpus_per_instance, slots_per_instance=spi,
                  gpu_s_per_token=gpu_s_per_token, train_fixed_s=train_fixed_s, train_gpu_s_per_step=gpu_s_per_step,
                  colocated_switch_s=a.colocated_switch_s, max_drop_fraction=a.max_drop_fraction,
                  max_staleness_mean=a.max_staleness_mean, exclude_runaway=not a.allow_runaway)
    if a.max_events < 0:
        raise invalid("--max-events", f"must be an integer >= 0 (0: no limit), got {a.max_events}")
    kwargs["max_events"] = a.max_events or None
    # with --model the instances' slots are the deployment's --max-num-seqs (--slots-per-instance is refused)
    kwargs["names"] = {**SPLIT_FLAGS, "slots_per_instance": "--max-num-seqs"} if deployment else SPLIT_FLAGS
    if a.min_train_gpus is not None:
        kwargs["min_train_gpus"] = a.min_train_gpus
    elif deployment:  # the trainer must hold the training state: weights, gradients and Adam, sharded
        kwargs["min_train_gpus"], state_why = _train_state_gpus(dep)
        kwargs["names"] = {**kwargs["names"], "min_train_gpus_why": state_why}
    bar: Any = None
    if sys.stderr.isatty():  # a progress bar on a terminal only, and only with rich
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
        except ImportError:
            pass
        else:
            bar = Progress(TextColumn("[bold]split"), BarColumn(), MofNCompleteColumn(), TextColumn("runs ETA"),
                           TimeRemainingColumn(), console=Console(stderr=True), transient=True)
    if bar is None:
        res = resources.gpu_split(base, a.gpus, **kwargs)
    else:
        with bar:
            task = bar.add_task("split", total=None)
            res = resources.gpu_split(base, a.gpus, progress=lambda done, total: bar.update(
                task, completed=done, total=total), **kwargs)
    t = res.table
    if a.format == "csv":
        print(t.write_csv(), end="")
        return 0
    print(split_header(base, res, a.gpus, a.gpus_per_instance, gpu_s_per_token, train_fixed_s, a.colocated_switch_s,
                       gpu_s_per_step=gpu_s_per_step if deployment else None, deployment=dep))
    # rollout util counts slots with a request, those waiting for KV among them: kv wait says how many wait
    print(f"{'rollout':>7} {'train':>5} {'slots':>6} {'step s':>8} {'trainer idle':>12} {'rollout util':>12} "
          f"{'kv wait':>7} {'tokens/s':>9} {'tok/s/GPU':>9} {'dropped':>7} {'stale':>5} {'max':>4} {'runaway':>7}")
    for r in t.iter_rows(named=True):
        mark = "  <- best" if r["rank"] == 1 else ""
        if r["excluded_because"] is not None:
            mark = f"  excluded: {r['excluded_because']}"
        util = f"{r['rollout_utilization']:>12.0%}"
        if r["placement"] == "colocated":
            # rollout util is slot occupancy: a synchronous batch fills few of all the GPUs' slots, and
            # the pool is offloaded while the trainer trains; the GPUs generate while the trainer idles
            util = f"{r['rollout_utilization']:>12.1%}"
            few = (f": the batch's {base.batch_size} requests fill at most {base.batch_size} of {r['rollout_slots']} slots"
                   if base.batch_size < r["rollout_slots"] else "")
            mark = (f"  (colocated, synchronous: every GPU takes turns; rollout util {r['rollout_utilization']:.1%} "
                    f"is slot occupancy{few}; the GPUs generate while the trainer idles, "
                    f"{r['trainer_idle_fraction']:.0%} of the time)" + mark)
        stale = UNDEFINED if math.isnan(r["staleness_mean"]) else f"{r['staleness_mean']:.2f}"
        stale_max = UNDEFINED if math.isnan(r["staleness_mean"]) else str(r["staleness_max"])  # a max over no samples
        step = UNDEFINED if math.isnan(r["step_time_s"]) else f"{r['step_time_s']:.1f}"
        print(f"{r['rollout_gpus']:>7} {r['train_gpus']:>5} {r['rollout_slots']:>6} {step:>8} "
              f"{r['trainer_idle_fraction']:>12.0%} {util} {r['kv_wait_fraction']:>7.0%} "
              f"{r['tokens_trained_per_s']:>9.0f} "
              f"{r['tokens_per_s_per_gpu']:>9.1f} {r['drop_fraction']:>7.1%} {stale:>5} {stale_max:>4} "
              f"{'yes' if r['runaway'] else 'no':>7}{mark}")
    print(res.verdict)
    _warn_unbounded_staleness(a, res.best)
    return 0


#: ``rollsim split`` warns when the split it recommends, with nothing bounding staleness, trains on
#: answers this many policy versions old on average, or older.
SPLIT_STALENESS_WARNING = 2.0


def _warn_unbounded_staleness(a: argparse.Namespace, best: dict[str, Any] | None) -> None:
    """A warning when ``split``'s recommendation is fully asynchronous without a cap or a staleness
    limit and its mean staleness is :data:`SPLIT_STALENESS_WARNING` or more: the search ranks by
    tokens trained per second only, and the frameworks bound staleness by default."""
    if (best is None or best["placement"] != "disaggregated" or a.pipeline != "fully-async"
            or a.max_staleness is not None or a.max_staleness_mean is not None
            or not best["staleness_mean"] >= SPLIT_STALENESS_WARNING):
        return
    print(f"rollsim: warning: the recommended split trains on answers {best['staleness_mean']:.1f} policy versions "
          f"old on average (max {best['staleness_max']}): nothing bounds staleness in this search; give "
          "--max-staleness N (AReaL's max_head_offpolicyness; verl's staleness_threshold bounds it too) or "
          "--max-staleness-mean X to recommend under a bound", file=sys.stderr)


#: ``rollsim split``'s messages name its flags (:data:`rollsim.resources.SPLIT_NAMES`).
SPLIT_FLAGS: dict[str, str] = {
    "total_gpus": "--gpus", "gpus_per_instance": "--gpus-per-instance", "slots_per_instance": "--slots-per-instance",
    "gpu_s_per_token": "--gpu-s-per-token", "train_fixed_s": "--train-fixed-s",
    "colocated_switch_s": "--colocated-switch-s", "max_drop_fraction": "--max-drop-fraction",
    "max_staleness_mean": "--max-staleness-mean", "max_events": "--max-events", "horizon_s": "--horizon-s",
    "fewer_splits": "give fewer --gpus or a larger --gpus-per-instance", "no_limit": "0: no limit", "or_none": "",
    "max_staleness": "--max-staleness", "sync_every": "--sync-every", "min_train_gpus": "--min-train-gpus",
}


#: The deployment's argument names in its messages, as ``split --model``'s flags (an instance's
#: tensor-parallel size is ``--gpus-per-instance``).
_DEPLOYMENT_FLAGS: dict[str, str] = {
    "rollout_tp": "--gpus-per-instance", "raise tp": "raise --gpus-per-instance", "at tp=": "at --gpus-per-instance ",
    "gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs",
}
_DEPLOYMENT_WORDS = re.compile("|".join(rf"(?<![\w-]){re.escape(k)}(?![\w])" if k[-1].isalnum() else
                                        rf"(?<![\w-]){re.escape(k)}" for k in _DEPLOYMENT_FLAGS))


def _colocated_switch(a: argparse.Namespace, dep: Any) -> float:
    """``split --colocated-switch-s auto``: the seconds per step of the colocated deployment's switch
    on all ``--gpus`` (:meth:`rollsim.hardware.Deployment.switch_s`, engines of ``--gpus-per-instance``);
    ``dep`` the deployment the split priced (its model, accelerator, engine and trainer: the flags are
    not resolved again, an ``--hf-config`` file not read again), None without ``--model``."""
    import dataclasses

    if dep is None:
        raise invalid("--colocated-switch-s", "auto needs --model and --gpu (the deployment prices the switch); "
                      "without them give the seconds per step")
    gi = _check.integer("--gpus-per-instance", a.gpus_per_instance, 1)
    gpus = _check.integer("--gpus", a.gpus, 1)
    d = dataclasses.replace(dep, rollout_gpus=max(gi, gpus // gi * gi), rollout_tp=gi, train_gpus=gpus, colocated=True,
                            train_offload=False)
    return float(d.switch_s()["total"])


def _train_state_gpus(d: Any) -> tuple[int, str]:
    """``split --model M --gpu G``: the training GPUs that hold M's training state (its parameters x
    :data:`rollsim.hardware.switching.TRAIN_STATE_BYTES_PER_PARAM`, sharded over them, activations
    not counted: a lower bound) in G's memory, and the words that say so in an exclusion; ``d`` the
    deployment the split priced (its model and accelerator, not read from the flags again)."""
    from rollsim.hardware.switching import train_state_words

    need, words = train_state_words(d.spec, d.accelerator)
    return need, f" ({words}; a trainer that offloads it: --min-train-gpus 1)"


def _split_deployment(a: argparse.Namespace, base: Scenario, pipeline: Any) -> tuple[Scenario, float, float, Any]:
    """``split --model M --gpu G``: one instance of ``--gpus-per-instance`` GPUs of the deployment
    (decode table, KV capacity, ``--max-num-seqs`` slots) and the trainer's cost from specs: the
    GPU-seconds per token of a batch of the scenario's mean sequence (prompt included; its
    attention term at that length) and per step (the optimizer, sharded over the training GPUs),
    both :func:`rollsim.hardware.training.engine_train_params` on one GPU, or, when the training
    options need a model-parallel group (``--train-option expert_parallel=8``), on the smallest
    number of GPUs they allow (their GPU-seconds then scale linearly to each split's training GPUs);
    the deployment (its ``train_gpus`` the GPUs priced)."""
    from rollsim.hardware.cli import deployment_from_args

    if a.gpu_s_per_token is not None:
        raise ScenarioError("gpu_s_per_token: --gpu-s-per-token cannot be set with --model: the deployment's "
                            "trainer gives it")
    given = getattr(a, "_given", {})
    overridden = [given[d] for d in ("decode_tokens_per_s", "decode_slowdown_per_seq", "decode_throughput_table",
                                     "kv_cache_tokens", "prefill_tokens_per_s") if d in given]
    if overridden:
        raise ScenarioError(f"{overridden[0].lstrip('-').replace('-', '_')}: {', '.join(overridden)} cannot be set with "
                            f"--model: the deployment gives the decode speed, its table, the KV capacity and the "
                            f"prefill from specs (drop --model to give them yourself)")
    from rollsim.hardware.deployment import MODEL_PARALLEL_OPTIONS

    try:
        d = deployment_from_args(a, rollout_gpus=a.gpus_per_instance, rollout_tp=a.gpus_per_instance, train_gpus=1)
        one, kwargs, d = d.split_inputs(base.replace(pipeline=pipeline), a.gpus)
    except ScenarioError as e:  # the deployment's words for what split's flags set
        why = _DEPLOYMENT_WORDS.sub(lambda m: _DEPLOYMENT_FLAGS[m.group(0)], str(e))
        if str(e).split(":")[0] in MODEL_PARALLEL_OPTIONS:  # train_gpus is no flag of split's
            why += (f" (on 1 training GPU; no training group of 2 to {max(1, a.gpus - 1)} GPUs, which --gpus "
                    f"{a.gpus} leaves beside one rollout instance, allows these --train-option values either)")
        raise ScenarioError(why) from None
    return one, kwargs["gpu_s_per_token"], kwargs["train_gpu_s_per_step"], d


def format_validation(df: pl.DataFrame) -> str:
    """The validation frame as a table: case, metric, measured, predicted, error, verdict."""
    records = []
    for r in df.iter_rows(named=True):
        verdict = "ok" if r["within_target"] else "miss"
        if r["in_band"] is not None:
            verdict += f", {'in' if r['in_band'] else 'out of'} band {r['band']}"
        records.append(dict(r, verdict=verdict))
    cols = [("name", "case", "s"), ("metric", "metric", "s"), ("measured", "measured", "f2"),
            ("predicted", "predicted", "f2"), ("error", "error", "pct"), ("verdict", "within 15 % (band)", "s")]
    return _text_table(cols, records)


def _progress_bar(total: int, description: str) -> tuple[Callable[[int, int], Any] | None, Callable[[], None]]:
    """A rich progress bar on stderr, as ``(callback(done, total), close)``; nothing (``None``)
    when stderr is not a terminal or rich is not installed."""
    if not sys.stderr.isatty():
        return None, lambda: None
    try:
        import rich.progress  # noqa: F401
    except ImportError:
        return None, lambda: None
    from rollsim.sweeps._progress import Progress

    bar = Progress(total, 0, True, description=description)
    return (lambda done, _total: bar.update(done)), bar.close


def _cmd_validate(a: argparse.Namespace) -> int:
    from rollsim import validation

    known = [n for n in validation.CASE_NAMES if n.startswith("verl") or not a.resources]
    for name in a.case or ():   # named as the flag the user gave (the functions name their argument)
        if name not in known:
            raise invalid("--case", f"unknown case {name!r}" + (" for --resources (deployment rebuilds cover the "
                          "verl cases)" if a.resources and name in validation.CASE_NAMES else "") +
                          f"; cases: {', '.join(known)}")
    if a.resources:  # the resource model's rows (rollsim.hardware.validation)
        from rollsim.hardware.cli import print_resource_validation

        print_resource_validation(fit=a.notes, fmt=a.format, cases=a.case)
        return 0

    names = a.case or None
    callback, close = _progress_bar(len(names or validation.CASE_NAMES), "validate")
    try:
        df = validation.validate(names, progress=callback)
    finally:
        close()
    if a.format == "csv":
        print(df.write_csv(), end="")
        return 0
    print(format_validation(df))
    if not a.case:
        eta = validation.areal_eta_curve()
        curve = ", ".join(f"{e}: {r:.2f}" for e, r in zip(eta["eta"], eta["relative"]))
        print(f"\nAReaL (arXiv 2505.24298): effective throughput vs eta, relative to eta = {eta['eta'][-1]}: {curve} "
              f"(published shape: steep from 0 to 2, then flat)")
    if a.notes:
        for r in df.iter_rows(named=True):
            print(f"\n{r['name']} ({r['source']}):\n  assumed: {r['assumptions']}")
            if r["note"]:
                print(f"  {r['note']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="rollsim", description="Simulate RL post-training pipelines for LLMs.")
    p.add_argument("--version", action="version", version=f"rollsim {_rollsim.__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="the chapter's comparison of four pipelines")
    _add_scenario_args(c, default_rng="python", scenario_file=True)
    _add_agentic_args(c)
    c.add_argument("--max-staleness", type=int, default=2, help="cap of the last row (%(default)s)")
    _refuse_pipeline_flags(c, "compare runs its own four pipelines (synchronous, one-step, fully async, fully async "
                              "with cap --max-staleness); give a pipeline's flags to rollsim run",
                           keep=("--max-staleness",))
    c.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table: rounded for reading; csv / json: the comparison frame, exact values (%(default)s)")
    c.add_argument("--out", default=None, help="directory for parquet frames (checked before running; one that "
                                                "holds a previous compare's results is refused without --force)")
    c.add_argument("--force", action="store_true", help="replace a previous compare's results in --out (its "
                                                        "compare.parquet and samples_/steps_/segments_ files)")
    _add_config_args(c)
    from rollsim.hardware.cli import add_deployment_args

    add_deployment_args(c, required=False, layout=True)  # --model / --gpu: the pool and the trainer from specs
    c.set_defaults(func=_cmd_compare)
    r = sub.add_parser("run", help="one pipeline; prints the summary as JSON")
    _add_scenario_args(r, default_rng="fast", pipeline=True, scenario_file=True)
    _add_agentic_args(r)
    r.add_argument("--out", default=None,
                   help="directory for samples/steps parquet, summary.json, scenario.json and scenario.toml "
                        "(checked before running; one that holds a previous run's results is refused without "
                        "--force)")
    r.add_argument("--force", action="store_true", help="replace a previous run's results in --out")
    _add_config_args(r)
    add_deployment_args(r, required=False, layout=True)
    r.set_defaults(func=_cmd_run)
    pr = sub.add_parser("presets", help="AReaL, verl, PipelineRL, slime, PRIME-RL side by side")
    _add_scenario_args(pr, default_rng="fast", guards=("max_events",))
    pr.set_defaults(group_size=8, prompt_tokens=500.0, prefill_tokens_per_s=10000.0)
    pr.add_argument("--format", choices=("table", "csv"), default="table",
                    help="table: rounded for reading; csv: exact values (%(default)s)")
    _refuse_pipeline_flags(pr, "presets runs each system's own pipeline (and synchronous and fully async); give a "
                               "pipeline's flags to rollsim run")
    pr.set_defaults(func=_cmd_presets)
    sp = sub.add_parser("split", help="search the rollout / training split of a GPU budget")
    _add_scenario_args(sp, default_rng="fast", instances=False, guards=("max_events",))
    sp.add_argument("--gpus", type=int, required=True, help="GPU budget")
    sp.add_argument("--gpus-per-instance", type=int, default=1, help="GPUs per inference instance (%(default)s)")
    sp.add_argument("--slots-per-instance", type=int, default=None,
                    help="sequences per instance (default 64; with --model, the deployment's --max-num-seqs)")
    sp.add_argument("--gpu-s-per-token", type=float, default=None,
                    help="GPU-seconds of training per token of the batch (required unless --model sizes it)")
    sp.add_argument("--train-fixed-s", type=_seconds, default=0.0, help="fixed seconds per step (%(default)s)")
    sp.add_argument("--pipeline", choices=("sync", "one-step", "fully-async"), default="fully-async",
                    type=_pipeline_choice(("sync", "one-step", "fully-async")),   # fully_async too, as for run
                    help="the pipeline every split runs (%(default)s)")
    sp.add_argument("--colocated-switch-s", type=_named(lambda t: "auto" if t.strip().lower() == "auto" else _seconds(t),
                                                        "float (or auto)"), default=None, metavar="X|auto",
                    help="also run the colocated synchronous baseline on all GPUs, with this many seconds per step "
                         "to offload and reload the rollout engine; auto (with --model): the deployment's switch, as "
                         "rollsim hardware --colocated prices it (default: not run)")
    sp.add_argument("--max-staleness", type=int, default=None,
                    help="drop-at-consumption cap (with --pipeline fully-async; default: no cap)")
    from rollsim.pipelines import _FA

    sp.add_argument("--admission-eta", type=int, default=None, metavar="N",
                    help=f"{_FA['admission_eta']['doc']}: AReaL's rule, which bounds staleness without dropping "
                         f"(with --pipeline fully-async; default: off)")
    sp.add_argument("--max-drop-fraction", type=float, default=0.05,
                    help="recommend only splits that drop at most this fraction of finished samples (%(default)s)")
    sp.add_argument("--max-staleness-mean", type=float, default=None,
                    help="recommend only splits whose mean staleness is at most this (default: no limit)")
    sp.add_argument("--min-train-gpus", type=int, default=None,
                    help="recommend only splits with at least this many training GPUs (default: none; with --model, "
                         "the GPUs that hold the model's training state, 18 bytes per parameter: weights, gradients, "
                         "Adam; give 1 for a trainer that offloads it)")
    sp.add_argument("--allow-runaway", action="store_true",
                    help="also recommend splits whose ready queue grows without bound (generation outruns training)")
    sp.add_argument("--format", choices=("table", "csv"), default="table",
                    help="table: rounded for reading; csv: every column, exact values (%(default)s)")
    add_deployment_args(sp, required=False)  # --model / --gpu: decode table, KV, trainer from specs
    # the split sets these: refused whenever given (None tells given from not given); hidden from --help
    sp.set_defaults(func=_cmd_split, rollout_slots=None, train_step_s=None, train_s_per_token=None,
                    logprob_s_per_token=None)
    for action in sp._actions:
        if action.dest in ("rollout_slots", "train_step_s", "train_s_per_token", "logprob_s_per_token"):
            action.help = argparse.SUPPRESS
    va = sub.add_parser("validate", help="predicted against published speedups (verl, the chapter)")
    from rollsim.validation import CASE_NAMES

    va.add_argument("--case", action="append", help=f"run only this case (repeatable): {', '.join(CASE_NAMES)} "
                                                    "(rollsim.validation.CASE_NAMES)")
    va.add_argument("--notes", action="store_true", help="print each case's assumptions and, for misses, why")
    va.add_argument("--format", choices=("table", "csv"), default="table",
                    help="table: rounded for reading; csv: exact values (%(default)s)")
    va.add_argument("--resources", action="store_true",
                    help="the resource model (rollsim.hardware) against published decode / prefill / training "
                         "measurements, then a held-out section of published measurements no fit reads; with "
                         "--notes, the global fit and its residuals first; with --case, those "
                         "verl cases rebuilt from a deployment")
    va.set_defaults(func=_cmd_validate)
    from rollsim import report as report_cli
    from rollsim import sweep_cli
    from rollsim.hardware import cli as hardware_cli
    from rollsim.sync import cli as sync_cli

    sweep_cli.add_parser(sub)
    sync_cli.add_parser(sub)
    report_cli.add_parser(sub)
    hardware_cli.add_parser(sub)
    from rollsim.configs import cli as configs_cli

    configs_cli.add_parsers(sub)
    sub.choices["presets"].description = PRESETS_DESCRIPTION
    return p


#: ``rollsim presets --help``'s description: the presets choose their own pipelines and caps.
PRESETS_DESCRIPTION = ("Runs the scenario under each system's preset (rollsim.presets: AReaL, verl, PipelineRL, slime, "
                       "PRIME-RL), with synchronous and the chapter's fully async for reference. Each preset chooses "
                       "its own pipeline and staleness cap, so the pipeline's flags (--pipeline, --max-staleness, ...) "
                       "do not apply here: give them to rollsim run.")


def _add_config_args(p: argparse.ArgumentParser) -> None:
    """``--config FILE [--framework NAME]``: the scenario of a framework's config (rollsim import)."""
    p.add_argument("--config", default=None, help="a verl / AReaL / slime / OpenRLHF config instead of a scenario "
                                                  "file (see rollsim import); flags given override its values")
    p.add_argument("--framework", choices=("verl", "areal", "slime", "openrlhf"), default=None,
                   help="the config's framework (detected when not given)")


class _Parser(argparse.ArgumentParser):
    """argparse without prefix abbreviations (``--k`` is not ``--kv-cache-tokens``: an unknown flag
    is refused, never taken for another) and with one-line errors (``rollsim run: error: ...``); the
    subcommands' parsers are of this class too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        # a type's message that names its flag already: the flag once (``argument --rollout-gpus: must be ...``)
        message = re.sub(r"^argument (\S+): \1: ", r"argument \1: ", message)
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)$", message)
        if m:  # a near miss of a choice or a command (runn, fullyasync, abort-dro): the one meant
            choices = re.findall(r"'([^']*)'", m.group(2))
            near = difflib.get_close_matches(m.group(1), choices, n=1) or difflib.get_close_matches(
                m.group(1).replace("-", "_"), choices, n=1)
            if m.group(1).lower() in ("async", "asynchronous") and "fully-async" in choices:
                near = ["fully-async"]   # closest in letters to sync, in meaning its opposite
            if near:  # the command line's spelling where a choice has both (fully-async, not fully_async)
                word = near[0].replace("_", "-") if near[0].replace("_", "-") in choices else near[0]
                message += f"; did you mean {word!r}?"
        elif message == "the following arguments are required: command":  # a bare ``rollsim``
            sub = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
            message += (f" (one of {', '.join(sub.choices)}; {self.prog} --help says what each does, "
                        f"{self.prog} compare runs the chapter's comparison)")
        self.exit(2, f"{self.prog}: error: {message}\n")


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """Warnings on the command line: one line, without the source location."""
    print(f"rollsim: warning: {message}", file=sys.stderr)


def _options_and_paths(parser: argparse.ArgumentParser,
                       command: str | None) -> tuple[dict[str, argparse.Action], dict[str, list[str]]]:
    """The command's option strings with their actions, and each flag of the scenario's schema
    (:mod:`rollsim.scenario_toml`) with the paths of the fields it sets (``--mu``: ``lengths.mu``)."""
    options: dict[str, argparse.Action] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            options = action.choices[command]._option_string_actions
    paths: dict[str, list[str]] = {}
    for f in (*schema.scenario_fields(), *schema.lengths_fields(), *schema.pipeline_fields(), *schema.agentic_fields()):
        if f.flag is not None:
            paths.setdefault(f.flag, []).append(f.path)
    return options, paths


def _command_flags(parser: argparse.ArgumentParser, command: str | None) -> dict[str, str]:
    """The names of the values the command's (visible) flags set, as ``{name: flag}``: each flag's
    argparse dest (``rollout_slots`` for ``--rollout-slots``) and, for a flag of the scenario's
    schema (:mod:`rollsim.scenario_toml`), its field's path (``pipeline.max_staleness`` for
    ``--max-staleness``, ``lengths.mu`` for ``--mu``). Made from the command's parser and the
    schema, never from a typed list; flags the command hides (``split``'s ``--rollout-slots``) are
    left out, so that no message suggests a flag the command refuses."""
    options, paths = _options_and_paths(parser, command)
    names: dict[str, str] = {}
    for flag, action in options.items():
        if not flag.startswith("--") or action.help == argparse.SUPPRESS or action.dest.startswith("_"):
            continue
        for name in (action.dest, *paths.get(flag, ())):
            names.setdefault(name, flag)
    return names


#: A Python name in a message: an identifier, dotted for a part's field (``pipeline.max_staleness``),
#: and an optional `` = `` after it (``horizon_s = 5 s``); not a name written ``name=value`` (a row's
#: label, ``fully-async, max_staleness=2``, which the table spells the same), nor a call.
_NAME_IN_TEXT = re.compile(r"(?<![\w.\-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?![\w\-(=]|\.\w)( = )?")


def _flags_in_text(text: str, flags: dict[str, str]) -> str:
    """``text`` (a warning's message) with the field names of :func:`_command_flags` spelled as the
    command's flags: ``Lengthen horizon_s, lower batch_size`` -> ``Lengthen --horizon-s, lower
    --batch-size``, ``within horizon_s = 5 s`` -> ``within --horizon-s 5 s``. Only names with an
    underscore or a dot are read as field names (``rollout_slots``, ``pipeline.max_staleness``),
    never plain words that happen to be a field's name (``seed``, ``mu``)."""

    def flag(m: re.Match[str]) -> str:
        name = m.group(1)
        if ("_" not in name and "." not in name) or name not in flags:
            return m.group(0)
        return flags[name] + (" " if m.group(2) else "")

    return _NAME_IN_TEXT.sub(flag, text)


def _cli_warning_display(flags: dict[str, str]) -> Callable[..., None]:
    """:func:`_show_warning` with the warning's field names spelled as flags (:func:`_flags_in_text`):
    the command line's user sets values with flags, a Python user (who sees the warning as raised)
    with fields. A line already printed is not printed again (a name resolved at several places of one
    command warns at each, and a ``warnings.catch_warnings`` block resets Python's once-per-place
    registry)."""
    shown: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: Any = None, line: str | None = None) -> None:
        text = _flags_in_text(str(message), flags)
        if text in shown:
            return
        shown.add(text)
        _show_warning(text, category, filename, lineno, file, line)

    return show


def _message(e: BaseException) -> str:
    """One line: the message's lines joined (an OSError as its reason and file name)."""
    if isinstance(e, OSError) and e.strerror and e.filename is not None:
        return f"{e.strerror.lower()}: {os.fsdecode(e.filename)!r}"
    return " ".join(line.strip() for line in str(e).splitlines() if line.strip()) or type(e).__name__


#: A message's leading name (``rollout_gpus: ...``, ``pipeline.max_staleness: ...``).
_LEADING_NAME = re.compile(r"([A-Za-z_][\w.]*): ")


def _given_flags(parser: argparse.ArgumentParser, command: str | None, argv: Sequence[str]) -> dict[str, str]:
    """The names the values of the flags given in ``argv`` go by in messages, as ``{name: flag}``:
    each given flag's argparse dest (``rollout_gpus`` for ``--rollout-gpus``) and, for a flag of the
    scenario's schema (:mod:`rollsim.scenario_toml`), its field's path (``pipeline.max_staleness``
    for ``--max-staleness``, ``lengths.mu`` for ``--mu``, ``agentic.max_turns`` for ``--max-turns``).
    Both come from the command's parser and the schema, never from a typed list."""
    options, paths = _options_and_paths(parser, command)
    for fields in paths.values():
        if "lengths.file" in fields:  # Empirical.from_file's parameter is path (the key is file)
            fields.insert(fields.index("lengths.file") + 1, "lengths.path")
    names: dict[str, str] = {}
    for arg in argv:
        if arg == "--":
            break
        flag = arg.split("=", 1)[0]
        given = options.get(flag) if flag.startswith("--") else None
        if given is None or given.help == argparse.SUPPRESS:
            continue
        long = next((o for o in given.option_strings if o.startswith("--")), flag)
        for name in (given.dest, *paths.get(flag, ()), *paths.get(long, ())):
            names.setdefault(name, flag)
    return names


def _flag_named(message: str, flags: dict[str, str]) -> str:
    """``message`` with its leading name (``pipeline.max_staleness: ...``) replaced by the flag the
    user gave that value with (``--max-staleness: ...``), the rest kept; a message whose text already
    starts with that flag (``pipeline.k: --k applies to ...``) just loses the name. Messages about
    values not given as flags (a scenario file's, a default) keep their names."""
    m = _LEADING_NAME.match(message)
    if m is None or m.group(1) not in flags:
        return message
    flag, rest = flags[m.group(1)], message[m.end():]
    return rest if re.match(rf"{re.escape(flag)}(?![\w-])", rest) else f"{flag}: {rest}"


#: A bound a message gives in terms of another field and its value: ``must divide batch_size (512)``.
_REFERENCED = re.compile(r"\b(must divide|must be a multiple of|at most|at least|below|above) ([a-z_][a-z0-9_.]*) \(")


def _referenced_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with the other fields its bound names spelled as the command's flags
    (``--group-size: must divide batch_size (512), got 3`` -> ``... must divide --batch-size (512) ...``),
    so that the user reads which flag to change; names the command has no flag for are kept."""
    return _REFERENCED.sub(lambda m: f"{m.group(1)} {flags.get(m.group(2), m.group(2))} (", message)


def _keyword_as_flag(message: str, parser: argparse.ArgumentParser, command: str | None) -> str:
    """``message`` that tells the Python caller to pass a keyword argument the command has as a flag
    (``framework: ...; pass framework= one of verl, ...``, from :func:`rollsim.configs.detect`) in the
    command's words: ``--framework: ...; pass --framework, one of verl, ...``. Other messages are
    returned as they are."""
    m = _LEADING_NAME.match(message)
    if m is None or f"pass {m.group(1)}= " not in message:
        return message
    options, _ = _options_and_paths(parser, command)
    flag = next((o for o, act in options.items() if act.dest == m.group(1) and o.startswith("--")), None)
    if flag is None:
        return message
    return f"{flag}: {message[m.end():]}".replace(f"pass {m.group(1)}= ", f"pass {flag}, ")


def _file_named(message: str, flags: dict[str, str], path: str | None) -> str:
    """``message`` about a value of the scenario file ``path`` (its leading name is a key of the file,
    dotted for a table's key, and no flag gave that value instead) with the file named: ``rollout_slots:
    must be in [...], got 0 (the value in 't.toml')``. Other messages are returned as they are (an
    unknown key names the file already)."""
    import tomllib

    m = _LEADING_NAME.match(message)
    if path is None or m is None or m.group(1) in flags or repr(os.fspath(path)) in message \
            or "scenario file" in message:
        return message
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except (OSError, ValueError):
        return message
    node: Any = doc
    for part in m.group(1).split("."):
        if not isinstance(node, dict) or part not in node:
            return message
        node = node[part]
    return f"{message} (the value in {os.fspath(path)!r})"


def _unrecognized(parser: argparse.ArgumentParser, command: str | None, extra: Sequence[str]) -> str:
    """The message for flags the command does not take: ``unrecognized arguments: ...``, and for a
    flag that is a near miss of one of the command's own (``--rollout-slot``, ``--horizon``) the flag
    it likely meant. Never more than a hint: flags are not abbreviated and nothing is taken for
    another."""
    options: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            # hidden flags (a pipeline's flags that compare and presets refuse) are never suggested
            options = [o for o, act in action.choices[command]._option_string_actions.items()
                       if o.startswith("--") and act.help != argparse.SUPPRESS]
    hints = []
    for arg in extra:
        flag = arg.split("=", 1)[0]
        if flag.startswith("--") and flag not in options:
            close = difflib.get_close_matches(flag, options, n=1, cutoff=0.8)
            if close:
                hints.append(f"{flag}: did you mean {close[0]}?")
    return f"unrecognized arguments: {' '.join(extra)}" + (f" ({'; '.join(hints)})" if hints else "")


def _repeated_flags(parser: argparse.ArgumentParser, command: str | None, argv: Sequence[str]) -> list[str]:
    """Warnings for a flag given twice with different values (``--horizon-s 600 ... --horizon-s 1200``,
    ``--prefix-sharing ... --no-prefix-sharing``): argparse keeps the last and drops the others without a
    word. Repeatable flags (``--train-option``, ``--case``) and a value repeated as it was are not warned."""
    options, _ = _options_and_paths(parser, command)
    seen: dict[str, list[tuple[str, str]]] = {}
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag, eq, value = argv[i].partition("=")
        act = options.get(flag) if flag.startswith("--") else None
        i += 1
        if act is None or isinstance(act, (argparse._AppendAction, argparse._HelpAction, argparse._VersionAction)):
            continue
        if act.nargs == 0:
            value = flag                   # --x and --no-x: the flag is the value
        elif not eq:
            if i >= len(argv):
                continue
            value = argv[i]
            i += 1
        seen.setdefault(act.dest, []).append((flag, value))
    out = []
    for given in seen.values():
        if len({v for _, v in given}) > 1:
            said = ", then ".join(f if f == v else f"{f} {v}" for f, v in given)
            last = given[-1][0] if given[-1][0] == given[-1][1] else f"{given[-1][0]} {given[-1][1]}"
            out.append(f"given more than once: {said}; the last, {last}, is used")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit code: 0, 2 for bad input or a file error (the message
    on stderr as ``rollsim: error: ...``, never a traceback), 130 when interrupted."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(_unrecognized(parser, getattr(args, "command", None), extra))
    for message in _repeated_flags(parser, getattr(args, "command", None), argv):
        print(f"rollsim: warning: {message}", file=sys.stderr)
    try:
        with warnings.catch_warnings():
            flags = _command_flags(parser, getattr(args, "command", None))
            if getattr(args, "model", None) is not None or getattr(args, "hf_config", None) is not None:
                flags.update(_DEPLOYMENT_FIELD_FLAGS)  # the deployment sizes these: its flags, not the refused ones
            warnings.showwarning = _cli_warning_display(flags)
            return int(args.func(args) or 0)
    except BrokenPipeError:  # stdout closed early (rollsim run | head): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (RollsimError, OSError, ValueError) as e:
        # on the command line, a value given as a flag is named by its flag (--max-staleness, not
        # pipeline.max_staleness), for every command
        flags = _given_flags(parser, getattr(args, "command", None), argv)
        message = _message(e)
        if "lengths.path" in flags and message.startswith("lengths.column: the file has columns "):
            # a file given as --lengths FILE whose column is to be chosen: the flag that chooses it
            message = message.replace("lengths.column: ", "--lengths-column: ", 1) + " (--lengths-column NAME)"
        message = _flag_named(message, flags).replace("or math.inf (", "or inf (")  # the CLI's / TOML's spelling
        if message.startswith("--"):  # a flag's value: None is spelled none there (README: a field that may be None)
            message = message.replace(", or None (", ", or none (").replace(": must be None with ", ": must be none with ")
            # a distribution is a table of a scenario file, not a flag's value (README, "Agentic rollouts")
            message = message.replace(", or LogNormal(...) / Empirical(...), got ",
                                      ", or a distribution (a table of a scenario file: kind = \"lognormal\" or "
                                      "\"empirical\"), got ")
        message = _keyword_as_flag(message, parser, getattr(args, "command", None))
        message = _referenced_flags(message, _command_flags(parser, getattr(args, "command", None)))
        print(f"rollsim: error: {_file_named(message, flags, getattr(args, 'scenario', None))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rollsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
