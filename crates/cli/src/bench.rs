//! `ctxgraph bench`: measurements printed as a table (never timed assertions in tests).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{Engine, EngineOptions, IngestOptions, OpenMode, Projection};
use serde_json::{Value, json};

use crate::Outcome;
use crate::output::{bytes, print_json, table};

mod crash;
mod forget;
mod memory;
mod scale_out;
mod scale_out_recall;
mod serve;
mod soak;
pub(crate) use crash::{CrashArgs, crash};
pub(crate) use forget::forget;
pub(crate) use memory::memory;
pub(crate) use scale_out::{Args as ScaleOutIngest, ingest as ingest_scale_out};
pub(crate) use scale_out_recall::{RecallStages, recall as recall_scale_out};
pub(crate) use serve::{ServeArgs, serve};
pub(crate) use soak::{SoakArgs, soak};

/// Opens timed to average the store's open cost.
const OPENS: u32 = 20;

struct Row {
    phase: &'static str,
    what: &'static str,
    count: u64,
    secs: f64,
    /// CPU time of the whole process (every thread) over the phase, where the system says.
    cpu: Option<f64>,
}

/// The phases `ingest` times, for its progress lines.
const INGEST_PHASES: usize = 4;
/// The phases `semantic` times.
const SEMANTIC_PHASES: usize = 4;

/// Time `work` (which returns how many records it handled) and add its row.
fn measure(
    rows: &mut Vec<Row>,
    phases: usize,
    phase: &'static str,
    what: &'static str,
    work: impl FnOnce() -> anyhow::Result<u64>,
) -> anyhow::Result<()> {
    eprintln!("phase {}/{phases}: {phase} ...", rows.len() + 1);
    let (started, cpu) = (Instant::now(), cpu_seconds());
    let count = work()?;
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu.zip(cpu_seconds()).map(|(before, after)| after - before);
    rows.push(Row { phase, what, count, secs, cpu });
    Ok(())
}

/// CPU seconds this process has used, all threads (those ended too), user and system: fields
/// 14 and 15 of `/proc/self/stat`, in clock ticks of 1/100 s (Linux's user-space tick). On a
/// machine shared with other work, wall-clock rates vary with the load and these much less.
/// `None` where there is no such file.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 1..)?.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<f64>().ok();
    Some((ticks(11)? + ticks(12)?) / 100.0)
}

pub(crate) fn ingest(
    events: usize,
    batch_size: usize,
    dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    let tmp = temp_dir(dir)?;
    let text = synthetic_jsonl(events);
    let input_bytes = text.len() as u64;
    let mut rows = Vec::new();

    // A: validate + append to the log, durable, projection deferred.
    let deferred_path = tmp.path().join("deferred.ctxg");
    let mut engine =
        Engine::open(&deferred_path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let deferred =
        IngestOptions { batch_size, projection: Projection::Deferred, ..IngestOptions::default() };
    measure(
        &mut rows,
        INGEST_PHASES,
        "log append",
        "parse + validate + append, fsync per batch",
        || Ok(engine.ingest_jsonl(text.as_bytes(), &deferred, &mut |_| {})?.accepted),
    )?;
    // B: stage-1 projection of that log (what `reproject` does).
    measure(
        &mut rows,
        INGEST_PHASES,
        "stage-1 projection",
        "decode + project from the log, committed in chunks",
        || Ok(engine.catch_up(&mut |_, _| {})?.records),
    )?;
    // Stage 2 on the same store: keywords, importance, summary, embedding, full-text index.
    measure(
        &mut rows,
        INGEST_PHASES,
        "stage-2 enrichment",
        "keywords, importance, summary, embedding (built-in model), BM25 index",
        || Ok(engine.enrich(&mut |_, _| {})?.events),
    )?;
    drop(engine);

    // C: the real path, end to end, projection inline.
    let path = tmp.path().join("inline.ctxg");
    let mut engine = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    let inline = IngestOptions { batch_size, ..IngestOptions::default() };
    measure(
        &mut rows,
        INGEST_PHASES,
        "end to end",
        "validate + append + project, fsync per batch",
        || Ok(engine.ingest_jsonl(text.as_bytes(), &inline, &mut |_| {})?.accepted),
    )?;
    engine.checkpoint()?;
    let stats = engine.owner_reader()?.store_stats()?;
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
                "seconds": r.secs, "per_second": r.count as f64 / r.secs,
                "cpu_seconds": r.cpu})).collect::<Vec<_>>(),
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
    let mut t =
        table(&["phase", "what is timed", "records", "seconds", "records/s", "CPU seconds"]);
    for r in &rows {
        t.add_row(vec![
            r.phase.to_owned(),
            r.what.to_owned(),
            r.count.to_string(),
            format!("{:.2}", r.secs),
            format!("{:.0}", r.count as f64 / r.secs),
            r.cpu.map_or_else(|| "-".to_owned(), |c| format!("{c:.2}")),
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

fn temp_dir(dir: Option<&Path>) -> anyhow::Result<tempfile::TempDir> {
    match dir {
        Some(d) => tempfile::Builder::new().prefix("ctxgraph-bench").tempdir_in(d),
        None => tempfile::Builder::new().prefix("ctxgraph-bench").tempdir(),
    }
    .context("creating a temporary directory for the bench stores")
}

/// The bench workload: a deterministic synthetic trace as JSONL.
fn synthetic_jsonl(events: usize) -> String {
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
    text
}

/// Append the workload (projection deferred, the fastest load) and project it: a store ready
/// for stages 2 and 3.
fn load_projected(engine: &mut Engine, jsonl: &str) -> anyhow::Result<()> {
    let ingest = IngestOptions { projection: Projection::Deferred, ..IngestOptions::default() };
    engine.ingest_jsonl(jsonl.as_bytes(), &ingest, &mut |_| {})?;
    engine.catch_up(&mut |_, _| {})?;
    Ok(())
}

/// Latencies in increasing order.
/// Build a store at `path` from synthetic JSONL: ingested, enriched, consolidated and
/// checkpointed, as the recall and forget benchmarks measure it.
fn build_consolidated(path: &Path, jsonl: &str) -> anyhow::Result<()> {
    let mut engine = Engine::open(path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    eprintln!("building the store: ingest ...");
    load_projected(&mut engine, jsonl)?;
    eprintln!("building the store: enrich ...");
    engine.enrich(&mut |_, _| {})?;
    eprintln!("building the store: consolidate ...");
    engine.consolidate()?;
    engine.checkpoint()?;
    Ok(())
}

fn sorted(mut ms: Vec<f64>) -> Vec<f64> {
    ms.sort_by(f64::total_cmp);
    ms
}

/// The `p` quantile (0..=1) of increasing latencies, nearest rank; 0 when there are none.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 * p) as usize).min(sorted.len().saturating_sub(1));
    sorted.get(at).copied().unwrap_or(0.0)
}

/// Recall@10 of the vector index is measured against exact search at this many neighbours.
const RECALL_K: usize = 10;

pub(crate) fn semantic(
    events: usize,
    queries: usize,
    dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    let tmp = temp_dir(dir)?;
    let jsonl = synthetic_jsonl(events);
    let path = tmp.path().join("semantic.ctxg");
    let mut engine = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    // The texts enrichment embeds, in log order, for the embedder row and the exact ground truth.
    let mut ids = Vec::with_capacity(events);
    let mut texts = Vec::with_capacity(events);
    for line in jsonl.lines() {
        let record = engine.validate(line).map_err(|e| anyhow::anyhow!("{e}"))?;
        if let ctxgraph::RecordBody::Event(e) = record.body() {
            ids.push(e.event_id.clone());
            texts.push(ctxgraph::enrich_event(e).text);
        }
    }
    let embedder = engine.embedder()?;
    let mut rows = Vec::new();
    let mut vectors: Vec<f32> = Vec::with_capacity(texts.len() * embedder.dimension());
    measure(&mut rows, SEMANTIC_PHASES, "embedding", "built-in static model, sentences", || {
        for chunk in texts.chunks(2_000) {
            let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
            for v in embedder.embed(&refs)? {
                vectors.extend_from_slice(&v);
            }
        }
        Ok(texts.len() as u64)
    })?;
    load_projected(&mut engine, &jsonl)?;
    measure(
        &mut rows,
        SEMANTIC_PHASES,
        "stage-2 enrichment",
        "keywords, importance, summary, embedding, BM25 index; events",
        || Ok(engine.enrich(&mut |_, _| {})?.events),
    )?;
    let mut report = None;
    measure(
        &mut rows,
        SEMANTIC_PHASES,
        "stage-3 consolidation",
        "summaries + vector index build + SIMILAR_TO; events",
        || {
            report = Some(engine.consolidate()?);
            Ok(events as u64)
        },
    )?;
    let report = report.unwrap_or_default();
    for (phase, secs) in &report.seconds {
        eprintln!("  {phase}: {secs:.2}s");
    }

    // Vector queries: held-in event texts (their own event is a legitimate answer), spread
    // evenly over the trace; truth is exact search over every vector.
    let dim = embedder.dimension();
    let step = (texts.len() / queries.max(1)).max(1);
    let picks: Vec<usize> = (0..texts.len()).step_by(step).take(queries).collect();
    let row_ids: Vec<i64> = (0..texts.len() as i64).collect();
    let by_id: std::collections::HashMap<&str, i64> =
        ids.iter().enumerate().map(|(i, id)| (id.as_str(), i as i64)).collect();
    engine.checkpoint()?;
    let snapshot = engine.owner_reader()?;
    let search = engine.options().search;
    let mut recall = 0.0;
    let mut query_secs = 0.0;
    for &q in &picks {
        let query = &vectors[q * dim..(q + 1) * dim];
        let started = Instant::now();
        let found = snapshot.nearest(query, RECALL_K, search)?;
        query_secs += started.elapsed().as_secs_f64();
        let found: Vec<(i64, f32)> = found
            .iter()
            .filter_map(|(n, score)| by_id.get(n.key.id.as_str()).map(|&i| (i, *score)))
            .collect();
        let truth = ctxgraph_ann::exact_top_k(query, &row_ids, &vectors, RECALL_K)?;
        recall += ctxgraph_ann::recall_at_k(&truth, &found, RECALL_K);
    }
    let n = picks.len().max(1) as f64;
    let (recall, query_ms) = (recall / n, query_secs * 1000.0 / n);
    let stats = snapshot.store_stats()?;
    let count = |list: &[(String, u64)], name: &str| {
        list.iter().find(|(k, _)| k == name).map_or(0, |(_, n)| *n)
    };
    let event_nodes = count(&stats.nodes, "Event").max(1) as f64;
    let similar = count(&stats.edges, "SIMILAR_TO");
    let same_as = count(&stats.edges, "SAME_AS");
    let entities = count(&stats.nodes, "Entity");
    let edges: u64 = stats.edges.iter().map(|(_, n)| n).sum();

    if json {
        print_json(&json!({
            "events": events,
            "phases": rows.iter().map(|r| json!({"phase": r.phase, "what": r.what, "count": r.count,
                "seconds": r.secs, "per_second": r.count as f64 / r.secs})).collect::<Vec<_>>(),
            "consolidation_phase_seconds": report.seconds.iter()
                .map(|(k, v)| json!({"phase": k, "seconds": v})).collect::<Vec<_>>(),
            "index": {"vectors": report.indexed_vectors, "lists": report.index_lists,
                "queries": picks.len(), "query_ms": query_ms, "recall_at_10": recall},
            "similar_to": similar, "similar_to_per_event": similar as f64 / event_nodes,
            "same_as": same_as, "entities": entities,
            "edges_per_event": edges as f64 / event_nodes,
            "bytes_on_disk": stats.bytes_on_disk,
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "ctxgraph bench semantic: {events} events, built-in model")?;
    let mut t = table(&["phase", "what is timed", "items", "seconds", "items/s"]);
    for r in &rows {
        t.add_row(vec![
            r.phase.to_owned(),
            r.what.to_owned(),
            r.count.to_string(),
            format!("{:.2}", r.secs),
            format!("{:.0}", r.count as f64 / r.secs),
        ]);
    }
    for (phase, secs) in &report.seconds {
        t.add_row(vec![
            format!("  consolidation: {phase}"),
            String::new(),
            String::new(),
            format!("{secs:.2}"),
            String::new(),
        ]);
    }
    writeln!(out, "{t}")?;
    let mut t = table(&["measure", "value"]);
    t.add_row(vec![
        "vector index".to_owned(),
        format!("{} vectors in {} lists", report.indexed_vectors, report.index_lists),
    ]);
    t.add_row(vec![
        format!("vector query (k = {RECALL_K}), mean of {}", picks.len()),
        format!("{query_ms:.2} ms"),
    ]);
    t.add_row(vec![format!("recall@{RECALL_K} vs exact search"), format!("{recall:.3}")]);
    t.add_row(vec![
        "SIMILAR_TO edges (per event)".to_owned(),
        format!("{similar} ({:.2})", similar as f64 / event_nodes),
    ]);
    t.add_row(vec!["SAME_AS edges / entities".to_owned(), format!("{same_as} / {entities}")]);
    t.add_row(vec![
        "edges per event (all types)".to_owned(),
        format!("{:.2}", edges as f64 / event_nodes),
    ]);
    t.add_row(vec!["size on disk".to_owned(), bytes(stats.bytes_on_disk)]);
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}

/// Questions for the recall benchmark, made from the trace: every n-th event's summary as a
/// lookup, its tool as a why-question, its session as a when-question.
fn questions(jsonl: &str, count: usize) -> Vec<String> {
    questions_at(&trace_events(jsonl), count, 0, 1)
}

/// The events of a synthetic trace, parsed.
fn trace_events(jsonl: &str) -> Vec<Value> {
    jsonl.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

/// [`questions`] from other events: the `part`-th of `parts` sets asked of events evenly
/// spaced through the trace, each set from events the others do not use (when the trace has
/// at least `parts` events per question).
fn questions_at(events: &[Value], count: usize, part: usize, parts: usize) -> Vec<String> {
    let step = (events.len() / count.max(1)).max(1);
    events
        .iter()
        .skip(step * part / parts.max(1))
        .step_by(step)
        .take(count)
        .enumerate()
        .map(|(i, e)| {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let payload = e
                .get("payload")
                .and_then(|p| ctxgraph::telling_text(p.as_object()?))
                .unwrap_or_default()
                .split_whitespace()
                .take(8)
                .collect::<Vec<_>>()
                .join(" ");
            match i % 3 {
                0 => format!("why did {} fail {payload}", text("tool_name")),
                1 => format!("when did {} {payload}", text("agent_id")),
                _ => payload,
            }
        })
        .collect()
}

/// A pack as one JSON line: what a faster recall must leave unchanged (scores to the bit,
/// as `serde_json` prints floats round-trip).
fn pack_line(pack: &ctxgraph::ContextPack) -> Value {
    let items: Vec<Value> = pack
        .items
        .iter()
        .map(|i| {
            let f = &i.factors;
            json!({
                "key": i.node.key.to_string(),
                "score": i.score,
                "factors": [f.relevance, f.path_weight, f.confidence, f.salience, f.focus],
                "found_by": i.found_by,
                "seed": i.seed.to_string(),
                "path": i.path.iter().map(|s| format!("{}{}>{}", s.edge_type,
                    if s.forward { "" } else { "<" }, s.to)).collect::<Vec<_>>(),
            })
        })
        .collect();
    let edges: Vec<String> = pack
        .edges
        .iter()
        .map(|e| format!("{}-{}->{}", e.edge.key.from, e.edge.key.edge_type, e.edge.key.to))
        .collect();
    let unknowns: Vec<String> =
        pack.unknowns.iter().map(|u| format!("{} {} {}", u.kind, u.item, u.missing)).collect();
    json!({"question": pack.query, "intent": format!("{:?}", pack.intent), "items": items,
        "edges": edges, "unknowns": unknowns, "candidates": pack.candidates})
}

/// The phases a recall times, in the order of [`phase_us`].
const PHASES: [&str; 6] = ["embed", "vector", "bm25", "entity", "expand", "stitch"];

/// A recall's phase times (µs), in the order of [`PHASES`].
fn phase_us(t: &ctxgraph::Timings) -> [u64; 6] {
    [t.embed_us, t.vector_us, t.bm25_us, t.entity_us, t.expand_us, t.stitch_us]
}

/// Where a benchmark's store lives.
pub(crate) enum Place<'a> {
    /// A temporary directory (in this directory, or the system's), removed at the end.
    Temp(Option<&'a Path>),
    /// This file, kept; reused when it exists.
    Keep(&'a Path),
}

pub(crate) fn recall(
    events: usize,
    queries: usize,
    threads: usize,
    place: Place<'_>,
    rankings: Option<&Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    let (_tmp, path) = match place {
        Place::Temp(dir) => {
            let tmp = temp_dir(dir)?;
            let path = tmp.path().join("recall.ctxg");
            (Some(tmp), path)
        }
        Place::Keep(path) => (None, path.to_path_buf()),
    };
    let jsonl = synthetic_jsonl(events);
    if path.exists() {
        eprintln!("reusing the store at {}", path.display());
        // A store built by an older version may lack the lexical index.
        let mut engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
        if engine.owner_reader()?.text_docs_outside_index()? > 0 {
            eprintln!("building the lexical index ...");
            engine.index_text()?;
        }
    } else {
        build_consolidated(&path, &jsonl)?;
    }
    // Three sets of questions from different events: the timed one, one to warm the engine up
    // with and one for the throughput runs. A warm-up with the timed questions themselves
    // would leave the very nodes they find decoded in the engine's node cache.
    let trace = trace_events(&jsonl);
    drop(jsonl);
    let qs = questions_at(&trace, queries, 0, 3);
    let warm = questions_at(&trace, queries, 1, 3);
    let others = questions_at(&trace, queries, 2, 3);
    drop(trace);
    // One warm-up pass (the vector index's lists are read into the engine's cache once), then
    // the timed pass, on one thread.
    let engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
    eprintln!("recall: {} questions, warm-up on {} others ...", qs.len(), warm.len());
    let ask = |engine: &Engine, q: &str| -> anyhow::Result<(f64, ctxgraph::Timings)> {
        let t = Instant::now();
        let pack = engine.recall(&ctxgraph::RecallQuery::new(q))?;
        let timings = pack.timings;
        std::hint::black_box(pack);
        Ok((t.elapsed().as_secs_f64() * 1000.0, timings))
    };
    for q in &warm {
        std::hint::black_box(engine.recall(&ctxgraph::RecallQuery::new(q.as_str()))?);
    }
    let mut ms = Vec::with_capacity(qs.len());
    let mut phases = [0u64; 6];
    for q in &qs {
        let (elapsed, t) = ask(&engine, q)?;
        ms.push(elapsed);
        for (sum, us) in phases.iter_mut().zip(phase_us(&t)) {
            *sum += us;
        }
    }
    let phase_ms = phases.map(|us| us as f64 / 1000.0 / qs.len().max(1) as f64);
    // The packs, written after the timing so that writing them costs it nothing (a warm
    // engine answers what a fresh one does).
    if let Some(file) = rankings {
        let mut out = std::fs::File::create(file)
            .with_context(|| format!("creating {}", file.display()))
            .map(std::io::BufWriter::new)?;
        for q in &qs {
            let pack = engine.recall(&ctxgraph::RecallQuery::new(q.as_str()))?;
            writeln!(out, "{}", pack_line(&pack))?;
        }
        out.flush()?;
    }
    let ms = sorted(ms);
    let (p50, p95, p99) = (percentile(&ms, 0.50), percentile(&ms, 0.95), percentile(&ms, 0.99));
    // Throughput: `threads` engines over the same file, each asking every question of the
    // third set (so the threads sharing caches also share what each other decoded); first on
    // fresh engines (each reads the index parts it probes and decodes the posting lists it
    // merges on its first questions), then on engines sharing the timed engine's caches, as a
    // server's readers share their tenant's: warm, like the latency above.
    let threads = threads.max(1);
    let qps_fresh = throughput(&path, &others, threads, None, ask)?;
    let qps = throughput(&path, &others, threads, Some(&engine.index_caches()), ask)?;
    drop(engine);
    if json {
        print_json(&json!({"events": events, "queries": qs.len(), "p50_ms": p50, "p95_ms": p95,
            "p99_ms": p99, "threads": threads, "queries_per_second": qps,
            "queries_per_second_fresh": qps_fresh,
            "phase_mean_ms": PHASES.iter().zip(phase_ms).map(|(n, v)| ((*n).to_owned(), json!(v)))
                .collect::<serde_json::Map<_, _>>()}))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph bench recall: {events} events, {} questions, k = 10, engine warmed on other questions",
        qs.len()
    )?;
    let mut t = table(&["measure", "value"]);
    t.add_row(vec!["p50 latency (with query embedding)".to_owned(), format!("{p50:.2} ms")]);
    t.add_row(vec!["p95 latency".to_owned(), format!("{p95:.2} ms")]);
    t.add_row(vec!["p99 latency".to_owned(), format!("{p99:.2} ms")]);
    for (name, v) in PHASES.iter().zip(phase_ms) {
        t.add_row(vec![format!("mean {name}"), format!("{v:.3} ms")]);
    }
    t.add_row(vec![
        format!("throughput, {threads} threads (shared warm caches)"),
        format!("{qps:.0} recalls/s"),
    ]);
    t.add_row(vec![
        format!("throughput, {threads} threads (fresh engines)"),
        format!("{qps_fresh:.0} recalls/s"),
    ]);
    writeln!(out, "{t}")?;
    Ok(Outcome::Done)
}

/// Recalls per second of `threads` engines over the store at `path`, each asking every one of
/// `qs`; the engines read through `caches` when given (else each through its own, empty).
fn throughput(
    path: &Path,
    qs: &[String],
    threads: usize,
    caches: Option<&ctxgraph::IndexCaches>,
    ask: impl Fn(&Engine, &str) -> anyhow::Result<(f64, ctxgraph::Timings)> + Sync,
) -> anyhow::Result<f64> {
    // Each engine is opened (on its thread: a connection stays on the thread that opened it)
    // before the clock starts, which all threads wait for: the figure is the recalls' alone.
    let ready = std::sync::Barrier::new(threads + 1);
    let started = std::thread::scope(|scope| -> anyhow::Result<Instant> {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let (ask, ready) = (&ask, &ready);
                scope.spawn(move || -> anyhow::Result<()> {
                    let opened = Engine::open(path, OpenMode::MustExist, EngineOptions::default())
                        .map(|mut engine| {
                            if let Some(caches) = caches {
                                engine.set_index_caches(caches.clone());
                            }
                            engine
                        });
                    ready.wait();
                    let engine = opened?;
                    for q in qs {
                        ask(&engine, q)?;
                    }
                    Ok(())
                })
            })
            .collect();
        ready.wait();
        let started = Instant::now();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a benchmark thread panicked"))??;
        }
        Ok(started)
    })?;
    Ok((threads * qs.len()) as f64 / started.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recall_benchmarks_question_sets_come_from_different_events() {
        let jsonl = synthetic_jsonl(600);
        let trace = trace_events(&jsonl);
        let sets: Vec<Vec<String>> = (0..3).map(|part| questions_at(&trace, 40, part, 3)).collect();
        // The timed set is the one the rankings files have always held.
        assert_eq!(sets[0], questions(&jsonl, 40));
        for set in &sets {
            assert_eq!(set.len(), 40);
        }
        // Each set asks of its own events: no question repeats one of another set at the same
        // place, and the sets differ as wholes.
        for (a, b) in [(0, 1), (0, 2), (1, 2)] {
            assert_ne!(sets[a], sets[b]);
            let same = sets[a].iter().zip(&sets[b]).filter(|(x, y)| x == y).count();
            assert!(same < 40 / 4, "sets {a} and {b} share {same} questions");
        }
    }
}
