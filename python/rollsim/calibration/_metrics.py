"""A run's per-step metrics table read and mapped onto the generic schema: the files and frames
:func:`read_metrics` takes, the framework names (:data:`FRAMEWORK_METRICS`, detection, a logger's
prefixes and wandb's exports), the checks of every metric used (:func:`_screen`), the column
resolution and :func:`normalize`, the near-miss notes, and what the asynchronous generation timers
measure (:data:`ASYNC_GEN_METRICS`)."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rollsim._text import closest
from rollsim.errors import MetricsRowsSkippedWarning, invalid
from rollsim.pipelines import FullyAsync
from rollsim.scenario import Scenario


#: The generic per-step schema (one row per logged step, ``steps_per_row`` training steps of
#: :func:`calibrate`, 1 by default; seconds and tokens). Required: ``gen_s``, ``train_s``,
#: ``response_mean``, ``response_max``; the others are optional.
GENERIC: dict[str, str] = {
    "step": "step index (optional; row order otherwise)",
    "step_s": "wall time of the step, seconds (optional: the sum of the phases)",
    "gen_s": "generation of the batch, seconds",
    "train_s": "update phases (policy update, reference and advantage passes), seconds",
    "logprob_s": "log-prob recompute phase, seconds (optional)",
    "sync_s": "weight update, seconds (optional)",
    "response_mean": "mean answer length of the step, tokens",
    "response_max": "longest answer of the step, tokens",
    "response_clip_ratio": "fraction of answers cut at the length limit (optional)",
    "batch_samples": "samples trained in the row (optional: the config's batch x steps_per_row)",
}

#: Framework metric names -> generic columns. A list sums its present columns; alternatives are
#: tried in order. verl: ``verl/trainer/ppo/ray_trainer.py`` and ``verl/trainer/ppo/metric_utils.py``
#: (``timing_s/...``, ``response_length/...``), the fully async recipe
#: ``verl/experimental/fully_async_policy/fully_async_trainer.py`` (``timing_s/param_sync``); AReaL:
#: ``areal/trainer/rl_trainer.py`` (``timeperf/...`` from ``stats_tracker.record_timing``) and
#: ``areal/trainer/ppo/actor.py`` (``ppo_actor/seq_len``, ``prompt_len``, ``no_eos_ratios``); slime:
#: ``slime/observability/rollout_metrics.py`` (``response_len/...``, ``truncated_ratio``,
#: ``perf/rollout_time``) and ``slime/observability/train_metric_utils.py`` (``perf/*_time``). The names
#: were checked to exist at verl-project/verl 1dda039 (2026-08-22), inclusionAI/AReaL 4aef98d
#: (2026-05-21) and THUDM/slime 624b824 (2026-08-21); what the generation timers measure in
#: asynchronous runs: :data:`ASYNC_GEN_METRICS`.
FRAMEWORK_METRICS: dict[str, dict[str, list[list[str]]]] = {
    "verl": {
        # its own step counter first (what synthetic_metrics writes); a generic "step" column is read first anyway
        "step": [["training/global_step"], ["step"]],
        # the fully async trainer times its weight sync (timing_s/param_sync) outside timing_s/step
        # (fully_async_trainer.py, _trigger_parameter_sync_after_step): a row's wall time is their sum
        "step_s": [["timing_s/step", "timing_s/param_sync"]],
        "gen_s": [["timing_s/gen"]],
        "train_s": [["timing_s/update_actor", "timing_s/ref", "timing_s/adv", "timing_s/reward", "timing_s/values",
                     "timing_s/update_critic"]],
        "logprob_s": [["timing_s/old_log_prob"]],
        # verl-project/verl 1dda039 times the sync inside "step" under the key "timing_s/param_sync", which
        # compute_timing_metrics prefixes again (fully_async_trainer.py, fit_step / _fit_update_weights;
        # verl/trainer/ppo/metric_utils.py): timing_s/timing_s/param_sync, already in timing_s/step
        "sync_s": [["timing_s/update_weights"], ["timing_s/param_sync"], ["timing_s/timing_s/param_sync"]],
        "response_mean": [["response_length/mean"]],
        "response_max": [["response_length/max"]],
        "response_clip_ratio": [["response_length/clip_ratio"]],
    },
    "areal": {
        "step": [["step"], ["global_step"]],
        "gen_s": [["timeperf/rollout"]],
        "train_s": [["timeperf/train_step", "timeperf/ref_logp", "timeperf/compute_advantage",
                     "timeperf/critic_train_step", "timeperf/critic_values"]],
        "logprob_s": [["timeperf/recompute_logp"]],
        "sync_s": [["timeperf/update_weights"]],
        "response_clip_ratio": [["ppo_actor/no_eos_ratios/avg"]],
    },
    "slime": {
        "step": [["rollout/step"], ["step"]],
        "step_s": [["perf/step_time"]],
        "gen_s": [["perf/rollout_time"], ["rollout/perf/rollout_time"]],
        "train_s": [["perf/actor_train_time", "perf/ref_log_probs_time"]],
        "logprob_s": [["perf/log_probs_time"]],
        "sync_s": [["perf/update_weights_time"]],
        "response_mean": [["rollout/response_len/mean"], ["response_len/mean"]],
        "response_max": [["rollout/response_len/max"], ["response_len/max"]],
        "response_clip_ratio": [["rollout/truncated_ratio"], ["truncated_ratio"]],
    },
    # OpenRLHF (OpenRLHF/OpenRLHF at commit 3c3be62): the status keys of openrlhf/trainer/ppo_trainer.py (train_step:
    # timing/make_experience, timing/ppo_train, timing/broadcast; fit: timing/generation, timing/step_total;
    # _compute_rollout_stats: rollout/response_length_mean, rollout/truncated_rate, rollout/num_samples) and of
    # openrlhf/trainer/ppo_trainer_async.py (the same names; timing/generation is the generator's own generation of
    # the batch, timing/step_total the trainer's wall time per step), logged under train/ by its wandb and
    # tensorboard loggers (openrlhf/utils/logging_utils.py, log_train) and unprefixed on its log line.
    # timing/make_experience (reward, reference, value and old log-prob passes) is summed into train_s; no longest
    # answer is logged, so a table needs a response_max column added (refused without it: _NOT_LOGGED)
    "openrlhf": {
        "step": [["train/global_step"], ["global_step"]],
        "step_s": [["train/timing/step_total"], ["timing/step_total"]],
        "gen_s": [["train/timing/generation"], ["timing/generation"]],
        "train_s": [["train/timing/ppo_train", "train/timing/make_experience"],
                    ["timing/ppo_train", "timing/make_experience"]],
        "sync_s": [["train/timing/broadcast"], ["timing/broadcast"]],
        "response_mean": [["train/rollout/response_length_mean"], ["rollout/response_length_mean"]],
        "response_clip_ratio": [["train/rollout/truncated_rate"], ["rollout/truncated_rate"]],
        "batch_samples": [["train/rollout/num_samples"], ["rollout/num_samples"]],
    },
}

#: How messages name each framework of :data:`FRAMEWORK_METRICS`.
_LABELS = {"verl": "verl", "areal": "AReaL", "slime": "slime", "openrlhf": "OpenRLHF"}
#: AReaL logs each step's sequence lengths (prompt and answer, ``areal/trainer/ppo/actor.py``) and its
#: prompt length: the answer lengths are their difference (the prompt part optional).
_AREAL_SEQ = {"response_mean": "ppo_actor/seq_len/avg", "response_max": "ppo_actor/seq_len/max"}
_AREAL_PROMPT = "ppo_actor/prompt_len/avg"


def _framework_names(fw: str, gen: str) -> list[str]:
    """Every metric name of framework ``fw`` that gives the generic column ``gen``, in the order read."""
    out = [n for alt in FRAMEWORK_METRICS.get(fw, {}).get(gen, []) for n in alt]
    if fw == "areal" and gen in _AREAL_SEQ:
        out += [_AREAL_SEQ[gen], _AREAL_PROMPT]
    return out


def _bare(fw: str, gen: str) -> str:
    """The metric of ``fw`` that gives ``gen`` as a message names it: the first name of its shortest
    alternative (OpenRLHF's without its loggers' ``train/`` prefix, slime's without ``rollout/``)."""
    return min((alt[0] for alt in FRAMEWORK_METRICS[fw][gen]), key=len)


#: Why a framework's table lacks a required metric (appended to the ``metrics: missing ...`` error).
_NOT_LOGGED: dict[tuple[str, str], str] = {
    ("openrlhf", "response_max"): (": OpenRLHF logs no longest answer per step (its rollout statistics are "
                                   + ", ".join(_bare("openrlhf", g) for g in ("response_mean", "response_clip_ratio",
                                                                              "batch_samples"))
                                   + ": openrlhf/trainer/ppo_trainer.py, _compute_rollout_stats); add a column "
                                   "response_max, the step's longest answer in tokens (the answer lengths' spread is "
                                   "fitted on it)"),
}

_REQUIRED = ("gen_s", "train_s", "response_mean", "response_max")


def read_metrics(metrics: Any) -> pl.DataFrame:
    """A per-step table from a polars frame or a CSV, JSONL / JSON-lines, JSON or parquet file (a CSV's
    lines starting with ``#`` are comments, skipped).

    Raises
    ------
    ScenarioError
        ``metrics: ...`` for a missing file, an unknown suffix, an unreadable file or an empty table.
    """
    if isinstance(metrics, pl.DataFrame):
        df = metrics
    elif isinstance(metrics, (str, Path)):
        p = Path(metrics)
        if not p.is_file():
            raise invalid("metrics", f"no such file: {p}")
        suf = p.suffix.lower()
        try:
            if suf == ".csv":
                df = pl.read_csv(p, comment_prefix="#")  # lines starting with "#": a header comment, not data
            elif suf in (".jsonl", ".ndjson"):
                df = pl.read_ndjson(p)
            elif suf == ".json":
                df = _read_json(p)
            elif suf in (".parquet", ".pq"):
                from rollsim import _parquet

                df = _parquet.read(p, "metrics", p.name)  # the file's structure checked first: polars can abort on it
            else:
                raise invalid("metrics", f"must be a .csv, .jsonl, .json or .parquet file, got {p.name}")
        except (pl.exceptions.PolarsError, OSError, ValueError) as e:
            if isinstance(e, ValueError) and str(e).startswith("metrics:"):
                raise
            raise invalid("metrics", f"cannot read {p.name}: {str(e).splitlines()[0]}") from None
    else:
        raise invalid("metrics", f"must be a polars DataFrame or a file path, got {type(metrics).__name__}")
    if df.height == 0:
        raise invalid("metrics", "the table has no rows")
    if isinstance(metrics, (str, Path)) and all(_is_number(c) for c in df.columns):
        raise invalid("metrics", f"{Path(metrics).name}'s first line is numbers ({', '.join(df.columns[:6])}"
                                 f"{' ...' if df.width > 6 else ''}), not metric names: the file needs a header row "
                                 "naming its columns (timing_s/gen, ... or the generic gen_s, ...)")
    if isinstance(metrics, (str, Path)) and df.width == 1:
        only = df.columns[0]
        sep = next((c for c in (";", "\t", "|") if c in only), None)
        if sep is not None:
            raise invalid("metrics", f"{Path(metrics).name} has one column, {only[:60]!r}{'...' if len(only) > 60 else ''}: "
                          f"its values look separated by {sep!r}; a .csv file must be comma-separated")
    return df


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _read_json(p: Path) -> pl.DataFrame:
    """A ``.json`` metrics file: a list of per-step objects (``[{"timing_s/gen": 104.1, ...}, ...]``), an
    object of columns (``{"timing_s/gen": [104.1, ...], ...}``), or pandas' default ``to_json``
    (``{"timing_s/gen": {"0": 104.1, ...}, ...}``, rows in the order of the index)."""
    shape = ('a .json metrics file must hold a list of per-step objects ([{"timing_s/gen": 104.1, ...}, ...]) or an '
             'object of columns ({"timing_s/gen": [104.1, ...], ...})')
    try:
        data = json.loads(p.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise invalid("metrics", f"cannot read {p.name}: {str(e).splitlines()[0]}") from None
    if isinstance(data, list) and all(isinstance(r, dict) for r in data):
        return pl.from_dicts(data, infer_schema_length=None) if data else pl.DataFrame()
    if isinstance(data, dict) and data:
        vals = list(data.values())
        if all(isinstance(v, list) for v in vals):
            nested = next((k for k, v in data.items() if any(isinstance(x, (dict, list)) for x in v)), None)
            if nested is not None:
                raise invalid("metrics", f"{p.name}: {shape}, got an object whose {nested!r} holds objects or lists "
                              f"(if they are the per-step rows, write that list alone to the file)")
            n = {len(v) for v in vals}
            if len(n) > 1:
                raise invalid("metrics", f"{p.name}: the columns have different lengths ({sorted(n)}); {shape}")
            return pl.DataFrame({k: pl.Series(k, v, strict=False) for k, v in data.items()})
        if all(isinstance(v, dict) for v in vals):
            keys = list(dict.fromkeys(i for v in vals for i in v))
            order = sorted(keys, key=lambda i: (0, int(i), "") if i.lstrip("-").isdigit() else (1, 0, i))
            return pl.DataFrame({k: pl.Series(k, [v.get(i) for i in order], strict=False) for k, v in data.items()})
        got = f"an object whose values are {sorted({type(v).__name__ for v in vals})}"
    else:
        got = f"a JSON {type(data).__name__}" if not isinstance(data, dict) else "an empty object"
        if isinstance(data, list):
            got = "a list of " + ", ".join(sorted({type(r).__name__ for r in data}))
    raise invalid("metrics", f"{p.name}: {shape}, got {got}")


def _family(name: str) -> str | None:
    """The family of a metric name, its first part (``timing_s/`` of ``timing_s/gen``); None without one."""
    return name.split("/", 1)[0] + "/" if "/" in name else None


def _logged_name(column: str) -> str:
    """A column's metric name without a logger's section prefix (:data:`_LOGGER_PREFIXES`)."""
    return next((column[len(p):] for p in _LOGGER_PREFIXES if column.startswith(p)), column)


def _signatures() -> dict[str, tuple[set[str], set[str]]]:
    """What says a table is each framework's, from :data:`FRAMEWORK_METRICS`: ``(names, families)``, the
    framework's metric names (its step counter's left out: ``step`` and ``global_step`` say nothing of
    whose table it is; a logger's prefix left off) and the families of them no other framework's names
    have (``timing_s/`` is verl's alone; ``rollout/`` is slime's and OpenRLHF's, so only their names in
    it count)."""
    names = {fw: {_logged_name(n) for gen in GENERIC if gen != "step" for n in _framework_names(fw, gen)}
             for fw in FRAMEWORK_METRICS}
    families = {fw: {f for n in ns if (f := _family(n)) is not None} for fw, ns in names.items()}
    return {fw: (ns, families[fw].difference(*(f for o, f in families.items() if o != fw)))
            for fw, ns in names.items()}


def _detect(df: pl.DataFrame) -> str:
    """Whose metric names ``df`` has: the first framework of :data:`FRAMEWORK_METRICS` one of whose
    metric names or families (:func:`_signatures`) is a column's, else ``"generic"``."""
    logged = [_logged_name(c) for c in df.columns]
    for fw, (names, families) in _signatures().items():
        if any(n in names or _family(n) in families for n in logged):
            return fw
    return "generic"


#: A section prefix a logger puts before the metric names: OpenRLHF's wandb and tensorboard loggers log
#: every status key under ``train/`` (openrlhf/utils/logging_utils.py, ``log_train``; those names are in
#: :data:`FRAMEWORK_METRICS` as they are), and a run logged with ``wandb.log({"train/...": ...})`` or
#: exported with its wandb section does the same. A column ``train/<name>`` whose ``<name>`` is a metric
#: :func:`calibrate` reads (of any framework, or generic) is read as ``<name>``, as ``Calibrated.notes`` says.
_LOGGER_PREFIXES = ("train/",)
#: wandb's own columns of a run's history (``wandb.Api().run(...).history()``, ``scan_history`` and the
#: run's CSV export): ``_step`` the step ``wandb.log`` was given (read as the step when no other column
#: gives it), ``_runtime`` the seconds since the run started and ``_timestamp`` the Unix time (not read).
_WANDB_STEP = "_step"


def _known_names() -> set[str]:
    """Every metric name :func:`normalize` reads, of any framework, and the generic columns."""
    names = set(GENERIC) | set(_AREAL_SEQ.values()) | {_AREAL_PROMPT}
    return names | {n for m in FRAMEWORK_METRICS.values() for alts in m.values() for alt in alts for n in alt}


#: A chart panel's CSV export from the wandb UI: a ``Step`` column, and per run ``<run name> - <metric>``
#: with ``<run name> - <metric>__MIN`` / ``__MAX`` beside it (the extremes of the points the chart
#: sampled into each of its buckets: not per-step values, not read).
_WANDB_UI = re.compile(r"^(?P<run>.+?) - (?P<name>.+?)(?P<ext>__MIN|__MAX)?$")


def _wandb_ui(df: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str], list[str]]:
    """``df`` without a wandb UI export's run-name prefixes when every column but the x axis (the first:
    ``Step``, or a step metric such as slime's ``rollout/step``) has one
    (:data:`_WANDB_UI`): the renames ``{metric: given}``, the ``__MIN`` / ``__MAX`` columns dropped, and a
    note saying so. A table of several runs is refused (which one to calibrate cannot be told)."""
    known = _known_names()
    # the chart's x axis, first and without a run prefix: Step, or the run's own step metric (slime's
    # rollout/step, set by wandb.define_metric) when the chart is drawn over it
    axis = df.columns[0] if df.columns and not _WANDB_UI.match(df.columns[0]) else "Step"
    rest = [c for c in df.columns if c != axis]
    found = {c: _WANDB_UI.match(c) for c in rest}
    if not rest or not all(found.values()) or not any(m and m["name"] in known for m in found.values()):
        return df, {}, []
    runs = sorted({m["run"] for m in found.values() if m})
    if len(runs) > 1:
        raise invalid("metrics", f"the table is a wandb chart export of {len(runs)} runs ({', '.join(map(repr, runs))}):"
                                 " keep the columns of the one run to calibrate")
    extremes = [c for c, m in found.items() if m and m["ext"]]
    renames = {m["name"]: c for c, m in found.items() if m and not m["ext"]}
    step_axis = axis in df.columns and axis not in ("_runtime", "_timestamp")  # wall time is no step
    if step_axis and axis not in known:
        renames["step"] = axis
    out = df.drop(extremes).rename({given: new for new, given in renames.items()})
    note = (f"metrics: a wandb chart export of run {runs[0]!r}: its '{runs[0]} - ' prefix left off"
            + (f", the chart's bucket extremes not read ({_list(extremes)})" if extremes else "")
            + (f", the step read from {axis}" if step_axis else "")
            + (f"; its x axis {axis} is wall time, not a step: rows counted in order" if axis in df.columns
               and not step_axis else ""))
    return out, renames, [note]


def _unprefixed(df: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, str], list[str]]:
    """``df`` with its logger-prefixed columns (:data:`_LOGGER_PREFIXES`) renamed to the metric names
    they hold and wandb's ``_step`` to ``step`` when no column gives the step; the renames
    ``{new: given}`` and a note saying them.

    Raises
    ------
    ScenarioError
        ``metrics: ...`` when a prefixed column and its unprefixed name are both columns (two values
        of one metric: which one is meant cannot be told), or for a wandb chart export of several runs."""
    df, ui, ui_notes = _wandb_ui(df)
    if ui:
        return df, ui, ui_notes
    known = _known_names()
    have = set(df.columns)
    renames: dict[str, str] = {}
    # a framework's own step counter beside train/step (slime: rollout/step, its trainer's rows over
    # train/step): train/step is then that trainer's optimizer-step counter, not a prefixed step
    own_step = any(n in have for m in FRAMEWORK_METRICS.values() for alt in m.get("step", []) for n in alt
                   if n != "step")
    for c in df.columns:
        if c in known:
            continue
        for pre in _LOGGER_PREFIXES:
            bare = c[len(pre):]
            if bare == "step" and own_step:
                continue
            if c.startswith(pre) and bare in known:
                if bare in have:
                    raise invalid("metrics", f"the columns {c!r} and {bare!r} are both metric {bare} (one with a "
                                             f"logger's {pre} prefix): cannot tell which to read; drop one of them")
                renames[bare] = c
    steps = {n for m in FRAMEWORK_METRICS.values() for alt in m.get("step", []) for n in alt} | {"step"}
    if _WANDB_STEP in have and not (steps & (have | set(renames))):
        renames["step"] = _WANDB_STEP
    if not renames:
        return df, {}, []
    moved = ", ".join(f"{given} as {new}" for new, given in renames.items() if given != _WANDB_STEP)
    said = [f"read {moved} (a logger's {'/'.join(_LOGGER_PREFIXES)} prefix left off)"] if moved else []
    if renames.get("step") == _WANDB_STEP:
        said.append("the step read from wandb's _step (the step each row was logged at)")
    return df.rename({given: new for new, given in renames.items()}), renames, [f"metrics: {'; '.join(said)}"]


def _families(columns: list[str], fw: str) -> str:
    """The metrics of ``fw`` among ``columns`` (its step counter left out), by family: ``timing_s/...,
    response_length/...`` (a name without a ``/`` in full)."""
    have = set(columns)
    out: list[str] = []
    for gen in GENERIC:
        for name in _framework_names(fw, gen) if gen != "step" else []:
            family = name.split("/", 1)[0] + "/..." if "/" in name else name
            if name in have and family not in out:
                out.append(family)
    return ", ".join(out)


def _framework(df: pl.DataFrame, framework: str | None) -> str:
    """Whose metric names ``df`` uses: ``framework``, else detected from the columns."""
    fw = framework or _detect(df)
    if fw != "generic" and fw not in FRAMEWORK_METRICS:
        raise invalid("framework", f"metric names must be one of generic, {', '.join(FRAMEWORK_METRICS)}, got {fw!r}")
    return fw


def _resolve(columns: list[str], fw: str) -> dict[str, list[str]]:
    """For each generic column the table can give, the metrics it comes from: a sum of them, or for
    AReaL's lengths ``[seq_len, prompt_len]`` (their difference; the prompt part optional)."""
    have = set(columns)
    mapping = FRAMEWORK_METRICS.get(fw, {})
    out: dict[str, list[str]] = {}
    for gen in GENERIC:
        if gen in have:
            out[gen] = [gen]
            continue
        for alt in mapping.get(gen, []):
            present = [c for c in alt if c in have]
            if present and (len(alt) == 1 or alt[0] in have):
                out[gen] = present
                break
    if fw == "areal" and "response_mean" not in out and _AREAL_SEQ["response_mean"] in have:
        prompt = [_AREAL_PROMPT] if _AREAL_PROMPT in have else []
        out["response_mean"] = [_AREAL_SEQ["response_mean"], *prompt]
        if _AREAL_SEQ["response_max"] in have:
            out["response_max"] = [_AREAL_SEQ["response_max"], *prompt]
    return out


def _areal_lengths(fw: str, gen: str, src: list[str]) -> bool:
    """``gen`` is AReaL's answer length derived as sequence length less prompt length."""
    return fw == "areal" and gen in _AREAL_SEQ and src[0] == _AREAL_SEQ[gen]


_TIMES = ("step_s", "gen_s", "train_s", "logprob_s", "sync_s")
#: What a metric feeding each generic column must be (refused otherwise, naming the metric and the step):
#: ``(lowest, lowest allowed, highest, text)``.
_RANGES: dict[str, tuple[float, bool, float, str]] = {
    **{t: (0.0, True, math.inf, ">= 0 seconds") for t in _TIMES},
    "response_mean": (0.0, False, math.inf, "> 0 tokens"),
    "response_max": (0.0, False, math.inf, "> 0 tokens"),
    "response_clip_ratio": (0.0, True, 1.0, "in [0, 1] (a fraction of the answers)"),
    "batch_samples": (0.0, False, math.inf, "> 0 samples"),
}


def _raw(df: pl.DataFrame, name: str) -> np.ndarray:
    """A numeric column as floats, NaN for a null (a non-numeric column is refused)."""
    s = df[name]
    if s.dtype == pl.Null:
        return np.full(df.height, np.nan)
    if s.dtype == pl.String:
        bad = s.is_not_null() & s.str.strip_chars().cast(pl.Float64, strict=False).is_null()
        if bool(bad.any()):
            i = int(bad.arg_max() or 0)
            raise invalid("metrics", f"column {name!r} must be numbers, got {s[i]!r} in row {i} (counting from 0; "
                          f"{int(bad.sum())} such row{'s' if int(bad.sum()) > 1 else ''}): leave a value not logged "
                          "empty")
        s = s.str.strip_chars().cast(pl.Float64, strict=False)  # numbers written as text ("104.06"): the same numbers
    if not s.dtype.is_numeric():
        raise invalid("metrics", f"column {name!r} must be numbers, got {s.dtype}")
    return s.cast(pl.Float64).fill_null(float("nan")).to_numpy().astype(float)


#: wandb's own columns of a run's history: one value per logged row, never a metric of the step.
_WANDB_OWN = ("_step", "_runtime", "_timestamp")


def _unread(columns: list[str], used: list[str], fw: str,
            renames: dict[str, str] | None) -> tuple[list[str], list[str]]:
    """Notes naming the columns :func:`calibrate` does not read (as the table names them): ``(near,
    unread)``, the first for those that are a near miss of a metric of ``fw`` it would read, with the
    name meant (a misspelt optional metric, ``timings_s/step``, would otherwise change the fit without a
    word), the second for the rest. wandb's ``_runtime`` and ``_timestamp`` are not named."""
    names = {n for alts in FRAMEWORK_METRICS.get(fw, {}).values() for alt in alts for n in alt} | set(GENERIC)
    absent = sorted(names - set(columns))
    unread: list[str] = []
    meant: list[str] = []
    for c in columns:
        if c in used or c in ("_runtime", "_timestamp"):
            continue
        shown = (renames or {}).get(c, c)
        near = closest(c, absent, 0.85) if c not in _WANDB_OWN else None  # wandb's _step is no misspelt step
        (meant if near else unread).append(f"{shown} (a misspelling of {near}?)" if near else shown)
    return ([f"metrics: not read, near misses of metrics calibrate reads: {', '.join(meant)}"] if meant else [],
            [f"metrics: not read (no metric calibrate uses): {_list(unread)}"] if unread else [])


def _list(labels: list[str], most: int = 10) -> str:
    return ", ".join(labels[:most]) + (f" ... ({len(labels)} in all)" if len(labels) > most else "")


def merge_parts(df: pl.DataFrame, framework: str | None) -> tuple[pl.DataFrame, list[str], dict[str, list[str]]]:
    """``df`` with each step's rows merged into one where a step's metrics were logged in separate rows
    that do not disagree (:func:`_merge_parts`), a note saying so (none when nothing was merged), and the
    columns' resolution (:func:`_resolve`: the columns are the same before and after, so
    :func:`_screen` takes it instead of resolving them again)."""
    src = _resolve(df.columns, _framework(df, framework))
    key = src.get("step", [None])[0]
    if key is None:
        return df, [], src
    notes: list[str] = []
    metrics = sorted({c for g, cs in src.items() if g != "step" for c in cs})
    def null(c: str) -> np.ndarray:
        col = df[c]
        return (col.fill_nan(None) if col.dtype.is_float() else col).is_null().to_numpy()

    no_step = null(key)
    if metrics and no_step.any() and not no_step.all():
        blank = no_step & np.all([null(c) for c in metrics], axis=0)
        if blank.any():  # rows of another log call over another step counter: nothing calibrate reads
            notes.append(f"metrics: left out {int(blank.sum())} rows without a {key} and without any metric calibrate "
                         f"reads (rows of other log calls, such as slime's train/* rows logged over train/step)")
            df = df.filter(pl.Series(~blank))
    merged = _merge_parts(df, key)
    if merged is None:
        return df, notes, src
    return merged, [*notes, f"metrics: {df.height} rows merged into {merged.height} steps by {key} (each step's "
                    "metrics were logged in separate rows, as a wandb history export of slime's rollout and training "
                    "processes gives them; no metric had two values in a step)"], src


def _merge_parts(df: pl.DataFrame, key: str) -> pl.DataFrame | None:
    """The table with each step's rows merged into one, when a step's metrics were logged in separate
    rows (slime logs its rollout's and its trainer's metrics from two processes, each ``wandb.log`` a
    row of the history, both with ``rollout/step``): None when every step has one row, when a step
    has no value, or when two rows of a step both give a column a value (a resumed run's steps logged
    again, or a row repeated: refused by the caller). wandb's own columns keep the step's first row's
    value."""
    if (df[key].fill_nan(None) if df[key].dtype.is_float() else df[key]).null_count() or df[key].n_unique() == df.height:
        return None
    def clean(c: str) -> pl.Expr:
        e = pl.col(c)
        return e.fill_nan(None) if df[c].dtype.is_float() else e
    others = [c for c in df.columns if c != key and c not in _WANDB_OWN]
    if others:
        counts = df.group_by(key).agg([clean(c).drop_nulls().len().alias(c) for c in others])
        if bool(counts.select(pl.max_horizontal(others)).to_series().max() > 1):  # type: ignore[operator]
            return None
    merged = df.group_by(key, maintain_order=True).agg(
        [clean(c).drop_nulls().first().alias(c) if c not in _WANDB_OWN else pl.col(c).first() for c in df.columns
         if c != key])
    return merged.select(df.columns)


def _screen(df: pl.DataFrame, framework: str | None, renames: dict[str, str] | None = None,
            resolved: dict[str, list[str]] | None = None) -> tuple[pl.DataFrame, str, list[str], dict[str, list[str]]]:
    """Checks every metric :func:`normalize` uses and leaves out what cannot be used, saying so.

    Returns ``(rows, framework, notes, sources)``: the table's rows without those with a missing value
    (null or NaN) in a metric used, the framework, a note for each thing left out (a metric with no
    value in any row, taken as not logged; rows with missing values, by metric and step), and the
    columns' resolution (:func:`_resolve`) of the rows returned, which :func:`_normalized` reads.

    Raises
    ------
    ScenarioError
        ``metrics: missing ...`` for a required metric absent; ``metrics: <metric> must be ...,
        got <value> at step <step>`` for a negative time, a length that is not positive, a clip
        ratio outside [0, 1], a non-positive sample count, an infinite value, a longest answer
        shorter than the mean; ``metrics: needs at least 3 steps ...`` when fewer are left.
    """
    fw = _framework(df, framework)
    notes: list[str] = []
    src = resolved if resolved is not None else _resolve(df.columns, fw)  # ``resolved``: of these columns
    used = sorted({c for cs in src.values() for c in cs})
    raw = {c: _raw(df, c) for c in used}
    empty = [c for c in used if np.all(np.isnan(raw[c]))]
    if empty:
        df = df.drop(empty)
        notes.append(f"metrics: {', '.join(empty)} {'has' if len(empty) == 1 else 'have'} no value in any row: taken "
                     "as not logged")
        src = _resolve(df.columns, fw)
    for gen in _REQUIRED:
        if gen not in src:
            mapping = FRAMEWORK_METRICS.get(fw, {})
            names = " or ".join(" + ".join(a) for a in mapping.get(gen, [])) or gen
            if fw == "areal" and gen in _AREAL_SEQ:
                names = " and ".join(_AREAL_SEQ.values())
            why = _NOT_LOGGED.get((fw, gen), "")
            if fw == "generic" and framework is None:
                gens = ", ".join(f"{_LABELS[f]} {_bare(f, 'gen_s')}" for f in FRAMEWORK_METRICS)
                why = f"; no column has a framework's metric names ({gens}), so the generic names were looked for"
            given = [(renames or {}).get(c, c) for c in df.columns]  # as the table names them
            wanted = [n for a in mapping.get(gen, []) for n in a] + [gen]
            read = {(renames or {}).get(c, c) for cs in src.values() for c in cs}  # a column read is no misspelling
            near = next(((g, w) for w in wanted for g in given if g not in wanted and g not in read
                         and not _sibling_statistic(g, w) and closest(g, [w], 0.85)), None)
            meant = f"; is {near[0]!r} a misspelling of {near[1]!r}?" if near else ""
            raise invalid("metrics", f"missing {names} ({fw} metric names; generic column {gen!r}: {GENERIC[gen]})"
                          f"{why}{meant}; columns given: {', '.join(given[:12])}{' ...' if len(given) > 12 else ''}")
    step = raw.get(src["step"][0]) if "step" in src else None
    whole = step is not None and not np.any(np.isnan(step))
    if step is not None:
        seen, counts = np.unique(step[~np.isnan(step)], return_counts=True)
        twice = seen[counts > 1]
        if twice.size:
            first = int(np.flatnonzero(seen == twice[0])[0])
            raise invalid("metrics", f"{src['step'][0]} {twice[0]:g} appears in {int(counts[first])} rows"
                          + (f" ({_list([f'{v:g}' for v in twice[1:]])} more than once too)" if twice.size > 1 else "")
                          + ": one row per logged step (a resumed run logs its steps again from the last checkpoint: "
                          "keep one row of each step)")

    def at(i: int) -> str:
        return f"step {step[i]:g}" if whole and step is not None else f"row {i} (counting from 0)"

    missing = np.zeros(df.height, dtype=bool)
    gaps: list[str] = []
    for gen, cs in src.items():
        vals = [raw[c] for c in cs]
        for c, v in zip(cs, vals):
            bad = np.isinf(v)
            if bad.any():
                i = int(np.argmax(bad))
                raise invalid("metrics", f"{c} must be finite, got {v[i]:g} at {at(i)}")
            if gen != "step":
                lo, closed, hi, text = _RANGES[gen]
                if _areal_lengths(fw, gen, cs):
                    lo, closed, text = (0.0, False, "> 0 tokens") if c == cs[0] else (0.0, True, ">= 0 tokens")
                out = ((v < lo) if closed else (v <= lo)) | (v > hi)
                if out.any():
                    i = int(np.argmax(out))
                    more = int(out.sum()) - 1
                    raise invalid("metrics", f"{c} must be {text}, got {v[i]:g} at {at(i)}"
                                  + (f" (and {more} more row{'s' if more > 1 else ''})" if more else ""))
            miss = np.isnan(v)
            if miss.any():
                missing |= miss
                gaps.append(f"{c} at {_list([at(int(i)) for i in np.flatnonzero(miss)])}")
        if _areal_lengths(fw, gen, cs) and len(cs) == 2:
            d = vals[0] - vals[1]
            out = d <= 0
            if out.any():
                i = int(np.argmax(out))
                raise invalid("metrics", f"{cs[0]} - {cs[1]} (the answer length) must be > 0 tokens, got {d[i]:g} at "
                              f"{at(i)}")
    if "response_mean" in src and "response_max" in src:
        def length(gen: str) -> np.ndarray:
            v = [raw[c] for c in src[gen]]
            return v[0] - v[1] if _areal_lengths(fw, gen, src[gen]) and len(v) == 2 else v[0]

        mean, mx = length("response_mean"), length("response_max")
        short = mx < mean * (1.0 - 1e-9)
        if short.any():
            i = int(np.argmax(short))
            raise invalid("metrics", f"{' - '.join(src['response_max'])} (the longest answer) must be at least "
                          f"{' - '.join(src['response_mean'])} (the mean), got {mx[i]:g} < {mean[i]:g} at {at(i)}")
    if missing.any():
        notes.append(f"metrics: left out {int(missing.sum())} of {df.height} rows with a missing value (null or NaN): "
                     + "; ".join(gaps))
        df = df.filter(pl.Series(~missing))
        if df.height < 3:
            raise invalid("metrics", f"needs at least 3 steps to fit, got {df.height} with every metric present "
                          f"({int(missing.sum())} left out: {'; '.join(gaps)})")
    return df, fw, notes, src


def normalize(df: pl.DataFrame, framework: str | None = None) -> tuple[pl.DataFrame, str, dict[str, str]]:
    """Maps a framework's per-step table onto :data:`GENERIC` columns.

    Returns ``(frame, framework, sources)``: the frame with the generic columns present (floats),
    the framework whose names were used, and for each generic column the metric names it came from
    (as the table names them: a column ``train/<name>`` of a wandb export is read as the metric
    ``<name>``, wandb's ``_step`` as the step when no other column gives it, :data:`_LOGGER_PREFIXES`).
    Rows with a missing value (null or NaN) in a metric used are left out with a
    :class:`rollsim.MetricsRowsSkippedWarning` naming the metric and the steps (a metric with no
    value in any row is taken as not logged, with the same warning); nothing is filled in.

    Raises
    ------
    ScenarioError
        ``metrics: missing ...`` naming the framework's metric (and the generic column) for a required
        column that is absent, ``metrics: the columns 'train/<name>' and '<name>' are both ...`` for
        a prefixed column beside its twin, ``metrics: column ... must be numbers`` for a non-numeric column,
        ``metrics: <metric> must be ..., got <value> at step <step>`` for a value outside its range
        (a negative time, a length that is not positive, a clip ratio outside [0, 1], a longest answer
        shorter than the mean, an infinite value), ``metrics: needs at least 3 steps ...``.
    """
    df, renames, _ = _unprefixed(df)
    df, _, resolved = merge_parts(df, framework)
    df, fw, notes, src = _screen(df, framework, renames, resolved)
    for note in notes:
        warnings.warn(note, MetricsRowsSkippedWarning, stacklevel=2)
    out, fw, sources = _normalized(df, fw, src)
    if renames:  # the sources as the table names them
        sources = {g: re.sub(r"[^ ]+", lambda m: renames.get(m.group(0), m.group(0)), s) for g, s in sources.items()}
    return out, fw, sources


#: Timers a framework's trainer runs inside its step timer that are no part of the pipeline's step, subtracted
#: from it: verl's main trainer (volcengine/verl ``verl/trainer/ppo/ray_trainer.py``, ``fit``, at commit
#: 00401103) times validation (``testing``, every ``trainer.test_freq`` steps) and ``save_checkpoint``
#: (every ``trainer.save_freq``) inside ``with marked_timer("step", timing_raw)``, so ``timing_s/step`` of
#: those rows includes them. The fully async trainer (``fully_async_trainer.py``, ``fit``) validates on the
#: rollouter and saves after its step timer: with ``timing_s/param_sync`` (its sync, timed outside the step)
#: nothing is subtracted. A row without the timer (null: no validation that step) subtracts nothing.
INSIDE_STEP: dict[str, tuple[str, ...]] = {"verl": ("timing_s/testing", "timing_s/save_checkpoint")}


def inside_step(fw: str, columns: list[str], src: dict[str, list[str]]) -> list[str]:
    """The columns of :data:`INSIDE_STEP` subtracted from the table's step time (none when ``step_s`` is
    not read, or is the fully async trainer's ``timing_s/step + timing_s/param_sync``)."""
    step = src.get("step_s", [])
    if fw not in INSIDE_STEP or step != ["timing_s/step"]:
        return []
    return [c for c in INSIDE_STEP[fw] if c in columns]


def _normalized(df: pl.DataFrame, fw: str, src: dict[str, list[str]]) -> tuple[pl.DataFrame, str, dict[str, str]]:
    """:func:`normalize` of a table :func:`_screen` passed, with the columns' resolution it returned
    (less the timers of :data:`INSIDE_STEP` in the step)."""
    cols: dict[str, pl.Series] = {}
    sources: dict[str, str] = {}
    for gen, cs in src.items():
        vals = [_raw(df, c) for c in cs]
        if _areal_lengths(fw, gen, cs):
            cols[gen] = pl.Series(gen, vals[0] - (vals[1] if len(vals) == 2 else 0.0))
            sources[gen] = " - ".join(cs)
        else:
            cols[gen] = pl.Series(gen, np.sum(vals, axis=0))
            sources[gen] = " + ".join(cs)
    inside = inside_step(fw, df.columns, src)
    if inside:
        step = cols["step_s"].to_numpy().copy()
        for c in inside:
            v = np.nan_to_num(_raw(df, c), nan=0.0)
            if bool((v < 0).any()) or bool(np.isinf(v).any()):
                i = int(np.argmax((v < 0) | np.isinf(v)))
                raise invalid("metrics", f"{c} must be >= 0 seconds and finite, got {v[i]:g} in row {i} (counting from 0)")
            step = step - v
        if bool((step < 0).any()):
            i = int(np.argmax(step < 0))
            raise invalid("metrics", f"{' - '.join(['timing_s/step', *inside])} (the step without the timers verl "
                          f"runs inside it) must be >= 0 seconds, got {step[i]:g} in row {i} (counting from 0)")
        cols["step_s"] = pl.Series("step_s", step)
        sources["step_s"] = " - ".join(["timing_s/step", *inside])
    out = pl.DataFrame(list(cols.values()))
    if "step" not in out.columns:
        out = out.with_columns(pl.Series("step", np.arange(out.height, dtype=float)))
    if out.height < 3:
        raise invalid("metrics", f"needs at least 3 steps to fit, got {out.height}")
    return out.sort("step"), fw, sources


#: Metric names whose ``gen_s`` is not the rollout's generation when the base's pipeline streams
#: (:class:`FullyAsync`), read from the frameworks' trainer loops:
#:
#: - verl ``timing_s/gen``: the fully async trainer times ``gen`` around ``_get_samples_from_queue``, its
#:   wait for samples (volcengine/verl ``verl/experimental/fully_async_policy/fully_async_trainer.py``,
#:   ``fit`` / ``_fit_generate``);
#: - AReaL ``timeperf/rollout``: ``PPOTrainer.train`` times ``rollout`` around
#:   ``self.actor.prepare_batch``, which takes ``train_dataset.batch_size`` finished rollouts from the
#:   rollout that keeps running between steps (inclusionAI/AReaL ``areal/trainer/rl_trainer.py``,
#:   ``train``; ``areal/infra/workflow_executor.py``, ``BatchTaskDispatcher.active_submit_and_wait``):
#:   the trainer's wait. With ``rollout.max_head_offpolicyness = 0`` no rollout of the next step is
#:   admitted before the version increments at ``update_weights`` (``areal/infra/staleness_manager.py``,
#:   ``get_capacity``: ``(0 + version + 1) x consumer_batch_size - (accepted + running)``) and the rollout
#:   resumes at the end of the step (``self.rollout.resume()``): the timer then encloses the whole
#:   generation, which is what it is read as. AReaL before November 2025 timed ``rollout`` around
#:   ``rollout_batch`` (generation) unless ``async_training`` (inclusionAI/AReaL PR 567);
#: - slime ``perf/rollout_time``: timed inside ``RolloutManager.generate`` (THUDM/slime
#:   ``slime/ray/rollout.py``, ``generate``: ``time.time() - start_time``), on the rollout side, so with
#:   the default rollout function it is the batch's generation in ``train.py`` and in
#:   ``train_async.py`` alike (``train_async.py`` starts ``generate(rollout_id + 1)`` as the trainer
#:   takes batch ``rollout_id`` and nothing interrupts it). With the fully asynchronous rollout function
#:   (``slime/rollout/fully_async_rollout.py``, ``generate_rollout_fully_async``) ``generate`` drains
#:   the queue of a worker that never stops: the time from the trainer taking the previous batch to this
#:   one's collection, i.e. the previous row's training phases plus the trainer's wait when it waited.
ASYNC_GEN_METRICS: dict[str, tuple[str, ...]] = {
    "verl": ("timing_s/gen",),
    "areal": ("timeperf/rollout",),
    "slime": ("perf/rollout_time", "rollout/perf/rollout_time"),
}


def _gen_reading(sc: Scenario, fw: str, sources: dict[str, str]) -> str | None:
    """Whose asynchronous timer the table's ``gen_s`` is (``"verl"``, ``"areal"`` or ``"slime"``), or
    None when it is the rollout's generation (:data:`ASYNC_GEN_METRICS`): the base's pipeline is
    :class:`FullyAsync` (AReaL's with ``admission_eta`` other than 0) and ``gen_s`` came from that
    framework's timer."""
    p = sc.pipeline
    if not isinstance(p, FullyAsync) or sources.get("gen_s") not in ASYNC_GEN_METRICS.get(fw, ()):
        return None
    if fw == "areal" and p.admission_eta == 0:
        return None  # synchronous AReaL: timeperf/rollout encloses the generation
    return fw


def _slime_wait(m: pl.DataFrame) -> pl.DataFrame:
    """``m`` with slime's fully asynchronous ``perf/rollout_time`` turned into the trainer's wait: the
    time from the trainer taking the previous batch (when ``train_async.py`` calls ``generate``) to this
    batch, less the previous row's training phases (``train_s`` and ``logprob_s``, the first row its
    own), at least 0."""
    train = m["train_s"].to_numpy() + (m["logprob_s"].to_numpy() if "logprob_s" in m.columns else 0.0)
    prev = np.concatenate([train[:1], train[:-1]])
    return m.with_columns(pl.Series("gen_s", np.maximum(0.0, m["gen_s"].to_numpy() - prev)))


#: The last path segments of a metric's statistics (``response_length/min`` beside ``response_length/max``).
_STATISTICS = frozenset({"min", "max", "mean", "std", "median", "clip_ratio", "sum", "count"})


def _sibling_statistic(given: str, wanted: str) -> bool:
    """``given`` is another statistic of ``wanted``'s quantity (``response_length/min`` for
    ``response_length/max``): a metric of its own, not a misspelling."""
    g, _, gs = given.rpartition("/")
    w, _, ws = wanted.rpartition("/")
    return bool(g) and g == w and gs != ws and gs in _STATISTICS
