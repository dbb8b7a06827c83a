//! Ingestion: outcomes, rejections that change nothing, stage-1 projection results.

use ctxgraph::{Direction, IngestOptions, NodeKey};
use serde_json::{Value, json};

use super::engine;

fn event(id: &str, at: &str) -> Value {
    json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at, "session_id": "s1",
           "agent_id": "planner", "trace_id": "t1"})
}

fn lines(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

fn files(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    out.sort();
    out
}

#[test]
fn malformed_records_are_named_and_change_nothing_byte_for_byte() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("g.ctxg");
    {
        let mut e =
            ctxgraph::Engine::open(&path, ctxgraph::OpenMode::CreateIfMissing, Default::default())
                .unwrap();
        e.ingest_jsonl(
            lines(&[event("e1", "2026-11-20T09:00:00Z")]).as_bytes(),
            &IngestOptions::default(),
            &mut |_| {},
        )
        .unwrap();
        e.checkpoint().unwrap();
    }
    let before = files(dir.path());
    let bad = [
        ("{\"event_id\": \"e9\",", "json.syntax", "$"),
        (
            r#"{"event_id": 9, "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s1", "agent_id": "a", "trace_id": "t"}"#,
            "envelope.type",
            "$.event_id",
        ),
        (
            r#"{"event_id": "e9", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s1", "agent_id": "a", "trace_id": "t", "colour": "red"}"#,
            "envelope.unknown_field",
            "$.colour",
        ),
        (
            r#"{"event_id": "e9", "event_type": "Tool Execute", "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s1", "agent_id": "a", "trace_id": "t"}"#,
            "envelope.event_type_format",
            "$.event_type",
        ),
        (
            r#"{"record_type": "edge", "edge_id": "x", "edge_type": "CAUSED_BY", "from": {"label": "Event", "id": "e1"}, "to": {"label": "Entity", "id": "tool:x"}, "properties": {"mechanism": "inferred"}}"#,
            "schema.edge_endpoints",
            "$.to.label",
        ),
        (
            r#"{"event_id": "e1", "event_type": "llm.chat", "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s1", "agent_id": "planner", "trace_id": "t1"}"#,
            "log.conflict",
            "$",
        ),
    ];
    for (line, code, path_) in bad {
        let mut e =
            ctxgraph::Engine::open(&path, ctxgraph::OpenMode::MustExist, Default::default())
                .unwrap();
        let report = e
            .ingest_jsonl(format!("{line}\n").as_bytes(), &IngestOptions::default(), &mut |_| {})
            .unwrap();
        assert_eq!(report.accepted, 0, "{line}");
        assert_eq!(report.rejections.len(), 1, "{line}");
        let r = &report.rejections[0];
        assert_eq!(r.code, code, "{line}: {r:?}");
        assert!(r.violations.iter().any(|v| v.path == path_), "{line}: {r:?}");
        drop(e);
        assert_eq!(files(dir.path()), before, "store changed after {line}");
    }
}

#[test]
fn duplicates_conflicts_and_strict_mode() {
    let (_dir, mut e) = engine();
    let first = lines(&[event("e1", "2026-11-20T09:00:00Z"), event("e2", "2026-11-20T09:00:01Z")]);
    let r = e.ingest_jsonl(first.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((r.accepted, r.progress.duplicates, r.progress.rejected), (2, 0, 0));
    assert_eq!(r.positions, Some((1, 2)));

    let mut changed = event("e2", "2026-11-20T09:00:01Z");
    changed["status"] = json!("failed");
    let again = lines(&[
        event("e1", "2026-11-20T09:00:00Z"),
        changed.clone(),
        event("e3", "2026-11-20T09:00:02Z"),
    ]);
    let r = e.ingest_jsonl(again.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((r.accepted, r.progress.duplicates, r.progress.rejected), (1, 1, 1));
    assert_eq!(r.rejections[0].code, "log.conflict");
    assert_eq!(r.rejections[0].line, 2);

    let strict = IngestOptions { strict: true, ..IngestOptions::default() };
    let text = format!(
        "{}\nnot json\n{}\n",
        event("e4", "2026-11-20T09:00:03Z"),
        event("e5", "2026-11-20T09:00:04Z")
    );
    let r = e.ingest_jsonl(text.as_bytes(), &strict, &mut |_| {}).unwrap();
    assert!(r.stopped);
    assert_eq!(r.accepted, 1);
    let snap = e.owner_reader().unwrap();
    assert!(snap.event("e4").unwrap().is_some());
    assert!(snap.event("e5").unwrap().is_none());
    assert_eq!(snap.store_stats().unwrap().log_length, 4);
}

#[test]
fn stage_one_projection_builds_follows_causes_and_references() {
    let (_dir, mut e) = engine();
    let mut child = event("e2", "2026-11-20T09:00:02.500Z");
    child["parent_event_id"] = json!("e1");
    child["tool_name"] = json!("sql_query");
    child["user_id"] = json!("user-7");
    child["entities"] = json!([{"name": "Orders DB", "entity_type": "service", "role": "target"},
                               {"name": "orders  db", "entity_type": "service", "role": "object"}]);
    let mut late = event("e3", "2026-11-20T09:00:01Z");
    late["entities"] = json!([{"name": "ORDERS DB", "entity_type": "service"}]);
    // Child before parent, then a late event in the middle of the session.
    let text = lines(&[child, event("e1", "2026-11-20T09:00:00+01:00"), late]);
    let r = e
        .ingest_jsonl(
            text.as_bytes(),
            &IngestOptions { batch_size: 1, ..Default::default() },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(r.accepted, 3);
    let snap = e.owner_reader().unwrap();

    // e1 is at 08:00Z, e3 at 09:00:01Z, e2 at 09:00:02.5Z.
    let follows =
        |id: &str| snap.edges(&NodeKey::new("Event", id), Some("FOLLOWS"), Direction::Out).unwrap();
    assert!(follows("e1").is_empty());
    assert_eq!(follows("e3")[0].key.to.id, "e1");
    assert_eq!(follows("e3")[0].props["delta_ms"], json!(3_601_000));
    assert_eq!(follows("e2")[0].key.to.id, "e3");
    assert_eq!(follows("e2")[0].props["delta_ms"], json!(1_500));
    assert_eq!(snap.view(ctxgraph::View::Temporal, None, 10).unwrap().len(), 2);

    let causes =
        snap.edges(&NodeKey::new("Event", "e2"), Some("CAUSED_BY"), Direction::Out).unwrap();
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].key.to.id, "e1");
    assert_eq!(causes[0].props["mechanism"], json!("direct"));
    assert_eq!(snap.store_stats().unwrap().pending_edges, 0);

    let refs =
        snap.edges(&NodeKey::new("Event", "e2"), Some("REFERENCES"), Direction::Out).unwrap();
    let got: Vec<(String, String)> = refs
        .iter()
        .map(|r| (r.key.to.id.clone(), r.props["role"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(
        got,
        [
            ("agent:planner".to_owned(), "agent".to_owned()),
            ("service:orders db".to_owned(), "object".to_owned()),
            ("service:orders db".to_owned(), "result".to_owned()),
            ("tool:sql_query".to_owned(), "instrument".to_owned()),
            ("user:user-7".to_owned(), "participant".to_owned()),
        ]
    );
    let db = snap.node(&NodeKey::new("Entity", "service:orders db")).unwrap().unwrap();
    assert_eq!(db.props["mention_count"], json!(2));
    assert_eq!(db.props["first_seen"], json!("2026-11-20T09:00:01Z"));
    assert_eq!(db.props["last_seen"], json!("2026-11-20T09:00:02.500Z"));
    assert_eq!(db.props["name"], json!("ORDERS DB"));
    let agent = snap.node(&NodeKey::new("Entity", "agent:planner")).unwrap().unwrap();
    assert_eq!(agent.props["mention_count"], json!(3));
    assert_eq!(agent.props["entity_type"], json!("agent"));

    let (chain, missing) = snap.causes("e2").unwrap();
    assert_eq!(chain.iter().map(|n| n.key.id.as_str()).collect::<Vec<_>>(), ["e2", "e1"]);
    assert_eq!(missing, None);
    assert_eq!(snap.effects("e1", 10).unwrap().len(), 1);
}

#[test]
fn a_missing_parent_is_a_known_unknown_until_it_arrives() {
    let (_dir, mut e) = engine();
    let mut child = event("c", "2026-11-20T09:00:01Z");
    child["parent_event_id"] = json!("p");
    e.ingest_jsonl(lines(&[child]).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    let snap = e.owner_reader().unwrap();
    assert_eq!(snap.store_stats().unwrap().pending_edges, 1);
    assert_eq!(snap.causes("c").unwrap().1, Some("p".to_owned()));
    assert_eq!(snap.timeline("s1", 10).unwrap()[0].missing_parent, Some("p".to_owned()));
    drop(snap);
    e.ingest_jsonl(
        lines(&[event("p", "2026-11-20T09:00:00Z")]).as_bytes(),
        &IngestOptions::default(),
        &mut |_| {},
    )
    .unwrap();
    let snap = e.owner_reader().unwrap();
    assert_eq!(snap.store_stats().unwrap().pending_edges, 0);
    assert_eq!(snap.timeline("s1", 10).unwrap()[1].caused_by, ["p"]);
}

#[test]
fn schema_modules_are_records_and_extend_what_records_may_say() {
    let (dir, mut e) = engine();
    let module = "module = \"tickets\"\n[node_types.Ticket]\nkey = \"ticket_id\"\nproperties = { ticket_id = { type = \"string\", required = true } }\n[edge_types.TRACKS]\nendpoints = [[\"Event\", \"Event\"]]\n";
    assert!(matches!(e.add_schema_module(module).unwrap(), ctxgraph::IngestOutcome::New(1)));
    assert!(matches!(e.add_schema_module(module).unwrap(), ctxgraph::IngestOutcome::Duplicate(1)));
    let edge = json!({"record_type": "edge", "edge_id": "x1", "edge_type": "TRACKS",
        "from": {"label": "Event", "id": "e2"}, "to": {"label": "Event", "id": "e1"}});
    let text = lines(&[edge, event("e1", "2026-11-20T09:00:00Z")]);
    let r = e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(r.accepted, 2);
    assert_eq!(e.owner_reader().unwrap().store_stats().unwrap().pending_edges, 1, "waits for e2");
    let path = dir.path().join("t.ctxg");
    drop(e);
    // The module is in the log: a reopened store knows it, and reprojection keeps the parked edge.
    let mut e =
        ctxgraph::Engine::open(&path, ctxgraph::OpenMode::MustExist, Default::default()).unwrap();
    assert!(e.schema().edge_type("TRACKS").is_some());
    e.reproject(&mut |_, _| {}).unwrap();
    assert_eq!(e.owner_reader().unwrap().store_stats().unwrap().pending_edges, 1);
}

#[test]
fn a_schema_record_ingested_again_is_a_duplicate() {
    let (_dir, mut e) = engine();
    let module = "module = \"ops\"\n[enums.entity_type]\nvalues = [{ name = \"dataset\" }]\n";
    let line = json!({"record_type": "schema", "module": "ops", "source": module});
    let text = lines(&[line.clone(), event("e1", "2026-11-20T09:00:00Z")]);
    let r = e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((r.accepted, r.progress.duplicates, r.progress.rejected), (2, 0, 0));
    let r = e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((r.accepted, r.progress.duplicates, r.progress.rejected), (0, 2, 0));
    let changed = json!({"record_type": "schema", "module": "ops", "source": "module = \"ops\"\n"});
    let r = e
        .ingest_jsonl(lines(&[changed]).as_bytes(), &IngestOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(r.progress.rejected, 1, "same module name, different text");
    assert_eq!(r.rejections[0].code, "schema.duplicate_module");
}

/// Rejections name the physical line, blank lines included (they used to shift the numbers).
#[test]
fn rejected_line_numbers_count_blank_lines() {
    let (_dir, mut e) = engine();
    let text = format!(
        "\n{}\n\n   \nnot json\n{}\n",
        event("e1", "2026-11-20T09:00:00Z"),
        event("e2", "2026-11-20T09:00:01Z")
    );
    let r = e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!((r.accepted, r.progress.rejected, r.progress.lines), (2, 1, 3));
    assert_eq!(r.rejections[0].line, 5);
    assert_eq!(r.progress.bytes, text.len() as u64 - 6, "every byte but the six newlines");
}

/// Many chunks in flight: order, strict stops and schema modules mid-stream behave as in one pass.
#[test]
fn pipelined_ingest_keeps_order_across_chunks() {
    let (_dir, mut e) = engine();
    let module = "module = \"late\"\n[enums.entity_type]\nvalues = [{ name = \"dataset\" }]\n";
    let mut lines_: Vec<Value> =
        (0..3000).map(|i| event(&format!("e{i:04}"), "2026-11-20T09:00:00Z")).collect();
    let mut uses = event("uses", "2026-11-20T09:00:00Z");
    uses["entities"] = json!([{"name": "sales", "entity_type": "dataset"}]);
    lines_.insert(2500, json!({"record_type": "schema", "module": "late", "source": module}));
    lines_.insert(2501, uses);
    let r = e
        .ingest_jsonl(
            lines(&lines_).as_bytes(),
            &IngestOptions { batch_size: 700, ..Default::default() },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!((r.accepted, r.progress.rejected), (3002, 0), "{:?}", r.rejections.first());
    let log = e.owner_reader().unwrap().log(1, 5000).unwrap();
    assert_eq!(log[2500].id, "late");
    assert_eq!(log[2501].id, "uses");
    assert_eq!(log[2999].id, "e2997");

    let mut bad = (0..2000)
        .map(|i| format!("{}\n", event(&format!("s{i:04}"), "2026-11-20T09:00:00Z")))
        .collect::<String>();
    bad.push_str("{oops\n");
    bad.push_str(&lines(&[event("after", "2026-11-20T09:00:00Z")]));
    let strict = IngestOptions { strict: true, ..IngestOptions::default() };
    let r = e.ingest_jsonl(bad.as_bytes(), &strict, &mut |_| {}).unwrap();
    assert!(r.stopped);
    assert_eq!((r.accepted, r.rejections[0].line), (2000, 2001));
    assert!(
        e.owner_reader().unwrap().event("after").unwrap().is_none(),
        "read ahead, never written"
    );
}
