//! Stage 2 (enrichment) on the scale-out backend: `worker --stage enrich` against a real server
//! gives the nodes, vectors and recall packs of a store file enriched from the same log, and a
//! stage-2 transaction is applied whole or not at all.

use ctxgraph::{Engine, EngineOptions, OpenMode};
use ctxgraph_ontology::graph::NodeKey;
use ctxgraph_scaleout::{FalkorGraph, ScaleOutStore, Stage2Write, StoreUrl};
use ctxgraph_store::{Embedded, EnrichCommit, EnrichWrite, GraphReader, RemoteStore};
use serde_json::Value;
use tempfile::TempDir;

use super::{
    ctxgraph, fresh_store, json_of, normalised, running_worker, stop_after_folding, wait_for,
};

/// The demo trace.
const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo-trace.jsonl");

/// A store file `file.ctxg` in `dir` holding the demo trace, projected and enriched by `ingest`
/// (its 400 documents leave the lexical index unbuilt, as the scale-out store's enrichment
/// does: both search them in their full-text index).
fn enriched_file(dir: &TempDir) -> std::path::PathBuf {
    let (code, err) = ctxgraph(dir, "file.ctxg", &["ingest", TRACE]);
    assert_eq!(code, 0, "{err}");
    let path = dir.path().join("file.ctxg");
    let read = Embedded::open(&path, OpenMode::MustExist).unwrap();
    assert_eq!(read.begin_read().unwrap().text_index_build().unwrap(), None);
    path
}

/// The store file at `path`'s lexical index built, and the scale-out store `to`'s through a
/// stage-2 transaction that asks for it (as `index_text` and `consolidate` build it).
pub(super) fn build_lexical_index_on_both(path: &std::path::Path, to: &str) {
    Engine::open(path, OpenMode::MustExist, EngineOptions::default())
        .unwrap()
        .index_text()
        .unwrap();
    let url = StoreUrl::parse(to).unwrap();
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(&url).unwrap()).unwrap();
    tx.rebuild_lexical_index();
    assert!(Box::new(tx).commit().unwrap());
}

/// Every event's and entity's node and vector on the scale-out store `to` equal the store
/// file's at `path`; how many vectors.
fn assert_nodes_and_vectors_equal(path: &std::path::Path, to: &str) -> usize {
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(to).unwrap()).unwrap();
    let file = Embedded::open(path, OpenMode::MustExist).unwrap();
    let file = file.begin_read().unwrap();
    let mut vectors = 0;
    for label in ["Event", "Entity"] {
        let nodes = file.nodes_by_label(label, None, 10_000).unwrap();
        assert_eq!(remote.nodes_by_label(label, None, 10_000).unwrap(), nodes, "{label}");
        for node in &nodes {
            let want = file.vector(&node.key).unwrap();
            assert_eq!(GraphReader::vector(&remote, &node.key).unwrap(), want, "{:?}", node.key);
            vectors += usize::from(want.is_some());
        }
    }
    assert_eq!(GraphReader::embedding_model(&remote).unwrap(), file.embedding_model().unwrap());
    vectors
}

/// Both stages folded by their workers, each to its head.
pub(super) fn fold_both(dir: &TempDir, to: &str) {
    for args in [&["worker", "--once"][..], &["worker", "--stage", "enrich", "--once"]] {
        let (code, err) = ctxgraph(dir, to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
}

/// A command's output without the times of its events' last reads: each store's recalls read
/// them at their own wall-clock times (the counts still compare).
pub(super) fn without_access_times((code, mut v): (i32, Value)) -> (i32, Value) {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("last_accessed_at");
                map.values_mut().for_each(strip);
            }
            Value::Array(list) => list.iter_mut().for_each(strip),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    strip(&mut v);
    (code, v)
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn an_enrichment_worker_gives_the_nodes_vectors_and_recall_of_an_enriched_store_file() {
    let dir = TempDir::new().unwrap();
    let path = enriched_file(&dir);
    let to = fresh_store();
    let report = json_of(&dir, &to, &["ingest", TRACE]);
    assert_eq!(report["accepted"].as_u64(), Some(400), "{report}");
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let before = json_of(&dir, &to, &["stats"]);
    assert_eq!(before["enriched_through"].as_u64(), Some(0));
    assert_eq!(before["enrichment_lag"].as_u64(), Some(400));
    let run = json_of(&dir, &to, &["worker", "--stage", "enrich", "--once", "--name", "e-1"]);
    assert_eq!(run["records_enriched"].as_u64(), Some(400), "{run}");
    assert_eq!(run["events_enriched"].as_u64(), Some(400), "{run}");
    assert_eq!(run["enriched_through"].as_u64(), Some(400), "{run}");
    let after = json_of(&dir, &to, &["stats"]);
    assert_eq!(after["enrichment_lag"].as_u64(), Some(0), "{after}");
    assert_eq!(after["vectors"].as_u64(), Some(400), "one per event: {after}");

    // A second worker finds nothing to enrich.
    let again = json_of(&dir, &to, &["worker", "--stage", "enrich", "--once"]);
    assert_eq!(again["records_enriched"].as_u64(), Some(0), "{again}");

    // Every event's and entity's properties (keywords, summary, importance) and vector, bit
    // for bit.
    assert_eq!(assert_nodes_and_vectors_equal(&path, &to), 400);
    let file = Embedded::open(&path, OpenMode::MustExist).unwrap();
    let event = NodeKey::new("Event", "evt-000002");
    let props = &file.begin_read().unwrap().node(&event).unwrap().unwrap().props;
    assert!(props.contains_key("keywords") && props.contains_key("summary"), "{props:?}");

    // Searches and recall packs, which now use the vectors and the full-text index (FTS5 on
    // the store file, FalkorDB's on the scale-out store: no lexical index on either), then the
    // lexical index built on both.
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(&to).unwrap()).unwrap();
    assert_eq!(GraphReader::text_index_build(&remote).unwrap(), None);
    let (docs, _) = GraphReader::text_docs_after(&remote, -1).unwrap();
    assert!(docs >= 400, "every event is a document outside the lexical index: {docs}");
    let found = same_searches_and_recalls(&dir, &to);
    assert!(found > 0, "the questions found something");
    build_lexical_index_on_both(&path, &to);
    let build = GraphReader::text_index_build(&remote).unwrap().unwrap();
    assert_eq!(Some(build), file.begin_read().unwrap().text_index_build().unwrap());
    assert!(same_searches_and_recalls(&dir, &to) > 0);
}

/// The demo trace's searches and recall packs on the store file and on the scale-out store
/// `to` are equal (each recall's access record folded on both); how many items they found.
fn same_searches_and_recalls(dir: &TempDir, to: &str) -> usize {
    let mut found = 0;
    for args in [
        &["search", "failing test"][..],
        &["search", "deploy timeout"],
        &["recall", "why did the deploy fail"],
        &["recall", "what happened with the ci pipeline"],
        &["recall", "flaky integration tests in checkout"],
        &["recall", "who asked about sess-0002"],
    ] {
        let want = without_access_times(normalised(dir, "file.ctxg", args));
        assert_eq!(without_access_times(normalised(dir, to, args)), want, "{args:?}");
        found += want.1["items"].as_array().or(want.1.as_array()).map_or(0, Vec::len);
        // A recall counts its reads (an access record): folded here as the store file folds it.
        fold_both(dir, to);
    }
    found
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn documents_outside_the_lexical_index_are_searched_in_the_full_text_index_as_on_a_store_file() {
    // The demo trace in two halves: the first enriched and its lexical index built on both
    // stores, the second enriched after it, so its documents lie above the build.
    let dir = TempDir::new().unwrap();
    let trace = std::fs::read_to_string(TRACE).unwrap();
    let lines: Vec<&str> = trace.lines().collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    let halves = [dir.path().join("first.jsonl"), dir.path().join("second.jsonl")];
    for (path, part) in halves.iter().zip([first, second]) {
        std::fs::write(path, part.join("\n") + "\n").unwrap();
    }
    let [first, second] = halves.each_ref().map(|p| p.to_str().unwrap().to_owned());
    let path = dir.path().join("file.ctxg");
    let to = fresh_store();
    for half in [&first, &second] {
        let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", half]);
        assert_eq!(code, 0, "{err}");
        json_of(&dir, &to, &["ingest", half]);
        fold_both(&dir, &to);
        if half == &first {
            build_lexical_index_on_both(&path, &to);
        }
    }
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(&to).unwrap()).unwrap();
    let file = Embedded::open(&path, OpenMode::MustExist).unwrap();
    let build = GraphReader::text_index_build(&remote).unwrap().unwrap();
    assert_eq!(Some(build), file.begin_read().unwrap().text_index_build().unwrap());
    let (docs, _) = GraphReader::text_docs_after(&remote, -1).unwrap();
    let (outside, _) = GraphReader::text_docs_after(&remote, build.through).unwrap();
    assert!(build.docs < docs && outside > 100, "{build:?}: {outside} of {docs} outside");
    // The newer documents through FalkorDB's full-text index: what FTS5 finds above the build.
    let words: Vec<String> = ["deploy", "failing", "test", "timeout"].map(str::to_owned).into();
    // Compared by node key: each backend numbers its nodes itself.
    let keyed = |read: &dyn GraphReader, hits: Vec<(i64, f64)>| -> Vec<(NodeKey, f64)> {
        hits.into_iter()
            .map(|(nid, score)| (read.node_keys(&[nid]).unwrap().pop().unwrap().1, score))
            .collect()
    };
    let above = GraphReader::search_text(&remote, &words, build.through, 20).unwrap();
    let file_read = file.begin_read().unwrap();
    let above_file = file_read.search_text(&words, build.through, 20).unwrap();
    assert!(!above.is_empty());
    assert_eq!(keyed(&remote, above), keyed(&file_read, above_file));
    drop(file_read);
    // Searches and recall packs merge both indexes' hits, as the store file's do.
    assert!(same_searches_and_recalls(&dir, &to) > 0, "the questions found something");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_stage_two_transaction_is_applied_whole_or_not_at_all() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    json_of(&dir, &to, &["ingest", TRACE]);
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let url = StoreUrl::parse(&to).unwrap();
    let store = ScaleOutStore::connect(&url).unwrap();
    let event = NodeKey::new("Event", "evt-000002");
    let untouched = |store: &ScaleOutStore| {
        let read = store.begin_read().unwrap();
        assert_eq!(read.enriched_through().unwrap(), 0);
        assert_eq!(read.vector_counts().unwrap(), (0, 0));
        assert_eq!(read.vector(&event).unwrap(), None);
        assert_eq!(read.text_index_build().unwrap(), None);
        assert_eq!(read.embedding_model().unwrap(), None);
        let node = read.node(&event).unwrap().unwrap();
        assert!(!node.props.contains_key("keywords"), "{:?}", node.props);
    };
    let write = |tx: &mut dyn EnrichWrite| {
        assert_eq!(tx.enriched_through().unwrap(), 0);
        let mut node = tx.node(&event).unwrap().unwrap();
        node.props.insert("keywords".into(), Value::Array(vec!["deploy".into()]));
        tx.put_node_owned(node).unwrap();
        tx.set_embedding_model("test-model", 2).unwrap();
        tx.put_vector(&event, &[0.5, -0.25]).unwrap();
        tx.put_texts(&[(event.clone(), "deploy failed".into())]).unwrap();
        tx.set_enriched_through(10).unwrap();
    };

    // A worker that dies before its commit (the transaction dropped) leaves nothing.
    let mut tx = store.begin_enrich().unwrap().unwrap();
    write(&mut *tx);
    drop(tx);
    untouched(&store);

    // The projection's checkpoint written meanwhile (a fold committing a page): nothing applied.
    let mut tx = store.begin_enrich().unwrap().unwrap();
    write(&mut *tx);
    let mut other = FalkorGraph::connect_read(&url).unwrap();
    other.set_projected_through(400).unwrap();
    assert!(!tx.commit().unwrap(), "the commit saw the checkpoint move");
    untouched(&store);

    // Another enrichment committing first: this one applies nothing either.
    let mut first = store.begin_enrich().unwrap().unwrap();
    let mut second = store.begin_enrich().unwrap().unwrap();
    write(&mut *first);
    write(&mut *second);
    assert!(first.commit().unwrap());
    assert!(!second.commit().unwrap(), "a chunk is applied once");

    // The one that committed is there, whole.
    let read = store.begin_read().unwrap();
    assert_eq!(read.enriched_through().unwrap(), 10);
    assert_eq!(read.vector(&event).unwrap(), Some(vec![0.5, -0.25]));
    assert_eq!(read.vector_counts().unwrap(), (1, 1));
    assert_eq!(read.embedding_model().unwrap(), Some(("test-model".to_owned(), 2)));
    // One document: outside the lexical index (left unbuilt, as a store file leaves it below
    // the rebuild threshold), found through the full-text index.
    assert_eq!(read.text_index_build().unwrap(), None);
    assert_eq!(read.text_docs_after(-1).unwrap().0, 1);
    let terms = read.text_terms("deploy failed").unwrap();
    assert_eq!(terms.len(), 2);
    for term in &terms {
        assert_eq!(read.text_postings(term).unwrap(), None, "{term}");
    }
    let hits = read.search_text(&["deploy".to_owned()], -1, 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let node = read.node(&event).unwrap().unwrap();
    assert_eq!(node.props["keywords"], serde_json::json!(["deploy"]));
}

/// A reset (`reembed`, `reproject`, a forget of an entity that changed indexed text) sets
/// stage 2's checkpoint back to 0: a chunk read from 0 before it must not be written after it,
/// though the checkpoint is where the chunk starts. The epoch tells them apart.
#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn an_enrichment_read_before_a_reset_is_not_written_after_it() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    json_of(&dir, &to, &["ingest", TRACE]);
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let store = ScaleOutStore::connect(&StoreUrl::parse(&to).unwrap()).unwrap();
    let read_at = store.begin_read().unwrap().enrichment_epoch().unwrap();
    store.reset_enrichment().unwrap();
    let now = store.begin_read().unwrap().enrichment_epoch().unwrap();
    assert_ne!(now, read_at, "a reset moves the epoch");
    let tx = store.begin_enrich().unwrap().unwrap();
    assert_eq!(EnrichWrite::enriched_through(&*tx).unwrap(), 0);
    assert_eq!(EnrichWrite::enrichment_epoch(&*tx).unwrap(), now);
    drop(tx);
    // Enrichment read after the reset goes through to the end.
    let (code, err) = ctxgraph(&dir, &to, &["enrich"]);
    assert_eq!(code, 0, "{err}");
    let read = store.begin_read().unwrap();
    assert_eq!(read.enriched_through().unwrap(), read.projected_through().unwrap());
    assert_eq!(read.enrichment_epoch().unwrap(), now, "an enrichment leaves the epoch");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn bench_recall_with_stage_two_on_both_backends_gives_identical_packs() {
    let dir = TempDir::new().unwrap();
    let db = fresh_store();
    let args = ["bench", "recall", "--events", "600", "--queries", "40", "--enrich"];
    let run = json_of(&dir, &db, &args);
    let asked = run["queries"].as_u64().unwrap();
    assert!(asked > 0, "{run}");
    assert_eq!(run["stages"], "1+2", "{run}");
    assert!(run["enrich_seconds"].as_f64().is_some(), "{run}");
    assert_eq!(run["identical_packs"].as_u64(), Some(asked), "{run}");
    assert_eq!(run["embedded"]["quality"], run["scale_out"]["quality"], "{run}");
    assert!(run["scale_out"]["answered"].as_u64().unwrap() > 0, "{run}");
}

#[test]
fn bench_recall_takes_enrich_on_a_scale_out_store_only() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "x.ctxg", &["bench", "recall", "--enrich"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--enrich") && err.contains("bench.backend"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was built");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn both_stages_running_at_once_fold_and_enrich_records_as_they_arrive() {
    let dir = TempDir::new().unwrap();
    let path = enriched_file(&dir);
    let to = fresh_store();
    let projector = running_worker(&dir, &to);
    let enricher = std::process::Command::new(assert_cmd::cargo::cargo_bin("ctxgraph"))
        .current_dir(dir.path())
        .args(["--db", &to, "--json", "worker", "--stage", "enrich", "--name", "live-e"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The trace in four writes, so the fold commits pages while enrichment commits chunks,
    // each voiding the other's watch now and then.
    let text = std::fs::read_to_string(TRACE).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    for part in lines.chunks(100) {
        let out = assert_cmd::Command::cargo_bin("ctxgraph")
            .unwrap()
            .current_dir(dir.path())
            .args(["--db", &to, "ingest", "-"])
            .write_stdin(format!("{}\n", part.join("\n")))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let enriched =
        wait_for(|| json_of(&dir, &to, &["stats"])["enriched_through"].as_u64() == Some(400));
    assert!(enriched, "the enrichment worker did not reach the log's head");
    let run = stop_after_folding(&dir, &to, projector, 400);
    assert_eq!(run["records_folded"].as_u64(), Some(400), "{run}");
    let pid = enricher.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let out = enricher.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["stopped_by_signal"], true, "{run}");
    assert_eq!(run["records_enriched"].as_u64(), Some(400), "each record enriched once: {run}");
    assert_eq!(assert_nodes_and_vectors_equal(&path, &to), 400);
    let question = ["recall", "why did the deploy fail"];
    assert_eq!(normalised(&dir, &to, &question), normalised(&dir, "file.ctxg", &question));
}
