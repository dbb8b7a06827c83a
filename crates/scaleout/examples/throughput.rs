//! Measure how fast the Redis log appends and reads, with one and several writers, against the
//! embedded log, how fast FalkorDB takes graph writes, and how fast the projection folds the
//! Redis log into FalkorDB; prints one line per case.
//!
//! ```text
//! cargo run -p ctxgraph-scaleout --example throughput -- redis://127.0.0.1:6379 [RECORDS]
//! ```
//!
//! Every case writes to a store of its own name and deletes it afterwards.

use std::error::Error;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use ctxgraph_ontology::graph::{Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_scaleout::{FalkorGraph, RedisLog, StoreUrl, catch_up};
use ctxgraph_store::{Embedded, Log, LogReader, OpenMode, ProjectionGraph};

type Res<T> = Result<T, Box<dyn Error>>;

/// Records per batch in the batched cases (the engine ingests a JSONL file in such batches).
const BATCH: usize = 100;

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let server = args.next().ok_or("usage: throughput redis://HOST:PORT [RECORDS]")?;
    let n: usize = args.next().map_or(Ok(20_000), |a| a.parse())?;
    let schema = Schema::core()?;
    let records = (0..n)
        .map(|i| {
            let text = format!(
                r#"{{"event_id":"e{i}","event_type":"tool.call","occurred_at":"2026-11-20T09:00:00Z","session_id":"s{}","agent_id":"agent","trace_id":"t","payload":{{"text":"call number {i} of the measurement"}}}}"#,
                i % 50
            );
            validate(&schema, &Limits::default(), &text).map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<ValidRecord>, String>>()?;
    println!("{n} event records, batches of {BATCH}, server {server}");

    let rate = |count: usize, started: Instant| count as f64 / started.elapsed().as_secs_f64();

    // The embedded log: one write transaction per batch, as `ctxgraph ingest` commits.
    let dir = std::env::temp_dir().join(format!("ctxgraph-throughput-{}", unique()));
    std::fs::create_dir_all(&dir)?;
    {
        let mut store = Embedded::open(&dir.join("g.ctxg"), OpenMode::CreateIfMissing)?;
        let started = Instant::now();
        for part in records.chunks(BATCH) {
            let mut w = store.begin_write()?;
            for r in part {
                w.append(r, "t")?;
            }
            w.commit()?;
        }
        println!("embedded log, 1 writer, batches:  {:>9.0} appends/s", rate(n, started));
    }
    std::fs::remove_dir_all(&dir)?;

    let url = |tag: &str| StoreUrl::parse(&format!("{server}/throughput-{tag}-{}", unique()));

    // One writer, one script per record.
    let one = url("single")?;
    let mut log = RedisLog::connect(&one)?;
    let started = Instant::now();
    for r in &records {
        log.append(r, "t")?;
    }
    println!("redis log, 1 writer, one by one:  {:>9.0} appends/s", rate(n, started));

    // Reading it back in pages.
    let started = Instant::now();
    let mut from = 1;
    let mut read = 0;
    loop {
        let page = log.read_from(from, 1_000)?;
        let Some(last) = page.last() else { break };
        from = last.position + 1;
        read += page.len();
    }
    println!("redis log, read_from pages:       {:>9.0} records/s", rate(read, started));
    drop_store(&one)?;

    // 1, 2 and 4 writers, each its own connection, one script per batch.
    for writers in [1usize, 2, 4] {
        let shared = url(&format!("w{writers}"))?;
        let started = Instant::now();
        std::thread::scope(|scope| -> Res<()> {
            let handles: Vec<_> = (0..writers)
                .map(|w| {
                    let shared = shared.clone();
                    let mine: Vec<&ValidRecord> = records.iter().skip(w).step_by(writers).collect();
                    scope.spawn(move || -> Result<(), String> {
                        let mut log = RedisLog::connect(&shared).map_err(|e| e.to_string())?;
                        for part in mine.chunks(BATCH) {
                            log.append_batch(part, "t").map_err(|e| e.to_string())?;
                        }
                        Ok(())
                    })
                })
                .collect();
            for h in handles {
                h.join().map_err(|_| "a writer panicked")??;
            }
            Ok(())
        })?;
        let head = RedisLog::connect(&shared)?.head()?;
        println!(
            "redis log, {writers} writer(s), batches:   {:>9.0} appends/s (head {head})",
            rate(n, started)
        );
        drop_store(&shared)?;
    }

    // Projection writes on FalkorDB: a node per event and an edge to the previous one, one
    // query each (what a worker sends per record today).
    let graph_url = url("graph")?;
    let mut graph = FalkorGraph::connect(&graph_url, &schema)?;
    let nodes = n.min(5_000);
    let started = Instant::now();
    let mut previous: Option<NodeKey> = None;
    for i in 0..nodes {
        let key = NodeKey { label: "Event".into(), id: format!("e{i}") };
        graph.put_node(&Node { key: key.clone(), props: Properties::new() })?;
        if let Some(prev) = previous {
            graph.put_edge(&Edge {
                key: EdgeKey {
                    edge_type: "FOLLOWS".into(),
                    from: key.clone(),
                    to: prev,
                    qualifier: String::new(),
                },
                props: Properties::new(),
            })?;
        }
        previous = Some(key);
    }
    println!(
        "falkordb graph, node + edge:       {:>9.0} records/s ({nodes} records)",
        rate(nodes, started)
    );
    let mut conn = redis::Client::open(format!("{server}/"))?.get_connection()?;
    redis::cmd("GRAPH.DELETE").arg(graph.graph_name()).query::<redis::Value>(&mut conn)?;

    // The projection folding the Redis log into FalkorDB (what one worker does for one store).
    let folded_url = url("fold")?;
    let mut log = RedisLog::connect(&folded_url)?;
    let records_to_fold = n.min(2_000);
    let part: Vec<&ValidRecord> = records.iter().take(records_to_fold).collect();
    for chunk in part.chunks(BATCH) {
        log.append_batch(chunk, "t")?;
    }
    let graph = FalkorGraph::connect(&folded_url, &schema)?;
    let started = Instant::now();
    let folded = catch_up(&schema, &log, &graph, usize::MAX)?;
    println!(
        "projection fold, log to falkordb:  {:>9.0} records/s ({folded} records)",
        rate(folded as usize, started)
    );
    redis::cmd("GRAPH.DELETE").arg(graph.graph_name()).query::<redis::Value>(&mut conn)?;
    drop_store(&folded_url)?;
    Ok(())
}

/// A suffix no other run uses.
fn unique() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// Delete every key of a store.
fn drop_store(url: &StoreUrl) -> Res<()> {
    let mut conn =
        redis::Client::open(format!("redis://{}:{}/", url.host(), url.port()))?.get_connection()?;
    let keys: Vec<String> =
        redis::cmd("KEYS").arg(format!("{}*", url.key_prefix())).query(&mut conn)?;
    for key in keys {
        redis::cmd("DEL").arg(key).query::<redis::Value>(&mut conn)?;
    }
    Ok(())
}
