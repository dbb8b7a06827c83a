//! Stage 3, re-consolidation: everything derived from the whole graph rather than one record.
//!
//! - The hierarchical view: per-session and per-day Summary nodes, extractive, linked by
//!   SUMMARIZES (a session summary summarises its events; a day summary summarises the session
//!   summaries of the sessions that began that day, UTC). `created_at` is the latest
//!   `occurred_at` summarised, not the clock.
//! - The vector index, rebuilt over every stored embedding (see `vector_index`).
//! - The semantic view: SIMILAR_TO from each event to its `similar_k` most similar events with
//!   cosine at least `similar_threshold`, so the edge count is at most `similar_k` per event.
//! - Entity resolution tiers 2 and 3 (see `resolve`): SAME_AS candidates and RELATED_TO.
//!
//! All of it is derived data: `consolidate` deletes it and builds it again from the graph in one
//! transaction, so the result depends only on the log, the model and the options, never on when
//! or how often it runs.

use std::collections::BTreeMap;

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_store::{ConsolidateCommit, GraphReader, GraphStore, LogReader};
use serde_json::Value;

use ctxgraph_ann::JoinConfig;

use crate::backend::Backend;
use crate::engine::Engine;
use crate::error::Error;
use crate::resolve::{ResolveConfig, ResolveReport, resolve_entities};
use crate::vector_index::{self, AllVectors};

/// Session ids read per page.
const PAGE: usize = 1_000;
/// Most events summarised per session (a session longer than this is summarised by its first
/// events; the count still covers all of them).
const MAX_SESSION_EVENTS: usize = 100_000;
/// Highlights quoted in a summary.
const HIGHLIGHTS: usize = 3;

/// Consolidations of a remote store tried before giving up while its graph keeps moving (a
/// worker folding or enriching meanwhile makes a commit apply nothing).
const REMOTE_ATTEMPTS: usize = 8;

/// The write side of stage 3: a graph write transaction that also reads the log (a receipt's
/// indexed text is its record's). The embedded write transaction is one; so is a remote
/// store's stage-3 transaction ([`ConsolidateCommit`]).
pub(crate) trait Stage3Write: GraphStore + LogReader {
    /// This transaction as a graph read, for the reads shared with the read path.
    fn graph(&self) -> &dyn GraphReader;
    /// This transaction as a log read.
    fn log(&self) -> &dyn LogReader;
}

impl<T: GraphStore + LogReader> Stage3Write for T {
    fn graph(&self) -> &dyn GraphReader {
        self
    }
    fn log(&self) -> &dyn LogReader {
        self
    }
}

impl Stage3Write for dyn ConsolidateCommit + '_ {
    fn graph(&self) -> &dyn GraphReader {
        self
    }
    fn log(&self) -> &dyn LogReader {
        self
    }
}

/// Settings of stage 3.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConsolidateOptions {
    /// Most SIMILAR_TO edges chosen by one event.
    pub similar_k: usize,
    /// Least cosine similarity for a SIMILAR_TO edge.
    pub similar_threshold: f32,
    /// Inverted lists searched per event for its similar events (its own list and the next
    /// nearest ones).
    pub similar_probes: usize,
    /// Threads for the index build and the similarity join (the result does not depend on it).
    pub threads: usize,
    /// Entity resolution tiers 2 and 3 (SAME_AS candidates, RELATED_TO).
    pub resolve: ResolveConfig,
}

impl Default for ConsolidateOptions {
    fn default() -> Self {
        ConsolidateOptions {
            similar_k: 5,
            similar_threshold: 0.85,
            similar_probes: 2,
            threads: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            resolve: ResolveConfig::default(),
        }
    }
}

/// What a consolidation did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsolidateReport {
    /// Session summaries written.
    pub sessions: u64,
    /// Day summaries written.
    pub days: u64,
    /// SUMMARIZES edges written.
    pub edges: u64,
    /// Vectors in the rebuilt vector index.
    pub indexed_vectors: u64,
    /// Inverted lists of the rebuilt vector index.
    pub index_lists: u64,
    /// SIMILAR_TO edges written.
    pub similar_edges: u64,
    /// What the rebuilt lexical index covers.
    pub text_index: crate::TextIndexReport,
    /// What entity resolution found.
    pub resolve: ResolveReport,
    /// Memories indexed and automatic memory links written (decision memory).
    pub memory_links: crate::memory::LinkReport,
    /// Wall-clock seconds per phase (summaries, index, similar), for progress and benchmarks.
    pub seconds: Vec<(&'static str, f64)>,
}

/// What a day summary gathers from its sessions.
#[derive(Default)]
struct Day {
    sessions: Vec<(String, f64, String)>,
    events: u64,
    failed: u64,
    first: Option<(i64, String)>,
    last: Option<(i64, String)>,
}

fn text<'a>(node: &'a Node, prop: &str) -> &'a str {
    node.props.get(prop).and_then(Value::as_str).unwrap_or_default()
}

impl Engine {
    /// Stage 3 with the engine's options: see [`Engine::consolidate_with`].
    pub fn consolidate(&mut self) -> Result<ConsolidateReport, Error> {
        let options = self.options().consolidate;
        self.consolidate_with(&options)
    }

    /// Rebuild everything stage 3 derives, in one transaction: summaries, the vector index,
    /// SIMILAR_TO edges, the inferred SAME_AS / RELATED_TO edges of entity resolution and the
    /// automatic memory links. Deterministic for a given log, model and options; idempotent.
    pub fn consolidate_with(
        &mut self,
        options: &ConsolidateOptions,
    ) -> Result<ConsolidateReport, Error> {
        let embedder = self.embedder()?;
        let memory = self.options().memory.clone();
        let schema = &self.schema;
        match &mut self.backend {
            Backend::Embedded(store) => {
                let mut w = store.begin_write()?;
                let report = rebuild_all(&mut w, schema, embedder.as_ref(), &memory, options)?;
                w.commit()?;
                Ok(report)
            }
            Backend::Remote(store) => {
                for _ in 0..REMOTE_ATTEMPTS {
                    let Some(mut tx) = store.begin_consolidate()? else {
                        return Err(Backend::unsupported_by("consolidate", store.as_ref()));
                    };
                    let report =
                        rebuild_all(&mut *tx, schema, embedder.as_ref(), &memory, options)?;
                    if tx.commit()? {
                        return Ok(report);
                    }
                }
                Err(Error::Store(ctxgraph_store::StoreError::Remote {
                    backend: "remote",
                    detail: format!(
                        "{}: the graph moved under {REMOTE_ATTEMPTS} consolidations in a row; \
                         run it again once the workers have caught up \
                         (rule: consolidate.graph_moved)",
                        store.location()
                    ),
                }))
            }
        }
    }
}

/// Every stage-3 rebuild, in `w` (the caller commits).
fn rebuild_all<W: Stage3Write + ?Sized>(
    w: &mut W,
    schema: &Schema,
    embedder: &dyn ctxgraph_embed::Embedder,
    memory: &crate::memory::MemoryOptions,
    options: &ConsolidateOptions,
) -> Result<ConsolidateReport, Error> {
    let mut report = ConsolidateReport::default();
    let started = std::time::Instant::now();
    summarize(schema, w, &mut report)?;
    report.seconds.push(("summaries", started.elapsed().as_secs_f64()));
    let started = std::time::Instant::now();
    // Memory vectors first, so the vector index holds them too.
    report.memory_links = crate::memory::relink_all(w, schema, embedder, memory)?;
    report.seconds.push(("memory links", started.elapsed().as_secs_f64()));
    // Facts, sentences, slot values and receipts still without a vector (a store written
    // before they were indexed), before the index is built.
    crate::indexed::index_missing(w, schema, embedder)?;
    let started = std::time::Instant::now();
    let built = vector_index::rebuild(w, options.threads.max(1))?;
    report.indexed_vectors = built.as_ref().map_or(0, |b| b.assignment.len() as u64);
    report.index_lists = built.as_ref().map_or(0, |b| b.centroids.len() as u64);
    report.seconds.push(("vector index", started.elapsed().as_secs_f64()));
    let started = std::time::Instant::now();
    w.delete_edges_of_type("SIMILAR_TO")?;
    if let Some(built) = &built {
        // The join compares f32 rows of every event with every other: it needs them all.
        let all = AllVectors::load(&*w)?;
        report.similar_edges = link_similar(schema, w, &all, built, options)?;
    }
    report.seconds.push(("similar", started.elapsed().as_secs_f64()));
    let started = std::time::Instant::now();
    report.text_index = crate::text_index::rebuild(w)?;
    report.seconds.push(("lexical index", started.elapsed().as_secs_f64()));
    let started = std::time::Instant::now();
    report.resolve = resolve_entities(w, schema, embedder, &options.resolve)?;
    report.seconds.push(("entity resolution", started.elapsed().as_secs_f64()));
    Ok(report)
}

/// SIMILAR_TO among events: each event's nearest events above the threshold, through the index.
fn link_similar<W: GraphStore + ?Sized>(
    schema: &Schema,
    w: &mut W,
    all: &AllVectors,
    built: &vector_index::Built,
    options: &ConsolidateOptions,
) -> Result<u64, Error> {
    // Both read every vector in nid order in this transaction, so they agree row for row.
    if built.assignment.len() != all.len() {
        return Err(Error::Index(ctxgraph_ann::Error::Shape {
            what: "assignment",
            detail: format!("{} lists for {} vectors", built.assignment.len(), all.len()),
        }));
    }
    let events: Vec<usize> = (0..all.len()).filter(|&i| all.keys[i].label == "Event").collect();
    let mut nids = Vec::with_capacity(events.len());
    let mut data = Vec::with_capacity(events.len() * all.dim);
    let mut assignment = Vec::with_capacity(events.len());
    let mut keys: BTreeMap<i64, &NodeKey> = BTreeMap::new();
    for &i in &events {
        nids.push(all.nids[i]);
        data.extend_from_slice(all.row(i));
        assignment.push(built.assignment[i]);
        keys.insert(all.nids[i], &all.keys[i]);
    }
    let join = JoinConfig {
        k: options.similar_k,
        threshold: options.similar_threshold,
        probes: options.similar_probes.max(1),
        threads: options.threads.max(1),
    };
    let pairs =
        ctxgraph_ann::similarity_join(&nids, &data, all.dim, &built.centroids, &assignment, &join)?;
    let mut written = 0;
    for (later, earlier, score) in pairs {
        let (Some(from), Some(to)) = (keys.get(&later), keys.get(&earlier)) else { continue };
        let mut props = Properties::new();
        // Three decimals: scores from int8 codes are not more precise than that, and a stable
        // rounding keeps the edge identical across thread counts and platforms.
        let score = (f64::from(score) * 1000.0).round() / 1000.0;
        props.insert("score".into(), score.clamp(0.0, 1.0).into());
        let key = schema.edge_key("SIMILAR_TO", (*from).clone(), (*to).clone(), &props);
        let edge = Edge { key, props };
        let violations = schema.check_edge(&edge);
        if !violations.is_empty() {
            return Err(Error::Validation(violations.into()));
        }
        w.put_edge(&edge)?;
        written += 1;
    }
    Ok(written)
}

/// Rebuild every session and day summary and their SUMMARIZES edges.
fn summarize<W: GraphStore + ?Sized>(
    schema: &Schema,
    w: &mut W,
    report: &mut ConsolidateReport,
) -> Result<(), Error> {
    w.delete_label("Summary")?;
    let mut days: BTreeMap<String, Day> = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let page = w.sessions(after.as_deref(), PAGE)?;
        let Some(last) = page.last().cloned() else { break };
        for session in &page {
            let slots = w.session_events(session, MAX_SESSION_EVENTS)?;
            let mut events = Vec::with_capacity(slots.len());
            for slot in &slots {
                if let Some(node) = w.node(&NodeKey::new("Event", &slot.event_id))? {
                    events.push((slot.at_ns, node));
                }
            }
            let (Some((t0, first)), Some((t1, last_event))) = (events.first(), events.last())
            else {
                continue;
            };
            let (first_at, last_at) =
                (text(first, "occurred_at").to_owned(), text(last_event, "occurred_at").to_owned());
            let failed = events.iter().filter(|(_, n)| text(n, "status") == "failed").count();
            let agents: std::collections::BTreeSet<&str> =
                events.iter().map(|(_, n)| text(n, "agent_id")).collect();
            let mut ranked: Vec<&(i64, Node)> = events.iter().collect();
            // Most important first; ties: failures, then earlier.
            ranked.sort_by_key(|(at, n)| {
                let importance =
                    n.props.get("importance_score").and_then(Value::as_i64).unwrap_or(0);
                (std::cmp::Reverse(importance), text(n, "status") != "failed", *at)
            });
            let highlights: Vec<String> = ranked
                .iter()
                .take(HIGHLIGHTS)
                .map(|(_, n)| {
                    let s = text(n, "summary");
                    if s.is_empty() { text(n, "event_type").to_owned() } else { s.to_owned() }
                })
                .collect();
            let agents_line = agents.into_iter().collect::<Vec<_>>().join(", ");
            let content = format!(
                "Session {session}: {} events by {agents_line}, {failed} failed. Highlights: {}",
                events.len(),
                highlights.join(" | ")
            );
            let key = NodeKey::new("Summary", format!("session:{session}"));
            write_summary(
                schema,
                w,
                &key,
                ("session", session),
                (&content, &indexed_words(&agents_line, &highlights)),
                events.len(),
                (&first_at, &last_at),
            )?;
            for (_, event) in &events {
                write_summarizes(schema, w, &key, &event.key)?;
                report.edges += 1;
            }
            report.sessions += 1;
            let date = chrono::DateTime::from_timestamp_nanos(*t0).date_naive().to_string();
            let day = days.entry(date).or_default();
            let weight = failed as f64 * 10.0 + events.len() as f64;
            day.sessions.push((
                key.id.clone(),
                weight,
                highlights.first().cloned().unwrap_or_default(),
            ));
            day.events += events.len() as u64;
            day.failed += failed as u64;
            if day.first.as_ref().is_none_or(|(t, _)| *t0 < *t) {
                day.first = Some((*t0, first_at.clone()));
            }
            if day.last.as_ref().is_none_or(|(t, _)| *t1 > *t) {
                day.last = Some((*t1, last_at.clone()));
            }
        }
        after = Some(last);
    }
    for (date, mut day) in days {
        let (Some((_, first)), Some((_, last))) = (&day.first, &day.last) else { continue };
        day.sessions.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let highlights: Vec<&str> =
            day.sessions.iter().take(HIGHLIGHTS).map(|(_, _, h)| h.as_str()).collect();
        let content = format!(
            "{date}: {} sessions, {} events, {} failed. Highlights: {}",
            day.sessions.len(),
            day.events,
            day.failed,
            highlights.join(" | ")
        );
        let key = NodeKey::new("Summary", format!("day:{date}"));
        let count = usize::try_from(day.events).unwrap_or(usize::MAX);
        let indexed = indexed_words("", &highlights);
        write_summary(schema, w, &key, ("day", &date), (&content, &indexed), count, (first, last))?;
        for (session_summary, _, _) in &day.sessions {
            write_summarizes(schema, w, &key, &NodeKey::new("Summary", session_summary.clone()))?;
            report.edges += 1;
        }
        report.days += 1;
    }
    Ok(())
}

/// The words a summary is found by: who acted and the highlights quoted, never its counts (a
/// summary saying "0 failed" must not answer a question about failures) nor its ids (which
/// recall resolves exactly, as anchors).
fn indexed_words<S: AsRef<str>>(agents: &str, highlights: &[S]) -> String {
    let quoted: Vec<&str> = highlights.iter().map(AsRef::as_ref).collect();
    format!("{agents}. {}", quoted.join(" | "))
}

/// Write a summary node: `content` is what it says, `indexed` what the full-text index finds
/// it by.
fn write_summary<W: GraphStore + ?Sized>(
    schema: &Schema,
    w: &mut W,
    key: &NodeKey,
    (scope, scope_id): (&str, &str),
    (content, indexed): (&str, &str),
    event_count: usize,
    (first, last): (&str, &str),
) -> Result<(), Error> {
    let mut p = Properties::new();
    p.insert("summary_id".into(), key.id.clone().into());
    p.insert("scope".into(), scope.into());
    p.insert("scope_id".into(), scope_id.into());
    p.insert("content".into(), content.into());
    // Deterministic "as of": the latest event summarised, never the wall clock.
    p.insert("created_at".into(), last.into());
    p.insert("event_count".into(), event_count.into());
    p.insert("time_range".into(), Value::Array(vec![first.into(), last.into()]));
    let node = Node { key: key.clone(), props: p };
    let violations = schema.check_node(&node);
    if !violations.is_empty() {
        return Err(Error::Validation(violations.into()));
    }
    w.put_node(&node)?;
    w.put_text(key, indexed)?;
    Ok(())
}

fn write_summarizes<W: GraphStore + ?Sized>(
    schema: &Schema,
    w: &mut W,
    from: &NodeKey,
    to: &NodeKey,
) -> Result<(), Error> {
    let props = Properties::new();
    let key = schema.edge_key("SUMMARIZES", from.clone(), to.clone(), &props);
    let edge = Edge { key, props };
    let violations = schema.check_edge(&edge);
    if !violations.is_empty() {
        return Err(Error::Validation(violations.into()));
    }
    w.put_edge(&edge)?;
    Ok(())
}
