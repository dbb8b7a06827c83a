//! Records of types, slots, checklists and goals (seed 001): their validation, ids, canonical
//! form, and the checklist file format.
//!
//! | `record_type` | says | id |
//! |---|---|---|
//! | `type` | a Type exists (`name`, `description?`) | the normalised name |
//! | `instance_of` | an entity is an instance of a declared Type | entity, type, creation |
//! | `slot` | an entity has a slot value (`slot`, `value`, `confidence? = 1.0`, `source?`) | every field |
//! | `checklist` | a Checklist and its SlotSpecs | the normalised name |
//! | `goal` | a user's Goal, the checklists it influences and the slot values it prefers | user, normalised name |
//!
//! # Entities
//! A record names an entity either by id (`"entity": "concept:alien"`, which must exist when the
//! record is written: the engine checks) or by `{name, entity_type, at}`, which creates the
//! entity when it is missing; `at` (RFC 3339) is when it was observed, because an entity node
//! carries the times it was first and last seen and the projection reads no clock.
//!
//! # Ids
//! A `slot` or `instance_of` record is identified by everything it says, so repeating one is a
//! duplicate and every other observation is a new record; the projection folds them into one
//! edge with commutative rules (maximum confidence, union of sources), so nothing is overwritten
//! and arrival order does not matter. A `type`, `checklist` or `goal` is identified by its name:
//! defining it again differently is a conflict (records are immutable).
//!
//! # Labels
//! Type names, slot labels, slot-spec names, expected labels and checklist ids are normalised
//! (NFKC, lower case, single spaces: the entity-name rule), so `Genre` and `genre` are one slot.
//! Slot values keep their spelling; their normalised form is what identity and comparison use.

use serde_json::{Map, Value};

use super::Validator;
use crate::entity::{entity_id, normalize_name};
use crate::limits::Limits;
use crate::schema::Schema;
use crate::violation::{ValidationErrors, Violation};

/// The `record_type` values of this family.
pub const SLOTS_RECORD_TYPES: &[&str] = &["type", "instance_of", "slot", "checklist", "goal"];

/// Longest slot value, in bytes.
pub const MAX_VALUE_BYTES: usize = 1024;
/// Longest source or description, in bytes.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Most slot specs in one checklist.
pub const MAX_SPECS: usize = 256;
/// Most checklists one goal influences.
pub const MAX_INFLUENCES: usize = 256;
/// Most slot values one goal prefers.
pub const MAX_PREFERS: usize = 64;
/// Highest cost of asking about one slot spec (the default is 1).
pub const MAX_SPEC_COST: f64 = 1_000_000.0;

/// The entity type a goal's owner must have: seed 000's `user` (seed 002's `person`).
pub const GOAL_OWNER_TYPE: &str = "user";

/// An entity a record names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntityTarget {
    /// An entity that must already exist, by id `{entity_type}:{normalised name}`.
    Existing {
        /// The entity id.
        id: String,
        /// Its type (the id's prefix).
        entity_type: String,
    },
    /// An entity created when missing (and mentioned when present).
    Create {
        /// The name as written (trimmed).
        name: String,
        /// Canonical entity type.
        entity_type: String,
        /// When it was observed (RFC 3339): its first/last seen time if this record creates it.
        at: String,
    },
}

impl EntityTarget {
    /// The entity id.
    pub fn entity_id(&self) -> String {
        match self {
            EntityTarget::Existing { id, .. } => id.clone(),
            EntityTarget::Create { name, entity_type, .. } => entity_id(entity_type, name),
        }
    }

    /// The entity type.
    pub fn entity_type(&self) -> &str {
        match self {
            EntityTarget::Existing { entity_type, .. }
            | EntityTarget::Create { entity_type, .. } => entity_type,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            EntityTarget::Existing { id, .. } => Value::String(id.clone()),
            EntityTarget::Create { name, entity_type, at } => {
                serde_json::json!({"name": name, "entity_type": entity_type, "at": at})
            }
        }
    }

    /// Part of a record id: the entity id, marked `+{at}` when the record may create it.
    fn id_part(&self) -> String {
        match self {
            EntityTarget::Existing { id, .. } => id.clone(),
            EntityTarget::Create { at, .. } => format!("{}+{at}", self.entity_id()),
        }
    }
}

/// A declared Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeRecord {
    /// The normalised name (the record id).
    pub type_id: String,
    /// The name as written (trimmed).
    pub name: String,
    /// What it is.
    pub description: Option<String>,
}

/// An entity's INSTANCE_OF a Type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceOfRecord {
    /// Derived id.
    pub record_id: String,
    /// The entity.
    pub entity: EntityTarget,
    /// The type's normalised name; the engine checks that it is declared.
    pub type_id: String,
}

/// One observation of an entity's slot value.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotRecord {
    /// Derived id.
    pub record_id: String,
    /// The entity.
    pub entity: EntityTarget,
    /// The normalised slot label.
    pub slot: String,
    /// The value as written (trimmed; numbers and booleans as their JSON text).
    pub value: String,
    /// How sure the writer is, in [0, 1].
    pub confidence: f64,
    /// Where it comes from, verbatim (never fetched).
    pub source: Option<String>,
}

impl SlotRecord {
    /// The normalised value: what identity and comparisons use.
    pub fn value_key(&self) -> String {
        normalize_name(&self.value)
    }
}

/// How a slot spec is satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SpecRelation {
    /// By HAS_SLOT values whose slot label is one of the expected labels.
    HasSlot,
    /// By INSTANCE_OF a Type whose name is one of the expected labels.
    InstanceOf,
}

impl SpecRelation {
    /// The stored name (`HAS_SLOT`, `INSTANCE_OF`).
    pub fn as_str(self) -> &'static str {
        match self {
            SpecRelation::HasSlot => "HAS_SLOT",
            SpecRelation::InstanceOf => "INSTANCE_OF",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "HAS_SLOT" => Some(SpecRelation::HasSlot),
            "INSTANCE_OF" => Some(SpecRelation::InstanceOf),
            _ => None,
        }
    }
}

/// How many distinct values a slot spec takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cardinality {
    /// Exactly one: a second distinct value is a violation.
    One,
    /// One or more.
    Many,
}

impl Cardinality {
    /// The stored name (`one`, `many`).
    pub fn as_str(self) -> &'static str {
        match self {
            Cardinality::One => "one",
            Cardinality::Many => "many",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "one" => Some(Cardinality::One),
            "many" => Some(Cardinality::Many),
            _ => None,
        }
    }
}

/// One requirement of a checklist.
#[derive(Debug, Clone, PartialEq)]
pub struct SlotSpec {
    /// The normalised name, unique in its checklist.
    pub name: String,
    /// Normalised slot labels (HAS_SLOT) or type names (INSTANCE_OF) that satisfy the spec;
    /// never empty (`[name]` when the record gives none).
    pub expect_labels: Vec<String>,
    /// Through which relation.
    pub relation: SpecRelation,
    /// Whether the checklist is incomplete without it (default true).
    pub required: bool,
    /// How many distinct values (default one).
    pub cardinality: Cardinality,
    /// What asking about it costs, in units of one question (default 1, finite, above 0):
    /// `next` ranks specs by information gain per unit of cost.
    pub cost: f64,
}

/// A checklist with its slot specs, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct ChecklistRecord {
    /// The normalised name (the record id).
    pub checklist_id: String,
    /// The name as written (trimmed).
    pub name: String,
    /// What it is for.
    pub description: Option<String>,
    /// The specs, in the checklist's order; at least one.
    pub slots: Vec<SlotSpec>,
}

/// A slot value a goal favours: candidates holding it are more likely (`next`'s prior).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotPreference {
    /// The normalised slot label.
    pub slot: String,
    /// The value as written (trimmed); compared by its normalised form.
    pub value: String,
}

/// A user's goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalRecord {
    /// Derived id: `{user entity id}|{normalised name}`.
    pub goal_id: String,
    /// The name as written (trimmed).
    pub name: String,
    /// The user (entity type `user`).
    pub user: EntityTarget,
    /// What it means.
    pub description: Option<String>,
    /// Time horizon in words, e.g. `this year`.
    pub horizon: Option<String>,
    /// Priority, 0 the highest.
    pub priority: Option<u64>,
    /// Normalised names of the checklists it influences (in the order given, without repeats);
    /// the engine checks that they are defined.
    pub influences: Vec<String>,
    /// Slot values it favours among candidates (in the order given, without repeats).
    pub prefers: Vec<SlotPreference>,
}

/// A record of this family.
#[derive(Debug, Clone, PartialEq)]
pub enum SlotsRecord {
    /// A Type.
    Type(TypeRecord),
    /// An INSTANCE_OF.
    InstanceOf(InstanceOfRecord),
    /// A slot value.
    Slot(SlotRecord),
    /// A checklist.
    Checklist(ChecklistRecord),
    /// A goal.
    Goal(GoalRecord),
}

impl SlotsRecord {
    /// The id, unique within the kind.
    pub fn id(&self) -> &str {
        match self {
            SlotsRecord::Type(t) => &t.type_id,
            SlotsRecord::InstanceOf(i) => &i.record_id,
            SlotsRecord::Slot(s) => &s.record_id,
            SlotsRecord::Checklist(c) => &c.checklist_id,
            SlotsRecord::Goal(g) => &g.goal_id,
        }
    }

    /// The `record_type`.
    pub fn record_type(&self) -> &'static str {
        match self {
            SlotsRecord::Type(_) => "type",
            SlotsRecord::InstanceOf(_) => "instance_of",
            SlotsRecord::Slot(_) => "slot",
            SlotsRecord::Checklist(_) => "checklist",
            SlotsRecord::Goal(_) => "goal",
        }
    }

    /// The entity the record names, if any.
    pub fn entity(&self) -> Option<&EntityTarget> {
        match self {
            SlotsRecord::InstanceOf(i) => Some(&i.entity),
            SlotsRecord::Slot(s) => Some(&s.entity),
            SlotsRecord::Goal(g) => Some(&g.user),
            SlotsRecord::Type(_) | SlotsRecord::Checklist(_) => None,
        }
    }
}

/// `parts` joined by `|`, with `\` and `|` inside them escaped, so distinct parts give distinct ids.
pub fn joined_id(parts: &[&str]) -> String {
    parts.iter().map(|p| p.replace('\\', "\\\\").replace('|', "\\|")).collect::<Vec<_>>().join("|")
}

const TYPE_FIELDS: &[&str] = &["record_type", "name", "description"];
const INSTANCE_FIELDS: &[&str] = &["record_type", "entity", "type"];
const SLOT_FIELDS: &[&str] = &["record_type", "entity", "slot", "value", "confidence", "source"];
const CHECKLIST_FIELDS: &[&str] = &["record_type", "name", "description", "slots"];
const SPEC_FIELDS: &[&str] =
    &["name", "expect_labels", "relation", "required", "cardinality", "cost"];
const GOAL_FIELDS: &[&str] =
    &["record_type", "name", "user", "description", "horizon", "priority", "influences", "prefers"];
const PREFER_FIELDS: &[&str] = &["slot", "value"];
const TARGET_FIELDS: &[&str] = &["name", "entity_type", "at"];

impl Validator<'_> {
    /// Validate a record of this family; `record_type` is one of [`SLOTS_RECORD_TYPES`].
    pub(super) fn slots_record(
        &mut self,
        record_type: &str,
        obj: &Map<String, Value>,
    ) -> Option<SlotsRecord> {
        match record_type {
            "type" => self.type_record(obj).map(SlotsRecord::Type),
            "instance_of" => self.instance_of(obj).map(SlotsRecord::InstanceOf),
            "slot" => self.slot(obj).map(SlotsRecord::Slot),
            "checklist" => self.checklist(obj).map(SlotsRecord::Checklist),
            _ => self.goal(obj).map(SlotsRecord::Goal),
        }
    }

    /// A label or name: trimmed, 1 to `max_name_bytes` bytes, no control characters.
    fn label(&mut self, raw: &str, path: &str, what: &str) -> Option<String> {
        self.name_text(raw, path, "slots.label_format", &format!("{what} is"))
    }

    fn text(&mut self, obj: &Map<String, Value>, field: &str, path: &str) -> Option<String> {
        let s = self.string(obj, field, path, false)?;
        if s.len() > MAX_TEXT_BYTES {
            self.out.push(Violation::for_str(
                path,
                s,
                "limits.text_bytes",
                format!("at most {MAX_TEXT_BYTES} bytes"),
            ));
            return None;
        }
        Some(s.to_owned())
    }

    fn required_label(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        path: &str,
        what: &str,
    ) -> Option<String> {
        let raw = self.string(obj, field, path, true)?;
        self.label(raw, path, what)
    }

    fn type_record(&mut self, obj: &Map<String, Value>) -> Option<TypeRecord> {
        self.unknown_fields(obj, TYPE_FIELDS, "$");
        let name = self.required_label(obj, "name", "$.name", "a type name");
        let description = self.text(obj, "description", "$.description");
        let name = name?;
        Some(TypeRecord { type_id: normalize_name(&name), name, description })
    }

    /// `field`: an entity id (must exist) or `{name, entity_type, at}` (created when missing).
    fn target(&mut self, obj: &Map<String, Value>, field: &str) -> Option<EntityTarget> {
        let path = format!("$.{field}");
        match obj.get(field) {
            Some(Value::String(_)) => {
                let id = self.entity_key(obj, field)?;
                // `entity_key` accepted the id, so it has a declared type before its first `:`
                // (the longest matching type, as there).
                let entity_type = self
                    .schema
                    .enum_def("entity_type")
                    .map(|e| e.values.as_slice())
                    .unwrap_or(&[])
                    .iter()
                    .map(|v| v.name.as_str())
                    .filter(|t| id.starts_with(t) && id[t.len()..].starts_with(':'))
                    .max_by_key(|t| t.len())?
                    .to_owned();
                Some(EntityTarget::Existing { id, entity_type })
            }
            Some(Value::Object(o)) => {
                self.unknown_fields(o, TARGET_FIELDS, &path);
                let name = self
                    .string(o, "name", &format!("{path}.name"), true)
                    .and_then(|n| self.label(n, &format!("{path}.name"), "an entity name"));
                let entity_type =
                    self.string(o, "entity_type", &format!("{path}.entity_type"), true).and_then(
                        |t| self.enum_value("entity_type", t, &format!("{path}.entity_type")),
                    );
                let at = self.timestamp(o, "at", &format!("{path}.at")).map(|(t, _)| t);
                Some(EntityTarget::Create { name: name?, entity_type: entity_type?, at: at? })
            }
            None | Some(Value::Null) => {
                self.out.push(Violation::new(
                    path,
                    None,
                    "envelope.required_field",
                    "required field is missing: an entity id, or {name, entity_type, at} to create the entity when missing",
                ));
                None
            }
            Some(other) => {
                self.out.push(Violation::new(
                    path,
                    Some(other),
                    "envelope.type",
                    "must be an entity id such as concept:alien, or {name, entity_type, at} to create the entity when missing",
                ));
                None
            }
        }
    }

    fn instance_of(&mut self, obj: &Map<String, Value>) -> Option<InstanceOfRecord> {
        self.unknown_fields(obj, INSTANCE_FIELDS, "$");
        let entity = self.target(obj, "entity");
        let ty = self.required_label(obj, "type", "$.type", "a type name");
        let (entity, type_id) = (entity?, normalize_name(&ty?));
        let record_id = joined_id(&[&entity.id_part(), &type_id]);
        Some(InstanceOfRecord { record_id, entity, type_id })
    }

    fn slot(&mut self, obj: &Map<String, Value>) -> Option<SlotRecord> {
        self.unknown_fields(obj, SLOT_FIELDS, "$");
        let entity = self.target(obj, "entity");
        let slot = self.required_label(obj, "slot", "$.slot", "a slot label");
        let value = match obj.get("value") {
            None | Some(Value::Null) => {
                self.out.push(Violation::new(
                    "$.value",
                    None,
                    "envelope.required_field",
                    "required field is missing",
                ));
                None
            }
            Some(Value::String(s)) => Some(s.trim().to_owned()),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
            Some(other) => {
                self.out.push(Violation::new(
                    "$.value",
                    Some(other),
                    "envelope.type",
                    "must be a string, a number or a boolean",
                ));
                None
            }
        };
        let value = value.and_then(|v| {
            if v.is_empty() || v.len() > MAX_VALUE_BYTES || v.chars().any(char::is_control) {
                self.out.push(Violation::for_str(
                    "$.value",
                    &v,
                    "slots.value_format",
                    format!(
                        "a slot value is 1 to {MAX_VALUE_BYTES} bytes without control characters"
                    ),
                ));
                None
            } else {
                Some(v)
            }
        });
        let confidence = self.confidence(obj, "slots.confidence_range");
        let source = self.text(obj, "source", "$.source");
        let (entity, slot, value, confidence) =
            (entity?, normalize_name(&slot?), value?, confidence?);
        let record_id = joined_id(&[
            &entity.id_part(),
            &slot,
            &value,
            &confidence.to_string(),
            source.as_deref().unwrap_or(""),
        ]);
        Some(SlotRecord { record_id, entity, slot, value, confidence, source })
    }

    fn spec(&mut self, item: &Value, path: &str) -> Option<SlotSpec> {
        let Value::Object(o) = item else {
            self.out.push(Violation::new(
                path,
                Some(item),
                "envelope.type",
                "must be an object {name, expect_labels?, relation?, required?, cardinality?, cost?}",
            ));
            return None;
        };
        self.unknown_fields(o, SPEC_FIELDS, path);
        let name = self.required_label(o, "name", &format!("{path}.name"), "a slot spec name");
        let labels = match o.get("expect_labels") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) => {
                let before = self.out.len();
                let mut labels = Vec::new();
                for (i, l) in items.iter().enumerate() {
                    let lpath = format!("{path}.expect_labels[{i}]");
                    let Value::String(s) = l else {
                        self.out.push(Violation::new(
                            lpath,
                            Some(l),
                            "envelope.type",
                            "must be a string",
                        ));
                        continue;
                    };
                    if let Some(l) = self.label(s, &lpath, "an expected label") {
                        let l = normalize_name(&l);
                        if !labels.contains(&l) {
                            labels.push(l);
                        }
                    }
                }
                (self.out.len() == before).then_some(labels)
            }
            Some(other) => {
                self.out.push(Violation::new(
                    format!("{path}.expect_labels"),
                    Some(other),
                    "envelope.type",
                    "must be an array of labels",
                ));
                None
            }
        };
        let relation = match self.string(o, "relation", &format!("{path}.relation"), false) {
            None => Some(SpecRelation::HasSlot),
            Some(r) => self
                .enum_value("spec_relation", r, &format!("{path}.relation"))
                .and_then(|r| SpecRelation::parse(&r)),
        };
        let required = match o.get("required") {
            None | Some(Value::Null) => Some(true),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.out.push(Violation::new(
                    format!("{path}.required"),
                    Some(other),
                    "envelope.type",
                    "must be true or false",
                ));
                None
            }
        };
        let cardinality = match self.string(o, "cardinality", &format!("{path}.cardinality"), false)
        {
            None => Some(Cardinality::One),
            Some(c) => self
                .enum_value("cardinality", c, &format!("{path}.cardinality"))
                .and_then(|c| Cardinality::parse(&c)),
        };
        let cost = match o.get("cost") {
            None | Some(Value::Null) => Some(1.0),
            Some(value) => match value.as_f64() {
                Some(c) if c.is_finite() && c > 0.0 && c <= MAX_SPEC_COST => Some(c),
                _ => {
                    self.out.push(Violation::new(
                        format!("{path}.cost"),
                        Some(value),
                        "checklist.cost",
                        format!(
                            "the cost of asking is a number above 0 and at most {MAX_SPEC_COST} (1 is one ordinary question)"
                        ),
                    ));
                    None
                }
            },
        };
        let name = normalize_name(&name?);
        let mut expect_labels = labels?;
        if expect_labels.is_empty() {
            expect_labels.push(name.clone());
        }
        Some(SlotSpec {
            name,
            expect_labels,
            relation: relation?,
            required: required?,
            cardinality: cardinality?,
            cost: cost?,
        })
    }

    /// A goal's `prefers`: `[{slot, value}]`, each a slot label and a slot value.
    fn prefers(&mut self, obj: &Map<String, Value>) -> Option<Vec<SlotPreference>> {
        let items = match obj.get("prefers") {
            None | Some(Value::Null) => return Some(Vec::new()),
            Some(Value::Array(items)) if items.len() <= MAX_PREFERS => items,
            Some(other) => {
                self.out.push(Violation::new(
                    "$.prefers",
                    Some(other),
                    "envelope.type",
                    format!("must be an array of at most {MAX_PREFERS} {{slot, value}} objects"),
                ));
                return None;
            }
        };
        let before = self.out.len();
        let mut out: Vec<SlotPreference> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("$.prefers[{i}]");
            let Value::Object(o) = item else {
                self.out.push(Violation::new(
                    path,
                    Some(item),
                    "envelope.type",
                    "must be an object {slot, value}: a slot value the goal favours",
                ));
                continue;
            };
            self.unknown_fields(o, PREFER_FIELDS, &path);
            let slot = self.required_label(o, "slot", &format!("{path}.slot"), "a slot label");
            let value = self.required_label(o, "value", &format!("{path}.value"), "a slot value");
            if let (Some(slot), Some(value)) = (slot, value) {
                let p = SlotPreference { slot: normalize_name(&slot), value };
                if !out.iter().any(|q| {
                    q.slot == p.slot && normalize_name(&q.value) == normalize_name(&p.value)
                }) {
                    out.push(p);
                }
            }
        }
        (self.out.len() == before).then_some(out)
    }

    fn checklist(&mut self, obj: &Map<String, Value>) -> Option<ChecklistRecord> {
        self.unknown_fields(obj, CHECKLIST_FIELDS, "$");
        let name = self.required_label(obj, "name", "$.name", "a checklist name");
        let description = self.text(obj, "description", "$.description");
        let slots = match obj.get("slots") {
            Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_SPECS => {
                let before = self.out.len();
                let mut specs: Vec<SlotSpec> = Vec::with_capacity(items.len());
                // Names seen so far, read apart from the specs' validity, so a repeated name is
                // reported even when its spec has other problems.
                let mut names: Vec<String> = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let path = format!("$.slots[{i}]");
                    let spec = self.spec(item, &path);
                    let name = item.get("name").and_then(Value::as_str).map(str::trim);
                    let name = name.filter(|n| !n.is_empty()).map(normalize_name);
                    match name {
                        Some(n) if names.contains(&n) => {
                            self.out.push(Violation::for_str(
                                format!("{path}.name"),
                                &n,
                                "checklist.duplicate_spec",
                                "slot spec names are unique within a checklist (after normalisation)",
                            ));
                        }
                        Some(n) => {
                            names.push(n);
                            specs.extend(spec);
                        }
                        None => specs.extend(spec),
                    }
                }
                (self.out.len() == before).then_some(specs)
            }
            Some(Value::Array(items)) => {
                self.out.push(Violation::with_text(
                    "$.slots",
                    Some(&format!("{} items", items.len())),
                    "checklist.slot_count",
                    format!("a checklist has 1 to {MAX_SPECS} slot specs"),
                ));
                None
            }
            None | Some(Value::Null) => {
                self.out.push(Violation::new(
                    "$.slots",
                    None,
                    "envelope.required_field",
                    "required field is missing: the checklist's slot specs",
                ));
                None
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.slots",
                    Some(other),
                    "envelope.type",
                    "must be an array of slot specs",
                ));
                None
            }
        };
        let name = name?;
        Some(ChecklistRecord {
            checklist_id: normalize_name(&name),
            name,
            description,
            slots: slots?,
        })
    }

    fn goal(&mut self, obj: &Map<String, Value>) -> Option<GoalRecord> {
        self.unknown_fields(obj, GOAL_FIELDS, "$");
        let name = self.required_label(obj, "name", "$.name", "a goal name");
        let user = self.target(obj, "user").and_then(|u| {
            if u.entity_type() == GOAL_OWNER_TYPE {
                Some(u)
            } else {
                self.out.push(Violation::with_text(
                    "$.user",
                    Some(&u.entity_id()),
                    "goal.user_type",
                    format!(
                        "a goal belongs to a person: an entity of type `{GOAL_OWNER_TYPE}`, not `{}`",
                        u.entity_type()
                    ),
                ));
                None
            }
        });
        let description = self.text(obj, "description", "$.description");
        let horizon = self.text(obj, "horizon", "$.horizon");
        let priority = match obj.get("priority") {
            None | Some(Value::Null) => Some(None),
            Some(value) => match value.as_u64() {
                Some(p) => Some(Some(p)),
                None => {
                    self.out.push(Violation::new(
                        "$.priority",
                        Some(value),
                        "envelope.type",
                        "must be an integer from 0 (the highest priority)",
                    ));
                    None
                }
            },
        };
        let influences = match obj.get("influences") {
            None | Some(Value::Null) => Some(Vec::new()),
            Some(Value::Array(items)) if items.len() <= MAX_INFLUENCES => {
                let before = self.out.len();
                let mut ids = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let path = format!("$.influences[{i}]");
                    let Value::String(s) = item else {
                        self.out.push(Violation::new(
                            path,
                            Some(item),
                            "envelope.type",
                            "must be a checklist name",
                        ));
                        continue;
                    };
                    if let Some(l) = self.label(s, &path, "a checklist name") {
                        let id = normalize_name(&l);
                        // Repeats are dropped; the order is kept, so the paths of the engine's
                        // existence checks match the input.
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                }
                (self.out.len() == before).then_some(ids)
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.influences",
                    Some(other),
                    "envelope.type",
                    format!("must be an array of at most {MAX_INFLUENCES} checklist names"),
                ));
                None
            }
        };
        let prefers = self.prefers(obj);
        let (name, user) = (name?, user?);
        let goal_id = joined_id(&[&user.entity_id(), &normalize_name(&name)]);
        Some(GoalRecord {
            goal_id,
            name,
            user,
            description,
            horizon,
            priority: priority?,
            influences: influences?,
            prefers: prefers?,
        })
    }
}

/// The canonical JSON of a record of this family (sorted keys; defaults written out).
pub(super) fn canonical(record: &SlotsRecord) -> Value {
    let mut m = Map::new();
    m.insert("record_type".into(), record.record_type().into());
    let optional = |m: &mut Map<String, Value>, k: &str, v: &Option<String>| {
        if let Some(v) = v {
            m.insert(k.into(), v.clone().into());
        }
    };
    match record {
        SlotsRecord::Type(t) => {
            m.insert("name".into(), t.name.clone().into());
            optional(&mut m, "description", &t.description);
        }
        SlotsRecord::InstanceOf(i) => {
            m.insert("entity".into(), i.entity.to_json());
            m.insert("type".into(), i.type_id.clone().into());
        }
        SlotsRecord::Slot(s) => {
            m.insert("entity".into(), s.entity.to_json());
            m.insert("slot".into(), s.slot.clone().into());
            m.insert("value".into(), s.value.clone().into());
            m.insert("confidence".into(), s.confidence.into());
            optional(&mut m, "source", &s.source);
        }
        SlotsRecord::Checklist(c) => {
            m.insert("name".into(), c.name.clone().into());
            optional(&mut m, "description", &c.description);
            let specs = c
                .slots
                .iter()
                .map(|s| {
                    let mut spec = serde_json::json!({
                        "name": s.name, "expect_labels": s.expect_labels,
                        "relation": s.relation.as_str(), "required": s.required,
                        "cardinality": s.cardinality.as_str(),
                    });
                    // The default cost is left out, so checklists written before costs
                    // existed keep their canonical form.
                    if s.cost != 1.0 {
                        spec["cost"] = s.cost.into();
                    }
                    spec
                })
                .collect();
            m.insert("slots".into(), Value::Array(specs));
        }
        SlotsRecord::Goal(g) => {
            m.insert("name".into(), g.name.clone().into());
            m.insert("user".into(), g.user.to_json());
            optional(&mut m, "description", &g.description);
            optional(&mut m, "horizon", &g.horizon);
            if let Some(p) = g.priority {
                m.insert("priority".into(), p.into());
            }
            if !g.influences.is_empty() {
                m.insert("influences".into(), g.influences.clone().into());
            }
            if !g.prefers.is_empty() {
                let prefers = g
                    .prefers
                    .iter()
                    .map(|p| serde_json::json!({"slot": p.slot, "value": p.value}))
                    .collect();
                m.insert("prefers".into(), Value::Array(prefers));
            }
        }
    }
    Value::Object(m)
}

/// Parse a checklist file, TOML or JSON (a file whose first non-blank character is `{` is
/// JSON), into a validated `checklist` record. The file holds the record's fields: `name`,
/// `description?` and `slots` (an array of tables / objects `{name, expect_labels?, relation?,
/// required?, cardinality?, cost?}`); `record_type` may be omitted.
///
/// ```toml
/// name = "IdentifyFilm"
/// [[slots]]
/// name = "film"
/// expect_labels = ["Film"]
/// relation = "INSTANCE_OF"
/// cardinality = "ONE"
/// ```
pub fn checklist_from_file(
    schema: &Schema,
    limits: &Limits,
    text: &str,
) -> Result<super::ValidRecord, ValidationErrors> {
    let fail = |rule: &'static str, message: String, value: Option<&str>| {
        ValidationErrors::from(vec![Violation::with_text("$", value, rule, message)])
    };
    if text.len() > limits.max_record_bytes {
        return Err(fail(
            "limits.record_bytes",
            format!("a checklist file is at most {} bytes", limits.max_record_bytes),
            Some(&format!("{} bytes", text.len())),
        ));
    }
    let value: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| fail("checklist.syntax", format!("not valid JSON: {e}"), None))?
    } else {
        let table: toml::Table = toml::from_str(text)
            .map_err(|e| fail("checklist.syntax", format!("not valid TOML: {e}"), None))?;
        serde_json::to_value(table).map_err(|e| {
            fail("checklist.syntax", format!("not representable as JSON: {e}"), None)
        })?
    };
    let Value::Object(mut obj) = value else {
        return Err(fail("json.type", "a checklist file holds one object".into(), None));
    };
    // A wrong record type is one problem among others: the rest of the file is still checked
    // as a checklist, so every problem is reported at once.
    let mut wrong_type = None;
    match obj.get("record_type") {
        None => {}
        Some(Value::String(t)) if t == "checklist" => {}
        Some(other) => {
            wrong_type = Some(Violation::new(
                "$.record_type",
                Some(other),
                "envelope.record_type",
                "a checklist file holds a \"checklist\" record (or omits record_type)",
            ));
        }
    }
    obj.insert("record_type".into(), "checklist".into());
    match (super::validate_value(schema, limits, Value::Object(obj)), wrong_type) {
        (Ok(record), None) => Ok(record),
        (Ok(_), Some(v)) => Err(ValidationErrors::from(vec![v])),
        (Err(e), None) => Err(e),
        (Err(e), Some(v)) => {
            let mut all = vec![v];
            all.extend(e.violations);
            Err(ValidationErrors::from(all))
        }
    }
}

#[cfg(test)]
mod tests;
