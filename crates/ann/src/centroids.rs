//! The coarse quantizer: k-means centroids that split the vector space into inverted lists.
//!
//! # Storage layout
//!
//! [`Centroids::to_bytes`] writes, all little-endian:
//!
//! | bytes   | field                                   |
//! |---------|-----------------------------------------|
//! | 0..4    | magic `CGAC`                            |
//! | 4..8    | format version, u32 = 1                 |
//! | 8..12   | dim, u32                                |
//! | 12..16  | count (number of lists), u32 ≥ 1        |
//! | 16..    | count × dim f32, row-major, list 0 first |

use std::sync::OnceLock;

use crate::blob::{BlobKind, HEADER};
use crate::error::Error;
use crate::nearest::{NearestIndex, Scratch};
use crate::quant::{dot_f32, dot_wide, quantize, widen};

const BLOB: BlobKind = BlobKind { magic: b"CGAC", version: 1, what: WHAT };
const WHAT: &str = "centroids";

/// The centroids of the inverted lists: `len()` unit vectors of `dim()` floats, row-major. List
/// `i` holds the vectors whose nearest centroid is row `i`.
#[derive(Clone)]
pub struct Centroids {
    dim: usize,
    data: Vec<f32>,
    /// Derived from `data` on first use (decoding for queries, which only [`probe`], stays
    /// cheap): what makes [`nearest`] fast.
    ///
    /// [`probe`]: Centroids::probe
    /// [`nearest`]: Centroids::nearest
    index: OnceLock<NearestIndex>,
    /// Derived from `data` on the first [`probe`](Centroids::probe): the int8 pass that
    /// spares a probe most f32 dot products.
    codes: OnceLock<ProbeCodes>,
}

impl PartialEq for Centroids {
    fn eq(&self, other: &Centroids) -> bool {
        self.dim == other.dim && self.data == other.data
    }
}

impl std::fmt::Debug for Centroids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Centroids")
            .field("dim", &self.dim)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl Centroids {
    /// Wraps `data` (row-major, `dim` floats a row) as centroids. Rows are used as they are;
    /// they should be unit vectors, as training makes them ([`nearest`](Centroids::nearest)
    /// falls back to scoring every centroid otherwise).
    ///
    /// # Errors
    ///
    /// [`Error::Config`] for a zero `dim`, [`Error::Shape`] if `data` is empty, not a whole
    /// number of rows, or holds a non-finite value.
    pub fn from_rows(dim: usize, data: Vec<f32>) -> Result<Centroids, Error> {
        check_dim(dim)?;
        if data.is_empty() || !data.len().is_multiple_of(dim) {
            return Err(Error::Shape {
                what: "centroids",
                detail: format!(
                    "{} floats are not a positive whole number of {dim}-d rows",
                    data.len()
                ),
            });
        }
        if data.iter().any(|x| !x.is_finite()) {
            return Err(Error::Shape { what: "centroids", detail: "non-finite value".to_owned() });
        }
        Ok(Centroids::new(dim, data))
    }

    /// Centroids of checked rows.
    pub(crate) fn new(dim: usize, data: Vec<f32>) -> Centroids {
        Centroids { dim, data, index: OnceLock::new(), codes: OnceLock::new() }
    }

    /// The search structures of [`Centroids::nearest`], built by `threads` threads on first use.
    pub(crate) fn index(&self, threads: usize) -> &NearestIndex {
        self.index.get_or_init(|| NearestIndex::build(self.dim, &self.data, threads))
    }

    /// Takes the rows back, to update them.
    pub(crate) fn into_rows(self) -> Vec<f32> {
        self.data
    }

    /// Number of centroids, which is the number of inverted lists.
    pub fn len(&self) -> usize {
        self.data.len() / self.dim
    }

    /// Whether there are no centroids (never true of trained or decoded centroids).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Length of every centroid and of the vectors they index.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Centroid of list `list`, if there is one.
    pub fn get(&self, list: u32) -> Option<&[f32]> {
        let start = usize::try_from(list).ok()?.checked_mul(self.dim)?;
        self.data.get(start..start + self.dim)
    }

    /// All centroids, row-major.
    pub fn as_slice(&self) -> &[f32] {
        &self.data
    }

    /// Centroid of `list`, which must exist.
    pub(crate) fn rows_at(&self, list: u32) -> &[f32] {
        let start = list as usize * self.dim;
        // In range: callers pass list ids below `len()`.
        &self.data[start..start + self.dim]
    }

    /// Rows, list 0 first.
    pub(crate) fn rows(&self) -> std::slice::ChunksExact<'_, f32> {
        self.data.chunks_exact(self.dim)
    }

    /// Encodes the centroids as one blob; see the module docs for the layout.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER + self.data.len() * 4);
        BLOB.write_header(&mut out, self.dim, self.len());
        for x in &self.data {
            out.extend_from_slice(&x.to_le_bytes());
        }
        out
    }

    /// Decodes a blob written by [`Centroids::to_bytes`] for vectors of `dim` floats.
    ///
    /// # Errors
    ///
    /// [`Error::Corrupt`] if the blob is short, has the wrong magic, version or dimension, a
    /// length that does not match its count, or non-finite values; [`Error::Config`] for a zero
    /// `dim`.
    pub fn from_bytes(dim: usize, bytes: &[u8]) -> Result<Centroids, Error> {
        check_dim(dim)?;
        let (count, body) = BLOB.read_header(bytes, dim)?;
        let expected = count
            .checked_mul(dim)
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(HEADER));
        if count == 0 || expected != Some(bytes.len()) {
            return Err(corrupt(format!(
                "{} bytes for {count} centroids of {dim} floats",
                bytes.len()
            )));
        }
        let data: Vec<f32> =
            body.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        if data.iter().any(|x| !x.is_finite()) {
            return Err(corrupt("non-finite value".to_owned()));
        }
        Ok(Centroids::new(dim, data))
    }

    /// The list whose centroid has the highest dot product with `v` (cosine, for unit vectors);
    /// ties go to the lower list id. `v` should have [`dim`](Centroids::dim) floats: extra ones
    /// are ignored and missing ones count as zero. A NaN score never wins, so a vector of NaNs
    /// goes to list 0.
    ///
    /// The answer is the exact f32 argmax, found without scoring most centroids; in rare cases
    /// (a vector far from every centroid, non-unit centroids, fewer than 64 lists) it comes from
    /// an int8 pass over all centroids whose best eight are scored again in f32, which misses
    /// the exact argmax only if int8 rounding (about 1e-3) reorders near-ties.
    pub fn nearest(&self, v: &[f32]) -> u32 {
        self.nearest_scored(v, &mut Scratch::default()).0
    }

    /// [`Centroids::nearest`] and its f32 score.
    pub(crate) fn nearest_scored(&self, v: &[f32], scratch: &mut Scratch) -> (u32, f32) {
        self.index(1).nearest(self.dim, &self.data, v, scratch)
    }

    /// The `nprobe` lists whose centroids are nearest to `query`, best first, ties to the lower
    /// list id; all lists if `nprobe` is at least [`len`](Centroids::len).
    ///
    /// The answer is the one of scoring every centroid in f32 ([`dot_f32`]), found by scoring
    /// most of them by int8 codes only: each int8 score is within a proven bound of the f32
    /// score, so a centroid whose int8 score plus its bound is below the `nprobe`-th best int8
    /// score minus its bound cannot be among the nearest, and only the others are scored in f32.
    pub fn probe(&self, query: &[f32], nprobe: usize) -> Vec<u32> {
        let codes = self.codes.get_or_init(|| ProbeCodes::new(self.dim, &self.data));
        if nprobe == 0 {
            return Vec::new();
        }
        if nprobe >= self.len() || query.len() != self.dim || !codes.usable || !in_range(query) {
            return self.probe_exhaustive(query, nprobe);
        }
        let shortlist = codes.shortlist(query, nprobe);
        let scored = shortlist.into_iter().map(|j| (dot_f32(query, self.rows_at(j)), j)).collect();
        best_lists(scored, nprobe)
    }

    /// [`Centroids::probe`] by scoring every centroid in f32.
    pub(crate) fn probe_exhaustive(&self, query: &[f32], nprobe: usize) -> Vec<u32> {
        let scored: Vec<(f32, u32)> =
            self.rows().enumerate().map(|(i, c)| (dot_f32(query, c), i as u32)).collect();
        best_lists(scored, nprobe)
    }
}

/// The centroids' int8 codes for [`Centroids::probe`], with what bounds their error.
///
/// A vector `x` quantizes to codes `x̂ = scale × codes` and a residual `x − x̂`. For a query `q`
/// and a centroid `c`, `q·c = q̂·ĉ + q̂·(c − ĉ) + (q − q̂)·c`, so by Cauchy–Schwarz the int8 score
/// `q̂·ĉ` is within `‖q̂‖ ‖c − ĉ‖ + ‖q − q̂‖ ‖c‖` of `q·c`; a relative [`ROUNDING`] more covers
/// the f32 rounding of both scores.
#[derive(Clone)]
struct ProbeCodes {
    /// Codes widened to i16, row-major.
    wide: Vec<i16>,
    scales: Vec<f32>,
    /// `‖c − ĉ‖` of each centroid, rounded up.
    residuals: Vec<f64>,
    /// `‖c‖` of each centroid.
    norms: Vec<f64>,
    /// Whether every centroid is [`in_range`]: else probes score every centroid in f32.
    usable: bool,
}

/// Relative slack for f32 rounding in the bound of [`ProbeCodes`]: a 256-term f32 dot product
/// in eight-term lanes errs by about 1e-6 of `‖q‖ ‖c‖`; this is a hundred times that.
const ROUNDING: f64 = 1e-4;

impl ProbeCodes {
    fn new(dim: usize, data: &[f32]) -> ProbeCodes {
        let mut codes = Vec::with_capacity(data.len());
        let mut out = ProbeCodes {
            wide: Vec::new(),
            scales: Vec::new(),
            residuals: Vec::new(),
            norms: Vec::new(),
            usable: data.chunks_exact(dim).all(in_range),
        };
        for row in data.chunks_exact(dim) {
            let start = codes.len();
            let scale = quantize(row, &mut codes);
            let (residual, norm) = residual_and_norm(row, &codes[start..], scale);
            out.scales.push(scale);
            out.residuals.push(residual);
            out.norms.push(norm);
        }
        out.wide = widen(&codes);
        out
    }

    /// The centroids that may be among the `nprobe` nearest to `query` by f32 score: a superset
    /// of them. `query` has the centroids' dimension and finite components; `nprobe` is below
    /// the number of centroids.
    fn shortlist(&self, query: &[f32], nprobe: usize) -> Vec<u32> {
        let dim = query.len();
        let mut qcodes = Vec::with_capacity(dim);
        let qscale = quantize(query, &mut qcodes);
        let (qresidual, qnorm) = residual_and_norm(query, &qcodes, qscale);
        let qwide = widen(&qcodes);
        // (lowest, highest) f32 score each centroid may have.
        let ranges: Vec<(f64, f64)> = self
            .wide
            .chunks_exact(dim)
            .enumerate()
            .map(|(j, row)| {
                let approx = f64::from(qscale * self.scales[j] * dot_wide(&qwide, row) as f32);
                let bound = qnorm * self.residuals[j]
                    + qresidual * self.norms[j]
                    + ROUNDING * (qnorm * self.norms[j] + approx.abs())
                    + UNDERFLOW;
                (approx - bound, approx + bound)
            })
            .collect();
        // The nprobe-th highest lowest score: that many centroids score at least this.
        let mut lows: Vec<f64> = ranges.iter().map(|r| r.0).collect();
        let (_, floor, _) = lows.select_nth_unstable_by(nprobe.max(1) - 1, |a, b| b.total_cmp(a));
        let floor = *floor;
        (0u32..).zip(&ranges).filter(|(_, r)| r.1 >= floor).map(|(j, _)| j).collect()
    }
}

/// Absolute slack in the bound of [`ProbeCodes`], for products that underflow in f32.
const UNDERFLOW: f64 = 1e-30;

/// Whether `x`'s components are finite and its length between 1e-10 and 1e15: scores of such
/// vectors neither overflow nor lose their relative precision to subnormal numbers.
fn in_range(x: &[f32]) -> bool {
    let norm2: f64 = x.iter().map(|&v| f64::from(v) * f64::from(v)).sum();
    x.iter().all(|v| v.is_finite()) && (1e-20..=1e30).contains(&norm2)
}

/// `‖x − scale × codes‖` rounded up, and `‖x‖`, in f64.
fn residual_and_norm(x: &[f32], codes: &[i8], scale: f32) -> (f64, f64) {
    let (mut residual, mut norm) = (0.0f64, 0.0f64);
    for (&v, &c) in x.iter().zip(codes) {
        let d = f64::from(v) - f64::from(scale) * f64::from(c);
        residual += d * d;
        norm += f64::from(v) * f64::from(v);
    }
    (residual.sqrt() * (1.0 + 1e-9), norm.sqrt())
}

/// The `n` best `(score, list)` pairs' lists, best first, ties to the lower list; NaN sorts last.
pub(crate) fn best_lists(mut scored: Vec<(f32, u32)>, n: usize) -> Vec<u32> {
    let order = |a: &(f32, u32), b: &(f32, u32)| {
        crate::search::score_key(b.0).total_cmp(&crate::search::score_key(a.0)).then(a.1.cmp(&b.1))
    };
    if n == 0 {
        return Vec::new();
    }
    if n < scored.len() {
        scored.select_nth_unstable_by(n - 1, order);
        scored.truncate(n);
    }
    scored.sort_unstable_by(order);
    scored.into_iter().map(|(_, l)| l).collect()
}

pub(crate) fn check_dim(dim: usize) -> Result<(), Error> {
    if dim == 0 || u32::try_from(dim).is_err() {
        return Err(Error::Config(format!("dimension {dim} is out of range")));
    }
    Ok(())
}

fn corrupt(detail: String) -> Error {
    BLOB.corrupt(detail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Centroids {
        Centroids::from_rows(2, vec![1.0, 0.0, 0.0, 1.0, -1.0, 0.0, 0.0, 1.0]).unwrap()
    }

    #[test]
    fn bytes_round_trip() {
        let c = sample();
        let bytes = c.to_bytes();
        assert_eq!(bytes.len(), 16 + 8 * 4);
        assert_eq!(Centroids::from_bytes(2, &bytes).unwrap(), c);
    }

    #[test]
    fn corrupt_bytes_are_refused() {
        let bytes = sample().to_bytes();
        let corrupt = |r: Result<Centroids, Error>| matches!(r, Err(Error::Corrupt { .. }));
        assert!(corrupt(Centroids::from_bytes(2, &bytes[..10])));
        assert!(corrupt(Centroids::from_bytes(2, &bytes[..bytes.len() - 1])));
        assert!(corrupt(Centroids::from_bytes(3, &bytes)));
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(corrupt(Centroids::from_bytes(2, &b)));
        let mut b = bytes.clone();
        b[4] = 9;
        assert!(corrupt(Centroids::from_bytes(2, &b)));
        let mut b = bytes.clone();
        b[16..20].copy_from_slice(&f32::NAN.to_le_bytes());
        assert!(corrupt(Centroids::from_bytes(2, &b)));
        let mut b = bytes.clone();
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(corrupt(Centroids::from_bytes(2, &b)));
        let mut b = bytes[..16].to_vec();
        b[12..16].copy_from_slice(&0u32.to_le_bytes());
        assert!(corrupt(Centroids::from_bytes(2, &b)));
        assert!(matches!(Centroids::from_bytes(0, &bytes), Err(Error::Config(_))));
    }

    /// The exact f32 argmax, ties to the lower id.
    fn brute_force(c: &Centroids, v: &[f32]) -> u32 {
        (0..c.len() as u32)
            .map(|l| (dot_f32(v, c.get(l).unwrap()), l))
            .fold((f32::NEG_INFINITY, 0), |b, x| if x.0 > b.0 { x } else { b })
            .1
    }

    #[test]
    fn nearest_is_the_exact_f32_nearest() {
        // 300 pseudo-random unit centroids in 16-d: enough lists for the pruned search.
        let unit = |seed: usize| -> Vec<f32> {
            let mut v: Vec<f32> = (0..16)
                .map(|d| ((seed * 7919 + d * 104_729) % 1_000) as f32 / 500.0 - 1.0)
                .collect();
            crate::quant::normalize(&mut v);
            v
        };
        let c = Centroids::from_rows(16, (0..300).flat_map(unit).collect()).unwrap();
        for q in 0..300 {
            // Vectors far from every centroid, near one, and on top of one.
            let far = unit(q * 31 + 7);
            let mut near: Vec<f32> =
                c.get(q as u32).unwrap().iter().zip(&far).map(|(a, b)| a + 0.05 * b).collect();
            crate::quant::normalize(&mut near);
            let on = c.get(q as u32).unwrap().to_vec();
            for v in [far, near, on] {
                assert_eq!(c.nearest(&v), brute_force(&c, &v), "query {q}");
            }
        }
    }

    proptest::proptest! {
        /// The int8 pass never changes a probe: the lists are those of scoring every centroid
        /// in f32, in the same order. Centroids repeat (exact ties), sit near each other and
        /// the query, and are unit or not.
        #[test]
        fn a_probe_equals_scoring_every_centroid_in_f32(
            seed in 0u64..u64::MAX, lists in 1usize..300, dim in 1usize..48, nprobe in 0usize..40,
            unit in proptest::bool::ANY, spread in 0.0f32..1.0,
        ) {
            // Uniform in [-0.5, 0.5).
            let mut rng = crate::tests::Rng(seed);
            let mut next = move || rng.unit() / 2.0;
            let centre: Vec<f32> = (0..dim).map(|_| next()).collect();
            let mut data = Vec::with_capacity(lists * dim);
            for l in 0..lists {
                let start = data.len();
                if l % 5 == 4 {
                    // A copy of an earlier centroid.
                    let from = (l / 2) * dim;
                    data.extend_from_within(from..from + dim);
                    continue;
                }
                data.extend(centre.iter().map(|&c| c + spread * next()));
                if unit {
                    crate::quant::normalize(&mut data[start..]);
                }
            }
            let c = Centroids::from_rows(dim, data).unwrap();
            let mut query: Vec<f32> = centre.iter().map(|&x| x + spread * next()).collect();
            crate::quant::normalize(&mut query);
            let nprobe = nprobe.min(lists + 1);
            proptest::prop_assert_eq!(c.probe(&query, nprobe), c.probe_exhaustive(&query, nprobe));
            let on = c.get(0).unwrap().to_vec();
            proptest::prop_assert_eq!(c.probe(&on, nprobe), c.probe_exhaustive(&on, nprobe));
            let zero = vec![0.0; dim];
            proptest::prop_assert_eq!(c.probe(&zero, nprobe), c.probe_exhaustive(&zero, nprobe));
        }
    }

    #[test]
    fn extreme_queries_and_centroids_probe_as_f32_scoring_does() {
        let c = sample();
        for q in [[f32::NAN, 1.0], [1e30, -1e30], [1e-42, 0.0], [0.6, 0.8]] {
            for n in 0..5 {
                assert_eq!(c.probe(&q, n), c.probe_exhaustive(&q, n), "{q:?} {n}");
            }
        }
        let huge = Centroids::from_rows(2, vec![1e30, 0.0, 0.0, 1e-40, 0.5, 0.5]).unwrap();
        for n in 0..4 {
            assert_eq!(huge.probe(&[0.6, 0.8], n), huge.probe_exhaustive(&[0.6, 0.8], n));
        }
    }

    #[test]
    fn nearest_and_probe_break_ties_by_lower_id() {
        let c = sample();
        assert_eq!(c.nearest(&[0.0, 1.0]), 1);
        assert_eq!(c.nearest(&[-1.0, 0.0]), 2);
        assert_eq!(c.nearest(&[f32::NAN, 0.0]), 0);
        assert_eq!(c.nearest(&[0.0, 0.0]), 0);
        assert_eq!(c.nearest(&[0.0, 0.5]), 1);
        assert_eq!(c.probe(&[0.6, 0.8], 4), [1, 3, 0, 2]);
        assert_eq!(c.probe(&[0.6, 0.8], 2), [1, 3]);
        assert_eq!(c.probe(&[0.6, 0.8], 9), [1, 3, 0, 2]);
        assert!(c.probe(&[0.6, 0.8], 0).is_empty());
        assert_eq!(c.get(3), Some(&[0.0, 1.0][..]));
        assert_eq!(c.get(4), None);
    }
}
