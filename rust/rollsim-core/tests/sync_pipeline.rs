//! The weight sync inside the pipeline: sync cadence (`sync_every`), when a staleness cap is
//! checked (`staleness_check`), and when generation resumes around a sync (`lag_release`), on
//! hand-worked timelines. Every answer is 30 tokens at 30 tokens/s: one second on its slot.

use rollsim_core::scenario::{LagRelease, StalenessCheck, Streaming};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, RunResult, Scenario};

/// One slot, one sample per step, answers of exactly one second, a step of `step_s`.
fn one_slot(step_s: f64, horizon_s: f64) -> Scenario {
    Scenario {
        rollout_slots: 1,
        decode_tokens_per_s: 30.0,
        batch_size: 1,
        train_step_s: step_s,
        horizon_s,
        // sigma 0: exp(20) tokens, cut to 30
        lengths: Lengths::LogNormal { mu: 20.0, sigma: 0.0, max_tokens: 30.0, group_correlation: 0.0 },
        ..Scenario::default()
    }
}

fn run(sc: &Scenario) -> RunResult {
    sc.validate().expect("valid scenario");
    run_simple(sc, &RunOptions::default()).expect("runs")
}

#[test]
fn sync_every_two_steps_trains_on_the_version_the_rollout_had() {
    // 0.5 s steps. Every step: a sample started at t = k (the rollout's version then) is trained
    // at t = k + 1 by step k. sync_every = 1: the rollout has version k - 1 at t = k (loaded at
    // k - 0.5), staleness 1 from step 1 on. sync_every = 2: it loads only versions 2, 4, ...
    // (at t = 2.5, 4.5, ...), so step 1 trains version 0 (1), step 2 version 0 (2), step 3
    // version 2 (1), step 4 version 2 (2).
    let sc = one_slot(0.5, 6.2);
    let every = run(&sc);
    assert_eq!(every.steps.staleness_max, vec![0, 1, 1, 1, 1, 1]);
    let two = run(&Scenario { sync_every: 2, ..sc.clone() });
    assert_eq!(two.steps.staleness_max, vec![0, 1, 2, 1, 2, 1]);
    assert_eq!(two.summary.staleness_mean, 7.0 / 6.0);
    // the synchronous pipeline too: a batch generated after step k uses the last synced version
    let sync = Scenario { pipeline: Pipeline::off_policy(0), sync_every: 2, ..sc.clone() };
    // generate 0-1 (v0), train 1-1.5, generate 1.5-2.5 (v0: version 1 is not synced), train
    // 2.5-3, generate 3-4 (v2), ...; the batch started at 6 < horizon still trains (step 4)
    assert_eq!(run(&sync).steps.staleness_max, vec![0, 1, 0, 1, 0]);
}

#[test]
fn the_emission_time_check_lets_two_version_old_samples_through_a_cap_of_one() {
    // 1.6 s steps, cap 1. t = 1: s0 trained by step 0 (ends 2.6); s1 runs 1-2 on version 0; s2
    // runs 2-3 (started on version 0, emitted on version 1, loaded at 2.6); s3 runs 3-4 on
    // version 1. Step 1 (2.6-4.2) trains s1. At t = 4.2 (version 2) s2 is 2 versions old from its
    // start, 1 from its emission.
    let cap = Pipeline::FullyAsync(Streaming { max_staleness: Some(1), ..Streaming::default() });
    let sc = Scenario { pipeline: cap, ..one_slot(1.6, 4.5) };
    let start = run(&sc);
    assert_eq!(start.steps.staleness_max, vec![0, 1, 1]); // s2 dropped, step 2 trains s3
    assert_eq!(start.summary.samples_dropped, 1);
    let finish = run(&Scenario { staleness_check: StalenessCheck::Finish, ..sc.clone() });
    assert_eq!(finish.steps.staleness_max, vec![0, 1, 2]); // step 2 trains s2: 2 versions old
    assert_eq!(finish.summary.samples_dropped, 0);
    // the start-time check never trains anything above the cap
    assert!(start.steps.staleness_max.iter().all(|s| *s <= 1));
}

#[test]
fn resuming_before_the_new_weights_land_is_one_step_off_policy() {
    // At most one sample started and not released (max_lag_samples = batch = 1), 0.5 s steps
    // (weight sync included). Take: generation resumes when the trainer takes the batch, with
    // the weights the rollout has: every sample after the first is one version old. Sync: it
    // resumes once the step ended and its weights are loaded: every sample is on-policy.
    let gate = |release| {
        let opt = Streaming { max_lag_samples: Some(1), lag_release: release, ..Streaming::default() };
        Scenario { pipeline: Pipeline::FullyAsync(opt), ..one_slot(0.5, 6.2) }
    };
    assert_eq!(run(&gate(LagRelease::Take)).steps.staleness_max, vec![0, 1, 1, 1, 1, 1]);
    // s0 0-1, train 1-1.5, s1 1.5-2.5 (version 1), train 2.5-3, s2 3-4, ..., s4 6-7: the event
    // that crosses the horizon is the last one processed
    assert_eq!(run(&gate(LagRelease::Sync)).steps.staleness_max, vec![0, 0, 0, 0, 0]);
}

#[test]
fn refusals() {
    let bad = Scenario { sync_every: 0, ..Scenario::default() };
    assert_eq!(bad.validate().unwrap_err().to_string(), "sync_every: must be in [1, 16777216], got 0");
    let bad = Scenario { staleness_check: StalenessCheck::Finish, ..Scenario::default() };
    assert_eq!(
        bad.validate().unwrap_err().to_string(),
        "staleness_check: 'finish' changes how max_staleness is checked: it needs FullyAsync(max_staleness=...)"
    );
}
