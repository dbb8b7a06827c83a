//! Entities looked up by name: a graph folded from empty records its named layout, and recall's
//! read of which candidate entity ids exist (`ManyRead::ExistingIds` of the label Entity)
//! answers by name exactly what the embedded store's id lookup answers, hostile names, ids
//! without a type and ids given twice included; a graph whose entities lack the name (folded
//! by an earlier build) answers the same by ids, and `reproject`'s reset brings the names back.

use ctxgraph_ontology::{Limits, Schema, ValidRecord, entity_id, validate};
use ctxgraph_scaleout::{FalkorGraph, ScaleOutStore, catch_up};
use ctxgraph_store::{Embedded, GraphReader, ManyRead, OpenMode, RemoteStore, StoreRead};
use serde_json::json;

use crate::harness::RedisBackend;

/// Names no query text may be built from: quotes, backslashes, Cypher, separators, Unicode.
const HOSTILE: &[&str] = &[
    r#"q"uote'd"#,
    r"back\slash\\'",
    "'}) MATCH (n) DETACH DELETE n //",
    "$names",
    "ünïcødé-🦀 日本",
    "src/a:b.rs",
    "CYPHER names=['x'] RETURN 1",
    "`tick`",
    "Read File",
];

/// Events mentioning every hostile name as entities of three types (names that ids, such as
/// a tool's, could not hold), and the synthetic trace's usual names.
fn records(schema: &Schema) -> Vec<ValidRecord> {
    let mut texts: Vec<String> = ctxgraph_synth::trace(&ctxgraph_synth::TraceConfig {
        events: 60,
        seed: 5,
        ..ctxgraph_synth::TraceConfig::default()
    })
    .map(|e| e.to_string())
    .collect();
    for (i, name) in HOSTILE.iter().enumerate() {
        texts.push(
            json!({
                "event_id": format!("ev-hostile-{i}"), "event_type": "tool.execute",
                "session_id": "s-hostile", "agent_id": format!("agent-{i}"), "trace_id": "t-hostile",
                "tool_name": format!("tool-{i}"), "status": "completed",
                "occurred_at": format!("2026-11-20T10:{i:02}:00Z"),
                "entities": [
                    {"name": name, "entity_type": "tool", "role": "instrument"},
                    {"name": name, "entity_type": "resource", "role": "object"},
                    {"name": HOSTILE[(i + 1) % HOSTILE.len()], "entity_type": "service",
                     "role": "participant"},
                ],
            })
            .to_string(),
        );
    }
    // An edge between two entities the same page creates: the fold creates both with the
    // edge in one query (`born.rs`), and they must be named as any other.
    texts.push(
        json!({
            "record_type": "edge", "edge_id": "x-hostile", "edge_type": "RELATED_TO",
            "from": {"label": "Entity", "id": entity_id("tool", HOSTILE[0])},
            "to": {"label": "Entity", "id": entity_id("service", HOSTILE[1])},
            "properties": {"confidence": 0.5, "justification": "one family"},
        })
        .to_string(),
    );
    texts.iter().map(|t| validate(schema, &Limits::default(), t).unwrap()).collect()
}

/// Candidate ids as recall makes them (every name under every entity type), plus ids of no
/// entity, an id without a type, an empty name, and ids given twice, in a mixed order.
fn candidates(schema: &Schema, e: &dyn GraphReader) -> Vec<String> {
    let types: Vec<String> = schema
        .enum_def("entity_type")
        .map(|d| d.values.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let mut names: Vec<String> = HOSTILE.iter().map(|n| (*n).to_owned()).collect();
    names.extend(
        e.nodes_by_label("Entity", None, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|n| n.props["name"].as_str().map_or_else(|| n.key.id.clone(), str::to_owned)),
    );
    names.extend(["no such name".to_owned(), String::new(), "agent".to_owned()]);
    let mut ids: Vec<String> = Vec::new();
    for name in &names {
        for ty in &types {
            ids.push(entity_id(ty, name));
        }
    }
    ids.extend(["no-colon".to_owned(), "tool:".to_owned()]);
    let repeated: Vec<String> = ids.iter().step_by(7).cloned().collect();
    ids.extend(repeated);
    ids.reverse();
    ids
}

/// Which of `ids` exist as Entity nodes, read as recall reads them (with other reads, in a
/// fresh view of a fresh connection).
fn existing(url: &ctxgraph_scaleout::StoreUrl, ids: &[String]) -> Vec<String> {
    let store = ScaleOutStore::connect(url).unwrap();
    let read = store.begin_read().unwrap();
    let f: &dyn StoreRead = &*read;
    let none: Vec<String> = Vec::new();
    let reads = [
        ManyRead::ExistingIds { label: "Entity", ids },
        ManyRead::ExistingIdsByLabel { labels: &["Event"], ids: &none },
    ];
    let mut answers = f.read_together(&reads).unwrap().into_iter();
    let together = answers.next().unwrap().into_ids().unwrap();
    // Alone, and in a second read of the same view.
    assert_eq!(f.existing_ids("Entity", ids).unwrap(), together);
    together
}

/// [`existing`] read on a second connection of the store, opened while the first is held by
/// another read view: its first read (planned before its view's state keys arrive) looks
/// entities up as the first connection does.
fn existing_on_a_new_connection(url: &ctxgraph_scaleout::StoreUrl, ids: &[String]) -> Vec<String> {
    let store = ScaleOutStore::connect(url).unwrap();
    let held = store.begin_read().unwrap();
    let read = store.begin_read().unwrap();
    let f: &dyn StoreRead = &*read;
    let reads = [ManyRead::ExistingIds { label: "Entity", ids }];
    let found = f.read_together(&reads).unwrap().into_iter().next().unwrap().into_ids().unwrap();
    drop(held);
    found
}

/// The layout version key of a store.
fn layout(redis: &mut RedisBackend) -> Option<String> {
    let key = format!("{}layout", redis.url().key_prefix());
    redis::cmd("GET").arg(key).query(redis.admin()).unwrap()
}

/// Run a Cypher write on the store's graph.
fn cypher(redis: &mut RedisBackend, graph: &FalkorGraph, query: &str) {
    redis::cmd("GRAPH.QUERY")
        .arg(graph.graph_name())
        .arg(query)
        .query::<redis::Value>(redis.admin())
        .unwrap();
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn entities_found_by_name_are_the_ids_found_by_id_in_either_layout() {
    let schema = Schema::core().unwrap();
    let records = records(&schema);
    let dir = tempfile::TempDir::new().unwrap();
    let mut embedded =
        Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = embedded.begin_write().unwrap();
    crate::projection::fold(&schema, &mut w, &records, 1);
    w.commit().unwrap();
    let e = embedded.begin_read().unwrap();
    let ids = candidates(&schema, &e);
    let want = e.existing_ids("Entity", &ids).unwrap();
    assert!(want.len() > 3 * HOSTILE.len(), "{want:?}");
    for name in HOSTILE {
        assert!(want.contains(&entity_id("tool", name)), "{name}");
    }

    let mut redis = RedisBackend::new();
    redis.log().append_batch(&records.iter().collect::<Vec<_>>(), "t").unwrap();
    let graph = FalkorGraph::connect(redis.url(), &schema).unwrap();
    // In steps: entities created on the first page and updated on later ones keep the name.
    while catch_up(&schema, redis.log(), &graph, 23).unwrap() > 0 {}
    assert_eq!(layout(&mut redis).as_deref(), Some("2"), "a fold from empty names entities");
    assert_eq!(existing(redis.url(), &ids), want, "found by name");
    assert_eq!(existing(redis.url(), &[]), Vec::<String>::new());

    // The lookup goes by name: with the names gone and the layout left, nothing is found.
    cypher(&mut redis, &graph, "MATCH (n:Entity) REMOVE n.name");
    assert_eq!(existing(redis.url(), &ids), Vec::<String>::new(), "the read is by name");
    let second = existing_on_a_new_connection(redis.url(), &ids);
    assert_eq!(second, Vec::<String>::new(), "a second connection reads by name too");

    // A graph folded by an earlier build (no names, no layout): found by id, the same.
    let key = format!("{}layout", redis.url().key_prefix());
    redis::cmd("DEL").arg(&key).query::<i64>(redis.admin()).unwrap();
    assert_eq!(existing(redis.url(), &ids), want, "an older layout read by ids");
    // Folding on from there names new entities but not the old ones: still the older layout.
    assert_eq!(layout(&mut redis), None);

    // A rebuild from the log (`reproject`) names them all again.
    graph.reset_projection().unwrap();
    assert_eq!(layout(&mut redis).as_deref(), Some("2"));
    while catch_up(&schema, redis.log(), &graph, usize::MAX).unwrap() > 0 {}
    assert_eq!(existing(redis.url(), &ids), want, "found by name after the rebuild");
}
