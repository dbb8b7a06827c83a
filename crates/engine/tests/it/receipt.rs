//! Decision receipts (seed 004): the node and its typed edges, write-time refusals, the query by
//! task, actor, time window and policy result, receipts as provenance anchors in recall, and
//! reprojection.

use ctxgraph::{
    Direction, Engine, ForgetKind, ForgetTarget, IngestOutcome, NodeKey, RecallQuery, ReceiptQuery,
};
use serde_json::{Value, json};

use crate::{dump, engine, trace};

fn add(engine: &mut Engine, v: &Value) -> Result<IngestOutcome, ctxgraph::Error> {
    let r = engine.validate(&v.to_string()).map_err(ctxgraph::Error::Validation)?;
    engine.add_receipts(&[r]).unwrap().pop().unwrap()
}

fn receipt(id: &str, task: &str, actor: &str, committed: &str, budget: &str) -> Value {
    json!({"record_type": "receipt", "receipt_id": id, "task": task, "actor": actor,
        "approvals": ["user/reviewer_a", "check/ci_suite@v2"],
        "referenced_inputs": {"events": ["evt-000001"], "entities": ["agent:coding-agent"],
            "configs": ["config/wavecore/v1.2"]},
        "policies_checked": [{"id": "policy/pii_cleared", "result": "allow"},
            {"id": "policy/budget", "result": budget}],
        "exceptions": [{"id": "waiver/temp_net_degradation", "justification": "lab wifi outage"}],
        "action": "promote_candidate",
        "outcome": {"status": "success", "notes": "latency stable",
            "follow_ups": ["validate on-device drift"]},
        "timestamps": {"requested": "2025-01-05T12:00:00Z", "committed": committed}})
}

fn setup() -> (tempfile::TempDir, Engine) {
    let (dir, mut engine) = engine();
    let report =
        engine.ingest_jsonl(trace(80).as_bytes(), &Default::default(), &mut |_| {}).unwrap();
    assert!(report.rejections.is_empty());
    engine.enrich(&mut |_, _| {}).unwrap();
    for (id, task, actor, at, budget) in [
        ("r1", "deploy_pi5_wavecore_loop", "user/ops1", "2025-01-05T12:07:00Z", "allow"),
        ("r2", "deploy_pi5_wavecore_loop", "user/ops2", "2025-01-06T09:00:00Z", "deny"),
        ("r3", "rotate_keys", "user/ops1", "2025-01-07T09:00:00Z", "allow"),
    ] {
        assert!(matches!(
            add(&mut engine, &receipt(id, task, actor, at, budget)),
            Ok(IngestOutcome::New(_))
        ));
    }
    engine.consolidate().unwrap();
    (dir, engine)
}

fn ids(engine: &Engine, q: ReceiptQuery) -> Vec<String> {
    engine
        .owner_reader()
        .unwrap()
        .receipts(&q)
        .unwrap()
        .into_iter()
        .map(|r| r.record.receipt_id)
        .collect()
}

#[test]
fn a_receipt_becomes_its_node_and_typed_edges() {
    let (_dir, engine) = setup();
    let snap = engine.owner_reader().unwrap();
    let key = NodeKey::new("DecisionReceipt", "r2");
    let node = snap.node(&key).unwrap().unwrap();
    assert_eq!(node.props["status"], json!("success"));
    let edges = snap.edges(&key, None, Direction::Out).unwrap();
    let mut got: Vec<(String, String, Value)> = edges
        .iter()
        .map(|e| {
            let prop = e.props.values().next().cloned().unwrap_or(Value::Null);
            (e.key.edge_type.clone(), e.key.to.to_string(), prop)
        })
        .collect();
    got.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    let want = [
        ("ACTED_BY", "Actor:user/ops2", Value::Null),
        ("APPROVED_BY", "Actor:check/ci_suite@v2", Value::Null),
        ("APPROVED_BY", "Actor:user/reviewer_a", Value::Null),
        ("CHECKED_POLICY", "Policy:policy/budget", json!("deny")),
        ("CHECKED_POLICY", "Policy:policy/pii_cleared", json!("allow")),
        ("FOR_TASK", "Task:deploy_pi5_wavecore_loop", Value::Null),
        (
            "INVOKED_EXCEPTION",
            "PolicyException:waiver/temp_net_degradation",
            json!("lab wifi outage"),
        ),
        ("USED_INPUT", "Entity:agent:coding-agent", Value::Null),
        ("USED_INPUT", "Event:evt-000001", Value::Null),
    ];
    let want: Vec<(String, String, Value)> =
        want.into_iter().map(|(a, b, c)| (a.to_owned(), b.to_owned(), c)).collect();
    assert_eq!(got, want);
}

#[test]
fn receipts_are_queried_by_task_actor_time_and_permission_newest_first() {
    let (_dir, engine) = setup();
    assert_eq!(ids(&engine, ReceiptQuery::default()), ["r3", "r2", "r1"]);
    let task = |t: &str| ReceiptQuery { task: Some(t.into()), ..ReceiptQuery::default() };
    assert_eq!(ids(&engine, task("deploy_pi5_wavecore_loop")), ["r2", "r1"]);
    let actor = ReceiptQuery { actor: Some("user/ops1".into()), ..ReceiptQuery::default() };
    assert_eq!(ids(&engine, actor), ["r3", "r1"]);
    let window = ReceiptQuery {
        since: Some("2025-01-06T00:00:00Z".into()),
        until: Some("2025-01-06T23:59:59Z".into()),
        ..ReceiptQuery::default()
    };
    assert_eq!(ids(&engine, window), ["r2"]);
    let denied = ReceiptQuery {
        policy: Some(("policy/budget".into(), Some("deny".into()))),
        ..ReceiptQuery::default()
    };
    assert_eq!(ids(&engine, denied), ["r2"]);
    let checked = ReceiptQuery {
        policy: Some(("policy/budget".into(), None)),
        limit: 2,
        ..ReceiptQuery::default()
    };
    assert_eq!(ids(&engine, checked), ["r3", "r2"]);
    let both = ReceiptQuery {
        task: Some("deploy_pi5_wavecore_loop".into()),
        actor: Some("user/ops1".into()),
        ..ReceiptQuery::default()
    };
    assert_eq!(ids(&engine, both), ["r1"]);
}

#[test]
fn a_receipt_citing_missing_evidence_is_refused_and_changes_nothing() {
    let (_dir, mut engine) = setup();
    let before = dump(&engine);
    let mut bad = receipt("r9", "t", "a", "2025-01-05T12:07:00Z", "allow");
    bad["referenced_inputs"]["events"] = json!(["no-such-event"]);
    bad["referenced_inputs"]["entities"] = json!(["service:no such service"]);
    let err = add(&mut engine, &bad).unwrap_err();
    assert_eq!(err.code(), "receipt.unknown_input");
    assert!(
        err.to_string().contains("no-such-event") && err.to_string().contains("no such service")
    );
    assert_eq!(dump(&engine), before);
}

#[test]
fn a_why_question_about_the_action_returns_the_receipt_with_its_inputs() {
    let (_dir, engine) = setup();
    let pack = engine
        .recall(&RecallQuery { k: 12, ..RecallQuery::new("why did we promote the candidate") })
        .unwrap();
    let keys: Vec<String> = pack.items.iter().map(|i| i.node.key.to_string()).collect();
    let receipt = keys.iter().position(|k| k.starts_with("DecisionReceipt:")).expect("a receipt");
    for input in ["Event:evt-000001", "Entity:agent:coding-agent", "Policy:policy/budget"] {
        let at =
            keys.iter().position(|k| k == input).unwrap_or_else(|| panic!("{input} in {keys:?}"));
        assert!(at > receipt, "{input} is reached from the receipt");
        let item = &pack.items[at];
        assert!(
            item.path
                .iter()
                .any(|s| s.edge_type == "USED_INPUT" || s.edge_type == "CHECKED_POLICY")
        );
    }
}

#[test]
fn receipts_survive_reprojection_and_their_evidence_can_be_forgotten() {
    let (_dir, mut engine) = setup();
    let before = dump(&engine);
    engine.reproject(&mut |_, _| {}).unwrap();
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    assert_eq!(dump(&engine), before);
    let snap = engine.owner_reader().unwrap();
    assert!(snap.vector(&NodeKey::new("DecisionReceipt", "r1")).unwrap().is_some());
    assert!(!snap.search("promote candidate", 5).unwrap().is_empty());
    drop(snap);
    // Forgetting a cited event leaves the receipt waiting for it, as a fold without it would.
    let target = ForgetTarget { kind: ForgetKind::Event, id: "evt-000001".into() };
    engine.forget(&target, "local", None).unwrap();
    engine.consolidate().unwrap();
    let forgotten = dump(&engine);
    engine.reproject(&mut |_, _| {}).unwrap();
    engine.enrich(&mut |_, _| {}).unwrap();
    engine.consolidate().unwrap();
    assert_eq!(dump(&engine), forgotten);
    assert_eq!(ids(&engine, ReceiptQuery::default()), ["r3", "r2", "r1"]);
}
