//! Stage-1 projection of one event: its node, session order, causal parent and entity references.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_ontology::{EventRecord, Schema, entity_id};
use ctxgraph_store::{ProjectionGraph, SessionSlot};
use serde_json::Value;

use crate::{Projected, ProjectionError, Writer};

const NANOS_PER_MS: i64 = 1_000_000;

pub(crate) fn project_event(
    w: &mut Writer<'_>,
    position: u64,
    e: &EventRecord,
) -> Result<(), ProjectionError> {
    let key = NodeKey::new("Event", &e.event_id);
    w.put_node_owned(event_node(&key, position, e), true)?;
    follows(w, e)?;
    if let Some(parent) = &e.parent_event_id {
        let mut props = Properties::new();
        props.insert("mechanism".into(), "direct".into());
        let edge_key =
            w.schema().edge_key("CAUSED_BY", key.clone(), NodeKey::new("Event", parent), &props);
        w.edge_when_ready(Edge { key: edge_key, props })?;
    }
    references(w, &key, e)
}

fn event_node(key: &NodeKey, position: u64, e: &EventRecord) -> Node {
    let mut p = Properties::new();
    p.insert("event_id".into(), e.event_id.clone().into());
    p.insert("event_type".into(), e.event_type.clone().into());
    p.insert("occurred_at".into(), e.occurred_at.clone().into());
    p.insert("session_id".into(), e.session_id.clone().into());
    p.insert("agent_id".into(), e.agent_id.clone().into());
    p.insert("trace_id".into(), e.trace_id.clone().into());
    p.insert("global_position".into(), position.into());
    for (name, value) in
        [("tool_name", &e.tool_name), ("user_id", &e.user_id), ("status", &e.status)]
    {
        if let Some(v) = value {
            p.insert(name.into(), v.clone().into());
        }
    }
    e.scope.node_properties(&mut p);
    // The payload stays in the log record only (found by `global_position`): readers hydrate it,
    // so it is stored once and forgetting it (a redaction) has one place to remove it from.
    Node { key: key.clone(), props: p }
}

/// Link the event into its session's time order: FOLLOWS points from an event to the one before
/// it. A late arrival between two linked events replaces their edge with two.
fn follows(w: &mut Writer<'_>, e: &EventRecord) -> Result<(), ProjectionError> {
    let slot = SessionSlot { at_ns: e.occurred_at_ns, event_id: e.event_id.clone() };
    // In-order arrival, the common case, extends the session: one lookup by key. Only a late
    // event needs the range search for both neighbours.
    let (prev, next) = match w.graph().session_tail(&e.session_id)? {
        None => (None, None),
        Some(tail) if tail < slot => (Some(tail), None),
        Some(_) => w.graph().session_neighbors(&e.session_id, &slot)?,
    };
    w.graph().put_session_slot(&e.session_id, &slot)?;
    if let (Some(p), Some(n)) = (&prev, &next) {
        let old = follows_edge(w, &e.session_id, n, p);
        w.graph().delete_edge(&old.key)?;
    }
    // Session order holds projected events only, so both ends of a FOLLOWS edge exist.
    if let Some(p) = &prev {
        let edge = follows_edge(w, &e.session_id, &slot, p);
        w.edge_with_known_ends(edge, [true, true])?;
    }
    if let Some(n) = &next {
        let edge = follows_edge(w, &e.session_id, n, &slot);
        w.edge_with_known_ends(edge, [true, true])?;
    }
    Ok(())
}

/// Take a projected event out of the graph (retention's archive tier): its node and every edge
/// touching it go, and its session's order closes over the gap, so the events before and after it
/// are linked by FOLLOWS as if it had never been projected. Whether the event was there.
pub fn remove_event(
    schema: &Schema,
    graph: &mut dyn ProjectionGraph,
    event_id: &str,
    session_id: &str,
    at_ns: i64,
) -> Result<bool, ProjectionError> {
    let key = NodeKey::new("Event", event_id);
    if !graph.delete_node(&key)? {
        return Ok(false);
    }
    let slot = SessionSlot { at_ns, event_id: event_id.to_owned() };
    let (prev, next) = graph.session_neighbors(session_id, &slot)?;
    graph.delete_session_slot(session_id, &slot)?;
    if let (Some(p), Some(n)) = (prev, next) {
        let mut w = Writer { schema, graph, done: Projected::default() };
        let edge = follows_edge(&w, session_id, &n, &p);
        w.edge_with_known_ends(edge, [true, true])?;
    }
    Ok(true)
}

fn follows_edge(
    w: &Writer<'_>,
    session_id: &str,
    later: &SessionSlot,
    earlier: &SessionSlot,
) -> Edge {
    let mut props = Properties::new();
    props.insert("session_id".into(), session_id.into());
    props.insert("delta_ms".into(), ((later.at_ns - earlier.at_ns) / NANOS_PER_MS).into());
    let key = w.schema().edge_key(
        "FOLLOWS",
        NodeKey::new("Event", &later.event_id),
        NodeKey::new("Event", &earlier.event_id),
        &props,
    );
    Edge { key, props }
}

/// One entity an event mentions: who, as what, in which role.
pub struct Mention<'a> {
    /// The name as written.
    pub name: &'a str,
    /// Entity type.
    pub entity_type: &'a str,
    /// REFERENCES role.
    pub role: &'a str,
}

/// Every entity an event mentions, in order: its agent (role agent), tool (instrument), user
/// (participant), then its listed entities. Names may repeat; resolution merges them.
pub fn mentions(e: &EventRecord) -> Vec<Mention<'_>> {
    let mut mentions = vec![Mention { name: &e.agent_id, entity_type: "agent", role: "agent" }];
    if let Some(tool) = &e.tool_name {
        mentions.push(Mention { name: tool, entity_type: "tool", role: "instrument" });
    }
    if let Some(user) = &e.user_id {
        mentions.push(Mention { name: user, entity_type: "user", role: "participant" });
    }
    mentions.extend(e.entities.iter().map(|r| Mention {
        name: &r.name,
        entity_type: &r.entity_type,
        role: &r.role,
    }));
    mentions
}

fn references(w: &mut Writer<'_>, event: &NodeKey, e: &EventRecord) -> Result<(), ProjectionError> {
    let mentions = mentions(e);

    // One entity update per distinct entity, whatever the number of roles it plays here.
    let mut entities: BTreeMap<String, (&Mention<'_>, Vec<&str>)> = BTreeMap::new();
    for m in &mentions {
        let entry = entities.entry(entity_id(m.entity_type, m.name)).or_insert((m, Vec::new()));
        if !entry.1.contains(&m.role) {
            entry.1.push(m.role);
        }
    }
    for (id, (m, roles)) in entities {
        let key = NodeKey::new("Entity", &id);
        // Written back just below, so the store may hand over its cached copy.
        let existing = w.graph().node_for_update(&key)?;
        let new = existing.is_none();
        let node = merge_entity(existing, key.clone(), m, e);
        w.put_node_owned(node, new)?;
        for role in roles {
            let mut props = Properties::new();
            props.insert("role".into(), role.into());
            let edge_key = w.schema().edge_key("REFERENCES", event.clone(), key.clone(), &props);
            w.edge_with_known_ends(Edge { key: edge_key, props }, [true, true])?;
        }
    }
    Ok(())
}

/// Fold one mention into an entity: min/max of times, count of mentioning events, earliest spelling.
///
/// Ties between equal instants written with different offsets keep the smaller string, so the
/// result does not depend on arrival order.
fn merge_entity(existing: Option<Node>, key: NodeKey, m: &Mention<'_>, e: &EventRecord) -> Node {
    mention_entity(existing, key, m.name, m.entity_type, &e.occurred_at)
}

/// Fold one mention of the entity `key` (spelled `spelling`, of `entity_type`) at time `at` into
/// its node, creating it when `existing` is `None`: the rule events follow, shared by every
/// record that mentions an entity, so the node does not depend on which record came first.
pub(crate) fn mention_entity(
    existing: Option<Node>,
    key: NodeKey,
    spelling: &str,
    entity_type: &str,
    at: &str,
) -> Node {
    let Some(mut node) = existing else {
        let mut p = Properties::new();
        p.insert("entity_id".into(), key.id.clone().into());
        p.insert("name".into(), spelling.into());
        p.insert("entity_type".into(), entity_type.into());
        p.insert("first_seen".into(), at.into());
        p.insert("last_seen".into(), at.into());
        p.insert("mention_count".into(), 1.into());
        return Node { key, props: p };
    };
    let this = instant(at);
    let text =
        |name: &str| node.props.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
    let (first_text, last_text, name) = (text("first_seen"), text("last_seen"), text("name"));
    let (first, last) = (instant(&first_text), instant(&last_text));
    if this < first || (this == first && spelling < name.as_str()) {
        node.props.insert("name".into(), spelling.into());
    }
    if (this, at) < (first, first_text.as_str()) {
        node.props.insert("first_seen".into(), at.into());
    }
    if (this, at) > (last, last_text.as_str()) {
        node.props.insert("last_seen".into(), at.into());
    }
    let count = node.props.get("mention_count").and_then(Value::as_i64).unwrap_or(0);
    node.props.insert("mention_count".into(), (count + 1).into());
    node
}

/// Nanoseconds of a stored timestamp; stored timestamps were validated on the way in.
fn instant(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).ok().and_then(|d| d.timestamp_nanos_opt()).unwrap_or(0)
}
