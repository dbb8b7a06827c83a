//! A fold page's start (the watch and read of the checkpoint) sent with the previous page's
//! commit as one pipeline, and the caller's `meanwhile` run while the server answers.
//!
//! With two workers on one server, every round trip of a worker can queue behind the other
//! worker's commit; a page that ends with its commit and begins with a separate watch waits
//! twice, and a page whose log read waits for its watch waits once more. Here the next watch
//! follows the `EXEC` on the same connection, and `meanwhile` (the next page's log read, on
//! the log's own connection) runs between sending and reading the replies, so a page waits on
//! the server once for the three.

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

/// The commands of a batch's start ([`FalkorGraph::push_watch`]).
const WATCH_COMMANDS: usize = 3;

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
        self.push_page(&mut pipe, writes, extra, through, last_seq)?;
        pipe.cmd("EXEC");
        self.push_watch(&mut pipe);
        self.watched_meanwhile(&pipe, meanwhile, Self::handover)
    }

    /// Watch the checkpoint, the node creation counter and the stage-2 checkpoint, and read
    /// the first two, in one round trip, with `meanwhile` run after the commands are sent and
    /// before their replies are read (a fold reads the log there, from where it expects the
    /// checkpoint to be). Returns `(checkpoint, last creation number)`.
    pub(crate) fn watch_checkpoint_meanwhile(
        &self,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<(u64, i64), StoreError> {
        let mut pipe = redis::pipe();
        self.push_watch(&mut pipe);
        self.watched_meanwhile(&pipe, meanwhile, Self::watched_start)
    }

    /// Send `pipe`, which ends with a batch's start ([`FalkorGraph::push_watch`]), run
    /// `meanwhile`, and judge the replies with `judge`; the watch is left in place only when
    /// the answer is `Ok` (the caller's next batch owns it).
    fn watched_meanwhile<T>(
        &self,
        pipe: &redis::Pipeline,
        meanwhile: &mut dyn FnMut(),
        judge: fn(&Self, Vec<Value>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let replies = self.send_meanwhile(pipe, meanwhile)?;
        let outcome = judge(self, replies);
        if outcome.is_err() {
            self.unwatch();
        }
        outcome
    }

    /// The start of a batch: `UNWATCH` (a watch left by an earlier batch), `WATCH` of the
    /// checkpoint and the creation counter (and of the stage-2 checkpoint: an enrichment
    /// commit rewrites event nodes' properties, so a page that read one before it must not
    /// write it back after), and the `MGET` of the checkpoint and the counter.
    fn push_watch(&self, pipe: &mut redis::Pipeline) {
        pipe.cmd("UNWATCH");
        pipe.cmd("WATCH").arg(&self.checkpoint).arg(&self.seq).arg(&self.enriched);
        pipe.cmd("MGET").arg(&self.checkpoint).arg(&self.seq);
    }

    /// Send `pipe` on the plain connection, run `meanwhile`, then read one reply per command.
    fn send_meanwhile(
        &self,
        pipe: &redis::Pipeline,
        meanwhile: &mut dyn FnMut(),
    ) -> Result<Vec<Value>, StoreError> {
        self.raw
            .borrow_mut()
            .send_packed_command(&pipe.get_packed_pipeline())
            .map_err(|e| raw_remote(&self.url, &e))?;
        meanwhile();
        let mut raw = self.raw.borrow_mut();
        (0..pipe.len())
            .map(|_| raw.recv_response().map_err(|e| raw_remote(&self.url, &e)))
            .collect()
    }

    /// Judge the replies of [`FalkorGraph::commit_watched_then_watch`]'s pipeline: `MULTI`, one
    /// `QUEUED` per command, the `EXEC`, then the three of the watch.
    fn handover(&self, mut replies: Vec<Value>) -> Result<Handover, StoreError> {
        let what = "a query of a batch";
        let watch = replies.split_off(replies.len().saturating_sub(WATCH_COMMANDS));
        let exec = replies.pop().unwrap_or(Value::Nil);
        // A command refused while queued (the server then aborts the `EXEC`).
        for reply in replies {
            if let Value::ServerError(e) = reply {
                return Err(self.failed(what, &e));
            }
        }
        let committed = self.exec_outcome(exec, what)?;
        let (checkpoint, last_seq) = self.watched_start(watch)?;
        Ok(Handover { committed, checkpoint, last_seq })
    }

    /// The checkpoint and creation counter from the replies of [`FalkorGraph::push_watch`]'s
    /// commands; a graph folded by a build that numbered no nodes is refused (`layout`).
    fn watched_start(&self, replies: Vec<Value>) -> Result<(u64, i64), StoreError> {
        let what = "the watch of the checkpoint";
        if replies.len() != WATCH_COMMANDS {
            return Err(StoreError::Corruption(format!(
                "{}: {what} answered {} replies for {WATCH_COMMANDS} commands",
                self.url,
                replies.len()
            )));
        }
        let mut mget = Value::Nil;
        for reply in replies {
            if let Value::ServerError(e) = reply {
                return Err(self.failed(what, &e));
            }
            mget = reply;
        }
        let (checkpoint, seq): (Option<u64>, Option<i64>) =
            redis::from_redis_value(mget).map_err(|e| {
                StoreError::Corruption(format!(
                    "{}: the checkpoint and creation counter read under a watch are not two \
                     counters: {e}",
                    self.url
                ))
            })?;
        self.layout(checkpoint, seq)?;
        Ok((checkpoint.unwrap_or(0), seq.unwrap_or(0)))
    }

    /// A server's refusal of one of a transaction's commands, naming `what` it was.
    pub(super) fn failed(&self, what: &str, e: &redis::ServerError) -> StoreError {
        StoreError::Remote {
            backend: "falkordb",
            detail: format!("{}: {what} failed: {e:?}", self.url),
        }
    }
}
