//! Fuzzes the receipt parser: arbitrary text, wrapped as a receipt record (`record_type` set when absent), through `validate(&Schema::core(), &Limits::default(), ..)`; checks it never panics, that every refusal names a rule, and that an accepted receipt's canonical form parses back to the same record, with sorted, repeat-free lists, policy results `allow` or `deny`, and one check per policy.
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{Limits, RecordBody, RecordKind, validate};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn sorted_unique(list: &[String]) -> bool {
    list.windows(2).all(|w| w[0] < w[1])
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // JSON objects become receipts (as `ctxgraph receipt add` does); anything else is tried as is.
    let text = match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(mut o)) => {
            o.entry("record_type").or_insert_with(|| "receipt".into());
            Value::Object(o).to_string()
        }
        _ => text.into_owned(),
    };
    let limits = Limits::default();
    let record = match validate(schema(), &limits, &text) {
        Ok(r) => r,
        Err(e) => {
            assert!(!e.violations.is_empty(), "a refusal without a violation\n text: {text}");
            assert!(e.violations.iter().all(|v| !v.rule.is_empty()), "text: {text}");
            return;
        }
    };
    let RecordBody::Receipt(r) = record.body() else { return };
    assert_eq!(record.kind(), RecordKind::Receipt);
    assert!(!r.receipt_id.is_empty() && !r.task.is_empty() && !r.action.is_empty());
    assert!(sorted_unique(&r.approvals), "approvals not sorted and unique\n text: {text}");
    for list in [&r.inputs.events, &r.inputs.entities, &r.inputs.documents, &r.inputs.configs] {
        assert!(sorted_unique(list), "inputs not sorted and unique\n text: {text}");
    }
    assert!(r.policies.iter().all(|p| p.result == "allow" || p.result == "deny"), "text: {text}");
    assert!(
        r.policies.windows(2).all(|w| w[0].id < w[1].id),
        "a policy checked twice\n text: {text}"
    );

    // Print → parse: the canonical JSON is the same record.
    let again = match validate(schema(), &limits, record.canonical()) {
        Ok(a) => a,
        Err(e) => panic!("canonical form refused: {e}\n text: {text}"),
    };
    assert_eq!(again, record, "round trip changed the receipt\n text: {text}");
});
