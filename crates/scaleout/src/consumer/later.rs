//! A consumer's commands sent now and answered later: a worker's round asks for idle and new
//! entries before it folds and takes the answer after, and sends its acknowledgements without
//! waiting for them. With several workers on one server, each reply waited for can queue
//! behind another worker's commit; these replies are read when the round needs them, or
//! before the connection's next command.

use std::time::Duration;

use ctxgraph_store::StoreError;
use redis::Value;

use super::LogConsumer;

/// A command (or pipeline) sent on a consumer's connection whose replies are not read yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unread {
    /// An `XACK`: one reply.
    Ack,
    /// An `XAUTOCLAIM` from the start and an `XREADGROUP` without a wait: two replies.
    ClaimAndNext {
        /// The idle time the claim asked for (a claim that took a full page goes on with it).
        min_idle: Duration,
        /// How many entries each asked for.
        count: usize,
    },
}

impl LogConsumer {
    /// Send the acknowledgement of `positions` without waiting for the reply: the server
    /// applies it in order with this consumer's later commands, and its reply (or failure) is
    /// read before the next one's, where a failure is returned.
    pub fn ack_later(&mut self, positions: &[u64]) -> Result<(), StoreError> {
        if positions.is_empty() {
            return Ok(());
        }
        let packed = self.xack(positions).get_packed_command();
        self.conn.send_packed_command(&packed).map_err(|e| self.fail(&e))?;
        self.unread.push_back(Unread::Ack);
        Ok(())
    }

    /// Ask for [`LogConsumer::claim_idle`] and then [`LogConsumer::next`] without a wait, in
    /// one pipeline, without waiting for the answer: [`LogConsumer::take_claimed_and_next`]
    /// takes it (meanwhile the caller can wait for another connection).
    pub fn ask_claim_idle_and_next(
        &mut self,
        min_idle: Duration,
        count: usize,
    ) -> Result<(), StoreError> {
        let mut pipe = redis::pipe();
        pipe.add_command(self.autoclaim(min_idle, "0-0", count));
        pipe.add_command(self.xreadgroup(count, None));
        self.conn.send_packed_command(&pipe.get_packed_pipeline()).map_err(|e| self.fail(&e))?;
        self.unread.push_back(Unread::ClaimAndNext { min_idle, count });
        Ok(())
    }

    /// The answer to the last [`LogConsumer::ask_claim_idle_and_next`]: `(claimed, new)`, the
    /// claimed entries in log order. A claim that found more idle entries than one reply
    /// carries goes on as [`LogConsumer::claim_idle`] does.
    pub fn take_claimed_and_next(&mut self) -> Result<(Vec<u64>, Vec<u64>), StoreError> {
        let Some((claim, read, min_idle, count)) = self.settle()? else {
            return Err(StoreError::Corruption(format!(
                "{}: consumer `{}` took the answer to a claim it did not ask for",
                self.url, self.consumer
            )));
        };
        let new = self.delivered(read.extract_error().map_err(|e| self.fail(&e))?)?;
        let (cursor, mut claimed) =
            self.claimed(claim.extract_error().map_err(|e| self.fail(&e))?)?;
        if cursor != "0-0" && claimed.len() < count {
            claimed.extend(self.claim_from(min_idle, cursor, count - claimed.len())?);
        }
        claimed.sort_unstable();
        Ok((claimed, new))
    }

    /// [`LogConsumer::ask_claim_idle_and_next`] and its answer, in one round trip.
    pub fn claim_idle_and_next(
        &mut self,
        min_idle: Duration,
        count: usize,
    ) -> Result<(Vec<u64>, Vec<u64>), StoreError> {
        self.ask_claim_idle_and_next(min_idle, count)?;
        self.take_claimed_and_next()
    }

    /// Read every reply still unread, in order. Returns the replies of the last claim and read
    /// asked for, with what they asked (the entries of an earlier one, never taken, stay
    /// pending for this consumer until a claim takes them over); the first failure of an
    /// acknowledgement is returned after every reply is read.
    pub(super) fn settle(&mut self) -> Result<Option<(Value, Value, Duration, usize)>, StoreError> {
        let mut last = None;
        let mut failed = None;
        while let Some(unread) = self.unread.pop_front() {
            match unread {
                Unread::Ack => {
                    if let Err(e) = self.reply()?.extract_error() {
                        failed.get_or_insert(self.fail(&e));
                    }
                }
                Unread::ClaimAndNext { min_idle, count } => {
                    let claim = self.reply()?;
                    let read = self.reply()?;
                    last = Some((claim, read, min_idle, count));
                }
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(last),
        }
    }

    /// The next reply on the connection.
    fn reply(&mut self) -> Result<Value, StoreError> {
        self.conn.recv_response().map_err(|e| self.fail(&e))
    }
}
