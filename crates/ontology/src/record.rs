//! Records: the immutable units written to the log, their validation and their canonical form.
//!
//! A record is one of:
//! - an **event** (the envelope of seed 000: `event_id`, `event_type`, `occurred_at`, ids, optional
//!   parent, tool, user, status, payload and entity references); `record_type` may be omitted;
//! - an explicit **edge** (`record_type: "edge"`) between two nodes, checked against the schema's
//!   endpoint constraints;
//! - a **schema module** extension, written by `schema add`;
//! - an **entity decision** (`record_type: "entity_decision"`): a person's `merge` or `reject` of
//!   a pair of entities that entity resolution proposed (or any other pair);
//! - decision memory (`record/memory.rs`): a `memory`, a `memory_outcome`, an explicit
//!   `memory_link` and a `memory_link_vote` (seed 003).
//! - a **type**, **instance_of**, **slot**, **checklist** or **goal** record (seed 001; see
//!   `record/slots.rs` for their rules).
//! - a **fact** claim, a **fact retraction** and a source **document** (`fact.rs`, `document.rs`).
//! - a decision **receipt** (seed 004; `receipt.rs`);
//! - a **forget** record, the trace of a redaction (`forget.rs`); a redacted record's stored body
//!   is a tombstone, which only [`validate_stored`] decodes.
//! - an **access** record, a batch of reads of events that feeds salience (`access.rs`).
//!
//! Validation parses untrusted JSON and reports every violation at once. Only validation constructs
//! a [`ValidRecord`]; its canonical JSON (sorted keys, aliases resolved) is what the log stores and
//! what idempotency compares.

use serde_json::{Map, Value};

use crate::entity::{entity_id, normalize_name};
use crate::graph::{NodeKey, Properties};
use crate::limits::Limits;
use crate::schema::{Schema, SchemaError, is_event_type};
use crate::violation::{ValidationErrors, Violation};

mod memory;

pub use memory::{MemoryLinkRecord, MemoryLinkVoteRecord, MemoryOutcomeRecord, MemoryRecord};
pub(crate) mod slots;
pub use slots::SlotsRecord;
mod document;
mod fact;
mod scope;

pub use scope::{AUDIENCE_KINDS, Scope};
mod access;
mod forget;
mod receipt;
mod strict;
pub use strict::scan as strict_json;

pub use access::{AccessEntry, AccessRecord, MAX_ACCESS_COUNT, MAX_ACCESS_EVENTS};

pub use receipt::{
    MAX_RECEIPT_ITEMS, MAX_RECEIPT_TEXT_BYTES, PolicyCheck, ReceiptException, ReceiptInputs,
    ReceiptOutcome, ReceiptRecord,
};

pub use forget::{
    EntityUse, ForgetKind, ForgetRecord, MAX_REASON_BYTES, Tombstone, entity_digest, entity_use,
    redacted_id,
};

pub use document::{
    DocumentMention, DocumentRecord, MAX_URL_BYTES, content_hash, document_id, part_id,
};
pub use fact::{
    DEFAULT_CONFIDENCE, FactObject, FactRecord, FactRetractionRecord, ResolvedEntity,
    canonical_predicate, fact_id, normalize_time,
};

/// Kinds of record, as stored in the log's `kind` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKind {
    /// An agent event.
    Event,
    /// An explicit edge.
    Edge,
    /// A schema extension module.
    Schema,
    /// A person's decision on a pair of entities.
    EntityDecision,
    /// A saved memory (decision, checkpoint, insight, context).
    Memory,
    /// The outcome of a memory.
    MemoryOutcome,
    /// An explicit link between two memories.
    MemoryLink,
    /// A person's delete or down-vote of a memory link.
    MemoryLinkVote,
    /// A declared Type.
    Type,
    /// An entity's INSTANCE_OF a Type.
    InstanceOf,
    /// An observation of an entity's slot value.
    Slot,
    /// A checklist with its slot specs.
    Checklist,
    /// A user's goal.
    Goal,
    /// A claim about an entity (a fact).
    Fact,
    /// The retraction of a fact.
    FactRetraction,
    /// A source document version.
    Document,
    /// The trace of a redaction.
    Forget,
    /// A decision receipt.
    Receipt,
    /// A batch of reads of events.
    Access,
}

impl RecordKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordKind::Event => "event",
            RecordKind::Edge => "edge",
            RecordKind::Schema => "schema",
            RecordKind::EntityDecision => "entity_decision",
            RecordKind::Memory => "memory",
            RecordKind::MemoryOutcome => "memory_outcome",
            RecordKind::MemoryLink => "memory_link",
            RecordKind::MemoryLinkVote => "memory_link_vote",
            RecordKind::Type => "type",
            RecordKind::InstanceOf => "instance_of",
            RecordKind::Slot => "slot",
            RecordKind::Checklist => "checklist",
            RecordKind::Goal => "goal",
            RecordKind::Fact => "fact",
            RecordKind::FactRetraction => "fact_retraction",
            RecordKind::Document => "document",
            RecordKind::Forget => "forget",
            RecordKind::Receipt => "receipt",
            RecordKind::Access => "access",
        }
    }

    /// Parse a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "event" => Some(RecordKind::Event),
            "edge" => Some(RecordKind::Edge),
            "schema" => Some(RecordKind::Schema),
            "entity_decision" => Some(RecordKind::EntityDecision),
            "memory" => Some(RecordKind::Memory),
            "memory_outcome" => Some(RecordKind::MemoryOutcome),
            "memory_link" => Some(RecordKind::MemoryLink),
            "memory_link_vote" => Some(RecordKind::MemoryLinkVote),
            "type" => Some(RecordKind::Type),
            "instance_of" => Some(RecordKind::InstanceOf),
            "slot" => Some(RecordKind::Slot),
            "checklist" => Some(RecordKind::Checklist),
            "goal" => Some(RecordKind::Goal),
            "fact" => Some(RecordKind::Fact),
            "fact_retraction" => Some(RecordKind::FactRetraction),
            "document" => Some(RecordKind::Document),
            "forget" => Some(RecordKind::Forget),
            "receipt" => Some(RecordKind::Receipt),
            "access" => Some(RecordKind::Access),
            _ => None,
        }
    }
}

/// An entity named by an event, with its type and role (roles stored under their new names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityRef {
    /// The name as written.
    pub name: String,
    /// One of the schema's `entity_type` values.
    pub entity_type: String,
    /// One of the schema's `role` values.
    pub role: String,
}

impl EntityRef {
    /// The deterministic id of the entity this reference resolves to (exact-match tier).
    pub fn entity_id(&self) -> String {
        entity_id(&self.entity_type, &self.name)
    }
}

/// A validated event envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// Unique id.
    pub event_id: String,
    /// Dot-namespaced type.
    pub event_type: String,
    /// RFC 3339 timestamp, as written.
    pub occurred_at: String,
    /// `occurred_at` as nanoseconds since the Unix epoch (UTC), for ordering.
    pub occurred_at_ns: i64,
    /// Session.
    pub session_id: String,
    /// Acting agent.
    pub agent_id: String,
    /// Trace.
    pub trace_id: String,
    /// Causal parent.
    pub parent_event_id: Option<String>,
    /// Tool used.
    pub tool_name: Option<String>,
    /// Human user involved.
    pub user_id: Option<String>,
    /// Action status.
    pub status: Option<String>,
    /// Free-form payload object.
    pub payload: Map<String, Value>,
    /// Entity references.
    pub entities: Vec<EntityRef>,
    /// Who it is for and its PII state.
    pub scope: Scope,
}

/// A validated explicit edge.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeRecord {
    /// Unique id of the edge record.
    pub edge_id: String,
    /// Declared, non-derived edge type.
    pub edge_type: String,
    /// Source node.
    pub from: NodeKey,
    /// Target node.
    pub to: NodeKey,
    /// Properties, aliases resolved.
    pub props: Properties,
}

/// A schema extension module as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaRecord {
    /// Module name.
    pub module: String,
    /// The TOML text, verbatim.
    pub source: String,
}

/// What a person decided about a pair of entities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityDecision {
    /// The two entities are the same thing.
    Merge,
    /// The two entities are different things: never propose the pair again.
    Reject,
}

impl EntityDecision {
    /// The name written in records: `merge` or `reject`.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityDecision::Merge => "merge",
            EntityDecision::Reject => "reject",
        }
    }

    /// Parse a record's `decision`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "merge" => Some(EntityDecision::Merge),
            "reject" => Some(EntityDecision::Reject),
            _ => None,
        }
    }
}

/// A validated entity decision.
///
/// The pair is unordered: `entity_a` is the id that sorts first, so `merge A B` and `merge B A`
/// are the same record. The record id is derived from the decision, the pair and `supersedes`,
/// which makes a repeated write a duplicate while a later change of mind (a new `supersedes`) is
/// a new record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityDecisionRecord {
    /// Derived id, unique within the kind.
    pub decision_id: String,
    /// Merge or reject.
    pub decision: EntityDecision,
    /// The entity id that sorts first.
    pub entity_a: String,
    /// The other entity id.
    pub entity_b: String,
    /// Why, in words.
    pub reason: Option<String>,
    /// Who decided.
    pub decided_by: Option<String>,
    /// Log position of the earlier decision on the pair that this one replaces, as the writer saw
    /// it. It only makes the id distinct: the latest decision in log order wins regardless.
    pub supersedes: Option<u64>,
}

/// What a record says.
#[derive(Debug, Clone, PartialEq)]
pub enum RecordBody {
    /// An event.
    Event(EventRecord),
    /// An explicit edge.
    Edge(EdgeRecord),
    /// A schema module.
    Schema(SchemaRecord),
    /// A decision on a pair of entities.
    EntityDecision(EntityDecisionRecord),
    /// A saved memory.
    Memory(MemoryRecord),
    /// The outcome of a memory.
    MemoryOutcome(MemoryOutcomeRecord),
    /// An explicit memory link.
    MemoryLink(MemoryLinkRecord),
    /// A vote on a memory link.
    MemoryLinkVote(MemoryLinkVoteRecord),
    /// A type, instance_of, slot, checklist or goal record.
    Slots(SlotsRecord),
    /// A claim.
    Fact(FactRecord),
    /// A fact's retraction.
    FactRetraction(FactRetractionRecord),
    /// A source document version.
    Document(DocumentRecord),
    /// The trace of a redaction.
    Forget(ForgetRecord),
    /// A stored record that a forget redacted: only its kind and id remain.
    Redacted(Tombstone),
    /// A decision receipt.
    Receipt(ReceiptRecord),
    /// A batch of reads of events.
    Access(AccessRecord),
}

/// A record that passed validation. Only this module constructs one.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidRecord {
    body: RecordBody,
    canonical: String,
}

impl ValidRecord {
    /// What the record says.
    pub fn body(&self) -> &RecordBody {
        &self.body
    }

    /// The kind.
    pub fn kind(&self) -> RecordKind {
        match &self.body {
            RecordBody::Event(_) => RecordKind::Event,
            RecordBody::Edge(_) => RecordKind::Edge,
            RecordBody::Schema(_) => RecordKind::Schema,
            RecordBody::EntityDecision(_) => RecordKind::EntityDecision,
            RecordBody::Memory(_) => RecordKind::Memory,
            RecordBody::MemoryOutcome(_) => RecordKind::MemoryOutcome,
            RecordBody::MemoryLink(_) => RecordKind::MemoryLink,
            RecordBody::MemoryLinkVote(_) => RecordKind::MemoryLinkVote,
            RecordBody::Slots(s) => match s {
                SlotsRecord::Type(_) => RecordKind::Type,
                SlotsRecord::InstanceOf(_) => RecordKind::InstanceOf,
                SlotsRecord::Slot(_) => RecordKind::Slot,
                SlotsRecord::Checklist(_) => RecordKind::Checklist,
                SlotsRecord::Goal(_) => RecordKind::Goal,
            },
            RecordBody::Fact(_) => RecordKind::Fact,
            RecordBody::FactRetraction(_) => RecordKind::FactRetraction,
            RecordBody::Document(_) => RecordKind::Document,
            RecordBody::Forget(_) => RecordKind::Forget,
            RecordBody::Redacted(t) => t.kind,
            RecordBody::Receipt(_) => RecordKind::Receipt,
            RecordBody::Access(_) => RecordKind::Access,
        }
    }

    /// The id, unique within the kind: event id, edge id, module name or derived decision id.
    pub fn id(&self) -> &str {
        match &self.body {
            RecordBody::Event(e) => &e.event_id,
            RecordBody::Edge(e) => &e.edge_id,
            RecordBody::Schema(s) => &s.module,
            RecordBody::EntityDecision(d) => &d.decision_id,
            RecordBody::Memory(m) => &m.memory_id,
            RecordBody::MemoryOutcome(o) => &o.outcome_id,
            RecordBody::MemoryLink(l) => &l.link_id,
            RecordBody::MemoryLinkVote(v) => &v.vote_id,
            RecordBody::Slots(s) => s.id(),
            RecordBody::Fact(f) => &f.claim_id,
            RecordBody::FactRetraction(r) => &r.retraction_id,
            RecordBody::Document(d) => &d.document_id,
            RecordBody::Forget(f) => &f.forget_id,
            RecordBody::Redacted(t) => &t.id,
            RecordBody::Receipt(r) => &r.receipt_id,
            RecordBody::Access(a) => &a.access_id,
        }
    }

    /// Canonical JSON: sorted keys, aliases resolved. Stored in the log and compared for idempotency.
    pub fn canonical(&self) -> &str {
        &self.canonical
    }

    /// Validate a schema extension against `schema` and wrap it as a record.
    pub fn schema_module(
        schema: &Schema,
        source: &str,
    ) -> Result<(ValidRecord, Schema), SchemaError> {
        let extended = schema.extend(source)?;
        let module = extended.modules().last().cloned().unwrap_or_default();
        let canonical = serde_json::json!({
            "record_type": "schema", "module": module, "source": source,
        })
        .to_string();
        let record = ValidRecord {
            body: RecordBody::Schema(SchemaRecord { module, source: source.to_owned() }),
            canonical,
        };
        Ok((record, extended))
    }
}

/// Validate one untrusted JSON record against the schema and limits, reporting every violation.
pub fn validate(
    schema: &Schema,
    limits: &Limits,
    text: &str,
) -> Result<ValidRecord, ValidationErrors> {
    if text.len() > limits.max_record_bytes {
        return Err(vec![Violation::with_text(
            "$",
            Some(&format!("{} bytes", text.len())),
            "limits.record_bytes",
            format!("record exceeds the limit of {} bytes", limits.max_record_bytes),
        )]
        .into());
    }
    let value = parse_json(text)?;
    // What the parser forgave (a repeated key, an integer turned into a float) is refused here,
    // where the text is still at hand.
    let forgiven = strict::scan(text);
    if !forgiven.is_empty() {
        return Err(forgiven.into());
    }
    validate_value(schema, limits, value)
}

/// Parse JSON text, or refuse it as `json.syntax` at `$`.
fn parse_json(text: &str) -> Result<Value, ValidationErrors> {
    serde_json::from_str(text).map_err(|e| {
        ValidationErrors::from(vec![Violation::with_text(
            "$",
            Some(text),
            "json.syntax",
            format!("not valid JSON: {e}"),
        )])
    })
}

/// Decode a body read back from the log: a tombstone (a record a forget redacted) or a record,
/// validated against `schema` without size limits (stored records were checked on the way in).
///
/// Writers go through [`validate`], which refuses tombstones: only a redaction writes one.
pub fn validate_stored(schema: &Schema, text: &str) -> Result<ValidRecord, ValidationErrors> {
    if let Some(tombstone) = Tombstone::parse(text) {
        let canonical = tombstone.to_json();
        return Ok(ValidRecord { body: RecordBody::Redacted(tombstone), canonical });
    }
    // The log holds canonical JSON written by this code: the text is its own canonical form
    // (encoding it again cost a third of a decode) and has nothing for the strict scan to find.
    let value = parse_json(text)?;
    validate_record(schema, &Limits::unlimited(), value, Some(text))
}

/// Validate an already-parsed JSON record.
pub fn validate_value(
    schema: &Schema,
    limits: &Limits,
    value: Value,
) -> Result<ValidRecord, ValidationErrors> {
    validate_record(schema, limits, value, None)
}

/// [`validate_value`], taking `canonical` as the record's canonical JSON when given (a body
/// read back from the log) instead of encoding it.
fn validate_record(
    schema: &Schema,
    limits: &Limits,
    value: Value,
    canonical: Option<&str>,
) -> Result<ValidRecord, ValidationErrors> {
    let Value::Object(obj) = value else {
        return Err(vec![Violation::new(
            "$",
            Some(&value),
            "json.type",
            "a record must be a JSON object",
        )]
        .into());
    };
    let mut v = Validator { schema, limits, out: Vec::new() };
    let body = match obj.get("record_type") {
        None => v.event(&obj).map(RecordBody::Event),
        Some(Value::String(t)) if t == "event" => v.event(&obj).map(RecordBody::Event),
        Some(Value::String(t)) if t == "edge" => v.edge(&obj).map(RecordBody::Edge),
        Some(Value::String(t)) if t == "entity_decision" => {
            v.entity_decision(&obj).map(RecordBody::EntityDecision)
        }
        Some(Value::String(t)) if t == "memory" => v.memory(&obj).map(RecordBody::Memory),
        Some(Value::String(t)) if t == "memory_outcome" => {
            v.memory_outcome(&obj).map(RecordBody::MemoryOutcome)
        }
        Some(Value::String(t)) if t == "memory_link" => {
            v.memory_link(&obj).map(RecordBody::MemoryLink)
        }
        Some(Value::String(t)) if t == "memory_link_vote" => {
            v.memory_link_vote(&obj).map(RecordBody::MemoryLinkVote)
        }
        Some(Value::String(t)) if slots::SLOTS_RECORD_TYPES.contains(&t.as_str()) => {
            v.slots_record(t, &obj).map(RecordBody::Slots)
        }
        Some(Value::String(t)) if t == "fact" => v.fact(&obj).map(RecordBody::Fact),
        Some(Value::String(t)) if t == "fact_retraction" => {
            v.fact_retraction(&obj).map(RecordBody::FactRetraction)
        }
        Some(Value::String(t)) if t == "document" => v.document(&obj).map(RecordBody::Document),
        Some(Value::String(t)) if t == "forget" => v.forget(&obj).map(RecordBody::Forget),
        Some(Value::String(t)) if t == "receipt" => v.receipt(&obj).map(RecordBody::Receipt),
        Some(Value::String(t)) if t == "access" => v.access(&obj).map(RecordBody::Access),
        Some(Value::String(t)) if t == "schema" => {
            v.unknown_fields(&obj, SCHEMA_FIELDS, "$");
            let module = v.string(&obj, "module", "$.module", true).map(str::to_owned);
            let source = v.string(&obj, "source", "$.source", true).map(str::to_owned);
            let (Some(module), Some(source)) = (module, source) else { return Err(v.out.into()) };
            if !v.out.is_empty() {
                return Err(v.out.into());
            }
            return match ValidRecord::schema_module(schema, &source) {
                Ok((record, _)) if record.id() == module => Ok(record),
                Ok((record, _)) => Err(vec![Violation::with_text(
                    "$.module",
                    Some(&module),
                    "envelope.module_mismatch",
                    format!("must equal the module named in source, `{}`", record.id()),
                )]
                .into()),
                Err(e) => {
                    Err(vec![Violation::with_text("$.source", None, e.code(), e.to_string())]
                        .into())
                }
            };
        }
        Some(other) => {
            v.out.push(Violation::new(
                "$.record_type",
                Some(other),
                "envelope.record_type",
                "must be \"event\" (the default), \"edge\", \"schema\", \"entity_decision\", \"memory\", \"memory_outcome\", \"memory_link\", \"memory_link_vote\", \"type\", \"instance_of\", \"slot\", \"checklist\", \"goal\", \"fact\", \"fact_retraction\", \"document\", \"forget\", \"receipt\" or \"access\"",
            ));
            None
        }
    };
    match body {
        Some(body) if v.out.is_empty() => {
            let canonical = canonical.map_or_else(|| canonical_json(&body), str::to_owned);
            Ok(ValidRecord { body, canonical })
        }
        _ => Err(v.out.into()),
    }
}

const EVENT_FIELDS: &[&str] = &[
    "record_type",
    "event_id",
    "event_type",
    "occurred_at",
    "session_id",
    "agent_id",
    "trace_id",
    "parent_event_id",
    "tool_name",
    "user_id",
    "status",
    "payload",
    "entities",
    "scope",
    "pii",
];
const ENTITY_FIELDS: &[&str] = &["name", "entity_type", "role"];
const EDGE_FIELDS: &[&str] = &["record_type", "edge_id", "edge_type", "from", "to", "properties"];
const ENDPOINT_FIELDS: &[&str] = &["label", "id"];
const SCHEMA_FIELDS: &[&str] = &["record_type", "module", "source"];
const DECISION_FIELDS: &[&str] =
    &["record_type", "decision", "entity_a", "entity_b", "reason", "decided_by", "supersedes"];

/// Edge types written by entity resolution, and their properties only ctxgraph sets: `inferred`
/// marks what resolution derived (and deletes on its next run), `decision` what a person decided
/// through an entity_decision record.
const RESOLUTION_EDGES: &[&str] = &["SAME_AS", "RELATED_TO"];
const RESOLUTION_PROPERTIES: &[&str] = &["decision", "inferred"];

/// Role given to an entity reference that names none: "other involved entity".
pub const DEFAULT_ROLE: &str = "participant";

struct Validator<'a> {
    schema: &'a Schema,
    limits: &'a Limits,
    out: Vec<Violation>,
}

impl Validator<'_> {
    /// A required RFC 3339 timestamp with an offset, within the nanosecond range: its text and
    /// nanoseconds since the epoch.
    pub(super) fn timestamp(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        path: &str,
    ) -> Option<(String, i64)> {
        let t = self.string(obj, field, path, true)?;
        match chrono::DateTime::parse_from_rfc3339(t) {
            Ok(dt) => match dt.timestamp_nanos_opt() {
                Some(ns) => Some((t.to_owned(), ns)),
                None => {
                    self.out.push(Violation::for_str(
                        path,
                        t,
                        "envelope.timestamp_range",
                        "must lie between the years 1677 and 2262",
                    ));
                    None
                }
            },
            Err(e) => {
                self.out.push(Violation::for_str(
                    path,
                    t,
                    "envelope.timestamp_format",
                    format!(
                        "must be an RFC 3339 timestamp with an offset, e.g. 2026-11-20T09:15:02Z ({e})"
                    ),
                ));
                None
            }
        }
    }

    /// A `confidence` in [0, 1], `1.0` when absent ([`DEFAULT_CONFIDENCE`]); anything else (out
    /// of range, not a number) is refused under `rule`.
    pub(super) fn confidence(
        &mut self,
        obj: &Map<String, Value>,
        rule: &'static str,
    ) -> Option<f64> {
        match obj.get("confidence") {
            None | Some(Value::Null) => Some(DEFAULT_CONFIDENCE),
            Some(value) => match value.as_f64() {
                Some(c) if (0.0..=1.0).contains(&c) => Some(c),
                _ => {
                    self.out.push(Violation::new(
                        "$.confidence",
                        Some(value),
                        rule,
                        "must be a number from 0.0 to 1.0",
                    ));
                    None
                }
            },
        }
    }

    /// A name or label: trimmed, 1 to `max_name_bytes` bytes, no control characters; otherwise
    /// a violation of `rule` at `path` whose message starts with `subject` ("entity names are").
    fn name_text(
        &mut self,
        raw: &str,
        path: &str,
        rule: &'static str,
        subject: &str,
    ) -> Option<String> {
        let trimmed = raw.trim();
        if trimmed.is_empty()
            || trimmed.len() > self.limits.max_name_bytes
            || trimmed.chars().any(char::is_control)
        {
            self.out.push(Violation::for_str(
                path,
                raw,
                rule,
                format!(
                    "{subject} 1 to {} bytes of text without control characters",
                    self.limits.max_name_bytes
                ),
            ));
            return None;
        }
        Some(trimmed.to_owned())
    }

    fn unknown_fields(&mut self, obj: &Map<String, Value>, allowed: &[&str], prefix: &str) {
        for (k, val) in obj {
            if !allowed.contains(&k.as_str()) {
                self.out.push(Violation::new(
                    format!("{prefix}.{k}"),
                    Some(val),
                    "envelope.unknown_field",
                    format!("unknown field; allowed: {}", allowed.join(", ")),
                ));
            }
        }
    }

    fn string<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        field: &str,
        path: &str,
        required: bool,
    ) -> Option<&'v str> {
        match obj.get(field) {
            None | Some(Value::Null) => {
                if required {
                    self.out.push(Violation::new(
                        path,
                        None,
                        "envelope.required_field",
                        "required field is missing",
                    ));
                }
                None
            }
            Some(Value::String(s)) => Some(s),
            Some(other) => {
                self.out.push(Violation::new(
                    path,
                    Some(other),
                    "envelope.type",
                    "must be a string",
                ));
                None
            }
        }
    }

    fn id(
        &mut self,
        obj: &Map<String, Value>,
        field: &str,
        path: &str,
        required: bool,
    ) -> Option<String> {
        let s = self.string(obj, field, path, required)?;
        let ok = !s.is_empty()
            && s.len() <= self.limits.max_id_bytes
            && !s.chars().any(|c| c.is_whitespace() || c.is_control());
        if ok {
            Some(s.to_owned())
        } else {
            self.out.push(Violation::for_str(
                path,
                s,
                "envelope.id_format",
                format!(
                    "ids are 1 to {} bytes with no whitespace or control characters",
                    self.limits.max_id_bytes
                ),
            ));
            None
        }
    }

    fn enum_value(&mut self, enum_name: &str, raw: &str, path: &str) -> Option<String> {
        let e = self.schema.enum_def(enum_name)?;
        if let Some(c) = e.canonical(raw) {
            return Some(c.to_owned());
        }
        let values = e.values.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ");
        self.out.push(Violation::for_str(
            path,
            raw,
            "schema.enum",
            format!("must be one of {values} (enum {enum_name})"),
        ));
        None
    }

    fn event(&mut self, obj: &Map<String, Value>) -> Option<EventRecord> {
        self.unknown_fields(obj, EVENT_FIELDS, "$");
        let event_id = self.id(obj, "event_id", "$.event_id", true);
        let event_type = self.string(obj, "event_type", "$.event_type", true).and_then(|t| {
            if is_event_type(t) {
                Some(t.to_owned())
            } else {
                self.out.push(Violation::for_str("$.event_type", t, "envelope.event_type_format",
                    "must be dot-namespaced lower_snake_case segments, e.g. tool.execute; the first segment is the category"));
                None
            }
        });
        let occurred = self.timestamp(obj, "occurred_at", "$.occurred_at");
        let session_id = self.id(obj, "session_id", "$.session_id", true);
        let agent_id = self.id(obj, "agent_id", "$.agent_id", true);
        let trace_id = self.id(obj, "trace_id", "$.trace_id", true);
        let parent_event_id = self.id(obj, "parent_event_id", "$.parent_event_id", false);
        let tool_name = self.id(obj, "tool_name", "$.tool_name", false);
        let user_id = self.id(obj, "user_id", "$.user_id", false);
        let status = self
            .string(obj, "status", "$.status", false)
            .and_then(|s| self.enum_value("status", s, "$.status"));
        let payload = match obj.get("payload") {
            None | Some(Value::Null) => Some(Map::new()),
            Some(Value::Object(m)) => {
                let depth = depth(&Value::Object(m.clone()));
                if depth > self.limits.max_payload_depth {
                    self.out.push(Violation::with_text(
                        "$.payload",
                        Some(&format!("depth {depth}")),
                        "limits.payload_depth",
                        format!(
                            "payload nesting exceeds the limit of {}",
                            self.limits.max_payload_depth
                        ),
                    ));
                }
                Some(m.clone())
            }
            Some(other) => {
                self.out.push(Violation::new(
                    "$.payload",
                    Some(other),
                    "envelope.type",
                    "must be a JSON object",
                ));
                None
            }
        };
        if parent_event_id.is_some() && parent_event_id == event_id {
            self.out.push(Violation::new(
                "$.parent_event_id",
                obj.get("parent_event_id"),
                "envelope.self_parent",
                "an event cannot be its own parent",
            ));
        }
        let entities = self.entities(obj.get("entities"));
        let scope = self.scope(obj);
        Some(EventRecord {
            event_id: event_id?,
            event_type: event_type?,
            occurred_at: occurred.as_ref()?.0.clone(),
            occurred_at_ns: occurred?.1,
            session_id: session_id?,
            agent_id: agent_id?,
            trace_id: trace_id?,
            parent_event_id,
            tool_name,
            user_id,
            status,
            payload: payload?,
            entities: entities?,
            scope: scope?,
        })
    }

    fn entities(&mut self, value: Option<&Value>) -> Option<Vec<EntityRef>> {
        let items = match value {
            None | Some(Value::Null) => return Some(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.out.push(Violation::new(
                    "$.entities",
                    Some(other),
                    "envelope.type",
                    "must be an array of {name, entity_type, role}",
                ));
                return None;
            }
        };
        if items.len() > self.limits.max_entities {
            self.out.push(Violation::with_text(
                "$.entities",
                Some(&format!("{} items", items.len())),
                "limits.entities",
                format!("at most {} entity references per event", self.limits.max_entities),
            ));
            return None;
        }
        let before = self.out.len();
        let mut refs = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let path = format!("$.entities[{i}]");
            let Value::Object(o) = item else {
                self.out.push(Violation::new(
                    path,
                    Some(item),
                    "envelope.type",
                    "must be an object {name, entity_type, role}",
                ));
                continue;
            };
            self.unknown_fields(o, ENTITY_FIELDS, &path);
            let name_path = format!("{path}.name");
            let name = self.string(o, "name", &name_path, true).and_then(|n| {
                self.name_text(n, &name_path, "envelope.name_format", "entity names are")
            });
            let entity_type = self
                .string(o, "entity_type", &format!("{path}.entity_type"), true)
                .and_then(|t| self.enum_value("entity_type", t, &format!("{path}.entity_type")));
            let role = match self.string(o, "role", &format!("{path}.role"), false) {
                Some(r) => self.enum_value("role", r, &format!("{path}.role")),
                None => Some(DEFAULT_ROLE.to_owned()),
            };
            if let (Some(name), Some(entity_type), Some(role)) = (name, entity_type, role) {
                refs.push(EntityRef { name, entity_type, role });
            }
        }
        (self.out.len() == before).then_some(refs)
    }

    fn endpoint(&mut self, obj: &Map<String, Value>, field: &str) -> Option<NodeKey> {
        let path = format!("$.{field}");
        let Some(value) = obj.get(field) else {
            self.out.push(Violation::new(
                path,
                None,
                "envelope.required_field",
                "required field is missing",
            ));
            return None;
        };
        let Value::Object(o) = value else {
            self.out.push(Violation::new(
                path,
                Some(value),
                "envelope.type",
                "must be an object {label, id}",
            ));
            return None;
        };
        self.unknown_fields(o, ENDPOINT_FIELDS, &path);
        let label = self.string(o, "label", &format!("{path}.label"), true).and_then(|l| {
            if self.schema.node_type(l).is_some() {
                Some(l.to_owned())
            } else {
                let declared =
                    self.schema.node_types().keys().cloned().collect::<Vec<_>>().join(", ");
                self.out.push(Violation::for_str(
                    format!("{path}.label"),
                    l,
                    "schema.unknown_node_type",
                    format!("node type is not declared; declared: {declared}"),
                ));
                None
            }
        });
        let id = self.id(o, "id", &format!("{path}.id"), true);
        Some(NodeKey { label: label?, id: id? })
    }

    fn edge(&mut self, obj: &Map<String, Value>) -> Option<EdgeRecord> {
        self.unknown_fields(obj, EDGE_FIELDS, "$");
        let edge_id = self.id(obj, "edge_id", "$.edge_id", true);
        let edge_type = self.string(obj, "edge_type", "$.edge_type", true).and_then(|t| match self
            .schema
            .edge_type(t)
        {
            None => {
                let declared =
                    self.schema.edge_types().keys().cloned().collect::<Vec<_>>().join(", ");
                self.out.push(Violation::for_str(
                    "$.edge_type",
                    t,
                    "schema.unknown_edge_type",
                    format!("edge type is not declared; declared: {declared}"),
                ));
                None
            }
            Some(et) if et.derived => {
                self.out.push(Violation::for_str(
                    "$.edge_type",
                    t,
                    "schema.derived_edge",
                    "this edge type is derived by the projection and cannot be written",
                ));
                None
            }
            Some(_) => Some(t.to_owned()),
        });
        let from = self.endpoint(obj, "from");
        let to = self.endpoint(obj, "to");
        let mut props = match obj.get("properties") {
            None | Some(Value::Null) => Properties::new(),
            Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(other) => {
                self.out.push(Violation::new(
                    "$.properties",
                    Some(other),
                    "envelope.type",
                    "must be a JSON object",
                ));
                return None;
            }
        };
        let edge_type = edge_type?;
        let et = self.schema.edge_type(&edge_type)?;
        if let (Some(from), Some(to)) = (&from, &to)
            && let Some(mut v) = self.schema.check_endpoints(&edge_type, from, to)
        {
            v.path = "$.to.label".into();
            v.value = Some(format!("{} -> {}", from.label, to.label));
            self.out.push(v);
        }
        // Aliases are accepted on input and stored under the canonical value.
        for (name, def) in &et.properties {
            if let (Some(enum_name), Some(Value::String(raw))) = (&def.enum_name, props.get(name))
                && let Some(c) = self.schema.enum_def(enum_name).and_then(|e| e.canonical(raw))
            {
                let c = c.to_owned();
                props.insert(name.clone(), Value::String(c));
            }
        }
        self.out.extend(self.schema.check_properties(&et.properties, &props, "$.properties."));
        if RESOLUTION_EDGES.contains(&edge_type.as_str()) {
            for name in RESOLUTION_PROPERTIES {
                if let Some(value) = props.get(*name) {
                    self.out.push(Violation::new(
                        format!("$.properties.{name}"),
                        Some(value),
                        "schema.reserved_property",
                        "set by entity resolution only; write an entity_decision record to decide a pair",
                    ));
                }
            }
        }
        Some(EdgeRecord { edge_id: edge_id?, edge_type, from: from?, to: to?, props })
    }

    /// An entity id as the projection writes it: `{entity_type}:{normalised name}`.
    fn entity_key(&mut self, obj: &Map<String, Value>, field: &str) -> Option<String> {
        let path = format!("$.{field}");
        let id = self.string(obj, field, &path, true)?.to_owned();
        self.entity_key_at(&id, &path)
    }

    /// Check that `id` is an entity id as the projection writes it (see [`Self::entity_key`]).
    fn entity_key_at(&mut self, id: &str, path: &str) -> Option<String> {
        let path = path.to_owned();
        let Some(ty) = self.schema.entity_type_of(id) else {
            let types =
                self.schema.enum_def("entity_type").map(|e| e.values.as_slice()).unwrap_or(&[]);
            let names = types.iter().map(|v| v.name.as_str()).collect::<Vec<_>>().join(", ");
            self.out.push(Violation::for_str(
                path,
                id,
                "envelope.entity_id_format",
                format!(
                    "entity ids are `{{entity_type}}:{{normalised name}}`, e.g. tool:read_file; entity types: {names}"
                ),
            ));
            return None;
        };
        let name = &id[ty.len() + 1..];
        if name.is_empty()
            || name.len() > self.limits.max_name_bytes
            || name.contains(char::is_control)
        {
            self.out.push(Violation::for_str(
                path,
                id,
                "envelope.entity_id_format",
                format!(
                    "the name after `{ty}:` is 1 to {} bytes of text without control characters",
                    self.limits.max_name_bytes
                ),
            ));
            return None;
        }
        let normal = normalize_name(name);
        if normal != name {
            self.out.push(Violation::for_str(
                path,
                id,
                "envelope.entity_id_format",
                format!(
                    "the name must be normalised (NFKC, lower case, single spaces), as in `{}`",
                    entity_id(ty, name)
                ),
            ));
            return None;
        }
        Some(id.to_owned())
    }

    fn entity_decision(&mut self, obj: &Map<String, Value>) -> Option<EntityDecisionRecord> {
        self.unknown_fields(obj, DECISION_FIELDS, "$");
        let decision = self.string(obj, "decision", "$.decision", true).and_then(|d| {
            let parsed = EntityDecision::parse(d);
            if parsed.is_none() {
                self.out.push(Violation::for_str(
                    "$.decision",
                    d,
                    "envelope.decision",
                    "must be \"merge\" or \"reject\"",
                ));
            }
            parsed
        });
        let a = self.entity_key(obj, "entity_a");
        let b = self.entity_key(obj, "entity_b");
        if let (Some(a), Some(b)) = (&a, &b)
            && a == b
        {
            self.out.push(Violation::for_str(
                "$.entity_b",
                b,
                "envelope.same_entity",
                "a decision is about two different entities",
            ));
        }
        let reason = self.string(obj, "reason", "$.reason", false).map(str::to_owned);
        let decided_by = self.id(obj, "decided_by", "$.decided_by", false);
        let supersedes = match obj.get("supersedes") {
            None | Some(Value::Null) => None,
            Some(value) => match value.as_u64() {
                Some(p) if p >= 1 => Some(p),
                _ => {
                    self.out.push(Violation::new(
                        "$.supersedes",
                        Some(value),
                        "envelope.type",
                        "must be a log position (an integer from 1) of the decision this one replaces",
                    ));
                    None
                }
            },
        };
        let (decision, a, b) = (decision?, a?, b?);
        let (entity_a, entity_b) = if a <= b { (a, b) } else { (b, a) };
        let decision_id = decision_id(decision, &entity_a, &entity_b, supersedes);
        Some(EntityDecisionRecord {
            decision_id,
            decision,
            entity_a,
            entity_b,
            reason,
            decided_by,
            supersedes,
        })
    }
}

/// `{decision}|{entity_a}|{entity_b}` plus `|{supersedes}` when given; `\` and `|` in the ids are
/// escaped, so two different decisions never share an id.
fn decision_id(decision: EntityDecision, a: &str, b: &str, supersedes: Option<u64>) -> String {
    let escape = |s: &str| s.replace('\\', "\\\\").replace('|', "\\|");
    let mut id = format!("{}|{}|{}", decision.as_str(), escape(a), escape(b));
    if let Some(p) = supersedes {
        id.push_str(&format!("|{p}"));
    }
    id
}

fn depth(value: &Value) -> usize {
    match value {
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 0,
    }
}

fn canonical_json(body: &RecordBody) -> String {
    let value = match body {
        RecordBody::Event(e) => {
            let mut m = Map::new();
            m.insert("record_type".into(), "event".into());
            m.insert("event_id".into(), e.event_id.clone().into());
            m.insert("event_type".into(), e.event_type.clone().into());
            m.insert("occurred_at".into(), e.occurred_at.clone().into());
            m.insert("session_id".into(), e.session_id.clone().into());
            m.insert("agent_id".into(), e.agent_id.clone().into());
            m.insert("trace_id".into(), e.trace_id.clone().into());
            for (k, v) in [
                ("parent_event_id", &e.parent_event_id),
                ("tool_name", &e.tool_name),
                ("user_id", &e.user_id),
                ("status", &e.status),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), v.clone().into());
                }
            }
            m.insert("payload".into(), Value::Object(e.payload.clone()));
            if !e.entities.is_empty() {
                let list = e
                    .entities
                    .iter()
                    .map(|r| serde_json::json!({"name": r.name, "entity_type": r.entity_type, "role": r.role}))
                    .collect();
                m.insert("entities".into(), Value::Array(list));
            }
            e.scope.write_json(&mut m);
            Value::Object(m)
        }
        RecordBody::Edge(e) => serde_json::json!({
            "record_type": "edge",
            "edge_id": e.edge_id,
            "edge_type": e.edge_type,
            "from": {"label": e.from.label, "id": e.from.id},
            "to": {"label": e.to.label, "id": e.to.id},
            "properties": e.props,
        }),
        RecordBody::Schema(s) => serde_json::json!({
            "record_type": "schema", "module": s.module, "source": s.source,
        }),
        RecordBody::EntityDecision(d) => {
            let mut m = Map::new();
            m.insert("record_type".into(), "entity_decision".into());
            m.insert("decision".into(), d.decision.as_str().into());
            m.insert("entity_a".into(), d.entity_a.clone().into());
            m.insert("entity_b".into(), d.entity_b.clone().into());
            for (k, v) in [("reason", &d.reason), ("decided_by", &d.decided_by)] {
                if let Some(v) = v {
                    m.insert(k.into(), v.clone().into());
                }
            }
            if let Some(p) = d.supersedes {
                m.insert("supersedes".into(), p.into());
            }
            Value::Object(m)
        }
        RecordBody::Memory(r) => memory::memory_json(r),
        RecordBody::MemoryOutcome(r) => memory::outcome_json(r),
        RecordBody::MemoryLink(r) => memory::link_json(r),
        RecordBody::MemoryLinkVote(r) => memory::vote_json(r),
        RecordBody::Slots(s) => slots::canonical(s),
        RecordBody::Fact(f) => fact::canonical_fact(f),
        RecordBody::FactRetraction(r) => fact::canonical_retraction(r),
        RecordBody::Document(d) => document::canonical_document(d),
        RecordBody::Forget(f) => forget::forget_json(f),
        RecordBody::Receipt(r) => receipt::receipt_json(r),
        RecordBody::Access(a) => access::access_json(a),
        RecordBody::Redacted(t) => return t.to_json(),
    };
    value.to_string()
}

#[cfg(test)]
mod tests;
