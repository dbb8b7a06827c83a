//! Fuzzes `ctxgraph_ontology::validate` (built-in schema: core and knowledge modules, default limits) on arbitrary text; checks it never panics and that the canonical form of a valid record is a fixed point (re-validates to the same canonical string, kind, id and body).
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{Limits, ValidRecord, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Non-UTF-8 bytes become U+FFFD, so every input reaches the validator.
    let text = String::from_utf8_lossy(data);
    let schema = schema();
    let limits = Limits::default();

    let record: ValidRecord = match validate(schema, &limits, &text) {
        Ok(r) => r,
        Err(_) => return,
    };

    // Round trip: the canonical form must validate again...
    let again = match validate(schema, &limits, record.canonical()) {
        Ok(r) => r,
        Err(e) => panic!(
            "canonical form of a valid record does not validate\n input: {text}\n canonical: {}\n errors: {e}",
            record.canonical()
        ),
    };
    // ...and be a fixed point of canonicalisation.
    assert_eq!(
        again.canonical(),
        record.canonical(),
        "canonical form is not a fixed point (input: {text})"
    );
    assert_eq!(again.kind(), record.kind(), "kind changed on round trip (input: {text})");
    assert_eq!(again.id(), record.id(), "id changed on round trip (input: {text})");
    assert_eq!(again.body(), record.body(), "body changed on round trip (input: {text})");
});
