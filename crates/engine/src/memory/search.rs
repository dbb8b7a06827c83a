//! Contextual search over memories with seed 003's connected-memory boost, and the context of a
//! question such as "Why did we abandon JWT?": the best matching decision's evolution chain, the
//! evidence around it and its outcomes.
//!
//! Scoring: a memory's relevance is the larger of its cosine similarity to the question (counted
//! when at least `min_similarity`) and its BM25 score divided by the best BM25 score among the
//! memories found (so the best lexical match scores 1). The context memory is the one given, or
//! else the most relevant memory; memories within `connected_depth` live links of it (each of
//! effective confidence at least `connected_min_confidence`) have their relevance multiplied by
//! `connected_boost` (1.5).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_projection::MEMORY;

use super::traverse::{Evolution, Impact, LINK_TYPES, TraversalOptions};
use super::{MemoryView, OutcomeView, all_memories, cosine, votes_of};
use crate::engine::Engine;
use crate::error::Error;
use crate::view::Snapshot;

/// Settings of contextual search.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySearchOptions {
    /// Memories returned (20, seed 003's top_k).
    pub limit: usize,
    /// Least cosine similarity for a semantic match (0.5; seed 003 suggests 0.7 for its model,
    /// the built-in static model's cosines run lower).
    pub min_similarity: f32,
    /// Boost of memories connected to the context memory (1.5).
    pub connected_boost: f64,
    /// Links followed from the context memory (2).
    pub connected_depth: usize,
    /// Least effective confidence of a followed link (0.5).
    pub connected_min_confidence: f64,
    /// The context memory (seed 003's last accessed memory); `None`: the most relevant one.
    pub context: Option<String>,
    /// How links are read.
    pub traversal: TraversalOptions,
}

impl Default for MemorySearchOptions {
    fn default() -> Self {
        MemorySearchOptions {
            limit: 20,
            min_similarity: 0.5,
            connected_boost: 1.5,
            connected_depth: 2,
            connected_min_confidence: 0.5,
            context: None,
            traversal: TraversalOptions::default(),
        }
    }
}

/// A memory found by contextual search.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryHit {
    /// The memory.
    pub memory: MemoryView,
    /// Relevance times the boost.
    pub score: f64,
    /// Cosine similarity to the question.
    pub similarity: f64,
    /// BM25 score relative to the best memory match, in [0, 1].
    pub lexical: f64,
    /// Whether the connected-memory boost applied.
    pub connected: bool,
}

/// The context of a question about decisions.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryContext {
    /// Memories found, best first.
    pub hits: Vec<MemoryHit>,
    /// The evolution chain of the decision the question is about (the best decision hit, or the
    /// decision the best hit implements), newest first.
    pub evolution: Option<Evolution>,
    /// What happened after each decision of the chain: implementing memories, results, later
    /// memories of the session (impact analysis), oldest decision's first.
    pub evidence: Vec<Impact>,
    /// Every outcome on the chain, oldest first: the reasons decisions changed.
    pub outcomes: Vec<OutcomeView>,
}

impl Snapshot<'_> {
    /// Memories connected to `start` within `depth` live links of at least `min_confidence`,
    /// through memories `keep` accepts only.
    fn connected(
        &self,
        start: &str,
        depth: usize,
        min_confidence: f64,
        traversal: &TraversalOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<BTreeSet<String>, Error> {
        let as_of = traversal.as_of();
        let mut seen = BTreeSet::from([start.to_owned()]);
        let mut queue = VecDeque::from([(start.to_owned(), 0usize)]);
        while let Some((at, d)) = queue.pop_front() {
            if d >= depth {
                continue;
            }
            let key = NodeKey::new(MEMORY, &at);
            let votes = votes_of(&*self.read, &key)?;
            for t in LINK_TYPES {
                for e in self.read.edges_of(&key, Some(t), Direction::Both)? {
                    let other = if e.key.from == key { &e.key.to } else { &e.key.from };
                    if other.label != MEMORY {
                        continue;
                    }
                    let vote = votes.get(&(e.key.from.id.clone(), e.key.to.id.clone(), t.into()));
                    let live = traversal.links.effective(&e, vote, as_of);
                    if live.is_some_and(|c| c >= min_confidence)
                        && !seen.contains(&other.id)
                        && keep(&other.id)?
                    {
                        seen.insert(other.id.clone());
                        queue.push_back((other.id.clone(), d + 1));
                    }
                }
            }
        }
        seen.remove(start);
        Ok(seen)
    }

    /// Contextual search for a question already embedded as `query_vector` (see
    /// [`Engine::search_memories`]); see the module docs for the scoring. Only memories `keep`
    /// accepts are scored, chosen as the context or walked through, so a memory the caller may
    /// not see changes nothing, and the limit applies to what is kept.
    pub(crate) fn search_memories(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<Vec<MemoryHit>, Error> {
        let mut lexical: BTreeMap<String, f64> = BTreeMap::new();
        for (key, score) in self.search_keys(query, 200)? {
            if key.label == MEMORY {
                lexical.insert(key.id, score);
            }
        }
        let best = lexical.values().copied().fold(0.0f64, f64::max);
        let mut hits = Vec::new();
        for m in all_memories(&*self.read)? {
            if !keep(&m.id)? {
                continue;
            }
            let similarity = match self.read.vector(&NodeKey::new(MEMORY, &m.id))? {
                Some(v) => f64::from(cosine(query_vector, &v)),
                None => 0.0,
            };
            let lex = lexical.get(&m.id).map_or(0.0, |s| if best > 0.0 { s / best } else { 0.0 });
            let semantic =
                if similarity >= f64::from(options.min_similarity) { similarity } else { 0.0 };
            let relevance = semantic.max(lex);
            if relevance > 0.0 {
                hits.push(MemoryHit {
                    memory: m,
                    score: relevance,
                    similarity,
                    lexical: lex,
                    connected: false,
                });
            }
        }
        let order = |a: &MemoryHit, b: &MemoryHit| {
            b.score.total_cmp(&a.score).then_with(|| a.memory.id.cmp(&b.memory.id))
        };
        hits.sort_by(order);
        let context = options.context.clone().or_else(|| hits.first().map(|h| h.memory.id.clone()));
        if let Some(context) = context {
            let near = self.connected(
                &context,
                options.connected_depth,
                options.connected_min_confidence,
                &options.traversal,
                keep,
            )?;
            for h in &mut hits {
                if near.contains(&h.memory.id) {
                    h.score *= options.connected_boost;
                    h.connected = true;
                }
            }
            hits.sort_by(order);
        }
        hits.truncate(options.limit);
        Ok(hits)
    }

    /// The context of a question about decisions: contextual search, then the evolution chain of
    /// the decision the question is most about, with the evidence and outcomes along it. The
    /// hits and the decision come from memories `keep` accepts; the chain, evidence and
    /// outcomes are the caller's to filter (see `view::Reader::memory_context`).
    pub(crate) fn memory_context(
        &self,
        query: &str,
        query_vector: &[f32],
        options: &MemorySearchOptions,
        keep: &mut dyn FnMut(&str) -> Result<bool, Error>,
    ) -> Result<MemoryContext, Error> {
        let hits = self.search_memories(query, query_vector, options, keep)?;
        let mut decision = None;
        for h in &hits {
            if h.memory.kind == "decision" {
                decision = Some(h.memory.clone());
                break;
            }
            // A checkpoint or insight about a decision points at it.
            let key = NodeKey::new(MEMORY, &h.memory.id);
            if let Some(e) = self.read.edges_of(&key, Some("IMPLEMENTS"), Direction::Out)?.first()
                && keep(&e.key.to.id)?
                && let Some(m) = self.memory(&e.key.to.id)?
            {
                decision = Some(m);
                break;
            }
        }
        let t = &options.traversal;
        let evolution = match &decision {
            Some(d) => match &d.topic {
                // The chain of the topic, when the decision is on it; else the chain from it.
                Some(topic) => match self.evolution(topic, t, keep)? {
                    Some(ev) if ev.steps.iter().any(|s| s.memory.id == d.id) => Some(ev),
                    _ => self.evolution_from(&d.id, topic.clone(), t, keep)?,
                },
                None => self.evolution_from(&d.id, String::new(), t, keep)?,
            },
            None => None,
        };
        let mut evidence = Vec::new();
        let mut outcomes = Vec::new();
        if let Some(ev) = &evolution {
            for step in ev.steps.iter().rev() {
                if let Some(impact) = self.impact(&step.memory.id, t)? {
                    evidence.push(impact);
                }
                outcomes.extend(step.outcomes.iter().cloned());
            }
        }
        outcomes.sort_by(|a, b| (a.at_ns, &a.id).cmp(&(b.at_ns, &b.id)));
        Ok(MemoryContext { hits, evolution, evidence, outcomes })
    }
}

impl Engine {
    /// Contextual memory search for the store's owner, the question embedded by the engine's
    /// model; a principal's is [`crate::Reader::search_memories`] with [`Engine::embed_query`].
    pub fn search_memories(
        &self,
        query: &str,
        options: &MemorySearchOptions,
    ) -> Result<Vec<MemoryHit>, Error> {
        let v = self.embed_query(query)?;
        self.owner_reader()?.search_memories(query, &v, options)
    }

    /// The context of a question about decisions for the store's owner (see
    /// [`Engine::search_memories`]).
    pub fn memory_context(
        &self,
        query: &str,
        options: &MemorySearchOptions,
    ) -> Result<MemoryContext, Error> {
        let v = self.embed_query(query)?;
        self.owner_reader()?.memory_context(query, &v, options)
    }

    /// A question's vector under the engine's model, for the reads that take one (recall,
    /// memory search) through [`crate::Reader`].
    pub fn embed_query(&self, query: &str) -> Result<Vec<f32>, Error> {
        Ok(self.embedder()?.embed(&[query])?.into_iter().next().unwrap_or_default())
    }
}
