//! `ctxgraph bench`: measurements printed as a table (never timed assertions in tests).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{Engine, EngineOptions, IngestOptions, OpenMode, Projection};
use serde_json::json;

use crate::Outcome;
use crate::output::{bytes, print_json, table};

/// Opens timed to average the store's open cost.
const OPENS: u32 = 20;

struct Row {
    phase: &'static str,
    what: &'static str,
    count: u64,
    secs: f64,
}

/// The phases `ingest` times, for its progress lines.
const PHASES: usize = 4;

/// Time `work` (which returns how many records it handled) and add its row.
fn measure(
    rows: &mut Vec<Row>,
    phase: &'static str,
    what: &'static str,
    work: impl FnOnce() -> anyhow::Result<u64>,
) -> anyhow::Result<()> {
    eprintln!("phase {}/{PHASES}: {phase} ...", rows.len() + 1);
    let started = Instant::now();
    let count = work()?;
    rows.push(Row { phase, what, count, secs: started.elapsed().as_secs_f64() });
    Ok(())
}

pub(crate) fn ingest(
    events: usize,
    batch_size: usize,
    dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    let tmp = match dir {
        Some(d) => tempfile::Builder::new().prefix("ctxgraph-bench").tempdir_in(d),
        None => tempfile::Builder::new().prefix("ctxgraph-bench").tempdir(),
    }
    .context("creating a temporary directory for the bench stores")?;
    eprintln!("generating {events} synthetic events ...");
    let config = ctxgraph_synth::TraceConfig {
        events,
        seed: 42,
        agents: 8,
        users: 200,
        ..Default::default()
    };
    let mut text = String::with_capacity(events * 700);
    for e in ctxgraph_synth::trace(&config) {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    let input_bytes = text.len() as u64;
    let mut rows = Vec::new();

    // A: validate + append to the log, durable, projection deferred.
    let deferred_path = tmp.path().join("deferred.ctxg");
    let mut engine =
        Engine::open(&deferred_path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let deferred =
        IngestOptions { batch_size, projection: Projection::Deferred, ..IngestOptions::default() };
    measure(&mut rows, "log append", "parse + validate + append, fsync per batch", || {
        Ok(engine.ingest_jsonl(text.as_bytes(), &deferred, &mut |_| {})?.accepted)
    })?;
    // B: stage-1 projection of that log (what `reproject` does).
    measure(
        &mut rows,
        "stage-1 projection",
        "decode + project from the log, committed in chunks",
        || Ok(engine.catch_up(&mut |_, _| {})?.records),
    )?;
    // Stage 2 on the same store: keywords, importance, summary, embedding, full-text index.
    measure(
        &mut rows,
        "stage-2 enrichment",
        "keywords, importance, summary, embedding (built-in model), BM25 index",
        || Ok(engine.enrich(&mut |_, _| {})?.events),
    )?;
    drop(engine);

    // C: the real path, end to end, projection inline.
    let path = tmp.path().join("inline.ctxg");
    let mut engine = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let inline = IngestOptions { batch_size, ..IngestOptions::default() };
    measure(&mut rows, "end to end", "validate + append + project, fsync per batch", || {
        Ok(engine.ingest_jsonl(text.as_bytes(), &inline, &mut |_| {})?.accepted)
    })?;
    engine.checkpoint()?;
    let stats = engine.snapshot()?.stats()?;
    drop(engine);

    let t = Instant::now();
    for _ in 0..OPENS {
        let e = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
        drop(e);
    }
    let open_ms = t.elapsed().as_secs_f64() * 1000.0 / f64::from(OPENS);
    let per_event = stats.bytes_on_disk as f64 / events.max(1) as f64;
    let nodes: u64 = stats.nodes.iter().map(|(_, n)| n).sum();
    let edges: u64 = stats.edges.iter().map(|(_, n)| n).sum();

    if json {
        print_json(&json!({
            "events": events, "batch_size": batch_size, "input_bytes": input_bytes,
            "phases": rows.iter().map(|r| json!({"phase": r.phase, "what": r.what, "records": r.count,
                "seconds": r.secs, "per_second": r.count as f64 / r.secs})).collect::<Vec<_>>(),
            "bytes_on_disk": stats.bytes_on_disk, "bytes_per_event": per_event,
            "nodes": nodes, "edges": edges, "open_ms": open_ms,
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph bench ingest: {events} events ({} of JSONL), batch {batch_size}, durability on (fsync per batch)",
        bytes(input_bytes)
    )?;
    let mut t = table(&["phase", "what is timed", "records", "seconds", "records/s"]);
    for r in &rows {
        t.add_row(vec![
            r.phase.to_owned(),
            r.what.to_owned(),
            r.count.to_string(),
            format!("{:.2}", r.secs),
            format!("{:.0}", r.count as f64 / r.secs),
        ]);
    }
    writeln!(out, "{t}")?;
    let mut t = table(&["store", "value"]);
    t.add_row(vec!["size on disk".to_owned(), bytes(stats.bytes_on_disk)]);
    t.add_row(vec!["bytes per event".to_owned(), format!("{per_event:.0}")]);
    t.add_row(vec!["nodes / edges".to_owned(), format!("{nodes} / {edges}")]);
    t.add_row(vec!["time to open".to_owned(), format!("{open_ms:.2} ms")]);
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}
