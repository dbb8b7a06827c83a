//! `ctxgraph eval`: retrieval quality against known evidence, through `recall` and against a
//! plain BM25 ranking computed in the same run.
//!
//! This module holds what every evaluation shares (the scores, their sums, latency percentiles,
//! the BM25 floor and the rankings file); `locomo.rs` evaluates LoCoMo conversations and
//! `traces.rs` generated agent runs.

use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use ctxgraph::{Node, Reader};
use serde_json::{Value, json};

pub(crate) mod locomo;
mod scale_out;
pub(crate) mod traces;

/// Cut-offs reported.
const KS: [usize; 4] = [1, 5, 10, 20];
/// NDCG cut-off.
const NDCG_K: usize = 10;

/// Scores of one question.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scores {
    any: [f64; 4],
    all: [f64; 4],
    ndcg: f64,
}

/// Score a ranking against the evidence (both as ids of one kind: dialogue ids, node keys).
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

/// Sums of scores over a group of questions (a category, a family) for one system.
#[derive(Debug, Default, Clone)]
pub(crate) struct Totals {
    pub(crate) n: usize,
    any: [f64; 4],
    all: [f64; 4],
    ndcg: f64,
}

impl Totals {
    pub(crate) fn add(&mut self, s: &Scores) {
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

    /// The means as JSON, for the cut-offs up to `max_k` (items ranked beyond the ranking's
    /// length would only repeat the last cut-off).
    pub(crate) fn json(&self, max_k: usize) -> Value {
        let mut o = serde_json::Map::new();
        o.insert("n".into(), json!(self.n));
        for (i, k) in KS.iter().enumerate().filter(|(_, k)| **k <= max_k) {
            o.insert(format!("recall_any@{k}"), json!(self.mean(self.any[i])));
            o.insert(format!("recall_all@{k}"), json!(self.mean(self.all[i])));
        }
        o.insert(format!("ndcg@{NDCG_K}"), json!(self.mean(self.ndcg)));
        Value::Object(o)
    }

    /// Table cells in the order of [`score_columns`]: recall_any, recall_all, NDCG.
    pub(crate) fn cells(&self, max_k: usize) -> Vec<String> {
        let shown = |v: &[f64; 4]| {
            KS.iter()
                .zip(v)
                .filter(|(k, _)| **k <= max_k)
                .map(|(_, v)| format!("{:.3}", self.mean(*v)))
                .collect::<Vec<_>>()
        };
        let mut row = shown(&self.any);
        row.extend(shown(&self.all));
        row.push(format!("{:.3}", self.mean(self.ndcg)));
        row
    }
}

/// Table headers of [`Totals::cells`] for the cut-offs up to `max_k`.
pub(crate) fn score_columns(max_k: usize) -> Vec<String> {
    let ks = || KS.iter().filter(move |k| **k <= max_k);
    let mut cols: Vec<String> = ks().map(|k| format!("any@{k}")).collect();
    cols.extend(ks().map(|k| format!("all@{k}")));
    cols.push(format!("ndcg@{NDCG_K}"));
    cols
}

/// Recall latencies of a run, in milliseconds.
#[derive(Debug, Default)]
pub(crate) struct Latency(Vec<f64>);

impl Latency {
    pub(crate) fn push(&mut self, ms: f64) {
        self.0.push(ms);
    }

    /// The `p` quantile (0..=1) by nearest rank; 0 when nothing was measured.
    pub(crate) fn percentile(&mut self, p: f64) -> f64 {
        self.0.sort_by(f64::total_cmp);
        let last = self.0.len().saturating_sub(1);
        self.0.get(((self.0.len() as f64 * p) as usize).min(last)).copied().unwrap_or(0.0)
    }

    pub(crate) fn json(&mut self) -> Value {
        json!({"p50": self.percentile(0.5), "p95": self.percentile(0.95), "p99": self.percentile(0.99)})
    }

    /// `recall latency: p50 …, p95 …, p99 …`.
    pub(crate) fn line(&mut self) -> String {
        format!(
            "recall latency: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms",
            self.percentile(0.5),
            self.percentile(0.95),
            self.percentile(0.99)
        )
    }
}

/// The BM25 floor: the question's content words searched in the full-text index alone, up to
/// `limit` hits of any label, best first.
pub(crate) fn bm25(snap: &Reader<'_>, question: &str, limit: usize) -> anyhow::Result<Vec<Node>> {
    let words = ctxgraph::content_words(question).join(" ");
    Ok(snap.search(&words, limit)?.into_iter().map(|(n, _)| n).collect())
}

/// The rankings file (`--rankings`), one JSON line per question.
pub(crate) struct Rankings(Option<BufWriter<std::fs::File>>);

impl Rankings {
    pub(crate) fn create(path: Option<&Path>) -> anyhow::Result<Rankings> {
        Ok(Rankings(match path {
            Some(p) => Some(BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("creating {}", p.display()))?,
            )),
            None => None,
        }))
    }

    pub(crate) fn write(&mut self, line: &Value) -> anyhow::Result<()> {
        if let Some(out) = self.0.as_mut() {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }

    pub(crate) fn finish(self) -> anyhow::Result<()> {
        if let Some(mut out) = self.0 {
            out.flush()?;
        }
        Ok(())
    }
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

    #[test]
    fn totals_report_the_cut_offs_up_to_the_ranking_length() {
        let mut t = Totals::default();
        t.add(&score(&ids(&["a", "b"]), &ids(&["b"])));
        t.add(&score(&ids(&["c"]), &ids(&["b"])));
        let j = t.json(10);
        assert_eq!(j["n"], 2);
        assert_eq!(j["recall_all@1"], 0.0);
        assert_eq!(j["recall_all@10"], 0.5);
        assert!(j.get("recall_all@20").is_none());
        assert_eq!(t.cells(10).len(), score_columns(10).len());
        assert_eq!(score_columns(20).len(), 9);
        let mut l = Latency::default();
        assert_eq!(l.percentile(0.5), 0.0);
        for ms in [3.0, 1.0, 2.0] {
            l.push(ms);
        }
        assert_eq!(l.percentile(0.5), 2.0);
        assert_eq!(l.percentile(0.99), 3.0);
    }
}
