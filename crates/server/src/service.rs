//! The service: one data directory, its principal registry, and one store per tenant; every
//! operation the HTTP API and the MCP tools offer, taking the principal and a typed request.
//!
//! # Data directory
//! - `principals.json`: the registry (hashed API keys, see [`ctxgraph::Principals`]); re-read
//!   when its modification time changes, so `ctxgraph principal add` takes effect on a running
//!   server.
//! - `tenants/<tenant>.ctxg`: one store per tenant. A principal's tenant picks the file, so no read
//!   or write can cross tenants.
//!
//! # On a scale-out store
//! [`Service::open_scale_out`] keeps the registry in the data directory and each tenant `t` in
//! the store `NAME-t` of a `redis://HOST:PORT/NAME` URL (see [`remote`]). The server then holds
//! no state of its own: its engines read the graph that projection workers fold and append to
//! the log, so several servers may serve one store. Ingests still go through the queue (a group
//! is one append), and after the answer wait a bounded time for the workers to fold them
//! ([`remote::PROJECTION_WAIT`]); nothing is enriched and no file is maintained. The knowledge
//! and memory writes (facts, documents, receipts, memories, types, slots, goals) call the same
//! engine functions, which wait in the writer for their fold (at most
//! [`ctxgraph::REMOTE_FOLD_WAIT`]); an operation the engine refuses there is the client error
//! `db.backend_unsupported` (400).
//!
//! # Concurrency
//! Engines are blocking and not `Sync` (one SQLite connection each; a snapshot borrows its
//! engine). Per tenant, writes go through one writer engine (SQLite has one writer anyway), fed
//! by a queue that commits the ingests waiting at once as one group (see [`queue`]), and reads
//! through a small pool of reader engines with their own connections, so reads never wait for
//! a write. Every engine call runs on tokio's blocking pool. A schema module changes how
//! records validate and read, so readers opened before one was written are dropped rather than
//! reused, and the writer reopens.
//!
//! # Memory
//! What a tenant holds is bounded whatever the load: at most [`Service::set_readers`] reader
//! connections (one per core and one more unless told otherwise), kept open between requests
//! (opening one per request churned the allocator); one cache of index parts shared by the
//! tenant's engines; no memory-mapped reads (each connection's mapping of a growing file
//! counted in the resident size again); and SQLite's page caches, all connections together,
//! under one soft heap budget ([`SQLITE_HEAP_BUDGET`]). After a write, at most every
//! [`TRIM_EVERY`] and after every index rebuild, the writer gives freed heap back to the system.
//!
//! # Access tracking
//! A tenant's engines share one [`AccessTracker`]: recalls note the events they return there
//! (in memory), and the writer writes the pending notes as an `access` record after the next
//! write's answers, or after a read once [`FLUSH_ACCESS_AT`] events are pending (a write queued
//! for the writer, so the read's response does not wait for it and the write runs at the
//! writer's priority) — either at most once per [`ACCESS_FLUSH_EVERY`] — and when the tenant
//! is dropped or [`Service::flush_access`] runs (at shutdown). A failed flush keeps the notes
//! for the next one and never fails the request that triggered it.
//!
//! # Adding an operation
//! One `pub async fn` here taking `&Principal` and a request type from [`crate::wire`], one
//! route in [`crate::http`], one tool in [`crate::mcp`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use ctxgraph::{
    AccessTracker, Engine, EngineOptions, EntityInput, FLUSH_ACCESS_AT, FactInput, IndexCaches,
    IngestOutcome, MemorySearchOptions, NodeKey, ObjectInput, OpenMode, Principal, Principals,
    QuestionLimits, RecordKind, Resolution, RollupOptions, TraversalOptions, ValidRecord,
    WalCopier,
};
use serde_json::{Map, Value};

use crate::error::ServiceError;
use crate::metrics::Metrics;
use crate::wire::*;

pub use priority::DEFAULT_READ_NICE;

mod explore;
mod index_upkeep;
mod priority;
mod queue;
mod reader_pool;
mod remote;
mod tools;
mod trust;

/// The most reader engines a tenant may be given ([`Service::set_readers`]): each holds a
/// connection with its page cache.
pub const MAX_READERS: usize = 64;

/// Reader engines open at once per tenant unless told otherwise: one per core and one more.
/// They are all kept between requests, and more requests wait for one, so memory stays bounded
/// however many clients there are.
///
/// Why no more: reads are CPU work, so engines beyond the cores only share them, and each read
/// then lasts as many times longer as there are engines per core. The write-ahead log starts
/// over only when no read still reads it, so long reads kept it growing until the writer
/// stopped for them (a truncating checkpoint, every few seconds at 64 clients); and every
/// runnable reader takes its slice from the writer, lowered priority or not. With 8 engines on
/// 2 cores `bench serve --clients 64` answered ingests at 169 ms p99; with 3, 26 ms, at the
/// same throughput (`docs/benchmarks.md`).
pub fn default_readers() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get) + 1
}
/// Page cache of each reader engine's connection, at most; together they stay under
/// [`SQLITE_HEAP_BUDGET`].
const READER_CACHE_BYTES: u64 = 32 << 20;
/// Page cache of the writer's connection: the server writes batches, not bulk loads.
const WRITER_CACHE_BYTES: u64 = 64 << 20;
/// SQLite's heap in the server process, all connections of all tenants together (a soft
/// bound: near it, page caches reuse their pages instead of growing).
pub const SQLITE_HEAP_BUDGET: u64 = 64 << 20;
/// How often, at most, the writer gives freed heap memory back to the system after a write.
const TRIM_EVERY: Duration = Duration::from_secs(5);

/// Least time between two writes of the reads' access notes by the writer's upkeep or a read:
/// under a steady load every write's upkeep would otherwise write one, re-counting the same
/// popular events on the one writer the ingests queue for (a fifth of its time at 64 clients).
/// Notes of one event merge while they wait, so a longer wait writes fewer node updates.
const ACCESS_FLUSH_EVERY: Duration = Duration::from_secs(1);
/// A write-ahead log larger than this after a write is checkpointed and truncated at once.
/// A log copied into the file is reused from its start only when no reader still reads it,
/// which a steady read load can prevent indefinitely: then the log would grow without bound.
const WAL_TRUNCATE_AT: u64 = 96 << 20;
/// Most records in one batch.
pub const MAX_BATCH: usize = 10_000;
/// Default and largest page sizes.
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: usize = 1_000;
/// Largest limit of a search.
const MAX_HITS: usize = 200;

/// Default deadline of one request's engine work (see [`RequestLimits`]).
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(30);

/// Bounds on the work one request may cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// How long a recall's, search's or memory search's question may be.
    pub question: QuestionLimits,
    /// How long a request may wait for and run its engine work before it is answered with 503
    /// `request.deadline`. Work that has not started by then is skipped; work that has runs to
    /// its end (a write may still commit: retrying it is safe, ingestion is idempotent by id).
    pub deadline: Duration,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits { question: QuestionLimits::default(), deadline: DEFAULT_DEADLINE }
    }
}

/// The service over a data directory. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Service {
    inner: Arc<Inner>,
}

struct Inner {
    data: PathBuf,
    registry: Mutex<Registry>,
    tenants: Mutex<BTreeMap<String, Arc<Tenant>>>,
    metrics: Metrics,
    /// Where the tenants' stores are: files in the data directory, one file, or on a
    /// scale-out server.
    stores: remote::Stores,
    /// Keys given out by the process itself for its lifetime (`ctxgraph ui`'s page), never
    /// written anywhere; the registry's keys are checked after them.
    session_keys: Mutex<BTreeMap<String, Principal>>,
    /// How engines are opened (the embedder above all).
    options: EngineOptions,
    /// Bounds on one request's work.
    limits: Mutex<RequestLimits>,
    /// The niceness reading threads add to their own ([`priority`]).
    read_nice: AtomicU8,
    /// Reader engines per tenant, at most: shared with every tenant.
    readers: Arc<AtomicUsize>,
}

struct Registry {
    principals: Principals,
    modified: FileStamp,
}

/// Where a tenant's store is.
enum TenantStore {
    /// A store file.
    File(PathBuf),
    /// A scale-out store, folded by projection workers, whose schema modules may also be
    /// written through other servers.
    ScaleOut(Box<remote::ScaleOutTenant>),
}

/// One tenant's store: a writer with its queue, and idle readers.
struct Tenant {
    name: String,
    store: TenantStore,
    writer: Mutex<Engine>,
    /// Writes waiting for the writer.
    queue: Mutex<queue::WriteQueue>,
    /// When the writer last gave freed memory back to the system.
    trimmed: Mutex<Instant>,
    /// When the reads' access notes were last written (none yet: `None`).
    access_flushed: Mutex<Option<Instant>>,
    /// Whether a read queued a write of the access notes that the writer has not finished yet.
    access_flush_queued: Arc<AtomicBool>,
    /// The write-ahead log's copies into the file, off the writer (`maintain`): the writer's
    /// own connection does not checkpoint after its commits, where the copy of up to 64 MiB of
    /// pages delayed the answers to a group's callers.
    wal: WalCopier,
    options: EngineOptions,
    /// The index parts read so far, shared by the writer and every reader.
    caches: IndexCaches,
    readers: Mutex<reader_pool::ReaderPool>,
    /// Bumped when a schema module is written; readers of an older generation are dropped.
    generation: AtomicU64,
    /// The events recalls returned, shared by the writer and every reader.
    access: Arc<AccessTracker>,
    /// Index rebuilds, built off the writer ([`index_upkeep`]).
    indexes: index_upkeep::IndexUpkeep,
    /// The niceness the index builds and the log's copies add to their threads, the readers'
    /// ([`priority`]).
    build_nice: Arc<AtomicU8>,
    /// Reader engines open at once, at most (the service's bound, shared).
    max_readers: Arc<AtomicUsize>,
}

/// Clears a flag when dropped: work that set it ended, however it ended (done, dropped unrun,
/// failed, panicked).
struct ClearOnDrop(Arc<AtomicBool>);

impl Drop for ClearOnDrop {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding the lock leaves no half-done state that matters here: an engine's
    // write transaction rolls back when dropped, and the maps hold complete entries only.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What tells a changed registry file apart: its modification time, length and (on Unix) inode,
/// since the registry is replaced by a rename and two changes may share a coarse timestamp.
type FileStamp = Option<(SystemTime, u64, u64)>;

fn modified(path: &Path) -> FileStamp {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let inode = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let inode = 0;
    Some((m.modified().ok()?, m.len(), inode))
}

impl Tenant {
    fn open(name: &str, path: PathBuf, options: EngineOptions) -> Result<Tenant, ServiceError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                ServiceError::internal("store.io", format!("creating {}: {e}", dir.display()))
            })?;
        }
        let writer = Engine::open(&path, OpenMode::CreateIfMissing, options.clone())?;
        writer.set_cache_bytes(WRITER_CACHE_BYTES)?;
        writer.set_mmap_bytes(0)?;
        Ok(Tenant::with_writer(name, TenantStore::File(path), writer, options))
    }

    /// The tenant whose store is the scale-out store `url`: its engines read what the workers
    /// folded and append to the log, over one pool of connections. Connecting creates nothing
    /// on the server.
    fn open_scale_out(
        name: &str,
        url: ctxgraph_scaleout::StoreUrl,
        options: EngineOptions,
    ) -> Result<Tenant, ServiceError> {
        let store = Box::new(remote::ScaleOutTenant::open(url)?);
        let writer = store.engine(options.clone())?;
        Ok(Tenant::with_writer(name, TenantStore::ScaleOut(store), writer, options))
    }

    fn with_writer(
        name: &str,
        store: TenantStore,
        mut writer: Engine,
        options: EngineOptions,
    ) -> Tenant {
        let access = Arc::clone(writer.access_tracker());
        // Set on the writer too, so that its writes extend the texts the readers rank from
        // memory (see `Engine::set_index_caches`).
        let caches = writer.index_caches();
        writer.set_index_caches(caches.clone());
        // The log is copied at the readers' priority, as the indexes are built.
        let build_nice = Arc::new(AtomicU8::new(priority::DEFAULT_READ_NICE));
        let copy_nice = Arc::clone(&build_nice);
        Tenant {
            name: name.to_owned(),
            store,
            caches,
            writer: Mutex::new(writer),
            queue: Mutex::default(),
            trimmed: Mutex::new(Instant::now()),
            access_flushed: Mutex::new(None),
            access_flush_queued: Arc::default(),
            wal: WalCopier::new(format!("ctxgraph-wal-{name}")).on_thread(move || {
                priority::lower_for_reads(copy_nice.load(Ordering::Relaxed));
            }),
            options,
            readers: Mutex::default(),
            generation: AtomicU64::new(0),
            access,
            indexes: index_upkeep::IndexUpkeep::default(),
            build_nice,
            max_readers: Arc::new(AtomicUsize::new(default_readers())),
        }
    }

    /// Whether a schema module was written to the tenant's scale-out store since the last look
    /// (through this server or another); never for a store file, whose modules are written
    /// through this server's writer only.
    fn schema_changed_elsewhere(&self) -> bool {
        match &self.store {
            TenantStore::File(_) => false,
            TenantStore::ScaleOut(store) => store.schema_changed(),
        }
    }

    /// The scale-out store, when the tenant is on one.
    fn scale_out(&self) -> Option<&ctxgraph_scaleout::StoreUrl> {
        match &self.store {
            TenantStore::File(_) => None,
            TenantStore::ScaleOut(store) => Some(store.url()),
        }
    }

    /// Run `f` on a reader engine of the current schema generation, waiting in `lane`'s line
    /// for one when its most ([`Service::set_readers`]) are in use.
    fn read<T>(
        &self,
        lane: reader_pool::Lane,
        f: impl FnOnce(&Engine) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        let generation = self.generation.load(Ordering::Acquire);
        let max = self.max_readers.load(Ordering::Relaxed);
        let turn = lock(&self.readers).take(generation, max, lane);
        let lease = match turn {
            reader_pool::Turn::Now(lease) => lease,
            reader_pool::Turn::Wait(line) => line.recv().map_err(|_| {
                ServiceError::internal(
                    "server.panic",
                    "the reader pool closed before this read's turn",
                )
            })?,
        };
        // A request given up while it waited for a reader does not start its work.
        if given_up() {
            let engine = match lease {
                reader_pool::Lease::Engine(e) => Some((generation, e)),
                reader_pool::Lease::Room => None,
            };
            self.give_back(engine);
            return Err(given_up_error());
        }
        let engine = match lease {
            reader_pool::Lease::Engine(e) => e,
            reader_pool::Lease::Room => match self.open_engine(false) {
                Ok(e) => Box::new(e),
                Err(e) => {
                    self.give_back(None);
                    return Err(e);
                }
            },
        };
        let out = f(&engine);
        self.give_back(Some((generation, engine)));
        out
    }

    /// Return a read's engine (opened at the generation given), or the room of one that could
    /// not be opened or was not used, to the pool: for the read that waited longest, if any.
    fn give_back(&self, engine: Option<(u64, Box<Engine>)>) {
        let generation = self.generation.load(Ordering::Acquire);
        lock(&self.readers).give_back(engine, generation);
    }

    /// A new engine on the tenant's store, sharing its access tracker and index caches, with
    /// the server's memory settings: a reader, or (`writer`) the writer's replacement.
    fn open_engine(&self, writer: bool) -> Result<Engine, ServiceError> {
        let mut e = match &self.store {
            TenantStore::File(path) => {
                Engine::open(path, OpenMode::MustExist, self.options.clone())?
            }
            TenantStore::ScaleOut(store) => store.engine(self.options.clone())?,
        };
        e.set_access_tracker(Arc::clone(&self.access));
        e.set_index_caches(self.caches.clone());
        e.set_mmap_bytes(0)?;
        e.set_cache_bytes(if writer { WRITER_CACHE_BYTES } else { READER_CACHE_BYTES })?;
        if writer {
            // The log is copied into the file off the writer (`maintain`).
            e.set_auto_checkpoint(false)?;
        }
        Ok(e)
    }

    /// Once [`FLUSH_ACCESS_AT`] events are pending, queue their write for the writer (one at
    /// a time); a read never waits for it. Call it from an async worker thread: a writer task
    /// it starts keeps that thread's priority.
    ///
    /// Why a job and not the read's own thread: a read's thread runs at the readers' lowered
    /// priority, and holding the writer there, among the reads it yields to, it kept every
    /// ingest queued behind it for a quarter of a second under load.
    fn queue_access_flush(self: &Arc<Self>, metrics: &Metrics) {
        if self.access.pending() < FLUSH_ACCESS_AT
            || self.access_flush_queued.swap(true, Ordering::AcqRel)
        {
            return;
        }
        // Cleared however the job ends, run or dropped unrun (a panic in its group), so that
        // a later read can queue another.
        let queued = ClearOnDrop(Arc::clone(&self.access_flush_queued));
        let job = queue::Job::Run {
            wanted: Arc::new(AtomicBool::new(true)),
            work: Box::new(move |t: &Tenant| {
                t.flush_access_at_most_every(&mut lock(&t.writer));
                drop(queued);
            }),
        };
        self.submit(job, metrics);
    }

    /// Write the pending access notes on the writer `w` unless they were written less than
    /// [`ACCESS_FLUSH_EVERY`] ago. A failed flush keeps its notes for the next one.
    fn flush_access_at_most_every(&self, w: &mut Engine) {
        if self.access.pending() == 0 {
            return;
        }
        let mut flushed = lock(&self.access_flushed);
        if flushed.is_some_and(|at| at.elapsed() < ACCESS_FLUSH_EVERY) {
            return;
        }
        *flushed = Some(Instant::now());
        drop(flushed);
        let _ = w.flush_access();
    }

    /// Run `f` on the writer, then enrich what it wrote (so that reads find it).
    fn write<T>(
        &self,
        f: impl FnOnce(&mut Engine) -> Result<T, ServiceError>,
    ) -> Result<T, ServiceError> {
        let mut w = lock(&self.writer);
        // A request given up while it waited for the writer writes nothing: its client was
        // told it failed (or is gone), so nothing may commit on its behalf.
        if given_up() {
            return Err(given_up_error());
        }
        let out = f(&mut w);
        if out.is_ok() {
            settle(&mut w);
        }
        out
    }

    /// The writer's upkeep after a write, once its callers were answered: flush the reads'
    /// access notes, start a rebuild of an index that lags far behind (built off the writer,
    /// see [`index_upkeep`]), checkpoint a large write-ahead log, report the lags, and now and
    /// then give freed memory back to the system.
    fn maintain(self: &Arc<Self>, metrics: &Metrics) {
        let mut w = lock(&self.writer);
        // After the answers, not before: no caller waits for the notes, which are appended
        // without waiting for the disk.
        self.flush_access_at_most_every(&mut w);
        // A scale-out store has no index, file or lag of this server's to look after: the
        // workers fold, and `/metrics` reads the lag when scraped.
        if self.scale_out().is_some() {
            return;
        }
        let nice = self.build_nice.load(Ordering::Relaxed);
        let rebuilt = self.upkeep_indexes(&mut w, nice, metrics);
        // Not while a build holds its snapshot or the log is being copied: the truncating
        // checkpoint would wait for them (up to the busy timeout) on the writer; the next
        // write after them checkpoints.
        if w.wal_size() > WAL_TRUNCATE_AT && !self.indexes.building() && !self.wal.copying() {
            // Waits (up to the store's busy timeout) for the reads in flight to finish; new
            // reads are not blocked. A checkpoint that cannot finish now is retried after the
            // next write; the acknowledged write is committed either way. It copies the whole
            // log itself, so no copy starts after it.
            let _ = w.checkpoint();
        }
        // A copy that is done: the few frames committed meanwhile, so that the next write
        // starts the log over; or a log past the copy size: a copy on a thread of its own. A
        // failure leaves the log as it was, for the next write's upkeep.
        let _ = w.copy_wal(&self.wal);
        // The service's own bookkeeping, not a caller's read: the owner's reader.
        let lags = w
            .owner_reader()
            .and_then(|s| s.checkpoints())
            .map(|c| (c.projection_lag(), c.enrichment_lag()))
            .unwrap_or((0, 0));
        drop(w);
        metrics.lags(&self.name, lags);
        let mut trimmed = lock(&self.trimmed);
        // A rebuild frees what it built the index in all at once: give it back now rather
        // than holding it until the next write after `TRIM_EVERY`.
        if rebuilt || trimmed.elapsed() >= TRIM_EVERY {
            *trimmed = Instant::now();
            release_free_memory();
        }
    }
}

/// What follows every write on the writer before its callers are answered: what it wrote
/// enriched, so that a read after the acknowledgement finds it. The write is durable already: a
/// failure keeps its work for the next write (the enrichment-lag gauge shows it) and does not
/// fail this one. On a scale-out store `enrich` is refused at once (stage 2 does not run
/// there): nothing is enriched. The reads' access notes are flushed after the answers
/// ([`Tenant::maintain`]).
fn settle(w: &mut Engine) {
    let _ = w.enrich(&mut |_, _| {});
}

/// Give the C library heap's free pages back to the system (glibc's `malloc_trim`): memory
/// freed by requests on many threads otherwise stays resident in its arenas. It holds SQLite's
/// allocations, and every allocation of a binary that keeps the system allocator (the
/// `ctxgraph` binary gives Rust's to jemalloc, which returns unused pages after its decay time).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_memory() {
    unsafe extern "C" {
        fn malloc_trim(pad: usize) -> std::ffi::c_int;
    }
    // SAFETY: `malloc_trim` only returns free memory to the system; glibc allows it at any
    // time from any thread.
    unsafe {
        malloc_trim(0);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_memory() {}

impl Drop for Tenant {
    fn drop(&mut self) {
        let w = self.writer.get_mut().unwrap_or_else(PoisonError::into_inner);
        let _ = w.flush_access();
    }
}

thread_local! {
    /// Whether the request whose engine work this blocking thread runs is still wanted (set by
    /// [`Service::blocking`] for the duration of the work): the waits inside the work (for a
    /// reader engine, for the writer) check it before starting anything.
    static REQUEST: std::cell::RefCell<Option<Arc<AtomicBool>>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether the current request was given up (deadline passed, client gone); `false` outside
/// a request.
fn given_up() -> bool {
    REQUEST.with(|r| r.borrow().as_ref().is_some_and(|w| !w.load(Ordering::Acquire)))
}

fn given_up_error() -> ServiceError {
    ServiceError::unavailable(
        "request.deadline",
        "the request was given up (its deadline passed or its client went away) before its work started: retry",
    )
}

/// Run `f` as the work of the request whose liveness is `wanted` (see [`given_up`]).
fn as_request<T>(wanted: Arc<AtomicBool>, f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            REQUEST.with(|r| *r.borrow_mut() = None);
        }
    }
    REQUEST.with(|r| *r.borrow_mut() = Some(wanted));
    let _reset = Reset;
    f()
}

/// Marks its request's work unwanted when dropped: the request finished, passed its deadline
/// or was dropped because its client went away.
struct Wanted(Arc<AtomicBool>);

impl Drop for Wanted {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn past_deadline(deadline: Duration) -> ServiceError {
    ServiceError::unavailable(
        "request.deadline",
        format!(
            "the request's work did not finish within its deadline of {} ms (the server's --request-timeout): narrow the request or retry later",
            deadline.as_millis()
        ),
    )
}

/// Run blocking engine work on tokio's blocking pool; a panic becomes an internal error.
/// Requests go through [`Service::blocking`], which adds the deadline.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
) -> Result<T, ServiceError> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r,
        Err(e) => Err(ServiceError::internal("server.panic", format!("the operation failed: {e}"))),
    }
}

fn require_write(who: &Principal) -> Result<(), ServiceError> {
    if who.may_write() {
        Ok(())
    } else {
        Err(ServiceError::forbidden(format!(
            "principal {:?} may not write: it needs the writer or admin role",
            who.name()
        )))
    }
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A time argument (RFC 3339 or YYYY-MM-DD) in nanoseconds since the epoch.
fn time_ns(field: &str, t: &str) -> Result<i64, ServiceError> {
    ctxgraph::parse_time(t)
        .and_then(|s| chrono::DateTime::parse_from_rfc3339(&s).ok())
        .and_then(|d| d.timestamp_nanos_opt())
        .ok_or_else(|| {
            ServiceError::bad_request(
                "request.time_format",
                format!("{field} {t:?} is not a time: write RFC 3339 (2026-11-20T09:00:00Z) or a date (2026-11-20)"),
            )
        })
}

fn traversal(as_of: Option<&str>) -> Result<TraversalOptions, ServiceError> {
    Ok(TraversalOptions {
        as_of_ns: as_of.map(|t| time_ns("as_of", t)).transpose()?,
        ..TraversalOptions::default()
    })
}

fn page_size(limit: Option<usize>) -> Result<usize, ServiceError> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(0) => Err(ServiceError::bad_request(
            "request.limit_range",
            "limit 0: ask for 1 to 1000 items",
        )),
        Some(n) => Ok(n.min(MAX_PAGE)),
    }
}

/// Cursors are opaque to callers; inside they are the count of items already returned.
fn cursor_offset(cursor: Option<&str>) -> Result<usize, ServiceError> {
    match cursor {
        None => Ok(0),
        Some(c) => c.strip_prefix("o").and_then(|n| n.parse().ok()).ok_or_else(|| {
            ServiceError::bad_request(
                "request.cursor",
                format!("cursor {c:?} is not one this server returned: pass next_cursor unchanged"),
            )
        }),
    }
}

/// Save one validated memory-family record: its id and what the store did with it.
fn save_one(
    engine: &mut Engine,
    valid: &ctxgraph::ValidRecord,
) -> Result<(String, IngestOutcome), ServiceError> {
    let id = valid.id().to_owned();
    let outcome = engine.save_memories(std::slice::from_ref(valid))?.pop().ok_or_else(|| {
        ServiceError::internal("server.no_outcome", "saving reported no outcome")
    })??;
    Ok((id, outcome))
}

fn status_of(outcome: IngestOutcome) -> (&'static str, u64) {
    match outcome {
        IngestOutcome::New(p) => ("accepted", p),
        IngestOutcome::Duplicate(p) => ("duplicate", p),
    }
}

/// The question's vector from the engine's model (empty for an empty question).
fn embed(e: &Engine, text: &str) -> Result<Vec<f32>, ServiceError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    Ok(e.embed_query(text)?)
}

/// Create `dir` and its parents if missing.
fn create_dir(dir: &Path) -> Result<(), ServiceError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| ServiceError::internal("store.io", format!("creating {}: {e}", dir.display())))
}

fn schema_record(r: &ValidRecord) -> bool {
    r.kind() == RecordKind::Schema
}

impl Service {
    /// The service over `data` (created if missing): its registry and its tenants' stores.
    pub fn open(data: &Path, options: EngineOptions) -> Result<Service, ServiceError> {
        create_dir(&data.join("tenants"))?;
        ctxgraph::set_store_heap_limit(SQLITE_HEAP_BUDGET);
        Service::with_registry(data, remote::Stores::Files, options)
    }

    /// A service over one store file, for a principal acting on it directly (`ctxgraph mcp
    /// --store FILE`): no registry, every principal reads and writes that file.
    pub fn single_store(store: &Path, options: EngineOptions) -> Result<Service, ServiceError> {
        let dir = store.parent().unwrap_or(Path::new("."));
        ctxgraph::set_store_heap_limit(SQLITE_HEAP_BUDGET);
        Service::with_registry(dir, remote::Stores::File(store.to_owned()), options)
    }

    /// The service over a scale-out server (`ctxgraph --db redis://HOST:PORT/NAME serve`): the
    /// registry in `data` (created if missing; several servers may each read a copy, or share
    /// the directory), and each tenant `t` in the store `NAME-t` of `url`. Connects to nothing
    /// until a tenant is first used.
    pub fn open_scale_out(
        data: &Path,
        url: &ctxgraph_scaleout::StoreUrl,
        options: EngineOptions,
    ) -> Result<Service, ServiceError> {
        create_dir(data)?;
        Service::with_registry(data, remote::Stores::ScaleOut(url.clone()), options)
    }

    /// A service over one scale-out store for a principal acting on it directly (`ctxgraph
    /// --db redis://HOST:PORT/NAME mcp`), as [`Service::single_store`] is for a file: the
    /// registry of the working directory, read once; every principal reads and writes that
    /// store.
    pub fn single_scale_out(
        url: &ctxgraph_scaleout::StoreUrl,
        options: EngineOptions,
    ) -> Result<Service, ServiceError> {
        Service::with_registry(Path::new("."), remote::Stores::OneScaleOut(url.clone()), options)
    }

    /// The store files this service opens tenants from whose format is older than this
    /// build's, each with its format, in path order. Opening one migrates it in place, which
    /// may rewrite whole tables (13 s at a million vectors from format 4 to 5): a caller can
    /// say so and [`Service::upgrade_store`] them before serving, rather than leave the wait to
    /// each tenant's first request. A scale-out service has no files.
    pub fn stores_to_upgrade(&self) -> Result<Vec<(PathBuf, u32)>, ServiceError> {
        let mut files = match &self.inner.stores {
            remote::Stores::Files => {
                let dir = self.inner.data.join("tenants");
                let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
                    .and_then(|entries| entries.map(|e| e.map(|e| e.path())).collect())
                    .map_err(|e| {
                        ServiceError::internal(
                            "store.io",
                            format!("listing {}: {e}", dir.display()),
                        )
                    })?;
                files.retain(|path| path.extension().is_some_and(|x| x == "ctxg"));
                files
            }
            remote::Stores::File(path) => vec![path.clone()],
            remote::Stores::ScaleOut(_) | remote::Stores::OneScaleOut(_) => Vec::new(),
        };
        files.sort();
        Ok(files
            .into_iter()
            .filter_map(|path| {
                let version = ctxgraph_store::Embedded::format_to_upgrade_at(&path)?;
                Some((path, version))
            })
            .collect())
    }

    /// Migrate the store file at `path` to this build's format: the store is opened and
    /// closed, nothing else (what a tenant's first request checks, such as the embedding
    /// model, it still checks then).
    pub fn upgrade_store(&self, path: &Path) -> Result<(), ServiceError> {
        ctxgraph_store::Embedded::open(path, OpenMode::MustExist).map_err(ctxgraph::Error::from)?;
        Ok(())
    }

    /// The service over the registry `dir/principals.json` (read again when the file changes,
    /// unless every principal uses one store: see `refresh`) and `stores`.
    fn with_registry(
        dir: &Path,
        stores: remote::Stores,
        options: EngineOptions,
    ) -> Result<Service, ServiceError> {
        let path = dir.join("principals.json");
        let principals = Principals::open(&path)?;
        Ok(Service {
            inner: Arc::new(Inner {
                data: dir.to_owned(),
                registry: Mutex::new(Registry { principals, modified: modified(&path) }),
                tenants: Mutex::new(BTreeMap::new()),
                metrics: Metrics::new(),
                stores,
                session_keys: Mutex::new(BTreeMap::new()),
                options,
                limits: Mutex::new(RequestLimits::default()),
                read_nice: AtomicU8::new(priority::DEFAULT_READ_NICE),
                readers: Arc::new(AtomicUsize::new(default_readers())),
            }),
        })
    }

    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data
    }

    /// Bounds on one request's work.
    pub fn limits(&self) -> RequestLimits {
        *lock(&self.inner.limits)
    }

    /// The niceness (0 to 19) the threads running reads add to their own, so that under load
    /// the tenants' writers get the CPU first (see [`priority`]; Linux only); 0 leaves every
    /// thread at the process's priority. A thread lowered stays lowered.
    pub fn set_read_nice(&self, nice: u8) {
        self.inner.read_nice.store(nice.min(19), Ordering::Relaxed);
    }

    /// The most reader engines each tenant opens (1 to [`MAX_READERS`]; default
    /// [`default_readers`]); reads beyond them wait for one. Tenants already open keep the
    /// engines they have and open no more than `readers` from now on.
    pub fn set_readers(&self, readers: usize) {
        let readers = readers.clamp(1, MAX_READERS);
        self.inner.readers.store(readers, Ordering::Relaxed);
    }

    /// Change the bounds on one request's work (`ctxgraph serve`'s options); requests that
    /// start afterwards obey them.
    pub fn set_limits(&self, limits: RequestLimits) {
        *lock(&self.inner.limits) = limits;
    }

    /// Run blocking engine work on tokio's blocking pool within the request deadline. When
    /// the deadline passes, or the caller goes away (the request's future is dropped: the
    /// client disconnected), work that has not started yet is skipped, including work still
    /// waiting for a reader engine or for the writer; work already running finishes on its
    /// thread, since an engine call cannot be interrupted halfway.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T, ServiceError> + Send + 'static,
    ) -> Result<T, ServiceError> {
        let deadline = self.limits().deadline;
        let wanted = Wanted(Arc::new(AtomicBool::new(true)));
        let still = Arc::clone(&wanted.0);
        let work = blocking(move || {
            if !still.load(Ordering::Acquire) {
                return Err(given_up_error());
            }
            as_request(still, f)
        });
        match tokio::time::timeout(deadline, work).await {
            Ok(out) => out,
            Err(_) => Err(past_deadline(deadline)),
        }
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Metrics {
        &self.inner.metrics
    }

    /// The principal holding `key`: a session key of this process, else one of the registry,
    /// which is re-read first when its file changed.
    pub fn authenticate(&self, key: &str) -> Result<Principal, ServiceError> {
        if let Some(who) = lock(&self.inner.session_keys).get(key) {
            return Ok(who.clone());
        }
        let mut reg = lock(&self.inner.registry);
        self.refresh(&mut reg)?;
        Ok(reg.principals.authenticate(key)?)
    }

    /// Let `key` authenticate as `who` for the life of this process, without writing it to the
    /// registry (`ctxgraph ui` gives its page the key of the principal it was started as).
    /// `key` should come from [`ctxgraph::access::new_key`].
    pub fn add_session_key(&self, key: &str, who: Principal) {
        lock(&self.inner.session_keys).insert(key.to_owned(), who);
    }

    /// The principal called `name` (`ctxgraph mcp --as NAME`).
    pub fn principal(&self, name: &str) -> Result<Principal, ServiceError> {
        let mut reg = lock(&self.inner.registry);
        self.refresh(&mut reg)?;
        Ok(reg.principals.get(name)?)
    }

    /// Whether the data directory and the registry can be read (readiness).
    pub fn ready(&self) -> Result<(), ServiceError> {
        let mut reg = lock(&self.inner.registry);
        self.refresh(&mut reg)?;
        drop(reg);
        match &self.inner.stores {
            // Tenants' stores may be on any instance the URL lists; one store is on one.
            remote::Stores::ScaleOut(url) => return remote::reachable(&url.each_instance()),
            remote::Stores::OneScaleOut(url) => {
                return remote::reachable(std::slice::from_ref(url));
            }
            remote::Stores::Files | remote::Stores::File(_) => {}
        }
        std::fs::read_dir(self.inner.data.join("tenants")).map_err(|e| {
            ServiceError::internal(
                "store.io",
                format!("reading {}: {e}", self.inner.data.display()),
            )
        })?;
        Ok(())
    }

    fn refresh(&self, reg: &mut Registry) -> Result<(), ServiceError> {
        if self.inner.stores.is_single() {
            return Ok(());
        }
        let path = self.inner.data.join("principals.json");
        let now = modified(&path);
        if now != reg.modified {
            reg.principals = Principals::open(&path)?;
            reg.modified = now;
        }
        Ok(())
    }

    fn tenant(&self, who: &Principal) -> Result<Arc<Tenant>, ServiceError> {
        let name = who.tenant();
        ctxgraph::access::check_name("tenant", name)?;
        let mut tenants = lock(&self.inner.tenants);
        if let Some(t) = tenants.get(name) {
            return Ok(Arc::clone(t));
        }
        let options = self.inner.options.clone();
        let mut t = match &self.inner.stores {
            remote::Stores::Files => {
                let path = self.inner.data.join("tenants").join(format!("{name}.ctxg"));
                Tenant::open(name, path, options)?
            }
            remote::Stores::File(path) => Tenant::open(name, path.clone(), options)?,
            remote::Stores::ScaleOut(base) => {
                Tenant::open_scale_out(name, remote::tenant_store(base, name)?, options)?
            }
            remote::Stores::OneScaleOut(url) => Tenant::open_scale_out(name, url.clone(), options)?,
        };
        t.max_readers = Arc::clone(&self.inner.readers);
        let t = Arc::new(t);
        t.build_nice.store(self.inner.read_nice.load(Ordering::Relaxed), Ordering::Relaxed);
        tenants.insert(name.to_owned(), Arc::clone(&t));
        Ok(t)
    }

    /// Write the accesses pending in every open tenant (at shutdown); returns how many events
    /// were written. A tenant whose flush fails keeps its notes and does not stop the others.
    pub async fn flush_access(&self) -> usize {
        let tenants: Vec<Arc<Tenant>> = lock(&self.inner.tenants).values().cloned().collect();
        self.blocking(move || {
            Ok(tenants.iter().map(|t| lock(&t.writer).flush_access().unwrap_or(0)).sum())
        })
        .await
        .unwrap_or(0)
    }

    /// Set the lag gauges of every open tenant on a scale-out store from the store itself
    /// (`/metrics`, when scraped): the records its workers have not folded, and the entries
    /// they took and have not acknowledged. A tenant whose store does not answer keeps its last
    /// figures. Nothing to do for store files, whose writer sets them after each write.
    pub async fn read_scale_out_lags(&self) {
        let tenants: Vec<Arc<Tenant>> = lock(&self.inner.tenants)
            .values()
            .filter(|t| t.scale_out().is_some())
            .cloned()
            .collect();
        if tenants.is_empty() {
            return;
        }
        let metrics = self.inner.metrics.clone();
        let _ = self
            .blocking(move || {
                for t in &tenants {
                    let TenantStore::ScaleOut(store) = &t.store else { continue };
                    if let Ok(lag) = t.read(reader_pool::Lane::Heavy, |e| store.lag(e)) {
                        metrics.lags(&t.name, (lag.projection, lag.enrichment));
                        metrics.pending(&t.name, lag.pending);
                        metrics.consolidation_lag(&t.name, lag.consolidation);
                    }
                }
                Ok(())
            })
            .await;
    }

    /// Run a read for `who` on a reader of its tenant.
    async fn read<T: Send + 'static>(
        &self,
        who: &Principal,
        f: impl FnOnce(&Engine, &Principal) -> Result<T, ServiceError> + Send + 'static,
    ) -> Result<T, ServiceError> {
        self.read_in(reader_pool::Lane::Heavy, who, f).await
    }

    /// [`Service::read`] in `lane`'s line for a reader engine: a read that holds its engine
    /// briefly (one node, one timeline page) waits in the light reads' line, served before the
    /// heavy reads that wait (see `reader_pool`).
    async fn read_in<T: Send + 'static>(
        &self,
        lane: reader_pool::Lane,
        who: &Principal,
        f: impl FnOnce(&Engine, &Principal) -> Result<T, ServiceError> + Send + 'static,
    ) -> Result<T, ServiceError> {
        let tenant = self.tenant(who)?;
        let who = who.clone();
        let reader = Arc::clone(&tenant);
        let nice = self.inner.read_nice.load(Ordering::Relaxed);
        let out = self
            .blocking(move || {
                priority::lower_for_reads(nice);
                reader.read(lane, |e| f(e, &who))
            })
            .await;
        // The accesses this read noted are written off its response path, by the writer.
        tenant.queue_access_flush(&self.inner.metrics);
        out
    }

    /// Run a write for `who` (which must hold a writing role) on its tenant's writer, in turn
    /// with the other writes queued.
    async fn write<T: Send + 'static>(
        &self,
        who: &Principal,
        f: impl FnOnce(&mut Engine) -> Result<T, ServiceError> + Send + 'static,
    ) -> Result<T, ServiceError> {
        require_write(who)?;
        let tenant = self.tenant(who)?;
        self.queued(&tenant, |wanted, reply| queue::Job::Run {
            wanted,
            work: Box::new(move |t: &Tenant| {
                let _ = reply.send(t.write(f));
            }),
        })
        .await
    }

    /// Queue a write on `tenant`'s writer and wait for its answer within the request deadline;
    /// when the deadline passes, or the caller goes away, a job not started yet is skipped (see
    /// [`Service::blocking`]). `job` makes the job from the request's liveness flag and the
    /// channel its answer goes to.
    async fn queued<T>(
        &self,
        tenant: &Arc<Tenant>,
        job: impl FnOnce(
            Arc<AtomicBool>,
            tokio::sync::oneshot::Sender<Result<T, ServiceError>>,
        ) -> queue::Job,
    ) -> Result<T, ServiceError> {
        let deadline = self.limits().deadline;
        let wanted = Wanted(Arc::new(AtomicBool::new(true)));
        let (reply, answer) = tokio::sync::oneshot::channel();
        tenant.submit(job(Arc::clone(&wanted.0), reply), &self.inner.metrics);
        match tokio::time::timeout(deadline, answer).await {
            Ok(Ok(out)) => out,
            Ok(Err(_)) => Err(ServiceError::internal(
                "server.panic",
                "the write failed: the writer stopped before answering",
            )),
            Err(_) => Err(past_deadline(deadline)),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Events.

    /// Validate and append a batch of event records; one result per record.
    pub async fn ingest(
        &self,
        who: &Principal,
        req: IngestRequest,
    ) -> Result<IngestResponse, ServiceError> {
        if req.events.len() > MAX_BATCH {
            return Err(ServiceError::bad_request(
                "request.batch_too_large",
                format!("{} records in one batch: send at most {MAX_BATCH}", req.events.len()),
            ));
        }
        require_write(who)?;
        let tenant = self.tenant(who)?;
        let response = self
            .queued(&tenant, |wanted, reply| queue::Job::Ingest {
                events: req.events,
                wanted,
                reply,
            })
            .await?;
        if tenant.scale_out().is_some() {
            self.wait_projected(&tenant, &response).await;
        }
        Ok(response)
    }

    /// Read-your-writes on a scale-out store: wait, a bounded time
    /// ([`remote::projection_wait`]), until the workers have folded every record `response`
    /// acknowledged. The records are durable in the log already: a wait that ends first, or
    /// fails, leaves the response as it is, and they become readable when the workers reach
    /// them. Each look takes a reader engine for one read only, so ingests waiting on a
    /// stalled projection never keep the tenant's reads from the pool.
    async fn wait_projected(&self, tenant: &Arc<Tenant>, response: &IngestResponse) {
        let Some(position) = response.results.iter().filter_map(|r| r.position).max() else {
            return;
        };
        let until = Instant::now() + remote::projection_wait(self.limits().deadline);
        let mut pause = Duration::from_millis(2);
        loop {
            let reader = Arc::clone(tenant);
            let look = move || {
                reader.read(reader_pool::Lane::Heavy, |e| {
                    Ok(e.wait_projected(position, Duration::ZERO)?)
                })
            };
            // A look that failed ends the wait as a fold that got there does.
            let behind = matches!(self.blocking(look).await, Ok(through) if through < position);
            let left = until.saturating_duration_since(Instant::now());
            if !behind || left.is_zero() {
                return;
            }
            tokio::time::sleep(pause.min(left)).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// One event by id, if visible.
    pub async fn event(&self, who: &Principal, id: String) -> Result<NodeDto, ServiceError> {
        self.read_in(reader_pool::Lane::Light, who, move |e, who| {
            let snap = e.reader(who)?;
            match snap.event(&id)? {
                Some(n) => Ok(NodeDto::from(n)),
                None => Err(ServiceError::not_found("event.not_found", format!("no event {id:?}"))),
            }
        })
        .await
    }

    /// A page of a session's visible events in time order.
    pub async fn timeline(
        &self,
        who: &Principal,
        session: String,
        page: PageQuery,
    ) -> Result<TimelinePage, ServiceError> {
        let limit = page_size(page.limit)?;
        let offset = cursor_offset(page.cursor.as_deref())?;
        let want = offset.saturating_add(limit).saturating_add(1);
        // A page deep into a long session reads every event before it: not a light read.
        let lane =
            if want <= MAX_PAGE + 1 { reader_pool::Lane::Light } else { reader_pool::Lane::Heavy };
        self.read_in(lane, who, move |e, who| {
            let snap = e.reader(who)?;
            let all = snap.timeline(&session, want)?;
            let more = all.len() > offset + limit;
            let events: Vec<TimelineItem> =
                all.iter().skip(offset).take(limit).map(TimelineItem::from).collect();
            let next_cursor = more.then(|| format!("o{}", offset + events.len()));
            Ok(TimelinePage { session_id: session, events, next_cursor })
        })
        .await
    }

    /// The context pack for a question.
    pub async fn recall(
        &self,
        who: &Principal,
        req: RecallRequest,
    ) -> Result<ContextPackDto, ServiceError> {
        self.limits().question.check("question", &req.question)?;
        let q = req.to_query()?;
        let metrics = self.inner.metrics.clone();
        self.read(who, move |e, who| {
            let started = Instant::now();
            let pack = e.recall_as(&q, who)?;
            metrics.recall_seconds(started.elapsed().as_secs_f64());
            Ok(ContextPackDto::from(pack))
        })
        .await
    }

    /// Full-text search over visible nodes.
    pub async fn search(
        &self,
        who: &Principal,
        req: SearchRequest,
    ) -> Result<SearchResponse, ServiceError> {
        self.limits().question.check("query", &req.query)?;
        let limit = req.limit.unwrap_or(20).clamp(1, MAX_HITS);
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let hits = snap.search(&req.query, limit)?;
            Ok(SearchResponse {
                hits: hits.iter().map(|(n, s)| SearchHit { node: n.into(), score: *s }).collect(),
            })
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Facts.

    /// Record a claim (seed 002's `record_fact`).
    pub async fn record_fact(
        &self,
        who: &Principal,
        req: RecordFactRequest,
    ) -> Result<FactRecorded, ServiceError> {
        let object = match (&req.object, &req.object_type) {
            (Value::String(s), Some(t)) => ObjectInput::Entity(EntityInput::typed(s, t)),
            (Value::String(s), None) => ObjectInput::Either(s.clone()),
            (v @ (Value::Number(_) | Value::Bool(_)), _) => ObjectInput::Literal(v.clone()),
            (Value::Object(o), None) if o.len() == 2 && o.contains_key("slot") => {
                match (o.get("slot"), o.get("value")) {
                    (Some(Value::String(slot)), Some(Value::String(value))) => {
                        ObjectInput::SlotValue { slot: slot.clone(), value: value.clone() }
                    }
                    _ => return Err(object_error(&req.object)),
                }
            }
            (Value::Object(o), None) if o.len() == 1 => match o.get("type") {
                Some(Value::String(t)) => ObjectInput::Type(t.clone()),
                _ => return Err(object_error(&req.object)),
            },
            (other, _) => return Err(object_error(other)),
        };
        let subject =
            EntityInput { name: req.subject.clone(), entity_type: req.subject_type.clone() };
        let mut input = FactInput::new(subject, &req.predicate, object);
        input.source = req.source;
        input.confidence = req.confidence;
        input.valid_from = req.valid_from;
        input.valid_to = req.valid_to;
        input.cites = req.cites;
        let who_owned = who.clone();
        let (done, fact) = self
            .write(who, move |engine| {
                let who = who_owned;
                let done = engine.record_fact(&input)?;
                let snap = engine.reader(&who)?;
                let fact = snap
                    .facts_about(&done.subject.id, None)?
                    .into_iter()
                    .find(|f| f.fact_id == done.fact_id);
                Ok((done, fact))
            })
            .await?;
        let (status, position) = status_of(done.outcome);
        Ok(FactRecorded {
            status: status.into(),
            position,
            fact_id: done.fact_id,
            claim_id: done.claim_id,
            subject: (&done.subject).into(),
            object: done.object.as_ref().map(ResolvedDto::from),
            fact: fact.as_ref().map(FactDto::from),
        })
    }

    /// Retract a fact.
    pub async fn retract_fact(
        &self,
        who: &Principal,
        fact_id: String,
        req: RetractFactRequest,
    ) -> Result<Written, ServiceError> {
        let id = fact_id.clone();
        let outcome = self
            .write(who, move |engine| {
                Ok(engine.retract_fact(&id, req.reason.as_deref(), req.at.as_deref())?)
            })
            .await?;
        let (status, position) = status_of(outcome);
        Ok(Written { id: fact_id, status: status.into(), position })
    }

    /// An entity, found by a forgiving name, with the facts about it.
    pub async fn recall_entity(
        &self,
        who: &Principal,
        req: RecallEntityRequest,
    ) -> Result<EntityFacts, ServiceError> {
        let as_of = req
            .as_of
            .as_deref()
            .map(|t| {
                ctxgraph::parse_time(t).ok_or_else(|| {
                    ServiceError::bad_request(
                        "request.time_format",
                        format!("as_of {t:?} is not a time: write RFC 3339 or YYYY-MM-DD"),
                    )
                })
            })
            .transpose()?;
        self.read(who, move |e, who| {
            let input =
                EntityInput { name: req.entity.clone(), entity_type: req.entity_type.clone() };
            let not_found = || {
                ServiceError::not_found(
                    "entity.not_found",
                    format!("no entity matches {:?}", req.entity),
                )
            };
            let resolution = e.resolve_entity(who, &input)?;
            let scoped = e.reader(who)?;
            let entity = |id: &str| scoped.node(&NodeKey::new("Entity", id));
            // Only entities the principal may see are matched, named or counted.
            let (node, via) = match resolution {
                Resolution::Resolved(r, _) if r.via != "created" => {
                    (entity(&r.id)?.ok_or_else(not_found)?, r.via)
                }
                Resolution::Resolved(..) | Resolution::Unknown => return Err(not_found()),
                Resolution::Ambiguous(list) => {
                    let mut seen = Vec::new();
                    for c in list {
                        if let Some(n) = entity(&c.id)? {
                            seen.push((n, c));
                        }
                    }
                    if seen.len() > 1 {
                        return Err(ServiceError::bad_request(
                            "entity.ambiguous",
                            format!(
                                "{:?} matches several entities: {}; give an id or an entity_type",
                                req.entity,
                                seen.iter()
                                    .map(|(_, c)| format!("{} ({})", c.id, c.via))
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            ),
                        ));
                    }
                    let (n, c) = seen.pop().ok_or_else(not_found)?;
                    (n, c.via.to_owned())
                }
            };
            let facts = scoped.facts_about(&node.key.id, as_of.as_deref())?;
            Ok(EntityFacts {
                entity: (&node).into(),
                via,
                facts: facts.iter().map(FactDto::from).collect(),
            })
        })
        .await
    }

    // -----------------------------------------------------------------------------------------
    // Memories.

    async fn write_memory_record(
        &self,
        who: &Principal,
        record: Map<String, Value>,
    ) -> Result<Written, ServiceError> {
        let (id, outcome) = self
            .write(who, move |engine| {
                let valid = engine
                    .validate(&Value::Object(record).to_string())
                    .map_err(ctxgraph::Error::from)?;
                save_one(engine, &valid)
            })
            .await?;
        let (status, position) = status_of(outcome);
        Ok(Written { id, status: status.into(), position })
    }

    /// Save a memory (decision, checkpoint, insight or context).
    pub async fn save_memory(
        &self,
        who: &Principal,
        req: SaveMemoryRequest,
    ) -> Result<Written, ServiceError> {
        let mut r = Map::new();
        r.insert("record_type".into(), "memory".into());
        r.insert("kind".into(), req.kind.into());
        r.insert("content".into(), req.content.into());
        r.insert("created_at".into(), req.created_at.unwrap_or_else(now).into());
        for (k, v) in [
            ("memory_id", req.memory_id),
            ("topic", req.topic),
            ("reasoning", req.reasoning),
            ("supersedes", req.supersedes),
            ("session_id", req.session_id),
            ("created_by", req.created_by),
        ] {
            if let Some(v) = v {
                r.insert(k.into(), v.into());
            }
        }
        if !req.implements.is_empty() {
            r.insert("implements".into(), req.implements.into());
        }
        if let Some(c) = req.confidence {
            r.insert("confidence".into(), c.into());
        }
        if let Some(a) = req.auto_link {
            r.insert("auto_link".into(), a.into());
        }
        self.write_memory_record(who, r).await
    }

    /// Record the outcome of a memory.
    pub async fn outcome(
        &self,
        who: &Principal,
        req: OutcomeRequest,
    ) -> Result<Written, ServiceError> {
        let Some(memory_id) = req.memory_id else {
            return Err(ServiceError::bad_request(
                "request.required_field",
                "memory_id is required",
            ));
        };
        let mut r = Map::new();
        r.insert("record_type".into(), "memory_outcome".into());
        r.insert("memory_id".into(), memory_id.into());
        r.insert("outcome".into(), req.outcome.into());
        // The reason defaults to none: an empty one is left out, not refused as blank.
        if !req.reason.trim().is_empty() {
            r.insert("reason".into(), req.reason.into());
        }
        r.insert("at".into(), req.at.unwrap_or_else(now).into());
        if let Some(c) = req.created_by {
            r.insert("created_by".into(), c.into());
        }
        self.write_memory_record(who, r).await
    }

    /// Link two memories explicitly.
    pub async fn link(&self, who: &Principal, req: LinkRequest) -> Result<Written, ServiceError> {
        let mut r = Map::new();
        r.insert("record_type".into(), "memory_link".into());
        r.insert("from".into(), req.from.into());
        r.insert("to".into(), req.to.into());
        r.insert("link_type".into(), req.link_type.into());
        r.insert("confidence".into(), req.confidence.unwrap_or(1.0).into());
        r.insert("created_at".into(), now().into());
        if let Some(reason) = req.reason {
            r.insert("reason".into(), reason.into());
        }
        if let Some(c) = req.created_by {
            r.insert("created_by".into(), c.into());
        }
        self.write_memory_record(who, r).await
    }

    /// A memory by id, if visible.
    pub async fn memory(&self, who: &Principal, id: String) -> Result<MemoryDto, ServiceError> {
        self.read_in(reader_pool::Lane::Light, who, move |e, who| {
            let snap = e.reader(who)?;
            match snap.memory(&id)? {
                Some(m) => Ok(MemoryDto::from(&m)),
                None => {
                    Err(ServiceError::not_found("memory.not_found", format!("no memory {id:?}")))
                }
            }
        })
        .await
    }

    /// A page of visible memories, newest first.
    pub async fn memories(
        &self,
        who: &Principal,
        q: MemoryListQuery,
    ) -> Result<MemoryPage, ServiceError> {
        let limit = page_size(q.limit)?;
        let offset = cursor_offset(q.cursor.as_deref())?;
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let mut all = snap.memories()?;
            all.retain(|m| {
                q.kind.as_deref().is_none_or(|k| m.kind == k)
                    && q.topic.as_deref().is_none_or(|t| m.topic.as_deref() == Some(t))
            });
            all.sort_by(|a, b| (b.created_at_ns, &b.id).cmp(&(a.created_at_ns, &a.id)));
            let memories: Vec<MemoryDto> =
                all.iter().skip(offset).take(limit).map(MemoryDto::from).collect();
            let next_cursor = (all.len() > offset + memories.len())
                .then(|| format!("o{}", offset + memories.len()));
            Ok(MemoryPage { memories, next_cursor })
        })
        .await
    }

    /// The evolution chain of a topic.
    pub async fn evolution(
        &self,
        who: &Principal,
        req: EvolutionRequest,
    ) -> Result<EvolutionDto, ServiceError> {
        let options = traversal(req.as_of.as_deref())?;
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            match snap.evolution(&req.topic, &options)? {
                Some(evo) => Ok(EvolutionDto::from(&evo)),
                None => Err(ServiceError::not_found(
                    "memory.no_decisions",
                    format!("no decision on topic {:?}", req.topic),
                )),
            }
        })
        .await
    }

    /// What depends on a memory.
    pub async fn impact(
        &self,
        who: &Principal,
        id: String,
        q: AsOfQuery,
    ) -> Result<ImpactDto, ServiceError> {
        let options = traversal(q.as_of.as_deref())?;
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            match snap.impact(&id, &options)? {
                Some(i) => Ok(ImpactDto::from(&i)),
                None => {
                    Err(ServiceError::not_found("memory.not_found", format!("no memory {id:?}")))
                }
            }
        })
        .await
    }

    /// Contextual memory search with the evolution of the decision the question is about.
    pub async fn search_memories(
        &self,
        who: &Principal,
        req: MemorySearchRequest,
    ) -> Result<MemoryContextDto, ServiceError> {
        self.limits().question.check("query", &req.query)?;
        let options = MemorySearchOptions {
            limit: req.limit.unwrap_or(20).clamp(1, MAX_HITS),
            context: req.context,
            ..MemorySearchOptions::default()
        };
        self.read(who, move |e, who| {
            let vector = embed(e, &req.query)?;
            let snap = e.reader(who)?;
            let ctx = snap.memory_context(&req.query, &vector, &options)?;
            Ok(MemoryContextDto::from(&ctx))
        })
        .await
    }

    /// The rollup of a window (a week by default).
    pub async fn rollup(
        &self,
        who: &Principal,
        req: RollupRequest,
    ) -> Result<RollupDto, ServiceError> {
        let until = match &req.until {
            Some(t) => time_ns("until", t)?,
            None => chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX),
        };
        let since = match &req.since {
            Some(t) => time_ns("since", t)?,
            None => until.saturating_sub(7 * 86_400_000_000_000),
        };
        if since >= until {
            return Err(ServiceError::bad_request("request.window", "since must be before until"));
        }
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let r = snap.rollup(since, until, &RollupOptions::default())?;
            Ok(RollupDto::from(&r))
        })
        .await
    }

    /// What the principal may count.
    pub async fn stats(&self, who: &Principal) -> Result<StatsDto, ServiceError> {
        self.read(who, move |e, who| {
            let snap = e.reader(who)?;
            let s = snap.stats()?;
            Ok(StatsDto {
                tenant: who.tenant().to_owned(),
                events: s.events,
                memories: s.memories,
                auto_link: e.options().memory.auto_link,
            })
        })
        .await
    }

    /// Every principal of the registry (admins only).
    pub async fn principals(&self, who: &Principal) -> Result<PrincipalList, ServiceError> {
        if !who.is_admin() {
            return Err(ServiceError::forbidden(format!(
                "principal {:?} may not list principals: it needs the admin role",
                who.name()
            )));
        }
        let service = self.clone();
        let tenant = who.tenant().to_owned();
        self.blocking(move || {
            let mut reg = lock(&service.inner.registry);
            service.refresh(&mut reg)?;
            // An admin administers its own tenant: another tenant's principals are not its to see.
            let principals = reg
                .principals
                .list()
                .filter(|p| p.tenant == tenant)
                .map(|p| PrincipalDto {
                    name: p.name.clone(),
                    tenant: p.tenant.clone(),
                    roles: p.roles.clone(),
                    created_at: p.created_at.clone(),
                })
                .collect();
            Ok(PrincipalList { principals })
        })
        .await
    }
}

/// A fact's object the request cannot use.
fn object_error(object: &Value) -> ServiceError {
    ServiceError::bad_request(
        "request.object_type",
        format!(
            "object {object}: give an entity name, a string, number or boolean value, a slot value {{\"slot\": \"genre\", \"value\": \"drama\"}} or a type {{\"type\": \"Film\"}} (without object_type)"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorClass;

    fn tenant() -> (tempfile::TempDir, Tenant) {
        let dir = tempfile::TempDir::new().unwrap();
        let t = Tenant::open("t", dir.path().join("t.ctxg"), EngineOptions::default()).unwrap();
        (dir, t)
    }

    fn access_records(t: &Tenant) -> usize {
        let w = lock(&t.writer);
        let log = w.owner_reader().unwrap().log(1, 1_000).unwrap();
        log.iter().filter(|e| e.kind == RecordKind::Access).count()
    }

    #[test]
    fn reads_past_the_tenants_reader_bound_wait_for_an_engine() {
        let (_dir, t) = tenant();
        let t = Arc::new(t);
        t.max_readers.store(1, Ordering::Relaxed);
        let (started, first_running) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let first = {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                t.read(reader_pool::Lane::Heavy, |_| {
                    started.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(())
                })
            })
        };
        first_running.recv_timeout(Duration::from_secs(30)).unwrap();
        let (done, second_done) = std::sync::mpsc::channel();
        let second = {
            let t = Arc::clone(&t);
            std::thread::spawn(move || {
                done.send(t.read(reader_pool::Lane::Heavy, |_| Ok(()))).unwrap()
            })
        };
        // The one engine is taken: the second read waits for it.
        assert!(second_done.recv_timeout(Duration::from_millis(300)).is_err());
        assert_eq!(lock(&t.readers).open(), 1);
        release.send(()).unwrap();
        second_done.recv_timeout(Duration::from_secs(30)).unwrap().unwrap();
        first.join().unwrap().unwrap();
        second.join().unwrap();
        assert_eq!(lock(&t.readers).open(), 1);
    }

    /// Wait until the writer has written the access notes a read queued.
    fn flushed_by_the_writer(t: &Tenant) {
        for _ in 0..3_000 {
            if !t.access_flush_queued.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the writer did not write the queued access notes");
    }

    #[test]
    fn accesses_are_flushed_by_the_writer_once_enough_are_pending() {
        let (_dir, t) = tenant();
        let t = Arc::new(t);
        let metrics = Metrics::default();
        let ids: Vec<String> = (0..FLUSH_ACCESS_AT).map(|i| format!("e{i}")).collect();
        t.access.note(ids[1..].iter().map(String::as_str), chrono::Utc::now());
        t.queue_access_flush(&metrics);
        assert!(!t.access_flush_queued.load(Ordering::Acquire));
        assert_eq!((t.access.pending(), access_records(&t)), (FLUSH_ACCESS_AT - 1, 0));
        t.access.note([ids[0].as_str()], chrono::Utc::now());
        // A busy writer is not waited for: the flush is queued, once, and the writer runs it.
        {
            let _busy = lock(&t.writer);
            t.queue_access_flush(&metrics);
            t.queue_access_flush(&metrics);
            assert!(t.access_flush_queued.load(Ordering::Acquire));
            assert_eq!(t.access.pending(), FLUSH_ACCESS_AT);
        }
        flushed_by_the_writer(&t);
        assert_eq!((t.access.pending(), access_records(&t)), (0, 1));
        // Not again within ACCESS_FLUSH_EVERY, by a read or a write's upkeep; once it passed, yes.
        t.access.note(ids.iter().map(String::as_str), chrono::Utc::now());
        t.queue_access_flush(&metrics);
        flushed_by_the_writer(&t);
        t.maintain(&metrics);
        assert_eq!((t.access.pending(), access_records(&t)), (FLUSH_ACCESS_AT, 1));
        *lock(&t.access_flushed) = Instant::now().checked_sub(ACCESS_FLUSH_EVERY);
        t.maintain(&metrics);
        assert_eq!((t.access.pending(), access_records(&t)), (0, 2));
    }

    fn runtime(blocking_threads: usize) -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .max_blocking_threads(blocking_threads)
            .enable_all()
            .build()
            .unwrap()
    }

    fn event(id: &str) -> Value {
        serde_json::json!({"event_id": id, "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s", "agent_id": "a",
            "trace_id": "t", "tool_name": "deploy", "status": "failed"})
    }

    /// Another process's long write transaction (a CLI `consolidate`) makes a write wait past
    /// the busy timeout: the client gets a retryable 503 `store.busy`, not a 500.
    #[test]
    fn a_store_locked_elsewhere_is_a_retryable_unavailable() {
        let dir = tempfile::TempDir::new().unwrap();
        let service = Service::open(dir.path(), EngineOptions::default()).unwrap();
        let who = Principal::new("w", "acme", ["writer".to_owned()]).unwrap();
        let rt = runtime(4);
        let ingest =
            |id: &str| rt.block_on(service.ingest(&who, IngestRequest { events: vec![event(id)] }));
        assert_eq!(ingest("e1").unwrap().accepted, 1);
        let holder = rusqlite::Connection::open(dir.path().join("tenants/acme.ctxg")).unwrap();
        holder.execute_batch("BEGIN IMMEDIATE").unwrap();
        let err = ingest("e2").unwrap_err();
        assert_eq!(
            (err.class, err.code.as_str()),
            (ErrorClass::Unavailable, "store.busy"),
            "{err}"
        );
        holder.execute_batch("ROLLBACK").unwrap();
        assert_eq!(ingest("e2").unwrap().accepted, 1, "retrying succeeds");
    }

    /// Work that runs past the deadline is answered 503 `request.deadline`; work still queued
    /// when its request is given up is never started.
    #[test]
    fn past_the_deadline_requests_are_answered_and_queued_work_skipped() {
        let dir = tempfile::TempDir::new().unwrap();
        let service = Service::open(dir.path(), EngineOptions::default()).unwrap();
        service.set_limits(RequestLimits {
            deadline: Duration::from_millis(20),
            ..RequestLimits::default()
        });
        // One blocking thread: the second request queues behind the first.
        let rt = runtime(1);
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let started = Arc::new(AtomicBool::new(false));
        let queued = Arc::clone(&started);
        rt.block_on(async {
            let first = service.blocking(move || {
                let _ = hold.recv();
                Ok(())
            });
            let second = service.blocking(move || {
                queued.store(true, Ordering::SeqCst);
                Ok(())
            });
            let (first, second) = tokio::join!(first, second);
            assert_eq!(first.unwrap_err().code, "request.deadline");
            let second = second.unwrap_err();
            assert_eq!(
                (second.class, second.code.as_str()),
                (ErrorClass::Unavailable, "request.deadline")
            );
        });
        release.send(()).unwrap();
        // A request after both runs once the first is done and the second was dequeued.
        service.set_limits(RequestLimits::default());
        rt.block_on(service.blocking(|| Ok(()))).unwrap();
        assert!(!started.load(Ordering::SeqCst), "work given up before it started never ran");
    }

    /// Work whose request was given up while it waited for the writer or a reader does not
    /// run: nothing is written on behalf of a client that was told the request failed.
    #[test]
    fn given_up_requests_neither_write_nor_read() {
        let (_dir, t) = tenant();
        let gone = Arc::new(AtomicBool::new(false));
        let mut ran = false;
        let wrote = as_request(Arc::clone(&gone), || {
            t.write(|_| {
                ran = true;
                Ok(())
            })
        });
        assert_eq!(wrote.unwrap_err().code, "request.deadline");
        let read = as_request(Arc::clone(&gone), || {
            t.read(reader_pool::Lane::Heavy, |_| {
                ran = true;
                Ok(())
            })
        });
        assert_eq!(read.unwrap_err().code, "request.deadline");
        assert!(!ran);
        // The reader slot went back: a live request still reads, and outside a request nothing
        // is given up.
        let live = Arc::new(AtomicBool::new(true));
        assert!(as_request(live, || t.read(reader_pool::Lane::Heavy, |_| Ok(()))).is_ok());
        assert!(!given_up());
        assert!(t.write(|_| Ok(())).is_ok());
        assert_eq!(lock(&t.readers).open(), 1);
    }

    #[test]
    fn readers_share_the_tenant_tracker_and_a_writes_upkeep_or_a_drop_flushes_it() {
        let (dir, t) = tenant();
        let t = Arc::new(t);
        t.read(reader_pool::Lane::Heavy, |e| {
            assert!(Arc::ptr_eq(e.access_tracker(), &t.access));
            e.access_tracker().note(["e1"], chrono::Utc::now());
            Ok(())
        })
        .unwrap();
        // Not before the write's answer: after it, in the writer's upkeep.
        t.write(|_| Ok(())).unwrap();
        assert_eq!((t.access.pending(), access_records(&t)), (1, 0));
        t.maintain(&Metrics::default());
        assert_eq!((t.access.pending(), access_records(&t)), (0, 1));
        t.access.note(["e2"], chrono::Utc::now());
        drop(t);
        let e =
            Engine::open(&dir.path().join("t.ctxg"), OpenMode::MustExist, EngineOptions::default())
                .unwrap();
        let log = e.owner_reader().unwrap().log(1, 1_000).unwrap();
        assert_eq!(log.iter().filter(|e| e.kind == RecordKind::Access).count(), 2);
    }
}
