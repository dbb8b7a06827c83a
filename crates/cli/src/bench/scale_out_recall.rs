//! `ctxgraph bench recall --db redis://HOST:PORT/NAME`: recall on the scale-out backend beside
//! the embedded store, over the same generated events, printed side by side.
//!
//! The scale-out graph is stage 1's (projection workers fold the log), so the embedded store is
//! built the same way, without stages 2 and 3: both answer from the same graph. With `--enrich`
//! both run stage 2 as well (the store file enriched, the scale-out store through its stage-2
//! transactions; each builds its lexical index only once the documents outside it reach
//! `ctxgraph::TEXT_INDEX_REBUILD_AFTER`, as a load does, and searches the others in its
//! full-text index: FTS5 there, FalkorDB's here), so the packs use vectors and BM25 too;
//! consolidation does not run on the scale-out backend yet. The questions are those of the trace's own
//! families in `eval traces` (why a session or request failed, what happened after a failure,
//! who was involved, …), which name sessions, events, agents and tools and which a stage-1 graph
//! answers; each side's answers are scored against their evidence, and the bench counts the
//! questions whose packs are identical on both. Each engine is warmed up first on other
//! questions of the same families, as `bench recall` does; the timed questions are then asked
//! again, which shows what the caches kept between recalls give a question asked before. The
//! embedded default store, enriched and consolidated, is what `bench recall` without
//! `--db redis://` measures.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{ContextPack, Engine, EngineOptions, IngestOptions, OpenMode, RecallQuery};
use ctxgraph_scaleout::{FalkorGraph, RedisLog, StoreUrl, catch_up, load_schema};
use serde_json::{Value, json};

use super::{
    PHASES, load_projected, pack_line, percentile, phase_us, sorted, synthetic_jsonl, temp_dir,
};
use crate::Outcome;
use crate::eval::traces::{ranked_keys, trace_questions};
use crate::eval::{Totals, score, score_columns};
use crate::output::{print_json, table};

/// The seed the questions are sampled with.
const SEED: u64 = 42;
/// Families of trace questions `eval traces` asks (its decision and fact families need
/// records this bench does not write).
const FAMILIES: usize = 8;
/// The deepest cut-off scored (the packs hold k = 10 items).
const K: usize = 10;

/// One backend's figures.
struct Side {
    /// Latencies of the timed pass, in increasing order (ms).
    ms: Vec<f64>,
    /// Latencies of the same questions asked again right after, in increasing order (ms): what
    /// the caches kept between recalls give a question asked before.
    again_ms: Vec<f64>,
    /// Mean time per phase (ms).
    phases: [f64; 6],
    /// Each question's pack, as `bench recall --rankings` writes it.
    packs: Vec<Value>,
    /// The answers scored against the questions' evidence.
    quality: Totals,
}

impl Side {
    /// Questions whose pack holds at least one item, and the mean number of items per pack.
    fn answered(&self) -> (usize, f64) {
        let items: Vec<usize> =
            self.packs.iter().map(|p| p["items"].as_array().map_or(0, Vec::len)).collect();
        let mean = items.iter().sum::<usize>() as f64 / items.len().max(1) as f64;
        (items.iter().filter(|&&n| n > 0).count(), mean)
    }
}

/// What a side-by-side run builds and asks.
pub(crate) struct RecallStages {
    /// Generated events.
    pub(crate) events: usize,
    /// Questions asked.
    pub(crate) queries: usize,
    /// Whether both backends run stage 2 too.
    pub(crate) enrich: bool,
}

pub(crate) fn recall(
    url: &StoreUrl,
    RecallStages { events, queries, enrich }: RecallStages,
    dir: Option<&std::path::Path>,
    json: bool,
) -> anyhow::Result<Outcome> {
    super::scale_out::refuse_used("bench recall", url)?;
    let jsonl = synthetic_jsonl(events);

    eprintln!("embedded store: ingest and project {events} events ...");
    let tmp = temp_dir(dir)?;
    let path = tmp.path().join("recall.ctxg");
    let mut embedded = Engine::open(&path, OpenMode::CreateIfMissing, EngineOptions::default())?;
    load_projected(&mut embedded, &jsonl)?;
    if enrich {
        eprintln!("embedded store: enrich ...");
        embedded.enrich(&mut |_, _| {})?;
        // The lexical index as a load leaves it (and as the scale-out store's stage-2 commits
        // do): built once the documents outside it reach the threshold, else left to the
        // full-text index.
        if embedded.owner_reader()?.text_docs_outside_index()? >= ctxgraph::TEXT_INDEX_REBUILD_AFTER
        {
            eprintln!("embedded store: build the lexical index ...");
            embedded.index_text()?;
        }
    }

    eprintln!("scale-out store {url}: append {events} events ...");
    let mut remote = crate::backend::open_remote(url, EngineOptions::default())?;
    let started = Instant::now();
    // Appended only: the engine on a scale-out store leaves the fold to the workers.
    remote.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {})?;
    let append_secs = started.elapsed().as_secs_f64();
    eprintln!("scale-out store {url}: fold to the log's head ...");
    let started = Instant::now();
    let folded = fold_to_head(url)?;
    let fold_secs = started.elapsed().as_secs_f64();
    let enrich_secs = if enrich {
        eprintln!("scale-out store {url}: enrich to the graph's checkpoint ...");
        let started = Instant::now();
        remote.enrich(&mut |_, _| {})?;
        Some(started.elapsed().as_secs_f64())
    } else {
        None
    };

    let per_family = queries.div_ceil(FAMILIES);
    let asked = trace_questions(&jsonl, SEED, per_family)?;
    let qs: Vec<(String, Vec<String>)> = asked.into_iter().take(queries).collect();
    // The engines are warmed up on questions of their own (another sample of the same
    // families, none of the timed ones): a warm-up with the timed questions themselves would
    // leave the very nodes and edges they read in the engines' caches.
    let timed: BTreeSet<&str> = qs.iter().map(|(q, _)| q.as_str()).collect();
    let warm: Vec<String> = trace_questions(&jsonl, SEED + 1, per_family)?
        .into_iter()
        .map(|(q, _)| q)
        .filter(|q| !timed.contains(q.as_str()))
        .take(queries)
        .collect();
    drop(jsonl);
    eprintln!(
        "recall: {} questions on each backend, after a warm-up on {} others ...",
        qs.len(),
        warm.len()
    );
    let local = measure(&embedded, &warm, &qs)?;
    let scale_out = measure(&remote, &warm, &qs)?;
    let same = local.packs.iter().zip(&scale_out.packs).filter(|(a, b)| a == b).count();
    let built = Built { folded, append_secs, fold_secs, enrich_secs };
    report(&local, &scale_out, same, qs.len(), events, &built, json)
}

/// Fold the scale-out store's log into its graph up to the head; how many records were folded.
fn fold_to_head(url: &StoreUrl) -> anyhow::Result<u64> {
    let log = RedisLog::connect(url)?;
    let schema = load_schema(&log)?;
    let graph = FalkorGraph::connect(url, &schema)?;
    Ok(catch_up(&schema, &log, &graph, usize::MAX)?)
}

/// A warm-up pass over `warm`, then the timed pass over `qs`, whose packs are kept and
/// scored after each is timed.
fn measure(engine: &Engine, warm: &[String], qs: &[(String, Vec<String>)]) -> anyhow::Result<Side> {
    for q in warm {
        engine.recall(&RecallQuery::new(q.as_str())).context("recall")?;
    }
    let mut packs = Vec::with_capacity(qs.len());
    let mut quality = Totals::default();
    let mut ms = Vec::with_capacity(qs.len());
    let mut sums = [0u64; 6];
    for (q, evidence) in qs {
        let (pack, took) = timed_recall(engine, q)?;
        ms.push(took);
        for (sum, us) in sums.iter_mut().zip(phase_us(&pack.timings)) {
            *sum += us;
        }
        quality.add(&score(&ranked_keys(&pack), evidence));
        packs.push(pack_line(&pack));
    }
    let n = qs.len().max(1) as f64;
    let mut again_ms = Vec::with_capacity(qs.len());
    for (q, _) in qs {
        again_ms.push(timed_recall(engine, q)?.1);
    }
    Ok(Side {
        ms: sorted(ms),
        again_ms: sorted(again_ms),
        phases: sums.map(|us| us as f64 / 1e3 / n),
        packs,
        quality,
    })
}

/// The pack of `q` and the milliseconds its recall took.
fn timed_recall(engine: &Engine, q: &str) -> anyhow::Result<(ContextPack, f64)> {
    let t = Instant::now();
    let pack = engine.recall(&RecallQuery::new(q)).context("recall")?;
    Ok((pack, t.elapsed().as_secs_f64() * 1e3))
}

/// How the scale-out store was built: records folded and the seconds each step took (stage 2's
/// only with `--enrich`).
struct Built {
    folded: u64,
    append_secs: f64,
    fold_secs: f64,
    enrich_secs: Option<f64>,
}

fn report(
    local: &Side,
    remote: &Side,
    same: usize,
    asked: usize,
    events: usize,
    built: &Built,
    json: bool,
) -> anyhow::Result<Outcome> {
    let Built { folded, append_secs, fold_secs, enrich_secs } = *built;
    let quantiles = |s: &Side| [0.50, 0.95, 0.99].map(|p| percentile(&s.ms, p));
    let (l, r) = (quantiles(local), quantiles(remote));
    let ratio = if l[0] > 0.0 { r[0] / l[0] } else { 0.0 };
    let again = |s: &Side| percentile(&s.again_ms, 0.50);
    let ratio_again = if again(local) > 0.0 { again(remote) / again(local) } else { 0.0 };
    if json {
        let side = |s: &Side, q: [f64; 3]| {
            let (answered, mean_items) = s.answered();
            json!({"p50_ms": q[0], "p95_ms": q[1], "p99_ms": q[2], "p50_asked_again_ms": again(s),
                "answered": answered, "mean_items": mean_items, "quality": s.quality.json(K),
                "phase_mean_ms": PHASES.iter().zip(s.phases)
                    .map(|(n, v)| ((*n).to_owned(), json!(v))).collect::<serde_json::Map<_, _>>()})
        };
        print_json(&json!({"events": events, "queries": asked,
            "embedded": side(local, l), "scale_out": side(remote, r),
            "p50_ratio": ratio, "p50_ratio_asked_again": ratio_again, "identical_packs": same,
            "records_folded": folded, "append_seconds": append_secs, "fold_seconds": fold_secs,
            "stages": if enrich_secs.is_some() { "1+2" } else { "1" },
            "enrich_seconds": enrich_secs}))?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    let stages = if enrich_secs.is_some() {
        "stages 1 and 2 on both (vectors and full-text search; no summaries)"
    } else {
        "stage 1 on both (no vectors, lexical index or summaries)"
    };
    writeln!(
        out,
        "ctxgraph bench recall: {events} events, {asked} trace questions, k = 10, engines warmed \
         on other questions, \
         {stages}"
    )?;
    let mut t = table(&["measure", "embedded", "scale-out"]);
    for (i, name) in ["p50 latency", "p95 latency", "p99 latency"].iter().enumerate() {
        t.add_row(vec![(*name).to_owned(), format!("{:.2} ms", l[i]), format!("{:.2} ms", r[i])]);
    }
    t.add_row(vec![
        "p50, asked again".to_owned(),
        format!("{:.2} ms", again(local)),
        format!("{:.2} ms", again(remote)),
    ]);
    for (i, name) in PHASES.iter().enumerate() {
        t.add_row(vec![
            format!("mean {name}"),
            format!("{:.3} ms", local.phases[i]),
            format!("{:.3} ms", remote.phases[i]),
        ]);
    }
    let answered = |s: &Side| {
        let (n, mean) = s.answered();
        format!("{n} ({mean:.1} items)")
    };
    t.add_row(vec!["packs with items".to_owned(), answered(local), answered(remote)]);
    for (i, column) in score_columns(K).into_iter().enumerate() {
        let cell = |s: &Side| s.quality.cells(K).get(i).cloned().unwrap_or_default();
        t.add_row(vec![column, cell(local), cell(remote)]);
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "scale-out p50 is {ratio:.1}× embedded ({ratio_again:.1}× asked again); {same} of {asked} \
         packs identical; {folded} records appended in {append_secs:.1} s and folded in \
         {fold_secs:.1} s"
    )?;
    if let Some(secs) = enrich_secs {
        writeln!(out, "the scale-out store enriched in {secs:.1} s")?;
    }
    Ok(Outcome::Done)
}
