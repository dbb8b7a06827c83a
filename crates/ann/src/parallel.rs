//! Scoped worker threads whose results come back in input order, so every parallel step gives
//! the same output for any thread count.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Splits `0..n` into at most `threads` contiguous ranges of near-equal length, runs `f` on each
/// (on scoped threads when there is more than one) and returns the results in range order.
pub(crate) fn map_ranges<T, F>(n: usize, threads: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(Range<usize>) -> T + Sync,
{
    let parts = threads.clamp(1, n.max(1));
    let bounds: Vec<Range<usize>> =
        (0..parts).map(|p| p * n / parts..(p + 1) * n / parts).collect();
    if parts == 1 {
        return bounds.into_iter().map(&f).collect();
    }
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = bounds.into_iter().map(|r| s.spawn(move || f(r))).collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Runs `f` on every item of `0..n`, handing items to `threads` workers as they free up (items of
/// uneven cost balance themselves), and returns the results in item order.
pub fn map_items<T, F>(n: usize, threads: usize, f: F) -> Vec<T>
where
    T: Send,
    F: Fn(usize) -> T + Sync,
{
    let workers = threads.clamp(1, n.max(1));
    if workers == 1 {
        return (0..n).map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
        let (f, next) = (&f, &next);
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break out;
                        }
                        out.push((i, f(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_order_for_any_thread_count() {
        for threads in [0, 1, 2, 3, 8, 100] {
            let ranges = map_ranges(10, threads, |r| r.collect::<Vec<_>>());
            assert_eq!(ranges.concat(), (0..10).collect::<Vec<_>>());
            assert_eq!(
                map_items(10, threads, |i| i * i),
                (0..10).map(|i| i * i).collect::<Vec<_>>()
            );
        }
        assert_eq!(map_ranges(0, 4, |r| r.len()), [0]);
        assert!(map_items(0, 4, |i| i).is_empty());
    }
}
