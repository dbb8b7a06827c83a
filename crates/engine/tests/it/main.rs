//! Integration tests of the engine: projection determinism, ingestion and reads.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on the first surprise"
)]

mod access;
mod access_tracking;
mod compat;
mod consolidate;
mod conversation;
mod enrich;
mod forget;
mod index_build;
mod indexed;
mod ingest;
mod knowledge;
mod memory;
mod projection;
mod recall;
mod recall_runs;
mod receipt;
mod remote;
mod resolve;
mod retention;
mod semantic;
mod slots;
mod text_index;

use ctxgraph::{Direction, Edge, Engine, EngineOptions, Node, NodeKey, OpenMode};
use tempfile::TempDir;

/// A fresh engine in a temporary directory.
pub(crate) fn engine() -> (TempDir, Engine) {
    let dir = TempDir::new().unwrap();
    let engine = Engine::open(
        &dir.path().join("t.ctxg"),
        OpenMode::CreateIfMissing,
        EngineOptions::default(),
    )
    .unwrap();
    (dir, engine)
}

/// Everything in the graph, in a canonical order: nodes, edges and parked edges.
#[derive(Debug, PartialEq)]
pub(crate) struct GraphDump {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    pub pending: Vec<(NodeKey, Edge)>,
}

pub(crate) fn dump(engine: &Engine) -> GraphDump {
    let snap = engine.owner_reader().unwrap();
    let mut nodes = Vec::new();
    for label in engine.schema().node_types().keys() {
        nodes.extend(snap.nodes(label, None, usize::MAX >> 2).unwrap());
    }
    let mut edges = Vec::new();
    for edge_type in engine.schema().edge_types().keys() {
        edges.extend(snap.edges_of_type(edge_type, None, usize::MAX >> 2).unwrap());
    }
    // Neighbour lookups must agree with the type scan.
    for e in &edges {
        let out = snap.edges(&e.key.from, Some(&e.key.edge_type), Direction::Out).unwrap();
        assert!(out.contains(e), "edge {} missing from its source's neighbours", e.key);
    }
    // Listing order follows internal node ids, which depend on arrival order: compare sorted.
    nodes.sort_by(|a, b| a.key.cmp(&b.key));
    edges.sort_by(|a, b| a.key.cmp(&b.key));
    GraphDump { nodes, edges, pending: snap.pending_edges().unwrap() }
}

/// A synthetic trace of `events` events as JSONL (the default generator configuration).
pub(crate) fn trace(events: usize) -> String {
    let config = ctxgraph_synth::TraceConfig { events, ..Default::default() };
    ctxgraph_synth::trace(&config).map(|e| format!("{e}\n")).collect()
}

/// Each JSON record validated by `engine`'s schema (a test's records are valid).
pub(crate) fn validate_all(
    engine: &Engine,
    records: &[serde_json::Value],
) -> Vec<ctxgraph::ValidRecord> {
    records.iter().map(|r| engine.validate(&r.to_string()).unwrap()).collect()
}
