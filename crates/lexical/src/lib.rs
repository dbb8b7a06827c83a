//! ctxgraph's lexical index: one BM25 posting list per term, searched document-at-a-time.
//!
//! Pure algorithms, no I/O. The store's full-text index (SQLite FTS5) tokenizes and stems
//! text and keeps term statistics; ranking with it costs a call of its ranking function per
//! *matching* document, which grows with the store: a question with a common word matches a
//! large part of a million events. This crate keeps, per term, the documents that contain it
//! as a compact blob ([`encode`]) of `(document id, term frequency, document length)` in id
//! order, and ranks by merging the question's lists ([`top_k`]): a few nanoseconds per
//! posting, with no per-document call into the database.
//!
//! The score is FTS5's `bm25()` with its defaults (`k1` = 1.2, `b` = 0.75, its idf floor), so
//! results of this index and of the full-text index over documents written since the last
//! build ([`Bm25::FTS5`]) are on one scale and can be merged.
//!
//! ```
//! use ctxgraph_lexical::{Bm25, Builder, QueryTerm, Scratch, top_k};
//!
//! // Documents 1..=3 with their (already tokenized) terms, grouped by term, ids ascending.
//! let mut b = Builder::new(3)?;
//! for (term, doc) in [("api", 1), ("api", 3), ("billing", 1), ("billing", 2), ("refund", 2)] {
//!     b.add(term, doc)?;
//! }
//! let built = b.finish()?;
//! let list = |t: &str| built.lists.iter().find(|(term, _)| term == t).map(|(_, l)| l.as_slice());
//! let bm25 = Bm25::FTS5;
//! let terms = [QueryTerm {
//!     idf: bm25.idf(built.docs, 1),
//!     postings: list("refund").unwrap_or_default(),
//! }];
//! let top = top_k(&terms, bm25, 10, usize::MAX, &mut Scratch::default())?;
//! assert_eq!(top[0].0, 2);
//! # Ok::<(), ctxgraph_lexical::Error>(())
//! ```

mod build;
mod decoded;
mod delta;
mod error;
mod postings;
mod rank;

pub use build::{Builder, Built};
pub use decoded::Decoded;
pub use delta::{Delta, DeltaScratch, DeltaTerm};
pub use error::Error;
pub use postings::{
    Posting, Pruned, count, decode, encode, impact_of, level, without, without_docs,
};
pub use rank::{Bm25, QueryTerm, Scratch, top_k, top_k_decoded};

/// Documents outside the lexical index at which a store rebuilds it: below this, searching
/// them in the full-text index costs less than rebuilding every list.
pub const REBUILD_AFTER: u64 = 20_000;
