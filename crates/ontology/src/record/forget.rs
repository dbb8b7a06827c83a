//! Forgetting: the `forget` record (a redaction's immutable trace) and the tombstone that replaces
//! the body of every log record it redacted.
//!
//! A `forget` record names its target (`{kind: event|session|entity|memory, id}`), who forgot it
//! (`by`), an optional short `reason`, when (`at`) and how many log records were redacted. It
//! never carries the forgotten content.
//!
//! A tombstone (`record_type: "redacted"`) keeps the redacted record's kind and id (its log row
//! keeps its position) and names the forget record. Only stored bodies decode as tombstones
//! ([`super::validate_stored`]): a writer cannot append one.

use serde_json::{Map, Value};

use super::{RecordKind, Validator};
use crate::violation::Violation;

/// What a forget record removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ForgetKind {
    /// One event.
    Event,
    /// Every event of a session.
    Session,
    /// An entity, its facts, slots and instance records, and its mentions in events.
    Entity,
    /// A memory with its outcomes and links.
    Memory,
}

impl ForgetKind {
    /// The name written in records.
    pub fn as_str(self) -> &'static str {
        match self {
            ForgetKind::Event => "event",
            ForgetKind::Session => "session",
            ForgetKind::Entity => "entity",
            ForgetKind::Memory => "memory",
        }
    }

    /// Parse a name (any letter case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "event" => Some(ForgetKind::Event),
            "session" => Some(ForgetKind::Session),
            "entity" => Some(ForgetKind::Entity),
            "memory" => Some(ForgetKind::Memory),
            _ => None,
        }
    }
}

/// A validated `forget` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForgetRecord {
    /// Unique id (given, or `forget-` and a hash of the record).
    pub forget_id: String,
    /// What kind of thing was forgotten.
    pub kind: ForgetKind,
    /// Its id (event id, session id, entity id or memory id).
    pub target_id: String,
    /// The principal who forgot it.
    pub by: String,
    /// Why, in a few words.
    pub reason: Option<String>,
    /// RFC 3339 time of the forget.
    pub at: String,
    /// How many log records were redacted (replaced by tombstones or rewritten).
    pub redacted: u64,
}

/// The body a redacted log record keeps: its kind and id, and the forget that redacted it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tombstone {
    /// The kind of the redacted record.
    pub kind: RecordKind,
    /// Its id.
    pub id: String,
    /// The forget record that redacted it.
    pub forget_id: String,
}

impl Tombstone {
    /// The stored JSON of the tombstone.
    pub fn to_json(&self) -> String {
        serde_json::json!({
            "record_type": "redacted",
            "kind": self.kind.as_str(),
            "id": self.id,
            "forget_id": self.forget_id,
        })
        .to_string()
    }

    /// Parse a stored body; `None` unless it is a well-formed tombstone.
    pub fn parse(text: &str) -> Option<Tombstone> {
        // A cheap test first: most stored bodies are not tombstones.
        if !text.contains("\"redacted\"") {
            return None;
        }
        let value: Value = serde_json::from_str(text).ok()?;
        let obj = value.as_object()?;
        if obj.get("record_type")?.as_str()? != "redacted" || obj.len() != 4 {
            return None;
        }
        Some(Tombstone {
            kind: RecordKind::parse(obj.get("kind")?.as_str()?)?,
            id: obj.get("id")?.as_str()?.to_owned(),
            forget_id: obj.get("forget_id")?.as_str()?.to_owned(),
        })
    }
}

/// Longest `reason`, in bytes: a reason says why, it is not a place for content.
pub const MAX_REASON_BYTES: usize = 500;

pub(super) const FORGET_FIELDS: &[&str] =
    &["record_type", "forget_id", "target", "by", "reason", "at", "redacted"];
const TARGET_FIELDS: &[&str] = &["kind", "id"];

impl Validator<'_> {
    pub(super) fn forget(&mut self, obj: &Map<String, Value>) -> Option<ForgetRecord> {
        self.unknown_fields(obj, FORGET_FIELDS, "$");
        let given_id = self.id(obj, "forget_id", "$.forget_id", false);
        let target = self.forget_target(obj);
        let by = self.id(obj, "by", "$.by", true);
        let reason = self.string(obj, "reason", "$.reason", false).and_then(|r| {
            let r = r.trim();
            if r.len() > MAX_REASON_BYTES || r.chars().any(char::is_control) {
                self.out.push(Violation::for_str(
                    "$.reason",
                    r,
                    "forget.reason_format",
                    format!(
                        "a reason is at most {MAX_REASON_BYTES} bytes of text without control characters"
                    ),
                ));
                return None;
            }
            (!r.is_empty()).then(|| r.to_owned())
        });
        let at = self.timestamp(obj, "at", "$.at");
        let redacted = match obj.get("redacted") {
            None | Some(Value::Null) => Some(0),
            Some(v) => v.as_u64().or_else(|| {
                self.out.push(Violation::new(
                    "$.redacted",
                    Some(v),
                    "envelope.type",
                    "must be a count (an integer from 0) of redacted records",
                ));
                None
            }),
        };
        let (kind, target_id) = target?;
        let mut record = ForgetRecord {
            forget_id: given_id.clone().unwrap_or_default(),
            kind,
            target_id,
            by: by?,
            reason,
            at: at?.0,
            redacted: redacted?,
        };
        if given_id.is_none() {
            record.forget_id = super::memory::derived_id("forget", &forget_json(&record));
        }
        Some(record)
    }

    fn forget_target(&mut self, obj: &Map<String, Value>) -> Option<(ForgetKind, String)> {
        let Some(value) = obj.get("target") else {
            self.out.push(Violation::new(
                "$.target",
                None,
                "envelope.required_field",
                "required field is missing",
            ));
            return None;
        };
        let Value::Object(t) = value else {
            self.out.push(Violation::new(
                "$.target",
                Some(value),
                "envelope.type",
                "must be an object {kind, id}",
            ));
            return None;
        };
        self.unknown_fields(t, TARGET_FIELDS, "$.target");
        let kind = self.string(t, "kind", "$.target.kind", true).and_then(|k| {
            let parsed = ForgetKind::parse(k);
            if parsed.is_none() {
                self.out.push(Violation::for_str(
                    "$.target.kind",
                    k,
                    "forget.target_kind",
                    "must be \"event\", \"session\", \"entity\" or \"memory\"",
                ));
            }
            parsed
        });
        // Entity ids may hold single spaces (`user:ada lovelace`), so the id rule is looser
        // than for record ids: any text without control characters, within the name limit.
        let max = self.limits.max_id_bytes.max(self.limits.max_name_bytes.saturating_add(64));
        let id = self.string(t, "id", "$.target.id", true).and_then(|id| {
            if id.trim().is_empty() || id.len() > max || id.chars().any(char::is_control) {
                self.out.push(Violation::for_str(
                    "$.target.id",
                    id,
                    "forget.target_id",
                    format!("must be 1 to {max} bytes of text without control characters"),
                ));
                return None;
            }
            Some(id.to_owned())
        });
        Some((kind?, id?))
    }
}

/// Canonical JSON of a forget record.
pub(super) fn forget_json(r: &ForgetRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "forget".into());
    if !r.forget_id.is_empty() {
        m.insert("forget_id".into(), r.forget_id.clone().into());
    }
    m.insert("target".into(), serde_json::json!({"kind": r.kind.as_str(), "id": r.target_id}));
    m.insert("by".into(), r.by.clone().into());
    if let Some(reason) = &r.reason {
        m.insert("reason".into(), reason.clone().into());
    }
    m.insert("at".into(), r.at.clone().into());
    m.insert("redacted".into(), r.redacted.into());
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Limits, RecordBody, RecordKind, Schema, validate, validate_stored};

    use super::*;

    #[test]
    fn a_forget_record_validates_and_never_needs_the_content() {
        let schema = Schema::core().unwrap();
        let v = json!({"record_type": "forget", "target": {"kind": "Entity", "id": "user:ada lovelace"},
            "by": "ops", "reason": " leaked ", "at": "2026-11-20T09:00:00Z", "redacted": 3});
        let r = validate(&schema, &Limits::default(), &v.to_string()).unwrap();
        let RecordBody::Forget(f) = r.body() else { panic!("{r:?}") };
        assert_eq!(
            (f.kind, f.target_id.as_str(), f.redacted),
            (ForgetKind::Entity, "user:ada lovelace", 3)
        );
        assert_eq!(f.reason.as_deref(), Some("leaked"));
        assert!(f.forget_id.starts_with("forget-"));
        // The canonical form (with its derived id) reads back the same.
        assert_eq!(validate(&schema, &Limits::default(), r.canonical()).unwrap(), r);
        let bad = json!({"record_type": "forget", "target": {"kind": "table", "id": ""},
            "at": "now", "reason": "x".repeat(MAX_REASON_BYTES + 1)});
        let err = validate(&schema, &Limits::default(), &bad.to_string()).unwrap_err();
        let rules: Vec<(&str, &str)> =
            err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect();
        for want in [
            ("$.target.kind", "forget.target_kind"),
            ("$.target.id", "forget.target_id"),
            ("$.by", "envelope.required_field"),
            ("$.reason", "forget.reason_format"),
            ("$.at", "envelope.timestamp_format"),
        ] {
            assert!(rules.contains(&want), "{want:?} missing from {rules:?}");
        }
    }

    #[test]
    fn only_stored_bodies_decode_as_tombstones() {
        let schema = Schema::core().unwrap();
        let t =
            Tombstone { kind: RecordKind::Event, id: "e1".into(), forget_id: "forget-1".into() };
        let stored = validate_stored(&schema, &t.to_json()).unwrap();
        assert_eq!((stored.kind(), stored.id()), (RecordKind::Event, "e1"));
        assert_eq!(stored.body(), &RecordBody::Redacted(t.clone()));
        let err = validate(&schema, &Limits::default(), &t.to_json()).unwrap_err();
        assert_eq!(err.violations[0].rule, "envelope.record_type");
        // A body that merely mentions the word is not a tombstone.
        assert_eq!(Tombstone::parse(r#"{"record_type":"event","note":"redacted"}"#), None);
    }
}
