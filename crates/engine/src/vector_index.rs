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

use ctxgraph_ann::{Centroids, CheckedList, ListView, SearchParams, TrainConfig};
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_store::{EmbeddedWrite, GraphReader, GraphStore};

use crate::error::Error;

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
    pub(crate) fn load(w: &EmbeddedWrite<'_>) -> Result<AllVectors, Error> {
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

/// A built index: the centroids and the list of every loaded vector.
pub(crate) struct Built {
    pub(crate) centroids: Centroids,
    pub(crate) assignment: Vec<u32>,
}

/// Replace the stored index with one built over `all`; `None` when there is nothing to index.
pub(crate) fn rebuild(
    w: &mut EmbeddedWrite<'_>,
    all: &AllVectors,
    threads: usize,
) -> Result<Option<Built>, Error> {
    w.clear_ann_index()?;
    if all.len() == 0 {
        return Ok(None);
    }
    let mut train = TrainConfig::for_count(all.len());
    train.threads = threads;
    let centroids = ctxgraph_ann::train(&all.data, all.dim, &train)?;
    let assignment = ctxgraph_ann::assign(&centroids, &all.data, threads)?;
    let blobs = ctxgraph_ann::encode_lists(&all.nids, &all.data, &centroids, &assignment, threads)?;
    for (list, blob) in (0u32..).zip(&blobs) {
        w.put_ann_list(list, blob)?;
    }
    for (nid, list) in all.nids.iter().zip(&assignment) {
        w.set_vector_list(*nid, *list)?;
    }
    w.put_ann_centroids(&centroids.to_bytes())?;
    Ok(Some(Built { centroids, assignment }))
}

impl crate::Engine {
    /// Rebuild only the vector index over every stored vector (after a bulk load, so searches
    /// stop scanning the new vectors exactly); `consolidate` does this and more. Returns the
    /// number of vectors indexed.
    pub fn index_vectors(&mut self) -> Result<u64, Error> {
        let threads = self.options().consolidate.threads.max(1);
        let mut w = self.store.begin_write()?;
        let all = AllVectors::load(&w)?;
        rebuild(&mut w, &all, threads)?;
        w.commit()?;
        Ok(all.len() as u64)
    }
}

/// The parts of the vector index read so far, kept for the engine's life so that repeated
/// searches (a server, a benchmark) read and check each list once. Tagged with the index
/// generation: a rebuild elsewhere empties it on the next search. Lists are loaded on demand, so a one-off
/// search reads only the lists it probes.
#[derive(Default)]
pub(crate) struct IndexCache(Mutex<CachedIndex>);

#[derive(Default)]
struct CachedIndex {
    generation: u64,
    centroids: Option<Arc<Centroids>>,
    lists: BTreeMap<u32, Arc<CheckedList>>,
}

impl IndexCache {
    /// Forget every part read so far.
    pub(crate) fn clear(&self) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = CachedIndex::default();
    }

    /// The probed lists for `query`, from the cache or the store (none before a first build).
    fn probe(
        &self,
        read: &dyn GraphReader,
        dim: usize,
        query: &[f32],
        nprobe: usize,
    ) -> Result<Vec<Arc<CheckedList>>, Error> {
        let generation = read.ann_generation()?;
        let mut cache = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.generation != generation {
            *cache = CachedIndex { generation, ..CachedIndex::default() };
        }
        let centroids = match &cache.centroids {
            Some(c) => Arc::clone(c),
            None => {
                let Some(blob) = read.ann_centroids()? else { return Ok(Vec::new()) };
                let c = Arc::new(Centroids::from_bytes(dim, &blob)?);
                cache.centroids = Some(Arc::clone(&c));
                c
            }
        };
        let mut out = Vec::new();
        for list in centroids.probe(query, nprobe) {
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

/// The `k` stored vectors nearest to `query` (cosine, best first, ties by nid), as node keys.
pub(crate) fn nearest(
    read: &dyn GraphReader,
    cache: &IndexCache,
    query: &[f32],
    k: usize,
    options: SearchParams,
) -> Result<Vec<(NodeKey, f32)>, Error> {
    let Some((_, dim)) = read.embedding_model()? else { return Ok(Vec::new()) };
    if query.len() != dim {
        return Err(Error::Index(ctxgraph_ann::Error::Dimension {
            expected: dim,
            got: query.len(),
        }));
    }
    let mut scored: BTreeMap<i64, (NodeKey, f32)> = BTreeMap::new();
    let blobs = cache.probe(read, dim, query, options.nprobe)?;
    if !blobs.is_empty() {
        let views: Vec<ListView<'_>> = blobs.iter().map(|b| b.view()).collect();
        let approx = ctxgraph_ann::scan(query, &views, options.candidates.max(k))?;
        let ids: Vec<i64> = approx.iter().map(|(id, _)| *id).collect();
        // Re-rank exactly; a candidate whose vector is gone (deleted since the build) drops out.
        for v in read.vectors_of(&ids)? {
            let score = ctxgraph_ann::dot_f32(query, &v.vector);
            scored.insert(v.nid, (v.key, score));
        }
    }
    for v in read.unindexed_vectors()? {
        let score = ctxgraph_ann::dot_f32(query, &v.vector);
        scored.insert(v.nid, (v.key, score));
    }
    let mut ranked: Vec<(i64, NodeKey, f32)> =
        scored.into_iter().map(|(nid, (key, score))| (nid, key, score)).collect();
    ranked.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    Ok(ranked.into_iter().map(|(_, key, score)| (key, score)).collect())
}
