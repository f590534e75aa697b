//! Bindings of `rollsim_core::sync` (weight-sync estimator). Registered from `lib.rs`.
//!
//! The Python package `rollsim.sync` builds a plain config dict (see `_config_dict` there) and
//! calls these functions; they validate it, run with the GIL released, catch panics, and return
//! dicts of floats or numpy arrays. Every bad input raises `ScenarioError` (a `ValueError`) whose
//! message starts with the field's name.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyList};

use rollsim_core::scenario::show;
use rollsim_core::sync::{
    build_plan, estimate_cached, Estimate, Hardware, InferLayout, IntBound, Model, PlanCache, PlanOptions, Software,
    TensorGroup, Topology, TrainLayout, ALIGN_ELEMS, FANOUT, GPUS_PER_HOST_LINK, GPUS_PER_NODE, GROUP_COUNT,
    GROUP_ELEMS, GROUP_EXPERTS, GROUP_LAYERS, LAYOUT_MAX,
};

use crate::{panic_err, to_py_err, ScenarioError};

fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, prefix: &str, key: &str) -> PyResult<T> {
    let v = d.get_item(key)?.ok_or_else(|| ScenarioError::new_err(format!("{prefix}{key}: missing")))?;
    v.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        ScenarioError::new_err(format!("{prefix}{key}: {e}"))
    })
}

/// A huge Python int as rollsim's messages show it (`10**400`, `2**2000`), never in full.
fn show_int(v: &Bound<'_, PyAny>) -> String {
    v.py()
        .import("rollsim._check")
        .and_then(|m| m.getattr("show"))
        .and_then(|f| f.call1((v,)))
        .and_then(|s| s.extract::<String>())
        .unwrap_or_else(|_| "an integer beyond 64 bits".into())
}

/// An integer field in `[b.lo, b.hi]` (named `prefix + key`), with a checked conversion whose
/// error names the field and the range (`fanout: must be in [1, 1024], got -3`), like the
/// Python API's; PyO3's own conversion would say only "out of range integral type conversion".
fn get_int<T: TryFrom<u64>>(d: &Bound<'_, PyDict>, prefix: &str, key: &str, b: IntBound) -> PyResult<T> {
    let name = format!("{prefix}{key}");
    let v = d.get_item(key)?.ok_or_else(|| ScenarioError::new_err(format!("{name}: missing")))?;
    let (lo, hi) = (b.lo, b.hi);
    let out_of_range = |got: String| ScenarioError::new_err(format!("{name}: must be in [{lo}, {hi}], got {got}"));
    if v.is_instance_of::<PyBool>() {
        return Err(ScenarioError::new_err(format!("{name}: must be an integer in [{lo}, {hi}], got bool {v}")));
    }
    match v.extract::<i64>() {
        Ok(x) if x >= 0 && (lo..=hi).contains(&(x as u64)) => {
            T::try_from(x as u64).map_err(|_| out_of_range(x.to_string()))
        }
        Ok(x) => Err(out_of_range(x.to_string())),
        Err(_) if v.is_instance_of::<PyInt>() => Err(out_of_range(show_int(&v))),
        Err(_) => {
            let kind = v.get_type().name().map(|n| n.to_string()).unwrap_or_default();
            let repr = v.repr().map(|r| r.to_string()).unwrap_or_default();
            Err(ScenarioError::new_err(format!("{name}: must be an integer in [{lo}, {hi}], got {kind} {repr}")))
        }
    }
}

/// A float field; an int too large for a float is refused naming the field (not a raw OverflowError).
fn get_f64(d: &Bound<'_, PyDict>, prefix: &str, key: &str) -> PyResult<f64> {
    let name = format!("{prefix}{key}");
    let v = d.get_item(key)?.ok_or_else(|| ScenarioError::new_err(format!("{name}: missing")))?;
    if v.is_instance_of::<PyBool>() {
        return Err(ScenarioError::new_err(format!("{name}: must be a number, got bool {v}")));
    }
    match v.extract::<f64>() {
        Ok(x) => Ok(x),
        Err(_) if v.is_instance_of::<PyInt>() => {
            Err(ScenarioError::new_err(format!("{name}: must be a finite number, got {}", show_int(&v))))
        }
        Err(e) => Err(ScenarioError::new_err(format!("{name}: {e}"))),
    }
}

fn layout(name: &'static str) -> IntBound {
    IntBound { field: name, lo: 1, hi: LAYOUT_MAX }
}

struct Config {
    model: Model,
    train: TrainLayout,
    infer: InferLayout,
    hw: Hardware,
    sw: Software,
    topo: Topology,
}

fn parse(cfg: &Bound<'_, PyDict>) -> PyResult<Config> {
    let m: Bound<'_, PyDict> = get(cfg, "", "model")?;
    let groups: Bound<'_, PyList> = get(&m, "model.", "groups")?;
    let mut gs = Vec::with_capacity(groups.len());
    for g in groups.iter() {
        let g = g.cast::<PyDict>().map_err(|_| ScenarioError::new_err("model.groups: each group must be a dict"))?;
        gs.push(TensorGroup {
            count: get_int(g, "model.groups.", "count", GROUP_COUNT)?,
            elems: get_int(g, "model.groups.", "elems", GROUP_ELEMS)?,
            n_experts: get_int(g, "model.groups.", "n_experts", GROUP_EXPERTS)?,
            layers: get_int(g, "model.groups.", "layers", GROUP_LAYERS)?,
            replicated: get(g, "model.groups.", "replicated")?,
            broadcast: match g.get_item("broadcast")? {
                None => false,
                Some(v) => {
                    v.extract::<bool>().map_err(|e| ScenarioError::new_err(format!("model.groups.broadcast: {e}")))?
                }
            },
        });
    }
    let model = Model {
        groups: gs,
        infer_bytes_per_elem: get_f64(&m, "model.", "infer_bytes_per_elem")?,
        train_bytes_per_elem: get_f64(&m, "model.", "train_bytes_per_elem")?,
        align_elems: get_int(&m, "model.", "align_elems", ALIGN_ELEMS)?,
    };
    let t: Bound<'_, PyDict> = get(cfg, "", "train")?;
    let train = TrainLayout {
        tp: get_int(&t, "train.", "tp", layout("train.tp"))?,
        pp: get_int(&t, "train.", "pp", layout("train.pp"))?,
        dp: get_int(&t, "train.", "dp", layout("train.dp"))?,
        ep: get_int(&t, "train.", "ep", layout("train.ep"))?,
        fsdp: get(&t, "train.", "fsdp")?,
    };
    let i: Bound<'_, PyDict> = get(cfg, "", "infer")?;
    let infer = InferLayout {
        instances: get_int(&i, "infer.", "instances", layout("infer.instances"))?,
        tp: get_int(&i, "infer.", "tp", layout("infer.tp"))?,
        ep: get_int(&i, "infer.", "ep", layout("infer.ep"))?,
    };
    let h: Bound<'_, PyDict> = get(cfg, "", "hardware")?;
    let hw = Hardware {
        gpus_per_node: get_int(&h, "", "gpus_per_node", GPUS_PER_NODE)?,
        nvlink_bytes_per_s: get_f64(&h, "", "nvlink_bytes_per_s")?,
        nic_bytes_per_s: get_f64(&h, "", "nic_bytes_per_s")?,
        pcie_bytes_per_s: get_f64(&h, "", "pcie_bytes_per_s")?,
        gpus_per_host_link: get_int(&h, "", "gpus_per_host_link", GPUS_PER_HOST_LINK)?,
        latency_s: get_f64(&h, "", "latency_s")?,
        colocated: get(&h, "", "colocated")?,
    };
    let s: Bound<'_, PyDict> = get(cfg, "", "software")?;
    let sw = Software {
        efficiency: get_f64(&s, "", "efficiency")?,
        per_tensor_s: get_f64(&s, "", "per_tensor_s")?,
        per_bucket_s: get_f64(&s, "", "per_bucket_s")?,
        per_update_s: get_f64(&s, "", "per_update_s")?,
        bucket_bytes: get_f64(&s, "", "bucket_bytes")?,
        quant_bytes_per_s: get_f64(&s, "", "quant_bytes_per_s")?,
        pause_resume_s: get_f64(&s, "", "pause_resume_s")?,
        overlap_stages: get(&s, "", "overlap_stages")?,
        source_on_host: get(&s, "", "source_on_host")?,
        grouped_experts: get(&s, "", "grouped_experts")?,
    };
    let topo = match get::<String>(cfg, "", "topology")?.as_str() {
        "colocated" => Topology::Colocated,
        "naive" => Topology::Naive,
        "parallel" => Topology::Parallel,
        "relay" => Topology::Relay { fanout: get_int(cfg, "", "fanout", FANOUT)? },
        "broadcast" => Topology::Broadcast,
        other => {
            return Err(ScenarioError::new_err(format!(
                "topology: must be one of 'colocated', 'naive', 'parallel', 'relay', 'broadcast', got {other:?}"
            )))
        }
    };
    Ok(Config { model, train, infer, hw, sw, topo })
}

fn estimate_dict<'py>(py: Python<'py>, e: &Estimate) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total_s", e.total_s)?;
    d.set_item("transfer_s", e.transfer_s)?;
    d.set_item("latency_s", e.latency_s)?;
    d.set_item("software_s", e.software_s)?;
    d.set_item("quantization_s", e.quantization_s)?;
    d.set_item("h2d_s", e.h2d_s)?;
    d.set_item("pause_resume_s", e.pause_resume_s)?;
    d.set_item("overlap_s", e.overlap_s)?;
    d.set_item("busiest_link_bytes", e.busiest_link_bytes)?;
    d.set_item("model_bytes", e.model_bytes)?;
    d.set_item("n_buckets", e.n_buckets)?;
    d.set_item("chunks", e.chunks)?;
    d.set_item("hops", e.hops)?;
    d.set_item("tensors_charged", e.tensors_charged)?;
    Ok(d)
}

/// Estimates one weight update from a config dict (built by `rollsim.sync`). Returns a dict of
/// floats (seconds, bytes). Raises ScenarioError (a ValueError) naming the bad field.
#[pyfunction]
fn sync_estimate<'py>(py: Python<'py>, config: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyDict>> {
    let c = parse(config)?;
    let r = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| {
            estimate_cached(&c.model, &c.train, &c.infer, &c.hw, &c.sw, c.topo, &mut PlanCache::default())
        }))
    });
    let e = r.map_err(panic_err)?.map_err(to_py_err)?;
    estimate_dict(py, &e)
}

/// Vectorized estimate: `overrides` maps field names to float64 arrays of one common length `n`
/// (allowed: instances, nic_bytes_per_s, nvlink_bytes_per_s, pcie_bytes_per_s, latency_s,
/// efficiency, per_tensor_s, per_bucket_s, per_update_s, bucket_bytes, quant_bytes_per_s,
/// pause_resume_s). Returns a dict of float64 arrays of length `n`, one per breakdown term.
/// Plans are reused between rows that share instances and bucket size.
#[pyfunction]
fn sync_estimate_many<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyDict>,
    overrides: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let base = parse(config)?;
    let mut cols: Vec<(String, Vec<f64>)> = Vec::new();
    let mut n: Option<usize> = None;
    for (k, v) in overrides.iter() {
        let name: String = k.extract()?;
        let arr: PyReadonlyArray1<'_, f64> =
            v.extract().map_err(|e| ScenarioError::new_err(format!("{name}: expected a 1-D float64 array ({})", e)))?;
        let vals = arr.as_array().to_vec();
        if let Some(n0) = n {
            if vals.len() != n0 {
                return Err(ScenarioError::new_err(format!(
                    "{name}: length {} differs from the other arrays' length {n0}",
                    vals.len()
                )));
            }
        }
        n = Some(vals.len());
        if !SWEEPABLE.contains(&name.as_str()) {
            return Err(ScenarioError::new_err(format!("{name}: cannot be swept; allowed: {}", SWEEPABLE.join(", "))));
        }
        if name == "instances" {
            if let Some(x) = vals.iter().find(|x| !(x.fract() == 0.0 && **x >= 1.0 && **x <= LAYOUT_MAX as f64)) {
                return Err(ScenarioError::new_err(format!(
                    "instances: must be whole numbers in [1, {LAYOUT_MAX}], got {}",
                    show(*x)
                )));
            }
        }
        cols.push((name, vals));
    }
    let n = n.unwrap_or(1);
    let r = py.detach(|| {
        catch_unwind(AssertUnwindSafe(|| -> rollsim_core::Result<Vec<Estimate>> {
            let mut cache = PlanCache::default();
            let mut out = Vec::with_capacity(n);
            for row in 0..n {
                let (mut infer, mut hw, mut sw) = (base.infer, base.hw, base.sw);
                for (name, v) in &cols {
                    let x = v[row];
                    match name.as_str() {
                        "instances" => infer.instances = x as u32,
                        "nic_bytes_per_s" => hw.nic_bytes_per_s = x,
                        "nvlink_bytes_per_s" => hw.nvlink_bytes_per_s = x,
                        "pcie_bytes_per_s" => hw.pcie_bytes_per_s = x,
                        "latency_s" => hw.latency_s = x,
                        "efficiency" => sw.efficiency = x,
                        "per_tensor_s" => sw.per_tensor_s = x,
                        "per_bucket_s" => sw.per_bucket_s = x,
                        "per_update_s" => sw.per_update_s = x,
                        "bucket_bytes" => sw.bucket_bytes = x,
                        "quant_bytes_per_s" => sw.quant_bytes_per_s = x,
                        _ => sw.pause_resume_s = x,
                    }
                }
                out.push(estimate_cached(&base.model, &base.train, &infer, &hw, &sw, base.topo, &mut cache)?);
            }
            Ok(out)
        }))
    });
    let es = r.map_err(panic_err)?.map_err(to_py_err)?;
    let d = PyDict::new(py);
    let col = |f: fn(&Estimate) -> f64| es.iter().map(f).collect::<Vec<f64>>();
    d.set_item("total_s", PyArray1::from_vec(py, col(|e| e.total_s)))?;
    d.set_item("transfer_s", PyArray1::from_vec(py, col(|e| e.transfer_s)))?;
    d.set_item("latency_s", PyArray1::from_vec(py, col(|e| e.latency_s)))?;
    d.set_item("software_s", PyArray1::from_vec(py, col(|e| e.software_s)))?;
    d.set_item("quantization_s", PyArray1::from_vec(py, col(|e| e.quantization_s)))?;
    d.set_item("h2d_s", PyArray1::from_vec(py, col(|e| e.h2d_s)))?;
    d.set_item("pause_resume_s", PyArray1::from_vec(py, col(|e| e.pause_resume_s)))?;
    d.set_item("overlap_s", PyArray1::from_vec(py, col(|e| e.overlap_s)))?;
    d.set_item("busiest_link_bytes", PyArray1::from_vec(py, col(|e| e.busiest_link_bytes)))?;
    Ok(d)
}

/// The re-sharding plan for the config's layouts (all instances). Returns
/// `{"transfers": dict of numpy columns | None, "links": dict of numpy columns, "n_transfers": int,
/// "total_bytes": float, "local_bytes": float}`. Raises ScenarioError naming the field (including
/// `max_transfers` when the list would be longer).
#[pyfunction]
#[pyo3(signature = (config, record_transfers=true, max_transfers=5_000_000))]
fn sync_plan<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyDict>,
    record_transfers: bool,
    max_transfers: u64,
) -> PyResult<Bound<'py, PyDict>> {
    let c = parse(config)?;
    let po = PlanOptions {
        gpus_per_node: c.hw.gpus_per_node,
        colocated: c.hw.colocated,
        bucket_bytes: c.sw.bucket_bytes,
        record_transfers,
        max_transfers,
        grouped_experts: c.sw.grouped_experts,
    };
    let r = py.detach(|| catch_unwind(AssertUnwindSafe(|| build_plan(&c.model, &c.train, &c.infer, &po))));
    let p = r.map_err(panic_err)?.map_err(to_py_err)?;
    let out = PyDict::new(py);
    match p.transfers {
        None => out.set_item("transfers", py.None())?,
        Some(t) => {
            let d = PyDict::new(py);
            d.set_item("src_rank", PyArray1::from_vec(py, t.src_rank))?;
            d.set_item("dst_rank", PyArray1::from_vec(py, t.dst_rank))?;
            d.set_item("group", PyArray1::from_vec(py, t.group))?;
            d.set_item("tensor", PyArray1::from_vec(py, t.tensor))?;
            d.set_item("offset_elems", PyArray1::from_vec(py, t.offset_elems))?;
            d.set_item("len_elems", PyArray1::from_vec(py, t.len_elems))?;
            d.set_item("bytes", PyArray1::from_vec(py, t.bytes))?;
            d.set_item("link", PyArray1::from_vec(py, t.link))?;
            out.set_item("transfers", d)?;
        }
    }
    let l = p.loads;
    let d = PyDict::new(py);
    d.set_item("nic_out_bytes", PyArray1::from_vec(py, l.nic_out_bytes))?;
    d.set_item("nvlink_out_bytes", PyArray1::from_vec(py, l.nvlink_out_bytes))?;
    d.set_item("nic_out_msgs", PyArray1::from_vec(py, l.nic_out_msgs))?;
    d.set_item("nvlink_out_msgs", PyArray1::from_vec(py, l.nvlink_out_msgs))?;
    d.set_item("nic_in_bytes", PyArray1::from_vec(py, l.nic_in_bytes))?;
    d.set_item("nvlink_in_bytes", PyArray1::from_vec(py, l.nvlink_in_bytes))?;
    d.set_item("nic_in_msgs", PyArray1::from_vec(py, l.nic_in_msgs))?;
    d.set_item("nvlink_in_msgs", PyArray1::from_vec(py, l.nvlink_in_msgs))?;
    d.set_item("needed_bytes", PyArray1::from_vec(py, l.needed_bytes))?;
    d.set_item("src_tensors", PyArray1::from_vec(py, l.src_tensors))?;
    d.set_item("dst_tensors", PyArray1::from_vec(py, l.dst_tensors))?;
    out.set_item("links", d)?;
    out.set_item("n_transfers", p.n_transfers)?;
    out.set_item("total_bytes", p.total_bytes)?;
    out.set_item("local_bytes", l.local_bytes)?;
    Ok(out)
}

/// The fields `sync_estimate_many` can sweep (`rollsim.sync.SWEEPABLE` is this list).
pub const SWEEPABLE: [&str; 12] = [
    "instances",
    "nic_bytes_per_s",
    "nvlink_bytes_per_s",
    "pcie_bytes_per_s",
    "latency_s",
    "efficiency",
    "per_tensor_s",
    "per_bucket_s",
    "per_update_s",
    "bucket_bytes",
    "quant_bytes_per_s",
    "pause_resume_s",
];

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sync_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(sync_estimate_many, m)?)?;
    m.add_function(wrap_pyfunction!(sync_plan, m)?)?;
    m.add("SYNC_SWEEPABLE", SWEEPABLE.to_vec())?;
    Ok(())
}
