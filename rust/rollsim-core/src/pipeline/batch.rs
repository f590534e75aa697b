//! Batch pipelines: synchronous (`k = 0`) and k-step off-policy (`k >= 1`), with optional
//! over-sampling and partial rollout.
//!
//! Batch `i` starts generating at `max(end of batch i-1's generation, end of training step i-k-1)`,
//! with the newest policy version available then. Its requests start on the slots in order, each
//! later one on the slot that frees first (continuous batching). The batch is generated when
//! `batch_size / group_size` groups have all their answers; without over-sampling that is every
//! group submitted, so the batch waits for its longest answer. With over-sampling more groups are
//! submitted, and when enough have finished the rest is stopped: aborted (tokens wasted), or kept
//! and resumed first in the next batch with the new weights (`keep_partial`: slime
//! `--partial-rollout`). Training step `i` starts when batch `i` is generated and step `i-1` has
//! ended, and lasts `train_step_s`.
//!
//! Horizon: only batches whose generation starts before `horizon_s` run, each to the end of its
//! training step; the run ends when the last one does (the chapter's `while t < HOURS * 3600` over
//! whole steps).

use super::agentic::KvPolicy;
use super::placement::Placement;
use super::pool::Pool;
use super::trainer::{Batch, Trainer};
use crate::engine::Control;
use crate::error::Result;
use crate::event::{self, EventKind, Timers, NEVER};
use crate::lengths::Draw;
use crate::record::Recorder;
use crate::scenario::{OnUpdate, PartialRollout, Scenario};

pub(crate) fn run<'a, D: Draw, P: Placement>(
    sc: &'a Scenario,
    k: u32,
    partial: &PartialRollout,
    draw: D,
    rec: &'a mut Recorder,
    ctl: &'a mut Control<'a>,
) -> Result<f64> {
    let k = k as usize;
    let need = (sc.batch_size / sc.group_size) as u64;
    let submit = match partial.over_sampling {
        None => need,
        Some(o) if o.is_infinite() => u64::MAX,
        Some(o) => need + (need as f64 * o).ceil() as u64,
    };
    let mut pool = Pool::<D, P>::new(sc, draw, rec, ctl);
    let mut trainer = Trainer::new(sc);
    let mut timers = Timers::new();
    // agentic: the tool calls in flight (`ToolReturn`), apart from the trainer's `timers` (whose
    // step ends only count at a batch's start)
    let mut tools = Timers::new();
    let hold = sc.agentic.as_ref().is_some_and(|a| a.kv_policy == KvPolicy::Hold);
    let mut train_end: Vec<f64> = Vec::new();
    let mut done_groups: Vec<u32> = Vec::with_capacity(need as usize);
    let mut gen_end_prev = 0.0f64;
    let mut carried_groups = 0u64;

    for i in 0.. {
        let gate = if i > k { train_end[i - k - 1] } else { 0.0 };
        let g = gen_end_prev.max(gate);
        if g >= sc.horizon_s {
            break;
        }
        // agentic: calls that return before the batch starts, each at its time (only trajectories
        // of groups a failed call dropped are still in a call after a batch: they are aborted)
        while tools.peek() < event::key(g, EventKind::BatchStart, 0) {
            let timer = tools.pop().expect("a tool call");
            pool.advance(timer.time);
            tool_returned(&mut pool, &mut tools, timer.id)?;
        }
        pool.advance(g);
        // a batch and its step (`Summary::events` counts the steps at the end of the run): a batch
        // that finishes nothing still counts toward the budget
        pool.ctl.tick_inner(pool.rec.s.events)?;
        // Newest version available at g: the steps whose end comes before the batch's start.
        while timers.peek() < event::key(g, EventKind::BatchStart, 0) {
            let timer = timers.pop().expect("a timer");
            debug_assert_eq!(timer.kind, EventKind::StepEnd);
            trainer.step_ended();
        }
        pool.update(sc.synced_version(trainer.version), OnUpdate::Continue);
        pool.admit_budget = submit.saturating_sub(carried_groups);
        done_groups.clear();
        pool.fill_idle()?;
        while (done_groups.len() as u64) < need {
            let next_tool = tools.peek();
            let ev = match pool.next_event(next_tool)? {
                Some(ev) if ev.key < next_tool => ev,
                _ if next_tool != NEVER => {
                    let timer = tools.pop().expect("a tool call");
                    pool.advance(timer.time);
                    tool_returned(&mut pool, &mut tools, timer.id)?;
                    pool.ctl.tick(pool.rec.s.events)?;
                    continue;
                }
                _ => {
                    pool.rec.s.stalled = true;
                    break;
                }
            };
            pool.advance(ev.time);
            if pool.agent.is_some() && pool.turn_end(ev.slot, &mut tools) {
                // the trajectory goes on after a tool call: its slot is released (refilled) or held
                if !hold {
                    pool.refill(ev.slot)?;
                }
                pool.ctl.tick(pool.rec.s.events)?;
                continue;
            }
            if let Some(grp) = pool.finish(ev.slot) {
                done_groups.push(grp);
            }
            pool.ctl.tick(pool.rec.s.events)?;
            if (done_groups.len() as u64) < need {
                pool.refill(ev.slot)?;
            } else {
                pool.park(ev.slot);
            }
        }
        let gen_end = pool.t;
        // Whatever is unfinished is stopped: kept for the next batch, or aborted.
        carried_groups = 0;
        if pool.busy > 0 || !pool.pending.is_empty() {
            pool.stop_all(partial.keep_partial);
            if partial.keep_partial {
                let mut seen: Vec<u32> = pool.pending.iter().map(|r| r.group).collect();
                seen.sort_unstable();
                seen.dedup();
                carried_groups = seen.len() as u64;
            }
        }
        let prev_end = if i > 0 { train_end[i - 1] } else { 0.0 };
        let ts = gen_end.max(prev_end);
        let mut batch = Batch::default();
        for &grp in &done_groups {
            trainer.take_group(pool.rec, &mut batch, &pool.groups[grp as usize]);
            pool.free_group(grp);
        }
        pool.draw.trained(batch.tokens(), batch.samples());
        let idle = sc.rollout_slots as f64 * gen_end - pool.busy_s;
        train_end.push(trainer.start_step(pool.rec, &mut timers, ts, &batch, 0, idle));
        gen_end_prev = gen_end;
    }
    let end = *train_end.last().expect("the first batch always starts at t = 0 < horizon_s");
    pool.advance(end);
    let pending = pool.close();
    pool.rec.s.tokens_pending += pending;
    Ok(end)
}

/// A tool call returns (`pool.t` is its time): the trajectory's next turn is routed, or it waits
/// for a slot. A group dropped by a failed call is replaced by a new group (a new prompt), so that
/// every batch still trains `batch_size` samples.
#[cold]
fn tool_returned<D: Draw, P: Placement>(pool: &mut Pool<'_, D, P>, tools: &mut Timers, id: u32) -> Result<()> {
    let dropped = pool.agent.as_ref().map_or(0, |a| a.groups_dropped);
    pool.tool_return(id, tools)?;
    let now = pool.agent.as_ref().map_or(0, |a| a.groups_dropped);
    if now > dropped {
        pool.admit_budget = pool.admit_budget.saturating_add(now - dropped);
        pool.fill_idle()?;
    }
    Ok(())
}
