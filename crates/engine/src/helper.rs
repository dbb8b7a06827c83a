//! Helper threads for recall's in-memory searches: the vector index's probe and scan and the
//! lexical index's merge run on one while the calling thread reads the store (whose connection
//! stays on the thread that opened it), then the caller joins.
//!
//! Why a pool of its own, started once per process, rather than a thread per recall: a new
//! thread costs its creation and, for the lexical merge, a new score array as large as the
//! store's documents (the merge's scratch is per thread). Why the caller takes back a job no
//! helper has started: when every core is busy (a server under load) a helper may not run for a
//! while, and the caller would wait for work it can do itself; so a job costs the caller at
//! most what running it inline costs, plus a queue push. And why a recall gives its jobs to the
//! helpers only while fewer recalls are in flight than the machine has cores ([`Overlap`]):
//! with every core running a recall of its own, a helper would only take turns with them.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError};

/// Helper threads at most: the overlap needs one per recall in flight, and more than the
/// machine's cores only queue.
const MAX_HELPERS: usize = 4;

/// A job's answer, or the payload of its panic (raised again on the joining thread).
type Outcome<T> = std::thread::Result<T>;

enum State<T> {
    /// Not started: a helper or the joining thread may take it.
    Queued(Box<dyn FnOnce() -> T + Send>),
    /// Taken by a helper.
    Running,
    Done(Outcome<T>),
    /// Given to the joining thread.
    Taken,
}

struct Slot<T> {
    state: Mutex<State<T>>,
    done: Condvar,
}

impl<T> Slot<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run the job if nobody took it yet (a helper's turn).
    fn run(&self) {
        let job = {
            let mut state = self.lock();
            match std::mem::replace(&mut *state, State::Running) {
                State::Queued(job) => job,
                other @ (State::Running | State::Done(_) | State::Taken) => {
                    *state = other;
                    return;
                }
            }
        };
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(job));
        *self.lock() = State::Done(outcome);
        self.done.notify_all();
    }
}

/// A job given to the helpers; [`Pending::join`] gives its answer.
pub(crate) struct Pending<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Pending<T> {
    /// The job's answer: run here when no helper has started it, else waited for.
    pub(crate) fn join(self) -> T {
        let mut state = self.slot.lock();
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Queued(job) => {
                    drop(state);
                    return job();
                }
                State::Running => {
                    *state = State::Running;
                    state = self.slot.done.wait(state).unwrap_or_else(PoisonError::into_inner);
                }
                State::Done(Ok(answer)) => return answer,
                State::Done(Err(panic)) => std::panic::resume_unwind(panic),
                State::Taken => unreachable!("a job is joined once"),
            }
        }
    }
}

impl<T> Drop for Pending<T> {
    /// A job never joined (its caller returned early) is not run.
    fn drop(&mut self) {
        let mut state = self.slot.lock();
        if matches!(*state, State::Queued(_)) {
            *state = State::Taken;
        }
    }
}

/// The cores of the machine (1 when unknown).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Recalls in flight in this process.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// One recall in flight, counted while it lives; whether its jobs go to the helpers.
pub(crate) struct Overlap {
    helpers: bool,
}

impl Overlap {
    /// Count a recall in flight; its jobs go to the helpers when `wanted` and a core is left
    /// for them (fewer recalls in flight, this one included, than cores).
    pub(crate) fn enter(wanted: bool) -> Overlap {
        let in_flight = IN_FLIGHT.fetch_add(1, Ordering::Relaxed) + 1;
        Overlap { helpers: wanted && in_flight < cores() }
    }

    /// Whether this recall's jobs go to the helpers.
    pub(crate) fn helpers(&self) -> bool {
        self.helpers
    }
}

impl Drop for Overlap {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The queue the helpers take jobs from.
struct Pool {
    queue: Mutex<VecDeque<Box<dyn FnOnce() + Send>>>,
    ready: Condvar,
}

impl Pool {
    /// The process's pool, its threads started on first use (none when none can be started:
    /// then every job runs on its caller).
    fn get() -> &'static Pool {
        static POOL: OnceLock<Pool> = OnceLock::new();
        POOL.get_or_init(|| {
            let pool = Pool { queue: Mutex::new(VecDeque::new()), ready: Condvar::new() };
            for i in 0..cores().clamp(1, MAX_HELPERS) {
                // A helper that cannot be started leaves its jobs to their callers.
                let _ = std::thread::Builder::new()
                    .name(format!("ctxgraph-helper-{i}"))
                    .spawn(|| Pool::get().work());
            }
            pool
        })
    }

    fn work(&self) {
        loop {
            let job = {
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                loop {
                    if let Some(job) = queue.pop_front() {
                        break job;
                    }
                    queue = self.ready.wait(queue).unwrap_or_else(PoisonError::into_inner);
                }
            };
            job();
        }
    }
}

/// Give `job` to the helpers; the caller goes on and joins it when it needs the answer.
pub(crate) fn spawn<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Pending<T> {
    let slot =
        Arc::new(Slot { state: Mutex::new(State::Queued(Box::new(job))), done: Condvar::new() });
    let run = Arc::clone(&slot);
    let pool = Pool::get();
    pool.queue
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push_back(Box::new(move || run.run()));
    pool.ready.notify_one();
    Pending { slot }
}

/// `job` given to the helpers when `helpers`, else kept to run on the caller at its join: one
/// code path for both.
pub(crate) fn start<T: Send + 'static>(
    helpers: bool,
    job: impl FnOnce() -> T + Send + 'static,
) -> Pending<T> {
    if helpers {
        spawn(job)
    } else {
        Pending {
            slot: Arc::new(Slot {
                state: Mutex::new(State::Queued(Box::new(job))),
                done: Condvar::new(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn every_job_answers_once_whoever_runs_it() {
        let runs = Arc::new(AtomicUsize::new(0));
        let pending: Vec<Pending<usize>> = (0..200)
            .map(|i| {
                let runs = Arc::clone(&runs);
                start(i % 3 != 0, move || {
                    runs.fetch_add(1, Ordering::SeqCst);
                    i * i
                })
            })
            .collect();
        let answers: Vec<usize> = pending.into_iter().map(Pending::join).collect();
        assert_eq!(answers, (0..200).map(|i| i * i).collect::<Vec<_>>());
        // A job a helper takes after its caller ran it is not run again.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert_eq!(runs.load(Ordering::SeqCst), 200);
    }

    #[test]
    fn recalls_in_flight_on_every_core_keep_their_jobs() {
        // Other tests' recalls may be in flight too: only the bound is certain.
        let all: Vec<Overlap> = (0..cores()).map(|_| Overlap::enter(true)).collect();
        assert!(!Overlap::enter(true).helpers(), "no core is left");
        assert!(!Overlap::enter(false).helpers(), "not wanted");
        drop(all);
    }

    #[test]
    fn a_job_kept_for_the_caller_runs_on_the_caller() {
        let me = std::thread::current().id();
        assert_eq!(start(false, move || std::thread::current().id()).join(), me);
    }

    #[test]
    fn a_panic_in_a_job_reaches_the_joining_thread() {
        let pending = spawn(|| -> usize { panic!("job failed") });
        let caught = std::panic::catch_unwind(AssertUnwindSafe(|| pending.join()));
        assert!(caught.is_err());
        // The helpers still answer.
        assert_eq!(spawn(|| 7).join(), 7);
    }
}
