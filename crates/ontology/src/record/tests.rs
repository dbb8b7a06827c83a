//! Tests of record validation: every violation reported, canonical form, aliases, edges.

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn schema() -> Schema {
    Schema::core().unwrap()
}

fn check(value: Value) -> Result<ValidRecord, ValidationErrors> {
    validate(&schema(), &Limits::default(), &value.to_string())
}

fn good_event() -> Value {
    json!({
        "event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:15:02.123+01:00",
        "session_id": "s1", "agent_id": "planner", "trace_id": "t1", "tool_name": "sql_query",
        "status": "failed", "payload": {"error": "timeout"},
        "entities": [{"name": "orders-db", "entity_type": "service", "role": "target"}]
    })
}

fn rules(err: &ValidationErrors) -> Vec<(&str, &str)> {
    err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect()
}

#[test]
fn a_good_event_validates_and_old_role_names_are_stored_as_new() {
    let r = check(good_event()).unwrap();
    let RecordBody::Event(e) = r.body() else { panic!() };
    assert_eq!(e.entities[0].role, "result");
    assert_eq!(e.occurred_at_ns, 1_795_162_502_123_000_000);
    assert!(r.canonical().contains("\"role\":\"result\""));
    assert_eq!(r.kind(), RecordKind::Event);
    assert_eq!(r.id(), "e1");
}

#[test]
fn canonical_form_ignores_key_order_and_whitespace() {
    let a = check(good_event()).unwrap();
    let text = "{ \"trace_id\":\"t1\", \"agent_id\":\"planner\",\"session_id\":\"s1\",\"occurred_at\":\"2026-11-20T09:15:02.123+01:00\",\"event_type\":\"tool.execute\",\"event_id\":\"e1\",\"tool_name\":\"sql_query\",\"status\":\"failed\",\"payload\":{\"error\":\"timeout\"},\"entities\":[{\"role\":\"result\",\"entity_type\":\"service\",\"name\":\"orders-db\"}]}";
    let b = validate(&schema(), &Limits::default(), text).unwrap();
    assert_eq!(a.canonical(), b.canonical());
}

#[test]
fn every_violation_is_reported_at_once() {
    let err = check(json!({
        "event_id": "", "event_type": "ToolExecute", "occurred_at": "2026-11-20 09:15",
        "agent_id": 7, "trace_id": "t1", "status": "done", "payload": [1],
        "entities": [{"name": "x", "entity_type": "gadget", "role": "boss", "colour": "red"}],
        "extra": true
    }))
    .unwrap_err();
    let got = rules(&err);
    for want in [
        ("$.extra", "envelope.unknown_field"),
        ("$.event_id", "envelope.id_format"),
        ("$.event_type", "envelope.event_type_format"),
        ("$.occurred_at", "envelope.timestamp_format"),
        ("$.session_id", "envelope.required_field"),
        ("$.agent_id", "envelope.type"),
        ("$.status", "schema.enum"),
        ("$.payload", "envelope.type"),
        ("$.entities[0].entity_type", "schema.enum"),
        ("$.entities[0].role", "schema.enum"),
        ("$.entities[0].colour", "envelope.unknown_field"),
    ] {
        assert!(got.contains(&want), "missing {want:?} in {got:?}");
    }
    let text = err.to_string();
    assert!(text.contains("$.status: must be one of pending, running, completed, failed (enum status) (value: \"done\"; rule: schema.enum)"), "{text}");
}

#[test]
fn bad_json_and_non_objects_are_named() {
    let err = validate(&schema(), &Limits::default(), "{\"event_id\": ").unwrap_err();
    assert_eq!(err.code(), "json.syntax");
    let err = validate(&schema(), &Limits::default(), "[1,2]").unwrap_err();
    assert_eq!(err.code(), "json.type");
}

#[test]
fn limits_bound_records_entities_and_depth() {
    let limits = Limits { max_record_bytes: 64, ..Limits::default() };
    let err = validate(&schema(), &limits, &good_event().to_string()).unwrap_err();
    assert_eq!(err.code(), "limits.record_bytes");

    let mut e = good_event();
    e["entities"] = Value::Array(vec![json!({"name": "a", "entity_type": "concept"}); 300]);
    assert_eq!(rules(&check(e).unwrap_err()), [("$.entities", "limits.entities")]);

    let mut deep = json!(1);
    for _ in 0..40 {
        deep = json!({ "a": deep });
    }
    let mut e = good_event();
    e["payload"] = deep;
    assert_eq!(rules(&check(e).unwrap_err()), [("$.payload", "limits.payload_depth")]);
}

#[test]
fn unknown_but_well_formed_event_types_are_accepted() {
    let mut e = good_event();
    e["event_type"] = json!("billing.refund_issued");
    assert!(check(e).is_ok());
}

#[test]
fn an_entity_without_a_role_is_a_participant() {
    let mut e = good_event();
    e["entities"] = json!([{"name": "refund", "entity_type": "concept"}]);
    let r = check(e).unwrap();
    let RecordBody::Event(e) = r.body() else { panic!() };
    assert_eq!(e.entities[0].role, DEFAULT_ROLE);
}

#[test]
fn self_parent_is_refused() {
    let mut e = good_event();
    e["parent_event_id"] = json!("e1");
    assert_eq!(rules(&check(e).unwrap_err()), [("$.parent_event_id", "envelope.self_parent")]);
}

fn edge(edge_type: &str, from: (&str, &str), to: (&str, &str), props: Value) -> Value {
    json!({
        "record_type": "edge", "edge_id": "x1", "edge_type": edge_type,
        "from": {"label": from.0, "id": from.1}, "to": {"label": to.0, "id": to.1},
        "properties": props
    })
}

#[test]
fn explicit_edges_are_checked_against_endpoints_and_properties() {
    let ok = check(edge(
        "CAUSED_BY",
        ("Event", "e2"),
        ("Event", "e1"),
        json!({"mechanism": "inferred"}),
    ));
    assert!(ok.is_ok());

    let err = check(edge(
        "CAUSED_BY",
        ("Event", "e2"),
        ("Entity", "tool:x"),
        json!({"mechanism": "guessed"}),
    ))
    .unwrap_err();
    let got = rules(&err);
    assert!(got.contains(&("$.to.label", "schema.edge_endpoints")), "{got:?}");
    assert!(got.contains(&("$.properties.mechanism", "schema.enum")), "{got:?}");
    assert!(err.to_string().contains("CAUSED_BY may only connect Event -> Event"));

    let err = check(edge("FOLLOWS", ("Event", "e2"), ("Event", "e1"), json!({}))).unwrap_err();
    assert_eq!(err.code(), "schema.derived_edge");

    let err = check(edge("LIKES", ("Event", "e2"), ("Ghost", "g"), json!({}))).unwrap_err();
    let got = rules(&err);
    assert!(got.contains(&("$.edge_type", "schema.unknown_edge_type")), "{got:?}");
    assert!(got.contains(&("$.to.label", "schema.unknown_node_type")), "{got:?}");
}

#[test]
fn edge_role_aliases_are_canonicalised() {
    let r =
        check(edge("REFERENCES", ("Event", "e1"), ("Entity", "tool:x"), json!({"role": "tool"})))
            .unwrap();
    let RecordBody::Edge(e) = r.body() else { panic!() };
    assert_eq!(e.props["role"], json!("instrument"));
}

#[test]
fn schema_records_validate_their_source() {
    let text = json!({"record_type": "schema", "module": "ops", "source": "module = \"ops\"\n"})
        .to_string();
    assert!(validate(&schema(), &Limits::default(), &text).is_ok());
    let text = json!({"record_type": "schema", "module": "other", "source": "module = \"ops\"\n"})
        .to_string();
    assert_eq!(
        validate(&schema(), &Limits::default(), &text).unwrap_err().code(),
        "envelope.module_mismatch"
    );
}

/// An independent statement of which ids the envelope accepts.
fn id_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= 256 && s.chars().all(|c| !c.is_whitespace() && !c.is_control())
}

fn event_type_ok(s: &str) -> bool {
    let segs: Vec<&str> = s.split('.').collect();
    s.len() <= 128
        && segs.len() >= 2
        && segs.iter().all(|seg| {
            let mut cs = seg.chars();
            matches!(cs.next(), Some('a'..='z'))
                && cs.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        })
}

proptest! {
    #[test]
    fn validation_accepts_exactly_what_the_reference_predicate_accepts(
        event_id in prop_oneof!["[a-z0-9-]{1,12}", ".{0,6}"],
        event_type in prop_oneof!["[a-z]{1,6}\\.[a-z_]{1,8}", "[a-zA-Z. _]{0,10}"],
        status in prop_oneof![Just("completed".to_owned()), "[a-z]{0,9}"],
        role in prop_oneof![Just("tool".to_owned()), Just("object".to_owned()), "[a-z]{1,8}"],
    ) {
        let mut e = good_event();
        e["event_id"] = json!(event_id);
        e["event_type"] = json!(event_type);
        e["status"] = json!(status);
        e["entities"][0]["role"] = json!(role);
        let expected = id_ok(&event_id)
            && event_type_ok(&event_type)
            && ["pending", "running", "completed", "failed"].contains(&status.as_str())
            && ["agent", "instrument", "object", "result", "participant", "subject", "tool", "target"].contains(&role.as_str());
        let got = check(e);
        prop_assert_eq!(got.is_ok(), expected, "{:?}", got.err());
    }
}

fn decision(value: Value) -> Value {
    let mut d = json!({
        "record_type": "entity_decision", "decision": "merge",
        "entity_a": "tool:read_file", "entity_b": "tool:read-file",
    });
    if let (Value::Object(d), Value::Object(extra)) = (&mut d, value) {
        d.extend(extra);
    }
    d
}

#[test]
fn an_entity_decision_validates_with_an_ordered_pair_and_a_derived_id() {
    let r = check(decision(json!({"reason": "same tool", "decided_by": "alice"}))).unwrap();
    assert_eq!(r.kind(), RecordKind::EntityDecision);
    let RecordBody::EntityDecision(d) = r.body() else { panic!() };
    assert_eq!((d.entity_a.as_str(), d.entity_b.as_str()), ("tool:read-file", "tool:read_file"));
    assert_eq!(d.decision, EntityDecision::Merge);
    assert_eq!(r.id(), "merge|tool:read-file|tool:read_file");
    assert_eq!(
        r.canonical(),
        r#"{"decided_by":"alice","decision":"merge","entity_a":"tool:read-file","entity_b":"tool:read_file","reason":"same tool","record_type":"entity_decision"}"#
    );
    // The pair is unordered: the other order is the same record.
    let swapped = check(json!({
        "record_type": "entity_decision", "decision": "merge", "reason": "same tool",
        "entity_a": "tool:read-file", "entity_b": "tool:read_file", "decided_by": "alice",
    }))
    .unwrap();
    assert_eq!(swapped.canonical(), r.canonical());
    // A change of mind that names the decision it replaces is a new record.
    let again = check(decision(json!({"decision": "reject", "supersedes": 12}))).unwrap();
    assert_eq!(again.id(), "reject|tool:read-file|tool:read_file|12");
}

#[test]
fn decision_ids_escape_the_separator() {
    let a = check(decision(json!({"entity_a": "concept:a|b", "entity_b": "concept:c"}))).unwrap();
    let b = check(decision(json!({"entity_a": "concept:a", "entity_b": "concept:b|c"}))).unwrap();
    assert_ne!(a.id(), b.id());
    assert_eq!(a.id(), "merge|concept:a\\|b|concept:c");
}

#[test]
fn every_problem_with_an_entity_decision_is_reported() {
    let err = check(json!({
        "record_type": "entity_decision", "decision": "maybe", "entity_a": "gadget:x",
        "entity_b": "tool:Read_File", "decided_by": "a b", "supersedes": 0, "colour": "red",
    }))
    .unwrap_err();
    let got = rules(&err);
    for want in [
        ("$.colour", "envelope.unknown_field"),
        ("$.decision", "envelope.decision"),
        ("$.entity_a", "envelope.entity_id_format"),
        ("$.entity_b", "envelope.entity_id_format"),
        ("$.decided_by", "envelope.id_format"),
        ("$.supersedes", "envelope.type"),
    ] {
        assert!(got.contains(&want), "missing {want:?} in {got:?}");
    }
    assert!(err.to_string().contains("as in `tool:read_file`"), "{err}");

    let err = check(json!({"record_type": "entity_decision"})).unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.decision", "envelope.required_field"),
            ("$.entity_a", "envelope.required_field"),
            ("$.entity_b", "envelope.required_field"),
        ]
    );
    let err = check(decision(json!({"entity_b": "tool:read_file"}))).unwrap_err();
    assert_eq!(rules(&err), [("$.entity_b", "envelope.same_entity")]);
    let err = check(decision(json!({"entity_a": "tool:"}))).unwrap_err();
    assert_eq!(rules(&err), [("$.entity_a", "envelope.entity_id_format")]);
}

#[test]
fn edge_records_may_not_set_what_entity_resolution_sets() {
    let err = check(edge(
        "SAME_AS",
        ("Entity", "tool:a"),
        ("Entity", "tool:b"),
        json!({"confidence": 1.0, "justification": "x", "decision": "merged", "inferred": true}),
    ))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.properties.decision", "schema.reserved_property"),
            ("$.properties.inferred", "schema.reserved_property"),
        ]
    );
    let ok = check(edge(
        "RELATED_TO",
        ("Entity", "tool:a"),
        ("Entity", "tool:b"),
        json!({"confidence": 0.5, "justification": "same vendor"}),
    ));
    assert!(ok.is_ok(), "{ok:?}");
}

/// An independent statement of which entity ids a decision accepts (core entity types).
fn entity_id_ok(s: &str) -> bool {
    let Some((ty, name)) = s.split_once(':') else { return false };
    ["agent", "user", "service", "tool", "resource", "concept"].contains(&ty)
        && !name.is_empty()
        && name.len() <= 512
        && !name.chars().any(char::is_control)
        && name == name.to_lowercase()
        && name.split(' ').all(|w| !w.is_empty())
}

proptest! {
    #[test]
    fn decision_validation_accepts_exactly_what_the_reference_predicate_accepts(
        verdict in prop_oneof![Just("merge".to_owned()), Just("reject".to_owned()), "[a-z]{0,7}"],
        a in prop_oneof!["(tool|service|gadget):[a-z_ ]{0,6}", "[a-zA-Z: ]{0,8}"],
        b in prop_oneof!["(tool|concept):[a-z_ -]{0,6}", "tool:[A-Z]{1,3}"],
        decided_by in prop_oneof!["[a-z]{1,8}", ".{0,4}"],
        supersedes in prop_oneof![Just(json!(null)), (0u64..5).prop_map(|p| json!(p)), Just(json!("3"))],
    ) {
        let value = json!({
            "record_type": "entity_decision", "decision": verdict, "entity_a": a, "entity_b": b,
            "decided_by": decided_by, "supersedes": supersedes,
        });
        let expected = ["merge", "reject"].contains(&verdict.as_str())
            && entity_id_ok(&a)
            && entity_id_ok(&b)
            && a != b
            && id_ok(&decided_by)
            && (supersedes.is_null() || supersedes.as_u64().is_some_and(|p| p >= 1));
        let got = check(value);
        prop_assert_eq!(got.is_ok(), expected, "{:?}", got.err());
        if let Ok(r) = got {
            let again = validate(&schema(), &Limits::default(), r.canonical()).unwrap();
            prop_assert_eq!(again.canonical(), r.canonical());
            prop_assert_eq!(again.id(), r.id());
        }
    }
}

#[test]
fn a_record_with_a_repeated_key_is_refused_naming_the_path_and_the_rule() {
    let text = r#"{"event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:15:02Z",
        "session_id": "s1", "agent_id": "planner", "trace_id": "t1",
        "payload": {"amount": 1, "amount": 1000000}}"#;
    let err = validate(&schema(), &Limits::default(), text).unwrap_err();
    assert_eq!(rules(&err), [("$.payload.amount", "json.duplicate_key")]);
    // The envelope too: a second event_id must not silently replace the first.
    let text = r#"{"event_id": "e1", "event_id": "e2", "event_type": "tool.execute",
        "occurred_at": "2026-11-20T09:15:02Z", "session_id": "s1", "agent_id": "planner", "trace_id": "t1"}"#;
    let err = validate(&schema(), &Limits::default(), text).unwrap_err();
    assert_eq!(rules(&err), [("$.event_id", "json.duplicate_key")]);
}

#[test]
fn a_record_with_an_integer_beyond_u64_is_refused_not_turned_into_a_float() {
    let text = r#"{"event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:15:02Z",
        "session_id": "s1", "agent_id": "planner", "trace_id": "t1",
        "payload": {"ids": [18446744073709551615, 18446744073709551616]}}"#;
    let err = validate(&schema(), &Limits::default(), text).unwrap_err();
    assert_eq!(rules(&err), [("$.payload.ids[1]", "json.integer_range")]);
    assert_eq!(err.violations[0].value.as_deref(), Some("18446744073709551616"));
    // u64::MAX itself is an integer and stays one.
    let ok = text.replace(", 18446744073709551616", "");
    let r = validate(&schema(), &Limits::default(), &ok).unwrap();
    assert!(r.canonical().contains("18446744073709551615"), "{}", r.canonical());
}
