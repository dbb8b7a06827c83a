//! Fuzzes `checklist_from_file(&Schema::core(), &Limits::default(), text)` on arbitrary text (TOML or JSON); checks it never panics and that an accepted file is a checklist record whose canonical form parses back, as a file and as a record, to the same record, with at least one slot spec, unique normalised spec names and expected labels never empty.
#![no_main]

use ctxgraph_fuzz::schema;
use ctxgraph_ontology::{
    Limits, RecordBody, RecordKind, SlotsRecord, checklist_from_file, normalize_name, validate,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Non-UTF-8 bytes become U+FFFD, so every input reaches the TOML and JSON parsers.
    let text = String::from_utf8_lossy(data);
    let limits = Limits::default();
    let Ok(record) = checklist_from_file(schema(), &limits, &text) else { return };

    assert_eq!(record.kind(), RecordKind::Checklist, "text: {text}");
    let RecordBody::Slots(SlotsRecord::Checklist(c)) = record.body() else {
        panic!("a checklist file gave another record\n text: {text}");
    };
    assert_eq!(record.id(), normalize_name(&c.name), "text: {text}");
    assert!(!c.slots.is_empty(), "a checklist without slot specs\n text: {text}");
    for (i, spec) in c.slots.iter().enumerate() {
        assert!(!spec.expect_labels.is_empty(), "spec {i} has no labels\n text: {text}");
        assert_eq!(spec.name, normalize_name(&spec.name), "spec {i} name not normalised");
        assert!(
            c.slots[..i].iter().all(|s| s.name != spec.name),
            "spec name {} repeated\n text: {text}",
            spec.name
        );
    }

    // Print → parse: the canonical JSON is a checklist file and a record, both the same record.
    let as_file = match checklist_from_file(schema(), &limits, record.canonical()) {
        Ok(r) => r,
        Err(e) => panic!("canonical form refused as a file: {e}\n text: {text}"),
    };
    assert_eq!(as_file, record, "file round trip changed the record\n text: {text}");
    let as_record = match validate(schema(), &limits, record.canonical()) {
        Ok(r) => r,
        Err(e) => panic!("canonical form refused as a record: {e}\n text: {text}"),
    };
    assert_eq!(as_record, record, "record round trip changed the record\n text: {text}");
});
