//! A tenant's index upkeep: the vector index and the lexical index rebuilt, when enough was
//! written outside them, by a build off the writer.
//!
//! Why: a rebuild is seconds of CPU (k-means over every vector, every term's postings), and a
//! writer that rebuilds in place holds every ingest queued behind it for as long; that wait was
//! the server's ingest tail under load. So after a write the writer only decides that a
//! rebuild is due. A thread of the tenant's (one at a time, at the readers' lowered priority,
//! see [`super::priority`]) builds the indexes from a read snapshot on a connection of its own
//! ([`ctxgraph::Engine::prepare_indexes`]), then queues the install as a write of its own
//! ([`ctxgraph::Engine::install_indexes`]: one short transaction, between two groups). What was
//! written meanwhile stays outside the new index and is searched exactly, as between any two
//! builds.
//!
//! A build that a removal overtook (a forget, retention, reprojection, re-embedding or
//! consolidation between its snapshot and its install) is dropped at install and built again
//! after the next write. Should builds keep being dropped ([`MAX_STALE`] in a row: removals on
//! every write), the writer rebuilds in place as it used to, so the index never falls behind
//! for good.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

use ctxgraph::{Engine, IndexParts, PreparedIndexes};

use super::queue::Job;
use super::{ClearOnDrop, Tenant, lock};
use crate::metrics::Metrics;

/// Vectors outside the vector index (searched exactly until indexed) that make a rebuild worth
/// its cost after a write: at least this many, and at least 1/[`INDEX_FRACTION`] of those
/// indexed, up to what the searches share in memory (see [`rebuild_vectors_at`]).
const INDEX_AFTER: u64 = 2_000;
/// Every recall scores every vector outside the index. A tenant's searches share them in
/// memory up to [`ctxgraph::MAX_CACHED_UNINDEXED`] (the vector delta the writer keeps commit by
/// commit, or else a copy per change of the vectors), so they cost a recall a scan of memory,
/// not a read of the store: a quarter of the index may wait outside it, within that bound, and
/// the tenant rebuilds a quarter as often as at a sixteenth (each rebuild is CPU the readers
/// and the writer share).
const INDEX_FRACTION: u64 = 4;
/// Builds dropped in a row (each overtaken by a removal) after which the writer rebuilds in
/// place.
const MAX_STALE: u8 = 2;

/// Vectors outside the index that make the tenant rebuild it, for `indexed` vectors inside.
fn rebuild_vectors_at(indexed: u64) -> u64 {
    let shared = ctxgraph::MAX_CACHED_UNINDEXED as u64;
    INDEX_AFTER.max(indexed / INDEX_FRACTION).min(shared.max(INDEX_AFTER))
}

/// The indexes that lag far enough behind the writes to rebuild (none when the store cannot
/// say: the next write asks again).
fn lagging(w: &Engine) -> IndexParts {
    let Ok(s) = w.owner_reader() else { return IndexParts::default() };
    let (total, unindexed) = s.stats_vectors().unwrap_or((0, 0));
    let texts = s.text_docs_outside_index().unwrap_or(0);
    IndexParts {
        vectors: unindexed >= rebuild_vectors_at(total.saturating_sub(unindexed)),
        text: texts >= ctxgraph::TEXT_INDEX_REBUILD_AFTER,
    }
}

/// A tenant's index upkeep state.
#[derive(Default)]
pub(super) struct IndexUpkeep {
    /// Whether a build is running or its install is queued.
    building: Arc<AtomicBool>,
    /// Builds dropped as stale in a row.
    stale: AtomicU8,
}

impl IndexUpkeep {
    /// Whether a build holds a read snapshot or waits for its install (a checkpoint that must
    /// wait for every reader would wait for it).
    pub(super) fn building(&self) -> bool {
        self.building.load(Ordering::Acquire)
    }
}

impl Tenant {
    /// After a write, on the writer: start a build of the indexes that lag (unless one is
    /// running), or, after [`MAX_STALE`] dropped builds, rebuild them in place. Whether the
    /// writer rebuilt in place.
    pub(super) fn upkeep_indexes(
        self: &Arc<Self>,
        w: &mut Engine,
        nice: u8,
        metrics: &Metrics,
    ) -> bool {
        if self.indexes.building() {
            return false;
        }
        let parts = lagging(w);
        if !parts.vectors && !parts.text {
            return false;
        }
        if self.indexes.stale.load(Ordering::Acquire) >= MAX_STALE {
            let started = Instant::now();
            // A failure leaves the index as it was (searches still find the rest exactly) and
            // is retried after the next write.
            let ok = (!parts.vectors || w.index_vectors().is_ok())
                & (!parts.text || w.index_text().is_ok());
            self.indexes.stale.store(0, Ordering::Release);
            metrics.index_upkeep(if ok { "in_place" } else { "failed" }, started.elapsed());
            return true;
        }
        self.indexes.building.store(true, Ordering::Release);
        let guard = ClearOnDrop(Arc::clone(&self.indexes.building));
        let tenant = Arc::clone(self);
        let metrics = metrics.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("ctxgraph-index-{}", self.name))
            .spawn(move || tenant.build_indexes(parts, nice, guard, &metrics));
        // No thread (the process is out of them): the flag went with the closure; the next
        // write tries again.
        drop(spawned);
        false
    }

    /// The build thread: prepare from a snapshot of a connection of its own, at the readers'
    /// priority, then queue the install for the writer.
    fn build_indexes(
        self: Arc<Self>,
        parts: IndexParts,
        nice: u8,
        guard: ClearOnDrop,
        metrics: &Metrics,
    ) {
        super::priority::lower_for_reads(nice);
        let built = self.open_engine(false).ok().and_then(|e| e.prepare_indexes(parts).ok());
        let Some(prepared) = built else {
            metrics.index_upkeep("failed", std::time::Duration::ZERO);
            return;
        };
        let install_metrics = metrics.clone();
        let job = Job::Run {
            wanted: Arc::new(AtomicBool::new(true)),
            work: Box::new(move |t: &Tenant| {
                t.install_indexes(prepared, &install_metrics);
                drop(guard);
            }),
        };
        self.submit(job, metrics);
    }

    /// On the writer: install a prepared build, or drop it when a removal overtook it.
    fn install_indexes(&self, prepared: PreparedIndexes, metrics: &Metrics) {
        let started = Instant::now();
        let outcome = {
            let mut w = lock(&self.writer);
            w.install_indexes(prepared)
        };
        let label = match outcome {
            Ok(r) if r.stale.vectors || r.stale.text => {
                self.indexes.stale.fetch_add(1, Ordering::AcqRel);
                "stale"
            }
            Ok(_) => {
                self.indexes.stale.store(0, Ordering::Release);
                "installed"
            }
            Err(_) => "failed",
        };
        metrics.index_upkeep(label, started.elapsed());
        // The build's blobs were freed all at once: give them back now.
        super::release_free_memory();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::Service;
    use crate::wire::IngestRequest;
    use ctxgraph::{EngineOptions, Principal};
    use serde_json::{Value, json};

    fn events(from: usize, n: usize) -> Vec<Value> {
        (from..from + n)
            .map(|i| {
                json!({"event_id": format!("e{i}"), "event_type": "tool.execute",
                    "occurred_at": "2026-11-20T09:00:00Z", "session_id": format!("s{}", i % 23),
                    "agent_id": "a", "trace_id": format!("t{}", i % 41),
                    "tool_name": format!("tool{}", i % 37), "status": "completed"})
            })
            .collect()
    }

    /// `(vectors, outside the index)` once the tenant's upkeep has indexed every vector
    /// (waiting for the build thread and the install queued after it).
    fn indexed_once_idle(t: &Tenant) -> (u64, u64) {
        for _ in 0..6_000 {
            let counts = lock(&t.writer).owner_reader().unwrap().stats_vectors().unwrap();
            if counts.1 == 0 && !t.indexes.building() {
                return counts;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        lock(&t.writer).owner_reader().unwrap().stats_vectors().unwrap()
    }

    #[test]
    fn a_lagging_index_is_built_off_the_writer_then_in_place_after_stale_builds() {
        let dir = tempfile::TempDir::new().unwrap();
        let service = Service::open(dir.path(), EngineOptions::default()).unwrap();
        let who = Principal::new("w", "acme", ["writer".to_owned()]).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
        let ingest = |from: usize| {
            for start in (from..from + INDEX_AFTER as usize + 100).step_by(700) {
                let req = IngestRequest { events: events(start, 700) };
                assert_eq!(rt.block_on(service.ingest(&who, req)).unwrap().accepted, 700);
            }
        };
        ingest(0);
        let tenant = service.tenant(&who).unwrap();
        let (total, outside) = indexed_once_idle(&tenant);
        assert!(total >= INDEX_AFTER && outside == 0, "{total} {outside}");
        let metrics = service.metrics().render();
        assert!(
            metrics.contains("ctxgraph_index_writer_seconds_count{outcome=\"installed\"} 1"),
            "{metrics}"
        );
        assert!(
            metrics.contains("ctxgraph_index_writer_seconds_count{outcome=\"in_place\"} 0"),
            "{metrics}"
        );

        // After builds dropped as stale, the writer rebuilds in place.
        tenant.indexes.stale.store(MAX_STALE, Ordering::Release);
        ingest(10_000);
        let (total, outside) = indexed_once_idle(&tenant);
        assert!(total >= 2 * INDEX_AFTER && outside == 0, "{total} {outside}");
        let metrics = service.metrics().render();
        assert!(
            metrics.contains("ctxgraph_index_writer_seconds_count{outcome=\"in_place\"} 1"),
            "{metrics}"
        );
        assert_eq!(tenant.indexes.stale.load(Ordering::Acquire), 0);
    }

    #[test]
    fn the_vector_index_is_rebuilt_at_a_quarter_outside_it_within_the_shared_copy() {
        let shared = ctxgraph::MAX_CACHED_UNINDEXED as u64;
        // A small store waits for INDEX_AFTER vectors, a mid-sized one for a quarter of its
        // index, a large one no longer than the searches' shared copy holds.
        assert_eq!(rebuild_vectors_at(0), INDEX_AFTER);
        assert_eq!(rebuild_vectors_at(4 * INDEX_AFTER), INDEX_AFTER);
        assert_eq!(rebuild_vectors_at(40_000), 10_000);
        assert_eq!(rebuild_vectors_at(10_000_000), shared);
        let mut last = 0;
        for indexed in (0..200_000).step_by(997) {
            let at = rebuild_vectors_at(indexed);
            assert!(at >= last && (INDEX_AFTER..=shared).contains(&at), "{indexed}: {at}");
            last = at;
        }
    }
}
