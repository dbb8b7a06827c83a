//! Tests of the type, instance_of, slot, checklist and goal records and the checklist file.

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::record::{RecordBody, RecordKind, ValidRecord, validate};

fn schema() -> Schema {
    Schema::core().unwrap()
}

fn check(value: Value) -> Result<ValidRecord, ValidationErrors> {
    validate(&schema(), &Limits::default(), &value.to_string())
}

fn slots(r: &ValidRecord) -> &SlotsRecord {
    let RecordBody::Slots(s) = r.body() else { panic!("not a slots record: {r:?}") };
    s
}

fn rules(err: &ValidationErrors) -> Vec<(&str, &str)> {
    err.violations.iter().map(|v| (v.path.as_str(), v.rule)).collect()
}

/// The canonical form validates to the same record: parse, print, parse.
fn round_trips(r: &ValidRecord) {
    let again = validate(&schema(), &Limits::default(), r.canonical()).unwrap();
    assert_eq!(&again, r);
}

#[test]
fn a_type_is_identified_by_its_normalised_name() {
    let r =
        check(json!({"record_type": "type", "name": " Film ", "description": "A movie"})).unwrap();
    assert_eq!((r.kind(), r.id()), (RecordKind::Type, "film"));
    let SlotsRecord::Type(t) = slots(&r) else { panic!() };
    assert_eq!(t.name, "Film");
    round_trips(&r);
}

#[test]
fn a_slot_defaults_confidence_and_normalises_its_label() {
    let r = check(json!({"record_type": "slot", "entity": "concept:alien", "slot": "Genre",
        "value": " Science Fiction "}))
    .unwrap();
    let SlotsRecord::Slot(s) = slots(&r) else { panic!() };
    assert_eq!(
        (s.slot.as_str(), s.value.as_str(), s.confidence),
        ("genre", "Science Fiction", 1.0)
    );
    assert_eq!(s.value_key(), "science fiction");
    assert_eq!(
        s.entity,
        EntityTarget::Existing { id: "concept:alien".into(), entity_type: "concept".into() }
    );
    assert_eq!(r.kind(), RecordKind::Slot);
    assert!(r.canonical().contains("\"confidence\":1.0"), "{}", r.canonical());
    round_trips(&r);
    // Numbers and booleans are values too, kept as their JSON text.
    let r = check(json!({"record_type": "slot", "entity": "concept:alien", "slot": "year",
        "value": 1979}))
    .unwrap();
    let SlotsRecord::Slot(s) = slots(&r) else { panic!() };
    assert_eq!(s.value, "1979");
    round_trips(&r);
}

#[test]
fn slot_ids_tell_every_observation_apart_and_escape_the_separator() {
    let base = json!({"record_type": "slot", "entity": "concept:a", "slot": "s", "value": "v|w",
        "confidence": 0.5, "source": "x"});
    let a = check(base.clone()).unwrap();
    assert_eq!(a.id(), "concept:a|s|v\\|w|0.5|x");
    let mut other = base.clone();
    other["confidence"] = json!(0.6);
    assert_ne!(check(other).unwrap().id(), a.id());
    let mut created = base;
    created["entity"] =
        json!({"name": "A", "entity_type": "concept", "at": "2026-11-20T09:00:00Z"});
    let created = check(created).unwrap();
    assert_eq!(created.id(), "concept:a+2026-11-20T09:00:00Z|s|v\\|w|0.5|x");
    round_trips(&created);
}

#[test]
fn confidence_outside_zero_one_is_refused_by_name() {
    for bad in [json!(1.5), json!(-0.1)] {
        let err = check(json!({"record_type": "slot", "entity": "concept:a", "slot": "s",
            "value": "v", "confidence": bad}))
        .unwrap_err();
        assert_eq!(rules(&err), [("$.confidence", "slots.confidence_range")]);
        assert_eq!(err.violations[0].value.as_deref(), Some(bad.to_string().as_str()));
    }
    let err = check(json!({"record_type": "slot", "entity": "concept:a", "slot": "s",
        "value": "v", "confidence": "high"}))
    .unwrap_err();
    assert_eq!(rules(&err), [("$.confidence", "slots.confidence_range")]);
}

#[test]
fn entities_are_named_by_id_or_created_with_a_type_and_time() {
    let err = check(json!({"record_type": "instance_of", "entity": "alien", "type": "Film"}))
        .unwrap_err();
    assert_eq!(rules(&err), [("$.entity", "envelope.entity_id_format")]);
    let err = check(json!({"record_type": "instance_of", "entity": {"name": "Alien"},
        "type": "Film"}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.entity.entity_type", "envelope.required_field"),
            ("$.entity.at", "envelope.required_field")
        ]
    );
    let err = check(json!({"record_type": "instance_of", "type": "Film",
        "entity": {"name": "Alien", "entity_type": "gadget", "at": "yesterday"}}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [("$.entity.entity_type", "schema.enum"), ("$.entity.at", "envelope.timestamp_format")]
    );
    let r = check(json!({"record_type": "instance_of", "type": "FILM",
        "entity": {"name": " Alien ", "entity_type": "concept", "at": "2026-11-20T09:00:00Z"}}))
    .unwrap();
    let SlotsRecord::InstanceOf(i) = slots(&r) else { panic!() };
    assert_eq!((i.entity.entity_id(), i.type_id.as_str()), ("concept:alien".into(), "film"));
    round_trips(&r);
}

fn film_checklist() -> Value {
    json!({"record_type": "checklist", "name": "IdentifyFilm", "slots": [
        {"name": "film", "expect_labels": ["Film"], "relation": "INSTANCE_OF", "cardinality": "ONE"},
        {"name": "Year", "expect_labels": ["Year", "Date", "year"], "required": false},
        {"name": "actor", "required": false, "cardinality": "MANY"},
        {"name": "genre", "relation": "has_slot"},
    ]})
}

#[test]
fn a_checklist_fills_in_defaults_and_accepts_aliases() {
    let r = check(film_checklist()).unwrap();
    assert_eq!((r.kind(), r.id()), (RecordKind::Checklist, "identifyfilm"));
    let SlotsRecord::Checklist(c) = slots(&r) else { panic!() };
    let spec = |name: &str, labels: &[&str], relation, required, cardinality| SlotSpec {
        name: name.into(),
        expect_labels: labels.iter().map(|s| s.to_string()).collect(),
        relation,
        required,
        cardinality,
        cost: 1.0,
    };
    assert_eq!(
        c.slots,
        [
            spec("film", &["film"], SpecRelation::InstanceOf, true, Cardinality::One),
            spec("year", &["year", "date"], SpecRelation::HasSlot, false, Cardinality::One),
            spec("actor", &["actor"], SpecRelation::HasSlot, false, Cardinality::Many),
            spec("genre", &["genre"], SpecRelation::HasSlot, true, Cardinality::One),
        ]
    );
    round_trips(&r);
}

#[test]
fn every_problem_with_a_checklist_is_reported_at_once() {
    let err = check(json!({"record_type": "checklist", "name": "", "colour": "red", "slots": [
        {"name": "a", "cardinality": "TWO", "relation": "OWNS", "required": "yes"},
        {"name": "A"},
        {"name": "a"},
        {"name": "b", "expect_labels": "b", "extra": 1},
        7,
    ]}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.colour", "envelope.unknown_field"),
            ("$.name", "slots.label_format"),
            ("$.slots[0].relation", "schema.enum"),
            ("$.slots[0].required", "envelope.type"),
            ("$.slots[0].cardinality", "schema.enum"),
            ("$.slots[1].name", "checklist.duplicate_spec"),
            ("$.slots[2].name", "checklist.duplicate_spec"),
            ("$.slots[3].extra", "envelope.unknown_field"),
            ("$.slots[3].expect_labels", "envelope.type"),
            ("$.slots[4]", "envelope.type"),
        ]
    );
    let cardinality = &err.violations[4];
    assert_eq!(cardinality.value.as_deref(), Some("\"TWO\""));
    assert!(cardinality.message.contains("one, many"), "{}", cardinality.message);
    let err = check(json!({"record_type": "checklist", "name": "x", "slots": []})).unwrap_err();
    assert_eq!(rules(&err), [("$.slots", "checklist.slot_count")]);
    let err = check(json!({"record_type": "checklist", "name": "x"})).unwrap_err();
    assert_eq!(rules(&err), [("$.slots", "envelope.required_field")]);
}

#[test]
fn a_goal_belongs_to_a_user_and_names_checklists() {
    let r = check(json!({"record_type": "goal", "name": "Watch AFI top 100", "user": "user:alice",
        "priority": 1, "horizon": "this year", "influences": ["IdentifyFilm", "identifyfilm", "Rate"]}))
    .unwrap();
    assert_eq!((r.kind(), r.id()), (RecordKind::Goal, "user:alice|watch afi top 100"));
    let SlotsRecord::Goal(g) = slots(&r) else { panic!() };
    assert_eq!(g.influences, ["identifyfilm", "rate"]);
    round_trips(&r);
    let err = check(json!({"record_type": "goal", "name": "g", "user": "concept:alice",
        "priority": -1, "influences": "c"}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.user", "goal.user_type"),
            ("$.priority", "envelope.type"),
            ("$.influences", "envelope.type")
        ]
    );
}

#[test]
fn a_goal_prefers_slot_values_and_a_spec_has_a_cost() {
    let r = check(json!({"record_type": "goal", "name": "g", "user": "user:alice",
        "prefers": [{"slot": "Genre", "value": " Horror "}, {"slot": "genre", "value": "horror"}]}))
    .unwrap();
    let SlotsRecord::Goal(g) = slots(&r) else { panic!() };
    assert_eq!(
        g.prefers,
        [SlotPreference { slot: "genre".into(), value: "Horror".into() }],
        "normalised slot, trimmed value, repeats dropped"
    );
    round_trips(&r);
    let err = check(json!({"record_type": "goal", "name": "g", "user": "user:alice",
        "prefers": [{"slot": "genre"}, "x", {"slot": "a", "value": "b", "weight": 2}]}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [
            ("$.prefers[0].value", "envelope.required_field"),
            ("$.prefers[1]", "envelope.type"),
            ("$.prefers[2].weight", "envelope.unknown_field")
        ]
    );

    let r = check(json!({"record_type": "checklist", "name": "c",
        "slots": [{"name": "genre", "cost": 2.5}, {"name": "era"}]}))
    .unwrap();
    let SlotsRecord::Checklist(c) = slots(&r) else { panic!() };
    assert_eq!((c.slots[0].cost, c.slots[1].cost), (2.5, 1.0));
    round_trips(&r);
    // The default cost is not written, so older checklists keep their canonical form.
    assert!(r.canonical().contains("\"cost\":2.5"), "{}", r.canonical());
    assert_eq!(r.canonical().matches("cost").count(), 1);
    let err = check(json!({"record_type": "checklist", "name": "c",
        "slots": [{"name": "a", "cost": 0}, {"name": "b", "cost": "x"}]}))
    .unwrap_err();
    assert_eq!(
        rules(&err),
        [("$.slots[0].cost", "checklist.cost"), ("$.slots[1].cost", "checklist.cost")]
    );
}

const TOML_FILE: &str = r#"
name = "IdentifyFilm"

[[slots]]
name = "film"
expect_labels = ["Film"]
relation = "INSTANCE_OF"
cardinality = "ONE"

[[slots]]
name = "Year"
expect_labels = ["Year", "Date", "year"]
required = false

[[slots]]
name = "actor"
required = false
cardinality = "MANY"

[[slots]]
name = "genre"
relation = "has_slot"
"#;

#[test]
fn a_checklist_file_in_toml_or_json_is_the_same_record() {
    let from_toml = checklist_from_file(&schema(), &Limits::default(), TOML_FILE).unwrap();
    let mut json_file = film_checklist();
    json_file.as_object_mut().unwrap().remove("record_type");
    let from_json =
        checklist_from_file(&schema(), &Limits::default(), &format!("  {json_file}")).unwrap();
    assert_eq!(from_toml, from_json);
    assert_eq!(from_toml, check(film_checklist()).unwrap());
}

#[test]
fn malformed_checklist_files_are_refused_by_name() {
    let parse = |text: &str| checklist_from_file(&schema(), &Limits::default(), text).unwrap_err();
    assert_eq!(rules(&parse("name = \"x\" slots")), [("$", "checklist.syntax")]);
    assert_eq!(rules(&parse("{\"name\": ")), [("$", "checklist.syntax")]);
    assert_eq!(rules(&parse("[1, 2]")), [("$", "checklist.syntax")]);
    assert_eq!(
        rules(&parse("{} ")),
        [("$.name", "envelope.required_field"), ("$.slots", "envelope.required_field")]
    );
    let err = parse("record_type = \"goal\"\nname = \"x\"");
    assert_eq!(
        rules(&err),
        [("$.record_type", "envelope.record_type"), ("$.slots", "envelope.required_field")]
    );
    // Two problems, two reports: a wrong record type does not hide a bad spec, and a repeated
    // spec name is reported even when that spec has another problem.
    let err = parse(
        "record_type = \"goal\"\nname = \"x\"\n[[slots]]\nname = \"a\"\ncardinality = \"TWO\"",
    );
    assert_eq!(
        rules(&err),
        [("$.record_type", "envelope.record_type"), ("$.slots[0].cardinality", "schema.enum")]
    );
    let err = parse(
        "name = \"x\"\n[[slots]]\nname = \"a\"\n[[slots]]\nname = \"A\"\ncardinality = \"x\"",
    );
    assert_eq!(
        rules(&err),
        [
            ("$.slots[1].cardinality", "schema.enum"),
            ("$.slots[1].name", "checklist.duplicate_spec")
        ]
    );
    let err = parse("name = 1979-05-27\n[[slots]]\nname = \"a\"");
    assert_eq!(rules(&err), [("$.name", "envelope.type")]);
    let small = Limits { max_record_bytes: 10, ..Limits::default() };
    let err = checklist_from_file(&schema(), &small, TOML_FILE).unwrap_err();
    assert_eq!(rules(&err), [("$", "limits.record_bytes")]);
}

proptest! {
    /// A slot record is accepted exactly when its confidence is a number in [0, 1].
    #[test]
    fn confidence_is_accepted_exactly_in_zero_one(c in -2.0f64..3.0) {
        let r = check(json!({"record_type": "slot", "entity": "concept:a", "slot": "s",
            "value": "v", "confidence": c}));
        prop_assert_eq!(r.is_ok(), (0.0..=1.0).contains(&c));
    }

    /// Whatever text a checklist file holds, parsing never panics, and an accepted file prints
    /// to a canonical form that parses back to the same record.
    #[test]
    fn checklist_files_round_trip(
        name in "[A-Za-z ]{0,8}",
        specs in prop::collection::vec(("[a-z]{0,4}", prop::collection::vec("[A-Za-z]{0,3}", 0..3), 0..3usize, any::<Option<bool>>(), 0..4usize), 0..4),
        noise in "\\PC{0,40}",
    ) {
        let mut text = format!("name = {name:?}\n");
        for (n, labels, relation, required, cardinality) in &specs {
            text.push_str(&format!("[[slots]]\nname = {n:?}\nexpect_labels = {labels:?}\n"));
            if let Some(r) = ["HAS_SLOT", "instance_of", "OWNS"].get(*relation) {
                text.push_str(&format!("relation = {r:?}\n"));
            }
            if let Some(q) = required {
                text.push_str(&format!("required = {q}\n"));
            }
            if let Some(c) = ["one", "MANY", "two"].get(*cardinality) {
                text.push_str(&format!("cardinality = {c:?}\n"));
            }
        }
        let _ = checklist_from_file(&schema(), &Limits::default(), &noise);
        if let Ok(r) = checklist_from_file(&schema(), &Limits::default(), &text) {
            let again = checklist_from_file(&schema(), &Limits::default(), r.canonical()).unwrap();
            prop_assert_eq!(again, r);
        }
    }
}
