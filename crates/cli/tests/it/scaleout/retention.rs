//! `retention` on a scale-out store: the same report and the same graph after as a store file
//! given the same log and the same pass (nodes, edges, session orders, vectors and archive
//! marks); a worker folding new records leaves archived events out; `reproject` keeps them out
//! on both and `reproject --include-archive` brings them back on both; `consolidate --retention`
//! archives on both alike.

use std::collections::BTreeMap;

use ctxgraph_ontology::graph::{Edge, Node, NodeKey};
use ctxgraph_scaleout::{FalkorGraph, StoreUrl};
use ctxgraph_store::{Archived, Embedded, GraphReader, OpenMode, SessionSlot};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::{ctxgraph, fresh_store, json_of, workers_once};

/// Days the trace spans.
const DAYS: i64 = 60;

/// Two sessions of tool calls, one every nine hours over [`DAYS`] days up to 2026-11-30, each
/// naming a service; failures among them, so importance varies and cold events both stay and
/// go. The texts repeat per service and name the week, so consolidation links similar events
/// of the same weeks (and warm events keep links to prune once the old ones are archived).
fn trace(dir: &TempDir) -> String {
    let end = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z").unwrap();
    let services = ["billing", "search", "checkout", "ledger"];
    let weeks =
        ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo"];
    let mut lines = String::new();
    let steps = DAYS * 24 / 9;
    for i in 0..steps {
        let hours_ago = 9 * (steps - 1 - i);
        let at = end - chrono::Duration::hours(hours_ago);
        let week = weeks[(hours_ago / (24 * 7)) as usize];
        let service = services[(i % 4) as usize];
        let failed = i % 5 == 0;
        let status = if failed { "failed" } else { "completed" };
        let line = json!({
            "event_id": format!("e{i:04}"), "event_type": "tool.execute",
            "session_id": format!("s{}", i % 2), "agent_id": "agent", "trace_id": format!("t{}", i % 2),
            "tool_name": "deploy", "status": status,
            "occurred_at": at.to_rfc3339(),
            "entities": [{"name": service, "entity_type": "service"}],
            "payload": {"text": format!("deploy {service} {status} during {week} window: rollout step {}", i % 3)},
        });
        lines.push_str(&format!("{line}\n"));
    }
    std::fs::write(dir.path().join("aged.jsonl"), lines).unwrap();
    "aged.jsonl".into()
}

/// One more event, newest of all, in session `s0`.
fn newest(dir: &TempDir) -> String {
    let line = json!({
        "event_id": "late", "event_type": "tool.execute", "session_id": "s0",
        "agent_id": "agent", "trace_id": "t0", "tool_name": "deploy", "status": "completed",
        "occurred_at": "2026-11-30T06:00:00Z",
        "entities": [{"name": "billing", "entity_type": "service"}],
        "payload": {"text": "deploy billing completed: rollout step 0"},
    });
    std::fs::write(dir.path().join("late.jsonl"), format!("{line}\n")).unwrap();
    "late.jsonl".into()
}

/// What retention changes, by key: every node, every edge, each session's order, the nodes
/// that have a vector, and the archive marks.
#[derive(Debug, PartialEq)]
struct Graph {
    nodes: Vec<Node>,
    edges: Vec<Edge>,
    sessions: BTreeMap<String, Vec<SessionSlot>>,
    with_vectors: Vec<NodeKey>,
    archived: Vec<Archived>,
}

impl Graph {
    fn of(read: &dyn GraphReader) -> Graph {
        let (nodes, edges, sessions) = super::graph_parts(read);
        let with_vectors =
            nodes.iter().filter(|n| read.vector(&n.key).unwrap().is_some()).map(|n| n.key.clone());
        Graph {
            with_vectors: with_vectors.collect(),
            nodes,
            edges,
            sessions,
            archived: read.archived(None, 100_000).unwrap(),
        }
    }

    fn events(&self) -> usize {
        self.nodes.iter().filter(|n| n.key.label == "Event").count()
    }

    fn edges_of_type(&self, edge_type: &str) -> usize {
        self.edges.iter().filter(|e| e.key.edge_type == edge_type).count()
    }
}

/// Both graphs, the store file's and the scale-out store's.
fn both(dir: &TempDir, to: &str) -> (Graph, Graph) {
    let file = Embedded::open(&dir.path().join("file.ctxg"), OpenMode::MustExist).unwrap();
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(to).unwrap()).unwrap();
    (Graph::of(&file.begin_read().unwrap()), Graph::of(&remote))
}

/// Run `args` on both stores; their JSON outputs, asserting both succeeded.
fn on_both(dir: &TempDir, to: &str, args: &[&str]) -> (Value, Value) {
    (json_of(dir, "file.ctxg", args), json_of(dir, to, args))
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn retention_on_a_scale_out_store_equals_a_store_files_and_reproject_keeps_it() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let trace = trace(&dir);
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", &trace]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["consolidate"]);
    assert_eq!(code, 0, "{err}");
    json_of(&dir, &to, &["ingest", &trace]);
    workers_once(&dir, &to);
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph before retention");
    let all_events = file.events();
    assert!(file.edges_of_type("SIMILAR_TO") > 0, "consolidation linked similar events");

    // The plan changes nothing, and says the same on both.
    let (plan_file, plan_remote) = on_both(&dir, &to, &["retention"]);
    assert_eq!(plan_remote, plan_file);
    assert_eq!(both(&dir, &to).1, remote, "a plan changes nothing");

    // Applied: the same report, the same graph, the same archive marks.
    let (report_file, report_remote) = on_both(&dir, &to, &["retention", "--apply"]);
    assert_eq!(report_remote, report_file);
    let archived = report_file["archived"].as_u64().unwrap();
    assert!(archived > 0 && report_file["cold_kept"].as_u64().unwrap() > 0, "{report_file}");
    assert!(report_file["similar_pruned"].as_u64().unwrap() > 0, "{report_file}");
    assert_eq!(report_file["archived"], plan_file["archived"], "the plan foretold it");
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph after retention");
    assert_eq!(file.events(), all_events - archived as usize);
    assert_eq!(file.archived.len() as u64, archived);
    let again = json_of(&dir, &to, &["retention", "--apply"]);
    assert_eq!(again["archived"].as_u64(), Some(0), "idempotent: {again}");
    assert_eq!(both(&dir, &to).1, remote);

    // A worker folding a new record leaves the archived events out.
    let late = newest(&dir);
    let (code, err) = ctxgraph(&dir, "file.ctxg", &["ingest", &late]);
    assert_eq!(code, 0, "{err}");
    json_of(&dir, &to, &["ingest", &late]);
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--stage", "enrich", "--once"]);
    assert_eq!(code, 0, "{err}");
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph after a new record");
    assert_eq!(file.events(), all_events + 1 - archived as usize);

    // Reprojected: the archived events stay out on both.
    on_both(&dir, &to, &["reproject"]);
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph after reproject");
    assert_eq!(file.events(), all_events + 1 - archived as usize);
    assert_eq!(file.archived.len() as u64, archived, "the marks stay");

    // Reprojected with the archive: every event is back and no mark is left, on both.
    on_both(&dir, &to, &["reproject", "--include-archive"]);
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph after reproject --include-archive");
    assert_eq!(file.events(), all_events + 1);
    assert!(file.archived.is_empty());

    // `consolidate --retention` archives them again, the same way on both.
    let (file_run, remote_run) = on_both(&dir, &to, &["consolidate", "--retention"]);
    assert_eq!(remote_run["retention"], file_run["retention"]);
    assert!(file_run["retention"]["archived"].as_u64().unwrap() > 0, "{file_run}");
    let (file, remote) = both(&dir, &to);
    assert_eq!(remote, file, "the same graph after consolidate --retention");
    assert!(!file.archived.is_empty());
}
