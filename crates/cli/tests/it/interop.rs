//! `export`, `backup` and `restore`: what leaves the store under a principal, hostile text in
//! every format, filters, and stores rebuilt from a backup or a log.

use serde_json::{Value, json};

use super::{Dir, stdout};

/// Three events of session `s` (e2 for operators only, e3 pending PII review) and one of
/// session `t`, whose text holds quotes, backslashes, a line break and markup.
fn setup() -> Dir {
    let d = Dir::new();
    let ev = |id: &str, session: &str, extra: Value| {
        let mut e = json!({"event_id": id, "event_type": "tool.execute", "tool_name": "deploy",
            "occurred_at": format!("2026-11-2{}T10:00:00Z", &id[1..]), "session_id": session,
            "agent_id": "deployer", "trace_id": format!("trace-{session}"), "status": "failed",
            "payload": {"message": format!("it's \"{id}\" \\ failed\n<b>&</b>")}});
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        format!("{e}\n")
    };
    let text = ev("e1", "s", json!({}))
        + &ev("e2", "s", json!({"scope": {"allow_roles": ["operator"]}, "parent_event_id": "e1"}))
        + &ev("e3", "s", json!({"pii": {"pending_review": true}, "parent_event_id": "e2"}))
        + &ev("e4", "t", json!({"parent_event_id": "e1"}));
    let file = d.write("in.jsonl", &text);
    d.cmd(&["ingest", file.to_str().unwrap()]).assert().success();
    let mut reg = ctxgraph::Principals::open(&d.tmp.path().join("principals.json")).unwrap();
    reg.add("viewer", "default", &["viewer".into()]).unwrap();
    d
}

fn export(d: &Dir, who: Option<&str>, args: &[&str]) -> String {
    let mut all: Vec<&str> = who.map(|w| vec!["--as", w]).unwrap_or_default();
    all.push("export");
    all.extend_from_slice(args);
    let out = d.cmd(&all).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_export_under_a_principal_holds_only_what_it_may_see() {
    let d = setup();
    for format in ["prov-ttl", "prov-jsonld", "cypher", "graphml", "jsonl"] {
        let owner = export(&d, None, &["--format", format]);
        let viewer = export(&d, Some("viewer"), &["--format", format]);
        for id in ["e1", "e2", "e3", "e4"] {
            assert!(owner.contains(id), "{format}: the owner's export holds {id}");
        }
        for id in ["e1", "e4"] {
            assert!(viewer.contains(id), "{format}: viewer's export holds {id}");
        }
        for hidden in ["e2", "e3"] {
            assert!(
                !viewer.contains(hidden),
                "{format}: viewer's export names {hidden}:\n{viewer}"
            );
        }
    }
    // The edge from e4 to e1 is kept, those into hidden events are not.
    let cypher = export(&d, Some("viewer"), &["--format", "cypher"]);
    let caused: Vec<&str> = cypher.lines().filter(|l| l.contains(":CAUSED_BY")).collect();
    assert_eq!(caused.len(), 1, "{cypher}");
    assert!(caused[0].contains("'e4'") && caused[0].contains("'e1'"), "{cypher}");
}

#[test]
fn hostile_text_leaves_one_statement_per_line_and_filters_select_events() {
    let d = setup();
    let cypher = export(&d, None, &["--format", "cypher"]);
    for line in cypher.lines().filter(|l| !l.starts_with("//")) {
        assert!(line.ends_with(';'), "{line}");
        assert!(line.starts_with("CREATE ") || line.starts_with("MATCH "), "{line}");
    }
    assert!(cypher.contains(r#"it\'s \\"e1\\" \\\\ failed\\n<b>&</b>"#), "{cypher}");
    let ttl = export(&d, None, &["--format", "prov-ttl"]);
    assert!(ttl.lines().all(|l| l.is_empty() || l.ends_with(" .")), "{ttl}");

    let session = export(&d, None, &["--format", "graphml", "--session", "t"]);
    assert!(session.contains("Event:e4") && !session.contains("Event:e1"), "{session}");
    assert!(
        session.contains("Entity:agent:deployer"),
        "the session's agent comes along: {session}"
    );
    let window =
        export(&d, None, &["--format", "jsonl", "--since", "2026-11-22", "--until", "2026-11-24"]);
    let ids: Vec<String> = window
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["e2", "e3"], "{window}");
    let trace = export(&d, None, &["--format", "prov-ttl", "--trace", "trace-s"]);
    assert!(trace.contains("Event:e1") && !trace.contains("Event:e4"), "{trace}");
}

#[test]
fn a_backup_and_a_log_restore_give_the_same_views() {
    let d = Dir::new();
    d.cmd(&["demo"]).assert().success();
    let backup = d.tmp.path().join("copy.ctxg");
    d.cmd(&["backup", backup.to_str().unwrap()]).assert().success();
    // A backup never overwrites.
    let again = d.cmd(&["backup", backup.to_str().unwrap()]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("store.exists"), "{again:?}");
    let log = d.write("log.jsonl", &export(&d, None, &["--format", "jsonl"]));

    let on = |db: &std::path::Path, args: &[&str]| {
        let mut c = assert_cmd::Command::cargo_bin("ctxgraph").unwrap();
        c.current_dir(d.tmp.path()).env_remove("CTXGRAPH_DB").arg("--db").arg(db).args(args);
        c
    };
    let views = |db: &std::path::Path| -> (Value, String, String) {
        let run = |args: &[&str]| stdout(&mut on(db, args));
        let mut stats: Value = serde_json::from_str(&run(&["stats", "--json"])).unwrap();
        // The only value that depends on how the file was written.
        stats.as_object_mut().unwrap().remove("bytes_on_disk");
        let recall: Value =
            serde_json::from_str(&run(&["recall", "why did the deploy fail", "--json"])).unwrap();
        let ids: Vec<&str> = recall["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["node"]["id"].as_str())
            .collect();
        (stats, ids.join(","), run(&["session", "sess-0001", "--json"]))
    };
    let original = views(&d.db());
    let from_backup = d.tmp.path().join("r1.ctxg");
    on(&from_backup, &["restore", "--from", backup.to_str().unwrap()]).assert().success();
    let from_log = d.tmp.path().join("r2.ctxg");
    on(&from_log, &["restore", "--from", log.to_str().unwrap()]).assert().success();
    assert_eq!(views(&from_backup), original, "restored from the backup");
    let (stats, recall, timeline) = views(&from_log);
    assert_eq!(stats["nodes"], original.0["nodes"], "restored from the log");
    assert_eq!(stats["edges"], original.0["edges"], "restored from the log");
    assert_eq!(stats["log_length"], original.0["log_length"]);
    assert_eq!((recall, timeline), (original.1, original.2), "restored from the log");
    // Restore builds a new store only.
    let out = d.cmd(&["restore", "--from", log.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
