"""``rollsim hardware``: a deployment's breakdown from specs (and the registry's names), and the
resource validation table of ``rollsim validate --resources``."""

from __future__ import annotations

import argparse
import re
import warnings
from typing import Any

from rollsim import _check
from rollsim._text import count
from rollsim.errors import DeploymentWarning

from .switching import train_state_words

__all__ = ["add_parser", "add_deployment_args", "deployment_from_args", "deployment_flags_given",
           "deployment_of_layout", "layout_words", "run", "print_resource_validation", "parse_train_options"]


def add_deployment_args(p: argparse.ArgumentParser, *, required: bool, layout: bool = False) -> None:
    """The flags that name a deployment: ``--model`` (or ``--hf-config``), ``--gpu``, ``--engine``,
    ``--gpu-memory-utilization``, ``--max-num-seqs``, ``--train-backend`` and ``--train-option
    NAME=VALUE`` (any option of :func:`rollsim.hardware.training.train_option_names`); with
    ``layout`` also its GPUs: ``--rollout-gpus``, ``--rollout-tp``, ``--train-gpus`` and
    ``--colocated`` (``rollsim hardware``, ``run`` and ``compare``; ``split`` searches the GPUs
    instead). The flags' dests and defaults are set as ``_deployment_flags`` (``{dest: (flag,
    default)}``), so that a command tells a deployment flag given from one left at its default."""
    g = p.add_argument_group("deployment (rollsim.hardware)")
    first = len(p._actions)
    g.add_argument("--model", default=None, help="a model of rollsim.hardware.MODELS or a Hugging Face id"
                   + ("" if required else " (sizes the pool and the trainer from specs)"))
    g.add_argument("--hf-config", default=None, help="a config.json (or its directory) instead of --model")
    g.add_argument("--gpu", default=None, help="an accelerator of rollsim.hardware.ACCELERATORS (e.g. H100)")
    g.add_argument("--engine", default="vllm", choices=("vllm", "sglang"),
                   help="the serving engine whose decode and KV model are used (%(default)s)")
    g.add_argument("--gpu-memory-utilization", type=float, default=None, help="engine memory fraction (0.9)")
    g.add_argument("--max-num-seqs", type=int, default=None, help="running sequences per instance (1024)")
    g.add_argument("--train-backend", default="fsdp2", choices=("fsdp2", "megatron"),
                   help="the training backend whose step model is used (%(default)s)")
    g.add_argument("--train-option", action="append", default=None, metavar="NAME=VALUE",
                   help="a training option of rollsim.hardware.training.train_step_s (repeatable), e.g. "
                        "activation_checkpointing=selective, tensor_parallel=2, pipeline_parallel=4, "
                        "expert_parallel=8, precision=fp8 (allowed: " + ", ".join(_names()) + ")")
    if layout:
        g.add_argument("--rollout-gpus", type=int, default=None, help="rollout GPUs (default: one instance)")
        g.add_argument("--rollout-tp", type=int, default=1, help="GPUs per engine instance (%(default)s)")
        g.add_argument("--train-gpus", type=int, default=None, help="training GPUs (default: the rollout GPUs)")
        g.add_argument("--colocated", action="store_true",
                       help="rollout and training take turns on the same GPUs")
    p.set_defaults(_deployment_flags={act.dest: (act.option_strings[0], act.default) for act in p._actions[first:]})


def deployment_flags_given(a: argparse.Namespace) -> list[str]:
    """The deployment flags of :func:`add_deployment_args` that ``a`` sets to other than their
    defaults, as given (``--gpu``, ``--rollout-gpus``, ...)."""
    return [flag for dest, (flag, default) in getattr(a, "_deployment_flags", {}).items()
            if getattr(a, dest, default) != default]


def deployment_of_layout(a: argparse.Namespace) -> Any:
    """The :class:`rollsim.hardware.Deployment` of the flags of :func:`add_deployment_args` with
    ``layout``: ``--rollout-gpus`` (default one instance, ``--rollout-tp``), ``--train-gpus``
    (default the rollout GPUs), ``--colocated``; a refusal names the flags, not the arguments."""
    from rollsim.errors import ScenarioError

    rollout_gpus = a.rollout_tp if a.rollout_gpus is None else a.rollout_gpus  # 0 is refused, not a default
    try:
        return deployment_from_args(a, rollout_gpus=rollout_gpus, rollout_tp=a.rollout_tp,
                                    train_gpus=rollout_gpus if a.train_gpus is None else a.train_gpus,
                                    colocated=a.colocated)
    except ScenarioError as e:  # the deployment's words for what the command's flags set
        raise ScenarioError(layout_words(str(e))) from None


def layout_words(message: str) -> str:
    """``message`` of :class:`rollsim.hardware.Deployment` with its argument names spelled as the
    flags of :func:`add_deployment_args` with ``layout`` (``rollout_tp`` -> ``--rollout-tp``)."""
    return _HARDWARE_WORDS.sub(lambda m: _HARDWARE_FLAGS[m.group(0)], message)


def _names() -> list[str]:
    from .training import train_option_names

    return train_option_names()


def parse_train_options(items: list[str] | None) -> dict[str, Any]:
    """``NAME=VALUE`` strings as ``train_step_s`` keyword arguments, each value read as the
    argument's type (from its annotation: bool, int, float or str, ``none`` for an optional one).

    Raises ScenarioError for a malformed item, an unknown name or a value of the wrong type."""
    import typing

    from rollsim.errors import invalid

    from .training import option_hint, train_option_names, train_step_s

    hints = typing.get_type_hints(train_step_s)
    names = train_option_names()
    out: dict[str, Any] = {}
    for item in items or []:
        name, sep, text = str(item).partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name:
            raise invalid("--train-option", f"must be NAME=VALUE, got {item!r}")
        if name not in names:
            raise invalid("--train-option", f"unknown option {name!r} (allowed: {', '.join(names)})"
                                            f"{option_hint(name, names)}")
        kinds = typing.get_args(hints[name]) or (hints[name],)
        if type(None) in kinds and text.lower() in ("none", "null"):
            out[name] = None
            continue
        kind = next(k for k in kinds if k is not type(None))
        try:
            if kind is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(text)
                out[name] = text.lower() in ("true", "1", "yes")
            elif kind in (int, float):
                out[name] = kind(text)
            else:
                out[name] = text
        except ValueError:
            raise invalid(f"--train-option {name}", f"must be {getattr(kind, '__name__', kind)}"
                          f"{' or none' if type(None) in kinds else ''}, got {text!r}") from None
    return out


def deployment_from_args(a: argparse.Namespace, *, rollout_gpus: int, rollout_tp: int, train_gpus: int,
                         colocated: bool = False) -> Any:
    """The :class:`rollsim.hardware.Deployment` the flags name."""
    from rollsim.errors import invalid

    from .deployment import Deployment
    from .specs import model_from_hf_config

    if (a.model is None) == (a.hf_config is None):
        raise invalid("model", "give --model or --hf-config (one of them)")
    if a.gpu is None:
        raise invalid("--gpu", "required with --model or --hf-config: the accelerator, e.g. H100 (rollsim hardware "
                               "--list names the known ones)")
    m = a.model if a.model is not None else model_from_hf_config(a.hf_config)
    return Deployment(model=m, gpu=a.gpu, rollout_gpus=rollout_gpus, rollout_tp=rollout_tp, train_gpus=train_gpus,
                      train_backend=a.train_backend, engine=a.engine, gpu_memory_utilization=a.gpu_memory_utilization,
                      max_num_seqs=a.max_num_seqs, colocated=colocated,
                      train_options=parse_train_options(getattr(a, "train_option", None)))


#: :class:`rollsim.hardware.Deployment`'s argument names in its messages, as ``rollsim hardware``'s flags.
_HARDWARE_FLAGS: dict[str, str] = {
    "rollout_tp": "--rollout-tp", "raise tp": "raise --rollout-tp", "at tp=": "at --rollout-tp ",
    "rollout_gpus": "--rollout-gpus", "train_gpus": "--train-gpus", "colocated": "--colocated",
    "gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs",
    "train_backend": "--train-backend", "train_options": "--train-option",
}
_HARDWARE_WORDS = re.compile("|".join(rf"(?<![\w-]){re.escape(k)}(?![\w])" if k[-1].isalnum() else
                                      rf"(?<![\w-]){re.escape(k)}" for k in _HARDWARE_FLAGS))


def run(a: argparse.Namespace) -> int:
    """``rollsim hardware``: the registry (``--list``) or a deployment's breakdown."""
    from .specs import ACCELERATORS, MODELS

    if a.list:
        print("accelerators:")
        for n, g in ACCELERATORS.items():
            fp8 = f"{g.fp8_flops / 1e12:,.0f}" if g.fp8_flops else "-"
            print(f"  {n:<12} {g.family:<9} {g.hbm_gib:>5g} GiB {g.hbm_bytes_per_s / 1e12:>5.2f} TB/s "
                  f"BF16 {g.bf16_flops / 1e12:>6,.0f} FP8 {fp8:>6} TFLOP/s  scale-up {g.scale_up_bytes_per_s / 1e9:>4.0f} GB/s")
        print("models:")
        for n, m in MODELS.items():
            moe = f", {m.experts} experts top-{m.experts_per_token}" if m.is_moe else ""
            print(f"  {n:<16} {m.total_params / 1e9:>8.2f}B total, {m.active_params / 1e9:>7.2f}B active, "
                  f"{m.layers} layers{moe}{', MLA' if m.is_mla else ''}")
        return 0
    d = deployment_of_layout(a)
    if a.train_tokens is not None:
        _check.bounded("--train-tokens", a.train_tokens, 1.0, 2.0**50, "tokens")
    print(d.breakdown(a.context_tokens))
    if a.train_tokens is not None:
        seqs = max(1, round(a.train_tokens / a.context_tokens))
        with warnings.catch_warnings():  # said by train_state_line below
            warnings.simplefilter("ignore", DeploymentWarning)
            ph = d.train_step_s(a.train_tokens, seqs)
        # what it counts: the attention term grows with the sequence, so the same tokens in longer sequences
        # (rollsim split's, at its scenario's mean length) cost more
        print(f"  training step of {a.train_tokens:,.0f} tokens on {count(d.train_gpus, 'GPU')} ({seqs} sequences of "
              f"--context-tokens {a.context_tokens:,.0f}; the attention grows with the sequence length): "
              + ", ".join(f"{k} {v:.2f} s" for k, v in ph.items()))
        print(train_state_line(d.model, d.gpu, d.train_gpus))
    return 0


def train_state_line(model: Any, gpu: Any, train_gpus: int) -> str:
    """Whether the training GPUs hold the model's training state (weights, gradients, Adam moments:
    :data:`rollsim.hardware.switching.TRAIN_STATE_BYTES_PER_PARAM` per parameter, sharded over them;
    activations not counted), as a line of ``rollsim hardware --train-tokens``."""
    need, words = train_state_words(model, gpu, train_gpus)
    return f"  {words}: " + ("fits" if train_gpus >= need else "does not fit (or a trainer that offloads it)")


def print_resource_validation(*, fit: bool = False, fmt: str = "table", cases: list[str] | None = None) -> None:
    """Every resource-model row (decode, prefill, and what other parts add): predicted, measured,
    error, source; then the held-out checks (:mod:`rollsim.hardware.held_out`: measurements no fit reads, set 1
    and set 2), in CSV as rows whose ``section`` is "held_out" or "held_out_2"; with ``fit`` the global fits and their residuals first (serving;
    switching). With ``cases``, instead, those
    verl cases of ``rollsim validate`` rebuilt from a deployment (:func:`validation.deployment_cases`)."""
    from . import validation

    if cases:
        from .cases import deployment_cases

        df = deployment_cases(cases)
        if fmt == "csv":
            print(df.write_csv(), end="")
            return
        for r in df.iter_rows(named=True):
            print(f"{r['case']:<26} {r['metric']:<8} measured {r['measured']:8.3g}  roofline {r['predicted_roofline']:8.3g}"
                  f" ({r['error_roofline']:+.0%}, mean {r['mean_tokens_roofline']:,.0f} tokens)  deployment "
                  f"{r['predicted_deployment']:8.3g} ({r['error_deployment']:+.0%}, mean "
                  f"{r['mean_tokens_deployment']:,.0f} tokens)")
        return
    if fit:
        from . import switching

        validation.fit(verbose=True)
        print(switching.calibration_report())
    import polars as pl

    from .held_out import SET_LABELS, SETS, held_out_table

    df = validation.table()
    held = {k: held_out_table(set=k) for k in SETS}
    if fmt == "csv":  # one table; ``section`` tells the calibration table from the held-out checks
        sections = {1: "held_out", 2: "held_out_2"}
        print(pl.concat([df.with_columns(section=pl.lit("calibration"))]
                        + [h.with_columns(section=pl.lit(sections[k])) for k, h in held.items()]).write_csv(), end="")
        return
    print(validation.format_table(df))
    print(validation.summary(df) + "  (* held out of the fit)")
    for k, h in held.items():
        print(f"\n{SET_LABELS[k]}: published measurements no fit reads (rollsim/hardware/data/{SETS[k].name})")
        print(validation.format_table(h))
        print(validation.summary(h))


def add_parser(subparsers: Any) -> None:
    """Registers ``rollsim hardware`` on an ``argparse`` subparsers object."""
    h = subparsers.add_parser("hardware", help="a deployment's serving / training breakdown from specs",
                              description="Prints a deployment's KV capacity, decode-step terms, prefill, training "
                                          "step and (colocated) switch from accelerator and model specs.")
    add_deployment_args(h, required=True, layout=True)
    h.add_argument("--context-tokens", type=float, default=2048.0, help="context of a decoding sequence (%(default)s)")
    h.add_argument("--train-tokens", type=float, default=None, help="also price a training step of this many tokens")
    h.add_argument("--list", action="store_true", help="list the accelerators and models of the registry")
    h.set_defaults(func=run)
