//! Entity resolution tiers 2 and 3: SAME_AS candidates, RELATED_TO families, and the human
//! decisions that settle a pair and survive reprojection.

use ctxgraph::{
    CandidateStatus, Direction, Engine, EntityDecision, IngestOptions, IngestOutcome, NodeKey,
    Projection, RecordKind, ResolveConfig,
};
use serde_json::{Value, json};

use super::{dump, engine};

/// One event per entity list, all in one session.
fn events(mentions: &[&[(&str, &str)]]) -> String {
    mentions
        .iter()
        .enumerate()
        .map(|(i, list)| {
            let entities: Vec<Value> =
                list.iter().map(|(name, ty)| json!({"name": name, "entity_type": ty})).collect();
            let e = json!({
                "event_id": format!("e{i}"), "event_type": "tool.execute",
                "occurred_at": format!("2026-11-20T09:00:{:02}Z", i % 60), "session_id": "s1",
                "agent_id": "planner", "trace_id": "t1", "entities": entities,
            });
            format!("{e}\n")
        })
        .collect()
}

fn ingest(e: &mut Engine, text: &str) -> ctxgraph::IngestReport {
    e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap()
}

/// A store whose entities include near-duplicates, a version family and look-alikes that differ.
fn seeded() -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    let report = ingest(
        &mut e,
        &events(&[
            &[("read_file", "tool"), ("write_file", "tool"), ("orders-db", "service")],
            &[("read-file", "tool"), ("order-db", "service"), ("GPT-4", "concept")],
            &[("ReadFile", "tool"), ("GPT-4o", "concept"), ("gpt-4-turbo", "concept")],
            &[("read-file", "resource"), ("search", "tool"), ("search", "service")],
        ]),
    );
    assert_eq!(report.accepted, 4);
    (dir, e)
}

fn pairs(e: &Engine, edge_type: &str) -> Vec<(String, String, Value)> {
    e.owner_reader()
        .unwrap()
        .edges_of_type(edge_type, None, 10_000)
        .unwrap()
        .into_iter()
        .map(|edge| {
            (edge.key.from.id, edge.key.to.id, Value::Object(edge.props.into_iter().collect()))
        })
        .collect()
}

fn has_pair(list: &[(String, String, Value)], a: &str, b: &str) -> bool {
    list.iter().any(|(x, y, _)| (x == a && y == b) || (x == b && y == a))
}

#[test]
fn near_duplicate_names_become_candidates_and_versions_a_family() {
    let (_dir, mut e) = seeded();
    let report = e.resolve_entities(&ResolveConfig::default()).unwrap();
    assert_eq!(report.entities, 13, "{report:?}");
    let same = pairs(&e, "SAME_AS");
    for (a, b) in [
        ("tool:read-file", "tool:read_file"),
        ("tool:read_file", "tool:readfile"),
        ("tool:read-file", "tool:readfile"),
        ("service:order-db", "service:orders-db"),
    ] {
        assert!(has_pair(&same, a, b), "no candidate {a} / {b} in {same:?}");
    }
    assert!(!has_pair(&same, "tool:read_file", "tool:write_file"), "{same:?}");
    assert_eq!(report.same_as as usize, same.len());
    // One edge per pair, from the id that sorts first, marked as inferred with its evidence.
    for (from, to, props) in &same {
        assert!(from < to, "{from} -> {to}");
        assert_eq!(props["inferred"], json!(true));
        let confidence = props["confidence"].as_f64().unwrap();
        assert!((0.9..=0.99).contains(&confidence), "{props}");
        assert!(props["justification"].as_str().unwrap().contains("name cosine"), "{props}");
    }
    let (_, _, props) =
        same.iter().find(|(a, b, _)| a == "tool:read-file" && b == "tool:read_file").unwrap();
    assert!(
        props["justification"]
            .as_str()
            .unwrap()
            .starts_with("same name ignoring case and punctuation"),
        "{props}"
    );

    let related = pairs(&e, "RELATED_TO");
    for (a, b) in [
        ("concept:gpt-4", "concept:gpt-4o"),
        ("concept:gpt-4", "concept:gpt-4-turbo"),
        ("concept:gpt-4-turbo", "concept:gpt-4o"),
    ] {
        assert!(has_pair(&related, a, b), "no RELATED_TO {a} / {b} in {related:?}");
        assert!(!has_pair(&same, a, b), "a version family is not SAME_AS: {a} / {b}");
    }
    let (_, _, props) =
        related.iter().find(|(a, b, _)| a == "concept:gpt-4" && b == "concept:gpt-4o").unwrap();
    assert!(props["justification"].as_str().unwrap().starts_with("same base `gpt`"), "{props}");
    assert_eq!(props["inferred"], json!(true));
}

#[test]
fn entities_of_different_types_are_never_candidates() {
    let (_dir, mut e) = seeded();
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    let snap = e.owner_reader().unwrap();
    for edge_type in ["SAME_AS", "RELATED_TO"] {
        for edge in snap.edges_of_type(edge_type, None, 10_000).unwrap() {
            let ty = |k: &NodeKey| k.id.split(':').next().unwrap().to_owned();
            assert_eq!(ty(&edge.key.from), ty(&edge.key.to), "{}", edge.key);
        }
    }
    let search = snap.edges(&NodeKey::new("Entity", "tool:search"), None, Direction::Both).unwrap();
    assert!(search.iter().all(|e| e.key.edge_type == "REFERENCES"), "{search:?}");
}

#[test]
fn candidates_per_entity_are_bounded() {
    let (_dir, mut e) = engine();
    // Eight spellings of one name: 28 pairs with the same skeleton.
    let names = [
        "read_file",
        "read-file",
        "read file",
        "readfile",
        "read.file",
        "read:file",
        "read/file",
        "read__file",
    ];
    let list: Vec<(&str, &str)> = names.iter().map(|n| (*n, "tool")).collect();
    ingest(&mut e, &events(&[&list]));
    let cfg = ResolveConfig { max_candidates_per_entity: 2, ..ResolveConfig::default() };
    let report = e.resolve_entities(&cfg).unwrap();
    assert!(report.over_limit > 0, "{report:?}");
    let snap = e.owner_reader().unwrap();
    for name in names {
        let key = NodeKey::new("Entity", ctxgraph::entity_id("tool", name));
        let n = snap.edges(&key, Some("SAME_AS"), Direction::Both).unwrap().len();
        assert!(n <= 2, "{name}: {n} candidates");
    }
    assert!(report.same_as >= 4, "{report:?}");
    assert_eq!(snap.entity_candidates(None, 100).unwrap().len() as u64, report.same_as);
}

#[test]
fn resolving_again_gives_the_same_edges() {
    let (_dir, mut e) = seeded();
    let first = e.resolve_entities(&ResolveConfig::default()).unwrap();
    let before = dump(&e);
    let second = e.resolve_entities(&ResolveConfig::default()).unwrap();
    assert_eq!(dump(&e), before);
    assert_eq!(second.removed, first.same_as + first.related_to);
    assert_eq!((second.same_as, second.related_to), (first.same_as, first.related_to));
}

#[test]
fn decisions_are_records_that_survive_reprojection_and_resolution() {
    let (_dir, mut e) = seeded();
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    let outcome = e
        .decide_entities(
            EntityDecision::Merge,
            "tool:read_file",
            "tool:read-file",
            Some("same tool"),
            Some("alice"),
        )
        .unwrap();
    let IngestOutcome::New(position) = outcome else { panic!("{outcome:?}") };
    let merged = |e: &Engine| {
        let list =
            e.owner_reader().unwrap().entity_candidates(Some(CandidateStatus::Merged), 10).unwrap();
        assert_eq!(list.len(), 1, "{list:?}");
        list.into_iter().next().unwrap()
    };
    let m = merged(&e);
    assert_eq!((m.a.id.as_str(), m.b.id.as_str()), ("tool:read-file", "tool:read_file"));
    assert_eq!((m.a.name.as_str(), m.a.entity_type.as_str()), ("read-file", "tool"));
    assert_eq!(m.confidence, 1.0);
    assert_eq!(m.justification, format!("merged by alice: same tool (log position {position})"));

    // The same decision again writes nothing.
    let again = e
        .decide_entities(
            EntityDecision::Merge,
            "tool:read-file",
            "tool:read_file",
            Some("same tool"),
            Some("alice"),
        )
        .unwrap();
    assert_eq!(again, IngestOutcome::Duplicate(position));

    e.resolve_entities(&ResolveConfig::default()).unwrap();
    assert_eq!(merged(&e).justification, m.justification, "resolution keeps decided edges");
    let candidates =
        e.owner_reader().unwrap().entity_candidates(Some(CandidateStatus::Candidate), 100).unwrap();
    assert!(
        candidates
            .iter()
            .all(|c| (c.a.id.as_str(), c.b.id.as_str()) != ("tool:read-file", "tool:read_file")),
        "{candidates:?}"
    );

    let resolved = dump(&e);
    e.reproject(&mut |_, _| {}).unwrap();
    assert_eq!(merged(&e).justification, m.justification, "reproject keeps the decision");
    assert!(pairs(&e, "SAME_AS").iter().all(|(_, _, p)| p.get("inferred").is_none()));
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    assert_eq!(dump(&e).edges, resolved.edges, "reproject + resolve == resolve");
}

#[test]
fn a_rejected_pair_is_not_proposed_again_and_the_last_decision_wins() {
    let (_dir, mut e) = seeded();
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    let status = |e: &Engine| {
        e.owner_reader()
            .unwrap()
            .entity_candidates(None, 100)
            .unwrap()
            .into_iter()
            .find(|c| c.a.id == "service:order-db" && c.b.id == "service:orders-db")
            .map(|c| (c.status, c.confidence))
    };
    assert!(matches!(status(&e), Some((CandidateStatus::Candidate, c)) if c >= 0.9));
    e.decide_entities(EntityDecision::Reject, "service:orders-db", "service:order-db", None, None)
        .unwrap();
    assert_eq!(status(&e), Some((CandidateStatus::Rejected, 0.0)));
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    assert_eq!(status(&e), Some((CandidateStatus::Rejected, 0.0)), "never proposed again");

    // A change of mind is a new record; the latest in log order wins, also after reprojection.
    e.decide_entities(EntityDecision::Merge, "service:orders-db", "service:order-db", None, None)
        .unwrap();
    e.decide_entities(
        EntityDecision::Reject,
        "service:orders-db",
        "service:order-db",
        Some("two databases"),
        None,
    )
    .unwrap();
    assert_eq!(status(&e), Some((CandidateStatus::Rejected, 0.0)));
    e.reproject(&mut |_, _| {}).unwrap();
    assert_eq!(status(&e), Some((CandidateStatus::Rejected, 0.0)));
    let snap = e.owner_reader().unwrap();
    let decisions: Vec<_> = snap
        .log(1, 100)
        .unwrap()
        .into_iter()
        .filter(|l| l.kind == RecordKind::EntityDecision)
        .collect();
    assert_eq!(decisions.len(), 3);
    assert_eq!(decisions[0].id, "reject|service:order-db|service:orders-db");
    assert_eq!(
        decisions[1].id,
        format!("merge|service:order-db|service:orders-db|{}", decisions[0].position)
    );
    let c = snap.entity_candidates(Some(CandidateStatus::Rejected), 10).unwrap();
    assert!(c[0].justification.starts_with("rejected: two databases (log position"), "{c:?}");
}

#[test]
fn a_decision_naming_an_unknown_entity_is_refused() {
    let (_dir, mut e) = seeded();
    let head = e.owner_reader().unwrap().checkpoints().unwrap().log_length;
    let err = e
        .decide_entities(EntityDecision::Merge, "tool:read_file", "tool:no_such_tool", None, None)
        .unwrap_err();
    assert_eq!(err.code(), "decision.unknown_entity");
    assert!(err.is_user_error());
    let text = err.to_string();
    assert!(text.contains("$.entity_a") && text.contains("tool:no_such_tool"), "{text}");
    let err = e
        .decide_entities(EntityDecision::Merge, "tool:Read File", "tool:read_file", None, None)
        .unwrap_err();
    assert_eq!(err.code(), "envelope.entity_id_format", "{err}");
    assert_eq!(
        e.owner_reader().unwrap().checkpoints().unwrap().log_length,
        head,
        "nothing written"
    );
}

#[test]
fn decision_records_in_jsonl_are_checked_against_the_graph_at_write_time() {
    let (_dir, mut e) = engine();
    let decision = |a: &str, b: &str| {
        format!(
            "{}\n",
            json!({"record_type": "entity_decision", "decision": "merge", "entity_a": a, "entity_b": b})
        )
    };
    let mut text = events(&[&[("read_file", "tool"), ("read-file", "tool")]]);
    text.push_str(&decision("tool:read_file", "tool:read-file"));
    text.push_str(&decision("tool:read_file", "tool:ghost"));
    let report = ingest(&mut e, &text);
    assert_eq!(report.accepted, 2, "{report:?}");
    assert_eq!(report.rejections.len(), 1);
    assert_eq!(report.rejections[0].line, 3);
    assert_eq!(report.rejections[0].code, "decision.unknown_entity");

    // A deferred load checks against the entities of the batch and the caught-up graph.
    let (_dir2, mut d) = engine();
    let mut text = events(&[&[("read_file", "tool"), ("read-file", "tool")]]);
    text.push_str(&decision("tool:read_file", "tool:read-file"));
    let options = IngestOptions { projection: Projection::Deferred, ..IngestOptions::default() };
    let report = d.ingest_jsonl(text.as_bytes(), &options, &mut |_| {}).unwrap();
    assert_eq!(report.accepted, 2, "{report:?}");
    d.catch_up(&mut |_, _| {}).unwrap();
    let merged =
        d.owner_reader().unwrap().entity_candidates(Some(CandidateStatus::Merged), 10).unwrap();
    assert_eq!(merged.len(), 1);
}

#[test]
fn edges_written_by_records_are_left_alone() {
    let (_dir, mut e) = seeded();
    let edge = json!({
        "record_type": "edge", "edge_id": "rel1", "edge_type": "RELATED_TO",
        "from": {"label": "Entity", "id": "tool:read_file"}, "to": {"label": "Entity", "id": "tool:write_file"},
        "properties": {"confidence": 0.6, "justification": "both file tools"},
    });
    ingest(&mut e, &format!("{edge}\n"));
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    let related = pairs(&e, "RELATED_TO");
    let (_, _, props) = related
        .iter()
        .find(|(a, b, _)| a == "tool:read_file" && b == "tool:write_file")
        .expect("the explicit edge is kept");
    assert_eq!(props["justification"], json!("both file tools"));
    assert!(props.get("inferred").is_none());
}

#[test]
fn large_types_are_compared_in_blocks_and_find_a_subset() {
    let (_dir, mut e) = seeded();
    e.resolve_entities(&ResolveConfig::default()).unwrap();
    let exact = pairs(&e, "SAME_AS");
    // Every type counts as large, and every block of more than two names is windowed.
    let blocked = ResolveConfig {
        exact_comparison_limit: 1,
        max_block: 2,
        block_window: 1,
        ..ResolveConfig::default()
    };
    let report = e.resolve_entities(&blocked).unwrap();
    let found = pairs(&e, "SAME_AS");
    assert!(report.same_as >= 2, "{report:?}");
    for (a, b, _) in &found {
        assert!(has_pair(&exact, a, b), "{a} / {b} is not an exact-mode candidate");
    }
}
