//! The event queue of rollout slots: a binary min-heap keyed by (time, insertion sequence).
//!
//! Times are non-negative finite `f64`, whose IEEE-754 bit patterns order like the numbers, so the
//! key is compared as integers. Equal times are served in insertion order (the sequence number is the
//! sample id, which grows with every start), which makes runs deterministic.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Event {
    time_bits: u64,
    pub seq: u32,
    pub slot: u32,
}

impl Event {
    #[inline]
    pub fn new(time: f64, seq: u32, slot: u32) -> Self {
        debug_assert!(time >= 0.0 && time.is_finite());
        Event {
            time_bits: time.to_bits(),
            seq,
            slot,
        }
    }
    #[inline]
    pub fn time(&self) -> f64 {
        f64::from_bits(self.time_bits)
    }
}

/// A binary min-heap of [`Event`]s with an in-place `replace_top` (one sift-down instead of a pop
/// and a push: the common case, where a finishing slot starts its next sample).
#[derive(Default, Clone)]
pub struct EventQueue {
    heap: Vec<Event>,
}

impl EventQueue {
    pub fn with_capacity(n: usize) -> Self {
        EventQueue {
            heap: Vec::with_capacity(n),
        }
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    #[inline]
    pub fn peek(&self) -> Option<&Event> {
        self.heap.first()
    }
    pub fn clear(&mut self) {
        self.heap.clear();
    }
    pub fn iter(&self) -> impl Iterator<Item = &Event> {
        self.heap.iter()
    }

    #[inline]
    pub fn push(&mut self, e: Event) {
        self.heap.push(e);
        let mut i = self.heap.len() - 1;
        while i > 0 {
            let parent = (i - 1) / 2;
            if self.heap[i] >= self.heap[parent] {
                break;
            }
            self.heap.swap(i, parent);
            i = parent;
        }
    }

    #[inline]
    pub fn pop(&mut self) -> Option<Event> {
        let last = self.heap.pop()?;
        if self.heap.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.heap[0], last);
        self.sift_down(0);
        Some(top)
    }

    /// Replaces the smallest event with `e` and restores the heap. Panics on an empty queue.
    #[inline]
    pub fn replace_top(&mut self, e: Event) {
        self.heap[0] = e;
        self.sift_down(0);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let x = self.heap[i];
        loop {
            let l = 2 * i + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r] < self.heap[l] {
                r
            } else {
                l
            };
            if self.heap[c] >= x {
                break;
            }
            self.heap[i] = self.heap[c];
            i = c;
        }
        self.heap[i] = x;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_then_sequence_order() {
        let mut q = EventQueue::default();
        let times = [5.0, 1.0, 3.0, 1.0, 0.0, 3.0, 2.5];
        for (i, t) in times.iter().enumerate() {
            q.push(Event::new(*t, i as u32, 0));
        }
        q.replace_top(Event::new(4.0, 99, 0)); // replaces (0.0, 4)
        let out: Vec<(f64, u32)> = std::iter::from_fn(|| q.pop())
            .map(|e| (e.time(), e.seq))
            .collect();
        assert_eq!(
            out,
            vec![
                (1.0, 1),
                (1.0, 3),
                (2.5, 6),
                (3.0, 2),
                (3.0, 5),
                (4.0, 99),
                (5.0, 0)
            ]
        );
    }
}
