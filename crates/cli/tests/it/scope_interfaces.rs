//! One principal, every interface: `ctxgraph --as`, HTTP and MCP read through the same
//! principal's reader, so a reader who may not see some events gets the same answers from each
//! (recall, search, a session's timeline, a point read, counts), and none of them names what it
//! hides.

use std::process::Command;

use serde_json::{Value, json};

use crate::mcp::{http_client, ok, runtime};
use crate::server::{Server, event};

/// `ctxgraph --db <acme's store> --as bob --json ARGS`: exit code and parsed output.
fn as_bob(s: &Server, args: &[&str]) -> (Option<i32>, Value) {
    let store = s.data().join("tenants").join("acme.ctxg");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .env_remove("CTXGRAPH_DB")
        .env_remove("CTXGRAPH_AS")
        .arg("--db")
        .arg(&store)
        .args(["--as", "bob", "--json"])
        .args(args)
        .output()
        .unwrap();
    let parsed = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        json!({"stdout": String::from_utf8_lossy(&out.stdout), "stderr": String::from_utf8_lossy(&out.stderr)})
    });
    (out.status.code(), parsed)
}

fn owner(s: &Server, args: &[&str]) {
    let store = s.data().join("tenants").join("acme.ctxg");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .env_remove("CTXGRAPH_AS")
        .arg("--db")
        .arg(&store)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Item ids of a pack, in rank order.
fn items(pack: &Value) -> Vec<String> {
    pack["items"].as_array().unwrap().iter().map(|i| i["node"]["id"].to_string()).collect()
}

#[test]
fn a_principal_reads_the_same_through_the_cli_http_and_mcp() {
    let mut s = Server::start();
    // Bob (role reader) may not see e2 (operators only) nor e4 (PII not cleared).
    let evs = vec![
        event("e1", "s1", 0, json!({})),
        event(
            "e2",
            "s1",
            1,
            json!({"scope": {"allow_roles": ["operator"]}, "parent_event_id": "e1",
            "payload": {"error": "ledger reconciliation rejected by the orders database"}}),
        ),
        event(
            "e3",
            "s1",
            2,
            json!({"parent_event_id": "e2",
            "payload": {"error": "cache warmup failed on the replica"}}),
        ),
        event(
            "e4",
            "s2",
            3,
            json!({"pii": {"pii_cleared": false},
            "payload": {"error": "customer 078-05-1120 rejected by the orders database"}}),
        ),
        event("e5", "s2", 4, json!({"payload": {"error": "disk quota exceeded on the replica"}})),
    ];
    let (status, body) = s.post("/v1/events", &s.keys.writer, &json!({"events": evs}));
    assert_eq!((status, body["accepted"].clone()), (200, json!(5)), "{body}");
    // Consolidated while the server is down: summaries and the indexes are then on disk.
    assert!(s.terminate());
    owner(&s, &["consolidate"]);
    s.restart();
    let bob = s.keys.reader.clone();
    let hidden = ["\"e2\"", "\"e4\"", "078-05-1120", "ledger reconciliation"];
    let leaks = |what: &str, v: &Value| {
        let text = v.to_string();
        for h in hidden {
            assert!(!text.contains(h), "{what} shows {h}: {text}");
        }
    };

    // Recall: one pack, whichever way it is asked.
    let question = json!({"question": "why was the orders database rejected", "k": 20});
    let (status, http) = s.post("/v1/recall", &bob, &question);
    assert_eq!(status, 200, "{http}");
    let (code, cli) = as_bob(&s, &["recall", "why was the orders database rejected", "--k", "20"]);
    assert_eq!(code, Some(0), "{cli}");
    let mcp = runtime().block_on(async {
        let client = http_client(&s, &bob).await;
        let pack = ok(&client, "recall", question.clone()).await;
        client.cancel().await.unwrap();
        pack
    });
    assert!(!items(&http).is_empty(), "an empty pack proves little: {http}");
    assert_eq!(items(&http), items(&cli), "CLI against HTTP");
    assert_eq!(items(&http), items(&mcp), "MCP against HTTP");
    for (what, pack) in [("HTTP recall", &http), ("CLI recall", &cli), ("MCP recall", &mcp)] {
        leaks(what, pack);
    }

    // Search.
    let (status, found) = s.post("/v1/search", &bob, &json!({"q": "replica rejected"}));
    assert_eq!(status, 200, "{found}");
    let (code, cli_found) = as_bob(&s, &["search", "replica rejected"]);
    assert_eq!(code, Some(0), "{cli_found} {found}");
    let http_ids: Vec<String> =
        found["hits"].as_array().unwrap().iter().map(|h| h["node"]["id"].to_string()).collect();
    let cli_ids: Vec<String> =
        cli_found.as_array().unwrap().iter().map(|h| h["id"].to_string()).collect();
    assert!(!http_ids.is_empty(), "{found}");
    assert_eq!(http_ids, cli_ids, "search: CLI against HTTP");
    leaks("HTTP search", &found);
    leaks("CLI search", &cli_found);

    // A session's timeline: the hidden cause reads as a parent not in the log, alike.
    let (status, timeline) = s.get("/v1/sessions/s1/timeline", &bob);
    assert_eq!(status, 200, "{timeline}");
    let (code, session) = as_bob(&s, &["session", "s1"]);
    assert_eq!(code, Some(0));
    let events = |v: &Value| -> Vec<String> {
        v["events"].as_array().unwrap().iter().map(|e| e["event"]["id"].to_string()).collect()
    };
    assert_eq!(events(&timeline), vec!["\"e1\"", "\"e3\""], "{timeline}");
    assert_eq!(events(&timeline), events(&session), "timeline: CLI against HTTP");
    assert_eq!(session["events"][1]["missing_parent"], "e2", "{session}");

    // A point read of a hidden event is a miss everywhere, and counts count what bob sees.
    assert_eq!(s.get("/v1/events/e2", &bob).0, 404);
    assert_eq!(as_bob(&s, &["get", "e2"]).0, Some(1));
    let (_, stats) = s.get("/v1/stats", &bob);
    let (_, cli_stats) = as_bob(&s, &["stats"]);
    assert_eq!(stats["events"], json!(3), "{stats}");
    assert_eq!(cli_stats["events"], stats["events"], "{cli_stats}");
    // The store's own figures and tiers are its owner's; an admin of a server is not it.
    for path in ["/v1/stats/store", "/v1/stats/retention"] {
        let (status, v) = s.get(path, &s.keys.admin);
        assert_eq!(
            (status, &v["error"]["code"]),
            (403, &json!("access.owner_only")),
            "{path}: {v}"
        );
    }
    let (status, me) = s.get("/v1/whoami", &bob);
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (&me["name"], &me["tenant"], &me["owner"]),
        (&json!("bob"), &json!("acme"), &json!(false))
    );

    // The explorer's node reads: a hidden node is a miss; a visible one's edge groups and
    // neighbour pages leave out every edge to a hidden node, which the operator sees.
    assert_eq!(s.get("/v1/nodes/e2", &bob).0, 404);
    assert_eq!(
        s.get("/v1/nodes/e2/neighbors?label=Event&edge_type=CAUSED_BY&direction=out", &bob).0,
        404
    );
    let groups = |key: &str, id: &str| {
        let (status, v) = s.get(&format!("/v1/nodes/{id}?label=Event"), key);
        assert_eq!(status, 200, "{v}");
        v["nodes"][0]["edges"].as_array().unwrap().clone()
    };
    let caused = |g: &[Value]| g.iter().any(|g| g["type"] == "CAUSED_BY" && g["direction"] == "in");
    assert!(caused(&groups(&s.keys.writer, "e1")), "the operator sees e2 caused by e1");
    assert!(!caused(&groups(&bob, "e1")), "bob's e1 has nothing it caused");
    for id in ["e1", "e3", "e5"] {
        let g = groups(&bob, id);
        leaks("node groups", &Value::Array(g.clone()));
        for group in &g {
            let path = format!(
                "/v1/nodes/{id}/neighbors?label=Event&edge_type={}&direction={}&limit=200",
                group["type"].as_str().unwrap(),
                group["direction"].as_str().unwrap()
            );
            let (status, page) = s.get(&path, &bob);
            assert_eq!(status, 200, "{page}");
            assert_eq!(
                page["neighbors"].as_array().unwrap().len(),
                group["count"].as_u64().unwrap() as usize,
                "{path}"
            );
            leaks("neighbors", &page);
        }
    }
}
