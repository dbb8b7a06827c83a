//! MCP over stdin/stdout with JSON-RPC parse errors: a line that is not JSON gets the
//! JSON-RPC 2.0 answer `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,...}}` instead of
//! silence, so a client that sent garbage learns it, and the session goes on.
//!
//! The SDK's stdio transport drops unparsable lines without a word, so the tools are served
//! over in-process pipes: one task reads stdin a line at a time, answers the lines that are
//! not JSON and passes the others to the SDK; another writes every outgoing line (the SDK's
//! and the parse errors) to stdout whole, so the two never interleave within a line.

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest incoming line; a longer one is answered as a parse error and skipped.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;
/// Bytes buffered in each in-process pipe.
const PIPE: usize = 64 * 1024;

/// The JSON-RPC parse error for a line that is not JSON.
fn parse_error(detail: &str) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {detail}")}})
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// Why `line` (without its newline) is not JSON, or `None` when it is (or is blank).
fn not_json(line: &[u8]) -> Option<String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    }
}

/// Pipes for the SDK: what it reads (stdin's JSON lines) and where it writes (to stdout),
/// with the tasks that move lines between them and the process's stdin and stdout. Returns
/// the SDK's reader and writer, and a handle that finishes writing once the SDK is done.
pub(crate) fn pipes<R, W>(
    input: R,
    output: W,
) -> (impl AsyncRead + Send + Unpin, impl AsyncWrite + Send + Unpin, Pump)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let (sdk_in, mut feed) = tokio::io::duplex(PIPE);
    let (sdk_out_read, sdk_out) = tokio::io::duplex(PIPE);
    let (lines, mut outgoing) = mpsc::unbounded_channel::<Vec<u8>>();
    let errors = lines.clone();
    let reader = tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = (&mut input).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).await;
            match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let complete = line.ends_with(b"\n");
            if !complete && line.len() > MAX_LINE {
                // Skip the rest of the oversized line before answering it.
                let mut rest = Vec::new();
                while !rest.ends_with(b"\n") {
                    rest.clear();
                    match (&mut input).take(PIPE as u64).read_until(b'\n', &mut rest).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                let _ = errors.send(parse_error(&format!("line longer than {MAX_LINE} bytes")));
                continue;
            }
            let body = line.strip_suffix(b"\n").unwrap_or(&line);
            match not_json(body.strip_suffix(b"\r").unwrap_or(body)) {
                Some(why) => {
                    let _ = errors.send(parse_error(&why));
                }
                None => {
                    if feed.write_all(&line).await.is_err() {
                        break;
                    }
                    if !complete && feed.write_all(b"\n").await.is_err() {
                        break;
                    }
                }
            }
        }
        // Closing the SDK's input ends the session, as the end of stdin does.
        let _ = feed.shutdown().await;
    });
    let relay = tokio::spawn(async move {
        let mut from_sdk = BufReader::new(sdk_out_read);
        loop {
            let mut line = Vec::new();
            match from_sdk.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if lines.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = outgoing.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    (sdk_in, sdk_out, Pump { reader, relay, writer })
}

/// The tasks behind [`pipes`].
pub(crate) struct Pump {
    reader: tokio::task::JoinHandle<()>,
    relay: tokio::task::JoinHandle<()>,
    writer: tokio::task::JoinHandle<()>,
}

impl Pump {
    /// After the SDK is done (and has dropped its writer): pass on what it wrote last, stop
    /// reading stdin, and write out every line still queued.
    pub(crate) async fn finish(self) {
        let _ = self.relay.await;
        self.reader.abort();
        let _ = self.reader.await;
        let _ = self.writer.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lines_that_are_not_json_are_errors() {
        assert!(not_json(b"{\"jsonrpc\": \"2.0\"}").is_none());
        assert!(not_json(b"   ").is_none());
        assert!(
            not_json(b"[1, 2]").is_none(),
            "valid JSON of the wrong shape is the SDK's to answer"
        );
        assert!(not_json(b"garbage").is_some());
        assert!(not_json(b"{\"open\": ").is_some());
        let e: serde_json::Value = serde_json::from_slice(&parse_error("x")).unwrap();
        assert_eq!((e["error"]["code"].as_i64(), e["id"].is_null()), (Some(-32700), true));
    }

    #[test]
    fn garbage_is_answered_and_json_passes_through() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (mut client, server_in) = tokio::io::duplex(1024);
            let (server_out, mut client_out) = tokio::io::duplex(1024);
            let (mut sdk_in, mut sdk_out, pump) = pipes(server_in, server_out);
            client.write_all(b"garbage\n{\"a\": 1}\n").await.unwrap();
            client.shutdown().await.unwrap();
            let mut passed = String::new();
            sdk_in.read_to_string(&mut passed).await.unwrap();
            assert_eq!(passed, "{\"a\": 1}\n");
            sdk_out.write_all(b"{\"b\": 2}\n").await.unwrap();
            drop(sdk_out);
            pump.finish().await;
            let mut out = String::new();
            client_out.read_to_string(&mut out).await.unwrap();
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 2, "{out}");
            assert!(lines.contains(&"{\"b\": 2}"), "{out}");
            assert!(lines.iter().any(|l| l.contains("-32700")), "{out}");
        });
    }
}
