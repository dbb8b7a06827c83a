//! Tenants on a scale-out store (`redis://HOST:PORT/NAME`): which store a tenant uses, engines
//! opened over [`ScaleOutStore`], the projection's lag for `/metrics`, and the bounded wait
//! after an ingest.
//!
//! A server on a scale-out store holds no state of its own: its engines read the graph the
//! projection workers fold and append to the log, so any number of servers may serve one
//! store, and a request may go to any of them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use ctxgraph::{Engine, EngineOptions, RecordKind, ValidRecord};
use ctxgraph_scaleout::{
    ConsumerName, FalkorGraph, GroupProbe, PROJECTION_GROUP, RedisLog, ScaleOutStore, StoreUrl,
};
use ctxgraph_store::{Appended, LogReader, RemoteStore, StoreError, StoreRead};

use crate::error::ServiceError;

/// Longest an ingest's response waits for the projection workers to fold what it appended
/// (read-your-writes), at most half the request deadline: past it the response is sent anyway
/// and the records become readable when the workers reach them.
pub(super) const PROJECTION_WAIT: Duration = Duration::from_secs(2);

/// Where a service's tenants keep their stores.
#[derive(Debug, Clone)]
pub(super) enum Stores {
    /// `tenants/<tenant>.ctxg` in the data directory (`ctxgraph serve --data DIR`).
    Files,
    /// One store file for every principal (`ctxgraph mcp --store FILE`, `ctxgraph ui`).
    File(std::path::PathBuf),
    /// On the scale-out server of this URL, tenant `t` in the store `NAME-t`, where `NAME` is
    /// the URL's (`ctxgraph --db redis://HOST:PORT/NAME serve`).
    ScaleOut(StoreUrl),
    /// One scale-out store for every principal (`ctxgraph --db redis://HOST:PORT/NAME mcp`).
    OneScaleOut(StoreUrl),
}

impl Stores {
    /// Whether every principal uses one store (no registry is re-read: the process acts for
    /// the principal it was started as).
    pub(super) fn is_single(&self) -> bool {
        matches!(self, Stores::File(_) | Stores::OneScaleOut(_))
    }
}

/// The store of `tenant` on the scale-out server of `base`: `NAME-tenant`. A tenant whose name
/// cannot be part of a store name (a `.`, or too long) is refused naming both.
pub(super) fn tenant_store(base: &StoreUrl, tenant: &str) -> Result<StoreUrl, ServiceError> {
    let name = format!("{}-{tenant}", base.name());
    base.with_name(&name).map_err(|e| {
        ServiceError::bad_request(
            e.rule,
            format!(
                "tenant {tenant:?} has no store on {base}: {e}; on a scale-out store a tenant's \
                 store is NAME-TENANT, so a tenant's name must fit a store name"
            ),
        )
    })
}

/// A tenant's scale-out store as its engines share it: one pool of connections for the writer
/// and every reader (a read takes a connection pair from it for its length), and the watch on
/// the store's schema modules.
pub(super) struct ScaleOutTenant {
    url: StoreUrl,
    store: Arc<ScaleOutStore>,
    watch: SchemaWatch,
    /// What `/metrics` reads of the workers' lags beyond the engine's view, over connections
    /// held from one scrape to the next.
    lags: Mutex<LagProbe>,
}

/// The connections a tenant's lag is read over: the projection group's state and the
/// consolidation's checkpoint.
struct LagProbe {
    group: GroupProbe,
    /// Opened at the first read, and again after a read that failed.
    graph: Option<FalkorGraph>,
}

impl ScaleOutTenant {
    /// Connect to the store `url` (creating nothing on the server).
    pub(super) fn open(url: StoreUrl) -> Result<ScaleOutTenant, ServiceError> {
        // Watching from before any engine loads the schema: a module written in between is
        // taken up again, never missed.
        let watch = SchemaWatch::open(&url)?;
        let store = Arc::new(ScaleOutStore::connect(&url).map_err(ctxgraph::Error::from)?);
        let group = ConsumerName::parse(PROJECTION_GROUP).map_err(|e| {
            ServiceError::internal("server.group_name", format!("{PROJECTION_GROUP}: {e}"))
        })?;
        let lags = Mutex::new(LagProbe { group: GroupProbe::new(&url, group), graph: None });
        Ok(ScaleOutTenant { url, store, watch, lags })
    }

    /// The workers' lags on the store, as `engine` (one of this tenant's) sees it (see [`Lag`]).
    pub(super) fn lag(&self, engine: &Engine) -> Result<Lag, ServiceError> {
        // The service's bookkeeping, not a caller's read: the owner's reader.
        let checkpoints = engine.owner_reader()?.checkpoints()?;
        let mut probe = self.lags.lock().unwrap_or_else(PoisonError::into_inner);
        let state = probe.group.state().map_err(ctxgraph::Error::from)?;
        let graph = match &mut probe.graph {
            Some(graph) => graph,
            None => probe
                .graph
                .insert(FalkorGraph::connect_read(&self.url).map_err(ctxgraph::Error::from)?),
        };
        let consolidated = match graph.consolidated_through() {
            Ok(through) => through,
            Err(e) => {
                probe.graph = None;
                return Err(ctxgraph::Error::from(e).into());
            }
        };
        Ok(Lag {
            projection: checkpoints.projection_lag(),
            enrichment: checkpoints.enrichment_lag(),
            consolidation: checkpoints.enriched_through.saturating_sub(consolidated),
            pending: state.map(|g| g.pending),
        })
    }

    /// The store's URL.
    pub(super) fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// An engine on the store, over the tenant's pool of connections.
    pub(super) fn engine(&self, options: EngineOptions) -> Result<Engine, ServiceError> {
        Ok(Engine::open_remote(Box::new(Shared(Arc::clone(&self.store))), options)?)
    }

    /// Whether a schema module was written to the store since the last look.
    pub(super) fn schema_changed(&self) -> bool {
        self.watch.changed()
    }
}

/// The tenant's store, as each of its engines holds it.
#[derive(Debug)]
struct Shared(Arc<ScaleOutStore>);

impl RemoteStore for Shared {
    fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError> {
        self.0.begin_read()
    }

    fn append_batch(
        &self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        self.0.append_batch(records, recorded_at)
    }

    fn location(&self) -> String {
        self.0.location()
    }
}

/// The workers' lags on the store `url` that `engine` runs on, as `ctxgraph stats` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Lag {
    /// Records in the log not yet folded into the graph.
    pub(super) projection: u64,
    /// Records folded and not yet enriched (stage 2).
    pub(super) enrichment: u64,
    /// Records enriched and not yet consolidated (stage 3): stage 2's checkpoint less the one
    /// the last consolidation covered.
    pub(super) consolidation: u64,
    /// Entries of the projection group delivered to a worker and not acknowledged (`None`
    /// before a worker has joined).
    pub(super) pending: Option<u64>,
}

/// Whether the scale-out servers of `urls` answer (readiness; not ready is a 500, as for a
/// data directory that cannot be read): each one's log head is read.
pub(super) fn reachable(urls: &[StoreUrl]) -> Result<(), ServiceError> {
    for one in urls {
        let unreachable =
            |e: StoreError| ServiceError::internal("store.unreachable", format!("{one}: {e}"));
        RedisLog::connect(one).and_then(|log| log.head()).map_err(unreachable)?;
    }
    Ok(())
}

/// The schema modules in a scale-out store's log, counted, so that a server notices a module
/// written through another server: its engines validate with the schema they loaded when
/// opened, and must reopen to take a new module up (as a worker does before each round).
struct SchemaWatch {
    /// A connection to the log, opened with the tenant.
    log: Mutex<RedisLog>,
    /// Schema records seen at the last look.
    seen: AtomicUsize,
}

impl SchemaWatch {
    /// Watch the log of `url`, starting from the modules it holds now.
    fn open(url: &StoreUrl) -> Result<SchemaWatch, ServiceError> {
        let log = RedisLog::connect(url).map_err(ctxgraph::Error::from)?;
        let seen = log.read_kind(RecordKind::Schema).map_err(ctxgraph::Error::from)?.len();
        Ok(SchemaWatch { log: Mutex::new(log), seen: AtomicUsize::new(seen) })
    }

    /// Whether the log holds another number of schema modules than at the last look. A failed
    /// look says no: the ingest that asked then validates with the schema it has, and a record
    /// that needs a newer module is refused for it, to be retried.
    fn changed(&self) -> bool {
        let log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        match log.read_kind(RecordKind::Schema) {
            Ok(modules) => self.seen.swap(modules.len(), Ordering::AcqRel) != modules.len(),
            Err(_) => false,
        }
    }
}

/// How long an ingest waits for the projection under the request `deadline`.
pub(super) fn projection_wait(deadline: Duration) -> Duration {
    PROJECTION_WAIT.min(deadline / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_uses_the_store_named_after_it() {
        let base = StoreUrl::parse("redis://127.0.0.1:7000/team").unwrap();
        assert_eq!(
            tenant_store(&base, "acme").unwrap().to_string(),
            "redis://127.0.0.1:7000/team-acme"
        );
        let e = tenant_store(&base, "acme.eu").unwrap_err();
        assert_eq!(e.code, "url.store_name");
        assert!(e.message.contains("acme.eu") && e.message.contains("team-acme.eu"), "{e}");
        let long = "t".repeat(60);
        assert_eq!(tenant_store(&base, &long).unwrap_err().code, "url.store_name");
    }

    #[test]
    fn the_wait_for_the_projection_leaves_half_the_deadline() {
        assert_eq!(projection_wait(Duration::from_secs(30)), PROJECTION_WAIT);
        assert_eq!(projection_wait(Duration::from_secs(2)), Duration::from_secs(1));
    }
}
