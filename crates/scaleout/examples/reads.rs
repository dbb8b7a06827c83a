//! Measure one graph read as the engine makes it, on a `ScaleOutStore` (FalkorDB over the
//! network) and on the embedded store, for a quiet event and for the busiest entity of a
//! synthetic trace: the median and 90th percentile of many calls, and a bare `PING` round trip
//! to the server for scale.
//!
//! ```text
//! cargo run -p ctxgraph-scaleout --example reads -- redis://127.0.0.1:6379 [EVENTS] [CALLS]
//! ```
//!
//! The trace is written to a store of its own name, folded, measured and deleted afterwards.

use std::error::Error;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ctxgraph_ontology::graph::{Direction, NodeKey};
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_projection::project;
use ctxgraph_scaleout::{FalkorGraph, RedisLog, ScaleOutStore, StoreUrl, catch_up};
use ctxgraph_store::{Embedded, GraphReader, OpenMode, RemoteStore};
use ctxgraph_synth::{TraceConfig, trace};

type Res<T> = Result<T, Box<dyn Error>>;

/// How many edges a read asks for, about what recall's expansion asks of one node.
const LIMIT: usize = 20;

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().ok_or("usage: reads redis://HOST:PORT [EVENTS] [CALLS]")?;
    let events: usize = args.next().map_or(Ok(5_000), |a| a.parse())?;
    let calls: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let schema = Schema::core()?;
    let config = TraceConfig { events, ..TraceConfig::default() };
    let records = trace(&config)
        .map(|e| validate(&schema, &Limits::default(), &e.to_string()).map_err(|e| e.to_string()))
        .collect::<Result<Vec<ValidRecord>, String>>()?;

    let nanos = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let url = StoreUrl::parse(&format!("{server}/reads-{}-{nanos}", std::process::id()))?;
    let mut log = RedisLog::connect(&url)?;
    log.append_batch(&records.iter().collect::<Vec<_>>(), "t")?;
    let graph = FalkorGraph::connect(&url, &schema)?;
    catch_up(&schema, &log, &graph, usize::MAX)?;
    let dir = std::env::temp_dir().join(format!("ctxgraph-reads-{nanos}"));
    std::fs::create_dir_all(&dir)?;
    let mut embedded = Embedded::open(&dir.join("g.ctxg"), OpenMode::CreateIfMissing)?;
    let mut w = embedded.begin_write()?;
    for (i, r) in records.iter().enumerate() {
        project(&schema, &mut w, i as u64 + 1, r)?;
    }
    w.commit()?;

    let store = ScaleOutStore::connect(&url)?;
    let remote = store.begin_read()?;
    let local = embedded.begin_read()?;
    // The busiest entity (most edges) and an event in the middle of the trace.
    let mut busy = (0, NodeKey::new("Entity", ""));
    for n in local.nodes_by_label("Entity", None, usize::MAX)? {
        let degree: usize =
            local.edge_groups(&n.key, usize::MAX)?.iter().map(|g| g.edges.len()).sum();
        if degree > busy.0 {
            busy = (degree, n.key);
        }
    }
    let quiet = local
        .nodes_by_label("Event", None, usize::MAX)?
        .get(events / 2)
        .map(|n| n.key.clone())
        .ok_or("no event")?;
    println!(
        "{events} events folded; {calls} calls each; busiest entity {} with {} edges",
        busy.1, busy.0
    );

    let mut ping = redis::Client::open(format!("{server}/"))?.get_connection()?;
    let floor = time(calls, || {
        redis::cmd("PING").query::<String>(&mut ping)?;
        Ok(())
    })?;
    println!("{:<46} {}", "PING (the network round trip)", floor);

    let weight = |t: &str, out: bool| if t == "FOLLOWS" || out { 1.0 } else { 0.5 };
    for (who, key) in [("event", &quiet), ("busy entity", &busy.1)] {
        for (name, g) in [("falkordb", &*remote as &dyn GraphReader), ("embedded", &local)] {
            let cases: [(&str, &dyn Fn() -> Res<()>); 5] = [
                ("node", &|| g.node(key).map(drop).map_err(Into::into)),
                ("edges_of (both directions)", &|| {
                    g.edges_of(key, None, Direction::Both).map(drop).map_err(Into::into)
                }),
                ("heaviest_edges (20)", &|| {
                    g.heaviest_edges(key, &weight, LIMIT).map(drop).map_err(Into::into)
                }),
                ("heaviest_neighbours (20, 2 names)", &|| {
                    g.heaviest_neighbours(key, &weight, LIMIT, &["visibility", "agent_id"])
                        .map(drop)
                        .map_err(Into::into)
                }),
                ("edge_groups (20)", &|| g.edge_groups(key, LIMIT).map(drop).map_err(Into::into)),
            ];
            for (case, f) in cases {
                let t = time(calls, f)?;
                println!("{:<46} {t}", format!("{name} {who}: {case}"));
            }
        }
    }

    drop(remote);
    let mut admin = redis::Client::open(format!("{server}/"))?.get_connection()?;
    redis::cmd("GRAPH.DELETE").arg(graph.graph_name()).query::<redis::Value>(&mut admin)?;
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{}*", url.key_prefix())).query(&mut admin)?;
    for k in keys {
        redis::cmd("DEL").arg(k).query::<redis::Value>(&mut admin)?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Median and 90th percentile of `calls` calls of `f`.
struct Timing {
    median: Duration,
    p90: Duration,
}

impl std::fmt::Display for Timing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "median {:>8.1} µs   p90 {:>8.1} µs",
            self.median.as_secs_f64() * 1e6,
            self.p90.as_secs_f64() * 1e6
        )
    }
}

fn time(calls: usize, mut f: impl FnMut() -> Res<()>) -> Res<Timing> {
    let mut took = Vec::with_capacity(calls);
    for _ in 0..calls.max(1) {
        let started = Instant::now();
        f()?;
        took.push(started.elapsed());
    }
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    Ok(Timing { median: at(0.5), p90: at(0.9) })
}
