//! The pipelines, one module each, and the parts they are built of (`pool`, `placement`). Each
//! `run` returns the simulated end time of the run.

pub mod agentic;
pub mod batch;
pub mod fully_async;
mod instances;
pub(crate) mod placement;
pub mod pool;
pub mod streaming;
pub(crate) mod trainer;

pub(crate) use instances::Instances;
pub use trainer::assign_ranks;
