//! The MCP tools driven by the official SDK's client: over stdio (`ctxgraph mcp`) and over
//! streamable HTTP (`/mcp` of `ctxgraph serve`), a call of every tool, bad arguments, unknown
//! tools, keys and tenant isolation.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

use crate::server::{Server, add_principal, event};

pub(crate) type Client = RunningService<RoleClient, ()>;

pub(crate) const TOOLS: [&str; 31] = [
    "add_document",
    "add_goal",
    "add_instance",
    "check_checklist",
    "define_checklist",
    "define_type",
    "entity_candidates",
    "entity_slots",
    "evolution",
    "evolve_outcome",
    "forget",
    "ingest_event",
    "link_memories",
    "list_checklists",
    "list_goals",
    "list_receipts",
    "list_types",
    "memory_impact",
    "merge_entities",
    "next_question",
    "recall",
    "recall_entity",
    "record_fact",
    "record_receipt",
    "reject_entities",
    "save_memory",
    "search_memories",
    "set_slot",
    "show_document",
    "unlink_memories",
    "weekly_rollup",
];

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
}

pub(crate) async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    let params = CallToolRequestParams::new(tool.to_owned())
        .with_arguments(args.as_object().cloned().unwrap_or_default());
    client.call_tool(params).await.unwrap()
}

/// The structured result of a call that must succeed.
pub(crate) async fn ok(client: &Client, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args).await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(r.is_error, Some(false), "{tool}: {v}");
    v
}

/// The error code of a call that must fail as a tool error.
pub(crate) async fn err(client: &Client, tool: &str, args: Value) -> Value {
    let r = call(client, tool, args).await;
    let v = r.structured_content.clone().unwrap_or_default();
    assert_eq!(r.is_error, Some(true), "{tool}: {v}");
    v["error"].clone()
}

/// `ctxgraph mcp ARGS` started as a child and served over its stdio.
pub(crate) async fn stdio_client(args: &[&std::ffi::OsStr]) -> Client {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_ctxgraph"));
    cmd.arg("mcp").args(args);
    ().serve(TokioChildProcess::new(cmd).unwrap()).await.unwrap()
}

pub(crate) async fn http_client(s: &Server, key: &str) -> Client {
    let config = StreamableHttpClientTransportConfig::with_uri(s.url("/mcp")).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap()
}

/// Every tool once, writes before reads (a stdio server may answer concurrent requests out of
/// order; these calls are sequential).
async fn every_tool(client: &Client) {
    let mut names: Vec<String> =
        client.list_all_tools().await.unwrap().into_iter().map(|t| t.name.to_string()).collect();
    names.sort();
    assert_eq!(names, TOOLS);
    for t in client.list_all_tools().await.unwrap() {
        assert!(t.description.as_deref().is_some_and(|d| d.len() > 40), "{}", t.name);
        let props = t
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        assert!(!props.is_empty(), "{} has described parameters", t.name);
        for (name, p) in props {
            assert!(p.get("description").is_some(), "{}.{name} is described", t.name);
        }
    }

    let e = ok(client, "ingest_event", json!({"event": event("e1", "s1", 0, json!({}))})).await;
    assert_eq!(e["status"], "accepted", "{e}");
    let f = ok(
        client,
        "record_fact",
        json!({"entity": "Checkout revamp", "type": "project", "predicate": "blocked-by",
               "object": "Payments API", "object_type": "project", "confidence": 0.9}),
    )
    .await;
    assert_eq!(f["subject"]["id"], "project:checkout revamp", "{f}");
    ok(
        client,
        "save_memory",
        json!({"kind": "decision", "topic": "database", "content": "Use PostgreSQL", "id": "m1"}),
    )
    .await;
    ok(client, "save_memory", json!({"kind": "decision", "topic": "database", "content": "Use CockroachDB", "id": "m2", "supersedes": "m1"})).await;
    let o = ok(
        client,
        "evolve_outcome",
        json!({"decision_id": "m1", "result": "failed", "reason": "no multi-region"}),
    )
    .await;
    assert_eq!(o["status"], "accepted", "{o}");
    ok(client, "link_memories", json!({"source": "m2", "target": "m1", "type": "relates_to"}))
        .await;

    let about = ok(client, "recall_entity", json!({"name": "checkout revamp"})).await;
    assert_eq!(about["facts"][0]["predicate"], "blocked_by", "{about}");
    let evo = ok(client, "evolution", json!({"subject": "database"})).await;
    assert_eq!(evo["steps"][0]["memory"]["id"], "m2", "{evo}");
    let roll = ok(client, "weekly_rollup", json!({"since": "2020-01-01"})).await;
    assert!(!roll["decisions"].as_array().unwrap().is_empty(), "{roll}");
    let pack = ok(client, "recall", json!({"query": "orders database timeout"})).await;
    assert!(!pack["items"].as_array().unwrap().is_empty(), "{pack}");

    // Receipts: recorded citing an event, then listed.
    let r = ok(
        client,
        "record_receipt",
        json!({"receipt": {"id": "receipt/1", "task": "deploy", "actor": "user/ops1",
            "referenced_inputs": {"events": ["e1"]},
            "policies_checked": [{"id": "policy/budget", "result": "allow"}],
            "action": "promote", "outcome": {"status": "success"},
            "timestamps": {"committed": "2026-11-20T10:00:00Z"}}}),
    )
    .await;
    assert_eq!(r["accepted"], 1, "{r}");
    let list =
        ok(client, "list_receipts", json!({"task": "deploy", "policy": "policy/budget=allow"}))
            .await;
    assert_eq!(list["receipts"][0]["receipt_id"], "receipt/1", "{list}");
    // Forget: an admin forgets; anyone else gets a tool error with the stable code.
    ok(client, "ingest_event", json!({"event": event("e-secret", "s9", 1, json!({}))})).await;
    let forgot =
        call(client, "forget", json!({"kind": "event", "id": "e-secret", "reason": "test"})).await;
    if forgot.is_error == Some(true) {
        let e = err(client, "forget", json!({"kind": "event", "id": "e-secret"})).await;
        assert_eq!(e["code"], "access.forbidden", "{e}");
    } else {
        let e = err(client, "forget", json!({"kind": "event", "id": "e-secret"})).await;
        assert_eq!(e["code"], "forget.unknown_target", "forgotten once: {e}");
    }
    let e = err(client, "forget", json!({"kind": "planet", "id": "x"})).await;
    assert!(e["code"] == "request.forget_kind" || e["code"] == "access.forbidden", "{e}");

    // Bad arguments are tool errors with stable codes, and change nothing.
    let e = err(client, "record_fact", json!({"subject": 5, "predicate": "tagged", "object": "x"}))
        .await;
    assert_eq!(e["code"], "mcp.invalid_arguments", "{e}");
    let e = err(client, "recall", json!({})).await;
    assert_eq!(e["code"], "mcp.invalid_arguments", "{e}");
    let e = err(client, "recall", json!({"query": "why ".repeat(300)})).await;
    assert_eq!(e["code"], "limit.question_words", "a question over the limit: {e}");
    let e = err(client, "ingest_event", json!({"event": {"event_id": "x"}})).await;
    assert_eq!(e["code"], "envelope.required_field", "{e}");
    assert!(!e["violations"].as_array().unwrap().is_empty());
    let e = err(
        client,
        "evolve_outcome",
        json!({"memory_id": "m-none", "outcome": "failed", "reason": "r"}),
    )
    .await;
    assert!(e["code"].as_str().unwrap().starts_with("memory."), "{e}");
    let e = err(client, "recall_entity", json!({"entity": "nobody at all"})).await;
    assert_eq!(e["code"], "entity.not_found", "{e}");
    // An unknown tool is a protocol error, not a crash: the session goes on.
    let unknown = client.call_tool(CallToolRequestParams::new("no_such_tool")).await;
    assert!(unknown.is_err());
    let again = ok(client, "recall_entity", json!({"name": "checkout revamp"})).await;
    assert_eq!(again["facts"].as_array().unwrap().len(), 1);
}

#[test]
fn stdio_as_a_principal_calls_every_tool() {
    let dir = tempfile::TempDir::new().unwrap();
    let data = dir.path().join("data");
    add_principal(&data, "alice", "acme", &["writer"]);
    runtime().block_on(async {
        let client =
            stdio_client(&["--as".as_ref(), "alice".as_ref(), "--data".as_ref(), data.as_os_str()])
                .await;
        every_tool(&client).await;
        client.cancel().await.unwrap();
    });
    assert!(data.join("tenants/acme.ctxg").exists());
}

#[test]
fn stdio_on_a_store_file_acts_as_the_local_principal() {
    let dir = tempfile::TempDir::new().unwrap();
    let store = dir.path().join("g.ctxg");
    runtime().block_on(async {
        let client = stdio_client(&["--store".as_ref(), store.as_os_str()]).await;
        let m = ok(
            &client,
            "save_memory",
            json!({"kind": "insight", "content": "Ship on Fridays", "id": "m1"}),
        )
        .await;
        assert_eq!(m["id"], "m1");
        client.cancel().await.unwrap();
    });
    assert!(store.exists());
}

#[test]
fn streamable_http_with_keys_and_tenants() {
    let s = Server::start();
    runtime().block_on(async {
        let client = http_client(&s, &s.keys.writer).await;
        every_tool(&client).await;
        client.cancel().await.unwrap();

        // Another tenant sees none of it.
        let other = http_client(&s, &s.keys.other).await;
        let e = err(&other, "recall_entity", json!({"name": "checkout revamp"})).await;
        assert_eq!(e["code"], "entity.not_found");
        let pack = ok(&other, "recall", json!({"query": "orders database timeout"})).await;
        assert_eq!(pack["items"], json!([]), "{pack}");
        let e = err(&other, "evolution", json!({"topic": "database"})).await;
        assert_eq!(e["code"], "memory.no_decisions");
        other.cancel().await.unwrap();

        // A reader may read but not write.
        let reader = http_client(&s, &s.keys.reader).await;
        let e = err(&reader, "save_memory", json!({"content": "x"})).await;
        assert_eq!(e["code"], "access.forbidden");
        ok(&reader, "recall_entity", json!({"name": "checkout revamp"})).await;
        reader.cancel().await.unwrap();
    });
    // Without a key, or with a wrong one, /mcp refuses before any MCP exchange.
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, body) = s.call("POST", "/mcp", None, Some(&init.to_string()));
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("auth.missing_key")));
    let (status, body) = s.call("POST", "/mcp", Some("cgk_wrong"), Some(&init.to_string()));
    assert_eq!((status, body["error"]["code"].as_str()), (401, Some("access.unknown_key")));
    // Nothing reached the other tenant's store.
    let (_, stats) = s.get("/v1/stats", &s.keys.other);
    assert_eq!((stats["events"].as_u64(), stats["memories"].as_u64()), (Some(0), Some(0)));
}
