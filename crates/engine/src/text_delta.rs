//! The documents written since the last lexical build, held in memory by the engines of one
//! store (a server's tenant) and ranked there instead of by the full-text index.
//!
//! The full-text index ranks with a call of FTS5's `bm25()` per matching document, which made
//! it most of a recall's time on a store being written (the server builds the lexical index
//! only once 20,000 documents wait outside it). The writer's store tells the shared
//! [`TextDelta`] of every committed change to the full-text index (`ctxgraph_store::TextSink`,
//! with the added documents tokenized by the index's own tokenizer), which appends them to a
//! `ctxgraph_lexical::Delta`. A search whose snapshot the delta covers (same lexical build, a
//! text version the delta has reached) ranks the newer documents from it with FTS5's formula
//! and statistics (the whole index's document count, mean length and document frequencies), so
//! it returns what the full-text index returned. It follows the writer's commits from the first
//! one it is told of, and serves searches once a commit finds above the build exactly the
//! documents it holds (at once on a new store; on a store opened with newer documents, after
//! the next build); a document replaced or deleted is taken out at its commit's version. A
//! change it cannot follow (a whole label's documents deleted, a write through another
//! connection) starts it over from the next commit, and meanwhile searches ask the
//! full-text index as before.

use std::cell::RefCell;

use ctxgraph_lexical::{Bm25, Delta, DeltaScratch, DeltaTerm};
use ctxgraph_store::{TextCommit, TextIndexBuild, TextSink};

use crate::delta_follow::{Following, Follows, Span};

thread_local! {
    /// The score array of [`TextDelta::top_k`], one per thread.
    static SCRATCH: RefCell<DeltaScratch> = RefCell::new(DeltaScratch::default());
}

/// The newer documents of one store, shared by its engines (`Engine::set_index_caches`).
#[derive(Default)]
pub(crate) struct TextDelta(Following<Followed>);

/// The documents above `base` that the commits up to its span's version added, since the
/// first commit followed.
struct Followed {
    generation: u64,
    base: i64,
    delta: Delta,
    /// The text versions it answers for (a compaction drops what older snapshots still see).
    span: Span,
}

/// Slots of replaced or deleted entries a delta (this one, and `vector_delta`'s) keeps before
/// it compacts (at least as many as it holds live): a workload that rewrites the same
/// documents or vectors would otherwise grow it without a build to start it over.
pub(crate) const MIN_DEAD_BEFORE_COMPACTION: usize = 4_096;

/// Whether a delta holding `slots` slots, `live` of them live, is due to compact (dropping
/// what only older snapshots see).
pub(crate) fn compaction_due(slots: usize, live: usize) -> bool {
    slots.saturating_sub(live) > live.max(MIN_DEAD_BEFORE_COMPACTION)
}

/// What a search's snapshot is: its lexical build (if any), the build's generation and the
/// snapshot's text version.
pub(crate) struct SnapshotText<'a> {
    pub(crate) build: Option<&'a TextIndexBuild>,
    pub(crate) generation: u64,
    pub(crate) version: u64,
}

/// A question's term: its text and its document frequency in the lexical build's lists.
pub(crate) struct QuestionTerm<'a> {
    pub(crate) term: &'a str,
    pub(crate) built_df: u64,
}

impl TextDelta {
    /// Whether the delta may hold the snapshot's newer documents (checked before the
    /// question's terms are read; [`TextDelta::top_k`] checks again, with their count).
    pub(crate) fn holds(&self, at: &SnapshotText<'_>) -> bool {
        self.0.read().as_ref().is_some_and(|a| a.covers(at))
    }

    /// Whether it may serve any snapshot: a search of an engine whose delta follows nothing
    /// (no sink, or a change it could not follow) reads no counters for it.
    pub(crate) fn serving(&self) -> bool {
        self.0.serving()
    }

    /// The best `k` documents above the snapshot's build for `terms`, scored as the full-text
    /// index scores them; `None` when the delta does not hold exactly the snapshot's newer
    /// documents (`newer`, when known, is their count in the snapshot).
    pub(crate) fn top_k(
        &self,
        at: &SnapshotText<'_>,
        newer: Option<u64>,
        terms: &[QuestionTerm<'_>],
        k: usize,
    ) -> Option<Vec<(i64, f64)>> {
        let held = self.0.read();
        let a = held.as_ref().filter(|a| a.covers(at))?;
        let v = at.version;
        let n = a.delta.docs_at(v);
        if newer.is_some_and(|newer| newer != n) {
            return None;
        }
        // FTS5's statistics: the build's documents and tokens plus the newer ones.
        let (built_docs, built_tokens) =
            at.build.map_or((0, 0.0), |b| (b.docs, b.avg_len * b.docs as f64));
        let docs = built_docs + n;
        let avg_len = if docs == 0 {
            0.0
        } else {
            (built_tokens + a.delta.tokens_at(v) as f64) / docs as f64
        };
        let bm25 = Bm25::FTS5;
        let scored: Vec<DeltaTerm<'_>> = terms
            .iter()
            .map(|t| DeltaTerm {
                term: t.term,
                idf: bm25.idf(docs, t.built_df + a.delta.df_at(t.term, v)),
            })
            .collect();
        Some(
            SCRATCH.with_borrow_mut(|scratch| a.delta.top_k(v, &scored, bm25, avg_len, k, scratch)),
        )
    }
}

impl TextSink for TextDelta {
    fn wants_count(&self) -> bool {
        !self.serving()
    }

    fn committed(&self, commit: TextCommit) {
        self.0.committed(commit);
    }
}

impl Follows for Followed {
    type Commit = TextCommit;

    fn span(&self) -> &Span {
        &self.span
    }

    fn span_mut(&mut self) -> &mut Span {
        &mut self.span
    }

    fn held(&self) -> usize {
        self.delta.len()
    }

    /// Moved over `commit`; `None` when it cannot follow it (the build's coverage went back).
    fn follow(mut self, commit: &TextCommit) -> Option<Followed> {
        if commit.generation != self.generation {
            if commit.base < self.base {
                return None;
            }
            self.delta.retain_above(commit.base);
            self.generation = commit.generation;
            self.base = commit.base;
            self.span.floor = commit.after;
        }
        for &id in &commit.gone {
            self.delta.remove(id, commit.after);
        }
        for doc in commit.docs.iter().filter(|d| d.id > self.base) {
            self.delta.push(doc.id, commit.after, &doc.terms).ok()?;
        }
        if compaction_due(self.delta.slots(), self.delta.len()) {
            self.delta.retain_above(self.base);
            self.span.floor = commit.after;
        }
        Some(self)
    }

    /// The documents `commit` added above its build, followed from there (complete once a commit
    /// counts them as all).
    fn start(commit: &TextCommit) -> Option<Followed> {
        let mut delta = Delta::new();
        for doc in commit.docs.iter().filter(|d| d.id > commit.base) {
            delta.push(doc.id, commit.after, &doc.terms).ok()?;
        }
        Some(Followed {
            generation: commit.generation,
            base: commit.base,
            delta,
            span: Span::at(commit.after),
        })
    }
}

impl Followed {
    /// Whether it holds exactly the documents `at` sees above its build: complete, of the same
    /// build, at a text version between its floor and its head.
    fn covers(&self, at: &SnapshotText<'_>) -> bool {
        self.span.covers(at.version)
            && self.generation == at.generation
            && self.base == at.build.map_or(-1, |b| b.through)
    }
}

#[cfg(test)]
mod tests {
    use ctxgraph_store::TextDoc;

    use super::*;

    fn doc(id: i64, terms: &[&str]) -> TextDoc {
        TextDoc { id, terms: terms.iter().map(|t| ((*t).to_owned(), 1)).collect() }
    }

    fn commit(before: u64, docs: Vec<TextDoc>, above: Option<u64>) -> TextCommit {
        TextCommit {
            before,
            after: before + 1,
            generation: 0,
            base: -1,
            removed: false,
            gone: Vec::new(),
            docs,
            above_base: above,
        }
    }

    fn at(version: u64) -> SnapshotText<'static> {
        SnapshotText { build: None, generation: 0, version }
    }

    #[test]
    fn serves_once_a_commit_counts_all_it_holds() {
        let d = TextDelta::default();
        let q = [QuestionTerm { term: "a", built_df: 0 }];
        // A document above the build that it was never told of: it follows, but cannot serve.
        d.committed(commit(0, vec![doc(1, &["a"])], Some(2)));
        assert!(d.top_k(&at(1), None, &q, 5).is_none());
        assert!(d.wants_count());
        d.committed(commit(1, vec![doc(3, &["a"])], Some(3)));
        assert!(d.top_k(&at(2), None, &q, 5).is_none());
        // A build covers the unknown one (and document 1): what is left above it is known.
        let mut rebuilt = commit(2, vec![], Some(1));
        rebuilt.after = 2;
        rebuilt.generation = 1;
        rebuilt.base = 2;
        d.committed(rebuilt);
        assert!(!d.wants_count());
        let build = TextIndexBuild { through: 2, docs: 2, avg_len: 1.0 };
        let snap = |version| SnapshotText { build: Some(&build), generation: 1, version };
        let q = [QuestionTerm { term: "a", built_df: 2 }];
        let hits = d.top_k(&snap(2), Some(1), &q, 5).unwrap();
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3]);
        // Follows appends; an older snapshot sees its prefix, a newer one is not held.
        let mut next = commit(2, vec![doc(4, &["a", "b"])], None);
        next.generation = 1;
        next.base = 2;
        d.committed(next);
        assert_eq!(d.top_k(&snap(2), None, &q, 5).map(|h| h.len()), Some(1));
        assert_eq!(d.top_k(&snap(3), None, &q, 5).map(|h| h.len()), Some(2));
        assert!(d.top_k(&snap(4), None, &q, 5).is_none());
        assert!(d.top_k(&snap(3), Some(5), &q, 5).is_none(), "a count that differs is refused");
        // A gap (a write it was not told of) starts it over.
        let mut gap = commit(5, vec![doc(9, &["a"])], None);
        gap.generation = 1;
        gap.base = 2;
        d.committed(gap);
        assert!(d.top_k(&snap(6), None, &q, 5).is_none());
        assert!(d.wants_count());
    }

    #[test]
    fn a_version_before_it_was_complete_is_not_served() {
        let d = TextDelta::default();
        let q = [QuestionTerm { term: "a", built_df: 0 }];
        // Document 9 is above the build but was never told of; the next commit deletes it,
        // and then the delta holds all there is, but not what version 1 saw.
        d.committed(commit(0, vec![doc(1, &["a"])], Some(2)));
        let mut deleted = commit(1, vec![], Some(1));
        deleted.gone = vec![9];
        d.committed(deleted);
        assert_eq!(d.top_k(&at(2), None, &q, 5).map(|h| h.len()), Some(1));
        assert!(d.top_k(&at(1), None, &q, 5).is_none());
    }

    #[test]
    fn rewriting_one_document_again_and_again_stays_bounded() {
        let d = TextDelta::default();
        d.committed(commit(0, vec![doc(1, &["a"])], Some(1)));
        let rewrites = MIN_DEAD_BEFORE_COMPACTION as u64 + 10;
        for v in 1..=rewrites {
            let mut c = commit(v, vec![doc(1, &["a", "b"])], None);
            c.gone = vec![1];
            d.committed(c);
        }
        let q = [QuestionTerm { term: "b", built_df: 0 }];
        assert_eq!(d.top_k(&at(rewrites + 1), Some(1), &q, 5).map(|h| h.len()), Some(1));
        assert!(d.top_k(&at(2), None, &q, 5).is_none(), "older than its compaction");
        let held = d.0.read();
        assert!(held.as_ref().unwrap().delta.slots() < 100);
    }

    #[test]
    fn starts_at_once_on_a_new_store() {
        let d = TextDelta::default();
        d.committed(commit(0, vec![doc(1, &["a"]), doc(2, &["b"])], Some(2)));
        let q = [QuestionTerm { term: "a", built_df: 0 }];
        assert_eq!(d.top_k(&at(1), None, &q, 5).map(|h| h.len()), Some(1));
        // Document 1 replaced (now without "a"), then document 2 deleted: followed.
        let mut replaced = commit(1, vec![doc(1, &["b"])], None);
        replaced.gone = vec![1];
        d.committed(replaced);
        assert_eq!(d.top_k(&at(1), None, &q, 5).map(|h| h.len()), Some(1));
        assert_eq!(d.top_k(&at(2), None, &q, 5).map(|h| h.len()), Some(0));
        let mut deleted = commit(2, vec![], None);
        deleted.gone = vec![2];
        d.committed(deleted);
        let qb = [QuestionTerm { term: "b", built_df: 0 }];
        assert_eq!(d.top_k(&at(3), Some(1), &qb, 5).map(|h| h.len()), Some(1));
        let mut unlisted = commit(3, vec![], None);
        unlisted.removed = true;
        d.committed(unlisted);
        assert!(d.top_k(&at(4), None, &q, 5).is_none(), "a removal it is not told of lets go");
    }
}
