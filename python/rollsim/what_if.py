"""Predict changes to a calibrated run (:func:`whatif`), next to the baseline's own prediction.

A variant is a dict of changes to the calibrated scenario:

- ``pipeline``: ``"sync"``, ``"one-step"``, ``"k-step:K"``, ``"fully-async"`` or a pipeline object;
  or verl's fully async recipe, trained as verl's trainer does (below): ``"verl-fully-async"``, or an
  imported verl ``fully_async_policy`` config (``rollsim.configs.load(script)``), whose cadence it takes;
- verl's fully async cadence, in verl's names (:data:`CADENCE_KEYS`): ``trigger_parameter_sync_step``
  (local updates per parameter sync), ``require_batches`` and ``ppo_mini_batch_size`` (a local update
  trains ``require_batches x ppo_mini_batch_size`` prompts), ``staleness_threshold``,
  ``partial_rollout``, ``concurrent_samples_per_replica``. They apply to verl's fully async pipeline:
  the two ``pipeline`` values above, or a baseline imported from a verl fully_async config (its cadence,
  :attr:`rollsim.configs.ImportedConfig.fully_async`, as the default). For ``"verl-fully-async"`` the
  default is verl's docs' rule for comparing with a colocated run (docs/advance/fully_async.md:
  ``trigger_parameter_sync_step = train_batch_size / (require_batches x ppo_mini_batch_size)``): the
  row's prompts as ``trigger_parameter_sync_step`` (4, verl's default) local updates of
  ``require_batches`` 1, with verl's defaults ``staleness_threshold`` 0.1, ``partial_rollout`` True,
  ``concurrent_samples_per_replica`` 16 (``fully_async_ppo_trainer.yaml``). The variant's training step
  is one local update (``sync_every = trigger_parameter_sync_step``), the pipeline is the recipe's
  (:meth:`rollsim.configs.verl.FullyAsyncCadence.pipeline`), its rollout slots are the rollouter's cap
  (:meth:`~rollsim.configs.verl.FullyAsyncCadence.rollout_slots` on the variant's inference servers,
  with a config's layout), and the calibrated fixed seconds per step (``train_step_s``, and
  ``weight_sync_s``, the rest of a step outside its phases) are shared out per prompt (verl makes the
  same mini-batch optimizer steps whatever the cadence; the per-token costs stay). Its row is one
  parameter sync (``steps_per_row = trigger_parameter_sync_step``), as verl logs it;
- ``max_staleness``: the fully asynchronous pipeline's drop-at-consumption cap (``None``: none);
- ``admission_eta``: AReaL's admission bound (fully asynchronous);
- ``rollout_gpus`` / ``train_gpus``: a GPU split. The rollout slots scale with the rollout GPUs
  (the engines' concurrency read from the config). The calibrated training cost is moved to the new
  training GPU count by :func:`train_scale`: with the model and accelerator known (a deployment,
  or ``model=`` / ``gpu=`` of :func:`rollsim.calibrate`), by :mod:`rollsim.hardware.training`
  (compute from FLOPs and MFU, optimizer, exposed collectives) anchored on the calibrated cost;
  otherwise by the inverse of the training GPUs. A colocated baseline moved to an asynchronous
  pipeline splits its GPUs: with ``rollout_gpus = R`` the trainer gets the other ``total - R``
  (half each when not given);
- ``prompts`` (prompts per step), ``group_size``, ``max_response_tokens``;
- ``recompute_logprob``: False drops the calibrated log-prob recompute phase (the rollout's own
  log-probs are used, as verl's fully async recipe does with ``use_rollout_log_probs``);
- any scenario field, dotted names included (``"lengths.sigma": 1.2``);
- ``name``: the row's label.

Each prediction is simulated for the calibrated parameters and for bootstrap draws of them, giving an
interval (2.5 / 97.5 % over the draws).

Times are reported in the unit the run logged: per metrics row, ``k = calibrated.steps_per_row``
training steps (1 but for the verl fully async recipe, which logs one row per weight sync of
``trigger_parameter_sync_step`` local updates). ``step_s`` and ``trainer_wait_s`` are then the
simulated per-step means times ``k`` (measured over whole rows of ``k`` steps, so that each holds one
sync), tokens/s and staleness are unchanged, and every variant, whatever its pipeline or sync
cadence, is reported per ``k`` of its steps (``samples_per_row``), so that the rows compare; a
variant trained with verl's fully async cadence is reported per parameter sync (its
``trigger_parameter_sync_step`` steps, ``samples_per_row`` saying how many samples that is: with the
docs' rule, the colocated baseline's step).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
import warnings
from typing import Any

import numpy as np
import polars as pl

from rollsim._text import count
from rollsim.calibration import Calibrated
from rollsim.errors import GenerationOutrunsTrainingWarning, ScenarioError, StalenessCapLivelockWarning, invalid
from rollsim.lengths import LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, pipeline_from_name, pipeline_hint
from rollsim.scenario import Scenario

__all__ = ["whatif", "grid", "pipeline_from_name", "plot_whatif", "train_scale", "TrainScale", "METRICS",
           "CADENCE_KEYS", "VERL_FULLY_ASYNC_NAMES"]

#: Columns of :func:`whatif` predicted with an interval (``<name>``, ``<name>_low``, ``<name>_high``).
METRICS = ("step_s", "tokens_per_s", "trainer_wait_s", "staleness_mean", "staleness_short", "staleness_long",
           "drop_fraction")

#: Variant keys of verl's fully async cadence (:class:`rollsim.configs.verl.FullyAsyncCadence`, verl's names).
CADENCE_KEYS = ("trigger_parameter_sync_step", "require_batches", "ppo_mini_batch_size", "staleness_threshold",
                "partial_rollout", "concurrent_samples_per_replica")

_KNOWN = {"pipeline", "max_staleness", "admission_eta", "rollout_gpus", "train_gpus", "prompts", "group_size",
          "max_response_tokens", "recompute_logprob", "name", *CADENCE_KEYS}

#: The names of verl's fully async pipeline for a variant's ``pipeline``.
VERL_FULLY_ASYNC_NAMES = ("verl-fully-async", "verl-fully-async-policy")


def _is_verl_name(p: Any) -> bool:
    return isinstance(p, str) and p.strip().lower().replace("_", "-") in VERL_FULLY_ASYNC_NAMES


def _is_import(p: Any) -> bool:
    from rollsim.configs import ImportedConfig

    return isinstance(p, ImportedConfig)


def _variant_pipeline(p: Any) -> Any:
    """A variant's ``pipeline`` value as a pipeline: verl's fully async (by name, or an imported verl
    fully_async config) is a :class:`FullyAsync`; otherwise :func:`pipeline_from_name`."""
    if _is_import(p):
        if p.fully_async is None:
            raise invalid("pipeline", f"an imported config as a variant's pipeline must be verl's fully_async recipe "
                          f"(its cadence), got a {p.framework} config whose pipeline is {type(p.scenario.pipeline).__name__}")
        return p.fully_async.pipeline()
    if _is_verl_name(p):
        return FullyAsync()  # its bound and cadence: _cadence (this says only that it is fully asynchronous)
    try:
        return pipeline_from_name(p)
    except ScenarioError as e:  # a variant may also be verl's fully async recipe: the choices say so
        hint = pipeline_hint(p, ("sync", "one-step", "k-step:K", "fully-async", "verl-fully-async"))
        raise invalid("pipeline", f"must be 'sync', 'one-step', 'k-step:K', 'fully-async' or 'verl-fully-async' (verl's "
                      f"trainer cadence), or an imported verl fully_async config, got {p!r}{hint}") from e


def grid(**axes: Any) -> list[dict[str, Any]]:
    """Every combination of the given axes as variants: ``grid(pipeline=["fully-async"],
    max_staleness=[1, 2, 4], rollout_gpus=[8, 16])`` is 6 variants. A scalar is one value; an axis
    that does not apply to a combination's pipeline (``max_staleness`` for ``sync``) is left out of it."""
    keys = list(axes)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in axes.values()]
    out = []
    for combo in itertools.product(*values):
        v = dict(zip(keys, combo))
        p = v.get("pipeline")
        if p is not None and not isinstance(_variant_pipeline(p), FullyAsync):
            v.pop("max_staleness", None)
            v.pop("admission_eta", None)
        if p is not None and not (_is_verl_name(p) or _is_import(p)):
            for key in CADENCE_KEYS:  # verl's cadence applies to its fully async pipeline only
                v.pop(key, None)
        if v not in out:
            out.append(v)
    return out


def _label(v: dict[str, Any]) -> str:
    if "name" in v:
        return str(v["name"])

    def one(k: str) -> str:
        if k != "pipeline":
            return f"{k}={v[k]}"
        return f"verl-fully-async ({v[k].source})" if _is_import(v[k]) else str(v[k])
    return ", ".join(one(k) for k in v) or "baseline"


@dataclasses.dataclass(frozen=True)
class TrainScale:
    """How :func:`train_scale` moves a calibrated training cost to another training GPU count.

    Attributes
    ----------
    factor : float
        New training seconds per step over the calibrated ones (multiplies ``train_step_s``,
        ``train_s_per_token`` and ``logprob_s_per_token``).
    low, high : float
        The factor's interval: the accelerator's MFU moved by the spread of the training model's
        published checks (:func:`rollsim.hardware.training.training_validation_rows`), and the
        calibrated time the model does not explain taken as fixed or as compute.
    rule : str
        ``"hardware"`` (:mod:`rollsim.hardware.training`), ``"1/gpus"`` (no model or accelerator
        known) or ``"same"`` (the GPU count does not change).
    compute_share : float
        Fraction of the calibrated training time the model attributes to compute (FLOPs over the
        achieved MFU, which scales as ``1 / GPUs``); NaN for ``"1/gpus"``.
    fixed_s : float
        Calibrated seconds per step the model does not explain (kept as they are on any GPU count:
        launches, host work, data movement the model lacks), seconds.
    """

    factor: float
    low: float
    high: float
    rule: str
    compute_share: float = math.nan
    fixed_s: float = 0.0


def _mfu_spread() -> float:
    """The RMS log error of the training model's published checks (every row in seconds): how far
    the global MFU can be from a given run's."""
    global _SPREAD
    if _SPREAD is None:
        from rollsim.hardware import training

        errs = [math.log1p(r["error"]) for r in training.training_validation_rows()
                if r.get("unit") == "s" and math.isfinite(r.get("error", math.nan)) and r["error"] > -1]
        _SPREAD = float(math.sqrt(sum(e * e for e in errs) / len(errs))) if errs else 0.25
    return _SPREAD


_SPREAD: float | None = None


def _mean_answer(sc: Scenario) -> float:
    """Mean answer of the scenario's lengths, tokens."""
    from rollsim.calibration import _trunc_mean

    L = sc.lengths
    if isinstance(L, LogNormal):
        return float(_trunc_mean(np.array([L.mu]), L.sigma, L.max_tokens)[0])
    return float(np.mean(L.values))


def train_scale(calibrated: Calibrated, train_gpus: int, *, scenario: Scenario | None = None,
                base_gpus: int | None = None, recompute_logprob: bool | None = None) -> TrainScale:
    """The factor that moves a calibrated run's training cost from its training GPUs to ``train_gpus``.

    With the model and accelerator known (``calibrated.hardware``), the training step of the
    calibrated batch (its sequences and mean tokens, answers + prompt) is predicted by
    :func:`rollsim.hardware.training.train_step_s` on both GPU counts: compute ``C`` (FLOPs over the
    achieved MFU) and the rest ``N`` (optimizer, exposed collectives). The calibrated time ``U``
    anchors the level: when ``C + N`` exceeds it, both parts are scaled down by ``U / (C + N)``
    (the run is faster than the global MFU); when it falls short, the difference ``R = U - C - N``
    is a fixed cost the model lacks and is kept on the new GPU count. The factor is
    ``(a (C' + N') + R) / U`` with ``a = min(1, U / (C + N))``. Without a model or accelerator:
    ``base / train_gpus``.

    Parameters
    ----------
    calibrated : Calibrated
        From :func:`rollsim.calibrate`.
    train_gpus : int
        The new training GPU count, in [1, 2**20].
    scenario : Scenario, optional
        The calibrated scenario (or a bootstrap draw of it) whose batch and costs are moved; default
        ``calibrated.scenario``.
    base_gpus : int, optional
        The calibrated run's training GPUs; default: its layout's.
    recompute_logprob : bool, optional
        The training cost includes the log-prob recompute pass (default: when the calibration
        fitted one).

    Returns
    -------
    TrainScale

    Raises
    ------
    ScenarioError
        ``train_gpus: ...`` out of range; ``base_gpus: ...`` when the base has no layout and none is
        given; the training model's own errors (``model_parallel: must divide train_gpus ...``).
    """
    from rollsim import _check

    t = _check.integer("train_gpus", train_gpus, 1, 2**20)
    if base_gpus is None:
        if calibrated.layout is None:
            raise invalid("base_gpus", "needs a base imported from a config (its GPU layout) or base_gpus")
        base_gpus = calibrated.layout.train_gpus
    b = _check.integer("base_gpus", base_gpus, 1, 2**20)
    if t == b:
        return TrainScale(1.0, 1.0, 1.0, "same")
    sc = calibrated.scenario if scenario is None else scenario
    hw = calibrated.hardware or {}
    if hw.get("model") is None or hw.get("gpu") is None:
        return TrainScale(b / t, b / t, b / t, "1/gpus")
    from rollsim.hardware import training

    answer = _mean_answer(sc)
    measured = sc.train_step_s + (sc.train_s_per_token + sc.logprob_s_per_token) * answer * sc.batch_size
    if not measured > 0:
        return TrainScale(1.0, 1.0, 1.0, "hardware", 0.0, 0.0)
    v = calibrated.values
    logprob = (v.get("logprob_step_s", 0.0) + v.get("logprob_s_per_token", 0.0) > 0 if recompute_logprob is None
               else bool(recompute_logprob))
    kw = dict(hw.get("options") or {})
    kw.setdefault("reference", False)
    tokens = sc.batch_size * (answer + sc.prompt_tokens)

    def parts(g: int) -> tuple[float, float]:
        ph = training.train_step_s(hw["model"], hw["gpu"], train_gpus=g, backend=hw["backend"], tokens=max(1.0, tokens),
                                   sequences=sc.batch_size, recompute_logprob=logprob, **kw)
        compute = ph["actor"] + ph["logprob"] + ph["reference"] + ph["critic"]
        return compute, ph["optimizer"] + ph["collectives"]

    (cb, n0), (ct, n1) = parts(b), parts(t)
    spread = math.exp(_mfu_spread())
    out = []
    for k in (1.0, spread, 1.0 / spread):  # the compute at the global MFU, and at that MFU / or x the spread
        c0, c1 = cb * k, ct * k
        a = min(1.0, measured / (c0 + n0))
        rest = max(0.0, measured - (c0 + n0))
        fixed = (a * (c1 + n1) + rest) / measured
        like_compute = (a * (c1 + n1) + rest * c1 / c0) / measured if c0 > 0 else fixed
        out.append((fixed, like_compute, a * c0 / measured, rest))
    factors = [f for o in out for f in o[:2]]
    return TrainScale(out[0][0], min(factors), max(factors), "hardware", out[0][2], out[0][3])


def _variant(cal: Calibrated, sc: Scenario, v: dict[str, Any], scale: str = "point") -> Scenario:
    """The calibrated scenario ``sc`` (one draw) changed as ``v`` says (the training GPU change at
    the point, ``"low"`` or ``"high"`` end of its :func:`train_scale` interval)."""
    unknown = [k for k in v if k not in _KNOWN and k.split(".")[0] not in {f for f in sc.__dataclass_fields__}]
    if unknown:
        raise invalid(unknown[0], f"unknown variant key (allowed: {', '.join(sorted(_KNOWN))} or a scenario field)")
    out = sc
    cadence = _cadence(cal, sc, v)
    pipeline = (cadence.pipeline() if cadence is not None else
                _variant_pipeline(v["pipeline"]) if "pipeline" in v else sc.pipeline)
    if cadence is None and "pipeline" in v and isinstance(pipeline, OffPolicy) and isinstance(sc.pipeline, OffPolicy):
        # the config's rollout options (slime --over-sampling-batch-size / --partial-rollout, verl
        # over_sample_rate) are no choice of pipeline: a batch pipeline named by a variant keeps them
        pipeline = dataclasses.replace(pipeline, over_sampling=sc.pipeline.over_sampling,
                                       keep_partial=sc.pipeline.keep_partial)
    if "max_staleness" in v or "admission_eta" in v:
        if not isinstance(pipeline, FullyAsync):
            key = "max_staleness" if "max_staleness" in v else "admission_eta"
            raise invalid(key, f"applies to the fully async pipeline only, not {type(pipeline).__name__}")
        caps: dict[str, Any] = {k: v[k] for k in ("max_staleness", "admission_eta") if k in v}
        pipeline = dataclasses.replace(pipeline, **caps)
    changes: dict[str, Any] = {"pipeline": pipeline}
    # GPU split
    lay = cal.layout
    rollout_gpus = lay.rollout_gpus if lay is not None else 0
    serial_now = isinstance(pipeline, OffPolicy) and pipeline.k == 0
    if "rollout_gpus" in v or "train_gpus" in v or (lay is not None and lay.colocated and not serial_now):
        if lay is None:
            key = "rollout_gpus" if "rollout_gpus" in v else "train_gpus"
            raise invalid(key, "needs a base imported from a config (rollsim.configs.load): its GPU layout")
        total = lay.rollout_gpus if lay.colocated else lay.rollout_gpus + lay.train_gpus
        r = v.get("rollout_gpus", total // 2 if lay.colocated else lay.rollout_gpus)
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise invalid("rollout_gpus", f"must be a positive integer, got {r!r}")
        if lay.colocated and serial_now and "train_gpus" not in v:
            t = r  # still colocated: both sides use the same GPUs
        else:
            if lay.colocated and "train_gpus" not in v and r > total - 1:
                # the trainer gets the GPUs the rollout does not take: the bound is the rollout's (the key given)
                raise invalid("rollout_gpus", f"must be in [1, {total - 1}] (the config's {total} GPUs, at least 1 "
                              f"left for training), got {r}")
            t = v.get("train_gpus", (total - r) if lay.colocated else lay.train_gpus)
        if isinstance(t, bool) or not isinstance(t, int) or t < 1:
            raise invalid("train_gpus", f"must be a positive integer (GPUs left for training), got {t!r}")
        rollout_gpus = r
        changes["rollout_slots"] = max(1, min(2**24, round(sc.rollout_slots * r / lay.rollout_gpus)))
        try:
            ts = train_scale(cal, t, scenario=sc, recompute_logprob=_logprob(cal, v))
        except ScenarioError as e:  # the training layout does not fit the variant's GPUs: say which key moved them
            key = "train_gpus" if "train_gpus" in v else "rollout_gpus"
            # the training model's train_gpus is the variant's training GPUs, not an argument of whatif's
            why = re.sub(r"(?<![\w-])train_gpus \((\d+)\)", r"the \1 training GPUs", str(e))
            raise invalid(key, f"{v.get(key, r if key == 'rollout_gpus' else t)} leaves {count(t, 'training GPU')}, "
                               f"which the run's training layout cannot use: {why}") from None
        f = {"point": ts.factor, "low": ts.low, "high": ts.high}[scale]
        changes["train_step_s"] = sc.train_step_s * f
        changes["train_s_per_token"] = min(1e3, sc.train_s_per_token * f)
        changes["logprob_s_per_token"] = min(1e3 - changes["train_s_per_token"], sc.logprob_s_per_token * f)
    if "group_size" in v or "prompts" in v:
        g = v.get("group_size", sc.group_size)
        prompts = v.get("prompts", sc.batch_size // sc.group_size)
        for key, val in (("group_size", g), ("prompts", prompts)):
            if isinstance(val, bool) or not isinstance(val, int) or val < 1:
                raise invalid(key, f"must be a positive integer, got {val!r}")
        changes["group_size"] = g
        changes["batch_size"] = g * prompts
    if "max_response_tokens" in v:
        mt = v["max_response_tokens"]
        if not isinstance(sc.lengths, LogNormal):
            raise invalid("max_response_tokens", "needs LogNormal lengths")
        changes["lengths"] = LogNormal(mu=sc.lengths.mu, sigma=sc.lengths.sigma, max_tokens=mt,
                                       group_correlation=sc.lengths.group_correlation)
    if cadence is not None:
        # verl's trainer: one step is one local update of require_batches x ppo_mini_batch_size prompts, the weights
        # synced after every trigger_parameter_sync_step of them; the calibrated fixed seconds per step (training,
        # and weight_sync_s, which the engine adds after every step: the calibrated rest of a step outside its
        # phases) are shared out per prompt (the same mini-batch optimizer steps whatever the cadence), the
        # per-token costs stay
        g = changes.get("group_size", sc.group_size)
        u = cadence.prompts_per_update
        if u * g > 2**24:
            raise invalid("require_batches", f"require_batches x ppo_mini_batch_size x group size must be at most "
                          f"16777216 samples per local update, got {cadence.require_batches} x "
                          f"{cadence.ppo_mini_batch_size} x {g}")
        changes["batch_size"] = u * g
        changes["sync_every"] = cadence.trigger_parameter_sync_step
        share = u / (sc.batch_size / sc.group_size)
        changes["train_step_s"] = changes.get("train_step_s", sc.train_step_s) * share
        changes["weight_sync_s"] = sc.weight_sync_s * share
        if lay is not None:  # verl's rollouter: at most concurrent_samples_per_replica prompts per server at once
            servers = max(1, rollout_gpus // max(1, lay.rollout_tp))
            changes["rollout_slots"] = cadence.rollout_slots(servers, lay.slots_per_engine)
    rest = {k: val for k, val in v.items() if k not in _KNOWN}
    out = out.replace(**changes)
    if rest:
        out = out.replace(**rest)
    return out


def _cadence(cal: Calibrated, sc: Scenario, v: dict[str, Any]) -> Any:
    """The verl fully async cadence a variant trains with (:class:`rollsim.configs.verl.FullyAsyncCadence`),
    or None: from an imported verl fully_async config given as ``pipeline``; from verl's docs' rule for a
    ``"verl-fully-async"`` pipeline (the row's prompts as ``trigger_parameter_sync_step`` local updates,
    4 by default); from the calibrated base when it was imported from a verl fully_async config and the
    variant sets a cadence key; the variant's cadence keys (:data:`CADENCE_KEYS`) on top. ScenarioError
    naming a cadence key given for another pipeline, or one out of range."""
    from rollsim import _check
    from rollsim.configs.verl import FULLY_ASYNC_PROMPTS_PER_SERVER, FullyAsyncCadence

    keys = [k for k in CADENCE_KEYS if k in v]
    p = v.get("pipeline")
    g = v.get("group_size", sc.group_size)
    if isinstance(g, bool) or not isinstance(g, int) or g < 1:
        raise invalid("group_size", f"must be a positive integer, got {g!r}")
    got: dict[str, Any] = {}
    for k in keys:
        if k == "staleness_threshold":
            got[k] = _check.bounded(k, v[k], 0.0, 1e6)
        elif k == "partial_rollout":
            got[k] = _check.flag(k, v[k])
        else:
            got[k] = _check.integer(k, v[k], 1, 2**24)
    base_cadence = getattr(cal.base, "fully_async", None)
    if "prompts" in v and not (p is not None and _is_verl_name(p)) and (keys or (p is not None and _is_import(p))):
        raise invalid("prompts", "a verl fully async variant trains require_batches x ppo_mini_batch_size prompts per "
                      "local update and trigger_parameter_sync_step of them per sync: set those instead")
    if p is not None and _is_import(p):
        _variant_pipeline(p)  # refuses an import of another recipe
        c = p.fully_async
    elif p is not None and _is_verl_name(p):
        prompts = v.get("prompts", sc.batch_size // sc.group_size * cal.steps_per_row)
        if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 1:
            raise invalid("prompts", f"must be a positive integer, got {prompts!r}")
        req = got.get("require_batches", 1)
        if "ppo_mini_batch_size" in got and "trigger_parameter_sync_step" not in got:
            if prompts % (req * got["ppo_mini_batch_size"]):
                raise invalid("ppo_mini_batch_size", f"require_batches x ppo_mini_batch_size must divide the {prompts} "
                              f"prompts per step (verl's docs: trigger_parameter_sync_step = train_batch_size / "
                              f"(require_batches x ppo_mini_batch_size)), got {req} x {got['ppo_mini_batch_size']}; "
                              "or give trigger_parameter_sync_step")
            trig = prompts // (req * got["ppo_mini_batch_size"])
        else:
            trig = got.get("trigger_parameter_sync_step", 4)
        if "ppo_mini_batch_size" not in got and prompts % (trig * req):
            raise invalid("trigger_parameter_sync_step" if "require_batches" not in got else "require_batches",
                          f"trigger_parameter_sync_step x require_batches must divide the {prompts} prompts per step "
                          f"into local updates of whole mini-batches, got {trig} x {req}")
        c = FullyAsyncCadence.matching(prompts, g, trigger_parameter_sync_step=trig)
        c = c.replace(ppo_mini_batch_size=got.get("ppo_mini_batch_size", c.ppo_mini_batch_size // req),
                      require_batches=req, concurrent_samples_per_replica=got.get(
                          "concurrent_samples_per_replica", FULLY_ASYNC_PROMPTS_PER_SERVER))
    elif p is None and base_cadence is not None and keys:
        c = base_cadence
    elif keys:
        raise invalid(keys[0], "applies to verl's fully async pipeline only: pipeline 'verl-fully-async', an imported "
                      "verl fully_async config as pipeline, or a baseline imported from one (got "
                      + (f"pipeline {p!r})" if p is not None else f"a {type(sc.pipeline).__name__} baseline)"))
    else:
        return None
    return c.replace(n=g, **got)


def _logprob(cal: Calibrated, v: dict[str, Any]) -> bool:
    """The variant's training cost includes a calibrated log-prob recompute pass."""
    fitted = cal.values.get("logprob_step_s", 0.0) + cal.values.get("logprob_s_per_token", 0.0) > 0
    return fitted and v.get("recompute_logprob", True) is not False


def _train_gpus(cal: Calibrated, sc: Scenario, v: dict[str, Any]) -> int | None:
    """The training GPUs of a variant (None without a layout)."""
    lay = cal.layout
    if lay is None:
        return None
    serial_now = isinstance(sc.pipeline, OffPolicy) and sc.pipeline.k == 0
    if not ("rollout_gpus" in v or "train_gpus" in v or (lay.colocated and not serial_now)):
        return lay.train_gpus
    total = lay.rollout_gpus if lay.colocated else lay.rollout_gpus + lay.train_gpus
    r = v.get("rollout_gpus", total // 2 if lay.colocated else lay.rollout_gpus)
    if lay.colocated and serial_now and "train_gpus" not in v:
        return int(r)
    return int(v.get("train_gpus", (total - r) if lay.colocated else lay.train_gpus))


def _rollout_gpus(cal: Calibrated, sc: Scenario, v: dict[str, Any]) -> int | None:
    """The rollout GPUs of a variant (None without a layout): the config's, ``rollout_gpus`` given, or
    half a colocated run's GPUs when an asynchronous variant splits them (as :func:`_variant` does)."""
    lay = cal.layout
    if lay is None:
        return None
    serial_now = isinstance(sc.pipeline, OffPolicy) and sc.pipeline.k == 0
    if not ("rollout_gpus" in v or "train_gpus" in v or (lay.colocated and not serial_now)):
        return lay.rollout_gpus
    return int(v.get("rollout_gpus", lay.rollout_gpus // 2 if lay.colocated else lay.rollout_gpus))


def _measure(sc: Scenario, steps: int, seed: int, per_row: int = 1) -> dict[str, float]:
    """Simulated means of the scenario's steps after two warm-up steps; with ``per_row`` = k > 1,
    over whole rows of k steps (each holding one sync), ``step_s`` and ``trainer_wait_s`` per row."""
    from rollsim.simulation import simulate

    if per_row > 1:
        return _measure_rows(sc, steps, seed, per_row)
    est = _step_estimate(sc)
    horizon = min(1e12, max(est * (steps + 2), 1.0))
    for _ in range(4):
        with warnings.catch_warnings(record=True) as caught:  # only the last attempt's warnings count
            warnings.simplefilter("always")
            res = simulate(sc.replace(horizon_s=horizon, seed=seed), record="summary")
        st = res.steps.filter(res.steps["completed"])
        if st.height >= 4:
            break
        horizon = min(1e12, horizon * 4)
    for w in caught:  # the outruns warning is said once for all the rows by whatif
        if not issubclass(w.category, GenerationOutrunsTrainingWarning):
            warnings.warn(w.message, stacklevel=2)
    s = res.summary
    ends = st["end_s"].to_numpy()
    step_s = float(np.mean(np.diff(ends[1:]))) if len(ends) >= 3 else math.nan
    tokens = st["tokens"].to_numpy()
    return dict(step_s=step_s, tokens_per_s=float(np.mean(tokens[2:]) / step_s) if len(ends) >= 3 else math.nan,
                trainer_wait_s=float(np.mean(st["wait_s"].to_numpy()[2:])) if len(ends) >= 3 else math.nan,
                staleness_mean=float(s["staleness_mean"]), staleness_short=float(s["staleness_mean_short"]),
                staleness_long=float(s["staleness_mean_long"]), drop_fraction=float(s["drop_fraction"]),
                outruns=bool(s["generation_outruns_training"]), growth=float(s["ready_queue_growth_per_step"]),
                ratio=float(s["throughput_ratio"]))


def _measure_rows(sc: Scenario, steps: int, seed: int, k: int) -> dict[str, float]:
    """:func:`_measure` over whole rows of ``k`` steps: at least 2 rows (and ``steps``), after two
    warm-up steps."""
    from rollsim.simulation import simulate

    rows = max(2, math.ceil(steps / k))
    want = 2 + rows * k
    est = _step_estimate(sc)
    horizon = min(1e12, max(est * (want + 2), 1.0))
    for _ in range(4):
        with warnings.catch_warnings(record=True) as caught:  # only the last attempt's warnings count
            warnings.simplefilter("always")
            res = simulate(sc.replace(horizon_s=horizon, seed=seed), record="summary")
        st = res.steps.filter(res.steps["completed"])
        if st.height >= 2 + k:
            break
        horizon = min(1e12, horizon * 4)
    for w in caught:  # the outruns warning is said once for all the rows by whatif
        if not issubclass(w.category, GenerationOutrunsTrainingWarning):
            warnings.warn(w.message, stacklevel=2)
    s = res.summary
    ends = st["end_s"].to_numpy()
    got = (len(ends) - 2) // k  # whole rows after the warm-up: steps 2 .. 1 + got * k
    nan = math.nan
    if got >= 1:
        a, b = 1, 1 + got * k
        row_s = float((ends[b] - ends[a]) / got)
        tokens = float(np.sum(st["tokens"].to_numpy()[a + 1:b + 1]))
        wait = float(np.sum(st["wait_s"].to_numpy()[a + 1:b + 1]) / got)
    else:
        row_s = tokens = wait = nan
    return dict(step_s=row_s, tokens_per_s=tokens / (row_s * got) if got >= 1 else nan, trainer_wait_s=wait,
                staleness_mean=float(s["staleness_mean"]), staleness_short=float(s["staleness_mean_short"]),
                staleness_long=float(s["staleness_mean_long"]), drop_fraction=float(s["drop_fraction"]),
                outruns=bool(s["generation_outruns_training"]), growth=float(s["ready_queue_growth_per_step"]),
                ratio=float(s["throughput_ratio"]))


def _step_estimate(sc: Scenario) -> float:
    """A rough serial step time, seconds (sizes the horizon only)."""
    L = sc.lengths
    cap = L.max_tokens if isinstance(L, LogNormal) else float(np.max(L.values))
    mean = min(cap, math.exp(L.mu + L.sigma**2 / 2)) if isinstance(L, LogNormal) else float(np.mean(L.values))
    gen = max(cap, mean * sc.batch_size / sc.rollout_slots) / sc.decode_tokens_per_s + sc.rollout_pause_s
    train = sc.train_step_s + (sc.train_s_per_token + sc.logprob_s_per_token) * mean * sc.batch_size + sc.weight_sync_s
    return gen + train


def whatif(calibrated: Calibrated, variants: list[dict[str, Any]] | dict[str, dict[str, Any]] | None = None, *,
           draws: int = 20, steps: int = 12, seed: int = 0) -> pl.DataFrame:
    """Predicts alternatives to a calibrated run.

    Parameters
    ----------
    calibrated : Calibrated
        From :func:`rollsim.calibrate`.
    variants : list of dict, or dict of name -> dict, optional
        Changes to the calibrated scenario (module docstring; :func:`grid` builds a product).
    draws : int
        Bootstrap draws of the calibration simulated per row for the intervals, in [0, 1000].
    steps : int
        Training steps simulated per run (the first two are left out as warm-up), in [4, 10000];
        with ``calibrated.steps_per_row`` = k > 1, rounded up to whole rows of k steps, at least 2.
    seed : int
        Seed of the runs.

    Returns
    -------
    polars.DataFrame
        One row per variant after a ``baseline`` row: ``variant``, ``pipeline``, ``rollout_slots``,
        ``sync_every`` (the variant's weight-sync cadence, training steps), ``rollout_gpus`` and
        ``train_gpus`` (the same GPUs on a colocated row; None without the config's layout), ``train_scale`` (with ``_low`` / ``_high``) and ``train_scaling``: the
        factor on the calibrated training cost and its rule (:class:`TrainScale`), then each of
        :data:`METRICS` (seconds, tokens/s, versions, fraction) with ``_low`` / ``_high`` (over the
        bootstrap draws and the training cost's interval);
        ``measured_step_s`` and ``error`` (predicted / measured - 1) on the baseline row. With
        ``calibrated.steps_per_row`` = k > 1, ``step_s``, ``trainer_wait_s`` and
        ``measured_step_s`` are seconds per metrics row (k training steps), and two more columns
        name the unit: ``steps_per_row`` (k) and ``samples_per_row`` (k x the row's batch); they are
        there too when a variant trains with verl's fully async cadence, whose row is one parameter
        sync (``steps_per_row`` = its ``trigger_parameter_sync_step``). Last,
        ``cannot_train``: null, or why the row cannot train and was not simulated (its metrics
        NaN): a ``max_staleness`` below the scenario's ``sync_every - 1`` drops every sample after
        ``max_staleness + 1`` steps (:func:`rollsim.simulation.staleness_cap_livelock`).

    Raises
    ------
    ScenarioError
        A variant key or value that is not allowed (naming it).

    Warns
    -----
    GenerationOutrunsTrainingWarning
        Once, after all the rows, naming the rows where generation outruns training in a run (the
        point or a bootstrap draw), with the largest ready-queue growth and throughput ratio.
    StalenessCapLivelockWarning
        Once, after all the rows, naming the rows that cannot train (``cannot_train``), with the
        reason and the smallest ``max_staleness`` that trains.
    """
    if not isinstance(calibrated, Calibrated):
        raise invalid("calibrated", f"must be the result of rollsim.calibrate, got {type(calibrated).__name__}")
    if isinstance(draws, bool) or not isinstance(draws, int) or not 0 <= draws <= 1000:
        raise invalid("draws", f"must be an integer in [0, 1000], got {draws!r}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 4 <= steps <= 10_000:
        raise invalid("steps", f"must be an integer in [4, 10000], got {steps!r}")
    if variants is None:
        items: list[dict[str, Any]] = []
    elif isinstance(variants, dict):
        items = [{"name": k, **val} for k, val in variants.items()]
    else:
        items = [dict(v) for v in variants]
    for v in items:
        if not isinstance(v, dict):
            raise invalid("variants", f"must be dicts of changes, got {type(v).__name__}")
    pool = list(calibrated.draws)
    pick = [pool[int(i)] for i in np.linspace(0, len(pool) - 1, min(draws, len(pool)))] if pool and draws else []
    rows = []
    outrun: list[tuple[str, float, float]] = []  # (row, largest growth, largest ratio) of the rows that run away

    def base(values: dict[str, float], v: dict[str, Any]) -> Scenario:
        flag = v.get("recompute_logprob", True)
        if not isinstance(flag, bool):
            raise invalid("recompute_logprob", f"must be True or False, got {flag!r}")
        if not flag:
            values = {**values, "logprob_step_s": 0.0, "logprob_s_per_token": 0.0}
        return calibrated.scenario_for(values)

    from rollsim.simulation import staleness_cap_livelock

    k = calibrated.steps_per_row
    livelocked: list[str] = []  # the rows that cannot train (not simulated)
    for v in [{"name": "baseline"}, *items]:
        label = _label(v) if v.get("name") != "baseline" else "baseline"
        others: list[dict[str, float]] = []
        with warnings.catch_warnings(record=True) as caught:   # given again below, once, naming the variant
            warnings.simplefilter("always")
            b0 = base(calibrated.values, v)
            sc = _variant(calibrated, b0, v)
            cad = _cadence(calibrated, b0, v)
            kv = k if cad is None else cad.trigger_parameter_sync_step  # verl's row: one parameter sync
            stuck = staleness_cap_livelock(sc, cap="max_staleness")
            if stuck is None:  # else its cap drops every sample after a few steps: nothing to measure, nothing run
                point = _measure(sc, steps, seed, kv)
                others = [_measure(_variant(calibrated, base(d, v), v), steps, seed + 1 + i, kv)
                          for i, d in enumerate(pick)]
                gpus = _train_gpus(calibrated, sc, v)
                ts = (train_scale(calibrated, gpus, scenario=b0, recompute_logprob=_logprob(calibrated, v))
                      if gpus is not None else TrainScale(1.0, 1.0, 1.0, "same"))
                if ts.low != ts.high:
                    # the training model's own uncertainty: the ends of the training cost's interval
                    others += [_measure(_variant(calibrated, b0, v, end), steps, seed, kv) for end in ("low", "high")]
        _warn_once_per_category(label, caught, 1 + len(others))
        if stuck is not None:
            livelocked.append(label)
            rows.append(_livelocked_row(calibrated, b0, sc, v, label, stuck, kv))
            continue
        runaway = [o for o in [point, *others] if o["outruns"]]
        if runaway:
            outrun.append((label, max(o["growth"] for o in runaway), max(o["ratio"] for o in runaway)))
        row: dict[str, Any] = dict(variant=label,
                                   pipeline=type(sc.pipeline).__name__, rollout_slots=sc.rollout_slots,
                                   sync_every=sc.sync_every, rollout_gpus=_rollout_gpus(calibrated, sc, v),
                                   train_gpus=gpus, train_scale=ts.factor, train_scale_low=ts.low,
                                   train_scale_high=ts.high, train_scaling=ts.rule)
        row.update(steps_per_row=kv, samples_per_row=kv * sc.batch_size)
        for name in METRICS:
            vals = np.array([o[name] for o in others] + [point[name]], dtype=float)
            vals = vals[np.isfinite(vals)]
            row[name] = point[name]
            row[f"{name}_low"] = float(min(np.quantile(vals, 0.025), point[name])) if vals.size else math.nan
            row[f"{name}_high"] = float(max(np.quantile(vals, 0.975), point[name])) if vals.size else math.nan
        if v.get("name") == "baseline":
            measured = calibrated.measured_step_s()
            row["measured_step_s"] = measured
            row["error"] = point["step_s"] / measured - 1.0
        else:
            row["measured_step_s"] = math.nan
            row["error"] = math.nan
        row["cannot_train"] = None
        rows.append(row)
    if outrun:
        warnings.warn(GenerationOutrunsTrainingWarning(_outrun_message(outrun, len(rows))), stacklevel=2)
    if livelocked:
        first = next(r for r in rows if r["cannot_train"] is not None)
        why = staleness_cap_livelock(first["_scenario"], cap="max_staleness", general=True)
        warnings.warn(StalenessCapLivelockWarning(
            f"{len(livelocked)} of {len(rows)} rows cannot train and were not simulated ({'; '.join(livelocked)}: "
            f"their metrics are NaN, the column cannot_train says why): {why}"), stacklevel=2)
    one = all(r["steps_per_row"] == 1 for r in rows)  # every row one step: the columns say nothing
    for r in rows:
        r.pop("_scenario", None)
        if one:
            r.pop("steps_per_row")
            r.pop("samples_per_row")
    return pl.DataFrame(rows, schema_overrides={"cannot_train": pl.String})


def _livelocked_row(cal: Calibrated, b0: Scenario, sc: Scenario, v: dict[str, Any], label: str, why: str,
                    k: int) -> dict[str, Any]:
    """The row of a variant that cannot train (:func:`rollsim.simulation.staleness_cap_livelock`):
    its set-up as for any row (``b0``: the calibrated scenario, ``sc``: the variant), every metric NaN
    (not simulated), ``cannot_train`` the reason."""
    gpus = _train_gpus(cal, sc, v)
    ts = (train_scale(cal, gpus, scenario=b0, recompute_logprob=_logprob(cal, v)) if gpus is not None
          else TrainScale(1.0, 1.0, 1.0, "same"))
    row: dict[str, Any] = dict(variant=label, pipeline=type(sc.pipeline).__name__, rollout_slots=sc.rollout_slots,
                               sync_every=sc.sync_every, rollout_gpus=_rollout_gpus(cal, sc, v), train_gpus=gpus, train_scale=ts.factor, train_scale_low=ts.low,
                               train_scale_high=ts.high, train_scaling=ts.rule)
    row.update(steps_per_row=k, samples_per_row=k * sc.batch_size)
    for name in METRICS:
        row.update({name: math.nan, f"{name}_low": math.nan, f"{name}_high": math.nan})
    row.update(measured_step_s=math.nan, error=math.nan, cannot_train=why, _scenario=sc)
    return row


def _warn_once_per_category(label: str, caught: list[warnings.WarningMessage], runs: int) -> None:
    """Gives the warnings of one variant's runs (its point and bootstrap draws) again, the first of
    each class only, with the variant's label in front and how many of its runs gave one."""
    first: dict[type[Warning], tuple[warnings.WarningMessage, int]] = {}
    for w in caught:
        seen = first.get(w.category)
        first[w.category] = (w, 1) if seen is None else (seen[0], seen[1] + 1)
    for category, (w, n) in first.items():
        more = f" ({n} of the variant's {runs} simulated runs warned so)" if n > 1 else ""
        warnings.warn(category(f"{label}: {w.message}{more}"), stacklevel=3)


def _outrun_message(outrun: list[tuple[str, float, float]], rows: int) -> str:
    """The one warning of :func:`whatif` for its rows whose runs (the point or a draw) let
    generation outrun training."""
    names = "; ".join(name for name, _, _ in outrun)
    growth = max(g for _, g, _ in outrun)
    ratio = max(r for _, _, r in outrun)
    return (f"generation outruns training in {len(outrun)} of {rows} rows ({names}): the ready queue "
            f"grows by up to {growth:.0f} samples per step (rollout/training throughput ratio up to {ratio:.2f}); "
            f"staleness grows without bound, so these rows' staleness and drops depend on the steps simulated. Add a "
            f"staleness cap, fewer rollout GPUs, or more prompts per step.")


def _wrapped(variant: str) -> str:
    """A variant's name for a bar's label: one alternative per line (``"fully-async,\\nmax_staleness=2"``)."""
    return ",\n".join(variant.split(", "))


def plot_whatif(frame: pl.DataFrame, *, ax: Any = None, path: Any = None) -> Any:
    """Step time of each row of :func:`whatif` with its interval (bars), the baseline's measured step
    time as a line. Returns the matplotlib Figure (saved to ``path`` when given: .png, .svg, .pdf).

    A variant that drops samples (``drop_fraction`` of at least 0.5 %) has its drop rate written above
    its bar: its step time is reached by discarding that share of the finished answers.

    Each bar's label is its whole ``variant`` (``"fully-async, max_staleness=2, rollout_gpus=8"``),
    one alternative per line, and the figure is sized so that every label fits inside it."""
    from rollsim import plot

    labels = [_wrapped(v) for v in frame["variant"].to_list()]
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    widest = max((max(map(len, label.split("\n"))) for label in labels), default=8)
    # a bar per label as wide as its longest line (about 0.075 inch a character at 8 points), and room below
    # for the label's lines
    fig, ax = plot._figure(ax, (max(6.0, frame.height * max(0.9, 0.075 * widest + 0.2) + 1.5), 3.6 + 0.16 * lines))
    x = np.arange(frame.height)
    y = frame["step_s"].to_numpy()
    err = np.vstack([y - frame["step_s_low"].to_numpy(), frame["step_s_high"].to_numpy() - y])
    ax.bar(x, y, yerr=err, color=["#888888"] + ["#3b75af"] * (frame.height - 1), capsize=3)
    m = frame["measured_step_s"][0]
    if m is not None and math.isfinite(m):
        ax.axhline(m, color="#c44e52", linestyle="--", label=f"measured baseline {m:.1f} s")
        ax.legend(loc="upper right")
    # a variant that drops samples reaches its step time by discarding generated work (and, with a cap,
    # the long answers first): the bar says so, as the table's drop_fraction column does
    drops = frame["drop_fraction"].to_list() if "drop_fraction" in frame.columns else [None] * frame.height
    top = float(np.nanmax(frame["step_s_high"].to_numpy())) if frame.height else 0.0
    for i, d in enumerate(drops):
        if d is not None and math.isfinite(d) and d >= 0.005:
            ax.annotate(f"drops {d:.0%}", (x[i], frame["step_s_high"][i]), xytext=(0, 3), textcoords="offset points",
                        ha="center", va="bottom", fontsize=8, color="#c44e52")
    if any(d is not None and math.isfinite(d) and d >= 0.005 for d in drops) and math.isfinite(top):
        ax.set_ylim(top=max(ax.get_ylim()[1], top * 1.12))
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("time per metrics row, s\n(interval: calibration bootstrap)" if "steps_per_row" in frame.columns
                  else "step time, s\n(interval: calibration bootstrap)")
    ax.set_title("what if: predicted step time")
    return plot._finish(fig, path)
