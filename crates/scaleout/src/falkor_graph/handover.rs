//! A fold page's commit and the next page's start sent as one pipeline: the transaction, then
//! the watch and read of the checkpoint the next page begins at.
//!
//! With two workers on one server, every round trip of a worker can queue behind the other
//! worker's commit; a page that ends with its commit and begins with a separate watch waits
//! twice. Here the next watch follows the `EXEC` on the same connection, and the caller's
//! `meanwhile` (the next page's log read, on the log's own connection) runs while the server
//! works, so a page waits on the server once for the three.

use ctxgraph_store::StoreError;
use redis::Value;

use super::{FalkorGraph, Write, raw_remote};

/// What a commit sent with the next page's watch answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handover {
    /// Whether the page's transaction ran (`false`: a watched key moved and nothing ran).
    pub(crate) committed: bool,
    /// The checkpoint read under the new watch (what the next page folds after).
    pub(crate) checkpoint: u64,
    /// The last node creation number read under the new watch.
    pub(crate) last_seq: i64,
}

impl FalkorGraph {
    /// [`FalkorGraph::commit_watched`], then, in the same pipeline, the watch of the next
    /// batch ([`FalkorGraph::watch_checkpoint`]): `meanwhile` runs after the pipeline is sent
    /// and before its replies are read. Every reply is read before any is judged, so the
    /// connection stays in step whatever failed; the watch is left in place only when the
    /// answer is `Ok` (the caller's next batch owns it).
    pub(crate) fn commit_watched_then_watch(
        &self,
        writes: &[Write],
        extra: Vec<redis::Cmd>,
        through: u64,
        last_seq: i64,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Handover, StoreError> {
        let mut pipe = redis::pipe();
        pipe.cmd("MULTI");
        pipe.cmd("SET").arg(&self.checkpoint).arg(through);
        pipe.cmd("SET").arg(&self.seq).arg(last_seq);
        pipe.cmd("INCR").arg(&self.generation);
        for w in writes {
            pipe.cmd("GRAPH.QUERY").arg(&self.name).arg(w.with_preamble()?);
        }
        for cmd in extra {
            pipe.add_command(cmd);
        }
        pipe.cmd("EXEC");
        let exec_at = pipe.len() - 1;
        // The watch of the next batch (the stage-2 checkpoint too, as in `watch_checkpoint`).
        pipe.cmd("UNWATCH");
        pipe.cmd("WATCH").arg(&self.checkpoint).arg(&self.seq).arg(&self.enriched);
        pipe.cmd("MGET").arg(&self.checkpoint).arg(&self.seq);
        let expected = pipe.len();

        self.raw
            .borrow_mut()
            .send_packed_command(&pipe.get_packed_pipeline())
            .map_err(|e| raw_remote(&self.url, &e))?;
        meanwhile();
        let mut replies = Vec::with_capacity(expected);
        {
            let mut raw = self.raw.borrow_mut();
            for _ in 0..expected {
                replies.push(raw.recv_response().map_err(|e| raw_remote(&self.url, &e))?);
            }
        }
        let outcome = self.handover(replies, exec_at);
        if outcome.is_err() {
            self.unwatch();
        }
        outcome
    }

    /// Judge the replies of [`FalkorGraph::commit_watched_then_watch`]'s pipeline: `MULTI`, one
    /// `QUEUED` per command, the `EXEC` at `exec_at`, then `UNWATCH`, `WATCH` and the `MGET`.
    fn handover(&self, replies: Vec<Value>, exec_at: usize) -> Result<Handover, StoreError> {
        let what = "a query of a batch";
        let mut replies = replies.into_iter();
        // A command refused while queued (the server then aborts the `EXEC`).
        for reply in replies.by_ref().take(exec_at) {
            if let Value::ServerError(e) = reply {
                return Err(self.failed(what, &e));
            }
        }
        let exec = replies.next().unwrap_or(Value::Nil);
        let committed = self.exec_outcome(exec, what)?;
        let mget = replies.last().ok_or_else(|| {
            StoreError::Corruption(format!(
                "{}: a commit's pipeline ended before the checkpoint was read again",
                self.url
            ))
        })?;
        if let Value::ServerError(e) = mget {
            return Err(self.failed("a read of the checkpoint", &e));
        }
        let (checkpoint, seq): (Option<u64>, Option<i64>) =
            redis::from_redis_value(mget).map_err(|e| {
                StoreError::Corruption(format!(
                    "{}: the checkpoint read after a commit is not two counters: {e}",
                    self.url
                ))
            })?;
        self.layout(checkpoint, seq)?;
        Ok(Handover { committed, checkpoint: checkpoint.unwrap_or(0), last_seq: seq.unwrap_or(0) })
    }

    /// A server's refusal of one of a transaction's commands, naming `what` it was.
    pub(super) fn failed(&self, what: &str, e: &redis::ServerError) -> StoreError {
        StoreError::Remote {
            backend: "falkordb",
            detail: format!("{}: {what} failed: {e:?}", self.url),
        }
    }
}
