//! Stage 3 (consolidation) on the scale-out backend: where its data lives, its write
//! transaction ([`ConsolidateWrite`]) and the reads of the vector index.
//!
//! # Layout (beside the graph and stage 2's keys, under the store's hash tag)
//!
//! ```text
//! (:Summary {props}), [:SUMMARIZES], [:SIMILAR_TO], inferred [:SAME_AS] / [:RELATED_TO],
//! automatic memory links       plain nodes and edges of the graph
//! ann_centroids                the vector index's centroids blob
//! ann_lists                    hash: list number → the inverted list's blob
//! vector_lists                 hash: node creation number → the list its vector is filed
//!                              under (absent: written since the last build)
//! ann_generation               a counter every rebuild bumps
//! consolidated_through         the stage-2 checkpoint the last consolidation covered
//! ```
//!
//! Vectors and full-text documents a consolidation writes (memories, summaries, nodes indexed
//! late) go to stage 2's keys (`stage2.rs`), and the lexical index it rebuilds replaces stage
//! 2's: every value is what the embedded store keeps, so recall reads the same index.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use ctxgraph_ontology::RecordKind;
use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_store::{
    Archived, ConsolidateCommit, EdgeGroup, GraphCounts, GraphReader, GraphStore, LogEntry,
    LogReader, ProjectionGraph, SessionSlot, StoreError, StoredVector, TextIndexBuild,
};

use super::stage2::{occurrences, vector_bytes, with_tokenizer};
use super::{FalkorGraph, NetChanges, Write, int_at, merged_writes, name, text_at};
use crate::redis_log::RedisLog;

/// The hash of each vector's inverted list (by node creation number).
pub(super) const VECTOR_LISTS: &str = "vector_lists";
/// The centroids blob.
pub(super) const ANN_CENTROIDS: &str = "ann_centroids";
/// The hash of the inverted lists' blobs.
pub(super) const ANN_LISTS: &str = "ann_lists";
/// The vector index's generation counter.
pub(super) const ANN_GENERATION: &str = "ann_generation";
/// The stage-2 checkpoint the last consolidation covered.
pub(super) const CONSOLIDATED: &str = "consolidated_through";
/// Vectors read per round trip by the scans.
const SCAN_PAGE: usize = 1_024;

impl FalkorGraph {
    /// The list numbers of `nids` (`None`: not in the vector index), in the order given.
    fn lists_of(&self, nids: &[i64]) -> Result<Vec<Option<u32>>, StoreError> {
        if nids.is_empty() {
            return Ok(Vec::new());
        }
        self.raw_query(redis::cmd("HMGET").arg(self.stage2_key(VECTOR_LISTS)).arg(nids))
    }

    /// [`GraphReader::vector_list`]: the node's number and its list, if it has a vector.
    pub(crate) fn stage3_vector_list(
        &self,
        key: &NodeKey,
    ) -> Result<Option<(i64, Option<u32>)>, StoreError> {
        let Some((nid, _)) = self.stage2_vector_list(key)? else { return Ok(None) };
        Ok(Some((nid, self.lists_of(&[nid])?.into_iter().next().flatten())))
    }

    /// [`GraphReader::vector_counts`]: stored, and stored outside the vector index.
    pub(crate) fn stage3_vector_counts(&self) -> Result<(u64, u64), StoreError> {
        let (all, _) = self.stage2_vector_counts()?;
        let indexed: u64 = self.raw_query(redis::cmd("HLEN").arg(self.stage2_key(VECTOR_LISTS)))?;
        Ok((all, all.saturating_sub(indexed)))
    }

    /// [`GraphReader::scan_unindexed_vectors`]: the vectors outside the vector index, in nid
    /// order.
    pub(crate) fn stage3_scan_unindexed(
        &self,
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        let indexed: u64 = self.raw_query(redis::cmd("HLEN").arg(self.stage2_key(VECTOR_LISTS)))?;
        if indexed == 0 {
            // No index yet (never consolidated): every vector is outside it.
            return self.stage2_scan_vectors(visit);
        }
        let mut after = -1;
        loop {
            let nids = self.ids_after("vector_ids", after, SCAN_PAGE)?;
            let Some(&last) = nids.last() else { return Ok(()) };
            let outside: Vec<i64> = nids
                .iter()
                .zip(self.lists_of(&nids)?)
                .filter_map(|(nid, list)| list.is_none().then_some(*nid))
                .collect();
            self.stage2_scan_vectors_of(&outside, visit)?;
            after = last;
        }
    }

    /// [`GraphReader::ann_generation`].
    pub(crate) fn stage3_ann_generation(&self) -> Result<u64, StoreError> {
        self.stage2_counter(ANN_GENERATION)
    }

    /// [`GraphReader::ann_centroids`].
    pub(crate) fn stage3_ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError> {
        self.raw_query(redis::cmd("GET").arg(self.stage2_key(ANN_CENTROIDS)))
    }

    /// [`GraphReader::ann_list`].
    pub(crate) fn stage3_ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
        self.raw_query(redis::cmd("HGET").arg(self.stage2_key(ANN_LISTS)).arg(list))
    }

    /// The stage-2 checkpoint the last consolidation covered (0: never consolidated).
    pub fn consolidated_through(&self) -> Result<u64, StoreError> {
        let through: Option<u64> =
            self.raw_query(redis::cmd("GET").arg(self.stage2_key(CONSOLIDATED)))?;
        Ok(through.unwrap_or(0))
    }

    /// The keys and numbers of every node of `label`.
    fn label_members(&self, label: &str) -> Result<Vec<(NodeKey, i64)>, StoreError> {
        let quoted = name(label, "label")?;
        let rows = self.run_read(&format!("MATCH (n:{quoted}) RETURN n.id, n.seq"), &[])?;
        rows.iter()
            .map(|r| {
                let key = NodeKey { label: label.to_owned(), id: text_at(r, 0, &self.url)? };
                Ok((key, int_at(r, 1, &self.url)?))
            })
            .collect()
    }
}

/// A node written by the transaction: the node, its number, and whether the graph lacks it
/// (created, not merged).
type Written = (Node, i64, bool);

/// The vector index as a transaction rebuilt it.
#[derive(Default)]
struct AnnWrite {
    /// Whether the stored index was dropped first.
    cleared: bool,
    centroids: Option<Vec<u8>>,
    lists: BTreeMap<u32, Vec<u8>>,
    assigned: BTreeMap<i64, u32>,
}

/// The lexical index as a transaction rebuilt it.
#[derive(Default)]
struct TextIndexWrite {
    /// Whether the stored index was dropped first.
    cleared: bool,
    /// Posting lists written (`Some`) or deleted (`None`).
    postings: BTreeMap<String, Option<Vec<u8>>>,
    build: Option<TextIndexBuild>,
}

/// A stage-3 write transaction on a scale-out store ([`ctxgraph_store::RemoteStore::
/// begin_consolidate`]): reads answered from the graph, the log and stage 2's keys with its own
/// writes over them, writes held back until [`ConsolidateCommit::commit`] applies them as one
/// Redis transaction (`MULTI` … `EXEC`) watched on the projection's and stage 2's checkpoints
/// and the node creation counter, so a consolidation over a graph that moved meanwhile applies
/// nothing and is run again.
///
/// Its reads see its writes where stage 3 reads what it wrote (nodes, edges by key, vectors,
/// full-text documents, both indexes); lists of edges and nodes by label read the graph as it
/// was, which is all stage 3 reads of them (it reads them before it writes them).
pub struct ConsolidateWrite {
    graph: FalkorGraph,
    log: RedisLog,
    /// The stage-2 checkpoint when the transaction began.
    enriched: u64,
    /// The last node creation number given (the counter's value at the start, then this
    /// transaction's).
    last_seq: i64,
    /// Labels deleted whole, with the nodes they had in the graph.
    cleared: BTreeMap<String, Vec<(NodeKey, i64)>>,
    /// Edge types deleted whole.
    cleared_types: BTreeSet<String>,
    nodes: BTreeMap<NodeKey, Written>,
    edges: BTreeMap<EdgeKey, Option<Edge>>,
    vectors: BTreeMap<i64, (NodeKey, Vec<f32>)>,
    texts: BTreeMap<i64, (NodeKey, String)>,
    model: Option<(String, usize)>,
    ann: Option<AnnWrite>,
    text_index: Option<TextIndexWrite>,
    /// Whether anything changed the graph (nodes or edges).
    graph_changed: bool,
    /// Every document's terms with this transaction's ([`ConsolidateWrite::docs`]), read once
    /// and kept until a write changes the documents: a consolidation asks for them several
    /// times (counting, building the lexical index, committing).
    docs: RefCell<Option<Rc<BTreeMap<i64, String>>>>,
}

impl std::fmt::Debug for ConsolidateWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsolidateWrite").field("enriched", &self.enriched).finish_non_exhaustive()
    }
}

/// The refusal of a write stage 3 never makes.
fn not_derived(what: &str) -> StoreError {
    StoreError::Remote {
        backend: "falkordb",
        detail: format!(
            "a consolidation writes derived data only, not {what} \
             (rule: consolidate.derived_only)"
        ),
    }
}

impl ConsolidateWrite {
    /// Begin on `graph` and `log` (connections of their own: the graph's holds the watch).
    pub fn begin(graph: FalkorGraph, log: RedisLog) -> Result<ConsolidateWrite, StoreError> {
        let (_, last_seq) = graph.watch_checkpoint()?;
        let enriched: Option<u64> = graph.raw_query(redis::cmd("GET").arg(&graph.enriched))?;
        Ok(ConsolidateWrite {
            graph,
            log,
            enriched: enriched.unwrap_or(0),
            last_seq,
            cleared: BTreeMap::new(),
            cleared_types: BTreeSet::new(),
            nodes: BTreeMap::new(),
            edges: BTreeMap::new(),
            vectors: BTreeMap::new(),
            texts: BTreeMap::new(),
            model: None,
            ann: None,
            text_index: None,
            graph_changed: false,
            docs: RefCell::new(None),
        })
    }

    /// Whether `key` was deleted with its label and not written again.
    fn gone(&self, key: &NodeKey) -> bool {
        !self.nodes.contains_key(key)
            && self.cleared.get(&key.label).is_some_and(|m| m.iter().any(|(k, _)| k == key))
    }

    /// The node number of `key`, with this transaction's writes.
    fn nid_of(&self, key: &NodeKey) -> Result<Option<i64>, StoreError> {
        if let Some((_, seq, _)) = self.nodes.get(key) {
            return Ok(Some(*seq));
        }
        if self.gone(key) {
            return Ok(None);
        }
        Ok(self.graph.seqs_of(std::iter::once(key))?.get(key).copied())
    }

    /// The number of `key`, which must be a node.
    fn nid_required(&self, key: &NodeKey) -> Result<i64, StoreError> {
        self.nid_of(key)?.ok_or_else(|| {
            StoreError::Corruption(format!(
                "{}: no node {}:{} to write a derived value of",
                self.graph.url, key.label, key.id
            ))
        })
    }

    /// The numbers of the nodes deleted with their labels (a node written again under the
    /// same key is a new node, with a new number).
    fn deleted_nids(&self) -> BTreeSet<i64> {
        self.cleared.values().flatten().map(|(_, nid)| *nid).collect()
    }

    /// Every full-text document's terms, with this transaction's documents.
    fn docs(&self) -> Result<Rc<BTreeMap<i64, String>>, StoreError> {
        if let Some(docs) = &*self.docs.borrow() {
            return Ok(Rc::clone(docs));
        }
        let mut docs = self.graph.doc_terms()?;
        for nid in self.deleted_nids() {
            docs.remove(&nid);
        }
        let bodies: Vec<&str> = self.texts.values().map(|(_, t)| t.as_str()).collect();
        let mut terms: Vec<Vec<String>> = vec![Vec::new(); bodies.len()];
        for (i, term) in with_tokenizer(|t| t.occurrences(&bodies))? {
            if let Some(list) = terms.get_mut(i) {
                list.push(term);
            }
        }
        for (nid, list) in self.texts.keys().zip(terms) {
            docs.insert(*nid, list.join(" "));
        }
        let docs = Rc::new(docs);
        *self.docs.borrow_mut() = Some(Rc::clone(&docs));
        Ok(docs)
    }

    /// The stored vectors after `after`, at most `limit`, with this transaction's.
    fn merged_vectors(&self, after: i64, limit: usize) -> Result<Vec<StoredVector>, StoreError> {
        let deleted = self.deleted_nids();
        let mut out: BTreeMap<i64, StoredVector> = self
            .graph
            .stage2_vectors_page(after, limit)?
            .into_iter()
            .filter(|v| !deleted.contains(&v.nid))
            .map(|v| (v.nid, v))
            .collect();
        for (nid, (key, vector)) in self.vectors.range(after.saturating_add(1)..).take(limit) {
            out.insert(*nid, StoredVector { nid: *nid, key: key.clone(), vector: vector.clone() });
        }
        Ok(out.into_values().take(limit).collect())
    }

    /// Every stored vector's number, with this transaction's.
    fn all_vector_nids(&self) -> Result<BTreeSet<i64>, StoreError> {
        let mut nids = BTreeSet::new();
        let mut after = -1;
        loop {
            let page = self.graph.ids_after("vector_ids", after, SCAN_PAGE)?;
            let Some(&last) = page.last() else { break };
            nids.extend(page);
            after = last;
        }
        for nid in self.deleted_nids() {
            nids.remove(&nid);
        }
        nids.extend(self.vectors.keys());
        Ok(nids)
    }

    /// The commands writing stage 2's and stage 3's keys.
    fn key_writes(&self, pipe: &mut redis::Pipeline) -> Result<(), StoreError> {
        let g = &self.graph;
        let key = |suffix: &str| g.stage2_key(suffix);
        let deleted: Vec<i64> = self.deleted_nids().into_iter().collect();
        if !deleted.is_empty() {
            for hash in ["vectors", "doc_terms", "node_keys", VECTOR_LISTS] {
                pipe.cmd("HDEL").arg(key(hash)).arg(&deleted);
            }
            for set in ["vector_ids", "text_ids"] {
                pipe.cmd("ZREM").arg(key(set)).arg(&deleted);
            }
            if let Some(cmd) = g.vector_copy_drops(&deleted)? {
                pipe.add_command(cmd);
            }
            for cmd in g.text_copy_drops(&deleted, g.stored_lengths(&deleted)?)? {
                pipe.add_command(cmd);
            }
        }
        let mut node_keys: BTreeMap<i64, &NodeKey> = BTreeMap::new();
        if !self.vectors.is_empty() {
            let (mut hset, mut zadd) = (redis::cmd("HSET"), redis::cmd("ZADD"));
            hset.arg(key("vectors"));
            zadd.arg(key("vector_ids"));
            for (nid, (k, v)) in &self.vectors {
                hset.arg(*nid).arg(vector_bytes(v));
                zadd.arg(*nid).arg(*nid);
                node_keys.insert(*nid, k);
            }
            pipe.add_command(hset).add_command(zadd);
            let copies: Vec<(i64, &[f32])> =
                self.vectors.iter().map(|(nid, (_, v))| (*nid, v.as_slice())).collect();
            for cmd in g.vector_copy_writes(&copies)? {
                pipe.add_command(cmd);
            }
        }
        if !self.texts.is_empty() {
            let docs = self.docs()?;
            let (mut hset, mut zadd) = (redis::cmd("HSET"), redis::cmd("ZADD"));
            hset.arg(key("doc_terms"));
            zadd.arg(key("text_ids"));
            for (nid, (k, _)) in &self.texts {
                hset.arg(*nid).arg(docs.get(nid).map_or("", String::as_str));
                zadd.arg(*nid).arg(*nid);
                node_keys.insert(*nid, k);
            }
            pipe.add_command(hset).add_command(zadd);
            let copies: Vec<(i64, &str)> = self
                .texts
                .keys()
                .map(|nid| (*nid, docs.get(nid).map_or("", String::as_str)))
                .collect();
            for cmd in g.text_copy_writes(&copies)? {
                pipe.add_command(cmd);
            }
            pipe.cmd("INCR").arg(key("text_generation"));
        }
        if !node_keys.is_empty() {
            let mut hset = redis::cmd("HSET");
            hset.arg(key("node_keys"));
            for (nid, k) in node_keys {
                let json = serde_json::to_string(&(&k.label, &k.id)).map_err(|e| {
                    StoreError::Corruption(format!("a node key does not encode: {e}"))
                })?;
                hset.arg(nid).arg(json);
            }
            pipe.add_command(hset);
        }
        if let Some((model, dimension)) = &self.model {
            pipe.cmd("HSET")
                .arg(key(super::stage2::EMBEDDING))
                .arg("model")
                .arg(model)
                .arg("dimension")
                .arg(*dimension);
        }
        if let Some(ann) = &self.ann {
            if ann.cleared {
                pipe.cmd("DEL").arg(key(ANN_CENTROIDS)).arg(key(ANN_LISTS)).arg(key(VECTOR_LISTS));
            }
            if let Some(centroids) = &ann.centroids {
                pipe.cmd("SET").arg(key(ANN_CENTROIDS)).arg(centroids.as_slice());
            }
            if !ann.lists.is_empty() {
                let mut hset = redis::cmd("HSET");
                hset.arg(key(ANN_LISTS));
                for (list, blob) in &ann.lists {
                    hset.arg(*list).arg(blob.as_slice());
                }
                pipe.add_command(hset);
            }
            if !ann.assigned.is_empty() {
                let mut hset = redis::cmd("HSET");
                hset.arg(key(VECTOR_LISTS));
                for (nid, list) in &ann.assigned {
                    hset.arg(*nid).arg(*list);
                }
                pipe.add_command(hset);
            }
            pipe.cmd("INCR").arg(key(ANN_GENERATION));
        }
        if self.ann.is_some() || !self.vectors.is_empty() || !deleted.is_empty() {
            pipe.cmd("INCR").arg(key("vector_generation"));
        }
        if let Some(index) = &self.text_index {
            if index.cleared {
                pipe.cmd("DEL").arg(key("postings")).arg(key("text_build"));
            }
            let (mut hset, mut hdel) = (redis::cmd("HSET"), redis::cmd("HDEL"));
            hset.arg(key("postings"));
            hdel.arg(key("postings"));
            let (mut puts, mut deletes) = (0, 0);
            for (term, blob) in &index.postings {
                match blob {
                    Some(blob) => {
                        hset.arg(term).arg(blob.as_slice());
                        puts += 1;
                    }
                    None => {
                        hdel.arg(term);
                        deletes += 1;
                    }
                }
            }
            if puts > 0 {
                pipe.add_command(hset);
            }
            if deletes > 0 {
                pipe.add_command(hdel);
            }
            if let Some(build) = &index.build {
                pipe.cmd("HSET")
                    .arg(key("text_build"))
                    .arg("through")
                    .arg(build.through)
                    .arg("docs")
                    .arg(build.docs)
                    .arg("avg_len")
                    .arg(build.avg_len.to_string());
            }
            pipe.cmd("INCR").arg(key("text_generation"));
        }
        pipe.cmd("SET").arg(key(CONSOLIDATED)).arg(self.enriched);
        Ok(())
    }

    /// The queries writing the graph: edge types deleted whole first, then the net changes
    /// as a fold page writes them.
    fn graph_writes(&self) -> Result<Vec<Write>, StoreError> {
        let mut out = Vec::new();
        for ty in &self.cleared_types {
            let quoted = name(ty, "edge type")?;
            out.push(Write {
                query: format!("MATCH ()-[e:{quoted}]->() DELETE e"),
                params: vec![],
            });
        }
        let created: BTreeSet<&NodeKey> =
            self.nodes.iter().filter(|(_, (_, _, new))| *new).map(|(k, _)| k).collect();
        let mut changes = NetChanges::default();
        for members in self.cleared.values() {
            changes.detached.extend(members.iter().map(|(k, _)| k));
        }
        for (key, (node, seq, new)) in &self.nodes {
            changes.nodes.push((key, Some(node), *new, *seq));
        }
        for (key, edge) in &self.edges {
            // An edge of a node this transaction creates, or of a type it cleared, is new.
            let new = created.contains(&key.from)
                || created.contains(&key.to)
                || self.cleared_types.contains(&key.edge_type);
            changes.edges.push((key, edge.as_ref(), new));
        }
        out.extend(merged_writes(&changes)?);
        Ok(out)
    }
}

impl ConsolidateCommit for ConsolidateWrite {
    fn commit(self: Box<Self>) -> Result<bool, StoreError> {
        let g = &self.graph;
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.cmd("SET").arg(&g.seq).arg(self.last_seq);
        // Written again unchanged: a stage-2 commit or a fold page begun before this commit
        // watches it, so it applies nothing and reads again (its lexical index would otherwise
        // be built from the documents this commit replaces).
        pipe.cmd("SET").arg(&g.enriched).arg(self.enriched);
        if self.graph_changed {
            g.push_generation(&mut pipe);
        }
        self.key_writes(&mut pipe)?;
        for w in self.graph_writes()? {
            pipe.cmd("GRAPH.QUERY").arg(&g.name).arg(w.with_preamble()?);
        }
        g.exec_watched(&pipe, "a write of a consolidation")
    }
}

impl LogReader for ConsolidateWrite {
    fn head(&self) -> Result<u64, StoreError> {
        self.log.head()
    }
    fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
        self.log.get(kind, id)
    }
    fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
        self.log.read_from(from, limit)
    }
    fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
        self.log.read_kind(kind)
    }
}

/// [`GraphReader`] methods answered by the graph as the transaction began.
macro_rules! through_graph {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> Result<$ret, StoreError> {
                GraphReader::$name(&self.graph $(, $arg)*)
            }
        )*
    };
}

impl GraphReader for ConsolidateWrite {
    through_graph! {
        fn node_props_named(&self, key: &NodeKey, names: &[&str]) -> Option<Properties>;
        fn existing_ids(&self, label: &str, ids: &[String]) -> Vec<String>;
        fn edges_of(&self, key: &NodeKey, edge_type: Option<&str>, direction: Direction) -> Vec<Edge>;
        fn nodes_by_label(&self, label: &str, after: Option<&str>, limit: usize) -> Vec<Node>;
        fn edges_by_type(&self, edge_type: &str, after: Option<&EdgeKey>, limit: usize) -> Vec<Edge>;
        fn sessions(&self, after: Option<&str>, limit: usize) -> Vec<String>;
        fn session_events(&self, session_id: &str, limit: usize) -> Vec<SessionSlot>;
        fn edges_limited(&self, key: &NodeKey, edge_type: &str, out: bool, limit: usize) -> Vec<Edge>;
        fn trace_events(&self, trace_id: &str, limit: usize) -> Vec<String>;
        fn session_tail(&self, session_id: &str) -> Option<SessionSlot>;
        fn session_neighbors(&self, session_id: &str, slot: &SessionSlot)
            -> (Option<SessionSlot>, Option<SessionSlot>);
        fn pending_for(&self, key: &NodeKey) -> Vec<Edge>;
        fn pending_edges(&self) -> Vec<(NodeKey, Edge)>;
        fn counts(&self) -> GraphCounts;
        fn projected_through(&self) -> u64;
        fn setting(&self, key: &str) -> Option<String>;
        fn heaviest_edges(&self, key: &NodeKey, weight: &dyn Fn(&str, bool) -> f64, limit: usize)
            -> Vec<(f64, Edge, bool)>;
        fn edge_groups(&self, key: &NodeKey, limit: usize) -> Vec<EdgeGroup>;
        fn graph_generation(&self) -> u64;
        fn heaviest_neighbours(
            &self,
            key: &NodeKey,
            weight: &dyn Fn(&str, bool) -> f64,
            limit: usize,
            names: &[&str]
        ) -> Vec<(NodeKey, Properties)>;
        fn text_terms(&self, text: &str) -> Vec<String>;
        fn search_text(&self, words: &[String], after: i64, limit: usize) -> Vec<(i64, f64)>;
        fn text_generation(&self) -> u64;
        fn vector_generation(&self) -> u64;
        fn ann_generation(&self) -> u64;
        fn is_archived(&self, key: &NodeKey) -> bool;
        fn archived(&self, after: Option<&NodeKey>, limit: usize) -> Vec<Archived>;
    }

    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        if let Some((node, _, _)) = self.nodes.get(key) {
            return Ok(Some(node.clone()));
        }
        if self.gone(key) {
            return Ok(None);
        }
        ProjectionGraph::node(&self.graph, key)
    }

    fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        Ok(self.nodes.contains_key(key)
            || (!self.gone(key) && ProjectionGraph::node_exists(&self.graph, key)?))
    }

    fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
        if let Some(edge) = self.edges.get(key) {
            return Ok(edge.clone());
        }
        if self.cleared_types.contains(&key.edge_type) || self.gone(&key.from) || self.gone(&key.to)
        {
            return Ok(None);
        }
        ProjectionGraph::edge(&self.graph, key)
    }

    fn enriched_through(&self) -> Result<u64, StoreError> {
        Ok(self.enriched)
    }

    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        match &self.model {
            Some(m) => Ok(Some(m.clone())),
            None => self.graph.stage2_embedding_model(),
        }
    }

    fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
        let Some(nid) = self.nid_of(key)? else { return Ok(None) };
        if let Some((_, v)) = self.vectors.get(&nid) {
            return Ok(Some(v.clone()));
        }
        self.graph.stage2_vector(key)
    }

    fn vector_list(&self, key: &NodeKey) -> Result<Option<(i64, Option<u32>)>, StoreError> {
        let Some(nid) = self.nid_of(key)? else { return Ok(None) };
        let has = self.vectors.contains_key(&nid) || self.graph.stage2_vector_list(key)?.is_some();
        if !has {
            return Ok(None);
        }
        Ok(Some(match &self.ann {
            Some(ann) => (nid, ann.assigned.get(&nid).copied()),
            // A vector this transaction wrote is outside the index until it is rebuilt.
            None if self.vectors.contains_key(&nid) => (nid, None),
            None => (nid, self.graph.lists_of(&[nid])?.into_iter().next().flatten()),
        }))
    }

    fn text_docs_after(&self, after: i64) -> Result<(u64, Option<i64>), StoreError> {
        let docs = self.docs()?;
        let above = docs.range(after.saturating_add(1)..).count() as u64;
        Ok((above, docs.keys().next_back().copied()))
    }

    fn scan_text_index(&self, visit: &mut dyn FnMut(&str, i64) -> bool) -> Result<(), StoreError> {
        let docs = self.docs()?;
        for (term, doc) in occurrences(&docs) {
            if !visit(term, doc) {
                break;
            }
        }
        Ok(())
    }

    fn text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError> {
        match &self.text_index {
            Some(index) if index.cleared || index.build.is_some() => Ok(index.build),
            _ => self.graph.stage2_text_index_build(),
        }
    }

    fn text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError> {
        match self.text_index.as_ref().map(|i| (i.cleared, i.postings.get(term))) {
            Some((_, Some(blob))) => Ok(blob.clone()),
            Some((true, None)) => Ok(None),
            _ => self.graph.stage2_text_postings(term),
        }
    }

    fn node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
        let mine: BTreeMap<i64, &NodeKey> =
            self.nodes.values().map(|(n, seq, _)| (*seq, &n.key)).collect();
        let deleted = self.deleted_nids();
        let rest: Vec<i64> = nids
            .iter()
            .copied()
            .filter(|n| !mine.contains_key(n) && !deleted.contains(n))
            .collect();
        let found: BTreeMap<i64, NodeKey> =
            self.graph.stage2_node_keys(&rest)?.into_iter().collect();
        Ok(nids
            .iter()
            .filter_map(|nid| {
                let key = mine.get(nid).copied().or_else(|| found.get(nid))?;
                Some((*nid, key.clone()))
            })
            .collect())
    }

    fn vectors_page(&self, after: i64, limit: usize) -> Result<Vec<StoredVector>, StoreError> {
        self.merged_vectors(after, limit)
    }

    fn scan_unindexed_vectors(&self, visit: &mut dyn FnMut(i64, &[f32])) -> Result<(), StoreError> {
        let mut after = -1;
        loop {
            let page = self.merged_vectors(after, SCAN_PAGE)?;
            let Some(last) = page.last().map(|v| v.nid) else { return Ok(()) };
            let nids: Vec<i64> = page.iter().map(|v| v.nid).collect();
            let lists: Vec<Option<u32>> = match &self.ann {
                Some(ann) => nids.iter().map(|n| ann.assigned.get(n).copied()).collect(),
                None => self.graph.lists_of(&nids)?,
            };
            for (v, list) in page.iter().zip(lists) {
                if list.is_none() || (self.ann.is_none() && self.vectors.contains_key(&v.nid)) {
                    visit(v.nid, &v.vector);
                }
            }
            after = last;
        }
    }

    fn vector_counts(&self) -> Result<(u64, u64), StoreError> {
        let all = self.all_vector_nids()?;
        let outside = match &self.ann {
            Some(ann) => all.iter().filter(|n| !ann.assigned.contains_key(n)).count(),
            None => {
                let nids: Vec<i64> = all.iter().copied().collect();
                let mut n = 0;
                for (page, lists) in nids.chunks(SCAN_PAGE).map(|p| (p, self.graph.lists_of(p))) {
                    for (nid, list) in page.iter().zip(lists?) {
                        n += usize::from(list.is_none() || self.vectors.contains_key(nid));
                    }
                }
                n
            }
        };
        Ok((all.len() as u64, outside as u64))
    }

    fn scan_vectors_of(
        &self,
        nids: &[i64],
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        let deleted = self.deleted_nids();
        for nid in nids {
            if let Some((_, v)) = self.vectors.get(nid) {
                visit(*nid, v);
            } else if !deleted.contains(nid) {
                self.graph.stage2_scan_vectors_of(std::slice::from_ref(nid), visit)?;
            }
        }
        Ok(())
    }

    fn ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError> {
        match &self.ann {
            Some(ann) if ann.cleared || ann.centroids.is_some() => Ok(ann.centroids.clone()),
            _ => self.graph.stage3_ann_centroids(),
        }
    }

    fn ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
        match self.ann.as_ref().map(|a| (a.cleared, a.lists.get(&list))) {
            Some((_, Some(blob))) => Ok(Some(blob.clone())),
            Some((true, None)) => Ok(None),
            _ => self.graph.stage3_ann_list(list),
        }
    }
}

impl GraphStore for ConsolidateWrite {
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        GraphStore::put_node_owned(self, node.clone())
    }

    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        self.graph_changed = true;
        if let Some(slot) = self.nodes.get_mut(&node.key) {
            slot.0 = node;
            return Ok(());
        }
        let existing = if self.gone(&node.key) {
            None
        } else {
            self.graph.seqs_of(std::iter::once(&node.key))?.get(&node.key).copied()
        };
        let written = match existing {
            Some(seq) => (node, seq, false),
            None => {
                self.last_seq += 1;
                (node, self.last_seq, true)
            }
        };
        self.nodes.insert(written.0.key.clone(), written);
        Ok(())
    }

    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        self.graph_changed = true;
        self.edges.insert(edge.key.clone(), Some(edge.clone()));
        Ok(())
    }

    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        let existed = GraphReader::edge(self, key)?.is_some();
        self.graph_changed = true;
        self.edges.insert(key.clone(), None);
        Ok(existed)
    }

    fn put_session_slot(&mut self, _: &str, _: &SessionSlot) -> Result<(), StoreError> {
        Err(not_derived("session order"))
    }

    fn put_pending(&mut self, _: &NodeKey, _: &Edge) -> Result<(), StoreError> {
        Err(not_derived("parked edges"))
    }

    fn take_pending(&mut self, _: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        Err(not_derived("parked edges"))
    }

    fn set_projected_through(&mut self, _: u64) -> Result<(), StoreError> {
        Err(not_derived("the projection checkpoint"))
    }

    fn delete_label(&mut self, label: &str) -> Result<u64, StoreError> {
        let members = self.graph.label_members(label)?;
        let count = members.len()
            + self.nodes.iter().filter(|(k, (_, _, new))| k.label == label && *new).count();
        self.graph_changed = true;
        let dropped: Vec<NodeKey> =
            self.nodes.keys().filter(|k| k.label == label).cloned().collect();
        for key in &dropped {
            if let Some((_, seq, _)) = self.nodes.remove(key) {
                self.vectors.remove(&seq);
                self.texts.remove(&seq);
            }
        }
        self.edges.retain(|k, _| k.from.label != label && k.to.label != label);
        self.cleared.entry(label.to_owned()).or_insert(members);
        *self.docs.get_mut() = None;
        Ok(count as u64)
    }

    fn set_enriched_through(&mut self, _: u64) -> Result<(), StoreError> {
        Err(not_derived("the stage-2 checkpoint"))
    }

    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError> {
        self.model = Some((model_id.to_owned(), dimension));
        Ok(())
    }

    fn set_setting(&mut self, _: &str, _: Option<&str>) -> Result<(), StoreError> {
        Err(not_derived("store settings"))
    }

    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError> {
        let nid = self.nid_required(key)?;
        self.vectors.insert(nid, (key.clone(), vector.to_vec()));
        Ok(())
    }

    fn put_text(&mut self, key: &NodeKey, text: &str) -> Result<(), StoreError> {
        let nid = self.nid_required(key)?;
        self.texts.insert(nid, (key.clone(), text.to_owned()));
        *self.docs.get_mut() = None;
        Ok(())
    }

    fn clear_enrichment(&mut self) -> Result<(), StoreError> {
        Err(not_derived("a reset of stage 2"))
    }

    fn clear_graph(&mut self) -> Result<(), StoreError> {
        Err(not_derived("a reset of the graph"))
    }

    fn delete_node(&mut self, _: &NodeKey) -> Result<bool, StoreError> {
        Err(not_derived("a deletion of a node"))
    }

    fn delete_edges_of_type(&mut self, edge_type: &str) -> Result<u64, StoreError> {
        let quoted = name(edge_type, "edge type")?;
        let rows =
            self.graph.run_read(&format!("MATCH ()-[e:{quoted}]->() RETURN count(e)"), &[])?;
        let stored = rows.first().map(|r| int_at(r, 0, &self.graph.url)).transpose()?.unwrap_or(0);
        self.graph_changed = true;
        self.edges.retain(|k, _| k.edge_type != edge_type);
        self.cleared_types.insert(edge_type.to_owned());
        Ok(u64::try_from(stored).unwrap_or(0))
    }

    fn delete_session_slot(&mut self, _: &str, _: &SessionSlot) -> Result<(), StoreError> {
        Err(not_derived("session order"))
    }

    fn clear_ann_index(&mut self) -> Result<(), StoreError> {
        self.ann = Some(AnnWrite { cleared: true, ..AnnWrite::default() });
        Ok(())
    }

    fn put_ann_centroids(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.ann.get_or_insert_with(AnnWrite::default).centroids = Some(blob.to_vec());
        Ok(())
    }

    fn put_ann_list(&mut self, list: u32, members: &[u8]) -> Result<(), StoreError> {
        self.ann.get_or_insert_with(AnnWrite::default).lists.insert(list, members.to_vec());
        Ok(())
    }

    fn set_vector_list(&mut self, nid: i64, list: u32) -> Result<(), StoreError> {
        self.ann.get_or_insert_with(AnnWrite::default).assigned.insert(nid, list);
        Ok(())
    }

    fn clear_text_index(&mut self) -> Result<(), StoreError> {
        self.text_index = Some(TextIndexWrite { cleared: true, ..TextIndexWrite::default() });
        Ok(())
    }

    fn put_text_postings(&mut self, term: &str, postings: &[u8]) -> Result<(), StoreError> {
        let index = self.text_index.get_or_insert_with(TextIndexWrite::default);
        index.postings.insert(term.to_owned(), Some(postings.to_vec()));
        Ok(())
    }

    fn delete_text_postings(&mut self, term: &str) -> Result<(), StoreError> {
        let index = self.text_index.get_or_insert_with(TextIndexWrite::default);
        index.postings.insert(term.to_owned(), None);
        Ok(())
    }

    fn set_text_index_build(&mut self, build: &TextIndexBuild) -> Result<(), StoreError> {
        self.text_index.get_or_insert_with(TextIndexWrite::default).build = Some(*build);
        Ok(())
    }

    fn put_archived(&mut self, _: &NodeKey, _: &str) -> Result<(), StoreError> {
        Err(not_derived("retention's archive marks"))
    }

    fn clear_archived(&mut self) -> Result<(), StoreError> {
        Err(not_derived("retention's archive marks"))
    }
}
