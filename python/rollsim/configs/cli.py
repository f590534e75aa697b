"""The ``import``, ``calibrate`` and ``whatif`` subcommands (registered by :mod:`rollsim.cli`)."""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from typing import Any

from rollsim._text import format_table as _format_table
from rollsim.errors import (CalibrationPlausibilityWarning, MetricsRowsSkippedWarning, StalenessCapLivelockWarning,
                            invalid)
from rollsim.pipelines import FullyAsync

__all__ = ["add_parsers", "int_list", "staleness_list", "threshold_list"]

_FW = ("verl", "areal", "slime", "openrlhf")


def int_list(flag: str):
    """argparse type: ``"8,16"`` -> ``[8, 16]`` (positive integers)."""

    def conv(s: str) -> list[int]:
        out = []
        for part in s.split(","):
            p = part.strip()
            if not p.isdigit() or int(p) < 1:
                raise argparse.ArgumentTypeError(f"{flag}: must be positive integers separated by commas, got {s!r}")
            out.append(int(p))
        return out

    conv.__name__ = flag
    return conv


def threshold_list(s: str) -> list[float]:
    """argparse type of ``--staleness-threshold``: ``"0.1,0.5"`` -> ``[0.1, 0.5]`` (numbers >= 0)."""
    out: list[float] = []
    for part in s.split(","):
        try:
            v = float(part.strip())
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and 0 <= v < 1e6):
            raise argparse.ArgumentTypeError(f"--staleness-threshold: must be numbers in [0, 1e6) separated by commas, "
                                             f"got {s!r}")
        out.append(v)
    return out


def staleness_list(s: str, flag: str = "--max-staleness") -> list[int | None]:
    """argparse type: ``"1,2,none"`` -> ``[1, 2, None]``."""
    out: list[int | None] = []
    for part in s.split(","):
        p = part.strip().lower()
        if p == "none":
            out.append(None)
        elif p.isdigit():
            out.append(int(p))
        else:
            raise argparse.ArgumentTypeError(f"{flag}: must be integers >= 0 or 'none' separated by commas, got {s!r}")
    return out


def eta_list(s: str) -> list[int | None]:
    """argparse type of ``--admission-eta``: as :func:`staleness_list`."""
    return staleness_list(s, "--admission-eta")


def add_parsers(sub: Any) -> None:
    """Registers ``import``, ``calibrate`` and ``whatif``."""
    im = sub.add_parser("import", help="read a verl / AReaL / slime / OpenRLHF config as a scenario, with notes",
                        description="Prints the scenario a framework's config becomes (as TOML with --toml) and a "
                                    "note for every option read, defaulted, assumed or ignored.")
    im.add_argument("file", help="the config: verl YAML or launch script, AReaL YAML, slime or OpenRLHF launch script")
    im.add_argument("overrides", nargs="*", default=[], help="options after the file's: key=value (verl, AReaL), or after -- "
                                                 "the --name value arguments (slime, OpenRLHF)")
    im.add_argument("--framework", choices=_FW, default=None, help="detected from the file when not given")
    im.add_argument("--gpu", default=None, help="the accelerator (rollsim.hardware.ACCELERATORS): adds the deployment")
    im.add_argument("--toml", action="store_true", help="print the scenario as TOML, the import notes as comments above it "
                                                        "(rollsim run FILE.toml runs it)")
    im.set_defaults(func=_cmd_import)
    descriptions = {
        "calibrate": "Imports the run's config (as rollsim import), fits its scenario's answer lengths (with their "
                     "drift over steps), decode speed, per-step overhead, training cost and sync time on the run's "
                     "per-step metrics, and prints each parameter with its bootstrap interval and the metrics it "
                     "came from (rollsim.calibrate; docs/configs.md).",
        "whatif": "Calibrates on the run's metrics (as rollsim calibrate), then simulates the baseline and every "
                  "combination of the alternatives given (--pipeline, --max-staleness, --rollout-gpus, ...), each with "
                  "an interval over bootstrap draws of the calibration; the baseline row is checked against the "
                  "run's own step time (rollsim.whatif; docs/configs.md)."}
    formats = {"calibrate": "table: the parameters rounded for reading (4 significant digits, text in full); csv / "
                            "json: exact values (%(default)s)",
               "whatif": "table: the main columns rounded for reading (an undefined value as -, its column footnoted with why); csv / json: "
                         "every column (the train_scale and interval columns, measured_step_s, error), exact values "
                         "(%(default)s)"}
    for name, helptext in (("calibrate", "fit a config's scenario on a run's per-step metrics"),
                           ("whatif", "calibrate on a run's metrics, then predict alternatives with intervals")):
        p = sub.add_parser(name, help=helptext, description=descriptions[name])
        p.add_argument("--config", required=True, help="the run's config (as for rollsim import)")
        p.add_argument("overrides", nargs="*", default=[], help="options of the config after the file's, as for rollsim import: "
                                                    "key=value (verl, AReaL), or after -- the --name value arguments "
                                                    "(slime, OpenRLHF)")
        p.add_argument("--metrics", required=True, help="per-step metrics: CSV, JSONL, JSON or parquet")
        p.add_argument("--framework", choices=_FW, default=None, help="of the config; detected when not given")
        p.add_argument("--metric-names", choices=("verl", "areal", "slime", "openrlhf", "generic"), default=None,
                       help="whose metric names the table uses; detected from the columns when not given")
        p.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples over steps (%(default)s)")
        p.add_argument("--gpu", default=None, help="the accelerator (rollsim.hardware.ACCELERATORS; configs do not "
                                                   "name it): a training GPU change is rescaled by the hardware model")
        p.add_argument("--model", default=None, help="the trained model (rollsim.hardware.MODELS name or Hugging Face "
                                                     "id), when the config's model path is not one rollsim knows")
        p.add_argument("--format", choices=("table", "csv", "json"), default="table", help=formats[name])
        if name == "calibrate":
            p.add_argument("--toml", action="store_true", help="print the fitted scenario as TOML instead")
            p.set_defaults(func=_cmd_calibrate)
        else:
            p.add_argument("--pipeline", default=None, help="comma-separated: sync, one-step, k-step:K, fully-async, "
                                                            "verl-fully-async (verl's trainer cadence)")
            p.add_argument("--max-staleness", type=staleness_list, default=None,
                           help="comma-separated caps for fully-async (none: no cap): samples older than the cap "
                                "are dropped when the trainer takes them")
            p.add_argument("--admission-eta", type=eta_list, default=None,
                           help="comma-separated admission bounds for fully-async (AReaL's max_head_offpolicyness; "
                                "none: no bound): a group starts only while it can train within eta versions, "
                                "nothing dropped")
            p.add_argument("--trigger-parameter-sync-step", type=int_list("--trigger-parameter-sync-step"),
                           default=None, help="comma-separated local updates per parameter sync (verl's fully async "
                                              "cadence: --pipeline verl-fully-async, or a verl fully_async config)")
            p.add_argument("--require-batches", type=int_list("--require-batches"), default=None,
                           help="comma-separated mini-batches per local update (verl's fully async cadence)")
            p.add_argument("--staleness-threshold", type=threshold_list, default=None,
                           help="comma-separated staleness thresholds (verl's fully async rollouter)")
            p.add_argument("--rollout-gpus", type=int_list("--rollout-gpus"), default=None,
                           help="comma-separated rollout GPU counts")
            p.add_argument("--train-gpus", type=int_list("--train-gpus"), default=None,
                           help="comma-separated training GPU counts")
            p.add_argument("--prompts", type=int_list("--prompts"), default=None, help="comma-separated prompts per step")
            p.add_argument("--group-size", type=int_list("--group-size"), default=None,
                           help="comma-separated answers per prompt")
            p.add_argument("--max-response-tokens", type=int_list("--max-response-tokens"), default=None,
                           help="comma-separated answer-length limits, tokens")
            p.add_argument("--draws", type=int, default=20, help="bootstrap draws simulated per row (%(default)s)")
            p.add_argument("--steps", type=int, default=12, help="steps simulated per run (%(default)s)")
            p.add_argument("--plot", default=None, help="also draw the step times to this .png / .svg / .pdf")
            p.set_defaults(func=_cmd_whatif)


def _cmd_import(a: argparse.Namespace) -> int:
    from rollsim import configs

    imp = configs.load(a.file, a.framework, a.overrides, gpu=a.gpu)
    for line in imp.warnings():  # unknown options (typos): on stderr, so that --toml's output stays a scenario
        print(line, file=sys.stderr)
    if a.toml:
        # the import notes as TOML comments above the scenario: `--toml > run.toml` keeps them and still reads back
        print(f"# rollsim import: {imp.framework} config {imp.source}; its import notes (kind  option = value -> became):")
        for line in imp.notes_table().splitlines():
            print("# " + line)
        print(imp.scenario.to_toml(), end="")
        return 0
    print(f"rollsim import: {imp.framework} config {imp.source}")
    print(f"scenario: {imp.scenario!r}")
    print(f"sync: {'none' if imp.sync is None else 'rollsim.sync.Cluster (model ' + str(imp.model) + ')'}")
    print(f"deployment: {'none' if imp.deployment is None else imp.deployment.breakdown()}")
    print()
    print(imp.notes_table())
    return 0


def _calibrated(a: argparse.Namespace) -> Any:
    from rollsim import configs
    from rollsim.calibration import IMPLAUSIBLE, calibrate

    imp = configs.load(a.config, a.framework, a.overrides, gpu=a.gpu)
    for line in imp.warnings():
        print(line, file=sys.stderr)
    with warnings.catch_warnings():
        # the rows left out and an implausible fit are in cal.notes, printed below: said once
        warnings.simplefilter("ignore", MetricsRowsSkippedWarning)
        warnings.simplefilter("ignore", CalibrationPlausibilityWarning)
        cal = calibrate(a.metrics, imp, framework=a.metric_names, bootstrap=a.bootstrap, model=a.model, gpu=a.gpu)
    for line in cal.notes:
        print(f"rollsim: {'warning' if line.startswith(IMPLAUSIBLE) else 'note'}: {line}", file=sys.stderr)
    return cal


#: Decimals of the ``whatif`` table's columns, by unit: seconds to 0.1 s, tokens/s whole, staleness
#: (policy versions) and the drop fraction to 0.01 / 0.001. Other float columns: :func:`rollsim._text.sig`.
_DECIMALS = {"step_s": 1, "trainer_wait_s": 1, "tokens_per_s": 0, "staleness_mean": 2, "staleness_short": 2,
             "staleness_long": 2, "drop_fraction": 3}


def format_table(df: Any, notes: dict[str, str] | None = None, row_notes: dict[int, str] | None = None) -> str:
    """:func:`rollsim._text.format_table` with the decimals of the ``whatif`` / ``calibrate``
    columns' units (:data:`_DECIMALS`)."""
    return _format_table(df, notes, row_notes, decimals=_DECIMALS)


def _print_frame(df: Any, fmt: str, notes: dict[str, str] | None = None) -> None:
    if fmt == "csv":
        print(df.write_csv(), end="")
    elif fmt == "json":
        print(df.write_json())
    else:
        print(format_table(df, notes))


def _cmd_calibrate(a: argparse.Namespace) -> int:
    cal = _calibrated(a)
    if a.toml:
        print(cal.scenario.to_toml(), end="")
        return 0
    if a.format == "table":
        err = cal.residuals["step_error"].to_numpy()
        rows = (f"{cal.metrics.height} steps" if cal.steps_per_row == 1 else
                f"{cal.metrics.height} metrics rows of {cal.steps_per_row} training steps each")
        print(f"rollsim calibrate: {rows} ({cal.framework} metric names); {'step' if cal.steps_per_row == 1 else 'row'} "
              f"time predicted vs measured: mean error {100 * float(err.mean()):+.1f} %, worst "
              f"{100 * float(abs(err).max()):.1f} %")
        if cal.steps_per_row > 1:
            print(f"parameters per training step of {cal.scenario.batch_size} samples (the row's fixed costs / "
                  f"{cal.steps_per_row}; weight_sync_s_per_sync: the row's one sync)")
    _print_frame(cal.params, a.format)
    return 0


def _whatif_nan_notes(sc: Any) -> dict[str, str]:
    """Why a column of the ``whatif`` table can be NaN (its footnote), for the calibrated scenario ``sc``."""
    from rollsim.lengths import LogNormal
    from rollsim.simulation import LONG_TOKENS, SHORT_TOKENS

    few = "fewer than 3 training steps completed (the first two are warm-up); raise --steps"
    long = (f"no trained answer was longer than {LONG_TOKENS} tokens, the bound of staleness_long (rollsim.LONG_TOKENS)"
            f"; a fully async run's longest answers are the stalest, dropped by its cap or still in flight")
    over = getattr(sc.pipeline, "over_sampling", 0.0) or 0.0
    if over > 0:  # the config's over-sampling (slime --over-sampling-batch-size, verl over_sample_rate)
        long += (f"; a batch pipeline over-sampling by {over:g} (the config's) trains each batch's first-finished "
                 "answers and drops the longest unfinished")
    L = sc.lengths
    if isinstance(L, LogNormal):
        if L.max_tokens <= LONG_TOKENS:
            long += f"; here answers are capped at lengths.max_tokens = {L.max_tokens:g}"
        else:
            p = 0.5 * math.erfc((math.log(LONG_TOKENS) - L.mu) / (L.sigma * math.sqrt(2))) if L.sigma > 0 else \
                float(L.mu > math.log(LONG_TOKENS))
            long += (f"; the calibrated lengths (mu {L.mu:.3g}, sigma {L.sigma:.3g}, max_tokens {L.max_tokens:g}) put "
                     f"{p:.2g} of answers beyond {LONG_TOKENS} tokens")
    return {"step_s": few, "step_s_low": few, "step_s_high": few, "tokens_per_s": few, "trainer_wait_s": few,
            "staleness_mean": "no sample was trained", "staleness_long": long,
            "staleness_short": f"no trained answer was shorter than {SHORT_TOKENS} tokens"}


def _whatif_row_notes(cal: Any, df: Any) -> dict[int, str]:
    """Why a row of the ``whatif`` table is NaN throughout (``cannot_train``: it was not simulated),
    by row index, naming ``--max-staleness`` and the config's option that set the sync cadence."""
    from rollsim.simulation import livelock_reason

    option = next((x.option for x in getattr(cal.base, "notes", ()) if x.became.startswith("sync_every =")), None)
    out = {}
    for i, (why, label, n) in enumerate(zip(df["cannot_train"], df["variant"], df["sync_every"])):
        if why is None:
            continue
        # the variant's cadence: the config's, or verl's fully async one of the variant (--pipeline
        # verl-fully-async, --trigger-parameter-sync-step), which whatif's flags do change
        if "trigger_parameter_sync_step=" in label:
            cadence = f"the variant's sync_every = {n} from its --trigger-parameter-sync-step"
        elif label.startswith("verl-fully-async"):
            cadence = (f"the variant's sync_every = {n}, verl-fully-async's trigger_parameter_sync_step (set it with "
                       f"--trigger-parameter-sync-step)")
        else:
            cadence = f"the config's sync cadence: sync_every = {n}" + (f" from its {option}" if option else "")
        out[i] = f"not simulated: {livelock_reason(n, None, cap='--max-staleness')} ({cadence})"
    return out


def _cmd_whatif(a: argparse.Namespace) -> int:
    from rollsim.what_if import VERL_FULLY_ASYNC_NAMES, _variant_pipeline, grid, plot_whatif, whatif

    if a.plot:  # before the calibration and the runs, naming the flag (plot.save names its argument, path)
        from rollsim import plot

        plot.check_save_path(a.plot, "--plot")
    axes: dict[str, Any] = {}
    if a.pipeline is not None:
        axes["pipeline"] = [p.strip() for p in a.pipeline.split(",") if p.strip()]
    cadence = ("trigger_parameter_sync_step", "require_batches", "staleness_threshold")
    for key in ("max_staleness", "admission_eta", "rollout_gpus", "train_gpus", "prompts", "group_size", "max_response_tokens",
                *cadence):
        if getattr(a, key) is not None:
            axes[key] = getattr(a, key)
    cal = _calibrated(a)
    verl = "pipeline" not in axes and getattr(cal.base, "fully_async", None) is not None or any(
        p.lower().replace("_", "-") in VERL_FULLY_ASYNC_NAMES for p in axes.get("pipeline", []))
    given = [k for k in cadence if k in axes]
    if given and not verl:  # the grid leaves them out of other pipelines: given alone they would be lost
        raise invalid("--" + given[0].replace("_", "-"), "is verl's fully async cadence: it needs --pipeline "
                      "verl-fully-async (or a verl fully_async config without --pipeline)")
    for key in ("max_staleness", "admission_eta"):
        flag = "--" + key.replace("_", "-")
        if key in axes and "pipeline" in axes and not any(
                isinstance(_variant_pipeline(p), FullyAsync) for p in axes["pipeline"]):
            # the grid gives the caps to the fully asynchronous pipelines only: with none of them they would be lost
            raise invalid(flag, f"applies to the fully asynchronous pipelines only (--pipeline fully-async or "
                          f"verl-fully-async), got --pipeline {a.pipeline}")
        if key in axes and "pipeline" not in axes and not isinstance(cal.scenario.pipeline, FullyAsync):
            # a fully async base takes the cap on its own pipeline
            raise invalid(flag, f"needs --pipeline fully-async (the {'cap' if key == 'max_staleness' else 'bound'} "
                                f"applies to that pipeline; the "
                                f"config's is {type(cal.scenario.pipeline).__name__})")
    with warnings.catch_warnings():
        if a.format == "table":  # the table says it, naming the flag (csv / json: the warning, and cannot_train)
            warnings.simplefilter("ignore", StalenessCapLivelockWarning)
        df = whatif(cal, grid(**axes) if axes else [], draws=a.draws, steps=a.steps)
    if a.format == "table":
        base = df.row(0, named=True)
        k = cal.steps_per_row
        unit = "step" if k == 1 else "metrics row"
        rows_of = "samples_per_row" in df.columns  # a row of several steps: the config's, or verl's cadence
        print(f"rollsim whatif: calibrated on {cal.metrics.height} {unit}s; baseline predicted {base['step_s']:.1f} s "
              f"per {unit} vs measured {base['measured_step_s']:.1f} s ({100 * base['error']:+.1f} %)")
        cols = ["variant", "step_s", "step_s_low", "step_s_high", "tokens_per_s", "trainer_wait_s", "staleness_mean",
                "staleness_long", "drop_fraction"]
        if k > 1:
            print(f"step_s and trainer_wait_s: seconds per metrics row = {k} training steps (samples_per_row: "
                  f"{base['samples_per_row']} for the baseline; the config logs one row per weight sync)")
        elif rows_of:
            print("step_s and trainer_wait_s: seconds per step; a verl fully async variant's per parameter sync "
                  "(its trigger_parameter_sync_step local updates, as verl logs it; samples_per_row)")
        if rows_of:
            cols.insert(1, "samples_per_row")
        moved = (df["train_gpus"].drop_nulls().n_unique() > 1 or df["rollout_gpus"].drop_nulls().n_unique() > 1)
        if moved:  # a variant moves the GPUs: show both sides (a colocated run's split was shown as its trainer only)
            cols[1:1] = ["rollout_gpus", "train_gpus"]
        lay = cal.layout
        if moved and lay is not None and lay.colocated:
            print(f"rollsim: note: the baseline is colocated: rollout and training take turns on the same "
                  f"{lay.rollout_gpus} GPUs; an asynchronous variant splits them, half each unless --rollout-gpus R (the "
                  f"trainer gets the rest)", file=sys.stderr)
        print(format_table(df.select(cols), _whatif_nan_notes(cal.scenario), _whatif_row_notes(cal, df)))
    else:
        _print_frame(df, a.format)
    if a.plot:
        plot_whatif(df, path=a.plot)
        print(f"wrote {a.plot}", file=sys.stderr)
    return 0
