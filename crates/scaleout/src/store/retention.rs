//! Retention on a scale-out store ([`ctxgraph_store::RemoteStore::retain`]): the pass runs over
//! a [`BatchFold`] (the fold's own write batch: events leave the graph as a forget's fold takes
//! them out, with their edges, session places and stage-2 data) plus the archive marks it adds,
//! and commits as one watched `MULTI`/`EXEC`: a worker that folds, enriches or consolidates
//! meanwhile makes it apply nothing, and the engine runs the pass again.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_store::{
    Archived, ProjectionGraph, RetentionBody, RetentionWrite, SessionSlot, StoreError,
};

use super::ScaleOutStore;
use crate::batch::BatchFold;
use crate::falkor_graph::FalkorGraph;

/// A retention transaction: the graph's writes held in `fold`, the archive marks in `marks`.
struct RetentionBatch<'g> {
    graph: &'g FalkorGraph,
    fold: BatchFold<'g>,
    /// Marks this transaction adds.
    marks: BTreeMap<NodeKey, String>,
}

impl RetentionBatch<'_> {
    /// Apply the writes and the marks at once, the projection checkpoint left where it was;
    /// whether they were applied (`false`: the graph moved, nothing was).
    fn commit(self) -> Result<bool, StoreError> {
        let through = self.fold.start();
        let extra = self.graph.put_archive_marks(&self.marks)?.into_iter().collect();
        self.fold.commit_with(through, extra)
    }
}

impl ProjectionGraph for RetentionBatch<'_> {
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        self.fold.node(key)
    }
    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        self.fold.node_exists(key)
    }
    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        self.fold.edge(key)
    }
    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        self.fold.edges_of(key, edge_type, direction)
    }
    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        self.fold.session_events(session_id, limit)
    }
    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        self.fold.session_tail(session_id)
    }
    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        self.fold.session_neighbors(session_id, slot)
    }
    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        self.fold.pending_for(key)
    }
    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        self.fold.pending_edges()
    }
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        self.fold.put_node(node)
    }
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        self.fold.put_node_owned(node)
    }
    fn node_for_update(&mut self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        self.fold.node_for_update(key)
    }
    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        self.fold.put_edge(edge)
    }
    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError> {
        self.fold.delete_node(key)
    }
    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        self.fold.delete_edge(key)
    }
    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError> {
        self.fold.put_session_slot(session_id, slot)
    }
    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError> {
        self.fold.delete_session_slot(session_id, slot)
    }
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError> {
        self.fold.put_pending(waiting_for, edge)
    }
    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        self.fold.take_pending(key)
    }
}

impl RetentionWrite for RetentionBatch<'_> {
    fn nodes_of_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError> {
        self.graph.nodes_by_label(label, after, limit)
    }

    fn archive_marks(
        &self,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<Vec<Archived>, StoreError> {
        let mut all = self.graph.archive_marks()?;
        all.extend(self.marks.iter().map(|(k, at)| (k.clone(), at.clone())));
        Ok(all
            .into_iter()
            .filter(|(k, _)| after.is_none_or(|a| k > a))
            .take(limit)
            .map(|(key, archived_at)| Archived { key, archived_at })
            .collect())
    }

    fn mark_archived(&mut self, key: &NodeKey, archived_at: &str) -> Result<(), StoreError> {
        self.marks.insert(key.clone(), archived_at.to_owned());
        Ok(())
    }
}

impl ScaleOutStore {
    /// [`ctxgraph_store::RemoteStore::retain`]: `body` over a retention transaction.
    pub(super) fn retain_in_batch(&self, body: &mut RetentionBody<'_>) -> Result<bool, StoreError> {
        // A connection of its own, which holds the batch's watch. Retention deletes nodes and
        // links existing ones: it needs no label the schema adds, so none is ensured (a plan
        // creates nothing on the server).
        let graph = FalkorGraph::connect_read(&self.url)?;
        let fold = BatchFold::new(&graph)?;
        let mut batch = RetentionBatch { graph: &graph, fold, marks: BTreeMap::new() };
        if !body(&mut batch)? {
            // Dropped: the batch ends its watch, nothing is written.
            return Ok(false);
        }
        batch.commit()
    }

    /// [`ctxgraph_store::RemoteStore::drop_archive_marks`].
    pub(super) fn drop_marks(&self) -> Result<(), StoreError> {
        let conn = self.take()?;
        conn.graph.drop_archive_marks()?;
        self.give_back(conn);
        Ok(())
    }
}
