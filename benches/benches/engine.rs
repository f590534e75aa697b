//! Criterion benchmark of the engine on the chapter's scenario (see README "Performance").
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rollsim_core::scenario::{BatchOrder, Decode, OnUpdate, Prefill, Streaming};
use rollsim_core::{run_simple, Pipeline, RunOptions, Scenario};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine");
    for (name, pipeline, record) in [
        ("fully_async_summary", Pipeline::fully_async(None), false),
        ("fully_async_samples", Pipeline::fully_async(None), true),
        ("fully_async_cap2_summary", Pipeline::fully_async(Some(2)), false),
        ("synchronous_summary", Pipeline::off_policy(0), false),
    ] {
        // 100 simulated hours: about 900k events, long enough to amortize setup.
        let sc = Scenario { pipeline, horizon_s: 360_000.0, ..Scenario::default() };
        let opts = RunOptions { record_samples: record, ..RunOptions::default() };
        let events = run_simple(&sc, &opts).unwrap().summary.events;
        g.throughput(Throughput::Elements(events));
        g.bench_function(name, |b| b.iter(|| run_simple(&sc, &opts).unwrap()));
    }
    // The general streaming engine on the chapter's scenario, and a real system's configuration.
    let sc = Scenario { horizon_s: 360_000.0, ..Scenario::default() };
    let general = RunOptions { record_samples: false, general_engine: true, ..RunOptions::default() };
    g.throughput(Throughput::Elements(run_simple(&sc, &general).unwrap().summary.events));
    g.bench_function("streaming_general_summary", |b| b.iter(|| run_simple(&sc, &general).unwrap()));
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
    let opts = RunOptions { record_samples: false, ..RunOptions::default() };
    g.throughput(Throughput::Elements(run_simple(&areal, &opts).unwrap().summary.events));
    g.bench_function("areal_groups_summary", |b| b.iter(|| run_simple(&areal, &opts).unwrap()));
    // Batched decoding: instances of 32 slots, 1 % slower per extra sequence on board.
    let batched = Scenario {
        decode: Decode { slots_per_instance: 32, slowdown_per_seq: 0.01, ..Decode::default() },
        ..sc.clone()
    };
    g.throughput(Throughput::Elements(run_simple(&batched, &opts).unwrap().summary.events));
    g.bench_function("batched_p32_summary", |b| b.iter(|| run_simple(&batched, &opts).unwrap()));
    // The same with a KV-cache capacity that preempts (about one preemption per 75 finishes).
    let kv = Scenario { decode: Decode { kv_cache_tokens: 160_000.0, ..batched.decode.clone() }, ..batched.clone() };
    g.throughput(Throughput::Elements(run_simple(&kv, &opts).unwrap().summary.events));
    g.bench_function("batched_p32_kv_summary", |b| b.iter(|| run_simple(&kv, &opts).unwrap()));
    g.finish();
}

criterion_group! { name = benches; config = Criterion::default().sample_size(20); targets = bench }
criterion_main!(benches);
