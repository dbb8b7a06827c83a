//! Readers of other memory tools' exports, each a documented mapping onto ctxgraph records.
//!
//! A reader turns its input into an [`Imported`]: event records (validated later by the normal
//! ingest path, like any writer's), claims between named entities (recorded as facts), notes
//! (ingested as documents) and memory records (saved as memories). Ids are derived from content, so importing the same input
//! again adds nothing. Readers never fail as a whole on a bad item: it is refused under its
//! number, with the field, the value and the rule, and the others are read.

pub mod episodes;
pub mod markdown;
pub mod mcp_memory;
pub mod mem0;

use std::collections::BTreeMap;

use ctxgraph_ontology::{Schema, canonical_predicate, sha256_hex};
use serde_json::Value;

/// A fact to record: `subject predicate object`, the subject an entity named with its type,
/// the object another or a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// Item number in the input (line or list position, from 1).
    pub item: u64,
    /// The subject's name.
    pub subject: String,
    /// The subject's entity type (a value of the schema's `entity_type` enum).
    pub subject_type: String,
    /// A lower_snake_case predicate; [`Imported::predicates`] lists those to declare.
    pub predicate: String,
    /// The object: an entity's name, or a string literal.
    pub object: String,
    /// The object's entity type; `None` when the object is a string literal.
    pub object_type: Option<String>,
    /// Where the claim comes from (kept with it; part of its identity).
    pub source: String,
}

/// A document to ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Its path relative to the folder imported (the document's URL).
    pub path: String,
    /// The first level-1 heading, or the file name without its extension.
    pub title: String,
    /// The Markdown text.
    pub text: String,
}

/// An item the reader refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Item number (line or list position, from 1).
    pub item: u64,
    /// The field at fault (a JSON path).
    pub field: String,
    /// Stable machine code.
    pub code: &'static str,
    /// What is wrong and the rule.
    pub message: String,
}

/// What a reader made of its input.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Imported {
    /// `(item number, event record)`, in input order.
    pub events: Vec<(u64, Value)>,
    /// Facts, in input order.
    pub claims: Vec<Claim>,
    /// Documents, in path order.
    pub notes: Vec<Note>,
    /// `(item number, memory record)`, saved as decision memories, in input order.
    pub memories: Vec<(u64, Value)>,
    /// Predicates the claims use that the schema does not declare, with what their objects
    /// are (`entity` or `literal`): the caller declares them before recording the claims.
    pub predicates: BTreeMap<String, &'static str>,
    /// Refused items, in input order.
    pub refused: Vec<Refused>,
}

impl Imported {
    fn refuse(&mut self, item: u64, field: &str, code: &'static str, message: String) {
        self.refused.push(Refused { item, field: field.to_owned(), code, message });
    }

    /// The objects of a JSON document that is a list, or an object holding the list under one
    /// of `keys`, numbered from 1; the document refused whole (`shape` says what was expected)
    /// when it is neither, and an item that is not an object refused as one (a `noun`).
    fn json_objects(
        &mut self,
        input: &str,
        keys: &[&str],
        shape: &str,
        noun: &str,
    ) -> Vec<(u64, serde_json::Map<String, Value>)> {
        let doc: Value = match serde_json::from_str(input) {
            Ok(v) => v,
            Err(e) => {
                self.refuse(0, "$", "import.json", format!("not JSON: {e}"));
                return Vec::new();
            }
        };
        let Some(list) = items(&doc, keys) else {
            self.refuse(0, "$", "import.shape", format!("expected {shape}"));
            return Vec::new();
        };
        let mut out = Vec::new();
        for (n, item) in (1_u64..).zip(list) {
            match item.as_object() {
                Some(obj) => out.push((n, obj.clone())),
                None => self.refuse(n, "$", "import.shape", format!("{noun} is a JSON object")),
            }
        }
        out
    }

    /// `raw` as the stored form of a time (see [`time`]), or the item refused at `field`.
    fn item_time(&mut self, item: u64, field: &str, raw: Option<&str>) -> Option<String> {
        let at = raw.and_then(|t| time(t, 0));
        if at.is_none() {
            let what = raw.map_or("nothing".into(), |t| format!("{t:?}"));
            self.refuse(item, field, "import.time", format!("{what} is not an RFC 3339 time"));
        }
        at
    }

    /// Note `predicate` (whose objects are `object`: `entity` or `literal`) as one to declare
    /// when the schema lacks it.
    fn uses(&mut self, schema: &Schema, predicate: &str, object: &'static str) {
        if schema.predicate(predicate).is_none() {
            self.predicates.insert(predicate.to_owned(), object);
        }
    }
}

/// The text of a schema module declaring `predicates` (name, and `entity` or `literal`),
/// named by a digest of the list, so the same list gives the same module (a duplicate on
/// re-import).
pub fn predicates_module(predicates: &BTreeMap<String, &'static str>) -> String {
    let list: Vec<String> = predicates.iter().map(|(p, o)| format!("{p}={o}")).collect();
    let digest = sha256_hex(list.join("\n").as_bytes());
    let mut out = format!(
        "module = \"imported-{}\"\ndescription = \"Relation types of imported memories, as fact predicates.\"\n",
        &digest[..12]
    );
    for (p, object) in predicates {
        out.push_str(&format!(
            "\n[predicates.{p}]\ndescription = \"Imported: `{p}`, whose object is an {object}.\"\nobject = \"{object}\"\n"
        ));
    }
    out
}

/// `prefix:` and 16 hex digits of the SHA-256 of `parts`: an id derived from content.
pub fn content_id(prefix: &str, parts: &[&str]) -> String {
    let digest = sha256_hex(parts.join("\u{1f}").as_bytes());
    format!("{prefix}:{}", &digest[..16])
}

/// An id made of free text: whitespace and control characters become `-`, at most 128 bytes
/// (cut at a character boundary); `None` when nothing is left.
pub fn id_part(s: &str) -> Option<String> {
    let mut out = String::new();
    for c in s.trim().chars() {
        let c = if c.is_whitespace() || c.is_control() { '-' } else { c };
        if out.len() + c.len_utf8() > 128 {
            break;
        }
        out.push(c);
    }
    (!out.is_empty()).then_some(out)
}

/// A relation type as a predicate: the schema's spelling rules (lower case, `-` and spaces as
/// `_`), then any other character as `_`, and `r_` before a leading digit.
pub fn predicate_name(raw: &str) -> Option<String> {
    let mut out = String::new();
    for c in canonical_predicate(raw).chars() {
        let c = if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' };
        if !(c == '_' && (out.is_empty() || out.ends_with('_'))) {
            out.push(c);
        }
    }
    let out = out.trim_end_matches('_').to_owned();
    match out.chars().next() {
        None => None,
        Some(c) if c.is_ascii_digit() => Some(format!("r_{out}")),
        Some(_) => Some(out),
    }
}

/// A tool's entity type as one of the schema's (aliases such as `person` accepted, any case);
/// `concept` for anything else.
pub fn entity_type(schema: &Schema, raw: &str) -> String {
    schema
        .enum_def("entity_type")
        .and_then(|e| e.canonical(&raw.trim().to_lowercase()).map(str::to_owned))
        .unwrap_or_else(|| "concept".to_owned())
}

/// An RFC 3339 time (with an offset; a naive one is taken as UTC), normalised to UTC with
/// milliseconds, plus `offset_ms`; `None` when it is not a time.
pub fn time(raw: &str, offset_ms: i64) -> Option<String> {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    let t = raw.trim();
    let parsed = DateTime::parse_from_rfc3339(t)
        .map(|d| d.with_timezone(&Utc))
        .or_else(|_| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f").map(|d| d.and_utc()));
    let at = parsed.ok()?.checked_add_signed(chrono::Duration::milliseconds(offset_ms))?;
    Some(at.to_rfc3339_opts(SecondsFormat::Millis, true))
}

/// The string at `key` of an object, trimmed and non-empty.
fn text<'v>(obj: &'v serde_json::Map<String, Value>, key: &str) -> Option<&'v str> {
    obj.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

/// The list of items of a JSON document: the document itself when it is a list, else the list
/// under the first of `keys` it holds.
fn items<'v>(doc: &'v Value, keys: &[&str]) -> Option<&'v Vec<Value>> {
    doc.as_array().or_else(|| keys.iter().find_map(|k| doc.get(k).and_then(Value::as_array)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_ids_and_predicates() {
        assert_eq!(predicate_name("works at"), Some("works_at".into()));
        assert_eq!(predicate_name("Is-Part-Of!!"), Some("is_part_of".into()));
        assert_eq!(predicate_name("2nd degree"), Some("r_2nd_degree".into()));
        assert_eq!(predicate_name("  !! "), None);
        assert_eq!(id_part(" a b\tc "), Some("a-b-c".into()));
        assert_eq!(time("2024-01-02T03:04:05+02:00", 1), Some("2024-01-02T01:04:05.001Z".into()));
        assert_eq!(time("2024-01-02T03:04:05", 0), Some("2024-01-02T03:04:05.000Z".into()));
        assert_eq!(time("yesterday", 0), None);
        let schema = Schema::core().unwrap();
        assert_eq!(entity_type(&schema, "Person"), "user");
        assert_eq!(entity_type(&schema, "organization"), "concept");
        let m = predicates_module(&[("works_at".to_owned(), "entity")].into());
        assert!(schema.extend(&m).unwrap().predicate("works_at").is_some(), "{m}");
    }
}
