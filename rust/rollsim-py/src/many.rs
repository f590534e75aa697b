//! `simulate_many`: many runs in summary mode across threads, returned as columns.
//!
//! The caller gives each distinct scenario once (a dict, as for `simulate`) and the runs as two
//! arrays, the scenario index and the seed of each run; the result is one numpy array per summary
//! field plus a status array and a list of error messages, in run order. Each distinct scenario is
//! converted once, whatever the number of its seeds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use rollsim_core::sweep::{Column, RunItem, SummaryColumns, STATUS_RUN_LIMIT, STATUS_SCENARIO_ERROR};
use rollsim_core::{Lengths, Scenario};

use crate::{guard, panic_err, scenario_from_dict, to_py_err, ScenarioError};

/// Largest `threads` accepted by `simulate_many` (as `rollsim.sweep`).
const MAX_THREADS: usize = 4096;

/// Runs many scenarios in summary mode across `threads` threads (0 = all cores), with the GIL
/// released. `scenarios` holds each distinct scenario once (dicts as for `simulate`, their `seed`
/// ignored); run `i` is scenario `index[i]` with seed `seeds[i]`. Returns a dict: one numpy array
/// per summary field (uint64 counts, float64, bool; 0 / NaN / false for a failed run), `status`
/// (uint8: 0 ok, 1 ScenarioError, 2 RunLimitError) and `error` (a list: None, or the error as
/// `"ScenarioError: <message>"` / `"RunLimitError: <message>"`). The results do not depend on
/// `threads`. `progress(done, total)` is called about ten times a second. Ctrl-C stops the
/// remaining runs and raises KeyboardInterrupt.
#[pyfunction]
#[pyo3(signature = (scenarios, index, seeds, threads=0, max_samples=50_000_000, progress=None))]
pub fn simulate_many<'py>(
    py: Python<'py>,
    scenarios: &Bound<'py, PyList>,
    index: &Bound<'py, PyAny>,
    seeds: &Bound<'py, PyAny>,
    threads: usize,
    max_samples: u64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    guard(|| simulate_many_inner(py, scenarios, index, seeds, threads, max_samples, progress))
}

/// `key: <message>` on one line, for an argument that is not an array of the right kind.
fn arg_err(key: &str, what: &str, e: PyErr) -> PyErr {
    let msg = e.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
    ScenarioError::new_err(format!("{key}: must be {what} ({msg})"))
}

fn i64s(v: &Bound<'_, PyAny>) -> PyResult<Vec<i64>> {
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, i64>>() {
        return Ok(a.as_array().to_vec());
    }
    v.extract::<Vec<i64>>().map_err(|e| arg_err("index", "a 1-D array or sequence of integers", e))
}

fn u64s(v: &Bound<'_, PyAny>) -> PyResult<Vec<u64>> {
    if let Ok(a) = v.extract::<PyReadonlyArray1<'_, u64>>() {
        return Ok(a.as_array().to_vec());
    }
    v.extract::<Vec<u64>>().map_err(|e| arg_err("seeds", "a 1-D array or sequence of integers in [0, 2**64 - 1]", e))
}

/// Identity of the empirical arrays of a scenario dict (values, weights, group offsets), if any:
/// scenarios whose dicts hold the same array objects share one converted copy (behind an `Arc`).
fn lengths_identity(d: &Bound<'_, PyDict>) -> Option<(usize, usize, usize)> {
    let l = d.get_item("lengths").ok()??;
    let l = l.cast::<PyDict>().ok()?;
    let v = l.get_item("values").ok()??;
    if v.is_none() {
        return None;
    }
    let ptr = |k: &str| l.get_item(k).ok().flatten().map(|x| x.as_ptr() as usize).unwrap_or(0);
    Some((v.as_ptr() as usize, ptr("weights"), ptr("group_offsets")))
}

fn simulate_many_inner<'py>(
    py: Python<'py>,
    scenarios: &Bound<'py, PyList>,
    index: &Bound<'py, PyAny>,
    seeds: &Bound<'py, PyAny>,
    threads: usize,
    max_samples: u64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    if threads > MAX_THREADS {
        return Err(ScenarioError::new_err(format!("threads: must be in [0, {MAX_THREADS}], got {threads}")));
    }
    if let Some(p) = &progress {
        if !p.is_callable() {
            return Err(ScenarioError::new_err("progress: must be None or a callable f(done, total)"));
        }
    }
    let index = i64s(index)?;
    let seeds = u64s(seeds)?;
    if index.len() != seeds.len() {
        return Err(ScenarioError::new_err(format!(
            "seeds: must hold one seed per run ({} indices, {} seeds)",
            index.len(),
            seeds.len()
        )));
    }
    let n = scenarios.len();
    if let Some((i, x)) = index.iter().enumerate().find(|(_, x)| !(0..n as i64).contains(*x)) {
        return Err(ScenarioError::new_err(format!(
            "index: must be in [0, {}] (one per scenario given), got {x} at run {i}",
            n as i64 - 1
        )));
    }
    // Only the scenarios some run uses are converted, each once; `slot[j]` is scenario j's place in `scs`.
    let mut slot: Vec<Option<usize>> = vec![None; n];
    for &x in &index {
        slot[x as usize] = Some(0);
    }
    let mut scs: Vec<Scenario> = Vec::new();
    let mut shared: Vec<((usize, usize, usize), Lengths)> = Vec::new();
    for (j, d) in scenarios.iter().enumerate() {
        if slot[j].is_none() {
            continue;
        }
        let d = d.cast::<PyDict>().map_err(|_| ScenarioError::new_err(format!("scenarios[{j}]: must be a dict")))?;
        let mut sc = scenario_from_dict(d)?;
        if let Some(id) = lengths_identity(d) {
            match shared.iter().find(|(k, _)| *k == id) {
                Some((_, l)) => sc.lengths = l.clone(),
                None => shared.push((id, sc.lengths.clone())),
            }
        }
        slot[j] = Some(scs.len());
        scs.push(sc);
    }
    drop(shared);
    let items: Vec<RunItem> =
        index.iter().zip(&seeds).map(|(&x, &seed)| RunItem { scenario: slot[x as usize].unwrap_or(0), seed }).collect();
    drop((index, seeds));

    let total = items.len();
    let cancel = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let progress = progress.map(|p| p.unbind());
    let mut interrupted = false;
    let mut progress_err: Option<PyErr> = None;
    let results = py.detach(|| {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (scs, items, cancel_ref, done_ref) = (&scs, &items, &cancel, &done);
        std::thread::scope(|scope| {
            let worker = scope.spawn(move || {
                let r = catch_unwind(AssertUnwindSafe(|| {
                    rollsim_core::sweep::run_many_agentic(scs, items, threads, max_samples, cancel_ref, done_ref)
                        .map(|rs| SummaryColumns::from_runs(&rs))
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
    let columns = results.map_err(panic_err)?.map_err(to_py_err)?;
    if interrupted {
        return Err(PyKeyboardInterrupt::new_err("rollsim sweep interrupted"));
    }
    if let Some(e) = progress_err {
        return Err(e);
    }
    if let Some(p) = &progress {
        p.call1(py, (done.load(Ordering::Relaxed), total))?;
    }
    columns_dict(py, columns)
}

fn columns_dict(py: Python<'_>, c: SummaryColumns) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    let (cols, status, error) = c.into_columns();
    for (name, col) in cols {
        match col {
            Column::U64(v) => out.set_item(name, PyArray1::from_vec(py, v))?,
            Column::F64(v) => out.set_item(name, PyArray1::from_vec(py, v))?,
            Column::Bool(v) => out.set_item(name, PyArray1::from_vec(py, v))?,
        }
    }
    let error: Vec<Option<String>> = error
        .into_iter()
        .zip(&status)
        .map(|(e, s)| {
            e.map(|m| match *s {
                STATUS_SCENARIO_ERROR => format!("ScenarioError: {m}"),
                STATUS_RUN_LIMIT => format!("RunLimitError: {m}"),
                _ => format!("KeyboardInterrupt: {m}"),
            })
        })
        .collect();
    out.set_item("status", PyArray1::from_vec(py, status))?;
    out.set_item("error", PyList::new(py, error)?)?;
    Ok(out)
}
