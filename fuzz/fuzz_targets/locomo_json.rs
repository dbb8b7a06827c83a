//! Fuzzes `ctxgraph::locomo_conversations` on arbitrary bytes (lossy UTF-8); checks it never panics and that an accepted file gives, per conversation, unique event ids `{sample_id}:{dia_id}`, valid event records (but for the record size limit) whose times never go back within a session, and question evidence that is normalised and names turns of the conversation.
#![no_main]

use ctxgraph::{Limits, locomo_conversations, normalize_evidence};
use ctxgraph_fuzz::schema;
use ctxgraph_ontology::validate;
use libfuzzer_sys::fuzz_target;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let Ok(conversations) = locomo_conversations(&text) else { return };
    let limits = Limits::default();
    for c in &conversations {
        let mut ids = BTreeSet::new();
        let mut turns = BTreeSet::new();
        let mut last: Option<(String, String)> = None;
        for record in &c.records {
            let id = record["event_id"].as_str().unwrap_or_default().to_owned();
            assert!(ids.insert(id.clone()), "event id {id} twice");
            let dia_id = record["payload"]["dia_id"].as_str().unwrap_or_default();
            assert_eq!(id, format!("{}:{dia_id}", c.sample_id));
            turns.insert(dia_id.to_owned());
            assert_eq!(record["trace_id"], c.sample_id.as_str());
            let session = record["session_id"].as_str().unwrap_or_default().to_owned();
            let at = record["occurred_at"].as_str().unwrap_or_default().to_owned();
            if let Some((s, t)) = &last {
                assert!(*s != session || *t <= at, "time goes back in {session}: {t} then {at}");
            }
            last = Some((session, at));
            if let Err(e) = validate(schema(), &limits, &record.to_string()) {
                assert!(
                    e.violations.iter().all(|v| v.rule == "limits.record_bytes"),
                    "an invalid record: {e}\n record: {record}"
                );
            }
        }
        for q in &c.questions {
            for e in &q.evidence {
                assert_eq!(normalize_evidence(e), [e.clone()], "evidence {e} is not normal");
                assert!(turns.contains(e), "evidence {e} names no turn");
            }
        }
    }
});
