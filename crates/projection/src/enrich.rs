//! Stage-2 enrichment of an event: keywords, importance score, extractive summary and the text
//! that is embedded and indexed. A pure function of the record, so enrichment is deterministic
//! and idempotent whatever the order or timing of the stages.
//!
//! # Keywords
//! Candidate phrases are the runs of words between stop words and punctuation in the event's
//! text (payload strings, tool name, event type), as in rapid automatic keyword extraction: a word
//! scores its degree (co-occurrence within phrases) over its frequency, a phrase the sum of its
//! words. The top [`MAX_KEYWORDS`] phrases of at most three words are kept, best first (ties by
//! text). Numbers, ids and one-letter words are not keywords.
//!
//! # Importance (1–10)
//! A base by category (`observation` 5 — what users said and were told; `agent` 4; `tool` 4;
//! `llm` 3; `session` 2; anything else 3), then: +3 if the event failed, +1 if it is a retry
//! (`payload.retry_of` or `payload.attempt` > 1), +1 if it references four or more entities
//! (fan-out), and an explicit `payload.importance` (1–10) replaces the heuristic. Clamped to 1–10.
//!
//! # Summary
//! `{event_type}[ {tool}][ FAILED]: {first sentence of the most telling payload field}`, cut to
//! [`MAX_SUMMARY_CHARS`] characters. The telling fields, in order: `error`, `text`, `query`,
//! `summary`, `result`, `response`, `prompt`, `reason`, `goal`.

use std::collections::BTreeMap;

use ctxgraph_ontology::EventRecord;
use serde_json::Value;

/// Keywords kept per event.
pub const MAX_KEYWORDS: usize = 8;
/// Longest summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 160;
/// Longest text embedded and indexed per event, in characters.
pub const MAX_TEXT_CHARS: usize = 2_000;

const TELLING_FIELDS: &[&str] =
    &["error", "text", "query", "summary", "result", "response", "prompt", "reason", "goal"];

/// What stage 2 derives from one event.
#[derive(Debug, Clone, PartialEq)]
pub struct Enrichment {
    /// Key phrases, best first.
    pub keywords: Vec<String>,
    /// 1–10.
    pub importance: u8,
    /// One extractive line.
    pub summary: String,
    /// The text embedded and full-text indexed: summary, keywords and payload text.
    pub text: String,
}

/// Enrich one event.
pub fn enrich_event(e: &EventRecord) -> Enrichment {
    let mut strings = Vec::new();
    collect_strings(&Value::Object(e.payload.clone()), &mut strings);
    let mut corpus = strings.join(". ");
    if let Some(tool) = &e.tool_name {
        corpus = format!("{}. {corpus}", tool.replace('_', " "));
    }
    let keywords = keywords(&corpus);
    let importance = importance(e);
    let summary = summary(e);
    let mut text = format!("{summary}. {}. {corpus}", keywords.join(", "));
    if let Some(cut) = text.char_indices().nth(MAX_TEXT_CHARS).map(|(i, _)| i) {
        text.truncate(cut);
    }
    Enrichment { keywords, importance, summary, text }
}

/// Every string value in a JSON tree, depth first in key order.
fn collect_strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

fn importance(e: &EventRecord) -> u8 {
    if let Some(explicit) = e.payload.get("importance").and_then(Value::as_i64) {
        return u8::try_from(explicit.clamp(1, 10)).unwrap_or(5);
    }
    let category = e.event_type.split('.').next().unwrap_or_default();
    let mut score: i64 = match category {
        "observation" => 5,
        "agent" | "tool" => 4,
        "llm" => 3,
        "session" => 2,
        _ => 3,
    };
    if e.status.as_deref() == Some("failed") {
        score += 3;
    }
    let retry = e.payload.contains_key("retry_of")
        || e.payload.get("attempt").and_then(Value::as_i64).is_some_and(|a| a > 1);
    if retry {
        score += 1;
    }
    if e.entities.len() + usize::from(e.tool_name.is_some()) + usize::from(e.user_id.is_some()) >= 4
    {
        score += 1;
    }
    u8::try_from(score.clamp(1, 10)).unwrap_or(5)
}

fn summary(e: &EventRecord) -> String {
    let mut head = e.event_type.clone();
    if let Some(tool) = &e.tool_name {
        head.push(' ');
        head.push_str(tool);
    }
    if e.status.as_deref() == Some("failed") {
        head.push_str(" FAILED");
    }
    let line = match telling_text(&e.payload) {
        Some(text) => format!("{head}: {}", first_sentence(text)),
        None => head,
    };
    match line.char_indices().nth(MAX_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The most telling text of a payload: the first of its telling fields that holds a string
/// (`error`, `text`, `query`, `summary`, `result`, `response`, `prompt`, `reason`, `goal`).
pub fn telling_text(payload: &serde_json::Map<String, Value>) -> Option<&str> {
    TELLING_FIELDS.iter().find_map(|f| payload.get(*f).and_then(Value::as_str))
}

fn first_sentence(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A sentence ends at ". ", "! ", "? " or a line break in the original.
    let end = flat
        .char_indices()
        .zip(flat.chars().skip(1))
        .find(|((_, c), next)| matches!(c, '.' | '!' | '?') && *next == ' ')
        .map(|((i, _), _)| i + 1);
    match end {
        Some(i) => flat[..i].to_owned(),
        None => flat,
    }
}

/// English function words that never start or end a key phrase.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "done",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "out",
    "over",
    "own",
    "please",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "can't",
    "don't",
    "it's",
    "let",
    "via",
    "per",
    "also",
    "ok",
    "yes",
    // Fragments of addresses and URLs, which split into words at '@', '.' and '/'.
    "com",
    "org",
    "net",
    "io",
    "www",
    "http",
    "https",
    "example",
    "localhost",
];

/// Whether `word` (lower case) is an English function word or a boilerplate token that neither
/// starts nor ends a key phrase; retrieval drops them from queries too.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

fn keywords(text: &str) -> Vec<String> {
    // Split into candidate phrases at stop words and at anything that is not part of a word.
    let mut phrases: Vec<Vec<String>> = Vec::new();
    let mut current: Vec<String> = Vec::new();
    for raw in text
        .split(|c: char| !(c.is_alphanumeric() || c == '-' || c == '\'' || c == '_' || c == ' '))
    {
        for word in raw.split(' ') {
            let w = word.trim_matches(|c: char| c == '-' || c == '\'' || c == '_').to_lowercase();
            let usable = w.chars().count() > 1
                && w.chars().any(char::is_alphabetic)
                && !w.chars().any(|c| c.is_ascii_digit())
                && !STOP_WORDS.contains(&w.as_str());
            if usable {
                current.push(w);
            } else if !current.is_empty() {
                phrases.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            phrases.push(std::mem::take(&mut current));
        }
    }
    let mut freq: BTreeMap<&str, f64> = BTreeMap::new();
    let mut degree: BTreeMap<&str, f64> = BTreeMap::new();
    for phrase in &phrases {
        for w in phrase {
            *freq.entry(w).or_default() += 1.0;
            *degree.entry(w).or_default() += phrase.len() as f64;
        }
    }
    let mut scored: BTreeMap<String, f64> = BTreeMap::new();
    for phrase in phrases.iter().filter(|p| p.len() <= 3) {
        let score: f64 = phrase.iter().map(|w| degree[w.as_str()] / freq[w.as_str()]).sum();
        scored.insert(phrase.join(" "), score);
    }
    let mut ranked: Vec<(String, f64)> = scored.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.into_iter().take(MAX_KEYWORDS).map(|(p, _)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxgraph_ontology::{Limits, RecordBody, Schema, validate};

    fn event(json: serde_json::Value) -> EventRecord {
        let r = validate(&Schema::core().unwrap(), &Limits::default(), &json.to_string()).unwrap();
        match r.body() {
            RecordBody::Event(e) => e.clone(),
            RecordBody::Edge(_)
            | RecordBody::Schema(_)
            | RecordBody::EntityDecision(_)
            | RecordBody::Fact(_)
            | RecordBody::FactRetraction(_)
            | RecordBody::Document(_) => panic!("not an event"),
        }
    }

    fn base(extra: serde_json::Value) -> serde_json::Value {
        let mut v = serde_json::json!({"event_id": "e1", "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s", "agent_id": "a", "trace_id": "t"});
        if let (Some(o), Some(x)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(x.clone());
        }
        v
    }

    #[test]
    fn a_failed_retried_tool_call_is_important_and_summarised() {
        let e = event(base(serde_json::json!({"tool_name": "http_request", "status": "failed",
            "payload": {"error": "HTTP 503 from payments-gateway. Retry later.", "attempt": 2}})));
        let x = enrich_event(&e);
        assert_eq!(x.importance, 8, "tool 4 + failed 3 + retry 1");
        assert_eq!(x.summary, "tool.execute http_request FAILED: HTTP 503 from payments-gateway.");
        assert!(x.keywords.contains(&"payments-gateway".to_owned()), "{:?}", x.keywords);
        assert!(x.text.contains("payments-gateway"));
    }

    #[test]
    fn explicit_importance_wins_and_is_clamped() {
        let e = event(base(serde_json::json!({"payload": {"importance": 42}})));
        assert_eq!(enrich_event(&e).importance, 10);
        let e = event(base(serde_json::json!({"event_type": "session.start"})));
        assert_eq!(enrich_event(&e).importance, 2);
    }

    #[test]
    fn keywords_skip_stop_words_numbers_and_rank_phrases() {
        let k = keywords(
            "The refund for order 4411 was rejected by the billing API because the refund window closed.",
        );
        assert_eq!(k[0], "refund window closed");
        assert!(k.contains(&"billing api".to_owned()));
        assert!(!k.iter().any(|w| w.contains("4411") || w == "the"));
        assert_eq!(keywords("the of and 42"), Vec::<String>::new());
    }

    #[test]
    fn enrichment_is_deterministic() {
        let e = event(base(
            serde_json::json!({"payload": {"text": "Why is checkout latency up since the deploy?",
            "query": "p95 latency by region"}}),
        ));
        assert_eq!(enrich_event(&e), enrich_event(&e));
        let long = event(base(serde_json::json!({"payload": {"text": "word ".repeat(2000)}})));
        let x = enrich_event(&long);
        assert!(x.summary.chars().count() <= MAX_SUMMARY_CHARS + 1);
        assert!(x.text.chars().count() <= MAX_TEXT_CHARS);
    }
}
