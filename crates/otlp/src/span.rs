//! Spans → event records: the OpenTelemetry GenAI mapping of seed 000.
//!
//! The mapping is documented on [`convert`] and in the README ("OpenTelemetry traces").

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat};
use ctxgraph_ontology::{Limits, Schema, validate_value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, span, status};
use serde_json::{Map, Number, Value};

use crate::{Encoding, OtlpError, decode_request};

/// Event type of a span without `gen_ai.operation.name`: an HTTP call, a database query, any
/// other traced work, kept as an observation of what happened.
pub const NON_GENAI_EVENT_TYPE: &str = "observation.span";
/// Event type of a GenAI span whose `gen_ai.operation.name` the schema maps to no event type
/// (the operation stays in the payload's attributes).
pub const UNKNOWN_OPERATION_EVENT_TYPE: &str = "agent.operation";
/// Agent of a span when neither it, its ancestors in the request, nor its resource name one.
pub const UNKNOWN_AGENT: &str = "unknown_agent";
/// How far up the parent chain (within one request) a span looks for an inherited agent,
/// conversation or user; bounds the walk on a malicious chain or cycle.
pub const MAX_ANCESTORS: usize = 64;
/// Link attribute whose value `retry_of` marks the linked span as the attempt this span retries.
pub const LINK_TYPE_ATTRIBUTE: &str = "ctxgraph.link.type";

/// The outcome of converting one export request: the event records of the spans that convert,
/// and one [`OtlpError::Span`] for each span that does not. Spans are numbered from 1 in request
/// order (resource, scope, span), so a report can point at them.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversion {
    /// `(span number, event record)` per converted span, ordered by start time, then event id.
    /// Each record validates against the schema it was converted with (default [`Limits`]).
    pub records: Vec<(usize, Value)>,
    /// `(span number, why)` per refused span, in request order.
    pub refused: Vec<(usize, OtlpError)>,
    /// Spans in the request.
    pub spans: usize,
}

impl Conversion {
    /// The event records alone, in order.
    pub fn into_records(self) -> Vec<Value> {
        self.records.into_iter().map(|(_, r)| r).collect()
    }
}

/// Decode a body and convert every span, keeping the good ones (OTLP's partial success).
pub fn convert_request(
    body: &[u8],
    encoding: Encoding,
    schema: &Schema,
) -> Result<Conversion, OtlpError> {
    Ok(convert(&decode_request(body, encoding)?, schema))
}

/// Decode a body and convert it all or nothing: every span's event record, or the error of the
/// first span (in request order) that cannot become one. Use [`convert_request`] to keep the
/// convertible spans of a partly bad request.
pub fn records_from_request(
    body: &[u8],
    encoding: Encoding,
    schema: &Schema,
) -> Result<Vec<Value>, OtlpError> {
    let conversion = convert_request(body, encoding, schema)?;
    if let Some((_, first)) = conversion.refused.first() {
        return Err(first.clone());
    }
    Ok(conversion.into_records())
}

/// Where a span sits and what encloses it.
struct Located<'a> {
    at: String,
    span: &'a Span,
    resource: &'a ResourceSpans,
    scope: &'a ScopeSpans,
}

/// Convert every span of a decoded request into an event record:
///
/// - `event_type`: `gen_ai.operation.name` through the schema's OTel mapping (`chat` →
///   `llm.chat`, `execute_tool` → `tool.execute`, …); an unmapped operation gives
///   [`UNKNOWN_OPERATION_EVENT_TYPE`], a span without one [`NON_GENAI_EVENT_TYPE`].
/// - `event_id`: `<trace id>-<span id>` in lowercase hex (span ids are unique only within a
///   trace); `parent_event_id` the same for the parent span; `trace_id` the trace id in hex.
/// - `session_id`: `gen_ai.conversation.id`, of the span or its nearest ancestor in the
///   request; else the trace id.
/// - `agent_id`: `gen_ai.agent.name`, else `gen_ai.agent.id`, of the span or its nearest
///   ancestor; else the resource's `service.name`; else [`UNKNOWN_AGENT`].
/// - `tool_name`: `gen_ai.tool.name`; `user_id`: `user.id` (or `enduser.id`), inherited like the
///   agent. Ids keep their text with each run of whitespace turned into `_`.
/// - `status`: span status ERROR → `failed`, OK or UNSET → `completed` (the span has ended).
/// - `occurred_at`: the start time, RFC 3339 UTC with nanoseconds.
/// - `payload`: span name and kind, ids in hex, end time, `duration_ns` and `duration_ms`,
///   status code and message, `error` (the status message or the exception message of a failed
///   span), every span attribute (`attributes`), the resource's and scope's attributes
///   (`resource`, `scope`), span events and links (with the linked `event_id`), and
///   `retry_of` from a link whose [`LINK_TYPE_ATTRIBUTE`] is `retry_of`.
///
/// A span with a missing or malformed id or time, an unknown kind or status code, a duplicate
/// id, or a record the schema or the record size limit refuses is reported in
/// [`Conversion::refused`]; the others convert. The output depends only on the request and the
/// schema.
pub fn convert(request: &ExportTraceServiceRequest, schema: &Schema) -> Conversion {
    let mut located = Vec::new();
    for (r, resource) in request.resource_spans.iter().enumerate() {
        for (s, scope) in resource.scope_spans.iter().enumerate() {
            for (i, span) in scope.spans.iter().enumerate() {
                let mut at = format!("resourceSpans[{r}].scopeSpans[{s}].spans[{i}]");
                if is_valid_id(&span.span_id, SPAN_ID_BYTES) {
                    at.push_str(&format!(" (span {})", hex(&span.span_id)));
                }
                located.push(Located { at, span, resource, scope });
            }
        }
    }
    // First occurrence of each (trace id, span id): the parent chain for inheritance.
    let mut index: BTreeMap<(&[u8], &[u8]), usize> = BTreeMap::new();
    for (n, l) in located.iter().enumerate() {
        index.entry((l.span.trace_id.as_slice(), l.span.span_id.as_slice())).or_insert(n);
    }
    let limits = Limits::default();
    let converter = Converter { located: &located, index: &index, schema, limits: &limits };
    let mut records = Vec::new();
    let mut refused = Vec::new();
    for (n, l) in located.iter().enumerate() {
        let key = (l.span.trace_id.as_slice(), l.span.span_id.as_slice());
        // A span with a bad id is refused for its id, not as a repeat of another bad one.
        let ids_valid = is_valid_id(&l.span.trace_id, TRACE_ID_BYTES)
            && is_valid_id(&l.span.span_id, SPAN_ID_BYTES);
        let result = if !ids_valid || index.get(&key) == Some(&n) {
            converter.span(n)
        } else {
            Err(refuse(
                l,
                "spanId",
                hex(&l.span.span_id),
                "appears twice in the trace within this request; the first span is kept",
            ))
        };
        match result {
            Ok((start, id, record)) => records.push((start, id, n + 1, record)),
            Err(e) => refused.push((n + 1, e)),
        }
    }
    records.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    Conversion {
        records: records.into_iter().map(|(_, _, n, r)| (n, r)).collect(),
        refused,
        spans: located.len(),
    }
}

const TRACE_ID_BYTES: usize = 16;
const SPAN_ID_BYTES: usize = 8;

struct Converter<'a> {
    located: &'a [Located<'a>],
    index: &'a BTreeMap<(&'a [u8], &'a [u8]), usize>,
    schema: &'a Schema,
    limits: &'a Limits,
}

impl Converter<'_> {
    /// The span's record, with its start (ns) and event id for ordering.
    fn span(&self, n: usize) -> Result<(i64, String, Value), OtlpError> {
        let l = &self.located[n];
        let s = l.span;
        if !is_valid_id(&s.trace_id, TRACE_ID_BYTES) {
            return Err(refuse(
                l,
                "traceId",
                render_id(&s.trace_id),
                "must be 16 bytes, not all zero",
            ));
        }
        if !is_valid_id(&s.span_id, SPAN_ID_BYTES) {
            return Err(refuse(
                l,
                "spanId",
                render_id(&s.span_id),
                "must be 8 bytes, not all zero",
            ));
        }
        // An all-zero parent id is how some exporters write "no parent".
        let parent = match s.parent_span_id.as_slice() {
            [] => None,
            p if p.iter().all(|b| *b == 0) => None,
            p if p.len() == SPAN_ID_BYTES => Some(p),
            p => {
                return Err(refuse(
                    l,
                    "parentSpanId",
                    render_id(p),
                    "must be empty (a root span) or 8 bytes",
                ));
            }
        };
        let start = match i64::try_from(s.start_time_unix_nano) {
            Ok(0) => {
                return Err(refuse(
                    l,
                    "startTimeUnixNano",
                    "0".into(),
                    "must be set: nanoseconds since the Unix epoch",
                ));
            }
            Ok(ns) => ns,
            Err(_) => {
                return Err(refuse(
                    l,
                    "startTimeUnixNano",
                    s.start_time_unix_nano.to_string(),
                    "must be before 2262-04-11 (nanoseconds since the Unix epoch in 63 bits)",
                ));
            }
        };
        let end = match i64::try_from(s.end_time_unix_nano) {
            Ok(ns) if ns >= start => ns,
            _ => {
                return Err(refuse(
                    l,
                    "endTimeUnixNano",
                    s.end_time_unix_nano.to_string(),
                    "must be at or after startTimeUnixNano and before 2262-04-11",
                ));
            }
        };
        let Some(kind) = span_kind(s.kind) else {
            return Err(refuse(
                l,
                "kind",
                s.kind.to_string(),
                "must be 0 (unspecified), 1 (internal), 2 (server), 3 (client), 4 (producer) or 5 (consumer)",
            ));
        };
        let code = s.status.as_ref().map_or(0, |st| st.code);
        let Some(status_code) = status_code(code) else {
            return Err(refuse(
                l,
                "status.code",
                code.to_string(),
                "must be 0 (unset), 1 (ok) or 2 (error)",
            ));
        };

        let trace = hex(&s.trace_id);
        let event_id = format!("{trace}-{}", hex(&s.span_id));
        let attrs = &s.attributes;
        let event_type = match attr_str(attrs, "gen_ai.operation.name").map(str::trim) {
            None | Some("") => NON_GENAI_EVENT_TYPE,
            Some(op) => self.schema.event_type_for_otel(op).unwrap_or(UNKNOWN_OPERATION_EVENT_TYPE),
        };
        let session =
            self.inherited(n, &["gen_ai.conversation.id"]).unwrap_or_else(|| trace.clone());
        let agent = self
            .inherited(n, &["gen_ai.agent.name", "gen_ai.agent.id"])
            .or_else(|| {
                let resource = l.resource.resource.as_ref()?;
                id_safe(attr_str(&resource.attributes, "service.name")?, self.limits)
            })
            .unwrap_or_else(|| UNKNOWN_AGENT.to_owned());

        let mut record = Map::new();
        record.insert("record_type".into(), "event".into());
        record.insert("event_id".into(), event_id.clone().into());
        record.insert("event_type".into(), event_type.into());
        record.insert("occurred_at".into(), rfc3339(start).into());
        record.insert("session_id".into(), session.into());
        record.insert("agent_id".into(), agent.into());
        record.insert("trace_id".into(), trace.clone().into());
        if let Some(p) = parent {
            record.insert("parent_event_id".into(), format!("{trace}-{}", hex(p)).into());
        }
        if let Some(tool) =
            attr_str(attrs, "gen_ai.tool.name").and_then(|t| id_safe(t, self.limits))
        {
            record.insert("tool_name".into(), tool.into());
        }
        if let Some(user) = self.inherited(n, &["user.id", "enduser.id"]) {
            record.insert("user_id".into(), user.into());
        }
        let failed = status_code == "error";
        record.insert("status".into(), if failed { "failed" } else { "completed" }.into());
        record.insert(
            "payload".into(),
            Value::Object(payload(l, parent, start, end, kind, status_code)),
        );

        let record = Value::Object(record);
        match validate_value(self.schema, self.limits, record.clone()) {
            // The engine refuses a record larger than this; say so here, under the span's name.
            // The canonical text is the record's own, keys in order: the same length.
            Ok(valid) if valid.canonical().len() > self.limits.max_record_bytes => Err(refuse(
                l,
                "$",
                format!("{} bytes", valid.canonical().len()),
                &format!(
                    "limits.record_bytes: the event record exceeds the limit of {} bytes",
                    self.limits.max_record_bytes
                ),
            )),
            Ok(_) => Ok((start, event_id, record)),
            Err(errors) => {
                let n = errors.violations.len();
                let Some(v) = errors.violations.into_iter().next() else {
                    return Ok((start, event_id, record));
                };
                let more = if n > 1 { format!(" (and {} more)", n - 1) } else { String::new() };
                Err(refuse(
                    l,
                    &v.path,
                    v.value.unwrap_or_else(|| "(absent)".into()),
                    &format!("{}: {}{more}", v.rule, v.message),
                ))
            }
        }
    }

    /// The first of `keys` set on the span or, failing that, on its nearest ancestor in the
    /// request that has one, as an id.
    fn inherited(&self, n: usize, keys: &[&str]) -> Option<String> {
        let mut current = n;
        for _ in 0..=MAX_ANCESTORS {
            let span = self.located[current].span;
            let found = keys
                .iter()
                .find_map(|k| attr_str(&span.attributes, k).and_then(|v| id_safe(v, self.limits)));
            if found.is_some() {
                return found;
            }
            if span.parent_span_id.is_empty() {
                return None;
            }
            current =
                *self.index.get(&(span.trace_id.as_slice(), span.parent_span_id.as_slice()))?;
        }
        None
    }
}

/// The payload: everything of the span the envelope does not hold, and the envelope's sources.
fn payload(
    l: &Located<'_>,
    parent: Option<&[u8]>,
    start: i64,
    end: i64,
    kind: &str,
    status_code: &str,
) -> Map<String, Value> {
    let s = l.span;
    let mut p = Map::new();
    p.insert("span_name".into(), s.name.clone().into());
    p.insert("span_kind".into(), kind.into());
    p.insert("span_id".into(), hex(&s.span_id).into());
    if let Some(parent) = parent {
        p.insert("parent_span_id".into(), hex(parent).into());
    }
    p.insert("end_time".into(), rfc3339(end).into());
    let duration = end.saturating_sub(start);
    p.insert("duration_ns".into(), duration.into());
    p.insert("duration_ms".into(), float(duration as f64 / 1e6));
    p.insert("status_code".into(), status_code.into());
    let message = s.status.as_ref().map(|st| st.message.as_str()).unwrap_or_default();
    if !message.is_empty() {
        p.insert("status_message".into(), message.into());
    }
    if status_code == "error" {
        // The most telling text of a failure: what the status says, else what was thrown.
        let thrown = s
            .events
            .iter()
            .filter(|e| e.name == "exception")
            .find_map(|e| attr_str(&e.attributes, "exception.message"));
        let error = Some(message)
            .filter(|m| !m.is_empty())
            .or(thrown)
            .or_else(|| attr_str(&s.attributes, "error.type"));
        if let Some(error) = error {
            p.insert("error".into(), error.into());
        }
    }
    if !s.trace_state.is_empty() {
        p.insert("trace_state".into(), s.trace_state.clone().into());
    }
    if s.flags != 0 {
        p.insert("flags".into(), s.flags.into());
    }
    p.insert("attributes".into(), Value::Object(attributes(&s.attributes)));

    let mut resource = Map::new();
    if let Some(r) = &l.resource.resource {
        resource.insert("attributes".into(), Value::Object(attributes(&r.attributes)));
        if r.dropped_attributes_count != 0 {
            resource.insert("dropped_attributes_count".into(), r.dropped_attributes_count.into());
        }
    }
    if !l.resource.schema_url.is_empty() {
        resource.insert("schema_url".into(), l.resource.schema_url.clone().into());
    }
    p.insert("resource".into(), Value::Object(resource));

    let mut scope = Map::new();
    if let Some(sc) = &l.scope.scope {
        scope.insert("name".into(), sc.name.clone().into());
        if !sc.version.is_empty() {
            scope.insert("version".into(), sc.version.clone().into());
        }
        if !sc.attributes.is_empty() {
            scope.insert("attributes".into(), Value::Object(attributes(&sc.attributes)));
        }
    }
    if !l.scope.schema_url.is_empty() {
        scope.insert("schema_url".into(), l.scope.schema_url.clone().into());
    }
    p.insert("scope".into(), Value::Object(scope));

    if !s.events.is_empty() {
        let events = s.events.iter().map(|e| {
            let mut m = Map::new();
            m.insert("name".into(), e.name.clone().into());
            let time = i64::try_from(e.time_unix_nano).ok().filter(|t| *t > 0);
            m.insert("time".into(), time.map_or(Value::Null, |t| rfc3339(t).into()));
            m.insert("attributes".into(), Value::Object(attributes(&e.attributes)));
            Value::Object(m)
        });
        p.insert("events".into(), Value::Array(events.collect()));
    }
    if !s.links.is_empty() {
        let mut retry_of = None;
        let links = s
            .links
            .iter()
            .map(|link| {
                let mut m = Map::new();
                m.insert("trace_id".into(), hex(&link.trace_id).into());
                m.insert("span_id".into(), hex(&link.span_id).into());
                if is_valid_id(&link.trace_id, TRACE_ID_BYTES)
                    && is_valid_id(&link.span_id, SPAN_ID_BYTES)
                {
                    let id = format!("{}-{}", hex(&link.trace_id), hex(&link.span_id));
                    if retry_of.is_none()
                        && attr_str(&link.attributes, LINK_TYPE_ATTRIBUTE) == Some("retry_of")
                    {
                        retry_of = Some(id.clone());
                    }
                    m.insert("event_id".into(), id.into());
                }
                m.insert("attributes".into(), Value::Object(attributes(&link.attributes)));
                Value::Object(m)
            })
            .collect();
        p.insert("links".into(), Value::Array(links));
        if let Some(id) = retry_of {
            p.insert("retry_of".into(), id.into());
        }
    }
    let dropped = [
        ("attributes", s.dropped_attributes_count),
        ("events", s.dropped_events_count),
        ("links", s.dropped_links_count),
    ];
    if dropped.iter().any(|(_, n)| *n != 0) {
        let m = dropped.iter().map(|(k, n)| ((*k).to_owned(), Value::from(*n))).collect();
        p.insert("dropped".into(), Value::Object(m));
    }
    p
}

fn refuse(l: &Located<'_>, field: &str, value: String, rule: &str) -> OtlpError {
    OtlpError::Span { at: l.at.clone(), field: field.to_owned(), value, rule: rule.to_owned() }
}

fn is_valid_id(id: &[u8], len: usize) -> bool {
    id.len() == len && id.iter().any(|b| *b != 0)
}

fn render_id(id: &[u8]) -> String {
    if id.is_empty() { "(absent)".to_owned() } else { format!("{} ({} bytes)", hex(id), id.len()) }
}

/// Lowercase hex, as OTLP/JSON writes ids.
fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// RFC 3339, UTC, nanoseconds: the whole precision of OTLP timestamps.
fn rfc3339(ns: i64) -> String {
    DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(SecondsFormat::Nanos, true)
}

fn float(x: f64) -> Value {
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// The value of the first attribute named `key`, when it is a string.
fn attr_str<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a str> {
    let value = attrs.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()?;
    if let any_value::Value::StringValue(s) = value { Some(s.as_str()) } else { None }
}

/// Text usable as an envelope id: trimmed, each run of whitespace or control characters turned
/// into `_`, cut to the id length limit on a character boundary; `None` when nothing is left.
fn id_safe(raw: &str, limits: &Limits) -> Option<String> {
    let mut out = String::new();
    let mut gap = false;
    for c in raw.chars() {
        if c.is_whitespace() || c.is_control() {
            gap = true;
            continue;
        }
        let sep = usize::from(gap && !out.is_empty());
        if out.len() + sep + c.len_utf8() > limits.max_id_bytes {
            break;
        }
        if sep == 1 {
            out.push('_');
        }
        gap = false;
        out.push(c);
    }
    (!out.is_empty()).then_some(out)
}

/// Attributes as a JSON object; a repeated key keeps its first value (the OTLP data model
/// forbids repeats).
fn attributes(attrs: &[KeyValue]) -> Map<String, Value> {
    let mut m = Map::new();
    for kv in attrs {
        if !m.contains_key(&kv.key) {
            m.insert(kv.key.clone(), kv.value.as_ref().map_or(Value::Null, any_value_json));
        }
    }
    m
}

/// An attribute value as JSON: arrays and key-value lists nest, bytes become hex, non-finite
/// doubles their name (JSON has no NaN).
fn any_value_json(v: &AnyValue) -> Value {
    use any_value::Value as V;
    match &v.value {
        None => Value::Null,
        Some(V::StringValue(s)) => s.clone().into(),
        Some(V::BoolValue(b)) => (*b).into(),
        Some(V::IntValue(i)) => (*i).into(),
        Some(V::DoubleValue(d)) => Number::from_f64(*d).map_or_else(
            || {
                Value::String(
                    if d.is_nan() {
                        "NaN"
                    } else if *d > 0.0 {
                        "Infinity"
                    } else {
                        "-Infinity"
                    }
                    .into(),
                )
            },
            Value::Number,
        ),
        Some(V::ArrayValue(a)) => Value::Array(a.values.iter().map(any_value_json).collect()),
        Some(V::KvlistValue(kv)) => Value::Object(attributes(&kv.values)),
        Some(V::BytesValue(b)) => hex(b).into(),
        Some(V::StringValueStrindex(i)) => (*i).into(),
    }
}

fn span_kind(kind: i32) -> Option<&'static str> {
    use span::SpanKind as K;
    Some(match K::try_from(kind).ok()? {
        K::Unspecified => "unspecified",
        K::Internal => "internal",
        K::Server => "server",
        K::Client => "client",
        K::Producer => "producer",
        K::Consumer => "consumer",
    })
}

fn status_code(code: i32) -> Option<&'static str> {
    use status::StatusCode as C;
    Some(match C::try_from(code).ok()? {
        C::Unset => "unset",
        C::Ok => "ok",
        C::Error => "error",
    })
}
