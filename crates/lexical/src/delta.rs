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
    /// Per slot (arrival order): the document id, its length in tokens and the version that
    /// added it (non-decreasing).
    ids: Vec<i64>,
    lens: Vec<u32>,
    versions: Vec<u64>,
    /// `tokens[i]`: the tokens of slots `0..i`.
    tokens: Vec<u64>,
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
        Delta { tokens: vec![0], ..Delta::default() }
    }

    /// Documents held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether it holds no document.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Append document `id`, added at store version `version`, with its terms and their
    /// frequencies (each term once; the document's length is the sum of the frequencies, as
    /// FTS5 counts tokens).
    pub fn push(&mut self, id: i64, version: u64, terms: &[(String, u32)]) -> Result<(), Error> {
        if self.versions.last().is_some_and(|&v| v > version) {
            return Err(Error::Input {
                what: "version",
                detail: format!("document {id} at version {version} after a later version"),
            });
        }
        let slot = u32::try_from(self.ids.len()).map_err(|_| Error::Input {
            what: "doc",
            detail: format!("document {id}: the delta holds {} documents", self.ids.len()),
        })?;
        let mut len: u32 = 0;
        for (term, tf) in terms {
            len = len.saturating_add(*tf);
            let list = self.terms.entry(term.clone()).or_default();
            if list.last().is_some_and(|&(s, _)| s == slot) {
                return Err(Error::Input {
                    what: "term",
                    detail: format!("document {id}: term {term:?} given twice"),
                });
            }
            list.push((slot, *tf));
        }
        self.ids.push(id);
        self.lens.push(len);
        self.versions.push(version);
        let total = self.tokens.last().copied().unwrap_or(0);
        self.tokens.push(total + u64::from(len));
        Ok(())
    }

    /// How many of the first documents were added at `version` or before: the prefix a
    /// snapshot at that version sees.
    pub fn upto(&self, version: u64) -> usize {
        self.versions.partition_point(|&v| v <= version)
    }

    /// Tokens of the first `n` documents.
    pub fn tokens(&self, n: usize) -> u64 {
        self.tokens.get(n.min(self.ids.len())).copied().unwrap_or(0)
    }

    /// Documents among the first `n` that contain `term`.
    pub fn df(&self, term: &str, n: usize) -> u64 {
        self.terms.get(term).map_or(0, |list| list.partition_point(|&(s, _)| (s as usize) < n))
            as u64
    }

    /// The document ids of the first `n` documents.
    pub fn ids(&self, n: usize) -> &[i64] {
        &self.ids[..n.min(self.ids.len())]
    }

    /// Keep only the documents with an id above `base` (a build now covers the others), in
    /// their order, with their versions.
    pub fn retain_above(&mut self, base: i64) {
        if self.ids.iter().all(|&id| id > base) {
            return;
        }
        let kept: Vec<usize> = (0..self.ids.len()).filter(|&i| self.ids[i] > base).collect();
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
        for &i in &kept {
            out.ids.push(self.ids[i]);
            out.lens.push(self.lens[i]);
            out.versions.push(self.versions[i]);
            let total = out.tokens.last().copied().unwrap_or(0);
            out.tokens.push(total + u64::from(self.lens[i]));
        }
        *self = out;
    }

    /// The `k` best of the first `n` documents by BM25 summed over `terms` (each term's
    /// postings scored with [`Bm25::term_score`] at `avg_len`), best first, ties by lower id,
    /// as `(document id, score)`. Only documents matching a term are returned.
    pub fn top_k(
        &self,
        n: usize,
        terms: &[DeltaTerm<'_>],
        bm25: Bm25,
        avg_len: f64,
        k: usize,
        scratch: &mut DeltaScratch,
    ) -> Vec<(i64, f64)> {
        let n = n.min(self.ids.len());
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
    fn prefixes_follow_versions() {
        let mut d = Delta::new();
        d.push(7, 1, &doc(&[("a", 2), ("b", 1)])).unwrap();
        d.push(3, 2, &doc(&[("a", 1)])).unwrap();
        d.push(9, 2, &doc(&[("c", 4)])).unwrap();
        assert_eq!((d.upto(0), d.upto(1), d.upto(2), d.upto(5)), (0, 1, 3, 3));
        assert_eq!((d.tokens(1), d.tokens(3)), (3, 8));
        assert_eq!((d.df("a", 1), d.df("a", 3), d.df("z", 3)), (1, 2, 0));
        assert!(d.push(1, 1, &doc(&[("a", 1)])).is_err(), "versions never go back");
        assert!(d.push(1, 3, &doc(&[("a", 1), ("a", 1)])).is_err(), "a term once per document");
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
        let top = d.top_k(2, &terms, bm25, 2.0, 10, &mut scratch);
        let s10 = bm25.term_score(0.5, 2, 3, 2.0) + bm25.term_score(2.0, 1, 3, 2.0);
        let s11 = bm25.term_score(0.5, 1, 1, 2.0);
        assert_eq!(top, vec![(10, s10), (11, s11)]);
        let all = d.top_k(3, &terms, bm25, 2.0, 2, &mut scratch);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].0, 12, "the short document with the rare term wins");
    }

    #[test]
    fn retaining_above_a_base_drops_the_built_documents() {
        let mut d = Delta::new();
        d.push(5, 1, &doc(&[("a", 1)])).unwrap();
        d.push(2, 1, &doc(&[("a", 1), ("b", 2)])).unwrap();
        d.push(8, 3, &doc(&[("b", 1)])).unwrap();
        d.retain_above(4);
        assert_eq!(d.ids(9), &[5, 8]);
        assert_eq!((d.df("a", 2), d.df("b", 2), d.tokens(2)), (1, 1, 2));
        assert_eq!((d.upto(1), d.upto(3)), (1, 2));
        let mut fresh = Delta::new();
        fresh.push(5, 1, &doc(&[("a", 1)])).unwrap();
        fresh.push(8, 3, &doc(&[("b", 1)])).unwrap();
        let terms = [DeltaTerm { term: "a", idf: 1.0 }, DeltaTerm { term: "b", idf: 1.0 }];
        let mut s = DeltaScratch::default();
        assert_eq!(
            d.top_k(2, &terms, Bm25::FTS5, 1.0, 5, &mut s),
            fresh.top_k(2, &terms, Bm25::FTS5, 1.0, 5, &mut s)
        );
    }
}
