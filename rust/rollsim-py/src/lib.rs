//! Thin PyO3 bindings of `rollsim-core`: converts scenario dicts, releases the GIL while the engine
//! runs, hands result columns to numpy without copying, and turns every engine error (and any
//! panic) into a Python exception.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError};
use pyo3::import_exception;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList};

mod many;
mod sync;

use rollsim_core::lengths::LengthDrift;
use rollsim_core::pipeline::agentic::{AgenticConfig, AgenticResult, Dist, KvPolicy, OnFailure};
use rollsim_core::record::Col;
use rollsim_core::scenario::{
    BatchOrder, Decode, Dispatch, LagRelease, OnStale, OnUpdate, PartialRollout, Prefill, PrefillMode, StalenessCheck,
    Streaming, TrainRanks, KV_CACHE_TOKENS, LOGPROB_S_PER_TOKEN, WEIGHT_SYNC_S,
};
use rollsim_core::schema;
use rollsim_core::{Error, Lengths, Pipeline, RngKind, RunOptions, RunResult, Scenario, Summary};

// The exceptions are defined in Python (`rollsim/errors.py`), so that they pickle and cross Ray or
// multiprocessing boundaries; the bindings raise those classes.
import_exception!(rollsim.errors, ScenarioError);
import_exception!(rollsim.errors, RunLimitError);

fn to_py_err(e: Error) -> PyErr {
    match e {
        Error::Interrupted => PyKeyboardInterrupt::new_err("rollsim run interrupted"),
        Error::TooManySamples { .. } | Error::TooManyEvents { .. } => RunLimitError::new_err(e.to_string()),
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

/// A lognormal lengths dict (`rollsim.LogNormal.to_dict()`), extracted in one typed pass: the
/// fields of the schema's `LogNormal` part (`group_correlation` absent or None: its default).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct WireLogNormal {
    #[allow(dead_code)] // read before (it picks this struct)
    kind: Arg<String>,
    #[pyo3(default)]
    mu: Arg<f64>,
    #[pyo3(default)]
    sigma: Arg<f64>,
    #[pyo3(default)]
    max_tokens: Arg<f64>,
    #[pyo3(default)]
    group_correlation: Arg<f64>,
}

/// A real field of the schema's part `class` (its range is checked by the engine, with the same
/// message); absent: `missing` if `required`, else the schema's default.
fn part_real(class: &str, name: &str, a: Arg<f64>, required: bool) -> PyResult<f64> {
    let f = part_spec(class, name);
    let (range, suffix) = match f.range {
        schema::Range::Real(b) => (b.range, format!("{}{}", b.unit, b.extra)),
        _ => unreachable!("{class}.{name} is a real field"),
    };
    match a {
        Arg::Missing if required => Err(ScenarioError::new_err(format!("{name}: missing"))),
        Arg::Missing => match f.default {
            schema::Value::Float(v) => Ok(v),
            _ => unreachable!("{class}.{name} has a real default"),
        },
        Arg::Given(v) => Ok(v),
        Arg::Huge(g) => Err(field_err(name, format!("must be in {range}{suffix}, got {g}"))),
        Arg::Bad(g) => Err(field_err(name, format!("must be a number, got {g}"))),
    }
}

fn lengths_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Lengths> {
    Ok(match item::<String>(d, "kind")?.as_str() {
        "lognormal" => {
            const LN: &str = "LogNormal";
            let w: WireLogNormal = d.extract()?;
            Lengths::LogNormal {
                mu: part_real(LN, "mu", w.mu, true)?,
                sigma: part_real(LN, "sigma", w.sigma, true)?,
                max_tokens: part_real(LN, "max_tokens", w.max_tokens, true)?,
                group_correlation: part_real(LN, "group_correlation", w.group_correlation, false)?,
            }
        }
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

/// A pipeline dict (`rollsim.pipelines.*.to_dict()`), extracted in one typed pass; `kind` picks
/// the fields that apply. Errors name the field without the `pipeline.` prefix (added by the caller).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct WirePipeline<'py> {
    kind: Arg<String>,
    #[pyo3(default)]
    k: Arg<i128>,
    #[pyo3(default)]
    over_sampling: Arg<f64>,
    #[pyo3(default)]
    keep_partial: Arg<bool>,
    #[pyo3(default)]
    max_staleness: Arg<i128>,
    #[pyo3(default)]
    on_stale: Arg<String>,
    #[pyo3(default)]
    admission_eta: Arg<i128>,
    #[pyo3(default)]
    max_lag_samples: Arg<i128>,
    #[pyo3(default)]
    lag_release: Arg<String>,
    #[pyo3(default)]
    max_ready_groups: Arg<i128>,
    #[pyo3(default)]
    batch_order: Option<Bound<'py, PyAny>>,
    #[pyo3(default)]
    on_update: Arg<String>,
}

/// The field `name` of the schema's part `class`.
fn part_spec(class: &str, name: &str) -> &'static schema::Field {
    schema::part_field(class, name).unwrap_or_else(|| unreachable!("{class}.{name} is a field of the schema"))
}

/// An optional integer of a part in `[lo, hi]` (absent or None: its schema default).
fn part_int(class: &str, name: &str, a: Arg<i128>) -> PyResult<Option<u64>> {
    let f = part_spec(class, name);
    let (lo, hi) = match f.range {
        schema::Range::Int { lo, hi, .. } => (lo, hi),
        _ => unreachable!("{class}.{name} is an integer field"),
    };
    match a {
        Arg::Missing => Ok(match f.default {
            schema::Value::Int(v) => Some(v),
            _ => None,
        }),
        Arg::Given(v) if (lo as i128..=hi as i128).contains(&v) => Ok(Some(v as u64)),
        Arg::Given(v) => Err(field_err(name, format!("must be in [{lo}, {hi}], got {v}"))),
        Arg::Huge(v) => Err(field_err(name, format!("must be in [{lo}, {hi}], got {v}"))),
        Arg::Bad(g) => Err(field_err(name, format!("must be an integer in [{lo}, {hi}], got {g}"))),
    }
}

fn part_u32(class: &str, name: &str, a: Arg<i128>) -> PyResult<Option<u32>> {
    part_int(class, name, a).map(|v| v.map(|x| x as u32)) // the schema's ranges are within u32
}

/// A string option of a part: its schema default when absent, else one of its schema choices.
fn choice(class: &str, name: &str, a: Arg<String>, bad: &str) -> PyResult<&'static str> {
    let f = part_spec(class, name);
    match a {
        Arg::Missing => match f.default {
            schema::Value::Str(s) => Ok(s),
            _ => unreachable!("{class}.{name} has a string default"),
        },
        Arg::Given(s) => match f.choices.iter().find(|c| **c == s) {
            Some(c) => Ok(c),
            None => Err(field_err(name, format!("{bad}, got {s:?}"))),
        },
        Arg::Huge(g) | Arg::Bad(g) => Err(field_err(name, format!("{bad}, got {g}"))),
    }
}

fn pipeline_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Pipeline> {
    if !d.contains("kind")? {
        return Err(ScenarioError::new_err("kind: missing"));
    }
    let w: WirePipeline<'_> = d.extract()?;
    let kind = match w.kind {
        Arg::Missing => return Err(ScenarioError::new_err("kind: missing")),
        Arg::Given(k) => k,
        Arg::Huge(g) | Arg::Bad(g) => return Err(field_err("kind", format!("must be a string, got {g}"))),
    };
    Ok(match kind.as_str() {
        "off_policy" => Pipeline::OffPolicy {
            k: match w.k {
                Arg::Missing => return Err(ScenarioError::new_err("k: missing")),
                k => part_int("OffPolicy", "k", k)?.unwrap_or(0) as u32,
            },
            partial: PartialRollout {
                over_sampling: match w.over_sampling {
                    Arg::Missing => None,
                    Arg::Given(v) => Some(v),
                    // as the Python class prints it, from the schema's bound
                    Arg::Huge(g) => {
                        let b = schema::OVER_SAMPLING;
                        return Err(field_err("over_sampling", format!("must be in {}{}, got {g}", b.range, b.extra)));
                    }
                    Arg::Bad(g) => {
                        let extra = schema::OVER_SAMPLING.extra;
                        return Err(field_err("over_sampling", format!("must be a number{extra}, got {g}")));
                    }
                },
                keep_partial: match w.keep_partial {
                    Arg::Missing => false,
                    Arg::Given(v) => v,
                    Arg::Huge(g) | Arg::Bad(g) => {
                        return Err(field_err("keep_partial", format!("must be True or False, got {g}")))
                    }
                },
            },
        },
        "fully_async" => {
            const FA: &str = "FullyAsync";
            let on_stale = match choice(FA, "on_stale", w.on_stale, "must be 'drop' or 'requeue'")? {
                "requeue" => OnStale::Requeue,
                _ => OnStale::Drop,
            };
            let modes = part_spec(FA, "on_update").choices;
            let on_update = match w.on_update {
                Arg::Given(ref s) if !modes.contains(&s.as_str()) => {
                    return Err(field_err("on_update", format!("unknown mode {s:?}")))
                }
                a => match choice(FA, "on_update", a, "unknown mode")? {
                    "abort_drop" => OnUpdate::AbortDrop,
                    "abort_resubmit" => OnUpdate::AbortResubmit,
                    "wait" => OnUpdate::Wait,
                    "keep_recompute" => OnUpdate::KeepRecompute,
                    "keep_stale" => OnUpdate::KeepStale,
                    _ => OnUpdate::Continue,
                },
            };
            let lag_release = match choice(FA, "lag_release", w.lag_release, "must be 'take' or 'sync'")? {
                "sync" => LagRelease::Sync,
                _ => LagRelease::Take,
            };
            let batch_order = match w.batch_order {
                None => BatchOrder::Fifo,
                Some(v) if v.is_none() => BatchOrder::Fifo,
                Some(v) => match v.extract::<String>() {
                    Ok(s) if s == "fifo" => BatchOrder::Fifo,
                    Ok(s) if s == "oldest_first" => BatchOrder::OldestFirst,
                    Ok(s) => return Err(ScenarioError::new_err(format!("batch_order: unknown order {s:?}"))),
                    Err(_) => {
                        let b = v.cast::<PyDict>().map_err(|_| {
                            ScenarioError::new_err(format!(
                                "batch_order: must be 'fifo', 'oldest_first' or a dict {{edges, quotas}}, got {v}"
                            ))
                        })?;
                        BatchOrder::LengthBalanced { edges: item(b, "edges")?, quotas: item(b, "quotas")? }
                    }
                },
            };
            Pipeline::FullyAsync(Streaming {
                max_staleness: part_u32(FA, "max_staleness", w.max_staleness)?,
                on_stale,
                admission_eta: part_u32(FA, "admission_eta", w.admission_eta)?,
                max_lag_samples: part_int(FA, "max_lag_samples", w.max_lag_samples)?,
                lag_release,
                max_ready_groups: part_u32(FA, "max_ready_groups", w.max_ready_groups)?,
                batch_order,
                on_update,
            })
        }
        other => return Err(ScenarioError::new_err(format!("kind: unknown kind {other:?}"))),
    })
}

/// What a scenario dict gave for one field: nothing (absent or None: the schema's default), a
/// value of the field's type, an integer beyond the type's range, or something else.
#[derive(Default)]
enum Arg<T> {
    #[default]
    Missing,
    Given(T),
    /// An int too large for the type, as error messages print it (`2**2000`, `10**400`).
    Huge(String),
    /// Anything else, as `type repr` (`str 'x'`).
    Bad(String),
}

/// The Rust types of the wire fields; bools are ints in Python, refused where a number is due.
trait WireType {
    const TAKES_BOOL: bool = false;
    /// An int that does not convert is too large (not of the wrong type).
    const NUMBER: bool = false;
}
impl WireType for i128 {
    const NUMBER: bool = true;
}
impl WireType for f64 {
    const NUMBER: bool = true;
}
impl WireType for String {}
impl WireType for Vec<Vec<f64>> {}
impl WireType for bool {
    const TAKES_BOOL: bool = true;
}

/// `type repr` of what was given, as the Python API's messages print it.
fn given(obj: &Bound<'_, PyAny>) -> String {
    let tp = obj.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    let r = obj.repr().map(|r| r.to_string()).unwrap_or_default();
    format!("{tp} {r}")
}

/// A number as the Python API's messages print it (`rollsim._check.show`: huge ints as `2**2000`).
fn shown(obj: &Bound<'_, PyAny>) -> String {
    let py = obj.py();
    py.import("rollsim._check")
        .and_then(|m| m.getattr("show"))
        .and_then(|f| f.call1((obj,)))
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "a huge integer".into())
}

impl<'a, 'py, T> FromPyObject<'a, 'py> for Arg<T>
where
    T: FromPyObjectOwned<'py> + WireType,
{
    type Error = PyErr;

    /// Never fails: a bad value is kept as [`Arg::Bad`], so that the check can name the field.
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let owned = obj.to_owned();
        if owned.is_none() {
            return Ok(Arg::Missing);
        }
        let is_bool = owned.is_instance_of::<PyBool>();
        if is_bool && !T::TAKES_BOOL {
            return Ok(Arg::Bad(given(&owned)));
        }
        Ok(match obj.extract::<T>() {
            Ok(v) => Arg::Given(v),
            Err(_) if owned.is_instance_of::<PyInt>() && T::NUMBER => Arg::Huge(shown(&owned)),
            Err(_) => Arg::Bad(given(&owned)),
        })
    }
}

/// A scenario dict (`rollsim.Scenario.to_dict()`), extracted in one typed pass: every key of
/// [`schema::SCENARIO`] (absent or None: its default); `lengths` and `pipeline` are parts with
/// fields of their own.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct Wire<'py> {
    lengths: Bound<'py, PyDict>,
    pipeline: Bound<'py, PyDict>,
    #[pyo3(default)]
    rollout_slots: Arg<i128>,
    #[pyo3(default)]
    decode_tokens_per_s: Arg<f64>,
    #[pyo3(default)]
    batch_size: Arg<i128>,
    #[pyo3(default)]
    train_step_s: Arg<f64>,
    #[pyo3(default)]
    horizon_s: Arg<f64>,
    #[pyo3(default)]
    seed: Arg<i128>,
    #[pyo3(default)]
    rng: Arg<String>,
    #[pyo3(default)]
    weight_sync_s: Arg<f64>,
    #[pyo3(default)]
    train_s_per_token: Arg<f64>,
    #[pyo3(default)]
    group_size: Arg<i128>,
    #[pyo3(default)]
    prompt_tokens: Arg<f64>,
    #[pyo3(default)]
    prefill_tokens_per_s: Arg<f64>,
    #[pyo3(default)]
    prefix_sharing: Arg<bool>,
    #[pyo3(default)]
    clear_cache_on_update: Arg<bool>,
    #[pyo3(default)]
    slots_per_instance: Arg<i128>,
    #[pyo3(default)]
    decode_slowdown_per_seq: Arg<f64>,
    #[pyo3(default)]
    rollout_pause_s: Arg<f64>,
    #[pyo3(default)]
    logprob_s_per_token: Arg<f64>,
    #[pyo3(default)]
    decode_throughput_table: Arg<Vec<Vec<f64>>>,
    #[pyo3(default)]
    kv_cache_tokens: Arg<f64>,
    #[pyo3(default)]
    sync_every: Arg<i128>,
    #[pyo3(default)]
    staleness_check: Arg<String>,
    #[pyo3(default)]
    prefill_mode: Arg<String>,
    #[pyo3(default)]
    max_num_batched_tokens: Arg<i128>,
    #[pyo3(default)]
    decode_s_per_context_token: Arg<f64>,
}

fn spec(name: &'static str) -> &'static schema::Field {
    schema::field(name).unwrap_or_else(|| unreachable!("{name} is a field of the schema"))
}

fn field_err(name: &str, msg: String) -> PyErr {
    ScenarioError::new_err(format!("{name}: {msg}"))
}

/// An integer field, in its schema range (`rollout_slots: must be in [1, 16777216], got -1`).
fn int_field(name: &'static str, a: Arg<i128>) -> PyResult<u64> {
    let f = spec(name);
    let (lo, hi) = match f.range {
        schema::Range::Int { lo, hi, .. } => (lo, hi),
        _ => unreachable!("{name} is an integer field"),
    };
    let shown_hi = if hi == u64::MAX { "2**64 - 1".to_string() } else { hi.to_string() };
    match a {
        Arg::Missing => match f.default {
            schema::Value::Int(v) => Ok(v),
            _ => unreachable!("{name} has an integer default"),
        },
        Arg::Given(v) if (lo as i128..=hi as i128).contains(&v) => Ok(v as u64),
        Arg::Given(v) => {
            // as the Python API prints it (`2**64`, not 18446744073709551616)
            let got =
                Python::attach(|py| v.into_pyobject(py).map(|o| shown(o.as_any()))).unwrap_or_else(|_| v.to_string());
            Err(field_err(name, format!("must be in [{lo}, {shown_hi}], got {got}")))
        }
        Arg::Huge(v) => Err(field_err(name, format!("must be in [{lo}, {shown_hi}], got {v}"))),
        Arg::Bad(g) => Err(field_err(name, format!("must be an integer in [{lo}, {shown_hi}], got {g}"))),
    }
}

fn count_field(name: &'static str, a: Arg<i128>) -> PyResult<u32> {
    int_field(name, a).map(|v| v as u32) // the schema's ranges of counts are within u32
}

/// A real field (its range is checked by the engine, with the same message); absent: the
/// schema's default (`None` defaults: 0, the engine's "none").
fn real_field(name: &'static str, a: Arg<f64>) -> PyResult<f64> {
    let f = spec(name);
    let (range, unit, extra) = match f.range {
        schema::Range::Real(b) => (b.range, b.unit, b.extra),
        _ => ("", "", ""),
    };
    match a {
        Arg::Missing => Ok(match f.default {
            schema::Value::Float(v) => v,
            _ => 0.0,
        }),
        Arg::Given(v) => Ok(v),
        Arg::Huge(v) => Err(field_err(name, format!("must be in {range}{unit}{extra}, got {v}"))),
        Arg::Bad(g) => {
            let what = if unit.is_empty() { "a number".to_string() } else { format!("a number of{unit}") };
            Err(field_err(name, format!("must be {what}{extra}, got {g}")))
        }
    }
}

fn bool_field(name: &'static str, a: Arg<bool>) -> PyResult<bool> {
    match a {
        Arg::Missing => match spec(name).default {
            schema::Value::Bool(v) => Ok(v),
            _ => unreachable!("{name} has a boolean default"),
        },
        Arg::Given(v) => Ok(v),
        Arg::Huge(g) | Arg::Bad(g) => Err(field_err(name, format!("must be True or False, got {g}"))),
    }
}

/// `decode_throughput_table`: a list of `[batch size, tokens/s]` pairs (or None); the engine checks
/// the values.
fn throughput_table(a: Arg<Vec<Vec<f64>>>) -> PyResult<Vec<(u32, f64)>> {
    const F: &str = "decode_throughput_table";
    let what = "must be a list of [running sequences (integer >= 1), tokens/s] pairs";
    let rows = match a {
        Arg::Missing => return Ok(Vec::new()),
        Arg::Given(rows) => rows,
        Arg::Huge(g) | Arg::Bad(g) => return Err(field_err(F, format!("{what}, got {g}"))),
    };
    rows.iter()
        .enumerate()
        .map(|(i, r)| match r[..] {
            [n, tp] if n.fract() == 0.0 && (1.0..=u32::MAX as f64).contains(&n) => Ok((n as u32, tp)),
            _ => Err(field_err(F, format!("{what}; item {i} is {r:?}"))),
        })
        .collect()
}

fn scenario_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Scenario> {
    scenario_from_dict_with(d, None)
}

/// Like `scenario_from_dict`, with the lengths already converted (shared between runs).
fn scenario_from_dict_with(d: &Bound<'_, PyDict>, lengths: Option<Lengths>) -> PyResult<Scenario> {
    for part in ["lengths", "pipeline"] {
        match d.get_item(part)? {
            None => return Err(ScenarioError::new_err(format!("{part}: missing"))),
            Some(v) if !v.is_instance_of::<PyDict>() => {
                return Err(field_err(part, format!("must be a dict, got {}", given(&v))))
            }
            _ => {}
        }
    }
    let w: Wire<'_> = d.extract()?;
    let lengths = match lengths {
        Some(l) => l,
        None => in_part(d.py(), "lengths.", lengths_from_dict(&w.lengths))?,
    };
    let pipeline = in_part(d.py(), "pipeline.", pipeline_from_dict(&w.pipeline))?;
    let rng = match w.rng {
        Arg::Missing => spec("rng").default,
        Arg::Given(s) => match spec("rng").choices.iter().find(|c| **c == s) {
            Some(c) => schema::Value::Str(c),
            None => return Err(field_err("rng", format!("must be 'python' or 'fast', got {s:?}"))),
        },
        Arg::Huge(g) | Arg::Bad(g) => return Err(field_err("rng", format!("must be 'python' or 'fast', got {g}"))),
    };
    let rng = if rng == schema::Value::Str("python") { RngKind::Python } else { RngKind::Fast };
    let staleness_check = match w.staleness_check {
        Arg::Missing => StalenessCheck::Start,
        Arg::Given(s) if s == "start" => StalenessCheck::Start,
        Arg::Given(s) if s == "finish" => StalenessCheck::Finish,
        Arg::Given(s) => return Err(field_err("staleness_check", format!("must be 'start' or 'finish', got {s:?}"))),
        Arg::Huge(g) | Arg::Bad(g) => {
            return Err(field_err("staleness_check", format!("must be 'start' or 'finish', got {g}")))
        }
    };
    let prefill_mode = match w.prefill_mode {
        Arg::Missing => PrefillMode::PerSlot,
        Arg::Given(s) if s == "per_slot" => PrefillMode::PerSlot,
        Arg::Given(s) if s == "shared" => PrefillMode::Shared,
        Arg::Given(s) => return Err(field_err("prefill_mode", format!("must be 'per_slot' or 'shared', got {s:?}"))),
        Arg::Huge(g) | Arg::Bad(g) => {
            return Err(field_err("prefill_mode", format!("must be 'per_slot' or 'shared', got {g}")))
        }
    };
    // the engine's step model takes the weight sync and the log-prob phase summed into the fixed
    // and per-token parts (same additions, in the same order, as the Python API's)
    let weight_sync_s = real_field("weight_sync_s", w.weight_sync_s)?;
    WEIGHT_SYNC_S.check(weight_sync_s).map_err(to_py_err)?;
    let logprob_s_per_token = real_field("logprob_s_per_token", w.logprob_s_per_token)?;
    LOGPROB_S_PER_TOKEN.check(logprob_s_per_token).map_err(to_py_err)?;
    let kv_cache_tokens = match w.kv_cache_tokens {
        // 0 is the engine's "unlimited"; on the wire only None (or no key) says it
        Arg::Given(v) => {
            KV_CACHE_TOKENS.check(v).map_err(to_py_err)?;
            v
        }
        other => real_field("kv_cache_tokens", other)?,
    };
    Ok(Scenario {
        rollout_slots: count_field("rollout_slots", w.rollout_slots)?,
        decode_tokens_per_s: real_field("decode_tokens_per_s", w.decode_tokens_per_s)?,
        batch_size: count_field("batch_size", w.batch_size)?,
        train_step_s: real_field("train_step_s", w.train_step_s)? + weight_sync_s,
        train_s_per_token: real_field("train_s_per_token", w.train_s_per_token)? + logprob_s_per_token,
        horizon_s: real_field("horizon_s", w.horizon_s)?,
        pipeline,
        group_size: count_field("group_size", w.group_size)?,
        decode: Decode {
            slots_per_instance: count_field("slots_per_instance", w.slots_per_instance)?,
            slowdown_per_seq: real_field("decode_slowdown_per_seq", w.decode_slowdown_per_seq)?,
            throughput_table: throughput_table(w.decode_throughput_table)?,
            kv_cache_tokens,
            s_per_context_token: real_field("decode_s_per_context_token", w.decode_s_per_context_token)?,
        },
        prefill: Prefill {
            prompt_tokens: real_field("prompt_tokens", w.prompt_tokens)?,
            prefill_tokens_per_s: real_field("prefill_tokens_per_s", w.prefill_tokens_per_s)?,
            prefix_sharing: bool_field("prefix_sharing", w.prefix_sharing)?,
            clear_cache_on_update: bool_field("clear_cache_on_update", w.clear_cache_on_update)?,
            mode: prefill_mode,
            max_num_batched_tokens: count_field("max_num_batched_tokens", w.max_num_batched_tokens)?,
        },
        rollout_pause_s: real_field("rollout_pause_s", w.rollout_pause_s)?,
        seed: int_field("seed", w.seed)?,
        rng,
        agentic: match d.get_item("agentic")? {
            Some(a) if !a.is_none() => Some(in_part(d.py(), "agentic.", agentic_from_dict(a.cast::<PyDict>()?))?),
            _ => None,
        },
        sync_every: count_field("sync_every", w.sync_every)?,
        staleness_check,
        train: match d.get_item("train")? {
            Some(t) if !t.is_none() => {
                let t =
                    t.cast::<PyDict>().map_err(|_| field_err("train", format!("must be a dict, got {}", given(&t))))?;
                Some(in_part(d.py(), "train.", train_from_dict(t))?)
            }
            _ => None,
        },
        length_drift: match d.get_item("length_drift")? {
            Some(x) if !x.is_none() => {
                Some(in_part(d.py(), "length_drift.", length_drift_from_dict(x.cast::<PyDict>()?, &lengths))?)
            }
            _ => None,
        },
        lengths,
    })
}

/// `Scenario.length_drift` (`rollsim.LengthDrift.to_dict()`): `kind`, `rate`, `table` (pairs),
/// `max_tokens` (absent or None: the limit of `lengths`), `feedback`. The engine checks the ranges.
fn length_drift_from_dict(d: &Bound<'_, PyDict>, lengths: &Lengths) -> PyResult<LengthDrift> {
    use rollsim_core::lengths::DriftKind;
    let kind = match opt_item::<String>(d, "kind", "linear".into())?.as_str() {
        "linear" => DriftKind::Linear,
        "log" => DriftKind::Log,
        "exp" => DriftKind::Exp,
        "table" => DriftKind::Table,
        other => {
            return Err(ScenarioError::new_err(format!(
                "length_drift.kind: must be one of linear, log, exp, table, got {other:?}"
            )))
        }
    };
    let pairs: Vec<Vec<f64>> = opt_item(d, "table", Vec::new())?;
    if let Some(i) = pairs.iter().position(|p| p.len() != 2) {
        return Err(ScenarioError::new_err(format!(
            "length_drift.table: must be (version, scale) pairs; item {i} has {} numbers",
            pairs[i].len()
        )));
    }
    let table = pairs.iter().map(|p| (p[0], p[1])).collect();
    Ok(LengthDrift {
        kind,
        rate: opt_item(d, "rate", 0.0)?,
        table,
        max_tokens: opt_item(d, "max_tokens", lengths.max_tokens())?,
        feedback: opt_item(d, "feedback", 0.0)?,
    })
}

/// The length scale of each policy version in `versions` under a length drift dict (the engine's
/// formula, without feedback).
#[pyfunction]
fn length_drift_scale(drift: &Bound<'_, PyDict>, versions: Vec<f64>) -> PyResult<Vec<f64>> {
    guard(|| {
        let lengths = Lengths::LogNormal { mu: 0.0, sigma: 0.0, max_tokens: 1.0, group_correlation: 0.0 };
        let d = length_drift_from_dict(drift, &lengths)?;
        d.validate().map_err(to_py_err)?;
        Ok(versions.iter().map(|v| d.scale(*v)).collect())
    })
}

/// `Scenario.train` (`rollsim.TrainRanks.to_dict()`), extracted in one typed pass: the fields of
/// the schema's `TrainRanks` part (absent or None: their defaults).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct WireTrain {
    kind: Arg<String>,
    #[pyo3(default)]
    dp_ranks: Arg<i128>,
    #[pyo3(default)]
    dispatch: Arg<String>,
    #[pyo3(default)]
    s_per_token: Arg<f64>,
    #[pyo3(default)]
    s_per_token_sq: Arg<f64>,
    #[pyo3(default)]
    fixed_s: Arg<f64>,
    #[pyo3(default)]
    mini_batches: Arg<i128>,
    #[pyo3(default)]
    max_tokens_per_gpu: Arg<f64>,
}

fn train_from_dict(d: &Bound<'_, PyDict>) -> PyResult<TrainRanks> {
    const TR: &str = "TrainRanks";
    if !d.contains("kind")? {
        return Err(ScenarioError::new_err("kind: missing"));
    }
    let w: WireTrain = d.extract()?;
    match w.kind {
        Arg::Given(ref k) if k == "train_ranks" => {}
        Arg::Given(k) => return Err(field_err("kind", format!("must be 'train_ranks', got {k:?}"))),
        Arg::Missing | Arg::Huge(_) | Arg::Bad(_) => return Err(field_err("kind", "must be 'train_ranks'".into())),
    }
    let names = schema::DISPATCHES.iter().map(|c| format!("'{c}'")).collect::<Vec<_>>().join(", ");
    let dispatch = choice(TR, "dispatch", w.dispatch, &format!("must be one of [{names}]"))?;
    Ok(TrainRanks {
        dp_ranks: part_u32(TR, "dp_ranks", w.dp_ranks)?.unwrap_or(1),
        dispatch: Dispatch::from_name(dispatch).unwrap_or(Dispatch::Contiguous),
        s_per_token: part_real(TR, "s_per_token", w.s_per_token, false)?,
        s_per_token_sq: part_real(TR, "s_per_token_sq", w.s_per_token_sq, false)?,
        fixed_s: part_real(TR, "fixed_s", w.fixed_s, false)?,
        mini_batches: part_u32(TR, "mini_batches", w.mini_batches)?.unwrap_or(1),
        max_tokens_per_gpu: match w.max_tokens_per_gpu {
            Arg::Missing => 0.0,
            a => part_real(TR, "max_tokens_per_gpu", a, true)?,
        },
    })
}

/// Which sequences each data-parallel rank trains (the engine's dispatches, `TrainRanks`): one
/// int64 index array per rank, in the order the rank trains them.
#[pyfunction]
#[pyo3(signature = (tokens, work, ranks, dispatch, mini_batches=1, max_tokens_per_gpu=None))]
fn assign_ranks<'py>(
    py: Python<'py>,
    tokens: PyReadonlyArray1<'py, f64>,
    work: PyReadonlyArray1<'py, f64>,
    ranks: usize,
    dispatch: &str,
    mini_batches: usize,
    max_tokens_per_gpu: Option<f64>,
) -> PyResult<Bound<'py, PyList>> {
    guard(|| {
        let d = Dispatch::from_name(dispatch).ok_or_else(|| {
            field_err("dispatch", format!("must be one of {:?}, got {dispatch:?}", schema::DISPATCHES))
        })?;
        let (t, w) = (tokens.as_slice()?, work.as_slice()?);
        if t.len() != w.len() || ranks == 0 || mini_batches == 0 {
            return Err(field_err("work", "must have one value per sequence (and ranks, mini_batches >= 1)".into()));
        }
        let parts =
            rollsim_core::pipeline::assign_ranks(t, w, ranks, d, mini_batches, max_tokens_per_gpu.unwrap_or(0.0));
        let out = PyList::empty(py);
        for p in parts {
            out.append(PyArray1::from_vec(py, p.into_iter().map(i64::from).collect()))?;
        }
        Ok(out)
    })
}

/// A constant (a number) or a lengths dict.
/// A `dist` field of the `Agentic` part: a number, or a lengths-like dict; absent or None: the
/// schema's default number.
fn dist_from(d: &Bound<'_, PyDict>, key: &'static str) -> PyResult<Dist> {
    match d.get_item(key)? {
        Some(v) if v.is_instance_of::<PyDict>() => {
            Ok(Dist::Of(in_part(d.py(), &format!("{key}."), lengths_from_dict(v.cast::<PyDict>()?))?))
        }
        Some(v) if !v.is_none() => Ok(Dist::Const(item(d, key)?)),
        _ => match part_spec(AG, key).default {
            schema::Value::Float(x) => Ok(Dist::Const(x)),
            _ => unreachable!("Agentic.{key} has a real default"),
        },
    }
}

/// The schema's class of the agentic part.
const AG: &str = "Agentic";

/// The scalar fields of `Scenario.agentic` (`rollsim.agentic.Agentic.to_dict()`) in one typed pass;
/// absent or None: the schema's default ([`schema::AGENTIC`]).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct WireAgentic {
    max_turns: Arg<i128>,
    #[pyo3(default)]
    stop_prob: Arg<f64>,
    #[pyo3(default)]
    max_context_tokens: Arg<f64>,
    #[pyo3(default)]
    kv_policy: Arg<String>,
    #[pyo3(default)]
    sticky: Arg<bool>,
    #[pyo3(default)]
    env_slots: Arg<i128>,
    #[pyo3(default)]
    max_trajectories: Arg<i128>,
    #[pyo3(default)]
    env_overhead_s: Arg<f64>,
    #[pyo3(default)]
    failure_rate: Arg<f64>,
    #[pyo3(default)]
    on_failure: Arg<String>,
    #[pyo3(default)]
    switch_version_at_turn: Arg<bool>,
}

/// A bool of the agentic part: its schema default when absent or None.
fn part_flag(class: &str, name: &str, a: Arg<bool>) -> PyResult<bool> {
    match a {
        Arg::Missing => match part_spec(class, name).default {
            schema::Value::Bool(b) => Ok(b),
            _ => unreachable!("{class}.{name} has a bool default"),
        },
        Arg::Given(b) => Ok(b),
        Arg::Huge(g) | Arg::Bad(g) => Err(field_err(name, format!("must be True or False, got {g}"))),
    }
}

/// An optional count of the agentic part (the wire's 0, or absent or None: unbounded, sent as 0).
fn part_count(class: &str, name: &str, a: Arg<i128>) -> PyResult<u32> {
    match a {
        Arg::Given(0) | Arg::Missing => Ok(0),
        a => part_u32(class, name, a).map(|v| v.unwrap_or(0)),
    }
}

/// `Scenario.agentic` (`rollsim.agentic.Agentic.to_dict()`): names, defaults and choices from the
/// schema's `Agentic` part; the engine checks the ranges (`AgenticConfig::validate`).
fn agentic_from_dict(d: &Bound<'_, PyDict>) -> PyResult<AgenticConfig> {
    if !d.contains("max_turns")? {
        return Err(ScenarioError::new_err("max_turns: missing"));
    }
    let w: WireAgentic = d.extract()?;
    let kv_policy = match choice(AG, "kv_policy", w.kv_policy, "must be 'keep', 'drop' or 'hold'")? {
        "drop" => KvPolicy::Drop,
        "hold" => KvPolicy::Hold,
        _ => KvPolicy::Keep,
    };
    let on_failure = match choice(AG, "on_failure", w.on_failure, "must be 'drop' or 'retry'")? {
        "retry" => OnFailure::Retry,
        _ => OnFailure::Drop,
    };
    let max_context_tokens = match w.max_context_tokens {
        Arg::Missing => f64::INFINITY, // the schema's None: no bound
        a => part_real(AG, "max_context_tokens", a, true)?,
    };
    Ok(AgenticConfig {
        turn_scale: opt_item(d, "turn_scale", Vec::new())?,
        tool_latency_s: dist_from(d, "tool_latency_s")?,
        observation_tokens: dist_from(d, "observation_tokens")?,
        stop_prob: part_real(AG, "stop_prob", w.stop_prob, false)?,
        max_turns: part_u32(AG, "max_turns", w.max_turns)?.unwrap_or(1),
        max_context_tokens,
        kv_policy,
        sticky: part_flag(AG, "sticky", w.sticky)?,
        env_slots: part_count(AG, "env_slots", w.env_slots)?,
        max_trajectories: part_count(AG, "max_trajectories", w.max_trajectories)?,
        env_overhead_s: part_real(AG, "env_overhead_s", w.env_overhead_s, false)?,
        failure_rate: part_real(AG, "failure_rate", w.failure_rate, false)?,
        on_failure,
        switch_version_at_turn: part_flag(AG, "switch_version_at_turn", w.switch_version_at_turn)?,
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
    d.set_item("kv_evictions", s.kv_evictions)?;
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
    use rollsim_core::record::Num;
    let d = PyDict::new(py);
    for (name, v) in s.values() {
        match v {
            Num::U64(x) => d.set_item(name, x)?,
            Num::F64(x) => d.set_item(name, x)?,
            Num::Bool(x) => d.set_item(name, x)?,
        }
    }
    Ok(d)
}

/// Named columns as a dict of numpy arrays (handed over without copying).
fn columns_dict<'py>(py: Python<'py>, cols: Vec<(&'static str, Col)>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, c) in cols {
        match c {
            Col::F64(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Col::I64(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Col::U32(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
            Col::Bool(v) => d.set_item(name, PyArray1::from_vec(py, v))?,
        }
    }
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
        Some(c) => out.set_item("samples", columns_dict(py, c.into_named())?)?,
    }
    match r.segments {
        None => out.set_item("segments", py.None())?,
        Some(c) => out.set_item("segments", columns_dict(py, c.into_named())?)?,
    }
    out.set_item("steps", columns_dict(py, r.steps.into_named())?)?;
    Ok(out)
}

/// One field of the schema as a plain dict: `name`, `kind`, `unit`, `default` (None if
/// `required`), `lo`, `hi`, `range` (as messages print it), `lo_open` / `hi_open` (an end the range
/// excludes), `extra` (special values, without the leading ", "), `suffix` (what messages print
/// between the range and ", got": unit and special values), `choices`, `omit_at_default`, `doc`.
fn field_dict<'py>(py: Python<'py>, f: &schema::Field) -> PyResult<Bound<'py, PyDict>> {
    use schema::{Range, Value};
    let d = PyDict::new(py);
    d.set_item("name", f.name)?;
    d.set_item("kind", f.kind.name())?;
    d.set_item("unit", f.unit)?;
    match f.default {
        Value::Int(v) => d.set_item("default", v)?,
        Value::Float(v) => d.set_item("default", v)?,
        Value::Bool(v) => d.set_item("default", v)?,
        Value::Str(v) | Value::Part(v) => d.set_item("default", v)?,
        Value::Reals(v) => d.set_item("default", PyList::new(py, v)?)?,
        Value::None | Value::Required => d.set_item("default", py.None())?,
    }
    d.set_item("required", f.default == Value::Required)?;
    let (lo, hi, range, extra, suffix): (Bound<'_, PyAny>, Bound<'_, PyAny>, String, &str, String) = match f.range {
        Range::Any => (py.None().into_bound(py), py.None().into_bound(py), String::new(), "", String::new()),
        Range::Int { lo, hi, extra } => {
            let shown = if hi == u64::MAX { "2**64 - 1".to_string() } else { hi.to_string() };
            let r = format!("[{lo}, {shown}]");
            let stripped = extra.strip_prefix(", ").unwrap_or(extra);
            (lo.into_pyobject(py)?.into_any(), hi.into_pyobject(py)?.into_any(), r, stripped, extra.to_string())
        }
        Range::Real(b) => (
            b.lo.into_pyobject(py)?.into_any(),
            b.hi.into_pyobject(py)?.into_any(),
            b.range.to_string(),
            b.extra.strip_prefix(", ").unwrap_or(b.extra),
            format!("{}{}", b.unit, b.extra),
        ),
    };
    d.set_item("lo_open", range.starts_with('('))?;
    d.set_item("hi_open", range.ends_with(')'))?;
    d.set_item("lo", lo)?;
    d.set_item("hi", hi)?;
    d.set_item("range", range)?;
    d.set_item("extra", extra)?;
    d.set_item("suffix", suffix)?;
    d.set_item("choices", PyList::new(py, f.choices)?)?;
    d.set_item("omit_at_default", f.omit_at_default)?;
    d.set_item("doc", f.doc)?;
    Ok(d)
}

/// The schema (`rollsim_core::schema`) as plain Python values: `{"version", "scenario": [field
/// dicts], "parts": [{"class", "kind", "of", "doc", "fields": [field dicts with their "path"]}],
/// "seconds_parts": [the same, of `agentic.tool_latency_s`],
/// "summary": [column dicts], "frames": {"steps" | "samples" | "segments": [column dicts]}}`.
fn schema_dict(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let fields = PyList::empty(py);
    for f in schema::SCENARIO {
        fields.append(field_dict(py, f)?)?;
    }
    let parts = PyList::empty(py);
    let seconds_parts = PyList::empty(py);
    for (p, list) in
        schema::PARTS.iter().map(|p| (p, &parts)).chain(schema::SECONDS_PARTS.iter().map(|p| (p, &seconds_parts)))
    {
        let d = PyDict::new(py);
        d.set_item("class", p.class)?;
        d.set_item("kind", p.kind)?;
        d.set_item("of", p.of)?;
        d.set_item("doc", p.doc)?;
        let fl = PyList::empty(py);
        for f in p.fields {
            let fd = field_dict(py, f)?;
            fd.set_item("path", format!("{}.{}", p.of, f.name))?;
            fl.append(fd)?;
        }
        d.set_item("fields", fl)?;
        list.append(d)?;
    }
    let cols = |cols: &[schema::Column]| -> PyResult<Bound<'_, PyList>> {
        let l = PyList::empty(py);
        for c in cols {
            let d = PyDict::new(py);
            d.set_item("name", c.name)?;
            d.set_item("dtype", c.dtype.name())?;
            d.set_item("unit", c.unit)?;
            d.set_item("doc", c.doc)?;
            l.append(d)?;
        }
        Ok(l)
    };
    let frames = PyDict::new(py);
    for (name, c) in schema::FRAMES {
        frames.set_item(*name, cols(c)?)?;
    }
    let out = PyDict::new(py);
    out.set_item("version", schema::VERSION)?;
    out.set_item("scenario", fields)?;
    out.set_item("parts", parts)?;
    out.set_item("seconds_parts", seconds_parts)?;
    out.set_item("summary", cols(schema::SUMMARY)?)?;
    out.set_item("agentic_summary", cols(schema::AGENTIC_SUMMARY)?)?;
    out.set_item("rank_steps", cols(schema::RANK_STEPS)?)?;
    out.set_item("agentic_samples", cols(schema::AGENTIC_SAMPLES)?)?;
    out.set_item("turns", cols(schema::TURNS)?)?;
    out.set_item("learning_summary", cols(schema::LEARNING_SUMMARY)?)?;
    out.set_item("frames", frames)?;
    Ok(out)
}

/// Instance throughput (tokens/s) with `n` sequences on board from a measured table of
/// `(running sequences, tokens/s)` points: linear between the points, the last point's value
/// beyond it (the engine's formula).
#[pyfunction]
fn table_throughput(table: Vec<(u32, f64)>, n: u32) -> PyResult<f64> {
    guard(|| Ok(rollsim_core::scenario::table_throughput(&table, n)))
}

/// Mean of `min(LogNormal(mu, sigma), max_tokens)`, tokens (the engine's closed form).
#[pyfunction]
fn lognormal_mean(mu: f64, sigma: f64, max_tokens: f64) -> PyResult<f64> {
    guard(|| Ok(Lengths::LogNormal { mu, sigma, max_tokens, group_correlation: 0.0 }.mean_tokens()))
}

/// Rollout throughput over training throughput of a scenario dict (the engine's formula, the
/// summary's `throughput_ratio`).
#[pyfunction]
fn throughput_ratio(scenario: &Bound<'_, PyDict>) -> PyResult<f64> {
    guard(|| {
        let sc = scenario_from_dict(scenario)?;
        sc.validate().map_err(to_py_err)?;
        Ok(sc.throughput_ratio())
    })
}

/// Decode speed of one sequence on an instance running `n` sequences, tokens/s (the engine's
/// model; `n` in `[1, max(slots_per_instance, 1)]`).
#[pyfunction]
fn decode_speed(scenario: &Bound<'_, PyDict>, n: u32) -> PyResult<f64> {
    guard(|| {
        let sc = scenario_from_dict(scenario)?;
        sc.validate().map_err(to_py_err)?;
        let top = sc.decode.slots_per_instance.max(1);
        if n == 0 || n > top {
            return Err(field_err("n", format!("must be in [1, {top}], got {n}")));
        }
        Ok(sc.decode_speed(n))
    })
}

/// Runs one scenario (a dict built by `rollsim.Scenario.to_dict()`), with the GIL released.
/// Returns `{"summary": dict, "samples": dict of numpy arrays | None, "steps": dict of numpy arrays}`.
/// Raises ScenarioError (a ValueError) on bad input, KeyboardInterrupt on Ctrl-C, RunLimitError past
/// `max_samples` or `max_events` (None: no event budget).
#[pyfunction]
#[pyo3(signature = (scenario, record_samples=true, max_samples=50_000_000, general_engine=false, max_events=None))]
fn simulate<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    record_samples: bool,
    max_samples: u64,
    general_engine: bool,
    max_events: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| {
        let max_events = event_budget(max_events)?;
        simulate_inner(py, scenario, record_samples, max_samples, general_engine, max_events)
    })
}

/// `max_events`: an integer >= 1, or None (no budget: `u64::MAX`).
fn event_budget(v: Option<&Bound<'_, PyAny>>) -> PyResult<u64> {
    let Some(v) = v.filter(|v| !v.is_none()) else { return Ok(u64::MAX) };
    let n = if v.is_instance_of::<PyBool>() { None } else { v.extract::<u64>().ok().filter(|n| *n >= 1) };
    n.ok_or_else(|| {
        let got = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "?".into());
        ScenarioError::new_err(format!("max_events: must be an integer >= 1 or None (no limit), got {got}"))
    })
}

fn simulate_inner<'py>(
    py: Python<'py>,
    scenario: &Bound<'py, PyDict>,
    record_samples: bool,
    max_samples: u64,
    general_engine: bool,
    max_events: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let sc = scenario_from_dict(scenario)?;
    let opts = RunOptions { record_samples, max_samples, general_engine, max_events, ..RunOptions::default() };
    let res = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            rollsim_core::run(&sc, &opts, &mut || Python::attach(|py| py.check_signals().is_err()))
        }))
    });
    let res = res.map_err(panic_err)?.map_err(to_py_err)?;
    result_dict(py, res)
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
    m.add_function(wrap_pyfunction!(many::simulate_many, m)?)?;
    m.add_function(wrap_pyfunction!(py_random_stream, m)?)?;
    m.add_function(wrap_pyfunction!(py_lognormal_stream, m)?)?;
    m.add_function(wrap_pyfunction!(table_throughput, m)?)?;
    m.add_function(wrap_pyfunction!(lognormal_mean, m)?)?;
    m.add_function(wrap_pyfunction!(throughput_ratio, m)?)?;
    m.add_function(wrap_pyfunction!(decode_speed, m)?)?;
    m.add_function(wrap_pyfunction!(assign_ranks, m)?)?;
    m.add_function(wrap_pyfunction!(length_drift_scale, m)?)?;
    m.add("SCHEMA", schema_dict(m.py())?)?;
    sync::register(m)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
