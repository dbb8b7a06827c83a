//! The graph as the engine reads it (`GraphReader`) answers the same on both backends: one log
//! folded into the embedded store and, through the Redis log and the workers' fold, into
//! FalkorDB, then every read asked of every node with several limits and weightings, lists
//! compared in order. And the scale-out store the engine runs on (`ScaleOutStore`): appends
//! through its log, reads of the log and the graph through one view, connections pooled.

use std::collections::BTreeSet;

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{Limits, Schema, ValidRecord, validate};
use ctxgraph_scaleout::{FalkorGraph, ScaleOutStore, catch_up};
use ctxgraph_store::{
    Appended, EdgeGroup, Embedded, GraphReader, LogReader, ManyAnswer, ManyRead, OpenMode,
    ProjectionGraph, RemoteStore, SessionSlot, StoreRead, read_one,
};
use ctxgraph_synth::{TraceConfig, trace};
use serde_json::json;

use crate::harness::RedisBackend;

/// A weighting of edge groups by type and direction (outgoing: `true`).
type Weight = dyn Fn(&str, bool) -> f64;

/// Weightings of a node's edge groups, as recall's expansion gives them: uniform, by type and
/// direction (some groups left out with a weight of 0), and one that drops a whole direction.
fn weightings() -> Vec<Box<Weight>> {
    vec![
        Box::new(|_, _| 1.0),
        Box::new(|t, out| match (t, out) {
            ("REFERENCES", true) => 2.0,
            ("FOLLOWS", _) => 1.5,
            ("CAUSED_BY", false) => 0.0,
            ("REFERENCES", false) => 0.75,
            _ => 0.5,
        }),
        Box::new(|_, out| if out { 1.0 } else { -1.0 }),
    ]
}

/// Property names asked for a few at a time, as the access policy asks.
const NAMES: &[&str] = &["visibility", "agent_id", "trace_id", "name", "missing"];

/// A synthetic trace with its events partly out of order, explicit edges (one waiting for a
/// late event, one for an event never written), and forgets in the middle of the log (an
/// event, then a whole session), so nodes are deleted and entities go and come back.
fn log(schema: &Schema) -> Vec<ValidRecord> {
    let config = TraceConfig { events: 300, seed: 11, ..TraceConfig::default() };
    let mut events: Vec<serde_json::Value> = trace(&config).collect();
    events[60..90].reverse();
    let late = events.remove(40);
    let id = |e: &serde_json::Value| e["event_id"].as_str().unwrap().to_owned();
    let (first, late_id) = (id(&events[0]), id(&late));
    let forgotten_event = id(&events[70]);
    let forgotten_session = events[120]["session_id"].as_str().unwrap().to_owned();
    let mut texts: Vec<String> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        texts.push(e.to_string());
        if i == 150 {
            texts.push(
                json!({"record_type": "forget", "forget_id": "f-event", "by": "user:ops",
                       "target": {"kind": "event", "id": forgotten_event},
                       "at": "2026-11-25T10:00:00Z"})
                .to_string(),
            );
        }
        if i == 100 {
            // Decision memory: topics, memory sessions, an outcome, a superseded decision.
            texts.extend(memories().iter().map(ToString::to_string));
        }
        if i == 180 {
            // Reads counted on events, one of them forgotten by then (skipped).
            let read = |e: &serde_json::Value, count: u64| json!({"event_id": id(e), "count": count, "last_accessed_at": "2026-11-25T09:00:00Z"});
            texts.push(
                json!({"record_type": "access", "at": "2026-11-25T09:00:00Z",
                       "events": [read(&events[10], 3), read(&events[70], 1), read(&events[150], 2)]})
                .to_string(),
            );
        }
        if i == 200 {
            texts.push(
                json!({"record_type": "forget", "forget_id": "f-session", "by": "user:ops",
                       "target": {"kind": "session", "id": forgotten_session},
                       "at": "2026-11-25T10:00:00Z"})
                .to_string(),
            );
        }
    }
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

/// Decisions and a checkpoint on one topic over two sessions, an outcome and a superseding
/// decision, as an agent records them.
fn memories() -> [serde_json::Value; 4] {
    [
        json!({"record_type": "memory", "memory_id": "memory_1", "kind": "decision",
            "topic": "auth_strategy", "content": "Use JWT", "reasoning": "Stateless, scalable",
            "session_id": "s1", "created_by": "llm", "created_at": "2026-11-20T09:00:00Z"}),
        json!({"record_type": "memory", "memory_id": "memory_2", "kind": "checkpoint",
            "content": "Implemented JWT auth in auth.ts", "session_id": "s1",
            "created_at": "2026-11-20T09:30:00Z"}),
        json!({"record_type": "memory_outcome", "memory_id": "memory_1", "outcome": "FAILED",
            "reason": "Performance issues with token refresh", "at": "2026-11-21T10:00:00Z"}),
        json!({"record_type": "memory", "memory_id": "memory_3", "kind": "decision",
            "topic": "auth_strategy", "content": "Switch to session-based",
            "supersedes": "memory_1", "session_id": "s2", "created_by": "llm",
            "created_at": "2026-11-21T11:00:00Z"}),
    ]
}

/// Every node of the graph, label by label.
fn all_nodes(schema: &Schema, g: &dyn GraphReader) -> Vec<Node> {
    let mut nodes = Vec::new();
    for label in schema.node_types().keys() {
        nodes.extend(g.nodes_by_label(label, None, usize::MAX).unwrap());
    }
    nodes
}

/// Ask both graphs every read of the graph half of `GraphReader` and compare the answers,
/// lists in order. Returns how many node reads were compared.
fn same_reads(schema: &Schema, e: &dyn GraphReader, f: &dyn GraphReader) -> usize {
    assert_eq!(e.counts().unwrap(), f.counts().unwrap());
    let nodes = all_nodes(schema, e);
    assert_eq!(nodes, all_nodes(schema, f));

    // Pages of nodes and lookups of many ids, most of them absent.
    for label in schema.node_types().keys() {
        let (mut after, mut pages) = (None::<String>, 0);
        loop {
            let page = e.nodes_by_label(label, after.as_deref(), 7).unwrap();
            assert_eq!(page, f.nodes_by_label(label, after.as_deref(), 7).unwrap(), "{label}");
            let Some(last) = page.last() else { break };
            after = Some(last.key.id.clone());
            pages += 1;
            assert!(pages < 10_000);
        }
        let mut ids: Vec<String> = nodes.iter().take(40).map(|n| n.key.id.clone()).collect();
        ids.extend(["absent".to_owned(), String::new(), "Event".to_owned()]);
        ids.reverse();
        assert_eq!(e.existing_ids(label, &ids).unwrap(), f.existing_ids(label, &ids).unwrap());
    }

    let absent = NodeKey::new("Event", "never-written");
    let mut keys: Vec<&NodeKey> = nodes.iter().map(|n| &n.key).collect();
    keys.push(&absent);
    for key in &keys {
        let key: &NodeKey = key;
        assert_eq!(e.node(key).unwrap(), f.node(key).unwrap(), "{key}");
        assert_eq!(e.node_exists(key).unwrap(), f.node_exists(key).unwrap(), "{key}");
        assert_eq!(
            e.node_props_named(key, NAMES).unwrap(),
            f.node_props_named(key, NAMES).unwrap(),
            "{key}"
        );
        for dir in [Direction::Both, Direction::Out, Direction::In] {
            let edges = e.edges_of(key, None, dir).unwrap();
            assert_eq!(edges, f.edges_of(key, None, dir).unwrap(), "{key} {dir:?}");
            if dir == Direction::Both {
                for edge in &edges {
                    assert_eq!(f.edge(&edge.key).unwrap().as_ref(), Some(edge));
                }
            }
        }
        for limit in [0, 1, 2, 5, 1_000] {
            let groups = e.edge_groups(key, limit).unwrap();
            assert_eq!(groups, f.edge_groups(key, limit).unwrap(), "{key} limit {limit}");
            for g in &groups {
                let t = g.edge_type.as_str();
                assert_eq!(
                    e.edges_of(key, Some(t), if g.out { Direction::Out } else { Direction::In })
                        .unwrap(),
                    f.edges_of(key, Some(t), if g.out { Direction::Out } else { Direction::In })
                        .unwrap(),
                    "{key} {t}"
                );
                assert_eq!(
                    e.edges_limited(key, t, g.out, limit).unwrap(),
                    f.edges_limited(key, t, g.out, limit).unwrap(),
                    "{key} {t} {} limit {limit}",
                    g.out
                );
            }
        }
        for weight in weightings() {
            for limit in [1, 3, 10, 100] {
                assert_eq!(
                    e.heaviest_edges(key, &weight, limit).unwrap(),
                    f.heaviest_edges(key, &weight, limit).unwrap(),
                    "{key} limit {limit}"
                );
                assert_eq!(
                    e.heaviest_neighbours(key, &weight, limit, NAMES).unwrap(),
                    f.heaviest_neighbours(key, &weight, limit, NAMES).unwrap(),
                    "{key} limit {limit}"
                );
            }
        }
        assert_eq!(e.pending_for(key).unwrap(), f.pending_for(key).unwrap(), "{key}");
    }

    // Edges by type, whole and in pages chained by the last key; a page after an edge whose
    // endpoint does not exist is empty on both.
    let counts = e.counts().unwrap();
    for (edge_type, n) in &counts.edges {
        let all = e.edges_by_type(edge_type, None, usize::MAX).unwrap();
        assert_eq!(all.len() as u64, *n);
        assert_eq!(all, f.edges_by_type(edge_type, None, usize::MAX).unwrap(), "{edge_type}");
        let mut after: Option<EdgeKey> = None;
        let mut paged = Vec::new();
        loop {
            let page = e.edges_by_type(edge_type, after.as_ref(), 13).unwrap();
            assert_eq!(page, f.edges_by_type(edge_type, after.as_ref(), 13).unwrap());
            let Some(last) = page.last() else { break };
            after = Some(last.key.clone());
            paged.extend(page);
        }
        assert_eq!(paged, all);
        if let Some(first) = all.first() {
            let gone = EdgeKey { to: absent.clone(), ..first.key.clone() };
            assert_eq!(e.edges_by_type(edge_type, Some(&gone), 10).unwrap(), []);
            assert_eq!(f.edges_by_type(edge_type, Some(&gone), 10).unwrap(), []);
        }
    }

    // Sessions, their orders, tails and each slot's neighbours.
    let sessions = e.sessions(None, usize::MAX).unwrap();
    assert!(!sessions.is_empty());
    assert_eq!(sessions, f.sessions(None, usize::MAX).unwrap());
    assert_eq!(e.sessions(sessions.first().map(String::as_str), 3).unwrap(), {
        f.sessions(sessions.first().map(String::as_str), 3).unwrap()
    });
    for s in sessions.iter().chain([&"no-such-session".to_owned()]) {
        let slots = e.session_events(s, usize::MAX).unwrap();
        assert_eq!(slots, f.session_events(s, usize::MAX).unwrap(), "{s}");
        assert_eq!(e.session_events(s, 2).unwrap(), f.session_events(s, 2).unwrap());
        assert_eq!(e.session_tail(s).unwrap(), f.session_tail(s).unwrap(), "{s}");
        let between =
            SessionSlot { at_ns: slots.first().map_or(0, |x| x.at_ns), event_id: "~".into() };
        for slot in slots.iter().chain([&between]) {
            assert_eq!(
                e.session_neighbors(s, slot).unwrap(),
                f.session_neighbors(s, slot).unwrap(),
                "{s} {slot:?}"
            );
        }
    }

    // Traces, by the trace ids the events carry.
    let traces: BTreeSet<String> = nodes
        .iter()
        .filter(|n| n.key.label == "Event")
        .filter_map(|n| n.props.get("trace_id")?.as_str().map(str::to_owned))
        .collect();
    assert!(traces.len() >= 3, "the events name several traces: {}", traces.len());
    for t in traces.iter().chain([&"no-such-trace".to_owned()]) {
        for limit in [1, 4, usize::MAX] {
            assert_eq!(
                e.trace_events(t, limit).unwrap(),
                f.trace_events(t, limit).unwrap(),
                "{t} {limit}"
            );
        }
    }
    assert_eq!(e.pending_edges().unwrap(), f.pending_edges().unwrap());
    keys.len()
}

/// Fold `records` into a new embedded store from position 1, in one write transaction.
fn embedded_fold(dir: &tempfile::TempDir, schema: &Schema, records: &[ValidRecord]) -> Embedded {
    let mut store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = store.begin_write().unwrap();
    crate::projection::fold(schema, &mut w, records, 1);
    w.commit().unwrap();
    store
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn every_graph_read_answers_on_falkordb_as_on_the_embedded_store() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let dir = tempfile::TempDir::new().unwrap();
    let embedded = embedded_fold(&dir, &schema, &records);

    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    // In uneven steps, as workers fold: nodes are created across many batches.
    while catch_up(&schema, redis.log(), &graph, 97).unwrap() > 0 {}

    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let read = store.begin_read().unwrap();
    let e = embedded.begin_read().unwrap();
    let compared = same_reads(&schema, &e, &*read as &dyn GraphReader);
    // The log had what the comparison needs: deletions, busy entities, parked edges.
    let counts = e.counts().unwrap();
    assert!(compared > 300, "{compared}");
    assert!(counts.pending_edges >= 1);
    let busy = all_nodes(&schema, &e)
        .iter()
        .filter(|n| e.edge_groups(&n.key, 5).unwrap().iter().any(|g| g.degree > 5))
        .count();
    assert!(busy > 5, "nodes with more edges of a kind than the limits: {busy}");
    let labels: Vec<&str> = counts.nodes.iter().map(|(l, _)| l.as_str()).collect();
    for label in ["Event", "Entity", "Memory", "Topic"] {
        assert!(labels.contains(&label), "{label} in {labels:?}");
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn hostile_ids_and_text_read_back_the_same_on_both_backends() {
    let hostile = [
        r#"q"uote'd"#,
        r"back\slash\\'",
        "'}) MATCH (n) DETACH DELETE n //",
        "$id",
        "line\nbreak\r\ttab",
        "ünïcødé-🦀 日本",
        "CYPHER id='x' MATCH (n) DELETE n",
        "\\' OR 1=1 //",
        "RETURN",
        "`tick`",
    ];
    let text = "quote ' \" backslash \\ newline \n brace } $param `tick` CYPHER x=1 ünï";
    let key = |id: &str| NodeKey::new("Entity", id);
    let event = |id: &str| NodeKey::new("Event", id);
    // The same writes, one by one, into both graphs.
    let write = |g: &mut dyn ProjectionGraph| {
        let hub = key("hub");
        g.put_node(&Node { key: hub.clone(), props: Properties::new() }).unwrap();
        for (i, id) in hostile.iter().enumerate() {
            let mut props = Properties::new();
            props.insert("text".into(), json!(format!("{text} {id}")));
            props.insert("visibility".into(), json!(id));
            g.put_node(&Node { key: key(id), props: props.clone() }).unwrap();
            props.insert("trace_id".into(), json!(hostile[(i % 3) * 2 + 1]));
            g.put_node(&Node { key: event(id), props }).unwrap();
            g.put_session_slot(id, &SessionSlot { at_ns: i as i64, event_id: id.to_string() })
                .unwrap();
            // Edges of the hub to every hostile node, qualifiers hostile too.
            for q in [id, "", hostile[(i + 1) % hostile.len()]] {
                let mut eprops = Properties::new();
                eprops.insert("why".into(), json!(text));
                g.put_edge(&Edge {
                    key: EdgeKey {
                        from: hub.clone(),
                        edge_type: "RELATED_TO".into(),
                        to: key(id),
                        qualifier: q.into(),
                    },
                    props: eprops,
                })
                .unwrap();
            }
            g.put_edge(&Edge {
                key: EdgeKey {
                    from: event(id),
                    edge_type: "REFERENCES".into(),
                    to: hub.clone(),
                    qualifier: id.to_string(),
                },
                props: Properties::new(),
            })
            .unwrap();
        }
        let parked = Edge {
            key: EdgeKey {
                from: key(hostile[0]),
                edge_type: "RELATED_TO".into(),
                to: key(hostile[2]),
                qualifier: hostile[4].into(),
            },
            props: Properties::new(),
        };
        g.put_pending(&key("not'yet\\"), &parked).unwrap();
    };
    let schema = Schema::core().unwrap();
    let (_dir, embedded, _redis, graph) = written_to_both(&write);

    let e = embedded.begin_read().unwrap();
    same_reads(&schema, &e, &graph);
    for id in hostile {
        let node = GraphReader::node(&graph, &key(id)).unwrap().unwrap();
        assert_eq!(node.props["text"], json!(format!("{text} {id}")), "{id}");
        assert_eq!(graph.existing_ids("Entity", &[id.to_owned()]).unwrap(), [id]);
    }
    assert_eq!(GraphReader::edge_groups(&graph, &key("hub"), 4).unwrap()[0].degree, 5);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_scale_out_store_appends_to_its_log_and_reads_what_the_workers_folded() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let mut redis = RedisBackend::new();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    assert_eq!(store.location(), redis.url().to_string());
    assert!(redis.store_keys().is_empty(), "connecting creates nothing on the server");

    // Appends go to the log; the graph waits for a worker.
    let batch: Vec<&ValidRecord> = records.iter().collect();
    let out = store.append_batch(&batch, "2026-11-26T00:00:00Z").unwrap();
    assert_eq!(out.len(), records.len());
    assert!(
        out.iter().enumerate().all(|(i, r)| *r.as_ref().unwrap() == Appended::New(i as u64 + 1))
    );
    let again = store.append_batch(&batch[..3], "2026-11-26T00:00:01Z").unwrap();
    assert_eq!(
        again.into_iter().map(Result::unwrap).collect::<Vec<_>>(),
        [Appended::Duplicate(1), Appended::Duplicate(2), Appended::Duplicate(3)]
    );
    {
        let read = store.begin_read().unwrap();
        assert_eq!(read.head().unwrap(), records.len() as u64);
        assert_eq!(read.projected_through().unwrap(), 0);
        assert_eq!(read.counts().unwrap().nodes, []);
        assert_eq!(read.read_from(1, 2).unwrap(), redis.log().read_from(1, 2).unwrap());
        let event = NodeKey::new("Event", records[0].id());
        assert_eq!(read.node(&event).unwrap(), None);
        assert!(!read.node_exists(&event).unwrap());
        assert_eq!(read.edge_groups(&event, 5).unwrap(), []);
        assert_eq!(read.sessions(None, 10).unwrap(), Vec::<String>::new());
    }
    // Reads are read-only queries: a store nothing was folded into still has no graph.
    let graph_key = format!("{}graph", redis.url().key_prefix());
    assert!(!redis.store_keys().iter().any(|k| k == graph_key.as_bytes()), "reads made a graph");

    // A worker folds; a new read sees the graph, the same as the embedded fold's.
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    let generation = GraphReader::graph_generation(&graph).unwrap();
    catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap();
    let dir = tempfile::TempDir::new().unwrap();
    let embedded = embedded_fold(&dir, &schema, &records);
    let e = embedded.begin_read().unwrap();
    // Two reads at once, each on its own connections.
    let (first, second) = (store.begin_read().unwrap(), store.begin_read().unwrap());
    assert_ne!(first.graph_generation().unwrap(), generation, "a fold moves the generation");
    assert_eq!(first.projected_through().unwrap(), records.len() as u64);
    assert_eq!(first.counts().unwrap(), e.counts().unwrap());
    let some = all_nodes(&schema, &e);
    for n in some.iter().step_by(17) {
        assert_eq!(second.node(&n.key).unwrap().as_ref(), Some(n));
        assert_eq!(first.edge_groups(&n.key, 3).unwrap(), e.edge_groups(&n.key, 3).unwrap());
    }
    // Stages 2 and 3 do not run here: no vectors, text or archive, and the stage-2 checkpoint
    // is 0.
    let any = &some[0].key;
    assert_eq!(first.enriched_through().unwrap(), 0);
    assert_eq!(first.embedding_model().unwrap(), None);
    assert_eq!(first.vector(any).unwrap(), None);
    assert_eq!(first.vector_counts().unwrap(), (0, 0));
    assert_eq!(first.search_text(&["refund".into()], -1, 10).unwrap(), []);
    assert!(!first.is_archived(any).unwrap());
    assert_eq!(first.setting("auto_link").unwrap(), None);
    drop((first, second));
    // Reads given back are reused: a third read needs no new connection and still works.
    let third = store.begin_read().unwrap();
    assert_eq!(third.head().unwrap(), records.len() as u64);
    let _: &dyn StoreRead = &*third;

    // A graph folded without creation numbers (the counter missing beside a checkpoint) is
    // refused: its reads would not come in the embedded store's order.
    let counter = format!("{}node_seq", redis.url().key_prefix());
    redis::cmd("DEL").arg(&counter).query::<redis::Value>(redis.admin()).unwrap();
    let err = ScaleOutStore::connect(redis.url()).unwrap_err();
    assert!(err.to_string().contains("rule: graph.layout"), "{err}");
    assert!(err.to_string().contains(&counter), "{err}");
    // And a worker does not fold on into it.
    let err = catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap_err();
    assert!(err.to_string().contains("rule: graph.layout"), "{err}");
}

/// Keys for the batched reads: every node of the graph in an order no backend keeps (every
/// label mixed, the last first), a key asked twice, and keys of nodes that do not exist (an id
/// of another label's node, a label no node has).
fn mixed_keys(nodes: &[Node]) -> Vec<NodeKey> {
    let mut keys: Vec<NodeKey> = nodes.iter().rev().step_by(3).map(|n| n.key.clone()).collect();
    keys.extend(nodes.iter().step_by(5).map(|n| n.key.clone()));
    keys.push(keys[0].clone());
    keys.push(NodeKey::new("Event", "no-such-event"));
    keys.push(NodeKey::new("Entity", &nodes[0].key.id));
    keys.push(NodeKey::new("Summary", "no-such-summary"));
    keys
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn batched_reads_answer_as_the_single_reads_in_order() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let dir = tempfile::TempDir::new().unwrap();
    let embedded = embedded_fold(&dir, &schema, &records);
    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let read = store.begin_read().unwrap();
    let e = embedded.begin_read().unwrap();
    let f: &dyn StoreRead = &*read;

    let keys = mixed_keys(&all_nodes(&schema, &e));
    assert!(keys.len() > 200, "{}", keys.len());
    let single: Vec<Option<Node>> = keys.iter().map(|k| f.node(k).unwrap()).collect();
    assert_eq!(f.nodes(&keys).unwrap(), single);
    assert_eq!(e.nodes(&keys).unwrap(), single, "the embedded store's answer");
    let exist: Vec<bool> = keys.iter().map(|k| f.node_exists(k).unwrap()).collect();
    assert_eq!(f.nodes_exist(&keys).unwrap(), exist);
    assert!(exist.iter().any(|x| *x) && exist.iter().any(|x| !*x));
    for edge_type in [None, Some("REFERENCES"), Some("FOLLOWS"), Some("NO_SUCH_TYPE")] {
        for direction in [Direction::Out, Direction::In, Direction::Both] {
            let single: Vec<Vec<Edge>> =
                keys.iter().map(|k| f.edges_of(k, edge_type, direction).unwrap()).collect();
            let batched = f.edges_of_many(&keys, edge_type, direction).unwrap();
            assert_eq!(batched, single, "{edge_type:?} {direction:?}");
            assert_eq!(e.edges_of_many(&keys, edge_type, direction).unwrap(), single);
        }
    }
    assert!(f.edges_of_many(&keys, None, Direction::Both).unwrap().iter().any(|es| es.len() > 5));
    let typed: Vec<(NodeKey, &str)> = keys
        .iter()
        .zip(["REFERENCES", "FOLLOWS", "CAUSED_BY", "NO_SUCH_TYPE"].iter().cycle())
        .map(|(k, t)| (k.clone(), *t))
        .collect();
    for out in [true, false] {
        for limit in [1, 3, usize::MAX] {
            let single: Vec<Vec<Edge>> =
                typed.iter().map(|(k, t)| f.edges_limited(k, t, out, limit).unwrap()).collect();
            assert_eq!(f.edges_limited_many(&typed, out, limit).unwrap(), single, "{out} {limit}");
            assert_eq!(e.edges_limited_many(&typed, out, limit).unwrap(), single, "{out} {limit}");
            assert!(single.iter().any(|es| es.len() > 1) || limit == 1);
        }
    }
    // Edge groups: each node's as its single read, degrees past the limit counted as it
    // counts them; more keys than one query carries (several queries, merged as one).
    for limit in [1, 3, 16] {
        let single: Vec<Vec<EdgeGroup>> =
            keys.iter().map(|k| f.edge_groups(k, limit).unwrap()).collect();
        assert_eq!(f.edge_groups_many(&keys, limit).unwrap(), single, "{limit}");
        assert_eq!(e.edge_groups_many(&keys, limit).unwrap(), single, "{limit}");
        assert!(single.iter().flatten().any(|g| g.degree > g.edges.len()) || limit == 16);
    }
    let many: Vec<NodeKey> = keys.iter().cycle().take(2_300).cloned().collect();
    let groups = f.edge_groups_many(&many, 2).unwrap();
    assert_eq!(groups.len(), 2_300);
    for (key, groups) in many.iter().zip(&groups).step_by(97) {
        assert_eq!(groups, &f.edge_groups(key, 2).unwrap(), "{key}");
    }
    assert_eq!(f.edge_groups_many(&[], 2).unwrap(), Vec::<Vec<EdgeGroup>>::new());

    // A stage-1 graph has no summaries: one label finds nothing.
    let labels = ["Event", "Entity", "Summary", "Memory"];
    let mut ids: Vec<String> = keys.iter().map(|k| k.id.clone()).collect();
    ids.push("no-such-id".into());
    let single: Vec<Vec<String>> =
        labels.iter().map(|l| f.existing_ids(l, &ids).unwrap()).collect();
    assert_eq!(f.existing_ids_by_label(&labels, &ids).unwrap(), single);
    let found: Vec<bool> = single.iter().map(|ids| !ids.is_empty()).collect();
    assert_eq!(found, [true, true, false, true]);
    assert_eq!(f.existing_ids_by_label(&labels, &[]).unwrap(), vec![Vec::<String>::new(); 4]);

    // Sessions and traces: every one, in reverse, one asked twice, one that does not exist.
    let mut sessions = f.sessions(None, usize::MAX).unwrap();
    sessions.reverse();
    let traces: BTreeSet<String> = all_nodes(&schema, &e)
        .iter()
        .filter_map(|n| n.props.get("trace_id").and_then(|t| t.as_str()).map(str::to_owned))
        .collect();
    let mut traces: Vec<String> = traces.into_iter().rev().collect();
    assert!(sessions.len() >= 3 && traces.len() >= 3, "{sessions:?} {traces:?}");
    for ids in [&mut sessions, &mut traces] {
        ids.push(ids[0].clone());
        ids.push("no-such-run".into());
    }
    for limit in [1, 4, usize::MAX] {
        let single: Vec<_> = sessions.iter().map(|s| f.session_events(s, limit).unwrap()).collect();
        assert_eq!(f.session_events_many(&sessions, limit).unwrap(), single, "{limit}");
        assert_eq!(e.session_events_many(&sessions, limit).unwrap(), single, "{limit}");
        let single: Vec<_> = traces.iter().map(|t| f.trace_events(t, limit).unwrap()).collect();
        assert_eq!(f.trace_events_many(&traces, limit).unwrap(), single, "{limit}");
        assert_eq!(e.trace_events_many(&traces, limit).unwrap(), single, "{limit}");
    }
    assert!(f.batch_reads_pay() && !e.batch_reads_pay());

    // Nothing asked, nothing read.
    assert_eq!(f.nodes(&[]).unwrap(), []);
    assert_eq!(f.edges_of_many(&[], None, Direction::Both).unwrap(), Vec::<Vec<Edge>>::new());

    // The log: records of several kinds, one asked twice, ids that name none.
    let mut asked: Vec<(ctxgraph_ontology::RecordKind, &str)> =
        records.iter().rev().step_by(7).map(|r| (r.kind(), r.id())).collect();
    asked.push(asked[0]);
    asked.push((ctxgraph_ontology::RecordKind::Event, "no-such-event"));
    asked.push((ctxgraph_ontology::RecordKind::Memory, records[0].id()));
    let single: Vec<_> = asked.iter().map(|(k, id)| f.get(*k, id).unwrap()).collect();
    assert_eq!(f.get_many(&asked).unwrap(), single);
    assert!(single.iter().filter(|x| x.is_some()).count() > 40);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn records_read_while_the_graph_is_read_answer_as_each_read_alone() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let dir = tempfile::TempDir::new().unwrap();
    let embedded = embedded_fold(&dir, &schema, &records);
    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let e = embedded.begin_read().unwrap();
    let keys = mixed_keys(&all_nodes(&schema, &e));

    let mut asked: Vec<(ctxgraph_ontology::RecordKind, &str)> =
        records.iter().rev().step_by(5).map(|r| (r.kind(), r.id())).collect();
    asked.push(asked[0]);
    asked.push((ctxgraph_ontology::RecordKind::Event, "no-such-event"));
    // More than one script call carries: the records are read after the graph.
    let many: Vec<_> = asked.iter().cycle().take(2_100).copied().collect();
    let view = store.begin_read().unwrap();
    for store_read in [&*view, &e as &dyn StoreRead] {
        for asked in [&asked[..], &many[..], &[][..]] {
            let mut edges = None;
            let records = store_read
                .get_many_meanwhile(asked, &mut || {
                    edges = Some(store_read.edges_of_many(&keys, None, Direction::Both));
                })
                .unwrap();
            assert_eq!(records, store_read.get_many(asked).unwrap());
            let edges = edges.expect("the graph read ran").unwrap();
            assert_eq!(edges, store_read.edges_of_many(&keys, None, Direction::Both).unwrap());
        }
    }
    let f = store.begin_read().unwrap();
    let expected = f.get_many(&asked).unwrap();
    assert_eq!(f.get_many_meanwhile(&asked, &mut || {}).unwrap(), expected);
    // A server that lost its scripts (restarted) is asked again through the script.
    redis::cmd("SCRIPT").arg("FLUSH").query::<()>(redis.admin()).unwrap();
    let mut ran = false;
    assert_eq!(f.get_many_meanwhile(&asked, &mut || ran = true).unwrap(), expected);
    assert!(ran);
    // The view is still in step: its next reads answer.
    assert_eq!(f.get_many(&asked[..3]).unwrap(), expected[..3]);
    assert_eq!(f.nodes(&keys).unwrap(), GraphReader::nodes(&e, &keys).unwrap());
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_read_view_answers_its_state_keys_as_of_its_first_read_of_them() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    catch_up(&schema, redis.log(), &graph, 50).unwrap();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let settings = format!("{}settings", redis.url().key_prefix());

    let view = store.begin_read().unwrap();
    let (generation, through) =
        (view.graph_generation().unwrap(), view.projected_through().unwrap());
    assert_eq!(view.setting("auto_link").unwrap(), None);
    // The graph moves on and a setting is set: the view keeps its point in time.
    catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap();
    redis::cmd("HSET")
        .arg(&settings)
        .arg("auto_link")
        .arg("on")
        .query::<i64>(redis.admin())
        .unwrap();
    assert_eq!(view.graph_generation().unwrap(), generation);
    assert_eq!(view.projected_through().unwrap(), through);
    assert_eq!(view.setting("auto_link").unwrap(), None);
    assert_eq!(view.enriched_through().unwrap(), 0);
    drop(view);

    // A new view, on the same pooled connection, reads them anew.
    let view = store.begin_read().unwrap();
    assert_ne!(view.graph_generation().unwrap(), generation);
    assert_eq!(view.projected_through().unwrap(), records.len() as u64);
    assert_eq!(view.setting("auto_link").unwrap().as_deref(), Some("on"));
    // A worker's graph reads its counters live.
    let before = GraphReader::graph_generation(&graph).unwrap();
    redis::cmd("INCR")
        .arg(format!("{}graph_generation", redis.url().key_prefix()))
        .query::<i64>(redis.admin())
        .unwrap();
    assert_eq!(GraphReader::graph_generation(&graph).unwrap(), before + 1);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn reads_sent_together_answer_as_each_read_alone() {
    let schema = Schema::core().unwrap();
    let records = log(&schema);
    let dir = tempfile::TempDir::new().unwrap();
    let embedded = embedded_fold(&dir, &schema, &records);
    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap();
    let store = ScaleOutStore::connect(redis.url()).unwrap();
    let e = embedded.begin_read().unwrap();

    let keys = mixed_keys(&all_nodes(&schema, &e));
    // More keys than one query carries: the answer is put together from several.
    let many: Vec<NodeKey> = keys.iter().cycle().take(2_300).cloned().collect();
    let ids: Vec<String> = keys.iter().map(|k| k.id.clone()).chain(["no-such-id".into()]).collect();
    let mut sessions = GraphReader::sessions(&e, None, usize::MAX).unwrap();
    sessions.push("no-such-run".into());
    let traces: Vec<String> = all_nodes(&schema, &e)
        .iter()
        .filter_map(|n| n.props.get("trace_id").and_then(|t| t.as_str()).map(str::to_owned))
        .collect::<BTreeSet<String>>()
        .into_iter()
        .chain(["no-such-run".into()])
        .collect();
    let labels = ["Event", "Entity", "Summary", "Memory"];
    let typed: Vec<(NodeKey, &str)> = keys
        .iter()
        .zip(["REFERENCES", "FOLLOWS", "CAUSED_BY", "NO_SUCH_TYPE"].iter().cycle())
        .map(|(k, t)| (k.clone(), *t))
        .collect();
    let reads = [
        ManyRead::Nodes(&keys),
        ManyRead::Nodes(&many),
        ManyRead::Nodes(&[]),
        ManyRead::NodesExist(&keys),
        ManyRead::EdgesOf { keys: &keys, edge_type: None, direction: Direction::Both },
        ManyRead::EdgesOf { keys: &keys, edge_type: Some("REFERENCES"), direction: Direction::In },
        ManyRead::ExistingIds { label: "Entity", ids: &ids },
        ManyRead::ExistingIds { label: "Event", ids: &[] },
        ManyRead::ExistingIdsByLabel { labels: &labels, ids: &ids },
        ManyRead::ExistingIdsByLabel { labels: &labels, ids: &[] },
        ManyRead::SessionEvents { ids: &sessions, limit: 4 },
        ManyRead::SessionEvents { ids: &sessions, limit: usize::MAX },
        ManyRead::TraceEvents { ids: &traces, limit: 64 },
        ManyRead::EdgesLimited { reads: &typed, out: false, limit: 3 },
        ManyRead::EdgesLimited { reads: &typed, out: true, limit: usize::MAX },
        ManyRead::EdgesLimited { reads: &[], out: true, limit: 1 },
        ManyRead::EdgeGroups { keys: &keys, limit: 2 },
        ManyRead::EdgeGroups { keys: &keys, limit: 64 },
        ManyRead::EdgeGroups { keys: &[], limit: 16 },
    ];
    // A fresh view: its state keys' read goes out with the graph's reads.
    let read = store.begin_read().unwrap();
    let f: &dyn StoreRead = &*read;
    let together = f.read_together(&reads).unwrap();
    let alone: Vec<ManyAnswer> = reads.iter().map(|r| read_one(f, r).unwrap()).collect();
    assert_eq!(together, alone);
    assert_eq!(e.read_together(&reads).unwrap(), alone, "the embedded store's answer");
    assert_eq!(together[1].clone().into_nodes().unwrap().len(), 2_300);
    assert!(together[0].clone().into_nodes().unwrap().iter().any(Option::is_some));
    assert!(together[0].clone().into_edges().is_err(), "an answer taken as another kind");
    // The state keys read beside them answer as a live read does.
    assert_eq!(f.projected_through().unwrap(), records.len() as u64);
    assert_eq!(f.graph_generation().unwrap(), GraphReader::graph_generation(&graph).unwrap());
    assert_eq!(f.node_generation().unwrap(), Some(f.graph_generation().unwrap()));
    assert_eq!(f.embedding_model().unwrap(), None);
    assert_eq!(f.text_index_build().unwrap(), GraphReader::text_index_build(&graph).unwrap());
    for after in [-1, 0, 5, i64::MAX] {
        assert_eq!(
            f.text_docs_after(after).unwrap(),
            GraphReader::text_docs_after(&graph, after).unwrap(),
            "{after}"
        );
    }
    // Nothing to read: no round trip, nothing answered.
    assert_eq!(f.read_together(&[]).unwrap(), Vec::<ManyAnswer>::new());
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn edge_groups_of_a_node_with_more_edges_than_plain_rows_carry_equal_the_embedded_stores() {
    // A hub with 150 incoming REFERENCES (more than the 64 plain rows a read takes per node),
    // two types out, and events with a few edges each: the read of many nodes falls back to
    // groups sorted by the server for the part the hub is in, and every answer is the embedded
    // store's.
    let key = |id: &str| NodeKey::new("Entity", id);
    let event = |i: usize| NodeKey::new("Event", format!("ev-{i:03}"));
    let edge = |from: NodeKey, edge_type: &str, to: NodeKey, q: &str| Edge {
        key: EdgeKey { from, edge_type: edge_type.into(), to, qualifier: q.into() },
        props: Properties::new(),
    };
    let write = |g: &mut dyn ProjectionGraph| {
        let hub = key("hub");
        g.put_node(&Node { key: hub.clone(), props: Properties::new() }).unwrap();
        g.put_node(&Node { key: key("other"), props: Properties::new() }).unwrap();
        // Created in reverse: the server's creation numbers, not the ids, give the order.
        for i in (0..150).rev() {
            g.put_node(&Node { key: event(i), props: Properties::new() }).unwrap();
        }
        for i in 0..150 {
            g.put_edge(&edge(event(i), "REFERENCES", hub.clone(), "")).unwrap();
            if i > 0 {
                g.put_edge(&edge(event(i), "FOLLOWS", event(i - 1), "")).unwrap();
            }
        }
        for q in ["b", "a", ""] {
            g.put_edge(&edge(hub.clone(), "RELATED_TO", key("other"), q)).unwrap();
        }
        g.put_edge(&edge(hub.clone(), "SAME_AS", key("other"), "")).unwrap();
    };
    let (_dir, embedded, _redis, graph) = written_to_both(&write);
    let e = embedded.begin_read().unwrap();
    let keys = [event(3), key("hub"), event(0), key("other"), event(149)];
    for limit in [1, 16, 200] {
        let single: Vec<Vec<EdgeGroup>> =
            keys.iter().map(|k| e.edge_groups(k, limit).unwrap()).collect();
        let hub_in = single[1].iter().find(|g| !g.out).unwrap();
        assert_eq!(hub_in.degree, 150.min(limit + 1), "{limit}");
        for (k, groups) in keys.iter().zip(&single) {
            assert_eq!(&GraphReader::edge_groups(&graph, k, limit).unwrap(), groups, "{k} {limit}");
        }
        assert_eq!(graph.edge_groups_many(&keys, limit).unwrap(), single, "{limit}");
        // Without the hub, no part reaches its cap: the plain rows answer alone.
        let quiet = [event(3), event(0), key("other")];
        let quiet_single = vec![single[0].clone(), single[2].clone(), single[3].clone()];
        assert_eq!(graph.edge_groups_many(&quiet, limit).unwrap(), quiet_single, "{limit}");
    }
}

/// The same writes, one by one, into a new store file and a new graph on the server (the
/// directory and the server's store live as long as what is returned).
fn written_to_both(
    write: &dyn Fn(&mut dyn ProjectionGraph),
) -> (tempfile::TempDir, Embedded, RedisBackend, FalkorGraph) {
    let dir = tempfile::TempDir::new().unwrap();
    let mut embedded =
        Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = embedded.begin_write().unwrap();
    write(&mut w);
    w.commit().unwrap();
    let redis = RedisBackend::new();
    let mut graph = FalkorGraph::connect(redis.url(), &Schema::core().unwrap()).unwrap();
    write(&mut graph);
    (dir, embedded, redis, graph)
}
