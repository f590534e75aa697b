"""verl (volcengine/verl): Hydra YAML configs and launch scripts with dotted overrides.

Option names and defaults are those of ``verl/trainer/config/_generated_ppo_trainer.yaml`` (the main
PPO trainer, flattened), ``verl/experimental/one_step_off_policy/config/one_step_off_ppo_trainer.yaml``
and ``verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml``; semantics from
``docs/advance/fully_async.md`` and ``docs/advance/one_step_off.md`` (all in verl-project/verl, formerly
volcengine/verl, checked at commit 1dda039, 2026-08-22, and b178a3c, 2026-01-29: same defaults).

Batch units: ``data.train_batch_size`` and ``actor.ppo_mini_batch_size`` count PROMPTS; each prompt
has ``actor_rollout_ref.rollout.n`` answers, so rollsim's ``batch_size`` (samples) is prompts x n.

The fully async recipe (``verl/experimental/fully_async_policy/``): the trainer takes
``require_batches x ppo_mini_batch_size`` prompts from the queue per local update
(``fully_async_trainer.py``: ``required_samples``, ``_get_samples_from_queue``) and syncs the weights
after every ``trigger_parameter_sync_step`` local updates (``_trigger_parameter_sync_after_step``);
``data.train_batch_size`` is not used. So rollsim's training step is one local update
(``batch_size = require_batches x ppo_mini_batch_size x n`` samples) and ``sync_every =
trigger_parameter_sync_step``. The rollouter pauses once it has started
``(1 + staleness_threshold) x trigger_parameter_sync_step x required_samples`` prompts since the
last sync (``fully_async_rollouter.py``: ``set_max_required_samples``, ``_should_pause_generation``):
``pipeline.max_lag_samples``, the bound of :func:`rollsim.presets.verl_fully_async`; the count restarts only
at a parameter sync, from the prompts in flight or queued (``reset_staleness``): ``lag_release="sync"``. It
runs at most
``concurrent_samples_per_replica`` (16) prompts per inference server at once
(``max_concurrent_samples``), which caps the slots.
verl logs one metrics row per weight sync (``timing_s/*`` summed over its local updates):
``ImportedConfig.steps_per_logged_step = trigger_parameter_sync_step``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rollsim._text import count
from rollsim.errors import invalid
from rollsim.pipelines import FullyAsync, OneStepAsync, Synchronous

from ._common import (CONFIG_NOT_FOUND, ImportedConfig, Layout, Note, Reader, build, flatten, known_options, read_yaml,
                      other_commands_note, resolve, scalar, script_commands, trainer_command,
                      unknown_option_notes)

__all__ = ["load", "from_overrides", "parse_overrides", "ENTRY_POINTS", "FullyAsyncCadence"]

#: Entry modules of verl's trainers and the recipe each runs.
ENTRY_POINTS = {
    "verl.trainer.main_ppo": "ppo",
    "verl.experimental.one_step_off_policy.main_ppo": "one_step_off_policy",
    "verl.experimental.fully_async_policy.fully_async_main": "fully_async_policy",
    "recipe.one_step_off_policy.main_ppo": "one_step_off_policy",
    "recipe.fully_async_policy.fully_async_main": "fully_async_policy",
}

_AR = "actor_rollout_ref"

#: The note of the training options whose cost the calibration measures as a whole (FSDP offload and
#: sharding size, activation checkpointing): one fitted training cost per step and per token.
_TRAIN_COST = "part of the calibrated training cost (not modelled separately)"

#: Prompts the fully async rollouter runs at once per inference server, by default
#: (``async_training.concurrent_samples_per_replica``, verl-project/verl
#: ``verl/experimental/fully_async_policy/fully_async_rollouter.py``, ``set_max_required_samples``:
#: ``max_concurrent_samples = active servers * concurrent_samples_per_replica``; a constant 16 before).
FULLY_ASYNC_PROMPTS_PER_SERVER = 16


@dataclass(frozen=True)
class FullyAsyncCadence:
    """How verl's fully async recipe trains and bounds its rollout, in verl's terms (the importer's
    reading of ``async_training.*``, shared by :func:`rollsim.whatif` and :mod:`rollsim.validation`).

    The trainer takes ``require_batches x ppo_mini_batch_size`` prompts from the queue per local
    update (``fully_async_trainer.py``: ``required_samples``) and syncs the weights after every
    ``trigger_parameter_sync_step`` local updates; the rollouter pauses once it has started
    ``int(required_samples x (1 + staleness_threshold) x trigger_parameter_sync_step)`` prompts since
    the last sync (``max_required_samples``) and runs at most ``max_concurrent_samples = active
    servers x concurrent_samples_per_replica`` prompts at once, never more than
    ``max_required_samples`` (``fully_async_rollouter.py``, ``set_max_required_samples``).

    Attributes
    ----------
    ppo_mini_batch_size : int
        Prompts per mini-batch (``actor_rollout_ref.actor.ppo_mini_batch_size``).
    require_batches : int
        Mini-batches per local update (``async_training.require_batches``).
    trigger_parameter_sync_step : int
        Local updates per parameter sync (``async_training.trigger_parameter_sync_step``).
    staleness_threshold : float
        ``async_training.staleness_threshold``.
    partial_rollout : bool
        ``async_training.partial_rollout``.
    concurrent_samples_per_replica : int
        Prompts at once per inference server (``async_training.concurrent_samples_per_replica``; a
        constant 16 in verl before it became an option).
    n : int
        Answers per prompt (``actor_rollout_ref.rollout.n``).
    """

    ppo_mini_batch_size: int
    require_batches: int
    trigger_parameter_sync_step: int
    staleness_threshold: float
    partial_rollout: bool
    concurrent_samples_per_replica: int
    n: int

    @property
    def prompts_per_update(self) -> int:
        """Prompts one local update trains (verl's ``required_samples``)."""
        return self.require_batches * self.ppo_mini_batch_size

    @property
    def max_required_prompts(self) -> int:
        """Prompts the rollouter starts per parameter sync window before it pauses (verl's
        ``max_required_samples``; ``int()`` floors, as verl computes it)."""
        return int(self.prompts_per_update * (1.0 + self.staleness_threshold) * self.trigger_parameter_sync_step)

    @property
    def max_lag_samples(self) -> int:
        """``pipeline.max_lag_samples``: :attr:`max_required_prompts` x ``n`` (at least one group)."""
        return max(self.n, self.max_required_prompts * self.n)

    def concurrent_prompts(self, servers: int) -> int:
        """Prompts the rollouter runs at once on ``servers`` inference servers (verl's
        ``max_concurrent_samples``)."""
        return min(max(1, servers) * self.concurrent_samples_per_replica, self.max_required_prompts)

    def rollout_slots(self, servers: int, max_num_seqs: int) -> int:
        """Sequences decoding at once: :meth:`concurrent_prompts` x ``n``, within ``servers`` x
        ``max_num_seqs`` (the engines' own limit)."""
        return max(1, min(max(1, servers) * max_num_seqs, self.concurrent_prompts(servers) * self.n))

    def pipeline(self) -> FullyAsync:
        """The recipe's pipeline: the bound :attr:`max_lag_samples`, whose count restarts only at a
        parameter sync (``reset_staleness``: ``lag_release="sync"``), and in-flight answers paused and
        resumed with the new weights (``partial_rollout``) or waited for."""
        return FullyAsync(max_lag_samples=self.max_lag_samples, lag_release="sync",
                          on_update="keep_recompute" if self.partial_rollout else "wait")

    def replace(self, **changes: Any) -> FullyAsyncCadence:
        """A copy with ``changes`` (verl's names)."""
        return replace(self, **changes)

    @staticmethod
    def matching(prompts: int, n: int, *, trigger_parameter_sync_step: int = 4, staleness_threshold: float = 0.1,
                 partial_rollout: bool = True,
                 concurrent_samples_per_replica: int = FULLY_ASYNC_PROMPTS_PER_SERVER) -> FullyAsyncCadence:
        """The cadence that trains ``prompts`` per parameter sync as ``trigger_parameter_sync_step``
        local updates of ``require_batches`` 1 x ``prompts / trigger_parameter_sync_step``: the rule
        verl's docs/advance/fully_async.md gives to compare with a colocated run of
        ``train_batch_size = prompts`` (``trigger_parameter_sync_step = train_batch_size /
        (require_batches x ppo_mini_batch_size)``). Defaults: verl's (``fully_async_ppo_trainer.yaml``).

        Raises ScenarioError (naming ``trigger_parameter_sync_step``) when it does not divide ``prompts``."""
        if trigger_parameter_sync_step < 1 or prompts % trigger_parameter_sync_step:
            raise invalid("trigger_parameter_sync_step", f"must divide the {prompts} prompts per step into local "
                          f"updates of equal size (a divisor of {prompts}), got {trigger_parameter_sync_step}")
        return FullyAsyncCadence(ppo_mini_batch_size=prompts // trigger_parameter_sync_step, require_batches=1,
                                 trigger_parameter_sync_step=trigger_parameter_sync_step,
                                 staleness_threshold=float(staleness_threshold), partial_rollout=bool(partial_rollout),
                                 concurrent_samples_per_replica=concurrent_samples_per_replica, n=n)


def _is_entry(word: str) -> bool:
    """A verl trainer's entry module (``-m verl.trainer.main_ppo``'s word) or its script path."""
    return word in ENTRY_POINTS or any(word.endswith(m.replace(".", "/") + ".py") for m in ENTRY_POINTS)


def parse_overrides(words: list[str], checked: list[str] | None = None) -> tuple[dict[str, Any], str | None, list[str]]:
    """Hydra overrides of a verl command line: ``key=value``, ``+key=value``, ``++key=value``
    (``~key`` deletes). Returns ``(overrides, recipe or None, config files named by --config-path /
    --config-name)``. ``checked``, when given, receives the keys of plain ``key=value`` overrides
    (those Hydra refuses when the config has no such key; ``+`` adds a key and is not checked)."""
    out: dict[str, Any] = {}
    recipe = None
    cfg_path = cfg_name = None
    # a command's own overrides follow its entry module; words before it (NAME=value environment assignments) and
    # the overrides of another program (verl's SFT or generation trainers) are not checked against the PPO options
    has_entry = any(w == "-m" or w.endswith(".py") for w in words)
    check = not has_entry
    i = 0
    while i < len(words):
        w = words[i]
        if w == "-m" and i + 1 < len(words):
            recipe = ENTRY_POINTS.get(words[i + 1], recipe)
            check = words[i + 1] in ENTRY_POINTS
            i += 2
            continue
        if w.endswith(".py"):
            check = False
        for mod, rec in ENTRY_POINTS.items():
            if w.endswith(mod.replace(".", "/") + ".py"):
                recipe = rec
                check = True
        if w.startswith("--config-path") or w.startswith("--config-name"):
            val = w.partition("=")[2] if "=" in w else (words[i + 1] if i + 1 < len(words) else "")
            if w.startswith("--config-path"):
                cfg_path = val
            else:
                cfg_name = val
            i += 1 if "=" in w else 2
            continue
        if "=" in w and not w.startswith("-"):
            key, _, val = w.partition("=")
            plain = not key.startswith("+")
            key = key.lstrip("+")
            if key and all(part.isidentifier() or part.isdigit() for part in key.split(".")):
                out[key] = scalar(val)
                if plain and check and checked is not None:
                    checked.append(key)
        elif w.startswith("~") and len(w) > 1:
            out[w[1:]] = None
        i += 1
    files = []
    if cfg_name:
        files.append(str(Path(cfg_path or ".") / (cfg_name if cfg_name.endswith(".yaml") else cfg_name + ".yaml")))
    if cfg_name and recipe is None:
        if "fully_async" in cfg_name:
            recipe = "fully_async_policy"
        elif "one_step_off" in cfg_name:
            recipe = "one_step_off_policy"
    return out, recipe, files


def load(path: Path, overrides: list[str] | tuple[str, ...] = (), gpu: str | None = None) -> ImportedConfig:
    """Reads a verl YAML config, or a launch script (``python3 -m verl.trainer.main_ppo key=value
    ...``), plus optional dotted ``overrides`` (as on the command line).

    Parameters
    ----------
    path : Path
        A ``.yaml`` config (full or partial: absent options take verl's defaults), or a shell
        script whose command names verl's entry module and Hydra overrides.
    gpu : str, optional
        The accelerator (a :data:`rollsim.hardware.ACCELERATORS` name): builds ``.deployment``.
    overrides : list of str
        ``key=value`` overrides applied after the file (``data.train_batch_size=512``).

    Returns
    -------
    ImportedConfig

    Raises
    ------
    ScenarioError
        An option of the wrong type or out of range (the message names it).
    """
    text = path.read_text()
    recipe = None
    flat: dict[str, Any] = {}
    checked: list[str] = []
    own: set[str] = set()  # keys the user's own YAML files define (Hydra accepts overrides of them)
    file_keys: list[str] = []  # the options those files set, checked like the overrides (a typo there is one too)
    missing: list[str] = []  # config files the script names (--config-path / --config-name) that are not there
    other_note = None   # the script's other commands: one note
    if path.suffix in (".yaml", ".yml"):
        tree = read_yaml(path)
        flat = flatten(tree)
        own |= _all_keys(tree)
        file_keys += _file_options(tree, flat)
        defaults = tree.get("defaults") or []
        names = " ".join(str(d) for d in defaults) if isinstance(defaults, list) else str(defaults)
        if "async_training" in tree:
            recipe = "fully_async_policy"
        elif "one_step_off" in names or "one_step_off" in path.name or (
                isinstance(tree.get("rollout"), dict) and "nnodes" in tree["rollout"]):
            recipe = "one_step_off_policy"
    else:
        # only the verl trainer's command is read (``ray stop``, ``pkill``, ``ray job submit ...`` before it and
        # the script's other commands are not); a script without one is a bare list of overrides
        commands = script_commands(text)
        cmd, others = trainer_command(commands, _is_entry)
        ov, recipe, files = parse_overrides([w for c in commands for w in c] if cmd is None else cmd, checked)
        if cmd is not None:
            at = next(i for i, w in enumerate(cmd) if _is_entry(w))
            other_note = other_commands_note(others, "python -m verl.trainer.main_ppo or another verl entry point",
                                             launcher=cmd[:at])
        for f in files:
            p = (path.parent / f) if not Path(f).is_absolute() else Path(f)
            if not p.is_file():
                missing.append(str(p))
            else:
                t = read_yaml(p)
                flat.update(flatten(t))
                own |= _all_keys(t)
                file_keys += _file_options(t, flatten(t))
        flat.update(ov)
        if recipe is None and not ov:
            raise invalid("config", f"{path} names no verl entry module (python -m verl.trainer.main_ppo ...) "
                          "and no key=value overrides")
    ov2, rec2, _ = parse_overrides(list(overrides), checked)
    flat.update(ov2)
    recipe = rec2 or recipe
    if recipe is None:
        recipe = "fully_async_policy" if any(k.startswith("async_training.") for k in flat) else "ppo"
    flat = resolve(flat)
    imp = _build(flat, recipe, str(path), gpu, checked=checked, own=own, file_keys=file_keys)
    if other_note is not None:
        imp = replace(imp, notes=imp.notes + (other_note,))
    if missing:
        # the run read that file; without it every option it sets is verl's default here: said, not silently lost
        extra = tuple(Note("--config-name", repr(f), f"{CONFIG_NOT_FOUND} (--config-path is relative to the script): "
                           "its options are not read, verl's defaults stand for them; put the file there, or give its "
                           "options as overrides", "ignored") for f in missing)
        imp = replace(imp, notes=imp.notes + extra)
    return imp


def from_overrides(words: list[str] | tuple[str, ...], gpu: str | None = None, *,
                   source: str = "verl command line") -> ImportedConfig:
    """Reads a verl launch command given as its words (``["python3", "-m",
    "verl.experimental.fully_async_policy.fully_async_main", "key=value", ...]``, or the ``key=value``
    overrides alone) without a file: the same reading as :func:`load` of a launch script (absent
    options take verl's defaults; ``--config-path`` / ``--config-name`` files are not read).

    Parameters
    ----------
    words : list of str
        The command's words.
    gpu : str, optional
        The accelerator (a :data:`rollsim.hardware.ACCELERATORS` name): builds ``.deployment``.
    source : str
        What ``ImportedConfig.source`` says the config came from.

    Returns
    -------
    ImportedConfig

    Raises
    ------
    ScenarioError
        An option of the wrong type or out of range (the message names it).
    """
    checked: list[str] = []
    flat, recipe, _ = parse_overrides([str(w) for w in words], checked)
    if recipe is None:
        recipe = "fully_async_policy" if any(k.startswith("async_training.") for k in flat) else "ppo"
    return _build(resolve(flat), recipe, source, gpu, checked=checked)


def _file_options(tree: dict[str, Any], flat: dict[str, Any]) -> list[str]:
    """The options a YAML file sets under verl's own sections (``data``, ``actor_rollout_ref``, ...; a
    recipe's section of its own and ``defaults`` / ``hydra`` are not checked), as dotted names:
    checked against verl's option list like the dotted overrides (verl's YAML trainer config takes a
    new key from a user's file without complaint and keeps the default of the option meant)."""
    known, _ = known_options("verl")
    return sorted(k for k in _all_keys(tree) if k.split(".", 1)[0] in known and k.split(".", 1)[0] != "hydra"
                  and not isinstance(flat.get(k, {}), dict) and not any(part.startswith("_") for part in k.split(".")))


def _all_keys(tree: Any, prefix: str = "") -> set[str]:
    """Every key of a nested mapping, dotted, inner nodes included."""
    out: set[str] = set()
    if isinstance(tree, dict):
        for k, v in tree.items():
            name = f"{prefix}.{k}" if prefix else str(k)
            out.add(name)
            out |= _all_keys(v, name)
    return out


def _build(flat: dict[str, Any], recipe: str, source: str, gpu: str | None = None, *,
           checked: list[str] | tuple[str, ...] = (), own: set[str] | frozenset[str] = frozenset(),
           file_keys: list[str] | tuple[str, ...] = ()) -> ImportedConfig:
    r = Reader(flat, "the verl config")
    unknown_option_notes(r, "verl", list(dict.fromkeys(file_keys)))
    unknown_option_notes(r, "verl", [k for k in dict.fromkeys(checked) if k not in r.used], extra=own)
    r.note("(recipe)", recipe, {"ppo": "verl.trainer.main_ppo: synchronous pipeline",
                                "one_step_off_policy": "one_step_off_policy: one-step off-policy pipeline",
                                "fully_async_policy": "fully_async_policy: fully asynchronous pipeline"}[recipe], "read")
    n, g = r.positive_int(f"{_AR}.rollout.n", 1)
    r.read(f"{_AR}.rollout.n", n, g, f"group_size = {n}")
    max_resp, g = r.positive_int("data.max_response_length", 512, hi=2**40, aliases=(f"{_AR}.rollout.response_length",))
    r.read("data.max_response_length", max_resp, g, f"lengths.max_tokens = {max_resp} tokens")
    max_prompt, g = r.positive_int("data.max_prompt_length", 512, hi=2**30, aliases=(f"{_AR}.rollout.prompt_length",))
    r.read("data.max_prompt_length", max_prompt, g, "not a scenario field (prefill is free until calibrated)")
    tp, g = r.positive_int(f"{_AR}.rollout.tensor_model_parallel_size", 2, hi=4096)
    r.read(f"{_AR}.rollout.tensor_model_parallel_size", tp, g, f"tensor parallel {tp}")
    rdp, g = r.positive_int(f"{_AR}.rollout.data_parallel_size", 1, hi=4096)
    rpp, g2 = r.positive_int(f"{_AR}.rollout.pipeline_model_parallel_size", 1, hi=4096)
    if g or g2:
        r.read(f"{_AR}.rollout.data_parallel_size", rdp, g, f"data parallel {rdp}")
        r.read(f"{_AR}.rollout.pipeline_model_parallel_size", rpp, g2, f"pipeline parallel {rpp}")
    tp_total = tp * rdp * rpp
    r.note("(GPUs per inference server)", repr(tp_total), f"{count(tp_total, 'GPU')} per inference server (tensor x data x "
           "pipeline parallel: rollout_world_size, verl/workers/rollout/llm_server.py)", "read")
    seqs, g = r.positive_int(f"{_AR}.rollout.max_num_seqs", 256)
    r.read(f"{_AR}.rollout.max_num_seqs", seqs, g, f"{seqs} concurrent sequences per engine")
    nodes, g = r.positive_int("trainer.nnodes", 1, hi=65536)
    r.read("trainer.nnodes", nodes, g, "trainer nodes")
    gpn, g = r.positive_int("trainer.n_gpus_per_node", 8, hi=1024)
    r.read("trainer.n_gpus_per_node", gpn, g, f"{nodes * gpn} trainer GPUs")
    engine, given_name = r.get(f"{_AR}.rollout.name", "vllm")
    if not given_name:
        r.note(f"{_AR}.rollout.name", "???", "vllm assumed (verl requires it: 'name: ???' in "
               "_generated_ppo_trainer.yaml); the engine only matters for the deployment, with --gpu", "assumed")
    mem = r.memory_fraction(f"{_AR}.rollout.gpu_memory_utilization")
    model = r.model_path(f"{_AR}.model.path")
    strategy, g = r.get(f"{_AR}.actor.strategy", "fsdp", kind=str)
    backend = {"fsdp": "fsdp2", "fsdp2": "fsdp2", "megatron": "megatron"}.get(str(strategy).lower())
    r.read(f"{_AR}.actor.strategy", strategy, g, f"training backend {backend!r} (the hardware training model's, for "
           "a what-if's GPU change)" if backend else "a training backend rollsim does not model (fsdp2 assumed)")
    steps, steps_given = r.get("trainer.total_training_steps", None)
    every = 1
    cadence = None
    if recipe == "ppo":
        prompts, g = r.positive_int("data.train_batch_size", 1024)
        r.read("data.train_batch_size", prompts, g, f"batch_size = {prompts * n} samples ({prompts} prompts x "
               f"rollout.n {n}; verl counts prompts)")
        hybrid, g = r.flag(f"{_AR}.hybrid_engine", True)
        r.read(f"{_AR}.hybrid_engine", hybrid, g, "colocated: rollout and training share the GPUs" if hybrid
               else "separate pools")
        layout = Layout(rollout_gpus=nodes * gpn, train_gpus=nodes * gpn, colocated=bool(hybrid), rollout_tp=tp_total,
                        slots_per_engine=seqs)
        osr, g = r.number(f"{_AR}.rollout.over_sample_rate", 0.0, hi=1e6)
        pipeline: Any = Synchronous(over_sampling=osr if osr > 0 else None)
        r.read(f"{_AR}.rollout.over_sample_rate", osr, g, f"pipeline.over_sampling = {osr:g}" if osr > 0
               else "no over-sampling")
    else:
        rn, g1 = r.positive_int("rollout.nnodes", 1, hi=65536)
        rg, g2 = r.positive_int("rollout.n_gpus_per_node", 8, hi=1024)
        r.read("rollout.nnodes", rn, g1, "rollout nodes (separate pool)")
        r.read("rollout.n_gpus_per_node", rg, g2, f"{rn * rg} rollout GPUs")
        layout = Layout(rollout_gpus=rn * rg, train_gpus=nodes * gpn, colocated=False, rollout_tp=tp_total,
                        slots_per_engine=seqs)
        if recipe == "one_step_off_policy":
            prompts, g = r.positive_int("data.train_batch_size", 1024)
            r.read("data.train_batch_size", prompts, g, f"batch_size = {prompts * n} samples ({prompts} prompts x "
                   f"rollout.n {n}; verl counts prompts)")
            pipeline = OneStepAsync()
        else:
            # verl/experimental/fully_async_policy/config/fully_async_ppo_trainer.yaml (verl-project/verl 1dda039):
            # staleness_threshold 0.1 (line 12), trigger_parameter_sync_step 4 (16), require_batches 1 (19),
            # partial_rollout True (23), concurrent_samples_per_replica 16 (49), actor.use_rollout_log_probs True (87);
            # ppo_mini_batch_size 256 from _generated_ppo_trainer.yaml (line 79)
            mini, g = r.positive_int(f"{_AR}.actor.ppo_mini_batch_size", 256)
            r.read(f"{_AR}.actor.ppo_mini_batch_size", mini, g, "prompts per mini-batch")
            req, g = r.positive_int("async_training.require_batches", 1)
            prompts = req * mini
            r.read("async_training.require_batches", req, g, f"batch_size = {prompts * n} samples per training step "
                   f"(one local update: {req} x {mini} prompts x rollout.n {n}; fully_async_trainer.py "
                   "required_samples)")
            trig, g = r.positive_int("async_training.trigger_parameter_sync_step", 4)
            every = trig
            r.read("async_training.trigger_parameter_sync_step", trig, g,
                   f"sync_every = {trig} (the trainer syncs the weights after every {trig} local updates, "
                   f"{trig * prompts} prompts: fully_async_trainer.py _trigger_parameter_sync_after_step; verl logs "
                   f"one metrics row per sync, steps_per_logged_step = {trig})")
            r.ignore("data.train_batch_size", "the fully async trainer does not use it (docs/advance/fully_async.md: "
                     "'not effective'); a step is require_batches x ppo_mini_batch_size prompts")
            thr, g = r.number("async_training.staleness_threshold", 0.1, hi=1e6)
            thr_given = g
            partial, partial_given = r.flag("async_training.partial_rollout", True)
            per, per_given = r.positive_int("async_training.concurrent_samples_per_replica",
                                            FULLY_ASYNC_PROMPTS_PER_SERVER)
            cadence = FullyAsyncCadence(ppo_mini_batch_size=mini, require_batches=req, trigger_parameter_sync_step=trig,
                                        staleness_threshold=float(thr), partial_rollout=bool(partial),
                                        concurrent_samples_per_replica=per, n=n)
            max_required = cadence.max_required_prompts  # prompts, as verl computes it (int() floors)
            lag = cadence.max_lag_samples
            g = thr_given
            r.read("async_training.staleness_threshold", thr, g,
                   f"pipeline.max_lag_samples = {lag} (int((1 + {thr:g}) x {trig} x {prompts}) = {max_required} prompts "
                   f"x rollout.n {n}: the rollouter pauses at that many prompts started since the last sync, "
                   "fully_async_rollouter.py set_max_required_samples; the count restarts only at a parameter "
                   "sync, reset_staleness: lag_release='sync')")
            on_update = "keep_recompute" if partial else "wait"
            r.read("async_training.partial_rollout", partial, partial_given, f"pipeline.on_update = {on_update!r}" +
                   (" (in-flight answers are paused and resumed with the new weights)" if partial
                    else " (the sync waits for in-flight answers)"))
            pipeline = cadence.pipeline()
            # verl before 2026-08 spelled it async_training.use_rollout_log_probs (volcengine/verl b178a3c, line 25)
            rlp, g = r.flag(f"{_AR}.actor.use_rollout_log_probs", True, aliases=("async_training.use_rollout_log_probs",))
            r.read(f"{_AR}.actor.use_rollout_log_probs", rlp, g, "no log-prob recompute phase" if rlp
                   else "an old_log_prob phase (calibrate logprob_s_per_token)")
            r.ignore("async_training.compute_prox_log_prob", "a loss-side option")
            r.ignore("rollout.n", "the recipe's answers per prompt are actor_rollout_ref.rollout.n")
            r.ignore("async_training.use_dynamic_resource_scheduling", "rollout replicas lent by the trainer's GPUs are "
                     "not modelled (the rollout pool is rollout.nnodes x rollout.n_gpus_per_node)")
            concurrent = cadence.concurrent_prompts(layout.engines)
            slots = cadence.rollout_slots(layout.engines, seqs)
            r.read("async_training.concurrent_samples_per_replica", per, per_given, f"rollout_slots = {slots}: at most "
                   f"{concurrent} prompts at once (min of {per} per server x {layout.engines} servers and "
                   f"{max_required}: fully_async_rollouter.py max_concurrent_samples) x rollout.n {n}, within "
                   f"{layout.engines} engines x max_num_seqs {seqs}")
    for name, why in ((f"{_AR}.actor.ppo_epochs", "training cost is calibrated per token"),
                      (f"{_AR}.actor.use_dynamic_bsz", "token packing: part of the calibrated training cost"),
                      (f"{_AR}.actor.ppo_max_token_len_per_gpu", "token packing: part of the calibrated training cost"),
                      ("trainer.balance_batch", "rank balancing: part of the calibrated training cost"),
                      (f"{_AR}.rollout.enable_prefix_caching", "prefill is free until calibrated"),
                      (f"{_AR}.rollout.free_cache_engine", "sleep / wake cost: part of the calibrated overhead"),
                      (f"{_AR}.actor.fsdp_config.param_offload", _TRAIN_COST),
                      (f"{_AR}.actor.fsdp_config.optimizer_offload", _TRAIN_COST),
                      (f"{_AR}.actor.fsdp_config.fsdp_size", _TRAIN_COST),
                      (f"{_AR}.ref.fsdp_config.param_offload", _TRAIN_COST),
                      (f"{_AR}.model.enable_gradient_checkpointing", _TRAIN_COST)):
        r.ignore(name, why)
    # a multi-turn rollout (tool calls between turns) is rollsim's agentic model, which the import does not build
    r.ignore_rest((f"{_AR}.rollout.multi_turn", f"{_AR}.rollout.agent"),
                  "the import builds single-turn samples; a multi-turn run is rollsim's agentic model, given on top "
                  "(rollsim run --config F --agentic-preset NAME --max-turns N, or Scenario.replace(agentic=Agentic(...)))")
    r.ignore_rest(("algorithm.rollout_correction", "async_training", "actor_rollout_ref.checkpoint_engine"))
    if steps_given:
        r.note("trainer.total_training_steps", steps, "ignored: rollsim runs horizon_s seconds (7200 by default), "
               "not a number of steps", "ignored")
    train_options = _megatron_layout(r) if backend == "megatron" else {}
    r.ignore_rest(("",))  # every other option given: noted, not silently lost
    return build(r, framework="verl", source=source, prompts=prompts, group=n, max_response=max_resp,
                 pipeline=pipeline, layout=layout, slots=slots if recipe == "fully_async_policy" else layout.engines * seqs,
                 model=model, gpu=gpu, engine=str(engine), gpu_memory_utilization=mem,
                 memory_option=f"{_AR}.rollout.gpu_memory_utilization",
                 engine_option=f"{_AR}.rollout.name" if given_name else None, train_backend=backend,
                 sync_every=every, steps_per_logged_step=every, fully_async=cadence, train_options=train_options,
                 deployment_names={"rollout_tp": f"{_AR}.rollout.tensor_model_parallel_size"
                                   + (" (x data x pipeline parallel)" if tp_total != tp else ""),
                                   "tp": f"{_AR}.rollout.tensor_model_parallel_size",
                                   "max_num_seqs": f"{_AR}.rollout.max_num_seqs"})


#: verl's Megatron actor's parallel sizes (``actor_rollout_ref.actor.megatron.*``, 1 or null by default in
#: verl/trainer/config/_generated_ppo_megatron_trainer.yaml) and the hardware training model's option each is.
MEGATRON_LAYOUT = {"tensor_model_parallel_size": "tensor_parallel", "pipeline_model_parallel_size": "pipeline_parallel",
                   "virtual_pipeline_model_parallel_size": "virtual_pipeline",
                   "context_parallel_size": "context_parallel", "expert_model_parallel_size": "expert_parallel",
                   "expert_tensor_parallel_size": "expert_tensor_parallel"}


def _megatron_layout(r: Reader) -> dict[str, tuple[str, int]]:
    """The Megatron actor's parallel layout given in the config, ``{option: (training option, size)}``:
    the deployment's training model (:func:`rollsim.hardware.training.train_step_s`) takes them, so a
    what-if that moves the training GPUs prices the run's own layout."""
    out = {}
    for key, opt in MEGATRON_LAYOUT.items():
        name = f"{_AR}.actor.megatron.{key}"
        if r.has(name) and r.options[name] is not None:
            size, _ = r.positive_int(name, 1, hi=2**20)
            out[name] = (opt, size)
    return out
