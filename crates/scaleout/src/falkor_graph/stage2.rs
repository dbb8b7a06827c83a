//! Stage 2 (enrichment) on the scale-out backend: where its data lives, its write transaction
//! ([`Stage2Write`]) and the reads of it.
//!
//! # Layout (beside the graph, under the store's hash tag `ctxgraph:{NAME}:`)
//!
//! ```text
//! (:Event {props})          keywords, summary, importance_score: in the node's props, as on
//!                            the embedded store
//! embedding                  hash: model, dimension (the model of the stored vectors)
//! vectors                    hash: node creation number → the vector, f32 little-endian
//! vector_ids                 sorted set of those numbers (scored by themselves): nid order
//! doc_terms                  hash: node creation number → its full-text terms, one per
//!                            occurrence, space-separated (the embedded tokenizer's terms)
//! text_ids                   sorted set of every full-text document's number
//! node_keys                  hash: node creation number → the node's key as JSON
//!                            `[label, id]`, for every node with a vector or a document (the
//!                            graph has no index by number: searches read their hits' keys here)
//! postings                   hash: term → the lexical index's posting list blob
//! text_build                 hash: through, docs, avg_len (what the lexical index covers)
//! vector_generation, text_generation   counters every commit that changes them bumps
//! ```
//!
//! A commit that writes nodes' properties also moves the graph's generation (`falkor_graph.rs`).
//!
//! Every value is what the embedded store keeps (vectors byte for byte, posting lists built by
//! `ctxgraph-lexical` from the same terms), so the engine's own exact vector scan and BM25
//! merge run over them and give the embedded store's answers. Until a consolidation files them
//! in the vector index, vectors read as unindexed, as on the embedded store before its first
//! consolidation; FalkorDB's own vector and full-text indexes (`native_index.rs`,
//! `native_text.rs`) give the candidates a search then scores from these keys. A stage-2
//! commit leaves the lexical index as it is unless the documents outside its build reach
//! `ctxgraph_lexical::REBUILD_AFTER`, as a store file's load does; stage 3 rebuilds it. A node the fold deletes takes its stage-2 data
//! with it, in the fold's transaction (`dropped.rs`).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use ctxgraph_lexical::Builder;
use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_store::{
    EnrichCommit, EnrichWrite, ProjectionGraph, StoreError, StoredVector, TextIndexBuild,
    TextTokenizer, props_to,
};
use falkordb::FalkorValue;

use super::{FalkorGraph, Write, int, int_at, name, raw_remote, s, text_at};

/// The hash of stage 2's embedding model and dimension.
pub(super) const EMBEDDING: &str = "embedding";
/// [`ctxgraph_store::GraphReader::enrichment_epoch`]'s key: every reset of stages 2 and 3
/// moves it on (`reset.rs`), and a stage-2 transaction reads it as it begins.
pub(super) const EPOCH: &str = "enrichment_epoch";

mod dropped;

/// Vectors read per round trip by the scans.
const SCAN_PAGE: usize = 1_024;

thread_local! {
    /// The full-text tokenizer (an in-memory SQLite connection), one per thread.
    static TOKENIZER: RefCell<Option<TextTokenizer>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's tokenizer.
pub(super) fn with_tokenizer<T>(
    f: impl FnOnce(&TextTokenizer) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    TOKENIZER.with_borrow_mut(|slot| {
        if slot.is_none() {
            *slot = Some(TextTokenizer::new()?);
        }
        match slot.as_ref() {
            Some(t) => f(t),
            None => Err(StoreError::Corruption("the tokenizer did not open".into())),
        }
    })
}

/// A vector as stored: its floats, little-endian.
pub(super) fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector's floats; `None` when the bytes are not whole floats.
fn vector_of(bytes: &[u8]) -> Option<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    Some(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

impl FalkorGraph {
    /// The key `suffix` of this store.
    pub(super) fn stage2_key(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.url.key_prefix())
    }

    /// Run one plain Redis command on the graph's connection.
    pub(super) fn raw_query<T: redis::FromRedisValue>(
        &self,
        cmd: &redis::Cmd,
    ) -> Result<T, StoreError> {
        cmd.query(&mut *self.raw.borrow_mut()).map_err(|e| raw_remote(&self.url, &e))
    }

    /// The creation numbers of `keys` (nodes missing from the graph left out): one query per
    /// label.
    pub(super) fn seqs_of<'k>(
        &self,
        keys: impl Iterator<Item = &'k NodeKey>,
    ) -> Result<BTreeMap<NodeKey, i64>, StoreError> {
        let mut by_label: BTreeMap<&str, Vec<FalkorValue>> = BTreeMap::new();
        for key in keys {
            by_label.entry(&key.label).or_default().push(s(&key.id));
        }
        let mut out = BTreeMap::new();
        for (label, ids) in by_label {
            let quoted = name(label, "label")?;
            let rows = self.run_read(
                &format!("UNWIND $ids AS i MATCH (n:{quoted} {{id: i}}) RETURN n.id, n.seq"),
                &[("ids", FalkorValue::Array(ids))],
            )?;
            for r in &rows {
                let id = text_at(r, 0, &self.url)?;
                out.insert(NodeKey { label: label.to_owned(), id }, int_at(r, 1, &self.url)?);
            }
        }
        Ok(out)
    }

    /// [`ctxgraph_store::GraphReader::node_keys`]: the keys stage 2 recorded by number, and
    /// those of other nodes from the graph (a scan: it has no index by number), in the order
    /// given, unknown numbers left out.
    pub(crate) fn stage2_node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
        if nids.is_empty() {
            return Ok(Vec::new());
        }
        let known: Vec<Option<String>> =
            self.raw_query(redis::cmd("HMGET").arg(self.stage2_key("node_keys")).arg(nids))?;
        let mut found: BTreeMap<i64, NodeKey> = BTreeMap::new();
        let mut missing = Vec::new();
        for (&nid, key) in nids.iter().zip(known) {
            match key {
                Some(json) => {
                    let (label, id): (String, String) =
                        serde_json::from_str(&json).map_err(|e| {
                            StoreError::Corruption(format!(
                                "{}: the key of node {nid} does not decode: {e}",
                                self.url
                            ))
                        })?;
                    found.insert(nid, NodeKey { label, id });
                }
                None => missing.push(int(nid)),
            }
        }
        if !missing.is_empty() {
            let rows = self.run_read(
                "UNWIND $nids AS i MATCH (n) WHERE n.seq = i RETURN i, labels(n)[0], n.id",
                &[("nids", FalkorValue::Array(missing))],
            )?;
            for r in &rows {
                let key =
                    NodeKey { label: text_at(r, 1, &self.url)?, id: text_at(r, 2, &self.url)? };
                found.insert(int_at(r, 0, &self.url)?, key);
            }
        }
        Ok(nids.iter().filter_map(|nid| Some((*nid, found.get(nid)?.clone()))).collect())
    }

    /// [`ctxgraph_store::GraphReader::embedding_model`].
    pub(crate) fn stage2_embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        if let Some((model, dimension)) = self.held_embedding()? {
            return Ok(model.zip(dimension));
        }
        let (model, dimension): (Option<String>, Option<usize>) = self.raw_query(
            redis::cmd("HMGET").arg(self.stage2_key(EMBEDDING)).arg("model").arg("dimension"),
        )?;
        Ok(model.zip(dimension))
    }

    /// [`ctxgraph_store::GraphReader::vector`].
    pub(crate) fn stage2_vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
        let Some(&nid) = self.seqs_of(std::iter::once(key))?.get(key) else { return Ok(None) };
        let bytes: Option<Vec<u8>> =
            self.raw_query(redis::cmd("HGET").arg(self.stage2_key("vectors")).arg(nid))?;
        bytes.map(|b| self.decoded(&b)).transpose()
    }

    /// A stored vector's floats, or the corruption naming the store.
    pub(super) fn decoded(&self, bytes: &[u8]) -> Result<Vec<f32>, StoreError> {
        vector_of(bytes).ok_or_else(|| {
            StoreError::Corruption(format!(
                "{}: a stored vector of {} bytes is not whole floats",
                self.url,
                bytes.len()
            ))
        })
    }

    /// [`ctxgraph_store::GraphReader::vector_list`]: every vector is outside any index here.
    pub(crate) fn stage2_vector_list(
        &self,
        key: &NodeKey,
    ) -> Result<Option<(i64, Option<u32>)>, StoreError> {
        let Some(&nid) = self.seqs_of(std::iter::once(key))?.get(key) else { return Ok(None) };
        let has: bool =
            self.raw_query(redis::cmd("HEXISTS").arg(self.stage2_key("vectors")).arg(nid))?;
        Ok(has.then_some((nid, None)))
    }

    /// The numbers in the sorted set `set` above `after`, in order, at most `limit`.
    pub(super) fn ids_after(
        &self,
        set: &str,
        after: i64,
        limit: usize,
    ) -> Result<Vec<i64>, StoreError> {
        self.raw_query(
            redis::cmd("ZRANGEBYSCORE")
                .arg(self.stage2_key(set))
                .arg(format!("({after}"))
                .arg("+inf")
                .arg("LIMIT")
                .arg(0)
                .arg(limit),
        )
    }

    /// The vectors of `nids`, in the order given (`None` where there is none).
    fn vectors_of(&self, nids: &[i64]) -> Result<Vec<Option<Vec<f32>>>, StoreError> {
        if nids.is_empty() {
            return Ok(Vec::new());
        }
        let blobs: Vec<Option<Vec<u8>>> =
            self.raw_query(redis::cmd("HMGET").arg(self.stage2_key("vectors")).arg(nids))?;
        blobs.into_iter().map(|b| b.map(|b| self.decoded(&b)).transpose()).collect()
    }

    /// [`ctxgraph_store::GraphReader::vectors_page`].
    pub(crate) fn stage2_vectors_page(
        &self,
        after: i64,
        limit: usize,
    ) -> Result<Vec<StoredVector>, StoreError> {
        let nids = self.ids_after("vector_ids", after, limit)?;
        let vectors = self.vectors_of(&nids)?;
        let keys: BTreeMap<i64, NodeKey> =
            ctxgraph_store::GraphReader::node_keys(self, &nids)?.into_iter().collect();
        let mut out = Vec::with_capacity(nids.len());
        for (nid, vector) in nids.into_iter().zip(vectors) {
            if let (Some(vector), Some(key)) = (vector, keys.get(&nid)) {
                out.push(StoredVector { nid, key: key.clone(), vector });
            }
        }
        Ok(out)
    }

    /// [`ctxgraph_store::GraphReader::scan_unindexed_vectors`]: every vector, in nid order.
    pub(crate) fn stage2_scan_vectors(
        &self,
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        let mut after = -1;
        loop {
            let nids = self.ids_after("vector_ids", after, SCAN_PAGE)?;
            let Some(&last) = nids.last() else { return Ok(()) };
            for (nid, vector) in nids.iter().zip(self.vectors_of(&nids)?) {
                if let Some(vector) = vector {
                    visit(*nid, &vector);
                }
            }
            after = last;
        }
    }

    /// [`ctxgraph_store::GraphReader::scan_vectors_of`].
    pub(crate) fn stage2_scan_vectors_of(
        &self,
        nids: &[i64],
        visit: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), StoreError> {
        for page in nids.chunks(SCAN_PAGE) {
            for (nid, vector) in page.iter().zip(self.vectors_of(page)?) {
                if let Some(vector) = vector {
                    visit(*nid, &vector);
                }
            }
        }
        Ok(())
    }

    /// [`ctxgraph_store::GraphReader::vector_counts`]: all stored, all outside an index.
    pub(crate) fn stage2_vector_counts(&self) -> Result<(u64, u64), StoreError> {
        let n: u64 = self.raw_query(redis::cmd("ZCARD").arg(self.stage2_key("vector_ids")))?;
        Ok((n, n))
    }

    /// A stage-2 counter (`vector_generation`, `text_generation`).
    pub(crate) fn stage2_counter(&self, suffix: &str) -> Result<u64, StoreError> {
        self.counter(&self.stage2_key(suffix))
    }

    /// [`ctxgraph_store::GraphReader::text_terms`].
    pub(crate) fn stage2_text_terms(&self, text: &str) -> Result<Vec<String>, StoreError> {
        with_tokenizer(|t| t.terms(text))
    }

    /// [`ctxgraph_store::GraphReader::text_docs_after`].
    pub(crate) fn stage2_text_docs_after(
        &self,
        after: i64,
    ) -> Result<(u64, Option<i64>), StoreError> {
        if let Some(text) = self.held_text()?
            && let Some(n) = text.docs_after(after)
        {
            return Ok((n, text.last));
        }
        let set = self.stage2_key("text_ids");
        let n: u64 =
            self.raw_query(redis::cmd("ZCOUNT").arg(&set).arg(format!("({after}")).arg("+inf"))?;
        let last: Vec<i64> = self.raw_query(redis::cmd("ZRANGE").arg(&set).arg(-1).arg(-1))?;
        Ok((n, last.first().copied()))
    }

    /// Whether a stage-2 commit writing `docs` (number, terms) rebuilds the lexical index, as
    /// a store file's load does: when the documents outside its build reach
    /// [`ctxgraph_lexical::REBUILD_AFTER`] with them. Below that, the documents above the build
    /// are searched through FalkorDB's full-text index (`native_text.rs`), as a store file
    /// searches them through FTS5. A store whose documents were written before that index was
    /// kept (documents and no `native_texts` marker) has no copies to search, so every commit
    /// rebuilds it there, as before.
    fn rebuilds_lexical_index(&self, docs: &[(i64, String)]) -> Result<bool, StoreError> {
        if docs.is_empty() {
            return Ok(false);
        }
        let set = self.stage2_key("text_ids");
        let (marker, stored): (Option<String>, u64) = redis::pipe()
            .cmd("GET")
            .arg(self.stage2_key(super::native_text::NATIVE_TEXTS))
            .cmd("ZCARD")
            .arg(&set)
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        if marker.is_none() && stored > 0 {
            return Ok(true);
        }
        let through = self.stage2_text_index_build()?.map_or(-1, |b| b.through);
        let nids: Vec<i64> = docs.iter().map(|(nid, _)| *nid).collect();
        let (above, known): (u64, Vec<Option<f64>>) = redis::pipe()
            .cmd("ZCOUNT")
            .arg(&set)
            .arg(format!("({through}"))
            .arg("+inf")
            .cmd("ZMSCORE")
            .arg(&set)
            .arg(&nids)
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| raw_remote(&self.url, &e))?;
        let added = nids.iter().zip(known).filter(|(nid, k)| **nid > through && k.is_none());
        let outside = above + added.count() as u64;
        Ok(outside >= ctxgraph_lexical::REBUILD_AFTER)
    }

    /// Every document's terms (one per occurrence), by document.
    pub(super) fn doc_terms(&self) -> Result<BTreeMap<i64, String>, StoreError> {
        let all: BTreeMap<i64, String> =
            self.raw_query(redis::cmd("HGETALL").arg(self.stage2_key("doc_terms")))?;
        Ok(all)
    }

    /// [`ctxgraph_store::GraphReader::scan_text_index`].
    pub(crate) fn stage2_scan_text_index(
        &self,
        visit: &mut dyn FnMut(&str, i64) -> bool,
    ) -> Result<(), StoreError> {
        for (term, doc) in occurrences(&self.doc_terms()?) {
            if !visit(term, doc) {
                break;
            }
        }
        Ok(())
    }

    /// [`ctxgraph_store::GraphReader::search_text`]: the documents above `after` (those the
    /// lexical index's build does not cover, when the engine asks), through FalkorDB's
    /// full-text index and scored over the stored terms (`native_text.rs`), as a store file
    /// answers them from FTS5.
    pub(crate) fn stage2_search_text(
        &self,
        words: &[String],
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, f64)>, StoreError> {
        self.native_search_text(words, after, limit)
    }

    /// [`ctxgraph_store::GraphReader::text_index_build`].
    pub(crate) fn stage2_text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError> {
        let (through, docs, avg_len): (Option<i64>, Option<u64>, Option<f64>) =
            match self.held_text()? {
                Some(text) => text.build,
                None => self.raw_query(
                    redis::cmd("HMGET")
                        .arg(self.stage2_key("text_build"))
                        .arg("through")
                        .arg("docs")
                        .arg("avg_len"),
                )?,
            };
        Ok(match (through, docs, avg_len) {
            (Some(through), Some(docs), Some(avg_len)) => {
                Some(TextIndexBuild { through, docs, avg_len })
            }
            _ => None,
        })
    }

    /// [`ctxgraph_store::GraphReader::text_postings`].
    pub(crate) fn stage2_text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError> {
        self.raw_query(redis::cmd("HGET").arg(self.stage2_key("postings")).arg(term))
    }
}

/// Every `(term, document)` occurrence of `docs`, grouped by term in term order, documents
/// ascending within a term (the full-text index's vocabulary order, which the lexical index's
/// builder takes). Grouped through a hash map, then only the distinct terms sorted: sorting
/// every occurrence compared strings a hundred times more often.
pub(super) fn occurrences(docs: &BTreeMap<i64, String>) -> Vec<(&str, i64)> {
    let mut by_term: HashMap<&str, Vec<i64>> = HashMap::new();
    let mut total = 0;
    // Documents in ascending order, so each term's list comes out ascending.
    for (doc, terms) in docs {
        for term in terms.split(' ').filter(|t| !t.is_empty()) {
            by_term.entry(term).or_default().push(*doc);
            total += 1;
        }
    }
    let mut terms: Vec<(&str, Vec<i64>)> = by_term.into_iter().collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::with_capacity(total);
    for (term, docs) in terms {
        out.extend(docs.into_iter().map(|d| (term, d)));
    }
    out
}

/// A stage-2 write transaction on a scale-out store: reads answered from its own writes over
/// the graph, writes held back until [`EnrichCommit::commit`] applies them with the stage-2
/// checkpoint as one Redis transaction (`MULTI` … `EXEC`) watched on both checkpoints.
///
/// Watching the projection's checkpoint too means the node properties written are those of
/// the graph the chunk read: a fold committed meanwhile (which may have rewritten a node this
/// transaction read) makes the commit apply nothing, and the engine writes the chunk again.
pub struct Stage2Write {
    graph: FalkorGraph,
    /// The stage-2 checkpoint when the transaction began.
    start: u64,
    /// The enrichment epoch when it began.
    epoch: u64,
    nodes: BTreeMap<NodeKey, Node>,
    /// Nodes read ahead from the graph (`None`: absent).
    read: BTreeMap<NodeKey, Option<Node>>,
    vectors: BTreeMap<NodeKey, Vec<f32>>,
    texts: BTreeMap<NodeKey, String>,
    through: Option<u64>,
    model: Option<(String, usize)>,
    /// Whether the commit rebuilds the lexical index whatever lies outside it.
    rebuild_text: bool,
}

impl std::fmt::Debug for Stage2Write {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage2Write").field("start", &self.start).finish_non_exhaustive()
    }
}

impl Stage2Write {
    /// Begin on `graph` (a connection of its own: it holds the watch).
    pub fn begin(graph: FalkorGraph) -> Result<Stage2Write, StoreError> {
        let enriched = graph.enriched.clone();
        graph.raw_query::<()>(redis::cmd("WATCH").arg(&enriched).arg(&graph.checkpoint))?;
        let start: Option<u64> = graph.raw_query(redis::cmd("GET").arg(&enriched))?;
        // Read under the watch: a reset that moves it also sets the watched checkpoint.
        let epoch = graph.stage2_counter(EPOCH)?;
        Ok(Stage2Write {
            graph,
            start: start.unwrap_or(0),
            epoch,
            nodes: BTreeMap::new(),
            read: BTreeMap::new(),
            vectors: BTreeMap::new(),
            texts: BTreeMap::new(),
            through: None,
            model: None,
            rebuild_text: false,
        })
    }

    /// Have the commit rebuild the lexical index over every document (with this
    /// transaction's), as `index_text` or a consolidation does on a store file, even when
    /// fewer than `ctxgraph_lexical::REBUILD_AFTER` lie outside it.
    pub fn rebuild_lexical_index(&mut self) {
        self.rebuild_text = true;
    }

    /// The queries writing the held-back nodes' properties: one `UNWIND` per label.
    fn node_writes(&self) -> Result<Vec<Write>, StoreError> {
        let mut by_label: BTreeMap<&str, Vec<FalkorValue>> = BTreeMap::new();
        for (key, node) in &self.nodes {
            by_label
                .entry(&key.label)
                .or_default()
                .push(FalkorValue::Array(vec![s(&key.id), s(&props_to(&node.props)?)]));
        }
        by_label
            .into_iter()
            .map(|(label, rows)| {
                let quoted = name(label, "label")?;
                Ok(Write {
                    query: format!(
                        "UNWIND $rows AS r MATCH (n:{quoted} {{id: r[0]}}) SET n.props = r[1]"
                    ),
                    params: vec![("rows", FalkorValue::Array(rows))],
                })
            })
            .collect()
    }
}

impl EnrichWrite for Stage2Write {
    fn enriched_through(&self) -> Result<u64, StoreError> {
        Ok(self.start)
    }

    fn enrichment_epoch(&self) -> Result<u64, StoreError> {
        Ok(self.epoch)
    }

    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        match &self.model {
            Some(m) => Ok(Some(m.clone())),
            None => self.graph.stage2_embedding_model(),
        }
    }

    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        if let Some(node) = self.nodes.get(key) {
            return Ok(Some(node.clone()));
        }
        match self.read.get(key) {
            Some(node) => Ok(node.clone()),
            None => ProjectionGraph::node(&self.graph, key),
        }
    }

    fn prefetch(&mut self, keys: &mut dyn Iterator<Item = NodeKey>) -> Result<(), StoreError> {
        let mut by_label: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for key in keys {
            if !self.nodes.contains_key(&key) && !self.read.contains_key(&key) {
                by_label.entry(key.label).or_default().push(key.id);
            }
        }
        for ids in by_label.values_mut() {
            ids.sort_unstable();
            ids.dedup();
        }
        let refs: BTreeMap<&str, Vec<&str>> = by_label
            .iter()
            .map(|(label, ids)| (label.as_str(), ids.iter().map(String::as_str).collect()))
            .collect();
        let mut found: BTreeMap<NodeKey, Node> = self
            .graph
            .read_ahead(&refs, &[], &[])?
            .nodes
            .into_iter()
            .map(|n| (n.key.clone(), n))
            .collect();
        for (label, ids) in by_label {
            for id in ids {
                let key = NodeKey { label: label.clone(), id };
                let node = found.remove(&key);
                self.read.insert(key, node);
            }
        }
        Ok(())
    }

    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        self.nodes.insert(node.key.clone(), node);
        Ok(())
    }

    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError> {
        self.vectors.insert(key.clone(), vector.to_vec());
        Ok(())
    }

    fn put_texts(&mut self, texts: &[(NodeKey, String)]) -> Result<(), StoreError> {
        for (key, text) in texts {
            self.texts.insert(key.clone(), text.clone());
        }
        Ok(())
    }

    fn set_enriched_through(&mut self, position: u64) -> Result<(), StoreError> {
        self.through = Some(position);
        Ok(())
    }

    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError> {
        self.model = Some((model_id.to_owned(), dimension));
        Ok(())
    }
}

impl EnrichCommit for Stage2Write {
    fn commit(self: Box<Self>) -> Result<bool, StoreError> {
        let g = &self.graph;
        let seqs = g.seqs_of(self.vectors.keys().chain(self.texts.keys()))?;
        let mut new_docs: Vec<(i64, String)> = Vec::new();
        let texts: Vec<(i64, &str)> = self
            .texts
            .iter()
            .filter_map(|(key, text)| seqs.get(key).map(|&nid| (nid, text.as_str())))
            .collect();
        let bodies: Vec<&str> = texts.iter().map(|(_, t)| *t).collect();
        let mut terms: Vec<Vec<String>> = vec![Vec::new(); texts.len()];
        for (i, term) in with_tokenizer(|t| t.occurrences(&bodies))? {
            if let Some(list) = terms.get_mut(i) {
                list.push(term);
            }
        }
        for ((nid, _), list) in texts.iter().zip(terms) {
            new_docs.push((*nid, list.join(" ")));
        }
        let built = if self.rebuild_text || g.rebuilds_lexical_index(&new_docs)? {
            // Over every document: those stored, with this chunk's replacing theirs (a node
            // indexed again keeps its last text, as in the full-text index).
            let mut docs = g.doc_terms()?;
            docs.extend(new_docs.iter().cloned());
            match docs.keys().next_back().copied() {
                Some(max) => {
                    let mut builder = Builder::new(max).map_err(lexical)?;
                    for (term, doc) in occurrences(&docs) {
                        builder.add(term, doc).map_err(lexical)?;
                    }
                    Some((max, builder.finish().map_err(lexical)?))
                }
                None => None,
            }
        } else {
            None
        };

        let mut pipe = redis::pipe();
        pipe.atomic();
        if !seqs.is_empty() {
            let mut hset = redis::cmd("HSET");
            hset.arg(g.stage2_key("node_keys"));
            for (key, nid) in &seqs {
                let json = serde_json::to_string(&(&key.label, &key.id)).map_err(|e| {
                    StoreError::Corruption(format!("a node key does not encode: {e}"))
                })?;
                hset.arg(*nid).arg(json);
            }
            pipe.add_command(hset);
        }
        if let Some(through) = self.through {
            pipe.cmd("SET").arg(&g.enriched).arg(through);
        }
        if let Some((model, dimension)) = &self.model {
            pipe.cmd("HSET")
                .arg(g.stage2_key(EMBEDDING))
                .arg("model")
                .arg(model)
                .arg("dimension")
                .arg(*dimension);
        }
        let node_writes = self.node_writes()?;
        if !node_writes.is_empty() {
            // The graph generation tags readers' caches of nodes (`node_generation`), so a
            // change of a node's properties moves it, in the same transaction as the change.
            g.push_generation(&mut pipe);
        }
        for w in node_writes {
            pipe.cmd("GRAPH.QUERY").arg(&g.name).arg(w.with_preamble()?);
        }
        let vectors: Vec<(i64, Vec<u8>)> = self
            .vectors
            .iter()
            .filter_map(|(key, v)| seqs.get(key).map(|&nid| (nid, vector_bytes(v))))
            .collect();
        if !vectors.is_empty() {
            let (hash, set) = (g.stage2_key("vectors"), g.stage2_key("vector_ids"));
            let mut hset = redis::cmd("HSET");
            hset.arg(&hash);
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(&set);
            for (nid, bytes) in &vectors {
                hset.arg(*nid).arg(bytes.as_slice());
                zadd.arg(*nid).arg(*nid);
            }
            pipe.add_command(hset).add_command(zadd);
            // A vector written again leaves the vector index until the next consolidation,
            // as on the embedded store.
            let mut hdel = redis::cmd("HDEL");
            hdel.arg(g.stage2_key(super::stage3::VECTOR_LISTS));
            for (nid, _) in &vectors {
                hdel.arg(*nid);
            }
            pipe.add_command(hdel);
            pipe.cmd("INCR").arg(g.stage2_key("vector_generation"));
            let copies: Vec<(i64, &[f32])> = self
                .vectors
                .iter()
                .filter_map(|(key, v)| seqs.get(key).map(|&nid| (nid, v.as_slice())))
                .collect();
            for cmd in g.vector_copy_writes(&copies)? {
                pipe.add_command(cmd);
            }
        }
        if !new_docs.is_empty() {
            let mut hset = redis::cmd("HSET");
            hset.arg(g.stage2_key("doc_terms"));
            let mut zadd = redis::cmd("ZADD");
            zadd.arg(g.stage2_key("text_ids"));
            for (nid, joined) in &new_docs {
                hset.arg(*nid).arg(joined);
                zadd.arg(*nid).arg(*nid);
            }
            pipe.add_command(hset).add_command(zadd);
            let copies: Vec<(i64, &str)> =
                new_docs.iter().map(|(nid, terms)| (*nid, terms.as_str())).collect();
            for cmd in g.text_copy_writes(&copies)? {
                pipe.add_command(cmd);
            }
            pipe.cmd("INCR").arg(g.stage2_key("text_generation"));
        }
        if let Some((through, built)) = built {
            let postings = g.stage2_key("postings");
            pipe.cmd("DEL").arg(&postings);
            if !built.lists.is_empty() {
                let mut hset = redis::cmd("HSET");
                hset.arg(&postings);
                for (term, blob) in &built.lists {
                    hset.arg(term).arg(blob.as_slice());
                }
                pipe.add_command(hset);
            }
            pipe.cmd("HSET")
                .arg(g.stage2_key("text_build"))
                .arg("through")
                .arg(through)
                .arg("docs")
                .arg(built.docs)
                .arg("avg_len")
                // Rust prints the shortest text that reads back as the same float.
                .arg(built.avg_len.to_string());
            pipe.cmd("INCR").arg(g.stage2_key("text_generation"));
        }
        g.exec_watched(&pipe, "a write of an enrichment commit")
    }
}

/// A lexical index build's failure, as the store's error.
pub(super) fn lexical(e: ctxgraph_lexical::Error) -> StoreError {
    StoreError::Corruption(format!("the lexical index does not build: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_read_back_bit_for_bit_and_torn_bytes_are_refused() {
        let v = [0.25_f32, -1.5e-7, f32::MIN_POSITIVE, 3.0];
        assert_eq!(vector_of(&vector_bytes(&v)).as_deref(), Some(&v[..]));
        assert_eq!(vector_of(&[0, 1, 2]), None);
    }

    #[test]
    fn occurrences_come_by_term_then_document() {
        let docs: BTreeMap<i64, String> =
            [(3, "b a b".to_owned()), (1, "b".to_owned()), (2, String::new())].into();
        assert_eq!(occurrences(&docs), vec![("a", 3), ("b", 1), ("b", 3), ("b", 3)]);
    }
}
