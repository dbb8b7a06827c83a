//! Consumer groups on a store's stream: what workers read with, a dead worker's entries claimed
//! by another, stages with cursors of their own, and the lag.

use std::time::Duration;

use ctxgraph_scaleout::{ConsumerName, GroupProbe, GroupState, LogConsumer};

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

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_claim_and_read_asked_before_a_fold_and_acknowledgements_sent_unread_keep_their_order() {
    let mut b = RedisBackend::new();
    let url = b.url().clone();
    b.write(|l| {
        for i in 1..=6 {
            l.append(&event(&format!("e{i}"), "a", "x"), "t").unwrap();
        }
    });
    let mut dying = LogConsumer::join(&url, &name("project"), &name("worker-a")).unwrap();
    assert_eq!(dying.next(2, None).unwrap(), [1, 2]);
    drop(dying);

    // Acknowledgements sent without waiting, then a claim and a read asked in one pipeline:
    // the replies are read in order when the answer is taken.
    let mut w = LogConsumer::join(&url, &name("project"), &name("worker-b")).unwrap();
    assert_eq!(w.next(1, None).unwrap(), [3]);
    w.ack_later(&[3]).unwrap();
    w.ask_claim_idle_and_next(Duration::ZERO, 2).unwrap();
    assert_eq!(w.take_claimed_and_next().unwrap(), (vec![1, 2], vec![4, 5]));
    w.ack_later(&[1, 2, 4]).unwrap();
    // The next command reads the acknowledgements' replies first: they were applied.
    assert_eq!(w.state().unwrap(), GroupState { pending: 1, lag: 1, delivered_through: 5 });
    // An answer never taken is read and dropped before the next command; its entries stay
    // pending for this consumer until a claim takes them.
    w.ask_claim_idle_and_next(Duration::from_secs(3600), 10).unwrap();
    assert_eq!(w.state().unwrap(), GroupState { pending: 2, lag: 0, delivered_through: 6 });
    let err = w.take_claimed_and_next().unwrap_err();
    assert!(err.to_string().contains("did not ask for"), "{err}");
    assert_eq!(w.claim_idle(Duration::ZERO, 10).unwrap(), [5, 6]);
    assert_eq!(w.claim_idle_and_next(Duration::ZERO, 10).unwrap(), (vec![5, 6], vec![]));
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_group_probe_reads_what_a_look_of_its_own_reads_as_the_group_moves() {
    let mut b = RedisBackend::new();
    let url = b.url().clone();
    let mut probe = GroupProbe::new(&url, name("project"));
    // No stream yet, then a stream without the group: neither is created by looking.
    assert_eq!(probe.state().unwrap(), None);
    b.write(|l| {
        for i in 1..=6 {
            l.append(&event(&format!("e{i}"), "a", "x"), "t").unwrap();
        }
    });
    assert_eq!(probe.state().unwrap(), None);
    let mut worker = LogConsumer::join(&url, &name("project"), &name("w1")).unwrap();
    assert_eq!(worker.next(4, None).unwrap(), [1, 2, 3, 4]);
    let look = || LogConsumer::group_state(&url, &name("project")).unwrap();
    let first = probe.state().unwrap();
    assert_eq!(first, Some(GroupState { pending: 4, lag: 2, delivered_through: 4 }));
    assert_eq!(first, look());
    worker.ack(&[1, 2, 3]).unwrap();
    // The same probe, its connection held from the look before, sees the group move.
    let second = probe.state().unwrap();
    assert_eq!(second, Some(GroupState { pending: 1, lag: 2, delivered_through: 4 }));
    assert_eq!(second, look());
}
