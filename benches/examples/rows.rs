//! The engine rows of `benches/compare.py`, from Rust (no Python), with events per second and, in
//! samples mode, the peak memory per sample started.
//!
//! `cargo run --release -p rollsim-benches --example rows -- [hours] [repeat] [row-filter]`
//! prints one line per row: name, events, best CPU seconds of the thread, M events/s. `mem` runs a 400-hour chapter
//! run in samples mode and prints the growth of peak RSS per sample started (Linux: VmHWM).
//! `digest [hours]` prints, per row, a hash of its whole result in summary and in samples mode
//! (and of the agentic row with the other KV policies): two builds that print the same digests
//! give the same results, bit for bit.
use rollsim_core::pipeline::agentic::{AgenticConfig, Dist, KvPolicy};
use rollsim_core::scenario::{BatchOrder, Decode, OnUpdate, Prefill, Streaming};
use rollsim_core::{run_simple, Lengths, Pipeline, RngKind, RunOptions, Scenario};

fn rows(h: f64) -> Vec<(&'static str, Scenario, RunOptions)> {
    let summary = RunOptions { record_samples: false, ..RunOptions::default() };
    let samples = RunOptions::default();
    let general = RunOptions { general_engine: true, ..summary };
    let sc = Scenario { horizon_s: h, ..Scenario::default() };
    let py = Scenario { rng: RngKind::Python, ..sc.clone() };
    let batched = Scenario {
        decode: Decode { slots_per_instance: 32, slowdown_per_seq: 0.01, ..Decode::default() },
        ..sc.clone()
    };
    let batched256 = Scenario {
        decode: Decode { slots_per_instance: 256, slowdown_per_seq: 0.004, ..Decode::default() },
        ..sc.clone()
    };
    let kv = Scenario { decode: Decode { kv_cache_tokens: 160_000.0, ..batched.decode.clone() }, ..sc.clone() };
    let areal = Scenario {
        group_size: 8,
        prefill: Prefill { prompt_tokens: 500.0, prefill_tokens_per_s: 10_000.0, ..Prefill::default() },
        pipeline: Pipeline::FullyAsync(Streaming {
            admission_eta: Some(2),
            batch_order: BatchOrder::OldestFirst,
            on_update: OnUpdate::AbortResubmit,
            ..Streaming::default()
        }),
        ..sc.clone()
    };
    // 30-turn agentic trajectories: ~660-token turns, lognormal tool calls (median 2.7 s), 200-token
    // observations, contexts up to 150K tokens, on the KV row's instances
    let agentic = Scenario {
        lengths: Lengths::LogNormal { mu: 6.0, sigma: 1.0, max_tokens: 4096.0, group_correlation: 0.0 },
        agentic: Some(AgenticConfig {
            max_turns: 30,
            tool_latency_s: Dist::Of(Lengths::LogNormal {
                mu: 1.0,
                sigma: 1.0,
                max_tokens: 600.0,
                group_correlation: 0.0,
            }),
            observation_tokens: Dist::Const(200.0),
            max_context_tokens: 150_000.0,
            ..AgenticConfig::default()
        }),
        ..kv.clone()
    };
    let wide = Scenario { rollout_slots: 65_536, batch_size: 131_072, horizon_s: h / 16.0, ..sc.clone() };
    vec![
        ("fast path, rng=fast, summary", sc.clone(), summary),
        ("fast path, rng=fast, samples", sc.clone(), samples),
        ("fast path, rng=python, summary", py.clone(), summary),
        ("fast path, rng=python, samples", py, samples),
        ("fast path, cap=2, summary", Scenario { pipeline: Pipeline::fully_async(Some(2)), ..sc.clone() }, summary),
        ("general engine, summary", sc.clone(), general),
        ("general engine, samples", sc.clone(), RunOptions { general_engine: true, ..samples }),
        ("synchronous, summary", Scenario { pipeline: Pipeline::off_policy(0), ..sc.clone() }, summary),
        ("AReaL preset (groups of 8, prefill)", areal, summary),
        ("batched decoding (32 per instance)", batched, summary),
        ("batched decoding (256 per instance)", batched256, summary),
        ("batched (32), KV 160K tokens/instance", kv, summary),
        ("agentic 30 turns, batched (32), KV 160K", agentic, summary),
        ("fast path, 65536 slots, summary", wide, summary),
    ]
}

/// CPU time of this thread, seconds (Linux schedstat; wall time elsewhere): less noisy than wall
/// time on a shared machine.
fn cpu_s(wall: std::time::Instant) -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()))
        .map_or(wall.elapsed().as_secs_f64(), |ns| ns as f64 * 1e-9)
}

fn vm_hwm_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("mem") {
        let sc = Scenario { horizon_s: 400.0 * 3600.0, ..Scenario::default() };
        let before = vm_hwm_kb();
        let r = run_simple(&sc, &RunOptions::default()).unwrap();
        let after = vm_hwm_kb();
        let n = r.summary.samples_started;
        println!(
            "mem: {n} samples, peak RSS +{} kB: {:.1} bytes per sample",
            after - before,
            (after - before) as f64 * 1024.0 / n as f64
        );
        return;
    }
    if args.get(1).map(String::as_str) == Some("digest") {
        use std::hash::{Hash, Hasher};
        let hours: f64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20.0);
        let mut all = rows(hours * 3600.0);
        let agentic = all.iter().find(|r| r.0.starts_with("agentic")).expect("the agentic row").1.clone();
        for (name, policy) in [("agentic, kv_policy hold", KvPolicy::Hold), ("agentic, kv_policy drop", KvPolicy::Drop)]
        {
            let mut sc = agentic.clone();
            sc.agentic.as_mut().expect("agentic").kv_policy = policy;
            all.push((name, sc, RunOptions::default()));
        }
        for (name, sc, opts) in all {
            for record_samples in [false, true] {
                let r = run_simple(&sc, &RunOptions { record_samples, ..opts }).unwrap();
                let mut h = std::collections::hash_map::DefaultHasher::new();
                format!("{r:?}").hash(&mut h);
                println!("{name:40} {:7} {:016x}", if record_samples { "samples" } else { "summary" }, h.finish());
            }
        }
        return;
    }
    let hours: f64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100.0);
    let repeat: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let filter = args.get(3).cloned().unwrap_or_default();
    for (name, sc, opts) in rows(hours * 3600.0) {
        if !name.contains(filter.as_str()) {
            continue;
        }
        let (mut best, mut events) = (f64::INFINITY, 0);
        for _ in 0..repeat {
            let wall = std::time::Instant::now();
            let t0 = cpu_s(wall);
            let r = run_simple(&sc, &opts).unwrap();
            best = best.min(cpu_s(wall) - t0);
            events = r.summary.events;
        }
        println!("{name:40} {events:10} {best:8.4} {:7.2}", events as f64 / best / 1e6);
    }
}
