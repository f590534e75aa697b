//! Prefill as a shared resource of an instance (`PrefillMode::Shared`): hand-worked goldens (one
//! request prefilling while another decodes), the per-slot model unchanged where no prompt is
//! prefilled, and the run's bookkeeping under every update mode.

mod common;

use common::{digest_run, digest_samples, golden_bases};
use rollsim_core::scenario::{Decode, OnUpdate, Prefill, PrefillMode, Streaming};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, Scenario};

/// One instance of two slots decoding at 10 tokens/s per sequence whatever the batch (a step lasts
/// 0.1 s), two answers of 50 tokens, 1,000-token prompts prefilled at 10,000 tokens/s by the
/// instance, `budget` tokens per step, one synchronous batch.
fn two(budget: u32) -> Scenario {
    Scenario {
        rollout_slots: 2,
        decode_tokens_per_s: 10.0,
        batch_size: 2,
        train_step_s: 100.0,
        horizon_s: 50.0,
        lengths: Lengths::empirical(vec![50.0], None).unwrap(),
        pipeline: Pipeline::off_policy(0),
        decode: Decode { slots_per_instance: 2, ..Decode::default() },
        prefill: Prefill {
            prompt_tokens: 1000.0,
            prefill_tokens_per_s: 10_000.0,
            mode: PrefillMode::Shared,
            max_num_batched_tokens: budget,
            ..Prefill::default()
        },
        ..Scenario::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn one_request_prefills_while_another_decodes() {
    // A (sample 0) prefills alone: 1,000 / 10,000 = 0.1 s. Then A decodes while B's prompt is
    // prefilled in the same steps, 101 - 1 = 100 prompt tokens a step: a step lasts 0.1 + 100 /
    // 10,000 = 0.11 s, so A decodes at 1 / 0.11 tokens/s and B's prompt takes 10 steps (1.1 s, to
    // 1.2 s), in which A decodes 10 tokens. From 1.2 s both decode at 10 tokens/s: A's last 40
    // tokens end at 5.2 s, B's 50 at 6.2 s.
    let r = run_simple(&two(101), &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert_eq!(s.start_s, vec![0.0, 0.0]);
    assert!(close(s.finish_s[0], 5.2) && close(s.finish_s[1], 6.2), "finish {:?}", &s.finish_s);
    assert_eq!(r.summary.tokens_prefilled, 2000.0);
    assert_eq!(r.summary.tokens_generated, 100.0);
    assert!(close(r.summary.slot_busy_s, 5.2 + 6.2), "busy {}", r.summary.slot_busy_s);

    // A budget of 1,001 tokens a step: B's prompt in one step of 0.1 + 1,000 / 10,000 = 0.2 s (to
    // 0.3 s) in which A decodes one token; A's last 49 end at 5.2 s, B's 50 at 5.3 s.
    let r = run_simple(&two(1001), &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert!(close(s.finish_s[0], 5.2) && close(s.finish_s[1], 5.3), "finish {:?}", &s.finish_s);

    // Per slot (today's model) each prompt takes its own 0.1 s beside the other: both end at 5.1 s.
    let per_slot = Scenario { prefill: Prefill { mode: PrefillMode::PerSlot, ..Prefill::default() }, ..two(101) };
    let per_slot = Scenario {
        prefill: Prefill { prompt_tokens: 1000.0, prefill_tokens_per_s: 10_000.0, ..per_slot.prefill },
        ..per_slot
    };
    let r = run_simple(&per_slot, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert!(close(s.finish_s[0], 5.1) && close(s.finish_s[1], 5.1), "finish {:?}", &s.finish_s);
}

#[test]
fn kv_capacity_counts_the_prompts_in_prefill() {
    // As in the first golden, with 2,060 tokens of KV: A and B are admitted at once (B's prompt
    // fits beside A's: 1,000 + 1,000 + 1), and both prompts hold KV while they wait. At 1.2 s the
    // KV is 2,000 + 10 (A's tokens), then grows by 20 tokens/s: full at 3.7 s (A 35 tokens, B 25),
    // when B (admitted last) is preempted. B's 1,000 + 25 + 1 tokens fit once A ends (5.2 s): its
    // context is prefilled again (1,025 tokens, alone: 0.1025 s) and its last 25 tokens end at
    // 5.2 + 0.1025 + 2.5 = 7.8025 s.
    let sc =
        Scenario { decode: Decode { slots_per_instance: 2, kv_cache_tokens: 2060.0, ..Decode::default() }, ..two(101) };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert!(close(s.finish_s[0], 5.2) && close(s.finish_s[1], 7.8025), "finish {:?}", &s.finish_s);
    assert_eq!((r.summary.preemptions, r.summary.tokens_recomputed), (1, 1025.0));
    assert!(close(r.summary.kv_wait_s, 5.2 - 3.7), "KV wait {}", r.summary.kv_wait_s);
}

#[test]
fn decoding_speed_depends_on_the_batch_while_prompts_wait() {
    // A measured table: 10 tokens/s alone, 16 tokens/s (8 each) for two. B arrives at 0.1 s behind
    // A's prefill as above; while B's prompt waits, a step of one decode token and 100 prompt tokens
    // lasts 0.1 + 0.01 s as before. Then both decode at 8 tokens/s: A's last 40 tokens take 5 s (to
    // 6.2 s), B then runs alone at 10 tokens/s: 50 - 40 = 10 tokens in 1 s (to 7.2 s).
    let sc = Scenario {
        decode: Decode { slots_per_instance: 2, throughput_table: vec![(1, 10.0), (2, 16.0)], ..Decode::default() },
        ..two(101)
    };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert!(close(s.finish_s[0], 6.2) && close(s.finish_s[1], 7.2), "finish {:?}", &s.finish_s);
}

#[test]
fn a_pause_stops_the_prefill_too() {
    // One slot, 1,000-token prompts prefilled at 100 tokens/s (10 s), answers of 10 tokens at 10
    // tokens/s, steps of 1 s, a 5 s rollout pause at every weight update.
    let sc = Scenario {
        rollout_slots: 1,
        batch_size: 1,
        decode_tokens_per_s: 10.0,
        train_step_s: 1.0,
        horizon_s: 30.0,
        rollout_pause_s: 5.0,
        lengths: Lengths::empirical(vec![10.0], None).unwrap(),
        pipeline: Pipeline::FullyAsync(Streaming { on_update: OnUpdate::Continue, ..Streaming::default() }),
        decode: Decode { slots_per_instance: 1, ..Decode::default() },
        prefill: Prefill {
            prompt_tokens: 1000.0,
            prefill_tokens_per_s: 100.0,
            prefix_sharing: false,
            mode: PrefillMode::Shared,
            max_num_batched_tokens: 2,
            ..Prefill::default()
        },
        ..Scenario::default()
    };
    // sample 0: prefill 0-10 s, decode 10-11 s; step 11-12 s; sample 1 starts at 11 s, its prefill
    // is stopped by the pause at 12 s (1 s done) until 17 s, and ends at 17 + 9 = 26 s; decoding
    // to 27 s.
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    assert!(close(s.finish_s[0], 11.0), "finish {:?}", &s.finish_s);
    assert_eq!(s.start_s[1], 11.0);
    assert!(close(s.finish_s[1], 27.0), "finish {:?}", &s.finish_s);
}

/// The goldens' grouped scenario (`common::golden_bases`).
fn grouped() -> Scenario {
    golden_bases().1
}

#[test]
fn without_a_prefill_to_run_shared_is_per_slot_bit_for_bit() {
    let free = Prefill { prefill_tokens_per_s: f64::INFINITY, ..grouped().prefill };
    for pipeline in [Pipeline::off_policy(0), Pipeline::fully_async(Some(2))] {
        let a = Scenario { prefill: free, pipeline: pipeline.clone(), ..grouped() };
        let b = Scenario { prefill: Prefill { mode: PrefillMode::Shared, ..free }, ..a.clone() };
        let (ra, rb) =
            (run_simple(&a, &RunOptions::default()).unwrap(), run_simple(&b, &RunOptions::default()).unwrap());
        assert_eq!(digest_run(&ra), digest_run(&rb));
        assert_eq!(digest_samples(ra.samples.as_ref().unwrap()), digest_samples(rb.samples.as_ref().unwrap()));
    }
}

#[test]
fn shared_prefill_under_every_update_mode_keeps_the_books() {
    for on_update in [
        OnUpdate::Continue,
        OnUpdate::AbortDrop,
        OnUpdate::AbortResubmit,
        OnUpdate::Wait,
        OnUpdate::KeepRecompute,
        OnUpdate::KeepStale,
    ] {
        for (pause, kv) in [(0.0, 0.0), (7.0, 0.0), (0.0, 40_000.0), (7.0, 60_000.0)] {
            let sc = Scenario {
                pipeline: Pipeline::FullyAsync(Streaming { on_update, max_staleness: Some(1), ..Streaming::default() }),
                prefill: Prefill { prefill_tokens_per_s: 4000.0, mode: PrefillMode::Shared, ..grouped().prefill },
                decode: Decode { kv_cache_tokens: kv, ..grouped().decode },
                rollout_pause_s: pause,
                horizon_s: 3600.0,
                ..grouped()
            };
            let r = run_simple(&sc, &RunOptions::default()).unwrap();
            let s = &r.summary;
            assert!(s.steps > 0, "{on_update:?}: no step");
            let total = s.tokens_trained + s.tokens_wasted + s.tokens_pending;
            assert!(close(s.tokens_generated, total), "{on_update:?}: {} != {total}", s.tokens_generated);
            assert!(s.tokens_prefilled >= 500.0 * (s.samples_started / 4) as f64, "{on_update:?}");
            let full = s.preemptions > 0 || s.kv_wait_s > 0.0;
            assert!(kv == 0.0 || on_update != OnUpdate::Continue || full, "{on_update:?}: KV never full");
        }
    }
}

#[test]
fn shared_prefill_is_refused_where_it_does_not_apply() {
    let msg = |sc: Scenario| sc.validate().unwrap_err().to_string();
    let no_instances = Scenario { decode: Decode::default(), ..two(101) };
    assert_eq!(
        msg(no_instances),
        "prefill_mode: 'shared' shares an instance's steps between prefill and decoding: it needs \
         slots_per_instance > 0, got slots_per_instance=0"
    );
    assert_eq!(
        msg(two(2)),
        "max_num_batched_tokens: must be > slots_per_instance (2) with prefill_mode = 'shared' (a step holds every \
         decoding sequence's token and at least one prompt token), got 2"
    );
    let per_slot = Scenario { prefill: Prefill { mode: PrefillMode::PerSlot, ..two(101).prefill }, ..two(101) };
    assert_eq!(
        msg(per_slot),
        "max_num_batched_tokens: applies only with prefill_mode = 'shared' (the budget of a shared step), got 101 \
         with prefill_mode = 'per_slot'"
    );
    assert_eq!(msg(two(1)), "max_num_batched_tokens: must be in [2, 16777216], got 1");
    assert!(two(3).validate().is_ok());
}

/// One sequence at a time on one slot: 10 tokens/s without context (0.1 s a step), a step
/// `slope` seconds longer per token of context, a 1,000-token prompt (free prefill), answers of
/// 1,000 tokens.
fn with_context(slope: f64) -> Scenario {
    Scenario {
        rollout_slots: 1,
        batch_size: 1,
        decode_tokens_per_s: 10.0,
        train_step_s: 1e5,
        horizon_s: 1e6,
        lengths: Lengths::empirical(vec![1000.0], None).unwrap(),
        pipeline: Pipeline::off_policy(0),
        decode: Decode { slots_per_instance: 1, s_per_context_token: slope, ..Decode::default() },
        prefill: Prefill { prompt_tokens: 1000.0, ..Prefill::default() },
        ..Scenario::default()
    }
}

#[test]
fn context_slope_against_the_integral() {
    // decoding token j (context 1,000 + j) takes 0.1 + 1e-4 (1,000 + j) s: the answer takes
    // 0.1 x 1,000 + 1e-4 (1,000 x 1,000 + 1,000^2 / 2) = 100 + 150 = 250 s. The engine's speed is
    // piecewise constant, at the midpoint of refresh intervals of 1/32 of the context: within 5e-4
    // (it gives 250.047 s).
    let r = run_simple(&with_context(1e-4), &RunOptions::default()).unwrap();
    let f = r.samples.as_ref().unwrap().finish_s[0];
    assert!((f - 250.0).abs() < 5e-4 * 250.0, "finish {f}");
    // no slope: the batch-only speed, bit for bit
    let flat = Scenario { decode: Decode { slots_per_instance: 1, ..Decode::default() }, ..with_context(0.0) };
    let (a, b) = (
        run_simple(&flat, &RunOptions::default()).unwrap(),
        run_simple(&with_context(0.0), &RunOptions::default()).unwrap(),
    );
    assert_eq!(digest_run(&a), digest_run(&b));
    assert_eq!(b.samples.as_ref().unwrap().finish_s[0], 100.0);
}

#[test]
fn context_slope_with_a_batch_and_shared_prefill_keeps_the_books() {
    for mode in [PrefillMode::PerSlot, PrefillMode::Shared] {
        let sc = Scenario {
            decode: Decode { s_per_context_token: 2e-7, ..grouped().decode },
            prefill: Prefill { prefill_tokens_per_s: 4000.0, mode, ..grouped().prefill },
            horizon_s: 3600.0,
            ..grouped()
        };
        let r = run_simple(&sc, &RunOptions::default()).unwrap();
        let s = &r.summary;
        let total = s.tokens_trained + s.tokens_wasted + s.tokens_pending;
        assert!(s.steps > 0 && close(s.tokens_generated, total), "{mode:?}");
        // longer steps: fewer tokens than without the slope
        let flat = Scenario { decode: grouped().decode, ..sc.clone() };
        assert!(s.tokens_generated < run_simple(&flat, &RunOptions::default()).unwrap().summary.tokens_generated);
    }
    let bad = Scenario { decode: Decode { s_per_context_token: 1e-6, ..Decode::default() }, ..grouped() };
    assert_eq!(
        bad.validate().unwrap_err().to_string(),
        "decode_s_per_context_token: needs slots_per_instance > 0 (the instances whose steps it lengthens), got \
         slots_per_instance=0"
    );
}
