"""AReaL (inclusionAI/AReaL): YAML experiment configs.

Option names and defaults: ``areal/api/cli_args.py`` (``InferenceEngineConfig``,
``GenerationHyperparameters``, ``PPOActorConfig``, ``_DatasetConfig``, ``ClusterSpecConfig``); example
``examples/math/gsm8k_grpo.yaml``; admission rule ``areal/infra/staleness_manager.py`` (all in
inclusionAI/AReaL).

Batch units: ``train_dataset.batch_size`` and ``rollout.consumer_batch_size`` count PROMPTS (one
rollout is one prompt's group: the trainer wraps the workflow in a ``GroupedRolloutWorkflow`` of
``gconfig.n_samples`` answers, ``areal/trainer/rl_trainer.py``), and so does
``rollout.max_concurrent_rollouts``; rollsim's ``batch_size`` and slots count samples, so each is
multiplied by ``gconfig.n_samples``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import FullyAsync

from ._common import ImportedConfig, Layout, Reader, build, flatten, read_yaml, resolve

__all__ = ["load", "parse_backend"]

_BACKEND = re.compile(r"^(?P<name>[a-z_]+):(?P<dims>(?:[dptce]\d+)+)$")


def parse_backend(option: str, text: str) -> tuple[str, dict[str, int]]:
    """``"sglang:d4p1t1"`` -> ``("sglang", {"d": 4, "p": 1, "t": 1})`` (data / pipeline / tensor
    parallel sizes, also ``c`` context and ``e`` expert parallel; absent letters are 1). ScenarioError naming ``option`` for another spelling."""
    m = _BACKEND.match(str(text).strip().replace(" ", ""))
    if not m:
        raise invalid(option, f"must be a backend string such as 'sglang:d4p1t1' (name:d<data>p<pipeline>t<tensor>), "
                      f"got {text!r}")
    dims = {"d": 1, "p": 1, "t": 1}
    for letter, num in re.findall(r"([a-z])(\d+)", m.group("dims")):
        if int(num) < 1:
            raise invalid(option, f"parallel sizes must be at least 1, got {text!r}")
        dims[letter] = int(num)
    return m.group("name"), dims


def _allocation(option: str, text: str) -> tuple[dict[str, int], dict[str, int] | None]:
    """The older ``allocation_mode`` spelling: ``"sglang.d4p1t1+d4p1t1"`` (rollout + training) or a
    colocated ``"d8p1t1"``."""
    t = str(text).strip().replace(" ", "")
    parts = t.split("+")

    def dims(p: str) -> dict[str, int]:
        p = p.split(".", 1)[1] if "." in p else p.split(":", 1)[-1]
        return parse_backend(option, "x:" + p)[1]

    if len(parts) == 2:
        return dims(parts[0]), dims(parts[1])
    if len(parts) == 1:
        return dims(parts[0]), None
    raise invalid(option, f"must be 'rollout+training' such as 'sglang.d4p1t1+d4p1t1', got {text!r}")


def load(path: Path, overrides: list[str] | tuple[str, ...] = (), gpu: str | None = None) -> ImportedConfig:
    """Reads an AReaL YAML experiment config (``key=value`` overrides as on its command line).

    Parameters
    ----------
    path : Path
        The YAML file.
    gpu : str, optional
        The accelerator (a :data:`rollsim.hardware.ACCELERATORS` name): builds ``.deployment``.
    overrides : list of str
        ``key=value`` overrides applied after the file.

    Returns
    -------
    ImportedConfig

    Raises
    ------
    ScenarioError
        An option of the wrong type, out of range or a malformed backend string (naming it).
    """
    from .verl import parse_overrides

    flat = flatten(read_yaml(path))
    flat.update(parse_overrides(list(overrides))[0])
    return _build(resolve(flat), str(path), gpu)


def _build(flat: dict[str, Any], source: str, gpu: str | None = None) -> ImportedConfig:
    r = Reader(flat, "the AReaL config")
    n, g = r.positive_int("gconfig.n_samples", 1)
    r.read("gconfig.n_samples", n, g, f"group_size = {n}")
    max_new, g = r.positive_int("gconfig.max_new_tokens", 16384, hi=2**40)
    r.read("gconfig.max_new_tokens", max_new, g, f"lengths.max_tokens = {max_new} tokens")
    prompts, g = r.positive_int("train_dataset.batch_size", 1)
    cbs, g2 = r.positive_int("rollout.consumer_batch_size", prompts)
    r.read("train_dataset.batch_size", prompts, g, f"{prompts} prompts per dataloader batch")
    r.read("rollout.consumer_batch_size", cbs, g2, f"batch_size = {cbs * n} samples ({cbs} prompts x gconfig.n_samples "
           f"{n}; AReaL counts prompts)")
    eta, g = r.positive_int("rollout.max_head_offpolicyness", 0, lo=0, hi=10**6)
    r.read("rollout.max_head_offpolicyness", eta, g, f"pipeline.admission_eta = {eta} (AReaL's admission rule)")
    gpn, g = r.positive_int("cluster.n_gpus_per_node", 8, hi=1024)
    nnodes, g3 = r.positive_int("cluster.n_nodes", 1, hi=65536)
    r.read("cluster.n_gpus_per_node", gpn, g, "GPUs per node")
    r.read("cluster.n_nodes", nnodes, g3, f"{nnodes * gpn} GPUs")
    colocated = False
    engine_name = "sglang"
    train_backend: str | None = None
    if r.has("rollout.backend") or r.has("actor.backend"):
        rb, _ = r.get("rollout.backend", "sglang:d1", kind=str)
        ab, _ = r.get("actor.backend", "fsdp:d1", kind=str)
        engine, rd = parse_backend("rollout.backend", rb)
        engine_name = engine
        trainer, ad = parse_backend("actor.backend", ab)
        train_backend = {"fsdp": "fsdp2", "megatron": "megatron"}.get(trainer.lower())
        r.read("rollout.backend", rb, True, f"{rd['d']} {engine} engines x TP{rd['t']} x PP{rd['p']}")
        r.read("actor.backend", ab, True, f"{ad['d'] * ad['t'] * ad['p']} training GPUs" +
               (f", training backend {train_backend!r}" if train_backend else ""))
    elif r.has("allocation_mode"):
        am, _ = r.get("allocation_mode", kind=str)
        rd, ad2 = _allocation("allocation_mode", am)
        colocated = ad2 is None
        ad = ad2 or rd
        r.read("allocation_mode", am, True, f"{rd['d']} engines x TP{rd['t']}" + (", colocated" if colocated else ""))
    else:
        raise invalid("rollout.backend", "is required in the AReaL config (e.g. 'sglang:d4p1t1'), as is actor.backend; "
                      "or the older allocation_mode")
    tp = rd["t"] * rd["p"]
    train_gpus = ad["d"] * ad["t"] * ad["p"]
    mrr, g = r.positive_int("sglang.max_running_requests", 256, aliases=("vllm.max_num_seqs",))
    r.read("sglang.max_running_requests", mrr, g, f"{mrr} sequences per engine" + ("" if g else " (assumed for null)"))
    layout = Layout(rollout_gpus=rd["d"] * tp, train_gpus=train_gpus, colocated=colocated, rollout_tp=tp,
                    slots_per_engine=mrr)
    slots = layout.engines * mrr
    mcr, g = r.positive_int("rollout.max_concurrent_rollouts", cbs)
    slots = min(slots, mcr * n)
    r.read("rollout.max_concurrent_rollouts", mcr, g, f"rollout_slots = {slots} (min of {mcr} prompts x {n} answers "
           f"and the engines' {layout.engines * mrr} sequences)")
    r.ignore("rollout.queue_size", "the ready queue is unbounded in this import")
    pipeline = FullyAsync(admission_eta=eta, batch_order="oldest_first", on_update="abort_resubmit")
    r.note("(interruptible generation)", "-", "pipeline.on_update = 'abort_resubmit', batch_order = 'oldest_first' "
           "(AReaL's interruptible rollout and consumption order)", "assumed")
    model = r.model_path("actor.path")
    for name, why in (("actor.ppo_n_minibatches", "training cost is calibrated per token"),
                      ("actor.recompute_logprob", "calibrate logprob_s_per_token from its phase"),
                      ("actor.use_decoupled_loss", "a loss-side option"),
                      ("actor.weight_update_mode", "weight-sync time is calibrated"),
                      ("actor.mb_spec.max_tokens_per_mb", "token packing: part of the calibrated training cost"),
                      ("sglang.mem_fraction_static", "KV capacity is not modelled by the import"),
                      ("sglang.context_length", "gconfig.max_new_tokens bounds the answers")):
        r.ignore(name, why)
    r.ignore_rest(("actor.rejection_sampling", "rollout.pause_grace_period"))
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="areal", source=source, prompts=cbs, group=n, max_response=max_new, pipeline=pipeline,
                 layout=layout, slots=slots, model=model, gpu=gpu,
                 engine=engine_name, train_backend=train_backend)
