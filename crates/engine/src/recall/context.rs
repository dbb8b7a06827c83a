//! Context support: a turn is read in the context of the turns around it.
//!
//! In a conversation the words of a question often sit in the turn that asks ("what are you
//! researching?") while the fact sits in the reply that answers it ("adoption agencies"). So
//! the BM25 list is re-scored with its best hits' session neighbours (over FOLLOWS):
//!
//! `r'(x) = r(x) + w_next · r(prev(x)) + w_prev · r(next(x))`
//!
//! where `r` is the BM25 score (0 for a node not in the list) and only the `top` best hits
//! lend support. A reply gains more from the turn before it (`w_next`, default 0.5) than a
//! question from the answer after it (`w_prev`, default 0.2). A node that enters the list only
//! through a neighbour is marked as found by context.

use std::collections::BTreeMap;

/// The weights and reach of context support.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ContextWeights {
    /// Share of a hit's score lent to the turn after it.
    pub next: f64,
    /// Share of a hit's score lent to the turn before it.
    pub prev: f64,
    /// How many of the best hits lend support.
    pub top: usize,
}

impl Default for ContextWeights {
    fn default() -> Self {
        ContextWeights { next: 0.5, prev: 0.2, top: 10 }
    }
}

impl ContextWeights {
    /// Whether support changes anything.
    pub fn is_off(&self) -> bool {
        self.top == 0 || (self.next == 0.0 && self.prev == 0.0)
    }
}

/// A node's session neighbours: the one before it and the one after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Neighbours<K> {
    pub(crate) prev: Option<K>,
    pub(crate) next: Option<K>,
}

impl<K> Neighbours<K> {
    /// No neighbours (a node outside any session order).
    pub(crate) fn none() -> Self {
        Neighbours { prev: None, next: None }
    }
}

/// Re-score `hits` (best first, distinct) with context support. `neighbours(i)` gives the
/// admitted neighbours of `hits[i]` (asked only for the best `w.top`). Returns `(node, r',
/// raised_by_context_only)` best first; ties keep the order of first appearance (hits first,
/// then neighbours in the order they were reached).
pub(crate) fn support<K, E>(
    hits: &[(K, f64)],
    w: ContextWeights,
    mut neighbours: impl FnMut(usize) -> Result<Neighbours<K>, E>,
) -> Result<Vec<(K, f64, bool)>, E>
where
    K: Ord + Clone,
{
    // (score, order of appearance, only by context)
    let mut scores: BTreeMap<K, (f64, usize, bool)> = BTreeMap::new();
    for (i, (key, r)) in hits.iter().enumerate() {
        scores.entry(key.clone()).or_insert((*r, i, false));
    }
    let mut order = hits.len();
    for (i, (_, r)) in hits.iter().enumerate().take(w.top) {
        let n = neighbours(i)?;
        for (neighbour, share) in [(n.next, w.next), (n.prev, w.prev)] {
            let Some(neighbour) = neighbour else { continue };
            if share == 0.0 {
                continue;
            }
            let entry = scores.entry(neighbour).or_insert_with(|| {
                order += 1;
                (0.0, order, true)
            });
            entry.0 += share * r;
        }
    }
    let mut out: Vec<(K, f64, usize, bool)> =
        scores.into_iter().map(|(k, (s, at, only))| (k, s, at, only)).collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    Ok(out.into_iter().map(|(k, s, _, only)| (k, s, only)).collect())
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;

    use proptest::prelude::*;

    use super::*;

    fn run(
        hits: &[(u8, f64)],
        links: &BTreeMap<u8, u8>,
        w: ContextWeights,
    ) -> Vec<(u8, f64, bool)> {
        // `links` maps a turn to the turn after it.
        let result: Result<_, Infallible> = support(hits, w, |i| {
            let key = hits[i].0;
            Ok(Neighbours {
                prev: links.iter().find(|(_, next)| **next == key).map(|(k, _)| *k),
                next: links.get(&key).copied(),
            })
        });
        match result {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }

    #[test]
    fn a_reply_is_lifted_by_the_question_before_it() {
        // Turn 1 asks with the question's words; turn 2 answers without them.
        let links = BTreeMap::from([(1, 2), (2, 3)]);
        let out = run(&[(1, 4.0), (7, 1.0)], &links, ContextWeights::default());
        assert_eq!(out[0], (1, 4.0, false));
        assert_eq!(out[1], (2, 2.0, true));
        assert_eq!(out[2], (7, 1.0, false));
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn zero_weights_change_nothing() {
        let links = BTreeMap::from([(1, 2), (2, 3)]);
        let off = ContextWeights { next: 0.0, prev: 0.0, top: 10 };
        assert!(off.is_off());
        let out = run(&[(2, 3.0), (9, 1.0)], &links, off);
        assert_eq!(out, vec![(2, 3.0, false), (9, 1.0, false)]);
    }

    #[test]
    fn only_the_best_hits_lend_support() {
        let links = BTreeMap::from([(1, 2), (5, 6)]);
        let w = ContextWeights { top: 1, ..ContextWeights::default() };
        let out = run(&[(1, 4.0), (5, 3.0)], &links, w);
        let keys: Vec<u8> = out.iter().map(|x| x.0).collect();
        assert_eq!(keys, vec![1, 5, 2]);
    }

    proptest! {
        /// Every score equals the definition, computed turn by turn.
        #[test]
        fn scores_follow_the_definition(
            raw in prop::collection::btree_map(0u8..30, 0.1f64..10.0, 0..12),
            chain in prop::collection::vec(0u8..30, 0..30),
            top in 0usize..12,
        ) {
            let mut hits: Vec<(u8, f64)> = raw.into_iter().collect();
            hits.sort_by(|a, b| b.1.total_cmp(&a.1));
            // A session: each distinct turn of `chain` follows the one before it.
            let mut turns: Vec<u8> = Vec::new();
            for t in chain {
                if !turns.contains(&t) {
                    turns.push(t);
                }
            }
            let links: BTreeMap<u8, u8> = turns.windows(2).map(|p| (p[0], p[1])).collect();
            let w = ContextWeights { next: 0.5, prev: 0.2, top };
            let out = run(&hits, &links, w);
            let r = |k: u8, lenders: &[(u8, f64)]| {
                lenders.iter().find(|h| h.0 == k).map_or(0.0, |h| h.1)
            };
            let lenders = &hits[..hits.len().min(top)];
            for (key, score, only) in &out {
                let prev = links.iter().find(|(_, n)| **n == *key).map(|(k, _)| *k);
                let next = links.get(key).copied();
                let expected = r(*key, &hits)
                    + prev.map_or(0.0, |p| 0.5 * r(p, lenders))
                    + next.map_or(0.0, |n| 0.2 * r(n, lenders));
                prop_assert!((score - expected).abs() < 1e-9);
                prop_assert_eq!(*only, !hits.iter().any(|h| h.0 == *key));
            }
            for pair in out.windows(2) {
                prop_assert!(pair[0].1 >= pair[1].1);
            }
            for (key, _) in &hits {
                prop_assert!(out.iter().any(|x| x.0 == *key));
            }
        }
    }
}
