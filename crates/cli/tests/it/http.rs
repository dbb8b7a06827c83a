//! `ctxgraph serve` driven over HTTP: every route, auth, tenant isolation, scope filtering, bad
//! input, metrics, OpenAPI and graceful shutdown.

use serde_json::{Value, json};

use crate::server::{Server, event};

fn ingest(s: &Server, key: &str, events: Vec<Value>) -> Value {
    let (status, body) = s.post("/v1/events", key, &json!({ "events": events }));
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn batch_ingest_reports_each_record_and_reads_see_them() {
    let s = Server::start();
    let k = &s.keys.writer;
    let body = ingest(
        &s,
        k,
        vec![
            event("e1", "s1", 0, json!({})),
            event("e2", "s1", 1, json!({"parent_event_id": "e1"})),
            json!({"event_id": "bad", "event_type": "tool.execute"}),
        ],
    );
    assert_eq!(
        (body["accepted"].as_u64(), body["rejected"].as_u64()),
        (Some(2), Some(1)),
        "{body}"
    );
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["status"], "accepted");
    assert!(results[0]["position"].as_u64().is_some());
    assert_eq!(results[2]["status"], "rejected");
    assert_eq!(results[2]["code"], "envelope.required_field");
    assert!(
        results[2]["violations"].as_array().unwrap().iter().any(|v| v["path"] == "$.occurred_at")
    );

    // The same records again are duplicates, nothing new.
    let again = ingest(&s, k, vec![event("e1", "s1", 0, json!({}))]);
    assert_eq!(again["results"][0]["status"], "duplicate", "{again}");

    let (status, e1) = s.get("/v1/events/e1", k);
    assert_eq!(status, 200);
    assert_eq!((e1["label"].as_str(), e1["id"].as_str()), (Some("Event"), Some("e1")));
    let (status, missing) = s.get("/v1/events/nope", k);
    assert_eq!((status, missing["error"]["code"].as_str()), (404, Some("event.not_found")));

    // Timeline pages of one event each, chained by the cursor.
    let (_, page1) = s.get("/v1/sessions/s1/timeline?limit=1", k);
    assert_eq!(page1["events"][0]["event"]["id"], "e1", "{page1}");
    let cursor = page1["next_cursor"].as_str().unwrap();
    let (_, page2) = s.get(&format!("/v1/sessions/s1/timeline?limit=1&cursor={cursor}"), k);
    assert_eq!(page2["events"][0]["event"]["id"], "e2", "{page2}");
    assert_eq!(page2["events"][0]["caused_by"], json!(["e1"]));
    assert!(page2.get("next_cursor").is_none(), "{page2}");
    let (status, bad) = s.get("/v1/sessions/s1/timeline?cursor=zzz", k);
    assert_eq!((status, bad["error"]["code"].as_str()), (400, Some("request.cursor")));

    let (status, pack) = s.post("/v1/recall", k, &json!({"question": "orders database timeout"}));
    assert_eq!(status, 200, "{pack}");
    assert!(!pack["items"].as_array().unwrap().is_empty(), "{pack}");
    let (status, hits) = s.post("/v1/search", k, &json!({"q": "timeout orders"}));
    assert_eq!(status, 200);
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
    let (_, stats) = s.get("/v1/stats", k);
    assert_eq!(stats["events"], 2, "{stats}");
    assert_eq!(stats["auto_link"], true, "automatic memory links are on by default: {stats}");
}

/// Many clients ingesting at once, their batches committed in groups: every record is
/// acknowledged as accepted, and every acknowledged record is there afterwards.
#[test]
fn concurrent_ingests_are_all_acknowledged_and_all_present() {
    let s = Server::start();
    let k = s.keys.writer.as_str();
    let (clients, batches, per) = (12, 4, 10);
    std::thread::scope(|scope| {
        for c in 0..clients {
            let s = &s;
            scope.spawn(move || {
                for b in 0..batches {
                    let events = (0..per)
                        .map(|i| {
                            let minute = u32::try_from(b * per + i).unwrap();
                            event(&format!("c{c}-b{b}-{i}"), &format!("s{c}"), minute, json!({}))
                        })
                        .collect();
                    let body = ingest(s, k, events);
                    assert_eq!(body["accepted"], per, "{body}");
                }
            });
        }
    });
    let (_, stats) = s.get("/v1/stats", k);
    assert_eq!(stats["events"], clients * batches * per, "{stats}");
    for c in 0..clients {
        let (status, page) = s.get(&format!("/v1/sessions/s{c}/timeline?limit=1000"), k);
        assert_eq!(status, 200, "{page}");
        let ids: Vec<&str> = page["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["event"]["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.len(), batches * per, "session s{c}: {ids:?}");
    }
}

#[test]
fn facts_and_memories_over_http() {
    let s = Server::start();
    let k = &s.keys.writer;
    let (status, fact) = s.post(
        "/v1/facts",
        k,
        &json!({"entity": "Checkout revamp", "subject_type": "project", "predicate": "blocked by",
                "object": "Payments API", "object_type": "project", "source": "standup notes", "confidence": 0.8}),
    );
    assert_eq!(status, 200, "{fact}");
    assert_eq!(fact["status"], "accepted");
    let fact_id = fact["fact_id"].as_str().unwrap().to_owned();
    // Found at once by search and recall, with the claim's provenance.
    let (_, hits) = s.post("/v1/search", k, &json!({"q": "checkout blocked payments"}));
    assert_eq!(hits["hits"][0]["node"]["id"], fact_id.as_str(), "{hits}");
    let (_, pack) =
        s.post("/v1/recall", k, &json!({"question": "what blocks the checkout revamp"}));
    let items = pack["items"].as_array().unwrap();
    let item = items.iter().find(|i| i["node"]["id"] == fact_id.as_str());
    let item = item.unwrap_or_else(|| panic!("no fact in {pack}"));
    assert_eq!(item["provenance"]["source"], "standup notes", "{item}");
    assert!(item["provenance"]["log_position"].as_u64().is_some(), "{item}");
    let (status, about) = s.post("/v1/entities/recall", k, &json!({"name": "checkout revamp"}));
    assert_eq!(status, 200, "{about}");
    assert_eq!(about["facts"][0]["predicate"], "blocked_by", "{about}");
    assert_eq!(about["facts"][0]["sources"], json!(["standup notes"]));
    let (status, retracted) = s.post(
        &format!("/v1/facts/{}/retract", encode(&fact_id)),
        k,
        &json!({"reason": "unblocked"}),
    );
    assert_eq!(status, 200, "{retracted}");
    let (_, about) = s.post("/v1/entities/recall", k, &json!({"entity": "Checkout revamp"}));
    assert_eq!(about["facts"][0]["active"], false, "{about}");
    let (status, unknown) = s.post("/v1/facts/f-nope/retract", k, &json!({}));
    assert_eq!(status, 422, "{unknown}");

    let (status, m1) = s.post(
        "/v1/memories",
        k,
        &json!({"kind": "decision", "topic": "database", "content": "Use PostgreSQL for orders",
                "reasoning": "transactions", "memory_id": "m1"}),
    );
    assert_eq!(status, 200, "{m1}");
    let (_, m2) = s.post(
        "/v1/memories",
        k,
        &json!({"type": "decision", "topic": "database", "text": "Move orders to CockroachDB",
                "why": "multi-region", "id": "m2", "supersedes": "m1"}),
    );
    assert_eq!(m2["id"], "m2", "{m2}");
    let (status, o) = s.post(
        "/v1/memories/m1/outcome",
        k,
        &json!({"outcome": "failed", "reason": "no multi-region"}),
    );
    assert_eq!(status, 200, "{o}");
    let (_, ins) = s.post(
        "/v1/memories",
        k,
        &json!({"kind": "insight", "content": "Cross-region latency is 80 ms", "id": "m3"}),
    );
    assert_eq!(ins["status"], "accepted");
    let (status, link) = s.post(
        "/v1/memories/links",
        k,
        &json!({"from": "m3", "to": "m2", "link_type": "relates_to", "reason": "evidence"}),
    );
    assert_eq!(status, 200, "{link}");

    let (_, m) = s.get("/v1/memories/m1", k);
    assert_eq!(
        (m["outcome"].as_str(), m["topic"].as_str()),
        (Some("failed"), Some("database")),
        "{m}"
    );
    let (_, page) = s.get("/v1/memories?limit=2", k);
    assert_eq!(page["memories"].as_array().unwrap().len(), 2);
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, rest) = s.get(&format!("/v1/memories?limit=2&cursor={cursor}"), k);
    assert_eq!(rest["memories"].as_array().unwrap().len(), 1, "{rest}");
    let (_, evo) = s.get("/v1/topics/database/evolution", k);
    let steps: Vec<_> =
        evo["steps"].as_array().unwrap().iter().map(|s| s["memory"]["id"].clone()).collect();
    assert_eq!(steps, vec![json!("m2"), json!("m1")], "{evo}");
    let (status, impact) = s.get("/v1/memories/m1/impact", k);
    assert_eq!(status, 200, "{impact}");
    assert_eq!(impact["start"]["id"], "m1");
    let (status, found) =
        s.post("/v1/memories/search", k, &json!({"query": "which database for orders"}));
    assert_eq!(status, 200, "{found}");
    assert!(!found["hits"].as_array().unwrap().is_empty(), "{found}");
    let (status, rollup) = s.get("/v1/memories/rollup?since=2020-01-01", k);
    assert_eq!(status, 200, "{rollup}");
    assert!(!rollup["decisions"].as_array().unwrap().is_empty(), "{rollup}");
}

#[test]
fn tenants_are_isolated_and_scope_hides_events() {
    let s = Server::start();
    ingest(
        &s,
        &s.keys.writer,
        vec![
            event("a1", "s1", 0, json!({})),
            event("ops", "s1", 1, json!({"scope": {"allow_roles": ["operator"]}})),
        ],
    );
    // Another tenant sees nothing of acme: not the event, not the session, not the count.
    let other = &s.keys.other;
    assert_eq!(s.get("/v1/events/a1", other).0, 404);
    assert_eq!(s.get("/v1/sessions/s1/timeline", other).1["events"], json!([]));
    assert_eq!(s.get("/v1/stats", other).1["events"], 0);
    let (_, pack) = s.post("/v1/recall", other, &json!({"question": "orders database timeout"}));
    assert_eq!(pack["items"], json!([]), "{pack}");
    // Its own writes go to its own store.
    ingest(&s, other, vec![event("g1", "s1", 0, json!({}))]);
    assert_eq!(s.get("/v1/events/g1", &s.keys.writer).0, 404);
    assert!(s.data().join("tenants/globex.ctxg").exists());

    // A reader of acme does not see the event scoped to operators, nor count it.
    let reader = &s.keys.reader;
    assert_eq!(s.get("/v1/events/a1", reader).0, 200);
    assert_eq!(s.get("/v1/events/ops", reader).0, 404);
    let (_, tl) = s.get("/v1/sessions/s1/timeline", reader);
    let ids: Vec<_> =
        tl["events"].as_array().unwrap().iter().map(|e| e["event"]["id"].clone()).collect();
    assert_eq!(ids, vec![json!("a1")]);
    assert_eq!(s.get("/v1/stats", reader).1["events"], 1);
    let (_, hits) = s.post("/v1/search", reader, &json!({"query": "timeout orders database"}));
    assert!(hits["hits"].as_array().unwrap().iter().all(|h| h["node"]["id"] != "ops"), "{hits}");
    let (_, pack) =
        s.post("/v1/recall", reader, &json!({"question": "orders database timeout", "k": 50}));
    assert!(!pack.to_string().contains("\"ops\""), "{pack}");
    // The operator sees both.
    assert_eq!(s.get("/v1/events/ops", &s.keys.writer).0, 200);
    assert_eq!(s.get("/v1/stats", &s.keys.writer).1["events"], 2);
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let s = Server::start();
    let k = &s.keys.writer;
    ingest(&s, k, vec![event("e1", "s1", 0, json!({}))]);
    let before = s.get("/v1/stats", &s.keys.admin).1;

    let code = |(status, body): (u16, Value)| {
        (status, body["error"]["code"].as_str().unwrap_or("").to_owned())
    };
    let batch = json!({"events": [event("e9", "s1", 9, json!({}))]}).to_string();
    assert_eq!(
        code(s.call("POST", "/v1/events", None, Some(&batch))),
        (401, "auth.missing_key".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/events", Some("cgk_0000"), Some(&batch))),
        (401, "access.unknown_key".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/events", Some("wrong"), Some(&batch))),
        (401, "access.unknown_key".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/events", Some(&s.keys.reader), Some(&batch))),
        (403, "access.forbidden".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/events", Some(k), Some("{\"events\": ["))),
        (400, "request.malformed_json".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/events", Some(k), Some("{\"events\": 7}"))),
        (422, "request.invalid_body".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/recall", Some(k), Some("{\"question\": 3}"))),
        (422, "request.invalid_body".into())
    );
    assert_eq!(
        code(s.call("POST", "/v1/facts", Some(k), Some("{\"subject\": \"x\"}"))),
        (422, "request.invalid_body".into())
    );
    let huge = format!("{{\"events\": [\"{}\"]}}", "x".repeat(9 * 1024 * 1024));
    assert_eq!(
        code(s.post_raw("/v1/events", k, huge.into_bytes())),
        (413, "request.too_large".into())
    );
    assert_eq!(
        code(s.call("GET", "/v1/nothing-here", Some(k), None)),
        (404, "route.not_found".into())
    );
    assert_eq!(
        code(s.call("GET", "/v1/events", Some(k), None)),
        (405, "route.method_not_allowed".into())
    );
    assert_eq!(
        code(s.call("GET", "/v1/principals", Some(k), None)),
        (403, "access.forbidden".into())
    );
    assert_eq!(
        code(s.call(
            "POST",
            "/v1/memories/links",
            Some(k),
            Some("{\"from\": \"m-a\", \"to\": \"m-b\"}")
        ))
        .0,
        422
    );

    let after = s.get("/v1/stats", &s.keys.admin).1;
    assert_eq!(before, after);
    assert_eq!(s.get("/v1/events/e9", k).0, 404);
    let (status, list) = s.get("/v1/principals", &s.keys.admin);
    assert_eq!(status, 200);
    assert_eq!(list["principals"].as_array().unwrap().len(), 3, "acme's principals only");

    // A principal added while the server runs can use its key at once; a removed one cannot.
    let late = crate::server::add_principal(&s.data(), "dave", "acme", &["writer"]);
    assert_eq!(s.get("/v1/stats", &late).0, 200);
    let removed = std::process::Command::new(env!("CARGO_BIN_EXE_ctxgraph"))
        .args(["principal", "remove", "dave", "--data"])
        .arg(s.data())
        .status()
        .unwrap();
    assert!(removed.success());
    assert_eq!(
        code(s.call("GET", "/v1/stats", Some(&late), None)),
        (401, "access.unknown_key".into())
    );
    assert!(!list.to_string().contains("cgk_"), "keys never leave the registry");
}

#[test]
fn health_metrics_openapi_and_graceful_shutdown() {
    let mut s = Server::start();
    assert_eq!(s.call("GET", "/healthz", None, None).0, 200);
    assert_eq!(s.call("GET", "/readyz", None, None).0, 200);
    let k = s.keys.writer.clone();
    ingest(&s, &k, vec![event("e1", "s1", 0, json!({})), event("e2", "s1", 1, json!({}))]);
    s.post("/v1/recall", &k, &json!({"question": "orders"}));
    // The metrics name every tenant: only the metrics role reads them.
    assert_eq!(s.call("GET", "/metrics", None, None).0, 401);
    assert_eq!(s.call("GET", "/metrics", Some(&s.keys.admin), None).0, 403);
    let scraper = crate::server::add_principal(&s.data(), "scraper", "ops", &["metrics"]);
    let (status, text) = s.call("GET", "/metrics", Some(&scraper), None);
    assert_eq!(status, 200, "{text}");
    let text = text.as_str().unwrap().to_owned();
    assert!(
        text.contains("ctxgraph_records_ingested_total{status=\"accepted\",tenant=\"acme\"} 2"),
        "{text}"
    );
    assert!(text.contains("ctxgraph_projection_lag_records{tenant=\"acme\"} 0"), "{text}");
    assert!(text.contains("ctxgraph_recall_seconds_count 1"), "{text}");
    assert!(
        text.contains("ctxgraph_http_requests_total{route=\"/v1/events\",status=\"200\"} 1"),
        "{text}"
    );

    let (status, doc) = s.call("GET", "/openapi.json", None, None);
    assert_eq!(status, 200);
    let golden: Value = serde_json::from_str(include_str!("../../../server/openapi.json")).unwrap();
    assert_eq!(doc, golden, "the served document is the golden file");

    // SIGTERM: the server exits cleanly; what it acknowledged is there after a restart.
    assert!(s.terminate(), "exit status after SIGTERM");
    s.restart();
    assert_eq!(s.get("/v1/events/e2", &k).0, 200);
}

#[test]
fn recalled_events_count_their_reads_after_the_next_write_and_at_shutdown() {
    let mut s = Server::start();
    let k = s.keys.writer.clone();
    ingest(&s, &k, vec![event("e1", "s1", 0, json!({})), event("e2", "s1", 1, json!({}))]);
    let (status, pack) = s.post("/v1/recall", &k, &json!({"question": "orders database timeout"}));
    assert_eq!(status, 200, "{pack}");
    let returned: Vec<String> = pack["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["node"]["label"] == "Event")
        .map(|i| i["node"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(!returned.is_empty(), "{pack}");
    let count = |s: &Server, id: &str| {
        let (status, node) = s.get(&format!("/v1/events/{id}"), &k);
        assert_eq!(status, 200, "{node}");
        node["properties"]["access_count"].as_i64()
    };
    // Noted in memory only: a read writes nothing.
    assert_eq!(count(&s, &returned[0]), None);
    // The writer flushes the pending reads after the next write's answer (not before it: no
    // ingest waits for them), so they are read once the writer got to them.
    ingest(&s, &k, vec![event("e3", "s2", 2, json!({}))]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count(&s, &returned[0]).is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for id in &returned {
        assert_eq!(count(&s, id), Some(1), "{id}");
    }
    // Reads noted since are written when the server shuts down.
    s.post("/v1/recall", &k, &json!({"question": "orders database timeout"}));
    assert!(s.terminate(), "exit status after SIGTERM");
    s.restart();
    assert_eq!(count(&s, &returned[0]), Some(2));
}

/// Percent-encode a path segment.
fn encode(segment: &str) -> String {
    segment
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn a_body_with_a_repeated_key_or_an_integer_beyond_64_bits_is_refused_at_its_path() {
    let s = Server::start();
    let k = &s.keys.writer;
    let mut e = event("e1", "s1", 0, json!({}));
    e.as_object_mut().unwrap().remove("payload");
    // A record's text with this payload written first, verbatim.
    let with_payload = |payload: &str| {
        let text = e.to_string();
        format!("{{\"events\": [{{\"payload\": {payload}, {}]}}", &text[1..])
    };
    let refused = |payload: &str| {
        let (status, body) = s.call("POST", "/v1/events", Some(k), Some(&with_payload(payload)));
        let code = body["error"]["code"].as_str().unwrap_or("").to_owned();
        (status, code, body["error"]["violations"][0]["path"].clone())
    };
    // The same key twice: the parser would keep the last silently.
    assert_eq!(
        refused(r#"{"n": 1, "n": 2}"#),
        (422, "json.duplicate_key".to_owned(), json!("$.events[0].payload.n"))
    );
    // An integer beyond u64: the parser would turn it into a float.
    assert_eq!(
        refused(r#"{"n": 18446744073709551616}"#),
        (422, "json.integer_range".to_owned(), json!("$.events[0].payload.n"))
    );
    assert_eq!(s.get("/v1/events/e1", k).0, 404, "nothing was written");
    // The same record without either is accepted.
    let (status, body) = s.call("POST", "/v1/events", Some(k), Some(&with_payload(r#"{"n": 1}"#)));
    assert_eq!(status, 200, "{body}");
}

/// `serve` on a data directory whose tenant store is of an older format upgrades it before it
/// listens, says so on stderr, and serves it; the next start finds nothing to upgrade.
#[test]
fn serve_upgrades_an_older_tenant_store_before_listening_and_says_so() {
    use std::io::Read;
    use std::process::Stdio;
    let dir = tempfile::TempDir::new().unwrap();
    let data = dir.path().join("data");
    let key = crate::server::add_principal(&data, "alice", "acme", &["writer"]);
    let fixture = crate::workspace_root().join("crates/engine/tests/fixtures/format-v1.ctxg");
    std::fs::create_dir_all(data.join("tenants")).unwrap();
    std::fs::copy(fixture, data.join("tenants/acme.ctxg")).unwrap();
    let start = || {
        let (mut child, base) = crate::server::spawn_serve(&[], &data, &[], Stdio::piped());
        let agent: ureq::Agent =
            ureq::Agent::config_builder().http_status_as_error(false).build().into();
        let mut resp = agent
            .get(format!("{base}/v1/events/evt-000007"))
            .header("Authorization", format!("Bearer {key}"))
            .call()
            .unwrap();
        let status = resp.status().as_u16();
        let body: Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
        let mut said = String::new();
        child.stderr.take().unwrap().read_to_string(&mut said).unwrap();
        (status, body, said)
    };
    let (status, body, said) = start();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["properties"]["tool_name"], json!("read_file"), "{body}");
    let current = ctxgraph::FORMAT_VERSION;
    assert!(said.contains("acme.ctxg from store format 1 to"), "{said}");
    assert!(said.contains(&format!("to {current}")), "{said}");
    let (status, _, said) = start();
    assert_eq!(status, 200);
    assert!(!said.contains("upgrading"), "{said}");
}
