//! Criterion benches of the vector index at 50k realistic vectors: training, assignment, one
//! query (probe, int8 scan, exact re-rank) and the similarity join; plus the dot-product kernels.
//! The `recall` example measures the same at any size, with recall.

#![allow(clippy::unwrap_used, missing_docs, reason = "a bench fails loudly on the first surprise")]

#[path = "../examples/support/corpus.rs"]
mod corpus;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ctxgraph_ann::{
    JoinConfig, ListView, SearchParams, TrainConfig, assign, dot_f32, dot_i8, encode_lists,
    exact_top_k, quantize, scan, similarity_join, train,
};

const VECTORS: usize = 50_000;
const QUERIES: usize = 100;
const THREADS: usize = 2;

fn build(c: &mut Criterion) {
    let corpus = corpus::corpus(VECTORS, QUERIES, 42).unwrap();
    let dim = corpus.dim;
    let cfg = TrainConfig { threads: THREADS, ..TrainConfig::for_count(VECTORS) };
    let centroids = train(&corpus.vectors, dim, &cfg).unwrap();
    let assignment = assign(&centroids, &corpus.vectors, THREADS).unwrap();
    let blobs =
        encode_lists(&corpus.ids, &corpus.vectors, &centroids, &assignment, THREADS).unwrap();

    let mut g = c.benchmark_group("ann build 50k");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(VECTORS as u64));
    g.bench_function("train", |b| b.iter(|| train(&corpus.vectors, dim, &cfg).unwrap()));
    g.bench_function("assign", |b| {
        b.iter(|| assign(&centroids, &corpus.vectors, THREADS).unwrap())
    });
    g.bench_function("encode lists", |b| {
        b.iter(|| {
            encode_lists(&corpus.ids, &corpus.vectors, &centroids, &assignment, THREADS).unwrap()
        })
    });
    let join = JoinConfig { threads: THREADS, ..JoinConfig::default() };
    g.bench_function("similarity join", |b| {
        b.iter(|| {
            similarity_join(&corpus.ids, &corpus.vectors, dim, &centroids, &assignment, &join)
                .unwrap()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("ann query 50k");
    let params = SearchParams::default();
    let queries: Vec<&[f32]> = corpus.queries.chunks_exact(dim).collect();
    let mut next = 0;
    g.bench_function("probe + scan + re-rank, default params", |b| {
        b.iter(|| {
            let q = queries[next % queries.len()];
            next += 1;
            let views: Vec<ListView<'_>> = centroids
                .probe(q, params.nprobe)
                .iter()
                .map(|&l| ListView::parse(dim, &blobs[l as usize]).unwrap())
                .collect();
            let found = scan(q, &views, params.candidates).unwrap();
            let ids: Vec<i64> = found.iter().map(|c| c.0).collect();
            let vectors: Vec<f32> = ids
                .iter()
                .flat_map(|&id| corpus.vectors[id as usize * dim..][..dim].iter().copied())
                .collect();
            exact_top_k(q, &ids, &vectors, 10).unwrap()
        })
    });
    g.bench_function("probe only", |b| {
        b.iter(|| {
            let q = queries[next % queries.len()];
            next += 1;
            centroids.probe(q, params.nprobe)
        })
    });
    g.finish();
}

fn kernels(c: &mut Criterion) {
    let dim = 256;
    let a: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.37).sin()).collect();
    let b: Vec<f32> = (0..dim).map(|i| (i as f32 * 0.11).cos()).collect();
    let (mut qa, mut qb) = (Vec::new(), Vec::new());
    quantize(&a, &mut qa);
    quantize(&b, &mut qb);
    let mut g = c.benchmark_group("ann kernels 256-d");
    g.throughput(Throughput::Elements(dim as u64));
    g.bench_function("dot_f32", |bch| bch.iter(|| dot_f32(black_box(&a), black_box(&b))));
    g.bench_function("dot_i8", |bch| bch.iter(|| dot_i8(black_box(&qa), black_box(&qb))));
    g.bench_function("quantize", |bch| {
        let mut out = Vec::with_capacity(dim);
        bch.iter(|| {
            out.clear();
            quantize(black_box(&a), &mut out)
        })
    });
    g.finish();
}

criterion_group!(benches, kernels, build);
criterion_main!(benches);
