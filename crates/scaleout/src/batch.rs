//! A batch of projection writes held back and applied as one transaction with the checkpoint,
//! so a fold is applied whole or not at all: the unit that makes a worker's effect exactly once.
//!
//! The projection reads before it writes (does the entity exist, who are the event's session
//! neighbours, which edges wait for this node), and within a batch it must see its own writes.
//! `BatchFold` answers reads from what the batch wrote so far over the graph as it was when the
//! batch began: nodes and edges by key, the whole order of each session the batch touches, and
//! the parked edges of each node it touches (both read from the graph once, then kept).
//!
//! Reads of the graph itself are kept for the batch's life too (an entity that a page of
//! events names is read once): the graph cannot change under the batch without moving the
//! checkpoint, and then the commit applies nothing. [`BatchFold::prefetch`] reads a page's keys
//! ahead, one query per label for nodes, one for parked edges, one for session orders, so the
//! fold itself rarely waits for the graph.
//!
//! The batch keeps the final state of every key it wrote, not the list of its writes: `commit`
//! sends that state as a few `UNWIND` queries per label and edge type (`falkor_graph/bulk.rs`),
//! which leave the graph as replaying every write one by one would.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_store::{ProjectionGraph, SessionSlot, StoreError};

use crate::falkor_graph::{FalkorGraph, NetChanges, merged_writes, name, pending_order, sort_side};

/// One side of a node's edges: the node, an edge type (or every type), outgoing or not.
type EdgeSide = (NodeKey, Option<String>, bool);

/// Projection writes over a [`FalkorGraph`], applied by [`BatchFold::commit`] or dropped.
pub struct BatchFold<'g> {
    base: &'g FalkorGraph,
    /// The checkpoint when the batch began (watched: the commit fails if it moved).
    start: u64,
    /// The last node creation number given (watched with the checkpoint).
    last_seq: i64,
    /// The creation number of each node the batch wrote: taken at the write that found the
    /// node absent from the batch, so new nodes are numbered in the order the projection
    /// creates them, as the embedded store numbers its rows (a node the graph already has
    /// keeps its own; its number goes unused).
    seqs: BTreeMap<NodeKey, i64>,
    /// Nodes written (`Some`) or deleted (`None`) in this batch.
    nodes: BTreeMap<NodeKey, Option<Node>>,
    /// Nodes deleted in this batch: their edges in the graph are gone.
    detached: BTreeSet<NodeKey>,
    /// Edges written (`Some`) or deleted (`None`) in this batch.
    edges: BTreeMap<EdgeKey, Option<Edge>>,
    /// The whole order of each session the batch touched (or read ahead).
    sessions: BTreeMap<String, BTreeSet<SessionSlot>>,
    /// Session slots the batch changed: whether the graph had each when the batch began, and
    /// whether the batch leaves it there.
    slot_changes: BTreeMap<(String, SessionSlot), (bool, bool)>,
    /// The parked edges of each node the batch touched (or read ahead), by edge key.
    pending: BTreeMap<NodeKey, BTreeMap<EdgeKey, Edge>>,
    /// Nodes whose parked edges the batch changed.
    pending_changed: BTreeSet<NodeKey>,
    /// How many graph writes the projection made.
    writes: usize,
    /// Whether `commit` ran (and so ended the watch).
    finished: bool,
    /// Nodes read from the graph.
    read_nodes: RefCell<BTreeMap<NodeKey, Option<Node>>>,
    /// FalkorDB's internal ids of the nodes read ahead (the commit seeks an edge's end by
    /// id rather than look its key up, unless the batch deleted the node).
    node_ids: BTreeMap<NodeKey, i64>,
    /// Edges read from the graph, by node, type and side (`true`: outgoing).
    read_edges: RefCell<BTreeMap<EdgeSide, Vec<Edge>>>,
}

impl std::fmt::Debug for BatchFold<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchFold").field("writes", &self.writes).finish_non_exhaustive()
    }
}

impl<'g> BatchFold<'g> {
    /// Start a batch over `base`, watching its checkpoint (read it with
    /// [`BatchFold::start`]: the batch folds the records after it).
    pub fn new(base: &'g FalkorGraph) -> Result<BatchFold<'g>, StoreError> {
        let (start, last_seq) = base.watch_checkpoint()?;
        Ok(BatchFold::begun(base, start, last_seq))
    }

    /// [`BatchFold::new`], with `meanwhile` run while the server answers the watch (a fold
    /// reads the log there, from where it expects the checkpoint to be).
    pub fn begin_meanwhile(
        base: &'g FalkorGraph,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<BatchFold<'g>, StoreError> {
        let (start, last_seq) = base.watch_checkpoint_meanwhile(meanwhile)?;
        Ok(BatchFold::begun(base, start, last_seq))
    }

    /// A batch over `base` whose watch is in place, begun at checkpoint `start` with `last_seq`
    /// the last node creation number.
    fn begun(base: &'g FalkorGraph, start: u64, last_seq: i64) -> BatchFold<'g> {
        BatchFold {
            base,
            start,
            last_seq,
            seqs: BTreeMap::new(),
            nodes: BTreeMap::new(),
            detached: BTreeSet::new(),
            edges: BTreeMap::new(),
            sessions: BTreeMap::new(),
            slot_changes: BTreeMap::new(),
            pending: BTreeMap::new(),
            pending_changed: BTreeSet::new(),
            writes: 0,
            finished: false,
            read_nodes: RefCell::new(BTreeMap::new()),
            node_ids: BTreeMap::new(),
            read_edges: RefCell::new(BTreeMap::new()),
        }
    }

    /// The graph's checkpoint when the batch began.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// How many graph writes the projection made in this batch.
    pub fn len(&self) -> usize {
        self.writes
    }

    /// Whether the batch holds no write.
    pub fn is_empty(&self) -> bool {
        self.writes == 0
    }

    /// Read ahead, from the graph as it was when the batch began, what folding the next
    /// records will ask of it: the nodes `nodes` (one query per label), the edges parked on
    /// them (one query) and the whole order of the sessions `sessions` (one query), the
    /// queries sent in one pipeline (`FalkorGraph::read_ahead`). Keys the
    /// batch already read or wrote are skipped; a read the fold makes of a key not read ahead
    /// still goes to the graph, so reading ahead changes how fast a fold runs, never what it
    /// writes.
    pub fn prefetch(
        &mut self,
        nodes: &BTreeSet<NodeKey>,
        sessions: &BTreeSet<String>,
    ) -> Result<(), StoreError> {
        let mut by_label: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        {
            let read = self.read_nodes.borrow();
            for key in nodes {
                if !self.nodes.contains_key(key) && !read.contains_key(key) {
                    by_label.entry(&key.label).or_default().push(&key.id);
                }
            }
        }
        let parked: Vec<&NodeKey> =
            nodes.iter().filter(|k| !self.pending.contains_key(*k)).collect();
        let unread: Vec<&str> = sessions
            .iter()
            .filter(|s| !self.sessions.contains_key(*s))
            .map(String::as_str)
            .collect();
        let ahead = self.base.read_ahead(&by_label, &parked, &unread)?;

        for (node, id) in ahead.nodes.iter().zip(&ahead.node_ids) {
            self.node_ids.insert(node.key.clone(), *id);
        }
        let mut found: BTreeMap<NodeKey, Node> =
            ahead.nodes.into_iter().map(|n| (n.key.clone(), n)).collect();
        {
            let mut read = self.read_nodes.borrow_mut();
            for (label, ids) in &by_label {
                for id in ids {
                    let key = NodeKey { label: (*label).to_owned(), id: (*id).to_owned() };
                    let node = found.remove(&key);
                    read.insert(key, node);
                }
            }
        }

        if !parked.is_empty() {
            let mut loaded: BTreeMap<NodeKey, BTreeMap<EdgeKey, Edge>> =
                parked.iter().map(|k| ((*k).clone(), BTreeMap::new())).collect();
            for (wait, edge) in ahead.pending {
                if let Some(edges) = loaded.get_mut(&wait) {
                    edges.insert(edge.key.clone(), edge);
                }
            }
            self.pending.extend(loaded);
        }

        if !unread.is_empty() {
            let mut loaded: BTreeMap<String, BTreeSet<SessionSlot>> =
                unread.iter().map(|s| ((*s).to_owned(), BTreeSet::new())).collect();
            for (session, slot) in ahead.slots {
                if let Some(slots) = loaded.get_mut(&session) {
                    slots.insert(slot);
                }
            }
            self.sessions.extend(loaded);
        }
        Ok(())
    }

    /// Apply every write and move the graph's checkpoint to `through`, in one transaction, if
    /// no other fold moved the checkpoint since the batch began; whether it was applied (when
    /// not, nothing was: fold again from the new checkpoint).
    pub fn commit(self, through: u64) -> Result<bool, StoreError> {
        self.commit_with(through, Vec::new())
    }

    /// [`BatchFold::commit`], with the plain commands `extra` run in the same transaction after
    /// the batch's writes (retention's archive marks).
    pub(crate) fn commit_with(
        mut self,
        through: u64,
        extra: Vec<redis::Cmd>,
    ) -> Result<bool, StoreError> {
        let (writes, drops) = self.finish(extra)?;
        self.base.commit_watched(&writes, drops, through, self.last_seq)
    }

    /// [`BatchFold::commit`], and the next batch begun in the same round trip: the watch of
    /// the checkpoint follows the transaction in one pipeline, and `meanwhile` runs while the
    /// server answers (a fold reads the next page of the log there, on the log's connection).
    /// Returns whether this batch was applied, and the next batch: it folds the records after
    /// its [`BatchFold::start`], which is `through` unless another fold moved the checkpoint.
    pub fn commit_and_begin(
        mut self,
        through: u64,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(bool, BatchFold<'g>), StoreError> {
        let (writes, drops) = self.finish(Vec::new())?;
        let base = self.base;
        let next =
            base.commit_watched_then_watch(&writes, drops, through, self.last_seq, meanwhile)?;
        Ok((next.committed, BatchFold::begun(base, next.checkpoint, next.last_seq)))
    }

    /// The batch's net writes and the plain commands its transaction runs after them (the
    /// stage-2 data of the nodes it deletes, then `extra`); the batch counts as finished from
    /// here (its transaction ends the watch).
    fn finish(
        &mut self,
        extra: Vec<redis::Cmd>,
    ) -> Result<(Vec<crate::falkor_graph::Write>, Vec<redis::Cmd>), StoreError> {
        // The stage-2 data (vectors, document terms, postings) of the nodes the graph loses,
        // dropped in the same transaction: read before the graph changes, while it still
        // holds their creation numbers.
        let deleted: Vec<&NodeKey> = self.detached.iter().collect();
        let mut drops = self.base.stage2_drops(&deleted)?;
        drops.extend(extra);
        // A fold from an empty graph names every entity it folds (`entity_names.rs`).
        if self.start == 0 {
            drops.push(self.base.named_layout_cmd());
        }
        // The transaction ends the watch: nothing is left for `drop` to undo.
        self.finished = true;
        let changes = NetChanges {
            detached: self.detached.iter().collect(),
            nodes: self
                .nodes
                .iter()
                .map(|(k, n)| {
                    (k, n.as_ref(), self.absent(k), self.seqs.get(k).copied().unwrap_or(0))
                })
                .collect(),
            edges: self
                .edges
                .iter()
                .map(|(k, e)| (k, e.as_ref(), self.absent(&k.from) || self.absent(&k.to)))
                .collect(),
            slots: self
                .slot_changes
                .iter()
                .filter(|(_, (before, after))| before != after)
                .map(|((session, slot), (_, after))| (session.as_str(), slot, *after))
                .collect(),
            pending: self
                .pending_changed
                .iter()
                .map(|k| (k, self.pending.get(k).map(|p| p.values().collect()).unwrap_or_default()))
                .collect(),
            // A node the batch deleted may be created again under another id.
            ids: self
                .node_ids
                .iter()
                .filter(|(k, _)| !self.detached.contains(*k))
                .map(|(k, id)| (k, *id))
                .collect(),
        };
        Ok((merged_writes(&changes)?, drops))
    }

    fn session(&mut self, session_id: &str) -> Result<&mut BTreeSet<SessionSlot>, StoreError> {
        if !self.sessions.contains_key(session_id) {
            let slots = self.base.session_events(session_id, usize::MAX)?;
            self.sessions.insert(session_id.to_owned(), slots.into_iter().collect());
        }
        self.sessions
            .get_mut(session_id)
            .ok_or_else(|| StoreError::Corruption(format!("session `{session_id}` not loaded")))
    }

    fn parked(&mut self, key: &NodeKey) -> Result<&mut BTreeMap<EdgeKey, Edge>, StoreError> {
        if !self.pending.contains_key(key) {
            let edges = self.base.pending_for(key)?;
            self.pending
                .insert(key.clone(), edges.into_iter().map(|e| (e.key.clone(), e)).collect());
        }
        self.pending
            .get_mut(key)
            .ok_or_else(|| StoreError::Corruption(format!("parked edges of {key} not loaded")))
    }

    /// A node as the graph had it when the batch began.
    fn base_node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        if let Some(node) = self.read_nodes.borrow().get(key) {
            return Ok(node.clone());
        }
        let node = self.base.node(key)?;
        self.read_nodes.borrow_mut().insert(key.clone(), node.clone());
        Ok(node)
    }

    /// Whether a node of the graph as it was exists, without copying it.
    fn base_node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        if let Some(node) = self.read_nodes.borrow().get(key) {
            return Ok(node.is_some());
        }
        Ok(self.base_node(key)?.is_some())
    }

    /// One side of a node's edges as the graph had them when the batch began.
    fn base_edges(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        outgoing: bool,
    ) -> Result<Vec<Edge>, StoreError> {
        let cache_key = (key.clone(), edge_type.map(str::to_owned), outgoing);
        if let Some(edges) = self.read_edges.borrow().get(&cache_key) {
            return Ok(edges.clone());
        }
        let side = if outgoing { Direction::Out } else { Direction::In };
        let edges = self.base.edges_of(key, edge_type, side)?;
        self.read_edges.borrow_mut().insert(cache_key, edges.clone());
        Ok(edges)
    }

    /// Whether the node is known to be absent from the graph when the commit writes nodes: the
    /// batch read it and the graph had none, or the batch deleted it (with its edges) first.
    /// Such a node, and every edge touching it, is created rather than merged.
    fn absent(&self, key: &NodeKey) -> bool {
        self.detached.contains(key) || matches!(self.read_nodes.borrow().get(key), Some(None))
    }

    /// Whether an edge of the graph as it was is still there: neither end deleted in this batch.
    fn base_edge_alive(&self, key: &EdgeKey) -> bool {
        !self.detached.contains(&key.from) && !self.detached.contains(&key.to)
    }

    /// Check a node's label as the commit will need it, at the write that brings it.
    fn check_node(key: &NodeKey) -> Result<(), StoreError> {
        name(&key.label, "label").map(drop)
    }

    /// Check an edge's labels and type as the commit will need them.
    fn check_edge(key: &EdgeKey) -> Result<(), StoreError> {
        name(&key.edge_type, "edge type")?;
        Self::check_node(&key.from)?;
        Self::check_node(&key.to)
    }
}

impl Drop for BatchFold<'_> {
    fn drop(&mut self) {
        if !self.finished {
            self.base.unwatch();
        }
    }
}

impl ProjectionGraph for BatchFold<'_> {
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        match self.nodes.get(key) {
            Some(written) => Ok(written.clone()),
            None => self.base_node(key),
        }
    }

    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        match self.nodes.get(key) {
            Some(written) => Ok(written.is_some()),
            None => self.base_node_exists(key),
        }
    }

    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        if let Some(written) = self.edges.get(key) {
            return Ok(written.clone());
        }
        if !self.base_edge_alive(key) {
            return Ok(None);
        }
        self.base.edge(key)
    }

    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        let mut out = Vec::new();
        for outgoing in [true, false] {
            if !direction.includes(outgoing) {
                continue;
            }
            // The graph's edges still there and not rewritten by the batch …
            let mut edges: BTreeMap<EdgeKey, Edge> = self
                .base_edges(key, edge_type, outgoing)?
                .into_iter()
                .filter(|e| self.base_edge_alive(&e.key) && !self.edges.contains_key(&e.key))
                .map(|e| (e.key.clone(), e))
                .collect();
            // … and the batch's own.
            for (k, e) in &self.edges {
                let near = if outgoing { &k.from } else { &k.to };
                if let Some(e) = e
                    && near == key
                    && edge_type.is_none_or(|t| t == k.edge_type)
                {
                    edges.insert(k.clone(), e.clone());
                }
            }
            let mut edges: Vec<Edge> = edges.into_values().collect();
            sort_side(&mut edges, outgoing);
            out.extend(edges);
        }
        Ok(out)
    }

    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        match self.sessions.get(session_id) {
            Some(slots) => Ok(slots.iter().take(limit).cloned().collect()),
            None => self.base.session_events(session_id, limit),
        }
    }

    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        match self.sessions.get(session_id) {
            Some(slots) => Ok(slots.last().cloned()),
            None => self.base.session_tail(session_id),
        }
    }

    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        match self.sessions.get(session_id) {
            Some(slots) => Ok((
                slots.range(..slot).next_back().cloned(),
                slots
                    .range((std::ops::Bound::Excluded(slot), std::ops::Bound::Unbounded))
                    .next()
                    .cloned(),
            )),
            None => self.base.session_neighbors(session_id, slot),
        }
    }

    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        let mut edges: Vec<Edge> = match self.pending.get(key) {
            Some(parked) => parked.values().cloned().collect(),
            None => self.base.pending_for(key)?,
        };
        edges.sort_by(|a, b| pending_order(&a.key).cmp(&pending_order(&b.key)));
        Ok(edges)
    }

    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        let mut all: Vec<(NodeKey, Edge)> = self
            .base
            .pending_edges()?
            .into_iter()
            .filter(|(wait, _)| !self.pending.contains_key(wait))
            .collect();
        for (wait, parked) in &self.pending {
            all.extend(parked.values().map(|e| (wait.clone(), e.clone())));
        }
        all.sort_by(|a, b| (&a.0, pending_order(&a.1.key)).cmp(&(&b.0, pending_order(&b.1.key))));
        Ok(all)
    }

    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        self.put_node_owned(node.clone())
    }

    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        Self::check_node(&node.key)?;
        self.writes += 1;
        if !matches!(self.nodes.get(&node.key), Some(Some(_))) {
            self.last_seq += 1;
            self.seqs.insert(node.key.clone(), self.last_seq);
        }
        self.nodes.insert(node.key.clone(), Some(node));
        Ok(())
    }

    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        for end in [&edge.key.from, &edge.key.to] {
            if !self.node_exists(end)? {
                return Err(StoreError::Corruption(format!(
                    "edge endpoint {end} is not a stored node"
                )));
            }
        }
        Self::check_edge(&edge.key)?;
        self.writes += 1;
        self.edges.insert(edge.key.clone(), Some(edge.clone()));
        Ok(())
    }

    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError> {
        if !self.node_exists(key)? {
            return Ok(false);
        }
        Self::check_node(key)?;
        self.writes += 1;
        self.nodes.insert(key.clone(), None);
        self.detached.insert(key.clone());
        // The batch's own edges of the node go with it.
        for (k, e) in self.edges.iter_mut() {
            if &k.from == key || &k.to == key {
                *e = None;
            }
        }
        Ok(true)
    }

    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        if self.edge(key)?.is_none() {
            return Ok(false);
        }
        Self::check_edge(key)?;
        self.writes += 1;
        self.edges.insert(key.clone(), None);
        Ok(true)
    }

    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError> {
        let added = self.session(session_id)?.insert(slot.clone());
        self.slot_changes
            .entry((session_id.to_owned(), slot.clone()))
            .or_insert((!added, true))
            .1 = true;
        self.writes += 1;
        Ok(())
    }

    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError> {
        let removed = self.session(session_id)?.remove(slot);
        self.slot_changes
            .entry((session_id.to_owned(), slot.clone()))
            .or_insert((removed, false))
            .1 = false;
        self.writes += 1;
        Ok(())
    }

    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError> {
        self.parked(waiting_for)?.insert(edge.key.clone(), edge.clone());
        self.pending_changed.insert(waiting_for.clone());
        self.writes += 1;
        Ok(())
    }

    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        let parked = std::mem::take(self.parked(key)?);
        let mut edges: Vec<Edge> = parked.into_values().collect();
        edges.sort_by(|a, b| pending_order(&a.key).cmp(&pending_order(&b.key)));
        if !edges.is_empty() {
            self.pending_changed.insert(key.clone());
            self.writes += 1;
        }
        Ok(edges)
    }
}
