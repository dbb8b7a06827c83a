//! Format compatibility: a store written by format version 1 (checked in) opens and reads back
//! the same with this build (graph, enrichment, vectors, full-text index, after the migration's
//! re-enrichment), and reprojects and re-enriches to the same graph.

use ctxgraph::{Engine, EngineOptions, NodeKey, OpenMode};
use serde_json::json;

use super::dump;

#[test]
fn a_format_v1_store_opens_and_reads_back_the_same() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("v1.ctxg");
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1.ctxg");
    std::fs::copy(&fixture, &path).unwrap();
    let mut engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default()).unwrap();
    let stats = engine.owner_reader().unwrap().store_stats().unwrap();
    assert_eq!(stats.log_length, 60);
    assert_eq!(stats.projection_lag(), 0);
    assert_eq!(stats.nodes, [("Entity".to_owned(), 46), ("Event".to_owned(), 60)]);
    assert_eq!(
        stats.edges,
        [("CAUSED_BY".to_owned(), 53), ("FOLLOWS".to_owned(), 53), ("REFERENCES".to_owned(), 153)]
    );
    let event =
        engine.owner_reader().unwrap().node(&NodeKey::new("Event", "evt-000007")).unwrap().unwrap();
    assert_eq!(event.props["tool_name"], json!("read_file"));
    assert_eq!(event.props["global_position"], json!(7));
    assert_eq!(event.props["payload"]["result"], json!("106 lines"));
    // Format 2 stems the full-text index: migrating resets stage 2, and enriching rebuilds it.
    assert_eq!(stats.enriched_through, 0);
    engine.enrich(&mut |_, _| {}).unwrap();
    assert_eq!(engine.owner_reader().unwrap().store_stats().unwrap().enriched_through, 60);
    assert!(event.props["summary"].as_str().unwrap().starts_with("tool.execute read_file"));
    let snap = engine.owner_reader().unwrap();
    let stored_vector = snap.vector(&event.key).unwrap().unwrap();
    assert_eq!(stored_vector.len(), 256);
    assert!(!snap.search("invoice rounding", 5).unwrap().is_empty());
    // Migrated to format 2: its vectors are unindexed until the next consolidation, and found.
    let near = snap.nearest(&stored_vector, 3, ctxgraph::SearchParams::default()).unwrap();
    assert_eq!(near[0].0.key, event.key);
    drop(snap);
    let stored = dump(&engine);
    engine.reproject(&mut |_, _| {}).unwrap();
    engine.enrich(&mut |_, _| {}).unwrap();
    assert_eq!(dump(&engine), stored);
    let snap = engine.owner_reader().unwrap();
    assert_eq!(snap.vector(&event.key).unwrap().unwrap(), stored_vector);
}
