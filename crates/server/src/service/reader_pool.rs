//! A tenant's reader engines, handed out first come, first served.
//!
//! Why a line and not a condition variable: a read that found every engine in use waited on a
//! condition variable, and a read arriving as an engine came back took it before the woken one
//! could run; the woken one went back to wait at the end. Under 64 clients some reads waited
//! many turns. Now a returned engine (or the room to open one) goes straight to the read that
//! has waited longest, and a read that arrives while others wait queues behind them.

use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};

use ctxgraph::Engine;

/// What a read is given to run on.
pub(super) enum Lease {
    /// An engine opened at the schema generation it is handed at (boxed: it moves through
    /// channels and the idle list, and is large).
    Engine(Box<Engine>),
    /// Room to open an engine of its own, already counted as open.
    Room,
}

/// A read's turn: now, or once the reads before it are served.
pub(super) enum Turn {
    /// Its lease.
    Now(Lease),
    /// Its place in line: the lease arrives here.
    Wait(Receiver<Lease>),
}

/// Reader engines of a tenant: the idle ones (with the schema generation they were opened at),
/// how many are open, idle or in use, and the reads waiting for one, in arrival order.
#[derive(Default)]
pub(super) struct ReaderPool {
    idle: Vec<(u64, Box<Engine>)>,
    open: usize,
    waiting: VecDeque<SyncSender<Lease>>,
}

impl ReaderPool {
    /// A read's turn at `generation` (the tenant's schema generation now), with at most `max`
    /// engines open: an idle engine of that generation, or room to open one, unless other
    /// reads wait already; else a place in line. Idle engines of older generations are closed.
    pub(super) fn take(&mut self, generation: u64, max: usize) -> Turn {
        let before = self.idle.len();
        self.idle.retain(|(g, _)| *g == generation);
        self.open -= before - self.idle.len();
        if self.waiting.is_empty() {
            if let Some((_, e)) = self.idle.pop() {
                return Turn::Now(Lease::Engine(e));
            }
            if self.open < max {
                self.open += 1;
                return Turn::Now(Lease::Room);
            }
        }
        // One slot: the lease is sent while the pool is locked, so sending never blocks.
        let (lease, turn) = sync_channel(1);
        self.waiting.push_back(lease);
        Turn::Wait(turn)
    }

    /// A read is done with its lease: `engine` with the generation it was opened at, or none
    /// (an engine that could not be opened, or a lease given up unused). The engine, when it is
    /// of `generation` (the tenant's now), else the room it leaves, goes to the read that
    /// waited longest; with no read waiting the engine stays idle and the room closes.
    pub(super) fn give_back(&mut self, engine: Option<(u64, Box<Engine>)>, generation: u64) {
        let mut lease = match engine {
            Some((g, e)) if g == generation => Lease::Engine(e),
            Some(_) | None => Lease::Room,
        };
        while let Some(next) = self.waiting.pop_front() {
            match next.try_send(lease) {
                Ok(()) => return,
                // A read that no longer waits (its thread unwound): the next one.
                Err(TrySendError::Disconnected(l) | TrySendError::Full(l)) => lease = l,
            }
        }
        match lease {
            Lease::Engine(e) => self.idle.push((generation, e)),
            Lease::Room => self.open -= 1,
        }
    }

    /// Engines open, idle or in use.
    #[cfg(test)]
    pub(super) fn open(&self) -> usize {
        self.open
    }

    /// Reads waiting for an engine.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn room(turn: Turn) -> Option<Receiver<Lease>> {
        match turn {
            Turn::Now(Lease::Room) => None,
            Turn::Wait(r) => Some(r),
            Turn::Now(Lease::Engine(_)) => panic!("no engine was given back"),
        }
    }

    fn got_room(line: &Receiver<Lease>) -> bool {
        matches!(line.try_recv(), Ok(Lease::Room))
    }

    #[test]
    fn waiting_reads_are_served_in_arrival_order_and_newcomers_queue_behind_them() {
        let mut pool = ReaderPool::default();
        assert!(room(pool.take(0, 1)).is_none());
        let first = room(pool.take(0, 1)).unwrap();
        let second = room(pool.take(0, 1)).unwrap();
        assert_eq!((pool.open(), pool.waiting()), (1, 2));
        pool.give_back(None, 0);
        assert!(got_room(&first) && !got_room(&second));
        // A newcomer while the second still waits gets in line behind it, even with room to
        // open another engine.
        let third = room(pool.take(0, 2)).unwrap();
        pool.give_back(None, 0);
        assert!(got_room(&second) && !got_room(&third));
        pool.give_back(None, 0);
        assert!(got_room(&third));
        // None waits: room while fewer than the most are open.
        assert!(room(pool.take(0, 2)).is_none());
        assert_eq!((pool.open(), pool.waiting()), (2, 0));
    }

    #[test]
    fn a_read_that_stopped_waiting_is_passed_over_and_an_unclaimed_room_closes() {
        let mut pool = ReaderPool::default();
        assert!(room(pool.take(0, 1)).is_none());
        let gone = room(pool.take(0, 1)).unwrap();
        let next = room(pool.take(0, 1)).unwrap();
        drop(gone);
        pool.give_back(None, 0);
        assert!(got_room(&next));
        assert_eq!((pool.open(), pool.waiting()), (1, 0));
        pool.give_back(None, 0);
        assert_eq!(pool.open(), 0);
        assert!(room(pool.take(0, 1)).is_none());
    }
}
