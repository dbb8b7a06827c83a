//! The store's retention tiers as its owner sees them: how many events are hot, warm, cold or
//! due for the archive now, and how many earlier passes archived, read without changing
//! anything (the Health view of the explorer; `ctxgraph retention` without `--apply` plans the
//! same pass with the write lock held).

use super::Reader;
use crate::error::Error;
use crate::retention::{RetentionOptions, TierCounts, tier_counts};

impl Reader<'_> {
    /// Events per retention tier under `options`, and the archived count. Owner only: it
    /// counts every event and archive mark, hidden ones too. Reads every event once.
    pub fn retention_tiers(&self, options: &RetentionOptions) -> Result<TierCounts, Error> {
        self.owner_only("the retention tiers")?;
        tier_counts(&*self.snap.read, options)
    }
}
