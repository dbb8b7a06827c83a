//! Fuzzes `ctxgraph::parse_messages` (conversation JSONL, default limits) on arbitrary bytes; checks it never panics, is deterministic, gives each line at most one outcome (a record or a rejection, in line order), that every record it builds validates against the core schema (but for the record size limit), and that every accepted message prints back to itself (parse → print → parse).
#![no_main]

use ctxgraph::{Limits, Message, parse_messages};
use ctxgraph_fuzz::schema;
use ctxgraph_ontology::validate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    let batch = parse_messages(data, &limits);
    assert_eq!(parse_messages(data, &limits), batch, "not deterministic");

    // One outcome per line, in line order.
    let mut lines: Vec<u64> = batch.records.iter().map(|(l, _)| *l).collect();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "records out of line order: {lines:?}");
    let refused: Vec<u64> = batch.rejections.iter().map(|r| r.line).collect();
    assert!(refused.windows(2).all(|w| w[0] < w[1]), "rejections out of line order: {refused:?}");
    lines.extend(&refused);
    lines.sort_unstable();
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "a line has two outcomes: {lines:?}");
    for r in &batch.rejections {
        assert!(!r.violations.is_empty(), "a rejection without a reason at line {}", r.line);
    }

    // Every record built is a valid event record (a long message may outgrow the size limit).
    for (line, record) in &batch.records {
        if let Err(e) = validate(schema(), &limits, &record.to_string()) {
            assert!(
                e.violations.iter().all(|v| v.rule == "limits.record_bytes"),
                "line {line} built an invalid record: {e}\n record: {record}"
            );
        }
        assert_eq!(record["event_type"], "observation.message");
    }

    // Round trip of each accepted message through the message format.
    let text = String::from_utf8_lossy(data);
    for line in text.lines() {
        let Ok(message) = Message::parse(line.trim(), &limits) else { continue };
        let printed = message.to_json().to_string();
        match Message::parse(&printed, &limits) {
            Ok(again) => assert_eq!(again, message, "round trip changed the message: {printed}"),
            Err(e) => panic!("a printed message does not parse: {e}\n printed: {printed}"),
        }
    }
});
