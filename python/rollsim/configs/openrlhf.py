"""OpenRLHF (OpenRLHF/OpenRLHF): the arguments of ``python -m openrlhf.cli.train_ppo_ray``.

Option names and defaults: ``openrlhf/cli/train_ppo_ray.py`` (dotted names become nested
namespaces); the async trainer is ``openrlhf/trainer/ppo_trainer_async.py`` (OpenRLHF/OpenRLHF).

Batch units: ``--rollout.batch_size`` counts PROMPTS (each with ``--rollout.n_samples_per_prompt``
answers); ``--train.batch_size`` counts SAMPLES (one optimizer step). rollsim's step (one policy
version, one weight sync) is one rollout batch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import OffPolicy, OneStepAsync, Synchronous

from ._common import ImportedConfig, Layout, Reader, build, split_command
from .slime import parse_argv

__all__ = ["load"]


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
    opts = parse_argv(split_command(path.read_text()))
    opts.update(parse_argv(list(overrides)))
    return _build(opts, str(path), gpu)


def _build(o: dict[str, Any], source: str, gpu: str | None = None) -> ImportedConfig:
    r = Reader(o, "the OpenRLHF arguments")
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
    colocate, g = r.flag("--train.colocate_all", False)
    r.read("--train.colocate_all", colocate, g, "colocated: vLLM and training share the GPUs" if colocate
           else "separate vLLM engines")
    tp, g = r.positive_int("--vllm.tensor_parallel_size", 1, hi=4096)
    r.read("--vllm.tensor_parallel_size", tp, g, f"TP{tp} engines")
    eng, g = r.positive_int("--vllm.num_engines", (an * ag) // tp if colocate else 1, lo=1, hi=2**20)
    r.note("--vllm.num_engines", repr(eng), f"{eng} vLLM engines ({eng * tp} rollout GPUs)",
           "read" if g else "assumed")
    layout = Layout(rollout_gpus=eng * tp, train_gpus=an * ag, colocated=colocate, rollout_tp=tp, slots_per_engine=256)
    r.note("(engine concurrency)", "-", "256 sequences per vLLM engine (vLLM's max_num_seqs default; assumed)",
           "assumed")
    asyn, g = r.flag("--train.async_enable", False)
    q, g2 = r.positive_int("--train.async_queue_size", 1, hi=10**6)
    partial, g3 = r.flag("--train.partial_rollout_enable", False)
    if asyn and colocate:
        raise invalid("--train.async_enable", "needs separate vLLM engines (async training overlaps rollout and "
                      "training); drop --train.colocate_all")
    if asyn:
        pipeline: Any = OneStepAsync(keep_partial=partial) if q == 1 else OffPolicy(k=q, keep_partial=partial)
        r.read("--train.async_enable", asyn, g, "asynchronous: generation runs ahead of training")
        r.read("--train.async_queue_size", q, g2, f"pipeline = {pipeline!r} (a queue of {q} rollout batches)")
        r.read("--train.partial_rollout_enable", partial, g3, f"pipeline.keep_partial = {partial}")
    else:
        pipeline = Synchronous()
        r.read("--train.async_enable", asyn, g, "synchronous pipeline")
        r.ignore("--train.async_queue_size", "only with --train.async_enable")
        r.ignore("--train.partial_rollout_enable", "only with --train.async_enable")
    model = r.model_path("--actor.model_name_or_path", aliases=("--pretrain",))
    for name, why in (("--train.dynamic_batch_enable", "token packing: part of the calibrated training cost"),
                      ("--train.max_tokens_per_gpu", "token packing: part of the calibrated training cost"),
                      ("--ds.packing_samples", "token packing: part of the calibrated training cost"),
                      ("--vllm.gpu_memory_utilization", "KV capacity is not modelled by the import"),
                      ("--vllm.sync_backend", "weight-sync time is calibrated"),
                      ("--vllm.enable_sleep", "sleep / wake cost: part of the calibrated overhead"),
                      ("--train.max_epochs", "training cost is calibrated per token"),
                      ("--algo.dynamic_filtering_enable", "filtering is not modelled")):
        r.ignore(name, why)
    r.ignore_rest(("--algo.advantage.is_correction",))
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="openrlhf", source=source, prompts=prompts, group=n, max_response=max_new,
                 pipeline=pipeline, layout=layout, slots=layout.engines * 256, model=model, gpu=gpu,
                 engine="vllm")
