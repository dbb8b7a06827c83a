//! What the Redis-protocol backends share: opening a plain connection, reading a string reply,
//! and reporting a failure of the server.

use std::time::Duration;

use ctxgraph_store::StoreError;
use redis::Value;

use crate::url::StoreUrl;

/// How long connecting, and then each reply, may take before the call fails.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

/// A plain connection to the server of `url`, with connect, read and write timeouts.
pub(crate) fn connect(url: &StoreUrl) -> Result<redis::Connection, redis::RedisError> {
    // Without delay: a command sent while an earlier one's reply is unread (a worker's
    // acknowledgement, then its next round's claim) must not wait for the server's TCP ACK.
    let info = redis::IntoConnectionInfo::into_connection_info(url.server())?
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    let conn = redis::Client::open(info)?.get_connection_with_timeout(TIMEOUT)?;
    conn.set_read_timeout(Some(TIMEOUT))?;
    conn.set_write_timeout(Some(TIMEOUT))?;
    Ok(conn)
}

/// A string reply as text; `None` for nil (a missing hash field) or bytes that are not UTF-8.
pub(crate) fn text(v: &Value) -> Option<String> {
    if let Value::BulkString(bytes) = v {
        return String::from_utf8(bytes.clone()).ok();
    }
    if let Value::SimpleString(s) = v {
        return Some(s.clone());
    }
    None
}

/// The server of `url` failed or could not be reached.
pub(crate) fn failure(
    backend: &'static str,
    url: &StoreUrl,
    e: &dyn std::fmt::Display,
) -> StoreError {
    StoreError::Remote { backend, detail: format!("{url}: {e}") }
}
