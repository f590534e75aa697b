//! Bindings of `rollsim_core::sync` (weight-sync estimator). Registered from `lib.rs`.
//!
//! The Python package `rollsim.sync` builds a plain config dict (see `_config_dict` there) and
//! calls these functions; they validate it, run with the GIL released, catch panics, and return
//! dicts of floats or numpy arrays. Every bad input raises `ScenarioError` (a `ValueError`) whose
//! message starts with the field's name.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use rollsim_core::sync::{
    build_plan, estimate_cached, Estimate, Hardware, InferLayout, Model, PlanCache, PlanOptions, Software, TensorGroup,
    Topology, TrainLayout,
};

use crate::{panic_err, to_py_err, ScenarioError};

fn get<'py, T: FromPyObjectOwned<'py>>(d: &Bound<'py, PyDict>, prefix: &str, key: &str) -> PyResult<T> {
    let v = d.get_item(key)?.ok_or_else(|| ScenarioError::new_err(format!("{prefix}{key}: missing")))?;
    v.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        ScenarioError::new_err(format!("{prefix}{key}: {e}"))
    })
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
            count: get(g, "model.groups.", "count")?,
            elems: get(g, "model.groups.", "elems")?,
            n_experts: get(g, "model.groups.", "n_experts")?,
            layers: get(g, "model.groups.", "layers")?,
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
        infer_bytes_per_elem: get(&m, "model.", "infer_bytes_per_elem")?,
        train_bytes_per_elem: get(&m, "model.", "train_bytes_per_elem")?,
        align_elems: get(&m, "model.", "align_elems")?,
    };
    let t: Bound<'_, PyDict> = get(cfg, "", "train")?;
    let train = TrainLayout {
        tp: get(&t, "train.", "tp")?,
        pp: get(&t, "train.", "pp")?,
        dp: get(&t, "train.", "dp")?,
        ep: get(&t, "train.", "ep")?,
        fsdp: get(&t, "train.", "fsdp")?,
    };
    let i: Bound<'_, PyDict> = get(cfg, "", "infer")?;
    let infer = InferLayout {
        instances: get(&i, "infer.", "instances")?,
        tp: get(&i, "infer.", "tp")?,
        ep: get(&i, "infer.", "ep")?,
    };
    let h: Bound<'_, PyDict> = get(cfg, "", "hardware")?;
    let hw = Hardware {
        gpus_per_node: get(&h, "", "gpus_per_node")?,
        nvlink_bytes_per_s: get(&h, "", "nvlink_bytes_per_s")?,
        nic_bytes_per_s: get(&h, "", "nic_bytes_per_s")?,
        pcie_bytes_per_s: get(&h, "", "pcie_bytes_per_s")?,
        latency_s: get(&h, "", "latency_s")?,
        colocated: get(&h, "", "colocated")?,
    };
    let s: Bound<'_, PyDict> = get(cfg, "", "software")?;
    let sw = Software {
        efficiency: get(&s, "", "efficiency")?,
        per_tensor_s: get(&s, "", "per_tensor_s")?,
        per_bucket_s: get(&s, "", "per_bucket_s")?,
        per_update_s: get(&s, "", "per_update_s")?,
        bucket_bytes: get(&s, "", "bucket_bytes")?,
        quant_bytes_per_s: get(&s, "", "quant_bytes_per_s")?,
        pause_resume_s: get(&s, "", "pause_resume_s")?,
        overlap_stages: get(&s, "", "overlap_stages")?,
        source_on_host: get(&s, "", "source_on_host")?,
        grouped_experts: get(&s, "", "grouped_experts")?,
    };
    let topo = match get::<String>(cfg, "", "topology")?.as_str() {
        "colocated" => Topology::Colocated,
        "naive" => Topology::Naive,
        "parallel" => Topology::Parallel,
        "relay" => Topology::Relay { fanout: get(cfg, "", "fanout")? },
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
        const OK: [&str; 12] = [
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
        if !OK.contains(&name.as_str()) {
            return Err(ScenarioError::new_err(format!("{name}: cannot be swept; allowed: {}", OK.join(", "))));
        }
        if name == "instances" && vals.iter().any(|x| !(x.fract() == 0.0 && *x >= 1.0 && *x <= 65_536.0)) {
            return Err(ScenarioError::new_err("instances: every value must be a whole number in 1..=65536"));
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sync_estimate, m)?)?;
    m.add_function(wrap_pyfunction!(sync_estimate_many, m)?)?;
    m.add_function(wrap_pyfunction!(sync_plan, m)?)?;
    Ok(())
}
