//! The write-ahead log's checkpoints during a bulk load, on a thread of their own.
//!
//! A commit that leaves the log past [`AUTO_CHECKPOINT_PAGES`] would copy it into the file
//! itself, on the writer's thread (a twentieth of its time at 100,000 events). During
//! [`Engine::ingest_jsonl`](crate::Engine::ingest_jsonl) the writer's connection does not:
//! a [`Checkpointer`] of its own copies the log while the writer goes on appending and
//! projecting. The log starts over from its beginning only when a write transaction begins
//! with every frame copied, which a copy running beside the writer never sees; so once a copy
//! is done, the writer copies the few frames committed meanwhile itself, between two
//! transactions, and the log stays as large as the automatic checkpoint leaves it.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError};

use ctxgraph_store::{AUTO_CHECKPOINT_PAGES, Checkpointer, Embedded, StoreError, WalCheckpoint};

use crate::error::Error;

/// Run the checkpoints asked for on `requests`, answering each on `done`, until the writer
/// hangs up.
pub(super) fn copy_on_request(
    checkpointer: Checkpointer,
    requests: Receiver<()>,
    done: SyncSender<Result<WalCheckpoint, StoreError>>,
) {
    for () in requests {
        if done.send(checkpointer.passive()).is_err() {
            return;
        }
    }
}

/// The writer's side: when to ask for a copy, and the copy of what was committed meanwhile.
pub(super) struct Checkpoints {
    requests: SyncSender<()>,
    done: Receiver<Result<WalCheckpoint, StoreError>>,
    /// Whether a copy was asked for and has not answered yet.
    in_flight: bool,
    /// Commits since the log last started over (as far as the writer knows).
    commits: u64,
    /// `commits` when the copy in flight was asked for.
    commits_asked: u64,
    /// Frames a commit adds to the log, as the last copy measured; `None` before the first.
    frames_per_commit: Option<u64>,
}

impl Checkpoints {
    pub(super) fn new(
        requests: SyncSender<()>,
        done: Receiver<Result<WalCheckpoint, StoreError>>,
    ) -> Checkpoints {
        Checkpoints {
            requests,
            done,
            in_flight: false,
            commits: 0,
            commits_asked: 0,
            frames_per_commit: None,
        }
    }

    /// After each commit of the load: take a finished copy's answer and copy the rest, or ask
    /// for a copy once the log holds about [`AUTO_CHECKPOINT_PAGES`] (at the first commit,
    /// to measure a commit's frames).
    pub(super) fn committed(&mut self, store: &Embedded) -> Result<(), Error> {
        self.commits += 1;
        if self.in_flight {
            let copied = match self.done.try_recv() {
                Ok(copied) => copied?,
                Err(TryRecvError::Empty) => return Ok(()),
                Err(TryRecvError::Disconnected) => return Err(stopped()),
            };
            self.in_flight = false;
            if !copied.busy && self.commits_asked > 0 {
                self.frames_per_commit = Some(copied.frames.div_ceil(self.commits_asked).max(1));
            }
            // What was committed while the copy ran; with it copied, the next transaction
            // starts the log over (not while a reader still needs a frame of it).
            let rest = store.checkpoint_passive()?;
            if !rest.busy && rest.copied == rest.frames {
                self.commits = 0;
            }
            return Ok(());
        }
        let due = self
            .frames_per_commit
            .is_none_or(|per| self.commits.saturating_mul(per) >= u64::from(AUTO_CHECKPOINT_PAGES));
        if due {
            self.requests.send(()).map_err(|_| stopped())?;
            self.in_flight = true;
            self.commits_asked = self.commits;
        }
        Ok(())
    }
}

/// The checkpointing thread hung up: it can only have panicked.
fn stopped() -> Error {
    Error::Input(std::io::Error::other("the checkpointing thread stopped"))
}
