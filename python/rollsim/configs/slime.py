"""slime (THUDM/slime): the argument list of a launch script's ``python train.py ...`` or
``python train_async.py ...`` command.

Option names and defaults: ``slime/utils/arguments.py`` and ``slime/backends/sglang_utils/arguments.py``
(checked at THUDM/slime commit 624b824, 2026-08-21);
the fully asynchronous rollout is ``slime/rollout/fully_async_rollout.py`` (``examples/fully_async/``),
all in THUDM/slime. The entry point decides the pipeline: ``train.py`` synchronous, ``train_async.py``
one-step overlap (it refuses ``--colocate``), ``train_async.py`` with ``--rollout-function-path
slime.rollout.fully_async_rollout.generate_rollout_fully_async`` fully asynchronous.

Batch units: ``--rollout-batch-size`` counts PROMPTS (a rollout returns ``rollout_batch_size x
n_samples_per_prompt`` samples); ``--global-batch-size`` counts SAMPLES (one optimizer step), so a
rollout makes ``rollout_batch_size x n_samples_per_prompt / global_batch_size`` optimizer steps and
one weight update: rollsim's step (one policy version) is the whole rollout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import FullyAsync, OneStepAsync, Synchronous

from ._common import ImportedConfig, Layout, Reader, build, scalar, split_command

__all__ = ["load", "parse_argv"]

FULLY_ASYNC_ROLLOUT = "slime.rollout.fully_async_rollout.generate_rollout_fully_async"


def parse_argv(words: list[str], *, dashes_to_dots: bool = False) -> dict[str, Any]:
    """``--key value`` pairs and bare ``--flag`` switches (True) of an argument list; ``--key=value``
    too. Names keep their spelling (``--rollout-batch-size``)."""
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
            elif i + 1 < len(words) and not (words[i + 1].startswith("--") and len(words[i + 1]) > 2):
                out[w] = scalar(words[i + 1])  # one value per option (the options read take one)
                i += 2
                continue
            else:
                out[w] = True
        i += 1
    return out


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
    words = split_command(path.read_text())
    entry = _entry(words) or "train.py"
    opts = parse_argv(words)
    opts.update(parse_argv(list(overrides)))
    return _build(opts, entry, str(path), explicit=_entry(words) is not None, gpu=gpu)


def _build(o: dict[str, Any], entry: str, source: str, *, explicit: bool, gpu: str | None = None) -> ImportedConfig:
    r = Reader(o, "the slime arguments")
    fn, _ = r.get("--rollout-function-path", "slime.rollout.sglang_rollout.generate_rollout", kind=str)
    fully = entry == "train_async.py" and fn == FULLY_ASYNC_ROLLOUT
    r.note("(entry point)", entry, ("train_async.py + fully async rollout function: fully asynchronous pipeline" if fully
                                   else {"train.py": "synchronous pipeline",
                                         "train_async.py": "one-step overlap (one-step off-policy) pipeline"}[entry])
           + ("" if explicit else " (no entry point in the file: train.py assumed)"), "read" if explicit else "assumed")
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
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="slime", source=source, prompts=prompts, group=n, max_response=max_resp,
                 pipeline=pipeline, layout=layout, slots=layout.engines * conc, model=model, gpu=gpu,
                 engine="sglang", gpu_memory_utilization=mem, memory_option="--sglang-mem-fraction-static",
                 train_backend=backend)
