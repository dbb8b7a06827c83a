//! `ctxgraph enrich`, `reembed`, `consolidate` and `search`: stages 2 and 3 and the full-text index.

use std::io::Write;
use std::time::Instant;

use ctxgraph::{Engine, EngineOptions, EnrichReport, OpenMode};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::Cli;
use crate::output::{describe_entity, describe_event, node_json, print_json, shorten, table};

/// Enrich with a progress bar on stderr (shared by `ingest`, `demo`, `reproject`).
pub(crate) fn with_progress(engine: &mut Engine, quiet: bool) -> anyhow::Result<EnrichReport> {
    let at = engine.snapshot()?.checkpoints()?;
    let lag = at.enrichment_lag();
    let bar = crate::ingest::progress_bar(lag, "records enriched", quiet || lag == 0);
    let start = at.enriched_through;
    let report = engine.enrich(&mut |done, _| bar.set_position(done.saturating_sub(start)))?;
    bar.finish_and_clear();
    Ok(report)
}

pub(crate) fn run(cli: &Cli, reembed: bool) -> anyhow::Result<Outcome> {
    let options = EngineOptions { accept_new_embedder: reembed, ..EngineOptions::default() };
    let mut engine = crate::open(cli, OpenMode::MustExist, options)?;
    let started = Instant::now();
    let report = if reembed {
        engine.reembed(&mut |_, _| {})?
    } else {
        with_progress(&mut engine, cli.json)?
    };
    let secs = started.elapsed().as_secs_f64();
    let stats = engine.snapshot()?.stats()?;
    let model = stats.embedding_model.as_ref().map(|(m, d)| format!("{m} ({d} dimensions)"));
    if cli.json {
        print_json(&json!({"records": report.records, "events": report.events,
            "enriched_through": report.position, "seconds": secs, "embedding_model": model}))?;
    } else {
        writeln!(
            std::io::stdout(),
            "enriched {} events ({} records) in {secs:.2}s; enriched through log position {}; model {}",
            report.events,
            report.records,
            report.position,
            model.as_deref().unwrap_or("none yet")
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn consolidate(cli: &Cli) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let started = Instant::now();
    let r = engine.consolidate()?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({"session_summaries": r.sessions, "day_summaries": r.days,
            "summarizes_edges": r.edges, "seconds": secs}))?;
    } else {
        writeln!(
            std::io::stdout(),
            "{} session and {} day summaries, {} SUMMARIZES edges, in {secs:.2}s",
            r.sessions,
            r.days,
            r.edges
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn search(cli: &Cli, query: &str, limit: usize) -> anyhow::Result<Outcome> {
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let snap = engine.snapshot()?;
    let hits = snap.search(query, limit)?;
    if cli.json {
        let list: Vec<Value> = hits
            .iter()
            .map(|(n, score)| {
                let mut v = node_json(n);
                v["score"] = json!(score);
                v
            })
            .collect();
        print_json(&Value::Array(list))?;
    } else {
        let mut out = std::io::stdout().lock();
        if hits.is_empty() {
            writeln!(out, "nothing matches `{query}`")?;
        } else {
            let mut t = table(&["score", "node", "what"]);
            for (n, score) in &hits {
                let what =
                    if n.key.label == "Event" { describe_event(n) } else { describe_entity(n) };
                t.add_row(vec![format!("{score:.2}"), n.key.to_string(), shorten(&what, 90)]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(if hits.is_empty() { Outcome::NotFound } else { Outcome::Done })
}
