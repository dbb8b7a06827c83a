//! BM25 scoring and the document-at-a-time merge of a question's posting lists.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap};

use crate::decoded::Decoded;
use crate::error::Error;
use crate::postings::{ListView, impact_of};

/// BM25's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25 {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation (0: none, 1: full).
    pub b: f64,
}

impl Bm25 {
    /// The parameters of FTS5's `bm25()`, so scores of both are on one scale.
    pub const FTS5: Bm25 = Bm25 { k1: 1.2, b: 0.75 };

    /// Inverse document frequency of a term in `df` of `docs` documents, FTS5's formula:
    /// `ln((N − n + 0.5) / (n + 0.5))`, floored at 1e-6 so a very common term still counts a
    /// little.
    pub fn idf(self, docs: u64, df: u64) -> f64 {
        let (n, df) = (docs as f64, df as f64);
        let idf = ((n - df + 0.5) / (df + 0.5)).ln();
        if idf > 0.0 { idf } else { 1e-6 }
    }

    /// The term-frequency part of a term's contribution:
    /// `tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avg_len))`.
    pub fn impact(self, tf: u32, len: u32, avg_len: f64) -> f64 {
        let tf = f64::from(tf);
        let norm = if avg_len > 0.0 { f64::from(len) / avg_len } else { 1.0 };
        tf * (self.k1 + 1.0) / (tf + self.k1 * (1.0 - self.b + self.b * norm))
    }

    /// A term's contribution to a document's score: `idf × impact`.
    pub fn term_score(self, idf: f64, tf: u32, len: u32, avg_len: f64) -> f64 {
        idf * self.impact(tf, len, avg_len)
    }
}

/// One term of a question: its idf and its stored posting list.
#[derive(Debug, Clone, Copy)]
pub struct QueryTerm<'a> {
    /// The term's inverse document frequency ([`Bm25::idf`]); a non-positive one counts as
    /// FTS5's floor, 1e-6.
    pub idf: f64,
    /// The blob written by [`crate::encode`].
    pub postings: &'a [u8],
}

/// A candidate in the bounded heap: the worst kept one on top (lowest score, then highest id).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Kept(f64, i64);

impl Eq for Kept {}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then_with(|| other.1.cmp(&self.1))
    }
}

/// Document ids up to this are scored in blocks of a dense array; beyond, in a sorted map
/// (slower, bounded memory).
const DENSE_LIMIT: i64 = 1 << 24;

/// Documents per accumulation block (2^14): the block's scores (128 KiB of f64) stay in the
/// cache, where one array over every document id of a large store would not, and every
/// posting would be a cache miss.
const BLOCK_BITS: u32 = 14;

/// Reusable memory for [`top_k`]: one block of scores, the postings read and the same postings
/// grouped by block, so a search allocates little once warm. Keep one per thread.
#[derive(Debug, Default)]
pub struct Scratch {
    scores: Vec<f64>,
    touched: Vec<u32>,
    /// `(document, index of its segment among those read)`, in reading order.
    read: Vec<(u32, u32)>,
    /// The same, grouped by block, reading order kept within each block.
    grouped: Vec<(u32, u32)>,
    /// Where each block's postings start in `grouped`.
    starts: Vec<usize>,
    /// Where the next posting of each block goes while grouping.
    next: Vec<usize>,
}

/// The `k` documents with the highest BM25 score summed over `terms`, best first (ties: lower
/// id first), reading at most `max_postings` postings.
///
/// Score at a time: every list's segments (documents of one impact level) are read in
/// decreasing order of what they add, `idf × impact`, across all terms, until the next
/// segment would pass `max_postings` (the first is always read). The result is exact (for the
/// quantized impacts) when the question's lists hold at most `max_postings` postings; beyond,
/// the postings worth least are the ones left out, so the cost of a search is bounded however
/// large the store and however common its words.
pub fn top_k(
    terms: &[QueryTerm<'_>],
    bm25: Bm25,
    k: usize,
    max_postings: usize,
    scratch: &mut Scratch,
) -> Result<Vec<(i64, f64)>, Error> {
    if k == 0 || terms.is_empty() {
        return Ok(Vec::new());
    }
    let mut lists = Vec::with_capacity(terms.len());
    for term in terms {
        lists.push((term.idf, Source::Blob(ListView::parse(term.postings)?)));
    }
    rank(&lists, bm25, k, max_postings, scratch)
}

/// [`top_k`] over decoded lists (`(idf, list)` per term): the same documents and scores to
/// the bit, without decoding the lists again.
pub fn top_k_decoded(
    terms: &[(f64, &Decoded)],
    bm25: Bm25,
    k: usize,
    max_postings: usize,
    scratch: &mut Scratch,
) -> Result<Vec<(i64, f64)>, Error> {
    if k == 0 || terms.is_empty() {
        return Ok(Vec::new());
    }
    let lists: Vec<(f64, Source<'_>)> =
        terms.iter().map(|&(idf, list)| (idf, Source::Decoded(list))).collect();
    rank(&lists, bm25, k, max_postings, scratch)
}

/// A question's list as stored or as decoded.
#[derive(Clone, Copy)]
enum Source<'a> {
    Blob(ListView<'a>),
    Decoded(&'a Decoded),
}

impl Source<'_> {
    fn segments(&self) -> usize {
        match self {
            Source::Blob(v) => v.segments(),
            Source::Decoded(d) => d.segments(),
        }
    }

    fn level(&self, s: usize) -> u8 {
        match self {
            Source::Blob(v) => v.level(s),
            Source::Decoded(d) => d.level(s),
        }
    }

    fn len(&self, s: usize) -> u32 {
        match self {
            Source::Blob(v) => v.len(s),
            Source::Decoded(d) => d.docs(s).len() as u32,
        }
    }

    fn max_doc(&self, s: usize) -> i64 {
        match self {
            Source::Blob(v) => v.max_doc(s),
            Source::Decoded(d) => d.docs(s).last().map_or(0, |&doc| i64::from(doc)),
        }
    }

    fn for_each(&self, s: usize, mut visit: impl FnMut(i64)) -> Result<(), Error> {
        match self {
            Source::Blob(v) => v.for_each(s, visit),
            Source::Decoded(d) => {
                d.docs(s).iter().for_each(|&doc| visit(i64::from(doc)));
                Ok(())
            }
        }
    }
}

/// [`top_k`] over parsed or decoded lists, `(idf, list)` per term.
fn rank(
    lists: &[(f64, Source<'_>)],
    bm25: Bm25,
    k: usize,
    max_postings: usize,
    scratch: &mut Scratch,
) -> Result<Vec<(i64, f64)>, Error> {
    let views: Vec<Source<'_>> = lists.iter().map(|(_, v)| *v).collect();
    // (what each posting adds, term, segment), best first; a non-positive idf counts as
    // FTS5's floor so that every score is positive (0 marks an untouched slot).
    let mut order: Vec<(f64, usize, usize)> = Vec::new();
    for (t, (idf, view)) in lists.iter().enumerate() {
        let idf = if *idf > 0.0 { *idf } else { 1e-6 };
        for s in 0..view.segments() {
            order.push((idf * impact_of(bm25, view.level(s)), t, s));
        }
    }
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut read = 0usize;
    let mut chosen = Vec::with_capacity(order.len());
    let mut max_doc = 0;
    for &(add, t, s) in &order {
        let len = views[t].len(s) as usize;
        if read > 0 && read + len > max_postings {
            break;
        }
        read += len;
        chosen.push((add, t, s));
        max_doc = max_doc.max(views[t].max_doc(s));
    }
    let mut out = if max_doc < DENSE_LIMIT {
        blocked(&views, &chosen, max_doc, k, scratch)?
    } else {
        let mut map: BTreeMap<i64, f64> = BTreeMap::new();
        for &(add, t, s) in &chosen {
            views[t].for_each(s, &mut |doc| *map.entry(doc).or_insert(0.0) += add)?;
        }
        best_k(map.into_iter(), k)
    };
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(out)
}

/// The best `k` of the `chosen` segments' documents (all below [`DENSE_LIMIT`]), in no
/// particular order, summed block by block: the postings are read in order, grouped by block
/// of document ids (a stable counting sort), and each block summed in a small array. Every
/// document receives its additions in the order of `chosen`, as a sum posting by posting
/// would, so the scores are the same to the bit.
fn blocked(
    views: &[Source<'_>],
    chosen: &[(f64, usize, usize)],
    max_doc: i64,
    k: usize,
    scratch: &mut Scratch,
) -> Result<Vec<(i64, f64)>, Error> {
    let Scratch { scores, touched, read, grouped, starts, next } = scratch;
    // Decoded lists are grouped straight from their segments; stored ones are decoded into
    // `read` first. Either way the postings go in the order of `chosen`, each segment ascending.
    let slices: Option<Vec<&[u32]>> = chosen
        .iter()
        .map(|&(_, t, s)| match &views[t] {
            Source::Decoded(d) => Some(d.docs(s)),
            Source::Blob(_) => None,
        })
        .collect();
    read.clear();
    if slices.is_none() {
        for (i, &(_, t, s)) in chosen.iter().enumerate() {
            // Both fit in u32: ids are below DENSE_LIMIT, and segments are at most 255 per term.
            let i = i as u32;
            views[t].for_each(s, |doc| read.push((doc as u32, i)))?;
        }
    }
    let total = slices.as_ref().map_or(read.len(), |s| s.iter().map(|d| d.len()).sum());
    if total == 0 {
        return Ok(Vec::new());
    }
    // Decoding checked every segment's last document against its `max_doc`.
    let blocks = (max_doc >> BLOCK_BITS) as usize + 1;
    starts.clear();
    starts.resize(blocks + 1, 0);
    match &slices {
        Some(slices) => {
            for &doc in slices.iter().flat_map(|d| d.iter()) {
                starts[(doc >> BLOCK_BITS) as usize + 1] += 1;
            }
        }
        None => {
            for &(doc, _) in read.iter() {
                starts[(doc >> BLOCK_BITS) as usize + 1] += 1;
            }
        }
    }
    for b in 0..blocks {
        starts[b + 1] += starts[b];
    }
    grouped.clear();
    grouped.resize(total, (0, 0));
    next.clear();
    next.extend_from_slice(&starts[..blocks]);
    let mut place = |doc: u32, i: u32| {
        let at = &mut next[(doc >> BLOCK_BITS) as usize];
        grouped[*at] = (doc, i);
        *at += 1;
    };
    match &slices {
        Some(slices) => {
            for (i, docs) in slices.iter().enumerate() {
                for &doc in docs.iter() {
                    place(doc, i as u32);
                }
            }
        }
        None => read.iter().for_each(|&(doc, i)| place(doc, i)),
    }
    // Zero once: every slot a block touches is set back to 0 before the next block.
    scores.resize(1 << BLOCK_BITS, 0.0);
    let mask = (1u32 << BLOCK_BITS) - 1;
    let mut best = Best::new(k);
    for b in 0..blocks {
        for &(doc, i) in &grouped[starts[b]..starts[b + 1]] {
            let slot = &mut scores[(doc & mask) as usize];
            if *slot == 0.0 {
                touched.push(doc);
            }
            *slot += chosen[i as usize].0;
        }
        for &doc in touched.iter() {
            let slot = &mut scores[(doc & mask) as usize];
            best.push(i64::from(doc), *slot);
            *slot = 0.0;
        }
        touched.clear();
    }
    Ok(best.into_vec())
}

/// The `k` best `(document, score)` pairs pushed so far.
struct Best {
    k: usize,
    heap: BinaryHeap<Reverse<Kept>>,
}

impl Best {
    fn new(k: usize) -> Best {
        Best { k, heap: BinaryHeap::with_capacity(k + 1) }
    }

    fn push(&mut self, doc: i64, score: f64) {
        let kept = Kept(score, doc);
        if self.heap.len() < self.k {
            self.heap.push(Reverse(kept));
        } else if self.heap.peek().is_some_and(|worst| kept > worst.0) {
            self.heap.pop();
            self.heap.push(Reverse(kept));
        }
    }

    /// In no particular order.
    fn into_vec(self) -> Vec<(i64, f64)> {
        self.heap.into_iter().map(|Reverse(Kept(s, d))| (d, s)).collect()
    }
}

/// The `k` best `(document, score)` pairs, in no particular order.
fn best_k(all: impl Iterator<Item = (i64, f64)>, k: usize) -> Vec<(i64, f64)> {
    let mut best = Best::new(k);
    for (doc, score) in all {
        best.push(doc, score);
    }
    best.into_vec()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::postings::{Posting, encode, level};
    use crate::{Decoded, top_k_decoded};

    const AVG: f64 = 9.0;

    /// Brute force: every posting's quantized score summed per document, sorted.
    fn brute(lists: &[(f64, Vec<Posting>)], k: usize) -> Vec<(i64, f64)> {
        let mut sums: BTreeMap<i64, f64> = BTreeMap::new();
        for (idf, list) in lists {
            for p in list {
                *sums.entry(p.doc).or_default() +=
                    idf * impact_of(Bm25::FTS5, level(Bm25::FTS5, p.tf, p.len, AVG));
            }
        }
        let mut out: Vec<(i64, f64)> = sums.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out.truncate(k);
        out
    }

    /// Per term: its idf and, per document, `(tf, extra length)`.
    type RawLists = Vec<(f64, BTreeMap<i64, (u32, u32)>)>;

    fn lists_of(raw: RawLists, shift: i64) -> Vec<(f64, Vec<Posting>)> {
        raw.into_iter()
            .map(|(idf, docs)| {
                let list = docs
                    .into_iter()
                    .map(|(doc, (tf, extra))| Posting { doc: doc + shift, tf, len: tf + extra })
                    .collect();
                (idf, list)
            })
            .collect()
    }

    /// The same lists with every id moved past the dense limit (scored in a map).
    fn past_dense_limit(lists: &[(f64, Vec<Posting>)]) -> Vec<(f64, Vec<Posting>)> {
        lists
            .iter()
            .map(|(idf, l)| {
                (*idf, l.iter().map(|p| Posting { doc: p.doc + DENSE_LIMIT, ..*p }).collect())
            })
            .collect()
    }

    fn search(
        lists: &[(f64, Vec<Posting>)],
        k: usize,
        max: usize,
        scratch: &mut Scratch,
    ) -> Vec<(i64, f64)> {
        let blobs: Vec<Vec<u8>> =
            lists.iter().map(|(_, l)| encode(l, Bm25::FTS5, AVG).unwrap()).collect();
        let terms: Vec<QueryTerm<'_>> = lists
            .iter()
            .zip(&blobs)
            .map(|((idf, _), b)| QueryTerm { idf: *idf, postings: b })
            .collect();
        top_k(&terms, Bm25::FTS5, k, max, scratch).unwrap()
    }

    /// [`search`] through decoded lists.
    fn search_decoded(
        lists: &[(f64, Vec<Posting>)],
        k: usize,
        max: usize,
        scratch: &mut Scratch,
    ) -> Vec<(i64, f64)> {
        let decoded: Vec<Decoded> = lists
            .iter()
            .map(|(_, l)| Decoded::new(&encode(l, Bm25::FTS5, AVG).unwrap()).unwrap())
            .collect();
        let terms: Vec<(f64, &Decoded)> =
            lists.iter().zip(&decoded).map(|((idf, _), d)| (*idf, d)).collect();
        top_k_decoded(&terms, Bm25::FTS5, k, max, scratch).unwrap()
    }

    fn bits(hits: Vec<(i64, f64)>) -> Vec<(i64, u64)> {
        hits.into_iter().map(|(d, s)| (d, s.to_bits())).collect()
    }

    fn same(got: &[(i64, f64)], want: &[(i64, f64)]) -> Result<(), TestCaseError> {
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            prop_assert_eq!(g.0, w.0);
            prop_assert!((g.1 - w.1).abs() < 1e-9);
        }
        Ok(())
    }

    #[test]
    fn idf_and_impact_follow_the_fts5_formula() {
        let bm25 = Bm25::FTS5;
        assert!((bm25.idf(100, 1) - (99.5f64 / 1.5).ln()).abs() < 1e-12);
        assert_eq!(bm25.idf(10, 9), 1e-6);
        // Longer documents score lower at equal tf; more occurrences score higher.
        assert!(bm25.term_score(1.0, 1, 5, 10.0) > bm25.term_score(1.0, 1, 20, 10.0));
        assert!(bm25.term_score(1.0, 2, 10, 10.0) > bm25.term_score(1.0, 1, 10, 10.0));
        // tf = 1 in a document of average length: (k1 + 1) / (1 + k1) = 1.
        assert!((bm25.impact(1, 10, 10.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn a_segment_past_its_table_maximum_is_corrupt() {
        let list = [Posting { doc: 5, tf: 1, len: 9 }, Posting { doc: 40_000, tf: 1, len: 9 }];
        let mut blob = crate::encode(&list, Bm25::FTS5, 9.0).unwrap();
        // The one segment's table entry claims a highest document below its last.
        blob[24 + 9..24 + 17].copy_from_slice(&7i64.to_le_bytes());
        let terms = [QueryTerm { idf: 1.0, postings: &blob }];
        let got = top_k(&terms, Bm25::FTS5, 3, usize::MAX, &mut Scratch::default());
        assert!(matches!(got, Err(Error::Corrupt(_))), "{got:?}");
    }

    #[test]
    fn a_budget_keeps_the_postings_worth_most() {
        // A rare word in documents 1 and 2, a common one in 0..300 (and 2).
        let rare =
            (5.0, vec![Posting { doc: 1, tf: 1, len: 9 }, Posting { doc: 2, tf: 1, len: 9 }]);
        let common = (0.1, (0..300).map(|doc| Posting { doc, tf: 1, len: 9 }).collect());
        let lists = vec![rare, common];
        let mut scratch = Scratch::default();
        let exact = search(&lists, 3, usize::MAX, &mut scratch);
        assert_eq!(exact.iter().map(|h| h.0).collect::<Vec<_>>(), [1, 2, 0]);
        // Two postings allowed: the rare word's only.
        let cut = search(&lists, 3, 2, &mut scratch);
        assert_eq!(cut.iter().map(|h| h.0).collect::<Vec<_>>(), [1, 2]);
    }

    proptest! {
        #[test]
        fn unbounded_search_equals_brute_force(
            raw in proptest::collection::vec(
                (-1.0f64..5.0, proptest::collection::btree_map(0i64..300, (1u32..4, 0u32..20), 0..120)),
                0..5),
            k in 0usize..40,
        ) {
            let lists = lists_of(raw, 0);
            let floored: Vec<(f64, Vec<Posting>)> =
                lists.iter().map(|(idf, l)| (if *idf > 0.0 { *idf } else { 1e-6 }, l.clone())).collect();
            let want_floored = brute(&floored, k);
            let mut scratch = Scratch::default();
            // Twice with one scratch (it must come back clean), then past the dense limit.
            for _ in 0..2 {
                same(&search(&lists, k, usize::MAX, &mut scratch), &want_floored)?;
            }
            let far = past_dense_limit(&floored);
            same(&search(&far, k, usize::MAX, &mut scratch), &brute(&far, k))?;
        }

        #[test]
        fn block_sums_equal_posting_by_posting_sums_to_the_bit(
            raw in proptest::collection::vec(
                (0.01f64..8.0, proptest::collection::btree_map(0i64..100_000, (1u32..4, 0u32..30), 1..400)),
                1..5),
            k in 1usize..80,
            max in 1usize..2000,
        ) {
            // Ids spread over several blocks; the same lists past the dense limit are summed
            // posting by posting in a map, in the same order of segments.
            let lists = lists_of(raw, 0);
            let mut scratch = Scratch::default();
            let blocked = search(&lists, k, max, &mut scratch);
            let far = past_dense_limit(&lists);
            let mapped: Vec<(i64, u64)> = search(&far, k, max, &mut scratch)
                .into_iter()
                .map(|(d, s)| (d - DENSE_LIMIT, s.to_bits()))
                .collect();
            let blocked: Vec<(i64, u64)> = blocked.into_iter().map(|(d, s)| (d, s.to_bits())).collect();
            prop_assert_eq!(blocked, mapped);
            // The scratch comes back clean: a second search gives the same.
            prop_assert_eq!(search(&lists, k, max, &mut scratch), search(&lists, k, max, &mut Scratch::default()));
        }

        #[test]
        fn decoded_lists_search_as_stored_ones_to_the_bit(
            raw in proptest::collection::vec(
                (-1.0f64..8.0, proptest::collection::btree_map(0i64..60_000, (1u32..5, 0u32..40), 0..500)),
                0..6),
            repeat in proptest::option::of(0usize..6),
            k in 0usize..120,
            max in 1usize..3000,
            far in any::<bool>(),
        ) {
            // Repeated terms, empty lists, non-positive idfs, budgets that cut inside a term,
            // k beyond the matches, and ids past the dense limit (summed in a map).
            let mut lists = lists_of(raw, 0);
            if let Some(r) = repeat.filter(|&r| r < lists.len()) {
                lists.push(lists[r].clone());
            }
            if far {
                lists = past_dense_limit(&lists);
            }
            let mut scratch = Scratch::default();
            for max in [max, usize::MAX] {
                let stored = bits(search(&lists, k, max, &mut scratch));
                prop_assert_eq!(bits(search_decoded(&lists, k, max, &mut scratch)), stored);
            }
        }

        #[test]
        fn a_bounded_search_is_the_exact_ranking_of_what_it_read(
            raw in proptest::collection::vec(
                (0.01f64..8.0, proptest::collection::btree_map(0i64..3000, (1u32..4, 0u32..30), 1..500)),
                1..5),
            k in 1usize..60,
            max in 1usize..1500,
        ) {
            let lists = lists_of(raw, 0);
            let got = search(&lists, k, max, &mut Scratch::default());
            prop_assert!(got.len() <= k);
            prop_assert!(got.windows(2).all(|w| w[0].1 > w[1].1 || (w[0].1 == w[1].1 && w[0].0 < w[1].0)));
            // Never more than the exact scores.
            let exact: BTreeMap<i64, f64> = brute(&lists, usize::MAX).into_iter().collect();
            for (doc, score) in &got {
                prop_assert!(*score <= exact[doc] + 1e-9);
            }
            let total: usize = lists.iter().map(|(_, l)| l.len()).sum();
            if max >= total {
                same(&got, &brute(&lists, k))?;
            }
        }
    }
}
