//! What to simulate.

use crate::error::{Error, Result};
use crate::lengths::Lengths;

/// How generation and training are interleaved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pipeline {
    /// Batch pipelines. `k = 0` is synchronous (generate a batch, train it, repeat); `k = 1` is
    /// one-step off-policy (batch i+1 is generated while batch i trains, with the weights from
    /// before training batch i); `k > 1` lets generation run up to `k` batches ahead of training.
    /// A batch always uses the newest policy version available when its generation starts.
    OffPolicy { k: u32 },
    /// Streaming: a freed slot immediately starts a new sample with the newest version; the trainer
    /// takes the first `batch_size` finished samples whenever it is idle. With `max_staleness`,
    /// finished samples whose staleness exceeds it are dropped (the chapter's rule).
    FullyAsync { max_staleness: Option<u32> },
}

/// Which random number generator draws the lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RngKind {
    /// CPython's `random.Random(seed)`, bit for bit (reproduces the chapter).
    Python,
    /// Xoshiro256++ with a ziggurat normal.
    Fast,
}

/// One scenario: the rollout pool, the trainer, the length distribution and the pipeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Concurrent sequences in the rollout pool.
    pub rollout_slots: u32,
    /// Decode speed of one sequence, tokens per second.
    pub decode_tokens_per_s: f64,
    /// Samples per training step.
    pub batch_size: u32,
    /// Seconds per training step (including the weight sync).
    pub train_step_s: f64,
    /// Simulated time, seconds.
    pub horizon_s: f64,
    pub lengths: Lengths,
    pub pipeline: Pipeline,
    pub seed: u64,
    pub rng: RngKind,
}

/// Largest accepted `rollout_slots` and `batch_size` (sample ids are 32-bit).
pub const MAX_COUNT: u32 = 1 << 24;
/// Largest accepted k for `OffPolicy`.
pub const MAX_K: u32 = 1_000_000;

impl Default for Scenario {
    /// The chapter's scenario: 256 slots at 30 tokens/s, 512 samples per step, 60 s per step, 2 hours,
    /// lengths `min(lognormal(7.6, 1.0), 16384)`, fully asynchronous without a cap, seed 0.
    fn default() -> Self {
        Scenario {
            rollout_slots: 256,
            decode_tokens_per_s: 30.0,
            batch_size: 512,
            train_step_s: 60.0,
            horizon_s: 7200.0,
            lengths: Lengths::LogNormal {
                mu: 7.6,
                sigma: 1.0,
                max_tokens: 16384.0,
            },
            pipeline: Pipeline::FullyAsync { max_staleness: None },
            seed: 0,
            rng: RngKind::Fast,
        }
    }
}

impl Scenario {
    /// Checks every field; the error names the first bad one and its allowed range.
    pub fn validate(&self) -> Result<()> {
        if self.rollout_slots == 0 || self.rollout_slots > MAX_COUNT {
            return Err(Error::field(
                "rollout_slots",
                format!("must be in [1, {MAX_COUNT}], got {}", self.rollout_slots),
            ));
        }
        if !(self.decode_tokens_per_s.is_finite() && self.decode_tokens_per_s > 0.0) {
            return Err(Error::field(
                "decode_tokens_per_s",
                format!("must be finite and > 0, got {}", self.decode_tokens_per_s),
            ));
        }
        if self.batch_size == 0 || self.batch_size > MAX_COUNT {
            return Err(Error::field(
                "batch_size",
                format!("must be in [1, {MAX_COUNT}], got {}", self.batch_size),
            ));
        }
        if !(self.train_step_s.is_finite() && self.train_step_s >= 0.0) {
            return Err(Error::field(
                "train_step_s",
                format!("must be finite and >= 0, got {}", self.train_step_s),
            ));
        }
        if !(self.horizon_s.is_finite() && self.horizon_s > 0.0) {
            return Err(Error::field(
                "horizon_s",
                format!("must be finite and > 0, got {}", self.horizon_s),
            ));
        }
        if let Pipeline::OffPolicy { k } = self.pipeline {
            if k > MAX_K {
                return Err(Error::field("pipeline.k", format!("must be in [0, {MAX_K}], got {k}")));
            }
        }
        self.lengths.validate()
    }

    /// Rollout throughput over training throughput, in samples per second, from the mean length:
    /// `(rollout_slots * decode_tokens_per_s / mean_tokens) / (batch_size / train_step_s)`.
    /// Above 1, a fully asynchronous pipeline without a cap generates faster than it trains.
    pub fn throughput_ratio(&self) -> f64 {
        let rollout = self.rollout_slots as f64 * self.decode_tokens_per_s / self.lengths.mean_tokens();
        rollout * self.train_step_s / self.batch_size as f64
    }
}
