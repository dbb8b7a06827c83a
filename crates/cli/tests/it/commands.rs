//! Every command through the real binary: outputs, JSON, exit codes, and bad input that changes nothing.

use serde_json::Value;

use super::{Dir, stdout, workspace_root};

const EVENT: &str = r#"{"event_id":"e1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"failed","payload":{"error":"timeout after 30s"},"entities":[{"name":"orders-db","entity_type":"service","role":"target"}]}"#;
const CHILD: &str = r#"{"event_id":"e2","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:05Z","session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"completed","parent_event_id":"e1","payload":{"retry_of":"e1"}}"#;

fn json(c: &mut assert_cmd::Command) -> Value {
    serde_json::from_str(&stdout(c)).unwrap()
}

/// JSON printed by a command whose exit status was already asserted.
fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

fn text_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stdout.clone()).unwrap()
}

#[test]
fn demo_explains_a_failure_and_is_idempotent() {
    let d = Dir::new();
    let out = text_of(&d.cmd(&["demo"]).assert().success());
    assert!(out.contains("Ingested 400 records"), "{out}");
    assert!(out.contains("Why did evt-"), "{out}");
    assert!(out.contains("└─CAUSED_BY→"), "{out}");
    assert!(out.contains("FAILED"), "{out}");
    assert!(out.contains("Who and what was involved"), "{out}");
    let again = text_of(&d.cmd(&["demo"]).assert().success());
    assert!(again.contains("All 400 records were already stored"), "{again}");
    let v = json(&mut d.cmd(&["demo", "--json"]));
    assert_eq!(v["ingest"]["duplicates"], 400);
    assert!(v["failure"]["chain"].as_array().unwrap().len() >= 2);
}

#[test]
fn the_committed_demo_trace_is_what_the_generator_produces() {
    let d = Dir::new();
    let generated = d
        .cmd(&["generate", "--events", "400", "--seed", "7"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let committed = std::fs::read(workspace_root().join("examples/demo-trace.jsonl")).unwrap();
    assert!(
        generated == committed,
        "examples/demo-trace.jsonl is stale: regenerate it (see examples/README.md)"
    );
}

#[test]
fn ingest_then_read_every_way() {
    let d = Dir::new();
    let file = d.write("in.jsonl", &format!("{CHILD}\n{EVENT}\n"));
    let v = json_of(&d.cmd(&["--json", "ingest", file.to_str().unwrap()]).assert().success());
    assert_eq!(v["accepted"], 2);

    let got = json(&mut d.cmd(&["--json", "get", "e2"]));
    assert_eq!(got[0]["label"], "Event");
    assert_eq!(got[0]["properties"]["status"], "completed");

    let n = json(&mut d.cmd(&[
        "--json",
        "neighbors",
        "e2",
        "--edge",
        "CAUSED_BY",
        "--direction",
        "out",
    ]));
    assert_eq!(n[0]["to"]["id"], "e1");
    assert_eq!(n[0]["properties"]["mechanism"], "direct");
    let n = json(&mut d.cmd(&["--json", "neighbors", "service:orders-db", "--direction", "in"]));
    assert_eq!(
        n[0]["properties"]["role"], "result",
        "old role name `target` is stored as `result`"
    );

    let s = json(&mut d.cmd(&["--json", "session", "s1"]));
    let events = s["events"].as_array().unwrap();
    assert_eq!(events[0]["event"]["id"], "e1");
    assert_eq!(events[1]["caused_by"][0], "e1");

    let c = json(&mut d.cmd(&["--json", "chain", "e2"]));
    assert_eq!(c["chain"][1]["id"], "e1");

    let v = json(&mut d.cmd(&["--json", "view", "temporal"]));
    assert_eq!(v["total"], 1);
    assert_eq!(v["edges"][0]["properties"]["delta_ms"], 5000);

    let st = json(&mut d.cmd(&["--json", "stats"]));
    assert_eq!(st["log_length"], 2);
    assert_eq!(st["projection_lag"], 0);
    assert_eq!(st["nodes"]["Event"], 2);
    assert_eq!(st["edges"]["REFERENCES"], 5);

    let l = json(&mut d.cmd(&["--json", "log", "--from", "2"]));
    assert_eq!(l.as_array().unwrap().len(), 1);
    assert_eq!(l[0]["id"], "e1");

    let human = stdout(&mut d.cmd(&["session", "s1"]));
    assert!(human.contains("FAILED") && human.contains("e1"), "{human}");

    let r = stdout(&mut d.cmd(&["reproject"]));
    assert!(r.contains("reprojected 2 records"), "{r}");
    assert_eq!(json(&mut d.cmd(&["--json", "stats"]))["edges"]["REFERENCES"], 5);
}

#[test]
fn nothing_found_exits_1_and_errors_exit_2() {
    let d = Dir::new();
    d.cmd(&["get", "x"]).assert().code(2).stderr(predicates::str::contains("no ctxgraph store"));
    d.cmd(&["init"]).assert().success();
    d.cmd(&["get", "nope"]).assert().code(1);
    d.cmd(&["session", "nope"]).assert().code(1);
    d.cmd(&["chain", "nope"]).assert().code(1);
    d.cmd(&["neighbors", "e1", "--edge", "LIKES"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a declared edge type"));
}

#[test]
fn a_bad_record_is_named_and_leaves_the_store_byte_for_byte_unchanged() {
    let d = Dir::new();
    let good = d.write("good.jsonl", &format!("{EVENT}\n"));
    d.cmd(&["ingest", good.to_str().unwrap()]).assert().success();
    let before = d.store_files();
    let cases = [
        ("{not json", "json.syntax"),
        (
            r#"{"event_id":"e9","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":["a"],"trace_id":"t1"}"#,
            "$.agent_id: must be a string",
        ),
        (
            r#"{"event_id":"e9","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"a","trace_id":"t1","priority":3}"#,
            "$.priority: unknown field",
        ),
        (
            r#"{"event_id":"e9","event_type":"toolexecute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"a","trace_id":"t1"}"#,
            "rule: envelope.event_type_format",
        ),
        (
            r#"{"record_type":"edge","edge_id":"x","edge_type":"REFERENCES","from":{"label":"Entity","id":"service:orders-db"},"to":{"label":"Event","id":"e1"},"properties":{"role":"object"}}"#,
            "REFERENCES may only connect Event -> Entity",
        ),
    ];
    for (line, expect) in cases {
        let f = d.write("bad.jsonl", &format!("{line}\n"));
        let out = text_of(&d.cmd(&["ingest", f.to_str().unwrap()]).assert().code(2));
        assert!(out.contains(expect), "{line}\n{out}");
        assert!(out.contains("1 rejected"), "{out}");
        assert!(d.store_files() == before, "store changed after {line}");
    }
}

#[test]
fn strict_ingest_stops_at_the_first_bad_line() {
    let d = Dir::new();
    let f = d.write("in.jsonl", &format!("{EVENT}\n{{bad\n{CHILD}\n"));
    let v =
        json_of(&d.cmd(&["--json", "ingest", "--strict", f.to_str().unwrap()]).assert().code(2));
    assert_eq!(v["accepted"], 1);
    assert_eq!(v["stopped_at_first_error"], true);
    assert_eq!(v["rejections"][0]["line"], 2);
    d.cmd(&["get", "e2"]).assert().code(1);
}

#[test]
fn stdin_ingest_and_duplicates() {
    let d = Dir::new();
    d.cmd(&["ingest", "-"]).write_stdin(format!("{EVENT}\n")).assert().success();
    let v = json_of(
        &d.cmd(&["--json", "ingest", "-"]).write_stdin(format!("{EVENT}\n\n")).assert().success(),
    );
    assert_eq!(v["duplicates"], 1);
    assert_eq!(v["lines"], 1);
}

#[test]
fn schema_show_check_and_add() {
    let d = Dir::new();
    let show = stdout(&mut d.cmd(&["schema", "show"]));
    assert!(show.contains("CREATE NODE TYPE Event"), "{show}");
    assert!(show.contains("FROM Event TO Entity"), "{show}");
    let j = json(&mut d.cmd(&["--json", "schema", "show"]));
    assert_eq!(j["edge_types"]["REFERENCES"]["identity"][0], "role");

    let bad = d.write(
        "bad.toml",
        "module = \"bad\"\n[node_types.Event.properties]\nsummary = { type = \"integer\" }\n",
    );
    let out = text_of(&d.cmd(&["schema", "check", bad.to_str().unwrap()]).assert().code(2));
    assert!(
        out.contains("node_types.Event.properties.summary") && out.contains("schema.additive_only"),
        "{out}"
    );

    let good = d.write("good.toml", "module = \"ops\"\n[enums.entity_type]\nvalues = [{ name = \"dataset\", parent = \"prov:Entity\" }]\n");
    d.cmd(&["schema", "check", good.to_str().unwrap()]).assert().success();
    d.cmd(&["schema", "add", good.to_str().unwrap()]).assert().success();
    let ev = r#"{"event_id":"d1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00Z","session_id":"s1","agent_id":"a","trace_id":"t","entities":[{"name":"sales","entity_type":"dataset"}]}"#;
    d.cmd(&["ingest", "-"]).write_stdin(format!("{ev}\n")).assert().success();
    d.cmd(&["get", "dataset:sales"]).assert().success();
    let again = stdout(&mut d.cmd(&["schema", "add", good.to_str().unwrap()]));
    assert!(again.contains("already present"), "{again}");
}

#[test]
fn help_explains_every_command() {
    let d = Dir::new();
    let help = stdout(&mut d.cmd(&["--help"]));
    for c in [
        "demo",
        "ingest",
        "get",
        "neighbors",
        "session",
        "chain",
        "view",
        "stats",
        "log",
        "schema",
        "reproject",
        "bench",
        "Exit codes",
    ] {
        assert!(help.contains(c), "--help lacks {c}:\n{help}");
    }
}

#[test]
fn ingest_enriches_after_acknowledging_and_search_finds_it() {
    let d = Dir::new();
    let f = d.write("in.jsonl", &format!("{EVENT}\n{CHILD}\n"));
    d.cmd(&["ingest", "--no-enrich", f.to_str().unwrap()]).assert().success();
    let st = json(&mut d.cmd(&["--json", "stats"]));
    assert_eq!(st["enrichment_lag"], 2);
    assert_eq!(st["embedding_model"], Value::Null);
    let out = stdout(&mut d.cmd(&["enrich"]));
    assert!(out.contains("enriched 2 events"), "{out}");
    let st = json(&mut d.cmd(&["--json", "stats"]));
    assert_eq!(st["enrichment_lag"], 0);
    assert_eq!(st["embedding_model"]["dimension"], 256);
    let e1 = json(&mut d.cmd(&["--json", "get", "e1"]));
    assert_eq!(e1[0]["properties"]["summary"], "tool.execute sql_query FAILED: timeout after 30s");
    assert_eq!(e1[0]["properties"]["importance_score"], 7);
    let hits = json(&mut d.cmd(&["--json", "search", "timeout"]));
    assert_eq!(hits[0]["id"], "e1");
    d.cmd(&["search", "zebra"]).assert().code(1);
    let hits = json(&mut d.cmd(&["--json", "search", "orders-db"]));
    assert!(hits.as_array().unwrap().iter().any(|h| h["id"] == "service:orders-db"), "{hits}");
    // Ingesting more enriches by default.
    let more = d.write(
        "more.jsonl",
        &EVENT.replace("\"e1\"", "\"e3\"").replace("timeout after 30s", "disk full"),
    );
    d.cmd(&["ingest", more.to_str().unwrap()]).assert().success();
    assert_eq!(json(&mut d.cmd(&["--json", "stats"]))["enrichment_lag"], 0);
}

#[test]
fn recall_counts_the_reads_of_the_events_it_returns() {
    let d = Dir::new();
    let file = d.write("in.jsonl", &format!("{EVENT}\n{CHILD}\n"));
    d.cmd(&["ingest", file.to_str().unwrap()]).assert().success();
    let pack = json_of(&d.cmd(&["--json", "recall", "orders-db timeout"]).assert().success());
    let id = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["node"]["label"] == "Event")
        .map(|i| i["node"]["id"].as_str().unwrap().to_owned())
        .expect("the recall returns an event");
    let got = json(&mut d.cmd(&["--json", "get", &id]));
    assert_eq!(got[0]["properties"]["access_count"], 1, "{got}");
    d.cmd(&["--json", "recall", "orders-db timeout"]).assert().success();
    let got = json(&mut d.cmd(&["--json", "get", &id]));
    assert_eq!(got[0]["properties"]["access_count"], 2, "{got}");
    assert!(got[0]["properties"]["last_accessed_at"].is_string(), "{got}");
}

#[test]
fn an_older_store_is_upgraded_once_and_says_so() {
    let d = Dir::new();
    let fixture = workspace_root().join("crates/engine/tests/fixtures/format-v1.ctxg");
    std::fs::copy(fixture, d.db()).unwrap();
    let first = d.cmd(&["stats"]).assert().success();
    let said = String::from_utf8(first.get_output().stderr.clone()).unwrap();
    let current = ctxgraph::FORMAT_VERSION;
    assert!(said.contains(&format!("from store format 1 to {current}")), "{said}");
    let again = d.cmd(&["stats"]).assert().success();
    let said = String::from_utf8(again.get_output().stderr.clone()).unwrap();
    assert!(!said.contains("upgrading"), "{said}");
}
