//! The checks of an incoming record against the graph (an entity decision naming an existing
//! entity, a memory record naming a saved memory, a slot naming a declared type, …), in one
//! place for every backend: the embedded store runs them in its write transaction, a remote
//! store against the graph its workers have folded plus the log records they have not.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{RecordBody, RecordKind, ValidRecord, Violation, entity_id};
use ctxgraph_projection::mentions;
use ctxgraph_store::GraphReader;

use crate::error::Error;

/// Whether any of `records` is checked against the graph (so the graph must be current for
/// it): an entity decision, a memory record, a fact retraction, a slots or receipt record.
pub(crate) fn decides(records: &[ValidRecord]) -> bool {
    records.iter().any(|r| {
        matches!(r.kind(), RecordKind::EntityDecision | RecordKind::FactRetraction)
            || crate::memory::names_memories(r.body())
            || matches!(r.body(), RecordBody::Slots(_) | RecordBody::Receipt(_))
    })
}

/// What records written before the graph folded them create, which a later record may name:
/// the earlier records of a deferred batch, or a remote log's records its workers have not
/// folded yet.
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// Entities mentioned (ids), and events (`event\0{id}`, which a receipt may cite).
    mentioned: BTreeSet<String>,
    /// Memories saved.
    saved: BTreeSet<String>,
    /// Types and checklists declared.
    declared: BTreeSet<NodeKey>,
    /// Facts claimed, which a retraction may name.
    claimed: BTreeSet<String>,
}

impl Earlier {
    /// Note what `body` creates.
    pub(crate) fn note(&mut self, body: &RecordBody) {
        match body {
            RecordBody::Event(e) => {
                self.mentioned
                    .extend(mentions(e).into_iter().map(|m| entity_id(m.entity_type, m.name)));
                self.mentioned.insert(format!("event\u{0}{}", e.event_id));
            }
            RecordBody::Slots(s) => {
                crate::slots::created(s, &mut self.mentioned, &mut self.declared);
            }
            RecordBody::Memory(m) => {
                self.saved.insert(m.memory_id.clone());
            }
            RecordBody::Fact(f) => {
                self.claimed.insert(f.fact_id.clone());
            }
            RecordBody::Edge(_)
            | RecordBody::Schema(_)
            | RecordBody::EntityDecision(_)
            | RecordBody::MemoryOutcome(_)
            | RecordBody::MemoryLink(_)
            | RecordBody::MemoryLinkVote(_)
            | RecordBody::FactRetraction(_)
            | RecordBody::Document(_)
            | RecordBody::Forget(_)
            | RecordBody::Redacted(_)
            | RecordBody::Receipt(_)
            | RecordBody::Access(_) => {}
        }
    }
}

/// Check `record` against `graph` and what `earlier` records create; `Some` is the refusal
/// (nothing of the record may be written). A record that passes is noted in `earlier` when
/// later records cannot see it in the graph: always for a saved memory, and for the rest when
/// the batch is not projected as it goes (`inline` false) and names things (`decides`).
pub(crate) fn check(
    graph: &dyn GraphReader,
    record: &ValidRecord,
    inline: bool,
    decides: bool,
    earlier: &mut Earlier,
) -> Result<Option<Error>, Error> {
    let refused = match record.body() {
        RecordBody::EntityDecision(d) => {
            crate::resolve::missing_entities(graph, d, &earlier.mentioned)?
        }
        RecordBody::Slots(s) => {
            crate::slots::missing_refs(graph, s, &earlier.mentioned, &earlier.declared)?
        }
        RecordBody::Memory(_)
        | RecordBody::MemoryOutcome(_)
        | RecordBody::MemoryLink(_)
        | RecordBody::MemoryLinkVote(_) => {
            crate::memory::missing_memories(graph, record.body(), &earlier.saved)?
        }
        RecordBody::FactRetraction(r) => {
            crate::knowledge::unknown_fact(graph, &r.fact_id, &earlier.claimed)?
        }
        RecordBody::Receipt(r) => crate::receipt::missing_inputs(graph, r, &earlier.mentioned)?,
        // Only `Engine::forget` writes a forget record, with its redactions.
        RecordBody::Forget(_) | RecordBody::Redacted(_) => Some(vec![Violation::new(
            "$.record_type",
            Some(&serde_json::Value::String(record.kind().as_str().into())),
            "forget.engine_only",
            "a forget is written by `ctxgraph forget` (Engine::forget), which redacts what it names",
        )]),
        RecordBody::Event(_)
        | RecordBody::Edge(_)
        | RecordBody::Schema(_)
        | RecordBody::Fact(_)
        | RecordBody::Document(_)
        | RecordBody::Access(_) => None,
    };
    if let Some(violations) = refused {
        return Ok(Some(Error::Validation(violations.into())));
    }
    let note = match record.body() {
        RecordBody::Memory(_) => true,
        RecordBody::Slots(_) => !inline,
        RecordBody::Event(_) | RecordBody::Fact(_) => decides && !inline,
        RecordBody::Edge(_)
        | RecordBody::Schema(_)
        | RecordBody::EntityDecision(_)
        | RecordBody::MemoryOutcome(_)
        | RecordBody::MemoryLink(_)
        | RecordBody::MemoryLinkVote(_)
        | RecordBody::FactRetraction(_)
        | RecordBody::Document(_)
        | RecordBody::Forget(_)
        | RecordBody::Redacted(_)
        | RecordBody::Receipt(_)
        | RecordBody::Access(_) => false,
    };
    if note {
        earlier.note(record.body());
    }
    Ok(None)
}
