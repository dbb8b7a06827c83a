//! `ctxgraph import conversation|locomo` through the real binary: events, sessions, speakers,
//! extracted entities, idempotency, exit codes, and questions that never reach the store.
//!
//! The fixtures are the engine's hand-made ones (`crates/engine/tests/fixtures/`): the LoCoMo one
//! is in LoCoMo's format but holds no LoCoMo data.

use std::path::PathBuf;

use serde_json::Value;

use super::{Dir, workspace_root};

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("crates/engine/tests/fixtures").join(name)
}

fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

fn text_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stdout.clone()).unwrap()
}

/// Every string value in a JSON tree.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

#[test]
fn locomo_import_is_idempotent_and_keeps_questions_out() {
    let d = Dir::new();
    let file = fixture("locomo-mini.json");
    let file = file.to_str().unwrap();
    let out = text_of(&d.cmd(&["import", "locomo", file]).assert().success());
    assert!(out.contains("mini-1: Ada and Ben, 10 turns in 3 sessions (5 questions"), "{out}");
    assert!(out.contains("12 lines: 12 accepted, 0 duplicates, 0 rejected"), "{out}");

    let again = json_of(&d.cmd(&["--json", "import", "locomo", file]).assert().success());
    assert_eq!((again["accepted"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(12)));
    let one = json_of(
        &d.cmd(&["--json", "import", "locomo", file, "--sample", "mini-2"]).assert().success(),
    );
    assert_eq!(one["duplicates"], 2);
    let err = d.cmd(&["import", "locomo", file, "--sample", "conv-99"]).assert().code(2);
    let err = String::from_utf8(err.get_output().stderr.clone()).unwrap();
    assert!(err.contains("conv-99") && err.contains("mini-1, mini-2"), "{err}");

    // Sessions in turn order, FOLLOWS between turns, the speaker as the agent.
    let session = json_of(&d.cmd(&["--json", "session", "mini-1:S2"]).assert().success());
    let ids: Vec<&str> = session["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["mini-1:D2:1", "mini-1:D2:2", "mini-1:D2:3"]);
    let follows = json_of(
        &d.cmd(&["--json", "neighbors", "mini-1:D2:2", "--edge", "FOLLOWS", "--direction", "out"])
            .assert()
            .success(),
    );
    assert_eq!(follows[0]["to"]["id"], "mini-1:D2:1");
    let ada = json_of(&d.cmd(&["--json", "get", "agent:ada"]).assert().success());
    assert_eq!(ada[0]["properties"]["entity_type"], "agent");
    // Extracted names: a concept named in two turns, referenced by both.
    let nasa = json_of(
        &d.cmd(&["--json", "neighbors", "concept:nasa", "--direction", "in"]).assert().success(),
    );
    let from: Vec<&str> =
        nasa.as_array().unwrap().iter().map(|e| e["from"]["id"].as_str().unwrap()).collect();
    assert_eq!(from, ["mini-1:D3:1", "mini-1:D3:3"]);

    // A word of a turn finds it.
    let hits = json_of(&d.cmd(&["--json", "search", "greyhound"]).assert().success());
    assert_eq!(hits[0]["id"], "mini-1:D1:1");

    // No question, answer or annotation is in the log.
    let raw: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let mut secret = Vec::new();
    for sample in raw.as_array().unwrap() {
        for (k, v) in sample.as_object().unwrap() {
            if k != "conversation" && k != "sample_id" {
                strings(v, &mut secret);
            }
        }
    }
    secret.retain(|s| s.len() > 12);
    let log = text_of(&d.cmd(&["--json", "log", "--limit", "1000"]).assert().success());
    let entries: Value = serde_json::from_str(&log).unwrap();
    assert_eq!(entries.as_array().unwrap().len(), 12);
    for s in &secret {
        assert!(!log.contains(s.as_str()), "`{s}` reached the log");
    }
}

#[test]
fn conversation_import_reports_bad_lines_and_writes_the_rest() {
    let d = Dir::new();
    let file = fixture("conversation.jsonl");
    let file = file.to_str().unwrap();
    let v = json_of(&d.cmd(&["--json", "import", "conversation", file]).assert().success());
    assert_eq!((v["accepted"].as_u64(), v["lines"].as_u64()), (Some(5), Some(5)));
    let again = json_of(&d.cmd(&["--json", "import", "conversation", file]).assert().success());
    assert_eq!(again["duplicates"], 5);

    let caused = json_of(
        &d.cmd(&[
            "--json",
            "neighbors",
            "planning-1:2",
            "--edge",
            "CAUSED_BY",
            "--direction",
            "out",
        ])
        .assert()
        .success(),
    );
    assert_eq!(caused[0]["to"]["id"], "planning-1:1");
    let bob = json_of(
        &d.cmd(&["--json", "neighbors", "agent:bob", "--direction", "in"]).assert().success(),
    );
    let roles: Vec<(&str, &str)> = bob
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"]["id"].as_str().unwrap(), e["properties"]["role"].as_str().unwrap()))
        .collect();
    assert!(roles.contains(&("planning-1:1", "object")), "{roles:?}");
    assert!(roles.contains(&("planning-1:2", "agent")), "{roles:?}");

    // Bad lines are refused by number with every reason; good ones are written; exit 2.
    let bad = [
        r#"{"speaker":"carol","text":"Hi Dana","timestamp":"2024-02-01T10:00:00Z","session":"x"}"#,
        r#"{"speaker":"dana","text":7,"timestamp":"soon","session":"x","mood":"ok"}"#,
        "",
        "not json",
        r#"{"speaker":"dana","text":"Hi Carol","timestamp":"2024-02-01T10:01:00Z","session":"x"}"#,
    ]
    .join("\n");
    let bad_file = d.write("bad.jsonl", &bad);
    let out =
        d.cmd(&["--json", "import", "conversation", bad_file.to_str().unwrap()]).assert().code(2);
    let v = json_of(&out);
    assert_eq!((v["accepted"].as_u64(), v["rejected"].as_u64()), (Some(2), Some(2)));
    let rejections = v["rejections"].as_array().unwrap();
    assert_eq!(rejections[0]["line"], 2);
    assert_eq!(rejections[0]["id"], "x:2");
    let rules: Vec<(&str, &str)> = rejections[0]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["path"].as_str().unwrap(), v["rule"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rules,
        [
            ("$.mood", "message.unknown_field"),
            ("$.text", "message.type"),
            ("$.timestamp", "message.timestamp_format")
        ]
    );
    assert_eq!(rejections[1]["line"], 4);
    assert_eq!(rejections[1]["code"], "json.syntax");
    // The message after the refused one keeps its place in the session.
    d.cmd(&["get", "x:3"]).assert().success();
    let human =
        text_of(&d.cmd(&["import", "conversation", bad_file.to_str().unwrap()]).assert().code(2));
    assert!(human.contains("line 2 (x:2): rejected"), "{human}");
    assert!(human.contains("$.mood: unknown field"), "{human}");

    // Standard input, strict.
    let out = d
        .cmd(&["--json", "import", "conversation", "--strict", "-"])
        .write_stdin(bad)
        .assert()
        .code(2);
    let v = json_of(&out);
    assert_eq!((v["duplicates"].as_u64(), v["rejected"].as_u64()), (Some(1), Some(1)));
    assert_eq!(v["stopped_at_first_error"], true);
}

#[test]
fn import_help_documents_the_message_format() {
    let d = Dir::new();
    let help = text_of(&d.cmd(&["import", "conversation", "--help"]).assert().success());
    for field in
        ["speaker", "text", "timestamp", "session", "conversation", "reply_to", "attributes"]
    {
        assert!(help.contains(field), "{field}: {help}");
    }
    assert!(help.contains("`<session>:<n>`"), "{help}");
    let help = text_of(&d.cmd(&["import", "locomo", "--help"]).assert().success());
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("CC BY-NC 4.0") && flat.contains("`<sample_id>:S<n>`"), "{help}");
}
