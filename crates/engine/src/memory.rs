//! Decision memory (seed 003), the write side and the link rules: saving memory records with the
//! write-time checks, indexing memories (embedding, full-text), and the automatic links.
//!
//! # Automatic links
//! Automatic links are stage-3 data: derived from the log, the embedding model and
//! [`MemoryOptions`], made by the `system`, from the earlier memory to the later one (earlier:
//! smaller `created_at`, then smaller id). For each memory, each rule keeps its best candidates
//! among the earlier memories:
//! - **temporal** (TEMPORAL): earlier memories of the same session less than
//!   `temporal_window_ms` before it, nearest first, at most `temporal_max`; confidence
//!   `temporal_base + (1 - Δt / window) × temporal_span` (0.3 to 0.5 by default, seed 003 rule 1);
//! - **same topic** (RELATES_TO, rule `same_topic`): for a decision, the most recent earlier
//!   memories on its topic, at most `same_topic_max`, confidence `same_topic_confidence` (0.6);
//! - **semantic** (RELATES_TO, rule `semantic`): earlier memories whose type-aware score
//!   `min(1, cosine × boost(earlier kind → later kind))` exceeds `semantic_threshold` (0.75), best
//!   first, at most `semantic_max` (5); the confidence is the score.
//!
//! A memory therefore receives at most `temporal_max + same_topic_max + semantic_max` automatic
//! links from earlier memories (11 by default), so the number of automatic links is at most that
//! many times the number of memories, whatever their count.
//!
//! [`Engine::save_memories`] keeps the links current one memory at a time: each new pair is
//! offered to the later memory's top list, which keeps the best candidates under a total order
//! (rank, then the other memory's id). Offers only add candidates, so the lists end as the top
//! lists of all pairs, which is exactly what [`Engine::link_memories`] computes from scratch:
//! reprojecting and relinking gives the graph built incrementally, in any arrival order.
//!
//! # Reading links
//! A link's effective confidence at a time `as_of` is its confidence, times
//! `exp(-rate × age in days)` with the per-type rate (SUPERSEDES never decays), times
//! `downvote_factor` per down-vote; a deleted link is gone. Automatic links whose effective
//! confidence is below `prune_below` (0.3) are pruned from every traversal; explicit links (made by
//! a record, whoever wrote it) only decay.

mod rollup;
mod search;
mod traverse;

pub use rollup::{NextAction, Rollup, RollupItem, RollupOptions};
pub use search::{MemoryContext, MemoryHit, MemorySearchOptions};
pub use traverse::{Evolution, EvolutionStep, Impact, ImpactItem, TraversalOptions};

use std::collections::{BTreeMap, BTreeSet};

use ctxgraph_embed::Embedder;
use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey, Properties};
use ctxgraph_ontology::{RecordBody, Schema, ValidRecord, Violation};
use ctxgraph_projection::{LINK_VOTE, MEMORY, MEMORY_SESSION, TOPIC, topic_id};
use ctxgraph_store::{EmbeddedWrite, GraphReader, GraphStore};
use serde_json::Value;

use crate::consolidate::Stage3Write;
use crate::engine::{Engine, Projection};
use crate::error::Error;
use crate::ingest::IngestOutcome;

/// The store setting that switches automatic memory links off (`"off"`; absent means on).
pub(crate) const AUTO_LINK_SETTING: &str = "memory.auto_link";

/// Memories read per page when every memory is listed.
const PAGE: usize = 4_096;
const NS_PER_MS: i64 = 1_000_000;
const NS_PER_SEC: i64 = 1_000_000_000;
const NS_PER_DAY: f64 = 86_400e9;

/// Settings of the automatic links and of how links are read. Defaults are seed 003's values.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryOptions {
    /// Temporal links join memories of one session less than this far apart (1 hour).
    pub temporal_window_ms: i64,
    /// Most temporal links a memory receives from earlier memories (3).
    pub temporal_max: usize,
    /// Confidence of a temporal link at the edge of the window (0.3).
    pub temporal_base: f64,
    /// Confidence added for a temporal link at Δt = 0 (0.2, so at most 0.5).
    pub temporal_span: f64,
    /// Confidence of a same-topic link (0.6).
    pub same_topic_confidence: f64,
    /// Most same-topic links a decision receives (3).
    pub same_topic_max: usize,
    /// Least type-aware similarity for a semantic link, exclusive (0.75).
    pub semantic_threshold: f64,
    /// Most semantic links a memory receives (5, seed 003's top 5).
    pub semantic_max: usize,
    /// Type-aware boost of the cosine by (earlier kind, later kind); pairs not listed get 1.0.
    pub type_boost: Vec<(String, String, f64)>,
    /// Confidence decay per day, by edge type; types not listed use `default_decay` and
    /// SUPERSEDES never decays.
    pub decay_per_day: Vec<(String, f64)>,
    /// Decay per day of link types not in `decay_per_day` (0.05).
    pub default_decay: f64,
    /// Automatic links below this effective confidence are pruned from traversals (0.3).
    pub prune_below: f64,
    /// Each down-vote multiplies a link's confidence by this (0.5).
    pub downvote_factor: f64,
    /// Whether the automatic link rules run at all (true). Off, saving a memory links it to
    /// nothing and rebuilding the links (`link_memories`, `consolidate`) removes the automatic
    /// ones and writes none; explicit links are kept either way.
    pub auto_link: bool,
}

impl Default for MemoryOptions {
    fn default() -> Self {
        let pair = |a: &str, b: &str, f: f64| (a.to_owned(), b.to_owned(), f);
        MemoryOptions {
            temporal_window_ms: 3_600_000,
            temporal_max: 3,
            temporal_base: 0.3,
            temporal_span: 0.2,
            same_topic_confidence: 0.6,
            same_topic_max: 3,
            semantic_threshold: 0.75,
            semantic_max: 5,
            type_boost: vec![
                pair("decision", "checkpoint", 1.2),
                pair("decision", "decision", 1.0),
                pair("checkpoint", "checkpoint", 0.8),
                pair("insight", "decision", 1.1),
                pair("decision", "insight", 0.9),
            ],
            decay_per_day: vec![
                ("TEMPORAL".into(), 0.1),
                ("RELATES_TO".into(), 0.05),
                ("IMPLEMENTS".into(), 0.02),
            ],
            default_decay: 0.05,
            prune_below: 0.3,
            downvote_factor: 0.5,
            auto_link: true,
        }
    }
}

impl MemoryOptions {
    /// The seed's type-aware boost of a pair of memory kinds.
    pub fn boost(&self, earlier: &str, later: &str) -> f64 {
        self.type_boost
            .iter()
            .find(|(a, b, _)| a == earlier && b == later)
            .map_or(1.0, |(_, _, f)| *f)
    }

    /// Decay per day of an edge type (0 for SUPERSEDES).
    pub fn decay(&self, edge_type: &str) -> f64 {
        if edge_type == "SUPERSEDES" {
            return 0.0;
        }
        self.decay_per_day
            .iter()
            .find(|(t, _)| t == edge_type)
            .map_or(self.default_decay, |(_, r)| *r)
    }

    /// The effective confidence of a link at `as_of_ns` given its votes; `None` when the link is
    /// deleted or, for an automatic link, pruned.
    pub fn effective(&self, edge: &Edge, votes: Option<&Edge>, as_of_ns: i64) -> Option<f64> {
        let mut c = edge.props.get("confidence").and_then(Value::as_f64).unwrap_or(0.0);
        if let Some(v) = votes {
            if v.props.get("deleted").and_then(Value::as_bool).unwrap_or(false) {
                return None;
            }
            let n = v.props.get("downvotes").and_then(Value::as_i64).unwrap_or(0);
            c *= self.downvote_factor.powi(i32::try_from(n).unwrap_or(i32::MAX));
        }
        if let Some(created) = link_made_ns(&edge.props) {
            let age_days = (as_of_ns.saturating_sub(created)).max(0) as f64 / NS_PER_DAY;
            c *= (-self.decay(&edge.key.edge_type) * age_days).exp();
        }
        let automatic = is_automatic(edge);
        (!automatic || c >= self.prune_below).then_some(c)
    }
}

/// Whether a link was made by an automatic rule (not by a record, whoever wrote that record).
pub(crate) fn is_automatic(edge: &Edge) -> bool {
    edge.props.get("rule").and_then(Value::as_str).is_some_and(|r| r != "explicit")
}

/// What [`Engine::link_memories`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkReport {
    /// Memories indexed (embedded and put in the full-text index).
    pub memories: u64,
    /// Temporal links written.
    pub temporal: u64,
    /// Same-topic links written.
    pub same_topic: u64,
    /// Semantic links written.
    pub semantic: u64,
}

impl LinkReport {
    /// Every automatic link written.
    pub fn total(&self) -> u64 {
        self.temporal + self.same_topic + self.semantic
    }
}

/// A memory as traversals return it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryView {
    /// Id.
    pub id: String,
    /// `decision`, `checkpoint`, `insight` or `context`.
    pub kind: String,
    /// Topic as written.
    pub topic: Option<String>,
    /// The memory.
    pub content: String,
    /// Why.
    pub reasoning: Option<String>,
    /// Writer's confidence.
    pub confidence: f64,
    /// Who saved it.
    pub created_by: String,
    /// Session.
    pub session_id: Option<String>,
    /// When it was saved (RFC 3339).
    pub created_at: String,
    /// `created_at` in nanoseconds since the epoch.
    pub created_at_ns: i64,
    /// Latest outcome (`success`, `failed`, `partial`).
    pub outcome: Option<String>,
    /// Why, for the latest outcome.
    pub outcome_reason: Option<String>,
    /// Votes cast on links touching it (traversals read the votes only when there are some).
    pub link_votes: u64,
    /// Whether automatic links may join it (false when it was saved without them).
    pub auto_link: bool,
}

impl MemoryView {
    /// Read a Memory node; `None` for a node of another label or without a valid `created_at`.
    pub fn from_node(node: &Node) -> Option<MemoryView> {
        if node.key.label != MEMORY {
            return None;
        }
        let s = |k: &str| node.props.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(MemoryView {
            id: node.key.id.clone(),
            kind: s("kind")?,
            topic: s("topic"),
            content: s("content").unwrap_or_default(),
            reasoning: s("reasoning"),
            confidence: node.props.get("confidence").and_then(Value::as_f64).unwrap_or(1.0),
            created_by: s("created_by").unwrap_or_default(),
            session_id: s("session_id"),
            created_at_ns: ns_prop(&node.props, "created_at")?,
            created_at: s("created_at")?,
            outcome: s("outcome"),
            outcome_reason: s("outcome_reason"),
            link_votes: node.props.get("link_votes").and_then(Value::as_u64).unwrap_or(0),
            auto_link: node.props.get("auto_link").and_then(Value::as_bool).unwrap_or(true),
        })
    }

    /// The text that is embedded and indexed: topic, content and reasoning.
    pub fn text(&self) -> String {
        let mut t = String::new();
        for part in [self.topic.as_deref(), Some(self.content.as_str()), self.reasoning.as_deref()]
            .into_iter()
            .flatten()
        {
            if !t.is_empty() {
                t.push_str(". ");
            }
            t.push_str(part);
        }
        t
    }

    /// Earlier in the total order of memories: `created_at`, then id.
    fn before(&self, other: &MemoryView) -> bool {
        (self.created_at_ns, &self.id) < (other.created_at_ns, &other.id)
    }
}

/// An outcome as traversals return it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutcomeView {
    /// Outcome id.
    pub id: String,
    /// The memory it is the outcome of.
    pub memory_id: String,
    /// `success`, `failed` or `partial`.
    pub outcome: String,
    /// Why.
    pub reason: String,
    /// When it was recorded (RFC 3339).
    pub at: String,
    /// `at` in nanoseconds since the epoch.
    pub at_ns: i64,
}

impl OutcomeView {
    pub(crate) fn from_node(node: &Node) -> Option<OutcomeView> {
        let s = |k: &str| node.props.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(OutcomeView {
            id: node.key.id.clone(),
            memory_id: s("memory_id")?,
            outcome: s("outcome")?,
            reason: s("reason").unwrap_or_default(),
            at_ns: ns_prop(&node.props, "at")?,
            at: s("at")?,
        })
    }
}

pub(crate) fn ns_prop(props: &Properties, key: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(props.get(key)?.as_str()?).ok()?.timestamp_nanos_opt()
}

/// Whether a record names memories that must exist when it is written.
pub(crate) fn names_memories(body: &RecordBody) -> bool {
    matches!(
        body,
        RecordBody::Memory(_)
            | RecordBody::MemoryOutcome(_)
            | RecordBody::MemoryLink(_)
            | RecordBody::MemoryLinkVote(_)
    )
}

/// The memories a record names that exist neither in the graph nor earlier in its batch (`saved`),
/// as violations; `None` when all exist. Checked at write time, so a link never dangles.
pub(crate) fn missing_memories(
    w: &dyn GraphReader,
    body: &RecordBody,
    saved: &BTreeSet<String>,
) -> Result<Option<Vec<Violation>>, Error> {
    let named: Vec<(String, &str)> = match body {
        RecordBody::Memory(m) => m
            .supersedes
            .iter()
            .map(|s| ("$.supersedes".to_owned(), s.as_str()))
            .chain(
                m.implements
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (format!("$.implements[{i}]"), s.as_str())),
            )
            .collect(),
        RecordBody::MemoryOutcome(o) => vec![("$.memory_id".into(), o.memory_id.as_str())],
        RecordBody::MemoryLink(l) => {
            vec![("$.from".into(), l.from.as_str()), ("$.to".into(), l.to.as_str())]
        }
        RecordBody::MemoryLinkVote(v) => {
            vec![("$.from".into(), v.from.as_str()), ("$.to".into(), v.to.as_str())]
        }
        RecordBody::Event(_)
        | RecordBody::Edge(_)
        | RecordBody::Schema(_)
        | RecordBody::EntityDecision(_)
        | RecordBody::Slots(_)
        | RecordBody::Fact(_)
        | RecordBody::FactRetraction(_)
        | RecordBody::Document(_)
        | RecordBody::Forget(_)
        | RecordBody::Redacted(_)
        | RecordBody::Receipt(_)
        | RecordBody::Access(_) => Vec::new(),
    };
    let mut violations = Vec::new();
    for (path, id) in named {
        if saved.contains(id) || w.node_exists(&NodeKey::new(MEMORY, id))? {
            continue;
        }
        violations.push(Violation::for_str(
            path,
            id,
            "memory.unknown_memory",
            "no memory with this id (see `ctxgraph memory list`)",
        ));
    }
    Ok((!violations.is_empty()).then_some(violations))
}

/// Every memory in the graph, in the total order (`created_at`, then id).
pub(crate) fn all_memories(read: &dyn GraphReader) -> Result<Vec<MemoryView>, Error> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = read.nodes_by_label(MEMORY, after.as_deref(), PAGE)?;
        let Some(last) = page.last() else { break };
        after = Some(last.key.id.clone());
        let full = page.len() == PAGE;
        out.extend(page.iter().filter_map(MemoryView::from_node));
        if !full {
            break;
        }
    }
    out.sort_by(|a, b| (a.created_at_ns, &a.id).cmp(&(b.created_at_ns, &b.id)));
    Ok(out)
}

/// The rules of automatic links.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rule {
    Temporal,
    SameTopic,
    Semantic,
}

impl Rule {
    fn name(self) -> &'static str {
        match self {
            Rule::Temporal => "temporal",
            Rule::SameTopic => "same_topic",
            Rule::Semantic => "semantic",
        }
    }

    fn edge_type(self) -> &'static str {
        match self {
            Rule::Temporal => "TEMPORAL",
            Rule::SameTopic | Rule::Semantic => "RELATES_TO",
        }
    }

    fn max(self, o: &MemoryOptions) -> usize {
        match self {
            Rule::Temporal => o.temporal_max,
            Rule::SameTopic => o.same_topic_max,
            Rule::Semantic => o.semantic_max,
        }
    }
}

/// A candidate automatic link and its rank key (smaller is better).
struct Candidate {
    edge: Edge,
    rank: (i64, String),
}

/// The rank of a link within its rule: nearest in time first (temporal, same topic) or highest
/// score first (semantic), then the earlier memory's id. Recomputed from stored edges, so the
/// incremental and the full computation compare the same values.
fn rank_of(rule: Rule, edge: &Edge) -> (i64, String) {
    let primary = match rule {
        Rule::Temporal | Rule::SameTopic => {
            edge.props.get("time_delta_ms").and_then(Value::as_i64).unwrap_or(i64::MAX)
        }
        // Scores are in [0, 1]: a negated fixed-point key orders them exactly as the floats
        // (two floats that round to one key tie and fall back to the id).
        Rule::Semantic => {
            let c = edge.props.get("confidence").and_then(Value::as_f64).unwrap_or(0.0);
            -((c * 1e15) as i64)
        }
    };
    (primary, edge.key.from.id.clone())
}

/// The automatic link of `rule` from `earlier` to `later`, if the rule makes one; `similarity` is
/// the cosine of their embeddings (semantic rule only).
fn candidate(
    schema: &Schema,
    o: &MemoryOptions,
    rule: Rule,
    earlier: &MemoryView,
    later: &MemoryView,
    similarity: Option<f32>,
) -> Option<Candidate> {
    // Linking switched off for the store, or for either memory when it was saved.
    if !o.auto_link || !earlier.auto_link || !later.auto_link {
        return None;
    }
    let delta_ns = later.created_at_ns.saturating_sub(earlier.created_at_ns);
    let delta_ms = delta_ns / NS_PER_MS;
    let confidence = match rule {
        Rule::Temporal => {
            let same_session =
                earlier.session_id.is_some() && earlier.session_id == later.session_id;
            let window_ns = o.temporal_window_ms.saturating_mul(NS_PER_MS);
            if !same_session || delta_ns >= window_ns {
                return None;
            }
            let normalized = delta_ns as f64 / window_ns as f64;
            o.temporal_base + (1.0 - normalized) * o.temporal_span
        }
        Rule::SameTopic => {
            let same = match (&earlier.topic, &later.topic) {
                (Some(a), Some(b)) => topic_id(a) == topic_id(b),
                _ => false,
            };
            if later.kind != "decision" || !same {
                return None;
            }
            o.same_topic_confidence
        }
        Rule::Semantic => {
            let score = (f64::from(similarity?) * o.boost(&earlier.kind, &later.kind)).min(1.0);
            if score <= o.semantic_threshold {
                return None;
            }
            score
        }
    };
    let props = automatic_props(confidence, rule, later.created_at_ns, delta_ms);
    let key = schema.edge_key(
        rule.edge_type(),
        NodeKey::new(MEMORY, &earlier.id),
        NodeKey::new(MEMORY, &later.id),
        &props,
    );
    let edge = Edge { key, props };
    Some(Candidate { rank: rank_of(rule, &edge), edge })
}

/// The stored properties of an automatic link, kept small since a memory has dozens of them:
/// the confidence to 4 decimals, the rule (its identity), when it was made as whole seconds
/// (`at`, for decay), and for the rules ranked by time the gap between the two memories
/// (`time_delta_ms`). Nothing that can be derived is stored: the maker is `system` for every
/// automatic rule, the reason is the rule, and a semantic link's cosine is its confidence over
/// the kinds' boost.
fn automatic_props(confidence: f64, rule: Rule, at_ns: i64, delta_ms: i64) -> Properties {
    let mut p = Properties::new();
    p.insert("confidence".into(), ((confidence.clamp(0.0, 1.0) * 1e4).round() / 1e4).into());
    p.insert("rule".into(), rule.name().into());
    p.insert("at".into(), at_ns.div_euclid(NS_PER_SEC).into());
    if rule != Rule::Semantic {
        p.insert("time_delta_ms".into(), delta_ms.into());
    }
    p
}

/// When a link was made, in nanoseconds: an explicit link's `created_at`, an automatic one's
/// `at` (whole seconds).
pub(crate) fn link_made_ns(props: &Properties) -> Option<i64> {
    ns_prop(props, "created_at")
        .or_else(|| props.get("at")?.as_i64().map(|s| s.saturating_mul(NS_PER_SEC)))
}

/// Who made a link: the `created_by` of an explicit one, `system` for an automatic one.
pub fn link_maker(edge: &Edge) -> &str {
    match edge.props.get("created_by").and_then(Value::as_str) {
        Some(by) => by,
        None if is_automatic(edge) => "system",
        None => "",
    }
}

fn check_edge(schema: &Schema, edge: &Edge) -> Result<(), Error> {
    let v = schema.check_edge(edge);
    if v.is_empty() { Ok(()) } else { Err(Error::Validation(v.into())) }
}

/// Offer a candidate to its later memory's top list of the rule: kept if the list has room or it
/// beats the list's worst, which then goes. Returns whether it was written.
fn offer(
    w: &mut EmbeddedWrite<'_>,
    schema: &Schema,
    o: &MemoryOptions,
    rule: Rule,
    c: Candidate,
) -> Result<bool, Error> {
    let current: Vec<Edge> = w
        .edges_of(&c.edge.key.to, Some(rule.edge_type()), Direction::In)?
        .into_iter()
        .filter(|e| e.key.qualifier == c.edge.key.qualifier)
        .collect();
    if current.iter().any(|e| e.key == c.edge.key) {
        return Ok(false);
    }
    if current.len() >= rule.max(o) {
        let Some(worst) = current.iter().max_by(|a, b| rank_of(rule, a).cmp(&rank_of(rule, b)))
        else {
            return Ok(false);
        };
        if rank_of(rule, worst) <= c.rank {
            return Ok(false);
        }
        w.delete_edge(&worst.key)?;
    }
    check_edge(schema, &c.edge)?;
    w.put_edge(&c.edge)?;
    Ok(true)
}

/// A dot product summed in 8 lanes (which the compiler vectorises), then the lanes in order: the
/// same inputs give the same bits everywhere it is used.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The cosine of two vectors given their norms (`dot(v, v).sqrt()`).
fn cosine_with(a: &[f32], b: &[f32], na: f32, nb: f32) -> f32 {
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot(a, b) / (na * nb) }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    cosine_with(a, b, dot(a, a).sqrt(), dot(b, b).sqrt())
}

/// Embed memories and write their vectors and full-text entries.
fn index<W: GraphStore + ?Sized>(
    w: &mut W,
    embedder: &dyn Embedder,
    memories: &[MemoryView],
) -> Result<Vec<Vec<f32>>, Error> {
    let texts: Vec<String> = memories.iter().map(MemoryView::text).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed(&refs)?;
    if w.embedding_model()?.is_none() {
        w.set_embedding_model(embedder.model_id(), embedder.dimension())?;
    }
    for ((m, text), v) in memories.iter().zip(&texts).zip(&vectors) {
        let key = NodeKey::new(MEMORY, &m.id);
        w.put_vector(&key, v)?;
        w.put_text(&key, text)?;
    }
    Ok(vectors)
}

/// The memories reached from `hub` by `edge_type` edges into it (a topic's or session's members).
fn members(
    w: &EmbeddedWrite<'_>,
    hub: &NodeKey,
    edge_type: &str,
) -> Result<Vec<MemoryView>, Error> {
    let mut out = Vec::new();
    for e in w.edges_of(hub, Some(edge_type), Direction::In)? {
        if let Some(m) = w.node(&e.key.from)?.as_ref().and_then(MemoryView::from_node) {
            out.push(m);
        }
    }
    Ok(out)
}

impl Engine {
    /// Write memory records (`memory`, `memory_outcome`, `memory_link`, `memory_link_vote`) and
    /// keep the automatic links current.
    ///
    /// Records naming a memory that exists neither in the store nor earlier in `records` are
    /// refused (a validation error naming the field), and nothing of them is written. Each new
    /// memory is then embedded, put in the full-text index and offered to the automatic link
    /// rules against every stored memory (see the module docs), in a second transaction: if that
    /// fails, the memory is saved and [`Engine::link_memories`] rebuilds its links.
    ///
    /// On a remote store the records are checked against the folded graph and its unfolded log
    /// tail, appended in one batch and waited for until folded (at most
    /// [`crate::REMOTE_FOLD_WAIT`]); indexing is stage 2's and the automatic links stage 3's
    /// (`worker --stage enrich`, `worker --stage consolidate`).
    pub fn save_memories(
        &mut self,
        records: &[ValidRecord],
    ) -> Result<Vec<Result<IngestOutcome, Error>>, Error> {
        let outcomes = self.ingest_batch(records, Projection::Inline, false)?;
        if self.is_remote() {
            self.await_fold(outcomes.iter().flatten())?;
            return Ok(outcomes);
        }
        let new: Vec<&str> = records
            .iter()
            .zip(&outcomes)
            .filter_map(|(r, o)| match (r.body(), o) {
                (RecordBody::Memory(m), Ok(IngestOutcome::New(_))) => Some(m.memory_id.as_str()),
                _ => None,
            })
            .collect();
        if new.is_empty() {
            return Ok(outcomes);
        }
        let embedder = self.embedder()?;
        let options = self.options().memory.clone();
        let schema = &self.schema;
        let mut w = self.backend.embedded_mut("saving memories")?.begin_write()?;
        for id in new {
            let Some(m) =
                w.node(&NodeKey::new(MEMORY, id))?.as_ref().and_then(MemoryView::from_node)
            else {
                continue;
            };
            let vector = index(&mut w, embedder.as_ref(), std::slice::from_ref(&m))?
                .pop()
                .unwrap_or_default();
            link_one(&mut w, schema, &options, &m, &vector)?;
        }
        w.commit()?;
        Ok(outcomes)
    }

    /// Switch automatic memory links on or off for this store, as a setting kept in the store
    /// (so every later open, the server's included, obeys it), then rebuild the links: off
    /// removes every automatic link and writes none, on writes them again; explicit links stay
    /// either way. A memory saved with `auto_link: false` stays unlinked in both.
    pub fn set_auto_link(&mut self, on: bool) -> Result<LinkReport, Error> {
        if let crate::backend::Backend::Remote(store) = &self.backend {
            // The setting in the store's settings; the links are stage 3's (`link_memories`).
            store.set_setting(AUTO_LINK_SETTING, (!on).then_some("off"))?;
        } else {
            let mut w =
                self.backend.embedded_mut("setting automatic memory links")?.begin_write()?;
            w.set_setting(AUTO_LINK_SETTING, (!on).then_some("off"))?;
            w.commit()?;
        }
        self.options.memory.auto_link = on;
        self.link_memories()
    }

    /// Whether the store's setting switches automatic memory links off (`set_auto_link`).
    pub fn auto_link_stored_off(&self) -> Result<bool, Error> {
        Ok(self.backend.begin_read()?.setting(AUTO_LINK_SETTING)?.as_deref() == Some("off"))
    }

    /// Rebuild every memory's index entries and automatic links from scratch, in one
    /// transaction: embed and index every memory, delete the automatic links, and compute each
    /// memory's top lists (see the module docs). Deterministic for a given log, model and
    /// [`MemoryOptions`]; running it again changes nothing. Run after `reproject`, after a bulk
    /// `ingest` of memory records, or after changing the options; `consolidate` runs it too.
    ///
    /// On a remote store the links are stage 3's, rebuilt with everything else it derives in
    /// one watched transaction: this runs [`Engine::consolidate`] and reports its links.
    pub fn link_memories(&mut self) -> Result<LinkReport, Error> {
        if self.is_remote() {
            return Ok(self.consolidate()?.memory_links);
        }
        let embedder = self.embedder()?;
        let options = self.options().memory.clone();
        let mut w = self.backend.embedded_mut("linking memories")?.begin_write()?;
        let report = relink_all(&mut w, &self.schema, embedder.as_ref(), &options)?;
        w.commit()?;
        Ok(report)
    }
}

/// Offer every pair of `m` with a stored memory to the rules.
fn link_one(
    w: &mut EmbeddedWrite<'_>,
    schema: &Schema,
    o: &MemoryOptions,
    m: &MemoryView,
    vector: &[f32],
) -> Result<(), Error> {
    if !o.auto_link || !m.auto_link {
        return Ok(());
    }
    let mut offers: Vec<(Rule, MemoryView, Option<f32>)> = Vec::new();
    if let Some(session) = &m.session_id {
        for other in members(w, &NodeKey::new(MEMORY_SESSION, session), "IN_SESSION")? {
            offers.push((Rule::Temporal, other, None));
        }
    }
    if let Some(topic) = &m.topic {
        for other in members(w, &NodeKey::new(TOPIC, topic_id(topic)), "ABOUT")? {
            offers.push((Rule::SameTopic, other, None));
        }
    }
    for other in all_memories(&*w)? {
        if other.id == m.id {
            continue;
        }
        if let Some(v) = w.vector(&NodeKey::new(MEMORY, &other.id))? {
            let s = cosine(vector, &v);
            offers.push((Rule::Semantic, other, Some(s)));
        }
    }
    for (rule, other, similarity) in offers {
        if other.id == m.id || !other.auto_link {
            continue;
        }
        let (earlier, later) = if other.before(m) { (&other, m) } else { (m, &other) };
        if let Some(c) = candidate(schema, o, rule, earlier, later, similarity) {
            offer(w, schema, o, rule, c)?;
        }
    }
    Ok(())
}

/// Delete every automatic link, then write each memory's top lists computed from scratch.
pub(crate) fn relink_all<W: Stage3Write + ?Sized>(
    w: &mut W,
    schema: &Schema,
    embedder: &dyn Embedder,
    o: &MemoryOptions,
) -> Result<LinkReport, Error> {
    let memories = all_memories(w.graph())?;
    let vectors = index(w, embedder, &memories)?;
    for edge_type in ["TEMPORAL", "RELATES_TO"] {
        let mut doomed = Vec::new();
        let mut after = None;
        loop {
            let page = w.edges_by_type(edge_type, after.as_ref(), PAGE)?;
            let Some(last) = page.last() else { break };
            after = Some(last.key.clone());
            let full = page.len() == PAGE;
            doomed.extend(page.into_iter().filter(is_automatic).map(|e| e.key));
            if !full {
                break;
            }
        }
        for key in doomed {
            w.delete_edge(&key)?;
        }
    }
    let mut report = LinkReport { memories: memories.len() as u64, ..LinkReport::default() };
    let norms: Vec<f32> = vectors.iter().map(|v| dot(v, v).sqrt()).collect();
    // Members of each session and topic, in the total order (memories is sorted).
    let mut sessions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    let mut topics: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, m) in memories.iter().enumerate() {
        if let Some(s) = &m.session_id {
            sessions.entry(s.as_str()).or_default().push(i);
        }
        if let Some(t) = &m.topic {
            topics.entry(topic_id(t)).or_default().push(i);
        }
    }
    let mut write = |w: &mut W, rule: Rule, mut list: Vec<Candidate>| {
        list.sort_by(|a, b| a.rank.cmp(&b.rank));
        list.truncate(rule.max(o));
        let n = list.len() as u64;
        for c in list {
            check_edge(schema, &c.edge)?;
            w.put_edge(&c.edge)?;
        }
        match rule {
            Rule::Temporal => report.temporal += n,
            Rule::SameTopic => report.same_topic += n,
            Rule::Semantic => report.semantic += n,
        }
        Ok::<(), Error>(())
    };
    for (j, later) in memories.iter().enumerate() {
        let earlier_in = |group: Option<&Vec<usize>>| -> Vec<usize> {
            group.map_or_else(Vec::new, |g| g.iter().copied().filter(|&i| i < j).collect())
        };
        let session = later.session_id.as_deref().and_then(|s| sessions.get(s));
        let temporal = earlier_in(session)
            .into_iter()
            .filter_map(|i| candidate(schema, o, Rule::Temporal, &memories[i], later, None))
            .collect();
        write(w, Rule::Temporal, temporal)?;
        let topic = later.topic.as_deref().and_then(|t| topics.get(&topic_id(t)));
        let same_topic = earlier_in(topic)
            .into_iter()
            .filter_map(|i| candidate(schema, o, Rule::SameTopic, &memories[i], later, None))
            .collect();
        write(w, Rule::SameTopic, same_topic)?;
        let semantic = (0..j)
            .filter_map(|i| {
                let s = cosine_with(&vectors[i], &vectors[j], norms[i], norms[j]);
                candidate(schema, o, Rule::Semantic, &memories[i], later, Some(s))
            })
            .collect();
        write(w, Rule::Semantic, semantic)?;
    }
    Ok(report)
}

/// The votes on links touching a memory, by (from, to, link type); nothing is read when none
/// was cast.
pub(crate) fn votes_on(
    read: &dyn GraphReader,
    m: &MemoryView,
) -> Result<BTreeMap<(String, String, String), Edge>, Error> {
    if m.link_votes == 0 {
        return Ok(BTreeMap::new());
    }
    votes_of(read, &NodeKey::new(MEMORY, &m.id))
}

/// The votes on links touching `key`, by (from, to, link type).
pub(crate) fn votes_of(
    read: &dyn GraphReader,
    key: &NodeKey,
) -> Result<BTreeMap<(String, String, String), Edge>, Error> {
    let mut out = BTreeMap::new();
    for e in read.edges_of(key, Some(LINK_VOTE), Direction::Both)? {
        let t = e.props.get("link_type").and_then(Value::as_str).unwrap_or_default();
        out.insert((e.key.from.id.clone(), e.key.to.id.clone(), t.to_ascii_uppercase()), e);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use ctxgraph_projection::link_props;

    use super::*;

    fn view(id: &str, kind: &str, at_min: i64, session: Option<&str>) -> MemoryView {
        let ns = 1_795_000_000_000_000_000 + at_min * 60 * 1_000_000_000;
        let at = chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339();
        MemoryView {
            id: id.into(),
            kind: kind.into(),
            topic: Some("auth".into()),
            content: "c".into(),
            reasoning: None,
            confidence: 1.0,
            created_by: "user".into(),
            session_id: session.map(str::to_owned),
            created_at: at,
            created_at_ns: ns,
            outcome: None,
            outcome_reason: None,
            link_votes: 0,
            auto_link: true,
        }
    }

    #[test]
    fn temporal_confidence_follows_the_seed_formula() {
        let schema = Schema::core().unwrap();
        let o = MemoryOptions::default();
        let a = view("a", "decision", 0, Some("s"));
        let b = view("b", "checkpoint", 30, Some("s"));
        let c = candidate(&schema, &o, Rule::Temporal, &a, &b, None).unwrap();
        let conf = c.edge.props["confidence"].as_f64().unwrap();
        assert!((conf - 0.4).abs() < 1e-12, "30 minutes is half the window: 0.3 + 0.5 × 0.2");
        assert_eq!(c.edge.props["time_delta_ms"], 1_800_000);
        // Compact: no maker, reason or time text; `at` in whole seconds, as `effective` reads it.
        let keys: Vec<&str> = c.edge.props.keys().map(String::as_str).collect();
        assert_eq!(keys, ["at", "confidence", "rule", "time_delta_ms"]);
        assert_eq!(link_made_ns(&c.edge.props), Some(b.created_at_ns));
        assert_eq!(link_maker(&c.edge), "system");
        let late = view("c", "checkpoint", 60, Some("s"));
        assert!(candidate(&schema, &o, Rule::Temporal, &a, &late, None).is_none(), "1 h is out");
        let other = view("d", "checkpoint", 10, Some("t"));
        assert!(candidate(&schema, &o, Rule::Temporal, &a, &other, None).is_none());
    }

    #[test]
    fn same_topic_links_only_into_decisions_and_semantic_applies_the_boost() {
        let schema = Schema::core().unwrap();
        let o = MemoryOptions::default();
        let d1 = view("d1", "decision", 0, None);
        let cp = view("cp", "checkpoint", 5, None);
        let d2 = view("d2", "decision", 9, None);
        assert!(candidate(&schema, &o, Rule::SameTopic, &d1, &cp, None).is_none());
        let c = candidate(&schema, &o, Rule::SameTopic, &cp, &d2, None).unwrap();
        assert_eq!(c.edge.props["confidence"], 0.6);
        // 0.7 × 1.2 = 0.84 > 0.75 for decision → checkpoint; 0.7 alone is under the threshold.
        let s = candidate(&schema, &o, Rule::Semantic, &d1, &cp, Some(0.7)).unwrap();
        assert!((s.edge.props["confidence"].as_f64().unwrap() - 0.84).abs() < 1e-6);
        assert!(
            !s.edge.props.contains_key("similarity") && !s.edge.props.contains_key("time_delta_ms")
        );
        assert!(candidate(&schema, &o, Rule::Semantic, &d1, &d2, Some(0.7)).is_none());
    }

    #[test]
    fn decay_spares_supersedes_and_prunes_only_automatic_links() {
        let o = MemoryOptions::default();
        // `rule`: `explicit` for a link from a record, the rule's name for an automatic one.
        let edge = |t: &str, by: &str, rule: &str, c: f64| Edge {
            key: ctxgraph_ontology::graph::EdgeKey {
                edge_type: t.into(),
                from: NodeKey::new(MEMORY, "a"),
                to: NodeKey::new(MEMORY, "b"),
                qualifier: String::new(),
            },
            props: link_props(c, by, "2026-11-20T00:00:00Z", rule, None),
        };
        let ten_days = ns_prop(&edge("X", "user", "explicit", 1.0).props, "created_at").unwrap()
            + (10.0 * NS_PER_DAY) as i64;
        assert_eq!(
            o.effective(&edge("SUPERSEDES", "llm", "explicit", 1.0), None, ten_days),
            Some(1.0)
        );
        let t = o.effective(&edge("TEMPORAL", "user", "explicit", 0.5), None, ten_days).unwrap();
        assert!((t - 0.5 * (-1.0f64).exp()).abs() < 1e-12);
        // Pruned below 0.3 only when automatic, whoever wrote an explicit one.
        assert_eq!(o.effective(&edge("TEMPORAL", "system", "temporal", 0.5), None, ten_days), None);
        assert!(
            o.effective(&edge("TEMPORAL", "system", "explicit", 0.5), None, ten_days).is_some()
        );
    }
}
