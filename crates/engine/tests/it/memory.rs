//! Decision memory (seed 003): the JWT scenario end to end, write-time refusals, votes, the
//! rollup, and automatic links that do not depend on arrival order or on rebuilding.

use ctxgraph::{
    Direction, Engine, IngestOutcome, MemorySearchOptions, NodeKey, RollupOptions, TraversalOptions,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::{dump, engine};

fn save(engine: &mut Engine, record: Value) -> Result<IngestOutcome, ctxgraph::Error> {
    let r = engine.validate(&record.to_string()).map_err(ctxgraph::Error::Validation)?;
    engine.save_memories(&[r]).unwrap().pop().unwrap()
}

fn ns(t: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(t).unwrap().timestamp_nanos_opt().unwrap()
}

/// Seed 003's scenario: the JWT decision, its checkpoint 30 minutes later in the same session, the
/// FAILED outcome the next day and the superseding session-based decision.
pub(crate) fn jwt_scenario(engine: &mut Engine) {
    for record in [
        json!({"record_type": "memory", "memory_id": "memory_1", "kind": "decision",
            "topic": "auth_strategy", "content": "Use JWT", "reasoning": "Stateless, scalable",
            "session_id": "s1", "created_by": "llm", "created_at": "2026-11-20T09:00:00Z"}),
        json!({"record_type": "memory", "memory_id": "memory_2", "kind": "checkpoint",
            "content": "Implemented JWT auth in auth.ts", "session_id": "s1",
            "created_at": "2026-11-20T09:30:00Z"}),
        json!({"record_type": "memory_outcome", "memory_id": "memory_1", "outcome": "FAILED",
            "reason": "Performance issues with token refresh", "at": "2026-11-21T10:00:00Z"}),
        json!({"record_type": "memory", "memory_id": "memory_3", "kind": "decision",
            "topic": "auth_strategy", "content": "Switch to session-based",
            "supersedes": "memory_1", "session_id": "s2", "created_by": "llm",
            "created_at": "2026-11-21T11:00:00Z"}),
    ] {
        assert!(matches!(save(engine, record).unwrap(), IngestOutcome::New(_)));
    }
}

fn at(t: &str) -> TraversalOptions {
    TraversalOptions { as_of_ns: Some(ns(t)), ..TraversalOptions::default() }
}

#[test]
fn why_did_we_abandon_jwt() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let options = MemorySearchOptions {
        traversal: at("2026-11-21T12:00:00Z"),
        ..MemorySearchOptions::default()
    };
    let ctx = engine.memory_context("Why did we abandon JWT?", &options).unwrap();
    // The chain memory_1 → memory_3, shown newest first.
    let ev = ctx.evolution.expect("an evolution chain");
    let chain: Vec<&str> = ev.steps.iter().map(|s| s.memory.id.as_str()).collect();
    assert_eq!(chain, ["memory_3", "memory_1"]);
    assert_eq!(ev.topic, "auth_strategy");
    assert_eq!(ev.steps[1].link_confidence, Some(1.0), "an explicit SUPERSEDES never decays");
    // memory_2 is the implementation evidence, reached from memory_1.
    let evidence: Vec<&str> =
        ctx.evidence.iter().flat_map(|i| i.items.iter().map(|x| x.memory.id.as_str())).collect();
    assert!(evidence.contains(&"memory_2"), "evidence: {evidence:?}");
    // The FAILED outcome, with its reason.
    let failed = &ev.steps[1].outcomes;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].outcome, "failed");
    assert_eq!(failed[0].reason, "Performance issues with token refresh");
    assert_eq!(ctx.outcomes, *failed);
    assert_eq!(ev.steps[1].memory.outcome.as_deref(), Some("failed"));
    // The search itself finds the JWT memories first.
    assert!(ctx.hits.iter().take(2).any(|h| h.memory.id == "memory_1"), "{:?}", ctx.hits);
}

#[test]
fn automatic_links_follow_the_seed_rules() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let snap = engine.owner_reader().unwrap();
    let m = |id: &str| NodeKey::new("Memory", id);
    let temporal = snap.edges(&m("memory_2"), Some("TEMPORAL"), Direction::In).unwrap();
    assert_eq!(temporal.len(), 1);
    assert_eq!(temporal[0].key.from, m("memory_1"));
    let c = temporal[0].props["confidence"].as_f64().unwrap();
    assert!((c - 0.4).abs() < 1e-12, "30 min of a 1 h window: 0.3 + 0.5 × 0.2, got {c}");
    let related = snap.edges(&m("memory_3"), Some("RELATES_TO"), Direction::In).unwrap();
    let same_topic: Vec<_> = related.iter().filter(|e| e.props["rule"] == "same_topic").collect();
    assert_eq!(same_topic.len(), 1);
    assert_eq!(same_topic[0].key.from, m("memory_1"));
    assert_eq!(same_topic[0].props["confidence"], 0.6);
    // Different sessions: no temporal link into memory_3.
    assert!(snap.edges(&m("memory_3"), Some("TEMPORAL"), Direction::In).unwrap().is_empty());
    // Impact of the JWT decision: the checkpoint, by the temporal link, within the week.
    let impact = snap.impact("memory_1", &at("2026-11-20T10:00:00Z")).unwrap().unwrap();
    assert_eq!(impact.items.len(), 1);
    assert_eq!(
        (impact.items[0].memory.id.as_str(), impact.items[0].via.as_str()),
        ("memory_2", "TEMPORAL")
    );
    assert_eq!(impact.superseded_by[0].id, "memory_3");
    // Two weeks later the temporal link has decayed under the pruning threshold: as the only
    // evidence, it is still shown, at its decayed confidence.
    let later = snap.impact("memory_1", &at("2026-12-04T10:00:00Z")).unwrap().unwrap();
    assert_eq!(later.items.len(), 1);
    assert!(later.items[0].confidence < 0.3, "{:?}", later.items[0]);
}

#[test]
fn links_to_missing_memories_are_refused_and_change_nothing() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let head = engine.owner_reader().unwrap().checkpoints().unwrap().log_length;
    for (record, field) in [
        (
            json!({"record_type": "memory", "kind": "decision", "topic": "t", "content": "x",
            "supersedes": "memory_9", "created_at": "2026-11-22T09:00:00Z"}),
            "$.supersedes",
        ),
        (
            json!({"record_type": "memory", "kind": "checkpoint", "content": "x",
            "implements": ["memory_1", "nope"], "created_at": "2026-11-22T09:00:00Z"}),
            "$.implements[1]",
        ),
        (
            json!({"record_type": "memory_outcome", "memory_id": "ghost", "outcome": "success",
            "reason": "r", "at": "2026-11-22T09:00:00Z"}),
            "$.memory_id",
        ),
        (
            json!({"record_type": "memory_link", "from": "memory_1", "to": "ghost",
            "link_type": "relates_to", "created_at": "2026-11-22T09:00:00Z"}),
            "$.to",
        ),
        (
            json!({"record_type": "memory_link_vote", "from": "ghost", "to": "memory_2",
            "link_type": "temporal", "vote": "delete", "created_at": "2026-11-22T09:00:00Z"}),
            "$.from",
        ),
    ] {
        let err = save(&mut engine, record).unwrap_err();
        assert_eq!(err.code(), "memory.unknown_memory", "{err}");
        assert!(err.to_string().contains(field), "{err}");
    }
    let bad = engine.validate(
        &json!({"record_type": "memory_link", "from": "memory_1", "to": "memory_2",
            "link_type": "relates_to", "confidence": 1.2, "created_at": "2026-11-22T09:00:00Z"})
        .to_string(),
    );
    assert_eq!(bad.unwrap_err().violations[0].rule, "memory.confidence_range");
    assert_eq!(engine.owner_reader().unwrap().checkpoints().unwrap().log_length, head);
}

#[test]
fn a_deleted_link_is_gone_and_a_downvote_halves_it() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let t = at("2026-11-20T10:00:00Z");
    save(
        &mut engine,
        json!({"record_type": "memory_link", "from": "memory_2", "to": "memory_1",
        "link_type": "implements", "confidence": 0.9, "created_at": "2026-11-20T10:00:00Z"}),
    )
    .unwrap();
    let links = |e: &Engine| {
        e.owner_reader()
            .unwrap()
            .memory_links("memory_2", &t)
            .unwrap()
            .into_iter()
            .map(|(e, c)| (e.key.edge_type, e.key.from.id, c))
            .collect::<Vec<_>>()
    };
    assert_eq!(links(&engine).len(), 2, "{:?}", links(&engine));
    save(
        &mut engine,
        json!({"record_type": "memory_link_vote", "from": "memory_1", "to": "memory_2",
        "link_type": "temporal", "vote": "delete", "created_at": "2026-11-20T10:00:00Z"}),
    )
    .unwrap();
    save(
        &mut engine,
        json!({"record_type": "memory_link_vote", "from": "memory_2", "to": "memory_1",
        "link_type": "implements", "vote": "downvote", "created_at": "2026-11-20T10:00:00Z"}),
    )
    .unwrap();
    let now = links(&engine);
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].0, "IMPLEMENTS");
    assert!((now[0].2 - 0.45).abs() < 1e-12, "{now:?}");
    // Votes are records: reprojection keeps them.
    engine.reproject(&mut |_, _| {}).unwrap();
    engine.link_memories().unwrap();
    assert_eq!(links(&engine), now);
}

#[test]
fn rollup_reports_decisions_outcomes_open_blocked_and_next_actions() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    save(&mut engine, json!({"record_type": "memory", "memory_id": "memory_4", "kind": "decision",
        "topic": "cache", "content": "Cache sessions in Redis", "created_at": "2026-11-10T09:00:00Z"}))
    .unwrap();
    let snap = engine.owner_reader().unwrap();
    let opts = RollupOptions::default();
    // The week of the JWT failure, before memory_3 replaced it.
    let r = snap.rollup(ns("2026-11-16T00:00:00Z"), ns("2026-11-21T10:30:00Z"), &opts).unwrap();
    let ids = |v: &[ctxgraph::MemoryView]| v.iter().map(|m| m.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&r.decisions), ["memory_1"]);
    assert_eq!(r.outcomes.len(), 1);
    assert_eq!(r.blocked.len(), 1);
    assert_eq!(r.blocked[0].memory.id, "memory_1");
    assert_eq!(ids(&r.open), ["memory_4"]);
    let actions: Vec<(&str, &str)> =
        r.next_actions.iter().map(|a| (a.action, a.memory_id.as_str())).collect();
    assert_eq!(actions, [("supersede", "memory_1"), ("record_outcome", "memory_4")]);
    // A week later memory_3 superseded memory_1: nothing is blocked, memory_3 is open.
    let r = snap.rollup(ns("2026-11-21T00:00:00Z"), ns("2026-11-22T00:00:00Z"), &opts).unwrap();
    assert!(r.blocked.is_empty());
    assert_eq!(ids(&r.decisions), ["memory_3"]);
    assert_eq!(ids(&r.open), ["memory_4", "memory_3"]);
    let actions: Vec<(&str, &str)> =
        r.next_actions.iter().map(|a| (a.action, a.memory_id.as_str())).collect();
    assert_eq!(actions, [("record_outcome", "memory_4"), ("checkpoint", "memory_3")]);
    drop(snap);

    // A blocked_by fact true at the end of the window is a blocked item with an unblock action,
    // right after the supersede actions; one asserted later is not.
    let mut blocked = ctxgraph::FactInput::new(
        ctxgraph::EntityInput::typed("Project Atlas", "project"),
        "blocked_by",
        ctxgraph::ObjectInput::Entity(ctxgraph::EntityInput::typed("Vendor contract", "concept")),
    );
    blocked.asserted_at = Some("2026-11-18T09:00:00Z".into());
    blocked.valid_from = Some("2026-11-18T09:00:00Z".into());
    blocked.confidence = Some(0.8);
    engine.record_fact(&blocked).unwrap();
    let snap = engine.owner_reader().unwrap();
    let r = snap.rollup(ns("2026-11-16T00:00:00Z"), ns("2026-11-21T10:30:00Z"), &opts).unwrap();
    assert_eq!(r.blocked_by.len(), 1);
    assert_eq!(r.blocked_by[0].subject.id, "project:project atlas");
    let actions: Vec<&str> = r.next_actions.iter().map(|a| a.action).collect();
    assert_eq!(actions, ["supersede", "unblock", "record_outcome"]);
    assert!(r.next_actions[1].text.contains("Vendor contract"), "{}", r.next_actions[1].text);
    // Read through a principal's view, the unblock action stays: it names a fact, not a memory.
    let reader = ctxgraph::Principal::new("r", "default", ["reader".to_owned()]).unwrap();
    let scoped = snap
        .as_principal(&reader)
        .rollup(ns("2026-11-16T00:00:00Z"), ns("2026-11-21T10:30:00Z"), &opts)
        .unwrap();
    let actions: Vec<&str> = scoped.next_actions.iter().map(|a| a.action).collect();
    assert_eq!(actions, ["supersede", "unblock", "record_outcome"]);
    let before =
        snap.rollup(ns("2026-11-10T00:00:00Z"), ns("2026-11-17T00:00:00Z"), &opts).unwrap();
    assert!(before.blocked_by.is_empty(), "not yet true then");
}

/// A memory record of the generated set.
fn memory(i: usize, kind: usize, topic: usize, session: usize, minute: i64, words: usize) -> Value {
    const KINDS: [&str; 4] = ["decision", "checkpoint", "insight", "context"];
    const TEXTS: [&str; 6] = [
        "use jwt tokens for auth",
        "use jwt tokens for api auth",
        "switch auth to server sessions",
        "cache sessions in redis",
        "implemented jwt auth in auth.ts",
        "token refresh is too slow",
    ];
    let at = chrono::DateTime::from_timestamp(1_795_000_000 + minute * 60, 0).unwrap().to_rfc3339();
    json!({"record_type": "memory", "memory_id": format!("m{i}"), "kind": KINDS[kind],
        "topic": format!("topic {topic}"), "content": TEXTS[words], "session_id": format!("s{session}"),
        "created_at": at})
}

fn auto_links(engine: &Engine) -> Vec<ctxgraph::Edge> {
    dump(engine)
        .edges
        .into_iter()
        // An automatic link names its rule; an explicit one says `explicit`.
        .filter(|e| e.props.get("rule").and_then(Value::as_str).is_some_and(|r| r != "explicit"))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Automatic links saved one memory at a time, in any order, equal the links rebuilt from
    /// the log, and the incrementally built graph equals the reprojected and relinked one.
    #[test]
    fn incremental_links_equal_rebuilt_links_in_any_order(
        specs in prop::collection::vec((0..4usize, 0..3usize, 0..2usize, 0..180i64, 0..6usize), 2..14),
        order in Just(()).prop_perturb(|_, mut rng| rng.random::<u64>()),
        small_caps in any::<bool>(),
    ) {
        let records: Vec<Value> = specs.iter().enumerate()
            .map(|(i, &(k, t, s, m, w))| memory(i, k, t, s, m, w)).collect();
        let mut shuffled = records.clone();
        // A deterministic shuffle from the drawn seed.
        let mut state = order | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let options = |caps: bool| {
            let mut o = ctxgraph::EngineOptions::default();
            if caps {
                o.memory.temporal_max = 1;
                o.memory.same_topic_max = 1;
                o.memory.semantic_max = 2;
            }
            o
        };
        let open = |dir: &tempfile::TempDir| Engine::open(&dir.path().join("t.ctxg"),
            ctxgraph::OpenMode::CreateIfMissing, options(small_caps)).unwrap();
        let (da, db) = (tempfile::TempDir::new().unwrap(), tempfile::TempDir::new().unwrap());
        let (mut a, mut b) = (open(&da), open(&db));
        for r in &records { save(&mut a, r.clone()).unwrap(); }
        for r in &shuffled { save(&mut b, r.clone()).unwrap(); }
        let incremental = dump(&a);
        prop_assert_eq!(auto_links(&a), auto_links(&b), "arrival order changed the links");
        a.reproject(&mut |_, _| {}).unwrap();
        a.link_memories().unwrap();
        prop_assert_eq!(dump(&a), incremental);
    }
}

#[test]
fn recall_answers_a_why_question_through_supersedes_and_outcome_of() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let pack = engine.recall(&ctxgraph::RecallQuery::new("Why did we abandon JWT?")).unwrap();
    let keys: Vec<String> = pack.items.iter().map(|i| i.node.key.to_string()).collect();
    assert_eq!(keys[0], "Memory:memory_1", "{keys:?}");
    assert!(keys.contains(&"Memory:memory_3".to_owned()), "{keys:?}");
    let outcome = pack.items.iter().find(|i| i.node.key.label == "Outcome").expect("the outcome");
    assert_eq!(outcome.node.props["outcome"], "failed");
    assert_eq!(outcome.path[0].edge_type, "OUTCOME_OF");
}

#[test]
fn an_explicit_link_written_by_the_system_survives_relinking() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    save(
        &mut engine,
        json!({"record_type": "memory_link", "from": "memory_2", "to": "memory_3",
        "link_type": "temporal", "confidence": 0.2, "created_by": "system",
        "created_at": "2026-11-21T11:00:00Z"}),
    )
    .unwrap();
    engine.link_memories().unwrap();
    let links = engine
        .owner_reader()
        .unwrap()
        .memory_links("memory_3", &at("2026-11-21T11:00:00Z"))
        .unwrap();
    assert!(
        links.iter().any(|(e, c)| e.key.edge_type == "TEMPORAL" && (*c - 0.2).abs() < 1e-12),
        "an explicit link is neither deleted by relinking nor pruned: {links:?}"
    );
}

/// A decision saved on a topic without `supersedes` stays in the evolution chain: after the
/// supersedes links, the chain goes on through the topic's older decisions, each step saying how
/// it was reached and whether by an explicit link.
#[test]
fn evolution_follows_topic_order_and_relates_to_as_well_as_supersedes() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    // An older decision on the topic, never superseded explicitly.
    save(
        &mut engine,
        json!({"record_type": "memory", "memory_id": "memory_0", "kind": "decision",
        "topic": "auth_strategy", "content": "Use basic auth", "session_id": "s0",
        "created_at": "2026-11-10T09:00:00Z"}),
    )
    .unwrap();
    // A newer one saved without supersedes.
    save(
        &mut engine,
        json!({"record_type": "memory", "memory_id": "memory_4", "kind": "decision",
        "topic": "auth_strategy", "content": "Add passkeys to sessions", "session_id": "s3",
        "created_at": "2026-11-22T09:00:00Z"}),
    )
    .unwrap();
    let steps = |e: &Engine| {
        let snap = e.owner_reader().unwrap();
        let ev = snap.evolution("auth_strategy", &at("2026-11-22T10:00:00Z")).unwrap().unwrap();
        ev.steps.iter().map(|s| (s.memory.id.clone(), s.via, s.explicit)).collect::<Vec<_>>()
    };
    let chain = steps(&engine);
    let ids: Vec<&str> = chain.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(ids, ["memory_4", "memory_3", "memory_1", "memory_0"], "{chain:?}");
    assert_eq!((chain[0].1, chain[0].2), (None, false));
    assert_eq!((chain[2].1, chain[2].2), (Some("supersedes"), true));
    // memory_3 and memory_1 and memory_0 are reached by topic order, linked or not.
    for step in [&chain[1], &chain[3]] {
        assert!(matches!(step.1, Some("relates_to" | "same_topic")), "{chain:?}");
        assert!(!step.2, "not explicit: {chain:?}");
    }
    // An explicit link between two of them is marked explicit.
    save(
        &mut engine,
        json!({"record_type": "memory_link", "from": "memory_4", "to": "memory_3",
        "link_type": "relates_to", "confidence": 0.9, "created_at": "2026-11-22T09:30:00Z"}),
    )
    .unwrap();
    let chain = steps(&engine);
    assert_eq!(
        (chain[1].0.as_str(), chain[1].1, chain[1].2),
        ("memory_3", Some("relates_to"), true)
    );
}

/// Automatic linking can be switched off for one memory (in its record, so rebuilding the links
/// keeps it so) or for the whole store (the engine's options); explicit links stay either way.
#[test]
fn automatic_links_can_be_switched_off_per_memory_or_per_store() {
    let (dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    save(
        &mut engine,
        json!({"record_type": "memory", "memory_id": "memory_4", "kind": "checkpoint",
        "content": "Implemented JWT refresh in auth.ts", "session_id": "s1", "auto_link": false,
        "implements": "memory_1", "created_at": "2026-11-20T09:40:00Z"}),
    )
    .unwrap();
    let automatic_of = |e: &Engine, id: &str| {
        auto_links(e).into_iter().filter(|l| l.key.from.id == id || l.key.to.id == id).count()
    };
    assert!(automatic_of(&engine, "memory_2") > 0, "the same session links the others");
    assert_eq!(automatic_of(&engine, "memory_4"), 0);
    engine.link_memories().unwrap();
    assert_eq!(automatic_of(&engine, "memory_4"), 0, "rebuilding keeps it unlinked");
    let explicit = engine
        .owner_reader()
        .unwrap()
        .memory_links("memory_4", &at("2026-11-20T10:00:00Z"))
        .unwrap();
    assert_eq!(explicit.len(), 1, "its explicit IMPLEMENTS stays");
    drop(engine);
    // Off for the store: rebuilding removes every automatic link, explicit ones stay.
    let mut options = ctxgraph::EngineOptions::default();
    options.memory.auto_link = false;
    let path = dir.path().join("t.ctxg");
    let mut engine = Engine::open(&path, ctxgraph::OpenMode::MustExist, options).unwrap();
    engine.link_memories().unwrap();
    assert!(auto_links(&engine).is_empty());
    let ev = engine
        .owner_reader()
        .unwrap()
        .evolution("auth_strategy", &at("2026-11-22T00:00:00Z"))
        .unwrap()
        .unwrap();
    assert_eq!(ev.steps[1].via, Some("supersedes"));
}

/// The automatic TEMPORAL link from a decision to its checkpoint decays below the pruning
/// threshold within days; as the decision's only evidence it stays in `memory search`, at its
/// decayed confidence, instead of fading out.
#[test]
fn the_only_evidence_decays_but_stays_findable() {
    let (_dir, mut engine) = engine();
    jwt_scenario(&mut engine);
    let evidence_at = |t: &str| {
        let options = MemorySearchOptions { traversal: at(t), ..MemorySearchOptions::default() };
        let ctx = engine.memory_context("Why did we abandon JWT?", &options).unwrap();
        ctx.evidence
            .iter()
            .flat_map(|i| i.items.iter().map(|x| (x.memory.id.clone(), x.confidence)))
            .find(|(id, _)| id == "memory_2")
    };
    let (_, fresh) = evidence_at("2026-11-20T10:00:00Z").expect("evidence on the day");
    let (_, later) = evidence_at("2026-12-20T10:00:00Z").expect("evidence a month later");
    assert!(fresh >= 0.3 && later < 0.3 && later > 0.0, "decayed, not dropped: {fresh} → {later}");
}
