//! `Engine::forget` on a remote store (the scale-out backend), where no transaction spans the
//! log and the graph:
//! 1. the graph is folded to the log's head ([`RemoteStore::fold_through`]), since a session's
//!    events are found in its session order, as on the embedded store;
//! 2. per target, its records are found as on the embedded store, and the forget record is
//!    appended with their tombstones in one atomic step ([`RemoteStore::forget_append`]),
//!    refused unchanged if the log moved since the records were read (they are read again);
//! 3. the graph is folded through the last forget record: its projection deletes the nodes, as
//!    the embedded store's does in its transaction (the workers would fold it too; folding here
//!    means the call returns only once the graph no longer holds them);
//! 4. the server rewrites its persistence ([`RemoteStore::rewrite_persistence`]), so the
//!    commands that carried the content leave the disk.
//!
//! Until step 2 returns, the log holds the content; until step 3, the graph; until step 4, the
//! server's append-only file. A crash between steps leaves the forget record with its
//! tombstones (never one without the other); the workers fold it, and the next forget's
//! rewrite clears the file. Entities are refused: their forget rewrites records naming them
//! and re-enriches events, which only the embedded store does.

use std::time::Instant;

use ctxgraph_ontology::{ForgetKind, Limits, RecordKind, Schema, Tombstone};
use ctxgraph_store::{Appended, ForgetAppend, Redaction, RemoteStore, StoreError, StoreRead};

use super::{
    ForgetReport, ForgetTarget, ForgetTimings, forget_record, live, memory_records, micros,
    session_records,
};
use crate::error::Error;

/// How many times one target's records are read again when another writer moved the log
/// between the read and the append.
const ATTEMPTS: usize = 16;

/// [`crate::Engine::forget_many_timed`] on a remote store; `targets` are distinct. The
/// timings: `records_us` finding and appending, `commit_us` the fold through the forget
/// records, `vacuum_us` the persistence rewrite.
pub(super) fn forget_many(
    store: &dyn RemoteStore,
    schema: &Schema,
    limits: &Limits,
    targets: &[&ForgetTarget],
    by: &str,
    reason: Option<&str>,
) -> Result<(Vec<ForgetReport>, ForgetTimings), Error> {
    let unsupported = |operation: &str| Error::BackendUnsupported {
        operation: operation.to_owned(),
        location: store.location(),
    };
    if !store.forgets() {
        return Err(unsupported("forget"));
    }
    if targets.iter().any(|t| t.kind == ForgetKind::Entity) {
        return Err(unsupported("forget of an entity"));
    }
    let mut timings = ForgetTimings::default();
    let started = Instant::now();
    let at = crate::knowledge::now();
    // Every target must exist before anything is written, as on the embedded store.
    let head = store.begin_read()?.head()?;
    store.fold_through(head)?;
    {
        let read = store.begin_read()?;
        for target in targets {
            if find(schema, &*read, target)?.is_empty() {
                return Err(Error::UnknownForgetTarget {
                    kind: target.kind.as_str(),
                    id: target.id.clone(),
                });
            }
        }
    }
    let mut reports = Vec::with_capacity(targets.len());
    for target in targets {
        reports.push(forget_one(store, schema, limits, target, by, reason, &at)?);
    }
    timings.records_us = micros(started);
    let t = Instant::now();
    if let Some(last) = reports.last() {
        store.fold_through(last.position)?;
    }
    timings.commit_us = micros(t);
    let t = Instant::now();
    store.rewrite_persistence().map_err(|source| Error::ForgetRewrite { source })?;
    timings.vacuum_us = micros(t);
    Ok((reports, timings))
}

/// The live records a forget of `target` redacts (none when an earlier target took them).
fn find(
    schema: &Schema,
    read: &dyn StoreRead,
    target: &ForgetTarget,
) -> Result<Vec<ctxgraph_store::LogEntry>, Error> {
    Ok(match target.kind {
        ForgetKind::Event => live(read.get(RecordKind::Event, &target.id)?).into_iter().collect(),
        ForgetKind::Session => session_records(read, &target.id)?.0,
        ForgetKind::Memory => memory_records(schema, read, &target.id)?.0,
        // Refused before anything is read.
        ForgetKind::Entity => Vec::new(),
    })
}

fn forget_one(
    store: &dyn RemoteStore,
    schema: &Schema,
    limits: &Limits,
    target: &ForgetTarget,
    by: &str,
    reason: Option<&str>,
    at: &str,
) -> Result<ForgetReport, Error> {
    for _ in 0..ATTEMPTS {
        // The records are found in the graph as of `head`: the append is refused if the log
        // has moved past it.
        let head = store.begin_read()?.head()?;
        store.fold_through(head)?;
        let records = find(schema, &*store.begin_read()?, target)?;
        let (record, forget_id) =
            forget_record(schema, limits, target, by, reason, at, records.len())?;
        let redactions: Vec<Redaction> = records
            .iter()
            .map(|e| Redaction {
                position: e.position,
                read: e.body.clone(),
                tombstone: Tombstone {
                    kind: e.kind,
                    id: e.id.clone(),
                    forget_id: forget_id.clone(),
                }
                .to_json(),
            })
            .collect();
        match store.forget_append(&record, at, head, &redactions)? {
            ForgetAppend::Done(Appended::New(position)) => {
                return Ok(ForgetReport {
                    target: target.clone(),
                    forget_id,
                    position,
                    redacted: records.len() as u64,
                });
            }
            ForgetAppend::Done(Appended::Duplicate(_)) => {
                return Err(Error::UnknownForgetTarget {
                    kind: target.kind.as_str(),
                    id: target.id.clone(),
                });
            }
            ForgetAppend::Changed { .. } => {}
        }
    }
    Err(Error::Store(StoreError::Remote {
        backend: "remote",
        detail: format!(
            "{}: forgetting {} `{}`: other writers changed the log each of the {ATTEMPTS} times \
             its records were read; nothing was written for it (retry when writes are fewer)",
            store.location(),
            target.kind.as_str(),
            target.id
        ),
    }))
}
