//! A consumer of a store's log stream in a consumer group: what a projection worker reads with.
//!
//! Each stage (projection, enrichment, consolidation) is its own group, so each has its own
//! cursor over the stream. An entry a consumer read but did not acknowledge stays in the group's
//! pending-entry list; when the consumer dies, another claims such entries once they have been
//! idle long enough ([`LogConsumer::claim_idle`]). Entries carry only a position and a kind: the
//! record itself is read from the log ([`crate::RedisLog`]) by position.

use std::time::Duration;

use ctxgraph_store::StoreError;
use redis::Value;

use crate::reply::{TIMEOUT, connect, failure, text};
use crate::url::StoreUrl;

mod later;

/// The longest group or consumer name, in bytes.
pub const MAX_CONSUMER_NAME_BYTES: usize = 64;

/// One consumer of one group on one store's stream.
pub struct LogConsumer {
    url: StoreUrl,
    stream: String,
    group: String,
    consumer: String,
    conn: redis::Connection,
    /// Commands sent whose replies are still to be read, in order (`later.rs`).
    unread: std::collections::VecDeque<later::Unread>,
}

impl std::fmt::Debug for LogConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogConsumer")
            .field("url", &self.url.to_string())
            .field("group", &self.group)
            .field("consumer", &self.consumer)
            .finish_non_exhaustive()
    }
}

/// A group or consumer name: 1 to 64 bytes of `A-Z a-z 0-9 _ -`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerName(String);

/// Why a group or consumer name was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "consumer name `{value}`: 1 to {MAX_CONSUMER_NAME_BYTES} bytes of `A-Z a-z 0-9 _ -` (rule: stream.consumer_name)"
)]
pub struct NameError {
    /// The name given.
    pub value: String,
}

impl ConsumerName {
    /// Check a name.
    pub fn parse(name: &str) -> Result<ConsumerName, NameError> {
        let plain = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if name.is_empty() || name.len() > MAX_CONSUMER_NAME_BYTES || !plain {
            return Err(NameError { value: name.to_owned() });
        }
        Ok(ConsumerName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where a group and its consumers stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupState {
    /// Entries delivered to a consumer and not acknowledged.
    pub pending: u64,
    /// Entries in the stream not yet delivered to any consumer of the group.
    pub lag: u64,
    /// The position of the last entry delivered (0 before the first).
    pub delivered_through: u64,
}

impl LogConsumer {
    /// Join `group` as `consumer` on the stream of the store `url` names, creating the group
    /// (reading from the first entry) if it does not exist.
    pub fn join(
        url: &StoreUrl,
        group: &ConsumerName,
        consumer: &ConsumerName,
    ) -> Result<LogConsumer, StoreError> {
        let (group, consumer) = (group.0.as_str(), consumer.0.as_str());
        let fail = |e: redis::RedisError| remote(url, &e);
        let mut conn = connect(url).map_err(fail)?;
        let stream = format!("{}stream", url.key_prefix());
        let created: Result<Value, redis::RedisError> = redis::cmd("XGROUP")
            .arg("CREATE")
            .arg(&stream)
            .arg(group)
            .arg("0")
            .arg("MKSTREAM")
            .query(&mut conn);
        match created {
            Ok(_) => {}
            // Another consumer created it first: join it as it is.
            Err(e) if e.code() == Some("BUSYGROUP") => {}
            Err(e) => return Err(fail(e)),
        }
        Ok(LogConsumer {
            url: url.clone(),
            stream,
            group: group.to_owned(),
            consumer: consumer.to_owned(),
            conn,
            unread: std::collections::VecDeque::new(),
        })
    }

    /// Up to `count` positions not yet delivered to this group, in log order; waits up to
    /// `block` for one when there are none (returns none after it). The positions stay pending
    /// for this consumer until [`LogConsumer::ack`].
    pub fn next(&mut self, count: usize, block: Option<Duration>) -> Result<Vec<u64>, StoreError> {
        self.settle()?;
        if let Some(wait) = block {
            self.conn.set_read_timeout(Some(TIMEOUT + wait)).map_err(|e| self.fail(&e))?;
        }
        let reply: Value =
            self.xreadgroup(count, block).query(&mut self.conn).map_err(|e| self.fail(&e))?;
        if block.is_some() {
            self.conn.set_read_timeout(Some(TIMEOUT)).map_err(|e| self.fail(&e))?;
        }
        self.delivered(reply)
    }

    /// The positions of an `XREADGROUP` reply.
    fn delivered(&self, reply: Value) -> Result<Vec<u64>, StoreError> {
        // [[stream, [[id, fields], ...]]], or nil when the wait ran out.
        let mut out = Vec::new();
        if let Value::Array(streams) = reply {
            for s in streams {
                let Value::Array(parts) = s else { return Err(self.odd("XREADGROUP")) };
                let Some(Value::Array(entries)) = parts.get(1) else {
                    return Err(self.odd("XREADGROUP"));
                };
                out.extend(self.positions(entries)?);
            }
        }
        Ok(out)
    }

    /// Acknowledge `positions`: done, no longer pending. Returns how many were pending.
    pub fn ack(&mut self, positions: &[u64]) -> Result<u64, StoreError> {
        self.settle()?;
        if positions.is_empty() {
            return Ok(0);
        }
        self.xack(positions).query(&mut self.conn).map_err(|e| self.fail(&e))
    }

    /// Take over up to `count` entries of this group that another consumer (a worker that died)
    /// read and has not acknowledged for at least `min_idle`, in log order. They become this
    /// consumer's pending entries.
    pub fn claim_idle(&mut self, min_idle: Duration, count: usize) -> Result<Vec<u64>, StoreError> {
        self.settle()?;
        let mut out = self.claim_from(min_idle, "0-0".to_owned(), count)?;
        out.sort_unstable();
        Ok(out)
    }

    /// Claim up to `count` idle entries from the claim cursor `cursor` on.
    fn claim_from(
        &mut self,
        min_idle: Duration,
        mut cursor: String,
        count: usize,
    ) -> Result<Vec<u64>, StoreError> {
        let mut out = Vec::new();
        loop {
            let reply: Value = self
                .autoclaim(min_idle, &cursor, count.saturating_sub(out.len()))
                .query(&mut self.conn)
                .map_err(|e| self.fail(&e))?;
            let (next, positions) = self.claimed(reply)?;
            out.extend(positions);
            cursor = next;
            if cursor == "0-0" || out.len() >= count {
                return Ok(out);
            }
        }
    }

    /// The `XREADGROUP` of up to `count` new entries, waiting up to `block` for one.
    fn xreadgroup(&self, count: usize, block: Option<Duration>) -> redis::Cmd {
        let mut cmd = redis::cmd("XREADGROUP");
        cmd.arg("GROUP").arg(&self.group).arg(&self.consumer).arg("COUNT").arg(count.max(1));
        if let Some(wait) = block {
            // BLOCK 0 would wait forever: the shortest wait is one millisecond.
            cmd.arg("BLOCK").arg(wait.as_millis().max(1));
        }
        cmd.arg("STREAMS").arg(&self.stream).arg(">");
        cmd
    }

    /// The `XACK` of `positions`.
    fn xack(&self, positions: &[u64]) -> redis::Cmd {
        let mut cmd = redis::cmd("XACK");
        cmd.arg(&self.stream).arg(&self.group);
        for p in positions {
            cmd.arg(format!("0-{p}"));
        }
        cmd
    }

    /// The `XAUTOCLAIM` of up to `count` entries idle for `min_idle`, from `cursor` on.
    fn autoclaim(&self, min_idle: Duration, cursor: &str, count: usize) -> redis::Cmd {
        let mut cmd = redis::cmd("XAUTOCLAIM");
        cmd.arg(&self.stream)
            .arg(&self.group)
            .arg(&self.consumer)
            .arg(min_idle.as_millis())
            .arg(cursor)
            .arg("COUNT")
            .arg(count.max(1));
        cmd
    }

    /// The next cursor and the claimed positions of an `XAUTOCLAIM` reply.
    fn claimed(&self, reply: Value) -> Result<(String, Vec<u64>), StoreError> {
        // [next cursor, [[id, fields], ...], [deleted ids]]
        let Value::Array(parts) = reply else { return Err(self.odd("XAUTOCLAIM")) };
        let (Some(next), Some(Value::Array(entries))) = (parts.first(), parts.get(1)) else {
            return Err(self.odd("XAUTOCLAIM"));
        };
        let cursor = text(next).ok_or_else(|| self.odd("XAUTOCLAIM"))?;
        Ok((cursor, self.positions(entries)?))
    }

    /// The group's pending entries, lag and last delivered position.
    pub fn state(&mut self) -> Result<GroupState, StoreError> {
        self.settle()?;
        let reply: Value = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&self.stream)
            .query(&mut self.conn)
            .map_err(|e| self.fail(&e))?;
        let Value::Array(groups) = reply else { return Err(self.odd("XINFO GROUPS")) };
        find_group(&groups, &self.group).ok_or_else(|| self.odd("XINFO GROUPS"))
    }

    /// Where `group` stands on the stream of the store `url` names, without joining it:
    /// `None` when the store has no stream or the stream no such group (what `stats` reads,
    /// which must not create either).
    pub fn group_state(
        url: &StoreUrl,
        group: &ConsumerName,
    ) -> Result<Option<GroupState>, StoreError> {
        let mut conn = connect(url).map_err(|e| remote(url, &e))?;
        Self::group_state_on(&mut conn, url, group)
    }

    /// [`LogConsumer::group_state`] on the connection `conn` to `url`'s server.
    fn group_state_on(
        conn: &mut redis::Connection,
        url: &StoreUrl,
        group: &ConsumerName,
    ) -> Result<Option<GroupState>, StoreError> {
        let stream = format!("{}stream", url.key_prefix());
        let exists: i64 =
            redis::cmd("EXISTS").arg(&stream).query(conn).map_err(|e| remote(url, &e))?;
        if exists == 0 {
            return Ok(None);
        }
        let reply: Value = redis::cmd("XINFO")
            .arg("GROUPS")
            .arg(&stream)
            .query(conn)
            .map_err(|e| remote(url, &e))?;
        let Value::Array(groups) = reply else {
            return Err(StoreError::Corruption(format!(
                "{url}: the reply to XINFO GROUPS is not what the log stream holds; were its keys written by something else?"
            )));
        };
        Ok(find_group(&groups, group.as_str()))
    }

    fn positions(&self, entries: &[Value]) -> Result<Vec<u64>, StoreError> {
        entries
            .iter()
            .map(|e| {
                let Value::Array(parts) = e else { return Err(self.odd("a stream entry")) };
                parts
                    .first()
                    .and_then(text)
                    .and_then(|id| position_of_id(&id))
                    .ok_or_else(|| self.odd("a stream entry"))
            })
            .collect()
    }

    fn fail(&self, e: &redis::RedisError) -> StoreError {
        remote(&self.url, e)
    }

    fn odd(&self, what: &str) -> StoreError {
        StoreError::Corruption(format!(
            "{}: the reply to {what} is not what the log stream holds; were its keys written by something else?",
            self.url
        ))
    }
}

/// The state of the group named `name` in an `XINFO GROUPS` reply.
/// [`LogConsumer::group_state`] looked at again and again (a server's `/metrics` on every
/// scrape) over one connection, opened at the first look and again after a look that failed,
/// instead of a connection per look.
pub struct GroupProbe {
    url: StoreUrl,
    group: ConsumerName,
    conn: Option<redis::Connection>,
}

impl std::fmt::Debug for GroupProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupProbe")
            .field("url", &self.url.to_string())
            .field("group", &self.group.as_str())
            .finish_non_exhaustive()
    }
}

impl GroupProbe {
    /// A probe of `group` on the stream of the store `url` names; connects on its first look.
    pub fn new(url: &StoreUrl, group: ConsumerName) -> GroupProbe {
        GroupProbe { url: url.clone(), group, conn: None }
    }

    /// Where the group stands now ([`LogConsumer::group_state`]).
    pub fn state(&mut self) -> Result<Option<GroupState>, StoreError> {
        let conn = match &mut self.conn {
            Some(conn) => conn,
            None => self.conn.insert(connect(&self.url).map_err(|e| remote(&self.url, &e))?),
        };
        let state = LogConsumer::group_state_on(conn, &self.url, &self.group);
        if state.is_err() {
            // The connection may be out of step or gone: the next look opens another.
            self.conn = None;
        }
        state
    }
}

fn find_group(groups: &[Value], name: &str) -> Option<GroupState> {
    for g in groups {
        let fields = pairs(g);
        let field = |key: &str| fields.iter().find(|(k, _)| k == key).map(|(_, v)| v);
        if field("name").and_then(text).as_deref() != Some(name) {
            continue;
        }
        let int = |key: &str| match field(key) {
            Some(Value::Int(n)) => u64::try_from(*n).unwrap_or(0),
            _ => 0,
        };
        let delivered = field("last-delivered-id").and_then(text).unwrap_or_default();
        return Some(GroupState {
            pending: int("pending"),
            lag: int("lag"),
            delivered_through: position_of_id(&delivered).unwrap_or(0),
        });
    }
    None
}

/// The position of a stream entry id `0-POSITION`.
fn position_of_id(id: &str) -> Option<u64> {
    id.strip_prefix("0-")?.parse().ok()
}

/// A flat `[key, value, …]` reply (or a map reply) as pairs.
fn pairs(v: &Value) -> Vec<(String, Value)> {
    if let Value::Map(items) = v {
        return items.iter().filter_map(|(k, v)| Some((text(k)?, v.clone()))).collect();
    }
    if let Value::Array(items) = v {
        return items
            .chunks(2)
            .filter_map(|kv| Some((text(kv.first()?)?, kv.get(1)?.clone())))
            .collect();
    }
    Vec::new()
}

fn remote(url: &StoreUrl, e: &redis::RedisError) -> StoreError {
    failure("redis", url, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_short_plain_words() {
        assert_eq!(ConsumerName::parse("project-1_a").unwrap().as_str(), "project-1_a");
        for bad in ["", "with space", "a:b", "é", &"n".repeat(MAX_CONSUMER_NAME_BYTES + 1)] {
            let e = ConsumerName::parse(bad).unwrap_err();
            assert_eq!(e.value, bad);
            assert!(e.to_string().contains("stream.consumer_name"), "{e}");
        }
        assert_eq!(position_of_id("0-42"), Some(42));
        assert_eq!(position_of_id("1-42"), None);
    }
}
