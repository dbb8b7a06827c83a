//! Retention: which events stay in the graph as they age, and how fast their salience fades.
//!
//! Tiers, by the age of an event at the "as of" time (seed 000's table):
//!
//! | tier    | age         | what stays in the graph                                            |
//! |---------|-------------|--------------------------------------------------------------------|
//! | hot     | < 24 hours  | everything                                                         |
//! | warm    | 24 h–7 days | every node; SIMILAR_TO edges of low-importance events are pruned   |
//! | cold    | 7–30 days   | only events with importance ≥ 5 or access count ≥ 3                |
//! | archive | > 30 days   | nothing: the event leaves the graph, its record stays in the log   |
//!
//! Salience decays as `e^(-t/S)` (Ebbinghaus), `t` the age in days and the stability
//! `S = 7 days × (importance / 5) × (1 + access_count)`: an importance-5 event never read is at
//! 37% after a week, an importance-10 event read twice keeps 37% for six weeks.
//!
//! "As of" defaults to the newest event's time, not the clock, so applying retention is a
//! function of the log and the options: the same store gives the same result whenever it runs.
//! Archived events are remembered in the store's `archived` table (a scale-out store's archive
//! marks); reprojection leaves them out again, unless it is asked to bring them back
//! (`reproject --include-archive`).
//!
//! The pass runs in one write transaction: the store file's, or on a scale-out store a
//! retention transaction ([`RemoteStore::retain`]) applied as one watched commit, run again if
//! a worker moved the graph meanwhile.

use std::collections::BTreeSet;

use chrono::{DateTime, FixedOffset, SecondsFormat};
use ctxgraph_ontology::graph::{Direction, EdgeKey, Node, NodeKey};
use ctxgraph_projection::remove_event;
use ctxgraph_store::{GraphReader, RemoteStore, RetentionWrite, StoreError};
use serde_json::Value;

use crate::backend::Backend;
use crate::engine::Engine;
use crate::error::Error;

/// Events read per page.
const PAGE: usize = 10_000;
const NANOS_PER_HOUR: i64 = 3_600 * 1_000_000_000;
const NANOS_PER_DAY: i64 = 24 * NANOS_PER_HOUR;
/// Retention transactions tried on a scale-out store before giving up (each attempt that finds
/// the graph moved by a worker applies nothing).
const REMOTE_ATTEMPTS: usize = 8;

/// A retention tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// Younger than `hot_hours`: full detail.
    Hot,
    /// Younger than `warm_days`: full nodes, low-importance SIMILAR_TO edges pruned.
    Warm,
    /// Younger than `cold_days`: only important or often-read events.
    Cold,
    /// Older: out of the graph, kept in the log.
    Archive,
}

impl Tier {
    /// The tier's name.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
            Tier::Archive => "archive",
        }
    }
}

/// Retention settings (defaults: seed 000's table).
#[derive(Debug, Clone, PartialEq)]
pub struct RetentionOptions {
    /// The time ages are measured at; `None`: the newest event's `occurred_at`.
    pub as_of: Option<DateTime<FixedOffset>>,
    /// Upper age bound of the hot tier, in hours.
    pub hot_hours: i64,
    /// Upper age bound of the warm tier, in days.
    pub warm_days: i64,
    /// Upper age bound of the cold tier, in days.
    pub cold_days: i64,
    /// Least importance that keeps a cold event, and that keeps a warm event's SIMILAR_TO edges.
    pub min_importance: i64,
    /// Least access count that keeps a cold event.
    pub min_access: i64,
}

impl Default for RetentionOptions {
    fn default() -> Self {
        RetentionOptions {
            as_of: None,
            hot_hours: 24,
            warm_days: 7,
            cold_days: 30,
            min_importance: 5,
            min_access: 3,
        }
    }
}

impl RetentionOptions {
    /// The tier of an event `age_ns` old.
    pub fn tier(&self, age_ns: i64) -> Tier {
        if age_ns < self.hot_hours * NANOS_PER_HOUR {
            Tier::Hot
        } else if age_ns < self.warm_days * NANOS_PER_DAY {
            Tier::Warm
        } else if age_ns < self.cold_days * NANOS_PER_DAY {
            Tier::Cold
        } else {
            Tier::Archive
        }
    }
}

/// Salience of an item `age_days` old: `e^(-t/S)` with `S = 7 × (importance / 5) × (1 +
/// access_count)` days (importance clamped to 1–10). 1.0 when new, falling towards 0.
pub fn salience(age_days: f64, importance: i64, access_count: i64) -> f64 {
    let importance = importance.clamp(1, 10) as f64;
    let stability = 7.0 * (importance / 5.0) * (1.0 + access_count.max(0) as f64);
    (-age_days.max(0.0) / stability).exp()
}

/// What a retention pass found (and, unless planned only, did).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RetentionReport {
    /// The time ages were measured at (RFC 3339), if the graph has events.
    pub as_of: Option<String>,
    /// Events per tier before the pass: hot, warm, cold, archive.
    pub tiers: [u64; 4],
    /// Cold events kept for their importance or access count.
    pub cold_kept: u64,
    /// Events moved out of the graph.
    pub archived: u64,
    /// SIMILAR_TO edges pruned from warm (and cold) low-importance events.
    pub similar_pruned: u64,
}

/// One event as retention sees it.
struct Aged {
    key: NodeKey,
    session_id: String,
    at_ns: i64,
    importance: i64,
    access: i64,
}

impl Engine {
    /// What retention would do now, without doing it.
    pub fn retention_plan(&mut self, options: &RetentionOptions) -> Result<RetentionReport, Error> {
        self.retention_pass(options, false)
    }

    /// Apply the retention tiers in one transaction: archive old and cold unimportant events,
    /// prune SIMILAR_TO edges of warm low-importance ones. Idempotent.
    pub fn apply_retention(
        &mut self,
        options: &RetentionOptions,
    ) -> Result<RetentionReport, Error> {
        self.retention_pass(options, true)
    }

    /// One retention pass, committed when `apply` (a plan's transaction is dropped: nothing
    /// changes).
    fn retention_pass(
        &mut self,
        options: &RetentionOptions,
        apply: bool,
    ) -> Result<RetentionReport, Error> {
        let schema = &self.schema;
        match &mut self.backend {
            Backend::Embedded(store) => {
                let mut w = store.begin_write()?;
                let report = retain(schema, &mut w, options, apply)?;
                if apply {
                    w.commit()?;
                }
                Ok(report)
            }
            Backend::Remote(store) => {
                let run = &mut |w: &mut dyn RetentionWrite| retain(schema, w, options, apply);
                in_retention(store.as_ref(), "retention", apply, run)
            }
        }
    }
}

/// Run `run` in a retention transaction of a scale-out store, applied when `apply` (and `run`
/// succeeded); run again while a worker moved the graph under it.
pub(crate) fn in_retention<T>(
    store: &dyn RemoteStore,
    operation: &str,
    apply: bool,
    run: &mut dyn FnMut(&mut dyn RetentionWrite) -> Result<T, Error>,
) -> Result<T, Error> {
    if !store.retains() {
        return Err(Backend::unsupported_by(operation, store));
    }
    for _ in 0..REMOTE_ATTEMPTS {
        let mut outcome = None;
        let applied = store.retain(&mut |w| {
            let result = run(w);
            let commit = apply && result.is_ok();
            outcome = Some(result);
            Ok(commit)
        })?;
        match outcome {
            Some(Ok(value)) if applied || !apply => return Ok(value),
            Some(Err(e)) => return Err(e),
            // The graph moved: nothing was applied; read it again.
            Some(Ok(_)) => {}
            None => {
                return Err(Error::Store(StoreError::Corruption(format!(
                    "{}: the {operation} transaction did not run",
                    store.location()
                ))));
            }
        }
    }
    Err(Error::Store(StoreError::Remote {
        backend: "remote",
        detail: format!(
            "{}: the graph moved under {REMOTE_ATTEMPTS} {operation} transactions in a row; run \
             it again once the workers have caught up (rule: retention.graph_moved)",
            store.location()
        ),
    }))
}

pub(crate) fn retain(
    schema: &ctxgraph_ontology::Schema,
    w: &mut dyn RetentionWrite,
    options: &RetentionOptions,
    apply: bool,
) -> Result<RetentionReport, Error> {
    let events = aged_events(&|after, limit| w.nodes_of_label("Event", after, limit))?;
    let mut report = RetentionReport::default();
    let mut seen = BTreeSet::new();
    let Some((as_of_ns, as_of)) = measured_at(&events, options) else { return Ok(report) };
    for e in &events {
        let tier = options.tier(as_of_ns.saturating_sub(e.at_ns));
        report.tiers[tier as usize] += 1;
        let important = e.importance >= options.min_importance;
        let archive = match tier {
            Tier::Hot => false,
            Tier::Warm => {
                if !important {
                    report.similar_pruned += prune_similar(w, &e.key, apply, &mut seen)?;
                }
                false
            }
            Tier::Cold => {
                let keep = important || e.access >= options.min_access;
                report.cold_kept += u64::from(keep);
                if keep && !important {
                    report.similar_pruned += prune_similar(w, &e.key, apply, &mut seen)?;
                }
                !keep
            }
            Tier::Archive => true,
        };
        if archive {
            report.archived += 1;
            if apply {
                remove_event(schema, w, &e.key.id, &e.session_id, e.at_ns)?;
                w.mark_archived(&e.key, &as_of)?;
            }
        }
    }
    report.as_of = Some(as_of);
    Ok(report)
}

/// The time ages are measured at, in nanoseconds and as RFC 3339: the options', else the
/// newest event's; `None` when that is not given and there are no events.
fn measured_at(events: &[Aged], options: &RetentionOptions) -> Option<(i64, String)> {
    let ns = match options.as_of {
        Some(t) => t.timestamp_nanos_opt().unwrap_or(i64::MAX),
        None => events.iter().map(|e| e.at_ns).max()?,
    };
    let text = options.as_of.map_or_else(
        || {
            DateTime::from_timestamp_nanos(ns)
                .fixed_offset()
                .to_rfc3339_opts(SecondsFormat::AutoSi, true)
        },
        |t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true),
    );
    Some((ns, text))
}

/// The events of the graph per tier (hot, warm, cold, archive) as a retention pass would find
/// them now, with the time ages are measured at (a read: nothing changes), and how many events
/// earlier passes archived.
pub(crate) fn tier_counts(
    read: &(impl GraphReader + ?Sized),
    options: &RetentionOptions,
) -> Result<TierCounts, Error> {
    let events = aged_events(&|after, limit| read.nodes_by_label("Event", after, limit))?;
    let mut counts = TierCounts::default();
    if let Some((ns, as_of)) = measured_at(&events, options) {
        for e in &events {
            counts.tiers[options.tier(ns.saturating_sub(e.at_ns)) as usize] += 1;
        }
        counts.as_of = Some(as_of);
    }
    let mut after: Option<NodeKey> = None;
    loop {
        let page = read.archived(after.as_ref(), PAGE)?;
        let Some(last) = page.last() else { break };
        after = Some(last.key.clone());
        counts.archived += page.len() as u64;
    }
    Ok(counts)
}

/// Events per retention tier, read without changing anything (`Reader::retention_tiers`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TierCounts {
    /// The time ages were measured at (RFC 3339), if the graph has events.
    pub as_of: Option<String>,
    /// Events in the graph per tier: hot, warm, cold, archive (due to leave the graph).
    pub tiers: [u64; 4],
    /// Events earlier retention passes took out of the graph (kept in the log).
    pub archived: u64,
}

/// Delete the SIMILAR_TO edges touching an event; how many went that had not gone already in
/// this pass (`seen`: the edges a plan has counted, since a plan deletes nothing).
fn prune_similar(
    w: &mut dyn RetentionWrite,
    key: &NodeKey,
    apply: bool,
    seen: &mut BTreeSet<EdgeKey>,
) -> Result<u64, Error> {
    let mut pruned = 0;
    for edge in w.edges_of(key, Some("SIMILAR_TO"), Direction::Both)? {
        if apply {
            w.delete_edge(&edge.key)?;
            pruned += 1;
        } else if seen.insert(edge.key) {
            pruned += 1;
        }
    }
    Ok(pruned)
}

/// A page of the graph's events after an id, at most a number of them.
type EventPages<'a> = dyn Fn(Option<&str>, usize) -> Result<Vec<Node>, StoreError> + 'a;

/// Every event with what retention needs, in key order, read page by page from `pages`.
fn aged_events(pages: &EventPages<'_>) -> Result<Vec<Aged>, Error> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = pages(after.as_deref(), PAGE)?;
        let Some(last) = page.last().map(|n| n.key.id.clone()) else { break };
        for node in page {
            let text = |p: &str| node.props.get(p).and_then(Value::as_str).unwrap_or_default();
            let int = |p: &str| node.props.get(p).and_then(Value::as_i64);
            let Some(at_ns) = occurred_at(&node).and_then(|t| t.timestamp_nanos_opt()) else {
                continue;
            };
            out.push(Aged {
                session_id: text("session_id").to_owned(),
                at_ns,
                // Not yet enriched: neutral importance, so retention neither favours nor
                // punishes an event for enrichment lag.
                importance: int("importance_score").unwrap_or(5),
                access: int("access_count").unwrap_or(0),
                key: node.key,
            });
        }
        after = Some(last);
    }
    Ok(out)
}

/// An event's `occurred_at`, if it has a valid one.
pub(crate) fn occurred_at(node: &Node) -> Option<DateTime<FixedOffset>> {
    node.props
        .get("occurred_at")
        .and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
}

/// Re-apply the archive marks after a reprojection: archived events leave the graph again.
pub(crate) fn reapply_archive(
    schema: &ctxgraph_ontology::Schema,
    w: &mut dyn RetentionWrite,
) -> Result<u64, Error> {
    let mut removed = 0;
    let mut after: Option<NodeKey> = None;
    loop {
        let page = w.archive_marks(after.as_ref(), PAGE)?;
        let Some(last) = page.last().map(|a| a.key.clone()) else { break };
        for archived in page {
            let Some(node) = w.node(&archived.key)? else { continue };
            let text = |p: &str| node.props.get(p).and_then(Value::as_str).unwrap_or_default();
            let Some(at_ns) = occurred_at(&node).and_then(|t| t.timestamp_nanos_opt()) else {
                continue;
            };
            if remove_event(schema, w, &archived.key.id, text("session_id"), at_ns)? {
                removed += 1;
            }
        }
        after = Some(last);
    }
    Ok(removed)
}
