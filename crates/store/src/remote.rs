//! The read view the engine takes from any backend ([`StoreRead`]), and a store whose graph is
//! folded elsewhere ([`RemoteStore`]): the scale-out backend, where the engine appends to the
//! log and reads the graph that projection workers keep.

use ctxgraph_ontology::ValidRecord;
use ctxgraph_ontology::graph::{Node, NodeKey};

use crate::{Appended, Archived, GraphReader, GraphStore, LogReader, ProjectionGraph, StoreError};

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

    /// Whether the store runs a forget ([`RemoteStore::forget_append`],
    /// [`RemoteStore::fold_through`] and [`RemoteStore::rewrite_persistence`]). The engine asks
    /// before it reads or writes anything, and refuses a forget on a store that says no.
    fn forgets(&self) -> bool {
        false
    }

    /// Append a forget record and replace the bodies of the records it redacts, as one atomic
    /// step: either the record and every redaction are written, or nothing is (a crash cannot
    /// leave the forget record without its tombstones). Nothing is written, and
    /// [`ForgetAppend::Changed`] says so, when the log's head is no longer `head` or a record
    /// to redact no longer has the body the caller read: the caller reads again and retries.
    /// A forget record already stored is [`ForgetAppend::Done`] with a duplicate and redacts
    /// nothing; one whose id is taken by other content is [`StoreError::Conflict`].
    fn forget_append(
        &self,
        record: &ValidRecord,
        recorded_at: &str,
        head: u64,
        redactions: &[Redaction],
    ) -> Result<ForgetAppend, StoreError> {
        let _ = (record, recorded_at, head, redactions);
        Err(no_forget(&self.location()))
    }

    /// Bring the graph's projection through `position` now, in the calling process if no
    /// worker has (so that a forget's nodes are gone when it returns); returns the graph's
    /// `projected_through`, at least `position`.
    fn fold_through(&self, position: u64) -> Result<u64, StoreError> {
        let _ = position;
        Err(no_forget(&self.location()))
    }

    /// Have the server drop what it keeps of past queries and rewrite what it persists by
    /// replaying writes (an append-only file), so that the queries and writes that carried what
    /// a forget replaced leave the server and the disk; returns when done.
    fn rewrite_persistence(&self) -> Result<(), StoreError> {
        Err(no_forget(&self.location()))
    }

    /// A stage-2 write transaction (enrichment: node properties, vectors, full-text entries and
    /// the stage-2 checkpoint), applied whole or not at all by [`EnrichCommit::commit`];
    /// `None` from a store on which stage 2 does not run (the default).
    fn begin_enrich(&self) -> Result<Option<Box<dyn EnrichCommit + '_>>, StoreError> {
        Ok(None)
    }

    /// Whether stage 2 runs on the store ([`RemoteStore::begin_enrich`] gives transactions).
    /// The engine asks before it enriches or re-embeds, without opening a transaction.
    fn enriches(&self) -> bool {
        false
    }

    /// A stage-3 write transaction (consolidation: every derived node, edge, vector index and
    /// lexical index rebuilt), applied whole or not at all by [`ConsolidateCommit::commit`];
    /// `None` from a store on which stage 3 does not run (the default).
    fn begin_consolidate(&self) -> Result<Option<Box<dyn ConsolidateCommit + '_>>, StoreError> {
        Ok(None)
    }

    /// Whether the store starts its derived data over ([`RemoteStore::reset_projection`] and
    /// [`RemoteStore::reset_enrichment`]). The engine asks before it writes anything, and
    /// refuses a reprojection or a re-embedding on a store that says no.
    fn resets(&self) -> bool {
        false
    }

    /// Empty the graph and every stage-2 and stage-3 datum and set every checkpoint to 0 (the
    /// log is untouched), as one atomic step that makes any worker's transaction begun before
    /// it apply nothing: the start of a rebuild from the log ([`RemoteStore::fold_through`]
    /// then folds it again).
    fn reset_projection(&self) -> Result<(), StoreError> {
        Err(no_reset(&self.location()))
    }

    /// Drop every vector, full-text entry and index of stages 2 and 3 and set their checkpoints
    /// to 0, as one atomic step: enrichment then starts again from the first record.
    fn reset_enrichment(&self) -> Result<(), StoreError> {
        Err(no_reset(&self.location()))
    }

    /// Set the store setting `name` (`None` removes it), as [`GraphStore::set_setting`] does in
    /// a write transaction; the next read sees it. A setting is the store's, not the log's: no
    /// record is appended.
    fn set_setting(&self, name: &str, value: Option<&str>) -> Result<(), StoreError> {
        let _ = (name, value);
        Err(StoreError::Remote {
            backend: "remote",
            detail: format!("{}: this store keeps no settings", self.location()),
        })
    }

    /// Whether the store runs retention ([`RemoteStore::retain`] and
    /// [`RemoteStore::drop_archive_marks`]). The engine asks before it reads anything, and
    /// refuses retention on a store that says no.
    fn retains(&self) -> bool {
        false
    }

    /// Run `body` in a retention transaction (the graph as it was when the transaction began,
    /// with the transaction's own writes over it, and the archive marks) and, if `body`
    /// returns `true`, apply every write at once unless the graph moved meanwhile; whether
    /// the writes were applied (`false`: nothing was; when `body` asked for it, read again and
    /// retry).
    fn retain(&self, body: &mut RetentionBody<'_>) -> Result<bool, StoreError> {
        let _ = body;
        Err(no_retention(&self.location()))
    }

    /// Drop every archive mark (a reprojection that brings archived events back).
    fn drop_archive_marks(&self) -> Result<(), StoreError> {
        Err(no_retention(&self.location()))
    }

    /// Whether the store runs a forget of an entity: [`RemoteStore::forgets`], redactions that
    /// replace ids ([`Redaction::id`]) and [`RemoteStore::forget_in_graph`]. The engine asks
    /// before it reads or writes anything, and refuses the forget of an entity on a store that
    /// says no.
    fn forgets_entities(&self) -> bool {
        false
    }

    /// Run `body` over a transaction of the graph (as [`RemoteStore::retain`] does, without
    /// archive marks) and apply every write at once as it answers, with what a deleted node had
    /// of stages 2 and 3, unless the graph or stage 2 moved meanwhile;
    /// whether the writes were applied (`false`: nothing was, run it again). A forget of an
    /// entity takes it out of the graph so, its record naming only a digest of it.
    fn forget_in_graph(&self, body: &mut ForgetGraphBody<'_>) -> Result<bool, StoreError> {
        let _ = body;
        Err(no_forget(&self.location()))
    }
}

/// What [`RemoteStore::forget_in_graph`] runs: a forget's writes over the graph, answering
/// whether and how to apply them.
pub type ForgetGraphBody<'a> =
    dyn FnMut(&mut dyn ProjectionGraph) -> Result<GraphForget, StoreError> + 'a;

/// How a forget's graph transaction ends ([`RemoteStore::forget_in_graph`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphForget {
    /// Apply nothing.
    Abort,
    /// Apply the writes.
    Apply,
    /// Apply the writes and, in the same step, start stages 2 and 3 over as
    /// [`RemoteStore::reset_enrichment`] does: a rewrite changed the text of a node that stage 2
    /// indexed, and every vector, document and index made from the old text must go.
    ApplyAndResetEnrichment,
}

/// What [`RemoteStore::retain`] runs: the retention pass over the transaction, answering
/// whether to apply its writes.
pub type RetentionBody<'a> = dyn FnMut(&mut dyn RetentionWrite) -> Result<bool, StoreError> + 'a;

/// The answer of a remote store that does not run retention.
fn no_retention(location: &str) -> StoreError {
    StoreError::Remote {
        backend: "remote",
        detail: format!("{location}: this store does not run retention"),
    }
}

/// The reads and writes retention makes in its transaction: the projection's graph operations
/// (an archived event leaves the graph as a forgotten one does) and the archive marks. Every
/// [`GraphStore`] (the embedded write transaction) has them, and a remote store's retention
/// transaction implements them alone.
pub trait RetentionWrite: ProjectionGraph {
    /// [`GraphReader::nodes_by_label`]: the graph as the transaction began (retention reads
    /// the events before it writes).
    fn nodes_of_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError>;
    /// [`GraphReader::archived`], with this transaction's marks.
    fn archive_marks(
        &self,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<Vec<Archived>, StoreError>;
    /// [`GraphStore::put_archived`].
    fn mark_archived(&mut self, key: &NodeKey, archived_at: &str) -> Result<(), StoreError>;
}

impl<T: GraphStore + ?Sized> RetentionWrite for T {
    fn nodes_of_label(
        &self,
        label: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Node>, StoreError> {
        GraphReader::nodes_by_label(self, label, after, limit)
    }
    fn archive_marks(
        &self,
        after: Option<&NodeKey>,
        limit: usize,
    ) -> Result<Vec<Archived>, StoreError> {
        GraphReader::archived(self, after, limit)
    }
    fn mark_archived(&mut self, key: &NodeKey, archived_at: &str) -> Result<(), StoreError> {
        GraphStore::put_archived(self, key, archived_at)
    }
}

/// The answer of a remote store that does not start its derived data over.
fn no_reset(location: &str) -> StoreError {
    StoreError::Remote {
        backend: "remote",
        detail: format!("{location}: this store does not start its derived data over"),
    }
}

/// One record a forget replaces with a tombstone ([`RemoteStore::forget_append`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    /// Its log position.
    pub position: u64,
    /// Its body as the forget read it: the redaction is refused if the body changed since.
    pub read: String,
    /// The body that replaces it: a tombstone, or the record rewritten without what a forget
    /// takes out of it (an entity it names among other things).
    pub tombstone: String,
    /// The id that replaces its id (a tombstone of a record whose id spells a forgotten
    /// entity), or `None` to keep it.
    pub id: Option<String>,
}

/// What [`RemoteStore::forget_append`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForgetAppend {
    /// The forget record was appended (and the records redacted), or was there already.
    Done(Appended),
    /// Nothing was written: the log moved past the head the caller read, or the record at this
    /// position changed since it was read.
    Changed {
        /// The head found, or the position of the changed record.
        position: u64,
    },
}

/// The answer of a remote store that does not run a forget.
fn no_forget(location: &str) -> StoreError {
    StoreError::Remote {
        backend: "remote",
        detail: format!("{location}: this store does not run a forget"),
    }
}

/// The reads and writes stage 2 (enrichment) makes in its transaction: every [`GraphStore`]
/// (the embedded write transaction) has them, and a remote store's stage-2 transaction
/// implements them alone.
pub trait EnrichWrite {
    /// [`GraphReader::enriched_through`], as the transaction began.
    fn enriched_through(&self) -> Result<u64, StoreError>;
    /// [`GraphReader::embedding_model`].
    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError>;
    /// [`GraphReader::node`], with this transaction's writes.
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError>;
    /// [`GraphStore::put_node_owned`].
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError>;
    /// [`GraphStore::put_vector`].
    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError>;
    /// [`GraphStore::put_texts`].
    fn put_texts(&mut self, texts: &[(NodeKey, String)]) -> Result<(), StoreError>;
    /// [`GraphStore::set_enriched_through`].
    fn set_enriched_through(&mut self, position: u64) -> Result<(), StoreError>;
    /// [`GraphStore::set_embedding_model`].
    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError>;
    /// Read ahead the nodes `keys` names, which the transaction is about to read one by one: a
    /// store whose reads are round trips reads them in a few; the default (a local store) does
    /// nothing and does not walk `keys`.
    fn prefetch(&mut self, keys: &mut dyn Iterator<Item = NodeKey>) -> Result<(), StoreError> {
        let _ = keys;
        Ok(())
    }
    /// [`GraphReader::enrichment_epoch`], as the transaction began: a chunk read at another
    /// value was read before stages 2 and 3 started over, and is not written.
    fn enrichment_epoch(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

impl<T: GraphStore + ?Sized> EnrichWrite for T {
    fn enriched_through(&self) -> Result<u64, StoreError> {
        GraphReader::enriched_through(self)
    }
    fn enrichment_epoch(&self) -> Result<u64, StoreError> {
        GraphReader::enrichment_epoch(self)
    }
    fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
        GraphReader::embedding_model(self)
    }
    fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        GraphReader::node(self, key)
    }
    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        GraphStore::put_node_owned(self, node)
    }
    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError> {
        GraphStore::put_vector(self, key, vector)
    }
    fn put_texts(&mut self, texts: &[(NodeKey, String)]) -> Result<(), StoreError> {
        GraphStore::put_texts(self, texts)
    }
    fn set_enriched_through(&mut self, position: u64) -> Result<(), StoreError> {
        GraphStore::set_enriched_through(self, position)
    }
    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError> {
        GraphStore::set_embedding_model(self, model_id, dimension)
    }
}

/// A remote store's stage-2 transaction ([`RemoteStore::begin_enrich`]): writes held back
/// until `commit`.
pub trait EnrichCommit: EnrichWrite {
    /// Apply every write at once if neither the stage-2 checkpoint nor the graph's projection
    /// checkpoint moved since the transaction began; whether it was applied (`false`: nothing
    /// was, read again and retry).
    fn commit(self: Box<Self>) -> Result<bool, StoreError>;
}

/// A remote store's stage-3 transaction ([`RemoteStore::begin_consolidate`]): the graph and the
/// log as they were when it began, with its own writes over them, held back until `commit`.
pub trait ConsolidateCommit: GraphStore + LogReader {
    /// Apply every write at once if neither the projection's nor stage 2's checkpoint moved
    /// since the transaction began; whether it was applied (`false`: nothing was, consolidate
    /// again).
    fn commit(self: Box<Self>) -> Result<bool, StoreError>;
}
