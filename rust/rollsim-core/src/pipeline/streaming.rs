//! The streaming (fully asynchronous) pipeline: the chapter's `fully_async` and the rules of real
//! systems (groups, staleness control, admission control, batch order, weight-update modes).
//!
//! With the defaults (groups of one, no prefill cost, a drop-at-consumption cap or none, first
//! finished first trained, in-flight requests continue) it is the chapter's model exactly: all
//! slots start a sample at t = 0 with version 0; a slot that frees starts a new sample at once with
//! the newest version; finished samples join the ready queue in finish order; whenever the trainer
//! is idle and `batch_size` samples are ready it takes them and trains for `train_step_s`; the end
//! of the step bumps the version. A ready sample staler than the cap is dropped (checked after every
//! event).
//!
//! Horizon: events are processed while the clock is before `horizon_s`; the event that reaches or
//! crosses it is the last one processed, and its time is the end of the run. Events go in the
//! order of `event` (at equal times the trainer's step end first, slot events in start order).

use std::collections::VecDeque;

use super::placement::Placement;
use super::pool::Pool;
use super::trainer::{Batch, Trainer};
use crate::engine::Control;
use crate::error::Result;
use crate::event::{EventKind, Timers, NEVER};
use crate::lengths::Draw;
use crate::record::Recorder;
use crate::scenario::{BatchOrder, LagRelease, OnStale, OnUpdate, Scenario, StalenessCheck, Streaming};

/// The streaming pipeline's state: the pool, the trainer, the ready queue and admission control.
struct StreamingPipeline<'a, D: Draw, P: Placement> {
    pool: Pool<'a, D, P>,
    /// The trainer's version (steps completed) is `trainer.version`; the rollout's is
    /// `pool.rollout_version`.
    trainer: Trainer,
    opt: &'a Streaming,
    /// Ready groups per length bucket, in completion order.
    ready: Vec<VecDeque<u32>>,
    ready_groups: u32,
    /// Groups per batch.
    need: usize,
    edges: Vec<f64>,
    draining: bool,
    /// Pending events other than the slots': the trainer's step end.
    timers: Timers,
    /// Samples accepted into the ready queue, and trained (cumulative).
    accepted: u64,
    trained: u64,
    /// Trained samples of the steps that have ended, and trained samples no longer counted
    /// against `max_lag_samples` (`trained` itself with `LagRelease::Take`).
    trained_ended: u64,
    released: u64,
}

pub(crate) fn run<'a, D: Draw, P: Placement>(
    sc: &'a Scenario,
    opt: &'a Streaming,
    draw: D,
    rec: &'a mut Recorder,
    ctl: &'a mut Control<'a>,
) -> Result<f64> {
    let (edges, buckets) = match &opt.batch_order {
        BatchOrder::LengthBalanced { edges, quotas } => (edges.clone(), quotas.len()),
        _ => (Vec::new(), 1),
    };
    let mut e = StreamingPipeline::<D, P> {
        pool: Pool::new(sc, draw, rec, ctl),
        trainer: Trainer::new(sc),
        opt,
        ready: vec![VecDeque::new(); buckets],
        ready_groups: 0,
        need: (sc.batch_size / sc.group_size) as usize,
        edges,
        draining: false,
        timers: Timers::new(),
        accepted: 0,
        trained: 0,
        trained_ended: 0,
        released: 0,
    };
    e.set_budget();
    e.pool.fill_idle()?;
    e.main_loop()?;
    let pending = e.pool.close();
    e.pool.rec.s.tokens_pending += pending;
    Ok(e.pool.t)
}

impl<'a, D: Draw, P: Placement> StreamingPipeline<'a, D, P> {
    fn main_loop(&mut self) -> Result<()> {
        let horizon = self.pool.sc.horizon_s;
        while self.pool.t < horizon {
            let next_timer = self.timers.peek();
            match self.pool.next_event(next_timer)? {
                Some(ev) if ev.key < next_timer => {
                    self.pool.advance(ev.time);
                    let completed = self.slot_finished(ev.slot)?;
                    self.pool.ctl.tick(self.pool.rec.s.events)?;
                    if completed {
                        self.maybe_batch()?;
                    }
                }
                _ if next_timer != NEVER => {
                    let timer = self.timers.pop_inline().expect("a timer");
                    self.pool.advance(timer.time);
                    match timer.kind {
                        EventKind::StepEnd => {
                            // a step (`Summary::events` counts them at the end of the run)
                            self.pool.ctl.tick_inner(self.pool.rec.s.events)?;
                            self.step_ended()?
                        }
                        EventKind::ToolReturn => {
                            self.pool.tool_return(timer.id, &mut self.timers)?;
                            self.pool.ctl.tick(self.pool.rec.s.events)?;
                        }
                        k => unreachable!("no {k:?} timers in the streaming pipeline"),
                    }
                    self.maybe_batch()?;
                }
                _ => {
                    self.pool.rec.s.stalled = true;
                    break;
                }
            }
        }
        Ok(())
    }

    /// How many new groups admission control lets start now.
    #[inline]
    fn set_budget(&mut self) {
        let sc = self.pool.sc;
        let n = sc.group_size as u64;
        let mut budget = u64::MAX;
        if let Some(eta) = self.opt.admission_eta {
            // AReaL: (eta + version + 1) * batch - (accepted + running), in samples
            let cap = (eta as u64 + self.trainer.version as u64 + 1) * sc.batch_size as u64;
            budget = budget.min(cap.saturating_sub(self.accepted + self.pool.in_progress) / n);
        }
        if let Some(max_lag) = self.opt.max_lag_samples {
            let alive = self.pool.admitted - self.released - self.pool.rec.s.samples_dropped;
            budget = budget.min(max_lag.saturating_sub(alive) / n);
        }
        self.pool.admit_budget = budget;
    }

    /// A slot's request finished; returns whether its group completed (a batch may be ready:
    /// the ready queue grows only here and the trainer frees only at a step's end).
    fn slot_finished(&mut self, slot: u32) -> Result<bool> {
        if self.pool.agent.is_some() && self.pool.turn_end(slot, &mut self.timers) {
            // the trajectory goes on after a tool call: its slot is released (refilled) or held
            return self.turn_ended(slot).map(|()| false);
        }
        let completed = self.pool.finish(slot);
        if let Some(g) = completed {
            self.group_completed(g);
        }
        if self.draining && self.pool.busy == 0 {
            self.apply_update();
        }
        if self.opt.admission_eta.is_some() || self.opt.max_lag_samples.is_some() {
            self.set_budget();
        }
        self.pool.refill(slot)?;
        Ok(completed.is_some())
    }

    /// A trajectory left `slot` for a tool call.
    #[inline]
    fn turn_ended(&mut self, slot: u32) -> Result<()> {
        if self.draining && self.pool.busy == 0 {
            self.apply_update();
        }
        let held = self.pool.sc.agentic.as_ref().is_some_and(|a| a.kv_policy == super::agentic::KvPolicy::Hold);
        if held {
            Ok(())
        } else {
            self.pool.refill(slot)
        }
    }

    fn group_completed(&mut self, g: u32) {
        let grp = &self.pool.groups[g as usize];
        self.accepted += grp.size as u64;
        if let Some(cap) = self.opt.max_staleness {
            if self.trainer.version - self.checked_version(g) > cap {
                self.stale(g);
                return;
            }
        }
        let b = self.edges.partition_point(|e| *e <= grp.max_len);
        self.ready[b].push_back(g);
        self.ready_groups += 1;
        if let Some(max) = self.opt.max_ready_groups {
            while self.ready_groups > max {
                // the oldest finished group, whatever its bucket
                let b = (0..self.ready.len())
                    .filter(|b| !self.ready[*b].is_empty())
                    .min_by_key(|b| self.pool.groups[self.ready[*b][0] as usize].seq)
                    .expect("ready groups exist");
                let old = self.ready[b].pop_front().expect("non-empty bucket");
                self.ready_groups -= 1;
                self.pool.discard(old);
            }
        }
    }

    /// The version a finished group's staleness is checked against: its oldest member's start
    /// version, or (`StalenessCheck::Finish`) the oldest version at which a member finished.
    #[inline]
    fn checked_version(&self, g: u32) -> u32 {
        let grp = &self.pool.groups[g as usize];
        match self.pool.sc.staleness_check {
            StalenessCheck::Start => grp.min_version,
            StalenessCheck::Finish => grp.members.iter().map(|m| m.version_finish).min().unwrap_or(grp.min_version),
        }
    }

    /// A finished group is too stale: drop it, and regenerate its prompt first if asked.
    fn stale(&mut self, g: u32) {
        let prompt = self.pool.groups[g as usize].prompt;
        self.pool.discard(g);
        if self.opt.on_stale == OnStale::Requeue {
            self.pool.rec.s.groups_requeued += 1;
            self.pool.queue_group(Some(prompt));
        }
    }

    fn step_ended(&mut self) -> Result<()> {
        self.trainer.step_ended();
        self.trained_ended = self.trained;
        let sc = self.pool.sc;
        if sc.synced_version(self.trainer.version) == self.pool.rollout_version {
            // not a sync step (`sync_every`): the rollout keeps the weights it has
        } else if self.opt.on_update == OnUpdate::Wait {
            self.draining = true;
            self.pool.paused = true;
            if self.pool.busy == 0 {
                self.apply_update();
            }
        } else {
            self.apply_update();
        }
        if let Some(cap) = self.opt.max_staleness {
            let version = self.trainer.version;
            for b in 0..self.ready.len() {
                let mut kept = VecDeque::with_capacity(self.ready[b].len());
                while let Some(g) = self.ready[b].pop_front() {
                    if version - self.checked_version(g) > cap {
                        self.ready_groups -= 1;
                        self.stale(g);
                    } else {
                        kept.push_back(g);
                    }
                }
                self.ready[b] = kept;
            }
        }
        self.set_budget();
        self.pool.fill_idle()
    }

    fn apply_update(&mut self) {
        self.draining = false;
        self.pool.paused = false;
        let version = self.pool.sc.synced_version(self.trainer.version);
        self.pool.update(version, self.opt.on_update);
        if self.opt.lag_release == LagRelease::Sync {
            // the new weights are in the rollout: the samples they were trained on free their places
            self.released = self.trained_ended;
        }
    }

    /// Starts a step if the trainer is idle and a batch is ready.
    #[inline]
    fn maybe_batch(&mut self) -> Result<()> {
        // necessary for every batch order: an idle trainer and enough ready groups
        if self.trainer.busy() || (self.ready_groups as usize) < self.need {
            return Ok(());
        }
        self.try_batch()
    }

    #[inline(never)]
    fn try_batch(&mut self) -> Result<()> {
        let sc = self.pool.sc;
        let need = self.need;
        let groups = &self.pool.groups;
        let taken: Vec<u32> = match &self.opt.batch_order {
            BatchOrder::Fifo => {
                if self.ready[0].len() < need {
                    return Ok(());
                }
                // the oldest `need` groups, copied from the queue's two halves
                let (a, b) = self.ready[0].as_slices();
                let mut v = Vec::with_capacity(need);
                let from_a = a.len().min(need);
                v.extend_from_slice(&a[..from_a]);
                v.extend_from_slice(&b[..need - from_a]);
                self.ready[0].drain(..need);
                v
            }
            BatchOrder::OldestFirst => {
                if self.ready[0].len() < need {
                    return Ok(());
                }
                let mut all: Vec<u32> = self.ready[0].drain(..).collect();
                all.sort_by_key(|g| (groups[*g as usize].min_version, groups[*g as usize].seq));
                let mut rest = all.split_off(need);
                rest.sort_by_key(|g| groups[*g as usize].seq);
                self.ready[0] = rest.into();
                all
            }
            BatchOrder::LengthBalanced { quotas, .. } => {
                // each bucket's minimum first, then the oldest finished groups of any bucket
                if (self.ready_groups as usize) < need
                    || quotas.iter().zip(&self.ready).any(|(q, r)| r.len() < *q as usize)
                {
                    return Ok(());
                }
                let mut v = Vec::with_capacity(need);
                for (b, q) in quotas.iter().enumerate() {
                    v.extend(self.ready[b].drain(..*q as usize));
                }
                while v.len() < need {
                    let b = (0..self.ready.len())
                        .filter(|b| !self.ready[*b].is_empty())
                        .min_by_key(|b| groups[self.ready[*b][0] as usize].seq)
                        .expect("enough ready groups");
                    v.push(self.ready[b].pop_front().expect("non-empty bucket"));
                }
                v
            }
        };
        self.ready_groups -= taken.len() as u32;
        let mut batch = Batch::default();
        for g in taken {
            self.trainer.take_group(self.pool.rec, &mut batch, &self.pool.groups[g as usize]);
            self.pool.free_group(g);
        }
        self.trained += batch.samples() as u64;
        self.pool.draw.trained(batch.tokens(), batch.samples());
        if self.opt.lag_release == LagRelease::Take {
            self.released = self.trained;
        }
        let t = self.pool.t;
        let ready_after = self.ready_groups * sc.group_size;
        let idle = sc.rollout_slots as f64 * t - self.pool.busy_s;
        self.trainer.start_step(self.pool.rec, &mut self.timers, t, &batch, ready_after, idle);
        if self.opt.max_lag_samples.is_some() && self.opt.lag_release == LagRelease::Take {
            // trained samples free lag budget
            self.set_budget();
            self.pool.fill_idle()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::{LagRelease, Pipeline, Scenario, Streaming};
    use crate::{run_simple, RunOptions};

    /// With a bound of one batch, releasing places at the sync makes generation and training
    /// alternate (staleness 0); releasing them when the batch is taken lets the next batch start
    /// on the old weights (staleness 1 after the first step).
    #[test]
    fn lag_release_at_sync_keeps_one_batch_on_policy() {
        let staleness = |release| {
            let opt = Streaming { max_lag_samples: Some(512), lag_release: release, ..Streaming::default() };
            let sc = Scenario { pipeline: Pipeline::FullyAsync(opt), ..Scenario::default() };
            let r = run_simple(&sc, &RunOptions::default()).expect("valid scenario");
            let s = r.samples.expect("recorded");
            let mut by_step = std::collections::BTreeMap::<i64, u32>::new();
            for (i, &step) in s.trained_step.iter().enumerate() {
                if step >= 0 {
                    let st = (step as u32) - s.version_start[i];
                    let e = by_step.entry(step).or_insert(st);
                    *e = (*e).max(st);
                }
            }
            by_step
        };
        let gated = staleness(LagRelease::Sync);
        assert!(gated.len() > 3 && gated.values().all(|&m| m == 0), "{gated:?}");
        let taken = staleness(LagRelease::Take);
        assert!(taken.len() > 3 && taken[&0] == 0 && taken.iter().skip(1).all(|(_, &m)| m == 1), "{taken:?}");
        let bad = Scenario {
            pipeline: Pipeline::FullyAsync(Streaming { lag_release: LagRelease::Sync, ..Streaming::default() }),
            ..Scenario::default()
        };
        assert!(bad.validate().unwrap_err().to_string().starts_with("pipeline.lag_release:"));
    }
}
