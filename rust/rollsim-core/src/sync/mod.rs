//! Weight-sync estimator: how long it takes to move a new policy's weights from the
//! training GPUs to every inference GPU, and which term (wire, per-message latency, per-tensor
//! software overhead, quantization, host-to-device copies) dominates.
//!
//! * [`plan`]: the re-sharding plan between a training layout (TP x PP x DP, EP, optional FSDP) and
//!   an inference layout (instances x TP, EP): one transfer per (source rank, destination rank,
//!   tensor, slice), and the load of every link.
//! * [`cost`]: the alpha-beta cost models of the topologies (co-located hand-off, naive
//!   gather-and-send, parallel per-rank sends along the plan, chunked pipelined relay, NCCL
//!   broadcast) and the staged per-bucket pipeline (H2D, quantize, transfer, load).
//!
//! Formulas: `docs/weight_sync.md` (alpha-beta model; chunked pipeline
//! `T = (C + h - 1)(alpha + m / beta)`, optimum `T* = (sqrt(S / beta) + sqrt((h - 1) alpha))^2`).
//! Units: bytes, seconds, bytes per second. Pure Rust; `rollsim-py` binds it.

pub mod cost;
pub mod plan;

pub use cost::{estimate, estimate_cached, relay_time, Estimate, Hardware, PlanCache, Software, Topology};
pub use plan::{build_plan, LinkLoads, Plan, PlanOptions, Transfers};

use crate::error::{Error, Result};

/// A group of identical tensors (e.g. "every expert's down projection").
#[derive(Debug, Clone, PartialEq)]
pub struct TensorGroup {
    /// Number of tensors in the group (>= 1).
    pub count: u64,
    /// Elements per tensor (>= 1).
    pub elems: u64,
    /// Number of experts the group's tensors belong to (0 = dense, not an expert tensor). The
    /// tensors are ordered layer-major: with `per_layer = max(1, count / layers)`, tensor `i` is in
    /// layer `min(i / per_layer, layers - 1)` and belongs to expert
    /// `(i % per_layer) * n_experts / per_layer`.
    pub n_experts: u32,
    /// Number of layers the group spans (>= 1); decides the pipeline stage of each tensor.
    pub layers: u32,
    /// `true` for tensors that no layout shards (norms, biases, router): every rank holds and
    /// needs the whole tensor.
    pub replicated: bool,
    /// `true` for tensors that do not travel along the re-sharding plan but are sent whole to
    /// every inference rank by a packed broadcast after the plan's transfers (NeMo-RL
    /// `nccl_reshard_refit` "misc path": everything except the FFN projections). Only the
    /// `parallel` topology distinguishes them; the others move every tensor the same way.
    pub broadcast: bool,
}

/// A model as tensor groups, with the bytes per element on each side.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub groups: Vec<TensorGroup>,
    /// Bytes per element in the inference format (what is moved): 2 for BF16, `1 + 4 / b^2` for
    /// FP8 with `b x b` blocks and an FP32 scale per block.
    pub infer_bytes_per_elem: f64,
    /// Bytes per element in the training format (what is quantized when the formats differ).
    pub train_bytes_per_elem: f64,
    /// Slices are cut on multiples of this many elements (block-quantized formats need whole
    /// blocks before quantizing: `b * b` for `b x b` blocks). >= 1.
    pub align_elems: u64,
}

/// Range of an integer input, as the Python API (`rollsim.sync.cluster.INT_BOUNDS`) states it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntBound {
    pub field: &'static str,
    pub lo: u64,
    pub hi: u64,
}

impl IntBound {
    /// `Ok` for a value in `[lo, hi]`, else `field: must be in [lo, hi], got v` (+ `where_`).
    pub fn check(&self, v: u64, where_: &str) -> Result<()> {
        if (self.lo..=self.hi).contains(&v) {
            Ok(())
        } else {
            Err(Error::field(self.field, format!("must be in [{}, {}], got {v}{where_}", self.lo, self.hi)))
        }
    }
}

const fn ib(field: &'static str, lo: u64, hi: u64) -> IntBound {
    IntBound { field, lo, hi }
}

/// Tensors per group: at most 2**24 (the plan visits each tensor).
pub const GROUP_COUNT: IntBound = ib("model.groups.count", 1, 1 << 24);
/// Elements per tensor: at most 2**50.
pub const GROUP_ELEMS: IntBound = ib("model.groups.elems", 1, 1 << 50);
pub const GROUP_EXPERTS: IntBound = ib("model.groups.n_experts", 0, 65_536);
pub const GROUP_LAYERS: IntBound = ib("model.groups.layers", 1, 65_536);
/// Slices are cut on multiples of this (at most a 4096 x 4096 block).
pub const ALIGN_ELEMS: IntBound = ib("model.align_elems", 1, 1 << 24);
/// Every parallel size (`train.tp`, ..., `infer.ep`): at most 65536.
pub const LAYOUT_MAX: u64 = 65_536;
pub const GPUS_PER_NODE: IntBound = ib("gpus_per_node", 1, 1024);
/// GPUs behind one host uplink (a PCIe switch): 2 on an 8-GPU HGX A100 board.
pub const GPUS_PER_HOST_LINK: IntBound = ib("gpus_per_host_link", 1, 1024);
pub const FANOUT: IntBound = ib("fanout", 1, 1024);

/// Bytes per element of either format (FP8 with its scales: `1 + 4 / b^2`, at most 5).
pub const BYTES_PER_ELEM: (f64, f64, &str) = (1e-3, 16.0, "[1e-3, 16]");

/// Real-valued inputs of the cluster: bandwidths 1 kB/s to 1 PB/s, efficiency from 1e-6, seconds up
/// to 1e6, buckets 1 kB to 1 PB. With the integer bounds, every term of an estimate stays finite.
pub mod bounds {
    use crate::scenario::Bound;

    const fn b(field: &'static str, lo: f64, hi: f64, range: &'static str, unit: &'static str) -> Bound {
        Bound { field, lo, hi, range, unit, extra: "" }
    }
    pub const NVLINK_BYTES_PER_S: Bound = b("nvlink_bytes_per_s", 1e3, 1e15, "[1e3, 1e15]", " bytes/s");
    pub const NIC_BYTES_PER_S: Bound = b("nic_bytes_per_s", 1e3, 1e15, "[1e3, 1e15]", " bytes/s");
    pub const PCIE_BYTES_PER_S: Bound = b("pcie_bytes_per_s", 1e3, 1e15, "[1e3, 1e15]", " bytes/s");
    pub const LATENCY_S: Bound = b("latency_s", 0.0, 1e6, "[0, 1e6]", " seconds");
    pub const EFFICIENCY: Bound = b("efficiency", 1e-6, 1.0, "[1e-6, 1]", "");
    pub const PER_TENSOR_S: Bound = b("per_tensor_s", 0.0, 1e6, "[0, 1e6]", " seconds");
    pub const PER_BUCKET_S: Bound = b("per_bucket_s", 0.0, 1e6, "[0, 1e6]", " seconds");
    pub const PER_UPDATE_S: Bound = b("per_update_s", 0.0, 1e6, "[0, 1e6]", " seconds");
    pub const BUCKET_BYTES: Bound = b("bucket_bytes", 1e3, 1e15, "[1e3, 1e15]", " bytes");
    pub const QUANT_BYTES_PER_S: Bound = b("quant_bytes_per_s", 1e3, 1e15, "[1e3, 1e15]", " bytes/s");
    pub const PAUSE_RESUME_S: Bound = b("pause_resume_s", 0.0, 1e6, "[0, 1e6]", " seconds");
}

impl Model {
    pub fn validate(&self) -> Result<()> {
        if self.groups.is_empty() {
            return Err(Error::field("model.groups", "at least one tensor group is needed"));
        }
        for (i, g) in self.groups.iter().enumerate() {
            let at = format!(" (group {i})");
            GROUP_COUNT.check(g.count, &at)?;
            GROUP_ELEMS.check(g.elems, &at)?;
            GROUP_EXPERTS.check(g.n_experts as u64, &at)?;
            GROUP_LAYERS.check(g.layers as u64, &at)?;
        }
        for (field, v) in [
            ("model.infer_bytes_per_elem", self.infer_bytes_per_elem),
            ("model.train_bytes_per_elem", self.train_bytes_per_elem),
        ] {
            let (lo, hi, range) = BYTES_PER_ELEM;
            if !(lo..=hi).contains(&v) {
                return Err(Error::field(field, format!("must be in {range} bytes, got {}", crate::scenario::show(v))));
            }
        }
        ALIGN_ELEMS.check(self.align_elems, "")
    }

    /// Total number of tensors.
    pub fn n_tensors(&self) -> u64 {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// Total elements (parameters).
    pub fn n_elems(&self) -> f64 {
        self.groups.iter().map(|g| g.count as f64 * g.elems as f64).sum()
    }

    /// Bytes of one full copy in the inference format.
    pub fn infer_bytes(&self) -> f64 {
        self.n_elems() * self.infer_bytes_per_elem
    }

    /// Bytes (inference format) of one copy of the tensors sent by broadcast (`broadcast` groups).
    pub fn broadcast_bytes(&self) -> f64 {
        self.groups.iter().filter(|g| g.broadcast).map(|g| g.count as f64 * g.elems as f64).sum::<f64>()
            * self.infer_bytes_per_elem
    }

    /// Number of tensors sent by broadcast (`broadcast` groups).
    pub fn broadcast_tensors(&self) -> u64 {
        self.groups.iter().filter(|g| g.broadcast).map(|g| g.count).sum()
    }
}

/// Training-side parallel layout (Megatron convention): `tp * pp * dp` ranks; experts are split
/// over `ep` ranks carved out of each stage's `dp * tp` ranks (expert tensor parallelism 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrainLayout {
    pub tp: u32,
    pub pp: u32,
    pub dp: u32,
    pub ep: u32,
    /// FSDP / ZeRO-3: the `dp` replicas each hold `1 / dp` of their slice instead of a full copy.
    pub fsdp: bool,
}

impl TrainLayout {
    pub fn world(&self) -> u64 {
        self.tp as u64 * self.pp as u64 * self.dp as u64
    }
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("train.tp", self.tp), ("train.pp", self.pp), ("train.dp", self.dp), ("train.ep", self.ep)] {
            ib(name, 1, LAYOUT_MAX).check(v as u64, "")?;
        }
        let stage = self.tp as u64 * self.dp as u64;
        if stage % self.ep as u64 != 0 {
            return Err(Error::field(
                "train.ep",
                format!("must divide tp * dp = {stage} (experts are spread over a stage's ranks), got {}", self.ep),
            ));
        }
        if self.world() > 1 << 20 {
            return Err(Error::field("train", "tp * pp * dp must be <= 1048576"));
        }
        Ok(())
    }
}

/// Inference-side layout: `instances` engines of `tp` GPUs each; experts split over `ep` groups of
/// `tp / ep` GPUs (each expert tensor-sharded inside its group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InferLayout {
    pub instances: u32,
    pub tp: u32,
    pub ep: u32,
}

impl InferLayout {
    pub fn world(&self) -> u64 {
        self.instances as u64 * self.tp as u64
    }
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("infer.instances", self.instances), ("infer.tp", self.tp), ("infer.ep", self.ep)] {
            ib(name, 1, LAYOUT_MAX).check(v as u64, "")?;
        }
        if self.tp % self.ep != 0 {
            return Err(Error::field("infer.ep", format!("must divide infer.tp = {}, got {}", self.tp, self.ep)));
        }
        if self.world() > 1 << 20 {
            return Err(Error::field("infer", "instances * tp must be <= 1048576"));
        }
        Ok(())
    }
}
