//! `ctxgraph bench soak`: sustained mixed load on a server over loopback, and its memory over
//! time.
//!
//! C clients, each with its own connection, cycle through a fixed mix of requests (ingest
//! batches, recall, search, an event by id, a session's timeline): first for a warm-up, unmeasured,
//! then for S seconds. The report has requests/s, p50/p99 and errors per kind (of the measured
//! part) and, when this command started the server, the server's resident memory sampled every
//! few seconds with the size of its write-ahead log: a curve from the start of the warm-up, the
//! warm memory (at the end of the warm-up, when the caches the load fills are full), the largest
//! after it and their ratio. Memory that grows without bound under a steady load shows as a
//! rising curve. The machine's load average at the start and the end tells how much else ran.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

use super::serve::{agent, fresh_event, get, post, preload, server_target};
use super::{percentile, questions, sorted};
use crate::Outcome;
use crate::args::ServerTargetArgs;
use crate::output::{print_json, table};

/// The request kinds, in report order.
const KINDS: [&str; 5] = ["ingest", "recall", "search", "get", "timeline"];
/// One client's cycle of requests, as indexes into [`KINDS`]: one ingest in ten, the rest reads.
const MIX: [usize; 10] = [0, 1, 2, 3, 4, 1, 2, 3, 4, 1];
/// Events per ingest request.
const BATCH: usize = 10;
/// The tenant of the principal `start_server` adds, whose store the server writes.
const TENANT: &str = "bench";

/// What `bench soak` was asked to do.
pub(crate) struct SoakArgs<'a> {
    /// Concurrent clients.
    pub(crate) clients: usize,
    /// How long the measured load lasts.
    pub(crate) seconds: f64,
    /// How long the same load runs first, unmeasured.
    pub(crate) warmup: f64,
    /// Events loaded before the load starts.
    pub(crate) preload: usize,
    /// Seconds between two memory samples.
    pub(crate) sample_every: f64,
    /// The server driven: a running one (`--url`, `--key`) or one started over `--dir`.
    pub(crate) target: &'a ServerTargetArgs,
    /// JSON output.
    pub(crate) json: bool,
}

/// Latencies (ms) and errors per kind, for one client or all.
#[derive(Default)]
struct Kinds {
    ms: [Vec<f64>; KINDS.len()],
    errors: [u64; KINDS.len()],
    first_error: Option<String>,
}

/// One memory sample of the server.
#[derive(Clone, Copy)]
struct Sample {
    /// Seconds since the measured load started (negative during the warm-up).
    at: f64,
    /// Resident memory (`VmRSS`), bytes.
    rss: u64,
    /// Its anonymous part (`RssAnon`: heap, page caches), bytes.
    anon: u64,
    /// Size of the tenant store's write-ahead log, bytes.
    wal: u64,
}

/// What the load reads: event ids, session ids and questions from the preloaded trace.
struct Targets {
    events: Vec<String>,
    sessions: Vec<String>,
    questions: Vec<String>,
}

pub(crate) fn soak(args: &SoakArgs<'_>) -> anyhow::Result<Outcome> {
    if args.clients == 0 || args.seconds <= 0.0 || args.sample_every <= 0.0 {
        bail!("--clients, --seconds and --sample-every: give a positive number");
    }
    if args.warmup.is_nan() || args.warmup < 0.0 {
        bail!("--warmup: give a number of seconds, 0 or more");
    }
    let (base, key, started) = server_target(args.target)?;
    let (jsonl, loaded) = preload(&base, &key, args.preload.max(1))?;
    let field = |e: &Value, f: &str| e[f].as_str().map(str::to_owned);
    let mut sessions: Vec<String> = loaded.iter().filter_map(|e| field(e, "session_id")).collect();
    sessions.sort();
    sessions.dedup();
    let targets = Targets {
        events: loaded.iter().filter_map(|e| field(e, "event_id")).collect(),
        sessions,
        // Questions with words only: an empty question is refused by design, not a failure.
        questions: questions(&jsonl, 300).into_iter().filter(|q| !q.trim().is_empty()).collect(),
    };
    if targets.events.is_empty() || targets.sessions.is_empty() || targets.questions.is_empty() {
        bail!("the preloaded trace gave nothing to read: preload more events");
    }
    let server = started
        .as_ref()
        .map(|s| (s.child.id(), s.data.join("tenants").join(format!("{TENANT}.ctxg-wal"))));
    eprintln!(
        "{} clients for {} s after {} s of warm-up ...",
        args.clients, args.seconds, args.warmup
    );
    let load_before = load_average();
    let (all, seconds, samples) = run(&base, &key, args, &targets, server.as_ref())?;
    let load = Load { before: load_before, after: load_average() };
    print(args, &all, seconds, &samples, &load)?;
    drop(started);
    let errors: u64 = all.errors.iter().sum();
    Ok(if errors > 0 { Outcome::Failed } else { Outcome::Done })
}

/// The load itself, with a sampler of the server's memory beside it: the warm-up, then the
/// measured part. Returns the measured requests, the measured part's length and the samples.
fn run(
    base: &str,
    key: &str,
    args: &SoakArgs<'_>,
    targets: &Targets,
    server: Option<&(u32, PathBuf)>,
) -> anyhow::Result<(Kinds, f64, Vec<Sample>)> {
    let stop = AtomicBool::new(false);
    let measuring = AtomicBool::new(false);
    let began = Instant::now();
    let warmup = Duration::from_secs_f64(args.warmup);
    let sample = |at: f64| {
        server.and_then(|(pid, wal)| {
            let (rss, anon) = memory(*pid)?;
            let wal = std::fs::metadata(wal).map_or(0, |m| m.len());
            Some(Sample { at, rss, anon, wal })
        })
    };
    let mut samples: Vec<Sample> = sample(-args.warmup).into_iter().collect();
    let mut measured_from = began;
    let per_client: Vec<Kinds> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..args.clients)
            .map(|c| {
                let (stop, measuring) = (&stop, &measuring);
                s.spawn(move || client(base, key, c, targets, stop, measuring))
            })
            .collect();
        // The sampler is this thread: it also ends the warm-up and the load.
        let step = Duration::from_secs_f64(args.sample_every);
        let end = warmup + Duration::from_secs_f64(args.seconds);
        let mut next = if warmup.is_zero() { step } else { step.min(warmup) };
        let mut warm = warmup.is_zero();
        if warm {
            measuring.store(true, Ordering::Relaxed);
        }
        loop {
            let at = next.min(end);
            std::thread::sleep(at.saturating_sub(began.elapsed()));
            if !warm && at >= warmup {
                // The warm-up's end: requests from now on are measured.
                measuring.store(true, Ordering::Relaxed);
                measured_from = Instant::now();
                warm = true;
            }
            let since = began.elapsed().as_secs_f64() - args.warmup;
            samples.extend(sample(if at == warmup { 0.0 } else { since }));
            if at >= end {
                break;
            }
            // The next sample: on the step grid, with one exactly at the warm-up's end.
            next = if at < warmup { (at + step).min(warmup) } else { at + step };
        }
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    let seconds = measured_from.elapsed().as_secs_f64();
    let mut all = Kinds::default();
    for k in per_client {
        for i in 0..KINDS.len() {
            all.ms[i].extend(&k.ms[i]);
            all.errors[i] += k.errors[i];
        }
        if all.first_error.is_none() {
            all.first_error = k.first_error;
        }
    }
    Ok((all, seconds, samples))
}

/// One client: the mix, over and over, until told to stop; requests that start before
/// `measuring` is set (the warm-up) are not counted, errors included.
fn client(
    base: &str,
    key: &str,
    c: usize,
    targets: &Targets,
    stop: &AtomicBool,
    measuring: &AtomicBool,
) -> Kinds {
    let agent = agent();
    let mut out = Kinds::default();
    let mut op: u64 = 0;
    while !stop.load(Ordering::Relaxed) {
        op += 1;
        let kind = MIX[(op as usize + c) % MIX.len()];
        let pick = |list: &[String]| list[(op as usize * 31 + c * 7) % list.len()].clone();
        let measured = measuring.load(Ordering::Relaxed);
        let t = Instant::now();
        let result = match kind {
            0 => {
                // Fresh ids: the soak's round number keeps them apart from `bench serve`'s.
                let events: Vec<Value> =
                    (0..BATCH).map(|i| fresh_event(usize::MAX, c, op, i)).collect();
                post(&agent, base, key, "/v1/events", &json!({"events": events})).map(drop)
            }
            1 => post(
                &agent,
                base,
                key,
                "/v1/recall",
                &json!({"question": pick(&targets.questions), "k": 10}),
            )
            .map(drop),
            2 => post(
                &agent,
                base,
                key,
                "/v1/search",
                &json!({"query": pick(&targets.questions), "limit": 10}),
            )
            .map(drop),
            3 => get(&agent, base, key, &format!("/v1/events/{}", pick(&targets.events))).map(drop),
            _ => get(
                &agent,
                base,
                key,
                &format!("/v1/sessions/{}/timeline", pick(&targets.sessions)),
            )
            .map(drop),
        };
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match result {
            _ if !measured => {}
            Ok(()) => out.ms[kind].push(ms),
            Err(e) => {
                out.errors[kind] += 1;
                out.first_error.get_or_insert_with(|| format!("{e:#}"));
            }
        }
    }
    out
}

/// Resident memory of a process and its anonymous part, in bytes (Linux `VmRSS`, `RssAnon`).
fn memory(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    };
    Some((field("VmRSS:")?, field("RssAnon:").unwrap_or(0)))
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0
}

/// The machine's load averages over 1, 5 and 15 minutes (Linux `/proc/loadavg`).
fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some([fields.next()??, fields.next()??, fields.next()??])
}

/// The load averages when the load started and when it ended.
struct Load {
    before: Option<[f64; 3]>,
    after: Option<[f64; 3]>,
}

/// Memory over the measured part: the warm sample, the largest, the last, and the ratio of the
/// largest to the warm.
struct MemorySummary {
    warm: u64,
    max: u64,
    last: u64,
    ratio: f64,
}

/// The warm sample is the one at the end of the warm-up (without a warm-up, the first taken
/// under load); the largest and the last are of the measured part.
fn memory_summary(samples: &[Sample], warmup: f64) -> Option<MemorySummary> {
    let measured = |s: &&Sample| if warmup > 0.0 { s.at >= 0.0 } else { s.at > 0.0 };
    let warm = samples.iter().find(measured).or(samples.last())?.rss;
    let max = samples.iter().filter(measured).map(|s| s.rss).max().unwrap_or(warm);
    let last = samples.last()?.rss;
    Some(MemorySummary { warm, max, last, ratio: max as f64 / warm.max(1) as f64 })
}

fn loadavg_text(l: Option<[f64; 3]>) -> String {
    l.map_or("n/a".to_owned(), |[a, b, c]| format!("{a:.2} {b:.2} {c:.2}"))
}

fn print(
    args: &SoakArgs<'_>,
    all: &Kinds,
    seconds: f64,
    samples: &[Sample],
    load: &Load,
) -> anyhow::Result<()> {
    let requests: usize = all.ms.iter().map(Vec::len).sum();
    let errors: u64 = all.errors.iter().sum();
    let summary = memory_summary(samples, args.warmup);
    let per_kind = |i: usize| {
        let s = sorted(all.ms[i].clone());
        (s.len(), percentile(&s, 0.50), percentile(&s, 0.99))
    };
    if args.json {
        let kinds: Vec<Value> = (0..KINDS.len())
            .map(|i| {
                let (n, p50, p99) = per_kind(i);
                json!({"kind": KINDS[i], "requests": n, "per_second": n as f64 / seconds,
                    "p50_ms": p50, "p99_ms": p99, "errors": all.errors[i]})
            })
            .collect();
        let curve: Vec<Value> = samples
            .iter()
            .map(|s| json!({"seconds": s.at, "rss_bytes": s.rss, "anon_bytes": s.anon, "wal_bytes": s.wal}))
            .collect();
        return print_json(&json!({
            "clients": args.clients, "seconds": seconds, "warmup_seconds": args.warmup,
            "preload": args.preload,
            "requests": requests, "requests_per_s": requests as f64 / seconds,
            "errors": errors, "first_error": all.first_error, "kinds": kinds, "memory": curve,
            "warm_rss_bytes": summary.as_ref().map(|s| s.warm),
            "max_rss_bytes": summary.as_ref().map(|s| s.max),
            "last_rss_bytes": summary.as_ref().map(|s| s.last),
            "max_over_warm": summary.as_ref().map(|s| s.ratio),
            "load_average_before": load.before, "load_average_after": load.after,
        }));
    }
    println!(
        "ctxgraph bench soak: {} clients for {seconds:.0} s after {:.0} s of warm-up, {} events preloaded; {requests} requests ({:.0}/s), {errors} errors",
        args.clients,
        args.warmup,
        args.preload,
        requests as f64 / seconds
    );
    println!(
        "load average (1, 5, 15 min): {} at the start, {} at the end",
        loadavg_text(load.before),
        loadavg_text(load.after)
    );
    let mut t = table(&["kind", "requests", "requests/s", "p50 ms", "p99 ms", "errors"]);
    for (i, name) in KINDS.iter().enumerate() {
        let (n, p50, p99) = per_kind(i);
        t.add_row(vec![
            (*name).to_owned(),
            n.to_string(),
            format!("{:.1}", n as f64 / seconds),
            format!("{p50:.1}"),
            format!("{p99:.1}"),
            all.errors[i].to_string(),
        ]);
    }
    println!("{t}");
    if let Some(MemorySummary { warm, max, last, ratio }) = summary {
        let mut t = table(&["seconds", "server RSS MiB", "of which anonymous MiB", "WAL MiB"]);
        for s in samples {
            t.add_row(vec![
                format!("{:.0}", s.at),
                format!("{:.0}", mib(s.rss)),
                format!("{:.0}", mib(s.anon)),
                format!("{:.1}", mib(s.wal)),
            ]);
        }
        println!("{t}");
        println!(
            "server RSS: warm {:.0} MiB (end of the warm-up), max {:.0} MiB, last {:.0} MiB, max/warm {ratio:.2}",
            mib(warm),
            mib(max),
            mib(last)
        );
    } else {
        println!("server memory: not sampled (the server was not started by this command)");
    }
    if let Some(e) = &all.first_error {
        eprintln!("first error: {e}");
    }
    Ok(())
}
