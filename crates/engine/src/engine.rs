//! The write side: opening a store, appending records with their projection, schema modules,
//! catching the graph up with the log and reprojecting.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use ctxgraph_embed::Embedder;

use ctxgraph_ontology::{
    Limits, RecordBody, RecordKind, Schema, ValidRecord, ValidationErrors, entity_id, validate,
};
use ctxgraph_projection::{mentions, project};
use ctxgraph_store::{
    Appended, Embedded, EmbeddedWrite, GraphReader, GraphStore, Log, LogEntry, LogReader, OpenMode,
    StoreError,
};

use crate::access_tracker::AccessTracker;
use crate::consolidate::ConsolidateOptions;
use crate::edge_cache::EdgeCache;
use crate::enrich::EmbedderChoice;
use crate::error::Error;
use crate::ingest::IngestOutcome;
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

/// The write side of ctxgraph over the embedded store.
pub struct Engine {
    pub(crate) store: Embedded,
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
    /// The edge groups recall's expansion read (see `edge_cache::EdgeCache`).
    pub(crate) edges: EdgeCache,
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
    }
}

impl Engine {
    /// Open the store at `path`, loading the core schema and every schema module in its log.
    pub fn open(path: &Path, mode: OpenMode, options: EngineOptions) -> Result<Engine, Error> {
        let store = Embedded::open(path, mode)?;
        let mut schema = Schema::core()?;
        {
            let read = store.begin_read()?;
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
        let stored = store.begin_read()?.embedding_model()?;
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
        if store.begin_read()?.setting(crate::memory::AUTO_LINK_SETTING)?.as_deref() == Some("off")
        {
            options.memory.auto_link = false;
        }
        Ok(Engine {
            store,
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

    /// Bytes the store occupies on disk.
    pub fn size_on_disk(&self) -> u64 {
        self.store.size_on_disk()
    }

    /// Validate one JSON record against the schema and limits without writing anything.
    pub fn validate(&self, text: &str) -> Result<ValidRecord, ValidationErrors> {
        validate(&self.schema, &self.options.limits, text)
    }

    /// Append `records` in one transaction and (with [`Projection::Inline`]) project them.
    ///
    /// Returns one outcome per record, in order: new at a position, duplicate of a stored record,
    /// or an error for a conflicting record, or for an entity decision, instance_of, slot or goal
    /// naming an entity, type or checklist that does not exist (nothing of it written). With `stop_on_conflict`, the records after the first such
    /// error are not attempted and get no outcome. Everything acknowledged is durable when this
    /// returns.
    pub fn ingest_batch(
        &mut self,
        records: &[ValidRecord],
        projection: Projection,
        stop_on_conflict: bool,
    ) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let recorded_at = crate::knowledge::now();
        let mut outcomes = Vec::with_capacity(records.len());
        let mut w = self.store.begin_write()?;
        let inline = projection == Projection::Inline;
        // An entity decision, a memory record, a fact retraction, or a type, slot, checklist or
        // goal record is checked against the graph, so the graph must be current for it.
        let decides = records.iter().any(|r| {
            matches!(r.kind(), RecordKind::EntityDecision | RecordKind::FactRetraction)
                || crate::memory::names_memories(r.body())
                || matches!(r.body(), RecordBody::Slots(_) | RecordBody::Receipt(_))
        });
        if inline || decides {
            // A graph left behind by a deferred load catches up first, so folds stay in log order.
            fold_lagging(&self.schema, &mut w, usize::MAX)?;
        }
        // Entities mentioned earlier in a deferred batch, which a decision may name.
        let mut mentioned = std::collections::BTreeSet::new();
        // Memories saved earlier in this batch, which a later memory record may name.
        let mut saved = std::collections::BTreeSet::new();
        // Types and checklists declared earlier in a deferred batch.
        let mut declared = std::collections::BTreeSet::new();
        // Facts claimed earlier in a deferred batch, which a retraction may name.
        let mut claimed = std::collections::BTreeSet::new();
        for record in records {
            match record.body() {
                RecordBody::EntityDecision(d) => {
                    if let Some(v) = crate::resolve::missing_entities(&w, d, &mentioned)? {
                        outcomes.push(Err(Error::Validation(v.into())));
                        if stop_on_conflict {
                            break;
                        }
                        continue;
                    }
                }
                RecordBody::Slots(s) => {
                    if let Some(v) = crate::slots::missing_refs(&w, s, &mentioned, &declared)? {
                        outcomes.push(Err(Error::Validation(v.into())));
                        if stop_on_conflict {
                            break;
                        }
                        continue;
                    }
                    if !inline {
                        crate::slots::created(s, &mut mentioned, &mut declared);
                    }
                }
                RecordBody::Event(e) if decides && !inline => {
                    mentioned
                        .extend(mentions(e).into_iter().map(|m| entity_id(m.entity_type, m.name)));
                    // A receipt later in the batch may cite the event.
                    mentioned.insert(format!("event\u{0}{}", e.event_id));
                }
                RecordBody::Memory(_)
                | RecordBody::MemoryOutcome(_)
                | RecordBody::MemoryLink(_)
                | RecordBody::MemoryLinkVote(_) => {
                    if let Some(v) = crate::memory::missing_memories(&w, record.body(), &saved)? {
                        outcomes.push(Err(Error::Validation(v.into())));
                        if stop_on_conflict {
                            break;
                        }
                        continue;
                    }
                    if let RecordBody::Memory(m) = record.body() {
                        saved.insert(m.memory_id.clone());
                    }
                }
                RecordBody::FactRetraction(r) => {
                    if let Some(v) = crate::knowledge::unknown_fact(&w, &r.fact_id, &claimed)? {
                        outcomes.push(Err(Error::Validation(v.into())));
                        if stop_on_conflict {
                            break;
                        }
                        continue;
                    }
                }
                RecordBody::Fact(f) if decides && !inline => {
                    claimed.insert(f.fact_id.clone());
                }
                RecordBody::Receipt(r) => {
                    if let Some(v) = crate::receipt::missing_inputs(&w, r, &mentioned)? {
                        outcomes.push(Err(Error::Validation(v.into())));
                        if stop_on_conflict {
                            break;
                        }
                        continue;
                    }
                }
                // Only `Engine::forget` writes a forget record, with its redactions.
                RecordBody::Forget(_) | RecordBody::Redacted(_) => {
                    outcomes.push(Err(Error::Validation(
                        vec![ctxgraph_ontology::Violation::new(
                            "$.record_type",
                            Some(&serde_json::Value::String(record.kind().as_str().into())),
                            "forget.engine_only",
                            "a forget is written by `ctxgraph forget` (Engine::forget), which redacts what it names",
                        )]
                        .into(),
                    )));
                    if stop_on_conflict {
                        break;
                    }
                    continue;
                }
                RecordBody::Event(_)
                | RecordBody::Edge(_)
                | RecordBody::Schema(_)
                | RecordBody::Fact(_)
                | RecordBody::Document(_)
                | RecordBody::Access(_) => {}
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
            let read = self.store.begin_read()?;
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
        let mut report = ReprojectReport::default();
        loop {
            let mut w = self.store.begin_write()?;
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
        let mut w = self.store.begin_write()?;
        w.clear_graph()?;
        if include_archive {
            w.clear_archived()?;
        }
        w.commit()?;
        let report = self.catch_up(progress)?;
        let mut w = self.store.begin_write()?;
        crate::retention::reapply_archive(&self.schema, &mut w)?;
        w.commit()?;
        Ok(report)
    }

    /// Copy `entries` of another log (the scale-out backend's, read in position order) into
    /// this store's log at the same positions, ids, times and bodies, in one transaction; the
    /// log must end just before the first. The graph is not projected and the schema modules
    /// among them are not loaded: open the store again, then [`Engine::catch_up`].
    pub fn import_log(&mut self, entries: &[LogEntry]) -> Result<u64, Error> {
        let mut w = self.store.begin_write()?;
        let n = w.import(entries)?;
        w.commit()?;
        Ok(n)
    }

    /// Copy the write-ahead log into the main file (after bulk loads, to leave one file).
    pub fn checkpoint(&self) -> Result<(), Error> {
        Ok(self.store.checkpoint()?)
    }

    /// Rewrite the store file from its live content (SQLite's `VACUUM`) and truncate the
    /// write-ahead log, so [`Engine::size_on_disk`] measures what the store holds, not the pages
    /// freed by deletions. Costs a copy of the file.
    pub fn vacuum(&self) -> Result<(), Error> {
        Ok(self.store.vacuum()?)
    }

    /// Size of the store's write-ahead log file in bytes.
    pub fn wal_size(&self) -> u64 {
        self.store.wal_size()
    }

    /// Bound the page cache of this engine's connection to about `bytes` (a reader among many
    /// needs less than the default 256 MiB, which suits bulk loads).
    pub fn set_cache_bytes(&self, bytes: u64) -> Result<(), Error> {
        Ok(self.store.set_cache_bytes(bytes)?)
    }

    /// Bound how much of the store this engine's connection maps into memory (0: none); see
    /// [`Embedded::set_mmap_bytes`].
    pub fn set_mmap_bytes(&self, bytes: u64) -> Result<(), Error> {
        Ok(self.store.set_mmap_bytes(bytes)?)
    }

    /// The cache of index parts (vector index lists, lexical posting lists) this engine reads
    /// through, to share with other engines of the same store.
    pub fn index_caches(&self) -> IndexCaches {
        IndexCaches(Arc::clone(&self.caches))
    }

    /// Read the index parts through `caches` from now on, so that engines of one store (a
    /// server's readers) hold one copy of them instead of one each.
    pub fn set_index_caches(&mut self, caches: IndexCaches) {
        self.caches = caches.0;
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
            Box::new(self.store.begin_read()?),
            &self.schema,
            self.store.size_on_disk(),
            &self.caches,
        ))
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("store", &self.store)
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
