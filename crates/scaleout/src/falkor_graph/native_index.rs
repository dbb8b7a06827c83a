//! FalkorDB's own vector index over stage 2's vectors: the nearest-neighbour prefilter of a
//! vector search on this backend.
//!
//! # Layout
//!
//! ```text
//! (:_Vector {nid, v})        one node per stored vector: nid the node's creation number (the
//!                            key of `vectors`), v the vector as FalkorDB's `vecf32`
//! vector index on _Vector.v  cosine, at the embedding model's dimension, created by the
//!                            first commit that writes a vector
//! native_vectors             string: the index's dimension, set by the commit that wrote a
//!                            store's first vector (its copies then cover every vector)
//! ```
//!
//! One extra label rather than a property on each labelled node: the vectors belong to nodes of
//! many labels (events, facts, sentences, memories, ...), and one label needs one index and one
//! query, where a property per label would need an index and a query each. The `_Vector` nodes
//! are bookkeeping (`_` labels are left out of the graph's counts), written and deleted in the
//! same `MULTI`/`EXEC` as the vectors of `vectors` (stage 2's and stage 3's commits, and the
//! fold that deletes a node), so a forgotten node's vector leaves the index with it.
//!
//! The index is approximate (HNSW), so a search asks it for candidates only and re-ranks them
//! exactly with the f32 vectors of `vectors`, as the engine re-ranks the vector index's
//! candidates. A deleted vector keeps a place in the HNSW graph that a query still counts
//! against its `k` (it returns fewer nodes than asked): a short answer is asked again with a
//! larger `k`, up to the number of vectors stored.
//!
//! A store whose vectors were written before this index existed has no marker and is searched
//! by scanning, as before.

use ctxgraph_store::StoreError;
use falkordb::FalkorValue;

use super::{FalkorGraph, Write, count, int, int_at};

/// The label of the vectors' copies.
pub(super) const VECTOR_LABEL: &str = "_Vector";
/// The key marking that every stored vector has its copy (holds the index's dimension).
pub(super) const NATIVE_VECTORS: &str = "native_vectors";
/// Vectors written per query: each travels as text in the query.
const WRITE_PAGE: usize = 256;
/// The index's HNSW options: neighbours per node, and the candidate lists of a build and of a
/// query. A query's list is at least its `k`.
const HNSW_OPTIONS: &str = "M: 16, efConstruction: 200, efRuntime: 200";
/// Candidates asked of the index per candidate a search wants. Its answers are approximate,
/// and many vectors can be equal (events with the same text): the exact ranking breaks their
/// ties by number, which the index does not, so a search that wants 100 asks for 400. On
/// 20,000 generated events this found every exact top 10 of the queries measured (asking for
/// 100 or 200 missed 7% and 13% of them); see docs/scale-out.md.
const OVERFETCH: usize = 4;

impl FalkorGraph {
    /// Create the vector index at `dimension` unless it exists (outside any transaction: an
    /// index creation that fails inside `MULTI`/`EXEC` would fail the block).
    pub(super) fn ensure_vector_index(&self, dimension: usize) -> Result<(), StoreError> {
        let query = format!(
            "CREATE VECTOR INDEX FOR (n:{VECTOR_LABEL}) ON (n.v) \
             OPTIONS {{dimension: {dimension}, similarityFunction: 'cosine', {HNSW_OPTIONS}}}"
        );
        super::unless_raced(self.run(&query, &[]))?;
        // Deletions find a vector's copy by its number.
        super::unless_raced(
            self.run(&format!("CREATE INDEX FOR (n:{VECTOR_LABEL}) ON (n.nid)"), &[]),
        )
    }

    /// The commands of a commit writing `vectors` (node number, floats) that keep their copies:
    /// the index created first when missing (at the vectors' dimension: a store refuses vectors
    /// of another), and the marker set when the store held no vector before, so that from then
    /// on every vector has its copy. Read before the commit's `MULTI`; the commit watches the
    /// stage-2 checkpoint, which every commit writing vectors moves.
    pub(super) fn vector_copy_writes(
        &self,
        vectors: &[(i64, &[f32])],
    ) -> Result<Vec<redis::Cmd>, StoreError> {
        let Some(dimension) = vectors.first().map(|(_, v)| v.len()) else {
            return Ok(Vec::new());
        };
        let (marker, stored): (Option<String>, u64) = redis::pipe()
            .cmd("GET")
            .arg(self.stage2_key(NATIVE_VECTORS))
            .cmd("ZCARD")
            .arg(self.stage2_key("vector_ids"))
            .query(&mut *self.raw.borrow_mut())
            .map_err(|e| super::raw_remote(&self.url, &e))?;
        // The marker is set by the commit after the one that created the index, and a reset
        // drops both: while it is there, the index is.
        if marker.is_none() {
            self.ensure_vector_index(dimension)?;
        }
        let mut out = Vec::new();
        for page in vectors.chunks(WRITE_PAGE) {
            let rows = page
                .iter()
                .map(|(nid, v)| FalkorValue::Array(vec![int(*nid), floats(v)]))
                .collect();
            let write = Write {
                // Removed before it is set: this FalkorDB build takes a vector of the same
                // dimension for an equal value and skips the `SET` (the copy, and the index,
                // would keep the old vector).
                query: format!(
                    "UNWIND $rows AS r MERGE (n:{VECTOR_LABEL} {{nid: r[0]}}) \
                     REMOVE n.v WITH n, r SET n.v = vecf32(r[1])"
                ),
                params: vec![("rows", FalkorValue::Array(rows))],
            };
            out.push(redis::cmd("GRAPH.QUERY").arg(&self.name).arg(write.with_preamble()?).clone());
        }
        if stored == 0 {
            out.push(redis::cmd("SET").arg(self.stage2_key(NATIVE_VECTORS)).arg(dimension).clone());
        }
        Ok(out)
    }

    /// The command deleting the copies of `nids`' vectors (none when `nids` is empty).
    pub(super) fn vector_copy_drops(&self, nids: &[i64]) -> Result<Option<redis::Cmd>, StoreError> {
        if nids.is_empty() {
            return Ok(None);
        }
        let write = Write {
            query: format!("UNWIND $nids AS i MATCH (n:{VECTOR_LABEL} {{nid: i}}) DELETE n"),
            params: vec![("nids", FalkorValue::Array(nids.iter().map(|n| int(*n)).collect()))],
        };
        Ok(Some(redis::cmd("GRAPH.QUERY").arg(&self.name).arg(write.with_preamble()?).clone()))
    }

    /// [`ctxgraph_store::GraphReader::native_nearest`]: the numbers of at least `want` vectors
    /// near `query` by the vector index ([`OVERFETCH`] times as many; every vector when fewer
    /// are stored), or `None` when the store's vectors have no copies to search or at most
    /// `scan_up_to` lie outside the IVF index.
    pub(crate) fn native_nearest(
        &self,
        query: &[f32],
        want: usize,
        scan_up_to: u64,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        // Within a read view, from its memo (read once with the other state keys).
        let (marker, stored, filed): (Option<usize>, u64, u64) = match self.held_native()? {
            Some(n) => (n.vector_dimension, n.vectors, n.vectors_filed),
            None => redis::pipe()
                .cmd("GET")
                .arg(self.stage2_key(NATIVE_VECTORS))
                .cmd("ZCARD")
                .arg(self.stage2_key("vector_ids"))
                .cmd("HLEN")
                .arg(self.stage2_key(super::stage3::VECTOR_LISTS))
                .query(&mut *self.raw.borrow_mut())
                .map_err(|e| super::raw_remote(&self.url, &e))?,
        };
        let Some(dimension) = marker else { return Ok(None) };
        if stored.saturating_sub(filed) <= scan_up_to {
            return Ok(None);
        }
        if query.len() != dimension {
            return Err(StoreError::Corruption(format!(
                "{}: a vector search of {} dimensions on a vector index of {dimension} \
                 (rule: vector.dimension)",
                self.url,
                query.len()
            )));
        }
        let stored = usize::try_from(stored).unwrap_or(usize::MAX);
        let want = want.saturating_mul(OVERFETCH);
        let mut k = want.max(1);
        loop {
            let rows = self.run_read(
                &format!(
                    "CALL db.idx.vector.queryNodes('{VECTOR_LABEL}', 'v', $k, vecf32($q)) \
                     YIELD node RETURN node.nid"
                ),
                &[("k", int(count(k))), ("q", floats(query))],
            )?;
            let nids =
                rows.iter().map(|r| int_at(r, 0, &self.url)).collect::<Result<Vec<_>, _>>()?;
            // Deleted vectors take places in the answer: ask again until it holds `want`, or
            // every vector stored.
            if nids.len() >= want.min(stored) || k >= stored {
                return Ok(Some(nids));
            }
            k = k.saturating_mul(2).min(stored.max(1));
        }
    }
}

/// A vector as a query parameter: a list of its floats, each written as the shortest text that
/// reads back as the same `f64`, so `vecf32` rounds it back to the same `f32`.
fn floats(vector: &[f32]) -> FalkorValue {
    FalkorValue::Array(vector.iter().map(|x| FalkorValue::F64(f64::from(*x))).collect())
}
