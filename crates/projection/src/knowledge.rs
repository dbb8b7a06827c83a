//! Projection of facts, fact retractions and documents (the knowledge module).
//!
//! # Facts: the write-back policy of seed 001
//! Every claim of one (subject, predicate, object) folds into one `Fact` node; nothing is
//! overwritten:
//! - **confidence** is the noisy-or of the claims' confidences, `1 − ∏(1 − cᵢ)`: independent
//!   sources each make the fact more likely, one claim of 1.0 makes it certain, and claims of 0
//!   change nothing. The claims' confidences are kept sorted (`claim_confidences`) and the product
//!   is taken in that order, so the value is bit-identical whatever order the claims arrive in;
//! - **sources** accumulate as a sorted set; `claims` counts the claims;
//! - **global_position** is the log position of the latest claim (the record provenance reads);
//! - **validity** is the hull of the claims' windows: the earliest `valid_from` and the latest
//!   `valid_to`, a claim without one making that end unbounded;
//! - a cited sentence gets a `HAS_SOURCE` edge whose `support` is the highest confidence of the
//!   claims citing it.
//!
//! A different object under a single-valued predicate is a different fact: both stay, each with
//! its own confidence and sources, and reads report them as a contradiction.
//!
//! A retraction sets `retracted_at` to the earliest retraction time (its reason with it), so the
//! fact is not true from then on; later claims still accumulate.
//!
//! # Documents
//! A document record becomes its `Document` node and the tree of [`split_document`]: `Section`,
//! `Paragraph` and `Sentence` nodes with `order` counted per document and label, linked by
//! `HAS_SECTION`, `HAS_PARAGRAPH` and `HAS_SENTENCE`; its mentions become `MENTIONS` edges (the
//! highest confidence per sentence and entity) and its `previous` a `PREVIOUS_VERSION` edge.
//!
//! Entities a fact or a document names that are not in the graph yet are created from the
//! resolved id and name (no `mention_count`: no event mentioned them).

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_ontology::{
    DocumentRecord, FactObject, FactRecord, FactRetractionRecord, ResolvedEntity, part_id,
    split_document,
};
use serde_json::Value;

use crate::{ProjectionError, Writer};

/// Create the entity unless it exists; its key either way.
fn ensure_entity(
    w: &mut Writer<'_>,
    e: &ResolvedEntity,
    at: &str,
) -> Result<NodeKey, ProjectionError> {
    let key = NodeKey::new("Entity", &e.id);
    if w.graph().node_exists(&key)? {
        return Ok(key);
    }
    let entity_type = w.schema().entity_type_of(&e.id).unwrap_or_default().to_owned();
    let mut p = Properties::new();
    p.insert("entity_id".into(), e.id.clone().into());
    p.insert("name".into(), e.name.clone().into());
    p.insert("entity_type".into(), entity_type.into());
    p.insert("first_seen".into(), at.into());
    p.insert("last_seen".into(), at.into());
    w.put_node(&Node { key: key.clone(), props: p }, true)?;
    Ok(key)
}

fn text<'a>(p: &'a Properties, name: &str) -> Option<&'a str> {
    p.get(name).and_then(Value::as_str)
}

/// `1 − ∏(1 − c)` over `sorted`, in the order given.
pub fn noisy_or(sorted: &[f64]) -> f64 {
    let disbelief = sorted.iter().fold(1.0, |acc, c| acc * (1.0 - c));
    (1.0 - disbelief).clamp(0.0, 1.0)
}

pub(crate) fn project_fact(
    w: &mut Writer<'_>,
    position: u64,
    f: &FactRecord,
) -> Result<(), ProjectionError> {
    let at = f.asserted_at.as_str();
    let subject = ensure_entity(w, &f.subject, at)?;
    // The OBJECT edge's far end, and whether it exists already (a Type is declared before the
    // engine accepts the fact; in an order it refuses, the edge waits for it).
    let object = match &f.object {
        FactObject::Entity(e) => Some((ensure_entity(w, e, at)?, e.via.clone(), true)),
        FactObject::Literal(_) => None,
        FactObject::SlotValue { slot, value } => {
            Some((crate::slots::slot_value_node(w, slot, value)?, "id".to_owned(), true))
        }
        FactObject::Type(t) => {
            let key = NodeKey::new("Type", t);
            let known = w.graph().node_exists(&key)?;
            Some((key, "id".to_owned(), known))
        }
    };
    let key = NodeKey::new("Fact", &f.fact_id);
    let existing = w.graph().node(&key)?;
    let new = existing.is_none();
    let props = match existing {
        None => {
            let mut p = Properties::new();
            p.insert("fact_id".into(), f.fact_id.clone().into());
            p.insert("subject".into(), f.subject.id.clone().into());
            p.insert("predicate".into(), f.predicate.clone().into());
            match &f.object {
                FactObject::Entity(e) => p.insert("object".into(), e.id.clone().into()),
                FactObject::Literal(v) => p.insert("literal".into(), v.to_string().into()),
                FactObject::SlotValue { slot, value } => {
                    p.insert("object_slot".into(), slot.clone().into());
                    p.insert("object_value".into(), value.clone().into())
                }
                FactObject::Type(t) => p.insert("object_type".into(), t.clone().into()),
            };
            p.insert("confidence".into(), noisy_or(&[f.confidence]).into());
            p.insert("claim_confidences".into(), vec![f.confidence].into());
            p.insert("claims".into(), 1.into());
            p.insert("sources".into(), f.source.iter().cloned().collect::<Vec<_>>().into());
            for (name, v) in [("valid_from", &f.valid_from), ("valid_to", &f.valid_to)] {
                if let Some(v) = v {
                    p.insert(name.into(), v.clone().into());
                }
            }
            p.insert("first_asserted_at".into(), at.into());
            p.insert("last_asserted_at".into(), at.into());
            p.insert("global_position".into(), position.into());
            p
        }
        Some(node) => merge_claim(node.props, position, f),
    };
    w.put_node(&Node { key: key.clone(), props }, new)?;
    if new {
        let mut p = Properties::new();
        p.insert("via".into(), f.subject.via.clone().into());
        let k = w.schema().edge_key("SUBJECT", key.clone(), subject, &p);
        w.edge_with_known_ends(Edge { key: k, props: p }, [true, true])?;
        if let Some((object, via, known)) = object {
            let mut p = Properties::new();
            p.insert("via".into(), via.into());
            let k = w.schema().edge_key("OBJECT", key.clone(), object, &p);
            w.edge_with_known_ends(Edge { key: k, props: p }, [true, known])?;
        }
    }
    if let Some(sentence) = &f.cites {
        let to = NodeKey::new("Sentence", sentence);
        let mut p = Properties::new();
        p.insert("support".into(), f.confidence.into());
        let k = w.schema().edge_key("HAS_SOURCE", key, to, &p);
        let support = w
            .graph()
            .edge(&k)?
            .and_then(|e| e.props.get("support").and_then(Value::as_f64))
            .map_or(f.confidence, |s| s.max(f.confidence));
        p.insert("support".into(), support.into());
        w.edge_with_known_ends(Edge { key: k, props: p }, [true, false])?;
    }
    Ok(())
}

/// Fold one more claim, at log `position`, into a fact's properties (see the module docs).
fn merge_claim(mut p: Properties, position: u64, f: &FactRecord) -> Properties {
    let mut confidences: Vec<f64> = p
        .get("claim_confidences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default();
    confidences.push(f.confidence);
    confidences.sort_by(f64::total_cmp);
    p.insert("confidence".into(), noisy_or(&confidences).into());
    p.insert("claim_confidences".into(), confidences.into());
    let claims = p.get("claims").and_then(Value::as_i64).unwrap_or(0);
    p.insert("claims".into(), (claims + 1).into());
    let mut sources: Vec<String> = p
        .get("sources")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    if let Some(s) = &f.source
        && let Err(i) = sources.binary_search(s)
    {
        sources.insert(i, s.clone());
    }
    p.insert("sources".into(), sources.into());
    // Absent means unbounded: the hull stays unbounded once any claim is.
    let from =
        text(&p, "valid_from").zip(f.valid_from.as_deref()).map(|(a, b)| a.min(b).to_owned());
    let to = text(&p, "valid_to").zip(f.valid_to.as_deref()).map(|(a, b)| a.max(b).to_owned());
    for (name, v) in [("valid_from", from), ("valid_to", to)] {
        match v {
            Some(v) => p.insert(name.into(), v.into()),
            None => p.remove(name),
        };
    }
    let at = f.asserted_at.as_str();
    if text(&p, "first_asserted_at").is_none_or(|first| at < first) {
        p.insert("first_asserted_at".into(), at.into());
    }
    if text(&p, "last_asserted_at").is_none_or(|last| at > last) {
        p.insert("last_asserted_at".into(), at.into());
    }
    // Like an event's, the one value that is the arrival order itself.
    let latest = p.get("global_position").and_then(Value::as_u64).unwrap_or(0);
    p.insert("global_position".into(), latest.max(position).into());
    p
}

pub(crate) fn project_retraction(
    w: &mut Writer<'_>,
    r: &FactRetractionRecord,
) -> Result<(), ProjectionError> {
    let key = NodeKey::new("Fact", &r.fact_id);
    // The engine refuses a retraction of an unknown fact before it reaches the log.
    let Some(mut node) = w.graph().node(&key)? else { return Ok(()) };
    let this = (r.retracted_at.as_str(), r.reason.as_deref().unwrap_or(""));
    let current = text(&node.props, "retracted_at")
        .map(|at| (at, text(&node.props, "retraction_reason").unwrap_or("")));
    if current.is_none_or(|c| this < c) {
        node.props.insert("retracted_at".into(), r.retracted_at.clone().into());
        match &r.reason {
            Some(reason) => node.props.insert("retraction_reason".into(), reason.clone().into()),
            None => node.props.remove("retraction_reason"),
        };
        w.put_node(&node, false)?;
    }
    Ok(())
}

fn part(
    w: &mut Writer<'_>,
    label: &str,
    key_name: &str,
    id: String,
    document_id: &str,
    order: usize,
    extra: Properties,
) -> Result<NodeKey, ProjectionError> {
    let key = NodeKey::new(label, &id);
    let mut p = extra;
    p.insert(key_name.into(), id.into());
    p.insert("document_id".into(), document_id.into());
    p.insert("order".into(), order.into());
    let new = !w.graph().node_exists(&key)?;
    w.put_node(&Node { key: key.clone(), props: p }, new)?;
    Ok(key)
}

fn contains(
    w: &mut Writer<'_>,
    edge_type: &str,
    from: &NodeKey,
    to: &NodeKey,
) -> Result<(), ProjectionError> {
    let props = Properties::new();
    let key = w.schema().edge_key(edge_type, from.clone(), to.clone(), &props);
    w.edge_with_known_ends(Edge { key, props }, [true, true])
}

pub(crate) fn project_document(
    w: &mut Writer<'_>,
    d: &DocumentRecord,
) -> Result<(), ProjectionError> {
    let tree = split_document(d.format, &d.text);
    let id = d.document_id.as_str();
    let doc_key = NodeKey::new("Document", id);
    let mut p = Properties::new();
    p.insert("document_id".into(), id.into());
    p.insert("url".into(), d.url.clone().into());
    p.insert("format".into(), d.format.as_str().into());
    p.insert("content_hash".into(), d.content_hash.clone().into());
    p.insert("version".into(), d.version.into());
    if let Some(title) = d.title.as_ref().or(tree.title.as_ref()) {
        p.insert("title".into(), title.clone().into());
    }
    p.insert("ingested_at".into(), d.ingested_at.clone().into());
    p.insert("bytes".into(), d.text.len().into());
    p.insert("sections".into(), tree.sections.len().into());
    p.insert("sentences".into(), tree.sentence_count().into());
    let new = !w.graph().node_exists(&doc_key)?;
    w.put_node(&Node { key: doc_key.clone(), props: p }, new)?;

    let mut sentence_keys = Vec::with_capacity(tree.sentence_count());
    let (mut paragraph_order, mut sentence_order) = (0, 0);
    for (s, section) in tree.sections.iter().enumerate() {
        let mut extra = Properties::new();
        if let Some(title) = &section.title {
            extra.insert("title".into(), title.clone().into());
        }
        extra.insert("level".into(), section.level.into());
        let s_key = part(w, "Section", "section_id", part_id(id, 's', s), id, s, extra)?;
        contains(w, "HAS_SECTION", &doc_key, &s_key)?;
        for paragraph in &section.paragraphs {
            let p_id = part_id(id, 'p', paragraph_order);
            let p_key =
                part(w, "Paragraph", "paragraph_id", p_id, id, paragraph_order, Properties::new())?;
            contains(w, "HAS_PARAGRAPH", &s_key, &p_key)?;
            paragraph_order += 1;
            for sentence in paragraph {
                let mut extra = Properties::new();
                extra.insert("text".into(), sentence.clone().into());
                let t_id = part_id(id, 't', sentence_order);
                let t_key = part(w, "Sentence", "sentence_id", t_id, id, sentence_order, extra)?;
                contains(w, "HAS_SENTENCE", &p_key, &t_key)?;
                sentence_keys.push(t_key);
                sentence_order += 1;
            }
        }
    }

    // The highest confidence per (sentence, entity); the first matching `via` among equals.
    let mut best: BTreeMap<(usize, &str), (f64, &ResolvedEntity)> = BTreeMap::new();
    for m in &d.mentions {
        let slot =
            best.entry((m.sentence, m.entity.id.as_str())).or_insert((m.confidence, &m.entity));
        if m.confidence > slot.0 {
            *slot = (m.confidence, &m.entity);
        }
    }
    for ((sentence, _), (confidence, entity)) in best {
        let Some(from) = sentence_keys.get(sentence).cloned() else { continue };
        let to = ensure_entity(w, entity, &d.ingested_at)?;
        let mut p = Properties::new();
        p.insert("confidence".into(), confidence.into());
        p.insert("via".into(), entity.via.clone().into());
        let key = w.schema().edge_key("MENTIONS", from, to, &p);
        w.edge_with_known_ends(Edge { key, props: p }, [true, true])?;
    }
    if let Some(previous) = &d.previous {
        let props = Properties::new();
        let key = w.schema().edge_key(
            "PREVIOUS_VERSION",
            doc_key,
            NodeKey::new("Document", previous),
            &props,
        );
        w.edge_with_known_ends(Edge { key, props }, [true, false])?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::noisy_or;

    #[test]
    fn noisy_or_rises_with_each_claim_and_stays_in_range() {
        assert_eq!(noisy_or(&[0.5]), 0.5);
        assert!((noisy_or(&[0.5, 0.5]) - 0.75).abs() < 1e-12);
        assert_eq!(noisy_or(&[0.3, 1.0]), 1.0);
        assert_eq!(noisy_or(&[0.0, 0.0]), 0.0);
        assert_eq!(noisy_or(&[]), 0.0);
    }
}
