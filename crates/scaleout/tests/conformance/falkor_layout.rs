//! What only the FalkorDB graph has: one graph per store, the schema's constraints, and
//! labels and edge types refused when they are not plain identifiers.

use ctxgraph_ontology::Schema;
use ctxgraph_ontology::graph::{Node, NodeKey, Properties};
use ctxgraph_scaleout::FalkorGraph;
use ctxgraph_store::ProjectionGraph;
use redis::Value;

use crate::graph_harness::FalkorBackend;
use crate::harness::admin;

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn each_schema_label_gets_a_unique_constraint_on_id_and_a_second_connect_adds_none() {
    let mut b = FalkorBackend::new();
    let name = b.graph.graph_name().to_owned();
    assert!(name.starts_with("ctxgraph:{") && name.ends_with("}:graph"), "{name}");
    let mut conn = admin(b.url());
    let constraints = |conn: &mut redis::Connection| -> Vec<String> {
        let reply: Value = redis::cmd("GRAPH.RO_QUERY")
            .arg(&name)
            .arg("CALL db.constraints() YIELD type, label, properties RETURN type, label, properties")
            .query(conn)
            .unwrap();
        let mut found = Vec::new();
        collect_strings(&reply, &mut found);
        found
    };
    let before = constraints(&mut conn);
    for label in Schema::core().unwrap().node_types().keys() {
        assert!(before.iter().any(|s| s == label), "no constraint on {label}: {before:?}");
    }
    // A second writer on the same store finds them and creates nothing.
    FalkorGraph::connect(b.url(), &Schema::core().unwrap()).unwrap();
    assert_eq!(constraints(&mut conn).len(), before.len());
    // The constraint holds: a second node with the same id cannot be created.
    let k = NodeKey { label: "Event".into(), id: "e1".into() };
    b.graph.put_node(&Node { key: k.clone(), props: Properties::new() }).unwrap();
    let dup: Result<Value, _> = redis::cmd("GRAPH.QUERY")
        .arg(&name)
        .arg("CREATE (:Event {id: 'e1', props: '{}'})")
        .query(&mut conn);
    assert!(dup.is_err(), "a duplicate id was accepted: {dup:?}");
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    if let Value::BulkString(b) = v {
        out.push(String::from_utf8_lossy(b).into_owned());
    }
    if let Value::SimpleString(s) = v {
        out.push(s.clone());
    }
    if let Value::Array(items) = v {
        items.iter().for_each(|i| collect_strings(i, out));
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_label_or_edge_type_that_is_not_an_identifier_is_refused() {
    let mut b = FalkorBackend::new();
    for label in ["Event`) DETACH DELETE n //", "with space", "", "9Event", "Évent"] {
        let node =
            Node { key: NodeKey { label: label.into(), id: "x".into() }, props: Properties::new() };
        let err = b.graph.put_node(&node).unwrap_err();
        assert!(err.to_string().contains("not a plain identifier"), "{label}: {err}");
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_deleted_or_rewritten_node_leaves_no_bytes_in_the_graph() {
    let mut b = FalkorBackend::new();
    let secret = format!("graph-secret-{}", crate::harness::fresh_name());
    let kept = NodeKey { label: "Event".into(), id: "e1".into() };
    let doomed = NodeKey { label: "Entity".into(), id: format!("user:{secret}") };
    let mut props = Properties::new();
    props.insert("text".into(), serde_json::Value::String(format!("said by {secret}")));
    b.graph.put_node(&Node { key: kept.clone(), props: props.clone() }).unwrap();
    b.graph.put_node(&Node { key: doomed.clone(), props }).unwrap();
    let mut conn = admin(b.url());
    let name = b.graph.graph_name().to_owned();
    let graph_bytes =
        |conn: &mut redis::Connection| crate::harness::key_bytes(conn, name.as_bytes());
    assert!(
        crate::harness::contains(&graph_bytes(&mut conn), secret.as_bytes()),
        "the probe finds the secret in the graph's serialisation (run with rdbcompression no, as .ci/scaleout.sh does)"
    );
    // A forget rewrites one node without the secret and deletes the other.
    b.graph.put_node(&Node { key: kept, props: Properties::new() }).unwrap();
    assert!(b.graph.delete_node(&doomed).unwrap());
    assert!(!crate::harness::contains(&graph_bytes(&mut conn), secret.as_bytes()));
    // The graph's queries carried the secret into the append-only file; a rewrite removes it.
    assert!(
        crate::redis_layout::on_disk(&mut conn, &secret),
        "the probe finds the queries on disk"
    );
    // The server's record of past queries (its telemetry stream) holds them too: a forget
    // drops it before the rewrite, as `ScaleOutStore`'s does.
    ctxgraph_scaleout::drop_telemetry(b.url(), b.graph.graph_name()).unwrap();
    ctxgraph_scaleout::RedisLog::connect(b.url()).unwrap().rewrite_persistence().unwrap();
    let mut tries = 0;
    while crate::redis_layout::on_disk(&mut conn, &secret) {
        tries += 1;
        assert!(tries < 500, "the forgotten bytes are still in the append-only file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn hostile_ids_and_text_committed_in_a_batch_read_back_byte_for_byte() {
    use ctxgraph_ontology::graph::{Edge, EdgeKey};
    use ctxgraph_scaleout::BatchFold;
    use ctxgraph_store::SessionSlot;

    let b = FalkorBackend::new();
    let hostile = [
        r#"q"uote'd"#,
        r"back\slash\\'",
        "'}) MATCH (n) DETACH DELETE n //",
        "$id",
        "line\nbreak\r\ttab",
        "ünïcødé-🦀",
        "CYPHER id='x' MATCH (n) DELETE n",
        "\\' OR 1=1 //",
    ];
    let text = "quote ' \" backslash \\ newline \n nul \u{0} brace } $param `tick` CYPHER x=1";
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for id in hostile {
        let mut props = Properties::new();
        props.insert("text".into(), serde_json::Value::String(format!("{text} {id}")));
        batch
            .put_node(&Node { key: NodeKey { label: "Entity".into(), id: id.into() }, props })
            .unwrap();
        batch.put_session_slot(id, &SessionSlot { at_ns: 1, event_id: id.into() }).unwrap();
    }
    let key = |id: &str| NodeKey { label: "Entity".into(), id: id.into() };
    let edge = Edge {
        key: EdgeKey {
            edge_type: "RELATED_TO".into(),
            from: key(hostile[0]),
            to: key(hostile[2]),
            qualifier: hostile[4].into(),
        },
        props: Properties::new(),
    };
    batch.put_edge(&edge).unwrap();
    let parked =
        Edge { key: EdgeKey { to: key("not-yet"), ..edge.key.clone() }, props: Properties::new() };
    batch.put_pending(&key("not-yet"), &parked).unwrap();
    assert!(batch.commit(1).unwrap());

    for id in hostile {
        let node = b.graph.node(&key(id)).unwrap().unwrap();
        assert_eq!(node.props["text"], serde_json::Value::String(format!("{text} {id}")), "{id}");
        assert_eq!(b.graph.session_tail(id).unwrap().unwrap().event_id, id);
    }
    assert_eq!(b.graph.edge(&edge.key).unwrap(), Some(edge));
    assert_eq!(b.graph.pending_for(&key("not-yet")).unwrap(), [parked]);
    assert_eq!(b.graph.counts().unwrap().nodes, [("Entity".to_owned(), hostile.len() as u64)]);

    // Read ahead by the same keys (lists of ids, parked edges, sessions in one query each), a
    // batch answers what the graph answers, one by one.
    let mut ahead = BatchFold::new(&b.graph).unwrap();
    let mut keys: std::collections::BTreeSet<NodeKey> = hostile.iter().map(|id| key(id)).collect();
    keys.insert(key("not-yet"));
    keys.insert(key("never written"));
    let sessions = hostile.iter().map(|id| id.to_string()).collect();
    ahead.prefetch(&keys, &sessions).unwrap();
    for k in &keys {
        assert_eq!(ahead.node(k).unwrap(), b.graph.node(k).unwrap(), "{k}");
        assert_eq!(ahead.pending_for(k).unwrap(), b.graph.pending_for(k).unwrap(), "{k}");
    }
    for id in hostile {
        assert_eq!(
            ahead.session_events(id, usize::MAX).unwrap(),
            b.graph.session_events(id, usize::MAX).unwrap()
        );
    }
    // Its commit of nothing moves the checkpoint alone.
    assert!(ahead.commit(2).unwrap());
    assert_eq!(b.graph.counts().unwrap().nodes, [("Entity".to_owned(), hostile.len() as u64)]);
}
