//! Multi-turn agentic rollouts: a sample is a trajectory of turns. Each turn decodes a number of
//! tokens (the scenario's `lengths`, scaled per turn index); unless the trajectory ends there (stop
//! probability, `max_turns`, `max_context_tokens`), a tool / environment call follows: the request
//! leaves the decode batch (by `KvPolicy`), waits for a free environment (a FIFO queue in front of
//! `env_slots` environments), runs for an overhead plus a latency, and comes back with an
//! observation appended to its context (`EventKind::ToolReturn`). The next turn prefills what its
//! KV does not hold and decodes on.
//!
//! The environment pool is a FIFO multi-server queue whose arrivals come in time order, so a call's
//! start is known when it is submitted: the earliest free environment's free time (or now). No
//! admission event is needed; the call's return is the only event it schedules.
//!
//! Every random draw of this module (stop coins, tool latencies, observation lengths, failures)
//! comes from its own Xoshiro256++ stream seeded from the scenario's seed, so the answer-length
//! stream is drawn exactly as without it, plus one draw per later turn. With `max_turns = 1` no
//! draw is made and a run equals the single-turn run bit for bit.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::placement::Placement;
use super::pool::{Pool, Req};
use crate::error::{Error, Result};
use crate::event::{EventKind, Timers};
use crate::lengths::{Draw, Lengths};
use crate::record::NONE_U32;
use crate::rng::{FastRng, Source};
use crate::scenario::{show, PartialRollout, Scenario};
use crate::schema;

/// A distribution of seconds or tokens: a constant or a `Lengths` (lognormal or empirical).
#[derive(Debug, Clone, PartialEq)]
pub enum Dist {
    Const(f64),
    Of(Lengths),
}

impl Dist {
    #[inline(always)]
    fn draw(&self, src: &mut FastRng) -> f64 {
        match self {
            Dist::Const(v) => *v,
            Dist::Of(Lengths::LogNormal { mu, sigma, max_tokens, .. }) => src.lognormal(*mu, *sigma).min(*max_tokens),
            Dist::Of(Lengths::Empirical { values, cum_weights, .. }) => {
                let n = values.len();
                match cum_weights {
                    None => values[((src.uniform() * n as f64) as usize).min(n - 1)],
                    Some(cum) => {
                        let x = src.uniform() * cum[n - 1];
                        values[cum[..n - 1].partition_point(|c| *c <= x)]
                    }
                }
            }
        }
    }

    fn validate(&self, field: &'static str, hi: f64, unit: &str) -> Result<()> {
        match self {
            Dist::Const(v) if (0.0..=hi).contains(v) => Ok(()),
            Dist::Const(v) => {
                Err(Error::field(field, format!("must be in [0, {}] {unit}, got {}", show(hi), show(*v))))
            }
            Dist::Of(l) => l.validate().map_err(|e| {
                let m = e.to_string();
                Error::field(field, m.strip_prefix("lengths.").unwrap_or(&m).to_string())
            }),
        }
    }

    fn mean(&self) -> f64 {
        match self {
            Dist::Const(v) => *v,
            Dist::Of(l) => l.mean_tokens(),
        }
    }
}

/// What a request does with its slot and KV during a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvPolicy {
    /// Release the slot, keep the KV cached on its instance: the next turn prefills the
    /// observation only if it comes back to the same instance, else its whole context.
    #[default]
    Keep,
    /// Release the slot and drop the KV: the next turn prefills its whole context (prompt,
    /// generated and observed tokens), minus the prompt if the group's prefix cache holds it.
    Drop,
    /// Keep the slot (it idles, counted busy) and the KV: the next turn prefills the observation.
    /// With KV capacity the held KV (prompt + generated tokens, as a running request's) counts
    /// against the instance's capacity until the call returns; it is never evicted, and a held
    /// request is not preempted (it does not decode).
    Hold,
}

/// What a failed tool call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnFailure {
    /// The trajectory ends, aborted: its tokens are wasted and its group is dropped.
    #[default]
    Drop,
    /// The call is submitted again when it returns failed.
    Retry,
}

/// Multi-turn agentic rollouts (`Scenario::agentic`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgenticConfig {
    /// Turn `k`'s tokens are the scenario's length draw times `turn_scale[min(k, len - 1)]`
    /// (empty: 1).
    pub turn_scale: Vec<f64>,
    /// Seconds a tool call runs (after `env_overhead_s`).
    pub tool_latency_s: Dist,
    /// Tokens a tool call appends to the context.
    pub observation_tokens: Dist,
    /// Probability that the trajectory ends after a turn (before `max_turns`).
    pub stop_prob: f64,
    pub max_turns: u32,
    /// Prompt + generated + observed tokens at most (`INFINITY`: no bound); a trajectory that
    /// reaches it ends, truncated.
    pub max_context_tokens: f64,
    pub kv_policy: KvPolicy,
    /// A returning request goes back to its instance when that has an idle slot.
    pub sticky: bool,
    /// Concurrent environments (0: unbounded).
    pub env_slots: u32,
    /// Samples of groups started and not complete at most (0: unbounded): no new group starts
    /// beyond it, so that slots released during tool calls do not start trajectories without end.
    pub max_trajectories: u32,
    pub env_overhead_s: f64,
    pub failure_rate: f64,
    pub on_failure: OnFailure,
    /// A returning request's next tokens are generated with the rollout's current version (a new
    /// token span); otherwise it continues with the version it had, like an in-flight request.
    pub switch_version_at_turn: bool,
}

impl Default for AgenticConfig {
    fn default() -> Self {
        AgenticConfig {
            turn_scale: Vec::new(),
            tool_latency_s: Dist::Const(0.0),
            observation_tokens: Dist::Const(0.0),
            stop_prob: 0.0,
            max_turns: 1,
            max_context_tokens: f64::INFINITY,
            kv_policy: KvPolicy::Keep,
            sticky: true,
            env_slots: 0,
            max_trajectories: 0,
            env_overhead_s: 0.0,
            failure_rate: 0.0,
            on_failure: OnFailure::Drop,
            switch_version_at_turn: true,
        }
    }
}

/// Largest `agentic.max_turns` (the schema's, [`crate::schema::AGENTIC`]).
pub const MAX_TURNS: u32 = schema::MAX_TURNS as u32;
/// Largest tool latency, seconds (the schema's).
pub const MAX_TOOL_S: f64 = schema::AGENTIC_TOOL_LATENCY_S.hi;

impl AgenticConfig {
    /// Checks every field against its range in [`crate::schema::AGENTIC`] (messages start with
    /// `agentic.<field>`).
    pub fn validate(&self, sc: &Scenario) -> Result<()> {
        if self.max_turns == 0 || self.max_turns > MAX_TURNS {
            return Err(Error::field(
                "agentic.max_turns",
                format!("must be in [1, {MAX_TURNS}], got {}", self.max_turns),
            ));
        }
        schema::AGENTIC_STOP_PROB.check(self.stop_prob)?;
        schema::AGENTIC_FAILURE_RATE.check(self.failure_rate)?;
        if let Some((i, s)) =
            self.turn_scale.iter().enumerate().find(|(_, s)| !schema::AGENTIC_TURN_SCALE.contains(**s))
        {
            return Err(Error::field(
                "agentic.turn_scale",
                format!("must be in {}; item {i} is {}", schema::AGENTIC_TURN_SCALE.range, show(*s)),
            ));
        }
        schema::AGENTIC_ENV_OVERHEAD_S.check(self.env_overhead_s)?;
        if self.env_slots > crate::scenario::MAX_COUNT {
            return Err(Error::field(
                "agentic.env_slots",
                format!("must be in [0, {}] (0: unbounded), got {}", crate::scenario::MAX_COUNT, self.env_slots),
            ));
        }
        if self.max_trajectories > 0 && self.max_trajectories < sc.group_size {
            return Err(Error::field(
                "agentic.max_trajectories",
                format!(
                    "must be >= group_size ({}), or None (unbounded), got {}",
                    sc.group_size, self.max_trajectories
                ),
            ));
        }
        self.tool_latency_s.validate("agentic.tool_latency_s", MAX_TOOL_S, "seconds")?;
        self.observation_tokens.validate(
            "agentic.observation_tokens",
            schema::AGENTIC_OBSERVATION_TOKENS.hi,
            "tokens",
        )?;
        let prompt = sc.prefill.prompt_tokens;
        if self.max_context_tokens != f64::INFINITY
            && !(self.max_context_tokens > prompt && self.max_context_tokens <= schema::AGENTIC_MAX_CONTEXT_TOKENS.hi)
        {
            return Err(Error::field(
                "agentic.max_context_tokens",
                format!(
                    "must be in (prompt_tokens, 1e12] tokens = ({}, 1e12], or None (no bound), got {}",
                    show(prompt),
                    show(self.max_context_tokens)
                ),
            ));
        }
        let kv = sc.decode.kv_cache_tokens;
        if kv > 0.0 && self.max_turns > 1 && kv < self.max_context_tokens + 1.0 {
            return Err(Error::field(
                "agentic.max_context_tokens",
                format!(
                    "with kv_cache_tokens, must be at most kv_cache_tokens - 1 = {} (a trajectory must fit alone), got {}",
                    show(kv - 1.0),
                    show(self.max_context_tokens)
                ),
            ));
        }
        if let crate::scenario::Pipeline::OffPolicy { partial: PartialRollout { over_sampling: Some(o), .. }, .. } =
            &sc.pipeline
        {
            return Err(Error::field(
                "pipeline.over_sampling",
                format!(
                    "must be None with agentic (a batch waits for all its trajectories: stopping those in a \
                     tool call at the batch's end is not modelled), got {}",
                    show(*o)
                ),
            ));
        }
        Ok(())
    }

    /// Expected seconds of one tool call, overhead included.
    pub fn mean_tool_s(&self) -> f64 {
        self.env_overhead_s + self.tool_latency_s.mean()
    }
}

/// Per trajectory (`Agent::traj`, at the position `Agent::index` gives its sample id): what the
/// run's events read, in two cache lines (the request in the first, the rest in the second; a
/// record of 160 bytes straddled three). The sums kept only for the per-sample columns are in
/// `TrajCold`.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Traj {
    /// The request while it is in a tool call.
    req: Req,
    observed: f64,
    /// The call in progress: its start (in an environment) and return.
    call_start: f64,
    ret: f64,
    /// Prefill tokens of the next turn if it lands on the instance of `slot` (KV hit) or not.
    hit: f64,
    miss: f64,
    turns: u32,
    /// The slot of its last turn (held during the call with `KvPolicy::Hold`).
    slot: u32,
    in_tool: bool,
    returning: bool,
    call_fails: bool,
    /// The current turn was cut at `max_context_tokens`: the trajectory ends after it.
    cut: bool,
    truncated: bool,
    failed: bool,
}

const _: () = assert!(std::mem::size_of::<Traj>() == 128);

/// Per trajectory, what only the per-sample columns and the per-turn rows read (kept with those
/// recorded, at the same position as its `Traj`).
#[derive(Clone, Copy, Default)]
struct TrajCold {
    tool_s: f64,
    env_wait_s: f64,
    prefill: f64,
    /// When its current turn was placed on a slot.
    turn_start: f64,
    retries: u32,
}

/// Per-trajectory columns (`sample_id` = row index).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgenticColumns {
    pub turns: Vec<u32>,
    pub tokens_observed: Vec<f64>,
    pub tool_s: Vec<f64>,
    pub env_wait_s: Vec<f64>,
    pub prefill_tokens: Vec<f64>,
    pub tool_retries: Vec<u32>,
    pub truncated: Vec<bool>,
    pub failed: Vec<bool>,
}

/// One row per turn decoded to its end, in the order turns end (recorded with per-sample rows).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnColumns {
    pub sample_id: Vec<u32>,
    /// 0 for the first turn.
    pub turn: Vec<u32>,
    pub slot: Vec<u32>,
    /// When the turn was placed on its slot (its prefill, then decoding), and when it ended.
    pub start_s: Vec<f64>,
    pub end_s: Vec<f64>,
    /// The policy version of its tokens (of its last span).
    pub version: Vec<u32>,
    /// When the tool call after it returns (`NaN`: the trajectory ended with this turn).
    pub call_end_s: Vec<f64>,
}

/// Totals of the agentic part of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgenticSummary {
    /// Turns decoded to their end (of every trajectory), tool calls submitted and retried.
    pub turns: u64,
    pub tool_calls: u64,
    pub tool_retries: u64,
    pub trajectories_truncated: u64,
    pub trajectories_failed: u64,
    pub tokens_observed: f64,
    /// Prefill tokens of later turns (observations, or whole contexts whose KV was dropped).
    pub tokens_prefilled_turns: f64,
    /// Environment-seconds busy (within the run), seconds calls waited for an environment.
    pub env_busy_s: f64,
    pub env_wait_s: f64,
    /// `env_busy_s / (env_slots * end_s)` (NaN when unbounded), and the mean calls running.
    pub env_utilization: f64,
    pub env_mean_busy: f64,
    /// Slot-seconds within the run: held idle during tool calls (`KvPolicy::Hold`), prefilling
    /// (the prefill tokens over the prefill speed, less the prefill still ahead at the end),
    /// decoding (the rest of `slot_busy_s`, KV waiting excluded).
    pub gpu_hold_s: f64,
    pub gpu_prefill_s: f64,
    pub gpu_decode_s: f64,
    /// `KvPolicy::Keep` with `kv_cache_tokens`: KV of requests in tool calls evicted to make room
    /// for running requests (their next turn prefilled its whole context).
    pub kv_evictions: u64,
}

/// The agentic output of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgenticResult {
    pub summary: AgenticSummary,
    pub columns: Option<AgenticColumns>,
    pub turns: Option<TurnColumns>,
}

/// The pool's agentic state.
pub(crate) struct Agent {
    rng: FastRng,
    /// The trajectories' records, at `index[sample id]`. Without per-sample columns a finished
    /// trajectory's record is reused by a later one (`free`), so the records in use are those of
    /// the live trajectories (about the rollout slots plus the calls in flight), not one per
    /// trajectory started: on a long run the records of every trajectory left the caches (11 MB
    /// in 100 simulated hours of the agentic bench row), and each turn's end, call and return
    /// read them from main memory. With the columns (built from every record at the end)
    /// nothing is reused and `index[id] == id`.
    traj: Vec<Traj>,
    /// With per-sample columns (`!reuse`): the records' column sums, at the same positions.
    cold: Vec<TrajCold>,
    index: Vec<u32>,
    free: Vec<u32>,
    /// Records of finished trajectories are reused (no per-sample columns).
    reuse: bool,
    /// Free times (f64 bits) of the environments, with `env_slots > 0`.
    env_free: BinaryHeap<Reverse<u64>>,
    pub s: AgenticSummary,
    turns: Option<TurnColumns>,
    /// `AgenticConfig::max_trajectories` (`u64::MAX`: unbounded).
    pub max_trajectories: u64,
    /// Groups dropped by a failed tool call (the batch pipelines replace them).
    pub groups_dropped: u64,
}

impl Agent {
    /// The agentic state of `sc`'s pool, if it has one; `record_turns`: a row per turn.
    pub fn new(sc: &Scenario, record_turns: bool) -> Option<Box<Agent>> {
        let cfg = sc.agentic.as_ref()?;
        Some(Box::new(Agent {
            rng: FastRng::new(sc.seed ^ 0xA6E4_71C0_5EED_0001),
            traj: Vec::new(),
            cold: Vec::new(),
            index: Vec::new(),
            free: Vec::new(),
            reuse: !record_turns,
            env_free: (0..cfg.env_slots).map(|_| Reverse(0f64.to_bits())).collect(),
            s: AgenticSummary::default(),
            turns: record_turns.then(TurnColumns::default),
            max_trajectories: if cfg.max_trajectories > 0 { cfg.max_trajectories as u64 } else { u64::MAX },
            groups_dropped: 0,
        }))
    }

    /// Trajectory `id`'s turn on `slot` ended at `t`; `call_end` when its call returns (`NaN`: none).
    #[inline(always)]
    fn turn_row(&mut self, id: u32, slot: u32, version: u32, t: f64, call_end: f64) {
        if self.turns.is_some() {
            self.push_turn_row(id, slot, version, t, call_end);
        }
    }

    #[cold]
    fn push_turn_row(&mut self, id: u32, slot: u32, version: u32, t: f64, call_end: f64) {
        if let Some(c) = &mut self.turns {
            let k = self.index[id as usize] as usize;
            let tr = &self.traj[k];
            c.sample_id.push(id);
            c.turn.push(tr.turns - 1);
            c.slot.push(slot);
            c.start_s.push(self.cold[k].turn_start);
            c.end_s.push(t);
            c.version.push(version);
            c.call_end_s.push(call_end);
        }
    }

    /// A new trajectory starts with `r` (its first turn drawn): scale and cut its first turn.
    pub fn begin(&mut self, cfg: &AgenticConfig, prompt: f64, r: &mut Req, slot: u32, t: f64) {
        debug_assert_eq!(r.id as usize, self.index.len());
        let mut cut = false;
        r.length *= scale(cfg, 0);
        let room = cfg.max_context_tokens - prompt;
        if r.length >= room {
            r.length = room;
            cut = true;
        }
        // a free record, else a new one
        let k = self.free.pop().unwrap_or(self.traj.len() as u32);
        let tr = Traj {
            req: *r,
            turns: 0,
            observed: 0.0,
            call_start: 0.0,
            ret: 0.0,
            slot,
            hit: 0.0,
            miss: 0.0,
            in_tool: false,
            returning: false,
            call_fails: false,
            cut,
            truncated: false,
            failed: false,
        };
        if k as usize == self.traj.len() {
            self.traj.push(tr);
        } else {
            self.traj[k as usize] = tr;
        }
        if !self.reuse {
            self.cold.push(TrajCold { turn_start: t, ..TrajCold::default() });
        }
        self.index.push(k);
    }

    /// The trajectory whose record is at `k` has ended with its last turn (the pool finishes it;
    /// nothing reads its record again): without per-sample columns, a later trajectory reuses
    /// the record.
    #[inline(always)]
    fn end(&mut self, k: u32) {
        if self.reuse {
            self.free.push(k);
        }
    }

    /// Submits a tool call at `t`: returns its return time.
    #[inline(always)]
    fn call(&mut self, cfg: &AgenticConfig, k: u32, t: f64) -> f64 {
        let service = cfg.env_overhead_s + cfg.tool_latency_s.draw(&mut self.rng);
        let start = match self.env_free.pop() {
            Some(Reverse(bits)) => t.max(f64::from_bits(bits)),
            None => t,
        };
        let ret = start + service;
        if cfg.env_slots > 0 {
            self.env_free.push(Reverse(ret.to_bits()));
        }
        let fails = cfg.failure_rate > 0.0 && self.rng.uniform() < cfg.failure_rate;
        self.s.tool_calls += 1;
        self.s.env_busy_s += service;
        self.s.env_wait_s += start - t;
        if !self.reuse {
            let c = &mut self.cold[k as usize];
            c.tool_s += ret - t;
            c.env_wait_s += start - t;
        }
        let tr = &mut self.traj[k as usize];
        tr.call_start = start;
        tr.ret = ret;
        tr.call_fails = fails;
        tr.in_tool = true;
        ret
    }

    /// The returning request whose record is at `k` lands on a slot of instance `inst`: its prefill tokens (a KV
    /// hit when `inst` is the instance `instance_of` gives for the slot of its last turn), `None`
    /// if it is not returning from a call.
    #[inline(always)]
    pub fn landing_prefill(&mut self, k: u32, inst: u32, instance_of: impl Fn(u32) -> u32, t: f64) -> Option<f64> {
        let tr = Some(&mut self.traj[k as usize]).filter(|t| t.returning)?;
        tr.returning = false;
        let tokens = if inst == instance_of(tr.slot) { tr.hit } else { tr.miss };
        if !self.reuse {
            let c = &mut self.cold[k as usize];
            c.turn_start = t;
            c.prefill += tokens;
        }
        self.s.tokens_prefilled_turns += tokens;
        Some(tokens)
    }
}

#[inline]
fn scale(cfg: &AgenticConfig, turn: u32) -> f64 {
    match cfg.turn_scale.len() {
        0 => 1.0,
        n => cfg.turn_scale[(turn as usize).min(n - 1)],
    }
}

impl<D: Draw, P: Placement> Pool<'_, D, P> {
    /// The request on `slot` has decoded its turn at `self.t`. If its trajectory goes on, it leaves
    /// for a tool call (its slot released, or held) and `true` is returned (the caller refills a
    /// released slot); otherwise `false` (the caller finishes it).
    pub(crate) fn turn_end(&mut self, slot: u32, timers: &mut Timers) -> bool {
        let sc = self.sc;
        let cfg = sc.agentic.as_ref().expect("agentic");
        let a = self.agent.as_deref_mut().expect("agentic");
        let mut r = self.slots[slot as usize].expect("a slot event comes from a busy slot");
        let t = self.t;
        let prompt = sc.prefill.prompt_tokens;
        let k = a.index[r.id as usize];
        let tr = &mut a.traj[k as usize];
        tr.turns += 1;
        a.s.turns += 1;
        let cut = tr.cut;
        if cut {
            tr.truncated = true;
            a.s.trajectories_truncated += 1;
        }
        if cut || tr.turns >= cfg.max_turns || (cfg.stop_prob > 0.0 && a.rng.uniform() < cfg.stop_prob) {
            a.turn_row(r.id, slot, r.seg_version, t, f64::NAN);
            a.end(k);
            return false;
        }
        let obs = cfg.observation_tokens.draw(&mut a.rng);
        let tr = &mut a.traj[k as usize];
        let ctx = prompt + r.length + tr.observed + obs;
        if ctx >= cfg.max_context_tokens {
            // the observation does not fit: the trajectory ends here, truncated
            tr.truncated = true;
            a.s.trajectories_truncated += 1;
            a.turn_row(r.id, slot, r.seg_version, t, f64::NAN);
            a.end(k);
            return false;
        }
        let g = &self.groups[r.group as usize];
        let drawn = self.draw.answer(g.prompt);
        let mut next = self.draw.at_start(drawn) * scale(cfg, tr.turns);
        if next >= cfg.max_context_tokens - ctx {
            next = cfg.max_context_tokens - ctx;
            tr.cut = true;
        }
        tr.observed += obs;
        a.s.tokens_observed += obs;
        // this turn's tokens, then the next turn's target
        self.rec.decoded(r.length - r.done);
        r.done = r.length;
        r.length += next;
        if let Some(c) = &mut self.rec.samples {
            c.length_tokens[r.id as usize] = r.length;
        }
        // prefill of the next turn: the observation on top of cached KV, or the whole context
        let cached_prompt = sc.prefill.prefix_sharing
            && g.cache_version != NONE_U32
            && (g.cache_version == self.rollout_version || !sc.prefill.clear_cache_on_update);
        let full = if cached_prompt { 0.0 } else { prompt } + r.done + tr.observed;
        (tr.hit, tr.miss) = match cfg.kv_policy {
            KvPolicy::Keep | KvPolicy::Hold => (obs, full),
            KvPolicy::Drop => (full, full),
        };
        tr.slot = slot;
        tr.req = r;
        self.slots[slot as usize] = None;
        if cfg.kv_policy == KvPolicy::Hold {
            // the slot idles, busy, until the call returns, and keeps the KV it held (not
            // evictable: it counts against the instance's capacity like a running request's)
            self.placement.hold(slot, prompt + r.done, t);
        } else {
            self.busy -= 1;
            if cfg.kv_policy == KvPolicy::Keep {
                // the KV it held stays cached on its instance (counted against its capacity)
                self.placement.finished_caching(slot, t, r.id, prompt + r.done);
            } else {
                self.placement.finished(slot, t);
            }
        }
        let ret = a.call(cfg, k, t);
        a.turn_row(r.id, slot, r.seg_version, t, ret);
        if cfg.kv_policy == KvPolicy::Hold {
            a.s.gpu_hold_s += ret - t;
        }
        self.rec.s.events += 1;
        timers.push_inline(ret, EventKind::ToolReturn, r.id);
        true
    }

    /// The tool call of trajectory `id` returns at `self.t`: a failed call is retried or ends the
    /// trajectory; otherwise its next turn is routed (or waits for a slot).
    #[inline(always)]
    pub(crate) fn tool_return(&mut self, id: u32, timers: &mut Timers) -> Result<()> {
        let sc = self.sc;
        let cfg = sc.agentic.as_ref().expect("agentic");
        let t = self.t;
        self.rec.s.events += 1;
        let a = self.agent.as_deref_mut().expect("agentic");
        let k = a.index[id as usize];
        let tr = &mut a.traj[k as usize];
        tr.in_tool = false;
        let (mut r, home, fails) = (tr.req, tr.slot, tr.call_fails);
        let hold = cfg.kv_policy == KvPolicy::Hold;
        let cancelled = self.groups[r.group as usize].cancelled;
        if cfg.kv_policy == KvPolicy::Keep && !(fails && !cancelled && cfg.on_failure == OnFailure::Retry) {
            // the cached KV is released when the call returns: its next turn uses it on its
            // instance, or prefills its whole context if it was evicted meanwhile
            if !self.placement.uncache_kv(home, id) {
                tr.hit = tr.miss;
            }
        }
        if fails && !cancelled && cfg.on_failure == OnFailure::Retry {
            if !a.reuse {
                a.cold[k as usize].retries += 1;
            }
            a.s.tool_retries += 1;
            let ret = a.call(cfg, k, t);
            if hold {
                a.s.gpu_hold_s += ret - t;
            }
            timers.push(ret, EventKind::ToolReturn, id);
            return Ok(());
        }
        if fails || cancelled {
            if fails {
                tr.failed = true;
                a.s.trajectories_failed += 1;
                if !cancelled {
                    a.groups_dropped += 1;
                }
            }
            // aborted: its tokens are wasted and its group is dropped
            self.close_span(&mut r);
            self.rec.abort_sample(r.id, r.done, t, r.version_end, r.n_versions);
            if hold {
                self.placement.unhold(home);
                self.busy -= 1;
                self.park(home);
            }
            self.cancel_group(r.group);
            let g = &mut self.groups[r.group as usize];
            g.remaining -= 1;
            if g.remaining == 0 {
                self.free_group(r.group);
            }
            return self.fill_idle();
        }
        tr.returning = true;
        if cfg.switch_version_at_turn && r.seg_version != self.rollout_version {
            self.close_span(&mut r);
            r.seg_version = self.rollout_version;
        }
        if hold {
            self.placement.unhold(home);
            self.busy -= 1;
            self.resume_on(home, r);
            return Ok(());
        }
        if !self.paused && self.pending.is_empty() {
            let inst = self.placement.instance_of(home);
            let to = if cfg.sticky { self.placement.route_on(inst) } else { None };
            if let Some(s) = to.or_else(|| self.placement.route()) {
                self.placement.take(s);
                self.resume_on(s, r);
                return Ok(());
            }
        }
        // no slot free: it waits for one (the pool's queue; `fill_slot` charges its prefill)
        self.pending.push_back(r);
        Ok(())
    }

    /// The returning request `r` starts its next turn on `slot`.
    fn resume_on(&mut self, slot: u32, r: Req) {
        let prefill_s = self.turn_prefill_s(&r, slot).expect("a returning request");
        let delay = self.placement.start_delay(self.t).unwrap_or(0.0);
        self.place(slot, r, prefill_s + delay);
    }

    /// A returning request `r` lands on `slot`: the seconds of its prefill (recorded), or `None`
    /// if `r` is not a trajectory returning from a call.
    #[inline(always)]
    pub(crate) fn turn_prefill_s(&mut self, r: &Req, slot: u32) -> Option<f64> {
        let a = self.agent.as_deref_mut()?;
        let p = &self.placement;
        let k = a.index[r.id as usize];
        let tokens = a.landing_prefill(k, p.instance_of(slot), |s| p.instance_of(s), self.t)?;
        self.rec.prefill(tokens, false);
        let pps = self.sc.prefill.prefill_tokens_per_s;
        Some(if tokens > 0.0 && pps.is_finite() { tokens / pps } else { 0.0 })
    }

    /// The end of the run (after `slot_busy_s` and `kv_wait_s` are final): tokens of trajectories
    /// in a tool call, or of a dropped group waiting for a slot (pending, like requests of dropped
    /// groups still on a slot), their spans closed; the agentic totals and columns into the
    /// recorder.
    pub(crate) fn close_agentic(&mut self) -> f64 {
        let Some(mut a) = self.agent.take() else { return 0.0 };
        let t = self.t;
        let mut pending = 0.0;
        let hold = self.sc.agentic.as_ref().is_some_and(|c| c.kv_policy == KvPolicy::Hold);
        // in sample-id order (the order of the sums below); a reused record is a later
        // trajectory's
        for id in 0..a.index.len() as u32 {
            let tr = a.traj[a.index[id as usize] as usize];
            if !tr.in_tool || tr.req.id != id {
                continue;
            }
            // the part of the call after the end of the run
            a.s.env_busy_s -= (tr.ret - t.max(tr.call_start)).max(0.0);
            if hold {
                a.s.gpu_hold_s -= (tr.ret - t).max(0.0);
            }
            let mut r = tr.req;
            self.close_in_flight(&mut r);
            pending += r.done;
        }
        // trajectories back from a call, waiting for a slot, of a group dropped meanwhile (the
        // pool counts those of live groups)
        let waiting: Vec<Req> = self.pending.iter().copied().collect();
        for mut r in waiting {
            if r.id != NONE_U32 && self.groups[r.group as usize].cancelled {
                self.close_in_flight(&mut r);
                pending += r.done;
            }
        }
        let cfg = self.sc.agentic.as_ref().expect("agentic");
        let pps = self.sc.prefill.prefill_tokens_per_s;
        a.s.kv_evictions = self.placement.evictions();
        let rs = &self.rec.s;
        // prefill recorded when a request was placed, less what is still ahead at the end: a
        // prefill that starts at the end of the run, or has not started (waiting for KV)
        let ahead: f64 = (0..self.slots.len() as u32)
            .filter_map(|s| self.slots[s as usize].map(|r| self.placement.prefill_ahead(s, &r, t)))
            .sum();
        a.s.gpu_prefill_s = if pps.is_finite() { (rs.tokens_prefilled / pps - ahead).max(0.0) } else { 0.0 };
        a.s.gpu_decode_s = (rs.slot_busy_s - a.s.gpu_hold_s - a.s.gpu_prefill_s - rs.kv_wait_s).max(0.0);
        a.s.env_mean_busy = if t > 0.0 { a.s.env_busy_s / t } else { 0.0 };
        a.s.env_utilization =
            if cfg.env_slots > 0 && t > 0.0 { a.s.env_busy_s / (cfg.env_slots as f64 * t) } else { f64::NAN };
        let columns = self.rec.samples.is_some().then(|| {
            let mut c = AgenticColumns::default();
            for (tr, cold) in a.traj.iter().zip(&a.cold) {
                c.turns.push(tr.turns);
                c.tokens_observed.push(tr.observed);
                c.tool_s.push(cold.tool_s);
                c.env_wait_s.push(cold.env_wait_s);
                c.prefill_tokens.push(cold.prefill);
                c.tool_retries.push(cold.retries);
                c.truncated.push(tr.truncated);
                c.failed.push(tr.failed);
            }
            c
        });
        self.rec.agentic = Some(AgenticResult { summary: a.s.clone(), columns, turns: a.turns.take() });
        pending
    }
}
