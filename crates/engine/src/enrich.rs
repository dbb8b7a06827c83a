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
use ctxgraph_ontology::{RecordBody, RecordKind, entity_id};
use ctxgraph_projection::{enrich_event, mentions};
use ctxgraph_store::{GraphReader, GraphStore, LogReader};
use serde_json::Value;

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
    pub fn enrich(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<EnrichReport, Error> {
        let embedder = self.embedder()?;
        let (model_id, dimension) = (embedder.model_id().to_owned(), embedder.dimension());
        let mut report = EnrichReport::default();
        loop {
            let (entries, target, knowledge) = {
                let read = self.store.begin_read()?;
                let (from, to) = (read.enriched_through()?, read.projected_through()?);
                report.position = from;
                if from >= to {
                    return Ok(report);
                }
                let want = usize::try_from(to - from).unwrap_or(ENRICH_CHUNK).min(ENRICH_CHUNK);
                let entries = read.read_from(from + 1, want)?;
                // Facts, sentences, slot values, receipts and memories of the chunk, with their
                // text as the graph reads now (a node several records touch, once).
                let mut knowledge: BTreeMap<NodeKey, String> = BTreeMap::new();
                for entry in entries.iter().filter(|e| indexed::indexes(e.kind)) {
                    let record = decode(self.schema(), entry)?;
                    knowledge.extend(indexed::texts_of(&read, record.body())?);
                }
                (entries, to, knowledge.into_iter().collect::<Vec<_>>())
            };
            let Some(last) = entries.last().map(|e| e.position) else { return Ok(report) };
            let mut events = Vec::new();
            for entry in entries.iter().filter(|e| e.kind == RecordKind::Event) {
                let record = decode(self.schema(), entry)?;
                if let RecordBody::Event(event) = record.body() {
                    let enrichment = enrich_event(event);
                    events.push((event.clone(), enrichment));
                }
            }
            let texts: Vec<&str> = events
                .iter()
                .map(|(_, x)| x.text.as_str())
                .chain(knowledge.iter().map(|(_, t)| t.as_str()))
                .collect();
            let mut vectors = embedder.embed(&texts)?;
            let knowledge_vectors = vectors.split_off(events.len().min(vectors.len()));
            let mut w = self.store.begin_write()?;
            if w.embedding_model()?.is_none() {
                w.set_embedding_model(&model_id, dimension)?;
            }
            let mut entities_indexed = BTreeSet::new();
            for ((event, x), vector) in events.iter().zip(vectors) {
                let key = NodeKey::new("Event", &event.event_id);
                let Some(mut node) = w.node(&key)? else { continue };
                node.props.insert(
                    "keywords".into(),
                    Value::Array(x.keywords.iter().cloned().map(Value::String).collect()),
                );
                node.props.insert("summary".into(), x.summary.clone().into());
                node.props.insert("importance_score".into(), x.importance.into());
                let violations = self.schema.check_node(&node);
                if !violations.is_empty() {
                    return Err(Error::Validation(violations.into()));
                }
                w.put_node(&node)?;
                w.put_vector(&key, &vector)?;
                w.put_text(&key, &x.text)?;
                for m in mentions(event) {
                    let entity = NodeKey::new("Entity", entity_id(m.entity_type, m.name));
                    if !entities_indexed.insert(entity.id.clone()) {
                        continue;
                    }
                    if let Some(node) = w.node(&entity)? {
                        let name = node.props.get("name").and_then(Value::as_str).unwrap_or(m.name);
                        let text = format!("{name} {}", m.entity_type);
                        w.put_text(&entity, &text)?;
                    }
                }
                report.events += 1;
            }
            report.nodes +=
                indexed::write(&mut w, embedder.as_ref(), &knowledge, &knowledge_vectors)?;
            w.set_enriched_through(last)?;
            w.commit()?;
            report.records += entries.len() as u64;
            report.position = last;
            progress(last, target);
        }
    }

    /// Drop every vector and index entry and enrich again with the configured model (after the
    /// model changed; open the store with `accept_new_embedder`).
    pub fn reembed(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<EnrichReport, Error> {
        let mut w = self.store.begin_write()?;
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
