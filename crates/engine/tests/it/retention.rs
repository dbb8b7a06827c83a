//! Retention: tiers by age, archive out of the graph (never out of the log), reprojection keeps
//! archived events out unless asked to bring them back.

use ctxgraph::{IngestOptions, NodeKey, RetentionOptions, Tier, salience};
use serde_json::json;

use super::{dump, engine};

/// Events of one session at the given ages (days before 2026-11-30T00:00Z) and importance hints.
fn aged(days: &[(f64, &str)]) -> String {
    let end = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z").unwrap();
    let mut lines = String::new();
    for (i, (age, status)) in days.iter().enumerate() {
        let at = end - chrono::Duration::seconds((age * 86_400.0) as i64);
        let line = json!({
            "event_id": format!("e{i}"), "event_type": "tool.execute", "session_id": "s1",
            "agent_id": "a", "trace_id": "t", "tool_name": "grep", "status": status,
            "occurred_at": at.to_rfc3339(),
        });
        lines.push_str(&format!("{line}\n"));
    }
    lines
}

fn as_of() -> RetentionOptions {
    let t = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z").unwrap();
    RetentionOptions { as_of: Some(t), ..RetentionOptions::default() }
}

#[test]
fn tiers_follow_the_seed_table() {
    let o = RetentionOptions::default();
    let h = 3_600_000_000_000_i64;
    assert_eq!(o.tier(0), Tier::Hot);
    assert_eq!(o.tier(23 * h), Tier::Hot);
    assert_eq!(o.tier(24 * h), Tier::Warm);
    assert_eq!(o.tier(7 * 24 * h - 1), Tier::Warm);
    assert_eq!(o.tier(7 * 24 * h), Tier::Cold);
    assert_eq!(o.tier(30 * 24 * h), Tier::Archive);
}

#[test]
fn salience_decays_slower_with_importance_and_access() {
    assert!((salience(0.0, 5, 0) - 1.0).abs() < 1e-12);
    assert!((salience(7.0, 5, 0) - (-1.0f64).exp()).abs() < 1e-12, "S = 7 days at importance 5");
    assert!(salience(7.0, 10, 0) > salience(7.0, 5, 0));
    assert!(salience(7.0, 5, 3) > salience(7.0, 5, 0));
    assert!(salience(30.0, 5, 0) < salience(7.0, 5, 0));
}

#[test]
fn archive_removes_from_the_graph_keeps_the_log_and_survives_reprojection() {
    let (_dir, mut e) = engine();
    // Ages: hot, warm, then three cold ones (a routine success between two failures), archive.
    let text = aged(&[
        (0.1, "completed"),
        (3.0, "completed"),
        (10.0, "failed"),
        (12.0, "completed"),
        (14.0, "failed"),
        (40.0, "completed"),
    ]);
    let ingested = e.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();
    assert_eq!(ingested.accepted, 6);
    e.enrich(&mut |_, _| {}).unwrap();
    let importance = |e: &ctxgraph::Engine, id: &str| {
        e.owner_reader().unwrap().event(id).unwrap().unwrap().props["importance_score"]
            .as_i64()
            .unwrap()
    };
    assert!(importance(&e, "e2") >= 5, "a failure is important");
    assert!(importance(&e, "e3") < 5, "a routine success is not");

    let plan = e.retention_plan(&as_of()).unwrap();
    assert_eq!(plan.tiers, [1, 1, 3, 1]);
    // The owner's read of the tiers (no write lock) finds what the plan finds.
    let tiers = e.owner_reader().unwrap().retention_tiers(&as_of()).unwrap();
    assert_eq!(
        (tiers.tiers, tiers.archived, tiers.as_of.clone()),
        (plan.tiers, 0, plan.as_of.clone())
    );
    let viewer = ctxgraph::Principal::new("v", "default", ["admin".to_owned()]).unwrap();
    let refused = e.reader(&viewer).unwrap().retention_tiers(&as_of()).unwrap_err();
    assert_eq!(refused.code(), "access.owner_only", "it counts hidden events");
    assert_eq!(plan.archived, 2, "the old event and the unimportant cold one");
    assert!(e.owner_reader().unwrap().event("e5").unwrap().is_some(), "a plan changes nothing");

    let report = e.apply_retention(&as_of()).unwrap();
    assert_eq!(report.archived, 2);
    let tiers = e.owner_reader().unwrap().retention_tiers(&as_of()).unwrap();
    assert_eq!((tiers.tiers, tiers.archived), ([1, 1, 2, 0], 2), "the archived left the tiers");
    let snap = e.owner_reader().unwrap();
    let kept =
        [("e0", true), ("e1", true), ("e2", true), ("e3", false), ("e4", true), ("e5", false)];
    for (id, kept) in kept {
        assert_eq!(snap.event(id).unwrap().is_some(), kept, "{id}");
    }
    assert_eq!(snap.checkpoints().unwrap().log_length, 6, "the log keeps every record");
    // The session order closes over the gap: e2 -> e3 -> e4 becomes e2 -> e4.
    let out = |id: &str| {
        snap.edges(&NodeKey::new("Event", id), Some("FOLLOWS"), ctxgraph::Direction::Out).unwrap()
    };
    assert_eq!(out("e2").len(), 1);
    assert_eq!(out("e2")[0].key.to.id, "e4");
    assert!(out("e4").is_empty(), "nothing earlier is left in the graph");
    drop(snap);
    let after = dump(&e);
    assert_eq!(e.apply_retention(&as_of()).unwrap().archived, 0, "idempotent");
    assert_eq!(dump(&e), after);

    e.reproject(&mut |_, _| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    assert_eq!(dump(&e), after, "reprojection keeps archived events out");
    e.reproject_with(true, &mut |_, _| {}).unwrap();
    e.enrich(&mut |_, _| {}).unwrap();
    let snap = e.owner_reader().unwrap();
    assert!(snap.event("e3").unwrap().is_some() && snap.event("e5").unwrap().is_some());
}
