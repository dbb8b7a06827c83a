//! The scale-out graph tells its node generation (`GraphReader::node_generation`), which the
//! engine's cache of nodes read by key is tagged with: every commit that writes a node moves
//! it, in the commit's own transaction, stage 2's property writes included; a commit that
//! writes only vectors or documents leaves it. A store dropped and made again, whose counter
//! starts over, never shows a generation of its earlier life.

use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_scaleout::{BatchFold, FalkorGraph, Stage2Write};
use ctxgraph_store::{EnrichCommit, EnrichWrite, GraphReader, ProjectionGraph};

use crate::graph_harness::FalkorBackend;

fn key(id: &str) -> NodeKey {
    NodeKey { label: "Entity".to_owned(), id: id.to_owned() }
}

fn node(id: &str, summary: &str) -> Node {
    Node {
        key: key(id),
        props: serde_json::from_value(serde_json::json!({"summary": summary})).unwrap(),
    }
}

/// The node generation a new read sees.
fn generation(b: &FalkorBackend) -> u64 {
    let read = FalkorGraph::connect_read(b.url()).unwrap();
    GraphReader::node_generation(&read)
        .unwrap()
        .expect("the scale-out graph tells its node generation")
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn every_commit_that_writes_a_node_moves_the_node_generation() {
    let b = FalkorBackend::new();
    let start = generation(&b);
    let mut batch = BatchFold::new(&b.graph).unwrap();
    batch.put_node(&node("a", "folded")).unwrap();
    assert!(batch.commit(1).unwrap());
    let folded = generation(&b);
    assert_ne!(folded, start, "a fold page moves it");

    // Stage 2 writing vectors only leaves it.
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    tx.put_vector(&key("a"), &[1.0, 0.0]).unwrap();
    tx.set_enriched_through(1).unwrap();
    assert!(Box::new(tx).commit().unwrap());
    assert_eq!(generation(&b), folded);

    // Stage 2 writing a node's properties moves it, and a read at the new generation gets
    // the new properties.
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    tx.put_node_owned(node("a", "enriched")).unwrap();
    assert!(Box::new(tx).commit().unwrap());
    let enriched = generation(&b);
    assert_ne!(enriched, folded, "a stage-2 property write moves it");
    let read = FalkorGraph::connect_read(b.url()).unwrap();
    let got = GraphReader::node(&read, &key("a")).unwrap().unwrap();
    assert_eq!(got.props["summary"], "enriched");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_store_made_again_never_repeats_a_generation_of_its_earlier_life() {
    let b = FalkorBackend::new();
    let fold = |id: &str, through: u64| {
        let mut batch = BatchFold::new(&b.graph).unwrap();
        batch.put_node(&node(id, "x")).unwrap();
        assert!(batch.commit(through).unwrap());
        generation(&b)
    };
    let first = [fold("a", 1), fold("b", 2)];
    // Every key of the store deleted, as `drop` does; the same commits again count the same.
    let mut conn = crate::harness::admin(b.url());
    let keys = crate::harness::all_keys(&mut conn);
    let prefix = b.url().key_prefix();
    for key in keys.iter().filter(|k| k.starts_with(prefix.as_bytes())) {
        let _: () = redis::cmd("DEL").arg(key.as_slice()).query(&mut conn).unwrap();
    }
    let again = [fold("a", 1), fold("b", 2)];
    for g in again {
        assert!(!first.contains(&g), "{g} was a generation of the store's earlier life: {first:?}");
    }
    assert_ne!(again[0], again[1]);
}
