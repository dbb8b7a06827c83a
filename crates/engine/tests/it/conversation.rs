//! Conversation import: chat messages and LoCoMo turns as events, sessions, speakers and
//! extracted entities; idempotent re-import; questions and annotations never stored.
//!
//! `tests/fixtures/locomo-mini.json` is hand-made in LoCoMo's format (no LoCoMo data);
//! `tests/fixtures/conversation.jsonl` is a hand-made chat in the message format.

use ctxgraph::{
    Direction, Engine, ImportBatch, IngestOptions, IngestReport, Limits, NodeKey, Reader,
    locomo_conversations, parse_messages,
};
use serde_json::Value;

use super::engine;

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    std::fs::read_to_string(path).unwrap()
}

fn import(engine: &mut Engine, batch: &ImportBatch) -> IngestReport {
    engine.import(batch, &IngestOptions::default(), &mut |_| {}).unwrap()
}

fn locomo_batch() -> (ImportBatch, Vec<ctxgraph::LocomoConversation>) {
    let conversations = locomo_conversations(&fixture("locomo-mini.json")).unwrap();
    let batch = ImportBatch::from_records(conversations.iter().flat_map(|c| c.records.clone()));
    (batch, conversations)
}

/// The event ids of a session, in its timeline order.
fn timeline(snap: &Reader<'_>, session: &str) -> Vec<String> {
    snap.timeline(session, 100).unwrap().into_iter().map(|t| t.event.key.id).collect()
}

/// Ids of the entities an event references, with the role.
fn references(snap: &Reader<'_>, event: &str) -> Vec<String> {
    let mut out: Vec<String> = snap
        .edges(&NodeKey::new("Event", event), Some("REFERENCES"), Direction::Out)
        .unwrap()
        .into_iter()
        .map(|e| format!("{} ({})", e.key.to.id, e.props["role"].as_str().unwrap()))
        .collect();
    out.sort();
    out
}

/// Every string value in a JSON tree.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[test]
fn locomo_turns_become_events_in_session_order() {
    let (_dir, mut engine) = engine();
    let (batch, conversations) = locomo_batch();
    let report = import(&mut engine, &batch);
    assert_eq!(report.accepted, 12);
    assert!(report.rejections.is_empty(), "{:?}", report.rejections);

    let snap = engine.owner_reader().unwrap();
    assert_eq!(
        timeline(&snap, "mini-1:S1"),
        ["mini-1:D1:1", "mini-1:D1:2", "mini-1:D1:3", "mini-1:D1:4"]
    );
    assert_eq!(timeline(&snap, "mini-1:S3"), ["mini-1:D3:1", "mini-1:D3:2", "mini-1:D3:3"]);
    // FOLLOWS points from each turn to the one before it, one second earlier.
    let follows =
        snap.edges(&NodeKey::new("Event", "mini-1:D1:2"), Some("FOLLOWS"), Direction::Out).unwrap();
    assert_eq!(follows.len(), 1);
    assert_eq!(follows[0].key.to.id, "mini-1:D1:1");
    assert_eq!(follows[0].props["delta_ms"], 1000);
    // Sessions are separate: the first turn of session 2 follows nothing.
    let first =
        snap.edges(&NodeKey::new("Event", "mini-1:D2:1"), Some("FOLLOWS"), Direction::Out).unwrap();
    assert!(first.is_empty());

    let event = snap.event("mini-1:D1:3").unwrap().unwrap();
    assert_eq!(event.props["event_type"], "observation.message");
    assert_eq!(event.props["occurred_at"], "2024-03-03T09:05:02Z");
    assert_eq!(
        event.props["payload"]["image_caption"],
        "a photo of a grey dog lying on a blue sofa"
    );
    assert_eq!(event.props["payload"]["dia_id"], "D1:3");

    // Speakers are agent entities; a speaker named in a turn is the same entity.
    assert_eq!(
        references(&snap, "mini-1:D1:1"),
        ["agent:ada (agent)", "agent:ben (object)", "concept:pickle (object)"]
    );
    assert_eq!(
        references(&snap, "mini-1:D2:1"),
        ["agent:ada (object)", "agent:ben (agent)", "concept:harbour marathon (object)"]
    );
    let ada = snap.node(&NodeKey::new("Entity", "agent:ada")).unwrap().unwrap();
    assert_eq!(ada.props["name"], "Ada");
    assert_eq!(ada.props["mention_count"], 8);
    let nasa = snap.node(&NodeKey::new("Entity", "concept:nasa")).unwrap().unwrap();
    assert_eq!(nasa.props["mention_count"], 2);
    assert!(snap.node(&NodeKey::new("Entity", "concept:sunday")).unwrap().is_none());

    // Questions stay apart, evidence normalised like the reference evaluator.
    let evidence: Vec<(Vec<String>, u8)> =
        conversations[0].questions.iter().map(|q| (q.evidence.clone(), q.category)).collect();
    let ids = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert_eq!(
        evidence,
        [
            (ids(&["D1:1"]), 4),
            (ids(&["D2:1"]), 2),
            (ids(&["D1:4", "D2:1"]), 1),
            (ids(&["D3:3"]), 4),
            (ids(&[]), 5),
        ]
    );
}

#[test]
fn locomo_questions_answers_and_annotations_never_reach_the_store() {
    let (_dir, mut engine) = engine();
    let (batch, _) = locomo_batch();
    import(&mut engine, &batch);
    engine.enrich(&mut |_, _| {}).unwrap();

    // Everything outside `conversation` (questions, answers, summaries, observations).
    let raw: Value = serde_json::from_str(&fixture("locomo-mini.json")).unwrap();
    let mut secret = Vec::new();
    for sample in raw.as_array().unwrap() {
        for (k, v) in sample.as_object().unwrap() {
            if k != "conversation" && k != "sample_id" {
                strings(v, &mut secret);
            }
        }
    }
    // Only the long strings: evidence ids and dates are also turn ids and session dates.
    secret.retain(|s| s.len() > 12);
    assert!(secret.len() >= 10, "{secret:?}");
    let snap = engine.owner_reader().unwrap();
    let log: String = snap.log(1, 1000).unwrap().into_iter().map(|e| e.body).collect();
    for s in &secret {
        assert!(!log.contains(s.as_str()), "`{s}` reached the log");
    }
    // Nor the index: words only the questions use find nothing.
    assert!(snap.search("colour", 10).unwrap().is_empty());
    assert!(snap.search("rescue", 10).unwrap().is_empty());
    // A word of a turn finds it.
    let hits = snap.search("greyhound", 10).unwrap();
    assert_eq!(hits[0].0.key.id, "mini-1:D1:1");
}

#[test]
fn importing_again_finds_every_record_stored() {
    let (_dir, mut engine) = engine();
    let (batch, _) = locomo_batch();
    import(&mut engine, &batch);
    let again = import(&mut engine, &batch);
    assert_eq!((again.accepted, again.progress.duplicates, again.progress.rejected), (0, 12, 0));
    let messages = parse_messages(fixture("conversation.jsonl").as_bytes(), &Limits::default());
    assert_eq!(import(&mut engine, &messages).accepted, 5);
    let again = import(&mut engine, &messages);
    assert_eq!((again.accepted, again.progress.duplicates, again.progress.rejected), (0, 5, 0));
}

#[test]
fn chat_messages_become_events_with_replies_and_speakers() {
    let (_dir, mut engine) = engine();
    let batch = parse_messages(fixture("conversation.jsonl").as_bytes(), &Limits::default());
    let lines: Vec<u64> = batch.records.iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, [1, 2, 3, 5, 6]);
    let report = import(&mut engine, &batch);
    assert_eq!(report.accepted, 5);

    let snap = engine.owner_reader().unwrap();
    assert_eq!(timeline(&snap, "planning-1"), ["planning-1:1", "planning-1:2", "planning-1:3"]);
    assert_eq!(timeline(&snap, "planning-2"), ["bob-dawn", "planning-2:2"]);
    let caused = snap
        .edges(&NodeKey::new("Event", "planning-2:2"), Some("CAUSED_BY"), Direction::Out)
        .unwrap();
    assert_eq!(caused[0].key.to.id, "bob-dawn");
    let e = snap.event("bob-dawn").unwrap().unwrap();
    assert_eq!(e.props["trace_id"], "trip");
    assert_eq!(e.props["payload"]["channel"], "sms");
    assert_eq!(
        references(&snap, "planning-1:1"),
        ["agent:alice (agent)", "agent:bob (object)", "concept:kyoto (object)"]
    );
    assert_eq!(
        references(&snap, "planning-2:2"),
        ["agent:alice (agent)", "agent:bob (object)", "concept:jr pass (object)"]
    );
    assert!(snap.node(&NodeKey::new("Entity", "concept:april")).unwrap().is_none());
}

#[test]
fn refused_messages_keep_their_line_numbers_among_refused_records() {
    let (_dir, mut engine) = engine();
    let good = |id: &str, text: &str| {
        format!(
            r#"{{"speaker":"a","text":"{text}","timestamp":"2024-01-10T09:00:00Z","session":"s","id":"{id}"}}"#
        )
    };
    // Line 2 is a bad message; line 4 conflicts with line 1 (same id, other text) in the log.
    let input =
        [good("m1", "one"), "{\"speaker\":\"a\"}".into(), good("m2", "two"), good("m1", "uno")]
            .join("\n");
    let batch = parse_messages(input.as_bytes(), &Limits::default());
    let report = import(&mut engine, &batch);
    assert_eq!(report.accepted, 2);
    let refused: Vec<(u64, &str)> = report.rejections.iter().map(|r| (r.line, r.code)).collect();
    assert_eq!(refused, [(2, "message.required_field"), (4, "log.conflict")]);
    assert_eq!((report.progress.lines, report.progress.rejected), (4, 2));

    // Strict: nothing from the first refused line on.
    let (_dir, mut engine) = super::engine();
    let strict = IngestOptions { strict: true, ..IngestOptions::default() };
    let report = engine.import(&batch, &strict, &mut |_| {}).unwrap();
    assert_eq!(report.accepted, 1);
    assert!(report.stopped);
    let refused: Vec<u64> = report.rejections.iter().map(|r| r.line).collect();
    assert_eq!(refused, [2]);
}
