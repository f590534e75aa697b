//! Many runs at once, across cores (rayon), in summary mode.
//!
//! Each run is independent and seeded by its own scenario, so results do not depend on the number
//! of threads or on the order in which runs are scheduled.

use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::engine::{run, RunOptions};
use crate::error::{Error, Result};
use crate::record::Summary;
use crate::scenario::Scenario;

/// Runs every scenario (summary only) on `threads` threads (0 = all cores). `cancel` stops the
/// remaining runs (they return `Error::Interrupted`); `done` counts finished runs for progress bars.
pub fn run_many(
    scenarios: &[Scenario],
    threads: usize,
    max_samples: u64,
    cancel: &AtomicBool,
    done: &AtomicU64,
) -> Vec<Result<Summary>> {
    let opts = RunOptions { record_samples: false, max_samples, ..RunOptions::default() };
    let work = || {
        scenarios
            .par_iter()
            .map(|sc| {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let r = run(sc, &opts, &mut || cancel.load(Ordering::Relaxed)).map(|r| r.summary);
                done.fetch_add(1, Ordering::Relaxed);
                r
            })
            .collect()
    };
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }
}
