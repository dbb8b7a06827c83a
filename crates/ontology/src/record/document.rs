//! Document records (seed 001's sources): the text verbatim, its URL and content hash, its version
//! and the entity mentions found at write time.
//!
//! The record keeps the whole text, so the projection rebuilds the Document → Section → Paragraph
//! → Sentence tree by splitting it again ([`crate::split_document`], a pure function). Mentions
//! depend on the entities that existed when the document was written, so they are resolved once
//! by the engine and stored here by sentence order.
//!
//! The document id is derived: `doc-` + 12 hex digits of the SHA-256 of the URL + `-` + the first
//! 12 hex digits of the content hash. The same URL and content is the same document (writing it
//! again is a no-op); a changed text under one URL is a new document with the next `version` and
//! `previous` naming the version it replaces.

use serde_json::{Map, Value};

use super::Validator;
use super::fact::ResolvedEntity;
use crate::digest::sha256_hex;
use crate::document::{DocumentFormat, split_document};
use crate::violation::Violation;

pub(super) const DOCUMENT_FIELDS: &[&str] = &[
    "record_type",
    "url",
    "format",
    "title",
    "text",
    "content_hash",
    "version",
    "previous",
    "ingested_at",
    "mentions",
];
const MENTION_FIELDS: &[&str] = &["sentence", "entity", "confidence"];

/// Longest accepted URL (or other source string), in bytes.
pub const MAX_URL_BYTES: usize = 4096;

/// An entity a sentence mentions.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentMention {
    /// Sentence order in the document, from 0.
    pub sentence: usize,
    /// The entity, with how it was matched.
    pub entity: ResolvedEntity,
    /// How sure the match is, in [0, 1].
    pub confidence: f64,
}

/// A validated document version.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentRecord {
    /// Derived id (see the module docs).
    pub document_id: String,
    /// Where the text came from, verbatim (never fetched).
    pub url: String,
    /// How the text is split.
    pub format: DocumentFormat,
    /// A title given by the writer (otherwise the first level-1 heading).
    pub title: Option<String>,
    /// The text, verbatim.
    pub text: String,
    /// SHA-256 of the text, hex.
    pub content_hash: String,
    /// 1 for the first version of the URL.
    pub version: u64,
    /// The document id of the version this one replaces.
    pub previous: Option<String>,
    /// When it was written (UTC, normalised).
    pub ingested_at: String,
    /// Mentions, in sentence order.
    pub mentions: Vec<DocumentMention>,
}

/// The id of the document with this URL and content hash.
pub fn document_id(url: &str, content_hash: &str) -> String {
    let url_hash = sha256_hex(url.as_bytes());
    format!("doc-{}-{}", &url_hash[..12], content_hash.get(..12).unwrap_or(content_hash))
}

/// The SHA-256 content hash of a document's text, hex.
pub fn content_hash(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

/// The id of a document's section, paragraph or sentence (`s`, `p` or `t`) of order `n`.
pub fn part_id(document_id: &str, part: char, n: usize) -> String {
    format!("{document_id}/{part}{n}")
}

impl Validator<'_> {
    pub(super) fn document(&mut self, obj: &Map<String, Value>) -> Option<DocumentRecord> {
        self.unknown_fields(obj, DOCUMENT_FIELDS, "$");
        let url = self.string(obj, "url", "$.url", true).and_then(|u| {
            if u.trim().is_empty() || u.len() > MAX_URL_BYTES || u.contains(char::is_control) {
                self.out.push(Violation::for_str(
                    "$.url",
                    u,
                    "document.url",
                    format!("a URL or source name is 1 to {MAX_URL_BYTES} bytes without control characters"),
                ));
                None
            } else {
                Some(u.to_owned())
            }
        });
        let format = self.string(obj, "format", "$.format", true).and_then(|f| {
            self.enum_value("document_format", f, "$.format")
                .and_then(|f| DocumentFormat::parse(&f))
        });
        let title = self.string(obj, "title", "$.title", false).map(str::to_owned);
        let text = self.string(obj, "text", "$.text", true).map(str::to_owned);
        let hash = self.string(obj, "content_hash", "$.content_hash", true).map(str::to_owned);
        if let (Some(text), Some(hash)) = (&text, &hash)
            && content_hash(text) != *hash
        {
            self.out.push(Violation::for_str(
                "$.content_hash",
                hash,
                "document.content_hash",
                "must be the SHA-256 of the text, in lower-case hex",
            ));
        }
        let version = match obj.get("version") {
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => Some(n),
                _ => {
                    self.out.push(Violation::new(
                        "$.version",
                        Some(v),
                        "envelope.type",
                        "must be an integer from 1",
                    ));
                    None
                }
            },
            None => {
                self.out.push(Violation::new(
                    "$.version",
                    None,
                    "envelope.required_field",
                    "required field is missing",
                ));
                None
            }
        };
        let previous = self.id(obj, "previous", "$.previous", false);
        if let Some(v) = version
            && (v > 1) != previous.is_some()
        {
            self.out.push(Violation::new(
                "$.previous",
                obj.get("previous"),
                "document.version",
                "a version after the first names the document it replaces, and only then",
            ));
        }
        let ingested_at = self.time_field(obj, "ingested_at");
        let sentences = match (format, &text) {
            (Some(f), Some(t)) => Some(split_document(f, t).sentence_count()),
            _ => None,
        };
        let mentions = self.mentions(obj.get("mentions"), sentences);
        let (url, format, text, content_hash, version) = (url?, format?, text?, hash?, version?);
        if !self.out.is_empty() {
            return None;
        }
        Some(DocumentRecord {
            document_id: document_id(&url, &content_hash),
            url,
            format,
            title,
            text,
            content_hash,
            version,
            previous,
            ingested_at: ingested_at?,
            mentions: mentions?,
        })
    }

    fn time_field(&mut self, obj: &Map<String, Value>, field: &str) -> Option<String> {
        let path = format!("$.{field}");
        let raw = self.string(obj, field, &path, true)?;
        let t = super::fact::normalize_time(raw);
        if t.is_none() {
            self.out.push(Violation::for_str(
                path,
                raw,
                "envelope.timestamp_format",
                "must be an RFC 3339 timestamp with an offset or a date",
            ));
        }
        t
    }

    fn mentions(
        &mut self,
        value: Option<&Value>,
        sentences: Option<usize>,
    ) -> Option<Vec<DocumentMention>> {
        let items = match value {
            None | Some(Value::Null) => return Some(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.out.push(Violation::new(
                    "$.mentions",
                    Some(other),
                    "envelope.type",
                    "must be an array of {sentence, entity, confidence}",
                ));
                return None;
            }
        };
        let before = self.out.len();
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("$.mentions[{i}]");
            let Value::Object(o) = item else {
                self.out.push(Violation::new(
                    path,
                    Some(item),
                    "envelope.type",
                    "must be an object {sentence, entity, confidence}",
                ));
                continue;
            };
            self.unknown_fields(o, MENTION_FIELDS, &path);
            let sentence = match o.get("sentence").and_then(Value::as_u64) {
                Some(n) if sentences.is_none_or(|count| (n as usize) < count) => Some(n as usize),
                _ => {
                    self.out.push(Violation::new(
                        format!("{path}.sentence"),
                        o.get("sentence"),
                        "document.sentence",
                        format!(
                            "must be the order of a sentence of the document (it has {})",
                            sentences.unwrap_or(0)
                        ),
                    ));
                    None
                }
            };
            let entity = self.resolved_entity(o.get("entity"), &format!("{path}.entity"));
            let confidence = match o.get("confidence").and_then(Value::as_f64) {
                Some(c) if (0.0..=1.0).contains(&c) => Some(c),
                _ => {
                    self.out.push(Violation::new(
                        format!("{path}.confidence"),
                        o.get("confidence"),
                        "fact.confidence_range",
                        "confidence must be a number from 0 to 1",
                    ));
                    None
                }
            };
            if let (Some(sentence), Some(entity), Some(confidence)) = (sentence, entity, confidence)
            {
                out.push(DocumentMention { sentence, entity, confidence });
            }
        }
        (self.out.len() == before).then_some(out)
    }
}

pub(super) fn canonical_document(d: &DocumentRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "document".into());
    m.insert("url".into(), d.url.clone().into());
    m.insert("format".into(), d.format.as_str().into());
    m.insert("text".into(), d.text.clone().into());
    m.insert("content_hash".into(), d.content_hash.clone().into());
    m.insert("version".into(), d.version.into());
    m.insert("ingested_at".into(), d.ingested_at.clone().into());
    for (k, v) in [("title", &d.title), ("previous", &d.previous)] {
        if let Some(v) = v {
            m.insert(k.into(), v.clone().into());
        }
    }
    if !d.mentions.is_empty() {
        let list = d
            .mentions
            .iter()
            .map(|x| {
                serde_json::json!({
                    "sentence": x.sentence,
                    "entity": {"id": x.entity.id, "name": x.entity.name, "via": x.entity.via},
                    "confidence": x.confidence,
                })
            })
            .collect();
        m.insert("mentions".into(), Value::Array(list));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Limits, RecordBody, Schema, validate_value};

    fn doc(text: &str, hash: &str) -> serde_json::Value {
        json!({
            "record_type": "document", "url": "notes/standup.md", "format": "markdown",
            "text": text, "content_hash": hash, "version": 1,
            "ingested_at": "2026-05-01T10:00:00Z",
            "mentions": [{"sentence": 1, "entity": {"id": "user:alice", "name": "Alice", "via": "name"}, "confidence": 1.0}],
        })
    }

    fn rules(value: serde_json::Value) -> Vec<&'static str> {
        let schema = Schema::core().unwrap();
        match validate_value(&schema, &Limits::default(), value) {
            Ok(_) => vec![],
            Err(e) => e.violations.iter().map(|v| v.rule).collect(),
        }
    }

    #[test]
    fn a_document_validates_and_its_id_is_derived_from_url_and_content() {
        let text = "# Standup\n\nWe met. Alice will ship.";
        let schema = Schema::core().unwrap();
        let r = validate_value(&schema, &Limits::default(), doc(text, &super::content_hash(text)))
            .unwrap();
        let RecordBody::Document(d) = r.body() else { panic!() };
        assert_eq!(
            d.document_id,
            super::document_id("notes/standup.md", &super::content_hash(text))
        );
        assert!(d.document_id.starts_with("doc-"));
        assert_eq!(d.mentions.len(), 1);
    }

    #[test]
    fn bad_documents_name_the_rule() {
        let text = "One sentence only.";
        assert_eq!(rules(doc(text, "00")), ["document.content_hash", "document.sentence"]);
        let mut v2 = doc(text, &super::content_hash(text));
        v2["version"] = json!(2);
        assert_eq!(rules(v2), ["document.version", "document.sentence"]);
    }
}
