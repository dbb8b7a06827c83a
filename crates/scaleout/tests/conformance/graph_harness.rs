//! The graph backends under test, behind the core of the graph traits that both implement.

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_scaleout::{FalkorGraph, StoreUrl};
use ctxgraph_store::{
    Embedded, GraphCounts, GraphReader, GraphStore, OpenMode, ProjectionGraph, SessionSlot,
    StoreError,
};
use tempfile::TempDir;

use crate::harness::{admin, fresh_name, redis_server};

type R<T> = Result<T, StoreError>;

/// The core graph operations, as the tests call them (each call its own transaction).
pub(crate) trait Graph {
    fn put_node(&mut self, node: &Node) -> R<()>;
    fn node(&mut self, key: &NodeKey) -> R<Option<Node>>;
    fn node_exists(&mut self, key: &NodeKey) -> R<bool>;
    fn existing_ids(&mut self, label: &str, ids: &[String]) -> R<Vec<String>>;
    fn nodes_by_label(&mut self, label: &str, after: Option<&str>, limit: usize) -> R<Vec<Node>>;
    fn delete_node(&mut self, key: &NodeKey) -> R<bool>;
    fn put_edge(&mut self, edge: &Edge) -> R<()>;
    fn edge(&mut self, key: &EdgeKey) -> R<Option<Edge>>;
    fn delete_edge(&mut self, key: &EdgeKey) -> R<bool>;
    fn edges_of(&mut self, key: &NodeKey, ty: Option<&str>, dir: Direction) -> R<Vec<Edge>>;
    fn put_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()>;
    fn delete_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()>;
    fn session_events(&mut self, session: &str, limit: usize) -> R<Vec<SessionSlot>>;
    fn session_tail(&mut self, session: &str) -> R<Option<SessionSlot>>;
    fn session_neighbors(
        &mut self,
        session: &str,
        slot: &SessionSlot,
    ) -> R<(Option<SessionSlot>, Option<SessionSlot>)>;
    fn sessions(&mut self, after: Option<&str>, limit: usize) -> R<Vec<String>>;
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> R<()>;
    fn pending_for(&mut self, key: &NodeKey) -> R<Vec<Edge>>;
    fn take_pending(&mut self, key: &NodeKey) -> R<Vec<Edge>>;
    fn pending_edges(&mut self) -> R<Vec<(NodeKey, Edge)>>;
    fn projected_through(&mut self) -> R<u64>;
    fn set_projected_through(&mut self, position: u64) -> R<()>;
    fn counts(&mut self) -> R<GraphCounts>;
    fn clear_graph(&mut self) -> R<()>;
}

/// The embedded store's graph.
pub(crate) struct EmbeddedGraph {
    _dir: TempDir,
    store: Embedded,
}

impl EmbeddedGraph {
    pub(crate) fn new() -> EmbeddedGraph {
        let dir = TempDir::new().unwrap();
        let store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
        EmbeddedGraph { _dir: dir, store }
    }

    fn write<T>(&mut self, f: impl FnOnce(&mut dyn GraphStore) -> R<T>) -> R<T> {
        let mut w = self.store.begin_write()?;
        let out = f(&mut w)?;
        w.commit()?;
        Ok(out)
    }

    fn read<T>(&mut self, f: impl FnOnce(&dyn GraphReader) -> R<T>) -> R<T> {
        f(&self.store.begin_read()?)
    }
}

impl Graph for EmbeddedGraph {
    fn put_node(&mut self, node: &Node) -> R<()> {
        self.write(|g| g.put_node(node))
    }
    fn node(&mut self, key: &NodeKey) -> R<Option<Node>> {
        self.read(|g| g.node(key))
    }
    fn node_exists(&mut self, key: &NodeKey) -> R<bool> {
        self.read(|g| g.node_exists(key))
    }
    fn existing_ids(&mut self, label: &str, ids: &[String]) -> R<Vec<String>> {
        self.read(|g| g.existing_ids(label, ids))
    }
    fn nodes_by_label(&mut self, label: &str, after: Option<&str>, limit: usize) -> R<Vec<Node>> {
        self.read(|g| g.nodes_by_label(label, after, limit))
    }
    fn delete_node(&mut self, key: &NodeKey) -> R<bool> {
        self.write(|g| g.delete_node(key))
    }
    fn put_edge(&mut self, edge: &Edge) -> R<()> {
        self.write(|g| g.put_edge(edge))
    }
    fn edge(&mut self, key: &EdgeKey) -> R<Option<Edge>> {
        self.read(|g| g.edge(key))
    }
    fn delete_edge(&mut self, key: &EdgeKey) -> R<bool> {
        self.write(|g| g.delete_edge(key))
    }
    fn edges_of(&mut self, key: &NodeKey, ty: Option<&str>, dir: Direction) -> R<Vec<Edge>> {
        self.read(|g| g.edges_of(key, ty, dir))
    }
    fn put_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()> {
        self.write(|g| g.put_session_slot(session, slot))
    }
    fn delete_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()> {
        self.write(|g| g.delete_session_slot(session, slot))
    }
    fn session_events(&mut self, session: &str, limit: usize) -> R<Vec<SessionSlot>> {
        self.read(|g| g.session_events(session, limit))
    }
    fn session_tail(&mut self, session: &str) -> R<Option<SessionSlot>> {
        self.read(|g| g.session_tail(session))
    }
    fn session_neighbors(
        &mut self,
        session: &str,
        slot: &SessionSlot,
    ) -> R<(Option<SessionSlot>, Option<SessionSlot>)> {
        self.read(|g| g.session_neighbors(session, slot))
    }
    fn sessions(&mut self, after: Option<&str>, limit: usize) -> R<Vec<String>> {
        self.read(|g| g.sessions(after, limit))
    }
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> R<()> {
        self.write(|g| g.put_pending(waiting_for, edge))
    }
    fn pending_for(&mut self, key: &NodeKey) -> R<Vec<Edge>> {
        self.read(|g| g.pending_for(key))
    }
    fn take_pending(&mut self, key: &NodeKey) -> R<Vec<Edge>> {
        self.write(|g| g.take_pending(key))
    }
    fn pending_edges(&mut self) -> R<Vec<(NodeKey, Edge)>> {
        self.read(|g| g.pending_edges())
    }
    fn projected_through(&mut self) -> R<u64> {
        self.read(|g| g.projected_through())
    }
    fn set_projected_through(&mut self, position: u64) -> R<()> {
        self.write(|g| g.set_projected_through(position))
    }
    fn counts(&mut self) -> R<GraphCounts> {
        self.read(|g| g.counts())
    }
    fn clear_graph(&mut self) -> R<()> {
        self.write(|g| g.clear_graph())
    }
}

/// A graph of its own name on the server `CTXGRAPH_TEST_REDIS` names, deleted when dropped.
pub(crate) struct FalkorBackend {
    url: StoreUrl,
    pub(crate) graph: FalkorGraph,
}

impl FalkorBackend {
    pub(crate) fn new() -> FalkorBackend {
        let url = StoreUrl::parse(&format!("{}/{}", redis_server(), fresh_name())).unwrap();
        let graph = FalkorGraph::connect(&url, &Schema::core().unwrap())
            .unwrap_or_else(|e| panic!("cannot reach the FalkorDB server of {url}: {e}"));
        FalkorBackend { url, graph }
    }

    pub(crate) fn url(&self) -> &StoreUrl {
        &self.url
    }
}

impl Drop for FalkorBackend {
    fn drop(&mut self) {
        let mut conn = admin(&self.url);
        let _: Result<redis::Value, _> =
            redis::cmd("GRAPH.DELETE").arg(self.graph.graph_name()).query(&mut conn);
    }
}

impl Graph for FalkorBackend {
    fn put_node(&mut self, node: &Node) -> R<()> {
        self.graph.put_node(node)
    }
    fn node(&mut self, key: &NodeKey) -> R<Option<Node>> {
        ProjectionGraph::node(&self.graph, key)
    }
    fn node_exists(&mut self, key: &NodeKey) -> R<bool> {
        ProjectionGraph::node_exists(&self.graph, key)
    }
    fn existing_ids(&mut self, label: &str, ids: &[String]) -> R<Vec<String>> {
        self.graph.existing_ids(label, ids)
    }
    fn nodes_by_label(&mut self, label: &str, after: Option<&str>, limit: usize) -> R<Vec<Node>> {
        self.graph.nodes_by_label(label, after, limit)
    }
    fn delete_node(&mut self, key: &NodeKey) -> R<bool> {
        self.graph.delete_node(key)
    }
    fn put_edge(&mut self, edge: &Edge) -> R<()> {
        self.graph.put_edge(edge)
    }
    fn edge(&mut self, key: &EdgeKey) -> R<Option<Edge>> {
        ProjectionGraph::edge(&self.graph, key)
    }
    fn delete_edge(&mut self, key: &EdgeKey) -> R<bool> {
        self.graph.delete_edge(key)
    }
    fn edges_of(&mut self, key: &NodeKey, ty: Option<&str>, dir: Direction) -> R<Vec<Edge>> {
        ProjectionGraph::edges_of(&self.graph, key, ty, dir)
    }
    fn put_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()> {
        self.graph.put_session_slot(session, slot)
    }
    fn delete_session_slot(&mut self, session: &str, slot: &SessionSlot) -> R<()> {
        self.graph.delete_session_slot(session, slot)
    }
    fn session_events(&mut self, session: &str, limit: usize) -> R<Vec<SessionSlot>> {
        ProjectionGraph::session_events(&self.graph, session, limit)
    }
    fn session_tail(&mut self, session: &str) -> R<Option<SessionSlot>> {
        ProjectionGraph::session_tail(&self.graph, session)
    }
    fn session_neighbors(
        &mut self,
        session: &str,
        slot: &SessionSlot,
    ) -> R<(Option<SessionSlot>, Option<SessionSlot>)> {
        ProjectionGraph::session_neighbors(&self.graph, session, slot)
    }
    fn sessions(&mut self, after: Option<&str>, limit: usize) -> R<Vec<String>> {
        self.graph.sessions(after, limit)
    }
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> R<()> {
        self.graph.put_pending(waiting_for, edge)
    }
    fn pending_for(&mut self, key: &NodeKey) -> R<Vec<Edge>> {
        ProjectionGraph::pending_for(&self.graph, key)
    }
    fn take_pending(&mut self, key: &NodeKey) -> R<Vec<Edge>> {
        self.graph.take_pending(key)
    }
    fn pending_edges(&mut self) -> R<Vec<(NodeKey, Edge)>> {
        ProjectionGraph::pending_edges(&self.graph)
    }
    fn projected_through(&mut self) -> R<u64> {
        self.graph.projected_through()
    }
    fn set_projected_through(&mut self, position: u64) -> R<()> {
        self.graph.set_projected_through(position)
    }
    fn counts(&mut self) -> R<GraphCounts> {
        self.graph.counts()
    }
    fn clear_graph(&mut self) -> R<()> {
        self.graph.clear_graph()
    }
}
