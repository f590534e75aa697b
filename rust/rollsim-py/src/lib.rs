//! Thin PyO3 bindings of `rollsim-core`: converts scenario dicts, releases the GIL while the engine
//! runs, hands result columns to numpy without copying, and turns every engine error (and any
//! panic) into a Python exception.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::import_exception;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

mod sync;

use rollsim_core::pipeline::agentic::{AgenticConfig, AgenticResult, Dist, KvPolicy, OnFailure};
use rollsim_core::scenario::{BatchOrder, Decode, LagRelease, OnStale, OnUpdate, PartialRollout, Prefill, Streaming};
use rollsim_core::{Error, Lengths, Pipeline, RngKind, RunOptions, RunResult, Scenario, Summary};

// The exceptions are defined in Python (`rollsim/errors.py`), so that they pickle and cross Ray or
// multiprocessing boundaries; the bindings raise those classes.
import_exception!(rollsim.errors, ScenarioError);
import_exception!(rollsim.errors, RunLimitError);

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Interrupted => PyKeyboardInterrupt::new_err("rollsim run interrupted"),
        Error::TooManySamples { .. } => RunLimitError::new_err(e.to_string()),
        other => ScenarioError::new_err(other.to_string()),
    }
}

fn panic_err(p: Box<dyn std::any::Any + Send>) -> PyErr {
    let msg = p
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    PyRuntimeError::new_err(format!("internal error in the rollsim engine (please report): {msg}"))
}

/// Runs `f`, turning a panic into `RuntimeError` (nothing the bindings do may unwind into Python).
fn guard<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| Err(panic_err(p)))
}

/// `key: <conversion error>` on one line.
fn conversion_err(key: &str, e: PyErr) -> PyErr {
    let msg = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
    ScenarioError::new_err(format!("{key}: {msg}"))
}

/// Prefixes the field name of a ScenarioError raised while converting a part (`lengths.`, `pipeline.`).
fn in_part<T>(py: Python<'_>, prefix: &str, r: PyResult<T>) -> PyResult<T> {
    r.map_err(|e| {
        if e.is_instance_of::<ScenarioError>(py) {
            let msg = e.value(py).to_string();
            if msg.starts_with(prefix) {
                e
            } else {
                ScenarioError::new_err(format!("{prefix}{msg}"))
            }
        } else {
            e
        }
    })
}

fn item<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &'static str) -> PyResult<T> {
    let v = d.get_item(key)?.ok_or_else(|| ScenarioError::new_err(format!("{key}: missing")))?;
    v.extract::<T>().map_err(|e| conversion_err(key, e.into()))
}

/// An optional key: its default when missing or None.
fn opt_item<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, key: &'static str, default: T) -> PyResult<T> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v.extract::<T>().map_err(|e| conversion_err(key, e.into())),
        _ => Ok(default),
    }
}

fn lengths_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Lengths> {
    Ok(match item::<String>(d, "kind")?.as_str() {
        "lognormal" => Lengths::LogNormal {
            mu: item(d, "mu")?,
            sigma: item(d, "sigma")?,
            max_tokens: item(d, "max_tokens")?,
            group_correlation: opt_item(d, "group_correlation", 0.0)?,
        },
        "empirical" => {
            let values: PyReadonlyArray1<'_, f64> = item(d, "values")?;
            let values = values.as_array().to_vec();
            let offsets: Option<PyReadonlyArray1<'_, i64>> = opt_item(d, "group_offsets", None)?;
            if let Some(o) = offsets {
                if let Some(x) = o.as_array().iter().find(|x| **x < 0) {
                    return Err(ScenarioError::new_err(format!("lengths.groups: offsets must be >= 0, got {x}")));
                }
                let o: Vec<usize> = o.as_array().iter().map(|x| *x as usize).collect();
                Lengths::grouped(values, o).map_err(to_py_err)?
            } else {
                let weights: Option<PyReadonlyArray1<'_, f64>> = item(d, "weights")?;
                Lengths::empirical(values, weights.map(|w| w.as_array().to_vec())).map_err(to_py_err)?
            }
        }
        other => return Err(ScenarioError::new_err(format!("lengths.kind: unknown kind {other:?}"))),
    })
}

fn pipeline_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Pipeline> {
    Ok(match item::<String>(d, "kind")?.as_str() {
        "off_policy" => Pipeline::OffPolicy {
            k: item(d, "k")?,
            partial: PartialRollout {
                over_sampling: opt_item(d, "over_sampling", None)?,
                keep_partial: opt_item(d, "keep_partial", false)?,
            },
        },
        "fully_async" => {
            let on_stale = match opt_item::<String>(d, "on_stale", "drop".into())?.as_str() {
                "drop" => OnStale::Drop,
                "requeue" => OnStale::Requeue,
                other => {
                    return Err(ScenarioError::new_err(format!(
                        "pipeline.on_stale: must be 'drop' or 'requeue', got {other:?}"
                    )))
                }
            };
            let on_update = match opt_item::<String>(d, "on_update", "continue".into())?.as_str() {
                "continue" => OnUpdate::Continue,
                "abort_drop" => OnUpdate::AbortDrop,
                "abort_resubmit" => OnUpdate::AbortResubmit,
                "wait" => OnUpdate::Wait,
                "keep_recompute" => OnUpdate::KeepRecompute,
                "keep_stale" => OnUpdate::KeepStale,
                other => return Err(ScenarioError::new_err(format!("pipeline.on_update: unknown mode {other:?}"))),
            };
            let lag_release = match opt_item::<String>(d, "lag_release", "take".into())?.as_str() {
                "take" => LagRelease::Take,
                "sync" => LagRelease::Sync,
                other => {
                    return Err(ScenarioError::new_err(format!(
                        "pipeline.lag_release: must be 'take' or 'sync', got {other:?}"
                    )))
                }
            };
            let batch_order = match d.get_item("batch_order")? {
                None => BatchOrder::Fifo,
                Some(v) if v.is_none() => BatchOrder::Fifo,
                Some(v) => match v.extract::<String>() {
                    Ok(s) if s == "fifo" => BatchOrder::Fifo,
                    Ok(s) if s == "oldest_first" => BatchOrder::OldestFirst,
                    Ok(s) => return Err(ScenarioError::new_err(format!("pipeline.batch_order: unknown order {s:?}"))),
                    Err(_) => {
                        let b = v.cast::<PyDict>().map_err(|_| {
                            ScenarioError::new_err(format!(
                                "pipeline.batch_order: must be 'fifo', 'oldest_first' or a dict {{edges, quotas}}, got {v}"
                            ))
                        })?;
                        BatchOrder::LengthBalanced { edges: item(b, "edges")?, quotas: item(b, "quotas")? }
                    }
                },
            };
            Pipeline::FullyAsync(Streaming {
                max_staleness: opt_item(d, "max_staleness", None)?,
                on_stale,
                admission_eta: opt_item(d, "admission_eta", None)?,
                max_lag_samples: opt_item(d, "max_lag_samples", None)?,
                lag_release,
                max_ready_groups: opt_item(d, "max_ready_groups", None)?,
                batch_order,
                on_update,
            })
        }
        other => return Err(ScenarioError::new_err(format!("pipeline.kind: unknown kind {other:?}"))),
    })
}

/// `decode_throughput_table`: a list of `[batch size, tokens/s]` pairs (or None); the engine checks
/// the values.
fn throughput_table(d: &Bound<'_, PyDict>) -> PyResult<Vec<(u32, f64)>> {
    const F: &str = "decode_throughput_table";
    let rows: Vec<Vec<f64>> = opt_item(d, F, Vec::new())?;
    rows.iter()
        .enumerate()
        .map(|(i, r)| match r[..] {
            [n, tp] if n.fract() == 0.0 && (1.0..=u32::MAX as f64).contains(&n) => Ok((n as u32, tp)),
            _ => Err(ScenarioError::new_err(format!(
                "{F}: must be a list of [running sequences (integer >= 1), tokens/s] pairs; item {i} is {r:?}"
            ))),
        })
        .collect()
}

fn scenario_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Scenario> {
    scenario_from_dict_with(d, None)
}

/// Like `scenario_from_dict`, with the lengths already converted (shared between runs).
fn scenario_from_dict_with(d: &Bound<'_, PyDict>, lengths: Option<Lengths>) -> PyResult<Scenario> {
    let lengths = match lengths {
        Some(l) => l,
        None => in_part(d.py(), "lengths.", lengths_from_dict(&item::<Bound<'_, PyDict>>(d, "lengths")?))?,
    };
    let pipeline = in_part(d.py(), "pipeline.", pipeline_from_dict(&item::<Bound<'_, PyDict>>(d, "pipeline")?))?;
    let rng = match item::<String>(d, "rng")?.as_str() {
        "python" => RngKind::Python,
        "fast" => RngKind::Fast,
        other => return Err(ScenarioError::new_err(format!("rng: must be 'python' or 'fast', got {other:?}"))),
    };
    Ok(Scenario {
        rollout_slots: item(d, "rollout_slots")?,
        decode_tokens_per_s: item(d, "decode_tokens_per_s")?,
        batch_size: item(d, "batch_size")?,
        train_step_s: item(d, "train_step_s")?,
        train_s_per_token: opt_item(d, "train_s_per_token", 0.0)?,
        horizon_s: item(d, "horizon_s")?,
        lengths,
        pipeline,
        group_size: opt_item(d, "group_size", 1)?,
        decode: Decode {
            slots_per_instance: opt_item(d, "slots_per_instance", 0)?,
            slowdown_per_seq: opt_item(d, "decode_slowdown_per_seq", 0.0)?,
            throughput_table: throughput_table(d)?,
            kv_cache_tokens: opt_item(d, "kv_cache_tokens", 0.0)?,
        },
        prefill: Prefill {
            prompt_tokens: opt_item(d, "prompt_tokens", 0.0)?,
            prefill_tokens_per_s: opt_item(d, "prefill_tokens_per_s", f64::INFINITY)?,
            prefix_sharing: opt_item(d, "prefix_sharing", true)?,
            clear_cache_on_update: opt_item(d, "clear_cache_on_update", true)?,
        },
        rollout_pause_s: opt_item(d, "rollout_pause_s", 0.0)?,
        seed: item(d, "seed")?,
        rng,
        agentic: match d.get_item("agentic")? {
            Some(a) if !a.is_none() => Some(in_part(d.py(), "agentic.", agentic_from_dict(a.cast::<PyDict>()?))?),
            _ => None,
        },
    })
}

/// A constant (a number) or a lengths dict.
fn dist_from(d: &Bound<'_, PyDict>, key: &'static str) -> PyResult<Dist> {
    match d.get_item(key)? {
        Some(v) if v.is_instance_of::<PyDict>() => {
            Ok(Dist::Of(in_part(d.py(), &format!("{key}."), lengths_from_dict(v.cast::<PyDict>()?))?))
        }
        Some(_) => Ok(Dist::Const(item(d, key)?)),
        None => Ok(Dist::Const(0.0)),
    }
}

/// `Scenario.agentic` (`rollsim.agentic.Agentic.to_dict()`).
fn agentic_from_dict(d: &Bound<'_, PyDict>) -> PyResult<AgenticConfig> {
    let kv_policy = match opt_item::<String>(d, "kv_policy", "keep".into())?.as_str() {
        "keep" => KvPolicy::Keep,
        "drop" => KvPolicy::Drop,
        "hold" => KvPolicy::Hold,
        other => {
            return Err(ScenarioError::new_err(format!("kv_policy: must be 'keep', 'drop' or 'hold', got {other:?}")))
        }
    };
    let on_failure = match opt_item::<String>(d, "on_failure", "drop".into())?.as_str() {
        "drop" => OnFailure::Drop,
        "retry" => OnFailure::Retry,
        other => return Err(ScenarioError::new_err(format!("on_failure: must be 'drop' or 'retry', got {other:?}"))),
    };
    Ok(AgenticConfig {
        turn_scale: opt_item(d, "turn_scale", Vec::new())?,
        tool_latency_s: dist_from(d, "tool_latency_s")?,
        observation_tokens: dist_from(d, "observation_tokens")?,
        stop_prob: opt_item(d, "stop_prob", 0.0)?,
        max_turns: item(d, "max_turns")?,
        max_context_tokens: opt_item(d, "max_context_tokens", f64::INFINITY)?,
        kv_policy,
        sticky: opt_item(d, "sticky", true)?,
        env_slots: opt_item(d, "env_slots", 0)?,
        max_trajectories: opt_item(d, "max_trajectories", 0)?,
        env_overhead_s: opt_item(d, "env_overhead_s", 0.0)?,
        failure_rate: opt_item(d, "failure_rate", 0.0)?,
        on_failure,
        switch_version_at_turn: opt_item(d, "switch_version_at_turn", true)?,
    })
}

/// The agentic part of a run's result: `{"summary": dict, "columns": dict of numpy arrays | None}`.
fn agentic_dict<'py>(py: Python<'py>, a: AgenticResult) -> PyResult<Bound<'py, PyDict>> {
    let s = &a.summary;
    let d = PyDict::new(py);
    d.set_item("turns", s.turns)?;
    d.set_item("tool_calls", s.tool_calls)?;
    d.set_item("tool_retries", s.tool_retries)?;
    d.set_item("trajectories_truncated", s.trajectories_truncated)?;
    d.set_item("trajectories_failed", s.trajectories_failed)?;
    d.set_item("tokens_observed", s.tokens_observed)?;
    d.set_item("tokens_prefilled_turns", s.tokens_prefilled_turns)?;
    d.set_item("env_busy_s", s.env_busy_s)?;
    d.set_item("env_wait_s", s.env_wait_s)?;
    d.set_item("env_utilization", s.env_utilization)?;
    d.set_item("env_mean_busy", s.env_mean_busy)?;
    d.set_item("gpu_hold_s", s.gpu_hold_s)?;
    d.set_item("gpu_prefill_s", s.gpu_prefill_s)?;
    d.set_item("gpu_decode_s", s.gpu_decode_s)?;
    let out = PyDict::new(py);
    out.set_item("summary", d)?;
    match a.columns {
        None => out.set_item("columns", py.None())?,
        Some(c) => {
            let d = PyDict::new(py);
            d.set_item("turns", PyArray1::from_vec(py, c.turns))?;
            d.set_item("tokens_observed", PyArray1::from_vec(py, c.tokens_observed))?;
            d.set_item("tool_s", PyArray1::from_vec(py, c.tool_s))?;
            d.set_item("env_wait_s", PyArray1::from_vec(py, c.env_wait_s))?;
            d.set_item("prefill_tokens", PyArray1::from_vec(py, c.prefill_tokens))?;
            d.set_item("tool_retries", PyArray1::from_vec(py, c.tool_retries))?;
            d.set_item("truncated", PyArray1::from_vec(py, c.truncated))?;
            d.set_item("failed", PyArray1::from_vec(py, c.failed))?;
            out.set_item("columns", d)?;
        }
    }
    match a.turns {
        None => out.set_item("turns", py.None())?,
        Some(c) => {
            let d = PyDict::new(py);
            d.set_item("sample_id", PyArray1::from_vec(py, c.sample_id))?;
            d.set_item("turn", PyArray1::from_vec(py, c.turn))?;
            d.set_item("slot", PyArray1::from_vec(py, c.slot))?;
            d.set_item("start_s", PyArray1::from_vec(py, c.start_s))?;
            d.set_item("end_s", PyArray1::from_vec(py, c.end_s))?;
            d.set_item("version", PyArray1::from_vec(py, c.version))?;
            d.set_item("call_end_s", PyArray1::from_vec(py, c.call_end_s))?;
            out.set_item("turns", d)?;
        }
    }
    Ok(out)
}

fn summary_dict<'py>(py: Python<'py>, s: &Summary) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("steps", s.steps)?;
    d.set_item("steps_started", s.steps_started)?;
    d.set_item("end_s", s.end_s)?;
    d.set_item("rollout_utilization", s.rollout_utilization)?;
    d.set_item("slot_busy_s", s.slot_busy_s)?;
    d.set_item("slot_idle_s", s.slot_idle_s)?;
    d.set_item("trainer_busy_s", s.trainer_busy_s)?;
    d.set_item("trainer_idle_s", s.trainer_idle_s)?;
    d.set_item("samples_started", s.samples_started)?;
    d.set_item("samples_finished", s.samples_finished)?;
    d.set_item("samples_trained", s.samples_trained)?;
    d.set_item("samples_dropped", s.samples_dropped)?;
    d.set_item("samples_aborted", s.samples_aborted)?;
    d.set_item("groups_requeued", s.groups_requeued)?;
    d.set_item("staleness_at_finish_mean", s.staleness_at_finish_mean)?;
    d.set_item("staleness_group_mean", s.staleness_group_mean)?;
    d.set_item("tokens_prefilled", s.tokens_prefilled)?;
    d.set_item("tokens_recomputed", s.tokens_recomputed)?;
    d.set_item("preemptions", s.preemptions)?;
    d.set_item("kv_wait_s", s.kv_wait_s)?;
    d.set_item("stalled", s.stalled)?;
    d.set_item("samples_ready", s.samples_ready)?;
    d.set_item("samples_in_flight", s.samples_in_flight)?;
    d.set_item("drop_fraction", s.drop_fraction)?;
    d.set_item("staleness_mean", s.staleness_mean)?;
    d.set_item("staleness_max", s.staleness_max)?;
    d.set_item("staleness_mean_short", s.staleness_mean_short)?;
    d.set_item("staleness_mean_long", s.staleness_mean_long)?;
    d.set_item("samples_trained_short", s.samples_trained_short)?;
    d.set_item("samples_trained_long", s.samples_trained_long)?;
    d.set_item("tokens_generated", s.tokens_generated)?;
    d.set_item("tokens_trained", s.tokens_trained)?;
    d.set_item("tokens_wasted", s.tokens_wasted)?;
    d.set_item("tokens_pending", s.tokens_pending)?;
    d.set_item("events", s.events)?;
    d.set_item("ready_queue_growth_per_step", s.ready_queue_growth_per_step)?;
    d.set_item("generation_outruns_training", s.generation_outruns_training)?;
    d.set_item("throughput_ratio", s.throughput_ratio)?;
    Ok(d)
}

fn result_dict<'py>(py: Python<'py>, r: RunResult) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("summary", summary_dict(py, &r.summary)?)?;
    if let Some(a) = r.agentic {
        out.set_item("agentic", agentic_dict(py, a)?)?;
    }
    match r.samples {
        None => out.set_item("samples", py.None())?,
        Some(c) => {
            let d = PyDict::new(py);
            d.set_item("length_tokens", PyArray1::from_vec(py, c.length_tokens))?;
            d.set_item("group_id", PyArray1::from_vec(py, c.group_id))?;
            d.set_item("version_end", PyArray1::from_vec(py, c.version_end))?;
            d.set_item("version_finish", PyArray1::from_vec(py, c.version_finish))?;
            d.set_item("n_versions", PyArray1::from_vec(py, c.n_versions))?;
            d.set_item("aborted", PyArray1::from_vec(py, c.aborted))?;
            d.set_item("start_s", PyArray1::from_vec(py, c.start_s))?;
            d.set_item("finish_s", PyArray1::from_vec(py, c.finish_s))?;
            d.set_item("version_start", PyArray1::from_vec(py, c.version_start))?;
            d.set_item("trained_step", PyArray1::from_vec(py, c.trained_step))?;
            d.set_item("dropped", PyArray1::from_vec(py, c.dropped))?;
            d.set_item("slot", PyArray1::from_vec(py, c.slot))?;
            out.set_item("samples", d)?;
        }
    }
    match r.segments {
        None => out.set_item("segments", py.None())?,
        Some(c) => {
            let d = PyDict::new(py);
            d.set_item("sample_id", PyArray1::from_vec(py, c.sample_id))?;
            d.set_item("version", PyArray1::from_vec(py, c.version))?;
            d.set_item("first_token", PyArray1::from_vec(py, c.first_token))?;
            d.set_item("last_token", PyArray1::from_vec(py, c.last_token))?;
            out.set_item("segments", d)?;
        }
    }
    let s = r.steps;
    let d = PyDict::new(py);
    d.set_item("tokens_wasted", PyArray1::from_vec(py, s.tokens_wasted))?;
    d.set_item("tokens_recomputed", PyArray1::from_vec(py, s.tokens_recomputed))?;
    d.set_item("slot_idle_s", PyArray1::from_vec(py, s.slot_idle_s))?;
    d.set_item("start_s", PyArray1::from_vec(py, s.start_s))?;
    d.set_item("end_s", PyArray1::from_vec(py, s.end_s))?;
    d.set_item("staleness_mean", PyArray1::from_vec(py, s.staleness_mean))?;
    d.set_item("staleness_max", PyArray1::from_vec(py, s.staleness_max))?;
    d.set_item("wait_s", PyArray1::from_vec(py, s.wait_s))?;
    d.set_item("samples", PyArray1::from_vec(py, s.samples))?;
    d.set_item("ready_after", PyArray1::from_vec(py, s.ready_after))?;
    d.set_item("tokens", PyArray1::from_vec(py, s.tokens))?;
    out.set_item("steps", d)?;
    Ok(out)
}

/// Runs one scenario (a dict built by `rollsim.Scenario.to_dict()`), with the GIL released.
/// Returns `{"summary": dict, "samples": dict of numpy arrays | None, "steps": dict of numpy arrays}`.
/// Raises ScenarioError (a ValueError) on bad input, KeyboardInterrupt on Ctrl-C.
#[pyfunction]
#[pyo3(signature = (scenario, record_samples=true, max_samples=50_000_000, general_engine=false))]
fn simulate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    record_samples: bool,
    max_samples: u64,
    general_engine: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| simulate_inner(py, scenario, record_samples, max_samples, general_engine))
}

fn simulate_inner<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    record_samples: bool,
    max_samples: u64,
    general_engine: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = scenario_from_dict(scenario)?;
    let opts = RunOptions { record_samples, max_samples, general_engine, ..RunOptions::default() };
    let res = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            rollsim_core::run(&sc, &opts, &mut || Python::attach(|py| py.check_signals().is_err()))
        }))
    });
    let res = res.map_err(panic_err)?.map_err(to_py_err)?;
    result_dict(py, res)
}

/// Runs many scenarios in summary mode across `threads` threads (0 = all cores), with the GIL
/// released. Returns a list with, per scenario, a summary dict or the exception it raised.
/// `progress(done, total)` is called about ten times a second. Ctrl-C stops the remaining runs and
/// raises KeyboardInterrupt.
#[pyfunction]
#[pyo3(signature = (scenarios, threads=0, max_samples=50_000_000, progress=None))]
fn simulate_many<'py>(
    py: Python<'py>,
    scenarios: &Bound<'py, PyList>,
    threads: usize,
    max_samples: u64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    guard(|| simulate_many_inner(py, scenarios, threads, max_samples, progress))
}

/// Largest `threads` accepted by `simulate_many` (as `rollsim.sweep`).
const MAX_THREADS: usize = 4096;

fn simulate_many_inner<'py>(
    py: Python<'py>,
    scenarios: &Bound<'py, PyList>,
    threads: usize,
    max_samples: u64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyList>> {
    if threads > MAX_THREADS {
        return Err(ScenarioError::new_err(format!("threads: must be in [0, {MAX_THREADS}], got {threads}")));
    }
    if let Some(p) = &progress {
        if !p.is_callable() {
            return Err(ScenarioError::new_err("progress: must be None or a callable f(done, total)"));
        }
    }
    // Empirical length arrays are converted once per distinct array object, not once per run
    // (a sweep's scenarios usually share one data set): `Lengths` holds them behind an `Arc`.
    let mut cache: Vec<((usize, usize, usize), Lengths)> = Vec::new();
    let mut scs: Vec<Scenario> = Vec::with_capacity(scenarios.len());
    for (i, d) in scenarios.iter().enumerate() {
        let d = d.cast::<PyDict>().map_err(|_| ScenarioError::new_err(format!("scenarios[{i}]: must be a dict")))?;
        let lengths: Bound<'_, PyDict> = item(d, "lengths")?;
        let key = match lengths.get_item("values")? {
            Some(v) if !v.is_none() => {
                // identities of the arrays: all alive (held by `scenarios`) for the whole call
                let groups = lengths.get_item("group_offsets")?.map(|g| g.as_ptr() as usize).unwrap_or(0);
                let weights = lengths.get_item("weights")?.map(|w| w.as_ptr() as usize).unwrap_or(0);
                Some((v.as_ptr() as usize, weights, groups))
            }
            _ => None,
        };
        let mut sc = match key.and_then(|k| cache.iter().find(|(c, _)| *c == k)) {
            Some((_, l)) => {
                let l = l.clone();
                let mut sc = scenario_from_dict_with(d, Some(l))?;
                sc.seed = item(d, "seed")?;
                sc
            }
            None => scenario_from_dict(d)?,
        };
        if let Some(k) = key {
            if !cache.iter().any(|(c, _)| *c == k) {
                cache.push((k, sc.lengths.clone()));
            }
        }
        sc.seed = item(d, "seed")?;
        scs.push(sc);
    }
    let total = scs.len();
    let cancel = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let progress = progress.map(|p| p.unbind());
    let mut interrupted = false;
    let mut progress_err: Option<PyErr> = None;
    let results = py.detach(|| {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (scs, cancel_ref, done_ref) = (&scs, &cancel, &done);
        std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    rollsim_core::sweep::run_many(scs, threads, max_samples, cancel_ref, done_ref)
                }));
                let _ = tx.send(());
                r
            });
            // Wake up when the work is done, or every 100 ms for Ctrl-C and progress.
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(Duration::from_millis(100)) {
                Python::attach(|py| {
                    if py.check_signals().is_err() {
                        cancel.store(true, Ordering::Relaxed);
                        interrupted = true;
                    }
                    if let Some(p) = &progress {
                        if let Err(e) = p.call1(py, (done.load(Ordering::Relaxed), total)) {
                            // a failing progress callback stops the sweep; its error is raised
                            cancel.store(true, Ordering::Relaxed);
                            progress_err.get_or_insert(e);
                        }
                    }
                });
            }
            worker.join().unwrap_or_else(Err)
        })
    });
    let results = results.map_err(panic_err)?;
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err("rollsim sweep interrupted"));
    }
    if let Some(e) = progress_err {
        return Err(e);
    }
    if let Some(p) = &progress {
        p.call1(py, (done.load(Ordering::Relaxed), total))?;
    }
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok(s) => out.append(summary_dict(py, &s)?)?,
            Err(e) => out.append(to_py_err(e).into_value(py))?,
        }
    }
    Ok(out)
}

/// `random.Random(seed)`'s first `n` values of `random()`, from rollsim's CPython-compatible
/// generator (for tests).
#[pyfunction]
fn py_random_stream<'py>(py: Python<'py>, seed: u64, n: usize) -> PyResult<Bound<'py, PyArray1<f64>>> {
    check_stream_len(n)?;
    guard(|| {
        let mut r = rollsim_core::rng::PyRandom::new(seed);
        Ok(PyArray1::from_vec(py, (0..n).map(|_| r.random()).collect()))
    })
}

/// Largest `n` of the test streams (1 GiB of float64).
const MAX_STREAM: usize = 1 << 27;

fn check_stream_len(n: usize) -> PyResult<()> {
    if n > MAX_STREAM {
        return Err(ScenarioError::new_err(format!("n: must be in [0, {MAX_STREAM}], got {n}")));
    }
    Ok(())
}

/// `random.Random(seed).lognormvariate(mu, sigma)` `n` times, from rollsim's generator (for tests).
#[pyfunction]
fn py_lognormal_stream<'py>(
    py: Python<'py>,
    seed: u64,
    mu: f64,
    sigma: f64,
    n: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    use rollsim_core::rng::Source;
    check_stream_len(n)?;
    guard(|| {
        let mut r = rollsim_core::rng::PyRandom::new(seed);
        Ok(PyArray1::from_vec(py, (0..n).map(|_| r.lognormal(mu, sigma)).collect()))
    })
}

#[pymodule]
fn _rollsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(simulate_many, m)?)?;
    m.add_function(wrap_pyfunction!(py_random_stream, m)?)?;
    m.add_function(wrap_pyfunction!(py_lognormal_stream, m)?)?;
    sync::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
