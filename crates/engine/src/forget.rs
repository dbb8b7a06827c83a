//! Forgetting (issue 6, item 5): an event, a session or a memory is removed from the stored data,
//! not only hidden, and a `forget` record in the log is the trace.
//!
//! `Engine::forget` works in one write transaction with SQLite's `secure_delete` on:
//! 1. it finds the target's log records (the event's record; every event of a session, archived
//!    ones included; a memory's record, its outcomes and the links and votes that name it);
//! 2. it appends the forget record (target, who, why, when and how many records were redacted,
//!    never the content) and replaces each found record's body with a tombstone naming it
//!    (`Log::redact`: the one, documented exception to the log's immutability);
//! 3. it removes each embedding from the vector index's list blob, projects the forget record
//!    (the nodes, their edges, vectors and full-text entries, summaries over them, mentions;
//!    see `ctxgraph_projection`'s `forget.rs`) and rebuilds the lexical index, so no posting of
//!    the content survives;
//! 4. after commit it checkpoints and truncates the write-ahead log, so the old pages are gone
//!    from the files.
//!
//! A tombstone projects to nothing, so `reproject` keeps the target forgotten.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use ctxgraph_embed::Embedder;

use ctxgraph_ann::without_members;
use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_ontology::{
    ForgetKind, ForgetRecord, RecordBody, RecordKind, Schema, Tombstone, entity_digest,
    redacted_id, validate,
};
use ctxgraph_projection::{enrich_event, project};
use ctxgraph_store::{EmbeddedWrite, GraphReader, GraphStore, Log, LogEntry, LogReader};
use serde_json::Value;

use crate::engine::{Engine, decode, fold_lagging};
use crate::error::Error;
use crate::view::Snapshot;

mod entity;
mod remote;

/// What to forget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgetTarget {
    /// Event, session, entity or memory.
    pub kind: ForgetKind,
    /// Its id.
    pub id: String,
}

/// The forget record of `target` (never its content) and its id.
fn forget_record(
    schema: &Schema,
    limits: &ctxgraph_ontology::Limits,
    target: &ForgetTarget,
    by: &str,
    reason: Option<&str>,
    at: &str,
    redacted: usize,
) -> Result<(ctxgraph_ontology::ValidRecord, String), Error> {
    // An entity's id is its name: the record holds a digest of it.
    let target_id = match target.kind {
        ForgetKind::Entity => entity_digest(&target.id),
        ForgetKind::Event | ForgetKind::Session | ForgetKind::Memory => target.id.clone(),
    };
    let mut json = serde_json::json!({
        "record_type": "forget",
        "target": {"kind": target.kind.as_str(), "id": target_id},
        "by": by,
        "at": at,
        "redacted": redacted,
    });
    if let Some(reason) = reason {
        json["reason"] = reason.into();
    }
    let record = validate(schema, limits, &json.to_string())?;
    let RecordBody::Forget(forget) = record.body() else {
        return Err(Error::Corruption { position: 0, reason: "forget record".into() });
    };
    let forget_id = forget.forget_id.clone();
    Ok((record, forget_id))
}

/// What a forget did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgetReport {
    /// What was forgotten (as asked: for an entity, its id, which the record holds as a digest).
    pub target: ForgetTarget,
    /// The forget record's id.
    pub forget_id: String,
    /// Its log position.
    pub position: u64,
    /// Log records whose bodies were replaced by tombstones.
    pub redacted: u64,
}

/// One entry of the forget audit: what was forgotten, when and by whom, without the content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgotten {
    /// The forget record's log position.
    pub position: u64,
    /// The forget record (it never holds the content).
    pub record: ForgetRecord,
}

impl Engine {
    /// Forget `target`: redact its log records, remove everything derived from them and append
    /// a forget record naming the target, `by` (a principal name) and `reason`.
    ///
    /// An unknown target (or one already forgotten) is [`Error::UnknownForgetTarget`] and
    /// changes nothing; so is an agent entity ([`Error::ForgetEntityRequired`]: every event
    /// of the agent names it). See [`Engine::forget_many`].
    pub fn forget(
        &mut self,
        target: &ForgetTarget,
        by: &str,
        reason: Option<&str>,
    ) -> Result<ForgetReport, Error> {
        let mut reports = self.forget_many(std::slice::from_ref(target), by, reason)?;
        reports.pop().ok_or(Error::Corruption { position: 0, reason: "no forget report".into() })
    }

    /// Forget every target in one transaction, one forget record each, in the order given:
    /// the cost of purging the indexes is paid once for the whole batch.
    ///
    /// Every target must exist when the call starts, or nothing changes
    /// ([`Error::UnknownForgetTarget`] names the first that does not); a repeated target is
    /// forgotten once. After the commit the store file is rewritten (`VACUUM`), which needs
    /// free disk space of about the file's size; if that fails the forget stands and the error
    /// is [`Error::ForgetRewrite`]. A target whose records an earlier target of the batch already redacted
    /// (an event of a session forgotten before it) gets its forget record with `redacted: 0`.
    ///
    /// On a remote store that runs it ([`ctxgraph_store::RemoteStore::forgets`]) there is no
    /// transaction: each target's forget record and tombstones are appended together, the graph
    /// is folded through them in this call and the server rewrites its persistence (see
    /// `forget/remote.rs`); an entity then leaves the graph in one more transaction of the
    /// store, which starts stages 2 and 3 over when a rewrite changed text they indexed. A
    /// forget on a remote store that does not run it is refused ([`Error::BackendUnsupported`]),
    /// and so is an entity's on one that does not run that.
    pub fn forget_many(
        &mut self,
        targets: &[ForgetTarget],
        by: &str,
        reason: Option<&str>,
    ) -> Result<Vec<ForgetReport>, Error> {
        Ok(self.forget_many_timed(targets, by, reason)?.0)
    }

    /// [`Engine::forget_many`], with the time each phase took (for `ctxgraph bench forget`).
    pub fn forget_many_timed(
        &mut self,
        targets: &[ForgetTarget],
        by: &str,
        reason: Option<&str>,
    ) -> Result<(Vec<ForgetReport>, ForgetTimings), Error> {
        let mut seen = BTreeSet::new();
        let targets: Vec<&ForgetTarget> =
            targets.iter().filter(|t| seen.insert((t.kind, t.id.as_str()))).collect();
        if let crate::backend::Backend::Remote(store) = &self.backend {
            let out = remote::forget_many(
                store.as_ref(),
                &self.schema,
                &self.options.limits,
                &targets,
                by,
                reason,
            );
            // Whatever failed, the log may have changed: caches must not keep what went.
            self.caches.clear();
            return out;
        }
        let mut timings = ForgetTimings::default();
        let started = Instant::now();
        let at = crate::knowledge::now();
        // An entity's events may need new embeddings: load the model before the transaction.
        let embedder = match targets.iter().any(|t| t.kind == ForgetKind::Entity) {
            true => Some(self.embedder()?),
            false => None,
        };
        let cx = Forgetter { schema: &self.schema, limits: self.options().limits, embedder };
        let mut w = self.backend.embedded_mut("forget")?.begin_write()?;
        // The graph must be current: the targets' nodes are found there.
        fold_lagging(&self.schema, &mut w, usize::MAX)?;
        for target in &targets {
            if !exists(&self.schema, &w, target)? {
                return Err(Error::UnknownForgetTarget {
                    kind: target.kind.as_str(),
                    id: target.id.clone(),
                });
            }
        }
        w.secure_delete(true)?;
        let mut purge = Purge::default();
        let mut reports = Vec::with_capacity(targets.len());
        for target in targets {
            reports.push(cx.forget_one(&mut w, target, by, reason, &at, &mut purge)?);
        }
        timings.records_us = micros(started);
        cx.purge(&mut w, purge, &mut timings)?;
        if let Some(last) = reports.last() {
            w.set_projected_through(last.position)?;
        }
        w.secure_delete(false)?;
        let t = Instant::now();
        w.commit()?;
        timings.commit_us = micros(t);
        let t = Instant::now();
        // The forget is durable now: caches must not keep what it removed, whatever follows,
        // in this engine or in those sharing its caches.
        self.caches.clear();
        self.backend
            .embedded("forget")?
            .vacuum()
            .map_err(|source| Error::ForgetRewrite { source })?;
        timings.vacuum_us = micros(t);
        Ok((reports, timings))
    }
}

/// What forgetting needs of the engine while the store is borrowed for writing.
struct Forgetter<'a> {
    schema: &'a Schema,
    limits: ctxgraph_ontology::Limits,
    /// Loaded when the batch forgets an entity.
    embedder: Option<Arc<dyn Embedder>>,
}

impl Forgetter<'_> {
    fn forget_one(
        &self,
        w: &mut EmbeddedWrite<'_>,
        target: &ForgetTarget,
        by: &str,
        reason: Option<&str>,
        at: &str,
        purge: &mut Purge,
    ) -> Result<ForgetReport, Error> {
        let mut plan = entity::EntityPlan::default();
        let (records, candidates) = match target.kind {
            ForgetKind::Event => {
                let entry = live(w.get(RecordKind::Event, &target.id)?);
                (entry.into_iter().collect(), vec![NodeKey::new("Event", &target.id)])
            }
            ForgetKind::Session => session_records(w, &target.id)?,
            ForgetKind::Memory => memory_records(self.schema, w, &target.id)?,
            ForgetKind::Entity => {
                plan = entity::entity_plan(self.schema, w, &target.id)?;
                let mut keys = vec![NodeKey::new("Entity", &target.id)];
                keys.extend(plan.events.iter().map(|e| NodeKey::new("Event", &e.event_id)));
                (Vec::new(), keys)
            }
        };
        let redacted = records.len() + plan.about.len() + plan.names.len();
        let (record, forget_id) =
            forget_record(self.schema, &self.limits, target, by, reason, at, redacted)?;
        let position = match w.append(&record, at)? {
            ctxgraph_store::Appended::New(p) => p,
            ctxgraph_store::Appended::Duplicate(_) => {
                return Err(Error::UnknownForgetTarget {
                    kind: target.kind.as_str(),
                    id: target.id.clone(),
                });
            }
        };
        // Nodes whose embedding and full-text entry may go with the target: the targets, the
        // summaries over them, the entities, facts, goals and topics next to them. Their
        // indexed text is read now, while their records are still there.
        for key in with_neighbours(w, candidates)? {
            if let Some((nid, Some(list))) = w.vector_list(&key)? {
                purge.vectors.push((key.clone(), nid, list));
            }
            if let Some(nid) = w.node_nid(&key)?
                && let Some(text) = indexed_text(self.schema, w, &key)?
            {
                purge.texts.push((key, nid, text));
            }
        }
        for entry in &records {
            let tombstone =
                Tombstone { kind: entry.kind, id: entry.id.clone(), forget_id: forget_id.clone() };
            w.redact(entry.position, &tombstone.to_json())?;
        }
        // Records about an entity often spell it in their ids (a claim's id holds its subject):
        // their tombstones keep a digest instead.
        for entry in &plan.about {
            let id = redacted_id(entry.kind, &entry.id);
            let tombstone =
                Tombstone { kind: entry.kind, id: id.clone(), forget_id: forget_id.clone() };
            w.redact_as(entry.position, &id, &tombstone.to_json())?;
        }
        for (entry, rewritten) in &plan.names {
            w.redact(entry.position, rewritten.canonical())?;
        }
        project(self.schema, w, position, &record)?;
        if target.kind == ForgetKind::Entity {
            let key = NodeKey::new("Entity", &target.id);
            ctxgraph_projection::forget_entity(self.schema, w, &key, &plan.events)?;
            self.reenrich(w, &plan, purge)?;
        }
        Ok(ForgetReport { target: target.clone(), forget_id, position, redacted: redacted as u64 })
    }

    /// Enrich the rewritten events again (their importance counts their entities; their text
    /// holds their tool): new properties, and a new embedding and full-text entry when the text
    /// changed; likewise the slot values the forgotten entity shared with others.
    fn reenrich(
        &self,
        w: &mut EmbeddedWrite<'_>,
        plan: &entity::EntityPlan,
        purge: &mut Purge,
    ) -> Result<(), Error> {
        let mut changed = Vec::new();
        for (node, text) in entity::reenriched_events(self.schema, plan, &mut |k| Ok(w.node(k)?))? {
            w.put_node(&node)?;
            if let Some(text) = text {
                changed.push((node.key, text));
            }
        }
        // A slot value another entity still holds names its holders: it loses this one.
        let shared: Vec<(NodeKey, String)> = purge
            .texts
            .iter()
            .filter(|(key, _, _)| key.label == "SlotValue")
            .map(|(key, _, old)| (key.clone(), old.clone()))
            .collect();
        for (key, old) in shared {
            let Some(node) = w.node(&key)? else { continue };
            if let Some(text) = crate::indexed::indexed_text(self.schema, &*w, &*w, &node)?
                && text != old
            {
                changed.push((key, text));
            }
        }
        if changed.is_empty() {
            return Ok(());
        }
        let Some(embedder) = &self.embedder else {
            return Err(Error::Corruption { position: 0, reason: "no embedder loaded".into() });
        };
        let texts: Vec<&str> = changed.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed(&texts)?;
        for ((key, text), vector) in changed.iter().zip(vectors) {
            if let Some((nid, Some(list))) = w.vector_list(key)? {
                purge.stale.insert((list, nid));
            }
            w.put_vector(key, &vector)?;
            w.put_text(key, text)?;
        }
        purge.rebuild_lexical = true;
        Ok(())
    }

    /// What a batch of forgets leaves to the indexes: the vectors of deleted nodes leave the
    /// vector index's lists, and the full-text and lexical indexes lose their terms.
    fn purge(
        &self,
        w: &mut EmbeddedWrite<'_>,
        purge: Purge,
        timings: &mut ForgetTimings,
    ) -> Result<(), Error> {
        let t = Instant::now();
        let mut gone = purge.stale;
        for (key, nid, list) in purge.vectors {
            if !w.node_exists(&key)? {
                gone.insert((list, nid));
            }
        }
        drop_from_lists(w, &gone)?;
        timings.vectors_us = micros(t);
        let t = Instant::now();
        // A contentless full-text index only marks a deleted row: its terms stay in the segment
        // until the segment is merged, and nothing short of merging them all ('optimize')
        // reaches every segment that may hold them.
        w.purge_text_index()?;
        timings.full_text_us = micros(t);
        let t = Instant::now();
        if purge.rebuild_lexical {
            if w.text_index_build()?.is_some() {
                crate::text_index::rebuild(w)?;
            }
        } else {
            let mut docs = BTreeMap::new();
            for (key, nid, text) in purge.texts {
                if !w.node_exists(&key)? {
                    docs.insert(nid, text);
                }
            }
            crate::text_index::remove(w, &docs)?;
        }
        timings.lexical_us = micros(t);
        Ok(())
    }
}

/// Where the time of a forget went, in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ForgetTimings {
    /// Finding the targets' records, redacting them, projecting the forgets.
    pub records_us: u64,
    /// Dropping embeddings from the vector index's lists.
    pub vectors_us: u64,
    /// Merging the full-text index, which drops the deleted documents' terms.
    pub full_text_us: u64,
    /// Taking the documents out of the lexical index.
    pub lexical_us: u64,
    /// Committing (fsync).
    pub commit_us: u64,
    /// Rewriting the file and truncating the write-ahead log.
    pub vacuum_us: u64,
}

fn micros(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What the forgets of a batch leave for `Forgetter::purge`.
#[derive(Default)]
struct Purge {
    /// Nodes that had a vector in a list: `(key, nid, list)`.
    vectors: Vec<(NodeKey, i64, u32)>,
    /// List members whose vector was replaced: `(list, nid)`.
    stale: BTreeSet<(u32, i64)>,
    /// Nodes with a full-text entry, their node id and the text it was made from.
    texts: Vec<(NodeKey, i64, String)>,
    /// Whether a document's text changed in place, so the lexical index must be rebuilt.
    rebuild_lexical: bool,
}

/// The text a node was full-text indexed with, as enrichment, consolidation and the memory
/// index write it (event, entity, summary, memory, and fact, sentence, slot value and receipt
/// as `indexed` writes them); `None` for a node without one.
fn indexed_text(schema: &Schema, w: &dyn ReadBoth, key: &NodeKey) -> Result<Option<String>, Error> {
    let Some(node) = w.node(key)? else { return Ok(None) };
    let prop = |name: &str| node.props.get(name).and_then(Value::as_str).map(str::to_owned);
    Ok(match key.label.as_str() {
        // Only an enriched event is indexed.
        "Event" if node.props.contains_key("summary") => {
            let Some(entry) = live(w.get(RecordKind::Event, &key.id)?) else { return Ok(None) };
            let record = decode(schema, &entry)?;
            if let RecordBody::Event(e) = record.body() { Some(enrich_event(e).text) } else { None }
        }
        "Entity" => match (prop("name"), prop("entity_type")) {
            (Some(name), Some(t)) => Some(format!("{name} {t}")),
            _ => None,
        },
        "Summary" => prop("content"),
        ctxgraph_projection::MEMORY => {
            crate::memory::MemoryView::from_node(&node).map(|m| m.text())
        }
        _ => crate::indexed::indexed_text(schema, w, w, &node)?,
    })
}

/// Whether a forget target exists (and is not forgotten already).
fn exists(schema: &Schema, w: &EmbeddedWrite<'_>, target: &ForgetTarget) -> Result<bool, Error> {
    Ok(match target.kind {
        ForgetKind::Event => live(w.get(RecordKind::Event, &target.id)?).is_some(),
        ForgetKind::Session => !session_records(w, &target.id)?.0.is_empty(),
        ForgetKind::Memory => !memory_records(schema, w, &target.id)?.0.is_empty(),
        ForgetKind::Entity => w.node_exists(&NodeKey::new("Entity", &target.id))?,
    })
}

/// A log entry unless it is a tombstone already.
fn live(entry: Option<LogEntry>) -> Option<LogEntry> {
    entry.filter(|e| Tombstone::parse(&e.body).is_none())
}

type Found = (Vec<LogEntry>, Vec<NodeKey>);

/// Every event record of a session: those in the graph's session order and those retention
/// archived (found by their records).
fn session_records(w: &dyn ReadBoth, session: &str) -> Result<Found, Error> {
    let mut ids: BTreeSet<String> =
        w.session_events(session, usize::MAX)?.into_iter().map(|s| s.event_id).collect();
    for archived in w.archived(None, usize::MAX)? {
        if archived.key.label != "Event" || ids.contains(&archived.key.id) {
            continue;
        }
        if let Some(entry) = live(w.get(RecordKind::Event, &archived.key.id)?) {
            let body: Value = serde_json::from_str(&entry.body).unwrap_or(Value::Null);
            if body.get("session_id").and_then(Value::as_str) == Some(session) {
                ids.insert(archived.key.id);
            }
        }
    }
    let mut records = Vec::new();
    let mut keys = Vec::new();
    for id in ids {
        if let Some(entry) = live(w.get(RecordKind::Event, &id)?) {
            records.push(entry);
        }
        keys.push(NodeKey::new("Event", id));
    }
    Ok((records, keys))
}

/// A memory's record, its outcomes, and the links and votes that name it.
fn memory_records(
    schema: &ctxgraph_ontology::Schema,
    w: &dyn ReadBoth,
    memory: &str,
) -> Result<Found, Error> {
    let Some(entry) = live(w.get(RecordKind::Memory, memory)?) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut records = vec![entry];
    let mut keys = vec![NodeKey::new(ctxgraph_projection::MEMORY, memory)];
    for kind in [RecordKind::MemoryOutcome, RecordKind::MemoryLink, RecordKind::MemoryLinkVote] {
        for entry in w.read_kind(kind)? {
            let names = match decode(schema, &entry)?.body() {
                RecordBody::MemoryOutcome(o) if o.memory_id == memory => {
                    keys.push(NodeKey::new(ctxgraph_projection::OUTCOME, &o.outcome_id));
                    true
                }
                RecordBody::MemoryLink(l) => l.from == memory || l.to == memory,
                RecordBody::MemoryLinkVote(v) => v.from == memory || v.to == memory,
                // Only the three kinds read above, and a redacted one, come back.
                RecordBody::MemoryOutcome(_)
                | RecordBody::Redacted(_)
                | RecordBody::Event(_)
                | RecordBody::Edge(_)
                | RecordBody::Schema(_)
                | RecordBody::EntityDecision(_)
                | RecordBody::Memory(_)
                | RecordBody::Slots(_)
                | RecordBody::Fact(_)
                | RecordBody::FactRetraction(_)
                | RecordBody::Document(_)
                | RecordBody::Forget(_)
                | RecordBody::Receipt(_)
                | RecordBody::Access(_) => false,
            };
            if names {
                records.push(entry);
            }
        }
    }
    Ok((records, keys))
}

// Log and graph reads of one transaction (or of one remote read).
use ctxgraph_store::StoreRead as ReadBoth;

/// The candidates and the nodes one edge away that a forget may delete with them (summaries,
/// entities, topics, memory sessions, outcomes).
fn with_neighbours(w: &dyn ReadBoth, keys: Vec<NodeKey>) -> Result<BTreeSet<NodeKey>, Error> {
    let mut out = BTreeSet::new();
    for key in keys {
        for edge in w.edges_of(&key, None, Direction::Both)? {
            for end in [edge.key.from, edge.key.to] {
                if matches!(
                    end.label.as_str(),
                    "Summary"
                        | "Entity"
                        | "Topic"
                        | "MemorySession"
                        | "Outcome"
                        | "Fact"
                        | "Goal"
                        | "SlotValue"
                ) {
                    // Day summaries over the session summaries.
                    if end.label == "Summary" {
                        for up in w.edges_of(&end, Some("SUMMARIZES"), Direction::In)? {
                            out.insert(up.key.from);
                        }
                    }
                    out.insert(end);
                }
            }
        }
        out.insert(key);
    }
    Ok(out)
}

/// Remove the members `(list, nid)` from the vector index's list blobs.
fn drop_from_lists(
    w: &mut ctxgraph_store::EmbeddedWrite<'_>,
    gone: &BTreeSet<(u32, i64)>,
) -> Result<(), Error> {
    let Some((_, dim)) = w.embedding_model()? else { return Ok(()) };
    let lists: BTreeSet<u32> = gone.iter().map(|(l, _)| *l).collect();
    for list in lists {
        let Some(blob) = w.ann_list(list)? else { continue };
        w.put_ann_list(list, &without_members(dim, &blob, |nid| gone.contains(&(list, nid)))?)?;
    }
    Ok(())
}

impl Snapshot<'_> {
    /// The forget audit: every forget record, oldest first — what was forgotten, when, by whom,
    /// why and how many records were redacted. The content is not in it: it is gone.
    pub(crate) fn forgotten(&self) -> Result<Vec<Forgotten>, Error> {
        let mut out = Vec::new();
        for entry in self.read.read_kind(RecordKind::Forget)? {
            if let RecordBody::Forget(f) = decode(self.schema(), &entry)?.body() {
                out.push(Forgotten { position: entry.position, record: f.clone() });
            }
        }
        Ok(out)
    }
}
