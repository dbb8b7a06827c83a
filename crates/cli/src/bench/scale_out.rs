//! `ctxgraph bench ingest --db redis://HOST:PORT/NAME --workers N`: ingestion through the
//! scale-out backend. A writer appends generated events to the stores' Redis logs in batches;
//! N projection workers (threads of this process, each with its own connections, consumer and
//! graph handle, as `ctxgraph worker` processes would have) fold them into FalkorDB.
//!
//! One store's fold is ordered (a page commits only at the checkpoint where it began), so two
//! workers on one store do not fold it faster: the workload is spread over several stores
//! (tenants), each folded by one worker, and the same stores are used whatever the number of
//! workers so that runs with 1 and 2 workers do the same work.

use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_scaleout::{
    ConsumerName, FalkorGraph, LogConsumer, PROJECTION_GROUP, RedisLog, StoreUrl, Worker,
    load_schema,
};
use ctxgraph_store::LogReader;
use serde_json::json;

use super::cpu_seconds;
use crate::Outcome;
use crate::output::{print_json, table};

/// Records a worker folds from one store before it turns to its next store.
const ROUND: usize = 2_000;
/// How long a worker waits when none of its stores has anything new.
const IDLE: Duration = Duration::from_millis(2);
/// Entries idle this long are another worker's to claim (none die in a bench).
const CLAIM_AFTER: Duration = Duration::from_secs(60);

/// What `bench ingest` on a scale-out store was asked for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Args {
    /// Events in all, spread evenly over the stores.
    pub(crate) events: usize,
    /// Records per append (one server-side script per 1,000).
    pub(crate) batch_size: usize,
    /// Worker threads folding.
    pub(crate) workers: usize,
    /// Stores (tenants) the events are spread over.
    pub(crate) stores: usize,
}

/// One timed phase.
struct Phase {
    phase: &'static str,
    what: String,
    records: u64,
    secs: f64,
    cpu: Option<f64>,
    server_cpu: f64,
}

/// The stores of one run: their URLs and each one's events as JSON lines.
struct Workload {
    urls: Vec<StoreUrl>,
    lines: Vec<Vec<String>>,
}

pub(crate) fn ingest(url: &StoreUrl, args: Args, json: bool) -> anyhow::Result<Outcome> {
    if args.workers == 0 || args.stores == 0 || args.batch_size == 0 {
        bail!(
            "bench ingest: --workers {}, --stores {}, --batch-size {}: each must be at least 1 \
             (rule: bench.count)",
            args.workers,
            args.stores,
            args.batch_size
        );
    }
    let schema = Schema::core()?;
    // Two sets of stores: one appended then folded, one appended and folded at once.
    let staged = workload(url, "", args)?;
    let live = workload(url, "e2e-", args)?;
    for u in staged.urls.iter().chain(&live.urls) {
        refuse_used("bench ingest", u)?;
    }
    // The servers' CPU is read from every instance the stores are on.
    let probe = url.each_instance().iter().map(RedisLog::connect).collect::<Result<Vec<_>, _>>()?;
    let load_before = load_average();
    let mut phases = Vec::new();

    // 1. The writer alone: validate and append every store's events, batch by batch.
    let mut logs = connect_logs(&staged.urls)?;
    phases.push(timed(
        &probe,
        "log append",
        format!("parse + validate + append, batches of {}, 1 writer", args.batch_size),
        || append_all(&schema, &mut logs, &staged.lines, args.batch_size),
    )?);

    // 2. The workers alone, from an appended log to a graph at its head.
    // Nothing more will be appended: each worker stops when its stores are at their heads.
    let appending = AtomicBool::new(false);
    phases.push(timed(
        &probe,
        "fold",
        format!("{} worker(s) folding {} store(s) to the log head", args.workers, args.stores),
        || fold_all(&staged.urls, args.workers, &appending),
    )?);

    // 3. Both at once, as in service: the lag is the workers' distance behind the writer.
    let mut logs = connect_logs(&live.urls)?;
    let graphs = live
        .urls
        .iter()
        .map(|u| FalkorGraph::connect(u, &schema))
        .collect::<Result<Vec<_>, _>>()?;
    let appending = AtomicBool::new(true);
    let mut lag_at_last_append = 0;
    let mut catch_up_secs = 0.0;
    phases.push(timed(
        &probe,
        "end to end",
        format!(
            "1 writer appending while {} worker(s) fold, until the graphs reach the log head",
            args.workers
        ),
        || {
            std::thread::scope(|scope| {
                let workers = spawn_workers(scope, &live.urls, args.workers, &appending);
                let appended = append_all(&schema, &mut logs, &live.lines, args.batch_size);
                let last_append = Instant::now();
                let behind = lag(&logs, &graphs);
                appending.store(false, Ordering::SeqCst);
                let folded = join(workers);
                catch_up_secs = last_append.elapsed().as_secs_f64();
                lag_at_last_append = behind?;
                let (appended, folded) = (appended?, folded?);
                if folded != appended {
                    bail!("bench ingest: {appended} records appended but {folded} folded");
                }
                Ok(appended)
            })
        },
    )?);
    let load_after = load_average();

    let mut nodes = 0;
    let mut edges = 0;
    for u in staged.urls.iter().chain(&live.urls) {
        let counts = FalkorGraph::connect(u, &schema)?.counts()?;
        nodes += counts.nodes.iter().map(|(_, n)| n).sum::<u64>();
        edges += counts.edges.iter().map(|(_, n)| n).sum::<u64>();
    }

    let names: Vec<String> =
        staged.urls.iter().chain(&live.urls).map(|u| u.name().to_owned()).collect();
    if json {
        print_json(&json!({
            "backend": "redis",
            "servers": url.instances(),
            "events": args.events, "batch_size": args.batch_size, "workers": args.workers,
            "stores": names,
            "phases": phases.iter().map(|p| json!({"phase": p.phase, "what": p.what,
                "records": p.records, "seconds": p.secs, "per_second": p.records as f64 / p.secs,
                "cpu_seconds": p.cpu, "server_cpu_seconds": p.server_cpu})).collect::<Vec<_>>(),
            "lag_at_last_append": lag_at_last_append, "catch_up_seconds": catch_up_secs,
            "nodes": nodes, "edges": edges,
            "load_average_before": load_before, "load_average_after": load_after,
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph bench ingest: {} events over {} store(s) per phase on {}, batch {}, {} worker(s) (threads of this process)",
        args.events,
        args.stores,
        url.instances().join(", "),
        args.batch_size,
        args.workers
    )?;
    let several = url.instance_count() > 1;
    let servers = if several { "servers" } else { "server" };
    let cpu_column = if several { "servers' CPU seconds" } else { "server CPU seconds" };
    let mut t = table(&[
        "phase",
        "what is timed",
        "records",
        "seconds",
        "records/s",
        "CPU seconds (this process)",
        cpu_column,
    ]);
    for p in &phases {
        t.add_row(vec![
            p.phase.to_owned(),
            p.what.clone(),
            p.records.to_string(),
            format!("{:.2}", p.secs),
            format!("{:.0}", p.records as f64 / p.secs),
            p.cpu.map_or_else(|| "-".to_owned(), |c| format!("{c:.2}")),
            format!("{:.2}", p.server_cpu),
        ]);
    }
    writeln!(out, "{t}")?;
    let mut t = table(&["end to end", "value"]);
    t.add_row(vec![
        "lag when the last append returned".to_owned(),
        format!("{lag_at_last_append} records"),
    ]);
    t.add_row(vec!["caught up after the last append".to_owned(), format!("{catch_up_secs:.2} s")]);
    t.add_row(vec!["nodes / edges (all stores)".to_owned(), format!("{nodes} / {edges}")]);
    t.add_row(vec![format!("stores (left on the {servers})"), names.join(", ")]);
    let load = |l: Option<[f64; 3]>| {
        l.map_or_else(|| "-".to_owned(), |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"))
    };
    t.add_row(vec![
        "load average before / after".to_owned(),
        format!("{} / {}", load(load_before), load(load_after)),
    ]);
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}

/// The stores and each one's events: store `i` gets the bench's synthetic trace with seed
/// `42 + i` (store 0 gets the embedded bench's trace).
fn workload(url: &StoreUrl, prefix: &str, args: Args) -> anyhow::Result<Workload> {
    let urls = store_urls(url, prefix, args.stores)?;
    let mut lines = Vec::with_capacity(args.stores);
    for i in 0..args.stores {
        let events = args.events / args.stores + usize::from(i < args.events % args.stores);
        let config = ctxgraph_synth::TraceConfig {
            events,
            seed: 42 + i as u64,
            agents: 8,
            users: 200,
            ..Default::default()
        };
        lines.push(ctxgraph_synth::trace(&config).map(|e| e.to_string()).collect());
    }
    Ok(Workload { urls, lines })
}

/// `count` stores named `{NAME}-{prefix}{j}`. On one instance `j` runs from 0; over several,
/// store `i` is the next name that hashes to instance `i mod n` (in the URL's order), so each
/// instance holds the same share and worker `w` of `n` folds the stores of one instance: the
/// load is spread as evenly as many tenants spread it, without depending on which instances a
/// few names happen to hash to.
fn store_urls(url: &StoreUrl, prefix: &str, count: usize) -> anyhow::Result<Vec<StoreUrl>> {
    let named = |j: usize| {
        url.with_name(&format!("{}-{prefix}{j}", url.name())).map_err(anyhow::Error::from)
    };
    let instances = url.instances();
    let mut unused: Vec<Vec<StoreUrl>> = vec![Vec::new(); instances.len()];
    let mut next = 0usize;
    let mut urls = Vec::with_capacity(count);
    for i in 0..count {
        let want = i % instances.len();
        while unused[want].is_empty() {
            // Names hash evenly: running out of names for an instance means it is unreachable
            // by hashing, which a digest of 64 bits makes impossible in practice.
            if next > 1_000 * count.max(1) {
                bail!("bench ingest: --db {url}: no store name hashes to {}", instances[want]);
            }
            let candidate = named(next).context("bench ingest: --db")?;
            next += 1;
            if let Some(at) = instances.iter().position(|i| *i == candidate.instance()) {
                unused[at].push(candidate);
            }
        }
        urls.push(unused[want].remove(0));
    }
    Ok(urls)
}

/// Refuse a store whose log or graph is not empty: `command` writes only to new stores.
pub(super) fn refuse_used(command: &str, url: &StoreUrl) -> anyhow::Result<()> {
    crate::scale_out::refuse_taken(
        url,
        &format!("{command}: store"),
        "the bench writes to new stores named after --db; choose another NAME \
         (rule: bench.target_not_empty)",
    )
}

fn connect_logs(urls: &[StoreUrl]) -> anyhow::Result<Vec<RedisLog>> {
    Ok(urls.iter().map(RedisLog::connect).collect::<Result<Vec<_>, _>>()?)
}

/// Time `work`, with this process's CPU and the server's.
fn timed(
    probe: &[RedisLog],
    phase: &'static str,
    what: String,
    work: impl FnOnce() -> anyhow::Result<u64>,
) -> anyhow::Result<Phase> {
    eprintln!("{phase} ...");
    let servers_cpu =
        || -> anyhow::Result<f64> { probe.iter().map(|p| Ok(p.server_cpu_seconds()?)).sum() };
    let (started, cpu, server) = (Instant::now(), cpu_seconds(), servers_cpu()?);
    let records = work()?;
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu.zip(cpu_seconds()).map(|(before, after)| after - before);
    let server_cpu = servers_cpu()? - server;
    Ok(Phase { phase, what, records, secs, cpu, server_cpu })
}

/// Validate and append every store's lines, a batch of each store in turn (so all stores grow
/// together); returns how many were appended.
fn append_all(
    schema: &Schema,
    logs: &mut [RedisLog],
    lines: &[Vec<String>],
    batch_size: usize,
) -> anyhow::Result<u64> {
    let limits = Limits::default();
    let mut appended = 0u64;
    let longest = lines.iter().map(Vec::len).max().unwrap_or(0);
    for start in (0..longest).step_by(batch_size) {
        for (log, lines) in logs.iter_mut().zip(lines) {
            let Some(batch) = lines.get(start..(start + batch_size).min(lines.len())) else {
                continue;
            };
            let records = batch
                .iter()
                .map(|l| validate(schema, &limits, l).map_err(|e| anyhow::anyhow!("{e}")))
                .collect::<anyhow::Result<Vec<ValidRecord>>>()?;
            let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
            for outcome in log.append_batch(&records.iter().collect::<Vec<_>>(), &at)? {
                outcome?;
                appended += 1;
            }
        }
    }
    Ok(appended)
}

/// Fold every store with `workers` threads, store `i` by worker `i % workers`; returns how
/// many records they folded.
fn fold_all(urls: &[StoreUrl], workers: usize, appending: &AtomicBool) -> anyhow::Result<u64> {
    std::thread::scope(|scope| join(spawn_workers(scope, urls, workers, appending)))
}

type Handles<'s> = Vec<std::thread::ScopedJoinHandle<'s, anyhow::Result<u64>>>;

fn spawn_workers<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    urls: &'s [StoreUrl],
    workers: usize,
    appending: &'s AtomicBool,
) -> Handles<'s> {
    (0..workers)
        .map(|w| {
            let mine: Vec<&StoreUrl> = urls.iter().skip(w).step_by(workers).collect();
            scope.spawn(move || fold_stores(&mine, w, appending))
        })
        .collect()
}

fn join(handles: Handles<'_>) -> anyhow::Result<u64> {
    let mut folded = 0;
    for h in handles {
        folded +=
            h.join().map_err(|_| anyhow::anyhow!("bench ingest: a worker thread panicked"))??;
    }
    Ok(folded)
}

/// One worker: a consumer of each of its stores' streams in the projection group, folding
/// them in turn until the writer has stopped and none has anything left.
fn fold_stores(urls: &[&StoreUrl], index: usize, appending: &AtomicBool) -> anyhow::Result<u64> {
    let group = ConsumerName::parse(PROJECTION_GROUP)?;
    let name = ConsumerName::parse(&format!("bench-{index}"))?;
    let mut tenants = Vec::with_capacity(urls.len());
    for url in urls {
        let log = RedisLog::connect(url)?;
        let schema = load_schema(&log)?;
        let graph = FalkorGraph::connect(url, &schema)?;
        let worker =
            Worker::new(LogConsumer::join(url, &group, &name)?, CLAIM_AFTER).with_fold_limit(ROUND);
        tenants.push((log, schema, graph, worker));
    }
    let mut folded = 0;
    loop {
        // Read before the round: a round that began after the last append and folded nothing
        // leaves every graph at its log's head.
        let writing = appending.load(Ordering::SeqCst);
        let mut round = 0;
        for (log, schema, graph, worker) in &mut tenants {
            round += worker
                .step(schema, log, graph, None)
                .with_context(|| format!("worker bench-{index} folding {}", log.url()))?;
        }
        folded += round;
        if round == 0 {
            if !writing {
                return Ok(folded);
            }
            std::thread::sleep(IDLE);
        }
    }
}

/// How far the graphs are behind their logs, in records.
fn lag(logs: &[RedisLog], graphs: &[FalkorGraph]) -> anyhow::Result<u64> {
    let mut lag = 0;
    for (log, graph) in logs.iter().zip(graphs) {
        lag += log.head()?.saturating_sub(graph.projected_through()?);
    }
    Ok(lag)
}

/// The 1, 5 and 15 minute load averages, where the system says.
fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}
