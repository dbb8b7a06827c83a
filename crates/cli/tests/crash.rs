//! Crash safety: `kill -9` in the middle of an ingestion loses no acknowledged record and leaves a
//! store that opens, whose log is a gap-free prefix of the input, and whose graph equals a
//! reprojection. Its own test binary, because it kills processes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use serde_json::Value;

const EVENTS: usize = 12_000;

fn ctxgraph(db: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ctxgraph"));
    c.env_remove("CTXGRAPH_DB").arg("--db").arg(db);
    c
}

fn json(c: &mut Command) -> Value {
    let out = c.output().unwrap();
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn kill_9_during_ingest_loses_nothing_acknowledged() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("crash.ctxg");
    let trace = dir.path().join("trace.jsonl");
    let out = ctxgraph(&db)
        .args(["generate", "--events", &EVENTS.to_string(), "--seed", "11"])
        .output()
        .unwrap();
    std::fs::write(&trace, &out.stdout).unwrap();
    let input_ids: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event_id"].as_str().unwrap().to_owned())
        .collect();

    for round in 1..=3u64 {
        let mut child = ctxgraph(&db)
            .args(["ingest", "--batch-size", "150", "--progress-json"])
            .arg(&trace)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let mut acknowledged = 0u64;
        for (n, line) in stderr.lines().enumerate() {
            let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
            acknowledged = acknowledged.max(v["last_position"].as_u64().unwrap());
            // Each round dies a little later, mid-batch, while the next transaction is open.
            if n as u64 >= round * 3 {
                break;
            }
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        let stats = json(ctxgraph(&db).args(["--json", "stats"]));
        let head = stats["log_length"].as_u64().unwrap();
        assert!(head >= acknowledged, "round {round}: acknowledged {acknowledged}, log has {head}");
        assert_eq!(stats["projection_lag"], 0, "record and projection commit together");
        let log = json(ctxgraph(&db).args(["--json", "log", "--limit", "100000"]));
        let ids: Vec<&str> =
            log.as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
        let positions: Vec<u64> =
            log.as_array().unwrap().iter().map(|e| e["position"].as_u64().unwrap()).collect();
        assert_eq!(
            positions,
            (1..=head).collect::<Vec<_>>(),
            "round {round}: positions are gap-free"
        );
        assert_eq!(ids, input_ids[..ids.len()], "round {round}: the log is a prefix of the input");
    }

    let done = ctxgraph(&db).args(["ingest", "--quiet"]).arg(&trace).output().unwrap();
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stdout));
    // `reproject` rebuilds the graph, its enrichment and its summaries: compare like with like.
    assert!(ctxgraph(&db).arg("consolidate").output().unwrap().status.success());
    let before = json(ctxgraph(&db).args(["--json", "stats"]));
    assert_eq!(before["log_length"], EVENTS);
    assert!(ctxgraph(&db).arg("reproject").output().unwrap().status.success());
    let after = json(ctxgraph(&db).args(["--json", "stats"]));
    for field in ["nodes", "edges", "pending_edges", "log_length", "enriched_through"] {
        assert_eq!(before[field], after[field], "{field} differs after reproject");
    }
}
