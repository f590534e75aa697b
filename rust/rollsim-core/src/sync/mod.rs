//! Weight-sync and routing-replay estimator (issue 5). Placeholder module; see `rollsim.sync`.
