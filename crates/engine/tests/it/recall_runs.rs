//! Recall on agent runs: ids and sessions named in a question are anchors, structural cues
//! (failure, after, request, involved) pick the nodes that answer, and constraints hold for every
//! node kind, summaries included. Ground truth comes from the generated trace's records.

use std::collections::BTreeSet;

use ctxgraph::{ContextPack, Engine, IngestOptions, NodeKey, RecallQuery};
use serde_json::Value;

use super::{engine, trace};

/// The trace's records and an engine holding them, enriched and consolidated.
fn loaded(events: usize) -> (tempfile::TempDir, Engine, Vec<Value>) {
    let (dir, mut e) = engine();
    let text = trace(events);
    e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    let records = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (dir, e, records)
}

fn field<'v>(record: &'v Value, name: &str) -> &'v str {
    record.get(name).and_then(Value::as_str).unwrap_or_default()
}

fn keys(pack: &ContextPack) -> Vec<NodeKey> {
    pack.items.iter().map(|i| i.node.key.clone()).collect()
}

/// The ids of a pack's items of one label, in rank order.
fn labelled<'p>(pack: &'p ContextPack, label: &str) -> Vec<&'p str> {
    pack.items
        .iter()
        .filter(|i| i.node.key.label == label)
        .map(|i| i.node.key.id.as_str())
        .collect()
}

fn ask(e: &Engine, question: &str) -> ContextPack {
    e.recall(&RecallQuery::new(question)).unwrap()
}

/// Every session id of the trace, once each, in order.
fn sessions(records: &[Value]) -> Vec<&str> {
    let mut sessions: Vec<&str> = records.iter().map(|r| field(r, "session_id")).collect();
    sessions.sort_unstable();
    sessions.dedup();
    sessions
}

/// The failed events of a session.
fn failed_in(records: &[Value], session: &str) -> Vec<NodeKey> {
    records
        .iter()
        .filter(|r| field(r, "session_id") == session && field(r, "status") == "failed")
        .map(|r| NodeKey::new("Event", field(r, "event_id")))
        .collect()
}

/// A session with one to three failed events, and those events.
fn failing_session(records: &[Value]) -> (String, Vec<NodeKey>) {
    let sessions = sessions(records);
    for session in sessions {
        let failed = failed_in(records, session);
        if (1..=3).contains(&failed.len()) {
            return (session.to_owned(), failed);
        }
    }
    panic!("the trace has a session with one to three failures");
}

#[test]
fn a_session_named_in_a_failure_question_is_a_constraint_and_its_failures_come_first() {
    let (_dir, e, records) = loaded(1500);
    let (session, failed) = failing_session(&records);
    for question in [
        format!("Why did session {session} fail?"),
        format!("What went wrong in {session}?"),
        format!("errors during {session}"),
    ] {
        let pack = ask(&e, &question);
        let top = keys(&pack);
        for f in &failed {
            assert!(top.contains(f), "{question}: {f} missing from {top:?}");
        }
        assert!(pack.state.cues.contains(&"failure"), "{question}");
        assert!(
            pack.state.constraints.contains(&("session".to_owned(), session.clone())),
            "{question}: the named session constrains the pack"
        );
        for item in &pack.items {
            match item.node.key.label.as_str() {
                "Event" => assert_eq!(item.node.props["session_id"], session.as_str()),
                "Summary" => assert_eq!(item.node.key.id, format!("session:{session}")),
                _ => {}
            }
        }
        // A failure question ranks the failed events above everything else the session holds.
        let first_failed = &pack.items[..failed.len()];
        assert!(first_failed.iter().all(|i| i.node.props["status"] == "failed"), "{question}");
    }
}

#[test]
fn an_event_id_is_an_anchor_and_who_was_involved_gives_its_references() {
    let (_dir, e, records) = loaded(1500);
    let event = records
        .iter()
        .find(|r| field(r, "event_type") == "tool.execute" && r.get("entities").is_some())
        .unwrap();
    let id = field(event, "event_id");
    let snap = e.owner_reader().unwrap();
    let refs: BTreeSet<NodeKey> = snap
        .edges(&NodeKey::new("Event", id), Some("REFERENCES"), ctxgraph::Direction::Out)
        .unwrap()
        .into_iter()
        .map(|edge| edge.key.to)
        .collect();
    assert!(refs.len() >= 2);
    drop(snap);
    for question in [format!("Who was involved in event {id}?"), format!("who took part in {id}")] {
        let pack = ask(&e, &question);
        let top = keys(&pack);
        assert!(top.contains(&NodeKey::new("Event", id)), "{question}: the anchor is in the pack");
        for r in &refs {
            assert!(top.contains(r), "{question}: {r} missing from {top:?}");
        }
        assert_eq!(pack.state.anchors, vec![NodeKey::new("Event", id)]);
        let anchor = pack.items.iter().find(|i| i.node.key.id == id).unwrap();
        assert!(anchor.found_by.contains(&"anchor"));
    }
}

#[test]
fn what_happened_after_an_event_walks_to_its_consequences() {
    let (_dir, e, records) = loaded(1500);
    let (failure, children) = records
        .iter()
        .filter(|r| field(r, "status") == "failed")
        .find_map(|r| {
            let id = field(r, "event_id");
            let children: Vec<NodeKey> = records
                .iter()
                .filter(|c| field(c, "parent_event_id") == id)
                .map(|c| NodeKey::new("Event", field(c, "event_id")))
                .collect();
            (1..=4).contains(&children.len()).then(|| (r.clone(), children))
        })
        .unwrap();
    let question = format!(
        "What happened after the {} call {} failed?",
        field(&failure, "tool_name"),
        field(&failure, "event_id")
    );
    let pack = ask(&e, &question);
    assert!(pack.state.cues.contains(&"after"));
    let top = keys(&pack);
    for child in &children {
        assert!(top.contains(child), "{child} missing from {top:?}");
        let item = pack.items.iter().find(|i| &i.node.key == child).unwrap();
        if !item.path.is_empty() {
            assert!(item.path.iter().any(|s| s.edge_type == "CAUSED_BY" && !s.forward));
        }
    }
}

#[test]
fn a_request_question_finds_the_sessions_first_input() {
    let (_dir, e, records) = loaded(1500);
    let input = records.iter().find(|r| field(r, "event_type") == "observation.input").unwrap();
    let session = field(input, "session_id");
    let want = NodeKey::new("Event", field(input, "event_id"));
    for question in [
        format!("What did the user ask for in session {session}?"),
        format!("What was the task of {session}?"),
        format!("{session}: what was requested"),
    ] {
        let pack = ask(&e, &question);
        assert_eq!(pack.items[0].node.key, want, "{question}");
        assert!(pack.items[0].found_by.contains(&"scope"));
    }
}

#[test]
fn summaries_never_outrank_events_nor_answer_outside_their_session_or_day() {
    let (_dir, e, records) = loaded(1500);
    let (session, _) = failing_session(&records);
    let mut q = RecallQuery::new("what failed");
    q.session = Some(session.clone());
    let pack = e.recall(&q).unwrap();
    assert!(!pack.items.is_empty());
    for item in &pack.items {
        if item.node.key.label == "Summary" {
            assert_eq!(item.node.key.id, format!("session:{session}"), "no day or other session");
        }
    }
    // Without a constraint, a failure question is answered by events, not by summaries whose
    // counts say "0 failed".
    let pack = ask(&e, "which tool calls failed");
    assert_ne!(pack.items[0].node.key.label, "Summary");
    for item in pack.items.iter().filter(|i| i.node.key.label == "Summary") {
        let best_event = pack.items.iter().find(|i| i.node.key.label == "Event").unwrap();
        assert!(item.score <= best_event.score);
    }
}

#[test]
fn entities_under_a_session_constraint_are_those_its_events_reference() {
    let (_dir, e, records) = loaded(1500);
    let (session, _) = failing_session(&records);
    let snap = e.owner_reader().unwrap();
    let mut referenced = BTreeSet::new();
    for entry in snap.timeline(&session, 10_000).unwrap() {
        for edge in
            snap.edges(&entry.event.key, Some("REFERENCES"), ctxgraph::Direction::Out).unwrap()
        {
            referenced.insert(edge.key.to);
        }
    }
    drop(snap);
    for question in ["who was involved", "which services and tools", "coding-agent support-agent"] {
        let mut q = RecallQuery::new(question);
        q.session = Some(session.clone());
        q.k = 30;
        let pack = e.recall(&q).unwrap();
        for item in pack.items.iter().filter(|i| i.node.key.label == "Entity") {
            assert!(
                referenced.contains(&item.node.key),
                "{question}: {} is not of {session}",
                item.node.key
            );
        }
    }
}

#[test]
fn a_failure_question_naming_a_user_and_their_request_finds_that_runs_failures() {
    let (_dir, e, records) = loaded(1500);
    let first_input = |session: &str| {
        records.iter().find(|r| {
            field(r, "session_id") == session && field(r, "event_type") == "observation.input"
        })
    };
    let asked = |user: &str, text: &str| {
        records
            .iter()
            .filter(|r| field(r, "user_id") == user && r["payload"]["text"].as_str() == Some(text))
            .count()
    };
    let mut checked = 0;
    for session in sessions(&records) {
        let failed = failed_in(&records, session);
        let Some(input) = first_input(session) else { continue };
        let (user, text) =
            (field(input, "user_id"), input["payload"]["text"].as_str().unwrap_or(""));
        if !(1..=3).contains(&failed.len()) || user.is_empty() || asked(user, text) != 1 {
            continue;
        }
        let pack = ask(&e, &format!("What went wrong when {user} asked: {text}"));
        let top = keys(&pack);
        for f in &failed {
            assert!(top.contains(f), "{session}: {f} missing from {top:?}");
        }
        assert!(pack.state.constraints.is_empty(), "an inferred session is no constraint");
        checked += 1;
        if checked == 3 {
            break;
        }
    }
    assert!(checked > 0, "the trace has a run with a unique request and a few failures");
}

#[test]
fn facts_about_a_named_entity_answer_and_their_own_confidence_meets_the_minimum() {
    use ctxgraph::{EntityInput, FactInput, ObjectInput};
    let (_dir, mut e) = engine();
    let fact = |object: &str, confidence: f64| {
        let mut f = FactInput::new(
            EntityInput::typed("Neurodock", "service"),
            "depends_on",
            ObjectInput::Entity(EntityInput::typed(object, "service")),
        );
        f.confidence = Some(confidence);
        f.asserted_at = Some("2026-05-01T09:00:00Z".into());
        f
    };
    e.record_fact(&fact("Redis", 0.9)).unwrap();
    e.record_fact(&fact("Kafka", 0.3)).unwrap();
    let pack = ask(&e, "What do we know about Neurodock?");
    let facts = labelled(&pack, "Fact");
    assert_eq!(facts.len(), 2, "{facts:?}");
    assert!(
        pack.items
            .iter()
            .filter(|i| i.node.key.label == "Fact")
            .all(|i| i.found_by.contains(&"knowledge"))
    );
    let mut q = RecallQuery::new("What do we know about Neurodock?");
    q.min_confidence = 0.5;
    let pack = e.recall(&q).unwrap();
    let facts = labelled(&pack, "Fact");
    assert_eq!(facts, vec!["service:neurodock|depends_on|service:redis"]);
}

#[test]
fn a_run_without_an_input_event_was_asked_by_its_first_event_with_a_user() {
    let (_dir, mut e) = engine();
    let lines = [
        serde_json::json!({"event_id": "r1", "event_type": "session.start", "occurred_at": "2026-05-01T08:00:00Z",
            "session_id": "run-9", "agent_id": "helper", "trace_id": "t9"}),
        serde_json::json!({"event_id": "r2", "event_type": "llm.chat", "occurred_at": "2026-05-01T08:00:01Z",
            "session_id": "run-9", "agent_id": "helper", "trace_id": "t9", "user_id": "dana",
            "parent_event_id": "r1", "payload": {"prompt": "summarise the incident report"}}),
        serde_json::json!({"event_id": "r3", "event_type": "tool.execute", "occurred_at": "2026-05-01T08:00:02Z",
            "session_id": "run-9", "agent_id": "helper", "trace_id": "t9", "tool_name": "read_file",
            "parent_event_id": "r2", "status": "completed"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    for question in ["What was the task of run-9?", "What did dana ask for in trace t9?"] {
        let pack = ask(&e, question);
        assert_eq!(pack.items[0].node.key, NodeKey::new("Event", "r2"), "{question}");
    }
}

#[test]
fn a_hidden_session_or_event_named_in_a_question_is_no_anchor() {
    let text = trace(1500);
    let records: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (session, failed) = failing_session(&records);
    // Every event of the session is hidden from viewers.
    let (_dir, mut e) = engine();
    let mut scoped = String::new();
    for mut r in records {
        if field(&r, "session_id") == session {
            r["scope"] = serde_json::json!({"deny_roles": ["viewer"]});
        }
        scoped.push_str(&format!("{r}\n"));
    }
    e.ingest_jsonl(scoped.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    let who = ctxgraph::Principal::new("v", "default", ["viewer".to_owned()]).unwrap();
    let hidden = failed[0].id.clone();
    let asked = |question: &str| e.recall_as(&RecallQuery::new(question), &who).unwrap();
    for named in [&session, &hidden] {
        let pack = asked(&format!("Why did {named} fail?"));
        assert!(pack.state.constraints.is_empty() && pack.state.anchors.is_empty(), "{named}");
        for item in &pack.items {
            assert!(!item.found_by.iter().any(|by| matches!(*by, "anchor" | "scope")), "{named}");
            assert_ne!(
                item.node.props.get("session_id").and_then(Value::as_str),
                Some(session.as_str())
            );
        }
    }
}
