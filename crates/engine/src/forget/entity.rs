//! Forgetting an entity: which log records are about it (tombstoned) and which name it among
//! other things (rewritten without the reference), and the re-enrichment of rewritten events.
//!
//! Events that mention the entity are found through its REFERENCES in-edges and, for events
//! retention archived, through their records; every other kind that can name an entity (edges,
//! entity decisions, instance_of, slots, goals, facts and their retractions, documents,
//! receipts) is scanned by kind. `ctxgraph_ontology::entity_use` decides per record.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_ontology::{
    EntityUse, EventRecord, RecordBody, RecordKind, Schema, ValidRecord, entity_use,
};
use ctxgraph_store::LogEntry;

use super::{ReadBoth, live};
use crate::engine::decode;
use crate::error::Error;

/// The records a forget of one entity changes.
#[derive(Default)]
pub(super) struct EntityPlan {
    /// Records about the entity: their bodies become tombstones and their ids digests.
    pub(super) about: Vec<LogEntry>,
    /// Records naming it among other things, with their rewritten form.
    pub(super) names: Vec<(LogEntry, ValidRecord)>,
    /// The rewritten events among them, as rewritten.
    pub(super) events: Vec<EventRecord>,
}

/// Kinds scanned whole for records about the entity (events are found through the graph).
const SCANNED: [RecordKind; 8] = [
    RecordKind::Edge,
    RecordKind::EntityDecision,
    RecordKind::InstanceOf,
    RecordKind::Slot,
    RecordKind::Goal,
    RecordKind::Fact,
    RecordKind::Document,
    RecordKind::Receipt,
];

pub(super) fn entity_plan(
    schema: &Schema,
    w: &dyn ReadBoth,
    entity_id: &str,
) -> Result<EntityPlan, Error> {
    let key = NodeKey::new("Entity", entity_id);
    let mut events: BTreeSet<String> = w
        .edges_of(&key, Some("REFERENCES"), Direction::In)?
        .into_iter()
        .map(|e| e.key.from.id)
        .collect();
    for archived in w.archived(None, usize::MAX)? {
        if archived.key.label == "Event" {
            events.insert(archived.key.id);
        }
    }
    let mut plan = EntityPlan::default();
    let mut entries = Vec::new();
    for id in &events {
        entries.extend(live(w.get(RecordKind::Event, id)?));
    }
    for kind in SCANNED {
        entries.extend(w.read_kind(kind)?.into_iter().filter(|e| live(Some(e.clone())).is_some()));
    }
    let mut facts = BTreeSet::new();
    for entry in entries {
        let record = decode(schema, &entry)?;
        match entity_use(&record, entity_id) {
            EntityUse::Unrelated => {}
            EntityUse::About => {
                if let RecordBody::Fact(f) = record.body() {
                    facts.insert(f.fact_id.clone());
                }
                plan.about.push(entry);
            }
            EntityUse::Names(rewritten) => {
                if let RecordBody::Event(e) = rewritten.body() {
                    plan.events.push(e.clone());
                }
                plan.names.push((entry, *rewritten));
            }
            EntityUse::Required(field) => {
                return Err(Error::ForgetEntityRequired {
                    id: entity_id.to_owned(),
                    kind: entry.kind.as_str(),
                    record: entry.id,
                    field,
                });
            }
        }
    }
    if !facts.is_empty() {
        for entry in w.read_kind(RecordKind::FactRetraction)? {
            if let RecordBody::FactRetraction(r) = decode(schema, &entry)?.body()
                && facts.contains(&r.fact_id)
            {
                plan.about.push(entry);
            }
        }
    }
    plan.about.sort_by_key(|e| e.position);
    plan.names.sort_by_key(|(e, _)| e.position);
    Ok(plan)
}

/// The rewritten events of `plan` that stage 2 enriched (read with `node`), with their
/// keywords, summary and importance recomputed from the rewritten record, for the caller to
/// write; with each, its new indexed text when it differs from the old record's (the vectors
/// and full-text entries made from the old one must then be redone). An event stage 2 has
/// not reached is left out: a later enrichment reads the rewrite.
pub(super) fn reenriched_events(
    schema: &Schema,
    plan: &EntityPlan,
    node: &mut dyn FnMut(&NodeKey) -> Result<Option<ctxgraph_ontology::graph::Node>, Error>,
) -> Result<Vec<(ctxgraph_ontology::graph::Node, Option<String>)>, Error> {
    let mut out = Vec::new();
    for (old, new) in &plan.names {
        let (RecordBody::Event(new), Ok(old)) = (new.body(), decode(schema, old)) else {
            continue;
        };
        let RecordBody::Event(old) = old.body() else { continue };
        let Some(mut found) = node(&NodeKey::new("Event", &new.event_id))? else { continue };
        if !found.props.contains_key("summary") {
            continue;
        }
        let x = ctxgraph_projection::enrich_event(new);
        found.props.insert(
            "keywords".into(),
            serde_json::Value::Array(
                x.keywords.iter().cloned().map(serde_json::Value::String).collect(),
            ),
        );
        found.props.insert("summary".into(), x.summary.clone().into());
        found.props.insert("importance_score".into(), x.importance.into());
        let changed = (ctxgraph_projection::enrich_event(old).text != x.text).then_some(x.text);
        out.push((found, changed));
    }
    Ok(out)
}
