//! Decision memory through the real binary: seed 003's JWT scenario, evolution, impact, rollup,
//! refusals that change nothing, and links that survive a reprojection.

use serde_json::Value;

use super::{Dir, stdout};

fn json(d: &Dir, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = stdout(&mut d.cmd(&all));
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Save the JWT decision, its checkpoint, the FAILED outcome and the superseding decision.
fn jwt(d: &Dir) {
    for args in [
        &[
            "memory",
            "save",
            "--id",
            "memory_1",
            "--kind",
            "decision",
            "--topic",
            "auth_strategy",
            "--content",
            "Use JWT",
            "--reasoning",
            "Stateless, scalable",
            "--session",
            "s1",
            "--created-by",
            "llm",
            "--at",
            "2026-11-20T09:00:00Z",
        ][..],
        &[
            "memory",
            "save",
            "--id",
            "memory_2",
            "--kind",
            "checkpoint",
            "--content",
            "Implemented JWT auth in auth.ts",
            "--session",
            "s1",
            "--at",
            "2026-11-20T09:30:00Z",
        ],
        &[
            "memory",
            "outcome",
            "memory_1",
            "--outcome",
            "FAILED",
            "--reason",
            "Performance issues with token refresh",
            "--at",
            "2026-11-21T10:00:00Z",
        ],
        &[
            "memory",
            "save",
            "--id",
            "memory_3",
            "--kind",
            "decision",
            "--topic",
            "auth_strategy",
            "--content",
            "Switch to session-based",
            "--supersedes",
            "memory_1",
            "--session",
            "s2",
            "--at",
            "2026-11-21T11:00:00Z",
        ],
    ] {
        d.cmd(args).assert().success();
    }
}

#[test]
fn why_did_we_abandon_jwt() {
    let d = Dir::new();
    jwt(&d);
    let ctx = json(
        &d,
        &["memory", "search", "Why did we abandon JWT?", "--as-of", "2026-11-21T12:00:00Z"],
    );
    let steps = ctx["evolution"]["steps"].as_array().unwrap();
    let chain: Vec<&str> = steps.iter().map(|s| s["memory"]["id"].as_str().unwrap()).collect();
    assert_eq!(chain, ["memory_3", "memory_1"], "the chain memory_1 → memory_3, newest first");
    let evidence: Vec<&str> = ctx["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["items"].as_array().unwrap())
        .map(|x| x["memory"]["id"].as_str().unwrap())
        .collect();
    assert!(evidence.contains(&"memory_2"), "{ctx}");
    let outcome = &steps[1]["outcomes"][0];
    assert_eq!(outcome["outcome"], "failed");
    assert_eq!(outcome["reason"], "Performance issues with token refresh");

    // The same for people.
    let text = stdout(&mut d.cmd(&[
        "memory",
        "search",
        "Why did we abandon JWT?",
        "--as-of",
        "2026-11-21T12:00:00Z",
    ]));
    assert!(text.contains("outcome FAILED"), "{text}");
    assert!(text.contains("Performance issues with token refresh"), "{text}");
}

#[test]
fn evolution_impact_show_list_and_rollup() {
    let d = Dir::new();
    jwt(&d);
    let ev = json(&d, &["evolution", "Auth_Strategy"]);
    assert_eq!(ev["steps"][0]["memory"]["id"], "memory_3");
    assert_eq!(ev["steps"][1]["supersedes_confidence"], 1.0);
    d.cmd(&["evolution", "no such topic"]).assert().code(1);

    let impact = json(&d, &["impact", "memory_1", "--as-of", "2026-11-20T10:00:00Z"]);
    assert_eq!(impact["items"][0]["memory"]["id"], "memory_2");
    assert_eq!(impact["items"][0]["via"], "TEMPORAL");
    assert_eq!(impact["superseded_by"][0]["id"], "memory_3");
    // A window shorter than the 30 minutes to the checkpoint reaches nothing.
    let short =
        json(&d, &["impact", "memory_1", "--window", "10m", "--as-of", "2026-11-20T10:00:00Z"]);
    assert!(short["items"].as_array().unwrap().is_empty());
    d.cmd(&["impact", "ghost"]).assert().code(1);
    d.cmd(&["impact", "memory_1", "--window", "soon"]).assert().code(2);

    let shown = json(&d, &["memory", "show", "memory_1", "--as-of", "2026-11-21T12:00:00Z"]);
    assert_eq!(shown["memory"]["outcome"], "failed");
    assert!(shown["links"].as_array().unwrap().len() >= 3, "{shown}");
    let list = json(&d, &["memory", "list", "--kind", "decision"]);
    assert_eq!(list.as_array().unwrap().len(), 2);

    let r = json(&d, &["rollup", "--since", "2026-11-16", "--until", "2026-11-21T10:30:00Z"]);
    assert_eq!(r["blocked"][0]["memory"]["id"], "memory_1");
    assert_eq!(r["next_actions"][0]["action"], "supersede");
    d.cmd(&["rollup", "--since", "2026-11-22", "--until", "2026-11-21"]).assert().code(2);
}

#[test]
fn bad_memory_input_is_refused_and_changes_nothing() {
    let d = Dir::new();
    jwt(&d);
    let before = d.store_files();
    for args in [
        &["memory", "link", "memory_1", "ghost", "--type", "relates_to"][..],
        &["memory", "link", "memory_1", "memory_2", "--type", "causes"],
        &["memory", "link", "memory_1", "memory_2", "--type", "relates_to", "--confidence", "1.5"],
        &["memory", "save", "--kind", "plan", "--content", "x"],
        &[
            "memory",
            "save",
            "--kind",
            "decision",
            "--topic",
            "t",
            "--content",
            "x",
            "--supersedes",
            "memory_9",
        ],
        &["memory", "outcome", "memory_1", "--outcome", "meh", "--reason", "r"],
        &["memory", "unlink", "ghost", "memory_2", "--type", "temporal"],
    ] {
        let out = d.cmd(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("rule:"), "{args:?}: {err}");
    }
    assert!(d.store_files() == before, "a refused write changed the store");
}

#[test]
fn votes_and_links_survive_reprojection() {
    let d = Dir::new();
    jwt(&d);
    d.cmd(&["memory", "unlink", "memory_1", "memory_2", "--type", "temporal"]).assert().success();
    let gone = json(&d, &["impact", "memory_1", "--as-of", "2026-11-20T10:00:00Z"]);
    assert!(gone["items"].as_array().unwrap().is_empty(), "{gone}");
    let before = json(&d, &["memory", "show", "memory_3", "--as-of", "2026-11-21T12:00:00Z"]);
    d.cmd(&["reproject"]).assert().success();
    d.cmd(&["memory", "relink"]).assert().success();
    assert_eq!(
        json(&d, &["memory", "show", "memory_3", "--as-of", "2026-11-21T12:00:00Z"]),
        before
    );
    let still = json(&d, &["impact", "memory_1", "--as-of", "2026-11-20T10:00:00Z"]);
    assert!(still["items"].as_array().unwrap().is_empty());
}

/// A vote on a link that does not exist (or was deleted) is refused, naming the reverse link
/// when only that one exists; nothing is written.
#[test]
fn unlinking_a_link_that_does_not_exist_is_an_error() {
    let d = Dir::new();
    jwt(&d);
    let before = d.store_files();
    for (args, expected) in [
        (["memory_1", "memory_3", "--type", "implements"], "no implements link"),
        (["memory_2", "memory_1", "--type", "temporal"], "swap them"),
    ] {
        let out = d.cmd(&["memory", "unlink"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.contains("memory.unknown_link") && err.contains(expected), "{args:?}: {err}");
    }
    assert!(d.store_files() == before, "a refused vote changed the store");
    d.cmd(&["memory", "unlink", "memory_1", "memory_2", "--type", "temporal"]).assert().success();
    let out = d
        .cmd(&["memory", "unlink", "memory_1", "memory_2", "--type", "temporal"])
        .output()
        .unwrap();
    assert!(String::from_utf8(out.stderr).unwrap().contains("it was deleted"));
}

/// Automatic links switched off for the store: a setting kept in the store (every command
/// reopens it, as a restart does), shown by `stats`, obeyed by later saves; explicit links
/// stay, and switching back on rebuilds the automatic ones.
#[test]
fn automatic_links_are_switched_off_for_the_store_and_stay_off() {
    let d = Dir::new();
    jwt(&d);
    let edges = |d: &Dir, t: &str| json(d, &["stats"])["edges"][t].as_u64().unwrap_or(0);
    assert!(edges(&d, "TEMPORAL") > 0, "memory_2 follows memory_1 in session s1");
    assert_eq!(json(&d, &["stats"])["settings"]["auto_link"], true);

    let off = json(&d, &["memory", "auto-link", "off"]);
    assert_eq!(off["auto_link"], false, "{off}");
    assert_eq!(off["automatic_links"], 0, "{off}");
    assert_eq!(edges(&d, "TEMPORAL"), 0);
    assert_eq!(edges(&d, "SUPERSEDES"), 1, "explicit links stay");
    // A later save in the same session, ten minutes on, is linked to nothing automatically.
    d.cmd(&[
        "memory",
        "save",
        "--id",
        "memory_4",
        "--kind",
        "checkpoint",
        "--content",
        "Added JWT refresh",
        "--session",
        "s1",
        "--at",
        "2026-11-20T09:40:00Z",
    ])
    .assert()
    .success();
    assert_eq!(edges(&d, "TEMPORAL"), 0);
    assert_eq!(json(&d, &["memory", "auto-link"])["auto_link"], false);
    assert_eq!(json(&d, &["stats"])["settings"]["auto_link"], false);
    d.cmd(&["memory", "relink"]).assert().success();
    assert_eq!(edges(&d, "TEMPORAL"), 0, "rebuilding obeys the setting");
    let text = stdout(&mut d.cmd(&["stats"]));
    assert!(text.contains("automatic memory links"), "{text}");

    let on = json(&d, &["memory", "auto-link", "on"]);
    assert_eq!(on["auto_link"], true, "{on}");
    assert!(edges(&d, "TEMPORAL") >= 2, "memory_1, memory_2 and memory_4 are linked again");
    d.cmd(&["memory", "auto-link", "maybe"]).assert().code(2);
}
