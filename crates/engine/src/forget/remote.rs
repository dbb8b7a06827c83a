//! `Engine::forget` on a remote store (the scale-out backend), where no transaction spans the
//! log and the graph:
//! 1. the graph is folded to the log's head ([`RemoteStore::fold_through`]), since a session's
//!    events are found in its session order, as on the embedded store;
//! 2. per target, its records are found as on the embedded store (an entity's by
//!    `entity_plan`: tombstones for the records about it, with digests for ids, and rewrites of
//!    the records naming it among other things), and the forget record is appended with their
//!    new bodies in one atomic step ([`RemoteStore::forget_append`]), refused unchanged if the
//!    log moved since the records were read (they are read again);
//! 3. the graph is folded through the last forget record: its projection deletes the nodes, as
//!    the embedded store's does in its transaction (the workers would fold it too; folding here
//!    means the call returns only once the graph no longer holds them);
//! 4. an entity, which its forget record names only by a digest, leaves the graph in one more
//!    transaction ([`RemoteStore::forget_in_graph`]): `forget_entity` as on the embedded store,
//!    the rewritten events' stage-2 properties recomputed from their new records, the deleted
//!    nodes' stage-2 data dropped with them; when a rewrite changed the indexed text of a node
//!    stage 2 had indexed (an enriched event whose tool it was, a slot value it shared), the
//!    same transaction starts stages 2 and 3 over, so that no vector, document or index made
//!    from the old text survives, and the workers (`worker --stage enrich`, then
//!    `--stage consolidate`) rebuild them from the rewritten log; so it does when stage 2 has
//!    run but not yet through the rewritten records (a chunk in flight may hold the old ones:
//!    the reset makes its commit write nothing);
//! 5. the server rewrites its persistence ([`RemoteStore::rewrite_persistence`]), so the
//!    commands that carried the content leave the disk.
//!
//! Until step 2 returns, the log holds the content; until step 4, the graph; until step 5, the
//! server's append-only file. A crash between steps leaves the forget record with its
//! tombstones and rewrites (never one without the other); the workers fold it, and the next
//! forget's rewrite clears the file. A crash before step 4 leaves the entity node in the
//! graph: forgetting the entity again (it still exists there) redacts nothing more and runs
//! step 4.

use std::time::Instant;

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_ontology::{ForgetKind, Limits, RecordKind, Schema, Tombstone, redacted_id};
use ctxgraph_projection::forget_entity;
use ctxgraph_store::{
    Appended, ForgetAppend, GraphForget, ProjectionGraph, Redaction, RemoteStore, StoreError,
    StoreRead,
};

use super::entity::{EntityPlan, entity_plan};
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
    if targets.iter().any(|t| t.kind == ForgetKind::Entity) && !store.forgets_entities() {
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
            let exists = match target.kind {
                ForgetKind::Entity => read.node_exists(&entity_key(target))?,
                ForgetKind::Event | ForgetKind::Session | ForgetKind::Memory => {
                    !find(schema, &*read, target)?.is_empty()
                }
            };
            if !exists {
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
        // Planned by `forget_entity_one`.
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
    if target.kind == ForgetKind::Entity {
        return forget_entity_one(store, schema, limits, target, by, reason, at);
    }
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
                id: None,
            })
            .collect();
        let redacted = records.len() as u64;
        let appended = store.forget_append(&record, at, head, &redactions)?;
        if let Some(position) = appended_at(appended, target)? {
            return Ok(ForgetReport { target: target.clone(), forget_id, position, redacted });
        }
    }
    Err(log_moved(store, target))
}

/// Where a forget record was appended; `None` when the log moved under the read (read
/// again), and a repeated forget record (its target was forgotten already) is an unknown
/// target.
fn appended_at(appended: ForgetAppend, target: &ForgetTarget) -> Result<Option<u64>, Error> {
    match appended {
        ForgetAppend::Done(Appended::New(position)) => Ok(Some(position)),
        ForgetAppend::Done(Appended::Duplicate(_)) => {
            Err(Error::UnknownForgetTarget { kind: target.kind.as_str(), id: target.id.clone() })
        }
        ForgetAppend::Changed { .. } => Ok(None),
    }
}

/// The error of a forget whose records other writers kept changing.
fn log_moved(store: &dyn RemoteStore, target: &ForgetTarget) -> Error {
    Error::Store(StoreError::Remote {
        backend: "remote",
        detail: format!(
            "{}: forgetting {} `{}`: other writers changed the log each of the {ATTEMPTS} times \
             its records were read; nothing was written for it (retry when writes are fewer)",
            store.location(),
            target.kind.as_str(),
            target.id
        ),
    })
}

fn entity_key(target: &ForgetTarget) -> NodeKey {
    NodeKey::new("Entity", &target.id)
}

/// Forget one entity: its records tombstoned or rewritten with the forget record in one
/// append, the graph folded through it, then the entity taken out of the graph.
fn forget_entity_one(
    store: &dyn RemoteStore,
    schema: &Schema,
    limits: &Limits,
    target: &ForgetTarget,
    by: &str,
    reason: Option<&str>,
    at: &str,
) -> Result<ForgetReport, Error> {
    for _ in 0..ATTEMPTS {
        let head = store.begin_read()?.head()?;
        store.fold_through(head)?;
        let plan = entity_plan(schema, &*store.begin_read()?, &target.id)?;
        let redacted = plan.about.len() + plan.names.len();
        let (record, forget_id) = forget_record(schema, limits, target, by, reason, at, redacted)?;
        let mut redactions = Vec::with_capacity(redacted);
        // Records about the entity often spell it in their ids (a claim's id holds its
        // subject): their tombstones take a digest for an id, as on the embedded store.
        for entry in &plan.about {
            let id = redacted_id(entry.kind, &entry.id);
            let tombstone =
                Tombstone { kind: entry.kind, id: id.clone(), forget_id: forget_id.clone() };
            redactions.push(Redaction {
                position: entry.position,
                read: entry.body.clone(),
                tombstone: tombstone.to_json(),
                id: Some(id),
            });
        }
        for (entry, rewritten) in &plan.names {
            redactions.push(Redaction {
                position: entry.position,
                read: entry.body.clone(),
                tombstone: rewritten.canonical().to_owned(),
                id: None,
            });
        }
        let appended = store.forget_append(&record, at, head, &redactions)?;
        if let Some(position) = appended_at(appended, target)? {
            store.fold_through(position)?;
            out_of_graph(store, schema, &entity_key(target), &plan)?;
            let redacted = redacted as u64;
            return Ok(ForgetReport { target: target.clone(), forget_id, position, redacted });
        }
    }
    Err(log_moved(store, target))
}

/// Step 4 of the module docs: the entity out of the graph, run again while a worker moved the
/// graph or stage 2 under it.
fn out_of_graph(
    store: &dyn RemoteStore,
    schema: &Schema,
    entity: &NodeKey,
    plan: &EntityPlan,
) -> Result<(), Error> {
    // An enrichment chunk in flight may have read the old records: one that starts after
    // stage 2's checkpoint and covers a rewritten record must not commit after this.
    let last = plan.names.iter().map(|(e, _)| e.position).max().unwrap_or(0);
    for _ in 0..ATTEMPTS {
        let mut failed = None;
        let applied = store.forget_in_graph(&mut |w| {
            // Read once the transaction watches stage 2's checkpoint: a chunk committed after
            // this read makes the transaction apply nothing.
            let enriched = match store.begin_read().and_then(|r| r.enriched_through()) {
                Ok(enriched) => enriched,
                Err(e) => {
                    failed = Some(e.into());
                    return Ok(GraphForget::Abort);
                }
            };
            match graph_part(schema, w, entity, plan) {
                Ok(GraphForget::Apply) if enriched > 0 && enriched < last => {
                    Ok(GraphForget::ApplyAndResetEnrichment)
                }
                Ok(end) => Ok(end),
                Err(e) => {
                    failed = Some(e);
                    Ok(GraphForget::Abort)
                }
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if applied {
            return Ok(());
        }
    }
    Err(Error::Store(StoreError::Remote {
        backend: "remote",
        detail: format!(
            "{}: the graph moved under {ATTEMPTS} forgets of an entity in a row; its records \
             are rewritten already: forget it again once the workers have caught up (rule: \
             forget.graph_moved)",
            store.location()
        ),
    }))
}

/// The graph's part of an entity's forget, over the transaction `w`: `forget_entity`, then
/// the rewritten events' stage-2 properties from their new records (as the embedded store's
/// re-enrichment writes them); whether stages 2 and 3 must start over, because an indexed
/// text changed.
fn graph_part(
    schema: &Schema,
    w: &mut dyn ProjectionGraph,
    entity: &NodeKey,
    plan: &EntityPlan,
) -> Result<GraphForget, Error> {
    // A slot value the entity shares with others stays, and its indexed text names its
    // holders: it loses this one.
    let shared: BTreeSet<NodeKey> = w
        .edges_of(entity, Some("HAS_SLOT"), Direction::Out)?
        .into_iter()
        .map(|e| e.key.to)
        .collect();
    forget_entity(schema, w, entity, &plan.events)?;
    let mut reset = false;
    for value in &shared {
        reset |= w.node_exists(value)?;
    }
    for (node, changed) in super::entity::reenriched_events(schema, plan, &mut |k| Ok(w.node(k)?))?
    {
        w.put_node_owned(node)?;
        reset |= changed.is_some();
    }
    Ok(if reset { GraphForget::ApplyAndResetEnrichment } else { GraphForget::Apply })
}
