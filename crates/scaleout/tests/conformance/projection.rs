//! The projection folds the same log into the embedded graph and into FalkorDB, and the two
//! graphs are equal: nodes with their properties, edges, session order and parked edges.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, Edge, Node, NodeKey};
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_projection::project;
use ctxgraph_store::{Embedded, GraphReader, OpenMode, ProjectionGraph, SessionSlot};
use ctxgraph_synth::{TraceConfig, trace};
use serde_json::json;

use crate::graph_harness::FalkorBackend;

/// Everything a graph holds that the projection writes, in a comparable form.
#[derive(Debug, PartialEq)]
struct Dump {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    sessions: Vec<(String, Vec<SessionSlot>)>,
    pending: Vec<(NodeKey, Edge)>,
}

/// The synthetic trace's events, a stretch of them delivered late (so events arrive out of
/// order within their sessions), and explicit edges, one of them to an event not yet written.
fn records(schema: &Schema) -> Vec<ValidRecord> {
    let config = TraceConfig { events: 120, ..TraceConfig::default() };
    let mut events: Vec<serde_json::Value> = trace(&config).collect();
    events[40..60].reverse();
    let late = events.remove(30);
    let mut texts: Vec<String> = events.iter().map(|e| e.to_string()).collect();
    let first = events[0]["event_id"].as_str().unwrap().to_owned();
    let late_id = late["event_id"].as_str().unwrap().to_owned();
    texts.push(
        json!({"record_type": "edge", "edge_id": "x-waits", "edge_type": "CAUSED_BY",
               "from": {"label": "Event", "id": late_id}, "to": {"label": "Event", "id": first},
               "properties": {"mechanism": "inferred"}})
        .to_string(),
    );
    texts.push(
        json!({"record_type": "edge", "edge_id": "x-never", "edge_type": "CAUSED_BY",
               "from": {"label": "Event", "id": "never-written"}, "to": {"label": "Event", "id": first},
               "properties": {"mechanism": "inferred"}})
        .to_string(),
    );
    texts.push(late.to_string());
    texts
        .iter()
        .map(|t| validate(schema, &Limits::default(), t).unwrap_or_else(|e| panic!("{t}: {e}")))
        .collect()
}

fn fold(schema: &Schema, graph: &mut dyn ProjectionGraph, records: &[ValidRecord]) {
    for (i, r) in records.iter().enumerate() {
        project(schema, graph, i as u64 + 1, r).unwrap();
    }
}

/// A dump read through the operations both backends have: nodes label by label, each node's
/// outgoing edges, each session's order, the parked edges.
fn dump(
    schema: &Schema,
    g: &dyn ProjectionGraph,
    nodes_of: &mut dyn FnMut(&str) -> Vec<Node>,
    sessions: &[String],
) -> Dump {
    let mut nodes = Vec::new();
    for label in schema.node_types().keys() {
        nodes.extend(nodes_of(label));
    }
    let mut edges = Vec::new();
    for n in &nodes {
        edges.extend(g.edges_of(&n.key, None, Direction::Out).unwrap());
    }
    let sessions =
        sessions.iter().map(|s| (s.clone(), g.session_events(s, usize::MAX).unwrap())).collect();
    Dump { nodes, edges, sessions, pending: g.pending_edges().unwrap() }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn the_same_log_projects_to_the_same_graph_on_both_backends() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let session_ids: BTreeSet<String> = records
        .iter()
        .filter_map(|r| {
            let v: serde_json::Value = serde_json::from_str(r.canonical()).ok()?;
            v.get("session_id")?.as_str().map(str::to_owned)
        })
        .collect();
    let sessions: Vec<String> = session_ids.into_iter().collect();
    assert!(sessions.len() > 3, "the trace spans several sessions");

    let dir = tempfile::TempDir::new().unwrap();
    let mut store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = store.begin_write().unwrap();
    fold(&schema, &mut w, &records);
    let embedded = dump(
        &schema,
        &w,
        &mut |label| w.nodes_by_label(label, None, usize::MAX).unwrap(),
        &sessions,
    );
    assert_eq!(GraphReader::sessions(&w, None, usize::MAX).unwrap(), sessions);
    let embedded_counts = w.counts().unwrap();
    w.commit().unwrap();

    let mut falkor = FalkorBackend::new();
    fold(&schema, &mut falkor.graph, &records);
    let g = &falkor.graph;
    let server = dump(
        &schema,
        g,
        &mut |label| g.nodes_by_label(label, None, usize::MAX).unwrap(),
        &sessions,
    );
    assert_eq!(g.sessions(None, usize::MAX).unwrap(), sessions);

    // The fold did something worth comparing.
    assert!(embedded.nodes.len() > 120, "{}", embedded.nodes.len());
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "FOLLOWS"));
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "REFERENCES"));
    assert!(embedded.edges.iter().any(|e| e.key.edge_type == "CAUSED_BY"));
    assert_eq!(embedded.pending.len(), 1, "the edge to an event never written waits");
    assert_eq!(embedded.nodes.len(), server.nodes.len());
    for (a, b) in embedded.nodes.iter().zip(&server.nodes) {
        assert_eq!(a, b);
    }
    assert_eq!(embedded.edges.len(), server.edges.len());
    for (a, b) in embedded.edges.iter().zip(&server.edges) {
        assert_eq!(a, b);
    }
    assert_eq!(embedded, server);
    assert_eq!(embedded_counts, g.counts().unwrap());
}
