//! Tests of the embedded backend: log idempotency, durability across reopen, graph upserts, format checks.

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{Limits, Schema, validate};
use tempfile::TempDir;

use super::*;

fn record(id: &str, agent: &str) -> ValidRecord {
    let text = serde_json::json!({
        "event_id": id, "event_type": "agent.invoke", "occurred_at": "2026-11-20T09:00:00Z",
        "session_id": "s", "agent_id": agent, "trace_id": "t"
    })
    .to_string();
    validate(&Schema::core().unwrap(), &Limits::default(), &text).unwrap()
}

fn open(dir: &TempDir) -> Embedded {
    Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap()
}

#[test]
fn redact_replaces_a_body_in_place_and_the_old_bytes_leave_the_files() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    w.append(&record("e1", "agent-with-a-secret-name"), "t0").unwrap();
    w.append(&record("e2", "a"), "t0").unwrap();
    w.commit().unwrap();
    let mut w = store.begin_write().unwrap();
    w.secure_delete(true).unwrap();
    assert!(w.redact(1, r#"{"record_type":"redacted"}"#).unwrap());
    assert!(!w.redact(9, "{}").unwrap(), "no record at position 9");
    w.secure_delete(false).unwrap();
    w.commit().unwrap();
    store.checkpoint().unwrap();
    let r = store.begin_read().unwrap();
    let e1 = r.get(RecordKind::Event, "e1").unwrap().unwrap();
    assert_eq!((e1.position, e1.body.as_str()), (1, r#"{"record_type":"redacted"}"#));
    assert_eq!(r.head().unwrap(), 2);
    drop(r);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let needle = b"agent-with-a-secret-name";
        assert!(!bytes.windows(needle.len()).any(|w| w == needle));
    }
}

#[test]
fn redact_as_replaces_the_id_too_and_refuses_a_taken_one() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    w.append(&record("e-secretname", "a"), "t0").unwrap();
    w.append(&record("e2", "a"), "t0").unwrap();
    let err = w.redact_as(1, "e2", "{}").unwrap_err();
    assert_eq!(err.code(), "log.conflict");
    assert!(err.to_string().contains("at log position 2"), "{err}");
    assert!(w.redact_as(1, "redacted-1", r#"{"record_type":"redacted"}"#).unwrap());
    assert!(!w.redact_as(9, "redacted-9", "{}").unwrap(), "no record at position 9");
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    assert!(r.get(RecordKind::Event, "e-secretname").unwrap().is_none());
    let e = r.get(RecordKind::Event, "redacted-1").unwrap().unwrap();
    assert_eq!((e.position, e.body.as_str()), (1, r#"{"record_type":"redacted"}"#));
}

#[test]
fn append_is_idempotent_by_id_and_refuses_conflicts() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    assert_eq!(w.append(&record("e1", "a"), "t0").unwrap(), Appended::New(1));
    assert_eq!(w.append(&record("e2", "a"), "t0").unwrap(), Appended::New(2));
    assert_eq!(w.append(&record("e1", "a"), "t1").unwrap(), Appended::Duplicate(1));
    let err = w.append(&record("e1", "b"), "t1").unwrap_err();
    assert_eq!(err.code(), "log.conflict");
    assert!(err.to_string().contains("event `e1` already exists at log position 1"));
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    assert_eq!(r.head().unwrap(), 2);
    let all = r.read_from(1, 10).unwrap();
    assert_eq!(all.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["e1", "e2"]);
    assert_eq!(r.read_from(2, 10).unwrap().len(), 1);
}

#[test]
fn import_copies_entries_at_their_positions_in_order_only() {
    let dir = TempDir::new().unwrap();
    let mut source = open(&dir);
    let mut w = source.begin_write().unwrap();
    w.append(&record("e1", "a"), "2026-11-20T09:00:01Z").unwrap();
    w.append(&record("e2", "a"), "2026-11-20T09:00:02Z").unwrap();
    // A redacted body is copied as it stands.
    w.redact(2, "{\"redacted\":true}").unwrap();
    w.commit().unwrap();
    let entries = source.begin_read().unwrap().read_from(1, 10).unwrap();

    let other = TempDir::new().unwrap();
    let mut copy = open(&other);
    let mut w = copy.begin_write().unwrap();
    let err = w.import(&entries[1..]).unwrap_err();
    assert!(err.to_string().contains("cannot be copied after head 0"), "{err}");
    assert_eq!(w.import(&entries).unwrap(), 2);
    let err = w.import(&entries[..1]).unwrap_err();
    assert!(err.to_string().contains("cannot be copied after head 2"), "{err}");
    let mut again = entries[0].clone();
    again.position = 3;
    assert_eq!(w.import(&[again]).unwrap_err().code(), "log.conflict");
    w.commit().unwrap();
    assert_eq!(copy.begin_read().unwrap().read_from(1, 10).unwrap(), entries);
}

#[test]
fn committed_writes_survive_reopen_and_dropped_ones_vanish() {
    let dir = TempDir::new().unwrap();
    {
        let mut store = open(&dir);
        let mut w = store.begin_write().unwrap();
        w.append(&record("e1", "a"), "t0").unwrap();
        w.commit().unwrap();
        let mut w = store.begin_write().unwrap();
        w.append(&record("e2", "a"), "t0").unwrap();
        drop(w);
    }
    let store = open(&dir);
    let r = store.begin_read().unwrap();
    assert_eq!(r.head().unwrap(), 1);
    assert!(r.get(RecordKind::Event, "e1").unwrap().is_some());
    assert!(r.get(RecordKind::Event, "e2").unwrap().is_none());
}

#[test]
fn a_deferred_commit_is_read_at_once_and_only_a_synced_one_waits_for_the_disk() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let level = |s: &Embedded| -> i64 {
        s.conn.pragma_query_value(None, "synchronous", |r| r.get(0)).unwrap()
    };
    // SQLite's levels: 1 NORMAL (in WAL mode, no fsync at commit), 2 FULL.
    assert_eq!(level(&store), 2);
    let mut w = store.begin_write_as(Durability::Deferred).unwrap();
    w.append(&record("e1", "a"), "t0").unwrap();
    w.commit().unwrap();
    assert_eq!(level(&store), 1);
    // Another connection reads the deferred commit at once.
    let other = open(&dir);
    assert!(other.begin_read().unwrap().get(RecordKind::Event, "e1").unwrap().is_some());
    let mut w = store.begin_write().unwrap();
    w.append(&record("e2", "a"), "t0").unwrap();
    w.commit().unwrap();
    assert_eq!(level(&store), 2, "a synced transaction after a deferred one waits again");
    drop(store);
    let r = other.begin_read().unwrap();
    assert_eq!(r.head().unwrap(), 2);
}

#[test]
fn graph_upserts_neighbours_and_pending_edges() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let a = NodeKey::new("Event", "a");
    let b = NodeKey::new("Event", "b");
    let mut props = Properties::new();
    props.insert("event_id".into(), "a".into());
    w.put_node(&Node { key: a.clone(), props: props.clone() }).unwrap();
    let mut eprops = Properties::new();
    eprops.insert("mechanism".into(), "direct".into());
    let edge = Edge {
        key: EdgeKey {
            edge_type: "CAUSED_BY".into(),
            from: a.clone(),
            to: b.clone(),
            qualifier: "direct".into(),
        },
        props: eprops,
    };
    w.put_pending(&b, &edge).unwrap();
    assert_eq!(w.counts().unwrap().pending_edges, 1);
    assert_eq!(w.take_pending(&b).unwrap(), vec![edge.clone()]);
    assert!(w.take_pending(&b).unwrap().is_empty());
    assert_eq!(w.put_edge(&edge).unwrap_err().code(), "store.corruption", "b is not stored yet");
    let mut bprops = Properties::new();
    bprops.insert("event_id".into(), "b".into());
    w.put_node(&Node { key: b.clone(), props: bprops }).unwrap();
    w.put_edge(&edge).unwrap();
    assert_eq!(w.edge(&edge.key).unwrap(), Some(edge.clone()));
    assert_eq!(w.edges_of(&a, None, Direction::Out).unwrap(), vec![edge.clone()]);
    assert_eq!(w.edges_of(&b, Some("CAUSED_BY"), Direction::In).unwrap(), vec![edge.clone()]);
    assert!(w.edges_of(&b, Some("FOLLOWS"), Direction::Both).unwrap().is_empty());
    assert_eq!(w.edges_by_type("CAUSED_BY", None, 10).unwrap().len(), 1);
    assert!(w.edges_by_type("CAUSED_BY", Some(&edge.key), 10).unwrap().is_empty());
    assert!(w.delete_edge(&edge.key).unwrap());
    assert!(!w.delete_edge(&edge.key).unwrap());
    w.commit().unwrap();
}

#[test]
fn heaviest_edges_are_read_heaviest_first_up_to_the_limit() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let hub = NodeKey::new("Event", "hub");
    let nodes: Vec<NodeKey> = (0..6).map(|i| NodeKey::new("Event", format!("e{i}"))).collect();
    for key in std::iter::once(&hub).chain(&nodes) {
        let mut props = Properties::new();
        props.insert("event_id".into(), key.id.clone().into());
        w.put_node(&Node { key: key.clone(), props }).unwrap();
    }
    let edge = |t: &str, from: &NodeKey, to: &NodeKey| Edge {
        key: EdgeKey {
            edge_type: t.into(),
            from: from.clone(),
            to: to.clone(),
            qualifier: String::new(),
        },
        props: Properties::new(),
    };
    // Five similar events point at the hub; the hub follows one and causes two.
    for n in &nodes[..5] {
        w.put_edge(&edge("SIMILAR_TO", n, &hub)).unwrap();
    }
    w.put_edge(&edge("FOLLOWS", &hub, &nodes[5])).unwrap();
    w.put_edge(&edge("CAUSED_BY", &nodes[4], &hub)).unwrap();
    w.put_edge(&edge("CAUSED_BY", &nodes[5], &hub)).unwrap();
    let all = w.edges_of(&hub, None, Direction::Both).unwrap();
    let every = |_: &str, _: bool| 1.0;
    let read = w.heaviest_edges(&hub, &every, 100).unwrap();
    assert_eq!(read.len(), all.len());
    assert!(read.iter().all(|(_, e, out)| all.contains(e) && *out == (e.key.from == hub)));
    // Heaviest first, and a type of weight 0 is never read.
    let weight = |t: &str, out: bool| match (t, out) {
        ("FOLLOWS", true) => 0.9,
        ("SIMILAR_TO", false) => 0.5,
        _ => 0.0,
    };
    let three = w.heaviest_edges(&hub, &weight, 3).unwrap();
    let types: Vec<&str> = three.iter().map(|(_, e, _)| e.key.edge_type.as_str()).collect();
    assert_eq!(types, ["FOLLOWS", "SIMILAR_TO", "SIMILAR_TO"]);
    assert_eq!(three[0].0, 0.9);
    // Within a weight, the endpoints stored first.
    assert_eq!(three[1].1.key.from, nodes[0]);
    assert_eq!(three[2].1.key.from, nodes[1]);
    assert_eq!(w.heaviest_edges(&hub, &weight, 100).unwrap().len(), 6);
    assert!(w.heaviest_edges(&NodeKey::new("Event", "none"), &every, 2).unwrap().is_empty());
}

#[test]
fn session_neighbours_order_by_time_then_id() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    for (ns, id) in [(10, "b"), (10, "a"), (30, "c")] {
        w.put_session_slot("s", &SessionSlot { at_ns: ns, event_id: id.into() }).unwrap();
    }
    let mid = SessionSlot { at_ns: 20, event_id: "m".into() };
    let (prev, next) = w.session_neighbors("s", &mid).unwrap();
    assert_eq!(prev.unwrap().event_id, "b");
    assert_eq!(next.unwrap().event_id, "c");
    let ids: Vec<_> = w.session_events("s", 10).unwrap().into_iter().map(|s| s.event_id).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    w.commit().unwrap();
}

#[test]
fn missing_foreign_and_too_new_files_are_refused() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("absent.ctxg");
    assert_eq!(Embedded::open(&path, OpenMode::MustExist).unwrap_err().code(), "store.missing");

    let junk = dir.path().join("junk.ctxg");
    std::fs::write(&junk, b"this is not a database, just some text padded out to a page.......")
        .unwrap();
    assert_eq!(Embedded::open(&junk, OpenMode::MustExist).unwrap_err().code(), "store.not_a_store");

    let path = dir.path().join("new.ctxg");
    drop(Embedded::open(&path, OpenMode::CreateIfMissing).unwrap());
    {
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", FORMAT_VERSION + 1).unwrap();
    }
    assert_eq!(Embedded::open(&path, OpenMode::MustExist).unwrap_err().code(), "store.too_new");
}

#[test]
fn opening_a_current_store_writes_nothing() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("g.ctxg");
    {
        let mut store = open(&dir);
        let mut w = store.begin_write().unwrap();
        w.append(&record("e1", "a"), "t0").unwrap();
        w.commit().unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    {
        let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
        let _ = store.begin_read().unwrap().head().unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn session_tail_tracks_the_latest_slot_and_hot_queries_are_not_reprepared() {
    use rusqlite::StatementStatus;
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    assert_eq!(w.session_tail("s").unwrap(), None);
    for (ns, id) in [(10, "b"), (30, "c"), (10, "a"), (30, "d"), (20, "x")] {
        w.put_session_slot("s", &SessionSlot { at_ns: ns, event_id: id.into() }).unwrap();
    }
    assert_eq!(w.session_tail("s").unwrap(), Some(SessionSlot { at_ns: 30, event_id: "d".into() }));
    // The per-record lookups must not be recompiled on every call (a range over an indexed
    // column is, in this SQLite build), or the projection slows down several times.
    for i in 0..5 {
        w.session_tail(&format!("s{i}")).unwrap();
        w.take_pending(&NodeKey::new("Event", format!("e{i}"))).unwrap();
        w.node_exists(&NodeKey::new("Event", format!("e{i}"))).unwrap();
        w.node(&NodeKey::new("Event", format!("e{i}"))).unwrap();
    }
    for sql in [SESSION_TAIL_SQL, PENDING_FOR_SQL, NODE_NID_SQL, NODE_BY_KEY_SQL] {
        let st = w.tx.prepare_cached(sql).unwrap();
        assert_eq!(st.get_status(StatementStatus::RePrepare), 0, "{sql}");
    }
    w.commit().unwrap();
}

/// The full-text index as searches see it: every (term, document) occurrence, the document
/// count with the highest id, and each query's ranked hits.
type TextIndexView = (Vec<(String, i64)>, (u64, Option<i64>), Vec<Vec<(i64, f64)>>);

/// The [`TextIndexView`] of the store `w` writes.
fn text_index_view(w: &EmbeddedWrite<'_>) -> TextIndexView {
    let mut seen = Vec::new();
    w.scan_text_index(&mut |t, d| {
        seen.push((t.to_owned(), d));
        true
    })
    .unwrap();
    let queries = ["billing", "checkout latency", "refund deploy", "old"];
    let hits = queries
        .iter()
        .map(|q| {
            let words: Vec<String> = q.split_whitespace().map(str::to_owned).collect();
            w.search_text(&words, -1, 10).unwrap()
        })
        .collect();
    (seen, w.text_docs_after(-1).unwrap(), hits)
}

#[test]
fn texts_indexed_in_one_batch_equal_texts_indexed_one_by_one() {
    let keys: Vec<NodeKey> = (0..6).map(|i| NodeKey::new("Event", format!("e{i}"))).collect();
    let first = [(0, "old text of billing"), (1, "checkout old latency")];
    let batch = [
        (2, "refund rejected by the billing api"),
        (0, "billing refund again"),
        (3, "checkout latency regression after deploy"),
        (2, "refund rejected, then accepted"),
        (4, "deploy of the billing service"),
    ];
    let mut views = Vec::new();
    for batched in [false, true] {
        let dir = TempDir::new().unwrap();
        let mut store = open(&dir);
        let mut w = store.begin_write().unwrap();
        for key in &keys {
            w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
        }
        for (i, text) in first {
            w.put_text(&keys[i], text).unwrap();
        }
        w.commit().unwrap();
        let mut w = store.begin_write().unwrap();
        if batched {
            let texts: Vec<(NodeKey, String)> =
                batch.iter().map(|(i, t)| (keys[*i].clone(), (*t).to_owned())).collect();
            w.put_texts(&texts).unwrap();
        } else {
            for (i, text) in batch {
                w.put_text(&keys[i], text).unwrap();
            }
        }
        w.commit().unwrap();
        let w = store.begin_write().unwrap();
        views.push(text_index_view(&w));
    }
    assert_eq!(views[0], views[1]);
    assert_eq!(views[1].1, (5, views[1].1.1), "five documents, each once");
    assert!(views[1].0.contains(&("accept".to_owned(), 3)), "the last text of a node given twice");
    assert!(!views[1].0.contains(&("api".to_owned(), 3)), "and not the first");
    assert!(!views[1].0.contains(&("old".to_owned(), 1)), "a re-indexed node loses its old terms");
}

#[test]
fn vectors_text_search_and_enrichment_bookkeeping() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let a = NodeKey::new("Event", "a");
    let b = NodeKey::new("Event", "b");
    for key in [&a, &b] {
        let mut props = Properties::new();
        props.insert("event_id".into(), key.id.clone().into());
        w.put_node(&Node { key: key.clone(), props }).unwrap();
    }
    w.put_text(&a, "refund rejected by the billing api").unwrap();
    w.put_text(&b, "checkout latency regression after deploy").unwrap();
    w.put_text(&b, "checkout latency regression after deploy; billing unaffected").unwrap();
    let words = |q: &str| q.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let hits = w.search_text(&words("Billing refund?"), -1, 10).unwrap();
    let keys = w.node_keys(&hits.iter().map(|h| h.0).collect::<Vec<_>>()).unwrap();
    assert_eq!(keys[0].1, a, "two matching words beat one");
    assert_eq!(hits.len(), 2);
    assert!(hits[0].1 > hits[1].1);
    assert!(w.search_text(&words("\"; DROP TABLE nodes; --"), -1, 10).unwrap().is_empty());
    assert!(w.search_text(&words("   "), -1, 10).unwrap().is_empty());
    // Only documents above `after`.
    let a_nid = keys[0].0;
    let after: Vec<i64> =
        w.search_text(&words("billing"), a_nid, 10).unwrap().iter().map(|h| h.0).collect();
    assert!(!after.contains(&a_nid) && after.len() == 1);
    // The question's words become the index's stemmed terms, with document frequencies.
    assert_eq!(w.text_terms("Rejected deploys, billing!").unwrap(), ["bill", "deploi", "reject"]);
    // Occurrences come grouped by term, documents ascending.
    let mut seen = Vec::new();
    w.scan_text_index(&mut |t, d| {
        seen.push((t.to_owned(), d));
        true
    })
    .unwrap();
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted);
    assert!(seen.contains(&("unaffect".to_owned(), keys[1].0)));
    assert_eq!(w.text_docs_after(-1).unwrap(), (2, Some(keys.iter().map(|k| k.0).max().unwrap())));

    // The lexical index's blobs and statistics, and its generation.
    assert_eq!(w.text_index_build().unwrap(), None);
    let g0 = w.text_generation().unwrap();
    w.put_text_postings("bill", b"blob").unwrap();
    let build = TextIndexBuild { through: 2, docs: 2, avg_len: 5.5 };
    w.set_text_index_build(&build).unwrap();
    assert_eq!(w.text_index_build().unwrap(), Some(build));
    assert_eq!(w.text_postings("bill").unwrap().as_deref(), Some(&b"blob"[..]));
    assert!(w.text_generation().unwrap() > g0);

    assert_eq!(w.embedding_model().unwrap(), None);
    w.set_embedding_model("m1", 3).unwrap();
    assert_eq!(w.embedding_model().unwrap(), Some(("m1".to_owned(), 3)));
    w.put_vector(&a, &[0.5, -1.0, 2.0]).unwrap();
    assert_eq!(w.vector(&a).unwrap(), Some(vec![0.5, -1.0, 2.0]));
    w.set_enriched_through(7).unwrap();
    assert_eq!(w.enriched_through().unwrap(), 7);
    w.clear_enrichment().unwrap();
    assert_eq!((w.enriched_through().unwrap(), w.embedding_model().unwrap()), (0, None));
    assert!(w.search_text(&words("billing"), -1, 10).unwrap().is_empty());
    assert_eq!(w.text_index_build().unwrap(), None);
    assert_eq!(w.text_postings("bill").unwrap(), None);
    assert_eq!(w.vector(&a).unwrap(), None);
    w.commit().unwrap();
}

/// The edges of `nid` in one direction as they were read before the join: the edge rows in
/// index order, then each far endpoint's key by its own lookup.
fn edges_one_by_one(c: &Connection, near: &NodeKey, nid: i64, out: bool) -> Vec<Edge> {
    let (near_col, far_col) = if out { ("from_nid", "to_nid") } else { ("to_nid", "from_nid") };
    let mut st = c
        .prepare(&format!(
            "SELECT edge_type, {far_col}, qualifier, props FROM edges WHERE {near_col} = ?1"
        ))
        .unwrap();
    let rows: Vec<(String, i64, String, String)> = st
        .query_map(params![nid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    rows.into_iter()
        .map(|(edge_type, far, qualifier, props)| {
            let other = node_key_of(c, far).unwrap().unwrap();
            let (from, to) = if out { (near.clone(), other) } else { (other, near.clone()) };
            Edge {
                key: EdgeKey { from, edge_type, to, qualifier },
                props: props_from(&props).unwrap(),
            }
        })
        .collect()
}

#[test]
fn joined_edge_reads_equal_reads_one_endpoint_at_a_time_and_are_not_reprepared() {
    use rusqlite::StatementStatus;
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    // Nodes stored in an order unlike their keys', so nid order and key order differ.
    let keys: Vec<NodeKey> = (0..40)
        .map(|i| NodeKey::new(["Event", "Entity"][i % 2], format!("n{}", (i * 17) % 40)))
        .collect();
    for key in &keys {
        w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
    }
    let types = ["FOLLOWS", "REFERENCES", "SIMILAR_TO"];
    let mut seed = 7u64;
    let mut next = |n: usize| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize % n
    };
    for _ in 0..400 {
        let (from, to) = (keys[next(keys.len())].clone(), keys[next(keys.len())].clone());
        let mut props = Properties::new();
        props.insert("score".into(), serde_json::json!(next(100)));
        let key = EdgeKey {
            from,
            edge_type: types[next(types.len())].into(),
            to,
            qualifier: ["", "actor", "target"][next(3)].into(),
        };
        w.put_edge(&Edge { key, props }).unwrap();
    }
    let weight = |t: &str, out: bool| match (t, out) {
        ("FOLLOWS", true) => 0.9,
        ("REFERENCES", _) => 0.5,
        ("SIMILAR_TO", false) => 0.3,
        _ => 0.0,
    };
    for key in &keys {
        let nid = w.node_nid(key).unwrap().unwrap();
        let sorted = |mut edges: Vec<Edge>, out: bool| {
            edges.sort_by(|a, b| {
                let far = |e: &Edge| if out { e.key.to.clone() } else { e.key.from.clone() };
                (&a.key.edge_type, far(a), &a.key.qualifier).cmp(&(
                    &b.key.edge_type,
                    far(b),
                    &b.key.qualifier,
                ))
            });
            edges
        };
        let mut want = sorted(edges_one_by_one(&w.tx, key, nid, true), true);
        want.extend(sorted(edges_one_by_one(&w.tx, key, nid, false), false));
        assert_eq!(w.edges_of(key, None, Direction::Both).unwrap(), want);
        // Heaviest first; within a type and direction, in index order (far nid, qualifier).
        for limit in [1, 3, 8, 100] {
            let mut all: Vec<(f64, Edge, bool)> = Vec::new();
            for out in [true, false] {
                for e in edges_one_by_one(&w.tx, key, nid, out) {
                    let wt = weight(&e.key.edge_type, out);
                    if wt > 0.0 {
                        all.push((wt, e, out));
                    }
                }
            }
            // The old reads came in index order; a stable sort by weight, direction and type
            // keeps it within each group.
            all.sort_by(|a, b| {
                b.0.total_cmp(&a.0)
                    .then(b.2.cmp(&a.2))
                    .then(a.1.key.edge_type.cmp(&b.1.key.edge_type))
            });
            all.truncate(limit);
            assert_eq!(w.heaviest_edges(key, &weight, limit).unwrap(), all, "{key:?} {limit}");
            // Every group, with its first `limit` edges in index order and its degree.
            let mut groups: Vec<crate::EdgeGroup> = Vec::new();
            for out in [true, false] {
                let mut edges = edges_one_by_one(&w.tx, key, nid, out);
                edges.sort_by(|a, b| a.key.edge_type.cmp(&b.key.edge_type));
                for e in edges {
                    match groups.last_mut() {
                        Some(g) if g.out == out && g.edge_type == e.key.edge_type => {
                            g.degree += 1;
                            if g.edges.len() < limit {
                                g.edges.push(e);
                            }
                        }
                        _ => groups.push(crate::EdgeGroup {
                            out,
                            edge_type: e.key.edge_type.clone(),
                            degree: 1,
                            edges: vec![e],
                        }),
                    }
                }
            }
            // A busy direction's degrees are counted only to one past the limit.
            let busy = |out: bool| edges_one_by_one(&w.tx, key, nid, out).len() > limit;
            for g in &mut groups {
                if busy(g.out) {
                    g.degree = g.degree.min(limit + 1);
                }
            }
            assert_eq!(w.edge_groups(key, limit).unwrap(), groups, "{key:?} {limit}");
        }
    }
    for (out, typed, limited) in [(true, true, true), (false, true, true), (true, false, false)] {
        let st = w.tx.prepare_cached(&near_edges_sql(out, typed, limited)).unwrap();
        assert_eq!(st.get_status(StatementStatus::RePrepare), 0);
    }
    w.commit().unwrap();
}

#[test]
fn existing_ids_are_the_given_ids_of_stored_nodes_of_the_label() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    for key in [NodeKey::new("Entity", "tool:grep"), NodeKey::new("Event", "tool:sed")] {
        w.put_node(&Node { key, props: Properties::new() }).unwrap();
    }
    let ids: Vec<String> =
        ["tool:sed", "tool:grep", "x\"y", "tool:grep"].iter().map(|s| s.to_string()).collect();
    assert_eq!(w.existing_ids("Entity", &ids).unwrap(), ["tool:grep", "tool:grep"]);
    assert!(w.existing_ids("Entity", &[]).unwrap().is_empty());
    w.commit().unwrap();
    let read = store.begin_read().unwrap();
    assert_eq!(read.existing_ids("Event", &ids).unwrap(), ["tool:sed"]);
}

/// Two first writers of one new path (two `ingest` processes, two tenants' first requests)
/// open it at once: both succeed, and the store is created once.
#[test]
fn concurrent_first_opens_of_a_new_store_all_succeed() {
    for round in 0..20 {
        let dir = TempDir::new().unwrap();
        let path = dir.path().join(format!("new{round}.ctxg"));
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    barrier.wait();
                    let mut store = Embedded::open(&path, OpenMode::CreateIfMissing).unwrap();
                    let mut w = store.begin_write().unwrap();
                    w.append(&record("e1", "a"), "t0").unwrap();
                    w.commit().unwrap();
                });
            }
        });
        let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
        assert_eq!(store.begin_read().unwrap().head().unwrap(), 1);
    }
}

/// A write blocked by another connection's write transaction past the busy timeout fails with
/// the retryable `store.busy`, not the generic `store.io`.
#[test]
fn a_write_lock_held_elsewhere_is_store_busy() {
    let dir = TempDir::new().unwrap();
    let mut holder = open(&dir);
    let mut waiter = open(&dir);
    let held = holder.begin_write().unwrap();
    let err = waiter.begin_write().err().unwrap();
    assert_eq!(err.code(), "store.busy", "{err}");
    drop(held);
    assert!(waiter.begin_write().is_ok());
}

#[cfg(unix)]
#[test]
fn a_new_store_and_its_log_are_private_to_the_owner() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    w.append(&record("e1", "a"), "t0").unwrap();
    w.commit().unwrap();
    for name in ["g.ctxg", "g.ctxg-wal"] {
        let mode = std::fs::metadata(dir.path().join(name)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{name}");
    }
}

#[test]
fn a_commit_that_changes_edges_changes_the_graph_generation_and_others_do_not() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let generation = |store: &Embedded| store.begin_read().unwrap().graph_generation().unwrap();
    let (a, b) = (NodeKey::new("Event", "a"), NodeKey::new("Event", "b"));
    let edge = Edge {
        key: EdgeKey {
            from: b.clone(),
            edge_type: "FOLLOWS".into(),
            to: a.clone(),
            qualifier: String::new(),
        },
        props: Properties::new(),
    };
    // Nodes alone: no edge changed.
    let start = generation(&store);
    let mut w = store.begin_write().unwrap();
    for key in [&a, &b] {
        w.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
    }
    w.commit().unwrap();
    assert_eq!(generation(&store), start);
    // An edge written, then one deleted, then a node with edges deleted: each commit bumps.
    let mut seen = vec![start];
    let mut w = store.begin_write().unwrap();
    w.put_edge(&edge).unwrap();
    w.commit().unwrap();
    seen.push(generation(&store));
    let mut w = store.begin_write().unwrap();
    assert!(w.delete_edge(&edge.key).unwrap());
    w.commit().unwrap();
    seen.push(generation(&store));
    let mut w = store.begin_write().unwrap();
    w.put_edge(&edge).unwrap();
    drop(w);
    assert_eq!(generation(&store), seen[2], "a rollback changes nothing");
    let mut w = store.begin_write().unwrap();
    w.put_edge(&edge).unwrap();
    w.commit().unwrap();
    seen.push(generation(&store));
    let mut w = store.begin_write().unwrap();
    assert!(w.delete_node(&a).unwrap());
    w.commit().unwrap();
    seen.push(generation(&store));
    let distinct: std::collections::BTreeSet<u64> = seen.iter().copied().collect();
    assert_eq!(distinct.len(), seen.len(), "{seen:?}");
    // A transaction that changed nothing leaves the generation (and the file) as it was.
    store.begin_write().unwrap().commit().unwrap();
    assert_eq!(generation(&store), seen[4]);
}

#[test]
fn named_properties_equal_the_decoded_ones_filtered() {
    let names = ["scope_audience", "pii_cleared"];
    let texts = [
        r#"{}"#,
        r#"{"session_id":"s1","payload":{"message":"hello"}}"#,
        r#"{"pii_cleared":false,"session_id":"s1"}"#,
        // A name inside a value or a longer key: decoded, and nothing of it kept.
        r#"{"note":"scope_audience","xscope_audience":1,"payload":{"scope_audience":["a"]}}"#,
        r#"{"payload":{"k":"v"},"scope_audience":["role:ops"]}"#,
    ];
    for text in texts {
        let mut want = super::props_from(text).unwrap();
        want.retain(|k, _| names.contains(&k.as_str()));
        assert_eq!(super::props_named(text, &names).unwrap(), want, "{text}");
    }
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let key = NodeKey::new("Event", "e1");
    let mut props = Properties::new();
    props.insert("pii_cleared".into(), serde_json::json!(true));
    props.insert("session_id".into(), serde_json::json!("s1"));
    w.put_node(&Node { key: key.clone(), props }).unwrap();
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    let got = r.node_props_named(&key, &names).unwrap().unwrap();
    assert_eq!(
        got.into_iter().collect::<Vec<_>>(),
        [("pii_cleared".into(), serde_json::json!(true))]
    );
    assert!(r.node_props_named(&NodeKey::new("Event", "e2"), &names).unwrap().is_none());
}

#[test]
fn heaviest_neighbours_are_the_far_ends_of_the_heaviest_edges() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let hub = NodeKey::new("Entity", "tool:search");
    w.put_node(&Node { key: hub.clone(), props: Properties::new() }).unwrap();
    for i in 0..30 {
        let key = NodeKey::new("Event", format!("e{:02}", (i * 7) % 30));
        let mut props = Properties::new();
        props.insert("session_id".into(), serde_json::json!("s"));
        if i % 4 == 0 {
            props.insert("scope_audience".into(), serde_json::json!(["role:ops"]));
        }
        w.put_node(&Node { key: key.clone(), props }).unwrap();
        let (from, to, ty) = if i % 3 == 0 {
            (hub.clone(), key, "MENTIONS")
        } else {
            (key, hub.clone(), "REFERENCES")
        };
        let key = EdgeKey { from, edge_type: ty.into(), to, qualifier: String::new() };
        w.put_edge(&Edge { key, props: Properties::new() }).unwrap();
    }
    w.commit().unwrap();
    let weight = |t: &str, out: bool| match (t, out) {
        ("REFERENCES", false) => 1.0,
        ("MENTIONS", true) => 0.5,
        _ => 0.0,
    };
    let names = ["scope_audience"];
    let r = store.begin_read().unwrap();
    for limit in [1, 5, 12, 30, 100] {
        let want: Vec<(NodeKey, Properties)> = r
            .heaviest_edges(&hub, &weight, limit)
            .unwrap()
            .into_iter()
            .map(|(_, e, out)| {
                let far = if out { e.key.to } else { e.key.from };
                let props = r.node_props_named(&far, &names).unwrap().unwrap();
                (far, props)
            })
            .collect();
        assert_eq!(r.heaviest_neighbours(&hub, &weight, limit, &names).unwrap(), want, "{limit}");
    }
}

/// The removal generation moves with a vector deleted or replaced, a full-text document
/// deleted, or enrichment cleared, and not with new vectors or texts (builds off the writer
/// stay installable while stage 2 writes new ones).
#[test]
fn the_removal_generation_counts_removals_only() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let generation = |store: &Embedded| store.begin_read().unwrap().removal_generation().unwrap();
    let key = |i: usize| NodeKey::new("Event", format!("e{i}"));
    let mut w = store.begin_write().unwrap();
    w.set_embedding_model("m", 2).unwrap();
    for i in 0..3 {
        w.put_node(&Node { key: key(i), props: Properties::new() }).unwrap();
        w.put_vector(&key(i), &[i as f32, 1.0]).unwrap();
    }
    w.put_texts(&[(key(0), "alpha".into()), (key(1), "beta".into())]).unwrap();
    w.commit().unwrap();
    let g0 = generation(&store);
    assert_eq!(g0, Some(0));

    let mut w = store.begin_write().unwrap();
    w.put_node(&Node { key: key(3), props: Properties::new() }).unwrap();
    w.put_vector(&key(3), &[3.0, 1.0]).unwrap();
    w.put_texts(&[(key(3), "gamma".into())]).unwrap();
    w.set_vector_list(1, 0).unwrap();
    w.commit().unwrap();
    assert_eq!(generation(&store), g0, "new vectors and texts are no removal");

    // A replaced vector leaves the index and counts; the write transaction sees its own.
    let mut w = store.begin_write().unwrap();
    w.put_vector(&key(0), &[9.0, 9.0]).unwrap();
    assert_eq!(w.vector(&key(0)).unwrap(), Some(vec![9.0, 9.0]));
    assert_eq!(w.removal_generation().unwrap(), Some(1));
    w.commit().unwrap();
    assert_eq!(generation(&store), Some(1));
    assert_eq!(store.begin_read().unwrap().vector_counts().unwrap(), (4, 4));

    // A deleted node with a vector or a text counts; one with neither does not.
    let mut w = store.begin_write().unwrap();
    w.put_node(&Node { key: key(9), props: Properties::new() }).unwrap();
    w.commit().unwrap();
    let mut w = store.begin_write().unwrap();
    assert!(w.delete_node(&key(9)).unwrap());
    w.commit().unwrap();
    assert_eq!(generation(&store), Some(1));
    let mut w = store.begin_write().unwrap();
    assert!(w.delete_node(&key(1)).unwrap());
    w.commit().unwrap();
    assert_eq!(generation(&store), Some(2));
    let mut w = store.begin_write().unwrap();
    w.clear_enrichment().unwrap();
    w.commit().unwrap();
    assert_eq!(generation(&store), Some(3));
}

#[test]
fn meta_values_are_read_by_scan_beside_a_megabyte_of_centroids() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    w.set_embedding_model("m", 384).unwrap();
    w.put_ann_centroids(&vec![7u8; 1 << 20]).unwrap();
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    // A seek would compare the key with the centroids' overflowing cell, which reads it all.
    let plan: Vec<String> =
        r.tx.prepare(&format!("EXPLAIN QUERY PLAN {META_VALUE_SQL}"))
            .unwrap()
            .query_map(["ann_generation"], |row| row.get::<_, String>(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
    assert_eq!(plan, vec!["SCAN meta".to_owned()]);
    assert_eq!(r.ann_generation().unwrap(), 1);
    assert_eq!(r.embedding_model().unwrap(), Some(("m".to_owned(), 384)));
    assert_eq!(r.ann_centroids().unwrap().map(|c| c.len()), Some(1 << 20));
    assert_eq!(r.graph_generation().unwrap(), 0);
}

#[test]
fn a_store_is_mapped_as_far_as_sqlite_allows() {
    let dir = TempDir::new().unwrap();
    let store = open(&dir);
    let mapped: i64 = store.conn.query_row("PRAGMA mmap_size", [], |r| r.get(0)).unwrap();
    // The build raises SQLite's compile-time maximum (2 GiB less 64 KiB by default) so that a
    // large store is mapped whole.
    assert_eq!(mapped, super::MMAP_BYTES);
    store.set_mmap_bytes(0).unwrap();
    let mapped: i64 = store.conn.query_row("PRAGMA mmap_size", [], |r| r.get(0)).unwrap();
    assert_eq!(mapped, 0);
}

/// The bulk load's checkpoints: with the automatic checkpoint off, a second connection copies
/// the log while the first writes; what was committed meanwhile keeps the log from starting
/// over until the writer copies it too, and then the next write transaction starts it over.
#[test]
fn a_checkpointer_copies_the_log_beside_the_writer_and_the_log_starts_over() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    store.set_auto_checkpoint(false).unwrap();
    let checkpointer = store.checkpointer().unwrap();
    let append = |w: &mut EmbeddedWrite<'_>, from: usize| {
        for i in from..from + 200 {
            w.append(&record(&format!("e{i}"), "a"), "t0").unwrap();
        }
    };
    let mut w = store.begin_write().unwrap();
    append(&mut w, 0);
    w.commit().unwrap();
    let mut w = store.begin_write().unwrap();
    append(&mut w, 200);
    // A copy while the writer's transaction is open: it copies what was committed.
    let (checkpointer, first) = std::thread::spawn(move || {
        let copied = checkpointer.passive().unwrap();
        (checkpointer, copied)
    })
    .join()
    .unwrap();
    w.commit().unwrap();
    assert!(!first.busy);
    assert!(first.frames > 0 && first.copied == first.frames, "{first:?}");
    let mut w = store.begin_write().unwrap();
    append(&mut w, 400);
    w.commit().unwrap();
    let rest = store.checkpoint_passive().unwrap();
    assert!(rest.frames > first.frames && rest.copied == rest.frames, "{rest:?} after {first:?}");
    let mut w = store.begin_write().unwrap();
    append(&mut w, 600);
    w.commit().unwrap();
    let again = checkpointer.passive().unwrap();
    assert!(again.frames < rest.frames, "the log started over: {again:?} after {rest:?}");
    assert_eq!(store.begin_read().unwrap().head().unwrap(), 800);
    store.set_auto_checkpoint(true).unwrap();
}

/// A writer with a `WalCopier`: nothing is copied below its copy size; past it the log is
/// copied on the copier's thread, the writer's next upkeep copies what was committed meanwhile,
/// and the write after that starts the log over.
#[test]
fn a_wal_copier_copies_the_log_off_the_writer_and_the_log_starts_over() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    store.set_auto_checkpoint(false).unwrap();
    let mut next = 0;
    let mut write = |store: &mut Embedded| {
        let mut w = store.begin_write().unwrap();
        for i in next..next + 200 {
            w.append(&record(&format!("e{i}"), "a"), "t0").unwrap();
        }
        w.commit().unwrap();
        next += 200;
    };
    // Below the copy size: no copy.
    let unused = WalCopier::new("test-wal-unused");
    write(&mut store);
    unused.after_commit(&store).unwrap();
    assert!(!unused.copying());
    let ran = Arc::new(AtomicBool::new(false));
    let on_thread = Arc::clone(&ran);
    let copier = WalCopier::new("test-wal")
        .copy_at(0)
        .on_thread(move || on_thread.store(true, Ordering::SeqCst));
    copier.after_commit(&store).unwrap();
    write(&mut store);
    copier.wait();
    assert!(ran.load(Ordering::SeqCst), "the copy ran on the copier's thread");
    assert!(!copier.copying());
    // The copy is done: the writer copies the frames committed meanwhile.
    copier.after_commit(&store).unwrap();
    write(&mut store);
    let last = store.checkpoint_passive().unwrap();
    // A write after a log copied whole: the frames of one write.
    write(&mut store);
    let one = store.checkpoint_passive().unwrap();
    assert!(!last.busy && one.frames > 0, "{last:?} {one:?}");
    // The log held only the last write's frames: it started over (without the writer's copy
    // it would hold the two writes since the copy began).
    assert!(last.frames < one.frames * 3 / 2, "{last:?} against one write's {one:?}");
    assert_eq!(store.begin_read().unwrap().head().unwrap(), 800);
    store.set_auto_checkpoint(true).unwrap();
}

#[test]
fn reads_of_many_ids_answer_as_the_reads_of_each_in_the_order_given() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let mut w = store.begin_write().unwrap();
    let key = |i: usize| NodeKey::new("Event", format!("e{i}"));
    for i in 0..40 {
        let mut props = Properties::new();
        props.insert("n".into(), i.into());
        w.put_node(&Node { key: key(i), props }).unwrap();
        // Every third node has no vector.
        if i % 3 != 0 {
            w.put_vector(&key(i), &[i as f32, -1.0, 0.25]).unwrap();
        }
    }
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    let mut nids: Vec<i64> =
        (0..40).map(|i| r.vector_list(&key(i)).unwrap().map_or(0, |v| v.0)).collect();
    nids.retain(|&n| n != 0);
    let all: Vec<i64> =
        r.node_keys(&(1..=60).collect::<Vec<_>>()).unwrap().iter().map(|k| k.0).collect();
    // Ids out of order, repeated, and unknown.
    let mut asked: Vec<i64> = all.iter().rev().copied().step_by(3).collect();
    asked.extend([all[5], 9_999, all[5], -1, all[0]]);
    // The default body (the keys, then the nodes by key) is the reference.
    let keys: std::collections::BTreeMap<i64, NodeKey> =
        r.node_keys(&asked).unwrap().into_iter().collect();
    let expected: Vec<Option<Node>> =
        asked.iter().map(|nid| keys.get(nid).and_then(|k| r.node(k).unwrap())).collect();
    assert_eq!(r.nodes_by_nid(&asked).unwrap(), expected);
    assert!(expected.iter().filter(|n| n.is_none()).count() == 2, "the unknown ids");
    assert_eq!(r.nodes_by_nid(&[]).unwrap(), Vec::<Option<Node>>::new());
    drop(r);
    let w = store.begin_write().unwrap();
    assert_eq!(w.nodes_by_nid(&asked).unwrap(), expected);
    drop(w);
    // Vectors: visited in the order given, each time asked, none for an id without one.
    let mut asked: Vec<i64> = all.iter().rev().copied().collect();
    asked.extend([all[1], 9_999, all[1]]);
    let r = store.begin_read().unwrap();
    let mut expected = Vec::new();
    for &nid in &asked {
        let Some(k) = keys_of(&r, nid) else { continue };
        if let Some(v) = r.vector(&k).unwrap() {
            expected.push((nid, v));
        }
    }
    let mut visited = Vec::new();
    r.scan_vectors_of(&asked, &mut |nid, v| visited.push((nid, v.to_vec()))).unwrap();
    assert_eq!(visited, expected);
    assert_eq!(visited.len(), 26 + 2, "two thirds of the nodes, and one asked three times");
    let mut none = Vec::new();
    r.scan_vectors_of(&[], &mut |nid, _| none.push(nid)).unwrap();
    assert!(none.is_empty());
}

fn keys_of(r: &EmbeddedRead<'_>, nid: i64) -> Option<NodeKey> {
    r.node_keys(&[nid]).unwrap().pop().map(|(_, k)| k)
}

#[test]
fn a_format_4_store_keeps_each_vectors_list_in_format_5() {
    let dir = TempDir::new().unwrap();
    let path = dir.path().join("v4.ctxg");
    {
        let c = Connection::open(&path).unwrap();
        for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v <= 4) {
            c.execute_batch(sql).unwrap();
            c.pragma_update(None, "user_version", version).unwrap();
        }
        c.pragma_update(None, "application_id", APPLICATION_ID).unwrap();
        c.execute_batch(
            "INSERT INTO nodes (nid, label, id, props) VALUES (1, 'Event', 'a', '{}'),
                 (2, 'Event', 'b', '{}'), (3, 'Event', 'c', '{}');
             INSERT INTO vectors (nid, data, list) VALUES (1, x'0000803f', 3),
                 (2, x'0000803f', NULL), (3, x'00000040', 0);",
        )
        .unwrap();
    }
    let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
    let r = store.begin_read().unwrap();
    let list = |id: &str| r.vector_list(&NodeKey::new("Event", id)).unwrap();
    assert_eq!(
        (list("a"), list("b"), list("c")),
        (Some((1, Some(3))), Some((2, None)), Some((3, Some(0))))
    );
    assert_eq!(r.vector_counts().unwrap(), (3, 1));
    let mut outside = Vec::new();
    r.scan_unindexed_vectors(&mut |nid, v| outside.push((nid, v.to_vec()))).unwrap();
    assert_eq!(outside, [(2, vec![1.0])]);
    let columns: Vec<String> = store
        .conn
        .prepare("SELECT name FROM pragma_table_info('vectors')")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(columns, ["nid", "data"]);
}

#[test]
fn the_list_of_each_vector_follows_builds_replacements_and_deletions() {
    let dir = TempDir::new().unwrap();
    let mut store = open(&dir);
    let key = |i: usize| NodeKey::new("Event", format!("e{i}"));
    let mut w = store.begin_write().unwrap();
    for i in 0..40 {
        w.put_node(&Node { key: key(i), props: Properties::new() }).unwrap();
        w.put_vector(&key(i), &[i as f32, 1.0]).unwrap();
    }
    w.commit().unwrap();
    let mut w = store.begin_write().unwrap();
    w.clear_ann_index_refiled().unwrap();
    for i in 0..30 {
        let nid = w.vector_list(&key(i)).unwrap().unwrap().0;
        w.set_vector_list(nid, (i % 4) as u32).unwrap();
    }
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    assert_eq!(r.vector_counts().unwrap(), (40, 10));
    assert_eq!(r.vector_list(&key(5)).unwrap().map(|l| l.1), Some(Some(1)));
    assert_eq!(r.vector_list(&key(35)).unwrap().map(|l| l.1), Some(None));
    drop(r);
    // Replacing a vector takes it out of the index; deleting its node takes its list too.
    let mut w = store.begin_write().unwrap();
    w.put_vector(&key(5), &[0.5, 0.5]).unwrap();
    assert!(w.delete_node(&key(6)).unwrap());
    w.commit().unwrap();
    let r = store.begin_read().unwrap();
    assert_eq!(r.vector_list(&key(5)).unwrap().map(|l| l.1), Some(None));
    assert_eq!(r.vector_counts().unwrap(), (39, 11));
    let orphans: i64 = store
        .conn
        .query_row(
            "SELECT count(*) FROM vector_lists WHERE nid NOT IN (SELECT nid FROM vectors)",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0);
}
