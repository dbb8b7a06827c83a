//! Query-time search: scanning inverted lists by int8 score, exact top-k, and recall.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::error::Error;
use crate::list::ListView;
use crate::quant::{dot_f32, dot_wide_bytes, quantize, widen};

/// Per-query search parameters.
///
/// A query probes the `nprobe` lists whose centroids are nearest to it
/// ([`Centroids::probe`](crate::Centroids::probe)), [`scan`]s them for the best `candidates` by
/// int8 score, and re-ranks those by exact f32 score ([`exact_top_k`]).
///
/// The defaults come from the `recall` example (built-in model, synthetic event texts, lists of
/// [`TrainConfig::for_count`](crate::TrainConfig::for_count), 2 cores). At 1,000,000 vectors of
/// 256 dimensions (1,000 lists), recall@10 against exact search was 1.000 for held-out event
/// texts from `nprobe` 8 up and 0.970 for 4-word snippet queries from 16 up (the misses are
/// crowds of near-duplicates whose exact scores differ from the true k-th by less than int8
/// resolution, about 1e-4); a query took 1.1 ms at `nprobe` 16 and 1.6 ms at 32, scanning 23k
/// and 36k codes. The default probes 32 lists, four times what this corpus needs, as a margin
/// for less repetitive text; 100 candidates cost the store 100 f32 vectors to re-rank, and 200
/// gained only 0.005 recall on snippets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchParams {
    /// Lists probed per query.
    pub nprobe: usize,
    /// Candidates kept from the int8 scan for exact re-ranking; at least the `k` asked for.
    pub candidates: usize,
}

impl SearchParams {
    /// The measured defaults.
    pub const DEFAULT: SearchParams = SearchParams { nprobe: 32, candidates: 100 };
}

impl Default for SearchParams {
    fn default() -> SearchParams {
        SearchParams::DEFAULT
    }
}

/// Scores every member of `lists` against `query` by approximate cosine from int8 codes
/// (`query_scale × member_scale × dot_i8`) and returns the best `candidates` as `(id, score)`,
/// best first, ties to the lower id. The caller re-ranks them with the exact f32 vectors.
///
/// # Errors
///
/// [`Error::Dimension`] if a list's dimension differs from `query.len()`.
pub fn scan(
    query: &[f32],
    lists: &[ListView<'_>],
    candidates: usize,
) -> Result<Vec<(i64, f32)>, Error> {
    if let Some(l) = lists.iter().find(|l| l.dim() != query.len()) {
        return Err(Error::Dimension { expected: l.dim(), got: query.len() });
    }
    let mut codes = Vec::with_capacity(query.len());
    let qscale = quantize(query, &mut codes);
    let wide = widen(&codes);
    let mut top = TopK::new(candidates);
    for list in lists {
        // Members of a group share codes and scale, so their score: it is computed once, and
        // since ties go to the lower id and a group's ids ascend, its first id that cannot
        // enter the top list is followed by none that can. The result is the one of scoring
        // every member.
        for group in list.groups() {
            let score = qscale * group.scale * dot_wide_bytes(&wide, group.codes) as f32;
            for id in group.ids() {
                if !top.offer(score, id) {
                    break;
                }
            }
        }
    }
    Ok(top.into_sorted())
}

/// Exact top-`k` of `vectors` (row `i` has id `ids[i]`, rows of `query.len()` floats) by f32
/// dot product with `query`, which is cosine for unit vectors; best first, ties to the lower id.
///
/// For small sets, for re-ranking [`scan`]'s candidates, and as ground truth for recall.
///
/// # Errors
///
/// [`Error::Shape`] if `vectors` does not hold exactly one row per id.
pub fn exact_top_k(
    query: &[f32],
    ids: &[i64],
    vectors: &[f32],
    k: usize,
) -> Result<Vec<(i64, f32)>, Error> {
    if ids.len().checked_mul(query.len()) != Some(vectors.len()) {
        return Err(Error::Shape {
            what: "vectors",
            detail: format!(
                "{} floats for {} ids of {} dimensions",
                vectors.len(),
                ids.len(),
                query.len()
            ),
        });
    }
    let mut top = TopK::new(k);
    if !query.is_empty() {
        for (&id, v) in ids.iter().zip(vectors.chunks_exact(query.len())) {
            top.push(dot_f32(query, v), id);
        }
    } else {
        ids.iter().for_each(|&id| top.push(0.0, id));
    }
    Ok(top.into_sorted())
}

/// Tolerance of [`recall_at_k`]'s tie rule.
pub const RECALL_TIE_EPSILON: f32 = 1e-6;

/// Recall@`k` of `found` against the exact answer `truth`, counting ties as hits.
///
/// `truth` is the exact top-k, best first, as [`exact_top_k`] returns it; `found` is the
/// approximate answer **re-ranked with exact scores** (its scores must be exact f32 cosines,
/// not int8 approximations). Each of the first `k` found entries is a hit if its id is in
/// `truth`'s first `k`, or if its exact score is at least the k-th exact score minus
/// [`RECALL_TIE_EPSILON`]: near-duplicate texts give many vectors with the same score as the k-th,
/// and which of them the exact search happened to keep is arbitrary. The result is hits divided
/// by `min(k, truth.len())`, in `0.0..=1.0`; 1.0 when there is nothing to find.
pub fn recall_at_k(truth: &[(i64, f32)], found: &[(i64, f32)], k: usize) -> f64 {
    let want = k.min(truth.len());
    let Some(&(_, kth)) = want.checked_sub(1).and_then(|i| truth.get(i)) else {
        return 1.0;
    };
    let truth = &truth[..want];
    let hits = found
        .iter()
        .take(k)
        .filter(|(id, score)| {
            truth.iter().any(|t| t.0 == *id) || *score >= kth - RECALL_TIE_EPSILON
        })
        .count();
    hits.min(want) as f64 / want as f64
}

/// The sort key of a score: NaN ranks below everything and −0.0 equals 0.0.
pub(crate) fn score_key(score: f32) -> f32 {
    if score.is_nan() { f32::NEG_INFINITY } else { score + 0.0 }
}

/// A scored id in a [`TopK`]; orders worst first (lower score, then higher id), so the heap's
/// top is the entry to evict.
#[derive(Clone, Copy, Debug)]
struct Entry {
    score: f32,
    id: i64,
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.score.total_cmp(&self.score).then(self.id.cmp(&other.id))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// The `k` best `(score, id)` pairs seen: higher score first, ties to the lower id.
pub(crate) struct TopK {
    k: usize,
    heap: BinaryHeap<Entry>,
}

impl TopK {
    pub(crate) fn new(k: usize) -> TopK {
        TopK { k, heap: BinaryHeap::with_capacity(k.min(1 << 16) + 1) }
    }

    pub(crate) fn push(&mut self, score: f32, id: i64) {
        self.offer(score, id);
    }

    /// [`TopK::push`], saying whether the entry was kept (it may be evicted later).
    pub(crate) fn offer(&mut self, score: f32, id: i64) -> bool {
        let e = Entry { score: score_key(score), id };
        if self.heap.len() < self.k {
            self.heap.push(e);
            true
        } else if let Some(mut worst) = self.heap.peek_mut()
            && e < *worst
        {
            *worst = e;
            true
        } else {
            false
        }
    }

    /// Best first.
    pub(crate) fn into_sorted(self) -> Vec<(i64, f32)> {
        self.heap.into_sorted_vec().into_iter().map(|e| (e.id, e.score)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_best_with_ties_to_lower_ids() {
        let mut t = TopK::new(3);
        for (s, id) in [(0.5, 9), (0.9, 4), (0.5, 2), (0.5, 7), (f32::NAN, 1), (-0.0, 3), (0.9, 1)]
        {
            t.push(s, id);
        }
        assert_eq!(t.into_sorted(), [(1, 0.9), (4, 0.9), (2, 0.5)]);
        let mut t = TopK::new(0);
        t.push(1.0, 1);
        assert!(t.into_sorted().is_empty());
    }

    #[test]
    fn exact_top_k_ranks_by_dot_product() {
        let ids = [10, 11, 12, 13];
        let vectors = [1.0, 0.0, 0.0, 1.0, 0.6, 0.8, 0.0, 1.0];
        let top = exact_top_k(&[0.0, 1.0], &ids, &vectors, 3).unwrap();
        assert_eq!(top, [(11, 1.0), (13, 1.0), (12, 0.8)]);
        assert!(matches!(
            exact_top_k(&[0.0, 1.0], &ids, &vectors[..7], 3),
            Err(Error::Shape { .. })
        ));
    }

    #[test]
    fn recall_counts_ties_at_the_kth_score() {
        let truth = [(1, 0.9), (2, 0.8), (3, 0.7)];
        assert_eq!(recall_at_k(&truth, &[(1, 0.9), (2, 0.8), (3, 0.7)], 3), 1.0);
        // Id 9 ties the third score: a hit. Id 8 is below it: a miss.
        assert_eq!(recall_at_k(&truth, &[(1, 0.9), (9, 0.7), (3, 0.7)], 3), 1.0);
        assert!(
            (recall_at_k(&truth, &[(1, 0.9), (8, 0.6), (3, 0.7)], 3) - 2.0 / 3.0).abs() < 1e-12
        );
        assert_eq!(recall_at_k(&truth, &[(1, 0.9)], 3), 1.0 / 3.0);
        assert_eq!(recall_at_k(&[], &[], 10), 1.0);
        assert_eq!(recall_at_k(&truth, &[(1, 0.9), (2, 0.8)], 2), 1.0);
    }
}
