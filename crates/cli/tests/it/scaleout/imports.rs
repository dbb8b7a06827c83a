//! The imports that write facts, memories and documents (`import mcp-memory`, `episodes`,
//! `mem0`, `markdown`) on the scale-out backend: run on a store file and on a scale-out store
//! (a live worker folding, then stages 2 and 3 by their workers), they report the same counts
//! and leave the same facts, memories, documents and timelines.

use tempfile::TempDir;

use super::knowledge::run;
use super::{LiveWorker, fresh_store, running_worker};

fn fixture(name: &str) -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/interop/").to_owned() + name
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn imports_of_facts_memories_and_notes_give_a_store_file_s_answers() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let worker: LiveWorker = running_worker(&dir, &to);
    let imports: [Vec<String>; 4] = [
        vec![
            "mcp-memory".into(),
            fixture("memory.jsonl"),
            "--at".into(),
            "2025-03-12T08:00:00Z".into(),
        ],
        vec!["episodes".into(), fixture("episodes.json")],
        vec!["mem0".into(), fixture("mem0.json")],
        vec!["markdown".into(), fixture("notes")],
    ];
    let mut accepted = 0;
    for args in &imports {
        let mut all = vec!["import"];
        all.extend(args.iter().map(String::as_str));
        let file = run(&dir, "file.ctxg", &all);
        assert_eq!(file.0, 0, "{all:?}: {}", file.2);
        assert_eq!(run(&dir, &to, &all), file, "{all:?}");
        for part in ["events", "facts", "memories", "documents"] {
            accepted += file.1[part]["accepted"].as_u64().unwrap_or(0);
        }
    }
    assert!(accepted > 10, "the imports wrote records: {accepted}");
    drop(worker);
    for args in [
        &["worker", "--once"][..],
        &["worker", "--stage", "enrich", "--once"],
        &["worker", "--stage", "consolidate", "--once"],
    ] {
        let (code, _, err) = run(&dir, &to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let (code, _, err) = run(&dir, "file.ctxg", &["consolidate"]);
    assert_eq!(code, 0, "{err}");
    for args in [
        &["fact", "list", "--all"][..],
        &["memory", "list"],
        &["doc", "list"],
        &["session", "incident-4711"],
        &["memory", "search", "peanut allergy"],
    ] {
        let want = run(&dir, "file.ctxg", args);
        assert_eq!(want.0, 0, "{args:?}: {}", want.2);
        assert_eq!(run(&dir, &to, args), want, "{args:?}");
    }
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn the_automatic_link_setting_switches_on_a_scale_out_store_as_on_a_store_file() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let worker: LiveWorker = running_worker(&dir, &to);
    for (id, content, at) in [
        ("m1", "Use redis for the atlas cache", "2026-11-20T09:30:00Z"),
        ("m2", "Keep redis for the atlas cache sessions", "2026-11-20T09:40:00Z"),
    ] {
        let args = [
            "memory",
            "save",
            "--id",
            id,
            "--kind",
            "decision",
            "--topic",
            "cache",
            "--content",
            content,
            "--session",
            "s1",
            "--at",
            at,
        ];
        for db in ["file.ctxg", to.as_str()] {
            let (code, _, err) = run(&dir, db, &args);
            assert_eq!(code, 0, "{args:?} on {db}: {err}");
        }
    }
    drop(worker);
    let links = |db: &str| {
        let (code, mut shown, err) = run(&dir, db, &["memory", "show", "m2"]);
        assert_eq!(code, 0, "{err}");
        // Decays with the time of the read, which differs between the two.
        for link in shown["links"].as_array_mut().into_iter().flatten() {
            link.as_object_mut().map(|l| l.remove("effective_confidence"));
        }
        shown
    };
    let mut seen = Vec::new();
    for (switch, want) in [("off", false), ("on", true)] {
        for db in ["file.ctxg", to.as_str()] {
            let (code, _, err) = run(&dir, db, &["memory", "auto-link", switch]);
            assert_eq!(code, 0, "auto-link {switch} on {db}: {err}");
            let (code, status, err) = run(&dir, db, &["memory", "auto-link"]);
            assert_eq!(code, 0, "{err}");
            assert_eq!(status["auto_link"].as_bool(), Some(want), "{db}: {status}");
        }
        assert_eq!(links(&to), links("file.ctxg"), "the links after auto-link {switch}");
        seen.push(links("file.ctxg"));
    }
    assert_ne!(seen[0], seen[1], "switching automatic links on links the memories again");
}
