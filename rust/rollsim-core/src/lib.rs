//! # rollsim-core
//!
//! A discrete-event simulator of RL post-training pipelines for LLMs: a rollout pool of slots
//! generating long-tailed answers, a trainer consuming batches and bumping the policy version, and
//! the staleness that asynchrony puts on each sample. Pure Rust, no Python; the `rollsim-py` crate
//! binds it.
//!
//! ```
//! use rollsim_core::{run_simple, RunOptions, Scenario, RngKind};
//! let sc = Scenario { rng: RngKind::Python, ..Scenario::default() };
//! let res = run_simple(&sc, &RunOptions::default()).unwrap();
//! assert_eq!(res.summary.steps, 34); // the chapter's fully asynchronous row
//! ```

pub mod engine;
pub mod error;
pub mod event;
pub mod lengths;
pub mod pipeline;
pub mod queue;
pub mod record;
pub mod rng;
pub mod scenario;
pub mod schema;
pub mod sweep;
pub mod sync;

pub use engine::{run, run_simple, uses_fast_path, RunOptions};
pub use error::{Error, Result};
pub use lengths::Lengths;
pub use record::{RunResult, SampleColumns, StepColumns, Summary};
pub use scenario::{Pipeline, RngKind, Scenario};
