"""Multi-turn agentic runs: presets from published agentic setups, staleness by trajectory length and
by turn count, token-weighted staleness, and a slot timeline that shows the tool calls.

The presets are starting points with every number's source in their docstring; where no public
number exists the value is marked as an assumption.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from rollsim.agentic import Agentic
from rollsim.errors import invalid
from rollsim.lengths import LogNormal
from rollsim.scenario import Scenario
from rollsim.simulation import Result

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["code_interpreter_math", "swe_agent", "PRESETS", "staleness_by_turns", "staleness_by_trajectory_length",
           "token_weighted_staleness", "turn_timeline"]


#: Prefill speeds of the presets, tokens/s per slot (``Scenario.prefill_tokens_per_s``), from
#: :mod:`rollsim.hardware` (the derivation is in each preset's docstring; ``tests/test_trajectories.py``
#: recomputes them).
CODE_INTERPRETER_PREFILL_TOKENS_PER_S = 8211.0
SWE_AGENT_PREFILL_TOKENS_PER_S = 13191.0


def code_interpreter_math(scenario: Scenario | None = None) -> Scenario:
    """A code-interpreter maths agent (ReTool-style) with short tool calls.

    * Sandbox: 128 concurrent workers and a 30 s timeout (verl ReTool on Qwen2.5-7B, 16 x 8 H20:
      volcengine/verl issue 2873, where tool-call time was about ten times generation time):
      ``env_slots=128``, latency capped at 30 s.
    * Latency: median 1.13 s (Daytona sandboxes for verl, p50 at concurrency 250;
      407 ms at concurrency 1: volcengine/verl PR 5796), ``LogNormal(log(1.13), 1.0, 30.0)``
      (the spread ``sigma = 1`` is an assumption).
    * Turns: at most 8 assistant turns (verl ``multi_turn.max_assistant_turns``; the value is an
      assumption of this preset), each turn ending with probability 0.25; observations of about
      200 tokens (assumption), per-turn lengths ``LogNormal(6.5, 1.0, 8192)`` (assumption:
      ~1000 tokens per turn of reasoning and code).
    * At most ``2 * rollout_slots`` trajectories in flight (assumption), of the base's pool: the
      Agentic returned keeps that number, so apply the preset to the pool it runs on (``rollsim run
      --agentic-preset`` does, a deployment's with ``--model``) or replace ``max_trajectories``.
    * Prefill: ``prefill_tokens_per_s = CODE_INTERPRETER_PREFILL_TOKENS_PER_S`` (8,211), the
      prefill speed of one lone 4,096-token context of Qwen2.5-7B on one H20 (the ReTool setup's
      model and GPU; one GPU per engine instance and the 4,096-token context are assumptions):
      ``4096 / rollsim.hardware.Deployment(model="Qwen2.5-7B", gpu="H20", rollout_gpus=1)
      .prefill_s(4096)``. It applies to the prefill of later turns: the observation with
      ``kv_policy="keep"``, the whole context with ``"drop"``. No KV cap: the base's independent
      slots have none (``kv_cache_tokens`` applies to engine instances, ``slots_per_instance``).

    ``scenario``: the base (default ``Scenario(group_size=8)``, fully asynchronous), whose
    pipeline is kept; its ``lengths`` are replaced by the per-turn lengths above, and its
    ``prefill_tokens_per_s`` is set to the speed above only when it is the default (``inf``: free
    prefill).
    """
    base = scenario if scenario is not None else Scenario(group_size=8)
    ag = Agentic(max_turns=8, stop_prob=0.25, tool_latency_s=LogNormal(math.log(1.13), 1.0, 30.0),
                 observation_tokens=200.0, env_slots=128, kv_policy="keep",
                 max_trajectories=max(2 * base.rollout_slots, base.group_size))
    return base.replace(lengths=LogNormal(6.5, 1.0, 8192.0), agentic=ag,
                        prefill_tokens_per_s=_prefill(base, CODE_INTERPRETER_PREFILL_TOKENS_PER_S))


def swe_agent(scenario: Scenario | None = None) -> Scenario:
    """A SWE / terminal agent with long trajectories and slow tool calls.

    * Context: at most 40K tokens and 100 steps (SkyRL-Agent's SA-SWE-32B setting, arXiv
      2511.16108); NeMo RL's SWE task reports trajectories of 31,599 tokens on average with a
      131,072-token maximum (NVIDIA NeMo RL performance summary), so contexts near the bound are
      the common case.
    * Turns: each ends the trajectory with probability 0.03 (assumption: about 30 steps on
      average), observations ``LogNormal(6.0, 1.0, 8000)`` tokens (command output; assumption),
      turns ``LogNormal(5.5, 1.0, 4096)`` tokens (assumption).
    * Tools: median 5 s per command in a container (assumption: no public per-call figure), with 2 s
      of overhead per call, 64 sandboxes, at most ``rollout_slots`` trajectories in flight
      (assumption), of the base's pool (as in :func:`code_interpreter_math`).
    * Prefill: ``prefill_tokens_per_s = SWE_AGENT_PREFILL_TOKENS_PER_S`` (13,191), the prefill
      speed of one lone 16,384-token context of Qwen3-32B (SA-SWE-32B's base model, arXiv
      2511.16108) on an instance of two H100 (the GPU, the tensor parallelism and the context are
      assumptions): ``16384 / rollsim.hardware.Deployment(model="Qwen3-32B", gpu="H100",
      rollout_gpus=2, rollout_tp=2).prefill_s(16384)``. It applies to the prefill of later turns:
      the observation with ``kv_policy="keep"``, the whole context with ``"drop"``. No KV cap: the
      base's independent slots have none (``kv_cache_tokens`` applies to engine instances,
      ``slots_per_instance``).

    ``scenario``: the base (default ``Scenario(group_size=8, batch_size=256)``, fully
    asynchronous), whose pipeline is kept; its ``lengths`` are replaced by the per-turn lengths
    above, and its ``prefill_tokens_per_s`` is set to the speed above only when it is the default
    (``inf``: free prefill).
    """
    base = scenario if scenario is not None else Scenario(group_size=8, batch_size=256)
    ag = Agentic(max_turns=100, stop_prob=0.03, tool_latency_s=LogNormal(math.log(5.0), 1.0, 600.0),
                 observation_tokens=LogNormal(6.0, 1.0, 8000.0), env_slots=64, env_overhead_s=2.0,
                 max_context_tokens=40_000.0, kv_policy="keep",
                 max_trajectories=max(base.rollout_slots, base.group_size))
    return base.replace(lengths=LogNormal(5.5, 1.0, 4096.0), agentic=ag,
                        prefill_tokens_per_s=_prefill(base, SWE_AGENT_PREFILL_TOKENS_PER_S))


def _prefill(base: Scenario, speed: float) -> float:
    """The preset's prefill speed, unless the base scenario gives its own (not ``inf``)."""
    return speed if math.isinf(base.prefill_tokens_per_s) else base.prefill_tokens_per_s


#: The presets by name (``rollsim run --agentic-preset NAME``).
PRESETS = {"code_interpreter_math": code_interpreter_math, "swe_agent": swe_agent}


def _samples(result: Any) -> pl.DataFrame:
    if not isinstance(result, Result):
        raise invalid("result", f"must be a rollsim.Result, got {type(result).__name__}")
    df = result.samples
    if "turns" not in df.columns:
        raise invalid("result", "is not a multi-turn agentic run (Scenario.agentic is None)")
    return df


def staleness_by_turns(result: Result) -> pl.DataFrame:
    """Staleness of trained trajectories by their number of turns.

    Returns
    -------
    polars.DataFrame
        ``turns``, ``trained``, ``dropped``, ``staleness_mean`` (at start),
        ``staleness_at_finish_mean``, ``n_versions_mean``, ``tool_s_mean``, sorted by ``turns``.

    Raises
    ------
    ScenarioError
        Not a Result of an agentic run with per-sample rows.
    """
    df = _samples(result).filter(pl.col("status").is_in(["trained", "dropped"]))
    return (df.group_by("turns").agg(
        (pl.col("status") == "trained").sum().alias("trained"), pl.col("dropped").sum().alias("dropped"),
        pl.col("staleness").mean().alias("staleness_mean"),
        pl.col("staleness_at_finish").mean().alias("staleness_at_finish_mean"),
        pl.col("n_versions").mean().alias("n_versions_mean"), pl.col("tool_s").mean().alias("tool_s_mean"))
        .sort("turns"))


def staleness_by_trajectory_length(result: Result, edges: tuple[float, ...] = (4000, 16000, 32000, 64000)
                                   ) -> pl.DataFrame:
    """:meth:`rollsim.Result.staleness_by_length` over whole trajectories (tokens generated over
    every turn), with the mean turns per bin added.

    Raises
    ------
    ScenarioError
        Not a Result of an agentic run with per-sample rows, or bad ``edges``.
    """
    df = _samples(result)
    out = result.staleness_by_length(edges)
    e = np.asarray([float(x) for x in edges])
    done = df.filter(pl.col("status").is_in(["trained", "dropped"]))
    idx = np.searchsorted(e, done["length_tokens"].to_numpy(), side="right")
    turns = (done.with_columns(pl.Series("bin_index", idx, dtype=pl.UInt32)).group_by("bin_index")
             .agg(pl.col("turns").mean().alias("turns_mean")).sort("bin_index"))
    labels = out["bin"].to_list()
    names = [f"[0, {e[0]:g})"] + [f"[{a:g}, {b:g})" for a, b in zip(e, e[1:])] + [f"[{e[-1]:g}, inf)"]
    means = dict(zip(turns["bin_index"].to_list(), turns["turns_mean"].to_list()))
    return out.with_columns(pl.Series("turns_mean", [means.get(names.index(b)) for b in labels], dtype=pl.Float64))


def token_weighted_staleness(result: Result) -> float:
    """Mean staleness of the trained tokens: each token span weighs its token count, its staleness
    is the training step minus the span's version (NaN when nothing was trained).

    Raises
    ------
    ScenarioError
        ``result`` without per-sample rows.
    """
    if not isinstance(result, Result):
        raise invalid("result", f"must be a rollsim.Result, got {type(result).__name__}")
    trained = result.samples.filter(pl.col("status") == "trained").select("sample_id", "trained_step")
    seg = result.segments.join(trained, on="sample_id")
    w = (seg["last_token"] - seg["first_token"]).to_numpy()
    if seg.height == 0 or w.sum() <= 0:
        return math.nan
    st = (seg["trained_step"].cast(pl.Int64) - seg["version"].cast(pl.Int64)).to_numpy()
    return float((w * st).sum() / w.sum())


def turn_timeline(result: Result, *, max_slots: int = 32, time_range_s: tuple[float, float] | None = None,
                  ax: Axes | None = None, path: str | os.PathLike[str] | None = None,
                  title: str | None = None) -> Figure:
    """A slot timeline of an agentic run: each turn is a bar on its slot (colored by the policy
    version of its tokens); each tool call is a thin grey bar after the turn, on the slot the turn
    ran on (solid and full height when the slot is held, ``kv_policy="hold"``).

    Parameters
    ----------
    result : Result
        An agentic run with per-sample rows (:attr:`rollsim.Result.turns`).
    max_slots : int
        Show the first ``max_slots`` slots (>= 1).
    time_range_s : (float, float), optional
        Show only this window, simulated seconds.
    ax, path, title
        As in :func:`rollsim.plot.slot_timeline`.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    ScenarioError
        Not an agentic Result with per-sample rows; ``max_slots`` < 1; a bad ``time_range_s``.
    """
    from rollsim import plot

    _samples(result)
    if isinstance(max_slots, bool) or not isinstance(max_slots, (int, np.integer)) or max_slots < 1:
        raise invalid("max_slots", f"must be a positive integer, got {max_slots!r}")
    end = float(result.summary["end_s"])
    t0, t1 = (0.0, end) if time_range_s is None else (float(time_range_s[0]), float(time_range_s[1]))
    if not (math.isfinite(t0) and math.isfinite(t1) and t0 < t1):
        raise invalid("time_range_s", f"must be two finite numbers, start < end, got {time_range_s!r}")
    import matplotlib

    sc = result.scenario  # None for a run read back from its files (rollsim plot): the held slots from the rows
    held = (sc.agentic is not None and sc.agentic.kv_policy == "hold") if sc is not None else False
    turns = result.turns.filter((pl.col("slot") < max_slots) & (pl.col("end_s") > t0) & (pl.col("start_s") < t1))
    fig, ax = plot._figure(ax, (9, 4.8))
    scale, unit = plot._time_unit(t1 - t0)
    vmax = max(int(turns["version"].max() or 0), 1) if turns.height else 1  # type: ignore[arg-type]
    cmap = matplotlib.colormaps["viridis"]
    for (slot,), part in turns.group_by("slot"):
        s = part["start_s"].clip(t0, t1).to_numpy()
        f = part["end_s"].clip(t0, t1).to_numpy()
        ax.broken_barh(list(zip(s / scale, (f - s) / scale)), (int(slot) - 0.42, 0.84),
                       facecolors=cmap(part["version"].to_numpy() / vmax), edgecolors="white", linewidth=0.25,
                       rasterized=True)
        calls = part.filter(pl.col("call_end_s").is_not_null())
        if calls.height:
            c0 = calls["end_s"].clip(t0, t1).to_numpy()
            c1 = calls["call_end_s"].clip(t0, t1).to_numpy()
            h = 0.84 if held else 0.2
            ax.broken_barh(list(zip(c0 / scale, (c1 - c0) / scale)), (int(slot) - h / 2, h),
                           facecolors="0.55", edgecolors="none", rasterized=True)
    ax.set_xlim(t0 / scale, t1 / scale)
    pool = sc.rollout_slots if sc is not None else int(result.samples["slot"].max() or 0) + 1
    ax.set_ylim(-0.6, min(max_slots, pool) - 0.4)
    ax.invert_yaxis()
    ax.set_xlabel(f"simulated time ({unit})")
    ax.set_ylabel("rollout slot")
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(facecolor=cmap(0.5), label="turn (color: policy version)"),
                       Patch(facecolor="0.55", label="tool call" + (" (slot held)" if held else ""))],
              loc="upper right", fontsize=8, framealpha=0.9)
    ax.set_title(title if title is not None else "Turns and tool calls per slot")
    return plot._finish(fig, path)
