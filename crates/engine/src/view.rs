//! The read side, in one place: every read of the store leaves the engine through a [`Reader`].
//!
//! - [`Snapshot`] (`snapshot.rs`) is a consistent read transaction with the raw, unfiltered
//!   lookups the features are built from. It is crate-private: no interface can name it.
//! - [`Reader`] (`reader.rs`) is a snapshot read by one [`crate::Principal`], made by
//!   [`crate::Engine::reader`]. Every read the CLI, the server (HTTP and MCP) and the library's
//!   users make is one of its methods, and each applies the policy before anything leaves: a
//!   hidden node is not returned, not counted and not walked through, and what is derived from
//!   hidden records is withheld (`derived.rs` says what, per kind).
//! - The store's owner ([`crate::Principal::local`]: the local CLI without `--as`, tests,
//!   benchmarks) reads through the same `Reader`, which lets everything through for it; reads
//!   that only make sense for the owner (the log, raw counts, edges waiting for an endpoint)
//!   are `Reader` methods that refuse anyone else (`owner.rs`).
//!
//! So the compiler keeps the choke point: a feature added to the engine is reachable from an
//! interface only through a `Reader` method, and the no-leak property test
//! (`tests/it/access.rs`) runs every such method against the graph filtered to what the
//! principal may see.

mod derived;
mod export;
mod graph;
mod health;
mod neighborhood;
mod owner;
mod reader;
mod records;
mod snapshot;
mod tools;

pub use export::{ExportFilter, ExportItem};
pub use neighborhood::{EdgeGroup, Neighbor};
pub use reader::{Reader, VisibleCounts};
pub use snapshot::{Checkpoints, Stats, TimelineEntry, View};
pub(crate) use snapshot::{Snapshot, answered, put_payload, record_parent};
pub use tools::LinkLookup;
