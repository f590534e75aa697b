//! Entry points: validate a scenario, pick the generator and the pipeline once, run the event loop.

use crate::error::{Error, Result};
use crate::lengths::{Draw, Drifted, EmpiricalDraw, Lengths, LogNormalDraw};
use crate::pipeline;
use crate::pipeline::placement::Slots;
use crate::pipeline::Instances;
use crate::record::{Recorder, RunResult};
use crate::rng::{FastRng, PyRandom, Source};
use crate::scenario::{Pipeline, RngKind, Scenario, Streaming};

/// How much to record and when to give up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunOptions {
    /// Record one row per sample (`false`: summary and steps only, for sweeps).
    pub record_samples: bool,
    /// Refuse to start more samples than this (a memory guard): `Error::TooManySamples`.
    pub max_samples: u64,
    /// Call the interrupt check every this many events (and every this many of the pool's own
    /// events inside one step of the loop: KV preemptions, evictions, shared-prefill ends, speed
    /// refreshes).
    pub check_every: u64,
    /// Stop with `Error::TooManyEvents` when the run has processed more events than this, the
    /// pool's own and the steps included (checked with the interrupt: within `check_every` events
    /// of it).
    pub max_events: u64,
    /// Run the general streaming engine even where the specialized fully-asynchronous fast path
    /// applies (for cross-checking the two).
    pub general_engine: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            record_samples: true,
            max_samples: 50_000_000,
            check_every: 1 << 16,
            max_events: u64::MAX,
            general_engine: false,
        }
    }
}

/// Runs `sc` to the end. `interrupt` is called every `opts.check_every` events; returning `true`
/// stops the run with [`Error::Interrupted`].
pub fn run(sc: &Scenario, opts: &RunOptions, interrupt: &mut dyn FnMut() -> bool) -> Result<RunResult> {
    sc.validate()?;
    if opts.max_samples == 0 || opts.max_samples > u32::MAX as u64 {
        return Err(Error::field("max_samples", format!("must be in [1, {}], got {}", u32::MAX, opts.max_samples)));
    }
    match sc.rng {
        RngKind::Python => with_lengths(sc, PyRandom::new(sc.seed), opts, interrupt),
        RngKind::Fast => with_lengths(sc, FastRng::new(sc.seed), opts, interrupt),
    }
}

/// Whether `run` takes the specialized fully-asynchronous fast path for `sc` (unless
/// `RunOptions::general_engine`): the chapter's rules exactly, faster.
pub fn uses_fast_path(sc: &Scenario) -> bool {
    pipeline::fully_async::applies(sc)
}

/// Runs `sc` without an interrupt check.
pub fn run_simple(sc: &Scenario, opts: &RunOptions) -> Result<RunResult> {
    run(sc, opts, &mut || false)
}

fn with_lengths<S: Source>(
    sc: &Scenario,
    src: S,
    opts: &RunOptions,
    interrupt: &mut dyn FnMut() -> bool,
) -> Result<RunResult> {
    match &sc.lengths {
        Lengths::LogNormal { mu, sigma, max_tokens, group_correlation } => {
            with_drift(sc, LogNormalDraw::new(src, *mu, *sigma, *max_tokens, *group_correlation), opts, interrupt)
        }
        Lengths::Empirical { values, cum_weights, group_offsets } => with_drift(
            sc,
            EmpiricalDraw {
                src,
                values: values.clone(),
                cum_weights: cum_weights.clone(),
                group_offsets: group_offsets.clone(),
            },
            opts,
            interrupt,
        ),
    }
}

/// Wraps the sampler in [`Drifted`] only when the lengths drift (the others run the plain sampler,
/// whose version hooks compile to nothing).
fn with_drift<D: Draw>(
    sc: &Scenario,
    draw: D,
    opts: &RunOptions,
    interrupt: &mut dyn FnMut() -> bool,
) -> Result<RunResult> {
    match &sc.length_drift {
        None => with_pipeline(sc, draw, opts, interrupt),
        Some(d) => with_pipeline(sc, Drifted::new(draw, d.clone()), opts, interrupt),
    }
}

fn with_pipeline<D: Draw>(
    sc: &Scenario,
    draw: D,
    opts: &RunOptions,
    interrupt: &mut dyn FnMut() -> bool,
) -> Result<RunResult> {
    let mut rec = Recorder::new(opts.record_samples);
    if sc.train.is_some() {
        rec.steps.ranks = Some(Default::default()); // its columns even when no step starts
    }
    let mut ctl = Control {
        interrupt,
        max_samples: opts.max_samples,
        check_every: opts.check_every.max(1),
        next_check: 0,
        max_events: opts.max_events,
        inner: 0,
        next_inner: 0,
    };
    let batched = sc.decode_is_batched();
    let (end_s, outrun) = match &sc.pipeline {
        Pipeline::OffPolicy { k, partial } if batched => {
            (pipeline::batch::run::<D, Instances>(sc, *k, partial, draw, &mut rec, &mut ctl)?, false)
        }
        Pipeline::OffPolicy { k, partial } => {
            (pipeline::batch::run::<D, Slots>(sc, *k, partial, draw, &mut rec, &mut ctl)?, false)
        }
        Pipeline::FullyAsync(opt) => {
            // generation is unbounded when every option that bounds it is at its default (the
            // others copied: a bound added later counts as one)
            let unbounded = *opt
                == Streaming {
                    on_stale: opt.on_stale,
                    batch_order: opt.batch_order.clone(),
                    on_update: opt.on_update,
                    lag_release: opt.lag_release,
                    ..Streaming::default()
                };
            let end = if uses_fast_path(sc) && !opts.general_engine {
                pipeline::fully_async::run(sc, opt.max_staleness, draw, &mut rec, &mut ctl)?
            } else if batched {
                pipeline::streaming::run::<D, Instances>(sc, opt, draw, &mut rec, &mut ctl)?
            } else {
                pipeline::streaming::run::<D, Slots>(sc, opt, draw, &mut rec, &mut ctl)?
            };
            (end, unbounded)
        }
    };
    let mut res = rec.finish_run(end_s, sc.rollout_slots, outrun, sc.batch_size);
    res.summary.throughput_ratio = sc.throughput_ratio();
    Ok(res)
}

/// Limits and the interrupt check, shared by the pipelines.
pub(crate) struct Control<'a> {
    interrupt: &'a mut dyn FnMut() -> bool,
    max_samples: u64,
    check_every: u64,
    next_check: u64,
    max_events: u64,
    /// The events `Recorder`'s `events` does not count while running (`tick_inner`): the pool's own
    /// (inside `Pool::next_event`: KV preemptions, evictions, shared-prefill ends, speed refreshes)
    /// and the steps (a batch's start, a step's end; the summary adds the steps at the end); and
    /// when they are checked next.
    inner: u64,
    next_inner: u64,
}

impl Control<'_> {
    /// Called before starting sample `id`.
    #[inline]
    pub fn admit(&self, id: u64) -> Result<u32> {
        if id >= self.max_samples {
            return Err(Error::TooManySamples { limit: self.max_samples });
        }
        Ok(id as u32)
    }

    /// Called with the running event count.
    #[inline]
    pub fn tick(&mut self, events: u64) -> Result<()> {
        if events >= self.next_check {
            self.next_check = events + self.check_every;
            if (self.interrupt)() {
                return Err(Error::Interrupted);
            }
            if events.saturating_add(self.inner) > self.max_events {
                return Err(Error::TooManyEvents { limit: self.max_events });
            }
        }
        Ok(())
    }

    /// Called for each of the pool's own events (`events`: the recorded count, for the budget).
    #[inline]
    pub fn tick_inner(&mut self, events: u64) -> Result<()> {
        self.inner += 1;
        if self.inner >= self.next_inner {
            self.next_inner = self.inner + self.check_every;
            if (self.interrupt)() {
                return Err(Error::Interrupted);
            }
            if events.saturating_add(self.inner) > self.max_events {
                return Err(Error::TooManyEvents { limit: self.max_events });
            }
        }
        Ok(())
    }
}
