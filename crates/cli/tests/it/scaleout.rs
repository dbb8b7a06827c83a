//! The scale-out backend from the command line: `--db redis://…` is refused clearly by every
//! command that cannot run there (the URL must not be taken for a file path); `migrate`,
//! `worker` and `stats` run on a real server (the `#[ignore]`d tests, which read
//! `CTXGRAPH_TEST_REDIS`; `.ci/scaleout.sh` starts a server and runs them).

mod servers;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use assert_cmd::Command;
use serde_json::Value;
use tempfile::TempDir;

fn ctxgraph(dir: &TempDir, db: &str, args: &[&str]) -> (i32, String) {
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (out.status.code().unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// Fold, enrich and consolidate the scale-out store `to` to its head, each stage's worker once.
fn workers_once(dir: &TempDir, to: &str) {
    for args in [
        &["worker", "--once"][..],
        &["worker", "--stage", "enrich", "--once"],
        &["worker", "--stage", "consolidate", "--once"],
    ] {
        let (code, err) = ctxgraph(dir, to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
}

/// Every node (label by label), edge (type by type) and session order of a graph, for the
/// comparisons of two backends' graphs.
fn graph_parts(
    read: &dyn ctxgraph_store::GraphReader,
) -> (
    Vec<ctxgraph_ontology::graph::Node>,
    Vec<ctxgraph_ontology::graph::Edge>,
    BTreeMap<String, Vec<ctxgraph_store::SessionSlot>>,
) {
    let counts = read.counts().unwrap();
    let mut nodes = Vec::new();
    for (label, _) in &counts.nodes {
        nodes.extend(read.nodes_by_label(label, None, 100_000).unwrap());
    }
    let mut edges = Vec::new();
    for (edge_type, _) in &counts.edges {
        edges.extend(read.edges_by_type(edge_type, None, 100_000).unwrap());
    }
    let sessions = read
        .sessions(None, 100_000)
        .unwrap()
        .into_iter()
        .map(|s| {
            let order = read.session_events(&s, 100_000).unwrap();
            (s, order)
        })
        .collect();
    (nodes, edges, sessions)
}

#[test]
fn a_scale_out_url_is_refused_naming_the_command_and_nothing_is_created() {
    let dir = TempDir::new().unwrap();
    // Every command runs on a scale-out store but the benchmarks that build a store file of
    // their own, which say so.
    for args in [&["bench", "semantic"][..], &["bench", "soak"]] {
        let (code, err) = ctxgraph(&dir, "redis://127.0.0.1:6379/team-a", args);
        assert_eq!(code, 2, "{args:?}: {err}");
        let expected = format!("`bench {}` measures the embedded store only", args[1]);
        assert!(err.contains(&expected), "{args:?}: {err}");
        assert!(err.contains("db.backend_unsupported"), "{err}");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file was made of the URL");
}

#[test]
fn a_malformed_scale_out_url_names_its_field_value_and_rule() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "redis://127.0.0.1:0/team", &["stats"]);
    assert_eq!(code, 2);
    assert!(err.contains("port `0`") && err.contains("url.port"), "{err}");
    let (_, err) = ctxgraph(&dir, "redis://127.0.0.1:6379/a/b", &["stats"]);
    assert!(err.contains("name `a/b`") && err.contains("url.store_name"), "{err}");
}

#[test]
fn generate_needs_no_store() {
    let dir = TempDir::new().unwrap();
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .args(["--db", "redis://127.0.0.1:6379/team", "generate", "--events", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 3, "{out:?}");
}

#[test]
fn completions_need_no_store() {
    let dir = TempDir::new().unwrap();
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .args(["--db", "redis://127.0.0.1:6379/team", "completions", "bash"])
        .output()
        .unwrap();
    assert!(out.status.success());
}

#[test]
fn the_scale_out_commands_that_bypass_the_engine_take_no_principal() {
    let dir = TempDir::new().unwrap();
    for args in [&["stats"][..], &["worker", "--once"], &["bench", "recall"]] {
        let out = Command::cargo_bin("ctxgraph")
            .unwrap()
            .current_dir(dir.path())
            .args(["--db", "redis://127.0.0.1:6379/team", "--as", "alice"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--as `alice`") && err.contains("db.backend_unsupported"), "{err}");
    }
    // The others take one from the registry --principals names: there is none beside a store
    // on a server.
    for args in [&["recall", "why"][..], &["ingest", "-"], &["forget", "event", "e1"]] {
        let out = Command::cargo_bin("ctxgraph")
            .unwrap()
            .current_dir(dir.path())
            .args(["--db", "redis://127.0.0.1:6379/team", "--as", "alice"])
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--principals") && err.contains("access.registry_required"), "{err}");
    }
}

#[test]
fn migrate_refuses_two_scale_out_stores_a_taken_file_and_a_malformed_target() {
    let dir = TempDir::new().unwrap();
    let (code, err) =
        ctxgraph(&dir, "x.ctxg", &["migrate", "redis://127.0.0.1:6379/a", "redis://h/b"]);
    assert_eq!(code, 2);
    assert!(err.contains("migrate.direction_unsupported"), "{err}");
    std::fs::write(dir.path().join("taken.ctxg"), "").unwrap();
    let (code, err) =
        ctxgraph(&dir, "x.ctxg", &["migrate", "redis://127.0.0.1:6379/a", "taken.ctxg"]);
    assert_eq!(code, 2);
    assert!(err.contains("exists") && err.contains("migrate.target_not_empty"), "{err}");
    let (code, err) = ctxgraph(&dir, "x.ctxg", &["migrate", "x.ctxg", "redis://127.0.0.1/a b"]);
    assert_eq!(code, 2);
    assert!(err.contains("TO") && err.contains("url.store_name"), "{err}");
    let (code, err) = ctxgraph(&dir, "x.ctxg", &["worker", "--once"]);
    assert_eq!(code, 2);
    assert!(err.contains("worker.backend"), "{err}");
}

/// `redis://HOST:PORT/NAME` of a store no other test uses, on the test server.
/// Held by the tests that forget on the server, one at a time: a forget rewrites the server's
/// append-only file (a fork of the server) and reads its files, which another test's forget
/// running at once disturbs (a probe of the files between a rewrite's steps, a fork during
/// another forget's deletions).
fn one_forget_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn fresh_store() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let server = std::env::var("CTXGRAPH_TEST_REDIS").unwrap_or_else(|_| {
        panic!(
            "CTXGRAPH_TEST_REDIS is not set: set it to redis://HOST:PORT of a Redis server with \
             the FalkorDB module (.ci/scaleout.sh starts one and runs these tests)"
        )
    });
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}/cli{}-{n}-{nanos}", server.trim_end_matches('/'), std::process::id())
}

/// A demo store (the bundled trace, ingested, enriched and consolidated) in `dir`.
fn demo_store(dir: &TempDir) -> &'static str {
    let (code, err) = ctxgraph(dir, "demo.ctxg", &["--json", "demo"]);
    assert_eq!(code, 0, "{err}");
    "demo.ctxg"
}

/// The JSON a command prints, asserting it succeeded.
fn json_of(dir: &TempDir, db: &str, args: &[&str]) -> Value {
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .args(["--db", db, "--json"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {err}"))
}

fn counts(v: &Value) -> BTreeMap<String, u64> {
    v.as_object().unwrap().iter().map(|(k, n)| (k.clone(), n.as_u64().unwrap())).collect()
}

/// What stages 2 and 3 add to the embedded store and the projection does not make: summaries
/// (consolidation), SIMILAR_TO (embeddings), SUMMARIZES (consolidation) and RELATED_TO (entity
/// resolution). The scale-out backend runs the projection only, so these are left out of the
/// comparison, and nothing else is.
const DERIVED_LABELS: &[&str] = &["Summary"];
const DERIVED_TYPES: &[&str] = &["SIMILAR_TO", "SUMMARIZES", "RELATED_TO", "SAME_AS"];

/// The FalkorDB graph's counts per label and per type equal the embedded store's, except what
/// only stages 2 and 3 make; and the derived part is really there in the embedded store, so the
/// comparison leaves out something real.
fn assert_stage_one_counts_equal(embedded: &Value, scaled: &Value) {
    for (field, derived) in [("nodes", DERIVED_LABELS), ("edges", DERIVED_TYPES)] {
        let mut want = counts(&embedded[field]);
        let got = counts(&scaled[field]);
        assert!(derived.iter().any(|d| want.contains_key(*d)), "{field}: {want:?}");
        want.retain(|k, _| !derived.contains(&k.as_str()));
        assert_eq!(got, want, "{field}: FalkorDB's graph against the embedded stage-1 graph");
    }
    assert_eq!(scaled["pending_edges"], embedded["pending_edges"]);
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn migrate_copies_the_demo_store_and_its_graph_equals_the_embedded_projection() {
    let dir = TempDir::new().unwrap();
    let file = demo_store(&dir);
    let embedded = json_of(&dir, file, &["stats"]);
    let to = fresh_store();
    let summary = json_of(&dir, file, &["migrate", file, &to]);
    let records = embedded["log_length"].as_u64().unwrap();
    assert!(records > 0);
    assert_eq!(summary["records_copied"].as_u64(), Some(records));
    assert_eq!(summary["records_folded"].as_u64(), Some(records));
    assert_eq!(summary["projected_through"].as_u64(), Some(records));
    assert_stage_one_counts_equal(&embedded, &summary);

    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(stats["log_length"].as_u64(), Some(records));
    assert_eq!(stats["projection_lag"].as_u64(), Some(0));
    assert_eq!(stats["projection_group"], Value::Null, "migrate folds without a consumer group");
    assert_stage_one_counts_equal(&embedded, &stats);

    // The log reads back record for record: the same positions, kinds, ids, times and bodies.
    let want = json_of(&dir, file, &["log", "--limit", "100000"]);
    let url = ctxgraph_scaleout::StoreUrl::parse(&to).unwrap();
    let copied = ctxgraph_store::LogReader::read_from(
        &ctxgraph_scaleout::RedisLog::connect(&url).unwrap(),
        1,
        100_000,
    )
    .unwrap();
    let want = want.as_array().unwrap();
    assert_eq!(copied.len(), want.len());
    for (got, want) in copied.iter().zip(want) {
        assert_eq!(want["position"].as_u64(), Some(got.position));
        assert_eq!(want["kind"].as_str(), Some(got.kind.as_str()));
        assert_eq!(want["id"].as_str(), Some(got.id.as_str()));
        assert_eq!(want["recorded_at"].as_str(), Some(got.recorded_at.as_str()));
        assert_eq!(want["record"], serde_json::from_str::<Value>(&got.body).unwrap());
    }

    // A store that is not empty is refused.
    let (code, err) = ctxgraph(&dir, file, &["migrate", file, &to]);
    assert_eq!(code, 2);
    assert!(err.contains("is not empty") && err.contains("migrate.target_not_empty"), "{err}");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_worker_run_once_folds_a_copied_log_to_its_head() {
    let dir = TempDir::new().unwrap();
    let file = demo_store(&dir);
    let embedded = json_of(&dir, file, &["stats"]);
    let records = embedded["log_length"].as_u64().unwrap();
    let to = fresh_store();
    let summary = json_of(&dir, file, &["migrate", "--no-fold", file, &to]);
    assert_eq!(summary["records_folded"].as_u64(), Some(0));

    let before = json_of(&dir, &to, &["stats"]);
    assert_eq!(before["projected_through"].as_u64(), Some(0));
    assert_eq!(before["projection_lag"].as_u64(), Some(records));
    assert!(counts(&before["nodes"]).is_empty(), "{before}");

    let run = json_of(&dir, &to, &["worker", "--once", "--name", "w-1"]);
    assert_eq!(run["records_folded"].as_u64(), Some(records), "{run}");
    assert_eq!(run["projected_through"].as_u64(), Some(records));
    assert_eq!(run["stopped_by_signal"], false);

    let after = json_of(&dir, &to, &["stats"]);
    assert_eq!(after["projection_lag"].as_u64(), Some(0));
    let group = &after["projection_group"];
    assert_eq!(group["pending"].as_u64(), Some(0), "every entry acknowledged: {after}");
    assert_eq!(group["undelivered"].as_u64(), Some(0), "{after}");
    assert_eq!(group["delivered_through"].as_u64(), Some(records), "{after}");
    assert_stage_one_counts_equal(&embedded, &after);

    // A second worker finds nothing to fold and counts nothing twice.
    let again = json_of(&dir, &to, &["worker", "--once", "--name", "w-2"]);
    assert_eq!(again["records_folded"].as_u64(), Some(0));
    assert_stage_one_counts_equal(&embedded, &json_of(&dir, &to, &["stats"]));
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn migrate_back_to_a_store_file_gives_the_same_log_and_the_same_graph() {
    let dir = TempDir::new().unwrap();
    let file = demo_store(&dir);
    let embedded = json_of(&dir, file, &["stats"]);
    let to = fresh_store();
    json_of(&dir, file, &["migrate", file, &to]);
    let back = json_of(&dir, file, &["migrate", &to, "back.ctxg"]);
    let records = embedded["log_length"].as_u64().unwrap();
    assert_eq!(back["records_copied"].as_u64(), Some(records), "{back}");
    assert_eq!(back["projected_through"].as_u64(), Some(records), "{back}");
    // Byte for byte: positions, kinds, ids, times and bodies.
    assert_eq!(
        json_of(&dir, "back.ctxg", &["log", "--limit", "100000"]),
        json_of(&dir, file, &["log", "--limit", "100000"])
    );
    // The embedded engine projects, enriches and consolidates the copied log into the graph the
    // original store holds, derived nodes and edges included.
    let again = json_of(&dir, "back.ctxg", &["stats"]);
    for field in ["nodes", "edges", "pending_edges"] {
        assert_eq!(again[field], embedded[field], "{field}");
    }
}

/// A worker started on `to` (an empty store) with `--json`, once it has joined the projection
/// group: records written after this are the worker's to fold.
/// A running `worker` process, killed when dropped unless it was taken out to be stopped: a
/// failing test must not leave it folding.
struct LiveWorker(Option<std::process::Child>);

impl LiveWorker {
    /// The process, to stop and wait for; no longer killed on drop.
    fn into_child(mut self) -> std::process::Child {
        self.0.take().expect("a live worker holds its process until taken")
    }

    /// The process's id.
    fn id(&self) -> u32 {
        self.0.as_ref().map_or(0, std::process::Child::id)
    }
}

impl Drop for LiveWorker {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn running_worker(dir: &TempDir, to: &str) -> LiveWorker {
    let worker = std::process::Command::new(assert_cmd::cargo::cargo_bin("ctxgraph"))
        .current_dir(dir.path())
        .args(["--db", to, "--json", "worker", "--name", "live"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let worker = LiveWorker(Some(worker));
    let joined = wait_for(|| !json_of(dir, to, &["stats"])["projection_group"].is_null());
    assert!(joined, "the worker never joined the projection group");
    worker
}

/// Wait until the worker has folded and acknowledged `records`, then stop it with SIGTERM and
/// return what it printed, asserting it stopped cleanly.
fn stop_after_folding(dir: &TempDir, to: &str, worker: LiveWorker, records: u64) -> Value {
    let folded = wait_for(|| {
        let s = json_of(dir, to, &["stats"]);
        s["projected_through"].as_u64() == Some(records)
            && s["projection_group"]["pending"].as_u64() == Some(0)
    });
    assert!(folded, "the worker did not fold the {records} records it was sent");
    let pid = worker.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let out = worker.into_child().wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the worker did not stop cleanly: {err}");
    let run: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(run["stopped_by_signal"], true);
    run
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_running_worker_folds_records_as_they_arrive_and_stops_on_sigterm() {
    let dir = TempDir::new().unwrap();
    let file = demo_store(&dir);
    let embedded = json_of(&dir, file, &["stats"]);
    let records = embedded["log_length"].as_u64().unwrap();
    let to = fresh_store();
    let worker = running_worker(&dir, &to);
    json_of(&dir, file, &["migrate", "--no-fold", file, &to]);
    let run = stop_after_folding(&dir, &to, worker, records);
    assert_eq!(run["records_folded"].as_u64(), Some(records), "{run}");
    assert_stage_one_counts_equal(&embedded, &json_of(&dir, &to, &["stats"]));
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_running_worker_takes_up_a_schema_module_written_after_it_started() {
    let dir = TempDir::new().unwrap();
    let module = dir.path().join("ops.toml");
    std::fs::write(
        &module,
        "module = \"ops\"\n[enums.entity_type]\nvalues = [{ name = \"dataset\", parent = \"prov:Entity\" }]\n",
    )
    .unwrap();
    let (code, err) = ctxgraph(&dir, "ops.ctxg", &["schema", "add", module.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // An event naming an entity of the type only the module declares.
    let event = r#"{"event_id":"d1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"a","trace_id":"t","entities":[{"name":"sales","entity_type":"dataset"}]}"#;
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .args(["--db", "ops.ctxg", "ingest", "-"])
        .write_stdin(format!("{event}\n"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let embedded = json_of(&dir, "ops.ctxg", &["stats"]);
    let records = embedded["log_length"].as_u64().unwrap();
    assert_eq!(records, 2, "the module and the event: {embedded}");

    let to = fresh_store();
    let worker = running_worker(&dir, &to);
    json_of(&dir, "ops.ctxg", &["migrate", "--no-fold", "ops.ctxg", &to]);
    stop_after_folding(&dir, &to, worker, records);
    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(counts(&stats["nodes"]), counts(&embedded["nodes"]), "{stats}");
    assert_eq!(counts(&stats["edges"]), counts(&embedded["edges"]), "{stats}");
}

/// Poll `ready` until it holds (true) or a generous bound passes (false): a slow machine
/// waits longer, and only a worker that never gets there fails.
fn wait_for(mut ready: impl FnMut() -> bool) -> bool {
    for _ in 0..600 {
        if ready() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    false
}

#[test]
fn bench_ingest_takes_workers_and_stores_on_a_scale_out_store_only() {
    let dir = TempDir::new().unwrap();
    let (code, err) = ctxgraph(&dir, "x.ctxg", &["bench", "ingest", "--workers", "2"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--workers") && err.contains("bench.backend"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was built");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn bench_recall_times_both_backends_on_one_graph_and_their_packs_agree() {
    let dir = TempDir::new().unwrap();
    let db = fresh_store();
    let run = json_of(&dir, &db, &["bench", "recall", "--events", "400", "--queries", "25"]);
    let asked = run["queries"].as_u64().unwrap();
    assert!(asked > 0, "{run}");
    // The same stage-1 graph on both backends answers every question with the same pack, and
    // some of those packs hold items (entities and sessions the questions name).
    assert_eq!(run["identical_packs"].as_u64(), Some(asked), "{run}");
    assert!(run["embedded"]["answered"].as_u64().unwrap() > 0, "{run}");
    assert_eq!(run["embedded"]["answered"], run["scale_out"]["answered"], "{run}");
    assert_eq!(run["records_folded"].as_u64(), Some(400), "{run}");
    for side in ["embedded", "scale_out"] {
        let p50 = run[side]["p50_ms"].as_f64().unwrap();
        assert!(p50 > 0.0 && p50 <= run[side]["p99_ms"].as_f64().unwrap(), "{side}: {run}");
        assert!(run[side]["p50_asked_again_ms"].as_f64().unwrap() > 0.0, "{side}: {run}");
    }
    assert!(run["p50_ratio_asked_again"].as_f64().unwrap() > 0.0, "{run}");
    // The store is taken now: a second run under the same name is refused before writing.
    let (code, err) = ctxgraph(&dir, &db, &["bench", "recall", "--events", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bench recall") && err.contains("bench.target_not_empty"), "{err}");
    // The options of the embedded bench do not apply here.
    let (code, err) = ctxgraph(&dir, &fresh_store(), &["bench", "recall", "--threads", "4"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bench.backend"), "{err}");
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn bench_ingest_appends_and_folds_every_event_into_tenant_stores_with_two_workers() {
    let dir = TempDir::new().unwrap();
    let db = fresh_store();
    let run = json_of(
        &dir,
        &db,
        &["bench", "ingest", "--events", "301", "--batch-size", "50", "--workers", "2"],
    );
    let phases = run["phases"].as_array().unwrap();
    let names: Vec<&str> = phases.iter().map(|p| p["phase"].as_str().unwrap()).collect();
    assert_eq!(names, ["log append", "fold", "end to end"], "{run}");
    for p in phases {
        assert_eq!(p["records"].as_u64(), Some(301), "{run}");
    }
    assert!(run["lag_at_last_append"].as_u64().unwrap() <= 301, "{run}");

    // The events went to two stores per phase, each folded to its head, every event once.
    let name = db.rsplit('/').next().unwrap();
    let server = db.trim_end_matches(name);
    let stores: Vec<&str> =
        run["stores"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    let expected = ["-0", "-1", "-e2e-0", "-e2e-1"].map(|s| format!("{name}{s}"));
    assert_eq!(stores, expected);
    for pair in stores.chunks(2) {
        let mut events = 0;
        for store in pair {
            let stats = json_of(&dir, &format!("{server}{store}"), &["stats"]);
            assert_eq!(stats["projection_lag"].as_u64(), Some(0), "{store}: {stats}");
            assert_eq!(stats["projection_group"]["pending"].as_u64(), Some(0), "{store}: {stats}");
            let log = stats["log_length"].as_u64().unwrap();
            assert_eq!(counts(&stats["nodes"])["Event"], log, "{store}: every event folded once");
            events += log;
        }
        assert_eq!(events, 301, "{pair:?}");
    }

    // The stores are taken now: a second run under the same name is refused before writing.
    let (code, err) = ctxgraph(&dir, &db, &["bench", "ingest", "--events", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bench.target_not_empty"), "{err}");
}

#[test]
#[ignore = "needs two Redis servers with FalkorDB: CTXGRAPH_TEST_REDIS and \
            CTXGRAPH_TEST_REDIS_VOLATILE (.ci/scaleout.sh)"]
fn over_two_instances_each_store_lives_whole_on_the_instance_its_name_hashes_to() {
    let dir = TempDir::new().unwrap();
    let authority = |var: &str| {
        let url = std::env::var(var).unwrap_or_else(|_| panic!("{var} is not set"));
        url.trim_start_matches("redis://").trim_end_matches('/').to_owned()
    };
    let (a, b) = (authority("CTXGRAPH_TEST_REDIS"), authority("CTXGRAPH_TEST_REDIS_VOLATILE"));
    let name = fresh_store().rsplit('/').next().unwrap().to_owned();
    let db = format!("redis://{a},{b}/{name}");
    let run = json_of(
        &dir,
        &db,
        &["bench", "ingest", "--events", "240", "--batch-size", "40", "--workers", "2"],
    );
    assert_eq!(run["servers"], serde_json::json!([a, b]), "{run}");
    let stores: Vec<&str> =
        run["stores"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert_eq!(stores.len(), 4, "{run}");
    for pair in stores.chunks(2) {
        let mut homes = Vec::new();
        for store in pair {
            // Through the URL of both instances, the store is found and folded to its head.
            let stats = json_of(&dir, &format!("redis://{b},{a}/{store}"), &["stats"]);
            assert_eq!(stats["projection_lag"].as_u64(), Some(0), "{store}: {stats}");
            let log = stats["log_length"].as_u64().unwrap();
            assert_eq!(counts(&stats["nodes"])["Event"], log, "{store}: every event folded once");
            assert_eq!(log, 120, "{store}: {stats}");
            let home = stats["instance"].as_str().unwrap().to_owned();
            // Whole on one instance: its log and graph there, nothing of it on the other.
            let on: Vec<u64> = [&a, &b]
                .iter()
                .map(|i| json_of(&dir, &format!("redis://{i}/{store}"), &["stats"]))
                .map(|s| {
                    s["log_length"].as_u64().unwrap() + s["projected_through"].as_u64().unwrap()
                })
                .collect();
            assert!(on.contains(&0) && on.contains(&240), "{store}: {on:?}");
            // `stats` names the instance that holds it.
            assert_eq!(&home, if on[0] == 0 { &b } else { &a }, "{store}: {on:?}");
            homes.push(on[0] == 0);
        }
        // The bench spreads each phase's stores over both instances.
        assert_ne!(homes[0], homes[1], "{pair:?}");
    }

    // A store written on the instance that is not its home under this list (as after an
    // instance was added) is refused by name, not started afresh on its home.
    let both = ctxgraph_scaleout::StoreUrl::parse(&db).unwrap();
    let elsewhere = (0..)
        .map(|i| both.with_name(&format!("{name}-moved{i}")).unwrap())
        .find(|u| u.instance() == a)
        .unwrap();
    // A read through the URL of both first: it finds nothing, and what it leaves on the home
    // (the graph's indexes) does not make the home hold the store.
    let before = json_of(&dir, &elsewhere.to_string(), &["stats"]);
    assert_eq!((before["instance"].as_str(), before["log_length"].as_u64()), (Some(&*a), Some(0)));
    let demo = demo_store(&dir);
    let (code, err) =
        ctxgraph(&dir, demo, &["migrate", demo, &format!("redis://{b}/{}", elsewhere.name())]);
    assert_eq!(code, 0, "{err}");
    for args in [&["stats"][..], &["worker", "--once"], &["ingest", "-"]] {
        let (code, err) = ctxgraph(&dir, &elsewhere.to_string(), args);
        assert_ne!(code, 0, "{args:?}: {err}");
        assert!(err.contains("store.misplaced") && err.contains(&format!("is on {b}")), "{err}");
        assert!(err.contains(&format!("belongs on {a}")), "{err}");
    }
    let stats = json_of(&dir, &format!("redis://{a}/{}", elsewhere.name()), &["stats"]);
    assert_eq!(stats["log_length"].as_u64(), Some(0), "nothing was written on its home: {stats}");
}

/// A command's exit code and JSON output, with what differs between any two runs taken out:
/// timings and acknowledgement times.
fn normalised(dir: &TempDir, db: &str, args: &[&str]) -> (i32, Value) {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("timings_us");
                map.remove("recorded_at");
                map.values_mut().for_each(strip);
            }
            Value::Array(list) => list.iter_mut().for_each(strip),
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .args(["--db", db, "--json"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let mut v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {err}"));
    strip(&mut v);
    (out.status.code().unwrap(), v)
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn reads_on_a_scale_out_store_equal_a_store_file_without_stages_two_and_three() {
    let dir = TempDir::new().unwrap();
    let trace = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/demo-trace.jsonl");
    // The scale-out backend folds stage 1 only: the store file it is compared with has no
    // enrichment either (no vectors, no full-text index, no summaries).
    let (code, err) = ctxgraph(&dir, "plain.ctxg", &["ingest", "--no-enrich", trace]);
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    let report = json_of(&dir, &to, &["ingest", trace]);
    assert_eq!(report["accepted"].as_u64(), Some(400), "{report}");
    assert_eq!(report["positions"]["last"].as_u64(), Some(400));

    // Appended, not folded: nothing to read until a worker folds it.
    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(stats["log_length"].as_u64(), Some(400));
    assert_eq!(stats["projection_lag"].as_u64(), Some(400));
    let (code, _) = normalised(&dir, &to, &["get", "evt-000002"]);
    assert_eq!(code, 1, "not folded yet");
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");

    let reads: &[&[&str]] = &[
        &["log", "--limit", "1000"],
        &["get", "evt-000002"],
        &["get", "ci pipeline"],
        &["neighbors", "evt-000002"],
        &["session", "sess-0001"],
        &["chain", "evt-000012"],
        &["view", "causal", "--limit", "50"],
        &["search", "failing test"],
    ];
    for args in reads {
        let want = normalised(&dir, "plain.ctxg", args);
        assert_eq!(normalised(&dir, &to, args), want, "{args:?}");
    }
    let mut found = 0;
    for question in [
        "why did the deploy fail",
        "what happened with the ci pipeline",
        "who asked about sess-0002",
    ] {
        let want = normalised(&dir, "plain.ctxg", &["recall", question]);
        let got = normalised(&dir, &to, &["recall", question]);
        assert_eq!(got, want, "{question}");
        found += want.1["items"].as_array().map_or(0, Vec::len);
        // A recall counts its reads (an access record): folded here as the store file folds it.
        let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
        assert_eq!(code, 0, "{err}");
    }
    assert!(found > 0, "the questions found something");
}

mod admin;
mod forget;
mod forget_entity;
mod imports;
mod knowledge;
mod principals;
mod retention;
mod stage2;
mod stage3;
