//! Stage 3, the vector index and SIMILAR_TO: searches see every vector (indexed or not), never a
//! deleted one, and the semantic view is bounded, deterministic and idempotent.

use ctxgraph::{ConsolidateOptions, Direction, IngestOptions, NodeKey, SearchParams};

use super::{dump, engine, trace};

/// Exhaustive search options: every list probed, every candidate re-ranked.
const EXACT: SearchParams = SearchParams { nprobe: usize::MAX, candidates: usize::MAX };

fn loaded(events: usize) -> (tempfile::TempDir, ctxgraph::Engine) {
    let (dir, mut e) = engine();
    e.ingest_jsonl(trace(events).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    (dir, e)
}

#[test]
fn nearest_finds_the_event_itself_before_and_after_the_index_is_built() {
    let (_dir, mut e) = loaded(600);
    let key = NodeKey::new("Event", "evt-000123");
    let query =
        e.owner_reader().unwrap().vector(&key).unwrap().expect("enriched events have vectors");
    // Before consolidation every vector is unindexed and searched exactly.
    let before = e.owner_reader().unwrap().nearest(&query, 5, SearchParams::default()).unwrap();
    assert!((before[0].1 - 1.0).abs() < 1e-4, "an event is its own nearest neighbour");
    let report = e.consolidate().unwrap();
    assert_eq!(report.indexed_vectors, 600);
    assert!(report.index_lists >= 1);
    let after = e.owner_reader().unwrap().nearest(&query, 5, SearchParams::default()).unwrap();
    assert!((after[0].1 - 1.0).abs() < 1e-4);
    assert!(after.iter().any(|(n, _)| n.key == key));
    let scores: Vec<f32> = after.iter().map(|(_, s)| *s).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "best first: {scores:?}");
}

#[test]
fn the_index_agrees_with_exhaustive_search_and_sees_vectors_written_after_it() {
    let (_dir, mut e) = loaded(500);
    e.consolidate().unwrap();
    // New events after the build: unindexed, still found.
    let more = trace(700).lines().skip(500).map(|l| format!("{l}\n")).collect::<String>();
    e.ingest_jsonl(more.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let snap = e.owner_reader().unwrap();
    for id in ["evt-000010", "evt-000250", "evt-000650"] {
        let q = snap.vector(&NodeKey::new("Event", id)).unwrap().unwrap();
        let exact = snap.nearest(&q, 10, EXACT).unwrap();
        let fast = snap.nearest(&q, 10, SearchParams::default()).unwrap();
        assert_eq!(exact[0].0.key.id, id);
        let tenth = exact.last().unwrap().1;
        let hits = fast.iter().filter(|(_, s)| *s >= tenth - 1e-6).count();
        assert!(hits >= 9, "{id}: {hits}/10 of the exact top 10 found");
    }
    assert_eq!(snap.stats_vectors().unwrap(), (700, 200), "the new vectors wait for a build");
    drop(snap);
    assert_eq!(e.index_vectors().unwrap(), 700);
    let snap = e.owner_reader().unwrap();
    assert_eq!(snap.stats_vectors().unwrap(), (700, 0));
    let q = snap.vector(&NodeKey::new("Event", "evt-000650")).unwrap().unwrap();
    assert_eq!(snap.nearest(&q, 1, SearchParams::default()).unwrap()[0].0.key.id, "evt-000650");
}

#[test]
fn a_deleted_vector_is_never_returned() {
    let (_dir, mut e) = loaded(300);
    e.consolidate().unwrap();
    let snap = e.owner_reader().unwrap();
    let victim = NodeKey::new("Event", "evt-000042");
    let q = snap.vector(&victim).unwrap().unwrap();
    drop(snap);
    // Retention archives the event (as of far in the future): its node and vector go, while the
    // index blob still lists it until the next build.
    let later = chrono::DateTime::parse_from_rfc3339("2030-01-01T00:00:00Z").unwrap();
    let report = e
        .apply_retention(&ctxgraph::RetentionOptions { as_of: Some(later), ..Default::default() })
        .unwrap();
    assert_eq!(report.archived, 300);
    let hits = e.owner_reader().unwrap().nearest(&q, 10, EXACT).unwrap();
    assert!(hits.is_empty(), "archived events are not returned: {hits:?}");
    let text_hits = e.owner_reader().unwrap().search("failed timeout", 50).unwrap();
    assert!(text_hits.iter().all(|(n, _)| n.key.label != "Event"), "nor found by full text");
}

#[test]
fn similar_to_is_bounded_deterministic_and_idempotent() {
    let (_dir, mut e) = loaded(800);
    let options = ConsolidateOptions { threads: 1, ..ConsolidateOptions::default() };
    let report = e.consolidate_with(&options).unwrap();
    assert!(report.similar_edges > 0, "a synthetic trace repeats itself: some events are similar");
    let snap = e.owner_reader().unwrap();
    let edges = snap.edges_of_type("SIMILAR_TO", None, usize::MAX >> 2).unwrap();
    assert_eq!(edges.len() as u64, report.similar_edges);
    assert!(edges.len() <= 800 * options.similar_k);
    for edge in &edges {
        let score = edge.props["score"].as_f64().unwrap();
        assert!(score >= f64::from(options.similar_threshold) - 1e-3 && score <= 1.0);
        assert_ne!(edge.key.from, edge.key.to);
    }
    let one = &edges[0].key.from;
    let out = snap.edges(one, Some("SIMILAR_TO"), Direction::Out).unwrap();
    assert!(out.len() <= options.similar_k);
    drop(snap);

    let before = dump(&e);
    let two_threads = ConsolidateOptions { threads: 2, ..options };
    e.consolidate_with(&two_threads).unwrap();
    assert_eq!(dump(&e), before, "the thread count does not change the graph");
    e.reproject(&mut |_, _| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate_with(&options).unwrap();
    assert_eq!(dump(&e), before, "the same log gives the same semantic view");

    let strict = ConsolidateOptions { similar_threshold: 0.999, similar_k: 1, ..options };
    let fewer = e.consolidate_with(&strict).unwrap();
    assert!(fewer.similar_edges < report.similar_edges);
}
