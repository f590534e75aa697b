"""The ``rollsim`` command line.

``rollsim compare``  the chapter's comparison (synchronous, one-step, fully async, fully async with a
                     cap) on the default scenario or any variant of it; ``--out DIR`` writes parquet.
``rollsim run``      one pipeline; prints the summary; ``--out DIR`` writes the frames.
``rollsim sweep``    a parameter sweep from a TOML file, streamed to parquet, resumable, local or Ray.
``rollsim sync``     the weight-sync estimator: the chapter's table, or a cluster TOML file.
``rollsim report``   a Markdown / HTML report of a result directory; ``rollsim plot`` one figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Sequence

import polars as pl

from rollsim import datasets
from rollsim.errors import RollsimError, ScenarioError
from rollsim.lengths import Empirical, LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, OneStepAsync, Synchronous
from rollsim.scenario import Scenario
from rollsim.simulation import compare, simulate

_DEFAULT = Scenario()


def _add_scenario_args(p: argparse.ArgumentParser, default_rng: str, *, instances: bool = True) -> None:
    """The scenario's flags; ``instances=False`` leaves out ``--slots-per-instance`` (for ``split``,
    whose own flag sizes the instances)."""
    g = p.add_argument_group("scenario (defaults: the chapter's)")
    g.add_argument("--rollout-slots", type=int, default=_DEFAULT.rollout_slots, help="concurrent sequences (%(default)s)")
    g.add_argument("--decode-tokens-per-s", type=float, default=_DEFAULT.decode_tokens_per_s,
                   help="decode speed per sequence, tokens/s (%(default)s)")
    g.add_argument("--batch-size", type=int, default=_DEFAULT.batch_size, help="samples per step (%(default)s)")
    g.add_argument("--train-step-s", type=float, default=_DEFAULT.train_step_s, help="seconds per training step (%(default)s)")
    g.add_argument("--weight-sync-s", type=float, default=0.0, help="seconds per weight update (%(default)s)")
    g.add_argument("--horizon-s", type=float, default=_DEFAULT.horizon_s, help="simulated seconds (%(default)s)")
    g.add_argument("--seed", type=int, default=0, help="random seed (%(default)s)")
    g.add_argument("--rng", choices=("python", "fast"), default=default_rng,
                   help="'python' reproduces CPython's random.Random and the chapter's numbers (%(default)s)")
    g.add_argument("--max-samples", type=int, default=50_000_000,
                   help="refuse runs that would start more samples than this (memory guard, %(default)s)")
    g = p.add_argument_group("answer lengths")
    g.add_argument("--lengths", default="lognormal",
                   help="'lognormal' (with --mu/--sigma/--max-tokens), a built-in data set "
                        f"({', '.join(datasets.NAMES)}), or a CSV/parquet file (%(default)s)")
    g.add_argument("--mu", type=float, default=None, help="lognormal mu, natural log of tokens (7.6)")
    g.add_argument("--sigma", type=float, default=None, help="lognormal sigma (1.0)")
    g.add_argument("--max-tokens", type=float, default=None,
                   help="generation limit, tokens (lognormal default 16384; data sets: unclipped)")
    g.add_argument("--lengths-column", default=None, help="column of lengths in the file")
    g.add_argument("--count-column", default=None, help="column of counts in the file (a histogram)")
    g = p.add_argument_group("inference and training resources (defaults: the chapter's independent slots)")
    if instances:
        g.add_argument("--slots-per-instance", type=int, default=0,
                       help="sequences per inference instance; 0: independent slots (%(default)s)")
    g.add_argument("--decode-slowdown-per-seq", type=float, default=0.0,
                   help="per-sequence slowdown of a batched decode step (%(default)s)")
    g.add_argument("--kv-cache-tokens", type=float, default=None,
                   help="KV-cache capacity of an instance, tokens (default: unlimited)")
    g.add_argument("--rollout-pause-s", type=float, default=0.0,
                   help="seconds the rollout stops at every weight update (%(default)s)")
    g.add_argument("--train-s-per-token", type=float, default=0.0,
                   help="training seconds per token of the batch (%(default)s)")
    g.add_argument("--logprob-s-per-token", type=float, default=0.0,
                   help="log-prob recompute seconds per token of the batch (%(default)s)")


def _lengths(a: argparse.Namespace) -> LogNormal | Empirical:
    if a.lengths == "lognormal":
        return LogNormal(7.6 if a.mu is None else a.mu, 1.0 if a.sigma is None else a.sigma,
                         16384.0 if a.max_tokens is None else a.max_tokens)
    for flag, value in (("--mu", a.mu), ("--sigma", a.sigma)):
        if value is not None:
            raise ScenarioError(f"lengths: {flag} applies to --lengths lognormal only, not {a.lengths!r}")
    if a.lengths in datasets.NAMES:
        return datasets.by_name(a.lengths, a.max_tokens)
    if not os.path.exists(a.lengths):
        raise ScenarioError(f"lengths: no file {a.lengths!r} (give 'lognormal', a built-in data set: "
                            f"{', '.join(datasets.NAMES)}, or a CSV/parquet file)")
    return Empirical.from_file(a.lengths, a.lengths_column, a.count_column, max_tokens=a.max_tokens)


def _scenario(a: argparse.Namespace, pipeline: Any = None, *, rollout_slots: int | None = None) -> Scenario:
    return Scenario(
        rollout_slots=a.rollout_slots if rollout_slots is None else rollout_slots,
        slots_per_instance=a.slots_per_instance,
        decode_slowdown_per_seq=a.decode_slowdown_per_seq,
        kv_cache_tokens=a.kv_cache_tokens,
        rollout_pause_s=a.rollout_pause_s,
        train_s_per_token=a.train_s_per_token,
        logprob_s_per_token=a.logprob_s_per_token,
        decode_tokens_per_s=a.decode_tokens_per_s,
        batch_size=a.batch_size,
        train_step_s=a.train_step_s,
        weight_sync_s=a.weight_sync_s,
        horizon_s=a.horizon_s,
        lengths=_lengths(a),
        pipeline=pipeline if pipeline is not None else FullyAsync(),
        seed=a.seed,
        rng=a.rng,
    )


def _fmt(x: Any, kind: str) -> str:
    if isinstance(x, float) and math.isnan(x):
        return "-"
    if kind == "pct":
        return f"{x:.0%}"
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


def format_compare(df: pl.DataFrame) -> str:
    """The comparison frame as the chapter prints it (percentages, one decimal)."""
    cols = [("pipeline", "pipeline", "s"), ("steps", "steps", "s"), ("rollout_utilization", "utilization", "pct"),
            ("staleness_mean", "stale mean", "f1"), ("staleness_max", "stale max", "s"),
            ("drop_fraction", "dropped", "pct"), ("staleness_mean_short", "short <1K", "f1"),
            ("staleness_mean_long", "long >8K", "f1")]
    return _text_table(cols, df.iter_rows(named=True))


def _pipelines(cap: int) -> list[tuple[str, Any]]:
    return [("synchronous", Synchronous()), ("one-step async", OneStepAsync()), ("fully async", FullyAsync()),
            (f"fully async, cap {cap}", FullyAsync(max_staleness=cap))]


def _write_run(out: str, tag: str, sc: Scenario, max_samples: int) -> None:
    res = simulate(sc, max_samples=max_samples)
    res.samples.write_parquet(os.path.join(out, f"samples_{tag}.parquet"))
    res.steps.write_parquet(os.path.join(out, f"steps_{tag}.parquet"))


def _write_scenario(out: str, sc: Scenario) -> None:
    with open(os.path.join(out, "scenario.json"), "w") as f:
        json.dump(sc.describe(), f, indent=2)


def _cmd_compare(a: argparse.Namespace) -> int:
    base = _scenario(a)
    pipelines = _pipelines(a.max_staleness)
    df = compare(base, pipelines, max_samples=a.max_samples)
    if a.format == "csv":
        print(df.write_csv(), end="")
    elif a.format == "json":
        print(df.write_json())
    else:
        label = getattr(base.lengths, "name", None) or (
            f"lognormal(mu={base.lengths.mu:g}, sigma={base.lengths.sigma:g}), max {base.lengths.max_tokens:g} tokens"
            if isinstance(base.lengths, LogNormal) else "empirical")
        print(f"rollsim compare: {base.rollout_slots} slots x {base.decode_tokens_per_s:g} tokens/s, batch "
              f"{base.batch_size}, {base.train_step_s:g} s/step, {base.horizon_s / 3600:g} h, lengths {label}, "
              f"rng={base.rng}, seed={base.seed}")
        print(format_compare(df))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        df.write_parquet(os.path.join(a.out, "compare.parquet"))
        _write_scenario(a.out, base)
        for name, p in pipelines:
            _write_run(a.out, name.replace(" ", "_").replace(",", "").replace("-", "_"), base.replace(pipeline=p),
                       a.max_samples)
        print(f"wrote {a.out}/compare.parquet and samples_*/steps_* parquet files", file=sys.stderr)
    return 0


def _cmd_run(a: argparse.Namespace) -> int:
    if a.k is not None and a.pipeline != "k-step":
        raise ScenarioError(f"pipeline.k: --k applies to --pipeline k-step only, not {a.pipeline}")
    if a.max_staleness is not None and a.pipeline != "fully-async":
        raise ScenarioError(f"pipeline.max_staleness: --max-staleness applies to --pipeline fully-async only, "
                            f"not {a.pipeline}")
    pipeline = {"sync": Synchronous(), "one-step": OneStepAsync(), "fully-async": FullyAsync(a.max_staleness)}.get(a.pipeline)
    if a.pipeline == "k-step":
        pipeline = OffPolicy(1 if a.k is None else a.k)
    sc = _scenario(a, pipeline)
    res = simulate(sc, record="samples" if a.out else "summary", max_samples=a.max_samples)
    print(json.dumps(res.summary, indent=2))
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        res.samples.write_parquet(os.path.join(a.out, "samples.parquet"))
        res.steps.write_parquet(os.path.join(a.out, "steps.parquet"))
        with open(os.path.join(a.out, "summary.json"), "w") as f:
            json.dump(res.summary, f, indent=2)
        _write_scenario(a.out, sc)
    return 0


def _cmd_presets(a: argparse.Namespace) -> int:
    from rollsim import presets

    base = _scenario(a).replace(group_size=a.group_size, prompt_tokens=a.prompt_tokens,
                                prefill_tokens_per_s=a.prefill_tokens_per_s)
    df = presets.compare(base)
    if a.format == "csv":
        print(df.write_csv(), end="")
        return 0
    cols = [("system", "system", "s"), ("steps", "steps", "s"), ("rollout_utilization", "utilization", "pct"),
            ("staleness_mean", "stale mean", "f1"), ("staleness_max", "stale max", "s"),
            ("staleness_mean_long", "long >8K", "f1"), ("drop_fraction", "dropped", "pct"),
            ("wasted_fraction", "tokens wasted", "pct"), ("tokens_recomputed", "recomputed tok", "s")]
    records = (dict(r, tokens_recomputed=f"{r['tokens_recomputed']:.3g}") for r in df.iter_rows(named=True))
    print(_text_table(cols, records))
    return 0


def _cmd_split(a: argparse.Namespace) -> int:
    from rollsim import resources

    pipeline = {"sync": Synchronous(), "one-step": OneStepAsync(), "fully-async": FullyAsync(a.max_staleness)}[a.pipeline]
    # the split sizes the pool and the trainer: flags that it would override are refused whenever given
    sized = {"--rollout-slots": "rollout_slots", "--train-step-s": "train_step_s",
             "--train-s-per-token": "train_s_per_token", "--logprob-s-per-token": "logprob_s_per_token"}
    given = [flag for flag, dest in sized.items() if getattr(a, dest) is not None]
    if given:
        raise ScenarioError(f"split: {', '.join(given)} cannot be set: the split sizes the pool and the trainer from "
                            f"the GPUs (use --slots-per-instance, --train-fixed-s and --gpu-s-per-token, with any "
                            f"log-prob recompute in it)")
    a = argparse.Namespace(**dict(vars(a), train_step_s=_DEFAULT.train_step_s, train_s_per_token=0.0,
                                  logprob_s_per_token=0.0))
    # one instance to start from; the split's instances are the scenario's instances
    base = _scenario(a, pipeline, rollout_slots=a.slots_per_instance)
    kwargs = dict(gpus_per_instance=a.gpus_per_instance, slots_per_instance=a.slots_per_instance,
                  gpu_s_per_token=a.gpu_s_per_token, train_fixed_s=a.train_fixed_s,
                  colocated_switch_s=a.colocated_switch_s, max_drop_fraction=a.max_drop_fraction,
                  max_staleness_mean=a.max_staleness_mean, exclude_runaway=not a.allow_runaway)
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
    print(f"{'rollout':>7} {'train':>5} {'slots':>6} {'step s':>8} {'trainer idle':>12} {'rollout util':>12} "
          f"{'tokens/s':>9} {'tok/s/GPU':>9} {'dropped':>7} {'stale':>5} {'max':>4} {'runaway':>7}")
    for r in t.iter_rows(named=True):
        mark = "  <- best" if r["rank"] == 1 else ""
        if r["excluded_because"] is not None:
            mark = f"  excluded: {r['excluded_because']}"
        if r["placement"] == "colocated":
            mark = "  (colocated, synchronous: every GPU takes turns)" + mark
        stale = "-" if math.isnan(r["staleness_mean"]) else f"{r['staleness_mean']:.2f}"
        step = "-" if math.isnan(r["step_time_s"]) else f"{r['step_time_s']:.1f}"
        print(f"{r['rollout_gpus']:>7} {r['train_gpus']:>5} {r['rollout_slots']:>6} {step:>8} "
              f"{r['trainer_idle_fraction']:>12.0%} {r['rollout_utilization']:>12.0%} {r['tokens_trained_per_s']:>9.0f} "
              f"{r['tokens_per_s_per_gpu']:>9.1f} {r['drop_fraction']:>7.1%} {stale:>5} {r['staleness_max']:>4} "
              f"{'yes' if r['runaway'] else 'no':>7}{mark}")
    print(res.verdict)
    return 0


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


def _cmd_validate(a: argparse.Namespace) -> int:
    from rollsim import validation

    df = validation.validate(a.case or None)
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
    p = argparse.ArgumentParser(prog="rollsim", description="Simulate RL post-training pipelines for LLMs.")
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("compare", help="the chapter's comparison of four pipelines")
    _add_scenario_args(c, default_rng="python")
    c.add_argument("--max-staleness", type=int, default=2, help="cap of the last row (%(default)s)")
    c.add_argument("--format", choices=("table", "csv", "json"), default="table")
    c.add_argument("--out", default=None, help="directory for parquet frames")
    c.set_defaults(func=_cmd_compare)
    r = sub.add_parser("run", help="one pipeline; prints the summary as JSON")
    _add_scenario_args(r, default_rng="fast")
    r.add_argument("--pipeline", choices=("sync", "one-step", "k-step", "fully-async"), default="fully-async")
    r.add_argument("--k", type=int, default=None, help="k for --pipeline k-step (1)")
    r.add_argument("--max-staleness", type=int, default=None, help="drop-at-consumption cap (fully-async)")
    r.add_argument("--out", default=None, help="directory for samples/steps parquet and summary.json")
    r.set_defaults(func=_cmd_run)
    pr = sub.add_parser("presets", help="AReaL, verl, PipelineRL, slime, PRIME-RL side by side")
    _add_scenario_args(pr, default_rng="fast")
    pr.add_argument("--group-size", type=int, default=8, help="answers per prompt (%(default)s)")
    pr.add_argument("--prompt-tokens", type=float, default=500.0, help="prompt length, tokens (%(default)s)")
    pr.add_argument("--prefill-tokens-per-s", type=float, default=10000.0,
                    help="prefill throughput per slot, tokens/s (%(default)s)")
    pr.add_argument("--format", choices=("table", "csv"), default="table")
    pr.set_defaults(func=_cmd_presets)
    sp = sub.add_parser("split", help="search the rollout / training split of a GPU budget")
    _add_scenario_args(sp, default_rng="fast", instances=False)
    sp.add_argument("--gpus", type=int, required=True, help="GPU budget")
    sp.add_argument("--gpus-per-instance", type=int, default=1, help="GPUs per inference instance (%(default)s)")
    sp.add_argument("--slots-per-instance", type=int, default=64, help="sequences per instance (%(default)s)")
    sp.add_argument("--gpu-s-per-token", type=float, required=True,
                    help="GPU-seconds of training per token of the batch")
    sp.add_argument("--train-fixed-s", type=float, default=0.0, help="fixed seconds per step (%(default)s)")
    sp.add_argument("--pipeline", choices=("sync", "one-step", "fully-async"), default="fully-async")
    sp.add_argument("--colocated-switch-s", type=float, default=None,
                    help="also run the colocated synchronous baseline on all GPUs, with this many seconds per step "
                         "to offload and reload the rollout engine")
    sp.add_argument("--max-staleness", type=int, default=None)
    sp.add_argument("--max-drop-fraction", type=float, default=0.05,
                    help="recommend only splits that drop at most this fraction of finished samples (%(default)s)")
    sp.add_argument("--max-staleness-mean", type=float, default=None,
                    help="recommend only splits whose mean staleness is at most this (default: no limit)")
    sp.add_argument("--allow-runaway", action="store_true",
                    help="also recommend splits whose ready queue grows without bound (generation outruns training)")
    sp.add_argument("--format", choices=("table", "csv"), default="table")
    # the split sets these: refused whenever given (None tells given from not given); hidden from --help
    sp.set_defaults(func=_cmd_split, rollout_slots=None, train_step_s=None, train_s_per_token=None,
                    logprob_s_per_token=None)
    for action in sp._actions:
        if action.dest in ("rollout_slots", "train_step_s", "train_s_per_token", "logprob_s_per_token"):
            action.help = argparse.SUPPRESS
    va = sub.add_parser("validate", help="predicted against published speedups (verl, the chapter)")
    va.add_argument("--case", action="append", help="run only this case (repeatable); names: rollsim.validation.CASE_NAMES")
    va.add_argument("--notes", action="store_true", help="print each case's assumptions and, for misses, why")
    va.add_argument("--format", choices=("table", "csv"), default="table")
    va.set_defaults(func=_cmd_validate)
    from rollsim import report as report_cli
    from rollsim import sweep_cli
    from rollsim.sync import cli as sync_cli

    sweep_cli.add_parser(sub)
    sync_cli.add_parser(sub)
    report_cli.add_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (RollsimError, ValueError, FileNotFoundError) as e:
        print(f"rollsim: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rollsim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
