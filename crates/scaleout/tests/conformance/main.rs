//! The backend conformance suite: one set of trait tests, run against the embedded store and
//! against the scale-out backends on a Redis server with the FalkorDB module.
//!
//! The server half needs a server: `CTXGRAPH_TEST_REDIS=redis://HOST:PORT` names it (each test
//! makes a store of its own name there and deletes it after). Those tests are ignored by a
//! plain `cargo test`; `.ci/scaleout.sh` starts a server and runs them with `--include-ignored`.
//! Run without the variable, or with a server that cannot be reached, they fail: they never
//! pass without having run.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a test fails loudly on the first surprise"
)]

/// For each named test function of the module it is used in, one test on the embedded store
/// and one on the server backend (ignored unless asked for: it needs a server).
macro_rules! conformance {
    ($embedded:path, $server:ident: $server_backend:path; $($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[test]
                fn $name() {
                    super::$name(<$embedded>::new());
                }
            )*
        }
        mod $server {
            $(
                #[test]
                #[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
                fn $name() {
                    super::$name(<$server_backend>::new());
                }
            )*
        }
    };
}

mod archive;
mod batch;
mod entity_names;
mod falkor_layout;
mod forget_append;
mod graph;
mod graph_harness;
mod harness;
mod log;
mod native_index;
mod native_text;
mod node_generation;
mod projection;
mod reads;
mod redis_layout;
mod reset;
mod stage2_drop;
mod stream;
