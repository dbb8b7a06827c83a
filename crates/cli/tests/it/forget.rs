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

#[test]
fn a_forgotten_entity_leaves_the_store_and_several_ids_go_at_once() {
    let d = Dir::new();
    let name = "quillfeather-narwhal";
    let event = |id: &str, at: &str, entity: &str| {
        json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
            "session_id": "s1", "agent_id": "planner", "trace_id": "t1", "tool_name": "sql_query",
            "status": "completed", "payload": {"text": "ran the nightly report"},
            "entities": [{"name": entity, "entity_type": "service"}]})
    };
    let lines: String = [
        event("e1", "2026-11-20T09:00:00Z", name),
        event("e2", "2026-11-20T09:00:03Z", "billing-api"),
        event("e3", "2026-11-20T09:00:05Z", "orders-db"),
        event("e4", "2026-11-20T09:00:07Z", "orders-db"),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect();
    let trace = d.write("t.jsonl", &lines);
    d.cmd(&["ingest", trace.to_str().unwrap()]).assert().success();
    d.cmd(&["consolidate"]).assert().success();
    assert!(store_has(&d, name));

    let entity = format!("service:{name}");
    let report = json_of(&d, &["forget", "entity", &entity, "--by", "ops"]);
    assert_eq!(report["redacted"], json!(1), "e1 rewritten without it");
    assert!(!store_has(&d, name), "no byte of the name is left in the store files");
    d.cmd(&["get", &entity]).assert().code(1);
    d.cmd(&["search", name]).assert().code(1);
    let e1 = json_of(&d, &["get", "e1"]);
    assert!(!e1.to_string().contains(name), "{e1}");
    d.cmd(&["reproject"]).assert().success();
    d.cmd(&["get", &entity]).assert().code(1);
    assert!(!store_has(&d, name));
    let audit = json_of(&d, &["forgotten"]);
    assert_eq!(audit[0]["target"]["kind"], json!("entity"));
    assert!(!audit.to_string().contains(name), "{audit}");

    // Several events in one call (a repeated id once); an unknown one refuses them all.
    let out = d.cmd(&["forget", "event", "e3", "nope"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("forget.unknown_target"));
    d.cmd(&["get", "e3"]).assert().success();
    let reports = json_of(&d, &["forget", "event", "e3", "e4", "e3"]);
    let ids: Vec<&str> =
        reports.as_array().unwrap().iter().map(|r| r["target"]["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["e3", "e4"]);
    d.cmd(&["get", "e4"]).assert().code(1);
    // An agent is named by all its events: refused, nothing changed.
    let out = d.cmd(&["forget", "entity", "agent:planner"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("forget.entity_required"));
}
