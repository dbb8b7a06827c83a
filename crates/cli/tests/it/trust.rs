//! `ctxgraph serve` over HTTP: OTLP traces in, decision receipts, forgetting and its audit.

use serde_json::{Value, json};

use crate::server::{Server, event};

const PB: &[u8] = include_bytes!("../../../otlp/tests/fixtures/fake_agent.pb");
const OTLP_JSON: &[u8] = include_bytes!("../../../otlp/tests/fixtures/fake_agent.json");
const CONVERSATION: &str = "conv-weather-0001";

/// POST raw bytes with a content type; the status and the body bytes.
fn post_bytes(
    s: &Server,
    path: &str,
    key: Option<&str>,
    ctype: &str,
    body: &[u8],
) -> (u16, Vec<u8>) {
    let agent: ureq::Agent =
        ureq::Agent::config_builder().http_status_as_error(false).build().into();
    let mut r = agent.post(&s.url(path)).header("Content-Type", ctype);
    if let Some(k) = key {
        r = r.header("Authorization", &format!("Bearer {k}"));
    }
    let mut resp = r.send(body).unwrap();
    let status = resp.status().as_u16();
    (status, resp.body_mut().read_to_vec().unwrap())
}

#[test]
fn otlp_traces_become_the_causal_chain() {
    let s = Server::start();
    let (status, _) =
        post_bytes(&s, "/v1/traces", Some(&s.keys.writer), "application/x-protobuf", PB);
    assert_eq!(status, 200);
    // The same spans as OTLP/JSON are duplicates: nothing new, nothing refused.
    let (status, body) =
        post_bytes(&s, "/v1/traces", Some(&s.keys.writer), "application/json", OTLP_JSON);
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(v.get("partialSuccess").is_none(), "{v}");

    let (status, tl) =
        s.call("GET", &format!("/v1/sessions/{CONVERSATION}/timeline"), Some(&s.keys.writer), None);
    assert_eq!(status, 200, "{tl}");
    let events = tl["events"].as_array().unwrap();
    assert_eq!(events.len(), 5, "{tl}");
    let root = events[0]["event"]["id"].as_str().unwrap().to_owned();
    for e in &events[1..] {
        assert_eq!(e["caused_by"], json!([root]), "{e}");
    }
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["event"]["properties"]["event_type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types,
        ["agent.invoke", "llm.chat", "tool.execute", "tool.execute", "llm.chat"],
        "{tl}"
    );

    // Bad input: undecodable protobuf, an unknown content type, no key, a reader's key.
    let (status, _) = post_bytes(
        &s,
        "/v1/traces",
        Some(&s.keys.writer),
        "application/x-protobuf",
        &PB[..PB.len() / 2],
    );
    assert_eq!(status, 400);
    let (status, _) = post_bytes(&s, "/v1/traces", Some(&s.keys.writer), "text/plain", PB);
    assert_eq!(status, 415);
    let (status, _) = post_bytes(&s, "/v1/traces", None, "application/x-protobuf", PB);
    assert_eq!(status, 401);
    let (status, _) =
        post_bytes(&s, "/v1/traces", Some(&s.keys.reader), "application/x-protobuf", PB);
    assert_eq!(status, 403);
}

#[test]
fn receipts_and_forgetting_over_http() {
    let s = Server::start();
    let evs = vec![
        event("e1", "s1", 0, json!({})),
        event(
            "e2",
            "s1",
            1,
            json!({"scope": {"allow_roles": ["operator"]}, "payload": {"error": "the vault password is hunter2"}}),
        ),
    ];
    let (status, body) = s.post("/v1/events", &s.keys.writer, &json!({"events": evs}));
    assert_eq!((status, body["accepted"].clone()), (200, json!(2)), "{body}");
    let receipt = |id: &str, event: &str| {
        json!({"id": id, "task": "deploy", "actor": "user/ops1",
        "referenced_inputs": {"events": [event]}, "action": "promote",
        "policies_checked": [{"id": "policy/budget", "result": "deny"}],
        "outcome": {"status": "success"}, "timestamps": {"committed": "2026-11-20T10:00:00Z"}})
    };
    let (status, body) = s.post(
        "/v1/receipts",
        &s.keys.writer,
        &json!({"receipts": [receipt("r1", "e1"), receipt("r2", "e2"), receipt("r3", "nope")]}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["accepted"].clone(), body["rejected"].clone()),
        (json!(2), json!(1)),
        "{body}"
    );
    let ids = |v: &Value| -> Vec<String> {
        v["receipts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["receipt_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, all) = s.call(
        "GET",
        "/v1/receipts?task=deploy&policy=policy/budget=deny",
        Some(&s.keys.writer),
        None,
    );
    assert_eq!(ids(&all).len(), 2, "{all}");
    // The reader may not see e2, so not the receipt citing it either.
    let (_, seen) = s.call("GET", "/v1/receipts?task=deploy", Some(&s.keys.reader), None);
    assert_eq!(ids(&seen), ["r1"], "{seen}");
    let (status, _) =
        s.call("GET", "/v1/receipts?policy=policy/budget=maybe", Some(&s.keys.reader), None);
    assert_eq!(status, 400);

    // Forgetting: admins only; the content leaves; the audit keeps who and when.
    let forget = json!({"kind": "event", "id": "e2", "reason": "credential in a payload"});
    let (status, body) = s.post("/v1/forget", &s.keys.writer, &forget);
    assert_eq!((status, body["error"]["code"].clone()), (403, json!("access.forbidden")), "{body}");
    let (status, body) = s.post("/v1/forget", &s.keys.admin, &forget);
    assert_eq!(status, 200, "{body}");
    assert!(body["redacted"].as_u64().unwrap() >= 1, "{body}");
    let (status, _) = s.call("GET", "/v1/events/e2", Some(&s.keys.writer), None);
    assert_eq!(status, 404);
    let (status, body) = s.post("/v1/forget", &s.keys.admin, &forget);
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("forget.unknown_target")),
        "{body}"
    );
    let (status, body) = s.post("/v1/forget", &s.keys.admin, &json!({"kind": "planet", "id": "x"}));
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("request.forget_kind")),
        "{body}"
    );
    let (status, audit) = s.call("GET", "/v1/forgotten", Some(&s.keys.admin), None);
    assert_eq!(status, 200, "{audit}");
    assert_eq!(audit["forgotten"][0]["target_id"], "e2", "{audit}");
    assert_eq!(audit["forgotten"][0]["by"], "root", "{audit}");
    assert!(!audit.to_string().contains("hunter2"));
    let (status, _) = s.call("GET", "/v1/forgotten", Some(&s.keys.writer), None);
    assert_eq!(status, 403);
    // The bytes are gone from the tenant's store.
    let store = s.data().join("tenants").join("acme.ctxg");
    for path in [store.clone(), store.with_extension("ctxg-wal")] {
        if let Ok(bytes) = std::fs::read(&path) {
            assert!(
                !bytes.windows(7).any(|w| w == b"hunter2"),
                "{} holds the secret",
                path.display()
            );
        }
    }
}
