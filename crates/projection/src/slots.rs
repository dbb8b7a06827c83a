//! Projection of types, slots, checklists and goals (seed 001).
//!
//! - `type`: a `Type` node.
//! - `instance_of`: `INSTANCE_OF` from the entity to the type.
//! - `slot`: the shared `SlotValue` node of `(slot, normalised value)` and the entity's
//!   `HAS_SLOT` edge to it, folded by [`merge_has_slot`]: confidence is the maximum over every
//!   record, sources their sorted union. The `SlotValue`'s display `value` is the smallest
//!   spelling. All three rules are commutative and idempotent, so the edge is the same whatever
//!   order the records arrive in.
//! - `checklist`: a `Checklist` node, one `SlotSpec` node per spec (with its `position`) and
//!   `REQUIRES` edges.
//! - `goal`: a `Goal` node, `GOAL_OF` to its user and `INFLUENCES` to each checklist.
//!
//! A record that names an entity by `{name, entity_type, at}` folds as a mention of it at `at`,
//! with the rule events follow (`event::mention_entity`): created when missing, first/last seen
//! and mention count updated when present.

use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_ontology::{
    ChecklistRecord, EntityTarget, GoalRecord, InstanceOfRecord, SlotRecord, SlotsRecord,
    TypeRecord, joined_id,
};
use serde_json::Value;

use crate::event::mention_entity;
use crate::{ProjectionError, Writer};

pub(crate) fn project_slots(
    w: &mut Writer<'_>,
    record: &SlotsRecord,
) -> Result<(), ProjectionError> {
    match record {
        SlotsRecord::Type(t) => type_node(w, t),
        SlotsRecord::InstanceOf(i) => instance_of(w, i),
        SlotsRecord::Slot(s) => slot(w, s),
        SlotsRecord::Checklist(c) => checklist(w, c),
        SlotsRecord::Goal(g) => goal(w, g),
    }
}

/// Put `node`, completing the edges that waited for it when it is new.
fn put(w: &mut Writer<'_>, node: &Node) -> Result<(), ProjectionError> {
    let new = !w.graph().node_exists(&node.key)?;
    w.put_node(node, new)
}

/// The entity's key; a `{name, entity_type, at}` target is folded in as a mention first.
/// Whether the entity is known to exist comes back too, to skip a lookup.
fn entity(w: &mut Writer<'_>, target: &EntityTarget) -> Result<(NodeKey, bool), ProjectionError> {
    let key = NodeKey::new("Entity", target.entity_id());
    match target {
        EntityTarget::Existing { .. } => Ok((key, false)),
        EntityTarget::Create { name, entity_type, at } => {
            let existing = w.graph().node(&key)?;
            let new = existing.is_none();
            let node = mention_entity(existing, key.clone(), name, entity_type, at);
            w.put_node(&node, new)?;
            Ok((key, true))
        }
    }
}

fn type_node(w: &mut Writer<'_>, t: &TypeRecord) -> Result<(), ProjectionError> {
    let mut p = Properties::new();
    p.insert("type_id".into(), t.type_id.clone().into());
    p.insert("name".into(), t.name.clone().into());
    if let Some(d) = &t.description {
        p.insert("description".into(), d.clone().into());
    }
    put(w, &Node { key: NodeKey::new("Type", &t.type_id), props: p })
}

fn instance_of(w: &mut Writer<'_>, i: &InstanceOfRecord) -> Result<(), ProjectionError> {
    let (from, known) = entity(w, &i.entity)?;
    let props = Properties::new();
    let key = w.schema().edge_key("INSTANCE_OF", from, NodeKey::new("Type", &i.type_id), &props);
    w.edge_with_known_ends(Edge { key, props }, [known, false])
}

/// The id of the `SlotValue` node of a normalised slot label and normalised value.
pub fn slot_value_id(slot: &str, value_key: &str) -> String {
    joined_id(&[slot, value_key])
}

/// Fold one observation into a `HAS_SLOT` edge's properties (`None`: the first one).
///
/// `confidence = max(old, new)`; `sources` is the sorted set union; `slot` is the label. Both
/// rules are commutative, associative and idempotent: any order of the same observations gives
/// the same properties.
pub fn merge_has_slot(
    existing: Option<&Properties>,
    slot: &str,
    confidence: f64,
    source: Option<&str>,
) -> Properties {
    let old = existing.and_then(|p| p.get("confidence")).and_then(Value::as_f64);
    let mut sources: Vec<String> = existing
        .and_then(|p| p.get("sources"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(s) = source {
        sources.push(s.to_owned());
    }
    sources.sort();
    sources.dedup();
    let mut p = Properties::new();
    p.insert("slot".into(), slot.into());
    p.insert("confidence".into(), old.map_or(confidence, |o| o.max(confidence)).into());
    p.insert("sources".into(), sources.into());
    p
}

/// The shared `SlotValue` node of `(slot, normalised value)`, created when missing; it shows
/// the smallest spelling seen, so the display value does not depend on arrival order. A slot
/// record and a fact whose object is a slot value both name one this way.
pub(crate) fn slot_value_node(
    w: &mut Writer<'_>,
    slot: &str,
    value: &str,
) -> Result<NodeKey, ProjectionError> {
    let value_key = ctxgraph_ontology::normalize_name(value);
    let sv_key = NodeKey::new("SlotValue", slot_value_id(slot, &value_key));
    let existing = w.graph().node(&sv_key)?;
    let new = existing.is_none();
    let mut node = existing.unwrap_or_else(|| {
        let mut p = Properties::new();
        p.insert("slot_value_id".into(), sv_key.id.clone().into());
        p.insert("slot".into(), slot.into());
        p.insert("value".into(), value.into());
        p.insert("value_key".into(), value_key.into());
        Node { key: sv_key.clone(), props: p }
    });
    let shown = node.props.get("value").and_then(Value::as_str).unwrap_or_default();
    if value < shown {
        node.props.insert("value".into(), value.into());
    }
    w.put_node(&node, new)?;
    Ok(sv_key)
}

fn slot(w: &mut Writer<'_>, s: &SlotRecord) -> Result<(), ProjectionError> {
    let (from, known) = entity(w, &s.entity)?;
    let sv_key = slot_value_node(w, &s.slot, &s.value)?;

    let key = w.schema().edge_key("HAS_SLOT", from.clone(), sv_key, &Properties::new());
    let entity_exists = known || w.graph().node_exists(&from)?;
    // An edge waiting for its entity (only in an order the engine refuses, but the fold stays
    // commutative anyway) merges with the waiting copy.
    let old = if entity_exists {
        w.graph().edge(&key)?.map(|e| e.props)
    } else {
        w.graph().pending_for(&from)?.into_iter().find(|e| e.key == key).map(|e| e.props)
    };
    let props = merge_has_slot(old.as_ref(), &s.slot, s.confidence, s.source.as_deref());
    w.edge_with_known_ends(Edge { key, props }, [entity_exists, true])
}

fn checklist(w: &mut Writer<'_>, c: &ChecklistRecord) -> Result<(), ProjectionError> {
    let key = NodeKey::new("Checklist", &c.checklist_id);
    let mut p = Properties::new();
    p.insert("checklist_id".into(), c.checklist_id.clone().into());
    p.insert("name".into(), c.name.clone().into());
    if let Some(d) = &c.description {
        p.insert("description".into(), d.clone().into());
    }
    p.insert("slot_count".into(), c.slots.len().into());
    put(w, &Node { key: key.clone(), props: p })?;
    for (position, spec) in c.slots.iter().enumerate() {
        let id = joined_id(&[&c.checklist_id, &spec.name]);
        let mut p = Properties::new();
        p.insert("slot_spec_id".into(), id.clone().into());
        p.insert("checklist_id".into(), c.checklist_id.clone().into());
        p.insert("name".into(), spec.name.clone().into());
        p.insert("expect_labels".into(), spec.expect_labels.clone().into());
        p.insert("relation".into(), spec.relation.as_str().into());
        p.insert("required".into(), spec.required.into());
        p.insert("cardinality".into(), spec.cardinality.as_str().into());
        p.insert("position".into(), position.into());
        if spec.cost != 1.0 {
            p.insert("cost".into(), spec.cost.into());
        }
        let spec_key = NodeKey::new("SlotSpec", id);
        put(w, &Node { key: spec_key.clone(), props: p })?;
        let props = Properties::new();
        let edge_key = w.schema().edge_key("REQUIRES", key.clone(), spec_key, &props);
        w.edge_with_known_ends(Edge { key: edge_key, props }, [true, true])?;
    }
    Ok(())
}

fn goal(w: &mut Writer<'_>, g: &GoalRecord) -> Result<(), ProjectionError> {
    let (user, known) = entity(w, &g.user)?;
    let key = NodeKey::new("Goal", &g.goal_id);
    let mut p = Properties::new();
    p.insert("goal_id".into(), g.goal_id.clone().into());
    p.insert("name".into(), g.name.clone().into());
    p.insert("user_id".into(), user.id.clone().into());
    for (name, value) in [("description", &g.description), ("horizon", &g.horizon)] {
        if let Some(v) = value {
            p.insert(name.into(), v.clone().into());
        }
    }
    if let Some(priority) = g.priority {
        p.insert("priority".into(), priority.into());
    }
    if !g.prefers.is_empty() {
        let slots: Vec<&str> = g.prefers.iter().map(|x| x.slot.as_str()).collect();
        let values: Vec<&str> = g.prefers.iter().map(|x| x.value.as_str()).collect();
        p.insert("prefer_slots".into(), slots.into());
        p.insert("prefer_values".into(), values.into());
    }
    put(w, &Node { key: key.clone(), props: p })?;
    let props = Properties::new();
    let edge_key = w.schema().edge_key("GOAL_OF", key.clone(), user, &props);
    w.edge_with_known_ends(Edge { key: edge_key, props }, [true, known])?;
    for checklist in &g.influences {
        let props = Properties::new();
        let to = NodeKey::new("Checklist", checklist);
        let edge_key = w.schema().edge_key("INFLUENCES", key.clone(), to, &props);
        w.edge_with_known_ends(Edge { key: edge_key, props }, [true, false])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(confidence: f64, sources: &[&str]) -> Properties {
        let mut p = Properties::new();
        p.insert("slot".into(), "genre".into());
        p.insert("confidence".into(), confidence.into());
        p.insert("sources".into(), sources.to_vec().into());
        p
    }

    #[test]
    fn has_slot_keeps_the_highest_confidence_and_every_source() {
        let first = merge_has_slot(None, "genre", 0.6, Some("imdb"));
        assert_eq!(first, props(0.6, &["imdb"]));
        let lower = merge_has_slot(Some(&first), "genre", 0.4, Some("blog"));
        assert_eq!(lower, props(0.6, &["blog", "imdb"]), "a lower confidence overwrites nothing");
        let higher = merge_has_slot(Some(&lower), "genre", 0.9, None);
        assert_eq!(higher, props(0.9, &["blog", "imdb"]));
        let again = merge_has_slot(Some(&higher), "genre", 0.9, Some("imdb"));
        assert_eq!(again, higher, "repeating an observation changes nothing");
    }
}
