//! Many runs at once, across cores (rayon), in summary mode, with the results as columns.
//!
//! A sweep hands over each distinct scenario once and a list of runs, each a (scenario index,
//! seed) pair. Each run is independent and seeded by its own seed, so results do not depend on the
//! number of threads or on the order in which runs are scheduled: the columns are in run order.

use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::engine::{run, RunOptions};
use crate::error::{Error, Result};
use crate::pipeline::agentic::AgenticSummary;
use crate::record::{LearnSums, Summary, LEARN_STALENESS_BINS};
use crate::scenario::Scenario;

/// One run of a sweep: the index of its scenario (in the slice given to [`run_many`]) and its seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunItem {
    pub scenario: usize,
    pub seed: u64,
}

/// Runs every item (summary only) on `threads` threads (0 = all cores); the scenario's own seed is
/// replaced by the item's. `cancel` stops the remaining runs (they return `Error::Interrupted`);
/// `done` counts finished runs for progress bars. An item whose scenario index is out of range is
/// refused before anything runs (`Error::InvalidField` on `runs`).
pub fn run_many(
    scenarios: &[Scenario],
    items: &[RunItem],
    threads: usize,
    max_samples: u64,
    cancel: &AtomicBool,
    done: &AtomicU64,
) -> Result<Vec<Result<Summary>>> {
    let runs = run_many_agentic(scenarios, items, threads, max_samples, cancel, done)?;
    Ok(runs.into_iter().map(|r| r.map(|(s, _)| s)).collect())
}

/// A run's summary, and its agentic summary if its scenario is agentic.
pub type RunSummary = (Summary, Option<AgenticSummary>);

/// [`run_many`], with the agentic summary of each run of an agentic scenario.
pub fn run_many_agentic(
    scenarios: &[Scenario],
    items: &[RunItem],
    threads: usize,
    max_samples: u64,
    cancel: &AtomicBool,
    done: &AtomicU64,
) -> Result<Vec<Result<RunSummary>>> {
    if let Some((i, it)) = items.iter().enumerate().find(|(_, it)| it.scenario >= scenarios.len()) {
        return Err(Error::field(
            "runs",
            format!("scenario indices must be in [0, {}], got {} at item {i}", scenarios.len() as i64 - 1, it.scenario),
        ));
    }
    let opts = RunOptions { record_samples: false, max_samples, ..RunOptions::default() };
    let work = || {
        items
            .par_iter()
            .map(|it| {
                if cancel.load(Ordering::Relaxed) {
                    return Err(Error::Interrupted);
                }
                let base = &scenarios[it.scenario];
                let r = if base.seed == it.seed {
                    run(base, &opts, &mut || cancel.load(Ordering::Relaxed))
                } else {
                    // a clone is cheap: empirical lengths are shared behind an `Arc`
                    let sc = Scenario { seed: it.seed, ..base.clone() };
                    run(&sc, &opts, &mut || cancel.load(Ordering::Relaxed))
                };
                done.fetch_add(1, Ordering::Relaxed);
                r.map(|r| (r.summary, r.agentic.map(|a| a.summary)))
            })
            .collect()
    };
    Ok(match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    })
}

/// The values of one summary column.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    U64(Vec<u64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
}

/// Status of a run in [`SummaryColumns::status`].
pub const STATUS_OK: u8 = 0;
/// Refused by the engine's checks (`Error::InvalidField`): Python's `ScenarioError`.
pub const STATUS_SCENARIO_ERROR: u8 = 1;
/// Hit `max_samples` while running: Python's `RunLimitError`.
pub const STATUS_RUN_LIMIT: u8 = 2;
/// Stopped by the cancel flag.
pub const STATUS_INTERRUPTED: u8 = 3;

/// Status code and message of a failed run.
pub fn status_of(e: &Error) -> u8 {
    match e {
        Error::InvalidField { .. } => STATUS_SCENARIO_ERROR,
        Error::TooManySamples { .. } | Error::TooManyEvents { .. } => STATUS_RUN_LIMIT,
        Error::Interrupted => STATUS_INTERRUPTED,
    }
}

macro_rules! summary_columns {
    ($($name:ident: $t:ident => $variant:ident),* $(,)?) => {
        /// Summaries of many runs, one vector per field of [`Summary`] (in its declaration order),
        /// plus the status of each run and the message of each failed one. A failed run holds 0,
        /// NaN or false in every field (check `status`).
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct SummaryColumns {
            $(pub $name: Vec<$t>,)*
            /// [`STATUS_OK`] or the kind of error, per run.
            pub status: Vec<u8>,
            /// The error's message (`Display` of [`Error`]) of each failed run, `None` if it succeeded.
            pub error: Vec<Option<String>>,
            /// The agentic summary of each run of an agentic scenario (columns after the others).
            pub agentic: Vec<Option<AgenticSummary>>,
            /// The learning sums of each run (NaN for a failed run; columns after the agentic ones).
            pub learn: Vec<LearnSums>,
        }

        /// The field names of [`Summary`], in the order of [`SummaryColumns::into_columns`].
        pub const SUMMARY_FIELDS: &[&str] = &[$(stringify!($name)),*];

        impl SummaryColumns {
            /// Empty columns with room for `n` runs.
            pub fn with_capacity(n: usize) -> Self {
                SummaryColumns {
                    $($name: Vec::with_capacity(n),)*
                    status: Vec::with_capacity(n),
                    error: Vec::with_capacity(n),
                    agentic: Vec::with_capacity(n),
                    learn: Vec::with_capacity(n),
                }
            }

            /// Appends one run's result.
            pub fn push(&mut self, r: &Result<Summary>) {
                match r {
                    Ok(s) => {
                        // exhaustive: a field added to `Summary` and not listed here fails to compile
                        let Summary { $($name,)* learn } = s;
                        $(self.$name.push(*$name);)*
                        self.learn.push(*learn);
                        self.status.push(STATUS_OK);
                        self.error.push(None);
                        self.agentic.push(None);
                    }
                    Err(e) => {
                        $(self.$name.push(summary_columns!(@missing $t));)*
                        self.learn.push(LearnSums {
                            tokens_by_staleness: [f64::NAN; LEARN_STALENESS_BINS + 1],
                            tokens_drawn: f64::NAN,
                        });
                        self.status.push(status_of(e));
                        self.error.push(Some(e.to_string()));
                        self.agentic.push(None);
                    }
                }
            }

            /// Number of runs.
            pub fn len(&self) -> usize {
                self.status.len()
            }

            /// Whether there are no runs.
            pub fn is_empty(&self) -> bool {
                self.status.is_empty()
            }

            /// The summary columns by name, in [`SUMMARY_FIELDS`] order, then the agentic ones in
            /// [`AGENTIC_FIELDS`] order (0 / NaN for a run that is not agentic), then the learning
            /// sums ([`crate::schema::LEARNING_SUMMARY`]); without status and error.
            pub fn into_columns(self) -> (Vec<(&'static str, Column)>, Vec<u8>, Vec<Option<String>>) {
                let mut cols = vec![$((stringify!($name), Column::$variant(self.$name)),)*];
                cols.extend(agentic_columns(&self.agentic));
                cols.extend(learn_columns(&self.learn));
                (cols, self.status, self.error)
            }
        }
    };
    (@missing u64) => { 0 };
    (@missing f64) => { f64::NAN };
    (@missing bool) => { false };
}

summary_columns! {
    steps: u64 => U64,
    steps_started: u64 => U64,
    end_s: f64 => F64,
    rollout_utilization: f64 => F64,
    slot_busy_s: f64 => F64,
    slot_idle_s: f64 => F64,
    trainer_busy_s: f64 => F64,
    trainer_idle_s: f64 => F64,
    samples_started: u64 => U64,
    samples_finished: u64 => U64,
    samples_trained: u64 => U64,
    samples_dropped: u64 => U64,
    samples_aborted: u64 => U64,
    groups_requeued: u64 => U64,
    samples_ready: u64 => U64,
    samples_in_flight: u64 => U64,
    drop_fraction: f64 => F64,
    staleness_mean: f64 => F64,
    staleness_max: u64 => U64,
    staleness_at_finish_mean: f64 => F64,
    staleness_group_mean: f64 => F64,
    staleness_mean_short: f64 => F64,
    staleness_mean_long: f64 => F64,
    samples_trained_short: u64 => U64,
    samples_trained_long: u64 => U64,
    tokens_generated: f64 => F64,
    tokens_trained: f64 => F64,
    tokens_wasted: f64 => F64,
    tokens_pending: f64 => F64,
    tokens_prefilled: f64 => F64,
    tokens_recomputed: f64 => F64,
    preemptions: u64 => U64,
    kv_wait_s: f64 => F64,
    events: u64 => U64,
    ready_queue_growth_per_step: f64 => F64,
    generation_outruns_training: bool => Bool,
    stalled: bool => Bool,
    throughput_ratio: f64 => F64,
}

macro_rules! agentic_columns {
    ($($name:ident: $t:ident => $variant:ident),* $(,)?) => {
        /// The fields of [`AgenticSummary`] as columns (`crate::schema::AGENTIC_SUMMARY`'s order).
        pub const AGENTIC_FIELDS: &[&str] = &[$(stringify!($name)),*];

        /// The agentic columns of runs: 0 for counts and NaN otherwise where a run has none.
        fn agentic_columns(a: &[Option<AgenticSummary>]) -> Vec<(&'static str, Column)> {
            vec![$((
                stringify!($name),
                Column::$variant(a.iter().map(|x| x.as_ref().map_or(summary_columns!(@missing $t), |s| s.$name)).collect()),
            ),)*]
        }

        #[allow(dead_code)]
        /// Exhaustive: a field added to `AgenticSummary` and not listed here fails to compile.
        fn agentic_fields_are_listed(s: &AgenticSummary) {
            let AgenticSummary { $($name: _),* } = s;
        }
    };
}

agentic_columns! {
    turns: u64 => U64,
    tool_calls: u64 => U64,
    tool_retries: u64 => U64,
    trajectories_truncated: u64 => U64,
    trajectories_failed: u64 => U64,
    tokens_observed: f64 => F64,
    tokens_prefilled_turns: f64 => F64,
    env_busy_s: f64 => F64,
    env_wait_s: f64 => F64,
    env_utilization: f64 => F64,
    env_mean_busy: f64 => F64,
    gpu_hold_s: f64 => F64,
    gpu_prefill_s: f64 => F64,
    gpu_decode_s: f64 => F64,
    kv_evictions: u64 => U64,
}

/// The learning sums of runs as columns, in [`crate::schema::LEARNING_SUMMARY`]'s order.
fn learn_columns(l: &[LearnSums]) -> Vec<(&'static str, Column)> {
    let names = crate::schema::LEARNING_SUMMARY;
    let mut cols: Vec<(&'static str, Column)> = (0..=LEARN_STALENESS_BINS)
        .map(|b| (names[b].name, Column::F64(l.iter().map(|x| x.tokens_by_staleness[b]).collect())))
        .collect();
    cols.push((names[LEARN_STALENESS_BINS + 1].name, Column::F64(l.iter().map(|x| x.tokens_drawn).collect())));
    cols
}

impl SummaryColumns {
    /// The columns of runs with their agentic summaries, in order.
    pub fn from_runs(results: &[Result<RunSummary>]) -> Self {
        let mut c = SummaryColumns::with_capacity(results.len());
        for r in results {
            match r {
                Ok((s, a)) => {
                    c.push(&Ok(s.clone()));
                    *c.agentic.last_mut().expect("pushed") = a.clone();
                }
                Err(e) => c.push(&Err(e.clone())),
            }
        }
        c
    }

    /// The columns of `results`, in order.
    pub fn from_results(results: &[Result<Summary>]) -> Self {
        let mut c = SummaryColumns::with_capacity(results.len());
        for r in results {
            c.push(r);
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Scenario;

    fn small(seed: u64) -> Scenario {
        Scenario { rollout_slots: 16, batch_size: 32, horizon_s: 900.0, seed, ..Scenario::default() }
    }

    fn many(scs: &[Scenario], items: &[RunItem], threads: usize) -> Vec<Result<Summary>> {
        run_many(scs, items, threads, 1 << 30, &AtomicBool::new(false), &AtomicU64::new(0)).unwrap()
    }

    #[test]
    fn items_run_with_their_seed_whatever_the_threads() {
        let scs = vec![small(0), Scenario { train_step_s: 30.0, ..small(0) }];
        let items: Vec<RunItem> = (0..12).map(|i| RunItem { scenario: i % 2, seed: 100 + i as u64 }).collect();
        let one = many(&scs, &items, 1);
        for (it, r) in items.iter().zip(&one) {
            let sc = Scenario { seed: it.seed, ..scs[it.scenario].clone() };
            let alone = run(&sc, &RunOptions { record_samples: false, ..RunOptions::default() }, &mut || false);
            // Debug text: equal bit for bit, NaN included
            assert_eq!(format!("{:?}", r.as_ref().unwrap()), format!("{:?}", alone.unwrap().summary));
        }
        assert_eq!(format!("{one:?}"), format!("{:?}", many(&scs, &items, 3)));
    }

    #[test]
    fn learning_sums_are_the_same_in_both_modes_and_cover_the_trained_tokens() {
        use crate::scenario::{OnUpdate, Pipeline, Streaming};
        let partial = Pipeline::FullyAsync(Streaming {
            max_staleness: Some(2),
            on_update: OnUpdate::KeepRecompute,
            ..Streaming::default()
        });
        for pipeline in [Scenario::default().pipeline, partial] {
            let sc = Scenario { pipeline, ..small(5) };
            let mode = |record_samples| {
                run(&sc, &RunOptions { record_samples, ..RunOptions::default() }, &mut || false).unwrap()
            };
            let (summary, samples) = (mode(false), mode(true));
            let l = summary.summary.learn;
            assert_eq!(format!("{l:?}"), format!("{:?}", samples.summary.learn));
            let total: f64 = l.tokens_by_staleness.iter().sum();
            assert!((total - summary.summary.tokens_trained).abs() <= 1e-9 * total);
            let drawn: f64 = samples.samples.unwrap().length_tokens.iter().sum();
            assert!((l.tokens_drawn - drawn).abs() <= 1e-9 * drawn);
            assert!(l.tokens_by_staleness[1] > 0.0);
        }
    }

    #[test]
    fn bad_index_is_refused() {
        let e = run_many(
            &[small(0)],
            &[RunItem { scenario: 1, seed: 0 }],
            1,
            10,
            &AtomicBool::new(false),
            &AtomicU64::new(0),
        );
        assert_eq!(e.unwrap_err().to_string(), "runs: scenario indices must be in [0, 0], got 1 at item 0");
    }

    #[test]
    fn columns_hold_every_field_and_the_errors() {
        let ok = many(&[small(3)], &[RunItem { scenario: 0, seed: 3 }], 1).remove(0);
        let bad: Result<Summary> = Err(Error::TooManySamples { limit: 5 });
        let c = SummaryColumns::from_results(&[ok.clone(), bad]);
        assert_eq!(c.len(), 2);
        assert_eq!(c.status, vec![STATUS_OK, STATUS_RUN_LIMIT]);
        assert_eq!(c.error[0], None);
        assert!(c.error[1].as_deref().unwrap().starts_with("max_samples: "));
        let s = ok.unwrap();
        assert_eq!(c.steps, vec![s.steps, 0]);
        assert_eq!(c.throughput_ratio[0].to_bits(), s.throughput_ratio.to_bits());
        assert!(c.throughput_ratio[1].is_nan());
        let (cols, _, _) = c.into_columns();
        let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
        let learning: Vec<&str> = crate::schema::LEARNING_SUMMARY.iter().map(|c| c.name).collect();
        assert_eq!(names, [SUMMARY_FIELDS, AGENTIC_FIELDS, &learning].concat());
        assert_eq!(learning.len(), LEARN_STALENESS_BINS + 2);
        assert_eq!(SUMMARY_FIELDS.len(), 38);
        let schema: Vec<&str> = crate::schema::AGENTIC_SUMMARY.iter().map(|c| c.name).collect();
        assert_eq!(AGENTIC_FIELDS, schema);
        // not agentic: 0 and NaN
        assert!(cols.iter().any(|(n, c)| *n == "turns" && *c == Column::U64(vec![0, 0])));
        assert!(cols.iter().any(|(n, c)| *n == "env_wait_s" && matches!(c, Column::F64(v) if v[0].is_nan())));
    }
}
