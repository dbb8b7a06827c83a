//! ctxgraph's storage boundary: the two backend traits and the embedded single-file backend.
//!
//! DESIGN.md puts every backend behind two small traits:
//! - a **log** ([`LogReader`], [`Log`]): append-only records with a global position, idempotent by
//!   `(kind, id)`, readable from a position, durable when the write transaction commits;
//! - a **graph store** ([`GraphReader`], [`GraphStore`]): batch upsert of nodes and edges, lookups,
//!   neighbours by type and direction, and the two pieces of projection bookkeeping every backend
//!   needs (session order and edges waiting for an endpoint).
//!
//! Writes happen in a write transaction ([`Embedded::begin_write`]) that implements both traits,
//! so a record and its projection commit together: the embedded graph is never behind its log.
//! A scale-out backend (a stream log and a Cypher graph) implements the same traits with the
//! projection running behind the log and a checkpoint position instead.
//!
//! The traits are object-safe and blocking: the projection takes `&mut dyn ProjectionGraph` (the
//! graph operations it calls, which every [`GraphStore`] has), and async callers use a blocking
//! pool.

#![warn(missing_docs)]

mod embedded;
mod error;
mod remote;
mod text_sink;
mod together;
mod tokenizer;
mod vector_sink;

use std::sync::Arc;

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{RecordKind, ValidRecord};

pub use embedded::{
    AUTO_CHECKPOINT_PAGES, Checkpointer, Durability, Embedded, EmbeddedRead, EmbeddedWrite,
    FORMAT_VERSION, OpenMode, WAL_COPY_AT, WalCheckpoint, WalCopier, heap_used, props_from,
    props_to, set_heap_limit,
};
pub use error::StoreError;
pub use remote::{
    ConsolidateCommit, EnrichCommit, EnrichWrite, ForgetAppend, ForgetGraphBody, GraphForget,
    Redaction, RemoteStore, RetentionBody, RetentionWrite, StoreRead,
};
pub use text_sink::{TextCommit, TextDoc, TextSink};
pub use together::{ManyAnswer, ManyRead, read_one};
pub use tokenizer::TextTokenizer;
pub use vector_sink::{VectorCommit, VectorSink};

/// Makes a node from its stored row, for [`GraphReader::nodes_by_nid_shared`]: an
/// implementation may keep what it made and hand it back when the same row is read again
/// (the row's text equal to the one it decoded), so a node read again is not decoded again.
pub trait NodeDecode {
    /// The node `nid` whose key is `label`/`id` and whose properties are encoded as `props`
    /// (a JSON object, [`props_to`]'s encoding).
    fn decode(&self, nid: i64, label: &str, id: &str, props: &str)
    -> Result<Arc<Node>, StoreError>;
}

/// Nodes as read, each made shareable: what [`GraphReader::nodes_by_nid_shared`] and
/// [`GraphReader::nodes_shared`] answer from a read that decodes every node itself.
pub(crate) fn shared_nodes(nodes: Vec<Option<Node>>) -> Vec<Option<Arc<Node>>> {
    nodes.into_iter().map(|n| n.map(Arc::new)).collect()
}

/// A node's edges of one type in one direction (see [`GraphReader::edge_groups`]): the first
/// of them in index order (by the far endpoint's node id, then qualifier) and how many there
/// are in all.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeGroup<E = Edge> {
    /// Outgoing (`true`) or incoming.
    pub out: bool,
    /// The edge type.
    pub edge_type: String,
    /// How many such edges the node has, counted up to one past the limit the group was read
    /// with (`edges` may hold fewer: more than `edges.len()` means the node has more).
    pub degree: usize,
    /// The first edges, in index order.
    pub edges: Vec<E>,
}

/// The order in which [`GraphReader::heaviest_edges`] takes a node's groups under `weight(edge
/// type, outgoing)`: as `(weight, index in groups)`, heaviest first, outgoing before incoming
/// at one weight, then by type; groups of weight ≤ 0 are left out. Taking each group's edges
/// in this order up to a limit gives the node's heaviest edges.
pub fn heaviest_order<E>(
    groups: &[EdgeGroup<E>],
    weight: &dyn Fn(&str, bool) -> f64,
) -> Vec<(f64, usize)> {
    let mut order: Vec<(f64, usize)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (weight(&g.edge_type, g.out), i))
        .filter(|(w, _)| *w > 0.0)
        .collect();
    order.sort_by(|a, b| {
        let (ga, gb) = (&groups[a.1], &groups[b.1]);
        b.0.total_cmp(&a.0).then(gb.out.cmp(&ga.out)).then(ga.edge_type.cmp(&gb.edge_type))
    });
    order
}

/// The first `limit` items of `groups` taken in [`heaviest_order`] under `weight`, as
/// `(weight, item, outgoing)`: what [`GraphReader::heaviest_edges`] answers from a node's
/// groups, whatever the backend that read them.
pub fn heaviest_of<T>(
    groups: Vec<EdgeGroup<T>>,
    weight: &dyn Fn(&str, bool) -> f64,
    limit: usize,
) -> Vec<(f64, T, bool)> {
    let order = heaviest_order(&groups, weight);
    let mut groups: Vec<Option<EdgeGroup<T>>> = groups.into_iter().map(Some).collect();
    let mut found = Vec::new();
    for (w, i) in order {
        let Some(group) = groups.get_mut(i).and_then(Option::take) else { continue };
        for item in group.edges {
            if found.len() >= limit {
                return found;
            }
            found.push((w, item, group.out));
        }
    }
    found
}

/// One record as stored in the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    /// Global position, from 1, gap-free, in append order.
    pub position: u64,
    /// Record kind.
    pub kind: RecordKind,
    /// Record id, unique within the kind.
    pub id: String,
    /// Wall-clock time the record was acknowledged (RFC 3339, UTC). Provenance only: the
    /// projection never reads it.
    pub recorded_at: String,
    /// Canonical JSON of the record.
    pub body: String,
}

/// What appending one record did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// A new record at this position.
    New(u64),
    /// The same record (same kind, id and canonical content) was already at this position:
    /// nothing written.
    Duplicate(u64),
}

/// Read access to the log.
pub trait LogReader {
    /// Position of the last record; 0 for an empty log.
    fn head(&self) -> Result<u64, StoreError>;
    /// The record of `kind` with `id`, if any.
    fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError>;
    /// Up to `limit` records with position ≥ `from`, in position order.
    fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError>;
    /// Every record of one kind, in position order (schema modules are read this way at open).
    fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError>;
    /// [`LogReader::get`] of many `(kind, id)` at once, answers in the order given: a remote
    /// log reads them in one round trip (a recall's returned items and their records).
    fn get_many(&self, keys: &[(RecordKind, &str)]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        keys.iter().map(|(kind, id)| self.get(*kind, id)).collect()
    }
    /// [`LogReader::get_many`] with `meanwhile` run while the records are on their way (a
    /// read of something else, which must not read this log): a store whose log and graph
    /// are two connections overlaps the two round trips. The default reads the records, then
    /// runs `meanwhile`; the records are answered even when `meanwhile` fails (its error is
    /// the caller's to keep).
    fn get_many_meanwhile(
        &self,
        keys: &[(RecordKind, &str)],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<Option<LogEntry>>, StoreError> {
        let records = self.get_many(keys);
        meanwhile();
        records
    }
}

/// The append-only log.
pub trait Log: LogReader {
    /// Append `record` unless a record of the same kind and id exists.
    ///
    /// Same id, same canonical content: [`Appended::Duplicate`], nothing written. Same id,
    /// different content: [`StoreError::Conflict`], nothing written. Durable when the enclosing
    /// write transaction commits, not before.
    fn append(&mut self, record: &ValidRecord, recorded_at: &str) -> Result<Appended, StoreError>;

    /// Replace the stored body of the record at `position` with `body` (a tombstone, or the
    /// record rewritten without what was forgotten), keeping its kind, id, position and
    /// acknowledgement time; whether a record was there.
    ///
    /// The one exception to the log's immutability, for forgetting: the forget record appended
    /// in the same transaction is the immutable trace of the change. The caller validates
    /// `body`; the store does not decode it.
    fn redact(&mut self, position: u64, body: &str) -> Result<bool, StoreError>;

    /// [`Log::redact`] that also replaces the record's id with `id`, for a record whose id
    /// spells what was forgotten (a fact claim's id holds its subject's name). The new id must
    /// be unique within the kind: [`StoreError::Conflict`] otherwise, nothing written.
    fn redact_as(&mut self, position: u64, id: &str, body: &str) -> Result<bool, StoreError>;
}

/// A neighbouring event in a session's order: its position in time and its id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SessionSlot {
    /// `occurred_at` in nanoseconds since the epoch.
    pub at_ns: i64,
    /// Event id (breaks ties between equal timestamps).
    pub event_id: String,
}

/// Counts for `stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphCounts {
    /// Nodes per label.
    pub nodes: Vec<(String, u64)>,
    /// Edges per type.
    pub edges: Vec<(String, u64)>,
    /// Edges waiting for an endpoint that has not been projected yet.
    pub pending_edges: u64,
}

/// A stored embedding with the node it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVector {
    /// The node's internal id: stable until the graph is reprojected, never shown to users.
    pub nid: i64,
    /// The node.
    pub key: NodeKey,
    /// The embedding.
    pub vector: Vec<f32>,
}

/// What the lexical index (one BM25 posting list per full-text term) covers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TextIndexBuild {
    /// The highest node id it covers: documents written with a higher id are searched in the
    /// full-text index alone.
    pub through: i64,
    /// Documents it covers.
    pub docs: u64,
    /// Their mean length in tokens.
    pub avg_len: f64,
}

/// A node retention moved out of the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archived {
    /// The node.
    pub key: NodeKey,
    /// When (the retention run's "as of" time, RFC 3339).
    pub archived_at: String,
}

/// Read access to the projected graph.
pub trait GraphReader {
    /// A node by key.
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError>;
    /// Whether a node exists (without decoding its properties).
    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError>;
    /// A node's properties among `names` only (`None`: no such node), for checks that read a
    /// few properties of many nodes (the access policy's): a backend may skip decoding the
    /// rest.
    fn node_props_named(
        &self,
        key: &NodeKey,
        names: &[&str],
    ) -> Result<Option<Properties>, StoreError>;
    /// Which of `ids` are ids of nodes of `label`, in the order given, without reading the
    /// nodes: one lookup for many candidate keys, most of them absent (the names a question
    /// might mention).
    fn existing_ids(&self, label: &str, ids: &[String]) -> Result<Vec<String>, StoreError>;
    /// An edge by key.
    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError>;
    /// Edges touching `key`, optionally of one type, in a stable order (type, other endpoint).
    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError>;
    /// Nodes of a label, in key order, from `after` (exclusive), at most `limit`.
    fn nodes_by_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError>;
    /// Edges of a type, in key order, at most `limit`, starting after `after` (exclusive).
    fn edges_by_type(
        &self,
        edge_type: &str,
        after: Option<&EdgeKey>,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError>;
    /// Session ids in order, after `after` (exclusive), at most `limit`.
    fn sessions(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError>;
    /// The events of a session in time order (at most `limit`).
    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError>;
    /// Up to `limit` edges of type `edge_type` out of (`out`) or into `key`, in index order; the
    /// read stops at the limit however many such edges the node has.
    fn edges_limited(
        &self,
        key: &NodeKey,
        edge_type: &str,
        out: bool,
        limit: usize,
    ) -> Result<Vec<Edge>, StoreError>;
    /// The ids of up to `limit` events of a trace (events whose `trace_id` is `trace_id`).
    fn trace_events(&self, trace_id: &str, limit: usize) -> Result<Vec<String>, StoreError>;
    /// The latest event of a session (the greatest slot), if any.
    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError>;
    /// The nearest events before and after `slot` in its session.
    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError>;
    /// Edges waiting for `key` to exist.
    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError>;
    /// Every edge waiting for an endpoint, with the node it waits for, in key order.
    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError>;
    /// Node and edge counts.
    fn counts(&self) -> Result<GraphCounts, StoreError>;
    /// The last log position folded into the graph (the projection checkpoint); 0 when none.
    fn projected_through(&self) -> Result<u64, StoreError>;
    /// The last log position enriched (the stage-2 checkpoint); 0 when none.
    fn enriched_through(&self) -> Result<u64, StoreError>;
    /// The embedding model id and dimension that produced the stored vectors, if any.
    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError>;
    /// A store setting (such as whether memories are linked automatically), if set: kept with
    /// the store, across restarts and reprojections.
    fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// A node's embedding.
    fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError>;
    /// The node id of a node's embedding and the vector index list it is filed under (`None`
    /// when written since the last build); `None` when the node has no embedding.
    fn vector_list(&self, key: &NodeKey) -> Result<Option<(i64, Option<u32>)>, StoreError>;
    /// The `limit` heaviest edges of a node in both directions under `weight(edge type,
    /// outgoing)`, heaviest first, with their weight and direction (`true`: outgoing); edges
    /// of weight ≤ 0 are left out. Within one type and direction (one weight) the edges whose
    /// other endpoint was stored first are taken. A bounded read of a node with thousands of
    /// edges: the types are found by index seeks and each read stops at the limit, so the cost
    /// grows with the types and the limit, not with the node's degree.
    fn heaviest_edges(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
    ) -> Result<Vec<(f64, Edge, bool)>, StoreError>;
    /// Every group of a node's edges (one type, one direction), outgoing first and by type,
    /// each with its first `limit` edges in index order and its degree: what
    /// [`GraphReader::heaviest_edges`] reads, for every weighting at once ([`heaviest_order`]),
    /// in a read as bounded as that one.
    fn edge_groups(&self, key: &NodeKey, limit: usize) -> Result<Vec<EdgeGroup>, StoreError>;
    /// A number that changes with every committed write transaction that wrote or deleted an
    /// edge, by itself or with its node (for caches of the graph's edges).
    fn graph_generation(&self) -> Result<u64, StoreError>;
    /// A number that changes with every committed write transaction that wrote, changed or
    /// deleted any node, when the store keeps one: a node read at one value is then the node
    /// at that value, and a cache of nodes read through round trips may answer it without
    /// asking again (the scale-out graph's [`GraphReader::graph_generation`], which every
    /// commit that changes the graph moves). `None` (the default): the store keeps no such
    /// number, and nodes are read from it every time (the embedded store, whose reads are
    /// local and whose node cache checks each row's text instead).
    fn node_generation(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
    /// The other endpoints of [`GraphReader::heaviest_edges`]'s edges, in its order, each with
    /// its properties among `names` only (as [`GraphReader::node_props_named`]): for checks
    /// of a node's neighbours that read a few of their properties.
    fn heaviest_neighbours(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
        names: &[&str],
    ) -> Result<Vec<(NodeKey, Properties)>, StoreError>;
    /// The full-text terms of `text` (tokenized and stemmed as the index does), deduplicated,
    /// in term order.
    fn text_terms(&self, text: &str) -> Result<Vec<String>, StoreError>;
    /// Documents with an id above `after` that contain any of `words`, best BM25 score first
    /// (higher is better), at most `limit`, as `(node id, score)`. Over the whole index
    /// (`after` < 0) the commonest words are left out once the matching documents would pass
    /// a bound (the rarest word is always kept); above a lexical index build, every word counts.
    fn search_text(
        &self,
        words: &[String],
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError>;
    /// How many full-text documents have an id above `after`, and the highest id of any.
    fn text_docs_after(&self, after: i64) -> Result<(u64, Option<i64>), StoreError>;
    /// Visit every `(term, document)` occurrence of the full-text index, grouped by term in
    /// term order, documents ascending within a term; `visit` returns `false` to stop.
    fn scan_text_index(&self, visit: &mut dyn FnMut(&str, i64) -> bool) -> Result<(), StoreError>;
    /// A number that changes whenever the lexical index is rebuilt or dropped (for caches).
    fn text_generation(&self) -> Result<u64, StoreError>;
    /// What the lexical index covers; `None` before its first build.
    fn text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError>;
    /// One term's posting list blob, if the lexical index has it.
    fn text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError>;
    /// The node keys of these node ids, in the order given; unknown ids are skipped.
    fn node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError>;
    /// Stored vectors with `nid > after`, in nid order, at most `limit` (for index builds).
    fn vectors_page(&self, after: i64, limit: usize) -> Result<Vec<StoredVector>, StoreError>;
    /// Visit the vectors written since the vector index was last built, in nid order, one at a
    /// time as `(nid, vector)` (a search scores them as they come rather than holding them
    /// all, and reads the node keys of the few it keeps with [`GraphReader::node_keys`]).
    fn scan_unindexed_vectors(&self, visit: &mut dyn FnMut(i64, &[f32])) -> Result<(), StoreError>;
    /// How many vectors are stored, and how many of them are not in the vector index yet.
    fn vector_counts(&self) -> Result<(u64, u64), StoreError>;
    /// Visit the stored vectors of these nids as `(nid, vector)`, in the order given; ids with
    /// no vector are skipped (a search re-ranking candidates, which keeps few of them).
    fn scan_vectors_of(
        &self,
        nids: &[i64],
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError>;
    /// A number that changes whenever the vector index is rebuilt or dropped (for caches).
    fn ann_generation(&self) -> Result<u64, StoreError>;
    /// A number that changes with every committed change of the stored vectors (a vector
    /// written or deleted, or moved in or out of the vector index), and, within a write
    /// transaction, before a read that follows such a change (for caches of vectors).
    fn vector_generation(&self) -> Result<u64, StoreError>;
    /// The vector index's centroids blob, if an index was built.
    fn ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError>;
    /// One inverted list of the vector index, if it exists.
    fn ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError>;
    /// Whether retention archived this node.
    fn is_archived(&self, key: &NodeKey) -> Result<bool, StoreError>;
    /// Archived nodes in key order, after `after` (exclusive), at most `limit`.
    fn archived(&self, after: Option<&NodeKey>, limit: usize) -> Result<Vec<Archived>, StoreError>;

    // Reads of many keys at once. Each answers exactly what the single-key read answers for
    // every key, in the order given; the default bodies loop over it, and a backend whose
    // reads are round trips (the scale-out graph) answers each in one query.

    /// [`GraphReader::node`] of each of `keys`.
    fn nodes(&self, keys: &[NodeKey]) -> Result<Vec<Option<Node>>, StoreError> {
        keys.iter().map(|k| self.node(k)).collect()
    }
    /// The node of each of these node ids, in the order given (`None` for an id with no node):
    /// [`GraphReader::node_keys`] then [`GraphReader::nodes`], which is the default body. The
    /// embedded store reads each node's row by its id alone, where the two reads seek the row,
    /// then the key's index, then the row again (recall reads its vector and BM25 hits so).
    fn nodes_by_nid(&self, nids: &[i64]) -> Result<Vec<Option<Node>>, StoreError> {
        let keys: std::collections::BTreeMap<i64, NodeKey> =
            self.node_keys(nids)?.into_iter().collect();
        let found: Vec<NodeKey> = nids.iter().filter_map(|nid| keys.get(nid).cloned()).collect();
        let mut nodes = self.nodes(&found)?.into_iter();
        Ok(nids
            .iter()
            .map(|nid| if keys.contains_key(nid) { nodes.next().flatten() } else { None })
            .collect())
    }
    /// [`GraphReader::nodes_by_nid`], each node made by `decode` from its stored row (which may
    /// hand back a node it made before from the same row); the default body decodes them all
    /// itself. The embedded store passes its rows' text, undecoded.
    fn nodes_by_nid_shared(
        &self,
        nids: &[i64],
        decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        let _ = decode;
        Ok(shared_nodes(self.nodes_by_nid(nids)?))
    }
    /// [`GraphReader::nodes`], each node made by `decode` as in
    /// [`GraphReader::nodes_by_nid_shared`]; the default body decodes them all itself (in one
    /// read where the backend batches it).
    fn nodes_shared(
        &self,
        keys: &[NodeKey],
        decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        let _ = decode;
        Ok(shared_nodes(self.nodes(keys)?))
    }
    /// [`GraphReader::node_exists`] of each of `keys`.
    fn nodes_exist(&self, keys: &[NodeKey]) -> Result<Vec<bool>, StoreError> {
        keys.iter().map(|k| self.node_exists(k)).collect()
    }
    /// [`GraphReader::edges_of`] of each of `keys`, with one edge type (or any) and direction.
    fn edges_of_many(
        &self,
        keys: &[NodeKey],
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Vec<Edge>>, StoreError> {
        keys.iter().map(|k| self.edges_of(k, edge_type, direction)).collect()
    }
    /// [`GraphReader::existing_ids`] of `ids` under each of `labels`.
    fn existing_ids_by_label(
        &self,
        labels: &[&str],
        ids: &[String],
    ) -> Result<Vec<Vec<String>>, StoreError> {
        labels.iter().map(|l| self.existing_ids(l, ids)).collect()
    }
    /// [`GraphReader::session_events`] of each of `session_ids`.
    fn session_events_many(
        &self,
        session_ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<SessionSlot>>, StoreError> {
        session_ids.iter().map(|s| self.session_events(s, limit)).collect()
    }
    /// [`GraphReader::trace_events`] of each of `trace_ids`.
    fn trace_events_many(
        &self,
        trace_ids: &[String],
        limit: usize,
    ) -> Result<Vec<Vec<String>>, StoreError> {
        trace_ids.iter().map(|t| self.trace_events(t, limit)).collect()
    }
    /// [`GraphReader::edges_limited`] of each `(node, edge type)` of `reads`, in one direction
    /// and with one limit.
    fn edges_limited_many(
        &self,
        reads: &[(NodeKey, &str)],
        out: bool,
        limit: usize,
    ) -> Result<Vec<Vec<Edge>>, StoreError> {
        reads.iter().map(|(key, t)| self.edges_limited(key, t, out, limit)).collect()
    }
    /// Whether a read of many keys costs about what a read of one does (a store whose every
    /// read is a round trip), so that a caller gains by reading ahead what it will probably
    /// need; `false` (the default, the embedded store) when each read costs for its keys.
    fn batch_reads_pay(&self) -> bool {
        false
    }
    /// The node ids of at least `want` stored vectors near `query` (cosine), found by a vector
    /// index the store keeps over every stored vector itself (all of them when fewer are
    /// stored), in no particular order and unscored: candidates a search re-ranks exactly with
    /// [`GraphReader::scan_vectors_of`], instead of scanning the vectors outside the vector
    /// index. `None` (the default) when the store keeps no such index, or when at most
    /// `scan_up_to` vectors lie outside the vector index (few enough for the caller to scan).
    fn native_nearest(
        &self,
        query: &[f32],
        want: usize,
        scan_up_to: u64,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        let _ = (query, want, scan_up_to);
        Ok(None)
    }

    /// Several reads of many keys that do not depend on each other, each answered as the
    /// method it names answers ([`read_one`]), in the order given. The default runs them one
    /// after the other; a backend whose reads are round trips sends them in one.
    fn read_together(&self, reads: &[ManyRead<'_>]) -> Result<Vec<ManyAnswer>, StoreError> {
        reads.iter().map(|r| read_one(self, r)).collect()
    }

    /// A number that changes with every committed transaction that deleted a stored vector or
    /// full-text document, or replaced a stored vector with another (writing new ones leaves
    /// it), and, within a write transaction, before a read that follows such a change. An
    /// index built from a snapshot names only what the snapshot held: it may replace the
    /// stored index later only while this number is the snapshot's, or it would name a node
    /// deleted since (or index a vector's old value as its current one). `None` (the default)
    /// when the store does not keep it: then no such build can be installed.
    fn removal_generation(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }

    /// A number that moves whenever stages 2 and 3 start over (a reset of the projection or
    /// of the enrichment, or a forget that drops them). An enrichment computed from records
    /// read at one value may be written only while it holds: after a reset the stage-2
    /// checkpoint is 0 again, so a chunk read from 0 before it would otherwise look current.
    /// 0 (the default) on a store whose resets and enrichments cannot interleave.
    fn enrichment_epoch(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    /// [`GraphReader::edge_groups`] of each of `keys`, in order. The default reads them one by
    /// one; a backend whose reads are round trips answers them in one.
    fn edge_groups_many(
        &self,
        keys: &[NodeKey],
        limit: usize,
    ) -> Result<Vec<Vec<EdgeGroup>>, StoreError> {
        keys.iter().map(|key| self.edge_groups(key, limit)).collect()
    }

    /// A number that moves with every committed transaction that added, replaced or deleted
    /// a full-text document (see [`TextSink`]): a copy of the documents kept elsewhere is this
    /// read's when it was made at this number. `None` (the default) when the store keeps none.
    fn text_version(&self) -> Result<Option<u64>, StoreError> {
        Ok(None)
    }
}

/// Write access to the projected graph. Every method is an upsert or an idempotent delete, so a
/// fold of the log can be replayed.
pub trait GraphStore: GraphReader {
    /// Insert or replace a node.
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError>;
    /// [`GraphStore::put_node`], handing the node over: a store that keeps the nodes it writes
    /// (a write-back cache) takes it without a copy.
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        self.put_node(&node)
    }
    /// [`GraphReader::node`], for a caller that writes the node back in this transaction with
    /// [`GraphStore::put_node_owned`] (or fails it): a store with a write-back cache hands its
    /// cached copy over instead of cloning it.
    fn node_for_update(&mut self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        GraphReader::node(self, key)
    }
    /// Insert or replace an edge. Both endpoints must exist (the projection checks).
    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError>;
    /// Delete an edge; whether it existed.
    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError>;
    /// Record an event's place in its session's order (and the session's tail).
    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError>;
    /// Park `edge` until `waiting_for` exists.
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError>;
    /// Remove and return the edges parked for `key`.
    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError>;
    /// Move the projection checkpoint: records up to `position` are folded into the graph.
    fn set_projected_through(&mut self, position: u64) -> Result<(), StoreError>;
    /// Delete every node of `label` with its edges (in and out), vectors and index entries;
    /// returns how many nodes went. Used to rebuild derived nodes such as summaries.
    fn delete_label(&mut self, label: &str) -> Result<u64, StoreError>;
    /// Move the stage-2 checkpoint.
    fn set_enriched_through(&mut self, position: u64) -> Result<(), StoreError>;
    /// Record the embedding model of the stored vectors.
    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError>;
    /// Set a store setting (see [`GraphReader::setting`]), or clear it with `None`.
    fn set_setting(&mut self, key: &str, value: Option<&str>) -> Result<(), StoreError>;
    /// Store a node's embedding (the node must exist).
    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError>;
    /// Index (or re-index) a node's text for full-text search (the node must exist).
    fn put_text(&mut self, key: &NodeKey, text: &str) -> Result<(), StoreError>;
    /// [`GraphStore::put_text`] for many nodes at once, in order (a node given twice keeps its
    /// last text). A backend whose full-text index pays for each re-index separately overrides
    /// it to index a batch in one pass.
    fn put_texts(&mut self, texts: &[(NodeKey, String)]) -> Result<(), StoreError> {
        for (key, text) in texts {
            self.put_text(key, text)?;
        }
        Ok(())
    }
    /// Remove every vector and index entry and reset the stage-2 checkpoint and model: the start
    /// of a re-embedding.
    fn clear_enrichment(&mut self) -> Result<(), StoreError>;
    /// Remove every node, edge, vector, index entry and bookkeeping row and reset both
    /// checkpoints to 0 (the log is untouched): the start of a reprojection.
    fn clear_graph(&mut self) -> Result<(), StoreError>;
    /// Delete a node with its edges (in and out), vector and index entry; whether it existed.
    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError>;
    /// Delete every edge of a type; how many went. Used to rebuild derived edges.
    fn delete_edges_of_type(&mut self, edge_type: &str) -> Result<u64, StoreError>;
    /// Remove an event's slot from its session's order (and move the session's tail back).
    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError>;
    /// Drop the vector index: every vector becomes unindexed (searched exactly).
    fn clear_ann_index(&mut self) -> Result<(), StoreError>;
    /// Store the vector index's centroids blob.
    fn put_ann_centroids(&mut self, blob: &[u8]) -> Result<(), StoreError>;
    /// Store one inverted list of the vector index.
    fn put_ann_list(&mut self, list: u32, members: &[u8]) -> Result<(), StoreError>;
    /// Record that the vector of `nid` is filed under `list`.
    fn set_vector_list(&mut self, nid: i64, list: u32) -> Result<(), StoreError>;
    /// Drop the lexical index: every full-text document is searched in the full-text index.
    fn clear_text_index(&mut self) -> Result<(), StoreError>;
    /// Store one term's posting list blob.
    fn put_text_postings(&mut self, term: &str, postings: &[u8]) -> Result<(), StoreError>;
    /// Drop one term's posting list (its last document was forgotten).
    fn delete_text_postings(&mut self, term: &str) -> Result<(), StoreError>;
    /// Record what the lexical index now covers (after its lists are stored).
    fn set_text_index_build(&mut self, build: &TextIndexBuild) -> Result<(), StoreError>;
    /// Record that retention archived a node (see [`GraphReader::is_archived`]).
    fn put_archived(&mut self, key: &NodeKey, archived_at: &str) -> Result<(), StoreError>;
    /// Forget every archive mark (reprojection that brings archived nodes back).
    fn clear_archived(&mut self) -> Result<(), StoreError>;

    /// [`GraphStore::clear_ann_index`] for a caller that files again, with
    /// [`GraphStore::set_vector_list`], every vector the index holds now (an index built from
    /// a snapshot that no removal or other build followed): the lists and centroids go, and a
    /// store may leave each vector's list to be overwritten rather than clear it first. The
    /// default clears everything.
    fn clear_ann_index_refiled(&mut self) -> Result<(), StoreError> {
        self.clear_ann_index()
    }
}

/// The graph operations the projection calls: what a backend must offer for the log to be folded
/// into it. Every [`GraphStore`] has them (with the same meaning); a graph backend that keeps
/// no search indexes of its own can offer these alone and still be projected into.
pub trait ProjectionGraph {
    /// [`GraphReader::node`].
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError>;
    /// [`GraphReader::node_exists`].
    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError>;
    /// [`GraphReader::edge`].
    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError>;
    /// [`GraphReader::edges_of`].
    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError>;
    /// [`GraphReader::session_events`].
    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError>;
    /// [`GraphReader::session_tail`].
    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError>;
    /// [`GraphReader::session_neighbors`].
    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError>;
    /// [`GraphReader::pending_for`].
    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError>;
    /// [`GraphReader::pending_edges`].
    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError>;
    /// [`GraphStore::put_node`].
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError>;
    /// [`GraphStore::put_node_owned`].
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        self.put_node(&node)
    }
    /// [`GraphStore::node_for_update`].
    fn node_for_update(&mut self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        self.node(key)
    }
    /// [`GraphStore::put_edge`].
    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError>;
    /// [`GraphStore::delete_node`].
    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError>;
    /// [`GraphStore::delete_edge`].
    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError>;
    /// [`GraphStore::put_session_slot`].
    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError>;
    /// [`GraphStore::delete_session_slot`].
    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError>;
    /// [`GraphStore::put_pending`].
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError>;
    /// [`GraphStore::take_pending`].
    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError>;
}

impl<T: GraphStore + ?Sized> ProjectionGraph for T {
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        GraphReader::node(self, key)
    }
    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        GraphReader::node_exists(self, key)
    }
    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        GraphReader::edge(self, key)
    }
    fn edges_of(
        &self,
        key: &NodeKey,
        edge_type: Option<&str>,
        direction: Direction,
    ) -> Result<Vec<Edge>, StoreError> {
        GraphReader::edges_of(self, key, edge_type, direction)
    }
    fn session_events(
        &self,
        session_id: &str,
        limit: usize,
    ) -> Result<Vec<SessionSlot>, StoreError> {
        GraphReader::session_events(self, session_id, limit)
    }
    fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
        GraphReader::session_tail(self, session_id)
    }
    fn session_neighbors(
        &self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
        GraphReader::session_neighbors(self, session_id, slot)
    }
    fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        GraphReader::pending_for(self, key)
    }
    fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
        GraphReader::pending_edges(self)
    }
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        GraphStore::put_node(self, node)
    }
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        GraphStore::put_node_owned(self, node)
    }
    fn node_for_update(&mut self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        GraphStore::node_for_update(self, key)
    }
    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        GraphStore::put_edge(self, edge)
    }
    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError> {
        GraphStore::delete_node(self, key)
    }
    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        GraphStore::delete_edge(self, key)
    }
    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError> {
        GraphStore::put_session_slot(self, session_id, slot)
    }
    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError> {
        GraphStore::delete_session_slot(self, session_id, slot)
    }
    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError> {
        GraphStore::put_pending(self, waiting_for, edge)
    }
    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        GraphStore::take_pending(self, key)
    }
}
