//! Embedding throughput, in sentences per second, on realistic agent-event texts: the built-in
//! static model, and (with feature `minilm` and `CTXGRAPH_MINILM_DIR` set) the MiniLM
//! transformer on all the threads candle gets (`RAYON_NUM_THREADS`, else every core).
//!
//! `cargo bench -p ctxgraph-embed --features minilm` with the weights fetched by
//! `crates/embed/models/fetch-minilm.sh DIR`.

#![allow(clippy::expect_used, missing_docs, reason = "a bench fails loudly on the first surprise")]

use std::collections::BTreeSet;
use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgraph_embed::{Embedder, StaticEmbedder};
use serde_json::Value;

/// Sentences per measured call.
const SENTENCES: usize = 500;

/// The first [`SENTENCES`] distinct payload texts of three words or more from the synthetic
/// traces the ingestion benchmark uses (prompts, errors, tool results, goals).
fn sentences() -> Vec<String> {
    let config = ctxgraph_synth::TraceConfig { events: 20_000, ..Default::default() };
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(SENTENCES);
    for event in ctxgraph_synth::trace(&config) {
        let Some(payload) = event.get("payload").and_then(Value::as_object) else { continue };
        for text in payload.values().filter_map(Value::as_str) {
            if text.split_whitespace().count() >= 3 && seen.insert(text.to_owned()) {
                out.push(text.to_owned());
                if out.len() == SENTENCES {
                    return out;
                }
            }
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let owned = sentences();
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut group = c.benchmark_group("embed");
    group.throughput(Throughput::Elements(texts.len() as u64));

    let builtin = StaticEmbedder::builtin().expect("the built-in model loads");
    group.bench_function(format!("static/{} sentences", texts.len()), |b| {
        b.iter(|| builtin.embed(black_box(&texts)))
    });

    #[cfg(feature = "minilm")]
    match std::env::var_os("CTXGRAPH_MINILM_DIR") {
        None => eprintln!("embed/minilm skipped: set CTXGRAPH_MINILM_DIR (fetch-minilm.sh DIR)"),
        Some(dir) => {
            let minilm = ctxgraph_embed::MiniLmEmbedder::load(std::path::Path::new(&dir))
                .expect("CTXGRAPH_MINILM_DIR loads");
            let threads = candle_core::utils::get_num_threads();
            group.sample_size(10);
            group.bench_function(
                format!("minilm/{} sentences/{threads} threads", texts.len()),
                |b| b.iter(|| minilm.embed(black_box(&texts))),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
