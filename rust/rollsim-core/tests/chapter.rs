//! The chapter's results table ("Three pipelines"), reproduced exactly with `rng = Python`: the
//! default scenario (256 slots at 30 tokens/s, batch 512, 60 s steps, 2 hours, lognormal(7.6, 1.0)
//! lengths truncated at 16384) under the four pipelines. Also checked from Python against a
//! plain-Python reference (`tests/test_chapter.py`, `tests/test_reference.py`).

use rollsim_core::{run_simple, uses_fast_path, Pipeline, RngKind, RunOptions, Scenario, Summary};

fn summary(pipeline: Pipeline, general_engine: bool) -> Summary {
    let sc = Scenario { rng: RngKind::Python, pipeline, ..Scenario::default() };
    let opts = RunOptions { general_engine, ..RunOptions::default() };
    run_simple(&sc, &opts).expect("valid scenario").summary
}

fn round(x: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (x * m).round() / m
}

#[test]
fn synchronous_row() {
    let s = summary(Pipeline::off_policy(0), false);
    assert_eq!(s.steps, 11);
    assert_eq!(round(s.rollout_utilization, 2), 0.30);
    assert_eq!((s.staleness_mean, s.staleness_max), (0.0, 0));
    assert_eq!((s.samples_trained, s.samples_dropped), (11 * 512, 0));
}

#[test]
fn one_step_row() {
    let s = summary(Pipeline::off_policy(1), false);
    assert_eq!(s.steps, 12);
    assert_eq!(round(s.rollout_utilization, 2), 0.33);
    assert_eq!(s.staleness_max, 1);
    // the first batch is trained with version 0, every later one lags 1
    assert!((s.staleness_mean - 11.0 / 12.0).abs() < 1e-12);
}

#[test]
fn fully_async_rows_from_both_engines() {
    assert!(uses_fast_path(&Scenario::default()));
    for general in [false, true] {
        let s = summary(Pipeline::fully_async(None), general);
        assert_eq!(s.steps, 34);
        assert_eq!(round(s.rollout_utilization, 2), 1.00);
        assert_eq!((round(s.staleness_mean, 1), s.staleness_max), (0.8, 4));
        assert_eq!(s.drop_fraction, 0.0);
        assert_eq!((round(s.staleness_mean_short, 1), round(s.staleness_mean_long, 1)), (0.4, 2.2));

        let s = summary(Pipeline::fully_async(Some(2)), general);
        assert_eq!(s.steps, 33);
        assert_eq!(round(s.rollout_utilization, 2), 1.00);
        assert_eq!((round(s.staleness_mean, 1), s.staleness_max), (0.7, 2));
        assert_eq!(round(s.drop_fraction, 2), 0.02);
        assert_eq!(s.samples_dropped, 358); // the chapter's `wasted` counter
        assert_eq!((round(s.staleness_mean_short, 1), round(s.staleness_mean_long, 1)), (0.4, 1.8));
    }
}

/// Chapter exercise 1: with 600 s of training one-step asynchrony nearly halves the step time.
#[test]
fn exercise_600s_training() {
    let step = |k| {
        let sc = Scenario {
            rng: RngKind::Python,
            train_step_s: 600.0,
            horizon_s: 20.0 * 3600.0,
            pipeline: Pipeline::off_policy(k),
            ..Scenario::default()
        };
        let r = run_simple(&sc, &RunOptions::default()).unwrap();
        r.steps.end_s.iter().copied().fold(0.0, f64::max) / r.steps.end_s.len() as f64
    };
    let ratio = step(1) / step(0);
    assert!(0.5 < ratio && ratio < 0.6, "{ratio}");
}
