//! Fuzzes the HTTP batch-ingest envelope: `ctxgraph_server::wire::parse_body::<IngestRequest>` on
//! arbitrary bytes, then the validation of each record as the service runs it. Checks that
//! nothing panics, that a refused body carries one of the body codes, and that a parsed batch
//! round-trips: each record's text validates the same way twice (accept/reject and the code).
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{Limits, validate};
use ctxgraph_server::wire::{IngestRequest, parse_body};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let batch: IngestRequest = match parse_body(data) {
        Ok(b) => b,
        Err(e) => {
            assert!(
                matches!(
                    e.code.as_str(),
                    "request.malformed_json" | "request.invalid_body" | "request.unknown_field"
                ),
                "unexpected code {}",
                e.code
            );
            return;
        }
    };
    let limits = Limits::default();
    for record in &batch.events {
        let text = record.to_string();
        let first =
            validate(schema(), &limits, &text).map(|r| r.id().to_owned()).map_err(|e| e.code());
        let second =
            validate(schema(), &limits, &text).map(|r| r.id().to_owned()).map_err(|e| e.code());
        assert_eq!(first, second, "validation is not deterministic for {text}");
    }
});
