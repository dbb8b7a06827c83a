//! The store-wide commands on a scale-out store: `reproject` rebuilds from the log what the
//! workers built incrementally (and what a store file's `reproject` builds), with a worker
//! folding at the same time; `enrich` and `reembed` give a store file's stage 2.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Edge, Node, NodeKey};
use ctxgraph_scaleout::{FalkorGraph, StoreUrl};
use ctxgraph_store::{Embedded, GraphCounts, GraphReader, OpenMode, SessionSlot};
use tempfile::TempDir;

use super::forget::{lexical_index, vector_index};
use super::stage2::{fold_both, without_access_times};
use super::{
    ctxgraph, fresh_store, json_of, normalised, running_worker, stop_after_folding, wait_for,
    workers_once,
};

/// The demo trace.
const TRACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo-trace.jsonl");

/// The demo trace cut into `parts` files in `dir`, in order.
fn trace_parts(dir: &TempDir, parts: usize) -> Vec<String> {
    let text = std::fs::read_to_string(TRACE).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let size = lines.len().div_ceil(parts);
    lines
        .chunks(size)
        .enumerate()
        .map(|(i, chunk)| {
            let name = format!("part-{i}.jsonl");
            std::fs::write(dir.path().join(&name), chunk.join("\n") + "\n").unwrap();
            name
        })
        .collect()
}

/// A graph as a reader sees it by key: every node with its properties, every edge, the edges
/// waiting for an endpoint, every session's order, every vector with the node it belongs to,
/// the embedding model, the lexical index's terms and what it covers. Node creation numbers
/// are not in it: a graph built in steps numbers the summaries its consolidations replaced.
#[derive(Debug, PartialEq)]
struct ByKey {
    counts: GraphCounts,
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    pending: Vec<(NodeKey, Edge)>,
    sessions: BTreeMap<String, Vec<SessionSlot>>,
    vectors: BTreeMap<NodeKey, Vec<f32>>,
    model: Option<(String, usize)>,
    terms: Vec<String>,
    text_docs: Option<(u64, f64)>,
}

fn by_key(read: &dyn GraphReader) -> ByKey {
    let counts = read.counts().unwrap();
    let (nodes, edges, sessions) = super::graph_parts(read);
    let vectors =
        nodes.iter().filter_map(|n| Some((n.key.clone(), read.vector(&n.key).unwrap()?))).collect();
    let (lists, build) = lexical_index(read);
    ByKey {
        pending: read.pending_edges().unwrap(),
        counts,
        nodes,
        edges,
        sessions,
        vectors,
        model: read.embedding_model().unwrap(),
        terms: lists.into_keys().collect(),
        text_docs: build.map(|b| (b.docs, b.avg_len)),
    }
}

/// What depends on node creation numbers too: the lexical index's posting lists and build, the
/// vector index's centroids and lists, each vector's list, and the stage checkpoints.
type Blobs = (
    (BTreeMap<String, Vec<u8>>, Option<ctxgraph_store::TextIndexBuild>),
    (Option<Vec<u8>>, Vec<Option<Vec<u8>>>),
    Vec<Option<(i64, Option<u32>)>>,
    (u64, u64),
);

fn blobs(read: &dyn GraphReader) -> Blobs {
    let mut lists = Vec::new();
    for (label, _) in read.counts().unwrap().nodes {
        for node in read.nodes_by_label(&label, None, 100_000).unwrap() {
            lists.push(read.vector_list(&node.key).unwrap());
        }
    }
    (
        lexical_index(read),
        vector_index(read),
        lists,
        (read.projected_through().unwrap(), read.enriched_through().unwrap()),
    )
}

fn remote(to: &str) -> FalkorGraph {
    FalkorGraph::connect_read(&StoreUrl::parse(to).unwrap()).unwrap()
}

fn file(dir: &TempDir, name: &str) -> Embedded {
    Embedded::open(&dir.path().join(name), OpenMode::MustExist).unwrap()
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn reproject_on_a_scale_out_store_rebuilds_what_the_workers_built_in_steps() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    // Built in three steps, each folded, enriched and consolidated by the workers; the store
    // file the same way (`ingest` enriches it).
    for part in trace_parts(&dir, 3) {
        json_of(&dir, &to, &["ingest", &part]);
        workers_once(&dir, &to);
        let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", &part]);
        assert_eq!(code, 0, "{err}");
        let (code, err) = ctxgraph(&dir, "file.ctxg", &["consolidate"]);
        assert_eq!(code, 0, "{err}");
    }
    let incremental = by_key(&remote(&to));
    assert!(incremental.nodes.iter().any(|n| n.key.label == "Summary"), "consolidated");
    assert!(incremental.vectors.len() >= 400, "a vector per event at least");
    assert!(!incremental.terms.is_empty() && incremental.model.is_some());
    assert_eq!(by_key(&file(&dir, "file.ctxg").begin_read().unwrap()), incremental);

    let run = json_of(&dir, &to, &["reproject"]);
    assert_eq!(run["records"].as_u64(), Some(400), "{run}");
    assert_eq!(run["position"].as_u64(), Some(400), "{run}");
    let stats = json_of(&dir, &to, &["stats"]);
    for field in ["projected_through", "enriched_through", "consolidated_through"] {
        assert_eq!(stats[field].as_u64(), Some(400), "{field}: {stats}");
    }
    let rebuilt = remote(&to);
    assert_eq!(by_key(&rebuilt), incremental, "the rebuilt graph equals the incremental one");

    // A store file reprojected the same way: the same graph, byte for byte where node creation
    // numbers show (both number the nodes from 1 again).
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["reproject"]);
    assert_eq!(code, 0, "{err}");
    let file = file(&dir, "file.ctxg");
    let file = file.begin_read().unwrap();
    assert_eq!(by_key(&file), incremental);
    assert_eq!(blobs(&rebuilt), blobs(&file));
    assert!(blobs(&file).1.0.is_some(), "the vector index was built");

    // The same answers.
    for args in [&["search", "failing test"][..], &["recall", "why did the deploy fail"]] {
        let want = without_access_times(normalised(&dir, "file.ctxg", args));
        assert_eq!(without_access_times(normalised(&dir, &to, args)), want, "{args:?}");
    }
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn reproject_with_a_worker_folding_at_the_same_time_gives_the_same_graph() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", TRACE]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["reproject"]);
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    json_of(&dir, &to, &["ingest", TRACE]);
    let worker = running_worker(&dir, &to);
    assert!(wait_for(|| json_of(&dir, &to, &["stats"])["projected_through"].as_u64() == Some(400)));
    // The worker keeps folding what the reset leaves: its pages and this process's commit
    // once each.
    let run = json_of(&dir, &to, &["reproject", "--include-archive"]);
    assert_eq!(run["position"].as_u64(), Some(400), "{run}");
    stop_after_folding(&dir, &to, worker, 400);
    let file = file(&dir, "file.ctxg");
    let file = file.begin_read().unwrap();
    let rebuilt = remote(&to);
    assert_eq!(by_key(&rebuilt), by_key(&file));
    assert_eq!(blobs(&rebuilt), blobs(&file));
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn enrich_and_reembed_on_a_scale_out_store_give_a_store_files_stage_two() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", TRACE]);
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    json_of(&dir, &to, &["ingest", TRACE]);
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let run = json_of(&dir, &to, &["enrich"]);
    assert_eq!(run["events"].as_u64(), Some(400), "{run}");
    assert_eq!(run["enriched_through"].as_u64(), Some(400), "{run}");
    let want = by_key(&file(&dir, "file.ctxg").begin_read().unwrap());
    let got = by_key(&remote(&to));
    assert_eq!((&got.nodes, &got.vectors, &got.model), (&want.nodes, &want.vectors, &want.model));
    assert_eq!(json_of(&dir, &to, &["enrich"])["events"].as_u64(), Some(0), "nothing left");

    // Consolidated, then embedded again: stage 2's and 3's data dropped and written again, on
    // both.
    for db in ["file.ctxg", to.as_str()] {
        let (code, err) = ctxgraph(&dir, db, &["consolidate"]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(remote(&to).ann_centroids().unwrap().is_some());
    let run = json_of(&dir, &to, &["reembed"]);
    assert_eq!(run["events"].as_u64(), Some(400), "{run}");
    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(stats["consolidated_through"].as_u64(), Some(0), "{stats}");
    let again = remote(&to);
    assert_eq!(again.ann_centroids().unwrap(), None, "the vector index went with the vectors");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["reembed"]);
    assert_eq!(code, 0, "{err}");
    let want = by_key(&file(&dir, "file.ctxg").begin_read().unwrap());
    let got = by_key(&again);
    assert_eq!((&got.nodes, &got.vectors, &got.model), (&want.nodes, &want.vectors, &want.model));
}

/// A command's standard output, asserting it succeeded.
fn stdout_of(dir: &TempDir, db: &str, args: &[&str]) -> String {
    let out = assert_cmd::Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .args(["--db", db])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// How many keys the store `to` has on its server.
fn keys_of(to: &str) -> usize {
    let url = StoreUrl::parse(to).unwrap();
    let server = to.rsplit_once('/').unwrap().0;
    let mut conn = redis::Client::open(server).unwrap().get_connection().unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", url.key_prefix().replace('{', "\\{").replace('}', "\\}")))
        .query(&mut conn)
        .unwrap();
    keys.len()
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn init_export_backup_and_restore_on_a_scale_out_store_give_what_a_store_file_gives() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    // `init`: the server answers; nothing is created.
    let init = json_of(&dir, &to, &["init"]);
    assert_eq!((init["created"].as_bool(), init["records"].as_u64()), (Some(false), Some(0)));
    assert_eq!(keys_of(&to), 0, "init made no key");

    json_of(&dir, &to, &["ingest", TRACE]);
    workers_once(&dir, &to);
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", TRACE]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["consolidate"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(json_of(&dir, &to, &["init"])["records"].as_u64(), Some(400));

    // `export`: the log and the graph as the store file exports them.
    for format in ["jsonl", "cypher", "graphml"] {
        let want = stdout_of(&dir, "file.ctxg", &["export", "--format", format]);
        assert!(want.len() > 1_000, "{format}");
        assert_eq!(stdout_of(&dir, &to, &["export", "--format", format]), want, "{format}");
    }
    std::fs::write(
        dir.path().join("log.jsonl"),
        stdout_of(&dir, &to, &["export", "--format", "jsonl"]),
    )
    .unwrap();

    // `backup`: a store file with the log, and the graph the log makes.
    let made = json_of(&dir, &to, &["backup", "copy.ctxg"]);
    assert_eq!(made["records"].as_u64(), Some(400), "{made}");
    let (code, err) = ctxgraph(&dir, &to, &["backup", "copy.ctxg"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("backup.target_exists"), "{err}");
    let want = by_key(&file(&dir, "file.ctxg").begin_read().unwrap());
    assert_eq!(by_key(&file(&dir, "copy.ctxg").begin_read().unwrap()), want);
    let log = ["log", "--limit", "1000"];
    assert_eq!(normalised(&dir, "copy.ctxg", &log), normalised(&dir, &to, &log));

    // `restore`: from the backup, then from the exported log, each into an empty store.
    let rebuilt = by_key(&remote(&to));
    for from in ["copy.ctxg", "log.jsonl"] {
        let into = fresh_store();
        let run = json_of(&dir, &into, &["restore", "--from", from]);
        assert_eq!(run["projected_through"].as_u64(), Some(400), "{from}: {run}");
        assert_eq!(by_key(&remote(&into)), rebuilt, "{from}");
        let q = ["recall", "why did the deploy fail"];
        let want = without_access_times(normalised(&dir, &to, &q));
        assert_eq!(without_access_times(normalised(&dir, &into, &q)), want, "{from}");
    }
    let (code, err) = ctxgraph(&dir, &to, &["restore", "--from", "copy.ctxg"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("restore.target_not_empty"), "{err}");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn import_conversation_appends_to_a_scale_out_store_for_its_workers_to_fold() {
    let dir = TempDir::new().unwrap();
    let conversation =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../engine/tests/fixtures/conversation.jsonl");
    let to = fresh_store();
    let run = json_of(&dir, &to, &["import", "conversation", conversation]);
    assert_eq!(run["accepted"].as_u64(), Some(5), "{run}");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["import", "conversation", conversation]);
    assert_eq!(code, 0, "{err}");
    // Folded and enriched, as the store file's import does.
    fold_both(&dir, &to);
    let log = ["log", "--limit", "100"];
    assert_eq!(normalised(&dir, &to, &log), normalised(&dir, "file.ctxg", &log));
    assert_eq!(
        by_key(&remote(&to)).nodes,
        by_key(&file(&dir, "file.ctxg").begin_read().unwrap()).nodes
    );
}

/// GET `url` with the bearer `key`: status and body.
fn fetch(url: &str, key: &str) -> (u16, String) {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut resp = agent.get(url).header("Authorization", &format!("Bearer {key}")).call().unwrap();
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_string().unwrap())
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn demo_and_the_explorer_run_on_a_scale_out_store() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let demo = json_of(&dir, &to, &["demo"]);
    assert_eq!(demo["ingest"]["accepted"].as_u64(), Some(400), "{demo}");
    assert!(demo["failure"].is_object(), "a failure explained: {demo}");
    let want = json_of(&dir, "file.ctxg", &["demo"]);
    assert_eq!((&demo["nodes"], &demo["edges"]), (&want["nodes"], &want["edges"]));
    assert_eq!(demo["failure"], want["failure"]);

    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("ctxgraph"))
        .current_dir(dir.path())
        .args(["--db", &to, "ui", "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let line = crate::first_line(&mut child);
    let url = line.trim().strip_prefix("explorer at ").unwrap_or_else(|| panic!("{line:?}"));
    let (base, key) = url.split_once("/#key=").unwrap_or_else(|| panic!("{url}"));
    let (status, stats) = fetch(&format!("{base}/v1/stats"), key);
    assert_eq!(status, 200, "{stats}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&stats).unwrap()["events"], 400);
    let (status, node) = fetch(&format!("{base}/v1/nodes/service:ci-runner"), key);
    assert_eq!(status, 200, "{node}");
    assert_eq!(fetch(&format!("{base}/v1/stats"), "cgk_0000").0, 401);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_benchmarks_of_the_embedded_store_refuse_a_scale_out_store_saying_why() {
    let dir = TempDir::new().unwrap();
    for bench in ["semantic", "forget", "memory", "serve", "crash", "soak"] {
        let (code, err) = ctxgraph(&dir, "redis://127.0.0.1:6379/team", &["bench", bench]);
        assert_eq!(code, 2, "{bench}: {err}");
        let said = format!("`bench {bench}` measures the embedded store only");
        assert!(err.contains(&said) && err.contains("db.backend_unsupported"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was made");
}
