//! How a delta shared by a store's engines (`text_delta`, `vector_delta`) follows the writer's
//! commits without the writer waiting for the searches that read it.
//!
//! A search holds its delta's read lock while it scores it (every document above the lexical
//! build, every vector outside the vector index), on a thread of lowered priority. A commit
//! that took the write lock waited for each of them, and so did the ingests it answers. So the
//! writer queues the commit and applies the queue only when no search holds the delta
//! (`try_write`); a search that finds commits queued applies them before it reads. Either way
//! the delta moves over every commit, in commit order, before any search reads it again; a
//! search that starts between a commit and its application sees a delta behind its snapshot
//! and reads the store instead, as one that started before the writer told the delta did.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, TryLockError};

/// A delta that follows a store's commits (held as `None` while it follows nothing).
pub(crate) trait Follows: Sized {
    /// What the store tells of one committed transaction.
    type Commit;
    /// `held` moved over `commit` (`None`: it follows nothing until a later commit).
    fn apply(held: Option<Self>, commit: Self::Commit) -> Option<Self>;
    /// Whether it may serve a search (what the sink's `wants_count` asks).
    fn serving(&self) -> bool;
}

/// A [`Follows`] delta behind a lock, with the commits the writer queued for it.
pub(crate) struct Following<T: Follows> {
    held: RwLock<Option<T>>,
    queue: Mutex<Vec<T::Commit>>,
    /// Whether `queue` holds commits: read by every search without taking the queue's lock,
    /// and set and cleared under it.
    queued: AtomicBool,
    /// [`Follows::serving`] of the delta as of the last commit applied, for the writer, which
    /// asks before every commit and must not wait for a search to learn it.
    serving: AtomicBool,
}

impl<T: Follows> Default for Following<T> {
    fn default() -> Self {
        Following {
            held: RwLock::new(None),
            queue: Mutex::new(Vec::new()),
            queued: AtomicBool::new(false),
            serving: AtomicBool::new(false),
        }
    }
}

impl<T: Follows> Following<T> {
    /// The delta moved over every commit told so far, for reading.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Option<T>> {
        if self.queued.load(Ordering::Acquire) {
            let mut held = self.held.write().unwrap_or_else(PoisonError::into_inner);
            self.apply_queued(&mut held);
        }
        self.held.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// A transaction committed: applied now unless a search holds the delta, else by the next
    /// search (or commit) to find it free.
    pub(crate) fn committed(&self, commit: T::Commit) {
        {
            let mut queue = self.queue();
            queue.push(commit);
            self.queued.store(true, Ordering::Release);
        }
        let mut held = match self.held.try_write() {
            Ok(held) => held,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => return,
        };
        self.apply_queued(&mut held);
    }

    /// Whether the delta served as of the last commit applied (a commit still queued may
    /// change that: the answer only decides whether the next commit counts for it).
    pub(crate) fn serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    fn apply_queued(&self, held: &mut Option<T>) {
        let commits = {
            let mut queue = self.queue();
            self.queued.store(false, Ordering::Release);
            std::mem::take(&mut *queue)
        };
        for commit in commits {
            *held = T::apply(held.take(), commit);
        }
        self.serving.store(held.as_ref().is_some_and(T::serving), Ordering::Release);
    }

    fn queue(&self) -> MutexGuard<'_, Vec<T::Commit>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commits applied, in order.
    struct Log(Vec<u32>);

    impl Follows for Log {
        type Commit = u32;
        fn apply(held: Option<Self>, commit: u32) -> Option<Self> {
            let mut log = held.unwrap_or(Log(Vec::new()));
            log.0.push(commit);
            Some(log)
        }
        fn serving(&self) -> bool {
            self.0.len() >= 2
        }
    }

    fn applied(f: &Following<Log>) -> Vec<u32> {
        f.read().as_ref().map(|l| l.0.clone()).unwrap_or_default()
    }

    #[test]
    fn a_free_delta_takes_the_commit_at_once() {
        let f = Following::<Log>::default();
        f.committed(1);
        assert!(!f.serving());
        f.committed(2);
        assert!(f.serving());
        assert!(!f.queued.load(Ordering::Acquire));
        assert_eq!(applied(&f), vec![1, 2]);
    }

    #[test]
    fn commits_told_while_a_search_reads_wait_for_the_next_reader_in_order() {
        let f = Following::<Log>::default();
        f.committed(1);
        {
            let reading = f.read();
            // The writer does not wait for the search.
            f.committed(2);
            f.committed(3);
            assert_eq!(reading.as_ref().map(|l| l.0.clone()), Some(vec![1]));
            assert!(!f.serving(), "as of the last commit applied");
        }
        assert_eq!(applied(&f), vec![1, 2, 3]);
        assert!(f.serving());
    }
}
