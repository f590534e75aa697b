"""``rollsim sync``: the chapter's weight-sync table, or an estimate for a cluster file.

The main CLI calls :func:`add_parser` on its subparsers and dispatches ``args.func(args)``.
"""

from __future__ import annotations

import argparse
import os
import sys

from rollsim._text import count

from .cluster import TOPOLOGIES

__all__ = ["add_parser", "run", "main"]


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Registers the ``sync`` subcommand on an argparse subparsers object."""
    p = subparsers.add_parser(
        "sync",
        help="weight-sync time and routing-replay volume",
        description="Without a file: the chapter's weight-sync table and routing-replay numbers. "
        "With a cluster TOML file: the estimate, its breakdown, and every topology compared, fastest first, "
        "with the term that makes each slower one slower.",
    )
    p.add_argument("cluster", nargs="?", help="cluster TOML file (see python/rollsim/sync/examples/cluster.toml)")
    p.add_argument("--validation", action="store_true",
                   help="older name of --validate (the SoftwareStack fits it printed are retired)")
    p.add_argument("--validate", action="store_true",
                   help="print the stacks' leave-one-out table: every published timing, calibration or prediction, "
                   "with its error")
    p.set_defaults(func=run)
    return p


def _chapter() -> None:
    from .chapter import chapter_table
    from .presets import MODELS
    from .replay import routing_replay

    t = chapter_table()
    print("Weight sync, 1e12 bytes per instance, 50 GB/s NIC, 450 GB/s NVLink, 8 GPUs per instance")
    print(f"{'design':<12}{'1 inst':>10}{'8 inst':>10}{'64 inst':>10}   chapter")
    for design in ("colocated", "naive", "parallel", "relay"):
        r = t.filter(t["design"] == design)
        vals = "".join(f"{x:>9.2f}s" for x in r["total_s"])
        ch = " / ".join(f"{x:g}" for x in r["chapter_s"])
        print(f"{design:<12}{vals}   {ch}")
    print("(relay: chunked pipeline (C + h - 1)(alpha + tau / C) at the best C, alpha = 50 us)")
    print()
    print("Routing replay (ids per token = layers x top-k x id width)")
    for name, m in (("DeepSeek-V3", MODELS["deepseek-v3"]), ("Qwen3-30B-A3B", MODELS["qwen3-30b-a3b"]), ("Kimi-K2", MODELS["kimi-k2"])):
        a, b = routing_replay(m), routing_replay(m, width="min")
        print(f"  {name:<14} {m.layers} layers x top-{m.top_k}: {a.bytes_per_token:>5} B/token int32, "
              f"{b.bytes_per_token:>4} B/token {b.id_bytes}-byte ids; 16K answer {b.bytes_per_answer / 1e6:.1f} MB")


def _cluster(path: str) -> None:
    from rollsim import scenario_toml

    from .pipeline import weight_sync_from_doc
    from .estimator import estimate, rank_topologies

    doc = scenario_toml.read_toml(path, "cluster file")  # a directory, FIFO or non-UTF-8 file: a clear error
    scenario_toml.check_integers("", doc)  # a 400-digit integer: named, not an OverflowError
    ws = weight_sync_from_doc(doc)  # what load_weight_sync reads; a bad [stack] or pause_s is refused first
    c, st = ws.cluster, ws.stack
    e = estimate(c)
    m = c.model
    print(f"{m.name}: {m.n_params / 1e9:.1f}B params, {m.n_tensors} tensors, {e.model_bytes / 1e9:.1f} GB per copy "
          f"({m.train_precision.name} -> {m.infer_precision.name})")
    print(f"train tp{c.train.tp} pp{c.train.pp} dp{c.train.dp} ep{c.train.ep}{' fsdp' if c.train.fsdp else ''} "
          f"({count(c.train.gpus, 'GPU')}) -> {c.infer.instances} x tp{c.infer.tp} ep{c.infer.ep} ({count(c.infer.gpus, 'GPU')}); "
          f"software {c.software.name!r}")
    print(f"topology {c.topology}: {e.total_s:.3f} s per update (pause {e.pause_s:.3f} s); dominant: {e.dominant_term}")
    for k, v in e.breakdown.items():
        share = v / e.total_s * 100 if e.total_s else 0.0
        print(f"  {k:<16}{v:>10.4f} s {share:>6.1f} %")
    _stack(st, c)
    # what Scenario(weight_sync=load_weight_sync(FILE)) takes: said with the default pause_s too (the
    # pipeline's sync is the stack's, not the ideal topology's above, when the file has a [stack])
    f = ws.fields()
    given = "" if "pause_s" in doc else " (the default; pause_s in the file sets it)"
    print(f"in a Scenario (pause_s = {ws.pause_s!r}{given}): weight_sync_s = {f['weight_sync_s']:.3f} s, "
          f"rollout_pause_s = {f['rollout_pause_s']:.3f} s")
    # colocated needs training and inference on the same GPUs: ranked (and recommended) only when
    # the cluster has that placement, else shown apart
    can_colocate = c.topology == "colocated" or c.hardware.colocated
    ranked = rank_topologies(c, [t for t in TOPOLOGIES if can_colocate or t != "colocated"])
    best = ranked.row(0, named=True)
    print("all topologies with this cluster, fastest first (slower: by how much, and the term that makes it slower):")
    for r in ranked.iter_rows(named=True):
        t = r["topology"]
        if r["error"] is not None:
            print(f"  {t:<10} n/a ({r['error']})")
        elif r["rank"] == 1:
            print(f"  {t:<10}{r['total_s']:>10.3f} s  ({r['dominant_term']})  fastest")
        else:
            print(f"  {t:<10}{r['total_s']:>10.3f} s  ({r['dominant_term']})  {_why_slower(r, best)}")
    if not can_colocate:
        print(f"  {'colocated':<10}{_colocated(c)}  {_COLOCATED_APART}")
    designs = _designs(c)
    ideal = _is_ideal(c.software)
    line = (f"fastest topology {'(ideal software: a lower bound, not a stack to run)' if ideal else f'with software {c.software.name!r}'}"
            f" for this cluster: {best['topology']} ({best['total_s']:.3f} s)")
    own = ranked.filter(ranked["topology"] == c.topology).row(0, named=True)
    if own["topology"] != best["topology"] and own["error"] is None:
        line += f"; the configured {own['topology']} is {_why_slower(own, best)}"
    print(line)
    top = designs.row(0, named=True)
    if not ideal:
        print(_lower_bound(c, [t for t in TOPOLOGIES if can_colocate or t != "colocated"], top))
    print(_recommendation(top))


def _is_ideal(sw) -> bool:
    """Whether a SoftwareStack is the ideal one: full link bandwidth and no software overheads."""
    return (sw.efficiency == 1.0 and sw.per_tensor_s == 0 and sw.per_bucket_s == 0 and sw.per_update_s == 0
            and sw.pause_resume_s == 0 and not sw.source_on_host)


#: What the ideal software of the lower bound leaves out (``rollsim sync FILE``).
IDEAL_WORDS = "every link at full bandwidth, no per-tensor, per-bucket, per-update or pause costs"


def _lower_bound(c, topologies: list[str], top: dict) -> str:
    """The fastest topology on ``c`` with ideal software (the cluster's bucket size and quantization
    throughput kept): a lower bound, said as such (and said not to be one if the fastest calibrated
    stack ``top`` is faster, which its own transport can be)."""
    import dataclasses

    from .cluster import SoftwareStack
    from .estimator import rank_topologies

    sw = SoftwareStack(bucket_bytes=c.software.bucket_bytes, quant_bytes_per_s=c.software.quant_bytes_per_s)
    r = rank_topologies(dataclasses.replace(c, software=sw), topologies).row(0, named=True)
    if r["total_s"] > top["total_s"]:
        return (f"ideal software ({IDEAL_WORDS}): {r['topology']} {r['total_s']:.3f} s, not a lower bound here: "
                f"the stack {top['stack']} ({top['transport']}) is faster")
    return (f"lower bound (ideal software: {IDEAL_WORDS}; not a stack to run): "
            f"{r['topology']} {r['total_s']:.3f} s")


def _recommendation(r: dict) -> str:
    """The last line of ``rollsim sync FILE``: the fastest calibrated stack, with how far to trust it."""
    text = f"recommended: stack {r['stack']} ({r['transport']}), {r['total_s']:.3f} s per update"
    if r["low_s"] is not None:
        text += f" ({r['low_s']:.3f}-{r['high_s']:.3f} s: its {r['checked_on']}, rollsim sync --validate)"
    else:
        text += f" ({r['checked_on']})"
    return text + "; the fastest calibrated stack on this cluster"


#: How ``rollsim sync FILE`` shows colocated on a cluster whose training and inference GPUs are apart.
_COLOCATED_APART = ("not ranked: needs a different placement (training and inference on the same GPUs, "
                    "hardware.colocated = true)")


def _colocated(c) -> str:
    """The seconds colocated would take on ``c``, or why it does not apply."""
    from .estimator import rank_topologies

    try:
        r = rank_topologies(c, ["colocated"]).row(0, named=True)
    except ValueError as err:
        return f" n/a ({err})"
    return f"{r['total_s']:>10.3f} s"


def _stack(st, c) -> None:
    from .stacks import estimate_stack

    if st is None:
        return
    e = estimate_stack(c, st)
    print(f"stack {st.name} ({st.transport}): {e.total_s:.3f} s per update; dominant: {e.dominant_term}; "
          f"{e.received_bytes_per_rank / 2**30:.2f} GiB into the busiest inference GPU")
    for k, v in e.breakdown.items():
        if v:
            print(f"  {k:<16}{v:>10.4f} s {v / e.total_s * 100:>6.1f} %")


def _designs(c):
    from .stacks import rank_designs

    ranked = rank_designs(c)
    print("calibrated stacks on this cluster, fastest first (slower: by how much, and the term that makes it slower):")
    for r in ranked.iter_rows(named=True):
        why = "fastest" if r["rank"] == 1 else (
            "as fast (a tie)" if r["slower_because"] is None
            else f"{r['slower_by_s']:.3f} s slower: {r['slower_because']} +{r['slower_because_s']:.3f} s")
        print(f"  {r['stack']:<26}{r['transport']:<16}{r['total_s']:>10.3f} s  ({r['dominant_term']})  {why}")
    return ranked


def _validate() -> None:
    from .validation import summary, validation_table

    t = validation_table()
    print(f"{'stack':<18}{'role':<12}{'measured':>9}{'predicted':>10}{'error':>8}{'loo':>8}  setting")
    for r in t.iter_rows(named=True):
        loo = "" if r["loo_error"] is None else f"{r['loo_error'] * 100:.0f}%"
        print(f"{r['stack']:<18}{r['role']:<12}{r['measured_s']:>8.2f}s{r['predicted_s']:>9.2f}s"
              f"{r['error'] * 100:>7.1f}%{loo:>8}  {r['setting']}")
    s = summary()
    print(f"predictions within 25 %: {s['within_25pct']} of {s['predictions']}")
    for m, v in s["scaling"].items():
        print(f"1 -> 16 instances, {m}: measured +{v['measured_pct']:.1f} %, predicted +{v['predicted_pct']:.1f} %")


def _why_slower(r: dict, best: dict) -> str:
    """``X s slower: TERM +Y s`` for a row of :func:`rank_topologies` against the fastest row."""
    if r["slower_because"] is None:
        return "as fast (a tie)"
    text = f"{r['slower_by_s']:.3f} s slower: {r['slower_because']} +{r['slower_because_s']:.3f} s"
    if r["slower_because"] == "software_s" and r["tensors_charged"] != best["tensors_charged"]:
        text += (f" ({r['tensors_charged']:.0f} tensors charged per_tensor_s on the busiest rank, against "
                 f"{best['tensors_charged']:.0f} for {best['topology']})")
    return text


#: What ``rollsim sync --validation`` says before the table (on stderr).
VALIDATION_NOTE = ("rollsim sync: --validation is the older name of --validate: the SoftwareStack fits it printed are "
                   "retired (one model of real stacks: rollsim.sync.stacks, docs/sync_stacks.md)")


def _validation() -> None:
    print(VALIDATION_NOTE, file=sys.stderr)
    _validate()


def run(args: argparse.Namespace) -> int:
    """Runs the subcommand; returns the exit code (2 on a bad cluster file, with the message on
    stderr as ``rollsim: error: ...``, like every rollsim command)."""
    from rollsim.errors import RollsimError, invalid

    try:
        table = "--validate" if getattr(args, "validate", False) else (
            "--validation" if getattr(args, "validation", False) else None)
        if table is not None and getattr(args, "cluster", None):
            raise invalid("cluster", f"{table} prints the published rows' table and takes no cluster file, got "
                                     f"{args.cluster!r} (run rollsim sync FILE for the cluster)")
        if getattr(args, "validate", False):
            _validate()
        elif getattr(args, "validation", False):
            _validation()
        elif getattr(args, "cluster", None):
            _cluster(args.cluster)
        else:
            _chapter()
    except BrokenPipeError:  # stdout closed early: the main command line stops quietly
        raise
    except (RollsimError, ValueError, OSError, OverflowError) as e:
        if isinstance(e, OSError) and e.strerror and e.filename is not None:   # as the other commands say it
            text = f"{e.strerror.lower()}: {os.fsdecode(e.filename)!r}"
        else:
            text = " ".join(line.strip() for line in str(e).splitlines() if line.strip())
        print(f"rollsim: error: {text or type(e).__name__}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry point (``python -m rollsim.sync.cli``)."""
    ap = argparse.ArgumentParser(prog="rollsim")
    sub = ap.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = ap.parse_args(["sync", *(argv if argv is not None else sys.argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
