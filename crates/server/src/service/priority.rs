//! Reads yield the CPU to the writer: the threads that run a tenant's reads lower their own
//! scheduling priority (their niceness) once, and each tenant's writer drains its queue on a
//! thread of its own that keeps the process's priority.
//!
//! Why: under a mixed load every request is CPU work on two kinds of threads, and without
//! priorities an ingest waits behind every recall that is running. The writer holds every
//! queued ingest (a group is appended, projected and acknowledged together), so a slice of CPU
//! given to it first shortens the wait of every caller in its queue, while recalls, which
//! wait for nothing but the CPU, lose little: the cores stay busy either way.
//!
//! On Linux a thread's niceness is its own (`setpriority(PRIO_PROCESS, 0, …)` changes only the
//! calling thread) and a thread inherits its creator's; a thread may raise its niceness but not
//! lower it without privileges. So a reader thread is lowered once and stays lowered, and the
//! writer runs on a thread spawned from an async worker thread, which never runs reads and so
//! keeps the process's niceness. Elsewhere nothing changes.

use std::cell::Cell;

/// The niceness `ctxgraph serve` adds to its reading threads unless told otherwise.
///
/// 5 while the C library's allocator slowed the readers down with its arena locks; with
/// jemalloc the readers take more of the CPU, and at 5 a 64-client soak's ingest p50 rose from
/// 18 to 61 ms. At 15 (a weight of 36 against the writer's 1,024 in the kernel's fair
/// scheduler, where 5 gives 335) it was 20 ms, at 19 18 ms, with about as many reads answered
/// (`docs/benchmarks.md`).
pub const DEFAULT_READ_NICE: u8 = 15;

thread_local! {
    /// Whether this thread already lowered its priority for reads.
    static LOWERED: Cell<bool> = const { Cell::new(false) };
}

/// Lower the calling thread's priority by `nice` (once per thread; 0 does nothing). Failure is
/// ignored: a priority is a preference, never a reason to fail a read.
pub(super) fn lower_for_reads(nice: u8) {
    if nice == 0 || LOWERED.with(Cell::get) {
        return;
    }
    LOWERED.with(|l| l.set(true));
    raise_niceness(nice);
}

#[cfg(target_os = "linux")]
fn raise_niceness(by: u8) {
    use std::ffi::c_int;
    unsafe extern "C" {
        fn nice(inc: c_int) -> c_int;
    }
    // SAFETY: glibc's and musl's `nice` only change the calling thread's niceness (Linux keeps
    // it per thread); the result, -1 both as an error and as a valid niceness, is not needed.
    unsafe {
        nice(c_int::from(by));
    }
}

#[cfg(not(target_os = "linux"))]
fn raise_niceness(_by: u8) {}

/// Spawn the writer's drain on a thread of its own (named for the tenant), keeping the
/// creating thread's priority; when no thread can be spawned, run it here instead.
pub(super) fn spawn_writer(tenant: &str, drain: impl FnOnce() + Send + 'static) {
    let slot = std::sync::Arc::new(std::sync::Mutex::new(Some(drain)));
    let spawned = {
        let slot = std::sync::Arc::clone(&slot);
        std::thread::Builder::new().name(format!("ctxgraph-writer-{tenant}")).spawn(move || {
            let job = slot.lock().ok().and_then(|mut s| s.take());
            if let Some(job) = job {
                job();
            }
        })
    };
    if spawned.is_err() {
        let job = slot.lock().ok().and_then(|mut s| s.take());
        if let Some(job) = job {
            job();
        }
    }
}

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use super::*;

    fn niceness() -> i32 {
        // /proc/thread-self/stat's 19th field is the thread's niceness.
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(16).unwrap().parse().unwrap()
    }

    #[test]
    fn a_reading_thread_is_lowered_once_and_a_writer_spawned_elsewhere_is_not() {
        let base = std::thread::spawn(niceness).join().unwrap();
        let read = std::thread::spawn(|| {
            lower_for_reads(3);
            lower_for_reads(3);
            niceness()
        })
        .join()
        .unwrap();
        assert_eq!(read, (base + 3).min(19));
        let (tx, rx) = std::sync::mpsc::channel();
        spawn_writer("t", move || tx.send(niceness()).unwrap());
        assert_eq!(rx.recv().unwrap(), base);
        let off = std::thread::spawn(|| {
            lower_for_reads(0);
            niceness()
        })
        .join()
        .unwrap();
        assert_eq!(off, base);
    }
}
