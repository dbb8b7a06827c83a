//! `ctxgraph forget` and `ctxgraph forgotten`: the secret's bytes leave the store files, reads
//! stop returning it, reprojection keeps it gone, and the audit lists it without the content.

use serde_json::{Value, json};

use crate::Dir;

const SECRET: &str = "okapi-quasar-4417-unique";

fn json_of(d: &Dir, args: &[&str]) -> Value {
    let out = d.cmd(args).arg("--json").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn store_has(d: &Dir, needle: &str) -> bool {
    d.store_files()
        .iter()
        .any(|(_, bytes)| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
}

#[test]
fn a_forgotten_secret_leaves_the_store_file() {
    let d = Dir::new();
    let lines: String = [
        json!({"event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:00Z",
            "session_id": "s1", "agent_id": "planner", "trace_id": "t1", "tool_name": "vault_read",
            "status": "completed", "payload": {"text": format!("the password is {SECRET}")}}),
        json!({"event_id": "e2", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:03Z",
            "session_id": "s1", "agent_id": "planner", "trace_id": "t1", "parent_event_id": "e1",
            "tool_name": "sql_query", "status": "failed", "payload": {"text": "query after the read"}}),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect();
    let trace = d.write("t.jsonl", &lines);
    d.cmd(&["ingest", trace.to_str().unwrap()]).assert().success();
    d.cmd(&["consolidate"]).assert().success();
    assert!(store_has(&d, SECRET));
    assert!(!json_of(&d, &["search", SECRET]).as_array().unwrap().is_empty());

    let report = json_of(&d, &["forget", "event", "e1", "--reason", "a password", "--by", "ops"]);
    assert_eq!(report["redacted"], json!(1));
    assert!(!store_has(&d, SECRET), "no byte of the secret is left in the store files");

    d.cmd(&["search", SECRET]).assert().code(1);
    d.cmd(&["get", "e1"]).assert().code(1);
    let recall = json_of(&d, &["recall", &format!("what was the password {SECRET}")]);
    let items = recall["items"].to_string();
    assert!(!items.contains(SECRET) && !items.contains("\"e1\""), "{items}");
    assert!(recall["items"].as_array().unwrap().iter().any(|i| i["node"]["id"] == json!("e2")));
    let timeline = json_of(&d, &["session", "s1"]);
    assert!(!timeline.to_string().contains(SECRET));
    assert!(timeline.to_string().contains("e2"));

    d.cmd(&["reproject"]).assert().success();
    d.cmd(&["get", "e1"]).assert().code(1);
    d.cmd(&["search", SECRET]).assert().code(1);
    assert!(!store_has(&d, SECRET));

    let audit = json_of(&d, &["forgotten"]);
    assert_eq!(audit.as_array().unwrap().len(), 1);
    assert_eq!(audit[0]["target"], json!({"kind": "event", "id": "e1"}));
    assert_eq!(
        (audit[0]["by"].clone(), audit[0]["reason"].clone()),
        (json!("ops"), json!("a password"))
    );
    assert!(!audit.to_string().contains(SECRET));

    // An unknown target is an error that changes nothing.
    let before = d.store_files();
    let out = d.cmd(&["forget", "event", "e1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("forget.unknown_target"));
    assert_eq!(d.store_files(), before);
}
