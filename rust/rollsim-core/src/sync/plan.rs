//! Re-sharding plan: which training rank sends which slice of which tensor to which inference rank.
//!
//! For every tensor, the training layout gives one or more *copies* (a DP replica, or an expert's
//! expert-data-parallel replica), each a list of (rank, slice) parts that together cover the tensor
//! once. Every inference rank needs one slice (its TP shard, or its share of an expert held by its
//! EP group, or the whole tensor if it is replicated). The plan intersects each needed slice with
//! the parts of one copy, choosing the copy whose ranks are least loaded so far (ties: lowest
//! index), which spreads the work over senders. Slices are cut on multiples of `align_elems`
//! (whole quantization blocks). Method: `docs/weight_sync.md`.

use std::collections::HashMap;

use super::{InferLayout, Model, TrainLayout};
use crate::error::{Error, Result};

/// Where the GPUs are: decides whether a transfer uses NVLink, the NIC, or nothing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanOptions {
    /// GPUs per node (>= 1). Training ranks occupy GPUs `0..train_world`; inference ranks occupy the
    /// GPUs from the next node boundary on, or, if `colocated`, the training GPUs (inference rank
    /// `r` on GPU `r % train_world`).
    pub gpus_per_node: u32,
    pub colocated: bool,
    /// Messages per (source, destination) pair are `ceil(bytes / bucket_bytes)` (packed buckets).
    pub bucket_bytes: f64,
    /// Keep the transfer list (columns) or only the link loads.
    pub record_transfers: bool,
    /// Refuse to record more transfers than this (memory guard).
    pub max_transfers: u64,
    /// The receiving engine takes each layer's experts as one tensor per projection (NeMo-RL's
    /// `grouped_expert_proj` entries, vLLM's fused `w13`/`w2`): for the per-rank tensor counts,
    /// an inference rank handles one tensor per (layer, projection) instead of one per expert.
    pub grouped_experts: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            gpus_per_node: 8,
            colocated: false,
            bucket_bytes: 1e9,
            record_transfers: false,
            max_transfers: 5_000_000,
            grouped_experts: false,
        }
    }
}

/// The transfers as columns (one entry per transfer).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transfers {
    pub src_rank: Vec<u32>,
    pub dst_rank: Vec<u32>,
    pub group: Vec<u32>,
    pub tensor: Vec<u64>,
    /// First element of the slice inside the tensor, and its number of elements.
    pub offset_elems: Vec<u64>,
    pub len_elems: Vec<u64>,
    pub bytes: Vec<f64>,
    /// 0: same GPU (no link), 1: NVLink (same node), 2: NIC (across nodes).
    pub link: Vec<u8>,
}

/// Bytes and messages per link. Indexed by training rank (`*_out`) or inference rank (`*_in`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LinkLoads {
    pub nic_out_bytes: Vec<f64>,
    pub nvlink_out_bytes: Vec<f64>,
    pub nic_out_msgs: Vec<u64>,
    pub nvlink_out_msgs: Vec<u64>,
    pub nic_in_bytes: Vec<f64>,
    pub nvlink_in_bytes: Vec<f64>,
    pub nic_in_msgs: Vec<u64>,
    pub nvlink_in_msgs: Vec<u64>,
    /// Bytes that stay on the GPU (co-located, same rank on both sides).
    pub local_bytes: f64,
    /// Bytes each inference rank needs (sum of its slices).
    pub needed_bytes: Vec<f64>,
    /// Tensors each training rank sends a slice of (each expert's tensor counts: the sender
    /// handles its local experts one by one), indexed by training rank.
    pub src_tensors: Vec<u64>,
    /// Tensors each inference rank receives a slice of (expert tensors of one layer and projection
    /// count once with `grouped_experts`), indexed by inference rank.
    pub dst_tensors: Vec<u64>,
}

/// A plan: link loads, and the transfers if recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub loads: LinkLoads,
    pub transfers: Option<Transfers>,
    pub n_transfers: u64,
    pub total_bytes: f64,
}

#[inline]
fn cut(units: u64, i: u64, k: u64) -> u64 {
    // boundary i of k equal parts of `units` (u128 to avoid overflow)
    ((units as u128 * i as u128) / k as u128) as u64
}

struct Part {
    rank: u32,
    lo: u64,
    hi: u64,
}

/// Builds the plan. Errors name the offending field.
pub fn build_plan(model: &Model, train: &TrainLayout, infer: &InferLayout, opts: &PlanOptions) -> Result<Plan> {
    model.validate()?;
    train.validate()?;
    infer.validate()?;
    super::GPUS_PER_NODE.check(opts.gpus_per_node as u64, "")?;
    super::bounds::BUCKET_BYTES.check(opts.bucket_bytes)?;
    let (tp, pp, dp, ep) = (train.tp as u64, train.pp as u64, train.dp as u64, train.ep as u64);
    let tw = train.world();
    let iw = infer.world();
    let (itp, iep) = (infer.tp as u64, infer.ep as u64);
    let q = itp / iep; // GPUs per inference EP group
    let gpn = opts.gpus_per_node as u64;
    let align = model.align_elems;
    let bpe = model.infer_bytes_per_elem;

    let mut egress = vec![0.0f64; tw as usize]; // all bytes sent by a training rank (for balancing)
    let mut loads = LinkLoads {
        nic_out_bytes: vec![0.0; tw as usize],
        nvlink_out_bytes: vec![0.0; tw as usize],
        nic_out_msgs: vec![0; tw as usize],
        nvlink_out_msgs: vec![0; tw as usize],
        nic_in_bytes: vec![0.0; iw as usize],
        nvlink_in_bytes: vec![0.0; iw as usize],
        nic_in_msgs: vec![0; iw as usize],
        nvlink_in_msgs: vec![0; iw as usize],
        local_bytes: 0.0,
        needed_bytes: vec![0.0; iw as usize],
        src_tensors: vec![0; tw as usize],
        dst_tensors: vec![0; iw as usize],
    };
    // per-rank distinct-tensor counts: a stamp per rank (and per projection slot for grouped
    // expert tensors) holding the key of the last tensor counted there
    let slots = if opts.grouped_experts {
        model
            .groups
            .iter()
            .filter(|g| g.n_experts > 0)
            .map(|g| ((g.count / g.layers as u64).max(1) / g.n_experts as u64).max(1))
            .max()
            .unwrap_or(1)
    } else {
        1
    };
    let mut src_stamp = vec![0u64; tw as usize];
    let mut dst_stamp = vec![0u64; (iw * slots) as usize];
    let mut gid = 0u64;
    let mut pair: HashMap<(u32, u32), f64> = HashMap::new();
    let mut tr = if opts.record_transfers { Some(Transfers::default()) } else { None };
    let mut n_transfers = 0u64;
    let mut total = 0.0f64;
    // disaggregated: the inference pool starts on the first node after the training pool's nodes
    let infer_base = tw.div_ceil(gpn) * gpn;
    let dst_gpu = |d: u64| if opts.colocated { d % tw } else { infer_base + d };
    let link_of = |s: u64, d: u64| -> u8 {
        let (gs, gd) = (s, dst_gpu(d));
        if gs == gd {
            0
        } else if gs / gpn == gd / gpn {
            1
        } else {
            2
        }
    };

    let mut copies: Vec<Vec<Part>> = Vec::new();
    for (gi, g) in model.groups.iter().enumerate() {
        if g.broadcast {
            gid += g.count;
            continue;
        }
        let units = g.elems.div_ceil(align);
        let per_layer = (g.count / g.layers as u64).max(1);
        let bytes_of = |lo: u64, hi: u64| -> (u64, u64, f64) {
            let a = lo * align;
            let b = (hi * align).min(g.elems);
            (a, b - a, (b - a) as f64 * bpe)
        };
        for i in 0..g.count {
            gid += 1;
            let layer = (i / per_layer).min(g.layers as u64 - 1);
            let stage = layer * pp / g.layers as u64;
            let expert = if g.n_experts > 0 { Some((i % per_layer) * g.n_experts as u64 / per_layer) } else { None };
            let rank = |d: u64, t: u64| -> u32 { ((stage * dp + d) * tp + t) as u32 };
            // key and slot of this tensor in the receivers' counts
            let (dkey, dslot) = match expert {
                Some(_) if opts.grouped_experts => {
                    let k = (per_layer / g.n_experts as u64).max(1);
                    ((((gi as u64) << 32 | layer) << 1) | 1, (i % per_layer) % k)
                }
                _ => (gid << 1, 0),
            };
            // --- source copies
            copies.clear();
            match (expert, g.replicated) {
                (_, true) => {
                    if train.fsdp {
                        for t in 0..tp {
                            copies.push(
                                (0..dp)
                                    .map(|d| Part {
                                        rank: rank(d, t),
                                        lo: cut(units, d, dp),
                                        hi: cut(units, d + 1, dp),
                                    })
                                    .collect(),
                            );
                        }
                    } else {
                        for d in 0..dp {
                            for t in 0..tp {
                                copies.push(vec![Part { rank: rank(d, t), lo: 0, hi: units }]);
                            }
                        }
                    }
                }
                (None, false) => {
                    if train.fsdp {
                        let mut c = Vec::with_capacity((tp * dp) as usize);
                        for t in 0..tp {
                            let (a, b) = (cut(units, t, tp), cut(units, t + 1, tp));
                            for d in 0..dp {
                                c.push(Part {
                                    rank: rank(d, t),
                                    lo: a + cut(b - a, d, dp),
                                    hi: a + cut(b - a, d + 1, dp),
                                });
                            }
                        }
                        copies.push(c);
                    } else {
                        for d in 0..dp {
                            copies.push(
                                (0..tp)
                                    .map(|t| Part {
                                        rank: rank(d, t),
                                        lo: cut(units, t, tp),
                                        hi: cut(units, t + 1, tp),
                                    })
                                    .collect(),
                            );
                        }
                    }
                }
                (Some(e), false) => {
                    let k = e * ep / g.n_experts as u64; // EP rank holding this expert
                    let holders: Vec<u32> =
                        (0..tp * dp).filter(|l| l % ep == k).map(|l| rank(l / tp, l % tp)).collect();
                    if train.fsdp {
                        let n = holders.len() as u64;
                        copies.push(
                            holders
                                .iter()
                                .enumerate()
                                .map(|(j, &r)| Part {
                                    rank: r,
                                    lo: cut(units, j as u64, n),
                                    hi: cut(units, j as u64 + 1, n),
                                })
                                .collect(),
                        );
                    } else {
                        for &r in &holders {
                            copies.push(vec![Part { rank: r, lo: 0, hi: units }]);
                        }
                    }
                }
            }
            // --- destinations
            for inst in 0..infer.instances as u64 {
                for gr in 0..itp {
                    let (lo, hi) = match (expert, g.replicated) {
                        (_, true) => (0, units),
                        (None, false) => (cut(units, gr, itp), cut(units, gr + 1, itp)),
                        (Some(e), false) => {
                            let k = e * iep / g.n_experts as u64;
                            if gr / q != k {
                                continue;
                            }
                            let j = gr % q;
                            (cut(units, j, q), cut(units, j + 1, q))
                        }
                    };
                    if hi <= lo {
                        continue;
                    }
                    let d = inst * itp + gr;
                    loads.needed_bytes[d as usize] += bytes_of(lo, hi).2;
                    let st = &mut dst_stamp[(d * slots + dslot) as usize];
                    if *st != dkey {
                        *st = dkey;
                        loads.dst_tensors[d as usize] += 1;
                    }
                    // choose the copy whose intersecting ranks are least loaded
                    let mut best = 0usize;
                    if copies.len() > 1 {
                        let mut best_load = f64::INFINITY;
                        for (ci, c) in copies.iter().enumerate() {
                            let mut m = 0.0f64;
                            for p in c {
                                if p.lo < hi && p.hi > lo {
                                    // prefer a copy on the destination's own GPU / node
                                    let bias = match link_of(p.rank as u64, d) {
                                        0 => -1e30,
                                        1 => -1e15,
                                        _ => 0.0,
                                    };
                                    m = m.max(egress[p.rank as usize] + bias);
                                }
                            }
                            if m < best_load {
                                best_load = m;
                                best = ci;
                            }
                        }
                    }
                    for p in &copies[best] {
                        let (a, b) = (p.lo.max(lo), p.hi.min(hi));
                        if a >= b {
                            continue;
                        }
                        let (off, len, bytes) = bytes_of(a, b);
                        if len == 0 {
                            continue;
                        }
                        let s = p.rank as usize;
                        if src_stamp[s] != gid {
                            src_stamp[s] = gid;
                            loads.src_tensors[s] += 1;
                        }
                        let link = link_of(s as u64, d);
                        egress[s] += bytes;
                        total += bytes;
                        match link {
                            0 => loads.local_bytes += bytes,
                            1 => {
                                loads.nvlink_out_bytes[s] += bytes;
                                loads.nvlink_in_bytes[d as usize] += bytes;
                            }
                            _ => {
                                loads.nic_out_bytes[s] += bytes;
                                loads.nic_in_bytes[d as usize] += bytes;
                            }
                        }
                        if link != 0 {
                            *pair.entry((p.rank, d as u32)).or_insert(0.0) += bytes;
                        }
                        n_transfers += 1;
                        if let Some(t) = tr.as_mut() {
                            if n_transfers > opts.max_transfers {
                                return Err(Error::field(
                                    "max_transfers",
                                    format!("the plan has more than {} transfers; raise max_transfers or use the link loads only", opts.max_transfers),
                                ));
                            }
                            t.src_rank.push(p.rank);
                            t.dst_rank.push(d as u32);
                            t.group.push(gi as u32);
                            t.tensor.push(i);
                            t.offset_elems.push(off);
                            t.len_elems.push(len);
                            t.bytes.push(bytes);
                            t.link.push(link);
                        }
                    }
                }
            }
        }
    }
    for (&(s, d), &b) in &pair {
        let msgs = (b / opts.bucket_bytes).ceil().max(1.0) as u64;
        if link_of(s as u64, d as u64) == 1 {
            loads.nvlink_out_msgs[s as usize] += msgs;
            loads.nvlink_in_msgs[d as usize] += msgs;
        } else {
            loads.nic_out_msgs[s as usize] += msgs;
            loads.nic_in_msgs[d as usize] += msgs;
        }
    }
    Ok(Plan { loads, transfers: tr, n_transfers, total_bytes: total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::TensorGroup;

    fn moe() -> Model {
        Model {
            groups: vec![
                TensorGroup { count: 4 * 3, elems: 1000, n_experts: 0, layers: 4, replicated: false, broadcast: false },
                TensorGroup { count: 4 * 2, elems: 10, n_experts: 0, layers: 4, replicated: true, broadcast: false },
                TensorGroup {
                    count: 4 * 16 * 3,
                    elems: 777,
                    n_experts: 16,
                    layers: 4,
                    replicated: false,
                    broadcast: false,
                },
            ],
            infer_bytes_per_elem: 2.0,
            train_bytes_per_elem: 2.0,
            align_elems: 1,
        }
    }

    /// Every destination gets exactly the bytes it needs, each element once.
    fn check_exact(model: &Model, train: TrainLayout, infer: InferLayout) {
        let opts = PlanOptions { record_transfers: true, gpus_per_node: 8, ..PlanOptions::default() };
        let plan = build_plan(model, &train, &infer, &opts).unwrap();
        let t = plan.transfers.unwrap();
        let mut cover: HashMap<(u32, u32, u64), Vec<(u64, u64)>> = HashMap::new();
        for k in 0..t.src_rank.len() {
            cover
                .entry((t.dst_rank[k], t.group[k], t.tensor[k]))
                .or_default()
                .push((t.offset_elems[k], t.len_elems[k]));
        }
        for v in cover.values_mut() {
            v.sort();
            for w in v.windows(2) {
                assert_eq!(w[0].0 + w[0].1, w[1].0, "gap or overlap");
            }
        }
        let got: f64 = t.bytes.iter().sum();
        let need: f64 = plan.loads.needed_bytes.iter().sum();
        assert!((got - need).abs() < 1e-6);
        // a full copy of the model per instance
        let per_inst: f64 = model
            .groups
            .iter()
            .map(|g| g.count as f64 * g.elems as f64 * 2.0 * if g.replicated { infer.tp as f64 } else { 1.0 })
            .sum();
        assert!((need - per_inst * infer.instances as f64).abs() < 1e-6, "{need} vs {per_inst}");
    }

    #[test]
    fn exact_cover_various_layouts() {
        let m = moe();
        for (train, infer) in [
            (TrainLayout { tp: 2, pp: 2, dp: 2, ep: 4, fsdp: false }, InferLayout { instances: 3, tp: 4, ep: 1 }),
            (TrainLayout { tp: 1, pp: 1, dp: 8, ep: 8, fsdp: true }, InferLayout { instances: 2, tp: 8, ep: 8 }),
            (TrainLayout { tp: 4, pp: 1, dp: 3, ep: 2, fsdp: false }, InferLayout { instances: 1, tp: 6, ep: 3 }),
            (TrainLayout { tp: 1, pp: 4, dp: 1, ep: 1, fsdp: false }, InferLayout { instances: 2, tp: 1, ep: 1 }),
        ] {
            check_exact(&m, train, infer);
        }
    }

    #[test]
    fn alignment_is_respected() {
        let mut m = moe();
        m.align_elems = 64;
        let opts = PlanOptions { record_transfers: true, ..PlanOptions::default() };
        let p = build_plan(
            &m,
            &TrainLayout { tp: 3, pp: 1, dp: 1, ep: 1, fsdp: false },
            &InferLayout { instances: 1, tp: 4, ep: 1 },
            &opts,
        )
        .unwrap();
        let t = p.transfers.unwrap();
        assert!(t.offset_elems.iter().all(|o| o % 64 == 0));
    }

    #[test]
    fn more_replicas_spread_load() {
        let m = moe();
        let infer = InferLayout { instances: 8, tp: 8, ep: 1 };
        let max_out = |dp| {
            let p =
                build_plan(&m, &TrainLayout { tp: 8, pp: 1, dp, ep: 1, fsdp: false }, &infer, &PlanOptions::default())
                    .unwrap();
            p.loads.nic_out_bytes.iter().cloned().fold(0.0, f64::max)
        };
        assert!(max_out(2) < max_out(1));
        assert!(max_out(8) <= max_out(2));
    }

    #[test]
    fn per_rank_tensor_counts() {
        // 4 layers x 16 experts x 3 projections, EP4 training -> one TP2 instance
        let m = moe();
        let train = TrainLayout { tp: 1, pp: 1, dp: 4, ep: 4, fsdp: false };
        let infer = InferLayout { instances: 1, tp: 2, ep: 1 };
        let p = build_plan(&m, &train, &infer, &PlanOptions::default()).unwrap();
        // each training rank holds 4 experts: 4 layers x 4 experts x 3 = 48 expert tensors, plus
        // dense and replicated tensors it was picked for
        assert!(p.loads.src_tensors.iter().all(|&n| n >= 48), "{:?}", p.loads.src_tensors);
        // each inference rank needs a slice of every tensor: 12 + 8 + 192
        assert!(p.loads.dst_tensors.iter().all(|&n| n == 212), "{:?}", p.loads.dst_tensors);
        let g =
            build_plan(&m, &train, &infer, &PlanOptions { grouped_experts: true, ..PlanOptions::default() }).unwrap();
        // grouped: experts count once per (layer, projection): 12 + 8 + 4 x 3
        assert!(g.loads.dst_tensors.iter().all(|&n| n == 32), "{:?}", g.loads.dst_tensors);
        assert_eq!(g.loads.src_tensors, p.loads.src_tensors);
        // broadcast groups leave the plan
        let mut b = moe();
        b.groups[0].broadcast = true;
        let q = build_plan(&b, &train, &infer, &PlanOptions::default()).unwrap();
        assert!(q.loads.dst_tensors.iter().all(|&n| n == 200));
        assert!((q.total_bytes - (p.total_bytes - 12.0 * 1000.0 * 2.0)).abs() < 1e-6);
    }

    #[test]
    fn errors_name_fields() {
        let m = moe();
        let e = build_plan(
            &m,
            &TrainLayout { tp: 2, pp: 1, dp: 1, ep: 3, fsdp: false },
            &InferLayout { instances: 1, tp: 2, ep: 1 },
            &PlanOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("train.ep"));
        let e = build_plan(
            &m,
            &TrainLayout { tp: 1, pp: 1, dp: 1, ep: 1, fsdp: false },
            &InferLayout { instances: 1, tp: 4, ep: 3 },
            &PlanOptions::default(),
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("infer.ep"));
    }
}
