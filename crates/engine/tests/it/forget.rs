//! Forgetting: the payload leaves the stored data, derived data goes with it, reprojection keeps
//! it forgotten, the audit lists it without the content, and incremental == reprojected.

use ctxgraph::{
    Engine, ForgetKind, ForgetTarget, IngestOutcome, NodeKey, Projection, RecallQuery, RecordKind,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{dump, engine, trace};

const SECRET: &str = "zebraquokka77secret";

fn ingest(engine: &mut Engine, text: &str) {
    let report = engine.ingest_jsonl(text.as_bytes(), &Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.rejections.len(), 0, "{:?}", report.rejections);
}

fn secret_events() -> String {
    [
        json!({"event_id": "secret-1", "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s-secret", "agent_id": "planner",
            "trace_id": "t1", "tool_name": "vault_read", "status": "failed",
            "payload": {"text": format!("the launch code is {SECRET}")},
            "entities": [{"name": "launch vault", "entity_type": "resource", "role": "object"}]}),
        json!({"event_id": "secret-2", "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:05Z", "session_id": "s-secret", "agent_id": "planner",
            "trace_id": "t1", "parent_event_id": "secret-1", "tool_name": "sql_query",
            "status": "completed", "payload": {"text": "after the read"}}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

fn file_has(dir: &std::path::Path, needle: &str) -> bool {
    std::fs::read_dir(dir).unwrap().any(|f| {
        let bytes = std::fs::read(f.unwrap().path()).unwrap();
        bytes.windows(needle.len()).any(|w| w == needle.as_bytes())
    })
}

fn recall_ids(engine: &Engine, text: &str) -> Vec<String> {
    let query = RecallQuery { k: 20, ..RecallQuery::new(text) };
    engine.recall(&query).unwrap().items.into_iter().map(|i| i.node.key.id).collect()
}

#[test]
fn a_forgotten_event_leaves_the_store_file_and_stays_forgotten() {
    let (dir, mut engine) = engine();
    ingest(&mut engine, &trace(120));
    ingest(&mut engine, &secret_events());
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    engine.checkpoint().unwrap();
    assert!(file_has(dir.path(), SECRET), "the secret is stored before it is forgotten");
    assert!(recall_ids(&engine, SECRET).contains(&"secret-1".to_owned()));

    let target = ForgetTarget { kind: ForgetKind::Event, id: "secret-1".into() };
    let report = engine.forget(&target, "ops", Some("leaked credential")).unwrap();
    assert_eq!(report.redacted, 1);
    assert!(!file_has(dir.path(), SECRET), "the secret's bytes are gone from the files");

    let snap = engine.snapshot().unwrap();
    assert!(snap.event("secret-1").unwrap().is_none());
    assert!(snap.search(SECRET, 10).unwrap().is_empty());
    let timeline: Vec<String> =
        snap.timeline("s-secret", 10).unwrap().into_iter().map(|t| t.event.key.id).collect();
    assert_eq!(timeline, ["secret-2"]);
    // The child's causal edge waits for a parent that is gone, as after a reprojection.
    assert_eq!(snap.pending_edges().unwrap().len(), 1);
    // The entity only the forgotten event mentioned is gone; the shared agent counts one less.
    assert!(snap.node(&NodeKey::new("Entity", "resource:launch vault")).unwrap().is_none());
    let agent = snap.node(&NodeKey::new("Entity", "agent:planner")).unwrap().unwrap();
    assert_eq!(agent.props["mention_count"], json!(1));
    let entry = snap.log(1, usize::MAX).unwrap();
    let redacted = entry.iter().find(|e| e.id == "secret-1").unwrap();
    assert_eq!(redacted.kind, RecordKind::Event);
    assert!(redacted.body.contains("\"redacted\"") && redacted.body.contains(&report.forget_id));
    let audit = snap.forgotten().unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!(
        (audit[0].kind, audit[0].target_id.as_str(), audit[0].by.as_str(), audit[0].redacted),
        (ForgetKind::Event, "secret-1", "ops", 1)
    );
    assert_eq!(audit[0].reason.as_deref(), Some("leaked credential"));
    drop(snap);
    assert!(!recall_ids(&engine, SECRET).contains(&"secret-1".to_owned()));

    same_after_reprojection(&mut engine);
    engine.checkpoint().unwrap();
    assert!(engine.snapshot().unwrap().event("secret-1").unwrap().is_none());
    assert!(!file_has(dir.path(), SECRET));
    // The forgotten event cannot come back under its id.
    let again = engine.ingest_jsonl(secret_events().as_bytes(), &Default::default(), &mut |_| {});
    assert_eq!(again.unwrap().rejections.len(), 1);
}

#[test]
fn an_unknown_target_is_a_typed_error_and_changes_nothing() {
    let (_dir, mut engine) = engine();
    ingest(&mut engine, &secret_events());
    let head = engine.snapshot().unwrap().checkpoints().unwrap().log_length;
    for (kind, id) in
        [(ForgetKind::Event, "nope"), (ForgetKind::Session, "nope"), (ForgetKind::Memory, "nope")]
    {
        let err = engine.forget(&ForgetTarget { kind, id: id.into() }, "local", None).unwrap_err();
        assert_eq!(err.code(), "forget.unknown_target");
        assert!(err.is_user_error());
    }
    let target = ForgetTarget { kind: ForgetKind::Event, id: "secret-2".into() };
    engine.forget(&target, "local", None).unwrap();
    let err = engine.forget(&target, "local", None).unwrap_err();
    assert_eq!(err.code(), "forget.unknown_target", "forgotten already");
    assert_eq!(engine.snapshot().unwrap().checkpoints().unwrap().log_length, head + 1);
}

#[test]
fn a_forget_record_cannot_be_ingested() {
    let (_dir, mut engine) = engine();
    let line = json!({"record_type": "forget", "target": {"kind": "event", "id": "e1"},
        "by": "local", "at": "2026-11-20T09:00:00Z"});
    let report =
        engine.ingest_jsonl(line.to_string().as_bytes(), &Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.rejections.len(), 1);
    let tombstone = json!({"record_type": "redacted", "kind": "event", "id": "e1",
        "forget_id": "f"});
    assert!(engine.validate(&tombstone.to_string()).is_err());
}

#[test]
fn forgetting_a_session_and_a_memory() {
    let (dir, mut engine) = engine();
    ingest(&mut engine, &trace(60));
    ingest(&mut engine, &secret_events());
    crate::memory::jwt_scenario(&mut engine);
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();

    let session = ForgetTarget { kind: ForgetKind::Session, id: "s-secret".into() };
    assert_eq!(engine.forget(&session, "local", None).unwrap().redacted, 2);
    let memory = ForgetTarget { kind: ForgetKind::Memory, id: "memory_1".into() };
    // The memory and its outcome (memory_3 only names it in `supersedes`).
    assert_eq!(engine.forget(&memory, "local", Some("wrong")).unwrap().redacted, 2);
    assert!(!file_has(dir.path(), SECRET));
    assert!(!file_has(dir.path(), "Performance issues with token refresh"));
    let snap = engine.snapshot().unwrap();
    assert!(snap.timeline("s-secret", 10).unwrap().is_empty());
    assert!(snap.node(&NodeKey::new("Memory", "memory_1")).unwrap().is_none());
    assert!(snap.search("token refresh", 10).unwrap().is_empty());
    let topic = snap.node(&NodeKey::new("Topic", "auth_strategy")).unwrap().unwrap();
    assert_eq!(topic.props["latest_decision"], json!("memory_3"));
    assert_eq!(topic.props["memory_count"], json!(1));
    assert_eq!(snap.forgotten().unwrap().len(), 2);
    drop(snap);
    same_after_reprojection(&mut engine);
}

/// Reprojection, enrichment and consolidation rebuild the graph the forget left, once stage 3
/// has rebuilt the summaries the forget deleted.
fn same_after_reprojection(engine: &mut Engine) {
    engine.consolidate().unwrap();
    let before = dump(engine);
    engine.reproject(&mut |_, _| {}).unwrap();
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    let after = dump(engine);
    // Print only the difference: the whole graph is too long to read.
    let nodes: Vec<_> = before.nodes.iter().filter(|n| !after.nodes.contains(n)).collect();
    let edges: Vec<_> = before.edges.iter().filter(|e| !after.edges.contains(e)).collect();
    let added: Vec<_> = after.edges.iter().filter(|e| !before.edges.contains(e)).collect();
    assert!(
        nodes.is_empty() && edges.is_empty() && added.is_empty(),
        "{nodes:?} {edges:?} {added:?}"
    );
    assert_eq!(after, before);
}

/// Events over small pools, one spelling per entity (a forgotten event's spelling of a shared
/// entity is the documented exception).
fn events(n: usize) -> impl Strategy<Value = Vec<Value>> {
    let one = (0..3usize, 0..20i64, prop::option::of(0..n + 2), 0..3usize, 0..4usize);
    prop::collection::vec(one, 1..n).prop_map(|rows| {
        rows.iter()
            .enumerate()
            .map(|(i, (s, minute, parent, agent, ent))| {
                let offset = ["Z", "+00:00"][i % 2];
                let name = ["orders db", "refund", "billing-api", "invoice"][*ent];
                let mut e = json!({
                    "event_id": format!("e{i}"), "event_type": "tool.execute",
                    "occurred_at": format!("2026-11-20T09:{minute:02}:00{offset}"),
                    "session_id": format!("s{s}"), "agent_id": format!("agent-{agent}"),
                    "trace_id": "t", "payload": {"n": i},
                    "entities": [{"name": name,
                        "entity_type": "service", "role": "object"}],
                });
                if let Some(p) = parent
                    && *p != i
                {
                    e["parent_event_id"] = json!(format!("e{p}"));
                }
                e
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn forgetting_then_reprojecting_equals_forgetting(
        events in events(14),
        forget in prop::collection::vec((0..16usize, any::<bool>()), 1..4),
    ) {
        let (_dir, mut engine) = engine();
        let records: Vec<_> =
            events.iter().map(|e| engine.validate(&e.to_string()).unwrap()).collect();
        for o in engine.ingest_batch(&records, Projection::Inline, false).unwrap() {
            prop_assert!(matches!(o, Ok(IngestOutcome::New(_)) | Ok(IngestOutcome::Duplicate(_))));
        }
        for (i, session) in forget {
            let target = if session {
                ForgetTarget { kind: ForgetKind::Session, id: format!("s{}", i % 3) }
            } else {
                ForgetTarget { kind: ForgetKind::Event, id: format!("e{i}") }
            };
            match engine.forget(&target, "local", None) {
                Ok(_) => {}
                Err(e) => prop_assert_eq!(e.code(), "forget.unknown_target"),
            }
        }
        let incremental = dump(&engine);
        engine.reproject(&mut |_, _| {}).unwrap();
        prop_assert_eq!(dump(&engine), incremental);
    }
}

#[test]
fn forgetting_sessions_of_a_consolidated_trace_equals_reprojecting() {
    let (_dir, mut engine) = engine();
    ingest(&mut engine, &trace(400));
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    for session in ["sess-0003", "sess-0010"] {
        let target = ForgetTarget { kind: ForgetKind::Session, id: session.into() };
        assert!(engine.forget(&target, "local", None).unwrap().redacted > 0);
    }
    let target = ForgetTarget { kind: ForgetKind::Event, id: "evt-000200".into() };
    engine.forget(&target, "local", None).unwrap();
    same_after_reprojection(&mut engine);
}
