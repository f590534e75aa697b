//! Runs the chapter's fully-asynchronous scenario for a long horizon and prints events/s.
//! `cargo run --release -p rollsim-core --example chapter -- [hours] [samples|summary]`
use rollsim_core::{run_simple, RunOptions, Scenario};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let hours: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100.0);
    let record = args.get(2).map(|s| s == "samples").unwrap_or(false);
    let sc = Scenario { horizon_s: hours * 3600.0, ..Scenario::default() };
    let opts = RunOptions { record_samples: record, ..RunOptions::default() };
    let t0 = std::time::Instant::now();
    let r = run_simple(&sc, &opts).expect("valid scenario");
    let dt = t0.elapsed().as_secs_f64();
    println!("{} events in {:.4} s: {:.2} M events/s", r.summary.events, dt, r.summary.events as f64 / dt / 1e6);
}
