//! FalkorDB's query telemetry: the server records every query on a graph, its text and its
//! parameters, in a stream beside the graph (`telemetry{GRAPH}`, at most `MAX_INFO_QUERIES`
//! entries), written a second or so after the query ran, whatever `CMD_INFO` says. The fold's
//! queries carry record content there, so a forget drops the stream once the queries that
//! carried the forgotten text have reached it: a stream entry cannot be rewritten.

use std::time::{Duration, Instant};

use ctxgraph_store::StoreError;
use redis::Value;

use crate::reply::{TIMEOUT, connect, failure};
use crate::url::StoreUrl;

/// Drop the telemetry stream of `graph` once every query run on it before this call is in it:
/// a marker query is run, and the stream is read until the marker shows (the server drains
/// its record of queries in order). A server that keeps no telemetry (`MAX_INFO_QUERIES` 0, or
/// a build without the setting) is left alone.
pub fn drop_telemetry(url: &StoreUrl, graph: &str) -> Result<(), StoreError> {
    let fail = |e: redis::RedisError| failure("redis", url, &e);
    let mut conn = connect(url).map_err(fail)?;
    let config = redis::cmd("GRAPH.CONFIG").arg("GET").arg("MAX_INFO_QUERIES").query(&mut conn);
    let config: Value = match config {
        Ok(config) => config,
        // A build that does not know the setting keeps no telemetry.
        Err(e) if matches!(e.kind(), redis::ErrorKind::Server(_) | redis::ErrorKind::Extension) => {
            return Ok(());
        }
        Err(e) => return Err(fail(e)),
    };
    if matches!(&config, Value::Array(pair) if matches!(pair.as_slice(), [_, Value::Int(0)])) {
        return Ok(());
    }
    let stream = format!("telemetry{{{graph}}}");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let marker = format!("RETURN 'forget {nanos} {}'", std::process::id());
    redis::cmd("GRAPH.RO_QUERY").arg(graph).arg(&marker).query::<Value>(&mut conn).map_err(fail)?;
    let started = Instant::now();
    loop {
        let recent: Value = redis::cmd("XREVRANGE")
            .arg(&stream)
            .arg("+")
            .arg("-")
            .arg("COUNT")
            .arg(1_000)
            .query(&mut conn)
            .map_err(fail)?;
        if holds(&recent, marker.as_bytes()) {
            break;
        }
        if started.elapsed() > TIMEOUT {
            return Err(StoreError::Remote {
                backend: "redis",
                detail: format!(
                    "{url}: FalkorDB's query telemetry of graph {graph} did not record a query \
                     within {}s, so it cannot be cleared of the forgotten text",
                    TIMEOUT.as_secs()
                ),
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    redis::cmd("DEL").arg(&stream).query::<Value>(&mut conn).map_err(fail)?;
    Ok(())
}

/// Whether a reply holds `needle` as one of its strings.
fn holds(v: &Value, needle: &[u8]) -> bool {
    match v {
        Value::BulkString(b) => b.as_slice() == needle,
        Value::SimpleString(s) => s.as_bytes() == needle,
        Value::Array(items) | Value::Set(items) => items.iter().any(|i| holds(i, needle)),
        Value::Map(pairs) => pairs.iter().any(|(k, v)| holds(k, needle) || holds(v, needle)),
        Value::Nil
        | Value::Int(_)
        | Value::Okay
        | Value::Attribute { .. }
        | Value::Double(_)
        | Value::Boolean(_)
        | Value::VerbatimString { .. }
        | Value::BigNumber(_)
        | Value::Push { .. }
        | Value::ServerError(_)
        | _ => false,
    }
}
