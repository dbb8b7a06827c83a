//! What a committed write transaction did to the vectors outside the vector index, handed to
//! an observer in the same process, so a copy of those vectors (the engine's delta of the
//! vector index) follows the store without reading them back: every search scores all of
//! them, and every write moved the vector generation that a copy read from the store was
//! tagged with. The counterpart of [`crate::TextSink`] for vectors.

/// A committed transaction's changes to the vectors outside the vector index (the vectors
/// table's rows with no list).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorCommit {
    /// [`crate::GraphReader::vector_generation`] before the transaction.
    pub before: u64,
    /// The same after it.
    pub after: u64,
    /// Whether vectors left or joined the outside set in ways [`VectorCommit::gone`] and
    /// [`VectorCommit::vectors`] do not list (a whole label deleted, every vector deleted, the
    /// index dropped): a copy cannot follow.
    pub removed: bool,
    /// The vectors the transaction deleted, replaced or filed into the index (some may not have
    /// been outside it), in nid order.
    pub gone: Vec<i64>,
    /// The vectors the transaction wrote that are outside the index after it (a replaced one
    /// with its new values), in nid order.
    pub vectors: Vec<(i64, Vec<f32>)>,
    /// The vectors outside the index after the transaction, counted only when the sink asked
    /// ([`VectorSink::wants_count`]): a sink holding no copy may start one when these are
    /// exactly those it holds.
    pub outside: Option<u64>,
}

/// An observer of committed changes to a store's vectors outside the vector index (see
/// `Embedded::set_vector_sink`). Called after the commit, on the writer's thread, for every
/// transaction that moved the vector generation.
pub trait VectorSink: Send + Sync {
    /// Whether the next commit should count the vectors outside the index
    /// ([`VectorCommit::outside`]; an index scan, so only while the sink needs it).
    fn wants_count(&self) -> bool;
    /// A transaction committed.
    fn committed(&self, commit: VectorCommit);
}
