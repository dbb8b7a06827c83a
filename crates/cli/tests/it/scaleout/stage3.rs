//! Stage 3 (consolidation) on the scale-out backend: `worker --stage consolidate` against a
//! real server gives the summaries, similarity and resolution edges, vector index and recall
//! packs of a store file consolidated from the same log, and a stage-3 transaction is applied
//! whole or not at all.

use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_scaleout::{FalkorGraph, ScaleOutStore, StoreUrl};
use ctxgraph_store::{Embedded, EnrichWrite, GraphReader, GraphStore, OpenMode, RemoteStore};
use tempfile::TempDir;

use super::stage2::{fold_both, without_access_times};
use super::{ctxgraph, fresh_store, json_of, normalised};

/// Every stage folded by its worker, each to its head.
fn run_all(dir: &TempDir, to: &str) {
    fold_both(dir, to);
    let (code, err) = ctxgraph(dir, to, &["worker", "--stage", "consolidate", "--once"]);
    assert_eq!(code, 0, "{err}");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_consolidation_worker_gives_the_derived_graph_and_recall_of_a_consolidated_store_file() {
    let dir = TempDir::new().unwrap();
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo-trace.jsonl");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", trace]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["consolidate"]);
    assert_eq!(code, 0, "{err}");

    let to = fresh_store();
    json_of(&dir, &to, &["ingest", trace]);
    for args in [&["worker", "--once"][..], &["worker", "--stage", "enrich", "--once"]] {
        let (code, err) = ctxgraph(&dir, &to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let before = json_of(&dir, &to, &["stats"]);
    assert_eq!(before["consolidated_through"].as_u64(), Some(0), "{before}");
    let run = json_of(&dir, &to, &["worker", "--stage", "consolidate", "--once", "--name", "c-1"]);
    assert_eq!(run["consolidations"].as_u64(), Some(1), "{run}");
    assert_eq!(run["consolidated_through"].as_u64(), Some(400), "{run}");
    assert!(run["summaries"].as_u64().unwrap() > 0, "{run}");
    // Nothing enriched since: a second worker has nothing to do.
    let again = json_of(&dir, &to, &["worker", "--stage", "consolidate", "--once"]);
    assert_eq!(again["consolidations"].as_u64(), Some(0), "{again}");
    let after = json_of(&dir, &to, &["stats"]);
    assert_eq!(after["consolidated_through"].as_u64(), Some(400), "{after}");

    // The same graph: nodes per label and edges per type, the summaries with their
    // properties, every derived edge, the vector index.
    let url = StoreUrl::parse(&to).unwrap();
    let remote = FalkorGraph::connect_read(&url).unwrap();
    let file = Embedded::open(&dir.path().join("file.ctxg"), OpenMode::MustExist).unwrap();
    let file = file.begin_read().unwrap();
    assert_eq!(GraphReader::counts(&remote).unwrap(), file.counts().unwrap());
    let summaries = file.nodes_by_label("Summary", None, 10_000).unwrap();
    assert!(!summaries.is_empty());
    assert_eq!(remote.nodes_by_label("Summary", None, 10_000).unwrap(), summaries);
    for edge_type in ["SUMMARIZES", "SIMILAR_TO", "RELATED_TO", "SAME_AS"] {
        let want = file.edges_by_type(edge_type, None, 100_000).unwrap();
        assert_eq!(remote.edges_by_type(edge_type, None, 100_000).unwrap(), want, "{edge_type}");
    }
    assert_eq!(GraphReader::vector_counts(&remote).unwrap(), file.vector_counts().unwrap());
    assert_eq!(GraphReader::ann_centroids(&remote).unwrap(), file.ann_centroids().unwrap());
    assert!(file.ann_centroids().unwrap().is_some(), "the index was built");
    for list in 0..4 {
        assert_eq!(GraphReader::ann_list(&remote, list).unwrap(), file.ann_list(list).unwrap());
    }
    assert_eq!(GraphReader::text_index_build(&remote).unwrap(), file.text_index_build().unwrap());
    // Every vector filed under the same list, none left for the exact scan.
    for node in file.nodes_by_label("Event", None, 10_000).unwrap() {
        let want = file.vector_list(&node.key).unwrap();
        assert!(want.is_some_and(|(_, list)| list.is_some()), "{:?}", node.key);
        assert_eq!(GraphReader::vector_list(&remote, &node.key).unwrap(), want, "{:?}", node.key);
    }
    let mut unindexed = 0;
    GraphReader::scan_unindexed_vectors(&remote, &mut |_, _| unindexed += 1).unwrap();
    assert_eq!(unindexed, 0);

    let mut found = 0;
    for args in [
        &["search", "failing test"][..],
        &["recall", "why did the deploy fail"],
        &["recall", "what happened with the ci pipeline"],
        &["recall", "flaky integration tests in checkout"],
        &["recall", "what happened in sess-0002"],
    ] {
        let want = without_access_times(normalised(&dir, "file.ctxg", args));
        assert_eq!(without_access_times(normalised(&dir, &to, args)), want, "{args:?}");
        found += want.1["items"].as_array().or(want.1.as_array()).map_or(0, Vec::len);
        // A recall's access record: folded, enriched, consolidated as the store file has it.
        run_all(&dir, &to);
        let (code, err) = ctxgraph(&dir, "file.ctxg", &["consolidate"]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(found > 0, "the questions found something");
    // Consolidated again and again: the summaries replaced, not added (a summary written
    // again is a new node, with a new number, on both backends).
    let file = Embedded::open(&dir.path().join("file.ctxg"), OpenMode::MustExist).unwrap();
    let (want, got) = (
        file.begin_read().unwrap().text_index_build().unwrap().unwrap(),
        GraphReader::text_index_build(&remote).unwrap().unwrap(),
    );
    assert_eq!((got.docs, got.avg_len), (want.docs, want.avg_len));
    assert_eq!(GraphReader::counts(&remote).unwrap(), file.begin_read().unwrap().counts().unwrap());
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_stage_three_transaction_is_applied_whole_or_not_at_all() {
    let dir = TempDir::new().unwrap();
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo-trace.jsonl");
    let to = fresh_store();
    json_of(&dir, &to, &["ingest", trace]);
    for args in [&["worker", "--once"][..], &["worker", "--stage", "enrich", "--once"]] {
        let (code, err) = ctxgraph(&dir, &to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let url = StoreUrl::parse(&to).unwrap();
    let store = ScaleOutStore::connect(&url).unwrap();
    let similar = |store: &ScaleOutStore| {
        store.begin_read().unwrap().edges_by_type("SIMILAR_TO", None, 10).unwrap().len()
    };
    let write = |tx: &mut dyn GraphStore| {
        let event = NodeKey::new("Event", "evt-000002");
        tx.clear_ann_index().unwrap();
        tx.put_ann_centroids(&[1, 2, 3]).unwrap();
        tx.delete_edges_of_type("SIMILAR_TO").unwrap();
        assert_eq!(tx.ann_centroids().unwrap(), Some(vec![1, 2, 3]), "its own writes");
        assert!(tx.node(&event).unwrap().is_some());
    };
    // Consolidated once, so there are SIMILAR_TO edges to delete.
    let (code, err) = ctxgraph(&dir, &to, &["consolidate"]);
    assert_eq!(code, 0, "{err}");
    let edges = similar(&store);
    assert!(edges > 0);
    let centroids = store.begin_read().unwrap().ann_centroids().unwrap();
    assert!(centroids.is_some());

    // Dropped before its commit: nothing.
    let mut tx = store.begin_consolidate().unwrap().unwrap();
    write(&mut *tx);
    drop(tx);
    assert_eq!(similar(&store), edges);

    // The projection's checkpoint moved meanwhile: nothing applied.
    let mut tx = store.begin_consolidate().unwrap().unwrap();
    write(&mut *tx);
    let mut other = FalkorGraph::connect_read(&url).unwrap();
    let through = GraphReader::projected_through(&other).unwrap();
    other.set_projected_through(through).unwrap();
    assert!(!tx.commit().unwrap(), "the commit saw the checkpoint move");
    assert_eq!(similar(&store), edges);
    assert_eq!(store.begin_read().unwrap().ann_centroids().unwrap(), centroids);

    // Alone: applied whole.
    let mut tx = store.begin_consolidate().unwrap().unwrap();
    write(&mut *tx);
    assert!(tx.commit().unwrap());
    assert_eq!(similar(&store), 0);
    assert_eq!(store.begin_read().unwrap().ann_centroids().unwrap(), Some(vec![1, 2, 3]));

    // A stage-2 commit begun before a consolidation's commit applies nothing (it would build
    // its lexical index from documents the consolidation replaced).
    let mut enrich = store.begin_enrich().unwrap().unwrap();
    let mut tx = store.begin_consolidate().unwrap().unwrap();
    write(&mut *tx);
    assert!(tx.commit().unwrap());
    EnrichWrite::set_enriched_through(&mut *enrich, 10_000).unwrap();
    assert!(!enrich.commit().unwrap(), "the consolidation moved the stage-2 watch");
    assert_eq!(store.begin_read().unwrap().enriched_through().unwrap(), 400);
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn eval_locomo_on_scale_out_stores_scores_what_store_files_score() {
    let dir = TempDir::new().unwrap();
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../engine/tests/fixtures/locomo-mini.json");
    let rankings = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let file =
        json_of(&dir, "unused.ctxg", &["eval", "locomo", data, "--rankings", &rankings("f")]);
    let to = fresh_store();
    let remote = json_of(&dir, &to, &["eval", "locomo", data, "--rankings", &rankings("r")]);
    assert_eq!(file["backend"], "file");
    assert_eq!(remote["backend"], "redis");
    assert_eq!(remote["systems"], file["systems"], "{remote}");
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert!(!read("f").is_empty());
    assert_eq!(read("r"), read("f"), "every question's ranking");
    // Each conversation went to its own new store: a second run under the name is refused.
    let (code, err) = ctxgraph(&dir, &to, &["eval", "locomo", data]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("eval.target_not_empty"), "{err}");
}
