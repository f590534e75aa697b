//! One error type for everything the engine can refuse.

use std::fmt;

/// What went wrong, and where.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A scenario field is outside its allowed range. `field` is the scenario's field name as the
    /// Python API spells it (e.g. `"rollout_slots"`, `"lengths.sigma"`).
    InvalidField { field: &'static str, message: String },
    /// The run would exceed `max_samples` started samples (a guard against runaway memory use).
    TooManySamples { limit: u64 },
    /// The run processed `RunOptions::max_events` events without ending (a guard against a run
    /// that would not end, or would take far longer than expected).
    TooManyEvents { limit: u64 },
    /// The caller's interrupt check asked the run to stop (e.g. Ctrl-C in Python).
    Interrupted,
}

impl Error {
    pub(crate) fn field(field: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidField { field, message: message.into() }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidField { field, message } => write!(f, "{field}: {message}"),
            Error::TooManySamples { limit } => write!(
                f,
                "max_samples: the run would start more than {limit} samples; shorten horizon_s or raise max_samples"
            ),
            Error::TooManyEvents { limit } => write!(
                f,
                "max_events: the run processed more than {limit} events (finishes, tool returns, steps and the pool's own: KV \
                 preemptions, evictions, shared-prefill ends, speed refreshes) and had not ended; shorten horizon_s \
                 or raise max_events"
            ),
            Error::Interrupted => write!(f, "interrupted"),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
