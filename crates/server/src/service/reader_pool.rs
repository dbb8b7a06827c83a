//! A tenant's reader engines, handed out first come, first served within two lines.
//!
//! Why a line and not a condition variable: a read that found every engine in use waited on a
//! condition variable, and a read arriving as an engine came back took it before the woken one
//! could run; the woken one went back to wait at the end. Under 64 clients some reads waited
//! many turns. Now a returned engine (or the room to open one) goes straight to the read that
//! has waited longest, and a read that arrives while others wait queues behind them.
//!
//! Why two lines: a light read (one node, one session's timeline) holds an engine for about a
//! millisecond, a recall or a search for several, and in one line a light read waited behind
//! every recall ahead of it (a 64-client mixed load: 78 ms at p50 to read one event). Light
//! reads now wait in a line of their own, served first when an engine comes back, but at most
//! [`LIGHT_BURST`] in a row while heavy reads wait, so a stream of light reads cannot starve
//! the heavy ones.

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

/// Light reads served in a row while heavy reads wait, before the heavy read that waited
/// longest gets the next engine.
pub(super) const LIGHT_BURST: usize = 4;

/// Which line a read waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lane {
    /// A read that holds an engine briefly: one node by id, one session's timeline.
    Light,
    /// Every other read (recall, search, memory search, exports).
    Heavy,
}

/// A read's turn: now, or once the reads before it are served.
pub(super) enum Turn {
    /// Its lease.
    Now(Lease),
    /// Its place in line: the lease arrives here.
    Wait(Receiver<Lease>),
}

/// Reader engines of a tenant: the idle ones (with the schema generation they were opened at),
/// how many are open, idle or in use, and the reads waiting for one, in arrival order per line.
#[derive(Default)]
pub(super) struct ReaderPool {
    idle: Vec<(u64, Box<Engine>)>,
    open: usize,
    waiting: VecDeque<SyncSender<Lease>>,
    waiting_light: VecDeque<SyncSender<Lease>>,
    /// Light reads served since a heavy read last was, while heavy reads waited.
    light_in_a_row: usize,
}

impl ReaderPool {
    /// A read's turn at `generation` (the tenant's schema generation now), with at most `max`
    /// engines open: an idle engine of that generation, or room to open one, unless reads of
    /// its line (or, for a heavy read, of either line) wait already; else a place in its line.
    /// Idle engines of older generations are closed.
    pub(super) fn take(&mut self, generation: u64, max: usize, lane: Lane) -> Turn {
        let before = self.idle.len();
        self.idle.retain(|(g, _)| *g == generation);
        self.open -= before - self.idle.len();
        let ahead = match lane {
            Lane::Light => !self.waiting_light.is_empty(),
            Lane::Heavy => !self.waiting_light.is_empty() || !self.waiting.is_empty(),
        };
        if !ahead {
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
        match lane {
            Lane::Light => self.waiting_light.push_back(lease),
            Lane::Heavy => self.waiting.push_back(lease),
        }
        Turn::Wait(turn)
    }

    /// A read is done with its lease: `engine` with the generation it was opened at, or none
    /// (an engine that could not be opened, or a lease given up unused). The engine, when it is
    /// of `generation` (the tenant's now), else the room it leaves, goes to the light read that
    /// waited longest, or to the heavy one when none does or [`LIGHT_BURST`] light reads went
    /// in a row while it waited; with no read waiting the engine stays idle and the room closes.
    pub(super) fn give_back(&mut self, engine: Option<(u64, Box<Engine>)>, generation: u64) {
        let mut lease = match engine {
            Some((g, e)) if g == generation => Lease::Engine(e),
            Some(_) | None => Lease::Room,
        };
        loop {
            let heavy_waits = !self.waiting.is_empty();
            let light = !self.waiting_light.is_empty()
                && (!heavy_waits || self.light_in_a_row < LIGHT_BURST);
            let next =
                if light { self.waiting_light.pop_front() } else { self.waiting.pop_front() };
            let Some(next) = next else { break };
            match next.try_send(lease) {
                Ok(()) => {
                    self.light_in_a_row = match (light, heavy_waits) {
                        (true, true) => self.light_in_a_row + 1,
                        (true, false) | (false, _) => 0,
                    };
                    return;
                }
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

    /// Reads waiting for an engine, both lines.
    #[cfg(test)]
    pub(super) fn waiting(&self) -> usize {
        self.waiting.len() + self.waiting_light.len()
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
        assert!(room(pool.take(0, 1, Lane::Heavy)).is_none());
        let first = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        let second = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        assert_eq!((pool.open(), pool.waiting()), (1, 2));
        pool.give_back(None, 0);
        assert!(got_room(&first) && !got_room(&second));
        // A newcomer while the second still waits gets in line behind it, even with room to
        // open another engine.
        let third = room(pool.take(0, 2, Lane::Heavy)).unwrap();
        pool.give_back(None, 0);
        assert!(got_room(&second) && !got_room(&third));
        pool.give_back(None, 0);
        assert!(got_room(&third));
        // None waits: room while fewer than the most are open.
        assert!(room(pool.take(0, 2, Lane::Heavy)).is_none());
        assert_eq!((pool.open(), pool.waiting()), (2, 0));
    }

    #[test]
    fn a_read_that_stopped_waiting_is_passed_over_and_an_unclaimed_room_closes() {
        let mut pool = ReaderPool::default();
        assert!(room(pool.take(0, 1, Lane::Heavy)).is_none());
        let gone = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        let next = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        drop(gone);
        pool.give_back(None, 0);
        assert!(got_room(&next));
        assert_eq!((pool.open(), pool.waiting()), (1, 0));
        pool.give_back(None, 0);
        assert_eq!(pool.open(), 0);
        assert!(room(pool.take(0, 1, Lane::Heavy)).is_none());
    }

    #[test]
    fn light_reads_go_first_but_a_waiting_heavy_read_gets_every_few_engines() {
        let mut pool = ReaderPool::default();
        assert!(room(pool.take(0, 1, Lane::Heavy)).is_none());
        let heavy = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        let lights: Vec<Receiver<Lease>> =
            (0..LIGHT_BURST + 2).map(|_| room(pool.take(0, 1, Lane::Light)).unwrap()).collect();
        // The light reads that came after the heavy one are served before it, LIGHT_BURST in
        // a row, then the heavy one, then the light ones left.
        for light in &lights[..LIGHT_BURST] {
            pool.give_back(None, 0);
            assert!(got_room(light) && !got_room(&heavy));
        }
        pool.give_back(None, 0);
        assert!(got_room(&heavy));
        for light in &lights[LIGHT_BURST..] {
            pool.give_back(None, 0);
            assert!(got_room(light));
        }
        assert_eq!(pool.waiting(), 0);
        // Light reads served while no heavy read waits do not count towards a burst.
        pool.give_back(None, 0);
        assert!(room(pool.take(0, 1, Lane::Light)).is_none());
        let next: Vec<Receiver<Lease>> =
            (0..LIGHT_BURST + 3).map(|_| room(pool.take(0, 1, Lane::Light)).unwrap()).collect();
        for light in &next[..2] {
            pool.give_back(None, 0);
            assert!(got_room(light));
        }
        let late_heavy = room(pool.take(0, 1, Lane::Heavy)).unwrap();
        for light in &next[2..LIGHT_BURST + 2] {
            pool.give_back(None, 0);
            assert!(got_room(light) && !got_room(&late_heavy));
        }
        pool.give_back(None, 0);
        assert!(got_room(&late_heavy) && !got_room(&next[LIGHT_BURST + 2]));
        pool.give_back(None, 0);
        assert!(got_room(&next[LIGHT_BURST + 2]));
    }
}
