"""Calibrate a scenario on a run's per-step metrics (:func:`calibrate`).

A user has a config (imported with :func:`rollsim.configs.load`) and a baseline run's per-step
metrics with the framework's own names. :func:`calibrate` reads the table, maps the names to a generic
schema (:data:`GENERIC`), and fits, with a bootstrap interval over steps for each parameter:

- the answer lengths: ``min(LogNormal(mu_t, sigma), max_tokens)`` with ``mu_t = mu + drift * step``,
  from each step's mean, max and clip ratio (lengths grow during RL training);
- the decode speed of one sequence and the per-step generation overhead, from the generation time
  against the step's longest answer (``gen_s = overhead + max(max_len, mean_len * batch / slots) /
  decode_tokens_per_s``: rollsim's independent-slot model, in which a batch waits for its longest
  answer, or for the slots' share of the tokens when there are fewer slots than samples);
- the training cost: fixed seconds + seconds per token, from the update phases against the tokens
  of the batch (and the log-prob recompute phase apart, when logged: ``logprob_step_s`` +
  ``logprob_s_per_token``; the scenario's ``train_step_s`` includes ``logprob_step_s``);
- the weight-sync time, from its phase.

With a batch pipeline's over-sampling the logged lengths are the trained answers, the batch's
shortest; the generated distribution is found by matching simulated trained answers to them
(:func:`_length_bias`).

The fitted scenario is the base's at the run's middle step (its lengths ``mu + drift * middle``).

One metrics row may cover several training steps (``steps_per_row = k``: the verl fully async recipe
logs one row per weight sync, ``trigger_parameter_sync_step`` local updates with every ``timing_s/*``
summed, the lengths' mean averaged and their max taken over all of them; volcengine/verl
``verl/experimental/fully_async_policy/detach_utils.py``, ``MetricsAggregator``). A row then holds
``k x batch_size`` answers (the lengths are fitted on that many), its phases are sums over ``k``
updates and its sync happens once. The fit is made per row and expressed per rollsim step: fixed
costs per update are the row's over ``k``, per-token costs are unchanged, and the row's one sync is
spread over its ``k`` steps (``weight_sync_s`` = sync / k: the engine adds ``weight_sync_s`` after
every step; ``params`` also gives the time per sync), and the generation overhead becomes the pause at
the row's weight load. For a fully asynchronous base whose ``gen_s`` is the trainer's wait for samples
(verl's fully async ``timing_s/gen``, AReaL's ``timeperf/rollout`` with ``max_head_offpolicyness`` > 0;
slime's fully async ``perf/rollout_time``, the time since the trainer took the previous batch, less
the previous row's training: :data:`ASYNC_GEN_METRICS`) the decode speed and overhead come from the
wall time of the rows the rollout paced (:func:`_fit_stream`). A fully asynchronous base whose lag bound
frees its places only at a sync (``lag_release="sync"``) has the rollout's pause on its rows' critical
path: with ``gen_s`` the generation and ``step_s`` logged, the pause is the one whose simulated rows take
the rows' wall time, the speed the slope of ``gen_s`` through it (:func:`pause_on_critical_path`,
:func:`_pause_inference`); with ``gen_s`` the trainer's wait (verl's own fully async rows) the speed and the
pause trade off, and they are profiled over the pause by simulating the rows, their intervals spanning
the profile's 95 % range (:func:`_wait_pause_profile`). The length drift and the reference step count
rollsim steps (a row at the middle of its steps, logged step x k + (k - 1) / 2). Residuals stay per
metrics row.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from rollsim._text import closest
from rollsim.errors import MetricNearMissWarning, MetricsRowsSkippedWarning, invalid
from rollsim.lengths import LengthDrift, LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, Synchronous
from rollsim.scenario import Scenario

__all__ = ["calibrate", "Calibrated", "GENERIC", "FRAMEWORK_METRICS", "read_metrics", "normalize", "fit"]

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
        "step": [["step"], ["training/global_step"]],
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


def _detect(df: pl.DataFrame) -> str:
    cols = set(df.columns)
    if any(c.startswith("timing_s/") or c.startswith("response_length/") for c in cols):
        return "verl"
    if any(c.startswith("timeperf/") for c in cols):
        return "areal"
    if any(c.startswith(("timing/", "train/timing/")) or c.endswith("rollout/response_length_mean") for c in cols):
        return "openrlhf"
    if any(c.startswith("perf/") or c.startswith("response_len/") or c.startswith("rollout/") for c in cols):
        return "slime"
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
    """``df`` without a wandb UI export's run-name prefixes when every column but ``Step`` has one
    (:data:`_WANDB_UI`): the renames ``{metric: given}``, the ``__MIN`` / ``__MAX`` columns dropped, and a
    note saying so. A table of several runs is refused (which one to calibrate cannot be told)."""
    known = _known_names()
    rest = [c for c in df.columns if c != "Step"]
    found = {c: _WANDB_UI.match(c) for c in rest}
    if not rest or not all(found.values()) or not any(m and m["name"] in known for m in found.values()):
        return df, {}, []
    runs = sorted({m["run"] for m in found.values() if m})
    if len(runs) > 1:
        raise invalid("metrics", f"the table is a wandb chart export of {len(runs)} runs ({', '.join(map(repr, runs))}):"
                                 " keep the columns of the one run to calibrate")
    extremes = [c for c, m in found.items() if m and m["ext"]]
    renames = {m["name"]: c for c, m in found.items() if m and not m["ext"]}
    if "Step" in df.columns:
        renames["step"] = "Step"
    out = df.drop(extremes).rename({given: new for new, given in renames.items()})
    note = (f"metrics: a wandb chart export of run {runs[0]!r}: its '{runs[0]} - ' prefix left off"
            + (f", the chart's bucket extremes not read ({_list(extremes)})" if extremes else "")
            + (", the step read from Step" if "Step" in df.columns else ""))
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
    for c in df.columns:
        if c in known:
            continue
        for pre in _LOGGER_PREFIXES:
            bare = c[len(pre):]
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
        near = closest(c, absent, 0.85)
        (meant if near else unread).append(f"{shown} (a misspelling of {near}?)" if near else shown)
    return ([f"metrics: not read, near misses of metrics calibrate reads: {', '.join(meant)}"] if meant else [],
            [f"metrics: not read (no metric calibrate uses): {_list(unread)}"] if unread else [])


def _list(labels: list[str], most: int = 10) -> str:
    return ", ".join(labels[:most]) + (f" ... ({len(labels)} in all)" if len(labels) > most else "")


def _screen(df: pl.DataFrame, framework: str | None,
            renames: dict[str, str] | None = None) -> tuple[pl.DataFrame, str, list[str]]:
    """Checks every metric :func:`normalize` uses and leaves out what cannot be used, saying so.

    Returns ``(rows, framework, notes)``: the table's rows without those with a missing value (null
    or NaN) in a metric used, the framework, and a note for each thing left out (a metric with no
    value in any row, taken as not logged; rows with missing values, by metric and step).

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
    src = _resolve(df.columns, fw)
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
    return df, fw, notes


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
    df, fw, notes = _screen(df, framework, renames)
    for note in notes:
        warnings.warn(note, MetricsRowsSkippedWarning, stacklevel=2)
    out, fw, sources = _normalized(df, fw)
    if renames:  # the sources as the table names them
        sources = {g: re.sub(r"[^ ]+", lambda m: renames.get(m.group(0), m.group(0)), s) for g, s in sources.items()}
    return out, fw, sources


def _normalized(df: pl.DataFrame, fw: str) -> tuple[pl.DataFrame, str, dict[str, str]]:
    """:func:`normalize` of a table :func:`_screen` passed."""
    cols: dict[str, pl.Series] = {}
    sources: dict[str, str] = {}
    for gen, cs in _resolve(df.columns, fw).items():
        vals = [_raw(df, c) for c in cs]
        if _areal_lengths(fw, gen, cs):
            cols[gen] = pl.Series(gen, vals[0] - (vals[1] if len(vals) == 2 else 0.0))
            sources[gen] = " - ".join(cs)
        else:
            cols[gen] = pl.Series(gen, np.sum(vals, axis=0))
            sources[gen] = " + ".join(cs)
    out = pl.DataFrame(list(cols.values()))
    if "step" not in out.columns:
        out = out.with_columns(pl.Series("step", np.arange(out.height, dtype=float)))
    if out.height < 3:
        raise invalid("metrics", f"needs at least 3 steps to fit, got {out.height}")
    return out.sort("step"), fw, sources


# ---------------------------------------------------------------------------------------- length model

_SQRT2 = math.sqrt(2.0)


def _phi(z: Any) -> Any:
    """Standard normal CDF, vectorised (Abramowitz & Stegun 7.1.26 erf, absolute error < 1.5e-7)."""
    x = np.asarray(z, dtype=float) / _SQRT2
    t = 1.0 / (1.0 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-x * x))
    out = 0.5 * (1.0 + erf)
    return float(out) if np.ndim(out) == 0 else out


def _trunc_mean(mu: np.ndarray, sigma: Any, cap: float) -> np.ndarray:
    """Mean of ``min(LogNormal(mu, sigma), cap)`` (``sigma`` > 0, broadcast against ``mu``)."""
    lc = math.log(cap)
    a = (lc - mu) / sigma
    return np.exp(mu + sigma**2 / 2) * _phi(a - sigma) + cap * (1.0 - _phi(a))


def _mu_for_mean(mean: np.ndarray, sigma: Any, cap: float) -> np.ndarray:
    """The ``mu`` whose truncated mean is ``mean`` (vectorised bisection; ``sigma`` broadcast)."""
    shape = np.broadcast(mean, sigma).shape
    lo = np.full(shape, -20.0)
    hi = np.full(shape, math.log(cap) + 10 * float(np.max(sigma)) + 5)
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        below = _trunc_mean(mid, sigma, cap) < mean
        lo = np.where(below, mid, lo)
        hi = np.where(below, hi, mid)
    return 0.5 * (lo + hi)


_Z_CACHE: dict[float, float] = {}
_ZGRID = np.linspace(-8.0, 10.0, 4001)


def _z_max(n: np.ndarray) -> np.ndarray:
    """Expected largest of ``n`` standard normal draws (numerical integral of ``z d Phi(z)**n``): the
    log of the longest of ``n`` lognormal answers is ``mu + sigma`` times it, exactly."""
    out = []
    cdf = np.clip(_phi(_ZGRID), 0.0, 1.0)
    for k in n.tolist():
        if k not in _Z_CACHE:
            f = cdf ** max(1.0, k)
            _Z_CACHE[k] = float(np.sum(0.5 * (_ZGRID[1:] + _ZGRID[:-1]) * np.diff(f)))
        out.append(_Z_CACHE[k])
    return np.array(out)


def _length_losses(sigmas: np.ndarray, mean: np.ndarray, mx: np.ndarray, clip: np.ndarray | None, n: np.ndarray,
                   cap: float) -> tuple[np.ndarray, np.ndarray]:
    """Loss per candidate sigma and the per-step ``mu`` (rows: sigmas, columns: steps)."""
    sig = sigmas[:, None]
    mu = _mu_for_mean(np.minimum(mean, cap * 0.999)[None, :], sig, cap)
    pred_log_max = np.minimum(mu + sig * _z_max(n)[None, :], math.log(cap))
    ok = mx < cap * 0.999
    loss = np.sum(((pred_log_max - np.log(np.maximum(mx, 1.0))[None, :]) ** 2) * ok[None, :], axis=1)
    if clip is not None:
        pc = 1.0 - _phi((math.log(cap) - mu) / sig)
        loss = loss + np.sum(((pc - clip[None, :]) / 0.01) ** 2, axis=1) * 0.01
    return loss, mu


def fit_lengths(mean: np.ndarray, mx: np.ndarray, clip: np.ndarray | None, n: np.ndarray, cap: float,
                steps: np.ndarray) -> dict[str, float]:
    """``sigma`` (shared by the steps), per-step ``mu_t`` from each step's mean, and ``mu``, ``drift``
    of the line ``mu_t = mu + drift * step`` fitted to them. ``sigma`` minimises the squared log error
    of the predicted longest answers (steps below the cap) plus that of the clip ratios."""
    grid = np.linspace(0.02, 3.0, 150)
    loss, _ = _length_losses(grid, mean, mx, clip, n, cap)
    best = float(grid[int(np.argmin(loss))])
    fine = np.linspace(max(0.005, best - 0.03), best + 0.03, 121)
    loss, mus = _length_losses(fine, mean, mx, clip, n, cap)
    i = int(np.argmin(loss))
    sigma, mu_t = float(fine[i]), mus[i]
    slope, icpt = np.polyfit(steps, mu_t, 1) if len(set(steps.tolist())) > 1 else (0.0, float(mu_t.mean()))
    return {"mu": float(icpt), "drift": float(slope), "sigma": sigma}


#: A row whose trainer waited more than this share of its wall time was paced by the rollout.
WAIT_SHARE = 0.05


def _stream_rows(m: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each row's wall time (``step_s``, else the sum of its phases) and whether the rollout paced it
    (the trainer's wait, ``gen_s``, over :data:`WAIT_SHARE` of the wall time)."""
    wait = m["gen_s"].to_numpy()
    if "step_s" in m.columns:
        wall = m["step_s"].to_numpy()
    else:
        wall = wait + m["train_s"].to_numpy() + sum(m[c].to_numpy() for c in ("logprob_s", "sync_s") if c in m.columns)
    return wall, wait > WAIT_SHARE * wall


def _fit_stream(m: pl.DataFrame, x: np.ndarray, k: int) -> tuple[float, float]:
    """``(overhead, 1 / decode speed)`` per step of a streaming run whose ``gen_s`` is the trainer's
    wait: on the rows the rollout paced, the wall time is the rollout's, ``overhead + x / decode``
    per step with ``x`` the step's tokens per slot (the slots decode back to back); a line through
    them, the overhead 0 with fewer than 3 such rows or one ``x``. With none (the trainer set the pace
    everywhere) the speed is the slowest that kept up with every row: a lower bound."""
    wall, paced = _stream_rows(m)
    y = wall / k
    if paced.sum() >= 3 and np.ptp(x[paced]) > 0.01 * np.mean(x[paced]):
        return _line(x[paced], y[paced])
    rows = paced if paced.any() else np.ones(len(y), dtype=bool)
    ratio = y[rows] / np.maximum(x[rows], 1e-12)
    return 0.0, float(np.mean(ratio) if paced.any() else np.min(ratio))


def _expected_longest(mu: np.ndarray, sigma: float, cap: float, n: int) -> np.ndarray:
    """Expected longest of ``n`` independent ``min(LogNormal(mu, sigma), cap)`` answers, tokens, per
    ``mu``: ``E[max] = integral over [0, cap] of 1 - F(x)**n dx``, on a log grid (2,000 points from
    ``cap * 1e-6``; below it the integrand is 1)."""
    lo = cap * 1e-6
    grid = np.exp(np.linspace(math.log(lo), math.log(cap), 2000))
    z = (np.log(grid)[None, :] - np.asarray(mu, dtype=float)[:, None]) / max(sigma, 1e-9)
    tail = 1.0 - np.clip(_phi(z), 0.0, 1.0) ** n
    return lo + np.sum(0.5 * (tail[:, 1:] + tail[:, :-1]) * np.diff(grid)[None, :], axis=1)


def _line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least squares ``y = a + b x`` with ``a, b >= 0`` (a negative one is set to 0 and the other refitted)."""
    if len(set(np.round(x, 9).tolist())) < 2:
        return max(0.0, float(np.mean(y))), 0.0
    b, a = np.polyfit(x, y, 1)
    if a < 0:
        a, b = 0.0, float(np.sum(x * y) / np.sum(x * x))
    if b < 0:
        a, b = float(np.mean(y)), 0.0
    return float(max(a, 0.0)), float(max(b, 0.0))


PARAMS = ("lengths.mu", "lengths.drift", "lengths.sigma", "decode_tokens_per_s", "gen_overhead_s", "train_step_s",
          "train_s_per_token", "logprob_step_s", "logprob_s_per_token", "weight_sync_s")
UNITS = {"lengths.mu": "log tokens at step 0", "lengths.drift": "log tokens / step", "lengths.sigma": "-",
         "decode_tokens_per_s": "tokens/s per sequence", "gen_overhead_s": "s / step", "train_step_s": "s / step",
         "train_s_per_token": "s / token", "logprob_step_s": "s / step", "logprob_s_per_token": "s / token", "weight_sync_s": "s / step"}


def fit(m: pl.DataFrame, *, batch: int, slots: int, cap: float, steps_per_row: int = 1,
        gen_is_wait: bool = False, gen_overhead: float | None = None) -> dict[str, float]:
    """Every parameter from a normalised frame (:func:`normalize`), per rollsim step of ``batch``
    samples; each row covers ``steps_per_row`` steps (its phases summed over them, its lengths over
    all of their answers, ``batch_samples`` the row's samples, one sync). ``gen_is_wait``: ``gen_s``
    is a streaming trainer's wait for samples (:func:`_fit_stream`). ``gen_overhead``: the generation
    overhead per step, seconds, when it is known from elsewhere (:func:`_pause_inference`: the rows'
    wall time); the speed is then the least-squares slope of the generation time through it.

    Raises
    ------
    ScenarioError
        ``gen_overhead: must be in [0, 1e12] seconds, got ...`` for an overhead that is negative, not
        finite or not a number.
    """
    if gen_overhead is not None:
        from rollsim import _check

        gen_overhead = _check.bounded("gen_overhead", gen_overhead, 0.0, 1e12, "seconds")
    k = steps_per_row
    steps = m["step"].to_numpy()
    mean = m["response_mean"].to_numpy()
    mx = m["response_max"].to_numpy()
    n = m["batch_samples"].to_numpy() if "batch_samples" in m.columns else np.full(m.height, float(batch * k))
    clip = m["response_clip_ratio"].to_numpy() if "response_clip_ratio" in m.columns else None
    out = {f"lengths.{name}": v for name, v in fit_lengths(mean, mx, clip, n, cap, steps).items()}
    if k > 1:
        n = n / k  # samples per step, for the phases' closed forms
    x = m["makespan_tokens"].to_numpy() if "makespan_tokens" in m.columns else np.maximum(mx, mean * n / max(1, slots))
    gen = m["gen_s"].to_numpy() / k
    if gen_is_wait:
        a, b = _fit_stream(m, mean * n / max(1, slots), k)
    elif gen_overhead is not None:
        a = float(gen_overhead)
        b = max(0.0, float(np.sum(x * (gen - a)) / max(float(np.sum(x * x)), 1e-300)))
    elif np.ptp(x) <= 0.01 * np.mean(x):
        # every step waits for about the same longest answer (capped): overhead and speed cannot be
        # told apart; the generation time is all decoding
        a, b = 0.0, float(np.mean(gen) / np.mean(x))
    else:
        a, b = _line(x, gen)
    out["decode_tokens_per_s"] = 1.0 / b if b > 0 else 1e9
    out["gen_overhead_s"] = a
    tokens = mean * n
    f, p = _line(tokens, m["train_s"].to_numpy() / k)
    f2 = q = 0.0
    if "logprob_s" in m.columns:
        f2, q = _line(tokens, m["logprob_s"].to_numpy() / k)
    out["train_step_s"], out["train_s_per_token"] = f, p
    out["logprob_step_s"], out["logprob_s_per_token"] = f2, q
    # one sync per row, spread over its k steps (the engine adds weight_sync_s after every step)
    if "sync_s" in m.columns:
        out["weight_sync_s"] = float(max(0.0, np.mean(m["sync_s"].to_numpy()))) / k
    elif "step_s" in m.columns:
        rest = m["step_s"].to_numpy() - m["gen_s"].to_numpy() - m["train_s"].to_numpy()
        if "logprob_s" in m.columns:
            rest = rest - m["logprob_s"].to_numpy()
        out["weight_sync_s"] = float(max(0.0, np.mean(rest))) / k
    else:
        out["weight_sync_s"] = 0.0
    return out


@dataclass(frozen=True)
class Calibrated:
    """The result of :func:`calibrate`. Its ``notes`` also say what :func:`calibrate` left out (the
    metrics rows with a missing value, by metric and step; a metric with no value) and what it inferred
    or assumed for a Deployment base.

    Attributes
    ----------
    scenario : Scenario
        The base scenario with the fitted parameters, lengths at the run's middle step.
    params : polars.DataFrame
        One row per parameter: ``name``, ``value``, ``low``, ``high`` (bootstrap 2.5 / 97.5 %
        quantiles over rows), ``unit``, ``source`` (the metrics it came from); per rollsim step, and
        with ``steps_per_row`` > 1 a ``weight_sync_s_per_sync`` row (the row's one sync).
    residuals : polars.DataFrame
        Per metrics row (the user's unit: ``steps_per_row`` training steps): the logged ``step``,
        measured and predicted ``gen_s``, ``train_s``, ``step_s`` (seconds per row), the answer
        lengths' mean (tokens), and ``step_error`` (predicted / measured - 1).
    draws : tuple of dict
        The bootstrap fits (parameter name -> value), for intervals of predictions.
    metrics : polars.DataFrame
        The normalised metrics (generic columns; ``step`` in rollsim steps: the middle of the row's,
        logged step x ``steps_per_row`` + (``steps_per_row`` - 1) / 2).
    framework : str
        Whose metric names were read (``verl``, ``areal``, ``slime``, ``openrlhf`` or ``generic``).
    base : object
        The ImportedConfig, Deployment or Scenario calibrated.
    layout : object or None
        The base's GPU layout (:class:`rollsim.configs.Layout`), when it came from a config or a
        deployment.
    reference_step : float
        The step whose lengths the scenario uses.
    values : dict of str to float
        The fitted parameters (name -> value).
    hardware : dict or None
        What :func:`rollsim.whatif` rescales the training cost with when the training GPUs change
        (:func:`rollsim.what_if.train_scale`): ``model`` (a ``ModelSpec``), ``gpu`` (an
        ``Accelerator``), ``backend`` and ``options`` (keyword arguments of
        :func:`rollsim.hardware.training.train_step_s`); ``model`` or ``gpu`` is None when neither
        the call nor the base named it.
    steps_per_row : int
        Training steps one metrics row covers (1, or the verl fully async recipe's
        ``trigger_parameter_sync_step``): :func:`rollsim.whatif` reports step times per row.
    notes : tuple of str
        How the fit read what is not a generation phase (``rollsim calibrate`` and ``rollsim whatif``
        print them on stderr): a verl fully async ``timing_s/gen`` or an asynchronous AReaL
        ``timeperf/rollout`` is the trainer's wait for samples, and slime's fully async
        ``perf/rollout_time`` gives it (:data:`ASYNC_GEN_METRICS`); the generation is then fitted on
        the wall time of the rows the rollout paced (:func:`_fit_stream`), or is a lower bound when
        there are none.
    """

    scenario: Scenario
    params: pl.DataFrame
    residuals: pl.DataFrame
    draws: tuple[dict[str, float], ...]
    metrics: pl.DataFrame
    framework: str
    base: Any
    layout: Any = None
    reference_step: float = 0.0
    values: dict[str, float] = field(default_factory=dict)
    hardware: dict[str, Any] | None = None
    steps_per_row: int = 1
    notes: tuple[str, ...] = ()

    def __repr__(self) -> str:
        """A few lines a reader can take in (the fields hold frames, bootstrap draws and the imported
        config: their full repr runs to tens of thousands of characters): the framework, the rows fitted,
        each fitted value with its unit and interval, and how many notes there are."""
        rows = [f"Calibrated(framework={self.framework!r}, {self.residuals.height} metrics rows"
                + (f" of {self.steps_per_row} steps" if self.steps_per_row > 1 else "")
                + f", {len(self.draws)} bootstrap draws, {len(self.notes)} notes; .params, .residuals, .scenario:"]
        for r in self.params.iter_rows(named=True):
            unit = f" {r['unit']}" if r.get("unit") not in (None, "", "-") else ""
            rows.append(f"  {r['name']} = {r['value']:.4g}{unit} [{r['low']:.4g}, {r['high']:.4g}]")
        return "\n".join(rows) + ")"

    def scenario_for(self, values: dict[str, float], step: float | None = None) -> Scenario:
        """The base scenario with ``values`` (a fit or a bootstrap draw) at ``step`` (default: the
        reference step)."""
        return _apply(self.scenario, values, self.reference_step if step is None else step, self.steps_per_row)

    def length_drift(self, values: dict[str, float] | None = None) -> tuple[LogNormal, LengthDrift]:
        """The fitted lengths as a drift the engine applies inside a run: ``(base, drift)`` with
        ``base`` the lengths of the run's first logged step ``s0`` (``LogNormal(mu + drift * s0,
        sigma, max_tokens)``: policy version 0) and ``drift = LengthDrift("exp", rate=drift)``, so
        that version ``t`` draws the fitted ``mu_t = mu + drift * (s0 + t)`` (a lognormal whose
        tokens are scaled by ``exp(drift * t)`` is the one with ``mu + drift * t``, cut at the same
        cap). Use as ``sc.replace(lengths=base, length_drift=drift)``; ``values``: a fit or a
        bootstrap draw (default: the fit)."""
        v = self.values if values is None else values
        base = self.scenario_for(v, float(self.metrics["step"].min())).lengths  # type: ignore[arg-type]
        assert isinstance(base, LogNormal)
        return base, LengthDrift("exp", rate=float(np.clip(v["lengths.drift"], -1.0, 100.0)))

    def measured_step_s(self) -> float:
        """The run's mean time per metrics row (``steps_per_row`` training steps), seconds
        (``step_s``, else the sum of the phases)."""
        return float(self.residuals["step_s_measured"].mean())  # type: ignore[arg-type]


def _apply(sc: Scenario, v: dict[str, float], step: float, steps_per_row: int = 1) -> Scenario:
    """``sc`` with the fitted values at ``step``; the generation overhead of a row of ``steps_per_row``
    steps becomes the pause at a weight load (``rollout_pause_s = gen_overhead_s x steps_per_row``:
    once per row, the row's one sync, when ``sync_every = steps_per_row``)."""
    mu = v["lengths.mu"] + v["lengths.drift"] * step
    lengths = sc.lengths
    cap = lengths.max_tokens if isinstance(lengths, LogNormal) else (lengths.max_tokens or 16384.0)
    group_corr = lengths.group_correlation if isinstance(lengths, LogNormal) else 0.0
    return sc.replace(
        lengths=LogNormal(mu=float(np.clip(mu, -100, 100)), sigma=float(min(10.0, v["lengths.sigma"])),
                          max_tokens=float(cap), group_correlation=group_corr),
        decode_tokens_per_s=float(np.clip(v["decode_tokens_per_s"], 1e-6, 1e9)),
        rollout_pause_s=float(v["gen_overhead_s"] * steps_per_row) if steps_per_row > 1 else float(v["gen_overhead_s"]),
        train_step_s=float(v["train_step_s"] + v.get("logprob_step_s", 0.0)),
        train_s_per_token=float(min(1e3, v["train_s_per_token"])),
        logprob_s_per_token=float(min(1e3 - min(1e3, v["train_s_per_token"]), v["logprob_s_per_token"])),
        weight_sync_s=float(v["weight_sync_s"]),
    )


def calibrate(metrics: Any, base: Any, *, framework: str | None = None, bootstrap: int = 200,
              seed: int = 0, model: Any = None, gpu: Any = None, backend: str | None = None,
              train_options: dict[str, Any] | None = None, steps_per_row: int | None = None,
              prompts_per_step: int | None = None, group_size: int | None = None,
              max_response_tokens: float | None = None, prompt_tokens: float | None = None,
              pipeline: Any = None) -> Calibrated:
    """Fits a scenario on a baseline run's per-step metrics.

    Parameters
    ----------
    metrics : polars.DataFrame or path
        One row per training step (CSV, JSONL, JSON or parquet file, or a frame), with verl, AReaL,
        slime or OpenRLHF metric names (:data:`FRAMEWORK_METRICS`) or the generic ones
        (:data:`GENERIC`); a wandb export's ``train/`` section prefix is left off and its ``_step``
        read as the step when no other column gives it, each said in ``notes``. A row with a missing
        value (null or NaN) in a metric used is left out, with a
        :class:`rollsim.MetricsRowsSkippedWarning` and a note (``notes``) naming the metric and the
        steps; nothing is filled in.
    base : rollsim.configs.ImportedConfig, rollsim.hardware.Deployment or Scenario
        The run's config (its batch, group, slots, length limit and pipeline are kept), or the
        deployment it ran on: its scenario is built with :meth:`rollsim.hardware.Deployment.scenario`
        from ``prompts_per_step``, ``group_size``, ``max_response_tokens``, ``prompt_tokens`` and
        ``pipeline`` (what is not given is inferred from the metrics or assumed, and said in
        ``notes``), and its model, accelerator, backend and training options rescale the training
        cost in :func:`rollsim.whatif`, its GPUs give the layout of a GPU-split variant.
    framework : {"verl", "areal", "slime", "openrlhf", "generic"}, optional
        Whose metric names; detected from the columns when not given.
    bootstrap : int
        Bootstrap resamples over steps for the intervals, in [0, 100000] (0: none, intervals equal
        the fit).
    seed : int
        Seed of the bootstrap.
    model : str or ModelSpec, optional
        The trained model (:data:`rollsim.hardware.MODELS` name, Hugging Face id or spec); default:
        the base's deployment's, else the config's model path when rollsim knows it.
    gpu : str or Accelerator, optional
        The training accelerator (:data:`rollsim.hardware.ACCELERATORS`); default: the base's
        deployment's. With ``model``, :func:`rollsim.whatif` moves the training cost to another
        GPU count with :mod:`rollsim.hardware.training` instead of ``1 / GPUs``.
    backend : {"fsdp2", "megatron"}, optional
        The training backend (default: the deployment's, else the config's, else ``"fsdp2"``).
    train_options : dict, optional
        Further keyword arguments of :func:`rollsim.hardware.training.train_step_s`
        (``mini_batches``, ``reference``, ``model_parallel``, ...; default: the deployment's).
    steps_per_row : int, optional
        Training steps of ``batch_size`` samples one metrics row covers, in [1, 16777216]: its
        phases are sums over them, its lengths' max is over all of their answers, its sync happens
        once (module docstring). Default: the imported config's ``steps_per_logged_step`` (the verl
        fully async recipe's ``trigger_parameter_sync_step``), 1 for a Scenario or a Deployment.
    prompts_per_step : int, optional
        Deployment base only: prompts per training step, in [1, 16777216]; default: the median of
        the metrics' ``batch_samples`` over ``group_size`` (refused without that column).
    group_size : int, optional
        Deployment base only: answers per prompt, in [1, 16777216]; default 1 (assumed, noted).
    max_response_tokens : float, optional
        Deployment base only: the answer-length limit, tokens, in [1, 1e9]; default: the longest
        answer logged when some step cut answers at the limit (``response_clip_ratio`` > 0), else
        refused.
    prompt_tokens : float, optional
        Deployment base only: the prompt length, tokens, in [0, 1e9]; default 0 (assumed, noted).
    pipeline : str or pipeline, optional
        Deployment base only: ``"sync"``, ``"one-step"``, ``"k-step:K"``, ``"fully-async"`` or a
        pipeline object; default the deployment's (:class:`rollsim.Synchronous` when colocated, else
        :class:`rollsim.FullyAsync`; noted).

    Returns
    -------
    Calibrated
        Its parameters per rollsim step, its residuals per metrics row, its ``notes``.

    Raises
    ------
    ScenarioError
        ``metrics: missing <metric> ...`` for a table without a needed metric; ``metrics: <metric>
        must be ..., got <value> at step <step>`` for a value out of its range (a negative time, a
        length that is not positive, a longest answer shorter than the mean, a clip ratio outside
        [0, 1]); ``base: ...`` for a base that is none of the three; ``prompts_per_step: ...``,
        ``group_size: ...``, ``max_response_tokens: ...``, ``prompt_tokens: ...``, ``pipeline: ...``
        out of range, not inferable, or given with a base that is not a Deployment; ``model: ...``,
        ``gpu: ...``, ``backend: ...`` or ``train_options: ...`` for one rollsim does not know;
        ``steps_per_row: ...`` out of range.
    """
    import dataclasses

    from rollsim.configs import ImportedConfig
    from rollsim.hardware import Deployment

    if not isinstance(base, (ImportedConfig, Deployment, Scenario)):
        raise invalid("base", f"must be an ImportedConfig (rollsim.configs.load), a Deployment (rollsim.hardware) or a "
                      f"Scenario, got {type(base).__name__}")
    scenario_args = {"prompts_per_step": prompts_per_step, "group_size": group_size,
                     "max_response_tokens": max_response_tokens, "prompt_tokens": prompt_tokens, "pipeline": pipeline}
    if not isinstance(base, Deployment):
        given = [k for k, v in scenario_args.items() if v is not None]
        if given:
            raise invalid(given[0], f"applies to a Deployment base only (the {type(base).__name__} gives it)")
    table, renames, mapped = _unprefixed(read_metrics(metrics))
    if framework is None and isinstance(base, ImportedConfig):
        detected = _detect(table)
        if detected not in ("generic", base.framework):
            hint = _families(table.columns, detected)
            raise invalid("metrics", f"the table has {detected} metric names ({hint}) but the config is for "
                          f"{base.framework}: the metrics are most likely of another run; give the "
                          f"{base.framework} run's metrics, or framework={detected!r} (rollsim calibrate / whatif: "
                          f"--metric-names {detected}) to fit them on this config anyway")
    table, fw, notes = _screen(table, framework, renames)
    for note in notes:
        warnings.warn(note, MetricsRowsSkippedWarning, stacklevel=2)
    used = sorted({c for cs in _resolve(table.columns, fw).values() for c in cs})
    near, unread = _unread(table.columns, used, fw, renames)
    for note in near:
        warnings.warn(note, MetricNearMissWarning, stacklevel=2)
    notes = [*mapped, *notes, *near, *unread]
    kw: dict[str, Any] = dict(framework=fw, bootstrap=bootstrap, seed=seed, model=model, gpu=gpu, backend=backend,
                              train_options=train_options, steps_per_row=steps_per_row)
    if isinstance(base, Deployment):
        sc, layout, assumed = _deployment_base(base, _normalized(table, fw)[0], **scenario_args)
        kw.update(model=base.model if model is None else model, gpu=base.gpu if gpu is None else gpu,
                  backend=base.train_backend if backend is None else backend,
                  train_options=dict(base.train_options) if train_options is None else train_options)
        cal = dataclasses.replace(_calibrate(table, sc, **kw), base=base, layout=layout)
        notes = [*notes, *assumed]
    else:
        cal = _calibrate(table, base, **kw)
    return dataclasses.replace(cal, notes=(*notes, *cal.notes)) if notes else cal


def _deployment_base(dep: Any, m: pl.DataFrame, *, prompts_per_step: Any, group_size: Any, max_response_tokens: Any,
                     prompt_tokens: Any, pipeline: Any) -> tuple[Scenario, Any, list[str]]:
    """The scenario and GPU layout a :class:`rollsim.hardware.Deployment` base is calibrated as, from
    :meth:`~rollsim.hardware.Deployment.scenario` with what the arguments or the normalised metrics
    ``m`` give, and a note for each value inferred or assumed. The deployment's hardware-model speeds
    (its decode table, KV capacity and training cost) are left out: :func:`calibrate` fits the
    speeds on the run; the deployment gives the slots, the layout and the training rescale."""
    from rollsim import _check
    from rollsim.configs import Layout
    from rollsim.pipelines import pipeline_from_name

    notes: list[str] = []
    g = 1 if group_size is None else _check.integer("group_size", group_size, 1, 2**24)
    if group_size is None:
        notes.append("group_size = 1 (assumed: neither a deployment nor per-step metrics give the answers per prompt; "
                     "pass group_size=)")
    if prompts_per_step is None:
        if "batch_samples" not in m.columns:
            raise invalid("prompts_per_step", "needed with a Deployment base when the metrics have no batch_samples "
                          "column (samples trained per step): pass prompts_per_step=")
        b = float(np.median(m["batch_samples"].to_numpy()))
        if b != round(b) or round(b) % g:
            raise invalid("prompts_per_step", f"cannot be inferred: the median batch_samples, {b:g} samples, is not a "
                          f"multiple of group_size {g}; pass prompts_per_step=")
        p = int(round(b)) // g
        if p > 2**24:
            raise invalid("prompts_per_step", f"must be in [1, 16777216], got {p} (inferred from batch_samples)")
        notes.append(f"prompts_per_step = {p} (inferred: the median batch_samples, {b:g} samples, over group_size {g})")
    else:
        p = _check.integer("prompts_per_step", prompts_per_step, 1, 2**24)
    if max_response_tokens is None:
        clip = m["response_clip_ratio"].to_numpy() if "response_clip_ratio" in m.columns else np.zeros(m.height)
        if not np.any(clip > 0):
            raise invalid("max_response_tokens", "needed with a Deployment base: no step of the metrics cut answers at "
                          "the limit (response_clip_ratio > 0), so the limit cannot be read from them; pass "
                          "max_response_tokens=")
        cap = float(m["response_max"].filter(pl.Series(clip > 0)).max())  # type: ignore[arg-type]
        notes.append(f"max_response_tokens = {cap:g} (inferred: the longest answer of the steps that cut answers at "
                     "the limit)")
    else:
        cap = _check.bounded("max_response_tokens", max_response_tokens, 1.0, 1e9, "tokens")
    pt = 0.0 if prompt_tokens is None else _check.bounded("prompt_tokens", prompt_tokens, 0.0, 1e9, "tokens")
    if prompt_tokens is None:
        notes.append("prompt_tokens = 0 (assumed; pass prompt_tokens=)")
    pipe = None if pipeline is None else pipeline_from_name(pipeline)
    mean = float(np.clip(np.mean(m["response_mean"].to_numpy()), 1.0, cap))
    lengths = LogNormal(mu=math.log(mean), sigma=0.5, max_tokens=cap)  # a placeholder: the fit replaces it
    dsc = dep.scenario(lengths=lengths, prompts_per_step=p, group_size=g, prompt_tokens=pt, pipeline=pipe,
                       per_rank=False)
    if pipe is None:
        notes.append(f"pipeline = {dsc.pipeline!r} (the deployment's default: "
                     f"{'colocated' if dep.colocated else 'rollout and training on separate GPUs'}; pass pipeline=)")
    slots_per = dsc.slots_per_instance or dsc.rollout_slots
    notes.append(f"base: Deployment({dep.model.name!r}, {dep.gpu.name!r}, {dep.rollout_gpus} rollout GPUs x TP"
                 f"{dep.rollout_tp}, {dep.train_gpus} training GPUs): rollout_slots = {dsc.rollout_slots} "
                 f"({dsc.rollout_slots // slots_per} instances x {slots_per}); its hardware-model decode and training "
                 "speeds are not used (the fit on the run's metrics replaces them); its model and accelerator rescale "
                 "the training cost of a GPU-split variant")
    sc = Scenario(batch_size=dsc.batch_size, group_size=g, rollout_slots=dsc.rollout_slots, pipeline=dsc.pipeline,
                  lengths=lengths, prompt_tokens=pt, horizon_s=7200.0)
    layout = Layout(rollout_gpus=dep.rollout_gpus, train_gpus=dep.train_gpus, colocated=dep.colocated,
                    rollout_tp=dep.rollout_tp, slots_per_engine=slots_per)
    return sc, layout, notes


def _calibrate(metrics: Any, base: Any, *, framework: str | None, bootstrap: int, seed: int, model: Any, gpu: Any,
               backend: str | None, train_options: dict[str, Any] | None, steps_per_row: int | None) -> Calibrated:
    """:func:`calibrate` of a metrics table :func:`_screen` passed, on an ImportedConfig or a Scenario."""
    from rollsim import _check
    from rollsim.configs import ImportedConfig

    if isinstance(base, ImportedConfig):
        sc, layout = base.scenario, base.layout
    elif isinstance(base, Scenario):
        sc, layout = base, None
    else:
        raise invalid("base", f"must be an ImportedConfig (rollsim.configs.load), a Deployment (rollsim.hardware) or a "
                      f"Scenario, got {type(base).__name__}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or not 0 <= bootstrap <= 100_000:
        raise invalid("bootstrap", f"must be an integer in [0, 100000], got {bootstrap!r}")
    k = _check.integer("steps_per_row", getattr(base, "steps_per_logged_step", 1) if steps_per_row is None
                       else steps_per_row, 1, 2**24)
    hardware = _hardware(base, model, gpu, backend, train_options)
    m, fw, sources = _normalized(*_screen(read_metrics(metrics), framework)[:2])
    logged_step = m["step"]
    if k > 1:
        # the drift and the reference step count rollsim steps: a row's lengths are the mean over its
        # steps logged step x k ... + k - 1, i.e. at their middle
        m = m.with_columns(pl.col("step") * float(k) + (k - 1) / 2.0)
    cap = sc.lengths.max_tokens if isinstance(sc.lengths, LogNormal) else float(sc.lengths.max_tokens or 16384.0)
    longest = float(m["response_max"].to_numpy().max())
    if longest > cap * 1.001:
        i = int(np.argmax(m["response_max"].to_numpy()))
        option = next((n.option for n in getattr(base, "notes", ()) if n.became.startswith("lengths.max_tokens =")), None)
        limit = (f"the config's length limit {cap:g} tokens ({option})" if option is not None
                 else f"the scenario's length limit {cap:g} tokens (lengths.max_tokens)")
        at = f"step {float(logged_step[i]):g}" if "step" in sources else f"row {i} (counting from 0)"
        raise invalid("metrics", f"{sources.get('response_max', 'response_max')} {longest:g} tokens at {at} exceeds "
                      f"{limit}: the metrics are of another run, or the config's limit is not the run's")
    reading = _gen_reading(sc, fw, sources)
    wait = reading is not None
    if reading == "slime":
        m = _slime_wait(m)
    values = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_is_wait=wait)
    over = sc.pipeline.over_sampling if isinstance(sc.pipeline, OffPolicy) else None
    shift = (0.0, 0.0)
    if over is not None:
        # over-sampling stops the batch's longest answers: the logged lengths are the trained ones, a
        # short-biased subset of those generated; the generated distribution is found by matching
        # the simulated trained lengths to the logged ones
        shift = _length_bias(sc, values, float(m["step"].to_numpy().mean()), float(cap))
        values = _shifted(values, shift)
    if sc.rollout_slots < sc.batch_size or over is not None:
        # fewer slots than samples, or over-sampling (the batch ends before its longest answers): a
        # batch's generation is the slots' makespan, which rollsim simulates (in tokens, at 1 token/s)
        # for each step's fitted lengths; the speed is refitted on it
        m = m.with_columns(pl.Series("makespan_tokens", _makespans(sc, values, m["step"].to_numpy(), float(cap))))
        values = _shifted(fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k,
                              gen_is_wait=wait), shift)
    elif k > 1 and not wait:
        # rows of several steps: the row's longest answer is not each step's; a step waits for the
        # expected longest of its batch_size answers under the row's fitted lengths (exact, not
        # simulated: a noisy regressor would bias the speed)
        mu_t = values["lengths.mu"] + values["lengths.drift"] * m["step"].to_numpy()
        step_longest = _expected_longest(mu_t, values["lengths.sigma"], float(cap), sc.batch_size)
        m = m.with_columns(pl.Series("makespan_tokens", np.maximum(
            step_longest, m["response_mean"].to_numpy() * sc.batch_size / sc.rollout_slots)))
        values = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_is_wait=wait)
    stream: _StreamFit | None = None
    stream_misfit: _StreamFit | None = None
    if wait and k == 1 and stream_needs_simulation(sc) and _stream_rows(m)[1].sum() >= 3:
        # the slots do not decode back to back (more slots than a step's answers, or AReaL's admission cap
        # idles them): the speed and the pause are those whose simulated rows match the metrics' rows
        stream = _stream_inference(sc, values, m, float(cap))
        if abs(stream.error[0]) <= STREAM_MISFIT:
            values = {**values, **stream.values}
        else:
            stream_misfit, stream = stream, None
    profile: _WaitPauseFit | None = None
    profile_why: str | None = None
    if (wait and k > 1 and stream is None and stream_misfit is None and "step_s" in m.columns
            and pause_on_critical_path(sc)):
        # the trainer's wait and the wall time of rows of several steps (one per sync, as verl's fully async
        # trainer logs them), with the pause on the rows' critical path: the speed and the pause trade off
        # along a ridge; profiled over the pause by simulating the rows. Rows of one step keep the closed
        # form: on tests/test_calibrate_async.py's verl case the profile's pause range (21-35 s) missed
        # the known 20 s, its speed 7 % high, where the closed form's speed is within 5 %
        try:
            profile = _wait_pause_profile(sc, values, m, k, logged_step.to_numpy())
        except _Incomplete as e:
            profile_why = f"the simulated run at the fitted values completed {e}"
        if profile is not None and not profile.kept():
            profile_why = "no simulated run took the rows' mean wall time within " f"{STREAM_MISFIT:.0%}"
            profile = None
        if profile is not None:
            values = {**values, **profile.values}
    pause: _PauseFit | None = None
    pause_misfit: _PauseFit | None = None
    if not wait and "step_s" in m.columns and pause_on_critical_path(sc):
        # the rollout waits for each sync, then pauses: the pause is on the rows' critical path, which the
        # closed form misses; the pause is the one whose simulated rows take the rows' wall time
        pause = _pause_inference(sc, values, m, float(cap), k, logged_step.to_numpy())
        if abs(pause.error) <= STREAM_MISFIT:
            values = {**values, **pause.values}
        else:
            pause_misfit, pause = pause, None
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(bootstrap):
        idx = np.sort(rng.integers(0, m.height, m.height))
        if len(set(idx.tolist())) < 3:
            continue
        draw = _shifted(fit(m[idx.tolist()], batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap),
                            steps_per_row=k, gen_is_wait=wait,
                            gen_overhead=None if pause is None else pause.pause_for(m[idx.tolist()])), shift)
        if stream is not None:
            draw = {**draw, **stream.draw(m[idx.tolist()], draw)}
        if profile is not None:
            draw = {**draw, **profile.draw(rng, m.height)}
        draws.append(draw)
    src = {"lengths.mu": "response_mean, response_max, response_clip_ratio", "lengths.drift": "the same, over steps",
           "lengths.sigma": "response_mean, response_max, response_clip_ratio", "decode_tokens_per_s": "gen_s",
           "gen_overhead_s": "gen_s", "train_step_s": "train_s", "train_s_per_token": "train_s", "logprob_step_s": "logprob_s",
           "logprob_s_per_token": "logprob_s", "weight_sync_s": "sync_s" if "sync_s" in m.columns else "step_s - phases"}
    rows = []
    for name in PARAMS:
        vals = np.array([d[name] for d in draws]) if draws else np.array([values[name]])
        lo, hi = np.quantile(vals, [0.025, 0.975])
        s = src[name]
        s = ", ".join(sources.get(c.strip(), c.strip()) for c in s.split(",")) if "over" not in s else s
        if s == "logprob_s" and "logprob_s" not in sources:  # no log-prob phase logged: 0, and whose name it lacks
            alt = FRAMEWORK_METRICS.get(fw, {}).get("logprob_s")
            s = f"not logged ({alt[0][0] if alt else 'logprob_s'}): 0"
        low, high = float(min(lo, values[name])), float(max(hi, values[name]))
        if profile is not None and name in ("decode_tokens_per_s", "gen_overhead_s"):
            # the rows do not separate the two: the interval spans the profile's kept points
            span = [q[1] if name == "decode_tokens_per_s" else q[0] / k for q in profile.kept()]
            low, high = min(low, *span), max(high, *span)
            s = "step_s, gen_s (profiled with the pause: not separated)"
        unit = UNITS[name] if k == 1 or name != "weight_sync_s" else f"s / step (the row's one sync over its {k} steps)"
        rows.append(dict(name=name, value=values[name], low=low, high=high, unit=unit, source=s))
        if k > 1 and name == "weight_sync_s":
            rows.append(dict(name="weight_sync_s_per_sync", value=values[name] * k, low=low * k, high=high * k,
                             unit="s / sync (once per metrics row)", source=s))
    params = pl.DataFrame(rows)
    ref = float(m["step"].to_numpy().mean())
    fitted = _apply(sc, values, ref, k)
    # per-row residuals from the same closed forms the fit used (a row: k steps, their phases summed)
    n = m["batch_samples"].to_numpy() if "batch_samples" in m.columns else np.full(m.height, float(sc.batch_size * k))
    mean, mx = m["response_mean"].to_numpy(), m["response_max"].to_numpy()
    x = m["makespan_tokens"].to_numpy() if "makespan_tokens" in m.columns else np.maximum(mx, mean * n / sc.rollout_slots)
    gen_p = k * (values["gen_overhead_s"] + x / values["decode_tokens_per_s"])
    train_p = k * (values["train_step_s"] + values["logprob_step_s"]) + (values["train_s_per_token"] + values["logprob_s_per_token"]) * mean * n
    sync_p = k * values["weight_sync_s"]
    train_m = m["train_s"].to_numpy() + (m["logprob_s"].to_numpy() if "logprob_s" in m.columns else 0.0)
    step_m = (m["step_s"].to_numpy() if "step_s" in m.columns
              else m["gen_s"].to_numpy() + train_m + (m["sync_s"].to_numpy() if "sync_s" in m.columns else 0.0))
    # AReaL's admission rule with eta 0 admits no rollout of the next step before the weight update: the
    # step is generation, then training, as in a synchronous pipeline
    serial = (isinstance(sc.pipeline, OffPolicy) and sc.pipeline.k == 0) or (
        isinstance(sc.pipeline, FullyAsync) and sc.pipeline.admission_eta == 0)
    if isinstance(sc.pipeline, FullyAsync) and not serial:
        # streaming: the slots decode the row's tokens back to back (no batch waits for its longest
        # answer) and pause once per weight load (every sync_every steps); the trainer takes the longer
        gen_stream = (mean * n / (sc.rollout_slots * values["decode_tokens_per_s"])
                      + fitted.rollout_pause_s * k / sc.sync_every)
        step_p = np.maximum(gen_stream, train_p + sync_p)
        if wait:
            gen_p = np.maximum(0.0, gen_stream - train_p - sync_p)  # the trainer's predicted wait
        if stream is not None:
            # the closed form does not hold: each row's prediction is the simulated pipeline's (the mean of
            # its runs at the fitted values)
            step_p, gen_p = stream.wall, stream.wait
        if profile is not None:
            step_p, gen_p = profile.wall, profile.wait  # the simulated rows at the profile's best pause
        if pause is not None:
            step_p = pause.wall  # the simulated rows (the pause on their critical path); gen_s the closed form's
    else:
        step_p = gen_p + train_p + sync_p if serial else np.maximum(gen_p, train_p + sync_p)
    residuals = pl.DataFrame({
        "step": logged_step, "response_mean": mean, "gen_s_measured": m["gen_s"], "gen_s_predicted": gen_p,
        "train_s_measured": train_m, "train_s_predicted": train_p, "step_s_measured": step_m,
        "step_s_predicted": step_p, "step_error": step_p / step_m - 1.0,
    })
    implausible = plausibility_notes(values, step_m, k)  # warns CalibrationPlausibilityWarning
    return Calibrated(scenario=fitted, params=params, residuals=residuals, draws=tuple(draws), metrics=m,
                      framework=fw, base=base, layout=layout, reference_step=ref, values=values, hardware=hardware,
                      steps_per_row=k, notes=(_profile_notes(sc, reading, profile, profile_why)
                                              if profile is not None or profile_why is not None
                                              else _notes(m, reading, stream, stream_misfit))
                      + _pause_notes(sc, k, pause, pause_misfit)
                      + implausible)


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


def stream_needs_simulation(sc: Scenario) -> bool:
    """Whether the streaming wall-time fit's closed form (:func:`_fit_stream`: the slots decode the row's
    tokens back to back, ``wall = pause + tokens / (slots x decode)``) misreads a fully asynchronous run:

    - more slots than a step's answers (``rollout_slots > batch_size``): a step's answers were started
      during the rows before it, and the rows alternate between a batch found ready and a long wait,
      so a row's wall time is not its own tokens' and the rows the rollout paced are a biased choice;
    - AReaL's admission rule (``admission_eta``): a group starts only while accepted + running + n <=
      (eta + version + 1) x batch, so with more than (eta - 1) x batch slots the cap idles slots once the
      next batch is partly ready (more so the more slots: the AReaL example's 1,536 for 1,024 answers at
      eta 2 read the decoder 12 % slow).
    """
    p = sc.pipeline
    if not isinstance(p, FullyAsync):
        return False
    if sc.rollout_slots > sc.batch_size:
        return True
    return p.admission_eta is not None and sc.rollout_slots > (p.admission_eta - 1) * sc.batch_size


#: The largest relative misfit of the mean wall time per row with which :func:`calibrate` takes the
#: simulated streaming fit (:func:`_stream_inference`); beyond it the closed form's values are kept, and
#: the note says they are unreliable.
STREAM_MISFIT = 0.03

#: Seeds of the simulated runs :func:`_stream_inference` compares with the metrics (the same for every
#: candidate: common random numbers, so that a candidate's change is not lost in the runs' noise).
_STREAM_SEEDS = (101, 202)


def _stream_moments(m: pl.DataFrame, slots: int, batch: int) -> np.ndarray:
    """``(mean wall time per row, slope of the wall time on the tokens per slot)`` of a streaming run's
    rows (:func:`_stream_rows`), the slope a line through the means of consecutive pairs of rows (which
    the alternation of a ready batch and a long wait leaves nearly unbiased); ``nan`` for the slope
    when the tokens per slot hardly vary (no length drift: only the mean is fitted)."""
    wall, _ = _stream_rows(m)
    x = m["response_mean"].to_numpy() * batch / max(1, slots)
    pairs = len(x) // 2
    xb = x[:2 * pairs].reshape(pairs, 2).mean(axis=1)
    yb = wall[:2 * pairs].reshape(pairs, 2).mean(axis=1)
    if pairs < 3 or np.ptp(xb) <= 0.05 * np.mean(xb):
        return np.array([float(np.mean(wall)), math.nan])
    b, _ = np.polyfit(xb, yb, 1)
    return np.array([float(np.mean(wall)), float(b)])


@dataclass
class _StreamFit:
    """What :func:`_stream_inference` found: the fitted ``values`` (``decode_tokens_per_s``,
    ``gen_overhead_s``), the simulated rows' wall time and wait at them (per row, the mean over the
    seeds), ``error`` (the moments' relative misfit), ``rounds``, ``why`` (which condition of
    :func:`stream_needs_simulation` holds), and what :meth:`draw` needs: the closed form's fit on all
    rows and the rows' mean-based speed (:func:`_stream_level`)."""

    values: dict[str, float]
    wall: np.ndarray
    wait: np.ndarray
    error: np.ndarray
    rounds: int
    why: str
    closed: tuple[float, float]
    level: float
    slots: int
    batch: int

    def draw(self, rows: pl.DataFrame, closed: dict[str, float]) -> dict[str, float]:
        """A bootstrap draw's speed and pause: the fit moved as the closed form's fit moved between all
        rows and the draw's (``closed``: its values), the speed by the ratio and the pause by the
        difference, when both closed-form speeds are finite; otherwise the speed by the ratio of the
        rows' mean-based speeds (:func:`_stream_level`) and the pause kept."""
        d, p = self.values["decode_tokens_per_s"], self.values["gen_overhead_s"]
        d0, p0 = self.closed
        d1, p1 = closed["decode_tokens_per_s"], closed["gen_overhead_s"]
        if 0 < d0 < 5000 and 0 < d1 < 5000:
            return {"decode_tokens_per_s": float(d * np.clip(d1 / d0, 0.25, 4.0)), "gen_overhead_s": float(max(0.0, p + p1 - p0))}
        ratio = _stream_level(rows, self.slots, self.batch, p) / self.level if self.level > 0 else 1.0
        return {"decode_tokens_per_s": float(d * np.clip(ratio, 0.25, 4.0)), "gen_overhead_s": float(p)}


def _stream_level(rows: pl.DataFrame, slots: int, batch: int, pause: float) -> float:
    """The rows' mean tokens per slot over their mean wall time less ``pause``: the speed the rows'
    level alone gives (no slope), tokens/s per sequence."""
    wall, _ = _stream_rows(rows)
    x = rows["response_mean"].to_numpy() * batch / max(1, slots)
    return float(np.mean(x) / max(float(np.mean(wall)) - pause, 1e-9))


def _stream_simulated(sc: Scenario, v: dict[str, float], steps: int, first: float, cap: float) -> list[pl.DataFrame]:
    """Rows of the fully asynchronous ``sc`` at the values ``v`` (lengths drifting from the metrics' first
    row ``first``), one frame per seed of :data:`_STREAM_SEEDS`, with the trainer's wait as ``gen_s``."""
    out = []
    for seed in _STREAM_SEEDS:
        cand = _apply(sc, v, first - 1.0).replace(seed=seed)
        out.append(pl.DataFrame(_streamed_rows(cand, steps, float(v["lengths.drift"]), "areal", lambda x: x, cap)))
    return out


def _stream_inference(sc: Scenario, v: dict[str, float], m: pl.DataFrame, cap: float, rounds: int = 6) -> _StreamFit:
    """``decode_tokens_per_s`` and ``gen_overhead_s`` of a streaming run where the slots do not decode
    back to back (:func:`stream_needs_simulation`), by indirect inference: simulate the pipeline at a
    candidate (the other fitted values kept), compute the moments of :func:`_stream_moments` on its rows
    as on the metrics', and move the candidate by Newton steps (a finite-difference Jacobian, then
    Broyden updates; each step at most 30 % of the speed) until they agree; the best candidate found
    is kept. Without a length drift only the mean wall time is matched (the pause then stays at the
    closed form's)."""
    slots, batch = sc.rollout_slots, sc.batch_size
    target = _stream_moments(m, slots, batch)
    two = bool(np.isfinite(target[1]))
    wall_m = float(target[0])
    x_mean = float(np.mean(m["response_mean"].to_numpy() * batch / slots))
    p = float(min(v["gen_overhead_s"], 0.5 * wall_m))
    d = float(x_mean / max(wall_m - p, 1e-9)) if not 0 < v["decode_tokens_per_s"] < 5000 else float(v["decode_tokens_per_s"])
    first = float(m["step"][0])
    scale = np.abs(target) if two else np.array([abs(target[0])])

    def level(rows: pl.DataFrame, pause: float) -> float:
        return _stream_level(rows, slots, batch, pause)

    def moments(d: float, p: float) -> tuple[np.ndarray, list[pl.DataFrame]]:
        runs = _stream_simulated(sc, {**v, "decode_tokens_per_s": d, "gen_overhead_s": p}, m.height, first, cap)
        got = np.mean([_stream_moments(r, slots, batch) for r in runs], axis=0)
        return (got if two else got[:1]), runs

    def resid(got: np.ndarray) -> np.ndarray:
        return (target[:len(got)] - got) / scale

    got, runs = moments(d, p)
    best = (float(np.linalg.norm(resid(got))), d, p, got, runs)
    jac: np.ndarray | None = None
    done = 0
    while done < rounds:
        r = resid(got)
        if np.max(np.abs(r)) < 0.003:
            break
        done += 1
        if jac is None:
            hd = 0.05 * d
            cols = [(moments(d + hd, p)[0] - got) / hd]
            if two:
                hp = max(0.5, 0.1 * p)
                cols.append((moments(d, p + hp)[0] - got) / hp)
            jac = np.column_stack(cols) / scale[:, None]
        step = np.linalg.lstsq(jac, r, rcond=None)[0]
        step[0] = float(np.clip(step[0], -0.3 * d, 0.3 * d))
        if two:
            step[1] = float(np.clip(step[1], -0.25 * wall_m, 0.25 * wall_m))
        d_new, p_new = max(1e-6, d + step[0]), (max(0.0, p + step[1]) if two else p)
        got_new, runs_new = moments(d_new, p_new)
        taken = np.array([d_new - d, p_new - p])[:len(step)]
        if np.linalg.norm(taken) > 0:  # Broyden: the Jacobian corrected along the step taken
            dr = (got_new - got) / scale
            jac = jac + np.outer(dr - jac @ taken, taken) / float(taken @ taken)
        d, p, got, runs = d_new, p_new, got_new, runs_new
        norm = float(np.linalg.norm(resid(got)))
        if norm < best[0]:
            best = (norm, d, p, got, runs)
    _, d, p, got, runs = best
    pipe = sc.pipeline
    why = (f"the rollout has more slots ({slots}) than a step's answers ({batch})" if slots > batch else
           f"AReaL's admission cap ((eta + version + 1) x batch, eta {getattr(pipe, 'admission_eta', None)}) idles "
           f"slots beyond (eta - 1) x batch = {(getattr(pipe, 'admission_eta', 1) - 1) * batch}")
    err = (got - target[:len(got)]) / target[:len(got)]
    return _StreamFit(values={"decode_tokens_per_s": float(d), "gen_overhead_s": float(p)},
                      wall=np.mean([r["step_s"].to_numpy() for r in runs], axis=0),
                      wait=np.mean([r["gen_s"].to_numpy() for r in runs], axis=0),
                      error=np.array([err[0], err[1] if two else math.nan]), rounds=done, why=why,
                      closed=(float(v["decode_tokens_per_s"]), float(v["gen_overhead_s"])), level=level(m, p),
                      slots=slots, batch=batch)


def pause_on_critical_path(sc: Scenario) -> bool:
    """Whether a fully asynchronous base's rows have the rollout's pause at each weight load on their
    critical path, which the streaming closed form (the slots decode a row's tokens back to back, pausing
    once per sync, and the trainer takes the longer of that and its own work) misses: a lag bound
    (``max_lag_samples``) whose places free only at a parameter sync (``lag_release="sync"``: verl's fully
    async rollouter restarts its count of started prompts only there, verl-project/verl
    ``verl/experimental/fully_async_policy/fully_async_rollouter.py``, ``reset_staleness``). The rollout
    then stops at the bound until the sync, pauses ``rollout_pause_s`` when it loads the weights, and only
    then starts the next window's answers, while the trainer works through the few answers left in the
    queue: whenever the pause outlasts that work the trainer waits, and the row's wall time grows with the
    pause, one for one. AReaL's serial rule (``admission_eta`` 0) is a batch pipeline, not this."""
    p = sc.pipeline
    return (isinstance(p, FullyAsync) and p.admission_eta != 0 and p.max_lag_samples is not None
            and p.lag_release == "sync")


class _Incomplete(Exception):
    """A simulated run of :func:`_rows_simulated` did not complete the metrics' steps (it stalled, or
    its horizon ran out): the candidate gives no rows to compare."""


#: Simulated runs of :func:`_pause_inference` share :data:`_STREAM_SEEDS`; its search stops when the
#: simulated rows' mean wall time is within this share of the metrics' (or after :data:`_PAUSE_ROUNDS`).
_PAUSE_TOL = 0.002
_PAUSE_ROUNDS = 10


@dataclass
class _PauseFit:
    """What :func:`_pause_inference` found: ``values`` (``decode_tokens_per_s``, ``gen_overhead_s``), the
    simulated rows' wall time at them (per row, the mean over :data:`_STREAM_SEEDS`), ``error`` (the
    simulated rows' mean wall time over the metrics' - 1), ``rounds`` (candidates simulated), ``slope``
    (the simulated mean wall time per row's change per second of ``gen_overhead_s``, from the last secant), the
    metrics' mean wall time ``measured``, and ``held``: the pause was left at the closed form's because
    the rows' wall time does not depend on it (the trainer sets the pace) or the closed form's already
    gives it."""

    values: dict[str, float]
    wall: np.ndarray
    error: float
    rounds: int
    slope: float
    measured: float
    held: bool
    why: str = ""

    def pause_for(self, rows: pl.DataFrame) -> float:
        """A bootstrap draw's generation overhead per step: the fit's, moved by the draw's mean wall time
        per row against all rows' over :attr:`slope` (kept when the pause was held)."""
        p = self.values["gen_overhead_s"]
        if self.held:
            return p
        wall, _ = _stream_rows(rows)
        return float(max(0.0, p + (float(np.mean(wall)) - self.measured) / self.slope))


def _rows_simulated(sc: Scenario, v: dict[str, float], k: int, logged: np.ndarray, waits: bool = False) -> Any:
    """Wall time of each metrics row (``k`` steps, its logged step in ``logged``) in rollsim's run of
    the fully asynchronous ``sc`` at the values ``v``, its lengths drifting as fitted (policy version
    ``t`` of rollsim step ``s0 + t`` draws ``mu + drift * (s0 + t)``), the mean over
    :data:`_STREAM_SEEDS`. A table starting at logged step 0 is compared with the run from its start
    (the first row holds the pipeline's fill, as the run's did); a later start with the rows after one
    simulated row more (the fill). ``waits``: ``(wall, wait)``, ``wait`` each row's summed trainer wait
    for samples (the steps' ``wait_s``, as verl's fully async trainer times ``timing_s/gen``)."""
    from rollsim.simulation import simulate

    rows = len(logged)
    fill = float(logged[0]) <= 0.0
    s0 = 0.0 if fill else float(logged[0]) * k - k
    want = (rows + (0 if fill else 1)) * k
    cand = _apply(sc, v, s0, k).replace(length_drift=LengthDrift("exp", rate=float(np.clip(v["lengths.drift"], -1.0,
                                                                                             100.0))))
    L = cand.lengths
    assert isinstance(L, LogNormal)
    top = min(L.max_tokens, math.exp(L.mu + 3 * L.sigma) * math.exp(max(0.0, v["lengths.drift"]) * want))
    per = (cand.rollout_pause_s + cand.train_step_s + cand.weight_sync_s + top / cand.decode_tokens_per_s
           + (cand.train_s_per_token + cand.logprob_s_per_token) * top * cand.batch_size)
    out, out_wait = [], []
    for seed in _STREAM_SEEDS:
        horizon = min(1e12, 2.0 * per * (want + 2))
        for _ in range(6):
            st = simulate(cand.replace(seed=seed, horizon_s=horizon), record="summary").steps
            st = st.filter(pl.col("completed"))
            if st.height >= want:
                break
            horizon = min(1e12, horizon * 4)
        ends = st["end_s"].to_numpy()[k - 1::k][:want // k]
        if len(ends) < want // k:
            raise _Incomplete(f"{st.height} of {want} steps")
        wall = np.diff(np.concatenate([[0.0], ends]))
        out.append(wall if fill else wall[1:])
        w = st["wait_s"].to_numpy()[:want].reshape(-1, k).sum(axis=1)
        out_wait.append(w if fill else w[1:])
    if waits:
        return np.mean(out, axis=0), np.mean(out_wait, axis=0)
    return np.mean(out, axis=0)


def _pause_inference(sc: Scenario, v: dict[str, float], m: pl.DataFrame, cap: float, k: int,
                     logged: np.ndarray) -> _PauseFit:
    """The rollout's pause per weight load of a fully asynchronous run whose rows have it on their
    critical path (:func:`pause_on_critical_path`), and the decode speed with it: the pause is the one
    whose simulated rows (:func:`_rows_simulated`) take the metrics' mean wall time per row, with the
    speed at each candidate the slope of the rows' generation time through that pause (:func:`fit`'s
    ``gen_overhead``: ``gen_s`` holds the pause once per row, so its intercept and slope trade off and
    the generation time alone cannot place the pause, while the wall time grows with it one for one).
    Secant steps, bracketed once the sign changes, from the closed form's pause; the pause stays in
    [0, the shortest row's ``gen_s``] (it is part of every row's generation). When the closed form's
    pause already gives the wall time, or the wall time does not move with the pause (the trainer sets
    the pace), the closed form's values are kept (``held``)."""
    wall_m, _ = _stream_rows(m)
    target = float(np.mean(wall_m))
    # seconds of row per second of overhead per step when the pause is on the critical path in full:
    # rollout_pause_s is the overhead x k (x 1 for rows of one step, _apply), k / sync_every of them per row
    full = (k if k > 1 else 1) * k / sc.sync_every
    top = float(np.min(m["gen_s"].to_numpy())) / k               # the pause's bound, per step
    def at(a: float) -> tuple[float, dict[str, float], np.ndarray]:
        got = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_overhead=a)
        vals = {**v, "decode_tokens_per_s": got["decode_tokens_per_s"], "gen_overhead_s": got["gen_overhead_s"]}
        wall = _rows_simulated(sc, vals, k, logged)
        return float(np.mean(wall)) - target, vals, wall

    a0 = float(min(v["gen_overhead_s"], top))
    try:
        f0, vals0, wall0 = at(a0)
    except _Incomplete as e:
        return _PauseFit(values={"decode_tokens_per_s": float(v["decode_tokens_per_s"]),
                                 "gen_overhead_s": float(v["gen_overhead_s"])}, wall=np.full(m.height, math.nan),
                         error=math.inf, rounds=1, slope=float(full), measured=target, held=True, why=str(e))
    best = (abs(f0), a0, f0, vals0, wall0)
    rounds, slope = 1, float(full)
    lo: tuple[float, float] | None = None  # (overhead, f) with f < 0
    hi: tuple[float, float] | None = None  # with f > 0
    a, f = a0, f0
    flat = True
    while abs(f) > _PAUSE_TOL * target and rounds < _PAUSE_ROUNDS:
        if f < 0:
            lo = (a, f)
        else:
            hi = (a, f)
        if lo is not None and hi is not None:
            # regula falsi inside the bracket
            nxt = lo[0] - lo[1] * (hi[0] - lo[0]) / (hi[1] - lo[1])
        else:
            nxt = a - f / slope
        nxt = float(np.clip(nxt, 0.0, top))
        if nxt == a:
            break  # at a bound of the pause
        try:
            f_new, vals, wall = at(nxt)
        except _Incomplete:
            break  # the candidate's run did not complete its steps: the best so far is kept
        rounds += 1
        if abs(f_new - f) > 0.25 * _PAUSE_TOL * target:
            flat = False
            slope = float(max((f_new - f) / (nxt - a), 0.05 * full))
        a, f = nxt, f_new
        if abs(f) < best[0]:
            best = (abs(f), a, f, vals, wall)
    _, a, f, vals, wall = best
    held = a == a0 or flat
    if flat:
        a, f, vals, wall = a0, f0, vals0, wall0
    return _PauseFit(values={"decode_tokens_per_s": float(vals["decode_tokens_per_s"]),
                             "gen_overhead_s": float(vals["gen_overhead_s"])},
                     wall=wall, error=f / target, rounds=rounds, slope=slope, measured=target, held=held)


#: :func:`_wait_pause_profile`: pauses per weight load tried on its first grid (over [0, the shortest
#: row's wall time]), and on its second (over the first grid's accepted steps, one step either side)
_PROFILE_GRID = (13, 13)
#: The profile's 95 % bound: a pause is kept when ``rows x log(SSE / SSE_min) <= 3.84`` (chi-square, one
#: degree of freedom: the pause; the speed is solved at each)
_PROFILE_CHI2 = 3.84


@dataclass
class _WaitPauseFit:
    """What :func:`_wait_pause_profile` found: ``values`` at the best pause, the simulated rows' ``wall`` and
    ``wait`` there, ``error`` (their mean wall time over the metrics' - 1), and the profile: every pause
    tried with its speed, residual sum of squares and whether it is inside the 95 % bound
    (``points``: ``(pause per load, decode_tokens_per_s, sse, kept)``)."""

    values: dict[str, float]
    wall: np.ndarray
    wait: np.ndarray
    error: float
    points: list[tuple[float, float, float, bool]]
    k: int

    def kept(self) -> list[tuple[float, float, float, bool]]:
        return [p for p in self.points if p[3]]

    def draw(self, rng: np.random.Generator, rows: int) -> dict[str, float]:
        """A bootstrap draw's ``decode_tokens_per_s`` and ``gen_overhead_s``: one profile point inside the
        bound, picked with its likelihood's weight ``exp(-rows/2 x log(SSE / SSE_min))``."""
        kept = self.kept()
        sse = np.array([p[2] for p in kept])
        w = np.exp(-0.5 * rows * np.log(sse / sse.min()))
        i = int(rng.choice(len(kept), p=w / w.sum()))
        return {"decode_tokens_per_s": kept[i][1], "gen_overhead_s": kept[i][0] / self.k}


def _wait_pause_profile(sc: Scenario, v: dict[str, float], m: pl.DataFrame, k: int,
                        logged: np.ndarray) -> _WaitPauseFit:
    """The rollout's pause per weight load and the decode speed of a fully asynchronous run whose
    ``gen_s`` is the trainer's wait (verl's ``timing_s/gen``) and whose rows have the pause on their
    critical path (:func:`pause_on_critical_path`). Neither the wait nor the wall time is the rollout's
    generation: a slower rollout and a shorter pause give rows of about the same wall time, so the two
    are profiled. For each pause on a grid the speed is the one whose simulated rows
    (:func:`_rows_simulated`) take the metrics' mean wall time per row (secant steps on its log), and the
    pause's residual sum of squares is that of every row's wall time and wait against the simulated
    rows'; the pauses inside the 95 % profile bound (:data:`_PROFILE_CHI2`) are kept, refined on a
    second grid over them. The values are the best pause's; their intervals span the kept points. Used on
    rows of several steps (one per sync, ``k`` > 1); the intervals hold the length fit fixed."""
    wall_m, wait_m = m["step_s"].to_numpy(), m["gen_s"].to_numpy()
    target = float(np.mean(wall_m))
    rows = len(wall_m)
    cache: dict[float, tuple[float, float, np.ndarray, np.ndarray]] = {}

    def vals(p: float, d: float) -> dict[str, float]:
        return {**v, "decode_tokens_per_s": d, "gen_overhead_s": p / k}

    def at(p: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        # the speed whose simulated rows take the metrics' mean wall time at the pause p, and the rows' SSE
        if p in cache:
            return cache[p]
        best: tuple[float, float, float, np.ndarray, np.ndarray] | None = None  # (f, sse, speed, wall, wait)
        pts: list[tuple[float, float]] = []
        x = math.log(max(v["decode_tokens_per_s"], 1e-3))
        for _ in range(10):
            try:
                wall, wait = _rows_simulated(sc, vals(p, math.exp(x)), k, logged, waits=True)
            except _Incomplete:
                x += 0.5  # too slow a rollout to finish within the horizon: faster
                continue
            f = float(np.mean(wall)) / target - 1.0
            if best is None or abs(f) < abs(best[0]):
                best = (f, float(np.sum((wall - wall_m) ** 2 + (wait - wait_m) ** 2)), math.exp(x), wall, wait)
            if abs(f) <= _PAUSE_TOL:
                break
            pts.append((x, f))
            if len(pts) >= 2 and abs(pts[-1][1] - pts[-2][1]) > 1e-9:
                (xa, fa), (xb, fb) = pts[-2], pts[-1]
                x = float(np.clip(xb - fb * (xb - xa) / (fb - fa), xb - 1.0, xb + 1.0))
            else:
                x = x + (0.2 if f > 0 else -0.2)  # a faster rollout shortens the rows
        if best is None:
            raise _Incomplete(f"no simulated run at a pause of {p:g} s completed the rows")
        out = (best[1] if abs(best[0]) <= STREAM_MISFIT else math.inf, best[2], best[3], best[4])
        cache[p] = out
        return out

    top = float(np.min(wall_m))
    n1, n2 = _PROFILE_GRID
    grid = np.linspace(0.0, top, n1)
    for p in grid:
        at(float(p))

    def bound() -> tuple[float, list[float]]:
        sse_min = min(c[0] for c in cache.values())
        kept = [p for p, c in cache.items() if math.isfinite(c[0]) and rows * math.log(c[0] / sse_min) <= _PROFILE_CHI2]
        return sse_min, kept

    sse_min, kept = bound()
    if math.isfinite(sse_min):
        step = top / (n1 - 1)
        for p in np.linspace(max(0.0, min(kept) - step), min(top, max(kept) + step), n2):
            at(float(p))
        sse_min, kept = bound()
    p_best = min(cache, key=lambda q: cache[q][0])
    sse, d, wall, wait = cache[p_best]
    points = sorted((p, c[1], c[0], p in kept) for p, c in cache.items())
    return _WaitPauseFit(values={"decode_tokens_per_s": d, "gen_overhead_s": p_best / k}, wall=wall, wait=wait,
                         error=float(np.mean(wall)) / target - 1.0, points=points, k=k)


def _slime_wait(m: pl.DataFrame) -> pl.DataFrame:
    """``m`` with slime's fully asynchronous ``perf/rollout_time`` turned into the trainer's wait: the
    time from the trainer taking the previous batch (when ``train_async.py`` calls ``generate``) to this
    batch, less the previous row's training phases (``train_s`` and ``logprob_s``, the first row its
    own), at least 0."""
    train = m["train_s"].to_numpy() + (m["logprob_s"].to_numpy() if "logprob_s" in m.columns else 0.0)
    prev = np.concatenate([train[:1], train[:-1]])
    return m.with_columns(pl.Series("gen_s", np.maximum(0.0, m["gen_s"].to_numpy() - prev)))


_WAIT_HEAD = {
    "verl": ("gen_s: timing_s/gen of a fully asynchronous run is the trainer's wait for samples (verl "
             "fully_async_trainer.py times 'gen' around _get_samples_from_queue), not the rollout's generation"),
    "areal": ("gen_s: timeperf/rollout of an asynchronous AReaL run (max_head_offpolicyness > 0) is the trainer's "
              "wait for samples (AReaL areal/trainer/rl_trainer.py times 'rollout' around actor.prepare_batch, "
              "which takes a batch from the running rollout), not the rollout's generation"),
    "slime": ("gen_s: perf/rollout_time of slime's fully asynchronous rollout is the time from the trainer taking "
              "the previous batch to this batch's collection from the running worker (slime/ray/rollout.py times "
              "RolloutManager.generate; train_async.py calls it as the trainer takes the previous batch), not the "
              "rollout's generation: the trainer's wait is read as perf/rollout_time less the previous row's "
              "training phases"),
}


def _notes(m: pl.DataFrame, reading: str | None, stream: _StreamFit | None = None,
           misfit: _StreamFit | None = None) -> tuple[str, ...]:
    """The calibration's caveats for this base and table (:attr:`Calibrated.notes`); ``reading``:
    :func:`_gen_reading`; ``stream``: the simulated fit of :func:`_stream_inference`, when it was used;
    ``misfit``: the simulated fit, when it was tried and left out (its rows' mean wall time off by over
    :data:`STREAM_MISFIT`)."""
    if reading is None:
        return ()
    _, paced = _stream_rows(m)
    if misfit is not None:
        return (f"{_WAIT_HEAD[reading]}: {misfit.why}, so the slots do not decode the rows' tokens back to back, but no "
                f"simulated run matched the rows (the best one's mean wall time per row off by {misfit.error[0]:+.1%}, "
                f"over {STREAM_MISFIT:.0%}): decode_tokens_per_s and gen_overhead_s are the closed form's, fitted on the "
                f"{int(paced.sum())} of {len(paced)} rows the rollout paced as if they did, and unreliable",)
    if stream is not None:
        return (f"{_WAIT_HEAD[reading]}: {stream.why}, so the slots do not decode the rows' tokens back to back: "
                f"decode_tokens_per_s and gen_overhead_s are those whose simulated run (rollsim, {len(_STREAM_SEEDS)} "
                f"seeds) gives the metrics' mean wall time per row and its slope on the tokens per slot "
                f"({stream.rounds} rounds, mean wall time off by {stream.error[0]:+.1%}"
                + (f", slope by {stream.error[1]:+.1%}" if math.isfinite(stream.error[1]) else "; no length drift: the "
                   "slope not fitted, gen_overhead_s kept") + "); "
                f"the rollout paced {int(paced.sum())} of {len(paced)} rows",)
    head = (f"{_WAIT_HEAD[reading]}: decode_tokens_per_s and gen_overhead_s are fitted on the wall time of the rows "
            f"the rollout paced (the trainer waited over {WAIT_SHARE:.0%} of the row)")
    if paced.sum() >= 3:
        return (f"{head}: {int(paced.sum())} of {len(paced)} rows",)
    if paced.any():
        return (f"{head}: {int(paced.sum())} of {len(paced)} rows, too few for the overhead (set to 0)",)
    return (f"{head}: none, the trainer set the pace in every row; decode_tokens_per_s is a lower bound (the "
            "slowest speed that kept up) and gen_overhead_s 0",)


def _profile_notes(sc: Scenario, reading: str | None, profile: _WaitPauseFit | None,
                   why: str | None) -> tuple[str, ...]:
    """How :func:`_wait_pause_profile` placed the speed and the pause (:attr:`Calibrated.notes`)."""
    assert reading is not None
    p = sc.pipeline
    assert isinstance(p, FullyAsync)
    head = (f"{_WAIT_HEAD[reading]}, and the rollout stops at max_lag_samples {p.max_lag_samples} until each parameter "
            "sync frees the trained answers' places (lag_release='sync'), then pauses at the weight load: the pause is "
            "on the rows' critical path")
    if profile is None:
        return (f"{head}, but {why}: decode_tokens_per_s and gen_overhead_s are the closed form's (the rows the rollout "
                "paced, without the pause), and unreliable",)
    kept = profile.kept()
    pauses, speeds = [q[0] for q in kept], [q[1] for q in kept]
    return (f"{head}: the rows do not separate decode_tokens_per_s from gen_overhead_s (the pause; a slower rollout "
            "with a shorter pause gives rows of about the same wall time and waits): profiled over the pause "
            f"({len(profile.points)} pauses simulated, rollsim, {len(_STREAM_SEEDS)} seeds, the speed at each the one "
            "whose rows take the metrics' mean wall time), within the 95 % bound the pause per weight load spans "
            f"{min(pauses):.3g}-{max(pauses):.3g} s and decode_tokens_per_s {min(speeds):.3g}-{max(speeds):.3g} "
            f"tokens/s; the values are the best fit's (mean wall time off by {profile.error:+.1%}), their intervals "
            "the range, and the bootstrap draws take pairs from it, so the what-if intervals carry it; "
            "step_s_predicted and gen_s_predicted are the simulated rows'",)


def _pause_notes(sc: Scenario, k: int, pause: _PauseFit | None, misfit: _PauseFit | None) -> tuple[str, ...]:
    """How :func:`_pause_inference` placed the rollout's pause (:attr:`Calibrated.notes`), when it ran."""
    fit_ = pause or misfit
    if fit_ is None:
        return ()
    p = sc.pipeline
    assert isinstance(p, FullyAsync)
    every = f"every {sc.sync_every} steps" if sc.sync_every > 1 else "every step"
    head = (f"rollout_pause_s: the rollout stops at max_lag_samples {p.max_lag_samples} until each parameter sync "
            f"frees the trained answers' places (lag_release='sync'), then pauses at the weight load ({every}): "
            "the pause is on the rows' critical path")
    if misfit is not None:
        what = (f"the simulated run at the fitted values completed {misfit.why}" if misfit.why else
                f"no simulated run matched the rows (the best one's mean wall time per row off by {misfit.error:+.1%}, "
                f"over {STREAM_MISFIT:.0%})")
        return (f"{head}, but {what}: decode_tokens_per_s and gen_overhead_s are the closed form's, fitted on gen_s "
                "alone (where the pause and the speed trade off), and unreliable",)
    assert pause is not None
    if pause.held:
        return (f"{head} when it outlasts the trainer's work on what is left in the queue; here the rows' wall time "
                f"does not tell it (the simulated rows, {len(_STREAM_SEEDS)} seeds, at gen_s's intercept within "
                f"{pause.error:+.1%} of the rows' mean wall time, and not moved by the pause: the trainer set the "
                "pace): gen_overhead_s kept, gen_s's intercept, where the pause and the speed trade off; "
                "step_s_predicted is the simulated rows'",)
    return (f"{head}: gen_overhead_s is the one whose simulated rows (rollsim, {len(_STREAM_SEEDS)} seeds, "
            f"{pause.rounds} candidates) take the rows' mean wall time (off by {pause.error:+.1%}), "
            "decode_tokens_per_s the slope of gen_s through it; step_s_predicted is the simulated rows'",)


def _hardware(base: Any, model: Any, gpu: Any, backend: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
    """The model, GPU, backend and training options a GPU-count change is rescaled with (from the
    arguments, else the base's deployment, else the config's model path)."""
    from rollsim.hardware import training
    from rollsim.hardware.specs import accelerator
    from rollsim.hardware.specs import model as model_spec

    dep = getattr(base, "deployment", None)
    spec = model_spec(model) if model is not None else getattr(dep, "model", None)
    if spec is None and getattr(base, "model", None):
        try:
            spec = model_spec(str(base.model))
        except ValueError:
            spec = None  # a model rollsim does not know: the 1 / GPUs rule (noted by whatif)
    acc = accelerator(gpu) if gpu is not None else getattr(dep, "gpu", None)
    b = backend if backend is not None else getattr(dep, "train_backend", None) or getattr(base, "train_backend",
                                                                                           None) or "fsdp2"
    if b not in training.BACKENDS:
        raise invalid("backend", f"must be one of {', '.join(training.BACKENDS)}, got {b!r}")
    opts = dict(getattr(dep, "train_options", {}) or {}) if options is None else options
    if not isinstance(opts, dict):
        raise invalid("train_options", f"must be a dict of rollsim.hardware.training.train_step_s arguments, got "
                      f"{type(opts).__name__}")
    bad = sorted(set(opts) & {"tokens", "sequences", "lengths", "train_gpus", "backend", "recompute_logprob"})
    if bad:
        raise invalid("train_options", f"{bad[0]!r} is set by rollsim.whatif (from the calibrated run), not here")
    import inspect

    known = [k for k in inspect.signature(training.train_step_s).parameters if k not in
             ("model", "accelerator", "tokens", "sequences", "lengths", "train_gpus", "backend", "recompute_logprob")]
    unknown = sorted(k for k in opts if k not in known)
    if unknown:
        raise invalid("train_options", f"unknown argument {unknown[0]!r} (allowed: {', '.join(known)})"
                                       f"{training.option_hint(unknown[0], known)}")
    return {"model": spec, "gpu": acc, "backend": b, "options": opts}


#: The last path segments of a metric's statistics (``response_length/min`` beside ``response_length/max``).
_STATISTICS = frozenset({"min", "max", "mean", "std", "median", "clip_ratio", "sum", "count"})


def _sibling_statistic(given: str, wanted: str) -> bool:
    """``given`` is another statistic of ``wanted``'s quantity (``response_length/min`` for
    ``response_length/max``): a metric of its own, not a misspelling."""
    g, _, gs = given.rpartition("/")
    w, _, ws = wanted.rpartition("/")
    return bool(g) and g == w and gs != ws and gs in _STATISTICS


def _shifted(values: dict[str, float], shift: tuple[float, float]) -> dict[str, float]:
    """``values`` with ``lengths.mu`` and ``lengths.sigma`` moved by ``shift`` (the over-sampling
    length bias of :func:`_length_bias`)."""
    if shift == (0.0, 0.0):
        return values
    return {**values, "lengths.mu": values["lengths.mu"] + shift[0],
            "lengths.sigma": max(0.005, values["lengths.sigma"] + shift[1])}


def _trained_lengths(sc: Scenario, mu: float, sigma: float, cap: float, batches: int = 6) -> dict[str, np.ndarray]:
    """Per-batch mean, longest and clip ratio of the answers a batch pipeline with over-sampling
    trains, simulated (at 1 token/s, no training cost) for lengths ``LogNormal(mu, sigma)``; the
    first batch (no answers carried over) is left out."""
    from rollsim.simulation import simulate

    L = sc.lengths
    corr = L.group_correlation if isinstance(L, LogNormal) else 0.0
    p = sc.pipeline
    batch = Synchronous(over_sampling=p.over_sampling, keep_partial=p.keep_partial) if isinstance(p, OffPolicy) \
        else Synchronous()
    one = sc.replace(pipeline=batch, decode_tokens_per_s=1.0, rollout_pause_s=0.0, train_step_s=0.0,
                     train_s_per_token=0.0, logprob_s_per_token=0.0, weight_sync_s=0.0, prefill_tokens_per_s=math.inf,
                     lengths=LogNormal(mu=float(np.clip(mu, -100, 100)), sigma=float(min(10.0, sigma)), max_tokens=cap,
                                       group_correlation=corr),
                     horizon_s=min(1e12, (batches + 1.5) * cap * (1 + sc.batch_size / sc.rollout_slots)), seed=12345)
    s = simulate(one, record="samples").samples
    done = (s.filter(pl.col("trained_step") >= 1).group_by("trained_step")
            .agg(pl.col("length_tokens").mean().alias("mean"), pl.col("length_tokens").max().alias("max"),
                 (pl.col("length_tokens") >= cap).mean().alias("clip"), pl.len().alias("n"))
            .sort("trained_step").head(batches))
    return {k: done[k].to_numpy().astype(float) for k in ("trained_step", "mean", "max", "clip", "n")}


def _length_bias(sc: Scenario, v: dict[str, float], ref: float, cap: float, rounds: int = 8) -> tuple[float, float]:
    """The shift of ``(lengths.mu, lengths.sigma)`` from the fit on the trained answers to the
    generated distribution, by indirect inference: simulate the trained answers of a candidate
    distribution, fit them as the logged ones were fitted, and move the candidate until that fit
    matches the logged one (``sigma`` by secant steps: the trained answers' spread grows more slowly
    than the generated one's). The shift is found at the reference step and applied to every step."""
    want_mu, want_sigma = v["lengths.mu"] + v["lengths.drift"] * ref, v["lengths.sigma"]
    mu, sigma = want_mu, want_sigma
    prev: tuple[float, float] | None = None
    for _ in range(rounds):
        t = _trained_lengths(sc, mu, sigma, cap)
        if len(t["mean"]) < 2:
            break
        got = fit_lengths(t["mean"], t["max"], t["clip"], t["n"], cap, t["trained_step"])
        got_mu, got_sigma = got["mu"] + got["drift"] * float(t["trained_step"].mean()), got["sigma"]
        slope = 1.0
        if prev is not None and abs(sigma - prev[0]) > 1e-9:
            slope = float(np.clip((got_sigma - prev[1]) / (sigma - prev[0]), 0.1, 2.0))
        step_mu, step_sigma = want_mu - got_mu, (want_sigma - got_sigma) / slope
        prev = (sigma, got_sigma)
        mu += step_mu
        sigma = float(np.clip(sigma + step_sigma, 0.005, 10.0))
        if abs(step_mu) < 1e-3 and abs(step_sigma) < 1e-3:
            break
    return mu - want_mu, sigma - want_sigma


def _makespans(sc: Scenario, v: dict[str, float], steps: np.ndarray, cap: float) -> np.ndarray:
    """Tokens of the longest slot of each step's batch (its generation time at 1 token/s per
    sequence), simulated with the step's fitted lengths; the mean of 3 batches."""
    from rollsim.simulation import simulate

    out = []
    for t in steps.tolist():
        lengths = LogNormal(mu=float(np.clip(v["lengths.mu"] + v["lengths.drift"] * t, -100, 100)),
                            sigma=float(v["lengths.sigma"]), max_tokens=cap)
        p = sc.pipeline
        batch = Synchronous(over_sampling=p.over_sampling) if isinstance(p, OffPolicy) else Synchronous()
        one = sc.replace(pipeline=batch, lengths=lengths, decode_tokens_per_s=1.0, rollout_pause_s=0.0,
                         train_step_s=0.0, train_s_per_token=0.0, logprob_s_per_token=0.0, weight_sync_s=0.0,
                         prefill_tokens_per_s=math.inf, horizon_s=min(1e12, 3.5 * cap * (1 + sc.batch_size / sc.rollout_slots)),
                         seed=int(t) % 2**32)
        st = simulate(one, record="summary").steps
        ends = st["end_s"].to_numpy()[:3]
        out.append(float(np.mean(np.diff(np.concatenate([[0.0], ends])))) if len(ends) else float(cap))
    return np.array(out)


#: Column names :func:`synthetic_metrics` writes for each framework (generic column -> the framework's
#: metric, the first name :data:`FRAMEWORK_METRICS` reads); AReaL logs sequence lengths with the
#: prompt (``ppo_actor/seq_len/*``, ``ppo_actor/prompt_len/avg``) and no step total.
_SYNTHETIC_NAMES: dict[str, dict[str, str]] = {
    "verl": {"step": "training/global_step", "step_s": "timing_s/step", "gen_s": "timing_s/gen",
             "train_s": "timing_s/update_actor", "sync_s": "timing_s/update_weights",
             "response_mean": "response_length/mean", "response_max": "response_length/max",
             "response_clip_ratio": "response_length/clip_ratio"},
    "areal": {"step": "step", "gen_s": "timeperf/rollout", "train_s": "timeperf/train_step",
              "sync_s": "timeperf/update_weights", "response_clip_ratio": "ppo_actor/no_eos_ratios/avg"},
    "slime": {"step": "rollout/step", "step_s": "perf/step_time", "gen_s": "perf/rollout_time",
              "train_s": "perf/actor_train_time", "sync_s": "perf/update_weights_time",
              "response_mean": "rollout/response_len/mean", "response_max": "rollout/response_len/max",
              "response_clip_ratio": "rollout/truncated_ratio"},
}


def _named(df: pl.DataFrame, framework: str, prompt_tokens: float) -> pl.DataFrame:
    """Generic synthetic columns renamed as ``framework`` logs them (:data:`_SYNTHETIC_NAMES`)."""
    if framework == "generic":
        return df
    names = _SYNTHETIC_NAMES[framework]
    out = df.select([pl.col(c).alias(names[c]) for c in df.columns if c in names])
    if framework == "areal":
        out = out.with_columns(*((df[g] + prompt_tokens).alias(n) for g, n in _AREAL_SEQ.items()),
                               pl.lit(float(prompt_tokens)).alias(_AREAL_PROMPT))
    return out


def _streamed_rows(sc: Scenario, steps: int, drift: float, framework: str, noisy: Any,
                   cap: float) -> list[dict[str, float]]:
    """Per-step rows of one run of the fully asynchronous ``sc`` (lengths drifting by ``exp(drift)``
    per policy version), steps 1 .. ``steps`` (step 0, the pipeline's fill, left out), with ``gen_s``
    what ``framework``'s timer records (:data:`ASYNC_GEN_METRICS`): the trainer's wait (verl, AReaL),
    or for slime the time from the trainer taking the previous batch to this batch's last answer
    (none when the batch was ready before). ``train_s`` is the step's training, ``step_s`` wait +
    training + sync; ``cap`` the length limit, tokens."""
    from rollsim.simulation import simulate

    one = (cap / sc.decode_tokens_per_s + sc.rollout_pause_s + sc.train_step_s + sc.weight_sync_s
           + (sc.train_s_per_token + sc.logprob_s_per_token) * cap * sc.batch_size) * (1.0 + sc.batch_size / sc.rollout_slots)
    extra: dict[str, Any] = {"length_drift": LengthDrift("exp", rate=float(drift))} if drift else {}
    run = sc.replace(horizon_s=min(1e12, (steps + 3) * one), **extra)
    res = simulate(run, record="samples")
    st = res.steps.filter(pl.col("completed")).head(steps + 1)
    if st.height < steps + 1:
        raise invalid("steps", f"the fully asynchronous run completed {st.height} of {steps + 1} steps")
    start, end, wait = (st[c].to_numpy() for c in ("start_s", "end_s", "wait_s"))
    s = res.samples.filter(pl.col("trained_step").is_not_null())
    ready = (s.group_by("trained_step").agg(pl.col("finish_s").max()).sort("trained_step")
             .filter(pl.col("trained_step") <= steps)["finish_s"].to_numpy())
    rows = []
    for t in range(1, steps + 1):
        lens = s.filter(pl.col("trained_step") == t)["length_tokens"].to_numpy()
        upd = float(end[t] - start[t]) - sc.weight_sync_s
        if framework == "slime":
            gen = float(max(0.0, ready[t] - start[t - 1]))
        else:
            gen = float(wait[t])
        g, tr, sy = noisy(gen), noisy(upd), noisy(sc.weight_sync_s)
        w = noisy(float(wait[t]))
        rows.append(dict(step=t, step_s=w + tr + sy, gen_s=g, train_s=tr, sync_s=sy, response_mean=float(lens.mean()),
                         response_max=float(lens.max()), response_clip_ratio=float(np.mean(lens >= cap))))
    return rows


def synthetic_metrics(scenario: Scenario, steps: int, *, drift: float = 0.0, noise: float = 0.0,
                      seed: int = 0, framework: str = "generic") -> pl.DataFrame:
    """Per-step metrics of a run simulated by rollsim, for checking :func:`calibrate`: step ``t``
    draws its answers from ``scenario.lengths`` with ``mu + drift * t``; ``noise`` multiplies every
    timing by ``1 + noise * N(0, 1)``.

    A batch pipeline is run as :class:`Synchronous` (one run per step: ``gen_s`` is the batch's
    generation). With ``framework`` ``"verl"``, ``"areal"`` or ``"slime"``, the columns carry that
    framework's metric names, and a :class:`FullyAsync` scenario (AReaL's with ``admission_eta``
    other than 0) is run as it is, in one run whose length drift is ``LengthDrift("exp", drift)``
    (policy version ``t`` draws ``mu + drift * t``), its first step (the fill) left out, and
    ``gen_s`` is what that framework's timer records there (:data:`ASYNC_GEN_METRICS`): the
    trainer's wait for verl and AReaL, slime's time from the trainer taking the previous batch to
    this one (see :func:`_slime_wait`).

    Parameters
    ----------
    scenario : Scenario
        Must have LogNormal lengths; a batch pipeline is replaced by :class:`Synchronous` (keeping its
        ``over_sampling`` and ``keep_partial``).
    steps : int
        Steps to generate, in [3, 100000].
    drift : float
        Growth of ``lengths.mu`` per step, log tokens.
    noise : float
        Relative timing noise (standard deviation), in [0, 1].
    seed : int
        Seed of the runs and of the noise.
    framework : {"generic", "verl", "areal", "slime"}
        Whose metric names (and, for a fully asynchronous scenario, whose timer semantics).

    Returns
    -------
    polars.DataFrame
        Generic columns ``step``, ``step_s``, ``gen_s``, ``train_s``, ``sync_s``, ``response_mean``,
        ``response_max``, ``response_clip_ratio``, or the framework's names for them
        (:data:`_SYNTHETIC_NAMES`; AReaL: ``ppo_actor/seq_len/avg`` and ``/max`` with the scenario's
        ``prompt_tokens``, ``ppo_actor/prompt_len/avg``, no step total).

    Raises
    ------
    ScenarioError
        ``lengths: ...`` for lengths that are not LogNormal, ``steps: ...``, ``noise: ...`` or
        ``framework: ...`` out of range; ``framework: ...`` for verl with a fully asynchronous
        scenario whose ``sync_every`` is not 1 (verl logs one row per sync, summed over its steps).
    """
    from rollsim.simulation import simulate

    lengths = scenario.lengths
    if not isinstance(lengths, LogNormal):
        raise invalid("lengths", "synthetic_metrics needs LogNormal lengths")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 3 <= steps <= 100_000:
        raise invalid("steps", f"must be an integer in [3, 100000], got {steps!r}")
    if not (isinstance(noise, (int, float)) and 0 <= noise <= 1):
        raise invalid("noise", f"must be in [0, 1], got {noise!r}")
    if not isinstance(framework, str) or framework not in ("generic", *_SYNTHETIC_NAMES):
        raise invalid("framework", f"must be one of generic, {', '.join(_SYNTHETIC_NAMES)}, got {framework!r}")
    rng = np.random.default_rng(seed)

    def noisy(x: float) -> float:
        return float(x * max(0.0, 1.0 + noise * rng.standard_normal()))

    cap = lengths.max_tokens
    sc0 = scenario
    p = sc0.pipeline
    if framework != "generic" and isinstance(p, FullyAsync) and not (framework == "areal" and p.admission_eta == 0):
        if framework == "verl" and sc0.sync_every != 1:
            raise invalid("framework", f"verl's fully async trainer logs one row per sync, summed over its "
                          f"{sc0.sync_every} steps (sync_every): generate with sync_every = 1")
        out = _named(pl.DataFrame(_streamed_rows(sc0, steps, drift, framework, noisy, cap)), framework, sc0.prompt_tokens)
        if framework == "verl":
            # the fully async trainer times its sync (timing_s/param_sync) outside timing_s/step
            out = out.rename({"timing_s/update_weights": "timing_s/param_sync"}).with_columns(
                pl.col("timing_s/step") - pl.col("timing_s/param_sync"))
        return out
    one = (cap / sc0.decode_tokens_per_s + sc0.rollout_pause_s + sc0.train_step_s + sc0.weight_sync_s
           + (sc0.train_s_per_token + sc0.logprob_s_per_token) * cap * sc0.batch_size)
    rows = []
    for t in range(steps):
        batch = (Synchronous(over_sampling=p.over_sampling, keep_partial=p.keep_partial) if isinstance(p, OffPolicy)
                 else Synchronous())
        sc = sc0.replace(pipeline=batch, seed=seed * 100_003 + t, horizon_s=min(1e12, 2.5 * one),
                         **{"lengths.mu": float(lengths.mu + drift * t)})
        res = simulate(sc)
        st = res.steps
        s = res.samples.filter(pl.col("trained_step") == 1)["length_tokens"].to_numpy()
        gen = float(st["start_s"][1] - st["end_s"][0])
        train = float(st["end_s"][1] - st["start_s"][1]) - sc.weight_sync_s
        g, tr, sy = noisy(gen), noisy(train), noisy(sc.weight_sync_s)
        rows.append(dict(step=t, step_s=g + tr + sy, gen_s=g, train_s=tr, sync_s=sy, response_mean=float(s.mean()),
                         response_max=float(s.max()), response_clip_ratio=float(np.mean(s >= cap))))
    return _named(pl.DataFrame(rows), framework, sc0.prompt_tokens)


#: Physically plausible ranges of a calibration's values, ``name: (low, high, unit)``; a fit outside
#: them gets a :class:`~rollsim.CalibrationPlausibilityWarning` (:func:`plausibility_notes`). Wide on
#: purpose (they catch wrong units, not slow clusters): one sequence decodes at tens to a few hundred
#: tokens/s on a current GPU (under 1 would be a 1T-parameter model on one GPU's memory bandwidth at
#: large batch; over 5000 beyond speculative decoding of a small model at batch 1); a weight sync
#: takes seconds to minutes even for 1T-parameter models (Kimi K2's weights reach thousands of inference
#: GPUs in about 20 s: the MoonshotAI/checkpoint-engine README), an hour is two orders of magnitude slower; a step, a fixed
#: training cost, or a generation overhead over a day (an hour for the overhead) is not a training
#: step; a training cost over 1 s per token is 10**4 to 10**6 times any dense or MoE model's.
PLAUSIBLE: dict[str, tuple[float, float, str]] = {
    "decode_tokens_per_s": (1.0, 5000.0, "tokens/s per sequence"),
    "weight_sync_s_per_sync": (0.0, 3600.0, "s per sync"),
    "step_s": (0.0, 86400.0, "s per step (measured mean)"),
    "gen_overhead_s": (0.0, 3600.0, "s per step"),
    "train_step_s": (0.0, 86400.0, "s per step"),
    "train_s_per_token": (0.0, 1.0, "s / token"),
}

#: How a plausibility note starts (``Calibrated.notes``; ``rollsim calibrate`` prints it as a warning).
IMPLAUSIBLE = "implausible fit:"


def plausibility_notes(values: dict[str, float], step_s: np.ndarray, steps_per_row: int = 1) -> tuple[str, ...]:
    """The calibration's values outside :data:`PLAUSIBLE` as one note (empty when none), also warned as a
    :class:`~rollsim.CalibrationPlausibilityWarning`. ``step_s``: the measured time of each metrics row
    (``steps_per_row`` steps, one sync). When every time-like value would be plausible at a thousandth
    (and the speed at 1000x), the note asks whether the timings are in milliseconds. The decode speed
    of a fit whose generation time does not grow with the tokens (1e9: no speed fitted) is not checked."""
    from rollsim.errors import CalibrationPlausibilityWarning

    k = steps_per_row
    step = float(np.mean(step_s)) / k if len(step_s) else 0.0
    got = {"decode_tokens_per_s": values["decode_tokens_per_s"], "weight_sync_s_per_sync": values["weight_sync_s"] * k,
           "step_s": step, "gen_overhead_s": values["gen_overhead_s"], "train_step_s": values["train_step_s"],
           "train_s_per_token": values["train_s_per_token"]}

    if got["decode_tokens_per_s"] >= 1e9:  # fit()'s mark of a generation time that does not grow with the tokens
        del got["decode_tokens_per_s"]     # (all overhead): no speed was fitted

    def outside(name: str, v: float) -> bool:
        lo, hi, _ = PLAUSIBLE[name]
        return not (math.isfinite(v) and lo <= v <= hi)

    bad = [name for name, v in got.items() if outside(name, v)]
    if not bad:
        return ()
    parts = []
    for name in bad:
        lo, hi, unit = PLAUSIBLE[name]
        rng = f"[{lo:g}, {hi:g}]" if lo > 0 else f"at most {hi:g}"
        parts.append(f"{name} = {got[name]:.3g} {unit} (plausible: {rng})")
    scaled = {name: v * 1000.0 if name == "decode_tokens_per_s" else v / 1000.0 for name, v in got.items()}
    ms = not any(outside(name, v) for name, v in scaled.items())
    hint = (" Timings in milliseconds? Every fitted time is about 1000x a plausible one: rollsim reads seconds "
            "(divide the timing columns by 1000)." if ms else
            " Check the metrics' units and that they are the run the config describes.")
    note = (f"{IMPLAUSIBLE} {'; '.join(parts)}, though the fit may match the rows closely.{hint}")
    warnings.warn(CalibrationPlausibilityWarning(note), stacklevel=4)  # _calibrate, calibrate, its caller
    return (note,)
