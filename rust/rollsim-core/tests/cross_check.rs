//! The fully-asynchronous fast path (`pipeline/fully_async.rs`) and the general streaming engine
//! (`pipeline/streaming.rs`) implement the same rules: on every generated scenario both give the
//! same columns, value for value. The generator sets every scenario field (`common::scenario`), so
//! a field the fast path does not implement shows up here as a difference unless the fast path
//! declines such scenarios.

mod common;

use common::{same_f64s, scenario, summary_fields, LengthKinds};
use rollsim_core::{run_simple, uses_fast_path, Pipeline, RunOptions, RunResult};

fn assert_same(a: &RunResult, b: &RunResult, what: &str) {
    let (sa, sb) = (a.samples.as_ref().unwrap(), b.samples.as_ref().unwrap());
    assert!(same_f64s(&sa.length_tokens, &sb.length_tokens), "{what}: length_tokens");
    assert!(same_f64s(&sa.start_s, &sb.start_s), "{what}: start_s");
    assert!(same_f64s(&sa.finish_s, &sb.finish_s), "{what}: finish_s");
    let mut sa2 = sa.clone();
    let mut sb2 = sb.clone();
    for s in [&mut sa2, &mut sb2] {
        s.length_tokens.clear();
        s.start_s.clear();
        s.finish_s.clear();
    }
    assert_eq!(sa2, sb2, "{what}: samples");
    let (ga, gb) = (a.segments.as_ref().unwrap(), b.segments.as_ref().unwrap());
    assert_eq!(ga, gb, "{what}: segments");
    assert_eq!(a.steps, b.steps, "{what}: steps");
    for ((k, v), (_, w)) in summary_fields(&a.summary).into_iter().zip(summary_fields(&b.summary)) {
        // sums of the same terms in another order (tokens_pending) may differ in the last bits
        let same = v.to_bits() == w.to_bits() || (v - w).abs() <= 1e-12 * v.abs().max(w.abs()) + 1e-9;
        assert!(same, "{what}: summary {k}: {v} != {w}");
    }
}

#[test]
fn fast_path_equals_general_engine() {
    let general = RunOptions { general_engine: true, ..RunOptions::default() };
    let (mut fast, mut streaming) = (0, 0);
    for seed in 0..400 {
        let sc = scenario(seed, LengthKinds::Any);
        if !matches!(sc.pipeline, Pipeline::FullyAsync(_)) {
            continue;
        }
        streaming += 1;
        if uses_fast_path(&sc) {
            fast += 1;
        }
        let a = run_simple(&sc, &RunOptions::default()).expect("valid scenario");
        let b = run_simple(&sc, &general).expect("valid scenario");
        assert_same(&a, &b, &format!("seed {seed}: {sc:?}"));
    }
    // both kinds are well represented
    assert!(fast >= 60 && streaming - fast >= 60, "{fast} of {streaming} on the fast path");
}
