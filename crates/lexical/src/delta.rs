//! Posting lists of the documents written since the last build, kept in memory and ranked
//! exactly with FTS5's `bm25()`.
//!
//! A store between two builds of the lexical index ranked its newer documents in the full-text
//! index, which calls its ranking function once per matching document. A [`Delta`] holds the
//! same documents' terms, appended as they are written (in commit order, each with the version
//! of the store that added it), so a search reads the question's few lists from memory and
//! scores each posting with [`Bm25::term_score`] over the statistics the caller gives: FTS5's
//! own (the whole index's document count, mean length and document frequencies), so its hits
//! merge with the lexical index's into one ranking. A reader whose snapshot is older than the
//! delta uses the prefix its version covers ([`Delta::upto`]).

use std::collections::BTreeMap;

use crate::error::Error;
use crate::rank::Bm25;

/// The documents written since a build, with their terms, in the order they were written.
#[derive(Debug, Clone, Default)]
pub struct Delta {
    /// Per term, its postings `(slot, term frequency)`, slots ascending.
    terms: BTreeMap<String, Vec<(u32, u32)>>,
    /// Per slot (arrival order): the document id, its length in tokens, the version that
    /// added it (non-decreasing) and the version that removed it (`u64::MAX`: none yet).
    ids: Vec<i64>,
    lens: Vec<u32>,
    versions: Vec<u64>,
    removed_at: Vec<u64>,
    /// `tokens[i]`: the tokens of slots `0..i`.
    tokens: Vec<u64>,
    /// The slot holding each document's current text.
    live: BTreeMap<i64, u32>,
    /// Removals in version order, `(version, slot)`, and the tokens they took, summed.
    removals: Vec<(u64, u32)>,
    removed_tokens: Vec<u64>,
}

/// A question's term for [`Delta::top_k`]: its text and its inverse document frequency.
#[derive(Debug, Clone, Copy)]
pub struct DeltaTerm<'a> {
    /// The index term, as the tokenizer gives it.
    pub term: &'a str,
    /// Its idf ([`Bm25::idf`]) under the caller's statistics.
    pub idf: f64,
}

/// Reusable memory for [`Delta::top_k`]: a score per slot and the slots touched. Keep one per
/// thread.
#[derive(Debug, Default)]
pub struct DeltaScratch {
    scores: Vec<f64>,
    touched: Vec<u32>,
}

impl Delta {
    /// An empty delta.
    pub fn new() -> Delta {
        Delta { tokens: vec![0], removed_tokens: vec![0], ..Delta::default() }
    }

    /// Documents held now (removed ones left out).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Slots taken: the documents held now and the texts replaced or removed since the last
    /// [`Delta::retain_above`], which drops the latter.
    pub fn slots(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no document now.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Add document `id` at store version `version` with its terms and their frequencies (each
    /// term once; the document's length is the sum of the frequencies, as FTS5 counts tokens).
    /// A document held already is replaced: its old text is removed at `version`.
    pub fn push(&mut self, id: i64, version: u64, terms: &[(String, u32)]) -> Result<(), Error> {
        if self.versions.last().is_some_and(|&v| v > version)
            || self.removals.last().is_some_and(|&(v, _)| v > version)
        {
            return Err(Error::Input {
                what: "version",
                detail: format!("document {id} at version {version} after a later version"),
            });
        }
        let slot = u32::try_from(self.ids.len()).map_err(|_| Error::Input {
            what: "doc",
            detail: format!("document {id}: the delta holds {} documents", self.ids.len()),
        })?;
        let mut seen = std::collections::BTreeSet::new();
        if let Some((term, _)) = terms.iter().find(|(t, _)| !seen.insert(t.as_str())) {
            return Err(Error::Input {
                what: "term",
                detail: format!("document {id}: term {term:?} given twice"),
            });
        }
        self.remove(id, version);
        let mut len: u32 = 0;
        for (term, tf) in terms {
            len = len.saturating_add(*tf);
            self.terms.entry(term.clone()).or_default().push((slot, *tf));
        }
        self.ids.push(id);
        self.lens.push(len);
        self.versions.push(version);
        self.removed_at.push(u64::MAX);
        let total = self.tokens.last().copied().unwrap_or(0);
        self.tokens.push(total + u64::from(len));
        self.live.insert(id, slot);
        Ok(())
    }

    /// Remove document `id` at store version `version` (nothing when it is not held).
    pub fn remove(&mut self, id: i64, version: u64) {
        let Some(slot) = self.live.remove(&id) else { return };
        let at = slot as usize;
        self.removed_at[at] = version;
        self.removals.push((version, slot));
        let total = self.removed_tokens.last().copied().unwrap_or(0);
        self.removed_tokens.push(total + u64::from(self.lens[at]));
    }

    /// How many slots were added at `version` or before: the prefix a snapshot at that version
    /// reads.
    fn upto(&self, version: u64) -> usize {
        self.versions.partition_point(|&v| v <= version)
    }

    /// Whether slot `at` holds a document a snapshot at `version` sees.
    fn visible(&self, at: usize, version: u64) -> bool {
        self.versions[at] <= version && self.removed_at[at] > version
    }

    /// Documents a snapshot at `version` sees.
    pub fn docs_at(&self, version: u64) -> u64 {
        let removed = self.removals.partition_point(|&(v, _)| v <= version);
        (self.upto(version) - removed) as u64
    }

    /// Tokens of the documents a snapshot at `version` sees.
    pub fn tokens_at(&self, version: u64) -> u64 {
        let removed = self.removals.partition_point(|&(v, _)| v <= version);
        self.tokens[self.upto(version)] - self.removed_tokens[removed]
    }

    /// Documents a snapshot at `version` sees that contain `term`.
    pub fn df_at(&self, term: &str, version: u64) -> u64 {
        let n = self.upto(version);
        self.terms.get(term).map_or(0, |list| {
            list.iter()
                .take_while(|&&(s, _)| (s as usize) < n)
                .filter(|&&(s, _)| self.visible(s as usize, version))
                .count() as u64
        })
    }

    /// The ids of the documents held now, in the order their texts were written.
    pub fn ids(&self) -> Vec<i64> {
        let mut slots: Vec<u32> = self.live.values().copied().collect();
        slots.sort_unstable();
        slots.into_iter().map(|s| self.ids[s as usize]).collect()
    }

    /// Keep only the documents held now with an id above `base` (a build now covers the
    /// others), in their order, with their versions; what was removed goes.
    pub fn retain_above(&mut self, base: i64) {
        let mut kept: Vec<usize> =
            self.live.iter().filter(|&(&id, _)| id > base).map(|(_, &s)| s as usize).collect();
        kept.sort_unstable();
        if kept.len() == self.ids.len() {
            return;
        }
        let mut slot_of = vec![u32::MAX; self.ids.len()];
        for (new, &old) in kept.iter().enumerate() {
            slot_of[old] = new as u32;
        }
        let mut terms = BTreeMap::new();
        for (term, list) in std::mem::take(&mut self.terms) {
            let list: Vec<(u32, u32)> = list
                .into_iter()
                .filter_map(|(s, tf)| {
                    let new = slot_of[s as usize];
                    (new != u32::MAX).then_some((new, tf))
                })
                .collect();
            if !list.is_empty() {
                terms.insert(term, list);
            }
        }
        let mut out = Delta::new();
        out.terms = terms;
        for (new, &i) in kept.iter().enumerate() {
            out.ids.push(self.ids[i]);
            out.lens.push(self.lens[i]);
            out.versions.push(self.versions[i]);
            out.removed_at.push(u64::MAX);
            let total = out.tokens.last().copied().unwrap_or(0);
            out.tokens.push(total + u64::from(self.lens[i]));
            out.live.insert(self.ids[i], new as u32);
        }
        *self = out;
    }

    /// The `k` best documents a snapshot at `version` sees, by BM25 summed over `terms` (each
    /// term's postings scored with [`Bm25::term_score`] at `avg_len`), best first, ties by
    /// lower id, as `(document id, score)`. Only documents matching a term are returned.
    pub fn top_k(
        &self,
        version: u64,
        terms: &[DeltaTerm<'_>],
        bm25: Bm25,
        avg_len: f64,
        k: usize,
        scratch: &mut DeltaScratch,
    ) -> Vec<(i64, f64)> {
        let n = self.upto(version);
        if k == 0 || n == 0 {
            return Vec::new();
        }
        let DeltaScratch { scores, touched } = scratch;
        scores.clear();
        scores.resize(n, 0.0);
        touched.clear();
        for term in terms {
            let Some(list) = self.terms.get(term.term) else { continue };
            let idf = if term.idf > 0.0 { term.idf } else { 1e-6 };
            for &(slot, tf) in list.iter().take_while(|&&(s, _)| (s as usize) < n) {
                let at = slot as usize;
                if !self.visible(at, version) {
                    continue;
                }
                if scores[at] == 0.0 {
                    touched.push(slot);
                }
                scores[at] += bm25.term_score(idf, tf, self.lens[at], avg_len);
            }
        }
        let mut hits: Vec<(i64, f64)> =
            touched.iter().map(|&s| (self.ids[s as usize], scores[s as usize])).collect();
        let order = |a: &(i64, f64), b: &(i64, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            hits.select_nth_unstable_by(k - 1, order);
            hits.truncate(k);
        }
        hits.sort_unstable_by(order);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(terms: &[(&str, u32)]) -> Vec<(String, u32)> {
        terms.iter().map(|(t, f)| ((*t).to_owned(), *f)).collect()
    }

    #[test]
    fn snapshots_see_the_documents_of_their_version() {
        let mut d = Delta::new();
        d.push(7, 1, &doc(&[("a", 2), ("b", 1)])).unwrap();
        d.push(3, 2, &doc(&[("a", 1)])).unwrap();
        d.push(9, 2, &doc(&[("c", 4)])).unwrap();
        let at = |v| d.docs_at(v);
        assert_eq!((at(0), at(1), at(2), at(5)), (0, 1, 3, 3));
        assert_eq!((d.tokens_at(1), d.tokens_at(2)), (3, 8));
        assert_eq!((d.df_at("a", 1), d.df_at("a", 2), d.df_at("z", 2)), (1, 2, 0));
        assert!(d.push(1, 1, &doc(&[("a", 1)])).is_err(), "versions never go back");
        assert!(d.push(1, 3, &doc(&[("a", 1), ("a", 1)])).is_err(), "a term once per document");
        // Document 7 rewritten at 3, document 3 removed at 4.
        d.push(7, 3, &doc(&[("c", 1)])).unwrap();
        d.remove(3, 4);
        assert_eq!((d.docs_at(2), d.docs_at(3), d.docs_at(4)), (3, 3, 2));
        assert_eq!((d.tokens_at(2), d.tokens_at(3), d.tokens_at(4)), (8, 6, 5));
        assert_eq!((d.df_at("a", 2), d.df_at("a", 3), d.df_at("c", 3)), (2, 1, 2));
        let terms = [DeltaTerm { term: "a", idf: 1.0 }, DeltaTerm { term: "c", idf: 1.0 }];
        let mut s = DeltaScratch::default();
        let mut ids = |v| {
            let mut ids: Vec<i64> =
                d.top_k(v, &terms, Bm25::FTS5, 2.0, 9, &mut s).iter().map(|h| h.0).collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!((ids(2), ids(3), ids(4)), (vec![3, 7, 9], vec![3, 7, 9], vec![7, 9]));
        assert_eq!(d.len(), 2);
    }

    #[test]
    fn scores_are_bm25_over_the_prefix() {
        let mut d = Delta::new();
        d.push(10, 1, &doc(&[("a", 2), ("b", 1)])).unwrap();
        d.push(11, 1, &doc(&[("a", 1)])).unwrap();
        d.push(12, 2, &doc(&[("b", 1)])).unwrap();
        let bm25 = Bm25::FTS5;
        let terms = [DeltaTerm { term: "a", idf: 0.5 }, DeltaTerm { term: "b", idf: 2.0 }];
        let mut scratch = DeltaScratch::default();
        let top = d.top_k(1, &terms, bm25, 2.0, 10, &mut scratch);
        let s10 = bm25.term_score(0.5, 2, 3, 2.0) + bm25.term_score(2.0, 1, 3, 2.0);
        let s11 = bm25.term_score(0.5, 1, 1, 2.0);
        assert_eq!(top, vec![(10, s10), (11, s11)]);
        let all = d.top_k(2, &terms, bm25, 2.0, 2, &mut scratch);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, 12, "the short document with the rare term wins");
    }

    #[test]
    fn retaining_above_a_base_drops_the_built_and_removed_documents() {
        let mut d = Delta::new();
        d.push(5, 1, &doc(&[("a", 1)])).unwrap();
        d.push(2, 1, &doc(&[("a", 1), ("b", 2)])).unwrap();
        d.push(8, 3, &doc(&[("b", 1)])).unwrap();
        d.push(6, 3, &doc(&[("b", 1)])).unwrap();
        d.remove(6, 4);
        d.retain_above(4);
        assert_eq!(d.ids(), vec![5, 8]);
        assert_eq!((d.df_at("a", 4), d.df_at("b", 4), d.tokens_at(4)), (1, 1, 2));
        assert_eq!((d.docs_at(1), d.docs_at(3)), (1, 2));
        let mut fresh = Delta::new();
        fresh.push(5, 1, &doc(&[("a", 1)])).unwrap();
        fresh.push(8, 3, &doc(&[("b", 1)])).unwrap();
        let terms = [DeltaTerm { term: "a", idf: 1.0 }, DeltaTerm { term: "b", idf: 1.0 }];
        let mut s = DeltaScratch::default();
        assert_eq!(
            d.top_k(4, &terms, Bm25::FTS5, 1.0, 5, &mut s),
            fresh.top_k(4, &terms, Bm25::FTS5, 1.0, 5, &mut s)
        );
    }
}
