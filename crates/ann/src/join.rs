//! The similarity self-join behind `SIMILAR_TO` edges: every vector's nearest neighbours above
//! a cosine threshold, found through the inverted lists.

use crate::centroids::{Centroids, best_lists};
use crate::error::Error;
use crate::parallel::map_items;
use crate::quant::{dot_f32, dot_wide, quantize};
use crate::search::TopK;
use crate::train::rows;

/// How to run [`similarity_join`].
#[derive(Debug, Clone, PartialEq)]
pub struct JoinConfig {
    /// Most neighbours each vector chooses.
    pub k: usize,
    /// Least approximate cosine of a pair.
    pub threshold: f32,
    /// Lists searched per vector: its own list and the `probes - 1` next-nearest.
    pub probes: usize,
    /// Worker threads; the output does not depend on it.
    pub threads: usize,
}

impl Default for JoinConfig {
    /// Five neighbours of cosine ≥ 0.9 from two lists, on as many threads as the machine has.
    fn default() -> JoinConfig {
        JoinConfig {
            k: 5,
            threshold: 0.9,
            probes: 2,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// A vector's next-nearest lists are looked for among this many lists whose centroids are
/// nearest to its own list's centroid, rather than among all lists: the lists a vector is
/// nearest to after its own are almost always neighbours of its own, and scoring every centroid
/// for every vector would cost more than the rest of [`assign`](crate::assign).
const NEIGHBOUR_LISTS: usize = 32;

/// Finds similar pairs among `vectors` (row `i` has id `ids[i]` and belongs to list
/// `assignment[i]` of `centroids`).
///
/// Every vector chooses its top `cfg.k` neighbours (not itself) with approximate cosine (from
/// int8 codes, as in [`scan`](crate::scan)) at least `cfg.threshold`, ties to the lower id,
/// looking in its own list and the `cfg.probes - 1` other lists whose centroids are nearest to
/// it (among the 32 lists nearest to its own list's centroid; vectors with identical codes in a
/// list are scored once, and share the lists their first row picks). The result holds each chosen
/// pair once as `(a, b, score)` with `a > b` (the later id points at the earlier), sorted by
/// `(a, b)`; since every vector chooses at most `k` pairs, there are at most `k × n`. Ids should
/// be distinct: a pair of equal ids is dropped. The result does not depend on `cfg.threads`.
///
/// # Errors
///
/// [`Error::Dimension`] if `dim` differs from the centroids', [`Error::Shape`] if `vectors`,
/// `ids` and `assignment` disagree in length or an assignment names a list that does not exist.
pub fn similarity_join(
    ids: &[i64],
    vectors: &[f32],
    dim: usize,
    centroids: &Centroids,
    assignment: &[u32],
    cfg: &JoinConfig,
) -> Result<Vec<(i64, i64, f32)>, Error> {
    let n = rows(vectors, dim)?;
    if dim != centroids.dim() {
        return Err(Error::Dimension { expected: centroids.dim(), got: dim });
    }
    if ids.len() != n || assignment.len() != n {
        return Err(Error::Shape {
            what: "similarity join",
            detail: format!("{n} vectors, {} ids, {} assignments", ids.len(), assignment.len()),
        });
    }
    let lists = centroids.len();
    if let Some(l) = assignment.iter().find(|&&l| l as usize >= lists) {
        return Err(Error::Shape { what: "assignment", detail: format!("list {l} of {lists}") });
    }
    if cfg.k == 0 || n == 0 {
        return Ok(Vec::new());
    }

    let groups = Groups::new(ids, vectors, dim, lists, assignment, cfg.threads);
    let probes = cfg.probes.max(1);
    let neighbours = neighbour_lists(centroids, (probes - 1).max(NEIGHBOUR_LISTS), cfg.threads);
    // Members of a group share their score, so a member's k best others are among the k + 1
    // lowest ids of each group (one of them may be the member itself).
    let take = cfg.k.saturating_add(1);

    // Biggest lists first, so that no thread is left with a big one at the end; the pairs are
    // sorted afterwards, so the order of the lists does not matter.
    let mut order: Vec<usize> = (0..lists).collect();
    order.sort_by_key(|&l| (std::cmp::Reverse(groups.of_list(l).len()), l));
    let per_list = map_items(lists, cfg.threads, |i| {
        let l = order[i];
        let own = groups.of_list(l);
        let mut tops: Vec<TopK> = own.clone().map(|_| TopK::new(take)).collect();
        // The own list, each pair of groups once: the score is symmetric.
        for g in own.clone() {
            for h in g..own.end {
                let s = groups.score(g, h);
                if s >= cfg.threshold {
                    groups.ids(h).iter().take(take).for_each(|&id| tops[g - own.start].push(s, id));
                    if h != g {
                        groups
                            .ids(g)
                            .iter()
                            .take(take)
                            .for_each(|&id| tops[h - own.start].push(s, id));
                    }
                }
            }
        }
        // The other probed lists, chosen per group by its vector.
        let mut pairs = Vec::new();
        for (g, mut top) in own.zip(tops) {
            if probes > 1 {
                let v = groups.vector(vectors, g);
                let scored =
                    neighbours[l].iter().map(|&j| (dot_f32(v, centroids.rows_at(j)), j)).collect();
                for p in best_lists(scored, probes - 1) {
                    for h in groups.of_list(p as usize) {
                        let s = groups.score(g, h);
                        if s >= cfg.threshold {
                            groups.ids(h).iter().take(take).for_each(|&id| top.push(s, id));
                        }
                    }
                }
            }
            let best = top.into_sorted();
            for &id in groups.ids(g) {
                let chosen = best.iter().filter(|&&(o, _)| o != id).take(cfg.k);
                pairs.extend(chosen.map(|&(o, s)| (id.max(o), id.min(o), s)));
            }
        }
        pairs
    });
    let mut pairs = per_list.concat();
    pairs.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)).then(x.2.total_cmp(&y.2)));
    pairs.dedup_by(|x, y| (x.0, x.1) == (y.0, y.1));
    Ok(pairs)
}

/// The vectors grouped by list, and within a list by identical int8 codes and scale.
///
/// Near-duplicate texts are common in agent traces and embed to identical codes: a group is
/// scored once for all its members. Groups `offsets[l]..offsets[l + 1]` belong to list `l`, in
/// order of their first row; each has its codes (widened to i16 for the dot product), its scale,
/// its first row and its members' ids in ascending order.
struct Groups {
    dim: usize,
    offsets: Vec<usize>,
    wide: Vec<i16>,
    scales: Vec<f32>,
    first_rows: Vec<usize>,
    id_offsets: Vec<usize>,
    ids: Vec<i64>,
}

impl Groups {
    fn new(
        ids: &[i64],
        vectors: &[f32],
        dim: usize,
        lists: usize,
        assignment: &[u32],
        threads: usize,
    ) -> Groups {
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); lists];
        for (row, &l) in assignment.iter().enumerate() {
            members[l as usize].push(row);
        }
        let per_list = map_items(lists, threads, |l| {
            let rows = &members[l];
            let mut codes = Vec::with_capacity(rows.len() * dim);
            let scales: Vec<f32> = rows
                .iter()
                .map(|&row| quantize(&vectors[row * dim..(row + 1) * dim], &mut codes))
                .collect();
            let code = |i: usize| &codes[i * dim..(i + 1) * dim];
            let key = |i: usize| (code(i), scales[i].to_bits());
            let mut order: Vec<usize> = (0..rows.len()).collect();
            order.sort_by(|&a, &b| key(a).cmp(&key(b)).then(a.cmp(&b)));
            // (first member, member ids) per group, groups in order of first member.
            let mut found: Vec<(usize, Vec<i64>)> = Vec::new();
            for (at, &i) in order.iter().enumerate() {
                match found.last_mut() {
                    Some(g) if at > 0 && key(order[at - 1]) == key(i) => g.1.push(ids[rows[i]]),
                    _ => found.push((i, vec![ids[rows[i]]])),
                }
            }
            found.sort_by_key(|g| g.0);
            let mut wide = Vec::with_capacity(found.len() * dim);
            let mut out = Vec::with_capacity(found.len());
            for (first, mut group_ids) in found {
                wide.extend(code(first).iter().map(|&c| i16::from(c)));
                group_ids.sort_unstable();
                out.push((scales[first], rows[first], group_ids));
            }
            (wide, out)
        });
        let mut g = Groups {
            dim,
            offsets: vec![0],
            wide: Vec::new(),
            scales: Vec::new(),
            first_rows: Vec::new(),
            id_offsets: vec![0],
            ids: Vec::with_capacity(ids.len()),
        };
        for (wide, list) in per_list {
            g.wide.extend(wide);
            for (scale, row, group_ids) in list {
                g.scales.push(scale);
                g.first_rows.push(row);
                g.ids.extend(group_ids);
                g.id_offsets.push(g.ids.len());
            }
            g.offsets.push(g.scales.len());
        }
        g
    }

    /// The groups of `list`.
    fn of_list(&self, list: usize) -> std::ops::Range<usize> {
        self.offsets[list]..self.offsets[list + 1]
    }

    /// The ids of group `g`'s members, ascending.
    fn ids(&self, g: usize) -> &[i64] {
        &self.ids[self.id_offsets[g]..self.id_offsets[g + 1]]
    }

    /// The f32 vector of group `g`'s first member.
    fn vector<'v>(&self, vectors: &'v [f32], g: usize) -> &'v [f32] {
        let row = self.first_rows[g];
        &vectors[row * self.dim..(row + 1) * self.dim]
    }

    /// The approximate cosine of groups `g` and `h`, symmetric bit for bit.
    fn score(&self, g: usize, h: usize) -> f32 {
        let (a, b) = (
            &self.wide[g * self.dim..(g + 1) * self.dim],
            &self.wide[h * self.dim..(h + 1) * self.dim],
        );
        self.scales[g] * self.scales[h] * dot_wide(a, b) as f32
    }
}

/// For every list, the `m` other lists whose centroids are nearest to its centroid, best first.
fn neighbour_lists(c: &Centroids, m: usize, threads: usize) -> Vec<Vec<u32>> {
    let lists = c.len();
    map_items(lists, threads, |l| {
        let own = c.rows_at(l as u32);
        let scored: Vec<(f32, u32)> = (0..lists as u32)
            .filter(|&j| j as usize != l)
            .map(|j| (dot_f32(own, c.rows_at(j)), j))
            .collect();
        best_lists(scored, m)
    })
}
