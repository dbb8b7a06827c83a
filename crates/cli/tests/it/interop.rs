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
    // A backup copies everything: the owner's only.
    let refused = d.cmd(&["--as", "viewer", "backup", "copy.ctxg"]).output().unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("access.owner_only"));
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

fn fixture(name: &str) -> String {
    super::workspace_root().join("tests/fixtures/interop").join(name).to_str().unwrap().to_owned()
}

/// `import ARGS --json` twice: the first summary, and the second must add nothing.
fn import_twice(d: &Dir, args: &[&str]) -> Value {
    let run = || {
        let mut all = vec!["import"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--json", "--quiet"]);
        let out = d.cmd(&all).output().unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = run();
    let again = run();
    for part in ["events", "facts", "memories", "documents"] {
        assert_eq!(again[part]["accepted"], json!(0), "{args:?} again adds no {part}: {again}");
        assert_eq!(again[part]["duplicates"], first[part]["accepted"], "{args:?}: {again}");
    }
    first
}

#[test]
fn the_mcp_memory_file_imports_once_and_recall_returns_its_observations_with_provenance() {
    let d = Dir::new();
    let first =
        import_twice(&d, &["mcp-memory", &fixture("memory.jsonl"), "--at", "2025-03-12T08:00:00Z"]);
    // 7 observations (events and facts), one entity without any (an event); 3 relations.
    assert_eq!(
        (first["events"]["accepted"].clone(), first["facts"]["accepted"].clone()),
        (json!(8), json!(10)),
        "{first}"
    );
    let pack: Value = serde_json::from_str(&stdout(&mut d.cmd(&[
        "recall",
        "What does Priya Raman lead?",
        "--json",
    ])))
    .unwrap();
    let items = pack["items"].as_array().unwrap();
    let observation = items
        .iter()
        .find(|i| {
            i["node"]["properties"]["payload"]["text"] == json!("Leads the payments platform team")
        })
        .unwrap_or_else(|| panic!("recall returns the observation: {pack}"));
    assert_eq!(observation["provenance"]["source"], json!("mcp-memory"), "{observation}");
    assert!(observation["provenance"]["log_position"].as_u64().is_some(), "{observation}");
    let fact = items
        .iter()
        .find(|i| i["node"]["label"] == json!("Fact"))
        .unwrap_or_else(|| panic!("recall returns the relation as a fact: {pack}"));
    assert_eq!(
        fact["node"]["id"],
        json!("user:priya_raman|leads|project:payments_platform"),
        "{fact}"
    );
    // Each observation is also a fact about its entity, whose source is the observation event.
    let facts: Value =
        serde_json::from_str(&stdout(&mut d.cmd(&["fact", "about", "Priya_Raman", "--json"])))
            .unwrap();
    let noted = facts["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["literal"] == json!("Leads the payments platform team"))
        .unwrap_or_else(|| panic!("the observation is a fact: {facts}"));
    assert_eq!(noted["sources"], json!([observation["node"]["id"]]), "{noted}");
    // A relation type the schema lacked is now a declared predicate; one it had is reused.
    let about = stdout(&mut d.cmd(&["fact", "about", "Ledger_Service", "--json"]));
    assert!(about.contains("depends_on") && about.contains("belongs_to"), "{about}");
}

#[test]
fn episodes_memories_and_notes_import_once() {
    let d = Dir::new();
    let episodes = import_twice(&d, &["episodes", &fixture("episodes.json")]);
    assert_eq!(episodes["events"]["accepted"], json!(3), "{episodes}");
    let session = stdout(&mut d.cmd(&["session", "incident-4711", "--json"]));
    let timeline: Value = serde_json::from_str(&session).unwrap();
    let agents: Vec<&str> = timeline["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"]["properties"]["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(agents, ["Marco", "episodes", "Dana"], "in reference-time order: {session}");

    let memories = import_twice(&d, &["mem0", &fixture("mem0.json")]);
    assert_eq!(memories["events"]["accepted"], json!(2), "{memories}");
    assert_eq!(memories["memories"]["accepted"], json!(2), "{memories}");
    let found = stdout(&mut d.cmd(&["memory", "search", "peanut allergy", "--json"]));
    assert!(
        found.contains("Is allergic to peanuts"),
        "the memory is a decision memory too: {found}"
    );
    let alex: Value =
        serde_json::from_str(&stdout(&mut d.cmd(&["session", "mem0:alex", "--json"]))).unwrap();
    let first = &alex["events"][0]["event"]["properties"];
    assert_eq!(
        (first["user_id"].as_str(), first["agent_id"].as_str()),
        (Some("alex"), Some("travel-assistant")),
        "{alex}"
    );
    assert_eq!(first["occurred_at"], json!("2024-11-02T17:15:00.000Z"), "{alex}");

    let notes = import_twice(&d, &["markdown", &fixture("notes")]);
    assert_eq!(
        (notes["documents"]["accepted"].clone(), notes["facts"]["accepted"].clone()),
        (json!(3), json!(6)),
        "{notes}"
    );
    let about = stdout(&mut d.cmd(&["fact", "about", "Ledger", "--json"]));
    assert!(about.contains("mentioned_in") && about.contains("Payments Team.md"), "{about}");
    let docs = stdout(&mut d.cmd(&["doc", "list", "--json"]));
    assert!(
        docs.contains("projects/Payments Team.md") && docs.contains("Billing Service"),
        "{docs}"
    );
}

#[test]
fn recall_entity_over_http_returns_the_imported_observations_with_their_sources() {
    let mut s = super::server::Server::start();
    // Serving first, then stopped: the tenant's store is imported into while no server holds it.
    assert_eq!(s.get("/v1/stats", &s.keys.reader).0, 200);
    assert!(s.terminate());
    let store = s.data().join("tenants").join("acme.ctxg");
    let mut import = assert_cmd::Command::cargo_bin("ctxgraph").unwrap();
    import.env_remove("CTXGRAPH_DB").arg("--db").arg(&store);
    import.args(["import", "mcp-memory", &fixture("memory.jsonl"), "--quiet"]).assert().success();
    s.restart();
    let (status, body) =
        s.post("/v1/entities/recall", &s.keys.reader, &json!({"entity": "Ledger_Service"}));
    assert_eq!(status, 200, "{body}");
    let facts = body["facts"].as_array().unwrap();
    let outage = facts
        .iter()
        .find(|f| f["literal"].as_str().is_some_and(|t| t.contains("40 minute outage")))
        .unwrap_or_else(|| panic!("the observation comes back: {body}"));
    let source = outage["sources"][0].as_str().unwrap();
    assert!(source.starts_with("mcp-memory:"), "{outage}");
    let (status, event) = s.get(&format!("/v1/events/{source}"), &s.keys.reader);
    assert_eq!(status, 200, "the source is the observation's event: {event}");
    assert!(facts.iter().any(|f| f["predicate"] == json!("depends_on")), "{body}");
}

#[test]
fn a_backup_taken_while_the_server_writes_is_a_consistent_store() {
    let s = super::server::Server::start();
    let store = s.data().join("tenants").join("acme.ctxg");
    let first: Vec<Value> =
        (0..20).map(|i| super::server::event(&format!("a{i}"), "s1", i, json!({}))).collect();
    let (status, _) = s.post("/v1/events", &s.keys.writer, &json!({ "events": first }));
    assert_eq!(status, 200);
    let backups = tempfile::TempDir::new().unwrap();
    std::thread::scope(|scope| {
        let writer = scope.spawn(|| {
            for batch in 0..10 {
                let events: Vec<Value> = (0..20)
                    .map(|i| super::server::event(&format!("b{batch}-{i}"), "s2", i, json!({})))
                    .collect();
                let (status, body) =
                    s.post("/v1/events", &s.keys.writer, &json!({ "events": events }));
                assert_eq!(status, 200, "{body}");
            }
        });
        for n in 0..5 {
            let copy = backups.path().join(format!("b{n}.ctxg"));
            let mut c = assert_cmd::Command::cargo_bin("ctxgraph").unwrap();
            c.env_remove("CTXGRAPH_DB").arg("--db").arg(&store).arg("backup").arg(&copy);
            c.assert().success();
        }
        writer.join().unwrap();
    });
    for n in 0..5 {
        let copy = backups.path().join(format!("b{n}.ctxg"));
        let mut c = assert_cmd::Command::cargo_bin("ctxgraph").unwrap();
        c.env_remove("CTXGRAPH_DB").arg("--db").arg(&copy).args(["stats", "--json"]);
        let stats: Value = serde_json::from_str(&stdout(&mut c)).unwrap();
        // One read transaction: every record in the copy is projected, nothing half-written.
        assert_eq!(stats["projected_through"], stats["log_length"], "{stats}");
        assert_eq!(stats["nodes"]["Event"], stats["log_length"], "{stats}");
        assert!(stats["log_length"].as_u64().unwrap() >= 20, "{stats}");
    }
}
