//! One recall, three interfaces: `ctxgraph recall --json`, `POST /v1/recall` and the MCP tool
//! `recall` take the same constraints under the same names and return the same pack; a field a
//! request does not know is refused by name, over HTTP and MCP alike.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::mcp::{err, http_client, ok, runtime};
use crate::server::{Server, event};
use crate::workspace_root;

/// Events with a scope (the demo trace has none), for the tag and location constraints.
fn scoped_events() -> String {
    let scope = json!({"scope": {"tags": ["billing"], "location": "eu/prod"},
        "agent_id": "support-agent", "tool_name": "http_request"});
    ["pay-1", "pay-2", "pay-3"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            let mut e = event(id, "sess-pay", u32::try_from(i).unwrap(), scope.clone());
            e["payload"] =
                json!({"error": format!("payment gateway returned 502 for invoice {i}")});
            e["trace_id"] = json!("trace-pay");
            if i > 0 {
                e["parent_event_id"] = json!(format!("pay-{i}"));
            }
            e.to_string() + "\n"
        })
        .collect()
}

fn ctxgraph(args: &[&str], store: &Path) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .env_remove("CTXGRAPH_DB")
        .env_remove("CTXGRAPH_AS")
        .arg("--db")
        .arg(store)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The same request as `ctxgraph recall` flags: `snake_case` fields as `--kebab-case` flags,
/// lists as a repeated flag in the singular (`tags` → `--tag`, `labels` → `--label`).
fn cli_args(request: &Value) -> Vec<String> {
    let mut args = vec!["recall".to_owned(), request["question"].as_str().unwrap().to_owned()];
    for (field, value) in request.as_object().unwrap() {
        match value {
            _ if field == "question" => {}
            Value::Array(values) => {
                let flag = format!("--{}", field.trim_end_matches('s'));
                for v in values {
                    args.extend([flag.clone(), v.as_str().unwrap().to_owned()]);
                }
            }
            Value::String(v) => args.extend([format!("--{}", field.replace('_', "-")), v.clone()]),
            v @ (Value::Number(_) | Value::Bool(_) | Value::Null | Value::Object(_)) => {
                args.extend([format!("--{}", field.replace('_', "-")), v.to_string()]);
            }
        }
    }
    args
}

/// A pack with what differs from call to call (the phases' wall-clock times) taken out.
fn normalised(mut pack: Value) -> Value {
    assert!(pack["timings_us"].is_object(), "{pack}");
    pack.as_object_mut().unwrap().remove("timings_us");
    pack
}

fn ids(pack: &Value) -> Vec<String> {
    pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| format!("{}:{}", i["node"]["label"], i["node"]["id"]))
        .collect()
}

#[test]
fn cli_http_and_mcp_recall_return_the_same_pack() {
    let mut s = Server::start();
    // Once it answers, it handles SIGTERM.
    assert_eq!(s.call("GET", "/healthz", None, None).0, 200);
    assert!(s.terminate());
    // The tenant's store, filled and consolidated by the CLI while the server is down.
    let store = s.data().join("tenants").join("acme.ctxg");
    let extra = s.dir.path().join("scoped.jsonl");
    std::fs::write(&extra, scoped_events()).unwrap();
    let demo = workspace_root().join("examples/demo-trace.jsonl");
    ctxgraph(&["ingest", demo.to_str().unwrap()], &store);
    ctxgraph(&["ingest", extra.to_str().unwrap()], &store);
    ctxgraph(&["consolidate"], &store);
    s.restart();
    let principals = s.data().join("principals.json");

    let questions = [
        json!({"question": "why did the tests fail", "session": "sess-0001"}),
        json!({"question": "what did the support agent do", "agent": "support-agent",
            "labels": ["Event"], "k": 8}),
        json!({"question": "which http requests failed", "trace": "trace-0013", "intent": "why",
            "min_confidence": 0.5}),
        json!({"question": "what happened on the first day", "since": "2026-11-16T00:00:00Z",
            "until": "2026-11-17T00:00:00Z", "budget_tokens": 600, "k": 20}),
        json!({"question": "payment gateway errors", "tags": ["billing"], "location": "eu",
            "diversity": 0.7}),
        json!({"question": "similar failures", "as_of": "2026-11-20T00:00:00Z",
            "labels": ["Event", "Summary"], "intent": "related"}),
    ];
    runtime().block_on(async {
        let client = http_client(&s, &s.keys.writer).await;
        for request in &questions {
            // The server notes its reads in memory; the CLI writes its own after answering, so
            // it goes last and every interface answers over the same store.
            let (status, http) = s.post("/v1/recall", &s.keys.writer, request);
            assert_eq!(status, 200, "{request}: {http}");
            let mcp = ok(&client, "recall", request.clone()).await;
            let mut args = vec!["--as", "alice", "--principals", principals.to_str().unwrap()];
            args.push("--json");
            let flags = cli_args(request);
            args.extend(flags.iter().map(String::as_str));
            let cli: Value = serde_json::from_slice(&ctxgraph(&args, &store).stdout).unwrap();

            let (http, mcp, cli) = (normalised(http), normalised(mcp), normalised(cli));
            assert!(!ids(&http).is_empty(), "{request}: an empty pack proves little: {http}");
            assert_eq!(ids(&http), ids(&cli), "{request}: items, CLI against HTTP");
            assert_eq!(ids(&http), ids(&mcp), "{request}: items, MCP against HTTP");
            assert_eq!(http, cli, "{request}: the CLI's pack differs from HTTP's");
            assert_eq!(http, mcp, "{request}: the MCP pack differs from HTTP's");
            assert_eq!(http["intent_classified"], request.get("intent").is_none(), "{request}");

            // The constraints held (the same code path asked three times proves nothing if
            // it ignored them).
            for item in http["items"].as_array().unwrap() {
                let props = &item["node"]["properties"];
                let is_event = item["node"]["label"] == "Event";
                for (field, prop) in [("session", "session_id"), ("agent", "agent_id")] {
                    if let Some(want) = request.get(field)
                        && is_event
                    {
                        assert_eq!(&props[prop], want, "{request}: {item}");
                    }
                }
                if let Some(labels) = request["labels"].as_array() {
                    assert!(labels.contains(&item["node"]["label"]), "{request}: {item}");
                }
                if request.get("tags").is_some() && is_event {
                    assert_eq!(props["scope_tags"], json!(["billing"]), "{request}: {item}");
                }
            }
        }
        client.cancel().await.unwrap();
    });
}

#[test]
fn unknown_fields_are_refused_by_name_over_http_and_mcp() {
    let s = Server::start();
    let k = &s.keys.writer;
    let (status, http) =
        s.post("/v1/recall", k, &json!({"question": "why did it fail", "tag": "billing"}));
    assert_eq!((status, http["error"]["code"].as_str()), (400, Some("request.unknown_field")));
    let message = http["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("unknown field `tag` in recall request; expected one of ")
            && message.contains("`tags`"),
        "{message}"
    );
    assert_eq!(http["error"]["violations"][0]["path"], "$.tag");

    // Every body and every query string, not only recall's.
    let (status, body) = s.post("/v1/events", k, &json!({"events": [], "dry_run": true}));
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("request.unknown_field")));
    let (status, body) = s.post("/v1/memories", k, &json!({"content": "x", "tgs": ["a"]}));
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("request.unknown_field")));
    assert!(body["error"]["message"].as_str().unwrap().contains("`tgs`"), "{body}");
    let (status, body) = s.get("/v1/memories?limt=3", k);
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (400, Some("request.unknown_field")),
        "{body}"
    );
    assert!(body["error"]["message"].as_str().unwrap().contains("`limt`"), "{body}");
    // A field of the wrong type is still a shape error.
    let (status, body) = s.post("/v1/recall", k, &json!({"question": 3}));
    assert_eq!((status, body["error"]["code"].as_str()), (422, Some("request.invalid_body")));

    runtime().block_on(async {
        let client = http_client(&s, k).await;
        let mcp =
            err(&client, "recall", json!({"question": "why did it fail", "tag": "billing"})).await;
        assert_eq!(mcp, http["error"], "the same error as HTTP's");
        let e = err(&client, "save_memory", json!({"content": "x", "tgs": ["a"]})).await;
        assert_eq!(e["code"], "request.unknown_field", "{e}");
        // Known aliases are not unknown.
        ok(&client, "recall", json!({"query": "why did it fail", "session_id": "s1"})).await;
        client.cancel().await.unwrap();
    });
}
