//! ctxgraph: a local-first context graph, long-term memory for AI agents.
//!
//! Agents write what happened as records; ctxgraph keeps every record in an append-only log and
//! projects the log into a typed property graph (events, entities, summaries and the edges between
//! them) that answers "what context does the agent need?" with provenance on everything.
//!
//! - [`Engine`] accepts writes: [`Engine::ingest_jsonl`], [`Engine::ingest_batch`],
//!   [`Engine::add_schema_module`], [`Engine::reproject`].
//! - [`Engine::snapshot`] gives a [`Snapshot`] for consistent reads.
//!
//! ```no_run
//! use ctxgraph::{Engine, EngineOptions, OpenMode};
//! # fn main() -> Result<(), ctxgraph::Error> {
//! let mut engine = Engine::open("memory.ctxg".as_ref(), OpenMode::CreateIfMissing, EngineOptions::default())?;
//! let line = r#"{"event_id":"e1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z",
//!   "session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"failed"}"#;
//! let report = engine.ingest_jsonl(line.as_bytes(), &Default::default(), &mut |_| {})?;
//! assert_eq!(report.accepted, 1);
//! let snapshot = engine.snapshot()?;
//! assert!(snapshot.event("e1")?.is_some());
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

mod consolidate;
mod engine;
mod enrich;
mod error;
mod ingest;
mod snapshot;

pub use consolidate::ConsolidateReport;
pub use ctxgraph_embed::{Embedder, StaticEmbedder};
pub use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
pub use ctxgraph_ontology::{
    EventClass, Limits, RecordBody, RecordKind, Schema, SchemaError, ValidRecord, ValidationErrors,
    Violation,
};
pub use ctxgraph_projection::telling_text;
pub use ctxgraph_store::{FORMAT_VERSION, GraphCounts, LogEntry, OpenMode, SessionSlot};
pub use engine::{Engine, EngineOptions, Projection, ReprojectReport};
pub use enrich::{EmbedderChoice, EnrichReport};
pub use error::Error;
pub use ingest::{IngestOptions, IngestOutcome, IngestProgress, IngestReport, Rejection};
pub use snapshot::{Checkpoints, Snapshot, Stats, TimelineEntry, View};
