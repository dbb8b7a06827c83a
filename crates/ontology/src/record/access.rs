//! Access tracking: the `access` record, one batch of reads of events.
//!
//! Recall notes the events it returns in memory; a flush writes what piled up as one `access`
//! record: per event, how many times it was returned (`count`) and when last
//! (`last_accessed_at`), plus when the batch was written (`at`). The projection folds the
//! batches into each Event node's `access_count` (a sum) and `last_accessed_at` (a maximum),
//! which feed salience. Batching keeps reads free of writes.
//!
//! ```json
//! {"record_type": "access", "at": "2026-11-20T09:00:00Z",
//!  "events": [{"event_id": "e1", "count": 3, "last_accessed_at": "2026-11-20T08:59:58Z"}]}
//! ```

use serde_json::{Map, Value};

use super::Validator;
use crate::violation::Violation;

/// Most events in one `access` record: an engine's pending batch never holds more.
pub const MAX_ACCESS_EVENTS: usize = 10_000;
/// Largest `count` of one event in one batch.
pub const MAX_ACCESS_COUNT: u64 = u32::MAX as u64;

/// A validated `access` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessRecord {
    /// Unique id (given, or `access-` and a hash of the record).
    pub access_id: String,
    /// RFC 3339 time the batch was written, as given.
    pub at: String,
    /// The events read, sorted by event id, each once.
    pub events: Vec<AccessEntry>,
}

/// The reads of one event in an `access` batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessEntry {
    /// The event read.
    pub event_id: String,
    /// How many times it was read in the batch, from 1.
    pub count: u64,
    /// RFC 3339 time of the last read, as given.
    pub last_accessed_at: String,
    /// `last_accessed_at` in nanoseconds since the Unix epoch, for comparing times with
    /// different offsets.
    pub last_accessed_ns: i64,
}

pub(super) const ACCESS_FIELDS: &[&str] = &["record_type", "access_id", "at", "events"];
const ENTRY_FIELDS: &[&str] = &["event_id", "count", "last_accessed_at"];

impl Validator<'_> {
    pub(super) fn access(&mut self, obj: &Map<String, Value>) -> Option<AccessRecord> {
        self.unknown_fields(obj, ACCESS_FIELDS, "$");
        let given_id = self.id(obj, "access_id", "$.access_id", false);
        let at = self.timestamp(obj, "at", "$.at");
        let events = self.access_events(obj);
        let mut record = AccessRecord {
            access_id: given_id.clone().unwrap_or_default(),
            at: at?.0,
            events: events?,
        };
        if given_id.is_none() {
            record.access_id = super::memory::derived_id("access", &access_json(&record));
        }
        Some(record)
    }

    fn access_events(&mut self, obj: &Map<String, Value>) -> Option<Vec<AccessEntry>> {
        let value = self.required_at(obj, "events", "$.events")?;
        let Value::Array(items) = value else {
            self.out.push(Violation::new(
                "$.events",
                Some(value),
                "envelope.type",
                "must be an array of {event_id, count, last_accessed_at}",
            ));
            return None;
        };
        if items.is_empty() || items.len() > MAX_ACCESS_EVENTS {
            self.out.push(Violation::with_text(
                "$.events",
                Some(&format!("{} items", items.len())),
                "access.events",
                format!("an access batch names 1 to {MAX_ACCESS_EVENTS} events"),
            ));
            return None;
        }
        let before = self.out.len();
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("$.events[{i}]");
            let Some(o) = self.object(item, &path, ENTRY_FIELDS) else { continue };
            let event_id = self.id(o, "event_id", &format!("{path}.event_id"), true);
            let count_path = format!("{path}.count");
            let count = self.required_at(o, "count", &count_path).and_then(|v| match v.as_u64() {
                Some(c) if (1..=MAX_ACCESS_COUNT).contains(&c) => Some(c),
                _ => {
                    self.out.push(Violation::new(
                        count_path.as_str(),
                        Some(v),
                        "access.count",
                        format!("must be an integer from 1 to {MAX_ACCESS_COUNT}"),
                    ));
                    None
                }
            });
            let last = self.timestamp(o, "last_accessed_at", &format!("{path}.last_accessed_at"));
            if let (Some(event_id), Some(count), Some((last_accessed_at, last_accessed_ns))) =
                (event_id, count, last)
            {
                entries
                    .push((i, AccessEntry { event_id, count, last_accessed_at, last_accessed_ns }));
            }
        }
        // Stable: of two entries for one event, the repeat (the later index) comes second.
        entries.sort_by(|(_, a), (_, b)| a.event_id.cmp(&b.event_id));
        // A batch counts each event once: a repeat would be a second, conflicting count.
        for pair in entries.windows(2) {
            if pair[0].1.event_id == pair[1].1.event_id {
                let (i, e) = &pair[1];
                self.out.push(Violation::for_str(
                    format!("$.events[{i}].event_id"),
                    &e.event_id,
                    "access.duplicate_event",
                    "each event appears once per access batch",
                ));
            }
        }
        (self.out.len() == before).then(|| entries.into_iter().map(|(_, e)| e).collect())
    }
}

/// Canonical JSON of an access record.
pub(super) fn access_json(r: &AccessRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "access".into());
    if !r.access_id.is_empty() {
        m.insert("access_id".into(), r.access_id.clone().into());
    }
    m.insert("at".into(), r.at.clone().into());
    let events = r
        .events
        .iter()
        .map(|e| {
            serde_json::json!({"event_id": e.event_id, "count": e.count,
                "last_accessed_at": e.last_accessed_at})
        })
        .collect();
    m.insert("events".into(), Value::Array(events));
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Limits, RecordBody, RecordKind, Schema, validate};

    use super::*;

    fn check(v: Value) -> Result<crate::ValidRecord, crate::ValidationErrors> {
        validate(&Schema::core().unwrap(), &Limits::default(), &v.to_string())
    }

    #[test]
    fn an_access_batch_validates_sorted_with_a_derived_id() {
        let r = check(json!({"record_type": "access", "at": "2026-11-20T09:00:00Z", "events": [
            {"event_id": "e2", "count": 1, "last_accessed_at": "2026-11-20T08:00:00Z"},
            {"event_id": "e1", "count": 3, "last_accessed_at": "2026-11-20T10:00:00+02:00"}]}))
        .unwrap();
        assert_eq!(r.kind(), RecordKind::Access);
        assert!(r.id().starts_with("access-"), "{}", r.id());
        let RecordBody::Access(a) = r.body() else { panic!("{r:?}") };
        let ids: Vec<&str> = a.events.iter().map(|e| e.event_id.as_str()).collect();
        assert_eq!(ids, ["e1", "e2"]);
        assert_eq!(a.events[0].last_accessed_ns, a.events[1].last_accessed_ns);
        // The canonical form (with its derived id) reads back the same.
        let again = validate(&Schema::core().unwrap(), &Limits::default(), r.canonical()).unwrap();
        assert_eq!(again, r);
    }

    #[test]
    fn every_violation_names_field_value_and_rule() {
        let err = check(json!({"record_type": "access", "at": "yesterday", "colour": "red",
            "events": [
                {"event_id": "e1", "count": 0, "last_accessed_at": "2026-11-20T08:00:00Z"},
                {"event_id": "has space", "count": 1, "last_accessed_at": "2026-11-20"},
                {"count": -2, "extra": 1},
                "e4",
                {"event_id": "e5", "count": 1, "last_accessed_at": "2026-11-20T08:00:00Z"},
                {"event_id": "e5", "count": 2, "last_accessed_at": "2026-11-20T08:00:00Z"}]}))
        .unwrap_err();
        let got: Vec<(&str, &str)> =
            err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        for want in [
            ("$.colour", "envelope.unknown_field"),
            ("$.at", "envelope.timestamp_format"),
            ("$.events[0].count", "access.count"),
            ("$.events[1].event_id", "envelope.id_format"),
            ("$.events[1].last_accessed_at", "envelope.timestamp_format"),
            ("$.events[2].extra", "envelope.unknown_field"),
            ("$.events[2].event_id", "envelope.required_field"),
            ("$.events[2].count", "access.count"),
            ("$.events[2].last_accessed_at", "envelope.required_field"),
            ("$.events[3]", "envelope.type"),
            ("$.events[5].event_id", "access.duplicate_event"),
        ] {
            assert!(got.contains(&want), "{want:?} missing from {got:?}");
        }
        // Every violation of a present value shows it.
        for v in &err.violations {
            if v.rule != "envelope.required_field" {
                assert!(v.value.is_some(), "{v}");
            }
        }
        for (events, rule) in [
            (json!([]), "access.events"),
            (json!("e1"), "envelope.type"),
            (Value::Null, "envelope.required_field"),
        ] {
            let err = check(
                json!({"record_type": "access", "at": "2026-11-20T09:00:00Z", "events": events}),
            )
            .unwrap_err();
            assert_eq!(err.violations[0].rule, rule);
            assert_eq!(err.violations[0].path, "$.events");
        }
        let many: Vec<Value> = (0..=MAX_ACCESS_EVENTS)
            .map(|i| {
                json!({"event_id": format!("e{i}"), "count": 1,
                "last_accessed_at": "2026-11-20T08:00:00Z"})
            })
            .collect();
        let err = validate(
            &Schema::core().unwrap(),
            &Limits::unlimited(),
            &json!({"record_type": "access", "at": "2026-11-20T09:00:00Z", "events": many})
                .to_string(),
        )
        .unwrap_err();
        assert_eq!(err.violations[0].rule, "access.events");
    }
}
