//! Derived nodes over HTTP: a day summary quoting an event the reader may not see, and an entity
//! only hidden events name, are not returned by `ctxgraph serve` (search, recall, entity recall).

use std::process::Command;

use serde_json::json;

use crate::server::{Server, event};

/// A secret only a PII reviewer may read.
const SECRET: &str = "078-05-1120";

/// Run `ctxgraph --db <tenant store> ARGS` beside the running server: its exit code and output.
fn cli(s: &Server, args: &[&str]) -> (Option<i32>, String) {
    let store = s.data().join("tenants").join("acme.ctxg");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .arg("--db")
        .arg(&store)
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn on_store(s: &Server, args: &[&str]) {
    let (code, out) = cli(s, args);
    assert_eq!(code, Some(0), "{args:?}: {out}");
}

#[test]
fn day_summaries_and_entities_of_hidden_events_are_not_served() {
    let s = Server::start();
    let evs = vec![
        event("e1", "s1", 0, json!({})),
        event(
            "e2",
            "s2",
            10,
            json!({"pii": {"pii_cleared": false},
                   "payload": {"error": format!("customer SSN {SECRET} rejected")},
                   "entities": [{"name": "vault-prod", "entity_type": "service"}]}),
        ),
        event(
            "e3",
            "s3",
            20,
            json!({"scope": {"allow_roles": ["operator"]},
                   "payload": {"error": "reconciliation of ledger-x failed"},
                   "entities": [{"name": "ledger-x", "entity_type": "service"},
                                {"name": "orders-db", "entity_type": "service"}]}),
        ),
    ];
    let (status, body) = s.post("/v1/events", &s.keys.writer, &json!({"events": evs}));
    assert_eq!((status, body["accepted"].clone()), (200, json!(3)), "{body}");
    on_store(&s, &["enrich"]);
    on_store(&s, &["consolidate"]);

    // The reader (no pii_reviewer, no operator role) is served nothing that quotes e2.
    let reader = &s.keys.reader;
    let (status, hits) = s.post("/v1/search", reader, &json!({"q": "customer SSN rejected"}));
    assert_eq!(status, 200, "{hits}");
    assert!(!hits.to_string().contains(SECRET), "search: {hits}");
    assert!(!hits.to_string().contains("day:2026-11-20"), "search: {hits}");
    let (status, pack) =
        s.post("/v1/recall", reader, &json!({"question": "customer SSN rejected", "k": 30}));
    assert_eq!(status, 200, "{pack}");
    assert!(!pack.to_string().contains(SECRET), "recall: {pack}");
    assert!(!pack.to_string().contains("day:2026-11-20"), "recall: {pack}");

    // An entity only hidden events name is not found; one a visible event names is.
    for name in ["vault-prod", "ledger-x"] {
        let (status, body) = s.post("/v1/entities/recall", reader, &json!({"entity": name}));
        assert_eq!(
            (status, body["error"]["code"].clone()),
            (404, json!("entity.not_found")),
            "{body}"
        );
        let (_, pack) = s.post("/v1/recall", reader, &json!({"question": name, "k": 30}));
        assert!(!pack.to_string().contains(&format!("service:{name}")), "recall {name}: {pack}");
    }
    let (status, body) = s.post("/v1/entities/recall", reader, &json!({"entity": "orders-db"}));
    assert_eq!(status, 200, "{body}");
    // The CLI acting as the reader: `get` finds neither the day summary nor vault-prod, and
    // shows orders-db (also named by e3) without its counts.
    for id in ["day:2026-11-20", "service:vault-prod", "service:ledger-x"] {
        let (code, out) = cli(&s, &["--as", "bob", "get", id]);
        assert_eq!(code, Some(1), "get {id}: {out}");
    }
    let (code, out) = cli(&s, &["--as", "bob", "--json", "get", "service:orders-db"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("orders-db") && !out.contains("mention_count"), "{out}");
    let (_, out) = cli(&s, &["--json", "get", "day:2026-11-20"]);
    assert!(out.contains(SECRET), "the owner reads everything: {out}");

    // The writer is an operator: it sees ledger-x (e3), with its count.
    let (status, body) =
        s.post("/v1/entities/recall", &s.keys.writer, &json!({"entity": "ledger-x"}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["entity"]["properties"]["mention_count"], json!(1), "{body}");
}
