//! Retention's archive marks on the scale-out backend: a retention transaction takes events out
//! of the graph and marks them, and the marks read back (`is_archived`, `archived` in key order,
//! page by page) as the embedded store's `archived` table does; a transaction not applied
//! leaves nothing; a reset of the graph keeps the marks and dropping them empties them.

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_projection::remove_event;
use ctxgraph_scaleout::{FalkorGraph, ScaleOutStore, catch_up};
use ctxgraph_store::{
    Archived, Embedded, GraphReader, OpenMode, RemoteStore, RetentionWrite, StoreError,
};
use serde_json::json;

use crate::harness::RedisBackend;

/// Six events of one session, a minute apart.
fn events(schema: &Schema) -> Vec<ValidRecord> {
    (0..6)
        .map(|i| {
            let text = json!({
                "event_id": format!("ev-{i}"), "event_type": "tool.execute", "session_id": "s",
                "agent_id": "a", "trace_id": "t", "tool_name": "grep", "status": "completed",
                "occurred_at": format!("2026-11-20T10:0{i}:00Z"),
            })
            .to_string();
            validate(schema, &Limits::default(), &text).unwrap()
        })
        .collect()
}

/// Take events 1, 2 and 4 out of the graph and mark them archived at `at`.
fn archive(schema: &Schema, w: &mut dyn RetentionWrite, at: &str) -> Result<(), StoreError> {
    for i in [4, 1, 2] {
        let id = format!("ev-{i}");
        let at_ns = 1_795_168_800_000_000_000 + i64::from(i) * 60_000_000_000;
        remove_event(schema, w, &id, "s", at_ns)
            .map_err(|e| StoreError::Corruption(e.to_string()))?;
        w.mark_archived(&NodeKey::new("Event", &id), at)?;
    }
    Ok(())
}

/// Every mark, read two at a time.
fn paged(read: &dyn GraphReader) -> Vec<Archived> {
    let mut out: Vec<Archived> = Vec::new();
    loop {
        let page = read.archived(out.last().map(|a| &a.key), 2).unwrap();
        if page.is_empty() {
            return out;
        }
        out.extend(page);
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn archive_marks_read_back_as_the_embedded_stores() {
    let schema = Schema::core().unwrap();
    let records = events(&schema);
    let redis = RedisBackend::new();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let batch: Vec<&ValidRecord> = records.iter().collect();
    store.append_batch(&batch, "2026-11-26T00:00:00Z").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    let log = ctxgraph_scaleout::RedisLog::connect(redis.url()).unwrap();
    catch_up(&schema, &log, &graph, usize::MAX).unwrap();

    let dir = tempfile::TempDir::new().unwrap();
    let mut embedded =
        Embedded::open(&dir.path().join("a.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = embedded.begin_write().unwrap();
    crate::projection::fold(&schema, &mut w, &records, 1);
    w.commit().unwrap();

    // Not applied: nothing changes.
    let applied = store
        .retain(&mut |w| {
            archive(&schema, w, "2026-12-01T00:00:00Z")?;
            Ok(false)
        })
        .unwrap();
    assert!(!applied);
    assert_eq!(paged(&graph), []);
    assert!(GraphReader::node_exists(&graph, &NodeKey::new("Event", "ev-1")).unwrap());

    // Applied, on both.
    let applied =
        store.retain(&mut |w| archive(&schema, w, "2026-12-01T00:00:00Z").map(|()| true)).unwrap();
    assert!(applied);
    let mut w = embedded.begin_write().unwrap();
    archive(&schema, &mut w, "2026-12-01T00:00:00Z").unwrap();
    w.commit().unwrap();
    let e = embedded.begin_read().unwrap();
    let want = paged(&e);
    assert_eq!(
        want.iter().map(|a| a.key.id.as_str()).collect::<Vec<_>>(),
        ["ev-1", "ev-2", "ev-4"]
    );
    assert_eq!(paged(&graph), want);
    for i in 0..6 {
        let key = NodeKey::new("Event", format!("ev-{i}"));
        assert_eq!(GraphReader::is_archived(&graph, &key).unwrap(), e.is_archived(&key).unwrap());
        assert_eq!(GraphReader::node(&graph, &key).unwrap(), GraphReader::node(&e, &key).unwrap());
    }
    assert_eq!(
        GraphReader::session_events(&graph, "s", 10).unwrap(),
        e.session_events("s", 10).unwrap()
    );
    assert_eq!(GraphReader::counts(&graph).unwrap(), e.counts().unwrap());

    // A reset of the graph keeps the marks; dropping them empties them.
    store.reset_projection().unwrap();
    assert_eq!(paged(&graph), want);
    store.drop_archive_marks().unwrap();
    assert_eq!(paged(&graph), []);
    assert!(!GraphReader::is_archived(&graph, &NodeKey::new("Event", "ev-1")).unwrap());
}
