//! Consumer groups on a store's stream: what workers read with, a dead worker's entries claimed
//! by another, stages with cursors of their own, and the lag.

use std::time::Duration;

use ctxgraph_scaleout::{ConsumerName, GroupState, LogConsumer};

use crate::harness::{Backend, RedisBackend};
use crate::log::event;

fn name(n: &str) -> ConsumerName {
    ConsumerName::parse(n).unwrap()
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_dead_workers_entries_are_claimed_by_another_and_each_is_done_once() {
    let mut b = RedisBackend::new();
    let url = b.url().clone();
    let mut dying = LogConsumer::join(&url, &name("project"), &name("worker-a")).unwrap();
    b.write(|l| {
        for i in 1..=10 {
            l.append(&event(&format!("e{i}"), "a", "x"), "t").unwrap();
        }
    });
    assert_eq!(dying.next(4, None).unwrap(), [1, 2, 3, 4]);
    assert_eq!(dying.ack(&[1, 2]).unwrap(), 2);
    // worker-a dies with 3 and 4 read but not done.
    drop(dying);
    let mut next = LogConsumer::join(&url, &name("project"), &name("worker-b")).unwrap();
    assert_eq!(next.next(4, None).unwrap(), [5, 6, 7, 8], "new entries, not the dead worker's");
    assert_eq!(
        next.state().unwrap(),
        GroupState { pending: 6, lag: 2, delivered_through: 8 },
        "3 and 4 (worker-a) and 5 to 8 (worker-b) are pending; 9 and 10 not yet delivered"
    );
    // Entries idle for at least an hour: none yet.
    assert!(next.claim_idle(Duration::from_secs(3600), 10).unwrap().is_empty());
    // With no minimum, the replacement takes the dead worker's entries (and its own back).
    let claimed = next.claim_idle(Duration::ZERO, 10).unwrap();
    assert_eq!(claimed, [3, 4, 5, 6, 7, 8]);
    assert_eq!(next.ack(&claimed).unwrap(), 6);
    assert_eq!(next.ack(&claimed).unwrap(), 0, "an entry is acknowledged once");
    assert_eq!(next.next(10, None).unwrap(), [9, 10]);
    next.ack(&[9, 10]).unwrap();
    assert_eq!(next.state().unwrap(), GroupState { pending: 0, lag: 0, delivered_through: 10 });
    assert!(next.next(10, Some(Duration::from_millis(10))).unwrap().is_empty(), "nothing new");
    assert!(next.claim_idle(Duration::ZERO, 10).unwrap().is_empty(), "nothing pending");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn each_stage_has_its_own_cursor_and_a_blocked_read_wakes_on_an_append() {
    let mut b = RedisBackend::new();
    let url = b.url().clone();
    b.write(|l| l.append(&event("e1", "a", "x"), "t").unwrap());
    let mut project = LogConsumer::join(&url, &name("project"), &name("w1")).unwrap();
    assert_eq!(project.next(10, None).unwrap(), [1]);
    // A stage joined later still starts at the first entry.
    let mut enrich = LogConsumer::join(&url, &name("enrich"), &name("w1")).unwrap();
    assert_eq!(enrich.state().unwrap().lag, 1);
    assert_eq!(enrich.next(10, None).unwrap(), [1]);
    // Joining an existing group again is no error.
    LogConsumer::join(&url, &name("project"), &name("w2")).unwrap();
    let mut writer = b.another();
    let appended = std::thread::spawn(move || {
        writer.write(|l| l.append(&event("e2", "a", "x"), "t").unwrap());
    });
    // Waits for the append (the wait is far longer than the append takes).
    let got = project.next(10, Some(Duration::from_secs(60))).unwrap();
    appended.join().unwrap();
    assert_eq!(got, [2]);
}
