"""Reports and figures of result directories: ``rollsim report`` and ``rollsim plot``.

A result directory is one of

run       ``rollsim run --out DIR``: ``samples.parquet``, ``steps.parquet``, ``summary.json``
          (``segments.parquet``, optional: enables the learning section);
compare   ``rollsim compare --out DIR``: ``compare.parquet``, ``samples_<tag>.parquet``,
          ``steps_<tag>.parquet`` (``segments_<tag>.parquet``, optional) per pipeline;
sweep     a directory of parquet chunk files (or one parquet file) holding the sweep frame: one row per
          (scenario, seed), varied fields and summary metrics as columns, ``seed``.

:func:`write_report` writes a self-contained HTML file (figures embedded as base64 PNGs) or a Markdown
file (figures as PNG files in a ``<name>_files/`` directory beside it) with the directory's tables and
figures. :func:`load` reads a directory into :class:`~rollsim.Result` objects or the sweep frame.
:func:`add_parser` registers both subcommands on the ``rollsim`` command line.
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import glob
import html
import io
import json
import math
import os
import sys
from typing import Any, Literal, cast

import polars as pl

from rollsim._text import UNDEFINED, undefined
from rollsim.errors import RollsimError, ScenarioError, invalid
from rollsim.simulation import Result

__all__ = ["Loaded", "load", "write_report", "plot_dir", "add_parser", "run", "run_plot", "KINDS", "tag"]

_NO_SCENARIO: Any = None  # a run read back from its files has no Scenario object

#: Figure kinds of ``rollsim plot`` (and :func:`plot_dir`).
KINDS = ("staleness-by-length", "slot-timeline", "utilization", "step-breakdown", "heatmap", "lines")

_SWEEP_KEY_METRICS = ("steps", "rollout_utilization", "staleness_mean", "staleness_mean_long", "drop_fraction",
                      "tokens_wasted")


def tag(name: str) -> str:
    """The file tag ``rollsim compare --out`` uses for a pipeline name (``"fully async, cap 2"`` ->
    ``"fully_async_cap_2"``)."""
    return name.replace(" ", "_").replace(",", "").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class Loaded:
    """A result directory, read.

    Attributes
    ----------
    kind : "run" | "compare" | "sweep"
    path : str
    runs : dict[str, Result]
        Label -> run (scenario ``None``; ``summary`` from ``summary.json`` or the compare row).
        Empty for sweeps.
    table : polars.DataFrame or None
        ``compare.parquet`` (compare), the sweep frame (sweep), None (run).
    """

    kind: Literal["run", "compare", "sweep"]
    path: str
    runs: dict[str, Result]
    table: pl.DataFrame | None


def _read(path: str, what: str) -> pl.DataFrame:
    from rollsim import _parquet

    _parquet.check(path, "result_dir")  # the file's structure first: polars can abort the process on it
    try:
        return pl.read_parquet(path)
    except (Exception, pl.exceptions.PanicException) as e:  # polars raises several types (even a panic)
        raise invalid("result_dir", f"cannot read {what} {path!r}: {e}") from None


def load(result_dir: str | os.PathLike[str]) -> Loaded:
    """Reads a run, compare or sweep directory (see the module docs for the layouts).

    Parameters
    ----------
    result_dir : str or path-like
        A directory written by ``rollsim run --out`` or ``rollsim compare --out``, or a directory of
        sweep parquet chunks, or a single sweep parquet file.

    Returns
    -------
    Loaded

    Raises
    ------
    FileNotFoundError
        ``result_dir`` does not exist.
    ValueError
        It holds none of the layouts, or a file cannot be read.
    """
    p = os.fspath(result_dir)
    if not os.path.exists(p):
        raise FileNotFoundError(f"result_dir: no such file or directory: {p!r}")
    if os.path.isfile(p):
        return Loaded("sweep", p, {}, _read(p, "sweep file"))
    j = lambda *a: os.path.join(p, *a)  # noqa: E731
    if os.path.exists(j("samples.parquet")) and os.path.exists(j("steps.parquet")):
        summary: dict[str, Any] = {}
        if os.path.exists(j("summary.json")):
            try:
                with open(j("summary.json")) as f:
                    summary = json.load(f)
            except (OSError, ValueError) as e:
                raise invalid("result_dir", f"cannot read {j('summary.json')!r}: {e}") from None
        res = Result(_agentic_scenario(j("scenario.toml"), j("turns.parquet")), summary, _read(j("steps.parquet"), "steps"), _read(j("samples.parquet"), "samples"),
                     _read(j("segments.parquet"), "segments") if os.path.exists(j("segments.parquet")) else None,
                     _read(j("turns.parquet"), "turns") if os.path.exists(j("turns.parquet")) else None)
        return Loaded("run", p, {"": res}, None)
    if os.path.exists(j("compare.parquet")):
        table = _read(j("compare.parquet"), "comparison")
        names = table["pipeline"].to_list() if "pipeline" in table.columns else []
        rows = {r["pipeline"]: r for r in table.iter_rows(named=True)} if names else {}
        tags = sorted(os.path.basename(f)[len("samples_"):-len(".parquet")] for f in glob.glob(j("samples_*.parquet")))
        order = [n for n in names if tag(n) in tags] + [t for t in tags if t not in {tag(n) for n in names}]
        runs = {}
        for name in order:
            t = tag(name) if name in rows else name
            if not os.path.exists(j(f"steps_{t}.parquet")):
                continue
            seg, trn = j(f"segments_{t}.parquet"), j(f"turns_{t}.parquet")
            runs[name] = Result(_agentic_scenario(j("scenario.toml"), trn), dict(rows.get(name, {})), _read(j(f"steps_{t}.parquet"), "steps"),
                                _read(j(f"samples_{t}.parquet"), "samples"),
                                _read(seg, "segments") if os.path.exists(seg) else None,
                                _read(trn, "turns") if os.path.exists(trn) else None)
        return Loaded("compare", p, runs, table)
    if os.path.exists(j("_rollsim_sweep.json")):  # a rollsim.sweep store: its verified chunks only
        from rollsim.sweeps import read_sweep

        return Loaded("sweep", p, {}, read_sweep(p))
    chunks = sorted(glob.glob(j("*.parquet"))) or sorted(glob.glob(j("**", "*.parquet"), recursive=True))
    if not chunks:
        raise invalid("result_dir", f"{p!r} holds no run (samples.parquet + steps.parquet), comparison "
                                    f"(compare.parquet) or sweep (*.parquet chunks)")
    frames = [_read(c, "sweep chunk") for c in chunks]
    table = pl.concat(frames, how="diagonal_relaxed")
    if "run_key" in table.columns:  # a run stored twice (a resumed sweep whose grid changed) counts once
        table = table.unique(subset="run_key", keep="first", maintain_order=True)
    return Loaded("sweep", p, {}, table)


# --------------------------------------------------------------------------------------------------
# tables


def _cell(v: Any, col: str) -> str:
    if undefined(v):
        return UNDEFINED   # as every table of the command line
    if isinstance(v, float):
        if col in ("rollout_utilization", "drop_fraction", "drop_rate") or col.endswith("_fraction"):
            return f"{v:.1%}"
        if v != 0 and (abs(v) >= 1e6 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:.3f}".rstrip("0").rstrip(".") if abs(v) < 1e4 else f"{v:.0f}"
    return str(v)


def _md_table(df: pl.DataFrame) -> str:
    cols = df.columns
    rows = [[_cell(v, c) for v, c in zip(r, cols)] for r in df.iter_rows()]
    esc = lambda s: s.replace("|", "\\|")  # noqa: E731
    out = ["| " + " | ".join(esc(c) for c in cols) + " |",
           "|" + "|".join("---" if df.schema[c] == pl.String else "---:" for c in cols) + "|"]
    out += ["| " + " | ".join(esc(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def _html_table(df: pl.DataFrame) -> str:
    cols = df.columns
    num = [df.schema[c] != pl.String for c in cols]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f'<td class="{"n" if n else "s"}">{html.escape(_cell(v, c))}</td>'
                         for v, c, n in zip(r, cols, num)) + "</tr>"
        for r in df.iter_rows())
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary_table(summary: dict[str, Any]) -> pl.DataFrame:
    return pl.DataFrame({"metric": list(summary), "value": [_cell(v, k) for k, v in summary.items()]},
                        schema={"metric": pl.String, "value": pl.String})


# --------------------------------------------------------------------------------------------------
# the report


class _Doc:
    """Accumulates sections, tables and figures; renders HTML or Markdown."""

    def __init__(self, fmt: str, out: str) -> None:
        self.fmt, self.out, self.n_fig = fmt, out, 0
        self.parts: list[tuple[Any, ...]] = []

    def h(self, level: int, text: str) -> None:
        self.parts.append(("h", level, text))

    def p(self, text: str) -> None:
        self.parts.append(("p", text))

    def table(self, df: pl.DataFrame) -> None:
        self.parts.append(("t", df))

    def figure(self, fig: Any, caption: str) -> None:
        self.n_fig += 1
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=90, facecolor="white")
        self.parts.append(("f", buf.getvalue(), caption, self.n_fig))

    def render(self, title: str) -> str:
        if self.fmt == "html":
            body = []
            for part in self.parts:
                if part[0] == "h":
                    body.append(f"<h{part[1]}>{html.escape(part[2])}</h{part[1]}>")
                elif part[0] == "p":
                    body.append(f"<p>{html.escape(part[1])}</p>")
                elif part[0] == "t":
                    body.append(_html_table(part[1]))
                else:
                    b64 = base64.b64encode(part[1]).decode("ascii")
                    body.append(f'<figure><img alt="{html.escape(part[2])}" src="data:image/png;base64,{b64}">'
                                f"<figcaption>Figure {part[3]}. {html.escape(part[2])}</figcaption></figure>")
            style = ("body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;"
                     "color:#222}table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
                     "th,td{border:1px solid #ccc;padding:3px 8px}th{background:#f3f3f3}td.n{text-align:right;"
                     "font-variant-numeric:tabular-nums}img{max-width:100%}figcaption{color:#555;font-size:0.9em}")
            return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
                    f"</title><style>{style}</style></head><body>\n<h1>{html.escape(title)}</h1>\n"
                    + "\n".join(body) + "\n</body></html>\n")
        stem = os.path.splitext(os.path.basename(self.out))[0]
        img_dir = os.path.join(os.path.dirname(self.out) or ".", f"{stem}_files")
        lines = [f"# {title}", ""]
        for part in self.parts:
            if part[0] == "h":
                lines += ["#" * part[1] + " " + part[2], ""]
            elif part[0] == "p":
                lines += [part[1], ""]
            elif part[0] == "t":
                lines += [_md_table(part[1]), ""]
            else:
                os.makedirs(img_dir, exist_ok=True)
                name = f"figure{part[3]}.png"
                with open(os.path.join(img_dir, name), "wb") as f:
                    f.write(part[1])
                lines += [f"![{part[2]}]({stem}_files/{name})", "", f"*Figure {part[3]}. {part[2]}*", ""]
        return "\n".join(lines)


def _agentic_scenario(toml_path: str, turns_path: str) -> Any:
    """The scenario of an agentic run read back from its files (``scenario.toml``, for the slot timeline's
    pool size and held slots), when it has its turns; else none (``_NO_SCENARIO``)."""
    if not (os.path.exists(turns_path) and os.path.exists(toml_path)):
        return _NO_SCENARIO
    from rollsim.scenario import Scenario

    try:
        return Scenario.from_toml(toml_path)
    except (RollsimError, OSError, ValueError):
        return _NO_SCENARIO


def _slot_timeline(r: Result, *, max_slots: int, ax: Any = None, path: Any = None, title: str | None = None) -> Any:
    """The slot timeline of one run: an agentic run's turns and tool calls (its ``turns`` frame, written by
    ``--out`` as ``turns.parquet``: a trajectory leaves its slot during a call, so one bar per sample
    would span the calls), else one bar per sample."""
    from rollsim import plot, trajectories

    if r._turns is not None:
        return trajectories.turn_timeline(r, max_slots=max_slots, ax=ax, path=path, title=title)
    return plot.slot_timeline(r, max_slots=max_slots, ax=ax, path=path, title=title)


def _close(fig: Any) -> None:
    fig.clear()


def _report_runs(doc: _Doc, runs: dict[str, Result], max_slots: int) -> None:
    from rollsim import plot

    labelled = {k or "run": v for k, v in runs.items()}
    doc.h(2, "Staleness by answer length")
    doc.p("Mean staleness (policy versions behind at training) and drop rate per answer-length bin, "
          "over samples consumed by the trainer (trained or dropped).")
    tables = []
    for name, r in labelled.items():
        t = r.staleness_by_length(plot.DEFAULT_EDGES)
        tables.append(t.select(pl.lit(name).alias("run"), pl.all()))
    doc.table(pl.concat(tables).select("run", "bin", "samples", "dropped", "drop_rate", "staleness_mean",
                                       "staleness_max") if len(tables) > 1 else tables[0].drop("run"))
    fig = plot.staleness_by_length(labelled if len(labelled) > 1 else next(iter(labelled.values())))
    doc.figure(fig, "Mean staleness (bars) and drop rate (dashed) by answer length.")
    _close(fig)

    _report_learning(doc, labelled)

    doc.h(2, "Step time")
    bd = plot.step_breakdown_frame(labelled)
    doc.table(bd.drop("sync_s") if bd["sync_s"].null_count() == bd.height else bd)
    doc.p("Mean seconds per completed step: the trainer waits for a full batch (wait_s), then trains and "
          "syncs weights (train_s; sync_s when known); generation_s is the span from the first start to the "
          "last finish of a batch's samples.")
    fig = plot.step_breakdown(labelled)
    doc.figure(fig, "Step-time breakdown.")
    _close(fig)

    doc.h(2, "Rollout utilization")
    fig = plot.utilization(labelled)
    doc.figure(fig, "Fraction of rollout slots busy over time.")
    _close(fig)

    doc.h(2, "Slot timeline")
    items = list(labelled.items())
    fig, axes = _grid(len(items))
    for ax, (name, r) in zip(axes, items):
        _slot_timeline(r, ax=ax, max_slots=max_slots, title=name if len(items) > 1 else None)
    doc.figure(fig, f"Rollout slots over time (at most {max_slots} slots shown), colored by the policy version "
                    "each sample started with; red outlines: dropped samples.")
    _close(fig)


def _report_learning(doc: _Doc, labelled: dict[str, Result]) -> None:
    """What the staleness above costs the learner, under the default drift model (rollsim.learning);
    skipped for runs without segments (e.g. loaded from an older result directory)."""
    from rollsim import plot
    from rollsim.errors import ScenarioError
    from rollsim.learning import learning

    try:
        outs = {name: learning(r, edges=plot.DEFAULT_EDGES) for name, r in labelled.items()}
    except ScenarioError:
        return
    doc.h(2, "What staleness costs the learner (a model)")
    doc.p("Under rollsim.learning's per-token drift model of the importance log-ratio (defaults fitted to "
          "public runs; the staleness is simulated, these rates are a model): active PPO clip fraction "
          "(DAPO 0.2 / 0.28), token TIS truncation (cap 2), sequence mask (ratio above 3), Kish ESS of the "
          "truncated token weights, and the trained-minus-generated mean length (tokens).")
    cols = ["bin", "samples", "staleness_mean", "pg_clipfrac", "tis_truncated", "seq_masked", "ess_token"]
    tables = [o.by_length.select(pl.lit(name).alias("run"), *cols) for name, o in outs.items()]
    doc.table(pl.concat(tables) if len(tables) > 1 else tables[0].drop("run"))
    doc.table(pl.DataFrame([{"run": name, **{k: o.summary.get(k) for k in (
        "staleness_mean", "pg_clipfrac", "tis_truncated", "seq_masked", "ess_token", "trained_length_mean",
        "generated_length_mean", "length_gap")}} for name, o in outs.items()]))
    fig = plot.learning_by_length(labelled if len(labelled) > 1 else next(iter(labelled.values())))
    doc.figure(fig, "Token-weighted staleness (bars) and model clip / truncation / mask rates (lines) by length.")
    _close(fig)


def _grid(n: int) -> tuple[Any, list[Any]]:
    from matplotlib.figure import Figure

    cols = 1 if n == 1 else 2
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(9 if cols == 1 else 14, 4.8 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel().tolist()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes[:n]


def _report_sweep(doc: _Doc, frame: pl.DataFrame) -> None:
    from rollsim import plot

    fields = plot.sweep_fields(frame)
    metrics = plot.sweep_metrics(frame)
    varied = [f for f in fields if frame[f].n_unique() > 1]
    seeds = frame["seed"].n_unique() if "seed" in frame.columns else 1
    doc.h(2, "Sweep")
    doc.p(f"{frame.height} runs; {seeds} seed(s) per scenario; varied fields: "
          f"{', '.join(varied) if varied else 'none'}.")
    doc.table(pl.DataFrame({"field": varied,
                            "values": [", ".join(plot._tick(v) for v in frame[f].unique().sort(nulls_last=True)
                                                 .to_list()) for f in varied]},
                           schema={"field": pl.String, "values": pl.String}))
    shown = [m for m in _SWEEP_KEY_METRICS if m in metrics] or metrics[:6]
    if not shown:
        doc.p("The frame has no numeric metric columns.")
        return
    sub, fixed = frame, []
    for f in varied[2:]:  # the figures show the first two varied fields; fix the others
        v = frame[f].unique().sort(nulls_last=True)[0]
        sub = sub.filter(pl.col(f).is_null() if v is None else pl.col(f) == v)
        fixed.append(f"{f} = {plot._tick(v)}")
    note = f" (with {', '.join(fixed)})" if fixed else ""
    doc.h(2, "Metrics (mean over seeds)")
    by = varied[:2]
    if by:
        stats = None
        for m in shown:
            s = plot.sweep_stats(sub, m, by).select(*by, pl.col("mean").alias(m))
            stats = s if stats is None else stats.join(s, on=by, how="left", nulls_equal=True)
        if fixed:
            doc.p(f"Rows{note}.")
        doc.table(cast(pl.DataFrame, stats).with_columns(pl.col(c).cast(pl.String).fill_null("none") for c in by))
    else:
        doc.table(frame.select(shown).mean())
        return
    doc.h(2, "Figures")
    for m in shown:
        if len(by) == 2:
            fig = plot.sweep_heatmap(sub, m, by[0], by[1])
            doc.figure(fig, f"{m} over {by[0]} and {by[1]}{note}, mean over seeds.")
            _close(fig)
        fig = plot.sweep_lines(sub, m, by[0], hue=by[1] if len(by) == 2 else None)
        doc.figure(fig, f"{m} over {by[0]}{note}: mean over seeds with 95% confidence band.")
        _close(fig)


def _check_out_extension(out: str, fmt: str | None, *, out_name: str = "out", fmt_name: str = "fmt=") -> None:
    """Checks a report's output path against its format: ``.html``/``.htm`` or ``.md`` when ``fmt`` is None
    (the format then follows the extension), the format's own extension otherwise.

    Raises
    ------
    ScenarioError
        Naming ``out_name`` (``out`` from Python, ``--out`` from the command line).
    """
    ext = os.path.splitext(out)[1].lower()
    if fmt is None:
        if ext not in (".html", ".htm", ".md"):
            raise invalid(out_name, f"must end in .html or .md (the report's format follows it), got {out!r}")
    elif ext not in ((".md",) if fmt == "md" else (".html", ".htm")):
        shown = f"{fmt_name}{fmt!r}" if fmt_name.endswith("=") else f"{fmt_name}{fmt}"
        raise invalid(out_name, f"must end in {'.md' if fmt == 'md' else '.html'} for {shown}, got {out!r}")


def write_report(
    result_dir: str | os.PathLike[str],
    out: str | os.PathLike[str] | None = None,
    *,
    fmt: Literal["html", "md"] | None = None,
    max_slots: int = 64,
) -> str:
    """Writes a report of a run, compare or sweep directory: its tables and figures.

    Parameters
    ----------
    result_dir : str or path-like
        See :func:`load`.
    out : str or path-like, optional
        Output file; default ``<result_dir>/report.html`` (``report.md`` for ``fmt="md"``; for a single
        sweep file, beside it).
    fmt : "html" | "md", optional
        HTML: one self-contained file, figures embedded as base64 PNGs. Markdown: figures as PNGs in
        ``<out stem>_files/`` beside the file. Default: from ``out``'s extension, else HTML.
    max_slots : int
        Slots shown in slot timelines (>= 1).

    Returns
    -------
    str
        The path written.

    Raises
    ------
    FileNotFoundError
        ``result_dir`` does not exist.
    ValueError
        Unknown ``fmt``; ``out`` with an extension other than ``.html``/``.htm``/``.md``; an unreadable
        directory (see :func:`load`).
    """
    loaded = load(result_dir)
    if fmt is not None and fmt not in ("html", "md"):
        raise invalid("fmt", f"must be 'html' or 'md', got {fmt!r}")
    if out is not None:
        _check_out_extension(os.fspath(out), fmt)
    if fmt is None:
        fmt = "md" if out is not None and os.path.splitext(os.fspath(out))[1].lower() == ".md" else "html"
    if out is None:
        base = loaded.path if os.path.isdir(loaded.path) else os.path.dirname(loaded.path) or "."
        out = os.path.join(base, f"report.{fmt}")
    out = os.fspath(out)
    from rollsim import __version__

    doc = _Doc(fmt, out)
    doc.p(f"Source: {os.path.abspath(loaded.path)} ({loaded.kind}); rollsim {__version__}.")
    if loaded.kind == "run":
        run_ = loaded.runs[""]
        doc.h(2, "Summary")
        doc.table(_summary_table(run_.summary) if run_.summary else pl.DataFrame({"metric": ["(no summary.json)"]}))
        _report_runs(doc, loaded.runs, max_slots)
    elif loaded.kind == "compare":
        doc.h(2, "Comparison")
        assert loaded.table is not None
        doc.table(loaded.table)
        if loaded.runs:
            _report_runs(doc, loaded.runs, max_slots)
    else:
        assert loaded.table is not None
        _report_sweep(doc, loaded.table)
    title = {"run": "rollsim run report", "compare": "rollsim pipeline comparison",
             "sweep": "rollsim sweep report"}[loaded.kind]
    parent = os.path.dirname(out)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(out, "w", encoding="utf-8") as f:
        f.write(doc.render(title))
    return out


# --------------------------------------------------------------------------------------------------
# one figure from a directory


def plot_dir(
    result_dir: str | os.PathLike[str],
    kind: str,
    out: str | os.PathLike[str] | None = None,
    *,
    pipeline: str | None = None,
    metric: str | None = None,
    x: str | None = None,
    y: str | None = None,
    hue: str | None = None,
    max_slots: int = 64,
    bin_s: float | None = None,
    edges: tuple[float, ...] | None = None,
) -> Any:
    """One figure of a result directory (what ``rollsim plot`` draws).

    Parameters
    ----------
    result_dir : str or path-like
        See :func:`load`.
    kind : str
        One of :data:`KINDS`. Runs and comparisons: ``staleness-by-length``, ``slot-timeline``,
        ``utilization``, ``step-breakdown``. Sweeps: ``heatmap`` (needs ``metric``, ``x``, ``y``),
        ``lines`` (needs ``metric``, ``x``; optional ``hue``).
    out : str or path-like, optional
        Save to this ``.png``/``.svg``/``.pdf`` file.
    pipeline : str, optional
        Compare directories: only this pipeline (its name, or its file tag with underscores or
        hyphens); default all (slot timelines: one panel each).
    metric, x, y, hue : str, optional
        Sweep columns.
    max_slots, bin_s, edges
        As in :func:`rollsim.plot.slot_timeline`, :func:`rollsim.plot.utilization` (seconds),
        :func:`rollsim.plot.staleness_by_length` (tokens).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ValueError
        Unknown ``kind``; a sweep kind for a run directory or the reverse; missing ``metric``/``x``/
        ``y``; unknown ``pipeline``; as the plot functions.
    """
    from rollsim import plot

    if kind not in KINDS:
        raise invalid("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    loaded = load(result_dir)
    if kind in ("heatmap", "lines"):
        if loaded.kind != "sweep" or loaded.table is None:
            raise invalid("kind", f"{kind!r} needs a sweep directory, {loaded.path!r} is a {loaded.kind}")
        for name, v in (("metric", metric), ("x", x)) + ((("y", y),) if kind == "heatmap" else ()):
            if v is None:
                raise invalid(name, f"is required for --kind {kind}")
        if kind == "heatmap":
            return plot.sweep_heatmap(loaded.table, metric, x, y, path=out)  # type: ignore[arg-type]
        return plot.sweep_lines(loaded.table, metric, x, hue=hue, path=out)  # type: ignore[arg-type]
    if loaded.kind == "sweep":
        raise invalid("kind", f"{kind!r} needs a run or compare directory; {loaded.path!r} is a sweep "
                              f"(use heatmap or lines)")
    runs = {k or "run": v for k, v in loaded.runs.items()}
    if pipeline is not None:
        # its name, or its file tag (with hyphens for underscores, as every choice on the command line)
        match = {k: v for k, v in runs.items() if pipeline == k or pipeline.replace("-", "_") == tag(k)}
        if not match:
            raise invalid("pipeline", f"unknown pipeline {pipeline!r}; the directory has {list(runs)} (file tags: "
                                      f"{[tag(k) for k in runs]})")
        runs = match
    if not runs:
        raise invalid("result_dir", f"{loaded.path!r} has no per-pipeline samples/steps files")
    one: Any = next(iter(runs.values())) if len(runs) == 1 and loaded.kind == "run" else runs
    if kind == "staleness-by-length":
        return plot.staleness_by_length(one, plot.DEFAULT_EDGES if edges is None else edges, path=out)
    if kind == "utilization":
        return plot.utilization(one, bin_s=bin_s, path=out)
    if kind == "step-breakdown":
        return plot.step_breakdown(one, path=out)
    if len(runs) == 1:
        return _slot_timeline(next(iter(runs.values())), max_slots=max_slots, path=out)
    fig, axes = _grid(len(runs))
    for ax, (name, r) in zip(axes, runs.items()):
        _slot_timeline(r, ax=ax, max_slots=max_slots, title=name)
    if out is not None:
        plot.save(fig, out)
    return fig


# --------------------------------------------------------------------------------------------------
# command line


def _need_matplotlib(command: str) -> None:
    """Refuses ``command`` with a one-line message when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RollsimError(f"{command}: needs matplotlib, which is not installed: pip install 'rollsim[plot]' "
                           f"(or pip install matplotlib)") from None


def _check_out_file(path: str | None) -> None:
    """Before drawing anything: ``--out`` names a file that can be written (its directory exists
    and is writable, and it is not a directory), else a ScenarioError naming ``out``."""
    if path is None:
        return
    if not path:
        raise invalid("out", "must name a file, got ''")
    if os.path.isdir(path):
        raise invalid("out", f"{path!r} is a directory; give a file name")
    parent = os.path.dirname(os.path.abspath(path))
    base = parent
    while not os.path.exists(base):  # missing directories are made when the file is written
        base = os.path.dirname(base)
    if not os.path.isdir(base):
        raise invalid("out", f"cannot make the directory {parent!r} for {os.path.basename(path)!r}: {base!r} is a file")
    if not os.access(base, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise invalid("out", f"cannot write {path!r} (permission denied)")


def run(args: argparse.Namespace) -> int:
    """``rollsim report``: writes the report, prints its path to stderr, returns 0."""
    _need_matplotlib("report")
    _check_out_file(args.out)
    if args.out is not None:  # in the command's words (write_report names its arguments, fmt=)
        _check_out_extension(args.out, args.format, out_name="--out", fmt_name="--format ")
    try:
        path = write_report(args.result_dir, args.out, fmt=args.format, max_slots=args.max_slots)
    except (ScenarioError, FileNotFoundError) as e:
        raise _positional_named(e) from None
    print(f"wrote {path}", file=sys.stderr)
    return 0


def _positional_named(e: Exception) -> Exception:
    """``e`` without the ``result_dir:`` of :func:`load`'s messages: on the command line the directory is
    a positional argument, named by the path the user typed, which every such message quotes
    (``no such file or directory: 'runs/x'``, as for a missing scenario file)."""
    field, sep, rest = str(e).partition(": ")
    if sep and field == "result_dir":
        return type(e)(rest)
    return e


def _edges(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated token counts, got {text!r}") from None


#: The ``rollsim plot`` flags that only some kinds use: a flag given for another kind is refused
#: (nothing a user gives is silently dropped).
PLOT_FLAG_KINDS: dict[str, tuple[str, ...]] = {
    "pipeline": ("staleness-by-length", "slot-timeline", "utilization", "step-breakdown"),
    "metric": ("heatmap", "lines"),
    "x": ("heatmap", "lines"),
    "y": ("heatmap",),
    "hue": ("lines",),
    "max_slots": ("slot-timeline",),
    "bin_s": ("utilization",),
    "edges": ("staleness-by-length",),
}

#: :func:`plot_dir`'s arguments as ``rollsim plot``'s flags, for its messages.
_PLOT_FLAGS = {"kind": "--kind", "metric": "--metric", "x": "--x", "y": "--y", "hue": "--hue", "pipeline": "--pipeline",
               "bin_s": "--bin-s", "max_slots": "--max-slots", "edges": "--edges"}


def run_plot(args: argparse.Namespace) -> int:
    """``rollsim plot``: writes one figure to ``--out``, returns 0. A flag the kind does not use
    (``--bin-s`` with ``--kind staleness-by-length``) is refused, naming the kinds that use it."""
    _need_matplotlib("plot")
    for dest, kinds in PLOT_FLAG_KINDS.items():
        if getattr(args, dest) is not None and args.kind not in kinds:
            flag = "--" + dest.replace("_", "-")
            raise invalid(flag, f"applies to --kind {' / '.join(kinds)} only, not {args.kind}")
    _check_out_file(args.out)
    from rollsim import plot

    plot.check_save_path(args.out, "--out")  # before drawing, naming the flag (plot.save names its argument)
    try:
        plot_dir(args.result_dir, args.kind, args.out, pipeline=args.pipeline, metric=args.metric, x=args.x,
                 y=args.y, hue=args.hue, max_slots=64 if args.max_slots is None else args.max_slots,
                  bin_s=args.bin_s, edges=args.edges)
    except ScenarioError as e:  # the command line names its flags, not plot_dir's arguments
        field, sep, rest = str(e).partition(": ")
        if sep and field in _PLOT_FLAGS:
            raise ScenarioError(f"{_PLOT_FLAGS[field]}: {rest}") from None
        raise _positional_named(e) from None
    except FileNotFoundError as e:
        raise _positional_named(e) from None
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


def add_parser(subparsers: Any) -> None:
    """Registers the ``report`` and ``plot`` subcommands on an ``argparse`` subparsers object
    (``parser.add_subparsers(...)``); each sets ``func`` to its handler (:func:`run`, :func:`run_plot`)."""
    r = subparsers.add_parser(
        "report", help="an HTML or Markdown report of a run, compare or sweep directory",
        description="Writes a report with the tables and figures of a directory written by "
                    "'rollsim run --out', 'rollsim compare --out', or a sweep (parquet chunks).")
    r.add_argument("result_dir", help="the directory (or one sweep parquet file)")
    r.add_argument("--out", default=None, help="output file (default RESULT_DIR/report.html or report.md)")
    r.add_argument("--format", choices=("html", "md"), default=None,
                   help="html: self-contained, figures embedded; md: figures in <name>_files/ "
                        "(default: from --out, else html)")
    r.add_argument("--max-slots", type=int, default=64, help="slots shown in slot timelines (%(default)s)")
    r.set_defaults(func=run)

    p = subparsers.add_parser(
        "plot", help="one figure of a run, compare or sweep directory",
        description="Draws one figure of a result directory and saves it (PNG, SVG or PDF by extension).")
    p.add_argument("result_dir", help="the directory (or one sweep parquet file)")
    p.add_argument("--kind", required=True, choices=KINDS, type=lambda t: t.replace("_", "-"),  # slot_timeline too
                   help="the figure to draw (of a run or compare directory: staleness-by-length, slot-timeline, "
                        "utilization, step-breakdown; of a sweep: heatmap, lines)")
    p.add_argument("--out", required=True, help="output file: .png, .svg or .pdf")
    p.add_argument("--pipeline", default=None,
                   help="compare dirs: only this pipeline (name, e.g. 'fully async, cap 2', or file tag, e.g. "
                        "fully_async_cap_2)")
    p.add_argument("--metric", default=None, help="sweeps: the metric column, e.g. steps")
    p.add_argument("--x", default=None, help="sweeps: varied field on the x axis, e.g. pipeline.max_staleness")
    p.add_argument("--y", default=None, help="heatmap: varied field on the y axis")
    p.add_argument("--hue", default=None, help="lines: one line per value of this field")
    p.add_argument("--max-slots", type=int, default=None, help="slot-timeline: slots shown (64)")
    p.add_argument("--bin-s", type=float, default=None, help="utilization: bin width, seconds (default: run/150)")
    p.add_argument("--edges", type=_edges, default=None,
                   help="staleness-by-length: bin edges in tokens, e.g. 1000,2000,4000,8000,16000")
    p.set_defaults(func=run_plot)
