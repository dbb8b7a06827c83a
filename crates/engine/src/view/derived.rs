//! Visibility of derived nodes, decided from their sources.
//!
//! A node that carries no scope of its own but is made from records that do would otherwise
//! repeat what those records hide. Two kinds are derived from events here:
//! - a **summary** (session or day, at any depth of `SUMMARIZES`) quotes the events below it
//!   and counts them, so it is visible only when every event below it is; otherwise it is
//!   withheld whole (not rewritten);
//! - an **entity** is visible when at least one record naming it is (an event referencing it, a
//!   fact about it, a document sentence mentioning it, a receipt citing it, a slot, type or goal
//!   record about it). Its `mention_count`, `first_seen` and `last_seen` fold every record that
//!   names it, so they are shown only when every such record is visible; otherwise they are
//!   omitted (not recomputed).
//!
//! - a **topic**, **memory session** or **outcome** groups decision memories: a topic or
//!   memory session is visible when one of its memories is, an outcome when its memory is; a
//!   topic's `memory_count`, `latest_decision` and `latest_decision_at` fold every memory about
//!   it, so they are shown only when every one is visible (a topic's evolution runs over the
//!   visible decisions, from the newest visible one).
//!
//! - a **task**, **actor**, **policy** or **policy exception** exists because receipts name
//!   it: it is visible when one of those receipts is.
//!
//! The work is bounded: at most [`MAX_SUMMARY_SOURCES`] edges under one summary and
//! [`MAX_ENTITY_SOURCES`] records naming one entity are read. Past the bound, what could not be
//! decided is withheld (the summary, the entity, or the entity's counts).

use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_projection::{MEMORY_SESSION, OUTCOME, RECEIPT, TOPIC};

use super::Reader;
use crate::access::SCOPE_PROPS;
use crate::error::Error;

/// Most `SUMMARIZES` edges read under one summary, all levels together.
const MAX_SUMMARY_SOURCES: usize = 20_000;
/// Deepest `SUMMARIZES` nesting followed (a day summary over session summaries is 2 deep).
const MAX_SUMMARY_DEPTH: usize = 4;
/// Most records naming one entity read to decide whether it, or its counts, may be shown.
const MAX_ENTITY_SOURCES: usize = 1_000;
/// How many records naming an entity are read, stage by stage, until one is visible: most
/// entities are decided by their first record, so that is read alone (a later stage reads the
/// earlier ones again: each is a prefix of the next, so the verdict is the last stage's).
const ENTITY_SOURCE_STAGES: [usize; 3] = [1, 16, MAX_ENTITY_SOURCES];
/// The entity properties that fold every record naming it.
const ENTITY_COUNTS: [&str; 3] = ["mention_count", "first_seen", "last_seen"];
/// The topic properties that fold every memory about it.
const TOPIC_COUNTS: [&str; 3] = ["memory_count", "latest_decision", "latest_decision_at"];

/// The edges by which a record names an entity, as `(edge type, outgoing from the entity)`:
/// an event's reference, a fact's subject or object, a sentence's mention, a receipt's input, a
/// goal's user, a slot and a type assertion. Entity-to-entity edges (`SAME_AS`, `RELATED_TO`)
/// are derived from names and name no record.
const ENTITY_SOURCES: [(&str, bool); 8] = [
    ("REFERENCES", false),
    ("SUBJECT", false),
    ("OBJECT", false),
    ("MENTIONS", false),
    ("USED_INPUT", false),
    ("GOAL_OF", false),
    ("HAS_SLOT", true),
    ("INSTANCE_OF", true),
];

/// The weight of an edge by which a record names an entity ([`ENTITY_SOURCES`]): 1, else 0.
fn naming(edge_type: &str, outgoing: bool) -> f64 {
    if ENTITY_SOURCES.iter().any(|&(s, o)| s == edge_type && o == outgoing) { 1.0 } else { 0.0 }
}

/// What a bounded walk under a summary found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Every event below is visible.
    Visible,
    /// An event below is hidden.
    Hidden,
    /// The bound was reached first.
    Undecided,
}

impl Reader<'_> {
    /// Whether a summary may be shown: every event below it, at any depth, is visible.
    pub(super) fn summary_visible(&self, summary: &NodeKey) -> Result<bool, Error> {
        self.summary_within(summary, MAX_SUMMARY_SOURCES)
    }

    /// [`Reader::summary_visible`] reading at most `budget` edges.
    fn summary_within(&self, summary: &NodeKey, mut budget: usize) -> Result<bool, Error> {
        Ok(self.walk_summary(summary, &mut budget, 0)? == Walk::Visible)
    }

    /// The walk under one summary, spending `budget` edges; verdicts of whole subtrees are
    /// remembered for the rest of the request (a day summary shares its sessions' summaries).
    fn walk_summary(
        &self,
        summary: &NodeKey,
        budget: &mut usize,
        depth: usize,
    ) -> Result<Walk, Error> {
        if let Some(&known) = self.verdicts.borrow().get(summary) {
            return Ok(if known { Walk::Visible } else { Walk::Hidden });
        }
        if depth > MAX_SUMMARY_DEPTH {
            return Ok(Walk::Undecided);
        }
        let below = |t: &str, out: bool| if out && t == "SUMMARIZES" { 1.0 } else { 0.0 };
        let edges = self.snap.read.heaviest_edges(summary, &below, budget.saturating_add(1))?;
        if edges.len() > *budget {
            *budget = 0;
            return Ok(Walk::Undecided);
        }
        *budget -= edges.len();
        let mut walk = Walk::Visible;
        for (_, edge, _) in &edges {
            let target = &edge.key.to;
            let step = if target.label == "Summary" {
                self.walk_summary(target, budget, depth + 1)?
            } else {
                // A summarised event that is gone (forgotten, archived) quotes nothing any more.
                match self.scope_of(target)? {
                    Some(n) if self.who.allows(&n).is_err() => Walk::Hidden,
                    Some(_) | None => Walk::Visible,
                }
            };
            if step != Walk::Visible {
                walk = step;
                break;
            }
        }
        if walk != Walk::Undecided {
            self.verdicts.borrow_mut().insert(summary.clone(), walk == Walk::Visible);
        }
        Ok(walk)
    }

    /// Whether an entity may be shown: a record naming it is visible (among the first
    /// [`MAX_ENTITY_SOURCES`]).
    pub(super) fn entity_visible(&self, entity: &NodeKey) -> Result<bool, Error> {
        if let Some(&known) = self.verdicts.borrow().get(entity) {
            return Ok(known);
        }
        let mut visible = false;
        for limit in ENTITY_SOURCE_STAGES {
            let sources = self.entity_sources(entity, limit)?;
            let read = sources.len();
            for n in sources {
                if self.source_visible(&n)? {
                    visible = true;
                    break;
                }
            }
            if visible || read < limit {
                break;
            }
        }
        self.verdicts.borrow_mut().insert(entity.clone(), visible);
        Ok(visible)
    }

    /// Whether a node that groups memories may be shown: a topic (its memories are `ABOUT` it)
    /// or a memory session (`IN_SESSION`) when one of its memories is visible (among the first
    /// [`MAX_ENTITY_SOURCES`]), an outcome (`OUTCOME_OF` its memory) when its memory is.
    pub(super) fn memory_group_visible(&self, key: &NodeKey) -> Result<bool, Error> {
        self.remembered(key, || {
            let (edge_type, outgoing) = match key.label.as_str() {
                OUTCOME => ("OUTCOME_OF", true),
                MEMORY_SESSION => ("IN_SESSION", false),
                _ => ("ABOUT", false),
            };
            let memories = self.grouped_memories(key, edge_type, outgoing, MAX_ENTITY_SOURCES)?;
            Ok(memories.iter().any(|m| self.who.allows(m).is_ok()))
        })
    }

    /// Whether a node only decision receipts point at may be shown (a task, an actor, a policy,
    /// a policy exception: each holds nothing but its id): when one of the receipts pointing at
    /// it (among the first [`MAX_ENTITY_SOURCES`]) is visible, which a receipt is when its own
    /// scope and every event it cites are.
    pub(super) fn receipt_part_visible(&self, key: &NodeKey) -> Result<bool, Error> {
        self.remembered(key, || {
            let into = |_: &str, out: bool| if out { 0.0 } else { 1.0 };
            for r in self.joined(key, &into, MAX_ENTITY_SOURCES)? {
                if r.key.label == RECEIPT && self.source_visible(&r)? {
                    return Ok(true);
                }
            }
            Ok(false)
        })
    }

    /// The verdict on `key` remembered for this request, or `decide`'s, then remembered.
    fn remembered(
        &self,
        key: &NodeKey,
        decide: impl FnOnce() -> Result<bool, Error>,
    ) -> Result<bool, Error> {
        if let Some(&known) = self.verdicts.borrow().get(key) {
            return Ok(known);
        }
        let verdict = decide()?;
        self.verdicts.borrow_mut().insert(key.clone(), verdict);
        Ok(verdict)
    }

    /// Up to `limit` memories joined to `key` by `edge_type` (out of it when `outgoing`).
    fn grouped_memories(
        &self,
        key: &NodeKey,
        edge_type: &str,
        outgoing: bool,
        limit: usize,
    ) -> Result<Vec<Node>, Error> {
        let weight = |t: &str, out: bool| if t == edge_type && out == outgoing { 1.0 } else { 0.0 };
        self.joined(key, &weight, limit)
    }

    /// Up to `limit` nodes at the far end of `key`'s edges that `weight` (edge type, outgoing)
    /// gives a positive weight, heaviest first, read by seeks that stop at the limit; each with
    /// its scope properties only ([`SCOPE_PROPS`]), which is all the policy reads of them.
    fn joined(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
    ) -> Result<Vec<Node>, Error> {
        Ok(self
            .snap
            .read
            .heaviest_neighbours(key, weight, limit, &SCOPE_PROPS)?
            .into_iter()
            .map(|(key, props)| Node { key, props })
            .collect())
    }

    /// A node with only the properties the policy reads ([`SCOPE_PROPS`]), if it exists: the
    /// sources of a derived node are checked by the policy alone, and decoding whole events
    /// (their payloads) was most of the cost of deciding an entity.
    pub(super) fn scope_of(&self, key: &NodeKey) -> Result<Option<Node>, Error> {
        Ok(self
            .snap
            .read
            .node_props_named(key, &SCOPE_PROPS)?
            .map(|props| Node { key: key.clone(), props }))
    }

    /// Whether a topic's count and latest decision may be shown: every memory about it (at
    /// most [`MAX_ENTITY_SOURCES`]) is visible.
    fn topic_counts_visible(&self, topic: &NodeKey) -> Result<bool, Error> {
        let memories = self.grouped_memories(topic, "ABOUT", false, MAX_ENTITY_SOURCES + 1)?;
        if memories.len() > MAX_ENTITY_SOURCES {
            return Ok(false);
        }
        Ok(memories.iter().all(|m| self.who.allows(m).is_ok()))
    }

    /// Whether an entity's counts and times may be shown: its count is at most
    /// [`MAX_ENTITY_SOURCES`], and so are the records naming it, every one of them visible.
    fn entity_counts_visible(&self, entity: &Node) -> Result<bool, Error> {
        // A count past the bound is left out without reading the records it folds (at worst
        // this withholds counts that could have been shown).
        let mentions = entity.props.get("mention_count").and_then(serde_json::Value::as_u64);
        if mentions.is_some_and(|m| m > MAX_ENTITY_SOURCES as u64) {
            return Ok(false);
        }
        let sources = self.entity_sources(&entity.key, MAX_ENTITY_SOURCES + 1)?;
        if sources.len() > MAX_ENTITY_SOURCES {
            return Ok(false);
        }
        for n in &sources {
            if !self.source_visible(n)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The node as this principal may see it: an entity without [`ENTITY_COUNTS`], a topic
    /// without [`TOPIC_COUNTS`], when they would reveal a record it may not see; any other node
    /// unchanged. The caller has checked that the node is visible.
    pub(super) fn redact(&self, mut node: Node) -> Result<Node, Error> {
        if self.who.is_owner() {
            return Ok(node);
        }
        let hidden: &[&str] = match node.key.label.as_str() {
            "Entity" if !self.entity_counts_visible(&node)? => &ENTITY_COUNTS,
            TOPIC if !self.topic_counts_visible(&node.key)? => &TOPIC_COUNTS,
            _ => &[],
        };
        for p in hidden {
            node.props.remove(*p);
        }
        Ok(node)
    }

    /// Up to `limit` records naming an entity, in a stable order.
    fn entity_sources(&self, entity: &NodeKey, limit: usize) -> Result<Vec<Node>, Error> {
        self.joined(entity, &naming, limit)
    }

    /// Whether a record naming an entity is visible: its own policy, and for a decision receipt
    /// the events it cites too. Never another derived node, so the check does not recurse.
    fn source_visible(&self, node: &Node) -> Result<bool, Error> {
        if self.who.allows(node).is_err() {
            return Ok(false);
        }
        if node.key.label == RECEIPT {
            return self.inputs_visible(&node.key);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly on the first surprise")]

    use serde_json::json;

    use super::*;
    use crate::{Engine, EngineOptions, IngestOptions, OpenMode, Principal};

    #[test]
    fn a_summary_is_withheld_when_its_sources_exceed_the_bound() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("t.ctxg");
        let mut e =
            Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default()).unwrap();
        // One day of two sessions of three open events: 2 + 6 edges under the day summary.
        let mut lines = String::new();
        for i in 0..6 {
            let ev = json!({"event_id": format!("e{i}"), "event_type": "tool.execute",
                "occurred_at": format!("2026-11-20T10:00:0{i}Z"), "session_id": format!("s{}", i % 2),
                "agent_id": "a", "trace_id": "t"});
            lines.push_str(&format!("{ev}\n"));
        }
        e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
        e.enrich(&mut |_, _| {}).unwrap();
        e.consolidate().unwrap();
        let who = Principal::new("v", "default", ["viewer".to_owned()]).unwrap();
        // A fresh reader each time: a reader remembers its verdicts for its request.
        let within = |key: &NodeKey, budget| e.reader(&who).unwrap().summary_within(key, budget);
        let day = NodeKey::new("Summary", "day:2026-11-20");
        assert!(within(&day, 8).unwrap());
        assert!(!within(&day, 7).unwrap(), "undecided: withheld");
        let session = NodeKey::new("Summary", "session:s0");
        assert!(!within(&session, 2).unwrap());
        assert!(within(&session, 3).unwrap());
    }
}
