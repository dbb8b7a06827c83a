//! Why an OTLP request or one of its spans was refused.

use crate::Encoding;

/// A refused OTLP export request, or one refused span of it.
///
/// [`OtlpError::code`] is stable; the message names the field, the value and the rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// The body has no bytes at all.
    #[error(
        "the request body is empty: an OTLP export request is an ExportTraceServiceRequest message"
    )]
    EmptyBody,
    /// The body is not an `ExportTraceServiceRequest` in the stated encoding.
    #[error("the body is not an OTLP/{encoding} ExportTraceServiceRequest: {reason}")]
    Decode {
        /// The encoding the body was read as.
        encoding: Encoding,
        /// What the decoder found wrong, with its position when it knows it.
        reason: String,
    },
    /// One span cannot become an event record; the other spans of the request are unaffected.
    #[error("{at}: `{field}` = {value}: {rule}")]
    Span {
        /// Where the span sits in the request, e.g. `resourceSpans[0].scopeSpans[1].spans[3]`,
        /// with its span id when it has a readable one.
        at: String,
        /// The offending field of the span, or of the event record built from it (`$.…`).
        field: String,
        /// The offending value, rendered (hex for ids); `(absent)` when missing.
        value: String,
        /// What the field must be.
        rule: String,
    },
}

impl OtlpError {
    /// Stable machine code: `otlp.empty`, `otlp.decode` or `otlp.span`.
    pub fn code(&self) -> &'static str {
        match self {
            OtlpError::EmptyBody => "otlp.empty",
            OtlpError::Decode { .. } => "otlp.decode",
            OtlpError::Span { .. } => "otlp.span",
        }
    }
}
