//! ctxgraph's scale-out backends, addressed by `redis://HOST:PORT/NAME` ([`StoreUrl`]): the log
//! on Redis ([`RedisLog`]), the projected graph on FalkorDB ([`FalkorGraph`]), and the fold
//! between them ([`catch_up`], [`BatchFold`], [`Worker`] reading the log's stream with
//! [`LogConsumer`]).
//!
//! [`RedisLog`] implements the same [`ctxgraph_store::Log`] and [`ctxgraph_store::LogReader`]
//! traits as the embedded store, and [`FalkorGraph`] the graph operations the projection calls
//! ([`ctxgraph_store::ProjectionGraph`]) and the graph reads ([`ctxgraph_store::GraphReader`]),
//! with the same answers: the conformance suite in `tests/` runs one set of tests against both.
//! [`ScaleOutStore`] is the store the engine runs on ([`ctxgraph_store::RemoteStore`]): reads of
//! both through one view, appends to the log. `docs/scale-out.md` says what is built and what
//! is next.

#![warn(missing_docs)]

mod batch;
mod consumer;
mod falkor_graph;
mod fold;
mod placement;
mod reads;
mod redis_log;
mod reply;
mod store;
mod url;

pub use batch::BatchFold;
pub use consumer::{
    ConsumerName, GroupProbe, GroupState, LogConsumer, MAX_CONSUMER_NAME_BYTES, NameError,
};
pub use falkor_graph::{ConsolidateWrite, FalkorGraph, Stage2Write};
pub use fold::{FoldError, PROJECTION_GROUP, Worker, catch_up, fold_one, load_schema};
pub use redis_log::RedisLog;
pub use store::{ScaleOutStore, drop_telemetry};
pub use url::{DEFAULT_PORT, MAX_NAME_BYTES, StoreUrl, UrlError};
