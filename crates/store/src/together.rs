//! Several independent reads of many keys answered together ([`GraphReader::read_together`]):
//! on a store whose reads are round trips, reads that do not depend on each other's answers
//! cost one round trip instead of one each; elsewhere they run one after the other, as the
//! caller would have run them.

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};

use crate::{EdgeGroup, GraphReader, SessionSlot, StoreError};

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
    /// [`GraphReader::edge_groups_many`].
    EdgeGroups {
        /// The nodes.
        keys: &'a [NodeKey],
        /// The most edges per group.
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
    /// Of [`ManyRead::EdgeGroups`].
    Groups(Vec<Vec<EdgeGroup>>),
}

/// The error of an answer taken as another kind than the read's (a backend's bug).
fn mismatch(wanted: &str, got: &str) -> StoreError {
    StoreError::Corruption(format!(
        "a read answered together is the answer of {got} where {wanted} was asked (rule: read_together.kind)"
    ))
}

impl ManyAnswer {
    /// The name of the method whose answer this is.
    fn kind(&self) -> &'static str {
        match self {
            ManyAnswer::Nodes(_) => "nodes",
            ManyAnswer::Exist(_) => "nodes_exist",
            ManyAnswer::Edges(_) => "edges_of_many",
            ManyAnswer::Ids(_) => "existing_ids",
            ManyAnswer::IdsByLabel(_) => "existing_ids_by_label",
            ManyAnswer::Slots(_) => "session_events_many",
            ManyAnswer::TraceEvents(_) => "trace_events_many",
            ManyAnswer::Groups(_) => "edge_groups_many",
        }
    }

    /// The answer of a [`ManyRead::Nodes`].
    pub fn into_nodes(self) -> Result<Vec<Option<Node>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Nodes(v) = self else { return Err(mismatch("nodes", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::NodesExist`].
    pub fn into_exist(self) -> Result<Vec<bool>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Exist(v) = self else { return Err(mismatch("nodes_exist", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::EdgesOf`] or [`ManyRead::EdgesLimited`].
    pub fn into_edges(self) -> Result<Vec<Vec<Edge>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Edges(v) = self else { return Err(mismatch("edges_of_many", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::ExistingIds`].
    pub fn into_ids(self) -> Result<Vec<String>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Ids(v) = self else { return Err(mismatch("existing_ids", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::ExistingIdsByLabel`].
    pub fn into_ids_by_label(self) -> Result<Vec<Vec<String>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::IdsByLabel(v) = self else {
            return Err(mismatch("existing_ids_by_label", kind));
        };
        Ok(v)
    }
    /// The answer of a [`ManyRead::SessionEvents`].
    pub fn into_slots(self) -> Result<Vec<Vec<SessionSlot>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Slots(v) = self else { return Err(mismatch("session_events_many", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::EdgeGroups`].
    pub fn into_groups(self) -> Result<Vec<Vec<EdgeGroup>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::Groups(v) = self else { return Err(mismatch("edge_groups_many", kind)) };
        Ok(v)
    }
    /// The answer of a [`ManyRead::TraceEvents`].
    pub fn into_trace_events(self) -> Result<Vec<Vec<String>>, StoreError> {
        let kind = self.kind();
        let ManyAnswer::TraceEvents(v) = self else {
            return Err(mismatch("trace_events_many", kind));
        };
        Ok(v)
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
        ManyRead::EdgeGroups { keys, limit } => {
            ManyAnswer::Groups(graph.edge_groups_many(keys, limit)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use ctxgraph_ontology::graph::{Direction, Node, NodeKey, Properties};

    use super::{ManyAnswer, ManyRead};
    use crate::{Embedded, GraphReader, GraphStore, OpenMode};

    #[test]
    fn reads_together_answer_as_each_method_in_order_and_an_answer_keeps_its_kind() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store =
            Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let mut w = store.begin_write().unwrap();
        let here = NodeKey::new("Event", "e1");
        w.put_node(&Node { key: here.clone(), props: Properties::new() }).unwrap();
        w.commit().unwrap();
        let read = store.begin_read().unwrap();
        let keys = [NodeKey::new("Event", "gone"), here.clone(), here];
        let ids = ["e1".to_owned(), "gone".to_owned()];
        let answers = read
            .read_together(&[
                ManyRead::NodesExist(&keys),
                ManyRead::ExistingIds { label: "Event", ids: &ids },
                ManyRead::EdgesOf { keys: &keys, edge_type: None, direction: Direction::Both },
                ManyRead::EdgeGroups { keys: &keys, limit: 4 },
            ])
            .unwrap();
        assert_eq!(answers[0], ManyAnswer::Exist(vec![false, true, true]));
        assert_eq!(answers[1], ManyAnswer::Ids(vec!["e1".to_owned()]));
        assert_eq!(answers[2], ManyAnswer::Edges(vec![Vec::new(); 3]));
        assert_eq!(answers[3], ManyAnswer::Groups(vec![Vec::new(); 3]));
        assert!(answers[3].clone().into_edges().is_err());
        assert_eq!(answers[3].clone().into_groups().unwrap().len(), 3);
        let err = answers[1].clone().into_nodes().unwrap_err().to_string();
        assert!(err.contains("existing_ids") && err.contains("read_together.kind"), "{err}");
        assert_eq!(answers[1].clone().into_ids().unwrap(), ["e1"]);
    }
}
