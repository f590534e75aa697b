//! The pipelines, one module each. Each `run` returns the simulated end time of the run.

pub mod batch;
pub mod fully_async;
mod instances;
pub mod pool;
pub mod streaming;
