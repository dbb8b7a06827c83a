//! The write side: opening a store, appending records with their projection, schema modules,
//! catching the graph up with the log and reprojecting.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use ctxgraph_embed::Embedder;

use ctxgraph_ontology::{Limits, RecordKind, Schema, ValidRecord, ValidationErrors, validate};
use ctxgraph_projection::project;
use ctxgraph_store::{
    Appended, Durability, Embedded, EmbeddedWrite, GraphReader, GraphStore, Log, LogEntry,
    LogReader, OpenMode, RemoteStore, StoreError,
};

use crate::access_tracker::AccessTracker;
use crate::backend::Backend;
use crate::consolidate::ConsolidateOptions;
use crate::edge_cache::EdgeCache;
use crate::enrich::EmbedderChoice;
use crate::error::Error;
use crate::graph_checks;
use crate::ingest::IngestOutcome;
use crate::node_cache::NodeCache;
use crate::text_delta::TextDelta;
use crate::text_index::TextCache;
use crate::vector_index::IndexCache;
use crate::view::Snapshot;
use ctxgraph_ann::SearchParams;

/// Records folded per transaction when the graph catches up with the log, so a long reprojection
/// commits progress (and can resume after a crash) without one huge transaction.
const CATCH_UP_CHUNK: usize = 20_000;

/// Engine settings.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Size limits applied to incoming records.
    pub limits: Limits,
    /// The embedding model for stage 2.
    pub embedder: EmbedderChoice,
    /// Open a store whose vectors were made by another model (to re-embed it).
    pub accept_new_embedder: bool,
    /// Stage-3 settings used by [`Engine::consolidate`].
    pub consolidate: ConsolidateOptions,
    /// How vector searches probe the index.
    pub search: SearchParams,
    /// Decision-memory link rules and how links are read.
    pub memory: crate::memory::MemoryOptions,
    /// Run recall's in-memory index searches (the vector index's probe and scan, the lexical
    /// index's merge) on the calling thread always. By default a recall overlaps them, on a
    /// helper thread, with its reads of the store while fewer recalls are in flight in the
    /// process than the machine has cores (with every core running a recall, the overlap
    /// gains no time and the searches stay on their callers anyway).
    pub inline_searches: bool,
}

/// When the graph is updated for newly appended records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Projection {
    /// In the same transaction as the append: the graph never lags the log (the default).
    #[default]
    Inline,
    /// Later, by [`Engine::catch_up`] or [`Engine::reproject`]; for bulk loads and measurement.
    Deferred,
}

/// What a reprojection or catch-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReprojectReport {
    /// Records folded.
    pub records: u64,
    /// Log position the graph is now at.
    pub position: u64,
}

/// The write side of ctxgraph, over the embedded store ([`Engine::open`]) or a remote store
/// whose graph projection workers fold ([`Engine::open_remote`]).
pub struct Engine {
    /// Where the log and the graph are.
    pub(crate) backend: Backend,
    pub(crate) schema: Schema,
    pub(crate) options: EngineOptions,
    pub(crate) embedder: OnceLock<Arc<dyn Embedder>>,
    /// Index parts read so far, shared by snapshots (and by engines given
    /// [`Engine::share_caches`]).
    pub(crate) caches: Arc<Caches>,
    /// Events recalls returned, waiting for [`Engine::flush_access`].
    pub(crate) access: Arc<AccessTracker>,
}

/// Index parts read so far, kept for the engine's life and shared by its snapshots, so that
/// repeated searches (a server, a benchmark) read each part once. Each part is tagged with the
/// index generation it was read at, so engines of one store may share them.
#[derive(Default)]
pub(crate) struct Caches {
    /// The vector index's centroids and lists (see `vector_index::IndexCache`).
    pub(crate) vectors: IndexCache,
    /// The lexical index's posting lists (see `text_index::TextCache`).
    pub(crate) text: TextCache,
    /// The documents written since the lexical index's build (see `text_delta`), followed by
    /// the writer's store once engines share these caches.
    pub(crate) delta: Arc<TextDelta>,
    /// The edge groups recall's expansion read (see `edge_cache::EdgeCache`).
    pub(crate) edges: EdgeCache,
    /// The nodes of recall's vector and BM25 hits, decoded (see `node_cache::NodeCache`).
    pub(crate) nodes: NodeCache,
}

/// A handle on the index parts an engine has read (see [`Engine::index_caches`]); engines of
/// one store may share it, since each part is tagged with the index generation it was read at.
#[derive(Clone, Default)]
pub struct IndexCaches(Arc<Caches>);

impl std::fmt::Debug for IndexCaches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexCaches").finish_non_exhaustive()
    }
}

impl Caches {
    /// Forget every part read so far.
    pub(crate) fn clear(&self) {
        self.vectors.clear();
        self.text.clear();
        self.edges.clear();
        self.nodes.clear();
    }
}

impl Engine {
    /// Open the store at `path`, loading the core schema and every schema module in its log.
    pub fn open(path: &Path, mode: OpenMode, options: EngineOptions) -> Result<Engine, Error> {
        Engine::on(Backend::Embedded(Embedded::open(path, mode)?), options)
    }

    /// Run on a remote store (the scale-out backend), loading the core schema and every schema
    /// module in its log. Every read works, on the graph as the store's projection workers
    /// have folded it; [`Engine::ingest_batch`] and [`Engine::ingest_jsonl`] validate as on the
    /// embedded store and append, and a read sees a record once the graph's
    /// `projected_through` reaches its position ([`Engine::wait_projected`]).
    /// [`Engine::forget_many`] runs on a store that says it can ([`RemoteStore::forgets`]), for
    /// events, sessions and memories. Writes that change the graph in place (enrich,
    /// consolidate, reproject, retention, entity resolution, memory links, …) are refused with
    /// `db.backend_unsupported`.
    pub fn open_remote(
        store: Box<dyn RemoteStore>,
        options: EngineOptions,
    ) -> Result<Engine, Error> {
        Engine::on(Backend::Remote(store), options)
    }

    fn on(backend: Backend, options: EngineOptions) -> Result<Engine, Error> {
        let mut schema = Schema::core()?;
        // One read for the schema modules, the embedding model and the settings (on a remote
        // store each read takes a pooled connection).
        let read = backend.begin_read()?;
        {
            for entry in read.read_kind(RecordKind::Schema)? {
                let source = schema_source(&entry.body).ok_or_else(|| Error::Corruption {
                    position: entry.position,
                    reason: "schema record has no source".into(),
                })?;
                schema = schema.extend(&source).map_err(|e| Error::Corruption {
                    position: entry.position,
                    reason: e.to_string(),
                })?;
            }
        }
        let stored = read.embedding_model()?;
        let configured = options.embedder.model();
        if let Some(stored) = stored
            && stored != configured
            && !options.accept_new_embedder
        {
            return Err(Error::EmbeddingModel { stored, configured });
        }
        let mut options = options;
        // The store's own setting switches automatic memory links off whatever the caller's
        // options say (`Engine::set_auto_link`).
        if read.setting(crate::memory::AUTO_LINK_SETTING)?.as_deref() == Some("off") {
            options.memory.auto_link = false;
        }
        drop(read);
        Ok(Engine {
            backend,
            schema,
            options,
            embedder: OnceLock::new(),
            caches: Arc::default(),
            access: Arc::new(AccessTracker::default()),
        })
    }

    /// The effective schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The settings in force.
    pub fn options(&self) -> &EngineOptions {
        &self.options
    }

    /// Bytes the store occupies on disk (0 for a remote store).
    pub fn size_on_disk(&self) -> u64 {
        self.backend.size_on_disk()
    }

    /// The remote store this engine runs on, as a URL without credentials; `None` on the
    /// embedded store.
    pub fn remote_location(&self) -> Option<String> {
        match &self.backend {
            Backend::Embedded(_) => None,
            Backend::Remote(store) => Some(store.location()),
        }
    }

    /// Wait until the graph has folded the log through `position` (read-your-writes on a
    /// remote store, whose workers fold what [`Engine::ingest_batch`] appended), polling until
    /// `timeout` has passed; returns the graph's `projected_through` when it returns, which is
    /// below `position` only on a timeout. On the embedded store the graph is current after
    /// every inline write, so this returns at once unless a deferred load is waiting for
    /// [`Engine::catch_up`].
    pub fn wait_projected(
        &self,
        position: u64,
        timeout: std::time::Duration,
    ) -> Result<u64, Error> {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(2);
        loop {
            let through = self.backend.begin_read()?.projected_through()?;
            let left = timeout.saturating_sub(start.elapsed());
            if through >= position || left.is_zero() {
                return Ok(through);
            }
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(std::time::Duration::from_millis(100));
        }
    }

    /// Validate one JSON record against the schema and limits without writing anything.
    pub fn validate(&self, text: &str) -> Result<ValidRecord, ValidationErrors> {
        validate(&self.schema, &self.options.limits, text)
    }

    /// Append `records` in one transaction and (with [`Projection::Inline`]) project them.
    ///
    /// Returns one outcome per record, in order: new at a position, duplicate of a stored record,
    /// or an error for a conflicting record, or for an entity decision, instance_of, slot or goal
    /// naming an entity, type or checklist that does not exist (nothing of it written). With
    /// `stop_on_conflict`, the records after the first such error are not attempted and get no
    /// outcome. Everything acknowledged is durable when this returns.
    ///
    /// On a remote store ([`Engine::open_remote`]) the records are checked the same way, against
    /// the graph its workers have folded and the log records they have not folded yet, then
    /// appended; `projection` does not apply there, since the workers fold them.
    pub fn ingest_batch(
        &mut self,
        records: &[ValidRecord],
        projection: Projection,
        stop_on_conflict: bool,
    ) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
        self.ingest_batch_as(records, projection, stop_on_conflict, Durability::Synced)
    }

    /// [`Engine::ingest_batch`], committed with `durability` on an embedded store: `Deferred`
    /// only for records no caller is told are stored (a read's access notes).
    pub(crate) fn ingest_batch_as(
        &mut self,
        records: &[ValidRecord],
        projection: Projection,
        stop_on_conflict: bool,
        durability: Durability,
    ) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let store = match &mut self.backend {
            Backend::Embedded(store) => store,
            Backend::Remote(store) => {
                return crate::remote_ingest::ingest(
                    store.as_ref(),
                    &self.schema,
                    records,
                    stop_on_conflict,
                );
            }
        };
        let recorded_at = crate::knowledge::now();
        let mut outcomes = Vec::with_capacity(records.len());
        let mut w = store.begin_write_as(durability)?;
        let inline = projection == Projection::Inline;
        let decides = graph_checks::decides(records);
        if inline || decides {
            // A graph left behind by a deferred load catches up first, so folds stay in log order.
            fold_lagging(&self.schema, &mut w, usize::MAX)?;
        }
        // What earlier records of a deferred batch create, which later ones may name.
        let mut earlier = graph_checks::Earlier::default();
        for record in records {
            if let Some(refused) = graph_checks::check(&w, record, inline, decides, &mut earlier)? {
                outcomes.push(Err(refused));
                if stop_on_conflict {
                    break;
                }
                continue;
            }
            match w.append(record, &recorded_at) {
                Ok(Appended::New(position)) => {
                    if inline {
                        project(&self.schema, &mut w, position, record)?;
                    }
                    outcomes.push(Ok(IngestOutcome::New(position)));
                }
                Ok(Appended::Duplicate(position)) => {
                    outcomes.push(Ok(IngestOutcome::Duplicate(position)))
                }
                Err(e @ StoreError::Conflict { .. }) => {
                    outcomes.push(Err(Error::Store(e)));
                    if stop_on_conflict {
                        break;
                    }
                }
                Err(e) => return Err(e.into()),
            }
        }
        if inline {
            let head = w.head()?;
            w.set_projected_through(head)?;
        }
        w.commit()?;
        Ok(outcomes)
    }

    /// Add a schema extension module (TOML text): validated, recorded in the log, in force at once.
    ///
    /// Adding the same module text again is reported as a duplicate.
    pub fn add_schema_module(&mut self, text: &str) -> Result<IngestOutcome, Error> {
        {
            let read = self.backend.begin_read()?;
            for entry in read.read_kind(RecordKind::Schema)? {
                if schema_source(&entry.body).as_deref() == Some(text) {
                    return Ok(IngestOutcome::Duplicate(entry.position));
                }
            }
        }
        let (record, extended) = ValidRecord::schema_module(&self.schema, text)?;
        let mut outcomes =
            self.ingest_batch(std::slice::from_ref(&record), Projection::Inline, true)?;
        // One record in, one outcome out: ingest_batch reports every record it was given.
        let outcome = outcomes.pop().ok_or_else(|| Error::Corruption {
            position: 0,
            reason: "appending a schema module reported no outcome".into(),
        })??;
        self.schema = extended;
        Ok(outcome)
    }

    /// Fold every record the graph has not seen yet (after a deferred load), committing in chunks.
    pub fn catch_up(
        &mut self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReprojectReport, Error> {
        if let Backend::Remote(store) = &self.backend {
            return remote_fold(store.as_ref(), "catching up the graph", progress);
        }
        let mut report = ReprojectReport::default();
        let store = self.backend.embedded_mut("catching up the graph")?;
        loop {
            let mut w = store.begin_write()?;
            let head = w.head()?;
            let folded = fold_lagging(&self.schema, &mut w, CATCH_UP_CHUNK)?;
            let position = w.projected_through()?;
            w.commit()?;
            report.records += folded;
            report.position = position;
            progress(position, head);
            if folded == 0 || position >= head {
                return Ok(report);
            }
        }
    }

    /// Rebuild the graph from the log: clear it, then fold every record in log order.
    ///
    /// The log is the only source of truth; the result equals the incrementally built graph.
    ///
    /// Events that retention archived stay out of the graph; see [`Engine::reproject_with`].
    pub fn reproject(
        &mut self,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReprojectReport, Error> {
        self.reproject_with(false, progress)
    }

    /// [`Engine::reproject`], bringing archived events back into the graph when `include_archive`
    /// (their archive marks are dropped).
    pub fn reproject_with(
        &mut self,
        include_archive: bool,
        progress: &mut dyn FnMut(u64, u64),
    ) -> Result<ReprojectReport, Error> {
        if let Backend::Remote(store) = &self.backend {
            if !store.resets() {
                return Err(Backend::unsupported_by("reproject", store.as_ref()));
            }
            // A store without retention keeps no archive marks: nothing to bring back or keep
            // out. The reset leaves the marks, as the store file's `clear_graph` leaves its
            // `archived` table.
            if include_archive && store.retains() {
                store.drop_archive_marks()?;
            }
            store.reset_projection()?;
            let report = remote_fold(store.as_ref(), "reproject", progress)?;
            if store.retains() {
                let schema = &self.schema;
                let run = &mut |w: &mut dyn ctxgraph_store::RetentionWrite| {
                    crate::retention::reapply_archive(schema, w)
                };
                crate::retention::in_retention(store.as_ref(), "reproject", true, run)?;
            }
            return Ok(report);
        }
        let mut w = self.backend.embedded_mut("reproject")?.begin_write()?;
        w.clear_graph()?;
        if include_archive {
            w.clear_archived()?;
        }
        w.commit()?;
        let report = self.catch_up(progress)?;
        let mut w = self.backend.embedded_mut("reproject")?.begin_write()?;
        crate::retention::reapply_archive(&self.schema, &mut w)?;
        w.commit()?;
        Ok(report)
    }

    /// Copy `entries` of another log (the scale-out backend's, read in position order) into
    /// this store's log at the same positions, ids, times and bodies, in one transaction; the
    /// log must end just before the first. The graph is not projected and the schema modules
    /// among them are not loaded: open the store again, then [`Engine::catch_up`].
    pub fn import_log(&mut self, entries: &[LogEntry]) -> Result<u64, Error> {
        let mut w = self.backend.embedded_mut("log import")?.begin_write()?;
        let n = w.import(entries)?;
        w.commit()?;
        Ok(n)
    }

    /// Copy the write-ahead log into the main file (after bulk loads, to leave one file).
    pub fn checkpoint(&self) -> Result<(), Error> {
        Ok(self.backend.embedded("checkpoint")?.checkpoint()?)
    }

    /// Rewrite the store file from its live content (SQLite's `VACUUM`) and truncate the
    /// write-ahead log, so [`Engine::size_on_disk`] measures what the store holds, not the pages
    /// freed by deletions. Costs a copy of the file.
    pub fn vacuum(&self) -> Result<(), Error> {
        Ok(self.backend.embedded("vacuum")?.vacuum()?)
    }

    /// Size of the store's write-ahead log file in bytes (0 for a remote store).
    pub fn wal_size(&self) -> u64 {
        match &self.backend {
            Backend::Embedded(store) => store.wal_size(),
            Backend::Remote(_) => 0,
        }
    }

    /// Bound the page cache of this engine's connection to about `bytes` (a reader among many
    /// needs less than the default 256 MiB, which suits bulk loads). A remote store keeps no
    /// page cache in this process: nothing to bound.
    pub fn set_cache_bytes(&self, bytes: u64) -> Result<(), Error> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store.set_cache_bytes(bytes)?),
            Backend::Remote(_) => Ok(()),
        }
    }

    /// Bound how much of the store this engine's connection maps into memory (0: none); see
    /// [`Embedded::set_mmap_bytes`]. A remote store maps nothing: nothing to bound.
    pub fn set_mmap_bytes(&self, bytes: u64) -> Result<(), Error> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store.set_mmap_bytes(bytes)?),
            Backend::Remote(_) => Ok(()),
        }
    }

    /// Whether this engine's commits checkpoint the WAL themselves once it passes ~64 MiB; see
    /// [`Embedded::set_auto_checkpoint`]. A remote store has no WAL: nothing to do.
    pub fn set_auto_checkpoint(&self, on: bool) -> Result<(), Error> {
        match &self.backend {
            Backend::Embedded(store) => Ok(store.set_auto_checkpoint(on)?),
            Backend::Remote(_) => Ok(()),
        }
    }

    /// After a write on this engine (its writer), the write-ahead log's copy into the file off
    /// the writer's thread: [`WalCopier::after_commit`](ctxgraph_store::WalCopier::after_commit), with this engine's automatic checkpoint
    /// off ([`Engine::set_auto_checkpoint`]). A remote store has no WAL: nothing to do.
    pub fn copy_wal(&self, copier: &ctxgraph_store::WalCopier) -> Result<(), Error> {
        match &self.backend {
            Backend::Embedded(store) => Ok(copier.after_commit(store)?),
            Backend::Remote(_) => Ok(()),
        }
    }

    /// The cache of index parts (vector index lists, lexical posting lists) this engine reads
    /// through, to share with other engines of the same store.
    pub fn index_caches(&self) -> IndexCaches {
        IndexCaches(Arc::clone(&self.caches))
    }

    /// Read the index parts through `caches` from now on, so that engines of one store (a
    /// server's readers) hold one copy of them instead of one each. The engines sharing them
    /// also share the texts and the vectors written since the indexes' builds: this engine's
    /// writes extend those copies (`text_delta`, `vector_delta`), and searches rank those texts
    /// and score those vectors from them instead of asking the store.
    pub fn set_index_caches(&mut self, caches: IndexCaches) {
        self.caches = caches.0;
        if let Backend::Embedded(store) = &mut self.backend {
            let sink: Arc<dyn ctxgraph_store::TextSink> = self.caches.delta.clone();
            store.set_text_sink(Some(sink));
            let sink: Arc<dyn ctxgraph_store::VectorSink> = self.caches.vectors.delta();
            store.set_vector_sink(Some(sink));
        }
    }

    /// What `who` may read, in one consistent snapshot: the only way reads leave the engine
    /// (see the `view` module). The store's owner reads through [`Engine::owner_reader`].
    pub fn reader(&self, who: &crate::Principal) -> Result<crate::Reader<'_>, Error> {
        Ok(crate::Reader::new(self.snapshot()?, who.clone()))
    }

    /// The store owner's reader ([`crate::Principal::local`]: the local CLI without `--as`,
    /// tests, benchmarks): everything is visible, and the owner-only reads are allowed.
    pub fn owner_reader(&self) -> Result<crate::Reader<'_>, Error> {
        self.reader(&crate::Principal::local())
    }

    /// A consistent read snapshot, unfiltered: for the engine's own features only.
    pub(crate) fn snapshot(&self) -> Result<Snapshot<'_>, Error> {
        Ok(Snapshot::new(
            self.backend.begin_read()?,
            &self.schema,
            self.backend.size_on_disk(),
            &self.caches,
        )
        .with_helpers(!self.options.inline_searches))
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.backend)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// Fold up to `max` records past the projection checkpoint; returns how many were folded.
pub(crate) fn fold_lagging(
    schema: &Schema,
    w: &mut EmbeddedWrite<'_>,
    max: usize,
) -> Result<u64, Error> {
    let mut position = w.projected_through()?;
    let head = w.head()?;
    let mut folded = 0u64;
    while position < head && (folded as usize) < max {
        let want = (max - folded as usize).min(CATCH_UP_CHUNK);
        let entries = w.read_from(position + 1, want)?;
        if entries.is_empty() {
            break;
        }
        for entry in entries {
            if entry.kind != RecordKind::Schema {
                project(schema, w, entry.position, &decode(schema, &entry)?)?;
            }
            position = entry.position;
            folded += 1;
        }
    }
    w.set_projected_through(position)?;
    Ok(folded)
}

/// A record read back from the log. Stored records were valid when written and the schema only
/// grows, so a failure here means the log was damaged.
pub(crate) fn decode(schema: &Schema, entry: &LogEntry) -> Result<ValidRecord, Error> {
    ctxgraph_ontology::validate_stored(schema, &entry.body)
        .map_err(|e| Error::Corruption { position: entry.position, reason: e.to_string() })
}

/// The module text of a schema record (stored, or a line being ingested), if it is one.
pub(crate) fn schema_source(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    if value.get("record_type")?.as_str()? != "schema" {
        return None;
    }
    value.get("source")?.as_str().map(str::to_owned)
}

/// Fold a remote store's graph to its log's head in this process, with the fold its workers
/// run (a worker folding at the same time commits each page once with it): what
/// [`Engine::catch_up`] and [`Engine::reproject`] do there. `operation` names the refusal on a
/// store that does not fold in the caller.
fn remote_fold(
    store: &dyn RemoteStore,
    operation: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReprojectReport, Error> {
    if !store.resets() {
        return Err(Backend::unsupported_by(operation, store));
    }
    let (head, from) = {
        let read = store.begin_read()?;
        (read.head()?, read.projected_through()?)
    };
    let position = if from < head { store.fold_through(head)? } else { from };
    progress(position, head);
    Ok(ReprojectReport { records: position.saturating_sub(from), position })
}
