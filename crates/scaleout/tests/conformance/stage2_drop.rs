//! A fold that deletes a node drops its stage-2 data in its own transaction: the vector, the
//! document's terms, the key entry and the postings, whether the node goes for good or is
//! created again (with a new creation number) in the same fold.

use ctxgraph_lexical::Pruned;
use ctxgraph_ontology::graph::{Node, NodeKey};
use ctxgraph_scaleout::{BatchFold, FalkorGraph, Stage2Write};
use ctxgraph_store::{EnrichCommit, EnrichWrite, GraphReader, ProjectionGraph};

use crate::graph_harness::FalkorBackend;
use crate::harness::{admin, all_keys, contains, key_bytes};

fn key(id: &str) -> NodeKey {
    NodeKey { label: "Entity".to_owned(), id: id.to_owned() }
}

fn node(id: &str) -> Node {
    Node { key: key(id), props: serde_json::from_value(serde_json::json!({})).unwrap() }
}

/// The key of the server holding `needle`, if any.
fn holder(conn: &mut redis::Connection, needle: &str) -> Option<String> {
    all_keys(conn)
        .into_iter()
        .find(|k| contains(&key_bytes(conn, k), needle.as_bytes()))
        .map(|k| String::from_utf8_lossy(&k).into_owned())
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_fold_that_deletes_or_recreates_a_node_drops_its_stage_two_data() {
    let b = FalkorBackend::new();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let (gone, again) = (format!("okapi{nanos}gone"), format!("okapi{nanos}again"));
    let mut batch = BatchFold::new(&b.graph).unwrap();
    for id in ["a", "b", "c"] {
        batch.put_node(&node(id)).unwrap();
    }
    assert!(batch.commit(1).unwrap());

    let texts = [
        (key("a"), format!("{gone} shared")),
        (key("b"), format!("{again} shared words")),
        (key("c"), "shared words kept".to_owned()),
    ];
    let mut tx = Stage2Write::begin(FalkorGraph::connect_read(b.url()).unwrap()).unwrap();
    for (i, (k, _)) in texts.iter().enumerate() {
        tx.put_vector(k, &[i as f32, 1.0]).unwrap();
    }
    tx.put_texts(&texts).unwrap();
    tx.set_enriched_through(1).unwrap();
    // Three documents leave no rebuild to the commit: it is asked for, as `consolidate` would.
    tx.rebuild_lexical_index();
    assert!(Box::new(tx).commit().unwrap());

    let read = FalkorGraph::connect_read(b.url()).unwrap();
    assert_eq!(GraphReader::vector_counts(&read).unwrap(), (3, 3));
    let build = GraphReader::text_index_build(&read).unwrap().unwrap();
    assert_eq!(build.docs, 3);
    let mut needles = Vec::new();
    for secret in [&gone, &again] {
        let terms = GraphReader::text_terms(&read, secret).unwrap();
        assert_eq!(terms.len(), 1, "{terms:?}");
        assert!(GraphReader::text_postings(&read, &terms[0]).unwrap().is_some());
        needles.push(terms[0].clone());
    }
    let mut conn = admin(b.url());
    for needle in &needles {
        assert!(holder(&mut conn, needle).is_some(), "the probe finds {needle} first");
    }
    let (_, Some(last_doc)) = GraphReader::text_docs_after(&read, -1).unwrap() else {
        panic!("no document")
    };
    // The lists the fold must leave: the shared terms' without the two documents.
    let doomed = [last_doc - 2, last_doc - 1];
    let mut want = Vec::new();
    for term in ["share", "word"] {
        let list = GraphReader::text_postings(&read, term).unwrap().unwrap();
        match ctxgraph_lexical::without(&list, &|d| doomed.contains(&d)).unwrap() {
            Pruned::List(blob) => want.push((term, blob)),
            Pruned::Unchanged | Pruned::Empty => panic!("{term} loses one of two documents"),
        }
    }

    // One fold deletes `a` for good and `b` to create it again.
    let mut batch = BatchFold::new(&b.graph).unwrap();
    assert!(batch.delete_node(&key("a")).unwrap());
    assert!(batch.delete_node(&key("b")).unwrap());
    batch.put_node(&node("b")).unwrap();
    assert!(batch.commit(2).unwrap());

    assert_eq!(GraphReader::vector_counts(&read).unwrap(), (1, 1));
    let page = GraphReader::vectors_page(&read, -1, 10).unwrap();
    assert_eq!(page.iter().map(|v| v.key.clone()).collect::<Vec<_>>(), [key("c")]);
    assert_eq!(GraphReader::text_docs_after(&read, -1).unwrap(), (1, Some(last_doc)));
    let after = GraphReader::text_index_build(&read).unwrap().unwrap();
    assert_eq!((after.docs, after.through, after.avg_len), (1, build.through, build.avg_len));
    for (term, blob) in want {
        assert_eq!(GraphReader::text_postings(&read, term).unwrap(), Some(blob), "{term}");
    }
    assert_eq!(GraphReader::node_keys(&read, &doomed).unwrap(), []);
    for needle in &needles {
        assert_eq!(GraphReader::text_postings(&read, needle).unwrap(), None);
        // The graph's query telemetry keeps the stage-2 query that copied the terms to the
        // full-text index: a forget drops it after its fold (its step 4, which the CLI's forget
        // tests check end to end), not the fold itself.
        let found: Vec<String> = all_keys(&mut conn)
            .into_iter()
            .filter(|k| !k.starts_with(b"telemetry{"))
            .filter(|k| contains(&key_bytes(&mut conn, k), needle.as_bytes()))
            .map(|k| String::from_utf8_lossy(&k).into_owned())
            .collect();
        assert_eq!(found, Vec::<String>::new(), "{needle} is still in a key");
    }
    // The stage-2 keys go with the store's graph.
    let prefix = b.url().key_prefix();
    let _: redis::Value = redis::cmd("DEL")
        .arg(
            [
                "vectors",
                "vector_ids",
                "doc_terms",
                "text_ids",
                "node_keys",
                "postings",
                "text_build",
            ]
            .map(|s| format!("{prefix}{s}"))
            .to_vec(),
        )
        .query(&mut conn)
        .unwrap();
}
