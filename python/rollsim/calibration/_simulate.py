"""The fits that simulate the base's pipeline with rollsim: candidates' metrics rows (one helper,
:func:`_candidate_runs`, over :data:`_STREAM_SEEDS`), matched to the metrics' rows by the streaming
fit (:func:`_stream_inference`), the pause on the critical path (:func:`_pause_inference`) and the
wait profile (:func:`_wait_pause_profile`); the over-sampling length bias and the slots' makespans."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np
import polars as pl

from rollsim.errors import invalid
from rollsim.lengths import LengthDrift, LogNormal
from rollsim.pipelines import FullyAsync, OffPolicy, Synchronous
from rollsim.scenario import Scenario

from ._fit import _apply, _stream_rows, fit, fit_lengths

if TYPE_CHECKING:
    from rollsim.simulation import Result

_T = TypeVar("_T")


def stream_needs_simulation(sc: Scenario) -> bool:
    """Whether the streaming wall-time fit's closed form (:func:`_fit_stream`: the slots decode the row's
    tokens back to back, ``wall = pause + tokens / (slots x decode)``) misreads a fully asynchronous run:

    - more slots than a step's answers (``rollout_slots > batch_size``): a step's answers were started
      during the rows before it, and the rows alternate between a batch found ready and a long wait,
      so a row's wall time is not its own tokens' and the rows the rollout paced are a biased choice;
    - AReaL's admission rule (``admission_eta``): a group starts only while accepted + running + n <=
      (eta + version + 1) x batch, so with more than (eta - 1) x batch slots the cap idles slots once the
      next batch is partly ready (more so the more slots: the AReaL example's 1,536 for 1,024 answers at
      eta 2 read the decoder 12 % slow).
    """
    p = sc.pipeline
    if not isinstance(p, FullyAsync):
        return False
    if sc.rollout_slots > sc.batch_size:
        return True
    return p.admission_eta is not None and sc.rollout_slots > (p.admission_eta - 1) * sc.batch_size


#: The largest relative misfit of the mean wall time per row with which :func:`calibrate` takes the
#: simulated streaming fit (:func:`_stream_inference`); beyond it the closed form's values are kept, and
#: the note says they are unreliable.
STREAM_MISFIT = 0.03

#: Seeds of the simulated runs :func:`_stream_inference` compares with the metrics (the same for every
#: candidate: common random numbers, so that a candidate's change is not lost in the runs' noise).
_STREAM_SEEDS = (101, 202)


class _Incomplete(Exception):
    """A simulated run of :func:`_candidate_runs` did not complete the steps asked for (it stalled, or its
    horizon ran out): the candidate gives no rows to compare."""


def _candidate(sc: Scenario, v: dict[str, float], step: float, k: int = 1) -> Scenario:
    """``sc`` at the values ``v`` from rollsim step ``step`` (:func:`_apply`, ``k`` steps per metrics row),
    its lengths drifting as fitted: policy version ``t`` draws ``mu + drift * (step + t)`` (the drift held
    in the engine's range, [-1, 100] log tokens per version)."""
    drift = LengthDrift("exp", rate=float(np.clip(v["lengths.drift"], -1.0, 100.0)))
    return _apply(sc, v, step, k).replace(length_drift=drift)


def _candidate_runs(cand: Scenario, want: int, horizon: float, read: Callable[[pl.DataFrame, Result], _T], *,
                    seeds: tuple[int, ...] = _STREAM_SEEDS, record: Literal["summary", "samples"] = "summary",
                    attempts: int = 1) -> list[_T]:
    """The one loop of the simulated fits: ``cand`` run once per seed of ``seeds`` (by default
    :data:`_STREAM_SEEDS`, the same for every candidate), each run until ``want`` steps complete, and what
    ``read(steps, result)`` takes from it (the run's completed steps, and its result: ``record`` is
    ``"summary"``, or ``"samples"`` when the reader needs the samples). A run lasts ``horizon`` seconds,
    grown 4 fold (to at most 1e12) up to ``attempts - 1`` times while it completes fewer steps.

    Raises
    ------
    _Incomplete
        ``"<completed> of <want> steps"`` for a run that completes fewer steps.
    """
    from rollsim.simulation import simulate

    out = []
    for seed in seeds:
        h = horizon
        for _ in range(attempts):
            res = simulate(cand.replace(seed=seed, horizon_s=h), record=record)
            st = res.steps.filter(pl.col("completed"))
            if st.height >= want:
                break
            h = min(1e12, h * 4)
        if st.height < want:
            raise _Incomplete(f"{st.height} of {want} steps")
        out.append(read(st, res))
    return out


def _stream_moments(m: pl.DataFrame, slots: int, batch: int) -> np.ndarray:
    """``(mean wall time per row, slope of the wall time on the tokens per slot)`` of a streaming run's
    rows (:func:`_stream_rows`), the slope a line through the means of consecutive pairs of rows (which
    the alternation of a ready batch and a long wait leaves nearly unbiased); ``nan`` for the slope
    when the tokens per slot hardly vary (no length drift: only the mean is fitted)."""
    wall, _ = _stream_rows(m)
    x = m["response_mean"].to_numpy() * batch / max(1, slots)
    pairs = len(x) // 2
    xb = x[:2 * pairs].reshape(pairs, 2).mean(axis=1)
    yb = wall[:2 * pairs].reshape(pairs, 2).mean(axis=1)
    if pairs < 3 or np.ptp(xb) <= 0.05 * np.mean(xb):
        return np.array([float(np.mean(wall)), math.nan])
    b, _ = np.polyfit(xb, yb, 1)
    return np.array([float(np.mean(wall)), float(b)])


@dataclass
class _StreamFit:
    """What :func:`_stream_inference` found: the fitted ``values`` (``decode_tokens_per_s``,
    ``gen_overhead_s``), the simulated rows' wall time and wait at them (per row, the mean over the
    seeds), ``error`` (the moments' relative misfit), ``rounds``, ``why`` (which condition of
    :func:`stream_needs_simulation` holds), and what :meth:`draw` needs: the closed form's fit on all
    rows and the rows' mean-based speed (:func:`_stream_level`)."""

    values: dict[str, float]
    wall: np.ndarray
    wait: np.ndarray
    error: np.ndarray
    rounds: int
    why: str
    closed: tuple[float, float]
    level: float
    slots: int
    batch: int

    def draw(self, rows: pl.DataFrame, closed: dict[str, float]) -> dict[str, float]:
        """A bootstrap draw's speed and pause: the fit moved as the closed form's fit moved between all
        rows and the draw's (``closed``: its values), the speed by the ratio and the pause by the
        difference, when both closed-form speeds are finite; otherwise the speed by the ratio of the
        rows' mean-based speeds (:func:`_stream_level`) and the pause kept."""
        d, p = self.values["decode_tokens_per_s"], self.values["gen_overhead_s"]
        d0, p0 = self.closed
        d1, p1 = closed["decode_tokens_per_s"], closed["gen_overhead_s"]
        if 0 < d0 < 5000 and 0 < d1 < 5000:
            return {"decode_tokens_per_s": float(d * np.clip(d1 / d0, 0.25, 4.0)), "gen_overhead_s": float(max(0.0, p + p1 - p0))}
        ratio = _stream_level(rows, self.slots, self.batch, p) / self.level if self.level > 0 else 1.0
        return {"decode_tokens_per_s": float(d * np.clip(ratio, 0.25, 4.0)), "gen_overhead_s": float(p)}


def _stream_level(rows: pl.DataFrame, slots: int, batch: int, pause: float) -> float:
    """The rows' mean tokens per slot over their mean wall time less ``pause``: the speed the rows'
    level alone gives (no slope), tokens/s per sequence."""
    wall, _ = _stream_rows(rows)
    x = rows["response_mean"].to_numpy() * batch / max(1, slots)
    return float(np.mean(x) / max(float(np.mean(wall)) - pause, 1e-9))


def _stream_simulated(sc: Scenario, v: dict[str, float], steps: int, first: float, cap: float) -> list[pl.DataFrame]:
    """Rows of the fully asynchronous ``sc`` at the values ``v`` (lengths drifting from the metrics' first
    row ``first``), one frame per seed of :data:`_STREAM_SEEDS`, with the trainer's wait as ``gen_s``."""
    cand = _candidate(sc, v, first - 1.0)
    return [pl.DataFrame(rows) for rows in _streamed_rows(cand, steps, "areal", lambda x: x, cap, _STREAM_SEEDS)]


def _stream_inference(sc: Scenario, v: dict[str, float], m: pl.DataFrame, cap: float, rounds: int = 6) -> _StreamFit:
    """``decode_tokens_per_s`` and ``gen_overhead_s`` of a streaming run where the slots do not decode
    back to back (:func:`stream_needs_simulation`), by indirect inference: simulate the pipeline at a
    candidate (the other fitted values kept), compute the moments of :func:`_stream_moments` on its rows
    as on the metrics', and move the candidate by Newton steps (a finite-difference Jacobian, then
    Broyden updates; each step at most 30 % of the speed) until they agree; the best candidate found
    is kept. Without a length drift only the mean wall time is matched (the pause then stays at the
    closed form's)."""
    slots, batch = sc.rollout_slots, sc.batch_size
    target = _stream_moments(m, slots, batch)
    two = bool(np.isfinite(target[1]))
    wall_m = float(target[0])
    x_mean = float(np.mean(m["response_mean"].to_numpy() * batch / slots))
    p = float(min(v["gen_overhead_s"], 0.5 * wall_m))
    d = float(x_mean / max(wall_m - p, 1e-9)) if not 0 < v["decode_tokens_per_s"] < 5000 else float(v["decode_tokens_per_s"])
    first = float(m["step"][0])
    scale = np.abs(target) if two else np.array([abs(target[0])])

    def level(rows: pl.DataFrame, pause: float) -> float:
        return _stream_level(rows, slots, batch, pause)

    def moments(d: float, p: float) -> tuple[np.ndarray, list[pl.DataFrame]]:
        runs = _stream_simulated(sc, {**v, "decode_tokens_per_s": d, "gen_overhead_s": p}, m.height, first, cap)
        got = np.mean([_stream_moments(r, slots, batch) for r in runs], axis=0)
        return (got if two else got[:1]), runs

    def resid(got: np.ndarray) -> np.ndarray:
        return (target[:len(got)] - got) / scale

    got, runs = moments(d, p)
    best = (float(np.linalg.norm(resid(got))), d, p, got, runs)
    jac: np.ndarray | None = None
    done = 0
    while done < rounds:
        r = resid(got)
        if np.max(np.abs(r)) < 0.003:
            break
        done += 1
        if jac is None:
            hd = 0.05 * d
            cols = [(moments(d + hd, p)[0] - got) / hd]
            if two:
                hp = max(0.5, 0.1 * p)
                cols.append((moments(d, p + hp)[0] - got) / hp)
            jac = np.column_stack(cols) / scale[:, None]
        step = np.linalg.lstsq(jac, r, rcond=None)[0]
        step[0] = float(np.clip(step[0], -0.3 * d, 0.3 * d))
        if two:
            step[1] = float(np.clip(step[1], -0.25 * wall_m, 0.25 * wall_m))
        d_new, p_new = max(1e-6, d + step[0]), (max(0.0, p + step[1]) if two else p)
        got_new, runs_new = moments(d_new, p_new)
        taken = np.array([d_new - d, p_new - p])[:len(step)]
        if np.linalg.norm(taken) > 0:  # Broyden: the Jacobian corrected along the step taken
            dr = (got_new - got) / scale
            jac = jac + np.outer(dr - jac @ taken, taken) / float(taken @ taken)
        d, p, got, runs = d_new, p_new, got_new, runs_new
        norm = float(np.linalg.norm(resid(got)))
        if norm < best[0]:
            best = (norm, d, p, got, runs)
    _, d, p, got, runs = best
    pipe = sc.pipeline
    why = (f"the rollout has more slots ({slots}) than a step's answers ({batch})" if slots > batch else
           f"AReaL's admission cap ((eta + version + 1) x batch, eta {getattr(pipe, 'admission_eta', None)}) idles "
           f"slots beyond (eta - 1) x batch = {(getattr(pipe, 'admission_eta', 1) - 1) * batch}")
    err = (got - target[:len(got)]) / target[:len(got)]
    return _StreamFit(values={"decode_tokens_per_s": float(d), "gen_overhead_s": float(p)},
                      wall=np.mean([r["step_s"].to_numpy() for r in runs], axis=0),
                      wait=np.mean([r["gen_s"].to_numpy() for r in runs], axis=0),
                      error=np.array([err[0], err[1] if two else math.nan]), rounds=done, why=why,
                      closed=(float(v["decode_tokens_per_s"]), float(v["gen_overhead_s"])), level=level(m, p),
                      slots=slots, batch=batch)


def pause_on_critical_path(sc: Scenario) -> bool:
    """Whether a fully asynchronous base's rows have the rollout's pause at each weight load on their
    critical path, which the streaming closed form (the slots decode a row's tokens back to back, pausing
    once per sync, and the trainer takes the longer of that and its own work) misses: a lag bound
    (``max_lag_samples``) whose places free only at a parameter sync (``lag_release="sync"``: verl's fully
    async rollouter restarts its count of started prompts only there, verl-project/verl
    ``verl/experimental/fully_async_policy/fully_async_rollouter.py``, ``reset_staleness``). The rollout
    then stops at the bound until the sync, pauses ``rollout_pause_s`` when it loads the weights, and only
    then starts the next window's answers, while the trainer works through the few answers left in the
    queue: whenever the pause outlasts that work the trainer waits, and the row's wall time grows with the
    pause, one for one. AReaL's serial rule (``admission_eta`` 0) is a batch pipeline, not this."""
    p = sc.pipeline
    return (isinstance(p, FullyAsync) and p.admission_eta != 0 and p.max_lag_samples is not None
            and p.lag_release == "sync")


#: Simulated runs of :func:`_pause_inference` share :data:`_STREAM_SEEDS`; its search stops when the
#: simulated rows' mean wall time is within this share of the metrics' (or after :data:`_PAUSE_ROUNDS`).
_PAUSE_TOL = 0.002
_PAUSE_ROUNDS = 10


@dataclass
class _PauseFit:
    """What :func:`_pause_inference` found: ``values`` (``decode_tokens_per_s``, ``gen_overhead_s``), the
    simulated rows' wall time at them (per row, the mean over :data:`_STREAM_SEEDS`), ``error`` (the
    simulated rows' mean wall time over the metrics' - 1), ``rounds`` (candidates simulated), ``slope``
    (the simulated mean wall time per row's change per second of ``gen_overhead_s``, from the last secant), the
    metrics' mean wall time ``measured``, and ``held``: the pause was left at the closed form's because
    the rows' wall time does not depend on it (the trainer sets the pace) or the closed form's already
    gives it."""

    values: dict[str, float]
    wall: np.ndarray
    error: float
    rounds: int
    slope: float
    measured: float
    held: bool
    why: str = ""

    def pause_for(self, rows: pl.DataFrame) -> float:
        """A bootstrap draw's generation overhead per step: the fit's, moved by the draw's mean wall time
        per row against all rows' over :attr:`slope` (kept when the pause was held)."""
        p = self.values["gen_overhead_s"]
        if self.held:
            return p
        wall, _ = _stream_rows(rows)
        return float(max(0.0, p + (float(np.mean(wall)) - self.measured) / self.slope))


def _rows_simulated(sc: Scenario, v: dict[str, float], k: int, logged: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Wall time and trainer wait of each metrics row (``k`` steps, its logged step in ``logged``) in
    rollsim's runs of the fully asynchronous ``sc`` at the values ``v`` (:func:`_candidate`: policy
    version ``t`` of rollsim step ``s0 + t`` draws ``mu + drift * (s0 + t)``), the means over
    :data:`_STREAM_SEEDS`; the wait is the row's summed ``wait_s`` of its steps, as verl's fully async
    trainer times ``timing_s/gen``. A table starting at logged step 0 is compared with the run from its
    start (the first row holds the pipeline's fill, as the run's did); a later start with the rows after
    one simulated row more (the fill)."""
    rows = len(logged)
    fill = float(logged[0]) <= 0.0
    s0 = 0.0 if fill else float(logged[0]) * k - k
    want = (rows + (0 if fill else 1)) * k
    cand = _candidate(sc, v, s0, k)
    L = cand.lengths
    assert isinstance(L, LogNormal)
    top = min(L.max_tokens, math.exp(L.mu + 3 * L.sigma) * math.exp(max(0.0, v["lengths.drift"]) * want))
    per = (cand.rollout_pause_s + cand.train_step_s + cand.weight_sync_s + top / cand.decode_tokens_per_s
           + (cand.train_s_per_token + cand.logprob_s_per_token) * top * cand.batch_size)

    def read(st: pl.DataFrame, _: Result) -> tuple[np.ndarray, np.ndarray]:
        wall = np.diff(np.concatenate([[0.0], st["end_s"].to_numpy()[k - 1::k][:want // k]]))
        wait = st["wait_s"].to_numpy()[:want].reshape(-1, k).sum(axis=1)
        return (wall, wait) if fill else (wall[1:], wait[1:])

    runs = _candidate_runs(cand, want, min(1e12, 2.0 * per * (want + 2)), read, attempts=6)
    return np.mean([r[0] for r in runs], axis=0), np.mean([r[1] for r in runs], axis=0)


def _pause_inference(sc: Scenario, v: dict[str, float], m: pl.DataFrame, cap: float, k: int,
                     logged: np.ndarray) -> _PauseFit:
    """The rollout's pause per weight load of a fully asynchronous run whose rows have it on their
    critical path (:func:`pause_on_critical_path`), and the decode speed with it: the pause is the one
    whose simulated rows (:func:`_rows_simulated`) take the metrics' mean wall time per row, with the
    speed at each candidate the slope of the rows' generation time through that pause (:func:`fit`'s
    ``gen_overhead``: ``gen_s`` holds the pause once per row, so its intercept and slope trade off and
    the generation time alone cannot place the pause, while the wall time grows with it one for one).
    Secant steps, bracketed once the sign changes, from the closed form's pause; the pause stays in
    [0, the shortest row's ``gen_s``] (it is part of every row's generation). When the closed form's
    pause already gives the wall time, or the wall time does not move with the pause (the trainer sets
    the pace), the closed form's values are kept (``held``)."""
    wall_m, _ = _stream_rows(m)
    target = float(np.mean(wall_m))
    # seconds of row per second of overhead per step when the pause is on the critical path in full:
    # rollout_pause_s is the overhead x k (x 1 for rows of one step, _apply), k / sync_every of them per row
    full = (k if k > 1 else 1) * k / sc.sync_every
    top = float(np.min(m["gen_s"].to_numpy())) / k               # the pause's bound, per step
    def at(a: float) -> tuple[float, dict[str, float], np.ndarray]:
        got = fit(m, batch=sc.batch_size, slots=sc.rollout_slots, cap=float(cap), steps_per_row=k, gen_overhead=a)
        vals = {**v, "decode_tokens_per_s": got["decode_tokens_per_s"], "gen_overhead_s": got["gen_overhead_s"]}
        wall, _ = _rows_simulated(sc, vals, k, logged)
        return float(np.mean(wall)) - target, vals, wall

    a0 = float(min(v["gen_overhead_s"], top))
    try:
        f0, vals0, wall0 = at(a0)
    except _Incomplete as e:
        return _PauseFit(values={"decode_tokens_per_s": float(v["decode_tokens_per_s"]),
                                 "gen_overhead_s": float(v["gen_overhead_s"])}, wall=np.full(m.height, math.nan),
                         error=math.inf, rounds=1, slope=float(full), measured=target, held=True, why=str(e))
    best = (abs(f0), a0, f0, vals0, wall0)
    rounds, slope = 1, float(full)
    lo: tuple[float, float] | None = None  # (overhead, f) with f < 0
    hi: tuple[float, float] | None = None  # with f > 0
    a, f = a0, f0
    flat = True
    while abs(f) > _PAUSE_TOL * target and rounds < _PAUSE_ROUNDS:
        if f < 0:
            lo = (a, f)
        else:
            hi = (a, f)
        if lo is not None and hi is not None:
            # regula falsi inside the bracket
            nxt = lo[0] - lo[1] * (hi[0] - lo[0]) / (hi[1] - lo[1])
        else:
            nxt = a - f / slope
        nxt = float(np.clip(nxt, 0.0, top))
        if nxt == a:
            break  # at a bound of the pause
        try:
            f_new, vals, wall = at(nxt)
        except _Incomplete:
            break  # the candidate's run did not complete its steps: the best so far is kept
        rounds += 1
        if abs(f_new - f) > 0.25 * _PAUSE_TOL * target:
            flat = False
            slope = float(max((f_new - f) / (nxt - a), 0.05 * full))
        a, f = nxt, f_new
        if abs(f) < best[0]:
            best = (abs(f), a, f, vals, wall)
    _, a, f, vals, wall = best
    held = a == a0 or flat
    if flat:
        a, f, vals, wall = a0, f0, vals0, wall0
    return _PauseFit(values={"decode_tokens_per_s": float(vals["decode_tokens_per_s"]),
                             "gen_overhead_s": float(vals["gen_overhead_s"])},
                     wall=wall, error=f / target, rounds=rounds, slope=slope, measured=target, held=held)


#: :func:`_wait_pause_profile`: pauses per weight load tried on its first grid (over [0, the shortest
#: row's wall time]), and on its second (over the first grid's accepted steps, one step either side)
_PROFILE_GRID = (13, 13)
#: The profile's 95 % bound: a pause is kept when ``rows x log(SSE / SSE_min) <= 3.84`` (chi-square, one
#: degree of freedom: the pause; the speed is solved at each)
_PROFILE_CHI2 = 3.84


@dataclass
class _WaitPauseFit:
    """What :func:`_wait_pause_profile` found: ``values`` at the best pause, the simulated rows' ``wall`` and
    ``wait`` there, ``error`` (their mean wall time over the metrics' - 1), and the profile: every pause
    tried with its speed, residual sum of squares and whether it is inside the 95 % bound
    (``points``: ``(pause per load, decode_tokens_per_s, sse, kept)``)."""

    values: dict[str, float]
    wall: np.ndarray
    wait: np.ndarray
    error: float
    points: list[tuple[float, float, float, bool]]
    k: int

    def kept(self) -> list[tuple[float, float, float, bool]]:
        return [p for p in self.points if p[3]]

    def draw(self, rng: np.random.Generator, rows: int) -> dict[str, float]:
        """A bootstrap draw's ``decode_tokens_per_s`` and ``gen_overhead_s``: one profile point inside the
        bound, picked with its likelihood's weight ``exp(-rows/2 x log(SSE / SSE_min))``."""
        kept = self.kept()
        sse = np.array([p[2] for p in kept])
        w = np.exp(-0.5 * rows * np.log(sse / sse.min()))
        i = int(rng.choice(len(kept), p=w / w.sum()))
        return {"decode_tokens_per_s": kept[i][1], "gen_overhead_s": kept[i][0] / self.k}


def _wait_pause_profile(sc: Scenario, v: dict[str, float], m: pl.DataFrame, k: int,
                        logged: np.ndarray) -> _WaitPauseFit:
    """The rollout's pause per weight load and the decode speed of a fully asynchronous run whose
    ``gen_s`` is the trainer's wait (verl's ``timing_s/gen``) and whose rows have the pause on their
    critical path (:func:`pause_on_critical_path`). Neither the wait nor the wall time is the rollout's
    generation: a slower rollout and a shorter pause give rows of about the same wall time, so the two
    are profiled. For each pause on a grid the speed is the one whose simulated rows
    (:func:`_rows_simulated`) take the metrics' mean wall time per row (secant steps on its log), and the
    pause's residual sum of squares is that of every row's wall time and wait against the simulated
    rows'; the pauses inside the 95 % profile bound (:data:`_PROFILE_CHI2`) are kept, refined on a
    second grid over them. The values are the best pause's; their intervals span the kept points. Used on
    rows of several steps (one per sync, ``k`` > 1); the intervals hold the length fit fixed."""
    wall_m, wait_m = m["step_s"].to_numpy(), m["gen_s"].to_numpy()
    target = float(np.mean(wall_m))
    rows = len(wall_m)
    cache: dict[float, tuple[float, float, np.ndarray, np.ndarray]] = {}

    def vals(p: float, d: float) -> dict[str, float]:
        return {**v, "decode_tokens_per_s": d, "gen_overhead_s": p / k}

    def at(p: float) -> tuple[float, float, np.ndarray, np.ndarray]:
        # the speed whose simulated rows take the metrics' mean wall time at the pause p, and the rows' SSE
        if p in cache:
            return cache[p]
        best: tuple[float, float, float, np.ndarray, np.ndarray] | None = None  # (f, sse, speed, wall, wait)
        pts: list[tuple[float, float]] = []
        x = math.log(max(v["decode_tokens_per_s"], 1e-3))
        for _ in range(10):
            try:
                wall, wait = _rows_simulated(sc, vals(p, math.exp(x)), k, logged)
            except _Incomplete:
                x += 0.5  # too slow a rollout to finish within the horizon: faster
                continue
            f = float(np.mean(wall)) / target - 1.0
            if best is None or abs(f) < abs(best[0]):
                best = (f, float(np.sum((wall - wall_m) ** 2 + (wait - wait_m) ** 2)), math.exp(x), wall, wait)
            if abs(f) <= _PAUSE_TOL:
                break
            pts.append((x, f))
            if len(pts) >= 2 and abs(pts[-1][1] - pts[-2][1]) > 1e-9:
                (xa, fa), (xb, fb) = pts[-2], pts[-1]
                x = float(np.clip(xb - fb * (xb - xa) / (fb - fa), xb - 1.0, xb + 1.0))
            else:
                x = x + (0.2 if f > 0 else -0.2)  # a faster rollout shortens the rows
        if best is None:
            raise _Incomplete(f"no simulated run at a pause of {p:g} s completed the rows")
        out = (best[1] if abs(best[0]) <= STREAM_MISFIT else math.inf, best[2], best[3], best[4])
        cache[p] = out
        return out

    top = float(np.min(wall_m))
    n1, n2 = _PROFILE_GRID
    grid = np.linspace(0.0, top, n1)
    for p in grid:
        at(float(p))

    def bound() -> tuple[float, list[float]]:
        sse_min = min(c[0] for c in cache.values())
        kept = [p for p, c in cache.items() if math.isfinite(c[0]) and rows * math.log(c[0] / sse_min) <= _PROFILE_CHI2]
        return sse_min, kept

    sse_min, kept = bound()
    if math.isfinite(sse_min):
        step = top / (n1 - 1)
        for p in np.linspace(max(0.0, min(kept) - step), min(top, max(kept) + step), n2):
            at(float(p))
        sse_min, kept = bound()
    p_best = min(cache, key=lambda q: cache[q][0])
    sse, d, wall, wait = cache[p_best]
    points = sorted((p, c[1], c[0], p in kept) for p, c in cache.items())
    return _WaitPauseFit(values={"decode_tokens_per_s": d, "gen_overhead_s": p_best / k}, wall=wall, wait=wait,
                         error=float(np.mean(wall)) / target - 1.0, points=points, k=k)


def _trained_lengths(sc: Scenario, mu: float, sigma: float, cap: float, batches: int = 6) -> dict[str, np.ndarray]:
    """Per-batch mean, longest and clip ratio of the answers a batch pipeline with over-sampling
    trains, simulated (at 1 token/s, no training cost) for lengths ``LogNormal(mu, sigma)``; the
    first batch (no answers carried over) is left out."""
    from rollsim.simulation import simulate

    L = sc.lengths
    corr = L.group_correlation if isinstance(L, LogNormal) else 0.0
    p = sc.pipeline
    batch = Synchronous(over_sampling=p.over_sampling, keep_partial=p.keep_partial) if isinstance(p, OffPolicy) \
        else Synchronous()
    one = sc.replace(pipeline=batch, decode_tokens_per_s=1.0, rollout_pause_s=0.0, train_step_s=0.0,
                     train_s_per_token=0.0, logprob_s_per_token=0.0, weight_sync_s=0.0, prefill_tokens_per_s=math.inf,
                     lengths=LogNormal(mu=float(np.clip(mu, -100, 100)), sigma=float(min(10.0, sigma)), max_tokens=cap,
                                       group_correlation=corr),
                     horizon_s=min(1e12, (batches + 1.5) * cap * (1 + sc.batch_size / sc.rollout_slots)), seed=12345)
    s = simulate(one, record="samples").samples
    done = (s.filter(pl.col("trained_step") >= 1).group_by("trained_step")
            .agg(pl.col("length_tokens").mean().alias("mean"), pl.col("length_tokens").max().alias("max"),
                 (pl.col("length_tokens") >= cap).mean().alias("clip"), pl.len().alias("n"))
            .sort("trained_step").head(batches))
    return {k: done[k].to_numpy().astype(float) for k in ("trained_step", "mean", "max", "clip", "n")}


def _length_bias(sc: Scenario, v: dict[str, float], ref: float, cap: float, rounds: int = 8) -> tuple[float, float]:
    """The shift of ``(lengths.mu, lengths.sigma)`` from the fit on the trained answers to the
    generated distribution, by indirect inference: simulate the trained answers of a candidate
    distribution, fit them as the logged ones were fitted, and move the candidate until that fit
    matches the logged one (``sigma`` by secant steps: the trained answers' spread grows more slowly
    than the generated one's). The shift is found at the reference step and applied to every step."""
    want_mu, want_sigma = v["lengths.mu"] + v["lengths.drift"] * ref, v["lengths.sigma"]
    mu, sigma = want_mu, want_sigma
    prev: tuple[float, float] | None = None
    for _ in range(rounds):
        t = _trained_lengths(sc, mu, sigma, cap)
        if len(t["mean"]) < 2:
            break
        got = fit_lengths(t["mean"], t["max"], t["clip"], t["n"], cap, t["trained_step"])
        got_mu, got_sigma = got["mu"] + got["drift"] * float(t["trained_step"].mean()), got["sigma"]
        slope = 1.0
        if prev is not None and abs(sigma - prev[0]) > 1e-9:
            slope = float(np.clip((got_sigma - prev[1]) / (sigma - prev[0]), 0.1, 2.0))
        step_mu, step_sigma = want_mu - got_mu, (want_sigma - got_sigma) / slope
        prev = (sigma, got_sigma)
        mu += step_mu
        sigma = float(np.clip(sigma + step_sigma, 0.005, 10.0))
        if abs(step_mu) < 1e-3 and abs(step_sigma) < 1e-3:
            break
    return mu - want_mu, sigma - want_sigma


def _makespans(sc: Scenario, v: dict[str, float], steps: np.ndarray, cap: float) -> np.ndarray:
    """Tokens of the longest slot of each step's batch (its generation time at 1 token/s per
    sequence), simulated with the step's fitted lengths; the mean of 3 batches."""
    from rollsim.simulation import simulate

    out = []
    for t in steps.tolist():
        lengths = LogNormal(mu=float(np.clip(v["lengths.mu"] + v["lengths.drift"] * t, -100, 100)),
                            sigma=float(v["lengths.sigma"]), max_tokens=cap)
        p = sc.pipeline
        batch = Synchronous(over_sampling=p.over_sampling) if isinstance(p, OffPolicy) else Synchronous()
        one = sc.replace(pipeline=batch, lengths=lengths, decode_tokens_per_s=1.0, rollout_pause_s=0.0,
                         train_step_s=0.0, train_s_per_token=0.0, logprob_s_per_token=0.0, weight_sync_s=0.0,
                         prefill_tokens_per_s=math.inf, horizon_s=min(1e12, 3.5 * cap * (1 + sc.batch_size / sc.rollout_slots)),
                         seed=int(t) % 2**32)
        st = simulate(one, record="summary").steps
        ends = st["end_s"].to_numpy()[:3]
        out.append(float(np.mean(np.diff(np.concatenate([[0.0], ends])))) if len(ends) else float(cap))
    return np.array(out)


def _streamed_rows(sc: Scenario, steps: int, framework: str, noisy: Any, cap: float,
                   seeds: tuple[int, ...] | None = None) -> list[list[dict[str, float]]]:
    """Per-step rows of runs of the fully asynchronous ``sc`` (one run per seed of ``seeds``, by default
    the scenario's own: :func:`_candidate_runs`), steps 1 .. ``steps`` (step 0, the pipeline's fill, left
    out), with ``gen_s`` what ``framework``'s timer records (:data:`ASYNC_GEN_METRICS`): the trainer's wait
    (verl, AReaL), or for slime the time from the trainer taking the previous batch to this batch's last
    answer (none when the batch was ready before). ``train_s`` is the step's training, ``step_s`` wait +
    training + sync; ``cap`` the length limit, tokens; ``noisy`` applied to each timing in turn.

    Raises
    ------
    ScenarioError
        ``steps: the fully asynchronous run completed ...`` for a run that completes fewer steps.
    """
    one = (cap / sc.decode_tokens_per_s + sc.rollout_pause_s + sc.train_step_s + sc.weight_sync_s
           + (sc.train_s_per_token + sc.logprob_s_per_token) * cap * sc.batch_size) * (1.0 + sc.batch_size / sc.rollout_slots)

    def read(st: pl.DataFrame, res: Result) -> list[dict[str, float]]:
        start, end, wait = (st.head(steps + 1)[c].to_numpy() for c in ("start_s", "end_s", "wait_s"))
        s = res.samples.filter(pl.col("trained_step").is_not_null())
        ready = (s.group_by("trained_step").agg(pl.col("finish_s").max()).sort("trained_step")
                 .filter(pl.col("trained_step") <= steps)["finish_s"].to_numpy())
        rows = []
        for t in range(1, steps + 1):
            lens = s.filter(pl.col("trained_step") == t)["length_tokens"].to_numpy()
            upd = float(end[t] - start[t]) - sc.weight_sync_s
            if framework == "slime":
                gen = float(max(0.0, ready[t] - start[t - 1]))
            else:
                gen = float(wait[t])
            g, tr, sy = noisy(gen), noisy(upd), noisy(sc.weight_sync_s)
            w = noisy(float(wait[t]))
            rows.append(dict(step=t, step_s=w + tr + sy, gen_s=g, train_s=tr, sync_s=sy,
                             response_mean=float(lens.mean()), response_max=float(lens.max()),
                             response_clip_ratio=float(np.mean(lens >= cap))))
        return rows

    try:
        return _candidate_runs(sc, steps + 1, min(1e12, (steps + 3) * one), read,
                               seeds=(sc.seed,) if seeds is None else seeds, record="samples")
    except _Incomplete as e:
        raise invalid("steps", f"the fully asynchronous run completed {e}") from None
