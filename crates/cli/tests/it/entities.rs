//! `ctxgraph entities`: resolution candidates, merge and reject through the real binary, and the
//! decision surviving a reprojection.

use serde_json::{Value, json};

use super::{Dir, stdout};

/// Events naming near-duplicate tools, a version family, and one name used by two types.
fn trace() -> String {
    let names: [&[(&str, &str)]; 3] = [
        &[("read_file", "tool"), ("write_file", "tool"), ("search", "tool")],
        &[("read-file", "tool"), ("GPT-4", "concept"), ("search", "service")],
        &[("ReadFile", "tool"), ("GPT-4o", "concept")],
    ];
    names
        .iter()
        .enumerate()
        .map(|(i, list)| {
            let entities: Vec<Value> =
                list.iter().map(|(n, t)| json!({"name": n, "entity_type": t})).collect();
            let e = json!({
                "event_id": format!("e{i}"), "event_type": "tool.execute",
                "occurred_at": format!("2026-11-20T09:00:0{i}Z"), "session_id": "s1",
                "agent_id": "planner", "trace_id": "t1", "entities": entities,
            });
            format!("{e}\n")
        })
        .collect()
}

fn json(d: &Dir, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&stdout(&mut d.cmd(&all))).unwrap()
}

fn pair(c: &Value) -> (&str, &str) {
    (c["a"]["id"].as_str().unwrap(), c["b"]["id"].as_str().unwrap())
}

#[test]
fn resolve_list_merge_and_reproject() {
    let d = Dir::new();
    let f = d.write("in.jsonl", &trace());
    d.cmd(&["ingest", f.to_str().unwrap()]).assert().success();
    d.cmd(&["entities", "candidates"]).assert().code(1);

    let r = json(&d, &["entities", "resolve"]);
    assert!(r["same_as"].as_u64().unwrap() >= 3, "{r}");
    assert!(r["related_to"].as_u64().unwrap() >= 1, "{r}");
    let list = json(&d, &["entities", "candidates"]);
    let list = list.as_array().unwrap();
    let pairs: Vec<_> = list.iter().map(pair).collect();
    assert!(pairs.contains(&("tool:read-file", "tool:read_file")), "{pairs:?}");
    assert!(
        !pairs.iter().any(|p| p.1 == "tool:write_file" || p.0 == "tool:write_file"),
        "{pairs:?}"
    );
    assert!(list.iter().all(|c| c["status"] == "candidate"), "{list:?}");
    let table = stdout(&mut d.cmd(&["entities", "candidates"]));
    assert!(
        table.contains("tool:read-file") && table.contains("same name ignoring case"),
        "{table}"
    );

    // A bare name resolves when it is unambiguous; ids are normalised.
    let out = json(
        &d,
        &[
            "entities",
            "merge",
            "read-file",
            "tool:Read_File",
            "--reason",
            "same tool",
            "--by",
            "alice",
        ],
    );
    assert_eq!(out["new"], true);
    assert_eq!(
        (out["entity_a"].as_str(), out["entity_b"].as_str()),
        (Some("tool:read-file"), Some("tool:read_file"))
    );
    let again = stdout(&mut d.cmd(&[
        "entities",
        "merge",
        "tool:read_file",
        "tool:read-file",
        "--reason",
        "same tool",
        "--by",
        "alice",
    ]));
    assert!(again.contains("already merged"), "{again}");

    d.cmd(&["reproject"]).assert().success();
    let merged = json(&d, &["entities", "candidates", "--status", "merged"]);
    assert_eq!(merged.as_array().unwrap().len(), 1, "{merged}");
    assert_eq!(pair(&merged[0]), ("tool:read-file", "tool:read_file"));
    assert_eq!(merged[0]["confidence"], 1.0);
    assert!(merged[0]["justification"].as_str().unwrap().starts_with("merged by alice: same tool"));
    // Resolving again keeps the decision and does not propose the pair.
    d.cmd(&["entities", "resolve"]).assert().success();
    let all = json(&d, &["entities", "candidates", "--status", "all"]);
    let decided: Vec<_> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| pair(c) == ("tool:read-file", "tool:read_file"))
        .collect();
    assert_eq!(decided.len(), 1);
    assert_eq!(decided[0]["status"], "merged");
}

#[test]
fn reject_unknown_and_ambiguous_entities_are_explained() {
    let d = Dir::new();
    let f = d.write("in.jsonl", &trace());
    d.cmd(&["ingest", f.to_str().unwrap()]).assert().success();
    let out = d.cmd(&["entities", "merge", "search", "tool:read_file"]).assert().code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("service:search") && err.contains("tool:search"), "{err}");
    let out = d.cmd(&["entities", "reject", "tool:read_file", "tool:nope"]).assert().code(2);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("tool:nope") && err.contains("decision.unknown_entity"), "{err}");

    let out = stdout(&mut d.cmd(&[
        "entities",
        "reject",
        "GPT-4",
        "gpt-4o",
        "--reason",
        "different models",
    ]));
    assert!(out.contains("rejected concept:gpt-4 and concept:gpt-4o"), "{out}");
    let rejected = json(&d, &["entities", "candidates", "--status", "rejected"]);
    assert_eq!(rejected[0]["confidence"], 0.0);
    let help = stdout(&mut d.cmd(&["entities", "--help"]));
    for c in ["candidates", "merge", "reject", "resolve"] {
        assert!(help.contains(c), "{help}");
    }
}
