//! Batch pipelines: synchronous (`k = 0`) and k-step off-policy (`k >= 1`).
//!
//! Batch `i` starts generating at `max(end of batch i-1's generation, end of training step i-k-1)`,
//! with the newest policy version available then. Inside a batch, the first `rollout_slots` samples
//! start at once and every later one starts on the slot that frees first (continuous batching);
//! the batch is generated when its last sample finishes. Training step `i` starts when batch `i` is
//! generated and step `i-1` has ended, and lasts `train_step_s`.
//!
//! Horizon: only batches whose generation starts before `horizon_s` run, each to the end of its
//! training step; the run ends when the last one does (the chapter's `while t < HOURS * 3600` over
//! whole steps).

use crate::engine::Control;
use crate::error::Result;
use crate::lengths::Draw;
use crate::queue::SlotQueue;
use crate::record::Recorder;
use crate::scenario::Scenario;

struct InFlight {
    id: u32,
    length: f64,
    start: f64,
}

pub(crate) fn run<D: Draw>(sc: &Scenario, k: u32, mut draw: D, rec: &mut Recorder, ctl: &mut Control) -> Result<f64> {
    let slots = sc.rollout_slots as usize;
    let batch = sc.batch_size as usize;
    let k = k as usize;
    let speed = sc.decode_tokens_per_s;
    let mut queue = SlotQueue::new(slots);
    let mut in_flight: Vec<InFlight> = Vec::with_capacity(slots);
    let mut train_end: Vec<f64> = Vec::new();
    let mut batch_ids: Vec<(u32, f64, u32)> = Vec::with_capacity(batch); // (id, length, version)
    let mut gen_end_prev = 0.0f64;
    let mut next_id: u64 = 0;

    for i in 0.. {
        let gate = if i > k { train_end[i - k - 1] } else { 0.0 };
        let g = gen_end_prev.max(gate);
        if g >= sc.horizon_s {
            break;
        }
        // Newest version available at g: steps ended at or before g (trainer events come first).
        let version = train_end.partition_point(|te| *te <= g) as u32;
        batch_ids.clear();
        queue.clear();
        in_flight.clear();
        let first = slots.min(batch);
        for slot in 0..first {
            let id = ctl.admit(next_id)?;
            next_id += 1;
            let n = draw.draw();
            rec.start(n, g, version, slot as u32);
            in_flight.push(InFlight {
                id,
                length: n,
                start: g,
            });
        }
        for (s, f) in in_flight.iter().enumerate() {
            queue.set(s as u32, g + f.length / speed, f.id);
        }
        let mut remaining = batch - first;
        let mut t = g;
        while let Some(ev) = queue.peek() {
            t = ev.time;
            let slot = ev.slot as usize;
            let f = &in_flight[slot];
            rec.finish(f.id, f.length, f.start, t);
            batch_ids.push((f.id, f.length, version));
            ctl.tick(rec.s.events)?;
            if remaining > 0 {
                remaining -= 1;
                let id = ctl.admit(next_id)?;
                next_id += 1;
                let n = draw.draw();
                rec.start(n, t, version, slot as u32);
                in_flight[slot] = InFlight {
                    id,
                    length: n,
                    start: t,
                };
                queue.set(slot as u32, t + n / speed, id);
            } else {
                queue.set_idle(slot as u32);
            }
        }
        let gen_end = t;
        let prev_end = if i > 0 { train_end[i - 1] } else { 0.0 };
        let ts = gen_end.max(prev_end);
        let step = i as u32;
        let (mut st_sum, mut st_max, mut tokens) = (0u64, 0u32, 0.0);
        for &(id, length, v) in &batch_ids {
            let st = rec.train_sample(id, length, v, step);
            st_sum += st as u64;
            st_max = st_max.max(st);
            tokens += length;
        }
        let te = ts + sc.train_step_s;
        rec.step(ts, te, ts - prev_end, st_sum, st_max, batch as u32, 0, tokens);
        train_end.push(te);
        gen_end_prev = gen_end;
    }
    Ok(*train_end
        .last()
        .expect("the first batch always starts at t = 0 < horizon_s"))
}
