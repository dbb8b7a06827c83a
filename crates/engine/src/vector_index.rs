//! The vector index: an IVF index (k-means lists of int8-coded members) over every stored
//! embedding, rebuilt from scratch by `consolidate`, and the search that combines it with the
//! vectors written since the last build.
//!
//! Why rebuilt rather than updated: a full build is a deterministic function of the stored vectors
//! (the same store gives the same lists, whenever it runs), it takes seconds at a million vectors,
//! and vectors enriched between builds are few enough to scan exactly. A search therefore sees
//! every vector: indexed ones through the probed lists, newer ones exactly; a deleted vector's
//! stale list entry is dropped when the candidate is re-ranked against the `vectors` table.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ctxgraph_ann::{Centroids, CheckedList, ListView, ListsBuilder, SearchParams, TrainConfig};
use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_store::{GraphReader, GraphStore, NodeDecode, StoredVector};

use crate::error::Error;
use crate::helper::Pending;
use crate::vector_delta::VectorDelta;

/// Vectors read per page when loading every vector for a build.
const LOAD_PAGE: usize = 10_000;

/// Every stored vector, in nid order, row-major.
pub(crate) struct AllVectors {
    pub(crate) nids: Vec<i64>,
    pub(crate) keys: Vec<NodeKey>,
    pub(crate) data: Vec<f32>,
    pub(crate) dim: usize,
}

impl AllVectors {
    /// Read every stored vector.
    pub(crate) fn load<W: GraphReader + ?Sized>(w: &W) -> Result<AllVectors, Error> {
        let dim = w.embedding_model()?.map_or(0, |(_, d)| d);
        let mut all = AllVectors { nids: Vec::new(), keys: Vec::new(), data: Vec::new(), dim };
        let mut after = i64::MIN;
        loop {
            let page = w.vectors_page(after, LOAD_PAGE)?;
            let Some(last) = page.last().map(|v| v.nid) else { break };
            for v in page {
                if v.vector.len() != dim {
                    return Err(Error::Index(ctxgraph_ann::Error::Dimension {
                        expected: dim,
                        got: v.vector.len(),
                    }));
                }
                all.nids.push(v.nid);
                all.keys.push(v.key);
                all.data.extend_from_slice(&v.vector);
            }
            after = last;
        }
        Ok(all)
    }

    /// How many vectors.
    pub(crate) fn len(&self) -> usize {
        self.nids.len()
    }

    /// The vector at `i`.
    pub(crate) fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }
}

/// Vectors read per page when a build streams the stored vectors: the f32 rows a build holds
/// at once, besides the training sample.
const BUILD_PAGE: usize = 4_096;

/// A built index: the centroids and the list of every stored vector, in nid order.
pub(crate) struct Built {
    pub(crate) centroids: Centroids,
    pub(crate) assignment: Vec<u32>,
}

/// Replace the stored index with one built over every stored vector; `None` when there is
/// nothing to index.
///
/// The vectors are streamed in nid order, twice, a page at a time: once to keep the training
/// sample (the evenly spaced rows [`ctxgraph_ann::sample_rows`] names, so the centroids are
/// those [`ctxgraph_ann::train`] gives over all of them), once to assign each page and add its
/// int8 codes to the lists. What the build holds is the sample, one page, and the lists' codes
/// (a quarter of the vectors' f32 size), not every vector: the server rebuilds while it
/// serves, and a copy of every vector was its largest use of memory.
pub(crate) fn rebuild<W: GraphStore + ?Sized>(
    w: &mut W,
    threads: usize,
) -> Result<Option<Built>, Error> {
    rebuild_paged(w, threads, BUILD_PAGE)
}

/// [`rebuild`], reading `page` vectors at a time.
fn rebuild_paged<W: GraphStore + ?Sized>(
    w: &mut W,
    threads: usize,
    page: usize,
) -> Result<Option<Built>, Error> {
    let built = build_paged(w, threads, page)?;
    store(w, built.as_ref())?;
    Ok(built.map(|b| Built { centroids: b.centroids, assignment: b.assignment }))
}

/// A vector index built from what one read saw, not stored yet: what [`store`] writes.
pub(crate) struct BuiltVectors {
    pub(crate) centroids: Centroids,
    /// Every list's blob, in list order.
    pub(crate) blobs: Vec<Vec<u8>>,
    /// The vectors indexed, in nid order, and the list of each.
    pub(crate) nids: Vec<i64>,
    pub(crate) assignment: Vec<u32>,
}

/// Build an index over every vector `r` holds (see [`rebuild`]) without writing it; `None`
/// when there is nothing to index. Only reads: a build may run over a snapshot, off the writer.
pub(crate) fn build<R: GraphReader + ?Sized>(
    r: &R,
    threads: usize,
) -> Result<Option<BuiltVectors>, Error> {
    build_paged(r, threads, BUILD_PAGE)
}

/// [`build`], reading `page` vectors at a time.
fn build_paged<R: GraphReader + ?Sized>(
    r: &R,
    threads: usize,
    page: usize,
) -> Result<Option<BuiltVectors>, Error> {
    let dim = r.embedding_model()?.map_or(0, |(_, d)| d);
    let (count, _) = r.vector_counts()?;
    let n = usize::try_from(count).unwrap_or(usize::MAX);
    if n == 0 {
        return Ok(None);
    }
    let mut train = TrainConfig::for_count(n);
    train.threads = threads;

    let mut wanted = ctxgraph_ann::sample_rows(n, &train).peekable();
    // Sized once: growing by doubling would copy it, and hold both copies, as it grew.
    let mut sample = Vec::with_capacity(ctxgraph_ann::sample_rows(n, &train).count() * dim);
    let mut row = 0usize;
    for_each_page(r, dim, page, |vectors| {
        for v in vectors {
            if wanted.next_if_eq(&row).is_some() {
                sample.extend_from_slice(&v.vector);
            }
            row += 1;
        }
        Ok(())
    })?;
    if sample.is_empty() {
        return Ok(None);
    }
    let centroids = ctxgraph_ann::train_sampled(sample, dim, &train)?;

    let mut lists = ListsBuilder::new(&centroids);
    let mut assigned_nids = Vec::with_capacity(n);
    let mut assignment = Vec::with_capacity(n);
    for_each_page(r, dim, page, |vectors| {
        let nids: Vec<i64> = vectors.iter().map(|v| v.nid).collect();
        let mut data = Vec::with_capacity(vectors.len() * dim);
        for v in vectors {
            data.extend_from_slice(&v.vector);
        }
        assignment.extend(lists.push(&nids, &data, threads)?);
        assigned_nids.extend(nids);
        Ok(())
    })?;
    let blobs = lists.finish();
    Ok(Some(BuiltVectors { centroids, blobs, nids: assigned_nids, assignment }))
}

/// Replace the stored index with `built` (or none): the lists, each indexed vector's list, and
/// the centroids, last. A vector not in `built` stays outside the index (searched exactly).
pub(crate) fn store<W: GraphStore + ?Sized>(
    w: &mut W,
    built: Option<&BuiltVectors>,
) -> Result<(), Error> {
    w.clear_ann_index()?;
    file(w, built)
}

/// [`store`] over an index that files only vectors `built` files again (see
/// [`GraphStore::clear_ann_index_refiled`]): built from a snapshot that no removal and no other
/// build followed, since every vector filed then was in the snapshot.
pub(crate) fn store_refiled<W: GraphStore + ?Sized>(
    w: &mut W,
    built: Option<&BuiltVectors>,
) -> Result<(), Error> {
    match built {
        Some(_) => w.clear_ann_index_refiled()?,
        None => w.clear_ann_index()?,
    }
    file(w, built)
}

/// Write `built` into an index just cleared.
fn file<W: GraphStore + ?Sized>(w: &mut W, built: Option<&BuiltVectors>) -> Result<(), Error> {
    let Some(built) = built else { return Ok(()) };
    for (nid, list) in built.nids.iter().zip(&built.assignment) {
        w.set_vector_list(*nid, *list)?;
    }
    for (list, blob) in (0u32..).zip(&built.blobs) {
        w.put_ann_list(list, blob)?;
    }
    w.put_ann_centroids(&built.centroids.to_bytes())?;
    Ok(())
}

/// Run `visit` over every stored vector, `page` at a time in nid order.
fn for_each_page<W: GraphReader + ?Sized>(
    w: &W,
    dim: usize,
    page: usize,
    mut visit: impl FnMut(Vec<StoredVector>) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut after = i64::MIN;
    loop {
        let vectors = checked_page(w, after, dim, page)?;
        let Some(last) = vectors.last().map(|v| v.nid) else { return Ok(()) };
        visit(vectors)?;
        after = last;
    }
}

/// The `page` stored vectors after nid `after`, each checked to have `dim` dimensions.
fn checked_page<W: GraphReader + ?Sized>(
    w: &W,
    after: i64,
    dim: usize,
    page: usize,
) -> Result<Vec<StoredVector>, Error> {
    let page = w.vectors_page(after, page.max(1))?;
    if let Some(v) = page.iter().find(|v| v.vector.len() != dim) {
        return Err(Error::Index(ctxgraph_ann::Error::Dimension {
            expected: dim,
            got: v.vector.len(),
        }));
    }
    Ok(page)
}

impl crate::Engine {
    /// Rebuild only the vector index over every stored vector (after a bulk load, so searches
    /// stop scanning the new vectors exactly); `consolidate` does this and more. Returns the
    /// number of vectors indexed.
    pub fn index_vectors(&mut self) -> Result<u64, Error> {
        let threads = self.options().consolidate.threads.max(1);
        let mut w = self.backend.embedded_mut("vector index build")?.begin_write()?;
        let built = rebuild(&mut w, threads)?;
        w.commit()?;
        Ok(built.map_or(0, |b| b.assignment.len() as u64))
    }
}

/// The parts of the vector index read so far, kept for the engine's life so that repeated
/// searches (a server, a benchmark) read and check each list once. Tagged with the index
/// generation: a rebuild elsewhere empties it on the next search. Lists are loaded on demand, so a one-off
/// search reads only the lists it probes. The vectors outside the index come from the delta
/// the writer's store keeps (`vector_delta`) when it covers the search's snapshot.
#[derive(Default)]
pub(crate) struct IndexCache {
    /// The centroids and lists read so far, of one index generation (shared with the searches
    /// that probe them on a helper thread).
    index: SharedIndex,
    /// The copy of the vectors outside the index, of one vector generation.
    unindexed: Mutex<Option<Arc<Unindexed>>>,
    /// The vectors outside the index as the writer's commits left them.
    delta: Arc<VectorDelta>,
}

/// Most vectors outside the index held in memory (a megabyte per thousand at 256 dimensions);
/// past it, every search reads them from the store as it scores them.
pub const MAX_CACHED_UNINDEXED: usize = 16_384;

/// The vectors outside the vector index at one vector generation, in nid order: every search
/// scores all of them, and between two writes the searches of every engine sharing the cache
/// read them once instead of once each (a server's readers read them again after every write,
/// since a commit empties their page caches).
struct Unindexed {
    generation: u64,
    dim: usize,
    nids: Vec<i64>,
    data: Vec<f32>,
}

#[derive(Default)]
struct CachedIndex {
    generation: u64,
    centroids: Option<Arc<Centroids>>,
    lists: BTreeMap<u32, Arc<CheckedList>>,
}

/// [`CachedIndex`] behind a lock that a search's in-memory part may hold on to from another
/// thread.
#[derive(Default, Clone)]
struct SharedIndex(Arc<Mutex<CachedIndex>>);

impl SharedIndex {
    /// The cached index parts, emptied first when they are of another index generation than
    /// `generation`.
    fn at(&self, generation: u64) -> std::sync::MutexGuard<'_, CachedIndex> {
        let mut cache = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.generation != generation {
            *cache = CachedIndex { generation, ..CachedIndex::default() };
        }
        cache
    }
}

impl IndexCache {
    /// Forget every part read so far.
    pub(crate) fn clear(&self) {
        *self.index.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) =
            CachedIndex::default();
        *self.unindexed.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }

    /// The delta of the vectors outside the index, for the writer's store to follow.
    pub(crate) fn delta(&self) -> Arc<VectorDelta> {
        Arc::clone(&self.delta)
    }

    /// Score every vector outside the index with `score(nid, vector)`: from the delta when it
    /// covers this snapshot, else from the cached copy when it is of this snapshot's vector
    /// generation, else read from the store, and kept for the next search when few enough and
    /// at least as new as the cached copy.
    fn each_unindexed(
        &self,
        read: &dyn GraphReader,
        dim: usize,
        score: &mut dyn FnMut(i64, &[f32]),
    ) -> Result<(), Error> {
        let generation = read.vector_generation()?;
        if self.delta.score(generation, dim, score) {
            return Ok(());
        }
        // Held while a stale copy is replaced, so that the searches waiting read it once.
        let mut cached = self.unindexed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(u) = cached.as_ref().filter(|u| u.generation == generation && u.dim == dim) {
            let u = Arc::clone(u);
            drop(cached);
            for (nid, vector) in u.nids.iter().zip(u.data.chunks_exact(dim.max(1))) {
                score(*nid, vector);
            }
            return Ok(());
        }
        let mut u = Unindexed { generation, dim, nids: Vec::new(), data: Vec::new() };
        let mut keep = true;
        read.scan_unindexed_vectors(&mut |nid, vector| {
            score(nid, vector);
            if !keep {
                return;
            }
            if u.nids.len() >= MAX_CACHED_UNINDEXED {
                keep = false;
                u.nids = Vec::new();
                u.data = Vec::new();
                return;
            }
            u.nids.push(nid);
            u.data.extend_from_slice(vector);
        })?;
        // Vectors of another dimension are refused at write time; a copy that does not divide
        // into rows is not kept.
        if keep
            && u.data.len() == u.nids.len() * dim
            && cached.as_ref().is_none_or(|c| c.generation <= generation)
        {
            *cached = Some(Arc::new(u));
        }
        Ok(())
    }

    /// What a search reads before its probe: the index generation and the centroids, from the
    /// cache or the store (`None` before a first build).
    fn centroids(
        &self,
        read: &dyn GraphReader,
        dim: usize,
    ) -> Result<(u64, Option<Arc<Centroids>>), Error> {
        let generation = read.ann_generation()?;
        let mut cache = self.index.at(generation);
        let centroids = match &cache.centroids {
            Some(c) => Arc::clone(c),
            None => {
                let Some(blob) = read.ann_centroids()? else { return Ok((generation, None)) };
                let c = Arc::new(Centroids::from_bytes(dim, &blob)?);
                cache.centroids = Some(Arc::clone(&c));
                c
            }
        };
        Ok((generation, Some(centroids)))
    }

    /// The lists of `probed` not in the cache read from the store and kept, in probe order (a
    /// list the store lacks is left out).
    fn read_lists(
        &self,
        read: &dyn GraphReader,
        dim: usize,
        generation: u64,
        probed: &[u32],
    ) -> Result<Vec<Arc<CheckedList>>, Error> {
        let mut cache = self.index.at(generation);
        let mut out = Vec::new();
        for &list in probed {
            if let Some(blob) = cache.lists.get(&list) {
                out.push(Arc::clone(blob));
            } else if let Some(blob) = read.ann_list(list)? {
                let blob = Arc::new(CheckedList::new(dim, blob)?);
                cache.lists.insert(list, Arc::clone(&blob));
                out.push(blob);
            }
        }
        Ok(out)
    }
}

/// A vector search's part in memory, which reads nothing from the store: the probe of the
/// centroids and the int8 scan of the probed lists when the cache holds them all.
struct Probe {
    index: SharedIndex,
    generation: u64,
    centroids: Arc<Centroids>,
    query: Vec<f32>,
    nprobe: usize,
    candidates: usize,
}

/// What the in-memory part found.
enum Probed {
    /// The scan's candidates, by nid (none scanned: no list probed).
    Scanned(Option<Vec<i64>>),
    /// The probed lists, some not in the cache: read, then scanned, by the caller.
    Unread(Vec<u32>),
}

impl Probe {
    fn run(self) -> Result<Probed, ctxgraph_ann::Error> {
        // Scoring the centroids is most of a warm probe: done without the lock, so the engines
        // sharing this cache (a server's readers, the benchmark's threads) do not queue for it.
        let probed = self.centroids.probe(&self.query, self.nprobe);
        let cache = self.index.at(self.generation);
        let lists: Option<Vec<Arc<CheckedList>>> =
            probed.iter().map(|list| cache.lists.get(list).cloned()).collect();
        drop(cache);
        let Some(lists) = lists else { return Ok(Probed::Unread(probed)) };
        scan(&self.query, &lists, self.candidates).map(Probed::Scanned)
    }
}

/// The int8 scan of `lists` for the best `candidates` (none when no list was probed).
fn scan(
    query: &[f32],
    lists: &[Arc<CheckedList>],
    candidates: usize,
) -> Result<Option<Vec<i64>>, ctxgraph_ann::Error> {
    if lists.is_empty() {
        return Ok(None);
    }
    let views: Vec<ListView<'_>> = lists.iter().map(|b| b.view()).collect();
    let approx = ctxgraph_ann::scan(query, &views, candidates)?;
    Ok(Some(approx.iter().map(|(id, _)| *id).collect()))
}

/// A vector search begun by [`start_nearest`]: its in-memory part on a helper thread or kept for
/// [`Nearest::finish`], which reads the rest (`None`: the store has no embedding model, so
/// nothing is searched).
pub(crate) struct Nearest(Option<Begun>);

/// A vector search of a store with an embedding model, begun.
struct Begun {
    dim: usize,
    generation: u64,
    query: Vec<f32>,
    k: usize,
    /// Candidates the scan keeps for the exact re-rank (at least `k`).
    candidates: usize,
    /// `None`: no index built.
    probe: Option<Pending<Result<Probed, ctxgraph_ann::Error>>>,
}

/// Begin the search for the `k` stored vectors nearest to `query` (see [`nearest`]): read what
/// the probe needs, and give the probe and the scan to the helper threads when `helpers`.
pub(crate) fn start_nearest(
    read: &dyn GraphReader,
    cache: &IndexCache,
    query: &[f32],
    k: usize,
    options: SearchParams,
    helpers: bool,
) -> Result<Nearest, Error> {
    let Some((_, dim)) = read.embedding_model()? else { return Ok(Nearest(None)) };
    if query.len() != dim {
        return Err(Error::Index(ctxgraph_ann::Error::Dimension {
            expected: dim,
            got: query.len(),
        }));
    }
    let candidates = options.candidates.max(k);
    let (generation, centroids) = cache.centroids(read, dim)?;
    let probe = centroids.map(|centroids| {
        let probe = Probe {
            index: cache.index.clone(),
            generation,
            centroids,
            query: query.to_vec(),
            nprobe: options.nprobe,
            candidates,
        };
        crate::helper::start(helpers, move || probe.run())
    });
    Ok(Nearest(Some(Begun { dim, generation, query: query.to_vec(), k, candidates, probe })))
}

impl Nearest {
    /// The search's answer: the probe joined, then the exact re-rank and the vectors outside
    /// the index read from the store.
    pub(crate) fn finish(
        self,
        read: &dyn GraphReader,
        cache: &IndexCache,
    ) -> Result<Vec<(NodeKey, f32)>, Error> {
        let ranked = self.finish_ranked(read, cache)?;
        // A vector is deleted with its node, in one transaction, so every nid here has a key.
        let nids: Vec<i64> = ranked.iter().map(|(nid, _)| *nid).collect();
        let keys: BTreeMap<i64, NodeKey> = read.node_keys(&nids)?.into_iter().collect();
        Ok(ranked
            .into_iter()
            .filter_map(|(nid, score)| Some((keys.get(&nid)?.clone(), score)))
            .collect())
    }

    /// [`Nearest::finish`] with the nodes themselves, read by their ids (recall reads every
    /// hit's node: by id it is one row read where the key and then the node by its key are
    /// three).
    pub(crate) fn finish_nodes(
        self,
        read: &dyn GraphReader,
        cache: &IndexCache,
        decode: &dyn NodeDecode,
    ) -> Result<Vec<(Arc<Node>, f32)>, Error> {
        let ranked = self.finish_ranked(read, cache)?;
        let nids: Vec<i64> = ranked.iter().map(|(nid, _)| *nid).collect();
        let nodes = read.nodes_by_nid_shared(&nids, decode)?;
        Ok(ranked
            .into_iter()
            .zip(nodes)
            .filter_map(|((_, score), node)| Some((node?, score)))
            .collect())
    }

    /// The best `k` by nid, best first (ties by nid).
    fn finish_ranked(
        self,
        read: &dyn GraphReader,
        cache: &IndexCache,
    ) -> Result<Vec<(i64, f32)>, Error> {
        let Some(Begun { dim, generation, query, k, candidates, probe }) = self.0 else {
            return Ok(Vec::new());
        };
        // Scores by nid (a vector re-written since the build is both a stale list entry and an
        // unindexed vector, with one score); keys are read only for the best `k`.
        let mut scored: BTreeMap<i64, f32> = BTreeMap::new();
        let ids = match probe.map(Pending::join).transpose()? {
            None => None,
            Some(Probed::Scanned(ids)) => ids,
            Some(Probed::Unread(probed)) => {
                let lists = cache.read_lists(read, dim, generation, &probed)?;
                scan(&query, &lists, candidates)?
            }
        };
        if let Some(ids) = ids {
            // Re-rank exactly; a candidate whose vector is gone (deleted since the build) drops
            // out.
            read.scan_vectors_of(&ids, &mut |nid, vector| {
                scored.insert(nid, ctxgraph_ann::dot_f32(&query, vector));
            })?;
        }
        // A store with its own index over every vector (the scale-out graph's) gives candidates
        // for the vectors written since the build too, re-ranked exactly like the probe's, so it
        // need not send every such vector; the probe's candidates stay, so no vector the
        // embedded store would rank is missed. Not while those vectors are few enough to keep in
        // memory: then the exact scan reads them once per vector generation and costs no round
        // trip after.
        let scan_up_to = MAX_CACHED_UNINDEXED as u64;
        if let Some(ids) = read.native_nearest(&query, candidates, scan_up_to)? {
            let ids: Vec<i64> = ids.into_iter().filter(|nid| !scored.contains_key(nid)).collect();
            read.scan_vectors_of(&ids, &mut |nid, vector| {
                scored.insert(nid, ctxgraph_ann::dot_f32(&query, vector));
            })?;
            return Ok(ranked(scored, k));
        }
        // Vectors written since the build are scored as they are read, keeping only the best
        // `k`: every reader runs this on every search, so holding them all cost the server a
        // copy of them per search in flight.
        let mut unindexed: Vec<(i64, f32)> = Vec::new();
        let keep = k.saturating_mul(2).max(64);
        cache.each_unindexed(read, dim, &mut |nid, vector| {
            unindexed.push((nid, ctxgraph_ann::dot_f32(&query, vector)));
            if unindexed.len() > keep {
                best_scores(&mut unindexed, k);
            }
        })?;
        scored.extend(unindexed);
        Ok(ranked(scored, k))
    }
}

/// The `k` stored vectors nearest to `query` (cosine, best first, ties by nid), as node keys.
pub(crate) fn nearest(
    read: &dyn GraphReader,
    cache: &IndexCache,
    query: &[f32],
    k: usize,
    options: SearchParams,
) -> Result<Vec<(NodeKey, f32)>, Error> {
    start_nearest(read, cache, query, k, options, false)?.finish(read, cache)
}

/// The best `k` of `scored` (by nid), best first.
fn ranked(scored: BTreeMap<i64, f32>, k: usize) -> Vec<(i64, f32)> {
    let mut ranked: Vec<(i64, f32)> = scored.into_iter().collect();
    best_scores(&mut ranked, k);
    ranked
}

/// Sort `(nid, score)` best first (ties by nid, a total order, so which `k` survive does not
/// depend on the order they came in) and keep the first `k`.
fn best_scores(ranked: &mut Vec<(i64, f32)>, k: usize) {
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
}

#[cfg(test)]
mod tests {
    use ctxgraph_ann::{SearchParams, TrainConfig};
    use ctxgraph_ontology::graph::{Node, NodeKey, Properties};
    use ctxgraph_store::{Embedded, EmbeddedWrite, GraphReader, GraphStore, OpenMode};

    use super::{AllVectors, IndexCache};

    const DIM: usize = 8;

    /// A store with `n` vectors of `DIM` dimensions around a few directions (splitmix64).
    fn store(n: usize) -> (tempfile::TempDir, Embedded) {
        let dir = tempfile::TempDir::new().unwrap();
        let mut store =
            Embedded::open(&dir.path().join("v.ctxg"), OpenMode::CreateIfMissing).unwrap();
        let mut w = store.begin_write().unwrap();
        w.set_embedding_model("test", DIM).unwrap();
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for i in 0..n {
            let key = NodeKey::new("Event", format!("e{i:05}"));
            w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
            let mut v: Vec<f32> = (0..DIM).map(|_| 0.3 * next()).collect();
            v[i % 5] += 1.0;
            w.put_vector(&key, &v).unwrap();
        }
        w.commit().unwrap();
        (dir, store)
    }

    /// The index as stored: the centroids and every list's blob.
    fn stored(w: &EmbeddedWrite<'_>, lists: usize) -> (Vec<u8>, Vec<Vec<u8>>) {
        let centroids = w.ann_centroids().unwrap().unwrap();
        let blobs = (0..lists as u32).map(|l| w.ann_list(l).unwrap().unwrap()).collect();
        (centroids, blobs)
    }

    #[test]
    fn the_streamed_build_equals_the_build_over_every_vector_in_memory() {
        let (_dir, mut store) = store(1_000);
        let mut w = store.begin_write().unwrap();
        let all = AllVectors::load(&w).unwrap();
        let mut cfg = TrainConfig::for_count(all.len());
        cfg.threads = 2;
        let centroids = ctxgraph_ann::train(&all.data, all.dim, &cfg).unwrap();
        let assignment = ctxgraph_ann::assign(&centroids, &all.data, 2).unwrap();
        let blobs =
            ctxgraph_ann::encode_lists(&all.nids, &all.data, &centroids, &assignment, 2).unwrap();
        let expected = (centroids.to_bytes(), blobs);
        // Pages that do not divide the store, one row, and all rows at once.
        for page in [7, 1, 4_096] {
            let built = super::rebuild_paged(&mut w, 2, page).unwrap().unwrap();
            assert_eq!(built.assignment, assignment, "page {page}");
            assert_eq!(stored(&w, centroids.len()), expected, "page {page}");
            assert_eq!(w.vector_counts().unwrap(), (1_000, 0), "every vector is in a list");
        }
    }

    #[test]
    fn an_empty_store_builds_no_index() {
        let (_dir, mut store) = store(0);
        let mut w = store.begin_write().unwrap();
        assert!(super::rebuild(&mut w, 1).unwrap().is_none());
        assert!(w.ann_centroids().unwrap().is_none());
    }

    /// `blob` in the inverted-list format before groups (format 1), as older stores hold it:
    /// one record (id, scale, codes) per member after the header.
    fn format_1(dim: usize, blob: &[u8]) -> Vec<u8> {
        let view = ctxgraph_ann::ListView::parse(dim, blob).unwrap();
        let mut out = b"CGIL".to_vec();
        for field in [1, dim as u32, view.len() as u32] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        for (id, scale, codes) in view.iter() {
            out.extend_from_slice(&id.to_le_bytes());
            out.extend_from_slice(&scale.to_le_bytes());
            out.extend_from_slice(codes);
        }
        out
    }

    #[test]
    fn an_index_in_the_format_before_groups_still_answers_the_same() {
        // 200 more nodes with copies of seven vectors: groups of many members.
        let (_dir, mut store) = store(1_000);
        let mut w = store.begin_write().unwrap();
        let all = AllVectors::load(&w).unwrap();
        for i in 0..200 {
            let key = NodeKey::new("Event", format!("copy{i:03}"));
            w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
            w.put_vector(&key, all.row(i % 7)).unwrap();
        }
        let built = super::rebuild(&mut w, 2).unwrap().unwrap();
        let lists = built.centroids.len();
        let search = |w: &EmbeddedWrite<'_>| -> Vec<Vec<(NodeKey, f32)>> {
            let cache = IndexCache::default();
            let params = SearchParams { nprobe: 4, candidates: 30 };
            (0..20)
                .map(|q| super::nearest(w, &cache, all.row(q * 37), 20, params).unwrap())
                .collect()
        };
        let grouped = search(&w);
        let (_, blobs) = stored(&w, lists);
        let groups: usize =
            blobs.iter().map(|b| ctxgraph_ann::ListView::parse(DIM, b).unwrap().groups_len()).sum();
        assert_eq!(groups, 1_000, "the 200 copies join their originals' groups");
        for (list, blob) in (0u32..).zip(&blobs) {
            w.put_ann_list(list, &format_1(DIM, blob)).unwrap();
        }
        assert_eq!(search(&w), grouped);
        // The next build writes the grouped format again.
        super::rebuild(&mut w, 2).unwrap();
        assert_eq!(stored(&w, lists).1, blobs);
    }

    #[test]
    fn a_search_of_every_list_with_every_candidate_is_the_exact_ranking() {
        let (_dir, mut store) = store(600);
        let mut w = store.begin_write().unwrap();
        let built = super::rebuild(&mut w, 2).unwrap().unwrap();
        let all = AllVectors::load(&w).unwrap();
        let params = SearchParams { nprobe: built.centroids.len(), candidates: all.len() };
        let cache = IndexCache::default();
        for q in [0, 17, 333] {
            let query = all.row(q).to_vec();
            let mut exact: Vec<(i64, NodeKey, f32)> = (0..all.len())
                .map(|i| {
                    (all.nids[i], all.keys[i].clone(), ctxgraph_ann::dot_f32(&query, all.row(i)))
                })
                .collect();
            exact.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
            for k in [1, 25, 600] {
                let found = super::nearest(&w, &cache, &query, k, params).unwrap();
                let want: Vec<(NodeKey, f32)> =
                    exact.iter().take(k).map(|(_, key, s)| (key.clone(), *s)).collect();
                assert_eq!(found, want, "query {q}, k {k}");
            }
        }
    }

    #[test]
    fn unindexed_vectors_are_ranked_exactly_however_many() {
        let (_dir, mut store) = store(300);
        let w = store.begin_write().unwrap();
        let all = AllVectors::load(&w).unwrap();
        let query = all.row(123).to_vec();
        let mut exact: Vec<(i64, NodeKey, f32)> = (0..all.len())
            .map(|i| (all.nids[i], all.keys[i].clone(), ctxgraph_ann::dot_f32(&query, all.row(i))))
            .collect();
        exact.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
        let cache = IndexCache::default();
        // Fewer than kept between prunings, more, and every vector.
        for k in [1, 10, 200, 300] {
            let found = super::nearest(&w, &cache, &query, k, SearchParams::default()).unwrap();
            let want: Vec<(NodeKey, f32)> =
                exact.iter().take(k).map(|(_, key, s)| (key.clone(), *s)).collect();
            assert_eq!(found, want, "k {k}");
        }
    }

    #[test]
    fn searches_sharing_a_cache_across_threads_and_rebuilds_answer_as_a_fresh_cache() {
        let (_dir, mut store) = store(2_000);
        let mut w = store.begin_write().unwrap();
        super::rebuild(&mut w, 2).unwrap();
        w.commit().unwrap();
        let all = AllVectors::load(&store.begin_read().unwrap()).unwrap();
        let cache = IndexCache::default();
        let params = SearchParams { nprobe: 3, candidates: 40 };
        let search = |store: &Embedded, q: usize, cache: &IndexCache| {
            let r = store.begin_read().unwrap();
            super::nearest(&r, cache, all.row(q), 10, params).unwrap()
        };
        for round in 0..2 {
            let fresh: Vec<_> =
                (0..40).map(|q| search(&store, q * 47, &IndexCache::default())).collect();
            // Two threads probe through one cache at once, each on a connection of its own.
            let shared: Vec<Vec<_>> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..2)
                    .map(|t| {
                        let (cache, path) = (&cache, store.path().to_path_buf());
                        let all = &all;
                        scope.spawn(move || {
                            let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
                            (0..40)
                                .filter(|q| q % 2 == t)
                                .map(|q| {
                                    let r = store.begin_read().unwrap();
                                    super::nearest(&r, cache, all.row(q * 47), 10, params).unwrap()
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let evens = fresh.iter().step_by(2).cloned().collect::<Vec<_>>();
            let odds = fresh.iter().skip(1).step_by(2).cloned().collect::<Vec<_>>();
            assert_eq!(shared, vec![evens, odds], "round {round}");
            // A rebuild moves the index generation: the shared cache is emptied and read again.
            let before = store.begin_read().unwrap().ann_generation().unwrap();
            let mut w = store.begin_write().unwrap();
            super::rebuild(&mut w, 1).unwrap();
            w.commit().unwrap();
            assert!(store.begin_read().unwrap().ann_generation().unwrap() > before);
        }
    }

    #[test]
    fn a_shared_copy_of_the_unindexed_vectors_follows_every_change() {
        let (_dir, mut store) = store(50);
        let cache = IndexCache::default();
        let query: Vec<f32> = (0..DIM).map(|d| if d == 2 { 1.0 } else { 0.0 }).collect();
        let search = |store: &Embedded| {
            let r = store.begin_read().unwrap();
            let found = super::nearest(&r, &cache, &query, 5, SearchParams::default()).unwrap();
            // What a search with nothing cached finds.
            let fresh =
                super::nearest(&r, &IndexCache::default(), &query, 5, SearchParams::default())
                    .unwrap();
            assert_eq!(found, fresh);
            found
        };
        let before = search(&store);
        assert_eq!(search(&store), before, "the cached copy answers alike");
        // A new vector nearest to the query, then an old one rewritten nearer still, then the
        // nearest deleted: each commit is seen by the next search.
        let mut w = store.begin_write().unwrap();
        let new = NodeKey::new("Event", "new");
        w.put_node(&Node { key: new.clone(), props: Properties::new() }).unwrap();
        let far_above: Vec<f32> = query.iter().map(|x| x * 3.0).collect();
        w.put_vector(&new, &far_above).unwrap();
        w.commit().unwrap();
        assert_eq!(search(&store)[0].0, new);
        let mut w = store.begin_write().unwrap();
        let old = NodeKey::new("Event", "e00001");
        let mut nearer = query.clone();
        nearer[2] = 5.0;
        w.put_vector(&old, &nearer).unwrap();
        w.commit().unwrap();
        assert_eq!(search(&store)[0].0, old);
        let mut w = store.begin_write().unwrap();
        w.delete_node(&old).unwrap();
        w.commit().unwrap();
        assert_eq!(search(&store)[0].0, new);
        // Within a write transaction, its own changes are seen too.
        let mut w = store.begin_write().unwrap();
        let newest = NodeKey::new("Event", "newest");
        w.put_node(&Node { key: newest.clone(), props: Properties::new() }).unwrap();
        w.put_vector(&newest, &nearer).unwrap();
        let found = super::nearest(&w, &cache, &query, 5, SearchParams::default()).unwrap();
        assert_eq!(found[0].0, newest);
    }
}
