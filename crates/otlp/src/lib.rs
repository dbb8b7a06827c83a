//! OpenTelemetry traces in: OTLP/HTTP export requests become ctxgraph event records.
//!
//! Agent frameworks already emit OpenTelemetry GenAI spans. This crate decodes an
//! `ExportTraceServiceRequest` body ([`decode_request`], protobuf or OTLP/JSON, see
//! [`Encoding`]) and maps each span to one event record envelope ([`convert`]) that the engine's
//! `validate` and `ingest_batch` accept: `gen_ai.operation.name` through the schema's OTel
//! mapping, span and parent span to event and parent event ids, conversation to session, agent,
//! tool, status, timing, and every other attribute in the payload.
//!
//! The crate is pure: no I/O, no async, no clock, no engine. The HTTP endpoint
//! (`POST /v1/traces`) and `ctxgraph import otlp` both call [`records_from_request`] or
//! [`convert_request`]; [`response_body`] writes the endpoint's answer (with OTLP's partial
//! success when spans were refused).
//!
//! ```
//! use ctxgraph_ontology::Schema;
//! use ctxgraph_otlp::{Encoding, records_from_request};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let body = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
//!   "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
//!   "name":"execute_tool get_weather","kind":1,
//!   "startTimeUnixNano":"1795379541517695176","endTimeUnixNano":"1795379541522695176",
//!   "attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},
//!                 {"key":"gen_ai.tool.name","value":{"stringValue":"get_weather"}}],
//!   "status":{"code":2,"message":"timed out"}}]}]}]}"#;
//! let records = records_from_request(body, Encoding::Json, &Schema::core()?)?;
//! assert_eq!(records[0]["event_type"], "tool.execute");
//! assert_eq!(records[0]["event_id"], "5b8efff798038103d269b633813fc60c-eee19b7ec3c1b174");
//! assert_eq!(records[0]["status"], "failed");
//! assert_eq!(records[0]["occurred_at"], "2026-11-22T20:32:21.517695176Z");
//! # Ok(())
//! # }
//! ```

mod decode;
mod error;
mod span;

pub use decode::{Encoding, decode_request, response_body};
pub use error::OtlpError;
/// The decoded OTLP request type, so callers need no OpenTelemetry dependency of their own.
pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
pub use span::{
    Conversion, LINK_TYPE_ATTRIBUTE, MAX_ANCESTORS, NON_GENAI_EVENT_TYPE, UNKNOWN_AGENT,
    UNKNOWN_OPERATION_EVENT_TYPE, convert, convert_request, records_from_request,
};

#[cfg(test)]
mod tests;
