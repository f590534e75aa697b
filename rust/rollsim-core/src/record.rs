//! Column-wise recording of a run: per-sample and per-step columns (a `Vec` per column, handed to
//! Python as numpy arrays without copying) and the run's summary.

/// Answers shorter than this many tokens are "short" in the summary (the chapter's < 1K).
pub const SHORT_TOKENS: f64 = 1000.0;
/// Answers longer than this many tokens are "long" in the summary (the chapter's > 8K).
pub const LONG_TOKENS: f64 = 8000.0;

/// One row per sample started, in start order (`sample_id` = row index).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleColumns {
    pub length_tokens: Vec<f64>,
    pub start_s: Vec<f64>,
    /// `NaN` while still in flight at the end of the run.
    pub finish_s: Vec<f64>,
    pub version_start: Vec<u32>,
    /// Training step that consumed the sample; -1 if none.
    pub trained_step: Vec<i64>,
    pub dropped: Vec<bool>,
    pub slot: Vec<u32>,
}

/// One row per training step started.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepColumns {
    pub start_s: Vec<f64>,
    pub end_s: Vec<f64>,
    pub staleness_mean: Vec<f64>,
    pub staleness_max: Vec<u32>,
    /// Trainer idle time before the step, seconds.
    pub wait_s: Vec<f64>,
    pub samples: Vec<u32>,
    /// Finished samples still waiting in the ready queue after the batch was taken.
    pub ready_after: Vec<u32>,
    pub tokens: Vec<f64>,
}

/// Totals of one run. Means are over trained samples; see the README for every definition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Training steps completed by the end of the run.
    pub steps: u64,
    /// Training steps started (a step may still be running at the end).
    pub steps_started: u64,
    /// Simulated time covered, seconds (the time of the last event processed).
    pub end_s: f64,
    pub rollout_utilization: f64,
    pub slot_busy_s: f64,
    pub slot_idle_s: f64,
    pub trainer_busy_s: f64,
    pub trainer_idle_s: f64,
    pub samples_started: u64,
    pub samples_finished: u64,
    pub samples_trained: u64,
    pub samples_dropped: u64,
    /// Finished, not trained, not dropped at the end.
    pub samples_ready: u64,
    pub samples_in_flight: u64,
    pub drop_fraction: f64,
    pub staleness_mean: f64,
    pub staleness_max: u64,
    pub staleness_mean_short: f64,
    pub staleness_mean_long: f64,
    pub samples_trained_short: u64,
    pub samples_trained_long: u64,
    pub tokens_generated: f64,
    pub tokens_trained: f64,
    pub tokens_wasted: f64,
    pub tokens_pending: f64,
    pub events: u64,
    /// Least-squares slope of the ready queue after each step, over the second half of the steps
    /// (samples per step). Positive and large: generation outruns training.
    pub ready_queue_growth_per_step: f64,
    pub generation_outruns_training: bool,
    pub throughput_ratio: f64,
}

/// Everything a run produced. `samples` is `None` in summary mode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    pub summary: Summary,
    pub samples: Option<SampleColumns>,
    pub steps: StepColumns,
}

/// The accumulator the pipelines write into.
pub(crate) struct Recorder {
    pub samples: Option<SampleColumns>,
    pub steps: StepColumns,
    pub s: Summary,
    staleness_sum: u64,
    short_sum: u64,
    long_sum: u64,
}

impl Recorder {
    pub fn new(record_samples: bool) -> Self {
        Recorder {
            samples: record_samples.then(SampleColumns::default),
            steps: StepColumns::default(),
            s: Summary::default(),
            staleness_sum: 0,
            short_sum: 0,
            long_sum: 0,
        }
    }

    #[inline]
    pub fn start(&mut self, length: f64, start_s: f64, version: u32, slot: u32) {
        self.s.samples_started += 1;
        if let Some(c) = &mut self.samples {
            c.length_tokens.push(length);
            c.start_s.push(start_s);
            c.finish_s.push(f64::NAN);
            c.version_start.push(version);
            c.trained_step.push(-1);
            c.dropped.push(false);
            c.slot.push(slot);
        }
    }

    #[inline]
    pub fn finish(&mut self, id: u32, length: f64, start_s: f64, finish_s: f64) {
        self.s.samples_finished += 1;
        self.s.events += 1;
        self.s.slot_busy_s += finish_s - start_s;
        self.s.tokens_generated += length;
        if let Some(c) = &mut self.samples {
            c.finish_s[id as usize] = finish_s;
        }
    }

    #[inline]
    pub fn drop_sample(&mut self, id: u32, length: f64) {
        self.s.samples_dropped += 1;
        self.s.tokens_wasted += length;
        if let Some(c) = &mut self.samples {
            c.dropped[id as usize] = true;
        }
    }

    /// Records that step `step` (trained at policy version `step`) consumed a sample.
    #[inline]
    pub fn train_sample(&mut self, id: u32, length: f64, version: u32, step: u32) -> u32 {
        let st = step - version;
        self.s.samples_trained += 1;
        self.s.tokens_trained += length;
        self.staleness_sum += st as u64;
        self.s.staleness_max = self.s.staleness_max.max(st as u64);
        if length < SHORT_TOKENS {
            self.s.samples_trained_short += 1;
            self.short_sum += st as u64;
        } else if length > LONG_TOKENS {
            self.s.samples_trained_long += 1;
            self.long_sum += st as u64;
        }
        if let Some(c) = &mut self.samples {
            c.trained_step[id as usize] = step as i64;
        }
        st
    }

    #[allow(clippy::too_many_arguments)]
    pub fn step(
        &mut self,
        start_s: f64,
        end_s: f64,
        wait_s: f64,
        staleness_sum: u64,
        staleness_max: u32,
        samples: u32,
        ready_after: u32,
        tokens: f64,
    ) {
        self.s.steps_started += 1;
        let st = &mut self.steps;
        st.start_s.push(start_s);
        st.end_s.push(end_s);
        st.staleness_mean.push(if samples > 0 {
            staleness_sum as f64 / samples as f64
        } else {
            0.0
        });
        st.staleness_max.push(staleness_max);
        st.wait_s.push(wait_s);
        st.samples.push(samples);
        st.ready_after.push(ready_after);
        st.tokens.push(tokens);
    }

    /// Fills the derived totals once the run has ended at `end_s`.
    pub fn finish_run(
        mut self,
        end_s: f64,
        slots: u32,
        train_step_s: f64,
        detect_outrun: bool,
        batch: u32,
    ) -> RunResult {
        let s = &mut self.s;
        s.end_s = end_s;
        s.steps = self.steps.end_s.iter().filter(|e| **e <= end_s).count() as u64;
        let capacity = slots as f64 * end_s;
        s.rollout_utilization = if capacity > 0.0 {
            (s.slot_busy_s / capacity).clamp(0.0, 1.0)
        } else {
            0.0
        };
        s.slot_idle_s = (capacity - s.slot_busy_s).max(0.0);
        s.trainer_busy_s = self
            .steps
            .start_s
            .iter()
            .map(|t0| (end_s.min(t0 + train_step_s) - t0).max(0.0))
            .sum();
        s.trainer_idle_s = (end_s - s.trainer_busy_s).max(0.0);
        s.samples_in_flight = s.samples_started - s.samples_finished;
        s.samples_ready = s.samples_finished - s.samples_trained - s.samples_dropped;
        let consumed = s.samples_trained + s.samples_dropped;
        s.drop_fraction = if consumed > 0 {
            s.samples_dropped as f64 / consumed as f64
        } else {
            0.0
        };
        let mean = |sum: u64, n: u64| {
            if n > 0 {
                sum as f64 / n as f64
            } else {
                f64::NAN
            }
        };
        s.staleness_mean = mean(self.staleness_sum, s.samples_trained);
        s.staleness_mean_short = mean(self.short_sum, s.samples_trained_short);
        s.staleness_mean_long = mean(self.long_sum, s.samples_trained_long);
        s.events += s.steps;
        s.ready_queue_growth_per_step = growth(&self.steps.ready_after);
        s.generation_outruns_training = detect_outrun
            && self.steps.ready_after.len() >= 6
            && s.ready_queue_growth_per_step > 0.01 * batch as f64
            && *self.steps.ready_after.last().unwrap() as f64 >= batch as f64;
        RunResult {
            summary: self.s,
            samples: self.samples,
            steps: self.steps,
        }
    }
}

/// Least-squares slope of `y` against its index, over the second half of the series.
fn growth(y: &[u32]) -> f64 {
    let tail = &y[y.len() / 2..];
    let n = tail.len() as f64;
    if tail.len() < 2 {
        return 0.0;
    }
    let mx = (n - 1.0) / 2.0;
    let my = tail.iter().map(|v| *v as f64).sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, v) in tail.iter().enumerate() {
        let dx = i as f64 - mx;
        sxy += dx * (*v as f64 - my);
        sxx += dx * dx;
    }
    sxy / sxx
}

#[cfg(test)]
mod tests {
    #[test]
    fn growth_of_a_line_is_its_slope() {
        let y: Vec<u32> = (0..10).map(|i| 5 + 3 * i).collect();
        assert!((super::growth(&y) - 3.0).abs() < 1e-12);
        assert_eq!(super::growth(&[4, 4, 4, 4]), 0.0);
    }
}
