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
//!
//! Both deltas also follow commits by one rule ([`Follows::apply`]): a commit that lists what
//! it did and comes right after the last one followed moves the delta over it; any other
//! starts it over from that commit, and one that does not list what it did lets it go; a delta
//! serves once a commit counted exactly the items it holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, TryLockError};

use ctxgraph_store::{TextCommit, VectorCommit};

/// What a store tells a delta of one committed transaction, as far as following it goes.
pub(crate) trait Told {
    /// The store's version (text version, vector generation) before the transaction.
    fn before(&self) -> u64;
    /// The same after it.
    fn after(&self) -> u64;
    /// Whether it changed the items in ways it does not list: a delta cannot follow it.
    fn unlisted(&self) -> bool;
    /// The items outside the index after it, when the store counted them.
    fn counted(&self) -> Option<u64>;
}

/// [`Told`] for a store's commit type, from its `before`, `after` and the fields that say
/// whether it changed items unlisted and how many it counted.
macro_rules! told_by_fields {
    ($commit:ty, unlisted: $unlisted:ident, counted: $counted:ident) => {
        impl Told for $commit {
            fn before(&self) -> u64 {
                self.before
            }
            fn after(&self) -> u64 {
                self.after
            }
            fn unlisted(&self) -> bool {
                self.$unlisted
            }
            fn counted(&self) -> Option<u64> {
                self.$counted
            }
        }
    };
}

told_by_fields!(TextCommit, unlisted: removed, counted: above_base);
told_by_fields!(VectorCommit, unlisted: removed, counted: outside);

/// The versions a delta answers for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Span {
    /// The version of the last commit followed.
    pub(crate) version: u64,
    /// The oldest version it can answer for: a start, a completion or a compaction.
    pub(crate) floor: u64,
    /// Whether a commit counted exactly the items it holds: then they are all of the store's
    /// at `version`, and later versions' as long as every commit is followed.
    pub(crate) complete: bool,
}

impl Span {
    /// Following from `version` on, not complete yet.
    pub(crate) fn at(version: u64) -> Span {
        Span { version, floor: version, complete: false }
    }

    /// Whether the items held are exactly the store's at `version`.
    pub(crate) fn covers(&self, version: u64) -> bool {
        self.complete && (self.floor..=self.version).contains(&version)
    }
}

/// A delta that follows a store's commits (held as `None` while it follows nothing).
pub(crate) trait Follows: Sized {
    /// What the store tells of one committed transaction.
    type Commit: Told;
    /// The versions it answers for.
    fn span(&self) -> &Span;
    /// The same, to change.
    fn span_mut(&mut self) -> &mut Span;
    /// How many items it holds live (what a commit's count must equal for it to serve).
    fn held(&self) -> usize;
    /// Moved over `commit`, which comes right after its version and lists what it did (the
    /// span's version is set by [`Follows::apply`]); `None` when it cannot hold the result.
    fn follow(self, commit: &Self::Commit) -> Option<Self>;
    /// Following from `commit`, which lists what it did; `None` when it cannot.
    fn start(commit: &Self::Commit) -> Option<Self>;

    /// `held` moved over `commit` (`None`: it follows nothing until a later commit).
    fn apply(held: Option<Self>, commit: &Self::Commit) -> Option<Self> {
        if commit.unlisted() {
            return None;
        }
        let mut next = match held {
            Some(a) if a.span().version == commit.before() => {
                a.follow(commit).or_else(|| Self::start(commit))
            }
            _ => Self::start(commit),
        }?;
        let counted = commit.counted() == Some(next.held() as u64);
        let span = next.span_mut();
        span.version = commit.after();
        // Complete from this version on: an older one may have seen an item it was never told
        // of and that this commit took out.
        if !span.complete && counted {
            span.complete = true;
            span.floor = commit.after();
        }
        Some(next)
    }
}

/// A [`Follows`] delta behind a lock, with the commits the writer queued for it.
pub(crate) struct Following<T: Follows> {
    held: RwLock<Option<T>>,
    queue: Mutex<Vec<T::Commit>>,
    /// Whether `queue` holds commits: read by every search without taking the queue's lock,
    /// and set and cleared under it.
    queued: AtomicBool,
    /// Whether the delta was complete as of the last commit applied, for the writer, which
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
            *held = T::apply(held.take(), &commit);
        }
        self.serving.store(held.as_ref().is_some_and(|a| a.span().complete), Ordering::Release);
    }

    fn queue(&self) -> MutexGuard<'_, Vec<T::Commit>> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The commits applied, in order.
    struct Log(Vec<u32>, Span);

    /// Commit `n` follows commit `n - 1`, and every commit counts two items.
    impl Told for u32 {
        fn before(&self) -> u64 {
            u64::from(*self) - 1
        }
        fn after(&self) -> u64 {
            u64::from(*self)
        }
        fn unlisted(&self) -> bool {
            false
        }
        fn counted(&self) -> Option<u64> {
            Some(2)
        }
    }

    impl Follows for Log {
        type Commit = u32;
        fn span(&self) -> &Span {
            &self.1
        }
        fn span_mut(&mut self) -> &mut Span {
            &mut self.1
        }
        fn held(&self) -> usize {
            self.0.len()
        }
        fn follow(mut self, commit: &u32) -> Option<Self> {
            self.0.push(*commit);
            Some(self)
        }
        fn start(commit: &u32) -> Option<Self> {
            Some(Log(vec![*commit], Span::at(commit.after())))
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
