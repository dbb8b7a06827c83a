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

use super::{FactObject, RecordBody, RecordKind, ValidRecord, Validator, canonical_json};
use crate::digest::sha256_hex;
use crate::entity::entity_id;
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

/// How a record refers to an entity being forgotten (see [`entity_use`]).
#[derive(Debug, Clone, PartialEq)]
pub enum EntityUse {
    /// It does not name the entity.
    Unrelated,
    /// It is about the entity (a fact with it as subject or object, an explicit edge to it, a
    /// decision on a pair with it, its type, slots or goals): its body becomes a tombstone.
    About,
    /// It names the entity among other things (an event's entity list, tool or user; a
    /// document's mentions; a receipt's inputs): the same record without the reference.
    Names(Box<ValidRecord>),
    /// It names the entity in a field that cannot be left out: an event's `agent_id`.
    Required(&'static str),
}

/// How `record` refers to the entity `entity_id` (`{entity_type}:{normalised name}`).
///
/// A rewritten record keeps its id and everything else it says, including free text (an
/// event's payload, a document's text) that may spell the name: only the structured reference
/// goes. A fact retraction names a fact, not an entity: the caller tombstones the retractions
/// of the facts it tombstones.
pub fn entity_use(record: &ValidRecord, entity_id_: &str) -> EntityUse {
    let is = |id: &str| id == entity_id_;
    let rewritten = |body: RecordBody| {
        let canonical = canonical_json(&body);
        EntityUse::Names(Box::new(ValidRecord { body, canonical }))
    };
    match record.body() {
        RecordBody::Event(e) => {
            if is(&entity_id("agent", &e.agent_id)) {
                return EntityUse::Required("agent_id");
            }
            let tool = e.tool_name.as_deref().is_some_and(|t| is(&entity_id("tool", t)));
            let user = e.user_id.as_deref().is_some_and(|u| is(&entity_id("user", u)));
            let listed = e.entities.iter().any(|r| is(&r.entity_id()));
            if !(tool || user || listed) {
                return EntityUse::Unrelated;
            }
            let mut e = e.clone();
            if tool {
                e.tool_name = None;
            }
            if user {
                e.user_id = None;
            }
            e.entities.retain(|r| !is(&r.entity_id()));
            rewritten(RecordBody::Event(e))
        }
        RecordBody::Edge(e) => {
            let names = |k: &crate::graph::NodeKey| k.label == "Entity" && is(&k.id);
            if names(&e.from) || names(&e.to) { EntityUse::About } else { EntityUse::Unrelated }
        }
        RecordBody::EntityDecision(d) => {
            if is(&d.entity_a) || is(&d.entity_b) {
                EntityUse::About
            } else {
                EntityUse::Unrelated
            }
        }
        RecordBody::Slots(s) => match s.entity() {
            Some(t) if is(&t.entity_id()) => EntityUse::About,
            Some(_) | None => EntityUse::Unrelated,
        },
        RecordBody::Fact(f) => {
            let object = matches!(&f.object, FactObject::Entity(o) if is(&o.id));
            if is(&f.subject.id) || object { EntityUse::About } else { EntityUse::Unrelated }
        }
        RecordBody::Document(d) => {
            if !d.mentions.iter().any(|m| is(&m.entity.id)) {
                return EntityUse::Unrelated;
            }
            let mut d = d.clone();
            d.mentions.retain(|m| !is(&m.entity.id));
            rewritten(RecordBody::Document(d))
        }
        RecordBody::Receipt(r) => {
            if !r.inputs.entities.iter().any(|id| is(id)) {
                return EntityUse::Unrelated;
            }
            let mut r = r.clone();
            r.inputs.entities.retain(|id| !is(id));
            rewritten(RecordBody::Receipt(r))
        }
        RecordBody::Schema(_)
        | RecordBody::Memory(_)
        | RecordBody::MemoryOutcome(_)
        | RecordBody::MemoryLink(_)
        | RecordBody::MemoryLinkVote(_)
        | RecordBody::FactRetraction(_)
        | RecordBody::Forget(_)
        | RecordBody::Redacted(_)
        | RecordBody::Access(_) => EntityUse::Unrelated,
    }
}

/// The id a redacted record keeps when its own id spells what was forgotten (a fact's claim id
/// holds its subject's entity id, a slot's its entity's): a digest of kind and id, so the log
/// row stays unique without the name. Whoever knows the old id can recompute it.
pub fn redacted_id(kind: RecordKind, id: &str) -> String {
    let digest = sha256_hex(format!("{}\u{0}{id}", kind.as_str()).as_bytes());
    format!("redacted-{}", &digest[..32])
}

/// The target id a forget record stores for an entity: a digest of the entity id, because the
/// id is the entity's name and the audit must not hold it.
pub fn entity_digest(entity_id_: &str) -> String {
    let digest = sha256_hex(entity_id_.as_bytes());
    format!("entity-{}", &digest[..32])
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
    fn entity_use_tombstones_what_is_about_an_entity_and_rewrites_what_names_it() {
        let schema = Schema::core().unwrap();
        let rec =
            |v: serde_json::Value| validate(&schema, &Limits::default(), &v.to_string()).unwrap();
        let event = rec(json!({"event_id": "e1", "event_type": "tool.execute",
            "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s", "agent_id": "planner",
            "trace_id": "t", "tool_name": "vault_read", "user_id": "ada",
            "payload": {"text": "kept as written"},
            "entities": [{"name": "Vault", "entity_type": "resource"},
                {"name": "Orders", "entity_type": "service"}]}));
        assert_eq!(entity_use(&event, "agent:planner"), EntityUse::Required("agent_id"));
        assert_eq!(entity_use(&event, "resource:orders"), EntityUse::Unrelated);
        let EntityUse::Names(r) = entity_use(&event, "resource:vault") else { panic!() };
        let RecordBody::Event(e) = r.body() else { panic!() };
        assert_eq!(e.entities.len(), 1);
        assert_eq!(e.tool_name.as_deref(), Some("vault_read"));
        assert!(!r.canonical().contains("\"Vault\"") && r.canonical().contains("kept as written"));
        // The rewritten form is itself a valid record with the same id.
        assert_eq!(validate_stored(&schema, r.canonical()).unwrap(), *r);
        for (id, gone) in [("tool:vault_read", "tool_name"), ("user:ada", "user_id")] {
            let EntityUse::Names(r) = entity_use(&event, id) else { panic!("{id}") };
            assert!(!r.canonical().contains(gone), "{id}");
        }
        let fact = rec(json!({"record_type": "fact",
            "subject": {"id": "service:orders", "name": "Orders", "via": "id"},
            "predicate": "depends_on",
            "object": {"id": "resource:vault", "name": "Vault", "via": "id"},
            "asserted_at": "2026-11-20T09:00:00Z"}));
        assert_eq!(entity_use(&fact, "resource:vault"), EntityUse::About);
        assert_eq!(entity_use(&fact, "service:orders"), EntityUse::About);
        assert_eq!(entity_use(&fact, "user:ada"), EntityUse::Unrelated);
        let id = redacted_id(RecordKind::Fact, "service:orders|depends_on|resource:vault");
        assert!(id.starts_with("redacted-") && !id.contains("vault"));
        assert!(!entity_digest("resource:vault").contains("vault"));
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
