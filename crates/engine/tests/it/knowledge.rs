//! Facts and documents: write-back policy, resolution, time queries, contradictions, documents,
//! refusals that change nothing, and reprojection.

use ctxgraph::{
    DocumentFormat, DocumentInput, Engine, EntityInput, Error, FactInput, FactQuery, IngestOutcome,
    NodeKey, ObjectInput, Resolution,
};
use proptest::prelude::*;
use serde_json::json;

use crate::{dump, engine};

fn claim(subject: &str, predicate: &str, object: ObjectInput) -> FactInput {
    let mut f = FactInput::new(EntityInput::named(subject), predicate, object);
    f.asserted_at = Some("2026-05-01T09:00:00Z".into());
    f
}

fn person(name: &str) -> EntityInput {
    EntityInput::typed(name, "person")
}

/// Alice, Bob, Carol (users), the `read_file` tool, the `postgres` service and a concept `alice`.
fn seeded() -> (tempfile::TempDir, Engine) {
    let (dir, mut e) = engine();
    let line = json!({
        "event_id": "e1", "event_type": "tool.execute", "occurred_at": "2026-05-01T08:00:00Z",
        "session_id": "s1", "agent_id": "planner", "trace_id": "t1", "tool_name": "read_file",
        "entities": [
            {"name": "Alice", "entity_type": "person"}, {"name": "Bob", "entity_type": "user"},
            {"name": "Carol", "entity_type": "user"}, {"name": "Postgres", "entity_type": "service"},
            {"name": "Project Atlas", "entity_type": "project"},
        ],
    });
    let r = e.ingest_jsonl(line.to_string().as_bytes(), &Default::default(), &mut |_| {}).unwrap();
    assert_eq!(r.accepted, 1);
    (dir, e)
}

fn codes(err: Error) -> Vec<&'static str> {
    let Error::Validation(v) = err else { panic!("expected a validation error, got {err}") };
    v.violations.iter().map(|v| v.rule).collect()
}

#[test]
fn same_claim_merges_by_noisy_or_and_sources_accumulate() {
    let (_d, mut e) = seeded();
    let mut a = claim("alice", "depends_on", ObjectInput::Entity(EntityInput::named("postgres")));
    a.confidence = Some(0.6);
    a.source = Some("standup 2026-05-01".into());
    let first = e.record_fact(&a).unwrap();
    assert!(matches!(first.outcome, IngestOutcome::New(_)));
    assert_eq!(first.fact_id, "user:alice|depends_on|service:postgres");
    assert_eq!(first.subject.via, "name");
    // The same source repeating the claim is no new evidence.
    let again = e.record_fact(&a).unwrap();
    assert!(matches!(again.outcome, IngestOutcome::Duplicate(_)));
    let mut b = a.clone();
    b.confidence = Some(0.5);
    b.source = Some("https://wiki.example/atlas".into());
    e.record_fact(&b).unwrap();
    let facts = e.owner_reader().unwrap().facts(&FactQuery::default()).unwrap();
    assert_eq!(facts.len(), 1);
    let f = &facts[0];
    assert!((f.confidence - 0.8).abs() < 1e-12, "1 - 0.4 * 0.5, got {}", f.confidence);
    assert_eq!(f.claims, 2);
    assert_eq!(f.claim_confidences, [0.5, 0.6]);
    assert_eq!(f.sources, ["https://wiki.example/atlas", "standup 2026-05-01"]);
}

#[test]
fn a_single_valued_predicate_keeps_both_objects_as_a_contradiction_until_one_is_retracted() {
    let (_d, mut e) = seeded();
    let mut bob = claim("Alice", "reports_to", ObjectInput::Entity(EntityInput::named("Bob")));
    bob.confidence = Some(0.9);
    bob.source = Some("org chart".into());
    let bob = e.record_fact(&bob).unwrap();
    let mut carol = claim("Alice", "reports_to", ObjectInput::Entity(EntityInput::named("carol")));
    carol.confidence = Some(0.4);
    let carol = e.record_fact(&carol).unwrap();
    // A multi-valued predicate never contradicts.
    e.record_fact(&claim("Alice", "tagged", ObjectInput::Literal(json!("oncall")))).unwrap();
    e.record_fact(&claim("Alice", "tagged", ObjectInput::Literal(json!("backend")))).unwrap();

    let snap = e.owner_reader().unwrap();
    let found = snap.contradictions(None).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].predicate, "reports_to");
    assert_eq!(found[0].subject.id, "user:alice");
    let ids: Vec<_> = found[0].facts.iter().map(|f| f.fact_id.as_str()).collect();
    assert_eq!(ids, [bob.fact_id.as_str(), carol.fact_id.as_str()], "most confident first");
    assert_eq!(found[0].facts[0].sources, ["org chart"]);
    let about = snap.facts_about("user:alice", None).unwrap();
    assert_eq!(about.len(), 4);
    let reports: Vec<_> = about.iter().filter(|f| f.predicate == "reports_to").collect();
    assert!(reports.iter().all(|f| f.contradicted_by.len() == 1));
    drop(snap);

    e.retract_fact(&carol.fact_id, Some("reorg undone"), Some("2026-06-01")).unwrap();
    let snap = e.owner_reader().unwrap();
    assert!(snap.contradictions(None).unwrap().is_empty());
    assert_eq!(snap.contradictions(Some("2026-05-15T00:00:00.000Z")).unwrap().len(), 1);
    let now = snap
        .facts(&FactQuery { predicate: Some("reports_to".into()), ..Default::default() })
        .unwrap();
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].object.as_ref().unwrap().id, "user:bob");
    let all = FactQuery { include_inactive: true, ..Default::default() };
    let retracted: Vec<_> = snap.facts(&all).unwrap().into_iter().filter(|f| !f.active).collect();
    assert_eq!(retracted[0].retraction_reason.as_deref(), Some("reorg undone"));
    // The object side finds it too.
    assert_eq!(snap.facts_about("user:carol", None).unwrap().len(), 1);
}

#[test]
fn validity_windows_answer_what_was_true_on_a_date() {
    let (_d, mut e) = seeded();
    let mut f =
        claim("Project Atlas", "blocked_by", ObjectInput::Entity(EntityInput::named("Postgres")));
    f.valid_from = Some("2026-03-01".into());
    f.valid_to = Some("2026-04-01".into());
    e.record_fact(&f).unwrap();
    let snap = e.owner_reader().unwrap();
    let at = |t: &str| {
        let q = FactQuery { as_of: ctxgraph::parse_time(t), ..Default::default() };
        snap.facts(&q).unwrap().len()
    };
    assert_eq!(at("2026-02-28"), 0);
    assert_eq!(at("2026-03-01"), 1);
    assert_eq!(at("2026-03-31T23:59:59Z"), 1);
    assert_eq!(at("2026-04-01"), 0, "valid_to is exclusive");
    assert_eq!(snap.facts(&FactQuery::default()).unwrap().len(), 0, "not true now");
}

#[test]
fn names_resolve_by_alias_forms_and_ambiguity_is_reported_not_guessed() {
    let (_d, mut e) = seeded();
    let resolve = |e: &Engine, name: &str, t: Option<&str>| {
        e.resolve_entity(
            &ctxgraph::Principal::local(),
            &EntityInput { name: name.into(), entity_type: t.map(Into::into) },
        )
        .unwrap()
    };
    let via = |r: Resolution| match r {
        Resolution::Resolved(x, _) => (x.id, x.via),
        other @ (Resolution::Unknown | Resolution::Ambiguous(_)) => panic!("{other:?}"),
    };
    assert_eq!(via(resolve(&e, "tool:read_file", None)), ("tool:read_file".into(), "id".into()));
    assert_eq!(via(resolve(&e, "  ALICE ", None)), ("user:alice".into(), "name".into()));
    assert_eq!(via(resolve(&e, "ReadFile", None)), ("tool:read_file".into(), "skeleton".into()));
    assert_eq!(
        via(resolve(&e, "Atlas Project", None)),
        ("project:project atlas".into(), "word_order".into())
    );
    assert_eq!(via(resolve(&e, "Postgress", None)), ("service:postgres".into(), "one_edit".into()));
    assert_eq!(via(resolve(&e, "Dave", Some("person"))), ("user:dave".into(), "created".into()));
    assert_eq!(resolve(&e, "Dave", None), Resolution::Unknown);

    // A second `alice`, of another type: the bare name is now ambiguous.
    e.record_fact(&claim(
        "Alice",
        "tagged",
        ObjectInput::Entity(EntityInput::typed("alice", "concept")),
    ))
    .unwrap();
    let Resolution::Ambiguous(list) = resolve(&e, "alice", None) else { panic!() };
    let ids: Vec<_> = list.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["user:alice", "concept:alice"]);
    assert_eq!(via(resolve(&e, "alice", Some("person"))), ("user:alice".into(), "name".into()));
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let (_d, mut e) = seeded();
    e.record_fact(&claim(
        "alice",
        "tagged",
        ObjectInput::Entity(EntityInput::typed("Alice", "concept")),
    ))
    .unwrap();
    let before = (dump(&e), e.owner_reader().unwrap().checkpoints().unwrap());
    let bob = || ObjectInput::Entity(EntityInput::named("Bob"));

    assert_eq!(
        codes(e.record_fact(&claim("Bob", "likes", bob())).unwrap_err()),
        ["fact.unknown_predicate"]
    );
    let mut high = claim("Bob", "tagged", ObjectInput::Literal(json!("x")));
    high.confidence = Some(1.5);
    assert_eq!(codes(e.record_fact(&high).unwrap_err()), ["fact.confidence_range"]);
    high.confidence = Some(f64::NAN);
    assert_eq!(codes(e.record_fact(&high).unwrap_err()), ["fact.confidence_range"]);
    let err = e.record_fact(&claim("alice", "reports_to", bob())).unwrap_err();
    assert!(
        err.to_string().contains("user:alice") && err.to_string().contains("concept:alice"),
        "{err}"
    );
    assert_eq!(codes(err), ["fact.ambiguous_entity"]);
    assert_eq!(
        codes(e.record_fact(&claim("Zed", "reports_to", bob())).unwrap_err()),
        ["fact.unknown_entity"]
    );
    let mut typo_type = claim("Bob", "reports_to", bob());
    typo_type.subject = EntityInput::typed("Zed", "persn");
    assert_eq!(codes(e.record_fact(&typo_type).unwrap_err()), ["schema.enum"]);
    let mut cites = claim("Bob", "tagged", ObjectInput::Literal(json!("x")));
    cites.cites = Some("doc-000000000000-000000000000/t0".into());
    assert_eq!(codes(e.record_fact(&cites).unwrap_err()), ["fact.unknown_sentence"]);
    // Every problem at once.
    let mut many = claim("Zed", "likes", bob());
    many.confidence = Some(-1.0);
    assert_eq!(
        codes(e.record_fact(&many).unwrap_err()),
        ["fact.unknown_entity", "fact.unknown_predicate", "fact.confidence_range"]
    );
    assert_eq!(
        codes(e.retract_fact("user:bob|tagged|=\"x\"", None, None).unwrap_err()),
        ["fact.unknown_fact"]
    );
    // A literal where the predicate wants an entity.
    let literal = claim("Bob", "reports_to", ObjectInput::Literal(json!("Carol")));
    assert_eq!(codes(e.record_fact(&literal).unwrap_err()), ["fact.object_kind"]);

    assert_eq!((dump(&e), e.owner_reader().unwrap().checkpoints().unwrap()), before);
}

const NOTES: &str = "# Atlas standup\n\nAlice said the ReadFile tool is slow. Bob agreed.\n\n## Decisions\n\n- Atlas depends on Postgres.\n";

fn doc(text: &str) -> DocumentInput {
    DocumentInput {
        url: "notes/atlas.md".into(),
        text: text.into(),
        format: DocumentFormat::Markdown,
        title: None,
        extract: false,
        ingested_at: Some("2026-05-01T10:00:00Z".into()),
    }
}

#[test]
fn documents_split_mention_version_and_are_cited() {
    let (_d, mut e) = seeded();
    let first = e.add_document(&doc(NOTES)).unwrap();
    assert!(matches!(first.outcome, IngestOutcome::New(_)));
    assert_eq!((first.version, first.sentences), (1, 3));
    let again = e.add_document(&doc(NOTES)).unwrap();
    assert!(matches!(again.outcome, IngestOutcome::Duplicate(_)), "same URL and content: a no-op");

    let snap = e.owner_reader().unwrap();
    let view = snap.document("notes/atlas.md").unwrap().unwrap();
    assert_eq!(view.summary.title.as_deref(), Some("Atlas standup"));
    let sentences: Vec<_> = view.sections.iter().flat_map(|s| &s.paragraphs).flatten().collect();
    let texts: Vec<_> = sentences.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        ["Alice said the ReadFile tool is slow.", "Bob agreed.", "Atlas depends on Postgres."]
    );
    let mentioned = |i: usize| {
        sentences[i]
            .mentions
            .iter()
            .map(|m| (m.entity_id.as_str(), m.via.as_str()))
            .collect::<Vec<_>>()
    };
    assert_eq!(mentioned(0), [("tool:read_file", "skeleton"), ("user:alice", "name")]);
    assert_eq!(mentioned(2), [("service:postgres", "name")]);
    let cited = sentences[2].sentence_id.clone();
    drop(snap);

    let mut f =
        claim("Project Atlas", "depends_on", ObjectInput::Entity(EntityInput::named("postgres")));
    f.cites = Some(cited.clone());
    f.confidence = Some(0.7);
    f.source = Some("notes/atlas.md".into());
    e.record_fact(&f).unwrap();
    let facts = e.owner_reader().unwrap().facts_about("service:postgres", None).unwrap();
    assert_eq!(facts[0].citations, [(cited, 0.7, "Atlas depends on Postgres.".to_owned())]);

    let second = e.add_document(&doc(&format!("{NOTES}- Carol owns the migration.\n"))).unwrap();
    assert_eq!((second.version, second.previous.as_deref()), (2, Some(first.document_id.as_str())));
    let snap = e.owner_reader().unwrap();
    let latest = snap.document("notes/atlas.md").unwrap().unwrap();
    assert_eq!(latest.summary.document_id, second.document_id);
    assert_eq!(latest.summary.previous.as_deref(), Some(first.document_id.as_str()));
    let listed = snap.documents().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].next.as_deref(), Some(second.document_id.as_str()));
    assert!(snap.node(&NodeKey::new("Document", &first.document_id)).unwrap().is_some());
}

#[test]
fn the_extractor_adds_concepts_only_when_asked() {
    let (_d, mut e) = seeded();
    let mut d = doc("Kubernetes runs on Hetzner.\n");
    let plain = e.add_document(&d).unwrap();
    assert_eq!(plain.mentions, 0);
    d.url = "notes/infra.md".into();
    d.extract = true;
    let extracted = e.add_document(&d).unwrap();
    assert_eq!(extracted.mentions, 2);
    let snap = e.owner_reader().unwrap();
    let view = snap.document("notes/infra.md").unwrap().unwrap();
    let m = &view.sections[0].paragraphs[0][0].mentions;
    assert!(
        m.iter().all(|m| m.via == "extracted" && m.confidence == ctxgraph::EXTRACTED_CONFIDENCE)
    );
    assert!(snap.node(&NodeKey::new("Entity", "concept:kubernetes")).unwrap().is_some());
}

/// One write of the property tests.
#[derive(Debug, Clone)]
enum Op {
    Claim {
        subject: usize,
        predicate: usize,
        object: usize,
        confidence: u8,
        source: u8,
        literal: bool,
    },
    Retract {
        pick: usize,
        day: u8,
    },
    Document {
        text: usize,
        url: u8,
    },
}

const NAMES: &[&str] = &["Alice", "Bob", "Carol", "Postgres", "Project Atlas"];
const PREDICATES: &[&str] = &["reports_to", "depends_on", "tagged", "belongs_to", "mentioned_in"];
const TEXTS: &[&str] = &[
    "# A\n\nAlice met Bob. Carol left.\n",
    "Postgres is slow.\n\nProject Atlas depends on it.",
    "# B\n- one\n- two\n```\ncode\n```\n",
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..NAMES.len(), 0..PREDICATES.len(), 0..NAMES.len(), 0u8..=10, 0u8..3, any::<bool>())
            .prop_map(|(subject, predicate, object, confidence, source, literal)| Op::Claim {
                subject, predicate, object, confidence, source, literal
            }),
        1 => (any::<usize>(), 1u8..28).prop_map(|(pick, day)| Op::Retract { pick, day }),
        1 => (0..TEXTS.len(), 0u8..2).prop_map(|(text, url)| Op::Document { text, url }),
    ]
}

fn apply(e: &mut Engine, op: &Op) {
    match op {
        Op::Claim { subject, predicate, object, confidence, source, literal } => {
            let p = PREDICATES[*predicate];
            // `tagged` takes any object: a literal, a slot value or a declared type.
            let object = if *literal && p == "tagged" {
                match object % 3 {
                    0 => ObjectInput::Literal(json!(NAMES[*object])),
                    1 => ObjectInput::SlotValue {
                        slot: "Genre".into(),
                        value: NAMES[*object].into(),
                    },
                    _ => {
                        e.declare_type("Film", None).unwrap();
                        ObjectInput::Type("film".into())
                    }
                }
            } else {
                ObjectInput::Entity(person(NAMES[*object]))
            };
            let mut f = FactInput::new(person(NAMES[*subject]), p, object);
            f.confidence = Some(f64::from(*confidence) / 10.0);
            f.source = Some(format!("source {source}"));
            f.asserted_at = Some(format!("2026-05-{:02}T09:00:00Z", confidence + 1));
            e.record_fact(&f).unwrap();
        }
        Op::Retract { pick, day } => {
            let facts = e
                .owner_reader()
                .unwrap()
                .facts(&FactQuery { include_inactive: true, ..Default::default() })
                .unwrap();
            if !facts.is_empty() {
                let id = facts[pick % facts.len()].fact_id.clone();
                e.retract_fact(&id, Some("wrong"), Some(&format!("2026-06-{day:02}"))).unwrap();
            }
        }
        Op::Document { text, url } => {
            let mut d = doc(TEXTS[*text]);
            d.url = format!("notes/{url}.md");
            e.add_document(&d).unwrap();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Facts (with entity, literal, slot-value and type objects), retractions and documents
    /// rebuilt from the log equal the incremental graph.
    #[test]
    fn reprojecting_facts_and_documents_equals_the_incremental_graph(ops in prop::collection::vec(op(), 1..24)) {
        let (_d, mut e) = seeded();
        for op in &ops {
            apply(&mut e, op);
        }
        let incremental = dump(&e);
        e.reproject(&mut |_, _| {}).unwrap();
        prop_assert_eq!(incremental, dump(&e));
    }

    /// The merged fact (confidence, sources, validity, claim times) does not depend on the order
    /// of its claims.
    #[test]
    fn fact_merge_is_order_independent(
        claims in prop::collection::vec((0u8..=10, 0u8..4, proptest::option::of(1u8..28)), 1..8),
        seed in any::<u64>(),
    ) {
        let run = |order: &[(u8, u8, Option<u8>)]| {
            let (_d, mut e) = seeded();
            for (confidence, source, from) in order {
                let mut f = claim("Alice", "depends_on", ObjectInput::Entity(EntityInput::named("Postgres")));
                f.confidence = Some(f64::from(*confidence) / 10.0);
                f.source = Some(format!("source {source} {confidence}"));
                f.valid_from = from.map(|d| format!("2026-01-{d:02}"));
                f.asserted_at = Some(format!("2026-05-{:02}T09:00:00Z", confidence + 1));
                e.record_fact(&f).unwrap();
            }
            let snap = e.owner_reader().unwrap();
            snap.node(&NodeKey::new("Fact", "user:alice|depends_on|service:postgres")).unwrap()
        };
        let mut shuffled = claims.clone();
        // A deterministic shuffle from the seed.
        let mut s = seed;
        for i in (1..shuffled.len()).rev() {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            shuffled.swap(i, (s >> 33) as usize % (i + 1));
        }
        prop_assert_eq!(run(&claims), run(&shuffled));
    }
}

#[test]
fn the_log_restores_facts_and_documents_into_a_fresh_store() {
    let (_d, mut e) = seeded();
    let notes = e.add_document(&doc(NOTES)).unwrap();
    let mut f = claim("alice", "reports_to", ObjectInput::Entity(EntityInput::named("bob")));
    f.cites = Some(format!("{}/t1", notes.document_id));
    let fact = e.record_fact(&f).unwrap();
    e.retract_fact(&fact.fact_id, Some("moved"), Some("2026-07-01")).unwrap();
    e.add_document(&doc(&format!("{NOTES}\nMore.\n"))).unwrap();
    let backup: String = e
        .owner_reader()
        .unwrap()
        .log(1, usize::MAX >> 2)
        .unwrap()
        .iter()
        .map(|entry| format!("{}\n", entry.body))
        .collect();

    let (_d2, mut restored) = engine();
    let report =
        restored.ingest_jsonl(backup.as_bytes(), &Default::default(), &mut |_| {}).unwrap();
    assert_eq!(report.rejections.len(), 0, "{:?}", report.rejections);
    assert_eq!(dump(&restored), dump(&e));

    // A retraction of a fact the store does not have is refused on this path too.
    let stray = json!({"record_type": "fact_retraction", "fact_id": "user:zed|tagged|=\"x\"", "retracted_at": "2026-07-01"});
    let report = restored
        .ingest_jsonl(stray.to_string().as_bytes(), &Default::default(), &mut |_| {})
        .unwrap();
    assert_eq!(report.rejections.len(), 1);
    assert!(format!("{:?}", report.rejections[0]).contains("fact.unknown_fact"));
}

#[test]
fn facts_since_a_time_are_those_claimed_then_or_later() {
    let (_d, mut e) = seeded();
    let mut old =
        claim("Project Atlas", "blocked_by", ObjectInput::Entity(EntityInput::named("Postgres")));
    old.asserted_at = Some("2026-05-01T09:00:00Z".into());
    e.record_fact(&old).unwrap();
    let mut new = claim("Alice", "reports_to", ObjectInput::Entity(person("Bob")));
    new.asserted_at = Some("2026-05-10T09:00:00Z".into());
    e.record_fact(&new).unwrap();
    let since = |e: &Engine, t: &str| {
        let q = FactQuery { since: ctxgraph::parse_time(t), ..Default::default() };
        let facts = e.owner_reader().unwrap().facts(&q).unwrap();
        facts.into_iter().map(|f| f.predicate).collect::<Vec<_>>()
    };
    assert_eq!(since(&e, "2026-05-01"), ["blocked_by", "reports_to"]);
    assert_eq!(since(&e, "2026-05-02"), ["reports_to"]);
    assert!(since(&e, "2026-05-11").is_empty());
    // Another claim of the fact later makes it one learnt since then.
    old.asserted_at = Some("2026-05-12T09:00:00Z".into());
    old.source = Some("standup".into());
    e.record_fact(&old).unwrap();
    assert_eq!(since(&e, "2026-05-11"), ["blocked_by"]);
}

/// A partial name finds the longer name it is part of, ranked below an exact name; a write never
/// attaches a near spelling or a partial name silently: with a type it is a new entity proposed
/// as a candidate for the same thing, without one an error names the near entity.
#[test]
fn partial_names_are_found_and_near_spellings_are_proposed_not_attached() {
    let (_d, mut e) = seeded();
    let mut smith =
        FactInput::new(person("Alice Smith"), "reports_to", ObjectInput::Entity(person("Bob")));
    smith.asserted_at = Some("2026-05-01T09:00:00Z".into());
    e.record_fact(&smith).unwrap();
    let resolve = |e: &Engine, name: &str| {
        e.resolve_entity(&ctxgraph::Principal::local(), &EntityInput::named(name)).unwrap()
    };
    // `Alice` is an entity itself: the exact name wins over the partial one.
    match resolve(&e, "alice") {
        Resolution::Resolved(x, score) => assert_eq!((x.via.as_str(), score), ("name", 1.0)),
        other @ (Resolution::Unknown | Resolution::Ambiguous(_)) => panic!("{other:?}"),
    }
    match resolve(&e, "Smith") {
        Resolution::Resolved(x, score) => {
            assert_eq!((x.id.as_str(), x.via.as_str()), ("user:alice smith", "partial"));
            assert!(score < 1.0);
        }
        other @ (Resolution::Unknown | Resolution::Ambiguous(_)) => panic!("{other:?}"),
    }
    // A near spelling with a type: a new entity, proposed as a candidate of the other.
    let mut smyth =
        FactInput::new(person("Alice Smyth"), "reports_to", ObjectInput::Entity(person("Bob")));
    smyth.asserted_at = Some("2026-05-02T09:00:00Z".into());
    let done = e.record_fact(&smyth).unwrap();
    assert_eq!(
        (done.subject.id.as_str(), done.subject.via.as_str()),
        ("user:alice smyth", "created")
    );
    let pairs = e.owner_reader().unwrap().entity_candidates(None, 10).unwrap();
    assert!(
        pairs.iter().any(|c| (c.a.id.as_str(), c.b.id.as_str()) == ("user:alice smith", "user:alice smyth")),
        "{pairs:?}"
    );
    // Without a type, an error that names it; nothing is written.
    let err = e
        .record_fact(&FactInput::new(
            EntityInput::named("Alice Smiht"),
            "tagged",
            ObjectInput::Literal(json!("y")),
        ))
        .unwrap_err();
    assert_eq!(codes(err), ["fact.near_entity"]);
}

/// An alias is a recorded claim (`also_known_as`, with its source and confidence): the name
/// resolves to its entity until the alias is retracted.
#[test]
fn an_alias_resolves_to_its_entity_until_retracted() {
    let (_d, mut e) = seeded();
    let mut alias = FactInput::new(
        EntityInput::named("alice"),
        "also-known-as",
        ObjectInput::Literal(json!("Ally")),
    );
    alias.source = Some("hr directory".into());
    alias.confidence = Some(0.9);
    let done = e.record_fact(&alias).unwrap();
    let resolve = |e: &Engine| {
        e.resolve_entity(&ctxgraph::Principal::local(), &EntityInput::named(" ALLY ")).unwrap()
    };
    match resolve(&e) {
        Resolution::Resolved(x, _) => {
            assert_eq!((x.id.as_str(), x.via.as_str()), ("user:alice", "alias"));
        }
        other @ (Resolution::Unknown | Resolution::Ambiguous(_)) => panic!("{other:?}"),
    }
    // The alias carries its provenance as any fact does.
    let about = e.owner_reader().unwrap().facts_about("user:alice", None).unwrap();
    let kept = about.iter().find(|f| f.predicate == "also_known_as").unwrap();
    assert_eq!(kept.sources, ["hr directory"]);
    e.retract_fact(&done.fact_id, Some("not her name"), None).unwrap();
    assert_eq!(resolve(&e), Resolution::Unknown);
}
