//! The lexical index: its rankings agree with the full-text index's BM25, it sees documents
//! written after its build, and it goes wherever the full-text index goes.

use std::collections::BTreeMap;

use ctxgraph::{IngestOptions, NodeKey};
use serde_json::Value;

use super::{engine, trace};

const QUERIES: &[&str] =
    &["failed timeout", "refund rejected billing", "deploy checkout latency", "agent search docs"];

/// `(node id, score)` of a search, best first.
fn search(e: &ctxgraph::Engine, q: &str, limit: usize) -> Vec<(String, f64)> {
    let snap = e.owner_reader().unwrap();
    snap.search(q, limit).unwrap().into_iter().map(|(n, s)| (n.key.id, s)).collect()
}

#[test]
fn the_lexical_index_agrees_with_full_text_bm25_and_sees_newer_documents() {
    let (_dir, mut e) = engine();
    let first = trace(700).lines().take(600).map(|l| format!("{l}\n")).collect::<String>();
    e.ingest_jsonl(first.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    assert!(e.owner_reader().unwrap().text_docs_outside_index().unwrap() >= 600);
    // Before the build: the full-text index's own BM25, every match scored.
    let full: Vec<BTreeMap<String, f64>> =
        QUERIES.iter().map(|q| search(&e, q, 10_000).into_iter().collect()).collect();
    let report = e.index_text().unwrap();
    assert!(report.docs >= 600 && report.terms > 100, "{report:?}");
    assert_eq!(e.owner_reader().unwrap().text_docs_outside_index().unwrap(), 0);
    for (q, full) in QUERIES.iter().zip(&full) {
        let hits = search(&e, q, 10);
        assert_eq!(hits.len(), 10, "{q}");
        let best_full = full.values().copied().fold(0.0, f64::max);
        for (id, score) in &hits {
            // Impacts are quantized to 1/255 of their range, rounded up.
            let exact = full[id];
            assert!((score - exact).abs() <= 0.02 * exact, "{q}: {id} {score} vs {exact}");
        }
        assert!(hits[0].1 >= 0.98 * best_full, "{q}: the best match stays on top");
    }

    // Documents written after the build come from the full-text index, merged by score.
    let more = trace(700).lines().skip(600).map(|l| format!("{l}\n")).collect::<String>();
    e.ingest_jsonl(more.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    assert!(e.owner_reader().unwrap().text_docs_outside_index().unwrap() >= 100);
    let newest = NodeKey::new("Event", "evt-000650");
    let summary = {
        let snap = e.owner_reader().unwrap();
        let node = snap.node(&newest).unwrap().unwrap();
        node.props.get("summary").and_then(Value::as_str).unwrap().to_owned()
    };
    let hits = search(&e, &summary, 50);
    assert!(hits.iter().any(|(id, _)| id == "evt-000650"), "a newer document is found");
    assert!(hits.iter().any(|(id, _)| id.as_str() < "evt-000600"), "older ones too");
    assert!(hits.windows(2).all(|w| w[0].1 >= w[1].1), "one ranking, best first");

    // Reprojection drops the index with the full-text entries; searches keep working.
    e.reproject(&mut |_, _| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    assert!(e.owner_reader().unwrap().text_docs_outside_index().unwrap() >= 700);
    assert!(search(&e, &summary, 50).iter().any(|(id, _)| id == "evt-000650"));
}
