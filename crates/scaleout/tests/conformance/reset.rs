//! A reset of a store's derived data is one transaction that every other transaction of the
//! store sees: a fold page, an enrichment and a consolidation begun before it apply nothing
//! after it, and what it leaves is an empty graph (or no stage-2 data) with every checkpoint
//! at 0, numbered from 1 again.

use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_scaleout::{BatchFold, ConsolidateWrite, FalkorGraph, RedisLog, Stage2Write};
use ctxgraph_store::{
    ConsolidateCommit, EnrichCommit, EnrichWrite, GraphReader, GraphStore, ProjectionGraph,
};

use crate::graph_harness::FalkorBackend;
use crate::harness::admin;

fn key(id: &str) -> NodeKey {
    NodeKey { label: "Entity".to_owned(), id: id.to_owned() }
}

fn node(id: &str) -> Node {
    Node { key: key(id), props: serde_json::from_value(serde_json::json!({"n": id})).unwrap() }
}

/// Stage 2's and stage 3's keys that hold data.
const DATA: [&str; 14] = [
    "vectors",
    "vector_ids",
    "doc_terms",
    "text_ids",
    "node_keys",
    "postings",
    "text_build",
    "embedding",
    "vector_lists",
    "ann_centroids",
    "ann_lists",
    "native_vectors",
    "native_texts",
    "text_tokens",
];

/// How many copies of vectors and documents FalkorDB's own indexes hold (`_Vector`, `_Text`).
fn copies(b: &FalkorBackend) -> [String; 2] {
    let mut conn = admin(b.url());
    ["_Vector", "_Text"].map(|label| {
        let rows: redis::Value = redis::cmd("GRAPH.QUERY")
            .arg(b.graph.graph_name())
            .arg(format!("MATCH (n:{label}) RETURN count(n)"))
            .query(&mut conn)
            .unwrap();
        format!("{rows:?}")
    })
}

/// Two nodes folded through position 2, each with a vector and a document, enriched through 2.
fn folded_and_enriched(b: &FalkorBackend) {
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for id in ["a", "b"] {
        batch.put_node(&node(id)).unwrap();
    }
    assert!(batch.commit(2).unwrap());
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    for (i, id) in ["a", "b"].into_iter().enumerate() {
        tx.put_vector(&key(id), &[i as f32, 1.0]).unwrap();
    }
    tx.put_texts(&[(key("a"), "alpha words".to_owned()), (key("b"), "beta words".to_owned())])
        .unwrap();
    tx.set_embedding_model("m", 2).unwrap();
    tx.set_enriched_through(2).unwrap();
    // The lexical index too, so the reset has its lists and build to drop.
    tx.rebuild_lexical_index();
    assert!(Box::new(tx).commit().unwrap());
}

/// How many of stage 2's and 3's data keys exist, and the counters `(projected_through,
/// node_seq, enriched_through, consolidated_through)` as stored.
fn state(b: &FalkorBackend) -> (usize, [Option<u64>; 4]) {
    let prefix = b.url().key_prefix();
    let mut conn = admin(b.url());
    let exists: usize = redis::cmd("EXISTS")
        .arg(DATA.map(|k| format!("{prefix}{k}")).to_vec())
        .query(&mut conn)
        .unwrap();
    let counters: Vec<Option<u64>> = redis::cmd("MGET")
        .arg(
            ["projected_through", "node_seq", "enriched_through", "consolidated_through"]
                .map(|k| format!("{prefix}{k}"))
                .to_vec(),
        )
        .query(&mut conn)
        .unwrap();
    (exists, [counters[0], counters[1], counters[2], counters[3]])
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_reset_of_the_projection_fails_every_transaction_begun_before_it_and_empties_the_store() {
    let b = FalkorBackend::new();
    folded_and_enriched(&b);
    assert!(state(&b).0 > 0, "stage 2 wrote its keys");

    // A fold page, an enrichment and a consolidation, each begun before the reset.
    let mut page = BatchFold::new(&b.graph).unwrap();
    page.put_node(&node("c")).unwrap();
    let mut enrich = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    enrich.put_vector(&key("a"), &[9.0, 9.0]).unwrap();
    enrich.set_enriched_through(3).unwrap();
    let log = RedisLog::connect(b.url()).unwrap();
    let mut consolidate =
        ConsolidateWrite::begin(FalkorGraph::connect_read(b.url()).unwrap(), log).unwrap();
    consolidate.put_ann_centroids(&[1, 2, 3]).unwrap();

    FalkorGraph::connect_read(b.url()).unwrap().reset_projection().unwrap();
    assert!(!page.commit(3).unwrap(), "the fold's page saw the reset");
    assert!(!Box::new(enrich).commit().unwrap(), "the enrichment saw the reset");
    assert!(!Box::new(consolidate).commit().unwrap(), "the consolidation saw the reset");

    let read = FalkorGraph::connect_read(b.url()).unwrap();
    assert_eq!(GraphReader::counts(&read).unwrap(), Default::default());
    assert_eq!(state(&b), (0, [Some(0), Some(0), Some(0), Some(0)]));
    assert_eq!(GraphReader::vector_counts(&read).unwrap(), (0, 0));
    assert_eq!(GraphReader::ann_centroids(&read).unwrap(), None);

    // Folded again from the start, nodes are numbered from 1 again.
    let mut page = BatchFold::new(&b.graph).unwrap();
    page.put_node(&node("b")).unwrap();
    assert!(page.commit(1).unwrap());
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    tx.put_vector(&key("b"), &[1.0, 0.0]).unwrap();
    tx.set_enriched_through(1).unwrap();
    assert!(Box::new(tx).commit().unwrap());
    let page = GraphReader::vectors_page(&read, -1, 10).unwrap();
    assert_eq!(page.iter().map(|v| (v.nid, v.key.clone())).collect::<Vec<_>>(), [(1, key("b"))]);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_reset_of_the_enrichment_drops_stage_two_and_keeps_the_graph() {
    let b = FalkorBackend::new();
    folded_and_enriched(&b);
    let mut enrich = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    enrich.set_enriched_through(3).unwrap();
    let read = FalkorGraph::connect_read(b.url()).unwrap();
    let counts = GraphReader::counts(&read).unwrap();
    assert!(copies(&b).iter().all(|c| c.contains("int(2)")), "{:?}", copies(&b));

    read.reset_enrichment().unwrap();
    assert!(copies(&b).iter().all(|c| c.contains("int(0)")), "{:?}", copies(&b));
    assert!(!Box::new(enrich).commit().unwrap(), "the enrichment saw the reset");
    assert_eq!(GraphReader::counts(&read).unwrap(), counts);
    assert_eq!(ProjectionGraph::node(&read, &key("a")).unwrap(), Some(node("a")));
    let (data, [through, seq, enriched, consolidated]) = state(&b);
    assert_eq!((data, through, enriched, consolidated), (0, Some(2), Some(0), Some(0)));
    assert!(seq.is_some_and(|s| s >= 2), "the node numbers go on");
    assert_eq!(GraphReader::embedding_model(&read).unwrap(), None);
}
