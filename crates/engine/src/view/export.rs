//! Reads for export: the whole graph, or the part of it around some events, and the log, as one
//! principal may see them.
//!
//! Every node passes [`Reader::shown`]; an edge is kept only when both of its ends were kept, so
//! an export under a principal holds nothing that principal could not read through any other
//! interface, and no edge points at a node it does not hold.

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_ontology::{RecordKind, Tombstone};
use ctxgraph_projection::RECEIPT;
use ctxgraph_store::LogEntry;

use super::Reader;
use crate::error::Error;

/// Nodes and edges read per page.
const PAGE: usize = 1000;
/// Most events of one session or trace an export selects.
const MAX_SELECTED: usize = 10_000_000;

/// Which events an export selects; every condition given must hold. With none, the export is
/// the whole graph.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportFilter {
    /// Events of this session.
    pub session: Option<String>,
    /// Events of this trace.
    pub trace: Option<String>,
    /// Events at or after this instant (ns since the epoch).
    pub since_ns: Option<i64>,
    /// Events before this instant (ns since the epoch).
    pub until_ns: Option<i64>,
}

impl ExportFilter {
    /// Whether no condition is set (the whole graph).
    pub fn is_empty(&self) -> bool {
        self.session.is_none()
            && self.trace.is_none()
            && self.since_ns.is_none()
            && self.until_ns.is_none()
    }

    /// Whether an event node meets every condition.
    fn admits(&self, event: &Node) -> bool {
        self.admits_fields(|k| event.props.get(k).and_then(serde_json::Value::as_str))
    }

    /// Whether an event, by the fields `field` reads, meets every condition.
    fn admits_fields<'v>(&self, field: impl Fn(&str) -> Option<&'v str>) -> bool {
        if self.session.as_deref().is_some_and(|s| field("session_id") != Some(s)) {
            return false;
        }
        if self.trace.as_deref().is_some_and(|t| field("trace_id") != Some(t)) {
            return false;
        }
        if self.since_ns.is_none() && self.until_ns.is_none() {
            return true;
        }
        let Some(at) = field("occurred_at")
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .and_then(|t| t.timestamp_nanos_opt())
        else {
            return false;
        };
        self.since_ns.is_none_or(|s| at >= s) && self.until_ns.is_none_or(|u| at < u)
    }
}

/// One item of an export, in the order [`Reader::export_each`] gives them: every node, then
/// every edge between two of them.
#[derive(Debug, Clone, PartialEq)]
pub enum ExportItem {
    /// A node (an event with its payload), as the principal is shown it.
    Node(Node),
    /// An edge whose two ends were both given.
    Edge(Edge),
}

impl Reader<'_> {
    /// The graph as this principal sees it, handed to `visit` item by item, so an export holds
    /// no more than the keys of the nodes it gave. With an empty filter, every visible node
    /// (by type, in key order) and every edge between two of them (by type, in key order);
    /// otherwise the visible events the filter selects, the visible nodes one edge away from
    /// them that are not events (entities, summaries, receipts), and the edges among those.
    /// Returns how many nodes and edges were given.
    pub fn export_each<E: From<Error>>(
        &self,
        filter: &ExportFilter,
        visit: &mut dyn FnMut(ExportItem) -> Result<(), E>,
    ) -> Result<(u64, u64), E> {
        let mut keys: BTreeSet<NodeKey> = BTreeSet::new();
        if filter.is_empty() {
            for label in self.snap.schema().node_types().keys() {
                let mut after: Option<String> = None;
                loop {
                    let page = self.nodes(label, after.as_deref(), PAGE)?;
                    let Some(last) = page.last() else { break };
                    after = Some(last.key.id.clone());
                    for n in page {
                        keys.insert(n.key.clone());
                        visit(ExportItem::Node(n))?;
                    }
                }
            }
        } else {
            for n in self.selected(filter)?.into_values() {
                keys.insert(n.key.clone());
                visit(ExportItem::Node(n))?;
            }
        }
        let nodes = keys.len() as u64;
        let mut edges = 0_u64;
        let mut give = |e: Edge, visit: &mut dyn FnMut(ExportItem) -> Result<(), E>| {
            if keys.contains(&e.key.from) && keys.contains(&e.key.to) {
                edges += 1;
                visit(ExportItem::Edge(e))
            } else {
                Ok(())
            }
        };
        if filter.is_empty() {
            for edge_type in self.snap.schema().edge_types().keys() {
                let mut after: Option<EdgeKey> = None;
                loop {
                    let page = self
                        .snap
                        .read
                        .edges_by_type(edge_type, after.as_ref(), PAGE)
                        .map_err(Error::from)?;
                    let Some(last) = page.last() else { break };
                    after = Some(last.key.clone());
                    for e in page {
                        give(e, visit)?;
                    }
                }
            }
        } else {
            // The selection is bounded by its filter: its edges are gathered to give each once.
            let mut found: BTreeMap<EdgeKey, Edge> = BTreeMap::new();
            for key in &keys {
                for e in self.snap.read.edges_of(key, None, Direction::Both).map_err(Error::from)? {
                    found.insert(e.key.clone(), e);
                }
            }
            for e in found.into_values() {
                give(e, visit)?;
            }
        }
        Ok((nodes, edges))
    }

    /// The visible events the filter selects and their visible non-event neighbours.
    fn selected(&self, filter: &ExportFilter) -> Result<BTreeMap<NodeKey, Node>, Error> {
        let candidates: Vec<String> = if let Some(session) = &filter.session {
            let slots = self.snap.read.session_events(session, MAX_SELECTED)?;
            slots.into_iter().map(|s| s.event_id).collect()
        } else if let Some(trace) = &filter.trace {
            self.snap.read.trace_events(trace, MAX_SELECTED)?
        } else {
            let mut ids = Vec::new();
            let mut after: Option<String> = None;
            loop {
                let page = self.snap.read.nodes_by_label("Event", after.as_deref(), PAGE)?;
                let Some(last) = page.last() else { break };
                after = Some(last.key.id.clone());
                ids.extend(page.into_iter().filter(|n| filter.admits(n)).map(|n| n.key.id));
            }
            ids
        };
        let mut out = BTreeMap::new();
        for id in candidates {
            let Some(event) = self.event(&id)? else { continue };
            if !filter.admits(&event) {
                continue;
            }
            out.insert(event.key.clone(), event);
        }
        let events: Vec<NodeKey> = out.keys().cloned().collect();
        for key in &events {
            for e in self.snap.read.edges_of(key, None, Direction::Both)? {
                let other = if &e.key.from == key { &e.key.to } else { &e.key.from };
                if other.label == "Event" || out.contains_key(other) {
                    continue;
                }
                if let Some(n) = self.node(other)? {
                    out.insert(n.key.clone(), n);
                }
            }
        }
        Ok(out)
    }

    /// Log records from `from`, at most `limit` read, as this principal may see them and as
    /// `filter` selects them (with a condition, only the event records that meet it): the
    /// owner gets every record except forget records and tombstones (a writer may not send
    /// them, so a log export stays one that `ingest` takes back); another principal gets the
    /// schema modules, the events, memories and receipts whose nodes it may see, and the
    /// records that carry no scope (facts, documents, types, slots, checklists, goals).
    /// Records that only link or annotate other nodes (explicit edges, entity decisions,
    /// memory outcomes, links and votes, access batches) are left out for it rather than
    /// decided one by one. Returns the kept records and the position after the last one read.
    pub fn export_log(
        &self,
        from: u64,
        limit: usize,
        filter: &ExportFilter,
    ) -> Result<(Vec<LogEntry>, u64), Error> {
        let page = self.snap.read.read_from(from.max(1), limit)?;
        let next = page.last().map_or(from.max(1), |e| e.position + 1);
        let mut out = Vec::new();
        for entry in page {
            if entry.kind == RecordKind::Forget || Tombstone::parse(&entry.body).is_some() {
                continue;
            }
            if !filter.is_empty() && !selected_event(filter, &entry) {
                continue;
            }
            if self.record_visible(&entry)? {
                out.push(entry);
            }
        }
        Ok((out, next))
    }

    /// Whether a record is visible to the principal (see [`Reader::export_log`]).
    fn record_visible(&self, entry: &LogEntry) -> Result<bool, Error> {
        if self.who.is_owner() {
            return Ok(true);
        }
        let label = match entry.kind {
            RecordKind::Schema
            | RecordKind::Fact
            | RecordKind::FactRetraction
            | RecordKind::Document
            | RecordKind::Type
            | RecordKind::InstanceOf
            | RecordKind::Slot
            | RecordKind::Checklist
            | RecordKind::Goal => return Ok(true),
            RecordKind::Event => "Event",
            RecordKind::Memory => "Memory",
            RecordKind::Receipt => RECEIPT,
            RecordKind::Edge
            | RecordKind::EntityDecision
            | RecordKind::MemoryOutcome
            | RecordKind::MemoryLink
            | RecordKind::MemoryLinkVote
            | RecordKind::Access
            | RecordKind::Forget => return Ok(false),
        };
        Ok(self.node(&NodeKey::new(label, entry.id.clone()))?.is_some())
    }
}

/// Whether a log record is an event record that meets the filter's conditions.
fn selected_event(filter: &ExportFilter, entry: &LogEntry) -> bool {
    if entry.kind != RecordKind::Event {
        return false;
    }
    let Ok(body) = serde_json::from_str::<serde_json::Value>(&entry.body) else { return false };
    filter.admits_fields(|k| body.get(k).and_then(serde_json::Value::as_str))
}
