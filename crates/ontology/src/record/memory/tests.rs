//! Tests of decision-memory record validation: shapes, defaults, derived ids and every refusal.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::record::{RecordBody, RecordKind, ValidRecord, validate};
use crate::{Limits, Schema, ValidationErrors};

fn check(value: Value) -> Result<ValidRecord, ValidationErrors> {
    validate(&Schema::core().unwrap(), &Limits::default(), &value.to_string())
}

fn rules(err: &ValidationErrors) -> Vec<(&str, &str)> {
    err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect()
}

fn decision() -> Value {
    json!({"record_type": "memory", "memory_id": "memory_1", "kind": "decision",
        "topic": "auth_strategy", "content": "Use JWT", "reasoning": "Stateless, scalable",
        "session_id": "s1", "created_at": "2026-11-20T09:00:00Z"})
}

#[test]
fn a_decision_validates_with_defaults_and_canonical_form() {
    let r = check(decision()).unwrap();
    assert_eq!(r.kind(), RecordKind::Memory);
    assert_eq!(r.id(), "memory_1");
    let RecordBody::Memory(m) = r.body() else { panic!("not a memory") };
    assert_eq!((m.confidence, m.created_by.as_str()), (1.0, "user"));
    assert_eq!(m.topic.as_deref(), Some("auth_strategy"));
    // The canonical form validates to the same record.
    assert_eq!(check(serde_json::from_str(r.canonical()).unwrap()).unwrap(), r);
}

#[test]
fn kinds_and_outcomes_are_accepted_in_any_case_and_stored_lower_case() {
    let mut d = decision();
    d["kind"] = json!("DECISION");
    let RecordBody::Memory(m) = check(d).unwrap().body().clone() else { panic!() };
    assert_eq!(m.kind, "decision");
    let o = check(json!({"record_type": "memory_outcome", "memory_id": "memory_1",
        "outcome": "FAILED", "reason": "Performance issues with token refresh",
        "at": "2026-11-21T10:00:00Z"}))
    .unwrap();
    let RecordBody::MemoryOutcome(o) = o.body() else { panic!() };
    assert_eq!(o.outcome, "failed");
    assert!(o.outcome_id.starts_with("out-"));
}

#[test]
fn ids_are_derived_from_content_when_not_given() {
    let mut d = decision();
    d.as_object_mut().unwrap().remove("memory_id");
    let a = check(d.clone()).unwrap();
    let b = check(d.clone()).unwrap();
    assert_eq!(a.id(), b.id(), "the same write is the same record");
    assert!(a.id().starts_with("mem-"));
    d["content"] = json!("Use sessions");
    assert_ne!(check(d).unwrap().id(), a.id());
}

#[test]
fn bad_memories_are_refused_with_every_violation() {
    let err = check(json!({"record_type": "memory", "kind": "plan", "content": " ",
        "confidence": 1.5, "created_by": "robot", "created_at": "yesterday", "extra": 1}))
    .unwrap_err();
    let r = rules(&err);
    for expected in [
        ("$.extra", "envelope.unknown_field"),
        ("$.kind", "schema.enum"),
        ("$.content", "memory.blank"),
        ("$.confidence", "memory.confidence_range"),
        ("$.created_by", "schema.enum"),
        ("$.created_at", "envelope.timestamp_format"),
    ] {
        assert!(r.contains(&expected), "{expected:?} missing from {r:?}");
    }
    // The value shown is what was written.
    let kind = err.violations.iter().find(|v| v.path == "$.kind").unwrap();
    assert_eq!(kind.value.as_deref(), Some("\"plan\""));
}

#[test]
fn a_decision_needs_a_topic_and_nothing_links_to_itself() {
    let mut d = decision();
    d.as_object_mut().unwrap().remove("topic");
    d["supersedes"] = json!("memory_1");
    let err = check(d).unwrap_err();
    let r = rules(&err).into_iter().map(|(_, r)| r).collect::<Vec<_>>();
    assert_eq!(r, ["memory.decision_topic", "memory.self_link"]);
    let cp = json!({"record_type": "memory", "kind": "checkpoint", "content": "Implemented JWT",
        "implements": ["memory_1", "memory_1"], "created_at": "2026-11-20T09:30:00Z"});
    let RecordBody::Memory(m) = check(cp).unwrap().body().clone() else { panic!() };
    assert_eq!(m.implements, ["memory_1"], "duplicates collapse");
}

#[test]
fn links_and_votes_validate_their_enums() {
    let ok = check(json!({"record_type": "memory_link", "from": "a", "to": "b",
        "link_type": "relates_to", "confidence": 0.8, "created_by": "llm",
        "created_at": "2026-11-20T09:00:00Z", "metadata": {"why": "same incident"}}))
    .unwrap();
    assert_eq!(ok.kind(), RecordKind::MemoryLink);
    let err = check(json!({"record_type": "memory_link", "from": "a", "to": "a",
        "link_type": "causes", "confidence": -0.1, "created_at": "2026-11-20T09:00:00Z"}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.link_type", "schema.enum"),
            ("$.confidence", "memory.confidence_range"),
            ("$.to", "memory.self_link")
        ]
    );
    let vote = check(json!({"record_type": "memory_link_vote", "from": "a", "to": "b",
        "link_type": "temporal", "vote": "downvote", "created_at": "2026-11-20T09:00:00Z"}))
    .unwrap();
    assert_eq!(vote.kind(), RecordKind::MemoryLinkVote);
    let err = check(json!({"record_type": "memory_link_vote", "from": "a", "to": "b",
        "link_type": "temporal", "vote": "upvote", "created_at": "2026-11-20T09:00:00Z"}))
    .unwrap_err();
    assert_eq!(rules(&err), [("$.vote", "schema.enum")]);
}

proptest! {
    /// Validation accepts a confidence exactly when it lies in [0, 1].
    #[test]
    fn confidence_is_accepted_iff_in_unit_interval(c in -2.0f64..3.0) {
        let mut d = decision();
        d["confidence"] = json!(c);
        prop_assert_eq!(check(d).is_ok(), (0.0..=1.0).contains(&c));
    }

    /// Outcomes: the three values in any case are accepted, anything else is refused.
    #[test]
    fn outcome_is_accepted_iff_known(word in "[a-zA-Z]{1,9}") {
        let o = json!({"record_type": "memory_outcome", "memory_id": "m", "outcome": word,
            "reason": "r", "at": "2026-11-21T10:00:00Z"});
        let known = ["success", "failed", "partial", "failure", "fail", "succeeded", "successful"]
            .contains(&word.to_lowercase().as_str());
        prop_assert_eq!(check(o).is_ok(), known);
    }
}

#[test]
fn an_outcome_may_come_without_a_reason_but_not_with_a_blank_one() {
    let o = check(json!({"record_type": "memory_outcome", "memory_id": "memory_1",
        "outcome": "success", "at": "2026-11-21T10:00:00Z"}))
    .unwrap();
    let RecordBody::MemoryOutcome(m) = o.body() else { panic!() };
    assert_eq!(m.reason, "");
    // The canonical form leaves the absent reason out and validates to the same record.
    assert!(!o.canonical().contains("reason"), "{}", o.canonical());
    assert_eq!(check(serde_json::from_str(o.canonical()).unwrap()).unwrap(), o);
    let err = check(json!({"record_type": "memory_outcome", "memory_id": "memory_1",
        "outcome": "success", "reason": " ", "at": "2026-11-21T10:00:00Z"}))
    .unwrap_err();
    assert_eq!(rules(&err), [("$.reason", "memory.blank")]);
}

#[test]
fn a_memory_may_opt_out_of_automatic_links() {
    let mut d = decision();
    let RecordBody::Memory(m) = check(d.clone()).unwrap().body().clone() else { panic!() };
    assert!(m.auto_link, "linked by default");
    let linked_id = check(d.clone()).unwrap().id().to_owned();
    d.as_object_mut().unwrap().remove("memory_id");
    let default_id = check(d.clone()).unwrap().id().to_owned();
    d["auto_link"] = json!(false);
    let r = check(d.clone()).unwrap();
    let RecordBody::Memory(m) = r.body() else { panic!() };
    assert!(!m.auto_link);
    assert_ne!(r.id(), default_id, "the opt-out is part of the record");
    assert_eq!(check(serde_json::from_str(r.canonical()).unwrap()).unwrap(), r);
    assert_eq!(linked_id, "memory_1");
    d["auto_link"] = json!("no");
    assert_eq!(rules(&check(d).unwrap_err()), [("$.auto_link", "envelope.type")]);
}
