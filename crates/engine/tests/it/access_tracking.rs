//! Access tracking: `access` records fold into `access_count` and `last_accessed_at` in any
//! order and survive reprojection; recalls note their events and `flush_access` writes them.

use ctxgraph::{ForgetKind, ForgetTarget, Projection, ValidRecord};
use serde_json::{Value, json};

use super::{dump, engine};

fn event(id: &str, minute: u32, text: &str) -> Value {
    json!({"event_id": id, "event_type": "tool.execute",
        "occurred_at": format!("2026-11-20T09:{minute:02}:00Z"), "session_id": "s1",
        "agent_id": "planner", "trace_id": "t1", "payload": {"text": text}})
}

fn access(at: &str, events: &[(&str, u64, &str)]) -> Value {
    let events: Vec<Value> = events
        .iter()
        .map(|(id, count, last)| json!({"event_id": id, "count": count, "last_accessed_at": last}))
        .collect();
    json!({"record_type": "access", "at": at, "events": events})
}

fn valid(engine: &ctxgraph::Engine, values: &[Value]) -> Vec<ValidRecord> {
    values.iter().map(|v| engine.validate(&v.to_string()).unwrap()).collect()
}

fn accessed(engine: &ctxgraph::Engine, id: &str) -> (Option<i64>, Option<String>) {
    let node = engine.owner_reader().unwrap().event(id).unwrap().unwrap();
    (
        node.props.get("access_count").and_then(Value::as_i64),
        node.props.get("last_accessed_at").and_then(Value::as_str).map(str::to_owned),
    )
}

/// Two batches naming the same events, the later read written first in one of them and with
/// another offset, so that order would show if the fold depended on it.
fn batches() -> Vec<Value> {
    vec![
        access(
            "2026-11-20T10:00:00Z",
            &[("e1", 2, "2026-11-20T11:50:00+02:00"), ("e2", 1, "2026-11-20T09:40:00Z")],
        ),
        access(
            "2026-11-20T10:05:00Z",
            &[("e1", 3, "2026-11-20T09:45:00Z"), ("missing", 4, "2026-11-20T09:45:00Z")],
        ),
    ]
}

#[test]
fn access_batches_fold_to_the_same_graph_in_either_order_and_on_reprojection() {
    let mut graphs = Vec::new();
    for reversed in [false, true] {
        let (_dir, mut engine) = engine();
        let events = valid(&engine, &[event("e1", 0, "orders"), event("e2", 1, "refund")]);
        engine.ingest_batch(&events, Projection::Inline, true).unwrap();
        let mut batches = valid(&engine, &batches());
        if reversed {
            batches.reverse();
        }
        for b in &batches {
            // An access to an event that does not exist is ignored, not an error.
            let outcome = engine.ingest_batch(std::slice::from_ref(b), Projection::Inline, true);
            assert!(outcome.unwrap()[0].is_ok());
        }
        assert_eq!(accessed(&engine, "e1"), (Some(5), Some("2026-11-20T11:50:00+02:00".into())));
        assert_eq!(accessed(&engine, "e2"), (Some(1), Some("2026-11-20T09:40:00Z".into())));
        assert!(engine.owner_reader().unwrap().event("missing").unwrap().is_none());
        let incremental = dump(&engine);
        engine.reproject(&mut |_, _| {}).unwrap();
        let rebuilt = dump(&engine);
        assert_eq!(incremental, rebuilt, "reprojection rebuilds the accesses");
        let mut d = rebuilt;
        for n in &mut d.nodes {
            n.props.remove("global_position");
        }
        graphs.push(d);
    }
    assert_eq!(graphs[0], graphs[1], "the order of the batches does not matter");
}

#[test]
fn accesses_to_a_forgotten_event_are_ignored() {
    let (_dir, mut engine) = engine();
    let events = valid(&engine, &[event("e1", 0, "orders"), event("e2", 1, "refund")]);
    engine.ingest_batch(&events, Projection::Inline, true).unwrap();
    let first =
        valid(&engine, &[access("2026-11-20T10:00:00Z", &[("e1", 1, "2026-11-20T10:00:00Z")])]);
    engine.ingest_batch(&first, Projection::Inline, true).unwrap();
    engine.forget(&ForgetTarget { kind: ForgetKind::Event, id: "e1".into() }, "ops", None).unwrap();
    let later = valid(
        &engine,
        &[access(
            "2026-11-20T10:10:00Z",
            &[("e1", 2, "2026-11-20T10:10:00Z"), ("e2", 1, "2026-11-20T10:10:00Z")],
        )],
    );
    assert!(engine.ingest_batch(&later, Projection::Inline, true).unwrap()[0].is_ok());
    assert!(engine.owner_reader().unwrap().event("e1").unwrap().is_none());
    assert_eq!(accessed(&engine, "e2").0, Some(1));
    let live = dump(&engine);
    engine.reproject(&mut |_, _| {}).unwrap();
    assert_eq!(dump(&engine), live);
}

#[test]
fn recall_notes_its_events_and_one_flush_writes_them() {
    let (dir, mut engine) = engine();
    let events = valid(
        &engine,
        &[event("e1", 0, "orders database timeout"), event("e2", 1, "refund issued to customer")],
    );
    engine.ingest_batch(&events, Projection::Inline, true).unwrap();
    engine.enrich(&mut |_, _| {}).unwrap();
    // Nothing pending: nothing written.
    let head = engine.owner_reader().unwrap().checkpoints().unwrap();
    assert_eq!(engine.flush_access().unwrap(), 0);
    assert_eq!(engine.owner_reader().unwrap().checkpoints().unwrap(), head);

    let query = ctxgraph::RecallQuery::new("orders database timeout");
    let pack = engine.recall(&query).unwrap();
    assert!(pack.items.iter().any(|i| i.node.key.id == "e1"), "{:?}", pack.items);
    engine.recall(&query).unwrap();
    // A second engine on the same store, sharing the tracker, notes into it too.
    let mut reader = ctxgraph::Engine::open(
        &dir.path().join("t.ctxg"),
        ctxgraph::OpenMode::MustExist,
        ctxgraph::EngineOptions::default(),
    )
    .unwrap();
    reader.set_access_tracker(std::sync::Arc::clone(engine.access_tracker()));
    reader.recall(&query).unwrap();
    let returned: usize = pack.items.iter().filter(|i| i.node.key.label == "Event").count();
    assert_eq!(engine.access_tracker().pending(), returned);
    assert_eq!(accessed(&engine, "e1"), (None, None), "a recall writes nothing");

    assert_eq!(engine.flush_access().unwrap(), returned);
    assert_eq!(engine.access_tracker().pending(), 0);
    let (count, last) = accessed(&engine, "e1");
    assert_eq!(count, Some(3));
    assert!(last.is_some());
    let log = engine.owner_reader().unwrap().log(1, 100).unwrap();
    assert_eq!(log.iter().filter(|e| e.kind == ctxgraph::RecordKind::Access).count(), 1);
    // An access record has nothing to enrich: a store that was only read shows no lag.
    assert_eq!(engine.owner_reader().unwrap().checkpoints().unwrap().enrichment_lag(), 0);
    // The reader sees the flushed counts.
    assert_eq!(accessed(&reader, "e1").0, Some(3));
    let rebuilt = {
        engine.reproject(&mut |_, _| {}).unwrap();
        accessed(&engine, "e1")
    };
    assert_eq!(rebuilt, (count, last));
}
