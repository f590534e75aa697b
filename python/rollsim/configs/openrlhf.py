"""OpenRLHF (OpenRLHF/OpenRLHF): the arguments of ``python -m openrlhf.cli.train_ppo_ray``.

Option names and defaults: ``openrlhf/cli/train_ppo_ray.py`` (dotted names become nested
namespaces); the async trainer is ``openrlhf/trainer/ppo_trainer_async.py`` (OpenRLHF/OpenRLHF, checked
at commit 3c3be62, 2026-08-13). Names it does not have are noted as unknown options (its argparse
refuses them).

Batch units: ``--rollout.batch_size`` counts PROMPTS (each with ``--rollout.n_samples_per_prompt``
answers); ``--train.batch_size`` counts SAMPLES (one optimizer step). rollsim's step (one policy
version, one weight sync) is one rollout batch.
"""

from __future__ import annotations

import dataclasses

from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import OffPolicy, OneStepAsync, Synchronous

from ._common import (ImportedConfig, Layout, Reader, build, other_commands_note, script_commands, trainer_command,
                      unknown_option_notes)
from .slime import parse_argv

__all__ = ["load"]

#: The flat names of OpenRLHF's releases before its dotted arguments (``--rollout_batch_size`` in the
#: ``train_ppo_ray.py`` of OpenRLHF/OpenRLHF up to v0.8, e.g. ``examples/scripts/train_grpo_ray_hybrid_engine.sh``)
#: for the options this importer reads, with the dotted name of commit 3c3be62 it reads them under. Given
#: under the old name, an option is refused with its new name (read as unknown, the import would take
#: the defaults for the batch, the group and the GPUs without a word in the scenario).
LEGACY_NAMES: dict[str, str] = {
    "--rollout_batch_size": "--rollout.batch_size",
    "--n_samples_per_prompt": "--rollout.n_samples_per_prompt",
    "--train_batch_size": "--train.batch_size",
    "--generate_max_len": "--rollout.max_new_tokens",
    "--max_len": "--data.max_len",
    "--actor_num_nodes": "--actor.num_nodes",
    "--actor_num_gpus_per_node": "--actor.num_gpus_per_node",
    "--colocate_all_models": "--train.colocate_all",
    "--vllm_num_engines": "--vllm.num_engines",
    "--vllm_tensor_parallel_size": "--vllm.tensor_parallel_size",
    "--vllm_gpu_memory_utilization": "--vllm.gpu_memory_utilization",
    "--async_train": "--train.async_enable",
    "--async_queue_size": "--train.async_queue_size",
}


def load(path: Path, overrides: list[str] | tuple[str, ...] = (), gpu: str | None = None) -> ImportedConfig:
    """Reads an OpenRLHF ``train_ppo_ray`` launch script (or its argument list).

    Parameters
    ----------
    path : Path
        A shell script running ``openrlhf.cli.train_ppo_ray``, or a file of its arguments.
    gpu : str, optional
        The accelerator (a :data:`rollsim.hardware.ACCELERATORS` name): builds ``.deployment``.
    overrides : list of str
        More arguments, applied after the file's.

    Returns
    -------
    ImportedConfig

    Raises
    ------
    ScenarioError
        An option of the wrong type or out of range (naming it).
    """
    # only train_ppo_ray's command is read (``ray stop``, ``ray job submit --address ...``, ``pkill`` and the
    # script's other commands are not); a script without it is a bare argument list
    commands = script_commands(path.read_text())
    cmd, others = trainer_command(commands, _is_entry)
    words = [w for c in commands for w in c] if cmd is None else cmd
    entry = next((i for i, w in enumerate(words) if _is_entry(w)), None)
    own = words if entry is None else words[entry + 1:]
    more = parse_argv(list(overrides))
    opts = {**parse_argv(own), **more}
    # the names given to train_ppo_ray, checked against its argparse options, which refuse any other name
    given = [*parse_argv(own), *more]
    imp = _build(opts, str(path), gpu, checked=given)
    note = None if cmd is None else other_commands_note(others, "openrlhf.cli.train_ppo_ray",
                                                        launcher=words[:entry])
    return imp if note is None else dataclasses.replace(imp, notes=imp.notes + (note,))


def _is_entry(word: str) -> bool:
    return word.endswith("openrlhf.cli.train_ppo_ray") or word.endswith("openrlhf/cli/train_ppo_ray.py")


def _build(o: dict[str, Any], source: str, gpu: str | None = None, *, checked: list[str] | tuple[str, ...] = ()) -> ImportedConfig:
    r = Reader(o, "the OpenRLHF arguments")
    old = [n for n in dict.fromkeys(checked) if n in LEGACY_NAMES]
    if old:
        renames = ", ".join(f"{n} -> {LEGACY_NAMES[n]}" for n in old)
        raise invalid(old[0], f"an option name of OpenRLHF releases before its dotted arguments; rollsim reads "
                      f"train_ppo_ray's dotted names (OpenRLHF/OpenRLHF 3c3be62, openrlhf/cli/train_ppo_ray.py), and "
                      f"would take the defaults for these: rename {renames} (their units are the same: "
                      f"--rollout.batch_size counts prompts, --train.batch_size samples)")
    unknown_option_notes(r, "openrlhf", list(dict.fromkeys(checked)))
    prompts, g = r.positive_int("--rollout.batch_size", 1024)
    n, g2 = r.positive_int("--rollout.n_samples_per_prompt", 1)
    r.read("--rollout.n_samples_per_prompt", n, g2, f"group_size = {n}")
    r.read("--rollout.batch_size", prompts, g, f"batch_size = {prompts * n} samples ({prompts} prompts x "
           f"n_samples_per_prompt {n}; OpenRLHF's rollout batch counts prompts)")
    tbs, g = r.positive_int("--train.batch_size", 128)
    r.read("--train.batch_size", tbs, g, f"{max(1, prompts * n // tbs)} optimizer steps of {tbs} samples per rollout "
           "(training cost is calibrated per token)")
    max_len, g = r.positive_int("--data.max_len", 2048, hi=2**40)
    if r.has("--rollout.max_new_tokens"):
        max_new, _ = r.positive_int("--rollout.max_new_tokens", hi=2**40)
        r.read("--rollout.max_new_tokens", max_new, True, f"lengths.max_tokens = {max_new} tokens")
        r.read("--data.max_len", max_len, g, "prompt + answer limit (the answers' is --rollout.max_new_tokens)")
    else:
        max_new = max_len
        r.note("--rollout.max_new_tokens", "None", f"lengths.max_tokens = {max_len} tokens (absent: OpenRLHF computes "
               "max_len - prompt length per sample; the whole --data.max_len assumed)", "assumed")
    an, g = r.positive_int("--actor.num_nodes", 1, hi=65536)
    ag, g2 = r.positive_int("--actor.num_gpus_per_node", 8, hi=1024)
    r.read("--actor.num_nodes", an, g, "actor nodes")
    r.read("--actor.num_gpus_per_node", ag, g2, f"{an * ag} training GPUs")
    colocate_all, g = r.flag("--train.colocate_all", False)
    asyn, g_async = r.flag("--train.async_enable", False)
    # train_ppo_ray.py: "Using --colocate_all_models in async RLHF only colocates DeepSpeed models" (the vLLM engines
    # get no shared placement group when async_enable is set)
    colocate = colocate_all and not asyn
    r.read("--train.colocate_all", colocate_all, g, "colocated: vLLM and training share the GPUs" if colocate else
           ("with --train.async_enable only the DeepSpeed models are colocated: separate vLLM engines"
            if colocate_all else "separate vLLM engines"))
    tp, g = r.positive_int("--vllm.tensor_parallel_size", 1, hi=4096)
    r.read("--vllm.tensor_parallel_size", tp, g, f"TP{tp} engines")
    eng, g = r.positive_int("--vllm.num_engines", max(1, (an * ag) // tp) if colocate else 1, lo=1, hi=2**20)
    if colocate and g and eng * tp != an * ag:
        # train_ppo_ray.py asserts it for colocate_all without async
        raise invalid("--vllm.num_engines", f"with --train.colocate_all, vllm.num_engines x vllm.tensor_parallel_size "
                      f"must equal the actor's GPUs ({an} x {ag} = {an * ag}), got {eng} x {tp} = {eng * tp}")
    r.note("--vllm.num_engines", repr(eng), f"{eng} vLLM engines ({eng * tp} rollout GPUs)" if g else
           f"{eng} vLLM engines ({eng * tp} rollout GPUs) assumed: OpenRLHF's default None runs no vLLM engine "
           "(generation by the actor itself), which rollsim does not model", "read" if g else "assumed")
    layout = Layout(rollout_gpus=eng * tp, train_gpus=an * ag, colocated=colocate, rollout_tp=tp, slots_per_engine=256)
    r.note("(engine concurrency)", "-", "256 sequences per vLLM engine (assumed: OpenRLHF leaves max_num_seqs to vLLM, "
           "whose default is 256, or 1024 on GPUs of at least 70 GiB other than A100: vllm/engine/arg_utils.py, "
           "get_batch_defaults)", "assumed")
    g = g_async
    q, g2 = r.positive_int("--train.async_queue_size", 1, hi=10**6)
    partial, g3 = r.flag("--train.partial_rollout_enable", False)
    if partial and not asyn:
        raise invalid("--train.partial_rollout_enable", "requires --train.async_enable (train_ppo_ray.py asserts it)")
    if asyn:
        pipeline: Any = OneStepAsync() if q == 1 else OffPolicy(k=q)
        r.read("--train.async_enable", asyn, g, "asynchronous: generation runs ahead of training")
        r.read("--train.async_queue_size", q, g2, f"pipeline = {pipeline!r} (a queue of {q} rollout batches)")
        if g3:
            r.note("--train.partial_rollout_enable", repr(partial), "ignored: vLLM pause / resume at the weight sync "
                   "instead of a lock (answers mix weight versions: train_ppo_ray.py help) is not modelled for a "
                   "batch pipeline; the pipeline is unchanged" if partial else "no partial rollout", "ignored" if partial
                   else "read")
    else:
        pipeline = Synchronous()
        r.read("--train.async_enable", asyn, g, "synchronous pipeline")
        r.ignore("--train.async_queue_size", "only with --train.async_enable")
    model = r.model_path("--actor.model_name_or_path", aliases=("--pretrain",))
    for name, why in (("--train.dynamic_batch_enable", "token packing: part of the calibrated training cost"),
                      ("--train.max_tokens_per_gpu", "token packing: part of the calibrated training cost"),
                      ("--ds.packing_samples", "token packing: part of the calibrated training cost"),
                      ("--vllm.sync_backend", "weight-sync time is calibrated"),
                      ("--vllm.enable_sleep", "sleep / wake cost: part of the calibrated overhead"),
                      ("--train.max_epochs", "training cost is calibrated per token"),
                      ("--algo.dynamic_filtering_enable", "filtering is not modelled")):
        r.ignore(name, why)
    r.ignore_rest(("--algo.advantage.is_correction",))
    mem = r.memory_fraction("--vllm.gpu_memory_utilization")  # the deployment's
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="openrlhf", source=source, prompts=prompts, group=n, max_response=max_new,
                 pipeline=pipeline, layout=layout, slots=layout.engines * 256, model=model, gpu=gpu,
                 engine="vllm", gpu_memory_utilization=mem, memory_option="--vllm.gpu_memory_utilization")
