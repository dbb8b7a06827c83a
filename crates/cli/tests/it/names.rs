//! Names work where people type them: a node by id or entity name, merged entities read as one,
//! speakers with display names, and a failed ingestion that leaves no store.

use serde_json::Value;

use super::{Dir, stdout};

fn event(id: &str, tool: &str, service: &str) -> String {
    format!(
        r#"{{"event_id":"{id}","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"{tool}","entities":[{{"name":"{service}","entity_type":"service","role":"object"}}]}}"#
    )
}

fn ingest(d: &Dir, lines: &[String]) {
    let f = d.write("in.jsonl", &(lines.join("\n") + "\n"));
    d.cmd(&["ingest", f.to_str().unwrap()]).assert().success();
}

#[test]
fn a_node_is_found_by_id_or_by_entity_name() {
    let d = Dir::new();
    ingest(&d, &[event("e1", "send_email", "Mail-Relay")]);
    for arg in ["mail-relay", "Mail-Relay", "service:mail-relay", "service:MAIL-RELAY"] {
        let got: Value =
            serde_json::from_str(&stdout(&mut d.cmd(&["--json", "get", arg]))).unwrap();
        assert_eq!(got[0]["id"], "service:mail-relay", "get {arg}");
    }
    let n: Value =
        serde_json::from_str(&stdout(&mut d.cmd(&["--json", "neighbors", "mail-relay"]))).unwrap();
    assert_eq!(n[0]["from"]["id"], "e1");
    let miss = d.cmd(&["get", "mail"]).assert().code(1);
    let text = String::from_utf8(miss.get_output().stdout.clone()).unwrap();
    assert!(text.contains("no node has the id or entity name `mail`"), "{text}");
    assert!(text.contains("ctxgraph search mail"), "{text}");
}

#[test]
fn an_entity_is_forgotten_by_its_name() {
    let d = Dir::new();
    ingest(&d, &[event("e1", "send_email", "Mail-Relay")]);
    d.cmd(&["forget", "entity", "mail-relay", "--yes"]).assert().success();
    d.cmd(&["get", "mail-relay"]).assert().code(1);
    // A name no entity has is an unknown target, as an id would be.
    let out = d.cmd(&["forget", "entity", "mail-relay", "--yes"]).assert().code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("forget.unknown_target"), "{err}");
}

#[test]
fn an_ambiguous_name_lists_the_candidates_and_type_chooses() {
    let d = Dir::new();
    ingest(&d, &[event("e1", "relay", "relay")]);
    let out = d.cmd(&["get", "relay"]).assert().code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("`relay` names 2 entities: service:relay, tool:relay"), "{err}");
    let got: Value =
        serde_json::from_str(&stdout(&mut d.cmd(&["--json", "get", "tool:relay"]))).unwrap();
    assert_eq!(got[0]["id"], "tool:relay");
    d.cmd(&["neighbors", "relay"]).assert().code(2);
}

#[test]
fn a_merged_entity_reads_with_its_partners_edges() {
    let d = Dir::new();
    ingest(&d, &[event("e1", "read_file", "files"), event("e2", "read-file", "files")]);
    let edges = |d: &Dir| -> Vec<String> {
        let v: Value = serde_json::from_str(&stdout(&mut d.cmd(&[
            "--json",
            "neighbors",
            "tool:read_file",
            "--edge",
            "REFERENCES",
        ])))
        .unwrap();
        let mut from: Vec<String> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["from"]["id"].as_str().unwrap().to_owned())
            .collect();
        from.sort();
        from
    };
    assert_eq!(edges(&d), ["e1"]);
    d.cmd(&["entities", "merge", "tool:read_file", "tool:read-file", "--reason", "same"])
        .assert()
        .success();
    assert_eq!(edges(&d), ["e1", "e2"]);
    let text = stdout(&mut d.cmd(&["get", "tool:read_file"]));
    assert!(text.contains("merged with tool:read-file"), "{text}");
    d.cmd(&["entities", "reject", "tool:read_file", "tool:read-file"]).assert().success();
    assert_eq!(edges(&d), ["e1"]);
}

#[test]
fn speakers_with_display_names_import_with_their_name_kept() {
    let d = Dir::new();
    let chat = d.write(
        "chat.jsonl",
        concat!(
            r#"{"speaker":"Melanie Smith","text":"Hi Caroline!","timestamp":"2023-05-08T13:56:00Z","session":"s1"}"#,
            "\n",
            r#"{"speaker":"Caroline","text":"Hello Melanie Smith.","timestamp":"2023-05-08T13:57:00Z","session":"s1"}"#,
            "\n"
        ),
    );
    d.cmd(&["import", "conversation", chat.to_str().unwrap()]).assert().success();
    let got: Value = serde_json::from_str(&stdout(&mut d.cmd(&["--json", "get", "s1:1"]))).unwrap();
    assert_eq!(got[0]["properties"]["agent_id"], "Melanie_Smith");
    let n: Value = serde_json::from_str(&stdout(&mut d.cmd(&[
        "--json",
        "neighbors",
        "agent:melanie_smith",
        "--direction",
        "in",
    ])))
    .unwrap();
    let from: Vec<&str> =
        n.as_array().unwrap().iter().map(|e| e["from"]["id"].as_str().unwrap()).collect();
    // Her own turn (as its agent) and the turn that names her.
    assert!(from.contains(&"s1:1") && from.contains(&"s1:2"), "{from:?}");
}

#[test]
fn an_ingestion_of_a_missing_file_creates_no_store() {
    let d = Dir::new();
    d.cmd(&["ingest", "nofile.jsonl"]).assert().code(2);
    assert!(!d.db().exists());
    assert!(d.store_files().is_empty());
}
