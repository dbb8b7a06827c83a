//! FalkorDB's own full-text index as the search prefilter: its candidates scored with BM25 over
//! the stored terms give a store file's full-text search (FTS5's ranking) before any lexical
//! index is built, and query text reaches the index as terms only, never as its syntax.

use ctxgraph_ontology::graph::{Node, NodeKey, Properties};
use ctxgraph_ontology::{Limits, RecordBody, Schema, validate};
use ctxgraph_scaleout::{BatchFold, FalkorGraph, ScaleOutStore, Stage2Write};
use ctxgraph_store::{
    Embedded, EnrichCommit, EnrichWrite, GraphReader, GraphStore, OpenMode, ProjectionGraph,
    RemoteStore,
};
use ctxgraph_synth::{TraceConfig, trace};

use crate::graph_harness::FalkorBackend;
use crate::harness::admin;

/// The indexed texts of a synthetic trace's events, by event id (stage 2's text of each).
fn texts() -> Vec<(NodeKey, String)> {
    let schema = Schema::core().unwrap();
    let config = TraceConfig { events: 400, seed: 5, ..TraceConfig::default() };
    trace(&config)
        .filter_map(|e| {
            let record = validate(&schema, &Limits::default(), &e.to_string()).unwrap();
            let RecordBody::Event(event) = record.body() else { return None };
            let text = ctxgraph_projection::enrich_event(event).text;
            Some((NodeKey { label: "Event".to_owned(), id: event.event_id.clone() }, text))
        })
        .collect()
}

/// Words as the engine's search splits a question.
fn words(query: &str) -> Vec<String> {
    query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// A search's hits as node keys with their scores.
fn keyed(read: &dyn GraphReader, hits: Vec<(i64, f64)>) -> Vec<(NodeKey, f64)> {
    let nids: Vec<i64> = hits.iter().map(|(nid, _)| *nid).collect();
    let keys: std::collections::BTreeMap<i64, NodeKey> =
        read.node_keys(&nids).unwrap().into_iter().collect();
    hits.into_iter().map(|(nid, score)| (keys[&nid].clone(), score)).collect()
}

fn same(query: &str, file: &[(NodeKey, f64)], falkor: &[(NodeKey, f64)]) {
    let keys = |h: &[(NodeKey, f64)]| h.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(keys(falkor), keys(file), "{query}");
    for ((_, a), (_, b)) in file.iter().zip(falkor) {
        assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{query}: {a} and {b}");
    }
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn full_text_candidates_scored_with_bm25_equal_a_store_files_search() {
    let texts = texts();
    assert!(texts.len() > 300);
    let dir = tempfile::TempDir::new().unwrap();
    let mut file = Embedded::open(&dir.path().join("t.ctxg"), OpenMode::CreateIfMissing).unwrap();
    let mut w = file.begin_write().unwrap();
    for (key, _) in &texts {
        GraphStore::put_node(&mut w, &Node { key: key.clone(), props: Properties::new() }).unwrap();
    }
    GraphStore::put_texts(&mut w, &texts).unwrap();
    w.commit().unwrap();

    let b = FalkorBackend::new();
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for (key, _) in &texts {
        batch.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
    }
    assert!(batch.commit(1).unwrap());
    // A read view of the graph without documents finds none, and keeps its point in time.
    let store = ScaleOutStore::connect(b.url()).unwrap();
    let before = store.begin_read().unwrap();
    let deploy = words("deploy failed");
    assert_eq!(before.search_text(&deploy, -1, 10).unwrap(), []);
    // Two commits, the second re-indexing some documents with other texts.
    let (first, second) = texts.split_at(texts.len() / 2);
    let again: Vec<(NodeKey, String)> =
        first.iter().take(20).map(|(k, t)| (k.clone(), format!("{t} rebuilt deploy"))).collect();
    for part in [first, second, &again[..]] {
        let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
        tx.put_texts(part).unwrap();
        tx.set_enriched_through(1).unwrap();
        assert!(Box::new(tx).commit().unwrap());
    }
    let mut w = file.begin_write().unwrap();
    GraphStore::put_texts(&mut w, &again).unwrap();
    w.commit().unwrap();

    let read_file = file.begin_read().unwrap();
    let falkor = FalkorGraph::connect_read(b.url()).unwrap();
    // Questions from the texts' own words (each text's first words, the commonest words of
    // all, several texts' words mixed) and words no text holds.
    let mut queries: Vec<String> = texts
        .iter()
        .step_by(23)
        .map(|(_, t)| t.split_whitespace().take(4).collect::<Vec<_>>().join(" "))
        .collect();
    queries.push("the a of to and is".to_owned());
    queries.push(format!("{} {}", texts[3].1, texts[200].1));
    queries.push("rebuilt deploy".to_owned());
    queries.push("zzyzx unheard".to_owned());
    let (_, Some(last)) = GraphReader::text_docs_after(&falkor, -1).unwrap() else { panic!() };
    let (_, Some(last_file)) = GraphReader::text_docs_after(&read_file, -1).unwrap() else {
        panic!()
    };
    let mut compared = 0;
    for query in &queries {
        let w = words(query);
        for limit in [5, 40] {
            let a = keyed(&read_file, GraphReader::search_text(&read_file, &w, -1, limit).unwrap());
            let b = keyed(&falkor, GraphReader::search_text(&falkor, &w, -1, limit).unwrap());
            same(query, &a, &b);
            compared += a.len();
            // Above a point (the documents a lexical index built there would not cover): the
            // same documents on both, as they were created in the same order.
            let a = GraphReader::search_text(&read_file, &w, last_file - 150, limit).unwrap();
            let b = GraphReader::search_text(&falkor, &w, last - 150, limit).unwrap();
            same(query, &keyed(&read_file, a), &keyed(&falkor, b));
        }
    }
    assert!(compared > 100, "the questions found too little to compare: {compared}");
    drop(read_file);
    // A read view answers from its memo of the documents' state (read once, with its other
    // state keys) as a live read does, above every point, past the last document too.
    let view = store.begin_read().unwrap();
    for query in &queries {
        let w = words(query);
        for after in [-1, last - 150, last - 1, last] {
            assert_eq!(
                view.search_text(&w, after, 40).unwrap(),
                GraphReader::search_text(&falkor, &w, after, 40).unwrap(),
                "{query} above {after}"
            );
        }
    }
    assert_eq!(before.search_text(&deploy, -1, 10).unwrap(), []);
    drop((view, before));

    // Forgetting a document takes it out of the index and the statistics.
    let (gone, text) = &texts[7];
    let q = words(&text.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let before = keyed(&falkor, GraphReader::search_text(&falkor, &q, -1, 400).unwrap());
    assert!(before.iter().any(|(k, _)| k == gone));
    let mut batch = BatchFold::new(&b.graph).unwrap();
    assert!(batch.delete_node(gone).unwrap());
    assert!(batch.commit(2).unwrap());
    let mut w = file.begin_write().unwrap();
    assert!(GraphStore::delete_node(&mut w, gone).unwrap());
    w.commit().unwrap();
    let read_file = file.begin_read().unwrap();
    let after = keyed(&falkor, GraphReader::search_text(&falkor, &q, -1, 400).unwrap());
    assert!(after.iter().all(|(k, _)| k != gone));
    same(
        "after a forget",
        &keyed(&read_file, GraphReader::search_text(&read_file, &q, -1, 400).unwrap()),
        &after,
    );
    cleanup(&b);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn hostile_query_text_reaches_the_full_text_index_as_terms_only() {
    let b = FalkorBackend::new();
    let keys: Vec<NodeKey> =
        (0..4).map(|i| NodeKey { label: "Event".to_owned(), id: format!("e{i}") }).collect();
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for key in &keys {
        batch.put_node(&Node { key: key.clone(), props: Properties::new() }).unwrap();
    }
    assert!(batch.commit(1).unwrap());
    let texts = vec![
        (keys[0].clone(), "deploy failed on staging".to_owned()),
        (keys[1].clone(), "terms of the café naïve résumé".to_owned()),
        (keys[2].clone(), "rollback succeeded".to_owned()),
        (keys[3].clone(), "nothing here".to_owned()),
    ];
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    tx.put_texts(&texts).unwrap();
    tx.set_enriched_through(1).unwrap();
    assert!(Box::new(tx).commit().unwrap());
    let read = FalkorGraph::connect_read(b.url()).unwrap();
    let search = |q: &[&str]| {
        let words: Vec<String> = q.iter().map(|w| (*w).to_owned()).collect();
        let hits = GraphReader::search_text(&read, &words, -1, 10)
            .unwrap_or_else(|e| panic!("{q:?}: {e}"));
        keyed(&read, hits).into_iter().map(|(k, _)| k.id).collect::<Vec<_>>()
    };
    // Words as a caller might pass them unsplit: operators, field names, wildcards, quotes,
    // braces, negation, unions, escapes, non-ASCII.
    for hostile in [
        "@terms:deploy",
        "*",
        "deplo*",
        "-deploy",
        "deploy|rollback",
        "\"deploy",
        "{deploy}",
        "(rollback)",
        "%deploy%",
        "~deploy",
        "\\",
        "@",
        "|",
        "-",
        "'",
        "[1 2]",
        "$x",
        "ünïcödé",
        "deploy -rollback",
        "* | @terms:*",
        "\u{0}",
        "🚀",
    ] {
        let found = search(&[hostile]);
        // Whatever the word, only documents holding its terms come back: never every document
        // (a wildcard or a union read as syntax), never the one it negates or fields it names.
        assert!(found.len() < 4, "{hostile:?}: {found:?}");
        assert!(!found.contains(&"e3".to_owned()), "{hostile:?}: {found:?}");
    }
    let mut union = search(&["deploy", "rollback"]);
    union.sort();
    assert_eq!(union, ["e0", "e2"]);
    assert_eq!(search(&["-deploy"]), ["e0"]);
    assert_eq!(search(&["deplo*"]), Vec::<String>::new());
    assert_eq!(search(&["CAFÉ"]), ["e1"]);
    cleanup(&b);
}

/// Delete the stage-2 keys of `b`'s store (the graph goes with the backend).
fn cleanup(b: &FalkorBackend) {
    let mut conn = admin(b.url());
    let prefix = b.url().key_prefix();
    let keys = [
        "doc_terms",
        "text_ids",
        "node_keys",
        "postings",
        "text_build",
        "text_generation",
        "native_texts",
        "text_tokens",
        "enriched_through",
    ];
    let _: redis::Value = redis::cmd("DEL")
        .arg(keys.map(|s| format!("{prefix}{s}")).to_vec())
        .query(&mut conn)
        .unwrap();
}
