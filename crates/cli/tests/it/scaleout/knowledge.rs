//! The knowledge and decision-memory commands on the scale-out backend: the same sequence of
//! type, slot, checklist, goal, fact, document, receipt, memory and entity-decision commands run
//! on a store file and on a scale-out store (a live worker folding, then stages 2 and 3 by their
//! workers) writes the same records, refuses the same bad input with the same errors, and
//! reads back the same lists, documents, memories, candidates and search results.

use serde_json::{Value, json};
use tempfile::TempDir;

use super::{LiveWorker, fresh_store, running_worker};

/// A command's exit code, JSON output (`Null` when it printed none) and error text, with what
/// differs between two runs taken out: times written "now" (today's date), acknowledgement
/// times and timings, decimals past the sixth, and the store's name.
pub(super) fn run(dir: &TempDir, db: &str, args: &[&str]) -> (i32, Value, String) {
    fn strip(v: &mut Value, today: &str) {
        match v {
            Value::Object(map) => {
                map.remove("timings_us");
                map.remove("recorded_at");
                map.remove("last_accessed_at");
                map.remove("seconds");
                map.values_mut().for_each(|v| strip(v, today));
            }
            Value::Array(list) => list.iter_mut().for_each(|v| strip(v, today)),
            Value::String(s) if s.starts_with(today) => *s = "<now>".into(),
            // Confidences that decay with the time of the read differ past the sixth decimal.
            Value::Number(n) if n.is_f64() => {
                let x = n.as_f64().unwrap_or_default();
                *v = json!((x * 1e6).round() / 1e6);
            }
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
    }
    let out = assert_cmd::Command::cargo_bin("ctxgraph")
        .unwrap()
        .current_dir(dir.path())
        .env_remove("CTXGRAPH_DB")
        .args(["--db", db, "--json"])
        .args(args)
        .output()
        .unwrap();
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    strip(&mut v, &today);
    let err = String::from_utf8_lossy(&out.stderr).replace(db, "<db>");
    (out.status.code().unwrap_or(-1), v, err)
}

const CHECKLIST: &str = r#"
name = "IdentifyFilm"

[[slots]]
name = "film"
expect_labels = ["Film"]
relation = "INSTANCE_OF"
cardinality = "ONE"

[[slots]]
name = "genre"
"#;

const NOTES: &str = "# Atlas\n\nAlice owns the atlas service. Bob reviews every change to it.\n\n\
                     The atlas service depends on redis.\n";

/// The writes, in order: each one's exit code must be 0 unless it names the rule it breaks.
fn writes(dir: &TempDir) -> Vec<(Vec<String>, Option<&'static str>)> {
    let path = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let events = [
        json!({"event_id": "k1", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:00:00Z",
            "session_id": "s1", "agent_id": "a", "trace_id": "t1",
            "entities": [{"name": "atlas", "entity_type": "service"}]}),
        json!({"event_id": "k2", "event_type": "tool.execute", "occurred_at": "2026-11-20T09:01:00Z",
            "session_id": "s1", "agent_id": "a", "trace_id": "t1", "parent_event_id": "k1",
            "entities": [{"name": "redis", "entity_type": "service"}]}),
    ];
    let trace = path("t.jsonl", &events.iter().map(|e| format!("{e}\n")).collect::<String>());
    let receipt = path(
        "r.json",
        &json!([{"id": "r1", "task": "deploy_atlas", "actor": "user/ops1",
            "referenced_inputs": {"events": ["k1"]},
            "policies_checked": [{"id": "policy/review", "result": "allow"}],
            "action": "deploy", "outcome": {"status": "success"},
            "timestamps": {"committed": "2026-11-20T10:00:00Z"}}])
        .to_string(),
    );
    let bad_receipt = path(
        "bad.json",
        &json!({"task": "t", "actor": "a", "action": "x", "outcome": "success",
            "committed_at": "2026-11-20T10:00:00Z", "referenced_inputs": {"events": ["ghost"]}})
        .to_string(),
    );
    let checklist = path("films.toml", CHECKLIST);
    let notes = path("notes.md", NOTES);
    let memory = |id: &str, topic: &str, content: &str, at: &str, extra: &[&str]| {
        let mut args = vec!["memory", "save", "--id", id, "--kind", "decision", "--topic", topic];
        args.extend(["--content", content, "--session", "s1", "--at", at]);
        args.extend(extra);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let list = |args: &[&str]| args.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
    vec![
        (list(&["ingest", &trace]), None),
        (list(&["type", "add", "Film", "--description", "A motion picture"]), None),
        (list(&["type", "instance", "Alien", "Film", "--entity-type", "concept"]), None),
        (list(&["slot", "set", "alien", "genre", "horror", "--confidence", "0.8"]), None),
        (list(&["checklist", "define", &checklist]), None),
        (
            list(&[
                "goal",
                "add",
                "Watch horror classics",
                "--user",
                "alice",
                "--create-user",
                "--influences",
                "IdentifyFilm",
                "--prefers",
                "genre=Horror",
            ]),
            None,
        ),
        (
            list(&[
                "fact",
                "add",
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
            ]),
            None,
        ),
        // Names the entities the first created: seen once the worker folded it.
        (list(&["fact", "add", "alice", "reports_to", "bob", "--confidence", "0.5"]), None),
        (list(&["fact", "add", "atlas", "depends_on", "redis"]), None),
        (
            list(&["fact", "add", "alien", "tagged", "Novel", "--object-is-type"]),
            Some("slots.unknown_type"),
        ),
        (list(&["fact", "add", "Zed", "reports_to", "bob"]), Some("fact.unknown_entity")),
        (list(&["fact", "retract", "user:zed|reports_to|user:bob"]), Some("fact.unknown_fact")),
        (list(&["doc", "add", &notes, "--url", "https://wiki.example/atlas"]), None),
        (list(&["receipt", "add", &receipt]), None),
        (list(&["receipt", "add", &bad_receipt]), Some("receipt.unknown_input")),
        (
            memory(
                "memory_1",
                "cache",
                "Use redis for the atlas cache",
                "2026-11-20T09:30:00Z",
                &[],
            ),
            None,
        ),
        (
            memory(
                "memory_2",
                "cache",
                "Move the atlas cache to memcached",
                "2026-11-21T09:30:00Z",
                &["--supersedes", "memory_1"],
            ),
            None,
        ),
        (
            list(&[
                "memory",
                "save",
                "--kind",
                "decision",
                "--topic",
                "cache",
                "--content",
                "x",
                "--supersedes",
                "ghost",
            ]),
            Some("memory.unknown_memory"),
        ),
        (list(&["entities", "reject", "user:alice", "user:bob", "--reason", "two people"]), None),
        (
            list(&["entities", "merge", "user:alice", "user:nobody"]),
            Some("decision.unknown_entity"),
        ),
    ]
}

/// The reads compared once every stage has run.
const READS: &[&[&str]] = &[
    &["type", "list"],
    &["slot", "list", "alien"],
    &["checklist", "list"],
    &["checklist", "check", "IdentifyFilm", "concept:alien"],
    &["goal", "list"],
    &["fact", "list", "--all"],
    &["fact", "about", "alice"],
    &["fact", "contradictions"],
    &["doc", "list"],
    &["receipt", "list"],
    &["memory", "list"],
    // Link confidences decay with time: the two stores are read at one instant, not two.
    &["memory", "show", "memory_2", "--as-of", "2026-11-22T00:00:00Z"],
    &["evolution", "cache", "--as-of", "2026-11-22T00:00:00Z"],
    &["impact", "memory_1", "--as-of", "2026-11-22T00:00:00Z"],
    &["rollup", "--since", "2026-11-19", "--until", "2026-11-23"],
    &["entities", "candidates", "--status", "all"],
    &["search", "atlas depends on redis"],
    &["schema", "show"],
];

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn knowledge_and_memory_commands_give_a_store_file_s_answers() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let worker: LiveWorker = running_worker(&dir, &to);
    for (args, rule) in writes(&dir) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let file = run(&dir, "file.ctxg", &args);
        let remote = run(&dir, &to, &args);
        match rule {
            None => assert_eq!(file.0, 0, "{args:?}: {}", file.2),
            Some(rule) => {
                assert_ne!(file.0, 0, "{args:?} is refused");
                assert!(file.2.contains(rule), "{args:?}: {}", file.2);
            }
        }
        assert_eq!(remote, file, "{args:?}");
    }
    drop(worker);
    // The derived work: stage 2 and 3 by their workers on the server, consolidation on the file.
    for args in [&["worker", "--once"][..], &["worker", "--stage", "enrich", "--once"]] {
        let (code, _, err) = run(&dir, &to, args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let (code, _, err) = run(&dir, &to, &["worker", "--stage", "consolidate", "--once"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(&dir, "file.ctxg", &["consolidate"]);
    assert_eq!(code, 0, "{err}");
    let mut found = 0;
    for args in READS {
        let want = run(&dir, "file.ctxg", args);
        assert_eq!(run(&dir, &to, args), want, "{args:?}");
        found += want.1.as_array().map_or(usize::from(want.1.is_object()), Vec::len);
    }
    assert!(found > READS.len(), "the reads found something");
}

/// A score's numbers, flattened: `system/family/measure` → value.
fn scores(report: &Value) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for (system, families) in report["systems"].as_object().unwrap() {
        for (family, measures) in families.as_object().unwrap() {
            for (measure, v) in measures.as_object().unwrap() {
                if let Some(x) = v.as_f64() {
                    out.push((format!("{system}/{family}/{measure}"), x));
                }
            }
        }
    }
    out
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn eval_traces_on_a_scale_out_store_scores_what_a_store_file_scores() {
    let dir = TempDir::new().unwrap();
    let small = ["eval", "traces", "--events", "600", "--per-family", "2"];
    let rankings = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    let (code, file, err) =
        run(&dir, "unused.ctxg", &[&small[..], &["--rankings", &rankings("f")]].concat());
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    let (code, remote, err) =
        run(&dir, &to, &[&small[..], &["--rankings", &rankings("r")]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        (file["backend"].as_str(), remote["backend"].as_str()),
        (Some("file"), Some("redis"))
    );
    assert!(file["decisions"].as_u64().unwrap() > 0 && file["facts"].as_u64().unwrap() > 0);
    for field in ["questions", "decisions", "facts", "sessions", "ingest"] {
        assert_eq!(remote[field], file[field], "{field}");
    }
    let (want, got) = (scores(&file), scores(&remote));
    assert_eq!(want.len(), got.len());
    assert!(want.iter().any(|(_, x)| *x > 0.0), "recall found something: {file}");
    for ((name, a), (other, b)) in want.iter().zip(&got) {
        assert_eq!(name, other);
        assert!((a - b).abs() <= 0.01, "{name}: {a} on a store file, {b} on the scale-out store");
    }
    // The trace went to a new store: a second run under the name is refused.
    let (code, _, err) = run(&dir, &to, &small);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("eval.target_not_empty"), "{err}");
}
