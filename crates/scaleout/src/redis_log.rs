//! The log on Redis: records in hashes keyed by position, a stream of positions for workers,
//! every append and redaction one server-side script, a page read one transaction of hash reads.
//!
//! # Layout (keys under the store's prefix `ctxgraph:{NAME}:`)
//!
//! ```text
//! head    string       the last position (a counter)
//! stream  stream       one entry per record: id 0-POSITION, field kind
//! kind    hash         position → record kind
//! id      hash         position → record id
//! at      hash         position → acknowledgement time
//! body    hash         position → canonical JSON, byte for byte as the embedded log stores it
//! key     hash         KIND:ID → position (the (kind, id) index)
//! bykind  sorted set   KIND:POSITION (20 digits), lexical order = position order
//! ```
//!
//! The stream holds nothing a forget may have to remove: a stream entry cannot be changed,
//! and `XDEL` leaves its bytes in the stream's packed nodes. Ids and bodies are hash fields,
//! replaced in place by [`Log::redact`] and [`Log::redact_as`].

use std::cell::RefCell;
use std::time::Duration;

use ctxgraph_ontology::{RecordKind, ValidRecord};
use ctxgraph_store::{Appended, Log, LogEntry, LogReader, StoreError};
use redis::{Script, Value};

use crate::reply::{TIMEOUT, connect, failure, text};
use crate::url::StoreUrl;

mod forget;

/// Records read per call: a script or a transaction blocks the server while it runs, so a long
/// read is split into pages (positions are gap-free and records immutable but for redaction, so the
/// pages join up).
const READ_PAGE: usize = 1_000;

/// What a page read answers: the head, then each position's kind, id, time and body.
type PageReply = (Option<u64>, Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>);

/// Records appended per script call by [`RedisLog::append_batch`]: a batch larger than this is
/// split, each part atomic.
const APPEND_PAGE: usize = 1_000;

/// The store's keys, in the order the scripts take them.
#[derive(Debug, Clone)]
struct Keys {
    head: String,
    stream: String,
    kind: String,
    id: String,
    at: String,
    body: String,
    key: String,
    bykind: String,
}

impl Keys {
    fn new(prefix: &str) -> Keys {
        let k = |name: &str| format!("{prefix}{name}");
        Keys {
            head: k("head"),
            stream: k("stream"),
            kind: k("kind"),
            id: k("id"),
            at: k("at"),
            body: k("body"),
            key: k("key"),
            bykind: k("bykind"),
        }
    }
}

/// The scripts, loaded once per log (the client sends a script's hash and its text only when
/// the server does not know it yet).
struct Scripts {
    append: Script,
    get: Script,
    get_many: Script,
    read_kind: Script,
    redact: Script,
    import: Script,
    forget: Script,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            append: Script::new(concat!(
                "#!lua\n",
                include_str!("redis_log/write_record.lua"),
                include_str!("redis_log/append.lua")
            )),
            get: Script::new(include_str!("redis_log/get.lua")),
            get_many: Script::new(include_str!("redis_log/get_many.lua")),
            read_kind: Script::new(include_str!("redis_log/read_kind.lua")),
            redact: Script::new(include_str!("redis_log/redact.lua")),
            import: Script::new(concat!(
                "#!lua\n",
                include_str!("redis_log/write_record.lua"),
                include_str!("redis_log/import.lua")
            )),
            forget: Script::new(concat!(
                "#!lua\n",
                include_str!("redis_log/write_record.lua"),
                include_str!("redis_log/forget.lua")
            )),
        }
    }
}

/// One store's log on a Redis server: [`Log`] and [`LogReader`] over one connection.
///
/// Unlike the embedded log, an append is durable (as far as the server's persistence settings
/// say) when the call returns: there is no transaction spanning several calls. Several
/// `RedisLog`s (threads, processes, machines) may append to one store at once: positions stay
/// gap-free and an id is taken once.
pub struct RedisLog {
    url: StoreUrl,
    keys: Keys,
    scripts: Scripts,
    // Reads take `&self` (the trait's contract) but a connection is used mutably.
    conn: RefCell<redis::Connection>,
}

impl std::fmt::Debug for RedisLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLog").field("url", &self.url.to_string()).finish_non_exhaustive()
    }
}

impl RedisLog {
    /// Connect to the server of `url` and use the store it names (created by its first append).
    /// With several instances, a store whose records another instance holds and its own does
    /// not is refused ([`StoreError::Misplaced`]).
    pub fn connect(url: &StoreUrl) -> Result<RedisLog, StoreError> {
        let mut conn = connect(url).map_err(|e| remote(url, &e))?;
        crate::placement::check(url, &mut conn)?;
        Ok(RedisLog {
            url: url.clone(),
            keys: Keys::new(&url.key_prefix()),
            scripts: Scripts::new(),
            conn: RefCell::new(conn),
        })
    }

    /// The store this log belongs to.
    pub fn url(&self) -> &StoreUrl {
        &self.url
    }

    /// Append `records` with one acknowledgement time, each as [`Log::append`] would, in one
    /// script per 1,000 records: each part is decided and written atomically, so two writers
    /// cannot both win an id. A record repeated within the batch is a duplicate of its first
    /// occurrence. The outer error is a failure of the server; the inner ones are conflicts.
    pub fn append_batch(
        &mut self,
        records: &[&ValidRecord],
        recorded_at: &str,
    ) -> Result<Vec<Result<Appended, StoreError>>, StoreError> {
        let mut out = Vec::with_capacity(records.len());
        for part in records.chunks(APPEND_PAGE) {
            let mut call = self.scripts.append.prepare_invoke();
            let k = &self.keys;
            for key in [&k.head, &k.key, &k.kind, &k.id, &k.at, &k.body, &k.bykind, &k.stream] {
                call.key(key);
            }
            call.arg(recorded_at);
            for record in part {
                call.arg(record.kind().as_str()).arg(record.id()).arg(record.canonical());
            }
            let reply: Value =
                call.invoke(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
            let replies = self.array(reply, "append")?;
            if replies.len() != part.len() {
                return Err(self.odd("append", "a reply per record"));
            }
            for (record, reply) in part.iter().zip(replies) {
                let pair = self.array(reply, "append")?;
                let (outcome, position) = match pair.as_slice() {
                    [Value::Int(o), Value::Int(p)] => (*o, position_of(*p)),
                    _ => return Err(self.odd("append", "{outcome, position}")),
                };
                out.push(match outcome {
                    0 => Ok(Appended::New(position)),
                    1 => Ok(Appended::Duplicate(position)),
                    _ => Err(StoreError::Conflict {
                        kind: record.kind().as_str(),
                        id: record.id().to_owned(),
                        position,
                    }),
                });
            }
        }
        Ok(out)
    }

    /// Copy `entries` (read from another log, in position order) into this log at the same
    /// positions, with their ids, acknowledgement times and bodies byte for byte (a migration
    /// keeps a redacted record redacted): one script per 1,000 entries. Each entry must land at
    /// the next position under a `(kind, id)` not taken: this log's head must be the entry's
    /// position minus one. Returns how many were copied; stops at the first that cannot be,
    /// with [`StoreError::Conflict`] for a taken id or [`StoreError::Corruption`] for an entry
    /// out of order.
    pub fn import(&mut self, entries: &[LogEntry]) -> Result<u64, StoreError> {
        let mut copied = 0;
        for part in entries.chunks(APPEND_PAGE) {
            let mut call = self.scripts.import.prepare_invoke();
            let k = &self.keys;
            for key in [&k.head, &k.key, &k.kind, &k.id, &k.at, &k.body, &k.bykind, &k.stream] {
                call.key(key);
            }
            for e in part {
                call.arg(e.position)
                    .arg(e.kind.as_str())
                    .arg(&e.id)
                    .arg(&e.recorded_at)
                    .arg(&e.body);
            }
            let reply: Value =
                call.invoke(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
            for (entry, reply) in part.iter().zip(self.array(reply, "import")?) {
                let pair = self.array(reply, "import")?;
                match pair.as_slice() {
                    [Value::Int(0), Value::Int(_)] => copied += 1,
                    [Value::Int(1), Value::Int(head)] => {
                        return Err(StoreError::Corruption(format!(
                            "{}: log position {} cannot be copied after head {head}: a migration copies a log in order into an empty store",
                            self.url, entry.position
                        )));
                    }
                    [Value::Int(2), Value::Int(at)] => {
                        return Err(StoreError::Conflict {
                            kind: entry.kind.as_str(),
                            id: entry.id.clone(),
                            position: position_of(*at),
                        });
                    }
                    _ => return Err(self.odd("import", "{outcome, position}")),
                }
            }
        }
        Ok(copied)
    }

    /// The CPU seconds the server has used since it started, user and system, every thread
    /// (`INFO cpu`): what a measurement reads before and after, to say where the time went.
    pub fn server_cpu_seconds(&self) -> Result<f64, StoreError> {
        let info: String = redis::cmd("INFO")
            .arg("cpu")
            .query(&mut *self.conn.borrow_mut())
            .map_err(|e| remote(&self.url, &e))?;
        let field = |name: &str| {
            info_field(&info, name).and_then(|v| v.parse::<f64>().ok()).ok_or_else(|| {
                StoreError::Corruption(format!(
                    "{}: the server's `INFO cpu` reply has no number `{name}`",
                    self.url
                ))
            })
        };
        Ok(field("used_cpu_user")? + field("used_cpu_sys")?)
    }

    /// Delete every key of this store (the log, its stream and consumer groups, the graph,
    /// stages 2 and 3), as deleting a store file deletes everything of it, then rewrite what
    /// the server keeps on disk ([`RedisLog::rewrite_persistence`]) so that no file keeps it
    /// either. How many keys were deleted.
    pub fn delete_store(&mut self) -> Result<u64, StoreError> {
        // A store name is letters, digits, `_` and `-`: nothing in the prefix is a pattern.
        let pattern = format!("{}*", self.url.key_prefix());
        let mut cursor = 0u64;
        let mut deleted = 0u64;
        loop {
            let mut conn = self.conn.borrow_mut();
            let (next, keys): (u64, Vec<Vec<u8>>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(1000)
                .query(&mut *conn)
                .map_err(|e| remote(&self.url, &e))?;
            if !keys.is_empty() {
                let n: u64 = redis::cmd("DEL")
                    .arg(&keys)
                    .query(&mut *conn)
                    .map_err(|e| remote(&self.url, &e))?;
                deleted += n;
            }
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        self.rewrite_persistence()?;
        Ok(deleted)
    }

    /// Have the server rewrite what it keeps on disk, and wait until it has, so that the
    /// commands that wrote a redacted body or id leave the disk too: run after a forget.
    /// - With the append-only file on (`aof_enabled`), it is rewritten (`BGREWRITEAOF`); the
    ///   server deletes the old files just after.
    /// - With RDB snapshots scheduled (`CONFIG GET save` not empty) or taken since the server
    ///   started (`rdb_saves`), a new snapshot replaces the last (`BGSAVE`).
    /// - A server that keeps neither writes nothing: a rewrite there would put a copy of every
    ///   store on a disk that held none.
    ///
    /// A snapshot a server loaded at its start and never replaced is not touched (delete it,
    /// or take a new one).
    pub fn rewrite_persistence(&mut self) -> Result<(), StoreError> {
        let info = self.persistence_info()?;
        if info_field(&info, "aof_enabled") != Some("0") {
            self.rewrite_in_background(
                "BGREWRITEAOF",
                &["aof_rewrite_in_progress", "aof_rewrite_scheduled"],
                "aof_last_bgrewrite_status",
                "append-only file rewrite",
            )?;
        }
        let saves = info_field(&info, "rdb_saves").and_then(|n| n.parse::<u64>().ok());
        if saves.is_some_and(|n| n > 0) || self.snapshots_scheduled()? {
            self.rewrite_in_background(
                "BGSAVE",
                &["rdb_bgsave_in_progress"],
                "rdb_last_bgsave_status",
                "snapshot",
            )?;
        }
        Ok(())
    }

    fn persistence_info(&mut self) -> Result<String, StoreError> {
        redis::cmd("INFO")
            .arg("persistence")
            .query(&mut *self.conn.borrow_mut())
            .map_err(|e| remote(&self.url, &e))
    }

    /// Whether the server takes RDB snapshots on a schedule (`CONFIG GET save`). A server that
    /// does not answer `CONFIG` (renamed or refused) is taken to: a snapshot too many costs
    /// time, one too few leaves the forgotten bytes on its disk.
    fn snapshots_scheduled(&mut self) -> Result<bool, StoreError> {
        let reply = redis::cmd("CONFIG")
            .arg("GET")
            .arg("save")
            .query::<Vec<String>>(&mut *self.conn.borrow_mut());
        Ok(match reply {
            Ok(pair) => pair.get(1).is_some_and(|schedule| !schedule.trim().is_empty()),
            Err(_) => true,
        })
    }

    /// Start the background rewrite `command` and wait until the `busy` fields of
    /// `INFO persistence` are 0, then check its `status` field. A rewrite already running
    /// (another forget's) may have copied the data before this caller's changes: it is waited
    /// for, then one is started.
    fn rewrite_in_background(
        &mut self,
        command: &str,
        busy: &[&str],
        status: &str,
        what: &str,
    ) -> Result<(), StoreError> {
        let started = std::time::Instant::now();
        loop {
            let reply = redis::cmd(command).query::<Value>(&mut *self.conn.borrow_mut());
            match reply {
                Ok(_) => break,
                Err(e) => {
                    // "already in progress", or a save refused while the other kind runs.
                    let running = e.to_string().contains("in progress");
                    if !running || started.elapsed() > TIMEOUT {
                        return Err(remote(&self.url, &e));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        loop {
            let info = self.persistence_info()?;
            if busy.iter().all(|field| info_field(&info, field) == Some("0")) {
                return match info_field(&info, status) {
                    Some("ok") => Ok(()),
                    found => Err(StoreError::Remote {
                        backend: "redis",
                        detail: format!(
                            "{}: the {what} failed (status {})",
                            self.url,
                            found.unwrap_or("unknown")
                        ),
                    }),
                };
            }
            if started.elapsed() > TIMEOUT {
                return Err(StoreError::Remote {
                    backend: "redis",
                    detail: format!(
                        "{}: the {what} did not finish within {}s",
                        self.url,
                        TIMEOUT.as_secs()
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn redact_with(
        &mut self,
        position: u64,
        body: &str,
        id: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut call = self.scripts.redact.prepare_invoke();
        let k = &self.keys;
        call.key(&k.kind).key(&k.id).key(&k.key).key(&k.body);
        call.arg(position.to_string()).arg(body);
        if let Some(id) = id {
            call.arg(id);
        }
        let reply: Value = call.invoke(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
        let reply = self.array(reply, "redact")?;
        match reply.as_slice() {
            [Value::Int(0)] => Ok(false),
            [Value::Int(1)] => Ok(true),
            [Value::Int(2), kind, Value::Int(other)] => {
                let kind = text(kind).and_then(|k| RecordKind::parse(&k));
                Err(StoreError::Conflict {
                    kind: kind.map_or("record", RecordKind::as_str),
                    id: id.unwrap_or_default().to_owned(),
                    position: position_of(*other),
                })
            }
            _ => Err(self.odd("redact", "{0}, {1} or {2, kind, position}")),
        }
    }

    /// The entries of one page of the `get_many` script's reply, pushed onto `out` in the
    /// order of `page`.
    fn page_entries(
        &self,
        reply: Value,
        page: &[(RecordKind, &str)],
        out: &mut Vec<Option<LogEntry>>,
    ) -> Result<(), StoreError> {
        let rows = self.array(reply, "get_many")?;
        if rows.len() != page.len() {
            return Err(self.odd("get_many", "one entry per record asked"));
        }
        for (row, (kind, id)) in rows.into_iter().zip(page) {
            if row == Value::Nil {
                out.push(None);
                continue;
            }
            let row = self.array(row, "get_many")?;
            let [Value::Int(p), at, body] = row.as_slice() else {
                return Err(self.odd("get_many", "{position, recorded_at, body}"));
            };
            let kind_text = Value::BulkString(kind.as_str().as_bytes().to_vec());
            let id_text = Value::BulkString(id.as_bytes().to_vec());
            out.push(Some(self.entry(position_of(*p), [&kind_text, &id_text, at, body])?));
        }
        Ok(())
    }

    /// Send [`LogReader::get_many`] of `keys` without waiting for the reply, which
    /// [`RedisLog::receive_get_many`] takes: a caller can wait for another connection's reply
    /// in between. Whether it was sent: not for no keys, nor for more than one page.
    pub(crate) fn send_get_many(&self, keys: &[(RecordKind, &str)]) -> Result<bool, StoreError> {
        if keys.is_empty() || keys.len() > READ_PAGE {
            return Ok(false);
        }
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.scripts.get_many.get_hash())
            .arg(3)
            .arg(&self.keys.key)
            .arg(&self.keys.at)
            .arg(&self.keys.body);
        for (kind, id) in keys {
            cmd.arg(format!("{}:{id}", kind.as_str()));
        }
        self.conn
            .borrow_mut()
            .send_packed_command(&cmd.get_packed_command())
            .map_err(|e| self.fail(&e))?;
        Ok(true)
    }

    /// The answer to the [`RedisLog::send_get_many`] of `keys`. A server that does not know
    /// the script (restarted, or its scripts flushed) is asked again through the script, which
    /// loads it.
    pub(crate) fn receive_get_many(
        &self,
        keys: &[(RecordKind, &str)],
    ) -> Result<Vec<Option<LogEntry>>, StoreError> {
        let reply = self.conn.borrow_mut().recv_response().and_then(Value::extract_error);
        let reply = match reply {
            Ok(reply) => reply,
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                return self.get_many(keys);
            }
            Err(e) => return Err(self.fail(&e)),
        };
        let mut out = Vec::with_capacity(keys.len());
        self.page_entries(reply, keys, &mut out)?;
        Ok(out)
    }

    fn fail(&self, e: &redis::RedisError) -> StoreError {
        remote(&self.url, e)
    }

    /// A reply that is not what the script returns: another program wrote the keys, or the
    /// server is not Redis.
    fn odd(&self, script: &str, expected: &str) -> StoreError {
        StoreError::Corruption(format!(
            "{}: the {script} script's reply is not {expected}; were the store's keys written by something else?",
            self.url
        ))
    }

    fn array(&self, v: Value, script: &str) -> Result<Vec<Value>, StoreError> {
        if let Value::Array(items) = v {
            return Ok(items);
        }
        Err(self.odd(script, "an array"))
    }

    /// A record read back: every part must be there (positions are gap-free).
    fn entry(&self, position: u64, parts: [&Value; 4]) -> Result<LogEntry, StoreError> {
        let missing = || {
            StoreError::Corruption(format!(
                "{}: log position {position} is at or below the head but its record is incomplete",
                self.url
            ))
        };
        let [kind, id, at, body] = parts.map(text);
        let kind = kind.ok_or_else(missing)?;
        let kind = RecordKind::parse(&kind).ok_or_else(|| {
            StoreError::Corruption(format!(
                "{}: log position {position} has unknown kind `{kind}`",
                self.url
            ))
        })?;
        Ok(LogEntry {
            position,
            kind,
            id: id.ok_or_else(missing)?,
            recorded_at: at.ok_or_else(missing)?,
            body: body.ok_or_else(missing)?,
        })
    }
}

impl RedisLog {
    /// Up to `want` records from position `from` into `out`, in one consistent view: the head
    /// and one `HMGET` per hash in one `MULTI`/`EXEC`, so a page costs the server four hash
    /// reads and no script (a script's strings are copied into Lua and back, which cost the
    /// server four times what the reads do). Returns how many records were read.
    fn read_page(
        &self,
        from: u64,
        want: usize,
        out: &mut Vec<LogEntry>,
    ) -> Result<usize, StoreError> {
        let positions: Vec<u64> = (from..from.saturating_add(want as u64)).collect();
        let want = positions.len();
        if want == 0 {
            return Ok(0);
        }
        let mut pipe = redis::pipe();
        pipe.atomic().cmd("GET").arg(&self.keys.head);
        for hash in [&self.keys.kind, &self.keys.id, &self.keys.at, &self.keys.body] {
            pipe.cmd("HMGET").arg(hash).arg(&positions);
        }
        let (head, kinds, ids, ats, bodies): PageReply =
            pipe.query(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
        // Records past the head are not there (or are being written by an append after this
        // view): the page ends at the head.
        let head = head.unwrap_or(0);
        let upto = if head < from {
            0
        } else {
            usize::try_from(head - from + 1).map_or(want, |n| n.min(want))
        };
        let page = [&kinds, &ids, &ats, &bodies];
        if page.iter().any(|h| h.len() != want) {
            return Err(StoreError::Corruption(format!(
                "{}: a page read of {want} log positions from {from} did not answer one value per position; were the store's keys written by something else?",
                self.url
            )));
        }
        for (i, position) in positions.iter().take(upto).enumerate() {
            out.push(self.entry(*position, page.map(|h| &h[i]))?);
        }
        Ok(upto)
    }
}

impl LogReader for RedisLog {
    fn head(&self) -> Result<u64, StoreError> {
        let head: Option<u64> = redis::cmd("GET")
            .arg(&self.keys.head)
            .query(&mut *self.conn.borrow_mut())
            .map_err(|e| self.fail(&e))?;
        Ok(head.unwrap_or(0))
    }

    fn get(&self, kind: RecordKind, id: &str) -> Result<Option<LogEntry>, StoreError> {
        let reply: Value = self
            .scripts
            .get
            .key(&self.keys.key)
            .key(&self.keys.at)
            .key(&self.keys.body)
            .arg(kind.as_str())
            .arg(id)
            .invoke(&mut *self.conn.borrow_mut())
            .map_err(|e| self.fail(&e))?;
        if reply == Value::Nil {
            return Ok(None);
        }
        let reply = self.array(reply, "get")?;
        let [Value::Int(p), at, body] = reply.as_slice() else {
            return Err(self.odd("get", "{position, recorded_at, body}"));
        };
        let kind_text = Value::BulkString(kind.as_str().as_bytes().to_vec());
        let id_text = Value::BulkString(id.as_bytes().to_vec());
        self.entry(position_of(*p), [&kind_text, &id_text, at, body]).map(Some)
    }

    fn get_many(&self, keys: &[(RecordKind, &str)]) -> Result<Vec<Option<LogEntry>>, StoreError> {
        let mut out = Vec::with_capacity(keys.len());
        // A script blocks the server while it runs: a long list is read a page per call.
        for page in keys.chunks(READ_PAGE) {
            let mut call = self.scripts.get_many.prepare_invoke();
            call.key(&self.keys.key).key(&self.keys.at).key(&self.keys.body);
            for (kind, id) in page {
                call.arg(format!("{}:{id}", kind.as_str()));
            }
            let reply: Value =
                call.invoke(&mut *self.conn.borrow_mut()).map_err(|e| self.fail(&e))?;
            self.page_entries(reply, page, &mut out)?;
        }
        Ok(out)
    }

    fn read_from(&self, from: u64, limit: usize) -> Result<Vec<LogEntry>, StoreError> {
        let mut out = Vec::new();
        // Positions start at 1: a read from 0 is a read from the start, as in the embedded log.
        let mut next = from.max(1);
        while out.len() < limit {
            let want = (limit - out.len()).min(READ_PAGE);
            let got = self.read_page(next, want, &mut out)?;
            if got < want {
                break;
            }
            next += got as u64;
        }
        Ok(out)
    }

    fn read_kind(&self, kind: RecordKind) -> Result<Vec<LogEntry>, StoreError> {
        let mut out = Vec::new();
        let mut after = String::new();
        loop {
            let reply: Value = self
                .scripts
                .read_kind
                .key(&self.keys.bykind)
                .key(&self.keys.id)
                .key(&self.keys.at)
                .key(&self.keys.body)
                .arg(kind.as_str())
                .arg(&after)
                .arg(READ_PAGE)
                .invoke(&mut *self.conn.borrow_mut())
                .map_err(|e| self.fail(&e))?;
            let rows = self.array(reply, "read_kind")?;
            let got = rows.len();
            for row in rows {
                let row = self.array(row, "read_kind")?;
                let [member, id, at, body] = row.as_slice() else {
                    return Err(self.odd("read_kind", "{member, id, recorded_at, body}"));
                };
                let member = text(member).unwrap_or_default();
                let position = member
                    .strip_prefix(kind.as_str())
                    .and_then(|rest| rest.strip_prefix(':'))
                    .and_then(|digits| digits.parse::<u64>().ok())
                    .ok_or_else(|| {
                        StoreError::Corruption(format!(
                            "{}: kind index member `{member}` is not {}:POSITION",
                            self.url,
                            kind.as_str()
                        ))
                    })?;
                let kind_text = Value::BulkString(kind.as_str().as_bytes().to_vec());
                out.push(self.entry(position, [&kind_text, id, at, body])?);
                after = member;
            }
            if got < READ_PAGE {
                return Ok(out);
            }
        }
    }
}

impl Log for RedisLog {
    fn append(&mut self, record: &ValidRecord, recorded_at: &str) -> Result<Appended, StoreError> {
        let mut outcomes = self.append_batch(&[record], recorded_at)?;
        outcomes.pop().ok_or_else(|| self.odd("append", "a reply per record"))?
    }

    fn redact(&mut self, position: u64, body: &str) -> Result<bool, StoreError> {
        self.redact_with(position, body, None)
    }

    fn redact_as(&mut self, position: u64, id: &str, body: &str) -> Result<bool, StoreError> {
        self.redact_with(position, body, Some(id))
    }
}

fn remote(url: &StoreUrl, e: &redis::RedisError) -> StoreError {
    failure("redis", url, e)
}

/// Positions come back as Redis integers: never negative (a counter from 1).
fn position_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// The value of `name` in an `INFO` reply (`name:value` lines), trimmed.
fn info_field<'a>(info: &'a str, name: &str) -> Option<&'a str> {
    info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':')).map(str::trim)
}
