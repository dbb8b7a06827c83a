//! Stage 3, the hierarchical view: per-session and per-day Summary nodes, extractive, linked by
//! SUMMARIZES (a session summary summarises its events; a day summary summarises the session
//! summaries of the sessions that began that day, UTC).
//!
//! Summaries are derived data: `consolidate` deletes them and builds them again from the graph,
//! so the result depends only on the log (and the enrichment that ranks highlights), never on
//! when or how often it runs. `created_at` is the latest `occurred_at` summarised, not the clock.

use std::collections::BTreeMap;

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Edge, Node, NodeKey, Properties};
use ctxgraph_store::{GraphReader, GraphStore};
use serde_json::Value;

use crate::engine::Engine;
use crate::error::Error;

/// Session ids read per page.
const PAGE: usize = 1_000;
/// Most events summarised per session (a session longer than this is summarised by its first
/// events; the count still covers all of them).
const MAX_SESSION_EVENTS: usize = 100_000;
/// Highlights quoted in a summary.
const HIGHLIGHTS: usize = 3;

/// What a consolidation did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConsolidateReport {
    /// Session summaries written.
    pub sessions: u64,
    /// Day summaries written.
    pub days: u64,
    /// SUMMARIZES edges written.
    pub edges: u64,
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
    /// Rebuild every session and day summary and their SUMMARIZES edges, in one transaction.
    pub fn consolidate(&mut self) -> Result<ConsolidateReport, Error> {
        let mut report = ConsolidateReport::default();
        let schema = &self.schema;
        let mut w = self.store.begin_write()?;
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
                let (first_at, last_at) = (
                    text(first, "occurred_at").to_owned(),
                    text(last_event, "occurred_at").to_owned(),
                );
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
                let content = format!(
                    "Session {session}: {} events by {}, {failed} failed. Highlights: {}",
                    events.len(),
                    agents.into_iter().collect::<Vec<_>>().join(", "),
                    highlights.join(" | ")
                );
                let key = NodeKey::new("Summary", format!("session:{session}"));
                write_summary(
                    schema,
                    &mut w,
                    &key,
                    "session",
                    session,
                    &content,
                    events.len(),
                    (&first_at, &last_at),
                )?;
                for (_, event) in &events {
                    write_summarizes(schema, &mut w, &key, &event.key)?;
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
            write_summary(schema, &mut w, &key, "day", &date, &content, count, (first, last))?;
            for (session_summary, _, _) in &day.sessions {
                write_summarizes(
                    schema,
                    &mut w,
                    &key,
                    &NodeKey::new("Summary", session_summary.clone()),
                )?;
                report.edges += 1;
            }
            report.days += 1;
        }
        w.commit()?;
        Ok(report)
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site per summary kind; a struct would only rename them"
)]
fn write_summary(
    schema: &Schema,
    w: &mut ctxgraph_store::EmbeddedWrite<'_>,
    key: &NodeKey,
    scope: &str,
    scope_id: &str,
    content: &str,
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
    w.put_text(key, content)?;
    Ok(())
}

fn write_summarizes(
    schema: &Schema,
    w: &mut ctxgraph_store::EmbeddedWrite<'_>,
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
