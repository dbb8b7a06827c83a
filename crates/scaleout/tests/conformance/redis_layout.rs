//! What only the Redis log has: its keys, its stream, batches in one script, stores side by
//! side on one server, and the error when the server is not there.

use ctxgraph_ontology::RecordKind;
use ctxgraph_scaleout::{RedisLog, StoreUrl};
use ctxgraph_store::Appended;
use redis::Value;

use crate::harness::{Backend, RedisBackend, contains, key_bytes};
use crate::log::event;

#[test]
fn an_unreachable_server_is_a_storage_failure_naming_the_url() {
    // Port 1 on the loopback address: nothing listens there.
    let url = StoreUrl::parse("redis://127.0.0.1:1/nowhere").unwrap();
    let err = RedisLog::connect(&url).unwrap_err();
    assert_eq!(err.code(), "store.io");
    assert!(err.to_string().contains("redis://127.0.0.1:1/nowhere"), "{err}");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn the_stream_carries_positions_and_kinds_only_and_every_key_has_the_stores_hash_tag() {
    let mut b = RedisBackend::new();
    let secret = "agent-known-only-to-the-body";
    b.write(|l| {
        l.append(&event("e1", secret, "payload text"), "t0").unwrap();
        l.append(&event("e2", secret, "payload text"), "t0").unwrap();
    });
    let prefix = b.url().key_prefix();
    let stream = format!("{prefix}stream");
    let entries: Value =
        redis::cmd("XRANGE").arg(&stream).arg("-").arg("+").query(b.admin()).unwrap();
    let Value::Array(entries) = entries else { panic!("{entries:?}") };
    let shown: Vec<(String, Vec<String>)> = entries
        .iter()
        .map(|e| {
            let Value::Array(parts) = e else { panic!("{e:?}") };
            let [Value::BulkString(id), Value::Array(fields)] = parts.as_slice() else {
                panic!("{e:?}")
            };
            let fields = fields
                .iter()
                .map(|f| {
                    let Value::BulkString(b) = f else { panic!("{f:?}") };
                    String::from_utf8(b.clone()).unwrap()
                })
                .collect();
            (String::from_utf8(id.clone()).unwrap(), fields)
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("0-1".to_owned(), vec!["kind".to_owned(), "event".to_owned()]),
            ("0-2".to_owned(), vec!["kind".to_owned(), "event".to_owned()]),
        ]
    );
    // The body is stored byte for byte, in a hash field a redaction can replace.
    let body: String =
        redis::cmd("HGET").arg(format!("{prefix}body")).arg(1).query(b.admin()).unwrap();
    assert_eq!(body, event("e1", secret, "payload text").canonical());
    let stream_bytes = key_bytes(b.admin(), stream.as_bytes());
    assert!(!contains(&stream_bytes, secret.as_bytes()) && !contains(&stream_bytes, b"e1"));
    let mut keys: Vec<String> =
        b.store_keys().into_iter().map(|k| String::from_utf8(k).unwrap()).collect();
    keys.sort();
    let names = ["at", "body", "bykind", "head", "id", "key", "kind", "stream"];
    assert_eq!(keys, names.map(|n| format!("{prefix}{n}")));
    assert!(prefix.starts_with("ctxgraph:{") && prefix.ends_with("}:"), "{prefix}");
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_batch_is_decided_record_by_record_in_one_script() {
    let mut b = RedisBackend::new();
    b.write(|l| l.append(&event("e1", "a", "x"), "t0").unwrap());
    let (e1, e1_other, e2) = (event("e1", "a", "x"), event("e1", "b", "x"), event("e2", "a", "x"));
    let e2_other = event("e2", "b", "x");
    let out = b.log().append_batch(&[&e2, &e1, &e1_other, &e2, &e2_other], "t1").unwrap();
    let shown: Vec<Result<Appended, String>> =
        out.into_iter().map(|o| o.map_err(|e| e.to_string())).collect();
    assert_eq!(shown[0], Ok(Appended::New(2)));
    assert_eq!(shown[1], Ok(Appended::Duplicate(1)));
    assert!(
        shown[2].as_ref().is_err_and(|e| e.contains("event `e1` already exists at log position 1"))
    );
    assert_eq!(shown[3], Ok(Appended::Duplicate(2)), "a repeat within the batch finds the first");
    assert!(
        shown[4].as_ref().is_err_and(|e| e.contains("event `e2` already exists at log position 2"))
    );
    assert!(b.log().append_batch(&[], "t2").unwrap().is_empty());
    assert_eq!(b.read(|l| l.head().unwrap()), 2);
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn stores_on_one_server_are_apart() {
    let mut one = RedisBackend::new();
    let mut two = RedisBackend::new();
    one.write(|l| l.append(&event("e1", "a", "x"), "t").unwrap());
    two.write(|l| {
        l.append(&event("e0", "b", "y"), "t").unwrap();
        assert_eq!(l.append(&event("e1", "b", "y"), "t").unwrap(), Appended::New(2));
    });
    assert_eq!(one.read(|l| l.head().unwrap()), 1);
    assert_eq!(
        one.read(|l| l.get(RecordKind::Event, "e1").unwrap().unwrap().body),
        event("e1", "a", "x").canonical()
    );
    assert_eq!(two.read(|l| l.get(RecordKind::Event, "e1").unwrap().unwrap().position), 2);
    let one_keys = one.store_keys();
    assert!(two.store_keys().iter().all(|k| !one_keys.contains(k)));
}

/// The files of the server's append-only file, which this test reads directly: the server
/// must run on this machine with an append-only file, as `.ci/scaleout.sh` starts it.
fn aof_files(conn: &mut redis::Connection) -> Vec<std::path::PathBuf> {
    let mut config = |name: &str| -> String {
        let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(conn).unwrap();
        pair[1].clone()
    };
    assert_eq!(
        config("appendonly"),
        "yes",
        "this test needs a local server with an append-only file (.ci/scaleout.sh starts one)"
    );
    let dir = std::path::Path::new(&config("dir")).join(config("appenddirname"));
    std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the server's append-only directory {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect()
}

pub(crate) fn on_disk(conn: &mut redis::Connection, needle: &str) -> bool {
    aof_files(conn)
        .iter()
        // A file the server removed between the listing and the read holds nothing.
        .any(|f| std::fs::read(f).is_ok_and(|bytes| contains(&bytes, needle.as_bytes())))
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn after_a_redaction_a_persistence_rewrite_leaves_no_old_bytes_on_disk() {
    let mut b = RedisBackend::new();
    let secret = format!("disk-secret-{}", crate::harness::fresh_name());
    b.write(|l| l.append(&event("e1", &secret, "x"), "t").unwrap());
    let fsync: Vec<String> =
        redis::cmd("CONFIG").arg("GET").arg("appendfsync").query(b.admin()).unwrap();
    if fsync[1] == "always" {
        assert!(on_disk(b.admin(), &secret), "the probe finds the append in the file");
    }
    assert!(b.forget(|l| l.redact_as(1, "redacted-1", "{}").unwrap()));
    b.log().rewrite_persistence().unwrap();
    // The server deletes the replaced files just after the rewrite, on a background thread.
    let mut tries = 0;
    while on_disk(b.admin(), &secret) {
        tries += 1;
        assert!(tries < 500, "the forgotten bytes are still in the append-only file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!b.holds(&secret));
}

/// `INFO persistence`'s count of append-only file rewrites and of snapshots since the start.
fn rewrites_and_saves(conn: &mut redis::Connection) -> (u64, u64) {
    let info: String = redis::cmd("INFO").arg("persistence").query(conn).unwrap();
    let field = |name: &str| -> u64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {info}"))
    };
    (field("aof_rewrites"), field("rdb_saves"))
}

#[test]
#[ignore = "needs a Redis server: run by .ci/scaleout.sh"]
fn a_persistence_rewrite_rewrites_the_append_only_file_the_server_keeps() {
    let mut b = RedisBackend::new();
    b.write(|l| l.append(&event("e1", "agent", "x"), "t").unwrap());
    let appendonly: Vec<String> =
        redis::cmd("CONFIG").arg("GET").arg("appendonly").query(b.admin()).unwrap();
    assert_eq!(appendonly[1], "yes", "the test server must keep an append-only file");
    let (rewrites, _) = rewrites_and_saves(b.admin());
    b.log().rewrite_persistence().unwrap();
    // Another test's rewrite may run at the same time: at least one more.
    assert!(rewrites_and_saves(b.admin()).0 > rewrites);
}

/// A server that keeps nothing on disk (`CTXGRAPH_TEST_REDIS_VOLATILE`: no append-only file,
/// no snapshots) is left so: a forget's rewrite there would write every store to its disk.
#[test]
#[ignore = "needs a Redis server without persistence: run by .ci/scaleout.sh"]
fn a_persistence_rewrite_writes_nothing_on_a_server_that_keeps_nothing() {
    let server = std::env::var("CTXGRAPH_TEST_REDIS_VOLATILE").unwrap_or_else(|_| {
        panic!(
            "CTXGRAPH_TEST_REDIS_VOLATILE is not set: set it to redis://HOST:PORT of a Redis \
             server started with --appendonly no --save '' (.ci/scaleout.sh starts one)"
        )
    });
    let url = StoreUrl::parse(&format!(
        "{}/{}",
        server.trim_end_matches('/'),
        crate::harness::fresh_name()
    ))
    .unwrap();
    let mut admin = crate::harness::admin(&url);
    let config = |admin: &mut redis::Connection, name: &str| -> String {
        let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(admin).unwrap();
        pair[1].clone()
    };
    assert_eq!(config(&mut admin, "appendonly"), "no", "{server} keeps an append-only file");
    assert_eq!(config(&mut admin, "save"), "", "{server} takes snapshots");
    let mut log = RedisLog::connect(&url).unwrap();
    ctxgraph_store::Log::append(&mut log, &event("e1", "agent", "x"), "t").unwrap();
    let before = rewrites_and_saves(&mut admin);
    log.rewrite_persistence().unwrap();
    assert_eq!(rewrites_and_saves(&mut admin), before, "nothing rewritten, nothing saved");
    let keys = crate::harness::all_keys(&mut admin);
    let prefix = url.key_prefix();
    let mine: Vec<&Vec<u8>> = keys.iter().filter(|k| k.starts_with(prefix.as_bytes())).collect();
    for key in mine {
        let _: () = redis::cmd("DEL").arg(key).query(&mut admin).unwrap();
    }
}
