//! Per-rank training (`Scenario::train`) on a hand-worked batch: two groups of two answers, 100
//! and 900 tokens, on two ranks at 1 ms per token. Decoding at 100 tokens/s, the batch is ready at
//! 9 s; contiguous dispatch puts one group on each rank (0.2 s and 1.8 s), balanced dispatch pairs
//! a short and a long answer on each (1.0 s each).

use rollsim_core::scenario::{Dispatch, TrainRanks};
use rollsim_core::{run_simple, Lengths, Pipeline, RunOptions, RunResult, Scenario};

fn two_groups(train: Option<TrainRanks>) -> Scenario {
    Scenario {
        rollout_slots: 4,
        batch_size: 4,
        group_size: 2,
        decode_tokens_per_s: 100.0,
        train_step_s: 1.0,
        horizon_s: 11.5,
        pipeline: Pipeline::OffPolicy { k: 0, partial: Default::default() },
        seed: 3, // draws one group of each for the first batch (checked below)
        lengths: Lengths::grouped(vec![100.0, 100.0, 900.0, 900.0], vec![0, 2, 4]).expect("valid"),
        train,
        ..Scenario::default()
    }
}

fn run(sc: &Scenario) -> RunResult {
    sc.validate().expect("valid scenario");
    run_simple(sc, &RunOptions::default()).expect("runs")
}

fn ranks(dispatch: Dispatch) -> TrainRanks {
    TrainRanks {
        dp_ranks: 2,
        dispatch,
        s_per_token: 1e-3,
        s_per_token_sq: 0.0,
        fixed_s: 0.0,
        mini_batches: 1,
        max_tokens_per_gpu: 0.0,
    }
}

#[test]
fn contiguous_waits_for_the_long_group_balanced_splits_it() {
    let con = run(&two_groups(Some(ranks(Dispatch::Contiguous))));
    let mut first: Vec<f64> = con.samples.as_ref().expect("samples").length_tokens[..4].to_vec();
    first.sort_by(f64::total_cmp);
    assert_eq!(first, vec![100.0, 100.0, 900.0, 900.0]);
    let r = con.steps.ranks.as_ref().expect("rank columns");
    assert_eq!((con.steps.start_s[0], con.steps.end_s[0]), (9.0, 11.8));
    assert_eq!((r.rank_slowest_s[0], r.rank_mean_s[0]), (1.8, 1.0));
    let bal = run(&two_groups(Some(ranks(Dispatch::Balanced))));
    let r = bal.steps.ranks.as_ref().expect("rank columns");
    assert_eq!((bal.steps.start_s[0], bal.steps.end_s[0]), (9.0, 11.0));
    assert_eq!((r.rank_slowest_s[0], r.rank_mean_s[0]), (1.0, 1.0));
}

#[test]
fn without_the_part_nothing_changes() {
    let base = run(&two_groups(None));
    assert!(base.steps.ranks.is_none());
    let idle = run(&two_groups(Some(TrainRanks { s_per_token: 0.0, ..ranks(Dispatch::Balanced) })));
    assert_eq!(format!("{:?}", idle.summary), format!("{:?}", base.summary)); // (NaN-aware)
    assert_eq!(idle.samples, base.samples);
    assert_eq!(idle.steps.end_s, base.steps.end_s);
}
