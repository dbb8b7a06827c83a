//! Stage-2 data of nodes the fold deletes: the writes that take a deleted node's vector,
//! document terms, postings and key entry out of the stage-2 keys, sent in the fold's own
//! transaction so no state of the store has the node gone and its stage-2 data left.
//!
//! The vector index's lists (stage 3's) lose the deleted nodes' codes as the embedded store's
//! forget takes them out (`ctxgraph_ann::without_members`), so no list blob keeps them until
//! the next consolidation.
//!
//! The lexical index loses the documents as the embedded store's forget takes them out
//! (`ctxgraph-lexical`'s `without`): only the lists of their terms are rewritten, a term left
//! with no document goes, the build's document count drops by the documents found in some list
//! and its mean length stays, so the lists equal the embedded store's after the same forget.

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_lexical::Pruned;
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_store::StoreError;

use super::super::FalkorGraph;
use super::super::stage3::{ANN_GENERATION, ANN_LISTS, VECTOR_LISTS};
use super::lexical;

impl FalkorGraph {
    /// The commands that drop the stage-2 data of `deleted` (nodes of the graph the fold is
    /// about to delete; those it does not hold are left out), to run inside the fold's
    /// transaction. Watches the stage-2 keys it reads first, so an enrichment commit landing
    /// between these reads and the transaction makes the transaction apply nothing (the fold
    /// runs again). No command when no deleted node has stage-2 data.
    pub(crate) fn stage2_drops(&self, deleted: &[&NodeKey]) -> Result<Vec<redis::Cmd>, StoreError> {
        if deleted.is_empty() {
            return Ok(Vec::new());
        }
        let (doc_terms, postings, build_key) = (
            self.stage2_key("doc_terms"),
            self.stage2_key("postings"),
            self.stage2_key("text_build"),
        );
        let (vectors, vector_ids) = (self.stage2_key("vectors"), self.stage2_key("vector_ids"));
        let (vector_lists, ann_lists) = (self.stage2_key(VECTOR_LISTS), self.stage2_key(ANN_LISTS));
        self.raw_query::<()>(
            redis::cmd("WATCH")
                .arg(&doc_terms)
                .arg(&postings)
                .arg(&build_key)
                .arg(&vector_ids)
                .arg(&vector_lists)
                .arg(&ann_lists),
        )?;
        let nids: Vec<i64> = self.seqs_of(deleted.iter().copied())?.into_values().collect();
        if nids.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<Option<String>> =
            self.raw_query(redis::cmd("HMGET").arg(&doc_terms).arg(&nids))?;
        let docs: BTreeMap<i64, String> =
            nids.iter().zip(docs).filter_map(|(nid, d)| Some((*nid, d?))).collect();
        let scores: Vec<Option<f64>> =
            self.raw_query(redis::cmd("ZMSCORE").arg(&vector_ids).arg(&nids))?;
        let had_vector = scores.iter().any(Option::is_some);

        let mut out = Vec::new();
        if !docs.is_empty() {
            out.extend(self.lexical_drops(&docs)?);
            let doc_nids: Vec<i64> = docs.keys().copied().collect();
            let gone = docs.values().map(|d| super::super::native_text::length(d)).sum();
            out.extend(self.text_copy_drops(&doc_nids, gone)?);
            out.push(redis::cmd("HDEL").arg(&doc_terms).arg(&doc_nids).clone());
            out.push(redis::cmd("ZREM").arg(self.stage2_key("text_ids")).arg(&doc_nids).clone());
            out.push(redis::cmd("INCR").arg(self.stage2_key("text_generation")).clone());
        }
        if had_vector {
            out.extend(self.ann_drops(&nids, &vector_lists, &ann_lists)?);
            out.push(redis::cmd("HDEL").arg(&vectors).arg(&nids).clone());
            out.push(redis::cmd("ZREM").arg(&vector_ids).arg(&nids).clone());
            out.push(redis::cmd("INCR").arg(self.stage2_key("vector_generation")).clone());
            out.extend(self.vector_copy_drops(&nids)?);
        }
        if !out.is_empty() {
            out.push(redis::cmd("HDEL").arg(self.stage2_key("node_keys")).arg(&nids).clone());
        }
        Ok(out)
    }

    /// The commands that take the vectors of `nids` out of the vector index's lists they are
    /// filed in (`vector_lists`), rewriting those lists' blobs.
    fn ann_drops(
        &self,
        nids: &[i64],
        vector_lists: &str,
        ann_lists: &str,
    ) -> Result<Vec<redis::Cmd>, StoreError> {
        let filed: Vec<Option<u32>> =
            self.raw_query(redis::cmd("HMGET").arg(vector_lists).arg(nids))?;
        let gone: BTreeSet<(u32, i64)> =
            nids.iter().zip(filed).filter_map(|(nid, list)| Some((list?, *nid))).collect();
        if gone.is_empty() {
            return Ok(Vec::new());
        }
        let Some((_, dim)) = self.stage2_embedding_model()? else { return Ok(Vec::new()) };
        let lists: Vec<u32> =
            gone.iter().map(|(list, _)| *list).collect::<BTreeSet<_>>().into_iter().collect();
        let blobs: Vec<Option<Vec<u8>>> =
            self.raw_query(redis::cmd("HMGET").arg(ann_lists).arg(&lists))?;
        let mut hset = redis::cmd("HSET");
        hset.arg(ann_lists);
        let mut rewritten = 0;
        for (list, blob) in lists.iter().zip(blobs) {
            let Some(blob) = blob else { continue };
            let kept =
                ctxgraph_ann::without_members(dim, &blob, |nid| gone.contains(&(*list, nid)))
                    .map_err(|e| {
                        StoreError::Corruption(format!("the vector index's list {list}: {e}"))
                    })?;
            hset.arg(*list).arg(kept);
            rewritten += 1;
        }
        let filed: Vec<i64> = gone.iter().map(|(_, nid)| *nid).collect();
        let mut out = vec![redis::cmd("HDEL").arg(vector_lists).arg(&filed).clone()];
        if rewritten > 0 {
            out.push(hset);
        }
        out.push(redis::cmd("INCR").arg(self.stage2_key(ANN_GENERATION)).clone());
        Ok(out)
    }

    /// The commands that take the documents `docs` (number → terms) out of the lexical index:
    /// their terms' lists rewritten or removed, the build's document count lowered.
    fn lexical_drops(&self, docs: &BTreeMap<i64, String>) -> Result<Vec<redis::Cmd>, StoreError> {
        let Some(mut build) = self.stage2_text_index_build()? else { return Ok(Vec::new()) };
        // Only documents the build covers are in its lists.
        let covered: BTreeSet<i64> = docs.keys().copied().filter(|&d| d <= build.through).collect();
        let terms: BTreeSet<&str> = docs
            .iter()
            .filter(|(d, _)| covered.contains(d))
            .flat_map(|(_, t)| t.split(' ').filter(|t| !t.is_empty()))
            .collect();
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let terms: Vec<&str> = terms.into_iter().collect();
        let postings = self.stage2_key("postings");
        let lists: Vec<Option<Vec<u8>>> =
            self.raw_query(redis::cmd("HMGET").arg(&postings).arg(&terms))?;
        let listed = terms.iter().zip(lists).filter_map(|(term, list)| Some((*term, list?)));
        let (pruned, found) = ctxgraph_lexical::without_docs(listed, &covered).map_err(lexical)?;
        let (mut emptied, mut rewritten) = (Vec::new(), Vec::new());
        for (term, left) in pruned {
            match left {
                Pruned::Unchanged => {}
                Pruned::Empty => emptied.push(term),
                Pruned::List(blob) => rewritten.push((term, blob)),
            }
        }
        let mut out = Vec::new();
        if !emptied.is_empty() {
            out.push(redis::cmd("HDEL").arg(&postings).arg(&emptied).clone());
        }
        if !rewritten.is_empty() {
            let mut hset = redis::cmd("HSET");
            hset.arg(&postings);
            for (term, blob) in &rewritten {
                hset.arg(term).arg(blob.as_slice());
            }
            out.push(hset);
        }
        build.docs = build.docs.saturating_sub(found);
        out.push(
            redis::cmd("HSET")
                .arg(self.stage2_key("text_build"))
                .arg("docs")
                .arg(build.docs)
                .clone(),
        );
        Ok(out)
    }
}
