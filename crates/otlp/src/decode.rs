//! OTLP/HTTP request bodies: the two encodings and their decoding.

use std::fmt;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;

use crate::OtlpError;

/// The two OTLP/HTTP body encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Binary protobuf, `Content-Type: application/x-protobuf`.
    Protobuf,
    /// OTLP/JSON (protobuf's JSON mapping with hex trace and span ids),
    /// `Content-Type: application/json`.
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` header value names: `application/x-protobuf` or
    /// `application/json`, in any letter case, parameters (`; charset=utf-8`) ignored.
    /// `None` for any other media type.
    pub fn from_content_type(content_type: &str) -> Option<Encoding> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        if media.eq_ignore_ascii_case("application/x-protobuf") {
            Some(Encoding::Protobuf)
        } else if media.eq_ignore_ascii_case("application/json") {
            Some(Encoding::Json)
        } else {
            None
        }
    }

    /// The media type OTLP/HTTP uses for this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

impl fmt::Display for Encoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Encoding::Protobuf => "protobuf",
            Encoding::Json => "JSON",
        })
    }
}

/// Decode an OTLP/HTTP traces request body.
///
/// An empty body is refused (`otlp.empty`) in both encodings, although zero bytes are a valid
/// protobuf message: no exporter sends one, and accepting it would hide a truncated upload.
/// Anything the decoder refuses is `otlp.decode`. A well-formed request may still hold spans
/// that cannot become events; [`crate::convert`] reports those one by one.
pub fn decode_request(
    body: &[u8],
    encoding: Encoding,
) -> Result<ExportTraceServiceRequest, OtlpError> {
    if body.is_empty() {
        return Err(OtlpError::EmptyBody);
    }
    match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body)
            .map_err(|e| OtlpError::Decode { encoding, reason: e.to_string() }),
        Encoding::Json => serde_json::from_slice(body)
            .map_err(|e| OtlpError::Decode { encoding, reason: e.to_string() }),
    }
}

/// The body of the answer to an accepted export request, in the request's encoding: an
/// `ExportTraceServiceResponse`, empty when every span was taken, else with `partial_success`
/// counting the rejected spans and saying why (OTLP/HTTP's partial success).
pub fn response_body(encoding: Encoding, rejected_spans: usize, error_message: &str) -> Vec<u8> {
    let partial =
        (rejected_spans > 0 || !error_message.is_empty()).then(|| ExportTracePartialSuccess {
            rejected_spans: i64::try_from(rejected_spans).unwrap_or(i64::MAX),
            error_message: error_message.to_owned(),
        });
    match encoding {
        Encoding::Protobuf => {
            ExportTraceServiceResponse { partial_success: partial }.encode_to_vec()
        }
        // By hand: OTLP/JSON writes 64-bit integers as strings.
        Encoding::Json => {
            let body = match partial {
                None => serde_json::json!({}),
                Some(p) => serde_json::json!({"partialSuccess": {
                    "rejectedSpans": p.rejected_spans.to_string(),
                    "errorMessage": p.error_message,
                }}),
            };
            body.to_string().into_bytes()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(Encoding::from_content_type("application/x-protobuf"), Some(Encoding::Protobuf));
        assert_eq!(Encoding::from_content_type("Application/JSON"), Some(Encoding::Json));
        assert_eq!(
            Encoding::from_content_type("application/json; charset=utf-8"),
            Some(Encoding::Json)
        );
        assert_eq!(
            Encoding::from_content_type(" application/x-protobuf ;q=1"),
            Some(Encoding::Protobuf)
        );
        assert_eq!(Encoding::from_content_type("text/plain"), None);
        assert_eq!(Encoding::from_content_type("application/jsonl"), None);
        assert_eq!(Encoding::from_content_type(""), None);
        for e in [Encoding::Protobuf, Encoding::Json] {
            assert_eq!(Encoding::from_content_type(e.content_type()), Some(e));
        }
    }

    #[test]
    fn empty_body_is_refused_in_both_encodings() {
        for e in [Encoding::Protobuf, Encoding::Json] {
            assert_eq!(decode_request(b"", e).map_err(|e| e.code()), Err("otlp.empty"));
        }
    }

    #[test]
    fn garbage_is_a_decode_error() {
        let err = decode_request(b"\xff\xff\xff", Encoding::Protobuf).unwrap_err();
        assert_eq!(err.code(), "otlp.decode");
        let err = decode_request(b"{\"resourceSpans\": 3}", Encoding::Json).unwrap_err();
        assert_eq!(err.code(), "otlp.decode");
        assert!(err.to_string().contains("OTLP/JSON"), "{err}");
    }

    #[test]
    fn response_bodies() {
        assert!(response_body(Encoding::Protobuf, 0, "").is_empty());
        assert_eq!(response_body(Encoding::Json, 0, ""), b"{}");
        let pb = response_body(Encoding::Protobuf, 2, "2 spans refused");
        let decoded = ExportTraceServiceResponse::decode(pb.as_slice()).unwrap();
        let p = decoded.partial_success.unwrap();
        assert_eq!((p.rejected_spans, p.error_message.as_str()), (2, "2 spans refused"));
        let js: serde_json::Value =
            serde_json::from_slice(&response_body(Encoding::Json, 2, "why")).unwrap();
        assert_eq!(
            js,
            serde_json::json!({"partialSuccess": {"rejectedSpans": "2", "errorMessage": "why"}})
        );
    }

    #[test]
    fn an_empty_json_object_is_a_request_without_spans() {
        let request = decode_request(b"{}", Encoding::Json).unwrap();
        assert!(request.resource_spans.is_empty());
    }

    /// OTLP/JSON receivers accept 64-bit integers as strings or numbers and ignore unknown fields.
    #[test]
    fn json_accepts_numbers_for_int64_and_ignores_unknown_fields() {
        let body = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{
            "traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174",
            "name":"x","kind":2,"startTimeUnixNano":1795379541517695176,
            "endTimeUnixNano":"1795379541517695999","futureField":{"a":1},
            "attributes":[{"key":"n","value":{"intValue":7}},{"key":"m","value":{"intValue":"8"}}]
        }]}]}]}"#;
        let request = decode_request(body, Encoding::Json).unwrap();
        let span = &request.resource_spans[0].scope_spans[0].spans[0];
        assert_eq!(span.start_time_unix_nano, 1_795_379_541_517_695_176);
        assert_eq!(span.end_time_unix_nano, 1_795_379_541_517_695_999);
        assert_eq!(span.attributes.len(), 2);
    }
}
