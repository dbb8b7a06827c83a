//! Unit tests of the span mapping, on requests built in code.

use ctxgraph_ontology::{Limits, Schema, validate_value};
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue, any_value,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, span};
use prost::Message;
use serde_json::{Value, json};

use crate::*;

const TRACE: [u8; 16] = [0xab; 16];
const TRACE_HEX: &str = "abababababababababababababababab";
const START: u64 = 1_795_379_541_507_404_349;

fn schema() -> Schema {
    Schema::core().unwrap()
}

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.into(),
        value: Some(AnyValue { value: Some(value) }),
        ..KeyValue::default()
    }
}

fn s(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.into()))
}

fn span_with(id: u8, parent: Option<u8>, attrs: Vec<KeyValue>) -> Span {
    Span {
        trace_id: TRACE.to_vec(),
        span_id: vec![0, 0, 0, 0, 0, 0, 0, id],
        parent_span_id: parent.map(|p| vec![0, 0, 0, 0, 0, 0, 0, p]).unwrap_or_default(),
        name: format!("span {id}"),
        kind: span::SpanKind::Internal as i32,
        start_time_unix_nano: START + u64::from(id) * 1000,
        end_time_unix_nano: START + u64::from(id) * 1000 + 2_500_000,
        attributes: attrs,
        ..Span::default()
    }
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![s("service.name", "billing service"), s("host.name", "h1")],
                ..Resource::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "agent.lib".into(),
                    version: "1.2".into(),
                    ..InstrumentationScope::default()
                }),
                spans,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

fn event_id(span: u8) -> String {
    format!("{TRACE_HEX}-00000000000000{span:02x}")
}

fn one(span: Span) -> Value {
    let c = convert(&request(vec![span]), &schema());
    assert!(c.refused.is_empty(), "{:?}", c.refused);
    c.into_records().into_iter().next().unwrap()
}

fn refused(span: Span) -> OtlpError {
    let c = convert(&request(vec![span]), &schema());
    assert!(c.records.is_empty(), "{:?}", c.records);
    c.refused.into_iter().next().unwrap().1
}

#[test]
fn operations_map_through_the_schema() {
    let schema = schema();
    for (op, ty) in [
        ("invoke_agent", "agent.invoke"),
        ("create_agent", "agent.create"),
        ("execute_tool", "tool.execute"),
        ("chat", "llm.chat"),
        ("text_completion", "llm.completion"),
        ("embeddings", "llm.embed"),
        ("generate_content", "llm.generate"),
    ] {
        assert_eq!(schema.event_type_for_otel(op), Some(ty));
        let r = one(span_with(1, None, vec![s("gen_ai.operation.name", op)]));
        assert_eq!(r["event_type"], ty, "{op}");
    }
    let r = one(span_with(1, None, vec![s("gen_ai.operation.name", "rerank")]));
    assert_eq!(r["event_type"], UNKNOWN_OPERATION_EVENT_TYPE);
    assert_eq!(r["payload"]["attributes"]["gen_ai.operation.name"], "rerank");
    let r = one(span_with(1, None, vec![s("http.request.method", "GET")]));
    assert_eq!(r["event_type"], NON_GENAI_EVENT_TYPE);
}

#[test]
fn envelope_fields() {
    let mut tool = span_with(
        2,
        Some(1),
        vec![
            s("gen_ai.operation.name", "execute_tool"),
            s("gen_ai.tool.name", "get weather"),
            s("gen_ai.conversation.id", "conv-1"),
            s("gen_ai.agent.name", "Weather Agent"),
            s("user.id", "u-7"),
            kv("attempt", any_value::Value::IntValue(2)),
        ],
    );
    tool.status = Some(Status { message: "upstream timed out".into(), code: 2 });
    let r = one(tool);
    assert_eq!(r["record_type"], "event");
    assert_eq!(r["event_id"], event_id(2));
    assert_eq!(r["parent_event_id"], event_id(1));
    assert_eq!(r["trace_id"], TRACE_HEX);
    assert_eq!(r["session_id"], "conv-1");
    assert_eq!(r["agent_id"], "Weather_Agent");
    assert_eq!(r["tool_name"], "get_weather");
    assert_eq!(r["user_id"], "u-7");
    assert_eq!(r["status"], "failed");
    assert_eq!(r["occurred_at"], "2026-11-22T20:32:21.507406349Z");
    let p = &r["payload"];
    assert_eq!(p["duration_ns"], 2_500_000);
    assert_eq!(p["duration_ms"], 2.5);
    assert_eq!(p["end_time"], "2026-11-22T20:32:21.509906349Z");
    assert_eq!(p["status_code"], "error");
    assert_eq!(p["error"], "upstream timed out");
    assert_eq!(p["span_kind"], "internal");
    assert_eq!(p["span_name"], "span 2");
    assert_eq!(p["span_id"], "0000000000000002");
    assert_eq!(p["parent_span_id"], "0000000000000001");
    assert_eq!(p["attributes"]["attempt"], 2);
    assert_eq!(p["attributes"]["gen_ai.tool.name"], "get weather");
    assert_eq!(p["resource"]["attributes"]["host.name"], "h1");
    assert_eq!(p["scope"], json!({"name": "agent.lib", "version": "1.2"}));
    // The record is one the engine accepts.
    validate_value(&schema(), &Limits::default(), r).unwrap();
}

#[test]
fn fallbacks_session_is_the_trace_agent_is_the_service() {
    let r = one(span_with(1, None, vec![]));
    assert_eq!(r["session_id"], TRACE_HEX);
    assert_eq!(r["agent_id"], "billing_service");
    assert_eq!(r["status"], "completed");
    assert_eq!(r["payload"]["status_code"], "unset");
    assert!(r.get("parent_event_id").is_none() && r.get("tool_name").is_none());
    let mut req = request(vec![span_with(1, None, vec![])]);
    req.resource_spans[0].resource = None;
    let c = convert(&req, &schema());
    assert_eq!(c.records[0].1["agent_id"], UNKNOWN_AGENT);
}

#[test]
fn agent_conversation_and_user_are_inherited_from_ancestors() {
    let root = span_with(
        1,
        None,
        vec![
            s("gen_ai.operation.name", "invoke_agent"),
            s("gen_ai.agent.id", "agent-7"),
            s("gen_ai.conversation.id", "conv-9"),
            s("enduser.id", "u-1"),
        ],
    );
    let chat = span_with(2, Some(1), vec![s("gen_ai.operation.name", "chat")]);
    let http = span_with(3, Some(2), vec![]);
    let other = span_with(4, Some(2), vec![s("gen_ai.agent.name", "sub agent")]);
    // Children first, as SDKs export them.
    let c = convert(&request(vec![http, other, chat, root]), &schema());
    assert!(c.refused.is_empty(), "{:?}", c.refused);
    // Ordered by start time.
    let ids: Vec<_> = c.records.iter().map(|(_, r)| r["event_id"].as_str().unwrap()).collect();
    assert_eq!(ids, [event_id(1), event_id(2), event_id(3), event_id(4)]);
    for (_, r) in &c.records[..3] {
        assert_eq!(r["agent_id"], "agent-7");
        assert_eq!(r["session_id"], "conv-9");
        assert_eq!(r["user_id"], "u-1");
    }
    assert_eq!(c.records[3].1["agent_id"], "sub_agent");
}

#[test]
fn a_parent_cycle_ends_the_walk() {
    let a = span_with(1, Some(2), vec![]);
    let b = span_with(2, Some(1), vec![]);
    let c = convert(&request(vec![a, b]), &schema());
    assert!(c.refused.is_empty());
    assert!(c.records.iter().all(|(_, r)| r["session_id"] == TRACE_HEX));
}

#[test]
fn bad_ids_and_times_are_refused_per_span() {
    type Breaker = Box<dyn Fn(&mut Span)>;
    let cases: Vec<(Breaker, &str, &str)> = vec![
        (Box::new(|s| s.trace_id.clear()), "traceId", "(absent)"),
        (
            Box::new(|s| s.trace_id = vec![0; 16]),
            "traceId",
            "00000000000000000000000000000000 (16 bytes)",
        ),
        (Box::new(|s| s.span_id = vec![1, 2, 3]), "spanId", "010203 (3 bytes)"),
        (Box::new(|s| s.span_id = vec![0; 8]), "spanId", "0000000000000000 (8 bytes)"),
        (Box::new(|s| s.parent_span_id = vec![1; 4]), "parentSpanId", "01010101 (4 bytes)"),
        (Box::new(|s| s.start_time_unix_nano = 0), "startTimeUnixNano", "0"),
        (
            Box::new(|s| s.start_time_unix_nano = u64::MAX),
            "startTimeUnixNano",
            "18446744073709551615",
        ),
        (Box::new(|s| s.end_time_unix_nano = 5), "endTimeUnixNano", "5"),
        (Box::new(|s| s.kind = 9), "kind", "9"),
        (
            Box::new(|s| s.status = Some(Status { message: String::new(), code: 3 })),
            "status.code",
            "3",
        ),
    ];
    for (break_it, field, value) in cases {
        let good = span_with(1, None, vec![]);
        let mut bad = span_with(2, None, vec![]);
        break_it(&mut bad);
        let c = convert(&request(vec![good, bad]), &schema());
        assert_eq!(c.records.len(), 1, "{field}: the good span still converts");
        assert_eq!(c.spans, 2);
        let [(2, OtlpError::Span { at, field: f, value: v, .. })] = c.refused.as_slice() else {
            panic!("{field}: {:?}", c.refused)
        };
        assert!(at.starts_with("resourceSpans[0].scopeSpans[0].spans[1]"), "{at}");
        assert_eq!((f.as_str(), v.as_str()), (field, value));
        assert_eq!(c.refused[0].1.code(), "otlp.span");
    }
}

#[test]
fn an_all_zero_parent_is_a_root() {
    let mut s = span_with(1, None, vec![]);
    s.parent_span_id = vec![0; 8];
    assert!(one(s).get("parent_event_id").is_none());
}

#[test]
fn a_duplicate_span_is_refused_the_first_kept() {
    let a = span_with(1, None, vec![s("n", "first")]);
    let b = span_with(1, None, vec![s("n", "second")]);
    let c = convert(&request(vec![a, b]), &schema());
    assert_eq!(c.records.len(), 1);
    assert_eq!(c.records[0].1["payload"]["attributes"]["n"], "first");
    let (n, e) = &c.refused[0];
    assert_eq!(*n, 2);
    assert!(e.to_string().contains("spans[1]") && e.to_string().contains("twice"), "{e}");
}

#[test]
fn a_record_the_schema_refuses_is_refused_with_its_rule() {
    // Payload nesting beyond the validator's depth limit.
    let mut v = any_value::Value::StringValue("leaf".into());
    for _ in 0..40 {
        v = any_value::Value::ArrayValue(ArrayValue { values: vec![AnyValue { value: Some(v) }] });
    }
    let e = refused(span_with(1, None, vec![kv("deep", v)]));
    let OtlpError::Span { field, rule, .. } = &e else { panic!("{e:?}") };
    assert_eq!(field, "$.payload");
    assert!(rule.starts_with("limits.payload_depth"), "{rule}");
}

#[test]
fn attribute_values_become_json() {
    use any_value::Value as V;
    let r = one(span_with(
        1,
        None,
        vec![
            kv("b", V::BoolValue(true)),
            kv("d", V::DoubleValue(0.25)),
            kv("nan", V::DoubleValue(f64::NAN)),
            kv("inf", V::DoubleValue(f64::NEG_INFINITY)),
            kv("bytes", V::BytesValue(vec![0xde, 0xad])),
            kv(
                "list",
                V::ArrayValue(ArrayValue {
                    values: vec![AnyValue { value: Some(V::IntValue(-3)) }],
                }),
            ),
            KeyValue { key: "none".into(), value: None, ..KeyValue::default() },
            s("dup", "one"),
            s("dup", "two"),
        ],
    ));
    let a = &r["payload"]["attributes"];
    assert_eq!(
        *a,
        json!({"b": true, "d": 0.25, "nan": "NaN", "inf": "-Infinity", "bytes": "dead",
               "list": [-3], "none": null, "dup": "one"})
    );
}

#[test]
fn links_keep_their_event_ids_and_mark_a_retry() {
    let failed = span_with(1, None, vec![]);
    let mut retry = span_with(2, None, vec![]);
    retry.links = vec![span::Link {
        trace_id: TRACE.to_vec(),
        span_id: vec![0, 0, 0, 0, 0, 0, 0, 1],
        attributes: vec![s(LINK_TYPE_ATTRIBUTE, "retry_of")],
        ..span::Link::default()
    }];
    retry.events = vec![span::Event {
        time_unix_nano: START + 5,
        name: "exception".into(),
        attributes: vec![s("exception.message", "boom")],
        dropped_attributes_count: 0,
    }];
    let c = convert(&request(vec![failed, retry]), &schema());
    let r = &c.records[1].1;
    assert_eq!(r["payload"]["retry_of"], event_id(1));
    assert_eq!(r["payload"]["links"][0]["event_id"], event_id(1));
    assert_eq!(r["payload"]["events"][0]["name"], "exception");
    assert_eq!(r["payload"]["events"][0]["time"], "2026-11-22T20:32:21.507404354Z");
    // An exception on a span that did not fail is history, not the span's error.
    assert!(r["payload"].get("error").is_none());
}

#[test]
fn the_exception_message_is_the_error_when_the_status_has_none() {
    let mut s = span_with(1, None, vec![]);
    s.status = Some(Status { message: String::new(), code: 2 });
    s.events = vec![span::Event {
        name: "exception".into(),
        attributes: vec![kv(
            "exception.message",
            any_value::Value::StringValue("disk full".into()),
        )],
        ..span::Event::default()
    }];
    let r = one(s);
    assert_eq!(r["payload"]["error"], "disk full");
    assert_eq!(r["payload"]["events"][0]["time"], Value::Null);
}

#[test]
fn ids_are_made_safe_and_bounded() {
    let long = "x".repeat(300);
    let r = one(span_with(
        1,
        None,
        vec![
            s("gen_ai.agent.name", "  a \t\n b  "),
            s("gen_ai.tool.name", &long),
            s("gen_ai.conversation.id", " \t "),
        ],
    ));
    assert_eq!(r["agent_id"], "a_b");
    assert_eq!(r["tool_name"].as_str().unwrap().len(), Limits::default().max_id_bytes);
    // A blank conversation id falls back to the trace.
    assert_eq!(r["session_id"], TRACE_HEX);
}

#[test]
fn both_encodings_give_the_same_records() {
    let req = request(vec![
        span_with(1, None, vec![s("gen_ai.operation.name", "invoke_agent")]),
        span_with(2, Some(1), vec![s("gen_ai.operation.name", "chat")]),
    ]);
    let pb = req.encode_to_vec();
    let js = serde_json::to_vec(&req).unwrap();
    let schema = schema();
    let from_pb = records_from_request(&pb, Encoding::Protobuf, &schema).unwrap();
    let from_js = records_from_request(&js, Encoding::Json, &schema).unwrap();
    assert_eq!(from_pb, from_js);
    assert_eq!(from_pb.len(), 2);
    // Deterministic.
    assert_eq!(records_from_request(&pb, Encoding::Protobuf, &schema).unwrap(), from_pb);
}

#[test]
fn records_from_request_is_all_or_nothing() {
    let mut bad = span_with(2, None, vec![]);
    bad.span_id.clear();
    let pb = request(vec![span_with(1, None, vec![]), bad]).encode_to_vec();
    let schema = schema();
    let e = records_from_request(&pb, Encoding::Protobuf, &schema).unwrap_err();
    assert_eq!(e.code(), "otlp.span");
    let c = convert_request(&pb, Encoding::Protobuf, &schema).unwrap();
    assert_eq!((c.records.len(), c.refused.len()), (1, 1));
}

#[test]
fn a_record_over_the_size_limit_is_refused() {
    let big = "x".repeat(Limits::default().max_record_bytes);
    let e = refused(span_with(1, None, vec![s("blob", &big)]));
    let OtlpError::Span { field, rule, .. } = &e else { panic!("{e:?}") };
    assert_eq!(field, "$");
    assert!(rule.starts_with("limits.record_bytes"), "{rule}");
}

#[test]
fn two_spans_with_the_same_bad_id_are_refused_for_the_id() {
    let mut a = span_with(1, None, vec![]);
    let mut b = span_with(2, None, vec![]);
    a.span_id.clear();
    b.span_id.clear();
    let c = convert(&request(vec![a, b]), &schema());
    assert_eq!(c.refused.len(), 2);
    for (_, e) in &c.refused {
        assert!(e.to_string().contains("must be 8 bytes"), "{e}");
    }
}
