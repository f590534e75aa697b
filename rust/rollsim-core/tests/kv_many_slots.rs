//! Instances with many slots and little KV (more slots per instance than `RESYNC_EVERY` updates
//! between the exact recomputations of the approximate KV sums): every slot starts at once and
//! requests are preempted one at a time. In debug builds, every decision of the approximate sums
//! is checked against the exact ones (`debug_assert!` in `pipeline/instances.rs`).
use rollsim_core::pipeline::agentic::{AgenticConfig, Dist};
use rollsim_core::scenario::{Decode, Prefill};
use rollsim_core::{run_simple, Lengths, RunOptions, Scenario};

#[test]
fn a_preemption_cascade_on_a_wide_instance_keeps_the_kv_bound() {
    // 2,048 slots on one instance, KV for about 12 requests of the mean answer
    let sc = Scenario {
        rollout_slots: 2048,
        horizon_s: 60.0,
        decode: Decode { slots_per_instance: 2048, kv_cache_tokens: 40_000.0, ..Decode::default() },
        ..Scenario::default()
    };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    // all 2,048 start (1 token each fits), and 40,000 / 1,800 = 22 keep decoding after 60 s at 30/s
    assert!(r.summary.preemptions >= 2000, "{} preemptions", r.summary.preemptions);
    assert_eq!(r.summary.samples_started, 2048 + r.summary.samples_finished);
}

#[test]
fn agentic_turns_on_wide_instances_keep_the_kv_bound() {
    let sc = Scenario {
        rollout_slots: 2048,
        batch_size: 256,
        horizon_s: 600.0,
        decode: Decode {
            slots_per_instance: 1024,
            slowdown_per_seq: 0.001,
            kv_cache_tokens: 400_000.0,
            ..Decode::default()
        },
        prefill: Prefill { prompt_tokens: 200.0, prefill_tokens_per_s: 20_000.0, ..Prefill::default() },
        lengths: Lengths::LogNormal { mu: 5.0, sigma: 1.0, max_tokens: 2048.0, group_correlation: 0.0 },
        agentic: Some(AgenticConfig {
            max_turns: 10,
            tool_latency_s: Dist::Const(5.0),
            observation_tokens: Dist::Const(100.0),
            max_context_tokens: 30_000.0,
            ..AgenticConfig::default()
        }),
        ..Scenario::default()
    };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let a = r.agentic.as_ref().unwrap();
    assert!(
        r.summary.preemptions > 0 && a.summary.kv_evictions > 0,
        "{:?} {:?}",
        r.summary.preemptions,
        a.summary.kv_evictions
    );
}
