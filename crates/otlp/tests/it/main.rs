//! Integration tests: the committed fixtures (a fake agent run traced by the OpenTelemetry
//! Python SDK, `tests/otel/fake_agent.py`) decode in both encodings into event records the
//! engine ingests, and the projected causal chain is the run's.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on the first surprise"
)]

use ctxgraph::{Direction, Engine, EngineOptions, NodeKey, OpenMode, Projection, Schema};
use ctxgraph_otlp::{Encoding, OtlpError, convert_request, decode_request, records_from_request};
use serde_json::Value;
use tempfile::TempDir;

const PB: &[u8] = include_bytes!("../fixtures/fake_agent.pb");
const JSON: &[u8] = include_bytes!("../fixtures/fake_agent.json");
const CONVERSATION: &str = "conv-weather-0001";

fn schema() -> Schema {
    Schema::core().unwrap()
}

fn engine() -> (TempDir, Engine) {
    let dir = TempDir::new().unwrap();
    let engine = Engine::open(
        &dir.path().join("t.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    (dir, engine)
}

/// Validate and ingest records; the number newly written.
fn ingest(engine: &mut Engine, records: &[Value]) -> usize {
    let valid: Vec<_> = records.iter().map(|r| engine.validate(&r.to_string()).unwrap()).collect();
    let outcomes = engine.ingest_batch(&valid, Projection::Inline, false).unwrap();
    outcomes.iter().filter(|o| matches!(o, Ok(ctxgraph::IngestOutcome::New(_)))).count()
}

fn s<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field].as_str().unwrap_or_else(|| panic!("no string {field} in {v}"))
}

#[test]
fn both_fixtures_decode_to_the_same_records() {
    let schema = schema();
    let from_pb = records_from_request(PB, Encoding::Protobuf, &schema).unwrap();
    let from_json = records_from_request(JSON, Encoding::Json, &schema).unwrap();
    assert_eq!(from_pb.len(), 5);
    assert_eq!(from_pb, from_json);
    // And the decoded messages agree, field for field.
    assert_eq!(
        decode_request(PB, Encoding::Protobuf).unwrap(),
        decode_request(JSON, Encoding::Json).unwrap()
    );
}

#[test]
fn the_fake_agent_run_maps_to_its_events() {
    let records = records_from_request(PB, Encoding::Protobuf, &schema()).unwrap();
    let types: Vec<&str> = records.iter().map(|r| s(r, "event_type")).collect();
    assert_eq!(types, ["agent.invoke", "llm.chat", "tool.execute", "tool.execute", "llm.chat"]);
    let [root, chat, failed, retry, last] = records.as_slice() else { unreachable!() };
    let trace = s(root, "trace_id");
    assert_eq!(trace.len(), 32);
    for r in &records {
        assert_eq!(s(r, "trace_id"), trace);
        assert_eq!(s(r, "session_id"), CONVERSATION, "conversation id, inherited by tool spans");
        assert_eq!(s(r, "agent_id"), "Weather_Agent", "the agent named on the root span");
        assert_eq!(s(r, "user_id"), "user-0007");
        assert!(s(r, "event_id").starts_with(&format!("{trace}-")));
        assert_eq!(r["payload"]["resource"]["attributes"]["service.name"], "fake-agent-service");
        assert_eq!(r["payload"]["scope"]["name"], "ctxgraph.fake_agent");
    }
    assert!(root.get("parent_event_id").is_none());
    for child in [chat, failed, retry, last] {
        assert_eq!(child["parent_event_id"], root["event_id"]);
    }
    assert_eq!(s(failed, "status"), "failed");
    assert_eq!(failed["payload"]["error"], "weather service timed out after 5 s");
    assert_eq!(failed["payload"]["events"][0]["name"], "exception");
    assert_eq!(s(retry, "status"), "completed");
    assert_eq!(retry["payload"]["retry_of"], failed["event_id"]);
    assert_eq!(retry["payload"]["attributes"]["attempt"], 2);
    for tool in [failed, retry] {
        assert_eq!(s(tool, "tool_name"), "get_weather");
        assert_eq!(tool["payload"]["span_kind"], "internal");
    }
    assert_eq!(chat["payload"]["span_kind"], "client");
    assert_eq!(chat["payload"]["attributes"]["gen_ai.usage.input_tokens"], 42);
    assert_eq!(chat["payload"]["attributes"]["gen_ai.response.finish_reasons"][0], "tool_calls");
    assert!(chat["payload"]["duration_ns"].as_i64().unwrap() > 0);
    // Nanosecond RFC 3339 UTC start times.
    assert_eq!(s(root, "occurred_at").len(), "2026-11-22T20:32:21.507404349Z".len());
}

#[test]
fn the_engine_projects_the_causal_chain() {
    let records = records_from_request(JSON, Encoding::Json, &schema()).unwrap();
    let (_dir, mut engine) = engine();
    assert_eq!(ingest(&mut engine, &records), 5);
    let ids: Vec<&str> = records.iter().map(|r| s(r, "event_id")).collect();
    let [root, _chat, failed, retry, _last] = ids.as_slice() else { unreachable!() };
    let snap = engine.owner_reader().unwrap();

    // The session timeline is the run, in order, every event caused by the agent span.
    let timeline = snap.timeline(CONVERSATION, 100).unwrap();
    let order: Vec<&str> = timeline.iter().map(|t| t.event.key.id.as_str()).collect();
    assert_eq!(order, ids);
    for t in &timeline[1..] {
        assert_eq!(t.caused_by, [root.to_string()]);
    }

    // The tool span's cause is the agent span; the failure and the retry are on the nodes.
    let (chain, missing) = snap.causes(retry).unwrap();
    let chain: Vec<&str> = chain.iter().map(|n| n.key.id.as_str()).collect();
    assert_eq!((chain.as_slice(), missing), ([*retry, *root].as_slice(), None));
    let failed_node = snap.event(failed).unwrap().unwrap();
    assert_eq!(failed_node.props["status"], "failed");
    assert_eq!(failed_node.props["tool_name"], "get_weather");
    let retry_node = snap.event(retry).unwrap().unwrap();
    assert_eq!(retry_node.props["status"], "completed");
    assert_eq!(retry_node.props["payload"]["retry_of"], *failed);

    // The agent and the tool are entities the events reference.
    let tool = NodeKey::new("Entity", "tool:get_weather");
    let used_by = snap.edges(&tool, Some("REFERENCES"), Direction::In).unwrap();
    let mut users: Vec<&str> = used_by.iter().map(|e| e.key.from.id.as_str()).collect();
    users.sort_unstable();
    let mut expected = vec![*failed, *retry];
    expected.sort_unstable();
    assert_eq!(users, expected);
    assert!(snap.node(&NodeKey::new("Entity", "agent:weather_agent")).unwrap().is_some());

    // Re-sending the same export is idempotent: nothing new.
    drop(snap);
    let again = records_from_request(PB, Encoding::Protobuf, &schema()).unwrap();
    assert_eq!(ingest(&mut engine, &again), 0);
}

#[test]
fn bad_bodies_are_refused_with_their_code() {
    let schema = schema();
    let truncated = &PB[..PB.len() - 7];
    let cases: [(&[u8], Encoding, &str); 6] = [
        (b"", Encoding::Protobuf, "otlp.empty"),
        (b"", Encoding::Json, "otlp.empty"),
        (truncated, Encoding::Protobuf, "otlp.decode"),
        (JSON, Encoding::Protobuf, "otlp.decode"),
        (
            br#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": 7}]}]}]}"#,
            Encoding::Json,
            "otlp.decode",
        ),
        (br#"{"resourceSpans": "no"}"#, Encoding::Json, "otlp.decode"),
    ];
    for (body, encoding, code) in cases {
        let e = records_from_request(body, encoding, &schema).unwrap_err();
        assert_eq!(e.code(), code, "{e}");
        assert_eq!(convert_request(body, encoding, &schema).unwrap_err(), e);
    }
    let e = records_from_request(&JSON[..JSON.len() / 2], Encoding::Json, &schema).unwrap_err();
    assert!(matches!(e, OtlpError::Decode { encoding: Encoding::Json, .. }), "{e}");
    assert!(e.to_string().contains("line"), "the JSON error says where: {e}");
}

#[test]
fn a_bad_span_is_named_and_the_rest_still_convert() {
    // The fixture with one span's id cut short.
    let mut tree: Value = serde_json::from_slice(JSON).unwrap();
    let spans = tree["resourceSpans"][0]["scopeSpans"][0]["spans"].as_array_mut().unwrap();
    spans[1]["spanId"] = "abcd".into();
    let body = serde_json::to_vec(&tree).unwrap();
    let schema = schema();
    let c = convert_request(&body, Encoding::Json, &schema).unwrap();
    assert_eq!((c.spans, c.records.len(), c.refused.len()), (5, 4, 1));
    let (2, OtlpError::Span { at, field, value, .. }) = &c.refused[0] else { panic!() };
    assert_eq!(at, "resourceSpans[0].scopeSpans[0].spans[1]");
    assert_eq!((field.as_str(), value.as_str()), ("spanId", "abcd (2 bytes)"));
    // All or nothing: the strict form refuses the request, and nothing is ingested.
    let e = records_from_request(&body, Encoding::Json, &schema).unwrap_err();
    assert_eq!(e, c.refused[0].1);
    assert_eq!(e.code(), "otlp.span");
}
