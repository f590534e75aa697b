//! Agentic trajectories in the batch pipelines (`pipeline/batch.rs`): a hand-worked synchronous
//! step (two trajectories through a one-environment pool), conservation on generated scenarios,
//! and one turn equal to the single-turn batch run bit for bit.

mod common;

use common::{digest_run, scenario, LengthKinds};
use rollsim_core::pipeline::agentic::{AgenticConfig, Dist, KvPolicy, OnFailure};
use rollsim_core::scenario::{PartialRollout, Prefill};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, Scenario};

/// Two slots, a batch of two trajectories of two 100-token turns at 10 tokens/s (10 s each), one
/// environment, 5 s tool calls returning 50 tokens prefilled at 100 tokens/s (0.5 s), 10 s steps.
fn two(policy: KvPolicy) -> Scenario {
    Scenario {
        rollout_slots: 2,
        batch_size: 2,
        decode_tokens_per_s: 10.0,
        train_step_s: 10.0,
        horizon_s: 30.0,
        lengths: Lengths::empirical(vec![100.0], None).unwrap(),
        prefill: Prefill { prefill_tokens_per_s: 100.0, ..Prefill::default() },
        pipeline: Pipeline::off_policy(0),
        agentic: Some(AgenticConfig {
            max_turns: 2,
            tool_latency_s: Dist::Const(5.0),
            observation_tokens: Dist::Const(50.0),
            env_slots: 1,
            kv_policy: policy,
            ..AgenticConfig::default()
        }),
        ..Scenario::default()
    }
}

#[test]
fn a_synchronous_step_waits_for_every_trajectory_and_its_tool_call() {
    // Both first turns end at 10 s. A's call runs 10-15 s; B's waits for the environment until
    // 15 s and runs 15-20 s. A's second turn: 15 + 0.5 + 10 = 25.5 s; B's: 20 + 0.5 + 10 = 30.5 s.
    // The batch is generated at 30.5 s and trains until 40.5 s; the next batch would start at
    // 40.5 s >= horizon_s, so the run ends there.
    for (policy, busy, hold) in [(KvPolicy::Keep, 41.0, 0.0), (KvPolicy::Drop, 43.0, 0.0), (KvPolicy::Hold, 56.0, 15.0)]
    {
        let r = run_simple(&two(policy), &RunOptions::default()).unwrap();
        let s = r.samples.as_ref().unwrap();
        let a = r.agentic.as_ref().unwrap();
        let c = a.columns.as_ref().unwrap();
        // drop: the next turn prefills 100 + 50 tokens (1.5 s) instead of 50
        let p = if policy == KvPolicy::Drop { 1.5 } else { 0.5 };
        assert_eq!(s.finish_s, vec![15.0 + p + 10.0, 20.0 + p + 10.0], "{policy:?}");
        assert_eq!((s.length_tokens.clone(), s.trained_step.clone()), (vec![200.0, 200.0], vec![0, 0]));
        assert_eq!(
            (c.turns.clone(), c.tool_s.clone(), c.env_wait_s.clone()),
            (vec![2, 2], vec![5.0, 10.0], vec![0.0, 5.0])
        );
        assert_eq!(c.tokens_observed, vec![50.0, 50.0]);
        let st = &r.steps;
        assert_eq!((st.start_s.clone(), st.end_s.clone()), (vec![30.0 + p], vec![40.0 + p]));
        assert_eq!((st.samples.clone(), st.tokens.clone(), st.staleness_max.clone()), (vec![2], vec![400.0], vec![0]));
        let sm = &r.summary;
        assert_eq!((sm.end_s, sm.samples_trained, sm.tokens_trained, sm.tokens_wasted), (40.0 + p, 2, 400.0, 0.0));
        assert_eq!((sm.slot_busy_s, a.summary.gpu_hold_s), (busy, hold), "{policy:?}");
        let g = &a.summary;
        assert_eq!((g.turns, g.tool_calls, g.tokens_observed, g.env_busy_s, g.env_wait_s), (4, 2, 100.0, 10.0, 5.0));
        assert_eq!(g.tokens_prefilled_turns, 2.0 * p * 100.0);
        assert_eq!((g.gpu_prefill_s, g.gpu_decode_s), (2.0 * p, 40.0));
        assert_eq!(g.env_utilization, 10.0 / (40.0 + p));
    }
}

#[test]
fn one_step_async_overlaps_the_next_batch_with_training() {
    // k = 1: batch 1 starts when batch 0 is generated (30.5 s), with version 0
    let sc = Scenario { pipeline: Pipeline::off_policy(1), horizon_s: 31.0, ..two(KvPolicy::Keep) };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert_eq!(s.start_s, vec![0.0, 0.0, 30.5, 30.5]);
    assert_eq!(s.finish_s[2..], [30.5 + 25.5, 30.5 + 30.5]);
    assert_eq!(r.steps.start_s, vec![30.5, 61.0]);
    assert_eq!(s.version_start, vec![0, 0, 0, 0]);
}

#[test]
fn over_sampling_is_refused() {
    let mut sc = two(KvPolicy::Keep);
    sc.pipeline =
        Pipeline::OffPolicy { k: 0, partial: PartialRollout { over_sampling: Some(0.5), keep_partial: true } };
    let e = run_simple(&sc, &RunOptions::default()).unwrap_err().to_string();
    assert!(e.starts_with("pipeline.over_sampling: must be None with agentic"), "{e}");
}

/// A batch pipeline (no over-sampling) of a generated scenario.
fn batch_scenarios() -> impl Iterator<Item = (u64, Scenario)> {
    (0..1500).map(|seed| (seed, scenario(seed, LengthKinds::Any))).filter(|(_, sc)| {
        matches!(sc.pipeline, Pipeline::OffPolicy { partial: PartialRollout { over_sampling: None, .. }, .. })
    })
}

#[test]
fn one_turn_is_the_single_turn_batch_run() {
    let mut n = 0;
    for (seed, sc) in batch_scenarios() {
        for policy in [KvPolicy::Keep, KvPolicy::Drop, KvPolicy::Hold] {
            let cfg = AgenticConfig { max_turns: 1, kv_policy: policy, ..AgenticConfig::default() };
            let agentic = Scenario { agentic: Some(cfg), ..sc.clone() };
            let (mut a, b) = (
                run_simple(&agentic, &RunOptions::default()).unwrap(),
                run_simple(&sc, &RunOptions::default()).unwrap(),
            );
            assert!(a.agentic.take().is_some());
            assert_eq!(digest_run(&a), digest_run(&b), "seed {seed} {policy:?}");
        }
        n += 1;
    }
    assert!(n > 80, "{n} batch scenarios");
}

#[test]
fn batches_conserve_samples_turns_and_tokens() {
    let mut n = 0;
    for (seed, mut sc) in batch_scenarios().take(60) {
        let fail = seed % 3 == 0;
        let policy = [KvPolicy::Keep, KvPolicy::Drop, KvPolicy::Hold][seed as usize % 3];
        sc.decode.kv_cache_tokens = 0.0;
        sc.horizon_s = sc.horizon_s.min(4.0 * 3600.0);
        sc.agentic = Some(AgenticConfig {
            max_turns: 6,
            tool_latency_s: Dist::Of(Lengths::LogNormal {
                mu: 1.0,
                sigma: 1.0,
                max_tokens: 300.0,
                group_correlation: 0.0,
            }),
            observation_tokens: Dist::Const(40.0),
            stop_prob: 0.3,
            env_slots: if seed % 2 == 0 { 4 } else { 0 },
            failure_rate: if fail { 0.05 } else { 0.0 },
            on_failure: if seed % 6 == 0 { OnFailure::Retry } else { OnFailure::Drop },
            kv_policy: policy,
            ..AgenticConfig::default()
        });
        let r = run_simple(&sc, &RunOptions::default()).unwrap();
        let s = &r.summary;
        let a = &r.agentic.as_ref().unwrap().summary;
        let c = r.agentic.as_ref().unwrap().columns.as_ref().unwrap();
        assert_eq!(
            s.samples_started,
            s.samples_trained + s.samples_dropped + s.samples_ready + s.samples_in_flight,
            "seed {seed}"
        );
        let gen = s.tokens_trained + s.tokens_wasted + s.tokens_pending;
        assert!(
            (s.tokens_generated - gen).abs() <= 1e-9 * gen.max(1.0),
            "seed {seed}: {} vs {gen}",
            s.tokens_generated
        );
        assert_eq!(c.turns.iter().map(|t| *t as u64).sum::<u64>(), a.turns, "seed {seed}");
        let obs: f64 = c.tokens_observed.iter().sum();
        assert!((obs - a.tokens_observed).abs() <= 1e-9 * obs.max(1.0), "seed {seed}");
        // every step trains batch_size samples (a group dropped by a failed call is replaced)
        assert!(r.steps.samples.iter().all(|n| *n == sc.batch_size), "seed {seed}");
        assert!(a.gpu_hold_s <= s.slot_busy_s + 1e-6 && (policy == KvPolicy::Hold || a.gpu_hold_s == 0.0));
        n += 1;
    }
    assert!(n >= 30, "{n}");
}
