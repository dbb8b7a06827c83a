//! Building every term's posting list from the full-text index's `(term, document)` rows.

use crate::error::Error;
use crate::postings::{Posting, encode};
use crate::rank::Bm25;

/// Collects `(term, document)` occurrences and encodes one list per term.
///
/// Occurrences must arrive grouped by term, documents ascending within a term (the order of
/// the full-text index's vocabulary): each call is one occurrence, so a document's term
/// frequency is the number of consecutive calls with the same pair. Document lengths are the
/// total occurrences per document, counted on the way.
#[derive(Debug)]
pub struct Builder {
    /// Per term, its documents with their term frequency, in arrival order.
    terms: Vec<(String, Vec<(i64, u32)>)>,
    /// Tokens per document, indexed by document id.
    lengths: Vec<u32>,
}

/// The built lists (encoded for [`Bm25::FTS5`] at `avg_len`) and the statistics BM25 needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    /// `(term, blob)` in term order.
    pub lists: Vec<(String, Vec<u8>)>,
    /// Documents with at least one token.
    pub docs: u64,
    /// Mean tokens per document.
    pub avg_len: f64,
    /// The highest document id indexed (`None` when empty).
    pub max_doc: Option<i64>,
}

/// Document ids above this are refused: the lengths table is indexed by id.
const MAX_DOC: i64 = 1 << 32;

impl Builder {
    /// A builder for documents with ids in `0..=max_doc`.
    pub fn new(max_doc: i64) -> Result<Builder, Error> {
        if !(0..MAX_DOC).contains(&max_doc) {
            return Err(Error::Input {
                what: "max_doc",
                detail: format!("{max_doc} is outside 0..{MAX_DOC}"),
            });
        }
        Ok(Builder { terms: Vec::new(), lengths: vec![0; max_doc as usize + 1] })
    }

    /// One occurrence of `term` in `doc`.
    pub fn add(&mut self, term: &str, doc: i64) -> Result<(), Error> {
        let slot =
            usize::try_from(doc).ok().filter(|&d| d < self.lengths.len()).ok_or_else(|| {
                Error::Input {
                    what: "doc",
                    detail: format!("document {doc} is outside 0..{}", self.lengths.len()),
                }
            })?;
        self.lengths[slot] = self.lengths[slot].saturating_add(1);
        let same_term = self.terms.last().is_some_and(|(t, _)| t == term);
        if !same_term {
            if self.terms.last().is_some_and(|(t, _)| t.as_str() > term) {
                return Err(Error::Input {
                    what: "term",
                    detail: format!("term {term:?} arrived after a later term"),
                });
            }
            self.terms.push((term.to_owned(), Vec::new()));
        }
        let Some((_, docs)) = self.terms.last_mut() else {
            return Err(Error::Input { what: "term", detail: "no current term".to_owned() });
        };
        match docs.last_mut() {
            Some((d, tf)) if *d == doc => *tf = tf.saturating_add(1),
            Some((d, _)) if *d > doc => {
                return Err(Error::Input {
                    what: "doc",
                    detail: format!("term {term:?}: document {doc} arrived after {d}"),
                });
            }
            _ => docs.push((doc, 1)),
        }
        Ok(())
    }

    /// Encode every list.
    pub fn finish(self) -> Result<Built, Error> {
        let docs = self.lengths.iter().filter(|&&l| l > 0).count() as u64;
        let tokens: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        let max_doc = self.lengths.iter().rposition(|&l| l > 0).map(|d| d as i64);
        let avg_len = if docs == 0 { 0.0 } else { tokens as f64 / docs as f64 };
        let mut lists = Vec::with_capacity(self.terms.len());
        for (term, docs) in self.terms {
            let postings: Vec<Posting> = docs
                .into_iter()
                .map(|(doc, tf)| Posting { doc, tf, len: self.lengths[doc as usize] })
                .collect();
            lists.push((term, encode(&postings, Bm25::FTS5, avg_len)?));
        }
        Ok(Built { lists, docs, avg_len, max_doc })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::postings::{decode, level};

    #[test]
    fn counts_frequencies_and_lengths() {
        let mut b = Builder::new(9).unwrap();
        for (t, d) in [("a", 1), ("a", 1), ("a", 4), ("b", 4), ("b", 9)] {
            b.add(t, d).unwrap();
        }
        let built = b.finish().unwrap();
        assert_eq!(built.docs, 3);
        assert!((built.avg_len - 5.0 / 3.0).abs() < 1e-12);
        assert_eq!(built.max_doc, Some(9));
        let a = decode(&built.lists[0].1).unwrap();
        let avg = built.avg_len;
        assert_eq!(a, [(1, level(Bm25::FTS5, 2, 2, avg)), (4, level(Bm25::FTS5, 1, 2, avg))]);
        assert_eq!(built.lists[1].0, "b");
    }

    #[test]
    fn refuses_out_of_order_input() {
        let mut b = Builder::new(9).unwrap();
        b.add("b", 2).unwrap();
        assert!(b.add("a", 3).is_err());
        assert!(b.add("b", 1).is_err());
        assert!(b.add("b", 10).is_err());
        assert!(Builder::new(-1).is_err());
    }
}
