//! `--as` on a scale-out store: the principal comes from the registry `--principals` names,
//! must belong to the store's tenant, and reads only what its policy lets it, as on a store file.

use assert_cmd::Command;
use serde_json::json;
use tempfile::TempDir;

use super::{ctxgraph, fresh_store};

/// A command as principal `who` of the registry in `data/`: its exit code, stdout and stderr.
fn as_who(dir: &TempDir, db: &str, who: &str, args: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .args(["--db", db, "--json", "--as", who, "--principals", "data/principals.json"])
        .args(args)
        .output()
        .unwrap();
    let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
    (out.status.code().unwrap(), text(out.stdout), text(out.stderr))
}

fn add_principal(dir: &TempDir, name: &str, tenant: &str, roles: &[&str]) {
    let mut cmd = Command::cargo_bin("ctxgraph").unwrap();
    cmd.current_dir(dir.path()).args(["principal", "add", name, "--tenant", tenant]);
    for role in roles {
        cmd.args(["--role", role]);
    }
    let out = cmd.args(["--data", "data"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn a_principal_reads_a_scale_out_store_as_it_reads_a_store_file() {
    let _serial = super::one_forget_at_a_time();
    let dir = TempDir::new().unwrap();
    let event = |id: &str, at: &str, scope: serde_json::Value| {
        let mut e = json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
            "session_id": "s1", "agent_id": "planner", "trace_id": "t1",
            "tool_name": "deploy", "status": "completed", "payload": {"text": format!("step {id}")}});
        if !scope.is_null() {
            e["scope"] = scope;
        }
        format!("{e}\n")
    };
    let trace = event("e1", "2026-11-20T09:00:00Z", serde_json::Value::Null)
        + &event("e2", "2026-11-20T09:00:01Z", json!({"allow_roles": ["operator"]}))
        + &event("e3", "2026-11-20T09:00:02Z", serde_json::Value::Null);
    std::fs::write(dir.path().join("t.jsonl"), trace).unwrap();
    add_principal(&dir, "viewer", "default", &["viewer"]);
    add_principal(&dir, "ops", "default", &["operator", "writer", "admin"]);
    add_principal(&dir, "other", "acme", &["operator"]);
    let (code, err) = ctxgraph(&dir, "plain.ctxg", &["ingest", "--no-enrich", "t.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    // Ingest as a writer; a viewer may not write.
    let (code, _, err) = as_who(&dir, &to, "viewer", &["ingest", "t.jsonl"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("access.forbidden"), "{err}");
    let (code, _, err) = as_who(&dir, &to, "ops", &["ingest", "t.jsonl"]);
    assert_eq!(code, 0, "{err}");
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");

    // Every read as each principal answers as on the store file, the scoped event hidden from
    // the viewer and shown to the operator.
    for who in ["viewer", "ops"] {
        for args in [&["get", "e2"][..], &["get", "e1"], &["session", "s1"], &["neighbors", "e3"]] {
            let want = as_who(&dir, "plain.ctxg", who, args);
            let got = as_who(&dir, &to, who, args);
            assert_eq!((got.0, &got.1), (want.0, &want.1), "{who} {args:?}: {}", got.2);
        }
    }
    assert_eq!(as_who(&dir, &to, "viewer", &["get", "e2"]).0, 1, "hidden reads as absent");
    assert_eq!(as_who(&dir, &to, "ops", &["get", "e2"]).0, 0);
    let (_, session, _) = as_who(&dir, &to, "viewer", &["session", "s1"]);
    assert!(session.contains("e1") && !session.contains("e2"), "{session}");
    // The knowledge commands take the principal too: a writer records a fact, a viewer may
    // not, and both read it as on the store file.
    let fact = ["fact", "add", "deploy", "depends_on", "registry", "--subject-type", "concept"];
    let fact = [&fact[..], &["--object-type", "concept"]].concat();
    let worker = super::running_worker(&dir, &to);
    for db in ["plain.ctxg", to.as_str()] {
        let (code, _, err) = as_who(&dir, db, "ops", &fact);
        assert_eq!(code, 0, "{db}: {err}");
        let (code, _, err) = as_who(&dir, db, "viewer", &fact);
        assert_eq!(code, 2, "{db}: {err}");
        assert!(err.contains("access.forbidden"), "{db}: {err}");
    }
    drop(worker);
    for who in ["viewer", "ops"] {
        let ids = |db: &str| {
            let (code, out, err) = as_who(&dir, db, who, &["fact", "list"]);
            assert_eq!(code, 0, "{who} {db}: {err}");
            let list: serde_json::Value = serde_json::from_str(&out).unwrap();
            list.as_array().unwrap().iter().map(|f| f["fact_id"].clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&to), ids("plain.ctxg"), "{who}");
        assert_eq!(ids(&to), [json!("concept:deploy|depends_on|concept:registry")]);
    }
    // The owner's reads and forgetting stay the owner's and admins'.
    let (code, _, err) = as_who(&dir, &to, "viewer", &["log"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("access.owner_only"), "{err}");
    let (code, _, err) = as_who(&dir, &to, "viewer", &["forget", "event", "e1", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("access.forbidden"), "{err}");
    let (code, out, err) = as_who(&dir, &to, "ops", &["forget", "event", "e1", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"redacted\": 1") || out.contains("\"redacted\":1"), "{out}");
    // A principal of another tenant is refused: the store holds the default tenant.
    let (code, _, err) = as_who(&dir, &to, "other", &["get", "e3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("access.wrong_tenant"), "{err}");
}
