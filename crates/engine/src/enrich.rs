//! Stage 2, enrichment: keywords, importance, summary and embedding of every projected event,
//! behind its own durable checkpoint (`enriched_through`), plus the full-text index of event text
//! and entity names, and the full-text and vector entries of the facts, document sentences, slot
//! values, receipts and memories the records wrote (see `indexed`).
//!
//! Enrichment runs after ingestion has been acknowledged, in chunks: each chunk is embedded
//! outside the write transaction, then written with the checkpoint in one transaction, so a crash
//! loses at most the chunk in progress and the next run resumes from the checkpoint.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ctxgraph_embed::{Embedder, StaticEmbedder};
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_ontology::{EventRecord, RecordBody, RecordKind, Schema, entity_id};
use ctxgraph_projection::{Enrichment, enrich_event, mentions};
use ctxgraph_store::{Durability, EnrichWrite, GraphStore, LogEntry};
use serde_json::Value;

use crate::backend::Backend;
use crate::engine::{Engine, decode};
use crate::error::Error;
use crate::indexed;

/// Records enriched per transaction.
const ENRICH_CHUNK: usize = 2_000;

/// Which embedding model the engine uses.
#[derive(Clone, Default)]
pub enum EmbedderChoice {
    /// The built-in static model (loaded on first use).
    #[default]
    Builtin,
    /// Any other implementation.
    Custom(Arc<dyn Embedder>),
}

impl std::fmt::Debug for EmbedderChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EmbedderChoice::Builtin => f.write_str("Builtin"),
            EmbedderChoice::Custom(e) => write!(f, "Custom({})", e.model_id()),
        }
    }
}

impl EmbedderChoice {
    /// Model id and dimension, without loading the built-in model.
    pub fn model(&self) -> (String, usize) {
        match self {
            EmbedderChoice::Builtin => {
                (StaticEmbedder::BUILTIN_MODEL_ID.to_owned(), StaticEmbedder::BUILTIN_DIMENSION)
            }
            EmbedderChoice::Custom(e) => (e.model_id().to_owned(), e.dimension()),
        }
    }
}

/// What an enrichment run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnrichReport {
    /// Log records read.
    pub records: u64,
    /// Events enriched.
    pub events: u64,
    /// Facts, document sentences, slot values, receipts and memories indexed.
    pub nodes: u64,
    /// The stage-2 checkpoint now.
    pub position: u64,
}

impl Engine {
    /// Enrich every projected record not yet enriched, committing in chunks with the checkpoint.
    ///
    /// Deterministic for a given log and model, and idempotent: enriching again changes nothing.
    /// The work of a chunk (decoding, keywords, embedding) runs on a pool of threads, in
    /// sub-batches whose composition depends only on the chunk, while the writer commits the
    /// previous chunk; the thread count changes no result.
    pub fn enrich(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<EnrichReport, Error> {
        if let Backend::Remote(store) = &self.backend
            && !store.enriches()
        {
            return Err(Backend::unsupported_by("enrich", store.as_ref()));
        }
        let embedder = self.embedder()?;
        let schema = self.schema.clone();
        let mut report = EnrichReport::default();
        let start = self.backend.begin_read()?.enriched_through()?;
        report.position = start;
        let mut next = self.read_chunk(start)?;
        let mut ready: Option<Computed> = None;
        loop {
            if next.is_none() && ready.is_none() {
                return Ok(report);
            }
            // Compute the next chunk on the pool while this thread writes the one before it.
            let (computed, wrote) = std::thread::scope(|scope| {
                let worker = next
                    .take()
                    .map(|chunk| scope.spawn(|| compute(&schema, embedder.as_ref(), chunk)));
                let wrote = match ready.take() {
                    Some(done) => self.write_chunk(done, &mut report).map(Some),
                    None => Ok(None),
                };
                let computed = worker
                    .map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                    .transpose();
                (computed, wrote)
            });
            match wrote? {
                Some(Some((last, target))) => progress(last, target),
                Some(None) => {
                    // Another writer moved the checkpoint: start again from where it is now.
                    let from = self.backend.begin_read()?.enriched_through()?;
                    report.position = from;
                    next = self.read_chunk(from)?;
                    continue;
                }
                None => {}
            }
            ready = computed?;
            next = match &ready {
                Some(c) => self.read_chunk(c.last)?,
                None => None,
            };
        }
    }

    /// The log records after `from` (at most a chunk, up to the projection's checkpoint), with
    /// the texts of the facts, sentences, slot values, receipts and memories they wrote, as the
    /// graph reads now (a node several records touch, once); `None` when nothing is left.
    fn read_chunk(&self, from: u64) -> Result<Option<Chunk>, Error> {
        let read = self.backend.begin_read()?;
        let to = read.projected_through()?;
        if from >= to {
            return Ok(None);
        }
        let epoch = read.enrichment_epoch()?;
        let want = usize::try_from(to - from).unwrap_or(ENRICH_CHUNK).min(ENRICH_CHUNK);
        let entries = read.read_from(from + 1, want)?;
        let Some(last) = entries.last().map(|e| e.position) else { return Ok(None) };
        let mut knowledge: BTreeMap<NodeKey, String> = BTreeMap::new();
        for entry in entries.iter().filter(|e| indexed::indexes(e.kind)) {
            let record = decode(self.schema(), entry)?;
            knowledge.extend(indexed::texts_of(&*read, record.body())?);
        }
        Ok(Some(Chunk {
            from,
            epoch,
            last,
            target: to,
            entries,
            knowledge: knowledge.into_iter().collect(),
        }))
    }

    /// Write a computed chunk with the checkpoint in one transaction: `(last, target)` for the
    /// progress report, or `None` (nothing written) when the checkpoint is no longer where the
    /// chunk starts. On a remote store the transaction is held back and applied at once; a
    /// commit refused because the projection moved meanwhile is written again from fresh reads.
    fn write_chunk(
        &mut self,
        done: Computed,
        report: &mut EnrichReport,
    ) -> Result<Option<(u64, u64)>, Error> {
        let embedder = self.embedder()?;
        let schema = &self.schema;
        let written = match &mut self.backend {
            Backend::Embedded(store) => {
                // Derived from the log behind the `enriched_through` it moves: a commit lost
                // to a power failure is enriched again, so it is not waited for.
                let mut w = store.begin_write_as(Durability::Deferred)?;
                let written = write_into(&mut w, schema, embedder.as_ref(), &done)?;
                if written.is_some() {
                    w.commit()?;
                }
                written
            }
            Backend::Remote(store) => {
                let mut written = None;
                for _ in 0..REMOTE_ATTEMPTS {
                    let Some(mut tx) = store.begin_enrich()? else {
                        return Err(Backend::unsupported_by("enrich", store.as_ref()));
                    };
                    let Some(counts) = write_into(&mut *tx, schema, embedder.as_ref(), &done)?
                    else {
                        break;
                    };
                    if tx.commit()? {
                        written = Some(counts);
                        break;
                    }
                }
                written
            }
        };
        let Some((events, nodes)) = written else { return Ok(None) };
        report.events += events;
        report.nodes += nodes;
        report.records += done.records;
        report.position = done.last;
        Ok(Some((done.last, done.target)))
    }

    /// Drop every vector and index entry and enrich again with the configured model (after the
    /// model changed; open the store with `accept_new_embedder`).
    pub fn reembed(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<EnrichReport, Error> {
        if let Backend::Remote(store) = &self.backend {
            if !store.resets() || !store.enriches() {
                return Err(Backend::unsupported_by("reembed", store.as_ref()));
            }
            store.reset_enrichment()?;
            return self.enrich(progress);
        }
        let mut w = self.backend.embedded_mut("reembed")?.begin_write()?;
        w.clear_enrichment()?;
        w.commit()?;
        self.enrich(progress)
    }

    /// The `k` nodes `who` may see most similar in meaning to `text`: its embedding by the
    /// configured model, searched with [`crate::Reader::nearest`] and the engine's options.
    pub fn similar(
        &self,
        who: &crate::Principal,
        text: &str,
        k: usize,
    ) -> Result<Vec<(ctxgraph_ontology::graph::Node, f32)>, Error> {
        let query = self.embed_query(text)?;
        self.reader(who)?.nearest(&query, k, self.options().search)
    }

    /// The configured embedder, loaded once.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>, Error> {
        if let Some(e) = self.embedder.get() {
            return Ok(Arc::clone(e));
        }
        let e: Arc<dyn Embedder> = match &self.options().embedder {
            EmbedderChoice::Builtin => builtin()?,
            EmbedderChoice::Custom(e) => Arc::clone(e),
        };
        Ok(Arc::clone(self.embedder.get_or_init(|| e)))
    }
}

/// Commits of one chunk a remote store may refuse because its projection moved (a worker
/// folding new records meanwhile) before the chunk is read again from the checkpoint.
const REMOTE_ATTEMPTS: usize = 16;

/// A computed chunk's writes in `w` (node properties, vectors, then the full-text entries and
/// the checkpoint): `(events, other nodes)` written, or `None` (nothing written) when the
/// checkpoint is no longer where the chunk starts.
fn write_into<W: EnrichWrite + ?Sized>(
    w: &mut W,
    schema: &Schema,
    embedder: &dyn Embedder,
    done: &Computed,
) -> Result<Option<(u64, u64)>, Error> {
    // A reset between the chunk's read and now set the checkpoint back (perhaps to where the
    // chunk starts) and moved the epoch: the chunk's records may have been rewritten since.
    if w.enriched_through()? != done.from || w.enrichment_epoch()? != done.epoch {
        return Ok(None);
    }
    if w.embedding_model()?.is_none() {
        w.set_embedding_model(embedder.model_id(), embedder.dimension())?;
    }
    // The nodes read below, in a few reads where each read is a round trip (a no-op on a
    // store file, whose reads are local).
    w.prefetch(&mut done.events.iter().flat_map(|(event, _, _)| {
        std::iter::once(NodeKey::new("Event", &event.event_id))
            .chain(event.mentions.iter().map(|m| NodeKey::new("Entity", &m.entity_id)))
    }))?;
    // Full-text entries are written last: the full-text index flushes what it holds in
    // memory whenever another statement of the transaction starts, so interleaving them
    // with node and vector writes turned each event into a flush of its own.
    let mut texts: Vec<(NodeKey, String)> = Vec::new();
    let mut entities_indexed = BTreeSet::new();
    let mut events = 0;
    for (event, x, vector) in &done.events {
        let key = NodeKey::new("Event", &event.event_id);
        let Some(mut node) = w.node(&key)? else { continue };
        node.props.insert(
            "keywords".into(),
            Value::Array(x.keywords.iter().cloned().map(Value::String).collect()),
        );
        node.props.insert("summary".into(), x.summary.clone().into());
        node.props.insert("importance_score".into(), x.importance.into());
        let violations = schema.check_node(&node);
        if !violations.is_empty() {
            return Err(Error::Validation(violations.into()));
        }
        w.put_node_owned(node)?;
        w.put_vector(&key, vector)?;
        for m in &event.mentions {
            if !entities_indexed.insert(m.entity_id.as_str()) {
                continue;
            }
            let entity = NodeKey::new("Entity", &m.entity_id);
            if let Some(node) = w.node(&entity)? {
                let name = node.props.get("name").and_then(Value::as_str).unwrap_or(&m.name);
                let text = format!("{name} {}", m.entity_type);
                texts.push((entity, text));
            }
        }
        texts.push((key, x.text.clone()));
        events += 1;
    }
    let nodes = indexed::write(w, embedder, &done.knowledge, &done.knowledge_vectors)?;
    w.set_enriched_through(done.last)?;
    w.put_texts(&texts)?;
    Ok(Some((events, nodes)))
}

/// Log records read for enrichment, not yet computed.
struct Chunk {
    /// The stage-2 checkpoint the chunk continues.
    from: u64,
    /// [`ctxgraph_store::GraphReader::enrichment_epoch`] when it was read.
    epoch: u64,
    /// Position of its last record.
    last: u64,
    /// The projection's checkpoint when it was read (for progress).
    target: u64,
    entries: Vec<LogEntry>,
    knowledge: Vec<(NodeKey, String)>,
}

/// A chunk's enrichment, ready to be written.
struct Computed {
    from: u64,
    epoch: u64,
    last: u64,
    target: u64,
    records: u64,
    events: Vec<(Enriched, Enrichment, Vec<f32>)>,
    knowledge: Vec<(NodeKey, String)>,
    knowledge_vectors: Vec<Vec<f32>>,
}

/// What the writer needs of an enriched event: its id and the entities it mentions, not the
/// whole record (the pool builds these; the writer thread, the bottleneck, only drops them).
struct Enriched {
    event_id: String,
    mentions: Vec<Mentioned>,
}

/// One entity an event mentions, as the full-text index names it.
struct Mentioned {
    entity_id: String,
    name: String,
    entity_type: String,
}

impl Enriched {
    fn of(event: &EventRecord) -> Enriched {
        let mentions = mentions(event)
            .into_iter()
            .map(|m| Mentioned {
                entity_id: entity_id(m.entity_type, m.name),
                name: m.name.to_owned(),
                entity_type: m.entity_type.to_owned(),
            })
            .collect();
        Enriched { event_id: event.event_id.clone(), mentions }
    }
}

/// Records (or knowledge texts) per unit of pool work: one embedder call each, so a batch's
/// composition depends on the chunk alone, never on the thread count.
const SUB_BATCH: usize = 250;

/// One unit of pool work.
enum Task<'a> {
    Events(&'a [&'a LogEntry]),
    Knowledge(&'a [(NodeKey, String)]),
}

/// What one unit of pool work gives.
enum Done {
    Events(Vec<(Enriched, Enrichment, Vec<f32>)>),
    Knowledge(Vec<Vec<f32>>),
}

/// Decode, enrich and embed a chunk: its sub-batches are shared out to a pool of threads and
/// gathered in order.
fn compute(schema: &Schema, embedder: &dyn Embedder, chunk: Chunk) -> Result<Computed, Error> {
    let events: Vec<&LogEntry> =
        chunk.entries.iter().filter(|e| e.kind == RecordKind::Event).collect();
    let tasks: Vec<Task<'_>> = events
        .chunks(SUB_BATCH)
        .map(Task::Events)
        .chain(chunk.knowledge.chunks(SUB_BATCH).map(Task::Knowledge))
        .collect();
    let run = |task: &Task<'_>| -> Result<Done, Error> {
        match task {
            Task::Events(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for entry in *entries {
                    if let RecordBody::Event(event) = decode(schema, entry)?.body() {
                        out.push((Enriched::of(event), enrich_event(event)));
                    }
                }
                let texts: Vec<&str> = out.iter().map(|(_, x)| x.text.as_str()).collect();
                let vectors = embedder.embed(&texts)?;
                Ok(Done::Events(
                    out.into_iter().zip(vectors).map(|((e, x), v)| (e, x, v)).collect(),
                ))
            }
            Task::Knowledge(items) => {
                let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
                Ok(Done::Knowledge(embedder.embed(&texts)?))
            }
        }
    };
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    // Results in task order, so the first error in task order wins.
    let done = ctxgraph_ann::map_items(tasks.len(), threads, |i| run(&tasks[i]))
        .into_iter()
        .collect::<Result<Vec<_>, Error>>()?;
    let mut computed = Computed {
        from: chunk.from,
        epoch: chunk.epoch,
        last: chunk.last,
        target: chunk.target,
        records: chunk.entries.len() as u64,
        events: Vec::with_capacity(events.len()),
        knowledge_vectors: Vec::with_capacity(chunk.knowledge.len()),
        knowledge: Vec::new(),
    };
    for d in done {
        match d {
            Done::Events(e) => computed.events.extend(e),
            Done::Knowledge(v) => computed.knowledge_vectors.extend(v),
        }
    }
    computed.knowledge = chunk.knowledge;
    Ok(computed)
}

/// The built-in model, decoded once per process and shared by every engine (a server opens
/// one engine per connection; each decoding its own copy cost tens of megabytes apiece).
fn builtin() -> Result<Arc<dyn Embedder>, Error> {
    static BUILTIN: std::sync::OnceLock<Arc<StaticEmbedder>> = std::sync::OnceLock::new();
    if let Some(e) = BUILTIN.get() {
        return Ok(Arc::clone(e) as Arc<dyn Embedder>);
    }
    let e = Arc::new(StaticEmbedder::builtin()?);
    Ok(Arc::clone(BUILTIN.get_or_init(|| e)) as Arc<dyn Embedder>)
}
