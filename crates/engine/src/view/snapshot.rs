//! A consistent snapshot of the log and graph, unfiltered, with the lookups the features are
//! built from (nodes, neighbours, session timelines, causal chains, views, stats). Crate-private:
//! reads leave the engine through [`super::Reader`].

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey};
use ctxgraph_ontology::{RecordKind, Schema};
use ctxgraph_store::{FORMAT_VERSION, LogEntry, ManyAnswer, ManyRead, StoreRead};

use crate::engine::Caches;
use crate::error::Error;
use ctxgraph_ann::SearchParams;

/// The five semantic views of seed 000: typed subgraphs over the shared node set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// FOLLOWS: "when did this happen?"
    Temporal,
    /// CAUSED_BY: "why did this happen?"
    Causal,
    /// REFERENCES: "who or what was involved?"
    Entity,
    /// SIMILAR_TO: "what else is related?"
    Semantic,
    /// SUMMARIZES: "what is the high-level picture?"
    Hierarchical,
}

impl View {
    /// Every view, in documentation order.
    pub const ALL: [View; 5] =
        [View::Temporal, View::Causal, View::Entity, View::Semantic, View::Hierarchical];

    /// The edge type the view is made of.
    pub fn edge_type(self) -> &'static str {
        match self {
            View::Temporal => "FOLLOWS",
            View::Causal => "CAUSED_BY",
            View::Entity => "REFERENCES",
            View::Semantic => "SIMILAR_TO",
            View::Hierarchical => "SUMMARIZES",
        }
    }

    /// The view's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            View::Temporal => "temporal",
            View::Causal => "causal",
            View::Entity => "entity",
            View::Semantic => "semantic",
            View::Hierarchical => "hierarchical",
        }
    }

    /// The question the view answers.
    pub fn question(self) -> &'static str {
        match self {
            View::Temporal => "When did this happen?",
            View::Causal => "Why did this happen?",
            View::Entity => "Who or what was involved?",
            View::Semantic => "What else is related?",
            View::Hierarchical => "What is the high-level picture?",
        }
    }
}

/// Store-wide figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Records in the log (its head position).
    pub log_length: u64,
    /// Last log position folded into the graph.
    pub projected_through: u64,
    /// Last log position enriched (keywords, summary, importance, embedding, text index).
    pub enriched_through: u64,
    /// The embedding model and dimension of the stored vectors, once any exist.
    pub embedding_model: Option<(String, usize)>,
    /// Nodes per type.
    pub nodes: Vec<(String, u64)>,
    /// Stored embeddings, and how many of them are not in the vector index yet (searched
    /// exactly until the next `consolidate`).
    pub vectors: (u64, u64),
    /// Full-text documents, and how many of them are not in the lexical index yet (ranked by
    /// the full-text index until the next build).
    pub text_docs: (u64, u64),
    /// Edges per type.
    pub edges: Vec<(String, u64)>,
    /// Edges waiting for an endpoint that is not in the log yet (for example a missing parent).
    pub pending_edges: u64,
    /// Bytes on disk (database file plus write-ahead log).
    pub bytes_on_disk: u64,
    /// On-disk format version.
    pub format_version: u32,
    /// Loaded schema modules.
    pub modules: Vec<String>,
}

impl Stats {
    /// The positions inside these figures.
    pub fn checkpoints(&self) -> Checkpoints {
        Checkpoints {
            log_length: self.log_length,
            projected_through: self.projected_through,
            enriched_through: self.enriched_through,
        }
    }

    /// Records appended but not yet folded into the graph.
    pub fn projection_lag(&self) -> u64 {
        self.checkpoints().projection_lag()
    }

    /// Records projected but not yet enriched.
    pub fn enrichment_lag(&self) -> u64 {
        self.checkpoints().enrichment_lag()
    }
}

/// Where the log and the two stages are, read without counting anything (cheap at any size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checkpoints {
    /// Records in the log (its head position).
    pub log_length: u64,
    /// Last log position folded into the graph.
    pub projected_through: u64,
    /// Last log position enriched.
    pub enriched_through: u64,
}

impl Checkpoints {
    /// Records appended but not yet folded into the graph.
    pub fn projection_lag(&self) -> u64 {
        self.log_length.saturating_sub(self.projected_through)
    }

    /// Records projected but not yet enriched.
    pub fn enrichment_lag(&self) -> u64 {
        self.projected_through.saturating_sub(self.enriched_through)
    }
}

/// One event of a session timeline with its causal links.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// The event node.
    pub event: Node,
    /// Events it was caused by (present in the graph).
    pub caused_by: Vec<String>,
    /// A parent named by the event but not (yet) in the log.
    pub missing_parent: Option<String>,
}

/// A read view of the store, whatever the backend: on the embedded store one read transaction
/// (consistent), on a remote store the graph as its workers have folded it (each query at a
/// committed fold page, see [`ctxgraph_store::RemoteStore::begin_read`]).
pub(crate) struct Snapshot<'a> {
    /// The backend's read of the log and the graph; only its trait methods are called, so
    /// every feature reads every backend the same way.
    pub(crate) read: Box<dyn StoreRead + 'a>,
    pub(crate) schema: &'a Schema,
    bytes_on_disk: u64,
    caches: &'a Caches,
    /// The graph generation this view reads, read once, when first asked (expansion asks for
    /// every node it expands): on the embedded store it cannot change under the read
    /// transaction; on a remote store it is the generation at that first ask.
    graph_generation: std::cell::OnceCell<u64>,
    /// [`GraphReader::node_generation`] of this view, read once, when first asked.
    node_generation: std::cell::OnceCell<Option<u64>>,
    /// Whether recall may give its in-memory searches to helper threads (see
    /// [`crate::EngineOptions::inline_searches`]).
    pub(crate) helpers: bool,
}

/// Put on `node` the payload of its event record `entry`, whose body parsed as `body`; a body
/// that did not parse is a damaged log.
pub(crate) fn put_payload(
    node: &mut Node,
    entry: &LogEntry,
    body: Result<&serde_json::Value, &serde_json::Error>,
) -> Result<(), Error> {
    let body =
        body.map_err(|e| Error::Corruption { position: entry.position, reason: e.to_string() })?;
    node.props.insert("payload".into(), record_payload(body));
    Ok(())
}

/// The payload an event record's body holds (`{}` when none): what hydration adds to its node,
/// which does not store it.
fn record_payload(body: &serde_json::Value) -> serde_json::Value {
    body.get("payload").cloned().unwrap_or_else(|| serde_json::json!({}))
}

/// The causal parent an event record's body names.
pub(crate) fn record_parent(body: &serde_json::Value) -> Option<NodeKey> {
    body.get("parent_event_id")
        .and_then(serde_json::Value::as_str)
        .map(|p| NodeKey::new("Event", p))
}

/// Nodes as read for a list of keys, in its order, each shared (`None`: no such node).
type SharedNodes = Vec<Option<Arc<Node>>>;

/// The answer of a read sent together, or the corruption of one left unanswered.
pub(crate) fn answered(answer: Option<ManyAnswer>) -> Result<ManyAnswer, Error> {
    answer.ok_or_else(|| Error::Corruption {
        position: 0,
        reason: "a read sent together went unanswered".into(),
    })
}

/// The keys of `keys` that [`Snapshot::nodes_kept`] left to read, each once, in the order of
/// their first mention.
fn unkept(keys: &[NodeKey], kept: &[Option<Option<Arc<Node>>>]) -> Vec<NodeKey> {
    let mut asked = BTreeSet::new();
    keys.iter()
        .zip(kept)
        .filter(|(key, k)| k.is_none() && asked.insert(*key))
        .map(|(key, _)| key.clone())
        .collect()
}

/// [`Snapshot::nodes_kept`]'s answer for `keys`, with the nodes `read` for [`unkept`]'s keys
/// `unread` in their places (a key asked twice gets its node twice).
fn with_kept(
    keys: &[NodeKey],
    kept: Vec<Option<Option<Arc<Node>>>>,
    unread: &[NodeKey],
    read: Vec<Option<Arc<Node>>>,
) -> Vec<Option<Arc<Node>>> {
    let read: BTreeMap<&NodeKey, Option<Arc<Node>>> = unread.iter().zip(read).collect();
    keys.iter()
        .zip(kept)
        .map(|(key, k)| k.unwrap_or_else(|| read.get(key).cloned().flatten()))
        .collect()
}

/// The most events a causal walk visits, so a pathological graph cannot make a read unbounded.
const MAX_WALK: usize = 10_000;

impl<'a> Snapshot<'a> {
    pub(crate) fn new(
        read: Box<dyn StoreRead + 'a>,
        schema: &'a Schema,
        bytes_on_disk: u64,
        caches: &'a Caches,
    ) -> Self {
        Snapshot {
            read,
            schema,
            bytes_on_disk,
            caches,
            graph_generation: Default::default(),
            node_generation: Default::default(),
            helpers: false,
        }
    }

    /// This view with recall's in-memory searches given to helper threads when `helpers`.
    pub(crate) fn with_helpers(mut self, helpers: bool) -> Self {
        self.helpers = helpers;
        self
    }

    /// The effective schema.
    pub(crate) fn schema(&self) -> &Schema {
        self.schema
    }

    fn read_node(&self, key: &NodeKey) -> Result<Option<Node>, Error> {
        self.read.node(key)?.map(|n| self.hydrate(n)).transpose()
    }

    /// An event node with its payload, which is stored once, in the log record.
    pub(crate) fn hydrate(&self, mut node: Node) -> Result<Node, Error> {
        if node.key.label != "Event" || node.props.contains_key("payload") {
            return Ok(node);
        }
        let Some(entry) = self.read.get(RecordKind::Event, &node.key.id)? else { return Ok(node) };
        let body = serde_json::from_str::<serde_json::Value>(&entry.body);
        put_payload(&mut node, &entry, body.as_ref())?;
        Ok(node)
    }

    /// A node by key.
    pub(crate) fn node(&self, key: &NodeKey) -> Result<Option<Node>, Error> {
        self.read_node(key)
    }

    /// Every node with this id, whatever its type (ids are unique per type only).
    pub(crate) fn find(&self, id: &str) -> Result<Vec<Node>, Error> {
        let mut out = Vec::new();
        for label in self.schema.node_types().keys() {
            if let Some(n) = self.read_node(&NodeKey::new(label.clone(), id))? {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// Edges touching a node, optionally of one type.
    pub(crate) fn edges(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, Error> {
        Ok(self.read.edges_of(key, edge_type, direction)?)
    }

    /// Nodes of a type in id order, after `after`, at most `limit`.
    pub(crate) fn nodes(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, Error> {
        self.read
            .nodes_by_label(label, after, limit)?
            .into_iter()
            .map(|n| self.hydrate(n))
            .collect()
    }

    /// The events of a session in time order, each with its causal links.
    pub(crate) fn timeline(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<TimelineEntry>, Error> {
        let slots = self.read.session_events(session_id, limit)?;
        let waiting: BTreeMap<String, String> = self
            .read
            .pending_edges()?
            .into_iter()
            .filter(|(_, e)| e.key.edge_type == "CAUSED_BY")
            .map(|(_, e)| (e.key.from.id, e.key.to.id))
            .collect();
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let key = NodeKey::new("Event", &slot.event_id);
            let Some(event) = self.read_node(&key)? else { continue };
            let caused_by = self
                .read
                .edges_of(&key, Some("CAUSED_BY"), Direction::Out)?
                .into_iter()
                .map(|e| e.key.to.id)
                .collect();
            let missing_parent = waiting.get(&slot.event_id).cloned();
            out.push(TimelineEntry { event, caused_by, missing_parent });
        }
        Ok(out)
    }

    /// The causal chain behind an event: the event, its parent, the parent's parent, and so on
    /// (first parent at each step), ending at a root or at a parent that is not in the log.
    pub(crate) fn causes(&self, event_id: &str) -> Result<(Vec<Node>, Option<String>), Error> {
        let mut chain = Vec::new();
        let mut seen = BTreeSet::new();
        let mut current = NodeKey::new("Event", event_id);
        while chain.len() < MAX_WALK && seen.insert(current.id.clone()) {
            let Some(node) = self.read_node(&current)? else {
                return Ok((chain, Some(current.id)));
            };
            chain.push(node);
            let parents = self.read.edges_of(&current, Some("CAUSED_BY"), Direction::Out)?;
            match parents.into_iter().next() {
                Some(edge) => current = edge.key.to,
                None => {
                    let pending = self.read.pending_edges()?;
                    let missing = pending
                        .into_iter()
                        .find(|(_, e)| e.key.edge_type == "CAUSED_BY" && e.key.from == current)
                        .map(|(wait, _)| wait.id);
                    return Ok((chain, missing));
                }
            }
        }
        Ok((chain, None))
    }

    /// Everything an event caused, breadth first with depth, at most `limit` events, through
    /// the events `keep` accepts only: one it refuses is neither returned nor walked through.
    pub(crate) fn effects_where(
        &self,
        event_id: &str,
        limit: usize,
        keep: &mut dyn FnMut(&Node) -> Result<bool, Error>,
    ) -> Result<Vec<(usize, Node)>, Error> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::from([event_id.to_owned()]);
        let mut queue = VecDeque::from([(0usize, NodeKey::new("Event", event_id))]);
        while let Some((depth, key)) = queue.pop_front() {
            for edge in self.read.edges_of(&key, Some("CAUSED_BY"), Direction::In)? {
                if out.len() >= limit.min(MAX_WALK) {
                    return Ok(out);
                }
                let child = edge.key.from;
                if seen.insert(child.id.clone())
                    && let Some(node) = self.read_node(&child)?
                    && keep(&node)?
                {
                    out.push((depth + 1, node));
                    queue.push_back((depth + 1, child));
                }
            }
        }
        Ok(out)
    }

    /// Edges of any type, in key order, after `after`, at most `limit`.
    pub(crate) fn edges_of_type(
        &self,
        edge_type: &str,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, Error> {
        Ok(self.read.edges_by_type(edge_type, after, limit)?)
    }

    /// Edges waiting for a node that is not in the log yet, with the node they wait for: the
    /// graph's known unknowns (a missing parent event, an explicit edge to an absent node).
    pub(crate) fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, Error> {
        Ok(self.read.pending_edges()?)
    }

    /// Nodes whose indexed text (event text and summary, entity names) matches words of `query`,
    /// best BM25 score first, at most `limit`.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Result<Vec<(Node, f64)>, Error> {
        let mut out = Vec::new();
        for (key, score) in self.search_keys(query, limit)? {
            if let Some(node) = self.read_node(&key)? {
                out.push((node, score));
            }
        }
        Ok(out)
    }

    /// Node keys whose indexed text matches words of `query`, best BM25 score first: the
    /// lexical index's posting lists and the full-text index for newer documents.
    pub(crate) fn search_keys(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<(NodeKey, f64)>, Error> {
        crate::text_index::search(&*self.read, &self.caches.text, &self.caches.delta, query, limit)
    }

    /// [`Snapshot::search_keys`] begun: the terms, lists and statistics read, the merge given to
    /// a helper thread when `helpers`; [`Snapshot::finish_search`] gives the answer.
    pub(crate) fn start_search(
        &self,
        query: &str,
        limit: usize,
        helpers: bool,
    ) -> Result<crate::text_index::Search, Error> {
        crate::text_index::start_search(&*self.read, &self.caches.text, query, limit, helpers)
    }

    /// The nodes of `keys` (unhydrated, not checked against any constraint), each shared with
    /// the engine's cache of decoded nodes when the store hands their text over (see
    /// `node_cache`).
    ///
    /// On a store that tells its node generation, the nodes this generation's reads gave
    /// already are taken from that cache and only the others are read.
    pub(crate) fn nodes_shared(&self, keys: &[NodeKey]) -> Result<Vec<Option<Arc<Node>>>, Error> {
        let (nodes, ()) = self.through_kept(keys, |unread| {
            let read = if unread.is_empty() {
                Vec::new()
            } else {
                self.read.nodes_shared(unread, &self.caches.nodes)?
            };
            Ok((read, ()))
        })?;
        Ok(nodes)
    }

    /// The nodes of `keys` through the cache of this view's node generation: those it holds
    /// are taken from it, the others (each once) are read by `read`, which may answer other
    /// reads with them, and kept.
    fn through_kept<T>(
        &self,
        keys: &[NodeKey],
        read: impl FnOnce(&[NodeKey]) -> Result<(SharedNodes, T), Error>,
    ) -> Result<(SharedNodes, T), Error> {
        let kept = self.nodes_kept(keys)?;
        let unread = unkept(keys, &kept);
        let (nodes, other) = read(&unread)?;
        self.keep_nodes(&unread, &nodes)?;
        Ok((with_kept(keys, kept, &unread, nodes), other))
    }

    /// What the engine's cache holds of the nodes of `keys` at this view's node generation
    /// ([`GraphReader::node_generation`]): `Some(node)` for a key a read at this generation
    /// gave (`Some(None)`: it does not exist), `None` for a key to read; all `None` on a store
    /// that tells no node generation.
    fn nodes_kept(&self, keys: &[NodeKey]) -> Result<Vec<Option<Option<Arc<Node>>>>, Error> {
        Ok(match self.node_generation()? {
            Some(generation) => self.caches.nodes.kept_at(generation, keys),
            None => vec![None; keys.len()],
        })
    }

    /// Keep the nodes `nodes`, read by this view for `keys`, for the reads of its node
    /// generation (nothing on a store that tells none).
    fn keep_nodes(&self, keys: &[NodeKey], nodes: &[Option<Arc<Node>>]) -> Result<(), Error> {
        if let Some(generation) = self.node_generation()? {
            self.caches.nodes.keep_at(generation, keys, nodes);
        }
        Ok(())
    }

    /// The nodes of `keys` (as [`Snapshot::nodes_shared`] gives them, through the cache of this
    /// view's node generation) and the answers of `others`, in order, read together
    /// ([`GraphReader::read_together`]: one round trip on a store whose reads are round trips).
    pub(crate) fn nodes_with(
        &self,
        keys: &[NodeKey],
        others: &[ManyRead<'_>],
    ) -> Result<(SharedNodes, Vec<ManyAnswer>), Error> {
        self.through_kept(keys, |unread| {
            let mut reads = Vec::with_capacity(others.len() + 1);
            if !unread.is_empty() {
                reads.push(ManyRead::Nodes(unread));
            }
            reads.extend_from_slice(others);
            if reads.is_empty() {
                return Ok((Vec::new(), Vec::new()));
            }
            let mut answers = self.read.read_together(&reads)?.into_iter();
            let read = if unread.is_empty() {
                Vec::new()
            } else {
                let nodes = answered(answers.next())?.into_nodes()?;
                nodes.into_iter().map(|n| n.map(Arc::new)).collect()
            };
            Ok((read, answers.collect()))
        })
    }

    /// [`Snapshot::nodes_with`] of `keys` and the edge groups of `expand` that the edge cache
    /// does not hold, kept there (see [`Snapshot::prefetch_adjacent`]): for recall's
    /// expansion on a store whose reads are round trips, which reads the nodes it may expand
    /// next and then their edges.
    pub(crate) fn nodes_and_edge_groups(
        &self,
        keys: &[NodeKey],
        expand: &[NodeKey],
        limit: usize,
    ) -> Result<Vec<Option<Arc<Node>>>, Error> {
        let generation = self.graph_generation()?;
        let missing = self.caches.edges.missing(generation, expand, limit);
        let mut others = Vec::new();
        if !missing.is_empty() {
            others.push(ManyRead::EdgeGroups { keys: &missing, limit });
        }
        let (nodes, answers) = self.nodes_with(keys, &others)?;
        if !missing.is_empty() {
            let groups = answered(answers.into_iter().next())?.into_groups()?;
            self.caches.edges.keep_groups(generation, &missing, groups, limit);
        }
        Ok(nodes)
    }

    /// [`GraphReader::node_generation`] of this view, read once.
    fn node_generation(&self) -> Result<Option<u64>, Error> {
        if let Some(g) = self.node_generation.get() {
            return Ok(*g);
        }
        let g = self.read.node_generation()?;
        Ok(*self.node_generation.get_or_init(|| g))
    }

    /// The answer of a search begun by [`Snapshot::start_search`], as the hits' nodes
    /// (unhydrated, not checked against any constraint).
    pub(crate) fn finish_search(
        &self,
        search: crate::text_index::Search,
    ) -> Result<Vec<(Arc<Node>, f64)>, Error> {
        search.finish_nodes(&*self.read, &self.caches.delta, &self.caches.nodes)
    }

    /// A node's edge groups with their first `limit` edges each, for recall's expansion
    /// (kept between reads of one graph generation, see `edge_cache`).
    pub(crate) fn adjacent(
        &self,
        key: &NodeKey,
        limit: usize,
    ) -> Result<std::sync::Arc<crate::edge_cache::Adjacent>, Error> {
        self.caches.edges.adjacent(&*self.read, self.graph_generation()?, key, limit)
    }

    /// Read ahead into the edge cache the edge groups of those of `keys` it does not hold, in
    /// one read: the likeliest next expansions, on a store whose reads are round trips.
    pub(crate) fn prefetch_adjacent(&self, keys: &[NodeKey], limit: usize) -> Result<(), Error> {
        self.caches.edges.fill(&*self.read, self.graph_generation()?, keys, limit)
    }

    /// [`Snapshot::adjacent`] when the cache holds the node's edges already (nothing is read).
    pub(crate) fn adjacent_cached(
        &self,
        key: &NodeKey,
        limit: usize,
    ) -> Result<Option<std::sync::Arc<crate::edge_cache::Adjacent>>, Error> {
        Ok(self.caches.edges.cached(self.graph_generation()?, key, limit))
    }

    /// [`GraphReader::graph_generation`] of this view, read once.
    fn graph_generation(&self) -> Result<u64, Error> {
        if let Some(g) = self.graph_generation.get() {
            return Ok(*g);
        }
        let g = self.read.graph_generation()?;
        Ok(*self.graph_generation.get_or_init(|| g))
    }

    /// A node's embedding, once enriched.
    pub(crate) fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, Error> {
        Ok(self.read.vector(key)?)
    }

    /// The `k` nodes whose embeddings are nearest `query` by cosine similarity, best first: the
    /// vector index's probed lists re-ranked exactly, plus every vector written since the index
    /// was last built. `query` must have the store's embedding dimension.
    pub(crate) fn nearest(
        &self,
        query: &[f32],
        k: usize,
        options: SearchParams,
    ) -> Result<Vec<(Node, f32)>, Error> {
        let mut out = Vec::new();
        for (key, score) in self.nearest_keys(query, k, options)? {
            if let Some(node) = self.read_node(&key)? {
                out.push((node, score));
            }
        }
        Ok(out)
    }

    /// [`Snapshot::nearest`] as node keys: recall reads (unhydrated) only the nodes it keeps,
    /// so it need not pay for every hit's payload.
    pub(crate) fn nearest_keys(
        &self,
        query: &[f32],
        k: usize,
        options: SearchParams,
    ) -> Result<Vec<(NodeKey, f32)>, Error> {
        crate::vector_index::nearest(&*self.read, &self.caches.vectors, query, k, options)
    }

    /// [`Snapshot::nearest_keys`] begun: what the probe needs read, the probe and the scan given
    /// to a helper thread when `helpers`; [`Snapshot::finish_nearest`] gives the answer.
    pub(crate) fn start_nearest(
        &self,
        query: &[f32],
        k: usize,
        options: SearchParams,
        helpers: bool,
    ) -> Result<crate::vector_index::Nearest, Error> {
        let cache = &self.caches.vectors;
        crate::vector_index::start_nearest(&*self.read, cache, query, k, options, helpers)
    }

    /// The answer of a search begun by [`Snapshot::start_nearest`], as the hits' nodes
    /// (unhydrated, not checked against any constraint).
    pub(crate) fn finish_nearest(
        &self,
        search: crate::vector_index::Nearest,
    ) -> Result<Vec<(Arc<Node>, f32)>, Error> {
        search.finish_nodes(&*self.read, &self.caches.vectors, &self.caches.nodes)
    }

    /// Log records from `from`, at most `limit`.
    pub(crate) fn log(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, Error> {
        Ok(self.read.read_from(from.max(1), limit)?)
    }

    /// The log head and the stage checkpoints, without the counts of [`Snapshot::stats`].
    pub(crate) fn checkpoints(&self) -> Result<Checkpoints, Error> {
        Ok(Checkpoints {
            log_length: self.read.head()?,
            projected_through: self.read.projected_through()?,
            enriched_through: self.read.enriched_through()?,
        })
    }

    /// How many vectors are stored, and how many are not in the vector index yet.
    pub(crate) fn stats_vectors(&self) -> Result<(u64, u64), Error> {
        Ok(self.read.vector_counts()?)
    }

    /// How many full-text documents the lexical index does not cover yet (all of them before
    /// its first build).
    pub(crate) fn text_docs_outside_index(&self) -> Result<u64, Error> {
        let after = self.read.text_index_build()?.map_or(-1, |b| b.through);
        Ok(self.read.text_docs_after(after)?.0)
    }

    /// Counts and sizes (counting scans every node and edge: use [`Snapshot::checkpoints`] when
    /// only positions are needed).
    pub(crate) fn stats(&self) -> Result<Stats, Error> {
        let counts = self.read.counts()?;
        Ok(Stats {
            log_length: self.read.head()?,
            projected_through: self.read.projected_through()?,
            enriched_through: self.read.enriched_through()?,
            embedding_model: self.read.embedding_model()?,
            nodes: counts.nodes,
            vectors: self.read.vector_counts()?,
            text_docs: (self.read.text_docs_after(-1)?.0, self.text_docs_outside_index()?),
            edges: counts.edges,
            pending_edges: counts.pending_edges,
            bytes_on_disk: self.bytes_on_disk,
            format_version: FORMAT_VERSION,
            modules: self.schema.modules().to_vec(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_left_to_read_are_asked_once_and_answered_in_every_place() {
        let key = |id: &str| NodeKey::new("Event", id);
        let node = |id: &str| Some(Arc::new(Node { key: key(id), props: Default::default() }));
        let keys = [key("a"), key("b"), key("a"), key("c"), key("d")];
        let kept = vec![None, Some(None), None, Some(node("c")), None];
        let unread = unkept(&keys, &kept);
        assert_eq!(unread, [key("a"), key("d")]);
        let got = with_kept(&keys, kept, &unread, vec![node("a"), None]);
        assert_eq!(got, vec![node("a"), None, node("a"), node("c"), None]);
    }
}
