//! Reads for the store's owner only: the log, raw counts and positions, edges waiting for an
//! endpoint, the forget audit. They see past the policy (a log record, a count of every node),
//! so a [`Reader`] refuses them to anyone else with `access.owner_only`.

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Edge, NodeKey};
use ctxgraph_store::LogEntry;

use super::{Checkpoints, Reader, Stats};
use crate::error::Error;
use crate::forget::Forgotten;

impl Reader<'_> {
    /// The effective schema (the tenant's declarations, not data: every principal may read it).
    pub fn schema(&self) -> &Schema {
        self.snap.schema()
    }

    /// `Ok` for the store's owner; for anyone else, `access.owner_only` naming `what`.
    pub(super) fn owner_only(&self, what: &str) -> Result<(), Error> {
        if self.who.is_owner() {
            return Ok(());
        }
        Err(Error::Access {
            code: "access.owner_only",
            message: format!(
                "{what} reads past the access policy, so only the store's owner may read it \
                 (principal {:?} is not; without --as the CLI reads as the owner)",
                self.who.name()
            ),
        })
    }

    /// Log records from `from`, at most `limit`. Owner only.
    pub fn log(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, Error> {
        self.owner_only("the log")?;
        self.snap.log(from, limit)
    }

    /// The log head and the stage checkpoints. Owner only (the head counts hidden records).
    pub fn checkpoints(&self) -> Result<Checkpoints, Error> {
        self.owner_only("the log's checkpoints")?;
        self.snap.checkpoints()
    }

    /// Store-wide counts and sizes (scans every node and edge). Owner only: a principal counts
    /// what it may see with [`Reader::stats`].
    pub fn store_stats(&self) -> Result<Stats, Error> {
        self.owner_only("the store's counts")?;
        self.snap.stats()
    }

    /// Stored vectors, and how many are not in the vector index yet. Owner only.
    pub fn stats_vectors(&self) -> Result<(u64, u64), Error> {
        self.owner_only("the vector counts")?;
        self.snap.stats_vectors()
    }

    /// Full-text documents the lexical index does not cover yet. Owner only.
    pub fn text_docs_outside_index(&self) -> Result<u64, Error> {
        self.owner_only("the full-text counts")?;
        self.snap.text_docs_outside_index()
    }

    /// Edges waiting for a node that is not in the log yet, with the node they wait for.
    /// Owner only (a waiting edge names a node the policy might hide).
    pub fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, Error> {
        self.owner_only("the edges waiting for an endpoint")?;
        self.snap.pending_edges()
    }

    /// The forget audit: what was forgotten, when and by whom, never the content. The owner
    /// and admins only.
    pub fn forgotten(&self) -> Result<Vec<Forgotten>, Error> {
        if !self.who.is_admin() {
            self.owner_only("the forget audit")?;
        }
        self.snap.forgotten()
    }
}
