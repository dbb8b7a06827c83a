//! Out-of-order arrival: reorders a trace the way a real collector receives it.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// Share of events that arrive late; the rest keep their place relative to each other.
const LATE_SHARE: f64 = 0.3;

/// Returns `events` in a realistic out-of-order arrival order.
///
/// Most events arrive in order; about a third are delayed by up to
/// `max_displacement` positions (a slow exporter, a retried batch), so children
/// sometimes arrive before their parents. No event ends up more than
/// `max_displacement` positions away from where it started, and the same
/// `seed` always gives the same order.
pub fn shuffled_arrival(events: Vec<Value>, seed: u64, max_displacement: usize) -> Vec<Value> {
    if max_displacement == 0 {
        return events;
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    // Each event gets a due position in [i, i + d]; sorting by due moves an event
    // at most d places: everything more than d before it stays before it,
    // everything more than d after it stays after it. A late event queues behind
    // the on-time event due at the same position, so even d = 1 reorders.
    let mut keyed: Vec<(usize, bool, usize, Value)> = events
        .into_iter()
        .enumerate()
        .map(|(i, event)| {
            let delay = if rng.random_bool(LATE_SHARE) {
                rng.random_range(1..=max_displacement)
            } else {
                0
            };
            (i.saturating_add(delay), delay > 0, i, event)
        })
        .collect();
    keyed.sort_unstable_by_key(|&(due, late, i, _)| (due, late, i));
    keyed.into_iter().map(|(_, _, _, event)| event).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn numbered(n: usize) -> Vec<Value> {
        (0..n).map(|i| json!({ "i": i })).collect()
    }

    fn positions(shuffled: &[Value]) -> Vec<usize> {
        shuffled.iter().map(|e| e["i"].as_u64().unwrap() as usize).collect()
    }

    #[test]
    fn is_a_permutation_within_the_displacement_bound() {
        for d in [1, 3, 10, 50] {
            let shuffled = shuffled_arrival(numbered(1_000), 42, d);
            let order = positions(&shuffled);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..1_000).collect::<Vec<_>>());
            for (pos, &orig) in order.iter().enumerate() {
                assert!(pos.abs_diff(orig) <= d, "event {orig} moved to {pos} with d={d}");
            }
            assert_ne!(order, (0..1_000).collect::<Vec<_>>(), "d={d} should reorder something");
        }
    }

    #[test]
    fn children_sometimes_arrive_before_their_parents() {
        let events: Vec<Value> = crate::trace(&crate::TraceConfig::default()).collect();
        let shuffled = shuffled_arrival(events.clone(), 5, 8);
        assert_eq!(shuffled.len(), events.len());
        let mut arrived = std::collections::BTreeSet::new();
        let mut early_children = 0;
        for event in &shuffled {
            if let Some(parent) = event.get("parent_event_id")
                && !arrived.contains(parent.as_str().unwrap())
            {
                early_children += 1;
            }
            arrived.insert(event["event_id"].as_str().unwrap());
        }
        assert!(early_children > 0);
        assert!(
            early_children < events.len() / 4,
            "{early_children} early children is not 'sometimes'"
        );
    }

    #[test]
    fn zero_displacement_keeps_order_and_same_seed_is_stable() {
        assert_eq!(positions(&shuffled_arrival(numbered(50), 1, 0)), (0..50).collect::<Vec<_>>());
        assert_eq!(shuffled_arrival(numbered(200), 9, 5), shuffled_arrival(numbered(200), 9, 5));
        assert!(shuffled_arrival(Vec::new(), 9, 5).is_empty());
    }
}
