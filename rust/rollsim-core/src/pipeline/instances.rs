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
//! Routing: a second winner tree over the instances keyed by their occupied slots (full ones
//! excluded) picks the least loaded instance (ties: the lowest), and a min-heap of idle slots per
//! instance its lowest idle slot. Both trees hold packed values (key above, instance below), so
//! equal keys go to the lowest instance; a change replays its leaf's lowest matches without
//! branching on their outcomes, then stops at the first match whose outcome it does not change.
//! The routing tree takes the last instance whose load changed lazily (a finish and the start on
//! the freed slot leave it as it was): `route` compares the tree's minimum with that instance's
//! load, and updates the tree only when a second instance changes or the minimum is that
//! instance's old value and its load grew.
//!
//! KV-cache capacity (`Kv`, optional): a request on a slot either runs (it is in the heap and holds
//! KV: prompt + tokens done when it was admitted, plus one token per clock token once its prefill
//! is over) or waits for KV in its instance's waiting queue (it holds none). The instance's KV is
//! piecewise linear in its clock, so the clock value at which it reaches capacity is computed like
//! a finish target and is the instance's event when it comes first: the most recently admitted
//! running request is preempted then (vLLM preempts from the back of its running queue). The exact
//! sums over an instance's requests (`kv_full`, `kv_fits_at`) are skipped when approximate sums kept
//! up to date incrementally show, with a wide error bound, that the answer is certain (`KvApprox`):
//! the exact sums decide every close call, so the results are theirs.
//! Agentic requests in tool calls keep KV on their instance beside the running ones: cached
//! (`KvPolicy::Keep`, evicted least recently cached first when room is needed) or held with their
//! slot (`KvPolicy::Hold`: never evicted, never preempted, freed when the call returns).
//!
//! Shared prefill (`SharedPrefill`, optional: `prefill_mode = "shared"`): a request with a prompt
//! to prefill is not in the heap but in its instance's prefill queue (first come, first served),
//! served at the instance's prefill rate, which depends on how many sequences decode beside it; while
//! the queue is not empty the decoding sequences run at a lower speed. The end of the head's prefill is
//! the instance's event when it comes first (like a preemption, handled inside the placement: the
//! request joins the heap with its clock target then).
//!
//! Context-dependent speed (`ContextSpeed`, optional: `decode_s_per_context_token`): a step also
//! costs a slope times the contexts of the decoding sequences, whose sum is affine in the clock
//! (`k0 + n x clock`). The speed is a function of the state at the instance's last change, so it is
//! constant until the next; a refresh event (handled inside the placement, like the end of a shared
//! prefill) moves the clock on once it has advanced by 1/32 of the mean context.
//!
//! `Instances` is one of the pool's placements (`placement.rs`).

use std::collections::VecDeque;

use super::placement::Placement;
use super::pool::Req;
use crate::event::time_of as key_value;
use crate::queue::{key, Event};
use crate::scenario::Scenario;

/// Key of nothing: later than any event.
pub(crate) const NONE: u128 = crate::queue::IDLE;

/// A winner tree of values that carry their leaf's index in their low bits (so that they are
/// distinct and equal keys go to the lowest leaf): a leaf's value changes in O(log n), stopping
/// (above the lowest `BRANCH_FREE_LEVELS` matches) as soon as a match's winner is unchanged; the
/// minimum in O(1).
#[derive(Clone, Debug)]
pub(crate) struct MinTree<T> {
    /// Per node, the smallest value of its subtree: leaves at `size..2 * size`, the root at 1
    /// (with one leaf, the leaf itself).
    v: Vec<T>,
    size: usize,
}

/// A value of a `MinTree`: ordered, and the smaller of two found without a branch (which one
/// wins a match is random, so a branch would be mispredicted half the time).
pub(crate) trait TreeValue: Copy + Ord {
    fn min_of(a: Self, b: Self) -> Self;
}

impl TreeValue for u64 {
    #[inline(always)]
    fn min_of(a: u64, b: u64) -> u64 {
        a.min(b) // a conditional move
    }
}

impl TreeValue for u128 {
    #[inline(always)]
    fn min_of(a: u128, b: u128) -> u128 {
        // a mask: the compiler selects a u128 with a branch
        let m = 0u128.wrapping_sub((b < a) as u128);
        (b & m) | (a & !m)
    }
}

/// `MinTree::set`'s matches replayed in full above a leaf before it may stop.
const BRANCH_FREE_LEVELS: u32 = 4;

impl<T: TreeValue> MinTree<T> {
    /// `n` leaves (rounded up to a power of two) valued `leaf(i)`.
    pub fn new(n: usize, leaf: impl Fn(usize) -> T) -> Self {
        let size = n.max(1).next_power_of_two();
        let mut v: Vec<T> = (0..2 * size).map(|i| leaf(i.saturating_sub(size))).collect();
        for node in (1..size).rev() {
            v[node] = T::min_of(v[2 * node], v[2 * node + 1]);
        }
        MinTree { v, size }
    }

    #[inline]
    pub fn set(&mut self, i: usize, x: T) {
        let mut node = i + self.size;
        self.v[node] = x;
        let mut x = x;
        // The lowest matches are replayed without stopping at the first unchanged one (whether a
        // match changes is random there, and its branch costs more than the stores it saves);
        // above them a change rarely goes on, and stopping saves the climb on large trees.
        let mut level = 0;
        while node > 1 {
            x = T::min_of(x, self.v[node ^ 1]);
            node >>= 1;
            if level >= BRANCH_FREE_LEVELS && self.v[node] == x {
                return; // this match and every one above it are unchanged
            }
            self.v[node] = x;
            level += 1;
        }
    }

    /// Leaf `i`'s value.
    #[inline(always)]
    pub fn leaf(&self, i: usize) -> T {
        self.v[i + self.size]
    }

    /// The smallest value.
    #[inline]
    pub fn min(&self) -> T {
        self.v[1]
    }
}

/// An entry of an instance's heap: its clock target's bits, sample id and slot packed so that
/// integer order is (target, id) order, in 16 bytes (a key and a slot took 32).
#[inline(always)]
fn entry(target: f64, id: u32, slot: u32) -> u128 {
    debug_assert!(target >= 0.0 && target.is_finite(), "clock target {target}");
    ((target.to_bits() as u128) << 64) | ((id as u128) << 32) | slot as u128
}
/// The slot of a heap entry.
#[inline(always)]
fn entry_slot(e: u128) -> u32 {
    e as u32
}
/// A heap entry as (the slot event key of its target and id, its slot).
#[inline(always)]
fn split(e: u128) -> (u128, u32) {
    (key(f64::from_bits((e >> 64) as u64), (e >> 32) as u32), e as u32)
}

/// The next representable value above `x`, for a finite `x >= 0` (a clock or a time; `f64::next_up`
/// is newer than the crate's minimum Rust version).
#[inline]
fn next_up(x: f64) -> f64 {
    debug_assert!(x >= 0.0 && x.is_finite(), "{x}");
    if x == 0.0 {
        f64::from_bits(1)
    } else {
        f64::from_bits(x.to_bits() + 1)
    }
}

/// `Instances::hole` when no heap has a hole at its top.
const NO_HOLE: usize = usize::MAX;

/// Bits of a tree value that hold the leaf (instances are slots, at most `MAX_COUNT = 2^24`).
const LEAF_BITS: u32 = 24;
/// An instance's next event in the top tree: its key above, the instance below (event keys use
/// the low 104 bits of a `u128`, so nothing is lost).
#[inline(always)]
fn top_value(k: u128, i: usize) -> u128 {
    (k << LEAF_BITS) | i as u128
}
/// An instance's load in the routing tree: occupied slots above (`u32::MAX`: full), the instance
/// below.
#[inline(always)]
fn load_value(occ: u32, i: usize) -> u64 {
    ((occ as u64) << 32) | i as u64
}

/// The idle slots of each instance as a two-level bitset: one bit per slot, and one bit per word
/// of slots that is not empty, so that the lowest idle slot of an instance is found with a few
/// trailing-zero counts (up to 4096 slots per instance: one summary word) instead of a heap's
/// O(log slots) sift per change.
#[derive(Clone, Debug)]
struct IdleSlots {
    /// Slot bits: instance `i`'s slot `i * per + j` is bit `j % 64` of `bits[i * words + j / 64]`.
    bits: Vec<u64>,
    /// Word bits: bit `w % 64` of `nonempty[i * sums + w / 64]` is set when `bits[i * words + w]`
    /// is not 0.
    nonempty: Vec<u64>,
    per: usize,
    words: usize,
    sums: usize,
}

impl IdleSlots {
    /// `k` instances of `per` slots, every slot idle.
    fn new(k: usize, per: usize) -> Self {
        let words = per.div_ceil(64);
        let sums = words.div_ceil(64);
        let mut s = IdleSlots { bits: vec![0; k * words], nonempty: vec![0; k * sums], per, words, sums };
        for i in 0..k {
            for j in 0..per {
                s.insert(i, (i * per + j) as u32);
            }
        }
        s
    }

    /// The lowest idle slot of instance `i`.
    #[inline]
    fn lowest(&self, i: usize) -> Option<u32> {
        let sums = &self.nonempty[i * self.sums..(i + 1) * self.sums];
        let (n, &m) = sums.iter().enumerate().find(|(_, m)| **m != 0)?;
        let w = n * 64 + m.trailing_zeros() as usize;
        let b = self.bits[i * self.words + w].trailing_zeros() as usize;
        Some((i * self.per + w * 64 + b) as u32)
    }

    #[inline]
    fn insert(&mut self, i: usize, slot: u32) {
        let j = slot as usize - i * self.per;
        self.bits[i * self.words + j / 64] |= 1 << (j % 64);
        self.nonempty[i * self.sums + j / 4096] |= 1 << ((j / 64) % 64);
    }

    #[inline]
    fn remove(&mut self, i: usize, slot: u32) {
        let j = slot as usize - i * self.per;
        let w = &mut self.bits[i * self.words + j / 64];
        *w &= !(1 << (j % 64));
        if *w == 0 {
            self.nonempty[i * self.sums + j / 4096] &= !(1 << ((j / 64) % 64));
        }
    }
}

/// KV-cache capacity per instance, and the per-slot state it needs.
pub(crate) struct Kv {
    /// Tokens of KV per instance.
    pub cap: f64,
    /// Per slot, its request's KV state (one record: the hot paths read several fields of it).
    slot: Vec<KvSlot>,
    /// Per instance, the KV of requests that do not decode and the approximate sums.
    inst: Vec<KvInst>,
    next_seq: u64,
    /// Waiting requests per instance, front first: their slots and tokens decoded (read by each
    /// admission check here, not from the pool's slot, which is cold by then).
    pub queue: Vec<VecDeque<(u32, f64)>>,
    /// Requests waiting in the whole pool, and the slot-seconds they have waited so far.
    pub n_waiting: u32,
    pub wait_s: f64,
    wait_t: f64,
    scratch: Vec<f64>,
    approx: KvApprox,
    /// Agentic rollouts (`KvPolicy::Keep`): per instance, the entries of the KV cached for
    /// requests in tool calls (sample id, tokens), least recently cached first (their sum is
    /// `KvInst::cached`); the entries evicted so far.
    lru: Vec<Fifo<(u32, f64)>>,
    evictions: u64,
    /// Updates to an instance's approximate sums between two exact recomputations,
    /// `max(RESYNC_EVERY, per)`.
    resync_every: u32,
    /// `kv_approx`'s rounding bound per unit of magnitude (it depends on `per` only), and the
    /// part of its bound that depends on the capacity only (`1e-6 * cap + 1e-6`).
    rounding: f64,
    err_floor: f64,
}

/// A first-in first-out queue of `Copy` entries in a `Vec`, its front at `head`: its `push_back`
/// inlines (`VecDeque`'s was a call on every turn's end of an agentic rollout, which caches its KV
/// here), and its storage starts over whenever its last entry leaves (mostly at once: the KV a
/// turn leaves is mostly evicted by the admission that follows it).
#[derive(Clone)]
struct Fifo<T> {
    v: Vec<T>,
    head: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Fifo { v: Vec::new(), head: 0 }
    }
}

impl<T: Copy> Fifo<T> {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.head == self.v.len()
    }

    #[inline(always)]
    fn push_back(&mut self, x: T) {
        if self.head > 0 && self.v.len() == self.v.capacity() {
            self.compact();
        }
        self.v.push(x);
    }

    /// Drops the storage of the entries that have left (before it grows).
    #[cold]
    fn compact(&mut self) {
        self.v.drain(..self.head);
        self.head = 0;
    }

    #[inline(always)]
    fn pop_front(&mut self) -> Option<T> {
        let x = *self.v.get(self.head)?;
        self.head += 1;
        if self.head == self.v.len() {
            self.v.clear();
            self.head = 0;
        }
        Some(x)
    }

    /// The position (from the front) of the first entry for which `f` holds.
    #[inline(always)]
    fn position(&self, f: impl FnMut(&T) -> bool) -> Option<usize> {
        self.v[self.head..].iter().position(f)
    }

    /// Removes the entry at position `p` from the front (the order of the others is kept).
    fn remove(&mut self, p: usize) -> T {
        let x = self.v.remove(self.head + p);
        if self.is_empty() {
            self.v.clear();
            self.head = 0;
        }
        x
    }
}

/// A slot's KV state.
#[derive(Clone, Copy, Default)]
struct KvSlot {
    /// Its running request: KV held when admitted (prompt + tokens done), the clock value at
    /// which decoding starts, admission order.
    base: f64,
    ds: f64,
    seq: u64,
    /// Its request waits for KV (in its instance's `queue`); its prefill seconds if it had been
    /// admitted at once.
    waiting: bool,
    wait_prefill_s: f64,
    /// Agentic rollouts (`KvPolicy::Hold`): the KV its held request keeps.
    held_tokens: f64,
    /// `KvApprox`: its running request was still in prefill when last looked at.
    in_prefill: bool,
}

/// An instance's KV totals.
#[derive(Clone, Copy, Default)]
struct KvInst {
    /// Agentic rollouts (`KvPolicy::Keep`): the KV cached for requests in tool calls, tokens.
    cached: f64,
    /// Agentic rollouts (`KvPolicy::Hold`): the KV of requests holding their slot during a tool
    /// call (not evictable), and how many.
    held: f64,
    n_held: u32,
    /// Shared prefill: the KV held by requests in its prefill queue (prompt + tokens done each,
    /// from their admission).
    prefilling: f64,
    /// `KvApprox`, over its running requests: the KV held when admitted; and over those known to
    /// decode (their decoding started at or before the instance's clock): how many, and the sum
    /// of the clock values at which they started; updates since the sums were last recomputed
    /// exactly.
    a_held: f64,
    a_n_dec: u32,
    a_sum_ds: f64,
    a_updates: u32,
}

/// The KV each instance holds, kept up to date incrementally (and so only approximately: its
/// rounding differs from the exact sums'), with a bound on its error. It decides nothing by
/// itself: it lets `kv_full` and `kv_fits_at` skip their exact O(slots per instance) sums when the
/// answer is certain with a wide margin (the KV is far from the capacity), and the exact sums
/// decide whenever it is not, so the results are those of the exact sums.
///
/// Its sums are `KvInst`'s `a_*` fields, and `KvSlot::in_prefill`.
struct KvApprox {
    /// Per instance, the running requests still in prefill when they were last looked at.
    prefill: Vec<Vec<u32>>,
}

/// Updates to an instance's approximate sums between two exact recomputations (at least: an
/// instance of more slots waits as many updates as it has slots, so that a recomputation, O(slots),
/// costs O(1) per update).
const RESYNC_EVERY: u32 = 512;

/// `kv_full`: above this many requests in prefill, their prefill ends are taken from a min-heap
/// (as far as the walk to the capacity goes) instead of being sorted.
const LAZY_PREFILL_ENDS: usize = 64;

/// Makes `v` a min-heap in `f64::total_cmp` order (O(len)).
fn heapify_min(v: &mut [f64]) {
    for p in (0..v.len() / 2).rev() {
        sift_down_min(v, p);
    }
}

/// Removes the smallest value of the min-heap `v`.
fn pop_min(v: &mut Vec<f64>) {
    let last = v.pop().expect("a value");
    if !v.is_empty() {
        v[0] = last;
        sift_down_min(v, 0);
    }
}

fn sift_down_min(v: &mut [f64], mut p: usize) {
    let len = v.len();
    loop {
        let (l, r) = (2 * p + 1, 2 * p + 2);
        let mut c = p;
        if l < len && v[l].total_cmp(&v[c]).is_lt() {
            c = l;
        }
        if r < len && v[r].total_cmp(&v[c]).is_lt() {
            c = r;
        }
        if c == p {
            return;
        }
        v.swap(p, c);
        p = c;
    }
}

impl Kv {
    /// KV of instance `i` held by requests that are not decoding: in tool calls, cached
    /// (`KvPolicy::Keep`) and held with their slots (`KvPolicy::Hold`), and (shared prefill) in
    /// its prefill queue. Each term is 0 where it does not apply, so the sum is the one that
    /// applies, bit for bit.
    #[inline(always)]
    fn idle(&self, i: usize) -> f64 {
        let k = &self.inst[i];
        k.cached + k.held + k.prefilling
    }

    /// The number of waiting requests changes by `delta` at `t`.
    #[inline]
    pub fn wait_change(&mut self, t: f64, delta: i32) {
        self.wait_s += self.n_waiting as f64 * (t - self.wait_t);
        self.wait_t = t;
        self.n_waiting = (self.n_waiting as i32 + delta) as u32;
    }
}

/// Prefill as a shared resource of each instance (`PrefillMode::Shared`), and the per-slot state it
/// needs.
pub(crate) struct SharedPrefill {
    /// Prefill throughput of one instance, tokens/s, and the tokens of a step.
    rate: f64,
    budget: f64,
    /// While prompts wait: the decode speed of one sequence with `b` sequences decoding, `[b - 1]`,
    /// and the prefill rate of the instance, `[b]` (`b = 0..=per`).
    speed: Vec<f64>,
    prefill_rate: Vec<f64>,
    /// Per instance: slots whose request is in prefill, front first, and the prompt tokens the
    /// front one has left.
    queue: Vec<VecDeque<u32>>,
    left: Vec<f64>,
    /// Per slot: prompt tokens of its prefill, tokens to decode after it, sample id, and the clock
    /// value at which it decodes (`INFINITY` while in prefill).
    tokens: Vec<f64>,
    todo: Vec<f64>,
    id: Vec<u32>,
    ds: Vec<f64>,
    /// Per slot: its context when it starts decoding (prompt + tokens done).
    base: Vec<f64>,
    /// Per instance: its next event is the end of its front request's prefill.
    due: Vec<bool>,
}

impl SharedPrefill {
    /// `k` instances of `per` slots, decoding at `speed_by_batch`, prefilling at `rate` tokens/s
    /// with `budget` tokens per step.
    pub fn new(k: usize, per: usize, speed_by_batch: &[f64], rate: f64, budget: f64) -> Self {
        // a step of b decode tokens and a chunk of budget - b prompt tokens
        let step = |b: usize| 1.0 / speed_by_batch[b - 1] + (budget - b as f64) / rate;
        SharedPrefill {
            rate,
            budget,
            speed: (1..=per).map(|b| 1.0 / step(b)).collect(),
            prefill_rate: (0..=per).map(|b| if b == 0 { rate } else { (budget - b as f64) / step(b) }).collect(),
            queue: vec![VecDeque::new(); k],
            left: vec![0.0; k],
            tokens: vec![0.0; k * per],
            todo: vec![0.0; k * per],
            id: vec![0; k * per],
            ds: vec![0.0; k * per],
            base: vec![0.0; k * per],
            due: vec![false; k],
        }
    }
}

/// A decode step's cost per token of context (`decode_s_per_context_token`), and its state.
pub(crate) struct ContextSpeed {
    /// Seconds per step per token of context of the decoding sequences.
    slope: f64,
    /// Per instance: the sum over its decoding requests of (context when decoding starts - the
    /// clock value it starts at), so that their contexts sum to `k0 + n x clock`.
    k0: Vec<f64>,
    /// Per slot: its request's term of `k0`.
    term: Vec<f64>,
    /// Per instance: its next event is a refresh of its speed.
    due: Vec<bool>,
}

/// An instance's state.
#[derive(Clone, Copy, Default)]
struct Inst {
    /// Its token clock, and when it was last brought up to date (the time of its last change).
    clock: f64,
    clock_t: f64,
    /// `speed_by_batch[max(n, 1) - 1]` (kept by `set_n`): the speed without shared prefill or
    /// context-dependent speed.
    batch_rate: f64,
    /// Requests on board (decoding or in prefill).
    n: u32,
    /// Entries of its heap (`heap[i * per..i * per + len]`).
    len: u32,
    /// Routing: occupied slots (running or waiting for KV).
    occ: u32,
    /// The slot its next event (in `top`) is keyed on.
    top_slot: u32,
    /// Changed since the last flush (in `dirty_list`).
    dirty: bool,
    /// Its next event is a preemption (KV full), not a finish.
    preempt: bool,
}

pub(crate) struct Instances {
    pub per: usize,
    /// The instance of each slot (`slot / per`, without a division).
    inst_of: Vec<u32>,
    /// Prompt tokens of every request (they hold its KV).
    prompt: f64,
    /// Decode speed of one sequence with `n` sequences on board (`n = 1..=per`): `[n - 1]`.
    pub speed_by_batch: Vec<f64>,
    /// Per instance, its state (one record: the hot paths read several fields of it).
    st: Vec<Inst>,
    /// Every clock stands still until this time (a rollout pause at a weight update).
    pub paused_until: f64,
    /// Per instance `i`, a min-heap of `entry(clock target, id, slot)` in
    /// `heap[i * per..i * per + len[i]]`.
    heap: Vec<u128>,
    /// Without KV capacity: the instance whose heap top was removed and not refilled yet
    /// (`NO_HOLE`: none). A finish is mostly followed by a start on the same instance, which then
    /// takes the top's place with one sift down instead of a removal and an insertion.
    hole: usize,
    /// Next event per instance: (time, sample id) key, and its slot.
    top: MinTree<u128>,
    /// The instances changed since the last flush, in `dirty_list[..n_dirty]` (one more entry:
    /// `mark` writes it without a branch).
    dirty_list: Vec<u32>,
    n_dirty: usize,
    /// The instance whose load (`occ`) changed and is not in `load` yet (`NO_HOLE`: none): a
    /// finish, then the start on the freed slot, change one instance's load twice and leave it
    /// as it was; `route` mostly answers without the tree's update.
    load_pending: usize,
    load: MinTree<u64>,
    pub kv: Option<Kv>,
    /// KV capacity: the heap position of the victim `kv_full` found last (on any instance; a hint,
    /// checked before use): a preemption removes it without scanning the heap.
    victim_pos: usize,
    /// Idle slots per instance (the lowest is routed to).
    idle: IdleSlots,
    /// Scratch stack for tie-breaking.
    stack: Vec<u32>,
    /// Shared prefill (`PrefillMode::Shared`); `None`: prefill per slot.
    pub shared: Option<Box<SharedPrefill>>,
    /// Context-dependent speed; `None`: the speed depends on the batch only.
    pub ctx: Option<Box<ContextSpeed>>,
}

impl Instances {
    /// `slots / per` instances, all idle.
    pub fn new(slots: usize, per: usize, speed_by_batch: Vec<f64>, kv_cap: f64) -> Self {
        debug_assert!(per > 0 && slots % per == 0 && speed_by_batch.len() == per);
        let k = slots / per;
        let st = vec![Inst { batch_rate: speed_by_batch[0], ..Inst::default() }; k];
        Instances {
            per,
            inst_of: (0..slots).map(|s| (s / per) as u32).collect(),
            prompt: 0.0,
            speed_by_batch,
            st,
            paused_until: 0.0,
            // one entry of padding: `sift_down` reads a right child past the last instance's end
            heap: vec![u128::MAX; slots + 1],
            hole: NO_HOLE,
            top: MinTree::new(k, |i| top_value(NONE, i)),
            dirty_list: vec![0; k + 1],
            n_dirty: 0,
            load_pending: NO_HOLE,
            load: MinTree::new(k, |i| load_value(if i < k { 0 } else { u32::MAX }, i)),
            kv: (kv_cap > 0.0).then(|| Kv {
                cap: kv_cap,
                slot: vec![KvSlot::default(); slots],
                inst: vec![KvInst::default(); k],
                next_seq: 0,
                queue: vec![VecDeque::new(); k],
                n_waiting: 0,
                wait_s: 0.0,
                wait_t: 0.0,
                scratch: Vec::new(),
                lru: vec![Fifo::default(); k],
                evictions: 0,
                resync_every: RESYNC_EVERY.max(per as u32),
                rounding: (RESYNC_EVERY.max(per as u32) as f64 + 2.0 * per as f64 + 64.0) * 8.0 * f64::EPSILON,
                err_floor: 1e-6 * kv_cap + 1e-6,
                approx: KvApprox { prefill: vec![Vec::new(); k] },
            }),
            victim_pos: 0,
            idle: IdleSlots::new(k, per),
            stack: Vec::new(),
            shared: None,
            ctx: None,
        }
    }

    /// The instance of `slot`.
    #[inline(always)]
    fn inst(&self, slot: usize) -> usize {
        self.inst_of[slot] as usize
    }

    /// Decode speed of one sequence on instance `i` now.
    #[inline(always)]
    pub fn rate(&self, i: usize) -> f64 {
        if self.ctx.is_none() && self.shared.is_none() {
            return self.st[i].batch_rate;
        }
        self.rate_slow(i)
    }
    #[inline(never)]
    fn rate_slow(&self, i: usize) -> f64 {
        let b = (self.st[i].n.max(1) - 1) as usize;
        if self.ctx.is_some() {
            return self.context_rate(i);
        }
        if let Some(sh) = self.shared.as_deref().filter(|sh| !sh.queue[i].is_empty()) {
            return sh.speed[b]; // prompts are prefilled in the same steps
        }
        self.speed_by_batch[b]
    }
    #[inline(always)]
    pub fn clock_at(&self, i: usize, t: f64) -> f64 {
        let s = &self.st[i];
        if s.clock_t == t && self.paused_until <= t {
            // brought up to date at `t` (mostly: a turn's end, then the admission checks on its
            // instance): the same value as below, `clock + 0 * rate` (the rate is finite), without
            // its chain of dependent floating-point operations
            return s.clock;
        }
        s.clock + (t - self.run_from(i)).max(0.0) * self.rate(i)
    }
    /// Context-dependent speed: instance `i`'s refresh interval in clock tokens (1/32 of its mean
    /// context, at least one token) and the sum of its decoding sequences' contexts half-way
    /// through it (the midpoint of the interval), from its state as of its last change.
    #[inline]
    fn context_window(&self, i: usize) -> (f64, f64) {
        let cx = self.ctx.as_deref().expect("context speed");
        let n = self.st[i].n as f64;
        let now = (cx.k0[i] + n * self.st[i].clock).max(0.0);
        let delta = if n > 0.0 { (now / n / 32.0).max(1.0) } else { 1.0 };
        (delta, now + n * delta / 2.0)
    }

    /// Context-dependent speed: the decode speed of one sequence on instance `i` with its state as
    /// of its last change (its step: `1 / speed(n)`, the slope times its decoding sequences'
    /// contexts at the midpoint of its refresh interval, and a prompt chunk while prompts wait with
    /// shared prefill).
    #[cold]
    fn context_rate(&self, i: usize) -> f64 {
        let cx = self.ctx.as_deref().expect("context speed");
        let b = self.st[i].n.max(1) as usize;
        let (_, contexts) = self.context_window(i);
        let mut step = 1.0 / self.speed_by_batch[b - 1] + cx.slope * contexts;
        if let Some(sh) = self.shared.as_deref().filter(|sh| !sh.queue[i].is_empty()) {
            step += (sh.budget - b as f64) / sh.rate;
        }
        1.0 / step
    }

    /// Shared prefill: the rate at which instance `i` prefills while prompts wait, tokens/s.
    #[inline]
    fn prefill_rate(&self, i: usize) -> f64 {
        let sh = self.shared.as_deref().expect("shared prefill");
        let n = self.st[i].n as usize;
        if self.ctx.is_none() || n == 0 {
            return sh.prefill_rate[n];
        }
        (sh.budget - n as f64) * self.context_rate(i)
    }

    /// Context-dependent speed: the key of instance `i`'s next refresh (its clock 1/32 of its mean
    /// context, at least one token, further) and the slot it is keyed on (the top of its heap).
    #[cold]
    fn refresh_key(&mut self, i: usize) -> Option<(u128, u32)> {
        if self.hole == i {
            self.fill_hole();
        }
        let n = self.st[i].n;
        if n == 0 || self.st[i].len == 0 {
            return None;
        }
        let (delta, _) = self.context_window(i);
        let (_, slot) = split(self.heap[i * self.per]);
        let run = self.run_from(i);
        // At least two units in the last place of the clock: where the clock is so large (an idle
        // instance's clock runs on, e.g. to 1e16 tokens over 1e7 s at 1e9 tokens/s) that one token
        // is below its resolution, the refresh still moves it on; refreshed with the clock where it
        // was, the speed would stay, and the finish ahead would stay ahead, forever.
        let c = self.st[i].clock;
        let delta = delta.max(2.0 * (next_up(c) - c));
        let mut t = run + delta / self.rate(i);
        if t <= run {
            // the interval is below the time's resolution at `run` (t + interval == t): the refresh
            // comes at the next representable time, so that the clock moves on (refreshed at the
            // same time, nothing would change, and it would be due again at once, forever)
            t = next_up(run);
        }
        Some((key(t, (self.heap[i * self.per] >> 32) as u32), slot))
    }

    /// When instance `i`'s clock (last brought up to date at `clock_t`) runs again: after a pause.
    #[inline(always)]
    fn run_from(&self, i: usize) -> f64 {
        self.st[i].clock_t.max(self.paused_until)
    }

    /// Every instance stops until `until` (their clocks are brought up to `t` first); their next
    /// events move.
    pub fn pause_all(&mut self, t: f64, until: f64) {
        for i in 0..self.st.len() {
            self.advance(i, t);
            self.mark(i);
        }
        self.paused_until = self.paused_until.max(until);
    }
    #[inline(always)]
    pub fn advance(&mut self, i: usize, t: f64) {
        if self.ctx.is_none() && self.shared.is_none() {
            // `clock_at` with the speed of the batch, through one look-up of the record (its
            // other path calls `rate_slow`, after which the `Vec` is read again)
            let paused = self.paused_until;
            let s = &mut self.st[i];
            if !(s.clock_t == t && paused <= t) {
                s.clock += (t - s.clock_t.max(paused)).max(0.0) * s.batch_rate;
            }
            s.clock_t = t;
            return;
        }
        if self.shared.as_deref().is_some_and(|sh| !sh.queue[i].is_empty()) {
            let dt = (t - self.st[i].clock_t.max(self.paused_until)).max(0.0);
            let served = dt * self.prefill_rate(i);
            self.shared.as_deref_mut().expect("shared prefill").left[i] -= served;
        }
        let clock = self.clock_at(i, t);
        // one look-up for both stores (a store through one index reloads the `Vec` for the next)
        let s = &mut self.st[i];
        s.clock = clock;
        s.clock_t = t;
    }

    /// Instance `i` now runs `n` requests (its clock is up to date).
    #[inline(always)]
    pub fn set_n(&mut self, i: usize, n: u32) {
        self.set_n_unmarked(i, n);
        self.mark(i);
    }

    /// `set_n` beside a heap change of instance `i` (`push_on`, `remove_on`), which marks it.
    #[inline(always)]
    fn set_n_unmarked(&mut self, i: usize, n: u32) {
        let rate = self.speed_by_batch[(n.max(1) - 1) as usize];
        let s = &mut self.st[i];
        s.n = n;
        s.batch_rate = rate;
    }

    /// Instance `i` now has `occ` occupied slots.
    #[inline(always)]
    pub fn set_occ(&mut self, i: usize, occ: u32) {
        self.st[i].occ = occ;
        let p = self.load_pending;
        if p != i && p != NO_HOLE {
            // mostly back to the value the tree holds (a finish, then a start on the freed slot)
            let v = self.load_of(p);
            if self.load.leaf(p) != v {
                self.load.set(p, v);
            }
        }
        self.load_pending = i;
    }

    /// Puts the pending load into the routing tree: its new minimum.
    #[inline(never)]
    fn apply_load(&mut self) -> u64 {
        let p = self.load_pending;
        self.load.set(p, self.load_of(p));
        self.load_pending = NO_HOLE;
        self.load.min()
    }

    /// Instance `i`'s value in the routing tree, from its load.
    #[inline(always)]
    fn load_of(&self, i: usize) -> u64 {
        let occ = self.st[i].occ;
        load_value(if (occ as usize) < self.per { occ } else { u32::MAX }, i)
    }

    #[inline(always)]
    pub fn mark(&mut self, i: usize) {
        // branch-free: whether `i` is marked already is random
        let was = self.st[i].dirty;
        self.st[i].dirty = true;
        self.dirty_list[self.n_dirty] = i as u32;
        self.n_dirty += !was as usize;
    }

    /// The request with sample `id` on `slot` finishes when its instance's clock reaches `target`.
    /// With KV capacity it holds `kv_base` tokens of KV now and one more per clock token from
    /// `decode_start` on.
    #[inline(always)]
    pub fn push(&mut self, slot: u32, target: f64, id: u32, kv_base: f64, decode_start: f64) {
        self.push_on(self.inst(slot as usize), slot, target, id, kv_base, decode_start);
    }

    /// `push` of `slot` on its instance `i`.
    #[inline(always)]
    fn push_on(&mut self, i: usize, slot: u32, target: f64, id: u32, kv_base: f64, decode_start: f64) {
        // the instance's record looked up once (a store through one index reloads the `Vec` for
        // the next): its clock, its heap grown by one, marked as `mark` does
        let s = &mut self.st[i];
        let (clock, p) = (s.clock, s.len as usize);
        s.len += 1;
        let was = s.dirty;
        s.dirty = true;
        self.dirty_list[self.n_dirty] = i as u32;
        self.n_dirty += !was as usize;
        if let Some(kv) = &mut self.kv {
            let ks = &mut kv.slot[slot as usize];
            (ks.base, ks.ds, ks.seq) = (kv_base, decode_start, kv.next_seq);
            kv.next_seq += 1;
            let ki = &mut kv.inst[i];
            ki.a_held += kv_base;
            if decode_start > clock {
                kv.approx.prefill[i].push(slot);
                ks.in_prefill = true;
            } else {
                ki.a_n_dec += 1;
                ki.a_sum_ds += decode_start;
            }
            ki.a_updates += 1;
        }
        if let Some(cx) = self.ctx.as_deref_mut() {
            let term = kv_base - decode_start;
            cx.term[slot as usize] = term;
            cx.k0[i] += term;
        }
        let base = i * self.per;
        if self.hole == i {
            // the new request takes the place of the removed top
            self.hole = NO_HOLE;
            self.heap[base] = entry(target, id, slot);
            self.sift_down_in(base, p + 1, 0);
            return;
        }
        self.heap[base + p] = entry(target, id, slot);
        self.sift_up(i, p);
    }

    /// Completes the removal of the top of the heap that has a hole there: its last entry moves up.
    #[inline]
    fn fill_hole(&mut self) {
        let i = self.hole;
        self.hole = NO_HOLE;
        let (base, len) = (i * self.per, self.st[i].len as usize);
        if len > 0 {
            let moved = self.heap[base + len];
            self.heap[base] = moved;
            self.sift_down(i, 0);
        }
    }

    /// Takes the request on `slot` out of its instance's heap.
    #[cfg(test)]
    pub fn remove(&mut self, slot: u32) {
        self.remove_on::<false>(self.inst(slot as usize), slot);
    }

    /// `remove` of `slot` from its instance `i`.
    #[inline(always)]
    /// `STOP`: its request stops running, so that the instance runs one request fewer
    /// (`set_n_unmarked`, done here with the same look-up of the instance's record).
    fn remove_on<const STOP: bool>(&mut self, i: usize, slot: u32) {
        if self.hole != NO_HOLE {
            self.fill_hole();
        }
        let base = i * self.per;
        let p = self.position(i, slot);
        // the instance's record looked up once (a store through one index reloads the `Vec`
        // for the next), and marked as `mark` does
        let s = &mut self.st[i];
        if STOP {
            s.n -= 1;
            s.batch_rate = self.speed_by_batch[(s.n.max(1) - 1) as usize];
        }
        let last = s.len as usize - 1;
        s.len -= 1;
        let len = s.len;
        let was = s.dirty;
        s.dirty = true;
        self.dirty_list[self.n_dirty] = i as u32;
        self.n_dirty += !was as usize;
        if let Some(cx) = self.ctx.as_deref_mut() {
            cx.k0[i] = if len == 0 { 0.0 } else { cx.k0[i] - cx.term[slot as usize] };
        }
        if let Some(kv) = &mut self.kv {
            let (ks, ki) = (&mut kv.slot[slot as usize], &mut kv.inst[i]);
            ki.a_held -= ks.base;
            if ks.in_prefill {
                ks.in_prefill = false;
                let q = &mut kv.approx.prefill[i];
                q.swap_remove(q.iter().position(|&s| s == slot).expect("a request in prefill"));
            } else {
                ki.a_n_dec -= 1;
                ki.a_sum_ds -= ks.ds;
            }
            ki.a_updates += 1;
            if len == 0 || ki.a_updates >= kv.resync_every {
                self.resync(i, p);
            }
        }
        if p == last {
            return;
        }
        if p == 0 && self.kv.is_none() {
            // the next push on this instance fills the top (the KV sums, taken in heap order,
            // need the heap's layout as it was)
            self.hole = i;
            return;
        }
        let moved = self.heap[base + last];
        self.heap[base + p] = moved;
        if p > 0 && moved < self.heap[base + (p - 1) / 2] {
            self.sift_up(i, p);
        } else {
            self.sift_down_in(base, len as usize, p);
        }
    }

    /// The position of `slot`'s entry in instance `i`'s heap: mostly the top (a finish), else
    /// found by a scan (preemptions, requests taken off, ties).
    #[inline(always)]
    fn position(&self, i: usize, slot: u32) -> usize {
        let base = i * self.per;
        if entry_slot(self.heap[base]) == slot {
            return 0;
        }
        self.position_scan(i, slot)
    }

    /// `position` past the top: the victim of the last `kv_full` (a preemption: O(1)), else a scan.
    #[inline(never)]
    fn position_scan(&self, i: usize, slot: u32) -> usize {
        let base = i * self.per;
        let p = self.victim_pos;
        if p < self.st[i].len as usize && entry_slot(self.heap[base + p]) == slot {
            return p;
        }
        self.heap[base + 1..base + self.st[i].len as usize]
            .iter()
            .position(|&e| entry_slot(e) == slot)
            .expect("a running request")
            + 1
    }

    #[inline(always)]
    fn sift_up(&mut self, i: usize, mut p: usize) {
        let base = i * self.per;
        let e = self.heap[base + p];
        while p > 0 {
            let parent = (p - 1) / 2;
            let q = self.heap[base + parent];
            if q <= e {
                break;
            }
            self.heap[base + p] = q;
            p = parent;
        }
        self.heap[base + p] = e;
    }

    #[inline(always)]
    fn sift_down(&mut self, i: usize, p: usize) {
        self.sift_down_in(i * self.per, self.st[i].len as usize, p);
    }

    /// `sift_down` of the heap of `len` entries at `base`.
    #[inline(always)]
    fn sift_down_in(&mut self, base: usize, len: usize, mut p: usize) {
        // the instance's entries and the one after them (the next instance's first or the
        // padding): the children read below are in it without a check
        let h = &mut self.heap[base..base + len + 1];
        let e = h[p];
        loop {
            let mut c = 2 * p + 1;
            if c >= len {
                break;
            }
            // branch-free (which child is smaller is random); an entry past `len` is read (it is
            // in the heap's storage or its padding) but never chosen
            let (l, r) = (h[c], h[c + 1]);
            let right = (c + 1 < len) & (r < l);
            c += right as usize;
            let q = if right { r } else { l };
            if e <= q {
                break;
            }
            h[p] = q;
            p = c;
        }
        h[p] = e;
    }

    /// Recomputes the top-level keys of the instances changed since the last call.
    #[inline(never)]
    fn flush(&mut self) {
        while self.n_dirty > 0 {
            self.n_dirty -= 1;
            let i = self.dirty_list[self.n_dirty] as usize;
            // (nothing below marks an instance: its record's flags are written once, at the end)
            let (mut k, mut slot) = self.next_of(i);
            let mut preempt = false;
            if self.kv.is_some() && !self.kv_below_cap_until_next_finish(i) {
                if let Some((t_full, victim, id)) = self.kv_full(i) {
                    // a finish at the same time goes first (it frees KV)
                    if k == NONE || t_full < key_value(k) {
                        (k, slot) = (key(t_full, id), victim);
                        preempt = true;
                    }
                }
            }
            if self.shared.is_some() {
                // the end of the front request's prefill, when it comes first
                let sh = self.shared.as_deref().expect("shared prefill");
                let next = sh.queue[i].front().map(|&h| (h, sh.left[i].max(0.0), sh.id[h as usize]));
                let due = next.and_then(|(h, left, id)| {
                    let run = self.st[i].clock_t.max(self.paused_until);
                    let kp = key(run + left / self.prefill_rate(i), id);
                    (kp < k).then_some((kp, h))
                });
                if let Some((kp, h)) = due {
                    (k, slot) = (kp, h);
                    preempt = true; // the pool hands it back (`Placement::internal`)
                }
                self.shared.as_deref_mut().expect("shared prefill").due[i] = due.is_some();
            }
            if self.ctx.is_some() {
                if let Some((kr, s)) = self.refresh_key(i) {
                    let cx = self.ctx.as_deref_mut().expect("context speed");
                    cx.due[i] = kr < k;
                    if kr < k {
                        (k, slot) = (kr, s);
                        preempt = true; // the pool hands it back (`Placement::internal`)
                        if let Some(sh) = self.shared.as_deref_mut() {
                            sh.due[i] = false;
                        }
                    }
                } else {
                    self.ctx.as_deref_mut().expect("context speed").due[i] = false;
                }
            }
            self.top.set(i, top_value(k, i));
            let s = &mut self.st[i];
            (s.dirty, s.preempt, s.top_slot) = (false, preempt, slot);
        }
    }

    /// KV capacity: whether instance `i`'s KV certainly stays below capacity until its next finish
    /// (so that `kv_full` would find no preemption before it): the approximate KV at the clock
    /// value of the earliest finish, plus its error bound, is below capacity. Its clock time is
    /// the finish's, and both times grow with the clock value, so the finish goes first.
    #[inline]
    fn kv_below_cap_until_next_finish(&mut self, i: usize) -> bool {
        if self.st[i].len == 0 {
            return false;
        }
        let x0 = key_value(split(self.heap[i * self.per]).0);
        let (used, err) = self.kv_approx(i, x0);
        let cap = self.kv.as_ref().expect("KV capacity").cap;
        let below = used + err < cap;
        #[cfg(debug_assertions)]
        if below {
            let t0 = self.run_from(i) + (x0 - self.st[i].clock).max(0.0) / self.rate(i);
            if let Some((t_full, _, _)) = self.kv_full(i) {
                debug_assert!(t_full >= t0, "KV bound: a preemption at {t_full} before the finish at {t0}");
            }
        }
        below
    }

    /// Instance `i`'s next finish: (time, sample id) key and slot. The time of a request is the
    /// time of the instance's last change plus (target - clock) / rate; requests whose times are
    /// equal go in sample-id order (as the former per-slot keys did), even when their targets
    /// differ by less than the rounding of the time.
    fn next_of(&mut self, i: usize) -> (u128, u32) {
        if self.hole == i {
            self.fill_hole();
        }
        let len = self.st[i].len as usize;
        if len == 0 {
            return (NONE, 0);
        }
        let base = i * self.per;
        let (t, c, rate) = (self.run_from(i), self.st[i].clock, self.rate(i));
        let time = |k: u128| t + (key_value(k) - c).max(0.0) / rate;
        // the instance's entries: the reads below are in it without a check
        let h = &self.heap[base..base + len];
        let (k0, mut slot) = split(h[0]);
        let t0 = time(k0);
        let mut id = k0 as u32;
        // A target more than `close` clock tokens beyond the top's finishes later for certain
        // (each computed time is within 3.01 ulps of its exact value and the exact times differ by
        // the tokens over the rate), so its time need not be computed (a division).
        let (x0, close) = (key_value(k0).max(c), 1e-14 * rate * t0.max(1.0));
        let tied = |p: usize| {
            p < len && {
                let k = split(h[p]).0;
                let later = key_value(k) - x0 > close;
                debug_assert!(!later || time(k) > t0, "a target {close} tokens later finishes at the same time");
                !later && time(k) == t0
            }
        };
        if !tied(1) && !tied(2) {
            return (key(t0, id), slot); // the common case: no other request finishes at t0
        }
        // Every request whose time equals t0 is in the heap's top subtree where times equal t0
        // (times grow with targets, targets down the heap).
        self.stack.clear();
        self.stack.extend([1u32, 2]);
        while let Some(p) = self.stack.pop() {
            let p = p as usize;
            if p >= len {
                continue;
            }
            let (k, s) = split(h[p]);
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

    /// The earliest event of any instance: (time, sample id, slot, whether it is a preemption
    /// rather than a finish).
    #[inline(always)]
    pub fn next_event(&mut self) -> Option<(f64, u32, u32, bool)> {
        if self.n_dirty > 0 {
            // (mostly after a slot event: a tool call's return changes no instance while requests
            // wait for a slot)
            self.flush();
        }
        let v = self.top.min();
        let (k, i) = (v >> LEAF_BITS, (v as usize) & ((1 << LEAF_BITS) - 1));
        (k != NONE >> LEAF_BITS).then(|| (key_value(k), k as u32, self.st[i].top_slot, self.st[i].preempt))
    }

    /// KV held by instance `i`'s running requests at clock value `c`.
    pub fn kv_used(&self, i: usize, c: f64) -> f64 {
        let Some(kv) = &self.kv else { return 0.0 };
        let base = i * self.per;
        self.heap[base..base + self.st[i].len as usize]
            .iter()
            .map(|&e| (e, entry_slot(e)))
            .map(|(_, s)| kv.slot[s as usize].base + (c - kv.slot[s as usize].ds).max(0.0))
            .sum::<f64>()
            + kv.idle(i)
    }

    /// Recomputes instance `i`'s approximate sums from its running requests, but the one at heap
    /// position `removed` (being taken out).
    #[cold]
    fn resync(&mut self, i: usize, removed: usize) {
        let base = i * self.per;
        let c = self.st[i].clock;
        let kv = self.kv.as_mut().expect("KV capacity");
        let a = &mut kv.approx;
        let (mut held, mut n, mut sum) = (0.0, 0, 0.0);
        for &s in &a.prefill[i] {
            kv.slot[s as usize].in_prefill = false;
        }
        a.prefill[i].clear();
        for (p, (_, s)) in self.heap[base..base + self.st[i].len as usize + 1].iter().map(|&e| split(e)).enumerate() {
            let su = s as usize;
            if p == removed {
                continue;
            }
            held += kv.slot[su].base;
            if kv.slot[su].ds > c {
                a.prefill[i].push(s);
                kv.slot[su].in_prefill = true;
            } else {
                n += 1;
                sum += kv.slot[su].ds;
            }
        }
        (kv.inst[i].a_held, kv.inst[i].a_n_dec, kv.inst[i].a_sum_ds, kv.inst[i].a_updates) = (held, n, sum, 0);
    }

    /// Instance `i`'s KV at clock value `x` (not before its clock) from the approximate sums, and
    /// a bound on its difference from `kv_used` (the rounding of both, with a wide margin).
    #[inline(always)]
    fn kv_approx(&self, i: usize, x: f64) -> (f64, f64) {
        let (used, magnitude) = self.kv_approx_running(i, x);
        self.kv_approx_with_idle(i, used, magnitude)
    }

    /// `kv_approx` without the KV of requests that do not decode: the approximate KV of instance
    /// `i`'s running requests at clock value `x`, and the magnitude of its terms.
    #[inline(always)]
    fn kv_approx_running(&self, i: usize, x: f64) -> (f64, f64) {
        let kv = self.kv.as_ref().expect("KV capacity");
        let a = &kv.approx;
        let n = kv.inst[i].a_n_dec as f64;
        let mut used = kv.inst[i].a_held + (n * x - kv.inst[i].a_sum_ds);
        let mut magnitude = kv.inst[i].a_held.abs() + kv.inst[i].a_sum_ds.abs() + n * x.abs();
        for &s in &a.prefill[i] {
            let ds = kv.slot[s as usize].ds;
            if x > ds {
                used += x - ds;
            }
            magnitude += x.abs() + ds.abs();
        }
        (used, magnitude)
    }

    /// `kv_approx` from `kv_approx_running`'s terms and the KV that does not decode now.
    #[inline(always)]
    fn kv_approx_with_idle(&self, i: usize, used: f64, magnitude: f64) -> (f64, f64) {
        let kv = self.kv.as_ref().expect("KV capacity");
        let idle = kv.idle(i);
        (used + idle, kv.err_floor + kv.rounding * (magnitude + kv.cap + idle))
    }

    /// When instance `i`'s KV reaches capacity if nothing else changes: (time, the slot and sample
    /// id of the request to preempt then: the most recently admitted one).
    fn kv_full(&mut self, i: usize) -> Option<(f64, u32, u32)> {
        let len = self.st[i].len as usize;
        if len == 0 {
            return None;
        }
        let base = i * self.per;
        let (t, c, rate) = (self.run_from(i), self.st[i].clock, self.rate(i));
        let kv = self.kv.as_mut().expect("KV capacity");
        let (mut used, mut m) = (kv.idle(i), 0u32);
        let mut victim = (0u64, 0u32, 0u32);
        let mut victim_pos = 0;
        kv.scratch.clear();
        for (p, (k, s)) in self.heap[base..base + len].iter().map(|&e| split(e)).enumerate() {
            let su = s as usize;
            used += kv.slot[su].base;
            if kv.slot[su].ds <= c {
                used += c - kv.slot[su].ds;
                m += 1;
            } else {
                kv.scratch.push(kv.slot[su].ds);
            }
            if kv.slot[su].seq >= victim.0 {
                victim = (kv.slot[su].seq, s, k as u32);
                victim_pos = p;
            }
        }
        self.victim_pos = victim_pos;
        // walk the linear pieces: `m` requests decoding, one more at each prefill's end
        // in order: sorted when few, else a min-heap popped as far as the walk goes (O(requests in
        // prefill), not a sort of all of them; the same values in the same order)
        let lazy = kv.scratch.len() > LAZY_PREFILL_ENDS;
        if lazy {
            heapify_min(&mut kv.scratch);
        } else {
            kv.scratch.sort_unstable_by(f64::total_cmp);
        }
        let (mut cur, mut j) = (c, 0);
        let full = loop {
            if used >= kv.cap {
                break cur;
            }
            let next = if lazy { kv.scratch.first() } else { kv.scratch.get(j) };
            let next = next.copied().unwrap_or(f64::INFINITY);
            if m > 0 {
                let hit = cur + (kv.cap - used) / m as f64;
                if hit <= next {
                    break hit;
                }
            }
            if next == f64::INFINITY {
                return None;
            }
            used += m as f64 * (next - cur);
            cur = next;
            m += 1;
            if lazy {
                pop_min(&mut kv.scratch);
            } else {
                j += 1;
            }
        };
        Some((t + (full - c).max(0.0) / rate, victim.1, victim.2))
    }

    /// The lowest idle slot of the least loaded instance with an idle slot (ties: the lowest
    /// instance).
    #[inline(always)]
    pub fn route(&mut self) -> Option<u32> {
        let mut v = self.load.min();
        let p = self.load_pending;
        if p != NO_HOLE {
            let pv = self.load_of(p);
            if v as u32 as usize != p {
                // the minimum of the other instances (values are distinct), or the pending one
                v = v.min(pv);
            } else if pv <= v {
                // the pending instance's old value was the minimum, and its new one is not larger
                v = pv;
            } else {
                // the minimum of the others is needed: the tree's
                v = self.apply_load();
            }
        }
        if (v >> 32) as u32 == u32::MAX {
            return None;
        }
        self.idle.lowest(v as u32 as usize)
    }

    /// `slot` (just filled) leaves the idle slots.
    #[inline]
    pub fn take_idle(&mut self, slot: u32) {
        let i = self.inst(slot as usize);
        debug_assert_eq!(self.idle.lowest(i), Some(slot));
        self.idle.remove(i, slot);
    }

    #[inline]
    pub fn push_idle(&mut self, slot: u32) {
        let i = self.inst(slot as usize);
        self.idle.insert(i, slot);
    }
}

impl Instances {
    /// KV capacity: whether a request that has decoded `done` tokens, its KV (prompt + tokens done)
    /// plus one token, fits on instance `i` at clock value `c`, from `kv_approx_running(i, c)`
    /// (evictions change only the KV that does not decode, so a request's checks before and after
    /// each eviction share them).
    /// Also returns a lower bound of the exact KV of the instance (`kv_used(i, c)`): the
    /// approximate KV less its error bound.
    #[inline(always)]
    fn kv_fits_at(&self, i: usize, done: f64, c: f64, running: f64, magnitude: f64) -> (bool, f64) {
        let kv = self.kv.as_ref().expect("KV capacity");
        // certain either way when the approximate KV is far from the capacity
        let (used, err) = self.kv_approx_with_idle(i, running, magnitude);
        let need = self.prompt + done + 1.0;
        let exact = || self.kv_used(i, c) + self.prompt + done + 1.0 <= kv.cap;
        let fits = if used + err + need <= kv.cap {
            debug_assert!(exact(), "KV bound: fits");
            true
        } else if used - err + need > kv.cap {
            debug_assert!(!exact(), "KV bound: does not fit");
            false
        } else {
            exact()
        };
        (fits, used - err)
    }

    /// KV capacity: whether a request that has decoded `done` tokens fits on instance `i` at `t`
    /// (`kv_fits_at`) once cached KV of requests in tool calls is evicted, least recently cached
    /// first, as long as it does not; and a lower bound of the instance's exact KV then (after
    /// the evictions, without the request).
    /// `MARKED`: instance `i` is marked changed already (an eviction need not mark it again).
    #[inline]
    fn fits_evicting<const MARKED: bool>(&mut self, i: usize, done: f64, t: f64) -> (bool, f64) {
        let c = self.clock_at(i, t);
        let (running, magnitude) = self.kv_approx_running(i, c);
        loop {
            let (fits, lower) = self.kv_fits_at(i, done, c, running, magnitude);
            if fits {
                return (true, lower);
            }
            // only with cached KV of requests in tool calls (mostly evicted already: checked here,
            // without the call)
            if self.kv.as_ref().is_none_or(|kv| kv.lru[i].is_empty()) || !self.evict_lru::<MARKED>(i) {
                return (false, lower);
            }
        }
    }

    /// Evicts instance `i`'s least recently cached KV of a request in a tool call, if any.
    #[inline(always)]
    fn evict_lru<const MARKED: bool>(&mut self, i: usize) -> bool {
        let Some(kv) = self.kv.as_mut() else { return false };
        let Some((_, tokens)) = kv.lru[i].pop_front() else { return false };
        kv.inst[i].cached = if kv.lru[i].is_empty() { 0.0 } else { kv.inst[i].cached - tokens };
        kv.evictions += 1;
        if !MARKED {
            self.mark(i);
        }
        debug_assert!(self.st[i].dirty);
        true
    }

    /// The request on `slot` stops decoding (or prefilling) at `t`.
    #[inline(always)]
    fn stop_running(&mut self, slot: usize, t: f64) {
        self.stop_running_on(slot, self.inst(slot), t);
    }

    /// `stop_running` of `slot` on its instance `i`.
    #[inline(always)]
    fn stop_running_on(&mut self, slot: usize, i: usize, t: f64) {
        self.advance(i, t);
        if self.shared.as_deref().is_some_and(|sh| sh.ds[slot] == f64::INFINITY) {
            self.stop_prefilling(slot, i);
            return;
        }
        self.remove_on::<true>(i, slot as u32);
    }

    /// `stop_running` of a request in its instance `i`'s shared prefill queue.
    #[cold]
    fn stop_prefilling(&mut self, slot: usize, i: usize) {
        if let Some(sh) = self.shared.as_deref_mut() {
            // in prefill: it leaves the queue (the front's tokens prefilled so far are lost)
            let q = &mut sh.queue[i];
            let p = q.iter().position(|&s| s as usize == slot).expect("a request in prefill");
            q.remove(p);
            if p == 0 {
                if let Some(&h) = q.front() {
                    sh.left[i] = sh.tokens[h as usize];
                }
            }
            sh.ds[slot] = 0.0;
            let (empty, base) = (q.is_empty(), sh.base[slot]);
            if let Some(kv) = self.kv.as_mut() {
                kv.inst[i].prefilling = if empty { 0.0 } else { kv.inst[i].prefilling - base };
            }
            self.mark(i);
        }
    }

    /// The request on `slot` leaves its instance at `t` (running, or waiting for KV).
    #[inline(always)]
    fn leave(&mut self, slot: usize, t: f64) {
        let i = self.inst(slot);
        self.set_occ(i, self.st[i].occ - 1);
        match self.kv.as_mut() {
            Some(kv) if kv.slot[slot].waiting => {
                kv.slot[slot].waiting = false;
                let q = &mut kv.queue[i];
                q.remove(q.iter().position(|&(s, _)| s as usize == slot).expect("a waiting slot"));
                kv.wait_change(t, -1);
                self.mark(i);
            }
            _ => self.stop_running_on(slot, i, t),
        }
    }
}

impl Instances {
    /// `Placement::next_admission` when some request waits for KV.
    #[inline(never)]
    fn next_admission_waiting(&mut self, cursor: &mut usize, slots: &[Option<Req>], t: f64) -> Option<(u32, f64)> {
        loop {
            if *cursor >= self.n_dirty {
                return None;
            }
            let i = self.dirty_list[*cursor] as usize;
            let kv = self.kv.as_ref().expect("KV capacity");
            if let Some(&(s, done)) = kv.queue[i].front() {
                debug_assert_eq!(slots[s as usize].map(|r| r.done), Some(done), "a waiting request's tokens");
                // `i` is from the list of changed instances: marked already
                if let (true, lower) = self.fits_evicting::<true>(i, done, t) {
                    let prompt = self.prompt;
                    let kv = self.kv.as_mut().expect("KV capacity");
                    kv.queue[i].pop_front();
                    kv.slot[s as usize].waiting = false;
                    kv.wait_change(t, -1);
                    // The check of the next waiting request (after this one starts: the caller's
                    // next call) is skipped where its answer is certain to be no: this one's KV
                    // (prompt + done; it holds at least that once started) joins the lower bound,
                    // with the error floor again as a margin for the rounding of the exact sum,
                    // and with no cached KV left to evict that check has no side effect. Mostly
                    // so after a turn's end: the oldest request waiting fits once the KV the
                    // turn left is evicted, the next does not.
                    let next_fails = kv.lru[i].is_empty()
                        && kv.queue[i]
                            .front()
                            .is_none_or(|&(_, d)| lower + (prompt + done) + (prompt + d + 1.0) > kv.cap + kv.err_floor);
                    #[cfg(debug_assertions)]
                    let kv = {
                        let (next, cap) = (kv.queue[i].front().copied().filter(|_| next_fails), kv.cap);
                        if let Some((_, d)) = next {
                            // the exact KV now, plus at least this one's once it starts
                            let exact = self.kv_used(i, self.clock_at(i, t));
                            debug_assert!(
                                exact + (prompt + done) + (prompt + d + 1.0) > cap,
                                "KV bound: the next does not fit"
                            );
                        }
                        self.kv.as_mut().expect("KV capacity")
                    };
                    *cursor += next_fails as usize;
                    return Some((s, kv.slot[s as usize].wait_prefill_s));
                }
            }
            *cursor += 1;
        }
    }
}

impl Placement for Instances {
    const REFILL_IN_PLACE: bool = false;

    fn new(sc: &Scenario) -> Self {
        let per = sc.decode.slots_per_instance as usize;
        let mut b = Instances::new(sc.rollout_slots as usize, per, sc.speed_by_batch(), sc.decode.kv_cache_tokens);
        b.prompt = sc.prefill.prompt_tokens;
        if sc.decode.s_per_context_token > 0.0 {
            let (k, slots) = (sc.rollout_slots as usize / per, sc.rollout_slots as usize);
            b.ctx = Some(Box::new(ContextSpeed {
                slope: sc.decode.s_per_context_token,
                k0: vec![0.0; k],
                term: vec![0.0; slots],
                due: vec![false; k],
            }));
        }
        if sc.prefill.mode == crate::scenario::PrefillMode::Shared {
            let (k, p) = (sc.rollout_slots as usize / per, &sc.prefill);
            let budget = p.max_num_batched_tokens as f64;
            b.shared = Some(Box::new(SharedPrefill::new(k, per, &b.speed_by_batch, p.prefill_tokens_per_s, budget)));
        }
        b
    }

    #[inline]
    fn has_kv(&self) -> bool {
        self.kv.is_some()
    }

    #[inline(always)]
    fn peek(&mut self) -> Option<(Event, bool)> {
        let (time, seq, slot, preempt) = self.next_event()?;
        Some((Event { time, seq, slot, key: key(time, seq) }, preempt))
    }

    #[inline]
    fn progress(&self, slot: usize, r: &Req, t: f64) -> f64 {
        if self.kv.as_ref().is_some_and(|kv| kv.slot[slot].waiting) {
            return r.done;
        }
        let c = self.clock_at(self.inst(slot), t);
        // shared prefill: its decoding starts when the instance gets to it (INFINITY: not yet)
        let ds = self.shared.as_deref().map_or(r.decode_start, |sh| sh.ds[slot]);
        r.done + (c - ds).clamp(0.0, r.length - r.done)
    }

    #[inline(always)]
    fn route(&mut self) -> Option<u32> {
        Instances::route(self)
    }

    #[inline]
    fn take(&mut self, slot: u32) {
        self.take_idle(slot);
    }

    #[inline]
    fn park(&mut self, slot: u32) {
        self.push_idle(slot);
    }

    fn reset_routing(&mut self) {}

    /// Its instance has no other idle slot (it is full but for `slot`) and is the routing's only
    /// pending change, and every instance in the routing tree is full: `route` gives `slot` (its
    /// pending value is the minimum, without `apply_load`), and once `slot` is taken and its
    /// request arrives (the load back to full) `route` finds nothing, again without `apply_load`.
    #[inline(always)]
    fn sole_idle(&self, slot: u32) -> bool {
        let i = self.inst(slot as usize);
        let sole = self.load_pending == i
            && self.st[i].occ as usize + 1 == self.per
            && (self.load.min() >> 32) as u32 == u32::MAX;
        debug_assert!(!sole || self.idle.lowest(i).is_none(), "an instance full but for one slot has no idle slot");
        sole
    }

    #[inline(always)]
    fn arrive(&mut self, slot: u32, done: f64, t: f64) -> bool {
        let i = self.inst(slot as usize);
        self.set_occ(i, self.st[i].occ + 1);
        // with KV capacity: nobody waits ahead and it fits
        match &self.kv {
            None => true,
            Some(kv) => {
                let first = kv.queue[i].is_empty();
                first && self.fits_evicting::<false>(i, done, t).0
            }
        }
    }

    #[inline(always)]
    fn start(&mut self, slot: u32, r: &mut Req, prefill_s: f64, t: f64) {
        let i = self.inst(slot as usize);
        self.advance(i, t);
        if let Some(sh) = self.shared.as_deref_mut() {
            let s = slot as usize;
            if prefill_s > 0.0 {
                // its prompt tokens join the instance's prefill queue
                let tokens = prefill_s * sh.rate;
                (sh.tokens[s], sh.todo[s], sh.id[s], sh.ds[s]) = (tokens, r.length - r.done, r.id, f64::INFINITY);
                sh.base[s] = self.prompt + r.done;
                if sh.queue[i].is_empty() {
                    sh.left[i] = tokens;
                }
                sh.queue[i].push_back(slot);
                if let Some(kv) = self.kv.as_mut() {
                    kv.inst[i].prefilling += self.prompt + r.done;
                }
                r.decode_start = f64::INFINITY;
                self.mark(i);
                return;
            }
            sh.ds[s] = self.st[i].clock;
        }
        // `set_n_unmarked(i, n + 1)`, then `st[i].clock + prefill_s * rate(i)`, with the
        // instance's record looked up once (a store through one index reloads the `Vec`)
        let n = self.st[i].n + 1;
        let batch_rate = self.speed_by_batch[(n.max(1) - 1) as usize];
        let st = &mut self.st[i];
        (st.n, st.batch_rate) = (n, batch_rate);
        let clock = st.clock;
        let rate = if self.ctx.is_none() && self.shared.is_none() { batch_rate } else { self.rate_slow(i) };
        // prefill charged in clock tokens at the speed with this request on board
        r.decode_start = clock + prefill_s * rate;
        let kv_base = self.prompt + r.done;
        self.push_on(i, slot, r.decode_start + (r.length - r.done), r.id, kv_base, r.decode_start);
    }

    #[inline(always)]
    fn wait(&mut self, slot: u32, done: f64, prefill_s: f64, t: f64) {
        let i = self.inst(slot as usize);
        let kv = self.kv.as_mut().expect("KV capacity");
        kv.slot[slot as usize].waiting = true;
        kv.slot[slot as usize].wait_prefill_s = prefill_s;
        kv.queue[i].push_back((slot, done));
        kv.wait_change(t, 1);
        self.mark(i);
    }

    /// Waiting requests start in queue order per instance, on the instances changed since the
    /// last event, while the next one's KV (prompt + tokens done) plus one token fits.
    #[inline]
    fn next_admission(&mut self, cursor: &mut usize, slots: &[Option<Req>], t: f64) -> Option<(u32, f64)> {
        if self.kv.as_ref()?.n_waiting == 0 || *cursor >= self.n_dirty {
            return None; // every queue is empty, or no instance changed since the last check
        }
        self.next_admission_waiting(cursor, slots, t)
    }
    #[inline(always)]
    fn finished(&mut self, slot: u32, t: f64) {
        self.leave(slot as usize, t);
    }

    fn take_off(&mut self, slot: u32, t: f64) {
        self.leave(slot as usize, t);
    }

    /// Shared prefill: the front request of the instance of `slot` ends its prefill at `t` and
    /// starts decoding. Context-dependent speed: the instance's speed is refreshed at `t`.
    fn internal(&mut self, slot: u32, t: f64) -> bool {
        let i = self.inst(slot as usize);
        if let Some(cx) = self.ctx.as_deref_mut().filter(|cx| cx.due[i]) {
            cx.due[i] = false;
            self.advance(i, t);
            self.mark(i);
            return true;
        }
        if !self.shared.as_deref().is_some_and(|sh| sh.due[i]) {
            return false;
        }
        self.advance(i, t);
        let c = self.st[i].clock;
        let sh = self.shared.as_deref_mut().expect("shared prefill");
        sh.due[i] = false;
        let s = sh.queue[i].pop_front().expect("a request in prefill");
        debug_assert_eq!(s, slot);
        if let Some(&h) = sh.queue[i].front() {
            sh.left[i] = sh.tokens[h as usize];
        }
        sh.ds[s as usize] = c;
        let (todo, id, base) = (sh.todo[s as usize], sh.id[s as usize], sh.base[s as usize]);
        let empty = sh.queue[i].is_empty();
        if let Some(kv) = self.kv.as_mut() {
            kv.inst[i].prefilling = if empty { 0.0 } else { kv.inst[i].prefilling - base };
        }
        self.set_n(i, self.st[i].n + 1);
        self.push(s, c + todo, id, base, c);
        true
    }

    fn preempt(&mut self, slot: u32, done: f64, t: f64) {
        let (slot, i) = (slot as usize, self.inst(slot as usize));
        #[cfg(debug_assertions)]
        {
            // preempted exactly when the instance's KV is full, but for the rounding of the sums
            // and of the time (its requests' KV grows by len x rate tokens a second, and the time
            // of the moment it fills is rounded to about 1 ulp of t)
            let (used, cap) = (self.kv_used(i, self.clock_at(i, t)), self.kv.as_ref().expect("KV capacity").cap);
            let time = self.st[i].len as f64 * self.rate(i) * 2.0 * f64::EPSILON * t.abs();
            debug_assert!((used - cap).abs() <= 1e-6 * cap + time, "KV {used} at a preemption, capacity {cap}");
        }
        self.stop_running(slot, t);
        let kv = self.kv.as_mut().expect("KV capacity");
        kv.slot[slot].waiting = true;
        kv.slot[slot].wait_prefill_s = 0.0;
        kv.queue[i].push_front((slot as u32, done));
        kv.wait_change(t, 1);
    }

    /// Every instance's clock stands still: requests running, in prefill, waiting for KV or
    /// started during the pause all move on together.
    fn pause(&mut self, t: f64, until: f64) -> bool {
        self.pause_all(t, until);
        true
    }

    #[inline]
    fn start_delay(&self, _t: f64) -> Option<f64> {
        None
    }

    fn prefill_left(&self, _r: &Req, _t: f64) -> f64 {
        unreachable!("the instances' clocks absorb pauses")
    }

    fn close(&mut self, t: f64) -> Option<f64> {
        let kv = self.kv.as_mut()?;
        kv.wait_change(t, 0);
        Some(kv.wait_s)
    }

    fn prefill_ahead(&self, slot: u32, r: &Req, t: f64) -> f64 {
        let (s, i) = (slot as usize, self.inst(slot as usize));
        if let Some(kv) = self.kv.as_ref().filter(|kv| kv.slot[s].waiting) {
            return kv.slot[s].wait_prefill_s; // not admitted: its prefill has not started
        }
        if let Some(sh) = self.shared.as_deref().filter(|sh| sh.queue[i].contains(&slot)) {
            // in the instance's prefill queue: the front one has served part of its prompt
            let left = if sh.queue[i].front() == Some(&slot) {
                let dt = (t - self.run_from(i)).max(0.0);
                (sh.left[i] - dt * self.prefill_rate(i)).max(0.0)
            } else {
                sh.tokens[s]
            };
            return left / sh.rate;
        }
        // clock tokens of prefill left, at the instance's current speed
        let rate = self.rate(i);
        if rate > 0.0 {
            (r.decode_start - self.clock_at(i, t)).max(0.0) / rate
        } else {
            0.0
        }
    }

    // a held slot stays occupied for routing, and its KV counts against the capacity (it is
    // neither evictable nor preempted) until the call returns
    fn hold(&mut self, slot: u32, kv_tokens: f64, t: f64) {
        self.stop_running(slot as usize, t);
        let i = self.inst(slot as usize);
        if let Some(kv) = self.kv.as_mut() {
            kv.slot[slot as usize].held_tokens = kv_tokens;
            kv.inst[i].held += kv_tokens;
            kv.inst[i].n_held += 1;
        }
    }

    fn unhold(&mut self, slot: u32) {
        let i = self.inst(slot as usize);
        self.set_occ(i, self.st[i].occ - 1);
        if let Some(kv) = self.kv.as_mut() {
            kv.inst[i].n_held -= 1;
            kv.inst[i].held =
                if kv.inst[i].n_held == 0 { 0.0 } else { kv.inst[i].held - kv.slot[slot as usize].held_tokens };
            self.mark(i);
        }
    }

    #[inline(always)]
    fn instance_of(&self, slot: u32) -> u32 {
        self.inst_of[slot as usize]
    }

    fn route_on(&mut self, inst: u32) -> Option<u32> {
        let i = inst as usize;
        if self.st[i].occ as usize >= self.per {
            return None;
        }
        self.idle.lowest(i)
    }

    #[inline(always)]
    fn cache_kv(&mut self, slot: u32, id: u32, tokens: f64) {
        let i = self.inst(slot as usize);
        if let Some(kv) = self.kv.as_mut() {
            kv.inst[i].cached += tokens;
            kv.lru[i].push_back((id, tokens));
            self.mark(i);
        }
    }

    /// `finished` then `cache_kv`, with the instance looked up and marked once (leaving marks it).
    #[inline(always)]
    fn finished_caching(&mut self, slot: u32, t: f64, id: u32, tokens: f64) {
        let i = self.inst(slot as usize);
        self.leave(slot as usize, t);
        if let Some(kv) = self.kv.as_mut() {
            kv.inst[i].cached += tokens;
            kv.lru[i].push_back((id, tokens));
        }
    }

    #[inline(always)]
    fn uncache_kv(&mut self, slot: u32, id: u32) -> bool {
        let i = self.inst(slot as usize);
        let Some(kv) = self.kv.as_mut() else { return true };
        let Some(p) = kv.lru[i].position(|e| e.0 == id) else { return false };
        let (_, tokens) = kv.lru[i].remove(p);
        kv.inst[i].cached = if kv.lru[i].is_empty() { 0.0 } else { kv.inst[i].cached - tokens };
        self.mark(i);
        true
    }

    fn evict_cached(&mut self, slot: u32) -> bool {
        self.evict_lru::<false>(self.inst(slot as usize))
    }

    fn evictions(&self) -> u64 {
        self.kv.as_ref().map_or(0, |kv| kv.evictions)
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
            let mut t = MinTree::new(n, |i| load_value(u32::MAX, i));
            let mut keys = vec![u32::MAX; n];
            for _ in 0..2000 {
                let i = (rng.uniform() * n as f64) as usize;
                let k = if rng.uniform() < 0.2 { u32::MAX } else { (rng.uniform() * 8.0) as u32 };
                t.set(i, load_value(k, i));
                keys[i] = k;
                let best = keys.iter().enumerate().min_by_key(|(j, k)| (**k, *j)).unwrap();
                assert_eq!(t.min(), load_value(*best.1, best.0));
            }
        }
    }

    /// Routing with a pending load change against the least loaded instance found directly.
    #[test]
    fn routing_with_a_pending_load_agrees_with_brute_force() {
        let (k, per) = (5usize, 3usize);
        let mut rng = FastRng::new(11);
        let mut b = Instances::new(k * per, per, vec![1.0; per], 0.0);
        for _ in 0..5000 {
            let i = (rng.uniform() * k as f64) as usize;
            let occ = (rng.uniform() * (per + 1) as f64) as u32;
            b.set_occ(i, occ);
            if rng.uniform() < 0.5 {
                let want = (0..k).filter(|&j| (b.st[j].occ as usize) < per).min_by_key(|&j| (b.st[j].occ, j));
                assert_eq!(b.route(), want.map(|j| (j * per) as u32));
            }
        }
    }

    /// The idle-slot bitset against a set, for instance sizes below, at and above one word and one
    /// summary word.
    #[test]
    fn idle_slots_agree_with_a_set() {
        for per in [1usize, 5, 64, 65, 200, 4096, 4100, 9000] {
            let k = 3;
            let mut rng = FastRng::new(per as u64);
            let mut b = IdleSlots::new(k, per);
            let mut sets: Vec<std::collections::BTreeSet<u32>> =
                (0..k).map(|i| ((i * per) as u32..((i + 1) * per) as u32).collect()).collect();
            for _ in 0..3000 {
                let i = (rng.uniform() * k as f64) as usize;
                let slot = (i * per) as u32 + (rng.uniform() * per as f64) as u32;
                if sets[i].contains(&slot) {
                    b.remove(i, slot);
                    sets[i].remove(&slot);
                } else {
                    b.insert(i, slot);
                    sets[i].insert(slot);
                }
                for (j, set) in sets.iter().enumerate() {
                    assert_eq!(b.lowest(j), set.first().copied(), "per {per}, instance {j}");
                }
            }
        }
    }

    /// The moment an instance's KV fills, with requests still in prefill (decoding starts later),
    /// against the KV computed directly; the victim is the last admitted.
    #[test]
    fn lazy_prefill_ends_come_in_sorted_order() {
        let mut rng = FastRng::new(5);
        for _ in 0..200 {
            let n = (rng.uniform() * 300.0) as usize;
            // ties, signed zeros and infinities included
            let mut v: Vec<f64> = (0..n)
                .map(|_| match (rng.uniform() * 8.0) as u32 {
                    0 => 0.0,
                    1 => -0.0,
                    2 => f64::INFINITY,
                    _ => (rng.uniform() * 20.0).floor(),
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            heapify_min(&mut v);
            let mut popped = Vec::new();
            while let Some(&x) = v.first() {
                popped.push(x);
                pop_min(&mut v);
            }
            assert_eq!(
                popped.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                sorted.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn kv_fills_when_computed() {
        let mut rng = FastRng::new(3);
        for round in 0..600 {
            // instances of up to 6 slots, and of 65-200 (`kv_full` takes the prefill ends from a heap)
            let per =
                if round < 500 { 1 + (rng.uniform() * 6.0) as usize } else { 65 + (rng.uniform() * 136.0) as usize };
            let cap = if round < 500 { 1000.0 } else { 1000.0 * per as f64 / 4.0 };
            let mut b = Instances::new(per, per, vec![2.0; per], cap);
            b.set_n(0, per as u32);
            let mut last = 0;
            for s in 0..per {
                let (base, ds) = ((rng.uniform() * 200.0).floor(), (rng.uniform() * 50.0).floor());
                b.push(s as u32, 1e9, s as u32 + 7, base, ds);
                last = s as u32;
            }
            let full = b.kv_full(0);
            let kv = |c: f64| b.kv_used(0, c);
            match full {
                None => assert!(kv(1e7) < cap),
                Some((t, victim, id)) => {
                    let c = t * 2.0; // clock 0 at t = 0, 2 tokens/s
                    assert!(
                        (kv(c) - cap).abs() < 1e-9 * cap.max(1000.0) / 1000.0 || (c == 0.0 && kv(0.0) >= cap),
                        "{} at {c}",
                        kv(c)
                    );
                    assert!(c == 0.0 || kv(c * (1.0 - 1e-9)) < cap);
                    assert_eq!((victim, id), (last, last + 7));
                }
            }
        }
    }

    /// The heap per instance against a brute-force minimum over (target, id), with removals.
    #[test]
    fn instance_heaps_agree_with_brute_force() {
        let per = 7;
        let mut rng = FastRng::new(9);
        let mut b = Instances::new(3 * per, per, vec![1.0; per], 0.0);
        let mut on: Vec<Option<(f64, u32)>> = vec![None; 3 * per];
        for id in 0..5000u32 {
            let s = (rng.uniform() * on.len() as f64) as usize;
            if on[s].is_some() {
                b.remove(s as u32);
                on[s] = None;
            } else {
                let target = (rng.uniform() * 20.0).floor();
                b.push(s as u32, target, id, 0.0, 0.0);
                on[s] = Some((target, id));
            }
            for i in 0..3 {
                b.set_n(i, 1);
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
