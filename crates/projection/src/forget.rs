//! Projection of a `forget` record: whatever of its target is still in the graph goes.
//!
//! The engine replaces the target's log records with tombstones in the same transaction, and a
//! tombstone projects to nothing, so on a reprojection this fold finds nothing left to remove; on
//! the live graph it removes the target as if its records had never been folded:
//! - an event: its node with its edges, vector and full-text entry, its place in the session's
//!   FOLLOWS order (the neighbours are re-linked), the summaries built over
//!   it (stage 3 rebuilds them), and its mentions: each entity it referenced counts one mention
//!   fewer, takes `first_seen` / `last_seen` from the events still referencing it, and goes when
//!   nothing mentions it any more;
//! - a session: each of its events so;
//! - a memory: its node, its outcomes, its links, and its share of its topic (the topic's count,
//!   its newest decision; a topic with no memory left goes);
//! - an entity: nothing here; see [`forget_entity`].
//!
//! Edges that other records make to the target (a child event's CAUSED_BY, an explicit edge, a
//! later memory's `supersedes`) are parked for it again, as they are on a fold where the target
//! never arrived, so reprojection finds the same graph.
//!
//! An entity's display name keeps its earliest spelling even when that spelling came from a
//! forgotten event (spellings differ in case and spacing only, since the id is the normalised
//! name); a reprojection takes it from the remaining mentions.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_ontology::{EventRecord, ForgetKind, ForgetRecord, Schema};
use ctxgraph_store::ProjectionGraph;
use serde_json::Value;

use crate::memory::{MEMORY, OUTCOME};
use crate::{Projected, ProjectionError, Writer, remove_event};

pub(crate) fn project_forget(w: &mut Writer<'_>, f: &ForgetRecord) -> Result<(), ProjectionError> {
    match f.kind {
        ForgetKind::Event => forget_event(w, &f.target_id),
        ForgetKind::Session => {
            for slot in w.graph().session_events(&f.target_id, usize::MAX)? {
                forget_event(w, &slot.event_id)?;
            }
            Ok(())
        }
        ForgetKind::Memory => forget_memory(w, &f.target_id),
        // The record names a digest of the entity: the engine removes it with
        // [`forget_entity`] in the same transaction.
        ForgetKind::Entity => Ok(()),
    }
}

/// Nanoseconds of a stored timestamp; stored timestamps were validated on the way in.
pub(crate) fn instant(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).ok().and_then(|d| d.timestamp_nanos_opt()).unwrap_or(0)
}

fn text(node: &ctxgraph_ontology::graph::Node, name: &str) -> String {
    node.props.get(name).and_then(Value::as_str).unwrap_or_default().to_owned()
}

fn forget_event(w: &mut Writer<'_>, event_id: &str) -> Result<(), ProjectionError> {
    let key = NodeKey::new("Event", event_id);
    let Some(node) = w.graph().node(&key)? else { return Ok(()) };
    drop_own_pending(w, &key)?;
    let mut entities = BTreeSet::new();
    let mut summaries = BTreeSet::new();
    let mut repark = Vec::new();
    for edge in w.graph().edges_of(&key, None, Direction::Both)? {
        let outgoing = edge.key.from == key;
        match edge.key.edge_type.as_str() {
            "REFERENCES" if outgoing => {
                entities.insert(edge.key.to.clone());
            }
            "SUMMARIZES" => {
                summaries.insert(edge.key.from.clone());
            }
            // The event's own record made these; they go with it.
            "CAUSED_BY" | "REFERENCES" | "FOLLOWS" if outgoing => {}
            // What other records say about the event (a child's CAUSED_BY, an explicit edge)
            // waits for it again, as it would on a fold of a log where it never arrived.
            _ if is_recorded(w, &edge.key.edge_type) => repark.push(edge),
            _ => {}
        }
    }
    let (session, at) = (text(&node, "session_id"), text(&node, "occurred_at"));
    let schema = w.schema;
    remove_event(schema, w.graph(), event_id, &session, instant(&at))?;
    for edge in repark {
        w.graph().put_pending(&key, &edge)?;
    }
    remove_summaries(w, summaries)?;
    for entity in entities {
        unmention(w, &entity, instant(&at))?;
    }
    Ok(())
}

/// Drop the parked edges the forgotten event's own record made (its CAUSED_BY to a parent not
/// yet arrived, or one forgotten before it): a fold without the record never parks them.
fn drop_own_pending(w: &mut Writer<'_>, key: &NodeKey) -> Result<(), ProjectionError> {
    let own = |e: &ctxgraph_ontology::graph::Edge| {
        &e.key.from == key && matches!(e.key.edge_type.as_str(), "CAUSED_BY" | "REFERENCES")
    };
    let waiting: BTreeSet<NodeKey> = w
        .graph()
        .pending_edges()?
        .into_iter()
        .filter(|(_, e)| own(e))
        .map(|(waiting_for, _)| waiting_for)
        .collect();
    for waiting_for in waiting {
        for edge in w.graph().take_pending(&waiting_for)? {
            if !own(&edge) {
                w.graph().put_pending(&waiting_for, &edge)?;
            }
        }
    }
    Ok(())
}

/// Whether edges of this type come from records (explicit or a record's own field), not from
/// enrichment or consolidation.
fn is_recorded(w: &Writer<'_>, edge_type: &str) -> bool {
    // A receipt's USED_INPUT is derived (only receipt records write it) but made by a record.
    edge_type == "USED_INPUT"
        || (!matches!(edge_type, "SIMILAR_TO" | "SUMMARIZES" | "SAME_AS" | "RELATED_TO")
            && w.schema().edge_type(edge_type).is_some_and(|t| !t.derived))
}

/// Delete summaries and the summaries over them (a day summary over a session summary).
fn remove_summaries(
    w: &mut Writer<'_>,
    mut todo: BTreeSet<NodeKey>,
) -> Result<(), ProjectionError> {
    while let Some(key) = todo.pop_first() {
        for edge in w.graph().edges_of(&key, Some("SUMMARIZES"), Direction::In)? {
            todo.insert(edge.key.from);
        }
        w.graph().delete_node(&key)?;
    }
    Ok(())
}

/// One mention fewer of `entity` by an event at `at_ns`: the count drops, the first and last
/// sightings come from the events still referencing it, and an entity nothing mentions or
/// links any more goes.
///
/// The sightings are read again only when the forgotten event was the first or the last: an
/// entity named by thousands of events (an agent, a tool) is not rescanned for each forget.
fn unmention(w: &mut Writer<'_>, entity: &NodeKey, at_ns: i64) -> Result<(), ProjectionError> {
    let Some(mut node) = w.graph().node(entity)? else { return Ok(()) };
    let count = node.props.get("mention_count").and_then(Value::as_i64).unwrap_or(1) - 1;
    if count <= 0 {
        // No record mentions it any more, so a fold without the forgotten ones never creates
        // it: it goes, with what stage 3 inferred about it; what other records say about it
        // (an explicit edge, a person's decision on a pair) waits for it, as on that fold.
        let keep: Vec<_> = w
            .graph()
            .edges_of(entity, None, Direction::Both)?
            .into_iter()
            .filter(|e| is_recorded(w, &e.key.edge_type) || e.props.contains_key("decision"))
            .collect();
        w.graph().delete_node(entity)?;
        for edge in keep {
            w.graph().put_pending(entity, &edge)?;
        }
        return Ok(());
    }
    node.props.insert("mention_count".into(), count.max(0).into());
    let bound = |name: &str| instant(&text(&node, name));
    if at_ns == bound("first_seen") || at_ns == bound("last_seen") {
        let mut seen: Option<((i64, String), (i64, String))> = None;
        for edge in w.graph().edges_of(entity, Some("REFERENCES"), Direction::In)? {
            let Some(event) = w.graph().node(&edge.key.from)? else { continue };
            let at = text(&event, "occurred_at");
            let this = (instant(&at), at);
            seen = Some(match seen {
                None => (this.clone(), this),
                Some((first, last)) => (first.min(this.clone()), last.max(this)),
            });
        }
        if let Some(((_, first), (_, last))) = seen {
            node.props.insert("first_seen".into(), first.into());
            node.props.insert("last_seen".into(), last.into());
        }
    }
    w.put_node(&node, false)
}

fn forget_memory(w: &mut Writer<'_>, memory_id: &str) -> Result<(), ProjectionError> {
    let key = NodeKey::new(MEMORY, memory_id);
    let Some(_) = w.graph().node(&key)? else { return Ok(()) };
    let mut repark = Vec::new();
    let mut topics = BTreeSet::new();
    let mut outcomes = BTreeSet::new();
    let mut sessions = BTreeSet::new();
    for edge in w.graph().edges_of(&key, None, Direction::Both)? {
        match edge.key.edge_type.as_str() {
            "ABOUT" => {
                topics.insert(edge.key.to.clone());
            }
            "IN_SESSION" => {
                sessions.insert(edge.key.to.clone());
            }
            "OUTCOME_OF" if edge.key.from.label == OUTCOME => {
                outcomes.insert(edge.key.from.clone());
            }
            // Another memory's record names this one (`supersedes`, `implements`): on a fold
            // where this memory never arrived, that link waits for it.
            "SUPERSEDES" | "IMPLEMENTS"
                if edge.key.to == key
                    && edge.props.get("rule").and_then(Value::as_str) == Some("explicit")
                    && edge.props.get("reason").and_then(Value::as_str)
                        == Some(&edge.key.edge_type.to_ascii_lowercase()) =>
            {
                repark.push(edge.clone());
            }
            _ => {}
        }
    }
    w.graph().delete_node(&key)?;
    for edge in repark {
        w.graph().put_pending(&key, &edge)?;
    }
    for outcome in outcomes {
        w.graph().delete_node(&outcome)?;
    }
    for topic in topics {
        retopic(w, &topic)?;
    }
    // A memory session exists for its memories only.
    for session in sessions {
        if w.graph().edges_of(&session, None, Direction::Both)?.is_empty() {
            w.graph().delete_node(&session)?;
        }
    }
    Ok(())
}

/// Recount a topic's memories and find its newest decision again; a topic with none left goes.
fn retopic(w: &mut Writer<'_>, topic: &NodeKey) -> Result<(), ProjectionError> {
    let Some(mut node) = w.graph().node(topic)? else { return Ok(()) };
    let about = w.graph().edges_of(topic, Some("ABOUT"), Direction::In)?;
    if about.is_empty() {
        w.graph().delete_node(topic)?;
        return Ok(());
    }
    let mut newest: Option<(i64, String, String)> = None;
    for edge in &about {
        let Some(memory) = w.graph().node(&edge.key.from)? else { continue };
        if text(&memory, "kind") != "decision" {
            continue;
        }
        let at = text(&memory, "created_at");
        let this = (instant(&at), edge.key.from.id.clone(), at);
        if newest.as_ref().is_none_or(|n| (this.0, &this.1) > (n.0, &n.1)) {
            newest = Some(this);
        }
    }
    node.props.insert("memory_count".into(), (about.len() as i64).into());
    node.props.remove("latest_decision");
    node.props.remove("latest_decision_at");
    if let Some((_, id, at)) = newest {
        node.props.insert("latest_decision".into(), id.into());
        node.props.insert("latest_decision_at".into(), at.into());
    }
    w.put_node(&node, false)
}

/// Take a forgotten entity out of the live graph, after the engine tombstoned the records about
/// it and rewrote the ones naming it (`rewritten` holds the events among them, as rewritten).
///
/// A `forget` record of an entity names a digest, not the entity (the id is the name), so
/// projecting it removes nothing: the engine calls this in the same transaction instead, and a
/// reprojection finds nothing naming the entity. What goes:
/// - the entity node with every edge touching it (REFERENCES, MENTIONS, HAS_SLOT, INSTANCE_OF,
///   SAME_AS and RELATED_TO, explicit edges, a receipt's USED_INPUT), its vector and its
///   full-text entry, and any edge parked for it or from it;
/// - the facts with it as subject or object, its goals, and slot values no other entity has;
/// - the summaries over the events that named it (stage 3 rebuilds them);
/// - on each rewritten event, the `tool_name` or `user_id` that named it.
pub fn forget_entity(
    schema: &Schema,
    graph: &mut dyn ProjectionGraph,
    entity: &NodeKey,
    rewritten: &[EventRecord],
) -> Result<(), ProjectionError> {
    let mut w = Writer { schema, graph, done: Projected::default() };
    let mut doomed = BTreeSet::new();
    let mut slot_values = BTreeSet::new();
    let mut summaries = BTreeSet::new();
    for edge in w.graph().edges_of(entity, None, Direction::Both)? {
        match (edge.key.edge_type.as_str(), edge.key.to == *entity) {
            ("SUBJECT" | "OBJECT" | "GOAL_OF", true) => {
                doomed.insert(edge.key.from.clone());
            }
            ("HAS_SLOT", false) => {
                slot_values.insert(edge.key.to.clone());
            }
            ("REFERENCES", true) => {
                for s in w.graph().edges_of(&edge.key.from, Some("SUMMARIZES"), Direction::In)? {
                    summaries.insert(s.key.from);
                }
            }
            _ => {}
        }
    }
    for event in rewritten {
        let key = NodeKey::new("Event", &event.event_id);
        let Some(mut node) = w.graph().node(&key)? else { continue };
        let mut changed = false;
        for (name, value) in [("tool_name", &event.tool_name), ("user_id", &event.user_id)] {
            if value.is_none() {
                changed |= node.props.remove(name).is_some();
            }
        }
        if changed {
            w.put_node(&node, false)?;
        }
    }
    doomed.insert(entity.clone());
    for key in &doomed {
        w.graph().delete_node(key)?;
    }
    for value in slot_values {
        if w.graph().edges_of(&value, Some("HAS_SLOT"), Direction::In)?.is_empty() {
            w.graph().delete_node(&value)?;
            doomed.insert(value);
        }
    }
    remove_summaries(&mut w, summaries)?;
    // Parked edges made by the redacted records: waiting for a doomed node, or from or to one.
    let touches = |e: &ctxgraph_ontology::graph::Edge| {
        doomed.contains(&e.key.from) || doomed.contains(&e.key.to)
    };
    let waits: BTreeSet<NodeKey> = w
        .graph()
        .pending_edges()?
        .into_iter()
        .filter(|(wait, e)| doomed.contains(wait) || touches(e))
        .map(|(wait, _)| wait)
        .collect();
    for wait in waits {
        for edge in w.graph().take_pending(&wait)? {
            if !doomed.contains(&wait) && !touches(&edge) {
                w.graph().put_pending(&wait, &edge)?;
            }
        }
    }
    Ok(())
}
