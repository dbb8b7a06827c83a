//! Output for people: tables that fit, one time zone per output, counts in the right number,
//! sentences for empty results, and reads that do not show as enrichment lag.

use serde_json::Value;

use super::{Dir, stdout};

const EVENT: &str = r#"{"event_id":"e1","event_type":"tool.execute","occurred_at":"2026-11-20T09:00:00+01:00","session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"failed","payload":{"error":"timeout after 30s while the orders database was being vacuumed by the nightly maintenance job"},"entities":[{"name":"orders-db","entity_type":"service","role":"object"}]}"#;
const LATER: &str = r#"{"event_id":"e2","event_type":"tool.execute","occurred_at":"2026-11-20T10:00:00Z","session_id":"s1","agent_id":"planner","trace_id":"t1","tool_name":"sql_query","status":"completed","parent_event_id":"e1","payload":{"result":"42 rows"}}"#;

fn demo_like(d: &Dir) {
    let f = d.write("in.jsonl", &format!("{EVENT}\n{LATER}\n"));
    d.cmd(&["ingest", f.to_str().unwrap()]).assert().success();
}

#[test]
fn tables_fit_100_columns_unless_wide() {
    let d = Dir::new();
    demo_like(&d);
    let narrow = stdout(&mut d.cmd(&["session", "s1"]));
    assert!(narrow.lines().all(|l| l.chars().count() <= 100), "{narrow}");
    let wide = stdout(&mut d.cmd(&["session", "s1", "--wide"]));
    assert!(wide.lines().any(|l| l.chars().count() > 100), "{wide}");
}

#[test]
fn one_output_shows_times_in_one_zone() {
    let d = Dir::new();
    demo_like(&d);
    let out = stdout(&mut d.cmd(&["--utc", "chain", "e2"]));
    assert!(out.contains("2026-11-20T08:00:00.000Z"), "{out}");
    assert!(out.contains("2026-11-20T10:00:00.000Z"), "{out}");
    assert!(!out.contains("+01:00"), "{out}");
}

#[test]
fn counts_agree_in_number_and_empty_results_are_sentences() {
    let d = Dir::new();
    let f = d.write("one.jsonl", &format!("{EVENT}\n"));
    let out = stdout(&mut d.cmd(&["ingest", f.to_str().unwrap()]));
    assert!(out.contains("1 line: 1 accepted, 0 duplicates, 0 rejected"), "{out}");
    let again = stdout(&mut d.cmd(&["ingest", f.to_str().unwrap()]));
    assert!(again.contains("1 line: 0 accepted, 1 duplicate, 0 rejected"), "{again}");
    let session = stdout(&mut d.cmd(&["session", "s1"]));
    assert!(session.starts_with("session s1: 1 event\n"), "{session}");

    let none = d.cmd(&["forgotten"]).assert().code(1);
    let text = String::from_utf8(none.get_output().stdout.clone()).unwrap();
    assert_eq!(text, "nothing has been forgotten in this store\n");
    let none = d.cmd(&["log", "--from", "99"]).assert().code(1);
    let text = String::from_utf8(none.get_output().stdout.clone()).unwrap();
    assert!(text.starts_with("no log records from position 99"), "{text}");
    let none = d.cmd(&["fact", "about", "nobody"]).assert().code(1);
    let text = String::from_utf8(none.get_output().stdout.clone()).unwrap();
    assert!(text.starts_with("no entity matches `nobody`"), "{text}");
}

#[test]
fn reads_do_not_show_as_enrichment_lag() {
    let d = Dir::new();
    demo_like(&d);
    let before: Value = serde_json::from_str(&stdout(&mut d.cmd(&["--json", "stats"]))).unwrap();
    d.cmd(&["recall", "why did the sql query fail"]).assert().success();
    let after: Value = serde_json::from_str(&stdout(&mut d.cmd(&["--json", "stats"]))).unwrap();
    // The recall wrote its access record ...
    assert_eq!(
        after["log_length"].as_u64().unwrap(),
        before["log_length"].as_u64().unwrap() + 1,
        "{after}"
    );
    // ... which needs no enrichment.
    assert_eq!(after["enrichment_lag"], 0, "{after}");
}

#[test]
fn forget_goes_ahead_without_a_terminal_and_rollup_times_are_readable() {
    let d = Dir::new();
    demo_like(&d);
    // Standard input is not a terminal here: no question is asked.
    d.cmd(&["forget", "event", "e2"]).assert().success();
    d.cmd(&["memory", "save", "--kind", "decision", "--topic", "db", "--content", "vacuum at 3am"])
        .assert()
        .success();
    let out = stdout(&mut d.cmd(&["--utc", "rollup"]));
    let first = out.lines().next().unwrap();
    // `rollup from 2026-11-19T03:04:05.678Z to 2026-11-26T03:04:05.678Z`: milliseconds, one zone.
    let times: Vec<&str> = first.split(' ').filter(|w| w.ends_with('Z')).collect();
    assert_eq!(times.len(), 2, "{first}");
    assert!(times.iter().all(|t| t.len() == "2026-11-19T03:04:05.678Z".len()), "{first}");
}
