//! Criterion benchmark of the engine on the chapter's scenario (see README "Performance").
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
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
    g.finish();
}

criterion_group! { name = benches; config = Criterion::default().sample_size(20); targets = bench }
criterion_main!(benches);
