//! Lengths that drift with the policy version (`Scenario::length_drift`): the fast path and the
//! general streaming engine agree on drifted runs (feedback included), and a drift of scale 1 is no
//! drift, bit for bit.

mod common;

use common::{same_f64s, scenario, summary_fields, LengthKinds};
use rollsim_core::lengths::{DriftKind, LengthDrift};
use rollsim_core::{run_simple, uses_fast_path, Pipeline, RunOptions, RunResult, Scenario};

fn drift(kind: DriftKind, rate: f64, table: Vec<(f64, f64)>, sc: &Scenario, feedback: f64) -> LengthDrift {
    LengthDrift { kind, rate, table, max_tokens: sc.lengths.max_tokens() * 1.5, feedback }
}

fn same(a: &RunResult, b: &RunResult, what: &str, exact_summary: bool) {
    let (sa, sb) = (a.samples.as_ref().unwrap(), b.samples.as_ref().unwrap());
    assert!(same_f64s(&sa.length_tokens, &sb.length_tokens), "{what}: length_tokens");
    assert!(same_f64s(&sa.start_s, &sb.start_s), "{what}: start_s");
    assert!(same_f64s(&sa.finish_s, &sb.finish_s), "{what}: finish_s");
    assert_eq!(a.segments, b.segments, "{what}: segments");
    assert_eq!(a.steps, b.steps, "{what}: steps");
    for ((k, v), (_, w)) in summary_fields(&a.summary).into_iter().zip(summary_fields(&b.summary)) {
        let ok = v.to_bits() == w.to_bits() || (!exact_summary && (v - w).abs() <= 1e-12 * v.abs().max(w.abs()) + 1e-9);
        assert!(ok, "{what}: summary {k}: {v} != {w}");
    }
}

#[test]
fn fast_path_equals_general_engine_with_a_drift() {
    let general = RunOptions { general_engine: true, ..RunOptions::default() };
    let mut fast = 0;
    for seed in 0..150 {
        let base = scenario(seed, LengthKinds::Any);
        if !matches!(base.pipeline, Pipeline::FullyAsync(_)) {
            continue;
        }
        let d = match seed % 3 {
            0 => drift(DriftKind::Linear, 0.05, vec![], &base, 0.0),
            1 => drift(DriftKind::Exp, 0.01, vec![], &base, 0.05),
            _ => drift(DriftKind::Table, 0.0, vec![(0.0, 1.0), (3.0, 1.4), (8.0, 0.7)], &base, 0.1),
        };
        let sc = Scenario { length_drift: Some(d), ..base };
        if sc.validate().is_err() {
            continue; // (a KV capacity below the drift's cap)
        }
        fast += uses_fast_path(&sc) as u32;
        let a = run_simple(&sc, &RunOptions::default()).expect("valid scenario");
        let b = run_simple(&sc, &general).expect("valid scenario");
        same(&a, &b, &format!("seed {seed}: {sc:?}"), false);
    }
    assert!(fast >= 20, "{fast} drifted runs on the fast path");
}

#[test]
fn a_drift_of_scale_one_is_no_drift() {
    for seed in 0..120 {
        let base = scenario(seed, LengthKinds::Any);
        let cap = base.lengths.max_tokens();
        let plain = run_simple(&base, &RunOptions::default()).expect("valid scenario");
        for d in [
            LengthDrift { kind: DriftKind::Linear, rate: 0.0, table: vec![], max_tokens: cap, feedback: 0.0 },
            LengthDrift { kind: DriftKind::Exp, rate: 0.0, table: vec![], max_tokens: cap, feedback: 0.0 },
            LengthDrift { kind: DriftKind::Table, rate: 0.0, table: vec![(0.0, 1.0)], max_tokens: cap, feedback: 0.0 },
        ] {
            let sc = Scenario { length_drift: Some(d), ..base.clone() };
            let got = run_simple(&sc, &RunOptions::default()).expect("valid scenario");
            same(&plain, &got, &format!("seed {seed}"), true);
        }
    }
}

#[test]
fn scales_and_checks() {
    let d = |kind, rate, table| LengthDrift { kind, rate, table, max_tokens: 100.0, feedback: 0.0 };
    assert_eq!(d(DriftKind::Linear, 0.5, vec![]).scale(4.0), 3.0);
    assert_eq!(d(DriftKind::Linear, -1.0, vec![]).scale(4.0), 1e-6);
    assert_eq!(d(DriftKind::Log, 1.0, vec![]).scale(std::f64::consts::E - 1.0), 2.0);
    assert_eq!(d(DriftKind::Exp, 0.5, vec![]).scale(2.0), std::f64::consts::E);
    let t = d(DriftKind::Table, 0.0, vec![(1.0, 2.0), (3.0, 4.0)]);
    assert_eq!([0.0, 1.0, 2.0, 3.0, 9.0].map(|v| t.scale(v)), [2.0, 2.0, 3.0, 4.0, 4.0]);
    let msg = |x: LengthDrift| x.validate().unwrap_err().to_string();
    assert_eq!(msg(d(DriftKind::Linear, 101.0, vec![])), "length_drift.rate: must be in [-1, 100], got 101.0");
    assert_eq!(
        msg(d(DriftKind::Table, 0.0, vec![])),
        "length_drift.table: must hold at least one (version, scale) pair"
    );
    assert_eq!(
        msg(d(DriftKind::Table, 0.0, vec![(0.0, 1.0), (0.0, 1.0)])),
        "length_drift.table: versions must be finite, >= 0 and strictly increasing; item 1 has version 0.0"
    );
    assert_eq!(
        msg(d(DriftKind::Table, 0.0, vec![(0.0, 2e6)])),
        "length_drift.table: scales must be in (0, 1e6]; item 0 has scale 2000000.0"
    );
    let mut f = d(DriftKind::Linear, 0.0, vec![]);
    f.feedback = 2.0;
    assert_eq!(msg(f), "length_drift.feedback: must be in [0, 1], got 2.0");
}
