//! `ctxgraph type|slot|checklist|goal` through the real binary: the film example of seed 001,
//! `--json` everywhere, errors that name the field, value and rule and write nothing, and the
//! records surviving a reprojection.

use serde_json::Value;

use super::{Dir, stdout};

const CHECKLIST: &str = r#"
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
name = "actor"
required = false
cardinality = "MANY"
"#;

fn json(d: &Dir, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&stdout(&mut d.cmd(&all))).unwrap()
}

fn stderr(d: &Dir, args: &[&str]) -> String {
    let out = d.cmd(args).assert().code(2);
    String::from_utf8(out.get_output().stderr.clone()).unwrap()
}

/// Four films (the worked example of the README): genre splits them best.
fn films(d: &Dir) {
    d.cmd(&["init"]).assert().success();
    d.cmd(&["type", "add", "Film", "--description", "A motion picture"]).assert().success();
    for (name, genre, era) in [
        ("A", Some("drama"), "1980s"),
        ("B", Some("drama"), "1990s"),
        ("C", Some("comedy"), "1980s"),
        ("D", None, "1990s"),
    ] {
        d.cmd(&["type", "instance", name, "Film", "--entity-type", "concept"]).assert().success();
        if let Some(g) = genre {
            d.cmd(&[
                "slot",
                "set",
                name,
                "genre",
                g,
                "--confidence",
                "0.8",
                "--source",
                "catalogue",
            ])
            .assert()
            .success();
        }
        d.cmd(&["slot", "set", name, "decade", era]).assert().success();
    }
    let f = d.write("films.toml", CHECKLIST);
    d.cmd(&["checklist", "define", f.to_str().unwrap()]).assert().success();
}

#[test]
fn the_film_example_from_types_to_the_next_question() {
    let d = Dir::new();
    films(&d);

    let types = json(&d, &["type", "list"]);
    assert_eq!(types[0]["id"], "film");
    assert_eq!(types[0]["instances"].as_array().unwrap().len(), 4, "{types}");

    let slots = json(&d, &["slot", "list", "a"]);
    assert_eq!(slots["entity"], "concept:a");
    assert_eq!(slots["types"][0]["name"], "Film");
    assert_eq!(slots["slots"].as_array().unwrap().len(), 2, "{slots}");

    let check = json(&d, &["checklist", "check", "IdentifyFilm", "concept:d"]);
    assert_eq!(check["complete"], false);
    assert_eq!(check["satisfied"], serde_json::json!(["film", "era"]));
    assert_eq!(check["missing_required"], serde_json::json!(["genre"]));
    assert_eq!(check["missing_optional"], serde_json::json!(["actor"]));
    let table = stdout(&mut d.cmd(&["checklist", "check", "identifyfilm", "d"]));
    assert!(table.contains("incomplete") && table.contains("MISSING"), "{table}");

    // Era: {A, C} 1980s, {B, D} 1990s: 1 bit. Genre: {A, B} drama, {C} comedy and D without a
    // value, which stays whatever the answer: 2 − (2/3·log2 3 + 1/3) ≈ 0.61 bits.
    let next = json(&d, &["checklist", "next", "IdentifyFilm", "--candidates", "a,b,c,d"]);
    assert_eq!(next["ask"], "era");
    assert_eq!(next["entropy"], 2.0);
    assert_eq!(next["ranking"][0]["gain"], 1.0);
    assert_eq!(next["ranking"][1]["spec"]["name"], "genre");
    assert_eq!(next["ranking"][1]["unknown"], 1);
    let genre = next["ranking"][1]["gain"].as_f64().unwrap();
    assert!((genre - (2.0 - (1.0 / 3.0 + 2.0 / 3.0 * 3f64.log2()))).abs() < 1e-12, "{next}");
    let text =
        stdout(&mut d.cmd(&["checklist", "next", "IdentifyFilm", "--candidates", "a,b,c,d"]));
    assert!(text.contains("ask about era"), "{text}");
    // Between A and B only era splits; for A alone, nothing does (exit 1).
    let next = json(&d, &["checklist", "next", "IdentifyFilm", "--candidates", "a,b"]);
    assert_eq!(next["ask"], "era");
    d.cmd(&["checklist", "next", "IdentifyFilm", "--candidates", "a"]).assert().code(1);

    // Goals.
    let out = json(
        &d,
        &[
            "goal",
            "add",
            "Watch the AFI top 100",
            "--user",
            "Alice",
            "--create-user",
            "--influences",
            "IdentifyFilm",
            "--priority",
            "1",
        ],
    );
    assert_eq!(out["new"], true);
    let again = stdout(&mut d.cmd(&[
        "goal",
        "add",
        "Watch the AFI top 100",
        "--user",
        "Alice",
        "--create-user",
        "--influences",
        "IdentifyFilm",
        "--priority",
        "1",
    ]));
    assert!(again.contains("already recorded"), "{again}");
    let goals = json(&d, &["goal", "list", "--user", "user:alice"]);
    assert_eq!(goals[0]["influences"], serde_json::json!(["identifyfilm"]));

    // Everything is in the log: the graph rebuilds the same.
    let before = (
        json(&d, &["type", "list"]),
        json(&d, &["checklist", "list"]),
        json(&d, &["slot", "list", "a"]),
        json(&d, &["goal", "list"]),
    );
    d.cmd(&["reproject"]).assert().success();
    let after = (
        json(&d, &["type", "list"]),
        json(&d, &["checklist", "list"]),
        json(&d, &["slot", "list", "a"]),
        json(&d, &["goal", "list"]),
    );
    assert_eq!(before, after);
}

/// Five films whose genre splits them best while nothing else is known.
fn five_films(d: &Dir, genre_cost: Option<f64>) {
    d.cmd(&["init"]).assert().success();
    d.cmd(&["type", "add", "Film"]).assert().success();
    for (name, genre, era) in [
        ("a", "drama", "1980s"),
        ("b", "comedy", "1980s"),
        ("c", "horror", "1990s"),
        ("d", "horror", "2000s"),
        ("e", "drama", "1980s"),
    ] {
        d.cmd(&["type", "instance", name, "Film", "--entity-type", "concept"]).assert().success();
        d.cmd(&["slot", "set", name, "genre", genre]).assert().success();
        d.cmd(&["slot", "set", name, "era", era]).assert().success();
    }
    let cost = genre_cost.map_or_else(String::new, |c| format!("cost = {c}\n"));
    let f = d.write(
        "films.toml",
        &format!("name = \"IdentifyFilm\"\n[[slots]]\nname = \"genre\"\n{cost}[[slots]]\nname = \"era\"\n"),
    );
    d.cmd(&["checklist", "define", f.to_str().unwrap()]).assert().success();
}

/// The weighted gain of the module docs, by hand: `groups` are the answers' candidate weights.
fn gain(groups: &[&[f64]], unknown: &[f64]) -> f64 {
    let h = |w: &[f64]| {
        let t: f64 = w.iter().sum();
        -w.iter().map(|x| x / t * (x / t).log2()).sum::<f64>()
    };
    let all: Vec<f64> =
        groups.iter().flat_map(|g| g.iter().copied()).chain(unknown.iter().copied()).collect();
    let known: f64 = groups.iter().flat_map(|g| g.iter()).sum();
    let cond: f64 = groups
        .iter()
        .map(|g| {
            let with: Vec<f64> = g.iter().chain(unknown).copied().collect();
            g.iter().sum::<f64>() / known * h(&with)
        })
        .sum();
    h(&all) - cond
}

/// A goal that prefers a slot value changes the prior and so the next question: horror is
/// likely for a user who watches horror classics, so asking the genre tells less than asking
/// the era, which splits the two horror films.
#[test]
fn a_goal_biases_the_prior_and_changes_the_next_question() {
    let d = Dir::new();
    five_films(&d, None);
    let all = ["checklist", "next", "IdentifyFilm", "--candidates", "a,b,c,d,e"];
    let before = json(&d, &all);
    assert_eq!(before["ask"], "genre", "{before}");
    assert_eq!(before["goals"], serde_json::json!([]));
    let uniform = gain(&[&[1.0, 1.0], &[1.0], &[1.0, 1.0]], &[]);
    assert!((before["ranking"][0]["gain"].as_f64().unwrap() - uniform).abs() < 1e-12);

    let goal = ["goal", "add", "Watch horror classics", "--user", "alice", "--create-user"];
    let out = json(
        &d,
        &[&goal[..], &["--influences", "IdentifyFilm", "--prefers", "genre=Horror"]].concat(),
    );
    assert_eq!(out["new"], true, "{out}");
    let after = json(&d, &all);
    assert_eq!(after["ask"], "era", "{after}");
    assert_eq!(after["goals"][0]["favoured"], serde_json::json!(["concept:c", "concept:d"]));
    assert_eq!(after["goals"][0]["boost"], 2.0);
    let prior: Vec<f64> =
        after["prior"].as_array().unwrap().iter().map(|p| p.as_f64().unwrap()).collect();
    assert_eq!(prior, [1.0 / 7.0, 1.0 / 7.0, 2.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0]);
    // Weights a 1, b 1, c 2, d 2, e 1: era {a, b, e} {c} {d}, genre {a, e} {b} {c, d}.
    let era = gain(&[&[1.0, 1.0, 1.0], &[2.0], &[2.0]], &[]);
    let genre = gain(&[&[1.0, 1.0], &[1.0], &[2.0, 2.0]], &[]);
    assert!(era > genre + 0.1, "{era} {genre}");
    assert!((after["ranking"][0]["gain"].as_f64().unwrap() - era).abs() < 1e-12, "{after}");
    assert!((after["ranking"][1]["gain"].as_f64().unwrap() - genre).abs() < 1e-12, "{after}");
    let text = stdout(&mut d.cmd(&all));
    assert!(text.contains("ask about era") && text.contains("Watch horror classics"), "{text}");
    // Another user's goals do not apply when the question names a user.
    d.cmd(&["slot", "set", "bob", "role", "viewer", "--entity-type", "user"]).assert().success();
    let bob = json(&d, &[&all[..], &["--user", "user:bob"]].concat());
    assert_eq!(bob["ask"], "genre", "{bob}");
    // The goal survives a reprojection, and so does its effect.
    d.cmd(&["reproject"]).assert().success();
    assert_eq!(json(&d, &all), after);
    // A malformed preference is refused.
    let err = stderr(&d, &[&goal[..], &["--prefers", "horror"]].concat());
    assert!(err.contains("SLOT=VALUE"), "{err}");
}

/// A spec's cost divides its gain; when facts or events mention an answer, searching the
/// graph first is recommended with the numbers, and what to search for.
#[test]
fn costs_rank_by_gain_per_cost_and_search_beats_asking_when_the_graph_may_know() {
    let d = Dir::new();
    five_films(&d, Some(3.0));
    let all = ["checklist", "next", "IdentifyFilm", "--candidates", "a,b,c,d,e"];
    let next = json(&d, &all);
    // Genre gains more bits (1.52 against 1.37) but costs three questions.
    assert_eq!(next["ask"], "era", "{next}");
    assert_eq!(next["ranking"][1]["spec"]["cost"], 3.0);
    let genre = &next["ranking"][1];
    let per_cost = genre["gain"].as_f64().unwrap() / 3.0;
    assert!((genre["gain_per_cost"].as_f64().unwrap() - per_cost).abs() < 1e-12, "{next}");
    assert_eq!(next["recommendation"]["action"], "ask", "{next}");
    assert!(next["ranking"][0].get("search").is_none(), "nothing mentions an answer: {next}");

    // The user said something about the era in a conversation.
    let ev = d.write(
        "ev.jsonl",
        r#"{"record_type":"event","event_id":"e1","event_type":"message.user","session_id":"s1","agent_id":"bot","trace_id":"t1","occurred_at":"2026-11-20T10:00:00Z","payload":{"text":"I think the film I mean is from the 1980s"}}"#,
    );
    d.cmd(&["ingest", ev.to_str().unwrap()]).assert().success();
    let next = json(&d, &all);
    let era = &next["ranking"][0];
    assert_eq!(era["search"]["found"][0]["answer"], "1980s", "{next}");
    assert_eq!(era["search"]["found"][0]["nodes"], serde_json::json!(["e1"]));
    // P(1980s) = 3/5; searching is worth gain × 3/5 / 0.25 against gain / 1 for asking.
    let g = era["gain"].as_f64().unwrap();
    assert!((era["search"]["p_found"].as_f64().unwrap() - 0.6).abs() < 1e-12, "{next}");
    assert!((era["search"]["gain_per_cost"].as_f64().unwrap() - g * 0.6 / 0.25).abs() < 1e-12);
    assert_eq!(next["recommendation"]["action"], "search", "{next}");
    assert_eq!(next["recommendation"]["query"], serde_json::json!(["1980s"]));
    let text = stdout(&mut d.cmd(&all));
    assert!(text.starts_with("search the graph first for the era (1980s in e1)"), "{text}");
    // A dearer search loses to asking; so does no search at all.
    let dear = json(&d, &[&all[..], &["--search-cost", "2"]].concat());
    assert_eq!(dear["recommendation"]["action"], "ask", "{dear}");
    let off = json(&d, &[&all[..], &["--no-search"]].concat());
    assert!(off["ranking"][0].get("search").is_none(), "{off}");
    let err = stderr(&d, &[&all[..], &["--search-cost", "0"]].concat());
    assert!(err.contains("checklist.search_cost"), "{err}");
    let bad = d.write("bad.toml", "name = \"X\"\n[[slots]]\nname = \"genre\"\ncost = -1\n");
    let err = stderr(&d, &["checklist", "define", bad.to_str().unwrap()]);
    assert!(err.contains("$.slots[0].cost") && err.contains("checklist.cost"), "{err}");
}

#[test]
fn slot_confidence_is_the_maximum_and_sources_accumulate() {
    let d = Dir::new();
    d.cmd(&["init"]).assert().success();
    d.cmd(&[
        "slot",
        "set",
        "Alien",
        "genre",
        "Science Fiction",
        "--entity-type",
        "concept",
        "--confidence",
        "0.6",
        "--source",
        "imdb",
    ])
    .assert()
    .success();
    d.cmd(&[
        "slot",
        "set",
        "alien",
        "GENRE",
        "science fiction",
        "--confidence",
        "0.9",
        "--source",
        "wiki",
    ])
    .assert()
    .success();
    d.cmd(&[
        "slot",
        "set",
        "concept:alien",
        "genre",
        "Science Fiction",
        "--confidence",
        "0.3",
        "--source",
        "blog",
    ])
    .assert()
    .success();
    let slots = json(&d, &["slot", "list", "alien"]);
    let s = &slots["slots"][0];
    assert_eq!(s["confidence"], 0.9);
    assert_eq!(s["sources"], serde_json::json!(["blog", "imdb", "wiki"]));
    assert_eq!(s["value"], "Science Fiction");
}

#[test]
fn bad_input_is_named_and_writes_nothing() {
    let d = Dir::new();
    films(&d);
    let before = d.store_files();

    let err = stderr(&d, &["slot", "set", "a", "genre", "x", "--confidence", "1.5"]);
    assert!(
        err.contains("$.confidence")
            && err.contains("1.5")
            && err.contains("slots.confidence_range"),
        "{err}"
    );
    let err = stderr(&d, &["slot", "set", "ghost", "genre", "x"]);
    assert!(err.contains("ghost") && err.contains("--entity-type"), "{err}");
    let err = stderr(&d, &["slot", "set", "concept:ghost", "genre", "x"]);
    assert!(err.contains("concept:ghost") && err.contains("slots.unknown_entity"), "{err}");
    let err = stderr(&d, &["checklist", "check", "Nope", "a"]);
    assert!(
        err.contains("\"Nope\"")
            && err.contains("checklist.unknown")
            && err.contains("IdentifyFilm"),
        "{err}"
    );
    let bad = d.write("bad.toml", "name = \"x\"\n[[slots]]\nname = \"a\"\ncardinality = \"TWO\"\n");
    let err = stderr(&d, &["checklist", "define", bad.to_str().unwrap()]);
    assert!(
        err.contains("$.slots[0].cardinality")
            && err.contains("\"TWO\"")
            && err.contains("one, many"),
        "{err}"
    );
    assert_eq!(err.matches("$.slots[0].cardinality").count(), 1, "each violation once: {err}");
    let malformed = d.write("malformed.toml", "name = \"x\" slots");
    let err = stderr(&d, &["checklist", "define", malformed.to_str().unwrap()]);
    assert!(err.contains("checklist.syntax") && err.contains("line 1"), "{err}");
    let err = stderr(&d, &["type", "instance", "a", "Movie"]);
    assert!(err.contains("\"movie\"") && err.contains("slots.unknown_type"), "{err}");
    let err = stderr(&d, &["goal", "add", "g", "--user", "a"]);
    assert!(err.contains("goal.user_type"), "{err}");
    let err =
        stderr(&d, &["goal", "add", "g", "--user", "bob", "--create-user", "--influences", "Nope"]);
    assert!(err.contains("$.influences[0]") && err.contains("goal.unknown_checklist"), "{err}");
    let err = stderr(&d, &["type", "add", "film", "--description", "different"]);
    assert!(err.contains("log.conflict"), "{err}");

    assert_eq!(d.store_files(), before, "refused commands leave the store byte for byte");
}

#[test]
fn help_names_every_subcommand_and_lists_exit_1_when_empty() {
    let d = Dir::new();
    d.cmd(&["init"]).assert().success();
    for (cmd, subs) in [
        ("type", &["add", "instance", "list"][..]),
        ("slot", &["set", "list"][..]),
        ("checklist", &["define", "list", "check", "next"][..]),
        ("goal", &["add", "list"][..]),
    ] {
        let help = stdout(&mut d.cmd(&[cmd, "--help"]));
        for s in subs {
            assert!(help.contains(s), "`{cmd} --help` lacks {s}: {help}");
        }
    }
    let help = stdout(&mut d.cmd(&["checklist", "next", "--help"]));
    assert!(help.contains("log2") && help.contains("unknown"), "{help}");
    for args in [&["type", "list"][..], &["checklist", "list"][..], &["goal", "list"][..]] {
        d.cmd(args).assert().code(1);
        let mut with_json = vec!["--json"];
        with_json.extend_from_slice(args);
        assert_eq!(json(&d, args), Value::Array(Vec::new()));
        d.cmd(&with_json).assert().code(1);
    }
}
