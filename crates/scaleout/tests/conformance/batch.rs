//! A batch applies the final state of what it wrote as a few merged queries: the graph after
//! its commit equals the graph after the same writes made one by one, whatever the mix of
//! deletions, re-creations, session moves and parked edges taken and parked again.

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_scaleout::{BatchFold, FalkorGraph};
use ctxgraph_store::{ProjectionGraph, SessionSlot};
use serde_json::json;

use crate::graph_harness::FalkorBackend;

fn key(id: &str) -> NodeKey {
    NodeKey { label: "Entity".to_owned(), id: id.to_owned() }
}

fn node(id: &str, v: serde_json::Value) -> Node {
    Node { key: key(id), props: serde_json::from_value(v).unwrap() }
}

fn edge(from: &str, to: &str, q: &str, v: serde_json::Value) -> Edge {
    Edge {
        key: EdgeKey {
            edge_type: "RELATED_TO".to_owned(),
            from: key(from),
            to: key(to),
            qualifier: q.to_owned(),
        },
        props: serde_json::from_value::<Properties>(v).unwrap(),
    }
}

fn slot(at_ns: i64, id: &str) -> SessionSlot {
    SessionSlot { at_ns, event_id: id.to_owned() }
}

/// The graph both start from.
fn seed(g: &mut dyn ProjectionGraph) {
    for id in ["a", "b", "c"] {
        g.put_node(&node(id, json!({"v": 0}))).unwrap();
    }
    g.put_edge(&edge("a", "b", "", json!({"w": 1}))).unwrap();
    g.put_edge(&edge("b", "c", "", json!({"w": 2}))).unwrap();
    g.put_edge(&edge("c", "a", "old", json!({}))).unwrap();
    g.put_session_slot("s1", &slot(1, "x")).unwrap();
    g.put_session_slot("s1", &slot(2, "y")).unwrap();
    g.put_pending(&key("d"), &edge("d", "a", "", json!({"parked": true}))).unwrap();
    g.put_pending(&key("f"), &edge("f", "b", "", json!({}))).unwrap();
}

/// Writes that overwrite, delete and re-create the same keys within one batch.
fn writes(g: &mut dyn ProjectionGraph) {
    // A node deleted (its edges go) and written again, with a new edge.
    assert!(g.delete_node(&key("b")).unwrap());
    g.put_node(&node("b", json!({"v": 1}))).unwrap();
    g.put_edge(&edge("a", "b", "new", json!({"w": 3}))).unwrap();
    // An edge written then deleted, another deleted then written with new properties.
    g.put_edge(&edge("b", "c", "", json!({"w": 4}))).unwrap();
    assert!(g.delete_edge(&edge("b", "c", "", json!({})).key).unwrap());
    assert!(g.delete_edge(&edge("c", "a", "old", json!({})).key).unwrap());
    g.put_edge(&edge("c", "a", "old", json!({"back": true}))).unwrap();
    // A node arrives and takes what waited for it.
    g.put_node(&node("d", json!({"v": 2}))).unwrap();
    for e in g.take_pending(&key("d")).unwrap() {
        g.put_edge(&e).unwrap();
    }
    // Edges parked, taken, and parked again on the same node.
    g.put_pending(&key("e"), &edge("e", "a", "", json!({}))).unwrap();
    assert_eq!(g.take_pending(&key("e")).unwrap().len(), 1);
    g.put_pending(&key("e"), &edge("e", "c", "2", json!({"again": 1}))).unwrap();
    g.put_pending(&key("f"), &edge("f", "c", "", json!({}))).unwrap();
    // Session slots removed, added, removed again and added back.
    g.delete_session_slot("s1", &slot(1, "x")).unwrap();
    g.put_session_slot("s1", &slot(3, "z")).unwrap();
    g.put_session_slot("s2", &slot(1, "w")).unwrap();
    g.delete_session_slot("s2", &slot(1, "w")).unwrap();
    g.delete_session_slot("s1", &slot(2, "y")).unwrap();
    g.put_session_slot("s1", &slot(2, "y")).unwrap();
    // A node created and deleted in the batch, and one of the graph's deleted for good.
    g.put_node(&node("g", json!({}))).unwrap();
    g.put_edge(&edge("g", "a", "", json!({}))).unwrap();
    assert!(g.delete_node(&key("g")).unwrap());
    g.put_node(&node("a", json!({"v": 5}))).unwrap();
    assert!(g.delete_node(&key("c")).unwrap());
    // A new node with edges to and from a node the graph had (read ahead, the commit finds it
    // by its internal id), one deleted and written again (found by key: its old id is gone)
    // and one the batch created; and edges between two nodes the graph had, merged.
    g.put_node(&node("h", json!({}))).unwrap();
    for (to, q) in [("a", "1"), ("a", "2"), ("b", ""), ("d", "")] {
        g.put_edge(&edge("h", to, q, json!({"q": q}))).unwrap();
    }
    g.put_edge(&edge("a", "h", "", json!({}))).unwrap();
    g.put_edge(&edge("b", "h", "", json!({}))).unwrap();
    g.put_edge(&edge("a", "a", "self", json!({}))).unwrap();
    g.put_edge(&edge("a", "b", "", json!({"w": 6}))).unwrap();
}

type Dump = (Vec<Node>, Vec<Edge>, Vec<Vec<SessionSlot>>, Vec<(NodeKey, Edge)>);

fn dump(g: &FalkorGraph) -> Dump {
    let nodes = g.nodes_by_label("Entity", None, usize::MAX).unwrap();
    let edges =
        nodes.iter().flat_map(|n| g.edges_of(&n.key, None, Direction::Out).unwrap()).collect();
    let sessions = ["s1", "s2"].iter().map(|s| g.session_events(s, usize::MAX).unwrap()).collect();
    (nodes, edges, sessions, g.pending_edges().unwrap())
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_batchs_merged_writes_equal_its_writes_one_by_one() {
    let mut one_by_one = FalkorBackend::new();
    seed(&mut one_by_one.graph);
    writes(&mut one_by_one.graph);

    let expected = dump(&one_by_one.graph);
    assert_eq!(expected.0.len(), 4, "a, b, d and h remain");
    assert_eq!(expected.1.len(), 10, "{:?}", expected.1);

    // Without reading ahead, every write is merged; read ahead, what the graph lacks (nodes
    // d and g, their edges, new slots) is created instead.
    for read_ahead in [false, true] {
        let mut merged = FalkorBackend::new();
        seed(&mut merged.graph);
        let mut batch = BatchFold::new(&merged.graph).unwrap();
        if read_ahead {
            let keys = ["a", "b", "c", "d", "e", "f", "g"].iter().map(|id| key(id)).collect();
            let sessions = ["s1", "s2"].iter().map(|s| s.to_string()).collect();
            batch.prefetch(&keys, &sessions).unwrap();
        }
        writes(&mut batch);
        assert!(batch.commit(1).unwrap());
        assert_eq!(dump(&merged.graph), expected, "read ahead: {read_ahead}");
    }
}
