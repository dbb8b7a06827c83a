//! `forget entity` on a scale-out store: the records about the entity become tombstones, those
//! naming it among other things are rewritten, the entity leaves the graph with what stages 2
//! and 3 made of it, and the same forget on a store file gives the same report and reads; the
//! entity's name is in no key on the server nor, after the rewrite, in the append-only file.

use serde_json::{Value, json};
use tempfile::TempDir;

use super::forget::{admin, key_holding, on_disk, report};
use super::stage2::without_access_times;
use super::{ctxgraph, fresh_store, json_of, normalised};

/// Two sessions of a planner agent. The tool `secret` runs in `t1` and `t3` (the entity is
/// their tool: their indexed text changes when it goes); `t2` names it among other entities
/// (rewritten without it); `t4` never names it. The concept `concept` is named among other
/// entities by `t2` and `t4` (their indexed text stays), and is the source of an explicit
/// edge. No payload text spells either.
fn trace(secret: &str, concept: &str) -> String {
    let event = |id: &str, session: &str, at: &str, tool: &str, text: &str| {
        json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
               "session_id": session, "agent_id": "planner", "trace_id": session,
               "tool_name": tool, "status": "completed", "payload": {"text": text}})
    };
    let mut t2 = event("t2", "s1", "2026-11-20T09:00:01Z", "sql_query", "compared the ledgers");
    t2["entities"] = json!([
        {"name": secret, "entity_type": "tool"},
        {"name": "ledger", "entity_type": "concept"},
        {"name": concept, "entity_type": "concept"}
    ]);
    let mut t3 = event("t3", "s2", "2026-11-20T10:00:00Z", secret, "fetched the quarterly totals");
    t3["parent_event_id"] = json!("t2");
    let mut t4 = event("t4", "s2", "2026-11-20T10:00:01Z", "sql_query", "summed the totals");
    t4["entities"] = json!([{"name": concept, "entity_type": "concept"}]);
    // An explicit edge from the concept (a record about it: tombstoned).
    let edge = json!({"record_type": "edge", "edge_id": "rel-1", "edge_type": "RELATED_TO",
        "from": {"label": "Entity", "id": format!("concept:{concept}")},
        "to": {"label": "Entity", "id": "concept:ledger"},
        "properties": {"confidence": 0.6, "justification": "kept together"}});
    [event("t1", "s1", "2026-11-20T09:00:00Z", secret, "fetched the ledger"), t2, t3, t4, edge]
        .iter()
        .map(|v| format!("{v}\n"))
        .collect()
}

fn ok(dir: &TempDir, db: &str, args: &[&str]) {
    let (code, err) = ctxgraph(dir, db, args);
    assert_eq!(code, 0, "{args:?}: {err}");
}

/// Stages 2 and 3 on a scale-out store, as its workers run them.
fn enrich_and_consolidate(dir: &TempDir, to: &str) {
    for args in [
        &["worker", "--once"][..],
        &["worker", "--stage", "enrich", "--once"],
        &["worker", "--stage", "consolidate", "--once"],
    ] {
        ok(dir, to, args);
    }
}

/// The reads compared between the store file and the scale-out store.
const READS: &[&[&str]] = &[
    &["get", "t1"],
    &["get", "t2"],
    &["get", "t3"],
    &["get", "t4"],
    &["session", "s1"],
    &["session", "s2"],
    &["neighbors", "t2"],
    &["neighbors", "t3"],
    &["get", "concept:ledger"],
    &["neighbors", "concept:ledger"],
    &["fact", "list", "--all"],
    &["receipt", "list"],
    &["entities", "candidates", "--status", "all"],
    &["search", "ledger"],
    &["search", "totals"],
    &["recall", "what did the planner fetch from the ledger"],
];

fn same_reads(dir: &TempDir, to: &str, secret: &str) {
    for args in READS {
        let want = without_access_times(normalised(dir, "plain.ctxg", args));
        let got = without_access_times(normalised(dir, to, args));
        assert_eq!(got, want, "{args:?}");
        let mut found = got.1;
        if let Some(map) = found.as_object_mut() {
            map.remove("query");
        }
        assert!(!found.to_string().contains(secret), "{args:?}: {found}");
        // A recall counts its reads (an access record): folded here as the store file folds it.
        ok(dir, to, &["worker", "--once"]);
    }
    let (want, got) = (json_of(dir, "plain.ctxg", &["stats"]), json_of(dir, to, &["stats"]));
    for field in ["nodes", "edges", "pending_edges"] {
        assert_eq!(got[field], want[field], "{field}");
    }
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn forget_of_an_entity_rewrites_its_records_and_leaves_no_byte_of_its_name() {
    let _serial = super::one_forget_at_a_time();
    let dir = TempDir::new().unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let secret = format!("gadget{nanos}quark");
    let concept = format!("walrus{nanos}ember");
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, trace(&secret, &concept)).unwrap();
    let file = file.to_str().unwrap();
    let to = fresh_store();
    ok(&dir, "plain.ctxg", &["ingest", file]);
    assert_eq!(json_of(&dir, &to, &["ingest", file])["accepted"].as_u64(), Some(5));
    ok(&dir, &to, &["worker", "--once"]);
    // The concept in a fact and a person's decision (records about it: tombstoned, their ids
    // digested) and among a receipt's inputs (rewritten without it).
    let concept_id = format!("concept:{concept}");
    let receipt = dir.path().join("receipt.json");
    let body = json!([{"id": "r1", "task": "reconcile", "actor": "user/ops1",
        "referenced_inputs": {"events": ["t2"], "entities": [&concept_id, "concept:ledger"]},
        "policies_checked": [{"id": "policy/review", "result": "allow"}],
        "action": "reconcile", "outcome": {"status": "success"},
        "timestamps": {"committed": "2026-11-20T11:00:00Z"}}]);
    std::fs::write(&receipt, body.to_string()).unwrap();
    for db in ["plain.ctxg", to.as_str()] {
        ok(&dir, db, &["fact", "add", &concept, "depends_on", "ledger"]);
        ok(&dir, db, &["entities", "reject", &concept_id, "concept:ledger", "--reason", "two"]);
        ok(&dir, db, &["receipt", "add", receipt.to_str().unwrap()]);
    }
    ok(&dir, "plain.ctxg", &["consolidate"]);
    enrich_and_consolidate(&dir, &to);
    let mut conn = admin(&to);
    for name in [&secret, &concept] {
        assert!(key_holding(&mut conn, name).is_some(), "the probe finds {name} first");
    }
    let entity = format!("tool:{secret}");
    assert_eq!(normalised(&dir, &to, &["get", &entity]).0, 0);

    // The concept first: two events and the receipt rewritten without it, the fact, the
    // decision and the edge tombstoned; the events' indexed text is unchanged, so stages 2 and 3 stand and
    // the reads equal the store file's at once.
    let enriched = json_of(&dir, &to, &["stats"])["enriched_through"].clone();
    let want = report(&dir, "plain.ctxg", "entity", &concept_id);
    assert_eq!(report(&dir, &to, "entity", &concept_id), want);
    assert_eq!(want["redacted"], json!(6), "{want}");
    assert_eq!(json_of(&dir, &to, &["stats"])["enriched_through"], enriched);
    assert_eq!(key_holding(&mut conn, &concept), None, "the concept is still in a key");
    same_reads(&dir, &to, &concept);
    assert_eq!(normalised(&dir, &to, &["get", &concept_id]).0, 1);

    // The tool: the same report (three events rewritten).
    let want = report(&dir, "plain.ctxg", "entity", &entity);
    let got = report(&dir, &to, "entity", &entity);
    assert_eq!(got, want);
    assert_eq!(got["redacted"], json!(3), "{got}");

    // The name is in no key, nor in the append-only file once rewritten.
    assert_eq!(key_holding(&mut conn, &secret), None, "the name is still in a key");
    let mut tries = 0;
    while on_disk(&mut conn, &secret) {
        tries += 1;
        assert!(tries < 500, "the name is still in the append-only file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    // The tool's rewrites changed indexed text: stages 2 and 3 started over, and the workers
    // rebuild them from the rewritten log; the store file consolidates again the same way.
    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(stats["projection_lag"].as_u64(), Some(0), "{stats}");
    assert_eq!(stats["enriched_through"].as_u64(), Some(0), "{stats}");
    enrich_and_consolidate(&dir, &to);
    ok(&dir, "plain.ctxg", &["consolidate"]);
    same_reads(&dir, &to, &secret);
    // Before any read that names the entity: the server keeps recent queries with their
    // parameters (the graph's telemetry), and a `get` of it would put the name there.
    assert_eq!(key_holding(&mut conn, &secret), None, "the workers wrote the name back");
    for db in ["plain.ctxg", to.as_str()] {
        assert_eq!(normalised(&dir, db, &["get", &entity]).0, 1, "{db}");
        let log = json_of(&dir, db, &["log", "--limit", "100"]);
        let text = serde_json::to_string(&log).unwrap();
        assert!(!text.contains(&secret), "{db}: {text}");
        let tools: Vec<Value> =
            log.as_array().unwrap().iter().map(|e| e["record"]["tool_name"].clone()).collect();
        assert_eq!(tools[..4], [Value::Null, json!("sql_query"), Value::Null, json!("sql_query")]);
    }

    // Forgotten already: unknown on both, nothing redacted.
    for db in ["plain.ctxg", to.as_str()] {
        let (code, err) = ctxgraph(&dir, db, &["forget", "entity", &entity, "--yes"]);
        assert_eq!(code, 2, "{db}: {err}");
        assert!(err.contains("forget.unknown_target"), "{db}: {err}");
    }
    // The audit: the same targets, positions and counts (the times and ids differ).
    let audit = |db: &str| -> Vec<Value> {
        let mut list = json_of(&dir, db, &["forgotten"]);
        for entry in list.as_array_mut().unwrap() {
            let map = entry.as_object_mut().unwrap();
            assert!(map.remove("at").is_some() && map.remove("forget_id").is_some(), "{map:?}");
        }
        list.as_array().unwrap().clone()
    };
    let want = audit("plain.ctxg");
    assert_eq!(want.len(), 2, "{want:?}");
    assert_eq!(audit(&to), want);
}
