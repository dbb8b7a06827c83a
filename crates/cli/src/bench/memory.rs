//! `ctxgraph bench memory`: decision-memory traversal latency (evolution chain, impact) on a
//! store of synthetic memories, optionally among synthetic background events, with the time to
//! build the automatic links and the links per memory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use ctxgraph::{Engine, EngineOptions, OpenMode, Projection, TraversalOptions, ValidRecord};
use serde_json::{Value, json};

use super::{load_projected, synthetic_jsonl, temp_dir};
use crate::Outcome;
use crate::output::{print_json, table};

/// Memories per topic on average (500 topics at 10,000 memories).
const PER_TOPIC: usize = 20;
/// Memories per session, saved six minutes apart (so temporal links form inside the hour).
const PER_SESSION: usize = 10;

const VERBS: [&str; 8] = ["use", "switch to", "drop", "cache", "shard", "retry", "index", "batch"];
const NOUNS: [&str; 12] = [
    "jwt tokens",
    "server sessions",
    "redis",
    "postgres",
    "the queue",
    "grpc",
    "rest endpoints",
    "the cdn",
    "feature flags",
    "the scheduler",
    "read replicas",
    "the search index",
];
const WHY: [&str; 6] = [
    "it scales",
    "latency is too high",
    "it is simpler",
    "costs are lower",
    "ops asked for it",
    "the audit requires it",
];

/// The synthetic memory records, in log order: kinds cycle decision ×4, checkpoint ×3, insight
/// ×2, context; each decision supersedes its topic's previous decision, each checkpoint
/// implements its topic's latest decision, and every third decision gets an outcome an hour later.
fn records(memories: usize) -> Vec<Value> {
    let topics = (memories / PER_TOPIC).max(1);
    let base = 1_790_000_000i64;
    let mut latest: BTreeMap<usize, String> = BTreeMap::new();
    let mut out = Vec::with_capacity(memories + memories / 8);
    let mut decisions = 0usize;
    for i in 0..memories {
        let topic = (i.wrapping_mul(7919) + i / 97) % topics;
        let kind = match i % 10 {
            0..=3 => "decision",
            4..=6 => "checkpoint",
            7 | 8 => "insight",
            _ => "context",
        };
        let at = base + (i as i64) * 360;
        let created_at = chrono::DateTime::from_timestamp(at, 0).unwrap_or_default().to_rfc3339();
        let id = format!("m{i:07}");
        let content = format!(
            "{} {} for topic {topic}",
            VERBS[(i / 3 + topic) % VERBS.len()],
            NOUNS[(topic + i / 7) % NOUNS.len()]
        );
        let mut r = json!({"record_type": "memory", "memory_id": id, "kind": kind,
            "topic": format!("topic {topic}"), "content": content,
            "reasoning": WHY[(i + topic) % WHY.len()],
            "session_id": format!("s{}", i / PER_SESSION), "created_at": created_at});
        match kind {
            "decision" => {
                if let Some(prev) = latest.insert(topic, id.clone()) {
                    r["supersedes"] = json!(prev);
                }
                decisions += 1;
                if decisions.is_multiple_of(3) {
                    out.push(r);
                    let outcome = ["failed", "success", "partial"][(decisions / 3) % 3];
                    let at = chrono::DateTime::from_timestamp(at + 3_600, 0).unwrap_or_default();
                    out.push(json!({"record_type": "memory_outcome", "memory_id": id,
                        "outcome": outcome, "reason": WHY[decisions % WHY.len()],
                        "at": at.to_rfc3339()}));
                    continue;
                }
            }
            "checkpoint" => {
                if let Some(d) = latest.get(&topic) {
                    r["implements"] = json!([d]);
                }
            }
            _ => {}
        }
        out.push(r);
    }
    out
}

fn percentiles(ms: Vec<f64>) -> (f64, f64) {
    let sorted = super::sorted(ms);
    (super::percentile(&sorted, 0.50), super::percentile(&sorted, 0.99))
}

pub(crate) fn memory(
    memories: usize,
    events: usize,
    queries: usize,
    dir: Option<&Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    let tmp = temp_dir(dir)?;
    let path = tmp.path().join("memory.ctxg");
    let mut engine = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    if events > 0 {
        let jsonl = synthetic_jsonl(events);
        eprintln!("building the store: {events} background events ...");
        load_projected(&mut engine, &jsonl)?;
    }
    eprintln!("building the store: {memories} memories ...");
    let list = records(memories);
    let started = Instant::now();
    for chunk in list.chunks(2_000) {
        let valid: Vec<ValidRecord> = chunk
            .iter()
            .map(|r| engine.validate(&r.to_string()).map_err(ctxgraph::Error::Validation))
            .collect::<Result<_, _>>()?;
        for outcome in engine.ingest_batch(&valid, Projection::Inline, true)? {
            outcome?;
        }
    }
    let save_s = started.elapsed().as_secs_f64();
    eprintln!("building the store: automatic links ...");
    let started = Instant::now();
    let linked = engine.link_memories()?;
    let link_s = started.elapsed().as_secs_f64();
    engine.checkpoint()?;
    drop(engine);

    let engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
    let snap = engine.owner_reader()?;
    let all = snap.memories()?;
    let as_of = all.last().map(|m| m.created_at_ns);
    let t = TraversalOptions { as_of_ns: as_of, ..TraversalOptions::default() };
    let topics: Vec<String> = {
        let mut v: Vec<String> = all.iter().filter_map(|m| m.topic.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    let decisions: Vec<&str> =
        all.iter().filter(|m| m.kind == "decision").map(|m| m.id.as_str()).collect();
    // Links per memory: every memory link edge, counted at both ends.
    let mut degree: BTreeMap<String, u64> = BTreeMap::new();
    let mut links = 0u64;
    // The links' properties as stored (the store keeps them as JSON text).
    let mut link_prop_bytes = 0u64;
    for edge_type in ["SUPERSEDES", "IMPLEMENTS", "OUTCOME_OF", "RELATES_TO", "TEMPORAL"] {
        for e in snap.edges_of_type(edge_type, None, usize::MAX >> 2)? {
            link_prop_bytes += serde_json::to_string(&e.props)?.len() as u64;
            for end in [&e.key.from, &e.key.to] {
                if end.label == "Memory" {
                    *degree.entry(end.id.clone()).or_default() += 1;
                }
            }
            links += 1;
        }
    }
    let max_degree = degree.values().copied().max().unwrap_or(0);
    let per_memory = links as f64 / all.len().max(1) as f64;

    let mut chain_len = 0usize;
    let time = |f: &mut dyn FnMut(usize) -> anyhow::Result<()>| -> anyhow::Result<Vec<f64>> {
        for i in 0..queries.min(200) {
            f(i)?; // warm-up
        }
        let mut ms = Vec::with_capacity(queries);
        for i in 0..queries {
            let s = Instant::now();
            f(i)?;
            ms.push(s.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(ms)
    };
    let pick = |i: usize, n: usize| (i.wrapping_mul(2_654_435_761)) % n.max(1);
    let evolution = time(&mut |i| {
        let topic = &topics[pick(i, topics.len())];
        let e = snap.evolution(topic, &t)?;
        chain_len = chain_len.max(e.map_or(0, |e| e.steps.len()));
        Ok(())
    })?;
    let mut reached = 0usize;
    let impact = time(&mut |i| {
        let id = decisions[pick(i, decisions.len())];
        reached = reached.max(snap.impact(id, &t)?.map_or(0, |x| x.items.len()));
        Ok(())
    })?;
    let (e50, e99) = percentiles(evolution);
    let (i50, i99) = percentiles(impact);
    // The engine's own snapshot for search: one read transaction at a time per connection.
    drop(snap);
    // Contextual search reads every memory's vector: timed on fewer questions.
    let asked = queries.min(100);
    let mut search = Vec::with_capacity(asked);
    let options = ctxgraph::MemorySearchOptions { traversal: t.clone(), ..Default::default() };
    for i in 0..asked {
        let q = format!("why did we {} {}", VERBS[i % VERBS.len()], NOUNS[i % NOUNS.len()]);
        let s = Instant::now();
        std::hint::black_box(engine.memory_context(&q, &options)?);
        search.push(s.elapsed().as_secs_f64() * 1000.0);
    }
    let (s50, s99) = percentiles(search);
    // Storage: the compacted file with every link, then without the automatic links (their
    // rows, index entries and properties), compacted again.
    drop(engine);
    let mut engine = Engine::open(&path, OpenMode::MustExist, EngineOptions::default())?;
    engine.vacuum()?;
    let store_bytes = engine.size_on_disk();
    engine.set_auto_link(false)?;
    engine.vacuum()?;
    let automatic_bytes = store_bytes.saturating_sub(engine.size_on_disk());
    let share = |b: u64| 100.0 * b as f64 / store_bytes.max(1) as f64;
    let (props_share, automatic_share) = (share(link_prop_bytes), share(automatic_bytes));
    if json {
        print_json(&json!({"memories": all.len(), "events": events, "queries": queries,
            "evolution_p50_ms": e50, "evolution_p99_ms": e99, "impact_p50_ms": i50,
            "impact_p99_ms": i99, "search_p50_ms": s50, "search_p99_ms": s99, "longest_chain": chain_len, "most_reached": reached,
            "links": links, "links_per_memory": per_memory, "max_links_of_a_memory": max_degree,
            "automatic_links": linked.total(), "save_seconds": save_s, "link_seconds": link_s,
            "store_bytes": store_bytes, "link_property_bytes": link_prop_bytes,
            "link_property_share_percent": props_share,
            "automatic_link_bytes": automatic_bytes, "automatic_link_share_percent": automatic_share}))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "ctxgraph bench memory: {} memories on {} topics, {events} background events, {queries} traversals each",
        all.len(),
        topics.len()
    )?;
    let mut tb = table(&["measure", "value"]);
    tb.add_row(vec!["evolution chain p50 / p99".to_owned(), format!("{e50:.3} / {e99:.3} ms")]);
    tb.add_row(vec!["  longest chain".to_owned(), format!("{chain_len} decisions")]);
    tb.add_row(vec!["impact analysis p50 / p99".to_owned(), format!("{i50:.3} / {i99:.3} ms")]);
    tb.add_row(vec!["  most memories reached".to_owned(), reached.to_string()]);
    tb.add_row(vec![
        format!("memory search with chain and evidence p50 / p99 ({asked} questions)"),
        format!("{s50:.2} / {s99:.2} ms"),
    ]);
    tb.add_row(vec!["save (stage 1, batches of 2,000)".to_owned(), format!("{save_s:.2} s")]);
    tb.add_row(vec![
        "automatic links (embed, index, link all)".to_owned(),
        format!("{link_s:.2} s"),
    ]);
    tb.add_row(vec![
        "automatic links: temporal / same topic / semantic".to_owned(),
        format!("{} / {} / {}", linked.temporal, linked.same_topic, linked.semantic),
    ]);
    tb.add_row(vec!["memory links (all types)".to_owned(), links.to_string()]);
    tb.add_row(vec!["links per memory (links / memories)".to_owned(), format!("{per_memory:.2}")]);
    tb.add_row(vec!["most links at one memory".to_owned(), max_degree.to_string()]);
    tb.add_row(vec!["store size (compacted)".to_owned(), format!("{store_bytes} bytes")]);
    tb.add_row(vec![
        "link properties, share of the store".to_owned(),
        format!("{link_prop_bytes} bytes, {props_share:.1} %"),
    ]);
    tb.add_row(vec![
        "automatic links (rows, index entries, properties), share".to_owned(),
        format!("{automatic_bytes} bytes, {automatic_share:.1} %"),
    ]);
    writeln!(out, "{tb}")?;
    Ok(Outcome::Done)
}
