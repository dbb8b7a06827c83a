//! Finding a vector's nearest centroid without scoring every centroid: the search behind
//! [`Centroids::nearest`](crate::Centroids::nearest), [`assign`](crate::assign) and k-means.
//!
//! # How
//!
//! Centroids are unit vectors. If `b` is some centroid with cosine `ŝ` to the vector, a centroid
//! `j` can score at least as well as `b` only if the angle between `b` and `j` is at most twice
//! the angle between the vector and `b` (triangle inequality on the sphere), that is if
//! `cos(b, j) ≥ 2ŝ² − 1`. Vectors sit close to their centroid (cosine ≈ 0.98 on synthetic
//! traces at 300k vectors), so only the handful of centroids nearest to `b` qualify.
//!
//! So: the centroids are grouped around √lists group centres; a vector picks the best group,
//! then the best centroid `b` in it, then scores exactly (f32) `b`'s neighbours above the bound,
//! kept sorted per centroid. The answer is the exact f32 argmax (ties to the lower id) whatever
//! `b` was; a good `b` only makes it cheaper. Bounds carry a margin of [`MARGIN`] in cosine for
//! rounding.
//!
//! When the bound admits more than the [`NEIGHBOURS`] kept (a vector far from every centroid),
//! or there are few centroids, every centroid is scored by int8 codes and the best
//! [`SHORTLIST`] are scored again in f32. That answer is the exact argmax unless the int8 error
//! (about 1e-3) pushes it out of the shortlist.

use crate::parallel::map_items;
use crate::quant::{dot_f32, dot_wide, quantize, widen};

/// Centroids kept from the int8 pass for exact f32 scoring.
const SHORTLIST: usize = 8;
/// Below this many centroids, every centroid is scored.
const PRUNE_MIN_LISTS: usize = 64;
/// Neighbours kept per centroid, nearest first.
const NEIGHBOURS: usize = 128;
/// Safety margin of the bound, in cosine: far above f32 rounding of 256-d dot products.
const MARGIN: f32 = 1e-3;
/// Centroid norms further than this from 1 turn pruning off (the bound assumes unit vectors).
const UNIT_TOLERANCE: f32 = 1e-4;
/// k-means iterations that group the centroids.
const GROUP_ITERATIONS: usize = 5;

/// Search structures derived from a set of centroids.
#[derive(Clone)]
pub(crate) struct NearestIndex {
    /// The centroids' int8 codes widened to i16, row-major, for the shortlist.
    wide: Vec<i16>,
    /// The scale of each centroid's codes.
    scales: Vec<f32>,
    prune: Option<Prune>,
}

#[derive(Clone)]
struct Prune {
    /// Group centres, row-major unit vectors.
    centres: Vec<f32>,
    /// Centroid ids of each group, ascending; no group is empty.
    members: Vec<Vec<u32>>,
    /// Per centroid, its nearest other centroids as `(cosine, id)`, best first, ties to the lower
    /// id; `width` a row.
    neighbours: Vec<(f32, u32)>,
    width: usize,
}

/// Reusable buffers of [`NearestIndex::nearest`].
#[derive(Default)]
pub(crate) struct Scratch {
    codes: Vec<i8>,
    wide: Vec<i16>,
}

impl NearestIndex {
    pub(crate) fn build(dim: usize, data: &[f32], threads: usize) -> NearestIndex {
        let mut codes = Vec::with_capacity(data.len());
        let scales = data.chunks_exact(dim).map(|row| quantize(row, &mut codes)).collect();
        let lists = data.len() / dim;
        let unit =
            data.chunks_exact(dim).all(|c| (dot_f32(c, c).sqrt() - 1.0).abs() <= UNIT_TOLERANCE);
        let prune = (lists >= PRUNE_MIN_LISTS && unit).then(|| Prune::build(dim, data, threads));
        NearestIndex { wide: widen(&codes), scales, prune }
    }

    /// The nearest centroid of `data` (row-major, `dim` a row) to `v` and its f32 score.
    pub(crate) fn nearest(
        &self,
        dim: usize,
        data: &[f32],
        v: &[f32],
        scratch: &mut Scratch,
    ) -> (u32, f32) {
        self.prune
            .as_ref()
            .and_then(|p| p.nearest(dim, data, v))
            .unwrap_or_else(|| self.scan(dim, data, v, scratch))
    }

    /// Every centroid by int8 codes, then the shortlist in f32.
    fn scan(&self, dim: usize, data: &[f32], v: &[f32], scratch: &mut Scratch) -> (u32, f32) {
        scratch.codes.clear();
        quantize(v, &mut scratch.codes);
        scratch.wide.clear();
        scratch.wide.extend(scratch.codes.iter().map(|&c| i16::from(c)));
        // Best first; a later (higher) id with an equal key never displaces an earlier one.
        let mut short = [(f32::NEG_INFINITY, 0u32); SHORTLIST];
        let mut len = 0;
        for (i, (row, &scale)) in self.wide.chunks_exact(dim).zip(&self.scales).enumerate() {
            let key = scale * dot_wide(&scratch.wide, row) as f32;
            if len < SHORTLIST || key > short[len - 1].0 {
                let at = short[..len].iter().position(|&(k, _)| key > k).unwrap_or(len);
                if len < SHORTLIST {
                    len += 1;
                }
                short.copy_within(at..len - 1, at + 1);
                short[at] = (key, i as u32);
            }
        }
        let mut best = (0u32, f32::NEG_INFINITY);
        for &(_, j) in &short[..len] {
            best = better(best, (j, dot_f32(v, row(data, dim, j))));
        }
        best
    }
}

impl Prune {
    fn build(dim: usize, data: &[f32], threads: usize) -> Prune {
        let lists = data.len() / dim;
        let width = NEIGHBOURS.min(lists - 1);
        let rows: Vec<Vec<(f32, u32)>> = map_items(lists, threads, |i| {
            let own = row(data, dim, i as u32);
            let mut sims: Vec<(f32, u32)> = (0..lists as u32)
                .filter(|&j| j as usize != i)
                .map(|j| (dot_f32(own, row(data, dim, j)), j))
                .collect();
            let order = |a: &(f32, u32), b: &(f32, u32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
            if width < sims.len() {
                sims.select_nth_unstable_by(width - 1, order);
                sims.truncate(width);
            }
            sims.sort_unstable_by(order);
            sims
        });
        let (centres, members) = group(dim, data);
        Prune { centres, members, neighbours: rows.concat(), width }
    }

    /// The exact nearest centroid, or `None` if the bound admits more neighbours than are kept
    /// (or `v` has no direction).
    fn nearest(&self, dim: usize, data: &[f32], v: &[f32]) -> Option<(u32, f32)> {
        let norm = dot_f32(v, v).sqrt();
        if !(norm > 0.0 && norm.is_finite()) {
            return None;
        }
        let mut group = (0u32, f32::NEG_INFINITY);
        for (g, c) in self.centres.chunks_exact(dim).enumerate() {
            group = better(group, (g as u32, dot_f32(v, c)));
        }
        let mut best = (u32::MAX, f32::NEG_INFINITY);
        for &j in self.members.get(group.0 as usize)? {
            best = better(best, (j, dot_f32(v, row(data, dim, j))));
        }
        let t = best.1 / norm - MARGIN;
        if t.is_nan() || t < 0.0 {
            return None;
        }
        let bound = 2.0 * t * t - 1.0 - MARGIN;
        let start = best.0 as usize * self.width;
        let neighbours = self.neighbours.get(start..start + self.width)?;
        if neighbours.len() + 1 < data.len() / dim
            && neighbours.last().is_some_and(|n| n.0 >= bound)
        {
            return None;
        }
        for &(sim, j) in neighbours {
            if sim < bound {
                break;
            }
            best = better(best, (j, dot_f32(v, row(data, dim, j))));
        }
        Some(best)
    }
}

/// Groups the centroids around √lists centres by a few rounds of spherical k-means, started from
/// evenly spaced centroids. Empty groups are dropped.
fn group(dim: usize, data: &[f32]) -> (Vec<f32>, Vec<Vec<u32>>) {
    let lists = data.len() / dim;
    let groups = ((lists as f64).sqrt().round() as usize).max(1);
    let mut centres: Vec<f32> = (0..groups)
        .flat_map(|g| row(data, dim, (g * lists / groups) as u32).iter().copied())
        .collect();
    let mut members: Vec<Vec<u32>> = Vec::new();
    for round in 0..=GROUP_ITERATIONS {
        members = vec![Vec::new(); groups];
        for j in 0..lists as u32 {
            let c = row(data, dim, j);
            let mut best = (0u32, f32::NEG_INFINITY);
            for (g, centre) in centres.chunks_exact(dim).enumerate() {
                best = better(best, (g as u32, dot_f32(c, centre)));
            }
            members[best.0 as usize].push(j);
        }
        if round == GROUP_ITERATIONS {
            break;
        }
        for (g, m) in members.iter().enumerate() {
            if m.is_empty() {
                continue;
            }
            let centre = &mut centres[g * dim..(g + 1) * dim];
            centre.fill(0.0);
            for &j in m {
                centre.iter_mut().zip(row(data, dim, j)).for_each(|(c, x)| *c += x);
            }
            crate::quant::normalize(centre);
        }
    }
    let keep: Vec<usize> = (0..groups).filter(|&g| !members[g].is_empty()).collect();
    let centres =
        keep.iter().flat_map(|&g| centres[g * dim..(g + 1) * dim].iter().copied()).collect();
    let members = keep.into_iter().map(|g| std::mem::take(&mut members[g])).collect();
    (centres, members)
}

/// The better of two `(id, score)`: higher score, ties to the lower id; NaN never wins.
fn better(best: (u32, f32), x: (u32, f32)) -> (u32, f32) {
    if x.1 > best.1 || (x.1 == best.1 && x.0 < best.0) { x } else { best }
}

/// Row `j` of `data`.
fn row(data: &[f32], dim: usize, j: u32) -> &[f32] {
    &data[j as usize * dim..(j as usize + 1) * dim]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruned_search_answers_near_vectors_exactly() {
        let dim = 16;
        let unit = |seed: usize| -> Vec<f32> {
            let mut v: Vec<f32> = (0..dim)
                .map(|d| ((seed * 7919 + d * 104_729) % 1_000) as f32 / 500.0 - 1.0)
                .collect();
            crate::quant::normalize(&mut v);
            v
        };
        let data: Vec<f32> = (0..300).flat_map(unit).collect();
        let index = NearestIndex::build(dim, &data, 2);
        let prune = index.prune.as_ref().unwrap();
        let mut answered = 0;
        for q in 0..300u32 {
            let mut v: Vec<f32> = row(&data, dim, q)
                .iter()
                .zip(unit(q as usize + 1_000))
                .map(|(a, b)| a + 0.1 * b)
                .collect();
            crate::quant::normalize(&mut v);
            let exact = (0..300u32)
                .map(|j| (j, dot_f32(&v, row(&data, dim, j))))
                .fold((0, f32::NEG_INFINITY), better);
            if let Some(found) = prune.nearest(dim, &data, &v) {
                assert_eq!(found, exact, "query {q}");
                answered += 1;
            }
            assert_eq!(index.nearest(dim, &data, &v, &mut Scratch::default()), exact);
        }
        assert!(answered > 250, "{answered}");
        // Too few centroids, or centroids that are not unit vectors: no pruning.
        assert!(NearestIndex::build(dim, &data[..63 * dim], 1).prune.is_none());
        let doubled: Vec<f32> = data.iter().map(|x| 2.0 * x).collect();
        assert!(NearestIndex::build(dim, &doubled, 1).prune.is_none());
    }
}
