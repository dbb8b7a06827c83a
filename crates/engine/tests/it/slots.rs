//! Types, slots, checklists and goals: the write API, existence checks that change nothing,
//! `check_checklist`, `next_slot` against a hand-computed example, and the property tests
//! (slot confidence order-independent, reprojection equals incremental, gain ≥ 0).

use ctxgraph::{
    Cardinality, ChecklistDraft, EntityArg, GoalDraft, IngestOutcome, NextOptions, NodeKey,
    Projection, SlotSpecDraft, SpecRelation, SpecStatus, ValidRecord, information_gain,
    information_gain_with_unknown,
};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{GraphDump, dump, engine};

const FILMS: &str = r#"
name = "IdentifyFilm"
description = "What tells films apart"

[[slots]]
name = "film"
expect_labels = ["Film"]
relation = "INSTANCE_OF"
cardinality = "ONE"

[[slots]]
name = "genre"

[[slots]]
name = "era"
expect_labels = ["Era", "Decade"]

[[slots]]
name = "country"
required = false

[[slots]]
name = "actor"
required = false
cardinality = "MANY"
"#;

fn named(name: &str) -> EntityArg {
    EntityArg::Named { name: name.into(), entity_type: "concept".into() }
}

fn id(id: &str) -> EntityArg {
    EntityArg::Id(id.into())
}

fn new(outcome: IngestOutcome) -> u64 {
    match outcome {
        IngestOutcome::New(p) => p,
        IngestOutcome::Duplicate(p) => panic!("expected a new record, got a duplicate at {p}"),
    }
}

/// Four films: the worked example of the `slots` module docs.
///
/// | film | genre | era | country |
/// |---|---|---|---|
/// | A | drama | 1980s | us |
/// | B | drama | 1990s | us |
/// | C | comedy | 1980s | us |
/// | D | (unknown) | 1990s | us |
fn films(engine: &mut ctxgraph::Engine) {
    new(engine.declare_type("Film", Some("A motion picture")).unwrap());
    for (name, genre, era) in [
        ("A", Some("Drama"), "1980s"),
        ("B", Some("drama"), "1990s"),
        ("C", Some("comedy"), "1980s"),
        ("D", None, "1990s"),
    ] {
        new(engine.add_instance(&named(name), "film").unwrap());
        let e = id(&format!("concept:{}", name.to_lowercase()));
        if let Some(g) = genre {
            new(engine.set_slot(&e, "Genre", g, Some(0.9), Some("catalogue")).unwrap());
        }
        new(engine.set_slot(&e, "decade", era, None, None).unwrap());
        new(engine.set_slot(&e, "country", "US", Some(0.5), None).unwrap());
    }
    new(engine.define_checklist_file(FILMS).unwrap());
}

fn candidates() -> Vec<String> {
    ["a", "b", "c", "d"].iter().map(|n| format!("concept:{n}")).collect()
}

#[test]
fn next_slot_matches_the_hand_computed_information_gain() {
    let (_dir, mut engine) = engine();
    films(&mut engine);
    let report = engine
        .owner_reader()
        .unwrap()
        .next_slot("identifyfilm", &candidates(), &NextOptions::default())
        .unwrap()
        .unwrap();
    // H(C) = log2 4 = 2 bits.
    assert_eq!(report.entropy, 2.0);
    let gains: Vec<(&str, f64, usize)> =
        report.ranking.iter().map(|g| (g.spec.name.as_str(), g.gain, g.unknown)).collect();
    // era (labels era, decade): {A, C} 1980s, {B, D} 1990s: 2 − (2/4·1 + 2/4·1) = 1.
    // genre: {A, B} drama, {C} comedy, D without a value, which is no answer: D stays whatever
    // the answer, so 2 − (2/3·log2 3 + 1/3·log2 2) ≈ 0.61.
    // film (INSTANCE_OF Film): all four: 2 − 4/4·2 = 0. country: all us: 0 (required = false,
    // so after film on the tie). actor: no value at all: 0, and the most unknowns.
    let genre = 2.0 - (1.0 / 3.0 * 2f64.log2() + 2.0 / 3.0 * 3f64.log2());
    assert_eq!(gains[0], ("era", 1.0, 0));
    assert_eq!((gains[1].0, gains[1].2), ("genre", 1));
    assert!((gains[1].1 - genre).abs() < 1e-12, "{gains:?}");
    assert_eq!(&gains[2..], [("film", 0.0, 0), ("country", 0.0, 0), ("actor", 0.0, 4)]);
    assert_eq!(report.best().unwrap().spec.name, "era", "a clean split beats one with a hole");
    let best = &report.ranking[1];
    assert_eq!(best.spec.name, "genre");
    let groups: Vec<(Option<&str>, Vec<&str>)> = best
        .groups
        .iter()
        .map(|g| (g.answer.as_deref(), g.candidates.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(
        groups,
        [
            (Some("comedy"), vec!["concept:c"]),
            (Some("Drama"), vec!["concept:a", "concept:b"]),
            (None, vec!["concept:d"]),
        ],
        "answers compare normalised and show the smallest spelling; the unknown group is last"
    );

    // Among A and C (both 1980s), only genre splits; among A and B, genre does not.
    let ac = ["concept:a".to_owned(), "concept:c".to_owned()];
    let r = engine
        .owner_reader()
        .unwrap()
        .next_slot("IdentifyFilm", &ac, &NextOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!((r.best().unwrap().spec.name.as_str(), r.best().unwrap().gain), ("genre", 1.0));
    let ab = ["concept:a".to_owned(), "concept:b".to_owned()];
    let r = engine
        .owner_reader()
        .unwrap()
        .next_slot("IdentifyFilm", &ab, &NextOptions::default())
        .unwrap()
        .unwrap();
    assert_eq!(r.best().unwrap().spec.name, "era");
    // One candidate: nothing to split.
    let r = engine
        .owner_reader()
        .unwrap()
        .next_slot("IdentifyFilm", &ac[..1], &NextOptions::default())
        .unwrap()
        .unwrap();
    assert!(r.best().is_none());
    assert!(r.ranking.iter().all(|g| g.gain == 0.0));
}

#[test]
fn check_lists_satisfied_missing_and_cardinality_violations() {
    let (_dir, mut engine) = engine();
    films(&mut engine);
    let report = engine
        .owner_reader()
        .unwrap()
        .check_checklist("IdentifyFilm", "concept:d")
        .unwrap()
        .unwrap();
    let status: Vec<(&str, SpecStatus)> =
        report.specs.iter().map(|s| (s.spec.name.as_str(), s.status)).collect();
    assert_eq!(
        status,
        [
            ("film", SpecStatus::Satisfied),
            ("genre", SpecStatus::Missing),
            ("era", SpecStatus::Satisfied),
            ("country", SpecStatus::Satisfied),
            ("actor", SpecStatus::Missing),
        ]
    );
    assert!(!report.complete(), "genre is required");
    assert_eq!(report.specs[2].values[0].slot, "decade", "era is satisfied by its label decade");

    // A second distinct era breaks cardinality one; a second actor is fine (many).
    engine.set_slot(&id("concept:a"), "era", "1990s", Some(0.2), None).unwrap();
    engine.set_slot(&id("concept:a"), "actor", "Sigourney Weaver", None, None).unwrap();
    engine.set_slot(&id("concept:a"), "actor", "Ian Holm", None, None).unwrap();
    let report = engine
        .owner_reader()
        .unwrap()
        .check_checklist("identifyfilm", "concept:a")
        .unwrap()
        .unwrap();
    assert_eq!(report.specs[2].status, SpecStatus::TooMany);
    assert_eq!(report.specs[4].status, SpecStatus::Satisfied);
    assert_eq!(report.specs[4].values.len(), 2);
    assert!(!report.complete(), "a cardinality violation makes it incomplete");

    let report = engine
        .owner_reader()
        .unwrap()
        .check_checklist("identifyfilm", "concept:b")
        .unwrap()
        .unwrap();
    assert!(report.complete(), "only optional actor is missing");
}

#[test]
fn slot_values_keep_the_highest_confidence_and_every_source() {
    let (_dir, mut engine) = engine();
    new(engine
        .set_slot(&named("Alien"), "genre", "Science Fiction", Some(0.6), Some("imdb"))
        .unwrap());
    let e = id("concept:alien");
    new(engine.set_slot(&e, "GENRE", "science  fiction", Some(0.9), Some("wiki")).unwrap());
    new(engine.set_slot(&e, "genre", "Science Fiction", Some(0.3), Some("blog")).unwrap());
    // The same observation again is a duplicate.
    let again = engine.set_slot(&e, "genre", "Science Fiction", Some(0.3), Some("blog")).unwrap();
    assert!(matches!(again, IngestOutcome::Duplicate(_)));
    let slots = engine.owner_reader().unwrap().slots_of("concept:alien").unwrap().unwrap().0;
    assert_eq!(slots.len(), 1, "{slots:?}");
    assert_eq!(slots[0].slot, "genre");
    assert_eq!(slots[0].value_key, "science fiction");
    assert_eq!(slots[0].value, "Science Fiction", "the smallest spelling");
    assert_eq!(slots[0].confidence, Some(0.9));
    assert_eq!(slots[0].sources, ["blog", "imdb", "wiki"]);
    // Setting a named entity that exists already names it by id: no new mention.
    let entity =
        engine.owner_reader().unwrap().node(&NodeKey::new("Entity", "concept:alien")).unwrap();
    assert_eq!(entity.unwrap().props["mention_count"], json!(1));
    new(engine.set_slot(&named("alien"), "era", "1970s", None, None).unwrap());
    let entity =
        engine.owner_reader().unwrap().node(&NodeKey::new("Entity", "concept:alien")).unwrap();
    assert_eq!(entity.unwrap().props["mention_count"], json!(1));
}

#[test]
fn checklists_from_the_api_and_from_a_file_are_the_same_record() {
    let (_dir, mut engine) = engine();
    let spec = |name: &str, labels: &[&str], relation, required, cardinality| SlotSpecDraft {
        name: name.into(),
        expect_labels: labels.iter().map(|s| s.to_string()).collect(),
        relation,
        required,
        cardinality,
        cost: 1.0,
    };
    let draft = ChecklistDraft {
        name: "IdentifyFilm".into(),
        description: Some("What tells films apart".into()),
        slots: vec![
            spec("film", &["Film"], SpecRelation::InstanceOf, true, Cardinality::One),
            spec("genre", &[], SpecRelation::HasSlot, true, Cardinality::One),
            spec("era", &["Era", "Decade"], SpecRelation::HasSlot, true, Cardinality::One),
            spec("country", &[], SpecRelation::HasSlot, false, Cardinality::One),
            spec("actor", &[], SpecRelation::HasSlot, false, Cardinality::Many),
        ],
    };
    // A cost that has no JSON form is refused, not read as the default.
    let mut nan = draft.clone();
    nan.slots[1].cost = f64::NAN;
    let err = engine.define_checklist(&nan).unwrap_err();
    assert_eq!(violation(&err).2, "checklist.cost");
    let position = new(engine.define_checklist(&draft).unwrap());
    assert_eq!(engine.define_checklist_file(FILMS).unwrap(), IngestOutcome::Duplicate(position));
    let json_file = json!({"name": "identifyfilm", "slots": [{"name": "x"}]}).to_string();
    let err = engine.define_checklist_file(&json_file).unwrap_err();
    assert_eq!(err.code(), "log.conflict", "{err}");
    let list = engine.owner_reader().unwrap().checklists().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        list[0].specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["film", "genre", "era", "country", "actor"]
    );
    assert_eq!(list[0].specs[2].expect_labels, ["era", "decade"]);
}

#[test]
fn goals_link_users_and_checklists() {
    let (_dir, mut engine) = engine();
    new(engine.define_checklist_file(FILMS).unwrap());
    let draft = GoalDraft {
        name: "Watch the AFI top 100".into(),
        user: EntityArg::Named { name: "Alice".into(), entity_type: "user".into() },
        description: None,
        horizon: Some("this year".into()),
        priority: Some(1),
        influences: vec!["IdentifyFilm".into()],
        prefers: Vec::new(),
    };
    let position = new(engine.add_goal(&draft).unwrap());
    // The user exists now, so the same goal names it by id: still the same goal.
    assert_eq!(engine.add_goal(&draft).unwrap(), IngestOutcome::Duplicate(position));
    let goals = engine.owner_reader().unwrap().goals(Some("user:alice")).unwrap();
    assert_eq!(goals.len(), 1);
    assert_eq!(goals[0].influences, ["identifyfilm"]);
    assert_eq!(goals[0].priority, Some(1));
    assert!(engine.owner_reader().unwrap().goals(Some("user:bob")).unwrap().is_empty());
    let changed = GoalDraft { priority: Some(2), ..draft };
    assert_eq!(engine.add_goal(&changed).unwrap_err().code(), "log.conflict");
}

fn head(engine: &ctxgraph::Engine) -> u64 {
    engine.owner_reader().unwrap().checkpoints().unwrap().log_length
}

/// The one violation of `err`: (path, value, rule).
fn violation(err: &ctxgraph::Error) -> (String, Option<String>, &'static str) {
    let ctxgraph::Error::Validation(v) = err else { panic!("not a validation error: {err}") };
    assert_eq!(v.violations.len(), 1, "{v}");
    let v = &v.violations[0];
    (v.path.clone(), v.value.clone(), v.rule)
}

#[test]
fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let (_dir, mut engine) = engine();
    films(&mut engine);
    let before: GraphDump = dump(&engine);
    let position = head(&engine);
    let s = |v: &str| Some(format!("\"{v}\""));

    let err = engine.set_slot(&id("concept:a"), "genre", "x", Some(1.5), None).unwrap_err();
    assert_eq!(
        violation(&err),
        ("$.confidence".into(), Some("1.5".into()), "slots.confidence_range")
    );
    let err = engine.set_slot(&id("concept:a"), "genre", "x", Some(f64::NAN), None).unwrap_err();
    assert_eq!(violation(&err).2, "slots.confidence_range");
    let err = engine.set_slot(&id("concept:ghost"), "genre", "x", None, None).unwrap_err();
    assert_eq!(violation(&err), ("$.entity".into(), s("concept:ghost"), "slots.unknown_entity"));
    let ghost = EntityArg::Named { name: "ghost".into(), entity_type: "gadget".into() };
    let err = engine.set_slot(&ghost, "genre", "x", None, None).unwrap_err();
    assert_eq!(violation(&err), ("$.entity.entity_type".into(), s("gadget"), "schema.enum"));
    let err = engine.add_instance(&id("concept:a"), "Movie").unwrap_err();
    assert_eq!(violation(&err), ("$.type".into(), s("movie"), "slots.unknown_type"));
    // A new entity with an unknown type changes nothing either: not even the entity.
    let err = engine.add_instance(&named("E"), "Movie").unwrap_err();
    assert_eq!(violation(&err).2, "slots.unknown_type");

    let bad_cardinality = "name = \"x\"\n[[slots]]\nname = \"a\"\ncardinality = \"TWO\"\n";
    let err = engine.define_checklist_file(bad_cardinality).unwrap_err();
    assert_eq!(violation(&err), ("$.slots[0].cardinality".into(), s("TWO"), "schema.enum"));
    let err = engine.define_checklist_file("name = \"x\" slots").unwrap_err();
    assert_eq!(violation(&err).2, "checklist.syntax");
    let err = engine.define_checklist_file("{\"name\": \"x\", \"slots\": []}").unwrap_err();
    assert_eq!(violation(&err), ("$.slots".into(), Some("0 items".into()), "checklist.slot_count"));

    let goal = |user: EntityArg, influences: &[&str]| GoalDraft {
        name: "g".into(),
        user,
        description: None,
        horizon: None,
        priority: None,
        influences: influences.iter().map(|s| s.to_string()).collect(),
        prefers: Vec::new(),
    };
    let alice = EntityArg::Named { name: "alice".into(), entity_type: "user".into() };
    let err = engine.add_goal(&goal(alice, &["IdentifyFilm", "Nope"])).unwrap_err();
    assert_eq!(violation(&err), ("$.influences[1]".into(), s("nope"), "goal.unknown_checklist"));
    let err = engine.add_goal(&goal(id("concept:a"), &[])).unwrap_err();
    assert_eq!(violation(&err), ("$.user".into(), Some("concept:a".into()), "goal.user_type"));

    // JSONL ingestion obeys the same checks.
    let line =
        json!({"record_type": "slot", "entity": "concept:ghost", "slot": "genre", "value": "x"});
    let report = engine
        .ingest_jsonl(format!("{line}\n").as_bytes(), &Default::default(), &mut |_| {})
        .unwrap();
    assert_eq!((report.accepted, report.rejections.len()), (0, 1));
    assert_eq!(report.rejections[0].code, "slots.unknown_entity");

    // Unknown checklists and entities are errors of the reads too.
    let snap = engine.owner_reader().unwrap();
    let err = snap.check_checklist("Nope", "concept:a").unwrap_err();
    assert_eq!(violation(&err), ("checklist".into(), s("Nope"), "checklist.unknown"));
    let err = snap.check_checklist("IdentifyFilm", "concept:ghost").unwrap_err();
    assert_eq!(violation(&err).2, "slots.unknown_entity");
    let twice = ["concept:a".to_owned(), "concept:a".to_owned()];
    assert_eq!(
        violation(&snap.next_slot("IdentifyFilm", &twice, &NextOptions::default()).unwrap_err()).2,
        "checklist.duplicate_candidate"
    );
    assert_eq!(
        violation(&snap.next_slot("IdentifyFilm", &[], &NextOptions::default()).unwrap_err()).2,
        "checklist.no_candidates"
    );
    drop(snap);

    assert_eq!(head(&engine), position, "nothing was appended");
    assert_eq!(dump(&engine), before, "nothing in the graph changed");
}

#[test]
fn a_deferred_batch_sees_types_entities_and_checklists_declared_earlier_in_it() {
    let (_dir, mut engine) = engine();
    let lines = [
        json!({"record_type": "type", "name": "Film"}),
        json!({"record_type": "instance_of", "type": "film",
               "entity": {"name": "Alien", "entity_type": "concept", "at": "2026-11-20T09:00:00Z"}}),
        json!({"record_type": "slot", "entity": "concept:alien", "slot": "genre", "value": "scifi"}),
        json!({"record_type": "checklist", "name": "c", "slots": [{"name": "genre"}]}),
        json!({"record_type": "goal", "name": "g", "influences": ["c"],
               "user": {"name": "Alice", "entity_type": "user", "at": "2026-11-20T09:00:00Z"}}),
        json!({"record_type": "goal", "name": "h", "user": "user:alice"}),
    ];
    let records: Vec<ValidRecord> =
        lines.iter().map(|l| engine.validate(&l.to_string()).unwrap()).collect();
    let outcomes = engine.ingest_batch(&records, Projection::Deferred, true).unwrap();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    engine.catch_up(&mut |_, _| {}).unwrap();
    let snap = engine.owner_reader().unwrap();
    assert!(snap.check_checklist("c", "concept:alien").unwrap().unwrap().complete());
    assert_eq!(snap.goals(Some("user:alice")).unwrap().len(), 2);
}

/// Observations of slot values as records; `create` names the entity by `{name, entity_type,
/// at}` (a mention), otherwise by id.
fn observation_strategy() -> impl Strategy<Value = Vec<Value>> {
    let one = (
        0..3usize,
        0..2usize,
        0..3usize,
        0..=20u32,
        prop::option::of(0..3usize),
        any::<bool>(),
        0..3u32,
    );
    prop::collection::vec(one, 1..24).prop_map(|items| {
        items
            .into_iter()
            .map(|(e, slot, value, conf, source, create, at)| {
                let name = ["Alien", "Heat", "Amelie"][e];
                let entity = if create {
                    json!({"name": name, "entity_type": "concept",
                           "at": format!("2026-11-2{at}T09:00:00Z")})
                } else {
                    Value::String(format!("concept:{}", name.to_lowercase()))
                };
                let mut r = json!({
                    "record_type": "slot", "entity": entity, "slot": (["genre", "Era"][slot]),
                    "value": (["drama", "Drama", "comedy"][value]), "confidence": f64::from(conf) / 20.0,
                });
                if let Some(s) = source {
                    r["source"] = json!((["imdb", "wiki", "blog"][s]));
                }
                r
            })
            .collect()
    })
}

/// The entities the observations name, created by an event so that every id exists.
fn seed_entities(engine: &mut ctxgraph::Engine) {
    let event = json!({
        "event_id": "seed", "event_type": "observation.input", "occurred_at": "2026-11-21T09:00:00Z",
        "session_id": "s", "agent_id": "a", "trace_id": "t",
        "entities": [{"name": "Alien", "entity_type": "concept"}, {"name": "Heat", "entity_type": "concept"},
                     {"name": "Amelie", "entity_type": "concept"}],
    });
    let r = engine.validate(&event.to_string()).unwrap();
    engine.ingest_batch(&[r], Projection::Inline, false).unwrap();
}

fn strip_positions(mut d: GraphDump) -> GraphDump {
    for n in &mut d.nodes {
        n.props.remove("global_position");
    }
    d
}

fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut x = seed | 1;
    for i in (1..items.len()).rev() {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        items.swap(i, (x >> 33) as usize % (i + 1));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Slot confidence is the maximum and sources the union, whatever the order of the
    /// observations: the graph after a shuffled arrival equals the in-order one, and each
    /// edge equals a naive model.
    #[test]
    fn slot_confidence_max_is_order_independent(obs in observation_strategy(), seed in any::<u64>()) {
        let (_d1, mut in_order) = engine();
        seed_entities(&mut in_order);
        for o in &obs {
            let r = in_order.validate(&o.to_string()).unwrap();
            in_order.ingest_batch(&[r], Projection::Inline, false).unwrap();
        }
        let (_d2, mut shuffled) = engine();
        seed_entities(&mut shuffled);
        let mut arrivals = obs.clone();
        shuffle(&mut arrivals, seed);
        arrivals.push(arrivals[0].clone());
        for o in &arrivals {
            let r = shuffled.validate(&o.to_string()).unwrap();
            shuffled.ingest_batch(&[r], Projection::Inline, false).unwrap();
        }
        prop_assert_eq!(strip_positions(dump(&in_order)), strip_positions(dump(&shuffled)));

        // The naive model: per (entity, slot, normalised value), max confidence, sorted sources.
        let mut model: std::collections::BTreeMap<(String, String, String), (f64, std::collections::BTreeSet<String>)> = Default::default();
        for o in &obs {
            let entity = o["entity"].as_str().map_or_else(
                || format!("concept:{}", o["entity"]["name"].as_str().unwrap().to_lowercase()),
                str::to_owned,
            );
            let key = (entity, o["slot"].as_str().unwrap().to_lowercase(), o["value"].as_str().unwrap().to_lowercase());
            let entry = model.entry(key).or_insert((0.0, Default::default()));
            entry.0 = entry.0.max(o["confidence"].as_f64().unwrap());
            if let Some(s) = o["source"].as_str() { entry.1.insert(s.to_owned()); }
        }
        let snap = shuffled.owner_reader().unwrap();
        let mut got = std::collections::BTreeMap::new();
        for name in ["alien", "heat", "amelie"] {
            let entity = format!("concept:{name}");
            for f in snap.slots_of(&entity).unwrap().unwrap_or_default().0 {
                got.insert((entity.clone(), f.slot, f.value_key), (f.confidence.unwrap(), f.sources.into_iter().collect()));
            }
        }
        prop_assert_eq!(got, model);
    }

    /// For types, instances, slots, checklists and goals written in batches (some deferred,
    /// with duplicates), the incremental graph equals the one rebuilt from the log.
    #[test]
    fn reprojection_equals_incremental_for_slots_records(
        obs in observation_strategy(),
        instances in prop::collection::vec((0..3usize, 0..2usize), 0..6),
        goals in prop::collection::vec((0..2usize, 0..3usize), 0..4),
        batch in 1..6usize,
        deferred in any::<bool>(),
    ) {
        let (_dir, mut engine) = engine();
        seed_entities(&mut engine);
        let mut lines = vec![
            json!({"record_type": "type", "name": "Film"}),
            json!({"record_type": "type", "name": "Play", "description": "staged"}),
            json!({"record_type": "checklist", "name": "Identify", "slots": [{"name": "genre"}, {"name": "kind", "expect_labels": ["film", "play"], "relation": "instance_of", "cardinality": "many"}]}),
            json!({"record_type": "checklist", "name": "Rate", "slots": [{"name": "era", "required": false}]}),
        ];
        for (e, t) in instances {
            lines.push(json!({"record_type": "instance_of", "entity": format!("concept:{}", ["alien", "heat", "amelie"][e]), "type": (["Film", "play"][t])}));
        }
        lines.extend(obs);
        for (u, g) in goals {
            lines.push(json!({"record_type": "goal", "name": format!("goal {g}"),
                "user": {"name": (["Alice", "Bob"][u]), "entity_type": "user", "at": "2026-11-20T10:00:00Z"},
                "influences": ([["Identify"], ["Rate"], ["identify"]][g])}));
        }
        let dups: Vec<Value> = lines.iter().step_by(3).cloned().collect();
        lines.extend(dups);
        let records: Vec<ValidRecord> = lines.iter().map(|l| engine.validate(&l.to_string()).unwrap()).collect();
        let projection = if deferred { Projection::Deferred } else { Projection::Inline };
        for chunk in records.chunks(batch) {
            for outcome in engine.ingest_batch(chunk, projection, false).unwrap() {
                // Goals of one user and name written with other influences conflict; all else is new or a duplicate.
                if let Err(e) = outcome { prop_assert_eq!(e.code(), "log.conflict"); }
            }
        }
        engine.catch_up(&mut |_, _| {}).unwrap();
        let incremental = dump(&engine);
        prop_assert!(incremental.pending.is_empty(), "{:?}", incremental.pending);
        engine.reproject(&mut |_, _| {}).unwrap();
        prop_assert_eq!(incremental, dump(&engine));
    }

    /// Information gain is never negative, never above log2 n, and 0 when every candidate is
    /// in one group (all share a value, or none has one).
    #[test]
    fn information_gain_is_bounded_and_zero_for_one_group(sizes in prop::collection::vec(0..12usize, 0..8)) {
        let n: usize = sizes.iter().sum();
        let gain = information_gain(&sizes);
        prop_assert!(gain >= 0.0, "{gain}");
        prop_assert!(n == 0 || gain <= (n as f64).log2() + 1e-12, "{gain} > log2 {n}");
        prop_assert_eq!(information_gain(&[n]), 0.0);
        // Order of the groups does not matter, to the bit.
        let mut reversed = sizes.clone();
        reversed.reverse();
        prop_assert_eq!(information_gain(&reversed).to_bits(), gain.to_bits());
    }

    /// A missing value is no answer: each candidate without one lowers the gain (or leaves it
    /// at 0), and with none the gain is the partition's.
    #[test]
    fn unknown_candidates_never_raise_the_gain(
        sizes in prop::collection::vec(0..12usize, 0..8),
        unknown in 0..12usize,
    ) {
        let with = information_gain_with_unknown(&sizes, unknown);
        let more = information_gain_with_unknown(&sizes, unknown + 1);
        prop_assert!(more <= with + 1e-12, "{more} > {with}");
        prop_assert!(with >= 0.0);
        prop_assert_eq!(information_gain_with_unknown(&sizes, 0).to_bits(), information_gain(&sizes).to_bits());
        prop_assert_eq!(information_gain_with_unknown(&[], unknown), 0.0);
    }
}

#[test]
fn a_slot_every_candidate_shares_gains_nothing() {
    let (_dir, mut engine) = engine();
    films(&mut engine);
    // Every film has country "US" and type Film: both gain exactly 0 over any candidate subset.
    let all = candidates();
    for k in 1..=all.len() {
        let report = engine
            .owner_reader()
            .unwrap()
            .next_slot("IdentifyFilm", &all[..k], &NextOptions::default())
            .unwrap()
            .unwrap();
        for name in ["country", "film"] {
            let g = report.ranking.iter().find(|g| g.spec.name == name).unwrap();
            assert_eq!(g.gain, 0.0, "{name} over {k} candidates");
            assert_eq!(g.groups.len(), 1);
        }
    }
}

/// The identify flow: known answers filter the candidates (a candidate without a value is
/// kept), the next question is asked among the rest, and its answer is written back.
#[test]
fn known_answers_filter_the_candidates_before_the_next_question() {
    let (_dir, mut engine) = engine();
    films(&mut engine);
    let known = [("Genre".to_owned(), "DRAMA".to_owned())];
    let snap = engine.owner_reader().unwrap();
    let (kept, ruled_out) =
        snap.filter_candidates("identifyfilm", &candidates(), &known).unwrap().unwrap();
    assert_eq!(kept, ["concept:a", "concept:b", "concept:d"], "D has no genre: kept");
    assert_eq!(ruled_out, [("concept:c".to_owned(), "genre".to_owned())]);
    let next = snap.next_slot("identifyfilm", &kept, &NextOptions::default()).unwrap().unwrap();
    assert_eq!(next.best().unwrap().spec.name, "era");
    let bad = [("colour".to_owned(), "red".to_owned())];
    let err = snap.filter_candidates("identifyfilm", &candidates(), &bad).unwrap_err();
    assert_eq!(err.code(), "checklist.unknown_spec");
    drop(snap);
    // Confirmed, the answer is written back: D is a drama now, and C stays ruled out.
    engine.set_slot(&id("concept:d"), "genre", "drama", Some(0.8), Some("user")).unwrap();
    let snap = engine.owner_reader().unwrap();
    let (kept, _) = snap.filter_candidates("identifyfilm", &candidates(), &known).unwrap().unwrap();
    assert_eq!(kept.len(), 3);
}
