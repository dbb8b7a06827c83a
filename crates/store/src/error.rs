//! Storage errors: I/O, corruption, bad input (conflicts) and format versions kept apart.

use std::path::PathBuf;

/// Why a storage operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database engine or the file system failed (a service error). Code `store.busy` when
    /// another connection held the store's write lock past the busy timeout (retryable),
    /// `store.io` otherwise.
    #[error("storage failure: {0}")]
    Io(#[from] rusqlite::Error),
    /// A server-backed store (a scale-out backend) failed or could not be reached: a service
    /// error, code `store.io` like a failing file system.
    #[error("storage failure: {backend}: {detail}")]
    Remote {
        /// The backend, e.g. `redis`.
        backend: &'static str,
        /// What failed, with the server's address.
        detail: String,
    },
    /// Stored data does not decode: the file was damaged or written by something else.
    #[error("store is corrupt: {0}")]
    Corruption(String),
    /// A record with this kind and id exists with different content (a user error).
    #[error(
        "{kind} `{id}` already exists at log position {position} with different content; records are immutable (rule: log.conflict)"
    )]
    Conflict {
        /// Record kind.
        kind: &'static str,
        /// Record id.
        id: String,
        /// Where the existing record is.
        position: u64,
    },
    /// No store at the path and creation was not asked for.
    #[error("no ctxgraph store at {0}: run `ctxgraph init` or pass --db")]
    Missing(PathBuf),
    /// The file is not a ctxgraph store.
    #[error("{0} is not a ctxgraph store")]
    NotAStore(PathBuf),
    /// A copy was asked for at a path that already holds a file.
    #[error("{0} already exists: a backup is written to a new file only (rule: store.exists)")]
    Exists(PathBuf),
    /// The store was written by a newer ctxgraph.
    #[error(
        "store format version {found} is newer than this build supports ({supported}): upgrade ctxgraph"
    )]
    TooNew {
        /// Version in the file.
        found: u32,
        /// Newest version this build reads.
        supported: u32,
    },
    /// A scale-out store's keys are on another of the instances its URL lists than the one its
    /// name hashes to (an instance was added, or the list is spelled otherwise than when the
    /// store was written): reading or writing it there would start an empty copy.
    #[error(
        "scale-out store `{name}` is on {found_on}, but among the instances listed it belongs on {home}: list the instances as when the store was written, or move the store (`migrate` it to a file and back, then `drop` the copy left behind) (rule: store.misplaced)"
    )]
    Misplaced {
        /// The store's name.
        name: String,
        /// The instance that holds its keys.
        found_on: String,
        /// The instance its name hashes to among those listed.
        home: String,
    },
}

impl StoreError {
    /// Stable machine code.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Io(e) if is_busy(e) => "store.busy",
            StoreError::Io(_) | StoreError::Remote { .. } => "store.io",
            StoreError::Corruption(_) => "store.corruption",
            StoreError::Conflict { .. } => "log.conflict",
            StoreError::Missing(_) => "store.missing",
            StoreError::NotAStore(_) => "store.not_a_store",
            StoreError::TooNew { .. } => "store.too_new",
            StoreError::Exists(_) => "store.exists",
            StoreError::Misplaced { .. } => "store.misplaced",
        }
    }
}

/// Whether SQLite gave up waiting for another connection's lock (`SQLITE_BUSY`, `SQLITE_LOCKED`):
/// another process holds a long write transaction (a `consolidate`, a `reproject`), and trying
/// again later succeeds.
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
