//! The knowledge and decision-memory writes (facts, documents, receipts, memories, types, slots,
//! checklists, goals, entity decisions) on a remote store: validated as on a store file, appended
//! in one batch, then read back once the projection workers have folded them.
//!
//! What these calls do in place after the append on a store file is derived work that the
//! workers own on a remote store: stage 2 indexes the facts, sentences, slot values, receipts and
//! memories of every record it enriches, and stage 3 rebuilds the automatic memory links and the
//! inferred `SAME_AS` / `RELATED_TO` edges. So a remote write skips it, and waits, at most
//! [`REMOTE_FOLD_WAIT`], for the graph to reach what it wrote: the next write's checks (a name
//! resolved, a previous document version, a fact to retract) and the caller's reads then see
//! it. A wait that ends first is not an error: the record is durable in the log already and
//! becomes readable when the workers reach it, as a server's ingest answers.

use std::time::Duration;

use crate::backend::Backend;
use crate::engine::Engine;
use crate::error::Error;
use crate::ingest::IngestOutcome;

/// How long a write on a remote store waits for the workers to fold what it appended: the
/// server's bound for its own ingests with the default deadline (2 s plus half of 10 s).
pub const REMOTE_FOLD_WAIT: Duration = Duration::from_secs(7);

impl Engine {
    /// Whether the engine runs on a remote store, whose workers do the derived writes.
    pub(crate) fn is_remote(&self) -> bool {
        matches!(self.backend, Backend::Remote(_))
    }

    /// On a remote store, wait (at most [`REMOTE_FOLD_WAIT`]) until the graph has folded every
    /// position `outcomes` name, new or duplicate; nothing on a store file, whose writes are
    /// projected when they return. Returns the graph's `projected_through` after the wait, or
    /// `None` on a store file.
    pub(crate) fn await_fold<'a>(
        &self,
        outcomes: impl IntoIterator<Item = &'a IngestOutcome>,
    ) -> Result<Option<u64>, Error> {
        if !self.is_remote() {
            return Ok(None);
        }
        let newest = outcomes
            .into_iter()
            .map(|o| match o {
                IngestOutcome::New(p) | IngestOutcome::Duplicate(p) => *p,
            })
            .max();
        match newest {
            Some(position) => self.wait_projected(position, REMOTE_FOLD_WAIT).map(Some),
            None => Ok(None),
        }
    }
}
