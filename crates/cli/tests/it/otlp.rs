//! `ctxgraph import otlp` through the real binary, on the OTLP fixtures of `crates/otlp` (a fake
//! agent run traced by the OpenTelemetry Python SDK): both encodings, the projected causal
//! chain, idempotency, per-span rejections, and bad bodies that change nothing.

use std::path::PathBuf;

use serde_json::Value;

use super::{Dir, workspace_root};

fn fixture(name: &str) -> PathBuf {
    workspace_root().join("crates/otlp/tests/fixtures").join(name)
}

fn json_of(assert: &assert_cmd::assert::Assert) -> Value {
    serde_json::from_slice(&assert.get_output().stdout).unwrap()
}

fn stderr_of(assert: &assert_cmd::assert::Assert) -> String {
    String::from_utf8(assert.get_output().stderr.clone()).unwrap()
}

#[test]
fn import_otlp_projects_the_agent_run() {
    let d = Dir::new();
    let pb = fixture("fake_agent.pb");
    let report = json_of(
        &d.cmd(&["--json", "import", "otlp", pb.to_str().unwrap(), "--no-enrich"])
            .assert()
            .success(),
    );
    assert_eq!((report["accepted"].as_u64(), report["rejected"].as_u64()), (Some(5), Some(0)));
    // The same run in OTLP/JSON is the same records: all duplicates.
    let js = fixture("fake_agent.json");
    let again = json_of(
        &d.cmd(&["--json", "import", "otlp", js.to_str().unwrap(), "--no-enrich"])
            .assert()
            .success(),
    );
    assert_eq!((again["accepted"].as_u64(), again["duplicates"].as_u64()), (Some(0), Some(5)));

    // The conversation is the session; every step is caused by the agent span.
    let session = json_of(&d.cmd(&["--json", "session", "conv-weather-0001"]).assert().success());
    let events = session["events"].as_array().unwrap();
    let types: Vec<&str> =
        events.iter().map(|e| e["event"]["properties"]["event_type"].as_str().unwrap()).collect();
    assert_eq!(types, ["agent.invoke", "llm.chat", "tool.execute", "tool.execute", "llm.chat"]);
    let root = events[0]["event"]["id"].as_str().unwrap();
    for e in &events[1..] {
        assert_eq!(e["caused_by"][0], root);
    }
    let (failed, retry) = (&events[2]["event"], &events[3]["event"]);
    assert_eq!(failed["properties"]["status"], "failed");
    assert_eq!(retry["properties"]["status"], "completed");
    assert_eq!(retry["properties"]["payload"]["retry_of"], failed["id"]);

    // The retry's causal chain leads to the agent span.
    let chain =
        json_of(&d.cmd(&["--json", "chain", retry["id"].as_str().unwrap()]).assert().success());
    let ids: Vec<&str> =
        chain["chain"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [retry["id"].as_str().unwrap(), root]);
}

#[test]
fn a_bad_span_is_rejected_by_number_and_the_rest_imported() {
    let d = Dir::new();
    let mut tree: Value =
        serde_json::from_slice(&std::fs::read(fixture("fake_agent.json")).unwrap()).unwrap();
    tree["resourceSpans"][0]["scopeSpans"][0]["spans"][2]["startTimeUnixNano"] = "0".into();
    let file = d.write("bad.json", &tree.to_string());
    let out = d
        .cmd(&["--json", "import", "otlp", file.to_str().unwrap(), "--no-enrich"])
        .assert()
        .code(2);
    let report = json_of(&out);
    assert_eq!((report["accepted"].as_u64(), report["rejected"].as_u64()), (Some(4), Some(1)));
    let rejection = &report["rejections"][0];
    assert_eq!(rejection["line"], 3);
    assert_eq!(rejection["code"], "otlp.span");
    let text = rejection.to_string();
    assert!(text.contains("startTimeUnixNano") && text.contains("spans[2]"), "{text}");
}

#[test]
fn bad_bodies_change_nothing() {
    let d = Dir::new();
    let body = std::fs::read(fixture("fake_agent.pb")).unwrap();
    let truncated = d.tmp.path().join("cut.pb");
    std::fs::write(&truncated, &body[..body.len() - 9]).unwrap();
    let empty = d.write("empty.json", "");
    let wrong = d.write(
        "wrong.json",
        r#"{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 5}]}]}]}"#,
    );
    let text = d.write("trace.txt", "{}");
    for (file, format, says) in [
        (&truncated, None, "not an OTLP/protobuf ExportTraceServiceRequest"),
        (&empty, None, "empty"),
        (&wrong, None, "not an OTLP/JSON ExportTraceServiceRequest"),
        (&wrong, Some("protobuf"), "not an OTLP/protobuf ExportTraceServiceRequest"),
        (&text, None, "--format"),
    ] {
        let mut args = vec!["import", "otlp", file.to_str().unwrap()];
        if let Some(f) = format {
            args.extend(["--format", f]);
        }
        let err = stderr_of(&d.cmd(&args).assert().failure());
        assert!(err.contains(says), "{file:?}: {err}");
    }
    assert!(!d.db().exists(), "no store was created by a refused body");
    // With --format, any name goes.
    let ok = d.tmp.path().join("run.bin");
    std::fs::write(&ok, &body).unwrap();
    let report = json_of(
        &d.cmd(&["--json", "import", "otlp", ok.to_str().unwrap(), "--format", "protobuf"])
            .assert()
            .success(),
    );
    assert_eq!(report["accepted"], 5);
}
