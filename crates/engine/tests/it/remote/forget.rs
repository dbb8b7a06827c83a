//! `Engine::forget` on a remote store that runs it, with no server: the test remote store
//! appends the forget record and its tombstones in one transaction, refusing them unchanged
//! when the log moved, and folds with a second engine's `catch_up`. Reports, logs and graphs
//! must equal the embedded engine's after the same forgets.

use std::sync::Mutex;

use ctxgraph::{
    Engine, EngineOptions, ForgetKind, ForgetReport, ForgetTarget, IngestOptions, OpenMode,
    Projection,
};
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{RecordKind, ValidRecord};
use ctxgraph_store::{
    Appended, ForgetAppend, ForgetGraphBody, GraphForget, Log, LogReader, Redaction, RemoteStore,
    StoreError, StoreRead,
};
use serde_json::json;
use tempfile::TempDir;

use super::{FileRemote, log};
use crate::{dump, trace, validate_all};

/// [`FileRemote`] that forgets: its worker is an engine on the same file.
#[derive(Debug)]
struct Forgetful {
    file: FileRemote,
    worker: Mutex<Engine>,
    /// A record another writer appends just before the next forget append.
    interloper: Mutex<Option<ValidRecord>>,
    /// Whether it runs the forget of an entity.
    entities: bool,
}

impl RemoteStore for Forgetful {
    fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError> {
        self.file.begin_read()
    }

    fn append_batch(
        &self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        self.file.append_batch(records, recorded_at)
    }

    fn location(&self) -> String {
        self.file.location()
    }

    fn forgets(&self) -> bool {
        true
    }

    fn forget_append(
        &self,
        record: &ValidRecord,
        recorded_at: &str,
        head: u64,
        redactions: &[Redaction],
    ) -> Result<ForgetAppend, StoreError> {
        if let Some(other) = self.interloper.lock().unwrap().take() {
            self.file.append_batch(&[&other], recorded_at)?;
        }
        let mut store = self.file.writes.lock().unwrap();
        let mut w = store.begin_write()?;
        if w.get(record.kind(), record.id())?.is_none() {
            let now = w.head()?;
            if now != head {
                return Ok(ForgetAppend::Changed { position: now });
            }
            for r in redactions {
                let body = w.read_from(r.position, 1)?.pop().map(|e| e.body);
                if body.as_deref() != Some(r.read.as_str()) {
                    return Ok(ForgetAppend::Changed { position: r.position });
                }
            }
        }
        let appended = w.append(record, recorded_at)?;
        if let Appended::New(_) = appended {
            for r in redactions {
                match &r.id {
                    Some(id) => w.redact_as(r.position, id, &r.tombstone)?,
                    None => w.redact(r.position, &r.tombstone)?,
                };
            }
        }
        w.commit()?;
        Ok(ForgetAppend::Done(appended))
    }

    fn fold_through(&self, position: u64) -> Result<u64, StoreError> {
        let mut worker = self.worker.lock().unwrap();
        worker.catch_up(&mut |_, _| {}).map_err(|e| StoreError::Corruption(e.to_string()))?;
        let through = worker.owner_reader().unwrap().checkpoints().unwrap().projected_through;
        assert!(through >= position, "folded through {through}, asked {position}");
        Ok(through)
    }

    fn rewrite_persistence(&self) -> Result<(), StoreError> {
        Ok(())
    }

    fn forgets_entities(&self) -> bool {
        self.entities
    }

    fn forget_in_graph(&self, body: &mut ForgetGraphBody<'_>) -> Result<bool, StoreError> {
        let mut store = self.file.writes.lock().unwrap();
        let mut w = store.begin_write()?;
        match body(&mut w)? {
            GraphForget::Abort => Ok(false),
            // Nothing here has stage 2: the reset has nothing to drop.
            GraphForget::Apply | GraphForget::ApplyAndResetEnrichment => {
                w.commit()?;
                Ok(true)
            }
        }
    }
}

/// An embedded engine and a remote one over a [`Forgetful`] store, given the same records;
/// `interloper` is appended to the remote store just before its first forget append.
fn pair(dir: &TempDir, interloper: Option<serde_json::Value>) -> (Engine, Engine) {
    pair_of(dir, interloper, false)
}

/// [`pair`], the remote store running the forget of an entity when `entities`.
fn pair_of(
    dir: &TempDir,
    interloper: Option<serde_json::Value>,
    entities: bool,
) -> (Engine, Engine) {
    let open = |name: &str| {
        Engine::open(&dir.path().join(name), OpenMode::CreateIfMissing, EngineOptions::default())
            .unwrap()
    };
    let mut embedded = open("embedded.ctxg");
    let store = Forgetful {
        file: FileRemote::open(&dir.path().join("remote.ctxg")),
        worker: Mutex::new(open("remote.ctxg")),
        interloper: Mutex::new(interloper.map(|v| embedded.validate(&v.to_string()).unwrap())),
        entities,
    };
    let mut remote = Engine::open_remote(Box::new(store), EngineOptions::default()).unwrap();
    let jsonl = trace(120);
    for engine in [&mut embedded, &mut remote] {
        engine.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
        let memories = validate_all(
            engine,
            &[
                json!({"record_type": "memory", "memory_id": "m1", "kind": "decision",
                       "topic": "storage", "content": "keep the ledger in one file",
                       "session_id": "ms", "created_at": "2026-11-20T09:00:00Z"}),
                json!({"record_type": "memory", "memory_id": "m2", "kind": "decision",
                       "topic": "storage", "content": "move the ledger to the cluster",
                       "session_id": "ms", "created_at": "2026-11-21T09:00:00Z"}),
            ],
        );
        for outcome in engine.ingest_batch(&memories, Projection::Inline, true).unwrap() {
            outcome.unwrap();
        }
    }
    (embedded, remote)
}

/// A report without its forget id, which holds the forget's time.
fn strip(reports: Vec<ForgetReport>) -> Vec<(ForgetTarget, u64, u64)> {
    reports.into_iter().map(|r| (r.target, r.position, r.redacted)).collect()
}

/// The log with each body reduced to whether it is a tombstone, forget records left out (their
/// times and ids differ between two runs).
fn shape(engine: &Engine) -> Vec<(u64, RecordKind, String, bool)> {
    log(engine)
        .into_iter()
        .filter(|(_, kind, _, _)| *kind != RecordKind::Forget)
        .map(|(p, kind, id, body)| (p, kind, id, body.contains(r#""record_type":"redacted""#)))
        .collect()
}

#[test]
fn forget_on_a_remote_store_equals_the_embedded_forget() {
    let dir = TempDir::new().unwrap();
    let (mut embedded, mut remote) = pair(&dir, None);
    let reader = embedded.owner_reader().unwrap();
    let events = reader.nodes("Event", None, 200).unwrap();
    let event = events[3].key.id.clone();
    let session = events[40].props["session_id"].as_str().unwrap().to_owned();
    drop(reader);
    let targets = [
        ForgetTarget { kind: ForgetKind::Event, id: event },
        ForgetTarget { kind: ForgetKind::Session, id: session },
        ForgetTarget { kind: ForgetKind::Memory, id: "m1".into() },
    ];
    let want = strip(embedded.forget_many(&targets, "ops", Some("test")).unwrap());
    let got = strip(remote.forget_many(&targets, "ops", Some("test")).unwrap());
    assert_eq!(got, want);
    assert!(got.iter().all(|(_, _, redacted)| *redacted > 0), "{got:?}");
    assert_eq!(shape(&remote), shape(&embedded), "the same records tombstoned");
    assert!(shape(&remote).iter().any(|s| s.3), "tombstones are recognised");
    assert_eq!(dump(&remote), dump(&embedded), "the same graph");

    // Forgotten already: unknown, nothing written; an entity is refused on a store that does
    // not run its forget.
    let head = log(&remote).len();
    let e = remote.forget(&targets[0], "ops", None).unwrap_err();
    assert_eq!(e.code(), "forget.unknown_target");
    let entity = ForgetTarget { kind: ForgetKind::Entity, id: "concept:ledger".into() };
    let e = remote.forget(&entity, "ops", None).unwrap_err();
    assert_eq!(e.code(), "db.backend_unsupported");
    assert!(e.to_string().contains("forget of an entity"), "{e}");
    assert_eq!(log(&remote).len(), head, "nothing was written");
    assert_eq!(remote.owner_reader().unwrap().forgotten().unwrap().len(), 3);
}

#[test]
fn a_forget_whose_log_moved_under_it_reads_again_and_misses_nothing() {
    let dir = TempDir::new().unwrap();
    // Another writer adds an event to the session between the forget's read and its append.
    let late = json!({"event_id": "late-1", "event_type": "tool.execute",
        "occurred_at": "2026-11-30T09:00:00Z", "session_id": "ms-late", "agent_id": "planner",
        "trace_id": "t-late", "payload": {"text": "arrived during the forget"}});
    let (_, mut remote) = pair(&dir, Some(late.clone()));
    let mut early = late;
    early["event_id"] = json!("early-1");
    early["occurred_at"] = json!("2026-11-30T08:00:00Z");
    let record = validate_all(&remote, &[early]);
    remote.ingest_batch(&record, Projection::Inline, true).unwrap().remove(0).unwrap();
    let session = ForgetTarget { kind: ForgetKind::Session, id: "ms-late".into() };
    let report = remote.forget(&session, "ops", None).unwrap();
    // The first append was refused unchanged; the second read found both events.
    assert_eq!(report.redacted, 2, "{report:?}");
    let entries = log(&remote);
    let tombstoned: Vec<&str> = entries
        .iter()
        .filter(|(_, _, _, body)| body.contains(r#""record_type":"redacted""#))
        .map(|(_, _, id, _)| id.as_str())
        .collect();
    assert_eq!(tombstoned, ["early-1", "late-1"]);
    assert_eq!(entries.last().map(|e| (e.0, e.1)), Some((report.position, RecordKind::Forget)));
    assert_eq!(entries.iter().filter(|e| e.1 == RecordKind::Forget).count(), 1);
    let reader = remote.owner_reader().unwrap();
    assert!(reader.timeline("ms-late", 10).unwrap().is_empty());
}

#[test]
fn forget_of_an_entity_on_a_remote_store_equals_the_embedded_forget() {
    let dir = TempDir::new().unwrap();
    let (mut embedded, mut remote) = pair_of(&dir, None, true);
    let reader = embedded.owner_reader().unwrap();
    let entities: Vec<String> =
        reader.nodes("Entity", None, 500).unwrap().into_iter().map(|n| n.key.id).collect();
    drop(reader);
    // Every entity the trace names but its agents (every event of an agent names it: refused
    // alike on both), forgotten one at a time on both.
    let mut forgotten = 0;
    for id in entities {
        let target = ForgetTarget { kind: ForgetKind::Entity, id };
        let want = embedded.forget(&target, "ops", None).map(|r| strip(vec![r]));
        let got = remote.forget(&target, "ops", None).map(|r| strip(vec![r]));
        match (got, want) {
            (Ok(got), Ok(want)) => {
                assert_eq!(got, want);
                forgotten += 1;
            }
            (Err(got), Err(want)) => assert_eq!(got.code(), want.code(), "{target:?}"),
            (got, want) => panic!("{target:?}: {got:?} against {want:?}"),
        }
        assert_eq!(shape(&remote), shape(&embedded), "{target:?}: the same records changed");
        assert_eq!(dump(&remote), dump(&embedded), "{target:?}: the same graph");
        if forgotten >= 6 {
            break;
        }
    }
    assert!(forgotten >= 3, "{forgotten} entities forgotten");
    let tombstones = shape(&remote).into_iter().filter(|s| s.3).count();
    assert!(tombstones > 0 || log(&remote).iter().any(|e| e.1 == RecordKind::Forget));
}

#[test]
fn a_forget_of_an_entity_whose_log_moved_under_it_reads_again_and_rewrites_every_record() {
    let dir = TempDir::new().unwrap();
    let event = |id: &str, at: &str| {
        json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
            "session_id": "ms-light", "agent_id": "planner", "trace_id": "t-light",
            "entities": [{"name": "lantern", "entity_type": "concept"},
                         {"name": "harbour", "entity_type": "concept"}],
            "payload": {"text": "checked the light"}})
    };
    // Another writer names the entity between the forget's read and its append.
    let (_, mut remote) = pair_of(&dir, Some(event("late-1", "2026-11-30T09:00:00Z")), true);
    let record = validate_all(&remote, &[event("early-1", "2026-11-30T08:00:00Z")]);
    remote.ingest_batch(&record, Projection::Inline, true).unwrap().remove(0).unwrap();
    let entity = ForgetTarget { kind: ForgetKind::Entity, id: "concept:lantern".into() };
    let report = remote.forget(&entity, "ops", None).unwrap();
    // The first append was refused unchanged; the second read found both events.
    assert_eq!(report.redacted, 2, "{report:?}");
    let entries = log(&remote);
    let rewritten: Vec<&str> = entries
        .iter()
        .filter(|(_, kind, _, body)| *kind == RecordKind::Event && body.contains("harbour"))
        .map(|(_, _, id, _)| id.as_str())
        .collect();
    assert_eq!(rewritten, ["early-1", "late-1"]);
    assert!(entries.iter().all(|(_, _, _, body)| !body.contains("lantern")), "{entries:?}");
    assert_eq!(entries.iter().filter(|e| e.1 == RecordKind::Forget).count(), 1);
    let reader = remote.owner_reader().unwrap();
    assert!(reader.node(&NodeKey::new("Entity", "concept:lantern")).unwrap().is_none());
    assert!(reader.node(&NodeKey::new("Entity", "concept:harbour")).unwrap().is_some());
}
