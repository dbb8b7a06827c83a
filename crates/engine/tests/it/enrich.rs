//! Stage 2: enrichment is complete, deterministic and idempotent; search finds enriched text;
//! a store refuses an embedding model other than the one that made its vectors.

use std::sync::Arc;

use ctxgraph::{
    EmbedderChoice, Engine, EngineOptions, IngestOptions, NodeKey, OpenMode, Projection,
    StaticEmbedder,
};
use serde_json::Value;

use super::{dump, engine, trace};

#[test]
fn enrichment_fills_every_event_and_is_idempotent_and_deterministic() {
    let (_dir, mut e) = engine();
    e.ingest_jsonl(trace(300).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(e.owner_reader().unwrap().store_stats().unwrap().enrichment_lag(), 300);
    let report = e.enrich(&mut |_, _| {}).unwrap();
    assert_eq!((report.records, report.events, report.position), (300, 300, 300));
    let stats = e.owner_reader().unwrap().store_stats().unwrap();
    assert_eq!(stats.enrichment_lag(), 0);
    assert_eq!(
        stats.embedding_model,
        Some((StaticEmbedder::BUILTIN_MODEL_ID.to_owned(), StaticEmbedder::BUILTIN_DIMENSION))
    );
    let snap = e.owner_reader().unwrap();
    for node in snap.events(None, 1000).unwrap() {
        assert!(node.props["summary"].as_str().is_some_and(|s| !s.is_empty()), "{}", node.key);
        assert!(node.props["keywords"].is_array());
        let importance = node.props["importance_score"].as_i64().unwrap();
        assert!((1..=10).contains(&importance));
        let v = snap.vector(&node.key).unwrap().unwrap();
        assert_eq!(v.len(), StaticEmbedder::BUILTIN_DIMENSION);
    }
    let failed = snap
        .events(None, 1000)
        .unwrap()
        .into_iter()
        .find(|n| n.props.get("status") == Some(&Value::from("failed")))
        .unwrap();
    assert!(failed.props["summary"].as_str().unwrap().contains("FAILED"));
    let vectors: Vec<_> =
        snap.events(None, 20).unwrap().iter().map(|n| snap.vector(&n.key).unwrap()).collect();
    drop(snap);

    let before = dump(&e);
    assert_eq!(e.enrich(&mut |_, _| {}).unwrap().events, 0, "nothing left to enrich");
    assert_eq!(dump(&e), before);

    e.reproject(&mut |_, _| {}).unwrap();
    assert_eq!(
        e.owner_reader().unwrap().store_stats().unwrap().enriched_through,
        0,
        "reprojection clears stage 2"
    );
    e.enrich(&mut |_, _| {}).unwrap();
    assert_eq!(dump(&e), before, "the same log and model give the same enrichment");
    let snap = e.owner_reader().unwrap();
    let again: Vec<_> =
        snap.events(None, 20).unwrap().iter().map(|n| snap.vector(&n.key).unwrap()).collect();
    assert_eq!(again, vectors);
}

#[test]
fn search_finds_enriched_events_and_entities() {
    let (_dir, mut e) = engine();
    e.ingest_jsonl(trace(400).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let snap = e.owner_reader().unwrap();
    let hits = snap.search("timeout mail-relay", 10).unwrap();
    assert!(!hits.is_empty());
    assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "best first");
    let text = |n: &ctxgraph::Node| serde_json::to_string(&n.props).unwrap().to_lowercase();
    assert!(text(&hits[0].0).contains("mail-relay") || text(&hits[0].0).contains("timeout"));
    let entity = snap.search("analytics-warehouse", 5).unwrap();
    assert!(
        entity.iter().any(|(n, _)| n.key == NodeKey::new("Entity", "service:analytics-warehouse"))
    );
}

/// A tiny deterministic embedder standing in for another model.
struct Letters;

impl ctxgraph::Embedder for Letters {
    fn model_id(&self) -> &str {
        "letters-4"
    }
    fn dimension(&self) -> usize {
        4
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, ctxgraph_embed::EmbedError> {
        Ok(texts
            .iter()
            .map(|t| (0..4).map(|i| t.bytes().filter(|b| b % 4 == i).count() as f32).collect())
            .collect())
    }
}

#[test]
fn another_embedding_model_is_refused_with_the_way_out() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("m.ctxg");
    let mut e = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default()).unwrap();
    let opts = IngestOptions { projection: Projection::Inline, ..IngestOptions::default() };
    e.ingest_jsonl(trace(30).as_bytes(), &opts, &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    drop(e);

    let other = EngineOptions {
        embedder: EmbedderChoice::Custom(Arc::new(Letters)),
        ..EngineOptions::default()
    };
    let err = Engine::open(&path, OpenMode::MustExist, other.clone()).unwrap_err();
    assert_eq!(err.code(), "store.embedding_model_mismatch");
    assert!(err.to_string().contains("run `ctxgraph reembed`"), "{err}");

    let accept = EngineOptions { accept_new_embedder: true, ..other.clone() };
    let mut e = Engine::open(&path, OpenMode::MustExist, accept).unwrap();
    assert_eq!(e.reembed(&mut |_, _| {}).unwrap().events, 30);
    drop(e);
    let e = Engine::open(&path, OpenMode::MustExist, other).unwrap();
    let snap = e.owner_reader().unwrap();
    assert_eq!(snap.store_stats().unwrap().embedding_model, Some(("letters-4".to_owned(), 4)));
    let first = snap.events(None, 1).unwrap().remove(0);
    assert_eq!(snap.vector(&first.key).unwrap().unwrap().len(), 4);
}
