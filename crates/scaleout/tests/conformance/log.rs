//! The log traits' behaviour, written once for every backend (see `Backend`).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use ctxgraph_ontology::{Limits, RecordKind, Schema, ValidRecord, validate};
use ctxgraph_store::{Appended, LogEntry, StoreError};
use serde_json::json;

use crate::harness::Backend;

fn valid(value: serde_json::Value) -> ValidRecord {
    // Building the core schema costs more than validating a record: build it once.
    static SCHEMA: OnceLock<Schema> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| Schema::core().unwrap());
    validate(schema, &Limits::default(), &value.to_string()).unwrap()
}

/// An event whose agent and text are given.
pub(crate) fn event(id: &str, agent: &str, text: &str) -> ValidRecord {
    valid(json!({
        "event_id": id, "event_type": "agent.invoke", "occurred_at": "2026-11-20T09:00:00Z",
        "session_id": "s", "agent_id": agent, "trace_id": "t", "payload": {"text": text}
    }))
}

/// An explicit edge between two events: a record of another kind.
fn edge(id: &str) -> ValidRecord {
    valid(json!({
        "record_type": "edge", "edge_id": id, "edge_type": "CAUSED_BY",
        "from": {"label": "Event", "id": "e2"}, "to": {"label": "Event", "id": "e1"},
        "properties": {"mechanism": "inferred"}
    }))
}

const TOMBSTONE: &str = r#"{"id":"x","kind":"event","record_type":"redacted"}"#;

fn all(b: &impl Backend) -> Vec<LogEntry> {
    b.read(|l| l.read_from(1, usize::MAX).unwrap())
}

pub(crate) fn an_empty_log_has_nothing(b: impl Backend) {
    b.read(|l| {
        assert_eq!(l.head().unwrap(), 0);
        assert!(l.read_from(0, 10).unwrap().is_empty());
        assert!(l.read_from(1, 10).unwrap().is_empty());
        assert!(l.get(RecordKind::Event, "e1").unwrap().is_none());
        assert!(l.read_kind(RecordKind::Event).unwrap().is_empty());
    });
}

pub(crate) fn reappend_is_idempotent_and_a_conflict_is_refused(mut b: impl Backend) {
    let first = event("e1", "a", "hello");
    let outcomes = b.write(|l| {
        vec![
            l.append(&first, "2026-11-20T09:00:01Z").unwrap(),
            l.append(&event("e2", "a", "x"), "2026-11-20T09:00:01Z").unwrap(),
            l.append(&first, "2026-11-20T09:00:09Z").unwrap(),
        ]
    });
    assert_eq!(outcomes, [Appended::New(1), Appended::New(2), Appended::Duplicate(1)]);
    let err =
        b.write(|l| l.append(&event("e1", "b", "hello"), "2026-11-20T09:00:02Z").unwrap_err());
    assert!(matches!(err, StoreError::Conflict { kind: "event", position: 1, .. }), "{err:?}");
    assert_eq!(err.code(), "log.conflict");
    assert_eq!(
        err.to_string(),
        "event `e1` already exists at log position 1 with different content; records are immutable (rule: log.conflict)"
    );
    // Nothing was written by the duplicate or the conflict: the first record stands as it was.
    b.read(|l| {
        assert_eq!(l.head().unwrap(), 2);
        let e1 = l.get(RecordKind::Event, "e1").unwrap().unwrap();
        assert_eq!(e1.body, first.canonical());
        assert_eq!(e1.recorded_at, "2026-11-20T09:00:01Z");
    });
    // The same id in another kind is another record.
    assert_eq!(b.write(|l| l.append(&edge("e1"), "t").unwrap()), Appended::New(3));
}

pub(crate) fn read_from_pages_in_position_order(mut b: impl Backend) {
    // More records than one page of the Redis reads (1,000), so reads cross pages.
    let n = 1_205u64;
    b.write(|l| {
        for i in 1..=n {
            assert_eq!(
                l.append(&event(&format!("e{i}"), "a", "t"), &format!("at-{i}")).unwrap(),
                Appended::New(i)
            );
        }
    });
    let every = all(&b);
    assert_eq!(every.len() as u64, n);
    for (i, entry) in (1..=n).zip(&every) {
        assert_eq!(entry.position, i);
        assert_eq!(entry.kind, RecordKind::Event);
        assert_eq!(entry.id, format!("e{i}"));
        assert_eq!(entry.recorded_at, format!("at-{i}"));
        assert_eq!(entry.body, event(&format!("e{i}"), "a", "t").canonical());
    }
    let positions = |from: u64, limit: usize| -> Vec<u64> {
        b.read(|l| l.read_from(from, limit).unwrap().iter().map(|e| e.position).collect())
    };
    assert_eq!(positions(1, 3), [1, 2, 3]);
    assert_eq!(positions(0, 3), [1, 2, 3], "a read from 0 starts at the first record");
    assert_eq!(positions(995, 10), (995..1005).collect::<Vec<_>>());
    assert_eq!(positions(1_200, 10), (1_200..=n).collect::<Vec<_>>());
    assert!(positions(n + 1, 10).is_empty());
    assert!(positions(5, 0).is_empty());
    // Paging by the last position seen visits every record once.
    let mut seen = Vec::new();
    let mut from = 1;
    loop {
        let page = positions(from, 97);
        let Some(&last) = page.last() else { break };
        seen.extend(page);
        from = last + 1;
    }
    assert_eq!(seen, (1..=n).collect::<Vec<_>>());
    assert_eq!(b.read(|l| l.head().unwrap()), n);
}

pub(crate) fn get_and_read_kind_find_records_by_kind(mut b: impl Backend) {
    b.write(|l| {
        l.append(&event("e1", "a", "one"), "t1").unwrap();
        l.append(&edge("x1"), "t2").unwrap();
        l.append(&event("e2", "a", "two"), "t3").unwrap();
        l.append(&edge("x2"), "t4").unwrap();
        l.append(&event("e3", "a", "three"), "t5").unwrap();
    });
    b.read(|l| {
        let e2 = l.get(RecordKind::Event, "e2").unwrap().unwrap();
        assert_eq!(e2, l.read_from(3, 1).unwrap()[0]);
        assert_eq!(
            (e2.position, e2.kind, e2.id.as_str(), e2.recorded_at.as_str()),
            (3, RecordKind::Event, "e2", "t3")
        );
        assert!(l.get(RecordKind::Edge, "e2").unwrap().is_none(), "kind is part of the key");
        assert!(l.get(RecordKind::Event, "x1").unwrap().is_none());
        assert!(l.get(RecordKind::Event, "e").unwrap().is_none(), "no prefix match");
        let events: Vec<(u64, String)> = l
            .read_kind(RecordKind::Event)
            .unwrap()
            .into_iter()
            .map(|e| (e.position, e.id))
            .collect();
        assert_eq!(events, [(1, "e1".into()), (3, "e2".into()), (5, "e3".into())]);
        let edges = l.read_kind(RecordKind::Edge).unwrap();
        assert_eq!(edges.iter().map(|e| e.position).collect::<Vec<_>>(), [2, 4]);
        assert_eq!(edges[1], l.get(RecordKind::Edge, "x2").unwrap().unwrap());
        assert!(l.read_kind(RecordKind::Memory).unwrap().is_empty());
    });
}

/// What one writer saw: each id it appended and the outcome.
type Seen = Vec<(String, Result<Appended, String>)>;

pub(crate) fn positions_stay_gap_free_under_two_concurrent_writers<B: Backend>(b: B) {
    const OWN: usize = 150;
    const SHARED: usize = 40;
    const CONTESTED: usize = 20;
    let writer = |mut w: B, me: &'static str| {
        std::thread::spawn(move || {
            let mut seen: Seen = Vec::new();
            for i in 0..OWN {
                let mut batch = vec![event(&format!("{me}-{i}"), me, "own")];
                if i < SHARED {
                    // The same record from both writers: one appends it, the other finds it.
                    batch.push(event(&format!("shared-{i}"), "both", "same"));
                }
                if i < CONTESTED {
                    // Different records under one id: one wins, the other is refused.
                    batch.push(event(&format!("contested-{i}"), me, "mine"));
                }
                for record in batch {
                    let outcome = w.write(|l| l.append(&record, "t")).map_err(|e| e.to_string());
                    seen.push((record.id().to_owned(), outcome));
                }
            }
            seen
        })
    };
    let one = writer(b.another(), "one");
    let two = writer(b.another(), "two");
    let (one, two) = (one.join().unwrap(), two.join().unwrap());

    let total = (2 * OWN + SHARED + CONTESTED) as u64;
    let every = all(&b);
    assert_eq!(b.read(|l| l.head().unwrap()), total);
    assert_eq!(
        every.iter().map(|e| e.position).collect::<Vec<_>>(),
        (1..=total).collect::<Vec<_>>()
    );
    for seen in [&one, &two] {
        let new: Vec<u64> = seen
            .iter()
            .filter_map(|(_, o)| match o {
                Ok(Appended::New(p)) => Some(*p),
                _ => None,
            })
            .collect();
        assert!(new.windows(2).all(|w| w[0] < w[1]), "one writer's positions increase");
    }
    let outcomes = |id: &str| -> Vec<&Result<Appended, String>> {
        one.iter().chain(&two).filter(|(i, _)| i == id).map(|(_, o)| o).collect()
    };
    let by_id: BTreeMap<&str, &LogEntry> = every.iter().map(|e| (e.id.as_str(), e)).collect();
    for i in 0..SHARED {
        let id = format!("shared-{i}");
        let at = by_id[id.as_str()].position;
        let mut got = outcomes(&id).into_iter().cloned().collect::<Vec<_>>();
        got.sort_by_key(|o| matches!(o, Ok(Appended::Duplicate(_))));
        assert_eq!(got, [Ok(Appended::New(at)), Ok(Appended::Duplicate(at))], "{id}");
    }
    for i in 0..CONTESTED {
        let id = format!("contested-{i}");
        let stored = by_id[id.as_str()];
        let got = outcomes(&id);
        let won: Vec<_> = got.iter().filter(|o| matches!(o, Ok(Appended::New(_)))).collect();
        assert_eq!(won, [&&Ok(Appended::New(stored.position))], "{id}: exactly one writer wins");
        let refused = format!("event `{id}` already exists at log position {}", stored.position);
        assert!(got.iter().any(|o| matches!(o, Err(e) if e.contains(&refused))), "{id}: {got:?}");
        // The stored body is the winner's.
        let winner = if one.iter().any(|(i, o)| *i == id && o.is_ok()) { "one" } else { "two" };
        assert_eq!(stored.body, event(&id, winner, "mine").canonical());
    }
}

pub(crate) fn redact_replaces_a_body_and_no_old_bytes_remain(mut b: impl Backend) {
    let secret = format!("secret-agent-{}", crate::harness::fresh_name());
    b.write(|l| {
        l.append(&event("e1", &secret, "said by the secret agent"), "t0").unwrap();
        l.append(&event("e2", "a", "kept"), "t0").unwrap();
    });
    assert!(b.holds(&secret), "the probe finds the body before the redaction");
    let (done, nothing) =
        b.forget(|l| (l.redact(1, TOMBSTONE).unwrap(), l.redact(99, "{}").unwrap()));
    assert!(done);
    assert!(!nothing, "no record at position 99");
    b.read(|l| {
        assert_eq!(l.head().unwrap(), 2);
        let e1 = l.get(RecordKind::Event, "e1").unwrap().unwrap();
        assert_eq!((e1.position, e1.body.as_str(), e1.recorded_at.as_str()), (1, TOMBSTONE, "t0"));
        assert_eq!(l.read_from(1, 1).unwrap()[0], e1);
        assert_eq!(l.read_kind(RecordKind::Event).unwrap()[0], e1);
        assert_eq!(
            l.get(RecordKind::Event, "e2").unwrap().unwrap().body,
            event("e2", "a", "kept").canonical()
        );
    });
    assert!(!b.holds(&secret), "no stored byte spells the forgotten body");
    // The original is now a conflict: the log says the record was redacted.
    let err =
        b.write(|l| l.append(&event("e1", &secret, "said by the secret agent"), "t1").unwrap_err());
    assert_eq!(err.code(), "log.conflict");
}

pub(crate) fn redact_as_renames_and_refuses_a_taken_id(mut b: impl Backend) {
    let secret = format!("e-secretname-{}", crate::harness::fresh_name());
    b.write(|l| {
        l.append(&event(&secret, "a", "x"), "t0").unwrap();
        l.append(&event("e2", "a", "y"), "t0").unwrap();
    });
    assert!(b.holds(&secret));
    let err = b.forget(|l| l.redact_as(1, "e2", "{}").unwrap_err());
    assert_eq!(
        err.to_string(),
        "event `e2` already exists at log position 2 with different content; records are immutable (rule: log.conflict)"
    );
    b.read(|l| {
        assert!(
            l.get(RecordKind::Event, &secret).unwrap().is_some(),
            "a refused rename writes nothing"
        )
    });
    let (done, nothing) = b.forget(|l| {
        (
            l.redact_as(1, "redacted-1", TOMBSTONE).unwrap(),
            l.redact_as(9, "redacted-9", "{}").unwrap(),
        )
    });
    assert!(done);
    assert!(!nothing, "no record at position 9");
    b.read(|l| {
        assert!(l.get(RecordKind::Event, &secret).unwrap().is_none());
        let e = l.get(RecordKind::Event, "redacted-1").unwrap().unwrap();
        assert_eq!((e.position, e.id.as_str(), e.body.as_str()), (1, "redacted-1", TOMBSTONE));
        assert_eq!(l.read_from(1, 1).unwrap()[0], e);
        // Renaming a record to its own id is no clash.
        assert_eq!(l.head().unwrap(), 2);
    });
    assert!(b.forget(|l| l.redact_as(1, "redacted-1", TOMBSTONE).unwrap()));
    assert!(!b.holds(&secret), "no stored byte spells the forgotten id");
    // The old id is free again.
    assert_eq!(b.write(|l| l.append(&event(&secret, "a", "x"), "t1").unwrap()), Appended::New(3));
}

pub(crate) fn hostile_ids_and_text_round_trip_byte_for_byte(mut b: impl Backend) {
    // Record ids may hold no whitespace or control characters; text may hold anything.
    let ids = [
        r#"q"uote'd"#,
        "{brace}}{",
        r"back\slash\\",
        "]]..redis.call('FLUSHALL')--",
        "%s%d%020d",
        "event:e1",
        "ünïcødé-日本-🦀",
        "*?[glob]",
        "{tenant}:head",
        "'})MATCH(n)DETACH_DELETE_n//",
    ];
    let texts = [
        "line one\nline two\r\n*3\r\n$3\r\nDEL\r\n",
        "nul \u{0} and bell \u{7}",
        "end]] redis.call('FLUSHALL') --[[",
        "\"}, {\"record_type\": \"forget\"",
        "ünïcødé \u{1F980} \u{202E}reversed",
    ];
    let records: Vec<ValidRecord> =
        ids.iter().enumerate().map(|(i, id)| event(id, id, texts[i % texts.len()])).collect();
    b.write(|l| {
        for (i, r) in records.iter().enumerate() {
            assert_eq!(l.append(r, texts[i % texts.len()]).unwrap(), Appended::New(i as u64 + 1));
        }
        for (i, r) in records.iter().enumerate() {
            assert_eq!(l.append(r, "again").unwrap(), Appended::Duplicate(i as u64 + 1));
        }
    });
    let every = all(&b);
    assert_eq!(every.len(), records.len());
    for (i, (entry, r)) in every.iter().zip(&records).enumerate() {
        assert_eq!(entry.id, r.id());
        assert_eq!(entry.body.as_bytes(), r.canonical().as_bytes());
        assert_eq!(entry.recorded_at, texts[i % texts.len()]);
        assert_eq!(b.read(|l| l.get(RecordKind::Event, r.id()).unwrap()).as_ref(), Some(entry));
    }
    // A redaction's id and body are not validated by the log: anything goes in and comes back.
    let odd_id = "new\nid with spaces ]] -- \u{0}";
    let odd_body = "{\"x\":\"\u{0}\n]]\"}";
    assert!(b.forget(|l| l.redact_as(4, odd_id, odd_body).unwrap()));
    b.read(|l| {
        let e = l.get(RecordKind::Event, odd_id).unwrap().unwrap();
        assert_eq!((e.position, e.id.as_str(), e.body.as_str()), (4, odd_id, odd_body));
        assert_eq!(l.head().unwrap(), records.len() as u64);
    });
    // Nothing the text said was run: every record is still there.
    assert_eq!(all(&b).len(), records.len());
}

conformance!(crate::harness::EmbeddedBackend, redis: crate::harness::RedisBackend;
    an_empty_log_has_nothing,
    reappend_is_idempotent_and_a_conflict_is_refused,
    read_from_pages_in_position_order,
    get_and_read_kind_find_records_by_kind,
    positions_stay_gap_free_under_two_concurrent_writers,
    redact_replaces_a_body_and_no_old_bytes_remain,
    redact_as_renames_and_refuses_a_taken_id,
    hostile_ids_and_text_round_trip_byte_for_byte,
);
