//! Document-at-a-time top k over format-2 lists with block-max MaxScore: exact, reading only
//! the postings that can still reach the running k-th score.
//!
//! The result is what format 1's score-at-a-time merge returns for the same postings (same
//! documents, same scores to the bit, same tie order): the posting budget chooses the same
//! impact levels (each term's levels down to a cut), and a document's score is summed in the
//! order that merge adds its postings, `(what the posting adds, descending; term)`.
//!
//! Pruning. Documents come in id order, so once `k` are kept a later document enters only with
//! a score above the k-th (`θ`; on a tie its higher id loses). A bound at or below `θ` rules
//! a document out; every bound is an upper bound in exact arithmetic raised by [`SAFETY`], which
//! covers the rounding of any order of summation. With the terms ordered by their highest
//! addition, the longest prefix whose highest additions sum to at most `θ` is *non-essential*:
//! a document only they contain cannot win, so only the other (essential) lists' documents are
//! visited, and the non-essential lists are probed for them (skipping to the document's block).
//! A block whose highest level, with every other term at its highest, cannot pass `θ` is
//! skipped whole. A document found in a skipped block misses that addition, but its true score
//! was ruled out already, so no kept score ever lacks one.

use crate::blocks::BlockView;
use crate::error::Error;
use crate::rank::{Best, Bm25};

/// Bounds are raised by this factor: a sum of `n` positive numbers rounded in any order is
/// within `n × 2⁻⁵³` of the exact sum, far below 10⁻⁹ for any question's terms.
const SAFETY: f64 = 1.0 + 1e-9;

/// No document (past every list's end).
const END: i64 = i64::MAX;

/// The cursor has moved to a block without decoding it: its next posting is the first
/// admitted one from that block on.
const PENDING: i64 = -1;

/// A term's list being read: its current block decoded, its current posting at or above the
/// cut.
struct Cursor<'a> {
    view: BlockView<'a>,
    /// The term's index in the question (ties of equal additions go to the lower).
    term: usize,
    /// What a posting of each level adds: `idf × impact` (0 below the cut).
    adds: Vec<f64>,
    /// The lowest level the budget admits.
    cut: u8,
    /// What the highest admitted level adds.
    max_add: f64,
    /// The block of the current posting.
    block: usize,
    /// Whether `docs`/`levels` hold `block`.
    loaded: bool,
    docs: Vec<i64>,
    levels: Vec<u8>,
    pos: usize,
    /// The current document, [`END`] when the list is done, [`PENDING`] after `bound_at`.
    doc: i64,
}

impl<'a> Cursor<'a> {
    /// Move to the first admitted posting at or after the current position.
    fn settle(&mut self) -> Result<(), Error> {
        loop {
            if self.block >= self.view.blocks() {
                self.doc = END;
                return Ok(());
            }
            if !self.loaded {
                if self.view.block_max(self.block) < self.cut {
                    self.block += 1;
                    continue;
                }
                self.view.decode_block(self.block, &mut self.docs, &mut self.levels)?;
                self.loaded = true;
                self.pos = 0;
            }
            while self.pos < self.levels.len() && self.levels[self.pos] < self.cut {
                self.pos += 1;
            }
            if self.pos < self.docs.len() {
                self.doc = self.docs[self.pos];
                return Ok(());
            }
            self.block += 1;
            self.loaded = false;
        }
    }

    fn next(&mut self) -> Result<(), Error> {
        self.pos += 1;
        self.settle()
    }

    /// What the current posting adds.
    fn add(&self) -> f64 {
        self.adds[usize::from(self.levels[self.pos])]
    }

    /// What a posting of the current block adds at most.
    fn block_add(&self) -> f64 {
        self.adds[usize::from(self.view.block_max(self.block))]
    }

    /// Go on to the next block without reading the rest of this one.
    fn skip_block(&mut self) -> Result<(), Error> {
        self.block += 1;
        self.loaded = false;
        self.settle()
    }

    /// At most what the list adds to `doc` (no earlier than any document asked before),
    /// moving to `doc`'s block without decoding it.
    fn bound_at(&mut self, doc: i64) -> f64 {
        if self.doc != PENDING {
            if self.doc >= doc {
                // The list holds nothing between the last document asked and its position.
                return if self.doc == doc { self.add() } else { 0.0 };
            }
            if self.view.last(self.block) >= doc {
                return self.block_add();
            }
            self.block += 1;
            self.loaded = false;
            self.doc = PENDING;
        }
        while self.block < self.view.blocks() && self.view.last(self.block) < doc {
            self.block += 1;
        }
        if self.block < self.view.blocks() {
            self.adds[usize::from(self.view.block_max(self.block))]
        } else {
            0.0
        }
    }

    /// What the list adds to `doc` (0 if it does not hold it at an admitted level), leaving the
    /// cursor at its first admitted posting at or after `doc`.
    fn seek(&mut self, doc: i64) -> Result<f64, Error> {
        if self.doc == PENDING {
            self.settle()?;
        }
        while self.doc < doc {
            if self.view.last(self.block) < doc {
                self.block += 1;
                while self.block < self.view.blocks() && self.view.last(self.block) < doc {
                    self.block += 1;
                }
                self.loaded = false;
            } else {
                self.pos += 1;
            }
            self.settle()?;
        }
        Ok(if self.doc == doc { self.add() } else { 0.0 })
    }
}

/// The best `k` of the documents the budget admits, in no particular order. `lists` are the
/// question's parsed lists with their floored idfs, in the question's order.
pub(crate) fn top_k(
    lists: &[(f64, BlockView<'_>)],
    bm25: Bm25,
    k: usize,
    max_postings: usize,
) -> Result<Vec<(i64, f64)>, Error> {
    let impacts: Vec<f64> = (0..=255u8).map(|l| crate::postings::impact_of(bm25, l)).collect();
    // The budget, as format 1 spends it: every (term, level) in decreasing order of what its
    // postings add, until the next would pass `max_postings` (the first is always read).
    let mut order: Vec<(f64, usize, usize)> = Vec::new();
    for (t, (idf, view)) in lists.iter().enumerate() {
        for l in 0..view.level_count() {
            order.push((idf * impacts[usize::from(view.level(l))], t, l));
        }
    }
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut cuts: Vec<Option<u8>> = vec![None; lists.len()];
    let mut read = 0usize;
    for &(_, t, l) in &order {
        let len = lists[t].1.level_len(l) as usize;
        if read > 0 && read + len > max_postings {
            break;
        }
        read += len;
        let level = lists[t].1.level(l);
        cuts[t] = Some(cuts[t].map_or(level, |c| c.min(level)));
    }
    let mut cursors = Vec::new();
    for (t, ((idf, view), cut)) in lists.iter().zip(&cuts).enumerate() {
        let Some(cut) = *cut else { continue };
        let adds: Vec<f64> = impacts
            .iter()
            .enumerate()
            .map(|(l, impact)| if l >= usize::from(cut) { idf * impact } else { 0.0 })
            .collect();
        let max_add = adds[usize::from(view.level(0))];
        let mut c = Cursor {
            view: *view,
            term: t,
            adds,
            cut,
            max_add,
            block: 0,
            loaded: false,
            docs: Vec::with_capacity(crate::blocks::BLOCK_LEN),
            levels: Vec::with_capacity(crate::blocks::BLOCK_LEN),
            pos: 0,
            doc: 0,
        };
        c.settle()?;
        cursors.push(c);
    }
    // Lowest highest-addition first: the non-essential lists are a prefix.
    cursors.sort_by(|a, b| a.max_add.total_cmp(&b.max_add).then(a.term.cmp(&b.term)));
    let n = cursors.len();
    let mut prefix = vec![0.0; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i] + cursors[i].max_add;
    }
    // Per list, the most every other list adds.
    let others: Vec<f64> =
        (0..n).map(|i| (0..n).filter(|&j| j != i).map(|j| cursors[j].max_add).sum()).collect();
    let mut best = Best::new(k);
    let mut ne = 0;
    let mut parts: Vec<(f64, usize)> = Vec::with_capacity(n);
    let mut probes: Vec<f64> = vec![0.0; n];
    loop {
        let theta = best.threshold();
        while ne < n && prefix[ne + 1] * SAFETY <= theta {
            ne += 1;
        }
        if ne == n {
            break;
        }
        // Skip essential blocks that cannot pass the threshold, then take the lowest document.
        let mut doc = END;
        for i in ne..n {
            let c = &mut cursors[i];
            while c.doc != END && (c.block_add() + others[i]) * SAFETY <= theta {
                c.skip_block()?;
            }
            doc = doc.min(c.doc);
        }
        if doc == END {
            break;
        }
        parts.clear();
        let mut sure = 0.0;
        for c in &mut cursors[ne..] {
            if c.doc == doc {
                let add = c.add();
                parts.push((add, c.term));
                sure += add;
                c.next()?;
            }
        }
        if ne > 0 {
            for (i, c) in cursors[..ne].iter_mut().enumerate() {
                probes[i] = c.bound_at(doc);
            }
            let mut ruled_out = (sure + probes[..ne].iter().sum::<f64>()) * SAFETY <= theta;
            // Probe the lists worth most first: each exact addition tightens the bound.
            for i in (0..ne).rev() {
                if ruled_out {
                    break;
                }
                let add = cursors[i].seek(doc)?;
                if add > 0.0 {
                    parts.push((add, cursors[i].term));
                    sure += add;
                }
                probes[i] = 0.0;
                ruled_out = (sure + probes[..i].iter().sum::<f64>()) * SAFETY <= theta;
            }
            if ruled_out {
                continue;
            }
        }
        // Format 1's order of additions: what each adds, descending, then the term.
        parts.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut score = 0.0;
        for &(add, _) in &parts {
            score += add;
        }
        best.push(doc, score);
    }
    Ok(best.into_vec())
}
