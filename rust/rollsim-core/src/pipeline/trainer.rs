//! The trainer part: the policy version, training steps (their duration from a [`TrainModel`],
//! their end as a `StepEnd` event), and the consumption of a batch (the staleness and tokens of
//! each sample trained, recorded once for every pipeline). Which finished work goes into a batch,
//! and when, is the pipeline's.

use super::pool::Group;
use crate::event::{EventKind, Timers};
use crate::record::Recorder;
use crate::scenario::{Dispatch, Scenario, TrainRanks};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// How long a training step takes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TrainModel {
    /// Fixed seconds per step (including the weight sync).
    fixed_s: f64,
    /// Seconds per token of the batch.
    per_token_s: f64,
}

impl TrainModel {
    pub fn of(sc: &Scenario) -> Self {
        TrainModel { fixed_s: sc.train_step_s, per_token_s: sc.train_s_per_token }
    }

    /// Seconds of a step over a batch of `tokens` tokens.
    #[inline]
    pub fn step_s(&self, tokens: f64) -> f64 {
        self.fixed_s + self.per_token_s * tokens
    }
}

/// A batch being assembled: what the step's row records. Plain `Copy` sums (the answer lengths
/// the per-rank model needs are the trainer's): the loops that fill it keep them in registers.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Batch {
    staleness_sum: u64,
    staleness_max: u32,
    tokens: f64,
    samples: u32,
}

pub(crate) struct Trainer {
    /// Steps ended: the newest policy version.
    pub version: u32,
    /// Steps started (the number of the next step).
    started: u32,
    model: TrainModel,
    /// The per-rank model and the prompt tokens of every sequence (`Scenario::train`).
    ranks: Option<(TrainRanks, f64)>,
    /// With `ranks`: answer tokens of each sample of the batch being taken, in the order taken.
    lengths: Vec<f64>,
    /// End of the last step started.
    last_end: f64,
}

impl Trainer {
    pub fn new(sc: &Scenario) -> Self {
        let ranks = sc.train.map(|t| (t, sc.prefill.prompt_tokens));
        Trainer { version: 0, started: 0, model: TrainModel::of(sc), ranks, lengths: Vec::new(), last_end: 0.0 }
    }

    /// A step is running (its end is pending).
    #[inline]
    pub fn busy(&self) -> bool {
        self.started > self.version
    }

    /// Adds a finished sample to `batch` (a group of one).
    #[inline]
    pub fn take_sample(
        &mut self,
        rec: &mut Recorder,
        batch: &mut Batch,
        id: u32,
        length: f64,
        version_start: u32,
        version_finish: u32,
    ) {
        // a group of one with one span (the fully async loop): its span's version is its start's
        let st = rec.train_whole(id, length, version_start, version_finish, self.started);
        rec.train_group(st);
        batch.add(st, length);
        if self.ranks.is_some() {
            self.lengths.push(length);
        }
    }

    /// Adds every member of a finished group to `batch`. Inlined in the batch loops (a call per
    /// group cost as much as the work for groups of one).
    #[inline(always)]
    pub fn take_group(&mut self, rec: &mut Recorder, batch: &mut Batch, g: &Group) {
        let step = self.started;
        rec.train_group(step.saturating_sub(g.min_version));
        for m in &g.members {
            let st = rec.train_sample(m.id, m.length, m.version_start, m.version_end, m.version_finish, step);
            batch.add(st, m.length);
        }
        if self.ranks.is_some() {
            self.lengths.extend(g.members.iter().map(|m| m.length));
        }
    }

    /// Starts the step training `batch` at `t`: records its row (`ready_after`: samples still
    /// ready; `slot_idle_s`: idle slot-seconds integrated so far) and schedules its end. Returns
    /// the end.
    pub fn start_step(
        &mut self,
        rec: &mut Recorder,
        timers: &mut Timers,
        t: f64,
        batch: &Batch,
        ready_after: u32,
        slot_idle_s: f64,
    ) -> f64 {
        let mut end = t + self.model.step_s(batch.tokens);
        if let Some((r, prompt)) = &self.ranks {
            let (slowest, mean) = r.step(&self.lengths, *prompt);
            self.lengths.clear();
            rec.rank_step(slowest, mean);
            end = t + (self.model.step_s(batch.tokens) + (r.mini_batches as f64 * r.fixed_s + slowest));
        }
        let b = batch;
        rec.step(
            t,
            end,
            t - self.last_end,
            b.staleness_sum,
            b.staleness_max,
            b.samples,
            ready_after,
            b.tokens,
            slot_idle_s,
        );
        timers.push(end, EventKind::StepEnd, self.started);
        self.started += 1;
        self.last_end = end;
        end
    }

    /// A step ended: the version bumps.
    #[inline]
    pub fn step_ended(&mut self) {
        debug_assert!(self.busy());
        self.version += 1;
    }
}

impl Batch {
    /// Samples taken.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Answer tokens taken.
    pub fn tokens(&self) -> f64 {
        self.tokens
    }

    #[inline]
    fn add(&mut self, staleness: u32, tokens: f64) {
        self.staleness_sum += staleness as u64;
        self.staleness_max = self.staleness_max.max(staleness);
        self.tokens += tokens;
        self.samples += 1;
    }
}

impl TrainRanks {
    /// The ranks' part of a step over answers of `lengths` tokens (each sequence `prompt +
    /// length` tokens): the slowest rank's seconds and the mean rank's, each summed over the
    /// mini-batches (without `fixed_s`).
    pub fn step(&self, lengths: &[f64], prompt: f64) -> (f64, f64) {
        let t: Vec<f64> = lengths.iter().map(|l| prompt + l).collect();
        let w: Vec<f64> = t.iter().map(|x| self.s_per_token * x + self.s_per_token_sq * x * x).collect();
        let k = self.dp_ranks as usize;
        let m = self.mini_batches as usize;
        let parts = assign_ranks(&t, &w, k, self.dispatch, m, self.max_tokens_per_gpu);
        let (mut slowest, mut mean) = (0.0, 0.0);
        let cuts: Vec<Vec<(usize, usize)>> = parts.iter().map(|p| split(p.len(), m)).collect();
        for j in 0..m {
            let (mut top, mut sum) = (0.0f64, 0.0);
            for (p, c) in parts.iter().zip(&cuts) {
                let (a, b) = c[j];
                let load: f64 = p[a..b].iter().map(|&i| w[i as usize]).sum();
                top = top.max(load);
                sum += load;
            }
            slowest += top;
            mean += sum / k as f64;
        }
        (slowest, mean)
    }
}

/// `numpy.array_split`'s chunks of `n` items into `m` parts: `(start, end)` of each, the first
/// `n % m` one longer.
fn split(n: usize, m: usize) -> Vec<(usize, usize)> {
    let (q, r) = (n / m, n % m);
    let mut out = Vec::with_capacity(m);
    let mut a = 0;
    for j in 0..m {
        let b = a + q + usize::from(j < r);
        out.push((a, b));
        a = b;
    }
    out
}

/// Which sequences each of `ranks` data-parallel ranks trains, in the order it trains them (cut
/// into `mini_batches` consecutive mini-batches by [`split`]): the one definition of the
/// dispatches, which `rollsim.hardware.training.assign_ranks` calls.
///
/// `tokens` are each sequence's tokens in batch order (a GRPO group's answers consecutive),
/// `work` what the balancing dispatches balance (e.g. seconds or FLOPs per sequence), `budget`
/// the micro-batch token budget of `Packed` (a longer sequence gets a micro-batch of its own).
/// `Contiguous`, `Balanced` and `Lpt` give every rank `len / ranks` sequences when that divides
/// (verl's dispatch needs it; otherwise the first ranks take one more), `BalancedMinibatch` when
/// `ranks x mini_batches` divides. The balancing dispatches (not `Packed`) keep the batch order
/// (`Contiguous`) when that is the better split: a balancer is never slower than no balancing.
/// Every rank's indices are in batch order except with `Lpt` (heaviest first) and
/// `BalancedMinibatch` (mini-batch by mini-batch).
pub fn assign_ranks(
    tokens: &[f64],
    work: &[f64],
    ranks: usize,
    dispatch: Dispatch,
    mini_batches: usize,
    budget: f64,
) -> Vec<Vec<u32>> {
    let n = tokens.len();
    let k = ranks.max(1);
    let m = mini_batches.max(1);
    let contiguous =
        || -> Vec<Vec<u32>> { split(n, k).into_iter().map(|(a, b)| (a as u32..b as u32).collect()).collect() };
    let parts = match dispatch {
        Dispatch::Contiguous => return contiguous(),
        Dispatch::RoundRobin => return (0..k).map(|r| (r..n).step_by(k).map(|i| i as u32).collect()).collect(),
        Dispatch::Packed => return packed(tokens, work, k, budget),
        Dispatch::Balanced => karmarkar_karp(work, k),
        Dispatch::Lpt => lpt(work, k),
        Dispatch::BalancedMinibatch => {
            let mut out: Vec<Vec<u32>> = vec![Vec::new(); k];
            for (a, b) in split(n, m) {
                for (r, set) in karmarkar_karp(&work[a..b], k).into_iter().enumerate() {
                    out[r].extend(set.into_iter().map(|i| i + a as u32));
                }
            }
            out
        }
    };
    let c = contiguous();
    if cost(work, &c, m) < cost(work, &parts, m) {
        c
    } else {
        parts
    }
}

/// Sum over mini-batches of the heaviest rank's work (infinite if a rank has fewer sequences than
/// mini-batches).
fn cost(w: &[f64], parts: &[Vec<u32>], m: usize) -> f64 {
    if parts.iter().any(|p| p.len() < m) {
        return f64::INFINITY;
    }
    let cuts: Vec<Vec<(usize, usize)>> = parts.iter().map(|p| split(p.len(), m)).collect();
    (0..m)
        .map(|j| {
            parts
                .iter()
                .zip(&cuts)
                .map(|(p, c)| p[c[j].0..c[j].1].iter().map(|&i| w[i as usize]).sum::<f64>())
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .sum()
}

/// Indices `0..w.len()` sorted by `key(w[i])`, ties in index order (numpy's stable argsort).
fn argsort(w: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..w.len()).collect();
    if descending {
        idx.sort_by(|&a, &b| w[b].total_cmp(&w[a]));
    } else {
        idx.sort_by(|&a, &b| w[a].total_cmp(&w[b]));
    }
    idx
}

/// One Karmarkar-Karp state: `k` sets (weight, members), heaviest first, and its spread and
/// creation number (the heap pops the largest spread, then the oldest).
struct State {
    spread: f64,
    n: usize,
    sets: Vec<(f64, Vec<u32>)>,
}

impl PartialEq for State {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for State {}
impl PartialOrd for State {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for State {
    fn cmp(&self, o: &Self) -> Ordering {
        self.spread.total_cmp(&o.spread).then(o.n.cmp(&self.n))
    }
}

fn state(mut sets: Vec<(f64, Vec<u32>)>, n: usize) -> State {
    sets.sort_by(|a, b| b.0.total_cmp(&a.0)); // stable: heaviest first, ties in order
    let spread = sets[0].0 - sets[sets.len() - 1].0;
    State { spread, n, sets }
}

/// Equal-count partition of `w` into `k` sets by the largest differencing method (verl
/// `verl/utils/seqlen_balancing.py`): states of `k` sets each (consecutive items of the sorted
/// order), merged largest spread first, the heaviest set of one joined with the lightest of the
/// other. Each set in index order. A count not divisible by `k` is padded with empty items.
fn karmarkar_karp(w: &[f64], k: usize) -> Vec<Vec<u32>> {
    const PAD: u32 = u32::MAX;
    let mut order: Vec<u32> = argsort(w, false).into_iter().map(|i| i as u32).collect();
    let pad = (k - w.len() % k) % k;
    let weight = |i: u32| if i == PAD { 0.0 } else { w[i as usize] };
    order.splice(0..0, std::iter::repeat_n(PAD, pad));
    let mut heap = BinaryHeap::new();
    for (n, chunk) in order.chunks(k).enumerate() {
        heap.push(state(chunk.iter().map(|&i| (weight(i), vec![i])).collect(), n));
    }
    let mut n = heap.len();
    while heap.len() > 1 {
        let a = heap.pop().expect("two states");
        let b = heap.pop().expect("two states");
        let mut bs = b.sets;
        let merged: Vec<(f64, Vec<u32>)> = a
            .sets
            .into_iter()
            .enumerate()
            .map(|(i, (wa, mut ma))| {
                let (wb, mb) = std::mem::take(&mut bs[k - 1 - i]);
                ma.extend(mb);
                (wa + wb, ma)
            })
            .collect();
        heap.push(state(merged, n));
        n += 1;
    }
    match heap.pop() {
        Some(s) => s
            .sets
            .into_iter()
            .map(|(_, mut m)| {
                m.retain(|&i| i != PAD);
                m.sort_unstable();
                m
            })
            .collect(),
        None => vec![Vec::new(); k],
    }
}

/// Greedy longest-processing-time into `k` equal-count ranks (Tencent-Hunyuan/UniRL PR 45):
/// heaviest first onto the least loaded rank with room; each rank keeps that (descending) order.
fn lpt(w: &[f64], k: usize) -> Vec<Vec<u32>> {
    let cap = w.len().div_ceil(k);
    let mut loads: BinaryHeap<Reverse<(Load, usize)>> = (0..k).map(|r| Reverse((Load(0.0), r))).collect();
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); k];
    for i in argsort(w, true) {
        let Some(Reverse((Load(load), r))) = loads.pop() else { break };
        out[r].push(i as u32);
        if out[r].len() < cap {
            loads.push(Reverse((Load(load + w[i]), r)));
        }
    }
    out
}

/// First-fit decreasing into micro-batches of at most `budget` tokens, then micro-batches dealt
/// to ranks heaviest first onto the least loaded rank (slime `--use-dynamic-batch-size
/// --max-tokens-per-gpu`); each rank's sequences in batch order.
fn packed(t: &[f64], w: &[f64], k: usize, budget: f64) -> Vec<Vec<u32>> {
    let mut bins: Vec<Vec<u32>> = Vec::new();
    let mut room: Vec<f64> = Vec::new();
    for i in argsort(t, true) {
        match room.iter().position(|&free| t[i] <= free) {
            Some(b) => {
                bins[b].push(i as u32);
                room[b] -= t[i];
            }
            None => {
                bins.push(vec![i as u32]);
                room.push(budget - t[i]);
            }
        }
    }
    let mut weighted: Vec<(f64, Vec<u32>)> =
        bins.into_iter().map(|b| (b.iter().map(|&i| w[i as usize]).sum(), b)).collect();
    weighted.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut loads: BinaryHeap<Reverse<(Load, usize)>> = (0..k).map(|r| Reverse((Load(0.0), r))).collect();
    let mut out: Vec<Vec<u32>> = vec![Vec::new(); k];
    for (wb, members) in weighted {
        let Some(Reverse((Load(load), r))) = loads.pop() else { break };
        out[r].extend(members);
        loads.push(Reverse((Load(load + wb), r)));
    }
    for o in &mut out {
        o.sort_unstable();
    }
    out
}

/// A rank's load, totally ordered (never NaN).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Load(f64);
impl Eq for Load {}
impl PartialOrd for Load {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Load {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranks(dp_ranks: u32, dispatch: Dispatch, s_per_token: f64, s_per_token_sq: f64) -> TrainRanks {
        TrainRanks {
            dp_ranks,
            dispatch,
            s_per_token,
            s_per_token_sq,
            fixed_s: 0.0,
            mini_batches: 1,
            max_tokens_per_gpu: 0.0,
        }
    }

    #[test]
    fn four_samples_on_two_ranks_by_hand() {
        // two groups of two answers, 100 and 900 tokens, at 1 ms per token: contiguous puts a group
        // on each rank (0.2 s and 1.8 s); balanced pairs a short with a long (1.0 s each)
        let lengths = [100.0, 100.0, 900.0, 900.0];
        let con = ranks(2, Dispatch::Contiguous, 1e-3, 0.0).step(&lengths, 0.0);
        assert!((con.0 - 1.8).abs() < 1e-12 && (con.1 - 1.0).abs() < 1e-12, "{con:?}");
        let bal = ranks(2, Dispatch::Balanced, 1e-3, 0.0).step(&lengths, 0.0);
        assert!((bal.0 - 1.0).abs() < 1e-12 && (bal.1 - 1.0).abs() < 1e-12, "{bal:?}");
        let w: Vec<f64> = lengths.iter().map(|t| t * 1e-3).collect();
        assert_eq!(assign_ranks(&lengths, &w, 2, Dispatch::Balanced, 1, 0.0), vec![vec![0, 3], vec![1, 2]]);
        assert_eq!(assign_ranks(&lengths, &w, 2, Dispatch::RoundRobin, 1, 0.0), vec![vec![0, 2], vec![1, 3]]);
        assert_eq!(assign_ranks(&lengths, &w, 2, Dispatch::Lpt, 1, 0.0), vec![vec![2, 0], vec![3, 1]]);
        // the quadratic term, and a 50-token prompt on every sequence: T = 150 and 950 tokens
        let q = ranks(2, Dispatch::Contiguous, 1e-3, 1e-6).step(&lengths, 50.0);
        let (short, long) = (0.15 + 0.0225, 0.95 + 0.9025);
        assert!((q.0 - 2.0 * long).abs() < 1e-12 && (q.1 - (short + long)).abs() < 1e-12, "{q:?}");
    }

    #[test]
    fn mini_batches_each_wait_for_their_slowest_rank() {
        // 8 samples, 2 ranks, 2 mini-batches: rank 0 trains [1, 1 | 1, 1], rank 1 [1, 1 | 9, 9] (x 1 s)
        let lengths = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 9.0, 9.0];
        let r = TrainRanks { mini_batches: 2, ..ranks(2, Dispatch::Contiguous, 1.0, 0.0) };
        let (slowest, mean) = r.step(&lengths, 0.0);
        assert_eq!((slowest, mean), (2.0 + 18.0, 2.0 + 10.0));
    }

    #[test]
    fn packed_fills_micro_batches_first_fit_decreasing() {
        // budget 10: [8, 2], [7, 3], [5, 5] -> heaviest micro-batch first to the least loaded rank
        let t = [5.0, 8.0, 3.0, 7.0, 2.0, 5.0];
        let parts = assign_ranks(&t, &t, 2, Dispatch::Packed, 1, 10.0);
        assert_eq!(
            parts,
            vec![vec![1, 4, 5, 0], vec![2, 3]]
                .into_iter()
                .map(|mut p| {
                    p.sort();
                    p
                })
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn uneven_counts_never_panic() {
        let t: Vec<f64> = (1..=7).map(|x| x as f64).collect();
        for d in
            [Dispatch::Contiguous, Dispatch::RoundRobin, Dispatch::Balanced, Dispatch::Lpt, Dispatch::BalancedMinibatch]
        {
            let parts = assign_ranks(&t, &t, 3, d, 2, 0.0);
            let mut all: Vec<u32> = parts.concat();
            all.sort();
            assert_eq!(all, (0..7).collect::<Vec<u32>>(), "{d:?}");
        }
    }
}
