//! `ctxgraph eval traces`: recall on agent runs, against a plain BM25 ranking computed in the
//! same run.
//!
//! A seeded trace from `ctxgraph_synth` arrives out of order with some lines sent twice, into a
//! fresh store; decision memories and facts derived from it are written through the engine's
//! write API; the store is enriched and consolidated. Then every question family
//! (`questions.rs`) is asked through `recall` with the question alone (no constraint, every
//! label) and the top 10 node keys are compared with the evidence read off the trace.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufReader, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{Engine, EngineOptions, IngestOptions, OpenMode, RecallQuery};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::{Latency, Rankings, Totals, bm25, score, score_columns};
use crate::Outcome;
use crate::output::{print_json, table};

mod knowledge;
mod questions;
#[cfg(test)]
mod tests;
mod trace;

use questions::{FAMILIES, Question, key};

/// Items ranked per question: recall is scored at 10.
const K: usize = 10;
/// How far (in lines) an event may arrive from its place in the trace.
const MAX_DISPLACEMENT: usize = 16;
/// Share of lines sent a second time.
const DUPLICATE_SHARE: f64 = 0.02;
/// Most lines between a line and its second sending.
const DUPLICATE_DELAY: usize = 64;
/// Progress lines per long step.
const PROGRESS_STEPS: u64 = 10;

/// What `eval traces` was asked.
pub(crate) struct TracesArgs<'a> {
    pub(crate) seed: u64,
    pub(crate) events: usize,
    pub(crate) per_family: usize,
    /// Build the store here instead of in a temporary directory.
    pub(crate) store: Option<&'a Path>,
    pub(crate) rankings: Option<&'a Path>,
    pub(crate) json: bool,
    /// Engine options of the store (the embedder chosen on the command line).
    pub(crate) options: EngineOptions,
    /// A scale-out store (`--db redis://…`): the trace goes to the new store `NAME-0` there,
    /// its later stages run in this process as the workers run them.
    pub(crate) scale_out: Option<&'a ctxgraph_scaleout::StoreUrl>,
}

/// Counts of what went into the store.
#[derive(Debug, Default)]
struct Loaded {
    lines: u64,
    accepted: u64,
    duplicates: u64,
    decisions: usize,
    facts: usize,
    sessions: usize,
}

/// The questions of the trace's own families (not those about the decisions and facts `eval
/// traces` writes besides), up to `per_family` of each, sampled by `seed`, with their evidence
/// as node keys: what a store holding only the events of `jsonl` (one generated event per line)
/// can be asked and scored on.
pub(crate) fn trace_questions(
    jsonl: &str,
    seed: u64,
    per_family: usize,
) -> anyhow::Result<Vec<(String, Vec<String>)>> {
    let mut trace = trace::Trace::new()?;
    for (i, line) in jsonl.lines().enumerate() {
        let event = serde_json::from_str(line)
            .with_context(|| format!("generated line {} is not JSON", i + 1))?;
        trace.push(event)?;
    }
    trace.finish();
    let knowledge = knowledge::Knowledge::default();
    Ok(questions::questions(&trace, &knowledge, seed, per_family)
        .into_iter()
        .map(|q| (q.text, q.evidence))
        .collect())
}

/// The keys of a pack's items, in rank order, as the evidence of [`trace_questions`] names them.
pub(crate) fn ranked_keys(pack: &ctxgraph::ContextPack) -> Vec<String> {
    pack.items.iter().map(|i| key(&i.node.key.label, &i.node.key.id)).collect()
}

/// Run `eval traces` and print its table (or JSON).
pub(crate) fn run(args: &TracesArgs<'_>) -> anyhow::Result<Outcome> {
    if args.scale_out.is_some() && args.store.is_some() {
        anyhow::bail!(
            "eval traces: --store names a store file and --db a scale-out store: give one \
             (rule: eval.one_store)"
        );
    }
    let started = Instant::now();
    let tmp = tempfile::Builder::new().prefix("ctxgraph-eval-traces").tempdir()?;
    let path = args.store.map_or_else(|| tmp.path().join("traces.ctxg"), Path::to_path_buf);

    eprintln!("generating {} events (seed {}) ...", args.events, args.seed);
    let config =
        ctxgraph_synth::TraceConfig { events: args.events, seed: args.seed, ..Default::default() };
    let mut trace = trace::Trace::new()?;
    let mut lines = Vec::with_capacity(args.events);
    for event in ctxgraph_synth::trace(&config) {
        // Arrival reorders opaque items: the serialised lines ride in as JSON strings.
        lines.push(Value::String(event.to_string()));
        trace.push(event)?;
    }
    trace.finish();
    let arrived = ctxgraph_synth::shuffled_arrival(lines, args.seed, MAX_DISPLACEMENT);
    let jsonl = tmp.path().join("trace.jsonl");
    let sent = deliver(&arrived, args.seed, &jsonl)?;
    drop(arrived);

    let knowledge = knowledge::plan(&trace, args.seed, args.per_family)?;
    let questions = questions::questions(&trace, &knowledge, args.seed, args.per_family);

    let (remote, mut engine) = match args.scale_out {
        Some(base) => {
            let (url, engine) = super::scale_out::fresh(base, 0, args.options.clone())?;
            (Some(url), engine)
        }
        None => {
            let engine = Engine::open(&path, OpenMode::CreateIfMissing, args.options.clone())
                .with_context(|| format!("opening store {}", path.display()))?;
            (None, engine)
        }
    };
    let at = remote.as_ref().map_or_else(|| path.display().to_string(), ToString::to_string);
    eprintln!("ingesting {sent} lines into {at} ...");
    let file =
        std::fs::File::open(&jsonl).with_context(|| format!("reading {}", jsonl.display()))?;
    let mut next = 1;
    let report =
        engine.ingest_jsonl(BufReader::new(file), &IngestOptions::default(), &mut |p| {
            if p.lines * PROGRESS_STEPS >= sent * next {
                eprintln!("  {} lines: {} new, {} duplicates", p.lines, p.accepted, p.duplicates);
                next = p.lines * PROGRESS_STEPS / sent.max(1) + 1;
            }
        })?;
    if report.progress.rejected > 0 {
        let first = report.rejections.first().map_or_else(String::new, |r| {
            format!(
                ", the first (line {}, {}) with {}",
                r.line,
                r.id.as_deref().unwrap_or("no id"),
                r.code
            )
        });
        anyhow::bail!(
            "{} generated lines were rejected{first}: a kept --store must come from the same --seed and --events",
            report.progress.rejected
        );
    }
    if remote.is_some() {
        // The workers' fold, before the count below and the writes that read the events.
        engine.catch_up(&mut |_, _| {})?;
    }
    // A kept store must hold this trace and nothing else, or the ground truth would not be its.
    let stored = {
        let stats = engine.owner_reader()?.store_stats()?;
        stats.nodes.iter().find(|(label, _)| label == "Event").map_or(0, |(_, n)| *n)
    };
    if stored != args.events as u64 {
        anyhow::bail!(
            "the store {at} holds {stored} events, not the {} of this trace: give a fresh --store, or the --seed and --events it was built with",
            args.events
        );
    }
    eprintln!(
        "writing {} decisions and {} facts ...",
        knowledge.decisions.len(),
        knowledge.facts.values().map(Vec::len).sum::<usize>()
    );
    let written = match &remote {
        // Each write waits for its fold: a projection worker folds beside the writer.
        Some(url) => {
            super::scale_out::with_folding(url, || knowledge::write(&mut engine, &knowledge))?
        }
        None => knowledge::write(&mut engine, &knowledge)?,
    };
    let loaded = Loaded {
        lines: report.progress.lines,
        accepted: report.progress.accepted,
        duplicates: report.progress.duplicates,
        decisions: knowledge.decisions.len(),
        facts: knowledge.facts.values().map(Vec::len).sum(),
        sessions: trace.sessions.len(),
    };
    drop(trace);
    // A store kept from an earlier run of the same seed and size has nothing new: it is already
    // enriched and consolidated.
    if remote.is_some() {
        eprintln!("folding, enriching and consolidating ...");
        super::scale_out::settle(&mut engine)?;
    } else if report.progress.accepted > 0 || written > 0 {
        eprintln!("enriching ...");
        let mut next = 1;
        engine.enrich(&mut |done, total| {
            if done * PROGRESS_STEPS >= total * next {
                eprintln!("  {done} of {total}");
                next = done * PROGRESS_STEPS / total.max(1) + 1;
            }
        })?;
        eprintln!("consolidating ...");
        engine.consolidate()?;
    }

    eprintln!("asking {} questions ...", questions.len());
    let mut rankings = Rankings::create(args.rankings)?;
    let mut totals: BTreeMap<(&str, &str), Totals> = BTreeMap::new();
    let mut latency = Latency::default();
    for q in &questions {
        let query = RecallQuery::new(q.text.clone());
        let t = Instant::now();
        let pack = engine.recall(&query).with_context(|| format!("recall of `{}`", q.text))?;
        latency.push(t.elapsed().as_secs_f64() * 1000.0);
        let mut ranked = ranked_keys(&pack);
        ranked.truncate(K);
        // A snapshot holds the store's read transaction: one per question, after recall's own.
        let snap = engine.owner_reader()?;
        let floor: Vec<String> = bm25(&snap, &q.text, K)?
            .into_iter()
            .take(K)
            .map(|n| key(&n.key.label, &n.key.id))
            .collect();
        for (system, ranking) in [("recall", &ranked), ("bm25", &floor)] {
            let s = score(ranking, &q.evidence);
            totals.entry((system, "overall")).or_default().add(&s);
            totals.entry((system, q.family)).or_default().add(&s);
        }
        let anchors: serde_json::Map<String, Value> =
            q.anchors.iter().map(|(slot, v)| ((*slot).to_owned(), json!(v))).collect();
        rankings.write(&json!({
            "family": q.family, "question": q.text, "anchors": anchors, "evidence": q.evidence,
            "ranked": ranked, "bm25": floor,
        }))?;
    }
    rankings.finish()?;
    let secs = started.elapsed().as_secs_f64();
    report_results(args, &loaded, &questions, &totals, &mut latency, secs)
}

/// Write the shuffled lines to `path`, sending about [`DUPLICATE_SHARE`] of them a second time a
/// little later, as a collector that retries a batch does. Returns the lines written.
fn deliver(arrived: &[Value], seed: u64, path: &Path) -> anyhow::Result<u64> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut out = BufWriter::new(file);
    let mut rng = SmallRng::seed_from_u64(seed ^ 0x6475_706c_6963_6174);
    let mut again: VecDeque<(usize, &str)> = VecDeque::new();
    let mut sent = 0;
    for (i, line) in arrived.iter().enumerate() {
        let line = line.as_str().unwrap_or_default();
        writeln!(out, "{line}")?;
        sent += 1;
        if rng.random_bool(DUPLICATE_SHARE) {
            again.push_back((i + rng.random_range(1..=DUPLICATE_DELAY), line));
        }
        while again.front().is_some_and(|(due, _)| *due <= i) {
            if let Some((_, line)) = again.pop_front() {
                writeln!(out, "{line}")?;
                sent += 1;
            }
        }
    }
    for (_, line) in again {
        writeln!(out, "{line}")?;
        sent += 1;
    }
    out.flush()?;
    Ok(sent)
}

fn report_results(
    args: &TracesArgs<'_>,
    loaded: &Loaded,
    questions: &[Question],
    totals: &BTreeMap<(&str, &str), Totals>,
    latency: &mut Latency,
    secs: f64,
) -> anyhow::Result<Outcome> {
    let groups: Vec<&str> = std::iter::once("overall").chain(FAMILIES).collect();
    let get = |system: &str, group: &str| totals.get(&(system, group)).cloned().unwrap_or_default();
    if args.json {
        let mut systems = serde_json::Map::new();
        for system in ["recall", "bm25"] {
            let per: serde_json::Map<String, Value> =
                groups.iter().map(|g| ((*g).to_owned(), get(system, g).json(K))).collect();
            systems.insert(system.to_owned(), Value::Object(per));
        }
        print_json(&json!({
            "seed": args.seed, "events": args.events, "per_family": args.per_family, "k": K,
            "store": args.store,
            "backend": if args.scale_out.is_some() { "redis" } else { "file" },
            "ingest": {"lines": loaded.lines, "accepted": loaded.accepted, "duplicates": loaded.duplicates},
            "sessions": loaded.sessions, "decisions": loaded.decisions, "facts": loaded.facts,
            "questions": questions.len(), "families": FAMILIES, "systems": systems,
            "recall_latency_ms": latency.json(), "seconds": secs,
        }))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Recall on agent runs: {} events in {} sessions (seed {}), {} decisions, {} facts, {} questions",
        args.events,
        loaded.sessions,
        args.seed,
        loaded.decisions,
        loaded.facts,
        questions.len()
    )?;
    let mut header = vec!["family".to_owned(), "system".into(), "n".into()];
    header.extend(score_columns(K));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&header);
    for group in &groups {
        for system in ["recall", "bm25"] {
            let tot = get(system, group);
            let mut row = vec![(*group).to_owned(), system.to_owned(), tot.n.to_string()];
            row.extend(tot.cells(K));
            t.add_row(row);
        }
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{}; {secs:.1}s in all", latency.line())?;
    Ok(Outcome::Done)
}
