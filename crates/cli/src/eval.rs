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

use crate::Outcome;
use crate::output::{print_json, table};

/// Cut-offs reported.
const KS: [usize; 4] = [1, 5, 10, 20];
/// NDCG cut-off.
const NDCG_K: usize = 10;
/// LoCoMo's category numbers, as its own evaluation names them.
const CATEGORIES: [(u8, &str); 5] =
    [(1, "multi-hop"), (2, "temporal"), (3, "open-domain"), (4, "single-hop"), (5, "adversarial")];

/// Scores of one question.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scores {
    any: [f64; 4],
    all: [f64; 4],
    ndcg: f64,
}

/// Score a ranking against the evidence (both as dialogue ids).
pub(crate) fn score(ranked: &[String], evidence: &[String]) -> Scores {
    let mut s = Scores::default();
    if evidence.is_empty() {
        return s;
    }
    for (i, k) in KS.iter().enumerate() {
        let top = &ranked[..ranked.len().min(*k)];
        let found = evidence.iter().filter(|e| top.contains(e)).count();
        s.any[i] = f64::from(u8::from(found > 0));
        s.all[i] = f64::from(u8::from(found == evidence.len()));
    }
    let dcg: f64 = ranked
        .iter()
        .take(NDCG_K)
        .enumerate()
        .filter(|(_, id)| evidence.contains(id))
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..evidence.len().min(NDCG_K)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    s.ndcg = if ideal > 0.0 { dcg / ideal } else { 0.0 };
    s
}

/// Sums per category for one system.
#[derive(Debug, Default, Clone)]
struct Totals {
    n: usize,
    any: [f64; 4],
    all: [f64; 4],
    ndcg: f64,
}

impl Totals {
    fn add(&mut self, s: &Scores) {
        self.n += 1;
        for i in 0..KS.len() {
            self.any[i] += s.any[i];
            self.all[i] += s.all[i];
        }
        self.ndcg += s.ndcg;
    }

    fn mean(&self, v: f64) -> f64 {
        if self.n == 0 { 0.0 } else { v / self.n as f64 }
    }

    fn json(&self) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("n".into(), json!(self.n));
        for (i, k) in KS.iter().enumerate() {
            o.insert(format!("recall_any@{k}"), json!(self.mean(self.any[i])));
            o.insert(format!("recall_all@{k}"), json!(self.mean(self.all[i])));
        }
        o.insert(format!("ndcg@{NDCG_K}"), json!(self.mean(self.ndcg)));
        Value::Object(o)
    }
}

pub(crate) struct EvalArgs<'a> {
    pub(crate) file: &'a Path,
    pub(crate) k: usize,
    pub(crate) include_adversarial: bool,
    pub(crate) rankings: Option<&'a Path>,
    pub(crate) sample: Option<&'a str>,
    pub(crate) json: bool,
    /// Engine options for every conversation's store (the embedder chosen on the command line).
    pub(crate) options: EngineOptions,
}

pub(crate) fn locomo(args: &EvalArgs<'_>) -> anyhow::Result<Outcome> {
    let text = std::fs::read_to_string(args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let conversations = ctxgraph::locomo_conversations(&text)
        .with_context(|| format!("reading LoCoMo conversations from {}", args.file.display()))?;
    let tmp = tempfile::Builder::new().prefix("ctxgraph-eval").tempdir()?;
    let mut rankings_out = match args.rankings {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
        )),
        None => None,
    };
    let k = args.k.max(20);
    // (system, category) → totals; category 0 = overall.
    let mut totals: BTreeMap<(&'static str, u8), Totals> = BTreeMap::new();
    let mut latency = Vec::new();
    let started = Instant::now();
    for conv in conversations.iter().filter(|c| args.sample.is_none_or(|s| c.sample_id == s)) {
        eprintln!(
            "{}: {} turns, {} questions ...",
            conv.sample_id,
            conv.records.len(),
            conv.questions.len()
        );
        let path = tmp.path().join(format!("{}.ctxg", conv.sample_id));
        let mut engine = Engine::open(&path, OpenMode::CreateIfMissing, args.options.clone())?;
        let jsonl: String = conv.records.iter().map(|r| format!("{r}\n")).collect();
        let report =
            engine.ingest_jsonl(jsonl.as_bytes(), &IngestOptions::default(), &mut |_| {})?;
        if report.progress.rejected > 0 {
            anyhow::bail!("{}: {} turns were rejected", conv.sample_id, report.progress.rejected);
        }
        engine.enrich(&mut |_, _| {})?;
        engine.consolidate()?;
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
            let snap = engine.snapshot()?;
            let words = ctxgraph::content_words(&q.question).join(" ");
            let bm25: Vec<String> = snap
                .search(&words, k * 3)?
                .into_iter()
                .filter(|(n, _)| n.key.label == "Event")
                .map(|(n, _)| dia(&n.key.id))
                .take(k)
                .collect();
            for (system, ranking) in [("recall", &ranked), ("bm25", &bm25)] {
                let s = score(ranking, &q.evidence);
                totals.entry((system, 0)).or_default().add(&s);
                totals.entry((system, q.category)).or_default().add(&s);
            }
            if let Some(out) = rankings_out.as_mut() {
                writeln!(
                    out,
                    "{}",
                    json!({"sample_id": conv.sample_id, "qa_index": qa_index, "ranked": ranked})
                )?;
            }
        }
    }
    if let Some(mut out) = rankings_out {
        out.flush()?;
    }
    latency.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        latency
            .get(((latency.len() as f64 * p) as usize).min(latency.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0.0)
    };
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
                    totals.get(&(system, *c)).cloned().unwrap_or_default().json(),
                );
            }
            systems.insert(system.to_owned(), Value::Object(per));
        }
        print_json(
            &json!({"file": args.file, "k": k, "include_adversarial": args.include_adversarial,
            "systems": systems, "recall_latency_ms": {"p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99)},
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
    let mut t = table(&[
        "category", "system", "n", "any@1", "any@5", "any@10", "any@20", "all@1", "all@5",
        "all@10", "all@20", "ndcg@10",
    ]);
    for (c, name) in &categories {
        for system in ["recall", "bm25"] {
            let tot = totals.get(&(system, *c)).cloned().unwrap_or_default();
            let mut row = vec![(*name).to_owned(), system.to_owned(), tot.n.to_string()];
            row.extend(tot.any.iter().map(|v| format!("{:.3}", tot.mean(*v))));
            row.extend(tot.all.iter().map(|v| format!("{:.3}", tot.mean(*v))));
            row.push(format!("{:.3}", tot.mean(tot.ndcg)));
            t.add_row(row);
        }
    }
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "recall latency: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; {secs:.1}s in all",
        pct(0.5),
        pct(0.95),
        pct(0.99)
    )?;
    Ok(Outcome::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn scores_follow_the_definitions() {
        let ranked = ids(&["D1:1", "D1:2", "D2:5", "D3:1", "D1:9", "D4:4"]);
        let s = score(&ranked, &ids(&["D1:2", "D4:4"]));
        assert_eq!(s.any, [0.0, 1.0, 1.0, 1.0]);
        assert_eq!(s.all, [0.0, 0.0, 1.0, 1.0]);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 7f64.log2();
        let ideal = 1.0 + 1.0 / 3f64.log2();
        assert!((s.ndcg - dcg / ideal).abs() < 1e-12);
        let perfect = score(&ids(&["D4:4", "D1:2"]), &ids(&["D1:2", "D4:4"]));
        assert!((perfect.ndcg - 1.0).abs() < 1e-12);
        assert_eq!(score(&[], &ids(&["D1:1"])), Scores::default());
    }
}
