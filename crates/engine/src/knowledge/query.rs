//! Reading facts and documents: what is true now or on a date, facts about an entity,
//! contradictions, documents with their sentences and mentions.
//!
//! A fact is **true at** time T when it is not retracted at T (`retracted_at` absent or after
//! T), and T lies in its validity (`valid_from` ≤ T < `valid_to`, a missing end unbounded).
//! "Now" is the engine's clock at the time of the read. Two true facts with one subject and one
//! single-valued predicate but different objects **contradict** each other; both are reported,
//! each with its confidence and sources.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Direction, Node, NodeKey};
use ctxgraph_ontology::sha256_hex;
use ctxgraph_store::GraphReader;
use serde_json::Value;

use crate::error::Error;
use crate::view::Snapshot;

/// Nodes read per page.
const PAGE: usize = 2_000;

/// Which facts to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactQuery {
    /// True at this time (normalised, see [`crate::parse_time`]); now when `None`.
    pub as_of: Option<String>,
    /// Only facts whose subject is this entity id.
    pub subject: Option<String>,
    /// Only facts with this predicate.
    pub predicate: Option<String>,
    /// Also facts not true at the time (retracted, expired, not yet valid).
    pub include_inactive: bool,
    /// Only facts claimed (asserted or asserted again) at or after this time (normalised, see
    /// [`crate::parse_time`]).
    pub since: Option<String>,
}

/// An entity end of a fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactEntity {
    /// Entity id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Entity type.
    pub entity_type: String,
}

/// One fact with everything that supports it.
#[derive(Debug, Clone, PartialEq)]
pub struct FactView {
    /// Fact id.
    pub fact_id: String,
    /// Subject.
    pub subject: FactEntity,
    /// Predicate.
    pub predicate: String,
    /// Entity object.
    pub object: Option<FactEntity>,
    /// Literal object.
    pub literal: Option<Value>,
    /// Slot-value object: (normalised slot label, value as written).
    pub object_slot: Option<(String, String)>,
    /// Type object: the type's id.
    pub object_type: Option<String>,
    /// Merged confidence (noisy-or of the claims).
    pub confidence: f64,
    /// The claims' confidences, sorted.
    pub claim_confidences: Vec<f64>,
    /// Number of claims.
    pub claims: u64,
    /// Sources, verbatim, sorted.
    pub sources: Vec<String>,
    /// Cited sentences: id, support and text.
    pub citations: Vec<(String, f64, String)>,
    /// Validity start.
    pub valid_from: Option<String>,
    /// Validity end (exclusive).
    pub valid_to: Option<String>,
    /// Retracted from this time on.
    pub retracted_at: Option<String>,
    /// Why.
    pub retraction_reason: Option<String>,
    /// First and last claim times.
    pub asserted: (String, String),
    /// Whether the fact is true at the query's time.
    pub active: bool,
    /// Facts true at the query's time that contradict this one (single-valued predicate, same
    /// subject, other object).
    pub contradicted_by: Vec<String>,
}

/// Facts that contradict each other.
#[derive(Debug, Clone, PartialEq)]
pub struct Contradiction {
    /// The shared subject.
    pub subject: FactEntity,
    /// The single-valued predicate.
    pub predicate: String,
    /// The competing facts, most confident first.
    pub facts: Vec<FactView>,
}

/// A document version, without its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentSummary {
    /// Document id.
    pub document_id: String,
    /// Source URL, verbatim.
    pub url: String,
    /// Version under the URL.
    pub version: u64,
    /// Title.
    pub title: Option<String>,
    /// `markdown` or `text`.
    pub format: String,
    /// SHA-256 of the text.
    pub content_hash: String,
    /// Sections and sentences.
    pub sections: u64,
    /// Sentences.
    pub sentences: u64,
    /// When it was ingested.
    pub ingested_at: String,
    /// The version it replaces.
    pub previous: Option<String>,
    /// The version that replaces it.
    pub next: Option<String>,
}

/// An entity a sentence mentions.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceMention {
    /// Entity id.
    pub entity_id: String,
    /// How it was matched.
    pub via: String,
    /// How sure.
    pub confidence: f64,
}

/// A sentence with its mentions.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceView {
    /// Sentence id (what a fact cites).
    pub sentence_id: String,
    /// Order in the document.
    pub order: u64,
    /// Text.
    pub text: String,
    /// Mentions.
    pub mentions: Vec<SentenceMention>,
}

/// A section with its paragraphs.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionView {
    /// Heading.
    pub title: Option<String>,
    /// Heading level (0: untitled).
    pub level: u64,
    /// Paragraphs, each its sentences.
    pub paragraphs: Vec<Vec<SentenceView>>,
}

/// A document version with its tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentView {
    /// The version.
    pub summary: DocumentSummary,
    /// Its sections.
    pub sections: Vec<SectionView>,
}

fn text(n: &Node, k: &str) -> Option<String> {
    n.props.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn num(n: &Node, k: &str) -> u64 {
    n.props.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// All nodes of a label, optionally from a key prefix.
fn nodes(graph: &dyn GraphReader, label: &str, prefix: &str) -> Result<Vec<Node>, Error> {
    let mut out = Vec::new();
    let mut after: Option<String> = (!prefix.is_empty()).then(|| prefix.to_owned());
    loop {
        let page = graph.nodes_by_label(label, after.as_deref(), PAGE)?;
        let Some(last) = page.last().map(|n| n.key.id.clone()) else { break };
        let done = page.iter().any(|n| !n.key.id.starts_with(prefix));
        out.extend(page.into_iter().filter(|n| n.key.id.starts_with(prefix)));
        if done {
            break;
        }
        after = Some(last);
    }
    Ok(out)
}

/// The latest version of the documents under `url`: its id and version.
pub(crate) fn latest_version(
    graph: &dyn GraphReader,
    url: &str,
) -> Result<Option<(String, u64)>, Error> {
    let prefix = format!("doc-{}-", &sha256_hex(url.as_bytes())[..12]);
    Ok(nodes(graph, "Document", &prefix)?
        .into_iter()
        .filter(|n| text(n, "url").as_deref() == Some(url))
        .map(|n| (n.key.id.clone(), num(&n, "version")))
        .max_by_key(|(_, v)| *v))
}

/// Whether the fact node is true at `t` (see the module docs).
fn true_at(n: &Node, t: &str) -> bool {
    let from_ok = text(n, "valid_from").is_none_or(|f| f.as_str() <= t);
    let to_ok = text(n, "valid_to").is_none_or(|e| t < e.as_str());
    let not_retracted = text(n, "retracted_at").is_none_or(|r| t < r.as_str());
    from_ok && to_ok && not_retracted
}

impl Snapshot<'_> {
    fn fact_entity(&self, id: &str) -> Result<FactEntity, Error> {
        let node = self.read.node(&NodeKey::new("Entity", id))?;
        Ok(FactEntity {
            id: id.to_owned(),
            name: node.as_ref().and_then(|n| text(n, "name")).unwrap_or_else(|| id.to_owned()),
            entity_type: node.as_ref().and_then(|n| text(n, "entity_type")).unwrap_or_default(),
        })
    }

    /// The Fact nodes whose subject (`SUBJECT`) or object (`OBJECT`) is the entity.
    fn fact_nodes_of(&self, entity_id: &str, edge_type: &str) -> Result<Vec<Node>, Error> {
        let key = NodeKey::new("Entity", entity_id);
        let mut out = Vec::new();
        for edge in self.read.edges_of(&key, Some(edge_type), Direction::In)? {
            if let Some(n) = self.read.node(&edge.key.from)? {
                out.push(n);
            }
        }
        Ok(out)
    }

    fn fact_view(&self, n: &Node, t: &str) -> Result<FactView, Error> {
        let list = |k: &str| n.props.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
        let subject = text(n, "subject").unwrap_or_default();
        let predicate = text(n, "predicate").unwrap_or_default();
        let active = true_at(n, t);
        let mut contradicted_by = Vec::new();
        let single = self.schema.predicate(&predicate).is_some_and(|p| p.single_valued);
        if single && active {
            for other in self.fact_nodes_of(&subject, "SUBJECT")? {
                if other.key.id != n.key.id
                    && text(&other, "predicate").as_deref() == Some(predicate.as_str())
                    && true_at(&other, t)
                {
                    contradicted_by.push(other.key.id.clone());
                }
            }
        }
        let mut citations = Vec::new();
        for edge in self.read.edges_of(&n.key, Some("HAS_SOURCE"), Direction::Out)? {
            let support = edge.props.get("support").and_then(Value::as_f64).unwrap_or(0.0);
            let sentence = self.read.node(&edge.key.to)?;
            let body = sentence.as_ref().and_then(|s| text(s, "text")).unwrap_or_default();
            citations.push((edge.key.to.id.clone(), support, body));
        }
        Ok(FactView {
            fact_id: n.key.id.clone(),
            subject: self.fact_entity(&subject)?,
            predicate,
            object: match text(n, "object") {
                Some(o) => Some(self.fact_entity(&o)?),
                None => None,
            },
            literal: text(n, "literal").and_then(|l| serde_json::from_str(&l).ok()),
            object_slot: text(n, "object_slot").zip(text(n, "object_value")),
            object_type: text(n, "object_type"),
            confidence: n.props.get("confidence").and_then(Value::as_f64).unwrap_or(0.0),
            claim_confidences: list("claim_confidences").iter().filter_map(Value::as_f64).collect(),
            claims: num(n, "claims"),
            sources: list("sources").iter().filter_map(Value::as_str).map(str::to_owned).collect(),
            citations,
            valid_from: text(n, "valid_from"),
            valid_to: text(n, "valid_to"),
            retracted_at: text(n, "retracted_at"),
            retraction_reason: text(n, "retraction_reason"),
            asserted: (
                text(n, "first_asserted_at").unwrap_or_default(),
                text(n, "last_asserted_at").unwrap_or_default(),
            ),
            active,
            contradicted_by,
        })
    }

    /// Facts per `query`, true at its time unless `include_inactive`; by subject, predicate, then
    /// fact id.
    pub(crate) fn facts(&self, query: &FactQuery) -> Result<Vec<FactView>, Error> {
        let t = query.as_of.clone().unwrap_or_else(super::now);
        let candidates = match &query.subject {
            Some(s) => self.fact_nodes_of(s, "SUBJECT")?,
            None => nodes(&*self.read, "Fact", "")?,
        };
        let mut out = Vec::new();
        for n in candidates {
            if query
                .predicate
                .as_deref()
                .is_some_and(|p| text(&n, "predicate").as_deref() != Some(p))
            {
                continue;
            }
            if !query.include_inactive && !true_at(&n, &t) {
                continue;
            }
            // Normalised times compare as strings.
            if let Some(since) = &query.since
                && text(&n, "last_asserted_at").is_none_or(|l| l.as_str() < since.as_str())
            {
                continue;
            }
            out.push(self.fact_view(&n, &t)?);
        }
        out.sort_by(|a, b| {
            (&a.subject.id, &a.predicate, &a.fact_id).cmp(&(
                &b.subject.id,
                &b.predicate,
                &b.fact_id,
            ))
        });
        Ok(out)
    }

    /// Every fact about an entity (as subject or object), true at `as_of` (now when `None`) or
    /// not (`active` tells).
    pub(crate) fn facts_about(
        &self,
        entity_id: &str,
        as_of: Option<&str>,
    ) -> Result<Vec<FactView>, Error> {
        let t = as_of.map_or_else(super::now, str::to_owned);
        let mut seen = BTreeMap::new();
        for edge_type in ["SUBJECT", "OBJECT"] {
            for n in self.fact_nodes_of(entity_id, edge_type)? {
                seen.entry(n.key.id.clone()).or_insert(n);
            }
        }
        let mut out = Vec::new();
        for n in seen.values() {
            out.push(self.fact_view(n, &t)?);
        }
        out.sort_by(|a, b| {
            (!a.active, &a.predicate, &a.fact_id).cmp(&(!b.active, &b.predicate, &b.fact_id))
        });
        Ok(out)
    }

    /// Contradictions true at `as_of` (now when `None`): groups of facts with one subject and one
    /// single-valued predicate but different objects, most confident first.
    pub(crate) fn contradictions(&self, as_of: Option<&str>) -> Result<Vec<Contradiction>, Error> {
        let query = FactQuery { as_of: as_of.map(str::to_owned), ..FactQuery::default() };
        let mut groups: BTreeMap<(String, String), Vec<FactView>> = BTreeMap::new();
        for f in self.facts(&query)? {
            if !f.contradicted_by.is_empty() {
                groups.entry((f.subject.id.clone(), f.predicate.clone())).or_default().push(f);
            }
        }
        let mut out = Vec::new();
        for ((_, predicate), mut facts) in groups {
            facts.sort_by(|a, b| {
                b.confidence.total_cmp(&a.confidence).then_with(|| a.fact_id.cmp(&b.fact_id))
            });
            let subject = facts[0].subject.clone();
            out.push(Contradiction { subject, predicate, facts });
        }
        Ok(out)
    }

    fn summary(&self, n: &Node) -> Result<DocumentSummary, Error> {
        let previous = self
            .read
            .edges_of(&n.key, Some("PREVIOUS_VERSION"), Direction::Out)?
            .into_iter()
            .next()
            .map(|e| e.key.to.id);
        let next = self
            .read
            .edges_of(&n.key, Some("PREVIOUS_VERSION"), Direction::In)?
            .into_iter()
            .next()
            .map(|e| e.key.from.id);
        Ok(DocumentSummary {
            document_id: n.key.id.clone(),
            url: text(n, "url").unwrap_or_default(),
            version: num(n, "version"),
            title: text(n, "title"),
            format: text(n, "format").unwrap_or_default(),
            content_hash: text(n, "content_hash").unwrap_or_default(),
            sections: num(n, "sections"),
            sentences: num(n, "sentences"),
            ingested_at: text(n, "ingested_at").unwrap_or_default(),
            previous,
            next,
        })
    }

    /// Every document version, by URL then version.
    pub(crate) fn documents(&self) -> Result<Vec<DocumentSummary>, Error> {
        let mut out = Vec::new();
        for n in nodes(&*self.read, "Document", "")? {
            out.push(self.summary(&n)?);
        }
        out.sort_by(|a, b| (&a.url, a.version).cmp(&(&b.url, b.version)));
        Ok(out)
    }

    /// A document version by id, or the latest version under a URL, with its tree.
    pub(crate) fn document(&self, id_or_url: &str) -> Result<Option<DocumentView>, Error> {
        let mut node = self.read.node(&NodeKey::new("Document", id_or_url))?;
        if node.is_none()
            && let Some((id, _)) = latest_version(&*self.read, id_or_url)?
        {
            node = self.read.node(&NodeKey::new("Document", &id))?;
        }
        let Some(node) = node else { return Ok(None) };
        let summary = self.summary(&node)?;
        let by_order = |mut v: Vec<Node>| {
            v.sort_by_key(|n| num(n, "order"));
            v
        };
        let children = |key: &NodeKey, edge: &str| -> Result<Vec<Node>, Error> {
            let mut out = Vec::new();
            for e in self.read.edges_of(key, Some(edge), Direction::Out)? {
                if let Some(n) = self.read.node(&e.key.to)? {
                    out.push(n);
                }
            }
            Ok(by_order(out))
        };
        let mut sections = Vec::new();
        for s in children(&node.key, "HAS_SECTION")? {
            let mut paragraphs = Vec::new();
            for p in children(&s.key, "HAS_PARAGRAPH")? {
                let mut sentences = Vec::new();
                for t in children(&p.key, "HAS_SENTENCE")? {
                    let mut mentions = Vec::new();
                    for e in self.read.edges_of(&t.key, Some("MENTIONS"), Direction::Out)? {
                        mentions.push(SentenceMention {
                            entity_id: e.key.to.id.clone(),
                            via: e
                                .props
                                .get("via")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                .to_owned(),
                            confidence: e
                                .props
                                .get("confidence")
                                .and_then(Value::as_f64)
                                .unwrap_or(0.0),
                        });
                    }
                    sentences.push(SentenceView {
                        sentence_id: t.key.id.clone(),
                        order: num(&t, "order"),
                        text: text(&t, "text").unwrap_or_default(),
                        mentions,
                    });
                }
                paragraphs.push(sentences);
            }
            sections.push(SectionView {
                title: text(&s, "title"),
                level: num(&s, "level"),
                paragraphs,
            });
        }
        Ok(Some(DocumentView { summary, sections }))
    }
}
