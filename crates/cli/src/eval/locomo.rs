//! `ctxgraph eval locomo FILE`: evidence retrieval on LoCoMo conversations, through `recall`,
//! against a plain BM25 ranking computed in the same run.
//!
//! Each conversation goes into a fresh store (ingest, enrich, consolidate); every question is
//! asked through `recall` restricted to Event items, and the ranked events' dialogue ids are
//! compared with the question's evidence turns. LoCoMo (Maharana et al., ACL 2024) is
//! CC BY-NC 4.0: for non-commercial research, tests and benchmarks only.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use ctxgraph::{Engine, EngineOptions, IngestOptions, OpenMode, RecallQuery};
use serde_json::{Value, json};

use super::{Latency, Rankings, Totals, bm25, score, score_columns};
use crate::Outcome;
use crate::output::{print_json, table};

/// LoCoMo's category numbers, as its own evaluation names them.
const CATEGORIES: [(u8, &str); 5] =
    [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop"), (5, "adversarial")];

/// What `eval locomo` was asked.
pub(crate) struct EvalArgs<'a> {
    pub(crate) file: &'a Path,
    pub(crate) k: usize,
    pub(crate) include_adversarial: bool,
    pub(crate) rankings: Option<&'a Path>,
    pub(crate) sample: Option<&'a str>,
    pub(crate) json: bool,
    /// Engine options for every conversation's store (the embedder chosen on the command line).
    pub(crate) options: EngineOptions,
    /// A scale-out store (`--db redis://…`): conversation `i` goes to the new store `NAME-i`
    /// there instead of a temporary store file.
    pub(crate) scale_out: Option<&'a ctxgraph_scaleout::StoreUrl>,
}

/// Run `eval locomo` and print its table (or JSON).
pub(crate) fn run(args: &EvalArgs<'_>) -> anyhow::Result<Outcome> {
    let text = std::fs::read_to_string(args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let conversations = ctxgraph::locomo_conversations(&text)
        .with_context(|| format!("reading LoCoMo conversations from {}", args.file.display()))?;
    let tmp = tempfile::Builder::new().prefix("ctxgraph-eval").tempdir()?;
    let mut rankings = Rankings::create(args.rankings)?;
    let k = args.k.max(20);
    // (system, category) → totals; category 0 = overall.
    let mut totals: BTreeMap<(&'static str, u8), Totals> = BTreeMap::new();
    let mut latency = Latency::default();
    let started = Instant::now();
    let chosen = conversations.iter().filter(|c| args.sample.is_none_or(|s| c.sample_id == s));
    for (index, conv) in chosen.enumerate() {
        eprintln!(
            "{}: {} turns, {} questions ...",
            conv.sample_id,
            conv.records.len(),
            conv.questions.len()
        );
        let path = tmp.path().join(format!("{}.ctxg", conv.sample_id));
        let mut engine = match args.scale_out {
            Some(base) => super::scale_out::fresh(base, index, args.options.clone())?.1,
            None => Engine::open(&path, OpenMode::CreateIfMissing, args.options.clone())?,
        };
        let jsonl: String = conv.records.iter().map(|r| format!("{r}\n")).collect();
        let report =
            engine.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {})?;
        if report.progress.rejected > 0 {
            anyhow::bail!("{}: {} turns were rejected", conv.sample_id, report.progress.rejected);
        }
        // A store file folded each record as it was ingested; a scale-out store folds here.
        super::scale_out::settle(&mut engine)?;
        let prefix = format!("{}:", conv.sample_id);
        let dia = |id: &str| id.strip_prefix(&prefix).unwrap_or(id).to_owned();
        for (qa_index, q) in conv.questions.iter().enumerate() {
            if q.category == 5 && !args.include_adversarial {
                continue;
            }
            if q.evidence.is_empty() {
                continue;
            }
            let mut query = RecallQuery::new(q.question.clone());
            query.k = k;
            query.labels = Some(vec!["Event".to_owned()]);
            let t = Instant::now();
            let pack = engine.recall(&query)?;
            latency.push(t.elapsed().as_secs_f64() * 1000.0);
            let ranked: Vec<String> = pack.items.iter().map(|i| dia(&i.node.key.id)).collect();
            let snap = engine.owner_reader()?;
            let floor: Vec<String> = bm25(&snap, &q.question, k * 3)?
                .into_iter()
                .filter(|n| n.key.label == "Event")
                .map(|n| dia(&n.key.id))
                .take(k)
                .collect();
            for (system, ranking) in [("recall", &ranked), ("bm25", &floor)] {
                let s = score(ranking, &q.evidence);
                totals.entry((system, 0)).or_default().add(&s);
                totals.entry((system, q.category)).or_default().add(&s);
            }
            rankings.write(
                &json!({"sample_id": conv.sample_id, "qa_index": qa_index, "ranked": ranked}),
            )?;
        }
    }
    rankings.finish()?;
    let secs = started.elapsed().as_secs_f64();
    let categories: Vec<(u8, &str)> = std::iter::once((0, "overall"))
        .chain(CATEGORIES.into_iter().filter(|(c, _)| *c != 5 || args.include_adversarial))
        .collect();
    if args.json {
        let mut systems = serde_json::Map::new();
        for system in ["recall", "bm25"] {
            let mut per = serde_json::Map::new();
            for (c, name) in &categories {
                per.insert(
                    (*name).to_owned(),
                    totals.get(&(system, *c)).cloned().unwrap_or_default().json(k),
                );
            }
            systems.insert(system.to_owned(), Value::Object(per));
        }
        print_json(
            &json!({"file": args.file, "k": k, "include_adversarial": args.include_adversarial,
            "backend": if args.scale_out.is_some() { "redis" } else { "file" },
            "systems": systems, "recall_latency_ms": latency.json(),
            "seconds": secs}),
        )?;
        return Ok(Outcome::Done);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "LoCoMo evidence retrieval, {} (LoCoMo: CC BY-NC 4.0, research use)",
        args.file.display()
    )?;
    let mut header = vec!["category".to_owned(), "system".into(), "n".into()];
    header.extend(score_columns(k));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = table(&header);
    for (c, name) in &categories {
        for system in ["recall", "bm25"] {
            let tot = totals.get(&(system, *c)).cloned().unwrap_or_default();
            let mut row = vec![(*name).to_owned(), system.to_owned(), tot.n.to_string()];
            row.extend(tot.cells(k));
            t.add_row(row);
        }
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{}; {secs:.1}s in all", latency.line())?;
    Ok(Outcome::Done)
}
