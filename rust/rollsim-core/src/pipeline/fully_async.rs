//! The chapter's fully asynchronous pipeline, specialized: one answer per prompt, free prefill,
//! in-flight requests continue across updates, first finished first trained, and an optional
//! drop-at-consumption cap. `streaming` implements the same rules in general (groups, admission
//! control, update modes, ...); this module is its fast path, 1.5x faster on the chapter's scenario
//! (see README "Performance"). It runs a scenario only if the scenario equals its chapter-shaped
//! projection (`applies`), so a field it does not implement sends the run to `streaming`; the
//! crate's `tests/cross_check.rs` and the Python `tests/test_engines.py` check that both give the
//! same frames on generated scenarios.
//!
//! Rules: all slots start a sample at t = 0 with version 0; a slot that frees starts a new sample at
//! once with the newest version; finished samples join the ready queue in finish order; whenever the
//! trainer is idle and `batch_size` samples are ready it takes them and trains for `train_step_s`;
//! the end of the step bumps the version. With a cap, a ready sample whose staleness exceeds it is
//! dropped (checked after every event). Events are processed while the clock is before `horizon_s`;
//! the event that reaches or crosses it is the last one. Events go in the order of `event` (at
//! equal times the trainer's step end first).

use std::collections::VecDeque;

use super::trainer::{Batch, Trainer};
use crate::engine::Control;
use crate::error::Result;
use crate::event::{EventKind, Timers};
use crate::lengths::Draw;
use crate::queue::SlotQueue;
use crate::record::Recorder;
use crate::scenario::{Decode, Pipeline, Prefill, Scenario, Streaming};

#[derive(Clone, Copy)]
struct Sample {
    id: u32,
    version: u32,
    length: f64,
    start: f64,
}

#[derive(Clone, Copy)]
struct Ready {
    id: u32,
    version: u32,
    version_finish: u32,
    length: f64,
}

/// Whether this fast path implements `sc` exactly: `sc` equals its chapter-shaped projection.
pub(crate) fn applies(sc: &Scenario) -> bool {
    chapter_shaped(sc).is_some_and(|p| p == *sc)
}

/// `sc` with every field this fast path does not implement reset to its default. The fields it
/// implements, and those that change nothing in this shape, are copied one by one; anything else,
/// a field added later included, keeps the default, so a scenario that sets it is not
/// chapter-shaped and runs on the general engine.
fn chapter_shaped(sc: &Scenario) -> Option<Scenario> {
    let Pipeline::FullyAsync(opt) = &sc.pipeline else { return None };
    Some(Scenario {
        // implemented
        rollout_slots: sc.rollout_slots,
        decode_tokens_per_s: sc.decode_tokens_per_s,
        batch_size: sc.batch_size,
        train_step_s: sc.train_step_s,
        train_s_per_token: sc.train_s_per_token,
        horizon_s: sc.horizon_s,
        lengths: sc.lengths.clone(),
        length_drift: sc.length_drift.clone(),
        pipeline: Pipeline::FullyAsync(Streaming { max_staleness: opt.max_staleness, ..Streaming::default() }),
        seed: sc.seed,
        rng: sc.rng,
        // instances without a speed model or a KV capacity decode like independent slots
        decode: Decode { slots_per_instance: sc.decode.slots_per_instance, ..Decode::default() },
        // without a prompt, the prefill's speed and caching change nothing
        prefill: Prefill {
            prefill_tokens_per_s: sc.prefill.prefill_tokens_per_s,
            prefix_sharing: sc.prefill.prefix_sharing,
            clear_cache_on_update: sc.prefill.clear_cache_on_update,
            ..Prefill::default()
        },
        // groups of one, no rollout pause, and whatever comes later
        ..Scenario::default()
    })
}

pub(crate) fn run<D: Draw>(
    sc: &Scenario,
    cap: Option<u32>,
    draw: D,
    rec: &mut Recorder,
    ctl: &mut Control,
) -> Result<f64> {
    // the draw's state (2.5 KB with rng=python) on the heap: on the stack of the caller, where
    // the other pipelines' states are inlined, its place moved with their sizes and so did the
    // speed of the loop below
    let mut draw = Box::new(draw);
    let slots = sc.rollout_slots as usize;
    let batch = sc.batch_size as usize;
    let speed = sc.decode_tokens_per_s;
    let horizon = sc.horizon_s;
    let mut queue = SlotQueue::new(slots);
    let mut in_flight: Vec<Sample> = Vec::with_capacity(slots);
    let mut ready: VecDeque<Ready> = VecDeque::new();
    let mut next_id: u64 = 0;
    let mut timers = Timers::new();
    let mut trainer = Trainer::new(sc);
    let mut t = 0.0f64;
    let mut busy_s = 0.0f64;
    let busy = slots as f64; // every slot is always busy

    #[inline]
    fn start<D: Draw>(
        draw: &mut D,
        rec: &mut Recorder,
        ctl: &Control,
        next_id: &mut u64,
        t: f64,
        version: u32,
        slot: u32,
    ) -> Result<Sample> {
        let id = ctl.admit(*next_id)?;
        *next_id += 1;
        let prompt = draw.prompt();
        let n = draw.answer(prompt);
        let n = draw.at_start(n); // a length drift's scale of `version`
        rec.start(n, t, version, slot, id);
        Ok(Sample { id, version, length: n, start: t })
    }
    for slot in 0..slots {
        let s = start(&mut *draw, rec, ctl, &mut next_id, 0.0, 0, slot as u32)?;
        in_flight.push(s);
        queue.set(slot as u32, s.length / speed, s.id);
    }

    while t < horizon {
        let ev = queue.peek().expect("every slot always holds a sample");
        match timers.peek() {
            next if next < ev.key => {
                // The trainer's step ends first: bump the version.
                let timer = timers.pop().expect("a timer");
                debug_assert_eq!(timer.kind, EventKind::StepEnd);
                let nt = timer.time;
                busy_s += busy * (nt - t);
                t = nt;
                trainer.step_ended();
                let version = trainer.version;
                draw.set_version(version);
                if let Some(c) = cap {
                    ready.retain(|s| {
                        let keep = version - s.version <= c;
                        if !keep {
                            rec.drop_sample(s.id, s.length);
                        }
                        keep
                    });
                }
            }
            _ => {
                busy_s += busy * (ev.time - t);
                t = ev.time;
                let slot = ev.slot as usize;
                let done = in_flight[slot];
                let version = trainer.version;
                rec.finish_whole(done.id, done.length, t, done.version, version);
                match cap {
                    Some(c) if version - done.version > c => rec.drop_sample(done.id, done.length),
                    _ => ready.push_back(Ready {
                        id: done.id,
                        version: done.version,
                        version_finish: version,
                        length: done.length,
                    }),
                }
                let s = start(&mut *draw, rec, ctl, &mut next_id, t, version, slot as u32)?;
                in_flight[slot] = s;
                queue.set(slot as u32, t + s.length / speed, s.id);
                ctl.tick(rec.s.events)?;
            }
        }
        if !trainer.busy() && ready.len() >= batch {
            let mut b = Batch::default();
            for s in ready.drain(..batch) {
                trainer.take_sample(rec, &mut b, s.id, s.length, s.version, s.version_finish);
            }
            draw.trained(b.tokens(), b.samples());
            let idle = slots as f64 * t - busy_s;
            trainer.start_step(rec, &mut timers, t, &b, ready.len() as u32, idle);
        }
    }

    // Close the books at the end of the run: partial work of the samples still in flight.
    let mut pending = 0.0;
    for s in &in_flight {
        let decoded = ((t - s.start).max(0.0) * speed).min(s.length);
        rec.decoded(decoded);
        if decoded > 0.0 {
            rec.segment(s.id, s.version, 0.0, decoded);
        }
        pending += decoded;
    }
    pending += ready.iter().map(|s| s.length).sum::<f64>();
    rec.s.tokens_pending += pending;
    rec.s.slot_busy_s = busy_s;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::applies;
    use crate::scenario::{
        BatchOrder, Decode, OnStale, OnUpdate, PartialRollout, Pipeline, Prefill, Scenario, Streaming,
    };

    #[test]
    fn applies_only_to_chapter_shaped_scenarios() {
        let sc = Scenario::default();
        let s = Streaming::default;
        let fa = |o: Streaming| Scenario { pipeline: Pipeline::FullyAsync(o), ..Scenario::default() };
        for yes in [
            sc.clone(),
            Scenario { pipeline: Pipeline::fully_async(Some(2)), train_s_per_token: 0.01, seed: 7, ..sc.clone() },
            Scenario { decode: Decode { slots_per_instance: 32, ..Decode::default() }, ..sc.clone() },
            Scenario {
                prefill: Prefill { prefill_tokens_per_s: 100.0, prefix_sharing: false, ..Prefill::default() },
                ..sc.clone()
            },
        ] {
            assert!(applies(&yes), "{yes:?}");
        }
        for no in [
            Scenario { group_size: 2, ..sc.clone() },
            Scenario {
                decode: Decode { slots_per_instance: 32, slowdown_per_seq: 0.01, ..Decode::default() },
                ..sc.clone()
            },
            Scenario {
                decode: Decode { slots_per_instance: 32, kv_cache_tokens: 1e6, ..Decode::default() },
                ..sc.clone()
            },
            Scenario { prefill: Prefill { prompt_tokens: 1.0, ..Prefill::default() }, ..sc.clone() },
            Scenario { rollout_pause_s: 1.0, ..sc.clone() },
            Scenario { pipeline: Pipeline::OffPolicy { k: 1, partial: PartialRollout::default() }, ..sc.clone() },
            fa(Streaming { on_stale: OnStale::Requeue, ..s() }),
            fa(Streaming { admission_eta: Some(1), ..s() }),
            fa(Streaming { max_lag_samples: Some(1000), ..s() }),
            fa(Streaming { max_ready_groups: Some(10), ..s() }),
            fa(Streaming { batch_order: BatchOrder::OldestFirst, ..s() }),
            fa(Streaming { on_update: OnUpdate::Wait, ..s() }),
        ] {
            assert!(!applies(&no), "{no:?}");
        }
    }
}
