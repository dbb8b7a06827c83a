//! What ctxgraph knows beyond events, in the full-text and vector indexes: facts, document
//! sentences, slot values, decision receipts and memories, each with the text it is found by.
//!
//! The text of a fact, sentence or slot value is read from the graph (the node and, for a slot
//! value, the entities holding it), so indexing a record's nodes after it was projected gives
//! the same text whether the graph was built incrementally or by `reproject`; a receipt's text is
//! its record's ([`ReceiptRecord::text`]), a memory's its view's ([`MemoryView::text`]).
//!
//! Three paths write these entries, as for events and memories: the engine's write calls index
//! what they wrote right after the commit ([`crate::Engine::index_records`]), stage 2 indexes
//! the nodes of every record it enriches (so `reproject` followed by enrichment, and any bulk
//! `ingest`, restores them), and `consolidate` indexes every such node still without a vector
//! ([`index_missing`]: stores written before these nodes were indexed) before it builds the
//! vector index.

use std::collections::BTreeMap;

use ctxgraph_embed::Embedder;
use ctxgraph_ontology::graph::{Direction, Node, NodeKey};
use ctxgraph_ontology::{RecordBody, RecordKind, Schema, SlotsRecord, part_id};
use ctxgraph_projection::{RECEIPT, slot_value_id};
use ctxgraph_store::{EnrichWrite, GraphReader, GraphStore, LogReader};
use serde_json::Value;

use crate::consolidate::Stage3Write;
use crate::engine::{Engine, decode};
use crate::error::Error;
use crate::memory::MemoryView;

/// Labels whose nodes [`index_missing`] completes (memories are indexed by their own rebuild,
/// `link_memories`, which `consolidate` runs first).
const LABELS: [&str; 4] = ["Fact", "Sentence", "SlotValue", RECEIPT];

/// Most holders a slot value's text names (the first by entity id): a value shared by thousands
/// of entities is found by its slot and value, not by a list of every holder.
const MAX_HOLDERS: usize = 16;

/// Nodes read per page by [`index_missing`].
const PAGE: usize = 1_000;

/// The display name of an entity id (`{type}:{normalised name}`): its name part.
fn entity_name(id: &str) -> &str {
    id.split_once(':').map_or(id, |(_, name)| name)
}

fn prop<'a>(node: &'a Node, name: &str) -> Option<&'a str> {
    node.props.get(name).and_then(Value::as_str)
}

/// A fact's object in words: the entity's name, the slot and value, the type, or the literal
/// (stored as JSON text) unquoted.
pub fn fact_object(node: &Node) -> Option<String> {
    if let Some(object) = prop(node, "object") {
        return Some(entity_name(object).to_owned());
    }
    if let (Some(slot), Some(value)) = (prop(node, "object_slot"), prop(node, "object_value")) {
        return Some(format!("{} {value}", slot.replace('_', " ")));
    }
    if let Some(t) = prop(node, "object_type") {
        return Some(t.to_owned());
    }
    let literal = prop(node, "literal")?;
    Some(match serde_json::from_str::<Value>(literal) {
        Ok(Value::String(s)) => s,
        Ok(v) => v.to_string(),
        Err(_) => literal.to_owned(),
    })
}

/// A fact as words: `neurodock depends on redis`.
pub fn fact_text(node: &Node) -> Option<String> {
    let subject = entity_name(prop(node, "subject")?);
    let predicate = prop(node, "predicate")?.replace('_', " ");
    Some(format!("{subject} {predicate} {}", fact_object(node)?))
}

/// The entities holding a slot value (ids, sorted, at most [`MAX_HOLDERS`]).
pub(crate) fn slot_holders(read: &dyn GraphReader, key: &NodeKey) -> Result<Vec<String>, Error> {
    let mut ids: Vec<String> = read
        .edges_of(key, Some("HAS_SLOT"), Direction::In)?
        .into_iter()
        .map(|e| e.key.from.id)
        .collect();
    ids.sort();
    ids.dedup();
    ids.truncate(MAX_HOLDERS);
    Ok(ids)
}

/// A slot value as words: its holders' names, the slot and the value (`neurodock region eu-west-1`).
fn slot_text(read: &dyn GraphReader, node: &Node) -> Result<Option<String>, Error> {
    let (Some(slot), Some(value)) = (prop(node, "slot"), prop(node, "value")) else {
        return Ok(None);
    };
    let holders = slot_holders(read, &node.key)?;
    let mut words: Vec<&str> = holders.iter().map(|h| entity_name(h)).collect();
    let slot = slot.replace('_', " ");
    words.push(&slot);
    words.push(value);
    Ok(Some(words.join(" ")))
}

/// The indexed text of a fact, sentence, slot value or memory node, read from the graph;
/// `None` for other labels (a receipt's text is its record's).
fn graph_text(read: &dyn GraphReader, node: &Node) -> Result<Option<String>, Error> {
    Ok(match node.key.label.as_str() {
        "Fact" => fact_text(node),
        "Sentence" => prop(node, "text").map(str::to_owned),
        "SlotValue" => slot_text(read, node)?,
        "Memory" => MemoryView::from_node(node).map(|m| m.text()),
        _ => None,
    })
}

/// Whether records of `kind` write nodes indexed here.
pub(crate) fn indexes(kind: RecordKind) -> bool {
    matches!(
        kind,
        RecordKind::Fact
            | RecordKind::Document
            | RecordKind::Slot
            | RecordKind::Receipt
            | RecordKind::Memory
    )
}

/// The indexed nodes a record wrote, with their text, read from `read` after the record was
/// projected. Events are stage 2's own (`enrich_event`); other records write none.
pub(crate) fn texts_of(
    read: &dyn GraphReader,
    record: &RecordBody,
) -> Result<Vec<(NodeKey, String)>, Error> {
    let keys: Vec<NodeKey> = match record {
        RecordBody::Receipt(r) => {
            let key = NodeKey::new(RECEIPT, &r.receipt_id);
            return Ok(if read.node_exists(&key)? { vec![(key, r.text())] } else { Vec::new() });
        }
        RecordBody::Fact(f) => vec![NodeKey::new("Fact", &f.fact_id)],
        RecordBody::Slots(SlotsRecord::Slot(s)) => {
            vec![NodeKey::new("SlotValue", slot_value_id(&s.slot, &s.value_key()))]
        }
        RecordBody::Memory(m) => vec![NodeKey::new("Memory", &m.memory_id)],
        RecordBody::Document(d) => {
            let doc = read.node(&NodeKey::new("Document", &d.document_id))?;
            let count = doc
                .as_ref()
                .and_then(|n| n.props.get("sentences"))
                .and_then(Value::as_u64)
                .unwrap_or(0);
            (0..count)
                .map(|i| NodeKey::new("Sentence", part_id(&d.document_id, 't', i as usize)))
                .collect()
        }
        RecordBody::Event(_)
        | RecordBody::Edge(_)
        | RecordBody::Schema(_)
        | RecordBody::EntityDecision(_)
        | RecordBody::MemoryOutcome(_)
        | RecordBody::MemoryLink(_)
        | RecordBody::MemoryLinkVote(_)
        | RecordBody::Slots(_)
        | RecordBody::FactRetraction(_)
        | RecordBody::Forget(_)
        | RecordBody::Redacted(_)
        | RecordBody::Access(_) => return Ok(Vec::new()),
    };
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        // Gone since (forgotten, archived): nothing to index.
        let Some(node) = read.node(&key)? else { continue };
        if let Some(text) = graph_text(read, &node)? {
            out.push((key, text));
        }
    }
    Ok(out)
}

/// Embed `items` and write their vectors and full-text entries; how many. The first vectors of
/// a store record the embedding model, as stage 2 does.
pub(crate) fn put<W: GraphStore + ?Sized>(
    w: &mut W,
    embedder: &dyn Embedder,
    items: &[(NodeKey, String)],
) -> Result<u64, Error> {
    if items.is_empty() {
        return Ok(0);
    }
    let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
    let vectors = embedder.embed(&texts)?;
    write(w, embedder, items, &vectors)
}

/// Write embedded `items` (vectors in the same order).
pub(crate) fn write<W: EnrichWrite + ?Sized>(
    w: &mut W,
    embedder: &dyn Embedder,
    items: &[(NodeKey, String)],
    vectors: &[Vec<f32>],
) -> Result<u64, Error> {
    if items.is_empty() {
        return Ok(0);
    }
    if w.embedding_model()?.is_none() {
        w.set_embedding_model(embedder.model_id(), embedder.dimension())?;
    }
    // Every vector before any full-text entry: the full-text index flushes what it holds in
    // memory whenever another statement starts, so alternating them flushed once per item.
    let items = &items[..items.len().min(vectors.len())];
    for ((key, _), vector) in items.iter().zip(vectors) {
        w.put_vector(key, vector)?;
    }
    w.put_texts(items)?;
    Ok(items.len() as u64)
}

/// The text a fact, sentence, slot value or receipt node is indexed with (a receipt's from its
/// record, `None` once the record is a tombstone); `None` for other labels. Forgetting reads it
/// to take the node's terms out of the lexical index.
pub(crate) fn indexed_text(
    schema: &Schema,
    graph: &dyn GraphReader,
    log: &dyn LogReader,
    node: &Node,
) -> Result<Option<String>, Error> {
    if node.key.label != RECEIPT {
        return graph_text(graph, node);
    }
    let Some(entry) = log.get(RecordKind::Receipt, &node.key.id)? else { return Ok(None) };
    let record = decode(schema, &entry)?;
    Ok(if let RecordBody::Receipt(r) = record.body() { Some(r.text()) } else { None })
}

/// Index every fact, sentence, slot value and receipt that has no vector; how many.
pub(crate) fn index_missing<W: Stage3Write + ?Sized>(
    w: &mut W,
    schema: &Schema,
    embedder: &dyn Embedder,
) -> Result<u64, Error> {
    let mut todo = Vec::new();
    for label in LABELS {
        let mut after: Option<String> = None;
        loop {
            let page = w.nodes_by_label(label, after.as_deref(), PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.key.id.clone());
            for node in page {
                if w.vector(&node.key)?.is_some() {
                    continue;
                }
                if let Some(text) = indexed_text(schema, w.graph(), w.log(), &node)? {
                    todo.push((node.key, text));
                }
            }
        }
    }
    put(w, embedder, &todo)
}

impl Engine {
    /// Index the facts, sentences, slot values, receipts and memories that `records` (already
    /// appended and projected) wrote, in one transaction; how many nodes. The write calls
    /// (`record_fact`, `add_document`, `set_slot`, `add_receipts`) run it after their commit, so
    /// `search` and `recall` find what they wrote at once; stage 2 indexes the same nodes again
    /// when it reaches the records, with the same text. On a remote store it is refused
    /// (`db.backend_unsupported`): the write calls skip it there, and stage 2 indexes.
    pub fn index_records(&mut self, records: &[&RecordBody]) -> Result<u64, Error> {
        let mut items: BTreeMap<NodeKey, String> = BTreeMap::new();
        {
            let read = self.backend.begin_read()?;
            for record in records {
                items.extend(texts_of(&*read, record)?);
            }
        }
        if items.is_empty() {
            return Ok(0);
        }
        let items: Vec<(NodeKey, String)> = items.into_iter().collect();
        let embedder = self.embedder()?;
        let texts: Vec<&str> = items.iter().map(|(_, t)| t.as_str()).collect();
        // Embedded outside the write transaction, as stage 2 does.
        let vectors = embedder.embed(&texts)?;
        let mut w = self.backend.embedded_mut("indexing records")?.begin_write()?;
        let n = write(&mut w, embedder.as_ref(), &items, &vectors)?;
        w.commit()?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::graph::Properties;
    use serde_json::json;

    fn node(label: &str, props: Value) -> Node {
        let props: Properties = serde_json::from_value(props).unwrap_or_default();
        Node { key: NodeKey::new(label, "x"), props }
    }

    #[test]
    fn a_fact_reads_as_subject_predicate_object() {
        let f = node(
            "Fact",
            json!({"subject": "service:neurodock", "predicate": "depends_on", "object": "service:redis"}),
        );
        assert_eq!(fact_text(&f).as_deref(), Some("neurodock depends on redis"));
        let lit = node(
            "Fact",
            json!({"subject": "service:neurodock", "predicate": "owned_by", "literal": "\"platform team\""}),
        );
        assert_eq!(fact_text(&lit).as_deref(), Some("neurodock owned by platform team"));
        let number = node(
            "Fact",
            json!({"subject": "service:neurodock", "predicate": "replicas", "literal": "3"}),
        );
        assert_eq!(fact_text(&number).as_deref(), Some("neurodock replicas 3"));
        assert_eq!(fact_text(&node("Fact", json!({"predicate": "p"}))), None);
    }
}
