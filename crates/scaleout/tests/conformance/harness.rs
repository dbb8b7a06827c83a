//! The backends under test, behind one small trait the conformance tests are written against.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ctxgraph_scaleout::{RedisLog, StoreUrl};
use ctxgraph_store::{Embedded, Log, LogReader, OpenMode};
use redis::Value;
use tempfile::TempDir;

/// A log backend as the tests drive it.
pub(crate) trait Backend: Sized + Send + 'static {
    /// Run `f` as one writer: in a write transaction committed after it (embedded), or call by
    /// call (Redis, where each call is durable on its own).
    fn write<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R;
    /// Run `f` against a read view.
    fn read<R>(&self, f: impl FnOnce(&dyn LogReader) -> R) -> R;
    /// Run `f` as a forget runs on this backend: afterwards no old bytes may remain stored.
    fn forget<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R;
    /// Another writer on the same store, over its own connection.
    fn another(&self) -> Self;
    /// Whether `needle` occurs in anything the backend stores.
    fn holds(&mut self, needle: &str) -> bool;
}

/// The embedded store in a temporary directory.
pub(crate) struct EmbeddedBackend {
    dir: Arc<TempDir>,
    store: Embedded,
}

impl EmbeddedBackend {
    pub(crate) fn new() -> EmbeddedBackend {
        let dir = Arc::new(TempDir::new().unwrap());
        let store = Embedded::open(&dir.path().join("g.ctxg"), OpenMode::CreateIfMissing).unwrap();
        EmbeddedBackend { dir, store }
    }
}

impl Backend for EmbeddedBackend {
    fn write<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R {
        let mut w = self.store.begin_write().unwrap();
        let r = f(&mut w);
        w.commit().unwrap();
        r
    }

    fn read<R>(&self, f: impl FnOnce(&dyn LogReader) -> R) -> R {
        f(&self.store.begin_read().unwrap())
    }

    fn forget<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R {
        // As `Engine::forget` does: secure delete in the transaction, then a rebuilt file and
        // a truncated WAL.
        let mut w = self.store.begin_write().unwrap();
        w.secure_delete(true).unwrap();
        let r = f(&mut w);
        w.secure_delete(false).unwrap();
        w.commit().unwrap();
        self.store.vacuum().unwrap();
        self.store.checkpoint().unwrap();
        r
    }

    fn another(&self) -> EmbeddedBackend {
        let store = Embedded::open(&self.dir.path().join("g.ctxg"), OpenMode::MustExist).unwrap();
        EmbeddedBackend { dir: Arc::clone(&self.dir), store }
    }

    fn holds(&mut self, needle: &str) -> bool {
        std::fs::read_dir(self.dir.path()).unwrap().any(|entry| {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            contains(&bytes, needle.as_bytes())
        })
    }
}

/// A store of its own name on the server `CTXGRAPH_TEST_REDIS` names, deleted when dropped.
pub(crate) struct RedisBackend {
    url: StoreUrl,
    log: RedisLog,
    admin: redis::Connection,
    /// Only the first of a store's backends deletes it.
    owner: bool,
}

/// The server's address: the tests fail, never skip, without one.
pub(crate) fn redis_server() -> String {
    let server = std::env::var("CTXGRAPH_TEST_REDIS").unwrap_or_else(|_| {
        panic!(
            "CTXGRAPH_TEST_REDIS is not set: set it to redis://HOST:PORT of a Redis server \
             (.ci/scaleout.sh starts one and runs these tests)"
        )
    });
    server.trim_end_matches('/').to_owned()
}

/// A store name no other test (of this run or another) uses.
pub(crate) fn fresh_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
    format!("t{}-{}-{nanos}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
}

/// A plain connection to the server, for looking at keys directly.
pub(crate) fn admin(url: &StoreUrl) -> redis::Connection {
    let server = if url.host().contains(':') {
        format!("redis://[{}]:{}/", url.host(), url.port())
    } else {
        format!("redis://{}:{}/", url.host(), url.port())
    };
    redis::Client::open(server)
        .and_then(|c| c.get_connection())
        .unwrap_or_else(|e| panic!("cannot reach the Redis server of {url}: {e}"))
}

/// Every key on the server.
pub(crate) fn all_keys(conn: &mut redis::Connection) -> Vec<Vec<u8>> {
    scan(conn, "*")
}

fn scan(conn: &mut redis::Connection, pattern: &str) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let mut cursor = 0u64;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000)
            .query(conn)
            .unwrap();
        keys.extend(batch);
        if next == 0 {
            return keys;
        }
        cursor = next;
    }
}

/// Everything a key holds, read by its type's commands, followed by its `DUMP` serialisation.
pub(crate) fn key_bytes(conn: &mut redis::Connection, key: &[u8]) -> Vec<u8> {
    let kind: String = redis::cmd("TYPE").arg(key).query(conn).unwrap();
    let read = match kind.as_str() {
        "string" => redis::cmd("GET").arg(key).query::<Value>(conn),
        "hash" => redis::cmd("HGETALL").arg(key).query::<Value>(conn),
        "zset" => redis::cmd("ZRANGE").arg(key).arg(0).arg(-1).query::<Value>(conn),
        "stream" => redis::cmd("XRANGE").arg(key).arg("-").arg("+").query::<Value>(conn),
        "set" => redis::cmd("SMEMBERS").arg(key).query::<Value>(conn),
        "list" => redis::cmd("LRANGE").arg(key).arg(0).arg(-1).query::<Value>(conn),
        _ => Ok(Value::Nil),
    }
    .unwrap();
    let mut bytes = Vec::new();
    flatten(&read, &mut bytes);
    let dump: Value = redis::cmd("DUMP").arg(key).query(conn).unwrap();
    flatten(&dump, &mut bytes);
    bytes
}

fn flatten(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::BulkString(b) => out.extend_from_slice(b),
        Value::SimpleString(s) => out.extend_from_slice(s.as_bytes()),
        Value::Int(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Array(items) | Value::Set(items) => items.iter().for_each(|i| flatten(i, out)),
        Value::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            flatten(k, out);
            flatten(v, out);
        }),
        // Nothing the log's keys hold comes back as these.
        Value::Nil
        | Value::Okay
        | Value::Attribute { .. }
        | Value::Double(_)
        | Value::Boolean(_)
        | Value::VerbatimString { .. }
        | Value::BigNumber(_)
        | Value::Push { .. }
        | Value::ServerError(_)
        | _ => {}
    }
    out.push(0);
}

pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

impl RedisBackend {
    pub(crate) fn new() -> RedisBackend {
        let url = StoreUrl::parse(&format!("{}/{}", redis_server(), fresh_name())).unwrap();
        let log = RedisLog::connect(&url)
            .unwrap_or_else(|e| panic!("cannot reach the Redis server of {url}: {e}"));
        RedisBackend { admin: admin(&url), url, log, owner: true }
    }

    pub(crate) fn url(&self) -> &StoreUrl {
        &self.url
    }

    pub(crate) fn log(&mut self) -> &mut RedisLog {
        &mut self.log
    }

    pub(crate) fn admin(&mut self) -> &mut redis::Connection {
        &mut self.admin
    }

    /// The keys of this store.
    pub(crate) fn store_keys(&mut self) -> Vec<Vec<u8>> {
        let pattern = format!("{}*", self.url.key_prefix());
        scan(&mut self.admin, &pattern)
    }
}

impl Backend for RedisBackend {
    fn write<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R {
        f(&mut self.log)
    }

    fn read<R>(&self, f: impl FnOnce(&dyn LogReader) -> R) -> R {
        f(&self.log)
    }

    fn forget<R>(&mut self, f: impl FnOnce(&mut dyn Log) -> R) -> R {
        f(&mut self.log)
    }

    fn another(&self) -> RedisBackend {
        let log = RedisLog::connect(&self.url).unwrap();
        RedisBackend { admin: admin(&self.url), url: self.url.clone(), log, owner: false }
    }

    fn holds(&mut self, needle: &str) -> bool {
        // Every key on the server, not only this store's: a copy anywhere would count.
        let keys = all_keys(&mut self.admin);
        keys.iter().any(|key| {
            contains(key, needle.as_bytes()) || {
                let bytes = key_bytes(&mut self.admin, key);
                contains(&bytes, needle.as_bytes())
            }
        })
    }
}

impl Drop for RedisBackend {
    fn drop(&mut self) {
        if !self.owner {
            return;
        }
        for key in self.store_keys() {
            let _: Result<Value, _> = redis::cmd("DEL").arg(&key).query(&mut self.admin);
        }
    }
}
