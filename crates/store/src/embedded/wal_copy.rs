//! Copies of the write-ahead log into the file, off the writer's thread.
//!
//! A commit that leaves the log past the automatic checkpoint's size copies it into the file
//! itself, on the writer's thread: a bulk load spent a twentieth of its time there, and a
//! server's group of writes whose commit crossed it waited for the copy of 64 MiB of pages
//! before its callers were answered. A writer with a [`WalCopier`] turns its automatic
//! checkpoint off ([`Embedded::set_auto_checkpoint`]) and, after its commits, calls
//! [`WalCopier::after_commit`]: past [`WAL_COPY_AT`] a [`Checkpointer`](super::Checkpointer)
//! copies the log on a thread of its own while the writer goes on. The log starts over from its beginning only when
//! a write transaction begins with every frame copied, which a copy running beside the writer
//! never sees; so once a copy is done, the writer copies the few frames committed meanwhile
//! itself, between two transactions, and the log stays as large as the automatic checkpoint
//! leaves it.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;

use super::{Embedded, WAL_LIMIT_BYTES};
use crate::StoreError;

/// A log file larger than this after a commit is copied into the file. It is the size
/// `journal_size_limit` cuts a log that starts over back to, so a file past it holds a log
/// that grew past it since it last started over (a file of exactly this size may hold a short
/// one); and the size of the automatic checkpoint's log ([`super::AUTO_CHECKPOINT_PAGES`] pages).
pub const WAL_COPY_AT: u64 = WAL_LIMIT_BYTES.unsigned_abs();

/// Work a copying thread does before it copies (a server lowers the thread's priority to its
/// readers').
type OnThread = Arc<dyn Fn() + Send + Sync>;

/// The last copy started and not yet taken up by the writer.
enum LogCopy {
    /// Its thread, which answers whether it copied: running, the copy is under way.
    Running(JoinHandle<bool>),
    /// Waited for ([`WalCopier::wait`]) and done: the writer copies what was committed meanwhile.
    Copied,
}

/// The write-ahead log's copies into the file of one writer's store, on threads of their own.
pub struct WalCopier {
    /// The copying threads' name.
    name: String,
    on_thread: Option<OnThread>,
    /// Size of the log file past which a copy starts.
    copy_at: u64,
    copy: Mutex<Option<LogCopy>>,
}

impl WalCopier {
    /// Copies on threads named `name`, past [`WAL_COPY_AT`].
    pub fn new(name: impl Into<String>) -> WalCopier {
        WalCopier {
            name: name.into(),
            on_thread: None,
            copy_at: WAL_COPY_AT,
            copy: Mutex::new(None),
        }
    }

    /// Run `f` on each copying thread before it copies.
    #[must_use]
    pub fn on_thread(mut self, f: impl Fn() + Send + Sync + 'static) -> WalCopier {
        self.on_thread = Some(Arc::new(f));
        self
    }

    /// Start a copy once the log file is larger than `bytes` instead of [`WAL_COPY_AT`]. Below
    /// that size a file may hold a log that started over and is short, which a copy finds so.
    #[must_use]
    pub fn copy_at(mut self, bytes: u64) -> WalCopier {
        self.copy_at = bytes;
        self
    }

    /// On the writer of `store`, after a commit and between two transactions: when a copy is
    /// done, copy on the writer's connection what was committed meanwhile, so that the next
    /// write transaction starts the log over (unless a reader still reads a frame of it);
    /// otherwise, when the log file is past the copy size and no copy is under way, start one.
    ///
    /// A copy that fails on its thread leaves the log as it was, and the next call after it
    /// starts another; an error here is the writer's own copy's, or the copying connection's
    /// that could not be opened.
    pub fn after_commit(&self, store: &Embedded) -> Result<(), StoreError> {
        let mut copy = self.copy();
        let copied = match copy.take() {
            Some(LogCopy::Running(t)) if !t.is_finished() => {
                *copy = Some(LogCopy::Running(t));
                return Ok(());
            }
            // A thread that panicked copied nothing, as one whose copy failed.
            Some(LogCopy::Running(t)) => t.join().unwrap_or(false),
            Some(LogCopy::Copied) => true,
            None => false,
        };
        if copied {
            return store.checkpoint_passive().map(drop);
        }
        if store.wal_size() <= self.copy_at {
            return Ok(());
        }
        let checkpointer = store.checkpointer()?;
        let on_thread = self.on_thread.clone();
        let spawned = std::thread::Builder::new().name(self.name.clone()).spawn(move || {
            if let Some(f) = on_thread {
                f();
            }
            checkpointer.passive().is_ok()
        });
        match spawned {
            Ok(t) => {
                *copy = Some(LogCopy::Running(t));
                Ok(())
            }
            // No thread to copy on: the writer copies the log itself, as its automatic
            // checkpoint would have.
            Err(_) => store.checkpoint_passive().map(drop),
        }
    }

    /// Whether a copy is under way: a truncating checkpoint now would wait for it.
    pub fn copying(&self) -> bool {
        matches!(&*self.copy(), Some(LogCopy::Running(t)) if !t.is_finished())
    }

    /// Wait for the copy under way, if any, to end; the next [`WalCopier::after_commit`] takes
    /// it up.
    pub fn wait(&self) {
        let mut copy = self.copy();
        match copy.take() {
            // A thread that panicked copied nothing, as one whose copy failed.
            Some(LogCopy::Running(t)) => {
                if t.join().unwrap_or(false) {
                    *copy = Some(LogCopy::Copied);
                }
            }
            other => *copy = other,
        }
    }

    fn copy(&self) -> MutexGuard<'_, Option<LogCopy>> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
