//! Criterion benches of the hot write path: validation, and append + stage-1 projection per batch.

#![allow(clippy::unwrap_used, missing_docs, reason = "a bench fails loudly on the first surprise")]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgraph::{Engine, EngineOptions, OpenMode, Projection, ValidRecord};

fn lines(n: usize, seed: u64) -> Vec<String> {
    let config = ctxgraph_synth::TraceConfig { events: n, seed, ..Default::default() };
    ctxgraph_synth::trace(&config).map(|e| e.to_string()).collect()
}

fn validate(c: &mut Criterion) {
    let dir = tempfile::TempDir::new().unwrap();
    let engine = Engine::open(
        &dir.path().join("b.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    let input = lines(1000, 1);
    let mut g = c.benchmark_group("validate");
    g.throughput(Throughput::Elements(input.len() as u64));
    g.bench_function("1000 events", |b| {
        b.iter(|| input.iter().filter(|l| engine.validate(l).is_ok()).count());
    });
    g.finish();
}

fn append_and_project(c: &mut Criterion) {
    let mut g = c.benchmark_group("ingest_batch");
    g.sample_size(10);
    g.throughput(Throughput::Elements(2000));
    let dir = tempfile::TempDir::new().unwrap();
    let mut engine = Engine::open(
        &dir.path().join("b.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    // Validation happens in setup, outside the timing, on a second engine.
    let validator = Engine::open(
        &dir.path().join("v.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    let mut seed = 0;
    g.bench_function("2000 events, inline projection, fsync", |b| {
        b.iter_batched(
            || {
                seed += 1;
                // Fresh ids per iteration: every record is new.
                lines(2000, seed)
                    .iter()
                    .map(|l| {
                        l.replace("\"evt-", &format!("\"b{seed}-evt-"))
                            .replace("\"sess-", &format!("\"b{seed}-sess-"))
                    })
                    .map(|l| validator.validate(&l).unwrap())
                    .collect::<Vec<ValidRecord>>()
            },
            |records| engine.ingest_batch(&records, Projection::Inline, false).unwrap(),
            criterion::BatchSize::LargeInput,
        );
    });
    g.finish();
}

criterion_group!(benches, validate, append_and_project);
criterion_main!(benches);
