"""Figures of runs, comparisons and sweeps (matplotlib, imported lazily).

Install with ``pip install 'rollsim[plot]'``. Every function takes data (a :class:`~rollsim.Result`,
polars frames, or a sweep frame), an optional matplotlib ``ax`` to draw into, and an optional
``path`` (``.png``, ``.svg`` or ``.pdf``) to save to, and returns the matplotlib
:class:`~matplotlib.figure.Figure`. Figures are built with the object-oriented API (no pyplot, no
global state), so they render with the Agg backend anywhere, including headless machines.

Runs and comparisons
    :func:`staleness_by_length`  binned mean staleness and drop rate by answer length (the chapter's
                                 key finding: long answers are staler and more often dropped).
    :func:`learning_by_length`   beside the staleness, what it costs the learner per length bin under
                                 a drift model (:mod:`rollsim.learning`): clip, truncation, mask rates.
    :func:`slot_timeline`        which rollout slot generates with which policy version, over time.
    :func:`utilization`          fraction of rollout slots busy per time bin.
    :func:`step_breakdown`       a training step's wall time: trainer wait, training, weight sync;
                                 next to it the generation span of a batch.

Sweeps (one row per (scenario, seed); varied fields as columns, summary metrics as columns, ``seed``)
    :func:`sweep_heatmap`        a metric over two varied fields, mean over seeds.
    :func:`sweep_lines`          a metric over one varied field, mean and confidence band over seeds.
    :func:`learning_tradeoff`    what the learner pays against throughput: clip fraction and length
                                 gap against trained tokens per second, one point per configuration.

The frames behind the figures are public too: :func:`utilization_frame`, :func:`step_breakdown_frame`,
:func:`sweep_stats`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from rollsim.errors import invalid
from rollsim.frames import generation_span_s, utilization_frame
from rollsim.scenario import Scenario
from rollsim.simulation import Result
from rollsim.sweeps.stats import aggregate

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "staleness_by_length",
    "learning_by_length",
    "slot_timeline",
    "utilization",
    "step_breakdown",
    "sweep_heatmap",
    "sweep_lines",
    "learning_tradeoff",
    "utilization_frame",
    "step_breakdown_frame",
    "sweep_stats",
    "sweep_fields",
    "sweep_metrics",
    "save",
    "check_save_path",
    "DEFAULT_EDGES",
]

#: Default answer-length bin edges, tokens (the chapter's "< 1K" and "> 8K" are the outer bins).
DEFAULT_EDGES = (1000, 2000, 4000, 8000, 16000)

_SAVE_EXT = (".png", ".svg", ".pdf")
_SCENARIO_FIELDS = frozenset(f.name for f in dataclasses.fields(Scenario))


# --------------------------------------------------------------------------------------------------
# plumbing


def _mpl() -> Any:
    try:
        import matplotlib
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError("rollsim.plot needs matplotlib: pip install 'rollsim[plot]'") from e
    return matplotlib


def _figure(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes]:
    """The figure and axes to draw into: ``ax``'s, or a new Agg-rendered figure (no pyplot)."""
    _mpl()
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=size, layout="constrained")
        return fig, fig.add_subplot()
    if not isinstance(ax, Axes):
        raise invalid("ax", f"must be a matplotlib Axes or None, got {type(ax).__name__}")
    return cast(Figure, ax.figure), ax


def check_save_path(path: str | os.PathLike[str], name: str = "path") -> str:
    """``path`` as a string if it ends in an extension :func:`save` writes (``.png``, ``.svg``, ``.pdf``);
    else a :class:`rollsim.ScenarioError` naming ``name`` (the CLI passes its flag, ``--out``), so that a
    command refuses it before any work."""
    p = os.fspath(path)
    if os.path.splitext(p)[1].lower() not in _SAVE_EXT:
        raise invalid(name, f"must end in one of {', '.join(_SAVE_EXT)}, got {p!r}")
    return p


def save(fig: Figure, path: str | os.PathLike[str], *, dpi: float = 120) -> None:
    """Saves ``fig`` to ``path``; the format follows the extension.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    path : str or path-like
        Ends in ``.png``, ``.svg`` or ``.pdf``; parent directories are created.
    dpi : float
        Dots per inch for PNG (the figures are sized in inches, about 8 x 4.5).

    Raises
    ------
    ValueError
        ``path`` has another extension.
    """
    p = check_save_path(path)
    parent = os.path.dirname(p)
    if parent:
        os.makedirs(parent, exist_ok=True)
    fig.savefig(p, dpi=dpi, facecolor="white")


def _finish(fig: Figure, path: str | os.PathLike[str] | None) -> Figure:
    if path is not None:
        save(fig, path)
    return fig


@dataclasses.dataclass(frozen=True)
class _Run:
    label: str
    samples: pl.DataFrame | None
    steps: pl.DataFrame | None
    summary: Mapping[str, Any]
    scenario: Scenario | None


def _one(label: str, x: Any, param: str) -> _Run:
    if isinstance(x, Result):
        samples = x._samples  # may be None for record="summary"
        return _Run(label, samples, x.steps, x.summary or {}, x.scenario)
    if isinstance(x, pl.DataFrame):
        if "length_tokens" in x.columns and "slot" in x.columns:
            return _Run(label, x, None, {}, None)
        if "wait_s" in x.columns and "start_s" in x.columns:
            return _Run(label, None, x, {}, None)
        raise invalid(param, f"frame for {label!r} is neither a samples frame nor a steps frame "
                             f"(columns {x.columns})")
    raise invalid(param, f"must be a rollsim.Result or a polars DataFrame (or a list / dict of them), "
                         f"got {type(x).__name__}")


def _runs(results: Any, param: str = "results") -> list[_Run]:
    """Normalizes a Result, a frame, a sequence of them, or a label -> run mapping."""
    if isinstance(results, (Result, pl.DataFrame)):
        items: list[tuple[str, Any]] = [("", results)]
    elif isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    elif isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        items = [(_default_label(v, i), v) for i, v in enumerate(results)]
    else:
        raise invalid(param, f"must be a rollsim.Result, a polars DataFrame, or a list / dict of them, "
                             f"got {type(results).__name__}")
    if not items:
        raise invalid(param, "is empty: give at least one result")
    return [_one(label, v, param) for label, v in items]


def _default_label(v: Any, i: int) -> str:
    if isinstance(v, Result) and v.scenario is not None:
        p = v.scenario.pipeline
        return f"{type(p).__name__}" + "".join(
            f" {f.name}={getattr(p, f.name)}" for f in dataclasses.fields(p) if getattr(p, f.name) is not None)
    return f"run {i}"


def _need_samples(run: _Run, param: str) -> pl.DataFrame:
    if run.samples is None:
        raise invalid(param, f"{run.label or 'the result'} has no per-sample rows: "
                             f"run simulate(..., record='samples') or pass the samples frame")
    missing = {"length_tokens", "start_s", "finish_s", "version_start", "slot", "status"} - set(run.samples.columns)
    if missing:
        raise invalid(param, f"samples frame lacks columns {sorted(missing)}")
    return run.samples


def _end_s(run: _Run, samples: pl.DataFrame | None) -> float:
    end = run.summary.get("end_s") if run.summary else None
    if end is not None and math.isfinite(float(end)) and float(end) > 0:
        return float(end)
    if samples is not None and samples.height:
        m = samples.select(pl.max_horizontal(pl.col("finish_s").max(), pl.col("start_s").max())).item()
        return float(m or 0.0) or 1.0
    if run.steps is not None and run.steps.height:
        return float(cast(float, run.steps["end_s"].max()))
    return 1.0


def _slots(run: _Run, samples: pl.DataFrame, rollout_slots: int | None) -> int:
    if rollout_slots is not None:
        if isinstance(rollout_slots, bool) or not isinstance(rollout_slots, (int, np.integer)) or rollout_slots < 1:
            raise invalid("rollout_slots", f"must be a positive integer or None, got {rollout_slots!r}")
        return int(rollout_slots)
    if run.scenario is not None:
        return run.scenario.rollout_slots
    return int(cast(int, samples["slot"].max())) + 1 if samples.height else 1


def _time_unit(end_s: float) -> tuple[float, str]:
    """(seconds per unit, label) so the time axis reads naturally."""
    if end_s <= 900:
        return 1.0, "s"
    if end_s <= 6 * 3600:
        return 60.0, "min"
    return 3600.0, "h"


def _k(x: float) -> str:
    return f"{x / 1000:g}K" if x >= 1000 else f"{x:g}"


def _length_labels(edges: Sequence[float]) -> list[str]:
    e = list(edges)
    return [f"<{_k(e[0])}"] + [f"{_k(a)}–{_k(b)}" for a, b in zip(e, e[1:])] + [f"≥{_k(e[-1])}"]


def _colors(n: int) -> list[Any]:
    import matplotlib

    cmap = matplotlib.colormaps["tab10"]
    return [cmap(i % 10) for i in range(n)]


# --------------------------------------------------------------------------------------------------
# staleness by answer length


def staleness_by_length(
    results: Any,
    edges: Sequence[float] = DEFAULT_EDGES,
    *,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Mean staleness (bars, left axis) and drop rate (lines, right axis) per answer-length bin.

    The chapter's key finding made visible: in a fully asynchronous pipeline long answers lag more
    policy versions, and with a staleness cap they are the ones dropped. Bins and statistics are those
    of :meth:`rollsim.Result.staleness_by_length` (samples consumed by the trainer: trained or
    dropped; staleness in policy versions over trained samples; drop rate = dropped / consumed).

    Parameters
    ----------
    results : Result, samples DataFrame, or a list / dict of them
        One run, or several to compare (e.g. the four pipelines of :func:`rollsim.compare`); a dict
        maps legend labels to runs. Runs need per-sample rows (``record="samples"``).
    edges : sequence of float
        Strictly increasing bin edges, tokens; the outer bins are open (``<edges[0]``,
        ``≥edges[-1]``).
    ax : matplotlib Axes, optional
        Draw into this axes (a twin axis is added on its right); default: a new 8 x 4.5 in figure.
    path : str or path-like, optional
        Also save the figure there (``.png``, ``.svg``, ``.pdf``).
    title : str, optional

    Returns
    -------
    matplotlib.figure.Figure
        One bar container per run on the left axes; one drop-rate line per run that dropped any
        sample on the twin axes.

    Raises
    ------
    ValueError
        ``results`` of the wrong type, empty, or without per-sample rows; ``edges`` not strictly
        increasing; ``path`` with an unsupported extension.
    """
    runs = _runs(results)
    e = [float(x) for x in edges] if isinstance(edges, Sequence) and not isinstance(edges, str) else None
    if not e or any(not math.isfinite(x) for x in e) or sorted(set(e)) != e:
        raise invalid("edges", f"must be a non-empty strictly increasing sequence of token counts, got {edges!r}")
    raw_labels = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
    tables = []
    for run in runs:
        df = Result(cast(Any, run.scenario), dict(run.summary), cast(Any, run.steps),  # None: a frame, no run
                    _need_samples(run, "results")).staleness_by_length(e)
        full = pl.DataFrame({"bin": raw_labels}).join(df, on="bin", how="left", maintain_order="left")
        tables.append(full)

    fig, ax = _figure(ax, (8, 4.5))
    n, x = len(runs), np.arange(len(raw_labels))
    width = 0.8 / n
    colors = _colors(n)
    for i, (run, t) in enumerate(zip(runs, tables)):
        y = t["staleness_mean"].fill_null(np.nan).to_numpy()
        label = run.label or "mean staleness"
        if np.isfinite(y).any() and np.nanmax(y) == 0:
            label += " (staleness 0)"        # its bars have no height
        ax.bar(x - 0.4 + width * (i + 0.5), y, width, color=colors[i], label=label)
    ax.set_xticks(x, _length_labels(e))
    ax.set_xlabel("answer length (tokens)")
    ax.set_ylabel("mean staleness (policy versions), bars")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)

    tw = ax.twinx()
    dropped_any = False
    for i, (run, t) in enumerate(zip(runs, tables)):
        rate = t["drop_rate"].fill_null(np.nan).to_numpy()
        if np.nansum(rate) > 0:
            dropped_any = True
            c = "#d62728" if n == 1 else _darker(colors[i])    # visible over the run's own bars
            tw.plot(x, rate, color=c, marker="o", markeredgecolor="white", linestyle="--", linewidth=1.8,
                    label=f"{run.label} drop rate" if run.label else "drop rate")
    tw.set_ylim(0, max(0.05, float(np.nanmax([np.nanmax(t["drop_rate"].fill_null(np.nan).to_numpy(), initial=0)
                                              for t in tables])) * 1.15))
    tw.yaxis.set_major_formatter(_percent())
    tw.set_ylabel("drop rate (dashed line)" if n == 1 else "drop rate (dashed lines)")
    if not dropped_any:
        # the note sits in a band above the tallest bar (it was drawn over it), on a white box
        tallest = max((float(np.nanmax(t["staleness_mean"].fill_null(np.nan).to_numpy(), initial=0.0))
                       for t in tables), default=0.0)
        if math.isfinite(tallest) and tallest > 0:
            ax.set_ylim(0, max(ax.get_ylim()[1], tallest * 1.15))
        tw.text(0.99, 0.97, "no samples dropped", transform=tw.transAxes, ha="right", va="top",
                fontsize=8, color="0.4", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.5})
    handles, labels = ax.get_legend_handles_labels()
    h2, l2 = tw.get_legend_handles_labels()
    if n > 1 or h2:
        ax.legend(handles + h2, labels + l2, loc="upper left", fontsize=8, frameon=False)
    ax.set_title(title if title is not None else "Staleness and drops by answer length")
    return _finish(fig, path)


def learning_by_length(
    results: Any,
    edges: Sequence[float] = DEFAULT_EDGES,
    *,
    model: Any = None,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Token-weighted staleness (bars, left axis) and, under a drift model, the active PPO clip
    fraction (solid), the token TIS truncation rate (dotted) and the sequence mask rate (dash-dot)
    per answer-length bin (lines, right axis): :func:`rollsim.learning.learning`'s ``by_length``.

    Parameters
    ----------
    results : Result, or a list / dict of them
        Runs recorded with ``record="samples"`` (the statistics need their segments).
    edges : sequence of float
        Strictly increasing bin edges, tokens.
    model : rollsim.learning.DriftModel, optional
        Default: the fitted defaults. The statistics are a model; the staleness is simulated.
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        ``results`` not Results with per-sample rows; bad ``edges``; ``path`` with an unsupported
        extension.
    """
    from rollsim.learning import learning

    if isinstance(results, Result):
        items: list[tuple[str, Any]] = [("", results)]
    elif isinstance(results, Mapping):
        items = [(str(k), v) for k, v in results.items()]
    elif isinstance(results, Sequence) and not isinstance(results, (str, bytes)):
        items = [(_default_label(v, i), v) for i, v in enumerate(results)]
    else:
        raise invalid("results", f"must be a rollsim.Result or a list / dict of them, got {type(results).__name__}")
    if not items or not all(isinstance(v, Result) for _, v in items):
        raise invalid("results", "must be one or more rollsim.Result (recorded with record='samples')")
    e = [float(x) for x in edges] if isinstance(edges, Sequence) and not isinstance(edges, str) else None
    if not e or any(not math.isfinite(x) for x in e) or sorted(set(e)) != e:
        raise invalid("edges", f"must be a non-empty strictly increasing sequence of token counts, got {edges!r}")
    raw_labels = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
    tables = [pl.DataFrame({"bin": raw_labels}).join(learning(r, model, edges=e).by_length, on="bin", how="left",
                                                      maintain_order="left") for _, r in items]
    fig, ax = _figure(ax, (8, 4.5))
    n, x = len(items), np.arange(len(raw_labels))
    width, colors = 0.8 / n, _colors(n)
    tw = ax.twinx()
    for i, ((label, _), t) in enumerate(zip(items, tables)):
        ax.bar(x - 0.4 + width * (i + 0.5), t["staleness_mean"].fill_null(np.nan).to_numpy(), width,
               color=colors[i], alpha=0.6, label=f"{label} staleness" if label else "token staleness")
        c = _darker(colors[i])
        for col, style, what in (("pg_clipfrac", "-", "clip"), ("tis_truncated", ":", "TIS truncated"),
                                 ("seq_masked", "-.", "sequence masked")):
            tw.plot(x, t[col].fill_null(np.nan).to_numpy(), color=c, linestyle=style, marker="o", markersize=3,
                    label=f"{label} {what}" if label else what)
    ax.set_xticks(x, _length_labels(e))
    ax.set_xlabel("answer length (tokens)")
    ax.set_ylabel("token-weighted staleness (versions), bars")
    ax.set_ylim(bottom=0)
    tw.set_ylim(0, 1)
    tw.yaxis.set_major_formatter(_percent())
    tw.set_ylabel("fraction (model), lines")
    h1, l1 = ax.get_legend_handles_labels()
    h2, l2 = tw.get_legend_handles_labels()
    ax.legend(h1 + h2, l1 + l2, loc="upper left", fontsize=7, frameon=False)
    ax.set_title(title if title is not None else "What staleness costs the learner, by answer length (model)")
    return _finish(fig, path)


def _darker(color: Any, f: float = 0.6) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    return tuple(f * v for v in to_rgb(color))  # type: ignore[return-value]


def _legend_below(ax: Axes, ncol: int) -> None:
    """A legend under the x axis label (offset in inches, whatever the axes' height)."""
    fig = ax.figure
    h_in = max(ax.get_position().height * cast("Figure", fig).get_figheight(), 0.5)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.5 / h_in), ncol=ncol, fontsize=8, frameon=False)


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(xmax=1.0, decimals=0)


# --------------------------------------------------------------------------------------------------
# slot timeline and utilization


def slot_timeline(
    result: Any,
    *,
    max_slots: int = 64,
    time_range_s: tuple[float, float] | None = None,
    rollout_slots: int | None = None,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Which rollout slot is busy with which policy version, over time.

    One row per slot; each sample is a bar from its start to its finish (or to the end of the run
    while in flight), colored by ``version_start`` (the policy version it was generated with).
    Dropped samples are outlined in red; thin grey vertical lines mark the end of each training step
    (when a new policy version becomes available). Gaps are idle slots: in synchronous pipelines the
    whole pool waits for the longest answers of a batch. Bars are rasterized so SVGs stay small.

    Parameters
    ----------
    result : Result or samples DataFrame
        One run with per-sample rows.
    max_slots : int
        Show at most this many slots, evenly spaced over the pool (>= 1); big pools are sampled.
    time_range_s : (float, float), optional
        Show only this window, simulated seconds (start < end).
    rollout_slots : int, optional
        Pool size when ``result`` is a bare frame (default: the scenario's, else largest slot + 1).
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        One ``BrokenBarHCollection``/``PolyCollection`` per shown slot (plus one for dropped samples),
        and a colorbar of policy versions.

    Raises
    ------
    ValueError
        ``result`` of the wrong type or without per-sample rows; ``max_slots`` < 1;
        ``time_range_s`` not two finite increasing numbers.
    """
    runs = _runs(result, "result")
    if len(runs) != 1:
        raise invalid("result", f"must be one run, got {len(runs)}")
    run = runs[0]
    samples = _need_samples(run, "result")
    if isinstance(max_slots, bool) or not isinstance(max_slots, (int, np.integer)) or max_slots < 1:
        raise invalid("max_slots", f"must be a positive integer, got {max_slots!r}")
    end = _end_s(run, samples)
    t0, t1 = 0.0, end
    if time_range_s is not None:
        try:
            t0, t1 = (float(v) for v in time_range_s)
        except (TypeError, ValueError):
            raise invalid("time_range_s", f"must be (start_s, end_s), got {time_range_s!r}") from None
        if not (math.isfinite(t0) and math.isfinite(t1) and t0 < t1):
            raise invalid("time_range_s", f"must be two finite numbers, start < end, got {time_range_s!r}")
    n_slots = _slots(run, samples, rollout_slots)
    shown = np.unique(np.linspace(0, n_slots - 1, min(n_slots, int(max_slots))).round().astype(np.int64))

    import matplotlib
    from matplotlib.colors import BoundaryNorm
    from matplotlib.cm import ScalarMappable

    scale, unit = _time_unit(t1 - t0 if time_range_s is not None else end)
    df = (
        samples.filter(pl.col("slot").is_in(shown.tolist()))
        .with_columns(pl.col("finish_s").fill_null(end).alias("_f"))
        .filter((pl.col("_f") > t0) & (pl.col("start_s") < t1))
        .with_columns(pl.col("start_s").clip(t0, t1).alias("_s"), pl.col("_f").clip(t0, t1).alias("_f"))
    )
    vmax = int(cast(int, samples["version_start"].max()) or 0)
    bounds = np.arange(-0.5, vmax + 1.5, 1.0)
    cmap = matplotlib.colormaps["viridis"]
    norm = BoundaryNorm(bounds, cmap.N)

    fig, ax = _figure(ax, (9, 4.8))
    row = {int(s): i for i, s in enumerate(shown)}
    bar_h = 0.85
    for slot, part in df.sort("slot", "_s").group_by("slot", maintain_order=True):
        y = row[int(slot[0])]
        s = part["_s"].to_numpy() / scale
        w = (part["_f"].to_numpy() / scale) - s
        ax.broken_barh(list(zip(s, w)), (y - bar_h / 2, bar_h),
                       facecolors=cmap(norm(part["version_start"].to_numpy())), edgecolors="white",
                       linewidth=0.25, rasterized=True)
    drop = df.filter(pl.col("dropped"))
    if drop.height:
        for slot, part in drop.group_by("slot"):
            y = row[int(slot[0])]
            s = part["_s"].to_numpy() / scale
            w = part["_f"].to_numpy() / scale - s
            ax.broken_barh(list(zip(s, w)), (y - bar_h / 2, bar_h), facecolors="none", edgecolors="red",
                           linewidth=0.7, rasterized=True)
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor="none", edgecolor="red", label="dropped (too stale)")],
                  loc="upper right", fontsize=8, framealpha=0.9)
    if run.steps is not None and run.steps.height:
        for t in run.steps["end_s"].to_numpy():
            if t0 < t < t1:
                ax.axvline(t / scale, color="0.6", linewidth=0.5, zorder=0)
    ax.set_xlim(t0 / scale, t1 / scale)
    ax.set_ylim(-0.6, len(shown) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("rollout slot" + (f" ({len(shown)} of {n_slots} shown)" if len(shown) < n_slots else ""))
    ticks = np.unique(np.linspace(0, len(shown) - 1, min(len(shown), 8)).round().astype(int))
    ax.set_yticks(ticks, [str(int(shown[i])) for i in ticks])
    from matplotlib.ticker import MaxNLocator

    cb = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, pad=0.01)
    cb.set_label("policy version at start")
    cb_ticks = [t for t in MaxNLocator(integer=True, nbins=8).tick_values(0, vmax) if 0 <= t <= vmax]
    cb.set_ticks(cb_ticks, labels=[f"{t:.0f}" for t in cb_ticks])
    default = "Slot timeline" + (f": {run.label}" if run.label else "") + " (color: policy version)"
    ax.set_title(title if title is not None else default)
    return _finish(fig, path)


def _same_line(a: np.ndarray, b: np.ndarray, *, tol: float = 0.01, share: float = 0.9) -> bool:
    """Whether two utilization series draw one line: as many bins, and at least ``share`` of them
    within ``tol`` (a fraction of the slots) of each other."""
    return len(a) == len(b) and len(a) > 0 and float(np.mean(np.abs(a - b) <= tol)) >= share


def _run_name(run: Any, k: int) -> str:
    return run.label or f"run {k + 1}"


def utilization(
    results: Any,
    *,
    bin_s: float | None = None,
    rollout_slots: int | None = None,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Rollout utilization over time: the fraction of slots busy per time bin, one step line per run.

    Synchronous pipelines show a sawtooth (the pool drains while each batch waits for its longest
    answers, then idles during training); fully asynchronous ones stay near 100%. The legend gives
    each run's overall utilization over the whole run. A line that lies on an earlier run's (90 %
    of its bins within 1 % of it) is drawn over it, the earlier one wider and paler beneath, and its
    legend entry names the line it lies on.

    Parameters
    ----------
    results : Result, samples DataFrame, or a list / dict of them
        Runs with per-sample rows.
    bin_s : float, optional
        Bin width, simulated seconds (> 0); default: the longest run's duration / 150.
    rollout_slots : int, optional
        Pool size for bare frames (default: the scenario's, else largest slot + 1).
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        One line per run.

    Raises
    ------
    ValueError
        As :func:`utilization_frame`; ``results`` of the wrong type or without per-sample rows.
    """
    runs = _runs(results)
    ends = [_end_s(r, _need_samples(r, "results")) for r in runs]
    longest = max(ends)
    if bin_s is None:
        bin_s = longest / 150
    scale, unit = _time_unit(longest)
    fig, ax = _figure(ax, (8, 4.0))
    colors = _colors(len(runs))
    styles = ["-", "--", ":", "-."]
    lines = []
    for run, end in zip(runs, ends):
        sam = _need_samples(run, "results")
        u = utilization_frame(sam, rollout_slots=_slots(run, sam, rollout_slots), end_s=end, bin_s=bin_s)
        lines.append((u["utilization"].to_numpy(), np.append(u["start_s"].to_numpy(), u["end_s"][-1]) / scale,
                      (u["end_s"] - u["start_s"]).to_numpy()))
    # a line that runs on an earlier one (fully async and its cap both at 100 %) would hide it: the earlier
    # line is drawn wider and paler beneath, and the legend says which line each lies on
    on = [[j for j in range(k) if _same_line(lines[j][0], lines[k][0])] for k in range(len(lines))]
    for k, (run, (util, edges, w), c) in enumerate(zip(runs, lines, colors)):
        overall = float((util * w).sum() / w.sum())
        label = f"{run.label + ': ' if run.label else ''}{overall:.0%} overall"
        if on[k]:
            label += f" (on {', '.join(_run_name(runs[j], j) for j in on[k])}'s line)"
        under = sum(k in o for o in on)   # later lines drawn over this one
        ax.stairs(util, edges, color=c, linewidth=1.4 + 2.6 * under, alpha=0.45 if under else 1.0, label=label,
                  baseline=None, linestyle=styles[k % len(styles)] if not under else "-", zorder=2 + k)
    ax.set_ylim(0, 1.05)
    ax.set_xlim(0, longest / scale)
    ax.yaxis.set_major_formatter(_percent())
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel(f"slots busy (per {bin_s:.0f} s bin)")
    ax.grid(alpha=0.3)
    _legend_below(ax, ncol=2)
    ax.set_title(title if title is not None else "Rollout utilization over time")
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------
# step-time breakdown


def step_breakdown_frame(results: Any, *, weight_sync_s: float | None = None) -> pl.DataFrame:
    """Mean wall time of a completed training step, split by what the trainer was doing.

    The trainer's cycle from one step's end to the next: ``wait_s`` (idle, waiting for a full batch
    of samples: generation on the critical path), then the optional log-prob recompute phase, then
    training, then the weight sync (together ``end_s - start_s`` of the steps frame). Next to it,
    the generation span of a batch: from the first start to the last finish of the samples trained
    in the step (needs per-sample rows; in pipelines that overlap generation with training it
    exceeds the wait).

    Parameters
    ----------
    results : Result, steps DataFrame, or a list / dict of them
    weight_sync_s : float, optional
        Seconds of each step spent on the weight sync (>= 0); default: the scenario's
        ``weight_sync_s`` when known, else unknown (training then includes the sync, and
        ``sync_s`` is null).

    Returns
    -------
    polars.DataFrame
        One row per run: ``run`` str, ``steps`` (completed), ``wait_s``, ``logprob_s`` (the
        scenario's ``logprob_s_per_token`` x the step's tokens; null without a scenario),
        ``train_s`` (the rest of the step), ``sync_s`` (null if unknown), ``cycle_s`` (sum),
        ``generation_s`` (null without samples), all mean seconds per step.

    Raises
    ------
    ValueError
        ``results`` of the wrong type or without a steps frame; negative or non-finite
        ``weight_sync_s``.
    """
    if weight_sync_s is not None and (isinstance(weight_sync_s, bool) or not isinstance(
            weight_sync_s, (int, float, np.integer, np.floating)) or not (
            math.isfinite(weight_sync_s) and weight_sync_s >= 0)):
        raise invalid("weight_sync_s", f"must be a finite number of seconds >= 0 or None, got {weight_sync_s!r}")
    rows = []
    for run in _runs(results):
        if run.steps is None:
            raise invalid("results", f"{run.label or 'the result'} has no steps frame")
        st = run.steps.filter(pl.col("completed")) if "completed" in run.steps.columns else run.steps
        sync = weight_sync_s if weight_sync_s is not None else (
            run.scenario.weight_sync_s if run.scenario is not None else None)
        dur = (st["end_s"] - st["start_s"]).to_numpy()
        wait = st["wait_s"].to_numpy()
        gen = None
        if run.samples is not None and st.height and "trained_step" in run.samples.columns:
            gen = generation_span_s(run.samples, st)
        mean_dur = float(dur.mean()) if dur.size else float("nan")
        s = None if sync is None else min(float(sync), mean_dur) if dur.size else float(sync)
        logprob = None
        if run.scenario is not None:
            logprob = run.scenario.logprob_s_per_token * float(cast(float, st["tokens"].mean())) if st.height else 0.0
        rows.append({
            "run": run.label,
            "steps": int(st.height),
            "wait_s": float(wait.mean()) if wait.size else float("nan"),
            "logprob_s": logprob,
            "train_s": mean_dur - (s or 0.0) - (logprob or 0.0),
            "sync_s": s,
            "cycle_s": (float(wait.mean()) + mean_dur) if dur.size else float("nan"),
            "generation_s": gen,
        })
    return pl.DataFrame(rows, schema={"run": pl.String, "steps": pl.Int64, "wait_s": pl.Float64,
                                      "logprob_s": pl.Float64, "train_s": pl.Float64, "sync_s": pl.Float64,
                                      "cycle_s": pl.Float64, "generation_s": pl.Float64})


def step_breakdown(
    results: Any,
    *,
    weight_sync_s: float | None = None,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Where a training step's wall time goes, per pipeline: horizontal stacked bars.

    For each run, the upper bar stacks the trainer's mean step cycle (seconds): waiting for a full
    batch (generation on the critical path), training, weight sync (see
    :func:`step_breakdown_frame`); the lower, hatched bar is the mean generation span of a batch
    (first start to last finish of its samples), which overlaps training in asynchronous pipelines.

    Parameters
    ----------
    results : Result, steps DataFrame, or a list / dict of them
        E.g. ``{name: simulate(sc.replace(pipeline=p)) for name, p in rollsim.simulation.CHAPTER_PIPELINES}``.
    weight_sync_s : float, optional
        As in :func:`step_breakdown_frame`.
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        Bar containers: trainer wait, training, weight sync (when known), generation (when
        samples are available).

    Raises
    ------
    ValueError
        As :func:`step_breakdown_frame`.
    """
    runs = _runs(results)
    df = step_breakdown_frame(results, weight_sync_s=weight_sync_s)
    fig, ax = _figure(ax, (8, max(3.2, 1.6 + 0.9 * df.height)))
    y = np.arange(df.height, dtype=float)
    h = 0.38
    labels = [r.label or f"run {i}" for i, r in enumerate(runs)]
    if len(runs) == 1 and not runs[0].label:  # one unnamed run: its pipeline when its scenario is known
        sc = getattr(results, "scenario", None) if isinstance(results, Result) else None
        labels = [repr(sc.pipeline) if sc is not None else "run"]
    wait, train = df["wait_s"].to_numpy(), df["train_s"].to_numpy()
    sync_known = df["sync_s"].null_count() < df.height
    sync_shown = sync_known and float(cast(float, df["sync_s"].fill_null(0.0).max())) > 0
    sync = df["sync_s"].fill_null(0.0).to_numpy()
    logprob = df["logprob_s"].fill_null(0.0).to_numpy()
    ax.barh(y - h / 2, wait, h, color="#d9d9d9", edgecolor="0.5", label="trainer waits for a batch")
    if float(logprob.max(initial=0.0)) > 0:
        ax.barh(y - h / 2, logprob, h, left=wait, color="#9467bd", label="log-prob recompute")
    ax.barh(y - h / 2, train, h, left=wait + logprob, color="#1f77b4",
            label="training" if sync_known else "training (incl. weight sync)")
    if sync_shown:
        ax.barh(y - h / 2, sync, h, left=wait + logprob + train, color="#ff7f0e", label="weight sync")
    gen = df["generation_s"]
    if gen.null_count() < df.height:
        ax.barh(y + h / 2, gen.fill_null(np.nan).to_numpy(), h, color="white", edgecolor="#2ca02c",
                hatch="///", label="generation span of a batch (first start to last finish)")
    for yi, c in zip(y, df["cycle_s"].to_numpy()):
        if math.isfinite(c):
            ax.text(c, yi - h / 2, f" {c:.0f} s/step", va="center", fontsize=8)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel("mean seconds per training step")
    xmax = np.nanmax(np.concatenate([df["cycle_s"].to_numpy(), gen.fill_null(np.nan).to_numpy(), [1.0]]))
    ax.set_xlim(0, xmax * 1.18)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    _legend_below(ax, ncol=2)
    ax.set_title(title if title is not None else "Step-time breakdown")
    return _finish(fig, path)


# --------------------------------------------------------------------------------------------------
# sweeps


def _check_frame(frame: Any) -> pl.DataFrame:
    if not isinstance(frame, pl.DataFrame):
        raise invalid("frame", f"must be a polars DataFrame (the sweep frame), got {type(frame).__name__}")
    if frame.height == 0:
        raise invalid("frame", "is empty")
    return frame


def sweep_fields(frame: pl.DataFrame) -> list[str]:
    """Columns of a sweep frame that are scenario fields (``rollout_slots``, dotted names like
    ``pipeline.max_staleness``), excluding ``seed``, in frame order."""
    return [c for c in _check_frame(frame).columns if c != "seed" and c.partition(".")[0] in _SCENARIO_FIELDS]


def sweep_metrics(frame: pl.DataFrame) -> list[str]:
    """Numeric columns of a sweep frame that are not scenario fields nor ``seed``: the metrics."""
    fields = set(sweep_fields(frame))
    return [c for c, t in frame.schema.items()
            if c not in fields and c != "seed" and (t.is_numeric() or t == pl.Boolean)]


def _check_col(frame: pl.DataFrame, name: str, param: str, numeric: bool = False) -> None:
    if not isinstance(name, str):
        raise invalid(param, f"must be a column name (str), got {type(name).__name__}")
    if name not in frame.columns:
        import difflib

        # the columns that could be meant: a varied field for an axis, a metric for the value; the nearest named
        fields = sweep_fields(frame)
        pool = fields if param in ("x", "y", "hue", "by") else sweep_metrics(frame)
        close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6) or [c for c in pool if c.endswith("." + name)]
        hint = f"did you mean {' or '.join(repr(c) for c in close)}? " if close else ""
        kind = "varied fields" if param in ("x", "y", "hue", "by") else "metrics"
        raise invalid(param, f"unknown column {name!r}; {hint}the frame's {kind}: {pool}")
    if numeric and not (frame.schema[name].is_numeric() or frame.schema[name] == pl.Boolean):
        raise invalid(param, f"column {name!r} is not numeric ({frame.schema[name]})")


def sweep_stats(frame: pl.DataFrame, metric: str, by: Sequence[str], *, ci: float = 0.95) -> pl.DataFrame:
    """Mean and confidence interval of ``metric`` over seeds, per combination of ``by``.

    Parameters
    ----------
    frame : polars.DataFrame
        The sweep frame.
    metric : str
        A numeric column.
    by : sequence of str
        Varied fields to group by (other varied fields must be constant: see Raises).
    ci : float
        Confidence level in (0, 1): Student-t interval ``mean ± t * sd / sqrt(n)`` over the rows
        (seeds) of each group; null when a group has a single row.

    Returns
    -------
    polars.DataFrame
        ``by`` columns, ``n`` (rows), ``mean``, ``sd``, ``ci_low``, ``ci_high``, sorted by ``by``
        (nulls, e.g. "no cap", last).

    Raises
    ------
    ValueError
        ``frame`` not a non-empty DataFrame; ``metric`` or a ``by`` column unknown (or ``metric``
        not numeric); ``ci`` outside (0, 1); another varied field takes several values (averaging
        over it silently would mislead: filter the frame first).
    """
    frame = _check_frame(frame)
    _check_col(frame, metric, "metric", numeric=True)
    by = list(by)
    for i, b in enumerate(by):
        _check_col(frame, b, "by" if len(by) > 2 else ("x", "y")[i])
    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not 0 < ci < 1:
        raise invalid("ci", f"must be a confidence level in (0, 1), got {ci!r}")
    others = [c for c in sweep_fields(frame) if c not in by and frame[c].n_unique() > 1]
    if others:
        raise invalid("frame", f"also varies {others}; filter it to one value of each, e.g. "
                               f"frame.filter(pl.col({others[0]!r}) == ...), or plot against them")
    if "scenario_key" in frame.columns:
        counts = frame.group_by([*by, "seed"]).agg(pl.col("scenario_key").n_unique().alias("n"))["n"]
        if counts.len() and bool((counts > 1).any()):  # e.g. two sweeps with other base scenarios in one directory
            raise invalid("frame", f"holds runs of several scenarios for the same {by} and seed (their "
                                   f"scenario_key differs, their varied fields do not: e.g. two sweeps with "
                                   f"different base scenarios in one directory); averaging them would mix "
                                   f"them: filter the frame by scenario_key first, or use one directory per sweep")
    # one statistics implementation: rollsim.sweeps.aggregate (Student-t over the seeds with a value)
    g = aggregate(frame, [metric], ci=ci, by=by)
    return (g.select(*by, pl.col("seeds").cast(pl.UInt32).alias("n"), pl.col(f"{metric}_mean").alias("mean"),
                     pl.col(f"{metric}_std").alias("sd"), pl.col(f"{metric}_ci_low").alias("ci_low"),
                     pl.col(f"{metric}_ci_high").alias("ci_high"))
            .sort(by, nulls_last=True))


def _tick(v: Any) -> str:
    if v is None:
        return "none"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def sweep_heatmap(
    frame: pl.DataFrame,
    metric: str,
    x: str,
    y: str,
    *,
    annotate: bool = True,
    cmap: str = "viridis",
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """Heatmap of a metric (mean over seeds) over two varied fields.

    Cells are the distinct values of ``x`` and ``y`` in sorted order (evenly spaced, so log-spaced
    grids read well; ``None``, e.g. no staleness cap, is shown as "none" last); missing combinations
    are blank.

    Parameters
    ----------
    frame : polars.DataFrame
        A sweep frame (one row per scenario and seed).
    metric : str
        Numeric column to color by, e.g. ``"steps"``, ``"staleness_mean"``.
    x, y : str
        Varied fields for the horizontal and vertical axis, e.g. ``"pipeline.max_staleness"``.
    annotate : bool
        Write the mean in each cell.
    cmap : str
        A matplotlib colormap name.
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        One image (``AxesImage``) with a colorbar; one text per non-empty cell when ``annotate``.

    Raises
    ------
    ValueError
        As :func:`sweep_stats`; ``x == y``; unknown ``cmap``.
    """
    frame = _check_frame(frame)
    if isinstance(x, str) and x == y:
        raise invalid("y", f"must differ from x ({x!r})")
    stats = sweep_stats(frame, metric, [x, y])
    import matplotlib

    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise invalid("cmap", f"unknown matplotlib colormap {cmap!r}")
    xs = stats.select(pl.col(x).unique().sort(nulls_last=True))[x].to_list()
    ys = stats.select(pl.col(y).unique().sort(nulls_last=True))[y].to_list()
    grid = np.full((len(ys), len(xs)), np.nan)
    xi = {v: i for i, v in enumerate(xs)}
    yi = {v: i for i, v in enumerate(ys)}
    for r in stats.iter_rows(named=True):
        grid[yi[r[y]], xi[r[x]]] = r["mean"] if r["mean"] is not None else np.nan
    fig, ax = _figure(ax, (1.6 + 0.9 * max(4, len(xs)), 1.2 + 0.6 * max(4, len(ys))))
    im = ax.imshow(grid, origin="lower", aspect="auto", cmap=cmap, interpolation="nearest")
    ax.set_xticks(range(len(xs)), [_tick(v) for v in xs])
    ax.set_yticks(range(len(ys)), [_tick(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    n = int(cast(int, stats["n"].max()))
    cb = fig.colorbar(im, ax=ax)
    cb.set_label(metric + (f" (mean of {n} seeds)" if n > 1 else ""))
    if annotate and np.isfinite(grid).any():
        lo, hi = np.nanmin(grid), np.nanmax(grid)
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                dark = (v - lo) / (hi - lo) < 0.55 if hi > lo else True
                ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8,
                        color="white" if dark else "black")
    # long field names wrap instead of running past the figure's edge
    ax.set_title(title if title is not None else textwrap.fill(f"{metric} over {x} and {y}", 48))
    return _finish(fig, path)


def sweep_lines(
    frame: pl.DataFrame,
    metric: str,
    x: str,
    *,
    hue: str | None = None,
    ci: float = 0.95,
    logx: bool = False,
    ax: Axes | None = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """A metric over one varied field: mean over seeds with a shaded confidence band.

    Parameters
    ----------
    frame : polars.DataFrame
        A sweep frame (one row per scenario and seed).
    metric : str
        Numeric column on the y axis.
    x : str
        Varied field on the x axis. Numeric fields are placed by value (nulls dropped); others
        (or fields with ``None`` values, such as "no cap") as evenly spaced categories.
    hue : str, optional
        A second varied field: one line per value.
    ci : float
        Confidence level of the band, in (0, 1) (Student-t over seeds; no band for single seeds).
    logx : bool
        Log-scale x axis (numeric ``x`` only).
    ax, path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        One line per ``hue`` value (one in all without ``hue``) and one band per line with several
        seeds.

    Raises
    ------
    ValueError
        As :func:`sweep_stats`; ``hue == x``.
    """
    frame = _check_frame(frame)
    if hue is not None and hue == x:
        raise invalid("hue", f"must differ from x ({x!r})")
    by = [x] if hue is None else [x, hue]
    if hue is not None:
        _check_col(frame, hue, "hue")
    stats = sweep_stats(frame, metric, by, ci=ci)
    numeric = stats.schema[x].is_numeric() and stats[x].null_count() == 0
    xs_all = stats.select(pl.col(x).unique().sort(nulls_last=True))[x].to_list()
    fig, ax = _figure(ax, (7, 4.2))
    groups = [(None, stats)] if hue is None else [
        (k[0], g) for k, g in stats.sort(hue, nulls_last=True).group_by(hue, maintain_order=True)]
    colors = _colors(len(groups))
    n_max = int(cast(int, stats["n"].max()))
    for (key, g), c in zip(groups, colors):
        g = g.sort(x, nulls_last=True)
        xv = g[x].to_numpy().astype(float) if numeric else np.array([xs_all.index(v) for v in g[x].to_list()])
        label = None if hue is None else f"{hue} = {_tick(key)}"
        ax.plot(xv, g["mean"].to_numpy(), marker="o", color=c, label=label)
        lo, hi = g["ci_low"].fill_null(np.nan).to_numpy(), g["ci_high"].fill_null(np.nan).to_numpy()
        if np.isfinite(lo).any():
            ax.fill_between(xv, lo, hi, color=c, alpha=0.2, linewidth=0)
    if not numeric:
        ax.set_xticks(range(len(xs_all)), [_tick(v) for v in xs_all])
    elif logx:
        ax.set_xscale("log")
    ax.set_xlabel(x)
    ax.set_ylabel(metric + (f" (mean, {ci:.0%} CI over {n_max} seeds)" if n_max > 1 else ""))
    ax.grid(alpha=0.3)
    if hue is not None:
        ax.legend(fontsize=8, frameon=False)
    ax.set_title(title if title is not None else textwrap.fill(f"{metric} over {x}", 48))
    return _finish(fig, path)


def learning_tradeoff(
    frame: pl.DataFrame,
    *,
    x: str = "tokens_per_s",
    metrics: Sequence[str] = ("pg_clipfrac", "length_gap"),
    ax: Any = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """The trade-off a staleness policy chooses: learning metrics against throughput, one point per
    configuration (mean over seeds, bars of one sd). With one or two varied fields the colour (and a
    line through its points) is the first field's value and the marker the second's; with more, each
    point is labelled with its fields.

    Parameters
    ----------
    frame : polars.DataFrame
        A sweep frame with the learning metrics: ``rollsim.sweep(..., learning=True)``,
        :func:`rollsim.learning.summary_learning` of a sweep frame, or
        :func:`rollsim.sweeps.learning_sweep`.
    x : str
        Numeric column on the horizontal axis (default ``tokens_per_s``, trained tokens per second).
    metrics : sequence of str
        One panel per metric (default ``pg_clipfrac`` and ``length_gap``, tokens).
    ax : sequence of matplotlib Axes, optional
        One Axes per metric to draw into (default: a new figure with a row of panels).
    path, title
        As in :func:`staleness_by_length`.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per metric with one point per configuration; legends for the fields' values (or a
        label per point with more than two varied fields).

    Raises
    ------
    ValueError
        ``frame`` not a non-empty sweep frame; ``x`` or a metric unknown or not numeric; no metric;
        ``ax`` not one Axes per metric.
    """
    frame = _check_frame(frame)
    _check_col(frame, x, "x", numeric=True)
    if isinstance(metrics, str):
        metrics = [metrics]
    metrics = list(metrics)
    if not metrics:
        raise invalid("metrics", "must name at least one metric column")
    for m in metrics:
        _check_col(frame, m, "metrics", numeric=True)
    fields = [f for f in sweep_fields(frame) if frame[f].n_unique() > 1]
    g = (frame.group_by(fields or pl.lit(0).alias("_all"), maintain_order=True)
         .agg(*(e for c in (x, *metrics) for e in (pl.col(c).mean().alias(c), pl.col(c).std().alias(f"{c}_sd"))))
         .sort(fields or "_all", nulls_last=True))
    _mpl()
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    if ax is None:
        fig = Figure(figsize=(4.6 * len(metrics), 4.2), layout="constrained")
        axes = [fig.add_subplot(1, len(metrics), i + 1) for i in range(len(metrics))]
    else:
        axes = list(ax) if isinstance(ax, Sequence) else [ax]
        if len(axes) != len(metrics) or not all(isinstance(a, Axes) for a in axes):
            raise invalid("ax", f"must be {len(metrics)} matplotlib Axes (one per metric), got {ax!r}")
        fig = cast(Figure, axes[0].figure)
    short = {f: f.rpartition(".")[2] for f in fields}
    xs, xsd = g[x].to_numpy(), g[f"{x}_sd"].fill_null(np.nan).to_numpy()
    rows = list(g.iter_rows(named=True))
    if 1 <= len(fields) <= 2:
        # colour: the first varied field (a line through its points); marker: the second
        first = g[fields[0]].unique(maintain_order=True).to_list()
        second = g[fields[1]].unique(maintain_order=True).to_list() if len(fields) == 2 else [None]
        colors = _colors(len(first))
        markers = "osD^v<>ph*"
        style = [(colors[first.index(r[fields[0]])],
                  markers[second.index(r[fields[1]]) % len(markers)] if len(fields) == 2 else "o") for r in rows]
        labels: list[str] = []
    else:
        colors = _colors(g.height)
        style = [(colors[i], "o") for i in range(g.height)]
        labels = [", ".join(f"{short[f]}={_tick(r[f])}" for f in fields) for r in rows]
    for a, m in zip(axes, metrics):
        ys, ysd = g[m].to_numpy(), g[f"{m}_sd"].fill_null(np.nan).to_numpy()
        if 1 <= len(fields) <= 2:
            for v, c in zip(first, colors):
                idx = [i for i, r in enumerate(rows) if r[fields[0]] == v]
                order = sorted(idx, key=lambda i: xs[i])
                a.plot(xs[order], ys[order], color=c, alpha=0.5, linewidth=1,
                       label=f"{short[fields[0]]} = {_tick(v)}")
        for i in range(g.height):
            c, mk = style[i]
            a.errorbar(xs[i], ys[i], xerr=xsd[i] if np.isfinite(xsd[i]) else None,
                       yerr=ysd[i] if np.isfinite(ysd[i]) else None, fmt=mk, color=c, capsize=2)
            if labels:
                a.annotate(labels[i], (xs[i], ys[i]), textcoords="offset points", xytext=(4, 4), fontsize=7)
        a.set_xlabel(x)
        a.set_ylabel(m)
        if m in ("pg_clipfrac", "clip_fraction", "tis_truncated", "icepop_masked"):
            a.yaxis.set_major_formatter(_percent())
        a.grid(alpha=0.3)
    if len(fields) == 2:  # the markers' meaning, once
        from matplotlib.lines import Line2D

        handles = [Line2D([], [], color="gray", marker=markers[j % len(markers)], linestyle="",
                          label=f"{short[fields[1]]} = {_tick(v)}") for j, v in enumerate(second)]
        axes[-1].legend(handles=handles, fontsize=8, frameon=False, loc="best")
    if 1 <= len(fields) <= 2:
        axes[0].legend(fontsize=8, frameon=False, loc="best")
    fig.suptitle(title if title is not None else textwrap.fill(
        f"{' and '.join(metrics)} against {x}" + (f" over {', '.join(fields)}" if fields else ""), 90))
    return _finish(fig, path)
