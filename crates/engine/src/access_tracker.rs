//! Access tracking: which events recalls returned, noted in memory and written in batches.
//!
//! Salience grows with an event's `access_count` (see [`crate::salience`]). Writing a record per
//! read would turn every read into a write, so [`crate::Engine::recall`] only notes the events it
//! returns in an [`AccessTracker`] (a map update under a mutex: no I/O on the read path) and
//! [`crate::Engine::flush_access`] writes everything pending as one `access` record, which the
//! projection folds into the events' `access_count` and `last_accessed_at`.
//!
//! Who flushes when: the CLI after each `recall`; the server with the next write, once
//! [`FLUSH_ACCESS_AT`] events are pending and the writer is free, and when it shuts down.
//! Engines share a tracker through an `Arc` ([`crate::Engine::set_access_tracker`]), so the
//! reader engines of a server tenant note into the tracker its writer flushes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use ctxgraph_ontology::{MAX_ACCESS_COUNT, MAX_ACCESS_EVENTS, validate_value};
use ctxgraph_store::{GraphReader, GraphStore};

use crate::error::Error;
use crate::recall::ContextPack;

/// Distinct events a tracker holds by default: one `access` record's worth.
pub const DEFAULT_ACCESS_CAPACITY: usize = MAX_ACCESS_EVENTS;
/// Pending events at which a server flushes without waiting for a write.
pub const FLUSH_ACCESS_AT: usize = 256;

/// The reads of one event not yet written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessNote {
    /// The event returned.
    pub event_id: String,
    /// How many times.
    pub count: u64,
    /// When last.
    pub last_accessed_at: DateTime<Utc>,
}

/// Reads of events waiting to be written as an `access` record: bounded, thread-safe, shared
/// between engines through an `Arc`.
///
/// When it holds `capacity` distinct events, reads of events not yet in it are dropped (and
/// counted, see [`AccessTracker::dropped`]) rather than flushed: a flush is a write, and noting
/// happens on the read path. Events already pending keep counting. Salience is a ranking signal,
/// so losing a few reads under sustained load without flushes is the cheaper failure.
#[derive(Debug)]
pub struct AccessTracker {
    pending: Mutex<Pending>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Pending {
    events: BTreeMap<String, (u64, DateTime<Utc>)>,
    dropped: u64,
}

impl Default for AccessTracker {
    fn default() -> Self {
        AccessTracker::new(DEFAULT_ACCESS_CAPACITY)
    }
}

impl AccessTracker {
    /// A tracker holding at most `capacity` distinct events (clamped to 1 to one record's
    /// worth, [`MAX_ACCESS_EVENTS`]).
    pub fn new(capacity: usize) -> AccessTracker {
        AccessTracker {
            pending: Mutex::new(Pending::default()),
            capacity: capacity.clamp(1, MAX_ACCESS_EVENTS),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Pending> {
        // Every update leaves the map whole, so a panic elsewhere cannot leave it half-written.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most distinct events held.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Note one read of each of `event_ids` at `at`.
    pub fn note<'a>(&self, event_ids: impl IntoIterator<Item = &'a str>, at: DateTime<Utc>) {
        let mut p = self.lock();
        for id in event_ids {
            add(&mut p, self.capacity, id, 1, at);
        }
    }

    /// Note the events of a context pack (its other items are not tracked), read now.
    pub fn note_pack(&self, pack: &ContextPack) {
        let events = pack.items.iter().filter(|i| i.node.key.label == "Event");
        self.note(events.map(|i| i.node.key.id.as_str()), Utc::now());
    }

    /// Distinct events pending.
    pub fn pending(&self) -> usize {
        self.lock().events.len()
    }

    /// Reads dropped because the tracker was full, since it was made.
    pub fn dropped(&self) -> u64 {
        self.lock().dropped
    }

    /// Take everything pending, sorted by event id, leaving the tracker empty.
    pub fn take(&self) -> Vec<AccessNote> {
        std::mem::take(&mut self.lock().events)
            .into_iter()
            .map(|(event_id, (count, last_accessed_at))| AccessNote {
                event_id,
                count,
                last_accessed_at,
            })
            .collect()
    }

    /// Put back notes that could not be written, merged with what was noted since.
    pub fn restore(&self, notes: Vec<AccessNote>) {
        let mut p = self.lock();
        for n in notes {
            add(&mut p, self.capacity, &n.event_id, n.count, n.last_accessed_at);
        }
    }
}

fn add(p: &mut Pending, capacity: usize, id: &str, count: u64, at: DateTime<Utc>) {
    if let Some((c, last)) = p.events.get_mut(id) {
        *c = c.saturating_add(count).min(MAX_ACCESS_COUNT);
        *last = (*last).max(at);
    } else if p.events.len() < capacity {
        p.events.insert(id.to_owned(), (count, at));
    } else {
        p.dropped = p.dropped.saturating_add(count);
    }
}

impl crate::Engine {
    /// The tracker recalls note their events in.
    pub fn access_tracker(&self) -> &Arc<AccessTracker> {
        &self.access
    }

    /// Note recalls in `tracker` from now on, to share it with other engines of the same store
    /// (a server's readers and writer). Notes pending in the tracker replaced stay there.
    pub fn set_access_tracker(&mut self, tracker: Arc<AccessTracker>) {
        self.access = tracker;
    }

    /// Write every pending access as one `access` record (nothing when none is pending); returns
    /// how many events it named.
    ///
    /// On a failed write the notes go back to the tracker for the next flush. Two identical
    /// batches written in the same millisecond are one record (the second a duplicate), which
    /// loses those reads: acceptable for a ranking signal.
    pub fn flush_access(&mut self) -> Result<usize, Error> {
        let notes = self.access.take();
        if notes.is_empty() {
            return Ok(0);
        }
        // Validated as a value: a full batch may exceed the byte limit on incoming records,
        // which bounds what clients send, not what the engine writes. Event ids come from the
        // graph and times from the clock, so a refusal is a bug; the notes are not kept for a
        // retry that would fail again.
        let at = crate::knowledge::now();
        let record =
            validate_value(&self.schema, &self.options().limits, access_record(&notes, &at))?;
        // Not `append_one`: an access record is neither indexed nor read back, so it is
        // appended on any backend. Its commit is not waited for: no caller was promised it,
        // and the next synced commit (any write's) makes it durable with it.
        let outcome = self.ingest_one_as(&record, ctxgraph_store::Durability::Deferred);
        match outcome {
            Ok(crate::IngestOutcome::New(position)) => {
                self.enriched_past_access(position)?;
                Ok(notes.len())
            }
            Ok(crate::IngestOutcome::Duplicate(_)) => Ok(notes.len()),
            Err(e) => {
                self.access.restore(notes);
                Err(e)
            }
        }
    }
}

impl crate::Engine {
    /// An access record has nothing to enrich: when stage 2 was level with the log before the
    /// record at `position`, it stays level, so a store that was only read shows no enrichment
    /// lag. (A crash before this commit leaves a lag of one record that `enrich` clears.)
    fn enriched_past_access(&mut self, position: u64) -> Result<(), Error> {
        // A remote store has no stage 2 to keep level.
        let crate::backend::Backend::Embedded(store) = &mut self.backend else { return Ok(()) };
        let mut w = store.begin_write_as(ctxgraph_store::Durability::Deferred)?;
        if w.enriched_through()?.saturating_add(1) == position {
            w.set_enriched_through(position)?;
        }
        w.commit()?;
        Ok(())
    }
}

/// The `access` record of `notes` (not empty), written at `at`.
pub(crate) fn access_record(notes: &[AccessNote], at: &str) -> serde_json::Value {
    let events: Vec<serde_json::Value> = notes
        .iter()
        .map(|n| {
            serde_json::json!({
                "event_id": n.event_id,
                "count": n.count,
                "last_accessed_at": crate::knowledge::record_time(n.last_accessed_at),
            })
        })
        .collect();
    serde_json::json!({"record_type": "access", "at": at, "events": events})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_795_000_000 + s, 0).unwrap()
    }

    #[test]
    fn notes_sum_counts_and_keep_the_latest_time() {
        let tracker = AccessTracker::default();
        tracker.note(["e2", "e1"], t(5));
        tracker.note(["e1"], t(3));
        assert_eq!(tracker.pending(), 2);
        let notes = tracker.take();
        assert_eq!(tracker.pending(), 0);
        assert_eq!(
            notes,
            [
                AccessNote { event_id: "e1".into(), count: 2, last_accessed_at: t(5) },
                AccessNote { event_id: "e2".into(), count: 1, last_accessed_at: t(5) },
            ]
        );
        // A failed write puts them back, merged with what came since.
        tracker.note(["e1"], t(9));
        tracker.restore(notes);
        let again = tracker.take();
        assert_eq!((again[0].count, again[0].last_accessed_at), (3, t(9)));
    }

    #[test]
    fn a_full_tracker_drops_new_events_but_counts_known_ones() {
        let tracker = AccessTracker::new(2);
        tracker.note(["a", "b", "c", "d"], t(0));
        tracker.note(["a"], t(1));
        assert_eq!((tracker.pending(), tracker.dropped()), (2, 2));
        let notes = tracker.take();
        assert_eq!(notes.iter().map(|n| n.count).collect::<Vec<_>>(), [2, 1]);
        assert_eq!(AccessTracker::new(0).capacity(), 1);
        assert_eq!(AccessTracker::new(usize::MAX).capacity(), MAX_ACCESS_EVENTS);
    }

    #[test]
    fn threads_share_one_tracker() {
        let tracker = Arc::new(AccessTracker::default());
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let tracker = Arc::clone(&tracker);
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        tracker.note(["e1", "e2"], Utc::now());
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert!(tracker.take().iter().all(|n| n.count == 400));
    }

    #[test]
    fn the_record_of_a_batch_validates() {
        let schema = ctxgraph_ontology::Schema::core().unwrap();
        let tracker = AccessTracker::default();
        tracker.note(["e1", "e2"], t(0));
        let record = access_record(&tracker.take(), "2026-11-20T09:00:00.000Z");
        let valid = ctxgraph_ontology::validate_value(
            &schema,
            &ctxgraph_ontology::Limits::default(),
            record,
        )
        .unwrap();
        assert_eq!(valid.kind(), ctxgraph_ontology::RecordKind::Access);
    }
}
