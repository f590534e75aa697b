//! The trainer part: the policy version, training steps (their duration from a [`TrainModel`],
//! their end as a `StepEnd` event), and the consumption of a batch (the staleness and tokens of
//! each sample trained, recorded once for every pipeline). Which finished work goes into a batch,
//! and when, is the pipeline's.

use super::pool::Group;
use crate::event::{EventKind, Timers};
use crate::record::Recorder;
use crate::scenario::Scenario;

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

/// A batch being assembled: what the step's row records.
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
    /// End of the last step started.
    last_end: f64,
}

impl Trainer {
    pub fn new(sc: &Scenario) -> Self {
        Trainer { version: 0, started: 0, model: TrainModel::of(sc), last_end: 0.0 }
    }

    /// A step is running (its end is pending).
    #[inline]
    pub fn busy(&self) -> bool {
        self.started > self.version
    }

    /// Adds a finished sample to `batch` (a group of one).
    #[inline]
    pub fn take_sample(
        &self,
        rec: &mut Recorder,
        batch: &mut Batch,
        id: u32,
        length: f64,
        version_start: u32,
        version_finish: u32,
    ) {
        let st = rec.train_sample(id, length, version_start, version_finish, self.started);
        rec.train_group(st);
        batch.add(st, length);
    }

    /// Adds every member of a finished group to `batch`.
    pub fn take_group(&self, rec: &mut Recorder, batch: &mut Batch, g: &Group) {
        let step = self.started;
        rec.train_group(step.saturating_sub(g.min_version));
        for m in &g.members {
            let st = rec.train_sample(m.id, m.length, m.version_start, m.version_finish, step);
            batch.add(st, m.length);
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
        let end = t + self.model.step_s(batch.tokens);
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
