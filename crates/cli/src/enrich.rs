//! `ctxgraph enrich`, `reembed`, `consolidate` and `search`: stages 2 and 3 and the full-text index.

use std::io::Write;
use std::time::Instant;

use ctxgraph::{
    ConsolidateOptions, Engine, EngineOptions, EnrichReport, OpenMode, RetentionOptions,
    RetentionReport,
};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, ConsolidateArgs, RetentionArgs};
use crate::output::{describe_node_in, node_json, print_json, shorten, table};

/// Enrich with a progress bar on stderr (shared by `ingest`, `demo`, `reproject`).
pub(crate) fn with_progress(engine: &mut Engine, quiet: bool) -> anyhow::Result<EnrichReport> {
    let at = engine.owner_reader()?.checkpoints()?;
    let lag = at.enrichment_lag();
    let bar = crate::ingest::progress_bar(lag, "records enriched", quiet || lag == 0);
    let start = at.enriched_through;
    let report = engine.enrich(&mut |done, _| bar.set_position(done.saturating_sub(start)))?;
    bar.finish_and_clear();
    Ok(report)
}

/// Unindexed vectors after a load that make it rebuild the vector index (below this, exact
/// search of the new vectors costs a few milliseconds per query).
const INDEX_AFTER_LOAD: u64 = 20_000;

/// After `ingest` or `import`: enrich, then index the new vectors if there are many.
/// On a scale-out store nothing: its workers enrich and consolidate what they fold.
pub(crate) fn after_load(engine: &mut Engine, quiet: bool) -> anyhow::Result<()> {
    if engine.remote_location().is_some() {
        return Ok(());
    }
    with_progress(engine, quiet)?;
    // Vectors not in the index are searched exactly: after a bulk load, index them.
    let (_, unindexed) = engine.owner_reader()?.stats_vectors()?;
    if unindexed >= INDEX_AFTER_LOAD {
        if !quiet {
            eprintln!("indexing {unindexed} new vectors ...");
        }
        engine.index_vectors()?;
    }
    // Likewise documents outside the lexical index are ranked by the slower full-text index.
    let outside = engine.owner_reader()?.text_docs_outside_index()?;
    if outside >= ctxgraph::TEXT_INDEX_REBUILD_AFTER {
        if !quiet {
            eprintln!("indexing {outside} new documents for BM25 ...");
        }
        engine.index_text()?;
    }
    Ok(())
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
    let stats = engine.owner_reader()?.store_stats()?;
    let model = stats.embedding_model.as_ref().map(|(m, d)| format!("{m} ({d} dimensions)"));
    if cli.json {
        print_json(&json!({"records": report.records, "events": report.events,
            "nodes": report.nodes, "enriched_through": report.position, "seconds": secs,
            "embedding_model": model}))?;
    } else {
        writeln!(
            std::io::stdout(),
            "enriched {} and indexed {} facts, sentences, slot values, receipts and memories ({}) in {secs:.2}s; enriched through log position {}; model {}",
            crate::output::count(report.events, "event", "events"),
            report.nodes,
            crate::output::count(report.records, "record", "records"),
            report.position,
            model.as_deref().unwrap_or("none yet")
        )?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn consolidate(cli: &Cli, args: &ConsolidateArgs) -> anyhow::Result<Outcome> {
    if !(0.0..=1.0).contains(&args.similar_threshold) {
        anyhow::bail!(
            "--similar-threshold {} is out of range: a cosine threshold must be within [0, 1]",
            args.similar_threshold
        );
    }
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let started = Instant::now();
    let retention = if args.retention {
        let options = retention_options(args.as_of.as_deref())?;
        Some(engine.apply_retention(&options)?)
    } else {
        None
    };
    let options = ConsolidateOptions {
        similar_k: args.similar_k,
        similar_threshold: args.similar_threshold,
        ..ConsolidateOptions::default()
    };
    let r = engine.consolidate_with(&options)?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        let phases: serde_json::Map<String, Value> =
            r.seconds.iter().map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
        print_json(&json!({"session_summaries": r.sessions, "day_summaries": r.days,
            "summarizes_edges": r.edges, "indexed_vectors": r.indexed_vectors,
            "index_lists": r.index_lists, "similar_edges": r.similar_edges,
            "same_as_candidates": r.resolve.same_as, "related_to_edges": r.resolve.related_to,
            "retention": retention.as_ref().map(retention_json),
            "memory_links": r.memory_links.total(),
            "phase_seconds": phases, "seconds": secs}))?;
    } else {
        let mut out = std::io::stdout().lock();
        if let Some(t) = &retention {
            writeln!(out, "{}", retention_line(t, true))?;
        }
        writeln!(
            out,
            "{} session and {} day summaries, {} SUMMARIZES edges; vector index: {} vectors in {} lists; {} SIMILAR_TO edges; {} SAME_AS candidates and {} RELATED_TO edges over {} entities; in {secs:.2}s",
            r.sessions,
            r.days,
            r.edges,
            r.indexed_vectors,
            r.index_lists,
            r.similar_edges,
            r.resolve.same_as,
            r.resolve.related_to,
            r.resolve.entities
        )?;
        if r.memory_links.memories > 0 {
            writeln!(
                out,
                "{} memories indexed, {} automatic memory links",
                r.memory_links.memories,
                r.memory_links.total()
            )?;
        }
    }
    Ok(Outcome::Done)
}

/// Retention options from `--as-of` (RFC 3339, `now`, or absent: the newest event's time).
fn retention_options(as_of: Option<&str>) -> anyhow::Result<RetentionOptions> {
    let as_of = match as_of {
        None => None,
        Some("now") => Some(chrono::Utc::now().fixed_offset()),
        Some(t) => Some(chrono::DateTime::parse_from_rfc3339(t).map_err(|e| {
            anyhow::anyhow!("--as-of `{t}` is not an RFC 3339 time with offset or `now`: {e}")
        })?),
    };
    Ok(RetentionOptions { as_of, ..RetentionOptions::default() })
}

fn retention_json(r: &RetentionReport) -> Value {
    json!({"as_of": r.as_of, "hot": r.tiers[0], "warm": r.tiers[1], "cold": r.tiers[2],
        "archive": r.tiers[3], "cold_kept": r.cold_kept, "archived": r.archived,
        "similar_pruned": r.similar_pruned})
}

fn retention_line(r: &RetentionReport, applied: bool) -> String {
    let verb = if applied { "archived" } else { "would archive" };
    let prune = if applied { "pruned" } else { "would prune" };
    format!(
        "as of {}: {} hot, {} warm, {} cold ({} kept), {} past archive age; {verb} {} events, {prune} {} SIMILAR_TO edges",
        r.as_of.as_deref().unwrap_or("(no events)"),
        r.tiers[0],
        r.tiers[1],
        r.tiers[2],
        r.cold_kept,
        r.tiers[3],
        r.archived,
        r.similar_pruned
    )
}

pub(crate) fn retention(cli: &Cli, args: &RetentionArgs) -> anyhow::Result<Outcome> {
    let mut engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let options = retention_options(args.as_of.as_deref())?;
    let report = if args.apply {
        engine.apply_retention(&options)?
    } else {
        engine.retention_plan(&options)?
    };
    if cli.json {
        let mut v = retention_json(&report);
        v["applied"] = json!(args.apply);
        print_json(&v)?;
    } else {
        writeln!(std::io::stdout(), "{}", retention_line(&report, args.apply))?;
    }
    Ok(Outcome::Done)
}

pub(crate) fn search(
    cli: &Cli,
    query: &str,
    limit: usize,
    semantic: bool,
) -> anyhow::Result<Outcome> {
    ctxgraph::QuestionLimits::default().check("query", query)?;
    let engine = crate::open(cli, OpenMode::MustExist, EngineOptions::default())?;
    let who = crate::access::principal(cli)?;
    let snap = engine.reader(&who)?;
    let hits = if semantic {
        let vector = engine.embed_query(query)?;
        let near = snap.nearest(&vector, limit, engine.options().search)?;
        near.into_iter().map(|(n, s)| (n, f64::from(s))).collect()
    } else {
        snap.search(query, limit)?
    };
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
                let what = describe_node_in(&snap, n)?;
                t.add_row(vec![format!("{score:.2}"), n.key.to_string(), shorten(&what, 90)]);
            }
            writeln!(out, "{t}")?;
        }
    }
    Ok(if hits.is_empty() { Outcome::NotFound } else { Outcome::Done })
}
