//! Fact and fact-retraction records (seeds 001 and 002): their stored form, validation and
//! canonical JSON.
//!
//! The log stores a fact with its entities already resolved (`{id, name, via}`), so reprojection
//! never resolves a name again. Resolving the caller's wording (names, aliases, typos, embeddings)
//! is the engine's job at write time; this module checks the resolved form.
//!
//! Ids are derived, never given:
//! - the **fact id** is `{subject id}|{predicate}|{object}` (the object an entity id, or `=` and
//!   the literal's JSON), with `\` and `|` escaped: every claim of one (subject, predicate,
//!   object) is the same fact;
//! - the **claim id** (the record id) is the fact id, `|#` and 16 hex digits of the SHA-256 of the
//!   claim's source, validity and cited sentence, so the same source repeating the same claim is a
//!   duplicate, not new evidence;
//! - a **retraction id** is the fact id, `|@` and the retraction time.

use serde_json::{Map, Value};

use super::Validator;
use crate::digest::sha256_hex;
use crate::entity::normalize_name;
use crate::schema::ObjectKind;
use crate::violation::Violation;

pub(super) const FACT_FIELDS: &[&str] = &[
    "record_type",
    "subject",
    "predicate",
    "object",
    "confidence",
    "source",
    "valid_from",
    "valid_to",
    "cites",
    "asserted_at",
];
pub(super) const RETRACTION_FIELDS: &[&str] = &["record_type", "fact_id", "retracted_at", "reason"];
const ENTITY_FIELDS: &[&str] = &["id", "name", "via"];

/// Confidence of a claim that gives none (seed 002).
pub const DEFAULT_CONFIDENCE: f64 = 1.0;

/// An entity a fact or a sentence names, as resolved at write time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedEntity {
    /// Entity id, `{entity_type}:{normalised name}`.
    pub id: String,
    /// Display name, used when the projection creates the entity.
    pub name: String,
    /// How the caller's wording was matched (a value of the `via` enum).
    pub via: String,
}

/// The object of a fact.
#[derive(Debug, Clone, PartialEq)]
pub enum FactObject {
    /// An entity.
    Entity(ResolvedEntity),
    /// A string, number or boolean.
    Literal(Value),
    /// A slot value (seed 001's `SlotValue`): a normalised slot label and a value as written,
    /// compared by its normalised form.
    SlotValue {
        /// The normalised slot label.
        slot: String,
        /// The value as written (trimmed).
        value: String,
    },
    /// A declared Type (seed 001's `Type`), by its normalised name; the engine checks that it
    /// is declared.
    Type(String),
}

impl FactObject {
    /// The object's part of the fact id: the entity id, `=` and the literal's JSON, or for a
    /// slot value or a type a form no entity id takes (entity ids start with their type's
    /// identifier): `#slot:{slot}={normalised value}`, `#type:{type}`.
    pub fn key(&self) -> String {
        match self {
            FactObject::Entity(e) => e.id.clone(),
            FactObject::Literal(v) => format!("={v}"),
            FactObject::SlotValue { slot, value } => {
                format!("#slot:{slot}={}", normalize_name(value))
            }
            FactObject::Type(t) => format!("#type:{t}"),
        }
    }

    /// The object's JSON in a stored record.
    fn to_json(&self) -> Value {
        match self {
            FactObject::Entity(e) => entity_json(e),
            FactObject::Literal(v) => serde_json::json!({"literal": v}),
            FactObject::SlotValue { slot, value } => {
                serde_json::json!({"slot": slot, "value": value})
            }
            FactObject::Type(t) => serde_json::json!({"type": t}),
        }
    }
}

/// A validated claim.
#[derive(Debug, Clone, PartialEq)]
pub struct FactRecord {
    /// Derived record id (see the module docs).
    pub claim_id: String,
    /// Derived id of the fact the claim supports.
    pub fact_id: String,
    /// What the claim is about.
    pub subject: ResolvedEntity,
    /// A controlled predicate of the schema.
    pub predicate: String,
    /// An entity or a literal.
    pub object: FactObject,
    /// In [0, 1].
    pub confidence: f64,
    /// Where the claim comes from, verbatim (never fetched).
    pub source: Option<String>,
    /// Start of validity (UTC, normalised); `None`: unbounded.
    pub valid_from: Option<String>,
    /// End of validity, exclusive (UTC, normalised); `None`: unbounded.
    pub valid_to: Option<String>,
    /// The sentence id the claim was read from.
    pub cites: Option<String>,
    /// When the claim was written (UTC, normalised).
    pub asserted_at: String,
}

/// A validated retraction: the fact is not true from `retracted_at` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactRetractionRecord {
    /// Derived record id.
    pub retraction_id: String,
    /// The retracted fact.
    pub fact_id: String,
    /// From when (UTC, normalised).
    pub retracted_at: String,
    /// Why, in words.
    pub reason: Option<String>,
}

/// The fact id of (subject, predicate, object) (see the module docs).
pub fn fact_id(subject: &str, predicate: &str, object: &FactObject) -> String {
    format!("{}|{}|{}", escape(subject), escape(predicate), escape(&object.key()))
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('|', "\\|")
}

/// The predicate name `raw` stands for: trimmed, ASCII lower case, `-` and spaces as `_`
/// (`Reports-To` is `reports_to`). Whether it is declared is the schema's question.
pub fn canonical_predicate(raw: &str) -> String {
    raw.trim()
        .chars()
        .map(|c| if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() })
        .collect()
}

/// A time as facts store it: UTC, millisecond precision, fixed width
/// (`2026-05-01T00:00:00.000Z`), so stored times compare as strings. Accepts RFC 3339 with an
/// offset or a date (`2026-05-01`, midnight UTC).
pub fn normalize_time(s: &str) -> Option<String> {
    use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
    let t = s.trim();
    let dt = match DateTime::parse_from_rfc3339(t) {
        Ok(dt) => dt.with_timezone(&Utc),
        Err(_) => NaiveDate::parse_from_str(t, "%Y-%m-%d").ok()?.and_hms_opt(0, 0, 0)?.and_utc(),
    };
    use chrono::Datelike;
    (0..=9999).contains(&dt.year()).then(|| dt.to_rfc3339_opts(SecondsFormat::Millis, true))
}

impl Validator<'_> {
    fn time(&mut self, obj: &Map<String, Value>, field: &str, required: bool) -> Option<String> {
        let path = format!("$.{field}");
        let raw = self.string(obj, field, &path, required)?;
        let t = normalize_time(raw);
        if t.is_none() {
            self.out.push(Violation::for_str(
                path,
                raw,
                "envelope.timestamp_format",
                "must be an RFC 3339 timestamp with an offset (2026-05-01T09:00:00Z) or a date (2026-05-01), years 0 to 9999",
            ));
        }
        t
    }

    pub(super) fn resolved_entity(
        &mut self,
        value: Option<&Value>,
        path: &str,
    ) -> Option<ResolvedEntity> {
        let Some(Value::Object(o)) = value else {
            self.out.push(Violation::new(
                path,
                value,
                if value.is_none() { "envelope.required_field" } else { "envelope.type" },
                "must be a resolved entity {id, name, via}; write facts through `ctxgraph fact add` or Engine::record_fact to resolve names",
            ));
            return None;
        };
        self.unknown_fields(o, ENTITY_FIELDS, path);
        let id = self.string(o, "id", &format!("{path}.id"), true).map(str::to_owned);
        let id = id.and_then(|id| self.entity_key_at(&id, &format!("{path}.id")));
        let name = self.string(o, "name", &format!("{path}.name"), true).map(str::to_owned);
        let via = self
            .string(o, "via", &format!("{path}.via"), true)
            .and_then(|v| self.enum_value("via", v, &format!("{path}.via")));
        let (id, name, via) = (id?, name?, via?);
        let id_name = id.split_once(':').map_or("", |(_, n)| n);
        if normalize_name(&name) != id_name {
            self.out.push(Violation::for_str(
                format!("{path}.name"),
                &name,
                "fact.entity_name",
                format!("the name must normalise to the name part of the id `{id}`"),
            ));
            return None;
        }
        Some(ResolvedEntity { id, name, via })
    }

    /// The canonical predicate for `raw` (see [`canonical_predicate`]), if declared.
    fn predicate(&mut self, raw: &str) -> Option<(String, ObjectKind)> {
        let name = canonical_predicate(raw);
        match self.schema.predicate(&name) {
            Some(p) => Some((name, p.object)),
            None => {
                let known = self.schema.predicates().keys().cloned().collect::<Vec<_>>().join(", ");
                self.out.push(Violation::for_str(
                    "$.predicate",
                    raw,
                    "fact.unknown_predicate",
                    format!("not a controlled predicate; known: {known} (schema modules add more)"),
                ));
                None
            }
        }
    }

    pub(super) fn fact(&mut self, obj: &Map<String, Value>) -> Option<FactRecord> {
        self.unknown_fields(obj, FACT_FIELDS, "$");
        let subject = self.resolved_entity(obj.get("subject"), "$.subject");
        let predicate =
            self.string(obj, "predicate", "$.predicate", true).and_then(|p| self.predicate(p));
        let object = match obj.get("object") {
            Some(Value::Object(o)) if o.contains_key("literal") => {
                self.unknown_fields(o, &["literal"], "$.object");
                match o.get("literal") {
                    Some(v @ (Value::String(_) | Value::Number(_) | Value::Bool(_))) => {
                        Some(FactObject::Literal(v.clone()))
                    }
                    other => {
                        self.out.push(Violation::new(
                            "$.object.literal",
                            other,
                            "envelope.type",
                            "a literal is a string, a number or a boolean",
                        ));
                        None
                    }
                }
            }
            Some(Value::Object(o)) if o.contains_key("slot") => {
                self.unknown_fields(o, &["slot", "value"], "$.object");
                let slot = self.fact_label(o.get("slot"), "$.object.slot", "a slot label");
                let value = self.fact_label(o.get("value"), "$.object.value", "a slot value");
                match (slot, value) {
                    (Some(slot), Some(value)) => {
                        Some(FactObject::SlotValue { slot: normalize_name(&slot), value })
                    }
                    _ => None,
                }
            }
            Some(Value::Object(o)) if o.contains_key("type") => {
                self.unknown_fields(o, &["type"], "$.object");
                self.fact_label(o.get("type"), "$.object.type", "a type name")
                    .map(|t| FactObject::Type(normalize_name(&t)))
            }
            other => self.resolved_entity(other, "$.object").map(FactObject::Entity),
        };
        if let (Some((p, kind)), Some(o)) = (&predicate, &object) {
            // A slot value or a type is a node of the graph, not a literal: it fits where an
            // entity does, as seed 001's OBJECT does (Entity | SlotValue | Type).
            let fits = matches!(
                (kind, o),
                (ObjectKind::Any, _)
                    | (
                        ObjectKind::Entity,
                        FactObject::Entity(_) | FactObject::SlotValue { .. } | FactObject::Type(_)
                    )
                    | (ObjectKind::Literal, FactObject::Literal(_))
            );
            if !fits {
                self.out.push(Violation::with_text(
                    "$.object",
                    Some(&o.key()),
                    "fact.object_kind",
                    format!(
                        "the object of `{p}` must be {}",
                        match kind {
                            ObjectKind::Entity => "an entity, a slot value or a type",
                            ObjectKind::Literal | ObjectKind::Any => "a literal",
                        }
                    ),
                ));
            }
        }
        let confidence = self.confidence(obj, "fact.confidence_range");
        let source = self.string(obj, "source", "$.source", false).map(str::to_owned);
        let valid_from = self.time(obj, "valid_from", false);
        let valid_to = self.time(obj, "valid_to", false);
        if let (Some(f), Some(t)) = (&valid_from, &valid_to)
            && f >= t
        {
            self.out.push(Violation::for_str(
                "$.valid_to",
                t,
                "fact.validity",
                format!("must be after valid_from ({f})"),
            ));
        }
        let cites = self.id(obj, "cites", "$.cites", false);
        let asserted_at = self.time(obj, "asserted_at", true);
        let (subject, (predicate, _), object) = (subject?, predicate?, object?);
        let fact_id = fact_id(&subject.id, &predicate, &object);
        let provenance = [&source, &valid_from, &valid_to, &cites]
            .iter()
            .map(|v| v.as_deref().unwrap_or("\u{0}none"))
            .collect::<Vec<_>>()
            .join("\u{0}");
        let claim_id = format!("{fact_id}|#{}", &sha256_hex(provenance.as_bytes())[..16]);
        Some(FactRecord {
            claim_id,
            fact_id,
            subject,
            predicate,
            object,
            confidence: confidence?,
            source,
            valid_from,
            valid_to,
            cites,
            asserted_at: asserted_at?,
        })
    }

    /// A label of a fact's slot-value or type object: a string of 1 to `max_name_bytes` bytes
    /// without control characters, trimmed.
    fn fact_label(&mut self, value: Option<&Value>, path: &str, what: &str) -> Option<String> {
        let Some(Value::String(raw)) = value else {
            self.out.push(Violation::new(
                path,
                value,
                "envelope.type",
                format!("must be {what} (a string)"),
            ));
            return None;
        };
        self.name_text(raw, path, "fact.object_format", &format!("{what} is"))
    }

    pub(super) fn fact_retraction(
        &mut self,
        obj: &Map<String, Value>,
    ) -> Option<FactRetractionRecord> {
        self.unknown_fields(obj, RETRACTION_FIELDS, "$");
        let fact_id = self.string(obj, "fact_id", "$.fact_id", true).map(str::to_owned);
        let retracted_at = self.time(obj, "retracted_at", true);
        let reason = self.string(obj, "reason", "$.reason", false).map(str::to_owned);
        let (fact_id, retracted_at) = (fact_id?, retracted_at?);
        if fact_id.is_empty() {
            self.out.push(Violation::for_str(
                "$.fact_id",
                &fact_id,
                "fact.unknown_fact",
                "a fact id is not empty",
            ));
            return None;
        }
        let retraction_id = format!("{fact_id}|@{retracted_at}");
        Some(FactRetractionRecord { retraction_id, fact_id, retracted_at, reason })
    }
}

fn entity_json(e: &ResolvedEntity) -> Value {
    serde_json::json!({"id": e.id, "name": e.name, "via": e.via})
}

pub(super) fn canonical_fact(f: &FactRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "fact".into());
    m.insert("subject".into(), entity_json(&f.subject));
    m.insert("predicate".into(), f.predicate.clone().into());
    m.insert("object".into(), f.object.to_json());
    m.insert("confidence".into(), f.confidence.into());
    m.insert("asserted_at".into(), f.asserted_at.clone().into());
    for (k, v) in [
        ("source", &f.source),
        ("valid_from", &f.valid_from),
        ("valid_to", &f.valid_to),
        ("cites", &f.cites),
    ] {
        if let Some(v) = v {
            m.insert(k.into(), v.clone().into());
        }
    }
    Value::Object(m)
}

pub(super) fn canonical_retraction(r: &FactRetractionRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), "fact_retraction".into());
    m.insert("fact_id".into(), r.fact_id.clone().into());
    m.insert("retracted_at".into(), r.retracted_at.clone().into());
    if let Some(reason) = &r.reason {
        m.insert("reason".into(), reason.clone().into());
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Limits, RecordBody, Schema, validate_value};

    fn check(value: serde_json::Value) -> Result<RecordBody, Vec<&'static str>> {
        let schema = Schema::core().unwrap();
        validate_value(&schema, &Limits::default(), value)
            .map(|r| r.body().clone())
            .map_err(|e| e.violations.iter().map(|v| v.rule).collect())
    }

    fn fact(predicate: &str, confidence: serde_json::Value) -> serde_json::Value {
        json!({
            "record_type": "fact",
            "subject": {"id": "user:alice", "name": "Alice", "via": "name"},
            "predicate": predicate,
            "object": {"id": "user:bob", "name": "Bob", "via": "created"},
            "confidence": confidence,
            "asserted_at": "2026-05-01T10:00:00+02:00",
        })
    }

    #[test]
    fn a_resolved_fact_validates_with_derived_ids_and_normalised_times() {
        let Ok(RecordBody::Fact(f)) = check(fact("Reports-To", json!(0.5))) else { panic!() };
        assert_eq!(f.predicate, "reports_to");
        assert_eq!(f.fact_id, "user:alice|reports_to|user:bob");
        assert!(f.claim_id.starts_with("user:alice|reports_to|user:bob|#"));
        assert_eq!(f.asserted_at, "2026-05-01T08:00:00.000Z");
        assert_eq!(
            super::normalize_time("2026-05-01").as_deref(),
            Some("2026-05-01T00:00:00.000Z")
        );
    }

    #[test]
    fn a_slot_value_or_a_type_object_has_its_own_id_and_round_trips() {
        let schema = Schema::core().unwrap();
        let with = |object: serde_json::Value| {
            let mut f = fact("tagged", json!(1));
            f["object"] = object;
            f
        };
        let r = validate_value(
            &schema,
            &Limits::default(),
            with(json!({"slot": "Genre", "value": " Science Fiction "})),
        )
        .unwrap();
        let RecordBody::Fact(f) = r.body() else { panic!() };
        assert_eq!(f.fact_id, "user:alice|tagged|#slot:genre=science fiction");
        assert_eq!(
            f.object,
            super::FactObject::SlotValue { slot: "genre".into(), value: "Science Fiction".into() }
        );
        let again = crate::validate(&schema, &Limits::default(), r.canonical()).unwrap();
        assert_eq!(&again, &r);
        let Ok(RecordBody::Fact(f)) = check(with(json!({"type": "Film"}))) else { panic!() };
        assert_eq!(f.fact_id, "user:alice|tagged|#type:film");
        // A slot value or a type is where an entity may be, never where a literal must be.
        let mut alias = with(json!({"type": "Film"}));
        alias["predicate"] = json!("also_known_as");
        assert_eq!(check(alias).unwrap_err(), ["fact.object_kind"]);
        assert_eq!(
            check(with(json!({"slot": "genre", "value": "", "extra": 1}))).unwrap_err(),
            ["envelope.unknown_field", "fact.object_format"]
        );
        assert_eq!(check(with(json!({"type": 3}))).unwrap_err(), ["envelope.type"]);
    }

    #[test]
    fn bad_facts_name_the_rule() {
        assert_eq!(check(fact("likes", json!(1))).unwrap_err(), ["fact.unknown_predicate"]);
        assert_eq!(check(fact("tagged", json!(1.5))).unwrap_err(), ["fact.confidence_range"]);
        assert_eq!(check(fact("tagged", json!(-0.1))).unwrap_err(), ["fact.confidence_range"]);
        let mut literal = fact("reports_to", json!(1));
        literal["object"] = json!({"literal": "Bob"});
        assert_eq!(check(literal).unwrap_err(), ["fact.object_kind"]);
        let mut unresolved = fact("tagged", json!(1));
        unresolved["subject"] = json!("Alice");
        assert_eq!(check(unresolved).unwrap_err(), ["envelope.type"]);
        let mut misnamed = fact("tagged", json!(1));
        misnamed["subject"]["name"] = json!("Carol");
        assert_eq!(check(misnamed).unwrap_err(), ["fact.entity_name"]);
        let mut window = fact("tagged", json!(1));
        window["valid_from"] = json!("2026-06-01");
        window["valid_to"] = json!("2026-05-01");
        assert_eq!(check(window).unwrap_err(), ["fact.validity"]);
    }

    #[test]
    fn builtin_schema_unifies_the_entity_types_and_declares_the_predicates() {
        let s = Schema::core().unwrap();
        let types = s.enum_def("entity_type").unwrap();
        assert_eq!(types.canonical("person"), Some("user"));
        assert_eq!(types.canonical("source"), Some("resource"));
        assert_eq!(types.canonical("project"), Some("project"));
        assert_eq!(types.canonical("decision"), Some("decision"));
        let single: Vec<_> = s
            .predicates()
            .iter()
            .filter(|(_, p)| p.single_valued)
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(single, ["belongs_to", "decided_in", "reports_to"]);
        assert_eq!(s.predicates().len(), 9);
        let ext = s
            .extend("module = \"ops\"\n[predicates.owned_by]\nsingle_valued = true\nobject = \"entity\"\n")
            .unwrap();
        assert!(ext.predicate("owned_by").unwrap().single_valued);
        let changed = s.extend("module = \"ops\"\n[predicates.tagged]\nsingle_valued = true\n");
        assert_eq!(changed.unwrap_err().code(), "schema.additive_only");
    }
}
