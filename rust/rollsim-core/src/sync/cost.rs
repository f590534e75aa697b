//! Cost models of the weight-sync topologies, and the staged per-bucket pipeline.
//!
//! Alpha-beta model (Thakur, Rabenseifner and Gropp, IJHPCA 2005; `docs/weight_sync.md`): a message of `m` bytes over a link costs
//! `alpha + m / beta`, with `beta = efficiency * link bandwidth`.
//!
//! * co-located: each inference GPU takes its `S / g` shard over NVLink (CUDA IPC hand-off).
//! * naive: one training GPU gathers each bucket over NVLink and sends it to each of the `n`
//!   instances in turn over its NIC, the receiving GPU scatters it inside its instance; buckets
//!   are pipelined: `first bucket's stages + (C - 1) * slowest stage`; the send stage is
//!   `n * m / beta_nic`.
//! * parallel: the re-sharding plan to all instances at once; time of the busiest link
//!   (`max over links of bytes / beta`), plus its messages times alpha.
//! * relay: the plan to the first instance, then instances forward chunks along a chain (fanout 1)
//!   or a tree (fanout f, each chunk sent f times per hop). Chunked pipeline over `h` hops with
//!   `C` chunks: `T = (C + h - 1) * (alpha + tau / C)`, `tau` = the slowest hop's time for all the
//!   bytes; best `C* = sqrt((h - 1) * tau / alpha)` (never fewer chunks than the buffer allows),
//!   `T* ~ (sqrt(tau) + sqrt((h - 1) alpha))^2`.
//! * broadcast: every inference GPU receives the full model (NCCL broadcast; the engine keeps its
//!   slice). Bottleneck: NVLink inside one node, else `min(NVLink, gpus_per_node * NIC)` (NCCL
//!   drives every NIC of a node); latency `ceil(log2 p) * alpha` per bucket.
//!
//! Stages per bucket: H2D (weights kept in host memory: each sending GPU's share over PCIe),
//! quantization (training format to inference format, when they differ), transfer, load (the
//! engine's per-tensor and per-bucket software cost). With `overlap_stages` the buckets are
//! pipelined (`sum / C + (C - 1) / C * max`), else the stages run one after another.

use std::collections::HashMap;

use super::bounds::*;
use super::plan::{build_plan, LinkLoads, PlanOptions};
use super::{InferLayout, Model, TrainLayout, FANOUT, GPUS_PER_HOST_LINK, GPUS_PER_NODE};
use crate::error::Result;

/// Links and placement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hardware {
    pub gpus_per_node: u32,
    /// Per GPU, per direction.
    pub nvlink_bytes_per_s: f64,
    /// Per GPU (one NIC per GPU), per direction.
    pub nic_bytes_per_s: f64,
    /// Host-to-device copy bandwidth per GPU: its own link and the uplink of the PCIe switch it
    /// sits behind.
    pub pcie_bytes_per_s: f64,
    /// GPUs behind one host uplink of `pcie_bytes_per_s` (2 on an 8-GPU HGX A100 board): those
    /// that copy at once split it (as `rollsim.hardware.switching.host_link_share`).
    pub gpus_per_host_link: u32,
    /// Fixed cost of one message (alpha).
    pub latency_s: f64,
    /// Training and inference share the GPUs.
    pub colocated: bool,
}

/// The software stack's achieved efficiency and overheads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Software {
    /// Achieved fraction of link bandwidth, in (0, 1].
    pub efficiency: f64,
    /// Engine cost per tensor loaded (name mapping, IPC rebuild, weight loader), seconds.
    pub per_tensor_s: f64,
    /// Cost per bucket (one update call / IPC round trip), seconds.
    pub per_bucket_s: f64,
    /// Fixed cost per update (RPCs, barriers, metadata), seconds.
    pub per_update_s: f64,
    /// Bucket (and relay buffer) size, bytes.
    pub bucket_bytes: f64,
    /// Quantization throughput per GPU (bytes of training-format input per second).
    pub quant_bytes_per_s: f64,
    /// Pausing and resuming generation (and clearing caches), seconds.
    pub pause_resume_s: f64,
    /// Pipeline the per-bucket stages (H2D, quantize, transfer, load).
    pub overlap_stages: bool,
    /// The weights start in host memory (add an H2D stage).
    pub source_on_host: bool,
    /// The engine receives each layer's experts as one tensor per projection (see
    /// [`PlanOptions::grouped_experts`]); only the per-rank tensor count of `parallel` uses it.
    pub grouped_experts: bool,
}

impl Default for Software {
    fn default() -> Self {
        Software {
            efficiency: 1.0,
            per_tensor_s: 0.0,
            per_bucket_s: 0.0,
            per_update_s: 0.0,
            bucket_bytes: 1e9,
            quant_bytes_per_s: 1e12,
            pause_resume_s: 0.0,
            overlap_stages: true,
            source_on_host: false,
            grouped_experts: false,
        }
    }
}

/// How weights travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    Colocated,
    Naive,
    Parallel,
    /// `fanout` 1 is a chain.
    Relay {
        fanout: u32,
    },
    Broadcast,
}

/// The estimate and its breakdown. `total_s = transfer_s + latency_s + software_s +
/// quantization_s + h2d_s + pause_resume_s + overlap_s` (`overlap_s <= 0` is the time saved by
/// pipelining the stages).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Estimate {
    pub total_s: f64,
    pub transfer_s: f64,
    pub latency_s: f64,
    pub software_s: f64,
    pub quantization_s: f64,
    pub h2d_s: f64,
    pub pause_resume_s: f64,
    pub overlap_s: f64,
    /// Bytes on the busiest link (or per GPU for closed-form topologies).
    pub busiest_link_bytes: f64,
    /// Bytes of one full model copy in the inference format.
    pub model_bytes: f64,
    pub n_buckets: f64,
    /// Chunks and hops of the relay pipeline (0 for other topologies).
    pub chunks: f64,
    pub hops: f64,
    /// Tensors charged `per_tensor_s`: for `parallel`, the busiest rank's count along the plan
    /// (max over senders and receivers) plus the broadcast tensors every receiver loads; for the
    /// other topologies every tensor of the model (each inference GPU loads all of them).
    pub tensors_charged: f64,
}

impl Hardware {
    /// Bytes/s one GPU copies to or from the host over while `copying` GPUs copy at once, placed in
    /// order on nodes of `gpus_per_node`: `pcie_bytes_per_s / min(gpus_per_host_link, copying on
    /// its node)`; exactly `pcie_bytes_per_s` when no GPU shares its uplink.
    pub fn host_link_share(&self, copying: f64) -> f64 {
        let on_node = copying.min(self.gpus_per_node as f64).max(1.0);
        let share = (self.gpus_per_host_link as f64).min(on_node).floor().max(1.0);
        if share == 1.0 {
            self.pcie_bytes_per_s
        } else {
            self.pcie_bytes_per_s / share
        }
    }

    pub fn validate(&self) -> Result<()> {
        GPUS_PER_NODE.check(self.gpus_per_node as u64, "")?;
        GPUS_PER_HOST_LINK.check(self.gpus_per_host_link as u64, "")?;
        NVLINK_BYTES_PER_S.check(self.nvlink_bytes_per_s)?;
        NIC_BYTES_PER_S.check(self.nic_bytes_per_s)?;
        PCIE_BYTES_PER_S.check(self.pcie_bytes_per_s)?;
        LATENCY_S.check(self.latency_s)
    }
}

impl Software {
    pub fn validate(&self) -> Result<()> {
        EFFICIENCY.check(self.efficiency)?;
        PER_TENSOR_S.check(self.per_tensor_s)?;
        PER_BUCKET_S.check(self.per_bucket_s)?;
        PER_UPDATE_S.check(self.per_update_s)?;
        BUCKET_BYTES.check(self.bucket_bytes)?;
        QUANT_BYTES_PER_S.check(self.quant_bytes_per_s)?;
        PAUSE_RESUME_S.check(self.pause_resume_s)
    }
}

/// Chunked pipelined relay: `tau` seconds to push all bytes through the slowest hop, `hops` hops,
/// `alpha` per chunk, at least `min_chunks` chunks. Returns `(time_s, chunks)` with the best
/// integer chunk count (`C* = sqrt((h - 1) tau / alpha)`, rounded both ways, clamped).
pub fn relay_time(tau: f64, hops: f64, alpha: f64, min_chunks: f64) -> (f64, f64) {
    let t = |c: f64| (c + hops - 1.0) * (alpha + tau / c);
    let min_c = min_chunks.max(1.0).ceil();
    if tau <= 0.0 {
        return (hops * alpha, 1.0);
    }
    let c_star = if alpha > 0.0 { ((hops - 1.0) * tau / alpha).sqrt() } else { f64::INFINITY };
    if !c_star.is_finite() {
        // no per-chunk cost: infinitely fine chunks; the limit is tau
        return (tau, f64::INFINITY);
    }
    let mut best = (t(min_c), min_c);
    for c in [c_star.floor(), c_star.ceil()] {
        if c >= min_c {
            let v = t(c);
            if v < best.0 {
                best = (v, c);
            }
        }
    }
    best
}

/// Depth of the relay among `n` instances with the given fanout (a chain of n has depth n - 1).
fn relay_depth(n: u64, fanout: u64) -> u64 {
    if fanout <= 1 {
        return n.saturating_sub(1);
    }
    let (mut covered, mut level, mut d) = (1u64, 1u64, 0u64);
    while covered < n {
        level = level.saturating_mul(fanout);
        covered = covered.saturating_add(level);
        d += 1;
    }
    d
}

/// Busiest link of a plan: (seconds, bytes, messages on it).
fn busiest(loads: &super::plan::LinkLoads, nic: f64, nvl: f64) -> (f64, f64, u64) {
    let mut best = (0.0f64, 0.0f64, 0u64);
    let mut consider = |bytes: &[f64], msgs: &[u64], bw: f64| {
        for (b, m) in bytes.iter().zip(msgs) {
            let t = b / bw;
            if t > best.0 {
                best = (t, *b, *m);
            }
        }
    };
    consider(&loads.nic_out_bytes, &loads.nic_out_msgs, nic);
    consider(&loads.nic_in_bytes, &loads.nic_in_msgs, nic);
    consider(&loads.nvlink_out_bytes, &loads.nvlink_out_msgs, nvl);
    consider(&loads.nvlink_in_bytes, &loads.nvlink_in_msgs, nvl);
    best
}

fn max_msgs(loads: &super::plan::LinkLoads) -> u64 {
    [&loads.nic_out_msgs, &loads.nic_in_msgs, &loads.nvlink_out_msgs, &loads.nvlink_in_msgs]
        .iter()
        .flat_map(|v| v.iter())
        .copied()
        .max()
        .unwrap_or(0)
}

/// Plans already built, keyed by (instances, colocated, gpus per node, bucket size, grouped
/// experts): a sweep over bandwidths, efficiency or overheads reuses them (the plan does not
/// depend on those).
#[derive(Debug, Default)]
pub struct PlanCache {
    plans: HashMap<(u32, bool, u32, u64, bool), LinkLoads>,
}

impl PlanCache {
    fn get(&mut self, model: &Model, train: &TrainLayout, infer: &InferLayout, po: &PlanOptions) -> Result<&LinkLoads> {
        let key = (infer.instances, po.colocated, po.gpus_per_node, po.bucket_bytes.to_bits(), po.grouped_experts);
        if let std::collections::hash_map::Entry::Vacant(v) = self.plans.entry(key) {
            v.insert(build_plan(model, train, infer, po)?.loads);
        }
        Ok(&self.plans[&key])
    }
}

/// Estimates one weight update. Errors name the offending field.
pub fn estimate(
    model: &Model,
    train: &TrainLayout,
    infer: &InferLayout,
    hw: &Hardware,
    sw: &Software,
    topo: Topology,
) -> Result<Estimate> {
    estimate_cached(model, train, infer, hw, sw, topo, &mut PlanCache::default())
}

/// [`estimate`] reusing plans from `cache` (same model and training layout for every call).
pub fn estimate_cached(
    model: &Model,
    train: &TrainLayout,
    infer: &InferLayout,
    hw: &Hardware,
    sw: &Software,
    topo: Topology,
    cache: &mut PlanCache,
) -> Result<Estimate> {
    model.validate()?;
    train.validate()?;
    infer.validate()?;
    hw.validate()?;
    sw.validate()?;
    if let Topology::Relay { fanout } = topo {
        FANOUT.check(fanout as u64, "")?;
    }
    // only `parallel` sends the broadcast groups apart; the other topologies move every tensor alike
    let unsplit;
    let model = if !matches!(topo, Topology::Parallel) && model.groups.iter().any(|g| g.broadcast) {
        let mut m = model.clone();
        m.groups.iter_mut().for_each(|g| g.broadcast = false);
        unsplit = m;
        &unsplit
    } else {
        model
    };
    let s = model.infer_bytes();
    let s_train = model.n_elems() * model.train_bytes_per_elem;
    let n = infer.instances as f64;
    let g = infer.tp as f64;
    let tw = train.world() as f64;
    let alpha = hw.latency_s;
    let nic = sw.efficiency * hw.nic_bytes_per_s;
    let nvl = sw.efficiency * hw.nvlink_bytes_per_s;
    let nb = (s / sw.bucket_bytes).ceil().max(1.0);
    let plan_opts = |instances: u32| -> (InferLayout, PlanOptions) {
        (
            InferLayout { instances, ..*infer },
            PlanOptions {
                gpus_per_node: hw.gpus_per_node,
                colocated: hw.colocated,
                bucket_bytes: sw.bucket_bytes,
                record_transfers: false,
                max_transfers: 0,
                grouped_experts: sw.grouped_experts,
            },
        )
    };

    let mut e =
        Estimate { model_bytes: s, n_buckets: nb, tensors_charged: model.n_tensors() as f64, ..Estimate::default() };
    // senders: GPUs that hold (and quantize / copy to device) the source weights
    let mut senders = tw;
    match topo {
        Topology::Colocated => {
            let per_gpu = s / g;
            e.transfer_s = per_gpu / nvl;
            e.latency_s = (per_gpu / sw.bucket_bytes).ceil().max(1.0) * alpha;
            e.busiest_link_bytes = per_gpu;
        }
        Topology::Naive => {
            let m = s / nb;
            let stages = [m / nvl, n * m / nic, m * (1.0 - 1.0 / g) / nvl];
            let first: f64 = stages.iter().sum();
            let slow = stages.iter().cloned().fold(0.0, f64::max);
            e.transfer_s = first + (nb - 1.0) * slow;
            e.latency_s = n * nb * alpha;
            e.busiest_link_bytes = n * s;
            senders = 1.0;
        }
        Topology::Parallel => {
            let (inf, po) = plan_opts(infer.instances);
            let loads = cache.get(model, train, &inf, &po)?;
            let (t, b, _) = busiest(loads, nic, nvl);
            e.transfer_s = t;
            e.latency_s = max_msgs(loads) as f64 * alpha;
            e.busiest_link_bytes = b;
            // per-tensor work: the busiest rank along the plan, then every receiver loads the
            // broadcast tensors
            let along = loads.src_tensors.iter().chain(&loads.dst_tensors).copied().max().unwrap_or(0);
            e.tensors_charged = (along + model.broadcast_tensors()) as f64;
            // broadcast groups: one packed NCCL broadcast of their bytes to every inference GPU
            // after the plan's transfers (same bottleneck as the `broadcast` topology; the root is
            // a training GPU, so the group spans nodes unless co-located in one node)
            let bb = model.broadcast_bytes();
            if bb > 0.0 {
                let p_all = infer.world() as f64;
                let gpus = if hw.colocated { p_all.max(tw) } else { hw.gpus_per_node as f64 + p_all };
                let nodes = (gpus / hw.gpus_per_node as f64).ceil();
                let bw = if nodes <= 1.0 { nvl } else { nvl.min(hw.gpus_per_node as f64 * nic) };
                e.transfer_s += bb / bw;
                e.latency_s += (bb / sw.bucket_bytes).ceil() * alpha * (p_all + 1.0).log2().ceil();
            }
        }
        Topology::Relay { fanout } => {
            let (inf, po) = plan_opts(1);
            let loads = cache.get(model, train, &inf, &po)?;
            let (t1, b1, _) = busiest(loads, nic, nvl);
            let depth = relay_depth(infer.instances as u64, fanout as u64) as f64;
            let per_rank = loads.needed_bytes.iter().cloned().fold(0.0, f64::max);
            let t_relay = if depth > 0.0 {
                fanout.min(infer.instances.saturating_sub(1).max(1)) as f64 * per_rank / nic
            } else {
                0.0
            };
            let tau = t1.max(t_relay);
            let hops = 1.0 + depth;
            let min_chunks = (b1.max(per_rank) / sw.bucket_bytes).ceil();
            let (t, c) = relay_time(tau, hops, alpha, min_chunks);
            // split the pipeline time into its bandwidth part and its per-chunk part
            let lat = if c.is_finite() { (c + hops - 1.0) * alpha } else { 0.0 };
            e.transfer_s = t - lat;
            e.latency_s = lat;
            e.chunks = c;
            e.hops = hops;
            e.busiest_link_bytes = b1.max(per_rank);
        }
        Topology::Broadcast => {
            let p_all = infer.world();
            let nodes = (p_all as f64 / hw.gpus_per_node as f64).ceil();
            let bw = if nodes <= 1.0 { nvl } else { nvl.min(hw.gpus_per_node as f64 * nic) };
            e.transfer_s = s / bw;
            e.latency_s = nb * alpha * (p_all as f64).log2().ceil().max(1.0);
            e.busiest_link_bytes = s;
            if hw.colocated {
                senders = p_all as f64;
            }
        }
    }
    e.quantization_s = if (model.train_bytes_per_elem - model.infer_bytes_per_elem).abs() > 1e-12 {
        s_train / senders / sw.quant_bytes_per_s
    } else {
        0.0
    };
    e.h2d_s = if sw.source_on_host { s_train / senders / hw.host_link_share(senders) } else { 0.0 };
    let load_s = e.tensors_charged * sw.per_tensor_s + nb * sw.per_bucket_s;
    e.software_s = load_s + sw.per_update_s;
    e.pause_resume_s = sw.pause_resume_s;
    if sw.overlap_stages && nb > 1.0 {
        let stages = [e.h2d_s, e.quantization_s, e.transfer_s, load_s];
        let sum: f64 = stages.iter().sum();
        let mx = stages.iter().cloned().fold(0.0, f64::max);
        let piped = sum / nb + (nb - 1.0) / nb * mx;
        // piped <= sum as mx <= sum; the min only absorbs rounding (one dominant stage of ~1e12 s)
        e.overlap_s = (piped - sum).min(0.0);
    }
    e.total_s = e.transfer_s + e.latency_s + e.software_s + e.quantization_s + e.h2d_s + e.pause_resume_s + e.overlap_s;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::TensorGroup;

    /// The chapter's model: 1e12 parameters in FP8 (1 byte each), sent as many equal tensors.
    fn chapter_model() -> Model {
        Model {
            groups: vec![TensorGroup {
                count: 8000,
                elems: 125_000_000,
                n_experts: 0,
                layers: 1,
                replicated: false,
                broadcast: false,
            }],
            infer_bytes_per_elem: 1.0,
            train_bytes_per_elem: 1.0,
            align_elems: 1,
        }
    }
    fn chapter_hw() -> Hardware {
        Hardware {
            gpus_per_node: 8,
            nvlink_bytes_per_s: 450e9,
            nic_bytes_per_s: 50e9,
            pcie_bytes_per_s: 50e9,
            gpus_per_host_link: 1,
            latency_s: 50e-6,
            colocated: false,
        }
    }

    fn run(topo: Topology, instances: u32) -> Estimate {
        let m = chapter_model();
        let train = TrainLayout { tp: 8, pp: 1, dp: 1, ep: 1, fsdp: false };
        let infer = InferLayout { instances, tp: 8, ep: 1 };
        let hw =
            Hardware { latency_s: if matches!(topo, Topology::Relay { .. }) { 50e-6 } else { 0.0 }, ..chapter_hw() };
        estimate(&m, &train, &infer, &hw, &Software::default(), topo).unwrap()
    }

    #[test]
    fn chapter_table() {
        let c = run(Topology::Colocated, 1).total_s;
        assert!((c - 0.2778).abs() < 1e-3, "{c}");
        for (n, want) in [(1, 20.0), (8, 160.0), (64, 1280.0)] {
            let t = run(Topology::Naive, n).total_s;
            assert!((t - want).abs() / want < 0.01, "naive {n}: {t}");
        }
        for (n, want) in [(1, 2.5), (8, 20.0), (64, 160.0)] {
            let t = run(Topology::Parallel, n).total_s;
            assert!((t - want).abs() / want < 0.01, "parallel {n}: {t}");
        }
        for (n, lo, hi) in [(1, 2.5, 2.52), (8, 2.5, 2.6), (64, 2.6, 2.7)] {
            let t = run(Topology::Relay { fanout: 1 }, n).total_s;
            assert!(t >= lo && t <= hi, "relay {n}: {t}");
        }
    }

    #[test]
    fn relay_formula_matches_closed_form() {
        // T* = (sqrt(tau) + sqrt((h - 1) alpha))^2 at the continuous optimum
        let (tau, h, a) = (2.5, 64.0, 50e-6);
        let (t, _) = relay_time(tau, h, a, 1.0);
        let closed = (tau.sqrt() + ((h - 1.0) * a).sqrt()).powi(2);
        assert!((t - closed).abs() / closed < 1e-4, "{t} vs {closed}");
    }

    #[test]
    fn relay_depth_values() {
        assert_eq!(relay_depth(1, 1), 0);
        assert_eq!(relay_depth(64, 1), 63);
        assert_eq!(relay_depth(1, 2), 0);
        assert_eq!(relay_depth(3, 2), 1);
        assert_eq!(relay_depth(4, 2), 2);
        assert_eq!(relay_depth(7, 2), 2);
    }

    #[test]
    fn breakdown_sums_to_total() {
        let m = Model { train_bytes_per_elem: 2.0, ..chapter_model() };
        let sw = Software {
            per_tensor_s: 1e-4,
            per_bucket_s: 0.02,
            per_update_s: 0.5,
            pause_resume_s: 0.3,
            source_on_host: true,
            ..Software::default()
        };
        let e = estimate(
            &m,
            &TrainLayout { tp: 8, pp: 1, dp: 2, ep: 1, fsdp: false },
            &InferLayout { instances: 4, tp: 8, ep: 1 },
            &chapter_hw(),
            &sw,
            Topology::Parallel,
        )
        .unwrap();
        let sum =
            e.transfer_s + e.latency_s + e.software_s + e.quantization_s + e.h2d_s + e.pause_resume_s + e.overlap_s;
        assert!((sum - e.total_s).abs() < 1e-9);
        assert!(e.overlap_s <= 0.0 && e.quantization_s > 0.0 && e.h2d_s > 0.0);
    }

    #[test]
    fn gpus_sharing_a_host_uplink_split_it() {
        // 16 senders (two nodes of 8), each copying 2e12 / 16 bytes: 2.5 s over its own 50 GB/s link;
        // two GPUs per uplink (an HGX A100 board): 5 s; a single sender has the uplink to itself
        let m = Model { train_bytes_per_elem: 2.0, ..chapter_model() };
        let sw = Software { source_on_host: true, ..Software::default() };
        let train = TrainLayout { tp: 8, pp: 1, dp: 2, ep: 1, fsdp: false };
        let infer = InferLayout { instances: 4, tp: 8, ep: 1 };
        let own = estimate(&m, &train, &infer, &chapter_hw(), &sw, Topology::Parallel).unwrap();
        let hw = Hardware { gpus_per_host_link: 2, ..chapter_hw() };
        let shared = estimate(&m, &train, &infer, &hw, &sw, Topology::Parallel).unwrap();
        assert_eq!((own.h2d_s, shared.h2d_s), (2.5, 5.0));
        assert_eq!(shared.transfer_s, own.transfer_s);
        assert_eq!((hw.host_link_share(1.0), hw.host_link_share(3.0)), (50e9, 25e9));
        let four = Hardware { gpus_per_host_link: 4, ..chapter_hw() };
        assert_eq!((four.host_link_share(2.0), four.host_link_share(16.0)), (25e9, 12.5e9));
        let naive = estimate(&m, &train, &infer, &hw, &sw, Topology::Naive).unwrap();
        assert_eq!(naive.h2d_s, 2e12 / 50e9); // one sender copies everything, alone on its uplink
        assert!(Hardware { gpus_per_host_link: 0, ..chapter_hw() }.validate().is_err());
    }

    #[test]
    fn broadcast_groups_follow_the_plan() {
        // half the bytes along the plan, half by one packed broadcast to every inference GPU
        let g = |broadcast| TensorGroup {
            count: 4000,
            elems: 125_000_000,
            n_experts: 0,
            layers: 1,
            replicated: false,
            broadcast,
        };
        let m = Model { groups: vec![g(false), g(true)], ..chapter_model() };
        let train = TrainLayout { tp: 8, pp: 1, dp: 1, ep: 1, fsdp: false };
        let infer = InferLayout { instances: 1, tp: 8, ep: 1 };
        let hw = Hardware { latency_s: 0.0, ..chapter_hw() };
        let sw = Software { per_tensor_s: 1e-3, ..Software::default() };
        let e = estimate(&m, &train, &infer, &hw, &sw, Topology::Parallel).unwrap();
        // plan: 0.5e12 / 8 senders / 50e9 = 1.25 s; broadcast: 0.5e12 / min(450, 8 x 50) GB/s = 1.25 s
        assert!((e.transfer_s - 2.5).abs() < 1e-9, "{}", e.transfer_s);
        // per-tensor: 4000 along the plan on the busiest rank, then 4000 broadcast
        assert_eq!(e.tensors_charged, 8000.0);
        // other topologies ignore the split
        let r = estimate(&m, &train, &infer, &hw, &sw, Topology::Relay { fanout: 1 }).unwrap();
        let r0 = estimate(
            &Model { groups: vec![g(false), g(false)], ..chapter_model() },
            &train,
            &infer,
            &hw,
            &sw,
            Topology::Relay { fanout: 1 },
        )
        .unwrap();
        assert_eq!(r, r0);
    }

    #[test]
    fn bad_values_are_refused() {
        let sw = Software { efficiency: 1.5, ..Software::default() };
        let e = estimate(
            &chapter_model(),
            &TrainLayout { tp: 8, pp: 1, dp: 1, ep: 1, fsdp: false },
            &InferLayout { instances: 1, tp: 8, ep: 1 },
            &chapter_hw(),
            &sw,
            Topology::Parallel,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("efficiency"));
        let hw = Hardware { nic_bytes_per_s: f64::NAN, ..chapter_hw() };
        let e = estimate(
            &chapter_model(),
            &TrainLayout { tp: 8, pp: 1, dp: 1, ep: 1, fsdp: false },
            &InferLayout { instances: 1, tp: 8, ep: 1 },
            &hw,
            &Software::default(),
            Topology::Parallel,
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("nic_bytes_per_s"));
    }
}
