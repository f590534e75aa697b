"""slime (THUDM/slime): the argument list of a launch script's ``python train.py ...`` or
``python train_async.py ...`` command.

Option names and defaults: ``slime/utils/arguments.py`` and ``slime/backends/sglang_utils/arguments.py``
(checked at THUDM/slime commit 624b824, 2026-08-21);
the fully asynchronous rollout is ``slime/rollout/fully_async_rollout.py`` (``examples/fully_async/``),
all in THUDM/slime. The entry point decides the pipeline: ``train.py`` synchronous, ``train_async.py``
one-step overlap (it refuses ``--colocate``), ``train_async.py`` with ``--rollout-function-path
slime.rollout.fully_async_rollout.generate_rollout_fully_async`` (or ``fully_async_rollout.generate_rollout_fully_async``,
the module of ``examples/fully_async/`` on the path, as its README and scripts give it) fully asynchronous.

Option names: ``slime_options.txt`` beside this module lists slime's own options and those of the
Megatron-LM parser slime extends, read from the repositories (its header names the files and commits;
``scripts/derive_slime_options.py`` derives it). slime itself accepts any argument (its Megatron parse
runs with ``ignore_unknown_args=True`` and its SGLang parse with ``parse_known_args``:
``slime/utils/arguments.py``, ``parse_args``), so a typo there is silently lost; here an argument of the
training command that is in neither list and is not a pass-through (``--sglang-*``: SGLang's server
options, ``--router-*``: sglang_router's) is an unknown option, warned with the closest names. Every
argument nothing reads is noted as ignored, saying whose it is.

Batch units: ``--rollout-batch-size`` counts PROMPTS (a rollout returns ``rollout_batch_size x
n_samples_per_prompt`` samples); ``--global-batch-size`` counts SAMPLES (one optimizer step), so a
rollout makes ``rollout_batch_size x n_samples_per_prompt / global_batch_size`` optimizer steps and
one weight update: rollsim's step (one policy version) is the whole rollout.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import FullyAsync, OneStepAsync, Synchronous

from ._common import (UNKNOWN_OPTION, ImportedConfig, Layout, Note, Reader, build, known_options, other_commands_note,
                      scalar, script_commands, trainer_command,
                      unknown_option_notes)

__all__ = ["load", "parse_argv"]

FULLY_ASYNC_ROLLOUT = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"


def is_fully_async_rollout(path: str) -> bool:
    """``--rollout-function-path`` names slime's fully asynchronous rollout function: its module
    ``fully_async_rollout`` in any package (``slime.rollout.``, or none: THUDM/slime
    ``examples/fully_async/README.md`` runs ``fully_async_rollout.generate_rollout_fully_async`` with that
    directory on ``PYTHONPATH``)."""
    return path == "fully_async_rollout.generate_rollout_fully_async" or path.endswith(
        ".fully_async_rollout.generate_rollout_fully_async")


def parse_argv(words: list[str], *, dashes_to_dots: bool = False, multi: bool = False) -> dict[str, Any]:
    """``--key value`` pairs and bare ``--flag`` switches (True) of an argument list; ``--key=value``
    too. Names keep their spelling (``--rollout-batch-size``). ``multi``: every word up to the next
    option is the option's (argparse ``nargs="+"``, slime's ``--eval-prompt-data NAME PATH``): one
    value as it is, several as a list; otherwise an option takes one word."""
    out: dict[str, Any] = {}
    # shell arrays (ARGS=( --a 1 ... )) hold arguments that the command expands with ${ARGS[@]}: their
    # words count, the brackets and the expansions do not
    words = [w for w in words if w not in ("(", ")") and not w.endswith("=(") and not w.startswith("$")]
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("--") and len(w) > 2:
            if "=" in w:
                k, _, v = w.partition("=")
                out[k] = scalar(v)
            elif i + 1 < len(words) and not _is_option(words[i + 1]):
                j = i + 1
                while multi and j + 1 < len(words) and not _is_option(words[j + 1]):
                    j += 1
                vals = [scalar(v) for v in words[i + 1:j + 1]]
                out[w] = vals[0] if len(vals) == 1 else vals
                i = j + 1
                continue
            else:
                out[w] = True
        i += 1
    return out


def _is_option(word: str) -> bool:
    return word.startswith("--") and len(word) > 2


#: Prefixes of the arguments slime passes on unchecked: SGLang's ``ServerArgs`` (added as
#: ``--sglang-<name>`` by ``slime/backends/sglang_utils/arguments.py``, ``add_sglang_arguments``) and
#: sglang_router's ``RouterArgs`` (``--router-<name>``, ``use_router_prefix=True``).
PASS_THROUGH = {"--sglang-": "an SGLang server option (slime passes --sglang-* to SGLang's ServerArgs)",
                "--router-": "an SGLang router option (slime passes --router-* to sglang_router's RouterArgs)"}

#: Pass-through options rollsim reads (SGLang ``--mem-fraction-static``): a near miss of one of them, or
#: of slime's own ``--sglang-*`` options, is a typo.
_READ_PASS_THROUGH = ("--sglang-mem-fraction-static",)


def command_words(words: list[str]) -> tuple[list[str], list[str]]:
    """``(the training command's words, the other words)`` of a launch script: the words after
    ``train.py`` / ``train_async.py`` and those of the shell arrays before it (``ARGS=( ... )``, which
    the command expands), up to a shell control operator (``| tee log``) and without redirections
    (``2>&1``, ``> log``); the other words (``ray job submit --address ...``, ``ray start --head``, what
    follows ``|`` or ``&&``) are another command's. Without an entry point every word is the command's."""
    at = next((k for k, w in enumerate(words) if w.rsplit("/", 1)[-1] in ("train.py", "train_async.py")), None)
    if at is None:
        return list(words), []
    cmd: list[str] = []
    other: list[str] = []
    inside = False
    for w in words[:at]:
        opening = re.match(r"^[A-Za-z_][A-Za-z0-9_]*=\((.*)$", w)
        if opening:
            inside, w = True, opening.group(1)
            if not w:
                continue
        if inside and w.endswith(")"):
            inside, w = False, w[:-1]
            if w:
                cmd.append(w)
            continue
        (cmd if inside else other).append(w)
    # the command ends at a shell control operator (``| tee log``, ``&& ...``); redirections are the shell's
    rest = words[at + 1:]
    skip = False
    for k, w in enumerate(rest):
        if skip:
            skip = False
        elif w in ("|", "||", "&&", ";", "&"):
            other.extend(rest[k + 1:])
            break
        elif re.fullmatch(r"\d*(?:>>?|<)(?:&\d+)?|&>", w):
            skip = not w.endswith(tuple("0123456789"))  # ``> file``: the next word is the file
        elif re.fullmatch(r"\d*(?:>>?|<)\S+|&>\S+", w):
            pass  # ``2>&1``, ``>log.txt``
        else:
            cmd.append(w)
    return cmd, other


def _repeats(words: list[str]) -> dict[str, list[Any]]:
    """Options given more than once: name -> every value but the last (argparse keeps the last)."""
    seen: dict[str, list[Any]] = {}
    for k, v in _pairs(words):
        seen.setdefault(k, []).append(v)
    return {k: vs[:-1] for k, vs in seen.items() if len(vs) > 1}


def _pairs(words: list[str]) -> list[tuple[str, Any]]:
    out = []
    for i, w in enumerate(words):
        if _is_option(w) and not w.startswith("$"):
            if "=" in w:
                k, _, v = w.partition("=")
                out.append((k, scalar(v)))
            else:
                out.append((w, scalar(words[i + 1]) if i + 1 < len(words) and not _is_option(words[i + 1]) else True))
    return out


def _is_entry(word: str) -> bool:
    return word.rsplit("/", 1)[-1] in ("train.py", "train_async.py")


def trainer_words(text: str) -> tuple[list[str], Note | None]:
    """The words of a slime launch script that are the run's: the shell arrays the training command
    expands (``${ARGS[@]}``; every array when it expands none) and that command (the one running
    ``train.py`` / ``train_async.py``), and one note for the script's other commands (``ray stop``,
    ``pkill``, ``ray start``, ``source``, ...), which are not read. A script without an entry
    point is an argument list: every word is the command's."""
    commands = script_commands(text)
    cmd, others = trainer_command(commands, _is_entry)
    if cmd is None:
        return [w for c in commands for w in c], None
    arrays = {c[0].partition("=")[0]: c for c in others if _ARRAY_START.match(c[0])}
    used = [n for n in arrays if any(f"${{{n}[@]}}" in w or f"${{{n}[*]}}" in w for w in cmd)]
    keep = [arrays[n] for n in (used or list(arrays))]
    rest = [c for c in others if not any(c is k for k in keep)]
    at = next(k for k, w in enumerate(cmd) if _is_entry(w))
    return ([w for c in keep for w in c] + cmd,
            other_commands_note(rest, "train.py / train_async.py", launcher=cmd[:at]))


_ARRAY_START = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\(")


def _entry(words: list[str]) -> str | None:
    for w in words:
        leaf = w.rsplit("/", 1)[-1]
        if leaf in ("train.py", "train_async.py"):
            return leaf
    return None


def load(path: Path, overrides: list[str] | tuple[str, ...] = (), gpu: str | None = None) -> ImportedConfig:
    """Reads a slime launch script (or a file holding its argument list).

    Parameters
    ----------
    path : Path
        A shell script whose command runs ``train.py`` or ``train_async.py``; a bare argument list is
        read as ``train.py``.
    gpu : str, optional
        The accelerator (a :data:`rollsim.hardware.ACCELERATORS` name): builds ``.deployment``.
    overrides : list of str
        More arguments (``--rollout-batch-size 64``), applied after the file's.

    Returns
    -------
    ImportedConfig

    Raises
    ------
    ScenarioError
        A missing ``--rollout-batch-size``, ``--colocate`` with ``train_async.py``, or an option of
        the wrong type or out of range (naming it).
    """
    words, other_note = trainer_words(path.read_text())
    entry = _entry(words) or "train.py"
    cmd, _launcher = command_words(words)   # the launcher's words (ray job submit ... --) are not read
    given = parse_argv(cmd, multi=True)
    more = parse_argv(list(overrides), multi=True)
    opts = {**given, **more}
    imp = _build(opts, entry, str(path), explicit=_entry(words) is not None, gpu=gpu, checked=[*given, *more],
                 repeated=_repeats(cmd + [w for w in overrides if isinstance(w, str)]))
    if other_note is not None:
        imp = dataclasses.replace(imp, notes=imp.notes + (other_note,))
    arrays = {w[:-2] for w in words if w.endswith("=(")}
    unset = list(dict.fromkeys(w for w in cmd if w.startswith("$") and not (
        (m := re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}", w)) and m.group(1) in arrays)))
    if not unset:
        return imp
    extra = tuple(Note(w, "-", "not read: the script does not set it (a file it sources, such as slime's "
                       "scripts/models/*.sh for MODEL_ARGS, or the environment), so its arguments are not part of "
                       "the import", "ignored") for w in unset)
    return dataclasses.replace(imp, notes=imp.notes + extra)


def _build(o: dict[str, Any], entry: str, source: str, *, explicit: bool, gpu: str | None = None,
           checked: list[str] | tuple[str, ...] | None = None,
           repeated: dict[str, list[Any]] | None = None) -> ImportedConfig:
    r = Reader(o, "the slime arguments")
    names = list(dict.fromkeys(o if checked is None else checked))
    _unknown(r, names)
    for name, earlier in (repeated or {}).items():
        for v in earlier:
            r.note(name, v, f"ignored: given again later in the command; slime's argparse keeps the last value, "
                   f"{o.get(name)!r}", "ignored")
    default_fn = "slime.rollout.sglang_rollout.generate_rollout"
    fn, given_fn = r.get("--rollout-function-path", default_fn, kind=str)
    fully = entry == "train_async.py" and is_fully_async_rollout(fn)
    if given_fn:
        r.note("--rollout-function-path", fn, "the fully asynchronous rollout function (a worker that never stops): "
               "FullyAsync" + ("" if entry == "train_async.py" else ", but only with train_async.py: the entry point "
                               "decides") if is_fully_async_rollout(fn) else
               "the default rollout function" if fn == default_fn else
               "a custom rollout function: read as the default one (a batch per call; the entry point decides the "
               "pipeline)", "read" if fn == default_fn or is_fully_async_rollout(fn) else "assumed")
    r.note("(entry point)", entry, ("train_async.py + fully async rollout function: fully asynchronous pipeline" if fully
                                   else {"train.py": "synchronous pipeline",
                                         "train_async.py": "one-step overlap (one-step off-policy) pipeline"}[entry])
           + ("" if explicit else " (no entry point in the file: train.py assumed)"), "read" if explicit else "assumed")
    if not r.has("--rollout-batch-size"):
        near = [n.option for n in r.notes if n.became.startswith(UNKNOWN_OPTION) and "'--rollout-batch-size'" in n.became]
        if near:
            raise invalid("--rollout-batch-size", f"is required in the slime arguments and was not given; {near[0]} "
                          "(given) is not a slime option: a typo of it?")
    prompts, g = r.positive_int("--rollout-batch-size")
    n, g2 = r.positive_int("--n-samples-per-prompt", 1)
    r.read("--n-samples-per-prompt", n, g2, f"group_size = {n}")
    r.read("--rollout-batch-size", prompts, g, f"batch_size = {prompts * n} samples ({prompts} prompts x "
           f"n_samples_per_prompt {n}; slime's rollout batch counts prompts)")
    gbs, g = r.positive_int("--global-batch-size", prompts * n)
    if r.has("--num-steps-per-rollout"):
        k, _ = r.positive_int("--num-steps-per-rollout")
        if gbs != prompts * n // k and g:
            raise invalid("--global-batch-size", f"must equal rollout_batch_size x n_samples_per_prompt // "
                          f"num_steps_per_rollout = {prompts * n // k} samples, got {gbs}")
        gbs = prompts * n // k
        r.read("--num-steps-per-rollout", k, True, f"{k} optimizer steps per rollout")
    if (prompts * n) % gbs:
        raise invalid("--global-batch-size", f"must divide rollout_batch_size x n_samples_per_prompt = {prompts * n} "
                      f"samples (slime's global batch counts samples), got {gbs}")
    given_gbs = g or r.has("--num-steps-per-rollout")
    r.note("--global-batch-size", repr(gbs), f"{prompts * n // gbs} optimizer steps of {gbs} samples per rollout "
           "(one weight update; training cost is calibrated per token)" + ("" if given_gbs else
                                                                           " (absent: slime has no default, "
                                                                           "slime/utils/arguments.py default=None; one "
                                                                           "optimizer step per rollout assumed)"),
           "read" if given_gbs else "assumed")
    max_resp, g = r.positive_int("--rollout-max-response-len", 16384, hi=2**40)
    r.note("--rollout-max-response-len", repr(max_resp), f"lengths.max_tokens = {max_resp} tokens"
           if g else f"lengths.max_tokens = {max_resp} tokens (absent: slime leaves it to the engine; assumed)",
           "read" if g else "assumed")
    an, g = r.positive_int("--actor-num-nodes", 1, hi=65536)
    ag, g2 = r.positive_int("--actor-num-gpus-per-node", 8, hi=1024)
    r.read("--actor-num-nodes", an, g, "training nodes")
    r.read("--actor-num-gpus-per-node", ag, g2, f"{an * ag} training GPUs")
    colocate, g = r.flag("--colocate", False)
    if colocate and entry == "train_async.py":
        raise invalid("--colocate", "train_async.py refuses colocation (rollout and training overlap on separate "
                      "GPUs); use train.py or drop --colocate")
    r.read("--colocate", colocate, g, "colocated: rollout and training share the GPUs" if colocate else "separate pools")
    rg, g = r.positive_int("--rollout-num-gpus", an * ag if colocate else 8, hi=2**20)
    r.note("--rollout-num-gpus", repr(rg), f"{rg} rollout GPUs", "read" if g else ("default" if colocate else "assumed"))
    tp, g = r.positive_int("--rollout-num-gpus-per-engine", 1, hi=4096)
    r.read("--rollout-num-gpus-per-engine", tp, g, f"TP{tp} engines")
    conc, g = r.positive_int("--sglang-server-concurrency", 512)
    layout = Layout(rollout_gpus=rg, train_gpus=an * ag, colocated=colocate, rollout_tp=tp, slots_per_engine=conc)
    r.read("--sglang-server-concurrency", conc, g, f"{conc} requests in flight per engine ({layout.engines} engines)")
    partial, g = r.flag("--partial-rollout", False)
    over, g2 = r.positive_int("--over-sampling-batch-size", prompts)
    if over < prompts:
        # slime/utils/arguments.py, slime_validate_args: assert over_sampling_batch_size >= rollout_batch_size
        raise invalid("--over-sampling-batch-size", f"must be at least --rollout-batch-size ({prompts} prompts; slime "
                      f"asserts over_sampling_batch_size >= rollout_batch_size), got {over}")
    over_sampling = (over / prompts - 1.0) if over > prompts else None
    if fully:
        pipeline: Any = FullyAsync()
        r.note("(staleness bound)", "-", "pipeline.max_staleness = None (slime's fully async rollout has no bound)",
               "read")
        r.ignore("--partial-rollout", "the fully async rollout streams; in-flight requests continue")
    elif entry == "train_async.py":
        pipeline = OneStepAsync(over_sampling=over_sampling, keep_partial=partial)
    else:
        pipeline = Synchronous(over_sampling=over_sampling, keep_partial=partial)
    if not fully:
        r.read("--partial-rollout", partial, g, f"pipeline.keep_partial = {partial}")
        r.read("--over-sampling-batch-size", over, g2, f"pipeline.over_sampling = {over_sampling:g}"
               if over_sampling is not None else "no over-sampling (granularity at most one rollout batch)")
    model = r.model_path("--hf-checkpoint")
    for name, why in (("--use-dynamic-batch-size", "token packing: part of the calibrated training cost"),
                      ("--max-tokens-per-gpu", "token packing: part of the calibrated training cost"),
                      ("--balance-data", "rank balancing: part of the calibrated training cost"),
                      ("--offload-train", "offload cost: part of the calibrated overhead"),
                      ("--offload-rollout", "offload cost: part of the calibrated overhead"),
                      ("--update-weight-buffer-size", "weight-sync time is calibrated"),
                      ("--use-tis", "a loss-side option"), ("--tis-clip", "a loss-side option"),
                      ("--dynamic-sampling-filter-path", "filtering is not modelled"),
                      ("--mask-offpolicy-in-partial-rollout", "a loss-side option"),
                      ("--use-rollout-routing-replay", "see rollsim.sync.routing_replay")):
        r.ignore(name, why)
    # slime/utils/arguments.py, _pre_parse_mode: --train-backend choices=["megatron"], default "megatron" (older slime
    # releases also offered "fsdp", read here as rollsim's fsdp2)
    tb, g = r.get("--train-backend", "megatron", kind=str)
    backend = {"megatron": "megatron", "fsdp": "fsdp2"}.get(str(tb).lower())
    r.read("--train-backend", tb, g, f"training backend {backend!r} (the hardware training model's, for a what-if's "
           "GPU change)" if backend else "a training backend rollsim does not model (fsdp2 assumed)")
    mem = r.memory_fraction("--sglang-mem-fraction-static")  # the deployment's (SGLang's mem_fraction_static)
    train_options = _megatron_layout(r) if backend == "megatron" else {}
    _ignore_rest(r, set(names))  # every other option given: noted, saying whose it is, not silently lost
    return build(r, framework="slime", source=source, prompts=prompts, group=n, max_response=max_resp,
                 pipeline=pipeline, layout=layout, slots=layout.engines * conc, model=model, gpu=gpu,
                 engine="sglang", gpu_memory_utilization=mem, memory_option="--sglang-mem-fraction-static",
                 train_backend=backend, train_options=train_options)


#: Megatron-LM's parallel sizes that slime's Megatron backend passes through (megatron/training/arguments.py,
#: each default 1) and the hardware training model's option each is.
MEGATRON_LAYOUT = {"--tensor-model-parallel-size": "tensor_parallel", "--pipeline-model-parallel-size": "pipeline_parallel",
                   "--context-parallel-size": "context_parallel", "--expert-model-parallel-size": "expert_parallel",
                   "--expert-tensor-parallel-size": "expert_tensor_parallel"}


def _megatron_layout(r: Reader) -> dict[str, tuple[str, int]]:
    """The Megatron actor's parallel layout given in the command, ``{argument: (training option, size)}``:
    the deployment's training model (:func:`rollsim.hardware.training.train_step_s`) takes them, as
    verl's ``actor_rollout_ref.actor.megatron.*`` (:func:`rollsim.configs.verl._megatron_layout`), so a
    what-if that moves the training GPUs prices the run's own layout; ``build`` refuses a layout the
    training GPUs cannot hold, naming the argument."""
    out = {}
    for name, opt in MEGATRON_LAYOUT.items():
        if r.has(name) and r.options[name] is not None:
            size, _ = r.positive_int(name, 1, hi=2**20)
            out[name] = (opt, size)
    return out


def _unknown(r: Reader, names: list[str]) -> None:
    """Notes (and, through ``ImportedConfig.warnings``, warns) the training command's arguments that are
    neither slime's nor Megatron-LM's (``slime_options.txt``) nor a pass-through; a pass-through name
    (``--sglang-*``) is checked only against slime's own ``--sglang-*`` options and those rollsim reads
    (SGLang's list is not shipped: a name that is not a near miss of one of those is passed on)."""
    known, _ = known_options("slime")
    unknown_option_notes(r, "slime", [n for n in names if not n.startswith(tuple(PASS_THROUGH))], sep="",
                         none_such="neither slime nor Megatron-LM has one such")
    own = sorted({n for n in known if n.startswith(tuple(PASS_THROUGH))} | set(_READ_PASS_THROUGH))
    for name in names:
        if name.startswith(tuple(PASS_THROUGH)) and name not in known and name not in _READ_PASS_THROUGH:
            close = difflib.get_close_matches(name, own, n=3, cutoff=0.9)
            if close:
                r.used.add(name)
                r.note(name, r.options.get(name, True), f"{UNKNOWN_OPTION} (did you mean "
                       f"{' or '.join(repr(c) for c in close)}?)", "ignored")


def _ignore_rest(r: Reader, command: set[str]) -> None:
    """An ``ignored`` note for every argument nothing read, saying whose option it is."""
    known, _ = known_options("slime")
    owner = _owners()
    for name in sorted(r.options):
        if name in r.used or r.options[name] is None:
            continue
        r.used.add(name)
        if name not in command:
            why = "not an argument of train.py / train_async.py (another command of the script)"
        elif name.startswith(tuple(PASS_THROUGH)) and name not in known:
            why = next(v for k, v in PASS_THROUGH.items() if name.startswith(k)) + ", not modelled by rollsim"
        elif owner.get(name, "slime") == "slime":
            why = "a slime option rollsim does not model"
        else:
            why = "a Megatron-LM option (training parallelism, kernels and precision are part of the calibrated " \
                  "training cost)"
        r.note(name, r.options[name], f"ignored: {why}", "ignored")


@functools.cache
def _owners() -> dict[str, str]:
    """Option name -> ``slime``, ``megatron`` or ``megatron-patch`` (the column of ``slime_options.txt``)."""
    out = {}
    for line in (Path(__file__).resolve().parent / "slime_options.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, who = line.partition(" ")
            out[name] = who.strip()
    return out
