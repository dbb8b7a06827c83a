//! `forget` on a scale-out store: the forgotten text leaves every key on the server (the log's
//! hashes, the stream, the FalkorDB graph) and, after the rewrite, the append-only file; reads
//! stop returning it; and the same forgets on a store file give the same reports and graph.

use std::collections::BTreeMap;

use ctxgraph::OpenMode;
use ctxgraph_scaleout::{FalkorGraph, StoreUrl};
use ctxgraph_store::{Embedded, GraphReader, TextIndexBuild};
use serde_json::{Value, json};
use tempfile::TempDir;

use super::stage2::{fold_both, without_access_times};
use super::{ctxgraph, fresh_store, json_of, normalised};

/// A plain connection to the server of `store` (`redis://HOST:PORT/NAME`).
pub(super) fn admin(store: &str) -> redis::Connection {
    let server = &store[..store.rfind('/').unwrap() + 1];
    redis::Client::open(server).and_then(|c| c.get_connection()).unwrap()
}

/// The first key of the server holding `needle`: in its name, what it holds (read by its
/// type's commands) or its `DUMP` serialisation.
pub(super) fn key_holding(conn: &mut redis::Connection, needle: &str) -> Option<String> {
    let mut cursor = 0u64;
    loop {
        let (next, keys): (u64, Vec<Vec<u8>>) =
            redis::cmd("SCAN").arg(cursor).arg("COUNT").arg(1000).query(conn).unwrap();
        for key in keys {
            let kind: String = redis::cmd("TYPE").arg(&key).query(conn).unwrap();
            let held = match kind.as_str() {
                "string" => redis::cmd("GET").arg(&key).query::<redis::Value>(conn),
                "hash" => redis::cmd("HGETALL").arg(&key).query(conn),
                "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).query(conn),
                "stream" => redis::cmd("XRANGE").arg(&key).arg("-").arg("+").query(conn),
                "set" => redis::cmd("SMEMBERS").arg(&key).query(conn),
                "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).query(conn),
                _ => Ok(redis::Value::Nil),
            }
            .unwrap();
            let dump: redis::Value = redis::cmd("DUMP").arg(&key).query(conn).unwrap();
            let mut bytes = key.clone();
            flatten(&held, &mut bytes);
            flatten(&dump, &mut bytes);
            if contains(&bytes, needle.as_bytes()) {
                return Some(String::from_utf8_lossy(&key).into_owned());
            }
        }
        if next == 0 {
            return None;
        }
        cursor = next;
    }
}

fn flatten(v: &redis::Value, out: &mut Vec<u8>) {
    match v {
        redis::Value::BulkString(b) => out.extend_from_slice(b),
        redis::Value::SimpleString(s) => out.extend_from_slice(s.as_bytes()),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().for_each(|i| flatten(i, out));
        }
        redis::Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, out);
            flatten(v, out);
        }),
        redis::Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        // Nothing a store's keys hold comes back as these.
        redis::Value::Nil
        | redis::Value::Okay
        | redis::Value::Attribute { .. }
        | redis::Value::Double(_)
        | redis::Value::Boolean(_)
        | redis::Value::VerbatimString { .. }
        | redis::Value::BigNumber(_)
        | redis::Value::Push { .. }
        | redis::Value::ServerError(_)
        | _ => {}
    }
    out.push(0);
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether `needle` is in the server's append-only files (the server runs on this machine
/// with one, as `.ci/scaleout.sh` starts it).
pub(super) fn on_disk(conn: &mut redis::Connection, needle: &str) -> bool {
    let mut config = |name: &str| -> String {
        let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(name).query(conn).unwrap();
        pair[1].clone()
    };
    assert_eq!(config("appendonly"), "yes", "the test server must keep an append-only file");
    let dir = std::path::Path::new(&config("dir")).join(config("appenddirname"));
    std::fs::read_dir(&dir)
        .unwrap()
        // A file the server removed between the listing and the read holds nothing.
        .any(|f| std::fs::read(f.unwrap().path()).is_ok_and(|b| contains(&b, needle.as_bytes())))
}

/// Two sessions; event `e3` of the kept one carries the first secret in its text and in an
/// entity only it names, and is the parent of `e4`; the other session carries the second.
fn trace(event_secret: &str, session_secret: &str) -> String {
    let event = |id: &str, session: &str, at: &str, text: &str| {
        json!({"event_id": id, "event_type": "tool.execute", "occurred_at": at,
               "session_id": session, "agent_id": "planner", "trace_id": session,
               "tool_name": "sql_query", "status": "completed", "payload": {"text": text}})
    };
    let mut e3 = event("e3", "s-keep", "2026-11-20T09:00:02Z", &format!("token {event_secret}"));
    e3["entities"] = json!([{"name": event_secret, "entity_type": "concept"}]);
    let mut e4 = event("e4", "s-keep", "2026-11-20T09:00:03Z", "after the token");
    e4["parent_event_id"] = json!("e3");
    [
        event("e1", "s-keep", "2026-11-20T09:00:00Z", "started"),
        event("e2", "s-keep", "2026-11-20T09:00:01Z", "read the ledger"),
        e3,
        e4,
        event("g1", "s-gone", "2026-11-20T10:00:00Z", &format!("pin {session_secret}")),
        event("g2", "s-gone", "2026-11-20T10:00:01Z", "second step"),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

/// A forget's JSON report without what differs between two runs (its id holds its time).
pub(super) fn report(dir: &TempDir, db: &str, kind: &str, id: &str) -> Value {
    let mut r = json_of(dir, db, &["forget", kind, id, "--yes", "--by", "ops"]);
    let forget_id = r.as_object_mut().unwrap().remove("forget_id").unwrap();
    assert!(forget_id.as_str().unwrap().starts_with("forget-"), "{forget_id}");
    r
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn forget_leaves_no_bytes_on_the_server_and_equals_the_store_file() {
    let _serial = super::one_forget_at_a_time();
    let dir = TempDir::new().unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let event_secret = format!("okapi{nanos}quasar");
    let session_secret = format!("marmot{nanos}zephyr");
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, trace(&event_secret, &session_secret)).unwrap();
    let file = file.to_str().unwrap();
    let (code, err) = ctxgraph(&dir, "plain.ctxg", &["ingest", "--no-enrich", file]);
    assert_eq!(code, 0, "{err}");
    let to = fresh_store();
    assert_eq!(json_of(&dir, &to, &["ingest", file])["accepted"].as_u64(), Some(6));
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let mut conn = admin(&to);
    for secret in [&event_secret, &session_secret] {
        assert!(key_holding(&mut conn, secret).is_some(), "the probe finds {secret} first");
    }
    let fsync: Vec<String> =
        redis::cmd("CONFIG").arg("GET").arg("appendfsync").query(&mut conn).unwrap();
    if fsync[1] == "always" {
        assert!(on_disk(&mut conn, &event_secret), "the probe finds the append on disk");
    }
    assert_eq!(normalised(&dir, &to, &["get", "e3"]).0, 0);

    // The same forgets, the same reports: targets, positions, records redacted.
    for (kind, id, redacted) in [("event", "e3", 1), ("session", "s-gone", 2)] {
        let want = report(&dir, "plain.ctxg", kind, id);
        let got = report(&dir, &to, kind, id);
        assert_eq!(got, want, "{kind} {id}");
        assert_eq!(got["redacted"], json!(redacted), "{got}");
    }
    // The forget folded its own record: nothing is left for a worker.
    let stats = json_of(&dir, &to, &["stats"]);
    assert_eq!(stats["projection_lag"].as_u64(), Some(0), "{stats}");

    // No key on the server holds either secret, and after the rewrite no append-only file
    // does (the server deletes the replaced files just after the rewrite, on a thread).
    for secret in [&event_secret, &session_secret] {
        let held = key_holding(&mut conn, secret);
        assert_eq!(held, None, "{secret} is still in a key");
        let mut tries = 0;
        while on_disk(&mut conn, secret) {
            tries += 1;
            assert!(tries < 500, "{secret} is still in the append-only file");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    // Reads: the forgotten event, session and entity are gone on both backends alike; the log
    // shows tombstones in their place.
    for args in [
        &["get", "e3"][..],
        &["get", "g1"],
        &["session", "s-gone"],
        &["get", &event_secret],
        &["session", "s-keep"],
        &["neighbors", "e4"],
        &["get", "e4"],
    ] {
        let want = normalised(&dir, "plain.ctxg", args);
        assert_eq!(normalised(&dir, &to, args), want, "{args:?}");
    }
    assert_eq!(normalised(&dir, &to, &["get", "e3"]).0, 1);
    let log = json_of(&dir, &to, &["log", "--limit", "100"]);
    let log = log.as_array().unwrap();
    let redacted: Vec<&str> = log
        .iter()
        .filter(|e| e["record"]["record_type"] == "redacted")
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(redacted, ["e3", "g1", "g2"]);
    let text = serde_json::to_string(log).unwrap();
    assert!(!text.contains(&event_secret) && !text.contains(&session_secret));
    let audit = json_of(&dir, &to, &["forgotten"]);
    assert_eq!(audit.as_array().unwrap().len(), 2, "{audit}");
    let question = ["recall", "what happened with the token in s-keep"];
    let recall = normalised(&dir, &to, &question);
    assert_eq!(recall, normalised(&dir, "plain.ctxg", &question));
    let items = recall.1["items"].to_string();
    assert!(items.contains("e4") && !items.contains(&event_secret), "{items}");

    // The same graph: counts per label and type, and the edge waiting for the forgotten parent.
    let want = json_of(&dir, "plain.ctxg", &["stats"]);
    let got = json_of(&dir, &to, &["stats"]);
    for field in ["nodes", "edges", "pending_edges"] {
        assert_eq!(got[field], want[field], "{field}");
    }

    // A target forgotten already is unknown, an entity too (it went with its only event).
    for args in [&["forget", "event", "e3", "--yes"][..], &["forget", "entity", "concept:started"]]
    {
        let (code, err) = ctxgraph(&dir, &to, args);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("forget.unknown_target"), "{err}");
    }
}

/// Every term of the lexical index of `read` with its posting list, and its build.
pub(super) fn lexical_index(
    read: &dyn GraphReader,
) -> (BTreeMap<String, Vec<u8>>, Option<TextIndexBuild>) {
    let mut terms = std::collections::BTreeSet::new();
    read.scan_text_index(&mut |term, _| {
        terms.insert(term.to_owned());
        true
    })
    .unwrap();
    let lists = terms
        .into_iter()
        .filter_map(|t| Some((t.clone(), read.text_postings(&t).unwrap()?)))
        .collect();
    (lists, read.text_index_build().unwrap())
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn forget_after_enrichment_leaves_no_vector_term_or_posting_and_equals_the_store_file() {
    let _serial = super::one_forget_at_a_time();
    let dir = TempDir::new().unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let event_secret = format!("heron{nanos}vortex");
    let session_secret = format!("lynx{nanos}nebula");
    let file = dir.path().join("trace.jsonl");
    std::fs::write(&file, trace(&event_secret, &session_secret)).unwrap();
    let file = file.to_str().unwrap();
    // Both stores enriched, their lexical indexes built (so the forget has posting lists to
    // take the documents out of).
    let (code, err) = ctxgraph(&dir, "plain.ctxg", &["ingest", file]);
    assert_eq!(code, 0, "{err}");
    let path = dir.path().join("plain.ctxg");
    let to = fresh_store();
    assert_eq!(json_of(&dir, &to, &["ingest", file])["accepted"].as_u64(), Some(6));
    fold_both(&dir, &to);
    super::stage2::build_lexical_index_on_both(&path, &to);
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(&to).unwrap()).unwrap();
    let (vectors_before, _) = GraphReader::vector_counts(&remote).unwrap();
    assert!(vectors_before >= 6, "every event has a vector: {vectors_before}");

    // Each secret as the lexical index stores it: its terms (the tokenizer's, lowercased).
    let mut needles = vec![event_secret.clone(), session_secret.clone()];
    for secret in [&event_secret, &session_secret] {
        let terms = GraphReader::text_terms(&remote, &secret.to_uppercase()).unwrap();
        assert!(!terms.is_empty(), "{secret} has terms");
        needles.extend(terms);
    }
    let mut conn = admin(&to);
    for needle in &needles {
        let key = key_holding(&mut conn, needle);
        assert!(key.is_some(), "the probe finds {needle} first");
    }
    let name = to.rsplit('/').next().unwrap();
    let doc_terms: Vec<String> =
        redis::cmd("HVALS").arg(format!("ctxgraph:{{{name}}}:doc_terms")).query(&mut conn).unwrap();
    assert!(
        doc_terms.iter().any(|t| t.split(' ').any(|w| w == event_secret)),
        "the documents hold the secret's term: {doc_terms:?}"
    );

    for (kind, id) in [("event", "e3"), ("session", "s-gone")] {
        assert_eq!(report(&dir, &to, kind, id), report(&dir, "plain.ctxg", kind, id), "{id}");
    }

    // No key holds a secret or its term, nor does the append-only file after the rewrite.
    for needle in &needles {
        assert_eq!(key_holding(&mut conn, needle), None, "{needle} is still in a key");
        let mut tries = 0;
        while on_disk(&mut conn, needle) {
            tries += 1;
            assert!(tries < 500, "{needle} is still in the append-only file");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    // The stage-2 data left equals the store file's: vectors, the lexical index's lists and
    // statistics.
    let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
    let read = store.begin_read().unwrap();
    let (vectors, _) = GraphReader::vector_counts(&remote).unwrap();
    assert_eq!(vectors, read.vector_counts().unwrap().0);
    assert!(vectors < vectors_before, "{vectors} of {vectors_before}");
    let want = lexical_index(&read);
    assert!(!want.0.is_empty() && want.1.is_some(), "{:?}", want.1);
    assert_eq!(lexical_index(&remote), want);

    // Searches and recalls: nothing for the secrets, the same as the store file for the rest.
    for args in [
        &["search", &event_secret][..],
        &["search", &session_secret],
        &["recall", &event_secret],
        &["search", "token"],
        &["search", "ledger"],
        &["recall", "what happened after the token"],
    ] {
        let want = without_access_times(normalised(&dir, "plain.ctxg", args));
        let got = without_access_times(normalised(&dir, &to, args));
        assert_eq!(got, want, "{args:?}");
        // What was found, not the question echoed back.
        let mut found = got.1;
        if let Some(map) = found.as_object_mut() {
            map.remove("query");
        }
        let text = found.to_string();
        assert!(!text.contains(&event_secret) && !text.contains(&session_secret), "{text}");
        // A recall counts its reads (an access record): folded here as the store file folds it.
        fold_both(&dir, &to);
    }
    for secret in [&event_secret, &session_secret] {
        // A search that finds nothing exits 1.
        let (code, found) = normalised(&dir, &to, &["search", secret]);
        let hits = found["items"].as_array().or(found.as_array()).map_or(0, Vec::len);
        assert_eq!((code, hits), (1, 0), "{found}");
    }
}

/// The vector index as a store keeps it: its centroids and every list's blob.
pub(super) fn vector_index(read: &dyn GraphReader) -> (Option<Vec<u8>>, Vec<Option<Vec<u8>>>) {
    let centroids = read.ann_centroids().unwrap();
    // More lists than a few hundred vectors are given; an absent list reads `None` on both.
    let lists = (0..64).map(|l| read.ann_list(l).unwrap()).collect();
    (centroids, lists)
}

#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn forget_after_consolidation_takes_the_vectors_out_of_the_index_as_a_store_file_does() {
    let _serial = super::one_forget_at_a_time();
    let dir = TempDir::new().unwrap();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    let file = dir.path().join("trace.jsonl");
    let trace = trace(&format!("ibis{nanos}corona"), &format!("wren{nanos}fjord"));
    std::fs::write(&file, trace).unwrap();
    let file = file.to_str().unwrap();
    for args in [&["ingest", file][..], &["consolidate"]] {
        let (code, err) = ctxgraph(&dir, "plain.ctxg", args);
        assert_eq!(code, 0, "{args:?}: {err}");
    }
    let to = fresh_store();
    assert_eq!(json_of(&dir, &to, &["ingest", file])["accepted"].as_u64(), Some(6));
    fold_both(&dir, &to);
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--stage", "consolidate", "--once"]);
    assert_eq!(code, 0, "{err}");
    let remote = FalkorGraph::connect_read(&StoreUrl::parse(&to).unwrap()).unwrap();
    let path = dir.path().join("plain.ctxg");
    let before = {
        let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
        let read = store.begin_read().unwrap();
        let want = vector_index(&read);
        assert!(want.0.is_some() && want.1.iter().any(Option::is_some), "an index was built");
        assert_eq!(vector_index(&remote), want, "both consolidations built the same index");
        read.vector_counts().unwrap()
    };
    assert_eq!(GraphReader::vector_counts(&remote).unwrap(), before);

    for (kind, id) in [("event", "e3"), ("session", "s-gone")] {
        assert_eq!(report(&dir, &to, kind, id), report(&dir, "plain.ctxg", kind, id), "{id}");
    }

    // The forgotten events' codes left the lists they were filed in, on both alike.
    let store = Embedded::open(&path, OpenMode::MustExist).unwrap();
    let read = store.begin_read().unwrap();
    let after = read.vector_counts().unwrap();
    assert!(after.0 < before.0, "{after:?} of {before:?}");
    assert_eq!(GraphReader::vector_counts(&remote).unwrap(), after);
    assert_eq!(vector_index(&remote), vector_index(&read));
}

/// `drop` deletes every key of a store and, after the rewrite, every byte of it in the
/// append-only file: the copy a moved store leaves behind keeps nothing. Without `--yes` it
/// deletes nothing; a store file is refused (it is deleted as a file).
#[test]
#[ignore = "needs a Redis server with FalkorDB: CTXGRAPH_TEST_REDIS (.ci/scaleout.sh)"]
fn drop_deletes_every_key_of_the_store_and_its_bytes_on_disk() {
    let dir = TempDir::new().unwrap();
    let to = fresh_store();
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let secret = format!("drop-secret-{nanos}");
    let event = json!({"event_id": "drop-e1", "event_type": "tool.execute",
        "occurred_at": "2026-11-20T09:00:00Z", "session_id": "s-drop", "agent_id": "deployer",
        "trace_id": "t-drop", "tool_name": "deploy", "status": "failed",
        "payload": {"error": secret.clone()}});
    std::fs::write(dir.path().join("one.jsonl"), format!("{event}\n")).unwrap();
    assert_eq!(json_of(&dir, &to, &["ingest", "one.jsonl"])["accepted"].as_u64(), Some(1));
    let (code, err) = ctxgraph(&dir, &to, &["worker", "--once"]);
    assert_eq!(code, 0, "{err}");
    let mut conn = admin(&to);
    assert!(key_holding(&mut conn, &secret).is_some(), "the probe finds the secret first");
    let prefix = StoreUrl::parse(&to).unwrap().key_prefix();
    let keys = |conn: &mut redis::Connection| -> Vec<String> {
        redis::cmd("KEYS").arg(format!("{prefix}*")).query(conn).unwrap()
    };
    let held = keys(&mut conn).len();
    assert!(held > 3, "{held} keys");

    let (code, err) = ctxgraph(&dir, &to, &["drop"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("drop.confirm") && err.contains("--yes") && err.contains("1 log records"));
    assert_eq!(keys(&mut conn).len(), held, "nothing deleted without --yes");

    let dropped = json_of(&dir, &to, &["drop", "--yes"]);
    assert_eq!(dropped["records"].as_u64(), Some(1), "{dropped}");
    assert_eq!(dropped["keys_deleted"].as_u64(), Some(held as u64), "{dropped}");
    assert_eq!(keys(&mut conn), Vec::<String>::new());
    assert_eq!(key_holding(&mut conn, &secret), None);
    let mut tries = 0;
    while on_disk(&mut conn, &secret) {
        tries += 1;
        assert!(tries < 500, "the secret is still in the append-only file");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(json_of(&dir, &to, &["stats"])["log_length"].as_u64(), Some(0));

    let (code, err) = ctxgraph(&dir, "file.ctxg", &["drop", "--yes"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("drop.backend"), "{err}");
    assert!(!dir.path().join("file.ctxg").exists());
}
