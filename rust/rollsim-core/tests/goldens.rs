//! The engine's results, pinned bit for bit, without Python.
//!
//! `batched`: the scenarios of `tests/batched_cases.py` (batched decoding, groups, prefill, update
//! modes, over-sampling), with every summary value of `tests/data/batched_goldens.json` (the Python
//! goldens) and a digest of every column. `more`: KV-cache capacity, rollout pauses, a measured
//! throughput table and the streaming options the Python goldens do not cover, pinned the same way.
//! Lengths are empirical (the DeepSeek-R1 histogram), so the values are the same on every platform.

mod common;

use common::{digest_samples, digest_segments, digest_steps, golden_bases, summary_fields};
use rollsim_core::scenario::{BatchOrder, Decode, OnStale, OnUpdate, PartialRollout, Prefill, Streaming};
use rollsim_core::{run_simple, Pipeline, RngKind, RunOptions, RunResult, Scenario};

include!("data/batched_goldens.rs");

fn fully_async(s: Streaming) -> Pipeline {
    Pipeline::FullyAsync(s)
}

/// The cases of `tests/batched_cases.py`, by the same names.
fn batched_cases() -> Vec<(&'static str, Scenario)> {
    let (base, grouped) = golden_bases();
    let with = |sc: &Scenario, pipeline: Pipeline| Scenario { pipeline, ..sc.clone() };
    let batch = |k, over_sampling, keep_partial| Pipeline::OffPolicy {
        k,
        partial: PartialRollout { over_sampling, keep_partial },
    };
    let s = Streaming::default;
    vec![
        ("sync", with(&base, Pipeline::off_policy(0))),
        ("one_step", with(&base, Pipeline::off_policy(1))),
        ("fully_async_cap2", with(&base, Pipeline::fully_async(Some(2)))),
        (
            "fully_async_p1",
            Scenario {
                decode: Decode { slots_per_instance: 1, slowdown_per_seq: 0.5, ..Decode::default() },
                pipeline: Pipeline::fully_async(Some(1)),
                ..base.clone()
            },
        ),
        (
            "fully_async_p64_python",
            Scenario {
                decode: Decode { slots_per_instance: 64, slowdown_per_seq: 0.004, ..Decode::default() },
                rng: RngKind::Python,
                ..base.clone()
            },
        ),
        ("groups4_abort_drop", with(&grouped, fully_async(Streaming { on_update: OnUpdate::AbortDrop, ..s() }))),
        (
            "groups4_keep_recompute",
            with(
                &grouped,
                fully_async(Streaming { on_update: OnUpdate::KeepRecompute, max_staleness: Some(3), ..s() }),
            ),
        ),
        (
            "groups4_abort_resubmit",
            with(
                &grouped,
                fully_async(Streaming { on_update: OnUpdate::AbortResubmit, admission_eta: Some(1), ..s() }),
            ),
        ),
        (
            "groups4_wait",
            with(
                &grouped,
                fully_async(Streaming { on_update: OnUpdate::Wait, batch_order: BatchOrder::OldestFirst, ..s() }),
            ),
        ),
        (
            "groups4_keep_stale_lag",
            with(
                &grouped,
                fully_async(Streaming { on_update: OnUpdate::KeepStale, max_lag_samples: Some(200), ..s() }),
            ),
        ),
        (
            "prefill_no_sharing",
            Scenario {
                prefill: Prefill { prefix_sharing: false, ..grouped.prefill },
                pipeline: Pipeline::fully_async(Some(2)),
                ..grouped.clone()
            },
        ),
        ("over_sampling_keep_partial", with(&grouped, batch(1, Some(0.5), true))),
        ("over_sampling_abort", with(&grouped, batch(0, Some(f64::INFINITY), false))),
    ]
}

/// Realistic modes the Python goldens do not cover.
fn more_cases() -> Vec<(&'static str, Scenario)> {
    let (base, grouped) = golden_bases();
    let kv = Decode { kv_cache_tokens: 60_000.0, ..base.decode.clone() };
    let s = Streaming::default;
    vec![
        ("kv_fully_async", Scenario { decode: kv.clone(), horizon_s: 3600.0, ..base.clone() }),
        (
            "kv_groups_keep_stale",
            Scenario {
                decode: kv.clone(),
                horizon_s: 3600.0,
                pipeline: fully_async(Streaming { on_update: OnUpdate::KeepStale, ..s() }),
                ..grouped.clone()
            },
        ),
        (
            "kv_groups_abort_resubmit_pause",
            Scenario {
                decode: kv.clone(),
                horizon_s: 3600.0,
                rollout_pause_s: 4.0,
                pipeline: fully_async(Streaming { on_update: OnUpdate::AbortResubmit, max_staleness: Some(1), ..s() }),
                ..grouped.clone()
            },
        ),
        (
            "kv_keep_partial",
            Scenario {
                decode: kv.clone(),
                horizon_s: 3600.0,
                pipeline: Pipeline::OffPolicy {
                    k: 1,
                    partial: PartialRollout { over_sampling: Some(0.5), keep_partial: true },
                },
                ..grouped.clone()
            },
        ),
        (
            "pause_slots",
            Scenario {
                decode: Decode::default(),
                rollout_pause_s: 7.5,
                horizon_s: 3600.0,
                pipeline: fully_async(Streaming { on_update: OnUpdate::Wait, ..s() }),
                ..grouped.clone()
            },
        ),
        ("pause_instances", Scenario { rollout_pause_s: 7.5, horizon_s: 3600.0, ..base.clone() }),
        (
            "throughput_table",
            Scenario {
                decode_tokens_per_s: 40.0,
                decode: Decode {
                    slots_per_instance: 16,
                    throughput_table: vec![(1, 40.0), (4, 150.0), (16, 420.0)],
                    ..Decode::default()
                },
                horizon_s: 3600.0,
                ..base.clone()
            },
        ),
        (
            "requeue_balanced_bounded",
            Scenario {
                decode: Decode::default(),
                horizon_s: 3600.0,
                train_s_per_token: 0.00002,
                pipeline: fully_async(Streaming {
                    max_staleness: Some(0),
                    on_stale: OnStale::Requeue,
                    max_ready_groups: Some(40),
                    batch_order: BatchOrder::LengthBalanced { edges: vec![1000.0, 4000.0], quotas: vec![8, 8, 4] },
                    ..s()
                }),
                ..grouped.clone()
            },
        ),
        (
            "independent_slots_general",
            Scenario {
                decode: Decode::default(),
                horizon_s: 3600.0,
                pipeline: fully_async(Streaming { admission_eta: Some(2), ..s() }),
                ..base.clone()
            },
        ),
        (
            "chapter_shaped_fast_path",
            Scenario { decode: Decode::default(), horizon_s: 3600.0, pipeline: Pipeline::fully_async(Some(1)), ..base },
        ),
    ]
}

fn run(sc: &Scenario) -> RunResult {
    run_simple(sc, &RunOptions::default()).expect("valid scenario")
}

fn digests(r: &RunResult) -> [u64; 3] {
    [
        digest_samples(r.samples.as_ref().expect("samples recorded")),
        digest_segments(r.segments.as_ref().expect("segments recorded")),
        digest_steps(&r.steps),
    ]
}

fn check_digests(cases: Vec<(&'static str, Scenario)>, pinned: &[(&str, [u64; 3])]) {
    let mut bad = vec![];
    for (name, sc) in cases {
        let got = digests(&run(&sc));
        let want = pinned.iter().find(|(n, _)| *n == name).map(|(_, d)| *d);
        if want != Some(got) {
            bad.push(format!("    (\"{name}\", [{:#018x}, {:#018x}, {:#018x}]),", got[0], got[1], got[2]));
        }
    }
    assert!(bad.is_empty(), "columns changed (samples, segments, steps):\n{}", bad.join("\n"));
}

#[test]
fn batched_summaries_equal_the_python_goldens() {
    for (name, sc) in batched_cases() {
        let got = summary_fields(&run(&sc).summary);
        let want = GOLDEN_SUMMARIES.iter().find(|(n, _)| *n == name).expect("a golden per case").1;
        for (field, w) in want {
            let g = got.iter().find(|(f, _)| f == field).unwrap_or_else(|| panic!("no summary field {field}")).1;
            assert!(g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()), "{name}.{field}: {g} != {w}");
        }
    }
}

#[test]
fn batched_columns_are_unchanged() {
    check_digests(batched_cases(), BATCHED_DIGESTS);
}

#[test]
fn more_realistic_modes_are_unchanged() {
    let cases = more_cases();
    check_digests(cases.clone(), MORE_DIGESTS);
    let mut bad = vec![];
    for (name, sc) in cases {
        let s = run(&sc).summary;
        let want = MORE_SUMMARIES.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let got: Vec<u64> = summary_fields(&s).iter().map(|(_, v)| v.to_bits()).collect();
        if want.map(|w| w.to_vec()) != Some(got.clone()) {
            let list: Vec<String> = got.iter().map(|b| format!("{b:#x}")).collect();
            bad.push(format!("    (\"{name}\", &[{}]),", list.join(", ")));
        }
    }
    assert!(bad.is_empty(), "summaries changed (bits, in summary_fields order):\n{}", bad.join("\n"));
}

/// The KV and pause cases do what they are meant to exercise.
#[test]
fn more_cases_exercise_their_mode() {
    let cases = more_cases();
    let get = |n: &str| run(&cases.iter().find(|(m, _)| *m == n).unwrap().1).summary;
    for n in ["kv_fully_async", "kv_groups_keep_stale", "kv_groups_abort_resubmit_pause", "kv_keep_partial"] {
        let s = get(n);
        assert!(s.preemptions > 10 && s.kv_wait_s > 0.0, "{n}: {} preemptions", s.preemptions);
    }
    assert!(get("requeue_balanced_bounded").groups_requeued > 0);
    assert!(get("kv_groups_abort_resubmit_pause").tokens_recomputed > 0.0);
}
