//! Generated scenarios (every field set, any pipeline, empirical lengths so that the values are
//! the same on every platform), pinned bit for bit: a digest of every summary value and column
//! per scenario, in `tests/data/generated_digests.txt` (one per line, by seed). A change here is
//! a change of the engine's results.

mod common;

use common::{digest_run, scenario, LengthKinds};
use rollsim_core::{run_simple, RunOptions};

const N: u64 = 600;

#[test]
fn generated_scenarios_are_unchanged() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/generated_digests.txt");
    let got: Vec<String> = (0..N)
        .map(|seed| {
            let sc = scenario(seed, LengthKinds::EmpiricalOnly);
            format!("{:016x}", digest_run(&run_simple(&sc, &RunOptions::default()).expect("valid scenario")))
        })
        .collect();
    if std::env::var_os("ROLLSIM_PIN").is_some() {
        std::fs::write(path, got.join("\n") + "\n").unwrap();
    }
    let want: Vec<String> = std::fs::read_to_string(path).unwrap().lines().map(String::from).collect();
    let bad: Vec<u64> = (0..N).filter(|s| want.get(*s as usize) != Some(&got[*s as usize])).collect();
    assert!(bad.is_empty(), "results changed for seeds {bad:?}");
}
