//! The read view the engine takes from any backend ([`StoreRead`]), and a store whose graph is
//! folded elsewhere ([`RemoteStore`]): the scale-out backend, where the engine appends to the
//! log and reads the graph that projection workers keep.

use ctxgraph_ontology::ValidRecord;

use crate::{Appended, GraphReader, LogReader, StoreError};

/// Everything a read needs, the log and the graph, in one view: the engine's snapshots read
/// through it, whatever the backend.
pub trait StoreRead: LogReader + GraphReader {}

impl<T: LogReader + GraphReader + ?Sized> StoreRead for T {}

/// A store the engine appends to and reads, while its graph is folded from its log by others
/// (projection workers). The graph may be behind the log: [`GraphReader::projected_through`]
/// says how far it has come.
pub trait RemoteStore: Send + Sync + std::fmt::Debug {
    /// A read of the log and the graph. A remote graph has no read transaction spanning
    /// queries: each query sees the graph at a committed fold page, and later queries of one
    /// read may see later pages.
    fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError>;

    /// Append `records` with one acknowledgement time, each as [`crate::Log::append`] would
    /// (idempotent by kind and id, conflicts refused; a record repeated within the batch is a
    /// duplicate of its first occurrence). The outer error is a failure of the backend; the
    /// inner ones are conflicts.
    fn append_batch(
        &self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError>;

    /// Where the store lives, for messages (a URL without credentials).
    fn location(&self) -> String;
}
