//! Stage 3, summaries: one per session and per day, SUMMARIZES edges to what they summarise,
//! rebuilt deterministically.

use ctxgraph::{Direction, IngestOptions, NodeKey, View};
use serde_json::json;

use super::{dump, engine, trace};

#[test]
fn sessions_and_days_are_summarised_deterministically() {
    let (_dir, mut e) = engine();
    e.ingest_jsonl(trace(400).as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let report = e.consolidate().unwrap();
    let snap = e.owner_reader().unwrap();
    let sessions: std::collections::BTreeSet<String> = snap
        .events(None, 1000)
        .unwrap()
        .iter()
        .map(|n| n.props["session_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(report.sessions as usize, sessions.len());
    assert!(report.days >= 2, "the trace spans several days");
    assert_eq!(report.edges, 400 + report.sessions, "one edge per event and per session summary");

    let s = snap.node(&NodeKey::new("Summary", "session:sess-0001")).unwrap().unwrap();
    let events = snap.timeline("sess-0001", 1000).unwrap();
    assert_eq!(s.props["event_count"], json!(events.len()));
    assert_eq!(s.props["time_range"][0], events[0].event.props["occurred_at"]);
    assert_eq!(s.props["created_at"], events.last().unwrap().event.props["occurred_at"]);
    assert!(s.props["content"].as_str().unwrap().starts_with("Session sess-0001: "));
    let out = snap.edges(&s.key, Some("SUMMARIZES"), Direction::Out).unwrap();
    assert_eq!(out.len(), events.len());
    let up = snap.edges(&s.key, Some("SUMMARIZES"), Direction::In).unwrap();
    assert_eq!(up.len(), 1, "a day summary summarises the session summary");
    assert!(up[0].key.from.id.starts_with("day:2026-11-"));
    let day = snap.node(&up[0].key.from).unwrap().unwrap();
    assert!(day.props["event_count"].as_u64().unwrap() >= events.len() as u64);
    assert_eq!(snap.view(View::Hierarchical, None, 10_000).unwrap().len() as u64, report.edges);
    let agent = events[0].event.props["agent_id"].as_str().unwrap().to_owned();
    let by_agent = snap.search(&agent, 10_000).unwrap();
    assert!(by_agent.iter().any(|(n, _)| n.key == s.key), "summaries are found by their agents");
    let counts = snap.search("highlights", 10_000).unwrap();
    assert!(
        counts.iter().all(|(n, _)| n.key.label != "Summary"),
        "a summary's counts and labels are not words it is found by"
    );
    drop(snap);

    let before = dump(&e);
    e.consolidate().unwrap();
    assert_eq!(dump(&e), before, "consolidating again changes nothing");
    e.reproject(&mut |_, _| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    e.consolidate().unwrap();
    assert_eq!(dump(&e), before, "the same log gives the same summaries");
    let total: u64 = e
        .owner_reader()
        .unwrap()
        .nodes("Summary", None, 1000)
        .unwrap()
        .iter()
        .filter(|n| n.props["scope"] == "day")
        .map(|n| n.props["event_count"].as_u64().unwrap())
        .sum();
    assert_eq!(total, 400, "every event is counted in exactly one day");
}
