//! Fully asynchronous (streaming) pipeline, the chapter's `fully_async`.
//!
//! All slots start a sample at t = 0 with version 0. A slot that frees starts a new sample at once
//! with the newest policy version. Finished samples join the ready queue in finish order; whenever
//! the trainer is idle and the queue holds `batch_size` samples, it takes the first `batch_size`
//! (first finished, first trained) and trains for `train_step_s`; the end of the step bumps the
//! version. With `max_staleness = Some(c)`, a queued sample whose staleness (current version minus
//! its start version) exceeds `c` is dropped, checked after every event, as the chapter does.
//!
//! Horizon: events are processed while the clock is before `horizon_s`; the event that reaches or
//! crosses it is the last one processed, and its time is the end of the run (the chapter's
//! `while t < HOURS * 3600` loop). At equal times the trainer's event comes before slot events.

use std::collections::VecDeque;

use crate::engine::Control;
use crate::error::Result;
use crate::lengths::Draw;
use crate::queue::SlotQueue;
use crate::record::Recorder;
use crate::scenario::Scenario;

#[derive(Clone, Copy)]
struct Sample {
    id: u32,
    version: u32,
    length: f64,
    start: f64,
}

pub(crate) fn run<D: Draw>(
    sc: &Scenario,
    cap: Option<u32>,
    mut draw: D,
    rec: &mut Recorder,
    ctl: &mut Control,
) -> Result<f64> {
    let slots = sc.rollout_slots as usize;
    let batch = sc.batch_size as usize;
    let speed = sc.decode_tokens_per_s;
    let horizon = sc.horizon_s;
    let mut queue = SlotQueue::new(slots);
    let mut in_flight: Vec<Sample> = Vec::with_capacity(slots);
    let mut ready: VecDeque<Sample> = VecDeque::new();
    let mut next_id: u64 = 0;
    let mut version: u32 = 0;
    let mut next_train: Option<f64> = None;
    let mut last_train_end = 0.0f64;
    let mut t = 0.0f64;

    for slot in 0..slots {
        let id = ctl.admit(next_id)?;
        next_id += 1;
        let n = draw.draw();
        rec.start(n, 0.0, 0, slot as u32);
        in_flight.push(Sample {
            id,
            version: 0,
            length: n,
            start: 0.0,
        });
    }
    for (s, x) in in_flight.iter().enumerate() {
        queue.set(s as u32, x.length / speed, x.id);
    }

    while t < horizon {
        let ev = queue.peek().expect("every slot always holds a sample");
        match next_train {
            Some(nt) if nt <= ev.time => {
                // The trainer's step ends first: bump the version.
                t = nt;
                version += 1;
                next_train = None;
                last_train_end = nt;
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
                t = ev.time;
                let slot = ev.slot as usize;
                let done = in_flight[slot];
                rec.finish(done.id, done.length, done.start, t);
                match cap {
                    Some(c) if version - done.version > c => rec.drop_sample(done.id, done.length),
                    _ => ready.push_back(done),
                }
                let id = ctl.admit(next_id)?;
                next_id += 1;
                let n = draw.draw();
                rec.start(n, t, version, slot as u32);
                in_flight[slot] = Sample {
                    id,
                    version,
                    length: n,
                    start: t,
                };
                queue.set(slot as u32, t + n / speed, id);
                ctl.tick(rec.s.events)?;
            }
        }
        if next_train.is_none() && ready.len() >= batch {
            let (mut st_sum, mut st_max, mut tokens) = (0u64, 0u32, 0.0);
            for s in ready.drain(..batch) {
                let st = rec.train_sample(s.id, s.length, s.version, version);
                st_sum += st as u64;
                st_max = st_max.max(st);
                tokens += s.length;
            }
            rec.step(
                t,
                t + sc.train_step_s,
                t - last_train_end,
                st_sum,
                st_max,
                batch as u32,
                ready.len() as u32,
                tokens,
            );
            next_train = Some(t + sc.train_step_s);
        }
    }

    // Close the books at the end of the run: partial work of the samples still in flight.
    for s in &in_flight {
        let busy = (t - s.start).max(0.0);
        rec.s.slot_busy_s += busy;
        rec.s.tokens_generated += busy * speed;
        rec.s.tokens_pending += busy * speed;
    }
    rec.s.tokens_pending += ready.iter().map(|s| s.length).sum::<f64>();
    Ok(t)
}
