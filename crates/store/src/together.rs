//! Several independent reads of many keys answered together ([`GraphReader::read_together`]):
//! on a store whose reads are round trips, reads that do not depend on each other's answers
//! cost one round trip instead of one each; elsewhere they run one after the other, as the
//! caller would have run them.

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};

use crate::{GraphReader, SessionSlot, StoreError};

/// One read of [`GraphReader::read_together`]: a read of many keys, named after the method it
/// stands for, with that method's arguments.
#[derive(Debug, Clone, Copy)]
pub enum ManyRead<'a> {
    /// [`GraphReader::nodes`].
    Nodes(&'a [NodeKey]),
    /// [`GraphReader::nodes_exist`].
    NodesExist(&'a [NodeKey]),
    /// [`GraphReader::edges_of_many`].
    EdgesOf {
        /// The nodes.
        keys: &'a [NodeKey],
        /// One edge type, or any.
        edge_type: Option<&'a str>,
        /// Which side.
        direction: Direction,
    },
    /// [`GraphReader::existing_ids`].
    ExistingIds {
        /// The label.
        label: &'a str,
        /// The ids asked.
        ids: &'a [String],
    },
    /// [`GraphReader::existing_ids_by_label`].
    ExistingIdsByLabel {
        /// The labels.
        labels: &'a [&'a str],
        /// The ids asked.
        ids: &'a [String],
    },
    /// [`GraphReader::session_events_many`].
    SessionEvents {
        /// The sessions.
        ids: &'a [String],
        /// The most slots per session.
        limit: usize,
    },
    /// [`GraphReader::trace_events_many`].
    TraceEvents {
        /// The traces.
        ids: &'a [String],
        /// The most events per trace.
        limit: usize,
    },
    /// [`GraphReader::edges_limited_many`] (answered as [`ManyAnswer::Edges`]).
    EdgesLimited {
        /// Each `(node, edge type)`.
        reads: &'a [(NodeKey, &'a str)],
        /// Outgoing (`true`) or incoming.
        out: bool,
        /// The most edges per read.
        limit: usize,
    },
}

/// The answer to one [`ManyRead`], the answer of the method it names.
#[derive(Debug, Clone, PartialEq)]
pub enum ManyAnswer {
    /// Of [`ManyRead::Nodes`].
    Nodes(Vec<Option<Node>>),
    /// Of [`ManyRead::NodesExist`].
    Exist(Vec<bool>),
    /// Of [`ManyRead::EdgesOf`] and [`ManyRead::EdgesLimited`].
    Edges(Vec<Vec<Edge>>),
    /// Of [`ManyRead::ExistingIds`].
    Ids(Vec<String>),
    /// Of [`ManyRead::ExistingIdsByLabel`].
    IdsByLabel(Vec<Vec<String>>),
    /// Of [`ManyRead::SessionEvents`].
    Slots(Vec<Vec<SessionSlot>>),
    /// Of [`ManyRead::TraceEvents`].
    TraceEvents(Vec<Vec<String>>),
}

/// The error of an answer taken as another kind than the read's (a backend's bug).
fn mismatch(wanted: &str, got: &ManyAnswer) -> StoreError {
    StoreError::Corruption(format!(
        "a read answered together is {got:?}-shaped where {wanted} was asked (rule: read_together.kind)"
    ))
}

impl ManyAnswer {
    /// The answer of a [`ManyRead::Nodes`].
    pub fn into_nodes(self) -> Result<Vec<Option<Node>>, StoreError> {
        match self {
            ManyAnswer::Nodes(v) => Ok(v),
            other => Err(mismatch("nodes", &other)),
        }
    }
    /// The answer of a [`ManyRead::NodesExist`].
    pub fn into_exist(self) -> Result<Vec<bool>, StoreError> {
        match self {
            ManyAnswer::Exist(v) => Ok(v),
            other => Err(mismatch("nodes_exist", &other)),
        }
    }
    /// The answer of a [`ManyRead::EdgesOf`] or [`ManyRead::EdgesLimited`].
    pub fn into_edges(self) -> Result<Vec<Vec<Edge>>, StoreError> {
        match self {
            ManyAnswer::Edges(v) => Ok(v),
            other => Err(mismatch("edges_of_many", &other)),
        }
    }
    /// The answer of a [`ManyRead::ExistingIds`].
    pub fn into_ids(self) -> Result<Vec<String>, StoreError> {
        match self {
            ManyAnswer::Ids(v) => Ok(v),
            other => Err(mismatch("existing_ids", &other)),
        }
    }
    /// The answer of a [`ManyRead::ExistingIdsByLabel`].
    pub fn into_ids_by_label(self) -> Result<Vec<Vec<String>>, StoreError> {
        match self {
            ManyAnswer::IdsByLabel(v) => Ok(v),
            other => Err(mismatch("existing_ids_by_label", &other)),
        }
    }
    /// The answer of a [`ManyRead::SessionEvents`].
    pub fn into_slots(self) -> Result<Vec<Vec<SessionSlot>>, StoreError> {
        match self {
            ManyAnswer::Slots(v) => Ok(v),
            other => Err(mismatch("session_events_many", &other)),
        }
    }
    /// The answer of a [`ManyRead::TraceEvents`].
    pub fn into_trace_events(self) -> Result<Vec<Vec<String>>, StoreError> {
        match self {
            ManyAnswer::TraceEvents(v) => Ok(v),
            other => Err(mismatch("trace_events_many", &other)),
        }
    }
}

/// `read` answered by the method it names on `graph`: what [`GraphReader::read_together`]
/// does for each read by default.
pub fn read_one<G: GraphReader + ?Sized>(
    graph: &G,
    read: &ManyRead<'_>,
) -> Result<ManyAnswer, StoreError> {
    Ok(match *read {
        ManyRead::Nodes(keys) => ManyAnswer::Nodes(graph.nodes(keys)?),
        ManyRead::NodesExist(keys) => ManyAnswer::Exist(graph.nodes_exist(keys)?),
        ManyRead::EdgesOf { keys, edge_type, direction } => {
            ManyAnswer::Edges(graph.edges_of_many(keys, edge_type, direction)?)
        }
        ManyRead::ExistingIds { label, ids } => ManyAnswer::Ids(graph.existing_ids(label, ids)?),
        ManyRead::ExistingIdsByLabel { labels, ids } => {
            ManyAnswer::IdsByLabel(graph.existing_ids_by_label(labels, ids)?)
        }
        ManyRead::SessionEvents { ids, limit } => {
            ManyAnswer::Slots(graph.session_events_many(ids, limit)?)
        }
        ManyRead::TraceEvents { ids, limit } => {
            ManyAnswer::TraceEvents(graph.trace_events_many(ids, limit)?)
        }
        ManyRead::EdgesLimited { reads, out, limit } => {
            ManyAnswer::Edges(graph.edges_limited_many(reads, out, limit)?)
        }
    })
}
