//! The embedded backend: one SQLite file in WAL mode holding the log and the projected graph.
//!
//! # Storage layout (format version 5)
//!
//! ```text
//! log            (position INTEGER PRIMARY KEY, kind, record_id, recorded_at, body)  UNIQUE(kind, record_id)
//! nodes          (nid INTEGER PRIMARY KEY, label, id, props)         UNIQUE nodes_key (label, id)
//! edges          (from_nid, edge_type, to_nid, qualifier, props)     PK in that order
//!                index edges_in (to_nid, edge_type, from_nid, qualifier), edges_type (edge_type, ...)
//! session_order  (session_id, at_ns, event_id)                                      PK in that order
//! sessions       (session_id, last_at_ns, last_event_id)  the latest slot per session  PK(session_id)
//! meta           (key, value)          projected_through, enriched_through, embedding_model, embedding_dimension
//! vectors        (nid, data)           one little-endian f32 embedding per node
//! vector_lists   (nid, list)           a row per vector: its IVF list, NULL if written since the build
//! ann_lists      (list, members)       the IVF vector index: packed members per list
//! archived       (label, id, archived_at)  nodes retention moved out of the graph
//! text_index     FTS5 (rowid = nid)    BM25 full-text index of event text and entity names
//! text_postings  (term, postings)      the lexical index: one BM25 posting list per term
//! pending_edges  (wait_label, wait_id, <edge key>, props)                           PK(wait, edge key)
//! ```
//!
//! `PRAGMA application_id` marks the file as ctxgraph's and `PRAGMA user_version` holds the format
//! version; `docs/storage-format.md` is the full description, including the commit protocol.
//! Durability: `synchronous = FULL` in WAL mode, so a committed write transaction has been fsynced
//! to the WAL before `commit` returns; a crash loses no committed transaction. A transaction begun
//! as [`Durability::Deferred`] (derived data, access notes) is committed at `NORMAL` instead: not
//! waited for, made durable by the next synced commit or checkpoint.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{RecordKind, ValidRecord};
use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, TransactionBehavior, params};

use crate::{
    Appended, Archived, EdgeGroup, GraphCounts, GraphReader, GraphStore, Log, LogEntry, LogReader,
    NodeDecode, SessionSlot, StoreError, StoredVector, TextCommit, TextDoc, TextIndexBuild,
    TextSink, VectorCommit, VectorSink,
};

/// The write transaction's caches are looked up several times per projected record, by keys
/// of two strings: a fast hash, seeded at random per map as the standard one is.
type HashMap<K, V> = foldhash::HashMap<K, V>;

/// The newest on-disk format this build reads and writes.
pub const FORMAT_VERSION: u32 = 5;

/// `PRAGMA application_id` of a ctxgraph store: "ctxg" in ASCII.
const APPLICATION_ID: i32 = 0x6374_7867;

/// Migrations from version N-1 to N, applied in order inside one transaction at open.
const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("format_v1.sql")),
    (2, include_str!("format_v2.sql")),
    (3, include_str!("format_v3.sql")),
    (4, include_str!("format_v4.sql")),
    (5, include_str!("format_v5.sql")),
];

/// Whether opening may create a missing store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create the file if it does not exist.
    CreateIfMissing,
    /// Fail with [`StoreError::Missing`] if it does not exist.
    MustExist,
}

/// An open embedded store.
#[derive(Debug)]
pub struct Embedded {
    conn: Connection,
    path: PathBuf,
    /// Told of every committed change to the full-text index (see [`Embedded::set_text_sink`]).
    text_sink: SinkSlot<dyn TextSink>,
    /// Told of every committed change to the vectors outside the vector index (see
    /// [`Embedded::set_vector_sink`]).
    vector_sink: SinkSlot<dyn VectorSink>,
    /// The durability the connection's `synchronous` setting gives commits now: set before a
    /// transaction begins (SQLite refuses to change it inside one), and only when it differs.
    synced: Durability,
}

/// How a write transaction's commit reaches the disk.
///
/// Both are committed alike for every reader (the WAL holds the transaction when `commit`
/// returns); they differ only in whether `commit` waits for an fsync. The WAL is written in
/// commit order, so the fsync of a later [`Durability::Synced`] commit makes every deferred
/// commit before it durable too; a power loss or system crash before one loses the deferred
/// commits whole, never part of one. A process that is killed loses nothing either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsynced before `commit` returns: what a caller is told is stored (records appended,
    /// everything written on a user's request).
    Synced,
    /// Not waited for: what the store can derive again from its log and checkpoints (stage
    /// 2's enrichment behind `enriched_through`) or what no caller was promised (the access
    /// notes a read leaves).
    Deferred,
}

/// An optional sink ([`TextSink`], [`VectorSink`]), printable.
struct SinkSlot<T: ?Sized>(Option<Arc<T>>);

impl<T: ?Sized> Default for SinkSlot<T> {
    fn default() -> Self {
        SinkSlot(None)
    }
}

impl<T: ?Sized> std::fmt::Debug for SinkSlot<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(sink)" } else { "None" })
    }
}

impl Embedded {
    /// Open (or create) the store at `path`, applying migrations to an older format.
    ///
    /// Opening a current-format store writes nothing.
    pub fn open(path: &Path, mode: OpenMode) -> Result<Embedded, StoreError> {
        let exists = path.exists();
        if !exists && mode == OpenMode::MustExist {
            return Err(StoreError::Missing(path.to_owned()));
        }
        if !exists {
            create_private(path)?;
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        // First, so that the header reads below wait for a process creating the same store
        // instead of failing as "not a store".
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let not_a_store = |_| StoreError::NotAStore(path.to_owned());
        // One read transaction: another process creating the store at the same time is seen
        // before or after its creation, never halfway (a version without the application id).
        let (app_id, version, tables) = {
            let read = conn.unchecked_transaction()?;
            let app_id: i32 = read
                .pragma_query_value(None, "application_id", |r| r.get(0))
                .map_err(not_a_store)?;
            let version: u32 =
                read.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(not_a_store)?;
            let tables = table_count(&read).map_err(not_a_store)?;
            read.commit()?;
            (app_id, version, tables)
        };
        let fresh = app_id == 0 && version == 0 && tables == 0;
        if !fresh && app_id != APPLICATION_ID {
            return Err(StoreError::NotAStore(path.to_owned()));
        }
        if version > FORMAT_VERSION {
            return Err(StoreError::TooNew { found: version, supported: FORMAT_VERSION });
        }
        if fresh {
            // WAL is persistent in the file header: set once, at creation.
            set_wal(&conn)?;
        }
        // Per-connection settings: these write nothing to the file.
        conn.pragma_update(None, "synchronous", "FULL")?;
        // The projection reads nodes and index pages at random: a 2 MiB default cache thrashes
        // on a large store. 256 MiB of page cache and memory-mapped reads keep it in memory.
        conn.pragma_update(None, "cache_size", -262_144)?;
        conn.pragma_update(None, "mmap_size", MMAP_BYTES)?;
        conn.pragma_update(None, "temp_store", "MEMORY")?;
        conn.pragma_update(None, "wal_autocheckpoint", AUTO_CHECKPOINT_PAGES)?;
        // A checkpoint that resets the WAL leaves the file at its largest size; cut it back to
        // the same ~64 MiB, so the file does not keep what one burst of writes made it.
        conn.pragma_update(None, "journal_size_limit", WAL_LIMIT_BYTES)?;
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        // The query planner stability guarantee: plans do not depend on the values bound to a
        // statement. Without it, this build (STAT4) marks a statement whose parameter meets an
        // index with samples, and re-prepares it every time the statement cache hands it out
        // with new values; recall's edge lookups paid that on every call.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.set_prepared_statement_cache_capacity(64);
        let mut store = Embedded {
            conn,
            path: path.to_owned(),
            text_sink: SinkSlot::default(),
            vector_sink: SinkSlot::default(),
            synced: Durability::Synced,
        };
        if version < FORMAT_VERSION {
            store.migrate(version)?;
        }
        // Per connection, in the temp schema (nothing is written to the file): document
        // frequencies of the full-text index's terms, which searches use to leave out the
        // commonest words; its occurrences, which lexical index builds read; and a scratch
        // full-text table with the index's tokenizer, which turns a question into the index's
        // terms (so question and index are tokenized and stemmed by the same code).
        store.conn.execute_batch(&format!(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.text_vocab USING fts5vocab(main, text_index, row);
             CREATE VIRTUAL TABLE IF NOT EXISTS temp.text_instance USING fts5vocab(main, text_index, instance);
             CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_text USING fts5(body, tokenize = '{TOKENIZER}');
             CREATE VIRTUAL TABLE IF NOT EXISTS temp.query_instance USING fts5vocab(temp, query_text, instance);"
        ))?;
        Ok(store)
    }

    fn migrate(&mut self, from: u32) -> Result<(), StoreError> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Exclusive)?;
        // Another process may have created or migrated the store between the version read at
        // open and this lock (two first writes to one new path): start from what is there now.
        let app_id: i32 = tx.pragma_query_value(None, "application_id", |r| r.get(0))?;
        if app_id != 0 && app_id != APPLICATION_ID {
            return Err(StoreError::NotAStore(self.path.clone()));
        }
        let now: u32 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        let from = from.max(now);
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > from) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", version)?;
        }
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        tx.commit()?;
        Ok(())
    }

    /// The format version of the store file at `path` as it is on disk when opening it would
    /// migrate it (an older format than [`FORMAT_VERSION`]), read without migrating: `None`
    /// for a current store, a new one, no file, or one that cannot be read as a store (opening
    /// it says why). A caller may tell its user before opening starts the migration.
    pub fn format_to_upgrade_at(path: &Path) -> Option<u32> {
        if !path.is_file() {
            return None;
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).ok()?;
        let version: u32 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).ok()?;
        (1..FORMAT_VERSION).contains(&version).then_some(version)
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes on disk: the database file plus its write-ahead log.
    pub fn size_on_disk(&self) -> u64 {
        let wal = PathBuf::from(format!("{}-wal", self.path.display()));
        [self.path.as_path(), wal.as_path()]
            .iter()
            .filter_map(|p| std::fs::metadata(p).ok())
            .map(|m| m.len())
            .sum()
    }

    /// Size of the write-ahead log file in bytes (0 when there is none).
    pub fn wal_size(&self) -> u64 {
        std::fs::metadata(format!("{}-wal", self.path.display())).map_or(0, |m| m.len())
    }

    /// Bound this connection's page cache to about `bytes` (SQLite's `cache_size`). Opening
    /// gives 256 MiB, which suits the one writer of a bulk load; a server's many reader
    /// connections each hold their own cache, so they get less.
    pub fn set_cache_bytes(&self, bytes: u64) -> Result<(), StoreError> {
        let kib = i64::try_from(bytes / 1024).unwrap_or(i64::MAX).max(1);
        self.conn.pragma_update(None, "cache_size", -kib)?;
        Ok(())
    }

    /// Bound how much of the file this connection maps into memory for reading (SQLite's
    /// `mmap_size`); 0 turns memory-mapped reads off. Opening maps up to 64 GiB (`MMAP_BYTES`;
    /// the build raises SQLite's 2 GiB ceiling), which suits one process reading a large store.
    /// Mapped pages are the kernel's page cache, not the process's heap, but every connection
    /// maps the file on its own and the resident size counts each mapping's pages: a server
    /// with many connections to a growing store reads through its bounded page caches instead.
    pub fn set_mmap_bytes(&self, bytes: u64) -> Result<(), StoreError> {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        self.conn.pragma_update(None, "mmap_size", bytes)?;
        Ok(())
    }

    /// Tell `sink` (or no one) of every change to the full-text index that a write transaction
    /// of this connection commits, with the added documents tokenized: how a copy of the newer
    /// documents shared by the engines of one process follows the store. Changes made through
    /// other connections are not told; their readers see [`GraphReader::text_version`] move.
    pub fn set_text_sink(&mut self, sink: Option<Arc<dyn TextSink>>) {
        self.text_sink = SinkSlot(sink);
    }

    /// Tell `sink` (or no one) of every change to the vectors outside the vector index that a
    /// write transaction of this connection commits, with the vectors written: how a copy of
    /// them shared by the engines of one process follows the store. Changes made through other
    /// connections are not told; their readers see [`GraphReader::vector_generation`] move.
    pub fn set_vector_sink(&mut self, sink: Option<Arc<dyn VectorSink>>) {
        self.vector_sink = SinkSlot(sink);
    }

    /// Start the single write transaction. Its changes are durable when [`EmbeddedWrite::commit`]
    /// returns and discarded if it is dropped.
    pub fn begin_write(&mut self) -> Result<EmbeddedWrite<'_>, StoreError> {
        self.begin_write_as(Durability::Synced)
    }

    /// Start the single write transaction, committed with `durability`: visible to readers when
    /// [`EmbeddedWrite::commit`] returns either way, on disk then only when
    /// [`Durability::Synced`]. Discarded if it is dropped.
    pub fn begin_write_as(
        &mut self,
        durability: Durability,
    ) -> Result<EmbeddedWrite<'_>, StoreError> {
        if self.synced != durability {
            let level = match durability {
                Durability::Synced => "FULL",
                // In WAL mode, NORMAL syncs the WAL only at checkpoints: a commit is not
                // waited for, and the database stays consistent whatever is lost.
                Durability::Deferred => "NORMAL",
            };
            self.conn.pragma_update(None, "synchronous", level)?;
            self.synced = durability;
        }
        Ok(EmbeddedWrite {
            text: TextChanges { sink: self.text_sink.0.clone(), ..TextChanges::default() },
            tx: self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?,
            edges_changed: Cell::new(false),
            nodes: RefCell::new(HashMap::default()),
            nids: RefCell::new(HashMap::default()),
            any_pending: Cell::new(None),
            vectors_changed: Cell::new(false),
            vectors: VectorChanges { sink: self.vector_sink.0.clone(), ..VectorChanges::default() },
            removed: Cell::new(false),
        })
    }

    /// Start a read transaction: a consistent snapshot for as long as it lives.
    pub fn begin_read(&self) -> Result<EmbeddedRead<'_>, StoreError> {
        Ok(EmbeddedRead { tx: self.conn.unchecked_transaction()? })
    }

    /// Rewrite the whole file from its live content (SQLite's `VACUUM`), then checkpoint and
    /// truncate the write-ahead log: no byte of deleted content survives anywhere in the files.
    ///
    /// Why forgetting needs it: `secure_delete` zeroes cells and pages as they are freed, but
    /// when SQLite rebalances a b-tree page it rebuilds the page from a copy and leaves the
    /// unallocated gap of the page as it was, so bytes of cells that moved away (before or
    /// during a forget) can stay there. Costs a copy of the file.
    pub fn vacuum(&self) -> Result<(), StoreError> {
        self.conn.execute_batch("VACUUM")?;
        self.checkpoint()
    }

    /// Write a consistent copy of the store to the new file `dest` (SQLite's `VACUUM INTO`),
    /// while other connections, in this process or others, go on writing: the copy is the
    /// store as of one read transaction, compacted, in WAL mode like the original, created
    /// readable by its owner only. A `dest` that exists is refused, never overwritten.
    pub fn backup_to(&self, dest: &Path) -> Result<(), StoreError> {
        if dest.exists() {
            return Err(StoreError::Exists(dest.to_owned()));
        }
        // VACUUM INTO writes into an empty file that exists, so the mode is ours to set first.
        create_private(dest)?;
        let target = dest
            .to_str()
            .ok_or_else(|| StoreError::Io(rusqlite::Error::InvalidPath(dest.to_owned())))?;
        if let Err(e) = self.conn.execute("VACUUM INTO ?1", [target]) {
            // Leave no half-written copy behind under the name the caller asked for.
            let _ = std::fs::remove_file(dest);
            return Err(e.into());
        }
        let copy = Connection::open(dest)?;
        copy.busy_timeout(BUSY_TIMEOUT)?;
        set_wal(&copy)?;
        Ok(())
    }

    /// Copy the WAL into the main file and truncate it (`ctxgraph` runs this after bulk loads).
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        self.conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// Whether this connection's commits copy the write-ahead log into the file themselves
    /// once it holds [`AUTO_CHECKPOINT_PAGES`] (on, as opened). A bulk load turns it off while
    /// a [`Checkpointer`] does that copy on another thread.
    pub fn set_auto_checkpoint(&self, on: bool) -> Result<(), StoreError> {
        let pages = if on { AUTO_CHECKPOINT_PAGES } else { 0 };
        self.conn.pragma_update(None, "wal_autocheckpoint", pages)?;
        Ok(())
    }

    /// Copy into the file what the write-ahead log holds beyond what is copied already, without
    /// waiting for anyone (SQLite's passive checkpoint). When everything was copied, the next
    /// write transaction starts the log over from its beginning.
    pub fn checkpoint_passive(&self) -> Result<WalCheckpoint, StoreError> {
        passive_checkpoint(&self.conn)
    }

    /// A second connection to this store's file, which only checkpoints: it may live on
    /// another thread than this one and copy the write-ahead log while this connection writes.
    pub fn checkpointer(&self) -> Result<Checkpointer, StoreError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // The copy is synced before the log may start over: durability does not depend on it,
        // but a log started over must not rest on pages the file does not hold yet.
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
        Ok(Checkpointer { conn })
    }
}

/// What a passive checkpoint found and did, in frames (pages) of the write-ahead log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalCheckpoint {
    /// Whether another checkpoint held the log, so nothing was copied.
    pub busy: bool,
    /// Frames the log held when the checkpoint started.
    pub frames: u64,
    /// Frames copied into the file so far, this checkpoint's and earlier ones'.
    pub copied: u64,
}

/// A connection of its own that copies an embedded store's write-ahead log into its file
/// ([`Embedded::checkpointer`]), so that the writer's connection does not stop to do it.
pub struct Checkpointer {
    conn: Connection,
}

impl Checkpointer {
    /// [`Embedded::checkpoint_passive`], on this connection.
    pub fn passive(&self) -> Result<WalCheckpoint, StoreError> {
        passive_checkpoint(&self.conn)
    }
}

fn passive_checkpoint(conn: &Connection) -> Result<WalCheckpoint, StoreError> {
    let (busy, frames, copied): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?;
    // Both counts are -1 when the store is not in WAL mode or another checkpoint ran.
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(WalCheckpoint { busy: busy != 0, frames: count(frames), copied: count(copied) })
}

/// Bound the heap memory SQLite uses in this process, all connections together, to about
/// `bytes` (SQLite's soft heap limit; 0 removes the bound); returns the previous bound.
///
/// Near the bound, a connection's page cache reuses its least recently used pages instead of
/// growing, so the caches of many connections share one budget however many are open. It is a
/// soft bound: a statement that needs more memory than the budget still gets it.
pub fn set_heap_limit(bytes: u64) -> u64 {
    let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
    // SAFETY: a process-wide setting SQLite allows at any time, from any thread.
    let previous = unsafe { rusqlite::ffi::sqlite3_soft_heap_limit64(bytes) };
    u64::try_from(previous).unwrap_or(0)
}

/// Bytes of heap memory SQLite holds in this process (page caches, statements, schemas).
pub fn heap_used() -> u64 {
    // SAFETY: reads a process-wide counter.
    let used = unsafe { rusqlite::ffi::sqlite3_memory_used() };
    u64::try_from(used).unwrap_or(0)
}

/// How many pages (of 4 KiB) the write-ahead log holds before a commit copies it into the
/// file (SQLite's automatic checkpoint): every ~64 MiB instead of every 4 MiB, fewer and
/// larger copies during bulk ingestion. Durability does not depend on checkpoints.
pub const AUTO_CHECKPOINT_PAGES: u32 = 16_384;

/// The size the write-ahead log file is cut back to after a checkpoint resets it: the
/// automatic checkpoint's threshold (16,384 pages of 4 KiB).
const WAL_LIMIT_BYTES: i64 = 64 << 20;

/// How much of the file a connection maps for reading, at most: SQLite caps it at its
/// compile-time maximum, which the workspace's `.cargo/config.toml` raises from 2 GiB to this
/// size (`SQLITE_MAX_MMAP_SIZE`). Pages past the map are copied into the page cache by a
/// `pread` each; at a million events (a 4 GB file) a map of 1 GiB left every stored vector and
/// three quarters of the nodes outside it, and `pread` took a fifth of recall's time, and with
/// 2 GiB mapped still 7 %.
pub(crate) const MMAP_BYTES: i64 = 1 << 36;

/// How long a statement waits for another connection's lock before failing with `store.busy`.
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Switch a new store to WAL. The switch needs the file to itself and, unlike other statements,
/// fails at once (without the busy handler) while another connection, such as a second process
/// creating the same store, has it open: retry for as long as the busy timeout.
fn set_wal(conn: &Connection) -> Result<(), StoreError> {
    let started = std::time::Instant::now();
    loop {
        match conn.pragma_update(None, "journal_mode", "WAL") {
            Ok(()) => return Ok(()),
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && started.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Create an empty store file readable and writable by its owner only (Unix mode 0600): it
/// holds everything agents wrote, personal data included. SQLite gives its write-ahead log and
/// shared-memory files the same mode. A file another process created first is left as it is.
fn create_private(path: &Path) -> Result<(), StoreError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Io(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CANTOPEN),
            Some(format!("creating {}: {e}", path.display())),
        ))),
    }
}

fn table_count(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
}

/// A read snapshot of the embedded store.
pub struct EmbeddedRead<'a> {
    tx: rusqlite::Transaction<'a>,
}

/// The write transaction of the embedded store.
///
/// Updated nodes are kept in a write-back cache and flushed before any read that scans the node
/// table and at commit: an entity mentioned by many events of a batch is decoded and encoded once
/// per batch instead of once per mention. Node ids (`nid`) seen in the transaction are cached too,
/// because every edge write needs the ids of both endpoints. Both are hash maps: they are
/// looked up several times per projected record (a search of an ordered map of half a million
/// keys cost a tenth of projection), and flushing writes in `nid` order whatever the map's.
pub struct EmbeddedWrite<'a> {
    tx: rusqlite::Transaction<'a>,
    /// Whether an edge was written or deleted (by itself or with its node): commit then bumps
    /// the graph generation. A transaction that changed no edge leaves it, and the file, as
    /// they were.
    edges_changed: Cell<bool>,
    nodes: RefCell<HashMap<NodeKey, (i64, Node)>>,
    nids: RefCell<HashMap<NodeKey, i64>>,
    /// Whether any edge may be parked: when none is, a new node has nothing to complete and the
    /// lookup is skipped. `None` until first asked.
    any_pending: Cell<Option<bool>>,
    /// Whether this transaction changed the vectors table since the vector generation was last
    /// bumped: bumped once at commit (or before a read of it in this transaction), not once
    /// per vector.
    vectors_changed: Cell<bool>,
    /// This transaction's changes to the vectors outside the vector index, for the sink.
    vectors: VectorChanges,
    /// Whether this transaction deleted a vector or full-text document, or replaced a vector,
    /// since the removal generation was last bumped (see [`GraphReader::removal_generation`]).
    removed: Cell<bool>,
    /// This transaction's changes to the full-text index, for the text version and the sink.
    text: TextChanges,
}

/// A sink and what to tell it after the commit.
type SinkCall<S, C> = (Arc<S>, C);

/// What a write transaction did to the full-text index and the lexical index's build.
#[derive(Default)]
struct TextChanges {
    sink: Option<Arc<dyn TextSink>>,
    /// A document was added, replaced or deleted: commit bumps the text version.
    changed: Cell<bool>,
    /// Documents were deleted that `gone` does not list.
    removed: Cell<bool>,
    /// The lexical index's build changed (the text generation moved).
    rebuilt: Cell<bool>,
    /// The documents added, by id, kept only for a sink.
    added: RefCell<BTreeMap<i64, String>>,
    /// The documents held before the transaction that it deleted or replaced, only for a sink.
    gone: RefCell<std::collections::BTreeSet<i64>>,
}

impl TextChanges {
    /// Document `nid` written with `text`; `replaced`: it had a document already.
    fn add(&self, nid: i64, text: &str, replaced: bool) {
        self.changed.set(true);
        if self.sink.is_some() {
            let mut added = self.added.borrow_mut();
            // A document this transaction added is not one held before it.
            if replaced && !added.contains_key(&nid) {
                self.gone.borrow_mut().insert(nid);
            }
            added.insert(nid, text.to_owned());
        }
    }

    /// Document `nid` deleted.
    fn remove_one(&self, nid: i64) {
        self.changed.set(true);
        if self.sink.is_some() && self.added.borrow_mut().remove(&nid).is_none() {
            self.gone.borrow_mut().insert(nid);
        }
    }

    /// Documents deleted without their ids.
    fn remove(&self) {
        self.changed.set(true);
        self.removed.set(true);
    }
}

/// What a write transaction did to the vectors outside the vector index, kept only for a sink.
#[derive(Default)]
struct VectorChanges {
    sink: Option<Arc<dyn VectorSink>>,
    /// How many times the transaction bumped the vector generation.
    bumps: Cell<u64>,
    /// Vectors left or joined the outside set unlisted.
    removed: Cell<bool>,
    /// The last state of each vector written or deleted: its values when outside the index.
    written: RefCell<BTreeMap<i64, Option<Vec<f32>>>>,
    /// Vectors filed into the index that were not written before in the transaction.
    filed: RefCell<Vec<i64>>,
}

impl VectorChanges {
    /// Vector `nid` written with `vector` (outside the index until filed).
    fn put(&self, nid: i64, vector: &[f32]) {
        if self.sink.is_some() {
            self.written.borrow_mut().insert(nid, Some(vector.to_vec()));
        }
    }

    /// Vector `nid` deleted.
    fn delete(&self, nid: i64) {
        if self.sink.is_some() {
            self.written.borrow_mut().insert(nid, None);
        }
    }

    /// Vector `nid` filed into the index's list.
    fn file(&self, nid: i64) {
        if self.sink.is_some() {
            let mut written = self.written.borrow_mut();
            match written.get_mut(&nid) {
                Some(state) => *state = None,
                None => self.filed.borrow_mut().push(nid),
            }
        }
    }
}

/// Cached nodes (or node ids) that force a flush, bounding the caches' memory.
const NODE_CACHE_LIMIT: usize = 50_000;
const NID_CACHE_LIMIT: usize = 500_000;

impl EmbeddedWrite<'_> {
    /// Make this transaction's deletions overwrite what they remove (SQLite's `secure_delete`:
    /// freed cells and pages are zeroed), for forgetting; pass `false` again before commit.
    /// Bytes left in the write-ahead log go with [`Embedded::checkpoint`].
    pub fn secure_delete(&self, on: bool) -> Result<(), StoreError> {
        self.tx.pragma_update(None, "secure_delete", on)?;
        Ok(())
    }

    /// Merge the full-text index's segments into one. A delete from the contentless full-text
    /// index only marks the row deleted, leaving its terms in the segments; a merge drops them,
    /// and under [`EmbeddedWrite::secure_delete`] the freed pages are zeroed. Costs a rewrite of
    /// the whole full-text index.
    pub fn purge_text_index(&self) -> Result<(), StoreError> {
        self.tx.execute("INSERT INTO text_index (text_index) VALUES ('optimize')", [])?;
        Ok(())
    }

    /// Copy `entries` (read from another log, in position order) into this log at the same
    /// positions, with their ids, acknowledgement times and bodies byte for byte (a redacted
    /// record stays redacted): the way back from the scale-out backend. Each entry must land at
    /// the next position (the head plus one) under a `(kind, id)` not taken; stops at the first
    /// that cannot, with [`StoreError::Corruption`] for an entry out of order or
    /// [`StoreError::Conflict`] for a taken id. The graph is not touched: project afterwards.
    pub fn import(&mut self, entries: &[LogEntry]) -> Result<u64, StoreError> {
        let mut head = self.head()?;
        for e in entries {
            if e.position != head + 1 {
                return Err(StoreError::Corruption(format!(
                    "log position {} cannot be copied after head {head}: a migration copies a log in order into an empty store",
                    e.position
                )));
            }
            let inserted = self
                .tx
                .prepare_cached(
                    "INSERT INTO log (position, kind, record_id, recorded_at, body)
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (kind, record_id) DO NOTHING",
                )?
                .execute(params![
                    sql_int(e.position),
                    e.kind.as_str(),
                    e.id,
                    e.recorded_at,
                    e.body
                ])?;
            if inserted == 0 {
                let at: i64 = self
                    .tx
                    .prepare_cached("SELECT position FROM log WHERE kind = ?1 AND record_id = ?2")?
                    .query_row(params![e.kind.as_str(), e.id], |r| r.get(0))?;
                return Err(StoreError::Conflict {
                    kind: e.kind.as_str(),
                    id: e.id.clone(),
                    position: position(at),
                });
            }
            head = e.position;
        }
        Ok(entries.len() as u64)
    }

    /// The store's id of a node (its full-text document id), if the node exists.
    pub fn node_nid(&self, key: &NodeKey) -> Result<Option<i64>, StoreError> {
        self.nid(key)
    }

    /// Commit: visible to readers on return, and durable (fsynced) then unless the transaction
    /// was begun as [`Durability::Deferred`].
    pub fn commit(self) -> Result<(), StoreError> {
        self.flush_nodes()?;
        if self.edges_changed.get() {
            bump_counter(&self.tx, "graph_generation")?;
        }
        self.bump_vector_generation()?;
        self.bump_removal_generation()?;
        let told = self.text_commit()?;
        let told_vectors = self.vector_commit()?;
        self.tx.commit()?;
        if let Some((sink, commit)) = told {
            sink.committed(commit);
        }
        if let Some((sink, commit)) = told_vectors {
            sink.committed(commit);
        }
        Ok(())
    }

    /// For a sink, when the vector generation moved, what to tell it once the transaction has
    /// committed.
    fn vector_commit(&self) -> Result<Option<SinkCall<dyn VectorSink, VectorCommit>>, StoreError> {
        let v = &self.vectors;
        let Some(sink) = v.sink.as_ref().filter(|_| v.bumps.get() > 0) else { return Ok(None) };
        let after = meta_counter(&self.tx, "vector_generation")?;
        let written = std::mem::take(&mut *v.written.borrow_mut());
        let mut gone = std::mem::take(&mut *v.filed.borrow_mut());
        gone.extend(written.keys());
        gone.sort_unstable();
        gone.dedup();
        let outside =
            if sink.wants_count() { Some(graph_vectors_outside(&self.tx)?) } else { None };
        let commit = VectorCommit {
            before: after.saturating_sub(v.bumps.get()),
            after,
            removed: v.removed.get(),
            gone,
            vectors: written.into_iter().filter_map(|(nid, v)| Some((nid, v?))).collect(),
            outside,
        };
        Ok(Some((sink.clone(), commit)))
    }

    /// Bump the text version if a document changed, and, for a sink, what to tell it once
    /// the transaction has committed (the added documents tokenized on this connection).
    fn text_commit(&self) -> Result<Option<SinkCall<dyn TextSink, TextCommit>>, StoreError> {
        let text = &self.text;
        let changed = text.changed.get();
        let told = text.sink.as_ref().filter(|_| changed || text.rebuilt.get());
        if !changed && told.is_none() {
            return Ok(None);
        }
        let before = meta_counter(&self.tx, "text_version")?;
        if changed {
            bump_counter(&self.tx, "text_version")?;
        }
        let Some(sink) = told else { return Ok(None) };
        let added = std::mem::take(&mut *text.added.borrow_mut());
        let texts: Vec<&str> = added.values().map(String::as_str).collect();
        let mut terms: Vec<BTreeMap<String, u32>> = vec![BTreeMap::new(); texts.len()];
        for (i, term) in index_terms(&self.tx, &texts)? {
            if let Some(doc) = terms.get_mut(i) {
                *doc.entry(term).or_insert(0) += 1;
            }
        }
        let docs = added
            .keys()
            .zip(terms)
            .map(|(&id, terms)| TextDoc { id, terms: terms.into_iter().collect() })
            .collect();
        let base = graph_text_index_build(&self.tx)?.map_or(-1, |b| b.through);
        let above_base =
            if sink.wants_count() { Some(graph_text_docs_after(&self.tx, base)?.0) } else { None };
        let commit = TextCommit {
            before,
            after: before + u64::from(changed),
            generation: meta_counter(&self.tx, "text_generation")?,
            base,
            removed: text.removed.get(),
            gone: std::mem::take(&mut *text.gone.borrow_mut()).into_iter().collect(),
            docs,
            above_base,
        };
        Ok(Some((sink.clone(), commit)))
    }

    /// [`GraphReader::text_version`]: `None` once this transaction changed a document (no copy
    /// made elsewhere holds its documents).
    fn text_version_now(&self) -> Result<Option<u64>, StoreError> {
        if self.text.changed.get() {
            return Ok(None);
        }
        meta_counter(&self.tx, "text_version").map(Some)
    }

    /// Bump the vector generation if this transaction changed a vector since the last bump.
    fn bump_vector_generation(&self) -> Result<(), StoreError> {
        if self.vectors_changed.replace(false) {
            bump_counter(&self.tx, "vector_generation")?;
            self.vectors.bumps.set(self.vectors.bumps.get() + 1);
        }
        Ok(())
    }

    /// [`GraphReader::vector_generation`], with this transaction's changes counted.
    fn vector_generation_now(&self) -> Result<u64, StoreError> {
        self.bump_vector_generation()?;
        meta_counter(&self.tx, "vector_generation")
    }

    /// Bump the removal generation if this transaction removed a vector or document since the
    /// last bump.
    fn bump_removal_generation(&self) -> Result<(), StoreError> {
        if self.removed.replace(false) {
            bump_counter(&self.tx, "removal_generation")?;
        }
        Ok(())
    }

    /// [`GraphReader::removal_generation`], with this transaction's removals counted.
    fn removal_generation_now(&self) -> Result<u64, StoreError> {
        self.bump_removal_generation()?;
        meta_counter(&self.tx, "removal_generation")
    }

    fn flush_nodes(&self) -> Result<(), StoreError> {
        let mut nodes: Vec<(i64, Node)> =
            std::mem::take(&mut *self.nodes.borrow_mut()).into_values().collect();
        nodes.sort_unstable_by_key(|(nid, _)| *nid);
        let mut st = self.tx.prepare_cached("UPDATE nodes SET props = ?1 WHERE nid = ?2")?;
        for (nid, node) in &nodes {
            st.execute(params![props_to(&node.props)?, nid])?;
        }
        Ok(())
    }

    fn cached_node(&self, key: &NodeKey) -> Option<Node> {
        self.nodes.borrow().get(key).map(|(_, n)| n.clone())
    }

    fn remember_nid(&self, key: &NodeKey, nid: i64) {
        let mut nids = self.nids.borrow_mut();
        if nids.len() >= NID_CACHE_LIMIT {
            nids.clear();
        }
        nids.insert(key.clone(), nid);
    }

    /// The id of an existing node, from the caches or the `nodes_key` index.
    fn nid(&self, key: &NodeKey) -> Result<Option<i64>, StoreError> {
        if let Some(nid) = self.nids.borrow().get(key) {
            return Ok(Some(*nid));
        }
        let nid = nid_of(&self.tx, key)?;
        if let Some(nid) = nid {
            self.remember_nid(key, nid);
        }
        Ok(nid)
    }

    fn endpoint_nid(&self, key: &NodeKey) -> Result<i64, StoreError> {
        self.nid(key)?.ok_or_else(|| {
            StoreError::Corruption(format!("edge endpoint {key} is not a stored node"))
        })
    }

    fn maybe_pending(&self) -> Result<bool, StoreError> {
        if let Some(known) = self.any_pending.get() {
            return Ok(known);
        }
        let any: bool =
            self.tx.query_row("SELECT EXISTS (SELECT 1 FROM pending_edges)", [], |r| r.get(0))?;
        self.any_pending.set(Some(any));
        Ok(any)
    }

    fn exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        Ok(self.nid(key)?.is_some())
    }

    fn load_node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        if let Some(node) = self.cached_node(key) {
            return Ok(Some(node));
        }
        let mut st = self.tx.prepare_cached(NODE_BY_KEY_SQL)?;
        let row: Option<(i64, String)> =
            st.query_row(params![key.label, key.id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        let Some((nid, props)) = row else { return Ok(None) };
        self.remember_nid(key, nid);
        Ok(Some(Node { key: key.clone(), props: props_from(&props)? }))
    }

    /// [`GraphReader::nodes_by_nid`]: each by its key, so the write-back cache, which may hold
    /// a newer version than the table, answers first.
    fn load_nodes_by_nid(&self, nids: &[i64]) -> Result<Vec<Option<Node>>, StoreError> {
        nids.iter()
            .map(|&nid| match node_key_of(&self.tx, nid)? {
                Some(key) => self.load_node(&key),
                None => Ok(None),
            })
            .collect()
    }

    /// [`GraphReader::nodes_by_nid_shared`]: decoded here, through the write-back cache.
    fn load_nodes_by_nid_shared(
        &self,
        nids: &[i64],
        _decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        Ok(crate::shared_nodes(self.load_nodes_by_nid(nids)?))
    }

    /// [`GraphReader::nodes_shared`]: decoded here, through the write-back cache.
    fn load_nodes_shared(
        &self,
        keys: &[NodeKey],
        _decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        Ok(crate::shared_nodes(self.nodes(keys)?))
    }

    /// [`GraphReader::node_props_named`]: the write path is not hot, so it decodes whole nodes
    /// (its write-back cache may hold a newer version than the table).
    fn load_node_named(
        &self,
        key: &NodeKey,
        names: &[&str],
    ) -> Result<Option<Properties>, StoreError> {
        Ok(self.load_node(key)?.map(|mut n| {
            n.props.retain(|k, _| names.contains(&k.as_str()));
            n.props
        }))
    }

    /// [`GraphReader::heaviest_neighbours`]: each far endpoint read through the write-back
    /// cache, which may hold a newer version than the table.
    fn heaviest_neighbours_named(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
        names: &[&str],
    ) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
        let mut out = Vec::new();
        for (_, edge, outgoing) in graph_heaviest_edges(&self.tx, key, weight, limit)? {
            let far = if outgoing { edge.key.to } else { edge.key.from };
            if let Some(props) = self.load_node_named(&far, names)? {
                out.push((far, props));
            }
        }
        Ok(out)
    }

    /// Reads that scan the node table see every node written so far.
    fn before_scan(&self) -> Result<(), StoreError> {
        self.flush_nodes()
    }

    /// Insert `node` if it is new (at once: edges need its id); the id of the stored node
    /// when it exists, for an update. A node not known to the caches is inserted first and
    /// looked up only when the insert finds it there, so a new node costs one statement.
    fn insert_node(&self, node: &Node) -> Result<Option<i64>, StoreError> {
        if let Some(nid) = self.nids.borrow().get(&node.key) {
            return Ok(Some(*nid));
        }
        let inserted = self
            .tx
            .prepare_cached(
                "INSERT INTO nodes (label, id, props) VALUES (?1, ?2, ?3)
                 ON CONFLICT (label, id) DO NOTHING",
            )?
            .execute(params![node.key.label, node.key.id, props_to(&node.props)?])?;
        if inserted == 1 {
            self.remember_nid(&node.key, self.tx.last_insert_rowid());
            return Ok(None);
        }
        self.nid(&node.key)?.map(Some).ok_or_else(|| {
            StoreError::Corruption(format!("node {} neither inserts nor exists", node.key))
        })
    }

    /// Keep an update of the stored node `nid` in the write-back cache.
    fn cache_node(&self, nid: i64, node: Node) -> Result<(), StoreError> {
        let full = {
            let mut nodes = self.nodes.borrow_mut();
            nodes.insert(node.key.clone(), (nid, node));
            nodes.len() >= NODE_CACHE_LIMIT
        };
        if full {
            self.flush_nodes()?;
        }
        Ok(())
    }
}

impl EmbeddedRead<'_> {
    fn exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
        Ok(nid_of(&self.tx, key)?.is_some())
    }

    fn load_node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        let mut st = self.tx.prepare_cached(NODE_BY_KEY_SQL)?;
        let row: Option<(i64, String)> =
            st.query_row(params![key.label, key.id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
        row.map(|(_, props)| Ok(Node { key: key.clone(), props: props_from(&props)? })).transpose()
    }

    /// [`GraphReader::nodes_by_nid`]: the table's rows.
    fn load_nodes_by_nid(&self, nids: &[i64]) -> Result<Vec<Option<Node>>, StoreError> {
        graph_nodes_by_nid(&self.tx, nids)
    }

    /// [`GraphReader::nodes_by_nid_shared`]: the table's rows.
    fn load_nodes_by_nid_shared(
        &self,
        nids: &[i64],
        decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        graph_nodes_by_nid_shared(&self.tx, nids, decode)
    }

    /// [`GraphReader::nodes_shared`]: the table's rows, each row's text handed to `decode`
    /// undecoded.
    fn load_nodes_shared(
        &self,
        keys: &[NodeKey],
        decode: &dyn NodeDecode,
    ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
        let mut st = self.tx.prepare_cached(NODE_BY_KEY_SQL)?;
        keys.iter()
            .map(|key| {
                let mut rows = st.query(params![key.label, key.id])?;
                let Some(row) = rows.next()? else { return Ok(None) };
                let text = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
                decode.decode(row.get(0)?, &key.label, &key.id, text).map(Some)
            })
            .collect()
    }

    fn vector_generation_now(&self) -> Result<u64, StoreError> {
        meta_counter(&self.tx, "vector_generation")
    }

    fn removal_generation_now(&self) -> Result<u64, StoreError> {
        meta_counter(&self.tx, "removal_generation")
    }

    fn text_version_now(&self) -> Result<Option<u64>, StoreError> {
        meta_counter(&self.tx, "text_version").map(Some)
    }

    fn load_node_named(
        &self,
        key: &NodeKey,
        names: &[&str],
    ) -> Result<Option<Properties>, StoreError> {
        let mut st = self.tx.prepare_cached(NODE_BY_KEY_SQL)?;
        let mut rows = st.query(params![key.label, key.id])?;
        let Some(row) = rows.next()? else { return Ok(None) };
        let text = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        props_named(text, names).map(Some)
    }

    fn heaviest_neighbours_named(
        &self,
        key: &NodeKey,
        weight: &dyn Fn(&str, bool) -> f64,
        limit: usize,
        names: &[&str],
    ) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
        graph_heaviest_neighbours(&self.tx, key, weight, limit, names)
    }

    fn before_scan(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// The properties among `names` of an encoded property object ([`props_to`]'s JSON, which
/// writes keys unescaped): decoded only when one of the names occurs in the text as a quoted
/// string, so the common node, which has none of them, costs a text search instead of a decode.
fn props_named(text: &str, names: &[&str]) -> Result<Properties, StoreError> {
    let quoted = |name: &str| {
        text.match_indices(name)
            .any(|(i, _)| text[..i].ends_with('"') && text[i + name.len()..].starts_with('"'))
    };
    if !names.iter().any(|n| quoted(n)) {
        return Ok(Properties::new());
    }
    let mut props = props_from(text)?;
    props.retain(|k, _| names.contains(&k.as_str()));
    Ok(props)
}

// ---------------------------------------------------------------- shared read implementation

/// Decode a node's or edge's properties as every backend stores them (a JSON object).
pub fn props_from(text: &str) -> Result<Properties, StoreError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Corruption(format!("properties do not decode: {e}")))
}

/// Encode a node's or edge's properties as every backend stores them (a JSON object).
pub fn props_to(props: &Properties) -> Result<String, StoreError> {
    serde_json::to_string(props)
        .map_err(|e| StoreError::Corruption(format!("properties do not encode: {e}")))
}

fn position(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn sql_int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

const LOG_COLUMNS: &str = "position, kind, record_id, recorded_at, body";

fn log_entry(row: &Row<'_>) -> rusqlite::Result<(i64, String, String, String, String)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?))
}

fn decode_entry(raw: (i64, String, String, String, String)) -> Result<LogEntry, StoreError> {
    let (pos, kind, id, recorded_at, body) = raw;
    let kind = RecordKind::parse(&kind).ok_or_else(|| {
        StoreError::Corruption(format!("log position {pos} has unknown kind `{kind}`"))
    })?;
    Ok(LogEntry { position: position(pos), kind, id, recorded_at, body })
}

/// Columns of an edge joined with both endpoint nodes: the edge's key in terms of node keys.
const EDGE_JOIN: &str = "SELECT f.label, f.id, e.edge_type, t.label, t.id, e.qualifier, e.props
     FROM edges e JOIN nodes f ON f.nid = e.from_nid JOIN nodes t ON t.nid = e.to_nid";

/// The edges of one node (`?1`, its nid) in one direction, each with its far endpoint's key:
/// one joined statement rather than a lookup per far endpoint (most of a neighbour read's time
/// was those lookups). The far endpoint is joined by nid and the rows come in the index's
/// order (type, far nid, qualifier), which `ORDER BY` only states: the index already gives it,
/// so no sort runs. The query planner stability guarantee (set at open) keeps the join from
/// being re-prepared for every new binding.
fn near_edges_sql(out: bool, typed: bool, limited: bool) -> String {
    let (near, far) = if out { ("from_nid", "to_nid") } else { ("to_nid", "from_nid") };
    let typed = if typed { "AND e.edge_type = ?2" } else { "" };
    let limited = if limited { "LIMIT ?3" } else { "" };
    format!(
        "SELECT e.edge_type, n.label, n.id, e.qualifier, e.props
         FROM edges e JOIN nodes n ON n.nid = e.{far}
         WHERE e.{near} = ?1 {typed} ORDER BY e.edge_type, e.{far}, e.qualifier {limited}"
    )
}

/// Run a [`near_edges_sql`] statement: `key` is the near endpoint. Edges whose far endpoint is
/// gone (never: edges are deleted with their nodes) are left out by the join.
fn near_edges(
    st: &mut rusqlite::CachedStatement<'_>,
    params: impl rusqlite::Params,
    key: &NodeKey,
    out: bool,
) -> Result<Vec<Edge>, StoreError> {
    let rows = st.query_map(params, |r| {
        Ok((
            r.get::<_, String>(0)?,
            NodeKey { label: r.get(1)?, id: r.get(2)? },
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
        ))
    })?;
    let mut edges = Vec::new();
    for row in rows {
        let (edge_type, other, qualifier, props) = row?;
        let (from, to) = if out { (key.clone(), other) } else { (other, key.clone()) };
        edges.push(Edge {
            key: EdgeKey { from, edge_type, to, qualifier },
            props: props_from(&props)?,
        });
    }
    Ok(edges)
}

/// The key of the node with this nid.
fn node_key_of(c: &Connection, nid: i64) -> Result<Option<NodeKey>, StoreError> {
    Ok(c.prepare_cached("SELECT label, id FROM nodes WHERE nid = ?1")?
        .query_row(params![nid], |r| Ok(NodeKey { label: r.get(0)?, id: r.get(1)? }))
        .optional()?)
}

fn edge_row(row: &Row<'_>) -> rusqlite::Result<(EdgeKey, String)> {
    Ok((
        EdgeKey {
            from: NodeKey { label: row.get(0)?, id: row.get(1)? },
            edge_type: row.get(2)?,
            to: NodeKey { label: row.get(3)?, id: row.get(4)? },
            qualifier: row.get(5)?,
        },
        row.get(6)?,
    ))
}

fn collect_edges(
    rows: impl Iterator<Item = rusqlite::Result<(EdgeKey, String)>>,
) -> Result<Vec<Edge>, StoreError> {
    rows.map(|r| {
        let (key, props) = r?;
        Ok(Edge { key, props: props_from(&props)? })
    })
    .collect()
}

fn nid_of(c: &Connection, key: &NodeKey) -> Result<Option<i64>, StoreError> {
    let mut st = c.prepare_cached(NODE_NID_SQL)?;
    Ok(st.query_row(params![key.label, key.id], |r| r.get(0)).optional()?)
}

/// The `meta` key of a store setting: its own namespace, apart from the checkpoints.
fn setting_key(key: &str) -> String {
    format!("setting.{key}")
}

fn meta_position(c: &Connection, key: &str) -> Result<u64, StoreError> {
    let v: i64 = c.prepare_cached(META_VALUE_SQL)?.query_row(params![key], |r| r.get(0))?;
    Ok(position(v))
}

fn graph_embedding_model(c: &Connection) -> Result<Option<(String, usize)>, StoreError> {
    let get = |key: &str| -> Result<Option<rusqlite::types::Value>, StoreError> {
        Ok(c.prepare_cached(META_VALUE_SQL)?.query_row(params![key], |r| r.get(0)).optional()?)
    };
    match (get("embedding_model")?, get("embedding_dimension")?) {
        (Some(rusqlite::types::Value::Text(id)), Some(rusqlite::types::Value::Integer(dim))) => {
            Ok(Some((id, usize::try_from(dim).unwrap_or(0))))
        }
        (None, None) => Ok(None),
        _ => Err(StoreError::Corruption("embedding model metadata is incomplete".into())),
    }
}

fn graph_vector(c: &Connection, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
    let Some(nid) = nid_of(c, key)? else { return Ok(None) };
    let data: Option<Vec<u8>> = c
        .prepare_cached("SELECT data FROM vectors WHERE nid = ?1")?
        .query_row(params![nid], |r| r.get(0))
        .optional()?;
    Ok(data.map(|bytes| f32s(&bytes)))
}

fn graph_vector_list(
    c: &Connection,
    key: &NodeKey,
) -> Result<Option<(i64, Option<u32>)>, StoreError> {
    let Some(nid) = nid_of(c, key)? else { return Ok(None) };
    let list: Option<Option<i64>> = c
        .prepare_cached("SELECT list FROM vector_lists WHERE nid = ?1")?
        .query_row(params![nid], |r| r.get(0))
        .optional()?;
    Ok(list.map(|l| (nid, l.and_then(|l| u32::try_from(l).ok()))))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    let mut out = Vec::with_capacity(bytes.len() / 4);
    f32s_into(bytes, &mut out);
    out
}

/// [`f32s`] into a buffer a scan reuses.
fn f32s_into(bytes: &[u8], out: &mut Vec<f32>) {
    out.clear();
    out.extend(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])));
}

/// Columns of a vector joined with its node.
const VECTOR_JOIN: &str =
    "SELECT v.nid, n.label, n.id, v.data FROM vectors v JOIN nodes n ON n.nid = v.nid";

fn vector_row(row: &Row<'_>) -> rusqlite::Result<StoredVector> {
    Ok(StoredVector {
        nid: row.get(0)?,
        key: NodeKey { label: row.get(1)?, id: row.get(2)? },
        vector: f32s(&row.get::<_, Vec<u8>>(3)?),
    })
}

fn graph_vectors_page(
    c: &Connection,
    after: i64,
    limit: usize,
) -> Result<Vec<StoredVector>, StoreError> {
    let mut st =
        c.prepare_cached(&format!("{VECTOR_JOIN} WHERE v.nid > ?1 ORDER BY v.nid LIMIT ?2"))?;
    let rows = st.query_map(params![after, sql_int(limit as u64)], vector_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn graph_scan_unindexed_vectors(
    c: &Connection,
    visit: &mut dyn FnMut(i64, &[f32]),
) -> Result<(), StoreError> {
    // No join with the nodes and one buffer for every row: a search keeps a few of these
    // vectors, so only their keys are read (every reader runs this on every search).
    let mut st = c.prepare_cached(
        "SELECT v.nid, v.data FROM vector_lists l JOIN vectors v ON v.nid = l.nid
         WHERE l.list IS NULL ORDER BY l.nid",
    )?;
    let mut rows = st.query([])?;
    let mut vector = Vec::new();
    while let Some(row) = rows.next()? {
        let nid: i64 = row.get(0)?;
        let bytes = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
        f32s_into(bytes, &mut vector);
        visit(nid, &vector);
    }
    Ok(())
}

fn graph_vector_counts(c: &Connection) -> Result<(u64, u64), StoreError> {
    let count = |sql: &str| -> Result<u64, StoreError> {
        Ok(position(c.prepare_cached(sql)?.query_row([], |r| r.get(0))?))
    };
    // The narrow table has a row per vector: counting it reads a page per few hundred vectors.
    Ok((count("SELECT count(*) FROM vector_lists")?, graph_vectors_outside(c)?))
}

/// How many vectors are outside the vector index (a scan of the partial index of them).
fn graph_vectors_outside(c: &Connection) -> Result<u64, StoreError> {
    let sql = "SELECT count(*) FROM vector_lists WHERE list IS NULL";
    Ok(position(c.prepare_cached(sql)?.query_row([], |r| r.get(0))?))
}

fn graph_scan_vectors_of(
    c: &Connection,
    nids: &[i64],
    visit: &mut dyn FnMut(i64, &[f32]),
) -> Result<(), StoreError> {
    let mut st = c.prepare_cached("SELECT data FROM vectors WHERE nid = ?1")?;
    let mut vector = Vec::new();
    for &nid in nids {
        let mut rows = st.query(params![nid])?;
        if let Some(row) = rows.next()? {
            let bytes = row.get_ref(0)?.as_blob().map_err(rusqlite::Error::from)?;
            f32s_into(bytes, &mut vector);
            visit(nid, &vector);
        }
    }
    Ok(())
}

/// [`GraphReader::nodes_by_nid`] of the table (not of a write-back cache).
fn graph_nodes_by_nid(c: &Connection, nids: &[i64]) -> Result<Vec<Option<Node>>, StoreError> {
    rows_by_nid(c, nids, |_, label, id, props| {
        Ok(Node { key: NodeKey::new(label, id), props: props_from(props)? })
    })
}

/// [`GraphReader::nodes_by_nid_shared`] of the table: each row's text handed to `decode`
/// undecoded.
fn graph_nodes_by_nid_shared(
    c: &Connection,
    nids: &[i64],
    decode: &dyn NodeDecode,
) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
    rows_by_nid(c, nids, |nid, label, id, props| decode.decode(nid, label, id, props))
}

/// What `make` makes of each node row of `nids` (its id, label, id and property text), in the
/// order given, `None` for an id with no row: a statement per id. (One statement over all the
/// ids, passed as a JSON array, ran more instructions: SQLite builds a temporary index of the
/// ids before it seeks them.)
fn rows_by_nid<T>(
    c: &Connection,
    nids: &[i64],
    make: impl Fn(i64, &str, &str, &str) -> Result<T, StoreError>,
) -> Result<Vec<Option<T>>, StoreError> {
    let mut st = c.prepare_cached(NODE_BY_NID_SQL)?;
    nids.iter()
        .map(|&nid| {
            let mut rows = st.query(params![nid])?;
            let Some(row) = rows.next()? else { return Ok(None) };
            let text = |i: usize| -> Result<&str, StoreError> {
                Ok(row.get_ref(i)?.as_str().map_err(rusqlite::Error::from)?)
            };
            make(nid, text(0)?, text(1)?, text(2)?).map(Some)
        })
        .collect()
}

/// Add one to a counter in meta (a generation; see [`meta_counter`]). The vector generation
/// is bumped after every change of the vectors table (a vector written or deleted, the index's
/// list of one set or cleared), the graph generation after every write transaction that wrote or
/// deleted an edge (so a cache of the graph's edges is dropped by the next read that sees the
/// commit), the index generations after every change of their index.
fn bump_counter(c: &Connection, key: &str) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, 1) ON CONFLICT (key) DO UPDATE SET value = value + 1",
    )?
    .execute(params![key])?;
    Ok(())
}

/// A counter in meta (an index generation), 0 before its first bump.
fn meta_counter(c: &Connection, key: &str) -> Result<u64, StoreError> {
    let v: Option<i64> =
        c.prepare_cached(META_VALUE_SQL)?.query_row(params![key], |r| r.get(0)).optional()?;
    Ok(v.map_or(0, position))
}

fn graph_ann_centroids(c: &Connection) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(c.prepare_cached("SELECT value FROM meta WHERE key = 'ann_centroids'")?
        .query_row([], |r| r.get(0))
        .optional()?)
}

fn graph_ann_list(c: &Connection, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
    Ok(c.prepare_cached("SELECT members FROM ann_lists WHERE list = ?1")?
        .query_row(params![list], |r| r.get(0))
        .optional()?)
}

fn graph_is_archived(c: &Connection, key: &NodeKey) -> Result<bool, StoreError> {
    Ok(c.prepare_cached("SELECT 1 FROM archived WHERE label = ?1 AND id = ?2")?
        .query_row(params![key.label, key.id], |_| Ok(()))
        .optional()?
        .is_some())
}

fn graph_archived(
    c: &Connection,
    after: Option<&NodeKey>,
    limit: usize,
) -> Result<Vec<Archived>, StoreError> {
    let (label, id) = after.map_or(("", ""), |k| (k.label.as_str(), k.id.as_str()));
    let mut st = c.prepare_cached(
        "SELECT label, id, archived_at FROM archived WHERE (label, id) > (?1, ?2) ORDER BY label, id LIMIT ?3",
    )?;
    let rows = st.query_map(params![label, id, sql_int(limit as u64)], |r| {
        Ok(Archived { key: NodeKey { label: r.get(0)?, id: r.get(1)? }, archived_at: r.get(2)? })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The full-text index's tokenizer, as `format_v2.sql` creates it.
pub(crate) const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";

/// The index terms of each word of `words` (a word may give none, e.g. punctuation), through
/// the scratch table with the index's tokenizer: `(word position, term)`.
fn index_terms(c: &Connection, words: &[&str]) -> Result<Vec<(usize, String)>, StoreError> {
    crate::tokenizer::scratch_occurrences(c, "temp.query_text", "temp.query_instance", words)
}

/// Documents containing `term` in the full-text index. Costs a pass over the term's documents
/// (the vocabulary table counts them), so only searches without a lexical index use it.
fn term_docs(c: &Connection, term: &str) -> Result<u64, StoreError> {
    let docs: Option<i64> = c
        .prepare_cached("SELECT doc FROM temp.text_vocab WHERE term = ?1")?
        .query_row(params![term], |r| r.get(0))
        .optional()?;
    Ok(docs.map_or(0, position))
}

fn graph_text_terms(c: &Connection, text: &str) -> Result<Vec<String>, StoreError> {
    let mut terms: Vec<String> = index_terms(c, &[text])?.into_iter().map(|(_, t)| t).collect();
    terms.sort();
    terms.dedup();
    Ok(terms)
}

/// Documents the words of a search may match together before the commonest words are left out.
/// BM25 scores every matching document, so a word found in half a million events would cost
/// far more than it tells; the rarest word is always kept.
const MAX_MATCHING_DOCS: u64 = 5_000;

/// Search words as an FTS5 expression: every word quoted (no operators reach FTS5), OR-ed; with
/// `capped`, rarest first (by their index terms), leaving out the commonest once the matches
/// would pass [`MAX_MATCHING_DOCS`].
fn fts_query(c: &Connection, words: &[String], capped: bool) -> Result<Option<String>, StoreError> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let mut counted = Vec::with_capacity(words.len());
    for (i, term) in index_terms(c, &words)? {
        let Some(word) = words.get(i) else { continue };
        let docs = if capped { term_docs(c, &term)? } else { 0 };
        counted.push((docs, word.replace('"', "\"\"")));
    }
    counted.sort();
    counted.dedup();
    let mut matching = 0;
    let mut kept = Vec::new();
    for (i, (docs, w)) in counted.into_iter().enumerate() {
        matching += docs;
        if i > 0 && matching > MAX_MATCHING_DOCS {
            break;
        }
        kept.push(format!("\"{w}\""));
    }
    Ok((!kept.is_empty()).then(|| kept.join(" OR ")))
}

fn graph_search_text(
    c: &Connection,
    words: &[String],
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let Some(expr) = fts_query(c, words, after < 0)? else { return Ok(Vec::new()) };
    let mut st = c.prepare_cached(
        "SELECT rowid, -bm25(text_index) AS score FROM text_index
         WHERE text_index MATCH ?1 AND rowid > ?2 ORDER BY score DESC, rowid LIMIT ?3",
    )?;
    let rows = st.query_map(params![expr, after, sql_int(limit as u64)], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn graph_text_docs_after(c: &Connection, after: i64) -> Result<(u64, Option<i64>), StoreError> {
    let count: i64 = c
        .prepare_cached("SELECT count(*) FROM text_index_docsize WHERE id > ?1")?
        .query_row(params![after], |r| r.get(0))?;
    let max: Option<i64> =
        c.prepare_cached("SELECT max(id) FROM text_index_docsize")?.query_row([], |r| r.get(0))?;
    Ok((position(count), max))
}

fn graph_scan_text_index(
    c: &Connection,
    visit: &mut dyn FnMut(&str, i64) -> bool,
) -> Result<(), StoreError> {
    let mut st = c.prepare_cached("SELECT term, doc FROM temp.text_instance")?;
    let mut rows = st.query([])?;
    while let Some(row) = rows.next()? {
        let term = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        if !visit(term, row.get(1)?) {
            break;
        }
    }
    Ok(())
}

fn graph_text_index_build(c: &Connection) -> Result<Option<TextIndexBuild>, StoreError> {
    let mut st = c.prepare_cached(META_VALUE_SQL)?;
    let through: Option<i64> = st.query_row(["text_built_through"], |r| r.get(0)).optional()?;
    let docs: Option<i64> = st.query_row(["text_docs"], |r| r.get(0)).optional()?;
    let avg_len: Option<f64> = st.query_row(["text_avg_len"], |r| r.get(0)).optional()?;
    Ok(match (through, docs, avg_len) {
        (Some(through), Some(docs), Some(avg_len)) => {
            Some(TextIndexBuild { through, docs: position(docs), avg_len })
        }
        _ => None,
    })
}

fn graph_node_keys(c: &Connection, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
    let mut out = Vec::with_capacity(nids.len());
    for &nid in nids {
        if let Some(key) = node_key_of(c, nid)? {
            out.push((nid, key));
        }
    }
    Ok(out)
}

/// Drop the lexical index's lists and statistics (not the full-text index).
const CLEAR_TEXT_INDEX: &str = "DELETE FROM text_postings;
     DELETE FROM meta WHERE key IN ('text_built_through', 'text_docs', 'text_avg_len');";

fn slot_row(row: &Row<'_>) -> rusqlite::Result<SessionSlot> {
    Ok(SessionSlot { at_ns: row.get(0)?, event_id: row.get(1)? })
}

fn log_head(c: &Connection) -> Result<u64, StoreError> {
    let v: Option<i64> = c.query_row("SELECT max(position) FROM log", [], |r| r.get(0))?;
    Ok(v.map_or(0, position))
}

fn log_get(c: &Connection, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM log WHERE kind = ?1 AND record_id = ?2"
    ))?;
    st.query_row(params![kind.as_str(), id], log_entry).optional()?.map(decode_entry).transpose()
}

fn log_read_from(c: &Connection, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM log WHERE position >= ?1 ORDER BY position LIMIT ?2"
    ))?;
    let rows = st.query_map(params![sql_int(from), sql_int(limit as u64)], log_entry)?;
    rows.map(|r| decode_entry(r?)).collect()
}

fn log_read_kind(c: &Connection, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {LOG_COLUMNS} FROM log WHERE kind = ?1 ORDER BY position"
    ))?;
    let rows = st.query_map(params![kind.as_str()], log_entry)?;
    rows.map(|r| decode_entry(r?)).collect()
}

/// Up to `limit` edges of one type on one side of a node, in index order: an index seek that
/// stops at the limit, whatever the node's degree.
fn graph_edges_limited(
    c: &Connection,
    key: &NodeKey,
    edge_type: &str,
    out: bool,
    limit: usize,
) -> Result<Vec<Edge>, StoreError> {
    let Some(nid) = nid_of(c, key)? else { return Ok(Vec::new()) };
    let mut st = c.prepare_cached(&near_edges_sql(out, true, true))?;
    near_edges(&mut st, params![nid, edge_type, sql_int(limit as u64)], key, out)
}

/// The ids of up to `limit` events of a trace, in node order (the `nodes_trace` index).
fn graph_trace_events(
    tx: &Connection,
    trace_id: &str,
    limit: usize,
) -> Result<Vec<String>, StoreError> {
    let mut st = tx.prepare_cached(
        "SELECT id FROM nodes WHERE label = 'Event' AND json_extract(props, '$.trace_id') = ?1 \
         ORDER BY nid LIMIT ?2",
    )?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = st.query_map(params![trace_id, limit], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn graph_existing_ids(
    c: &Connection,
    label: &str,
    ids: &[String],
) -> Result<Vec<String>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    // The ids as one JSON array parameter: a single cached statement, whatever their number.
    let list = serde_json::to_string(ids)
        .map_err(|e| StoreError::Corruption(format!("ids do not encode: {e}")))?;
    let mut st = c.prepare_cached(
        "SELECT id FROM nodes WHERE label = ?1 AND id IN (SELECT value FROM json_each(?2))",
    )?;
    let found: std::collections::BTreeSet<String> =
        st.query_map(params![label, list], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
    Ok(ids.iter().filter(|id| found.contains(*id)).cloned().collect())
}

fn graph_edge(c: &Connection, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
    let (Some(from), Some(to)) = (nid_of(c, &key.from)?, nid_of(c, &key.to)?) else {
        return Ok(None);
    };
    let mut st = c.prepare_cached(
        "SELECT props FROM edges WHERE from_nid = ?1 AND edge_type = ?2 AND to_nid = ?3 AND qualifier = ?4",
    )?;
    let props: Option<String> =
        st.query_row(params![from, key.edge_type, to, key.qualifier], |r| r.get(0)).optional()?;
    props.map(|p| Ok(Edge { key: key.clone(), props: props_from(&p)? })).transpose()
}

fn graph_heaviest_edges(
    c: &Connection,
    key: &NodeKey,
    weight: &dyn Fn(&str, bool) -> f64,
    limit: usize,
) -> Result<Vec<(f64, Edge, bool)>, StoreError> {
    let groups = graph_edge_groups(c, key, limit, &|ty, out| weight(ty, out) > 0.0)?;
    Ok(crate::heaviest_of(groups, weight, limit))
}

/// The far endpoints of [`graph_heaviest_edges`]'s edges, in its order, each with its
/// properties among `names` only: one joined read, with no edge properties decoded.
fn graph_heaviest_neighbours(
    c: &Connection,
    key: &NodeKey,
    weight: &dyn Fn(&str, bool) -> f64,
    limit: usize,
    names: &[&str],
) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
    let keep = |ty: &str, out: bool| weight(ty, out) > 0.0;
    let groups = edge_groups_by(c, key, limit, &keep, near_nodes_sql, &mut |row, _| {
        let other = NodeKey { label: row.get(1)?, id: row.get(2)? };
        let props = props_named(row.get_ref(3)?.as_str().map_err(rusqlite::Error::from)?, names)?;
        Ok((row.get(0)?, (other, props)))
    })?;
    Ok(crate::heaviest_of(groups, weight, limit).into_iter().map(|(_, far, _)| far).collect())
}

/// The groups of a node's edges (one type, one direction) for which `keep(type, outgoing)`
/// holds, outgoing first and by type, each with its first `limit` edges in index order (by the
/// far endpoint's nid, then qualifier) and its degree counted up to `limit + 1`.
fn graph_edge_groups(
    c: &Connection,
    key: &NodeKey,
    limit: usize,
    keep: &dyn Fn(&str, bool) -> bool,
) -> Result<Vec<EdgeGroup>, StoreError> {
    edge_groups_by(c, key, limit, keep, near_edges_sql, &mut |row, out| {
        let edge_type: String = row.get(0)?;
        let other = NodeKey { label: row.get(1)?, id: row.get(2)? };
        let (from, to) = if out { (key.clone(), other) } else { (other, key.clone()) };
        let qualifier = row.get(3)?;
        let props = props_from(row.get_ref(4)?.as_str().map_err(rusqlite::Error::from)?)?;
        Ok((edge_type.clone(), Edge { key: EdgeKey { from, edge_type, to, qualifier }, props }))
    })
}

/// [`near_edges_sql`] reading the far endpoint's properties instead of the edge's.
fn near_nodes_sql(out: bool, typed: bool, limited: bool) -> String {
    let (near, far) = if out { ("from_nid", "to_nid") } else { ("to_nid", "from_nid") };
    let typed = if typed { "AND e.edge_type = ?2" } else { "" };
    let limited = if limited { "LIMIT ?3" } else { "" };
    format!(
        "SELECT e.edge_type, n.label, n.id, n.props
         FROM edges e JOIN nodes n ON n.nid = e.{far}
         WHERE e.{near} = ?1 {typed} ORDER BY e.edge_type, e.{far}, e.qualifier {limited}"
    )
}

/// A row of a [`near_edges_sql`]-shaped statement (`out`: the near endpoint is its source) as
/// its edge type and what the caller makes of it.
type NearRow<'r, T> = dyn FnMut(&Row<'_>, bool) -> Result<(String, T), StoreError> + 'r;

/// The groups of [`graph_edge_groups`], read by statements `sql(out, typed, limited)` whose
/// first column is the edge type and whose rows come in index order, each row made into a `T`
/// by `row`.
fn edge_groups_by<T>(
    c: &Connection,
    key: &NodeKey,
    limit: usize,
    keep: &dyn Fn(&str, bool) -> bool,
    sql: fn(bool, bool, bool) -> String,
    row: &mut NearRow<'_, T>,
) -> Result<Vec<EdgeGroup<T>>, StoreError> {
    let Some(nid) = nid_of(c, key)? else { return Ok(Vec::new()) };
    let first = sql_int(limit.saturating_add(1) as u64);
    let mut groups = Vec::new();
    for (out, near) in [(true, "from_nid"), (false, "to_nid")] {
        // The index lists a node's edges by type: a covering pass over the first `limit + 1`
        // counts every type of a direction with at most `limit` edges; past that, the other
        // types are found by one seek each (a busy entity has hundreds of thousands of
        // REFERENCES and few types), and each is read up to `limit + 1` below.
        let mut st = c.prepare_cached(&format!(
            "SELECT edge_type FROM edges WHERE {near} = ?1 ORDER BY edge_type LIMIT ?2"
        ))?;
        let mut degree = 0usize;
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for ty in st.query_map(params![nid, first], |r| r.get::<_, String>(0))? {
            degree += 1;
            *counts.entry(ty?).or_default() += 1;
        }
        let busy = degree > limit;
        if busy {
            let mut next = c.prepare_cached(&format!(
                "SELECT edge_type FROM edges WHERE {near} = ?1 AND edge_type > ?2
                 ORDER BY edge_type LIMIT 1"
            ))?;
            let mut after = counts.keys().next_back().cloned();
            while let Some(last) = after {
                after = next.query_row(params![nid, last], |r| r.get::<_, String>(0)).optional()?;
                if let Some(ty) = &after {
                    counts.insert(ty.clone(), 0);
                }
            }
        }
        counts.retain(|ty, _| keep(ty, out));
        if counts.is_empty() {
            continue;
        }
        if !busy {
            // One read of the whole direction (at most `limit` edges) gives what one read per
            // type would: the items by type, each type's in index order.
            let mut st = c.prepare_cached(&sql(out, false, false))?;
            let mut rows = st.query(params![nid])?;
            let mut by_type: BTreeMap<String, Vec<T>> = BTreeMap::new();
            while let Some(r) = rows.next()? {
                let (ty, item) = row(r, out)?;
                if counts.contains_key(&ty) {
                    by_type.entry(ty).or_default().push(item);
                }
            }
            for (edge_type, degree) in counts {
                let edges = by_type.remove(&edge_type).unwrap_or_default();
                groups.push(EdgeGroup { out, edge_type, degree, edges });
            }
        } else {
            for edge_type in counts.into_keys() {
                // In index order: by the far endpoint's nid, then qualifier; one past `limit`
                // tells whether there are more.
                let mut st = c.prepare_cached(&sql(out, true, true))?;
                let mut rows = st.query(params![nid, edge_type, first])?;
                let mut edges = Vec::new();
                while let Some(r) = rows.next()? {
                    edges.push(row(r, out)?.1);
                }
                let degree = edges.len();
                edges.truncate(limit);
                groups.push(EdgeGroup { out, edge_type, degree, edges });
            }
        }
    }
    Ok(groups)
}

fn graph_edges_of(
    c: &Connection,
    key: &NodeKey,
    edge_type: Option<&str>,
    direction: Direction,
) -> Result<Vec<Edge>, StoreError> {
    let Some(nid) = nid_of(c, key)? else { return Ok(Vec::new()) };
    // Two statements rather than `?2 IS NULL`: each has the plan of its own filter.
    let edges_where = |out: bool| -> Result<Vec<Edge>, StoreError> {
        match edge_type {
            Some(t) => {
                let mut st = c.prepare_cached(&near_edges_sql(out, true, false))?;
                near_edges(&mut st, params![nid, t], key, out)
            }
            None => {
                let mut st = c.prepare_cached(&near_edges_sql(out, false, false))?;
                near_edges(&mut st, params![nid], key, out)
            }
        }
    };
    let mut out = Vec::new();
    if matches!(direction, Direction::Out | Direction::Both) {
        let mut edges = edges_where(true)?;
        edges.sort_by(|a, b| {
            (&a.key.edge_type, &a.key.to, &a.key.qualifier).cmp(&(
                &b.key.edge_type,
                &b.key.to,
                &b.key.qualifier,
            ))
        });
        out.extend(edges);
    }
    if matches!(direction, Direction::In | Direction::Both) {
        let mut edges = edges_where(false)?;
        edges.sort_by(|a, b| {
            (&a.key.edge_type, &a.key.from, &a.key.qualifier).cmp(&(
                &b.key.edge_type,
                &b.key.from,
                &b.key.qualifier,
            ))
        });
        out.extend(edges);
    }
    Ok(out)
}

fn graph_nodes_by_label(
    c: &Connection,
    label: &str,
    after: Option<&str>,
    limit: usize,
) -> Result<Vec<Node>, StoreError> {
    let mut st = c.prepare_cached(
        "SELECT id, props FROM nodes WHERE label = ?1 AND id > ?2 ORDER BY id LIMIT ?3",
    )?;
    let rows = st.query_map(params![label, after.unwrap_or(""), sql_int(limit as u64)], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    rows.map(|r| {
        let (id, props) = r?;
        Ok(Node { key: NodeKey { label: label.to_owned(), id }, props: props_from(&props)? })
    })
    .collect()
}

fn graph_edges_by_type(
    c: &Connection,
    edge_type: &str,
    after: Option<&EdgeKey>,
    limit: usize,
) -> Result<Vec<Edge>, StoreError> {
    // Pages follow the `edges_type` index: node ids, then qualifier (creation order of the source).
    let (from, to, qualifier) = match after {
        None => (i64::MIN, i64::MIN, String::new()),
        Some(k) => match (nid_of(c, &k.from)?, nid_of(c, &k.to)?) {
            (Some(f), Some(t)) => (f, t, k.qualifier.clone()),
            _ => return Ok(Vec::new()),
        },
    };
    let mut st = c.prepare_cached(&format!(
        "{EDGE_JOIN} WHERE e.edge_type = ?1 AND (e.from_nid, e.to_nid, e.qualifier) > (?2, ?3, ?4)
         ORDER BY e.from_nid, e.to_nid, e.qualifier LIMIT ?5"
    ))?;
    collect_edges(
        st.query_map(params![edge_type, from, to, qualifier, sql_int(limit as u64)], edge_row)?,
    )
}

fn graph_session_events(
    c: &Connection,
    session_id: &str,
    limit: usize,
) -> Result<Vec<SessionSlot>, StoreError> {
    let mut st =
        c.prepare_cached("SELECT at_ns, event_id FROM session_order WHERE session_id = ?1 ORDER BY at_ns, event_id LIMIT ?2")?;
    let rows = st.query_map(params![session_id, sql_int(limit as u64)], slot_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn graph_session_neighbors(
    c: &Connection,
    session_id: &str,
    slot: &SessionSlot,
) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
    let mut before = c.prepare_cached(
        "SELECT at_ns, event_id FROM session_order WHERE session_id = ?1 AND (at_ns, event_id) < (?2, ?3) ORDER BY at_ns DESC, event_id DESC LIMIT 1",
    )?;
    let prev =
        before.query_row(params![session_id, slot.at_ns, slot.event_id], slot_row).optional()?;
    let mut after = c.prepare_cached(
        "SELECT at_ns, event_id FROM session_order WHERE session_id = ?1 AND (at_ns, event_id) > (?2, ?3) ORDER BY at_ns, event_id LIMIT 1",
    )?;
    let next =
        after.query_row(params![session_id, slot.at_ns, slot.event_id], slot_row).optional()?;
    Ok((prev, next))
}

/// Hot per-record statements: equality lookups, kept from being re-prepared on every new
/// binding by the query planner stability guarantee the connection turns on at open.
pub(crate) const SESSION_TAIL_SQL: &str =
    "SELECT last_at_ns, last_event_id FROM sessions WHERE session_id = ?1";
pub(crate) const PENDING_FOR_SQL: &str = "SELECT wait_label, wait_id, from_label, from_id, edge_type, to_label, to_id, qualifier, props FROM pending_edges WHERE wait_label = ?1 AND wait_id = ?2";
/// One `meta` value by key, found by scanning the table's few rows rather than seeking its
/// primary key. `meta` also holds the vector index's centroids (about 1 MB at a million
/// vectors): a seek whose binary search compares the key with that row's cell reads the whole
/// overflowing record (SQLite compares an index cell that overflows only after reading it all),
/// which made reading `ann_generation`, once per vector search, cost 30 µs instead of 3. A scan
/// reads each row's key from its page and a value only when the key matches.
pub(crate) const META_VALUE_SQL: &str = "SELECT value FROM meta WHERE +key = ?1";
/// Whether a node has a full-text document.
const TEXT_INDEXED_SQL: &str = "SELECT EXISTS (SELECT 1 FROM text_index_docsize WHERE id = ?1)";
pub(crate) const NODE_NID_SQL: &str = "SELECT nid FROM nodes WHERE label = ?1 AND id = ?2";
pub(crate) const NODE_BY_KEY_SQL: &str =
    "SELECT nid, props FROM nodes WHERE label = ?1 AND id = ?2";
const NODE_BY_NID_SQL: &str = "SELECT label, id, props FROM nodes WHERE nid = ?1";

const PENDING_COLUMNS: &str =
    "wait_label, wait_id, from_label, from_id, edge_type, to_label, to_id, qualifier, props";

fn pending_row(row: &Row<'_>) -> rusqlite::Result<(NodeKey, EdgeKey, String)> {
    Ok((
        NodeKey { label: row.get(0)?, id: row.get(1)? },
        EdgeKey {
            from: NodeKey { label: row.get(2)?, id: row.get(3)? },
            edge_type: row.get(4)?,
            to: NodeKey { label: row.get(5)?, id: row.get(6)? },
            qualifier: row.get(7)?,
        },
        row.get(8)?,
    ))
}

fn graph_pending_for(c: &Connection, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
    // Rows come in primary-key order; no ORDER BY (see PENDING_FOR_SQL).
    let mut st = c.prepare_cached(PENDING_FOR_SQL)?;
    let rows = st.query_map(params![key.label, key.id], pending_row)?;
    rows.map(|r| {
        let (_, key, props) = r?;
        Ok(Edge { key, props: props_from(&props)? })
    })
    .collect()
}

fn graph_pending_edges(c: &Connection) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
    let mut st = c.prepare_cached(&format!(
        "SELECT {PENDING_COLUMNS} FROM pending_edges ORDER BY 1, 2, 3, 4, 5, 6, 7, 8"
    ))?;
    let rows = st.query_map([], pending_row)?;
    rows.map(|r| {
        let (wait, key, props) = r?;
        Ok((wait, Edge { key, props: props_from(&props)? }))
    })
    .collect()
}

fn graph_counts(c: &Connection) -> Result<GraphCounts, StoreError> {
    let group = |sql: &str| -> Result<Vec<(String, u64)>, StoreError> {
        let mut st = c.prepare_cached(sql)?;
        let rows =
            st.query_map([], |r| Ok((r.get::<_, String>(0)?, position(r.get::<_, i64>(1)?))))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    };
    let pending: i64 = c.query_row("SELECT count(*) FROM pending_edges", [], |r| r.get(0))?;
    Ok(GraphCounts {
        nodes: group("SELECT label, count(*) FROM nodes GROUP BY label ORDER BY label")?,
        edges: group(
            "SELECT edge_type, count(*) FROM edges GROUP BY edge_type ORDER BY edge_type",
        )?,
        pending_edges: position(pending),
    })
}

/// Implements the read traits for a type that derefs to a connection.
macro_rules! impl_readers {
    ($t:ident) => {
        impl LogReader for $t<'_> {
            fn head(&self) -> Result<u64, StoreError> {
                log_head(&self.tx)
            }
            fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
                log_get(&self.tx, kind, id)
            }
            fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
                log_read_from(&self.tx, from, limit)
            }
            fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
                log_read_kind(&self.tx, kind)
            }
        }

        impl GraphReader for $t<'_> {
            fn node(&self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
                self.load_node(key)
            }
            fn node_exists(&self, key: &NodeKey) -> Result<bool, StoreError> {
                self.exists(key)
            }
            fn node_props_named(
                &self,
                key: &NodeKey,
                names: &[&str],
            ) -> Result<Option<Properties>, StoreError> {
                self.load_node_named(key, names)
            }
            fn existing_ids(&self, label: &str, ids: &[String]) -> Result<Vec<String>, StoreError> {
                graph_existing_ids(&self.tx, label, ids)
            }
            fn edge(&self, key: &EdgeKey) -> Result<Option<Edge>, StoreError> {
                graph_edge(&self.tx, key)
            }
            fn edges_of(
                &self,
                key: &NodeKey,
                edge_type: Option<&str>,
                direction: Direction,
            ) -> Result<Vec<Edge>, StoreError> {
                graph_edges_of(&self.tx, key, edge_type, direction)
            }
            fn nodes_by_label(
                &self,
                label: &str,
                after: Option<&str>,
                limit: usize,
            ) -> Result<Vec<Node>, StoreError> {
                self.before_scan()?;
                graph_nodes_by_label(&self.tx, label, after, limit)
            }
            fn edges_by_type(
                &self,
                edge_type: &str,
                after: Option<&EdgeKey>,
                limit: usize,
            ) -> Result<Vec<Edge>, StoreError> {
                graph_edges_by_type(&self.tx, edge_type, after, limit)
            }
            fn session_events(
                &self,
                session_id: &str,
                limit: usize,
            ) -> Result<Vec<SessionSlot>, StoreError> {
                graph_session_events(&self.tx, session_id, limit)
            }
            fn sessions(&self, after: Option<&str>, limit: usize) -> Result<Vec<String>, StoreError> {
                let mut st = self.tx.prepare_cached(
                    "SELECT session_id FROM sessions WHERE session_id > ?1 ORDER BY session_id LIMIT ?2",
                )?;
                let rows = st.query_map(params![after.unwrap_or(""), sql_int(limit as u64)], |r| r.get(0))?;
                Ok(rows.collect::<rusqlite::Result<_>>()?)
            }
            fn edges_limited(
                &self,
                key: &NodeKey,
                edge_type: &str,
                out: bool,
                limit: usize,
            ) -> Result<Vec<Edge>, StoreError> {
                graph_edges_limited(&self.tx, key, edge_type, out, limit)
            }
            fn trace_events(&self, trace_id: &str, limit: usize) -> Result<Vec<String>, StoreError> {
                graph_trace_events(&self.tx, trace_id, limit)
            }
            fn session_tail(&self, session_id: &str) -> Result<Option<SessionSlot>, StoreError> {
                let mut st = self.tx.prepare_cached(SESSION_TAIL_SQL)?;
                Ok(st.query_row(params![session_id], slot_row).optional()?)
            }
            fn session_neighbors(
                &self,
                session_id: &str,
                slot: &SessionSlot,
            ) -> Result<(Option<SessionSlot>, Option<SessionSlot>), StoreError> {
                graph_session_neighbors(&self.tx, session_id, slot)
            }
            fn pending_for(&self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
                graph_pending_for(&self.tx, key)
            }
            fn pending_edges(&self) -> Result<Vec<(NodeKey, Edge)>, StoreError> {
                graph_pending_edges(&self.tx)
            }
            fn counts(&self) -> Result<GraphCounts, StoreError> {
                self.before_scan()?;
                graph_counts(&self.tx)
            }
            fn projected_through(&self) -> Result<u64, StoreError> {
                meta_position(&self.tx, "projected_through")
            }
            fn enriched_through(&self) -> Result<u64, StoreError> {
                meta_position(&self.tx, "enriched_through")
            }
            fn embedding_model(&self) -> Result<Option<(String, usize)>, StoreError> {
                graph_embedding_model(&self.tx)
            }
            fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
                Ok(self
                    .tx
                    .prepare_cached(META_VALUE_SQL)?
                    .query_row(params![setting_key(key)], |r| r.get(0))
                    .optional()?)
            }
            fn vector(&self, key: &NodeKey) -> Result<Option<Vec<f32>>, StoreError> {
                graph_vector(&self.tx, key)
            }
            fn vector_list(
                &self,
                key: &NodeKey,
            ) -> Result<Option<(i64, Option<u32>)>, StoreError> {
                graph_vector_list(&self.tx, key)
            }
            fn heaviest_edges(
                &self,
                key: &NodeKey,
                weight: &dyn Fn(&str, bool) -> f64,
                limit: usize,
            ) -> Result<Vec<(f64, Edge, bool)>, StoreError> {
                graph_heaviest_edges(&self.tx, key, weight, limit)
            }
            fn edge_groups(&self, key: &NodeKey, limit: usize) -> Result<Vec<EdgeGroup>, StoreError> {
                graph_edge_groups(&self.tx, key, limit, &|_, _| true)
            }
            fn graph_generation(&self) -> Result<u64, StoreError> {
                meta_counter(&self.tx, "graph_generation")
            }
            fn heaviest_neighbours(
                &self,
                key: &NodeKey,
                weight: &dyn Fn(&str, bool) -> f64,
                limit: usize,
                names: &[&str],
            ) -> Result<Vec<(NodeKey, Properties)>, StoreError> {
                self.heaviest_neighbours_named(key, weight, limit, names)
            }
            fn text_terms(&self, text: &str) -> Result<Vec<String>, StoreError> {
                graph_text_terms(&self.tx, text)
            }
            fn search_text(
                &self,
                words: &[String],
                after: i64,
                limit: usize,
            ) -> Result<Vec<(i64, f64)>, StoreError> {
                graph_search_text(&self.tx, words, after, limit)
            }
            fn text_docs_after(&self, after: i64) -> Result<(u64, Option<i64>), StoreError> {
                graph_text_docs_after(&self.tx, after)
            }
            fn scan_text_index(
                &self,
                visit: &mut dyn FnMut(&str, i64) -> bool,
            ) -> Result<(), StoreError> {
                graph_scan_text_index(&self.tx, visit)
            }
            fn text_generation(&self) -> Result<u64, StoreError> {
                meta_counter(&self.tx, "text_generation")
            }
            fn text_index_build(&self) -> Result<Option<TextIndexBuild>, StoreError> {
                graph_text_index_build(&self.tx)
            }
            fn text_postings(&self, term: &str) -> Result<Option<Vec<u8>>, StoreError> {
                Ok(self
                    .tx
                    .prepare_cached("SELECT postings FROM text_postings WHERE term = ?1")?
                    .query_row(params![term], |r| r.get(0))
                    .optional()?)
            }
            fn node_keys(&self, nids: &[i64]) -> Result<Vec<(i64, NodeKey)>, StoreError> {
                graph_node_keys(&self.tx, nids)
            }
            fn nodes_by_nid(&self, nids: &[i64]) -> Result<Vec<Option<Node>>, StoreError> {
                self.load_nodes_by_nid(nids)
            }
            fn nodes_by_nid_shared(
                &self,
                nids: &[i64],
                decode: &dyn NodeDecode,
            ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
                self.load_nodes_by_nid_shared(nids, decode)
            }
            fn nodes_shared(
                &self,
                keys: &[NodeKey],
                decode: &dyn NodeDecode,
            ) -> Result<Vec<Option<Arc<Node>>>, StoreError> {
                self.load_nodes_shared(keys, decode)
            }
            fn vectors_page(
                &self,
                after: i64,
                limit: usize,
            ) -> Result<Vec<StoredVector>, StoreError> {
                graph_vectors_page(&self.tx, after, limit)
            }
            fn scan_unindexed_vectors(
                &self,
                visit: &mut dyn FnMut(i64, &[f32]),
            ) -> Result<(), StoreError> {
                graph_scan_unindexed_vectors(&self.tx, visit)
            }
            fn vector_counts(&self) -> Result<(u64, u64), StoreError> {
                graph_vector_counts(&self.tx)
            }
            fn scan_vectors_of(
                &self,
                nids: &[i64],
                visit: &mut dyn FnMut(i64, &[f32]),
            ) -> Result<(), StoreError> {
                graph_scan_vectors_of(&self.tx, nids, visit)
            }
            fn ann_generation(&self) -> Result<u64, StoreError> {
                meta_counter(&self.tx, "ann_generation")
            }
            fn vector_generation(&self) -> Result<u64, StoreError> {
                self.vector_generation_now()
            }
            fn removal_generation(&self) -> Result<Option<u64>, StoreError> {
                self.removal_generation_now().map(Some)
            }
            fn text_version(&self) -> Result<Option<u64>, StoreError> {
                self.text_version_now()
            }
            fn ann_centroids(&self) -> Result<Option<Vec<u8>>, StoreError> {
                graph_ann_centroids(&self.tx)
            }
            fn ann_list(&self, list: u32) -> Result<Option<Vec<u8>>, StoreError> {
                graph_ann_list(&self.tx, list)
            }
            fn is_archived(&self, key: &NodeKey) -> Result<bool, StoreError> {
                graph_is_archived(&self.tx, key)
            }
            fn archived(
                &self,
                after: Option<&NodeKey>,
                limit: usize,
            ) -> Result<Vec<Archived>, StoreError> {
                graph_archived(&self.tx, after, limit)
            }
        }
    };
}

impl_readers!(EmbeddedRead);
impl_readers!(EmbeddedWrite);

impl Log for EmbeddedWrite<'_> {
    fn append(&mut self, record: &ValidRecord, recorded_at: &str) -> Result<Appended, StoreError> {
        let kind = record.kind();
        // Insert first: a new record (the common case) costs one statement; only a clash on
        // (kind, record_id) looks at what is stored.
        let inserted = self
            .tx
            .prepare_cached(
                "INSERT INTO log (kind, record_id, recorded_at, body) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (kind, record_id) DO NOTHING",
            )?
            .execute(params![kind.as_str(), record.id(), recorded_at, record.canonical()])?;
        if inserted == 0 {
            let (pos, body): (i64, String) = self
                .tx
                .prepare_cached(
                    "SELECT position, body FROM log WHERE kind = ?1 AND record_id = ?2",
                )?
                .query_row(params![kind.as_str(), record.id()], |r| Ok((r.get(0)?, r.get(1)?)))?;
            return if body == record.canonical() {
                Ok(Appended::Duplicate(position(pos)))
            } else {
                Err(StoreError::Conflict {
                    kind: kind.as_str(),
                    id: record.id().to_owned(),
                    position: position(pos),
                })
            };
        }
        Ok(Appended::New(position(self.tx.last_insert_rowid())))
    }

    fn redact(&mut self, position: u64, body: &str) -> Result<bool, StoreError> {
        let position = i64::try_from(position)
            .map_err(|_| StoreError::Corruption(format!("log position {position} out of range")))?;
        let n = self
            .tx
            .prepare_cached("UPDATE log SET body = ?2 WHERE position = ?1")?
            .execute(params![position, body])?;
        Ok(n == 1)
    }

    fn redact_as(&mut self, position: u64, id: &str, body: &str) -> Result<bool, StoreError> {
        let at = i64::try_from(position)
            .map_err(|_| StoreError::Corruption(format!("log position {position} out of range")))?;
        let n = self
            .tx
            .prepare_cached(
                "UPDATE OR IGNORE log SET record_id = ?2, body = ?3 WHERE position = ?1",
            )?
            .execute(params![at, id, body])?;
        if n == 0 {
            // Either no record at `position` or another record of its kind has the id.
            let clash: Option<(String, i64)> = self
                .tx
                .prepare_cached(
                    "SELECT l.kind, o.position FROM log l JOIN log o
                     ON o.kind = l.kind AND o.record_id = ?2 WHERE l.position = ?1",
                )?
                .query_row(params![at, id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            if let Some((kind, other)) = clash {
                let kind = RecordKind::parse(&kind).map_or("record", RecordKind::as_str);
                return Err(StoreError::Conflict {
                    kind,
                    id: id.to_owned(),
                    position: self::position(other),
                });
            }
        }
        Ok(n == 1)
    }
}

impl GraphStore for EmbeddedWrite<'_> {
    fn put_node(&mut self, node: &Node) -> Result<(), StoreError> {
        match self.insert_node(node)? {
            Some(nid) => self.cache_node(nid, node.clone()),
            None => Ok(()),
        }
    }

    fn put_node_owned(&mut self, node: Node) -> Result<(), StoreError> {
        match self.insert_node(&node)? {
            Some(nid) => self.cache_node(nid, node),
            None => Ok(()),
        }
    }

    /// The cached copy leaves the write-back cache: the caller puts it back.
    fn node_for_update(&mut self, key: &NodeKey) -> Result<Option<Node>, StoreError> {
        if let Some((_, node)) = self.nodes.borrow_mut().remove(key) {
            return Ok(Some(node));
        }
        self.load_node(key)
    }

    fn put_edge(&mut self, edge: &Edge) -> Result<(), StoreError> {
        let k = &edge.key;
        let (from, to) = (self.endpoint_nid(&k.from)?, self.endpoint_nid(&k.to)?);
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO edges (from_nid, edge_type, to_nid, qualifier, props) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![from, k.edge_type, to, k.qualifier, props_to(&edge.props)?])?;
        self.edges_changed.set(true);
        Ok(())
    }

    fn delete_edge(&mut self, key: &EdgeKey) -> Result<bool, StoreError> {
        let (Some(from), Some(to)) = (self.nid(&key.from)?, self.nid(&key.to)?) else {
            return Ok(false);
        };
        let n = self
            .tx
            .prepare_cached(
                "DELETE FROM edges WHERE from_nid = ?1 AND edge_type = ?2 AND to_nid = ?3 AND qualifier = ?4",
            )?
            .execute(params![from, key.edge_type, to, key.qualifier])?;
        self.edges_changed.set(self.edges_changed.get() || n > 0);
        Ok(n > 0)
    }

    fn put_session_slot(&mut self, session_id: &str, slot: &SessionSlot) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("INSERT OR IGNORE INTO session_order (session_id, at_ns, event_id) VALUES (?1, ?2, ?3)")?
            .execute(params![session_id, slot.at_ns, slot.event_id])?;
        self.tx
            .prepare_cached(
                "INSERT INTO sessions (session_id, last_at_ns, last_event_id) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET last_at_ns = excluded.last_at_ns, last_event_id = excluded.last_event_id
                 WHERE (excluded.last_at_ns, excluded.last_event_id) > (sessions.last_at_ns, sessions.last_event_id)",
            )?
            .execute(params![session_id, slot.at_ns, slot.event_id])?;
        Ok(())
    }

    fn put_pending(&mut self, waiting_for: &NodeKey, edge: &Edge) -> Result<(), StoreError> {
        self.any_pending.set(Some(true));
        let k = &edge.key;
        self.tx
            .prepare_cached(&format!(
                "INSERT OR REPLACE INTO pending_edges ({PENDING_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            ))?
            .execute(params![
                waiting_for.label,
                waiting_for.id,
                k.from.label,
                k.from.id,
                k.edge_type,
                k.to.label,
                k.to.id,
                k.qualifier,
                props_to(&edge.props)?
            ])?;
        Ok(())
    }

    fn take_pending(&mut self, key: &NodeKey) -> Result<Vec<Edge>, StoreError> {
        if !self.maybe_pending()? {
            return Ok(Vec::new());
        }
        let edges = graph_pending_for(&self.tx, key)?;
        if !edges.is_empty() {
            self.tx
                .prepare_cached("DELETE FROM pending_edges WHERE wait_label = ?1 AND wait_id = ?2")?
                .execute(params![key.label, key.id])?;
        }
        Ok(edges)
    }

    fn set_projected_through(&mut self, position: u64) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'projected_through'")?
            .execute(params![sql_int(position)])?;
        Ok(())
    }

    fn delete_label(&mut self, label: &str) -> Result<u64, StoreError> {
        self.flush_nodes()?;
        self.nids.borrow_mut().clear();
        let tx = &self.tx;
        let doomed = "SELECT nid FROM nodes WHERE label = ?1";
        tx.execute(&format!("DELETE FROM edges WHERE from_nid IN ({doomed})"), params![label])?;
        tx.execute(&format!("DELETE FROM edges WHERE to_nid IN ({doomed})"), params![label])?;
        tx.execute(&format!("DELETE FROM vector_lists WHERE nid IN ({doomed})"), params![label])?;
        let vectors =
            tx.execute(&format!("DELETE FROM vectors WHERE nid IN ({doomed})"), params![label])?;
        self.vectors_changed.set(true);
        self.vectors.removed.set(self.vectors.removed.get() || vectors > 0);
        let texts = tx.execute(
            &format!("DELETE FROM text_index WHERE rowid IN ({doomed})"),
            params![label],
        )?;
        if texts > 0 {
            self.text.remove();
        }
        if vectors + texts > 0 {
            self.removed.set(true);
        }
        let n = tx.execute("DELETE FROM nodes WHERE label = ?1", params![label])?;
        self.edges_changed.set(true);
        Ok(n as u64)
    }

    fn set_enriched_through(&mut self, position: u64) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("UPDATE meta SET value = ?1 WHERE key = 'enriched_through'")?
            .execute(params![sql_int(position)])?;
        Ok(())
    }

    fn set_embedding_model(&mut self, model_id: &str, dimension: usize) -> Result<(), StoreError> {
        let mut st =
            self.tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
        st.execute(params!["embedding_model", model_id])?;
        st.execute(params!["embedding_dimension", sql_int(dimension as u64)])?;
        Ok(())
    }

    fn set_setting(&mut self, key: &str, value: Option<&str>) -> Result<(), StoreError> {
        match value {
            Some(v) => self
                .tx
                .prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?
                .execute(params![setting_key(key), v])?,
            None => self
                .tx
                .prepare_cached("DELETE FROM meta WHERE key = ?1")?
                .execute(params![setting_key(key)])?,
        };
        Ok(())
    }

    fn put_vector(&mut self, key: &NodeKey, vector: &[f32]) -> Result<(), StoreError> {
        let nid = self.endpoint_nid(key)?;
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        let inserted = self
            .tx
            .prepare_cached("INSERT OR IGNORE INTO vectors (nid, data) VALUES (?1, ?2)")?
            .execute(params![nid, bytes])?;
        if inserted == 0 {
            // A replaced vector leaves the vector index (as `INSERT OR REPLACE` did): it is
            // searched exactly until the next build.
            self.tx
                .prepare_cached("UPDATE vectors SET data = ?2 WHERE nid = ?1")?
                .execute(params![nid, bytes])?;
            self.tx
                .prepare_cached("UPDATE vector_lists SET list = NULL WHERE nid = ?1")?
                .execute(params![nid])?;
            self.removed.set(true);
        } else {
            self.tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO vector_lists (nid, list) VALUES (?1, NULL)",
                )?
                .execute(params![nid])?;
        }
        self.vectors_changed.set(true);
        self.vectors.put(nid, vector);
        Ok(())
    }

    fn put_text(&mut self, key: &NodeKey, text: &str) -> Result<(), StoreError> {
        let nid = self.endpoint_nid(key)?;
        // Whether it replaces a document matters only to a sink: no lookup without one.
        let replaced = self.text.sink.is_some()
            && self.tx.prepare_cached(TEXT_INDEXED_SQL)?.query_row(params![nid], |r| r.get(0))?;
        self.text.add(nid, text, replaced);
        self.tx
            .prepare_cached("INSERT OR REPLACE INTO text_index (rowid, body) VALUES (?1, ?2)")?
            .execute(params![nid, text])?;
        Ok(())
    }

    /// FTS5 flushes the terms it holds in memory to a new segment whenever a write goes to a
    /// rowid below the last one written: one text at a time (`INSERT OR REPLACE`), a chunk's
    /// entity names (old nodes, low ids) between its events (new, high ids) made a segment per
    /// text, then merges of them. So the batch is written in rowid order, the nodes already
    /// indexed deleted first: one flush per batch. The index holds the same documents.
    fn put_texts(&mut self, texts: &[(NodeKey, String)]) -> Result<(), StoreError> {
        // In rowid order; a node given twice keeps its last text, as one `put_text` after
        // another would.
        let mut rows: BTreeMap<i64, &str> = BTreeMap::new();
        for (key, text) in texts {
            rows.insert(self.endpoint_nid(key)?, text);
        }
        {
            let mut indexed = self.tx.prepare_cached(TEXT_INDEXED_SQL)?;
            let mut delete = self.tx.prepare_cached("DELETE FROM text_index WHERE rowid = ?1")?;
            for (nid, text) in &rows {
                let replaced = indexed.query_row(params![nid], |r| r.get::<_, bool>(0))?;
                if replaced {
                    delete.execute(params![nid])?;
                }
                self.text.add(*nid, text, replaced);
            }
        }
        let mut insert =
            self.tx.prepare_cached("INSERT INTO text_index (rowid, body) VALUES (?1, ?2)")?;
        for (nid, text) in &rows {
            insert.execute(params![nid, text])?;
        }
        Ok(())
    }

    fn clear_enrichment(&mut self) -> Result<(), StoreError> {
        self.vectors_changed.set(true);
        self.vectors.removed.set(true);
        self.removed.set(true);
        self.text.remove();
        self.text.rebuilt.set(true);
        self.tx.execute_batch(CLEAR_TEXT_INDEX)?;
        bump_counter(&self.tx, "text_generation")?;
        self.tx.execute_batch(
            "DELETE FROM vectors; DELETE FROM vector_lists; DELETE FROM text_index; DELETE FROM ann_lists;
             DELETE FROM meta WHERE key IN ('embedding_model', 'embedding_dimension', 'ann_centroids');
             INSERT INTO meta (key, value) VALUES ('ann_generation', 1)
                 ON CONFLICT (key) DO UPDATE SET value = value + 1;
             UPDATE meta SET value = 0 WHERE key = 'enriched_through';",
        )?;
        Ok(())
    }

    fn clear_graph(&mut self) -> Result<(), StoreError> {
        self.nodes.borrow_mut().clear();
        self.nids.borrow_mut().clear();
        self.any_pending.set(Some(false));
        self.clear_enrichment()?;
        self.tx.execute_batch(
            "DELETE FROM nodes; DELETE FROM edges; DELETE FROM session_order; DELETE FROM sessions; DELETE FROM pending_edges;
             UPDATE meta SET value = 0 WHERE key = 'projected_through';",
        )?;
        self.edges_changed.set(true);
        Ok(())
    }

    fn delete_node(&mut self, key: &NodeKey) -> Result<bool, StoreError> {
        let Some(nid) = self.nid(key)? else { return Ok(false) };
        self.nodes.borrow_mut().remove(key);
        self.nids.borrow_mut().remove(key);
        let tx = &self.tx;
        tx.prepare_cached("DELETE FROM edges WHERE from_nid = ?1")?.execute(params![nid])?;
        tx.prepare_cached("DELETE FROM edges WHERE to_nid = ?1")?.execute(params![nid])?;
        tx.prepare_cached("DELETE FROM vector_lists WHERE nid = ?1")?.execute(params![nid])?;
        let vectors =
            tx.prepare_cached("DELETE FROM vectors WHERE nid = ?1")?.execute(params![nid])?;
        self.vectors_changed.set(true);
        self.vectors.delete(nid);
        let texts =
            tx.prepare_cached("DELETE FROM text_index WHERE rowid = ?1")?.execute(params![nid])?;
        if texts > 0 {
            self.text.remove_one(nid);
        }
        if vectors + texts > 0 {
            self.removed.set(true);
        }
        tx.prepare_cached("DELETE FROM nodes WHERE nid = ?1")?.execute(params![nid])?;
        self.edges_changed.set(true);
        Ok(true)
    }

    fn delete_edges_of_type(&mut self, edge_type: &str) -> Result<u64, StoreError> {
        let n = self.tx.execute("DELETE FROM edges WHERE edge_type = ?1", params![edge_type])?;
        self.edges_changed.set(self.edges_changed.get() || n > 0);
        Ok(n as u64)
    }

    fn delete_session_slot(
        &mut self,
        session_id: &str,
        slot: &SessionSlot,
    ) -> Result<(), StoreError> {
        let tx = &self.tx;
        tx.prepare_cached(
            "DELETE FROM session_order WHERE session_id = ?1 AND at_ns = ?2 AND event_id = ?3",
        )?
        .execute(params![session_id, slot.at_ns, slot.event_id])?;
        // The tail row follows the greatest remaining slot, or goes with the last one.
        tx.prepare_cached("DELETE FROM sessions WHERE session_id = ?1")?
            .execute(params![session_id])?;
        tx.prepare_cached(
            "INSERT INTO sessions (session_id, last_at_ns, last_event_id)
             SELECT session_id, at_ns, event_id FROM session_order WHERE session_id = ?1
             ORDER BY at_ns DESC, event_id DESC LIMIT 1",
        )?
        .execute(params![session_id])?;
        Ok(())
    }

    fn clear_ann_index(&mut self) -> Result<(), StoreError> {
        self.tx.execute_batch(
            "DELETE FROM ann_lists; DELETE FROM meta WHERE key = 'ann_centroids';
             UPDATE vector_lists SET list = NULL WHERE list IS NOT NULL;",
        )?;
        self.vectors_changed.set(true);
        self.vectors.removed.set(true);
        bump_counter(&self.tx, "ann_generation")?;
        Ok(())
    }

    fn clear_ann_index_refiled(&mut self) -> Result<(), StoreError> {
        // Each vector's `list` is rewritten by the caller: clearing it first would rewrite
        // every row of `vector_lists` twice in one transaction.
        self.tx.execute_batch(
            "DELETE FROM ann_lists; DELETE FROM meta WHERE key = 'ann_centroids';",
        )?;
        self.vectors_changed.set(true);
        bump_counter(&self.tx, "ann_generation")?;
        Ok(())
    }

    fn put_ann_centroids(&mut self, blob: &[u8]) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('ann_centroids', ?1)",
            )?
            .execute(params![blob])?;
        bump_counter(&self.tx, "ann_generation")?;
        Ok(())
    }

    fn put_ann_list(&mut self, list: u32, members: &[u8]) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("INSERT OR REPLACE INTO ann_lists (list, members) VALUES (?1, ?2)")?
            .execute(params![list, members])?;
        Ok(())
    }

    fn set_vector_list(&mut self, nid: i64, list: u32) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("UPDATE vector_lists SET list = ?1 WHERE nid = ?2")?
            .execute(params![list, nid])?;
        self.vectors_changed.set(true);
        self.vectors.file(nid);
        Ok(())
    }

    fn clear_text_index(&mut self) -> Result<(), StoreError> {
        self.text.rebuilt.set(true);
        self.tx.execute_batch(CLEAR_TEXT_INDEX)?;
        bump_counter(&self.tx, "text_generation")?;
        Ok(())
    }

    fn put_text_postings(&mut self, term: &str, postings: &[u8]) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO text_postings (term, postings) VALUES (?1, ?2)",
            )?
            .execute(params![term, postings])?;
        Ok(())
    }

    fn delete_text_postings(&mut self, term: &str) -> Result<(), StoreError> {
        self.tx
            .prepare_cached("DELETE FROM text_postings WHERE term = ?1")?
            .execute(params![term])?;
        Ok(())
    }

    fn set_text_index_build(&mut self, build: &TextIndexBuild) -> Result<(), StoreError> {
        let mut st =
            self.tx.prepare_cached("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)")?;
        st.execute(params!["text_built_through", build.through])?;
        st.execute(params!["text_docs", sql_int(build.docs)])?;
        st.execute(params!["text_avg_len", build.avg_len])?;
        drop(st);
        self.text.rebuilt.set(true);
        bump_counter(&self.tx, "text_generation")?;
        Ok(())
    }

    fn put_archived(&mut self, key: &NodeKey, archived_at: &str) -> Result<(), StoreError> {
        self.tx
            .prepare_cached(
                "INSERT OR REPLACE INTO archived (label, id, archived_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![key.label, key.id, archived_at])?;
        Ok(())
    }

    fn clear_archived(&mut self) -> Result<(), StoreError> {
        self.tx.execute_batch("DELETE FROM archived;")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
mod wal_copy;

pub use wal_copy::{WAL_COPY_AT, WalCopier};
