//! Batched decoding: the rollout pool as inference instances of `per` slots each, and their events.
//!
//! Each instance has a token clock counting the tokens each of its sequences has decoded since the
//! start. All sequences of an instance decode at the same speed, `speed_by_batch[n - 1]` with `n`
//! sequences on board, so a request started at clock value `c0` with `k` tokens to go finishes when
//! the clock reaches `c0 + k`: its *clock target*, which does not move when the batch changes.
//!
//! Events: per instance, a binary min-heap of (clock target, sample id) of its running requests;
//! and one top-level winner tree over the instances, keyed by (time at which the instance's clock
//! reaches its smallest target, that request's sample id). A change of an instance's batch marks it
//! dirty; its top-level key is recomputed (O(1) plus O(log instances)) before the next event is
//! taken. Finish times are computed exactly as the engine computed them per slot before (time of
//! the last change + (target - clock) / rate), and ties in time are served by sample id, so the
//! order of events is the same as with one global queue over the slots.
//!
//! Routing: a second winner tree over the instances keyed by their running count (full ones
//! excluded) picks the least loaded instance (ties: the lowest), and a min-heap of idle slots per
//! instance its lowest idle slot.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Key of nothing: later than any event.
pub(crate) const NONE: u128 = u128::MAX;

/// (non-negative finite time or clock value, sample id) packed to compare as an integer.
#[inline]
pub(crate) fn key(x: f64, id: u32) -> u128 {
    debug_assert!(x >= 0.0 && x.is_finite());
    ((x.to_bits() as u128) << 32) | id as u128
}

#[inline]
fn key_value(k: u128) -> f64 {
    f64::from_bits((k >> 32) as u64)
}

/// A winner tree over `n` leaves with `u128` keys: any leaf's key changes in O(log n); the minimum
/// (ties: the lowest leaf) in O(1).
#[derive(Clone, Debug)]
pub(crate) struct MinTree {
    keys: Vec<u128>,
    /// `win[size + i] = i`; `win[node]` = winner of its subtree; `win[1]` the overall winner.
    win: Vec<u32>,
    size: usize,
}

impl MinTree {
    pub fn new(n: usize, init: u128) -> Self {
        let size = n.max(1).next_power_of_two();
        let mut keys = vec![NONE; size];
        keys[..n].fill(init);
        let mut win = vec![0u32; 2 * size];
        for i in 0..size {
            win[size + i] = i as u32;
        }
        let mut t = MinTree { keys, win, size };
        for node in (1..size).rev() {
            t.win[node] = t.pick(node);
        }
        t
    }

    #[inline]
    fn pick(&self, node: usize) -> u32 {
        let (a, b) = (self.win[2 * node], self.win[2 * node + 1]);
        if self.keys[b as usize] < self.keys[a as usize] {
            b
        } else {
            a
        }
    }

    #[inline]
    pub fn set(&mut self, i: usize, k: u128) {
        self.keys[i] = k;
        let mut node = (i + self.size) >> 1;
        while node > 0 {
            self.win[node] = self.pick(node);
            node >>= 1;
        }
    }

    /// The leaf with the smallest key and its key.
    #[inline]
    pub fn min(&self) -> (usize, u128) {
        let w = self.win[1] as usize;
        (w, self.keys[w])
    }
}

pub(crate) struct Instances {
    pub per: usize,
    /// Decode speed of one sequence with `n` sequences on board (`n = 1..=per`): `[n - 1]`.
    pub speed_by_batch: Vec<f64>,
    /// Requests on board (decoding or in prefill), per instance.
    pub n: Vec<u32>,
    pub clock: Vec<f64>,
    /// When each clock was last brought up to date (the time of the instance's last change).
    pub clock_t: Vec<f64>,
    /// Per instance `i`, a min-heap of (clock target key, slot) in `heap[i * per..i * per + len[i]]`.
    heap: Vec<(u128, u32)>,
    len: Vec<u32>,
    /// Position of each busy slot's entry in its instance's heap.
    pos: Vec<u32>,
    /// Next event per instance: (time, sample id) key, and its slot.
    top: MinTree,
    top_slot: Vec<u32>,
    dirty: Vec<bool>,
    dirty_list: Vec<u32>,
    /// Routing: running count per instance (`NONE` when full).
    load: MinTree,
    /// Idle slots per instance, lowest first.
    idle: Vec<BinaryHeap<Reverse<u32>>>,
    /// Scratch stack for tie-breaking.
    stack: Vec<u32>,
}

impl Instances {
    /// `slots / per` instances, all idle.
    pub fn new(slots: usize, per: usize, speed_by_batch: Vec<f64>) -> Self {
        debug_assert!(per > 0 && slots % per == 0 && speed_by_batch.len() == per);
        let k = slots / per;
        Instances {
            per,
            speed_by_batch,
            n: vec![0; k],
            clock: vec![0.0; k],
            clock_t: vec![0.0; k],
            heap: vec![(NONE, 0); slots],
            len: vec![0; k],
            pos: vec![0; slots],
            top: MinTree::new(k, NONE),
            top_slot: vec![0; k],
            dirty: vec![false; k],
            dirty_list: Vec::new(),
            load: MinTree::new(k, 0),
            idle: (0..k).map(|i| ((i * per) as u32..((i + 1) * per) as u32).map(Reverse).collect()).collect(),
            stack: Vec::new(),
        }
    }

    /// Decode speed of one sequence on instance `i` now.
    #[inline]
    pub fn rate(&self, i: usize) -> f64 {
        self.speed_by_batch[(self.n[i].max(1) - 1) as usize]
    }
    #[inline]
    pub fn clock_at(&self, i: usize, t: f64) -> f64 {
        self.clock[i] + (t - self.clock_t[i]) * self.rate(i)
    }
    #[inline]
    pub fn advance(&mut self, i: usize, t: f64) {
        self.clock[i] = self.clock_at(i, t);
        self.clock_t[i] = t;
    }

    /// Instance `i` gained (`+1`) or lost (`-1`) a request (its clock is up to date).
    #[inline]
    pub fn set_n(&mut self, i: usize, n: u32) {
        self.n[i] = n;
        self.load.set(i, if (n as usize) < self.per { n as u128 } else { NONE });
        self.mark(i);
    }

    #[inline]
    fn mark(&mut self, i: usize) {
        if !self.dirty[i] {
            self.dirty[i] = true;
            self.dirty_list.push(i as u32);
        }
    }

    /// The request with sample `id` on `slot` finishes when its instance's clock reaches `target`.
    #[inline]
    pub fn push(&mut self, slot: u32, target: f64, id: u32) {
        let i = slot as usize / self.per;
        let p = self.len[i] as usize;
        self.len[i] += 1;
        self.heap[i * self.per + p] = (key(target, id), slot);
        self.pos[slot as usize] = p as u32;
        self.sift_up(i, p);
        self.mark(i);
    }

    /// Takes the request on `slot` out of its instance's heap.
    #[inline]
    pub fn remove(&mut self, slot: u32) {
        let i = slot as usize / self.per;
        let base = i * self.per;
        let p = self.pos[slot as usize] as usize;
        let last = self.len[i] as usize - 1;
        self.len[i] -= 1;
        self.mark(i);
        if p == last {
            return;
        }
        let moved = self.heap[base + last];
        self.heap[base + p] = moved;
        self.pos[moved.1 as usize] = p as u32;
        if p > 0 && moved.0 < self.heap[base + (p - 1) / 2].0 {
            self.sift_up(i, p);
        } else {
            self.sift_down(i, p);
        }
    }

    fn sift_up(&mut self, i: usize, mut p: usize) {
        let base = i * self.per;
        let e = self.heap[base + p];
        while p > 0 {
            let parent = (p - 1) / 2;
            let q = self.heap[base + parent];
            if q.0 <= e.0 {
                break;
            }
            self.heap[base + p] = q;
            self.pos[q.1 as usize] = p as u32;
            p = parent;
        }
        self.heap[base + p] = e;
        self.pos[e.1 as usize] = p as u32;
    }

    fn sift_down(&mut self, i: usize, mut p: usize) {
        let base = i * self.per;
        let len = self.len[i] as usize;
        let e = self.heap[base + p];
        loop {
            let mut c = 2 * p + 1;
            if c >= len {
                break;
            }
            if c + 1 < len && self.heap[base + c + 1].0 < self.heap[base + c].0 {
                c += 1;
            }
            let q = self.heap[base + c];
            if e.0 <= q.0 {
                break;
            }
            self.heap[base + p] = q;
            self.pos[q.1 as usize] = p as u32;
            p = c;
        }
        self.heap[base + p] = e;
        self.pos[e.1 as usize] = p as u32;
    }

    /// Recomputes the top-level keys of the instances changed since the last call.
    #[inline]
    fn flush(&mut self) {
        while let Some(i) = self.dirty_list.pop() {
            let i = i as usize;
            self.dirty[i] = false;
            let (k, slot) = self.next_of(i);
            self.top.set(i, k);
            self.top_slot[i] = slot;
        }
    }

    /// Instance `i`'s next finish: (time, sample id) key and slot. The time of a request is the
    /// time of the instance's last change plus (target - clock) / rate; requests whose times are
    /// equal go in sample-id order (as the former per-slot keys did), even when their targets
    /// differ by less than the rounding of the time.
    fn next_of(&mut self, i: usize) -> (u128, u32) {
        let len = self.len[i] as usize;
        if len == 0 {
            return (NONE, 0);
        }
        let base = i * self.per;
        let (t, c, rate) = (self.clock_t[i], self.clock[i], self.rate(i));
        let time = |k: u128| t + (key_value(k) - c).max(0.0) / rate;
        let (k0, mut slot) = self.heap[base];
        let t0 = time(k0);
        let mut id = k0 as u32;
        // Every request whose time equals t0 is in the heap's top subtree where times equal t0
        // (times grow with targets, targets down the heap).
        self.stack.clear();
        self.stack.extend([1u32, 2]);
        while let Some(p) = self.stack.pop() {
            let p = p as usize;
            if p >= len {
                continue;
            }
            let (k, s) = self.heap[base + p];
            if time(k) == t0 {
                if (k as u32) < id {
                    id = k as u32;
                    slot = s;
                }
                self.stack.extend([2 * p as u32 + 1, 2 * p as u32 + 2]);
            }
        }
        (key(t0, id), slot)
    }

    /// The earliest finish of any instance: (time, sample id, slot).
    #[inline]
    pub fn next_event(&mut self) -> Option<(f64, u32, u32)> {
        self.flush();
        let (i, k) = self.top.min();
        (k != NONE).then(|| (key_value(k), k as u32, self.top_slot[i]))
    }

    /// The lowest idle slot of the least loaded instance with an idle slot (ties: the lowest
    /// instance).
    #[inline]
    pub fn route(&self) -> Option<u32> {
        let (i, k) = self.load.min();
        if k == NONE {
            return None;
        }
        self.idle[i].peek().map(|s| s.0)
    }

    /// `slot` (just filled) leaves the idle slots.
    #[inline]
    pub fn take_idle(&mut self, slot: u32) {
        let i = slot as usize / self.per;
        let s = self.idle[i].pop();
        debug_assert_eq!(s, Some(Reverse(slot)));
    }

    #[inline]
    pub fn push_idle(&mut self, slot: u32) {
        self.idle[slot as usize / self.per].push(Reverse(slot));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{FastRng, Source};

    #[test]
    fn min_tree_agrees_with_brute_force() {
        for n in [1usize, 2, 3, 5, 8, 13] {
            let mut rng = FastRng::new(n as u64);
            let mut t = MinTree::new(n, NONE);
            let mut keys = vec![NONE; n];
            for _ in 0..2000 {
                let i = (rng.uniform() * n as f64) as usize;
                let k = if rng.uniform() < 0.2 { NONE } else { (rng.uniform() * 8.0) as u128 };
                t.set(i, k);
                keys[i] = k;
                let best = keys.iter().enumerate().min_by_key(|(j, k)| (**k, *j)).unwrap();
                assert_eq!(t.min(), (best.0, *best.1));
            }
        }
    }

    /// The heap per instance against a brute-force minimum over (target, id), with removals.
    #[test]
    fn instance_heaps_agree_with_brute_force() {
        let per = 7;
        let mut rng = FastRng::new(9);
        let mut b = Instances::new(3 * per, per, vec![1.0; per]);
        let mut on: Vec<Option<(f64, u32)>> = vec![None; 3 * per];
        for id in 0..5000u32 {
            let s = (rng.uniform() * on.len() as f64) as usize;
            if on[s].is_some() {
                b.remove(s as u32);
                on[s] = None;
            } else {
                let target = (rng.uniform() * 20.0).floor();
                b.push(s as u32, target, id);
                on[s] = Some((target, id));
            }
            for i in 0..3 {
                b.n[i] = 1;
                let want = (i * per..(i + 1) * per)
                    .filter_map(|s| on[s].map(|(t, id)| (key(t, id), s as u32)))
                    .min()
                    .unwrap_or((NONE, 0));
                let got = b.next_of(i);
                assert_eq!(got.0, want.0);
                if want.0 != NONE {
                    assert_eq!(got.1, want.1);
                }
            }
        }
    }
}
