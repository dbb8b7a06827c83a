//! Retrieval: the context pack's items, paths, constraints, budget and unknowns, and the
//! property that nothing a caller may not see is returned or walked through.

use std::collections::BTreeSet;

use ctxgraph::{Engine, IngestOptions, Intent, Node, NodeKey, Principal, RecallQuery};
use proptest::prelude::*;
use serde_json::json;

use super::{engine, trace};

fn loaded(events: usize) -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    e.ingest_jsonl(trace(events).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    (dir, e)
}

/// The first failed event of the trace with a causal parent.
fn failure_with_parent(e: &Engine) -> (Node, NodeKey) {
    let snap = e.owner_reader().unwrap();
    for event in snap.events(None, 10_000).unwrap() {
        if event.props.get("status") != Some(&json!("failed")) {
            continue;
        }
        let parents = snap.edges(&event.key, Some("CAUSED_BY"), ctxgraph::Direction::Out).unwrap();
        if let Some(p) = parents.first() {
            return (event.clone(), p.key.to.clone());
        }
    }
    panic!("the trace has a failure with a parent");
}

#[test]
fn a_why_question_brings_in_the_cause_through_caused_by() {
    let (_dir, e) = loaded(400);
    let (failure, parent) = failure_with_parent(&e);
    let summary = failure.props["summary"].as_str().unwrap().to_owned();
    let mut q = RecallQuery::new(format!("why did this fail: {summary}"));
    q.k = 30;
    let pack = e.recall(&q).unwrap();
    assert_eq!(pack.intent, Intent::Why);
    assert!(pack.intent_classified);
    let top = &pack.items[0];
    assert!(top.path.is_empty() && !top.found_by.is_empty(), "the best item is a direct hit");
    let cause =
        pack.items.iter().find(|i| i.node.key == parent).expect("the parent is in the pack");
    if !cause.path.is_empty() {
        assert!(cause.path.iter().any(|s| s.edge_type == "CAUSED_BY"), "{:?}", cause.path);
    }
    for item in &pack.items {
        let f = item.factors;
        let product = f.relevance * f.path_weight * f.confidence * f.salience * f.focus * f.matched;
        assert!((item.score - product).abs() < 1e-9, "the score is the product of its factors");
        if item.node.key.label == "Event" {
            assert!(item.provenance.log_position.is_some());
            assert!(!item.provenance.created_by.is_empty());
        }
    }
    let scores: Vec<f64> = pack.items.iter().map(|i| i.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]));
    let keys: BTreeSet<&NodeKey> = pack.items.iter().map(|i| &i.node.key).collect();
    for edge in &pack.edges {
        assert!(keys.contains(&edge.edge.key.from) && keys.contains(&edge.edge.key.to));
    }
}

#[test]
fn constraints_hold_for_every_item_and_the_budget_for_the_sum() {
    let (_dir, e) = loaded(400);
    let mut q = RecallQuery::new("timeout calling the database");
    q.k = 50;
    q.session = Some("sess-0003".into());
    q.labels = Some(vec!["Event".into()]);
    let pack = e.recall(&q).unwrap();
    assert!(!pack.items.is_empty());
    for item in &pack.items {
        assert_eq!(item.node.key.label, "Event");
        assert_eq!(item.node.props["session_id"], json!("sess-0003"));
    }
    let since = chrono::DateTime::parse_from_rfc3339("2026-11-18T00:00:00Z").unwrap();
    let mut q = RecallQuery::new("timeout calling the database");
    q.since = Some(since);
    q.labels = Some(vec!["Event".into()]);
    for item in &e.recall(&q).unwrap().items {
        let at = item.node.props["occurred_at"].as_str().unwrap();
        assert!(chrono::DateTime::parse_from_rfc3339(at).unwrap() >= since, "{at}");
    }
    let mut q = RecallQuery::new("timeout calling the database");
    q.k = 50;
    q.budget_tokens = Some(200);
    let pack = e.recall(&q).unwrap();
    assert!(pack.items.iter().map(|i| i.tokens).sum::<usize>() <= 200);
    assert!(pack.trimmed > 0, "50 items do not fit 200 tokens");
}

#[test]
fn a_parent_that_never_arrived_is_an_explicit_unknown() {
    let (_dir, mut e) = engine();
    let line = json!({"event_id": "orphan", "event_type": "tool.execute", "tool_name": "deploy",
        "occurred_at": "2026-11-20T10:00:00Z", "session_id": "s", "agent_id": "a", "trace_id": "t",
        "parent_event_id": "never-came", "status": "failed", "payload": {"error": "deploy rejected"}});
    e.ingest_jsonl(format!("{line}\n").as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let pack = e.recall(&RecallQuery::new("why was the deploy rejected")).unwrap();
    assert_eq!(pack.items[0].node.key, NodeKey::new("Event", "orphan"));
    let u = pack.unknowns.iter().find(|u| u.kind == "missing_parent").expect("named");
    assert_eq!(u.missing, NodeKey::new("Event", "never-came"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn nothing_hidden_is_returned_or_walked_through(
        hidden in prop::collection::btree_set(1usize..150, 0..60),
        question in prop::sample::select(vec![
            "why did the email fail", "when was the config read", "who used sql_query",
            "similar timeouts", "overview of the incident", "invoice rounding",
        ]),
    ) {
        // The chosen events deny the viewer role; everything derived from them follows.
        let ids: BTreeSet<String> = hidden.iter().map(|n| format!("evt-{n:06}")).collect();
        let (_dir, mut e) = engine();
        let mut lines = String::new();
        for line in trace(150).lines() {
            let mut ev: serde_json::Value = serde_json::from_str(line).unwrap();
            if ev["event_id"].as_str().is_some_and(|id| ids.contains(id)) {
                ev["scope"] = json!({"deny_roles": ["viewer"]});
            }
            lines.push_str(&format!("{ev}\n"));
        }
        e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
        e.enrich(&mut |_, _| {}).unwrap();
        e.consolidate().unwrap();
        let who = Principal::new("v", "default", ["viewer".to_owned()]).unwrap();
        let mut q = RecallQuery::new(question);
        q.k = 40;
        let pack = e.recall_as(&q, &who).unwrap();
        let reader = e.reader(&who).unwrap();
        let visible = |k: &NodeKey| reader.node(k).unwrap().is_some();
        for item in &pack.items {
            prop_assert!(!ids.contains(&item.node.key.id), "returned {}", item.node.key);
            prop_assert!(visible(&item.node.key), "returned {}", item.node.key);
            prop_assert!(visible(&item.seed), "seeded from {}", item.seed);
            for step in &item.path {
                prop_assert!(visible(&step.to), "walked through {}", step.to);
            }
        }
        for edge in &pack.edges {
            prop_assert!(visible(&edge.edge.key.from) && visible(&edge.edge.key.to));
        }
        for u in &pack.unknowns {
            prop_assert!(!ids.contains(&u.item.id) && visible(&u.item));
        }
    }
}

#[test]
fn tags_and_location_constrain_events() {
    let (_dir, mut e) = engine();
    let mut lines = String::new();
    for (id, tags, location) in [
        ("a", json!(["lab"]), "lab/arm-bench"),
        ("b", json!(["prod"]), "lab"),
        ("c", json!(["lab", "prod"]), "labs/other"),
        ("d", json!([]), "lab/arm-bench/joint"),
    ] {
        let mut scope = json!({"location": location});
        if tags.as_array().is_some_and(|t| !t.is_empty()) {
            scope["tags"] = tags;
        }
        let ev = json!({"event_id": id, "event_type": "tool.execute", "tool_name": "calibrate",
            "occurred_at": "2026-11-20T10:00:00Z", "session_id": id, "agent_id": "a", "trace_id": "t",
            "payload": {"message": "calibrate the arm joint"}, "scope": scope});
        lines.push_str(&format!("{ev}\n"));
    }
    e.ingest_jsonl(lines.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let ids = |q: &RecallQuery| -> BTreeSet<String> {
        e.recall(q)
            .unwrap()
            .items
            .iter()
            .filter(|i| i.node.key.label == "Event")
            .map(|i| i.node.key.id.clone())
            .collect()
    };
    let mut q = RecallQuery::new("calibrate the arm joint");
    q.k = 20;
    assert_eq!(ids(&q).len(), 4);
    q.tags = vec!["lab".into()];
    assert_eq!(ids(&q), BTreeSet::from(["a".to_owned(), "c".to_owned()]));
    q.tags.clear();
    q.location = Some("lab/".into());
    assert_eq!(ids(&q), BTreeSet::from(["a".to_owned(), "b".to_owned(), "d".to_owned()]));
    q.tags = vec!["prod".into()];
    assert_eq!(ids(&q), BTreeSet::from(["b".to_owned()]));
}

/// A small chat imported through the message format: ids `s1:1`, `s1:2`, … in session order.
fn chat(lines: &[(&str, &str, &str)]) -> (tempfile::TempDir, Engine) {
    let jsonl: String = lines
        .iter()
        .enumerate()
        .map(|(i, (session, speaker, text))| {
            format!(
                "{}\n",
                json!({"speaker": speaker, "text": text, "session": session,
                    "conversation": "c", "timestamp": format!("2024-01-10T09:{i:02}:00Z")})
            )
        })
        .collect();
    import_chat(&jsonl)
}

/// A fresh store with these chat messages (JSONL) imported, enriched and consolidated.
fn import_chat(jsonl: &str) -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    let batch = ctxgraph::parse_messages(jsonl.as_bytes(), &ctxgraph::Limits::default());
    let report = e.import(&batch, &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(report.progress.rejected, 0);
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    (dir, e)
}

fn rank_of(pack: &ctxgraph::ContextPack, id: &str) -> Option<usize> {
    pack.items.iter().position(|i| i.node.key.id == id)
}

#[test]
fn a_reply_with_none_of_the_question_words_is_found_through_the_turn_it_answers() {
    let (_dir, e) = chat(&[
        ("s1", "alice", "What instrument have you been practising lately?"),
        ("s1", "bob", "The cello, every evening after dinner."),
        ("s1", "alice", "Lovely. The weather turned cold here."),
        ("s2", "bob", "My sister visited and we baked bread together."),
        ("s2", "alice", "Nice, fresh bread is the best."),
    ]);
    let mut q = RecallQuery::new("which instrument has been practised");
    q.k = 3;
    q.labels = Some(vec!["Event".into()]);
    q.params.list_weights = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    q.params.expansions = 0;
    let pack = e.recall(&q).unwrap();
    let reply = pack.items.iter().find(|i| i.node.key.id == "s1:2").expect("the reply is found");
    assert!(reply.found_by.contains(&"context") && !reply.found_by.contains(&"bm25"));
    assert_eq!(rank_of(&pack, "s1:1"), Some(0), "the asking turn stays first");

    q.params.context = ctxgraph::ContextWeights { next: 0.0, prev: 0.0, top: 10 };
    let pack = e.recall(&q).unwrap();
    assert_eq!(rank_of(&pack, "s1:2"), None, "without context support BM25 cannot find it");
}

#[test]
fn events_of_the_actor_a_question_names_come_first() {
    let (_dir, e) = chat(&[
        ("s1", "alice", "I adopted a grey kitten named Pebble."),
        ("s2", "bob", "I adopted a grey kitten named Pebble."),
        ("s3", "alice", "Work has been busy this month."),
        ("s3", "bob", "Same here, lots of meetings."),
    ]);
    let mut q = RecallQuery::new("Which kitten did Bob adopt?");
    q.labels = Some(vec!["Event".into()]);
    let pack = e.recall(&q).unwrap();
    let bob = rank_of(&pack, "s2:1").expect("bob's turn is found");
    let alice = rank_of(&pack, "s1:1").expect("alice's turn is found");
    assert!(bob < alice, "the named speaker's turn ranks first: {bob} vs {alice}");
    assert_eq!(pack.items[bob].factors.focus, 1.0);
    assert_eq!(pack.items[alice].factors.focus, q.params.other_actor);
    for item in &pack.items {
        let f = item.factors;
        let product = f.relevance * f.path_weight * f.confidence * f.salience * f.focus * f.matched;
        assert!((item.score - product).abs() < 1e-9, "the score is the product of its factors");
    }

    q.text = "Which kitten was adopted?".into();
    let pack = e.recall(&q).unwrap();
    assert!(pack.items.iter().all(|i| i.factors.focus == 1.0), "no actor named, no focus");
}

#[test]
fn a_date_in_the_question_brings_in_the_events_of_that_day() {
    // The same words on many days; the question asks about one of them.
    let jsonl: String = (1..=28)
        .map(|day| {
            format!(
                "{}\n",
                json!({"speaker": "alice", "text": format!("Went to the market today, day {day}."),
                    "session": format!("s{day}"), "conversation": "c",
                    "timestamp": format!("2023-02-{day:02}T10:00:00Z")})
            )
        })
        .collect();
    let (dir, e) = import_chat(&jsonl);
    let mut q = RecallQuery::new("What happened at the market on 14 February, 2023?");
    q.k = 3;
    q.labels = Some(vec!["Event".into()]);
    let pack = e.recall(&q).unwrap();
    let days: Vec<&str> = pack.items.iter().map(|i| i.node.key.id.as_str()).collect();
    // The 14th, widened by a day on each side.
    let mut sorted = days.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["s13:1", "s14:1", "s15:1"], "{days:?}");
    assert!(pack.items.iter().all(|i| i.factors.focus == 1.0));
    assert!(pack.items.iter().any(|i| i.found_by.contains(&"dated")));

    q.text = "What happened at the market?".into();
    let pack = e.recall(&q).unwrap();
    let mut undated: Vec<&str> = pack.items.iter().map(|i| i.node.key.id.as_str()).collect();
    undated.sort_unstable();
    assert_ne!(undated, sorted, "without the date, other days rank as high");
    drop(dir);
}

/// The words random questions are made of: the events' texts and the entities they name.
fn vocabulary(lines: &[String]) -> Vec<String> {
    let mut words = BTreeSet::new();
    for line in lines {
        let ev: serde_json::Value = serde_json::from_str(line).unwrap();
        let text = ev["payload"]["text"].as_str().unwrap_or("");
        words.extend(text.split_whitespace().map(str::to_owned));
        for entity in ev["entities"].as_array().into_iter().flatten() {
            words.extend(entity["name"].as_str().map(str::to_owned));
        }
    }
    words.into_iter().collect()
}

/// Recall with its in-memory searches on helper threads (the default) returns exactly the pack
/// of recall on one thread, over random questions, with cold and warm caches, on a store with
/// documents and vectors both inside and outside their indexes.
#[test]
fn helper_threads_change_no_pack() {
    let lines: Vec<String> = trace(500).lines().map(str::to_owned).collect();
    let (dir, mut e) = engine();
    let (built, newer) = lines.split_at(400);
    e.ingest_jsonl(built.join("\n").as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    e.ingest_jsonl(newer.join("\n").as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let owner = e.owner_reader().unwrap();
    let outside = (owner.stats_vectors().unwrap().1, owner.text_docs_outside_index().unwrap());
    assert!(outside.0 > 0 && outside.1 > 0, "some outside the indexes: {outside:?}");
    drop(owner);
    let inline = Engine::open(
        &dir.path().join("t.ctxg"),
        ctxgraph::OpenMode::MustExist,
        ctxgraph::EngineOptions { inline_searches: true, ..ctxgraph::EngineOptions::default() },
    )
    .unwrap();
    let mut vocabulary = vocabulary(&lines);
    vocabulary.extend(["why", "when", "who", "sess-0002", "trace-0003"].map(str::to_owned));
    let question = (prop::collection::vec(prop::sample::select(vocabulary), 1..7), 1usize..30);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 64,
        ..ProptestConfig::default()
    });
    runner
        .run(&question, |(words, k)| {
            let mut q = RecallQuery::new(words.join(" "));
            q.k = k;
            let mut concurrent = e.recall(&q).unwrap();
            let mut alone = inline.recall(&q).unwrap();
            concurrent.timings = ctxgraph::Timings::default();
            alone.timings = ctxgraph::Timings::default();
            prop_assert_eq!(concurrent, alone);
            Ok(())
        })
        .unwrap();
}

/// A warm engine (its nodes kept decoded, its items' out-edges taken from the edge cache)
/// returns exactly the pack of a fresh engine, over random questions, and after a write that
/// changes the nodes and edges it holds.
#[test]
fn warm_caches_change_no_pack() {
    let lines: Vec<String> = trace(300).lines().map(str::to_owned).collect();
    let (dir, mut e) = engine();
    let (first, later) = lines.split_at(250);
    e.ingest_jsonl(first.join("\n").as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    let vocabulary = vocabulary(&lines);
    let question = (prop::collection::vec(prop::sample::select(vocabulary), 1..7), 1usize..30);
    let path = dir.path().join("t.ctxg");
    let check = |e: &Engine| {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases: 24,
            ..ProptestConfig::default()
        });
        runner
            .run(&question, |(words, k)| {
                let mut q = RecallQuery::new(words.join(" "));
                q.k = k;
                let _ = e.recall(&q).unwrap();
                let mut warm = e.recall(&q).unwrap();
                let fresh = Engine::open(
                    &path,
                    ctxgraph::OpenMode::MustExist,
                    ctxgraph::EngineOptions::default(),
                )
                .unwrap();
                let mut cold = fresh.recall(&q).unwrap();
                warm.timings = ctxgraph::Timings::default();
                cold.timings = ctxgraph::Timings::default();
                prop_assert_eq!(warm, cold);
                Ok(())
            })
            .unwrap();
    };
    check(&e);
    // New events change the sessions' last nodes and edges, and enrichment the events' own
    // properties: what the warm engine kept must not be answered.
    e.ingest_jsonl(later.join("\n").as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    check(&e);
}
