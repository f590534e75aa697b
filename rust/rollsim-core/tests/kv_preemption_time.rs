//! A KV preemption when the time cannot resolve the moment the KV fills: one 4096-slot instance
//! with a throughput table whose speed at two sequences is 1e-6 tokens/s, so the run reaches
//! ~1e10 s, where one ulp of time is ~0.1 token of a sequence at 2e5 tokens/s. The preempted
//! request used to be readmitted and preempted again at the same time forever (no event counted,
//! no interrupt check); it now waits for the next finish.
use rollsim_core::scenario::{Decode, PartialRollout};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, Scenario};

fn scenario(group: u32) -> Scenario {
    Scenario {
        rollout_slots: 4096,
        batch_size: group,
        group_size: group,
        decode_tokens_per_s: 30.0,
        train_step_s: 60.0,
        horizon_s: 60.0,
        lengths: Lengths::LogNormal { mu: 7.0, sigma: 1.0, max_tokens: 4096.0, group_correlation: 0.0 },
        pipeline: Pipeline::OffPolicy { k: 1, partial: PartialRollout::default() },
        decode: Decode {
            slots_per_instance: 4096,
            throughput_table: vec![(1, 30.0), (2, 1e-6), (4096, 1e9)],
            kv_cache_tokens: 4097.0,
            ..Decode::default()
        },
        ..Scenario::default()
    }
}

#[test]
fn a_preempted_request_is_not_readmitted_at_the_same_time() {
    let opts = RunOptions { record_samples: false, max_samples: 3000, ..RunOptions::default() };
    // group 60 never hit the loop: its result is the one it always was
    let s = run_simple(&scenario(60), &opts).expect("a run").summary;
    assert_eq!((s.events, s.preemptions, s.end_s), (61, 203, 5899717684.593017));
    let s = run_simple(&scenario(70), &opts).expect("a run").summary;
    assert_eq!((s.events, s.preemptions, s.end_s), (71, 274, 8789333539.903774));
    let s = run_simple(&scenario(772), &opts).expect("a run").summary;
    assert_eq!((s.events, s.preemptions, s.end_s), (773, 6716, 182941039461.08914));
}
