//! `ctxgraph bench crash`: SIGKILL at random moments while records are written, then proof that
//! no acknowledged record was lost and that the graph equals its reprojection.
//!
//! Every run writes events no earlier run wrote into one store, through `ctxgraph ingest
//! --progress-json` (a record is acknowledged once a progress line counts its line) or through a
//! `ctxgraph serve` fed by writer threads (acknowledged once its batch was answered 2xx). The
//! process is killed with SIGKILL after a random number of acknowledged batches plus a random
//! delay, so the kill lands mid-batch, mid-enrichment or between requests. After each kill the
//! store must open with its graph level with its log (a record and its projection commit
//! together). After the last, every acknowledged event must be in the log, and the graph, once
//! enrichment has caught up, must equal the one rebuilt from the log.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use ctxgraph::{Edge, Engine, EngineOptions, Node, NodeKey, OpenMode};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::serve::{agent, post};
use super::{synthetic_jsonl, temp_dir};
use crate::Outcome;
use crate::args::CrashTarget;
use crate::output::{print_json, table};

/// The tenant (and so the store file) the killed server writes to.
const TENANT: &str = "crash";
/// Events per HTTP ingest request.
const HTTP_BATCH: usize = 20;
/// Batches (progress lines) per ingest run: the kill comes after a random number of them.
const INGEST_BATCHES: usize = 20;
/// Longest extra wait after the chosen acknowledgement, in milliseconds.
const MAX_DELAY_MS: u64 = 40;
/// Log records read per page when listing what the log holds.
const LOG_PAGE: usize = 10_000;

/// What `bench crash` was asked to do.
pub(crate) struct CrashArgs<'a> {
    /// How many writers are killed.
    pub(crate) kills: usize,
    /// Fresh events each run writes.
    pub(crate) events_per_run: usize,
    /// Which writer is killed.
    pub(crate) target: CrashTarget,
    /// Writer threads feeding a server.
    pub(crate) writers: usize,
    /// Seed of the kill moments.
    pub(crate) seed: u64,
    /// Where the store lives (default: a temporary directory).
    pub(crate) dir: Option<&'a Path>,
    /// JSON output.
    pub(crate) json: bool,
}

/// What the runs of one kind of writer found.
#[derive(Default)]
struct Tally {
    kills: u64,
    /// Runs whose writer had acknowledged everything before the kill.
    done_before_kill: u64,
    /// The event ids it acknowledged.
    acknowledged: Vec<String>,
    /// Kills after which the graph was behind the log.
    behind: u64,
    seconds: f64,
}

/// What one killed run did.
struct Run {
    acknowledged: Vec<String>,
    done_before_kill: bool,
}

/// Every node, edge and parked edge, in a canonical order.
#[derive(PartialEq)]
struct GraphDump {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    pending: Vec<(NodeKey, Edge)>,
}

pub(crate) fn crash(args: &CrashArgs<'_>) -> anyhow::Result<Outcome> {
    if args.kills == 0 || args.events_per_run == 0 || args.writers == 0 {
        bail!("--kills, --events-per-run and --writers: give at least 1");
    }
    let tmp = temp_dir(args.dir)?;
    let data = tmp.path().to_owned();
    let store = tenant_store(&data);
    let key = ctxgraph::Principals::open(&data.join("principals.json"))?.add(
        "crash-writer",
        TENANT,
        &["writer".to_owned()],
    )?;
    let exe = std::env::current_exe().context("finding the ctxgraph binary")?;
    let base: Vec<Value> = synthetic_jsonl(args.events_per_run)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut rng = SmallRng::seed_from_u64(args.seed);
    let mut tallies = [Tally::default(), Tally::default()];
    let every = (args.kills / 20).max(1);
    let started = Instant::now();
    for run in 0..args.kills {
        let serve = match args.target {
            CrashTarget::Ingest => false,
            CrashTarget::Serve => true,
            CrashTarget::Both => run % 2 == 1,
        };
        let events = run_events(&base, run);
        let t = Instant::now();
        let done = if serve {
            kill_serve(&exe, &data, &key, &events, args.writers, &mut rng)?
        } else {
            kill_ingest(&exe, &store, &data, &events, &mut rng)?
        };
        let tally = &mut tallies[usize::from(serve)];
        tally.kills += 1;
        tally.done_before_kill += u64::from(done.done_before_kill);
        let acknowledged = done.acknowledged.len();
        tally.acknowledged.extend(done.acknowledged);
        // A kill before the store was created leaves nothing to open (and nothing acknowledged).
        let mut log_length = 0;
        if store.exists() {
            let engine = Engine::open(&store, OpenMode::MustExist, EngineOptions::default())
                .with_context(|| format!("opening {} after kill {}", store.display(), run + 1))?;
            let c = engine.owner_reader()?.checkpoints()?;
            log_length = c.log_length;
            if c.projected_through != c.log_length {
                tally.behind += 1;
                eprintln!(
                    "kill {}: the graph is at position {} of a log of {}",
                    run + 1,
                    c.projected_through,
                    c.log_length
                );
            }
        }
        tally.seconds += t.elapsed().as_secs_f64();
        if (run + 1) % every == 0 || run + 1 == args.kills {
            eprintln!(
                "kill {}/{}: {} ({acknowledged} acknowledged; the log holds {log_length})",
                run + 1,
                args.kills,
                if serve { "serve" } else { "ingest" }
            );
        }
    }

    eprintln!("checking the log and reprojecting ...");
    let check = Instant::now();
    let (logged, equal, counts) = if store.exists() {
        let mut engine = Engine::open(&store, OpenMode::MustExist, EngineOptions::default())?;
        let logged = logged_ids(&engine)?;
        // A kill during enrichment leaves it behind: the next writer would finish it.
        engine.enrich(&mut |_, _| {})?;
        let incremental = dump(&engine)?;
        engine.reproject(&mut |_, _| {})?;
        engine.enrich(&mut |_, _| {})?;
        let rebuilt = dump(&engine)?;
        if incremental != rebuilt {
            describe_difference(&incremental, &rebuilt);
        }
        let counts = (incremental.nodes.len(), incremental.edges.len());
        (logged, incremental == rebuilt, counts)
    } else {
        (HashSet::new(), true, (0, 0))
    };
    let check_secs = check.elapsed().as_secs_f64();
    let lost = |t: &Tally| t.acknowledged.iter().filter(|id| !logged.contains(*id)).count();
    let names = ["ingest", "serve"];
    let total_lost: usize = tallies.iter().map(lost).sum();
    let total_acked: usize = tallies.iter().map(|t| t.acknowledged.len()).sum();
    let behind: u64 = tallies.iter().map(|t| t.behind).sum();
    let seconds = started.elapsed().as_secs_f64();
    let used = || names.iter().zip(&tallies).filter(|(_, t)| t.kills > 0);
    if args.json {
        let writers: Vec<Value> = used()
            .map(|(name, t)| {
                json!({"writer": name, "kills": t.kills, "done_before_kill": t.done_before_kill,
                    "acknowledged": t.acknowledged.len(), "lost": lost(t),
                    "graph_behind_log": t.behind, "seconds": t.seconds})
            })
            .collect();
        print_json(&json!({"kills": args.kills, "events_per_run": args.events_per_run,
            "writers": writers, "acknowledged": total_acked, "lost": total_lost,
            "graph_behind_log": behind, "reproject_equal": equal, "nodes": counts.0,
            "edges": counts.1, "check_seconds": check_secs, "seconds": seconds}))?;
    } else {
        println!(
            "ctxgraph bench crash: {} SIGKILLs, {} fresh events per run, one store",
            args.kills, args.events_per_run
        );
        let mut t = table(&[
            "writer",
            "kills",
            "done before the kill",
            "acknowledged",
            "lost",
            "graph behind log",
            "reproject equal",
            "seconds",
        ]);
        for (name, tally) in used() {
            t.add_row(vec![
                (*name).to_owned(),
                tally.kills.to_string(),
                tally.done_before_kill.to_string(),
                tally.acknowledged.len().to_string(),
                lost(tally).to_string(),
                tally.behind.to_string(),
                String::new(),
                format!("{:.1}", tally.seconds),
            ]);
        }
        t.add_row(vec![
            "total".to_owned(),
            args.kills.to_string(),
            String::new(),
            total_acked.to_string(),
            total_lost.to_string(),
            behind.to_string(),
            format!(
                "{} ({} nodes, {} edges)",
                if equal { "yes" } else { "NO" },
                counts.0,
                counts.1
            ),
            format!("{seconds:.1}"),
        ]);
        println!("{t}");
    }
    drop(tmp);
    let failed = total_lost > 0 || behind > 0 || !equal;
    Ok(if failed { Outcome::Failed } else { Outcome::Done })
}

/// The base events with every id that ties them together made unique to `run`, so each run
/// writes events no other run wrote, with their parent links and sessions intact.
fn run_events(base: &[Value], run: usize) -> Vec<Value> {
    base.iter()
        .map(|e| {
            let mut e = e.clone();
            for field in ["event_id", "parent_event_id", "session_id", "trace_id"] {
                if let Some(Value::String(s)) = e.get_mut(field) {
                    *s = format!("r{run}-{s}");
                }
            }
            e
        })
        .collect()
}

fn event_ids(events: &[Value]) -> impl Iterator<Item = String> + '_ {
    events.iter().filter_map(|e| e["event_id"].as_str().map(str::to_owned))
}

/// One `ctxgraph ingest`, killed after a random number of acknowledged batches and a random
/// delay.
fn kill_ingest(
    exe: &Path,
    store: &Path,
    dir: &Path,
    events: &[Value],
    rng: &mut SmallRng,
) -> anyhow::Result<Run> {
    let file = dir.join("run.jsonl");
    let mut text = String::new();
    for e in events {
        text.push_str(&e.to_string());
        text.push('\n');
    }
    std::fs::write(&file, text).with_context(|| format!("writing {}", file.display()))?;
    let batch = events.len().div_ceil(INGEST_BATCHES).max(1);
    let mut child = Command::new(exe)
        .env_remove("CTXGRAPH_DB")
        .arg("--db")
        .arg(store)
        .args(["ingest", "--batch-size", &batch.to_string(), "--progress-json"])
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting ctxgraph ingest")?;
    let stderr = child.stderr.take().context("the ingest's progress lines")?;
    let mut lines = BufReader::new(stderr).lines();
    let wait_for = rng.random_range(0..=INGEST_BATCHES);
    let mut acked = 0;
    for _ in 0..wait_for {
        match lines.next() {
            Some(Ok(line)) => acked = acked.max(acknowledged_lines(&line)),
            _ => break,
        }
    }
    std::thread::sleep(Duration::from_millis(rng.random_range(0..=MAX_DELAY_MS)));
    let ended = matches!(child.try_wait(), Ok(Some(_)));
    // SIGKILL; an ingest that already ended has nothing left to kill.
    let _ = child.kill();
    child.wait().context("waiting for the killed ingest")?;
    // Progress lines written before the kill are acknowledgements too.
    for line in lines.map_while(Result::ok) {
        acked = acked.max(acknowledged_lines(&line));
    }
    let acknowledged: Vec<String> = event_ids(&events[..acked.min(events.len())]).collect();
    Ok(Run { done_before_kill: ended || acknowledged.len() == events.len(), acknowledged })
}

/// The input lines a `--progress-json` line says are durable.
fn acknowledged_lines(line: &str) -> usize {
    serde_json::from_str::<Value>(line)
        .ok()
        .and_then(|v| v["lines"].as_u64())
        .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
}

/// One `ctxgraph serve` fed by `writers` threads, killed after a random number of
/// acknowledged batches and a random delay.
fn kill_serve(
    exe: &Path,
    data: &Path,
    key: &str,
    events: &[Value],
    writers: usize,
    rng: &mut SmallRng,
) -> anyhow::Result<Run> {
    let mut child = Command::new(exe)
        .env_remove("CTXGRAPH_DB")
        .args(["serve", "--addr", "127.0.0.1:0", "--data"])
        .arg(data)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting ctxgraph serve")?;
    let stdout = child.stdout.take().context("the server's output")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let Some(url) = line.trim().strip_prefix("listening on ").map(str::to_owned) else {
        let _ = child.kill();
        let _ = child.wait();
        bail!("the server did not start: its first line was {line:?}");
    };
    let batches: Vec<&[Value]> = events.chunks(HTTP_BATCH).collect();
    let wait_for = rng.random_range(0..=batches.len());
    let delay = Duration::from_millis(rng.random_range(0..=MAX_DELAY_MS));
    let acked = Mutex::new(Vec::new());
    let acked_batches = AtomicUsize::new(0);
    let writers_done = AtomicUsize::new(0);
    let mut ended = false;
    std::thread::scope(|s| {
        for w in 0..writers {
            let (acked, acked_batches, writers_done) = (&acked, &acked_batches, &writers_done);
            let (batches, url) = (&batches, &url);
            s.spawn(move || {
                let agent = agent();
                for batch in batches.iter().skip(w).step_by(writers) {
                    let body = json!({"events": batch});
                    // The kill ends every writer: its next request finds no server.
                    if post(&agent, url, key, "/v1/events", &body).is_err() {
                        break;
                    }
                    acked.lock().unwrap_or_else(PoisonError::into_inner).extend(event_ids(batch));
                    acked_batches.fetch_add(1, Ordering::SeqCst);
                }
                writers_done.fetch_add(1, Ordering::SeqCst);
            });
        }
        while acked_batches.load(Ordering::SeqCst) < wait_for
            && writers_done.load(Ordering::SeqCst) < writers
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(delay);
        ended = matches!(child.try_wait(), Ok(Some(_)));
        let _ = child.kill();
        let _ = child.wait();
    });
    let acknowledged = acked.into_inner().unwrap_or_else(PoisonError::into_inner);
    if ended {
        bail!("the server ended before it was killed");
    }
    Ok(Run { done_before_kill: acknowledged.len() == events.len(), acknowledged })
}

/// The ids of every record in the log.
fn logged_ids(engine: &Engine) -> anyhow::Result<HashSet<String>> {
    let snap = engine.owner_reader()?;
    let mut ids = HashSet::new();
    let mut from = 1;
    loop {
        let page = snap.log(from, LOG_PAGE)?;
        let Some(last) = page.last().map(|e| e.position) else {
            return Ok(ids);
        };
        from = last + 1;
        ids.extend(page.into_iter().map(|e| e.id));
    }
}

/// The whole graph in a canonical order (listing order follows internal node ids, which
/// depend on arrival order: sorted by key).
fn dump(engine: &Engine) -> anyhow::Result<GraphDump> {
    let snap = engine.owner_reader()?;
    let mut nodes = Vec::new();
    for label in engine.schema().node_types().keys() {
        nodes.extend(snap.nodes(label, None, usize::MAX >> 2)?);
    }
    let mut edges = Vec::new();
    for edge_type in engine.schema().edge_types().keys() {
        edges.extend(snap.edges_of_type(edge_type, None, usize::MAX >> 2)?);
    }
    nodes.sort_by(|a, b| a.key.cmp(&b.key));
    edges.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(GraphDump { nodes, edges, pending: snap.pending_edges()? })
}

/// Name the first node and edge that differ between the two graphs, on stderr.
fn describe_difference(incremental: &GraphDump, rebuilt: &GraphDump) {
    eprintln!(
        "the graphs differ: {} / {} nodes, {} / {} edges, {} / {} parked edges (incremental / reprojected)",
        incremental.nodes.len(),
        rebuilt.nodes.len(),
        incremental.edges.len(),
        rebuilt.edges.len(),
        incremental.pending.len(),
        rebuilt.pending.len()
    );
    if let Some((a, b)) = incremental.nodes.iter().zip(&rebuilt.nodes).find(|(a, b)| a != b) {
        eprintln!("first differing node: {a:?}\n  reprojected: {b:?}");
    }
    if let Some((a, b)) = incremental.edges.iter().zip(&rebuilt.edges).find(|(a, b)| a != b) {
        eprintln!("first differing edge: {a:?}\n  reprojected: {b:?}");
    }
}

/// The store file the crash tenant of a data directory writes to (as the server lays it out).
fn tenant_store(data: &Path) -> PathBuf {
    data.join("tenants").join(format!("{TENANT}.ctxg"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_events_are_fresh_and_keep_their_links() {
        let base = vec![
            json!({"event_id": "e1", "session_id": "s", "trace_id": "t"}),
            json!({"event_id": "e2", "parent_event_id": "e1", "session_id": "s"}),
        ];
        let a = run_events(&base, 0);
        let b = run_events(&base, 1);
        assert_eq!(a[1]["parent_event_id"], a[0]["event_id"]);
        assert_ne!(a[0]["event_id"], b[0]["event_id"]);
        assert_ne!(a[0]["session_id"], b[0]["session_id"]);
    }

    #[test]
    fn progress_lines_count_durable_lines() {
        assert_eq!(acknowledged_lines(r#"{"lines": 40, "accepted": 40, "last_position": 90}"#), 40);
        assert_eq!(acknowledged_lines("error: the disk is full"), 0);
        assert!(tenant_store(Path::new("d")).ends_with("tenants/crash.ctxg"));
    }
}
