//! Realistic vectors for the recall test, the benches and the `recall` example: the stage-2
//! enrichment texts of a synthetic trace, embedded by the built-in model.

// Each of the test, the bench and the example uses part of this module.
#![allow(dead_code)]

use ctxgraph_embed::{Embedder, StaticEmbedder};
use ctxgraph_ontology::{Limits, RecordBody, Schema, validate_value};

/// Errors of corpus generation, which only fails if the workspace is broken.
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A trace's texts split into indexed vectors and held-out queries.
pub(crate) struct Corpus {
    /// Vector dimension.
    pub(crate) dim: usize,
    /// Ids of the indexed vectors, `0..n`.
    pub(crate) ids: Vec<i64>,
    /// Indexed vectors, row-major.
    pub(crate) vectors: Vec<f32>,
    /// Held-out query vectors, row-major.
    pub(crate) queries: Vec<f32>,
}

/// Enrichment texts of the first `n` events of the synthetic trace with `seed` (the workload of
/// `ctxgraph bench`: 8 agents, 200 users).
pub(crate) fn texts(n: usize, seed: u64) -> Result<Vec<String>, BoxError> {
    let schema = Schema::core()?;
    let limits = Limits::default();
    let config = ctxgraph_synth::TraceConfig {
        events: n,
        seed,
        agents: 8,
        users: 200,
        ..Default::default()
    };
    let mut out = Vec::with_capacity(n);
    for event in ctxgraph_synth::trace(&config) {
        let record = validate_value(&schema, &limits, event)?;
        if let RecordBody::Event(e) = record.body() {
            out.push(ctxgraph_projection::enrich_event(e).text);
        }
    }
    Ok(out)
}

/// Embeds `texts` with the built-in model: row-major vectors and their dimension.
pub(crate) fn embed(texts: &[String]) -> Result<(Vec<f32>, usize), BoxError> {
    let model = StaticEmbedder::builtin()?;
    let mut out = Vec::with_capacity(texts.len() * model.dimension());
    for chunk in texts.chunks(4096) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for v in model.embed(&refs)? {
            out.extend(v);
        }
    }
    Ok((out, model.dimension()))
}

/// `n` indexed vectors and `q` held-out queries from one trace of `n + q` events: every
/// `(n + q) / q`-th text is a query.
pub(crate) fn corpus(n: usize, q: usize, seed: u64) -> Result<Corpus, BoxError> {
    let texts = texts(n + q, seed)?;
    let (all, dim) = embed(&texts)?;
    Ok(split(all, dim, n, q))
}

/// The texts behind [`split`]: indexed texts and held-out query texts.
pub(crate) fn split_texts(texts: &[String], n: usize, q: usize) -> (Vec<&str>, Vec<&str>) {
    let stride = (n + q) / q.max(1);
    let (mut indexed, mut held_out) = (Vec::with_capacity(n), Vec::with_capacity(q));
    for (i, t) in texts.iter().enumerate() {
        if q > 0 && i % stride == stride / 2 && held_out.len() < q {
            held_out.push(t.as_str());
        } else {
            indexed.push(t.as_str());
        }
    }
    indexed.truncate(n);
    (indexed, held_out)
}

/// Splits `n + q` embedded rows into `n` indexed vectors and `q` evenly spaced queries.
pub(crate) fn split(all: Vec<f32>, dim: usize, n: usize, q: usize) -> Corpus {
    let stride = (n + q) / q.max(1);
    let mut vectors = Vec::with_capacity(n * dim);
    let mut queries = Vec::with_capacity(q * dim);
    for (i, row) in all.chunks_exact(dim).enumerate() {
        if q > 0 && i % stride == stride / 2 && queries.len() < q * dim {
            queries.extend_from_slice(row);
        } else {
            vectors.extend_from_slice(row);
        }
    }
    vectors.truncate(n * dim);
    let ids = (0..(vectors.len() / dim) as i64).collect();
    Corpus { dim, ids, vectors, queries }
}
