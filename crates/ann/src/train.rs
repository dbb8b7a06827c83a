//! Training the coarse quantizer (spherical k-means) and assigning vectors to lists.
//!
//! Everything here is deterministic: the sample is evenly spaced rows, the initial centroids are
//! evenly spaced sample rows (skipping duplicates), empty lists are re-seeded with the sample
//! rows farthest from their centroids, and sums are taken in row order on one thread while the
//! nearest-centroid searches, whose results do not depend on how rows are split, run on
//! `threads` threads. Same input, same centroids, bit for bit, for any thread count.

use crate::centroids::{Centroids, check_dim};
use crate::error::Error;
use crate::nearest::Scratch;
use crate::parallel::map_ranges;
use crate::quant::{dot_f32, normalize};

/// How to train the coarse quantizer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrainConfig {
    /// Number of inverted lists (centroids); fewer if there are fewer distinct vectors.
    pub lists: usize,
    /// Vectors sampled per list for k-means; the sample is `lists × sample_per_list` rows (all rows
    /// if there are fewer).
    pub sample_per_list: usize,
    /// k-means iterations (it stops early once no sample row changes list).
    pub iterations: u32,
    /// Worker threads; the output does not depend on it.
    pub threads: usize,
}

impl TrainConfig {
    /// Sample rows per list in [`TrainConfig::for_count`].
    pub const SAMPLE_PER_LIST: usize = 64;
    /// k-means iterations in [`TrainConfig::for_count`].
    pub const ITERATIONS: u32 = 10;

    /// The measured defaults for an index of `n` vectors: `lists ≈ √n` (at least 1), 64 sample
    /// rows per list, 10 iterations, and as many threads as the machine has.
    pub fn for_count(n: usize) -> TrainConfig {
        TrainConfig {
            lists: ((n as f64).sqrt().round() as usize).max(1),
            sample_per_list: TrainConfig::SAMPLE_PER_LIST,
            iterations: TrainConfig::ITERATIONS,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Trains the centroids of an index over `vectors` (row-major, `dim` floats a row) by spherical
/// k-means over a deterministic sample. See the module docs for what makes it deterministic.
///
/// # Errors
///
/// [`Error::Config`] for a zero `dim` or `cfg.lists`, [`Error::Shape`] if `vectors` is not a
/// whole number of rows, [`Error::Empty`] if it has none.
pub fn train(vectors: &[f32], dim: usize, cfg: &TrainConfig) -> Result<Centroids, Error> {
    let n = rows(vectors, dim)?;
    if cfg.lists == 0 {
        return Err(Error::Config("zero lists".to_owned()));
    }
    let mut sample = Vec::new();
    for row in sample_rows(n, cfg) {
        sample.extend_from_slice(&vectors[row * dim..(row + 1) * dim]);
    }
    train_sampled(sample, dim, cfg)
}

/// The rows of `n` vectors that [`train`] samples under `cfg`, ascending: `lists × sample_per_list`
/// evenly spaced rows (all rows if there are fewer). A caller that streams its vectors keeps
/// these rows and hands them to [`train_sampled`].
pub fn sample_rows(n: usize, cfg: &TrainConfig) -> impl Iterator<Item = usize> + use<> {
    let s = cfg.lists.max(1).min(n).saturating_mul(cfg.sample_per_list.max(1)).min(n);
    (0..s).map(move |i| (i as u128 * n as u128 / s as u128) as usize)
}

/// Trains as [`train`] does on the rows [`sample_rows`] chose, in their order (`sample` holds
/// them row-major, not yet normalized): `train_sampled(rows of sample_rows(n, cfg), dim, cfg)`
/// gives the same centroids, bit for bit, as `train` over all `n` rows, without them in memory.
///
/// # Errors
///
/// As [`train`].
pub fn train_sampled(
    mut sample: Vec<f32>,
    dim: usize,
    cfg: &TrainConfig,
) -> Result<Centroids, Error> {
    let s = rows(&sample, dim)?;
    if cfg.lists == 0 {
        return Err(Error::Config("zero lists".to_owned()));
    }
    if s == 0 {
        return Err(Error::Empty);
    }
    sample.chunks_exact_mut(dim).for_each(normalize);
    let mut c = Centroids::new(dim, initial(&sample, dim, cfg.lists.min(s)));
    let lists = c.len();
    let mut previous: Vec<u32> = Vec::new();
    for _ in 0..cfg.iterations {
        let nearest = nearest_all(&c, &sample, cfg.threads);
        if nearest.iter().map(|&(l, _)| l).eq(previous.iter().copied()) {
            break;
        }
        let mut sums = vec![0.0f64; lists * dim];
        let mut counts = vec![0usize; lists];
        for (row, &(list, _)) in sample.chunks_exact(dim).zip(&nearest) {
            let l = list as usize;
            counts[l] += 1;
            for (s, &x) in sums[l * dim..(l + 1) * dim].iter_mut().zip(row) {
                *s += f64::from(x);
            }
        }
        let mut rows = c.into_rows();
        for (l, count) in counts.iter().enumerate() {
            if *count > 0 {
                let row = &mut rows[l * dim..(l + 1) * dim];
                for (x, s) in row.iter_mut().zip(&sums[l * dim..(l + 1) * dim]) {
                    *x = *s as f32;
                }
                normalize(row);
            }
        }
        reseed(&mut rows, &sample, dim, &nearest, &mut counts);
        c = Centroids::new(dim, rows);
        previous = nearest.into_iter().map(|(l, _)| l).collect();
    }
    Ok(c)
}

/// Assigns every row of `vectors` to its nearest list ([`Centroids::nearest`]), on `threads`
/// threads; the result does not depend on the thread count.
///
/// # Errors
///
/// [`Error::Shape`] if `vectors` is not a whole number of rows of `centroids.dim()`.
pub fn assign(centroids: &Centroids, vectors: &[f32], threads: usize) -> Result<Vec<u32>, Error> {
    rows(vectors, centroids.dim())?;
    Ok(nearest_all(centroids, vectors, threads).into_iter().map(|(l, _)| l).collect())
}

/// Number of rows of `dim` floats in `vectors`.
pub(crate) fn rows(vectors: &[f32], dim: usize) -> Result<usize, Error> {
    check_dim(dim)?;
    if !vectors.len().is_multiple_of(dim) {
        return Err(Error::Shape {
            what: "vectors",
            detail: format!("{} floats are not a whole number of {dim}-d rows", vectors.len()),
        });
    }
    Ok(vectors.len() / dim)
}

/// Nearest list and its score for every row, in row order.
fn nearest_all(c: &Centroids, vectors: &[f32], threads: usize) -> Vec<(u32, f32)> {
    let dim = c.dim();
    c.index(threads);
    map_ranges(vectors.len() / dim, threads, |r| {
        let mut scratch = Scratch::default();
        vectors[r.start * dim..r.end * dim]
            .chunks_exact(dim)
            .map(|v| c.nearest_scored(v, &mut scratch))
            .collect::<Vec<_>>()
    })
    .concat()
}

/// Rows closer than this to a chosen centroid are duplicates for initialization.
const DUPLICATE_COSINE: f32 = 0.9999;

/// Up to `lists` initial centroids: sample rows at an even stride, then the rows between them,
/// skipping rows that duplicate a centroid already chosen (near-identical texts are common).
fn initial(sample: &[f32], dim: usize, lists: usize) -> Vec<f32> {
    let s = sample.len() / dim;
    let stride = (s / lists.max(1)).max(1);
    let mut out: Vec<f32> = Vec::with_capacity(lists * dim);
    'rows: for row in (0..stride).flat_map(|offset| (offset..s).step_by(stride)) {
        if out.len() == lists * dim {
            break;
        }
        let v = &sample[row * dim..(row + 1) * dim];
        if dot_f32(v, v) == 0.0 {
            continue;
        }
        for c in out.chunks_exact(dim) {
            if dot_f32(v, c) >= DUPLICATE_COSINE {
                continue 'rows;
            }
        }
        out.extend_from_slice(v);
    }
    if out.is_empty() {
        // Only zero vectors: one list, any centroid does.
        out.extend_from_slice(&sample[..dim]);
    }
    out
}

/// Moves every empty list's centroid onto the sample row farthest from its own centroid (lowest
/// score first, lower row first), taking rows only from lists that keep at least one member.
fn reseed(
    centroids: &mut [f32],
    sample: &[f32],
    dim: usize,
    nearest: &[(u32, f32)],
    counts: &mut [usize],
) {
    let empty: Vec<usize> =
        counts.iter().enumerate().filter(|(_, c)| **c == 0).map(|(l, _)| l).collect();
    if empty.is_empty() {
        return;
    }
    let mut order: Vec<usize> = (0..nearest.len()).collect();
    order.sort_by(|&a, &b| {
        crate::search::score_key(nearest[a].1)
            .total_cmp(&crate::search::score_key(nearest[b].1))
            .then(a.cmp(&b))
    });
    let mut candidates = order.into_iter();
    for l in empty {
        let Some(row) = candidates.by_ref().find(|&r| counts[nearest[r].0 as usize] > 1) else {
            return;
        };
        counts[nearest[row].0 as usize] -= 1;
        counts[l] = 1;
        centroids[l * dim..(l + 1) * dim].copy_from_slice(&sample[row * dim..(row + 1) * dim]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_obvious_clusters() {
        // Three tight clusters around the axes of 3-d space.
        let mut v = Vec::new();
        for i in 0..90 {
            let e = (i % 3) as usize;
            let mut row = [0.05 * ((i * 7 % 5) as f32 - 2.0); 3];
            row[e] = 1.0;
            v.extend_from_slice(&row);
        }
        let cfg = TrainConfig { lists: 3, sample_per_list: 100, iterations: 10, threads: 2 };
        let c = train(&v, 3, &cfg).unwrap();
        assert_eq!(c.len(), 3);
        let a = assign(&c, &v, 2).unwrap();
        for i in 0..90 {
            assert_eq!(a[i], a[i % 3], "row {i}");
        }
        assert_ne!(a[0], a[1]);
        assert_ne!(a[1], a[2]);
        assert_ne!(a[0], a[2]);
    }

    #[test]
    fn duplicates_and_zeros_give_fewer_lists() {
        let v = [1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        let cfg = TrainConfig { lists: 4, sample_per_list: 10, iterations: 5, threads: 1 };
        let c = train(&v, 2, &cfg).unwrap();
        assert_eq!(c.as_slice(), [1.0, 0.0]);
        let c = train(&[0.0; 4], 2, &cfg).unwrap();
        assert_eq!(c.len(), 1);
        assert_eq!(assign(&c, &[0.0; 4], 3).unwrap(), [0, 0]);
    }

    #[test]
    fn bad_input_is_refused() {
        let cfg = TrainConfig::for_count(10);
        assert_eq!(train(&[], 4, &cfg), Err(Error::Empty));
        assert!(matches!(train(&[1.0; 5], 4, &cfg), Err(Error::Shape { .. })));
        assert!(matches!(train(&[1.0; 4], 0, &cfg), Err(Error::Config(_))));
        let zero = TrainConfig { lists: 0, ..cfg };
        assert!(matches!(train(&[1.0; 4], 4, &zero), Err(Error::Config(_))));
        let c = train(&[1.0; 4], 4, &TrainConfig::for_count(1)).unwrap();
        assert!(matches!(assign(&c, &[1.0; 5], 1), Err(Error::Shape { .. })));
    }

    #[test]
    fn sample_rows_are_evenly_spaced_and_all_rows_when_few() {
        let cfg = TrainConfig { lists: 2, sample_per_list: 3, iterations: 1, threads: 1 };
        assert_eq!(sample_rows(12, &cfg).collect::<Vec<_>>(), [0, 2, 4, 6, 8, 10]);
        assert_eq!(sample_rows(4, &cfg).collect::<Vec<_>>(), [0, 1, 2, 3]);
        assert_eq!(sample_rows(0, &cfg).count(), 0);
        assert!(matches!(train_sampled(Vec::new(), 2, &cfg), Err(Error::Empty)));
    }

    #[test]
    fn for_count_scales_lists_with_the_square_root() {
        assert_eq!(TrainConfig::for_count(0).lists, 1);
        assert_eq!(TrainConfig::for_count(10_000).lists, 100);
        assert_eq!(TrainConfig::for_count(1_000_000).lists, 1_000);
    }
}
