//! A scale-out store as the engine uses it ([`RemoteStore`]): reads of the log on Redis and the
//! graph on FalkorDB through one view, and appends to the log, over a small pool of
//! connections.
//!
//! The graph is folded by projection workers ([`crate::Worker`]); this type never writes it.
//! Connecting creates nothing on the server (no index, no key): a reader may connect to a
//! store no worker has touched yet, and many servers may connect at once.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

use ctxgraph_ontology::graph::{Direction, Edge, EdgeKey, Node, NodeKey, Properties};
use ctxgraph_ontology::{RecordKind, ValidRecord};
use ctxgraph_store::{
    Appended, Archived, ConsolidateCommit, EdgeGroup, EnrichCommit, ForgetAppend, ForgetGraphBody,
    GraphCounts, GraphReader, LogEntry, LogReader, ManyAnswer, ManyRead, Redaction, RemoteStore,
    RetentionBody, SessionSlot, StoreError, StoreRead, StoredVector, TextIndexBuild,
};

use crate::falkor_graph::{ConsolidateWrite, FalkorGraph, NAMED_LAYOUT, Stage2Write};
use crate::redis_log::RedisLog;
use crate::url::StoreUrl;

mod forget;
mod retention;
mod telemetry;

pub use telemetry::drop_telemetry;

/// The most idle connection pairs a store keeps; reads beyond it open their own, closed after.
const POOL_MAX: usize = 8;

/// One connection pair: the graph's and the log's.
struct Conn {
    graph: FalkorGraph,
    log: RedisLog,
}

impl Conn {
    fn open(url: &StoreUrl) -> Result<Conn, StoreError> {
        Ok(Conn { graph: FalkorGraph::connect_read(url)?, log: RedisLog::connect(url)? })
    }
}

/// A store on a Redis server with the FalkorDB module, `redis://HOST:PORT/NAME`: the engine
/// appends to its log and reads its log and graph ([`RemoteStore`]).
///
/// Each [`RemoteStore::begin_read`] takes a connection pair from the pool (or opens one) and
/// gives it back when the read is dropped; a pair that failed on the network is closed rather
/// than given back. The graph has what stage 1 (the projection) folds, and what stages 2 and 3
/// write through [`RemoteStore::begin_enrich`] and [`RemoteStore::begin_consolidate`]
/// (see [`FalkorGraph`]'s `GraphReader`).
pub struct ScaleOutStore {
    url: StoreUrl,
    idle: Mutex<Vec<Conn>>,
    /// Whether a connection of this store has seen the graph in the named layout
    /// (`falkor_graph/entity_names.rs`): a connection opened later knows it from its first
    /// read, whose plan is made before its view's state keys arrive.
    named: AtomicBool,
}

impl std::fmt::Debug for ScaleOutStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScaleOutStore").field("url", &self.url.to_string()).finish_non_exhaustive()
    }
}

impl ScaleOutStore {
    /// Connect to the store `url` names (one connection pair, opened now, so an unreachable
    /// server fails here). Nothing is created on the server. A graph folded by a build that
    /// gave nodes no creation numbers is refused ([`StoreError::Corruption`], rule
    /// `graph.layout`): it must be folded again.
    pub fn connect(url: &StoreUrl) -> Result<ScaleOutStore, StoreError> {
        let first = Conn::open(url)?;
        first.graph.check_layout()?;
        let named = AtomicBool::new(first.graph.names_entities());
        Ok(ScaleOutStore { url: url.clone(), idle: Mutex::new(vec![first]), named })
    }

    /// The store's URL.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// An idle connection pair, or a new one.
    fn take(&self) -> Result<Conn, StoreError> {
        // A panic while the lock was held leaves the list as it was: still usable.
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        match idle {
            Some(conn) => Ok(conn),
            None => {
                let conn = Conn::open(&self.url)?;
                if self.named.load(Ordering::Relaxed) {
                    conn.graph.note_layout(Some(NAMED_LAYOUT));
                }
                Ok(conn)
            }
        }
    }

    /// Keep `conn` for the next read, unless the pool is full.
    fn give_back(&self, conn: Conn) {
        if conn.graph.names_entities() {
            self.named.store(true, Ordering::Relaxed);
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < POOL_MAX {
            idle.push(conn);
        }
    }
}

impl RemoteStore for ScaleOutStore {
    fn begin_read(&self) -> Result<Box<dyn StoreRead + '_>, StoreError> {
        let conn = self.take()?;
        // The view's state keys are read once, on first use (see `falkor_graph/state.rs`).
        conn.graph.hold_state();
        Ok(Box::new(ScaleOutRead { store: self, conn: Some(conn), broken: Cell::new(false) }))
    }

    fn append_batch(
        &self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        let mut conn = self.take()?;
        let appended = conn.log.append_batch(records, recorded_at);
        // A connection that failed on the network may be half-read: close it.
        if !matches!(appended, Err(StoreError::Remote { .. })) {
            self.give_back(conn);
        }
        appended
    }

    fn location(&self) -> String {
        self.url.to_string()
    }

    fn forgets(&self) -> bool {
        true
    }

    fn forget_append(
        &self,
        record: &ValidRecord,
        recorded_at: &str,
        head: u64,
        redactions: &[Redaction],
    ) -> Result<ForgetAppend, StoreError> {
        self.forget_on_log(record, recorded_at, head, redactions)
    }

    fn fold_through(&self, position: u64) -> Result<u64, StoreError> {
        self.fold_to(position)
    }

    fn rewrite_persistence(&self) -> Result<(), StoreError> {
        self.rewrite()
    }

    fn begin_enrich(&self) -> Result<Option<Box<dyn EnrichCommit + '_>>, StoreError> {
        // A connection of its own: the transaction's watch lives on it.
        Ok(Some(Box::new(Stage2Write::begin(FalkorGraph::connect_read(&self.url)?)?)))
    }

    fn enriches(&self) -> bool {
        true
    }

    fn begin_consolidate(&self) -> Result<Option<Box<dyn ConsolidateCommit + '_>>, StoreError> {
        // Connections of its own: the transaction's watch lives on the graph's.
        let graph = FalkorGraph::connect_read(&self.url)?;
        let log = RedisLog::connect(&self.url)?;
        Ok(Some(Box::new(ConsolidateWrite::begin(graph, log)?)))
    }

    fn resets(&self) -> bool {
        true
    }

    fn reset_projection(&self) -> Result<(), StoreError> {
        // A connection of its own: the reset's transaction must not meet a read's watch.
        FalkorGraph::connect_read(&self.url)?.reset_projection()
    }

    fn reset_enrichment(&self) -> Result<(), StoreError> {
        FalkorGraph::connect_read(&self.url)?.reset_enrichment()
    }

    fn set_setting(&self, name: &str, value: Option<&str>) -> Result<(), StoreError> {
        // One command, no watch: a pooled pair serves it.
        let conn = self.take()?;
        conn.graph.set_setting(name, value)?;
        self.give_back(conn);
        Ok(())
    }

    fn retains(&self) -> bool {
        true
    }

    fn retain(&self, body: &mut RetentionBody<'_>) -> Result<bool, StoreError> {
        self.retain_in_batch(body)
    }

    fn drop_archive_marks(&self) -> Result<(), StoreError> {
        self.drop_marks()
    }

    fn forgets_entities(&self) -> bool {
        true
    }

    fn forget_in_graph(&self, body: &mut ForgetGraphBody<'_>) -> Result<bool, StoreError> {
        self.forget_graph(body)
    }
}

/// One read of a [`ScaleOutStore`]: the log and the graph over one connection pair, given back
/// to the store's pool when dropped. Each call sees the graph at a committed fold page (a
/// remote graph has no read transaction spanning queries).
struct ScaleOutRead<'s> {
    store: &'s ScaleOutStore,
    /// Always set until the read is dropped.
    conn: Option<Conn>,
    /// Whether a call failed on the network: the pair is then closed, not given back.
    broken: Cell<bool>,
}

impl ScaleOutRead<'_> {
    /// Run `f` on the connection pair, noting a network failure.
    fn with<T>(&self, f: impl FnOnce(&Conn) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let conn = self
            .conn
            .as_ref()
            .ok_or_else(|| StoreError::Corruption("a read used after it ended".into()))?;
        let out = f(conn);
        if matches!(out, Err(StoreError::Remote { .. })) {
            self.broken.set(true);
        }
        out
    }
}

impl Drop for ScaleOutRead<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !self.broken.get()
        {
            conn.graph.release_state();
            self.store.give_back(conn);
        }
    }
}

impl LogReader for ScaleOutRead<'_> {
    fn head(&self) -> Result<u64, StoreError> {
        self.with(|c| c.log.head())
    }
    fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
        self.with(|c| c.log.get(kind, id))
    }
    fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
        self.with(|c| c.log.read_from(from, limit))
    }
    fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
        self.with(|c| c.log.read_kind(kind))
    }
    fn get_many(&self, keys: &[(RecordKind, &str)]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        self.with(|c| c.log.get_many(keys))
    }
    fn get_many_meanwhile(
        &self,
        keys: &[(RecordKind, &str)],
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<Option<LogEntry>>, StoreError> {
        // The script is sent on the log's connection, `meanwhile` reads the graph on the
        // other, then the script's reply is taken: the two round trips overlap.
        if !self.with(|c| c.log.send_get_many(keys))? {
            let records = self.get_many(keys);
            meanwhile();
            return records;
        }
        meanwhile();
        self.with(|c| c.log.receive_get_many(keys))
    }
}

/// [`GraphReader`] methods answered by the pair's [`FalkorGraph`].
macro_rules! through_graph {
    ($(fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        $(
            fn $name(&self $(, $arg: $ty)*) -> Result<$ret, StoreError> {
                self.with(|c| GraphReader::$name(&c.graph $(, $arg)*))
            }
        )*
    };
}

impl GraphReader for ScaleOutRead<'_> {
    through_graph! {
        fn node(&self, key: &NodeKey) -> Option<Node>;
        fn node_exists(&self, key: &NodeKey) -> bool;
        fn node_props_named(&self, key: &NodeKey, names: &[&str]) -> Option<Properties>;
        fn existing_ids(&self, label: &str, ids: &[String]) -> Vec<String>;
        fn edge(&self, key: &EdgeKey) -> Option<Edge>;
        fn edges_of(&self, key: &NodeKey, edge_type: Option<&str>, direction: Direction) -> Vec<Edge>;
        fn nodes_by_label(&self, label: &str, after: Option<&str>, limit: usize) -> Vec<Node>;
        fn edges_by_type(&self, edge_type: &str, after: Option<&EdgeKey>, limit: usize) -> Vec<Edge>;
        fn sessions(&self, after: Option<&str>, limit: usize) -> Vec<String>;
        fn session_events(&self, session_id: &str, limit: usize) -> Vec<SessionSlot>;
        fn edges_limited(&self, key: &NodeKey, edge_type: &str, out: bool, limit: usize) -> Vec<Edge>;
        fn trace_events(&self, trace_id: &str, limit: usize) -> Vec<String>;
        fn session_tail(&self, session_id: &str) -> Option<SessionSlot>;
        fn session_neighbors(&self, session_id: &str, slot: &SessionSlot)
            -> (Option<SessionSlot>, Option<SessionSlot>);
        fn pending_for(&self, key: &NodeKey) -> Vec<Edge>;
        fn pending_edges(&self) -> Vec<(NodeKey, Edge)>;
        fn counts(&self) -> GraphCounts;
        fn projected_through(&self) -> u64;
        fn enriched_through(&self) -> u64;
        fn embedding_model(&self) -> Option<(String, usize)>;
        fn setting(&self, key: &str) -> Option<String>;
        fn vector(&self, key: &NodeKey) -> Option<Vec<f32>>;
        fn vector_list(&self, key: &NodeKey) -> Option<(i64, Option<u32>)>;
        fn heaviest_edges(&self, key: &NodeKey, weight: &dyn Fn(&str, bool) -> f64, limit: usize)
            -> Vec<(f64, Edge, bool)>;
        fn edge_groups(&self, key: &NodeKey, limit: usize) -> Vec<EdgeGroup>;
        fn graph_generation(&self) -> u64;
        fn heaviest_neighbours(
            &self,
            key: &NodeKey,
            weight: &dyn Fn(&str, bool) -> f64,
            limit: usize,
            names: &[&str]
        ) -> Vec<(NodeKey, Properties)>;
        fn text_terms(&self, text: &str) -> Vec<String>;
        fn search_text(&self, words: &[String], after: i64, limit: usize) -> Vec<(i64, f64)>;
        fn text_docs_after(&self, after: i64) -> (u64, Option<i64>);
        fn scan_text_index(&self, visit: &mut dyn FnMut(&str, i64) -> bool) -> ();
        fn text_generation(&self) -> u64;
        fn text_index_build(&self) -> Option<TextIndexBuild>;
        fn text_postings(&self, term: &str) -> Option<Vec<u8>>;
        fn node_keys(&self, nids: &[i64]) -> Vec<(i64, NodeKey)>;
        fn vectors_page(&self, after: i64, limit: usize) -> Vec<StoredVector>;
        fn scan_unindexed_vectors(&self, visit: &mut dyn FnMut(i64, &[f32])) -> ();
        fn vector_counts(&self) -> (u64, u64);
        fn scan_vectors_of(&self, nids: &[i64], visit: &mut dyn FnMut(i64, &[f32])) -> ();
        fn ann_generation(&self) -> u64;
        fn vector_generation(&self) -> u64;
        fn enrichment_epoch(&self) -> u64;
        fn ann_centroids(&self) -> Option<Vec<u8>>;
        fn ann_list(&self, list: u32) -> Option<Vec<u8>>;
        fn is_archived(&self, key: &NodeKey) -> bool;
        fn archived(&self, after: Option<&NodeKey>, limit: usize) -> Vec<Archived>;
        fn nodes(&self, keys: &[NodeKey]) -> Vec<Option<Node>>;
        fn nodes_exist(&self, keys: &[NodeKey]) -> Vec<bool>;
        fn edges_of_many(&self, keys: &[NodeKey], edge_type: Option<&str>, direction: Direction)
            -> Vec<Vec<Edge>>;
        fn existing_ids_by_label(&self, labels: &[&str], ids: &[String]) -> Vec<Vec<String>>;
        fn session_events_many(&self, session_ids: &[String], limit: usize) -> Vec<Vec<SessionSlot>>;
        fn trace_events_many(&self, trace_ids: &[String], limit: usize) -> Vec<Vec<String>>;
        fn edges_limited_many(&self, reads: &[(NodeKey, &str)], out: bool, limit: usize)
            -> Vec<Vec<Edge>>;
        fn native_nearest(&self, query: &[f32], want: usize, scan_up_to: u64) -> Option<Vec<i64>>;
        fn read_together(&self, reads: &[ManyRead<'_>]) -> Vec<ManyAnswer>;
        fn edge_groups_many(&self, keys: &[NodeKey], limit: usize) -> Vec<Vec<EdgeGroup>>;
    }

    fn batch_reads_pay(&self) -> bool {
        true
    }

    fn node_generation(&self) -> Result<Option<u64>, StoreError> {
        self.with(|c| GraphReader::node_generation(&c.graph))
    }
}
