//! Fuzzes `ctxgraph_otlp` on arbitrary bytes: the first byte picks the encoding (even: protobuf,
//! odd: OTLP/JSON), the rest is the body. Checks it never panics; decode errors are `otlp.empty`
//! or `otlp.decode`; conversion is deterministic, gives every span exactly one outcome (a record
//! or an `otlp.span` refusal, numbered from 1 in request order), every record validates against
//! the core schema with a unique event id, and `records_from_request` agrees with it (all or
//! nothing).
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{Limits, validate_value};
use ctxgraph_otlp::{Encoding, convert_request, records_from_request};
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else { return };
    let encoding = if first % 2 == 0 { Encoding::Protobuf } else { Encoding::Json };
    let conversion = match convert_request(body, encoding, schema()) {
        Ok(c) => c,
        Err(e) => {
            assert!(matches!(e.code(), "otlp.empty" | "otlp.decode"), "request error {e:?}");
            assert_eq!(records_from_request(body, encoding, schema()), Err(e));
            return;
        }
    };
    assert_eq!(
        convert_request(body, encoding, schema()).as_ref(),
        Ok(&conversion),
        "not deterministic"
    );

    // One outcome per span, numbered 1..=spans.
    let mut numbers: Vec<usize> = conversion.records.iter().map(|(n, _)| *n).collect();
    numbers.extend(conversion.refused.iter().map(|(n, _)| *n));
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=conversion.spans).collect::<Vec<_>>(), "spans without one outcome");
    assert!(conversion.refused.windows(2).all(|w| w[0].0 < w[1].0), "refusals out of order");
    for (n, e) in &conversion.refused {
        assert_eq!(e.code(), "otlp.span", "span {n}: {e:?}");
    }

    let mut ids = BTreeSet::new();
    for (n, record) in &conversion.records {
        if let Err(e) = validate_value(schema(), &Limits::default(), record.clone()) {
            panic!("span {n} built an invalid record: {e}\n record: {record}");
        }
        let id = record["event_id"].as_str().map(str::to_owned);
        assert!(ids.insert(id), "span {n}: a second record with its event id");
    }

    // The all-or-nothing form: the records when nothing is refused, else the first refusal.
    match (records_from_request(body, encoding, schema()), conversion.refused.first()) {
        (Ok(records), None) => assert_eq!(records, conversion.into_records()),
        (Err(e), Some((_, first))) => assert_eq!(&e, first),
        (got, first) => panic!("records_from_request {got:?} disagrees with refusal {first:?}"),
    }
});
