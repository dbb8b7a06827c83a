//! ctxgraph: a local-first context graph, long-term memory for AI agents.
//!
//! Agents write what happened as records; ctxgraph keeps every record in an append-only log and
//! projects the log into a typed property graph (events, entities, summaries and the edges between
//! them) that answers "what context does the agent need?" with provenance on everything.
//!
//! - [`Engine`] accepts writes: [`Engine::ingest_jsonl`], [`Engine::ingest_batch`],
//!   [`Engine::add_schema_module`], [`Engine::reproject`], [`Engine::decide_entities`].
//! - Decision memory (seed 003): [`Engine::save_memories`] and [`Engine::link_memories`] write;
//!   [`Reader::evolution`], [`Reader::impact`], [`Reader::memory_context`] and
//!   [`Reader::rollup`] read.
//! - Knowledge: [`Engine::record_fact`], [`Engine::retract_fact`] and [`Engine::add_document`]
//!   write facts and source documents; [`Reader::facts`], [`Reader::facts_about`],
//!   [`Reader::contradictions`] and [`Reader::document`] read them.
//! - Conversations become event records with [`parse_messages`] (chat messages as JSONL) or
//!   [`locomo_conversations`] (the LoCoMo benchmark's format), ingested by [`Engine::import`].
//! - Types, slots, checklists and goals (seed 001): [`Engine::declare_type`],
//!   [`Engine::add_instance`], [`Engine::set_slot`], [`Engine::define_checklist`],
//!   [`Engine::add_goal`]; [`Reader::check_checklist`] and [`Reader::next_slot`] (expected
//!   information gain, see [`information_gain`]).
//! - Decision receipts (seed 004): [`Engine::add_receipts`] writes; [`Reader::receipts`]
//!   queries by task, actor, time window and policy result.
//! - Forgetting: [`Engine::forget`] removes an event, a session or a memory from the stored
//!   data and leaves a forget record; [`Reader::forgotten`] is the audit.
//! - Access tracking: [`Engine::recall`] notes the events it returns in an [`AccessTracker`];
//!   [`Engine::flush_access`] writes them as one `access` record that feeds salience.
//! - [`Engine::reader`] gives a [`Reader`]: one consistent snapshot as one principal may see it,
//!   the only way reads leave the engine ([`Engine::owner_reader`] for the store's owner).
//!
//! ```no_run
//! use ctxgraph::{Engine, EngineOptions, OpenMode};
//! # fn main() -> Result<(), ctxgraph::Error> {
//! let mut engine = Engine::open("memory.ctxg".as_ref(), OpenMode::CreateIfMissing, EngineOptions::default())?;
//! let line = r#"{"event_id":"e1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z",
//!   "session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"failed"}"#;
//! let report = engine.ingest_jsonl(line.as_bytes(), &Default::default(), &mut |_| {})?;
//! assert_eq!(report.accepted, 1);
//! assert!(engine.owner_reader()?.event("e1")?.is_some());
//! // A principal sees only what its roles and the records' scopes allow.
//! let viewer = ctxgraph::Principal::new("viewer", "default", ["viewer".to_owned()])?;
//! assert!(engine.reader(&viewer)?.event("e1")?.is_some());
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod access;
mod access_tracker;
mod backend;
mod backup;
mod consolidate;
mod conversation;
mod delta_follow;
mod edge_cache;
mod engine;
mod enrich;
mod error;
mod forget;
mod graph_checks;
mod helper;
mod index_build;
mod indexed;
mod ingest;
mod knowledge;
mod limits;
mod memory;
mod node_cache;
mod recall;
mod receipt;
mod remote_ingest;
mod remote_write;
mod resolve;
mod retention;
mod slots;
mod text_delta;
mod text_index;
mod vector_delta;
mod vector_index;
mod view;

pub use access::{Principal, Principals};
pub use access_tracker::{AccessNote, AccessTracker, DEFAULT_ACCESS_CAPACITY, FLUSH_ACCESS_AT};
pub use consolidate::{ConsolidateOptions, ConsolidateReport};
pub use conversation::{
    Extracted, ImportBatch, LocomoConversation, LocomoError, LocomoQuestion, MAX_EXTRACTED,
    MESSAGE_EVENT_TYPE, Message, extract_entities, locomo_conversations, message_to_record,
    normalize_evidence, parse_messages,
};
pub use ctxgraph_ann::SearchParams;
pub use ctxgraph_embed::{Embedder, StaticEmbedder};
pub use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
pub use ctxgraph_ontology::{
    Cardinality, EntityDecision, EventClass, ForgetKind, Limits, RecordBody, RecordKind, Schema,
    SchemaError, SlotSpec, SlotsRecord, SpecRelation, ValidRecord, ValidationErrors, Violation,
    entity_id, normalize_name, strict_json,
};
pub use ctxgraph_ontology::{DocumentFormat, ResolvedEntity, canonical_predicate};
pub use ctxgraph_projection::{enrich_event, telling_text};
pub use ctxgraph_store::{
    FORMAT_VERSION, GraphCounts, LogEntry, OpenMode, SessionSlot, WalCopier,
    heap_used as store_heap_used, set_heap_limit as set_store_heap_limit,
};
pub use engine::{Engine, EngineOptions, IndexCaches, Projection, ReprojectReport};
pub use enrich::{EmbedderChoice, EnrichReport};
pub use error::Error;
pub use forget::{ForgetReport, ForgetTarget, ForgetTimings, Forgotten};
pub use index_build::{IndexParts, InstallReport, PreparedIndexes};
pub use indexed::{fact_object, fact_text};
pub use ingest::{IngestOptions, IngestOutcome, IngestProgress, IngestReport, Rejection};
pub use knowledge::{
    Contradiction, DocumentInput, DocumentOutcome, DocumentSummary, DocumentView,
    EXTRACTED_CONFIDENCE, EntityInput, FactEntity, FactInput, FactOutcome, FactQuery, FactView,
    MAX_EMBEDDED_CANDIDATES, MIN_NAME_COSINE, NameCandidate, ObjectInput, Resolution, SectionView,
    SentenceMention, SentenceView, format_for_path, parse_time,
};
pub use limits::{MAX_QUESTION_CHARS, MAX_QUESTION_WORDS, QuestionLimits};
pub use memory::{
    Evolution, EvolutionStep, Impact, ImpactItem, LinkReport, MemoryContext, MemoryHit,
    MemoryOptions, MemorySearchOptions, MemoryView, NextAction, OutcomeView, Rollup, RollupItem,
    RollupOptions, TraversalOptions, link_maker,
};
pub use recall::{
    ContextPack, ContextState, ContextWeights, Factors, Intent, Item, PackEdge, Provenance,
    RecallParams, RecallQuery, Step, Timings, Unknown, classify, content_words,
};
pub use receipt::{ReceiptQuery, ReceiptView, policy_filter};
pub use remote_write::REMOTE_FOLD_WAIT;
pub use resolve::{Candidate, CandidateEntity, CandidateStatus, ResolveConfig, ResolveReport};
pub use retention::{RetentionOptions, RetentionReport, Tier, TierCounts, salience};
pub use slots::{
    Action, AnswerGroup, CheckReport, Checklist, ChecklistDraft, DEFAULT_SEARCH_COST,
    EVIDENCE_PER_ANSWER, EntityArg, Goal, GoalBias, GoalDraft, NextOptions, NextReport,
    Recommendation, SearchLead, SlotFill, SlotGain, SlotSpecDraft, SpecCheck, SpecStatus, TypeInfo,
    entropy, information_gain, information_gain_with_unknown, weighted_information_gain,
};
pub use text_index::{REBUILD_AFTER as TEXT_INDEX_REBUILD_AFTER, TextIndexReport};
pub use vector_index::MAX_CACHED_UNINDEXED;
pub use view::{
    Checkpoints, EdgeGroup, LinkLookup, Neighbor, Reader, Stats, TimelineEntry, View, VisibleCounts,
};
