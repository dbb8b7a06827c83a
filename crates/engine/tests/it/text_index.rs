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

/// Engines that share their caches (a server's tenant: the writer and its readers) rank the
/// documents written since the build from the writer's delta, with the scores the full-text
/// index gives them, and a build then gives them the same scores up to its quantization.
#[test]
fn shared_engines_rank_newer_documents_as_the_full_text_index_and_a_build_do() {
    let (dir, mut writer) = engine();
    let path = dir.path().join("t.ctxg");
    let open = || {
        ctxgraph::Engine::open(&path, ctxgraph::OpenMode::MustExist, Default::default()).unwrap()
    };
    let caches = writer.index_caches();
    writer.set_index_caches(caches.clone());
    let mut reader = open();
    reader.set_index_caches(caches);
    let plain = open();
    let lines: Vec<String> = trace(700).lines().map(|l| format!("{l}\n")).collect();
    let first: String = lines[..600].concat();
    writer.ingest_jsonl(first.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    writer.enrich(&mut |_, _| {}).unwrap();
    writer.index_text().unwrap();
    for chunk in lines[600..].chunks(25) {
        writer
            .ingest_jsonl(chunk.concat().as_bytes(), &IngestOptions::default(), &mut |_| {})
            .unwrap();
        writer.enrich(&mut |_, _| {}).unwrap();
    }
    assert!(reader.owner_reader().unwrap().text_docs_outside_index().unwrap() >= 100);
    let summary = {
        let snap = reader.owner_reader().unwrap();
        let node = snap.node(&NodeKey::new("Event", "evt-000650")).unwrap().unwrap();
        node.props.get("summary").and_then(Value::as_str).unwrap().to_owned()
    };
    let mut queries: Vec<&str> = QUERIES.to_vec();
    queries.push(&summary);
    let mut newest = None;
    for q in &queries {
        let shared = search(&reader, q, 10_000);
        let full = search(&plain, q, 10_000);
        assert_eq!(
            shared.iter().map(|h| &h.0).collect::<std::collections::BTreeSet<_>>(),
            full.iter().map(|h| &h.0).collect(),
            "{q}"
        );
        let full: BTreeMap<String, f64> = full.into_iter().collect();
        for (id, score) in &shared {
            assert!((score - full[id]).abs() <= 1e-9 * full[id], "{q}: {id} {score}");
        }
        if *q == summary {
            newest = shared.iter().find(|h| h.0 == "evt-000650").map(|h| h.1);
        }
    }
    let newest = newest.expect("the newer document is found");
    writer.index_text().unwrap();
    let built = search(&reader, &summary, 10_000);
    let rebuilt = built.iter().find(|h| h.0 == "evt-000650").map(|h| h.1).unwrap();
    // Impacts are quantized to 1/255 of their range, rounded up.
    assert!((rebuilt - newest).abs() <= 0.02 * newest, "{rebuilt} against {newest}");
}
