//! Events: their kinds, the one rule that orders them, and the timer queue.
//!
//! Every event is `(time, kind, id)`, and the engine processes events in that order: the earlier
//! time first; at equal times by kind, in the order of the variants of [`EventKind`]; then by id
//! (for slot events the sample id, which grows with every start, so equal times go in start
//! order). Runs are deterministic.
//!
//! An event's [`Key`] packs the three into one `u128` that compares as an integer: times are
//! non-negative finite `f64`, whose IEEE-754 bit patterns order like the numbers, in bits 40..104,
//! the kind in bits 32..40 and the id in bits 0..32. The slot queues (`queue::SlotQueue`, the
//! instances' trees) hold slot events as keys; [`Timers`] holds the events of every other kind.
//!
//! A new kind of event (a tool call returning, a training rank finishing) is a variant here, placed
//! where it goes at equal times, a `Timers::push` where it is scheduled and a handler where the
//! pipeline dispatches on the kind of the timer it pops.

/// What happens, in the order events of equal time are processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EventKind {
    /// The trainer's step ends and the policy version bumps. First at equal times: work that
    /// starts at the time a step ends sees the new version ("the trainer first at ties").
    StepEnd = 0,
    /// A batch pipeline starts generating its next batch (a computed time, compared with the
    /// pending timers: steps that end at that time come first).
    BatchStart = 1,
    /// An agentic trajectory's tool call returns (id: the sample id): its next turn is routed.
    /// After the step ends of its time (a turn that resumes then sees the new version), before
    /// the slot events.
    ToolReturn = 2,
    /// A slot's request finishes, or with KV capacity is preempted (the placement's events; id:
    /// the sample id).
    Slot = 3,
}

impl EventKind {
    const ALL: [EventKind; 4] = [EventKind::StepEnd, EventKind::BatchStart, EventKind::ToolReturn, EventKind::Slot];
}

/// An event's `(time, kind, id)` packed so that integer order is event order.
pub type Key = u128;

/// A key later than every event: nothing pending.
pub const NEVER: Key = u128::MAX;

const KIND_SHIFT: u32 = 32;
const TIME_SHIFT: u32 = 40;

/// The key of the event `(time, kind, id)`; `time` must be non-negative and finite (also used
/// for the instances' token-clock values, which order the same way).
#[inline(always)]
pub fn key(time: f64, kind: EventKind, id: u32) -> Key {
    debug_assert!(time >= 0.0 && time.is_finite(), "event time {time}");
    ((time.to_bits() as u128) << TIME_SHIFT) | ((kind as u128) << KIND_SHIFT) | id as u128
}

/// The time of the event `k` (not of `NEVER`).
#[inline(always)]
pub fn time_of(k: Key) -> f64 {
    f64::from_bits((k >> TIME_SHIFT) as u64)
}

/// The id of the event `k`.
#[inline(always)]
pub fn id_of(k: Key) -> u32 {
    k as u32
}

/// The kind of the event `k` (not of `NEVER`).
#[inline]
pub fn kind_of(k: Key) -> EventKind {
    EventKind::ALL[((k >> KIND_SHIFT) & 0xff) as usize]
}

/// A pending timer: an event of any kind but `Slot`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timer {
    pub time: f64,
    pub kind: EventKind,
    pub id: u32,
}

/// The events that are not slot events (the trainer's step ends, tool calls returning, and
/// whatever is added later), in event order: a binary min-heap of keys. A pop sifts the hole at
/// the top down to the bottom with a branch-free choice of the smaller child (which child is
/// smaller is random: conditional moves beat the branches of `std`'s heap, hundreds of tool calls
/// are pending on an agentic run), then the last key up from there. The order of the events
/// does not depend on the heap's layout: a key is the whole event.
#[derive(Clone, Debug)]
pub struct Timers {
    /// The heap in `heap[..n]`, then `NEVER` up to the end (at least one: a right child read
    /// past the last key is never chosen).
    heap: Vec<Key>,
    n: usize,
    /// The earliest key (`NEVER` if none), read before every event.
    head: Key,
}

impl Default for Timers {
    fn default() -> Self {
        Timers { heap: vec![NEVER], n: 0, head: NEVER }
    }
}

impl Timers {
    pub fn new() -> Self {
        Timers::default()
    }

    /// Schedules the event `(time, kind, id)`.
    #[inline]
    pub fn push(&mut self, time: f64, kind: EventKind, id: u32) {
        self.push_inline(time, kind, id);
    }

    /// `push`, always inlined: for the agentic turn's end, which schedules a tool call's return
    /// on every turn (the other callers keep `push`, left to the compiler: inlined in the fast
    /// path's loop it costs more than the call saves).
    #[inline(always)]
    pub fn push_inline(&mut self, time: f64, kind: EventKind, id: u32) {
        debug_assert!(kind != EventKind::Slot, "slot events live in the slot queues");
        let k = key(time, kind, id);
        if self.heap.len() == self.n + 1 {
            self.heap.push(NEVER);
        }
        let mut p = self.n;
        self.n += 1;
        while p > 0 {
            let parent = (p - 1) / 2;
            let q = self.heap[parent];
            if q <= k {
                break;
            }
            self.heap[p] = q;
            p = parent;
        }
        self.heap[p] = k;
        self.head = self.heap[0];
    }

    /// The key of the earliest timer, `NEVER` if none.
    #[inline(always)]
    pub fn peek(&self) -> Key {
        self.head
    }

    /// Takes the earliest timer.
    #[inline]
    pub fn pop(&mut self) -> Option<Timer> {
        self.pop_inline()
    }

    /// `pop`, always inlined: for the streaming pipeline's loop, where an agentic run pops a
    /// tool call's return on every turn.
    #[inline(always)]
    pub fn pop_inline(&mut self) -> Option<Timer> {
        if self.n == 0 {
            return None;
        }
        let k = self.heap[0];
        self.n -= 1;
        let n = self.n;
        // the keys and the NEVER after them: the children read below are in it without a check
        let h = &mut self.heap[..n + 1];
        let last = std::mem::replace(&mut h[n], NEVER);
        if n > 0 {
            let mut p = 0;
            loop {
                let c = 2 * p + 1;
                if c >= n {
                    break;
                }
                // c + 1 <= n: a key, or the NEVER at n
                let (l, r) = (h[c], h[c + 1]);
                let right = r < l;
                h[p] = if right { r } else { l };
                p = c + right as usize;
            }
            while p > 0 {
                let parent = (p - 1) / 2;
                let q = h[parent];
                if q <= last {
                    break;
                }
                h[p] = q;
                p = parent;
            }
            h[p] = last;
        }
        self.head = h[0];
        Some(Timer { time: time_of(k), kind: kind_of(k), id: id_of(k) })
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_order_by_time_then_kind_then_id() {
        let mut evs = vec![
            (5.0, EventKind::Slot, 1),
            (1.0, EventKind::Slot, 9),
            (1.0, EventKind::StepEnd, 3),
            (1.0, EventKind::Slot, 2),
            (0.0, EventKind::Slot, 7),
            (1.0, EventKind::BatchStart, 0),
            (1.0, EventKind::StepEnd, 1),
        ];
        let mut keys: Vec<Key> = evs.iter().map(|&(t, k, i)| key(t, k, i)).collect();
        keys.sort();
        evs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let back: Vec<(f64, EventKind, u32)> = keys.iter().map(|&k| (time_of(k), kind_of(k), id_of(k))).collect();
        assert_eq!(back, evs);
        assert!(key(f64::MAX, EventKind::Slot, u32::MAX) < NEVER);
    }

    #[test]
    fn timers_pop_in_event_order() {
        let mut t = Timers::new();
        assert_eq!(t.peek(), NEVER);
        t.push(3.0, EventKind::StepEnd, 0);
        t.push(1.0, EventKind::BatchStart, 4);
        t.push(1.0, EventKind::StepEnd, 5);
        assert_eq!(t.peek(), key(1.0, EventKind::StepEnd, 5));
        let order: Vec<(f64, EventKind, u32)> =
            std::iter::from_fn(|| t.pop().map(|x| (x.time, x.kind, x.id))).collect();
        assert_eq!(
            order,
            vec![(1.0, EventKind::StepEnd, 5), (1.0, EventKind::BatchStart, 4), (3.0, EventKind::StepEnd, 0)]
        );
        assert!(t.is_empty());
    }

    /// The heap against a sorted list, with repeated keys and pushes between pops.
    #[test]
    fn timers_agree_with_a_sorted_list() {
        let mut t = Timers::new();
        let mut want: Vec<Key> = Vec::new();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..20_000 {
            let r = next();
            if r % 3 != 0 || want.is_empty() {
                let (time, id) = ((r >> 8) % 64, (r >> 20) as u32 % 8);
                t.push(time as f64 * 0.5, EventKind::ALL[(r >> 40) as usize % 3], id);
                want.push(key(time as f64 * 0.5, EventKind::ALL[(r >> 40) as usize % 3], id));
                want.sort_unstable_by(|a, b| b.cmp(a));
            } else {
                let k = want.pop().expect("a key");
                let got = t.pop().expect("a timer");
                assert_eq!(key(got.time, got.kind, got.id), k, "round {round}");
            }
            assert_eq!(t.peek(), want.last().copied().unwrap_or(NEVER));
            assert_eq!(t.is_empty(), want.is_empty());
        }
    }
}
