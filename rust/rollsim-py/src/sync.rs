//! Bindings of `rollsim_core::sync` (weight-sync estimator). Registered from `lib.rs`.

use pyo3::prelude::*;

pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
