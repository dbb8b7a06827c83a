//! Projection of decision-memory records (seed 003): Memory, Topic, MemorySession and Outcome
//! nodes, and the explicit links (SUPERSEDES, IMPLEMENTS, OUTCOME_OF, RELATES_TO, TEMPORAL).
//!
//! - A `memory` record becomes a Memory node, ABOUT its Topic (id: the normalised topic) and
//!   IN_SESSION its MemorySession; `supersedes` becomes SUPERSEDES from the new memory to the old
//!   one, `implements` one IMPLEMENTS per target, both explicit links of confidence 1.0.
//!   The Topic keeps its newest decision (greatest `created_at`, then id), where evolution starts.
//! - A `memory_outcome` record becomes an Outcome node with OUTCOME_OF to its memory; the memory
//!   shows its latest outcome (greatest `at`, then outcome id).
//! - A `memory_link` record becomes the explicit edge of its type (rule `explicit`).
//! - A `memory_link_vote` record updates the LINK_VOTE edge of the pair and type: `delete` marks
//!   it deleted for good, `downvote` counts one more down-vote. Readers apply votes to links.
//!
//! Automatic links (temporal, same topic, semantic) are not made here: they depend on settings and
//! on the embedding model, so the engine derives them (stage 3) and can rebuild them.
//!
//! Every value is a function of the record or a maximum/count over records, so the fold is
//! deterministic; the engine appends memory records only after the memories they name.

use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_ontology::{
    MemoryLinkRecord, MemoryLinkVoteRecord, MemoryOutcomeRecord, MemoryRecord, normalize_name,
};
use serde_json::Value;

use crate::{ProjectionError, Writer};

/// Node label of a memory.
pub const MEMORY: &str = "Memory";
/// Node label of a topic.
pub const TOPIC: &str = "Topic";
/// Node label of a memory session.
pub const MEMORY_SESSION: &str = "MemorySession";
/// Node label of an outcome.
pub const OUTCOME: &str = "Outcome";
/// Edge type of people's votes on links.
pub const LINK_VOTE: &str = "LINK_VOTE";

/// The edge type of a link type as records write it: `relates_to` → `RELATES_TO`.
pub fn link_edge_type(link_type: &str) -> String {
    link_type.to_ascii_uppercase()
}

/// The Topic id of a topic as written: its normalised form, so `Auth Strategy` and
/// `auth strategy` are one topic.
pub fn topic_id(topic: &str) -> String {
    normalize_name(topic)
}

/// The properties of a link edge (see the memory module's schema).
pub fn link_props(
    confidence: f64,
    created_by: &str,
    created_at: &str,
    rule: &str,
    reason: Option<&str>,
) -> Properties {
    let mut p = Properties::new();
    p.insert("confidence".into(), confidence.into());
    p.insert("created_by".into(), created_by.into());
    p.insert("created_at".into(), created_at.into());
    p.insert("rule".into(), rule.into());
    if let Some(r) = reason {
        p.insert("reason".into(), r.into());
    }
    p
}

fn ns_of(text: Option<&Value>) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text?.as_str()?).ok()?.timestamp_nanos_opt()
}

fn link(w: &Writer<'_>, edge_type: &str, from: NodeKey, to: NodeKey, props: Properties) -> Edge {
    Edge { key: w.schema().edge_key(edge_type, from, to, &props), props }
}

pub(crate) fn project_memory(
    w: &mut Writer<'_>,
    position: u64,
    m: &MemoryRecord,
) -> Result<(), ProjectionError> {
    let key = NodeKey::new(MEMORY, &m.memory_id);
    let mut props = match w.graph().node(&key)? {
        Some(existing) => existing.props,
        None => Properties::new(),
    };
    props.insert("memory_id".into(), m.memory_id.clone().into());
    props.insert("kind".into(), m.kind.clone().into());
    if let Some(t) = &m.topic {
        props.insert("topic".into(), t.clone().into());
    }
    props.insert("content".into(), m.content.clone().into());
    if let Some(r) = &m.reasoning {
        props.insert("reasoning".into(), r.clone().into());
    }
    props.insert("confidence".into(), m.confidence.into());
    props.insert("created_by".into(), m.created_by.clone().into());
    if !m.auto_link {
        props.insert("auto_link".into(), false.into());
    }
    m.scope.node_properties(&mut props);
    if let Some(s) = &m.session_id {
        props.insert("session_id".into(), s.clone().into());
    }
    props.insert("created_at".into(), m.created_at.clone().into());
    props.insert("global_position".into(), position.into());
    w.put_node(&Node { key: key.clone(), props }, true)?;

    if let Some(topic) = &m.topic {
        let tkey = NodeKey::new(TOPIC, topic_id(topic));
        let existing = w.graph().node(&tkey)?;
        let new = existing.is_none();
        let mut tp = existing.map(|n| n.props).unwrap_or_default();
        tp.insert("topic_id".into(), tkey.id.clone().into());
        tp.entry("name".to_owned()).or_insert_with(|| topic.clone().into());
        let count = tp.get("memory_count").and_then(Value::as_i64).unwrap_or(0);
        tp.insert("memory_count".into(), (count + 1).into());
        if m.kind == "decision" {
            let current = ns_of(tp.get("latest_decision_at"))
                .zip(tp.get("latest_decision").and_then(Value::as_str).map(str::to_owned));
            let newer = match &current {
                None => true,
                Some((ns, id)) => (m.created_at_ns, &m.memory_id) > (*ns, id),
            };
            if newer {
                tp.insert("latest_decision".into(), m.memory_id.clone().into());
                tp.insert("latest_decision_at".into(), m.created_at.clone().into());
            }
        }
        w.put_node(&Node { key: tkey.clone(), props: tp }, new)?;
        let about = link(w, "ABOUT", key.clone(), tkey, Properties::new());
        w.edge_with_known_ends(about, [true, true])?;
    }
    if let Some(session) = &m.session_id {
        let skey = NodeKey::new(MEMORY_SESSION, session);
        if !w.graph().node_exists(&skey)? {
            let mut sp = Properties::new();
            sp.insert("session_id".into(), session.clone().into());
            w.put_node(&Node { key: skey.clone(), props: sp }, true)?;
        }
        let edge = link(w, "IN_SESSION", key.clone(), skey, Properties::new());
        w.edge_with_known_ends(edge, [true, true])?;
    }
    if let Some(old) = &m.supersedes {
        let props = link_props(1.0, &m.created_by, &m.created_at, "explicit", Some("supersedes"));
        let edge = link(w, "SUPERSEDES", key.clone(), NodeKey::new(MEMORY, old), props);
        w.edge_with_known_ends(edge, [true, false])?;
    }
    for target in &m.implements {
        let props = link_props(1.0, &m.created_by, &m.created_at, "explicit", Some("implements"));
        let edge = link(w, "IMPLEMENTS", key.clone(), NodeKey::new(MEMORY, target), props);
        w.edge_with_known_ends(edge, [true, false])?;
    }
    Ok(())
}

pub(crate) fn project_outcome(
    w: &mut Writer<'_>,
    position: u64,
    o: &MemoryOutcomeRecord,
) -> Result<(), ProjectionError> {
    let key = NodeKey::new(OUTCOME, &o.outcome_id);
    let mut props = Properties::new();
    props.insert("outcome_id".into(), o.outcome_id.clone().into());
    props.insert("memory_id".into(), o.memory_id.clone().into());
    props.insert("outcome".into(), o.outcome.clone().into());
    props.insert("reason".into(), o.reason.clone().into());
    props.insert("created_by".into(), o.created_by.clone().into());
    props.insert("at".into(), o.at.clone().into());
    props.insert("global_position".into(), position.into());
    w.put_node(&Node { key: key.clone(), props }, true)?;
    let memory = NodeKey::new(MEMORY, &o.memory_id);
    let props = link_props(
        1.0,
        &o.created_by,
        &o.at,
        "explicit",
        Some(o.reason.as_str()).filter(|r| !r.is_empty()),
    );
    let edge = link(w, "OUTCOME_OF", key, memory.clone(), props);
    w.edge_with_known_ends(edge, [true, false])?;
    if let Some(mut node) = w.graph().node(&memory)? {
        let current = ns_of(node.props.get("outcome_at"))
            .zip(node.props.get("outcome_id").and_then(Value::as_str).map(str::to_owned));
        let newer = match &current {
            None => true,
            Some((ns, id)) => (o.at_ns, &o.outcome_id) > (*ns, id),
        };
        if newer {
            node.props.insert("outcome".into(), o.outcome.clone().into());
            node.props.insert("outcome_reason".into(), o.reason.clone().into());
            node.props.insert("outcome_at".into(), o.at.clone().into());
            node.props.insert("outcome_id".into(), o.outcome_id.clone().into());
            w.put_node(&node, false)?;
        }
    }
    Ok(())
}

pub(crate) fn project_link(
    w: &mut Writer<'_>,
    l: &MemoryLinkRecord,
) -> Result<(), ProjectionError> {
    let mut props =
        link_props(l.confidence, &l.created_by, &l.created_at, "explicit", l.reason.as_deref());
    props.insert("link_id".into(), l.link_id.clone().into());
    if let Some(meta) = &l.metadata {
        props.insert("metadata".into(), Value::Object(meta.clone()));
    }
    let edge = link(
        w,
        &link_edge_type(&l.link_type),
        NodeKey::new(MEMORY, &l.from),
        NodeKey::new(MEMORY, &l.to),
        props,
    );
    w.edge_when_ready(edge)
}

pub(crate) fn project_vote(
    w: &mut Writer<'_>,
    v: &MemoryLinkVoteRecord,
) -> Result<(), ProjectionError> {
    let mut props = Properties::new();
    props.insert("link_type".into(), v.link_type.clone().into());
    let key = w.schema().edge_key(
        LINK_VOTE,
        NodeKey::new(MEMORY, &v.from),
        NodeKey::new(MEMORY, &v.to),
        &props,
    );
    let existing = w.graph().edge(&key)?;
    let deleted = existing
        .as_ref()
        .and_then(|e| e.props.get("deleted").and_then(Value::as_bool))
        .unwrap_or(false);
    let downvotes = existing
        .as_ref()
        .and_then(|e| e.props.get("downvotes").and_then(Value::as_i64))
        .unwrap_or(0);
    props.insert("deleted".into(), (deleted || v.vote == "delete").into());
    props.insert("downvotes".into(), (downvotes + i64::from(v.vote == "downvote")).into());
    // Each memory counts the votes on its links, so readers skip looking for votes when none.
    for end in [&key.from, &key.to] {
        if let Some(mut node) = w.graph().node(end)? {
            let n = node.props.get("link_votes").and_then(Value::as_i64).unwrap_or(0);
            node.props.insert("link_votes".into(), (n + 1).into());
            w.put_node(&node, false)?;
        }
    }
    w.edge_when_ready(Edge { key, props })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_types_map_to_edge_types_and_topics_normalise() {
        assert_eq!(link_edge_type("outcome_of"), "OUTCOME_OF");
        assert_eq!(topic_id("  Auth   Strategy "), topic_id("auth strategy"));
    }
}
