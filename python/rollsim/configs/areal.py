"""AReaL (inclusionAI/AReaL): YAML experiment configs.

Option names and defaults: ``areal/api/cli_args.py`` (``InferenceEngineConfig``,
``GenerationHyperparameters``, ``PPOActorConfig``, ``_DatasetConfig``, ``ClusterSpecConfig``,
``vLLMConfig``, ``SGLangConfig``); example ``examples/math/gsm8k_grpo.yaml``; admission rule
``areal/infra/staleness_manager.py`` (all in inclusionAI/AReaL, checked at commit 4aef98d, 2026-05-21).

Batch units: a step trains ``train_dataset.batch_size`` rollouts (``prepare_batch`` waits for
``dataloader.batch_size`` results, ``areal/infra/workflow_executor.py``), and a rollout is one
prompt's group of ``gconfig.n_samples`` answers (``group_size=config.gconfig.n_samples``,
``areal/trainer/rl_trainer.py``): rollsim's ``batch_size`` is ``train_dataset.batch_size x
n_samples`` samples. ``rollout.consumer_batch_size`` (default 1) is the unit of the staleness rule
``(max_head_offpolicyness + version + 1) x consumer_batch_size`` and the default of
``rollout.max_concurrent_rollouts`` (``areal/infra/controller/rollout_controller.py``); both count
rollouts (prompts), so slots are ``max_concurrent_rollouts x n_samples``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rollsim.errors import invalid
from rollsim.pipelines import FullyAsync

from ._common import ImportedConfig, Layout, Reader, build, flatten, read_yaml, resolve, unknown_option_notes

__all__ = ["load", "parse_backend"]

_BACKEND = re.compile(r"^(?P<name>[a-z_]+):(?P<dims>(?:[dptce]\d+)+)$")


def parse_backend(option: str, text: str) -> tuple[str, dict[str, int]]:
    """``"sglang:d4p1t1"`` -> ``("sglang", {"d": 4, "p": 1, "t": 1})`` (data / pipeline / tensor
    parallel sizes, also ``c`` context and ``e`` expert parallel; absent letters are 1). The MoE
    spelling ``"megatron:(attn:d4p4t2|ffn:d2p4e4)"`` gives its attention part's sizes (they span all its
    GPUs). ScenarioError naming ``option`` for another spelling."""
    t = str(text).strip().replace(" ", "")
    hybrid = re.match(r"^(?P<name>[a-z_]+):\((?P<parts>[^()]*)\)$", t)
    if hybrid:  # MoE hybrid parallelism, "megatron:(attn:d4p4t2|ffn:d2p4e4)": the attention part spans every GPU
        parts = dict(p.split(":", 1) for p in hybrid.group("parts").split("|") if ":" in p)
        if "attn" in parts:
            return parse_backend(option, f"{hybrid.group('name')}:{parts['attn']}")
    m = _BACKEND.match(t)
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
    from .verl import _all_keys, parse_overrides

    from ._common import known_options

    tree = read_yaml(path)
    flat = flatten(tree)
    # the YAML's names under AReaL's own sections (a script's config class may add sections of its own: those are
    # not checked), and every plain key=value override
    known, _ = known_options("areal")
    checked = sorted(k for k in _all_keys(tree) if k.split(".", 1)[0] in known and not isinstance(flat.get(k), dict)
                     and not any(part.startswith("_") for part in k.split(".")))
    flat.update(parse_overrides(list(overrides), checked)[0])
    return _build(resolve(flat), str(path), gpu, checked=checked)


#: The AReaL commit whose ``areal/api/cli_args.py`` the field types below are read from.
AREAL_COMMIT = "inclusionAI/AReaL 4aef98d8d818af55b43621aaadba047ae10f4e77"

#: Options rollsim reads whose AReaL field is not Optional (``name: int = default``): AReaL refuses a
#: YAML null for them. Its field, as declared.
NOT_OPTIONAL = {
    "gconfig.n_samples": "GenerationHyperparameters.n_samples: int = 1",
    "gconfig.max_new_tokens": "GenerationHyperparameters.max_new_tokens: int = 16384",
    "train_dataset.batch_size": "_DatasetConfig.batch_size: int = 1",
    "rollout.consumer_batch_size": "InferenceEngineConfig.consumer_batch_size: int = 1",
    "rollout.max_head_offpolicyness": "InferenceEngineConfig.max_head_offpolicyness: int = 0",
    "cluster.n_gpus_per_node": "ClusterSpecConfig.n_gpus_per_node: int = 8",
    "cluster.n_nodes": "ClusterSpecConfig.n_nodes: int = 32",
    "vllm.max_num_seqs": "vLLMConfig.max_num_seqs: int = 256",
}


def _build(flat: dict[str, Any], source: str, gpu: str | None = None, *, checked: list[str] | tuple[str, ...] = ()) -> ImportedConfig:
    for name in NOT_OPTIONAL:
        if name in flat and flat[name] is None:
            # AReaL merges the YAML into its dataclasses with OmegaConf (to_structured_cfg in
            # areal/api/cli_args.py), which refuses None for a field that is not Optional: a null is no default
            raise invalid(name, f"is null, which AReaL refuses: its field is {NOT_OPTIONAL[name]} (not Optional; "
                          f"areal/api/cli_args.py, {AREAL_COMMIT}) and OmegaConf's merge raises ValidationError "
                          "\"Incompatible value 'None'\"; give a number, or leave the line out for AReaL's default")
    r = Reader(flat, "the AReaL config")
    # AReaL merges the YAML and the overrides into its dataclasses (areal/api/cli_args.py): a name they do not have
    # is an error there, a typo here
    unknown_option_notes(r, "areal", list(dict.fromkeys(checked)))
    n, g = r.positive_int("gconfig.n_samples", 1)
    r.read("gconfig.n_samples", n, g, f"group_size = {n}")
    max_new, g = r.positive_int("gconfig.max_new_tokens", 16384, hi=2**40)
    r.read("gconfig.max_new_tokens", max_new, g, f"lengths.max_tokens = {max_new} tokens")
    prompts, g = r.positive_int("train_dataset.batch_size", 1)
    r.read("train_dataset.batch_size", prompts, g, f"batch_size = {prompts * n} samples ({prompts} rollouts per step "
           f"x gconfig.n_samples {n}; AReaL counts prompts)")
    cbs, g2 = r.positive_int("rollout.consumer_batch_size", 1)
    eta, g = r.positive_int("rollout.max_head_offpolicyness", 0, lo=0, hi=2**32 - 1)
    r.read("rollout.max_head_offpolicyness", eta, g, f"pipeline.admission_eta = {eta} (AReaL's admission rule)")
    if cbs == prompts:
        r.read("rollout.consumer_batch_size", cbs, g2, f"the admission rule's unit, {cbs} rollouts = the batch (exact)")
    else:
        r.note("rollout.consumer_batch_size", repr(cbs), f"{'' if g2 else '(framework default) '}AReaL admits while "
               f"accepted + running <= (eta + version + 1) x {cbs} rollouts; rollsim's admission_eta counts batches of "
               f"{prompts} (train_dataset.batch_size): the bound is that of consumer_batch_size = {prompts} "
               "(assumed; AReaL's examples set consumer_batch_size: ${train_dataset.batch_size})", "assumed")
    gpn, g = r.positive_int("cluster.n_gpus_per_node", 8, hi=1024)
    nnodes, g3 = r.positive_int("cluster.n_nodes", 32, hi=65536)
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
        r.read("actor.backend", ab, True, f"{ad['d'] * ad['t'] * ad['p'] * ad.get('c', 1)} training GPUs" +
               (f", training backend {train_backend!r}" if train_backend else ""))
    elif r.has("allocation_mode"):
        am, _ = r.get("allocation_mode", kind=str)
        rd, ad2 = _allocation("allocation_mode", am)
        engine_name = "vllm" if str(am).strip().lower().startswith("vllm") else "sglang"
        colocated = ad2 is None
        ad = ad2 or rd
        r.read("allocation_mode", am, True, f"{rd['d']} engines x TP{rd['t']}" + (", colocated" if colocated else ""))
    else:
        raise invalid("rollout.backend", "is required in the AReaL config (e.g. 'sglang:d4p1t1'), as is actor.backend; "
                      "or the older allocation_mode")
    tp = rd["t"] * rd["p"]
    train_gpus = ad["d"] * ad["t"] * ad["p"] * ad.get("c", 1)
    if engine_name == "vllm":
        mrr, g = r.positive_int("vllm.max_num_seqs", 256)  # vLLMConfig.max_num_seqs: int = 256
        r.read("vllm.max_num_seqs", mrr, g, f"{mrr} sequences per engine")
    else:  # SGLangConfig.max_running_requests: int | None = None (SGLang sizes it from the KV memory)
        mrr, g = r.positive_int("sglang.max_running_requests", 256)
        if g:
            r.read("sglang.max_running_requests", mrr, g, f"{mrr} sequences per engine")
        else:
            r.note("sglang.max_running_requests", "None", f"{mrr} sequences per engine (AReaL's default None leaves it "
                   "to SGLang, which sizes it from the KV memory; assumed)", "assumed")
    layout = Layout(rollout_gpus=rd["d"] * tp, train_gpus=train_gpus, colocated=colocated, rollout_tp=tp,
                    slots_per_engine=mrr)
    slots = layout.engines * mrr
    mcr, g = r.positive_int("rollout.max_concurrent_rollouts", cbs)
    slots = min(slots, mcr * n)
    r.read("rollout.max_concurrent_rollouts", mcr, g, f"rollout_slots = {slots} (min of {mcr} prompts x {n} answers "
           f"and the engines' {layout.engines * mrr} sequences)" + ("" if g else "; AReaL's default is "
                                                                   "rollout.consumer_batch_size"))
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
                      ("sglang.context_length", "gconfig.max_new_tokens bounds the answers")):
        r.ignore(name, why)
    # the engine's memory fraction: the deployment's (vLLMConfig.gpu_memory_utilization, SGLangConfig.mem_fraction_static)
    mem_option = "vllm.gpu_memory_utilization" if engine_name == "vllm" else "sglang.mem_fraction_static"
    mem = r.memory_fraction(mem_option)
    r.ignore_rest(("actor.rejection_sampling", "rollout.pause_grace_period"))
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="areal", source=source, prompts=prompts, group=n, max_response=max_new, pipeline=pipeline,
                 layout=layout, slots=slots, model=model, gpu=gpu,
                 engine=engine_name, gpu_memory_utilization=mem, memory_option=mem_option, train_backend=train_backend)
