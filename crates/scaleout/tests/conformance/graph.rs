//! The core graph traits' behaviour (nodes, edges, neighbours, session order, checkpoint),
//! written once for every graph backend (see `Graph`).

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_store::SessionSlot;
use serde_json::json;

use crate::graph_harness::Graph;

fn key(label: &str, id: &str) -> NodeKey {
    NodeKey { label: label.to_owned(), id: id.to_owned() }
}

fn props(v: serde_json::Value) -> Properties {
    serde_json::from_value(v).unwrap()
}

fn node(label: &str, id: &str, v: serde_json::Value) -> Node {
    Node { key: key(label, id), props: props(v) }
}

fn edge(from: &NodeKey, ty: &str, to: &NodeKey, q: &str, v: serde_json::Value) -> Edge {
    Edge {
        key: EdgeKey {
            edge_type: ty.to_owned(),
            from: from.clone(),
            to: to.clone(),
            qualifier: q.to_owned(),
        },
        props: props(v),
    }
}

fn slot(at_ns: i64, id: &str) -> SessionSlot {
    SessionSlot { at_ns, event_id: id.to_owned() }
}

pub(crate) fn nodes_are_upserted_found_and_listed(mut g: impl Graph) {
    let a = node(
        "Event",
        "e-a",
        json!({"text": "first", "n": 1, "nested": {"list": [1, "two", null]}}),
    );
    g.put_node(&a).unwrap();
    assert_eq!(g.node(&a.key).unwrap(), Some(a.clone()));
    assert!(g.node_exists(&a.key).unwrap());
    assert!(!g.node_exists(&key("Entity", "e-a")).unwrap(), "the label is part of the key");
    assert_eq!(g.node(&key("Event", "e-b")).unwrap(), None);
    let replaced = node("Event", "e-a", json!({"text": "second"}));
    g.put_node(&replaced).unwrap();
    assert_eq!(g.node(&a.key).unwrap(), Some(replaced.clone()), "a put replaces the properties");
    for id in ["e-c", "e-b", "e-e", "e-d"] {
        g.put_node(&node("Event", id, json!({}))).unwrap();
    }
    g.put_node(&node("Entity", "tool:x", json!({"name": "x"}))).unwrap();
    let asked: Vec<String> = ["e-d", "missing", "tool:x", "e-a"].map(String::from).to_vec();
    assert_eq!(g.existing_ids("Event", &asked).unwrap(), ["e-d", "e-a"]);
    assert!(g.existing_ids("Event", &[]).unwrap().is_empty());
    let ids = |nodes: Vec<Node>| nodes.into_iter().map(|n| n.key.id).collect::<Vec<_>>();
    assert_eq!(ids(g.nodes_by_label("Event", None, 3).unwrap()), ["e-a", "e-b", "e-c"]);
    assert_eq!(ids(g.nodes_by_label("Event", Some("e-c"), 10).unwrap()), ["e-d", "e-e"]);
    assert_eq!(g.nodes_by_label("Event", None, 1).unwrap(), [replaced]);
    assert!(g.nodes_by_label("Memory", None, 10).unwrap().is_empty());
    // The largest limit means all of them.
    assert_eq!(ids(g.nodes_by_label("Event", None, usize::MAX).unwrap()).len(), 5);
    let counts = g.counts().unwrap();
    assert_eq!(counts.nodes, [("Entity".to_owned(), 1), ("Event".to_owned(), 5)]);
    assert!(g.delete_node(&key("Event", "e-e")).unwrap());
    assert!(!g.delete_node(&key("Event", "e-e")).unwrap());
    assert!(!g.node_exists(&key("Event", "e-e")).unwrap());
}

pub(crate) fn edges_are_keyed_by_type_endpoints_and_qualifier(mut g: impl Graph) {
    let (a, b, c) = (key("Event", "a"), key("Event", "b"), key("Entity", "tool:c"));
    for k in [&a, &b, &c] {
        g.put_node(&Node { key: k.clone(), props: Properties::new() }).unwrap();
    }
    let follows = edge(&b, "FOLLOWS", &a, "", json!({"gap_ms": 5}));
    let refs = edge(&a, "REFERENCES", &c, "", json!({"role": "tool"}));
    let refs_q = edge(&a, "REFERENCES", &c, "second", json!({"role": "other"}));
    let caused = edge(&b, "CAUSED_BY", &a, "", json!({}));
    for e in [&follows, &refs, &refs_q, &caused] {
        g.put_edge(e).unwrap();
    }
    assert_eq!(
        g.edge(&refs_q.key).unwrap(),
        Some(refs_q.clone()),
        "the qualifier is part of the key"
    );
    assert_eq!(g.edge(&refs.key).unwrap(), Some(refs.clone()));
    let mut reversed = follows.key.clone();
    std::mem::swap(&mut reversed.from, &mut reversed.to);
    assert_eq!(g.edge(&reversed).unwrap(), None, "edges have a direction");
    let updated = edge(&b, "FOLLOWS", &a, "", json!({"gap_ms": 7}));
    g.put_edge(&updated).unwrap();
    assert_eq!(
        g.edge(&follows.key).unwrap(),
        Some(updated.clone()),
        "a put replaces the properties"
    );

    assert_eq!(g.edges_of(&a, None, Direction::Out).unwrap(), [refs.clone(), refs_q.clone()]);
    assert_eq!(g.edges_of(&a, None, Direction::In).unwrap(), [caused.clone(), updated.clone()]);
    assert_eq!(
        g.edges_of(&a, None, Direction::Both).unwrap(),
        [refs.clone(), refs_q.clone(), caused.clone(), updated.clone()]
    );
    assert_eq!(g.edges_of(&a, Some("FOLLOWS"), Direction::Both).unwrap(), [updated]);
    assert_eq!(
        g.edges_of(&c, Some("REFERENCES"), Direction::In).unwrap(),
        [refs.clone(), refs_q.clone()]
    );
    assert!(g.edges_of(&c, Some("REFERENCES"), Direction::Out).unwrap().is_empty());
    assert!(g.edges_of(&key("Event", "nobody"), None, Direction::Both).unwrap().is_empty());
    let counts = g.counts().unwrap();
    assert_eq!(
        counts.edges,
        [("CAUSED_BY".to_owned(), 1), ("FOLLOWS".to_owned(), 1), ("REFERENCES".to_owned(), 2)]
    );

    let dangling = edge(&a, "FOLLOWS", &key("Event", "not-stored"), "", json!({}));
    let err = g.put_edge(&dangling).unwrap_err();
    assert_eq!(err.code(), "store.corruption");
    assert!(err.to_string().contains("not-stored"), "{err}");

    assert!(g.delete_edge(&refs_q.key).unwrap());
    assert!(!g.delete_edge(&refs_q.key).unwrap());
    assert_eq!(g.edges_of(&c, None, Direction::In).unwrap(), [refs]);
    // A deleted node takes its edges with it.
    assert!(g.delete_node(&a).unwrap());
    assert!(g.edges_of(&b, None, Direction::Both).unwrap().is_empty());
    assert!(g.edges_of(&c, None, Direction::Both).unwrap().is_empty());
}

pub(crate) fn session_order_is_by_time_then_event_id(mut g: impl Graph) {
    // Out of order, with a tie in time and a repeat.
    for (at, id) in [(30, "e3"), (10, "e1"), (20, "e2b"), (20, "e2a"), (10, "e1"), (40, "e4")] {
        g.put_session_slot("s1", &slot(at, id)).unwrap();
    }
    g.put_session_slot("s0", &slot(5, "x")).unwrap();
    g.put_session_slot("s2", &slot(1, "y")).unwrap();
    let order = [slot(10, "e1"), slot(20, "e2a"), slot(20, "e2b"), slot(30, "e3"), slot(40, "e4")];
    assert_eq!(g.session_events("s1", 100).unwrap(), order);
    assert_eq!(g.session_events("s1", 2).unwrap(), order[..2]);
    assert!(g.session_events("none", 10).unwrap().is_empty());
    assert_eq!(g.session_tail("s1").unwrap(), Some(slot(40, "e4")));
    assert_eq!(g.session_tail("none").unwrap(), None);
    assert_eq!(
        g.session_neighbors("s1", &slot(20, "e2b")).unwrap(),
        (Some(slot(20, "e2a")), Some(slot(30, "e3")))
    );
    assert_eq!(g.session_neighbors("s1", &slot(10, "e1")).unwrap(), (None, Some(slot(20, "e2a"))));
    // A slot not stored has neighbours too: where it would go.
    assert_eq!(
        g.session_neighbors("s1", &slot(25, "new")).unwrap(),
        (Some(slot(20, "e2b")), Some(slot(30, "e3")))
    );
    assert_eq!(g.sessions(None, 10).unwrap(), ["s0", "s1", "s2"]);
    assert_eq!(g.sessions(None, usize::MAX).unwrap(), ["s0", "s1", "s2"]);
    assert_eq!(g.session_events("s1", usize::MAX).unwrap(), order);
    assert_eq!(g.sessions(Some("s0"), 1).unwrap(), ["s1"]);
    g.delete_session_slot("s1", &slot(40, "e4")).unwrap();
    assert_eq!(g.session_tail("s1").unwrap(), Some(slot(30, "e3")), "the tail moves back");
    g.delete_session_slot("s2", &slot(1, "y")).unwrap();
    assert_eq!(g.sessions(None, 10).unwrap(), ["s0", "s1"]);
}

pub(crate) fn edges_wait_for_a_missing_endpoint_until_taken(mut g: impl Graph) {
    let (a, b, c) = (key("Event", "a"), key("Event", "b"), key("Entity", "tool:c"));
    g.put_node(&Node { key: a.clone(), props: Properties::new() }).unwrap();
    let to_b = edge(&a, "CAUSED_BY", &b, "", json!({"v": 1}));
    let from_b = edge(&b, "FOLLOWS", &a, "", json!({}));
    let to_c = edge(&a, "REFERENCES", &c, "x", json!({}));
    g.put_pending(&b, &to_b).unwrap();
    g.put_pending(&b, &from_b).unwrap();
    g.put_pending(&c, &to_c).unwrap();
    let to_b2 = edge(&a, "CAUSED_BY", &b, "", json!({"v": 2}));
    g.put_pending(&b, &to_b2).unwrap();
    assert_eq!(
        g.pending_for(&b).unwrap(),
        [to_b2.clone(), from_b.clone()],
        "key order; a repeat replaces"
    );
    assert_eq!(
        g.pending_edges().unwrap(),
        [(c.clone(), to_c.clone()), (b.clone(), to_b2.clone()), (b.clone(), from_b.clone())]
    );
    assert_eq!(g.counts().unwrap().pending_edges, 3);
    assert!(g.pending_for(&a).unwrap().is_empty());
    assert_eq!(g.take_pending(&b).unwrap(), [to_b2, from_b]);
    assert!(g.take_pending(&b).unwrap().is_empty(), "taken once");
    assert_eq!(g.pending_edges().unwrap(), [(c, to_c)]);
    assert_eq!(g.counts().unwrap().pending_edges, 1);
    assert_eq!(g.counts().unwrap().nodes, [("Event".to_owned(), 1)], "parked edges are no nodes");
}

pub(crate) fn the_checkpoint_moves_and_a_clear_empties_the_graph(mut g: impl Graph) {
    assert_eq!(g.projected_through().unwrap(), 0);
    g.set_projected_through(41).unwrap();
    g.set_projected_through(42).unwrap();
    assert_eq!(g.projected_through().unwrap(), 42);
    let (a, b) = (key("Event", "a"), key("Event", "b"));
    g.put_node(&Node { key: a.clone(), props: Properties::new() }).unwrap();
    g.put_node(&Node { key: b.clone(), props: Properties::new() }).unwrap();
    g.put_edge(&edge(&b, "FOLLOWS", &a, "", json!({}))).unwrap();
    g.put_session_slot("s", &slot(1, "a")).unwrap();
    g.put_pending(&key("Event", "c"), &edge(&a, "CAUSED_BY", &key("Event", "c"), "", json!({})))
        .unwrap();
    g.clear_graph().unwrap();
    assert!(g.pending_edges().unwrap().is_empty());
    assert_eq!(g.projected_through().unwrap(), 0);
    let counts = g.counts().unwrap();
    assert!(counts.nodes.is_empty() && counts.edges.is_empty(), "{counts:?}");
    assert!(g.sessions(None, 10).unwrap().is_empty());
    assert!(!g.node_exists(&a).unwrap());
}

pub(crate) fn hostile_ids_and_text_round_trip_byte_for_byte(mut g: impl Graph) {
    let hostile = [
        r#"q"uote'd"#,
        "{brace}}{",
        r"back\slash\\'",
        "'}) MATCH (n) DETACH DELETE n //",
        "$id",
        "line\nbreak\r\ttab",
        "ünïcødé-日本-🦀",
        "`tick`",
        "CYPHER id='x'",
    ];
    let text = "quote ' \" backslash \\ newline \n nul \u{0} brace } $param `tick` ]] -- \u{202E}";
    for (i, id) in hostile.iter().enumerate() {
        g.put_node(&node("Entity", id, json!({"name": id, "text": text, "i": i}))).unwrap();
    }
    let stored = g.nodes_by_label("Entity", None, 100).unwrap();
    let mut expected: Vec<&str> = hostile.to_vec();
    expected.sort_unstable();
    assert_eq!(stored.iter().map(|n| n.key.id.as_str()).collect::<Vec<_>>(), expected);
    for (i, id) in hostile.iter().enumerate() {
        let n = g.node(&key("Entity", id)).unwrap().unwrap();
        assert_eq!(n.props, props(json!({"name": id, "text": text, "i": i})), "{id}");
    }
    let ids: Vec<String> = hostile.iter().map(|s| s.to_string()).collect();
    assert_eq!(g.existing_ids("Entity", &ids).unwrap(), ids);
    let (first, second) = (key("Entity", hostile[0]), key("Entity", hostile[3]));
    let e = edge(&first, "RELATED_TO", &second, hostile[5], json!({"why": text}));
    g.put_edge(&e).unwrap();
    assert_eq!(g.edge(&e.key).unwrap(), Some(e.clone()));
    assert_eq!(g.edges_of(&second, None, Direction::In).unwrap(), [e]);
    let waiting =
        edge(&first, "RELATED_TO", &key("Entity", hostile[4]), hostile[2], json!({"t": text}));
    g.put_pending(&key("Entity", hostile[4]), &waiting).unwrap();
    assert_eq!(g.take_pending(&key("Entity", hostile[4])).unwrap(), [waiting]);
    for id in hostile {
        g.put_session_slot(id, &slot(1, id)).unwrap();
        assert_eq!(g.session_tail(id).unwrap(), Some(slot(1, id)));
    }
    // Nothing a value said was run: every node is still there.
    assert_eq!(g.counts().unwrap().nodes, [("Entity".to_owned(), hostile.len() as u64)]);
}

conformance!(crate::graph_harness::EmbeddedGraph, falkordb: crate::graph_harness::FalkorBackend;
    nodes_are_upserted_found_and_listed,
    edges_are_keyed_by_type_endpoints_and_qualifier,
    session_order_is_by_time_then_event_id,
    edges_wait_for_a_missing_endpoint_until_taken,
    the_checkpoint_moves_and_a_clear_empties_the_graph,
    hostile_ids_and_text_round_trip_byte_for_byte,
);
