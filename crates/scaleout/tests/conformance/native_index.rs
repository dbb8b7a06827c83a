//! FalkorDB's own indexes as the search prefilter: the vector index's candidates, re-ranked
//! exactly with the stored vectors, give the exact nearest neighbours; deleted nodes leave it.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_scaleout::{BatchFold, FalkorGraph, ScaleOutStore, Stage2Write};
use ctxgraph_store::{EnrichCommit, EnrichWrite, GraphReader, ProjectionGraph, RemoteStore};

use crate::graph_harness::FalkorBackend;
use crate::harness::admin;

const DIM: usize = 24;

fn key(i: usize) -> NodeKey {
    NodeKey { label: "Entity".to_owned(), id: format!("e{i}") }
}

/// A deterministic pseudo-random unit vector (a linear congruential generator seeded by `seed`).
fn unit(seed: u64) -> Vec<f32> {
    let mut x =
        seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
    let mut v: Vec<f32> = (0..DIM)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.iter_mut().for_each(|a| *a /= norm);
    v
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The best `k` of `(nid, score)`, best first, ties by nid (the engine's order).
fn best(mut scored: Vec<(i64, f32)>, k: usize) -> Vec<i64> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.into_iter().take(k).map(|(nid, _)| nid).collect()
}

/// Every stored vector scored against `query`: the exact ranking.
fn exact(read: &FalkorGraph, query: &[f32], k: usize) -> Vec<i64> {
    let all = GraphReader::vectors_page(read, -1, 100_000).unwrap();
    best(all.iter().map(|v| (v.nid, dot(query, &v.vector))).collect(), k)
}

/// The native index's candidates re-ranked with the stored vectors, as the engine does.
fn prefiltered(read: &FalkorGraph, query: &[f32], want: usize, k: usize) -> Vec<i64> {
    let ids = GraphReader::native_nearest(read, query, want, 0).unwrap().expect("a native index");
    assert!(ids.len() >= want.min(GraphReader::vector_counts(read).unwrap().0 as usize));
    let mut scored = Vec::new();
    GraphReader::scan_vectors_of(read, &ids, &mut |nid, v| scored.push((nid, dot(query, v))))
        .unwrap();
    best(scored, k)
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn the_vector_index_prefilter_gives_the_exact_nearest_neighbours() {
    let b = FalkorBackend::new();
    let n = 400;
    let read = FalkorGraph::connect_read(b.url()).unwrap();
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for i in 0..n {
        let node = Node { key: key(i), props: serde_json::from_str("{}").unwrap() };
        batch.put_node(&node).unwrap();
    }
    assert!(batch.commit(1).unwrap());
    // No vector yet: no index to search, the search scans.
    assert_eq!(GraphReader::native_nearest(&read, &unit(1), 10, 0).unwrap(), None);
    let store = ScaleOutStore::connect(b.url()).unwrap();
    let before = store.begin_read().unwrap();
    assert_eq!(before.native_nearest(&unit(1), 10, 0).unwrap(), None);

    // Two commits: the second adds to an index the first created.
    for part in [0..n / 2, n / 2..n] {
        let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
        for i in part {
            tx.put_vector(&key(i), &unit(i as u64)).unwrap();
        }
        tx.set_embedding_model("test-model", DIM).unwrap();
        tx.set_enriched_through(1).unwrap();
        assert!(Box::new(tx).commit().unwrap());
    }
    assert_eq!(GraphReader::vector_counts(&read).unwrap().0, n as u64);
    // As few vectors outside the IVF index as the caller would rather scan: no candidates.
    let few = GraphReader::native_nearest(&read, &unit(1), 10, n as u64).unwrap();
    assert_eq!(few, None);
    assert!(GraphReader::native_nearest(&read, &unit(1), 10, n as u64 - 1).unwrap().is_some());
    // A read view answers from its memo of the index's state (read once, with its other state
    // keys) as a live read does; one begun before the vectors keeps its point in time.
    let view = store.begin_read().unwrap();
    for scan_up_to in [0, n as u64 - 1, n as u64] {
        for q in [1, 77] {
            assert_eq!(
                view.native_nearest(&unit(q), 10, scan_up_to).unwrap(),
                GraphReader::native_nearest(&read, &unit(q), 10, scan_up_to).unwrap(),
                "{scan_up_to} {q}"
            );
        }
    }
    assert_eq!(before.native_nearest(&unit(1), 10, 0).unwrap(), None);
    drop((view, before));
    for q in 0..20u64 {
        let query = unit(10_000 + q);
        assert_eq!(prefiltered(&read, &query, 100, 10), exact(&read, &query, 10), "query {q}");
    }
    // A stored vector is its own nearest neighbour.
    let nids: BTreeMap<NodeKey, i64> = GraphReader::vectors_page(&read, -1, 100_000)
        .unwrap()
        .into_iter()
        .map(|v| (v.key, v.nid))
        .collect();
    assert_eq!(prefiltered(&read, &unit(7), 20, 1), [nids[&key(7)]]);

    // A rewritten vector is found where it now points; deleted nodes leave the index and do
    // not shorten its answer.
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    tx.put_vector(&key(3), &unit(99_999)).unwrap();
    tx.set_enriched_through(2).unwrap();
    assert!(Box::new(tx).commit().unwrap());
    assert_eq!(prefiltered(&read, &unit(99_999), 20, 1), [nids[&key(3)]]);
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for i in 0..60 {
        assert!(batch.delete_node(&key(i)).unwrap());
    }
    assert!(batch.commit(2).unwrap());
    let gone: Vec<i64> = (0..60).map(|i| nids[&key(i)]).collect();
    for q in 0..20u64 {
        let query = unit(20_000 + q);
        let found = GraphReader::native_nearest(&read, &query, 50, 0).unwrap().unwrap();
        assert!(found.iter().all(|nid| !gone.contains(nid)), "query {q}: a deleted vector");
        assert_eq!(prefiltered(&read, &query, 50, 10), exact(&read, &query, 10), "query {q}");
    }
    // The deleted nodes' copies left the graph with them.
    let mut conn = admin(b.url());
    let rows: redis::Value = redis::cmd("GRAPH.QUERY")
        .arg(b.graph.graph_name())
        .arg("MATCH (v:_Vector) RETURN count(v)")
        .query(&mut conn)
        .unwrap();
    assert!(format!("{rows:?}").contains(&format!("int({})", n - 60)), "{rows:?}");
    let prefix = b.url().key_prefix();
    let stage2 = ["vectors", "vector_ids", "node_keys", "embedding", "native_vectors"];
    let _: redis::Value = redis::cmd("DEL")
        .arg(stage2.map(|s| format!("{prefix}{s}")).to_vec())
        .query(&mut conn)
        .unwrap();
}
