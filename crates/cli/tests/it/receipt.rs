//! `ctxgraph receipt add` and `ctxgraph receipt list`: seed 004's receipt in, queried by task,
//! actor, time window and policy result; bad receipts refused with the field and rule named.

use serde_json::{Value, json};

use crate::Dir;

fn json_of(d: &Dir, args: &[&str]) -> Value {
    let out = d.cmd(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn receipts_are_added_and_listed() {
    let d = Dir::new();
    let event = json!({"event_id": "e1", "event_type": "tool.execute",
        "occurred_at": "2025-01-05T11:59:00Z", "session_id": "s1", "agent_id": "ci",
        "trace_id": "t1", "tool_name": "run_tests", "status": "completed"});
    let trace = d.write("t.jsonl", &format!("{event}\n"));
    d.cmd(&["ingest", trace.to_str().unwrap()]).assert().success();
    let receipts = json!([
        {"id": "r1", "task": "deploy_pi5_wavecore_loop", "actor": "user/ops1",
            "approvals": ["user/reviewer_a"], "referenced_inputs": {"events": ["e1"]},
            "policies_checked": [{"id": "policy/pii_cleared", "result": "allow"}],
            "action": "promote_candidate", "outcome": {"status": "success"},
            "timestamps": {"committed": "2025-01-05T12:07:00Z"}},
        {"id": "r2", "task": "deploy_pi5_wavecore_loop", "actor": "user/ops2",
            "policies": [{"id": "policy/pii_cleared", "result": "denied"}],
            "action": "defer", "outcome": "pending", "committed_at": "2025-01-08T08:00:00Z"}
    ]);
    let file = d.write("r.json", &receipts.to_string());
    let added = json_of(&d, &["receipt", "add", file.to_str().unwrap()]);
    assert_eq!(added[0]["status"], json!("new"));
    assert_eq!(added[1]["status"], json!("new"));

    let all = json_of(&d, &["receipt", "list"]);
    let ids: Vec<&str> =
        all.as_array().unwrap().iter().map(|r| r["receipt_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["r2", "r1"]);
    assert_eq!(all[1]["referenced_inputs"]["events"], json!(["e1"]));
    let denied = json_of(&d, &["receipt", "list", "--policy", "policy/pii_cleared=deny"]);
    assert_eq!(denied.as_array().unwrap().len(), 1);
    assert_eq!(denied[0]["receipt_id"], json!("r2"));
    let window =
        json_of(&d, &["receipt", "list", "--since", "2025-01-05", "--until", "2025-01-06"]);
    assert_eq!(window[0]["receipt_id"], json!("r1"));
    let by = json_of(
        &d,
        &["receipt", "list", "--actor", "user/ops1", "--task", "deploy_pi5_wavecore_loop"],
    );
    assert_eq!(by.as_array().unwrap().len(), 1);
    d.cmd(&["receipt", "list", "--task", "nothing"]).assert().code(1);

    // A receipt citing a missing event, or breaking the rules, is refused and writes nothing.
    let before = d.store_files();
    let missing = d.write(
        "m.json",
        &json!({"task": "t", "actor": "a", "action": "x",
        "outcome": "success", "committed_at": "2025-01-05T12:07:00Z",
        "referenced_inputs": {"events": ["nope"]}})
        .to_string(),
    );
    let out = d.cmd(&["receipt", "add", missing.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("receipt.unknown_input"));
    let bad = d.write(
        "b.json",
        &json!({"task": "t", "actor": "a", "action": "x",
        "outcome": {"status": "done"}, "committed_at": "2025-01-05T12:07:00Z"})
        .to_string(),
    );
    let out = d.cmd(&["receipt", "add", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("$.outcome.status") && err.contains("\"done\"") && err.contains("schema.enum"),
        "{err}"
    );
    assert_eq!(d.store_files(), before);
}
