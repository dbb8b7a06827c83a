//! Reciprocal rank fusion of the prefilter's ranked lists.
//!
//! A node's fused score is `Σ_l w_l / (k + rank_l)` over the lists `l` it appears in (rank from
//! 1), with `k` damping the head of each list. Fusing ranks rather than scores needs no
//! calibration between BM25 scores, cosines and entity matches, which live on unrelated scales.

use std::collections::BTreeMap;

/// Fuse ranked lists (best first; an item repeated in one list counts at its first rank) with
/// weights `weights[l]`. Returns `(item, score)` best first, ties in item order.
pub(crate) fn rrf<T: Ord + Clone>(lists: &[Vec<T>], weights: &[f64], k: f64) -> Vec<(T, f64)> {
    let mut scores: BTreeMap<T, f64> = BTreeMap::new();
    for (list, weight) in lists.iter().zip(weights) {
        let mut seen = std::collections::BTreeSet::new();
        let mut rank = 0usize;
        for item in list {
            if !seen.insert(item) {
                continue;
            }
            rank += 1;
            *scores.entry(item.clone()).or_default() += weight / (k + rank as f64);
        }
    }
    let mut fused: Vec<(T, f64)> = scores.into_iter().collect();
    // Stable sort over item order: equal scores stay in item order.
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    fused
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The definition, computed the slow way: for every item, scan every list for its first
    /// occurrence among distinct items.
    fn brute_force(lists: &[Vec<u8>], weights: &[f64], k: f64) -> Vec<(u8, f64)> {
        let mut items: Vec<u8> = lists.iter().flatten().copied().collect();
        items.sort_unstable();
        items.dedup();
        let mut out: Vec<(u8, f64)> = items
            .into_iter()
            .map(|item| {
                let mut score = 0.0;
                for (list, w) in lists.iter().zip(weights) {
                    let mut distinct: Vec<u8> = Vec::new();
                    for x in list {
                        if !distinct.contains(x) {
                            distinct.push(*x);
                        }
                    }
                    if let Some(pos) = distinct.iter().position(|x| *x == item) {
                        score += w / (k + (pos + 1) as f64);
                    }
                }
                (item, score)
            })
            .collect();
        // Best first; ties by item.
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }

    #[test]
    fn an_item_high_in_two_lists_beats_the_top_of_one() {
        let fused = rrf(&[vec!["a", "b", "c"], vec!["b", "d"]], &[1.0, 1.0], 60.0);
        assert_eq!(fused[0].0, "b");
        assert!((fused[0].1 - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert_eq!(fused.len(), 4);
    }

    proptest! {
        #[test]
        fn fusion_equals_the_brute_force_definition(
            lists in prop::collection::vec(prop::collection::vec(0u8..12, 0..10), 0..4),
            weights in prop::collection::vec(0.1f64..2.0, 4),
            k in 1.0f64..100.0,
        ) {
            let fused = rrf(&lists, &weights, k);
            let expected = brute_force(&lists, &weights, k);
            prop_assert_eq!(fused.len(), expected.len());
            for ((a, sa), (b, sb)) in fused.iter().zip(&expected) {
                prop_assert_eq!(a, b);
                prop_assert!((sa - sb).abs() < 1e-12);
            }
        }
    }
}
