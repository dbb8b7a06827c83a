//! What folding a page of records will read from the graph, known from the records alone: the
//! nodes they name and the sessions they extend, so a batch reads them ahead in a few queries
//! ([`crate::BatchFold::prefetch`]) instead of one round trip per read.
//!
//! The keys follow the projection's own structure (an event's node, its causal parent, the
//! entities it mentions, its session; an explicit edge's endpoints; a decision's two entities). A record kind not listed
//! here is folded with reads made one by one: reading ahead is an optimisation, never a rule.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{RecordBody, ValidRecord, entity_id};

/// The nodes and sessions a page of records names.
#[derive(Debug, Default)]
pub(crate) struct PageReads {
    /// Nodes read (does it exist, its properties) and whose parked edges may be taken.
    pub(crate) nodes: BTreeSet<NodeKey>,
    /// Sessions whose order is read and extended.
    pub(crate) sessions: BTreeSet<String>,
}

impl PageReads {
    /// Add what folding `record` reads.
    pub(crate) fn add(&mut self, record: &ValidRecord) {
        match record.body() {
            RecordBody::Event(e) => {
                self.nodes.insert(NodeKey::new("Event", &e.event_id));
                if let Some(parent) = &e.parent_event_id {
                    self.nodes.insert(NodeKey::new("Event", parent));
                }
                for m in ctxgraph_projection::mentions(e) {
                    self.nodes.insert(NodeKey::new("Entity", entity_id(m.entity_type, m.name)));
                }
                self.sessions.insert(e.session_id.clone());
            }
            RecordBody::Edge(e) => {
                self.nodes.insert(e.from.clone());
                self.nodes.insert(e.to.clone());
            }
            RecordBody::EntityDecision(d) => {
                self.nodes.insert(NodeKey::new("Entity", &d.entity_a));
                self.nodes.insert(NodeKey::new("Entity", &d.entity_b));
            }
            // Read one by one: rare in a trace, or reading what only the graph knows (a
            // forget's target, a memory's links).
            RecordBody::Schema(_)
            | RecordBody::Memory(_)
            | RecordBody::MemoryOutcome(_)
            | RecordBody::MemoryLink(_)
            | RecordBody::MemoryLinkVote(_)
            | RecordBody::Slots(_)
            | RecordBody::Fact(_)
            | RecordBody::FactRetraction(_)
            | RecordBody::Document(_)
            | RecordBody::Forget(_)
            | RecordBody::Redacted(_)
            | RecordBody::Receipt(_)
            | RecordBody::Access(_) => {}
        }
    }
}
