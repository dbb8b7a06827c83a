//! The lexical index: BM25 posting lists built from the full-text index, searched together
//! with the full-text index for documents written since the last build.
//!
//! Ranking in the full-text index (FTS5) costs a call of its `bm25()` per matching document,
//! so a question with a common word gets slower as the store grows. The lexical index
//! (`ctxgraph-lexical`) keeps one posting list per term and merges the question's lists in
//! memory; its scores are FTS5's, so its hits and the full-text index's hits among newer
//! documents (ids above the build's) merge into one ranking. `consolidate` rebuilds it, and so
//! does every load that leaves [`REBUILD_AFTER`] documents outside it. Engines that share a
//! delta of the newer documents (`text_delta`, a server's tenant) rank those from memory with
//! the full-text index's own formula and statistics instead of asking it.
//!
//! Known limit: a document re-indexed with other text under an id the last build covers is
//! searched with its old words until the next build; ids are reused only when the newest node
//! was deleted (retention), so this is rare and the next `consolidate` clears it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ctxgraph_lexical::{Bm25, Builder, Decoded, Pruned, Scratch, top_k_decoded};
use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_store::{GraphReader, GraphStore, NodeDecode, TextIndexBuild};

use crate::error::Error;
use crate::helper::Pending;
use crate::text_delta::{QuestionTerm, SnapshotText, TextDelta};

thread_local! {
    /// The score array of [`top_k`], one per thread, reused by every search on it.
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// Documents outside the lexical index at which a load rebuilds it.
pub const REBUILD_AFTER: u64 = ctxgraph_lexical::REBUILD_AFTER;

/// Postings a search reads at most, best first (see `ctxgraph_lexical::top_k`): exact for
/// questions whose words' lists are shorter, the least valuable postings left out beyond, so
/// a search costs about a millisecond however large the store.
pub(crate) const MAX_POSTINGS: usize = 100_000;

/// Extra hits asked of each source, so hits of deleted nodes can be dropped and `limit` still
/// filled.
const SLACK: usize = 16;

/// Posting lists read so far, kept for the engine's life and tagged with the index generation
/// (a rebuild elsewhere empties it on the next search). A list a search merges is kept decoded
/// (`ctxgraph_lexical::Decoded`), so later searches skip its varints; past
/// [`MAX_CACHED_BYTES`] the cache starts over.
#[derive(Default)]
pub(crate) struct TextCache(Mutex<CachedLists>);

/// Bytes of lists one engine keeps (a decoded list takes four bytes a posting: a million-event
/// store's 300 benchmark questions merge about 50 MB).
const MAX_CACHED_BYTES: usize = 128 << 20;

#[derive(Default)]
struct CachedLists {
    generation: u64,
    lists: BTreeMap<String, Option<Cached>>,
    /// Bytes the lists take.
    bytes: usize,
}

/// A term's list as kept: as stored until a search merges it, then decoded.
#[derive(Clone)]
enum Cached {
    Stored(Arc<Vec<u8>>),
    Decoded(Arc<Decoded>),
}

impl Cached {
    fn bytes(&self) -> usize {
        match self {
            Cached::Stored(blob) => blob.len(),
            Cached::Decoded(list) => list.heap_bytes(),
        }
    }
}

/// A question's term as the cache gives it: its document frequency, and its list decoded when
/// the search merges it.
pub(crate) struct TermList {
    df: u32,
    list: Option<Arc<Decoded>>,
}

impl TextCache {
    /// Forget every list read so far.
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = CachedLists::default();
    }

    /// Each term's list (`None`: the index has no such term), decoded when `merged` says a
    /// search merges a list of that document frequency.
    fn lists(
        &self,
        read: &dyn GraphReader,
        terms: &[&str],
        merged: &dyn Fn(u32) -> bool,
    ) -> Result<Vec<Option<TermList>>, Error> {
        let generation = read.text_generation()?;
        let mut cache = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.generation != generation {
            *cache = CachedLists { generation, ..CachedLists::default() };
        }
        let mut out = Vec::with_capacity(terms.len());
        for term in terms {
            let (cached, fresh) = match cache.lists.get(*term) {
                Some(cached) => (cached.clone(), false),
                None => {
                    (read.text_postings(term)?.map(|blob| Cached::Stored(Arc::new(blob))), true)
                }
            };
            let Some(cached) = cached else {
                if fresh {
                    cache.lists.insert((*term).to_owned(), None);
                }
                out.push(None);
                continue;
            };
            let df = match &cached {
                Cached::Stored(blob) => ctxgraph_lexical::count(blob)?,
                Cached::Decoded(list) => list.count(),
            };
            let (kept, changed) = match cached {
                Cached::Stored(blob) if merged(df) => {
                    (Cached::Decoded(Arc::new(Decoded::new(&blob)?)), true)
                }
                Cached::Stored(blob) => (Cached::Stored(blob), fresh),
                Cached::Decoded(list) => (Cached::Decoded(list), fresh),
            };
            let list = match &kept {
                Cached::Decoded(list) => merged(df).then(|| list.clone()),
                Cached::Stored(_) => None,
            };
            if changed {
                let bytes = kept.bytes();
                if let Some(Some(old)) = cache.lists.insert((*term).to_owned(), Some(kept)) {
                    cache.bytes = cache.bytes.saturating_sub(old.bytes());
                }
                cache.bytes += bytes;
                if cache.bytes > MAX_CACHED_BYTES {
                    // Start over: this search's lists are held by `out` until it ends.
                    cache.lists.clear();
                    cache.bytes = 0;
                }
            }
            out.push(Some(TermList { df, list }));
        }
        Ok(out)
    }
}

/// What a build indexed.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TextIndexReport {
    /// Documents covered.
    pub docs: u64,
    /// Terms (posting lists).
    pub terms: u64,
}

/// Rebuild the lexical index from the full-text index, in the caller's transaction.
pub(crate) fn rebuild<W: GraphStore + ?Sized>(w: &mut W) -> Result<TextIndexReport, Error> {
    let built = build(w)?;
    store(w, built.as_ref())?;
    Ok(built.map_or_else(TextIndexReport::default, |b| b.report()))
}

/// A lexical index built from what one read saw, not stored yet: what [`store`] writes.
pub(crate) struct BuiltText {
    /// `(term, blob)` in term order.
    pub(crate) lists: Vec<(String, Vec<u8>)>,
    pub(crate) build: TextIndexBuild,
}

impl BuiltText {
    /// What it indexes.
    pub(crate) fn report(&self) -> TextIndexReport {
        TextIndexReport { docs: self.build.docs, terms: self.lists.len() as u64 }
    }
}

/// Build the lexical index over every document of `r`'s full-text index without writing it;
/// `None` when there is none. Only reads: a build may run over a snapshot, off the writer.
pub(crate) fn build<R: GraphReader + ?Sized>(r: &R) -> Result<Option<BuiltText>, Error> {
    let (_, Some(max)) = r.text_docs_after(-1)? else { return Ok(None) };
    let mut builder = Builder::new(max)?;
    let mut failed = None;
    r.scan_text_index(&mut |term, doc| match builder.add(term, doc) {
        Ok(()) => true,
        Err(e) => {
            failed = Some(e);
            false
        }
    })?;
    if let Some(e) = failed {
        return Err(e.into());
    }
    let built = builder.finish()?;
    let build = TextIndexBuild { through: max, docs: built.docs, avg_len: built.avg_len };
    Ok(Some(BuiltText { lists: built.lists, build }))
}

/// Replace the stored lexical index with `built` (or none).
pub(crate) fn store<W: GraphStore + ?Sized>(
    w: &mut W,
    built: Option<&BuiltText>,
) -> Result<(), Error> {
    w.clear_text_index()?;
    let Some(built) = built else { return Ok(()) };
    for (term, blob) in &built.lists {
        w.put_text_postings(term, blob)?;
    }
    w.set_text_index_build(&built.build)?;
    Ok(())
}

/// Take documents out of the lexical index (forgetting): `docs` are their node ids with the
/// text they were indexed with. Only the lists of their terms are read and rewritten; a term
/// left with no document goes, and the build's document count drops by the documents found
/// in its lists. Postings keep their impact levels (the build's mean length stays), so the lists
/// equal those of a build with the same statistics over the remaining documents.
pub(crate) fn remove(w: &mut dyn GraphStore, docs: &BTreeMap<i64, String>) -> Result<(), Error> {
    let Some(mut build) = w.text_index_build()? else { return Ok(()) };
    let covered: std::collections::BTreeSet<i64> =
        docs.keys().copied().filter(|&d| d <= build.through).collect();
    if covered.is_empty() {
        return Ok(());
    }
    let mut terms = std::collections::BTreeSet::new();
    for (doc, text) in docs {
        if covered.contains(doc) {
            terms.extend(w.text_terms(text)?);
        }
    }
    let mut lists = Vec::new();
    for term in terms {
        if let Some(list) = w.text_postings(&term)? {
            lists.push((term, list));
        }
    }
    let (pruned, found) = ctxgraph_lexical::without_docs(lists, &covered)?;
    for (term, left) in pruned {
        match left {
            Pruned::Unchanged => {}
            Pruned::Empty => w.delete_text_postings(&term)?,
            Pruned::List(blob) => w.put_text_postings(&term, &blob)?,
        }
    }
    // Only the documents found in some list were counted by the build.
    build.docs = build.docs.saturating_sub(found);
    // Recording the build bumps the index generation, so engines drop their cached lists.
    w.set_text_index_build(&build)?;
    Ok(())
}

/// Nodes whose indexed text matches words of `query`, best BM25 score first (higher is better),
/// at most `limit`: the lexical index's lists for the documents its build covers, the shared
/// delta (`text_delta`) or else the full-text index for the documents written since.
pub(crate) fn search(
    read: &dyn GraphReader,
    cache: &TextCache,
    delta: &TextDelta,
    query: &str,
    limit: usize,
) -> Result<Vec<(NodeKey, f64)>, Error> {
    start_search(read, cache, query, limit, false)?.finish(read, delta)
}

/// The merge of a question's decoded lists, which reads nothing from the store: the best hits
/// by document id with their scores.
type Merge = Pending<Result<Vec<(i64, f64)>, ctxgraph_lexical::Error>>;

/// A search begun by [`start_search`]: the merge of the lexical index's lists on a helper
/// thread or kept for [`Search::finish`], which reads the rest.
pub(crate) struct Search {
    query: String,
    limit: usize,
    build: Option<TextIndexBuild>,
    /// The lexical index's merge (none without a build, or for no hit asked).
    merge: Option<Merge>,
    /// The question's terms with their build document frequencies.
    built_terms: Vec<(String, u64)>,
    /// Documents above the build (known only with a build).
    newer: Option<u64>,
}

/// Begin the search of [`search`]: read the question's terms, their lists and the statistics,
/// and give the merge of the lists to the helper threads when `helpers`.
pub(crate) fn start_search(
    read: &dyn GraphReader,
    cache: &TextCache,
    query: &str,
    limit: usize,
    helpers: bool,
) -> Result<Search, Error> {
    let mut search = Search {
        query: query.to_owned(),
        limit,
        build: None,
        merge: None,
        built_terms: Vec::new(),
        newer: None,
    };
    if limit == 0 {
        return Ok(search);
    }
    search.build = read.text_index_build()?;
    // The question's terms with their document frequencies in the build's lists, and the
    // count of documents above the build (both known only when there is a build).
    if let Some(build) = &search.build {
        let terms = read.text_terms(query)?;
        let names: Vec<&str> = terms.iter().map(String::as_str).collect();
        // Statistics as of the build plus the documents since: a term's document frequency is
        // its list's length.
        let (newer, _) = read.text_docs_after(build.through)?;
        let docs = build.docs + newer;
        // A term in more than half the documents gets FTS5's idf floor: merging its long
        // list would change no ranking.
        let merged = |df: u32| u64::from(df).saturating_mul(2) < docs;
        let lists = cache.lists(read, &names, &merged)?;
        let bm25 = Bm25::FTS5;
        let query_terms: Vec<(f64, Arc<Decoded>)> = lists
            .iter()
            .flatten()
            .filter_map(|term| Some((bm25.idf(docs, u64::from(term.df)), term.list.clone()?)))
            .collect();
        search.merge = Some(crate::helper::start(helpers, move || {
            let terms: Vec<(f64, &Decoded)> =
                query_terms.iter().map(|(idf, list)| (*idf, list.as_ref())).collect();
            SCRATCH.with_borrow_mut(|scratch| {
                top_k_decoded(&terms, bm25, limit + SLACK, MAX_POSTINGS, scratch)
            })
        }));
        search.built_terms = terms
            .into_iter()
            .zip(&lists)
            .map(|(term, list)| (term, list.as_ref().map_or(0, |l| u64::from(l.df))))
            .collect();
        search.newer = Some(newer);
    }
    Ok(search)
}

impl Search {
    /// The search's answer: the merge joined, then the documents above the build and the
    /// hits' keys read.
    pub(crate) fn finish(
        self,
        read: &dyn GraphReader,
        delta: &TextDelta,
    ) -> Result<Vec<(NodeKey, f64)>, Error> {
        let limit = self.limit;
        let hits = self.finish_hits(read, delta)?;
        keys_of(read, hits, limit)
    }

    /// [`Search::finish`] with the nodes themselves, read by their ids (recall reads every
    /// hit's node: by id it is one row read where the key and then the node by its key are
    /// three).
    pub(crate) fn finish_nodes(
        self,
        read: &dyn GraphReader,
        delta: &TextDelta,
        decode: &dyn NodeDecode,
    ) -> Result<Vec<(Arc<Node>, f64)>, Error> {
        let limit = self.limit;
        let hits = self.finish_hits(read, delta)?;
        nodes_of(read, hits, limit, decode)
    }

    /// Every hit by document id, best first (ties by id): the merge joined, then the
    /// documents above the build.
    fn finish_hits(
        self,
        read: &dyn GraphReader,
        delta: &TextDelta,
    ) -> Result<Vec<(i64, f64)>, Error> {
        let Search { query, limit, build, merge, built_terms, newer } = self;
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut hits: Vec<(i64, f64)> = match merge {
            Some(merge) => merge.join()?,
            None => Vec::new(),
        };
        if newer == Some(0) {
            return Ok(hits);
        }
        let after = build.as_ref().map_or(-1, |b| b.through);
        match newer_from_delta(read, delta, build.as_ref(), built_terms, newer, &query, limit)? {
            Some(newer) => hits.extend(newer),
            None => {
                let words: Vec<String> = query
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect();
                hits.extend(read.search_text(&words, after, limit + SLACK)?);
            }
        }
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(hits)
    }
}

/// The documents above the build ranked from the shared delta, when it holds exactly the
/// snapshot's (`None`: ask the full-text index). `built_terms` are the question's terms with
/// their build document frequencies (empty without a build: the terms are read here).
fn newer_from_delta(
    read: &dyn GraphReader,
    delta: &TextDelta,
    build: Option<&TextIndexBuild>,
    built_terms: Vec<(String, u64)>,
    newer: Option<u64>,
    query: &str,
    limit: usize,
) -> Result<Option<Vec<(i64, f64)>>, Error> {
    if !delta.serving() {
        return Ok(None);
    }
    let Some(version) = read.text_version()? else { return Ok(None) };
    let at = SnapshotText { build, generation: read.text_generation()?, version };
    if !delta.holds(&at) {
        return Ok(None);
    }
    let built_terms = match build {
        Some(_) => built_terms,
        None => read.text_terms(query)?.into_iter().map(|t| (t, 0)).collect(),
    };
    let terms: Vec<QuestionTerm<'_>> = built_terms
        .iter()
        .map(|(term, built_df)| QuestionTerm { term, built_df: *built_df })
        .collect();
    Ok(delta.top_k(&at, newer, &terms, limit + SLACK))
}

/// The node keys of the best `limit` hits whose nodes still exist (among the best
/// `limit + SLACK`), looked up in rank order until `limit` are found.
fn keys_of(
    read: &dyn GraphReader,
    mut hits: Vec<(i64, f64)>,
    limit: usize,
) -> Result<Vec<(NodeKey, f64)>, Error> {
    hits.truncate(limit + SLACK);
    let mut out = Vec::with_capacity(limit.min(hits.len()));
    for (nid, score) in hits {
        if out.len() >= limit {
            break;
        }
        if let Some((_, key)) = read.node_keys(&[nid])?.pop() {
            out.push((key, score));
        }
    }
    Ok(out)
}

/// [`keys_of`] with the nodes: the best `limit` hits whose nodes exist (among the best
/// `limit + SLACK`), read by id in rank order, as many at a time as are still missing.
fn nodes_of(
    read: &dyn GraphReader,
    mut hits: Vec<(i64, f64)>,
    limit: usize,
    decode: &dyn NodeDecode,
) -> Result<Vec<(Arc<Node>, f64)>, Error> {
    hits.truncate(limit + SLACK);
    let mut out = Vec::with_capacity(limit.min(hits.len()));
    let mut rest = hits.as_slice();
    while out.len() < limit && !rest.is_empty() {
        let (next, after) = rest.split_at((limit - out.len()).min(rest.len()));
        rest = after;
        let nids: Vec<i64> = next.iter().map(|(nid, _)| *nid).collect();
        for ((_, score), node) in next.iter().zip(read.nodes_by_nid_shared(&nids, decode)?) {
            if let Some(node) = node {
                out.push((node, *score));
            }
        }
    }
    Ok(out)
}

impl crate::Engine {
    /// Rebuild the lexical index (searches then merge posting lists instead of ranking in the
    /// full-text index); `consolidate` does this and more. Returns what it indexed.
    pub fn index_text(&mut self) -> Result<TextIndexReport, Error> {
        let mut w = self.backend.embedded_mut("lexical index build")?.begin_write()?;
        let report = rebuild(&mut w)?;
        w.commit()?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use ctxgraph_ontology::graph::{Node, NodeKey, Properties};
    use ctxgraph_store::{Embedded, GraphReader, GraphStore, OpenMode};

    /// Every term's documents, from the lexical index's lists.
    fn lists(w: &dyn GraphStore, terms: &BTreeSet<String>) -> BTreeMap<String, Vec<i64>> {
        let mut out = BTreeMap::new();
        for term in terms {
            if let Some(list) = w.text_postings(term).unwrap() {
                let docs = ctxgraph_lexical::decode(&list).unwrap().into_iter().map(|(d, _)| d);
                out.insert(term.clone(), docs.collect());
            }
        }
        out
    }

    #[test]
    fn removing_documents_equals_building_without_them() {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store =
            Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let mut w = store.begin_write().unwrap();
        // A node without a full-text entry, below the build's highest id.
        let bare = NodeKey::new("Entity", "service:billing");
        w.put_node(&Node { key: bare.clone(), props: Properties::new() }).unwrap();
        let texts = [
            "refund rejected by billing",
            "zebraquokka launch code",
            "billing retry succeeded",
            "deploy checkout latency zebraquokka",
            "checkout failed timeout",
        ];
        let mut docs = BTreeMap::new();
        let mut terms = BTreeSet::new();
        for (i, text) in texts.iter().enumerate() {
            let key = NodeKey::new("Event", format!("e{i}"));
            w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
            w.put_text(&key, text).unwrap();
            docs.insert(key.clone(), (w.node_nid(&key).unwrap().unwrap(), text.to_string()));
            terms.extend(w.text_terms(text).unwrap());
        }
        super::rebuild(&mut w).unwrap();
        let mut gone: BTreeMap<i64, String> =
            [1, 3].iter().map(|i| docs[&NodeKey::new("Event", format!("e{i}"))].clone()).collect();
        // Its text names a term of others: their lists stay, and the count is not lowered.
        gone.insert(w.node_nid(&bare).unwrap().unwrap(), "billing service".into());
        super::remove(&mut w, &gone).unwrap();
        let removed = lists(&w, &terms);
        let quokka = w.text_terms("zebraquokka").unwrap().remove(0);
        assert!(!removed.contains_key(&quokka), "a term left with no document goes");
        assert_eq!(w.text_index_build().unwrap().unwrap().docs, 3);
        for i in [1, 3] {
            w.delete_node(&NodeKey::new("Event", format!("e{i}"))).unwrap();
        }
        super::rebuild(&mut w).unwrap();
        assert_eq!(removed, lists(&w, &terms));
        let billing = w.text_terms("billing").unwrap().remove(0);
        assert_eq!(removed[&billing].len(), 2);
    }

    /// Words with distinct stems, so a question's words and its index terms correspond.
    const WORDS: [&str; 10] = [
        "billing", "refund", "checkout", "deploy", "latency", "timeout", "zebra", "quokka",
        "gamma", "omega",
    ];

    /// Write `batches` of documents (each a list of word indexes) as `Event` nodes, one
    /// transaction per batch, building the lexical index after batch `build_after` if given.
    /// `changes[b]` rewrites (words) or deletes (no words) documents written before batch `b`
    /// and after the build (the lexical index keeps a built document's words until the next
    /// build), by their index modulo the documents written so far.
    fn write_batches(
        store: &mut Embedded,
        batches: &[Vec<Vec<usize>>],
        changes: &[Vec<(usize, Vec<usize>)>],
        build_after: Option<usize>,
    ) -> usize {
        let text = |doc: &[usize]| -> String {
            doc.iter().map(|&i| WORDS[i % WORDS.len()]).collect::<Vec<_>>().join(" ")
        };
        let mut n = 0;
        let mut built = 0;
        let mut deleted = BTreeSet::new();
        for (b, batch) in batches.iter().enumerate() {
            let mut w = store.begin_write().unwrap();
            let mut texts = Vec::new();
            let mut doomed = Vec::new();
            for (target, words) in changes.get(b).into_iter().flatten() {
                let Some(i) = (n > 0).then(|| target % n).filter(|&i| i >= built) else {
                    continue;
                };
                if deleted.contains(&i) {
                    continue;
                }
                let key = NodeKey::new("Event", format!("e{i}"));
                if words.is_empty() {
                    deleted.insert(i);
                    doomed.push(key);
                } else {
                    texts.push((key, text(words)));
                }
            }
            for doc in batch {
                let key = NodeKey::new("Event", format!("e{n}"));
                n += 1;
                w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
                texts.push((key, text(doc)));
            }
            w.put_texts(&texts).unwrap();
            for key in &doomed {
                w.delete_node(key).unwrap();
            }
            if build_after == Some(b) {
                super::rebuild(&mut w).unwrap();
                built = n;
            }
            w.commit().unwrap();
        }
        n
    }

    fn by_key(hits: Vec<(NodeKey, f64)>) -> BTreeMap<NodeKey, f64> {
        hits.into_iter().collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// The documents written since the build, ranked from the shared delta, are the ones
        /// the full-text index ranks, with its scores, whatever the batches and the build.
        #[test]
        fn the_delta_ranks_as_the_full_text_index(
            batches in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(0usize..12, 1..7), 0..6),
                1..6,
            ),
            changes in proptest::collection::vec(
                proptest::collection::vec(
                    (0usize..40, proptest::collection::vec(0usize..12, 0..4)), 0..4,
                ),
                0..6,
            ),
            build_after in proptest::option::of(0usize..6),
            questions in proptest::collection::vec(
                proptest::collection::vec(0usize..12, 1..4), 1..5,
            ),
        ) {
            let dir = tempfile::TempDir::new().unwrap();
            let mut store =
                Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
            let delta = std::sync::Arc::new(super::TextDelta::default());
            store.set_text_sink(Some(delta.clone()));
            let docs = write_batches(&mut store, &batches, &changes, build_after);
            let read = store.begin_read().unwrap();
            let version = read.text_version().unwrap().unwrap();
            let build = read.text_index_build().unwrap();
            let at = super::SnapshotText {
                build: build.as_ref(),
                generation: read.text_generation().unwrap(),
                version,
            };
            // A store never written has nothing to follow; one written from the start does.
            proptest::prop_assert!(
                docs == 0 || delta.holds(&at),
                "a fresh store's delta follows every write"
            );
            let cache = super::TextCache::default();
            let unheld = super::TextDelta::default();
            for question in &questions {
                // Word 10 and 11 are in no document (and 11 is a stop word for no one).
                let words: Vec<&str> = question
                    .iter()
                    .map(|&i| WORDS.get(i).copied().unwrap_or(if i == 10 { "absent" } else { "the" }))
                    .collect();
                let query = words.join(" ");
                let from_delta = by_key(super::search(&read, &cache, &delta, &query, docs + 1).unwrap());
                let from_fts5 = by_key(super::search(&read, &cache, &unheld, &query, docs + 1).unwrap());
                proptest::prop_assert_eq!(
                    from_delta.keys().collect::<Vec<_>>(),
                    from_fts5.keys().collect::<Vec<_>>(),
                    "{:?}", query
                );
                for (key, score) in &from_delta {
                    let fts5 = from_fts5[key];
                    proptest::prop_assert!(
                        (score - fts5).abs() <= 1e-9 * fts5.abs().max(1.0),
                        "{:?} {:?}: {} against {}", query, key, score, fts5
                    );
                }
            }
        }
    }

    /// A delta started on a store that already holds newer documents is not used (it would
    /// miss them), and a write through a connection without the sink lets it go.
    #[test]
    fn the_delta_refuses_what_it_was_not_told() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("t.ctxg");
        let mut store = Embedded::open(&path, OpenMode::CreateIfMissing).unwrap();
        write_batches(&mut store, &[vec![vec![0, 1]]], &[], None);
        let delta = std::sync::Arc::new(super::TextDelta::default());
        store.set_text_sink(Some(delta.clone()));
        let mut w = store.begin_write().unwrap();
        let key = NodeKey::new("Event", "second");
        w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
        w.put_texts(&[(key, "billing".to_owned())]).unwrap();
        w.commit().unwrap();
        let cache = super::TextCache::default();
        let unheld = super::TextDelta::default();
        {
            let read = store.begin_read().unwrap();
            let at = super::SnapshotText {
                build: None,
                generation: read.text_generation().unwrap(),
                version: read.text_version().unwrap().unwrap(),
            };
            assert!(!delta.holds(&at));
        }
        // A build leaves nothing above it: the next write starts the delta.
        {
            let mut w = store.begin_write().unwrap();
            super::rebuild(&mut w).unwrap();
            w.commit().unwrap();
        }
        let mut w = store.begin_write().unwrap();
        let key = NodeKey::new("Event", "late");
        w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
        w.put_texts(&[(key.clone(), "billing quokka".to_owned())]).unwrap();
        w.commit().unwrap();
        let read = store.begin_read().unwrap();
        let hits = super::search(&read, &cache, &delta, "quokka billing", 5).unwrap();
        assert_eq!(hits, super::search(&read, &cache, &unheld, "quokka billing", 5).unwrap());
        assert_eq!(hits.first().map(|h| &h.0), Some(&key));
        drop(read);
        // Another connection writes: the version moves past what the delta was told.
        let mut other = Embedded::open(&path, OpenMode::MustExist).unwrap();
        write_batches(&mut other, &[vec![vec![1, 2]]], &[], None);
        let read = store.begin_read().unwrap();
        let build = read.text_index_build().unwrap();
        let at = super::SnapshotText {
            build: build.as_ref(),
            generation: read.text_generation().unwrap(),
            version: read.text_version().unwrap().unwrap(),
        };
        assert!(!delta.holds(&at));
    }
}
