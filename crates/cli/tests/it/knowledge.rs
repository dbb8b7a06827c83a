//! `ctxgraph fact` and `ctxgraph doc` through the real binary: claims, merges, contradictions,
//! retractions, dates, documents, refusals that leave the store byte for byte unchanged, and
//! reprojection.

use serde_json::Value;

use super::{Dir, stdout};

fn json(d: &Dir, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = stdout(&mut d.cmd(&all));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

const NOTES: &str = "# Atlas standup\n\nAlice said the ReadFile tool is slow. Bob agreed.\n\n## Decisions\n\n- Atlas depends on Postgres.\n";

#[test]
fn facts_merge_contradict_retract_and_survive_reprojection() {
    let d = Dir::new();
    let add = |args: &[&str]| {
        let mut all = vec!["fact", "add"];
        all.extend_from_slice(args);
        json(&d, &all)
    };
    let first = add(&[
        "Alice",
        "reports_to",
        "Bob",
        "--subject-type",
        "person",
        "--object-type",
        "person",
        "--confidence",
        "0.6",
        "--source",
        "org chart",
    ]);
    assert_eq!(first["status"], "new");
    assert_eq!(first["subject"]["via"], "created");
    assert_eq!(first["fact_id"], "user:alice|reports_to|user:bob");
    // Forgiving names: case, and the same claim from a second source raises the confidence.
    let second =
        add(&["ALICE", "Reports-To", "bob", "--confidence", "0.5", "--source", "hr export"]);
    assert_eq!(second["subject"]["via"], "name");
    assert!((second["fact"]["confidence"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{second}");
    assert_eq!(second["fact"]["sources"], serde_json::json!(["hr export", "org chart"]));
    // The same claim again is a duplicate.
    assert_eq!(
        add(&["alice", "reports_to", "bob", "--confidence", "0.5", "--source", "hr export"])["status"],
        "duplicate"
    );

    let carol = add(&[
        "alice",
        "reports_to",
        "Carol",
        "--object-type",
        "person",
        "--confidence",
        "0.3",
        "--valid-from",
        "2026-01-01",
    ]);
    let found = json(&d, &["fact", "contradictions"]);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found[0]["facts"][0]["object"]["id"], "user:bob");
    assert_eq!(found[0]["facts"][1]["object"]["id"], "user:carol");
    let text = stdout(&mut d.cmd(&["fact", "contradictions"]));
    assert!(text.contains("user:alice reports_to: 2 competing objects"), "{text}");
    // Before Carol's claim was valid there was nothing to contradict.
    d.cmd(&["fact", "contradictions", "--as-of", "2025-12-31"]).assert().code(1);

    let carol_id = carol["fact_id"].as_str().unwrap();
    d.cmd(&["fact", "retract", carol_id, "--reason", "wrong team", "--at", "2026-03-01"])
        .assert()
        .success();
    d.cmd(&["fact", "contradictions"]).assert().code(1);
    assert_eq!(
        json(&d, &["fact", "contradictions", "--as-of", "2026-02-01"]).as_array().unwrap().len(),
        1
    );
    let now = json(&d, &["fact", "list", "--subject", "alice"]);
    assert_eq!(now.as_array().unwrap().len(), 1);
    let all = json(&d, &["fact", "list", "--all"]);
    assert_eq!(all.as_array().unwrap().len(), 2);
    let about = json(&d, &["fact", "about", "carol"]);
    assert_eq!(about["facts"][0]["retraction_reason"], "wrong team");
    assert_eq!(about["facts"][0]["active"], false);

    let before = (json(&d, &["fact", "list", "--all"]), json(&d, &["fact", "about", "alice"]));
    d.cmd(&["reproject"]).assert().success();
    assert_eq!(
        (json(&d, &["fact", "list", "--all"]), json(&d, &["fact", "about", "alice"])),
        before
    );
}

#[test]
fn bad_facts_exit_2_name_the_rule_and_leave_the_store_unchanged() {
    let d = Dir::new();
    d.cmd(&["fact", "add", "Alice", "tagged", "oncall", "--subject-type", "person"])
        .assert()
        .success();
    d.cmd(&["fact", "add", "alice", "tagged", "x", "--object-type", "concept"]).assert().success();
    d.cmd(&["fact", "add", "Alice", "tagged", "y", "--subject-type", "concept"]).assert().success();
    let before = d.store_files();
    for (args, rule) in [
        (
            vec!["fact", "add", "bob", "likes", "alice", "--subject-type", "person"],
            "fact.unknown_predicate",
        ),
        (vec!["fact", "add", "x", "tagged", "y", "--confidence", "1.5"], "fact.confidence_range"),
        (vec!["fact", "add", "alice", "reports_to", "x"], "fact.ambiguous_entity"),
        (vec!["fact", "add", "Zed", "reports_to", "x"], "fact.unknown_entity"),
        (vec!["fact", "retract", "no|such|fact"], "fact.unknown_fact"),
        (vec!["fact", "add", "x", "tagged", "y", "--cites", "doc-0/t0"], "fact.unknown_sentence"),
    ] {
        let out = d.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains(rule), "{args:?}: {err}");
        assert_eq!(err.matches(rule).count(), 1, "reported once: {err}");
    }
    let err = String::from_utf8(
        d.cmd(&["fact", "add", "alice", "reports_to", "x"]).output().unwrap().stderr,
    )
    .unwrap();
    assert!(
        err.contains("user:alice") && err.contains("concept:alice"),
        "candidates listed: {err}"
    );
    assert_eq!(d.store_files(), before, "refused writes change nothing, byte for byte");
}

#[test]
fn documents_add_show_version_and_are_cited() {
    let d = Dir::new();
    d.cmd(&["fact", "add", "Alice", "tagged", "oncall", "--subject-type", "person"])
        .assert()
        .success();
    let f = d.write("notes.md", NOTES);
    let added =
        json(&d, &["doc", "add", f.to_str().unwrap(), "--url", "https://wiki.example/atlas"]);
    assert_eq!(
        (added["status"].as_str(), added["version"].as_u64(), added["sentences"].as_u64()),
        (Some("new"), Some(1), Some(3))
    );
    let again =
        json(&d, &["doc", "add", f.to_str().unwrap(), "--url", "https://wiki.example/atlas"]);
    assert_eq!(again["status"], "duplicate");

    let shown = json(&d, &["doc", "show", "https://wiki.example/atlas"]);
    assert_eq!(shown["document"]["title"], "Atlas standup");
    let first = &shown["sections"][0]["paragraphs"][0][0];
    assert_eq!(first["text"], "Alice said the ReadFile tool is slow.");
    assert_eq!(first["mentions"][0]["entity_id"], "user:alice");
    let sentence = first["sentence_id"].as_str().unwrap();
    let text = stdout(&mut d.cmd(&["doc", "show", "https://wiki.example/atlas"]));
    assert!(
        text.contains("[t0] Alice said the ReadFile tool is slow.")
            && text.contains("mentions user:alice"),
        "{text}"
    );

    let cited = json(
        &d,
        &[
            "fact",
            "add",
            "alice",
            "mentioned_in",
            "Atlas standup notes",
            "--cites",
            sentence,
            "--source",
            "https://wiki.example/atlas",
        ],
    );
    assert!(cited["object"].is_null(), "no entity matches: a literal object");
    assert_eq!(cited["fact"]["citations"][0]["sentence_id"], sentence);

    d.write("notes.md", &format!("{NOTES}- Carol owns the migration.\n"));
    let v2 = json(&d, &["doc", "add", f.to_str().unwrap(), "--url", "https://wiki.example/atlas"]);
    assert_eq!(v2["version"], 2);
    assert_eq!(v2["previous"], added["document_id"]);
    let list = json(&d, &["doc", "list"]);
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert_eq!(list[0]["next"], v2["document_id"]);
    d.cmd(&["doc", "show", "nope"]).assert().code(1);
    let before = json(&d, &["doc", "show", added["document_id"].as_str().unwrap()]);
    d.cmd(&["reproject"]).assert().success();
    assert_eq!(json(&d, &["doc", "show", added["document_id"].as_str().unwrap()]), before);
}

#[test]
fn help_explains_the_commands() {
    let d = Dir::new();
    let help = stdout(&mut d.cmd(&["fact", "--help"]));
    for word in ["add", "retract", "list", "about", "contradictions"] {
        assert!(help.contains(word), "{help}");
    }
    let help = stdout(&mut d.cmd(&["fact", "add", "--help"]));
    assert!(help.contains("--subject-type") && help.contains("--cites"), "{help}");
    let help = stdout(&mut d.cmd(&["doc", "--help"]));
    assert!(help.contains("add") && help.contains("show"), "{help}");
}

/// `search` right after `fact add` and `doc add`, and the rendering of a fact, a sentence and a
/// summary: what each is, never `?` placeholders.
#[test]
fn search_finds_facts_and_sentences_and_renders_every_kind() {
    let d = Dir::new();
    let ev = serde_json::json!({"event_id": "e1", "event_type": "tool.execute",
        "occurred_at": "2026-05-01T08:00:00Z", "session_id": "sess-7", "agent_id": "planner",
        "trace_id": "t1", "tool_name": "deploy", "payload": {"message": "rolled out neurodock"}});
    let file = d.write("in.jsonl", &format!("{ev}\n"));
    d.cmd(&["ingest", file.to_str().unwrap()]).assert().success();
    let fact = [
        "fact",
        "add",
        "Neurodock",
        "depends_on",
        "Redis",
        "--subject-type",
        "service",
        "--object-type",
        "service",
        "--confidence",
        "0.7",
    ];
    d.cmd(&fact).assert().success();
    let doc = d.write("notes.txt", "Neurodock talks to an alien mothership.\n");
    let url = "https://wiki.example/neurodock";
    d.cmd(&["doc", "add", doc.to_str().unwrap(), "--url", url, "--title", "Neurodock notes"])
        .assert()
        .success();

    // One row per line, so the assertions read whole cells.
    let out = stdout(&mut d.cmd(&["search", "alien", "--wide"]));
    assert!(out.contains("Sentence:"), "{out}");
    assert!(out.contains("\"Neurodock talks to an alien mothership.\" (Neurodock notes)"), "{out}");
    let out = stdout(&mut d.cmd(&["search", "depends redis", "--wide"]));
    assert!(out.contains("Neurodock depends on Redis (confidence 0.70)"), "{out}");
    let hits = json(&d, &["search", "depends redis"]);
    assert_eq!(hits[0]["label"], "Fact", "{hits}");
    assert_eq!(hits[0]["properties"]["predicate"], "depends_on", "{hits}");
    let out =
        stdout(&mut d.cmd(&["search", "mothership", "--semantic", "--limit", "20", "--wide"]));
    assert!(out.contains("alien mothership"), "{out}");

    d.cmd(&["consolidate"]).assert().success();
    // A summary is found by its agents and highlights (its ids and counts are not words).
    let out = stdout(&mut d.cmd(&["search", "planner", "--limit", "20", "--wide"]));
    assert!(out.contains("session summary of sess-7 (1 event): "), "{out}");
    assert!(!out.contains('?'), "{out}");
}

/// A fact's object may be a slot value or a declared type (seed 001's OBJECT: Entity |
/// SlotValue | Type): validated, stored with an OBJECT edge to the SlotValue or Type node,
/// listed and shown, and rebuilt the same by a reprojection.
#[test]
fn a_fact_object_may_be_a_slot_value_or_a_type() {
    let d = Dir::new();
    d.cmd(&["init"]).assert().success();
    d.cmd(&["type", "add", "Film"]).assert().success();
    d.cmd(&["type", "instance", "Alien", "Film", "--entity-type", "concept"]).assert().success();
    let slot =
        json(&d, &["fact", "add", "alien", "tagged", "Science Fiction", "--object-slot", "Genre"]);
    assert_eq!(slot["fact_id"], "concept:alien|tagged|#slot:genre=science fiction", "{slot}");
    let ty = json(&d, &["fact", "add", "alien", "tagged", "film", "--object-is-type"]);
    assert_eq!(ty["fact_id"], "concept:alien|tagged|#type:film", "{ty}");
    // The same slot value spelled otherwise is the same fact, now with two claims.
    d.cmd(&["fact", "add", "alien", "tagged", "science fiction", "--object-slot", "genre"])
        .args(["--source", "imdb"])
        .assert()
        .success();

    let facts = json(&d, &["fact", "list", "--subject", "alien"]);
    let facts = facts.as_array().unwrap();
    assert_eq!(facts.len(), 2, "{facts:?}");
    let by_slot = facts.iter().find(|f| f["object_slot"].is_object()).unwrap();
    assert_eq!(
        by_slot["object_slot"],
        serde_json::json!({"slot": "genre", "value": "Science Fiction"})
    );
    assert_eq!(by_slot["claims"], 2);
    let by_type = facts.iter().find(|f| f["object_type"].is_string()).unwrap();
    assert_eq!(by_type["object_type"], "film");
    let table = stdout(&mut d.cmd(&["fact", "list", "--subject", "alien"]));
    assert!(table.contains("genre=Science") && table.contains("type film"), "{table}");

    // The OBJECT edges reach the SlotValue and the Type nodes.
    let n = json(&d, &["neighbors", "concept:alien|tagged|#type:film", "--edge", "OBJECT"]);
    assert_eq!(n[0]["to"], serde_json::json!({"id": "film", "label": "Type"}), "{n}");
    let id = "concept:alien|tagged|#slot:genre=science fiction";
    let n = json(&d, &["neighbors", id, "--edge", "OBJECT"]);
    assert_eq!(n[0]["to"]["label"], "SlotValue", "{n}");
    let sv = json(&d, &["get", "genre|science fiction"]);
    assert_eq!(sv[0]["properties"]["value"], "Science Fiction", "{sv}");

    let before = json(&d, &["fact", "list", "--subject", "alien"]);
    d.cmd(&["reproject"]).assert().success();
    assert_eq!(json(&d, &["fact", "list", "--subject", "alien"]), before);

    // Refusals: an undeclared type, an empty slot value, a type object for a literal predicate.
    let err =
        d.cmd(&["fact", "add", "alien", "tagged", "Novel", "--object-is-type"]).assert().code(2);
    let err = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(err.contains("$.object.type") && err.contains("slots.unknown_type"), "{err}");
    let err =
        d.cmd(&["fact", "add", "alien", "tagged", " ", "--object-slot", "genre"]).assert().code(2);
    let err = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(err.contains("$.object.value") && err.contains("fact.object_format"), "{err}");
    let err = d
        .cmd(&["fact", "add", "alien", "also_known_as", "film", "--object-is-type"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&err.get_output().stderr).to_string();
    assert!(err.contains("fact.object_kind"), "{err}");
}
