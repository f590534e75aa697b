//! The event queue of the rollout slots: a tournament (loser) tree over the slots, keyed by
//! (finish time, insertion sequence).
//!
//! Every pending slot event is "slot s finishes its sample at time t", and the engine's hot
//! operation is: take the earliest one, and give that same slot its next finish time. A loser tree
//! does exactly that with one comparison per level and no child selection (about 8 comparisons for
//! 256 slots), where a binary heap's sift-down needs two per level. Idle slots hold `IDLE`.
//!
//! Times are non-negative finite `f64`, whose IEEE-754 bit patterns order like the numbers, so
//! (time, seq) packs into one `u128` and compares as an integer. Equal times are served in insertion
//! order (seq is the sample id, which grows with every start): runs are deterministic.

/// Key of an idle slot: later than any event.
const IDLE: u128 = u128::MAX;

#[inline]
fn key(time: f64, seq: u32) -> u128 {
    debug_assert!(time >= 0.0 && time.is_finite());
    ((time.to_bits() as u128) << 32) | seq as u128
}

/// The earliest pending event.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Event {
    pub time: f64,
    pub seq: u32,
    pub slot: u32,
}

/// Pending finish events of `n` slots (at most one per slot).
#[derive(Clone, Debug)]
pub struct SlotQueue {
    /// Key per leaf; leaves `n..size` are padding and stay `IDLE`.
    keys: Vec<u128>,
    /// `tree[0]` is the winner (earliest slot); `tree[1..size]` hold the loser of each match.
    tree: Vec<u32>,
    size: usize,
}

impl SlotQueue {
    /// `n` slots, all idle.
    pub fn new(n: usize) -> Self {
        let size = n.max(1).next_power_of_two();
        let mut q = SlotQueue {
            keys: vec![IDLE; size],
            tree: vec![0; size],
            size,
        };
        q.rebuild();
        q
    }

    /// Marks every slot idle.
    pub fn clear(&mut self) {
        self.keys.fill(IDLE);
        self.rebuild();
    }

    fn rebuild(&mut self) {
        // Winners of each subtree, bottom-up; losers stored at internal nodes.
        let size = self.size;
        let mut win = vec![0u32; 2 * size];
        for i in 0..size {
            win[size + i] = i as u32;
        }
        for node in (1..size).rev() {
            let (a, b) = (win[2 * node], win[2 * node + 1]);
            let (w, l) = if self.keys[b as usize] < self.keys[a as usize] {
                (b, a)
            } else {
                (a, b)
            };
            win[node] = w;
            self.tree[node] = l;
        }
        self.tree[0] = if size > 1 { win[1] } else { 0 };
    }

    /// The earliest pending event, or `None` when every slot is idle.
    #[inline]
    pub fn peek(&self) -> Option<Event> {
        let slot = self.tree[0];
        let k = self.keys[slot as usize];
        (k != IDLE).then(|| Event {
            time: f64::from_bits((k >> 32) as u64),
            seq: k as u32,
            slot,
        })
    }

    /// Replays the matches on the path of the winning leaf `slot` after its key changed (any new
    /// key is fine for the winner: its path holds every match it played).
    #[inline]
    fn replay(&mut self, slot: u32) {
        // Branch-free: the comparison outcomes are random, so conditional moves beat branches.
        let mut w = slot;
        let mut kw = self.keys[slot as usize];
        let mut node = (slot as usize + self.size) >> 1;
        while node > 0 {
            let l = self.tree[node];
            let kl = self.keys[l as usize];
            let swap = kl < kw;
            self.tree[node] = if swap { w } else { l };
            w = if swap { l } else { w };
            kw = if swap { kl } else { kw };
            node >>= 1;
        }
        self.tree[0] = w;
    }

    /// Gives the winning slot (the one `peek` returned) its next finish time.
    #[inline]
    pub fn replace_top(&mut self, time: f64, seq: u32) {
        let slot = self.tree[0];
        self.keys[slot as usize] = key(time, seq);
        self.replay(slot);
    }

    /// Makes the winning slot idle.
    #[inline]
    pub fn idle_top(&mut self) {
        let slot = self.tree[0];
        self.keys[slot as usize] = IDLE;
        self.replay(slot);
    }

    /// Starts events `(slot, time, seq)` on idle slots and rebuilds the tree (O(slots)); used when
    /// a batch or the run starts.
    pub fn start_all(&mut self, events: impl IntoIterator<Item = (u32, f64, u32)>) {
        for (slot, time, seq) in events {
            debug_assert_eq!(self.keys[slot as usize], IDLE);
            self.keys[slot as usize] = key(time, seq);
        }
        self.rebuild();
    }

    /// Pending events (slot, time, seq) in slot order.
    pub fn pending(&self) -> impl Iterator<Item = (u32, f64, u32)> + '_ {
        self.keys
            .iter()
            .enumerate()
            .filter(|(_, k)| **k != IDLE)
            .map(|(s, k)| (s as u32, f64::from_bits((*k >> 32) as u64), *k as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::{FastRng, Source};

    #[test]
    fn serves_time_then_sequence_order() {
        let mut q = SlotQueue::new(5);
        q.start_all([(0, 5.0, 0), (1, 1.0, 1), (2, 3.0, 2), (3, 1.0, 3), (4, 0.0, 4)]);
        let e = q.peek().unwrap();
        assert_eq!((e.time, e.seq, e.slot), (0.0, 4, 4));
        q.replace_top(3.0, 9); // slot 4 now at (3.0, 9)
        let mut out = vec![];
        while let Some(e) = q.peek() {
            out.push((e.time, e.seq, e.slot));
            q.idle_top();
        }
        assert_eq!(
            out,
            vec![(1.0, 1, 1), (1.0, 3, 3), (3.0, 2, 2), (3.0, 9, 4), (5.0, 0, 0)]
        );
        assert!(q.peek().is_none());
    }

    /// Against a brute-force minimum over the slots, for pool sizes that are and are not powers of 2.
    #[test]
    fn agrees_with_brute_force_minimum() {
        for n in [1usize, 2, 3, 7, 8, 100, 256] {
            let mut rng = FastRng::new(n as u64);
            let mut q = SlotQueue::new(n);
            let mut keys: Vec<Option<(f64, u32)>> = (0..n)
                .map(|s| Some(((rng.uniform() * 10.0).floor(), s as u32)))
                .collect();
            q.start_all(
                keys.iter()
                    .enumerate()
                    .map(|(s, k)| (s as u32, k.unwrap().0, k.unwrap().1)),
            );
            for seq in n as u32..20_000 {
                let best = keys
                    .iter()
                    .enumerate()
                    .filter_map(|(s, k)| k.map(|(t, q)| (t.to_bits(), q, s as u32)))
                    .min();
                let e = q.peek();
                assert_eq!(e.map(|e| (e.time.to_bits(), e.seq, e.slot)), best);
                let Some(e) = e else { break };
                if rng.uniform() < 0.02 {
                    q.idle_top();
                    keys[e.slot as usize] = None;
                } else {
                    let t = e.time + (rng.uniform() * 5.0).floor();
                    q.replace_top(t, seq);
                    keys[e.slot as usize] = Some((t, seq));
                }
            }
        }
    }
}
