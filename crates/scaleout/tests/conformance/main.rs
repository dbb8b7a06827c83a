//! The backend conformance suite: one set of trait tests, run against the embedded store and
//! against the scale-out backend on a Redis server.
//!
//! The Redis half needs a server: `CTXGRAPH_TEST_REDIS=redis://HOST:PORT` names it (each test
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

mod harness;
mod log;
mod redis_layout;

/// For each named test of `log`, one test on the embedded store and one on Redis.
macro_rules! conformance {
    ($module:ident: $($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[test]
                fn $name() {
                    crate::$module::$name(crate::harness::EmbeddedBackend::new());
                }
            )*
        }
        mod redis {
            $(
                #[test]
                #[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
                fn $name() {
                    crate::$module::$name(crate::harness::RedisBackend::new());
                }
            )*
        }
    };
}

conformance!(log:
    an_empty_log_has_nothing,
    reappend_is_idempotent_and_a_conflict_is_refused,
    read_from_pages_in_position_order,
    get_and_read_kind_find_records_by_kind,
    positions_stay_gap_free_under_two_concurrent_writers,
    redact_replaces_a_body_and_no_old_bytes_remain,
    redact_as_renames_and_refuses_a_taken_id,
    hostile_ids_and_text_round_trip_byte_for_byte,
);
