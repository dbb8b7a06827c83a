//! ctxgraph's scale-out backends: the log on Redis ([`RedisLog`]), addressed by
//! `redis://HOST:PORT/NAME` ([`StoreUrl`]).
//!
//! [`RedisLog`] implements the same [`ctxgraph_store::Log`] and [`ctxgraph_store::LogReader`]
//! traits as the embedded store, with the same answers (the conformance suite in `tests/` runs
//! one set of tests against both). The graph on FalkorDB, the projection workers and the engine
//! running on this backend are not built yet: `docs/scale-out.md` says what is and what is next.

#![warn(missing_docs)]

mod batch;
mod consumer;
mod falkor_graph;
mod fold;
mod redis_log;
mod reply;
mod url;

pub use batch::BatchFold;
pub use consumer::{ConsumerName, GroupState, LogConsumer, MAX_CONSUMER_NAME_BYTES, NameError};
pub use falkor_graph::FalkorGraph;
pub use fold::{FoldError, Worker, catch_up, fold_one, load_schema};
pub use redis_log::RedisLog;
pub use url::{DEFAULT_PORT, MAX_NAME_BYTES, StoreUrl, UrlError};
