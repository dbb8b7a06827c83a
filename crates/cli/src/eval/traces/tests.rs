//! The ground truth of `eval traces` checked against the raw generated JSON, re-derived here
//! field by field without the code under test.

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph::entity_id;
use serde_json::Value;

use super::knowledge::{self, Knowledge};
use super::questions::{FAMILIES, Question, questions};
use super::trace::Trace;

const SEED: u64 = 7;

/// A 400-event trace, raw and indexed, with its knowledge plan and every case of every family.
fn fixture() -> (Vec<Value>, Knowledge, Vec<Question>) {
    let config = ctxgraph_synth::TraceConfig {
        events: 400,
        seed: SEED,
        ..ctxgraph_synth::TraceConfig::default()
    };
    let raw: Vec<Value> = ctxgraph_synth::trace(&config).collect();
    let mut trace = Trace::new().unwrap();
    for e in &raw {
        trace.push(e.clone()).unwrap();
    }
    trace.finish();
    let knowledge = knowledge::plan(&trace, SEED, 1_000).unwrap();
    let asked = questions(&trace, &knowledge, SEED, 1_000);
    (raw, knowledge, asked)
}

fn s<'a>(e: &'a Value, field: &str) -> Option<&'a str> {
    e.get(field).and_then(Value::as_str)
}

fn ev(e: &Value) -> String {
    format!("Event/{}", s(e, "event_id").unwrap())
}

fn anchor<'a>(q: &'a Question, slot: &str) -> Option<&'a str> {
    q.anchors.iter().find(|(k, _)| *k == slot).map(|(_, v)| v.as_str())
}

fn in_session<'a>(raw: &'a [Value], session: &'a str) -> impl Iterator<Item = &'a Value> {
    raw.iter().filter(move |e| s(e, "session_id") == Some(session))
}

fn keys<'a>(events: impl Iterator<Item = &'a Value>) -> Vec<String> {
    let mut out: Vec<String> = events.map(ev).collect();
    out.sort();
    out
}

/// Entity keys of an event, from its raw fields (the projection's rule: agent, tool, user, then
/// the listed entities).
fn involved(e: &Value) -> Vec<String> {
    let mut ids = BTreeSet::new();
    ids.insert(entity_id("agent", s(e, "agent_id").unwrap()));
    if let Some(t) = s(e, "tool_name") {
        ids.insert(entity_id("tool", t));
    }
    if let Some(u) = s(e, "user_id") {
        ids.insert(entity_id("user", u));
    }
    for r in e.get("entities").and_then(Value::as_array).into_iter().flatten() {
        ids.insert(entity_id(s(r, "entity_type").unwrap(), s(r, "name").unwrap()));
    }
    ids.into_iter().map(|id| format!("Entity/{id}")).collect()
}

fn references_service(e: &Value, service: &str) -> bool {
    e.get("entities").and_then(Value::as_array).into_iter().flatten().any(|r| {
        s(r, "entity_type") == Some("service")
            && entity_id("service", s(r, "name").unwrap()) == entity_id("service", service)
    })
}

#[test]
fn every_family_is_asked_in_several_phrasings_without_unfilled_slots() {
    let (_, _, asked) = fixture();
    for family in FAMILIES {
        let of: Vec<&Question> = asked.iter().filter(|q| q.family == family).collect();
        assert!(!of.is_empty(), "no {family} question");
        let phrasings: BTreeSet<usize> = of.iter().map(|q| q.phrasing).collect();
        assert!(phrasings.len() >= 3, "{family} uses phrasings {phrasings:?}");
        for q in of {
            assert!(!q.text.contains('{'), "unfilled slot in {:?}", q.text);
            assert!(!q.evidence.is_empty() && q.evidence.len() <= 8, "{q:?}");
            for (_, value) in &q.anchors {
                assert!(q.text.contains(value.as_str()), "{value} not named in {:?}", q.text);
            }
        }
    }
}

#[test]
fn event_evidence_matches_the_trace_structure() {
    let (raw, _, asked) = fixture();
    let failed = |e: &&Value| s(e, "status") == Some("failed");
    let by_id: BTreeMap<&str, &Value> =
        raw.iter().map(|e| (s(e, "event_id").unwrap(), e)).collect();
    for q in &asked {
        let session = anchor(q, "session");
        let expected = match q.family {
            "session_failure" => keys(in_session(&raw, session.unwrap()).filter(failed)),
            "request_failure" => {
                let (user, request) = (anchor(q, "user").unwrap(), anchor(q, "request").unwrap());
                let first = raw
                    .iter()
                    .find(|e| {
                        s(e, "event_type") == Some("observation.input")
                            && s(e, "user_id") == Some(user)
                            && e["payload"]["text"].as_str() == Some(request)
                    })
                    .unwrap();
                keys(in_session(&raw, s(first, "session_id").unwrap()).filter(failed))
            }
            "user_request" => {
                let first = in_session(&raw, session.unwrap())
                    .find(|e| s(e, "event_type") == Some("observation.input"))
                    .unwrap();
                if let Some(user) = anchor(q, "user") {
                    assert_eq!(s(first, "user_id"), Some(user));
                }
                vec![ev(first)]
            }
            "after_failure" => {
                let id = anchor(q, "event").unwrap();
                let e = by_id[id];
                assert_eq!(s(e, "status"), Some("failed"));
                if let Some(tool) = anchor(q, "tool") {
                    assert_eq!(s(e, "tool_name"), Some(tool));
                }
                keys(raw.iter().filter(|c| s(c, "parent_event_id") == Some(id)))
            }
            "who_involved" => involved(by_id[anchor(q, "event").unwrap()]),
            "outage" => {
                let service = anchor(q, "service").unwrap();
                keys(
                    in_session(&raw, session.unwrap())
                        .filter(failed)
                        .filter(|e| references_service(e, service)),
                )
            }
            "when_did" => {
                let mut hits =
                    in_session(&raw, session.unwrap()).filter(failed).filter(|e| {
                        match (anchor(q, "agent"), anchor(q, "tool")) {
                            (Some(agent), None) => s(e, "agent_id") == Some(agent),
                            (None, Some(tool)) => s(e, "tool_name") == Some(tool),
                            other => panic!("when_did anchors {other:?}"),
                        }
                    });
                let first = hits.next().unwrap();
                if anchor(q, "tool").is_some() {
                    assert!(hits.next().is_none(), "{q:?} has more than one answer");
                }
                vec![ev(first)]
            }
            "agent_activity" => {
                let agent = anchor(q, "agent").unwrap();
                keys(in_session(&raw, session.unwrap()).filter(|e| s(e, "agent_id") == Some(agent)))
            }
            _ => continue,
        };
        assert_eq!(q.evidence, expected, "{q:?}");
    }
}

#[test]
fn decision_and_fact_evidence_names_what_was_written() {
    let (raw, knowledge, asked) = fixture();
    let by_id: BTreeMap<&str, &Value> =
        raw.iter().map(|e| (s(e, "event_id").unwrap(), e)).collect();
    let memories: BTreeMap<String, &knowledge::Decision> =
        knowledge.decisions.iter().map(|d| (format!("Memory/{}", d.record.id()), d)).collect();
    for q in asked.iter().filter(|q| q.family == "decision") {
        let [memory] = q.evidence.as_slice() else { panic!("{q:?}") };
        let d = memories[memory];
        let failed = by_id[d.failed.as_str()];
        assert_eq!(s(failed, "status"), Some("failed"));
        assert_eq!(s(failed, "session_id"), anchor(q, "session"));
        assert_eq!(s(failed, "tool_name"), Some(d.tool.as_str()));
        assert!(references_service(failed, anchor(q, "service").unwrap()));
        let ctxgraph::RecordBody::Memory(m) = d.record.body() else { panic!("not a memory") };
        assert_eq!(m.session_id.as_deref(), anchor(q, "session"));
        assert_eq!(m.kind, "decision");
    }
    let facts: BTreeMap<String, &knowledge::Claim> =
        knowledge.facts.values().flatten().map(|c| (format!("Fact/{}", c.fact_id), c)).collect();
    for q in asked.iter().filter(|q| q.family == "fact") {
        let subject = anchor(q, "subject").unwrap();
        for key in &q.evidence {
            let c = facts[key];
            assert_eq!(c.subject.name, subject);
            assert_eq!(c.fact_id, format!("{}|{}|{}", c.subject.id, c.predicate, c.object.id));
            // The event the claim was read from references both ends.
            let source = by_id[c.source.trim_start_matches("trace event ")];
            let refs = involved(source);
            assert!(refs.contains(&format!("Entity/{}", c.subject.id)), "{c:?}");
            assert!(refs.contains(&format!("Entity/{}", c.object.id)), "{c:?}");
        }
        // Every fact written about the subject is asked for.
        let all = facts.values().filter(|c| c.subject.name == subject).count();
        assert_eq!(q.evidence.len(), all, "{q:?}");
    }
}

#[test]
fn the_seed_decides_what_is_asked() {
    let (_, _, asked) = fixture();
    let config = ctxgraph_synth::TraceConfig {
        events: 400,
        seed: SEED,
        ..ctxgraph_synth::TraceConfig::default()
    };
    let mut trace = Trace::new().unwrap();
    for e in ctxgraph_synth::trace(&config) {
        trace.push(e).unwrap();
    }
    trace.finish();
    let knowledge = knowledge::plan(&trace, SEED, 1_000).unwrap();
    assert_eq!(questions(&trace, &knowledge, SEED, 1_000), asked);
    let few = questions(&trace, &knowledge, SEED + 1, 2);
    assert_eq!(few.len(), 2 * FAMILIES.len());
    assert_ne!(few, questions(&trace, &knowledge, SEED, 2));
}
