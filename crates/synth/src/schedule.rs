//! When sessions open: bursts of work during the day, quiet gaps, no nights.
//!
//! Real agent traffic is bursty: a team fires off several tasks within a minute,
//! then nothing for hours. Bursts make sessions overlap (so the trace interleaves
//! them) while the gaps spread a small demo trace over several days.

use chrono::{DateTime, FixedOffset, TimeDelta};
use rand::Rng;
use rand::rngs::SmallRng;

const DAY_S: i64 = 86_400;
/// Working window in UTC: sessions open between 07:00 and 21:00.
const DAY_OPENS_S: i64 = 7 * 3_600;
const DAY_CLOSES_S: i64 = 21 * 3_600;

/// Sessions after the first in a burst.
const BURST: std::ops::RangeInclusive<u32> = 2..=5;

/// The arrival process of sessions.
pub(crate) struct Arrivals {
    next: DateTime<FixedOffset>,
    left_in_burst: u32,
}

impl Arrivals {
    pub(crate) fn new(start: DateTime<FixedOffset>, rng: &mut SmallRng) -> Arrivals {
        Arrivals { next: start, left_in_burst: rng.random_range(BURST) }
    }

    /// When the next session opens.
    pub(crate) fn next(&self) -> DateTime<FixedOffset> {
        self.next
    }

    /// Moves on to the following session's opening time.
    pub(crate) fn advance(&mut self, rng: &mut SmallRng) {
        if self.left_in_burst > 0 {
            self.left_in_burst -= 1;
            // Integer draws only: float transcendental functions are not bit-identical
            // across platforms, and the trace must be.
            let secs = if rng.random_bool(0.7) {
                rng.random_range(1..=10)
            } else {
                rng.random_range(10..=45)
            };
            self.next += TimeDelta::milliseconds(secs * 1_000 + rng.random_range(0..1_000));
            return;
        }
        self.left_in_burst = rng.random_range(BURST);
        let gap_s = rng.random_range(2 * 3_600..=10 * 3_600);
        let mut next = self.next + TimeDelta::seconds(gap_s);
        let of_day = next.timestamp().rem_euclid(DAY_S);
        let jitter = rng.random_range(0..150 * 60);
        if of_day >= DAY_CLOSES_S {
            next += TimeDelta::seconds(DAY_S - of_day + DAY_OPENS_S + jitter);
        } else if of_day < DAY_OPENS_S {
            next += TimeDelta::seconds(DAY_OPENS_S - of_day + jitter);
        }
        self.next = next;
    }
}

/// Local hour (0..24) of a UTC instant in a zone `offset_s` seconds east of UTC.
pub(crate) fn local_hour(at: &DateTime<FixedOffset>, offset_s: i32) -> i64 {
    (at.timestamp() + i64::from(offset_s)).rem_euclid(DAY_S) / 3_600
}
