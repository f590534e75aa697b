//! Loops inside one step of the engine stay bounded: the pool's own events (KV preemptions,
//! shared-prefill ends, speed refreshes) count toward the event budget (`RunOptions::max_events`)
//! and the interrupt check, and a speed refresh at a time too large for the refresh interval to be
//! resolved (t + interval == t in f64) still moves the clock on.
use rollsim_core::scenario::{Decode, PartialRollout};
use rollsim_core::{run, run_simple, Error, Lengths, Pipeline, RunOptions, Scenario};

/// One instance of 5,000 slots with KV for about 125 requests after 2 s: every slot starts at once
/// (one token each fits) and they are preempted one at a time, all in the first call of the pool's
/// `next_event` (no request finishes before them).
fn cascade() -> Scenario {
    Scenario {
        rollout_slots: 5_000,
        batch_size: 5_000,
        horizon_s: 2.0,
        decode: Decode { slots_per_instance: 5_000, kv_cache_tokens: 7_500.0, ..Decode::default() },
        lengths: Lengths::LogNormal { mu: 5.0, sigma: 0.1, max_tokens: 1000.0, group_correlation: 0.0 },
        ..Scenario::default()
    }
}

#[test]
fn the_preemption_cascade_is_interruptible_and_counts_toward_the_budget() {
    let sc = cascade();
    let full = run_simple(&sc, &RunOptions { record_samples: false, ..RunOptions::default() }).unwrap();
    let s = &full.summary;
    // every slot started; the first finish (answers of ~150 tokens at 30 tokens/s) comes after the
    // horizon and ends the run, its slot refilled
    assert_eq!((s.samples_started, s.samples_finished, s.events), (5_001, 1, 1));

    // the interrupt check is called inside the cascade: every 1,000 of its preemptions
    let mut calls = 0u64;
    let opts = RunOptions { record_samples: false, check_every: 1000, ..RunOptions::default() };
    let r = run(&sc, &opts, &mut || {
        calls += 1;
        calls == 3
    });
    assert_eq!(r.err(), Some(Error::Interrupted));
    assert_eq!(calls, 3);
    let mut calls = 0u64;
    run(&sc, &opts, &mut || {
        calls += 1;
        false
    })
    .unwrap();
    // at the first preemption, every 1,000 preemptions after it, and at the first finish
    assert_eq!(s.preemptions, 4_932);
    assert_eq!(calls, 1 + (s.preemptions - 1) / 1000 + 1);

    // and the budget stops it, whoever counts the events (checked every 1,000 here)
    let capped = RunOptions { record_samples: false, max_events: 2000, check_every: 1000, ..RunOptions::default() };
    let e = run_simple(&sc, &capped).unwrap_err();
    assert_eq!(e, Error::TooManyEvents { limit: 2000 });
    assert!(e.to_string().starts_with("max_events: the run processed more than 2000 events"), "{e}");
    let enough = RunOptions { max_events: s.preemptions + s.events, ..capped };
    assert_eq!(run_simple(&sc, &enough).unwrap().summary.preemptions, s.preemptions);
}

/// Context-dependent speed on instances at a time where a refresh interval (1/32 of the mean
/// context, at least one token, over the speed) is below the time's resolution: the first batch's
/// training step lasts 1e12 s, so the second batch decodes at t = 1e12 s (1 ulp = 1.2e-4 s) at
/// 1e6 tokens/s (one token: 1e-6 s).
fn refresh_at_huge_time(slope: f64) -> Scenario {
    Scenario {
        rollout_slots: 4,
        batch_size: 4,
        decode_tokens_per_s: 1e6,
        train_step_s: 9e11,
        horizon_s: 1e12,
        pipeline: Pipeline::OffPolicy { k: 0, partial: PartialRollout::default() },
        decode: Decode { slots_per_instance: 4, s_per_context_token: slope, ..Decode::default() },
        lengths: Lengths::LogNormal { mu: 6.0, sigma: 0.5, max_tokens: 4096.0, group_correlation: 0.0 },
        ..Scenario::default()
    }
}

#[test]
fn a_speed_refresh_below_the_time_resolution_still_moves_the_clock() {
    let opts = RunOptions { max_events: 10_000_000, ..RunOptions::default() };
    let r = run_simple(&refresh_at_huge_time(1e-12), &opts).unwrap();
    let s = &r.summary;
    // two batches of 4 (the second at t = 1e12 + its generation), each trained
    assert_eq!((s.samples_started, s.samples_finished, s.steps), (8, 8, 2));
    let starts = r.samples.as_ref().unwrap();
    assert!(starts.start_s[4..].iter().all(|&t| t >= 9e11), "{:?}", starts.start_s);
    // the second batch's answers finish within a few ulps of 1e12 s per refresh
    let finish = &starts.finish_s;
    assert!(finish[4..].iter().all(|&t| t > 9e11 && t < 9e11 + 1.0), "{finish:?}");
}

/// Context-dependent speed where the instance's clock is beyond one token's resolution: the idle
/// instance's clock runs on at 1e9 tokens/s through the first batch's 1e7-s step, to about 1e16
/// tokens (one ulp: 2 tokens), where the second batch's answer of e = 2.7 tokens decodes and the
/// refresh interval is one token.
#[test]
fn a_speed_refresh_below_the_clock_resolution_still_moves_the_clock() {
    let sc = Scenario {
        rollout_slots: 1,
        batch_size: 1,
        decode_tokens_per_s: 1e9,
        train_step_s: 1e7,
        horizon_s: 2e7,
        pipeline: Pipeline::OffPolicy { k: 0, partial: PartialRollout::default() },
        decode: Decode { slots_per_instance: 1, s_per_context_token: 1e-4, ..Decode::default() },
        lengths: Lengths::LogNormal { mu: 1.0, sigma: 0.0, max_tokens: 4096.0, group_correlation: 0.0 },
        ..Scenario::default()
    };
    let r = run_simple(&sc, &RunOptions { max_events: 1_000_000, ..RunOptions::default() }).unwrap();
    assert_eq!((r.summary.samples_finished, r.summary.steps), (2, 2));
    let finish = &r.samples.as_ref().unwrap().finish_s;
    // 2.7 tokens at about 1 / (1e-4 s x 1.4 tokens of context) = 7,000 tokens/s: well under 0.01 s
    assert!(finish[1] > 1e7 && finish[1] < 1e7 + 0.01, "{finish:?}");
}
