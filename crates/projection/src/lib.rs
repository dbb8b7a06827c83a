//! ctxgraph's projection: a deterministic fold of log records into the property graph.
//!
//! Stage 1 of seed 000 ("EventProjection"):
//! - an `Event` node per event, with its `global_position` (log position);
//! - `FOLLOWS` from each event to the previous event of its session, by `occurred_at` then
//!   `event_id`, with `delta_ms`; a late event in the middle of a session re-links its neighbours;
//! - `CAUSED_BY` (mechanism `direct`) from an event to its `parent_event_id`; a child that arrives
//!   before its parent parks the edge until the parent arrives;
//! - `REFERENCES` from the event to its agent (role agent), tool (role instrument), user (role
//!   participant) and listed entities, with exact-match entity resolution on normalised name and
//!   type (`first_seen`, `last_seen`, `mention_count`).
//!
//! Explicit edge records are projected when both endpoints exist, parked until then.
//!
//! An entity decision record makes the `SAME_AS` edge of its pair decided (`decision.rs`): merged
//! (confidence 1.0) or rejected (confidence 0.0). A later decision on the pair replaces it.
//!
//! Decision-memory records (seed 003) become Memory, Topic, MemorySession and Outcome nodes and
//! their explicit links (`memory.rs`); automatic links are the engine's stage 3.
//! Types, slots, checklists and goals (seed 001) are projected by `slots.rs`: `Type`,
//! `SlotValue`, `Checklist`, `SlotSpec` and `Goal` nodes, with `HAS_SLOT` folded commutatively
//! (maximum confidence, union of sources).
//! Facts, fact retractions and documents are projected by `knowledge.rs` (its module docs give
//! the write-back policy: noisy-or confidence, accumulated sources, contradictions kept).
//! A decision receipt becomes its node and typed edges (`receipt.rs`).
//! An access record (a batch of reads) adds to its events' `access_count` and moves their
//! `last_accessed_at` forward (`access.rs`).
//! A forget record removes what remains of its target (`forget.rs`); a redacted record (a
//! tombstone) projects to nothing.
//!
//! # Determinism
//! The graph after any arrival order of a set of records equals the graph after in-order arrival,
//! except `global_position`, which is the arrival order itself. Every derived value is a
//! commutative function of the records: minima, maxima, counts, sums (an event's accesses) and
//! the session order. An entity's display `name` is the spelling of its earliest mention (ties:
//! the smallest spelling).
//! Entity decisions are the one exception besides `global_position`: the last in log order wins,
//! because a person's change of mind is ordered by when it was written.
//! The crate's `clippy.toml` forbids clocks and hash-ordered collections.

#![warn(missing_docs)]

mod access;
mod decision;
mod enrich;
mod event;
mod forget;
mod knowledge;
mod memory;
mod receipt;
mod slots;

pub use forget::forget_entity;
pub use knowledge::noisy_or;

pub use event::{Mention, mentions, remove_event};
pub use memory::{
    LINK_VOTE, MEMORY, MEMORY_SESSION, OUTCOME, TOPIC, link_edge_type, link_props, topic_id,
};
pub use receipt::RECEIPT;
pub use slots::{merge_has_slot, slot_value_id};

pub use enrich::{
    Enrichment, MAX_KEYWORDS, MAX_SUMMARY_CHARS, MAX_TEXT_CHARS, enrich_event, is_stop_word,
    telling_text,
};

use ctxgraph_ontology::graph::{Edge, Node, NodeKey};
use ctxgraph_ontology::{RecordBody, Schema, ValidRecord, Violation};
use ctxgraph_store::{ProjectionGraph, StoreError};

/// Why projecting a record failed. A valid record never fails on a healthy store; a failure aborts
/// the enclosing write transaction.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProjectionError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A node or edge the projection built breaks the schema.
    #[error("projection produced an invalid {what}: {}", .violations.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Invalid {
        /// The node or edge, displayed.
        what: String,
        /// Every rule broken.
        violations: Vec<Violation>,
    },
}

impl ProjectionError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            ProjectionError::Store(e) => e.code(),
            ProjectionError::Invalid { .. } => "projection.invalid",
        }
    }
}

/// What projecting one record changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Projected {
    /// Nodes written (created or updated).
    pub nodes: u32,
    /// Edges written.
    pub edges: u32,
    /// Edges parked for a missing endpoint.
    pub pending: u32,
}

/// Project one record at log `position` into `graph`.
pub fn project(
    schema: &Schema,
    graph: &mut dyn ProjectionGraph,
    position: u64,
    record: &ValidRecord,
) -> Result<Projected, ProjectionError> {
    let mut w = Writer { schema, graph, done: Projected::default() };
    match record.body() {
        RecordBody::Event(e) => event::project_event(&mut w, position, e)?,
        RecordBody::Edge(e) => {
            let edge = Edge {
                key: schema.edge_key(&e.edge_type, e.from.clone(), e.to.clone(), &e.props),
                props: e.props.clone(),
            };
            w.edge_when_ready(edge)?;
        }
        RecordBody::EntityDecision(d) => {
            w.edge_when_ready(decision::decided_edge(schema, position, d))?
        }
        RecordBody::Memory(m) => memory::project_memory(&mut w, position, m)?,
        RecordBody::MemoryOutcome(o) => memory::project_outcome(&mut w, position, o)?,
        RecordBody::MemoryLink(l) => memory::project_link(&mut w, l)?,
        RecordBody::MemoryLinkVote(v) => memory::project_vote(&mut w, v)?,
        RecordBody::Slots(s) => slots::project_slots(&mut w, s)?,
        RecordBody::Fact(f) => knowledge::project_fact(&mut w, position, f)?,
        RecordBody::FactRetraction(r) => knowledge::project_retraction(&mut w, r)?,
        RecordBody::Document(d) => knowledge::project_document(&mut w, d)?,
        RecordBody::Forget(f) => forget::project_forget(&mut w, f)?,
        RecordBody::Receipt(r) => receipt::project_receipt(&mut w, position, r)?,
        RecordBody::Access(a) => access::project_access(&mut w, a)?,
        // A redacted record says nothing any more; its forget record removes what it said.
        RecordBody::Redacted(_) => {}
        // A schema module changes what later records may say, not the graph.
        RecordBody::Schema(_) => {}
    }
    Ok(w.done)
}

/// Schema-checked writes with bookkeeping.
pub(crate) struct Writer<'a> {
    schema: &'a Schema,
    graph: &'a mut dyn ProjectionGraph,
    done: Projected,
}

impl Writer<'_> {
    /// Write `node`; when it is `new`, complete the edges that were waiting for it.
    pub(crate) fn put_node(&mut self, node: &Node, new: bool) -> Result<(), ProjectionError> {
        let violations = self.schema.check_node(node);
        if !violations.is_empty() {
            return Err(ProjectionError::Invalid {
                what: format!("node {}", node.key),
                violations,
            });
        }
        self.graph.put_node(node)?;
        self.done.nodes += 1;
        if new {
            for edge in self.graph.take_pending(&node.key)? {
                self.edge_when_ready(edge)?;
            }
        }
        Ok(())
    }

    /// [`Writer::put_node`], handing the node over to the store (no copy for its cache).
    pub(crate) fn put_node_owned(&mut self, node: Node, new: bool) -> Result<(), ProjectionError> {
        let violations = self.schema.check_node(&node);
        if !violations.is_empty() {
            return Err(ProjectionError::Invalid {
                what: format!("node {}", node.key),
                violations,
            });
        }
        let key = new.then(|| node.key.clone());
        self.graph.put_node_owned(node)?;
        self.done.nodes += 1;
        if let Some(key) = key {
            for edge in self.graph.take_pending(&key)? {
                self.edge_when_ready(edge)?;
            }
        }
        Ok(())
    }

    /// Write `edge` (checked against the schema on every write) if both endpoints exist; otherwise
    /// park it on the first missing endpoint.
    pub(crate) fn edge_when_ready(&mut self, edge: Edge) -> Result<(), ProjectionError> {
        self.edge_with_known_ends(edge, [false, false])
    }

    /// Like [`Writer::edge_when_ready`], skipping the existence check of endpoints the caller
    /// has just written (`known[0]`: source, `known[1]`: target).
    pub(crate) fn edge_with_known_ends(
        &mut self,
        edge: Edge,
        known: [bool; 2],
    ) -> Result<(), ProjectionError> {
        let violations = self.schema.check_edge(&edge);
        if !violations.is_empty() {
            return Err(ProjectionError::Invalid {
                what: format!("edge {}", edge.key),
                violations,
            });
        }
        for (end, known) in [&edge.key.from, &edge.key.to].into_iter().zip(known) {
            if !known && !self.graph.node_exists(end)? {
                let end: NodeKey = end.clone();
                self.graph.put_pending(&end, &edge)?;
                self.done.pending += 1;
                return Ok(());
            }
        }
        self.graph.put_edge(&edge)?;
        self.done.edges += 1;
        Ok(())
    }

    pub(crate) fn graph(&mut self) -> &mut dyn ProjectionGraph {
        &mut *self.graph
    }

    pub(crate) fn schema(&self) -> &Schema {
        self.schema
    }
}
