//! ctxgraph's ontology: the record envelope, the schema (modules and additive extensions) and
//! validation.
//!
//! This crate is an API boundary. It does no I/O, reads no clock and knows nothing of storage:
//! everything here is a pure function of its inputs, so the projection built on it is
//! deterministic.
//!
//! - [`Schema`] is the ontology as data: the core module (`schema/core.toml`, seed 000's
//!   PG-Schema) plus extension modules that may only add.
//! - [`validate`] turns untrusted JSON into a [`ValidRecord`] or a list of every violation, each
//!   naming the JSON path, the value and the rule.
//! - [`graph`] holds the property-graph data model the projection produces and the schema checks.

#![warn(missing_docs)]

mod digest;
mod document;
mod entity;
pub mod graph;
mod limits;
mod record;
mod schema;
mod schema_file;
mod violation;

pub use digest::sha256_hex;
pub use document::{
    ABBREVIATIONS, DocumentFormat, DocumentTree, SectionPart, split_document, split_sentences,
};
pub use entity::{entity_id, normalize_name};
pub use limits::Limits;
pub use record::slots::{
    Cardinality, ChecklistRecord, EntityTarget, GOAL_OWNER_TYPE, GoalRecord, InstanceOfRecord,
    MAX_INFLUENCES, MAX_PREFERS, MAX_SPEC_COST, MAX_SPECS, MAX_TEXT_BYTES, MAX_VALUE_BYTES,
    SLOTS_RECORD_TYPES, SlotPreference, SlotRecord, SlotSpec, SpecRelation, TypeRecord,
    checklist_from_file, joined_id,
};
pub use record::{
    AUDIENCE_KINDS, AccessEntry, AccessRecord, DEFAULT_CONFIDENCE, DEFAULT_ROLE, DocumentMention,
    DocumentRecord, EdgeRecord, EntityDecision, EntityDecisionRecord, EntityRef, EntityUse,
    EventRecord, FactObject, FactRecord, FactRetractionRecord, ForgetKind, ForgetRecord,
    MAX_ACCESS_COUNT, MAX_ACCESS_EVENTS, MAX_REASON_BYTES, MAX_RECEIPT_ITEMS,
    MAX_RECEIPT_TEXT_BYTES, MAX_URL_BYTES, MemoryLinkRecord, MemoryLinkVoteRecord,
    MemoryOutcomeRecord, MemoryRecord, PolicyCheck, ReceiptException, ReceiptInputs,
    ReceiptOutcome, ReceiptRecord, RecordBody, RecordKind, ResolvedEntity, SchemaRecord, Scope,
    SlotsRecord, Tombstone, ValidRecord, canonical_predicate, content_hash, document_id,
    entity_digest, entity_use, fact_id, normalize_time, part_id, redacted_id, strict_json,
    validate, validate_stored, validate_value,
};
pub use schema::{
    BUILTIN_MODULES, CORE_MODULE, EdgeType, EnumDef, EnumValue, EventClass, EventTypeDef,
    KNOWLEDGE_MODULE, MEMORY_MODULE, NodeType, ObjectKind, PredicateDef, PropertyDef, PropertyType,
    RECEIPTS_MODULE, SLOTS_MODULE, Schema, SchemaError, is_event_type, is_zoned_datetime,
};
pub use violation::{ValidationErrors, Violation};
