//! The commands that run on the scale-out backend (`redis://HOST:PORT/NAME`, docs/scale-out.md):
//! `migrate` copies a store file's log there and folds it into the graph (or a scale-out
//! store's log into a new store file), `worker` folds new records as they arrive (or, with
//! `--stage enrich`, enriches what was folded; `--stage consolidate`, `consolidate.rs`, runs
//! stage 3 when stage 2 moved), and `stats` reports the log head, the graph and the lag of the
//! stages.

pub(crate) mod admin;
mod consolidate;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ctxgraph::{EngineOptions, OpenMode};
use ctxgraph_scaleout::{
    ConsumerName, FalkorGraph, GroupState, LogConsumer, PROJECTION_GROUP, RedisLog, StoreUrl,
    Worker, catch_up, load_schema,
};
use ctxgraph_store::{GraphCounts, GraphReader, LogReader};
use serde_json::{Value, json};

use crate::Outcome;
use crate::args::{Cli, MigrateArgs, WorkerArgs, WorkerStage};
use crate::output::{print_json, table};

/// Log records read from the store file and sent to Redis at a time.
const COPY_PAGE: usize = 5_000;

/// Records a worker folds per round between progress lines and looks at a stop request.
const FOLD_ROUND: usize = 1_000;

/// The scale-out store `--db` names, if it names one.
pub(crate) fn store_url(cli: &Cli) -> anyhow::Result<Option<StoreUrl>> {
    match cli.db.to_str() {
        Some(text) if text.starts_with("redis://") => {
            Ok(Some(StoreUrl::parse(text).map_err(|e| anyhow::anyhow!("--db: {e}"))?))
        }
        _ => Ok(None),
    }
}

/// `ctxgraph migrate FROM TO`: a store file's log copied to an empty scale-out store at the same
/// positions, ids, times and bodies, then folded into its graph (unless `--no-fold`).
pub(crate) fn migrate(cli: &Cli, args: &MigrateArgs) -> anyhow::Result<Outcome> {
    if args.from.starts_with("redis://") {
        return migrate_back(cli, args);
    }
    let to = StoreUrl::parse(&args.to).map_err(|e| anyhow::anyhow!("migrate: TO: {e}"))?;
    let from = Path::new(&args.from);
    let engine = ctxgraph::Engine::open(from, OpenMode::MustExist, EngineOptions::default())
        .with_context(|| format!("opening store {}", from.display()))?;
    let mut log = RedisLog::connect(&to)?;
    refuse_taken(
        &to,
        "migrate: TO",
        "migrate copies a store into an empty scale-out store only; choose another NAME \
         (rule: migrate.target_not_empty)",
    )?;
    let started = Instant::now();
    let copied = copy_log_to(cli, &engine, from, &mut log)?;
    let copy_secs = started.elapsed().as_secs_f64();
    drop(engine);

    let schema = load_schema(&log)?;
    let graph = FalkorGraph::connect(&to, &schema)?;
    let fold_started = Instant::now();
    let mut folded = 0u64;
    if !args.no_fold {
        if !cli.json {
            eprintln!("copied {copied} records in {copy_secs:.1} s; folding them into the graph");
        }
        let bar = crate::ingest::progress_bar(copied, "records", cli.json);
        loop {
            let n = catch_up(&schema, &log, &graph, FOLD_ROUND)?;
            if n == 0 {
                break;
            }
            folded += n;
            bar.set_position(folded);
        }
        bar.finish_and_clear();
    }
    let fold_secs = fold_started.elapsed().as_secs_f64();
    let counts = graph.counts()?;
    if cli.json {
        print_json(&json!({
            "from": from, "to": to.to_string(), "records_copied": copied,
            "records_folded": folded, "projected_through": graph.projected_through()?,
            "copy_seconds": copy_secs, "fold_seconds": fold_secs,
            "nodes": count_map(&counts.nodes), "edges": count_map(&counts.edges),
            "pending_edges": counts.pending_edges,
        }))?;
    } else {
        let nodes: u64 = counts.nodes.iter().map(|(_, n)| n).sum();
        let edges: u64 = counts.edges.iter().map(|(_, n)| n).sum();
        println!("migrated {copied} records to {to} ({}/s)", rate(copied, copy_secs));
        if args.no_fold {
            println!("the graph is empty until a worker folds the log: ctxgraph --db {to} worker");
        } else {
            println!(
                "folded {folded} records into its graph ({}/s): {nodes} nodes, {edges} edges",
                rate(folded, fold_secs)
            );
        }
    }
    Ok(Outcome::Done)
}

/// Refuse a scale-out store whose log or graph is not empty (the commands that write only to
/// new stores: migrate, restore, the benches, the evaluations): `what` names the argument,
/// `then` says what the command writes to, with its rule. Reads only: the graph's indexes are
/// created by the command that writes it, not by this check.
pub(crate) fn refuse_taken(to: &StoreUrl, what: &str, then: &str) -> anyhow::Result<()> {
    let head = RedisLog::connect(to).with_context(|| format!("connecting to {to}"))?.head()?;
    let graph_through = FalkorGraph::connect_read(to)?.projected_through()?;
    if head > 0 || graph_through > 0 {
        bail!(
            "{what} `{to}` is not empty (its log holds {head} records, its graph is projected through \
             position {graph_through}): {then}"
        );
    }
    Ok(())
}

/// Copy the log of the store file `engine` (opened from `from`) into `log` at the same
/// positions, ids, times and bodies, with a progress bar; how many records.
pub(crate) fn copy_log_to(
    cli: &Cli,
    engine: &ctxgraph::Engine,
    from: &Path,
    log: &mut RedisLog,
) -> anyhow::Result<u64> {
    let reader = engine.owner_reader()?;
    let records = reader.checkpoints()?.log_length;
    if !cli.json {
        eprintln!("copying {records} log records from {} to {}", from.display(), log.url());
    }
    let bar = crate::ingest::progress_bar(records, "records", cli.json);
    let mut copied = 0u64;
    loop {
        let page = reader.log(copied + 1, COPY_PAGE)?;
        if page.is_empty() {
            break;
        }
        copied += log.import(&page)?;
        bar.set_position(copied);
    }
    bar.finish_and_clear();
    Ok(copied)
}

/// `ctxgraph migrate redis://… FILE`: a scale-out store's log copied into a new store file at
/// the same positions, ids, times and bodies, then projected, enriched and consolidated by the
/// embedded engine (the store file then holds what a store built from that log holds).
fn migrate_back(cli: &Cli, args: &MigrateArgs) -> anyhow::Result<Outcome> {
    let from = StoreUrl::parse(&args.from).map_err(|e| anyhow::anyhow!("migrate: FROM: {e}"))?;
    let to = Path::new(&args.to);
    if args.to.starts_with("redis://") {
        bail!(
            "migrate: FROM and TO are both scale-out stores: one of them must be a store file \
             (rule: migrate.direction_unsupported)"
        );
    }
    if to.exists() {
        bail!(
            "migrate: TO `{}` exists: migrate builds a new store file; pass a path that does not \
             exist (rule: migrate.target_not_empty)",
            to.display()
        );
    }
    let started = Instant::now();
    let (copied, report, copy_secs, engine) = copy_back(cli, &from, to)?;
    let secs = started.elapsed().as_secs_f64();
    let stats = engine.owner_reader()?.store_stats()?;
    if cli.json {
        print_json(&json!({
            "from": from.to_string(), "to": to, "records_copied": copied,
            "records_folded": report.records, "projected_through": stats.projected_through,
            "copy_seconds": copy_secs, "seconds": secs,
            "nodes": count_map(&stats.nodes), "edges": count_map(&stats.edges),
            "pending_edges": stats.pending_edges,
        }))?;
    } else {
        println!(
            "migrated {copied} records from {from} to {} ({}/s); projected, enriched and \
             consolidated in {secs:.1} s",
            to.display(),
            rate(copied, copy_secs)
        );
    }
    Ok(Outcome::Done)
}

/// A scale-out store's log copied into the new store file `to` at the same positions, ids,
/// times and bodies, then projected, enriched and consolidated by the embedded engine: the
/// records copied, the fold's report, the copy's seconds and the store file's engine. A copy
/// that fails leaves no file.
pub(crate) fn copy_back(
    cli: &Cli,
    from: &StoreUrl,
    to: &Path,
) -> anyhow::Result<(u64, ctxgraph::ReprojectReport, f64, ctxgraph::Engine)> {
    let started = Instant::now();
    let log = RedisLog::connect(from)?;
    let records = log.head()?;
    if !cli.json {
        eprintln!("copying {records} log records from {from} to {}", to.display());
    }
    let mut engine =
        ctxgraph::Engine::open(to, OpenMode::CreateIfMissing, EngineOptions::default())
            .with_context(|| format!("creating store {}", to.display()))?;
    let bar = crate::ingest::progress_bar(records, "records", cli.json);
    let mut copied = 0u64;
    let copy = (|| -> anyhow::Result<()> {
        loop {
            let page = log.read_from(copied + 1, COPY_PAGE)?;
            if page.is_empty() {
                return Ok(());
            }
            copied += engine.import_log(&page)?;
            bar.set_position(copied);
        }
    })();
    bar.finish_and_clear();
    drop(engine);
    if let Err(e) = copy {
        // Nothing half-made is left behind to be mistaken for a store.
        let _ = std::fs::remove_file(to);
        return Err(e);
    }
    let copy_secs = started.elapsed().as_secs_f64();
    // Opened again, the store loads the schema modules the copied log holds.
    let options = crate::with_embedder(cli, EngineOptions::default())?;
    let mut engine = ctxgraph::Engine::open(to, OpenMode::MustExist, options)
        .with_context(|| format!("opening store {}", to.display()))?;
    let bar = crate::ingest::progress_bar(copied, "records", cli.json);
    let report = engine.catch_up(&mut |done, _| bar.set_position(done))?;
    bar.finish_and_clear();
    crate::enrich::with_progress(&mut engine, cli.json)?;
    engine.consolidate()?;
    Ok((copied, report, copy_secs, engine))
}

/// `ctxgraph --db redis://… drop --yes`: every key of the store deleted on the instance that
/// holds it, then the server's persistence rewritten.
pub(crate) fn drop_store(cli: &Cli, yes: bool) -> anyhow::Result<Outcome> {
    let Some(url) = store_url(cli)? else {
        bail!(
            "drop: --db `{}` is a store file: delete the file (with its -wal and -shm files); \
             drop deletes a scale-out store, --db redis://HOST:PORT/NAME (rule: drop.backend)",
            cli.db.display()
        );
    };
    let mut log = RedisLog::connect(&url).with_context(|| format!("connecting to {url}"))?;
    let records = log.head()?;
    if !yes {
        bail!(
            "drop: deleting the store {} on {} ({records} log records, its graph and everything \
             derived) cannot be undone: pass --yes to delete it (rule: drop.confirm)",
            url.name(),
            url.instance()
        );
    }
    let keys = log.delete_store()?;
    if cli.json {
        print_json(&json!({"store": url.name(), "instance": url.instance(), "records": records,
            "keys_deleted": keys}))?;
    } else {
        println!(
            "dropped the store {} on {}: {records} log records, {keys} keys deleted; the \
             server's append-only file or snapshot rewritten",
            url.name(),
            url.instance()
        );
    }
    Ok(Outcome::Done)
}

/// `ctxgraph worker`: fold the log of a scale-out store into its graph as records arrive, until
/// Ctrl-C or SIGTERM, or with `--once` until the graph reaches the log's head.
pub(crate) fn worker(cli: &Cli, args: &WorkerArgs) -> anyhow::Result<Outcome> {
    let Some(url) = store_url(cli)? else {
        bail!(
            "worker: --db `{}` is a store file, whose graph is projected as records are \
             written; a worker folds a scale-out store: --db redis://HOST:PORT/NAME \
             (rule: worker.backend)",
            cli.db.display()
        );
    };
    let name = match &args.name {
        Some(name) => name.clone(),
        None => default_name(),
    };
    if args.stage == WorkerStage::Enrich {
        return enrich_worker(cli, args, &url, &name);
    }
    if args.stage == WorkerStage::Consolidate {
        return consolidate::consolidate_worker(cli, args, &url, &name);
    }
    let consumer_name = ConsumerName::parse(&name).map_err(|e| anyhow::anyhow!("--name: {e}"))?;
    let group = ConsumerName::parse(PROJECTION_GROUP)?;
    // Before any connection: the threads started from here on keep the signals off too.
    let stop = stop_on_signal()?;
    let log = RedisLog::connect(&url)?;
    let mut schema_records = log.read_kind(ctxgraph_ontology::RecordKind::Schema)?.len();
    let mut schema = load_schema(&log)?;
    let mut graph = FalkorGraph::connect(&url, &schema)?;
    let consumer = LogConsumer::join(&url, &group, &consumer_name)?;
    let mut worker =
        Worker::new(consumer, Duration::from_secs(args.claim_after)).with_fold_limit(FOLD_ROUND);
    if !cli.json {
        eprintln!("worker {name} folding {url} (group {PROJECTION_GROUP}); Ctrl-C stops it");
    }
    let started = Instant::now();
    let (mut folded, mut rounds, mut behind) = (0u64, 0u64, true);
    while !stop.load(Ordering::SeqCst) {
        // A schema module added since the last round changes what later records may say.
        let now = log.read_kind(ctxgraph_ontology::RecordKind::Schema)?.len();
        if now != schema_records {
            schema = load_schema(&log)?;
            graph.ensure_schema(&schema)?;
            schema_records = now;
        }
        let wait = if args.once || behind { None } else { Some(Duration::from_secs(1)) };
        let n = worker.step(&schema, &log, &graph, wait)?;
        rounds += 1;
        folded += n;
        behind = n > 0;
        if n > 0 && !cli.json {
            eprintln!(
                "folded {n} records (graph through {} of log head {})",
                graph.projected_through()?,
                log.head()?
            );
        }
        if args.once && n == 0 && worker.state()?.lag == 0 {
            break;
        }
    }
    let through = graph.projected_through()?;
    let head = log.head()?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({
            "name": name, "records_folded": folded, "rounds": rounds, "seconds": secs,
            "projected_through": through, "log_head": head,
            "stopped_by_signal": stop.load(Ordering::SeqCst),
        }))?;
    } else {
        println!(
            "worker {name}: folded {folded} records in {secs:.1} s; graph through {through} of \
             log head {head}"
        );
    }
    Ok(Outcome::Done)
}

/// `ctxgraph worker --stage enrich`: enrich the graph of a scale-out store from its stage-2
/// checkpoint up to the graph's checkpoint, round after round, until Ctrl-C or SIGTERM (or,
/// with `--once`, once it is there). Each chunk commits with the checkpoint, watched, so a
/// chunk is applied once however many enrichment workers run; the log's order is the
/// checkpoint's, so no consumer group is needed.
fn enrich_worker(
    cli: &Cli,
    args: &WorkerArgs,
    url: &StoreUrl,
    name: &str,
) -> anyhow::Result<Outcome> {
    // Before any connection: the threads started from here on keep the signals off too.
    let stop = stop_on_signal()?;
    let log = RedisLog::connect(url)?;
    let mut schema_records = log.read_kind(ctxgraph_ontology::RecordKind::Schema)?.len();
    let mut engine = crate::backend::open_remote(url, EngineOptions::default())?;
    if !cli.json {
        eprintln!("worker {name} enriching {url}; Ctrl-C stops it");
    }
    let started = Instant::now();
    let (mut enriched, mut events, mut rounds) = (0u64, 0u64, 0u64);
    while !stop.load(Ordering::SeqCst) {
        // A schema module the graph folded since changes what its records may say.
        let now = log.read_kind(ctxgraph_ontology::RecordKind::Schema)?.len();
        if now != schema_records {
            engine = crate::backend::open_remote(url, EngineOptions::default())?;
            schema_records = now;
        }
        let quiet = cli.json;
        let report = engine.enrich(&mut |last, target| {
            if !quiet {
                eprintln!("enriched through {last} (graph through {target})");
            }
        })?;
        rounds += 1;
        enriched += report.records;
        events += report.events;
        if args.once {
            break;
        }
        if report.records == 0 {
            // Nothing folded since: look again in a second, or stop when asked.
            for _ in 0..10 {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    let at = engine.owner_reader()?.checkpoints()?;
    let secs = started.elapsed().as_secs_f64();
    if cli.json {
        print_json(&json!({
            "name": name, "stage": "enrich", "records_enriched": enriched,
            "events_enriched": events, "rounds": rounds, "seconds": secs,
            "enriched_through": at.enriched_through, "projected_through": at.projected_through,
            "log_head": at.log_length, "stopped_by_signal": stop.load(Ordering::SeqCst),
        }))?;
    } else {
        println!(
            "worker {name}: enriched {enriched} records ({events} events) in {secs:.1} s; \
             enriched through {} of graph through {}",
            at.enriched_through, at.projected_through
        );
    }
    Ok(Outcome::Done)
}

/// `ctxgraph stats` on a scale-out store: the log head, the graph's checkpoint and counts, the
/// projection's lag, and the projection group's pending entries. Reads only: it creates no
/// consumer group (the graph's indexes are made when missing, as by every connection).
pub(crate) fn stats(cli: &Cli, url: &StoreUrl) -> anyhow::Result<Outcome> {
    let log = RedisLog::connect(url)?;
    let head = log.head()?;
    let schema = load_schema(&log)?;
    let graph = FalkorGraph::connect(url, &schema)?;
    let through = graph.projected_through()?;
    let enriched = GraphReader::enriched_through(&graph)?;
    let consolidated = graph.consolidated_through()?;
    let (vectors, _) = graph.vector_counts()?;
    let counts = graph.counts()?;
    let group = LogConsumer::group_state(url, &ConsumerName::parse(PROJECTION_GROUP)?)?;
    let lag = head.saturating_sub(through);
    if cli.json {
        print_json(&json!({
            "backend": "redis", "store": url.to_string(), "instance": url.instance(),
            "log_length": head,
            "projected_through": through, "projection_lag": lag,
            "enriched_through": enriched, "enrichment_lag": through.saturating_sub(enriched),
            "consolidated_through": consolidated, "vectors": vectors,
            "nodes": count_map(&counts.nodes), "edges": count_map(&counts.edges),
            "pending_edges": counts.pending_edges,
            "projection_group": group.map(group_json),
        }))?;
        return Ok(Outcome::Done);
    }
    let mut t = table(&["", "count"]);
    t.add_row(vec!["log records".to_owned(), head.to_string()]);
    t.add_row(vec!["graph projected through".to_owned(), through.to_string()]);
    t.add_row(vec!["projection lag".to_owned(), lag.to_string()]);
    t.add_row(vec!["graph enriched through".to_owned(), enriched.to_string()]);
    t.add_row(vec!["enrichment lag".to_owned(), through.saturating_sub(enriched).to_string()]);
    t.add_row(vec!["graph consolidated through".to_owned(), consolidated.to_string()]);
    t.add_row(vec!["vectors".to_owned(), vectors.to_string()]);
    match group {
        Some(g) => {
            t.add_row(vec!["workers: pending entries".to_owned(), g.pending.to_string()]);
            t.add_row(vec!["workers: entries not yet delivered".to_owned(), g.lag.to_string()]);
        }
        None => {
            t.add_row(vec!["workers".to_owned(), "none has joined".to_owned()]);
        }
    }
    add_counts(&mut t, &counts);
    // Of several instances listed, the one that holds this store.
    let on =
        if url.instance_count() > 1 { format!(" (on {})", url.instance()) } else { String::new() };
    println!("{url}{on}\n{t}");
    Ok(Outcome::Done)
}

fn add_counts(t: &mut comfy_table::Table, counts: &GraphCounts) {
    for (label, n) in &counts.nodes {
        t.add_row(vec![format!("nodes: {label}"), n.to_string()]);
    }
    for (edge_type, n) in &counts.edges {
        t.add_row(vec![format!("edges: {edge_type}"), n.to_string()]);
    }
    t.add_row(vec!["edges waiting for an endpoint".to_owned(), counts.pending_edges.to_string()]);
}

fn group_json(g: GroupState) -> Value {
    json!({"name": PROJECTION_GROUP, "pending": g.pending, "undelivered": g.lag,
           "delivered_through": g.delivered_through})
}

fn count_map(counts: &[(String, u64)]) -> serde_json::Map<String, Value> {
    counts.iter().map(|(k, v)| (k.clone(), json!(v))).collect()
}

fn rate(n: u64, secs: f64) -> String {
    if secs > 0.0 { format!("{:.0}", n as f64 / secs) } else { "-".to_owned() }
}

/// `HOST-PID`, cut to a consumer name's length and alphabet: unique among live workers.
fn default_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .unwrap_or_else(|| "worker".to_owned());
    let host: String = host
        .trim()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(40)
        .collect();
    let host = if host.is_empty() { "worker".to_owned() } else { host };
    format!("{host}-{}", std::process::id())
}

/// A flag set on Ctrl-C or SIGTERM; the worker finishes its round, then stops.
fn stop_on_signal() -> anyhow::Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    // The handlers are installed before the worker starts, so a signal is never missed.
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let signal = ctxgraph_server::shutdown_signal();
            tokio::pin!(signal);
            // Poll once so that the handlers are registered, then say so.
            tokio::select! {
                biased;
                () = &mut signal => {}
                () = std::future::ready(()) => {
                    let _ = ready_tx.send(());
                    signal.await;
                }
            }
            flag.store(true, Ordering::SeqCst);
        });
    });
    ready_rx.recv().context("the signal handler thread stopped before it started")?;
    keep_signals_off_this_thread()?;
    Ok(stop)
}

/// Block Ctrl-C and SIGTERM on the calling thread (and the threads it starts later), so the
/// kernel hands them to the signal thread: a signal landing on this thread would cut a blocking
/// read from the server short ("Interrupted system call") instead of letting the round finish.
#[cfg(unix)]
fn keep_signals_off_this_thread() -> anyhow::Result<()> {
    use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
    let mut set = SigSet::empty();
    set.add(Signal::SIGINT);
    set.add(Signal::SIGTERM);
    pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)
        .context("keeping Ctrl-C and SIGTERM off the worker's thread")
}

#[cfg(not(unix))]
fn keep_signals_off_this_thread() -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_worker_name_is_a_valid_consumer_name_ending_in_the_pid() {
        let name = default_name();
        assert!(ConsumerName::parse(&name).is_ok(), "{name}");
        assert!(name.ends_with(&format!("-{}", std::process::id())), "{name}");
    }

    #[test]
    fn a_store_file_is_not_a_scale_out_store() {
        use clap::Parser;
        let cli = Cli::parse_from(["ctxgraph", "--db", "redis.ctxg", "stats"]);
        assert!(store_url(&cli).unwrap().is_none());
        let cli = Cli::parse_from(["ctxgraph", "--db", "redis://h:7/team", "stats"]);
        assert_eq!(store_url(&cli).unwrap().unwrap().to_string(), "redis://h:7/team");
        let cli = Cli::parse_from(["ctxgraph", "--db", "redis://h:7/a/b", "stats"]);
        assert!(store_url(&cli).unwrap_err().to_string().contains("url.store_name"));
    }
}
