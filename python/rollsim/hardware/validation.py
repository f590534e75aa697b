"""The resource model against published measurements: every row with its setting, the measured and
predicted value, the error and the source (``rollsim validate --resources``).

:func:`serving_rows` are the decode and prefill measurements the serving engine's global terms are
fitted on (:func:`rollsim.hardware.serving.fit`), plus a few held-out checks (``fit=False``).
Other parts of the resource model add their rows to :data:`ROW_BUILDERS` (a builder returns a list
of :class:`Row`); :func:`table` evaluates them all.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import polars as pl

from . import serving
from .rows import Row
from .serving import FIT_LOWER, FIT_TERMS, EngineParams, engine_params

__all__ = ["Row", "serving_rows", "fit", "table", "ROW_BUILDERS", "SHAREGPT_INPUT_TOKENS", "SHAREGPT_OUTPUT_TOKENS",
           "format_table", "summary"]

#: Mean input / output tokens of the ShareGPT benchmark of ``vllm bench serve --num-prompts 1000``
#: (217,393 and 201,422 tokens over 1,000 requests: gpustack/gpustack docs/performance-lab/qwen3-32b/h100.md).
SHAREGPT_INPUT_TOKENS = 217.4
SHAREGPT_OUTPUT_TOKENS = 201.4
_SG_CTX = SHAREGPT_INPUT_TOKENS + SHAREGPT_OUTPUT_TOKENS / 2
_SG_PREFILL = SHAREGPT_INPUT_TOKENS / SHAREGPT_OUTPUT_TOKENS  # prompt tokens prefilled per decoded token

_GPUSTACK = "gpustack/gpustack docs/performance-lab/"
_TT = "tenstorrent/tt-inference-server issue 340"


def _tpot(label: str, setting: str, src: str, m: str, gpu: str, tp: int, batch: float, ctx: float, tpot_ms: float,
          *, prefill_per_token: float = 0.0, engine: str = "vllm", fit: bool = True, note: str = "",
          quantity: str = "TPOT ms", display: Callable[[float], float] | None = None, measured: float | None = None
          ) -> Row:
    def t(p: EngineParams) -> float:
        return serving.step_time(m, gpu, tp=tp, batch=batch, context_tokens=ctx,
                                 prefill_tokens=batch * prefill_per_token, params=p)["total_s"]

    return Row(label, setting, quantity, tpot_ms if measured is None else measured, src, t, tpot_ms / 1e3,
               display or (lambda s: s * 1e3), fit, "decode", note)


def _ttft(label: str, setting: str, src: str, m: str, gpu: str, tokens: float, ttft_ms: float) -> Row:
    def t(p: EngineParams) -> float:
        return serving.prefill_s(m, gpu, tokens=tokens, engine=p)

    return Row(label, setting, "prefill tok/s", tokens / (ttft_ms / 1e3), src, t, ttft_ms / 1e3,
               lambda s: tokens / s, True, "prefill", "prefill = input / TTFT (one request alone)")


def _long_prompts(label: str, setting: str, src: str, m: str, gpu: str, inp: float, out: float, requests: int,
                  duration_s: float, *, fit: bool = True) -> Row:
    """A random-dataset run whose prompts leave room for few sequences: per request, its prompt's
    prefill (compute shared by the instance) plus ``out`` decode steps shared by the running batch.
    (Simulating the run instead, :func:`rollsim.hardware.serving_benchmark`, is 1-3 points further
    off on the three such rows: ``tests/test_serving_benchmark.py``.)"""
    def t(p: EngineParams) -> float:
        b = min(requests, serving.max_batch(m, gpu, context_tokens=inp + out / 2, engine=p))
        pre = serving.prefill_s(m, gpu, tokens=inp, engine=p) - p.request_overhead_s
        step = serving.step_time(m, gpu, batch=b, context_tokens=inp + out / 2, params=p)["total_s"]
        return pre + out * step / b

    per = duration_s / requests
    return Row(label, setting, "total tok/s", (inp + out) / per, src, t, per, lambda s: (inp + out) / s, fit,
               "prefill", "concurrency from the predicted KV capacity (vLLM defaults, max-model-len 40,960)")


def _rate(tokens_per_step: float) -> Callable[[float], float]:
    return lambda s: tokens_per_step / s


def serving_rows() -> list[Row]:
    """The decode and prefill rows (published settings; see each row's source)."""
    rows: list[Row] = []
    sg = f"ShareGPT, mean {SHAREGPT_INPUT_TOKENS:.0f} in / {SHAREGPT_OUTPUT_TOKENS:.0f} out"
    little = ("concurrency = throughput x TPOT (Little's law) [derived]; chunked prefill of the prompts shares "
              "the steps")
    for tp, thr, tpot in ((1, 2901.0, 54.1), (2, 7649.0, 86.5), (4, 11327.0, 55.8)):
        b = thr * tpot / 1e3
        rows.append(_tpot(f"gpt-oss-120b H100 TP{tp}", f"vLLM v0.10.2, gpt-oss-120b, {tp} H100, {sg}, 1000 prompts",
                          _GPUSTACK + "gpt-oss-120b/h100.md", "gpt-oss-120b", "H100", tp, b, _SG_CTX, tpot,
                          prefill_per_token=_SG_PREFILL, note=little + f" ({b:.0f} sequences)",
                          quantity="output tok/s", measured=thr, display=_rate(b)))
    rows.append(_tpot("Qwen3-8B H100 conc 4 vLLM", f"vLLM v0.11.0, Qwen3-8B, 1 H100 SXM, {sg}, concurrency 4",
                      _GPUSTACK + "qwen3-8b/h100-latency.md", "Qwen3-8B", "H100", 1, 4, _SG_CTX, 7.38,
                      prefill_per_token=_SG_PREFILL))
    rows.append(_tpot("Qwen3-8B H100 conc 4 SGLang", f"SGLang 0.5.3, Qwen3-8B, 1 H100 SXM, {sg}, concurrency 4",
                      _GPUSTACK + "qwen3-8b/h100-latency.md", "Qwen3-8B", "H100", 1, 4, _SG_CTX, 7.19,
                      prefill_per_token=_SG_PREFILL, engine="sglang"))
    b32 = 1131.6 * 88.1 / 1e3
    rows.append(_tpot("Qwen3-32B H100 ShareGPT", f"vLLM v0.11.0, Qwen3-32B, 1 H100, {sg}, 1000 prompts",
                      _GPUSTACK + "qwen3-32b/h100.md", "Qwen3-32B", "H100", 1, b32, _SG_CTX, 88.1,
                      prefill_per_token=_SG_PREFILL, note=little + f" ({b32:.0f} sequences)",
                      quantity="output tok/s", measured=1131.6, display=_rate(b32)))
    for name, tpot in (("Qwen3-30B-A3B", 9.6), ("Qwen3-0.6B", 4.2), ("Qwen3-1.7B", 4.6)):
        rows.append(_tpot(f"{name} A100 conc 1", f"{name}, A100, concurrency 1, 128 in / 128 out", _TT, name,
                          "A100-80G", 1, 1, 192.0, tpot, note="A100 80 GB assumed"))
    bl = 256.0
    rows.append(_tpot("Llama-3-8B H100 throughput", "vLLM (Aug 2024), Llama-3-8B, 1 H100, benchmark_throughput "
                      "256 in / 256 out", "vllm-project/vllm PR 7117", "Llama-3.1-8B", "H100", 1, bl, 384.0,
                      bl / (24.3 * 256) * 1e3, prefill_per_token=1.0, quantity="total tok/s", measured=12453.0,
                      display=lambda s: 2 * bl / s, note="256 running sequences (max_num_seqs default of the time)"))
    rows.append(_tpot("Qwen3-4B H20 last sequence", "Qwen3-4B, H20, the last sequence of a rollout batch decoding "
                      "alone", "Tencent-Hunyuan/UniRL issue 94", "Qwen3-4B", "H20", 1, 1, 8192.0, 1e3 / 130.0,
                      quantity="tok/s", measured=130.0, display=lambda s: 1 / s,
                      note="context 8,192 (the run's max new tokens) assumed"))
    # prefill
    for tokens, thr in ((1024, 14560.0), (2048, 25292.0), (4096, 54463.0)):
        rows.append(_ttft(f"Qwen3-30B-A3B A100 prefill {tokens}", f"Qwen3-30B-A3B, A100, concurrency 1, {tokens} in",
                          _TT, "Qwen3-30B-A3B", "A100-80G", tokens, tokens / thr * 1e3))
    for tokens, thr in ((1024, 38833.0), (2048, 66234.0)):
        rows.append(_ttft(f"Qwen3-1.7B A100 prefill {tokens}", f"Qwen3-1.7B, A100, concurrency 1, {tokens} in", _TT,
                          "Qwen3-1.7B", "A100-80G", tokens, tokens / thr * 1e3))
    q32 = _GPUSTACK + "qwen3-32b/h100.md"
    rows.append(_long_prompts("Qwen3-32B H100 32k prompts", "vLLM v0.11.0, Qwen3-32B, 1 H100, 100 random prompts of "
                              "32,000 tokens, 100 out", q32, "Qwen3-32B", "H100", 32000, 100, 100, 1157.25))
    rows.append(_long_prompts("Qwen3-32B H100 4k prompts", "vLLM v0.11.0, Qwen3-32B, 1 H100, 500 random prompts of "
                              "4,000 tokens, 200 out", q32, "Qwen3-32B", "H100", 4000, 200, 500, 976.29))
    # held-out checks (same page, not in the fit)
    rows.append(_long_prompts("Qwen3-32B H100 2k prompts", "vLLM v0.11.0, Qwen3-32B, 1 H100, 500 random prompts of "
                              "2,000 tokens, 100 out", q32, "Qwen3-32B", "H100", 2000, 100, 500, 328.04, fit=False))
    b32s = 814.03 * 57.86 / 1e3
    rows.append(_tpot("Qwen3-32B H100 ShareGPT SGLang", f"SGLang v0.5.5, Qwen3-32B, 1 H100, {sg}, 1000 prompts", q32,
                      "Qwen3-32B", "H100", 1, b32s, _SG_CTX, 57.86, prefill_per_token=_SG_PREFILL, engine="sglang",
                      fit=False, note=little + f" ({b32s:.0f} sequences)", quantity="output tok/s", measured=814.03,
                      display=_rate(b32s)))
    return rows


def _training_rows() -> list[Row]:
    from .training import table_rows
    return table_rows()


def _switching_rows() -> list[Row]:
    from .switching import table_rows
    return table_rows()


#: Builders of validation rows; other parts of the resource model (training, switching) append theirs.
ROW_BUILDERS: list[Callable[[], list[Row]]] = [serving_rows, _training_rows, _switching_rows]


def table(params: EngineParams | None = None, rows: list[Row] | None = None) -> pl.DataFrame:
    """Every row: ``area, label, quantity, measured, predicted, error`` (predicted / measured - 1),
    ``within_25pct, fit, setting, source, note``."""
    rows = rows if rows is not None else [r for b in ROW_BUILDERS for r in b()]
    recs: list[dict[str, Any]] = []
    for r in rows:
        pred = r.predicted(params)
        err = pred / r.measured - 1.0
        recs.append({"area": r.area, "label": r.label, "quantity": r.quantity, "measured": r.measured,
                     "predicted": pred, "error": err, "within_25pct": abs(err) <= 0.25, "fit": r.fit,
                     "setting": r.setting, "source": r.source, "note": r.note})
    return pl.DataFrame(recs)


def summary(df: pl.DataFrame) -> str:
    """One line: how many rows are within 25 %, in all and per area (in the table's order of areas),
    and how many of the decode, prefill and training rows (the accuracy target: decode throughput and
    step-phase times) are."""
    n = df.height
    k = int(df["within_25pct"].sum())
    med = float(df["error"].abs().median())  # type: ignore[arg-type]
    areas = list(dict.fromkeys(df["area"].to_list()))
    per = ", ".join(f"{a} {int(df.filter(pl.col('area') == a)['within_25pct'].sum())}/"
                    f"{df.filter(pl.col('area') == a).height}" for a in areas)
    core = df.filter(pl.col("area").is_in(["decode", "prefill", "training"]))
    kc = int(core["within_25pct"].sum())
    line = f"{k} of {n} rows within 25 % of measured ({k / n:.1%}); median |error| {med:.1%}; {per}"
    if core.height:
        line += f"; decode, prefill and training {kc} of {core.height} ({kc / core.height:.1%})"
    return line


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def format_table(df: pl.DataFrame, *, markdown: bool = False) -> str:
    """The table as text, after a line that says what its columns are (the sign of ``error``:
    predicted / measured - 1), or a Markdown table for the README."""
    lines = []
    if markdown:
        lines.append("| measurement | quantity | measured | predicted | error | source |")
        lines.append("|---|---|---:|---:|---:|---|")
        for r in df.iter_rows(named=True):
            mark = "" if r["fit"] else " (held out)"
            lines.append(f"| {str(r['setting'])}{mark} | {r['quantity']} | {_num(r['measured'])} | "
                         f"{_num(r['predicted'])} | {r['error']:+.0%} | {r['source']} |")
    else:
        lines.append("error = predicted / measured - 1 in the row's quantity (as the README tables: + means predicted "
                     "above measured), then the row, its quantity, measured, predicted and source; * held out of the fit")
        for r in df.iter_rows(named=True):
            mark = " " if r["fit"] else "*"
            lines.append(f"{r['error']:+7.1%}{mark} {r['label']:<34} {r['quantity']:<14} measured "
                         f"{_num(r['measured']):>8}  predicted {_num(r['predicted']):>8}  {r['source']}")
    return "\n".join(lines)


def fit(rows: list[Row] | None = None, *, engine: str = "vllm", verbose: bool = False) -> dict[str, Any]:
    """Fit the six global terms of ``engine`` (:data:`FIT_TERMS`) once, by least squares on the
    relative errors of the published decode / prefill measurements (every row counts once).

    The model is linear in those terms (each row's predicted time is a sum of term x feature), so
    the fit is exact least squares with a non-negativity bound (numpy), no per-case parameter.

    Parameters
    ----------
    rows : list of validation rows, optional
        Default :func:`serving_rows` with ``fit=True``.
    engine : str
        Which engine's fixed terms (all-reduce, memory) to use.
    verbose : bool
        Print the fitted terms and every row's residual.

    Returns
    -------
    dict
        ``params`` (an :class:`EngineParams`), ``terms`` (name -> value) and ``residuals`` (row
        label -> relative error of the predicted time).
    """
    import numpy as np

    rows = [r for r in (rows if rows is not None else serving_rows()) if r.fit]
    base = engine_params(engine)
    # features: the row's predicted time with one term set to 1 and the others to 0
    feats = []
    for r in rows:
        f = []
        for term in FIT_TERMS:
            unit = _with(base, {t: (1.0 if t == term else 0.0) for t in FIT_TERMS})
            zero = _with(base, {t: 0.0 for t in FIT_TERMS})
            f.append(r.time_s(unit) - r.time_s(zero))
        feats.append(f)
    zero = _with(base, {t: 0.0 for t in FIT_TERMS})
    fixed = np.array([r.time_s(zero) for r in rows])
    meas = np.array([r.measured_time_s for r in rows])
    A = np.array(feats)
    lo = np.array(FIT_LOWER)
    floor = fixed + A @ lo  # every row's time at the datasheet peaks with no overhead
    keep = floor <= meas
    excluded = [r.label for r, k in zip(rows, keep) if not k]
    An = A[keep] / meas[keep, None]
    y = 1.0 - floor[keep] / meas[keep]
    x = lo + _nnls(An, y)
    terms = dict(zip(FIT_TERMS, (float(v) for v in x)))
    params = _with(base, terms)
    res = {r.label: r.time_s(params) / r.measured_time_s - 1.0 for r in rows}
    if verbose:
        print("fitted terms:", ", ".join(f"{k}={v:.4g}" for k, v in terms.items()))
        print("residual of each fitted row = predicted / measured time - 1 (the fit works on times: a throughput "
              "row's error in the table below, in tok/s, has the opposite sign)")
        for k, v in res.items():
            print(f"  {v:+7.1%}  {k}{'  (faster than the datasheet roofline: not fitted)' if k in excluded else ''}")
    return {"params": params, "terms": terms, "residuals": res, "excluded": excluded}


def _with(base: EngineParams, values: dict[str, float]) -> EngineParams:
    kw: dict[str, Any] = dict(values)
    return replace(base, **kw)


def _nnls(A: Any, y: Any, iters: int = 200) -> Any:
    """Non-negative least squares ``min |A x - y|, x >= 0`` (Lawson and Hanson's active-set method)."""
    import numpy as np

    n = A.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iters):
        w = A.T @ (y - A @ x)
        if passive.all() or (w[~passive] <= 1e-12).all():
            break
        j = int(np.argmax(np.where(passive, -np.inf, w)))
        passive[j] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(A[:, passive], y, rcond=None)[0]
            if (z[passive] > 0).all():
                x = z
                break
            neg = passive & (z <= 0)
            alpha = np.min(x[neg] / (x[neg] - z[neg]))
            x = x + alpha * (z - x)
            passive &= x > 1e-12
    return x

