//! Forgetting: the payload leaves the stored data, derived data goes with it, reprojection keeps
//! it forgotten, the audit lists it without the content, and incremental == reprojected.

use ctxgraph::{
    Direction, DocumentFormat, DocumentInput, Engine, EntityArg, EntityDecision, EntityInput,
    FactInput, ForgetKind, ForgetTarget, IngestOutcome, NodeKey, ObjectInput, Projection,
    RecallQuery, RecordKind,
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

    let snap = engine.owner_reader().unwrap();
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
        (
            audit[0].record.kind,
            audit[0].record.target_id.as_str(),
            audit[0].record.by.as_str(),
            audit[0].record.redacted
        ),
        (ForgetKind::Event, "secret-1", "ops", 1)
    );
    assert_eq!(audit[0].record.reason.as_deref(), Some("leaked credential"));
    drop(snap);
    assert!(!recall_ids(&engine, SECRET).contains(&"secret-1".to_owned()));

    same_after_reprojection(&mut engine);
    engine.checkpoint().unwrap();
    assert!(engine.owner_reader().unwrap().event("secret-1").unwrap().is_none());
    assert!(!file_has(dir.path(), SECRET));
    // The forgotten event cannot come back under its id.
    let again = engine.ingest_jsonl(secret_events().as_bytes(), &Default::default(), &mut |_| {});
    assert_eq!(again.unwrap().rejections.len(), 1);
}

#[test]
fn an_unknown_target_is_a_typed_error_and_changes_nothing() {
    let (_dir, mut engine) = engine();
    ingest(&mut engine, &secret_events());
    let head = engine.owner_reader().unwrap().checkpoints().unwrap().log_length;
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
    assert_eq!(engine.owner_reader().unwrap().checkpoints().unwrap().log_length, head + 1);
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
    let snap = engine.owner_reader().unwrap();
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
        forget in prop::collection::vec((0..16usize, 0..3u8), 1..4),
    ) {
        let (_dir, mut engine) = engine();
        let records: Vec<_> =
            events.iter().map(|e| engine.validate(&e.to_string()).unwrap()).collect();
        for o in engine.ingest_batch(&records, Projection::Inline, false).unwrap() {
            prop_assert!(matches!(o, Ok(IngestOutcome::New(_)) | Ok(IngestOutcome::Duplicate(_))));
        }
        for (i, kind) in forget {
            let target = match kind {
                0 => ForgetTarget { kind: ForgetKind::Event, id: format!("e{i}") },
                1 => ForgetTarget { kind: ForgetKind::Session, id: format!("s{}", i % 3) },
                // Services of the pool, and now and then an agent (refused: its events name it).
                _ if i % 5 == 4 => ForgetTarget { kind: ForgetKind::Entity, id: format!("agent:agent-{}", i % 3) },
                _ => {
                    let name = ["orders db", "refund", "billing-api", "invoice"][i % 4];
                    ForgetTarget { kind: ForgetKind::Entity, id: format!("service:{name}") }
                }
            };
            match engine.forget(&target, "local", None) {
                Ok(_) => {}
                Err(e) => prop_assert!(
                    matches!(e.code(), "forget.unknown_target" | "forget.entity_required"),
                    "{e}"
                ),
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
    // The lexical index lost the forgotten documents list by list: every search matches what
    // it matches after a full rebuild.
    let matches = |engine: &Engine| -> Vec<Vec<String>> {
        let snap = engine.owner_reader().unwrap();
        ["failed timeout", "refund billing", "deploy checkout", "search docs", "session"]
            .iter()
            .map(|q| {
                let mut ids: Vec<String> =
                    snap.search(q, 10_000).unwrap().into_iter().map(|(n, _)| n.key.id).collect();
                ids.sort();
                ids
            })
            .collect()
    };
    let incremental = matches(&engine);
    assert!(incremental.iter().all(|ids| !ids.is_empty()));
    engine.index_text().unwrap();
    assert_eq!(matches(&engine), incremental);
    same_after_reprojection(&mut engine);
}

/// A name that occurs nowhere else in the store.
const NAME: &str = "zorblaxion vault";

fn entity_events() -> String {
    [
        json!({"event_id": "ent-1", "event_type": "tool.execute",
            "occurred_at": "2026-11-21T09:00:00Z", "session_id": "s-ent", "agent_id": "planner",
            "trace_id": "t9", "tool_name": "zorbprobe_scan", "status": "completed",
            "payload": {"text": "checked the storage quota"},
            "entities": [{"name": NAME, "entity_type": "resource", "role": "object"},
                {"name": "Postgres", "entity_type": "service", "role": "object"}]}),
        json!({"event_id": "ent-2", "event_type": "tool.execute",
            "occurred_at": "2026-11-21T09:00:05Z", "session_id": "s-ent", "agent_id": "planner",
            "trace_id": "t9", "parent_event_id": "ent-1", "tool_name": "sql_query",
            "user_id": "zorbuser", "status": "failed", "payload": {"error": "quota exceeded"},
            "entities": [{"name": NAME, "entity_type": "resource", "role": "target"}]}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

/// Facts, a type, a slot and a decision about the entity.
fn knowledge_about(engine: &mut Engine) {
    let entity = || EntityInput::typed(NAME, "resource");
    let mut f = FactInput::new(
        entity(),
        "depends_on",
        ObjectInput::Entity(EntityInput::typed("Postgres", "service")),
    );
    f.asserted_at = Some("2026-11-21T10:00:00Z".into());
    engine.record_fact(&f).unwrap();
    let mut g = FactInput::new(
        EntityInput::typed("Postgres", "service"),
        "depends_on",
        ObjectInput::Entity(entity()),
    );
    g.asserted_at = Some("2026-11-21T10:00:00Z".into());
    engine.record_fact(&g).unwrap();
    engine.declare_type("Vault", None).unwrap();
    let id = EntityArg::Id(format!("resource:{NAME}"));
    engine.add_instance(&id, "vault").unwrap();
    engine.set_slot(&id, "owner", "storage team", Some(0.8), Some("wiki")).unwrap();
    engine
        .decide_entities(
            EntityDecision::Reject,
            &format!("resource:{NAME}"),
            "service:postgres",
            Some("different things"),
            Some("ops"),
        )
        .unwrap();
}

#[test]
fn a_forgotten_entity_leaves_the_store_file_and_its_events_lose_the_reference() {
    let (dir, mut engine) = engine();
    ingest(&mut engine, &trace(80));
    ingest(&mut engine, &entity_events());
    knowledge_about(&mut engine);
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    engine.checkpoint().unwrap();
    let key = NodeKey::new("Entity", format!("resource:{NAME}"));
    assert!(file_has(dir.path(), "zorblaxion"), "the name is stored before it is forgotten");
    assert!(engine.owner_reader().unwrap().node(&key).unwrap().is_some());
    assert!(!engine.owner_reader().unwrap().search("zorblaxion", 10).unwrap().is_empty());

    // An agent is named by every event it wrote: it cannot go on its own.
    let agent = ForgetTarget { kind: ForgetKind::Entity, id: "agent:planner".into() };
    let err = engine.forget(&agent, "ops", None).unwrap_err();
    assert_eq!(err.code(), "forget.entity_required");

    let target = ForgetTarget { kind: ForgetKind::Entity, id: format!("resource:{NAME}") };
    let report = engine.forget(&target, "ops", Some("customer asked")).unwrap();
    // Two events rewritten; two facts, the instance, the slot and the decision tombstoned.
    assert_eq!(report.redacted, 7);
    assert!(!file_has(dir.path(), "zorblaxion"), "the name's bytes are gone from the files");

    let snap = engine.owner_reader().unwrap();
    assert!(snap.node(&key).unwrap().is_none());
    assert!(snap.search("zorblaxion", 10).unwrap().is_empty());
    assert!(snap.facts_about("service:postgres", None).unwrap().is_empty());
    // The events stay, without the reference.
    let event = snap.event("ent-1").unwrap().unwrap();
    let refs: Vec<String> = snap
        .edges(&event.key, Some("REFERENCES"), Direction::Out)
        .unwrap()
        .into_iter()
        .map(|e| e.key.to.id)
        .collect();
    assert!(refs.contains(&"service:postgres".to_owned()) && refs.len() == 3, "{refs:?}");
    let audit = snap.forgotten().unwrap();
    assert_eq!(audit.len(), 1);
    assert_eq!((audit[0].record.kind, audit[0].record.redacted), (ForgetKind::Entity, 7));
    assert!(
        audit[0].record.target_id.starts_with("entity-")
            && !audit[0].record.target_id.contains("zorb")
    );
    drop(snap);
    assert!(recall_ids(&engine, NAME).iter().all(|id| !id.contains("zorblaxion")));

    // A tool and a user are left out of the events that name them.
    for id in ["tool:zorbprobe_scan", "user:zorbuser"] {
        let target = ForgetTarget { kind: ForgetKind::Entity, id: id.into() };
        assert_eq!(engine.forget(&target, "ops", None).unwrap().redacted, 1);
    }
    assert!(!file_has(dir.path(), "zorb"), "no trace of any of the three names");
    let snap = engine.owner_reader().unwrap();
    let event = snap.event("ent-1").unwrap().unwrap();
    assert!(!event.props.contains_key("tool_name"));
    assert!(!snap.event("ent-2").unwrap().unwrap().props.contains_key("user_id"));
    drop(snap);

    same_after_reprojection(&mut engine);
    engine.checkpoint().unwrap();
    assert!(engine.owner_reader().unwrap().node(&key).unwrap().is_none());
    assert!(!file_has(dir.path(), "zorb"));
}

#[test]
fn a_forgotten_entity_leaves_the_mentions_of_documents() {
    let (_dir, mut engine) = engine();
    ingest(&mut engine, &entity_events());
    let doc = DocumentInput {
        url: "notes/vault.md".into(),
        text: format!("# Vault\n\nThe {NAME} holds backups. Postgres writes there.\n"),
        format: DocumentFormat::Markdown,
        title: None,
        extract: false,
        ingested_at: Some("2026-11-21T10:00:00Z".into()),
    };
    let added = engine.add_document(&doc).unwrap();
    assert!(added.mentions >= 1);
    let target = ForgetTarget { kind: ForgetKind::Entity, id: format!("resource:{NAME}") };
    let report = engine.forget(&target, "ops", None).unwrap();
    assert_eq!(report.redacted, 3, "two events and the document rewritten");
    engine.enrich(&mut |_, _| {}).unwrap();
    let snap = engine.owner_reader().unwrap();
    let mentions = snap.edges_of_type("MENTIONS", None, 100).unwrap();
    assert!(mentions.iter().all(|e| !e.key.to.id.contains("zorblaxion")), "{mentions:?}");
    assert!(!mentions.is_empty(), "Postgres is still mentioned");
    drop(snap);
    same_after_reprojection(&mut engine);
}
