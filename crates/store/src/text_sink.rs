//! What a committed write transaction did to the full-text index, handed to an observer in
//! the same process, so a copy of the newer documents' terms (the engine's delta of the
//! lexical index) follows the store without reading the documents back: the full-text index
//! keeps no text, and listing one document's terms costs a scan of the whole index.

/// One document a transaction added, tokenized as the full-text index tokenizes it.
#[derive(Debug, Clone, PartialEq)]
pub struct TextDoc {
    /// The document id (the node's `nid`).
    pub id: i64,
    /// Its distinct terms with their frequencies, in term order.
    pub terms: Vec<(String, u32)>,
}

/// A committed transaction's changes to the full-text index and the lexical index's build.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCommit {
    /// [`crate::GraphReader::text_version`] before the transaction.
    pub before: u64,
    /// The same after it (equal to `before` when no document changed).
    pub after: u64,
    /// [`crate::GraphReader::text_generation`] after it.
    pub generation: u64,
    /// The highest document id the lexical index's build covers after it (`-1`: no build).
    pub base: i64,
    /// Whether documents were deleted that [`TextCommit::gone`] does not list (a whole label,
    /// or every document): a copy cannot follow.
    pub removed: bool,
    /// The documents held before the transaction that it deleted or replaced, in id order.
    pub gone: Vec<i64>,
    /// The documents added (a replaced one with its new text), in id order.
    pub docs: Vec<TextDoc>,
    /// Documents with an id above `base` after the transaction, counted only when the sink
    /// asked ([`TextSink::wants_count`]): a sink holding no copy may start one when these are
    /// exactly `docs`.
    pub above_base: Option<u64>,
}

/// An observer of committed changes to a store's full-text index (see
/// `Embedded::set_text_sink`). Called after the commit, on the writer's thread; a transaction
/// that changed neither the documents nor the lexical index's build calls nothing.
pub trait TextSink: Send + Sync {
    /// Whether the next commit should count the documents above the build
    /// ([`TextCommit::above_base`]; a range count, so only while the sink needs it).
    fn wants_count(&self) -> bool;
    /// A transaction committed.
    fn committed(&self, commit: TextCommit);
}
