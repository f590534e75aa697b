//! Multi-turn agentic trajectories (`pipeline/agentic.rs`): a hand-worked golden per KV policy (one
//! trajectory of three turns through two tool calls), and one turn equal to the single-turn run bit
//! for bit on generated scenarios.

mod common;

use common::{digest_run, scenario, LengthKinds};
use rollsim_core::pipeline::agentic::{AgenticConfig, Dist, KvPolicy};
use rollsim_core::scenario::{Prefill, Streaming};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, Scenario};

/// One trajectory at a time (`max_lag_samples = 1`, batches of one): 300 tokens per turn at 30
/// tokens/s (10 s), a 120-token prompt at 600 tokens/s (0.2 s), three turns, 5 s tool calls that
/// return 60 tokens.
fn one(policy: KvPolicy) -> Scenario {
    Scenario {
        rollout_slots: 1,
        batch_size: 1,
        decode_tokens_per_s: 30.0,
        train_step_s: 1000.0,
        horizon_s: 40.0,
        lengths: Lengths::empirical(vec![300.0], None).unwrap(),
        prefill: Prefill { prompt_tokens: 120.0, prefill_tokens_per_s: 600.0, ..Prefill::default() },
        pipeline: Pipeline::FullyAsync(Streaming { max_lag_samples: Some(1), ..Streaming::default() }),
        agentic: Some(AgenticConfig {
            max_turns: 3,
            tool_latency_s: Dist::Const(5.0),
            observation_tokens: Dist::Const(60.0),
            kv_policy: policy,
            ..AgenticConfig::default()
        }),
        ..Scenario::default()
    }
}

#[test]
fn three_turns_through_two_tool_calls() {
    // prefill seconds of turns 2 and 3, and the slot-seconds busy until the finish
    for (policy, prefill, busy) in [
        (KvPolicy::Keep, [0.1, 0.1], 30.4),
        (KvPolicy::Hold, [0.1, 0.1], 40.4),
        // the whole context again, minus the prompt in the prefix cache: 360 then 720 tokens
        (KvPolicy::Drop, [0.6, 1.2], 32.0),
    ] {
        let r = run_simple(&one(policy), &RunOptions::default()).unwrap();
        let s = r.samples.as_ref().unwrap();
        let a = r.agentic.as_ref().unwrap();
        let c = a.columns.as_ref().unwrap();
        let finish = 0.2 + 10.0 + 5.0 + prefill[0] + 10.0 + 5.0 + prefill[1] + 10.0;
        assert!((s.finish_s[0] - finish).abs() < 1e-9, "{policy:?}: finish {}", s.finish_s[0]);
        assert_eq!((s.length_tokens[0], c.turns[0], c.tokens_observed[0], c.tool_s[0]), (900.0, 3, 120.0, 10.0));
        assert!((c.prefill_tokens[0] - 600.0 * (prefill[0] + prefill[1])).abs() < 1e-9, "{policy:?}");
        assert_eq!((s.trained_step[0], s.version_start[0], s.n_versions[0]), (0, 0, 1));
        let seg = r.segments.as_ref().unwrap();
        assert_eq!((seg.sample_id[0], seg.version[0], seg.first_token[0], seg.last_token[0]), (0, 0, 0.0, 900.0));
        assert_eq!(r.summary.end_s, s.finish_s[0]);
        assert!((r.summary.slot_busy_s - busy).abs() < 1e-9, "{policy:?}: busy {}", r.summary.slot_busy_s);
        assert_eq!((a.summary.turns, a.summary.tool_calls), (3, 2));
        assert_eq!(a.summary.gpu_hold_s, if policy == KvPolicy::Hold { 10.0 } else { 0.0 });
        // GPU time until end_s: 30 s decoding and the three turns' prefill (the prompt's 0.2 s, then
        // the later turns'); the next trajectory's prompt prefill starts at end_s and is not counted
        let g = &a.summary;
        assert!((g.gpu_prefill_s - (0.2 + prefill[0] + prefill[1])).abs() < 1e-9, "{policy:?}: {}", g.gpu_prefill_s);
        assert!((g.gpu_decode_s - 30.0).abs() < 1e-9, "{policy:?}: decode {}", g.gpu_decode_s);
        // the next trajectory starts when this one is taken for training
        assert_eq!(s.start_s[1], s.finish_s[0]);
    }
}

#[test]
fn one_turn_is_the_single_turn_run() {
    let general = RunOptions { general_engine: true, ..RunOptions::default() };
    let mut n = 0;
    for seed in 0..300 {
        let sc = scenario(seed, LengthKinds::Any);
        if !matches!(sc.pipeline, Pipeline::FullyAsync(_)) {
            continue;
        }
        for policy in [KvPolicy::Keep, KvPolicy::Drop, KvPolicy::Hold] {
            let cfg = AgenticConfig { max_turns: 1, kv_policy: policy, ..AgenticConfig::default() };
            let agentic = Scenario { agentic: Some(cfg), ..sc.clone() };
            let (mut a, b) = (run_simple(&agentic, &general).unwrap(), run_simple(&sc, &general).unwrap());
            assert!(a.agentic.take().is_some());
            // every column and summary value, bit for bit (NaN included)
            assert_eq!(digest_run(&a), digest_run(&b), "seed {seed} {policy:?}");
        }
        n += 1;
    }
    assert!(n > 100, "{n} streaming scenarios");
}

/// `KvPolicy::Keep` with KV capacity: one slot of 1000 tokens of KV, two trajectories of two
/// 200-token turns after a 350-token prompt. A's cached KV (550 tokens) is evicted while B decodes
/// (at 550 + 350 + 30 x = 1000), B's when A lands again; each evicted next turn prefills 200 + 60
/// tokens (the prompt is in its group's prefix cache). Run in debug, the KV bounds are checked.
#[test]
fn cached_kv_is_evicted_least_recent_first() {
    use rollsim_core::scenario::Decode;
    let mut sc = one(KvPolicy::Keep);
    sc.horizon_s = 21.0;
    sc.lengths = Lengths::empirical(vec![200.0], None).unwrap();
    sc.prefill.prompt_tokens = 350.0;
    sc.decode = Decode { slots_per_instance: 1, kv_cache_tokens: 1000.0, ..sc.decode.clone() };
    sc.pipeline = Pipeline::FullyAsync(Streaming::default());
    let ag = sc.agentic.as_mut().unwrap();
    (ag.max_turns, ag.max_trajectories, ag.max_context_tokens) = (2, 2, 999.0);
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let s = r.samples.as_ref().unwrap();
    let a = r.agentic.as_ref().unwrap();
    let finish = 14.5 + 260.0 / 600.0 + 200.0 / 30.0;
    assert!((s.finish_s[0] - finish).abs() < 1e-9, "finish {}", s.finish_s[0]);
    assert_eq!(a.columns.as_ref().unwrap().prefill_tokens, vec![260.0, 260.0]);
    assert_eq!((a.summary.kv_evictions, r.summary.preemptions), (2, 0));

    // many trajectories on tight instances: evictions and preemptions together keep the bounds
    sc = Scenario {
        rollout_slots: 64,
        batch_size: 64,
        horizon_s: 1800.0,
        group_size: 4,
        seed: 7,
        decode: Decode { slots_per_instance: 16, slowdown_per_seq: 0.01, kv_cache_tokens: 60_000.0, ..sc.decode },
        prefill: Prefill { prompt_tokens: 500.0, prefill_tokens_per_s: 10_000.0, ..Prefill::default() },
        agentic: Some(AgenticConfig {
            max_turns: 12,
            tool_latency_s: Dist::Of(Lengths::LogNormal {
                mu: 2.0,
                sigma: 1.0,
                max_tokens: 600.0,
                group_correlation: 0.0,
            }),
            observation_tokens: Dist::Const(300.0),
            stop_prob: 0.1,
            max_context_tokens: 30_000.0,
            ..AgenticConfig::default()
        }),
        ..Scenario::default()
    };
    let r = run_simple(&sc, &RunOptions::default()).unwrap();
    let a = r.agentic.as_ref().unwrap();
    assert!(a.summary.kv_evictions > 0 && r.summary.samples_finished > 0);
}
