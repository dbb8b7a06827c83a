//! Everything ctxgraph knows is retrievable: facts, document sentences, slot values and decision
//! receipts are found by `search`, by nearest-vector search and by `recall` right after they are
//! written, after `reproject` (with stage 2, as the CLI runs it) and after `consolidate`, with
//! provenance, and a receipt only when the receipt listing shows it.

use ctxgraph::{
    DocumentFormat, DocumentInput, Engine, EntityArg, EntityInput, FactInput, IngestOutcome,
    NodeKey, ObjectInput, Principal, RecallQuery, ReceiptQuery,
};
use serde_json::json;

use crate::engine;

const FACT: &str = "service:neurodock|depends_on|service:redis";
const RECEIPT: &str = "r-neuro";

/// One event (`e1`, cited by the receipt; pending PII review when `pending`), then a fact, a
/// document, a slot value and a receipt about Neurodock, each through its engine write call.
fn written(pending: bool) -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    let mut ev = json!({"event_id": "e1", "event_type": "tool.execute",
        "occurred_at": "2026-05-01T08:00:00Z", "session_id": "s1", "agent_id": "planner",
        "trace_id": "t1", "tool_name": "deploy", "payload": {"message": "rolled out a build"}});
    if pending {
        ev["pii"] = json!({"pending_review": true});
    }
    let report = e.ingest_jsonl(format!("{ev}\n").as_bytes(), &Default::default(), &mut |_| {});
    assert_eq!(report.unwrap().accepted, 1);
    e.enrich(&mut |_, _| {}).unwrap();

    let mut fact = FactInput::new(
        EntityInput::typed("Neurodock", "service"),
        "depends_on",
        ObjectInput::Entity(EntityInput::typed("Redis", "service")),
    );
    fact.confidence = Some(0.7);
    fact.source = Some("architecture review".into());
    fact.asserted_at = Some("2026-05-01T09:00:00Z".into());
    assert!(matches!(e.record_fact(&fact).unwrap().outcome, IngestOutcome::New(_)));

    let doc = DocumentInput {
        url: "https://wiki.example/neurodock".into(),
        text: "Neurodock talks to an alien mothership.\n\nIt keeps its queue in Redis.".into(),
        format: DocumentFormat::Text,
        title: Some("Neurodock notes".into()),
        extract: false,
        ingested_at: Some("2026-05-01T09:30:00Z".into()),
    };
    assert!(matches!(e.add_document(&doc).unwrap().outcome, IngestOutcome::New(_)));

    let holder = EntityArg::Id("service:neurodock".into());
    let slot = e.set_slot(&holder, "deploy_region", "eu-west-1", Some(0.9), Some("inventory"));
    assert!(matches!(slot.unwrap(), IngestOutcome::New(_)));

    let receipt = json!({"record_type": "receipt", "receipt_id": RECEIPT,
        "task": "expand_neurodock_capacity", "actor": "user/ops1",
        "referenced_inputs": {"events": ["e1"], "entities": ["service:neurodock"]},
        "policies_checked": [{"id": "policy/budget", "result": "allow"}],
        "action": "approve_quarantine_waiver",
        "outcome": {"status": "success", "notes": "throughput doubled"},
        "timestamps": {"requested": "2026-05-01T10:00:00Z", "committed": "2026-05-01T10:05:00Z"}});
    let valid = e.validate(&receipt.to_string()).unwrap();
    assert!(matches!(e.add_receipts(&[valid]).unwrap()[0], Ok(IngestOutcome::New(_))));
    (dir, e)
}

/// The node each question finds, by label.
const QUESTIONS: [(&str, &str); 4] = [
    ("alien mothership", "Sentence"),
    ("neurodock depends on redis", "Fact"),
    ("deploy region eu-west-1", "SlotValue"),
    ("quarantine waiver", "DecisionReceipt"),
];

/// Per question: the full-text hits and the nearest nodes, as keys.
fn found(e: &Engine) -> Vec<(Vec<NodeKey>, Vec<NodeKey>)> {
    QUESTIONS
        .iter()
        .map(|(q, _)| {
            let hits = e.owner_reader().unwrap().search(q, 10).unwrap();
            let text = hits.into_iter().map(|(n, _)| n.key).collect();
            let near = e
                .similar(&ctxgraph::Principal::local(), q, 10)
                .unwrap()
                .into_iter()
                .map(|(n, _)| n.key)
                .collect();
            (text, near)
        })
        .collect()
}

fn recalled(e: &Engine, question: &str) -> Vec<NodeKey> {
    let mut q = RecallQuery::new(question);
    q.k = 20;
    e.recall(&q).unwrap().items.into_iter().map(|i| i.node.key).collect()
}

fn assert_found(e: &Engine, when: &str) -> Vec<(Vec<NodeKey>, Vec<NodeKey>)> {
    let all = found(e);
    for ((question, label), (text, near)) in QUESTIONS.iter().zip(&all) {
        let first = text.first().map(|k| k.label.as_str());
        assert_eq!(first, Some(*label), "{when}: search `{question}` found {text:?}");
        assert!(near.iter().any(|k| k.label == *label), "{when}: nearest `{question}`: {near:?}");
        let items = recalled(e, question);
        assert!(items.iter().any(|k| k.label == *label), "{when}: recall `{question}`: {items:?}");
    }
    assert_eq!(all[1].0[0], NodeKey::new("Fact", FACT));
    assert_eq!(all[3].0[0], NodeKey::new("DecisionReceipt", RECEIPT));
    all
}

#[test]
fn knowledge_is_found_on_write_after_reprojection_and_after_consolidation() {
    let (_d, mut e) = written(false);
    let on_write = assert_found(&e, "on write");

    // Recall about the entity returns its fact, with the claim's provenance.
    let mut q = RecallQuery::new("what do we know about neurodock");
    q.k = 20;
    let pack = e.recall(&q).unwrap();
    let fact = pack.items.iter().find(|i| i.node.key.label == "Fact");
    let fact = fact.unwrap_or_else(|| panic!("no fact in {:?}", pack.items));
    let claim = e.owner_reader().unwrap().log(1, 100).unwrap();
    let claim = claim.iter().find(|r| r.kind == ctxgraph::RecordKind::Fact).unwrap();
    assert_eq!(fact.provenance.log_position, Some(claim.position));
    assert_eq!(fact.provenance.recorded_at.as_deref(), Some(claim.recorded_at.as_str()));
    assert_eq!(fact.provenance.source.as_deref(), Some("architecture review"));
    for item in pack.items.iter().filter(|i| i.node.key.label == "Sentence") {
        assert_eq!(item.provenance.source.as_deref(), Some("https://wiki.example/neurodock"));
    }

    // Stage 2 reaching the same records changes nothing.
    e.enrich(&mut |_, _| {}).unwrap();
    assert_eq!(found(&e), on_write);

    // Reprojection drops every index entry; stage 2 (which the CLI runs after it) restores them.
    e.reproject(&mut |_, _| {}).unwrap();
    let report = e.enrich(&mut |_, _| {}).unwrap();
    // The fact, both sentences, the slot value and the receipt.
    assert_eq!(report.nodes, 5);
    assert_eq!(assert_found(&e, "after reproject"), on_write);

    e.consolidate().unwrap();
    // Consolidation adds summaries to the hits; the knowledge found stays the same.
    let knowledge = |all: &[(Vec<NodeKey>, Vec<NodeKey>)]| -> Vec<Vec<NodeKey>> {
        let labels = QUESTIONS.map(|(_, l)| l);
        all.iter()
            .map(|(t, _)| {
                t.iter().filter(|k| labels.contains(&k.label.as_str())).cloned().collect()
            })
            .collect()
    };
    let consolidated = assert_found(&e, "after consolidate");
    assert_eq!(knowledge(&consolidated), knowledge(&on_write));
}

#[test]
fn consolidate_indexes_knowledge_that_has_no_vector_yet() {
    let (_d, mut e) = written(false);
    // A reprojection without stage 2 leaves every node without an index entry.
    e.reproject(&mut |_, _| {}).unwrap();
    assert!(e.owner_reader().unwrap().search("alien mothership", 5).unwrap().is_empty());
    e.consolidate().unwrap();
    let snap = e.owner_reader().unwrap();
    let key = NodeKey::new("Fact", FACT);
    assert!(snap.vector(&key).unwrap().is_some());
    let hits = snap.search("neurodock depends on redis", 5).unwrap();
    assert_eq!(hits.first().map(|(n, _)| &n.key), Some(&key));
}

#[test]
fn a_receipt_citing_a_hidden_event_is_hidden_from_search_and_recall_as_from_the_listing() {
    let (_d, e) = written(true);
    let vector = e.embedder().unwrap().embed(&["quarantine waiver"]).unwrap().remove(0);
    let key = NodeKey::new("DecisionReceipt", RECEIPT);
    for (roles, visible) in [(vec![], false), (vec!["pii_reviewer".to_owned()], true)] {
        let who = Principal::new("p1", "default", roles).unwrap();
        let scoped = e.reader(&who).unwrap();
        let listed = scoped.receipts(&ReceiptQuery::default()).unwrap();
        assert_eq!(!listed.is_empty(), visible);
        let searched = scoped.search("quarantine waiver", 10).unwrap();
        assert_eq!(searched.iter().any(|(n, _)| n.key == key), visible, "{searched:?}");
        let mut q = RecallQuery::new("quarantine waiver");
        q.k = 20;
        let pack = scoped.recall(&q, &vector, e.options().search).unwrap();
        assert_eq!(pack.items.iter().any(|i| i.node.key == key), visible);
        // The fact and the sentences carry no scope: everyone finds them.
        let facts = scoped.search("neurodock depends on redis", 10).unwrap();
        assert!(facts.iter().any(|(n, _)| n.key.label == "Fact"));
    }
}

#[test]
fn forgetting_an_entity_takes_its_name_out_of_a_slot_value_another_entity_holds() {
    let (_d, mut e) = written(false);
    let other = EntityArg::Named { name: "Zorbcache".into(), entity_type: "service".into() };
    e.set_slot(&other, "deploy_region", "EU-West-1", None, None).unwrap();
    e.consolidate().unwrap();
    let value = NodeKey::new("SlotValue", "deploy_region|eu-west-1");
    let hits = |e: &Engine, q: &str| -> Vec<NodeKey> {
        e.owner_reader().unwrap().search(q, 10).unwrap().into_iter().map(|(n, _)| n.key).collect()
    };
    assert!(hits(&e, "zorbcache region").contains(&value));
    let target = ctxgraph::ForgetTarget {
        kind: ctxgraph::ForgetKind::Entity,
        id: "service:zorbcache".into(),
    };
    e.forget(&target, "ops", None).unwrap();
    assert!(hits(&e, "zorbcache").is_empty(), "{:?}", hits(&e, "zorbcache"));
    // Neurodock still holds the value, and it is still found.
    assert!(hits(&e, "neurodock deploy region").contains(&value));
}
