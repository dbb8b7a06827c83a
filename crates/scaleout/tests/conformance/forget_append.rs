//! `RedisLog::forget_append`: the forget record and its tombstones are written by one script,
//! all or nothing; a log that moved since the caller read it, or a record whose body changed,
//! makes it write nothing.

use ctxgraph_ontology::{Limits, RecordKind, Schema, ValidRecord, validate};
use ctxgraph_store::{Appended, ForgetAppend, Redaction, StoreError};
use serde_json::json;

use crate::harness::{Backend, RedisBackend};
use crate::log::event;

fn forget(forget_id: &str, by: &str) -> ValidRecord {
    let schema = Schema::core().unwrap();
    let text = json!({"record_type": "forget", "forget_id": forget_id, "by": by,
        "target": {"kind": "event", "id": "e1"}, "at": "2026-11-20T10:00:00.000Z", "redacted": 1});
    validate(&schema, &Limits::default(), &text.to_string()).unwrap()
}

fn redaction(b: &RedisBackend, position: u64, tombstone: &str) -> Redaction {
    let read = b.read(|l| l.read_from(position, 1).unwrap().remove(0).body);
    Redaction { position, read, tombstone: tombstone.to_owned(), id: None }
}

fn bodies(b: &RedisBackend) -> Vec<String> {
    b.read(|l| l.read_from(1, 100).unwrap().into_iter().map(|e| e.body).collect())
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn the_forget_record_and_its_tombstones_are_written_together_or_not_at_all() {
    let mut b = RedisBackend::new();
    let secret = format!("forget-append-secret-{}", crate::harness::fresh_name());
    b.write(|l| {
        l.append(&event("e1", "a", &secret), "t").unwrap();
        l.append(&event("e2", "a", "kept"), "t").unwrap();
    });
    let record = forget("forget-1", "ops");
    let gone = redaction(&b, 1, r#"{"record_type":"redacted"}"#);

    // The log moved past the head read: nothing is written.
    let before = bodies(&b);
    let moved = b.log().forget_append(&record, "t", 1, std::slice::from_ref(&gone)).unwrap();
    assert_eq!(moved, ForgetAppend::Changed { position: 2 });
    // A record's body is not the one read: nothing is written either, the checks coming
    // before the first write.
    let stale = Redaction { read: "something else".into(), ..redaction(&b, 2, "{}") };
    let changed = b.log().forget_append(&record, "t", 2, &[gone.clone(), stale]).unwrap();
    assert_eq!(changed, ForgetAppend::Changed { position: 2 });
    assert_eq!(bodies(&b), before);
    assert!(b.holds(&secret));

    let done = b.log().forget_append(&record, "t", 2, std::slice::from_ref(&gone)).unwrap();
    assert_eq!(done, ForgetAppend::Done(Appended::New(3)));
    let now = bodies(&b);
    assert_eq!(now[0], gone.tombstone);
    assert_eq!(now[1], before[1]);
    assert_eq!(now[2], record.canonical());
    assert_eq!(b.read(|l| l.get(RecordKind::Forget, "forget-1").unwrap().unwrap().position), 3);
    assert!(!b.holds(&secret), "no key keeps the redacted body");

    // The same record again is a duplicate and redacts nothing; another with its id conflicts.
    let again = redaction(&b, 2, "{}");
    let dup = b.log().forget_append(&record, "t", 3, std::slice::from_ref(&again)).unwrap();
    assert_eq!(dup, ForgetAppend::Done(Appended::Duplicate(3)));
    assert_eq!(bodies(&b), now);
    let err = b.log().forget_append(&forget("forget-1", "someone-else"), "t", 3, &[]).unwrap_err();
    assert!(matches!(err, StoreError::Conflict { position: 3, .. }), "{err}");
    assert_eq!(bodies(&b), now);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_rewrite_and_a_new_id_are_written_with_the_forget_record_or_not_at_all() {
    let mut b = RedisBackend::new();
    let secret = format!("forget-id-secret-{}", crate::harness::fresh_name());
    let spelled = format!("about-{secret}");
    b.write(|l| {
        l.append(&event(&spelled, "a", "about it"), "t").unwrap();
        l.append(&event("e2", "a", &format!("names {secret}")), "t").unwrap();
        l.append(&event("e3", "a", "kept"), "t").unwrap();
    });
    let record = forget("forget-2", "ops");
    let about = Redaction { id: Some("redacted-1".into()), ..redaction(&b, 1, "{}") };
    let rewrite = redaction(&b, 2, r#"{"rewritten":true}"#);
    let both = [about.clone(), rewrite.clone()];

    // A moved head, or a new id another record of the kind holds: nothing is written.
    let before = bodies(&b);
    let moved = b.log().forget_append(&record, "t", 2, &both).unwrap();
    assert_eq!(moved, ForgetAppend::Changed { position: 3 });
    let taken = Redaction { id: Some("e3".into()), ..about.clone() };
    let err = b.log().forget_append(&record, "t", 3, &[rewrite.clone(), taken]).unwrap_err();
    assert!(matches!(err, StoreError::Corruption(_)), "{err}");
    assert_eq!(bodies(&b), before);
    assert!(b.read(|l| l.get(RecordKind::Event, &spelled).unwrap()).is_some());
    assert!(b.holds(&secret));

    let done = b.log().forget_append(&record, "t", 3, &both).unwrap();
    assert_eq!(done, ForgetAppend::Done(Appended::New(4)));
    let now = bodies(&b);
    assert_eq!((now[0].as_str(), now[1].as_str()), ("{}", r#"{"rewritten":true}"#));
    assert_eq!(now[2], before[2]);
    // The old id left the index and the id hash; the new one finds the record.
    assert!(b.read(|l| l.get(RecordKind::Event, &spelled).unwrap()).is_none());
    let found = b.read(|l| l.get(RecordKind::Event, "redacted-1").unwrap().unwrap());
    assert_eq!((found.position, found.id.as_str()), (1, "redacted-1"));
    assert!(!b.holds(&secret), "no key keeps the old id or body");
}
