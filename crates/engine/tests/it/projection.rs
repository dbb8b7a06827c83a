//! Projection determinism: incremental == reprojected, and arrival order does not matter.

use crate::validate_all;
use ctxgraph::{IngestOptions, Projection};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::{dump, engine, trace};

/// A random event over small pools, so that sessions, parents, entities and ties collide often.
fn event_strategy(n: usize) -> impl Strategy<Value = Vec<Value>> {
    let one = (
        0..3usize,                                                      // session
        0..20i64,                                                       // minute (ties happen)
        prop::option::of(0..n + 2), // parent index (>= n: a parent never written)
        0..3usize,                  // agent
        prop::option::of(0..2usize), // tool
        prop::collection::vec((0..4usize, 0..3usize, 0..5usize), 0..3), // entities: name, spelling, role
        prop::option::of(0..2usize),                                    // user
    );
    prop::collection::vec(one, 1..n).prop_map(|rows| {
        rows.iter()
            .enumerate()
            .map(|(i, (s, minute, parent, agent, tool, ents, user))| {
                let event_type = ["agent.invoke", "tool.execute", "llm.chat"][i % 3];
                let offset = ["Z", "+00:00"][i % 2];
                let mut e = json!({
                    "event_id": format!("e{i}"),
                    "event_type": event_type,
                    "occurred_at": format!("2026-11-20T09:{minute:02}:00{offset}"),
                    "session_id": format!("s{s}"),
                    "agent_id": format!("agent-{agent}"),
                    "trace_id": "t",
                    "payload": {"n": i},
                });
                if let Some(p) = parent
                    && *p != i {
                        e["parent_event_id"] = json!(format!("e{p}"));
                    }
                if let Some(t) = tool {
                    e["tool_name"] = json!(["sql_query", "web_search"][*t]);
                }
                if let Some(u) = user {
                    e["user_id"] = json!(format!("user-{u}"));
                }
                let names = [["Orders DB", "orders  db", "ORDERS DB"], ["refund", "Refund", "refund"],
                    ["billing-api", "Billing-API", "billing-api"], ["invoice.pdf", "Invoice.pdf", "invoice.pdf"]];
                let types = ["service", "concept", "service", "resource"];
                let roles = ["object", "result", "participant", "target", "subject"];
                let list: Vec<Value> = ents
                    .iter()
                    .map(|(n, sp, r)| json!({"name": names[*n][*sp], "entity_type": types[*n], "role": roles[*r]}))
                    .collect();
                if !list.is_empty() {
                    e["entities"] = Value::Array(list);
                }
                e
            })
            .collect()
    })
}

fn strip_positions(mut d: super::GraphDump) -> super::GraphDump {
    for n in &mut d.nodes {
        n.props.remove("global_position");
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// The incrementally built graph equals the one rebuilt from the log, whatever the arrival
    /// order, batch sizes, duplicates and refused conflicts.
    #[test]
    fn incremental_equals_reprojected(
        events in event_strategy(24),
        order in any::<prop::sample::Index>(),
        batch in 1..7usize,
        dup_every in 2..6usize,
        conflict_at in any::<prop::sample::Index>(),
    ) {
        let (_dir, mut engine) = engine();
        let mut arrivals = events.clone();
        let k = order.index(arrivals.len());
        arrivals.rotate_left(k);
        arrivals.reverse();
        // Duplicates: resend some events verbatim.
        let dups: Vec<Value> = arrivals.iter().step_by(dup_every).cloned().collect();
        arrivals.extend(dups);
        // A conflict: same id, different content.
        let mut conflict = events[conflict_at.index(events.len())].clone();
        conflict["payload"] = json!({"changed": true});
        arrivals.insert(arrivals.len() / 2, conflict);

        let records = validate_all(&engine, &arrivals);
        let mut conflicts = 0;
        for chunk in records.chunks(batch) {
            for outcome in engine.ingest_batch(chunk, Projection::Inline, false).unwrap() {
                if outcome.is_err() { conflicts += 1; }
            }
        }
        // Whichever version arrived first won; every copy of the other was refused.
        prop_assert!(conflicts >= 1);
        let incremental = dump(&engine);
        engine.reproject(&mut |_, _| {}).unwrap();
        let rebuilt = dump(&engine);
        prop_assert_eq!(incremental, rebuilt);
    }

    /// A bulk load (`ingest_jsonl`: records validated and freed on a thread of their own, the
    /// write-ahead log copied on another) builds the graph, positions included, that batches
    /// given to `ingest_batch` build, with duplicates and a refused conflict.
    #[test]
    fn a_bulk_load_builds_what_batches_build(
        events in event_strategy(24),
        batch in 1..7usize,
        dup_every in 2..6usize,
        conflict_at in any::<prop::sample::Index>(),
    ) {
        let mut arrivals = events.clone();
        let dups: Vec<Value> = arrivals.iter().step_by(dup_every).cloned().collect();
        arrivals.extend(dups);
        let mut conflict = events[conflict_at.index(events.len())].clone();
        conflict["payload"] = json!({"changed": true});
        arrivals.insert(arrivals.len() / 2, conflict);

        let (_d1, mut batches) = engine();
        let records = validate_all(&batches, &arrivals);
        for chunk in records.chunks(batch) {
            batches.ingest_batch(chunk, Projection::Inline, false).unwrap();
        }
        let (_d2, mut bulk) = engine();
        let text: String = arrivals.iter().map(|v| format!("{v}\n")).collect();
        let options = IngestOptions { batch_size: batch, ..IngestOptions::default() };
        let report = bulk.ingest_jsonl(text.as_bytes(), &options, &mut |_| {}).unwrap();
        prop_assert!(report.progress.rejected >= 1);
        prop_assert_eq!(dump(&batches), dump(&bulk));
    }

    /// The graph after any arrival order equals the graph after in-order arrival (apart from
    /// `global_position`, which records arrival).
    #[test]
    fn arrival_order_does_not_change_the_graph(
        events in event_strategy(24),
        seed in any::<u64>(),
    ) {
        let (_d1, mut in_order) = engine();
        let records = validate_all(&in_order, &events);
        in_order.ingest_batch(&records, Projection::Inline, false).unwrap();

        let (_d2, mut shuffled) = engine();
        let mut arrivals = events.clone();
        // Deterministic shuffle from the seed (Fisher–Yates with an LCG).
        let mut x = seed | 1;
        for i in (1..arrivals.len()).rev() {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            arrivals.swap(i, (x >> 33) as usize % (i + 1));
        }
        arrivals.push(arrivals[0].clone());
        for r in validate_all(&shuffled, &arrivals) {
            shuffled.ingest_batch(&[r], Projection::Inline, false).unwrap();
        }
        prop_assert_eq!(strip_positions(dump(&in_order)), strip_positions(dump(&shuffled)));
    }
}

#[test]
fn deferred_projection_catches_up_to_the_same_graph() {
    let (_d1, mut inline) = engine();
    let text = trace(300);
    inline.ingest_jsonl(text.as_bytes(), &IngestOptions::default(), &mut |_| {}).unwrap();

    let (_d2, mut deferred) = engine();
    let opts = IngestOptions {
        projection: Projection::Deferred,
        batch_size: 64,
        ..IngestOptions::default()
    };
    deferred.ingest_jsonl(text.as_bytes(), &opts, &mut |_| {}).unwrap();
    let stats = deferred.owner_reader().unwrap().store_stats().unwrap();
    assert_eq!(stats.projection_lag(), 300);
    deferred.catch_up(&mut |_, _| {}).unwrap();
    assert_eq!(deferred.owner_reader().unwrap().store_stats().unwrap().projection_lag(), 0);
    assert_eq!(dump(&inline), dump(&deferred));
}
