""":func:`calibrate`: the metrics table read once, the base (an imported config, a deployment or a
scenario) turned into a scenario, the fits run in order, the bootstrap, the parameters' table and the
residuals per metrics row."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl

from rollsim.errors import MetricNearMissWarning, MetricsRowsSkippedWarning, invalid
from rollsim.lengths import LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy
from rollsim.scenario import Scenario

from ._fit import _apply, _expected_longest, fit, PARAMS, _shifted, _stream_rows, UNITS
from ._metrics import (_detect, _families, FRAMEWORK_METRICS, _gen_reading, _normalized, inside_step, read_metrics,
                       _screen, _slime_wait, merge_parts, _unprefixed, _unread)
from ._notes import _notes, _pause_notes, plausibility_notes, _profile_notes
from ._result import Calibrated
from ._simulate import (_Incomplete, _length_bias, _makespans, _pause_inference, pause_on_critical_path, _PauseFit,
                        _stream_inference, STREAM_MISFIT, stream_needs_simulation, _StreamFit, _wait_pause_profile,
                        _WaitPauseFit)


def calibrate(metrics: Any, base: Any, *, framework: str | None = None, bootstrap: int = 200,
              seed: int = 0, model: Any = None, gpu: Any = None, backend: str | None = None,
              train_options: dict[str, Any] | None = None, steps_per_row: int | None = None,
              prompts_per_step: int | None = None, group_size: int | None = None,
              max_response_tokens: float | None = None, prompt_tokens: float | None = None,
              pipeline: Any = None) -> Calibrated:
    """Fits a scenario on a baseline run's per-step metrics.

    Parameters
    ----------
    metrics : polars.DataFrame or path
        One row per training step (CSV, JSONL, JSON or parquet file, or a frame), with verl, AReaL,
        slime or OpenRLHF metric names (:data:`FRAMEWORK_METRICS`) or the generic ones
        (:data:`GENERIC`); a wandb export's ``train/`` section prefix is left off and its ``_step``
        read as the step when no other column gives it, each said in ``notes``. A row with a missing
        value (null or NaN) in a metric used is left out, with a
        :class:`rollsim.MetricsRowsSkippedWarning` and a note (``notes``) naming the metric and the
        steps; nothing is filled in.
    base : rollsim.configs.ImportedConfig, rollsim.hardware.Deployment or Scenario
        The run's config (its batch, group, slots, length limit and pipeline are kept), or the
        deployment it ran on: its scenario is built with :meth:`rollsim.hardware.Deployment.scenario`
        from ``prompts_per_step``, ``group_size``, ``max_response_tokens``, ``prompt_tokens`` and
        ``pipeline`` (what is not given is inferred from the metrics or assumed, and said in
        ``notes``), and its model, accelerator, backend and training options rescale the training
        cost in :func:`rollsim.whatif`, its GPUs give the layout of a GPU-split variant.
    framework : {"verl", "areal", "slime", "openrlhf", "generic"}, optional
        Whose metric names; detected from the columns when not given.
    bootstrap : int
        Bootstrap resamples over steps for the intervals, in [0, 100000] (0: none, intervals equal
        the fit).
    seed : int
        Seed of the bootstrap.
    model : str or ModelSpec, optional
        The trained model (:data:`rollsim.hardware.MODELS` name, Hugging Face id or spec); default:
        the base's deployment's, else the config's model path when rollsim knows it.
    gpu : str or Accelerator, optional
        The training accelerator (:data:`rollsim.hardware.ACCELERATORS`); default: the base's
        deployment's. With ``model``, :func:`rollsim.whatif` moves the training cost to another
        GPU count with :mod:`rollsim.hardware.training` instead of ``1 / GPUs``.
    backend : {"fsdp2", "megatron"}, optional
        The training backend (default: the deployment's, else the config's, else ``"fsdp2"``).
    train_options : dict, optional
        Further keyword arguments of :func:`rollsim.hardware.training.train_step_s`
        (``mini_batches``, ``reference``, ``model_parallel``, ...; default: the deployment's).
    steps_per_row : int, optional
        Training steps of ``batch_size`` samples one metrics row covers, in [1, 16777216]: its
        phases are sums over them, its lengths' max is over all of their answers, its sync happens
        once (module docstring). Default: the imported config's ``steps_per_logged_step`` (the verl
        fully async recipe's ``trigger_parameter_sync_step``), 1 for a Scenario or a Deployment.
    prompts_per_step : int, optional
        Deployment base only: prompts per training step, in [1, 16777216]; default: the median of
        the metrics' ``batch_samples`` over ``group_size`` (refused without that column).
    group_size : int, optional
        Deployment base only: answers per prompt, in [1, 16777216]; default 1 (assumed, noted).
    max_response_tokens : float, optional
        Deployment base only: the answer-length limit, tokens, in [1, 1e9]; default: the longest
        answer logged when some step cut answers at the limit (``response_clip_ratio`` > 0), else
        refused.
    prompt_tokens : float, optional
        Deployment base only: the prompt length, tokens, in [0, 1e9]; default 0 (assumed, noted).
    pipeline : str or pipeline, optional
        Deployment base only: ``"sync"``, ``"one-step"``, ``"k-step:K"``, ``"fully-async"`` or a
        pipeline object; default the deployment's (:class:`rollsim.Synchronous` when colocated, else
        :class:`rollsim.FullyAsync`; noted).

    Returns
    -------
    Calibrated
        Its parameters per rollsim step, its residuals per metrics row, its ``notes``.

    Raises
    ------
    ScenarioError
        ``metrics: missing <metric> ...`` for a table without a needed metric; ``metrics: <metric>
        must be ..., got <value> at step <step>`` for a value out of its range (a negative time, a
        length that is not positive, a longest answer shorter than the mean, a clip ratio outside
        [0, 1]); ``base: ...`` for a base that is none of the three; ``prompts_per_step: ...``,
        ``group_size: ...``, ``max_response_tokens: ...``, ``prompt_tokens: ...``, ``pipeline: ...``
        out of range, not inferable, or given with a base that is not a Deployment; ``model: ...``,
        ``gpu: ...``, ``backend: ...`` or ``train_options: ...`` for one rollsim does not know;
        ``steps_per_row: ...`` out of range.
    """
    import dataclasses

    from rollsim.configs import ImportedConfig
    from rollsim.hardware import Deployment

    if not isinstance(base, (ImportedConfig, Deployment, Scenario)):
        raise invalid("base", f"must be an ImportedConfig (rollsim.configs.load), a Deployment (rollsim.hardware) or a "
                      f"Scenario, got {type(base).__name__}")
    scenario_args = {"prompts_per_step": prompts_per_step, "group_size": group_size,
                     "max_response_tokens": max_response_tokens, "prompt_tokens": prompt_tokens, "pipeline": pipeline}
    if not isinstance(base, Deployment):
        given = [k for k, v in scenario_args.items() if v is not None]
        if given:
            raise invalid(given[0], f"applies to a Deployment base only (the {type(base).__name__} gives it)")
    table, renames, mapped = _unprefixed(read_metrics(metrics))
    if framework is None and isinstance(base, ImportedConfig):
        detected = _detect(table)
        if detected not in ("generic", base.framework):
            hint = _families(table.columns, detected)
            raise invalid("metrics", f"the table has {detected} metric names ({hint}) but the config is for "
                          f"{base.framework}: the metrics are most likely of another run; give the "
                          f"{base.framework} run's metrics, or framework={detected!r} (rollsim calibrate / whatif: "
                          f"--metric-names {detected}) to fit them on this config anyway")
    table, merged, columns = merge_parts(table, framework)
    table, fw, notes, resolved = _screen(table, framework, renames, columns)  # the columns resolved once, by merge_parts
    for note in notes:
        warnings.warn(note, MetricsRowsSkippedWarning, stacklevel=2)
    inside = inside_step(fw, table.columns, resolved)  # verl's validation and checkpoint timers, in its step
    used = sorted({c for cs in resolved.values() for c in cs} | set(inside))
    near, unread = _unread(table.columns, used, fw, renames)
    if inside:
        shown = [(renames or {}).get(c, c) for c in inside]
        notes = [*notes, f"metrics: {', '.join(shown)} subtracted from timing_s/step where logged (verl's trainer "
                 "times validation and checkpoint saving inside its step, verl/trainer/ppo/ray_trainer.py fit: no "
                 "part of the pipeline's step)"]
    for note in near:
        warnings.warn(note, MetricNearMissWarning, stacklevel=2)
    notes = [*mapped, *merged, *notes, *near, *unread]
    kw: dict[str, Any] = dict(bootstrap=bootstrap, seed=seed, model=model, gpu=gpu, backend=backend,
                              train_options=train_options, steps_per_row=steps_per_row)
    if isinstance(base, Deployment):
        kw["normed"] = _normalized(table, fw, resolved)
        sc, layout, assumed = _deployment_base(base, kw["normed"][0], **scenario_args)
        kw.update(model=base.model if model is None else model, gpu=base.gpu if gpu is None else gpu,
                  backend=base.train_backend if backend is None else backend,
                  train_options=dict(base.train_options) if train_options is None else train_options)
        cal = dataclasses.replace(_fit_base(table, fw, resolved, sc, **kw), base=base, layout=layout)
        notes = [*notes, *assumed]
    else:
        cal = _fit_base(table, fw, resolved, base, **kw)
    return dataclasses.replace(cal, notes=(*notes, *cal.notes)) if notes else cal


def _deployment_base(dep: Any, m: pl.DataFrame, *, prompts_per_step: Any, group_size: Any, max_response_tokens: Any,
                     prompt_tokens: Any, pipeline: Any) -> tuple[Scenario, Any, list[str]]:
    """The scenario and GPU layout a :class:`rollsim.hardware.Deployment` base is calibrated as, from
    :meth:`~rollsim.hardware.Deployment.scenario` with what the arguments or the normalised metrics
    ``m`` give, and a note for each value inferred or assumed. The deployment's hardware-model speeds
    (its decode table, KV capacity and training cost) are left out: :func:`calibrate` fits the
    speeds on the run; the deployment gives the slots, the layout and the training rescale."""
    from rollsim import _check
    from rollsim.configs import Layout
    from rollsim.pipelines import pipeline_from_name

    notes: list[str] = []
    g = 1 if group_size is None else _check.integer("group_size", group_size, 1, 2**24)
    if group_size is None:
        notes.append("group_size = 1 (assumed: neither a deployment nor per-step metrics give the answers per prompt; "
                     "pass group_size=)")
    if prompts_per_step is None:
        if "batch_samples" not in m.columns:
            raise invalid("prompts_per_step", "needed with a Deployment base when the metrics have no batch_samples "
                          "column (samples trained per step): pass prompts_per_step=")
        b = float(np.median(m["batch_samples"].to_numpy()))
        if b != round(b) or round(b) % g:
            raise invalid("prompts_per_step", f"cannot be inferred: the median batch_samples, {b:g} samples, is not a "
                          f"multiple of group_size {g}; pass prompts_per_step=")
        p = int(round(b)) // g
        if p > 2**24:
            raise invalid("prompts_per_step", f"must be in [1, 16777216], got {p} (inferred from batch_samples)")
        notes.append(f"prompts_per_step = {p} (inferred: the median batch_samples, {b:g} samples, over group_size {g})")
    else:
        p = _check.integer("prompts_per_step", prompts_per_step, 1, 2**24)
    if max_response_tokens is None:
        clip = m["response_clip_ratio"].to_numpy() if "response_clip_ratio" in m.columns else np.zeros(m.height)
        if not np.any(clip > 0):
            raise invalid("max_response_tokens", "needed with a Deployment base: no step of the metrics cut answers at "
                          "the limit (response_clip_ratio > 0), so the limit cannot be read from them; pass "
                          "max_response_tokens=")
        cap = float(m["response_max"].filter(pl.Series(clip > 0)).max())  # type: ignore[arg-type]
        notes.append(f"max_response_tokens = {cap:g} (inferred: the longest answer of the steps that cut answers at "
                     "the limit)")
    else:
        cap = _check.bounded("max_response_tokens", max_response_tokens, 1.0, 1e9, "tokens")
    pt = 0.0 if prompt_tokens is None else _check.bounded("prompt_tokens", prompt_tokens, 0.0, 1e9, "tokens")
    if prompt_tokens is None:
        notes.append("prompt_tokens = 0 (assumed; pass prompt_tokens=)")
    pipe = None if pipeline is None else pipeline_from_name(pipeline)
    mean = float(np.clip(np.mean(m["response_mean"].to_numpy()), 1.0, cap))
    lengths = LogNormal(mu=math.log(mean), sigma=0.5, max_tokens=cap)  # a placeholder: the fit replaces it
    dsc = dep.scenario(lengths=lengths, prompts_per_step=p, group_size=g, prompt_tokens=pt, pipeline=pipe,
                       per_rank=False)
    if pipe is None:
        notes.append(f"pipeline = {dsc.pipeline!r} (the deployment's default: "
                     f"{'colocated' if dep.colocated else 'rollout and training on separate GPUs'}; pass pipeline=)")
    slots_per = dsc.slots_per_instance or dsc.rollout_slots
    notes.append(f"base: Deployment({dep.model.name!r}, {dep.gpu.name!r}, {dep.rollout_gpus} rollout GPUs x TP"
                 f"{dep.rollout_tp}, {dep.train_gpus} training GPUs): rollout_slots = {dsc.rollout_slots} "
                 f"({dsc.rollout_slots // slots_per} instances x {slots_per}); its hardware-model decode and training "
                 "speeds are not used (the fit on the run's metrics replaces them); its model and accelerator rescale "
                 "the training cost of a GPU-split variant")
    sc = Scenario(batch_size=dsc.batch_size, group_size=g, rollout_slots=dsc.rollout_slots, pipeline=dsc.pipeline,
                  lengths=lengths, prompt_tokens=pt, horizon_s=7200.0)
    layout = Layout(rollout_gpus=dep.rollout_gpus, train_gpus=dep.train_gpus, colocated=dep.colocated,
                    rollout_tp=dep.rollout_tp, slots_per_engine=slots_per)
    return sc, layout, notes


def _fit_base(table: pl.DataFrame, fw: str, resolved: dict[str, list[str]], base: Any, *, bootstrap: int, seed: int,
              model: Any, gpu: Any, backend: str | None, train_options: dict[str, Any] | None,
              steps_per_row: int | None, normed: tuple[pl.DataFrame, str, dict[str, str]] | None = None) -> Calibrated:
    """:func:`calibrate` of a metrics table :func:`_screen` passed (its framework ``fw`` and columns'
    resolution ``resolved``), on an ImportedConfig or a Scenario; ``normed``: the table already normalised
    (:func:`_normalized`; a Deployment base's scenario needed it first)."""
    from rollsim import _check
    from rollsim.configs import ImportedConfig

    if isinstance(base, ImportedConfig):
        sc, layout = base.scenario, base.layout
    elif isinstance(base, Scenario):
        sc, layout = base, None
    else:
        raise invalid("base", f"must be an ImportedConfig (rollsim.configs.load), a Deployment (rollsim.hardware) or a "
                      f"Scenario, got {type(base).__name__}")
    if isinstance(bootstrap, bool) or not isinstance(bootstrap, int) or not 0 <= bootstrap <= 100_000:
        raise invalid("bootstrap", f"must be an integer in [0, 100000], got {bootstrap!r}")
    k = _check.integer("steps_per_row", getattr(base, "steps_per_logged_step", 1) if steps_per_row is None
                       else steps_per_row, 1, 2**24)
    hardware = _hardware(base, model, gpu, backend, train_options)
    m, fw, sources = _normalized(table, fw, resolved) if normed is None else normed
    logged_step = m["step"]
    if k > 1:
        # the drift and the reference step count rollsim steps: a row's lengths are the mean over its
        # steps logged step x k ... + k - 1, i.e. at their middle
        m = m.with_columns(pl.col("step") * float(k) + (k - 1) / 2.0)
    cap = sc.lengths.max_tokens if isinstance(sc.lengths, LogNormal) else float(sc.lengths.max_tokens or 16384.0)
    longest = float(m["response_max"].to_numpy().max())
    if longest > cap * 1.001:
        i = int(np.argmax(m["response_max"].to_numpy()))
        option = next((n.option for n in getattr(base, "notes", ()) if n.became.startswith("lengths.max_tokens =")), None)
        limit = (f"the config's length limit {cap:g} tokens ({option})" if option is not None
                 else f"the scenario's length limit {cap:g} tokens (lengths.max_tokens)")
        at = f"step {float(logged_step[i]):g}" if "step" in sources else f"row {i} (counting from 0)"
        raise invalid("metrics", f"{sources.get('response_max', 'response_max')} {longest:g} tokens at {at} exceeds "
                      f"{limit}: the metrics are of another run, or the config's limit is not the run's")
    reading = _gen_reading(sc, fw, sources)
    wait = reading is not None
    if reading == "slime":
        m = _slime_wait(m)
    values = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_is_wait=wait)
    over = sc.pipeline.over_sampling if isinstance(sc.pipeline, OffPolicy) else None
    shift = (0.0, 0.0)
    if over is not None:
        # over-sampling stops the batch's longest answers: the logged lengths are the trained ones, a
        # short-biased subset of those generated; the generated distribution is found by matching
        # the simulated trained lengths to the logged ones
        shift = _length_bias(sc, values, float(m["step"].to_numpy().mean()), float(cap))
        values = _shifted(values, shift)
    if sc.rollout_slots < sc.batch_size or over is not None:
        # fewer slots than samples, or over-sampling (the batch ends before its longest answers): a
        # batch's generation is the slots' makespan, which rollsim simulates (in tokens, at 1 token/s)
        # for each step's fitted lengths; the speed is refitted on it
        m = m.with_columns(pl.Series("makespan_tokens", _makespans(sc, values, m["step"].to_numpy(), float(cap))))
        values = _shifted(fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k,
                              gen_is_wait=wait), shift)
    elif k > 1 and not wait:
        # rows of several steps: the row's longest answer is not each step's; a step waits for the
        # expected longest of its batch_size answers under the row's fitted lengths (exact, not
        # simulated: a noisy regressor would bias the speed)
        mu_t = values["lengths.mu"] + values["lengths.drift"] * m["step"].to_numpy()
        step_longest = _expected_longest(mu_t, values["lengths.sigma"], float(cap), sc.batch_size)
        m = m.with_columns(pl.Series("makespan_tokens", np.maximum(
            step_longest, m["response_mean"].to_numpy() * sc.batch_size / sc.rollout_slots)))
        values = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_is_wait=wait)
    stream: _StreamFit | None = None
    stream_misfit: _StreamFit | None = None
    if wait and k == 1 and stream_needs_simulation(sc) and _stream_rows(m)[1].sum() >= 3:
        # the slots do not decode back to back (more slots than a step's answers, or AReaL's admission cap
        # idles them): the speed and the pause are those whose simulated rows match the metrics' rows
        stream = _stream_inference(sc, values, m, float(cap))
        if abs(stream.error[0]) <= STREAM_MISFIT:
            values = {**values, **stream.values}
        else:
            stream_misfit, stream = stream, None
    profile: _WaitPauseFit | None = None
    profile_why: str | None = None
    if (wait and k > 1 and stream is None and stream_misfit is None and "step_s" in m.columns
            and pause_on_critical_path(sc)):
        # the trainer's wait and the wall time of rows of several steps (one per sync, as verl's fully async
        # trainer logs them), with the pause on the rows' critical path: the speed and the pause trade off
        # along a ridge; profiled over the pause by simulating the rows. Rows of one step keep the closed
        # form: on tests/test_calibrate_async.py's verl case the profile's pause range (21-35 s) missed
        # the known 20 s, its speed 7 % high, where the closed form's speed is within 5 %
        try:
            profile = _wait_pause_profile(sc, values, m, k, logged_step.to_numpy())
        except _Incomplete as e:
            profile_why = f"the simulated run at the fitted values completed {e}"
        if profile is not None and not profile.kept():
            profile_why = "no simulated run took the rows' mean wall time within " f"{STREAM_MISFIT:.0%}"
            profile = None
        if profile is not None:
            values = {**values, **profile.values}
    pause: _PauseFit | None = None
    pause_misfit: _PauseFit | None = None
    if not wait and "step_s" in m.columns and pause_on_critical_path(sc):
        # the rollout waits for each sync, then pauses: the pause is on the rows' critical path, which the
        # closed form misses; the pause is the one whose simulated rows take the rows' wall time
        pause = _pause_inference(sc, values, m, float(cap), k, logged_step.to_numpy())
        if abs(pause.error) <= STREAM_MISFIT:
            values = {**values, **pause.values}
        else:
            pause_misfit, pause = pause, None
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(bootstrap):
        idx = np.sort(rng.integers(0, m.height, m.height))
        if len(set(idx.tolist())) < 3:
            continue
        draw = _shifted(fit(m[idx.tolist()], batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap),
                            steps_per_row=k, gen_is_wait=wait,
                            gen_overhead=None if pause is None else pause.pause_for(m[idx.tolist()])), shift)
        if stream is not None:
            draw = {**draw, **stream.draw(m[idx.tolist()], draw)}
        if profile is not None:
            draw = {**draw, **profile.draw(rng, m.height)}
        draws.append(draw)
    src = {"lengths.mu": "response_mean, response_max, response_clip_ratio", "lengths.drift": "the same, over steps",
           "lengths.sigma": "response_mean, response_max, response_clip_ratio", "decode_tokens_per_s": "gen_s",
           "gen_overhead_s": "gen_s", "train_step_s": "train_s", "train_s_per_token": "train_s", "logprob_step_s": "logprob_s",
           "logprob_s_per_token": "logprob_s", "weight_sync_s": "sync_s" if "sync_s" in m.columns else "step_s - phases"}
    rows = []
    for name in PARAMS:
        vals = np.array([d[name] for d in draws]) if draws else np.array([values[name]])
        lo, hi = np.quantile(vals, [0.025, 0.975])
        s = src[name]
        s = ", ".join(sources.get(c.strip(), c.strip()) for c in s.split(",")) if "over" not in s else s
        if s == "logprob_s" and "logprob_s" not in sources:  # no log-prob phase logged: 0, and whose name it lacks
            alt = FRAMEWORK_METRICS.get(fw, {}).get("logprob_s")
            s = f"not logged ({alt[0][0] if alt else 'logprob_s'}): 0"
        low, high = float(min(lo, values[name])), float(max(hi, values[name]))
        if profile is not None and name in ("decode_tokens_per_s", "gen_overhead_s"):
            # the rows do not separate the two: the interval spans the profile's kept points
            span = [q[1] if name == "decode_tokens_per_s" else q[0] / k for q in profile.kept()]
            low, high = min(low, *span), max(high, *span)
            s = "step_s, gen_s (profiled with the pause: not separated)"
        unit = UNITS[name] if k == 1 or name != "weight_sync_s" else f"s / step (the row's one sync over its {k} steps)"
        rows.append(dict(name=name, value=values[name], low=low, high=high, unit=unit, source=s))
        if k > 1 and name == "weight_sync_s":
            rows.append(dict(name="weight_sync_s_per_sync", value=values[name] * k, low=low * k, high=high * k,
                             unit="s / sync (once per metrics row)", source=s))
    params = pl.DataFrame(rows)
    ref = float(m["step"].to_numpy().mean())
    fitted = _apply(sc, values, ref, k)
    # per-row residuals from the same closed forms the fit used (a row: k steps, their phases summed)
    n = m["batch_samples"].to_numpy() if "batch_samples" in m.columns else np.full(m.height, float(sc.batch_size * k))
    mean, mx = m["response_mean"].to_numpy(), m["response_max"].to_numpy()
    x = m["makespan_tokens"].to_numpy() if "makespan_tokens" in m.columns else np.maximum(mx, mean * n / sc.rollout_slots)
    gen_p = k * (values["gen_overhead_s"] + x / values["decode_tokens_per_s"])
    train_p = k * (values["train_step_s"] + values["logprob_step_s"]) + (values["train_s_per_token"] + values["logprob_s_per_token"]) * mean * n
    sync_p = k * values["weight_sync_s"]
    train_m = m["train_s"].to_numpy() + (m["logprob_s"].to_numpy() if "logprob_s" in m.columns else 0.0)
    step_m = (m["step_s"].to_numpy() if "step_s" in m.columns
              else m["gen_s"].to_numpy() + train_m + (m["sync_s"].to_numpy() if "sync_s" in m.columns else 0.0))
    # AReaL's admission rule with eta 0 admits no rollout of the next step before the weight update: the
    # step is generation, then training, as in a synchronous pipeline
    serial = (isinstance(sc.pipeline, OffPolicy) and sc.pipeline.k == 0) or (
        isinstance(sc.pipeline, FullyAsync) and sc.pipeline.admission_eta == 0)
    if isinstance(sc.pipeline, FullyAsync) and not serial:
        # streaming: the slots decode the row's tokens back to back (no batch waits for its longest
        # answer) and pause once per weight load (every sync_every steps); the trainer takes the longer
        gen_stream = (mean * n / (sc.rollout_slots * values["decode_tokens_per_s"])
                      + fitted.rollout_pause_s * k / sc.sync_every)
        step_p = np.maximum(gen_stream, train_p + sync_p)
        if wait:
            gen_p = np.maximum(0.0, gen_stream - train_p - sync_p)  # the trainer's predicted wait
        if stream is not None:
            # the closed form does not hold: each row's prediction is the simulated pipeline's (the mean of
            # its runs at the fitted values)
            step_p, gen_p = stream.wall, stream.wait
        if profile is not None:
            step_p, gen_p = profile.wall, profile.wait  # the simulated rows at the profile's best pause
        if pause is not None:
            step_p = pause.wall  # the simulated rows (the pause on their critical path); gen_s the closed form's
    else:
        step_p = gen_p + train_p + sync_p if serial else np.maximum(gen_p, train_p + sync_p)
    residuals = pl.DataFrame({
        "step": logged_step, "response_mean": mean, "gen_s_measured": m["gen_s"], "gen_s_predicted": gen_p,
        "train_s_measured": train_m, "train_s_predicted": train_p, "step_s_measured": step_m,
        "step_s_predicted": step_p, "step_error": step_p / step_m - 1.0,
    })
    implausible = plausibility_notes(values, step_m, k)  # warns CalibrationPlausibilityWarning
    return Calibrated(scenario=fitted, params=params, residuals=residuals, draws=tuple(draws), metrics=m,
                      framework=fw, base=base, layout=layout, reference_step=ref, values=values, hardware=hardware,
                      steps_per_row=k, notes=(_profile_notes(sc, reading, profile, profile_why)
                                              if profile is not None or profile_why is not None
                                              else _notes(m, reading, stream, stream_misfit))
                      + _pause_notes(sc, k, pause, pause_misfit)
                      + implausible)


def _hardware(base: Any, model: Any, gpu: Any, backend: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
    """The model, GPU, backend and training options a GPU-count change is rescaled with (from the
    arguments, else the base's deployment, else the config's model path)."""
    from rollsim.hardware import training
    from rollsim.hardware.specs import accelerator
    from rollsim.hardware.specs import model as model_spec

    dep = getattr(base, "deployment", None)
    spec = model_spec(model) if model is not None else getattr(dep, "model", None)
    if spec is None and getattr(base, "model", None):
        try:
            spec = model_spec(str(base.model))
        except ValueError:
            spec = None  # a model rollsim does not know: the 1 / GPUs rule (noted by whatif)
    acc = accelerator(gpu) if gpu is not None else getattr(dep, "gpu", None)
    b = backend if backend is not None else getattr(dep, "train_backend", None) or getattr(base, "train_backend",
                                                                                           None) or "fsdp2"
    if b not in training.BACKENDS:
        raise invalid("backend", f"must be one of {', '.join(training.BACKENDS)}, got {b!r}")
    opts = dict(getattr(dep, "train_options", {}) or {}) if options is None else options
    if not isinstance(opts, dict):
        raise invalid("train_options", f"must be a dict of rollsim.hardware.training.train_step_s arguments, got "
                      f"{type(opts).__name__}")
    bad = sorted(set(opts) & {"tokens", "sequences", "lengths", "train_gpus", "backend", "recompute_logprob"})
    if bad:
        raise invalid("train_options", f"{bad[0]!r} is set by rollsim.whatif (from the calibrated run), not here")
    import inspect

    known = [k for k in inspect.signature(training.train_step_s).parameters if k not in
             ("model", "accelerator", "tokens", "sequences", "lengths", "train_gpus", "backend", "recompute_logprob")]
    unknown = sorted(k for k in opts if k not in known)
    if unknown:
        raise invalid("train_options", f"unknown argument {unknown[0]!r} (allowed: {', '.join(known)})"
                                       f"{training.option_hint(unknown[0], known)}")
    return {"model": spec, "gpu": acc, "backend": b, "options": opts}
