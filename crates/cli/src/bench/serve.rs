//! `ctxgraph bench serve`: load on a running server over loopback.
//!
//! N client threads, each with its own HTTP connection, mix batch ingestion (one request in
//! five, ten fresh events) and recall (the other four) for a bounded time; the table reports
//! throughput, latency percentiles per operation, errors, and, when this command started the
//! server itself, the server's peak memory (its `VmHWM`) and its CPU time per request (which a
//! machine loaded by other work moves far less than it moves the latencies). When the key may
//! read `/metrics` (the server this command starts gives it that role), each round also reports
//! the mean time the engine spent in recall inside the server, beside the mean a client waited:
//! the difference is what HTTP, the server's layers and the client add to one recall, measured
//! on the same store in the same state.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::{percentile, questions, sorted, synthetic_jsonl, temp_dir};
use crate::Outcome;
use crate::args::ServerTargetArgs;
use crate::output::{print_json, table};

/// Events per ingest request.
const BATCH: usize = 10;
/// One request in this many is an ingest; the others are recalls.
const INGEST_EVERY: u64 = 5;
/// Events per request while preloading.
const PRELOAD_BATCH: usize = 500;
/// Clock ticks per second of the times in `/proc/PID/stat` (Linux's `USER_HZ`, 100 on the
/// architectures ctxgraph builds for).
const USER_HZ: f64 = 100.0;

/// What `bench serve` was asked to do.
pub(crate) struct ServeArgs<'a> {
    /// Client counts, one round each.
    pub(crate) clients: &'a [usize],
    /// Seconds per round.
    pub(crate) seconds: f64,
    /// Events loaded before the rounds.
    pub(crate) preload: usize,
    /// The server driven: a running one (`--url`, `--key`) or one started over `--dir`.
    pub(crate) target: &'a ServerTargetArgs,
    /// JSON output.
    pub(crate) json: bool,
}

/// A server this command started: stopped (SIGTERM, then kill) when dropped.
pub(super) struct Started {
    pub(super) child: Child,
    /// Its data directory.
    pub(super) data: PathBuf,
    _keep: Option<tempfile::TempDir>,
}

impl Drop for Started {
    fn drop(&mut self) {
        // Graceful first: the server finishes what is in flight.
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        for _ in 0..50 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client's ingest and recall latencies (ms), errors and the first error's text.
#[derive(Default)]
struct ClientRun {
    ingest: Vec<f64>,
    recall: Vec<f64>,
    errors: u64,
    first: Option<String>,
}

struct Round {
    clients: usize,
    seconds: f64,
    ingest_ms: Vec<f64>,
    recall_ms: Vec<f64>,
    errors: u64,
    first_error: Option<String>,
    peak_rss: Option<u64>,
    /// CPU seconds the started server used during the round.
    server_cpu_s: Option<f64>,
    /// Mean seconds the engine spent in a recall inside the server during the round (from
    /// `/metrics`), when the key may read them.
    engine_recall_s: Option<f64>,
    /// Index upkeep steps on the server's writer during the round and the seconds they held it
    /// (from `/metrics`; `None` from a server that does not report them).
    index_upkeep: Option<(u64, f64)>,
}

pub(crate) fn serve(args: &ServeArgs<'_>) -> anyhow::Result<Outcome> {
    if args.clients.is_empty() || args.clients.contains(&0) {
        bail!("--clients: give one or more counts of at least 1, e.g. 1,8,64");
    }
    let (base, key, started) = server_target(args.target)?;
    let (jsonl, _) = preload(&base, &key, args.preload)?;
    // Questions with words only: an empty question is refused by design, not a failure.
    let asked: Vec<String> =
        questions(&jsonl, 300).into_iter().filter(|q| !q.trim().is_empty()).collect();
    let mut rounds = Vec::new();
    for (round, &n) in args.clients.iter().enumerate() {
        eprintln!("round {}: {n} clients for {} s ...", round + 1, args.seconds);
        let pid = started.as_ref().map(|s| s.child.id());
        let cpu_before = pid.and_then(cpu_seconds);
        let recall_before = engine_recall(&base, &key);
        let upkeep_before = index_upkeep(&base, &key);
        let mut r = run_round(&base, &key, n, args.seconds, &asked, round)?;
        r.index_upkeep = index_upkeep(&base, &key)
            .zip(upkeep_before)
            .map(|(after, before)| (after.0.saturating_sub(before.0), after.1 - before.1));
        r.server_cpu_s = pid.and_then(cpu_seconds).zip(cpu_before).map(|(after, b)| after - b);
        r.engine_recall_s = engine_recall(&base, &key)
            .zip(recall_before)
            .filter(|(after, before)| after.1 > before.1)
            .map(|(after, before)| (after.0 - before.0) / (after.1 - before.1) as f64);
        r.peak_rss = pid.and_then(peak_rss);
        rounds.push(r);
    }
    print(&rounds, args)?;
    drop(started);
    let failed = rounds.iter().any(|r| r.errors > 0);
    Ok(if failed { Outcome::Failed } else { Outcome::Done })
}

pub(super) fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into()
}

/// POST `body`; an error for a transport failure or a status other than 2xx.
pub(super) fn post(
    agent: &ureq::Agent,
    base: &str,
    key: &str,
    path: &str,
    body: &Value,
) -> anyhow::Result<Value> {
    let mut resp = agent
        .post(&format!("{base}{path}"))
        .header("Authorization", &format!("Bearer {key}"))
        .send_json(body)?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    if !(200..300).contains(&status) {
        bail!("POST {path}: HTTP {status}: {}", text.chars().take(300).collect::<String>());
    }
    Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// GET `path`: the response's text; an error for a transport failure or a status other than
/// 2xx.
pub(super) fn get(
    agent: &ureq::Agent,
    base: &str,
    key: &str,
    path: &str,
) -> anyhow::Result<String> {
    let mut resp = agent
        .get(&format!("{base}{path}"))
        .header("Authorization", &format!("Bearer {key}"))
        .call()?;
    let status = resp.status().as_u16();
    let text = resp.body_mut().read_to_string().unwrap_or_default();
    if !(200..300).contains(&status) {
        bail!("GET {path}: HTTP {status}: {}", text.chars().take(300).collect::<String>());
    }
    Ok(text)
}

/// The server's recall histogram so far, `(sum of seconds, count)`, from `/metrics`; `None`
/// when the key may not read it (a server given with `--url` and a key without the `metrics`
/// role) or the figures are missing.
fn engine_recall(base: &str, key: &str) -> Option<(f64, u64)> {
    let text = get(&agent(), base, key, "/metrics").ok()?;
    recall_histogram(&text)
}

/// The server's index upkeep on its writer so far, `(steps, seconds)` over every outcome, from
/// `/metrics`; `None` as for [`engine_recall`].
fn index_upkeep(base: &str, key: &str) -> Option<(u64, f64)> {
    let text = get(&agent(), base, key, "/metrics").ok()?;
    upkeep_histogram(&text)
}

/// `(count, sum)` of `ctxgraph_index_writer_seconds`, every outcome together; `(0, 0)` before
/// the first step, `None` when the exposition does not declare it.
fn upkeep_histogram(text: &str) -> Option<(u64, f64)> {
    let name = "ctxgraph_index_writer_seconds";
    if !text.contains(&format!("# TYPE {name} histogram")) {
        return None;
    }
    let total = |suffix: &str| -> f64 {
        let prefix = format!("{name}{suffix}{{");
        text.lines()
            .filter(|l| l.starts_with(&prefix))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Some((total("_count") as u64, total("_sum")))
}

/// `(sum, count)` of `ctxgraph_recall_seconds` in a Prometheus text exposition.
fn recall_histogram(text: &str) -> Option<(f64, u64)> {
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse::<f64>().ok())
    };
    let sum = value("ctxgraph_recall_seconds_sum")?;
    let count = value("ctxgraph_recall_seconds_count")?;
    Some((sum, count as u64))
}

/// The server a bench drives: `--url` with its `--key`, or one it starts over `--dir` (see
/// [`start_server`]): its base URL, the key, and the started server, if any.
pub(super) fn server_target(
    target: &ServerTargetArgs,
) -> anyhow::Result<(String, String, Option<Started>)> {
    match (&target.url, &target.key) {
        (Some(url), Some(key)) => Ok((url.trim_end_matches('/').to_owned(), key.clone(), None)),
        (Some(_), None) => bail!("--url needs --key (or CTXGRAPH_KEY)"),
        (None, _) => {
            let (base, key, started) = start_server(target.dir.as_deref())?;
            Ok((base, key, Some(started)))
        }
    }
}

/// Ingest the first `events` events of a synthetic trace of at least 100 events over HTTP:
/// the whole trace as JSON Lines (for its questions) and the events ingested.
pub(super) fn preload(
    base: &str,
    key: &str,
    events: usize,
) -> anyhow::Result<(String, Vec<Value>)> {
    eprintln!("preloading {events} events ...");
    let jsonl = synthetic_jsonl(events.max(100));
    let mut lines: Vec<Value> =
        jsonl.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    lines.truncate(events);
    let agent = agent();
    for chunk in lines.chunks(PRELOAD_BATCH) {
        post(&agent, base, key, "/v1/events", &json!({"events": chunk}))
            .context("preloading events")?;
    }
    Ok((jsonl, lines))
}

/// Start `ctxgraph serve` on a free loopback port over `dir` (default: a temporary directory)
/// with a writer principal of tenant `bench`: its base URL, the key, and the server.
pub(super) fn start_server(dir: Option<&Path>) -> anyhow::Result<(String, String, Started)> {
    let (data, keep): (PathBuf, Option<tempfile::TempDir>) = match dir {
        Some(d) => (d.to_owned(), None),
        None => {
            let t = temp_dir(None)?;
            (t.path().to_owned(), Some(t))
        }
    };
    let mut registry = ctxgraph::Principals::open(&data.join("principals.json"))?;
    let name = format!("bench-{}", std::process::id());
    // The metrics role lets the bench read the engine's own recall time from `/metrics`.
    let roles = ["writer".to_owned(), ctxgraph_server::http::ROLE_METRICS.to_owned()];
    let key = registry.add(&name, "bench", &roles)?;
    let exe = std::env::current_exe().context("finding the ctxgraph binary")?;
    let mut child = Command::new(exe)
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting ctxgraph serve")?;
    let stdout = child.stdout.take().context("the server's output")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let started = Started { child, data, _keep: keep };
    let Some(base) = line.trim().strip_prefix("listening on ") else {
        bail!("the server did not start: its first line was {line:?}");
    };
    Ok((base.to_owned(), key, started))
}

fn run_round(
    base: &str,
    key: &str,
    clients: usize,
    seconds: f64,
    asked: &[String],
    round: usize,
) -> anyhow::Result<Round> {
    let stop = AtomicBool::new(false);
    let began = Instant::now();
    let per_client: Vec<ClientRun> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..clients)
            .map(|c| {
                let stop = &stop;
                s.spawn(move || {
                    let agent = agent();
                    let mut run = ClientRun::default();
                    let mut op: u64 = 0;
                    while !stop.load(Ordering::Relaxed) {
                        op += 1;
                        let t = Instant::now();
                        let result = if op.is_multiple_of(INGEST_EVERY) {
                            let events: Vec<Value> =
                                (0..BATCH).map(|i| fresh_event(round, c, op, i)).collect();
                            post(&agent, base, key, "/v1/events", &json!({"events": events}))
                                .map(|_| true)
                        } else {
                            let q = &asked[(op as usize + c * 7) % asked.len().max(1)];
                            post(&agent, base, key, "/v1/recall", &json!({"question": q, "k": 10}))
                                .map(|_| false)
                        };
                        let ms = t.elapsed().as_secs_f64() * 1e3;
                        match result {
                            Ok(true) => run.ingest.push(ms),
                            Ok(false) => run.recall.push(ms),
                            Err(e) => {
                                run.errors += 1;
                                run.first.get_or_insert_with(|| format!("{e:#}"));
                            }
                        }
                    }
                    run
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs_f64(seconds));
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|w| w.join().unwrap_or_default()).collect()
    });
    let mut r = Round {
        clients,
        seconds: began.elapsed().as_secs_f64(),
        ingest_ms: Vec::new(),
        recall_ms: Vec::new(),
        errors: 0,
        first_error: None,
        peak_rss: None,
        server_cpu_s: None,
        engine_recall_s: None,
        index_upkeep: None,
    };
    for run in per_client {
        r.ingest_ms.extend(run.ingest);
        r.recall_ms.extend(run.recall);
        r.errors += run.errors;
        if r.first_error.is_none() {
            r.first_error = run.first;
        }
    }
    Ok(r)
}

/// An event no earlier round or client wrote.
pub(super) fn fresh_event(round: usize, client: usize, op: u64, i: usize) -> Value {
    json!({"event_id": format!("load-{round}-{client}-{op}-{i}"), "event_type": "tool.execute",
        "occurred_at": "2026-11-22T12:00:00Z", "session_id": format!("load-{round}-{client}"),
        "agent_id": format!("load-agent-{client}"), "trace_id": format!("load-{round}"),
        "tool_name": "http_get", "status": "completed",
        "payload": {"message": format!("fetched page {op} of the billing report for client {client}")}})
}

/// CPU time (user and system) a process has used so far, in seconds (Linux `/proc/PID/stat`).
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces:
    // utime and stime are the 12th and 13th of them.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// Milliseconds of server CPU per request of a round, when measured.
fn cpu_per_request_ms(r: &Round) -> Option<f64> {
    let requests = r.ingest_ms.len() + r.recall_ms.len();
    r.server_cpu_s.filter(|_| requests > 0).map(|s| s * 1e3 / requests as f64)
}

/// The mean of `ms`, if any.
fn mean(ms: &[f64]) -> Option<f64> {
    (!ms.is_empty()).then(|| ms.iter().sum::<f64>() / ms.len() as f64)
}

/// Peak resident memory of a process in bytes (Linux `VmHWM`).
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn print(rounds: &[Round], args: &ServeArgs<'_>) -> anyhow::Result<()> {
    let stats = |ms: &[f64]| {
        let s = sorted(ms.to_vec());
        (percentile(&s, 0.50), percentile(&s, 0.95), percentile(&s, 0.99))
    };
    if args.json {
        let list: Vec<Value> = rounds
            .iter()
            .map(|r| {
                let (ip50, ip95, ip99) = stats(&r.ingest_ms);
                let (rp50, rp95, rp99) = stats(&r.recall_ms);
                let requests = (r.ingest_ms.len() + r.recall_ms.len()) as f64;
                json!({"clients": r.clients, "seconds": r.seconds,
                    "requests_per_s": requests / r.seconds,
                    "events_per_s": (r.ingest_ms.len() * BATCH) as f64 / r.seconds,
                    "ingest_ms": {"count": r.ingest_ms.len(), "p50": ip50, "p95": ip95, "p99": ip99},
                    "recall_ms": {"count": r.recall_ms.len(), "p50": rp50, "p95": rp95, "p99": rp99},
                    "errors": r.errors, "first_error": r.first_error,
                    "recall_ms_mean": mean(&r.recall_ms),
                    "engine_recall_ms_mean": r.engine_recall_s.map(|s| s * 1e3),
                    "index_upkeep": r.index_upkeep.map(|(n, s)| json!({"steps": n, "writer_ms": s * 1e3})),
                    "server_peak_rss_bytes": r.peak_rss,
                    "server_cpu_ms_per_request": cpu_per_request_ms(r)})
            })
            .collect();
        return print_json(&json!({"preload": args.preload, "rounds": list}));
    }
    println!(
        "ctxgraph bench serve: {} events preloaded; one request in {INGEST_EVERY} ingests {BATCH} events, the others recall (k = 10)",
        args.preload
    );
    let mut t = table(&[
        "clients",
        "requests/s",
        "events/s",
        "recall p50/p95/p99 ms",
        "recall mean: client / engine ms",
        "ingest p50/p95/p99 ms",
        "errors",
        "server peak RSS",
        "server CPU per request",
    ]);
    for r in rounds {
        let (ip50, ip95, ip99) = stats(&r.ingest_ms);
        let (rp50, rp95, rp99) = stats(&r.recall_ms);
        let requests = (r.ingest_ms.len() + r.recall_ms.len()) as f64;
        t.add_row(vec![
            r.clients.to_string(),
            format!("{:.0}", requests / r.seconds),
            format!("{:.0}", (r.ingest_ms.len() * BATCH) as f64 / r.seconds),
            format!("{rp50:.1} / {rp95:.1} / {rp99:.1}"),
            format!(
                "{} / {}",
                mean(&r.recall_ms).map_or("n/a".to_owned(), |ms| format!("{ms:.2}")),
                r.engine_recall_s.map_or("n/a".to_owned(), |s| format!("{:.2}", s * 1e3))
            ),
            format!("{ip50:.1} / {ip95:.1} / {ip99:.1}"),
            r.errors.to_string(),
            r.peak_rss.map_or("n/a".to_owned(), |b| format!("{:.0} MiB", b as f64 / 1048576.0)),
            cpu_per_request_ms(r).map_or("n/a".to_owned(), |ms| format!("{ms:.2} ms")),
        ]);
    }
    println!("{t}");
    for r in rounds {
        if let Some((steps, seconds)) = r.index_upkeep {
            println!(
                "{} clients: the writer spent {:.0} ms on index upkeep ({steps} installs or rebuilds)",
                r.clients,
                seconds * 1e3
            );
        }
    }
    for r in rounds.iter().filter(|r| r.errors > 0) {
        eprintln!(
            "{} clients: {} errors; first: {}",
            r.clients,
            r.errors,
            r.first_error.as_deref().unwrap_or("?")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{recall_histogram, upkeep_histogram};

    #[test]
    fn the_recall_histogram_is_read_from_the_exposition() {
        let text = "# TYPE ctxgraph_recall_seconds histogram\n\
            ctxgraph_recall_seconds_bucket{le=\"0.001\"} 3\n\
            ctxgraph_recall_seconds_sum 0.0125\n\
            ctxgraph_recall_seconds_count 5\n";
        assert_eq!(recall_histogram(text), Some((0.0125, 5)));
        assert_eq!(recall_histogram("ctxgraph_recall_seconds_sum 1\n"), None);
        assert_eq!(
            recall_histogram("ctxgraph_recall_seconds_summary 1\nctxgraph_recall_seconds_count 2"),
            None
        );
    }

    #[test]
    fn index_upkeep_is_summed_over_its_outcomes() {
        let text = "# TYPE ctxgraph_index_writer_seconds histogram\n\
            ctxgraph_index_writer_seconds_bucket{outcome=\"installed\",le=\"0.1\"} 2\n\
            ctxgraph_index_writer_seconds_sum{outcome=\"installed\"} 0.25\n\
            ctxgraph_index_writer_seconds_count{outcome=\"installed\"} 2\n\
            ctxgraph_index_writer_seconds_sum{outcome=\"stale\"} 0.5\n\
            ctxgraph_index_writer_seconds_count{outcome=\"stale\"} 1\n";
        assert_eq!(upkeep_histogram(text), Some((3, 0.75)));
        assert_eq!(
            upkeep_histogram("# TYPE ctxgraph_index_writer_seconds histogram\n"),
            Some((0, 0.0))
        );
        assert_eq!(upkeep_histogram("ctxgraph_recall_seconds_sum 1\n"), None);
    }
}
