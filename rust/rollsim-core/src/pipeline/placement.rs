//! Placement: where the pool's requests run and when they finish. It owns the slot events (a
//! request finishing, or with KV capacity being preempted), routing (which idle slot the next
//! request takes) and progress (the tokens a request has decoded by a time). `Pool` owns the
//! requests and groups and everything recorded about them; it tells the placement when a request
//! arrives on a slot, starts decoding, finishes or is taken off, and asks it for the next event.
//!
//! Two back-ends, chosen once per run (the pool and the pipelines are generic over them):
//! * [`Slots`]: independent slots, each decoding at `decode_tokens_per_s` whatever the others do
//!   (the chapter's model), with a loser tree of finish times (`queue::SlotQueue`).
//! * `Instances` (`instances.rs`): batched decoding on instances of `slots_per_instance` slots whose
//!   speed depends on their batch, optionally with a KV-cache capacity per instance (requests wait
//!   for KV, and are preempted when it is full).

use super::pool::Req;
use crate::queue::{Event, SlotQueue};
use crate::scenario::Scenario;

/// A placement back-end. `t` is always the pool's current time.
pub(crate) trait Placement {
    /// A freed slot takes the next request itself, before the idle ones (independent slots: the
    /// chapter's "a slot that frees starts a new sample"); otherwise every request is routed.
    const REFILL_IN_PLACE: bool;

    /// The placement for `sc`'s pool, every slot idle.
    fn new(sc: &Scenario) -> Self;

    /// With KV capacity: requests may wait for KV, and preemptions are slot events.
    fn has_kv(&self) -> bool;

    /// The earliest slot event and whether it is a preemption (else a finish); `None` when no
    /// request can finish.
    fn peek(&mut self) -> Option<(Event, bool)>;

    /// Tokens the request `r` on `slot` has decoded by `t`.
    fn progress(&self, slot: usize, r: &Req, t: f64) -> f64;

    /// The slot the next request takes, if one is idle.
    fn route(&mut self) -> Option<u32>;
    /// `slot`, returned by `route`, holds a request now.
    fn take(&mut self, slot: u32);
    /// `slot` holds no request now; it may be routed to.
    fn park(&mut self, slot: u32);
    /// Idle slots are routed to in slot order again (a batch pipeline's next batch).
    fn reset_routing(&mut self);
    /// `slot`, just left by its request (not parked yet), is the only slot routing would find
    /// once parked, and stays so until it is filled: `park`, `route` (giving `slot`), `take` and
    /// a `route` finding nothing would leave the routing state as it is, so a refill may skip
    /// them. `false` when not certain.
    #[inline(always)]
    fn sole_idle(&self, _slot: u32) -> bool {
        false
    }

    /// A request that has decoded `done` tokens arrives on `slot`: whether it may start decoding
    /// now (else it waits for KV: `wait`).
    fn arrive(&mut self, slot: u32, done: f64, t: f64) -> bool;
    /// `r` starts decoding on `slot` after `prefill_s` seconds of prefill: sets `r.decode_start`
    /// and its finish event.
    fn start(&mut self, slot: u32, r: &mut Req, prefill_s: f64, t: f64);
    /// The request that arrived on `slot` (with `done` tokens decoded) waits for KV; `prefill_s`
    /// is charged when it starts.
    fn wait(&mut self, slot: u32, done: f64, prefill_s: f64, t: f64);
    /// The next waiting request that may start now, and its prefill seconds. `cursor` starts at 0
    /// and is kept between calls of one round of admissions; `slots` holds the requests.
    fn next_admission(&mut self, cursor: &mut usize, slots: &[Option<Req>], t: f64) -> Option<(u32, f64)>;
    /// The request on `slot` finished (the slot keeps its stale event until it is refilled or parked).
    fn finished(&mut self, slot: u32, t: f64);
    /// The request on `slot` is taken off before it finished (running, or waiting for KV).
    fn take_off(&mut self, slot: u32, t: f64);
    /// The request on `slot` (with `done` tokens decoded) is preempted: its KV is freed and it
    /// waits first in line.
    fn preempt(&mut self, slot: u32, done: f64, t: f64);
    /// The event on `slot` that `peek` flagged at `t` is the placement's own (the end of a shared
    /// prefill): handled here, returns true; false for a preemption.
    fn internal(&mut self, _slot: u32, _t: f64) -> bool {
        false
    }

    /// The rollout stops from `t` to `until` (a weight update's pause). Returns whether the
    /// placement's clocks stand still meanwhile; otherwise the pool delays the requests in flight
    /// and `start_delay` those that start during the pause.
    fn pause(&mut self, t: f64, until: f64) -> bool;
    /// Seconds a request starting at `t` waits for the end of a pause the clocks do not absorb.
    fn start_delay(&self, t: f64) -> Option<f64>;
    /// Seconds of prefill `r` still has ahead at `t`.
    fn prefill_left(&self, r: &Req, t: f64) -> f64;

    /// The end of the run at `t`: the slot-seconds requests waited for KV, with KV capacity.
    fn close(&mut self, t: f64) -> Option<f64>;
    /// The end of the run at `t` (the agentic summary): the seconds of prefill (its tokens over
    /// the prefill speed) the request `r` on `slot` has not done by `t`, recorded when it was
    /// placed: still ahead, or not started (waiting for KV, or behind a pause).
    fn prefill_ahead(&self, slot: u32, r: &Req, t: f64) -> f64;

    /// Agentic rollouts: the request on `slot` stops decoding for a tool call and keeps its slot
    /// (not routed to) until `unhold`, after which it arrives on it again; with KV capacity it
    /// keeps `kv_tokens` of KV, counted against its instance's capacity, until then.
    fn hold(&mut self, slot: u32, _kv_tokens: f64, t: f64) {
        self.take_off(slot, t);
    }
    fn unhold(&mut self, _slot: u32) {}
    /// The instance of `slot` (independent slots: one).
    fn instance_of(&self, _slot: u32) -> u32 {
        0
    }
    /// The slot the next request takes on instance `inst`, if one is idle there.
    fn route_on(&mut self, _inst: u32) -> Option<u32> {
        self.route()
    }
    /// Agentic rollouts, `KvPolicy::Keep`, with KV capacity: the request `id` that left `slot` for
    /// a tool call keeps `tokens` of KV cached on its instance (they count against its capacity).
    fn cache_kv(&mut self, _slot: u32, _id: u32, _tokens: f64) {}
    /// `finished`, then `cache_kv` (a turn's end that keeps its KV cached during its tool call).
    #[inline(always)]
    fn finished_caching(&mut self, slot: u32, t: f64, id: u32, tokens: f64) {
        self.finished(slot, t);
        self.cache_kv(slot, id, tokens);
    }
    /// The tool call of `id`, whose KV is cached on the instance of `slot`, returns: the cached KV
    /// is released. Returns whether it was still cached (not evicted).
    fn uncache_kv(&mut self, _slot: u32, _id: u32) -> bool {
        true
    }
    /// KV capacity: the instance of `slot` is full. Evicts its least recently cached KV of a
    /// request in a tool call instead of preempting a running request; `false` if it has none.
    fn evict_cached(&mut self, _slot: u32) -> bool {
        false
    }
    /// Cached KV of requests in tool calls evicted so far.
    fn evictions(&self) -> u64 {
        0
    }
}

/// Independent slots.
pub(crate) struct Slots {
    /// Finish events per slot.
    queue: SlotQueue,
    /// Idle slots, refilled from the top.
    idle: Vec<u32>,
    /// Decode speed of every request, tokens/s.
    speed: f64,
    /// End of the current rollout pause.
    resume_at: f64,
}

impl Placement for Slots {
    const REFILL_IN_PLACE: bool = true;

    fn new(sc: &Scenario) -> Self {
        let n = sc.rollout_slots as usize;
        Slots {
            queue: SlotQueue::new(n),
            idle: (0..n as u32).rev().collect(),
            speed: sc.decode_tokens_per_s,
            resume_at: 0.0,
        }
    }

    #[inline(always)]
    fn has_kv(&self) -> bool {
        false
    }

    #[inline(always)]
    fn peek(&mut self) -> Option<(Event, bool)> {
        self.queue.peek().map(|e| (e, false))
    }

    #[inline(always)]
    fn progress(&self, _slot: usize, r: &Req, t: f64) -> f64 {
        r.progress(t, self.speed)
    }

    #[inline(always)]
    fn route(&mut self) -> Option<u32> {
        self.idle.last().copied()
    }

    #[inline(always)]
    fn take(&mut self, slot: u32) {
        let s = self.idle.pop();
        debug_assert_eq!(s, Some(slot));
    }

    #[inline(always)]
    fn park(&mut self, slot: u32) {
        self.queue.set_idle(slot);
        self.idle.push(slot);
    }

    fn reset_routing(&mut self) {
        // the idle stack back in slot order, so the next batch fills slots 0, 1, 2, ...
        self.idle.sort_unstable_by(|a, b| b.cmp(a));
    }

    #[inline(always)]
    fn arrive(&mut self, _slot: u32, _done: f64, _t: f64) -> bool {
        true
    }

    #[inline(always)]
    fn start(&mut self, slot: u32, r: &mut Req, prefill_s: f64, t: f64) {
        r.decode_start = t + prefill_s;
        let finish = r.decode_start + (r.length - r.done) / self.speed;
        self.queue.set(slot, finish, r.id);
    }

    fn wait(&mut self, _slot: u32, _done: f64, _prefill_s: f64, _t: f64) {
        unreachable!("independent slots have no KV capacity")
    }

    #[inline(always)]
    fn next_admission(&mut self, _: &mut usize, _: &[Option<Req>], _: f64) -> Option<(u32, f64)> {
        None
    }

    #[inline(always)]
    fn finished(&mut self, _slot: u32, _t: f64) {}

    #[inline]
    fn take_off(&mut self, slot: u32, _t: f64) {
        self.queue.set_idle(slot);
    }

    fn preempt(&mut self, _slot: u32, _done: f64, _t: f64) {
        unreachable!("independent slots have no KV capacity")
    }

    fn pause(&mut self, _t: f64, until: f64) -> bool {
        self.resume_at = until;
        false
    }

    #[inline(always)]
    fn start_delay(&self, t: f64) -> Option<f64> {
        (self.resume_at > t).then_some(self.resume_at - t)
    }

    fn prefill_left(&self, r: &Req, t: f64) -> f64 {
        (r.decode_start - t).max(0.0)
    }

    fn close(&mut self, _t: f64) -> Option<f64> {
        None
    }

    fn prefill_ahead(&self, _slot: u32, r: &Req, t: f64) -> f64 {
        // a request started during a pause prefills after it
        (r.decode_start - t.max(self.resume_at)).max(0.0)
    }
}
