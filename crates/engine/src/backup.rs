//! Online backup: a consistent copy of a live store.

use std::path::Path;

use crate::engine::Engine;
use crate::error::Error;

impl Engine {
    /// Write a consistent copy of this store to the new file `dest` while other connections
    /// (a running `serve`, another `ingest`) go on writing: the copy holds the log, the graph
    /// and the indexes as of one read transaction, so it opens as a store of its own. Refuses
    /// a `dest` that exists (`store.exists`).
    pub fn backup(&self, dest: &Path) -> Result<(), Error> {
        Ok(self.backend.embedded("backup")?.backup_to(dest)?)
    }
}
