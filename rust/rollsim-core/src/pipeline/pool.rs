//! The rollout pool shared by every pipeline: the requests and their lifecycle (waiting, on a
//! slot, finished, taken off, aborted), groups of answers, prefill and the prefix cache, token
//! spans per policy version, and what a weight update does to in-flight requests. Where requests
//! run and when they finish is the placement's (`placement.rs`). The pipelines (`batch`,
//! `streaming`) drive the pool: they decide when groups may start, when the weights change and
//! which finished groups are trained.

use std::collections::VecDeque;

use super::agentic::Agent;
use super::placement::Placement;
use crate::engine::Control;
use crate::error::Result;
use crate::event::Key;
use crate::lengths::Draw;
use crate::queue::Event;
use crate::record::{Recorder, NONE_U32};
use crate::scenario::{OnUpdate, Scenario};

/// One answer being generated (on a slot) or waiting for a slot.
#[derive(Clone, Copy)]
pub(crate) struct Req {
    /// Sample id once started (`NONE_U32` before).
    pub id: u32,
    /// Index of its group in the slab.
    pub group: u32,
    pub length: f64,
    /// Tokens decoded before `decode_start`.
    pub done: f64,
    /// When decoding (re)starts, after any prefill: a time, or with batched decoding the value of
    /// the instance's token clock (see `Instances`).
    pub decode_start: f64,
    pub version_start: u32,
    /// The current token span: its version and first token.
    pub seg_version: u32,
    pub seg_first: f64,
    /// Spans recorded so far, and the version of the last one.
    pub n_versions: u32,
    pub version_end: u32,
    /// Its KV was freed by a preemption: it pays a prefill of prompt + tokens done when it is
    /// admitted again (unless whoever resubmits it charges one).
    pub kv_lost: Flag,
}

/// A flag as wide as the fields beside it (a `bool` left 7 bytes of padding at the end of `Req`,
/// which its copies moved as two overlapping 4-byte words through the stack: a stalled store
/// forward on every request taken from the queue); it keeps a niche, so `Option<Req>` stays 64
/// bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Flag {
    No = 0,
    Yes = 1,
}

const _: () = assert!(std::mem::size_of::<Option<Req>>() == 64);

impl Req {
    /// A request that has not started.
    #[inline]
    fn fresh(group: u32, length: f64) -> Self {
        Req {
            id: NONE_U32,
            group,
            length,
            done: 0.0,
            decode_start: 0.0,
            version_start: 0,
            seg_version: 0,
            seg_first: 0.0,
            n_versions: 0,
            version_end: 0,
            kv_lost: Flag::No,
        }
    }

    /// Tokens decoded by time `t`.
    #[inline]
    pub fn progress(&self, t: f64, speed: f64) -> f64 {
        (self.done + (t - self.decode_start).max(0.0) * speed).min(self.length)
    }
}

#[derive(Clone, Copy, Default)]
pub(crate) struct Member {
    pub id: u32,
    pub length: f64,
    pub version_start: u32,
    pub version_finish: u32,
    /// Version of its last token span.
    pub version_end: u32,
}

pub(crate) struct Group {
    pub id: u32,
    pub size: u32,
    /// Answers not finished yet (waiting or on a slot).
    pub remaining: u32,
    pub members: Members,
    pub prompt: f64,
    pub min_version: u32,
    pub max_len: f64,
    /// Rollout version whose KV holds the prompt (`NONE_U32`: not cached).
    pub cache_version: u32,
    /// Completion order.
    pub seq: u64,
    pub cancelled: bool,
}

/// A group's finished members, in finish order: a group of one holds its member in place (no
/// second allocation to follow when it is trained), larger groups in a `Vec`.
pub(crate) struct Members {
    one: [Member; 1],
    len: u32,
    many: Vec<Member>,
}

impl Members {
    /// Room for a group of `size`.
    pub fn with_capacity(size: usize) -> Self {
        Members { one: [Member::default()], len: 0, many: if size > 1 { Vec::with_capacity(size) } else { Vec::new() } }
    }

    #[inline]
    pub fn push(&mut self, m: Member) {
        if self.len == 0 && self.many.capacity() == 0 {
            self.one[0] = m;
            self.len = 1;
            return;
        }
        if self.len == 1 && self.many.is_empty() {
            // a second member after all: both go to the Vec
            self.many.push(self.one[0]);
        }
        self.many.push(m);
        self.len = self.many.len() as u32;
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.many.clear();
    }
}

impl std::ops::Deref for Members {
    type Target = [Member];
    #[inline]
    fn deref(&self) -> &[Member] {
        if self.many.is_empty() {
            &self.one[..self.len as usize]
        } else {
            &self.many
        }
    }
}

impl<'a> IntoIterator for &'a Members {
    type Item = &'a Member;
    type IntoIter = std::slice::Iter<'a, Member>;
    #[inline]
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

pub(crate) struct Pool<'a, D: Draw, P: Placement> {
    pub sc: &'a Scenario,
    pub draw: D,
    pub rec: &'a mut Recorder,
    pub ctl: &'a mut Control<'a>,
    /// Where requests run: slot events, routing, progress.
    pub(crate) placement: P,
    /// Multi-turn trajectories (`Scenario::agentic`).
    pub(crate) agent: Option<Box<Agent>>,
    /// The request on each slot (running, or waiting for KV).
    pub slots: Vec<Option<Req>>,
    pub busy: u32,
    pub pending: VecDeque<Req>,
    pub groups: Vec<Group>,
    free_groups: Vec<u32>,
    answers: Vec<f64>,
    next_id: u64,
    next_group_id: u32,
    pub completed_groups: u64,
    /// The policy version the rollout generates with.
    pub rollout_version: u32,
    /// New groups that may still start (set by the pipeline).
    pub admit_budget: u64,
    /// No request may start (draining before a weight update).
    pub paused: bool,
    pub t: f64,
    t_busy: f64,
    pub busy_s: f64,
    /// Samples of admitted groups neither completed nor dropped.
    pub in_progress: u64,
    pub admitted: u64,
}

impl<'a, D: Draw, P: Placement> Pool<'a, D, P> {
    pub fn new(sc: &'a Scenario, draw: D, rec: &'a mut Recorder, ctl: &'a mut Control<'a>) -> Self {
        let slots = sc.rollout_slots as usize;
        let record_turns = rec.samples.is_some();
        Pool {
            sc,
            draw,
            rec,
            ctl,
            placement: P::new(sc),
            agent: Agent::new(sc, record_turns),
            slots: vec![None; slots],
            busy: 0,
            pending: VecDeque::new(),
            groups: Vec::new(),
            free_groups: Vec::new(),
            answers: Vec::with_capacity(sc.group_size as usize),
            next_id: 0,
            next_group_id: 0,
            completed_groups: 0,
            rollout_version: 0,
            admit_budget: u64::MAX,
            paused: false,
            t: 0.0,
            t_busy: 0.0,
            busy_s: 0.0,
            in_progress: 0,
            admitted: 0,
        }
    }

    /// The next finish event: its time, sample id and slot; `None` when no request can finish.
    /// With KV capacity, the pool's own events that come before the event `limit` (preemptions,
    /// and the admissions they and earlier changes allow) are processed first; a slot event after
    /// `limit` (the next timer's key) is returned as is. Each of the pool's own events counts
    /// toward the event budget and the interrupt check (`Control::tick_inner`): one call may
    /// process many (an instance of many slots whose KV fills preempts them one at a time).
    #[inline(always)]
    pub fn next_event(&mut self, limit: Key) -> Result<Option<Event>> {
        let mut admit = true;
        loop {
            if admit && self.placement.has_kv() {
                self.admit_waiting();
            }
            admit = true;
            let Some((ev, preempt)) = self.placement.peek() else { return Ok(None) };
            if !preempt || ev.key > limit {
                return Ok(Some(ev));
            }
            self.ctl.tick_inner(self.rec.s.events)?;
            self.advance(ev.time);
            if self.placement.internal(ev.slot, ev.time) {
                continue; // a shared prefill ended: its request decodes now
            }
            if self.placement.evict_cached(ev.slot) {
                continue; // cached KV of a request in a tool call made room
            }
            self.preempt(ev.slot as usize);
            // A preemption admits nothing: its victim, at the front of its instance's queue, needs
            // the KV it just freed plus one token, and the others wait behind it. Not checked, as
            // the check could say yes when the time cannot resolve the moment the KV fills (its
            // clock then lags the point where the KV is full by more than a token, e.g. at 4e9 s
            // and 2e5 tokens/s a sequence): the victim would come back at once and be preempted
            // again, at the same time, forever.
            admit = false;
        }
    }

    /// KV capacity: starts the waiting requests the placement admits now.
    #[inline(always)]
    fn admit_waiting(&mut self) {
        let t = self.t;
        let mut cursor = 0;
        while let Some((s, prefill_s)) = self.placement.next_admission(&mut cursor, &self.slots, t) {
            let r = self.slots[s as usize].as_mut().expect("a waiting request");
            if r.kv_lost == Flag::Yes {
                let r = *r;
                self.admit(s, r, prefill_s);
            } else {
                // `admit` in place: the request stays on its slot (not copied out and back)
                self.placement.start(s, r, prefill_s, t);
            }
        }
    }

    /// `r` starts decoding on `slot` (after `prefill_s`, or after recomputing its KV if a
    /// preemption freed it).
    #[inline(always)]
    fn admit(&mut self, slot: u32, mut r: Req, mut prefill_s: f64) {
        if r.kv_lost == Flag::Yes {
            prefill_s = self.recompute(&mut r);
        }
        self.placement.start(slot, &mut r, prefill_s, self.t);
        self.slots[slot as usize] = Some(r);
    }

    /// `r` gets its KV back before it decodes on (it was resubmitted, carried to the next batch,
    /// preempted, or its weights changed): one prefill of prompt + tokens done, recorded as
    /// recomputed, and a new token span if the weights changed since its last one. Returns the
    /// prefill's seconds.
    fn recompute(&mut self, r: &mut Req) -> f64 {
        if r.seg_version != self.rollout_version {
            self.close_span(r);
            r.seg_version = self.rollout_version;
        }
        r.kv_lost = Flag::No;
        let ctx = self.sc.prefill.prompt_tokens + r.done;
        self.rec.prefill(ctx, true);
        if ctx > 0.0 {
            ctx / self.sc.prefill.prefill_tokens_per_s
        } else {
            0.0
        }
    }

    /// KV capacity: the request on `slot` is preempted at `self.t` (its KV is freed; it waits at
    /// the front of its instance's queue with its progress, and its token span stays open).
    fn preempt(&mut self, slot: usize) {
        let mut r = self.slots[slot].expect("a running request");
        let progress = self.placement.progress(slot, &r, self.t);
        self.rec.decoded(progress - r.done);
        self.rec.s.preemptions += 1;
        r.done = progress;
        r.kv_lost = Flag::Yes;
        self.slots[slot] = Some(r);
        self.placement.preempt(slot as u32, progress, self.t);
    }

    /// Marks `slot` (whose request has finished or been taken off) idle, to be refilled later.
    #[inline]
    pub fn park(&mut self, slot: u32) {
        self.placement.park(slot);
    }

    /// Stores `r` on `slot` starting at `self.t` after `prefill_s` seconds of prefill, and sets its
    /// finish event (with KV capacity it may wait for KV instead).
    #[inline(always)]
    pub(crate) fn place(&mut self, slot: u32, r: Req, prefill_s: f64) {
        self.busy += 1;
        if self.placement.arrive(slot, r.done, self.t) {
            self.admit(slot, r, prefill_s);
        } else {
            self.placement.wait(slot, r.done, prefill_s, self.t);
            self.slots[slot as usize] = Some(r);
        }
    }

    /// Moves the clock to `t`, integrating busy slot-time.
    #[inline]
    pub fn advance(&mut self, t: f64) {
        self.busy_s += self.busy as f64 * (t - self.t_busy);
        self.t_busy = t;
        self.t = t;
    }

    #[inline]
    fn new_group(&mut self, prompt: f64) -> u32 {
        let (id, size) = (self.next_group_id, self.sc.group_size);
        self.next_group_id = self.next_group_id.wrapping_add(1);
        let i = match self.free_groups.pop() {
            Some(i) => i,
            None => {
                self.groups.push(Group {
                    id: 0,
                    size: 0,
                    remaining: 0,
                    members: Members::with_capacity(size as usize),
                    prompt: 0.0,
                    min_version: 0,
                    max_len: 0.0,
                    cache_version: 0,
                    seq: 0,
                    cancelled: false,
                });
                (self.groups.len() - 1) as u32
            }
        };
        // a freed group keeps its (cleared) members' allocation
        let g = &mut self.groups[i as usize];
        g.id = id;
        g.size = size;
        g.remaining = size;
        g.prompt = prompt;
        g.min_version = u32::MAX;
        g.max_len = 0.0;
        g.cache_version = NONE_U32;
        g.seq = 0;
        g.cancelled = false;
        i
    }

    pub fn free_group(&mut self, g: u32) {
        self.groups[g as usize].members.clear();
        self.free_groups.push(g);
    }

    /// Draws a group's answers and queues them: at the back, or at the front (in order) for a
    /// regenerated prompt.
    pub fn queue_group(&mut self, prompt: Option<f64>) {
        let front = prompt.is_some();
        let prompt = prompt.unwrap_or_else(|| self.draw.prompt());
        let g = self.new_group(prompt);
        self.answers.clear();
        for _ in 0..self.sc.group_size {
            let n = self.draw.answer(prompt);
            self.answers.push(n);
        }
        let n = self.sc.group_size as u64;
        self.admitted += n;
        self.in_progress += n;
        let reqs = self.answers.iter().map(|&length| Req::fresh(g, length));
        if front {
            let reqs: Vec<Req> = reqs.collect();
            for r in reqs.into_iter().rev() {
                self.pending.push_front(r);
            }
        } else {
            self.pending.extend(reqs);
        }
    }

    /// Next request for a free slot: a waiting one, else a newly admitted group's first answer.
    #[inline(always)]
    fn next_request(&mut self) -> Option<Req> {
        loop {
            match self.pending.pop_front() {
                Some(mut r) if self.groups[r.group as usize].cancelled => {
                    // a request of a dropped group that never started (or was stopped)
                    if self.agent.is_some() && r.id != NONE_U32 {
                        // a trajectory back from a tool call: aborted, its tokens wasted
                        self.close_span(&mut r);
                        self.rec.abort_sample(r.id, r.done, self.t, r.version_end, r.n_versions);
                    }
                    let g = &mut self.groups[r.group as usize];
                    g.remaining -= 1;
                    if g.remaining == 0 {
                        self.free_group(r.group);
                    }
                }
                Some(r) => return Some(r),
                None => {
                    if self.admit_budget == 0
                        || self
                            .agent
                            .as_ref()
                            .is_some_and(|a| self.in_progress + self.sc.group_size as u64 > a.max_trajectories)
                    {
                        return None;
                    }
                    self.admit_budget -= 1;
                    if self.sc.group_size == 1 {
                        // the common case: one answer per prompt, straight to the slot
                        let prompt = self.draw.prompt();
                        let g = self.new_group(prompt);
                        let length = self.draw.answer(prompt);
                        self.admitted += 1;
                        self.in_progress += 1;
                        return Some(Req::fresh(g, length));
                    }
                    self.queue_group(None);
                }
            }
        }
    }

    /// Starts the next request on `slot`; false if there is none (the slot stays as it was).
    #[inline]
    pub fn fill_slot(&mut self, slot: u32) -> Result<bool> {
        self.fill_slot_inline(slot)
    }

    /// `fill_slot`, always inlined: for `refill`'s common case, once per finish or turn's end.
    #[inline(always)]
    fn fill_slot_inline(&mut self, slot: u32) -> Result<bool> {
        if self.paused {
            return Ok(false);
        }
        let Some(mut r) = self.next_request() else {
            return Ok(false);
        };
        let t = self.t;
        let p = &self.sc.prefill;
        let (mut prefill, mut resumed) = (0.0, false);
        if r.id == NONE_U32 {
            r.length = self.draw.at_start(r.length); // the length under the version it starts with
            let id = self.ctl.admit(self.next_id)?;
            self.next_id += 1;
            r.id = id;
            r.version_start = self.rollout_version;
            r.seg_version = self.rollout_version;
            r.version_end = self.rollout_version;
            if let Some(a) = self.agent.as_deref_mut() {
                a.begin(self.sc.agentic.as_ref().expect("agentic"), p.prompt_tokens, &mut r, slot, t);
            }
            let g = &mut self.groups[r.group as usize];
            self.rec.start(r.length, t, self.rollout_version, slot, g.id);
            if p.prompt_tokens > 0.0 {
                let cached = p.prefix_sharing
                    && g.cache_version != NONE_U32
                    && (g.cache_version == self.rollout_version || !p.clear_cache_on_update);
                if !cached {
                    prefill = p.prompt_tokens;
                    // recomputed: the shared prefix was cached and a weight update cleared it
                    self.rec.prefill(prefill, p.prefix_sharing && g.cache_version != NONE_U32);
                    g.cache_version = self.rollout_version;
                }
            }
        } else {
            // a partial answer resumes (resubmitted, or carried to the next batch)
            resumed = true;
        }
        let mut prefill_s = if resumed {
            // a trajectory's next turn, else a partial answer
            match self.turn_prefill_s(&r, slot) {
                Some(s) => s,
                None => self.recompute(&mut r),
            }
        } else if prefill > 0.0 {
            prefill / p.prefill_tokens_per_s
        } else {
            0.0
        };
        if let Some(delay) = self.placement.start_delay(t) {
            // started during a rollout pause the placement's clocks do not absorb
            prefill_s += delay;
        }
        self.place(slot, r, prefill_s);
        Ok(true)
    }

    /// Fills idle slots while requests can start, on the slots the placement routes them to.
    pub fn fill_idle(&mut self) -> Result<()> {
        while let Some(s) = self.placement.route() {
            if !self.fill_slot(s)? {
                break;
            }
            self.placement.take(s);
        }
        Ok(())
    }

    /// The request on `slot` finished at `self.t`. Returns its group if that group is now complete
    /// (and not cancelled). Does not refill the slot.
    #[inline]
    pub fn finish(&mut self, slot: u32) -> Option<u32> {
        let r = self.slots[slot as usize].take().expect("a slot event comes from a busy slot");
        self.busy -= 1;
        let t = self.t;
        self.placement.finished(slot, t);
        // the last span (empty when the answer was complete when it was stopped at a batch's end)
        let (mut n_versions, mut version_end) = (r.n_versions, r.version_end);
        if r.length > r.seg_first || n_versions == 0 {
            // its last span, recorded with the finish (the span book is left alone)
            n_versions += 1;
            version_end = r.seg_version;
            let decoded = r.length - r.done;
            self.rec.finish_with_span(
                r.id,
                version_end,
                r.seg_first,
                r.length,
                decoded,
                t,
                self.rollout_version,
                n_versions,
            );
        } else {
            self.rec.finish(r.id, r.length - r.done, t, version_end, self.rollout_version, n_versions);
        }
        let g = &mut self.groups[r.group as usize];
        g.remaining -= 1;
        g.members.push(Member {
            id: r.id,
            length: r.length,
            version_start: r.version_start,
            version_finish: self.rollout_version,
            version_end,
        });
        g.min_version = g.min_version.min(r.version_start);
        g.max_len = g.max_len.max(r.length);
        if g.cancelled && self.agent.is_some() {
            // a trajectory of a group dropped while it ran (a sibling's tool call failed)
            self.rec.drop_sample(r.id, r.length);
        }
        if g.remaining > 0 {
            return None;
        }
        if g.cancelled {
            self.free_group(r.group);
            return None;
        }
        g.seq = self.completed_groups;
        self.completed_groups += 1;
        self.in_progress -= g.size as u64;
        Some(r.group)
    }

    /// Refills `slot` after a finish (or marks it idle), then the idle slots.
    #[inline]
    pub fn refill(&mut self, slot: u32) -> Result<()> {
        if !P::REFILL_IN_PLACE && self.placement.sole_idle(slot) {
            // the common case with instances full around it: routing would give `slot` back and
            // then find no idle slot, so it is filled (or parked) without the routing's round trip
            if !self.fill_slot_inline(slot)? {
                self.placement.park(slot);
            }
            return Ok(());
        }
        if !P::REFILL_IN_PLACE || !self.fill_slot(slot)? {
            self.placement.park(slot);
        }
        self.fill_idle()
    }

    /// Drops every finished member of group `g` and frees it.
    pub fn discard(&mut self, g: u32) {
        for m in &self.groups[g as usize].members {
            self.rec.drop_sample(m.id, m.length);
        }
        self.free_group(g);
    }

    /// Group `g` is dropped while some of its answers are unfinished: its finished members are
    /// dropped now, its waiting requests when they come up, its running ones by the caller.
    pub(crate) fn cancel_group(&mut self, g: u32) {
        let grp = &mut self.groups[g as usize];
        if grp.cancelled {
            return;
        }
        grp.cancelled = true;
        self.in_progress -= grp.size as u64;
        for m in &grp.members {
            self.rec.drop_sample(m.id, m.length);
        }
    }

    /// Takes the request off `slot` at `self.t`: records its span and the tokens decoded so far.
    /// With `close_span`, the current token span ends here (the weights change); otherwise it
    /// stays open and continues if the request resumes under the same version.
    fn take_off(&mut self, slot: usize, close_span: bool) -> Option<Req> {
        let progress = self.placement.progress(slot, self.slots[slot].as_ref()?, self.t);
        let mut r = self.slots[slot].take()?;
        self.rec.decoded(progress - r.done);
        r.done = progress;
        if close_span {
            self.close_span(&mut r);
        }
        self.busy -= 1;
        self.placement.take_off(slot as u32, self.t);
        Some(r)
    }

    /// Records the span of `r` from `seg_first` to the tokens decoded so far, if not empty.
    pub(crate) fn close_span(&mut self, r: &mut Req) {
        if r.done > r.seg_first {
            self.rec.segment(r.id, r.seg_version, r.seg_first, r.done);
            r.n_versions += 1;
            r.version_end = r.seg_version;
        }
        r.seg_first = r.done;
    }

    /// At the end of the run: closes the open span of `r`, still in flight, and records the
    /// versions of its tokens so far (`version_end`, `n_versions`).
    pub(crate) fn close_in_flight(&mut self, r: &mut Req) {
        self.close_span(r);
        self.rec.in_flight_versions(r.id, r.version_end, r.n_versions);
    }

    /// Aborts the request on `slot`: its tokens are wasted and its group is dropped.
    fn abort(&mut self, slot: usize) {
        let Some(r) = self.take_off(slot, true) else { return };
        self.rec.abort_sample(r.id, r.done, self.t, r.version_end, r.n_versions);
        self.park(slot as u32);
        self.cancel_group(r.group);
        let g = &mut self.groups[r.group as usize];
        g.remaining -= 1;
        if g.remaining == 0 {
            self.free_group(r.group);
        }
    }

    /// The rollout loads `version`; in-flight requests are handled per `mode`. With
    /// `rollout_pause_s`, the pool stops that long: requests in flight resume (and requests
    /// started meanwhile begin) at the end of the pause.
    pub fn update(&mut self, version: u32, mode: OnUpdate) {
        if self.rollout_version == version {
            return;
        }
        self.rollout_version = version;
        self.draw.set_version(version);
        let mut pause = self.sc.rollout_pause_s;
        if pause > 0.0 && self.placement.pause(self.t, self.t + pause) {
            // the placement's clocks stand still instead
            pause = 0.0;
        }
        if matches!(mode, OnUpdate::Continue | OnUpdate::Wait) {
            if pause > 0.0 {
                self.pause_in_flight(pause);
            }
            return;
        }
        for slot in 0..self.slots.len() {
            if self.slots[slot].is_none() {
                continue;
            }
            if mode == OnUpdate::AbortDrop {
                self.abort(slot);
                continue;
            }
            let mut r = self.take_off(slot, true).expect("busy slot");
            r.seg_version = version;
            let mut prefill_s = pause;
            if mode != OnUpdate::KeepStale {
                // KeepRecompute and AbortResubmit: one prefill of prompt + answer so far
                prefill_s += self.recompute(&mut r);
            }
            self.place(slot as u32, r, prefill_s);
        }
        // slots freed by aborts are refilled by the caller (fill_idle)
    }

    /// Independent slots: every request in flight stops for `pause` seconds and then continues
    /// where it was (the rest of its prefill, then decoding); its token span stays open.
    #[cold]
    fn pause_in_flight(&mut self, pause: f64) {
        for slot in 0..self.slots.len() {
            let Some(r) = self.slots[slot] else { continue };
            let prefill_left = self.placement.prefill_left(&r, self.t);
            let r = self.take_off(slot, false).expect("busy slot");
            self.place(slot as u32, r, prefill_left + pause);
        }
    }

    /// Stops every request (end of an over-sampled batch): kept ones wait, with their progress,
    /// at the front of the queue for the next batch; otherwise they are aborted and their groups
    /// dropped (and so are the groups of requests that never started).
    pub fn stop_all(&mut self, keep: bool) {
        let mut kept = Vec::new();
        for slot in 0..self.slots.len() {
            if self.slots[slot].is_none() {
                continue;
            }
            if keep {
                let r = self.take_off(slot, false).expect("busy slot");
                self.park(slot as u32);
                kept.push(r);
            } else {
                self.abort(slot);
            }
        }
        if !keep {
            let waiting: Vec<u32> = self.pending.iter().map(|r| r.group).collect();
            for g in waiting {
                self.cancel_group(g);
            }
        }
        for r in kept.into_iter().rev() {
            self.pending.push_front(r);
        }
        self.placement.reset_routing();
    }

    /// Tokens decoded by requests in flight, and by partial answers waiting to resume, plus the
    /// finished answers of groups that are not trained yet; records the in-flight decode.
    pub fn close(&mut self) -> f64 {
        let t = self.t;
        self.advance(t);
        let mut pending = 0.0;
        // open spans end with the run: every answer's spans tile the tokens it decoded
        for slot in 0..self.slots.len() {
            let Some(mut r) = self.slots[slot] else { continue };
            let progress = self.placement.progress(slot, &r, t);
            self.rec.decoded(progress - r.done);
            r.done = progress;
            self.close_in_flight(&mut r);
            pending += progress;
        }
        let waiting: Vec<Req> = self.pending.iter().copied().collect();
        for mut r in waiting {
            if !self.groups[r.group as usize].cancelled && r.id != NONE_U32 {
                self.close_in_flight(&mut r);
                pending += r.done;
            }
        }
        let mut live = vec![true; self.groups.len()];
        for g in &self.free_groups {
            live[*g as usize] = false;
        }
        for (i, g) in self.groups.iter().enumerate() {
            if live[i] && !g.cancelled {
                pending += g.members.iter().map(|m| m.length).sum::<f64>();
            }
        }
        self.rec.s.slot_busy_s = self.busy_s;
        if let Some(kv_wait_s) = self.placement.close(t) {
            self.rec.s.kv_wait_s = kv_wait_s;
        }
        pending + self.close_agentic()
    }
}

#[cfg(test)]
mod members_tests {
    use super::{Member, Members};

    #[test]
    fn members_keep_finish_order_in_place_or_not() {
        for size in [1usize, 2, 5] {
            let mut m = Members::with_capacity(size);
            for round in 0..3 {
                m.clear();
                assert!(m.is_empty());
                let n = size + round; // more members than the size: requeued groups never do, but it is safe
                for id in 0..n as u32 {
                    m.push(Member { id, length: id as f64, ..Member::default() });
                }
                let ids: Vec<u32> = (&m).into_iter().map(|x| x.id).collect();
                assert_eq!(ids, (0..n as u32).collect::<Vec<_>>());
                assert_eq!(m.iter().map(|x| x.length).sum::<f64>(), (0..n).sum::<usize>() as f64);
            }
        }
    }
}
