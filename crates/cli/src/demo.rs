//! `ctxgraph demo`: ingest the bundled agent trace and explain one failure from the graph.

use std::io::Write;
use std::time::Instant;

use ctxgraph::{EngineOptions, IngestOptions, Node, OpenMode, Reader};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::Cli;
use crate::chain::{Explanation, explain};
use crate::output::{bytes, print_json};

/// The demo trace, produced by `ctxgraph generate --events 400 --seed 7` (see examples/README.md).
pub(crate) const DEMO_TRACE: &str = include_str!("../../../examples/demo-trace.jsonl");

pub(crate) fn run(cli: &Cli) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let started = Instant::now();
    let report =
        engine.ingest_jsonl(DEMO_TRACE.as_bytes(), &IngestOptions::default(), &mut |_| {})?;
    if crate::scale_out::store_url(cli)?.is_some() {
        // Appended only: fold it here, as the store's workers would, before stages 2 and 3.
        engine.catch_up(&mut |_, _| {})?;
    }
    crate::enrich::with_progress(&mut engine, cli.json)?;
    let summaries = engine.consolidate()?;
    let secs = started.elapsed().as_secs_f64();
    let snap = engine.owner_reader()?;
    let stats = snap.store_stats()?;
    let story = pick_failure(&snap)?;
    let explanation = match &story {
        Some(id) => explain(&snap, id)?,
        None => None,
    };
    if cli.json {
        print_json(&json!({
            "db": cli.db,
            "ingest": {"lines": report.progress.lines, "accepted": report.accepted,
                       "duplicates": report.progress.duplicates, "rejected": report.progress.rejected, "seconds": secs},
            "nodes": stats.nodes.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "edges": stats.edges.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "failure": explanation.as_ref().map(crate::chain::to_json),
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph demo — a recorded multi-agent trace, {} records, into {}\n",
        report.progress.lines,
        cli.db.display()
    )?;
    if report.accepted == 0 && report.progress.duplicates > 0 {
        writeln!(
            out,
            "All {} records were already stored: ingestion is idempotent by id, nothing was written.",
            report.progress.duplicates
        )?;
    } else {
        writeln!(
            out,
            "Ingested {} records in {secs:.2}s (validated, appended to the log, fsynced, projected, enriched).",
            report.accepted
        )?;
    }
    let nodes: Vec<String> = stats.nodes.iter().map(|(l, n)| format!("{n} {l}")).collect();
    let edges: Vec<String> = stats.edges.iter().map(|(t, n)| format!("{n} {t}")).collect();
    writeln!(
        out,
        "The graph: {}; {}. Store size {}.",
        nodes.join(", "),
        edges.join(", "),
        bytes(stats.bytes_on_disk)
    )?;
    writeln!(
        out,
        "Summarised {} over {} (the hierarchical view: ctxgraph view hierarchical).\n",
        crate::output::count(summaries.sessions, "session", "sessions"),
        crate::output::count(summaries.days, "day", "days")
    )?;
    drop(out);
    if let Some(x) = &explanation {
        crate::chain::print(x)?;
        try_next(cli, x)?;
    }
    Ok(Outcome::Done)
}

/// The failure with the most context: the longest causal chain, then the most effects, then the
/// smallest id, among failed events that something was done about.
fn pick_failure(snap: &Reader<'_>) -> anyhow::Result<Option<String>> {
    let mut best: Option<(usize, usize, String)> = None;
    let mut after: Option<String> = None;
    loop {
        let page = snap.events(after.as_deref(), 1000)?;
        let Some(last) = page.last() else { break };
        after = Some(last.key.id.clone());
        for e in page.iter().filter(|e| status(e) == Some("failed")) {
            let effects = snap.effects(&e.key.id, 50)?.len();
            if effects == 0 {
                continue;
            }
            let depth = snap.causes(&e.key.id)?.0.len();
            let better = match &best {
                None => true,
                Some((d, f, id)) => {
                    (depth, effects) > (*d, *f) || ((depth, effects) == (*d, *f) && e.key.id < *id)
                }
            };
            if better {
                best = Some((depth, effects, e.key.id.clone()));
            }
        }
    }
    Ok(best.map(|(_, _, id)| id))
}

fn status(node: &Node) -> Option<&str> {
    node.props.get("status").and_then(Value::as_str)
}

fn try_next(cli: &Cli, x: &Explanation) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    let Some(event) = x.chain.first() else { return Ok(()) };
    let session = event.props.get("session_id").and_then(Value::as_str).unwrap_or_default();
    let db = if cli.db.as_os_str() == "ctxgraph.ctxg" {
        String::new()
    } else {
        format!(" --db {}", cli.db.display())
    };
    writeln!(out, "\nTry next:")?;
    writeln!(
        out,
        "  ctxgraph{db} session {session}          # the whole session as a timeline with causal links"
    )?;
    if let Some((entity, _)) = x
        .entities
        .iter()
        .find(|(n, _)| n.props.get("entity_type").and_then(Value::as_str) == Some("service"))
    {
        writeln!(
            out,
            "  ctxgraph{db} neighbors '{}' --direction in   # every event that touched it",
            entity.key.id
        )?;
    }
    writeln!(
        out,
        "  ctxgraph{db} view causal --limit 10     # one of the five views: temporal, causal, entity, semantic, hierarchical"
    )?;
    writeln!(
        out,
        "  ctxgraph{db} stats                      # counts per node and edge type, log length, size"
    )?;
    Ok(())
}
